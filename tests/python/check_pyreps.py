# SPDX-License-Identifier: BSD-3-Clause
"""check_pyreps.py: the Python package reads a set stored by representatives
(docs/clusters.md) as the GlobalAgent serves it; run by
tests/unit/test_representatives.c with Debian's /usr/bin/python3.

  check_pyreps.py --db STORE --global HOST:PORT --bin BINDIR --lib LIBDIR
                  --src TREE --work DIR --app APP --totals FILE

STORE holds APP's cycle 1 with rep_members rows (members whose traces and
robust rows were emptied, rep_robust rows) and cycle 2 with members packed
into rep_classes rows (no traces row of their own). For both cycles: every
rank present, the measured and (cycle 1) robust values equal bit for bit
to `lactl export` from the GlobalAgent's feed (libla_client) and from the
store file (the C reader), each rank's totals equal to FILE's (the ranks'
raw sums, "rank measured robust" as C's %a); Cycle's rep_rank, rep_scale
and rep_class those of the store's rows (rep_members, rep_classes), a
member's values its representative's times rep_scale, -1/NaN/-1 for
every other rank; t_stored_ns each rank's traces row's or, packed, within
the set's store times, rep_minmax_bound the class row's bound for packed
members whose min and max are predicted, else 0; a copy with one rep_classes
BLOB cut short, or with its format byte changed, raises CorruptStore
naming the table and the set (and lactl fails on it too); a copy whose
store predates the representatives' tables reads the members as before.
Exits 1 on the first failure; the last line on success is
"check_pyreps: all checks passed".
"""

import argparse
import os
import sqlite3
import struct
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import check_pydata as cp  # noqa: E402 (its helpers: cp.A is ours)
from check_pydata import bits, check, copy_db, fail, lactl  # noqa: E402

A = None


def exported(cycle, weights, src):
    """`lactl export --format npy` of APP's cycle: its value column."""
    out = os.path.join(A.work, "x-%d-%s-%s.npy" % (cycle, weights,
                                                   src[0].strip("-")))
    lactl("export", A.app, str(cycle), "--format", "npy", "-o", out,
          "--weights", weights, *src)
    t = np.load(out)
    check((t["global_element"] == np.arange(t.size)).all(),
          "%s: rows not in global element order" % out)
    return t["value"]


def check_cycle(s, cycle, totals, series):
    c = s.cycle(A.app, cycle, weights="measured")
    check(c.nprocs == len(totals) and c.missing == [] and
          c.state == "complete" and not np.isnan(c.values).any(),
          "cycle %d: %r, missing %r" % (cycle, c, c.missing))
    check((bits(c.totals) == bits(totals[:, 0])).all(),
          "cycle %d: measured totals %r, raw %r" % (cycle, c.totals,
                                                    totals[:, 0]))
    for weights in series:
        v = s.weights(A.app, cycle, weights=weights)
        for src in (["--global", A.glob], ["--db", A.db]):
            x = exported(cycle, weights, src)
            d = np.nonzero(bits(v) != bits(x))[0]
            check(v.shape == x.shape and d.size == 0,
                  "cycle %d %s: %d values differ from lactl export %s, "
                  "first at %s" % (cycle, weights, d.size, src[0], d[:1]))
        print("  cycle %d %s: %d values, every rank, bit for bit as the "
              "GlobalAgent's feed and the C reader" % (cycle, weights,
                                                        v.size))
    if "robust" in series:
        r = s.cycle(A.app, cycle, weights="robust")
        check((bits(r.robust_totals) == bits(totals[:, 1])).all(),
              "cycle %d: robust totals %r" % (cycle, r.robust_totals))


