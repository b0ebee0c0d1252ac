/* SPDX-License-Identifier: BSD-3-Clause */
/* zoltan_balance.c: balancing inside the job. Every rank reads its own
 * elements' weights back from its LocalAgent (LA_weights, shared memory,
 * no network) and Zoltan repartitions in parallel from them, so no rank
 * ever holds all the weights and no front end is involved. Compare
 * rebalance.c, where rank 0 fetches the whole Trace-Set from the
 * GlobalAgent and runs serial METIS.
 *
 * The mesh is an N x N grid of cells (global id g = x + N*y, coordinates
 * of the cell centre). A cell costs 1 work unit, or HOT units inside a hot
 * spot: a disc of radius 0.12 N whose centre circles the middle of the
 * mesh (radius 0.3 N, one turn in TURN steps), so the expensive cells
 * move; a unit is --work iterations of the logistic map: rebalance.c's
 * cost model, so that the two ways of balancing can be compared. The cells
 * start in blocks of rows. Every step is one profiling cycle tagged with the
 * step number; each cell is probed in its own LA element.
 *
 * Element slots: a rank registers CAP elements (3 x its share of the
 * cells, room for what balancing may send it) and keeps each cell it owns
 * in one slot for as long as it owns it; a cell it receives takes a free
 * slot. So the LA element of a cell that stays keeps its history (its
 * robust weight needs no new evidence), and LA_weights' w[slot] is the
 * weight of the cell in that slot. A slot freed and reused shows the new
 * cell's cost from the next cycle on; rebalancing every K >= 4 steps
 * leaves the robust estimate the cycles it needs to follow the jump.
 *
 * Every K steps, after the step's LA_dataXferTagged, each rank waits
 * (LA_weightsWait, bounded) for the weights of that very cycle, then all
 * call Zoltan_LB_Partition (RCB, or HSFC with --hsfc) whose callbacks hand
 * over the rank's cells with their coordinates and LA weights. The cells
 * Zoltan exports move with MPI_Alltoallv (a cell's state is its id: the
 * cost model needs nothing else). Without weights on some rank (no agent,
 * an agent older than the weights area) every rank skips the rebalance
 * and says why.
 *
 * Without Zoltan (built where Zoltan or Open MPI's headers are missing:
 * then with the default MPI), or with --slices, the partitioner is a
 * small parallel one written here: weighted slices of the row-major cell
 * order, cut to one cell, from the per-row weight sums (MPI_Allreduce of N
 * numbers) and the cells of the rows the cuts fall in, so that no rank
 * holds all the weights either.
 *
 * Printed by rank 0: per step the imbalance (max / mean over the ranks of
 * the step's work units, the exact cost model, and of the measured compute
 * time, MPI_Allreduce); per rebalance "rebalance step S: imbalance before
 * B after A" (both by work units at step S's costs: the old partition and
 * the new one), the time the weights took to arrive after the step (the
 * agent's latency) and the decision time (LA_weights + Zoltan, max over the
 * ranks); at the end a summary line with the medians, which the balance
 * benchmark reads.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>
#ifdef ZB_ZOLTAN
#include <zoltan.h>
#endif

#include "ex_args.h"
#include "ex_hotspot.h"
#include "ex_run.h"
#include "la.h"

#define ZB_HOT 20 /* rebalance.c's cost model, to compare the two */
#define ZB_TURN 200.0
#define ZB_MAX_N 4096

typedef struct zb {
  long n;         /* cells per side */
  long cap;       /* LA elements (slots) of this rank */
  long *slot_gid; /* cell in each slot, -1 when free */
  long nlocal;    /* cells owned */
  double *w;      /* LA weights per slot */
  double wfloor;  /* smallest weight handed to Zoltan */
} zb_t;

static void zb_usage(FILE *f) {
  fprintf(f,
          "usage: mpiexec -n P zoltan_balance [--n N] [--steps S] "
          "[--every K]\n"
          "                 [--work W] [--wait MS] [--hsfc] [--no-rebalance] "
          "[--quiet]\n"
          "  --n N           cells per side (default 64)\n"
          "  --steps S       time steps (default 40)\n"
          "  --every K       rebalance every K steps (default 6, >= 2)\n"
          "  --work W        logistic-map iterations per cost unit "
          "(default 300)\n"
          "  --wait MS       longest wait for a cycle's weights (default "
          "3000)\n"
          "  --hsfc          Zoltan's HSFC instead of RCB\n"
          "  --slices        weighted slices of the row order (no Zoltan)\n"
          "  --no-rebalance  profile, but keep the initial row blocks\n"
          "  --quiet         no per-step lines\n");
}

