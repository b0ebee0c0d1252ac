/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_series.h: what the compaction tests share to drive the encoder.
 *
 * la_test_compact() compacts a series by its spec string, asserting that
 * the spec parses and that la_compact() succeeds. la_test_synth_grid() runs
 * a check of one series under one spec over every synthetic kind, a list
 * of sizes and a list of specs (optionally altering each series first), so
 * that each test file keeps only its own check. la_test_boxes() lays
 * boxes on a grid for the pieced encoding's tests. Nothing here judges the
 * encoding itself: the checks are the tests'.
 */
#ifndef LA_TEST_SERIES_H
#define LA_TEST_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "la.pb-c.h"
#include "la_compact.h"
#include "la_compact_pieces.h"

/* Parses spec into parameters and compacts x[0..n) into *r (caller frees
 * with la_compact_result_free). Returns 0, or the negative code of the
 * spec parser (its reason on stderr) or of la_compact(). */
int la_test_compact(const double *x, size_t n, const char *spec,
                    la_compact_result_t *r);

/* A check of series x[0..n) under spec; fails the test on a violation. */
typedef void (*la_test_series_check_fn)(const double *x, size_t n,
                                        const char *spec);
/* Alters series x[0..n) of synthetic kind `kind` before it is checked. */
typedef void (*la_test_series_alter_fn)(int kind, double *x, size_t n);

/* For every synthetic kind and every n in sizes[0..nsizes): fills x with
 * la_compact_synth(kind, n, seed + kind), applies alter when not NULL,
 * then calls check(x, n, specs[s]) for every spec. The buffer holds n + 1
 * values, so n == 0 is a valid pointer. Returns 0, LA_ENOMEM, or the
 * negative code of la_compact_synth(). */
int la_test_synth_grid(const size_t *sizes, size_t nsizes, uint64_t seed,
                       la_test_series_alter_fn alter, const char *const *specs,
                       size_t nspecs, la_test_series_check_fn check);

/* Sets what names trace t: its sequence number, application, rank, cycle
 * tag and element count (app is not copied). */
void la_test_trace_id(La__CompactTrace *t, uint64_t seq, const char *app,
                      uint32_t rank, uint64_t cycle, uint64_t n);

/* A trace message with robust weights, and what it points into. */
typedef struct {
  La__CompactTrace t;
  La__SeriesStats st, rst;
  la_compact_result_t meas, rob;
} la_test_robust_t;

/* Fills x->t as rank r's trace of cycle `cycle` of app (sequence number
 * seq, n elements): the measured series meas[0..n) and the robust series
 * rob[0..n), each compacted losslessly, with interference set to the
 * difference of their sums. x must stay in place while x->t is used;
 * la_test_robust_free releases it. Returns 0, or la_compact()'s negative
 * code (nothing left to free). */
int la_test_robust_make(la_test_robust_t *x, const char *app, uint32_t r,
                        uint64_t seq, uint64_t cycle, const double *meas,
                        const double *rob, size_t n);

/* Frees the encodings of x. */
void la_test_robust_free(la_test_robust_t *x);

/* Boxes of ni x nj x 1 cells every sx cells along i and sy along j, in
 * each plane of g's grid (g->nx, ny, nz), those that fit, into g->p (room
 * for them: the caller's) in order of first cell; g->count says how many. */
void la_test_boxes(la_pieces_t *g, uint32_t ni, uint32_t nj, uint64_t sx,
                   uint64_t sy);

#endif /* LA_TEST_SERIES_H */
