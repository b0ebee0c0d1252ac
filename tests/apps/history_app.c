/* SPDX-License-Identifier: BSD-3-Clause */
/* history_app.c: the MPI program of test_history_e2e (bounded history,
 * docs/history.md, checked end to end).
 *
 *   history_app [--n N]
 *
 * Each rank registers N elements (default 4096) with the metric "custom":
 * its probe functions give element e of profiled cycle s a cost the
 * program designs, so that consecutive cycles are alike in known ways
 * (real timings would make the test's outcome depend on the machine's
 * load). Every step is profiled (LA_PERIOD 1); the phases, by step:
 *
 *    0..4   exact     the same values every cycle (lossless can refer)
 *    5..10  steady    2% jitter around a smooth profile
 *   11..16  hotspot   a 10x hot spot of 64 elements moving 512 a step
 *   17..22  noisy     8% jitter
 *   23..27  steady    2% jitter again
 *
 * Values are whole numbers (quantum 1), different per rank. LA_DUMP_RAW
 * makes libla write each cycle's true values for the test to compare with.
 * Not an example to copy: the probes carry no work.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "la.h"

#define STEPS 28

static int g_rank;
static long g_step;

/* A reproducible number in [0, 1) of (seed, rank, step, element). */
static double u01(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t z = a * 0x9E3779B97F4A7C15u ^ (b + 0x632BE59BD9B4E019u) * 31 ^
               c * 0xD1B54A32D192ED03u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static double cost(long e, long s) {
  double base = 1000.0 + 100.0 * g_rank + 300.0 * sin((double)e * 0.003);
  double noise = 0;
  if (s >= 5 && s <= 10) noise = 0.02;
  if (s >= 11 && s <= 16) {
    long hot = 512 * (s - 11);
    if (e >= hot && e < hot + 64) base *= 10;
    noise = 0.02;
  }
  if (s >= 17 && s <= 22) noise = 0.08;
  if (s >= 23) noise = 0.02;
  double j = noise * (2 * u01((uint64_t)g_rank, (uint64_t)s, (uint64_t)e) - 1);
  return round(base * (1.0 + j));
}

static double probe_start(long e, void *arg) {
  (void)e;
  (void)arg;
  return 0;
}

static double probe_stop(long e, void *arg) {
  (void)arg;
  return cost(e, g_step);
}

int main(int argc, char **argv) {
  long n = 4096;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--n")) n = atol(argv[i + 1]);
  MPI_Init(&argc, &argv);
  int np = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  LA_setMetric("custom");
  LA_setProbeStartFunc(probe_start, NULL);
  LA_setProbeStopFunc(probe_stop, NULL);
  LA_setPeriod(1);
  int rc = LA_register("history_app", g_rank, np, n);
  if (rc != 0)
    fprintf(stderr, "rank %d: LA_register: %s\n", g_rank, LA_lastError());
  int ok = rc == 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) printf("registered on %d of %d ranks\n", all, np);
  for (g_step = 0; g_step < STEPS; g_step++) {
    for (long e = 0; e < n; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    LA_dataXfer();
  }
  LA_finalize();
  MPI_Finalize();
  return all == np ? 0 : 1;
}
