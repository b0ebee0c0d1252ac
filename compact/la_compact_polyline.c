/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_polyline.c: the default segmenter: least-squares line segments
 * with a bounded coefficient of variation of the fitting error.
 *
 * One pass; O(1) state and work per point; no allocation. A segment grows
 * point by point from running sums of the points shifted by the segment's
 * first value (or by the previous vertex in connected mode), and closes just
 * before the point that would make RMSE / |mean| of the least-squares fit
 * exceed cv * LA_COMPACT_PL_FIT. The test is division-free:
 *
 *   free line:      Cyy*Ctt - Cty^2 <= cv^2 * (m*y0 + Sy)^2 * Ctt
 *                   with Cab = m*Sab - Sa*Sb (m times the co-moments)
 *   through anchor: m * (Syy*Stt - Sty^2) <= cv^2 * (m*y0 + Sy)^2 * Stt
 *
 * Segments of up to two points (one after an anchor) always fit.
 *
 * Spikes (outliers on, the default): a finite point more than
 * LA_COMPACT_SPIKE times above the larger of its two neighbours, which are
 * positive and within a factor of two of each other (a quiet level, so that
 * the exception pays for itself), is an isolated spike — on timing series, an
 * element timed across a preemption or an interrupt. A spike never enters a
 * fit: inside a segment it is an exception (stored verbatim, skipped by the
 * sums) when the point after it fits, else the segment closes before it and it
 * is stored verbatim on its own. So a spike is never spread over its
 * neighbours, whether or not it would have fitted. Non-finite points are
 * handled the same way. Points that merely miss the bound (noise at a segment's
 * end) close the segment: an exception for them costs more bytes than it saves.
 *
 * Non-negative series (all finite points >= 0, as time is) never decode to a
 * negative value: a line's end below 0 is pinned at 0 (pl_line(),
 * pl_pin_fit()); where no pinned line meets the bound the segment closes
 * earlier (pl_regrow()). Values far from 1 (below 2^-200, above 2^200) are
 * summed times a power of two (pl_scale()), so their squares neither
 * underflow nor overflow. The encoder's self-check still guarantees the
 * bound, or stores the points verbatim.
 *
 * It does not quantize, encode or check: la_cenc_line() does, and may turn a
 * segment into a verbatim run when the check fails.
 */
#include <math.h>

#include "la_compact_internal.h"
#if LA_COMPACT_X86
#include <immintrin.h>
#endif

typedef struct {
  double m, st, stt, sy, syy, sty;
} pl_sums_t;

/* The choice between lines and quantized runs (when the encoder has a
 * quantum). Lines pay where segments are long. On rough series (a coarse
 * timer's steps, noise above the bound) segments are a few points long: as
 * lines they cost more bytes than the same points stored exactly as small
 * integers, and far more time. The segmenter keeps decayed byte costs of its
 * recent short segments both ways; when runs would not have been much
 * larger it stores the next points as quantized runs, and before each run
 * it probes whether a line from there would pay again. */
typedef struct {
  int on;          /* quantized runs allowed (a quantum, not given up) */
  int rough;       /* storing quantized runs */
  unsigned seen;   /* segments in the costs below */
  double line;     /* decayed bytes of recent segments as lines */
  double run;      /* the same points as quantized runs */
  double lbytes;   /* decayed bytes of one line record */
  uint64_t chunk;  /* points of the next run before a probe */
  unsigned misses; /* runs refused: a point not a multiple of the quantum */
} pl_qsel_t;

#define PL_Q_DECAY 0.75 /* weight of the older costs per segment */
/* Runs are exact and several times cheaper to write than fitted lines, so
 * they are preferred while they cost at most PL_Q_ENTER times the bytes of
 * the lines they replace; lines come back where they take under PL_Q_LEAVE
 * of the runs' bytes. */
#define PL_Q_ENTER 1.25
#define PL_Q_LEAVE 0.5
#define PL_Q_SHORT 32   /* longer segments are lines: a run costs >= 1 B/pt */
#define PL_Q_PROBE 64   /* points a probe tries to fit */
#define PL_Q_CHUNK 32   /* first run after a switch; doubles per probe */
#define PL_Q_MISSES 64  /* refused runs after which runs are given up */

typedef struct {
  pl_sums_t s;
  double y0;      /* shift: first value, or the anchor (previous vertex) */
  double t;       /* offset of the next point from the line's origin */
  int anchored;   /* the line goes through (0, y0) */
  uint64_t first; /* index of the first point */
  /* scale: the sums are of (y - y0) * sc, sc a power of two, 1 unless the
   * segment's values are below 2^-200 or above 2^200 in magnitude (their
   * squares would underflow or overflow: pl_scale()); y0s = y0 * sc */
  double sc, y0s;
  uint64_t regrow; /* points pl_regrow() may still scan in this series */
} pl_seg_t;

/* The scale of a segment whose values are about v: 1 for |v| in
 * [2^-200, 2^200] (every product of the test stays in range) or v = 0,
 * else the power of two that brings |v| to [1, 2) (within 2^+-1000). */
