/* SPDX-License-Identifier: BSD-3-Clause */
/* rebalance.c: an LA example that closes the loop: the measured per-cell
 * costs, stitched by the GlobalAgent into Trace-Sets, drive METIS to
 * repartition a mesh whose costs change over time.
 *
 * The mesh is an N x N grid of cells (N^2 elements, global id g = x + N*y)
 * with 4-neighbour adjacency. Every cell carries one double of state and,
 * each step, iterates the logistic map x <- 3.9 x (1 - x) cost(g, step) *
 * WORK times. A cell costs 1 unit, or HOT units (default 20) inside a hot
 * spot: a disc of radius 0.12 N whose centre circles the middle of the mesh
 * (radius 0.3 N, one turn in 200 steps), so the expensive cells move.
 * The computation of a cell needs no neighbour (so no halo exchange), but
 * the partitioner still sees the 4-neighbour graph and keeps parts compact,
 * as it would for a stencil code.
 *
 * The cells start partitioned in blocks of rows (the first N % P ranks get
 * a row more). Every EVERY steps rank 0 asks the GlobalAgent (libla_client,
 * LA_GLOBAL) for the Trace-Set of the last profiled step, waiting up to
 * --wait ms for it to complete; turns it into per-cell weights; calls
 * METIS_PartGraphKway on the mesh graph with those vertex weights and nparts
 * = P; renumbers the new parts to keep as many cells as possible where they
 * are; and broadcasts the partition. The ranks then migrate the cells: each
 * sends the (id, state) of the cells it loses to their new owners
 * (MPI_Alltoallv). Without profiles (no LocalAgent, LA disabled, --no-la) or
 * without a GlobalAgent it says so once and runs on without rebalancing.
 *
 * Element numbering (the choice that makes the weights map back to cells):
 * every rank registers n = N^2 elements and probes a cell by its GLOBAL id;
 * the cells a rank does not own stay 0 in its trace. It gives LA those ids
 * (LA_setGlobalIdFunc: element g is cell g), so exports (lactl export's id
 * column) and balancers (la_client_set_ids) see each weight with its cell.
 * A Trace-Set then holds P vectors of N^2, and the weight of cell g is the
 * sum of the weights with id g (only its owner measured it). That stays right across
 * migrations and even for a set older than the last migration, at the price
 * of P x N^2 values per set (mostly zero runs, which compaction shrinks to
 * a few bytes). A code with millions of cells per rank would register its
 * local count, probe local indices, and map rank r's element i back through
 * the ownership at that cycle (ParMETIS's vtxdist order); see
 * examples/README.md.
 *
 * Each step is one profiling cycle, tagged with the step number
 * (LA_dataXferTagged), so rank 0 knows which Trace-Set to ask for. Per
 * step, rank 0 prints the load imbalance: max / mean of the ranks' compute
 * times (MPI_Wtime around the compute loop, MPI_Allreduce), and the same
 * ratio by work units (the exact cost model, free of timing noise), with
 * the imbalance the static row blocks would have at that step. At a
 * rebalance it prints the imbalance before, the one METIS predicts from the
 * measured weights, and how many cells moved. The summary gives the
 * averages; run again with --no-rebalance for the measured comparison.
 * Where a Trace-Set carries robust weights beside the measured ones, rank
 * 0 also partitions it by the kind it did not use (LA_WEIGHTS chooses the
 * one used, robust by default) and the summary gives both partitions'
 * imbalance by work units over the steps each would serve: the two kinds
 * of weights compared on the same profiled cycles.
 *
 * Waiting ranks do not spin: collectives are non-blocking and tested with
 * short sleeps (rb_wait), so that on an oversubscribed node (4 ranks on 2
 * cores) a waiting rank does not steal the CPU from a computing one or from
 * the agents; otherwise MPICH's busy polling would distort the very times
 * being balanced.
 *
 * --write-partitions PREFIX: rank 0 writes each partition it chooses to
 * PREFIX.CYCLE (CYCLE: the Trace-Set's), in the format `lactl whatif
 * --write-partition` writes ("ID RANK" per cell), for `lactl whatif
 * --partition` to score against the stored cycles
 * (scripts/bench-whatif-rebalance.sh).
 *
 * The checksum (the sum of all cells' state in global id order, gathered on
 * rank 0) does not depend on LA, on rebalancing, on the migrations or on
 * the number of ranks: it proves that every cell was computed exactly once
 * per step and migrated intact.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <metis.h>
#include <mpi.h>

#include "ex_args.h"
#include "ex_hotspot.h"
#include "ex_run.h"
#include "la.h"        /* LA: the application API */
#include "la_client.h" /* LA: Trace-Sets from the GlobalAgent */

#define RB_MAX_N 2048
#define RB_MAX_STEPS 1000000

typedef struct rb_opts_s {
  long n, steps, every, work, wait_ms;
  int rebalance, use_la, quiet;
  const char *part_prefix; /* --write-partitions PREFIX, or NULL */
} rb_opts_t;

