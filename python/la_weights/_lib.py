# SPDX-License-Identifier: BSD-3-Clause
"""_lib.py: finds libla_client and calls it through ctypes.

A stored Trace-Set becomes a la_traceset_t (la_traceset_from_bytes, the
TraceSet message _wire.py builds), and everything a Cycle holds comes from
libla_client's functions on it: which series is served (measured or
robust, the sum or one channel, la_traceset_set_weights and
la_traceset_channel), the missing ranks and their reasons, why a rank's
trace is coarse, vtxdist, the
exact totals and the decoded values. That is the code lactl and the load
balancers use, so Python sees the same choices and the same doubles bit
for bit; nothing here restates a rule or parses an encoding.
la_client_decode_trace() decodes one encoded trace on its own.

Where the library is looked for, first match wins:
  1. the path given to la_weights.open(..., lib=PATH) (a file or directory);
  2. $LA_CLIENT_LIB (a file or a directory);
  3. where the package came from (_origin.py): the LIBDIR `make install`
     recorded; the build/lib of the source tree pip installed it from
     (`pip install python/` after `make`); ../build/lib when run in place
     from a checkout;
  4. the installed prefix: lib/ in each directory above the package (a
     `pip install --prefix=PREFIX` next to `make install PREFIX=PREFIX`);
  5. the dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache), then
     /usr/local/lib (the Makefile's default PREFIX).
"""

import ctypes
import ctypes.util
import os

import numpy as np

from . import _origin

_NAMES = ("libla_client.so.0", "libla_client.so")
_HERE = os.path.dirname(os.path.abspath(__file__))

# LA_E* codes the decoder returns (wire/la_errcodes.h).
LA_EINVAL = -1
LA_ENOMEM = -2
LA_ERANGE = -9
LA_EPROTO = -12
LA_ETRUNC = -14
LA_ENOTFOUND = -18
LA_EVERSION = -21

# Which weights a set serves (LA_WEIGHTS_* in la_client.h).
LA_WEIGHTS_DEFAULT = 0
LA_WEIGHTS_MEASURED = 1
LA_WEIGHTS_ROBUST = 2


class LibraryNotFound(OSError):
    """libla_client could not be found or loaded (the message lists where
    it was looked for)."""


class DecodeError(ValueError):
    """A stored trace does not decode: code is the LA_E* error code,
    reason the decoder's detail."""

    def __init__(self, code, reason, where=""):
        self.code = code
        self.reason = reason
        super().__init__("%s%s (%d)%s" % (where + ": " if where else "",
                                          _strerror(code), code,
                                          ": " + reason if reason else ""))


def _in_dir(d):
    return [os.path.join(d, n) for n in _NAMES]


def candidates(lib=None):
    """The paths tried, in order (see the module's comment). A given lib,
    else $LA_CLIENT_LIB, is the only candidate: a wrong explicit path fails
    rather than silently loading another library."""
    given = lib or os.environ.get("LA_CLIENT_LIB")
    if given:
        return _in_dir(given) if os.path.isdir(given) else [given]
    out = [p for d in _origin.libdirs() for p in _in_dir(d)]
    d = _HERE
    for _ in range(5):
        d = os.path.dirname(d)
        out += _in_dir(os.path.join(d, "lib"))
    found = ctypes.util.find_library("la_client")
    out += [n for n in (found,) if n] + list(_NAMES)
    return out + _in_dir("/usr/local/lib")


_loaded = {}


_P, _U32, _U64, _D = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64,
                      ctypes.POINTER(ctypes.c_double))
