/* SPDX-License-Identifier: BSD-3-Clause */
/* multiloop.c: an LA example with several loops per time step over the same
 * cells, every loop probing the same elements, so that each element's value
 * in a profiling cycle is the sum of its three measurements (as in the MRTD
 * code of the design study).
 *
 * A 2-D finite-difference time-domain (Yee) solver for Maxwell's equations,
 * TM mode (E_z, H_x, H_y), on NX x NX cells in normalised units (Courant
 * number 0.5). Each time step runs three loops over the local cells:
 *   1. H update: H_x, H_y from the curl of E_z;
 *   2. E update: E_z from the curl of H, with a lossy dielectric disc
 *      (per-cell coefficients ca, cb);
 *   3. source and boundary: a soft Gaussian-modulated sine source on a small
 *      disc, and a graded absorbing sponge (exponential damping of all three
 *      fields) in the outer SPONGE cells; elsewhere this loop only tests.
 * The cost per cell therefore differs: the sponge and the source cells do
 * more work in loop 3. Outside the grid the fields are 0 (a conducting
 * wall, mostly absorbed by the sponge). Rows (j) are cut into blocks, one
 * per rank (the first NX % P ranks get a row more); loop 1 needs the E_z row
 * above a block and loop 2 the H_x row below it, each exchanged with
 * MPI_Sendrecv just before its loop.
 *
 * LA lines are marked "LA:". The local cells are elements 0..n-1, e = i + nx
 * * j (plain LA_register); each of the three loops wraps a cell's work in
 * LA_startProbeC(ch, e)/LA_stopProbeC(ch, e) with a channel of its own
 * ("h_update", "e_update", "source", declared with LA_channel before
 * LA_register): LA ships their per-element sum as the element's weight and
 * each loop's series beside it (lactl show --channel e_update). One
 * LA_dataXfer per time step. --no-la runs probe-free copies of the loops and
 * makes no LA call.
 *
 * Rank 0 prints a summary and a checksum: the field energy sum(E_z^2 + H_x^2
 * + H_y^2) over the grid, summed per row and reduced exactly as in wavetoy,
 * so that it is bit-identical with LA profiling, absent, disabled or
 * --no-la, and for any number of ranks.
 *
 * Not here: the higher-order spatial scheme of real MRTD, a PML, output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ex_args.h"
#include "ex_run.h"
#include "la.h" /* LA: the one header */

#define ML_N 128 /* default cells per dimension */
#define ML_STEPS 100
#define ML_MAX_N 8192
#define ML_MAX_STEPS 10000000
#define ML_SPONGE 12 /* width of the absorbing layer, in cells */

/* One rank's block of rows, each array (nx+2) x (ny+2) with ghosts. */
typedef struct ml_grid_s {
  long n;      /* global cells per dimension */
  long nx, ny; /* local cells (ny: this rank's rows) */
  long j0;     /* global index of the first local row */
  long sx;     /* stride of j */
  double *ez, *hx, *hy;
  double *ca, *cb; /* E update coefficients (lossy dielectric disc) */
} ml_grid_t;

static void ml_usage(FILE *f) {
  ex_run_usage(
      f, "multiloop",
      "  2-D FDTD (Yee, TM mode) on NX x NX cells, blocks of rows; three loops "
      "per\n  step (H update, E update, source/sponge) probe the same "
      "cells.\n",
      ML_N, ML_STEPS, 0);
}

static size_t ml_at(const ml_grid_t *g, long i, long j) {
  return (size_t)(i + g->sx * j);
}

/* The element index of interior cell (i, j), 1-based: the probes' and the
 * registration's numbering, row by row. */
static inline long ml_elem(const ml_grid_t *g, long i, long j) {
  return g->nx * (j - 1) + (i - 1);
}

/* Allocates this rank's rows (fields 0) and the material coefficients. */
static int ml_grid_init(ml_grid_t *g, long n, int rank, int size) {
  size_t total;
  g->n = n;
  g->nx = n;
  ex_slab(n, rank, size, &g->ny, &g->j0);
  g->sx = n + 2;
  total = (size_t)g->sx * (size_t)(g->ny + 2);
  g->ez = calloc(total, sizeof(double));
  g->hx = calloc(total, sizeof(double));
  g->hy = calloc(total, sizeof(double));
  g->ca = calloc(total, sizeof(double));
  g->cb = calloc(total, sizeof(double));
  if (!g->ez || !g->hx || !g->hy || !g->ca || !g->cb) return -1;
  for (long j = 1; j <= g->ny; j++)
    for (long i = 1; i <= g->nx; i++) {
      /* A disc of relative permittivity 4 and conductivity 0.02 centred at
       * (0.65 n, 0.4 n), radius n/8; vacuum elsewhere. */
      double x = (double)(i - 1) - 0.65 * (double)n;
      double y = (double)(g->j0 + j - 1) - 0.4 * (double)n;
      double r = (double)n / 8.0;
      double eps = 1.0, sig = 0.0;
      if (x * x + y * y < r * r) eps = 4.0, sig = 0.02;
      double loss = sig / (2.0 * eps);
      g->ca[ml_at(g, i, j)] = (1.0 - loss) / (1.0 + loss);
      g->cb[ml_at(g, i, j)] = 0.5 / eps / (1.0 + loss);
    }
  return 0;
}