/* This rank's cells, sorted by global id, and their state. */
typedef struct rb_cells_s {
  long count;
  int *gid;
  double *x;
} rb_cells_t;

static void rb_usage(FILE *f) {
  fprintf(f,
          "usage: mpiexec -n P rebalance [--n N] [--steps S] [--every K] "
          "[--work W]\n"
          "                 [--wait MS] [--no-rebalance] [--no-la] "
          "[--quiet]\n"
          "  N x N cells with a moving hot spot, profiled per cell by LA; "
          "every K steps\n"
          "  rank 0 fetches the latest Trace-Set from the GlobalAgent "
          "(LA_GLOBAL) and\n"
          "  repartitions the mesh with METIS using the measured weights.\n"
          "  --n N           cells per side (default 64, at least P)\n"
          "  --steps S       time steps (default 40)\n"
          "  --every K       rebalance every K steps (default 5)\n"
          "  --work W        logistic-map iterations per cost unit "
          "(default 300)\n"
          "  --wait MS       longest wait for a Trace-Set (default 3000)\n"
          "  --no-rebalance  profile, but keep the initial row blocks\n"
          "  --no-la         make no LA call at all (no profile, no "
          "rebalancing)\n"
          "  --quiet         no per-step lines; summary and checksum only\n"
          "  --write-partitions PREFIX  write each chosen partition to "
          "PREFIX.CYCLE\n"
          "                  (\"ID RANK\" per cell, for lactl whatif "
          "--partition)\n"
          "  --help          this text\n"
          "Needs a LocalAgent (LA_AGENT) and a GlobalAgent feed (LA_GLOBAL) "
          "to rebalance;\n"
          "without them it runs on the initial partition and says why. See "
          "examples/README.md.\n");
}

/* Returns 0 to run, 1 after --help, 2 on a usage error. */
static int rb_parse_args(int argc, char **argv, int rank, rb_opts_t *o) {
  o->n = 64;
  o->steps = 40;
  o->every = 5;
  o->work = 300;
  o->wait_ms = 3000;
  o->rebalance = 1;
  o->use_la = 1;
  o->quiet = 0;
  o->part_prefix = NULL;
  /* The one option with a string value: taken out before the others. */
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--write-partitions")) continue;
    if (a + 1 >= argc || !*argv[a + 1]) {
      if (rank == 0)
        fprintf(stderr, "rebalance: --write-partitions expects a PREFIX\n");
      return 2;
    }
    o->part_prefix = argv[a + 1];
    for (int b = a; b + 2 <= argc; b++) argv[b] = argv[b + 2];
    argc -= 2;
    a--;
  }
  const ex_long_opt_t longs[] = {{"--n", &o->n, RB_MAX_N},
                                 {"--steps", &o->steps, RB_MAX_STEPS},
                                 {"--every", &o->every, RB_MAX_STEPS},
                                 {"--work", &o->work, 1000000},
                                 {"--wait", &o->wait_ms, 600000},
                                 {NULL, NULL, 0}};
  const ex_flag_opt_t flags[] = {{"--no-la", &o->use_la, 0},
                                 {"--no-rebalance", &o->rebalance, 0},
                                 {"--quiet", &o->quiet, 1},
                                 {NULL, NULL, 0}};
  return ex_parse_args("rebalance", argc, argv, rank, rb_usage, longs, flags);
}

/* --------------------------------------------------------------- helpers */

static void rb_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* Completes a non-blocking MPI operation without spinning: tests it, then
 * sleeps 0.1 ms, until it is done (see the top of the file). */
static void rb_wait(MPI_Request *req) {
  int done = 0;
  for (;;) {
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    rb_sleep_us(100);
  }
}

static void rb_barrier(void) {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  rb_wait(&r);
}

static void rb_bcast(void *buf, int count, MPI_Datatype type) {
  MPI_Request r;
  MPI_Ibcast(buf, count, type, 0, MPI_COMM_WORLD, &r);
  rb_wait(&r);
}

static void rb_allreduce(const void *in, void *out, int count,
                         MPI_Datatype type, MPI_Op op) {
  MPI_Request r;
  MPI_Iallreduce(in, out, count, type, op, MPI_COMM_WORLD, &r);
  rb_wait(&r);
}

static void *rb_alloc(size_t n, size_t size) {
  return ex_alloc("rebalance", n, size);
}

/* ------------------------------------------------------ the cost model */

/* ex_hotspot.h: the hot spot, the cells' cost, their work. */

/* Rank that owns row y in blocks of rows. */
static int rb_row_owner(long n, long y, int size) {
  long base = n / size, extra = n % size, big = extra * (base + 1);
  return y < big ? (int)(y / (base + 1)) : (int)(extra + (y - big) / base);
}

/* max / mean of the per-rank sums of cost units with owner[]: the
 * imbalance of the partition by the cost model at hot spot (cx, cy). */
