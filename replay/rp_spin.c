/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_spin.c: la-replay's way of spending a recorded cost: a chain of
 * dependent integer multiply-adds the compiler cannot remove or shorten,
 * run for a number of iterations; and its calibration against the wall
 * clock (MPI_Wtime), so that cost * rate iterations take cost seconds on
 * the core as the rank has it. The rate is the median wall time of many
 * short timed chunks (about 0.25 ms each, shorter than a scheduler's time
 * slice) during which the rank kept its core: a chunk whose thread CPU
 * time is under 95% of its wall time was preempted and is left out (on an
 * oversubscribed node most chunks can be), and the median does not pick
 * the luckiest chunk either. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdlib.h>
#include <time.h>

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

/* The calling thread's CPU time in seconds. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double rp_spin_calibrate(double seconds) {
  enum { MAXN = 20000 };
  const uint64_t chunk = UINT64_C(1) << 18; /* about 0.25 ms */
  double *wall = malloc(MAXN * sizeof *wall), *cpu = malloc(MAXN * sizeof *cpu);
  double t0 = MPI_Wtime();
  uint64_t x = 1;
  int nw = 0, nc = 0;
  if (!wall || !cpu) {
    free(wall), free(cpu);
    return 1e9;
  }
  x = rp_spin(chunk, x); /* warm-up: clock frequency, caches */
  for (;;) {
    double el = MPI_Wtime() - t0;
    if (nc >= MAXN || el > 5 * seconds || (el > seconds && nw >= 20)) break;
    double c0 = cpu_now(), a = MPI_Wtime();
    x = rp_spin(chunk, x);
    double dw = MPI_Wtime() - a, dc = cpu_now() - c0;
    if (dc > 0) cpu[nc++] = dc;
    /* the rank kept its core through the chunk: the wall time is the
     * spin's own */
    if (dw > 0 && dc >= 0.95 * dw) wall[nw++] = dw;
  }
  __asm__ volatile("" : : "r"(x));
  double med = 0;
  if (nw >= 10) {
    qsort(wall, (size_t)nw, sizeof *wall, cmp_double);
    med = wall[nw / 2];
  } else if (nc) { /* preempted throughout: the CPU time of a chunk */
    qsort(cpu, (size_t)nc, sizeof *cpu, cmp_double);
    med = cpu[nc / 2];
  }
  free(wall), free(cpu);
  return med > 0 ? (double)chunk / med : 1e9;
}

double rp_imbalance(const double *v, uint32_t k) {
  double max = 0, sum = 0;
  for (uint32_t i = 0; i < k; i++) {
    sum += v[i];
    if (v[i] > max) max = v[i];
  }
  return sum > 0 ? max / (sum / k) : 1.0;
}
