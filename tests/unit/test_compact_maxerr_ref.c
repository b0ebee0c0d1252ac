/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_maxerr_ref.c: the max-error mode of la_compact() checked
 * against brute-force oracles and its contract (compact/la_compact.h), on
 * many series, never against stored output bytes.
 *
 *  - every series: every synthetic kind and size, noise at tolerances from
 *    a thousandth of the values to many times them, small integers (exact
 *    ties), special values (NaN, +-Inf, +-0, subnormals, huge values); with
 *    absolute and relative bounds, tiny, subnormal and huge epsilons,
 *    connected or not, outliers or not. For each: decode(encode(x)) keeps
 *    |error| <= epsilon (or epsilon * |x|) at every point not stored
 *    verbatim, and verbatim points bit for bit; the statistics equal a plain
 *    Neumaier sum / min / max in index order, bit for bit; the reported
 *    error equals the error measured on the decoded series; the records
 *    tile the series and their count and exceptions are the ones reported;
 *    the parameters read back; range sums match the decoded values; and the
 *    scalar code (LA_COMPACT_SCALAR=1) gives the same bytes as the AVX2
 *    kernels.
 *  - small series (n <= 12, fixed seeds; disjoint, no outliers): the
 *    segmenter fits with the tolerance epsilon * LA_COMPACT_ME_FIT and
 *    claims the fewest segments for it. The count lies between the
 *    brute-force optimum with that tolerance widened and narrowed by 1e-9
 *    (rounding), every segment is feasible and none could take its next
 *    point; the intervals of points >= 0 stop at 0 (clip_feasible()). Connected
 * polylines use at least the disjoint optimum.
 *  - la_compact_maxerr_lengths() with both an absolute and a relative part
 *    in the tolerance: the optimum count, feasible segments.
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

#define WIDE (1 + 1e-9)
#define NARROW (1 - 1e-9)

/* ------------------------------------------------- encode, decode, check */

static size_t checked;

/* Compacts x with p, decodes it and checks every property of the header
 * comment that holds for any series. Returns the result (caller frees) and
 * the open trace in *tp (caller closes). */
static void compact_checked(const double *x, size_t n,
                            const la_compact_params_t *p,
                            la_compact_result_t *r, la_trace_t **tp) {
  la_trace_t *t;
  la_compact_params_t q;
  la_series_stats_t st;
  char why[200];
  double *y = malloc((n ? n : 1) * sizeof(double));
  double max = 0, sum_abs = 0;
  long double sse = 0, sum_x = 0; /* squares of subnormals, sums of huge */
  size_t i, m = 0, nrec, k, exc = 0;
  uint64_t pos = 0;

  assert_non_null(y);
  assert_int_equal(la_compact(x, n, p, r), 0);
  assert_int_equal(r->mode, LA_COMPACT_MAXERR);
  assert_int_equal(la_trace_open(r->bytes, r->len, &t, why, sizeof(why)), 0);
  assert_int_equal(la_trace_count(t), n);
  assert_int_equal(la_trace_mode(t), LA_COMPACT_MAXERR);
  la_trace_params(t, &q);
  assert_true(q.mode == LA_COMPACT_MAXERR && q.epsilon == p->epsilon &&
              !q.relative == !p->relative && !q.connected == !p->connected &&
              !q.outliers == !p->outliers);
  assert_int_equal(la_trace_decode(t, 0, n, y), 0);
  for (i = 0; i < n; i++) {
    double err = fabs(y[i] - x[i]);
    sum_abs += fabs(y[i]);
    if (la_trace_is_verbatim(t, i)) {
      assert_memory_equal(&x[i], &y[i], sizeof(double));
      continue;
    }
    if (!(err <= (p->relative ? p->epsilon * fabs(x[i]) : p->epsilon)))
      fail_msg("point %zu of %zu: %.17g decoded as %.17g, eps %.17g%s", i, n,
               x[i], y[i], p->epsilon, p->relative ? " relative" : "");
    max = err > max ? err : max;
    sse += (long double)err * err;
    sum_x += x[i];
    m++;
  }
  /* the reported error is the one measured on the decoded series */
  assert_true(r->error.max_abs == max);
  if (m == 0) {
    assert_true(r->error.rmse == 0 && r->error.cv == 0);
  } else {
    /* in long double: no underflow or overflow for any double's errors */
    long double rmse = sqrtl(sse / m);
    assert_true(fabsl(r->error.rmse - rmse) <= 1e-9L * rmse + 0x1p-1070L);
    if (rmse == 0)
      assert_true(r->error.cv == 0);
    else if (isfinite(r->error.cv))
      assert_true(fabsl(r->error.cv - rmse / fabsl(sum_x / m)) <=
                  1e-9L * r->error.cv + 1e-300L);
  }
  /* exact statistics */
  la_oracle_stats(x, n, &st);
  assert_memory_equal(&st, &r->stats, sizeof(st));
  /* the records tile [0, n) and are the ones counted */
  nrec = la_trace_segment_count(t);
  assert_int_equal(nrec, r->segments);
  for (k = 0; k < nrec; k++) {
    la_trace_segment_t s;
    assert_int_equal(la_trace_segment(t, k, &s), 0);
    assert_int_equal(s.first, pos);
    assert_true(s.count > 0);
    pos += s.count;
    exc += s.exceptions;
  }
  assert_int_equal(pos, n);
  assert_int_equal(exc, r->exceptions);
  /* range sums: whole series and a few pieces */
  for (k = 0; k < 4 && n > 0; k++) {
    uint64_t a = k == 0 ? 0 : (uint64_t)(n * k / 7), c = n - a - (k == 3);
    double got, want = 0;
    if (c == 0) continue;
    assert_int_equal(la_trace_range_sum(t, a, c, &got), 0);
    for (i = a; i < a + c; i++) want += y[i];
    if (isfinite(want))
      assert_true(fabs(got - want) <= 1e-12 * sum_abs + 1e-300);
  }
  assert_int_equal(la_trace_range_sum(t, 0, n + 1, &max), LA_ERANGE);
  free(y);
  *tp = t;
  checked++;
}