static double pl_scale(double v) {
  double a = fabs(v);
  int k;
  if (a == 0 || !(a < INFINITY) || (a >= 0x1p-200 && a <= 0x1p200)) return 1;
  k = -ilogb(a);
  return ldexp(1, k > 1000 ? 1000 : k < -1000 ? -1000 : k);
}

/* Adds (t, yp) to s into *o and tells whether the fit still meets the bound.
 * NaN and overflow give "no". */
static inline int pl_try(const pl_seg_t *g, double t, double yp, double cv2,
                         pl_sums_t *o) {
  const pl_sums_t *s = &g->s;
  double m = s->m + 1, st = s->st + t, stt = s->stt + t * t;
  double sy, syy, sty, mean_m, rhs, lhs;

  yp *= g->sc; /* exact: a power of two (1 almost always) */
  sy = s->sy + yp, syy = s->syy + yp * yp, sty = s->sty + t * yp;
  mean_m = m * g->y0s + sy;

  o->m = m;
  o->st = st;
  o->stt = stt;
  o->sy = sy;
  o->syy = syy;
  o->sty = sty;
  if (g->anchored) {
    lhs = m * (syy * stt - sty * sty);
    rhs = cv2 * mean_m * mean_m * stt;
  } else {
    double ctt = m * stt - st * st;
    double cyy = m * syy - sy * sy;
    double cty = m * sty - st * sy;
    lhs = cyy * ctt - cty * cty;
    rhs = cv2 * mean_m * mean_m * ctt;
  }
  return lhs <= rhs;
}

static void pl_start(pl_seg_t *g, const la_cenc_t *enc, int connected,
                     uint64_t i, double y) {
  double v;
  g->s = (pl_sums_t){0, 0, 0, 0, 0, 0};
  g->first = i;
  g->anchored = connected && enc->vertex_ok;
  if (g->anchored) {
    g->y0 = enc->vertex;
    g->t = 1;
  } else {
    g->y0 = y;
    g->t = 0;
  }
  /* the scale from the first value, else the next one, else the last
   * segment's (a zero between tiny values) */
  v = y != 0                                      ? y
      : i + 1 < enc->n && isfinite(enc->x[i + 1]) ? enc->x[i + 1]
                                                  : 0;
  if (v != 0 || !(g->sc > 0)) g->sc = pl_scale(v);
  g->y0s = g->y0 * g->sc;
  pl_try(g, g->t, y - g->y0, 0, &g->s);
  g->t += 1;
}

/* Whether every finite point of x[first..last] is >= 0. */
static int pl_nonneg(const double *x, uint64_t first, uint64_t last) {
  double lo = 0;
  for (uint64_t i = first; i <= last; i++)
    lo = x[i] < lo ? x[i] : lo; /* NaN compares false */
  return lo >= 0;
}

/* Counts a closed segment of count points at first, written as a line
 * record of lb bytes, in the costs; switches to runs when they pay. */
static void pl_qsel_seen(pl_qsel_t *q, const la_cenc_t *enc, uint64_t first,
                         uint64_t count, size_t lb) {
  double k, rb;
  uint64_t c;

  if (count <= PL_Q_SHORT) {
    k = NAN; /* from the segment's first point */
    c = la_cenc_qcost(enc, first, count, &k);
    if (c == UINT64_MAX && ++q->misses > PL_Q_MISSES) q->on = 0;
    rb = c == UINT64_MAX ? 9.0 * (double)count
                         : la_cenc_qcost_est(enc, c, count);
  } else {
    rb = la_cenc_qcost_est(enc, count, count); /* a lower bound */
  }
  q->line = q->line * PL_Q_DECAY + (double)lb;
  q->run = q->run * PL_Q_DECAY + rb;
  q->lbytes = q->lbytes * PL_Q_DECAY + (double)lb * (1 - PL_Q_DECAY);
  if (++q->seen >= 3 && q->run <= PL_Q_ENTER * q->line && q->on) {
    q->rough = 1;
    q->chunk = PL_Q_CHUNK;
  }
}

/* The line of a segment with sums s (scaled by g->sc) whose last point is
 * at t_last: least squares, then, when nonneg (its points, and connected
 * the anchor, are >= 0) and an end is below 0, pinned: that end at 0 and
 * a free segment's other end moved so that the line keeps the fitted
 * points' sum, m * mean (exceptions, at their own t, are not on the line).
 * Ends into *a, *b; returns 1 when pinned. nonneg < 0: not known yet,
 * x[first..first + count) are read when an end is below 0. */
