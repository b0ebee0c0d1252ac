/* SPDX-License-Identifier: BSD-3-Clause */
/* fidelity.c: which weights a Trace-Set serves (measured, or robust with
 * interference removed: docs/fidelity.md), and the per-rank fidelity
 * figures the LocalAgents and RankStarts reported: robust totals,
 * interference, flagged element-cycles, timer resolution, detection status.
 *
 * The robust encodings were parsed and checked when the set was built
 * (traceset.c, which also points the weight functions at one kind or the
 * other: la__traceset_choose); here we switch the kind and read the
 * messages' numbers. Nothing here decodes, does I/O or keeps state
 * outside the set.
 */
#include <math.h>

#include "la_client_internal.h"

int la_traceset_set_weights(la_traceset_t *t, int kind) {
  if (!t || kind < LA_WEIGHTS_DEFAULT || kind > LA_WEIGHTS_ROBUST)
    return LA_EINVAL;
  int robust = la__traceset_choose(t, kind);
  return kind == LA_WEIGHTS_ROBUST && !robust ? LA_ENOTFOUND : 0;
}

int la_traceset_weights_kind(const la_traceset_t *t) {
  return t && t->robust ? LA_WEIGHTS_ROBUST : LA_WEIGHTS_MEASURED;
}

int la_traceset_has_robust(const la_traceset_t *t) {
  return t && t->n_rob > 0 && t->n_rob == t->nprocs - (uint32_t)t->n_missing;
}

int la_traceset_rank_robust_stats(const la_traceset_t *t, uint32_t rank,
                                  double *sum, double *min, double *max) {
  if (!t || rank >= t->nprocs) return LA_EINVAL;
  const La__CompactTrace *ct = t->ct[rank];
  if (!ct || !ct->robust_stats) return LA_ENOTFOUND;
  if (sum) *sum = ct->robust_stats->sum;
  if (min) *min = ct->robust_stats->min;
  if (max) *max = ct->robust_stats->max;
  return 0;
}

int la_traceset_robust_totals(const la_traceset_t *t, double *totals) {
  if (!t || !totals) return LA_EINVAL;
  for (uint32_t r = 0; r < t->nprocs; r++) {
    const La__CompactTrace *ct = t->ct[r];
    totals[r] = ct && ct->robust_stats ? ct->robust_stats->sum : NAN;
  }
  return 0;
}

int la_traceset_robust_imbalance(const la_traceset_t *t, double *imbalance) {
  return la__traceset_imbalance_of(t, 1, imbalance);
}

int la_traceset_rank_interference(const la_traceset_t *t, uint32_t rank,
                                  double *interference, uint64_t *flagged,
                                  double *flagged_time) {
  if (!t || rank >= t->nprocs) return LA_EINVAL;
  const La__CompactTrace *ct = t->ct[rank];
  if (!ct || !(ct->has_interference || ct->has_flagged || ct->has_flagged_time))
    return LA_ENOTFOUND;
  if (interference)
    *interference = ct->has_interference ? ct->interference : NAN;
  if (flagged) *flagged = ct->has_flagged ? ct->flagged : 0;
  if (flagged_time)
    *flagged_time = ct->has_flagged_time ? ct->flagged_time : NAN;
  return 0;
}

double la_traceset_rank_timer_res(const la_traceset_t *t, uint32_t rank) {
  if (!t || rank >= t->nprocs || rank >= t->msg->n_timer_res_ns) return 0;
  return t->msg->timer_res_ns[rank];
}

const char *la_traceset_rank_detection(const la_traceset_t *t, uint32_t rank) {
  if (!t || rank >= t->nprocs || rank >= t->msg->n_detection ||
      !t->msg->detection[rank])
    return "";
  return t->msg->detection[rank];
}
