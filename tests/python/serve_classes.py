#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# serve_classes.py: `lactl serve`'s behaviour classes (/api/clusters and
# the page's "Behaviour classes" panel) of a stored set, checked against
# `lactl show APP CYCLE --clusters --json` of the same set from the store:
# starts lactl serve on the feed, asks for the classes of APP's latest set
# and compares, class by class, size, representative, elements, scale
# spread, largest distance, and the members the rank ranges name; the
# outliers (also against the OUTLIERS given: the ranks known to differ)
# and the reconstructed ranks. An unknown application is a 404 and a
# request without app a 400, each a JSON {"error": ...}; so is an app of
# more than 128 bytes or with a NUL byte, the error naming which. With CHROMIUM
# (not "-"), loads the page in headless Chromium (tests/python/
# serve_page.py's Browser and check_classes) and checks that the panel
# shows each class's size, representative and ranges and the outliers,
# as lactl show says; its screenshot goes
# to OUTDIR/serve-classes.png. Stops lactl serve with SIGTERM (exit 0).
# Used by test_representatives; stdlib only.
#
#   serve_classes.py LACTL FEED APP CYCLE OUTLIERS CHROMIUM OUTDIR
# (OUTLIERS: comma-separated ranks.) Prints "serve_classes: OK ..." or
# raises.
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_map import start_serve  # noqa: E402


def expand(ranges):
    out = []
    for a, b, s in ranges:
        out.extend(range(a, b + 1, s))
    return out


def get(base, token, path, **q):
    q["token"] = token
    try:
        with urllib.request.urlopen(base + path + "?" +
                                    urllib.parse.urlencode(q),
                                    timeout=60) as r:
            return r.status, r.headers.get("Content-Type"), json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), json.loads(e.read())


def check_api(j, s, outliers):
    assert (j["app"], j["cycle"], j["nprocs"], j["present"]) == \
        (s["app"], s["cycle"], s["nprocs"], s["present"]), (j, s)
    assert len(j["classes"]) == len(s["classes"]), (j, s)
    for a, b in zip(j["classes"], s["classes"]):
        for k in ("class", "size", "representative", "elements", "scale_min",
                  "scale_max", "distance_max", "ranges"):
            assert a[k] == b[k], (k, a, b)
        assert a["ranges_more"] == 0, a
        assert expand(a["ranges"]) == b["members"], (a, b)
        assert "members" not in a and "scales" not in a, a
    assert j["outliers"] == s["outliers"] == outliers, (j["outliers"],
                                                       s["outliers"], outliers)
    assert j["outliers_more"] == 0 and j["reconstructed_more"] == 0, j
    assert j["reconstructed"] == s["reconstructed"], (j, s)


def check_page(chromium, url, lactl, feed, app, j, outdir):
    import serve_page
    with tempfile.TemporaryDirectory(prefix="la-chromium.") as prof:
        b = serve_page.Browser(chromium, prof)
        try:
            b.open(url + "&app=" + urllib.parse.quote(app))
            text = serve_page.check_classes(b, lactl, app, "serve_classes",
                                            ("--global", feed))
            assert not serve_page.failed, "the panel"
            for t, k in zip(text, j["classes"]):  # the ranges as text
                a, z, s = k["ranges"][0]
                txt = str(a) if a == z else "%d-%d" % (a, z) + \
                    ("" if s == 1 else "/%d" % s)
                assert txt in t, (txt, t)
            shown = b.eval("document.getElementById('outliers').textContent")
            assert shown == (", ".join(map(str, j["outliers"])) or "none"), \
                shown
            b.eval("document.getElementById('classes').scrollIntoView(), true")
            b.screenshot(os.path.join(outdir, "serve-classes.png"))
        finally:
            b.close()
    return len(text)


def main():
    lactl, feed, app, cycle, outl, chromium, outdir = sys.argv[1:8]
    outliers = [int(x) for x in outl.split(",") if x]
    s = json.loads(subprocess.run(
        [lactl, "show", app, cycle, "--global", feed, "--clusters", "--json"],
        check=True, capture_output=True, text=True).stdout)
    with tempfile.TemporaryDirectory(prefix="la-serve-classes.") as tmp:
        p, url = start_serve(lactl, feed, tmp)
        try:
            base, token = url.split("/?token=")
            code, ctype, j = get(base, token, "/api/clusters", app=app)
            assert code == 200 and ctype == "application/json", (code, ctype)
            check_api(j, s, outliers)
            code, ctype, e = get(base, token, "/api/clusters", app="no-such")
            assert code == 404 and ctype == "application/json" and \
                "no application 'no-such'" in e["error"], (code, ctype, e)
            code, ctype, e = get(base, token, "/api/clusters")
            assert code == 400 and "needs app" in e["error"], (code, e)
            # app ids the store cannot hold: named, not "needs app" nor
            # an unknown application
            for bad, says in (("x" * 129, "129 bytes, more than"),
                              ("x" * 5000, "5000 bytes, more than"),
                              (app + "\0", "NUL byte")):
                code, ctype, e = get(base, token, "/api/clusters", app=bad)
                assert code == 400 and ctype == "application/json" and \
                    says in e["error"], (len(bad), code, e)
            # percent-encoded garbage is taken as it is: an unknown app
            try:
                urllib.request.urlopen(base + "/api/clusters?app=%zz%&token="
                                       + token, timeout=60)
                raise AssertionError("app=%zz% answered 200")
            except urllib.error.HTTPError as x:
                e = json.loads(x.read())
                assert x.code == 404 and \
                    "no application '%zz%'" in e["error"], (x.code, e)
            rows = None
            if chromium != "-":
                os.makedirs(outdir, exist_ok=True)
                rows = check_page(chromium, url, lactl, feed, app, j, outdir)
        finally:
            p.send_signal(signal.SIGTERM)
            err = p.communicate(timeout=60)[1]
        if p.returncode != 0:
            raise RuntimeError("lactl serve exit %d: %s" % (p.returncode, err))
    print("serve_classes: OK %s cycle %d, %d classes, outliers %s%s" %
          (app, j["cycle"], len(j["classes"]), j["outliers"],
           "" if rows is None else ", the page's panel with %d classes" % rows))


if __name__ == "__main__":
    main()
