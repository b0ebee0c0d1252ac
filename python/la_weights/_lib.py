"""_lib.py: finds libla_client and calls its decoder through ctypes.

Compact traces are decoded by exactly one decoder, libla_client's
la_client_decode_trace() (client/decode.c), the code lactl and the load
balancers use, so Python sees the same doubles bit for bit. Nothing here
parses an encoding.

Where the library is looked for, first match wins:
  1. the path given to la_weights.open(..., lib=PATH) (a file or directory);
  2. $LA_CLIENT_LIB (a file or a directory);
  3. the source tree this package came from (../build/lib, for
     `pip install python/` from a built tree and for running in place);
  4. the installed prefix: lib/ in each directory above the package (a
     `pip install --prefix=PREFIX` next to `make install PREFIX=PREFIX`);
  5. the dynamic loader's search (LD_LIBRARY_PATH, ld.so.cache), then
     /usr/local/lib (the Makefile's default PREFIX).
"""

import ctypes
import ctypes.util
import os

import numpy as np

_NAMES = ("libla_client.so.0", "libla_client.so")
_HERE = os.path.dirname(os.path.abspath(__file__))

# LA_E* codes the decoder returns (common/la_errcodes.h).
LA_EINVAL = -1
LA_ENOMEM = -2
LA_ERANGE = -9
LA_EPROTO = -12
LA_ETRUNC = -14
LA_EVERSION = -21


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
    out = _in_dir(os.path.join(_HERE, "..", "..", "build", "lib"))
    d = _HERE
    for _ in range(5):
        d = os.path.dirname(d)
        out += _in_dir(os.path.join(d, "lib"))
    found = ctypes.util.find_library("la_client")
    out += [n for n in (found,) if n] + list(_NAMES)
    return out + _in_dir("/usr/local/lib")


_loaded = {}


def load(lib=None):
    """The loaded libla_client (ctypes.CDLL), with la_client_decode_trace's
    prototype set. Raises LibraryNotFound naming every path tried."""
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
            so.la_client_decode_trace  # AttributeError: an older library
        except (OSError, AttributeError) as e:
            tried.append("%s (%s)" % (path, e))
            continue
        so.la_client_decode_trace.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_double), ctypes.c_uint64,
            ctypes.c_char_p, ctypes.c_size_t]
        so.la_client_decode_trace.restype = ctypes.c_int
        so.la_client_strerror.argtypes = [ctypes.c_int]
        so.la_client_strerror.restype = ctypes.c_char_p
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