/* compact_checked(), and the same bytes from the scalar code. */
static void check_one(const double *x, size_t n, double eps, int relative,
                      int connected, int outliers) {
  la_compact_params_t p;
  la_compact_result_t a, b;
  la_trace_t *t;

  la_compact_params_default(&p);
  p.mode = LA_COMPACT_MAXERR;
  p.epsilon = eps;
  p.relative = relative;
  p.connected = connected;
  p.outliers = outliers;
  if (la_compact_effective_mode(&p) != LA_COMPACT_MAXERR) return;
  compact_checked(x, n, &p, &a, &t);
  la_trace_close(t);
  setenv("LA_COMPACT_SCALAR", "1", 1);
  assert_int_equal(la_compact(x, n, &p, &b), 0);
  unsetenv("LA_COMPACT_SCALAR");
  if (a.len != b.len || memcmp(a.bytes, b.bytes, a.len) != 0)
    fail_msg(
        "scalar and AVX2 encodings differ: n %zu eps %.17g rel %d "
        "conn %d out %d",
        n, eps, relative, connected, outliers);
  la_compact_result_free(&a);
  la_compact_result_free(&b);
}

static void all_params(const double *x, size_t n, double scale) {
  static const double abs_f[] = {1e-3, 0.02, 0.05, 0.2, 3};
  static const double rel_e[] = {1e-3, 0.02, 0.1, 0.5};
  size_t k;
  int conn, out;

  for (conn = 0; conn <= 1; conn++)
    for (out = 0; out <= 1; out++) {
      for (k = 0; k < sizeof(abs_f) / sizeof(abs_f[0]); k++)
        check_one(x, n, abs_f[k] * scale, 0, conn, out);
      for (k = 0; k < sizeof(rel_e) / sizeof(rel_e[0]); k++)
        check_one(x, n, rel_e[k], 1, conn, out);
    }
  /* tiny, subnormal and huge epsilons */
  check_one(x, n, 1e-300, 0, 0, 1);
  check_one(x, n, 5e-324, 0, 0, 1);
  check_one(x, n, 0x1p-1022, 0, 0, 1);
  check_one(x, n, 0x1p900, 0, 0, 1);
  check_one(x, n, 1e300, 0, 0, 1);
  check_one(x, n, 1e-300, 1, 0, 1);
  /* exact tolerances on integer data: ties in the comparisons */
  for (k = 0; k < 4; k++) {
    check_one(x, n, ldexp(1, (int)k - 1), 0, 0, 1);
    check_one(x, n, ldexp(1, -(int)k - 1), 1, 0, 1);
    check_one(x, n, ldexp(1, -(int)k - 1), 1, 1, 0);
  }
  /* |y| near eps * 2^36: where points stop being fittable */
  check_one(x, n, scale * 0x1p-35, 0, 0, 1);
  check_one(x, n, scale * 0x1p-36, 0, 0, 1);
  check_one(x, n, scale * 0x1p-37, 0, 0, 0);
  check_one(x, n, 0x1p-36, 1, 0, 1);
  check_one(x, n, 0x1p-37, 1, 0, 1);
}

