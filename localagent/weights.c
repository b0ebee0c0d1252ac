/* SPDX-License-Identifier: BSD-3-Clause */
/* weights.c: a rank's robust weights for its worker jobs (weights.h). */
#include "weights.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_compact.h"
#include "la_simd.h"
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

#if LA_COMPACT_X86
/* la__resolution()'s counts of x, y[0..n - n % 4), four at a time: the
 * same tests in the same operations (la_robust_whole_ticks), so the same
 * counts, without a branch per element (y > 0 and y < fl alternate at
 * random on light cells). */
__attribute__((target("avx2"))) static uint64_t la__resolution_avx2(
    const double *x, const double *y, uint64_t n, double fl, double q,
    double inv, uint64_t *coarse) {
  const __m256d z = _mm256_setzero_pd(), vfl = _mm256_set1_pd(fl),
                vq = _mm256_set1_pd(q), vinv = _mm256_set1_pd(inv),
                vm = _mm256_set1_pd(LA_ROBUST_TICK_MAGIC),
                vlim = _mm256_set1_pd(LA_ROBUST_TICK_LIMIT),
                vabs = _mm256_castsi256_pd(
                    _mm256_set1_epi64x(0x7fffffffffffffffLL));
  __m256i cp = _mm256_setzero_si256(), cc = _mm256_setzero_si256();
  for (uint64_t i = 0; i + 4 <= n; i += 4) {
    __m256d vy = _mm256_loadu_pd(y + i), vx = _mm256_loadu_pd(x + i);
    __m256d pos = _mm256_cmp_pd(vy, z, _CMP_GT_OQ);
    __m256d low = _mm256_and_pd(pos, _mm256_cmp_pd(vy, vfl, _CMP_LT_OQ));
    __m256d t = _mm256_mul_pd(vx, vinv);
    __m256d r = _mm256_sub_pd(_mm256_add_pd(t, vm), vm);
    __m256d whole = _mm256_and_pd(
        _mm256_cmp_pd(_mm256_and_pd(t, vabs), vlim, _CMP_LT_OQ),
        _mm256_cmp_pd(_mm256_mul_pd(r, vq), vx, _CMP_EQ_OQ));
    /* a true comparison is all ones: -1 as an integer */
    cp = _mm256_sub_epi64(cp, _mm256_castpd_si256(pos));
    cc = _mm256_sub_epi64(cc, _mm256_castpd_si256(_mm256_and_pd(low, whole)));
  }
  uint64_t a[4], b[4];
  _mm256_storeu_si256((__m256i *)a, cp);
  _mm256_storeu_si256((__m256i *)b, cc);
  *coarse = b[0] + b[1] + b[2] + b[3];
  return a[0] + a[1] + a[2] + a[3];
}
#endif

/* st->positive and st->coarse of weights y[0..n) for values x[0..n) (q:
 * ns per tick; whole ticks as la_robust_update_ticks tells them). */
static void la__resolution(const la_weights_t *w, const double *x,
                           const double *y, double q, la_robust_stats_t *st) {
  uint64_t pos = 0, coarse = 0, i = 0;
  double fl = q > 0 ? w->floor : 0, inv = q > 0 ? 1.0 / q : 0;
#if LA_COMPACT_X86
  if (la_compact_simd()) {
    pos = la__resolution_avx2(x, y, w->n, fl, q, inv, &coarse);
    i = w->n - w->n % 4;
  }
#endif
  for (; i < w->n; i++) {
    if (!(y[i] > 0)) continue;
    pos++;
    if (y[i] < fl) coarse += la_robust_whole_ticks(x[i], q, inv);
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
  return la_weights_cycle_recon_starts(w, x, flags, cp, res, st, recon, NULL,
                                       0);
}

int la_weights_cycle_recon_starts(la_weights_t *w, const double *x,
                                  const uint8_t *flags,
                                  const la_compact_params_t *cp,
                                  la_compact_result_t *res,
                                  la_robust_stats_t *st, double *recon,
                                  uint64_t *starts, size_t cap) {
  memset(res, 0, sizeof *res);
  double *y = malloc(w->n * sizeof *y);
  if (!y) return LA_ENOMEM;
  pthread_mutex_lock(&w->mu);
  /* the weights in whole ticks where the values are (robust.h) */
  int rc = la_robust_update_ticks(w->r, x, flags, y, st,
                                  cp->quantum > 0 ? cp->quantum : 0);
  pthread_mutex_unlock(&w->mu);
  if (rc == 0 && st) la__resolution(w, x, y, cp->quantum, st);
  la_compact_params_t p = *cp;
  if (la_compact_effective_mode(&p) == LA_COMPACT_POLYLINE && w->cv > 0 &&
      w->cv < p.cv)
    p.cv = w->cv;
  if (rc == 0)
    rc = recon ? la_compact_recon_starts(y, w->n, &p, res, recon,
                                         starts, starts ? cap : 0)
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
