/* SPDX-License-Identifier: BSD-3-Clause */
/* weights.c: what partitioners take, computed from a la_traceset_t: dense
 * decoded weights, range sums and range maxima over the global numbering
 * (from the segments, without expanding), METIS integer and Zoltan float
 * weights.
 *
 * Decoding goes through la_trace_decode in chunks, so the integer and float
 * weights need no scratch memory proportional to the set. Missing ranks are
 * NaN in the dense weights and the mean of the present values in the
 * partitioner weights. Every function here reads the weights the set chose
 * (measured or robust, t->robust), each rank's index opened at its first
 * use and kept (la__traceset_index; la__w). Does not validate: traceset.c
 * did, once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"

#define LA__CHUNK 4096 /* values decoded at a time */

/* Rank r's trace of the weights t serves (NULL: missing). 0 or
 * LA_ENOMEM. */
static int la__w(const la_traceset_t *t, uint32_t r, const la_trace_t **tr) {
  return la__traceset_index(t, r, t->robust, tr);
}

int la_traceset_rank_weights(const la_traceset_t *t, uint32_t rank, double *w) {
  if (!t || !w || rank >= t->nprocs) return LA_EINVAL;
  uint64_t n = t->vtx[rank + 1] - t->vtx[rank];
  const la_trace_t *tr;
  int rc = la__w(t, rank, &tr);
  if (rc) return rc;
  if (!tr) {
    for (uint64_t i = 0; i < n; i++) w[i] = NAN;
    return 0;
  }
  return la_trace_decode(tr, 0, n, w);
}

int la_traceset_weights(const la_traceset_t *t, double *w) {
  if (!t || !w) return LA_EINVAL;
  for (uint32_t r = 0; r < t->nprocs; r++) {
    int rc = la_traceset_rank_weights(t, r, w + t->vtx[r]);
    if (rc) return rc;
  }
  return 0;
}

/* Neumaier accumulation. */
typedef struct {
  double s, c;
} la__ksum_t;

static void la__kadd(la__ksum_t *k, double v) {
  double u = k->s + v;
  if (isfinite(u))
    k->c += fabs(k->s) >= fabs(v) ? (k->s - u) + v : (v - u) + k->s;
  k->s = u;
}

static double la__kval(const la__ksum_t *k) {
  return isfinite(k->s) ? k->s + k->c : k->s;
}

/* The rank holding global element g (< total): the last r with vtx[r] <= g
 * and a non-empty range. */
