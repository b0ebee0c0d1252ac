/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_maxerr.c: the max-error segmenter: fewest line segments such
 * that every point's reconstruction lies within its tolerance interval.
 *
 * Disjoint segments use O'Rourke's online method ("An on-line algorithm for
 * fitting straight lines between data ranges", CACM 1981) in the form of
 * Xie et al. (VLDB 2014) as implemented by the PGM-index: the lines that
 * stab every interval so far form a convex region bounded by the extreme-slope
 * lines through the "rectangle" of four hull points; a new interval fits iff
 * it meets both lines, and the upper and lower convex hulls are updated in
 * amortized O(1). Growing every segment as far as it goes is optimal because
 * feasibility is inherited by sub-ranges. The hulls live in two arrays reused
 * between segments (they grow geometrically, never per point).
 *
 * Connected mode anchors each segment at the previous vertex: the feasible
 * slopes form an interval, O(1) per point (greedy, not a global optimum over
 * all connected polylines). The first segment and any segment after a
 * verbatim run are free (hull) segments.
 *
 * Tolerance of point y: tol = eps * LA_COMPACT_ME_FIT (absolute) or that
 * times |y| (relative). A point is fittable when finite, tol >= DBL_MIN
 * and tol >= 2^-36 |y| (so rounding cannot matter); others are exceptions
 * or verbatim. The interval of a point y >= 0 does not go below 0, so
 * non-negative series never decode below 0. It does not encode:
 * la_cenc_line() quantizes and checks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct {
  double x, y;
} me_pt_t;

typedef struct {
  me_pt_t *upper, *lower;
  size_t nu, nl, cap, us, ls;
  me_pt_t rect[4];
  uint64_t npts;
  int err;
} me_hull_t;

static int slope_lt(me_pt_t a, me_pt_t b) { return a.y * b.x < a.x * b.y; }
static int slope_gt(me_pt_t a, me_pt_t b) { return a.y * b.x > a.x * b.y; }
static me_pt_t pt_sub(me_pt_t a, me_pt_t b) {
  return (me_pt_t){a.x - b.x, a.y - b.y};
}
static double cross(me_pt_t o, me_pt_t a, me_pt_t b) {
  return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

static int hull_grow(me_hull_t *h) {
  size_t cap;
  me_pt_t *u, *l;

  if (h->nu < h->cap && h->nl < h->cap)
    return 0;
  cap = h->cap ? 2 * h->cap : 64;
  u = realloc(h->upper, cap * sizeof(*u));
  if (u == NULL)
    return h->err = LA_ENOMEM;
  h->upper = u;
  l = realloc(h->lower, cap * sizeof(*l));
  if (l == NULL)
    return h->err = LA_ENOMEM;
  h->lower = l;
  h->cap = cap;
  return 0;
}

/* Does the interval [lo, hi] at x meet a line that stabs every interval so
 * far? Does not change the hull. */
static int hull_fits(const me_hull_t *h, double x, double lo, double hi) {
  me_pt_t p1 = {x, hi}, p2 = {x, lo};

  if (h->npts < 2)
    return 1;
  return !slope_lt(pt_sub(p1, h->rect[2]), pt_sub(h->rect[2], h->rect[0])) &&
         !slope_gt(pt_sub(p2, h->rect[3]), pt_sub(h->rect[3], h->rect[1]));
}

/* Starts the hull at its first interval, p1 over p2 (room for one point
 * each is the caller's). */
static void hull_open(me_hull_t *h, me_pt_t p1, me_pt_t p2) {
  h->rect[0] = p1;
  h->rect[1] = p2;
  h->upper[0] = p1;
  h->lower[0] = p2;
  h->nu = h->nl = 1;
  h->us = h->ls = 0;
  h->npts = 1;
}

/* One side of a hull update (hull_add()): the point p has moved an extreme
 * line. dir = +1: p is an interval's top and lowers the maximum slope; the
 * line pivots on the lower hull piv (points ps..pn-1) at the last point
 * before the slope from p turns back up, and p goes on the upper hull push
 * (points pst..*npush-1) after the points it leaves non-convex are popped.
 * dir = -1 is the mirror (p a bottom, raising the minimum slope: pivot on the
 * upper hull, push on the lower). Returns the pivot's index. Inlined with a
 * constant dir, each side compiles to straight code (it runs in
 * me_free_scan()'s loop too). */
static inline __attribute__((always_inline)) size_t
hull_side(const me_pt_t *piv, size_t ps, size_t pn, me_pt_t *push, size_t pst,
          size_t *npush, me_pt_t p, int dir) {
  double mx = piv[ps].x - p.x, my = piv[ps].y - p.y, vx, vy;
  size_t m = ps, k, end;

  for (k = ps + 1; k < pn; k++) {
    vx = piv[k].x - p.x, vy = piv[k].y - p.y;
    if (dir > 0 ? vy * mx > vx * my : vy * mx < vx * my)
      break;
    mx = vx, my = vy, m = k;
  }
  end = *npush;
  while (end >= pst + 2 &&
         (dir > 0 ? cross(push[end - 2], push[end - 1], p) <= 0
                  : cross(push[end - 2], push[end - 1], p) >= 0))
    end--;
  push[end] = p;
  *npush = end + 1;
  return m;
}

/* Adds an interval that hull_fits() accepted. Returns 0 or LA_ENOMEM. */
static int hull_add(me_hull_t *h, double x, double lo, double hi) {
  me_pt_t p1 = {x, hi}, p2 = {x, lo}, s1, s2;

  if (hull_grow(h) != 0)
    return h->err;
  if (h->npts == 0) {
    hull_open(h, p1, p2);
    return 0;
  }
  if (h->npts == 1) {
    h->rect[2] = p2;
    h->rect[3] = p1;
    h->upper[h->nu++] = p1;
    h->lower[h->nl++] = p2;
    h->npts = 2;
    return 0;
  }
  s1 = pt_sub(h->rect[2], h->rect[0]);
  s2 = pt_sub(h->rect[3], h->rect[1]);
  if (slope_lt(pt_sub(p1, h->rect[1]), s2)) {
    /* p1 lowers the maximum slope: pivot on the lower hull */
    h->ls = hull_side(h->lower, h->ls, h->nl, h->upper, h->us, &h->nu, p1, 1);
    h->rect[1] = h->lower[h->ls];
    h->rect[3] = p1;
  }
  if (slope_gt(pt_sub(p2, h->rect[0]), s1)) {
    /* p2 raises the minimum slope: pivot on the upper hull */
    h->us = hull_side(h->upper, h->us, h->nu, h->lower, h->ls, &h->nl, p2, -1);
    h->rect[0] = h->upper[h->us];
    h->rect[2] = p2;
  }
  h->npts++;
  return 0;
}

/* A line through the feasible region: through the intersection of the two
 * extreme-slope lines, with the mean of their slopes. Values at x = 0 and
 * x = x_last into *a, *b. */
static void hull_line(const me_hull_t *h, double y_first, double x_last,
                      double *a, double *b) {
  const me_pt_t *r = h->rect;
  me_pt_t s1, s2;
  double den, ix, iy, slope;

  if (h->npts < 2) {
    *a = *b = y_first;
    return;
  }
  s1 = pt_sub(r[2], r[0]);
  s2 = pt_sub(r[3], r[1]);
  den = s1.x * s2.y - s1.y * s2.x;
  slope = (s1.y / s1.x + s2.y / s2.x) / 2;
  if (den != 0) {
    double u = ((r[1].x - r[0].x) * (r[3].y - r[1].y) -
                (r[1].y - r[0].y) * (r[3].x - r[1].x)) /
               den;
    ix = r[0].x + u * s1.x;
    iy = r[0].y + u * s1.y;
  } else { /* parallel extreme lines: the middle of the strip */
    ix = r[0].x;
    iy = (r[0].y + r[1].y + slope * (r[0].x - r[1].x)) / 2;
  }
  *a = iy - ix * slope;
  *b = iy + (x_last - ix) * slope;
}

typedef struct {
  double eps, rel; /* fit tolerance: eps + rel * |y| (one of them is 0) */
  double bound_abs, bound_rel; /* the configured bound, the same way */
  int connected, outliers;
  /* me_lo() may clip: not with a relative tolerance below 1 alone, where
   * y - tol > 0 for every fittable y > 0 (the scan skips the test) */
  int clip;
} me_cfg_t;

static double tol_of(const me_cfg_t *c, double y) {
  return c->eps + c->rel * fabs(y);
}

/* A subnormal tolerance is below the decoder's rounding (its lines move
 * by up to 2^-1075 absolute, and a subnormal eps * |y| is itself rounded by
 * as much): only tolerances of at least DBL_MIN are fitted. */
static int fittable(double y, double tol) {
  return isfinite(y) && tol >= 0x1p-1022 && tol >= 0x1p-36 * fabs(y);
}

/* Lower end of the interval of a point y with tolerance tol: y - tol, but
 * not below 0 when y >= 0, so that a line through the intervals is >= 0 at
 * every point >= 0 (non-negative series never decode below 0). The
 * interval only narrows: the bound still holds. */
static inline double me_lo(double y, double tol) {
  double lo = y - tol;
  return lo < 0 && y >= 0 ? 0 : lo;
}

/* The open segment: a free hull segment, or an anchored slope interval. */
typedef struct {
  me_hull_t hull;
  int open, anchored;
  uint64_t first;
  double t;              /* offset of the next point */
  double y_first;        /* first value (one-point segments) */
  double v0, smin, smax; /* anchored: vertex and slope interval */
  double tol_min;        /* smallest tolerance in the segment */
  uint64_t events;       /* free scan: points that missed or updated */
} me_seg_t;

static int seg_fits(const me_seg_t *g, double t, double y, double tol) {
  double lo, hi;

  if (!g->anchored)
    return hull_fits(&g->hull, t, me_lo(y, tol), y + tol);
  lo = (me_lo(y, tol) - g->v0) / t;
  hi = (y + tol - g->v0) / t;
  return (lo > g->smin ? lo : g->smin) <= (hi < g->smax ? hi : g->smax);
}

static int seg_add(me_seg_t *g, double t, double y, double tol) {
  if (tol < g->tol_min)
    g->tol_min = tol;
  if (!g->anchored)
    return hull_add(&g->hull, t, me_lo(y, tol), y + tol);
  double lo = (me_lo(y, tol) - g->v0) / t, hi = (y + tol - g->v0) / t;
  if (lo > g->smin)
    g->smin = lo;
  if (hi < g->smax)
    g->smax = hi;
  return 0;
}

static int seg_start(me_seg_t *g, const la_cenc_t *enc, int connected,
                     uint64_t i, double y, double tol) {
  g->open = 1;
  g->first = i;
  g->y_first = y;
  g->tol_min = INFINITY;
  g->anchored = connected && enc->vertex_ok;
  g->hull.npts = 0;
  if (g->anchored) {
    g->v0 = enc->vertex;
    g->smin = -INFINITY;
    g->smax = INFINITY;
    g->t = 1;
  } else {
    g->t = 0;
  }
  if (seg_add(g, g->t, y, tol) != 0)
    return g->hull.err;
  g->t += 1;
  return 0;
}

static int seg_close(me_seg_t *g, la_cenc_t *enc, const me_cfg_t *c) {
  double t_last = g->t - 1, a, b, vertex, qmax;
  uint64_t count = (uint64_t)(g->anchored ? t_last : t_last + 1);
  int rc;

  if (g->anchored) {
    a = g->v0;
    b = g->v0 + (g->smin + g->smax) / 2 * t_last;
  } else {
    hull_line(&g->hull, g->y_first, t_last, &a, &b);
    /* the intervals of points >= 0 are >= 0 (me_lo()): an end below 0 at
     * such a point is rounding */
    a = a < 0 && g->y_first >= 0 ? 0 : a;
  }
  b = b < 0 && enc->x[g->first + count - 1] >= 0 ? 0 : b;
  /* tol_min is eps_min * FIT; the step must stay below eps_min * QSTEP */
  qmax = g->tol_min / LA_COMPACT_ME_FIT * LA_COMPACT_ME_QSTEP;
  rc = la_cenc_line(enc, count, g->anchored, a, b, qmax, c->bound_abs,
                    c->bound_rel, &vertex);
  g->open = 0;
  return rc < 0 ? rc : 0;
}

/* ------------------------------------------------ the free-segment scan
 * A free segment from its second point to the point that closes it, in one
 * inlined loop: the second point (hull_add() with one point), then for each
 * point the fit test (hull_fits()), the outlier rule (the next point is
 * tested against the same hull and the missed one becomes an exception),
 * and the update (hull_add() with two or more points). The same arithmetic
 * as those functions, so the same decisions and the same rectangle, bit for
 * bit (tests/unit/test_compact_maxerr_ref.c checks the segment counts
 * against a brute-force optimum); it does less around them:
 *  - a point needs four comparisons against the rectangle of the points
 *    before it: the two of the fit test and the two of hull_add() (does
 *    p1 = (t, y + tol) lower the maximum slope, does p2 = (t, y - tol) raise
 *    the minimum). A point that fails none of them changes nothing but t;
 *  - the rectangle and its extreme slopes s1 = r2 - r0, s2 = r3 - r1 stay in
 *    registers, recomputed only when an update changes them;
 *  - AVX2, bounds other than absolute: four points at a time are tested
 *    against the same rectangle (the lanes of GCC vectors, per lane the
 *    scalar arithmetic), the points before the first one that fails a
 *    comparison are skipped together, and that one is handled alone (the
 *    outlier rule or the update); the next block starts after it. When the
 *    first failure comes within ME_DENSE_GAP points, the next ME_DENSE_RUN
 *    points go one at a time: blocks only pay when quiet points come in runs
 *    (relative 10%: 2% of the points update the hull; absolute 5% of the
 *    mean: 25% do and 7% miss, and single points were measured faster
 *    there, so an absolute bound always goes one point at a time; blocks
 *    are also used only while the previous segment had fewer than one
 *    event per ME_SPARSE points: see me_scan());
 *  - one point at a time, the branches are hull_fits()'s and hull_add()'s:
 *    three rarely taken branches mispredict less than one branch on "any
 *    event" followed by a choice among four;
 *  - the updates keep their branches: the tangent searches and the pops are
 *    short (82% of the searches stop at once, 98% of the updates pop at most
 *    twice on the benchmark's series), and a predicted branch lets the next
 *    point's tests start before the update's loads complete (the same steps
 *    without branches chain each update to the previous one: measured 1.5 ns
 *    per point slower);
 *  - with an absolute bound every tolerance is eps, so tol_min is eps and
 *    fittable(y, eps) is |y| <= eps * 2^36 (exactly, for a normal eps whose
 *    product is finite: ME_ABS below); otherwise the general test;
 *  - the number of points is not counted (only "two or more" matters).
 */
enum { ME_ABS, ME_GEN, ME_RAW }; /* tolerance and fittability test kinds */
/* A block whose first event is fewer than ME_DENSE_GAP points in switches
 * to single points for the next ME_DENSE_RUN points (events are dense: a
 * block would mostly be recomputed), then blocks again. */
#define ME_DENSE_GAP 2
#define ME_DENSE_RUN 8

typedef double me_v2 __attribute__((vector_size(16)));
typedef long long me_m2 __attribute__((vector_size(16)));
typedef double me_v4 __attribute__((vector_size(32)));
typedef long long me_m4 __attribute__((vector_size(32)));
typedef union {
  me_v4 v;
  me_m4 m;
  me_v2 h[2];
  me_m2 hm[2];
} me_u4;

/* Bit k set when lane k of c is true (all ones). */
static inline __attribute__((always_inline)) int me_bits2(me_m2 c) {
#if defined(__SSE2__)
  return _mm_movemask_pd((__m128d)c);
#else
  return (int)(c[0] & 1) | (int)(c[1] & 2);
#endif
}
static inline __attribute__((always_inline)) int me_bits4(const me_m4 *c) {
  me_u4 u;
  u.m = *c;
  return me_bits2(u.hm[0]) | me_bits2(u.hm[1]) << 2;
}
/* l < r (le: l <= r), lane by lane: one AVX comparison (simd), or two
 * halves (what GCC makes of a 4-lane comparison without AVX is slower). */
static inline __attribute__((always_inline)) void
me_cmp4(me_m4 *c, const me_v4 *l, const me_v4 *r, int le, int simd) {
  me_u4 a, b, u;
  if (simd) {
    *c = le ? *l <= *r : *l < *r;
    return;
  }
  a.v = *l; /* (blocks run only with AVX2; this keeps the code portable) */
  b.v = *r;
  u.hm[0] = le ? a.h[0] <= b.h[0] : a.h[0] < b.h[0];
  u.hm[1] = le ? a.h[1] <= b.h[1] : a.h[1] < b.h[1];
  *c = u.m;
}
#define me_lt4(c, l, r, simd) me_cmp4(c, l, r, 0, simd)
#define me_le4(c, l, r, simd) me_cmp4(c, l, r, 1, simd)

/* Lanewise: is the point (T, P) below the line through (RX, RY) with
 * direction (SX, SY), (P - RY) SX < (T - RX) SY (below = 1), or above it
 * (below = 0)? The four slope tests of hull_fits() and hull_add(), for four
 * points at once. */
static inline __attribute__((always_inline)) void me_side4(
    me_m4 *c, const me_v4 *P, const me_v4 *T, const me_v4 *RX, const me_v4 *RY,
    const me_v4 *SX, const me_v4 *SY, int below,
    int simd) { /* vectors by address: no AVX argument-passing ABI */
  me_v4 L = (*P - *RY) * *SX, R = (*T - *RX) * *SY;
  if (below)
    me_lt4(c, &L, &R, simd);
  else
    me_lt4(c, &R, &L, simd);
}

#define ME_TOL(kind, y) ((kind) == ME_ABS ? eps : eps + rel * fabs(y))
#define ME_LO(kind, y, tol)                                                    \
  ((kind) == ME_RAW || !clip ? (y) - (tol) : me_lo(y, tol))
#define ME_FITTABLE(kind, y, tol)                                              \
  ((kind) == ME_ABS   ? fabs(y) <= lim                                         \
   : (kind) == ME_GEN ? fittable(y, tol)                                       \
                      : 1)

/* Returns the index of the first point not in the segment (the caller closes
 * it there), or n. On LA_ENOMEM sets g->hull.err and returns. */
static inline __attribute__((always_inline)) size_t
me_free_scan(me_seg_t *g, const double *x, size_t i, size_t n, double eps,
             double rel, double lim, int kind, int outliers, la_cenc_t *enc,
             int simd, int clip) {
  me_hull_t *h = &g->hull;
  me_pt_t *up = h->upper, *lw = h->lower;
  size_t nu = h->nu, nl = h->nl, us = h->us, ls = h->ls, cap = h->cap;
  double t = g->t, tol_min = g->tol_min, y, tol, hi, lo;
  double s1x, s1y, s2x, s2y;
  me_pt_t r0, r1, r2, r3; /* the rectangle */
  /* the rectangle and slopes broadcast to the four lanes */
  me_v4 R0X, R0Y, R1X, R1Y, R2X, R2Y, R3X, R3Y, S1X, S1Y, S2X, S2Y;
  const me_v4 SIGN = {-0.0, -0.0, -0.0, -0.0}, STEP = {0, 1, 2, 3};
  const me_v4 EPS = {eps, eps, eps, eps}, REL = {rel, rel, rel, rel};
  const me_v4 LIM = {lim, lim, lim, lim}, INF = {INFINITY, INFINITY, INFINITY,
                                                 INFINITY};
  const me_v4 ZERO = {0, 0, 0, 0}, SMALL = {0x1p-36, 0x1p-36, 0x1p-36, 0x1p-36};
  const me_v4 TMIN = {0x1p-1022, 0x1p-1022, 0x1p-1022, 0x1p-1022};
  int miss, ab, dense = 0;
  uint64_t nev = 0;

  if (h->npts < 2) { /* the second point: any fittable one fits */
    if (i >= n)
      return i;
    y = x[i];
    tol = ME_TOL(kind, y);
    if (!ME_FITTABLE(kind, y, tol)) {
      if (!outliers || i + 1 >= n)
        return i;
      y = x[i + 1];
      tol = ME_TOL(kind, y);
      if (!ME_FITTABLE(kind, y, tol))
        return i;
      la_cenc_exception(enc, i);
      i++;
      t += 1;
    }
    if (kind != ME_ABS)
      tol_min = tol < tol_min ? tol : tol_min;
    up[nu++] = (me_pt_t){t, y + tol}; /* cap >= 64 > 2 */
    lw[nl++] = (me_pt_t){t, ME_LO(kind, y, tol)};
    h->npts = 2;
    i++;
    t += 1;
  }
  r0 = up[us], r1 = lw[ls], r2 = lw[nl - 1], r3 = up[nu - 1];

#define ME_SLOPES()                                                            \
  do {                                                                         \
    s1x = r2.x - r0.x, s1y = r2.y - r0.y;                                      \
    s2x = r3.x - r1.x, s2y = r3.y - r1.y;                                      \
    R0X = (me_v4){r0.x, r0.x, r0.x, r0.x};                                     \
    R0Y = (me_v4){r0.y, r0.y, r0.y, r0.y};                                     \
    R1X = (me_v4){r1.x, r1.x, r1.x, r1.x};                                     \
    R1Y = (me_v4){r1.y, r1.y, r1.y, r1.y};                                     \
    R2X = (me_v4){r2.x, r2.x, r2.x, r2.x};                                     \
    R2Y = (me_v4){r2.y, r2.y, r2.y, r2.y};                                     \
    R3X = (me_v4){r3.x, r3.x, r3.x, r3.x};                                     \
    R3Y = (me_v4){r3.y, r3.y, r3.y, r3.y};                                     \
    S1X = (me_v4){s1x, s1x, s1x, s1x};                                         \
    S1Y = (me_v4){s1y, s1y, s1y, s1y};                                         \
    S2X = (me_v4){s2x, s2x, s2x, s2x};                                         \
    S2Y = (me_v4){s2y, s2y, s2y, s2y};                                         \
  } while (0)
/* The four comparisons of one point (t, y +- tol), as hull_fits() and
 * hull_add() write them: miss = fails the fit test, ab = bit 0 p1 lowers
 * the maximum slope, bit 1 p2 raises the minimum. */
#define ME_TEST1(t)                                                            \
  do {                                                                         \
    hi = y + tol;                                                              \
    lo = ME_LO(kind, y, tol);                                                  \
    miss = !ME_FITTABLE(kind, y, tol) || (hi - r2.y) * s1x < (t - r2.x) * s1y || \
           (lo - r3.y) * s2x > (t - r3.x) * s2y;                               \
    ab = ((hi - r1.y) * s2x < (t - r1.x) * s2y) |                              \
         ((lo - r0.y) * s1x > (t - r0.x) * s1y) << 1;                          \
  } while (0)

  ME_SLOPES();
  while (i < n) {
    if (simd && kind != ME_ABS && i + 4 <= n && dense == 0) {
      me_v4 Y, T, TOL, HI, LO, AY;
      me_m4 MISS, A, B, EV, C;
      int bits, j;
      memcpy(&Y, x + i, sizeof(Y));
      T = (me_v4){t, t, t, t} + STEP;
      AY = (me_v4)((me_m4)Y & ~(me_m4)SIGN); /* fabs */
      TOL = kind == ME_ABS ? EPS : EPS + REL * AY;
      HI = Y + TOL;
      LO = Y - TOL;
      if (kind != ME_RAW && clip) { /* me_lo(): 0 where LO < 0 <= Y */
        me_m4 N1, N2;
        me_lt4(&N1, &LO, &ZERO, simd);
        me_le4(&N2, &ZERO, &Y, simd);
        LO = (me_v4)((me_m4)LO & ~(N1 & N2));
      }
      me_side4(&MISS, &HI, &T, &R2X, &R2Y, &S1X, &S1Y, 1, simd);
      me_side4(&C, &LO, &T, &R3X, &R3Y, &S2X, &S2Y, 0, simd);
      MISS |= C;
      if (kind == ME_ABS) { /* not |y| <= lim */
        me_le4(&C, &AY, &LIM, simd);
        MISS |= ~C;
      } else if (kind == ME_GEN) { /* not fittable(y, tol) */
        me_v4 SM = SMALL * AY;
        me_m4 F1, F2, F3;
        me_lt4(&F1, &AY, &INF, simd);  /* isfinite(y) */
        me_le4(&F2, &TMIN, &TOL, simd); /* tol >= DBL_MIN */
        me_le4(&F3, &SM, &TOL, simd);   /* tol >= 2^-36 |y| */
        MISS |= ~(F1 & F2 & F3);
      }
      me_side4(&A, &HI, &T, &R1X, &R1Y, &S2X, &S2Y, 1, simd);
      me_side4(&B, &LO, &T, &R0X, &R0Y, &S1X, &S1Y, 0, simd);
      EV = MISS | A | B;
      bits = me_bits4(&EV);
      if (bits == 0) { /* four quiet points */
        if (kind != ME_ABS) {
          double m4[4];
          memcpy(m4, &TOL, sizeof(m4));
          tol_min = m4[0] < tol_min ? m4[0] : tol_min;
          tol_min = m4[1] < tol_min ? m4[1] : tol_min;
          tol_min = m4[2] < tol_min ? m4[2] : tol_min;
          tol_min = m4[3] < tol_min ? m4[3] : tol_min;
        }
        i += 4;
        t += 4;
        continue;
      }
      j = __builtin_ctz((unsigned)bits);
      if (kind != ME_ABS && j > 0) {
        double m4[4];
        int q;
        memcpy(m4, &TOL, sizeof(m4));
        for (q = 0; q < j; q++)
          tol_min = m4[q] < tol_min ? m4[q] : tol_min;
      }
      i += (size_t)j;
      t += j;
      dense = j < ME_DENSE_GAP ? ME_DENSE_RUN : 0;
      y = x[i];
      tol = ME_TOL(kind, y);
      hi = y + tol;
      lo = ME_LO(kind, y, tol);
      miss = me_bits4(&MISS) >> j & 1;
      ab = (me_bits4(&A) >> j & 1) | (me_bits4(&B) >> j & 1) << 1;
    } else {
      /* one point; the branches of hull_fits() and hull_add() (measured:
       * better than one branch on the four outcomes when they are dense) */
      int a, b;
      dense -= dense > 0;
      y = x[i];
      tol = ME_TOL(kind, y);
      hi = y + tol;
      lo = ME_LO(kind, y, tol);
      miss = !ME_FITTABLE(kind, y, tol) || (hi - r2.y) * s1x < (t - r2.x) * s1y ||
             (lo - r3.y) * s2x > (t - r3.x) * s2y;
      if (!miss) {
        a = (hi - r1.y) * s2x < (t - r1.x) * s2y;
        b = (lo - r0.y) * s1x > (t - r0.x) * s1y;
        if (!(a | b)) {
          if (kind != ME_ABS)
            tol_min = tol < tol_min ? tol : tol_min;
          i++;
          t += 1;
          continue;
        }
        ab = a | b << 1;
      }
    }
    nev++;
    if (miss) {
      /* x[i] misses: the outlier rule tries x[i + 1] one step further */
      double t2 = t + 1;
      if (!outliers || i + 1 >= n)
        break;
      y = x[i + 1];
      tol = ME_TOL(kind, y);
      ME_TEST1(t2);
      if (miss)
        break;
      la_cenc_exception(enc, i);
      i++;
      t = t2;
    }
    /* x[i] is in: hull_add() */
    if (kind != ME_ABS)
      tol_min = tol < tol_min ? tol : tol_min;
    if (ab != 0) {
      me_pt_t p1 = {t, hi}, p2 = {t, lo};
      if (__builtin_expect(nu + 1 >= cap || nl + 1 >= cap, 0)) {
        h->nu = nu;
        h->nl = nl;
        if (hull_grow(h) != 0)
          break;
        up = h->upper;
        lw = h->lower;
        cap = h->cap;
      }
      if (ab & 1) {
        /* p1 lowers the maximum slope: pivot on the lower-hull point of
         * least slope to p1; pop and push p1 on the upper hull */
        ls = hull_side(lw, ls, nl, up, us, &nu, p1, 1);
        r1 = lw[ls];
        r3 = p1;
      }
      if (ab & 2) {
        /* p2 raises the minimum slope: pivot on the upper-hull point of
         * greatest slope to p2; pop and push p2 on the lower hull */
        us = hull_side(up, us, nu, lw, ls, &nl, p2, -1);
        r0 = up[us];
        r2 = p2;
      }
      ME_SLOPES();
    }
    i++;
    t += 1;
  }
#undef ME_SLOPES
#undef ME_TEST1
  h->rect[0] = r0;
  h->rect[1] = r1;
  h->rect[2] = r2;
  h->rect[3] = r3;
  h->nu = nu;
  h->nl = nl;
  h->us = us;
  h->ls = ls;
  g->t = t;
  g->tol_min = tol_min;
  g->events += nev;
  return i;
}

/* Opens a free segment at x[i] (fittable, tolerance tol): hull_add() with
 * no point. The hull has room for 64 points. */
static void me_free_start(me_seg_t *g, size_t i, double y, double tol,
                          int raw) {
  me_hull_t *h = &g->hull;
  me_pt_t p1 = {0, y + tol}, p2 = {0, raw ? y - tol : me_lo(y, tol)};

  g->open = 1;
  g->anchored = 0;
  g->first = i;
  g->y_first = y;
  g->tol_min = tol;
  g->t = 1;
  hull_open(h, p1, p2);
}

__attribute__((noinline)) static size_t
me_scan_abs(me_seg_t *g, const double *x, size_t i, size_t n,
            const me_cfg_t *c, double lim, la_cenc_t *enc) {
  return me_free_scan(g, x, i, n, c->eps, 0, lim, ME_ABS, c->outliers, enc,
                      0, 1);
}

__attribute__((noinline)) static size_t
me_scan_gen(me_seg_t *g, const double *x, size_t i, size_t n,
            const me_cfg_t *c, la_cenc_t *enc) {
  return me_free_scan(g, x, i, n, c->eps, c->rel, 0, ME_GEN, c->outliers, enc,
                      0, c->clip);
}

#if LA_COMPACT_X86
__attribute__((noinline, target("avx2"))) static size_t
me_scan_gen_avx2(me_seg_t *g, const double *x, size_t i, size_t n,
                 const me_cfg_t *c, la_cenc_t *enc) {
  return me_free_scan(g, x, i, n, c->eps, c->rel, 0, ME_GEN, c->outliers, enc,
                      1, c->clip);
}
#endif

/* The scan of a free segment for this configuration and CPU: blocks of four
 * (AVX2) while events are sparse (the previous segment had fewer than one
 * per ME_SPARSE points), else one point at a time. */
#define ME_SPARSE 16
static size_t me_scan(me_seg_t *g, const double *x, size_t i, size_t n,
                      const me_cfg_t *c, double lim, int abs_fast, int sparse,
                      la_cenc_t *enc) {
#if LA_COMPACT_X86
  if (enc->simd && !abs_fast && sparse)
    return me_scan_gen_avx2(g, x, i, n, c, enc);
#endif
  return abs_fast ? me_scan_abs(g, x, i, n, c, lim, enc)
                  : me_scan_gen(g, x, i, n, c, enc);
}

int la_compact_maxerr_run(const double *x, size_t n,
                          const la_compact_params_t *p, la_cenc_t *enc) {
  me_cfg_t c;
  me_seg_t g = {0};
  size_t i = 0;
  double lim = 0;
  int rc = 0, abs_fast, sparse = 0;

  c.eps = p->relative ? 0 : p->epsilon * LA_COMPACT_ME_FIT;
  c.rel = p->relative ? p->epsilon * LA_COMPACT_ME_FIT : 0;
  c.bound_abs = p->relative ? 0 : p->epsilon;
  c.bound_rel = p->relative ? p->epsilon : 0;
  c.connected = p->connected != 0;
  c.outliers = p->outliers != 0;
  c.clip = !(c.eps == 0 && c.rel < 1);
  /* fittable(y, eps) == (|y| <= eps * 2^36) when eps is normal and the
   * product finite (see me_free_scan()) */
  abs_fast = c.rel == 0 && c.eps >= 0x1p-1022 && c.eps < 0x1p900;
  if (abs_fast)
    lim = c.eps * 0x1p36;
  if (hull_grow(&g.hull) != 0) /* room for 64 points before any segment */
    return g.hull.err;
  while (i < n) {
    double y = x[i], tol = tol_of(&c, y);
    int ok = fittable(y, tol), fits;

    if (!g.open) {
      if (!ok) {
        la_cenc_verbatim(enc);
        i++;
        continue;
      }
      if (c.connected && enc->vertex_ok) {
        if ((rc = seg_start(&g, enc, c.connected, i, y, tol)) != 0)
          break;
        i++;
        continue;
      }
      me_free_start(&g, i, y, tol, 0);
      i++;
    }
    if (!g.anchored) {
      /* the whole free segment; it stops at the point that closes it */
      size_t i0 = i;
      g.events = 0;
      i = me_scan(&g, x, i, n, &c, lim, abs_fast, sparse, enc);
      sparse = g.events * ME_SPARSE < i - i0;
      if (g.hull.err) {
        rc = g.hull.err;
        break;
      }
      if ((rc = seg_close(&g, enc, &c)) != 0)
        break;
      continue;
    }
    fits = ok && seg_fits(&g, g.t, y, tol);
    if (fits) {
      if ((rc = seg_add(&g, g.t, y, tol)) != 0)
        break;
      g.t += 1;
      i++;
      continue;
    }
    if (c.outliers && i + 1 < n) {
      double y2 = x[i + 1], tol2 = tol_of(&c, y2);
      if (fittable(y2, tol2) && seg_fits(&g, g.t + 1, y2, tol2)) {
        la_cenc_exception(enc, i);
        if ((rc = seg_add(&g, g.t + 1, y2, tol2)) != 0)
          break;
        g.t += 2;
        i += 2;
        continue;
      }
    }
    if ((rc = seg_close(&g, enc, &c)) != 0)
      break;
  }
  if (rc == 0 && g.open)
    rc = seg_close(&g, enc, &c);
  free(g.hull.upper);
  free(g.hull.lower);
  return rc ? rc : enc->err;
}

long la_compact_maxerr_lengths(const double *x, size_t n, double tol_abs,
                               double tol_rel, size_t *lens) {
  me_seg_t g = {0};
  size_t i = 0, first;
  long nseg = 0;

  if (n > 0 && hull_grow(&g.hull) != 0)
    return LA_ENOMEM;
  while (i < n) {
    first = i;
    me_free_start(&g, i, x[i], tol_abs + tol_rel * fabs(x[i]), 1);
    i = me_free_scan(&g, x, i + 1, n, tol_abs, tol_rel, 0, ME_RAW, 0, NULL,
                     0, 0);
    if (g.hull.err) {
      nseg = LA_ENOMEM;
      break;
    }
    lens[nseg++] = i - first;
  }
  free(g.hull.upper);
  free(g.hull.lower);
  return nseg;
}
