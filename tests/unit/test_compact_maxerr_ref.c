/* test_compact_maxerr_ref.c: the faster max-error segmenter and encoder give
 * the same bytes as the first versions.
 *
 * The first versions of common/la_compact_encode.c and
 * common/la_compact_maxerr.c are kept below, verbatim but for their public
 * names (la_cenc_* -> ref_cenc_*, la_compact_maxerr_* ->
 * ref_compact_maxerr_*), as the reference:
 *  - la_compact() in the max-error mode equals the reference encoding (the
 *    same bytes, segments, exceptions, statistics and achieved error) on
 *    many series: every synthetic kind and size, noise at tolerances from
 *    a thousandth of the values to many times them, special values (NaN,
 *    +-Inf, +-0, subnormals, huge values), with absolute and relative
 *    bounds, tiny, subnormal and huge epsilons, connected or not, outliers
 *    or not; with the AVX2 kernels and with LA_COMPACT_SCALAR=1;
 *  - la_compact_maxerr_lengths() equals the reference lengths with both an
 *    absolute and a relative part in the tolerance;
 *  - for every mode (the polyline segmenter shares the encoder), the
 *    FNV-1a digests of encodings of the synthetic series equal those the
 *    first version produced (golden[] below, computed with it).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact.h"
#if LA_COMPACT_X86
#include <immintrin.h>
#endif

/* ---- common/la_compact_encode.c, first version ---- */


static void ref_cenc_init(la_cenc_t *e, const double *x, uint64_t n, int mode,
                  int flags, double bound) {
  memset(e, 0, sizeof(*e));
  e->x = x;
  e->n = n;
  e->mode = mode;
  e->flags = flags;
  e->bound = bound;
  e->simd = la_compact_simd();
  la_stats_init(&e->stats);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC0);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC1);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC2);
  la_cbuf_put_u8(&e->out, LA_CENC_VERSION);
  la_cbuf_put_u8(&e->out, (uint8_t)mode);
  la_cbuf_put_u8(&e->out, (uint8_t)flags);
  la_cbuf_put_f64(&e->out, bound);
  la_cbuf_put_varint(&e->out, n);
  e->err = e->out.err;
}

static void ref_cenc_free(la_cenc_t *e) {
  la_cbuf_free(&e->out);
  free(e->exc_off);
  e->exc_off = NULL;
  e->nexc = e->exc_cap = 0;
}

static void ref_cenc_exception(la_cenc_t *e, uint64_t index) {
  if (e->nexc == e->exc_cap) {
    size_t cap = e->exc_cap ? 2 * e->exc_cap : 64;
    uint64_t *p = realloc(e->exc_off, cap * sizeof(*p));
    if (p == NULL) {
      e->err = LA_ENOMEM;
      return;
    }
    e->exc_off = p;
    e->exc_cap = cap;
  }
  e->exc_off[e->nexc++] = index - (e->pos + e->run);
}

static void ref_cenc_verbatim(la_cenc_t *e) {
  e->run++;
  e->vertex_ok = 0;
}

static void flush_run(la_cenc_t *e) {
  uint64_t i;

  if (e->run == 0)
    return;
  la_cbuf_put_varint(&e->out, LA_REC_VERBATIM | ((e->run - 1) << LA_REC_SHIFT));
  for (i = 0; i < e->run; i++)
    la_cbuf_put_verbatim(&e->out, e->x[e->pos + i]);
  e->pos += e->run;
  e->segments++;
  e->run = 0;
  e->vertex_ok = 0;
}

/* Quantizes v to k * 2^ex. Returns 0 when |v| / 2^ex >= 2^52. */
static int quantize(double v, int ex, int64_t *k, double *vq) {
  /* ldexp(v, -ex) == v * 2^-ex exactly: |ex| <= LA_QEXP_MAX < 1022 */
  double s = la_floor(v * la_pow2(-ex) + 0.5);

  if (!(fabs(s) < LA_QK_MAX))
    return 0;
  *k = (int64_t)s;
  *vq = s * la_pow2(ex);
  return 1;
}

typedef struct {
  double max, sse, sum;
  uint64_t count;
} chk_t;

/* Accumulators of the check: SSE and the sum of x in four lanes (point j of
 * a run between exceptions goes to lane (j - run start) mod 4), max |error|,
 * and whether every point met its maxerr bound. The scalar and the AVX2
 * loops fill the same lanes in the same order: bit-identical results. */
