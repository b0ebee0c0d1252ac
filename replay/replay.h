/* SPDX-License-Identifier: BSD-3-Clause */
/* replay.h: what the parts of la-replay share. la-replay replays a recorded
 * application's per-element costs (time weights stored by the GlobalAgent)
 * with a calibrated spin, under the recorded partition or under one from a
 * file (`lactl whatif --write-partition`), profiled by LA itself.
 *
 *   rp_load.c       rank 0: the stored Trace-Sets (libla_client), each
 *                   rank's costs per cycle under the chosen partition;
 *   rp_partition.c  the partition file;
 *   rp_spin.c       the spin loop and its calibration;
 *   rp_report.c     the per-cycle lines, the per-rank table, the summary;
 *   rp_main.c       options, distribution over the ranks, the replay.
 */
#ifndef LA_REPLAY_H
#define LA_REPLAY_H

#include <stddef.h>
#include <stdint.h>

/* What rank 0 loaded: P ranks to replay, nc cycles. */
typedef struct rp_plan {
  uint32_t nranks;      /* ranks of the replay (the partition's) */
  uint32_t rec_nprocs;  /* ranks of the recorded run */
  size_t nc;            /* cycles */
  uint64_t *tags;       /* nc recorded cycle tags */
  uint64_t *n;          /* nranks element counts */
  double **cost;        /* per rank: nc * n[r] costs in seconds, cycle-major */
  double *target;       /* nc * nranks: sum of the costs (seconds) */
  double *recorded;     /* nc * rec_nprocs: stored per-rank totals (s) */
  char metric[130], unit[34];
  const char *weights;  /* "measured" or "robust" */
  uint64_t skipped_incomplete, absent;
} rp_plan_t;

/* The options rank 0 loads with. */
typedef struct rp_src {
  const char *app, *global, *partition;
  uint64_t first, last; /* last UINT64_MAX: the latest stored */
  int weights;          /* LA_WEIGHTS_*; 0: the client's default */
  int timeout_ms;
} rp_src_t;

/* A partition file: one rank per element, elements by ascending id. */
typedef struct rp_part {
  uint64_t n;
  int64_t *id;
  uint32_t *rank;
  uint32_t nranks; /* largest rank + 1 */
} rp_part_t;

/* Reads path into p. 0, or -1 with why filled (line and problem). */
int rp_part_read(const char *path, rp_part_t *p, char *why, size_t why_len);
void rp_part_free(rp_part_t *p);

/* Loads the plan (rank 0). 0, or -1 with why filled; *usage set to 1 when
 * the failure is the user's input (exit status 2), else 0. */
int rp_load(const rp_src_t *src, rp_plan_t *pl, char *why, size_t why_len,
            int *usage);
void rp_plan_free(rp_plan_t *pl);

/* The spin: iterations of a dependent integer chain. */
uint64_t rp_spin(uint64_t iters, uint64_t x);
/* Iterations per second of rp_spin on this rank: the median of repeated
 * short chunks timed by MPI_Wtime, over about seconds of wall time. */
double rp_spin_calibrate(double seconds);

/* max / mean of k values (1 when all 0). */
double rp_imbalance(const double *v, uint32_t k);

#endif /* LA_REPLAY_H */
