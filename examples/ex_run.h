/* SPDX-License-Identifier: BSD-3-Clause */
/* ex_run.h: what every C example does around its solver, written once: the
 * start-up checks, the block decomposition of planes (or rows) over ranks,
 * the exact checksum reduction, and LA's bookkeeping for the closing lines
 * (what registration said, whether profiling stopped, the statistics and
 * the summary).
 *
 * Not part of LA, and not the instrumentation: the calls an application
 * makes (LA_register, LA_startProbe/LA_stopProbe, LA_dataXfer, LA_finalize)
 * stay in each example, marked "LA:". This header only reads LA's status
 * (LA_appId, LA_lastError, LA_strerror, LA_getStat) to report it.
 */
#ifndef EX_RUN_H
#define EX_RUN_H

#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "ex_args.h"
#include "la.h"

/* For a solver's early exit (after --help, on a usage error): finalizes
 * MPI and returns rc, the exit status. */
static inline int ex_finalize(int rc) {
  MPI_Finalize();
  return rc;
}

/* calloc of n (at least 1) items of size bytes, or a message and
 * MPI_Abort. */
static inline void *ex_alloc(const char *prog, size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "%s: out of memory\n", prog);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return p;
}

/* When a solver's grid (n^dims cells) does not fit: a message and
 * MPI_Abort. */