static double mean_abs(const double *x, size_t n) {
  double s = 0;
  size_t i, m = 0;

  for (i = 0; i < n; i++)
    if (isfinite(x[i])) {
      s += fabs(x[i]);
      m++;
    }
  return m && s > 0 ? s / (double)m : 1;
}

static void test_contract_many_series(void **state) {
  static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 17, 100, 1001, 5003};
  uint64_t s = 2024;
  size_t k, i;
  int kind, v;

  (void)state;
  checked = 0;
  for (kind = 0; kind < LA_SYNTH_KINDS; kind++)
    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
      size_t n = sizes[k];
      double *x = malloc((n + 1) * sizeof(double));
      assert_non_null(x);
      la_compact_synth(kind, n, 31 + kind + k, x);
      all_params(x, n, mean_abs(x, n));
      free(x);
    }
  /* small integers: collinear points and exact ties are common */
  for (v = 0; v < 4; v++) {
    size_t n = 2000 + (size_t)v;
    double *x = malloc(n * sizeof(double));
    assert_non_null(x);
    for (i = 0; i < n; i++)
      x[i] = (double)(la_compact_rand(&s) % (2 + (uint64_t)v)) + 8 +
             (double)(i / 300 % 3) * (double)v;
    all_params(x, n, mean_abs(x, n));
    free(x);
  }
  /* noise of every amplitude around a level, steps, spikes and specials */
  for (v = 0; v < 24; v++) {
    size_t n = 1500 + (size_t)v * 97;
    double *x = malloc(n * sizeof(double));
    double amp = ldexp(1, v % 12 - 6), level = v % 3 == 0 ? 0 : 1000 * v;
    assert_non_null(x);
    for (i = 0; i < n; i++) {
      uint64_t r = la_compact_rand(&s);
      x[i] = level + amp * (la_compact_rand01(&s) - 0.5) +
             (i / 500 % 2 ? 40 * v : 0) + 0.3 * (double)(i % 50);
      if (v % 2) x[i] = floor(x[i]);
      if (r % 211 == 0) x[i] *= 30;
      if (v >= 12) { /* special values */
        if (r % 401 == 0)
          x[i] = NAN;
        else if (r % 409 == 0)
          x[i] = r & 1 ? INFINITY : -INFINITY;
        else if (r % 419 == 0)
          x[i] = r & 2 ? 0.0 : -0.0;
        else if (r % 421 == 0)
          x[i] = 0x1p-1070 * (double)(r % 7);
        else if (r % 431 == 0)
          x[i] = (r & 4 ? 1 : -1) * 1e300;
        else if (r % 433 == 0)
          x[i] = -x[i];
      }
    }
    all_params(x, n, amp + 1);
    free(x);
  }
  print_message("checked %zu encodings against the oracles\n", checked);
  assert_true(checked > 3000);
}

/* Edge cases, each through every check: nothing, one or two points,
 * constants, a lone spike, all NaN, Inf and NaN between numbers. */
