/* SPDX-License-Identifier: BSD-3-Clause */
/* fidelity_app.c: the MPI program of the fidelity benchmark
 * (bench_fidelity.c runs it under mpiexec).
 *
 *   fidelity_app --case classes|hotspot|stencil [--n N] [--cycles C]
 *                [--pin] [--calib DIR]
 *
 * Each rank registers its rows as a grid (LA_registerGrid: the LocalAgent's
 * robust estimator then knows each cell's neighbours) and runs C cycles
 * over its N elements (cell (x, y) is element x + nx*y), each doing the work
 * units fidelity_cases.h gives it, probed with LA_startProbe/LA_stopProbe,
 * then LA_dataXfer. Ranks do not synchronise between cycles (one barrier
 * before and one after), so that ranks sharing a core do not busy-wait on
 * each other.
 *
 * Before the first cycle each rank calibrates its own true cost: the time
 * of the probed code at several unit counts, read with LA's own timer (the
 * inline la__now() the probes use, so that the truth includes what a probe
 * pair adds to every element) and converted to ns against CLOCK_MONOTONIC.
 * The mean of the middle 80% of the timings per unit count (bins of at
 * least 20, fidelity_calib.h), taken in passes spread over the run's
 * cycles, is the cost without interference: interference is rare at the
 * scale of one element, and a mean (unlike a median or a minimum) is not
 * biased by a timer that advances in steps comparable with the element's
 * cost. With --calib the table goes to
 * DIR/rank<R>.calib: a line with the point count m, then m lines "k ns".
 *
 * --pin pins rank r to CPU r % (CPUs online), so that the driver knows which
 * rank shares a core with what. Uses la__now(), an internal of la.h: a
 * benchmark, not an example to copy.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "fidelity_calib.h"
#include "fidelity_cases.h"
#include "la.h"

#define BARRIER() __asm__ __volatile__("" ::: "memory")

typedef struct fa_opts_s {
  int kase;
  long n, cycles;
  int pin;
  const char *calib;
} fa_opts_t;

/* k dependent multiply-adds: one work unit each. */
static __attribute__((noinline)) double fa_work(long k, double x) {
  for (; k > 0; k--) x = x * 1.0000001 + 1e-9;
  return x;
}

/* One element: the stencil case also updates its cell from 4 neighbours
 * (u has a ghost border: row length nx + 2). */
typedef struct fa_grid_s {
  double *u, *v;
  long nx, rows;
} fa_grid_t;

static double g_sink = 1.0;

static inline void fa_element(int kase, fa_grid_t *gr, long e, long k) {
  if (kase == FC_STENCIL) {
    long x = e % gr->nx + 1, y = e / gr->nx + 1, w = gr->nx + 2;
    const double *u = gr->u;
    gr->v[x + w * y] = 0.25 * (u[x - 1 + w * y] + u[x + 1 + w * y] +
                               u[x + w * (y - 1)] + u[x + w * (y + 1)]) +
                       fa_work(k, u[x + w * y]) * 1e-300;
  } else {
    g_sink = fa_work(k, g_sink);
  }
}

static double fa_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One pass of the real loop with cycle c's units, every element timed as
 * a probe pair times it (no LA call): units into k[], ticks into t[]. */
static void fa_pass(int kase, fa_grid_t *gr, long n, long g0, long ny, long c,
                    double *k, double *t) {
  long nx = fc_nx[kase];
  for (long e = 0; e < n; e++) k[e] = (double)fc_units(kase, g0 + e, nx, ny, c);
  for (long e = 0; e < n; e++) {
    uint64_t t0 = la__now();
    BARRIER();
    fa_element(kase, gr, e, (long)k[e]);
    BARRIER();
    t[e] = (double)(la__now() - t0);
  }
}

/* The true cost as a table of at most FC_CAL points (k units, ns,
 * fidelity_calib.h): FA_PASSES passes of the real loop with the units of
 * cycles spread over the run (p * cycles / FA_PASSES), so that every unit
 * count a rank meets in the run is in its table: a hot spot that reaches a
 * rank only late in the run (hotspot's disc enters rank 1 after about 27
 * cycles) is among them. With cycles 0..9 only, rank 1's table stopped at
 * its light cells and the driver clamped the truth of its hot cells there,
 * 10x too low. Ticks become ns against CLOCK_MONOTONIC over the passes and
 * at least 100 ms. Returns the point count, or -1 (no memory). */
