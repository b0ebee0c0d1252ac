/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_classes.h: a synthetic Trace-Set whose ranks fall into known
 * behaviour classes, for the tests and the benchmark of la_clusters.h.
 *
 * Rank r of nprocs holds n elements. Ranks that are not outliers belong to
 * class r % LA_TC_CLASSES, each class a profile of its own (mesh costs,
 * a ramp, two hot spots, three plateaus), times a per-rank scale in [0.5, 2)
 * and with 2% multiplicative noise per element. n_out ranks, evenly spaced
 * (r % stride == 5, stride = nprocs / n_out), are outliers: a class
 * profile with a hot spot of its own (five times the cost on a tenth of the
 * elements, at a place that differs from one outlier to the next).
 * Deterministic. Test and benchmark use only.
 */
#ifndef LA_TEST_CLASSES_H
#define LA_TEST_CLASSES_H

#include <stddef.h>
#include <stdint.h>

#define LA_TC_CLASSES 4

/* The class of rank r (0..LA_TC_CLASSES-1), or -1 for an outlier. */
int la_tc_class(uint32_t r, uint32_t nprocs, uint32_t n_out);

/* Fills x[0..n) with rank r's values and returns its scale. */
double la_tc_series(uint32_t r, uint32_t nprocs, uint32_t n_out, size_t n,
                    double *x);

#endif