def check_flags(s, cycle, members):
    """Cycle's rep_* of every rank: members {rank: (rep, cls, scale)}, or
    for a packed member ({class: (rep, rank_min, rank_max)}, None, None):
    its class one of those, its rank in the class's range, its scale
    checked through its values."""
    c = s.cycle(A.app, cycle, weights="measured")
    for r in range(c.nprocs):
        if r not in members:
            check(c.rep_rank[r] == -1 and np.isnan(c.rep_scale[r]) and
                  c.rep_class[r] == -1,
                  "cycle %d rank %d: rep flags %d %r %d" %
                  (cycle, r, c.rep_rank[r], c.rep_scale[r], c.rep_class[r]))
            continue
        rep, cls, sc = members[r]
        if isinstance(rep, dict):  # packed: a class row's, in its range
            got = rep.get(int(c.rep_class[r]))
            rep, cls = (got[0], int(c.rep_class[r])) if got and \
                got[1] <= r <= got[2] else (-2, -2)
        check(c.rep_rank[r] == rep and c.rep_class[r] == cls and
              (sc is None or bits(np.array([sc]))[0] ==
               bits(c.rep_scale[r:r + 1])[0]),
              "cycle %d rank %d: rep flags %d %r %d, the rows %r" %
              (cycle, r, c.rep_rank[r], c.rep_scale[r], c.rep_class[r],
               members[r]))
        want = c.rank(rep) * c.rep_scale[r]
        check(np.allclose(c.rank(r), want, rtol=1e-9, atol=0),
              "cycle %d rank %d: values not its representative's times "
              "%r" % (cycle, r, c.rep_scale[r]))
    print("  cycle %d: rep_rank, rep_scale, rep_class of %d members as the "
          "rows say, -1/NaN/-1 for the other %d ranks" %
          (cycle, len(members), c.nprocs - len(members)))


def check_stamps(s, cycle):
    """Cycle's t_stored_ns and rep_minmax_bound of every rank: a rank with
    a traces row its t_stored_ns; a packed member's (from its class's
    BLOB) within the set's first and last store times (trace_sets); the
    bound 0 but for packed members, whose bound is 0 (min and max their
    own) or their class row's (the BLOB's header), which at least one of
    a class with a bound above 0 carries."""
    c = s.cycle(A.app, cycle, weights="measured")
    db = sqlite3.connect("file:%s?mode=ro" % A.db, uri=True)
    rows = dict(db.execute("SELECT rank, t_stored_ns FROM traces WHERE"
                           " app_id = ? AND cycle_tag = ?", (A.app, cycle)))
    first, last = db.execute("SELECT t_first_ns, t_last_ns FROM trace_sets"
                             " WHERE app_id = ? AND cycle_tag = ?",
                             (A.app, cycle)).fetchone()
    bounds, classes = {}, {}
    for cls, lo, hi, blob in db.execute(
            "SELECT class, rank_min, rank_max, members FROM rep_classes"
            " WHERE app_id = ? AND cycle_tag = ?", (A.app, cycle)):
        b = bytes(blob)
        bounds[cls] = struct.unpack("<d", b[1:9])[0] if b[0] == 2 else 0.0
        classes[cls] = (lo, hi)
    db.close()
    check(c.t_stored_ns.dtype == np.int64 and
          c.rep_minmax_bound.dtype == np.float64,
          "cycle %d: dtypes %s %s" % (cycle, c.t_stored_ns.dtype,
                                      c.rep_minmax_bound.dtype))
    carried = set()
    for r in range(c.nprocs):
        t, b = int(c.t_stored_ns[r]), float(c.rep_minmax_bound[r])
        if r in rows:
            check(t == rows[r] and b == 0.0,
                  "cycle %d rank %d: t_stored_ns %d (row %d), bound %r" %
                  (cycle, r, t, rows[r], b))
            continue
        cls = int(c.rep_class[r])
        check(cls in bounds and first <= t <= last and
              b in (0.0, bounds[cls]),
              "cycle %d packed rank %d: t_stored_ns %d not within the set's"
              " %d..%d, or bound %r not 0 nor class %d's %r" %
              (cycle, r, t, first, last, b, cls, bounds.get(cls)))
        if b > 0:
            carried.add(cls)
    want = {cls for cls, b in bounds.items() if b > 0}
    check(carried == want, "cycle %d: classes whose bound a member carries"
          " %r, with a bound %r" % (cycle, sorted(carried), sorted(want)))
    print("  cycle %d: t_stored_ns of %d ranks (%d from packed rows) within"
          " the set's store times; rep_minmax_bound of %d classes (%s)" %
          (cycle, c.nprocs, c.nprocs - len(rows), len(bounds),
           ", ".join("%.3g" % bounds[k] for k in sorted(bounds)) or "none"))