static int pl_line(const pl_seg_t *g, const pl_sums_t *s, double t_last,
                   int nonneg, const double *x, uint64_t count, double *a,
                   double *b) {
  double slope, mean = g->y0 + s->sy / s->m / g->sc;

  if (g->anchored) {
    slope = s->sty / s->stt;
    *a = g->y0;
    *b = g->y0 + slope * t_last / g->sc;
  } else if (s->m < 2) {
    *a = *b = g->y0;
  } else {
    slope = (s->m * s->sty - s->st * s->sy) / (s->m * s->stt - s->st * s->st);
    *a = g->y0 + (s->sy - slope * s->st) / s->m / g->sc;
    *b = *a + slope * t_last / g->sc;
  }
  if (!(*a < 0 || *b < 0) || (g->anchored && !(g->y0 >= 0)) || nonneg == 0 ||
      (nonneg < 0 && !pl_nonneg(x, g->first, g->first + count - 1)))
    return 0;
  /* a free line passes through the fitted points' mean (>= 0), so one end
   * only is below 0 */
  double lo = *a < 0 ? s->st / t_last : s->m - s->st / t_last;
  if (!g->anchored && s->m >= 2 && t_last > 0 && lo > 0) {
    double far = s->m * mean / lo;
    *a = *a < 0 ? 0 : far;
    *b = *b < 0 ? 0 : far;
  } else {
    *a = *a < 0 ? 0 : *a;
    *b = *b < 0 ? 0 : *b;
  }
  return 1;
}

/* Whether the line with ends a, b meets the fit bound over the points of
 * the sums s: SSE * m <= cv2 * (sum)^2, SSE in closed form from the
 * (scaled) sums. Used for pinned lines, whose SSE the segmenter's test
 * does not bound; the encoder still checks every line on the points. */
static int pl_line_fits(const pl_seg_t *g, const pl_sums_t *s, double t_last,
                        double a, double b, double cv2) {
  /* the line minus y0, scaled: p + q * t */
  double p = (a - g->y0) * g->sc, q = (b - a) * g->sc / t_last;
  double sse = s->syy - 2 * (p * s->sy + q * s->sty) + s->m * p * p +
               2 * p * q * s->st + q * q * s->stt;
  double mm = s->m * g->y0s + s->sy;
  return t_last > 0 ? sse * s->m <= cv2 * mm * mm : 1;
}

/* A pinned line (pl_line() returned 1, ends *a, *b) that meets the bound:
 * the sum-keeping one when it does, else, for a free segment, the
 * least-squares line through the pinned end (the other end moves up; it
 * stays >= 0 on points >= 0). Returns 0 when neither does. */
static int pl_pin_fit(const pl_seg_t *g, const pl_sums_t *s, double t_last,
                      double cv2, double *a, double *b) {
  double T = t_last, y0s = g->y0s, u2, zu, sl, na, nb;

  if (pl_line_fits(g, s, t_last, *a, *b, cv2)) return 1;
  if (g->anchored || s->m < 3 || !(T > 0)) return 0;
  if (*b == 0) { /* through (T, 0): z = y' + y0s against u = t - T */
    u2 = s->stt - 2 * T * s->st + s->m * T * T;
    zu = (s->sty + y0s * s->st) - T * (s->sy + s->m * y0s);
    sl = zu / u2;
    na = -sl * T / g->sc;
    nb = 0;
  } else { /* through (0, 0): against u = t */
    sl = (s->sty + y0s * s->st) / s->stt;
    na = 0;
    nb = sl * T / g->sc;
  }
  if (!(na >= 0 && nb >= 0 && na < INFINITY && nb < INFINITY) ||
      !pl_line_fits(g, s, t_last, na, nb, cv2))
    return 0;
  *a = na;
  *b = nb;
  return 1;
}

/* Whether the (scaled) sums of the segment may have lost its points to
 * underflow: a mean and squares far below 1 while not every point equals
 * y0 (a zero followed by tiny values, scale 1). */
static int pl_tiny(const pl_seg_t *g) {
  const pl_sums_t *s = &g->s;
  double mm = s->m * g->y0s + s->sy;
  return fabs(mm) < 0x1p-300 * s->m && s->syy < 0x1p-600 * s->m &&
         (s->sy != 0 || s->sty != 0 || mm != 0);
}

/* Grows the segment again from its first point over at most count points
 * (its exceptions kept where the segment still covers the point after
 * them), point by point with scale sc: it closes just before the first
 * point at which the least-squares test fails or, on points >= 0, the line
 * pl_line() would write misses the bound. Segments of up to two points
 * (one after an anchor) always fit. Sets g's sums and t and drops the
 * exceptions past the end; returns the points kept (>= 1). */
static uint64_t pl_regrow(pl_seg_t *g, la_cenc_t *enc, uint64_t count,
                          double cv2, double sc) {
  const double *x = enc->x + g->first;
  pl_seg_t h = *g;
  pl_sums_t o, keep_s = {0, 0, 0, 0, 0, 0};
  uint64_t j, keep = 0;
  size_t e = 0, keep_e = 0;
  double keep_t = h.t;
  int nonneg = !g->anchored || g->y0 >= 0;

  h.sc = sc;
  h.y0s = h.y0 * sc;
  h.s = (pl_sums_t){0, 0, 0, 0, 0, 0};
  h.t = g->anchored ? 1 : 0;
  for (j = 0; j < count; j++) {
    double a, b;
    nonneg &= !(x[j] < 0);
    if (e < enc->nexc && enc->exc_off[e] == j) {
      e++;
      h.t += 1;
      continue;
    }
    int ok = pl_try(&h, h.t, x[j] - h.y0, cv2, &o);
    if (o.m <= (h.anchored ? 1 : 2))
      ok = 1;
    else if (ok && pl_line(&h, &o, h.t, nonneg, NULL, 0, &a, &b))
      ok = pl_pin_fit(&h, &o, h.t, cv2, &a, &b);
    if (!ok) break;
    h.s = o;
    h.t += 1;
    keep = j + 1;
    keep_s = o;
    keep_t = h.t;
    keep_e = e;
  }
  g->s = keep_s;
  g->t = keep_t;
  g->sc = sc;
  g->y0s = h.y0s;
  enc->nexc = keep_e;
  return keep;
}

