/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_polyline.c: property tests of the default (polyline
 * least-squares) mode on random and structured series with fixed seeds:
 * segments partition the series; every segment meets its CV bound when
 * recomputed from the raw points (after decoding); disjoint segments are
 * maximal (the next point would break the bound, and with outliers so would
 * the point after it); exceptions are exact; the n <= 2, constant, zero or
 * negative mean, NaN and Inf rules; rows of equal values (row probes); a
 * 10^6-point series.
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
#include "la_test_series.h"

typedef struct {
  la_compact_result_t r;
  la_trace_t *t;
  double *y; /* decoded */
} run_t;

static void run(const double *x, size_t n, const char *spec, run_t *o) {
  char why[200];

  assert_int_equal(la_test_compact(x, n, spec, &o->r), 0);
  assert_int_equal(la_trace_open(o->r.bytes, o->r.len, &o->t, why, sizeof(why)),
                   0);
  assert_true(la_trace_count(o->t) == n);
  o->y = malloc((n ? n : 1) * sizeof(double));
  assert_non_null(o->y);
  assert_int_equal(la_trace_decode(o->t, 0, n, o->y), 0);
}

static void run_free(run_t *o) {
  free(o->y);
  la_trace_close(o->t);
  la_compact_result_free(&o->r);
}

/* Least-squares fit of the points idx[0..m) (two-pass, long double):
 * returns SSE / (m * mean^2), the squared CV, or 0 when m <= 2. */
static long double cv2_of(const double *x, const size_t *idx, size_t m,
                          size_t first) {
  long double mt = 0, my = 0, ctt = 0, cty = 0, b, sse = 0;
  size_t k;

  if (m <= 2)
    return 0;
  for (k = 0; k < m; k++) {
    mt += (long double)(idx[k] - first);
    my += x[idx[k]];
  }
  mt /= m;
  my /= m;
  for (k = 0; k < m; k++) {
    long double dt = (long double)(idx[k] - first) - mt;
    ctt += dt * dt;
    cty += dt * (x[idx[k]] - my);
  }
  b = cty / ctt;
  for (k = 0; k < m; k++) {
    long double r = x[idx[k]] - my - b * ((long double)(idx[k] - first) - mt);
    sse += r * r;
  }
  return my == 0 ? (sse == 0 ? 0 : INFINITY) : sse / (m * my * my);
}

/* cv2_of() of the line the encoder writes for the points idx[0..m) of a
 * free segment starting at first: where the least-squares line ends below
 * 0 and x[first..idx[m-1]] are all >= 0, the smaller squared CV of the two
 * lines pinned at 0 there (the one that keeps the points' sum, the
 * least-squares one through the pinned end, docs/compaction.md); else the
 * least-squares line's. */
static long double pinned_cv2_of(const double *x, const size_t *idx, size_t m,
                                 size_t first) {
  long double st = 0, sy = 0, stt = 0, sty = 0, T, b, a, e0, e1, best;
  size_t k, last = idx[m - 1];
  int nonneg = 1;

  if (m <= 2) return 0;
  for (k = first; k <= last; k++) nonneg &= !(x[k] < 0);
  for (k = 0; k < m; k++) {
    long double t = (long double)(idx[k] - first), y = x[idx[k]];
    st += t, sy += y, stt += t * t, sty += t * y;
  }
  T = (long double)(last - first);
  b = (m * sty - st * sy) / (m * stt - st * st);
  a = (sy - b * st) / m;
  e0 = a, e1 = a + b * T;
  if (!nonneg || (e0 >= 0 && e1 >= 0)) return cv2_of(x, idx, m, first);
  best = INFINITY;
  for (int w = 0; w < 2; w++) {
    long double pa, pb, sse = 0;
    if (w == 0) { /* keeps the sum */
      long double lo = e0 < 0 ? st / T : m - st / T, far = sy / lo;
      pa = e0 < 0 ? 0 : far;
      pb = e1 < 0 ? 0 : far;
    } else if (e1 < 0) { /* least squares through (T, 0) */
      long double zu = 0, u2 = 0;
      for (k = 0; k < m; k++) {
        long double u = (long double)(idx[k] - first) - T;
        zu += u * x[idx[k]], u2 += u * u;
      }
      pa = -zu / u2 * T, pb = 0;
    } else { /* through (0, 0) */
      pa = 0, pb = sty / stt * T;
    }
    for (k = 0; k < m; k++) {
      long double t = (long double)(idx[k] - first);
      long double r = pa + (pb - pa) * t / T - x[idx[k]];
      sse += r * r;
    }
    sse = sse * m / (sy * sy);
    best = sse < best ? sse : best;
  }
  return best;
}