/* Sends one row of a to the neighbour at dir (+1 up, -1 down) and receives
 * the ghost row on the other side. */
static void ml_exchange(ml_grid_t *g, double *a, int dir, int rank, int size) {
  int up = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int count = (int)g->sx;
  if (dir > 0) /* my top row up; the ghost row below from down */
    MPI_Sendrecv(a + ml_at(g, 0, g->ny), count, MPI_DOUBLE, up, 1,
                 a + ml_at(g, 0, 0), count, MPI_DOUBLE, down, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
  else /* my bottom row down; the ghost row above from up */
    MPI_Sendrecv(a + ml_at(g, 0, 1), count, MPI_DOUBLE, down, 2,
                 a + ml_at(g, 0, g->ny + 1), count, MPI_DOUBLE, up, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* LA: the loops' channels (LA_channel gives 0, 1, 2 in this order). */
static int ml_ch_h = 0, ml_ch_e = 1, ml_ch_src = 2;

/* The two field loops, which differ only in their update of a cell. */
enum { ML_LOOP_H = 1, ML_LOOP_E = 2 };

/* Loop 1's work on cell c: H from the curl of E_z (needs the E_z ghost row
 * above). */
static inline void ml_cell_h(ml_grid_t *g, size_t c) {
  const double ch = 0.5;
  const double *ez = g->ez;
  g->hx[c] -= ch * (ez[c + (size_t)g->sx] - ez[c]);
  g->hy[c] += ch * (ez[c + 1] - ez[c]);
}

/* Loop 2's work on cell c: E_z from the curl of H (needs the H_x ghost row
 * below). */
static inline void ml_cell_e(ml_grid_t *g, size_t c) {
  const double *hx = g->hx, *hy = g->hy;
  g->ez[c] = g->ca[c] * g->ez[c] +
             g->cb[c] * ((hy[c] - hy[c - 1]) - (hx[c] - hx[c - (size_t)g->sx]));
}

/* Loop 1 (ML_LOOP_H) or 2 (ML_LOOP_E) over the local cells, each cell's
 * work probed on the loop's channel. Inlined with a constant loop, so the
 * choice of update is made once, not per cell. */
static inline __attribute__((always_inline)) void ml_loop_field(
    ml_grid_t *g, const int loop, const int probe) {
  const int ch = loop == ML_LOOP_H ? ml_ch_h : ml_ch_e;
  for (long j = 1; j <= g->ny; j++) {
    size_t row = ml_at(g, 0, j);
    for (long i = 1; i <= g->nx; i++) {
      size_t c = row + (size_t)i;
      const long e = ml_elem(g, i, j);
      if (probe) LA_startProbeC(ch, e); /* LA: loop 1 or 2 */
      if (loop == ML_LOOP_H)
        ml_cell_h(g, c);
      else
        ml_cell_e(g, c);
      if (probe) LA_stopProbeC(ch, e); /* LA: loop 1 or 2 */
    }
  }
}

/* Loop 3: the source disc and the absorbing sponge. t is the time. */
static inline __attribute__((always_inline)) void ml_loop_src(ml_grid_t *g,
                                                              double t,
                                                              const int probe) {
  const long n = g->n;
  const double sx0 = 0.3 * (double)n, sy0 = 0.55 * (double)n;
  const double rs = 3.0, omega = 0.3141592653589793; /* 20 steps a period */
  const double env = exp(-((t - 60.0) * (t - 60.0)) / (2.0 * 25.0 * 25.0));
  for (long j = 1; j <= g->ny; j++) {
    long gj = g->j0 + j - 1;
    size_t row = ml_at(g, 0, j);
    long e = g->nx * (j - 1) - 1;
    for (long i = 1; i <= g->nx; i++) {
      size_t c = row + (size_t)i;
      long gi = i - 1;
      long d = gi < gj ? gi : gj; /* distance to the nearest wall */
      if (n - 1 - gi < d) d = n - 1 - gi;
      if (n - 1 - gj < d) d = n - 1 - gj;
      e++;
      if (probe) LA_startProbeC(ml_ch_src, e); /* LA: loop 3 */
      double dx = (double)gi - sx0, dy = (double)gj - sy0;
      double r2 = dx * dx + dy * dy;
      if (r2 < 4.0 * rs * rs) /* soft source */
        g->ez[c] += 0.1 * env * sin(omega * t) * exp(-r2 / (2.0 * rs * rs));
      if (d < ML_SPONGE) { /* graded sponge: sigma grows as (depth)^3 */
        double depth = (double)(ML_SPONGE - d) / ML_SPONGE;
        double f = exp(-0.3 * depth * depth * depth);
        g->ez[c] *= f;
        g->hx[c] *= f;
        g->hy[c] *= f;
      }
      if (probe) LA_stopProbeC(ml_ch_src, e); /* LA: loop 3 */
    }
  }
}

/* One time step: exchange, loop 1, exchange, loop 2, loop 3. */
static inline __attribute__((always_inline)) void ml_step(ml_grid_t *g,
                                                          long step, int rank,
                                                          int size,
                                                          const int probe) {
  ml_exchange(g, g->ez, -1, rank, size); /* E_z row above */
  ml_loop_field(g, ML_LOOP_H, probe);
  ml_exchange(g, g->hx, +1, rank, size); /* H_x row below */
  ml_loop_field(g, ML_LOOP_E, probe);
  ml_loop_src(g, (double)(step + 1), probe);
}

static void ml_step_plain(ml_grid_t *g, long step, int rank, int size) {
  ml_step(g, step, rank, size, 0);
}
static void ml_step_la(ml_grid_t *g, long step, int rank, int size) {
  ml_step(g, step, rank, size, 1);
}

/* Field energy over the grid: per-row sums, exact reduction, rank 0 adds
 * the rows in order. Returns 0 on other ranks. */
static double ml_checksum(const ml_grid_t *g, int rank) {
  double *rows = ex_planes(g->n);
  for (long j = 1; j <= g->ny; j++) {
    double s = 0.0;
    for (long i = 1; i <= g->nx; i++) {
      size_t c = ml_at(g, i, j);
      s += g->ez[c] * g->ez[c] + g->hx[c] * g->hx[c] + g->hy[c] * g->hy[c];
    }
    rows[g->j0 + j - 1] = s;
  }
  return ex_plane_sum(rows, g->n, rank);
}

int main(int argc, char **argv) {
  int rank, size, rc;
  ex_run_opts_t o = {.n = ML_N, .steps = ML_STEPS};
  ml_grid_t g;
  double t0, wall, checksum;
  ex_la_t la = {0};

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  rc = ex_run_parse("multiloop", argc, argv, rank, size, ml_usage, &o, ML_MAX_N,
                    ML_MAX_STEPS, 0);
  if (rc >= 0) return ex_finalize(rc);
  if (ml_grid_init(&g, o.n, rank, size)) ex_grid_oom("multiloop", rank, o.n, 2);

  if (o.use_la) {
    ml_ch_h = LA_channel("h_update");   /* LA: one channel per loop */
    ml_ch_e = LA_channel("e_update");   /* LA: */
    ml_ch_src = LA_channel("source");   /* LA: */
    rc = LA_register("multiloop", rank, size, g.nx * g.ny); /* LA: */
    ex_la_registered(&la, rc);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (long step = 0; step < o.steps; step++) {
    if (o.use_la) {
      ml_step_la(&g, step, rank, size);
      ex_la_cycle(&la, LA_dataXfer()); /* LA: a cycle per step, 3 loops */
    } else {
      ml_step_plain(&g, step, rank, size);
    }
  }
  wall = ex_wall_max(t0);

  checksum = ml_checksum(&g, rank);

  if (o.use_la) {
    ex_la_stats(&la);
    LA_finalize(); /* LA: */
  }
  ex_la_gather(&la);

  if (rank == 0) {
    double cells = (double)o.n * (double)o.n;
    if (!o.quiet) {
      printf(
          "multiloop: grid %ld x %ld cells on %d rank%s (blocks of "
          "%ld..%ld rows), %ld steps, 3 loops per step\n",
          o.n, o.n, size, size == 1 ? "" : "s", o.n / size,
          o.n / size + (o.n % size ? 1 : 0), o.steps);
      printf(
          "multiloop: wall time %.3f s, %.2f ns per cell and step per "
          "rank (3 loops)\n",
          wall, wall * 1e9 * size / (cells * (double)o.steps));
      ex_la_report(&la, "multiloop", size, ex_la_off(o.use_la, 0), "");
    }
    ex_checksum_line("multiloop", checksum);
  }

  free(g.ez), free(g.hx), free(g.hy), free(g.ca), free(g.cb);
  MPI_Finalize();
  return 0;
}
