/* SPDX-License-Identifier: BSD-3-Clause */
/* replay_report.h: la-replay's output on rank 0 (rp_report.c). */
#ifndef LA_REPLAY_REPORT_H
#define LA_REPLAY_REPORT_H

#include "replay.h"

typedef struct rp_report_head {
  const char *app, *replay_app;
  const char *partition; /* NULL: the recorded one */
  double rate_min, rate_max; /* the ranks' spin iterations per second */
  const char *halo;          /* "mesh", "ring" or "none" */
  long ring_bytes;           /* ring: bytes each way per neighbour */
  long bytes_per_cell;       /* mesh: bytes per cell */
} rp_report_head_t;

/* One cycle's line; wall and cpu: nranks * nc seconds each, rank-major
 * (MPI_Wtime and the thread's CPU clock around each rank's compute). */
void rp_report_cycle(const rp_plan_t *pl, size_t c, const double *wall,
                     const double *cpu);
/* The per-rank totals, the imbalances and the summary line. */
void rp_report_end(const rp_plan_t *pl, const rp_report_head_t *h,
                   const double *wall, const double *cpu);

#endif /* LA_REPLAY_REPORT_H */
