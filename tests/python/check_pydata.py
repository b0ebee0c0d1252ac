# SPDX-License-Identifier: BSD-3-Clause
"""check_pydata.py: the Python package and lactl's exports against a real
store, run by tests/unit/test_pydata.c with Debian's /usr/bin/python3.

  check_pydata.py --db STORE --bin BINDIR --lib LIBDIR --src TREE
                  --work DIR --apps APP,APP,... --channel-apps APP,...

pip-installs TREE/python (a copy, so the tree stays clean) into DIR/site,
then for every application and cycle: the package's weights equal `lactl
export`'s CSV, JSON and npy values bit for bit, the npy array equals the
CSV, every export carries its format version, and every JSON output of
lactl validates against TREE/docs/schema. For the --channel-apps (of
examples/multiloop: channels h_update, e_update, source) the same per
channel against `lactl export --channel NAME`, an unknown channel's
error against lactl's, and an application of one channel. Copies of the
store read as lactl reads them: a partial cycle, a trace marked coarse
(its reason read back), a cycle demoted to a history reference (its
representative's values), a corrupted trace.
Prints what it checked; exits 1
on the first failure, with the reason. The last line on success is
"check_pydata: all checks passed".
"""

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import la_schema  # noqa: E402

A = None


def fail(msg):
    # the script run (check_pyreps.py imports these helpers)
    print("%s: FAILED: %s" % (
        os.path.splitext(os.path.basename(sys.argv[0]))[0], msg))
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def lactl(*args, ok=True, env=None):
    p = subprocess.run([os.path.join(A.bin, "lactl")] + list(args),
                       capture_output=True, text=True, env=env, timeout=120)
    if ok and p.returncode != 0:
        fail("lactl %s exited %d: %s" % (" ".join(args), p.returncode,
                                         p.stderr))
    return p


def schema(name):
    with open(os.path.join(A.src, "docs", "schema", name)) as f:
        return json.load(f)


def validate(doc, name, what):
    errs = la_schema.errors(doc, schema(name))
    check(not errs, "%s does not match %s: %s" % (what, name, errs[:5]))
    print("  %s: valid against docs/schema/%s" % (what, name))


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def same_values(a, b, what):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    check(a.shape == b.shape, "%s: %s vs %s values" % (what, a.shape,
                                                       b.shape))
    d = np.nonzero(bits(a) != bits(b))[0]
    check(d.size == 0, "%s: %d values differ, first at %s: %r vs %r" %
          (what, d.size, d[:1], a[d[:1]], b[d[:1]]))


def install():
    """pip-installs a copy of TREE/python into WORK/site; returns site."""
    pysrc = os.path.join(A.work, "pysrc")
    site = os.path.join(A.work, "site")
    shutil.copytree(os.path.join(A.src, "python"), pysrc,
                    ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                  "__pycache__"))
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    p = subprocess.run([sys.executable, "-m", "pip", "install",
                        "--no-build-isolation", "--no-deps", "--no-index",
                        "--no-cache-dir", "--target", site, pysrc],
                       capture_output=True, text=True, env=env, timeout=180)
    check(p.returncode == 0, "pip install failed:\n%s%s" % (p.stdout,
                                                             p.stderr))
    sys.path.insert(0, site)
    import la_weights
    check(os.path.abspath(la_weights.__file__).startswith(site),
          "la_weights imported from %s, not the install" %
          la_weights.__file__)
    print("  pip installed la_weights %s into %s" % (la_weights.__version__,
                                                    site))
    return la_weights


def read_csv(path):
    """(comment line, structured rows) of a CSV export."""
    with open(path) as f:
        first = f.readline()
        head = f.readline()
        check(head == "cycle,rank,element,global_element,value,id,i,j,k\n",
              "CSV header: %r" % head)
        rows = [ln.rstrip("\n").split(",") for ln in f]
    import la_weights
    t = np.empty(len(rows), la_weights.ROW_DTYPE)
    for i, col in enumerate(t.dtype.names[:4]):
        t[col] = [int(r[i]) for r in rows]
    t["value"] = [float(r[4]) for r in rows]  # %.17g: the same double
    return first, t


