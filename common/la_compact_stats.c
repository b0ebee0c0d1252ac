/* la_compact_stats.c: exact statistics of a raw series (count, compensated
 * sum, min, max) and the error of a reconstruction against it.
 *
 * These are the definitions every component uses: the LocalAgent computes
 * the statistics that travel with a trace, and tests compare against the
 * same functions. Nothing here compacts or decodes.
 */
#include <math.h>

#include "la_compact.h"

double la_compact_sum(const double *x, size_t n) {
  double s = 0, c = 0;
  size_t i;

  /* Neumaier's variant of Kahan summation, in index order. */
  for (i = 0; i < n; i++) {
    double v = x[i], t = s + v;
    if (fabs(s) >= fabs(v))
      c += (s - t) + v;
    else
      c += (v - t) + s;
    s = t;
  }
  return isfinite(s) ? s + c : s;
}

void la_series_stats(const double *x, size_t n, la_series_stats_t *st) {
  double mn = INFINITY, mx = -INFINITY;
  size_t i, nan = 0;

  for (i = 0; i < n; i++) {
    double v = x[i];
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    nan += v != v;
  }
  st->count = n;
  st->sum = la_compact_sum(x, n);
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