static double rb_model_imbalance(long n, const int *owner, int size, double cx,
                                 double cy, double *load) {
  double max = 0.0, sum = 0.0;
  memset(load, 0, (size_t)size * sizeof *load);
  for (long g = 0; g < n * n; g++) load[owner[g]] += ex_hot_cost(n, g, cx, cy);
  for (int r = 0; r < size; r++) {
    sum += load[r];
    if (load[r] > max) max = load[r];
  }
  return sum > 0.0 ? max / (sum / size) : 1.0;
}

/* ------------------------------------------------------------ the cells */

static int rb_cmp_pair(const void *a, const void *b) {
  const int *x = a, *y = b;
  return (*x > *y) - (*x < *y);
}

/* The cells of rank with owner[], in id order, with their initial state. */
static void rb_cells_init(rb_cells_t *c, long n, const int *owner, int rank) {
  c->count = 0;
  for (long g = 0; g < n * n; g++) c->count += owner[g] == rank;
  c->gid = rb_alloc((size_t)c->count, sizeof *c->gid);
  c->x = rb_alloc((size_t)c->count, sizeof *c->x);
  for (long g = 0, i = 0; g < n * n; g++)
    if (owner[g] == rank) {
      c->gid[i] = (int)g;
      c->x[i++] = 0.05 + 0.9 * (double)((g * 7919) % 1000) / 1000.0;
    }
}

/* Moves every cell to newowner[its id]: counts, then ids and states with
 * MPI_Alltoallv (cells that stay go to this rank itself). The result is
 * sorted by id again. */
static void rb_migrate(rb_cells_t *c, const int *newowner, int size) {
  int *scount = rb_alloc((size_t)size, sizeof(int));
  int *rcount = rb_alloc((size_t)size, sizeof(int));
  int *sdispl = rb_alloc((size_t)size, sizeof(int));
  int *rdispl = rb_alloc((size_t)size, sizeof(int));
  int *fill = rb_alloc((size_t)size, sizeof(int));
  int *sgid = rb_alloc((size_t)c->count, sizeof(int));
  double *sx = rb_alloc((size_t)c->count, sizeof(double));
  MPI_Request req[2];
  long total = 0;

  for (long i = 0; i < c->count; i++) scount[newowner[c->gid[i]]]++;
  {
    MPI_Request r;
    MPI_Ialltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD, &r);
    rb_wait(&r);
  }
  for (int r = 0; r < size; r++) {
    sdispl[r] = r ? sdispl[r - 1] + scount[r - 1] : 0;
    rdispl[r] = r ? rdispl[r - 1] + rcount[r - 1] : 0;
    total += rcount[r];
  }
  for (long i = 0; i < c->count; i++) {
    int d = newowner[c->gid[i]];
    int k = sdispl[d] + fill[d]++;
    sgid[k] = c->gid[i];
    sx[k] = c->x[i];
  }
  free(c->gid);
  free(c->x);
  c->count = total;
  c->gid = rb_alloc((size_t)total, sizeof(int));
  c->x = rb_alloc((size_t)total, sizeof(double));
  MPI_Ialltoallv(sgid, scount, sdispl, MPI_INT, c->gid, rcount, rdispl, MPI_INT,
                 MPI_COMM_WORLD, &req[0]);
  MPI_Ialltoallv(sx, scount, sdispl, MPI_DOUBLE, c->x, rcount, rdispl,
                 MPI_DOUBLE, MPI_COMM_WORLD, &req[1]);
  rb_wait(&req[0]);
  rb_wait(&req[1]);
  { /* sort (id, state) pairs by id */
    struct {
      int g;
      double x;
    } *p = rb_alloc((size_t)total, sizeof *p);
    for (long i = 0; i < total; i++) p[i].g = c->gid[i], p[i].x = c->x[i];
    qsort(p, (size_t)total, sizeof *p, rb_cmp_pair); /* g is the first key */
    for (long i = 0; i < total; i++) c->gid[i] = p[i].g, c->x[i] = p[i].x;
    free(p);
  }
  free(scount), free(rcount), free(sdispl), free(rdispl), free(fill);
  free(sgid), free(sx);
}

/* One step over this rank's cells; probe is a compile-time constant at each
 * call site (the --no-la copy contains no LA code). Returns the cost units
 * computed. */
static inline __attribute__((always_inline)) long rb_compute(rb_cells_t *c,
                                                             long n, long step,
                                                             long work,
                                                             const int probe) {
  double cx, cy;
  long units = 0;
  ex_hot_centre(n, step, &cx, &cy);
  for (long i = 0; i < c->count; i++) {
    long g = c->gid[i];
    int u = ex_hot_cost(n, g, cx, cy);
    if (probe) LA_startProbe(g); /* LA: the cell's GLOBAL id */
    c->x[i] = ex_logistic(c->x[i], (long)u * work);
    if (probe) LA_stopProbe(g); /* LA: */
    units += u;
  }
  return units;
}