def same_table(a, b, what):
    check(a.dtype == b.dtype, "%s: dtype %s vs %s" % (what, a.dtype, b.dtype))
    check(a.shape == b.shape, "%s: %s vs %s rows" % (what, a.shape, b.shape))
    for col in a.dtype.names[:4]:
        check((a[col] == b[col]).all(), "%s: column %s differs" % (what, col))
    same_values(a["value"], b["value"], what)


def check_app(lw, store, app, weights, db=None, channel=None):
    db = db or A.db
    opt = ["--weights", weights] if weights else []
    tag = weights or "default"
    kw = {}
    if channel is not None:
        opt += ["--channel", channel]
        tag += "-" + channel
        kw = {"channel": channel}
    cycles = store.cycles(app)
    check(cycles.size >= 1, "%s: no cycle" % app)
    # CSV
    csv = os.path.join(A.work, "%s-%s.csv" % (app, tag))
    lactl("export", app, ":", "--db", db, "-o", csv, *opt)
    first, rows = read_csv(csv)
    meta = [a for a in store.apps() if a["app"] == app][0]
    want = "# lactl export format 1; app %s; metric %s; unit %s\n" % (
        app, meta["metric"], meta["unit"])
    check(first == want, "CSV comment %r, not %r" % (first, want))
    table = store.table(app, weights=weights, **kw)
    same_table(rows, table, "%s %s: CSV vs la_weights" % (app, tag))
    print("  %s (%s weights): %d rows of %d cycles, CSV == la_weights" %
          (app, tag, rows.size, cycles.size))
    # pandas as docs/lactl.md says to read it (its default parser is not
    # correctly rounded: it differed by one ulp on some values)
    try:
        import pandas
    except ImportError:
        pandas = None
    if pandas is not None:
        df = pandas.read_csv(csv, comment="#", float_precision="round_trip")
        same_values(df["value"].to_numpy(), rows["value"],
                    "%s %s: pandas.read_csv vs CSV" % (app, tag))
    # npy and its sidecar
    npy = os.path.join(A.work, "%s-%s.npy" % (app, tag))
    lactl("export", app, ":", "--db", db, "--format", "npy", "-o", npy,
          *opt)
    arr = np.load(npy, allow_pickle=False)
    same_table(arr, rows, "%s %s: npy vs CSV" % (app, tag))
    with open(npy + ".json") as f:
        side = json.load(f)
    validate(side, "lactl-export-npy.json", "%s npy sidecar" % app)
    check(side["format_version"] == 1 and side["rows"] == arr.size,
          "sidecar: %r" % {k: side[k] for k in ("format_version", "rows")})
    check([s["cycle"] for s in side["sets"]] == [int(c) for c in cycles],
          "sidecar cycles")
    for s in side["sets"]:
        part = arr[s["first_row"]:s["first_row"] + s["rows"]]
        check((part["cycle"] == s["cycle"]).all(), "sidecar first_row/rows")
    print("  %s (%s weights): npy (%d bytes) == CSV" %
          (app, tag, os.path.getsize(npy)))
    # JSON, and Cycle's stitching against it
    p = lactl("export", app, ":", "--db", db, "--format", "json", *opt)
    doc = json.loads(p.stdout)
    validate(doc, "lactl-export.json", "%s export JSON" % app)
    check(doc["format_version"] == 1, "JSON format_version")
    for s in doc["sets"]:
        c = store.cycle(app, s["cycle"], weights=weights, **kw)
        check(c.channel == channel, "Cycle.channel %r" % c.channel)
        check(c.weights == s["weights"] and c.state == s["state"] and
              c.missing == s["missing"] and c.nprocs == s["nprocs"],
              "%s cycle %d: %r vs %r" % (app, c.cycle, c, s))
        check([int(x) for x in c.vtxdist] == s["vtxdist"], "vtxdist")
        same_values(c.totals, [np.nan if x is None else x
                               for x in s["totals"]], "totals")
        for r in s["ranks"]:
            if r["values"] is None:
                check(np.isnan(c.rank(r["rank"])).all(), "missing rank NaN")
            else:
                same_values(c.rank(r["rank"]), r["values"],
                            "%s cycle %d rank %d JSON" %
                            (app, c.cycle, r["rank"]))
                same_values(store.rank_weights(app, c.cycle, r["rank"],
                                               weights=weights, **kw),
                            r["values"], "rank_weights")
        same_values(store.weights(app, s["cycle"], weights=weights, **kw),
                    c.values, "weights() vs cycle().values")
    print("  %s (%s weights): export JSON == la_weights.Cycle" % (app, tag))


