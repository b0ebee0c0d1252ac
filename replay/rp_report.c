/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_report.c: what la-replay prints on rank 0: a line per cycle (the
 * imbalance recorded, targeted and replayed), then per rank its recorded,
 * target and replayed totals over the run (wall time, MPI_Wtime, and the
 * CPU time the spin got), the run's imbalances, and one summary line of
 * key=value pairs for scripts and tests (docs/lactl.md, "lactl replay").
 *
 * recorded: the recorded run's stored per-rank totals (rank r of the
 * recorded run); target: the sum of the costs replay rank r spends (the
 * same under the recorded partition, the partition's prediction under a
 * partition file). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_report.h"

void rp_report_cycle(const rp_plan_t *pl, size_t c, const double *wall,
                     const double *cpu) {
  uint32_t P = pl->nranks;
  double *v = malloc(2 * (size_t)P * sizeof *v);
  if (!v) return;
  double tmax = 0, rmax = 0;
  for (uint32_t r = 0; r < P; r++) {
    v[r] = wall[(size_t)r * pl->nc + c];
    v[P + r] = cpu[(size_t)r * pl->nc + c];
    if (v[r] > rmax) rmax = v[r];
    if (pl->target[c * P + r] > tmax) tmax = pl->target[c * P + r];
  }
  printf("cycle %" PRIu64 ": imbalance recorded %.3f target %.3f replayed "
         "%.3f (cpu %.3f); slowest rank %.3f ms target, %.3f ms replayed\n",
         pl->tags[c],
         rp_imbalance(pl->recorded + c * pl->rec_nprocs, pl->rec_nprocs),
         rp_imbalance(pl->target + c * P, P), rp_imbalance(v, P),
         rp_imbalance(v + P, P), tmax * 1e3, rmax * 1e3);
  free(v);
}

void rp_report_end(const rp_plan_t *pl, const rp_report_head_t *h,
                   const double *wall, const double *cpu) {
  uint32_t P = pl->nranks, R = pl->rec_nprocs;
  double *rec = calloc(R, sizeof *rec), *tg = calloc(P, sizeof *tg),
         *rw = calloc(P, sizeof *rw), *rc = calloc(P, sizeof *rc);
  if (!rec || !tg || !rw || !rc) {
    free(rec), free(tg), free(rw), free(rc);
    fprintf(stderr, "la-replay: out of memory for the report\n");
    return;
  }
  for (size_t c = 0; c < pl->nc; c++) {
    for (uint32_t r = 0; r < R; r++) rec[r] += pl->recorded[c * R + r];
    for (uint32_t r = 0; r < P; r++) {
      tg[r] += pl->target[c * P + r];
      rw[r] += wall[(size_t)r * pl->nc + c];
      rc[r] += cpu[(size_t)r * pl->nc + c];
    }
  }
  printf("la-replay: %s cycles %" PRIu64 "..%" PRIu64 " (%zu replayed), %u "
         "rank%s, %s partition, %s weights (%s); spin %.3g..%.3g "
         "iterations/s\n",
         h->app, pl->tags[0], pl->tags[pl->nc - 1], pl->nc, P, P == 1 ? "" : "s",
         h->partition ? h->partition : "recorded", pl->weights, pl->unit,
         h->rate_min, h->rate_max);
  if (pl->skipped_incomplete)
    printf("la-replay: %" PRIu64 " incomplete cycle%s skipped\n",
           pl->skipped_incomplete, pl->skipped_incomplete == 1 ? "" : "s");
  double werr = 0, cerr = 0;
  for (uint32_t r = 0; r < P; r++) {
    double wq = tg[r] > 0 ? rw[r] / tg[r] : NAN, cq = tg[r] > 0 ? rc[r] / tg[r] : NAN;
    if (tg[r] > 0 && fabs(wq - 1) > werr) werr = fabs(wq - 1);
    if (tg[r] > 0 && fabs(cq - 1) > cerr) cerr = fabs(cq - 1);
    char recs[32];
    if (r < R)
      snprintf(recs, sizeof recs, "%.3f", rec[r] * 1e3);
    else
      snprintf(recs, sizeof recs, "-");
    printf("rank %u: recorded %s ms, target %.3f ms, replayed %.3f ms "
           "(x%.3f), cpu %.3f ms (x%.3f)\n",
           r, recs, tg[r] * 1e3, rw[r] * 1e3, wq, rc[r] * 1e3, cq);
  }
  uint64_t hbytes = 0; /* bytes the whole run sends per cycle */
  if (!strcmp(h->halo, "mesh")) {
    hbytes = pl->halo_cells * (uint64_t)h->bytes_per_cell;
    printf("halo: mesh of the %" PRIu64 "x%" PRIu64 "x%" PRIu64
           " grid, %ld bytes per cell: %" PRIu64 " boundary cells, %" PRIu64
           " cell values sent per cycle (%" PRIu64 " bytes), neighbour ranks "
           "max %" PRIu64 " mean %.2f\n",
           pl->g[0], pl->g[1], pl->g[2], h->bytes_per_cell, pl->boundary,
           pl->halo_cells, hbytes, pl->nbr_max, pl->nbr_mean);
  } else if (!strcmp(h->halo, "ring")) {
    hbytes = 2 * (uint64_t)(P > 1 ? P - 1 : 0) * (uint64_t)h->ring_bytes;
    printf("halo: ring (ranks r-1 and r+1), %ld bytes each way\n",
           h->ring_bytes);
  }
  double ri = rp_imbalance(rec, R), ti = rp_imbalance(tg, P),
         wi = rp_imbalance(rw, P), ci = rp_imbalance(rc, P);
  printf("imbalance (max/mean of the totals): recorded %.3f, target %.3f, "
         "replayed %.3f (cpu %.3f)\n",
         ri, ti, wi, ci);
  printf("la-replay summary: app=%s replay_app=%s ranks=%u cycles=%zu "
         "partition=%s weights=%s recorded_imbalance=%.4f "
         "target_imbalance=%.4f replayed_imbalance=%.4f "
         "cpu_imbalance=%.4f max_rank_error=%.4f max_rank_cpu_error=%.4f "
         "halo=%s halo_boundary_cells=%" PRIu64 " halo_neighbours_max=%" PRIu64
         " halo_neighbours_mean=%.4f halo_bytes_per_cycle=%" PRIu64 "\n",
         h->app, h->replay_app, P, pl->nc,
         h->partition ? h->partition : "recorded", pl->weights, ri, ti, wi, ci,
         werr, cerr, h->halo, pl->boundary, pl->nbr_max, pl->nbr_mean, hbytes);
  free(rec), free(tg), free(rw), free(rc);
}
