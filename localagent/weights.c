/* SPDX-License-Identifier: BSD-3-Clause */
/* weights.c: a rank's robust weights for its worker jobs (weights.h). */
#include "weights.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "la.h"
#include "la_compact_internal.h"

#if LA_COMPACT_X86
#include <immintrin.h>
#endif

struct la_weights {
  pthread_mutex_t mu; /* serializes la_robust_update */
  uint64_t n;
  double cv; /* polyline bound of the weights, when tighter (0: none) */
  double floor; /* an interval below this is not resolved (ns; 0: none) */
  la_robust_t *r;
};

int la_weights_new(uint64_t n, double timer_res_ns, int detect, double tol,
                   uint32_t confirm, double cv, const uint64_t *grid,
                   size_t n_grid, la_weights_t **out) {
  if (!out) return LA_EINVAL;
  *out = NULL;
  la_robust_params_t p;
  la_robust_params_default(&p);
  p.tol = tol;
  p.confirm = confirm;
  p.detect = detect != 0;
  /* a grid's neighbours, when its dimensions are those of the n elements
   * (the application said so: checked, not trusted) */
  if (grid && n_grid >= 2 && n_grid <= 3) {
    uint64_t prod = 1;
    int ok = 1;
    for (size_t d = 0; d < n_grid && ok; d++)
      ok = grid[d] > 0 && grid[d] <= n && prod <= n / grid[d] &&
           (prod *= grid[d]) > 0;
    if (ok && prod == n) {
      if (grid[1] > 1) p.stride[0] = grid[0];
      if (n_grid == 3 && grid[2] > 1) p.stride[1] = grid[0] * grid[1];
    }
  }
  p.abs_tol = timer_res_ns > 0 ? 2 * timer_res_ns : 0;
  la_weights_t *w = calloc(1, sizeof *w);
  if (!w) return LA_ENOMEM;
  int rc = la_robust_new(n, &p, &w->r);
  if (rc != 0) {
    free(w);
    return rc;
  }
  pthread_mutex_init(&w->mu, NULL);
  w->n = n;
  w->cv = cv > 0 ? cv : 0;
  w->floor = timer_res_ns > 0 ? LA_WEIGHTS_RESOLVED_STEPS * timer_res_ns : 0;
  *out = w;
  return 0;
}

/* Rounds each weight whose measured value x[i] is a whole number of timer
 * ticks (q: ns per tick) to whole ticks: it estimates a count the timer
 * gives in whole ticks, so it stays within half a tick of the estimate,
 * and the compaction stores such weights as integers (the exact quantized
 * path) instead of fitting lines to every rough stretch. A weight whose
 * value is a share of a row or range (row / nx: not whole ticks, and a
 * few ticks per cell at most) keeps its estimate: rounding it could move
 * it by a large part of itself. Values too large for a tick count (ones
 * the application wrote) are left as they are. Rounding is to nearest,
 * ties to even, by adding and subtracting 1.5 * 2^52 (exact for |t| <
 * 2^51): the AVX2 kernel and the scalar loop give the same bits. */
#define LA__TICK_MAGIC 0x1.8p52
#define LA__TICK_LIMIT 0x1p51

static void la__ticks_scalar(double *y, const double *x, uint64_t n, double q,
                             double inv) {
  for (uint64_t i = 0; i < n; i++) {
    double t = x[i] * inv, u = y[i] * inv;
    double rt = (t + LA__TICK_MAGIC) - LA__TICK_MAGIC;
    double ru = (u + LA__TICK_MAGIC) - LA__TICK_MAGIC;
    if (fabs(t) < LA__TICK_LIMIT && fabs(u) < LA__TICK_LIMIT && rt * q == x[i])
      y[i] = ru * q;
  }
}