def check_json_outputs(apps):
    validate(json.loads(lactl("apps", "--db", A.db, "--json").stdout),
             "lactl-apps.json", "lactl apps --json")
    for app in apps:
        validate(json.loads(lactl("cycles", app, "--db", A.db,
                                  "--json").stdout),
                 "lactl-cycles.json", "lactl cycles %s --json" % app)
        validate(json.loads(lactl("show", app, "--db", A.db,
                                  "--json").stdout),
                 "lactl-show.json", "lactl show %s --json" % app)
    for spec in ("polyline:cv=0.05", "lossless"):
        validate(json.loads(lactl("compact", "--synthetic", "mesh:20000",
                                  "--spec", spec, "--segments",
                                  "--json").stdout),
                 "lactl-compact.json", "lactl compact %s --json" % spec)
    # the validator is not vacuous: a broken document fails
    doc = json.loads(lactl("apps", "--db", A.db, "--json").stdout)
    doc["apps"][0]["ranks"] = "4"
    check(la_schema.errors(doc, schema("lactl-apps.json")),
          "the validator accepted a string rank count")
    del doc["apps"][0]["state"]
    doc["apps"][0]["ranks"] = 4
    check(la_schema.errors(doc, schema("lactl-apps.json")),
          "the validator accepted an app without state")


def check_readme(lw, app, cycle):
    """README's three lines, run as written on this store."""
    with open(os.path.join(A.src, "README.md")) as f:
        text = f.read()
    m = re.search(r"```python\n(import la_weights\n.*?)```", text, re.S)
    check(m is not None, "README has no ```python block starting with "
          "'import la_weights'")
    code = m.group(1)
    lines = [ln for ln in code.splitlines() if ln.strip()]
    check(len(lines) == 3, "README's la_weights block has %d lines, not 3" %
          len(lines))
    code = code.replace('"la.db"', repr(A.db))
    code = re.sub(r'"wavetoy-1234", 20', '%r, %d' % (app, cycle), code)
    env = {}
    exec(compile(code, "README.md", "exec"), env)
    same_values(env["w"], lw.open(A.db, lib=A.lib).weights(app, cycle),
                "README's three lines")
    print("  README's three lines load %d weights" % env["w"].size)


def copy_db(name):
    path = os.path.join(A.work, name)
    src = sqlite3.connect("file:%s?mode=ro" % A.db, uri=True)
    dst = sqlite3.connect(path)
    src.backup(dst)
    src.close()
    return path, dst