/* Writes the segment's line (pl_line(); pinned when its points are >= 0
 * and an end would be below 0). The segment closes earlier (pl_regrow())
 * when the pinned line misses the bound, or when its sums may have
 * underflowed: the points after it are the caller's to segment again.
 * With a quantum, the segment is counted in q's costs. Returns the points
 * written (as a line, or verbatim when the encoder's check fails), or a
 * negative error. */
static int64_t pl_close(pl_seg_t *g, la_cenc_t *enc, double cv, double cv2,
                        pl_qsel_t *q) {
  double t_last = g->t - 1, a, b, mean, vertex;
  uint64_t count = (uint64_t)(g->anchored ? t_last : t_last + 1);
  int rc, tiny = pl_tiny(g);
  int pinned = pl_line(g, &g->s, t_last, -1, enc->x, count, &a, &b);
  if ((tiny || (pinned && !pl_pin_fit(g, &g->s, t_last, cv2, &a, &b))) &&
      g->regrow >= count) {
    double sc = g->sc;
    g->regrow -= count;
    if (tiny) { /* the scale of the segment's largest value */
      double big = 0;
      size_t e = 0;
      for (uint64_t j = 0; j < count; j++) {
        double v = fabs(enc->x[g->first + j]);
        if (e < enc->nexc && enc->exc_off[e] == j) {
          e++;
          continue;
        }
        big = v > big && v < INFINITY ? v : big;
      }
      sc = pl_scale(big);
    }
    count = pl_regrow(g, enc, count, cv2, sc);
    t_last = g->t - 1;
    if (pl_line(g, &g->s, t_last, -1, enc->x, count, &a, &b))
      (void)pl_pin_fit(g, &g->s, t_last, cv2, &a, &b);
  }
  mean = g->y0 + g->s.sy / g->s.m / g->sc;
  rc = la_cenc_line(enc, count, g->anchored, a, b,
                    LA_COMPACT_PL_QSTEP * cv * fabs(mean), -1, 0, &vertex);
  g->s.m = 0;
  if (rc >= 0 && q->on)
    pl_qsel_seen(q, enc, g->first, count, rc ? enc->rec_bytes : 9 * count);
  return rc < 0 ? rc : (int64_t)count;
}

/* The hot loop: extends a free (anchored == 0) or anchored segment over
 * x[i..n) while the points fit; returns the index of the first point that
 * does not (or n). The sums live in registers. my0 is m * y0 kept as a sum
 * (y0 is exact): the caller passes m * y0, or the running sum of a vector
 * scan that stopped early, so that both paths do the same arithmetic. */
static inline size_t pl_scan(pl_seg_t *g, const double *x, size_t i, size_t n,
                             double cv2, const int anchored, double my0,
                             const int scaled) {
  double m = g->s.m, st = g->s.st, stt = g->s.stt, sy = g->s.sy;
  double syy = g->s.syy, sty = g->s.sty, t = g->t, y0 = g->y0;
  double y0s = g->y0s, sc = g->sc;

  for (; i < n; i++) {
    double yp = scaled ? (x[i] - y0) * sc : x[i] - y0;
    double m1 = m + 1, st1 = st + t, stt1 = stt + t * t, my1 = my0 + y0s;
    double sy1 = sy + yp, syy1 = syy + yp * yp, sty1 = sty + t * yp;
    double mm = my1 + sy1, lhs, rhs;
    if (anchored) {
      lhs = m1 * (syy1 * stt1 - sty1 * sty1);
      rhs = (cv2 * stt1) * (mm * mm);
    } else {
      double ctt = m1 * stt1 - st1 * st1;
      double cyy = m1 * syy1 - sy1 * sy1;
      double cty = m1 * sty1 - st1 * sy1;
      lhs = cyy * ctt - cty * cty;
      rhs = (cv2 * ctt) * (mm * mm);
    }
    if (!(lhs <= rhs)) break;
    m = m1;
    my0 = my1;
    st = st1;
    stt = stt1;
    sy = sy1;
    syy = syy1;
    sty = sty1;
    t += 1;
  }
  g->s = (pl_sums_t){m, st, stt, sy, syy, sty};
  g->t = t;
  return i;
}