static long rb_compute_plain(rb_cells_t *c, long n, long step, long work) {
  return rb_compute(c, n, step, work, 0);
}
static long rb_compute_la(rb_cells_t *c, long n, long step, long work) {
  return rb_compute(c, n, step, work, 1);
}

/* LA: the global id of element e: the cell it measures. */
static int64_t rb_cell_id(long e, void *arg) {
  (void)arg;
  return e;
}

/* ------------------------------------------------------------ balancing */

typedef struct rb_lb_s {
  la_client_t *client; /* rank 0: the GlobalAgent feed */
  char app_id[LA_MAX_APP_ID + 1];
  idx_t *xadj, *adjncy, *vwgt, *part;
  double *w;     /* P * N^2 decoded values of a set */
  int64_t *ids;  /* P * N^2 cell ids of the set's elements, or NULL */
  double *cellw; /* N^2 cell weights */
} rb_lb_t;

/* The 4-neighbour graph of the N x N mesh in CSR form. */
static void rb_graph(rb_lb_t *lb, long n) {
  long nv = n * n, k = 0;
  lb->xadj = rb_alloc((size_t)nv + 1, sizeof(idx_t));
  lb->adjncy = rb_alloc((size_t)(4 * nv), sizeof(idx_t));
  for (long g = 0; g < nv; g++) {
    long x = g % n, y = g / n;
    lb->xadj[g] = (idx_t)k;
    if (y > 0) lb->adjncy[k++] = (idx_t)(g - n);
    if (x > 0) lb->adjncy[k++] = (idx_t)(g - 1);
    if (x < n - 1) lb->adjncy[k++] = (idx_t)(g + 1);
    if (y < n - 1) lb->adjncy[k++] = (idx_t)(g + n);
  }
  lb->xadj[nv] = (idx_t)k;
}

/* Rank 0: the Trace-Set of cycle want, complete, waiting up to wait_ms;
 * else the latest complete one stored. Returns NULL (why filled) when there
 * is none. */
static la_traceset_t *rb_fetch(rb_lb_t *lb, uint64_t want, long wait_ms,
                               char *why, size_t len) {
  double deadline = MPI_Wtime() + (double)wait_ms / 1000.0;
  la_traceset_t *t = NULL;
  int rc;
  for (;;) {
    rc = la_client_get(lb->client, lb->app_id, want, &t); /* LA: */
    if (rc == 0 && la_traceset_complete(t)) return t;
    la_traceset_free(t);
    t = NULL;
    if (rc != 0 && rc != LA_ENOTFOUND) break; /* the feed failed */
    if (MPI_Wtime() > deadline) break;
    rb_sleep_us(5000);
  }
  if (rc != 0 && rc != LA_ENOTFOUND) {
    snprintf(why, len, "GlobalAgent query failed: %s",
             la_client_error(lb->client));
    return NULL;
  }
  rc = la_client_latest(lb->client, lb->app_id, &t); /* LA: fallback */
  if (rc == 0 && la_traceset_complete(t)) return t;
  la_traceset_free(t);
  snprintf(why, len, "no complete Trace-Set of cycle %llu after %ld ms%s",
           (unsigned long long)want, wait_ms,
           rc == 0 ? " (the latest is partial)" : "");
  return NULL;
}

static int rb_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Rank 0: new owners from the Trace-Set t into newowner[N^2]. Returns 0,
 * or -1 with why. *pred gets the imbalance METIS's partition has by the
 * measured weights, *cut its edge cut, *clipped the number of outlier
 * weights capped. */