_INT = ctypes.c_int
# The functions used here: name -> (restype, argtypes).
_PROTOS = {
    "la_client_decode_trace": (_INT, [ctypes.c_char_p, ctypes.c_size_t, _D,
                                      _U64, ctypes.c_char_p,
                                      ctypes.c_size_t]),
    "la_client_strerror": (ctypes.c_char_p, [_INT]),
    "la_client_splice_trace": (_INT, [ctypes.c_char_p, ctypes.c_size_t, _U64,
                                      ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.c_char_p,
                                      ctypes.POINTER(ctypes.c_size_t),
                                      ctypes.c_char_p, ctypes.c_size_t]),
    "la_client_scale_trace": (_INT, [ctypes.c_char_p, ctypes.c_size_t, _U64,
                                     ctypes.c_double, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_size_t),
                                     ctypes.POINTER(_INT), ctypes.c_char_p,
                                     ctypes.c_size_t]),
    "la_client_rep_open": (_INT, [ctypes.c_char_p, ctypes.c_size_t, _U64,
                                  ctypes.POINTER(_P), ctypes.c_char_p,
                                  ctypes.c_size_t]),
    "la_client_rep_scale": (_INT, [_P, ctypes.c_double, ctypes.c_char_p,
                                   ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.POINTER(_INT), ctypes.c_char_p,
                                   ctypes.c_size_t]),
    "la_client_rep_close": (None, [_P]),
    "la_traceset_from_bytes": (_INT, [ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.POINTER(_P), ctypes.c_char_p,
                                      ctypes.c_size_t]),
    "la_traceset_free": (None, [_P]),
    "la_traceset_nprocs": (_U32, [_P]),
    "la_traceset_complete": (_INT, [_P]),
    "la_traceset_time_ns": (_U64, [_P]),
    "la_traceset_elements": (_U64, [_P]),
    "la_traceset_missing": (ctypes.c_size_t,
                            [_P, ctypes.POINTER(ctypes.POINTER(_U32))]),
    "la_traceset_missing_reason": (ctypes.c_char_p, [_P, _U32]),
    "la_traceset_rank_coarse": (ctypes.c_char_p, [_P, _U32]),
    "la_traceset_vtxdist": (_INT, [_P, ctypes.POINTER(_U64)]),
    "la_traceset_rank_totals": (_INT, [_P, _D]),
    "la_traceset_robust_totals": (_INT, [_P, _D]),
    "la_traceset_rank_robust_stats": (_INT, [_P, _U32, _D, _D, _D]),
    "la_traceset_weights": (_INT, [_P, _D]),
    "la_traceset_set_weights": (_INT, [_P, _INT]),
    "la_traceset_weights_kind": (_INT, [_P]),
    "la_traceset_channels": (ctypes.c_size_t, [_P]),
    "la_traceset_channel_name": (ctypes.c_char_p, [_P, ctypes.c_size_t]),
    "la_traceset_channel_find": (_INT, [_P, ctypes.c_char_p]),
    "la_traceset_channel": (_INT, [_P, ctypes.c_size_t, ctypes.POINTER(_P)]),
}


def load(lib=None):
    """The loaded libla_client (ctypes.CDLL), with the prototypes of the
    functions used here set. Raises LibraryNotFound naming every path
    tried."""
    key = lib or os.environ.get("LA_CLIENT_LIB") or ""
    if key in _loaded:
        return _loaded[key]
    tried = []
    for path in candidates(lib):
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            so = ctypes.CDLL(path)
            for name, (res, args) in _PROTOS.items():
                f = getattr(so, name)  # AttributeError: an older library
                f.restype, f.argtypes = res, args
        except (OSError, AttributeError) as e:
            tried.append("%s (%s)" % (path, e))
            continue
        _loaded[key] = so
        return so
    raise LibraryNotFound(
        "libla_client with la_client_decode_trace not found; give "
        "la_weights.open(..., lib=PATH) or set LA_CLIENT_LIB. Tried:\n  " +
        "\n  ".join(tried))


def _strerror(code):
    for so in _loaded.values():
        return so.la_client_strerror(code).decode("utf-8", "replace")
    return "error"


