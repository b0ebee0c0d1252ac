/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_rangemax.c: la_trace_range_max, the largest value of a
 * range without decoding it, against decoding.
 *
 * For every mode (polyline disjoint, connected, without outliers, with a
 * quantum: quantized lines, plain and coded quantized runs; maxerr
 * absolute, relative, connected; lossless, integer and XOR), spread
 * traces, every synthetic kind, series with negative values and with
 * NaN and infinities among them: over the whole trace, empty ranges,
 * single points, ranges inside one record, ranges from and to record
 * boundaries and random ranges, the result equals the largest finite
 * decoded value exactly (NaN when there is none) and the count of finite
 * values equals the decoded count; a range past the end is LA_ERANGE.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include "la_compact.h"
#include "la_test_series.h"

/* The largest finite of y[0..n) as the decoded binning takes it, and the
 * finite count. */
static double decoded_max(const double *y, uint64_t n, uint64_t *nfin) {
  double m = NAN;
  *nfin = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (!isfinite(y[i])) continue;
    if (*nfin == 0 || y[i] > m) m = y[i];
    (*nfin)++;
  }
  return m;
}

/* [first, first+count) of t, whose decoded values are y: the same. */
static void same_max(const la_trace_t *t, const double *y, uint64_t first,
                     uint64_t count, const char *what) {
  uint64_t nf = 0, want_nf;
  double m = 0, want = decoded_max(y + first, count, &want_nf);
  assert_int_equal(la_trace_range_max(t, first, count, &m, &nf), 0);
  if (nf != want_nf || (isnan(want) ? !isnan(m) : !(m == want)))
    fail_msg("%s: max of [%llu, +%llu) %.17g (%llu finite), decoded %.17g "
             "(%llu finite)",
             what, (unsigned long long)first, (unsigned long long)count, m,
             (unsigned long long)nf, want, (unsigned long long)want_nf);
}

/* Every kind of range of the encoding r (n points). */
static void check_trace(const la_compact_result_t *r, const char *what) {
  la_trace_t *t;
  char why[200];
  if (la_trace_open(r->bytes, r->len, &t, why, sizeof why) != 0)
    fail_msg("%s: %s", what, why);
  uint64_t n = la_trace_count(t), s = n * 7 + 1;
  double *y = malloc((n + 1) * sizeof *y), m;
  assert_non_null(y);
  assert_int_equal(la_trace_decode(t, 0, n, y), 0);
  same_max(t, y, 0, n, what);
  same_max(t, y, 0, 0, what);
  same_max(t, y, n, 0, what);
  for (uint64_t i = 0; i < n && i < 3000; i++) same_max(t, y, i, 1, what);
  /* inside each record, and from and to its ends */
  size_t ns = la_trace_segment_count(t);
  for (size_t k = 0; k < ns && k < 400; k++) {
    la_trace_segment_t sg;
    assert_int_equal(la_trace_segment(t, k, &sg), 0);
    same_max(t, y, sg.first, sg.count, what);
    if (sg.count > 2) same_max(t, y, sg.first + 1, sg.count - 2, what);
    if (sg.count > 1) {
      same_max(t, y, sg.first, sg.count - 1, what);
      same_max(t, y, sg.first + 1, sg.count - 1, what);
    }
    if (sg.first + sg.count < n) /* into the next record */
      same_max(t, y, sg.first + sg.count / 2,
               sg.count - sg.count / 2 + 1, what);
  }
  for (int q = 0; q < 300 && n > 0; q++) {
    uint64_t a = la_compact_rand(&s) % n;
    uint64_t c = 1 + la_compact_rand(&s) % (q % 3 ? (n - a < 64 ? n - a : 64)
                                                  : n - a);
    same_max(t, y, a, c, what);
  }
  assert_int_equal(la_trace_range_max(t, 0, n + 1, &m, NULL), LA_ERANGE);
  assert_int_equal(la_trace_range_max(t, n + 1, 0, &m, NULL), LA_ERANGE);
  assert_int_equal(la_trace_range_max(t, 1, UINT64_MAX, &m, NULL), LA_ERANGE);
  assert_int_equal(la_trace_range_max(NULL, 0, 0, &m, NULL), LA_ERANGE);
  free(y);
  la_trace_close(t);
}