static void *zb_alloc(size_t n, size_t size) {
  return ex_alloc("zoltan_balance", n, size);
}

/* MPI_Allreduce that sleeps while it waits instead of polling: on an
 * oversubscribed node a busy-waiting rank would take the core from the
 * ranks (and the LocalAgent) it waits for. */
static void zb_allreduce(const void *in, void *out, int count,
                         MPI_Datatype type, MPI_Op op) {
  MPI_Request req;
  int done = 0;
  MPI_Iallreduce(in, out, count, type, op, MPI_COMM_WORLD, &req);
  for (MPI_Test(&req, &done, MPI_STATUS_IGNORE); !done;
       MPI_Test(&req, &done, MPI_STATUS_IGNORE)) {
    struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
  }
}

/* ------------------------------------------------------ the cost model */

/* max / mean over the ranks of v. */
static double zb_imbalance(double v) {
  double max, sum;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  zb_allreduce(&v, &max, 1, MPI_DOUBLE, MPI_MAX);
  zb_allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM);
  return sum > 0 ? max / (sum / size) : 1.0;
}

/* Work units of this rank's cells at step s. */
static double zb_units(const zb_t *z, long s) {
  double cx, cy, u = 0;
  ex_hot_centre(z->n, s, &cx, &cy);
  for (long k = 0; k < z->cap; k++)
    if (z->slot_gid[k] >= 0) u += ex_hot_cost(z->n, z->slot_gid[k], cx, cy);
  return u;
}

/* The weight of the cell in slot k as the partitioners see it. */
static double zb_w(const zb_t *z, long k) {
  return z->w[k] > z->wfloor ? z->w[k] : z->wfloor;
}

#ifdef ZB_ZOLTAN
/* ------------------------------------------------- Zoltan's callbacks */

static int zb_num_obj(void *data, int *ierr) {
  *ierr = ZOLTAN_OK;
  return (int)((zb_t *)data)->nlocal;
}

static void zb_obj_list(void *data, int ngid, int nlid, ZOLTAN_ID_PTR gids,
                        ZOLTAN_ID_PTR lids, int wdim, float *wgts, int *ierr) {
  zb_t *z = data;
  int i = 0;
  (void)ngid, (void)nlid, (void)wdim; /* one id entry each, one weight */
  for (long k = 0; k < z->cap; k++) {
    if (z->slot_gid[k] < 0) continue;
    gids[i] = (ZOLTAN_ID_TYPE)z->slot_gid[k];
    lids[i] = (ZOLTAN_ID_TYPE)k;
    /* LA weight of the cell (ns); never 0, which would let Zoltan pile
     * up cells whose cost it cannot see */
    wgts[i] = (float)zb_w(z, k);
    i++;
  }
  *ierr = ZOLTAN_OK;
}

static int zb_num_geom(void *data, int *ierr) {
  (void)data;
  *ierr = ZOLTAN_OK;
  return 2;
}

static void zb_geom_multi(void *data, int ngid, int nlid, int nobj,
                          ZOLTAN_ID_PTR gids, ZOLTAN_ID_PTR lids, int dim,
                          double *xy, int *ierr) {
  zb_t *z = data;
  (void)ngid, (void)nlid, (void)lids, (void)dim; /* 2-D, by global id */
  for (int i = 0; i < nobj; i++) {
    long g = (long)gids[i];
    xy[2 * i] = (double)(g % z->n) + 0.5;
    xy[2 * i + 1] = (double)(g / z->n) + 0.5;
  }
  *ierr = ZOLTAN_OK;
}

/* Zoltan's partition: the exported slots and their new ranks into
 * lids/procs (malloc'ed). Returns 0, or -1 when Zoltan failed. */
