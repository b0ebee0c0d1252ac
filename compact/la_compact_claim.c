/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_claim.c: whether the statistics claimed for a series can be
 * those of the raw series an encoding came from (la_trace_claim_check in
 * la_compact.h; the tolerances are in docs/compaction.md, "Checking claimed
 * statistics"). It reads the totals the check-only parse gathered
 * (la_trace_check_totals); it decodes nothing and trusts nothing claimed.
 */
#include <math.h>
#include <stdio.h>

#include "la_compact.h"
#include "la_errors.h"

/* Rounding room: the claimed sum is Neumaier's in index order, the decoded
 * one a double-double rounded once, so they differ by a few ulps of the
 * absolute sum; subnormal values round by up to 2^-1075 each. */
#define LA__REL_ROUND 0x1p-40
#define LA__ABS_ROUND 0x1p-1060

/* The most the raw finite sum can differ from the decoded one in tot's
 * mode, beyond rounding (docs/compaction.md): -1 when the bound allows any
 * difference (cv or relative epsilon >= 1). */
static double la__mode_slack(const la_trace_totals_t *t) {
  double b = t->bound, s = t->abs_sum;
  switch (t->mode) {
    case LA_COMPACT_POLYLINE: /* |sum - sum'| <= cv |segment sum| */
      return b < 1 ? b / (1 - b) * s : -1;
    case LA_COMPACT_MAXERR:
      /* eps per value; a spread header holds the per-cell eps: a stored
       * row total is within spread times it */
      if (!t->relative) return (double)t->stored * b * (double)t->spread;
      return b < 1 ? b / (1 - b) * s : -1;
    default: /* lossless: exact */
      return 0;
  }
}

static int la__sum_ok(const la_trace_totals_t *t, double sum, const char *f,
                      char *why, size_t why_len) {
  /* non-finite values decode bit-exactly: they decide the class */
  if (t->has_nan || (t->has_pinf && t->has_ninf)) {
    if (isnan(sum)) return 0;
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.sum %g is not NaN, the values include "
                     "NaN or both infinities",
                     f, sum);
  }
  if (t->has_pinf || t->has_ninf) {
    double want = t->has_pinf ? INFINITY : -INFINITY;
    if (sum == want) return 0;
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.sum %g is not %g, the values include "
                     "%g",
                     f, sum, want, want);
  }
  double slack = la__mode_slack(t);
  if (slack < 0) return 0; /* the bound allows any sum */
  double tol = 1.01 * slack + LA__REL_ROUND * t->abs_sum +
               (double)t->stored * LA__ABS_ROUND;
  /* beyond the double range the claim cannot be judged here */
  if (!isfinite(t->sum) || !isfinite(tol) || !isfinite(fabs(t->sum) + tol))
    return 0;
  if (fabs(sum - t->sum) <= tol) return 0; /* false for NaN */
  return la_errorf(why, why_len, LA_EPROTO,
                   "invalid trace: %s.sum %.17g disagrees with the encoding's "
                   "values (sum %.17g, tolerance %.3g)",
                   f, sum, t->sum, tol);
}

/* min and max: ordered, bracketing the mean and every exactly stored
 * number (a spread or pieced trace stores totals of several cells, not
 * cells: only the order and the mean then). */
static int la__range_ok(const la_trace_totals_t *t, const la_series_stats_t *st,
                        const char *f, char *why, size_t why_len) {
  double lo = st->min, hi = st->max;
  int exact = t->spread == 1 && !t->pieced && !isnan(t->exact_min);
  if (isnan(lo) != isnan(hi))
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.min %g and %s.max %g: one is NaN", f,
                     lo, f, hi);
  if (isnan(lo)) {
    if (!exact) return 0;
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.min is NaN (no number), the encoding "
                     "stores %g",
                     f, t->exact_min);
  }
  if (!(lo <= hi))
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.min %g is above %s.max %g", f, lo, f,
                     hi);
  if (exact && (lo > t->exact_min || hi < t->exact_max ||
                (t->mode == LA_COMPACT_LOSSLESS &&
                 (lo != t->exact_min || hi != t->exact_max))))
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.min %g / %s.max %g, the encoding "
                     "stores values from %g to %g",
                     f, lo, f, hi, t->exact_min, t->exact_max);
  double n = (double)st->count, m = fmax(fabs(lo), fabs(hi)) * n;
  if (st->count == 0 || !isfinite(st->sum) || !isfinite(m)) return 0;
  double r = LA__REL_ROUND * m + n * LA__ABS_ROUND;
  if (st->sum < n * lo - r || st->sum > n * hi + r)
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.sum %g is outside %s.count times "
                     "[%s.min, %s.max] = %g x [%g, %g]",
                     f, st->sum, f, f, f, n, lo, hi);
  return 0;
}

int la_trace_claim_check(const la_trace_totals_t *tot,
                         const la_series_stats_t *st, const char *field,
                         char *why, size_t why_len) {
  if (st->count != tot->n_points)
    return la_errorf(why, why_len, LA_EPROTO,
                     "invalid trace: %s.count %llu, the encoding holds %llu "
                     "points",
                     field, (unsigned long long)st->count,
                     (unsigned long long)tot->n_points);
  int rc = la__sum_ok(tot, st->sum, field, why, why_len);
  return rc ? rc : la__range_ok(tot, st, field, why, why_len);
}