/* Checks partition, exactness of verbatim points and each segment's bound
 * (and, for disjoint segments, maximality). */
static void check_polyline(const double *x, size_t n, const char *spec) {
  run_t o;
  la_compact_params_t p;
  size_t s, nseg, *idx = malloc((n + 2) * sizeof(size_t)), nexc = 0;
  uint64_t covered = 0;
  double lim;

  assert_non_null(idx);
  run(x, n, spec, &o);
  la_trace_params(o.t, &p);
  nseg = la_trace_segment_count(o.t);
  assert_true(nseg == o.r.segments);
  lim = p.cv * LA_COMPACT_PL_FIT;
  for (s = 0; s < nseg; s++) {
    la_trace_segment_t g, h;
    long double sse = 0, sum = 0;
    size_t m = 0, j;
    assert_int_equal(la_trace_segment(o.t, s, &g), 0);
    assert_true(g.first == covered); /* segments partition the series */
    assert_true(g.count >= 1);
    covered += g.count;
    for (j = g.first; j < g.first + g.count; j++) {
      if (g.kind == LA_SEG_VERBATIM || la_trace_is_verbatim(o.t, j)) {
        assert_memory_equal(&x[j], &o.y[j], sizeof(double)); /* exact */
        nexc += g.kind == LA_SEG_LINE;
        continue;
      }
      idx[m++] = j;
      sse += ((long double)o.y[j] - x[j]) * ((long double)o.y[j] - x[j]);
      sum += x[j];
    }
    if (g.kind == LA_SEG_VERBATIM)
      continue;
    assert_true(g.exceptions == g.count - m);
    /* the bound, after quantization, on the decoded values */
    assert_true(sse * m <=
                (long double)p.cv * p.cv * sum * sum * (1 + 1e-9L) + 1e-300L);
    if (p.connected || s + 1 == nseg)
      continue;
    /* maximality: the next point (when it is a number and starts a line)
     * would push the CV of the line written above the fit bound */
    assert_int_equal(la_trace_segment(o.t, s + 1, &h), 0);
    if (h.kind != LA_SEG_LINE || !isfinite(x[h.first]))
      continue;
    idx[m] = h.first;
    assert_true(pinned_cv2_of(x, idx, m + 1, g.first) >
                (long double)lim * lim * (1 - 1e-9L));
  }
  assert_true(covered == n);
  assert_true(nexc == o.r.exceptions);
  free(idx);
  run_free(&o);
}

static const char *const specs[] = {
    "polyline", "polyline:no-outliers", "polyline:cv=0.02",
    "polyline:cv=0.3,connected", "polyline:cv=0.05,connected,no-outliers"};

static void test_structured(void **state) {
  static const size_t sizes[] = {0, 1, 2, 3, 10, 257, 5000};

  assert_int_equal(la_test_synth_grid(
                       sizes, sizeof(sizes) / sizeof(sizes[0]), 7, NULL, specs,
                       sizeof(specs) / sizeof(specs[0]), check_polyline),
                   0);
}

static void test_random_seeds(void **state) {
  uint64_t seed;
  double x[600];

  for (seed = 1; seed <= 40; seed++) {
    uint64_t s = seed;
    size_t n = 1 + la_compact_rand(&s) % 600, i;
    int kind = (int)(la_compact_rand(&s) % LA_SYNTH_KINDS);
    assert_int_equal(la_compact_synth(kind, n, seed, x), 0);
    /* sprinkle negative values and zeros in some series */
    for (i = 0; seed % 3 == 0 && i < n; i += 7)
      x[i] = -x[i];
    for (i = 0; seed % 5 == 0 && i < n; i += 11)
      x[i] = 0;
    check_polyline(x, n, specs[seed % 5]);
  }
}

static void test_small_n(void **state) {
  const double a[] = {3.25, -7};
  run_t o;
  int n;

  for (n = 0; n <= 2; n++) {
    run(a, (size_t)n, "polyline", &o);
    assert_int_equal(o.r.segments, n ? 1 : 0); /* one segment, exact fit */
    if (n)
      assert_true(o.r.error.max_abs <= 0.1 * 7 / 1024);
    run_free(&o);
  }
}