#if LA_COMPACT_X86
__attribute__((target("avx2"))) static uint64_t la__ticks_avx2(
    double *y, const double *x, uint64_t n, double q, double inv) {
  const __m256d vinv = _mm256_set1_pd(inv), vq = _mm256_set1_pd(q);
  const __m256d magic = _mm256_set1_pd(LA__TICK_MAGIC);
  const __m256d lim = _mm256_set1_pd(LA__TICK_LIMIT);
  const __m256d sign = _mm256_set1_pd(-0.0);
  uint64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d vx = _mm256_loadu_pd(x + i), vy = _mm256_loadu_pd(y + i);
    __m256d t = _mm256_mul_pd(vx, vinv), u = _mm256_mul_pd(vy, vinv);
    __m256d rt = _mm256_sub_pd(_mm256_add_pd(t, magic), magic);
    __m256d ru = _mm256_sub_pd(_mm256_add_pd(u, magic), magic);
    __m256d ok = _mm256_and_pd(
        _mm256_and_pd(
            _mm256_cmp_pd(_mm256_andnot_pd(sign, t), lim, _CMP_LT_OQ),
            _mm256_cmp_pd(_mm256_andnot_pd(sign, u), lim, _CMP_LT_OQ)),
        _mm256_cmp_pd(_mm256_mul_pd(rt, vq), vx, _CMP_EQ_OQ));
    _mm256_storeu_pd(y + i,
                     _mm256_blendv_pd(vy, _mm256_mul_pd(ru, vq), ok));
  }
  return i;
}
#endif

static void la__ticks(double *y, const double *x, uint64_t n, double q) {
  double inv = 1.0 / q;
  uint64_t i = 0;
#if LA_COMPACT_X86
  if (la_compact_simd()) i = la__ticks_avx2(y, x, n, q, inv);
#endif
  la__ticks_scalar(y + i, x + i, n - i, q, inv);
}

/* st->positive and st->coarse of weights y[0..n) for values x[0..n) (q:
 * ns per tick; whole ticks as la__ticks_scalar tells them). */
static void la__resolution(const la_weights_t *w, const double *x,
                           const double *y, double q, la_robust_stats_t *st) {
  uint64_t pos = 0, coarse = 0;
  double fl = q > 0 ? w->floor : 0, inv = q > 0 ? 1.0 / q : 0;
  for (uint64_t i = 0; i < w->n; i++) {
    if (!(y[i] > 0)) continue;
    pos++;
    if (y[i] < fl) {
      double t = x[i] * inv;
      coarse += fabs(t) < LA__TICK_LIMIT &&
                ((t + LA__TICK_MAGIC) - LA__TICK_MAGIC) * q == x[i];
    }
  }
  st->positive = pos;
  st->coarse = coarse;
}

int la_weights_cycle(la_weights_t *w, const double *x, const uint8_t *flags,
                     const la_compact_params_t *cp, la_compact_result_t *res,
                     la_robust_stats_t *st) {
  return la_weights_cycle_recon(w, x, flags, cp, res, st, NULL);
}

int la_weights_cycle_recon(la_weights_t *w, const double *x,
                           const uint8_t *flags, const la_compact_params_t *cp,
                           la_compact_result_t *res, la_robust_stats_t *st,
                           double *recon) {
  memset(res, 0, sizeof *res);
  double *y = malloc(w->n * sizeof *y);
  if (!y) return LA_ENOMEM;
  pthread_mutex_lock(&w->mu);
  int rc = la_robust_update(w->r, x, flags, y, st);
  pthread_mutex_unlock(&w->mu);
  if (rc == 0 && st) la__resolution(w, x, y, cp->quantum, st);
  if (rc == 0 && cp->quantum > 0) la__ticks(y, x, w->n, cp->quantum);
  la_compact_params_t p = *cp;
  if (la_compact_effective_mode(&p) == LA_COMPACT_POLYLINE && w->cv > 0 &&
      w->cv < p.cv)
    p.cv = w->cv;
  if (rc == 0)
    rc = recon ? la_compact_recon(y, w->n, &p, res, recon)
               : la_compact(y, w->n, &p, res);
  free(y);
  return rc;
}

void la_weights_free(la_weights_t *w) {
  if (!w) return;
  la_robust_free(w->r);
  pthread_mutex_destroy(&w->mu);
  free(w);
}