def check_damaged(lw, name, damage):
    """A copy whose first rep_classes BLOB of cycle 2 is damage(BLOB)."""
    path, db = copy_db(name)
    rowid, blob = db.execute(
        "SELECT rowid, members FROM rep_classes WHERE app_id = ? AND"
        " cycle_tag = 2 ORDER BY rowid LIMIT 1", (A.app,)).fetchone()
    db.execute("UPDATE rep_classes SET members = ? WHERE rowid = ?",
               (damage(bytes(blob)), rowid))
    db.commit()
    db.close()
    with lw.open(path, lib=A.lib) as s:
        try:
            s.cycle(A.app, 2)
            fail("%s: read without an error" % name)
        except lw.CorruptStore as e:
            check("bad rep_classes row" in str(e) and
                  ("%s cycle 2 rank" % A.app) in str(e), str(e))
            print("  %s: CorruptStore: %s" % (name, e))
        # the other cycle is unharmed
        check(s.cycle(A.app, 1).missing == [], "%s: cycle 1" % name)
    p = lactl("show", A.app, "2", "--db", path, ok=False)
    check(p.returncode == 1 and "bad rep_classes row" in p.stderr,
          "lactl show of %s: %d %s" % (name, p.returncode, p.stderr))


def check_older(lw, members):
    """A store without the representatives' tables: as the reader always
    read it (the packed members missing, no reason)."""
    path, db = copy_db("older.db")
    for t in ("rep_members", "rep_classes", "rep_robust"):
        db.execute("DROP TABLE %s" % t)
    db.commit()
    db.close()
    with lw.open(path, lib=A.lib) as s:
        c = s.cycle(A.app, 2)
        check(c.missing == members, "older store: missing %r" % c.missing)
    print("  older store: %d packed ranks missing, as before" % len(members))


def main():
    global A
    ap = argparse.ArgumentParser()
    for k in ("db", "global", "bin", "lib", "src", "work", "app", "totals"):
        ap.add_argument("--" + k, required=True, dest=k.replace("global",
                                                                "glob"))
    A = cp.A = ap.parse_args()
    os.makedirs(A.work, exist_ok=True)
    sys.path.insert(0, os.path.join(A.src, "python"))
    import la_weights as lw
    with open(A.totals) as f:
        totals = np.array([[float.fromhex(w) for w in ln.split()[1:]]
                           for ln in f if ln.strip()])
    db = sqlite3.connect("file:%s?mode=ro" % A.db, uri=True)
    n_rows = db.execute("SELECT count(*) FROM rep_members WHERE app_id = ?"
                        " AND cycle_tag = 1", (A.app,)).fetchone()[0]
    n_rob = db.execute("SELECT count(*) FROM rep_robust WHERE app_id = ?"
                       " AND cycle_tag = 1", (A.app,)).fetchone()[0]
    packed = db.execute("SELECT count(*), coalesce(sum(n_members), 0) FROM"
                        " rep_classes WHERE app_id = ? AND cycle_tag = 2",
                        (A.app,)).fetchone()
    own = {r for r, in db.execute("SELECT rank FROM traces WHERE app_id = ?"
                                  " AND cycle_tag = 2", (A.app,))}
    # the members each cycle's rows name (packed ones: their class row's)
    members = {c: {r: (rep, cls, sc) for r, rep, cls, sc in db.execute(
        "SELECT rank, rep_rank, class, scale FROM rep_members WHERE"
        " app_id = ? AND cycle_tag = ?", (A.app, c))} for c in (1, 2)}
    classes = {cls: (rep, lo, hi) for cls, rep, lo, hi in db.execute(
        "SELECT class, rep_rank, rank_min, rank_max FROM rep_classes"
        " WHERE app_id = ? AND cycle_tag = 2", (A.app,))}
    for r in set(range(len(totals))) - own:  # packed: one of the classes
        members[2][r] = (classes, None, None)
    db.close()
    check(n_rows > 0 and n_rob > 0 and packed[1] > 0,
          "the store holds no set stored by representatives: %d rep_members,"
          " %d rep_robust rows, %r packed" % (n_rows, n_rob, packed))
    print("  cycle 1: %d rep_members, %d rep_robust rows; cycle 2: %d "
          "members packed in %d rep_classes rows" %
          (n_rows, n_rob, packed[1], packed[0]))
    with lw.open(A.db, lib=A.lib) as s:
        check_cycle(s, 1, totals, ("measured", "robust"))
        check_cycle(s, 2, totals, ("measured",))
        check_flags(s, 1, members[1])
        check_flags(s, 2, members[2])
        check_stamps(s, 1)
        check_stamps(s, 2)
    check_damaged(lw, "cut.db", lambda b: b[:-3])
    check_damaged(lw, "format.db", lambda b: b"\x07" + b[1:])
    check_older(lw, sorted(set(range(len(totals))) - own))
    print("check_pyreps: all checks passed")


if __name__ == "__main__":
    main()