static uint32_t la__rank_of(const la_traceset_t *t, uint64_t g) {
  uint32_t lo = 0, hi = t->nprocs; /* vtx[lo] <= g < vtx[hi] */
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (t->vtx[mid] <= g)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

int la_traceset_range_sum(const la_traceset_t *t, uint64_t first,
                          uint64_t count, double *sum) {
  if (!t || !sum) return LA_EINVAL;
  uint64_t total = t->vtx[t->nprocs];
  if (first > total || count > total - first) return LA_ERANGE;
  la__ksum_t k = {0, 0};
  uint64_t g = first, end = first + count;
  uint32_t r = count ? la__rank_of(t, g) : t->nprocs;
  for (; g < end && r < t->nprocs; r++) {
    uint64_t lo = t->vtx[r], hi = t->vtx[r + 1];
    if (hi <= g) continue; /* empty rank */
    uint64_t stop = end < hi ? end : hi;
    double part = NAN;
    const la_trace_t *tr;
    int rc = la__w(t, r, &tr);
    if (!rc && tr) rc = la_trace_range_sum(tr, g - lo, stop - g, &part);
    if (rc) return rc;
    la__kadd(&k, part);
    g = stop;
  }
  *sum = count ? la__kval(&k) : 0.0;
  return 0;
}

int la__traceset_rank_range_sum(const la_traceset_t *t, uint32_t rank,
                                la_trace_cursor_t *c, uint64_t first,
                                uint64_t count, double *sum) {
  if (!t || !sum || rank >= t->nprocs) return LA_EINVAL;
  const la_trace_t *tr;
  int rc = la__w(t, rank, &tr);
  if (rc) return rc;
  return la__trace_rank_range_sum(tr, t->vtx[rank + 1] - t->vtx[rank], c,
                                  first, count, sum);
}

int la__trace_rank_range_sum(const la_trace_t *tr, uint64_t n,
                             la_trace_cursor_t *c, uint64_t first,
                             uint64_t count, double *sum) {
  if (!sum) return LA_EINVAL;
  if (first > n || count > n - first) return LA_ERANGE;
  *sum = 0;
  if (count == 0) return 0;
  double part = NAN;
  if (tr) {
    int rc = la_trace_range_sum_at(tr, c, first, count, &part);
    if (rc) return rc;
  }
  la__ksum_t k = {0, 0}; /* as la_traceset_range_sum adds its one part */
  la__kadd(&k, part);
  *sum = la__kval(&k);
  return 0;
}

int la_traceset_range_max(const la_traceset_t *t, uint64_t first,
                          uint64_t count, double *max, uint64_t *nfinite) {
  if (!t || !max) return LA_EINVAL;
  uint64_t total = t->vtx[t->nprocs];
  if (first > total || count > total - first) return LA_ERANGE;
  double mx = NAN;
  uint64_t nf = 0, g = first, end = first + count;
  uint32_t r = count ? la__rank_of(t, g) : t->nprocs;
  for (; g < end && r < t->nprocs; r++) {
    uint64_t lo = t->vtx[r], hi = t->vtx[r + 1];
    if (hi <= g) continue; /* empty rank */
    uint64_t stop = end < hi ? end : hi, n = 0;
    double part = NAN;
    const la_trace_t *tr; /* NULL: a missing rank's elements have none */
    int rc = la__w(t, r, &tr);
    if (!rc && tr) rc = la_trace_range_max(tr, g - lo, stop - g, &part, &n);
    if (rc) return rc;
    if (n && (nf == 0 || part > mx)) mx = part;
    nf += n;
    g = stop;
  }
  *max = mx;
  if (nfinite) *nfinite = nf;
  return 0;
}

/* Largest finite value and mean of the finite values of the present ranks.
 * Returns 0, or LA_EINVAL when there is no finite value. */
static int la__scan(const la_traceset_t *t, double *maxv, double *mean) {
  double buf[LA__CHUNK], mx = -INFINITY;
  la__ksum_t k = {0, 0};
  uint64_t nfin = 0;
  for (uint32_t r = 0; r < t->nprocs; r++) {
    const la_trace_t *tr;
    int rc = la__w(t, r, &tr);
    if (rc) return rc;
    if (!tr) continue;
    uint64_t n = t->vtx[r + 1] - t->vtx[r];
    for (uint64_t i = 0; i < n; i += LA__CHUNK) {
      uint64_t m = n - i < LA__CHUNK ? n - i : LA__CHUNK;
      rc = la_trace_decode(tr, i, m, buf);
      if (rc) return rc;
      for (uint64_t j = 0; j < m; j++) {
        if (!isfinite(buf[j])) continue;
        if (buf[j] > mx) mx = buf[j];
        la__kadd(&k, buf[j]);
        nfin++;
      }
    }
  }
  if (nfin == 0) return LA_EINVAL;
  *maxv = mx;
  *mean = la__kval(&k) / (double)nfin;
  return 0;
}

/* Walks every element in global order, handing put() decoded chunks:
 * values v[0..m) of global elements first..first+m, NaN for missing ranks
 * (the callers map non-finite values to the mean). */
typedef void (*la__put_fn)(void *dst, uint64_t first, const double *v,
                           uint64_t m, const void *ctx);

static int la__walk(const la_traceset_t *t, void *dst, la__put_fn put,
                    const void *ctx) {
  double buf[LA__CHUNK];
  for (uint32_t r = 0; r < t->nprocs; r++) {
    uint64_t base = t->vtx[r], n = t->vtx[r + 1] - base;
    const la_trace_t *tr;
    int rc = la__w(t, r, &tr);
    if (rc) return rc;
    for (uint64_t i = 0; i < n; i += LA__CHUNK) {
      uint64_t m = n - i < LA__CHUNK ? n - i : LA__CHUNK;
      if (tr) {
        rc = la_trace_decode(tr, i, m, buf);
        if (rc) return rc;
      } else {
        for (uint64_t j = 0; j < m; j++) buf[j] = NAN;
      }
      put(dst, base + i, buf, m, ctx);
    }
  }
  return 0;
}

typedef struct {
  double scale, mean;
  int64_t maxw;
} la__metis_ctx_t;

/* round(v * scale) clamped to 1..maxw; non-finite v weighs the mean. */
static inline int64_t la__metis_w(double v, const la__metis_ctx_t *x) {
  if (!isfinite(v)) v = x->mean;
  double w = v * x->scale + 0.5; /* round half up: w is clamped first */
  if (!(w >= 1)) return 1;       /* also NaN, and scale 0 */
  if (w >= (double)x->maxw) return x->maxw;
  return (int64_t)w;
}

static void la__put64(void *dst, uint64_t first, const double *v, uint64_t m,
                      const void *ctx) {
  int64_t *o = (int64_t *)dst + first;
  for (uint64_t j = 0; j < m; j++) o[j] = la__metis_w(v[j], ctx);
}

static void la__put32(void *dst, uint64_t first, const double *v, uint64_t m,
                      const void *ctx) {
  int32_t *o = (int32_t *)dst + first;
  for (uint64_t j = 0; j < m; j++) o[j] = (int32_t)la__metis_w(v[j], ctx);
}

static int la__metis(const la_traceset_t *t, void *vwgt, int64_t max_weight,
                     double *scale, la__put_fn put) {
  la__metis_ctx_t x = {0, 0, max_weight};
  double mx;
  int rc = la__scan(t, &mx, &x.mean);
  if (rc) return rc;
  x.scale = mx > 0 ? (double)max_weight / mx : 0.0;
  if (!isfinite(x.scale)) x.scale = 0.0; /* subnormal maximum */
  rc = la__walk(t, vwgt, put, &x);
  if (rc == 0 && scale) *scale = x.scale;
  return rc;
}

int la_traceset_metis_weights(const la_traceset_t *t, int64_t *vwgt,
                              int64_t max_weight, double *scale) {
  if (!t || !vwgt || max_weight < 1 || max_weight > (INT64_C(1) << 53))
    return LA_EINVAL;
  return la__metis(t, vwgt, max_weight, scale, la__put64);
}

int la_traceset_metis_weights32(const la_traceset_t *t, int32_t *vwgt,
                                int32_t max_weight, double *scale) {
  if (!t || !vwgt || max_weight < 1) return LA_EINVAL;
  return la__metis(t, vwgt, max_weight, scale, la__put32);
}

static void la__putf(void *dst, uint64_t first, const double *v, uint64_t m,
                     const void *ctx) {
  double mean = *(const double *)ctx;
  float *o = (float *)dst + first;
  for (uint64_t j = 0; j < m; j++) {
    double x = isfinite(v[j]) ? v[j] : mean;
    o[j] = (float)(x < 0 ? 0 : x);
  }
}

int la_traceset_zoltan_weights(const la_traceset_t *t, float *w) {
  if (!t || !w) return LA_EINVAL;
  double mx, mean;
  int rc = la__scan(t, &mx, &mean);
  if (rc) return rc;
  return la__walk(t, w, la__putf, &mean);
}