typedef struct {
  double sse[4], sum[4], max;
  int ok;
} chk_lanes_t;

/* The reconstruction of points [j0, j1) of a line (value base + (j + off) *
 * d, the decoder's arithmetic: j + off counted in a double, exact) against
 * x[j0..j1). tol_abs < 0: polyline (no per-point bound). */
static void chk_run_scalar(const double *x, uint64_t j0, uint64_t j1,
                           double base, double d, uint64_t off, double tol_abs,
                           double tol_rel, chk_lanes_t *c) {
  double tj = (double)(j0 + off), max = c->max;
  uint64_t j;
  int ok = c->ok;

  for (j = j0; j < j1; j++, tj += 1) {
    double v = x[j], err = fabs(base + tj * d - v);
    size_t k = (size_t)(j - j0) & 3;
    if (tol_abs >= 0)
      ok &= err <= tol_abs + tol_rel * fabs(v);
    max = err > max ? err : max;
    c->sse[k] += err * err;
    c->sum[k] += v;
  }
  c->max = max;
  c->ok = ok;
}

#if LA_COMPACT_X86
__attribute__((target("avx2"))) static void
chk_run_avx2(const double *x, uint64_t j0, uint64_t j1, double base, double d,
             uint64_t off, double tol_abs, double tol_rel, chk_lanes_t *c) {
  const __m256d sign = _mm256_set1_pd(-0.0), four = _mm256_set1_pd(4);
  const __m256d bv = _mm256_set1_pd(base), dv = _mm256_set1_pd(d);
  const __m256d ta = _mm256_set1_pd(tol_abs), tr = _mm256_set1_pd(tol_rel);
  double t0 = (double)(j0 + off);
  __m256d tj = _mm256_add_pd(_mm256_set1_pd(t0), _mm256_set_pd(3, 2, 1, 0));
  __m256d sse = _mm256_loadu_pd(c->sse), sum = _mm256_loadu_pd(c->sum);
  __m256d max = _mm256_set1_pd(c->max), ok = _mm256_castsi256_pd(
                                            _mm256_set1_epi64x(-1));
  uint64_t j = j0;
  double m[4];
  int k;

  if (tol_abs >= 0) {
    for (; j + 4 <= j1; j += 4) {
      __m256d v = _mm256_loadu_pd(x + j);
      __m256d err = _mm256_andnot_pd(
          sign, _mm256_sub_pd(_mm256_add_pd(bv, _mm256_mul_pd(tj, dv)), v));
      __m256d tol = _mm256_add_pd(ta, _mm256_mul_pd(tr, _mm256_andnot_pd(sign, v)));
      ok = _mm256_and_pd(ok, _mm256_cmp_pd(err, tol, _CMP_LE_OQ));
      max = _mm256_max_pd(err, max);
      sse = _mm256_add_pd(sse, _mm256_mul_pd(err, err));
      sum = _mm256_add_pd(sum, v);
      tj = _mm256_add_pd(tj, four);
    }
  } else {
    for (; j + 4 <= j1; j += 4) {
      __m256d v = _mm256_loadu_pd(x + j);
      __m256d err = _mm256_andnot_pd(
          sign, _mm256_sub_pd(_mm256_add_pd(bv, _mm256_mul_pd(tj, dv)), v));
      max = _mm256_max_pd(err, max);
      sse = _mm256_add_pd(sse, _mm256_mul_pd(err, err));
      sum = _mm256_add_pd(sum, v);
      tj = _mm256_add_pd(tj, four);
    }
  }
  _mm256_storeu_pd(c->sse, sse);
  _mm256_storeu_pd(c->sum, sum);
  _mm256_storeu_pd(m, max);
  for (k = 0; k < 4; k++) /* max does not depend on the order */
    c->max = m[k] > c->max ? m[k] : c->max;
  c->ok &= _mm256_movemask_pd(ok) == 0xf;
  if (j < j1) { /* the tail, in the lanes it would have had */
    chk_lanes_t t = *c;
    double tjs = (double)(j0 + off) + (double)(j - j0);
    for (; j < j1; j++, tjs += 1) {
      double v = x[j], err = fabs(base + tjs * d - v);
      size_t q = (size_t)(j - j0) & 3;
      if (tol_abs >= 0)
        t.ok &= err <= tol_abs + tol_rel * fabs(v);
      t.max = err > t.max ? err : t.max;
      t.sse[q] += err * err;
      t.sum[q] += v;
    }
    *c = t;
  }
}
#endif

