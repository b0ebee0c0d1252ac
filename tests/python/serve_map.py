#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# serve_map.py: `lactl serve`'s element map of an application that is not
# a grid, checked against `lactl export`: starts lactl serve on the feed,
# asks for the map (as many bins as cells), and compares each bin with the
# decoded value of the element at that place: the application's id order
# when every rank gave ids (layout "id"), else the global index. Stops
# lactl serve with SIGTERM (exit 0). Used by test_vtk; stdlib only.
#
#   serve_map.py LACTL FEED APP LAYOUT
# Prints "serve_map: OK ..." or raises.
import base64
import csv
import io
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request


def start_serve(lactl, feed, tmp):
    """Starts lactl serve on feed (its URL file in tmp); returns the
    process and the URL it printed, once it wrote it (60 s at most)."""
    url_file = os.path.join(tmp, "url")
    p = subprocess.Popen([lactl, "serve", "--global", feed,
                          "--url-file", url_file],
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while not (os.path.exists(url_file) and
               os.path.getsize(url_file)) and time.monotonic() < end:
        if p.poll() is not None:
            raise RuntimeError("lactl serve exited: " + p.stderr.read())
        time.sleep(0.05)
    return p, open(url_file).read().strip()


def main():
    lactl, feed, app, layout = sys.argv[1:5]
    with tempfile.TemporaryDirectory(prefix="la-serve-map.") as tmp:
        p, url = start_serve(lactl, feed, tmp)
        try:
            base, token = url.split("/?token=")
            q = urllib.parse.urlencode({"token": token, "app": app,
                                        "weights": "measured", "bins": 1024})
            with urllib.request.urlopen(base + "/api/map?" + q,
                                        timeout=60) as r:
                j = json.load(r)
        finally:
            p.send_signal(signal.SIGTERM)
            err = p.communicate(timeout=60)[1]
        if p.returncode != 0:
            raise RuntimeError("lactl serve exit %d: %s" % (p.returncode, err))
    assert j["layout"] == layout, (j["layout"], layout)
    assert (j["bw"], j["bh"]) == (j["w"], j["h"]), j
    vals = struct.unpack("<%df" % (j["bw"] * j["bh"]),
                         base64.b64decode(j["values"]))
    out = subprocess.run([lactl, "export", app, str(j["cycle"]), "--global",
                          feed, "--weights", "measured"], check=True,
                         capture_output=True, text=True).stdout
    rows = list(csv.DictReader(io.StringIO(
        "".join(l for l in out.splitlines(True) if not l.startswith("#")))))
    if layout == "id":
        rows.sort(key=lambda r: (int(r["id"]), int(r["global_element"])))
    else:
        rows.sort(key=lambda r: int(r["global_element"]))
    assert len(rows) == j["elements"], (len(rows), j["elements"])
    for k, r in enumerate(rows):
        got, want = vals[k], float(r["value"])
        assert abs(got - want) <= 1e-6 * abs(want), (k, r, got)
    for k in range(len(rows), len(vals)):  # the last row's rest: no data
        assert vals[k] != vals[k], (k, vals[k])
    print("serve_map: OK %s, %d elements in %s order" % (app, len(rows),
                                                        layout))


if __name__ == "__main__":
    main()