/* run() with the default polyline spec, where one segment must do. */
static void run_one_segment(const double *x, size_t n, run_t *o) {
  run(x, n, "polyline", o);
  assert_int_equal(o->r.segments, 1);
}

static void test_constant(void **state) {
  double x[1000];
  run_t o;
  size_t i;

  for (i = 0; i < 1000; i++)
    x[i] = 1234;
  run_one_segment(x, 1000, &o);
  for (i = 0; i < 1000; i++)
    assert_true(o.y[i] == 1234); /* a power-of-two multiple: exact */
  run_free(&o);
  for (i = 0; i < 1000; i++)
    x[i] = 0; /* zero mean, zero error: still one segment */
  run_one_segment(x, 1000, &o);
  assert_true(o.r.error.max_abs == 0 && o.r.error.cv == 0);
  run_free(&o);
}

static void test_negative_and_zero_mean(void **state) {
  double x[400];
  run_t o;
  size_t i;

  for (i = 0; i < 400; i++)
    x[i] = -1000 - (double)(i % 3); /* negative mean: |mean| is used */
  run_one_segment(x, 400, &o);
  run_free(&o);
  for (i = 0; i < 400; i++)
    x[i] = i % 2 ? 5 : -5; /* mean 0: no line has a bounded CV */
  check_polyline(x, 400, "polyline");
  check_polyline(x, 400, "polyline:no-outliers");
}

static void test_nan_inf(void **state) {
  double x[300];
  run_t o;
  size_t i;

  for (i = 0; i < 300; i++)
    x[i] = 100 + (double)(i % 5);
  x[50] = NAN;                    /* isolated: an exception */
  x[100] = INFINITY;              /* isolated: an exception */
  x[200] = x[201] = x[202] = NAN; /* a run: a verbatim record */
  x[299] = -INFINITY;             /* last point: verbatim */
  run(x, 300, "polyline", &o);
  for (i = 0; i < 300; i++)
    if (!isfinite(x[i])) {
      assert_true(la_trace_is_verbatim(o.t, i));
      assert_memory_equal(&x[i], &o.y[i], sizeof(double));
    }
  assert_int_equal(o.r.exceptions, 2);
  assert_true(isnan(o.r.stats.sum)); /* raw sum: NaN, as IEEE says */
  assert_true(o.r.stats.min == -INFINITY && o.r.stats.max == INFINITY);
  run_free(&o);
  check_polyline(x, 300, "polyline");
  check_polyline(x, 300, "polyline:no-outliers");
  check_polyline(x, 300, "polyline:connected");
}

static void test_outlier_rule(void **state) {
  double x[2000];
  run_t o, q;
  size_t i;

  for (i = 0; i < 2000; i++)
    x[i] = 1000 + (double)(i % 7);
  x[10] = 50000; /* jitter early in the segment: kept verbatim */
  run_one_segment(x, 2000, &o);
  assert_int_equal(o.r.exceptions, 1);
  assert_true(la_trace_is_verbatim(o.t, 10) && o.y[10] == 50000);
  run(x, 2000, "polyline:no-outliers", &q);
  assert_true(q.r.segments >= 2); /* without outliers it splits */
  run_free(&o);
  run_free(&q);
}


/* A timing series under interference: cheap elements (~150 ns, 3% noise) in
 * plateaus, with isolated preemption spikes of 10 us..5 ms, some at the very
 * start of a plateau, and a few pairs. */
static void interfered_series(double *x, size_t n, uint64_t seed) {
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) {
    double level = (i / 500) % 3 == 0 ? 150 : (i / 500) % 3 == 1 ? 1650 : 400;
    x[i] = level * (1 + 0.03 * (la_compact_rand01(&st) - 0.5));
  }
  for (size_t i = 0; i < n; i++)
    if (la_compact_rand01(&st) < 0.004 || i % 500 == 0)
      x[i] = 1e4 + 5e6 * la_compact_rand01(&st);
}

/* Isolated spikes are stored exactly and never spread over their
 * neighbours: every other point decodes within a factor of its own level. */
