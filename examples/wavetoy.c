/* SPDX-License-Identifier: BSD-3-Clause */
/* wavetoy.c: the first LA example, a 3-D scalar wave equation profiled per
 * cell.
 *
 * Solves u_tt = c^2 (u_xx + u_yy + u_zz) on the unit cube with a leapfrog
 * scheme in time and the 7-point Laplacian in space, on NX^3 cells. The
 * boundary is Dirichlet (u = 0 just outside the grid); the initial condition
 * is a Gaussian pulse at rest. The grid is cut into slabs along k, one per MPI
 * rank (the remainder of NX / nranks goes one plane each to the first ranks);
 * each time step exchanges one ghost plane with each neighbour
 * (MPI_Sendrecv) and then updates every cell.
 *
 * The LA instrumentation is the one of the design study's WaveToy: register
 * the local grid after MPI_Init, a probe around each cell's update, one
 * LA_dataXfer per time step, LA_finalize before MPI_Finalize. Those lines are
 * marked "LA:" below and listed in examples/README.md. A cell costs about
 * 0.6 ns once the loop is vectorised, and a probe in the loop stops the
 * vectorising even in steps that are not profiled, so the step runs through
 * LA_PROFILED: the probed loop in profiled steps, the plain loop otherwise.
 * --probe row times each row of nx cells instead of each cell (coarser,
 * much cheaper); --probe box times boxes of two rows (nx x 2 cells: one
 * measurement each, stored one value per box); --probe cell-always runs the probed loop in every step (the
 * cost of the plain instrumentation, for the overhead study).
 *
 * --no-la runs the same binary with no LA call at all (a separate copy of the
 * update loop without probes), the baseline of the overhead study.
 *
 * Rank 0 prints a summary: grid, ranks, steps, wall time, LA's status and a
 * checksum (the sum of u over the global grid). LA never changes results: the
 * checksum is the same with LA active, absent, disabled or --no-la. It does
 * not depend on the number of ranks either: each rank sums its k-planes in a
 * fixed order, MPI_Reduce combines a vector of per-plane sums in which every
 * plane has exactly one non-zero contributor (so the reduction is exact), and
 * rank 0 adds the planes in global k order. The checksum line also shows
 * the exact bits (%a), so equal lines mean bit-identical results.
 *
 * Not here: per-cell cost variation (the stencil work is uniform on purpose;
 * see the other examples), output of the field, restart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ex_floor.h"
#include "ex_args.h"
#include "ex_run.h"
#include "la.h" /* LA: the one header */

#define WT_N 64 /* default cells per dimension */
#define WT_STEPS 50
#define WT_MAX_N 2048
#define WT_MAX_STEPS 10000000

/* One rank's slab: (nx+2) x (ny+2) x (nz+2) values with a ghost layer. */
typedef struct wt_slab_s {
  long nx, ny, nz; /* local cells; nz is this rank's share of the k planes */
  long k0;         /* global index of the first local plane */
  long sx, sxy;    /* strides of j and k in the padded array */
  double *u;       /* current time level */
  double *v;       /* previous level; overwritten with the next one */
} wt_slab_t;

/* --probe: what the probed loop times, and whether steps that are not
 * profiled run the plain loop (LA_PROFILED). */
enum {
  WT_PROBE_CELL = 0,
  WT_PROBE_ROW = 1,
  WT_PROBE_CELL_ALWAYS = 2,
  WT_PROBE_BOX = 3
};
static const char *const wt_probe_names[] = {"cell", "row", "cell-always",
                                             "box", NULL};

static void wt_usage(FILE *f) {
  ex_run_usage(
      f, "wavetoy",
      "  3-D wave equation on NX^3 cells, slabs along k, profiled per cell by "
      "LA.\n",
      WT_N, WT_STEPS, 1);
  fprintf(f,
          "  --probe P   cell (default): a probe per cell in profiled steps, "
          "the plain\n"
          "              loop in the others; row: a probe per row of NX "
          "cells;\n"
          "              cell-always: per cell in every step's loop;\n"
          "              box: a probe per box of two rows (NX x 2 cells)\n");
}

static size_t wt_at(const wt_slab_t *s, long i, long j, long k) {
  return (size_t)(i + s->sx * j + s->sxy * k);
}