def decode_into(so, blob, out, where=""):
    """Decodes the encoded trace blob (bytes) into out, a C-contiguous
    float64 numpy array whose length is the trace's point count. Raises
    DecodeError (another point count: code LA_ERANGE)."""
    if out.dtype != np.float64 or not out.flags.c_contiguous:
        raise TypeError("out must be a contiguous float64 array")
    why = ctypes.create_string_buffer(256)
    rc = so.la_client_decode_trace(
        bytes(blob), len(blob),
        out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)), out.size,
        why, len(why))
    if rc:
        raise DecodeError(rc, why.value.decode("utf-8", "replace"), where)
    return out


def splice(so, rep, n, exc, where=""):
    """The encoded robust weights of a robust reference with exceptions
    (docs/history.md): the representative's rep (bytes, n points) with the
    cycle's own values at the exceptions exc (the store's
    history_exceptions.exceptions) spliced in, as the GlobalAgent's store
    serves them (la_client_splice_trace). Raises DecodeError."""
    cap = 9 * n + 64
    out = ctypes.create_string_buffer(cap)
    size = ctypes.c_size_t(cap)
    why = ctypes.create_string_buffer(256)
    rc = so.la_client_splice_trace(bytes(rep), len(rep), n, bytes(exc),
                                   len(exc), out, ctypes.byref(size), why,
                                   len(why))
    if rc:
        raise DecodeError(rc, why.value.decode("utf-8", "replace"), where)
    return out.raw[:size.value]


def _scaled(call, n, where):
    """(encoding, mode) that call(out, cap, size, mode, why) writes: a
    member of n points (la_client_scale_trace, la_client_rep_scale), the
    buffer grown once when the usual bound is short. Raises DecodeError."""
    cap = 9 * n + 64
    while True:
        out = ctypes.create_string_buffer(cap)
        size, mode = ctypes.c_size_t(cap), _INT(0)
        why = ctypes.create_string_buffer(256)
        rc = call(out, ctypes.byref(size), ctypes.byref(mode), why)
        if rc == LA_ERANGE and size.value > cap:
            cap = size.value  # larger than the usual bound: once more
            continue
        if rc:
            raise DecodeError(rc, why.value.decode("utf-8", "replace"),
                              where)
        return out.raw[:size.value], mode.value


def scale(so, rep, n, factor, where=""):
    """(encoding, mode) of a member of a set stored by representatives
    (docs/clusters.md): its representative's encoding rep (bytes, n
    points) decoded, times factor, encoded again record for record, the
    same bytes as the GlobalAgent's store serves (la_client_scale_trace).
    Raises DecodeError."""
    rep = bytes(rep)
    return _scaled(lambda out, size, mode, why: so.la_client_scale_trace(
        rep, len(rep), n, factor, out, size, mode, why, len(why)), n, where)


class Rep:
    """A representative's encoding rep (bytes, n points) decoded once
    (la_client_rep_open) for all its members: scale(factor) gives a
    member's (encoding, mode), the bytes scale() gives. Raises DecodeError;
    close() frees it (also a context manager)."""

    def __init__(self, so, rep, n, where=""):
        self._so, self.n, self._h = so, n, _P()
        rep = bytes(rep)
        why = ctypes.create_string_buffer(256)
        rc = so.la_client_rep_open(rep, len(rep), n, ctypes.byref(self._h),
                                   why, len(why))
        if rc:
            raise DecodeError(rc, why.value.decode("utf-8", "replace"),
                              where)

    def scale(self, factor, where=""):
        so, h = self._so, self._h
        return _scaled(lambda out, size, mode, why: so.la_client_rep_scale(
            h, factor, out, size, mode, why, len(why)), self.n, where)

    def close(self):
        if self._h:
            self._so.la_client_rep_close(self._h)
            self._h = _P()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _arr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


