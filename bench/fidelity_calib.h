/* SPDX-License-Identifier: BSD-3-Clause */
/* fidelity_calib.h: the fidelity benchmark's truth table, from timings to
 * points and from points to a cost.
 *
 * bench/fidelity_app.c times every element of several passes of the real
 * loop (k work units, t timer ticks) before profiling starts and turns the
 * samples into a table of at most FC_CAL points (fc_calib_table);
 * bench/bench_fidelity.c reads the table back and takes the true cost of
 * an element from it (fc_true_ns). tests/unit/test_fidelity_calib.c checks
 * both on made-up samples.
 */
#ifndef FIDELITY_CALIB_H
#define FIDELITY_CALIB_H

#include <math.h>
#include <stdlib.h>

#define FC_CAL 64     /* points at most */
#define FC_CAL_MIN 20 /* samples a point needs (2 trimmed at each end) */

static inline int fc_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The table of ns samples (k[i] units, t[i] ticks; ns_per_tick converts):
 * the samples binned by unit count (one bin per count when the range is
 * small, else FC_CAL geometric bins), per bin the mean k and the mean cost
 * per unit of the middle 80% of its samples: interference is rare at the
 * scale of one element and only adds, and a mean (unlike a median or a
 * minimum) is not biased by a timer that advances in steps comparable with
 * the element's cost. A bin of fewer than FC_CAL_MIN samples is merged
 * into the nearest bin that has as many: trimmed means need samples to
 * trim, and a unit count seen only a few times (the hotspot's smallest hot
 * cells: 2 samples of 81,920) would otherwise be the plain mean of those
 * few, where one sample preempted for a time slice (4 ms against an
 * element's ~2 us) made the point, and every count interpolated near it,
 * about a thousand times its cost. Writes the points, k ascending, into ks
 * and cs (FC_CAL each) and returns their count, or -1 (no memory). */
static inline int fc_calib_table(const double *k, const double *t, long ns,
                                 double ns_per_tick, double *ks, double *cs) {
  double *r = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *r);
  int *bin = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *bin);
  if (!r || !bin) {
    free(r), free(bin);
    return -1;
  }
  double kmin = 1e300, kmax = 0;
  for (long i = 0; i < ns; i++) {
    if (k[i] < kmin) kmin = k[i];
    if (k[i] > kmax) kmax = k[i];
  }
  int nb = kmax - kmin < FC_CAL ? (int)(kmax - kmin) + 1 : FC_CAL;
  for (long i = 0; i < ns; i++)
    bin[i] = nb == FC_CAL
                 ? (int)(log(k[i] / kmin) / log(kmax / kmin) * (FC_CAL - 0.001))
                 : (int)(k[i] - kmin);
  long cnt[FC_CAL] = {0};
  int into[FC_CAL];
  for (long i = 0; i < ns; i++) cnt[bin[i]]++;
  for (int b = 0; b < nb; b++) { /* the nearest bin of enough samples */
    into[b] = b;
    if (cnt[b] >= FC_CAL_MIN) continue;
    for (int d = 1; d < nb; d++) {
      if (b - d >= 0 && cnt[b - d] >= FC_CAL_MIN) {
        into[b] = b - d;
        break;
      }
      if (b + d < nb && cnt[b + d] >= FC_CAL_MIN) {
        into[b] = b + d;
        break;
      }
    }
  }
  for (long i = 0; i < ns; i++) bin[i] = into[bin[i]];
  int m = 0;
  for (int b = 0; b < nb; b++) {
    long c = 0;
    double ksum = 0;
    for (long i = 0; i < ns; i++)
      if (bin[i] == b) r[c++] = t[i] / k[i], ksum += k[i];
    if (c == 0) continue;
    qsort(r, (size_t)c, sizeof *r, fc_cmp_double);
    long lo = c / 10, hi = c - c / 10;
    double sum = 0;
    for (long j = lo; j < hi; j++) sum += r[j];
    ks[m] = ksum / (double)c;
    cs[m] = sum / (double)(hi - lo) * ks[m] * ns_per_tick;
    m++;
  }
  free(r), free(bin);
  return m;
}

/* The true cost of k units from a table of m points: linear between them,
 * the end point's cost per unit beyond them (a bin's mean k lies inside
 * its range, so the lightest and heaviest elements are beyond the ends). */
static inline double fc_true_ns(const double *ks, const double *cs, int m,
                                double k) {
  if (m == 1 || k <= ks[0]) return cs[0] / ks[0] * k;
  int lo = 0, hi = m - 1;
  if (k >= ks[hi]) return cs[hi] / ks[hi] * k;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (ks[mid] <= k)
      lo = mid;
    else
      hi = mid;
  }
  double u = (k - ks[lo]) / (ks[hi] - ks[lo]);
  return cs[lo] + u * (cs[hi] - cs[lo]);
}

#endif