static int zb_zoltan(struct Zoltan_Struct *zz, long **lids, int **procs,
                     int *nexp) {
  int changes, ngid, nlid, nimp;
  ZOLTAN_ID_PTR igids, ilids, egids, elids;
  int *iprocs, *iparts, *eprocs, *eparts;
  if (Zoltan_LB_Partition(zz, &changes, &ngid, &nlid, &nimp, &igids, &ilids,
                          &iprocs, &iparts, nexp, &egids, &elids, &eprocs,
                          &eparts) != ZOLTAN_OK)
    return -1;
  *lids = zb_alloc((size_t)*nexp, sizeof(long));
  *procs = zb_alloc((size_t)*nexp, sizeof(int));
  for (int i = 0; i < *nexp; i++) {
    (*lids)[i] = (long)elids[i];
    (*procs)[i] = eprocs[i];
  }
  Zoltan_LB_Free_Part(&igids, &ilids, &iprocs, &iparts);
  Zoltan_LB_Free_Part(&egids, &elids, &eprocs, &eparts);
  return 0;
}
#endif

/* ------------------------------------------------------------ slices */

/* Weighted slices of the row-major cell order: rank r gets the cells
 * between cut r-1 and cut r, cut so that each slice weighs 1/P of the
 * total (to one cell). Every rank computes the same cuts from the per-row
 * sums and the cells of the rows a cut falls in. Fills lids/procs
 * (malloc'ed) with the slots this rank gives away. */
static void zb_slices(zb_t *z, int rank, int size, long **lids, int **procs,
                      int *nexp) {
  long n = z->n;
  double *rw = zb_alloc((size_t)n, sizeof(double));
  double *grw = zb_alloc((size_t)n, sizeof(double));
  for (long k = 0; k < z->cap; k++)
    if (z->slot_gid[k] >= 0) rw[z->slot_gid[k] / n] += zb_w(z, k);
  zb_allreduce(rw, grw, (int)n, MPI_DOUBLE, MPI_SUM);
  double total = 0;
  for (long y = 0; y < n; y++) total += grw[y];
  /* the row of each cut and the weight before that row */
  long *crow = zb_alloc((size_t)size, sizeof(long));
  double *cbefore = zb_alloc((size_t)size, sizeof(double));
  long y = 0;
  double cum = 0;
  for (int j = 1; j < size; j++) {
    double t = total * j / size;
    while (y < n - 1 && cum + grw[y] < t) cum += grw[y++];
    crow[j] = y;
    cbefore[j] = cum;
  }
  /* the cells of those rows (at most P - 1 rows of N) */
  double *bw = zb_alloc((size_t)(size * n), sizeof(double));
  double *gbw = zb_alloc((size_t)(size * n), sizeof(double));
  for (long k = 0; k < z->cap; k++) {
    long g = z->slot_gid[k];
    if (g < 0) continue;
    for (int j = 1; j < size; j++)
      if (crow[j] == g / n) {
        bw[j * n + g % n] = zb_w(z, k);
        break; /* the first cut of that row holds its cells */
      }
  }
  zb_allreduce(bw, gbw, (int)(size * n), MPI_DOUBLE, MPI_SUM);
  long *cut = zb_alloc((size_t)size + 1, sizeof(long));
  cut[0] = 0;
  cut[size] = n * n;
  for (int j = 1; j < size; j++) {
    int src = j;
    while (src > 1 && crow[src - 1] == crow[j]) src--;
    double t = total * j / size, c = cbefore[j];
    long x = 0;
    while (x < n && c + 0.5 * gbw[src * n + x] < t) c += gbw[src * n + x++];
    cut[j] = crow[j] * n + x;
    if (cut[j] < cut[j - 1]) cut[j] = cut[j - 1];
  }
  *nexp = 0;
  *lids = zb_alloc((size_t)z->nlocal, sizeof(long));
  *procs = zb_alloc((size_t)z->nlocal, sizeof(int));
  for (long k = 0; k < z->cap; k++) {
    long g = z->slot_gid[k];
    if (g < 0) continue;
    int r = 0;
    while (r < size - 1 && g >= cut[r + 1]) r++;
    if (r != rank) {
      (*lids)[*nexp] = k;
      (*procs)[(*nexp)++] = r;
    }
  }
  free(rw), free(grw), free(crow), free(cbefore), free(bw), free(gbw);
  free(cut);
}

/* --------------------------------------------------------- migration */

