/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_oracle.h: brute-force oracles for the compaction tests, and the
 * plain statistics tests and benchmarks share.
 *
 * Slow, obviously correct definitions that the engine's fast code is
 * checked against: can one straight line stay within every point's
 * tolerance over a range (by trying every line through two interval
 * endpoints), and the fewest such segments that cover a series (dynamic
 * programming over every split point); and the plain definition of the
 * exact statistics. Meant for series of a few dozen
 * points at most: feasibility is O(m^3) for a range of m points.
 */
#ifndef LA_TEST_ORACLE_H
#define LA_TEST_ORACLE_H

#include <stddef.h>

#include "la_compact.h"

/* The definition of la_series_stats(), written plainly: Neumaier's sum in
 * index order (a sum that met Inf or NaN is the plain running sum, as IEEE
 * arithmetic gives it), min and max ignoring NaN (NaN when no value is a
 * number). */
void la_oracle_stats(const double *x, size_t n, la_series_stats_t *st);

/* 1 when a line a + b*t has |a + b*t - x[t]| <= slack * (ta + tr*|x[t]|)
 * for every t in [i, j) (up to rounding: 1e-12 of |x[t]| + tolerance),
 * else 0. Ranges of at most two points are always feasible. slack slightly
 * above or below 1 (1e-9) brackets rounding. */
int la_oracle_feasible(const double *x, size_t i, size_t j, double ta,
                       double tr, double slack);

/* Fewest segments (each feasible as above) that partition x[0..n); 0 for
 * n == 0. */
size_t la_oracle_min_segments(const double *x, size_t n, double ta, double tr,
                              double slack);

/* The median of three values (benchmarks: the middle of three runs). */
double la_test_median3(double a, double b, double c);

#endif /* LA_TEST_ORACLE_H */
