/* SPDX-License-Identifier: BSD-3-Clause */
/* replay.h: what the parts of la-replay share. la-replay replays a recorded
 * application's per-element costs (time weights stored by the GlobalAgent)
 * with a calibrated spin, under the recorded partition or under one from a
 * file (`lactl whatif --write-partition`), profiled by LA itself.
 *
 *   rp_source.c     rank 0's source: the GlobalAgent's feed (libla_client)
 *                   or a store read offline (--db, libla_store);
 *   rp_load.c       rank 0: the stored Trace-Sets, each rank's costs per
 *                   cycle under the chosen partition;
 *   rp_partition.c  the partition file;
 *   rp_spin.c       the spin loop and its calibration;
 *   rp_report.c     the per-cycle lines, the per-rank table, the summary;
 *   rp_main.c       options, distribution over the ranks, the replay.
 */
#ifndef LA_REPLAY_H
#define LA_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "la_client.h"

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
  /* The mesh halo (rp_halo.c), asked by --halo-bytes-per-cell: */
  int mesh;             /* 1: the halo below; 0: none (halo_note says why) */
  char halo_note[300];
  uint64_t g[3];        /* the global grid */
  uint64_t *hoff;       /* nranks + 1 offsets into hnbr, hsend, hrecv */
  uint32_t *hnbr;       /* each rank's neighbour ranks, ascending */
  uint64_t *hsend;      /* its cells facing that neighbour (it sends) */
  uint64_t *hrecv;      /* the neighbour's cells facing it (it receives) */
  uint64_t boundary;    /* cells facing another rank */
  uint64_t halo_cells;  /* sum of hsend: cell values sent per cycle */
  uint64_t nbr_max;
  double nbr_mean;
} rp_plan_t;

/* The options rank 0 loads with. */
typedef struct rp_src {
  const char *app, *global, *partition;
  const char *db;       /* a store (file or PostgreSQL URL): no feed */
  uint64_t first, last; /* last UINT64_MAX: the latest stored */
  int weights;          /* LA_WEIGHTS_*; 0: the client's default */
  int mesh_halo;        /* --halo-bytes-per-cell: derive the mesh halo */
  int timeout_ms;
} rp_src_t;

/* Rank 0's source of Trace-Sets (rp_source.c). */
typedef struct rp_source rp_source_t;
/* Opens the store src->db names, else the feed (src->global, $LA_GLOBAL,
 * the default address), with src->weights. 0, or an LA_E* code with why
 * filled. */
int rp_source_open(const rp_src_t *src, rp_source_t **out, char *why,
                   size_t why_len);
void rp_source_close(rp_source_t *s);
/* The feed's address or the store's name, for messages. */
const char *rp_source_where(const rp_source_t *s);
/* The detail of the last failure. */
const char *rp_source_error(const rp_source_t *s);
/* App's set at cycle tag (latest: the latest stored) into *out (free with
 * la_traceset_free). 0, LA_ENOTFOUND (no such application or cycle), or
 * another LA_E* code (detail in rp_source_error). */
int rp_source_set(rp_source_t *s, const char *app, int latest, uint64_t tag,
                  la_traceset_t **out);
/* Every element id of t (la_client_set_ids' numbering) into ids. */
int rp_source_set_ids(rp_source_t *s, const la_traceset_t *t, int64_t *ids);

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

/* The mesh halo of the plan's partition (rp_halo.c): owner[i] is the
 * replay rank of element i of set t (the first loaded). Where every rank
 * of t is placed in one global grid (LA_registerGrid, LA_setGridOrigin)
 * and no cell is on two replay ranks, fills pl's halo fields and sets
 * pl->mesh; else leaves it 0 with pl->halo_note saying why. 0, or -1
 * (out of memory) with why filled. */
int rp_halo_plan(const la_traceset_t *t, const uint32_t *owner, rp_plan_t *pl,
                 char *why, size_t why_len);

/* The spin: iterations of a dependent integer chain. */
uint64_t rp_spin(uint64_t iters, uint64_t x);
/* Iterations per second of rp_spin on this rank: the median of repeated
 * short chunks timed by MPI_Wtime, over about seconds of wall time. */
double rp_spin_calibrate(double seconds);

/* max / mean of k values (1 when all 0). */
double rp_imbalance(const double *v, uint32_t k);

#endif /* LA_REPLAY_H */
