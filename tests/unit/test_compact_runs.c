/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_runs.c: series made of runs of equal values (a row or range
 * probe spreads one measurement evenly over its elements), which the
 * compaction engine handles run by run:
 *  - the statistics equal, bit for bit, the plain one-pass definition
 *    (tests/support's oracle) on runs of every kind: long runs that cross
 *    many binades of the sum, values halfway between two multiples of the
 *    sum's spacing, both signs, tiny and huge magnitudes, zeros, NaN, Inf,
 *    subnormals; with and without the AVX2 kernels;
 *  - a 64^3 row-probed series (one value per row of 64 cells) compacts to
 *    a few bytes per row within the bound, and the AVX2 and scalar paths
 *    give the same bytes.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact_internal.h"
#include "la_test_oracle.h"

/* A run value of the given kind. */
static double run_value(int kind, uint64_t *s) {
  uint64_t r = la_compact_rand(s);
  double u = la_compact_rand01(s);
  switch (kind) {
    case 0: /* fractional nanoseconds: a row's time / 64 times a timer scale */
      return floor(2000 * u + 500) / 64 * 0.38518613960771247;
    case 1: /* halves and quarters: ties at the sum's spacing once it grows */
      return (double)(r % 64) / 4 + 0x1p40 * (r % 3 == 0);
    case 2: /* both signs, magnitudes 2^-60 .. 2^60 */
      return (u - 0.5) * ldexp(1, (int)(r % 120) - 60);
    case 3: /* rare zeros, NaN, Inf; subnormals */
      if (r % 13 == 0) return (r & 64) ? 0.0 : -0.0;
      if (r % 29 == 0) return NAN;
      if (r % 31 == 0) return (r & 64) ? INFINITY : -INFINITY;
      if (r % 7 == 0) return 0x1p-1070 * (double)(r % 1000);
      return 1 + u;
    case 4: /* one large value, then small ones: many binades downwards */
      return (r % 50 == 0) ? 1e12 : -(1 + u) * 1e3;
    default: /* dyadic: small integers plus 2^-k, powers of two: sums land on
                binade edges and halfway between two multiples of the spacing */
      if (r % 40 == 0) return ldexp(1, (int)(r % 60));
      return ((r & 1) ? -1 : 1) * ((double)(r % 8) + ldexp(1, -(int)(r % 60)));
  }
}

/* Runs of 1 .. maxrun equal values of the kind into x[0..n). */
static void fill_runs(double *x, size_t n, int kind, size_t maxrun,
                      uint64_t *s) {
  for (size_t i = 0; i < n;) {
    size_t len = 1 + la_compact_rand(s) % maxrun;
    double v = run_value(kind, s);
    for (size_t j = 0; j < len && i < n; j++) x[i++] = v;
  }
}

static void stats_both_ways(const double *x, size_t n) {
  la_series_stats_t want, got;
  la_compact_result_t r;
  la_stats_acc_t def, acc;
  /* the running sum and its compensation themselves, not only their total:
   * la_stats_add() one value at a time is the definition */
  la_stats_init(&def);
  for (size_t i = 0; i < n; i++) la_stats_add(&def, x[i]);
  for (int simd = 0; simd <= 1; simd++) {
    la_stats_init(&acc);
    la_stats_run(&acc, x, n, simd && la_compact_simd());
    assert_memory_equal(&acc, &def, sizeof def);
  }
  la_oracle_stats(x, n, &want);
  for (int scalar = 0; scalar <= 1; scalar++) {
    if (scalar) setenv("LA_COMPACT_SCALAR", "1", 1);
    la_series_stats(x, n, &got);
    assert_memory_equal(&got, &want, sizeof want);
    assert_int_equal(la_compact(x, n, NULL, &r), 0); /* fused in the encoder */
    assert_memory_equal(&r.stats, &want, sizeof want);
    la_compact_result_free(&r);
    unsetenv("LA_COMPACT_SCALAR");
  }
}

static void test_stats_of_runs(void **state) {
  static const size_t maxruns[] = {8, 64, 1000, 100000};
  uint64_t s = 2024;
  (void)state;
  for (int kind = 0; kind <= 5; kind++)
    for (size_t k = 0; k < sizeof maxruns / sizeof maxruns[0]; k++) {
      size_t n = maxruns[k] >= 1000 ? 400000 : 20000;
      double *x = malloc(n * sizeof *x);
      assert_non_null(x);
      fill_runs(x, n, kind, maxruns[k], &s);
      stats_both_ways(x, n);
      stats_both_ways(x + 3, n - 3); /* another start, another sum */
      free(x);
    }
  /* halfway cases: 2^53 + 1 rounds to even (stays), 2^53 + 2 + 1 goes up
   * and the next + 1 down again */
  double h[1003];
  for (int start = 0; start <= 2; start += 2) {
    h[0] = 0x1p53 + start;
    for (int i = 1; i < 1003; i++) h[i] = i < 1000 ? 1 : 3;
    stats_both_ways(h, 1003);
  }
  /* a sum falling onto the bottom of its binade with |v| a little above
   * the step it rounds to: the last sum lands below, on a finer spacing */
  h[0] = 1032;
  for (int i = 1; i < 40; i++) h[i] = -(1 + 0x3p-45);
  stats_both_ways(h, 40);
  /* one run of 2^21 equal values: the sum crosses 21 binades */
  size_t n = (size_t)1 << 21;
  double *x = malloc(n * sizeof *x);
  assert_non_null(x);
  for (size_t i = 0; i < n; i++) x[i] = 0.1;
  stats_both_ways(x, n);
  for (size_t i = 0; i < n; i++) x[i] = i < 5 ? 1e9 : -0.3; /* shrinking */
  stats_both_ways(x, n);
  free(x);
}

/* wavetoy 64^3 with row probes: 4,096 rows of 64 equal values. */
static void test_row_series_small(void **state) {
  enum { N = 64 * 64 * 64, ROWS = N / 64 };
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  la_compact_params_t p;
  la_compact_result_t a, b;
  la_trace_t *t;
  char why[128];
  uint64_t s = 7;
  (void)state;
  assert_true(x && y);
  for (size_t r = 0; r < ROWS; r++) {
    double v = run_value(0, &s);
    for (size_t i = 0; i < 64; i++) x[r * 64 + i] = v;
  }
  la_compact_params_default(&p);
  p.quantum = 0.38518613960771247; /* what the LocalAgent passes */
  assert_int_equal(la_compact(x, N, &p, &a), 0);
  setenv("LA_COMPACT_SCALAR", "1", 1);
  assert_int_equal(la_compact(x, N, &p, &b), 0);
  unsetenv("LA_COMPACT_SCALAR");
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.bytes, b.bytes, a.len);
  print_message("%d rows: %zu bytes, %zu segments, cv %.4f\n", ROWS, a.len,
                a.segments, a.error.cv);
  assert_true(a.len <= 8 * ROWS); /* the information: one value a row */
  assert_true(a.error.cv <= p.cv);
  assert_int_equal(la_trace_open(a.bytes, a.len, &t, why, sizeof why), 0);
  assert_int_equal(la_trace_decode(t, 0, N, y), 0);
  double sse = 0, sum = 0;
  for (size_t i = 0; i < N; i++) {
    sse += (y[i] - x[i]) * (y[i] - x[i]);
    sum += x[i];
  }
  assert_true(sqrt(sse / N) <= p.cv * sum / N); /* the bound, decoded */
  la_trace_close(t);
  la_compact_result_free(&a);
  la_compact_result_free(&b);
  free(x);
  free(y);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stats_of_runs),
      cmocka_unit_test(test_row_series_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
