/* SPDX-License-Identifier: BSD-3-Clause */
/* history.c: a rank's representatives and the bound check of a cycle
 * against them (history.h; the design is in docs/history.md).
 *
 * Deliberately not here: what a reference means in the store (the
 * GlobalAgent's store_history.c), and when a trace is logged (worker.c).
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "la_crc32.h"
#include "la_simd.h"
#include "robust.h"

#if LA_COMPACT_X86
#include <immintrin.h>
#endif

typedef struct la_hist_rep {
  int valid;
  uint64_t cycle_tag;
  uint64_t last_use;  /* la_history's clock when last matched or learned */
  double *v;          /* decoded values */
  double *rv;         /* decoded robust weights, or NULL */
  uint64_t *st, *rst; /* their segments' starts (NULL: fixed blocks) */
  size_t n_st, n_rst;
} la_hist_rep_t;

struct la_history {
  pthread_mutex_t mu;
  la_history_budget_t *budget;
  uint64_t n, clock, bytes;
  uint32_t n_reps;
  uint32_t gap, since; /* la_history_take: the learning gap, misses since */
  uint32_t xgap, xsince; /* la_history_exc_due: the same for exceptions */
  int robust;
  la_compact_params_t cp, rcp;
  /* la_history_match_robust: per element, |r - y| <= rrel |r| + rabs
   * (+ rfloor where the measured value is whole timer ticks) */
  double rrel, rabs, rfloor;
  la_hist_rep_t rep[LA_HISTORY_MAX_REPS];
  /* the last refit's values as a decoder gives them (la_compact_recon),
   * for la_history_learn of that trace, or NULL; the trace known by its
   * bytes' address, length and CRC (la__refit_is) */
  double *refit_v;
  uint64_t *refit_st; /* its records' starts (n / 8 at most), or NULL */
  size_t refit_nst;
  const uint8_t *refit_of;
  size_t refit_len;
  uint32_t refit_crc;
};

/* Whether res is the trace the last refit wrote (h->mu held). */
static int la__refit_is(const la_history_t *h, const la_compact_result_t *res) {
  return h->refit_v && h->refit_of == res->bytes &&
         h->refit_len == res->len &&
         h->refit_crc == la_crc32(0, res->bytes, res->len);
}

