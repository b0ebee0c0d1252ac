# SPDX-License-Identifier: BSD-3-Clause
"""store.py: an LA GlobalAgent store (its SQLite file, docs/storage.md)
opened read-only, and per-element weights out of it as numpy arrays.

The rules of what a cycle serves have one home, libla_client: here a
stored Trace-Set is read back into the TraceSet message the GlobalAgent
would serve for it (every series stored, nothing chosen: _wire.py), and
libla_client makes a la_traceset_t of it (_lib.py). Which ranks are
missing and why, vtxdist, the exact totals, measured or robust weights
(weights=, $LA_WEIGHTS) and one channel's series in place of the sum
(channel=, la_traceset_channel) are then libla_client's answers, the same
as lactl's and the load balancers', and so are the decoded values.

What stays here is the store's format (docs/storage.md): which rows make a
stored set, a demoted cycle's empty segments standing for its
representative's (docs/history.md), and the members of a set stored by
representatives (docs/clusters.md: rep_members, rep_classes, rep_robust,
read by _reps.py; each rebuilt by libla_client's la_client_scale_trace),
as the GlobalAgent's store_load.c reads them.

Deliberately not here: deciding which series is served, decoding (both
libla_client), writing to the store, talking to a running GlobalAgent
(libla_client's feed or lactl do that).
"""

import os
import sqlite3
import urllib.parse

import numpy as np

from . import _lib, _reps, _wire
from ._reps import CorruptStore

# The store schema version this package reads (docs/storage.md).
SCHEMA_VERSION = 1

# One row of Store.table(): the columns of `lactl export --format csv` and
# of the .npy export (docs/lactl.md), in that order.
ROW_DTYPE = np.dtype([("cycle", "<u8"), ("rank", "<u4"), ("element", "<u8"),
                      ("global_element", "<u8"), ("value", "<f8")])


class NotFound(LookupError):
    """No such application, cycle or rank in the store."""


class NoRobustWeights(LookupError):
    """weights="robust" asked for a cycle where a present rank has none."""


class NoSuchChannel(NotFound):
    """channel= names no channel of the application. Attributes: channel
    (the name asked for), channels (the application's, in channel order)."""

    def __init__(self, msg, channel, channels):
        super().__init__(msg)
        self.channel, self.channels = channel, channels


# The reason libla_client gives (client/channels.c) for a rank whose trace
# lacks the channel asked for; Cycle.missing_reasons holds it as it comes.
NO_CHANNEL_REASON = "no series of this channel in the rank's trace"


class Series:
    """A weights= name: kind is the LA_WEIGHTS_* libla_client serves for
    it (la_traceset_set_weights)."""

    def __init__(self, name, kind, doc):
        self.name, self.kind, self.doc = name, kind, doc

    def __repr__(self):
        return "Series(%r)" % self.name


MEASURED = Series("measured", _lib.LA_WEIGHTS_MEASURED,
                  "the decoded measured values (within the compaction bound)")
ROBUST = Series("robust", _lib.LA_WEIGHTS_ROBUST,
                "robust weights: interference removed (docs/fidelity.md)")

# weights= names the store knows for every application.
SERIES = {s.name: s for s in (MEASURED, ROBUST)}


def _tag(c):
    """A cycle tag (0..2^64-1) as SQLite stores it (same bits, signed)."""
    c = int(c)
    if not 0 <= c < 1 << 64:
        raise ValueError("cycle tag %d out of range" % c)
    return c - (1 << 64) if c >= 1 << 63 else c


def _untag(v):
    return v + (1 << 64) if v < 0 else v


