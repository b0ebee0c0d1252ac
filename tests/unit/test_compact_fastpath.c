/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_fastpath.c: the fast paths of the compaction engine compute
 * exactly what the definitions say:
 *  - la_series_stats() (AVX2 integer blocks, fused into the encoder) equals,
 *    bit for bit, the reference one-pass Neumaier sum / min / max below (the
 *    definition, as first written) on many series: integers near the 2^50
 *    and 2^53 limits, mixed magnitudes and signs, zeros of both signs, NaN,
 *    Inf, subnormals; and the statistics la_compact() returns equal them;
 *  - the AVX2 kernels and the scalar code (LA_COMPACT_SCALAR=1) give
 *    byte-identical encodings and identical results for every mode;
 *  - la_floor() and la_pow2() equal floor() and ldexp().
 * On a CPU without AVX2 both runs take the scalar path and still agree.
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

static void fill(double *x, size_t n, int kind, uint64_t *s) {
  size_t i;

  for (i = 0; i < n; i++) {
    uint64_t r = la_compact_rand(s);
    double u = la_compact_rand01(s);
    switch (kind) {
    case 0: /* small integers, both signs, some zeros */
      x[i] = (double)((int64_t)(r % 2001) - 1000);
      break;
    case 1: /* integers at the 2^50 limit of the fast path */
      x[i] = (r & 1 ? -1 : 1) * (0x1p50 - (double)(r % 4));
      break;
    case 2: /* integers whose partial sums pass 2^53 */
      x[i] = 0x1p52 + (double)(r % 1000);
      break;
    case 3: /* mixed magnitudes and signs: Neumaier's corrections matter */
      x[i] = (u - 0.5) * ldexp(1, (int)(r % 120) - 60);
      break;
    case 4: /* whole nanoseconds with rare -0.0, +0.0, NaN, Inf */
      x[i] = floor(1000 * u);
      if (r % 97 == 0)
        x[i] = -0.0;
      else if (r % 89 == 0)
        x[i] = 0.0;
      else if (r % 1009 == 0)
        x[i] = NAN;
      else if (r % 2003 == 0)
        x[i] = (r & 2) ? INFINITY : -INFINITY;
      break;
    case 5: /* subnormals and halves */
      x[i] = (r & 1) ? 0x1p-1070 * (double)(r % 100) : (double)(r % 50) + 0.5;
      break;
    default: /* only zeros, -0.0 first */
      x[i] = i == 0 ? -0.0 : 0.0;
      break;
    }
  }
}

static void test_stats_equal_definition(void **state) {
  static const size_t sizes[] = {0, 1, 3, 4, 7, 8, 9, 31, 1000, 4099, 65536};
  uint64_t s = 12345;
  size_t k, n, off;
  int kind;

  for (kind = 0; kind <= 6; kind++)
    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
      n = sizes[k];
      double *x = malloc((n + 3) * sizeof(double));
      assert_non_null(x);
      fill(x, n + 3, kind, &s);
      for (off = 0; off < 3; off++) { /* unaligned starts too */
        la_series_stats_t a, b;
        la_compact_result_t r;
        la_compact_params_t p;
        la_oracle_stats(x + off, n, &b);
        la_series_stats(x + off, n, &a);
        assert_memory_equal(&a, &b, sizeof(a));
        assert_true(la_compact_sum(x + off, n) == b.sum || isnan(b.sum));
        la_compact_params_default(&p); /* lossy: stats fused in the encoder */
        assert_int_equal(la_compact(x + off, n, &p, &r), 0);
        assert_memory_equal(&r.stats, &b, sizeof(b));
        la_compact_result_free(&r);
        p.mode = LA_COMPACT_MAXERR;
        p.epsilon = 5;
        assert_int_equal(la_compact(x + off, n, &p, &r), 0);
        assert_memory_equal(&r.stats, &b, sizeof(b));
        la_compact_result_free(&r);
      }
      free(x);
    }
  /* the synthetic series, the benchmark's among them */
  for (kind = 0; kind < LA_SYNTH_KINDS; kind++) {
    size_t m = kind == LA_SYNTH_MESH ? 1000000 : 30000;
    double *x = malloc(m * sizeof(double));
    la_series_stats_t a, b;
    assert_non_null(x);
    la_compact_synth(kind, m, 42, x);
    la_oracle_stats(x, m, &b);
    la_series_stats(x, m, &a);
    assert_memory_equal(&a, &b, sizeof(a));
    free(x);
  }
}

/* Timings in whole ticks of a fractional period (the agent's series, whose
 * sums take the fractional blocks of la_stats_run()), kind:
 *   0: mostly 26 ticks, some 25 and 27, rare spikes of thousands, +0.0;
 *   1: the same with rare -0.0, NaN and negative values;
 *   2: a huge first value, then halves and quarters: steps halfway between
 *      two multiples of the sum's spacing (ties), and corrections large
 *      against c's room;
 *   3: ticks of a period near 2^-30 ns (tiny values, fine corrections);
 *   4: large and growing values (sums crossing many binades). */
static double tick_value(int kind, size_t i, uint64_t *s) {
  uint64_t r = la_compact_rand(s);
  double q = 1 / 2.6;
  switch (kind) {
  case 0:
  case 1: {
    double k = r % 10 < 8 ? 26 : r % 10 == 8 ? 25 : 27;
    if (r % 1000 == 7) k = (double)(r % 5000);
    if (r % 1013 == 5) return 0.0;
    if (kind == 1 && r % 3001 == 11) return -0.0;
    if (kind == 1 && r % 7919 == 13) return NAN;
    if (kind == 1 && r % 6007 == 17) return -k * q;
    return k * q;
  }
  case 2:
    if (i == 0) return 0x1.1p52;
    return (double)(r % 1000) + (r & 1 ? 0.5 : 0.25);
  case 3:
    return (double)(r % 64 + 1) * 0x1.3p-30;
  default:
    return (double)(r % 100000 + i) * q * 1e6;
  }
}