#if LA_COMPACT_X86
/* The same loop, four points per step with AVX2, bit for bit the same
 * arithmetic (docs/compaction.md, "Performance"):
 *  - the data sums (Sy', Sy'^2, St*y') and the m*y0 sum are serial chains;
 *    they stay serial: a vector holds the four accumulators of one point
 *    and takes four dependent adds per block, in index order;
 *  - m, St and St^2 add integers: while St^2 stays <= 2^52 every one of those
 *    additions is exact, so they are computed in closed form for the four
 *    points (any order gives the same exact integers); a block whose St^2
 *    would pass 2^52 goes to the scalar loop;
 *  - the four tests run side by side (lanes = points), with the scalar
 *    loop's expressions; no FMA (contraction is off under -std=c11 and the
 *    target does not include FMA).
 * A block in which any point fails (or is not a number) is handed, from its
 * first point, to the scalar loop with the running sums, which stops at the
 * same point the scalar code alone would have stopped at. */
__attribute__((target("avx2"))) static size_t pl_scan_avx2(pl_seg_t *g,
                                                           const double *x,
                                                           size_t i, size_t n,
                                                           double cv2,
                                                           const int anchored) {
  const __m256d K = _mm256_set_pd(4, 3, 2, 1), J = _mm256_set_pd(3, 2, 1, 0);
  const __m256d C = _mm256_set_pd(6, 3, 1, 0), L = _mm256_set_pd(12, 6, 2, 0);
  const __m256d D = _mm256_set_pd(14, 5, 1, 0), lim = _mm256_set1_pd(0x1p52);
  const __m256d y0v = _mm256_set1_pd(g->y0), cv2v = _mm256_set1_pd(cv2);
  __m256d S = _mm256_set_pd(g->s.m * g->y0, g->s.sty, g->s.syy, g->s.sy);
  __m256d Mb = _mm256_set1_pd(g->s.m), Tb = _mm256_set1_pd(g->t);
  __m256d STb = _mm256_set1_pd(g->s.st), STTb = _mm256_set1_pd(g->s.stt);
  double v[4];

  for (; i + 4 <= n; i += 4) {
    __m256d X = _mm256_loadu_pd(x + i), YP = _mm256_sub_pd(X, y0v);
    __m256d TV = _mm256_add_pd(Tb, J);
    __m256d YY = _mm256_mul_pd(YP, YP), TY = _mm256_mul_pd(TV, YP);
    /* per point k: [y'_k, y'_k^2, t_k*y'_k, y0] */
    __m256d t0 = _mm256_unpacklo_pd(YP, YY), t1 = _mm256_unpackhi_pd(YP, YY);
    __m256d t2 = _mm256_unpacklo_pd(TY, y0v), t3 = _mm256_unpackhi_pd(TY, y0v);
    __m256d S1 = _mm256_add_pd(S, _mm256_permute2f128_pd(t0, t2, 0x20));
    __m256d S2 = _mm256_add_pd(S1, _mm256_permute2f128_pd(t1, t3, 0x20));
    __m256d S3 = _mm256_add_pd(S2, _mm256_permute2f128_pd(t0, t2, 0x31));
    __m256d S4 = _mm256_add_pd(S3, _mm256_permute2f128_pd(t1, t3, 0x31));
    /* back to lanes = points */
    __m256d u0 = _mm256_unpacklo_pd(S1, S2), u1 = _mm256_unpackhi_pd(S1, S2);
    __m256d u2 = _mm256_unpacklo_pd(S3, S4), u3 = _mm256_unpackhi_pd(S3, S4);
    __m256d SY = _mm256_permute2f128_pd(u0, u2, 0x20);
    __m256d STY = _mm256_permute2f128_pd(u0, u2, 0x31);
    __m256d SYY = _mm256_permute2f128_pd(u1, u3, 0x20);
    __m256d MY = _mm256_permute2f128_pd(u1, u3, 0x31);
    /* exact integer sums in closed form */
    __m256d M1 = _mm256_add_pd(Mb, K);
    __m256d ST1 = _mm256_add_pd(STb, _mm256_add_pd(_mm256_mul_pd(K, Tb), C));
    __m256d STT1 = _mm256_add_pd(
        STTb, _mm256_add_pd(_mm256_mul_pd(K, _mm256_mul_pd(Tb, Tb)),
                            _mm256_add_pd(_mm256_mul_pd(L, Tb), D)));
    __m256d MM = _mm256_add_pd(MY, SY), lhs, rhs;
    if (anchored) {
      lhs = _mm256_mul_pd(
          M1, _mm256_sub_pd(_mm256_mul_pd(SYY, STT1), _mm256_mul_pd(STY, STY)));
      rhs = _mm256_mul_pd(_mm256_mul_pd(cv2v, STT1), _mm256_mul_pd(MM, MM));
    } else {
      __m256d ctt =
          _mm256_sub_pd(_mm256_mul_pd(M1, STT1), _mm256_mul_pd(ST1, ST1));
      __m256d cyy =
          _mm256_sub_pd(_mm256_mul_pd(M1, SYY), _mm256_mul_pd(SY, SY));
      __m256d cty =
          _mm256_sub_pd(_mm256_mul_pd(M1, STY), _mm256_mul_pd(ST1, SY));
      lhs = _mm256_sub_pd(_mm256_mul_pd(cyy, ctt), _mm256_mul_pd(cty, cty));
      rhs = _mm256_mul_pd(_mm256_mul_pd(cv2v, ctt), _mm256_mul_pd(MM, MM));
    }
    __m256d ok = _mm256_and_pd(_mm256_cmp_pd(lhs, rhs, _CMP_LE_OQ),
                               _mm256_cmp_pd(STT1, lim, _CMP_LE_OQ));
    if (_mm256_movemask_pd(ok) != 0xf) break;
    S = S4;
    Mb = _mm256_add_pd(Mb, _mm256_set1_pd(4));
    Tb = _mm256_add_pd(Tb, _mm256_set1_pd(4));
    STb = _mm256_permute4x64_pd(ST1, 0xff);
    STTb = _mm256_permute4x64_pd(STT1, 0xff);
  }
  _mm256_storeu_pd(v, S);
  g->s.sy = v[0];
  g->s.syy = v[1];
  g->s.sty = v[2];
  g->s.m = _mm256_cvtsd_f64(Mb);
  g->s.st = _mm256_cvtsd_f64(STb);
  g->s.stt = _mm256_cvtsd_f64(STTb);
  g->t = _mm256_cvtsd_f64(Tb);
  return pl_scan(g, x, i, n, cv2, anchored, v[3], 0);
}
#endif

