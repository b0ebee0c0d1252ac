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
 * times |y| (relative). A point is fittable when finite, tol > 0 and
 * tol >= 2^-36 |y| (so rounding cannot matter); others are exceptions or
 * verbatim. It does not encode: la_cenc_line() quantizes and checks.
 */
#include <math.h>
#include <stdlib.h>

#include "la_compact.h"

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

/* Adds an interval that hull_fits() accepted. Returns 0 or LA_ENOMEM. */
static int hull_add(me_hull_t *h, double x, double lo, double hi) {
  me_pt_t p1 = {x, hi}, p2 = {x, lo}, s1, s2;
  size_t i, end;

  if (hull_grow(h) != 0)
    return h->err;
  if (h->npts == 0) {
    h->rect[0] = p1;
    h->rect[1] = p2;
    h->upper[0] = p1;
    h->lower[0] = p2;
    h->nu = h->nl = 1;
    h->us = h->ls = 0;
    h->npts = 1;
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
    me_pt_t min = pt_sub(h->lower[h->ls], p1);
    size_t min_i = h->ls;
    for (i = h->ls + 1; i < h->nl; i++) {
      me_pt_t v = pt_sub(h->lower[i], p1);
      if (slope_gt(v, min))
        break;
      min = v;
      min_i = i;
    }
    h->rect[1] = h->lower[min_i];
    h->rect[3] = p1;
    h->ls = min_i;
    end = h->nu;
    while (end >= h->us + 2 &&
           cross(h->upper[end - 2], h->upper[end - 1], p1) <= 0)
      end--;
    h->nu = end;
    h->upper[h->nu++] = p1;
  }
  if (slope_gt(pt_sub(p2, h->rect[0]), s1)) {
    /* p2 raises the minimum slope: pivot on the upper hull */
    me_pt_t max = pt_sub(h->upper[h->us], p2);
    size_t max_i = h->us;
    for (i = h->us + 1; i < h->nu; i++) {
      me_pt_t v = pt_sub(h->upper[i], p2);
      if (slope_lt(v, max))
        break;
      max = v;
      max_i = i;
    }
    h->rect[0] = h->upper[max_i];
    h->rect[2] = p2;
    h->us = max_i;
    end = h->nl;
    while (end >= h->ls + 2 &&
           cross(h->lower[end - 2], h->lower[end - 1], p2) >= 0)
      end--;
    h->nl = end;
    h->lower[h->nl++] = p2;
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
} me_cfg_t;

static double tol_of(const me_cfg_t *c, double y) {
  return c->eps + c->rel * fabs(y);
}

static int fittable(double y, double tol) {
  return isfinite(y) && tol > 0 && tol >= 0x1p-36 * fabs(y);
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
} me_seg_t;

static int seg_fits(const me_seg_t *g, double t, double y, double tol) {
  double lo, hi;

  if (!g->anchored)
    return hull_fits(&g->hull, t, y - tol, y + tol);
  lo = (y - tol - g->v0) / t;
  hi = (y + tol - g->v0) / t;
  return (lo > g->smin ? lo : g->smin) <= (hi < g->smax ? hi : g->smax);
}

static int seg_add(me_seg_t *g, double t, double y, double tol) {
  if (tol < g->tol_min)
    g->tol_min = tol;
  if (!g->anchored)
    return hull_add(&g->hull, t, y - tol, y + tol);
  double lo = (y - tol - g->v0) / t, hi = (y + tol - g->v0) / t;
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
  }
  /* tol_min is eps_min * FIT; the step must stay below eps_min * QSTEP */
  qmax = g->tol_min / LA_COMPACT_ME_FIT * LA_COMPACT_ME_QSTEP;
  rc = la_cenc_line(enc, count, g->anchored, a, b, qmax, c->bound_abs,
                    c->bound_rel, &vertex);
  g->open = 0;
  return rc < 0 ? rc : 0;
}

/* The hot loop of a free segment whose hull has two or more points: the
 * body of seg_fits() + seg_add() (hull_fits(), then hull_add()) for each
 * point of x[i..n) while the point is fittable and fits, with the hull's
 * rectangle and sizes in registers; the same arithmetic in the same order.
 * Returns the index of the first point that is not fittable or does not fit
 * (the caller decides: exception or close), or n. */