static int rb_partition(rb_lb_t *lb, const la_traceset_t *t, long n, int size,
                        const int *owner, int *newowner, double *pred,
                        long *cut, long *clipped, char *why, size_t len) {
  long nv = n * n;
  uint32_t np = la_traceset_nprocs(t);
  double maxw = 0.0;
  if (np != (uint32_t)size ||
      la_traceset_elements(t) != (uint64_t)(nv * size)) {
    snprintf(why, len,
             "Trace-Set has %u ranks and %llu elements, expected "
             "%d and %ld",
             np, (unsigned long long)la_traceset_elements(t), size, nv * size);
    return -1;
  }
  la_traceset_weights(t, lb->w); /* LA: decoded per-element values */
  uint32_t n_app = 0; /* LA: the cell of each weight (the same every set) */
  if (!lb->ids) {
    lb->ids = rb_alloc((size_t)(nv * size), sizeof *lb->ids);
    if (la_client_set_ids(lb->client, t, lb->ids, &n_app) || n_app != np)
      for (long i = 0; i < nv * size; i++) lb->ids[i] = i % nv;
  }
  /* Cell g was measured by its owner only: sum the weights of id g. */
  memset(lb->cellw, 0, (size_t)nv * sizeof *lb->cellw);
  for (long i = 0; i < nv * size; i++) {
    double v = lb->w[i];
    int64_t g = lb->ids[i];
    if (v > 0.0 && isfinite(v) && g >= 0 && g < nv) lb->cellw[g] += v;
  }
  for (long g = 0; g < nv; g++)
    if (lb->cellw[g] > maxw) maxw = lb->cellw[g];
  if (!(maxw > 0.0)) {
    snprintf(why, len, "the Trace-Set has no positive weight");
    return -1;
  }
  /* Wall-time samples carry outliers: a rank descheduled in the middle of a
   * cell (4 ranks on 2 cores), an interrupt. One such cell can weigh more
   * than a whole hot spot and would both squash the METIS weight scale and
   * pin a part. Cap every weight at twice the 99.5th percentile (the hot
   * spot covers ~4.5% of the cells, so its cells stay untouched). */
  memcpy(lb->w, lb->cellw, (size_t)nv * sizeof *lb->w);
  qsort(lb->w, (size_t)nv, sizeof *lb->w, rb_cmp_double);
  {
    double cap = 2.0 * lb->w[(size_t)((double)(nv - 1) * 0.995)];
    if (cap > 0.0 && cap < maxw) {
      for (long g = 0; g < nv; g++)
        if (lb->cellw[g] > cap) lb->cellw[g] = cap, (*clipped)++;
      maxw = cap;
    }
  }
  /* METIS vertex weights: 1..1000 (1000 * N^2 stays far below 2^31). */
  for (long g = 0; g < nv; g++) {
    long v = lround(lb->cellw[g] / maxw * 1000.0);
    lb->vwgt[g] = (idx_t)(v < 1 ? 1 : v);
  }
  if (size == 1) {
    memset(newowner, 0, (size_t)nv * sizeof *newowner);
    *pred = 1.0, *cut = 0;
    return 0;
  }
  {
    idx_t nvtxs = (idx_t)nv, ncon = 1, nparts = size, edgecut = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = 7;   /* reproducible partitions */
    options[METIS_OPTION_CONTIG] = 1; /* connected parts */
    int rc = METIS_PartGraphKway(&nvtxs, &ncon, lb->xadj, lb->adjncy, lb->vwgt,
                                 NULL, NULL, &nparts, NULL, NULL, options,
                                 &edgecut, lb->part);
    if (rc != METIS_OK) {
      snprintf(why, len, "METIS_PartGraphKway failed (%d)", rc);
      return -1;
    }
    *cut = (long)edgecut;
  }
  { /* Renumber the parts so that as many cells as possible stay: greedy
     * matching of parts to ranks by the number of cells they share. */
    long *ov = rb_alloc((size_t)size * (size_t)size, sizeof *ov);
    int *map = rb_alloc((size_t)size, sizeof *map);
    int *used = rb_alloc((size_t)size, sizeof *used);
    double *load = rb_alloc((size_t)size, sizeof *load);
    double sum = 0.0, max = 0.0;
    for (int p = 0; p < size; p++) map[p] = -1;
    for (long g = 0; g < nv; g++) ov[lb->part[g] * size + owner[g]]++;
    for (int k = 0; k < size; k++) {
      long best = -1;
      int bp = 0, br = 0;
      for (int p = 0; p < size; p++)
        for (int r = 0; r < size; r++)
          if (map[p] < 0 && !used[r] && ov[p * size + r] > best)
            best = ov[p * size + r], bp = p, br = r;
      map[bp] = br;
      used[br] = 1;
    }
    for (long g = 0; g < nv; g++) {
      newowner[g] = map[lb->part[g]];
      load[newowner[g]] += lb->cellw[g];
    }
    for (int r = 0; r < size; r++) {
      sum += load[r];
      if (load[r] > max) max = load[r];
    }
    *pred = max / (sum / size);
    free(ov), free(map), free(used), free(load);
  }
  return 0;
}

/* Sum of every cell's state in global id order, on rank 0. */
/* Writes partition owner (size parts), chosen from the Trace-Set of cycle
 * and in force from step from on, to PREFIX.CYCLE in lactl whatif's
 * partition format. 0, or -1 with why filled. */
static int rb_write_partition(const char *prefix, uint64_t cycle,
                              long from, const int *owner, long nv, int size,
                              const char *app, char *why, size_t len) {
  char path[4096], tmp[4100];
  snprintf(path, sizeof path, "%s.%llu", prefix, (unsigned long long)cycle);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    snprintf(why, len, "--write-partitions: %.300s: %s", tmp, strerror(errno));
    return -1;
  }
  fprintf(f,
          "# rebalance partition; app %s; cycle %llu; from cycle %ld; "
          "method metis; parts %d; elements %ld\n# ID RANK, one line per "
          "element, ids ascending\n",
          app, (unsigned long long)cycle, from, size, nv);
  for (long g = 0; g < nv; g++) fprintf(f, "%ld %d\n", g, owner[g]);
  int bad = ferror(f);
  if (fclose(f) || bad || rename(tmp, path)) {
    snprintf(why, len, "--write-partitions: %.300s: write failed", path);
    remove(tmp);
    return -1;
  }
  return 0;
}

