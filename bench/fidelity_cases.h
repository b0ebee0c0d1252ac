/* SPDX-License-Identifier: BSD-3-Clause */
/* fidelity_cases.h: the ground truth of the fidelity benchmark.
 *
 * Shared by bench/fidelity_app.c (the MPI program that does the work) and
 * bench/bench_fidelity.c (the driver that compares LA's weights with it):
 * both compute from here how many work units element g costs in profiled
 * cycle c, so the truth never travels through LA.
 *
 * The elements of all ranks form one 2-D grid of FC_NX columns; rank r owns
 * rows [r*rows, (r+1)*rows) (rows = elements per rank / FC_NX), global
 * element g = x + FC_NX*y. A work unit is one dependent multiply-add (a few
 * ns). The cases:
 *   classes  three cost classes, 1x, 11x and 110x (60, 660 and 6,600 units),
 *            in 8x8 blocks interleaved like material regions, each with a
 *            smooth +-30% variation over the grid;
 *   hotspot  a light background (200 units +-30%) and a disc of 10x cost
 *            that moves one cell a profiled cycle diagonally across the
 *            grid, crossing rank boundaries;
 *   stencil  a real 5-point Jacobi update per cell plus 20..100 units
 *            (about 30 to 160 ns a cell: 3 to 16 steps of a 10 ns timer;
 *            lighter cells are not resolved one by one, see
 *            docs/fidelity.md).
 * Costs vary smoothly over the grid so that nearly every element has its
 * own true cost: a rank correlation with many ties could not reach 1 even
 * for perfect weights.
 */
#ifndef FIDELITY_CASES_H
#define FIDELITY_CASES_H

#include <math.h>
#include <string.h>

enum { FC_CLASSES = 0, FC_HOTSPOT = 1, FC_STENCIL = 2, FC_NCASES = 3 };

static const char *const fc_case_names[FC_NCASES] = {"classes", "hotspot",
                                                     "stencil"};

/* Grid width and default elements per rank of each case. */
static const long fc_nx[FC_NCASES] = {64, 128, 256};
static const long fc_default_n[FC_NCASES] = {4096, 8192, 32768};

static inline int fc_case_of(const char *name) {
  for (int i = 0; i < FC_NCASES; i++)
    if (!strcmp(name, fc_case_names[i])) return i;
  return -1;
}

/* Smooth factor in [0.7, 1.3] over the grid. */
static inline double fc_smooth(long x, long y, long nx, long ny) {
  const double tau = 6.283185307179586;
  return 1.0 + 0.3 * sin(tau * 1.5 * (double)x / (double)nx + 0.4) *
                   cos(tau * 1.0 * (double)y / (double)ny + 0.2);
}

/* Work units of global element g in profiled cycle c, for a grid of
 * nx x ny elements. */
static inline long fc_units(int kase, long g, long nx, long ny, long c) {
  long x = g % nx, y = g / nx;
  double s = fc_smooth(x, y, nx, ny);
  if (kase == FC_CLASSES) {
    static const double base[3] = {60, 660, 6600};
    int cls = (int)(((x / 8) + 2 * (y / 8)) % 3);
    return lround(base[cls] * s);
  }
  if (kase == FC_HOTSPOT) {
    double r = (double)ny / 6.0;
    double cx = (double)((c + nx / 8) % nx), cy = (double)((c + ny / 8) % ny);
    double dx = (double)x - cx, dy = (double)y - cy;
    double u = 200.0 * s;
    return lround(dx * dx + dy * dy <= r * r ? 10.0 * u : u);
  }
  return 20 + lround(80.0 * (s - 0.7) / 0.6);
}

#endif