def check_partial(lw, app):
    """A copy of the store where rank 2 of cycle 1 is missing: NaN in the
    stitched cycle, left out of the rows, as lactl does."""
    path, db = copy_db("partial.db")
    key = (app, 1, 2)
    for t in ("traces", "robust"):
        db.execute("DELETE FROM %s WHERE app_id = ? AND cycle_tag = ? AND"
                   " rank = ?" % t, key)
    db.execute("INSERT INTO missing VALUES (?, ?, ?, 'test: removed',"
               " 'globalagent', NULL, 0)", key)
    db.execute("UPDATE trace_sets SET complete = 0, n_missing = 1,"
               " missing_ranks = '2' WHERE app_id = ? AND cycle_tag = 1",
               (app,))
    db.commit()
    db.close()
    with lw.open(path, lib=A.lib) as s:
        c = s.cycle(app, 1)
        check(c.state == "partial" and c.missing == [2] and
              c.missing_reasons == {2: "test: removed"} and
              np.isnan(c.rank(2)).all() and np.isnan(c.totals[2]) and
              not np.isnan(c.rank(1)).any(), "partial cycle: %r" % c)
        for weights in (None, "measured"):
            check_app(lw, s, app, weights, db=path)
    validate(json.loads(lactl("show", app, "1", "--db", path,
                              "--json").stdout),
             "lactl-show.json", "lactl show --json of a partial cycle")
    validate(json.loads(lactl("cycles", app, "--db", path, "--json").stdout),
             "lactl-cycles.json", "lactl cycles --json with a partial cycle")
    print("  partial cycle: rank 2 missing, as lactl exports it")


def check_coarse(lw, app):
    """A copy of the store where rank 1's trace of cycle 1 is marked coarse
    (the coarse table, as a GlobalAgent stores CompactTrace.coarse): the
    cycle's coarse names it with the reason, its values are unchanged, and
    a cycle without one has none."""
    path, db = copy_db("coarse.db")
    why = "coarse: the LocalAgent was behind (test)"
    db.execute("INSERT INTO coarse VALUES (?, 1, 1, ?)", (app, why))
    db.commit()
    db.close()
    with lw.open(path, lib=A.lib) as s, lw.open(A.db, lib=A.lib) as o:
        c, full = s.cycle(app, 1), o.cycle(app, 1)
        check(c.coarse == {1: why} and full.coarse == {} and
              np.array_equal(c.values, full.values, equal_nan=True),
              "coarse rank: %r, the store's own: %r" % (c.coarse,
                                                         full.coarse))
    print("  coarse trace: its rank and reason read back")


def check_history(lw, app):
    """A copy of the store where cycle 2 was demoted to a reference to
    cycle 1 (docs/history.md: empty segments and a history row): its values
    are cycle 1's, its totals its own, measured and robust, and the package
    reads the copy as lactl does."""
    path, db = copy_db("history.db")
    ranks = [r for r, in db.execute(
        "SELECT rank FROM traces WHERE app_id = ? AND cycle_tag = 2", (app,))]
    for r in ranks:
        key = (app, 2, r)
        db.execute("UPDATE traces SET segments = x'' WHERE app_id = ? AND"
                   " cycle_tag = ? AND rank = ?", key)
        db.execute("UPDATE robust SET segments = x'' WHERE app_id = ? AND"
                   " cycle_tag = ? AND rank = ? AND segments IS NOT NULL",
                   key)
        db.execute("INSERT INTO history(app_id, cycle_tag, rank, ref_cycle,"
                   " rank_seq, in_full) VALUES (?, ?, ?, 1, 2, 0)", key)
    db.commit()
    db.close()
    check(len(ranks) > 1, "history: %d ranks in cycle 2" % len(ranks))
    with lw.open(path, lib=A.lib) as s, lw.open(A.db, lib=A.lib) as orig:
        for weights in ("measured", "robust"):
            same_values(s.weights(app, 2, weights=weights),
                        orig.weights(app, 1, weights=weights),
                        "demoted cycle 2 (%s) vs cycle 1" % weights)
            c = s.cycle(app, 2, weights=weights)
            same_values(c.totals, orig.cycle(app, 2).totals,
                        "demoted cycle 2's own totals")
        for weights in (None, "measured", "robust"):
            check_app(lw, s, app, weights, db=path)
    print("  demoted cycle: its representative's values, as lactl reads "
          "them")