static size_t pl_scan_any(pl_seg_t *g, const double *x, size_t i, size_t n,
                          double cv2, int simd) {
  if (g->sc != 1) /* tiny or huge values: the scaled scalar loop */
    return g->anchored ? pl_scan(g, x, i, n, cv2, 1, g->s.m * g->y0s, 1)
                       : pl_scan(g, x, i, n, cv2, 0, g->s.m * g->y0s, 1);
#if LA_COMPACT_X86
  if (simd && n - i >= 8)
    return g->anchored ? pl_scan_avx2(g, x, i, n, cv2, 1)
                       : pl_scan_avx2(g, x, i, n, cv2, 0);
#endif
  (void)simd;
  return g->anchored ? pl_scan(g, x, i, n, cv2, 1, g->s.m * g->y0, 0)
                     : pl_scan(g, x, i, n, cv2, 0, g->s.m * g->y0, 0);
}

/* Whether x[i] is an isolated spike: finite, and more than LA_COMPACT_SPIKE
 * times the larger of its neighbours, which are finite, positive and within
 * a factor of two of each other (one neighbour at either end of the
 * series). */
static inline int pl_spike(const double *x, size_t n, size_t i) {
  double l = i > 0 ? x[i - 1] : x[i + 1];
  double r = i + 1 < n ? x[i + 1] : x[i - 1];
  double lv = l > r ? l : r, sv = l > r ? r : l;
  return n >= 2 && sv > 0.5 * lv && sv > 0 && lv < INFINITY &&
         x[i] > LA_COMPACT_SPIKE * lv && x[i] < INFINITY;
}

/* The interior test of pl_spike() for x[i] (0 < i < n - 1). */
static inline int pl_spike_in(const double *x, size_t i) {
  double l = x[i - 1], r = x[i + 1], lv = l > r ? l : r, sv = l > r ? r : l;
  return x[i] > LA_COMPACT_SPIKE * lv && sv > 0.5 * lv && sv > 0 &&
         lv < INFINITY && x[i] < INFINITY;
}

/* Runs of equal values (a range or a row probe spreads one measurement
 * evenly over its elements, so every element of it holds the same double).
 * Over such a run the sums grow in closed form, and the bound is tested
 * once, at the run's last point: a segment takes a run whole when the fit
 * still meets the bound there. A run that does not fit whole is scanned
 * point by point, so the segment still closes just before the first point
 * that breaks the bound (maximal, as elsewhere). The bound of a closed
 * segment is the same test on its final sums, and the encoder checks every
 * line against the raw points whatever the segmenter decided. A window of
 * LA__PL_WINDOW points takes this path when la_runs_probe() says so (noisy
 * series pay a few comparisons per window); runs shorter than LA_RUNS_MIN
 * in it are scanned point by point. The fit's arithmetic is scalar (AVX2 only
 * finds where a run ends): the AVX2 and the scalar paths agree. */
/* Extends the segment over x[i..n) run by run while it fits (see above);
 * returns the index of the first point that does not (or n). With nspk (the
 * series' length; 0: outliers off) it also stops at an isolated spike and
 * sets *spike: only a run of one point can be one (a point equal to a
 * neighbour is never above four times it), so no separate scan is needed. */
