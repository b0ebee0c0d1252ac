#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# serve_page.py: test_serve's browser: loads `lactl serve`'s page in
# headless Chromium, driven over the DevTools protocol on a pipe
# (--remote-debugging-pipe: NUL-separated JSON on fds 3 and 4; stdlib
# only), and checks what a user sees against what `lactl show --json`
# says of the store: the application and its latest cycle with its
# per-rank totals, and the behaviour classes and outliers that `lactl
# show --clusters --json` finds; then runs a second application (the command after
# --then) and checks that its sets reach the open page without a reload;
# and that requests without the token are refused. Screenshots go to
# OUTDIR. Every wait is on a condition with a generous deadline.
#
#   serve_page.py CHROMIUM URL LACTL OUTDIR APP_A APP_B NCYCLES_B --then CMD...
# (APP_A is stored and closed before; CMD runs APP_B, NCYCLES_B cycles.)
# Prints one "[       OK ] name" or "[  FAILED  ] name" line per check
# (tests/sh/report.sh's format); exits 1 when one failed.
import base64
import csv
import io
import struct
import urllib.parse
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

DEADLINE = 120.0  # seconds for any one condition (a loaded 2-core machine)
failed = False


def ok(name):
    print("[       OK ] test_serve/" + name, flush=True)


def fail(name, why):
    global failed
    failed = True
    print("[  FAILED  ] test_serve/" + name, flush=True)
    for line in str(why).splitlines():
        print("    " + line, flush=True)


