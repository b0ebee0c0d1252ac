/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_clusters.h: `lactl show --clusters`: the behaviour classes of one
 * Trace-Set (la_clusters.h, docs/clusters.md) as a table or JSON. */
#ifndef LACTL_CLUSTERS_H
#define LACTL_CLUSTERS_H

#include <stdio.h>

#include "la_client.h"

/* Groups the present ranks of t (signature distance tol) and prints the
 * classes (class, size, representative, elements, scale spread, largest
 * distance, members as rank ranges) and the outliers to f, as text or
 * (json) one JSON object. Returns LACTL_OK or LACTL_FAIL (out of memory,
 * with a message on stderr). */
int lactl_clusters_print(FILE *f, const la_traceset_t *t, double tol,
                         int json);

/* "0-99,104-496/4,500": ranks (increasing) as ranges, a range of three or
 * more evenly spaced ranks as FIRST-LAST (step 1) or FIRST-LAST/STEP, into
 * buf (at most len - 1 bytes, ",..." when cut). */
const char *lactl_fmt_rank_ranges(const uint32_t *r, size_t n, char *buf,
                                  size_t len);

#endif