static size_t pl_scan_runs(pl_seg_t *g, const double *x, size_t i, size_t n,
                           double cv2, int simd, size_t nspk, int *spike) {
  *spike = 0;
  while (i < n) {
    double v = x[i];
    size_t e = la_run_end(x, i, n, simd);
    if (e - i == 1 && nspk && pl_spike(x, nspk, i)) {
      *spike = 1;
      return i;
    }
    if (e - i >= LA_RUNS_MIN) {
      /* points t0 .. t0 + L - 1, each y' = v - y0 */
      double L = (double)(e - i), t0 = g->t, yp = (v - g->y0) * g->sc;
      double dst = L * t0 + L * (L - 1) / 2;
      double dstt =
          L * t0 * t0 + t0 * L * (L - 1) + (L - 1) * L * (2 * L - 1) / 6;
      pl_sums_t o = {
          g->s.m + L,       g->s.st + dst,          g->s.stt + dstt,
          g->s.sy + L * yp, g->s.syy + L * yp * yp, g->s.sty + yp * dst};
      double mean_m = o.m * g->y0s + o.sy, lhs, rhs;
      if (g->anchored) {
        lhs = o.m * (o.syy * o.stt - o.sty * o.sty);
        rhs = cv2 * mean_m * mean_m * o.stt;
      } else {
        double ctt = o.m * o.stt - o.st * o.st;
        double cyy = o.m * o.syy - o.sy * o.sy;
        double cty = o.m * o.sty - o.st * o.sy;
        lhs = cyy * ctt - cty * cty;
        rhs = cv2 * mean_m * mean_m * ctt;
      }
      if (lhs <= rhs) {
        g->s = o;
        g->t += L;
        i = e;
        continue;
      }
    }
    size_t stop = g->sc != 1 ? pl_scan_any(g, x, i, e, cv2, 0)
                  : g->anchored
                      ? pl_scan(g, x, i, e, cv2, 1, g->s.m * g->y0, 0)
                      : pl_scan(g, x, i, e, cv2, 0, g->s.m * g->y0, 0);
    if (stop < e) return stop;
    i = e;
  }
  return i;
}

#if LA_COMPACT_X86
/* First interior index >= i (i >= 1) whose block of four holds a spike, or
 * the first index not examined: four points per step with AVX2. The scalar
 * test then finds the exact index; both agree because the lanes compute the
 * same comparisons. */
__attribute__((target("avx2"))) static size_t pl_spike_skip_avx2(
    const double *x, size_t n, size_t i) {
  const __m256d k = _mm256_set1_pd(LA_COMPACT_SPIKE), h = _mm256_set1_pd(0.5);
  const __m256d z = _mm256_setzero_pd(), inf = _mm256_set1_pd(INFINITY);
  for (; i + 5 <= n; i += 4) {
    __m256d l = _mm256_loadu_pd(x + i - 1), v = _mm256_loadu_pd(x + i);
    __m256d r = _mm256_loadu_pd(x + i + 1);
    __m256d lv = _mm256_max_pd(l, r), sv = _mm256_min_pd(l, r);
    __m256d c =
        _mm256_and_pd(_mm256_cmp_pd(v, _mm256_mul_pd(k, lv), _CMP_GT_OQ),
                      _mm256_cmp_pd(sv, _mm256_mul_pd(h, lv), _CMP_GT_OQ));
    c = _mm256_and_pd(c, _mm256_cmp_pd(sv, z, _CMP_GT_OQ));
    c = _mm256_and_pd(c, _mm256_cmp_pd(lv, inf, _CMP_LT_OQ));
    c = _mm256_and_pd(c, _mm256_cmp_pd(v, inf, _CMP_LT_OQ));
    if (_mm256_movemask_pd(c)) break;
  }
  return i;
}
#endif

/* Points looked ahead for spikes at a time, so that the look-ahead and the
 * fit read the same points while they are in the L1 cache. */
#define LA__PL_WINDOW 2048

/* Index of the first spike in x[i..end), or end. simd: may use AVX2. */
static size_t pl_next_spike(const double *x, size_t n, size_t i, size_t end,
                            int simd) {
  if (n < 2) return end;
  if (i == 0) {
    if (pl_spike(x, n, 0)) return 0;
    i = 1;
  }
#if LA_COMPACT_X86
  if (simd) i = pl_spike_skip_avx2(x, end < n ? end + 1 : n, i);
#endif
  (void)simd;
  for (; i < end && i + 1 < n; i++)
    if (pl_spike_in(x, i)) return i;
  return i < end && pl_spike(x, n, i) ? i : end;
}

/* In rough mode, at point i with no open segment: probes whether a line
 * from i would pay; if it would, leaves rough mode and returns 0 (the caller
 * fits from i). Else writes a quantized run from i and returns its points;
 * a run refused at i (not a multiple of the quantum) also leaves rough mode
 * and returns 0. Negative: an error. */