class Cycle:
    """One cycle of one application, every rank stitched (see the module's
    comment). Attributes:
      app, cycle    application id, cycle tag
      channel       the channel whose series values holds; None: the sum
      nprocs        ranks
      state         "complete", "partial" (closed with ranks missing) or
                    "open" (the GlobalAgent still waits for ranks)
      weights       "measured" or "robust": what values holds
      missing       missing ranks, increasing (a list)
      missing_reasons  {rank: reason} where one is recorded
      coarse        {rank: reason} of the ranks whose trace is coarse: its
                    LocalAgent was behind and took the cycle as sums of
                    blocks of elements (exact totals, each block's value
                    spread evenly over its elements), "coarse: the
                    LocalAgent was behind (...)"; empty when none is
      vtxdist       uint64[nprocs+1], rank r's elements are
                    values[vtxdist[r]:vtxdist[r+1]]
      totals        float64[nprocs], exact measured sums (NaN: missing)
      robust_totals float64[nprocs], exact robust sums (NaN: none)
      values        float64[vtxdist[-1]], NaN for missing ranks' elements
      rep_rank, rep_scale, rep_class
                    of each rank (arrays of nprocs) whose measured series
                    the store keeps by its class's representative
                    (store.representatives, docs/clusters.md): that
                    representative's rank, the rank's scale (its values are
                    the representative's times it) and the class; -1, NaN
                    and -1 for every other rank. Such a rank's totals are
                    its own, exact; its min and max (not in Cycle) are the
                    representative's times the scale.
      rep_minmax_bound  float64[nprocs]: of a rank packed into its class's
                    row whose min and max read back as the representative's
                    times its scale, the class's stated bound on their
                    relative error; 0 for every other rank (its min and
                    max are its own, exact)
      t_stored_ns   int64[nprocs]: when the GlobalAgent stored each rank's
                    trace (CLOCK_REALTIME ns; a packed member's from its
                    class's row), 0 for missing ranks
    """

    def rank(self, r):
        """Rank r's values (a view of values)."""
        if not 0 <= r < self.nprocs:
            raise NotFound("%s cycle %d has no rank %d" %
                           (self.app, self.cycle, r))
        return self.values[self.vtxdist[r]:self.vtxdist[r + 1]]

    def __repr__(self):
        return ("Cycle(%r, %d, %s, %d ranks, %d elements, %s%s)" %
                (self.app, self.cycle, self.state, self.nprocs,
                 self.values.size, self.weights,
                 "" if self.channel is None else
                 ", channel %r" % self.channel))


