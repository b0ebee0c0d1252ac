/* SPDX-License-Identifier: BSD-3-Clause */
/* hot.c: the probes' hot state (la__hot_t, la.h), the one structure the
 * inline probes of la.h read on every call. It lives in a file of its own
 * because two files write it and neither should own the other: probe.c
 * points it at the cycle's buffer (values, limit, base, grid extents) and
 * interference.c switches detection (detect). Nothing else writes it.
 */
#include "la_internal.h"

LA_EXPORT la__hot_t la__hot; /* limit 0: every probe is a no-op */