/* Takes bytes from the budget: 1 when they fit, 0 when not. */
static int la__charge(la_history_budget_t *b, uint64_t bytes) {
  uint64_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED);
  do {
    if (used > b->limit || bytes > b->limit - used) return 0;
  } while (!__atomic_compare_exchange_n(&b->used, &used, used + bytes, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  return 1;
}

la_history_t *la_history_new(la_history_budget_t *budget, uint64_t n,
                             uint32_t reps, const la_compact_params_t *cp,
                             const la_compact_params_t *rcp) {
  if (!budget || !budget->limit || !reps || !n || !cp ||
      n > (UINT64_C(1) << 40))
    return NULL;
  if (reps > LA_HISTORY_MAX_REPS) reps = LA_HISTORY_MAX_REPS;
  uint64_t bytes = (uint64_t)reps * n * (sizeof(double) + 1) * (rcp ? 2 : 1);
  if (!la__charge(budget, bytes)) return NULL;
  la_history_t *h = calloc(1, sizeof *h);
  if (!h || pthread_mutex_init(&h->mu, NULL) != 0) {
    free(h);
    __atomic_fetch_sub(&budget->used, bytes, __ATOMIC_SEQ_CST);
    return NULL;
  }
  h->budget = budget;
  h->bytes = bytes;
  h->n = n;
  h->n_reps = reps;
  h->gap = 1;
  h->xgap = 1;
  h->cp = *cp;
  h->robust = rcp != NULL;
  if (rcp) h->rcp = *rcp;
  /* a robust reference is held to the measured values' bound, on every
   * element instead of on every record */
  int mode = la_compact_effective_mode(cp);
  if (mode == LA_COMPACT_POLYLINE)
    h->rrel = cp->cv;
  else if (mode == LA_COMPACT_MAXERR && cp->relative)
    h->rrel = cp->epsilon;
  else if (mode == LA_COMPACT_MAXERR)
    h->rabs = cp->epsilon;
  return h;
}

void la_history_free(la_history_t *h) {
  if (!h) return;
  for (uint32_t i = 0; i < h->n_reps; i++) {
    free(h->rep[i].v);
    free(h->rep[i].rv);
    free(h->rep[i].st);
    free(h->rep[i].rst);
  }
  free(h->refit_v);
  free(h->refit_st);
  __atomic_fetch_sub(&h->budget->used, h->bytes, __ATOMIC_SEQ_CST);
  pthread_mutex_destroy(&h->mu);
  free(h);
}

/* The polyline check on one block: every value finite on both sides and
 * RMSE(x - y) <= cv |mean x|. */
static int la__block_ok(const double *x, const double *y, uint64_t k,
                        double cv) {
  double sx = 0, se = 0;
  for (uint64_t i = 0; i < k; i++) {
    if (!isfinite(x[i]) || !isfinite(y[i])) return 0;
    double d = x[i] - y[i];
    sx += x[i];
    se += d * d;
  }
  double rmse = sqrt(se / (double)k), mean = fabs(sx / (double)k);
  return rmse <= cv * mean;
}

int la_history_within(const double *x, const double *y, uint64_t n,
                      const la_compact_params_t *p, const uint64_t *starts,
                      size_t n_starts) {
  /* a value that is not finite never matches: checked as each mode goes,
   * so a cycle far from the representative is refused at its first
   * failing block or element, not after a pass over all n */
  int mode = la_compact_effective_mode(p);
  if (mode == LA_COMPACT_LOSSLESS) {
    for (uint64_t i = 0; i < n; i++)
      if (!isfinite(x[i])) return 0;
    return memcmp(x, y, n * sizeof *x) == 0;
  }
  if (mode == LA_COMPACT_MAXERR) {
    for (uint64_t i = 0; i < n; i++) {
      double bound = p->relative ? p->epsilon * fabs(x[i]) : p->epsilon;
      if (!isfinite(x[i]) || !isfinite(y[i]) || !(fabs(x[i] - y[i]) <= bound))
        return 0;
    }
    return 1;
  }
  if (starts) {
    for (size_t k = 0; k < n_starts; k++) {
      uint64_t b = starts[k], e = k + 1 < n_starts ? starts[k + 1] : n;
      if (b >= e || e > n) return 0; /* not a tiling: never trust it */
      if (!la__block_ok(x + b, y + b, e - b, p->cv)) return 0;
    }
    return n_starts > 0 && starts[0] == 0;
  }
  for (uint64_t b = 0; b < n; b += LA_HISTORY_BLOCK) {
    uint64_t k = n - b < LA_HISTORY_BLOCK ? n - b : LA_HISTORY_BLOCK;
    if (!la__block_ok(x + b, y + b, k, p->cv)) return 0;
  }
  return 1;
}

/* Representative i is within bound with error e: kept in *best (with e in
 * *be) when it is the closest so far, by RMSE. */
static void la__consider(uint32_t i, const la_fit_error_t *e, int *best,
                         la_fit_error_t *be) {
  if (*best < 0 || e->rmse < be->rmse) {
    *best = (int)i;
    *be = *e;
  }
}

/* The match's end, under h->mu: the representative best (< 0: none) is
 * used now; its tag and error go to *ref and *err. 1 when there is one. */
static int la__matched(la_history_t *h, int best, const la_fit_error_t *be,
                       uint64_t *ref, la_fit_error_t *err) {
  if (best < 0) return 0;
  h->rep[best].last_use = ++h->clock;
  *ref = h->rep[best].cycle_tag;
  *err = *be;
  return 1;
}

int la_history_match(la_history_t *h, const double *x, const double *rx,
                     uint64_t *ref, la_fit_error_t *err) {
  if (!h || !x) return 0;
  if (rx && !h->robust) return 0;
  pthread_mutex_lock(&h->mu);
  int best = -1;
  la_fit_error_t be = {0, 0, 0};
  for (uint32_t i = 0; i < h->n_reps; i++) {
    la_hist_rep_t *r = &h->rep[i];
    if (!r->valid || (rx && !r->rv)) continue;
    if (!la_history_within(x, r->v, h->n, &h->cp, r->st, r->n_st)) continue;
    if (rx && !la_history_within(rx, r->rv, h->n, &h->rcp, r->rst, r->n_rst))
      continue;
    la_fit_error_t e;
    la_fit_error_measure(x, r->v, h->n, NULL, &e);
    la__consider(i, &e, &best, &be);
  }
  int m = la__matched(h, best, &be, ref, err);
  pthread_mutex_unlock(&h->mu);
  return m;
}

void la_history_set_robust_floor(la_history_t *h, double floor) {
  if (!h || !(floor >= 0) || !isfinite(floor)) return;
  pthread_mutex_lock(&h->mu);
  h->rfloor = floor;
  pthread_mutex_unlock(&h->mu);
}

/* The slack of a robust reference's element of measured value x (q >
 * 0): abs, and the floor (one timer step) where x is one timed interval,
 * a whole number of ticks of q ns (inv = 1 / q), not a share of one
 * spread over cells (a range's). */
static inline double la__slack(double x, double abs, double floor, double q,
                               double inv) {
  return la_robust_whole_ticks(x, q, inv) ? abs + floor : abs;
}

/* The robust reference's bound as la__scan applies it: |r - y| <= rel |r|
 * + abs (+ floor where the measured value x is whole ticks of q ns, inv =
 * 1 / q; x read only when q > 0, else the floor counts everywhere). */
typedef struct {
  double rel, abs, floor, q, inv;
  const double *x;
} la__bound_t;

/* Element i against the robust reference's bound: 0 within; 1 outside
 * (y not finite, or lossless: not equal bit for bit, else |r - y| > rel
 * |r| + slack), an exception the cycle can carry; 2 when r itself is not
 * finite: no reference at all. */
static inline int la__elem(const double *r, const double *y, uint64_t i,
                           int lossless, const la__bound_t *b) {
  if (!isfinite(r[i])) return 2;
  if (!isfinite(y[i])) return 1;
  if (lossless) return memcmp(&r[i], &y[i], sizeof *r) != 0;
  double slack = b->q > 0 ? la__slack(b->x[i], b->abs, b->floor, b->q, b->inv)
                          : b->abs + b->floor;
  return !(fabs(r[i] - y[i]) <= b->rel * fabs(r[i]) + slack);
}

#if LA_COMPACT_X86
/* la__scan's pass over r, y[0..n4) (n4 a multiple of 4, non-lossless):
 * the same operations four at a time (finite as |v| <= DBL_MAX, |r - y|
 * <= rel |r| + slack with a multiply, then an add; whole ticks as
 * la_robust_whole_ticks tells them), so the same elements, and the
 * error's sums over the elements within (max |r - y|, sum of squares, sum
 * of r) into acc. Returns k, or cap + 1 (more than cap elements out, or
 * an r not finite). */
__attribute__((target("avx2"))) static size_t la__scan_avx2(
    const double *r, const double *y, uint64_t n4, const la__bound_t *b,
    uint64_t *idx, size_t cap, double acc[3]) {
  const __m256d m = _mm256_castsi256_pd(
                    _mm256_set1_epi64x(0x7fffffffffffffffLL)),
                vmax = _mm256_set1_pd(DBL_MAX), vrel = _mm256_set1_pd(b->rel),
                vab = _mm256_set1_pd(b->abs),
                vfl = _mm256_set1_pd(b->abs + b->floor),
                vq = _mm256_set1_pd(b->q), vinv = _mm256_set1_pd(b->inv),
                vmagic = _mm256_set1_pd(LA_ROBUST_TICK_MAGIC),
                vlim = _mm256_set1_pd(LA_ROBUST_TICK_LIMIT);
  const int ticks = b->q > 0;
  __m256d mx = _mm256_setzero_pd(), sse = mx, sum = mx;
  size_t k = 0;
  for (uint64_t i = 0; i < n4; i += 4) {
    __m256d vr = _mm256_loadu_pd(r + i), vy = _mm256_loadu_pd(y + i);
    __m256d ar = _mm256_and_pd(vr, m);
    __m256d d = _mm256_and_pd(_mm256_sub_pd(vr, vy), m);
    if (_mm256_movemask_pd(_mm256_cmp_pd(ar, vmax, _CMP_LE_OQ)) != 0xF)
      return cap + 1;
    __m256d slack = vfl;
    if (ticks) { /* la_robust_whole_ticks, four at a time */
      __m256d vx = _mm256_loadu_pd(b->x + i);
      __m256d t = _mm256_mul_pd(vx, vinv);
      __m256d kk = _mm256_sub_pd(_mm256_add_pd(t, vmagic), vmagic);
      __m256d whole =
          _mm256_and_pd(_mm256_cmp_pd(_mm256_and_pd(t, m), vlim, _CMP_LT_OQ),
                        _mm256_cmp_pd(_mm256_mul_pd(kk, vq), vx, _CMP_EQ_OQ));
      slack = _mm256_blendv_pd(vab, vfl, whole);
    }
    __m256d c = _mm256_and_pd(
        _mm256_cmp_pd(_mm256_and_pd(vy, m), vmax, _CMP_LE_OQ),
        _mm256_cmp_pd(d, _mm256_add_pd(_mm256_mul_pd(vrel, ar), slack),
                      _CMP_LE_OQ));
    __m256d din = _mm256_and_pd(d, c);
    mx = _mm256_max_pd(mx, din);
    sse = _mm256_add_pd(sse, _mm256_mul_pd(din, din));
    sum = _mm256_add_pd(sum, vr);
    int mask = _mm256_movemask_pd(c);
    if (mask == 0xF) continue;
    for (int l = 0; l < 4; l++) {
      if (mask & (1 << l)) continue;
      if (k == cap) return cap + 1;
      idx[k++] = i + (uint64_t)l;
    }
  }
  double a[4], bb[4], c[4];
  _mm256_storeu_pd(a, mx);
  _mm256_storeu_pd(bb, sse);
  _mm256_storeu_pd(c, sum);
  for (int l = 0; l < 4; l++) acc[0] = a[l] > acc[0] ? a[l] : acc[0];
  acc[1] += (bb[0] + bb[1]) + (bb[2] + bb[3]);
  acc[2] += (c[0] + c[1]) + (c[2] + c[3]);
  return k;
}
#endif

/* The elements of r, y[0..n) outside the robust reference's bound
 * (la__elem 1), in order, into idx while at most cap of them, and the
 * error of y against r with them exact (the values a reader of the cycle
 * gets, the cycle's own spliced in: la_fit_error_measure's measures) into
 * *e. Returns their number, or cap + 1 when there are more or an r is not
 * finite (the scan stops there: with cap 0, at the first miss). One pass:
 * the test and the error together. */
static size_t la__scan(const double *r, const double *y, uint64_t n,
                       int lossless, const la__bound_t *b, uint64_t *idx,
                       size_t cap, la_fit_error_t *e) {
  uint64_t i = 0;
  size_t k = 0;
  double acc[3] = {0, 0, 0}; /* max |r - y|, sum of squares, sum of r */
#if LA_COMPACT_X86
  if (!lossless && la_compact_simd()) {
    i = n - n % 4;
    k = la__scan_avx2(r, y, i, b, idx, cap, acc);
    if (k > cap) return k;
  }
#endif
  for (; i < n; i++) {
    int o = la__elem(r, y, i, lossless, b);
    if (o == 2) return cap + 1;
    acc[2] += r[i];
    if (o == 0) {
      double d = fabs(r[i] - y[i]);
      acc[0] = d > acc[0] ? d : acc[0];
      acc[1] += d * d;
      continue;
    }
    if (k == cap) return cap + 1;
    idx[k++] = i;
  }
  double rmse = n ? sqrt(acc[1] / (double)n) : 0;
  e->max_abs = acc[0];
  e->rmse = rmse;
  e->cv = rmse == 0 ? 0 : rmse / fabs(acc[2] / (double)n);
  return k;
}

int la_history_match_robust(la_history_t *h, const double *rx, const double *x,
                            double q, uint64_t *ref, la_fit_error_t *err) {
  size_t k = 0;
  return la_history_match_robust_exc(h, rx, x, q, 0, NULL, &k, ref, err);
}

int la_history_match_robust_exc(la_history_t *h, const double *rx,
                                const double *x, double q, size_t cap,
                                uint64_t *exc, size_t *n_exc, uint64_t *ref,
                                la_fit_error_t *err) {
  *n_exc = 0;
  if (!h || !rx || !h->robust) return 0;
  if (!exc) cap = 0;
  if (!x || !(q > 0) || !isfinite(q)) q = 0; /* the floor everywhere */
  pthread_mutex_lock(&h->mu);
  int lossless = la_compact_effective_mode(&h->rcp) == LA_COMPACT_LOSSLESS;
  const la__bound_t bd = {h->rrel, h->rabs, h->rfloor, q, q > 0 ? 1.0 / q : 0,
                          x};
  int best = -1;
  la_fit_error_t be = {0, 0, 0};
  uint64_t none = 0;
  /* on every element: the closest by RMSE (a scan stops at its first
   * miss) */
  for (uint32_t i = 0; i < h->n_reps; i++) {
    la_hist_rep_t *r = &h->rep[i];
    la_fit_error_t e;
    if (r->valid && r->rv &&
        la__scan(rx, r->rv, h->n, lossless, &bd, &none, 0, &e) == 0)
      la__consider(i, &e, &best, &be);
  }
  /* else with exceptions: the most recently used representative within
   * cap of them, each scanned to its end or its cap + 1st miss (a full
   * pass over both series: the first one that holds is taken) */
  size_t k = cap + 1;
  uint64_t tried = 0; /* bit per representative */
  while (best < 0 && cap > 0) {
    int next = -1;
    for (uint32_t i = 0; i < h->n_reps; i++) {
      la_hist_rep_t *r = &h->rep[i];
      if (r->valid && r->rv && !(tried >> i & 1) &&
          (next < 0 || r->last_use > h->rep[next].last_use))
        next = (int)i;
    }
    if (next < 0) break;
    tried |= UINT64_C(1) << next;
    la_fit_error_t e;
    k = la__scan(rx, h->rep[next].rv, h->n, lossless, &bd, exc, cap, &e);
    if (k <= cap) {
      best = next;
      be = e;
    }
  }
  int m = la__matched(h, best, &be, ref, err);
  if (m) { /* la_history_exc_due starts over */
    h->xgap = 1;
    h->xsince = 0;
  } else if (cap > 0 && h->xgap < LA_HISTORY_MAX_GAP) {
    h->xgap *= 2;
  }
  pthread_mutex_unlock(&h->mu);
  if (m && k <= cap) *n_exc = k;
  return m;
}

int la_history_exc_due(la_history_t *h) {
  if (!h) return 0;
  pthread_mutex_lock(&h->mu);
  int due = ++h->xsince >= h->xgap;
  if (due) h->xsince = 0;
  pthread_mutex_unlock(&h->mu);
  return due;
}

/* Opens a result's bytes (n points) and, when its records are few (at
 * most n / 8), takes their starts into *st (malloc'ed; else NULL: fixed
 * blocks). 0 and *t (la_trace_close), or a negative code. */
static int la__open(const la_compact_result_t *res, uint64_t n,
                    la_trace_t **t, uint64_t **st, size_t *n_st) {
  if (st) {
    *st = NULL;
    *n_st = 0;
  }
  int rc = la_trace_open_max(res->bytes, res->len, n, t, NULL, 0);
  if (rc == 0 && la_trace_count(*t) != n) rc = LA_EPROTO;
  size_t k = rc == 0 ? la_trace_segment_count(*t) : 0;
  if (st && k > 0 && k <= n / 8 && (*st = malloc(k * sizeof **st))) {
    la_trace_segment_t sg;
    for (size_t i = 0; i < k; i++)
      (*st)[i] = la_trace_segment(*t, i, &sg) == 0 ? sg.first : 0;
    *n_st = k;
  }
  if (rc != 0) {
    la_trace_close(*t);
    *t = NULL;
  }
  return rc;
}

/* Decodes a result's bytes into out (n points), with its starts as
 * la__open() takes them (st NULL: not). 0 or a negative code. */
static int la__decode(const la_compact_result_t *res, uint64_t n, double *out,
                      uint64_t **st, size_t *n_st) {
  la_trace_t *t = NULL;
  int rc = la__open(res, n, &t, st, n_st);
  if (rc == 0) rc = la_trace_decode(t, 0, n, out);
  if (rc != 0 && st) {
    free(*st);
    *st = NULL;
    *n_st = 0;
  }
  la_trace_close(t);
  return rc;
}

/* The values of res (n points) into out, with its starts: copied from
 * known, the values a decoder gives (la_compact_recon), when not NULL,
 * with the starts from kst when not NULL (la_compact_recon_starts), else
 * decoded. The encoder's records are the trace's (res->segments is
 * la_trace_segment_count()), so without starts to keep it is not opened.
 * 0 or a negative code. */
static int la__values(const la_compact_result_t *res, const double *known,
                      const uint64_t *kst, uint64_t n, double *out,
                      uint64_t **st, size_t *n_st) {
  if (!known) return la__decode(res, n, out, st, n_st);
  if (res->segments == 0 || res->segments > n / 8 || kst) {
    /* its records (as many as the encoder wrote) are no tiling to keep,
     * or their starts are known: nothing to open (opening parses every
     * record) */
    *st = NULL;
    *n_st = 0;
    if (kst && res->segments > 0 && res->segments <= n / 8 &&
        (*st = malloc(res->segments * sizeof **st)) != NULL) {
      memcpy(*st, kst, res->segments * sizeof **st);
      *n_st = res->segments;
    }
    if (out != known) memcpy(out, known, n * sizeof *out);
    return 0;
  }
  la_trace_t *t = NULL;
  int rc = la__open(res, n, &t, st, n_st);
  la_trace_close(t);
  if (rc == 0 && out != known) memcpy(out, known, n * sizeof *out);
  return rc;
}

int la_history_check(la_history_t *h, const double *x,
                     const la_compact_result_t *rres, uint64_t *ref,
                     la_fit_error_t *err) {
  if (!h || !x) return 0;
  if (!rres) return la_history_match(h, x, NULL, ref, err);
  double *rx = malloc(h->n * sizeof *rx);
  int m = rx && la__decode(rres, h->n, rx, NULL, NULL) == 0 &&
          la_history_match(h, x, rx, ref, err);
  free(rx);
  return m;
}

int la_history_take(la_history_t *h, int matched) {
  if (!h) return 0;
  pthread_mutex_lock(&h->mu);
  int take = 0;
  if (matched) {
    h->gap = 1;
    h->since = 0;
  } else if (++h->since >= h->gap) {
    take = 1;
    h->since = 0;
    if (h->gap < LA_HISTORY_MAX_GAP) h->gap *= 2;
  }
  pthread_mutex_unlock(&h->mu);
  return take;
}

int la_history_refit(la_history_t *h, const double *x,
                     const la_compact_params_t *cp, la_compact_result_t *res) {
  if (!h || !x || !cp || !res) return 0;
  la_compact_params_t p = *cp;
  int mode = la_compact_effective_mode(&p);
  if (mode == LA_COMPACT_LOSSLESS) return 0;
  if (mode == LA_COMPACT_MAXERR)
    p.epsilon *= LA_HISTORY_REP_BOUND;
  else
    p.cv *= LA_HISTORY_REP_BOUND;
  /* the values a decoder gives and the records' starts, for
   * la_history_learn (none without memory for them: it decodes) */
  pthread_mutex_lock(&h->mu);
  double *v = h->refit_v;
  uint64_t *st = h->refit_st;
  h->refit_v = NULL;
  h->refit_st = NULL;
  h->refit_of = NULL;
  pthread_mutex_unlock(&h->mu);
  size_t cap = (size_t)(h->n / 8);
  if (!v) v = malloc(h->n * sizeof *v);
  if (!st && cap) st = malloc(cap * sizeof *st);
  if (!st) cap = 0;
  la_compact_result_t r;
  if ((v ? la_compact_recon_starts(x, h->n, &p, &r, v, st, cap)
         : la_compact(x, h->n, &p, &r)) != 0) {
    free(v);
    free(st);
    return 0;
  }
  la_compact_result_free(res);
  *res = r;
  uint32_t crc = v ? la_crc32(0, r.bytes, r.len) : 0;
  pthread_mutex_lock(&h->mu);
  free(h->refit_v);
  free(h->refit_st);
  h->refit_v = v;
  h->refit_st = st;
  /* starts kept when written (with the reconstruction) and the records
   * tile at most n / 8 (la__open's rule) */
  h->refit_nst =
      v && st && r.segments > 0 && r.segments <= cap ? r.segments : 0;
  h->refit_of = r.bytes;
  h->refit_len = r.len;
  h->refit_crc = crc;
  pthread_mutex_unlock(&h->mu);
  return 1;
}

int la_history_learn(la_history_t *h, uint64_t cycle_tag,
                     const la_compact_result_t *res,
                     const la_compact_result_t *rres) {
  return la_history_learn_recon(h, cycle_tag, res, rres, NULL, NULL);
}

int la_history_learn_recon(la_history_t *h, uint64_t cycle_tag,
                           const la_compact_result_t *res,
                           const la_compact_result_t *rres,
                           const double *rrecon, const uint64_t *rstarts) {
  if (!h) return 0;
  if (!res) return LA_EINVAL;
  uint64_t n = h->n;
  /* the values: the refit's reconstruction when res is that trace (taken,
   * not copied), else decoded */
  pthread_mutex_lock(&h->mu);
  double *v = NULL;
  uint64_t *st = NULL, *rst = NULL;
  size_t n_st = 0, n_rst = 0;
  if (la__refit_is(h, res)) {
    v = h->refit_v;
    if (h->refit_nst) {
      st = h->refit_st;
      n_st = h->refit_nst;
      h->refit_st = NULL;
    }
    h->refit_v = NULL;
    h->refit_of = NULL;
  }
  pthread_mutex_unlock(&h->mu);
  int rc = 0;
  if (!v) {
    v = malloc(n * sizeof *v);
    rc = v ? la__decode(res, n, v, &st, &n_st) : LA_ENOMEM;
  }
  double *rv = rres && h->robust ? malloc(n * sizeof *rv) : NULL;
  if (rc == 0 && rres && h->robust)
    rc = rv ? la__values(rres, rrecon, rrecon ? rstarts : NULL, n, rv, &rst,
                         &n_rst)
            : LA_ENOMEM;
  if (rc != 0) {
    free(v);
    free(rv);
    free(st);
    free(rst);
    return rc;
  }
  pthread_mutex_lock(&h->mu);
  uint32_t slot = 0;
  for (uint32_t i = 0; i < h->n_reps; i++) {
    if (!h->rep[i].valid) {
      slot = i;
      break;
    }
    if (h->rep[i].last_use < h->rep[slot].last_use) slot = i;
  }
  la_hist_rep_t *r = &h->rep[slot];
  free(r->v);
  free(r->rv);
  free(r->st);
  free(r->rst);
  r->v = v;
  r->rv = rv;
  r->st = st;
  r->n_st = n_st;
  r->rst = rst;
  r->n_rst = n_rst;
  r->cycle_tag = cycle_tag;
  r->valid = 1;
  r->last_use = ++h->clock;
  pthread_mutex_unlock(&h->mu);
  return 0;
}

void la_history_robust_params(const la_compact_params_t *cp, double robust_cv,
                              la_compact_params_t *out) {
  *out = *cp;
  if (la_compact_effective_mode(out) == LA_COMPACT_POLYLINE && robust_cv > 0 &&
      robust_cv < out->cv)
    out->cv = robust_cv;
}

uint32_t la_history_count(la_history_t *h) {
  if (!h) return 0;
  pthread_mutex_lock(&h->mu);
  uint32_t k = 0;
  for (uint32_t i = 0; i < h->n_reps; i++) k += h->rep[i].valid != 0;
  pthread_mutex_unlock(&h->mu);
  return k;
}