/* la_stats_run() (fractional blocks) leaves the accumulator, s and c and
 * min and max, bit for bit where the definition one value at a time does,
 * whatever the split of the series between calls. */
static void test_stats_ticks_equal_definition(void **state) {
  static const size_t sizes[] = {63, 64, 65, 200, 4096, 5000, 70001, 400000};
  uint64_t s = 777;
  for (int kind = 0; kind <= 4; kind++)
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
      size_t n = sizes[k];
      double *x = malloc(n * sizeof(double));
      assert_non_null(x);
      for (size_t i = 0; i < n; i++) x[i] = tick_value(kind, i, &s);
      for (int split = 0; split < 3; split++) {
        la_stats_acc_t a, b;
        la_stats_init(&a);
        la_stats_init(&b);
        size_t step = split == 0 ? n : split == 1 ? 4096 : 1000;
        for (size_t i = 0; i < n; i += step)
          la_stats_run(&a, x + i, n - i < step ? n - i : step, 1);
        for (size_t i = 0; i < n; i++) la_stats_add(&b, x[i]);
        assert_memory_equal(&a, &b, sizeof(a));
      }
      la_series_stats_t p, o;
      la_series_stats(x, n, &p);
      la_oracle_stats(x, n, &o);
      assert_memory_equal(&p, &o, sizeof(p));
      free(x);
    }
}

/* Spikes with NaN, -Inf and -0.0; walks scaled to huge non-integers. */
static void add_specials(int kind, double *x, size_t n) {
  size_t i;

  if (kind == LA_SYNTH_SPIKES && n > 50) {
    x[17] = NAN;
    x[33] = -INFINITY;
    x[40] = -0.0;
  }
  if (kind == LA_SYNTH_WALK) /* not integers, some huge values */
    for (i = 0; i < n; i += 101) x[i] *= 1e12;
}

/* The AVX2 kernels and the scalar code give the same bytes and figures. */
static void check_simd_scalar(const double *x, size_t n, const char *spec) {
  la_compact_result_t a, b;

  unsetenv("LA_COMPACT_SCALAR");
  assert_int_equal(la_test_compact(x, n, spec, &a), 0);
  setenv("LA_COMPACT_SCALAR", "1", 1);
  assert_int_equal(la_compact_simd(), 0);
  assert_int_equal(la_test_compact(x, n, spec, &b), 0);
  unsetenv("LA_COMPACT_SCALAR");
  assert_true(a.len == b.len);
  assert_memory_equal(a.bytes, b.bytes, a.len);
  assert_memory_equal(&a.stats, &b.stats, sizeof(a.stats));
  assert_memory_equal(&a.error, &b.error, sizeof(a.error));
  assert_true(a.segments == b.segments && a.exceptions == b.exceptions);
  la_compact_result_free(&a);
  la_compact_result_free(&b);
}

static void test_simd_equals_scalar(void **state) {
  static const char *const specs[] = {
      "polyline",
      "polyline:connected",
      "polyline:no-outliers",
      "polyline:cv=0.01",
      "polyline:cv=0.3,connected,no-outliers",
      "maxerr:eps=50",
      "maxerr:eps=0.1,relative",
      "maxerr:eps=5,connected",
      "lossless"};
  static const size_t sizes[] = {5, 100, 3001, 40000};

  assert_int_equal(
      la_test_synth_grid(sizes, sizeof(sizes) / sizeof(sizes[0]), 9,
                         add_specials, specs, sizeof(specs) / sizeof(specs[0]),
                         check_simd_scalar),
      0);
}

static void test_floor_pow2(void **state) {
  uint64_t s = 99;
  int i, k;

  for (k = -1022; k <= 1022; k++)
    assert_true(la_pow2(k) == ldexp(1, k));
  for (i = 0; i < 200000; i++) {
    uint64_t r = la_compact_rand(&s);
    double u = (la_compact_rand01(&s) - 0.5) * ldexp(1, (int)(r % 140) - 70);
    double f = la_floor(u), g = floor(u);
    if (r % 7 == 0)
      u = floor(u) + 0.5; /* halves */
    f = la_floor(u);
    g = floor(u);
    assert_memory_equal(&f, &g, sizeof(f));
    k = (int)(r % 2001) - 1000;
    f = u * la_pow2(k);
    g = ldexp(u, k);
    assert_memory_equal(&f, &g, sizeof(f));
  }
  {
    const double sp[] = {0.0,  -0.0,       0.5,       -0.5,     -1,
                         1e300, -1e300,    INFINITY,  -INFINITY, NAN,
                         0x1p62, -0x1p62,  0x1p62 - 1024, -0x1p52 - 0.5};
    for (i = 0; i < (int)(sizeof(sp) / sizeof(sp[0])); i++) {
      double f = la_floor(sp[i]), g = floor(sp[i]);
      if (isnan(g))
        assert_true(isnan(f));
      else
        assert_memory_equal(&f, &g, sizeof(f));
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stats_equal_definition),
      cmocka_unit_test(test_stats_ticks_equal_definition),
      cmocka_unit_test(test_simd_equals_scalar),
      cmocka_unit_test(test_floor_pow2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
