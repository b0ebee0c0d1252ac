/* SPDX-License-Identifier: BSD-3-Clause */
/* idiom_app.c: a light kernel with the unprofiled-steps idiom of la.h
 * (LA_PROFILED), for `make bench-idiom`, which builds it three ways and
 * counts the instructions each executes with LA off (LA_DISABLE=1):
 *   -DIDIOM_PLAIN    no LA at all (the baseline);
 *   -DIDIOM_INLINE   LA_PROFILED, the kernel `static inline`;
 *   -DIDIOM_ALWAYS   LA_PROFILED, the kernel LA_ALWAYS_INLINE.
 * The kernel is a 7-point stencil whose cells call two helpers (a flux and
 * a material law), the shape of a hydro code's update: forcing the kernel
 * inline can change what the compiler inlines around it. Prints a checksum
 * so that no variant's work is optimised away. Usage: idiom_app [N STEPS].
 */
#include <stdio.h>
#include <stdlib.h>

#include "la.h"

typedef struct {
  long n;
  double *u, *v;
} grid_t;

static long at(const grid_t *g, long i, long j, long k) {
  return (k * g->n + j) * g->n + i;
}

static double flux(const double *u, long c, long s) {
  double a = u[c - s], b = u[c + s];
  return (b - a) * 0.5 + (a > b ? 0.01 * (a - b) : 0.01 * (b - a));
}

static double material(double x, long i, long j) {
  double r = (double)((i - 16) * (i - 16) + (j - 16) * (j - 16));
  return r < 64 ? x * 1.0001 + 1e-9 * r : x;
}

#if defined(IDIOM_ALWAYS)
#define KERNEL LA_ALWAYS_INLINE
#else
#define KERNEL static inline
#endif

KERNEL void sweep(grid_t *g, const int probe) {
  long n = g->n;
  for (long k = 1; k < n - 1; k++)
    for (long j = 1; j < n - 1; j++)
      for (long i = 1; i < n - 1; i++) {
#if !defined(IDIOM_PLAIN)
        if (probe) LA_startCell(i, j, k);
#else
        (void)probe;
#endif
        long c = at(g, i, j, k);
        double f = flux(g->u, c, 1) + flux(g->u, c, n) + flux(g->u, c, n * n);
        g->v[c] = material(g->u[c] + 0.1 * f, i, j);
#if !defined(IDIOM_PLAIN)
        if (probe) LA_stopCell(i, j, k);
#endif
      }
}

int main(int argc, char **argv) {
  grid_t g;
  long steps;
  g.n = argc > 1 ? atol(argv[1]) : 32;
  steps = argc > 2 ? atol(argv[2]) : 20;
  if (g.n < 3 || g.n > 512 || steps < 1) {
    fprintf(stderr, "usage: idiom_app [N (3..512) STEPS (>= 1)]\n");
    return 2;
  }
  size_t cells = (size_t)(g.n * g.n * g.n);
  g.u = calloc(cells, sizeof *g.u);
  g.v = calloc(cells, sizeof *g.v);
  if (!g.u || !g.v) return 1;
  for (size_t c = 0; c < cells; c++) g.u[c] = g.v[c] = (double)(c % 13);
#if !defined(IDIOM_PLAIN)
  int rc = LA_registerGrid("idiom", 0, 1, g.n, g.n, g.n);
  if (rc != 0 && rc != LA_EDISABLED)
    fprintf(stderr, "idiom_app: LA_registerGrid: %s\n", LA_strerror(rc));
#endif
  for (long s = 0; s < steps; s++) {
#if defined(IDIOM_PLAIN)
    sweep(&g, 0);
#else
    LA_PROFILED(sweep(&g, LA_PROBING));
    LA_dataXfer();
#endif
    double *t = g.u;
    g.u = g.v;
    g.v = t;
  }
#if !defined(IDIOM_PLAIN)
  LA_finalize();
#endif
  double sum = 0;
  for (size_t c = 0; c < cells; c++) sum += g.u[c];
  printf("checksum %.17g\n", sum);
  free(g.u);
  free(g.v);
  return 0;
}