class TraceSet:
    """A la_traceset_t: libla_client's view of one Trace-Set. Made from the
    bytes of a TraceSet message (from_bytes) or as a channel's view of
    another (channel); freed with close() or when collected."""

    def __init__(self, so, handle):
        self._so, self._t = so, handle

    @classmethod
    def from_bytes(cls, so, payload, where=""):
        """la_traceset_from_bytes: validates the message and every
        encoding in it. Raises DecodeError (the code and libla_client's
        reason)."""
        t, why = _P(), ctypes.create_string_buffer(256)
        rc = so.la_traceset_from_bytes(payload, len(payload),
                                       ctypes.byref(t), why, len(why))
        if rc:
            raise DecodeError(rc, why.value.decode("utf-8", "replace"), where)
        return cls(so, t)

    def close(self):
        if self._t:
            self._so.la_traceset_free(self._t)
            self._t = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def nprocs(self):
        return self._so.la_traceset_nprocs(self._t)

    def complete(self):
        return self._so.la_traceset_complete(self._t) == 1

    def time_ns(self):
        return self._so.la_traceset_time_ns(self._t)

    def missing(self):
        """Missing ranks, increasing (a list)."""
        p = ctypes.POINTER(_U32)()
        n = self._so.la_traceset_missing(self._t, ctypes.byref(p))
        return [int(p[i]) for i in range(n)]

    def missing_reason(self, rank):
        """Why rank is missing, or None."""
        r = self._so.la_traceset_missing_reason(self._t, rank)
        return None if r is None else r.decode("utf-8", "replace")

    def rank_coarse(self, rank):
        """Why rank's trace is coarse (its LocalAgent was behind: block
        sums, exact totals), or None for a full trace or a missing rank."""
        r = self._so.la_traceset_rank_coarse(self._t, rank)
        return None if r is None else r.decode("utf-8", "replace")

    def vtxdist(self):
        v = np.zeros(self.nprocs() + 1, dtype=np.uint64)
        self._so.la_traceset_vtxdist(self._t, _arr(v, _U64))
        return v

    def totals(self, robust=False):
        """Exact per-rank sums, measured or robust (NaN where none)."""
        v = np.empty(self.nprocs(), dtype=np.float64)
        f = (self._so.la_traceset_robust_totals if robust else
             self._so.la_traceset_rank_totals)
        f(self._t, _arr(v, ctypes.c_double))
        return v

    def has_robust(self, rank):
        """Whether present rank carries robust weights."""
        return self._so.la_traceset_rank_robust_stats(
            self._t, rank, None, None, None) == 0

    def set_weights(self, kind):
        """la_traceset_set_weights: 0, or LA_ENOTFOUND when robust weights
        were asked for and a present rank lacks them (measured served)."""
        return self._so.la_traceset_set_weights(self._t, kind)

    def robust(self):
        """Whether the set serves robust weights."""
        return self._so.la_traceset_weights_kind(self._t) == LA_WEIGHTS_ROBUST

    def weights(self, where=""):
        """The served values over the global elements (float64), NaN for
        missing ranks' elements. Raises DecodeError."""
        v = np.empty(self._so.la_traceset_elements(self._t), np.float64)
        rc = self._so.la_traceset_weights(self._t, _arr(v, ctypes.c_double))
        if rc:
            raise DecodeError(rc, "", where)
        return v

    def channel_names(self):
        return [self._so.la_traceset_channel_name(self._t, i).decode(
            "utf-8", "replace")
            for i in range(self._so.la_traceset_channels(self._t))]

    def channel(self, name, where=""):
        """The set serving channel name (la_traceset_channel), or None when
        the set has no such channel. Raises DecodeError."""
        ch = self._so.la_traceset_channel_find(self._t, name.encode("utf-8"))
        if ch == LA_ENOTFOUND:
            return None
        v = _P()
        rc = ch if ch < 0 else self._so.la_traceset_channel(
            self._t, ch, ctypes.byref(v))
        if rc == LA_ENOTFOUND:
            return None
        if rc:
            raise DecodeError(rc, "channel '%s'" % name, where)
        return TraceSet(self._so, v)