static double rb_checksum(const rb_cells_t *c, long n, int rank, int size) {
  long nv = n * n;
  int cnt = (int)c->count, *counts = NULL, *displs = NULL, *gids = NULL;
  double *xs = NULL, *glob = NULL, sum = 0.0;
  if (rank == 0) {
    counts = rb_alloc((size_t)size, sizeof(int));
    displs = rb_alloc((size_t)size, sizeof(int));
  }
  MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 1; r < size; r++) displs[r] = displs[r - 1] + counts[r - 1];
    gids = rb_alloc((size_t)nv, sizeof(int));
    xs = rb_alloc((size_t)nv, sizeof(double));
  }
  MPI_Gatherv(c->gid, cnt, MPI_INT, gids, counts, displs, MPI_INT, 0,
              MPI_COMM_WORLD);
  MPI_Gatherv(c->x, cnt, MPI_DOUBLE, xs, counts, displs, MPI_DOUBLE, 0,
              MPI_COMM_WORLD);
  if (rank == 0) {
    glob = rb_alloc((size_t)nv, sizeof(double));
    for (long i = 0; i < nv; i++) glob[gids[i]] = xs[i];
    for (long g = 0; g < nv; g++) sum += glob[g];
  }
  free(counts), free(displs), free(gids), free(xs), free(glob);
  return sum;
}

/* Rank 0, after a rebalance from set t (its weights of one kind) gave
 * newowner: the partition from t's other kind of weights (robust or
 * measured, when t has both), and both partitions' imbalance by work units
 * over the steps the new one serves (step + 1 .. step + every, not past
 * the last), added to by_kind[LA_WEIGHTS_MEASURED / _ROBUST] with the
 * number of steps in *n_cmp. So robust and measured weights are compared
 * on the same profiled cycle, free of the run-to-run noise of timing.
 * t's weights are its own kind again afterwards. */
