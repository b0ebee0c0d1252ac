# SPDX-License-Identifier: BSD-3-Clause
"""_reps.py: the rows that say how a set was stored by representatives
(docs/clusters.md, docs/storage.md), read as the GlobalAgent's store reads
them (store/store_reps_rows.c, store/store_reps_pack.c), with the same
checks: rep_members (a member whose traces row was emptied), rep_classes
(members packed per class into one BLOB: no traces row of their own; in
format 2 a member's min and max are its representative's times its scale,
within the class's stated bound; format 1 rows, which hold them as they
were, still read) and rep_robust (a member whose robust series is its
representative's).

Deliberately not here: rebuilding a member's values (libla_client's
la_client_scale_trace, through _lib.py), the rest of a stored set
(store.py).
"""

import math
import struct

# wire/la_codec.h's LA_MAX_RANKS; store/store.h's LA_STORE_MAX_BLOB
MAX_RANKS = 1 << 24
MAX_BLOB = 64 << 20
PACK_FORMAT = 2  # the BLOB's first byte (LA_STORE_PACK_FORMAT)
PACK_FORMAT_V1 = 1  # min and max as they were (LA_STORE_PACK_FORMAT_V1)
_SUM, _MIN, _MAX, _XFER, _RSEQ, _SCALE, _OWN, _RSAME = (1, 2, 4, 8, 16, 32,
                                                       64, 128)
_U64 = (1 << 64) - 1
_SUM7_ESC = 1 << 55  # format 2's total: 8 bytes of the double follow
_D = struct.Struct("<d")
_Q = struct.Struct("<Q")


class CorruptStore(ValueError):
    """A row of the store that its format does not allow (the message
    names the table, the set and the rank, as the GlobalAgent's reader
    does)."""


class Member:
    """A member: its class, its representative rep, its scale; packed
    members also n (elements) and their packed columns: sum, min, max
    (None: NULL; min and max, in format 2, its representative's times its
    scale: within the class's bound of its own), seq, t_xfer_ns and
    rank_seq (None: NULL), t_stored_ns, and minmax_bound: the class's
    bound when its min and max are predicted, else 0 (exact)."""

    __slots__ = ("rank", "cls", "rep", "scale", "packed", "n", "sum", "min",
                 "max", "seq", "t_xfer_ns", "rank_seq", "t_stored_ns",
                 "minmax_bound")

    def __init__(self, rank, cls, rep, scale):
        self.rank, self.cls, self.rep, self.scale = rank, cls, rep, scale
        self.packed = False
        self.n = self.sum = self.min = self.max = None
        self.seq, self.t_xfer_ns, self.rank_seq = 0, None, None
        self.t_stored_ns, self.minmax_bound = 0, 0.0


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


def _sum7(b, off, ref):
    """(total, next offset) of format 2's total at b[off]: the difference
    of its bits to ref's in 7 bytes, signed (-2^55: the double follows)."""
    if off + 7 > len(b):
        raise ValueError("truncated")
    d = int.from_bytes(b[off:off + 7], "little")
    off += 7
    if d == _SUM7_ESC:
        if off + 8 > len(b):
            raise ValueError("truncated")
        return _D.unpack_from(b, off)[0], off + 8
    if d & _SUM7_ESC:
        d -= 1 << 56
    bits = (_Q.unpack(_D.pack(ref))[0] + d) & _U64
    return _D.unpack(_Q.pack(bits))[0], off


def minmax(scale, rmin, rmax):
    """(min, max) a predicted member of scale reads back: its
    representative's (rmin, rmax) times scale, in order
    (la__store_pack_minmax)."""
    a, b = scale * rmin, scale * rmax
    return (a, b) if a <= b else (b, a)