#define FA_PASSES 10
static int fa_calibrate(const fa_opts_t *o, fa_grid_t *gr, long g0, long ny,
                        double *ks, double *cs) {
  long n = o->n, ns = n * FA_PASSES;
  double *k = malloc((size_t)ns * sizeof *k),
         *t = malloc((size_t)ns * sizeof *t);
  double *r = malloc(2048 * sizeof *r);
  if (!k || !t || !r) return -1;
  double m0 = fa_mono_ns();
  uint64_t t0 = la__now();
  for (int p = 0; p < FA_PASSES; p++)
    fa_pass(o->kase, gr, n, g0, ny, (long)p * o->cycles / FA_PASSES, k + p * n,
            t + p * n);
  while (fa_mono_ns() - m0 < 1e8) /* ns per tick over at least 100 ms */
    fa_pass(o->kase, gr, n < 1024 ? n : 1024, g0, ny, 0, r, r + 1024);
  double ns_per_tick = (fa_mono_ns() - m0) / (double)(la__now() - t0);
  int m = fc_calib_table(k, t, ns, ns_per_tick, ks, cs);
  free(k), free(t), free(r);
  return m;
}

static int fa_parse(int argc, char **argv, fa_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->kase = -1;
  o->cycles = 40;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--pin")) {
      o->pin = 1;
    } else if (!strcmp(argv[i], "--case") && v) {
      o->kase = fc_case_of(v), i++;
    } else if (!strcmp(argv[i], "--n") && v) {
      o->n = atol(v), i++;
    } else if (!strcmp(argv[i], "--cycles") && v) {
      o->cycles = atol(v), i++;
    } else if (!strcmp(argv[i], "--calib") && v) {
      o->calib = v, i++;
    } else {
      fprintf(stderr, "fidelity_app: bad argument '%s'\n", argv[i]);
      return -1;
    }
  }
  if (o->kase < 0) {
    fprintf(stderr, "fidelity_app: --case classes|hotspot|stencil needed\n");
    return -1;
  }
  if (o->n <= 0) o->n = fc_default_n[o->kase];
  if (o->n % fc_nx[o->kase] != 0 || o->cycles <= 0 || o->cycles > 100000) {
    fprintf(stderr,
            "fidelity_app: --n must be a positive multiple of %ld, "
            "--cycles in 1..100000\n",
            fc_nx[o->kase]);
    return -1;
  }
  return 0;
}

static void fa_pin(int rank) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET((int)(rank % (ncpu > 0 ? ncpu : 1)), &s);
  if (sched_setaffinity(0, sizeof s, &s) != 0) perror("fidelity_app: pin");
}

int main(int argc, char **argv) {
  int rank = 0, size = 1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  fa_opts_t o;
  if (fa_parse(argc, argv, &o) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
  if (o.pin) fa_pin(rank);
  long nx = fc_nx[o.kase], rows = o.n / nx, ny = rows * size;
  fa_grid_t gr = {calloc((size_t)((nx + 2) * (rows + 2)), sizeof(double)),
                  calloc((size_t)((nx + 2) * (rows + 2)), sizeof(double)), nx,
                  rows};
  long *units = malloc((size_t)o.n * sizeof *units);
  if (!gr.u || !gr.v || !units) MPI_Abort(MPI_COMM_WORLD, 3);
  for (long i = 0; i < (nx + 2) * (rows + 2); i++) gr.u[i] = (double)(i % 7);

  if (LA_registerGrid("fidelity", rank, size, nx, rows, 1) != 0 && rank == 0)
    fprintf(stderr, "fidelity_app: LA_register failed: running unprofiled\n");
  double ks[FC_CAL], cs[FC_CAL];
  int m = fa_calibrate(&o, &gr, rank * o.n, ny, ks, cs);
  if (m <= 0) MPI_Abort(MPI_COMM_WORLD, 3);
  if (o.calib) {
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%d.calib", o.calib, rank);
    FILE *f = fopen(path, "w");
    int bad = !f || fprintf(f, "%d\n", m) < 0;
    for (int i = 0; !bad && i < m; i++)
      bad = fprintf(f, "%.3f %.3f\n", ks[i], cs[i]) < 0;
    if (f && fclose(f) != 0) bad = 1;
    if (bad) {
      perror(path);
      MPI_Abort(MPI_COMM_WORLD, 4);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (long c = 0; c < o.cycles; c++) {
    for (long e = 0; e < o.n; e++)
      units[e] = fc_units(o.kase, e + rank * o.n, nx, ny, c);
    for (long e = 0; e < o.n; e++) {
      LA_startProbe(e);
      BARRIER();
      fa_element(o.kase, &gr, e, units[e]);
      BARRIER();
      LA_stopProbe(e);
    }
    double *t = gr.u;
    gr.u = gr.v, gr.v = t;
    LA_dataXfer();
  }
  LA_finalize();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    printf(
        "fidelity_app: %s, %d ranks x %ld elements, %ld cycles, "
        "true cost %.1f ns at %.0f units .. %.1f ns at %.0f on rank 0 "
        "(sink %g)\n",
        fc_case_names[o.kase], size, o.n, o.cycles, cs[0], ks[0], cs[m - 1],
        ks[m - 1], g_sink + gr.u[1]);
  free(gr.u);
  free(gr.v);
  free(units);
  MPI_Finalize();
  return 0;
}
