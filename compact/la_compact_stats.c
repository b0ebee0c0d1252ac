/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_stats.c: exact statistics of a raw series (count, compensated
 * sum, min, max) and the error of a reconstruction against it.
 *
 * These are the definitions every component uses: the LocalAgent computes
 * the statistics that travel with a trace, and tests compare against the
 * same functions. Nothing here compacts or decodes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"
#if LA_COMPACT_X86
#include <immintrin.h>
#endif

int la_compact_simd(void) {
#if LA_COMPACT_X86
  const char *env = getenv("LA_COMPACT_SCALAR");

  if (env != NULL && env[0] != '\0' && strcmp(env, "0") != 0)
    return 0;
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
#else
  return 0;
#endif
}

__attribute__((noinline)) static void
stats_run_scalar(la_stats_acc_t *a, const double *x, size_t n) {
  double s = a->s, c = a->c, lo = a->lo, hi = a->hi; /* la_stats_add() */
  size_t i;

  for (i = 0; i < n; i++) {
    double v = x[i], t = s + v;
    c += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
    s = t;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  a->s = s;
  a->c = c;
  a->lo = lo;
  a->hi = hi;
}

#if LA_COMPACT_X86
/* Four values per step. When the four are integers with 0 < |v| <= 2^50 and
 * |s| <= 2^52, every partial sum of the definition is an integer of
 * magnitude <= 2^53: each addition is exact, Neumaier's corrections are all
 * +0 (c does not change), and s + v0 + v1 + v2 + v3 is the same exact integer
 * in any order. min and max of nonzero finite values do not depend on the
 * order either (equal values have equal bits; zeros, whose sign would depend
 * on which comes first, and NaN take the scalar path). Other blocks take the
 * scalar definition point by point (la_stats_run() then does 4092 more
 * that way before it tries again). The result is bit-identical. */
__attribute__((target("avx2"))) static size_t
stats_run_avx2(la_stats_acc_t *a, const double *x, size_t n) {
  const __m256d sign = _mm256_set1_pd(-0.0), big = _mm256_set1_pd(0x1p50);
  const __m256d magic = _mm256_set1_pd(0x1.8p52), zero = _mm256_setzero_pd();
  __m256d lo = _mm256_set1_pd(a->lo), hi = _mm256_set1_pd(a->hi);
  double s = a->s, l[4], h[4];
  size_t i = 0, k;

  if (s != la_floor(s)) /* a fractional sum: its additions round */
    return 0;
  for (; i + 4 <= n; i += 4) {
    __m256d v = _mm256_loadu_pd(x + i), av = _mm256_andnot_pd(sign, v);
    __m256d r = _mm256_sub_pd(_mm256_add_pd(v, magic), magic);
    __m256d ok = _mm256_and_pd(
        _mm256_and_pd(_mm256_cmp_pd(av, big, _CMP_LE_OQ),
                      _mm256_cmp_pd(av, zero, _CMP_GT_OQ)),
        _mm256_cmp_pd(r, v, _CMP_EQ_OQ));
    if (_mm256_movemask_pd(ok) != 0xf || !(__builtin_fabs(s) <= 0x1p52))
      break;
    __m128d hs = _mm_add_pd(_mm256_castpd256_pd128(v),
                            _mm256_extractf128_pd(v, 1));
    s += _mm_cvtsd_f64(_mm_add_sd(hs, _mm_unpackhi_pd(hs, hs)));
    lo = _mm256_min_pd(v, lo);
    hi = _mm256_max_pd(v, hi);
  }
  a->s = s;
  _mm256_storeu_pd(l, lo);
  _mm256_storeu_pd(h, hi);
  for (k = 0; k < 4; k++) {
    a->lo = l[k] < a->lo ? l[k] : a->lo;
    a->hi = h[k] > a->hi ? h[k] : a->hi;
  }
  return i; /* x[i..i+4) is not such a block, or fewer than 4 are left */
}
#endif

#if LA_COMPACT_X86
/* Fractional values (timings in whole ticks times a timer's period in ns)
 * in blocks of LA_STATS_BLOCK. With s in the binade [2^e, 2^(e+1)) (its
 * spacing u = 2^(e-52)) and every value v of the block in [0, 2^(e-2)],
 * not -0.0 and not halfway between two multiples of u, each step of the
 * definition adds r = v rounded to a multiple of u (the same r whatever s
 * is, as s is a multiple of u), as long as the sums stay below 2^(e+1):
 * then s + r0 + r1 + ... is exact in any order. Neumaier's correction of
 * each step is (s - t) + v = v - r, exact, at most u / 2. The corrections
 * and c are multiples of g (the lesser of the spacing of the block's least
 * nonzero value, a multiple of which every v - r is, and c's lowest bit):
 * when |c| plus their magnitudes stays below 2^53 g, c's additions are
 * exact too, in any order.
 * min and max of values >= 0 without -0.0 do not depend on the order.
 * The block is computed in four lanes, checked, and kept only when every
 * condition held: returns 1, else 0 with *a unchanged. Bit-identical to
 * the definition. */
#define LA_STATS_BLOCK 64
__attribute__((target("avx2"))) static int
stats_block_binade_avx2(la_stats_acc_t *a, const double *x) {
  double s = a->s, c = a->c;
  if (!(s >= 0x1p-900 && s <= 0x1p1000)) return 0;
  uint64_t sb;
  memcpy(&sb, &s, 8);
  int e = (int)(sb >> 52) - 1023;
  const double u = la_pow2(e - 52), top = la_pow2(e + 1);
  const __m256d magic = _mm256_set1_pd(1.5 * la_pow2(e));
  const __m256d vmax = _mm256_set1_pd(la_pow2(e - 2));
  const __m256d half = _mm256_set1_pd(0.5 * u), zero = _mm256_setzero_pd();
  const __m256d sign = _mm256_set1_pd(-0.0), inf = _mm256_set1_pd(INFINITY);
  const __m256i negz = _mm256_set1_epi64x((long long)0x8000000000000000ull);
  __m256d sr = zero, sd = zero, sa = zero, pmin = inf;
  __m256d ok = _mm256_cmp_pd(zero, zero, _CMP_EQ_OQ);
  __m256d lo = _mm256_set1_pd(a->lo), hi = _mm256_set1_pd(a->hi);
  __m256i nz = _mm256_setzero_si256();
  for (size_t i = 0; i < LA_STATS_BLOCK; i += 4) {
    __m256d v = _mm256_loadu_pd(x + i);
    __m256d r = _mm256_sub_pd(_mm256_add_pd(v, magic), magic);
    __m256d d = _mm256_sub_pd(v, r), ad = _mm256_andnot_pd(sign, d);
    ok = _mm256_and_pd(ok, _mm256_and_pd(
        _mm256_and_pd(_mm256_cmp_pd(v, zero, _CMP_GE_OQ),
                      _mm256_cmp_pd(v, vmax, _CMP_LE_OQ)),
        _mm256_cmp_pd(ad, half, _CMP_NEQ_OQ)));
    nz = _mm256_or_si256(nz, _mm256_cmpeq_epi64(_mm256_castpd_si256(v), negz));
    sr = _mm256_add_pd(sr, r);
    sd = _mm256_add_pd(sd, d);
    sa = _mm256_add_pd(sa, ad);
    pmin = _mm256_min_pd(
        _mm256_blendv_pd(v, inf, _mm256_cmp_pd(v, zero, _CMP_EQ_OQ)), pmin);
    lo = _mm256_min_pd(v, lo); /* v < lo ? v : lo, as the definition */
    hi = _mm256_max_pd(v, hi);
  }
  if (_mm256_movemask_pd(ok) != 0xf || !_mm256_testz_si256(nz, nz)) return 0;
  double r4[4], d4[4], a4[4], p4[4], l4[4], h4[4];
  _mm256_storeu_pd(r4, sr);
  _mm256_storeu_pd(d4, sd);
  _mm256_storeu_pd(a4, sa);
  _mm256_storeu_pd(p4, pmin);
  _mm256_storeu_pd(l4, lo);
  _mm256_storeu_pd(h4, hi);
  double t = s + ((r4[0] + r4[1]) + (r4[2] + r4[3])); /* exact */
  if (!(t < top)) return 0; /* the sums reach the next binade */
  double m = p4[0] < p4[1] ? p4[0] : p4[1];
  m = p4[2] < m ? p4[2] : m;
  m = p4[3] < m ? p4[3] : m;
  double dsum = (d4[0] + d4[1]) + (d4[2] + d4[3]);
  if (m < INFINITY) { /* else every value is +0: every correction +0 */
    /* g: the lesser of m's spacing and c's lowest bit; the sums of multiples of g below 2^53 g are exact, and so
     * is the decision below (rounding is monotone, 2^53 g a double) */
    uint64_t mb, cb;
    double ac = __builtin_fabs(c);
    if (!(m >= 0x1p-1000) || !(ac == 0 || (ac >= 0x1p-1000 && ac <= 0x1p900)))
      return 0;
    memcpy(&mb, &m, 8);
    memcpy(&cb, &ac, 8);
    int ge = (int)(mb >> 52) - 1023 - 52, gc;
    /* c's lowest bit: its spacing times the trailing zeros of its
     * significand (with the leading 1) */
    gc = (int)(cb >> 52) - 1023 - 52 +
         __builtin_ctzll((cb & 0xfffffffffffffull) | (1ull << 52));
    if (ac != 0 && gc < ge) ge = gc;
    if (ge < -1000) return 0;
    double lim = la_pow2(ge + 53), sabs = (a4[0] + a4[1]) + (a4[2] + a4[3]);
    if (!(sabs < lim) || !(ac + sabs < lim)) return 0;
  }
  a->s = t;
  a->c = c + dsum; /* exact */
  for (int k = 0; k < 4; k++) {
    a->lo = l4[k] < a->lo ? l4[k] : a->lo;
    a->hi = h4[k] > a->hi ? h4[k] : a->hi;
  }
  return 1;
}

/* x[0..n) block by block where the blocks allow it; a block that does not
 * and the three after it by the definition. */
static void stats_run_binade(la_stats_acc_t *a, const double *x, size_t n) {
  size_t i = 0;
  while (i + LA_STATS_BLOCK <= n) {
    if (stats_block_binade_avx2(a, x + i)) {
      i += LA_STATS_BLOCK;
      continue;
    }
    size_t k = n - i < 4 * LA_STATS_BLOCK ? n - i : 4 * LA_STATS_BLOCK;
    stats_run_scalar(a, x + i, k);
    i += k;
  }
  stats_run_scalar(a, x + i, n - i);
}
#endif

#if LA_COMPACT_X86
__attribute__((target("avx2"))) static size_t run_end_avx2(const double *x,
                                                           size_t i, size_t n) {
  const __m256d v = _mm256_set1_pd(x[i]);
  size_t e = i + 1;
  for (; e + 4 <= n; e += 4)
    if (_mm256_movemask_pd(
            _mm256_cmp_pd(_mm256_loadu_pd(x + e), v, _CMP_EQ_OQ)) != 0xf)
      break;
  while (e < n && x[e] == x[i]) e++;
  return e;
}
#endif

size_t la_run_end(const double *x, size_t i, size_t n, int simd) {
#if LA_COMPACT_X86
  if (simd) return run_end_avx2(x, i, n);
#endif
  (void)simd;
  size_t e = i + 1;
  while (e < n && x[e] == x[i]) e++;
  return e;
}

int la_runs_probe(const double *x, size_t n) {
  size_t probe = n < LA_RUNS_PROBE ? n : LA_RUNS_PROBE, b = 0, j;
  for (j = 1; j < probe; j++) b += x[j] != x[j - 1];
  return probe >= 2 * LA_RUNS_MIN && b * LA_RUNS_MIN <= probe;
}

/* Runs of equal values, fast-forwarded bit for bit. Adding the same v to
 * s again and again, each sum rounded, adds the same r = v rounded to the
 * spacing u of s's binade as long as s and every exact sum stay inside
 * that binade and v is not halfway between two multiples of u (where the
 * rounding to even would depend on s): then m steps are s + m * r, exact.
 * Neumaier's correction of each such step is the same exact v - r, so the
 * compensation takes the same fast-forward with v - r. A binade is crossed
 * in a few steps; elsewhere the definition runs step by step. */

/* How many of the next k steps s = s + v add the same r (into *r): 0 when
 * it cannot be shown, k when r is 0. */
static uint64_t ff_steps(double s, double v, uint64_t k, double *r) {
  double as = fabs(s), av = fabs(v), lo, hi, u, q, fq, fr, ar, room, m;
  uint64_t bits;
  int ex;

  if (!(as >= 2 * av) || !(av > 0) || !(as >= 0x1p-900) || !(as <= 0x1p1000))
    return 0;
  memcpy(&bits, &as, 8);
  ex = (int)(bits >> 52) - 1023; /* lo = 2^ex <= as < hi, spacing u */
  lo = la_pow2(ex);
  hi = 2 * lo;
  u = la_pow2(ex - 52);
  q = v * la_pow2(52 - ex); /* v / u, exact: a power of two */
  fq = la_floor(q);
  fr = q - fq;
  if (fr == 0.5) return 0;
  *r = (fr < 0.5 ? fq : fq + 1) * u; /* |v - r| < u / 2 */
  ar = fabs(*r);
  if (ar == 0) return k;
  /* growing: every exact sum stays below hi (s + m r <= hi - u);
   * shrinking: every exact sum stays at or above lo (|v| <= ar + u / 2) */
  room = (*r > 0) == (s > 0) ? hi - u - as : as - lo - u; /* exact */
  m = floor(room / ar);
  while (m > 0 && m * ar > room) m -= 1; /* the division rounded up */
  if (!(m >= 1)) return 0;
  return m < (double)k ? (uint64_t)m : k;
}

/* k steps of s = s + v, each rounded: bit for bit, in a few jumps. */
static double ff_add(double s, double v, uint64_t k) {
  if (k == 0) return s;
  if (v == 0) return s + v; /* later steps change nothing */
  while (k > 0) {
    double r;
    uint64_t m = ff_steps(s, v, k, &r);
    if (m == 0) {
      s = s + v;
      k--;
    } else {
      s += (double)m * r;
      k -= m;
    }
  }
  return s;
}

/* x[0..n) by the definition, runs of LA_RUNS_MIN or more equal, finite,
 * nonzero values fast-forwarded. */
static void stats_run_runs(la_stats_acc_t *a, const double *x, size_t n,
                           int simd) {
  size_t i = 0;
  while (i < n) {
    size_t e = la_run_end(x, i, n, simd);
    double v = x[i];
    if (e - i < LA_RUNS_MIN || !isfinite(v) || v == 0) {
      stats_run_scalar(a, x + i, e - i);
      i = e;
      continue;
    }
    for (uint64_t k = e - i; k > 0;) {
      double r;
      uint64_t m = ff_steps(a->s, v, k, &r);
      if (m == 0) {
        la_stats_add(a, v);
        k--;
        continue;
      }
      a->c = ff_add(a->c, v - r, m); /* v - r: exact, Neumaier's term */
      a->s += (double)m * r;
      k -= m;
    }
    a->lo = v < a->lo ? v : a->lo;
    a->hi = v > a->hi ? v : a->hi;
    i = e;
  }
}

/* A chunk by the definition: run by run when it looks like runs. */
static void stats_run_chunk(la_stats_acc_t *a, const double *x, size_t n,
                            int simd) {
  if (la_runs_probe(x, n))
    stats_run_runs(a, x, n, simd);
#if LA_COMPACT_X86
  else if (simd)
    stats_run_binade(a, x, n);
#endif
  else
    stats_run_scalar(a, x, n);
}

void la_stats_run(la_stats_acc_t *a, const double *x, size_t n, int simd) {
#if LA_COMPACT_X86
  while (simd && n >= 8) {
    size_t i = stats_run_avx2(a, x, n), k;
    /* the block that stopped it and the 4092 values after it (or the tail)
     * by the definition: fractional data would otherwise pay for the test
     * on every block */
    k = n - i < 4096 ? n - i : 4096;
    stats_run_chunk(a, x + i, k, simd);
    x += i + k;
    n -= i + k;
  }
#endif
  stats_run_chunk(a, x, n, simd);
}

void la_stats_finish(const la_stats_acc_t *a, uint64_t count,
                     la_series_stats_t *st) {
  st->count = count;
  st->sum = isfinite(a->s) ? a->s + a->c : a->s;
  /* lo > hi exactly when no value is a number (n == 0, or all NaN) */
  st->min = a->lo > a->hi ? NAN : a->lo;
  st->max = a->lo > a->hi ? NAN : a->hi;
}

void la_stats_overflow(const double *x, size_t n, la_series_stats_t *st) {
  double s = 0, c = 0;
  size_t i;

  /* NaN anywhere makes the running sum NaN; an infinite value shows in min
   * or max: +-Inf here with finite bounds is an overflow of finite values */
  if (!isinf(st->sum) || !isfinite(st->min) || !isfinite(st->max)) return;
  for (i = 0; i < n; i++) { /* Neumaier's sum of the values times 2^-64 */
    double v = x[i] * 0x1p-64, t = s + v;
    c += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
    s = t;
  }
  st->sum = (s + c) * 0x1p64; /* +-Inf only past the double range */
}

double la_compact_sum(const double *x, size_t n) {
  la_series_stats_t st;

  la_series_stats(x, n, &st);
  return st.sum;
}

void la_series_stats(const double *x, size_t n, la_series_stats_t *st) {
  la_stats_acc_t a;

  la_stats_init(&a);
  la_stats_run(&a, x, n, la_compact_simd());
  la_stats_finish(&a, n, st);
  la_stats_overflow(x, n, st);
}

void la_fit_error_measure(const double *x, const double *y, size_t n,
                          const uint8_t *skip, la_fit_error_t *e) {
  double max = 0, sse = 0, sum = 0, rmse;
  size_t i, m = 0;

  for (i = 0; i < n; i++) {
    double d;
    if (skip != NULL && skip[i])
      continue;
    d = fabs(x[i] - y[i]);
    max = d > max ? d : max;
    sse += d * d;
    sum += x[i];
    m++;
  }
  rmse = m ? sqrt(sse / (double)m) : 0;
  e->max_abs = max;
  e->rmse = rmse;
  e->cv = rmse == 0 ? 0 : rmse / fabs(sum / (double)m);
}
