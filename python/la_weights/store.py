"""store.py: an LA GlobalAgent store (its SQLite file, docs/storage.md)
opened read-only, and per-element weights out of it as numpy arrays.

A Cycle is one application's Trace-Set stitched the way lactl and
libla_client stitch it: ranks 0..nprocs-1 in order, global element offsets
as ParMETIS's vtxdist, NaN for the elements of missing ranks, the
measured or the robust weights chosen by the same rule. Values are decoded
by libla_client (_lib.py), so they equal `lactl export`'s bit for bit.

Which per-element series a weight comes from is a Series: "measured"
(traces.segments) and "robust" (robust.segments) for the sum. Every
function that takes weights= resolves it through the registry below.

Channels (LA_channel: one series per kernel, the sum being their
per-element total) are a second axis, channel=, because their names belong
to an application: Store.channels(app) lists them, and channel="name" reads
that channel's series (channel_traces) in place of the sum, measured or
robust by the same weights= rule, as `lactl --channel` and
libla_client's la_traceset_channel read them: the same ranks and vtxdist
as the sum, a rank whose trace lacks the channel missing with that reason.

Deliberately not here: decoding (libla_client), writing to the store,
talking to a running GlobalAgent (libla_client's feed or lactl do that).
"""

import os
import sqlite3
import urllib.parse

import numpy as np

from . import _lib

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


# A rank whose trace lacks the channel asked for (libla_client's words).
NO_CHANNEL_REASON = "no series of this channel in the rank's trace"


class Series:
    """One per-element series stored for each (application, cycle, rank).

    name: what weights= calls it. sql: a query with parameters
    (app_id, cycle_tag) returning (rank, n_elements, segments BLOB or NULL)
    for every trace of the cycle, by rank. A rank whose BLOB is NULL lacks
    this series."""

    def __init__(self, name, sql, doc, params=()):
        self.name, self.sql, self.doc = name, sql, doc
        self.params = tuple(params)  # bound after (app_id, cycle_tag)

    def __repr__(self):
        return "Series(%r)" % self.name


MEASURED = Series(
    "measured",
    "SELECT rank, n_elements, segments FROM traces"
    " WHERE app_id = ? AND cycle_tag = ? ORDER BY rank",
    "the decoded measured values (within the compaction bound)")
ROBUST = Series(
    "robust",
    "SELECT t.rank, t.n_elements, r.segments FROM traces t"
    " LEFT JOIN robust r ON r.app_id = t.app_id"
    " AND r.cycle_tag = t.cycle_tag AND r.rank = t.rank"
    " WHERE t.app_id = ? AND t.cycle_tag = ? ORDER BY t.rank",
    "robust weights: interference removed (docs/fidelity.md)")

# weights= names the store knows for every application.
SERIES = {s.name: s for s in (MEASURED, ROBUST)}


