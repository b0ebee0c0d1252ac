# SPDX-License-Identifier: BSD-3-Clause
"""_wire.py: a stored Trace-Set as the protobuf bytes of a TraceSet message
(proto/la.proto), the form libla_client takes (la_traceset_from_bytes).

Only encoding, and only the fields the weights depend on: identity, ranks,
element counts, close time, each trace's segments and exact statistics,
its robust weights, its channels' series, why it is coarse, the
representative a member was rebuilt from, the channel
names and the missing ranks' reasons. Protobuf never reuses a field number, so the
numbers below stay valid; libla_client validates every message built here
as it validates one received from a GlobalAgent. Nothing here decides
which series is served: libla_client does (docs/python.md).
"""

import struct


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _uint(field, v):
    return _varint(field << 3) + _varint(int(v))


def _double(field, v):
    return _varint(field << 3 | 1) + struct.pack("<d", v)


def _bytes(field, b):
    return _varint(field << 3 | 2) + _varint(len(b)) + bytes(b)


def _text(field, s):
    return _bytes(field, s.encode("utf-8"))


def stats(count, total, lo, hi):
    """SeriesStats: count, then sum, min and max (None: NaN, as the
    GlobalAgent loads a NULL column)."""
    nan = float("nan")
    return (_uint(1, count) +
            b"".join(_double(i, nan if v is None else v)
                     for i, v in ((2, total), (3, lo), (4, hi))))


def channel_trace(channel, segments, st, robust=None, robust_st=None):
    """ChannelTrace of channel number channel: its segments and stats
    (bytes of stats()), and its robust segments and stats when given."""
    m = _uint(1, channel) + _bytes(2, segments) + _bytes(3, st)
    if robust is not None:
        m += _bytes(5, robust) + _bytes(6, robust_st)
    return m


def compact_trace(seq, app, rank, cycle, n, mode, segments, st, robust=None,
                  robust_st=None, channels=(), coarse=None, rep=None):
    """CompactTrace of one rank: segments and stats, robust weights when
    given, channels (bytes of channel_trace()) in channel order, the
    reason the trace is coarse when it is, and rep: (representative rank,
    scale, class) of a member of a set stored by representatives."""
    m = (_uint(1, seq) + _text(2, app) + _uint(3, rank) + _uint(4, cycle) +
         _uint(5, n) + _uint(6, mode) + _bytes(7, segments) + _bytes(8, st))
    if robust is not None:
        m += _bytes(40, robust) + _bytes(41, robust_st)
    m += b"".join(_bytes(50, c) for c in channels)
    if rep is not None:
        m += _uint(350, rep[0]) + _double(351, rep[1]) + _uint(352, rep[2])
    return m + (_text(360, coarse) if coarse is not None else b"")


def trace_set(app, cycle, nprocs, complete, missing, traces, rank_elements,
              metric, unit, t_complete_ns, reasons, channels):
    """TraceSet: traces (bytes of compact_trace()) by rank, missing ranks
    increasing, reasons [(rank, text)] increasing, channel names."""
    m = (_text(1, app) + _uint(2, cycle) + _uint(3, nprocs) +
         _uint(4, 1 if complete else 0) +
         b"".join(_uint(5, r) for r in missing) +
         b"".join(_bytes(6, t) for t in traces) +
         b"".join(_uint(7, n) for n in rank_elements) +
         _text(8, metric or "") + _text(9, unit or ""))
    if t_complete_ns is not None:
        m += _uint(11, t_complete_ns)
    m += b"".join(_bytes(30, _uint(1, r) + _text(2, why))
                  for r, why in reasons)
    return m + b"".join(_text(50, c) for c in channels)
