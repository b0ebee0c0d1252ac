/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_maxerr.c: property tests of the max-error mode: |error| <=
 * epsilon (absolute or relative) at every point outside the stored
 * exceptions, after encoding and decoding; the segment count of the online
 * (O'Rourke) segmenter equals a brute-force dynamic-programming optimum on
 * small random inputs, and each of its segments is feasible; connected
 * polylines and the outlier rule.
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
#include "la_test_series.h"

/* Compacts, decodes and checks the bound at every point; returns the
 * number of records. */
static size_t check_bound(const double *x, size_t n, const char *spec) {
  la_compact_params_t p;
  la_compact_result_t r;
  la_trace_t *t;
  double *y = malloc((n ? n : 1) * sizeof(double)), max = 0;
  char why[200];
  size_t i, nseg;

  assert_non_null(y);
  assert_int_equal(la_compact_spec_parse(spec, &p, why, sizeof(why)), 0);
  assert_int_equal(la_compact(x, n, &p, &r), 0);
  assert_int_equal(r.mode, LA_COMPACT_MAXERR);
  assert_int_equal(la_trace_open(r.bytes, r.len, &t, why, sizeof(why)), 0);
  assert_int_equal(la_trace_decode(t, 0, n, y), 0);
  for (i = 0; i < n; i++) {
    double err = fabs(y[i] - x[i]);
    if (la_trace_is_verbatim(t, i)) {
      assert_memory_equal(&x[i], &y[i], sizeof(double));
      continue;
    }
    assert_true(err <= (p.relative ? p.epsilon * fabs(x[i]) : p.epsilon));
    max = err > max ? err : max;
  }
  assert_true(max == r.error.max_abs);
  nseg = r.segments;
  la_trace_close(t);
  la_compact_result_free(&r);
  free(y);
  return nseg;
}

/* check_bound() for la_test_synth_grid(), which wants no result. */
static void check_bound_only(const double *x, size_t n, const char *spec) {
  (void)check_bound(x, n, spec);
}

static void test_bound_structured(void **state) {
  static const char *const specs[] = {
      "maxerr:eps=1", "maxerr:eps=25,no-outliers", "maxerr:eps=0.01,relative",
      "maxerr:eps=5,connected",
      "maxerr:eps=0.05,relative,connected,no-outliers"};
  static const size_t sizes[] = {0, 1, 2, 3, 17, 1000, 20000};

  assert_int_equal(
      la_test_synth_grid(sizes, sizeof(sizes) / sizeof(sizes[0]), 100, NULL,
                         specs, sizeof(specs) / sizeof(specs[0]),
                         check_bound_only),
      0);
}

static void test_bound_special_values(void **state) {
  double x[64];
  size_t i;

  for (i = 0; i < 64; i++) x[i] = (double)(i % 9) - 4; /* crosses zero */
  x[5] = NAN;
  x[6] = INFINITY;
  x[30] = 0;
  x[40] = -0.0;
  x[41] = 1e300;
  x[42] = 5e-324;
  check_bound(x, 64, "maxerr:eps=0.5");
  check_bound(x, 64, "maxerr:eps=0.5,connected");
  check_bound(x, 64, "maxerr:eps=0.1,relative"); /* zeros go verbatim */
  check_bound(x, 64, "maxerr:eps=1e-9");
}

static void test_optimal_segment_count(void **state) {
  enum { N = 28 };
  double x[N];
  size_t lens[N], i, k;
  uint64_t seed;

  for (seed = 1; seed <= 150; seed++) {
    uint64_t s = seed;
    double ta = seed % 2 ? 0.5 + la_compact_rand01(&s) : 0;
    double tr = seed % 2 ? 0 : 0.02 + 0.1 * la_compact_rand01(&s);
    long got;
    int kind = (int)(seed % LA_SYNTH_KINDS);
    la_compact_synth(kind, N, seed, x);
    if (kind == LA_SYNTH_CONSTANT || kind == LA_SYNTH_NOISE)
      for (i = 0; i < N; i++) /* make them interesting at this tolerance */
        x[i] = 10 + 3 * sin((double)i * (0.3 + la_compact_rand01(&s)));
    got = la_compact_maxerr_lengths(x, N, ta, tr, lens);
    assert_true(got > 0);
    /* the online segments partition [0, N) and each is feasible */
    for (i = 0, k = 0; k < (size_t)got; i += lens[k++])
      assert_true(la_oracle_feasible(x, i, i + lens[k], ta, tr, 1 + 1e-9));
    assert_true(i == N);
    /* brute-force optimum: fewest feasible segments covering [0, N) */
    assert_int_equal((size_t)got,
                     la_oracle_min_segments(x, N, ta, tr, 1 + 1e-9));
  }
}

static void test_outliers_keep_segments(void **state) {
  double x[5000];
  size_t i, with, without;

  for (i = 0; i < 5000; i++) x[i] = 1000 + 0.01 * (double)i;
  for (i = 100; i < 5000; i += 500) x[i] = 9000; /* isolated jitter */
  with = check_bound(x, 5000, "maxerr:eps=1");
  without = check_bound(x, 5000, "maxerr:eps=1,no-outliers");
  assert_int_equal(with, 1);
  assert_true(without > 10);
}

/* |err| <= eps * |v| in exact arithmetic (err and v are doubles): both
 * scaled by the same power of two, then fma() rounds eps * v - err once, so
 * its sign is exact. */
static int within_rel_exact(double err, double eps, double v) {
  int k = 600 - ilogb(fabs(v) > 0 ? fabs(v) : 1);
  return fma(eps, ldexp(fabs(v), k), -ldexp(err, k)) >= 0;
}

/* Relative bounds on subnormal values: every point that is not stored
 * verbatim is within eps * |x| exactly (the rounding of a subnormal
 * tolerance let points past it: 24 of 5,000 here). */
static void test_relative_subnormals_exact_bound(void **state) {
  enum { N = 5000 };
  static double x[N], y[N];
  const char *const specs[] = {"maxerr:eps=0.1,relative",
                               "maxerr:eps=0.3,relative,connected",
                               "maxerr:eps=0.05,relative,no-outliers"};
  la_compact_result_t r;
  la_trace_t *t;
  char why[200];
  uint64_t seed = 4242;
  size_t i, k, bad;

  (void)state;
  for (i = 0; i < N; i++) /* 1 to 250 units of the smallest subnormal */
    x[i] = ldexp(
        floor(120 + 100 * sin((double)i / 40) + 30 * la_compact_rand01(&seed)),
        -1074);
  for (k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
    la_compact_params_t p;
    assert_int_equal(la_test_compact(x, N, specs[k], &r), 0);
    assert_int_equal(la_trace_open(r.bytes, r.len, &t, why, sizeof(why)), 0);
    la_trace_params(t, &p);
    assert_int_equal(la_trace_decode(t, 0, N, y), 0);
    for (i = 0, bad = 0; i < N; i++)
      if (!la_trace_is_verbatim(t, i))
        bad += !within_rel_exact(fabs(y[i] - x[i]), p.epsilon, x[i]);
    if (bad)
      fail_msg("%s: %zu of %d points beyond eps * |x|", specs[k], bad, N);
    la_trace_close(t);
    la_compact_result_free(&r);
  }
  /* and an absolute eps that is itself subnormal (p.epsilon above) */
  {
    la_compact_params_t p;
    la_compact_params_default(&p);
    p.mode = LA_COMPACT_MAXERR;
    p.epsilon = 5e-323;
    assert_int_equal(la_compact(x, N, &p, &r), 0);
    assert_int_equal(la_trace_open(r.bytes, r.len, &t, why, sizeof(why)), 0);
    assert_int_equal(la_trace_decode(t, 0, N, y), 0);
    for (i = 0; i < N; i++) assert_true(fabs(y[i] - x[i]) <= 5e-323);
    la_trace_close(t);
    la_compact_result_free(&r);
  }
}

/* Non-negative input never decodes below 0 (docs/compaction.md): timer
 * series with 0-tick cells, noise around a level near 0, steep drops to 0,
 * with an absolute eps above the values there. */
static void test_nonnegative_never_below_zero(void **state) {
  enum { N = 6000 };
  static double x[N], y[N];
  const char *const specs[] = {
      "maxerr:eps=5",  "maxerr:eps=20,connected", "maxerr:eps=2,no-outliers",
      "maxerr:eps=40", "maxerr:eps=1.5,relative", "maxerr:eps=3,relative"};
  la_compact_result_t r;
  la_trace_t *t;
  char why[200];

  (void)state;
  for (uint64_t seed = 1; seed <= 6; seed++) {
    uint64_t st = seed * 31337;
    for (size_t i = 0; i < N; i++) {
      double u = la_compact_rand01(&st);
      size_t ph = i % 150;
      if (ph < 40) /* ticks of a cheap loop: 0, 1 or 2 of 9.6 ns */
        x[i] = 9.6 * floor(3 * u);
      else if (ph < 80) /* a drop to 0 */
        x[i] = fmax(0, 50 - 1.41 * (double)(ph - 40));
      else if (ph < 120) /* noise around 3 */
        x[i] = fmax(0, 3 + 6 * (u - 0.5));
      else
        x[i] = u < 0.05 ? 400 * u : 0;
    }
    for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
      assert_int_equal(la_test_compact(x, N, specs[k], &r), 0);
      assert_int_equal(la_trace_open(r.bytes, r.len, &t, why, sizeof(why)), 0);
      assert_int_equal(la_trace_decode(t, 0, N, y), 0);
      for (size_t i = 0; i < N; i++)
        if (!(y[i] >= 0))
          fail_msg("%s seed %llu: point %zu (%.17g) decoded %.17g", specs[k],
                   (unsigned long long)seed, i, x[i], y[i]);
      la_trace_close(t);
      la_compact_result_free(&r);
      check_bound(x, N, specs[k]);
    }
  }
}

