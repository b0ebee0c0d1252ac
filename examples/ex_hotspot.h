/* SPDX-License-Identifier: BSD-3-Clause */
/* ex_hotspot.h: the cost model rebalance and zoltan_balance share, so
 * that their two ways of balancing can be compared on the same load.
 *
 * An N x N grid of cells (global id g = x + N*y). A cell costs 1 work
 * unit, or EX_HOT units inside a hot spot: a disc of radius 0.12 N whose
 * centre circles the middle of the mesh (radius 0.3 N, one turn in
 * EX_TURN steps), so the expensive cells move. A unit of work is a number
 * of iterations of the logistic map. Not part of LA.
 */
#ifndef EX_HOTSPOT_H
#define EX_HOTSPOT_H

#include <math.h>

#define EX_HOT 20     /* cost units of a hot cell; others cost 1 */
#define EX_TURN 200.0 /* steps per turn of the hot spot */

/* Centre of the hot spot at step s, in cell units. */
static inline void ex_hot_centre(long n, long s, double *cx, double *cy) {
  double a = 2.0 * 3.141592653589793 * (double)s / EX_TURN;
  *cx = 0.5 * (double)n + 0.3 * (double)n * cos(a);
  *cy = 0.5 * (double)n + 0.3 * (double)n * sin(a);
}

/* Cost units of cell g at the step whose hot spot centre is (cx, cy). */
static inline int ex_hot_cost(long n, long g, double cx, double cy) {
  double dx = (double)(g % n) + 0.5 - cx, dy = (double)(g / n) + 0.5 - cy;
  double r = 0.12 * (double)n;
  return dx * dx + dy * dy < r * r ? EX_HOT : 1;
}

/* The work of one cell: iterations of the chaotic logistic map, so that
 * the result depends on every single iteration. */
static inline double ex_logistic(double x, long iters) {
  for (long i = 0; i < iters; i++) x = 3.9 * x * (1.0 - x);
  return x;
}

#endif /* EX_HOTSPOT_H */