static void test_spikes_not_smeared(void **state) {
  size_t n = 20000;
  double *x = malloc(n * sizeof(double));
  run_t o;

  (void)state;
  assert_non_null(x);
  for (uint64_t seed = 1; seed <= 5; seed++) {
    interfered_series(x, n, seed);
    run(x, n, "polyline", &o);
    for (size_t i = 1; i + 1 < n; i++) {
      double lv = x[i - 1] > x[i + 1] ? x[i - 1] : x[i + 1];
      double sv = x[i - 1] > x[i + 1] ? x[i + 1] : x[i - 1];
      int plateau = i >= 2 && i + 2 < n && (i - 2) / 500 == (i + 2) / 500;
      if (x[i] > LA_COMPACT_SPIKE * lv && sv > 0.5 * lv) { /* spike: exact */
        assert_true(la_trace_is_verbatim(o.t, i));
        assert_memory_equal(&x[i], &o.y[i], sizeof(double));
      } else if (x[i] < 2000 && plateau) { /* a cheap element stays cheap */
        if (!(o.y[i] < 2.5 * x[i] + 100))
          fail_msg("seed %llu: point %zu measured %.1f decoded %.1f",
                   (unsigned long long)seed, i, x[i], o.y[i]);
      }
    }
    check_polyline(x, n, "polyline");
    run_free(&o);
  }
  free(x);
}

/* Non-negative input never decodes to a negative value, whatever the
 * slopes next to the spikes and steps. */
static void test_nonnegative_decode(void **state) {
  size_t n = 5000;
  double *x = malloc(n * sizeof(double));
  const char *specs2[] = {"polyline", "polyline:connected",
                          "polyline:no-outliers", "polyline:cv=0.5"};
  run_t o;

  (void)state;
  assert_non_null(x);
  for (uint64_t seed = 1; seed <= 8; seed++) {
    uint64_t st = seed * 7919;
    for (size_t i = 0; i < n; i++) {
      /* steep ramps down to zero, zeros, and spikes */
      double r = la_compact_rand01(&st);
      size_t ph = i % 97;
      x[i] = ph < 40 ? (double)(40 - ph) * 50 : ph < 60 ? 0 : 5 + r;
      if (r < 0.01)
        x[i] = 3e6 * r * 100;
    }
    for (size_t k = 0; k < 4; k++) {
      run(x, n, specs2[k], &o);
      for (size_t i = 0; i < n; i++)
        if (!(o.y[i] >= 0))
          fail_msg("%s seed %llu: point %zu (%.3g) decoded %.3g", specs2[k],
                   (unsigned long long)seed, i, x[i], o.y[i]);
      run_free(&o);
      check_polyline(x, n, specs2[k]);
    }
  }
  free(x);
}

/* A free segment's least-squares line keeps the sum of its points even
 * where an end that would go below 0 is pinned at 0 (non-negative input):
 * the decoded total differs from the raw one by the quantization only. Here
 * a steep 3-point drop to near 0 between noisy plateaus: its line ends
 * below 0, and pinning that end alone moved the sum (by 173 over the
 * drops of seed 1). */
static void test_pinned_line_keeps_sum(void **state) {
  size_t n = 3456;
  double *x = malloc(n * sizeof(double));
  run_t o;

  (void)state;
  assert_non_null(x);
  for (uint64_t seed = 1; seed <= 8; seed++) {
    uint64_t st = seed * 104729;
    for (size_t i = 0; i < n; i++)
      x[i] = 20 * (1 + 0.1 * (la_compact_rand01(&st) - 0.5));
    for (size_t at = 207; at + 3 < n; at += 700) {
      x[at] = 1651.5; /* the drop seen in real per-cell timings */
      x[at + 1] = 706.5;
      x[at + 2] = 20;
    }
    run(x, n, "polyline", &o);
    double raw = 0, dec = 0;
    for (size_t i = 0; i < n; i++) {
      raw += x[i];
      dec += o.y[i];
      if (!(o.y[i] >= 0))
        fail_msg("seed %llu: point %zu decoded %.3g",
                 (unsigned long long)seed, i, o.y[i]);
    }
    if (fabs(dec - raw) > (ldexp(0.1, -11) + 1e-12) * raw)
      fail_msg("seed %llu: decoded sum %.17g, raw %.17g",
               (unsigned long long)seed, dec, raw);
    run_free(&o);
    check_polyline(x, n, "polyline");
  }
  free(x);
}

/* Each line segment's bound on the decoded values, the whole series scaled
 * by 2^k first (exact): sums of squares of tiny or huge values neither
 * underflow nor overflow here. Returns the decoded sum, scaled. */