def channel_series(index, robust, single):
    """The Series of channel number index (its position in
    Store.channels()), measured or robust. single: the application declared
    one channel only, so a trace without a channel row is that channel
    (the store keeps channel rows for two channels or more)."""
    seg = "c.robust_segments" if robust else "c.segments"
    if single:
        own = "r.segments" if robust else "t.segments"
        seg = "CASE WHEN c.rank IS NULL THEN %s ELSE %s END" % (own, seg)
    return Series(
        "robust" if robust else "measured",
        "SELECT t.rank, t.n_elements, %s FROM traces t"
        " LEFT JOIN robust r ON r.app_id = t.app_id"
        " AND r.cycle_tag = t.cycle_tag AND r.rank = t.rank"
        " LEFT JOIN channel_traces c ON c.app_id = t.app_id"
        " AND c.cycle_tag = t.cycle_tag AND c.rank = t.rank"
        " AND c.channel = ?3"
        " WHERE t.app_id = ?1 AND t.cycle_tag = ?2 ORDER BY t.rank" % seg,
        "channel %d's %s values" % (index, "robust" if robust else
                                    "measured"), (index,))


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
      vtxdist       uint64[nprocs+1], rank r's elements are
                    values[vtxdist[r]:vtxdist[r+1]]
      totals        float64[nprocs], exact measured sums (NaN: missing)
      robust_totals float64[nprocs], exact robust sums (NaN: none)
      values        float64[vtxdist[-1]], NaN for missing ranks' elements
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

    def _blobs(self, series, app, cycle):
        rows = self._db.execute(series.sql, (app, _tag(cycle)) +
                                series.params).fetchall()
        if not self._has_history:
            return rows
        # A cycle stored as a history reference beyond the retention window
        # has an empty BLOB: its values are its representative's (the
        # referenced cycle of the same rank, never itself a reference), as
        # the GlobalAgent serves them (docs/history.md).
        out, refs = [], {}
        for rank, n, blob in rows:
            if blob is not None and len(blob) == 0:
                ref = self._db.execute(
                    "SELECT ref_cycle FROM history WHERE app_id = ?"
                    " AND cycle_tag = ? AND rank = ?",
                    (app, _tag(cycle), rank)).fetchone()
                if ref is not None:
                    if ref[0] not in refs:
                        refs[ref[0]] = {
                            r: b for r, _, b in self._db.execute(
                                series.sql, (app, ref[0]) + series.params)}
                    blob = refs[ref[0]].get(rank, blob)
            out.append((rank, n, blob))
        return out

    def cycle(self, app, cycle="latest", weights=None, channel=None):
        """The Cycle app's cycle (a tag or "latest"). weights: None (robust
        when every present rank has robust weights, else measured; the
        environment's LA_WEIGHTS=measured|robust changes the default as
        for libla_client and lactl), "measured", "robust" (raises
        NoRobustWeights unless every present rank has them), or another
        name of Store.series(). channel: None (the sum over the channels,
        the element's weight) or a name of Store.channels(app): that
        channel's series, measured or robust by the same rule, a rank whose
        trace lacks it missing. Raises NotFound (NoSuchChannel for an
        unknown channel), NoRobustWeights, _lib.DecodeError."""
        nprocs, _, _ = self._app(app)
        cycle = self._resolve(app, cycle)
        tag = _tag(cycle)
        traces = self._db.execute(
            "SELECT rank, n_elements, stat_sum FROM traces"
            " WHERE app_id = ? AND cycle_tag = ? ORDER BY rank",
            (app, tag)).fetchall()
        reasons = dict(self._db.execute(
            "SELECT rank, reason FROM missing WHERE app_id = ?"
            " AND cycle_tag = ?", (app, tag)).fetchall()) \
            if self._table("missing") else {}
        if not traces and not reasons:
            raise NotFound("no trace of %s cycle %d" % (app, cycle))
        if channel is not None:
            ch, nch = self._channel(app, channel, "%s cycle %d" %
                                    (app, cycle))
        known = nprocs > 0
        if not known:
            nprocs = max([r for r, _, _ in traces] + list(reasons)) + 1
        traces = [t for t in traces if t[0] < nprocs]
        c = Cycle()
        c.app, c.cycle, c.nprocs = app, cycle, nprocs
        present = {r: (n, s) for r, n, s in traces}
        c.missing = [r for r in range(nprocs) if r not in present]
        c.missing_reasons = {r: reasons[r] for r in c.missing
                             if r in reasons}
        closed = self._db.execute(
            "SELECT closed, t_closed_ns FROM trace_sets WHERE app_id = ?"
            " AND cycle_tag = ?", (app, tag)).fetchone()
        if known and not c.missing:
            c.state = "complete"
        elif closed and closed[0] and closed[1]:
            c.state = "partial"
        else:
            c.state = "open"
        started = dict(self._db.execute(
            "SELECT rank, n_elements FROM ranks WHERE app_id = ?"
            " AND started = 1", (app,)).fetchall())
        counts = [present[r][0] if r in present else started.get(r, 0)
                  for r in range(nprocs)]
        c.vtxdist = np.zeros(nprocs + 1, dtype=np.uint64)
        np.cumsum(counts, out=c.vtxdist[1:])
        c.totals = np.array([present[r][1] if r in present and
                             present[r][1] is not None else np.nan
                             for r in range(nprocs)], dtype=np.float64)
        c.robust_totals = np.full(nprocs, np.nan)
        rob = set()  # present ranks with robust weights
        if self._has_robust:
            for r, s in self._db.execute(
                    "SELECT rank, stat_sum FROM robust WHERE app_id = ?"
                    " AND cycle_tag = ? AND segments IS NOT NULL",
                    (app, tag)):
                if r in present:
                    rob.add(r)
                    c.robust_totals[r] = np.nan if s is None else s
        c.channel = channel
        if channel is None:
            series = self._choose(weights, c, rob)
        else:
            series = self._channel_view(c, tag, ch, nch, weights, rob)
        rows = self._blobs(series, app, cycle)
        c.weights = series.name
        c.values = np.full(int(c.vtxdist[-1]), np.nan)
        for r, n, blob in rows:
            if r >= nprocs or r in c.missing:
                continue
            if blob is None:
                raise NoRobustWeights("%s cycle %d rank %d has no %s "
                                      "weights" % (app, cycle, r,
                                                   series.name))
            _lib.decode_into(self._so, blob, c.rank(r),
                             "%s cycle %d rank %d" % (app, cycle, r))
        return c

    def _channel_view(self, c, tag, ch, nch, weights, rob):
        """Turns c (the sum's ranks, totals and robust ranks rob) into
        channel ch's view as la_traceset_channel does; returns its
        Series."""
        summed = self._choose(None, c, rob) is ROBUST
        crob = set()
        for r, has, s, rs, rsum in self._db.execute(
                "SELECT t.rank, c.rank IS NOT NULL, c.stat_sum,"
                " c.robust_segments IS NOT NULL, c.robust_sum FROM traces t"
                " LEFT JOIN channel_traces c ON c.app_id = t.app_id"
                " AND c.cycle_tag = t.cycle_tag AND c.rank = t.rank"
                " AND c.channel = ? WHERE t.app_id = ? AND t.cycle_tag = ?",
                (ch, c.app, tag)):
            if r >= c.nprocs or r in c.missing:
                continue
            if not has and nch > 1:
                c.missing.append(r)
                c.missing_reasons[r] = NO_CHANNEL_REASON
                c.totals[r] = c.robust_totals[r] = np.nan
            elif has:
                c.totals[r] = np.nan if s is None else s
                c.robust_totals[r] = (np.nan if rsum is None else rsum) \
                    if rs else np.nan
                if rs:
                    crob.add(r)
            elif r in rob:  # one channel: the trace is that channel
                crob.add(r)
        c.missing.sort()
        if c.state == "complete" and c.missing:
            c.state = "partial"
        if weights is None and not summed:
            weights = "measured"
        return channel_series(ch, self._choose(weights, c, crob) is ROBUST,
                              nch == 1)

    def _choose(self, weights, c, rob):
        every = len(rob) > 0 and len(rob) == c.nprocs - len(c.missing)
        if weights is None:
            env = os.environ.get("LA_WEIGHTS", "")
            return ROBUST if every and env != "measured" else MEASURED
        if weights not in SERIES:
            raise ValueError("weights=%r: one of %s" %
                             (weights, ", ".join(sorted(SERIES))))
        if weights == "robust" and not every:
            lack = [r for r in range(c.nprocs)
                    if r not in c.missing and r not in rob]
            raise NoRobustWeights(
                "%s cycle %d: rank%s %s without robust weights" %
                (c.app, c.cycle, "s" if len(lack) != 1 else "",
                 ",".join(map(str, lack)) or "(none present)"))
        return SERIES[weights]

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
