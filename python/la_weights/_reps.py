# SPDX-License-Identifier: BSD-3-Clause
"""_reps.py: the rows that say how a set was stored by representatives
(docs/clusters.md, docs/storage.md), read as the GlobalAgent's store reads
them (store/store_reps_rows.c, store/store_reps_pack.c), with the same
checks: rep_members (a member whose traces row was emptied), rep_classes
(members packed per class into one BLOB: no traces row of their own) and
rep_robust (a member whose robust series is its representative's).

Deliberately not here: rebuilding a member's values (libla_client's
la_client_scale_trace, through _lib.py), the rest of a stored set
(store.py).
"""

import math
import struct

# wire/la_codec.h's LA_MAX_RANKS; store/store.h's LA_STORE_MAX_BLOB
MAX_RANKS = 1 << 24
MAX_BLOB = 64 << 20
PACK_FORMAT = 1  # the BLOB's first byte (LA_STORE_PACK_FORMAT)
_SUM, _MIN, _MAX, _XFER, _RSEQ, _SCALE = 1, 2, 4, 8, 16, 32
_U64 = (1 << 64) - 1


class CorruptStore(ValueError):
    """A row of the store that its format does not allow (the message
    names the table, the set and the rank, as the GlobalAgent's reader
    does)."""


class Member:
    """A member: its class, its representative rep, its scale; packed
    members also n (elements) and their packed columns: sum, min, max
    (None: NULL), seq, t_xfer_ns and rank_seq (None: NULL)."""

    __slots__ = ("rank", "cls", "rep", "scale", "packed", "n", "sum", "min",
                 "max", "seq", "t_xfer_ns", "rank_seq")

    def __init__(self, rank, cls, rep, scale):
        self.rank, self.cls, self.rep, self.scale = rank, cls, rep, scale
        self.packed = False
        self.n = self.sum = self.min = self.max = None
        self.seq, self.t_xfer_ns, self.rank_seq = 0, None, None


class Rows:
    """A set's rows: members {rank: Member} (rep_members and rep_classes),
    robust {rank: robust scale} (rep_robust)."""

    def __init__(self):
        self.members, self.robust = {}, {}

    def packed(self):
        """The packed members, by rank."""
        return [m for _, m in sorted(self.members.items()) if m.packed]


def _varint(b, off):
    """(value, next offset) of the LEB128 varint at b[off]; ValueError when
    truncated or above 2^64 - 1 (la_creader_varint)."""
    x, shift = 0, 0
    while True:
        if off >= len(b):
            raise ValueError("truncated")
        c = b[off]
        off += 1
        if shift == 63 and c > 1:
            raise ValueError("varint too long")
        x |= (c & 0x7F) << shift
        if not c & 0x80:
            return x, off
        shift += 7


def _delta(b, off, prev):
    """prev plus the zigzag difference at b[off], modulo 2^64."""
    v, off = _varint(b, off)
    d = (v >> 1) ^ -(v & 1)
    return (prev + d) & _U64, off


def unpack(blob, max_members):
    """The members of a rep_classes BLOB (store_reps_pack.c's format): a
    list of dicts (rank, flags' columns, seq, t_stored_ns) in increasing
    rank. ValueError as la__store_unpack_members refuses it."""
    b = bytes(blob)
    if len(b) < 1 or b[0] != PACK_FORMAT:
        raise ValueError("not of pack format %d" % PACK_FORMAT)
    off, rank, rseq, seq, stored, out = 1, 0, 0, 0, 0, []
    while off < len(b):
        if len(out) == max_members:
            raise ValueError("more than its %d members" % max_members)
        gap, off = _varint(b, off)
        if gap == 0 or gap > MAX_RANKS:
            raise ValueError("rank gap %d" % gap)
        rank = rank + gap if out else gap - 1
        if rank >= MAX_RANKS or off >= len(b):
            raise ValueError("rank %d" % rank)
        f = b[off]
        off += 1
        if f & ~(_SUM | _MIN | _MAX | _XFER | _RSEQ | _SCALE):
            raise ValueError("flags 0x%x" % f)
        m = {"rank": rank}
        for key, bit in (("sum", _SUM), ("min", _MIN), ("max", _MAX),
                         ("scale", _SCALE)):
            m[key] = None
            if f & bit:
                if off + 8 > len(b):
                    raise ValueError("truncated")
                m[key] = struct.unpack_from("<d", b, off)[0]
                off += 8
        m["t_xfer_ns"] = None
        if f & _XFER:
            m["t_xfer_ns"], off = _varint(b, off)
        m["rank_seq"] = None
        if f & _RSEQ:
            rseq, off = _delta(b, off, rseq)
            m["rank_seq"] = rseq
        seq, off = _delta(b, off, seq)
        stored, off = _delta(b, off, stored)
        m["seq"], m["t_stored_ns"] = seq, stored
        out.append(m)
    return out