static void test_edge_cases(void **state) {
  double x[12];
  size_t i;
  la_compact_params_t p;
  la_compact_result_t r;
  la_trace_t *t;

  (void)state;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_MAXERR;
  p.epsilon = 0.5;
  p.outliers = 0;
  for (i = 0; i < 12; i++) x[i] = 7.25;
  for (i = 0; i <= 12; i++) { /* constant: one segment, exact */
    compact_checked(x, i, &p, &r, &t);
    assert_int_equal(r.segments, i > 0);
    assert_true(r.error.max_abs == 0);
    la_trace_close(t);
    la_compact_result_free(&r);
  }
  x[0] = 1;
  x[1] = 1e6;
  compact_checked(x, 2, &p, &r, &t); /* two points always fit one line */
  assert_int_equal(r.segments, 1);
  la_trace_close(t);
  la_compact_result_free(&r);
  for (i = 0; i < 12; i++) x[i] = 10;
  x[6] = 1000; /* a lone spike: cut around it, or an exception */
  compact_checked(x, 12, &p, &r, &t);
  assert_int_equal(r.segments, 3);
  la_trace_close(t);
  la_compact_result_free(&r);
  p.outliers = 1;
  compact_checked(x, 12, &p, &r, &t);
  assert_int_equal(r.segments, 1);
  assert_int_equal(r.exceptions, 1);
  assert_true(la_trace_is_verbatim(t, 6));
  la_trace_close(t);
  la_compact_result_free(&r);
  for (i = 0; i < 12; i++) x[i] = NAN;
  compact_checked(x, 12, &p, &r, &t); /* stats: sum NaN, min/max NaN */
  assert_true(isnan(r.stats.sum) && isnan(r.stats.min) && isnan(r.stats.max));
  for (i = 0; i < 12; i++) assert_true(la_trace_is_verbatim(t, i));
  la_trace_close(t);
  la_compact_result_free(&r);
  for (i = 0; i < 12; i++) x[i] = (double)i;
  x[3] = INFINITY;
  x[8] = NAN;
  for (p.relative = 0; p.relative <= 1; p.relative++) {
    compact_checked(x, 12, &p, &r, &t);
    assert_true(isnan(r.stats.sum) && r.stats.min == 0 && isinf(r.stats.max));
    assert_true(la_trace_is_verbatim(t, 3) && la_trace_is_verbatim(t, 8));
    la_trace_close(t);
    la_compact_result_free(&r);
  }
}

/* ----------------------------------------------- optimality, small n -- */

/* A random series of n points of one of a few shapes (fixed seed). */
static void small_series(uint64_t *s, size_t n, double *x) {
  int shape = (int)(la_compact_rand(s) % 4);
  double a = 1 + 20 * la_compact_rand01(s), b = 4 * la_compact_rand01(s) - 2;
  for (size_t i = 0; i < n; i++) {
    double u = la_compact_rand01(s);
    switch (shape) {
      case 0:
        x[i] = a + 10 * u;
        break; /* noise */
      case 1:
        x[i] = a + b * (double)i + u;
        break; /* trend */
      case 2:
        x[i] = a + 3 * sin((double)i * (0.3 + b)) + u / 4;
        break;
      default:
        x[i] = (i < n / 2 ? a : a + 8 * b) + u;
        break; /* a step */
    }
  }
}

/* la_oracle_feasible() and la_oracle_min_segments() with the intervals the
 * engine fits (docs/compaction.md): the interval of a point x >= 0 does not
 * go below 0 (non-negative series never decode below 0), [max(x - tol, 0),
 * x + tol]; slack widens (> 1) or narrows (< 1) both ends, the clipped one
 * to -(slack - 1) * tol. By brute force: every line through two interval
 * ends. */
static void clip_iv(double x, double tol, double slack, double *lo,
                    double *hi) {
  *hi = x + slack * tol;
  *lo = x - slack * tol;
  if (x >= 0 && *lo < (1 - slack) * tol) *lo = (1 - slack) * tol;
}

static int clip_feasible(const double *x, size_t i, size_t j, double ta,
                         double tr, double slack) {
  if (j - i <= 2) return 1;
  for (size_t p = i; p < j; p++)
    for (size_t q = p + 1; q < j; q++)
      for (int ep = 0; ep < 2; ep++)
        for (int eq = 0; eq < 2; eq++) {
          double lp, hp, lq, hq, yp, yq, b;
          int ok = 1;
          clip_iv(x[p], ta + tr * fabs(x[p]), slack, &lp, &hp);
          clip_iv(x[q], ta + tr * fabs(x[q]), slack, &lq, &hq);
          yp = ep ? hp : lp;
          yq = eq ? hq : lq;
          b = (yq - yp) / (double)(q - p);
          for (size_t k = i; k < j && ok; k++) {
            double tol = ta + tr * fabs(x[k]), lo, hi, f;
            double v = yp + b * ((double)k - (double)p);
            clip_iv(x[k], tol, slack, &lo, &hi);
            f = 1e-12 * (tol + fabs(x[k]));
            ok = v >= lo - f && v <= hi + f;
          }
          if (ok) return 1;
        }
  return 0;
}