def check_one_channel(lw, app):
    """A copy of the store where the application declared one channel:
    no channel rows, the trace itself is that channel's series (as
    la_traceset_channel serves it), read as lactl reads it."""
    path, db = copy_db("onechannel.db")
    db.execute("DELETE FROM channel_traces WHERE app_id = ?", (app,))
    db.execute("DELETE FROM rank_channels WHERE app_id = ? AND channel > 0",
               (app,))
    db.commit()
    db.close()
    with lw.open(path, lib=A.lib) as s:
        check(s.channels(app) == CHANNELS[:1], "one channel: %r" %
              s.channels(app))
        for weights in (None, "measured", "robust"):
            c = s.cycle(app, "latest", weights=weights, channel=CHANNELS[0])
            same_values(c.values, s.weights(app, "latest", weights=weights),
                        "the one channel vs the sum")
            check(c.missing == [], "one channel: missing %r" % c.missing)
            check_app(lw, s, app, weights, db=path, channel=CHANNELS[0])
    print("  one channel: the trace is its series, as lactl reads it")


def check_errors(lw, app):
    # an explicit library path that is wrong fails, naming it
    try:
        lw.open(A.db, lib=os.path.join(A.work, "nowhere.so"))
        fail("a wrong lib= path loaded")
    except lw.LibraryNotFound as e:
        check("nowhere.so" in str(e), "LibraryNotFound: %s" % e)
    # $LA_CLIENT_LIB, a directory
    os.environ["LA_CLIENT_LIB"] = A.lib
    with lw.open(A.db) as s:
        check(s.weights(app, "latest").size > 0, "LA_CLIENT_LIB")
    del os.environ["LA_CLIENT_LIB"]
    with lw.open(A.db, lib=A.lib) as s:
        for bad in (lambda: s.cycle("no-such-app", 0),
                    lambda: s.cycle(app, 10 ** 6)):
            try:
                bad()
                fail("no NotFound")
            except lw.NotFound:
                pass
        try:
            s.cycle(app, 0, weights="channel-x")
            fail("an unknown weights= name was accepted")
        except ValueError as e:
            check("measured" in str(e), str(e))
        try:
            s.dataframe(app)
            print("  pandas present: dataframe() works")
        except ImportError as e:
            check("Store.table()" in str(e), "dataframe ImportError: %s" % e)
            print("  pandas absent: dataframe() says so")
    # a corrupted trace: the decoder's error, as for lactl
    bad, dst = copy_db("bad.db")
    key = (app, 0, 1)
    blob = bytearray(dst.execute(
        "SELECT segments FROM traces WHERE app_id = ? AND cycle_tag = ?"
        " AND rank = ?", key).fetchone()[0])
    blob[len(blob) // 2] ^= 0x40
    dst.execute("UPDATE traces SET segments = ? WHERE app_id = ? AND"
                " cycle_tag = ? AND rank = ?", (bytes(blob),) + key)
    dst.commit()
    dst.close()
    with lw.open(bad, lib=A.lib) as s:
        try:
            s.cycle(app, 0, weights="measured")
            fail("a corrupted trace decoded")
        except lw.DecodeError as e:
            # a flipped bit reads as corrupt (-12) or, where it lands in a
            # length, as truncated (-14): which depends on the blob
            check(e.code in (-12, -14) and "rank 1" in str(e), str(e))
            print("  corrupted trace: %s" % e)
    check(lactl("export", app, "0", "--db", bad, "--weights", "measured",
                ok=False).returncode == 1, "lactl exported a corrupted trace")


def check_channels(lw, store, app, plain):
    """app declared CHANNELS: each one's series equals lactl's, they add
    up to the sum, and an unknown name fails as lactl's does."""
    check(store.channels(app) == CHANNELS, "channels(%s): %r" %
          (app, store.channels(app)))
    check(store.channels(plain) == [], "channels(%s): %r" %
          (plain, store.channels(plain)))
    for ch in CHANNELS:
        for weights in (None, "measured", "robust"):
            check_app(lw, store, app, weights, channel=ch)
    # the channels' exact totals add up to the sum's (rounding aside)
    for tag in store.cycles(app):
        c = store.cycle(app, tag, weights="measured")
        parts = sum(store.cycle(app, tag, weights="measured",
                                channel=ch).totals for ch in CHANNELS)
        check(np.allclose(parts, c.totals, rtol=1e-9),
              "%s cycle %d: channel totals %r, sum %r" %
              (app, tag, parts, c.totals))
    print("  %s: channel totals add up to the sum's" % app)
    one = store.weights(app, channel=CHANNELS[0], weights="measured")
    check((bits(one) != bits(store.weights(app, weights="measured"))).any(),
          "channel %s's values equal the sum's" % CHANNELS[0])
    # a rank whose trace lacks the channel: missing in its view, as lactl
    path, db = copy_db("nochannel.db")
    db.execute("DELETE FROM channel_traces WHERE app_id = ? AND"
               " cycle_tag = 1 AND rank = 2 AND channel = 1", (app,))
    db.commit()
    db.close()
    with lw.open(path, lib=A.lib) as s:
        c = s.cycle(app, 1, channel=CHANNELS[1])
        check(c.missing == [2] and c.state == "partial" and
              c.missing_reasons == {2: lw.NO_CHANNEL_REASON} and
              np.isnan(c.rank(2)).all() and np.isnan(c.totals[2]),
              "rank without the channel: %r" % c)
        check(s.cycle(app, 1, channel=CHANNELS[0]).missing == [],
              "another channel lost rank 2")
        for weights in (None, "measured", "robust"):
            check_app(lw, s, app, weights, db=path, channel=CHANNELS[1])
    print("  a rank without the channel: missing in its view, as lactl")
    # an unknown name: NoSuchChannel naming it and the channels, as lactl
    last = int(store.cycles(app)[-1])
    p = lactl("show", app, "--db", A.db, "--channel", "eos", ok=False)
    check(p.returncode == 1, "lactl show --channel eos exited %d" %
          p.returncode)
    for call in (lambda: store.weights(app, channel="eos"),
                 lambda: store.cycle(app, last, channel="eos"),
                 lambda: store.table(app, channel="eos")):
        try:
            call()
            fail("channel='eos' was accepted")
        except lw.NoSuchChannel as e:
            check(isinstance(e, lw.NotFound) and e.channel == "eos" and
                  e.channels == CHANNELS, "NoSuchChannel: %r" % e)
            check("'eos'" in str(e) and "(channels: %s)" %
                  ", ".join(CHANNELS) in str(e), str(e))
    try:
        store.cycle(app, last, channel="eos")
    except lw.NoSuchChannel as e:
        check(str(e) in p.stderr, "la_weights says %r, lactl %r" %
              (str(e), p.stderr))
        print("  unknown channel: %s (as lactl)" % e)
    try:
        store.weights(plain, channel="eos")
        fail("channel= accepted for an application without channels")
    except lw.NoSuchChannel as e:
        check("declared no channels" in str(e) and e.channels == [], str(e))


# the channels examples/multiloop declares, in order
CHANNELS = ["h_update", "e_update", "source"]


def main():
    global A
    ap = argparse.ArgumentParser()
    for k in ("db", "bin", "lib", "src", "work", "apps", "channel_apps"):
        ap.add_argument("--" + k.replace("_", "-"), required=True)
    A = ap.parse_args()
    os.makedirs(A.work, exist_ok=True)
    apps = A.apps.split(",")
    chapps = A.channel_apps.split(",")
    lw = install()
    with lw.open(A.db, lib=A.lib) as store:
        check(sorted(a["app"] for a in store.apps()) ==
              sorted(apps + chapps), "apps: %r" % store.apps())
        check("robust" in store.series(), "no robust weights stored")
        for app in apps + chapps:
            for weights in (None, "measured", "robust"):
                check_app(lw, store, app, weights)
        for app in chapps:
            check_channels(lw, store, app, apps[0])
            check_one_channel(lw, app)
    check_json_outputs(apps)
    check_readme(lw, apps[0], 1)
    check_partial(lw, apps[0])
    check_coarse(lw, apps[0])
    check_history(lw, apps[0])
    check_errors(lw, apps[0])
    print("check_pydata: all checks passed")


if __name__ == "__main__":
    main()