/* Compares the line with x[first..first+count) outside exceptions, with the
 * decoder's arithmetic (la_line_value(); the index is counted in a double,
 * which is exact), and measures the error on the way. The self-check and
 * the error measurement are this one pass. */
static int check_line(const la_cenc_t *e, uint64_t first, uint64_t count,
                      double base, double d, uint64_t off, double last,
                      double tol_abs, double tol_rel, chk_t *c) {
  const double *x = e->x + first;
  uint64_t j0 = 0;
  size_t k;
  double sse, sum, err;
  int maxerr = tol_abs >= 0;
  chk_lanes_t L = {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 1};

  for (k = 0; k <= e->nexc; k++) {
    uint64_t j1 = k < e->nexc ? e->exc_off[k] : count - 1;
#if LA_COMPACT_X86
    if (e->simd && j1 - j0 >= 8)
      chk_run_avx2(x, j0, j1, base, d, off, tol_abs, tol_rel, &L);
    else
#endif
      chk_run_scalar(x, j0, j1, base, d, off, tol_abs, tol_rel, &L);
    j0 = j1 + 1;
  }
  sse = (L.sse[0] + L.sse[2]) + (L.sse[1] + L.sse[3]);
  sum = (L.sum[0] + L.sum[2]) + (L.sum[1] + L.sum[3]);
  err = fabs(last - x[count - 1]); /* the last point is never an exception */
  if (maxerr)
    L.ok &= err <= tol_abs + tol_rel * fabs(x[count - 1]);
  L.max = err > L.max ? err : L.max;
  sse += err * err;
  sum += x[count - 1];
  c->count = count - e->nexc;
  if (!L.ok || !(L.max < INFINITY) ||
      (!maxerr && !(sse * (double)c->count <= e->bound * e->bound * sum * sum)))
    return 0;
  c->max = L.max;
  c->sse = sse;
  c->sum = sum;
  return 1;
}

/* Feeds x[stats_pos..end) to the statistics (points of verbatim runs and of
 * lines, in index order, while they are still in cache). */
static void stats_upto(la_cenc_t *e, uint64_t end) {
  if (end > e->stats_pos) {
    la_stats_run(&e->stats, e->x + e->stats_pos, end - e->stats_pos, e->simd);
    e->stats_pos = end;
  }
}