/* Allocates the slab of this rank and sets the Gaussian pulse at rest. */
static int wt_slab_init(wt_slab_t *s, long n, int rank, int size) {
  double h = 1.0 / (double)(n + 1);
  size_t total;

  s->nx = s->ny = n;
  ex_slab(n, rank, size, &s->nz, &s->k0);
  s->sx = n + 2;
  s->sxy = (n + 2) * (n + 2);
  total = (size_t)s->sxy * (size_t)(s->nz + 2);
  s->u = calloc(total, sizeof *s->u); /* ghosts start (and stay) at 0 */
  s->v = calloc(total, sizeof *s->v);
  if (!s->u || !s->v) return -1;
  for (long k = 1; k <= s->nz; k++) {
    double z = (double)(s->k0 + k) * h - 0.45;
    for (long j = 1; j <= s->ny; j++) {
      double y = (double)j * h - 0.5;
      for (long i = 1; i <= s->nx; i++) {
        double x = (double)i * h - 0.55;
        double g = exp(-(x * x + y * y + z * z) / (2 * 0.08 * 0.08));
        s->u[wt_at(s, i, j, k)] = g;
        s->v[wt_at(s, i, j, k)] = g; /* at rest: u(-dt) = u(0) */
      }
    }
  }
  return 0;
}

/* Fills the two ghost planes of s->u from the neighbouring ranks. At the
 * global boundary the neighbour is MPI_PROC_NULL and the ghost stays 0. */
