/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_oracle.c: brute-force oracles for the compaction tests (see
 * la_test_oracle.h). No use of the engine's code: only the definitions.
 */
#include "la_test_oracle.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* If a feasible line exists, one passes through two interval endpoints
 * (a vertex of the feasible polygon in the (a, b) plane), so trying every
 * such line decides feasibility. The check forgives 1e-12 of the value's
 * magnitude: the line through an endpoint meets it only up to rounding. */
int la_oracle_feasible(const double *x, size_t i, size_t j, double ta,
                       double tr, double slack) {
  if (j - i <= 2) return 1;
  for (size_t p = i; p < j; p++)
    for (size_t q = p + 1; q < j; q++)
      for (int ep = -1; ep <= 1; ep += 2)
        for (int eq = -1; eq <= 1; eq += 2) {
          double yp = x[p] + ep * slack * (ta + tr * fabs(x[p]));
          double yq = x[q] + eq * slack * (ta + tr * fabs(x[q]));
          double b = (yq - yp) / (double)(q - p);
          int ok = 1;
          for (size_t k = i; k < j && ok; k++) {
            double tol = slack * (ta + tr * fabs(x[k]));
            ok = fabs(yp + b * ((double)k - (double)p) - x[k]) <=
                 tol + 1e-12 * (tol + fabs(x[k]));
          }
          if (ok) return 1;
        }
  return 0;
}

size_t la_oracle_min_segments(const double *x, size_t n, double ta, double tr,
                              double slack) {
  size_t *best = malloc((n + 1) * sizeof *best), r;
  if (best == NULL) abort();
  best[0] = 0;
  for (size_t j = 1; j <= n; j++) {
    best[j] = SIZE_MAX;
    for (size_t i = 0; i < j; i++)
      if (best[i] + 1 < best[j] && la_oracle_feasible(x, i, j, ta, tr, slack))
        best[j] = best[i] + 1;
  }
  r = best[n];
  free(best);
  return r;
}

void la_oracle_stats(const double *x, size_t n, la_series_stats_t *st) {
  double s = 0, c = 0, lo = INFINITY, hi = -INFINITY;
  size_t nan = 0;
  for (size_t i = 0; i < n; i++) {
    double v = x[i], t = s + v;
    c += fabs(s) >= fabs(v) ? (s - t) + v : (v - t) + s;
    s = t;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    nan += v != v;
  }
  st->count = n;
  st->sum = isfinite(s) ? s + c : s;
  st->min = nan == n ? NAN : lo;
  st->max = nan == n ? NAN : hi;
}

static int la__to_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double la_test_median3(double a, double b, double c) {
  double v[3] = {a, b, c};
  qsort(v, 3, sizeof *v, la__to_cmp);
  return v[1];
}