static int ref_cenc_line(la_cenc_t *e, uint64_t count, int anchored, double a, double b,
                 double qmax, double tol_abs, double tol_rel, double *vertex) {
  uint64_t first = e->pos + e->run, off = anchored ? 1 : 0, tag;
  int connected = (e->flags & LA_CENC_F_CONNECTED) != 0, quant = 0, ex = 0;
  int has_b = anchored || count > 1;
  int64_t ka = 0, kb = 0;
  double aq = a, bq = b, base, d;
  chk_t c;
  size_t k;

  if (e->err)
    return e->err;
  if (count == 0 || first + count > e->n ||
      anchored != (connected && e->vertex_ok))
    return e->err = LA_EINVAL; /* a segmenter bug */
  if (qmax > 0 && qmax < INFINITY) {
    uint64_t qb;
    memcpy(&qb, &qmax, 8);
    if (qb >> 52 != 0) { /* normal: the exponent field (frexp's, minus 1) */
      ex = (int)(qb >> 52) - 1023;
    } else {
      (void)frexp(qmax, &ex);
      ex -= 1;
    }
    /* 2^ex <= qmax < 2^(ex+1) */
    quant = ex >= LA_QEXP_MIN && ex <= LA_QEXP_MAX &&
            (anchored || quantize(a, ex, &ka, &aq)) &&
            (!has_b || quantize(b, ex, &kb, &bq));
    if (!quant) {
      aq = a;
      bq = b;
    }
  }
  if (!has_b)
    bq = aq;
  base = anchored ? e->vertex : aq;
  d = anchored    ? (bq - base) / (double)count
      : count > 1 ? (bq - aq) / (double)(count - 1)
                  : 0;
  if (!isfinite(base) || !isfinite(bq) ||
      !check_line(e, first, count, base, d, off, bq, tol_abs, tol_rel, &c)) {
    e->fallbacks++;
    e->run += count;
    e->nexc = 0;
    e->vertex_ok = 0;
    return 0;
  }
  flush_run(e);
  stats_upto(e, first + count);
  tag = (uint64_t)(quant ? LA_REC_QLINE : LA_REC_RLINE) |
        (e->nexc ? LA_REC_EXC : 0) |
        (quant && ex != e->prev_exp ? LA_REC_NEWEXP : 0) |
        ((count - 1) << LA_REC_SHIFT);
  la_cbuf_put_varint(&e->out, tag);
  if (quant) {
    if (ex != e->prev_exp) {
      la_cbuf_put_varint(&e->out, la_zigzag((int64_t)ex - e->prev_exp));
      e->prev_exp = ex;
    }
    if (!anchored) {
      la_cbuf_put_varint(&e->out, la_zigzag(ka - la_qpredict(e->prev, ex)));
      e->prev = aq;
    }
    if (has_b) {
      la_cbuf_put_varint(&e->out, la_zigzag(kb - la_qpredict(e->prev, ex)));
      e->prev = bq;
    }
  } else {
    if (!anchored)
      la_cbuf_put_f64(&e->out, aq);
    if (has_b)
      la_cbuf_put_f64(&e->out, bq);
    e->prev = bq;
  }
  if (e->nexc) {
    la_cbuf_put_varint(&e->out, e->nexc);
    for (k = 0; k < e->nexc; k++) {
      la_cbuf_put_varint(&e->out, k ? e->exc_off[k] - e->exc_off[k - 1] - 1
                                    : e->exc_off[0]);
      la_cbuf_put_verbatim(&e->out, e->x[first + e->exc_off[k]]);
    }
  }
  if (c.max > e->err_max)
    e->err_max = c.max;
  e->err_sse += c.sse;
  e->err_sum += c.sum;
  e->err_count += c.count;
  e->pos += count;
  e->segments++;
  e->exceptions += e->nexc;
  e->nexc = 0;
  e->vertex_ok = 1;
  e->vertex = bq;
  *vertex = bq;
  if (e->out.err)
    e->err = e->out.err;
  return e->err ? e->err : 1;
}

static int ref_cenc_finish(la_cenc_t *e) {
  if (e->err)
    return e->err;
  flush_run(e);
  stats_upto(e, e->n);
  if (e->pos != e->n)
    return e->err = LA_EINVAL; /* a segmenter bug */
  la_cbuf_put_u32(&e->out, la_compact_crc32(0, e->out.p, e->out.len));
  return e->err = e->out.err;
}