static void test_eps_zero_is_lossless(void **state) {
  double x[100];
  la_compact_params_t p;
  la_compact_result_t r;

  la_compact_synth(LA_SYNTH_WALK, 100, 3, x);
  assert_int_equal(la_compact_spec_parse("maxerr:eps=0", &p, NULL, 0), 0);
  assert_int_equal(la_compact(x, 100, &p, &r), 0);
  assert_int_equal(r.mode, LA_COMPACT_LOSSLESS);
  la_compact_result_free(&r);
}

static void test_million(void **state) {
  size_t n = 1000000;
  double *x = malloc(n * sizeof(double));

  assert_non_null(x);
  la_compact_synth(LA_SYNTH_MESH, n, 42, x);
  check_bound(x, n, "maxerr:eps=0.1,relative");
  check_bound(x, n, "maxerr:eps=100,connected");
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bound_structured),
      cmocka_unit_test(test_bound_special_values),
      cmocka_unit_test(test_optimal_segment_count),
      cmocka_unit_test(test_outliers_keep_segments),
      cmocka_unit_test(test_eps_zero_is_lossless),
      cmocka_unit_test(test_relative_subnormals_exact_bound),
      cmocka_unit_test(test_nonnegative_never_below_zero),
      cmocka_unit_test(test_million),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
