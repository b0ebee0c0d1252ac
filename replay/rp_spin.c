/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_spin.c: la-replay's way of spending a recorded cost: a chain of
 * dependent integer multiply-adds the compiler cannot remove or shorten,
 * run for a number of iterations; and its calibration against the wall
 * clock (MPI_Wtime), so that cost * rate iterations take cost seconds on
 * the core as the rank has it. The rate is the median over many short
 * timed chunks (about 0.25 ms each, shorter than a scheduler's time
 * slice): a chunk during which the rank was preempted is an outlier the
 * median ignores, and the median does not pick the luckiest chunk either. */
#include <stdlib.h>

#include <mpi.h>

#include "replay.h"

uint64_t rp_spin(uint64_t iters, uint64_t x) {
  for (uint64_t i = 0; i < iters; i++) {
    x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    __asm__ volatile("" : "+r"(x)); /* one step per iteration, kept */
  }
  return x;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

double rp_spin_calibrate(double seconds) {
  enum { MAXN = 4000 };
  const uint64_t chunk = UINT64_C(1) << 18; /* about 0.25 ms */
  double *dt = malloc(MAXN * sizeof *dt), t0 = MPI_Wtime();
  uint64_t x = 1;
  int n = 0;
  if (!dt) return 1e9;
  x = rp_spin(chunk, x); /* warm-up: clock frequency, caches */
  while (n < MAXN && (n < 20 || MPI_Wtime() - t0 < seconds)) {
    double a = MPI_Wtime();
    x = rp_spin(chunk, x);
    dt[n] = MPI_Wtime() - a;
    if (dt[n] > 0) n++;
  }
  __asm__ volatile("" : : "r"(x));
  qsort(dt, (size_t)n, sizeof *dt, cmp_double);
  double med = dt[n / 2];
  free(dt);
  return (double)chunk / med;
}

double rp_imbalance(const double *v, uint32_t k) {
  double max = 0, sum = 0;
  for (uint32_t i = 0; i < k; i++) {
    sum += v[i];
    if (v[i] > max) max = v[i];
  }
  return sum > 0 ? max / (sum / k) : 1.0;
}