/* Sends the n exported cells (slot lids[i] to rank procs[i]) and places
 * the cells received in free slots. Returns the cells moved here. */
static long zb_migrate(zb_t *z, int n, const long *lids, const int *procs,
                       int size) {
  int *scount = zb_alloc((size_t)size, sizeof(int));
  int *rcount = zb_alloc((size_t)size, sizeof(int));
  int *sdisp = zb_alloc((size_t)size, sizeof(int));
  int *rdisp = zb_alloc((size_t)size, sizeof(int));
  for (int i = 0; i < n; i++) scount[procs[i]]++;
  MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
  int st = 0, rt = 0;
  for (int r = 0; r < size; r++) {
    sdisp[r] = st, st += scount[r];
    rdisp[r] = rt, rt += rcount[r];
  }
  long *sbuf = zb_alloc((size_t)st, sizeof(long));
  long *rbuf = zb_alloc((size_t)rt, sizeof(long));
  int *fill = zb_alloc((size_t)size, sizeof(int));
  for (int i = 0; i < n; i++) {
    long k = lids[i];
    sbuf[sdisp[procs[i]] + fill[procs[i]]++] = z->slot_gid[k];
    z->slot_gid[k] = -1;
    z->nlocal--;
  }
  MPI_Alltoallv(sbuf, scount, sdisp, MPI_LONG, rbuf, rcount, rdisp, MPI_LONG,
                MPI_COMM_WORLD);
  long k = 0;
  for (int i = 0; i < rt; i++) {
    while (k < z->cap && z->slot_gid[k] >= 0) k++;
    if (k == z->cap) {
      fprintf(stderr, "zoltan_balance: more cells than the %ld slots\n",
              z->cap);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    z->slot_gid[k] = rbuf[i];
    z->nlocal++;
  }
  free(scount), free(rcount), free(sdisp), free(rdisp);
  free(sbuf), free(rbuf), free(fill);
  return rt;
}

/* Weights of cycle `step`: waits (bounded) for a generation of that cycle
 * or later. Returns 0, or an LA code with why filled. */
static int zb_weights(zb_t *z, long step, long wait_ms, uint64_t *gen,
                      char *why, size_t len) {
  double end = MPI_Wtime() + (double)wait_ms / 1000.0;
  uint64_t tag = 0;
  for (;;) {
    int left = (int)((end - MPI_Wtime()) * 1000.0);
    int rc = LA_weightsWait(z->w, z->cap, *gen, left > 0 ? left : 0, &tag, gen);
    if (rc == 0 && tag >= (uint64_t)step) return 0;
    if (rc != 0 && rc != LA_ETIMEDOUT && rc != LA_ENOTFOUND) {
      snprintf(why, len, "%s", LA_lastError());
      return rc;
    }
    if (MPI_Wtime() >= end) {
      /* the newest there is, if any: a cycle skipped for lack of a buffer
       * never gets weights */
      rc = LA_weights(z->w, z->cap, &tag, gen);
      if (rc == 0) return 0;
      snprintf(why, len, "%s", LA_lastError());
      return rc;
    }
  }
}

static int zb_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double zb_median(double *v, long n) {
  if (n == 0) return 0;
  qsort(v, (size_t)n, sizeof *v, zb_cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long n = 64, steps = 40, every = 6, work = 300, wait_ms = 3000;
  int hsfc = 0, slices = 0, rebalance = 1, quiet = 0;
  const ex_long_opt_t longs[] = {
      {"--n", &n, ZB_MAX_N},        {"--steps", &steps, 100000},
      {"--every", &every, 100000},  {"--work", &work, 1000000},
      {"--wait", &wait_ms, 600000}, {NULL, NULL, 0}};
  const ex_flag_opt_t flags[] = {{"--hsfc", &hsfc, 1},
                                 {"--slices", &slices, 1},
                                 {"--no-rebalance", &rebalance, 0},
                                 {"--quiet", &quiet, 1},
                                 {NULL, NULL, 0}};
  int pr =
      ex_parse_args("zoltan_balance", argc, argv, rank, zb_usage, longs, flags);
  if (pr == 0 && (n < size || every < 2)) {
    if (rank == 0) fprintf(stderr, "zoltan_balance: need N >= P, K >= 2\n");
    pr = 2;
  }
  if (pr) {
    MPI_Finalize();
    return pr == 1 ? 0 : 2;
  }

  /* cells in blocks of rows */
  zb_t z = {.n = n};
  long rows0 = n * rank / size, rows1 = n * (rank + 1) / size;
  z.cap = 3 * (n * n / size + n);
  z.slot_gid = zb_alloc((size_t)z.cap, sizeof(long));
  z.w = zb_alloc((size_t)z.cap, sizeof(double));
  for (long k = 0; k < z.cap; k++) z.slot_gid[k] = -1;
  for (long g = rows0 * n; g < rows1 * n; g++) z.slot_gid[z.nlocal++] = g;
  double *state = zb_alloc((size_t)z.cap, sizeof(double));

  /* LA: one element per slot */
  int la_rc = LA_register("zoltan_balance", rank, size, z.cap);
  char note[EX_LA_WHY + 32] = ""; /* "LA_register: " and LA_lastError */
  if (la_rc != 0)
    snprintf(note, sizeof note, "LA_register: %s", LA_lastError());

#ifdef ZB_ZOLTAN
  struct Zoltan_Struct *zz = NULL;
  if (!slices) {
    float ver;
    Zoltan_Initialize(argc, argv, &ver);
    zz = Zoltan_Create(MPI_COMM_WORLD);
    Zoltan_Set_Param(zz, "DEBUG_LEVEL", "0");
    Zoltan_Set_Param(zz, "LB_METHOD", hsfc ? "HSFC" : "RCB");
    Zoltan_Set_Param(zz, "NUM_GID_ENTRIES", "1");
    Zoltan_Set_Param(zz, "NUM_LID_ENTRIES", "1");
    Zoltan_Set_Param(zz, "OBJ_WEIGHT_DIM", "1");
    Zoltan_Set_Param(zz, "RETURN_LISTS", "EXPORT");
    Zoltan_Set_Param(zz, "IMBALANCE_TOL", "1.03");
    Zoltan_Set_Num_Obj_Fn(zz, zb_num_obj, &z);
    Zoltan_Set_Obj_List_Fn(zz, zb_obj_list, &z);
    Zoltan_Set_Num_Geom_Fn(zz, zb_num_geom, &z);
    Zoltan_Set_Geom_Multi_Fn(zz, zb_geom_multi, &z);
  }
  const char *method = slices ? "slices" : hsfc ? "Zoltan HSFC" : "Zoltan RCB";
#else
  slices = 1;
  const char *method = "slices (built without Zoltan)";
#endif

  if (rank == 0)
    printf(
        "zoltan_balance: %ld x %ld cells on %d ranks, %ld steps, %s "
        "every %ld steps, %s%s\n",
        n, n, size, steps, method, every,
        la_rc == 0 ? "weights from LA_weights" : "no LA: ", note);

  long nreb = 0, nskip = 0, moved_all = 0;
  double *dec = zb_alloc((size_t)(steps / every + 1), sizeof(double));
  double *lat = zb_alloc((size_t)(steps / every + 1), sizeof(double));
  double *bef = zb_alloc((size_t)(steps / every + 1), sizeof(double));
  double *aft = zb_alloc((size_t)(steps / every + 1), sizeof(double));
  double sum_units_imb = 0;
  uint64_t gen = 0;
  for (long step = 0; step < steps; step++) {
    double cx, cy;
    ex_hot_centre(n, step, &cx, &cy);
    int dummy = 0, dummy2;
    zb_allreduce(&dummy, &dummy2, 1, MPI_INT, MPI_SUM); /* a barrier */
    double t = MPI_Wtime();
    for (long k = 0; k < z.cap; k++) {
      long g = z.slot_gid[k];
      if (g < 0) continue;
      LA_startProbe(k); /* LA: the cell in slot k */
      state[k] = ex_logistic(state[k] > 0 && state[k] < 1 ? state[k] : 0.3,
                             work * ex_hot_cost(n, g, cx, cy));
      LA_stopProbe(k);
    }
    LA_dataXferTagged((uint64_t)step); /* LA: cycle tag = step */
    t = MPI_Wtime() - t;
    double units = zb_units(&z, step);
    double imb_u = zb_imbalance(units), imb_t = zb_imbalance(t);
    sum_units_imb += imb_u;
    if (rank == 0 && !quiet)
      printf("step %3ld: imbalance %.3f by work units, %.3f measured\n", step,
             imb_u, imb_t);

    if (!rebalance || (step + 1) % every != 0 || step + 1 >= steps) continue;
    /* the weights of this cycle, on every rank */
    char why[EX_LA_WHY + 32] = ""; /* LA_lastError, or the note */
    double t0 = MPI_Wtime();
    int rc = la_rc == 0 ? zb_weights(&z, step, wait_ms, &gen, why, sizeof why)
                        : LA_ESTATE;
    if (la_rc != 0) snprintf(why, sizeof why, "%s", note);
    double t_lat = MPI_Wtime() - t0;
    int ok = rc == 0, all_ok;
    zb_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN);
    if (!all_ok) {
      nskip++;
      if (!ok)
        fprintf(stderr, "zoltan_balance rank %d: no weights: %s\n", rank, why);
      if (rank == 0 && !quiet)
        printf("rebalance step %ld: skipped: a rank has no weights\n", step);
      continue;
    }
    /* the decision: weights to Zoltan, Zoltan's partition */
    double t1 = MPI_Wtime();
    double wsum = 0, wn = 0;
    for (long k = 0; k < z.cap; k++)
      if (z.slot_gid[k] >= 0 && z.w[k] > 0) wsum += z.w[k], wn++;
    double loc[2] = {wsum, wn}, glob[2];
    zb_allreduce(loc, glob, 2, MPI_DOUBLE, MPI_SUM);
    z.wfloor = glob[1] > 0 ? 1e-3 * glob[0] / glob[1] : 1.0;
    long *elids = NULL;
    int *eprocs = NULL, nexp = 0;
    rc = 0;
#ifdef ZB_ZOLTAN
    if (!slices) rc = zb_zoltan(zz, &elids, &eprocs, &nexp);
#endif
    if (slices) zb_slices(&z, rank, size, &elids, &eprocs, &nexp);
    double t_dec = MPI_Wtime() - t1, t_dec_max, t_lat_max;
    zb_allreduce(&t_dec, &t_dec_max, 1, MPI_DOUBLE, MPI_MAX);
    zb_allreduce(&t_lat, &t_lat_max, 1, MPI_DOUBLE, MPI_MAX);
    if (rc != 0) {
      if (rank == 0) fprintf(stderr, "zoltan_balance: Zoltan failed\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double before = imb_u;
    /* cells move with their state; their slots become free */
    for (int i = 0; i < nexp; i++) state[elids[i]] = 0;
    long got = zb_migrate(&z, nexp, elids, eprocs, size);
    long moved;
    zb_allreduce(&got, &moved, 1, MPI_LONG, MPI_SUM);
    free(elids), free(eprocs);
    double after = zb_imbalance(zb_units(&z, step));
    dec[nreb] = t_dec_max * 1e3;
    lat[nreb] = t_lat_max * 1e3;
    bef[nreb] = before;
    aft[nreb] = after;
    nreb++;
    moved_all += moved;
    if (rank == 0)
      printf(
          "rebalance step %ld: imbalance before %.3f after %.3f "
          "(weights of generation %llu after %.1f ms, decision %.2f ms, "
          "%ld cells moved)\n",
          step, before, after, (unsigned long long)gen, t_lat_max * 1e3,
          t_dec_max * 1e3, moved);
  }
  if (rank == 0) {
    printf(
        "zoltan_balance: %ld rebalances (%ld skipped), %ld cells moved; "
        "mean imbalance %.3f by work units\n",
        nreb, nskip, moved_all, sum_units_imb / (double)steps);
    printf(
        "summary: ranks %d rebalances %ld imbalance_before %.4f "
        "imbalance_after %.4f latency_ms %.3f decision_ms %.3f\n",
        size, nreb, zb_median(bef, nreb), zb_median(aft, nreb),
        zb_median(lat, nreb), zb_median(dec, nreb));
  }
#ifdef ZB_ZOLTAN
  if (zz) Zoltan_Destroy(&zz);
#endif
  LA_finalize();
  free(z.slot_gid), free(z.w), free(state);
  free(dec), free(lat), free(bef), free(aft);
  MPI_Finalize();
  return 0;
}
