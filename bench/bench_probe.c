/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_probe.c: the cost of an LA_startProbe+LA_stopProbe pair.
 *
 * Over a loop of 10^5 elements, side by side in one run and interleaved so
 * that machine noise hits every variant alike:
 *   floor       two raw timer reads (rdtsc) and a store per element into a
 *               local array: what hand-written instrumentation costs;
 *   clock_floor the same with two clock_gettime(CLOCK_MONOTONIC) reads;
 *   la          LA_startProbe/LA_stopProbe, wall-time metric, profiled cycle,
 *               interference detection on (the thread's perf event page is
 *               read at start and stop), when the kernel allows it;
 *   la_off      the same with detection off;
 *   unprofiled  the same calls in a cycle that is not profiled;
 *   la_channel  LA_startProbeC/LA_stopProbeC into channel 1 of 2 (the
 *               bench declares two channels, LA_channel), detection as
 *               registered: the plain pair above probes channel 0;
 *   row         LA_startRow/LA_stopRow around each row of RX cells (the
 *               elements are a grid of RX x N/RX x 1 cells): inline, one
 *               value per row in shared memory (layout 5);
 *   row_call    the same row as LA_startBox/LA_stopBox of one whole row,
 *               what an older la.h compiled LA_startRow into: a call,
 *               the same one value per row;
 *   box_spread  a box of the same RX cells that is not a row (RX/2 x 2):
 *               a call and the interval spread over its cells by libla,
 *               what every row probe cost before row values.
 * Row figures are per row (of RX cells), not per element.
 * To interleave on and off in one run the bench flips la__hot.detect, the
 * internal switch LA_register set from LA_INTERFERENCE (the thread's event
 * stays open); an application cannot do that.
 * Each loop body carries a compiler barrier, as a real element computation
 * with calls would, so the compiler cannot hoist the probes' checks out of
 * the loop. Medians over REPS repetitions; ns per element. libla is
 * registered with the in-process agent stand-in of tests/support (the real
 * LocalAgent is not needed to time the probes).
 * Writes argv[1] (build/bench/probe.json): pair_ns (detection as
 * registered: on where possible), floor_ns, ratio, pair_off_ns, ratio_off,
 * interference ("on" or "off (reason)"), unprofiled_pair_ns,
 * clock_floor_ns, empty_loop_ns, channel_pair_ns, row_pair_ns,
 * row_call_ns, box_spread_ns, row_cells, reps, elements.
 */
#include "bench_args.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "la.h"
#include "la_test_peer.h"

#define N 100000
#define REPS 31
#define RX 100 /* cells per grid row */