static size_t me_scan_free(me_seg_t *g, const double *x, size_t i, size_t n,
                           const me_cfg_t *c) {
  me_hull_t *h = &g->hull;
  me_pt_t r0 = h->rect[0], r1 = h->rect[1], r2 = h->rect[2], r3 = h->rect[3];
  me_pt_t *upper = h->upper, *lower = h->lower;
  size_t nu = h->nu, nl = h->nl, us = h->us, ls = h->ls, cap = h->cap, k, end;
  double t = g->t, tol_min = g->tol_min, eps = c->eps, rel = c->rel;
  uint64_t npts = h->npts;

  for (; i < n; i++) {
    double y = x[i], tol = eps + rel * fabs(y);
    me_pt_t p1, p2, s1, s2;
    if (!fittable(y, tol))
      break;
    p1 = (me_pt_t){t, y + tol};
    p2 = (me_pt_t){t, y - tol};
    s1 = pt_sub(r2, r0);
    s2 = pt_sub(r3, r1);
    if (slope_lt(pt_sub(p1, r2), s1) || slope_gt(pt_sub(p2, r3), s2))
      break; /* hull_fits() says no */
    if (nu >= cap || nl >= cap) {
      h->nu = nu;
      h->nl = nl;
      if (hull_grow(h) != 0)
        break; /* h->err is set; the caller's seg_add() reports it */
      upper = h->upper;
      lower = h->lower;
      cap = h->cap;
    }
    if (tol < tol_min)
      tol_min = tol;
    if (slope_lt(pt_sub(p1, r1), s2)) {
      me_pt_t min = pt_sub(lower[ls], p1);
      size_t min_i = ls;
      for (k = ls + 1; k < nl; k++) {
        me_pt_t v = pt_sub(lower[k], p1);
        if (slope_gt(v, min))
          break;
        min = v;
        min_i = k;
      }
      r1 = lower[min_i];
      r3 = p1;
      ls = min_i;
      end = nu;
      while (end >= us + 2 && cross(upper[end - 2], upper[end - 1], p1) <= 0)
        end--;
      nu = end;
      upper[nu++] = p1;
    }
    if (slope_gt(pt_sub(p2, r0), s1)) {
      me_pt_t max = pt_sub(upper[us], p2);
      size_t max_i = us;
      for (k = us + 1; k < nu; k++) {
        me_pt_t v = pt_sub(upper[k], p2);
        if (slope_lt(v, max))
          break;
        max = v;
        max_i = k;
      }
      r0 = upper[max_i];
      r2 = p2;
      us = max_i;
      end = nl;
      while (end >= ls + 2 && cross(lower[end - 2], lower[end - 1], p2) >= 0)
        end--;
      nl = end;
      lower[nl++] = p2;
    }
    npts++;
    t += 1;
  }
  h->rect[0] = r0;
  h->rect[1] = r1;
  h->rect[2] = r2;
  h->rect[3] = r3;
  h->nu = nu;
  h->nl = nl;
  h->us = us;
  h->ls = ls;
  h->npts = npts;
  g->t = t;
  g->tol_min = tol_min;
  return i;
}

int la_compact_maxerr_run(const double *x, size_t n,
                          const la_compact_params_t *p, la_cenc_t *enc) {
  me_cfg_t c;
  me_seg_t g = {0};
  size_t i = 0;
  int rc = 0;

  c.eps = p->relative ? 0 : p->epsilon * LA_COMPACT_ME_FIT;
  c.rel = p->relative ? p->epsilon * LA_COMPACT_ME_FIT : 0;
  c.bound_abs = p->relative ? 0 : p->epsilon;
  c.bound_rel = p->relative ? p->epsilon : 0;
  c.connected = p->connected != 0;
  c.outliers = p->outliers != 0;
  while (i < n) {
    double y = x[i], tol = tol_of(&c, y);
    int ok = fittable(y, tol), fits;

    if (!g.open) {
      if (!ok)
        la_cenc_verbatim(enc);
      else if ((rc = seg_start(&g, enc, c.connected, i, y, tol)) != 0)
        break;
      i++;
      continue;
    }
    if (ok && !g.anchored && g.hull.npts >= 2) {
      /* the hot loop; it stops at a point that does not fit */
      i = me_scan_free(&g, x, i, n, &c);
      if (g.hull.err) {
        rc = g.hull.err;
        break;
      }
      if (i == n)
        break;
      fits = 0;
    } else {
      fits = ok && seg_fits(&g, g.t, y, tol);
    }
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
  me_hull_t h = {0};
  size_t i, first = 0;
  long nseg = 0;

  for (i = 0; i < n; i++) {
    double tol = tol_abs + tol_rel * fabs(x[i]);
    double t = (double)(i - first);
    if (h.npts > 0 && !hull_fits(&h, t, x[i] - tol, x[i] + tol)) {
      lens[nseg++] = i - first;
      first = i;
      h.npts = 0;
      t = 0;
    }
    if (hull_add(&h, t, x[i] - tol, x[i] + tol) != 0) {
      nseg = LA_ENOMEM;
      break;
    }
  }
  if (nseg >= 0 && n > 0)
    lens[nseg++] = n - first;
  free(h.upper);
  free(h.lower);
  return nseg;
}