def unpack(blob, max_members, ref=0.0):
    """The members of a rep_classes BLOB (store_reps_pack.c's formats 1
    and 2; ref the row's rep_total): (list of dicts (rank, flags' columns,
    predicted, seq, t_stored_ns) in increasing rank, the class's min/max
    bound). A predicted member's min and max are left None (minmax).
    ValueError as la__store_unpack_members refuses it."""
    b = bytes(blob)
    if len(b) < 1 or b[0] not in (PACK_FORMAT, PACK_FORMAT_V1):
        raise ValueError("not of pack format %d or %d" %
                         (PACK_FORMAT_V1, PACK_FORMAT))
    v2 = b[0] == PACK_FORMAT
    off, bound = 1, 0.0
    if v2:
        if len(b) < 9:
            raise ValueError("truncated")
        bound = _D.unpack_from(b, 1)[0]
        off = 9
        if not bound >= 0:
            raise ValueError("bound %r" % bound)
    known = 0xFF if v2 else 0x3F
    rank, xfer, rseq, seq, stored, f, out = 0, 0, 0, 0, 0, 0, []
    while off < len(b):
        if len(out) == max_members:
            raise ValueError("more than its %d members" % max_members)
        v, off = _varint(b, off)
        gap = v >> 1 if v2 else v
        if gap == 0 or gap > MAX_RANKS:
            raise ValueError("rank gap %d" % gap)
        rank = rank + gap if out else gap - 1
        if rank >= MAX_RANKS:
            raise ValueError("rank %d" % rank)
        if not v2 or v & 1:
            if off >= len(b):
                raise ValueError("truncated")
            f = b[off]
            off += 1
        elif not out:
            raise ValueError("no flags")
        if f & ~known:
            raise ValueError("flags 0x%x" % f)
        own = not v2 or f & _OWN
        if v2 and ((f & _OWN and not f & (_MIN | _MAX)) or
                   (f & _RSAME and not f & _RSEQ)):
            raise ValueError("flags 0x%x" % f)
        m = {"rank": rank, "sum": None, "min": None, "max": None,
             "scale": None,
             "predicted": not own and bool(f & (_MIN | _MAX)),
             "has_min": bool(f & _MIN), "has_max": bool(f & _MAX)}
        if f & _SUM:
            if v2:
                m["sum"], off = _sum7(b, off, ref)
            else:
                if off + 8 > len(b):
                    raise ValueError("truncated")
                m["sum"] = _D.unpack_from(b, off)[0]
                off += 8
        for key, bit in (("min", _MIN), ("max", _MAX), ("scale", _SCALE)):
            if f & bit and (own or key == "scale"):
                if off + 8 > len(b):
                    raise ValueError("truncated")
                m[key] = _D.unpack_from(b, off)[0]
                off += 8
        m["t_xfer_ns"] = None
        if f & _XFER:
            if v2:
                xfer, off = _delta(b, off, xfer)
            else:
                xfer, off = _varint(b, off)
            m["t_xfer_ns"] = xfer
        m["rank_seq"] = None
        if f & _RSEQ:
            if not f & _RSAME:
                rseq, off = _delta(b, off, rseq)
            m["rank_seq"] = rseq
        seq, off = _delta(b, off, seq)
        stored, off = _delta(b, off, stored)
        m["seq"], m["t_stored_ns"] = seq, stored
        out.append(m)
    return out, bound


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
    for cls, rep, tot, nel, nm, blob, rmin, rmax in (db.execute(
            "SELECT c.class, c.rep_rank, c.rep_total, c.n_elements,"
            " c.n_members, c.members, t.stat_min, t.stat_max"
            " FROM rep_classes c LEFT JOIN traces t ON t.app_id = c.app_id"
            " AND t.cycle_tag = c.cycle_tag AND t.rank = c.rep_rank"
            " WHERE c.app_id = ? AND c.cycle_tag = ? ORDER BY c.class",
            (app, tag)) if has_classes else ()):
        if not (_int(cls, 0, 0xFFFFFFFF) and _int(rep, 0, MAX_RANKS - 1) and
                _int(nel, 1, 1 << 32) and _int(nm, 1, MAX_RANKS - 1) and
                isinstance(blob, bytes) and 1 <= len(blob) <= MAX_BLOB):
            raise bad(rep, "rep_classes")
        tot = 0.0 if tot is None else float(tot)  # NULL reads as 0
        try:
            ms, bound = unpack(blob, nm, tot)
        except ValueError:
            raise bad(rep, "rep_classes") from None
        if len(ms) != nm:
            raise bad(rep, "rep_classes")
        rep_mm = rmin is not None and rmax is not None
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
            if not math.isfinite(scale) or (p["predicted"] and not rep_mm):
                raise bad(p["rank"], "rep_classes")
            if p["predicted"]:  # within the class's bound of its own
                lo, hi = minmax(scale, float(rmin), float(rmax))
                p["min"] = lo if p["has_min"] else None
                p["max"] = hi if p["has_max"] else None
            if p["rank"] in packed or p["rank"] in rows.members:
                raise bad(p["rank"], "rep_classes")
            m = Member(p["rank"], cls, rep, scale)
            m.packed, m.n = True, nel
            for k in ("sum", "min", "max", "seq", "t_xfer_ns", "rank_seq",
                      "t_stored_ns"):
                setattr(m, k, p[k])
            m.minmax_bound = bound if p["predicted"] else 0.0
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