static size_t clip_min_segments(const double *x, size_t n, double ta, double tr,
                                double slack) {
  size_t best[64];
  assert_true(n < 64);
  best[0] = 0;
  for (size_t j = 1; j <= n; j++) {
    best[j] = SIZE_MAX;
    for (size_t i = 0; i < j; i++)
      if (best[i] + 1 < best[j] && clip_feasible(x, i, j, ta, tr, slack))
        best[j] = best[i] + 1;
  }
  return best[n];
}

static void test_fewest_segments_small(void **state) {
  double x[12];
  size_t tight = 0, runs = 0;
  uint64_t s = 77;

  (void)state;
  for (int round = 0; round < 600; round++) {
    size_t n = 1 + (size_t)(la_compact_rand(&s) % 12), i, k;
    int relative = round % 2;
    double eps = relative ? 0.02 + 0.2 * la_compact_rand01(&s)
                          : 0.2 + 3 * la_compact_rand01(&s);
    double ta = relative ? 0 : eps * LA_COMPACT_ME_FIT;
    double tr = relative ? eps * LA_COMPACT_ME_FIT : 0;
    la_compact_params_t p;
    la_compact_result_t r;
    la_trace_t *t;
    size_t lo, hi;

    small_series(&s, n, x);
    la_compact_params_default(&p);
    p.mode = LA_COMPACT_MAXERR;
    p.epsilon = eps;
    p.relative = relative;
    p.outliers = 0;
    compact_checked(x, n, &p, &r, &t);
    lo = clip_min_segments(x, n, ta, tr, WIDE);
    hi = clip_min_segments(x, n, ta, tr, NARROW);
    if (r.segments < lo || r.segments > hi)
      fail_msg("n %zu eps %.17g rel %d: %zu segments, optimum %zu..%zu", n, eps,
               relative, r.segments, lo, hi);
    tight += lo == hi;
    /* every record is a line, feasible, and could not take one more point */
    for (k = 0, i = 0; k < r.segments; k++) {
      la_trace_segment_t g;
      assert_int_equal(la_trace_segment(t, k, &g), 0);
      assert_int_equal(g.kind, LA_SEG_LINE);
      assert_true(clip_feasible(x, i, i + g.count, ta, tr, WIDE));
      if (i + g.count < n)
        assert_false(clip_feasible(x, i, i + g.count + 1, ta, tr, NARROW));
      i += g.count;
    }
    la_trace_close(t);
    la_compact_result_free(&r);
    /* connected: a connected polyline is also a disjoint segmentation */
    p.connected = 1;
    compact_checked(x, n, &p, &r, &t);
    assert_true(r.segments >= lo);
    la_trace_close(t);
    la_compact_result_free(&r);
    runs++;
  }
  print_message("%zu small series, %zu with an unambiguous optimum\n", runs,
                tight);
  assert_true(tight > runs * 9 / 10);
}

/* la_compact_maxerr_lengths() with both tolerance parts: the optimum. */
static void test_lengths_mixed_tolerance(void **state) {
  enum { N = 24 };
  double x[N];
  size_t lens[N];

  (void)state;
  for (uint64_t seed = 1; seed <= 120; seed++) {
    uint64_t s = seed;
    double ta = la_compact_rand01(&s) * 2;
    double tr = 0.001 + 0.05 * la_compact_rand01(&s);
    size_t i, k;
    long got;
    small_series(&s, N, x);
    got = la_compact_maxerr_lengths(x, N, ta, tr, lens);
    assert_true(got > 0);
    for (i = 0, k = 0; k < (size_t)got; i += lens[k++])
      assert_true(la_oracle_feasible(x, i, i + lens[k], ta, tr, WIDE));
    assert_int_equal(i, N);
    assert_true((size_t)got >= la_oracle_min_segments(x, N, ta, tr, WIDE));
    assert_true((size_t)got <= la_oracle_min_segments(x, N, ta, tr, NARROW));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_contract_many_series),
      cmocka_unit_test(test_edge_cases),
      cmocka_unit_test(test_fewest_segments_small),
      cmocka_unit_test(test_lengths_mixed_tolerance),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
