# SPDX-License-Identifier: BSD-3-Clause
"""la_weights: per-element weights from an LA GlobalAgent store, offline,
as numpy arrays (docs/python.md).

    import la_weights
    with la_weights.open("la.db") as s:
        w = s.weights("wavetoy-1234", 20)   # float64, global element order

Store.cycle() gives the stitched cycle with its vtxdist, exact totals and
missing ranks, Store.table() the rows of `lactl export`, Store.dataframe()
the same as a pandas DataFrame; Store.channels(app) and channel="name"
read one channel (LA_channel) instead of the sum. What a cycle serves
(measured or robust, the sum or a channel, missing ranks) and the decoded
values are libla_client's, through ctypes: the package restates no rule.
"""

from ._lib import DecodeError, LibraryNotFound
from ._reps import CorruptStore
from .store import (MEASURED, NO_CHANNEL_REASON, ROBUST, ROW_DTYPE,
                    SCHEMA_VERSION, SERIES, Cycle, NoRobustWeights,
                    NoSuchChannel, NotFound, Series, Store, open)

# LA's version (LA_VERSION_STRING in wire/la_limits.h; pyproject.toml reads it
# from here, test_python_user checks they agree).
__version__ = "0.1.0"

__all__ = ["open", "Store", "Cycle", "Series", "SERIES", "MEASURED",
           "ROBUST", "ROW_DTYPE", "SCHEMA_VERSION", "NotFound",
           "NoRobustWeights", "NoSuchChannel", "NO_CHANNEL_REASON",
           "DecodeError", "LibraryNotFound", "CorruptStore"]