static void check_spec(const double *x, size_t n, const char *spec) {
  la_compact_result_t r;
  char what[160];
  assert_int_equal(la_test_compact(x, n, spec, &r), 0);
  snprintf(what, sizeof what, "%s n=%zu", spec, n);
  check_trace(&r, what);
  la_compact_result_free(&r);
}

/* Negative stretches, and NaN and infinities in some series. */
static void alter(int kind, double *x, size_t n) {
  for (size_t i = n / 4; i < n / 2; i++) x[i] = -x[i];
  if (kind % 2 && n > 60) {
    x[n / 3] = NAN, x[n / 3 + 1] = INFINITY, x[n - 1] = -INFINITY;
    x[17] = INFINITY, x[0] = NAN;
  }
}

static void test_every_mode(void **state) {
  (void)state;
  static const char *const specs[] = {
      "polyline:cv=0.05",   "polyline:cv=0.01,connected",
      "polyline:no-outliers", "maxerr:eps=0.5",
      "maxerr:eps=0.01,relative", "maxerr:eps=2,connected", "lossless"};
  static const size_t sizes[] = {0, 1, 2, 3, 257, 5000, 40000};
  assert_int_equal(la_test_synth_grid(sizes, sizeof sizes / sizeof *sizes, 3,
                                      NULL, specs,
                                      sizeof specs / sizeof *specs,
                                      check_spec),
                   0);
  assert_int_equal(la_test_synth_grid(sizes, sizeof sizes / sizeof *sizes, 9,
                                      alter, specs,
                                      sizeof specs / sizeof *specs,
                                      check_spec),
                   0);
}

/* A quantum: quantized lines and runs (plain and coded) of whole ticks,
 * negative stretches included; and spread traces of every mode. */
static void test_quantum_and_spread(void **state) {
  (void)state;
  const size_t n = 30000;
  const double q = 0.38518989313080604;
  double *x = malloc(n * sizeof *x);
  assert_non_null(x);
  uint64_t quantized = 0;
  static const char *const specs[] = {"polyline:cv=0.05", "polyline:cv=0.2",
                                      "polyline:cv=0.05,connected",
                                      "maxerr:eps=40", "lossless"};
  for (int kind = 0; kind < LA_SYNTH_KINDS; kind++) {
    assert_int_equal(la_compact_synth(kind, n, 21, x), 0);
    for (size_t i = 0; i < n; i++) /* whole ticks, some negative */
      x[i] = round(x[i] / (kind == LA_SYNTH_NOISE ? 0.01 : 1)) * q *
             (i % 5000 < 700 ? -1 : 1);
    for (size_t sp = 0; sp < sizeof specs / sizeof *specs; sp++) {
      la_compact_params_t p;
      la_compact_result_t r, s;
      char what[160], why[200];
      assert_int_equal(la_compact_spec_parse(specs[sp], &p, why, sizeof why),
                       0);
      p.quantum = q;
      assert_int_equal(la_compact(x, n, &p, &r), 0);
      snprintf(what, sizeof what, "%s quantum kind %d (%llu quantized)",
               specs[sp], kind, (unsigned long long)r.quantized);
      check_trace(&r, what);
      quantized += r.quantized;
      for (uint64_t k = 3; k <= 7; k += 4) {
        assert_int_equal(la_compact_spread(&r, k, &s), 0);
        snprintf(what, sizeof what, "%s kind %d spread %llu", specs[sp], kind,
                 (unsigned long long)k);
        check_trace(&s, what);
        la_compact_result_free(&s);
      }
      la_compact_result_free(&r);
    }
  }
  assert_true(quantized > 0); /* quantized runs were among them */
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_mode),
      cmocka_unit_test(test_quantum_and_spread)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