static long double check_bound_scaled(const run_t *o, const double *x, size_t n,
                                      int k) {
  la_compact_params_t p;
  long double dec = 0;
  size_t nseg = la_trace_segment_count(o->t);

  la_trace_params(o->t, &p);
  for (size_t s = 0; s < nseg; s++) {
    la_trace_segment_t g;
    long double sse = 0, sum = 0;
    size_t m = 0;
    assert_int_equal(la_trace_segment(o->t, s, &g), 0);
    for (size_t j = g.first; j < g.first + g.count; j++) {
      long double a = ldexp(x[j], k), b = ldexp(o->y[j], k);
      dec += b;
      if (g.kind == LA_SEG_VERBATIM || la_trace_is_verbatim(o->t, j)) {
        assert_memory_equal(&x[j], &o->y[j], sizeof(double));
        continue;
      }
      sse += (b - a) * (b - a);
      sum += a;
      m++;
    }
    if (g.kind == LA_SEG_LINE &&
        !(sse * m <= (long double)p.cv * p.cv * sum * sum * (1 + 1e-9L)))
      fail_msg("segment %zu (%llu points at %llu): CV %.3Lg > %g", s,
               (unsigned long long)g.count, (unsigned long long)g.first,
               sqrtl(sse / m) / fabsl(sum / m), p.cv);
  }
  (void)n;
  return dec;
}

/* Values whose squares underflow: 1e-200 * U(1, 1000) (one segment of CV
 * 0.57 before, reported as 0) and subnormals (their decoded sum was 16
 * times outside its tolerance). Every segment meets the bound, the
 * reported CV is the decoded one, the decoded sum is the raw one within the
 * quantization (2^-11 cv) and the rounding of subnormal lines. */
static void test_tiny_values_keep_the_bound(void **state) {
  enum { N = 5000 };
  static double x[N];
  const char *const sp[] = {"polyline", "polyline:connected",
                            "polyline:cv=0.3,no-outliers"};
  run_t o;

  (void)state;
  for (int kind = 0; kind < 2; kind++) {
    uint64_t st = 77 + (uint64_t)kind;
    int k = kind == 0 ? 664 : 1074; /* scales the values to about 1..1000 */
    for (size_t i = 0; i < N; i++) {
      double u = 1 + 999 * la_compact_rand01(&st);
      x[i] = kind == 0 ? 1e-200 * u : ldexp(floor(u * 1e6), -1074);
      if (i % 1000 >= 500) /* and smoother stretches */
        x[i] = ldexp(kind == 0 ? 300 + (double)(i % 1000) : 3e8 + (double)i,
                     kind == 0 ? -664 : -1074);
    }
    for (size_t q = 0; q < sizeof(sp) / sizeof(sp[0]); q++) {
      long double raw = 0, dec, sse = 0, sum = 0;
      size_t m = 0;
      run(x, N, sp[q], &o);
      dec = check_bound_scaled(&o, x, N, k);
      for (size_t i = 0; i < N; i++) {
        long double a = ldexp(x[i], k), b = ldexp(o.y[i], k);
        raw += a;
        if (!la_trace_is_verbatim(o.t, i)) {
          sse += (b - a) * (b - a);
          sum += a;
          m++;
        }
      }
      if (m > 0 && sse > 0) { /* the reported CV is the achieved one */
        long double cv = sqrtl(sse / m) / fabsl(sum / m);
        if (!(fabsl(o.r.error.cv - cv) <= 1e-6L * cv))
          fail_msg("%s kind %d: reported CV %g, decoded %.6Lg", sp[q], kind,
                   o.r.error.cv, cv);
      }
      if (strstr(sp[q], "connected") == NULL &&
          !(fabsl(dec - raw) <= (ldexp(0.3, -11) + 1e-9) * raw))
        fail_msg("%s kind %d: decoded sum %.17Lg, raw %.17Lg", sp[q], kind, dec,
                 raw);
      run_free(&o);
    }
  }
}

/* A non-negative saw that reaches 0 (a timer series with 0-tick cells):
 * the least-squares line of a ramp and the zeros after it ends below 0 and
 * its end pinned at 0 misses the bound. The segment closes where the
 * pinned line still meets it (it went verbatim whole: 8,047 bytes for
 * 8,000 raw); every segment meets the bound, nothing decodes below 0, and
 * it compacts better than maxerr at 5% of the range. */