static void rb_compare_weights(rb_lb_t *lb, la_traceset_t *t, const rb_opts_t *o,
                               long step, int size, const int *owner,
                               const int *newowner, int *alt, double *load,
                               double by_kind[3], long *n_cmp) {
  int kind = la_traceset_weights_kind(t);
  int other = kind == LA_WEIGHTS_ROBUST ? LA_WEIGHTS_MEASURED
                                        : LA_WEIGHTS_ROBUST;
  double pred = 0.0, cx, cy;
  long cut = 0, clipped = 0;
  char why[256];
  if (!la_traceset_has_robust(t) || la_traceset_set_weights(t, other) != 0)
    return;
  if (rb_partition(lb, t, o->n, size, owner, alt, &pred, &cut, &clipped, why,
                   sizeof why) == 0)
    for (long s = step + 1; s <= step + o->every && s < o->steps; s++) {
      ex_hot_centre(o->n, s, &cx, &cy);
      by_kind[kind] += rb_model_imbalance(o->n, newowner, size, cx, cy, load);
      by_kind[other] += rb_model_imbalance(o->n, alt, size, cx, cy, load);
      (*n_cmp)++;
    }
  la_traceset_set_weights(t, kind);
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
  int rank, size, rc;
  rb_opts_t o;
  rb_cells_t cells;
  rb_lb_t lb;
  int *owner, *newowner, *rows;
  double *load;
  long nv;
  int n_registered = 0, active = 0;
  char note[EX_LA_WHY + 256] = ""; /* la.why and the words around it */
  ex_la_t la = {0};
  /* statistics on rank 0 */
  double sum_meas = 0.0, sum_model = 0.0, sum_static = 0.0;
  double sum_before = 0.0, sum_after = 0.0, sum_pred = 0.0;
  long n_rebal = 0, n_skipped = 0, n_after = 0, moved_total = 0;
  double by_kind[3] = {0.0, 0.0, 0.0}; /* rb_compare_weights */
  long n_cmp = 0;
  int *alt = NULL;
  int after_next = 0;
  long last_profiled = -1;
  double wall, t_start;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* parsed first: the order in which a call's arguments are evaluated is
   * unspecified, and o.n is only set by the parse */
  rc = rb_parse_args(argc, argv, rank, &o);
  rc = ex_exit_status("rebalance", rc, o.n, rank, size);
  if (rc >= 0) return ex_finalize(rc);
  nv = o.n * o.n;
  memset(&lb, 0, sizeof lb);
  owner = rb_alloc((size_t)nv, sizeof *owner);
  newowner = rb_alloc((size_t)nv, sizeof *newowner);
  rows = rb_alloc((size_t)nv, sizeof *rows);
  load = rb_alloc((size_t)size, sizeof *load);
  for (long g = 0; g < nv; g++)
    rows[g] = owner[g] = rb_row_owner(o.n, g / o.n, size);
  rb_cells_init(&cells, o.n, owner, rank);

  /* LA: every rank registers all N^2 cells and probes by global id. */
  if (o.use_la) {
    LA_setGlobalIdFunc(rb_cell_id, NULL);          /* LA: element g is cell g */
    rc = LA_register("rebalance", rank, size, nv); /* LA: */
    ex_la_registered(&la, rc);
  }
  rb_allreduce(&la.registered, &n_registered, 1, MPI_INT, MPI_SUM);

  /* Rank 0 connects to the GlobalAgent's feed; everyone learns whether
   * rebalancing is on. */
  if (rank == 0 && o.rebalance) {
    const char *addr = getenv("LA_GLOBAL");
    if (!o.use_la) {
      snprintf(note, sizeof note, "--no-la: no profile, so no rebalancing");
    } else if (n_registered < size) {
      snprintf(note, sizeof note,
               "LA is not profiling on %d of %d ranks (%s): no per-cell "
               "weights, running without rebalancing",
               size - n_registered, size,
               *la.why ? la.why : "see LA_VERBOSE=1");
    } else {
      rc = la_client_connect(addr, 2000, &lb.client); /* LA: */
      if (rc) {
        snprintf(
            note, sizeof note,
            "no GlobalAgent feed at %s (%s): running without "
            "rebalancing (start la-globalagent and set "
            "LA_GLOBAL=host:feedport)",
            addr && *addr ? addr : LA_CLIENT_DEFAULT_ADDR " (LA_GLOBAL unset)",
            la_client_strerror(rc));
      } else {
        snprintf(lb.app_id, sizeof lb.app_id, "%s", LA_appId());
        active = 1;
      }
    }
  }
  rb_bcast(&active, 1, MPI_INT);
  if (rank == 0 && !o.quiet) {
    printf(
        "rebalance: mesh %ld x %ld cells (%ld elements, 4-neighbour "
        "graph) on %d rank%s, %ld steps; hot spot: %dx cost on a disc of "
        "radius %.1f cells, one turn in %.0f steps\n",
        o.n, o.n, nv, size, size == 1 ? "" : "s", o.steps, EX_HOT,
        0.12 * (double)o.n, EX_TURN);
    if (active)
      printf(
          "rebalance: rebalancing every %ld steps with METIS from the "
          "Trace-Sets of %s at %s\n",
          o.every, lb.app_id,
          getenv("LA_GLOBAL") ? getenv("LA_GLOBAL") : LA_CLIENT_DEFAULT_ADDR);
    else if (!o.rebalance)
      printf(
          "rebalance: --no-rebalance: keeping the initial blocks of "
          "rows\n");
  }
  if (rank == 0 && *note) {
    printf("rebalance: note: %s\n", note);
    fflush(stdout);
  }
  if (active) {
    rb_graph(&lb, o.n);
    if (rank == 0) {
      lb.vwgt = rb_alloc((size_t)nv, sizeof(idx_t));
      lb.part = rb_alloc((size_t)nv, sizeof(idx_t));
      lb.w = rb_alloc((size_t)nv * (size_t)size, sizeof(double));
      lb.cellw = rb_alloc((size_t)nv, sizeof(double));
      alt = rb_alloc((size_t)nv, sizeof *alt);
    }
  }

  rb_barrier();
  t_start = MPI_Wtime();
  for (long step = 0; step < o.steps; step++) {
    double t, tr[2], mine[2], red_max[2], red_sum[2], cx, cy;
    long units;

    rb_barrier(); /* all ranks start the step together */
    t = MPI_Wtime();
    if (o.use_la) {
      if (rank == 0 && LA_isProfiling()) last_profiled = step;
      units = rb_compute_la(&cells, o.n, step, o.work);
      LA_dataXferTagged((uint64_t)step); /* LA: cycle tag = step */
    } else {
      units = rb_compute_plain(&cells, o.n, step, o.work);
    }
    t = MPI_Wtime() - t;

    mine[0] = t, mine[1] = (double)units;
    rb_allreduce(mine, red_max, 2, MPI_DOUBLE, MPI_MAX);
    rb_allreduce(mine, red_sum, 2, MPI_DOUBLE, MPI_SUM);
    tr[0] = red_max[0] / (red_sum[0] / size);
    tr[1] = red_max[1] / (red_sum[1] / size);

    if (rank == 0) {
      double stat;
      ex_hot_centre(o.n, step, &cx, &cy);
      stat = rb_model_imbalance(o.n, rows, size, cx, cy, load);
      sum_meas += tr[0], sum_model += tr[1], sum_static += stat;
      if (after_next) sum_after += tr[0], n_after++, after_next = 0;
      if (!o.quiet)
        printf(
            "step %3ld: imbalance %.2f measured (max %.2f ms, mean %.2f "
            "ms), %.2f by work units; static rows: %.2f\n",
            step, tr[0], red_max[0] * 1e3, red_sum[0] / size * 1e3, tr[1],
            stat);
    }

    /* Every K steps (not after the last): repartition. */
    if (active && (step + 1) % o.every == 0 && step + 1 < o.steps) {
      int hdr[2] = {0, 0}; /* ok, cells moved */
      double pred = 0.0;
      long cut = 0;
      if (rank == 0) {
        char why[512] = "";
        la_traceset_t *ts = NULL;
        double t_fetch = MPI_Wtime();
        uint64_t want = (uint64_t)(last_profiled >= 0 ? last_profiled : step);
        ts = rb_fetch(&lb, want, o.wait_ms, why, sizeof why);
        t_fetch = MPI_Wtime() - t_fetch;
        long clipped = 0;
        double t_part = MPI_Wtime();
        int part_rc = ts ? rb_partition(&lb, ts, o.n, size, owner, newowner,
                                        &pred, &cut, &clipped, why, sizeof why)
                         : -1;
        t_part = MPI_Wtime() - t_part;
        if (part_rc == 0) {
          hdr[0] = 1;
          for (long g = 0; g < nv; g++) hdr[1] += newowner[g] != owner[g];
          n_rebal++;
          moved_total += hdr[1];
          sum_before += tr[0];
          sum_pred += pred;
          after_next = 1;
          rb_compare_weights(&lb, ts, &o, step, size, owner, newowner, alt,
                             load, by_kind, &n_cmp);
          if (o.part_prefix &&
              rb_write_partition(o.part_prefix, la_traceset_cycle(ts),
                                 step + 1, newowner, nv, size, lb.app_id, why,
                                 sizeof why))
            printf("rebalance: %s\n", why);
          if (!o.quiet)
            printf(
                "rebalance after step %ld: Trace-Set of cycle %llu%s "
                "(%.0f ms to get, %ld outliers capped), METIS edge cut "
                "%ld (%.2f ms): imbalance %.2f measured now -> %.2f "
                "predicted by the weights; %d cells move\n",
                step, (unsigned long long)la_traceset_cycle(ts),
                la_traceset_cycle(ts) == want ? "" : " (older: stale)",
                t_fetch * 1e3, clipped, cut, t_part * 1e3, tr[0], pred,
                hdr[1]);
        } else {
          n_skipped++;
          if (!o.quiet)
            printf("rebalance after step %ld: skipped: %s\n", step, why);
        }
        la_traceset_free(ts);
      }
      rb_bcast(hdr, 2, MPI_INT);
      if (hdr[0]) {
        rb_bcast(newowner, (int)nv, MPI_INT);
        rb_migrate(&cells, newowner, size);
        memcpy(owner, newowner, (size_t)nv * sizeof *owner);
      }
    }
  }
  wall = MPI_Wtime() - t_start;

  {
    double checksum = rb_checksum(&cells, o.n, rank, size);
    if (o.use_la) {
      ex_la_stats(&la);
      LA_finalize(); /* LA: */
    }
    ex_la_gather(&la);
    if (rank == 0) {
      double ns = (double)o.steps;
      printf("rebalance: wall time %.3f s for %ld steps\n", wall, o.steps);
      ex_la_report(&la, "rebalance", size, ex_la_off(o.use_la, 0), "");
      if (active)
        printf(
            "rebalance: %ld rebalance%s (%ld skipped), %ld cells moved "
            "in all; imbalance before %.2f, predicted %.2f, measured "
            "after %.2f (averages)\n",
            n_rebal, n_rebal == 1 ? "" : "s", n_skipped, moved_total,
            n_rebal ? sum_before / n_rebal : 0.0,
            n_rebal ? sum_pred / n_rebal : 0.0,
            n_after ? sum_after / n_after : 0.0);
      if (n_cmp)
        printf(
            "rebalance: partitions from the same Trace-Sets' robust and "
            "measured weights: imbalance %.4f robust, %.4f measured by "
            "work units (averages over the %ld steps each would serve)\n",
            by_kind[LA_WEIGHTS_ROBUST] / (double)n_cmp,
            by_kind[LA_WEIGHTS_MEASURED] / (double)n_cmp, n_cmp);
      printf(
          "rebalance: average imbalance (max/mean of rank compute "
          "time) %.2f measured, %.2f by work units, %s; the static row "
          "blocks: %.2f by work units\n",
          sum_meas / ns, sum_model / ns,
          active ? "with rebalancing" : "without rebalancing", sum_static / ns);
      ex_checksum_line("rebalance", checksum);
    }
  }

  la_client_close(lb.client);
  free(lb.xadj), free(lb.adjncy), free(lb.vwgt), free(lb.part);
  free(lb.w), free(lb.cellw), free(lb.ids);
  free(cells.gid), free(cells.x);
  free(owner), free(newowner), free(rows), free(load), free(alt);
  MPI_Finalize();
  return 0;
}