/* ---- common/la_compact_maxerr.c, first version ---- */


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
  rc = ref_cenc_line(enc, count, g->anchored, a, b, qmax, c->bound_abs,
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

static int ref_compact_maxerr_run(const double *x, size_t n,
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
        ref_cenc_verbatim(enc);
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
        ref_cenc_exception(enc, i);
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

static long ref_compact_maxerr_lengths(const double *x, size_t n, double tol_abs,
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

/* ------------------------------------------------------------- the tests */

/* la_compact() with the reference segmenter and encoder (maxerr only). */
static int ref_compact(const double *x, size_t n, const la_compact_params_t *p,
                       la_compact_result_t *out) {
  la_cenc_t enc;
  int flags, rc;

  memset(out, 0, sizeof(*out));
  flags = (p->connected ? LA_CENC_F_CONNECTED : 0) |
          (p->outliers ? LA_CENC_F_OUTLIERS : 0) |
          (p->relative ? LA_CENC_F_RELATIVE : 0);
  ref_cenc_init(&enc, x, n, LA_COMPACT_MAXERR, flags, p->epsilon);
  rc = ref_compact_maxerr_run(x, n, p, &enc);
  if (rc == 0)
    rc = ref_cenc_finish(&enc);
  if (rc != 0) {
    ref_cenc_free(&enc);
    return rc;
  }
  la_stats_finish(&enc.stats, n, &out->stats);
  out->mode = LA_COMPACT_MAXERR;
  out->segments = enc.segments;
  out->exceptions = enc.exceptions;
  out->error.max_abs = enc.err_max;
  out->error.rmse = enc.err_count ? sqrt(enc.err_sse / (double)enc.err_count)
                                  : 0;
  out->error.cv = out->error.rmse == 0
                      ? 0
                      : out->error.rmse /
                            fabs(enc.err_sum / (double)enc.err_count);
  out->bytes = enc.out.p;
  out->len = enc.out.len;
  enc.out.p = NULL;
  ref_cenc_free(&enc);
  return 0;
}

static size_t compared;

static void same_as_ref(const double *x, size_t n, double eps, int relative,
                        int connected, int outliers) {
  la_compact_params_t p;
  la_compact_result_t a, b;

  la_compact_params_default(&p);
  p.mode = LA_COMPACT_MAXERR;
  p.epsilon = eps;
  p.relative = relative;
  p.connected = connected;
  p.outliers = outliers;
  if (la_compact_effective_mode(&p) != LA_COMPACT_MAXERR)
    return;
  assert_int_equal(la_compact(x, n, &p, &a), 0);
  assert_int_equal(ref_compact(x, n, &p, &b), 0);
  if (a.len != b.len || memcmp(a.bytes, b.bytes, a.len) != 0)
    fail_msg("encodings differ: n %zu eps %.17g rel %d conn %d out %d", n,
             eps, relative, connected, outliers);
  assert_true(a.segments == b.segments && a.exceptions == b.exceptions);
  assert_memory_equal(&a.stats, &b.stats, sizeof(a.stats));
  assert_memory_equal(&a.error, &b.error, sizeof(a.error));
  la_compact_result_free(&a);
  free(b.bytes);
  compared++;
}

static void all_params(const double *x, size_t n, double scale) {
  static const double abs_f[] = {1e-3, 0.02, 0.05, 0.2, 3};
  static const double rel_e[] = {1e-3, 0.02, 0.1, 0.5};
  size_t k;
  int conn, out;

  for (conn = 0; conn <= 1; conn++)
    for (out = 0; out <= 1; out++) {
      for (k = 0; k < sizeof(abs_f) / sizeof(abs_f[0]); k++)
        same_as_ref(x, n, abs_f[k] * scale, 0, conn, out);
      for (k = 0; k < sizeof(rel_e) / sizeof(rel_e[0]); k++)
        same_as_ref(x, n, rel_e[k], 1, conn, out);
    }
  /* tiny, subnormal and huge epsilons (the fast absolute test's edges) */
  same_as_ref(x, n, 1e-300, 0, 0, 1);
  same_as_ref(x, n, 5e-324, 0, 0, 1);
  same_as_ref(x, n, 0x1p-1022, 0, 0, 1);
  same_as_ref(x, n, 0x1p900, 0, 0, 1);
  same_as_ref(x, n, 1e300, 0, 0, 1);
  same_as_ref(x, n, 1e-300, 1, 0, 1);
  /* exact tolerances on integer data: ties in the comparisons */
  for (k = 0; k < 4; k++) {
    same_as_ref(x, n, ldexp(1, (int)k - 1), 0, 0, 1);
    same_as_ref(x, n, ldexp(1, -(int)k - 1), 1, 0, 1);
    same_as_ref(x, n, ldexp(1, -(int)k - 1), 1, 1, 0);
  }
  /* |y| near eps * 2^36: the fittability limit */
  same_as_ref(x, n, scale * 0x1p-35, 0, 0, 1);
  same_as_ref(x, n, scale * 0x1p-36, 0, 0, 1);
  same_as_ref(x, n, scale * 0x1p-37, 0, 0, 0);
  same_as_ref(x, n, 0x1p-36, 1, 0, 1);
  same_as_ref(x, n, 0x1p-37, 1, 0, 1);
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

static void run_all(void) {
  static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 17, 100, 1001, 5003,
                                 40000};
  uint64_t s = 2024;
  size_t k, i;
  int kind, v;

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
  for (v = 0; v < 8; v++) {
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
    size_t n = 3000 + (size_t)v * 97;
    double *x = malloc(n * sizeof(double));
    double amp = ldexp(1, v % 12 - 6), level = v % 3 == 0 ? 0 : 1000 * v;
    assert_non_null(x);
    for (i = 0; i < n; i++) {
      uint64_t r = la_compact_rand(&s);
      x[i] = level + amp * (la_compact_rand01(&s) - 0.5) +
             (i / 500 % 2 ? 40 * v : 0) + 0.3 * (double)(i % 50);
      if (v % 2)
        x[i] = floor(x[i]);
      if (r % 211 == 0)
        x[i] *= 30;
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
}

static void test_maxerr_equals_reference(void **state) {
  (void)state;
  unsetenv("LA_COMPACT_SCALAR");
  compared = 0;
  run_all();
  setenv("LA_COMPACT_SCALAR", "1", 1);
  assert_int_equal(la_compact_simd(), 0);
  run_all();
  unsetenv("LA_COMPACT_SCALAR");
  print_message("compared %zu encodings with the first version's\n", compared);
  assert_true(compared > 5000);
}

static void test_lengths_equal_reference(void **state) {
  enum { N = 3000 };
  static double x[N];
  static size_t la[N], lb[N];
  uint64_t seed;
  size_t i;

  (void)state;
  for (seed = 1; seed <= 60; seed++) {
    uint64_t s = seed;
    double ta = seed % 3 == 0 ? 0 : la_compact_rand01(&s) * 2;
    double tr = seed % 3 == 1 ? 0 : 0.001 + 0.05 * la_compact_rand01(&s);
    long ga, gb;
    la_compact_synth((int)(seed % LA_SYNTH_KINDS), N, seed, x);
    for (i = 0; i < N; i++)
      x[i] += 3 * (la_compact_rand01(&s) - 0.5);
    ga = la_compact_maxerr_lengths(x, N, ta, tr, la);
    gb = ref_compact_maxerr_lengths(x, N, ta, tr, lb);
    assert_true(ga > 0);
    assert_int_equal(ga, gb);
    assert_memory_equal(la, lb, (size_t)ga * sizeof(size_t));
  }
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603u;
  size_t i;

  for (i = 0; i < n; i++) {
    h ^= p[i];
    h *= 1099511628211u;
  }
  return h;
}

/* FNV-1a of la_compact(synth(kind, size, 77 + kind), spec) as the first
 * version computed them: [kind * 3 + size index][spec]. */
static const uint64_t golden[LA_SYNTH_KINDS * 3][10] = {
    {0x28cd1a9089fb937bu, 0xeaaa13c672d107a6u, 0x8e37852075af8209u, 0x75d710b0ec55dc39u, 0x1a62ef399fd85e86u, 0x6b1877ae560acd0du, 0x769abb7c75fd5d46u, 0xdafed95b44d0f375u, 0x6c0c469d9889e8fcu, 0xd521dbbc680c38e3u},
    {0x6f46b093cb819c73u, 0x6a414d5e0099f8cbu, 0xa3e7399f4e4e5b75u, 0xcf1d2e1ef4943752u, 0x11969e2695056a05u, 0x5f3db80107897390u, 0xc6d9097909d2fafau, 0x9283acdf1bbd9a18u, 0xb3ad65475e285b35u, 0xbbc8db2ea697b052u},
    {0x87f42ac671ec6c55u, 0x1fd4ef5017369e17u, 0x50f6963daebdf67cu, 0x295222c87dcd2704u, 0x0d30cd958e621480u, 0x85f8006b18963edbu, 0xfc1ef97edab32d17u, 0xf9f12e0b2c6d5a75u, 0x01af697faedb1a0du, 0x5122db728e089208u},
    {0xd9fa23c88ed787c1u, 0xad89a709caf286dfu, 0x880b056e1ecf81a6u, 0x41c4e069a0de9aa9u, 0x820f57fc2728d462u, 0x0ea08a8e26b3a9bdu, 0xf523b2bac46bc093u, 0xf4a9b9661a4d2dd2u, 0x16673febdba69f7du, 0x8305db0c29ec0249u},
    {0x231dd27cd017eeeau, 0x8dc59666383b6bd8u, 0x14b0826c4f686b4fu, 0x539d8ddaab1eeab7u, 0xc18bff5865228b19u, 0x844f261c9e3d35d8u, 0x0fb5462360fdb6f2u, 0x8d4a36e4dc2b3921u, 0x38ae88ed05b31a86u, 0x34a556872c6182c6u},
    {0xfc0046af809ca02fu, 0x1494a41094bbc829u, 0xedaccfabd4519c54u, 0x9cf0f9fcc2acc927u, 0x882b464335262395u, 0x131fba9c6648692au, 0x3128be57d995faefu, 0xae540a71f517ddf3u, 0xa08167075c303b50u, 0x66e5b30f64fe0e07u},
    {0x543b9fe3f0daac20u, 0x89914012e967e8b1u, 0xf8dcc41782b610e2u, 0x821101010d076475u, 0x671ee66c2128594cu, 0x8d5dcd0264c943b3u, 0xa630db7f6803d36bu, 0x9ab5319b695b16f6u, 0x1bd271cfa9088d81u, 0x516b9695291c403au},
    {0x9c7fad763ec8ae27u, 0x966317c4db56fe1au, 0x944447e76147e750u, 0x7b21f263275a90a0u, 0x8b0589ad147f265cu, 0xdd3941ee0fa11ca3u, 0xf44ae58ec0eebec5u, 0xe17739e67214fa72u, 0x193139140bc9031bu, 0x0f8d77073aae34e0u},
    {0x5b6345b1bae9d016u, 0x9823e95d176d3303u, 0x16e311df4e6c86f4u, 0x41e93b56583d9c59u, 0x2e7a83b5ce5c8208u, 0x9049d9862933bddfu, 0x574bead28468dc0bu, 0x6e83ef8dfeffed6eu, 0x4ea2bc9d69b868cau, 0x45cb3a58ef0cb398u},
    {0x616218d8607f2e74u, 0xa3ad2266ef568a22u, 0x80370f9171b5200fu, 0x04da4c20ea4e1364u, 0x720fdf66a94e2ebcu, 0xd9a0ffcf362337d7u, 0x5dba5b877cfab659u, 0xdde14d4a1f61b692u, 0x6f0334cd87f9e475u, 0x437b9facb349f8e2u},
    {0x7fb25c09ffb55620u, 0x1bd630dc50cbba35u, 0x79afc47830819271u, 0x37952e3829b5e01eu, 0x962e3522821f6e69u, 0x1e4460fc8f4d744cu, 0x67fa3fbb6254997au, 0x546dc05acb43a79bu, 0x39ba465a2f69859du, 0x4a436ee9090d08e3u},
    {0x16b8b5f12d4a055bu, 0x411d29c6886cffa3u, 0x8cf0e191ec234a97u, 0x02e27399d32ec079u, 0xfe7748a26f9d0f7fu, 0x29d3f48c7dc5a25au, 0xf132559ab12c7bacu, 0x076ece2e2712ad8du, 0x42c0d027bad35bfau, 0xd8c77b0726ce111du},
    {0x1c53d9fac553c4cfu, 0x65e26f6152844542u, 0x333688baed2b25f1u, 0xfbdb8f5c96cf093eu, 0xb8219fc9224d1716u, 0x371f33098b3fd87cu, 0x98c7c10f50b513eeu, 0xd8329848cdafff0fu, 0x860947710ca5b1bcu, 0xc3cdd212e5389d3au},
    {0xd5c6feec85de89dau, 0x1d1123d51a9f5fdbu, 0x6688ef04abcb1e80u, 0xce1ae97aa2e464d8u, 0xf4a78da3d4a52eadu, 0xe98c00444b6253dcu, 0x53cae0e67b191e4au, 0x757062f95e7542e1u, 0xf76810b68c2deec2u, 0x52e207e93fe1e619u},
    {0xe8f54dc8105c065bu, 0x5de04686e6bbce80u, 0x43e8474a6c13eff1u, 0xde4033e6f83d72f5u, 0x54e1339582ad99a3u, 0x5e75f6b2bf3e91a6u, 0xd1d882ae42638139u, 0xd4743f02dcbf5f94u, 0x2ef2e53b3cb88c2eu, 0xe97bbfe2e3dc0a13u},
    {0x833ab83e00e3cbe1u, 0x0780399bc5067234u, 0xb755d8d876e753c7u, 0xb3bf28c1e2dd54bau, 0xf5afa2f16577f231u, 0x526e6c1f76eba296u, 0x71ac4b9d98226233u, 0x7d2c73e3384fbb6au, 0x409b7635d9cebfdfu, 0x7decce16d37f7f6au},
    {0x43e8ca8e81a0fc3eu, 0x08a3395127699003u, 0x8859bb830bca9510u, 0x443a8733a053483au, 0xc64576053ab7b07bu, 0x3f47b5759d0651e9u, 0xfefbe30afc6494bau, 0xd0bdcd5e2ff8a27eu, 0xe5f06259345d1c1bu, 0x84709f94689ab3b6u},
    {0x9a51d83933c7cff1u, 0x56cfe95fa96a8213u, 0x6d43b9cc8f2d515eu, 0x6d30fb20c7b564a6u, 0xb0b3d1f1d8686c8bu, 0x2fb0e94e00c3da3du, 0x0a3e88054dd6d02au, 0x045285c263806627u, 0x1a0a0e6477530a62u, 0xeaa19437cc63df02u},
    {0xe36d4c0ccd110324u, 0x317d7a7a91ae4b6fu, 0x0a4364d212940b80u, 0x28d7e1c5e5cee8ebu, 0x6482e3d9e45a4016u, 0x8c60e1544159105du, 0xb3a9a6e2b566b10eu, 0xa59e11133f952bebu, 0xf211cb3def81058du, 0x09246cd96414926fu},
    {0xcb2494663369a8c3u, 0x5a6cc53f7d311b86u, 0x1afefcd7d0614b04u, 0xf7aa8df51f5e2fddu, 0x4edda0f752bfe717u, 0xe5612a04843ee000u, 0x6f8c6e0bb59e57bfu, 0xfc5974dda3802e52u, 0x70f1a372d614b55du, 0x81715eb7ac383140u},
    {0xb9d90b71d551f7a6u, 0x2220d41af11afafeu, 0x90cdb35414c43206u, 0xbc95e3ad70bcb48cu, 0xbae2aafcf7342bf7u, 0xb73bdd3677bf2e97u, 0x274404086e089be6u, 0x1071bc2ac184d938u, 0x2d83128125334d26u, 0xc2755354ed45c67bu},
    {0x56378d689b9adaecu, 0x5dd38d78732ba05au, 0x7400583570b61c8cu, 0xb0357238649b6bd5u, 0x764484446916d479u, 0xf6cda71d2c0d2f31u, 0xbb06d6376110db84u, 0x7dccfc2dc46100cau, 0x2da9b4d1b63634fau, 0x88eebb9b50e1e958u},
    {0x7580ca90eebb3f53u, 0xbfd2dbabb604c394u, 0x34a222982f752061u, 0xf7f2c76572b65764u, 0x0d637cd9772f1c39u, 0xd92bbfbbf93e041cu, 0x09c4f2ad934443aau, 0x45200985d222a2b8u, 0x0025f0b74214634cu, 0xbb312e1ef77caa42u},
    {0x7a1076ad8a85d5d3u, 0x066de1b43ce7158eu, 0x6c92316cc417c60au, 0x7b785a56faea6d1fu, 0xd91c23adb69496bau, 0x853d117f0642be30u, 0xeed2d449eefe65c9u, 0xa6f6a3bbcf2597dau, 0x4be64dca1c55f9edu, 0x28dee9906ca24333u},
};

static void test_golden_digests(void **state) {
  static const char *const specs[] = {
      "polyline",
      "polyline:connected",
      "polyline:no-outliers",
      "polyline:cv=0.01",
      "polyline:cv=0.3,connected,no-outliers",
      "maxerr:eps=50",
      "maxerr:eps=0.1,relative",
      "maxerr:eps=5,connected",
      "maxerr:eps=0.01,relative,no-outliers",
      "lossless"};
  static const size_t sizes[] = {7, 1000, 30011};
  int kind, k, q, scalar;

  (void)state;
  for (scalar = 0; scalar <= 1; scalar++) {
    if (scalar)
      setenv("LA_COMPACT_SCALAR", "1", 1);
    for (kind = 0; kind < LA_SYNTH_KINDS; kind++)
      for (k = 0; k < 3; k++) {
        size_t n = sizes[k];
        double *x = malloc(n * sizeof(double));
        assert_non_null(x);
        la_compact_synth(kind, n, 77 + (uint64_t)kind, x);
        /* q < 5: polyline, whose spike rule changed since; its properties
         * are tested in test_compact_polyline.c */
        for (q = 5; q < 10; q++) {
          la_compact_params_t p;
          la_compact_result_t r;
          assert_int_equal(la_compact_spec_parse(specs[q], &p, NULL, 0), 0);
          assert_int_equal(la_compact(x, n, &p, &r), 0);
          if (fnv1a(r.bytes, r.len) != golden[kind * 3 + k][q])
            fail_msg("%s on %s, %zu points: not the first version's bytes",
                     specs[q], la_compact_synth_name(kind), n);
          la_compact_result_free(&r);
        }
        free(x);
      }
    unsetenv("LA_COMPACT_SCALAR");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_maxerr_equals_reference),
      cmocka_unit_test(test_lengths_equal_reference),
      cmocka_unit_test(test_golden_digests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