class Browser:
    """Headless Chromium over --remote-debugging-pipe."""

    def __init__(self, chromium, profile):
        to_r, self.to_w = os.pipe()  # we write, Chromium reads (its fd 3)
        self.from_r, from_w = os.pipe()  # Chromium writes (its fd 4)

        def fds():
            # the pipes are close-on-exec; dup2 makes 3 and 4 inheritable
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.p = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check",
             "--disable-dev-shm-usage", "--remote-debugging-pipe",
             "--user-data-dir=" + profile, "--window-size=1300,1100",
             "about:blank"],
            preexec_fn=fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.n = 0
        self.session = None

    def call(self, method, params=None, session=True, timeout=60.0):
        self.n += 1
        msg = {"id": self.n, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.n:
                    if "error" in m:
                        raise RuntimeError(method + ": " + str(m["error"]))
                    return m.get("result", {})
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(method + " got no answer")
            r, _, _ = select.select([self.from_r], [], [], left)
            if r:
                chunk = os.read(self.from_r, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buf += chunk

    def open(self, url):
        t = self.call("Target.createTarget", {"url": url}, session=False)
        a = self.call("Target.attachToTarget",
                      {"targetId": t["targetId"], "flatten": True},
                      session=False)
        self.session = a["sessionId"]

    def eval(self, expr):
        r = self.call("Runtime.evaluate",
                      {"expression": expr, "returnByValue": True})
        return r.get("result", {}).get("value")

    def wait(self, expr, what):
        end = time.monotonic() + DEADLINE
        last = None
        while time.monotonic() < end:
            last = self.eval(expr)
            if last:
                return last
            time.sleep(0.2)
        raise TimeoutError("%s: not within %.0f s (last: %r)" %
                           (what, DEADLINE, last))

    def screenshot(self, path):
        r = self.call("Page.captureScreenshot", {"format": "png"})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=10)
        except Exception:
            pass
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def wait_stored(lactl, app, ncycles):
    """Waits until app's ncycles cycles are stored and closed (the
    LocalAgent uplinks after the run ends)."""
    end = time.monotonic() + DEADLINE
    last = None
    while time.monotonic() < end:
        r = subprocess.run([lactl, "cycles", app, "--json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            last = json.loads(r.stdout)["cycles"]
            if len(last) == ncycles and all(c["state"] != "open"
                                            for c in last):
                return
        time.sleep(0.2)
    raise TimeoutError("%s: not %d closed cycles within %.0f s: %r" %
                       (app, ncycles, DEADLINE, last))


def show(lactl, app):
    out = subprocess.run([lactl, "show", app, "latest", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def expected_totals(s, weights):
    key = "robust_total" if weights == "robust" else "total"
    return [r.get(key) if r["present"] else None for r in s["ranks"]]


def page_totals(text):
    return [None if v == "nan" else float(v) for v in text.split(",")]


LATEST = ("(() => { const d = document.getElementById('latest').dataset; "
          "return d.app ? {app: d.app, cycle: Number(d.cycle), "
          "weights: d.weights, totals: d.totals} : null; })()")


def check_latest(b, lactl, app, name):
    """The page shows app's latest stored cycle and its totals."""
    s = show(lactl, app)
    expr = ("(() => { const d = document.getElementById('latest').dataset; "
            "return d.app === %s && Number(d.cycle) === %d; })()"
            % (json.dumps(app), s["cycle"]))
    try:
        b.wait(expr, "%s cycle %d on the page" % (app, s["cycle"]))
        got = b.eval(LATEST)
        want = expected_totals(s, got["weights"])
        if page_totals(got["totals"]) != want:
            raise AssertionError("totals on the page %s, lactl show %s" %
                                 (got["totals"], want))
        ok(name)
    except Exception as e:
        fail(name, "%s\npage: %r" % (e, b.eval(LATEST)))


def check_map(base, token, lactl, app, name):
    """The element map's bins, each a cell here (bins >= the slice's
    sides), equal the decoded values `lactl export` writes for the
    slice's cells (float32), for measured and robust weights."""
    try:
        for weights in ("measured", "robust"):
            q = urllib.parse.urlencode({"token": token, "app": app,
                                        "weights": weights, "agg": "mean",
                                        "bins": 1024})
            with urllib.request.urlopen(base + "/api/map?" + q,
                                        timeout=60) as r:
                j = json.load(r)
            if j["layout"] != "grid" or (j["bw"], j["bh"]) != (j["w"], j["h"]):
                raise AssertionError("layout %s, %dx%d cells in %dx%d bins" %
                                     (j["layout"], j["w"], j["h"], j["bw"],
                                      j["bh"]))
            vals = struct.unpack("<%df" % (j["bw"] * j["bh"]),
                                 base64.b64decode(j["values"]))
            k = int(j["slice"].split("=")[1])
            out = subprocess.run([lactl, "export", app, str(j["cycle"]),
                                  "--weights", weights], check=True,
                                 capture_output=True, text=True).stdout
            rows = csv.DictReader(io.StringIO(
                "".join(l for l in out.splitlines(True)
                        if not l.startswith("#"))))
            n = 0
            for row in rows:
                if int(row["k"]) != k:
                    continue
                want = float(row["value"])
                got = vals[int(row["i"]) + j["bw"] * int(row["j"])]
                if abs(got - want) > 1e-6 * abs(want):
                    raise AssertionError("%s cell (%s, %s): map %r, export %r"
                                         % (weights, row["i"], row["j"], got,
                                            want))
                n += 1
            if n != j["w"] * j["h"]:
                raise AssertionError("%d cells of the slice exported, %d in "
                                     "the map" % (n, j["w"] * j["h"]))
        ok(name)
    except Exception as e:
        fail(name, e)


def check_classes(b, lactl, app, name, src=()):
    """The page's "Behaviour classes" panel shows, class by class, the
    size, representative and rank ranges, and the outliers, that `lactl
    show APP latest --clusters --json` (src: its --global or --db) finds
    in the store. Returns the rows' text."""
    rows = []
    try:
        s = json.loads(subprocess.run(
            [lactl, "show", app, "latest", "--clusters", "--json", *src],
            check=True, capture_output=True, text=True).stdout)
        b.wait("document.getElementById('classes').dataset.app === %s && "
               "document.getElementById('classes').dataset.cycle === '%d'" %
               (json.dumps(app), s["cycle"]),
               "the classes of %s cycle %d" % (app, s["cycle"]))
        rows = b.eval(
            "Array.from(document.querySelectorAll('#classrows tr')).map((r) "
            "=> [Number(r.dataset.size), Number(r.dataset.rep), "
            "JSON.parse(r.dataset.ranges), r.textContent])")
        want = [[k["size"], k["representative"], k["ranges"]]
                for k in s["classes"]]
        if [r[:3] for r in rows] != want:
            raise AssertionError("classes on the page %r, lactl show %r" %
                                 (rows, want))
        got = b.eval("document.getElementById('outliers').dataset.ranks")
        if got != ",".join(map(str, s["outliers"])):
            raise AssertionError("outliers on the page %r, lactl show %r" %
                                 (got, s["outliers"]))
        ok(name)
    except Exception as e:
        fail(name, e)
    return [r[3] for r in rows]


def status(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    argv = sys.argv[1:]
    k = argv.index("--then")
    chromium, url, lactl, outdir, app_a, app_b, ncycles_b = argv[:k]
    then = argv[k + 1:]
    base, token = url.split("/?token=")
    os.makedirs(outdir, exist_ok=True)

    # the token: refused without it, or with another, on every path
    codes = {p: status(base + p) for p in ("/", "/events", "/api/apps")}
    codes["/?token=wrong"] = status(base + "/?token=" + "0" * len(token))
    codes["/?token=ok"] = status(url)
    if all(c == 403 for p, c in codes.items() if p != "/?token=ok") and \
            codes["/?token=ok"] == 200:
        ok("token")
    else:
        fail("token", "HTTP statuses: %r" % codes)

    # the bounds: 40 idle connections (more than --max-connections) do
    # not keep a request out; a request head over 8 KiB gets 431
    host, port = base[len("http://"):].rsplit(":", 1)
    idle = [socket.create_connection((host, int(port)), timeout=30)
            for _ in range(40)]
    code = status(url + "&n=1")
    big = socket.create_connection((host, int(port)), timeout=30)
    big.sendall(b"GET /?token=" + token.encode() + b" HTTP/1.1\r\nX: " +
                b"a" * 9000 + b"\r\n\r\n")
    head = big.recv(200)
    big.close()
    for c in idle:
        c.close()
    if code == 200 and head.startswith(b"HTTP/1.1 431"):
        ok("bounds")
    else:
        fail("bounds", "with 40 idle connections: %r; a 9 KB head: %r" %
             (code, head))

    with tempfile.TemporaryDirectory(prefix="la-chromium.") as prof:
        b = Browser(chromium, prof)
        try:
            b.open(url)
            check_latest(b, lactl, app_a, "latest_cycle")
            check_map(base, token, lactl, app_a, "map_values")
            check_classes(b, lactl, app_a, "classes")
            try:
                b.wait("document.querySelector('li[data-app=\"%s\"]') "
                       "!== null" % app_a, "the application list")
                ok("app_list")
            except Exception as e:
                fail("app_list", e)
            b.screenshot(os.path.join(outdir, "serve-1.png"))

            # a new application runs while the page is open
            ev0 = int(b.eval("document.getElementById('status')"
                             ".dataset.events") or 0)
            r = subprocess.run(then, capture_output=True, text=True)
            if r.returncode != 0:
                fail("live_update", "%s exited %d: %s" %
                     (then, r.returncode, r.stdout[-800:] + r.stderr[-800:]))
            else:
                nsets = int(ncycles_b)
                wait_stored(lactl, app_b, nsets)
                s = show(lactl, app_b)
                try:
                    b.wait("(() => { const li = document.querySelector("
                           "'li[data-app=\"%s\"]'); return li !== null && "
                           "Number(li.dataset.cycle) === %d && Number("
                           "document.getElementById('status').dataset.events)"
                           " >= %d; })()" % (app_b, s["cycle"], ev0 + nsets),
                           "%s at cycle %d in the list, %d events" %
                           (app_b, s["cycle"], ev0 + nsets))
                    ok("live_update")
                except Exception as e:
                    fail("live_update", e)
                b.eval("document.querySelector('li[data-app=\"%s\"]')"
                       ".click(), true" % app_b)
                check_latest(b, lactl, app_b, "live_latest_cycle")
                check_classes(b, lactl, app_b, "live_classes")
                # the maps were drawn: pixels other than white on both
                drawn = b.eval(
                    "['heat', 'map'].every((id) => { const c = "
                    "document.getElementById(id); const d = c.getContext("
                    "'2d').getImageData(0, 0, c.width, c.height).data; "
                    "for (let i = 0; i < d.length; i += 4) if (d[i] !== 255 "
                    "|| d[i + 1] !== 255 || d[i + 2] !== 255) return true; "
                    "return false; })")
                if drawn:
                    ok("drawn")
                else:
                    fail("drawn", "a canvas is blank")
            b.screenshot(os.path.join(outdir, "serve-2.png"))
        except Exception as e:
            fail("browser", e)
        finally:
            b.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