class Store:
    """A store file opened read-only. Use as a context manager or call
    close(). lib: libla_client's path (a file or directory; see _lib.py for
    where it is looked for without it)."""

    def __init__(self, path, lib=None):
        if not os.path.isfile(path):
            raise FileNotFoundError(path)
        self.path = path
        self._so = _lib.load(lib)
        uri = "file:%s?mode=ro" % urllib.parse.quote(os.path.abspath(path))
        self._db = sqlite3.connect(uri, uri=True)
        try:
            v = self._db.execute(
                "SELECT max(version) FROM schema_version").fetchone()[0]
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise ValueError("%s: not an LA store (%s)" % (path, e))
        if v != SCHEMA_VERSION:
            self._db.close()
            raise ValueError("%s: store schema version %s, this package "
                             "reads %d" % (path, v, SCHEMA_VERSION))
        self._has_robust = self._table("robust")
        self._has_channels = self._table("channel_traces")
        self._has_history = self._table("history")
        self._has_history_robust = self._table("history_robust")
        self._has_reps = tuple(self._table(t) for t in (
            "rep_members", "rep_classes", "rep_robust"))

    def _table(self, name):
        return self._db.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
            " AND name = ?", (name,)).fetchone()[0] > 0

    def close(self):
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ listing
    def apps(self):
        """[{"app", "name", "nprocs", "metric", "unit"}] by app id."""
        rows = self._db.execute(
            "SELECT app_id, app_name, nprocs, metric, unit FROM apps"
            " ORDER BY app_id").fetchall()
        return [dict(zip(("app", "name", "nprocs", "metric", "unit"), r))
                for r in rows]

    def cycles(self, app, first=None, last=None):
        """uint64 array of app's cycle tags with a Trace-Set (stored traces
        or missing records), increasing, within first..last."""
        rows = self._db.execute(
            "SELECT cycle_tag FROM trace_sets WHERE app_id = ?",
            (app,)).fetchall()
        tags = sorted(_untag(r[0]) for r in rows)
        tags = [t for t in tags if (first is None or t >= first) and
                (last is None or t <= last)]
        return np.array(tags, dtype=np.uint64)

    def series(self, app=None):
        """Names weights= takes: "measured", and "robust" when the store
        holds robust weights (of app, if given)."""
        out = ["measured"]
        if self._has_robust:
            q = "SELECT 1 FROM robust WHERE segments IS NOT NULL"
            args = ()
            if app is not None:
                q += " AND app_id = ?"
                args = (app,)
            if self._db.execute(q + " LIMIT 1", args).fetchone():
                out.append("robust")
        return out

    def channels(self, app):
        """app's channel names in channel order (LA_channel), those of its
        lowest rank that declared any, as lactl reads them; [] when it
        declared none. Raises NotFound for an unknown application."""
        self._app(app)
        if not self._has_channels:
            return []
        return [n for n, in self._db.execute(
            "SELECT name FROM rank_channels WHERE app_id = ?1 AND rank ="
            " (SELECT min(rank) FROM rank_channels WHERE app_id = ?1)"
            " ORDER BY channel", (app,))]

    def _channel(self, app, channel, where):
        """channel's index among app's channels, and their count; raises
        NoSuchChannel naming it and the channels there are."""
        names = self.channels(app)
        if channel not in names:
            raise NoSuchChannel(
                "%s has no channel '%s' (%s)" %
                (where, channel, "channels: " + ", ".join(names) if names
                 else "the application declared no channels"),
                channel, names)
        return names.index(channel), len(names)

    # ----------------------------------------------------------- weights
    def _app(self, app):
        r = self._db.execute(
            "SELECT nprocs, metric, unit FROM apps WHERE app_id = ?",
            (app,)).fetchone()
        if r is None:
            raise NotFound("no application %r in %s" % (app, self.path))
        return r

    def _resolve(self, app, cycle):
        if isinstance(cycle, str) and cycle == "latest":
            tags = self.cycles(app)
            if tags.size == 0:
                raise NotFound("%s has no cycle in %s" % (app, self.path))
            return int(tags[-1])
        return int(cycle)

    def _rows(self, table, sql, args):
        """sql's rows, none when the store predates table (added in place,
        docs/storage.md)."""
        if table and not self._table(table):
            return []
        return self._db.execute(sql, args).fetchall()

    def _representative(self, app, tag, rank):
        """(segments, robust segments) of the cycle a demoted trace refers
        to (docs/history.md), or None."""
        if not self._has_history:
            return None
        return self._db.execute(
            "SELECT t.segments, r.segments FROM history h JOIN traces t"
            " ON t.app_id = h.app_id AND t.cycle_tag = h.ref_cycle"
            " AND t.rank = h.rank LEFT JOIN robust r ON r.app_id = h.app_id"
            " AND r.cycle_tag = h.ref_cycle AND r.rank = h.rank"
            " WHERE h.app_id = ? AND h.cycle_tag = ? AND h.rank = ?",
            (app, tag, rank)).fetchone()

    def _robust_representative(self, app, tag, rank, n):
        """The robust segments of the cycle a trace whose robust weights
        alone were demoted refers to (history_robust, docs/history.md),
        with the cycle's own values spliced in at its exceptions
        (history_exceptions) when it has some, or None."""
        if not self._has_history_robust:
            return None
        exc = self._table("history_exceptions")
        r = self._db.execute(
            "SELECT r.segments, %s FROM history_robust h JOIN robust r"
            " ON r.app_id = h.app_id AND r.cycle_tag = h.ref_cycle"
            " AND r.rank = h.rank%s"
            " WHERE h.app_id = ? AND h.cycle_tag = ? AND h.rank = ?" %
            (("x.exceptions", " LEFT JOIN history_exceptions x ON"
              " x.app_id = h.app_id AND x.cycle_tag = h.cycle_tag AND"
              " x.rank = h.rank") if exc else ("NULL", "")),
            (app, tag, rank)).fetchone()
        if not r:
            return None
        if r[1] is None or not r[0]:
            return r[0]
        return _lib.splice(self._so, r[0], n, r[1],
                           "%s cycle %d rank %d" % (app, tag, rank))

    def _rep_segments(self, app, tag, cycle, rep, robust, n):
        """The segments (robust: robust weights) of representative rep of
        app's set, as the store's reader takes them (store_reps_load.c):
        its row's, or when emptied its history reference's."""
        r = self._db.execute(
            "SELECT segments FROM %s WHERE app_id = ? AND cycle_tag = ?"
            " AND rank = ?" % ("robust" if robust else "traces"),
            (app, tag, rep)).fetchone()
        if r is None:
            raise CorruptStore("trace of %s cycle %d: its representative %d"
                               " is not stored" % (app, cycle, rep))
        seg = r[0] or b""
        if not seg and robust:
            seg = self._robust_representative(app, tag, rep, n) or b""
        if not seg:
            ref = self._representative(app, tag, rep)
            seg = (ref[1 if robust else 0] if ref else None) or b""
        return seg

    def _member(self, app, tag, cycle, m, scale, robust, n, cache):
        """(segments, mode) of member m (_reps.Member) of app's set: its
        representative's values (robust: robust weights) times scale,
        re-encoded with the representative's records, the bytes
        la__reps_scale gives (la_client_scale_trace). cache: a dict kept
        for the set, each representative decoded once (_lib.Rep, closed by
        the caller)."""
        where = "%s cycle %d rank %d (%sfrom representative %d)" % (
            app, cycle, m.rank, "robust weights " if robust else "", m.rep)
        key = (m.rep, robust, n)
        rep = cache.get(key)
        if rep is None:
            rep = cache[key] = _lib.Rep(
                self._so,
                self._rep_segments(app, tag, cycle, m.rep, robust, n), n,
                where)
        return rep.scale(scale, where)

    def _stored_set(self, app, cycle):
        """(the TraceSet message (bytes) of app's stored cycle, as the
        GlobalAgent loads it (store_load.c): every series stored, the
        missing ranks below nprocs (when known; else the highest rank
        seen + 1) with their reasons, element counts from the ranks'
        starts; {rank: (rep_rank, rep_scale, rep_class, minmax_bound)}
        of its ranks stored by representatives; {rank: t_stored_ns} of its
        present ranks). Raises NotFound."""
        cache = {}
        try:
            return self._stored_set_reps(app, cycle, cache)
        finally:
            for rep in cache.values():
                rep.close()

    def _stored_set_reps(self, app, cycle, cache):
        """_stored_set with cache, the representatives decoded for it."""
        nprocs, metric, unit = self._app(app)
        tag = _tag(cycle)
        rob = self._has_robust
        traces = self._db.execute(
            "SELECT t.rank, t.n_elements, t.mode, t.segments, t.stat_count,"
            " t.stat_sum, t.stat_min, t.stat_max, t.seq, t.t_stored_ns, %s"
            " FROM traces t%s"
            " WHERE t.app_id = ? AND t.cycle_tag = ? ORDER BY t.rank" %
            (("r.segments, r.stat_count, r.stat_sum, r.stat_min, r.stat_max",
              " LEFT JOIN robust r ON r.app_id = t.app_id AND r.cycle_tag ="
              " t.cycle_tag AND r.rank = t.rank") if rob else
             ("NULL, NULL, NULL, NULL, NULL", "")), (app, tag)).fetchall()
        if nprocs:
            traces = [t for t in traces if t[0] < nprocs]
        # a set stored by representatives: its members (docs/clusters.md)
        reps = _reps.read(self._db, app, tag, cycle, *self._has_reps)
        rows = {t[0] for t in traces}
        packed = [m for m in reps.packed() if m.rank not in rows and
                  (not nprocs or m.rank < nprocs)]  # a row of its own wins
        chans = {}
        for row in self._rows(
                "channel_traces",
                "SELECT rank, channel, segments, stat_count, stat_sum,"
                " stat_min, stat_max, robust_segments, robust_count,"
                " robust_sum, robust_min, robust_max FROM channel_traces"
                " WHERE app_id = ? AND cycle_tag = ? ORDER BY rank, channel",
                (app, tag)):
            r, ch, seg, cnt, su, lo, hi, rseg, rcnt, rsu, rlo, rhi = row
            chans.setdefault(r, []).append(_wire.channel_trace(
                ch, seg, _wire.stats(cnt, su, lo, hi), rseg,
                None if rseg is None else _wire.stats(rcnt, rsu, rlo, rhi)))
        coarse = dict(self._rows(
            "coarse", "SELECT rank, reason FROM coarse WHERE app_id = ?"
            " AND cycle_tag = ?", (app, tag)))
        reasons = [(r, why) for r, why in self._rows(
            "missing", "SELECT rank, reason FROM missing WHERE app_id = ?"
            " AND cycle_tag = ? ORDER BY rank", (app, tag))
            if not nprocs or r < nprocs]
        if not traces and not packed and not reasons:
            raise NotFound("no trace of %s cycle %d" % (app, cycle))
        known = nprocs > 0
        present = rows | {m.rank for m in packed}
        if not known:
            nprocs = max(list(present) + [r for r, _ in reasons]) + 1
        missing = [r for r in range(nprocs) if r not in present]
        reasons = [(r, why) for r, why in reasons if r not in present]
        counts = [0] * nprocs
        for r, n in self._db.execute(
                "SELECT rank, n_elements FROM ranks WHERE app_id = ?"
                " AND started = 1", (app,)):
            if r < nprocs:
                counts[r] = n
        closed = self._db.execute(
            "SELECT closed, t_closed_ns FROM trace_sets WHERE app_id = ?"
            " AND cycle_tag = ?", (app, tag)).fetchone()
        msg, flags, stored = {}, {}, {}
        for (r, n, mode, seg, cnt, su, lo, hi, seq, t_stored,
             rseg, rcnt, rsu, rlo, rhi) in traces:
            stored[r] = t_stored
            # a member stored by its representative (an emptied row), else
            # a demoted cycle: its representative's segments; robust
            # weights demoted on their own: theirs (store_load.c's order)
            m = reps.members.get(r) if seg == b"" or rseg == b"" else None
            if rseg == b"" and r in reps.robust:
                if m is None:
                    raise CorruptStore(
                        "robust weights of %s cycle %d rank %d: a rep_robust"
                        " row without its rep_members row" % (app, cycle, r))
                rseg = self._member(app, tag, cycle, m, reps.robust[r],
                                    True, n, cache)[0]
            rref = (self._robust_representative(app, tag, r, n)
                    if rseg == b"" else None)
            if rref:
                rseg = rref
            if seg == b"" and m is not None:
                seg, mode = self._member(app, tag, cycle, m, m.scale, False,
                                         n, cache)
                flags[r] = (m.rep, m.scale, m.cls, m.minmax_bound)
            else:
                m = None
            ref = (self._representative(app, tag, r)
                   if seg == b"" or rseg == b"" else None)
            if ref is not None:
                seg = ref[0] if seg == b"" else seg
                rseg = ref[1] if rseg == b"" and ref[1] else rseg
            msg[r] = _wire.compact_trace(
                seq or 0, app, r, cycle, n, mode, seg,
                _wire.stats(cnt, su, lo, hi), rseg,
                None if rseg is None else _wire.stats(rcnt, rsu, rlo, rhi),
                chans.get(r, ()), coarse.get(r),
                None if m is None else (m.rep, m.scale, m.cls))
        for m in packed:  # no row: the rep_classes row's columns
            seg, mode = self._member(app, tag, cycle, m, m.scale, False, m.n,
                                     cache)
            msg[m.rank] = _wire.compact_trace(
                m.seq, app, m.rank, cycle, m.n, mode, seg,
                _wire.stats(m.n, m.sum, m.min, m.max), None, None,
                chans.get(m.rank, ()), coarse.get(m.rank),
                (m.rep, m.scale, m.cls))
            flags[m.rank] = (m.rep, m.scale, m.cls, m.minmax_bound)
            stored[m.rank] = m.t_stored_ns
        msg = [msg[r] for r in sorted(msg)]
        return _wire.trace_set(
            app, cycle, nprocs, known and not missing, missing, msg, counts,
            metric, unit,
            closed[1] if closed and closed[0] and
            isinstance(closed[1], int) else None,
            reasons, self.channels(app)), flags, stored

    def cycle(self, app, cycle="latest", weights=None, channel=None):
        """The Cycle app's cycle (a tag or "latest"). weights: None
        (libla_client's default: robust when every present rank has robust
        weights, else measured; the environment's LA_WEIGHTS=measured|robust
        changes it as for lactl), "measured", "robust" (raises
        NoRobustWeights unless every present rank has them), or another
        name of Store.series(). channel: None (the sum over the channels,
        the element's weight) or a name of Store.channels(app): that
        channel's series as la_traceset_channel serves it, a rank whose
        trace lacks it missing. Raises NotFound (NoSuchChannel for an
        unknown channel), NoRobustWeights, _lib.DecodeError."""
        if weights is not None and weights not in SERIES:
            raise ValueError("weights=%r: one of %s" %
                             (weights, ", ".join(sorted(SERIES))))
        self._app(app)
        cycle = self._resolve(app, cycle)
        where = "%s cycle %d" % (app, cycle)
        msg, flags, stored = self._stored_set(app, cycle)
        t = _lib.TraceSet.from_bytes(self._so, msg, where)
        if channel is not None:
            with t:
                v = t.channel(channel, where)
                if v is None:
                    names = t.channel_names()
                    raise NoSuchChannel(
                        "%s has no channel '%s' (%s)" %
                        (where, channel, "channels: " + ", ".join(names)
                         if names else "the application declared no "
                         "channels"), channel, names)
            t = v
        with t:
            if weights is not None and \
                    t.set_weights(SERIES[weights].kind) == _lib.LA_ENOTFOUND:
                lack = [r for r in range(t.nprocs())
                        if r not in t.missing() and not t.has_robust(r)]
                raise NoRobustWeights(
                    "%s: rank%s %s without robust weights" %
                    (where, "s" if len(lack) != 1 else "",
                     ",".join(map(str, lack)) or "(none present)"))
            c = Cycle()
            c.app, c.cycle, c.channel = app, cycle, channel
            c.nprocs = t.nprocs()
            c.missing = t.missing()
            c.missing_reasons = {r: t.missing_reason(r) for r in c.missing
                                 if t.missing_reason(r) is not None}
            c.coarse = {r: t.rank_coarse(r) for r in range(c.nprocs)
                        if t.rank_coarse(r) is not None}
            # as lactl names a set's state (lactl_set_state)
            c.state = ("complete" if t.complete() else
                       "partial" if t.time_ns() else "open")
            c.weights = ROBUST.name if t.robust() else MEASURED.name
            c.vtxdist = t.vtxdist()
            c.totals = t.totals()
            c.robust_totals = t.totals(robust=True)
            c.values = t.weights(where)
        c.rep_rank = np.full(c.nprocs, -1, dtype=np.int64)
        c.rep_scale = np.full(c.nprocs, np.nan)
        c.rep_class = np.full(c.nprocs, -1, dtype=np.int64)
        c.rep_minmax_bound = np.zeros(c.nprocs)
        for r, (rep, sc, cls, bound) in flags.items():
            if r < c.nprocs:
                c.rep_rank[r], c.rep_scale[r], c.rep_class[r] = rep, sc, cls
                c.rep_minmax_bound[r] = bound
        c.t_stored_ns = np.zeros(c.nprocs, dtype=np.int64)
        for r, t in stored.items():
            if r < c.nprocs and r not in c.missing:
                c.t_stored_ns[r] = t
        return c

    def weights(self, app, cycle="latest", weights=None, channel=None):
        """The cycle's values: float64, global element order, NaN for the
        elements of missing ranks (Store.cycle(...).values)."""
        return self.cycle(app, cycle, weights, channel).values

    def rank_weights(self, app, cycle, rank, weights=None, channel=None):
        """Rank's values of one cycle (float64), chosen as Store.cycle
        chooses for the whole cycle. Raises NotFound for a missing rank."""
        c = self.cycle(app, cycle, weights, channel)
        if rank in c.missing:
            raise NotFound("%s cycle %d: rank %d is missing%s" %
                           (app, c.cycle, rank,
                            ": " + c.missing_reasons[rank]
                            if rank in c.missing_reasons else ""))
        return c.rank(rank)

    def table(self, app, cycles=None, weights=None, channel=None):
        """One row per element of every present rank of the given cycles
        (None: all; a tag; or an iterable of tags), as a numpy structured
        array of ROW_DTYPE: exactly the rows of `lactl export --format csv`
        and of the .npy export (with channel=, `lactl export --channel`'s)."""
        if channel is not None:
            self._channel(app, channel, app)
        if cycles is None:
            cycles = self.cycles(app)
        elif isinstance(cycles, (int, np.integer, str)):
            cycles = [cycles]
        parts = []
        for cy in cycles:
            c = self.cycle(app, cy, weights, channel)
            for r in range(c.nprocs):
                if r in c.missing:
                    continue
                v = c.rank(r)
                t = np.empty(v.size, dtype=ROW_DTYPE)
                t["cycle"], t["rank"], t["value"] = c.cycle, r, v
                t["element"] = np.arange(v.size, dtype=np.uint64)
                t["global_element"] = t["element"] + c.vtxdist[r]
                parts.append(t)
        return np.concatenate(parts) if parts else np.empty(0, ROW_DTYPE)

    def dataframe(self, app, cycles=None, weights=None, channel=None):
        """Store.table() as a pandas DataFrame (pandas is optional: raises
        ImportError naming Store.table() when it is not installed)."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Store.dataframe needs pandas (%s); "
                              "Store.table() gives the same columns as a "
                              "numpy structured array" % e) from e
        return pandas.DataFrame(self.table(app, cycles, weights, channel))


def open(path, lib=None):  # noqa: A001 (the package's entry point)
    """Opens the store file path read-only: a Store. lib: libla_client's
    path (file or directory); default: $LA_CLIENT_LIB, then the usual
    places (_lib.py)."""
    return Store(path, lib)