static void wt_halo(wt_slab_t *s, int rank, int size) {
  int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int up = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  int count = (int)s->sxy;
  double *u = s->u;
  MPI_Sendrecv(u + s->sxy * s->nz, count, MPI_DOUBLE, up, 1, u, count,
               MPI_DOUBLE, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(u + s->sxy, count, MPI_DOUBLE, down, 2, u + s->sxy * (s->nz + 1),
               count, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* What wt_update times: nothing, each cell (LA), each cell by hand (the
 * floor), each row (LA). */
enum { WT_PLAIN = 0, WT_CELL = 1, WT_FLOOR = 2, WT_ROW = 3, WT_BOX = 4 };

/* One cell's leapfrog update, c the index of the cell in the padded array:
 * v <- 2u - v + c2 * lap(u). */
static inline __attribute__((always_inline)) void wt_cell(const double *u,
                                                          double *v, size_t c,
                                                          long sx, long sxy,
                                                          double c2) {
  double lap = u[c - 1] + u[c + 1] + u[c - sx] + u[c + sx] + u[c - sxy] +
               u[c + sxy] - 6.0 * u[c];
  v[c] = 2.0 * u[c] - v[c] + c2 * lap;
}

/* One row of nx cells starting at index row + 1, free of calls: the
 * compiler vectorises it (omp simd, with -fopenmp-simd; restrict tells it
 * that v does not alias u). Each lane computes one cell with the same
 * operations in the same order as wt_cell, so results are bit-identical. */
static inline __attribute__((always_inline)) void wt_row(
    const double *restrict u, double *restrict v, size_t row, long nx, long sx,
    long sxy, double c2) {
#pragma omp simd
  for (long i = 1; i <= nx; i++) wt_cell(u, v, row + (size_t)i, sx, sxy, c2);
}

/* One leapfrog step over every local cell. probe is a compile-time constant
 * at each call site, so the copy without probes contains no LA code at all;
 * it and the row-probed copy run the vectorised wt_row, the per-cell ones a
 * scalar loop with a probe around each cell. */
static inline __attribute__((always_inline)) void wt_update(wt_slab_t *s,
                                                            double c2,
                                                            const int probe,
                                                            double *floor) {
  const double *u = s->u;
  double *v = s->v;
  const long sx = s->sx, sxy = s->sxy;
  for (long k = 1; k <= s->nz; k++) {
    /* two rows a box (the last one alone when ny is odd) */
    for (long j = 1; probe == WT_BOX && j <= s->ny; j += 2) {
      long nj = j < s->ny ? 2 : 1;
      LA_startBox(0, j - 1, k - 1, s->nx, nj, 1); /* LA: */
      for (long y = j; y < j + nj; y++)
        wt_row(u, v, wt_at(s, 0, y, k), s->nx, sx, sxy, c2);
      LA_stopBox(0, j - 1, k - 1, s->nx, nj, 1); /* LA: */
    }
    for (long j = 1; probe != WT_BOX && j <= s->ny; j++) {
      size_t row = wt_at(s, 0, j, k);
      if (probe == WT_PLAIN || probe == WT_ROW) {
        if (probe == WT_ROW) LA_startRow(j - 1, k - 1); /* LA: */
        wt_row(u, v, row, s->nx, sx, sxy, c2);
        if (probe == WT_ROW) LA_stopRow(j - 1, k - 1); /* LA: */
        continue;
      }
      for (long i = 1; i <= s->nx; i++) {
        size_t c = row + (size_t)i;
        uint64_t t0 = 0;
        if (probe == WT_CELL) LA_startCell(i - 1, j - 1, k - 1); /* LA: */
        if (probe == WT_FLOOR) t0 = ex_floor_ticks();
        wt_cell(u, v, c, sx, sxy, c2);
        if (probe == WT_CELL) LA_stopCell(i - 1, j - 1, k - 1); /* LA: */
        if (probe == WT_FLOOR)
          floor[(i - 1) + s->nx * ((j - 1) + s->ny * (k - 1))] +=
              (double)(ex_floor_ticks() - t0);
      }
    }
  }
}

static void wt_update_plain(wt_slab_t *s, double c2) {
  wt_update(s, c2, WT_PLAIN, NULL);
}
static void wt_update_floor(wt_slab_t *s, double c2, double *floor) {
  wt_update(s, c2, WT_FLOOR, floor);
}

/* One step with LA, as --probe says. LA_PROFILED chooses per step: where
 * LA_PROBING is 0 (the step is not profiled) wt_update is the plain loop. */
static void wt_update_la(wt_slab_t *s, double c2, int mode) {
  if (mode == WT_PROBE_ROW)
    LA_PROFILED(
        wt_update(s, c2, LA_PROBING ? WT_ROW : WT_PLAIN, NULL)); /* LA: */
  else if (mode == WT_PROBE_BOX)
    LA_PROFILED(
        wt_update(s, c2, LA_PROBING ? WT_BOX : WT_PLAIN, NULL)); /* LA: */
  else if (mode == WT_PROBE_CELL)
    LA_PROFILED(
        wt_update(s, c2, LA_PROBING ? WT_CELL : WT_PLAIN, NULL)); /* LA: */
  else
    wt_update(s, c2, WT_CELL, NULL); /* probes in every step's loop */
}

/* Sum of u over the global grid, on rank 0, independent of the number of
 * ranks (see the top of the file). Returns 0 on other ranks. */
static double wt_checksum(const wt_slab_t *s, long n, int rank) {
  double *planes = ex_planes(n);
  for (long k = 1; k <= s->nz; k++) {
    double p = 0.0;
    for (long j = 1; j <= s->ny; j++)
      for (long i = 1; i <= s->nx; i++) p += s->u[wt_at(s, i, j, k)];
    planes[s->k0 + k - 1] = p;
  }
  return ex_plane_sum(planes, n, rank);
}

int main(int argc, char **argv) {
  int rank, size, rc;
  ex_run_opts_t o = {.n = WT_N, .steps = WT_STEPS};
  wt_slab_t s;
  double t_reg = 0.0, t0, wall, c2, checksum;
  ex_la_t la = {0};

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  int probe_mode = WT_PROBE_CELL;
  rc = ex_take_choice("wavetoy", &argc, argv, rank, "--probe", wt_probe_names,
                      &probe_mode);
  if (rc) {
    if (rank == 0) wt_usage(stderr);
    return ex_finalize(rc);
  }
  rc = ex_run_parse("wavetoy", argc, argv, rank, size, wt_usage, &o, WT_MAX_N,
                    WT_MAX_STEPS, 1);
  if (rc >= 0) return ex_finalize(rc);
  if (wt_slab_init(&s, o.n, rank, size)) ex_grid_oom("wavetoy", rank, o.n, 3);
  /* c dt / h = 0.5, under the 3-D stability limit 1/sqrt(3). */
  c2 = 0.25;

  if (o.use_la) {
    t_reg = MPI_Wtime();
    LA_setGridOrigin(0, 0, s.k0, o.n, o.n, o.n); /* LA: the slab in the grid */
    rc = LA_registerGrid("wavetoy", rank, size, s.nx, s.ny, s.nz); /* LA: */
    t_reg = MPI_Wtime() - t_reg;
    ex_la_registered(&la, rc);
  }

  double *floor = ex_floor_alloc("wavetoy", o.floor, s.nx * s.ny * s.nz);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (long step = 0; step < o.steps; step++) {
    double *tmp;
    wt_halo(&s, rank, size);
    if (o.use_la) {
      wt_update_la(&s, c2, probe_mode);
      ex_la_cycle(&la, LA_dataXfer()); /* LA: one cycle per time step */
    } else if (o.floor) {
      wt_update_floor(&s, c2, floor);
    } else {
      wt_update_plain(&s, c2);
    }
    tmp = s.u, s.u = s.v, s.v = tmp; /* the new level becomes current */
  }
  wall = ex_wall_max(t0);

  checksum = wt_checksum(&s, o.n, rank);

  if (o.use_la) {
    ex_la_stats(&la);
    LA_finalize(); /* LA: */
  }
  ex_la_gather(&la);

  if (rank == 0) {
    char reg_ms[64];
    snprintf(reg_ms, sizeof reg_ms, " (LA_registerGrid %.1f ms on rank 0)",
             t_reg * 1e3);
    ex_slab_report("wavetoy", &o, size, wall, 2, &la, reg_ms, checksum);
  }

  free(floor);
  free(s.u);
  free(s.v);
  MPI_Finalize();
  return 0;
}