static int64_t pl_rough(pl_qsel_t *q, la_cenc_t *enc, size_t i, double cv2) {
  const double *x = enc->x;
  size_t n = (size_t)enc->n, end = n - i > PL_Q_PROBE ? i + PL_Q_PROBE : n;
  int64_t w;

  if (end - i >= 3 && isfinite(x[i])) {
    pl_seg_t t;
    size_t len;
    double k = enc->qk;
    uint64_t c;
    t.sc = 0;
    pl_start(&t, enc, 0, i, x[i]);
    len = pl_scan_any(&t, x, i + 1, end, cv2, enc->simd) - i;
    c = la_cenc_qcost(enc, i, len, &k);
    if (len >= 3 && (c == UINT64_MAX ||
                     q->lbytes < PL_Q_LEAVE * la_cenc_qcost_est(enc, c, len)))
      goto fit;
  }
  if ((w = la_cenc_qrun(enc, q->chunk)) < 0) return w;
  if (w == 0) {
    if (++q->misses > PL_Q_MISSES) q->on = 0;
    goto fit;
  }
  q->chunk = q->chunk * 2 > LA_CENC_QRUN_MAX ? LA_CENC_QRUN_MAX : q->chunk * 2;
  return w;
fit:
  q->rough = 0;
  q->seen = 0;
  q->line = q->run = 0;
  return 0;
}

int la_compact_polyline_run(const double *x, size_t n,
                            const la_compact_params_t *p, la_cenc_t *enc) {
  double cv = p->cv, cv2 = (cv * LA_COMPACT_PL_FIT) * (cv * LA_COMPACT_PL_FIT);
  int connected = p->connected != 0, outliers = p->outliers != 0;
  pl_seg_t g;
  pl_sums_t o;
  /* [i, lim) holds no spike; lim is a spike when is_spike; [.., rlim) is
   * classified: runs says whether it is runs of equal values */
  size_t i = 0, lim = 0, rlim = 0, stop;
  int is_spike = 0, runs = 0;
  pl_qsel_t q = {.on = enc->quantum > 0, .lbytes = 6};
  int64_t kept;

  g.s.m = 0;
  g.sc = 1;
  g.regrow = 4 * (uint64_t)n + 4096; /* bounds the work of pl_regrow() */
again:
  while (i < n) {
    double y;

    if (q.rough && g.s.m == 0) {
      int64_t w = pl_rough(&q, enc, i, cv2);
      if (w < 0) return (int)w;
      if (w > 0) {
        i += (size_t)w;
        continue;
      }
    }
    y = x[i];

    if (rlim <= i) {
      rlim = n - i > LA__PL_WINDOW ? i + LA__PL_WINDOW : n;
      runs = la_runs_probe(x + i, rlim - i);
    }
    if (lim < i || (lim == i && !is_spike)) {
      size_t end = n - i > LA__PL_WINDOW ? i + LA__PL_WINDOW : n;
      /* in runs, the run scanner finds the spikes (up to rlim) */
      lim = !outliers ? n
            : runs    ? rlim
                      : pl_next_spike(x, n, i, end, enc->simd);
      is_spike = outliers && !runs && lim < end;
    }
    if (g.s.m == 0) {
      int spike = i == lim ? is_spike : runs && outliers && pl_spike(x, n, i);
      if (!isfinite(y) || spike) {
        la_cenc_verbatim(enc);
      } else {
        pl_start(&g, enc, connected, i, y);
      }
      i++;
      continue;
    }
    stop = lim < rlim ? lim : rlim;
    if (runs) {
      int spk;
      i = pl_scan_runs(&g, x, i, stop, cv2, enc->simd, outliers ? n : 0, &spk);
      if (spk) {
        lim = i;
        is_spike = 1;
      }
    } else {
      i = pl_scan_any(&g, x, i, stop, cv2, enc->simd);
    }
    if (i == n) break;
    if (i == stop && !(i == lim && is_spike))
      continue; /* end of a look-ahead window: look further */
    y = x[i];
    /* The point is a spike, does not fit, or is not finite. */
    int odd = i == lim || !isfinite(y);
    if (!odd && g.s.m + 1 <= (g.anchored ? 1 : 2)) {
      pl_try(&g, g.t, y - g.y0, cv2, &g.s); /* tiny segments always fit */
      g.t += 1;
      i++;
      continue;
    }
    if (odd && outliers && i + 1 < n && isfinite(x[i + 1]) &&
        !pl_spike(x, n, i + 1) &&
        pl_try(&g, g.t + 1, x[i + 1] - g.y0, cv2, &o)) {
      la_cenc_exception(enc, i);
      g.s = o;
      g.t += 2;
      i += 2;
      continue;
    }
    if ((kept = pl_close(&g, enc, cv, cv2, &q)) < 0) return (int)kept;
    if (g.first + (uint64_t)kept != i) { /* closed earlier: look again */
      i = (size_t)(g.first + (uint64_t)kept);
      lim = rlim = 0;
      is_spike = 0;
    }
    /* the next iteration starts a segment (or a run) at i */
  }
  if (g.s.m > 0) {
    if ((kept = pl_close(&g, enc, cv, cv2, &q)) < 0) return (int)kept;
    if (g.first + (uint64_t)kept != n) {
      i = (size_t)(g.first + (uint64_t)kept);
      lim = rlim = 0;
      is_spike = 0;
      goto again;
    }
  }
  return enc->err;
}