static inline uint64_t rdtsc(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define BARRIER() __asm__ __volatile__("" ::: "memory")

static double run_floor(double *local) {
  double t = now_ns();
  for (long e = 0; e < N; e++) {
    uint64_t t0 = rdtsc();
    BARRIER();
    uint64_t t1 = rdtsc();
    local[e] += (double)(t1 - t0);
  }
  return (now_ns() - t) / N;
}

static double run_clock_floor(double *local) {
  double t = now_ns();
  for (long e = 0; e < N; e++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    BARRIER();
    clock_gettime(CLOCK_MONOTONIC, &b);
    local[e] +=
        (double)((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec));
  }
  return (now_ns() - t) / N;
}

static double run_la(void) {
  double t = now_ns();
  for (long e = 0; e < N; e++) {
    LA_startProbe(e);
    BARRIER();
    LA_stopProbe(e);
  }
  return (now_ns() - t) / N;
}

static double run_la_channel(void) {
  double t = now_ns();
  for (long e = 0; e < N; e++) {
    LA_startProbeC(1, e);
    BARRIER();
    LA_stopProbeC(1, e);
  }
  return (now_ns() - t) / N;
}

/* ns per row of RX cells: 0 inline rows, 1 whole-row boxes, 2 boxes of
 * RX/2 x 2 cells (spread). */
static double run_rows(int how) {
  const long ny = N / RX;
  double t = now_ns();
  for (long j = 0; j < ny; j++) {
    if (how == 0) {
      LA_startRow(j, 0);
      BARRIER();
      LA_stopRow(j, 0);
    } else if (how == 1) {
      LA_startBox(0, j, 0, RX, 1, 1);
      BARRIER();
      LA_stopBox(0, j, 0, RX, 1, 1);
    } else {
      long j2 = j & ~1L; /* RX/2 x 2 cells */
      LA_startBox((j & 1) * (RX / 2), j2, 0, RX / 2, 2, 1);
      BARRIER();
      LA_stopBox((j & 1) * (RX / 2), j2, 0, RX / 2, 2, 1);
    }
  }
  return (now_ns() - t) / (double)ny;
}

static double run_empty(void) {
  double t = now_ns();
  for (long e = 0; e < N; e++) BARRIER();
  return (now_ns() - t) / N;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  return v[n / 2];
}

int main(int argc, char **argv) {
  const char *out = la_bench_out_path(argc, argv, 1, "build/bench/probe.json");
  la_test_peer_t *peer = la_test_peer_start();
  if (!peer) {
    fprintf(stderr, "bench_probe: cannot start the agent stand-in\n");
    return 1;
  }
  LA_setAgent(la_test_peer_addr(peer));
  LA_setMetric("time");
  LA_channel("plain");   /* channel 0: LA_startProbe */
  LA_channel("channel"); /* channel 1: LA_startProbeC(1, e) */
  int rc = LA_registerGrid("bench_probe", 0, 1, RX, N / RX, 1);
  if (rc) {
    fprintf(stderr, "bench_probe: LA_register: %s\n", LA_lastError());
    return 1;
  }
  double *local = calloc(N, sizeof(double));
  double fl[REPS], cf[REPS], la[REPS], lo[REPS], un[REPS], em[REPS], ch[REPS];
  double rw[REPS], rc_[REPS], bs[REPS];
  int detect = la__hot.detect;
  char interference[200];
  snprintf(interference, sizeof interference, "%s", LA_interference());
  for (int r = -2; r < REPS; r++) { /* two warm-up rounds */
    double a = run_floor(local);
    double b = run_la();
    double h = run_la_channel();
    double w0 = run_rows(0), w1 = run_rows(1), w2 = run_rows(2);
    la__hot.detect = 0;
    double o = run_la();
    la__hot.detect = detect;
    LA_disable();
    LA_dataXfer(); /* next cycle not profiled */
    double c = run_la();
    LA_enable();
    LA_dataXfer(); /* next cycle profiled again */
    double d = run_clock_floor(local);
    double z = run_empty();
    if (r >= 0) {
      em[r] = z;
      fl[r] = a;
      la[r] = b;
      ch[r] = h;
      lo[r] = o;
      un[r] = c;
      cf[r] = d;
      rw[r] = w0;
      rc_[r] = w1;
      bs[r] = w2;
    }
  }
  LA_finalize();
  la_test_peer_stop(peer);
  double floor_ns = median(fl, REPS), pair_ns = median(la, REPS);
  double un_ns = median(un, REPS), cf_ns = median(cf, REPS);
  double off_ns = median(lo, REPS);
  double empty_ns = median(em, REPS);
  double ch_ns = median(ch, REPS);
  double ratio = pair_ns / floor_ns, ratio_off = off_ns / floor_ns;
  double row_ns = median(rw, REPS), row_call_ns = median(rc_, REPS);
  double box_ns = median(bs, REPS);
  printf("probe pair cost, %d elements, median of %d interleaved runs\n", N,
         REPS);
  printf("  %-44s %8.2f ns\n", "floor: 2x rdtsc + store", floor_ns);
  printf("  %-44s %8.2f ns\n", "floor: 2x clock_gettime + store", cf_ns);
  printf("  %-44s %8.2f ns   ratio %.3f (aim <= 1.15)\n",
         "LA pair, profiled, interference detection off", off_ns, ratio_off);
  printf("  %-44s %8.2f ns   ratio %.3f (aim <= 1.25)\n",
         "LA pair, profiled, detection as registered", pair_ns, ratio);
  printf("    %-42s %s\n", "interference detection:", interference);
  printf("  %-44s %8.2f ns   ratio %.3f to the plain pair\n",
         "LA channel pair (channel 1 of 2), as registered", ch_ns,
         ch_ns / pair_ns);
  printf("  %-44s %8.2f ns   (aim < 1)\n",
         "LA_startProbe+LA_stopProbe (not profiled)", un_ns);
  printf("  %-44s %8.2f ns   (loop overhead, included above)\n", "empty loop",
         empty_ns);
  printf("  per row of %d cells (floor: 2x rdtsc + store, as above):\n", RX);
  printf("  %-44s %8.2f ns   ratio %.3f to the floor\n",
         "LA_startRow+LA_stopRow (inline, row value)", row_ns,
         row_ns / floor_ns);
  printf("  %-44s %8.2f ns   ratio %.3f to the floor\n",
         "whole-row box (a call, row value)", row_call_ns,
         row_call_ns / floor_ns);
  printf("  %-44s %8.2f ns   ratio %.3f to the floor\n",
         "box of the same cells (a call, spread)", box_ns, box_ns / floor_ns);
  FILE *f = la_bench_open_out(out);
  if (!f) return 1;
  fprintf(f,
          "{\"pair_ns\": %.3f, \"floor_ns\": %.3f, \"ratio\": %.4f, "
          "\"pair_off_ns\": %.3f, \"ratio_off\": %.4f, "
          "\"interference\": \"%s\", "
          "\"unprofiled_pair_ns\": %.3f, \"clock_floor_ns\": %.3f, "
          "\"empty_loop_ns\": %.3f, \"channel_pair_ns\": %.3f, "
          "\"row_pair_ns\": %.3f, \"row_call_ns\": %.3f, "
          "\"box_spread_ns\": %.3f, \"row_cells\": %d, "
          "\"reps\": %d, \"elements\": %d}\n",
          pair_ns, floor_ns, ratio, off_ns, ratio_off, interference, un_ns,
          cf_ns, empty_ns, ch_ns, row_ns, row_call_ns, box_ns, RX, REPS, N);
  fclose(f);
  free(local);
  return 0;
}