def _int(v, lo, hi):
    return isinstance(v, int) and lo <= v <= hi


def read(db, app, tag, cycle, has_members, has_classes, has_robust):
    """The Rows of app's set (cycle tag; tag as SQLite stores it), from the
    tables the store has (has_*: older stores lack them). Raises
    CorruptStore naming the table, the set and the rank."""
    rows = Rows()

    def bad(rank, table):
        return CorruptStore("trace of %s cycle %d rank %s: bad %s row" %
                            (app, cycle, rank, table))

    prev = -1
    for m, cls, rep, scale in (db.execute(
            "SELECT rank, class, rep_rank, scale FROM rep_members"
            " WHERE app_id = ? AND cycle_tag = ? ORDER BY rank", (app, tag))
            if has_members else ()):
        if not (_int(m, prev + 1, MAX_RANKS - 1) and
                _int(cls, 0, 0xFFFFFFFF) and _int(rep, 0, MAX_RANKS - 1) and
                rep != m and isinstance(scale, (int, float)) and
                math.isfinite(scale)):
            raise bad(m, "rep_members")
        prev = m
        rows.members[m] = Member(m, cls, rep, float(scale))
    packed = {}
    for cls, rep, tot, nel, nm, blob in (db.execute(
            "SELECT class, rep_rank, rep_total, n_elements, n_members,"
            " members FROM rep_classes WHERE app_id = ? AND cycle_tag = ?"
            " ORDER BY class", (app, tag)) if has_classes else ()):
        if not (_int(cls, 0, 0xFFFFFFFF) and _int(rep, 0, MAX_RANKS - 1) and
                _int(nel, 1, 1 << 32) and _int(nm, 1, MAX_RANKS - 1) and
                isinstance(blob, bytes) and 1 <= len(blob) <= MAX_BLOB):
            raise bad(rep, "rep_classes")
        try:
            ms = unpack(blob, nm)
        except ValueError:
            raise bad(rep, "rep_classes") from None
        if len(ms) != nm:
            raise bad(rep, "rep_classes")
        tot = 0.0 if tot is None else float(tot)  # NULL reads as 0
        for p in ms:
            if p["rank"] == rep:
                raise bad(rep, "rep_classes")
            # a member's scale: its own, else its exact total over the
            # representative's (store_reps_rows.c; no sum reads as 0)
            if p["scale"] is not None:
                scale = p["scale"]
            elif tot == 0:
                scale = float("nan")  # x/0: not finite
            else:
                scale = (0.0 if p["sum"] is None else p["sum"]) / tot
            if not math.isfinite(scale):
                raise bad(p["rank"], "rep_classes")
            if p["rank"] in packed or p["rank"] in rows.members:
                raise bad(p["rank"], "rep_classes")
            m = Member(p["rank"], cls, rep, scale)
            m.packed, m.n = True, nel
            for k in ("sum", "min", "max", "seq", "t_xfer_ns", "rank_seq"):
                setattr(m, k, p[k])
            packed[m.rank] = m
    rows.members.update(packed)
    prev = -1
    for m, scale in (db.execute(
            "SELECT rank, scale FROM rep_robust WHERE app_id = ? AND"
            " cycle_tag = ? ORDER BY rank", (app, tag)) if has_robust else ()):
        if not (_int(m, prev + 1, MAX_RANKS - 1) and
                isinstance(scale, (int, float)) and math.isfinite(scale)):
            raise CorruptStore("robust weights of %s cycle %d rank %s: bad "
                               "rep_robust row" % (app, cycle, m))
        prev = m
        rows.robust[m] = float(scale)
    return rows
