/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_clusters.h: the behaviour classes of one Trace-Set (la_clusters.h,
 * docs/clusters.md) as a table or JSON: `lactl show --clusters` and
 * `lactl serve`'s /api/clusters. */
#ifndef LACTL_CLUSTERS_H
#define LACTL_CLUSTERS_H

#include <stdatomic.h>
#include <stdio.h>

#include "la_client.h"
#include "la_clusters.h"

/* The classes of a set: la_clusters_t, the tolerance they were found
 * with, and the ranks whose trace is a reconstruction (a set stored by
 * representatives). */
typedef struct lactl_clusters {
  la_clusters_t c;
  double tol;
  uint32_t *rec; /* nrec ranks, increasing */
  size_t nrec;
} lactl_clusters_t;

/* Groups the present ranks of t (signature distance tol; each rank's
 * signature from its encoding, no index kept but the representatives' of
 * a set stored by representatives) into *out (lactl_clusters_free).
 * stop (may be NULL): LA_ESTATE once it is non-zero. 0, LA_ENOMEM or
 * la_clusters_group's error, the reason in why. */
int lactl_clusters_of(const la_traceset_t *t, double tol,
                      const atomic_int *stop, lactl_clusters_t *out,
                      char *why, size_t why_len);
void lactl_clusters_free(lactl_clusters_t *k);

/* k as one JSON object: app, cycle, nprocs, present, tol; per class its
 * size, representative, elements, scale_min/max, distance_max and its
 * members as ranges [FIRST, LAST, STEP]; the outliers; the reconstructed
 * ranks. list 0: everything, and per class every member and its scale
 * (lactl show --json); else at most list ranges per class and list
 * outliers and reconstructed ranks, the rest counted (ranges_more,
 * outliers_more, reconstructed_more), no per-rank arrays. */
void lactl_clusters_json(FILE *f, const la_traceset_t *t,
                         const lactl_clusters_t *k, size_t list);

/* Groups the present ranks of t (signature distance tol) and prints the
 * classes (class, size, representative, elements, scale spread, largest
 * distance, members as rank ranges) and the outliers to f, as text or
 * (json) one JSON object. Returns LACTL_OK or LACTL_FAIL (out of memory,
 * with a message on stderr). */
int lactl_clusters_print(FILE *f, const la_traceset_t *t, double tol,
                         int json);

/* The next range of increasing ranks r[*i..n): three or more evenly
 * spaced ones as first, last, step; else the one rank r[*i] (last =
 * first, step 1). *i moves past it. */
void lactl_rank_range_next(const uint32_t *r, size_t n, size_t *i,
                           uint32_t *first, uint32_t *last, uint32_t *step);

/* "0-99,104-496/4,500": ranks (increasing) as ranges, a range of three or
 * more evenly spaced ranks as FIRST-LAST (step 1) or FIRST-LAST/STEP, into
 * buf (at most len - 1 bytes, ",..." when cut). */
const char *lactl_fmt_rank_ranges(const uint32_t *r, size_t n, char *buf,
                                  size_t len);

#endif