static void test_saw_to_zero_compacts(void **state) {
  enum { N = 1000 };
  double x[N];
  run_t o, m;
  const char *const sp[] = {"polyline", "polyline:connected",
                            "polyline:cv=0.05", "polyline:no-outliers"};

  (void)state;
  for (size_t i = 0; i < N; i++)
    x[i] = fmax(0, 50 + (-5.0 - 50) * (double)(i % 40) / 39);
  run(x, N, "maxerr:eps=2.5", &m);
  for (size_t q = 0; q < sizeof(sp) / sizeof(sp[0]); q++) {
    run(x, N, sp[q], &o);
    for (size_t i = 0; i < N; i++)
      if (!(o.y[i] >= 0))
        fail_msg("%s: point %zu decoded %g", sp[q], i, o.y[i]);
    check_bound_scaled(&o, x, N, 0);
    if (q == 0 && o.r.len > m.r.len)
      fail_msg("%s: %zu bytes, maxerr eps=2.5: %zu", sp[q], o.r.len, m.r.len);
    if (o.r.len > 800)
      fail_msg("%s: %zu bytes for %d points", sp[q], o.r.len, N);
    run_free(&o);
    check_polyline(x, N, sp[q]);
  }
  run_free(&m);
}

/* Exceptions are taken only where they pay: on uniform noise (where the
 * old rule cost 10% more than no-outliers) the default costs at most 3%
 * more, and on plateaus with spikes it is smaller. */
static void test_noise_no_costlier(void **state) {
  size_t n = 100000;
  double *x = malloc(n * sizeof(double));
  run_t o, q;

  (void)state;
  assert_non_null(x);
  la_compact_synth(LA_SYNTH_NOISE, n, 5, x);
  run(x, n, "polyline", &o);
  run(x, n, "polyline:no-outliers", &q);
  assert_true(o.r.len * 100 <= q.r.len * 103);
  run_free(&o);
  run_free(&q);
  la_compact_synth(LA_SYNTH_MESH, n, 5, x);
  run(x, n, "polyline", &o);
  run(x, n, "polyline:no-outliers", &q);
  assert_true(o.r.len < q.r.len);
  run_free(&o);
  run_free(&q);
  free(x);
}

/* Row probes: rows of 64 equal values (one measurement spread over its
 * cells), rows a few percent apart, some rows alike, a spike row of one
 * cell, a NaN: the run-by-run path meets the same bound, partition and
 * maximality as the point-by-point one. */
static void test_rows_of_equal_values(void **state) {
  enum { N = 64 * 300 };
  static double x[N];
  uint64_t seed = 99;
  size_t k;

  (void)state;
  for (size_t r = 0; r < N / 64; r++) {
    double v = 1000 * (1 + 0.05 * la_compact_rand01(&seed)) * (r < 150 ? 1 : 3);
    if (r % 7 == 0 && r > 0) v = x[(r - 1) * 64]; /* the same as the last */
    for (size_t i = 0; i < 64; i++) x[r * 64 + i] = v;
  }
  x[64 * 20 + 5] *= 9; /* a spike inside a row */
  x[64 * 40 + 63] = NAN;
  for (k = 0; k < sizeof(specs) / sizeof(specs[0]); k++)
    check_polyline(x, N, specs[k]);
}

static void test_million(void **state) {
  size_t n = 1000000;
  double *x = malloc(n * sizeof(double));
  run_t o;

  assert_non_null(x);
  la_compact_synth(LA_SYNTH_MESH, n, 42, x);
  check_polyline(x, n, "polyline");
  run(x, n, "polyline", &o);
  assert_true(o.r.len * 100 <= n * 8); /* >= 100x smaller than raw */
  run_free(&o);
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_structured),
      cmocka_unit_test(test_random_seeds),
      cmocka_unit_test(test_small_n),
      cmocka_unit_test(test_constant),
      cmocka_unit_test(test_negative_and_zero_mean),
      cmocka_unit_test(test_nan_inf),
      cmocka_unit_test(test_outlier_rule),
      cmocka_unit_test(test_spikes_not_smeared),
      cmocka_unit_test(test_nonnegative_decode),
      cmocka_unit_test(test_pinned_line_keeps_sum),
      cmocka_unit_test(test_tiny_values_keep_the_bound),
      cmocka_unit_test(test_saw_to_zero_compacts),
      cmocka_unit_test(test_noise_no_costlier),
      cmocka_unit_test(test_rows_of_equal_values),
      cmocka_unit_test(test_million),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