static inline void ex_grid_oom(const char *prog, int rank, long n, int dims) {
  fprintf(stderr, "%s: rank %d: out of memory for %ld^%d cells\n", prog, rank,
          n, dims);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The --floor mode's array of per-cell times (cells of them, zeroed), or
 * NULL when floor is 0. Aborts (ex_alloc) when out of memory. */
static inline double *ex_floor_alloc(const char *prog, int floor,
                                     long cells) {
  return floor ? ex_alloc(prog, (size_t)cells, sizeof(double)) : NULL;
}

/* Rank's share of n planes: *count of them from global plane *first; the
 * first n % size ranks get one more. */
static inline void ex_slab(long n, int rank, int size, long *count,
                           long *first) {
  long base = n / size, extra = n % size;
  *count = base + (rank < extra ? 1 : 0);
  *first = rank * base + (rank < extra ? rank : extra);
}

/* n zeroed per-plane sums, for ex_plane_sum (aborts when out of memory). */
static inline double *ex_planes(long n) {
  double *p = calloc((size_t)n, sizeof *p);
  if (!p) MPI_Abort(MPI_COMM_WORLD, 1);
  return p;
}

/* The checksum: planes (from ex_planes) holds this rank's sums of its own
 * planes, 0 elsewhere. Every plane has one non-zero contributor, so the
 * reduction is exact; rank 0 then adds the planes in global order, and the
 * result does not depend on the number of ranks. Frees planes. Collective;
 * returns the sum on rank 0, 0 on the others. */
static inline double ex_plane_sum(double *planes, long n, int rank) {
  double *total = rank == 0 ? ex_planes(n) : NULL, sum = 0.0;
  MPI_Reduce(planes, total, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (long k = 0; k < n; k++) sum += total[k];
  free(planes);
  free(total);
  return sum;
}

/* Room for LA_lastError's whole text (libla keeps at most 511 bytes of
 * it): a reason cut short loses its advice, which comes last. */
#define EX_LA_WHY 512

/* LA's outcome on this rank, and over all ranks after ex_la_gather. */
typedef struct ex_la_s {
  int registered;                 /* LA_register returned 0 */
  int late;                       /* first failing LA_dataXfer, else 0 */
  char app_id[LA_MAX_APP_ID + 1]; /* when registered */
  char why[EX_LA_WHY];            /* why not registered */
  char lost[EX_LA_WHY];           /* why profiling stopped (late) */
  long stats[4];                  /* cycles, profiled, skipped, waits */
  int n_registered;               /* rank 0: ranks registered */
  long sums[4];                   /* rank 0: stats over all ranks */
} ex_la_t;

/* Records what LA_register (or LA_registerGrid) returned: the application
 * id, or why the program runs unprofiled. */
static inline void ex_la_registered(ex_la_t *la, int rc) {
  la->registered = rc == 0;
  if (la->registered)
    snprintf(la->app_id, sizeof la->app_id, "%s", LA_appId());
  else
    snprintf(la->why, sizeof la->why, "%s",
             *LA_lastError() ? LA_lastError() : LA_strerror(rc));
}

/* Records what LA_dataXfer returned: the first failure is kept (profiling
 * stops; the run goes on). */
static inline void ex_la_cycle(ex_la_t *la, int rc) {
  if (rc && !la->late) {
    la->late = rc;
    snprintf(la->lost, sizeof la->lost, "%s", LA_lastError());
  }
}

/* Reads this rank's statistics; call just before LA_finalize. */
static inline void ex_la_stats(ex_la_t *la) {
  la->stats[0] = LA_getStat(LA_STAT_CYCLES);
  la->stats[1] = LA_getStat(LA_STAT_PROFILED);
  la->stats[2] = LA_getStat(LA_STAT_SKIPPED);
  la->stats[3] = LA_getStat(LA_STAT_WAITS);
}

/* Sums registrations and statistics on rank 0. Collective. */
static inline void ex_la_gather(ex_la_t *la) {
  MPI_Reduce(&la->registered, &la->n_registered, 1, MPI_INT, MPI_SUM, 0,
             MPI_COMM_WORLD);
  MPI_Reduce(la->stats, la->sums, 4, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
}

/* Rank 0's summary of LA (after ex_la_gather): off is why LA made no call
 * ("(--no-la): no LA call made"), NULL when it was on; detail follows the
 * application id on the "registered" line ("" for none). */
static inline void ex_la_report(const ex_la_t *la, const char *prog, int size,
                                const char *off, const char *detail) {
  if (off) {
    printf("%s: LA off %s\n", prog, off);
    return;
  }
  if (la->n_registered > 0)
    printf(
        "%s: LA registered on %d of %d ranks as %s%s; cycles %ld, "
        "profiled %ld, skipped %ld, waits %ld (all ranks)\n",
        prog, la->n_registered, size, la->registered ? la->app_id : "?", detail,
        la->sums[0], la->sums[1], la->sums[2], la->sums[3]);
  else
    printf("%s: LA not registered, running unprofiled: %s\n", prog, la->why);
  if (la->n_registered > 0 && !la->registered)
    printf("%s: LA not registered on rank 0: %s\n", prog, la->why);
  if (la->registered && la->late)
    printf("%s: LA stopped profiling on rank 0 during the run: %s\n", prog,
           la->lost);
}

/* Rank 0's first line for an n^3 grid cut into k-slabs (ex_slab). */
static inline void ex_slab_line(const char *prog, long n, int size,
                                long steps) {
  printf(
      "%s: grid %ld^3 cells on %d rank%s (k-slabs of %ld..%ld planes), "
      "%ld steps\n",
      prog, n, size, size == 1 ? "" : "s", n / size,
      n / size + (n % size ? 1 : 0), steps);
}

/* Seconds since t0 (MPI_Wtime) of the slowest rank, on rank 0 (0 on the
 * others). Collective. */
static inline double ex_wall_max(double t0) {
  double t = MPI_Wtime() - t0, wall = 0.0;
  MPI_Reduce(&t, &wall, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return wall;
}

/* What ex_la_report says when LA is off in a solver example: NULL when
 * use_la, else why no LA call was made (--floor or --no-la). */
static inline const char *ex_la_off(int use_la, int floor) {
  if (use_la) return NULL;
  return floor ? "(--floor): cells timed by hand, no LA call made"
               : "(--no-la): no LA call made";
}

/* Rank 0's last line: the checksum, also its exact bits (%a), so that
 * equal lines mean bit-identical results. */
static inline void ex_checksum_line(const char *prog, double checksum) {
  printf("%s: checksum %.10e (%a)\n", prog, checksum, checksum);
  fflush(stdout);
}

/* Rank 0's closing lines of an n^3 k-slab solver, after ex_la_gather:
 * unless o->quiet, the grid, the wall time per cell update (with prec
 * decimals) and LA's summary (detail as ex_la_report's); then the
 * checksum. */
static inline void ex_slab_report(const char *prog, const ex_run_opts_t *o,
                                  int size, double wall, int prec,
                                  const ex_la_t *la, const char *detail,
                                  double checksum) {
  double cells = (double)o->n * (double)o->n * (double)o->n;
  if (!o->quiet) {
    ex_slab_line(prog, o->n, size, o->steps);
    printf("%s: wall time %.3f s, %.*f ns per cell update per rank\n", prog,
           wall, prec, wall * 1e9 * size / (cells * (double)o->steps));
    ex_la_report(la, prog, size, ex_la_off(o->use_la, o->floor), detail);
  }
  ex_checksum_line(prog, checksum);
}

#endif
