/* la_compact_stats.c: exact statistics of a raw series (count, compensated
 * sum, min, max) and the error of a reconstruction against it.
 *
 * These are the definitions every component uses: the LocalAgent computes
 * the statistics that travel with a trace, and tests compare against the
 * same functions. Nothing here compacts or decodes.
 */
#include <math.h>

#include "la_compact.h"

/* Neumaier's variant of Kahan summation, in index order, with min, max and
 * the number of NaNs on the way (one pass). */
static double stats_pass(const double *x, size_t n, double *mn, double *mx,
                         size_t *nan) {
  double s = 0, c = 0, lo = INFINITY, hi = -INFINITY;
  size_t i, nn = 0;

  for (i = 0; i < n; i++) {
    double v = x[i], t = s + v;
    c += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
    s = t;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    nn += v != v;
  }
  *mn = lo;
  *mx = hi;
  *nan = nn;
  return isfinite(s) ? s + c : s;
}

double la_compact_sum(const double *x, size_t n) {
  double mn, mx;
  size_t nan;

  return stats_pass(x, n, &mn, &mx, &nan);
}

void la_series_stats(const double *x, size_t n, la_series_stats_t *st) {
  double mn, mx;
  size_t nan;

  st->count = n;
  st->sum = stats_pass(x, n, &mn, &mx, &nan);
  st->min = nan == n ? NAN : mn;
  st->max = nan == n ? NAN : mx;
}

void la_fit_error_measure(const double *x, const double *y, size_t n,
                          const uint8_t *skip, la_fit_error_t *e) {
  double max = 0, sse = 0, sum = 0, rmse;
  size_t i, m = 0;

  for (i = 0; i < n; i++) {
    double d;
    if (skip != NULL && skip[i])
      continue;
    d = fabs(x[i] - y[i]);
    max = d > max ? d : max;
    sse += d * d;
    sum += x[i];
    m++;
  }
  rmse = m ? sqrt(sse / (double)m) : 0;
  e->max_abs = max;
  e->rmse = rmse;
  e->cv = rmse == 0 ? 0 : rmse / fabs(sum / (double)m);
}
