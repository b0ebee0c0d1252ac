/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_rowcycle.c: the LocalAgent worker's computation on a row-probed
 * cycle, replayed outside the daemon (`make bench-rowcycle`,
 * docs/performance.md "Where a row-probed cycle's CPU goes").
 *
 * Input: the cycles LA_DUMP_RAW wrote for one rank of a row-probed run
 * (LA_BENCH_ROWS_RAW=DIR:APP[:RANK], rank 0 by default; the files
 * DIR/APP.r<rank>.c<tag>.f64 and .fid, in cycle order; with
 * scripts/bench-rowcycle.sh: wavetoy 128^3 on two ranks, period 15,
 * --probe row). Each cycle's row values are what the LocalAgent takes
 * from the buffer (la_app_ipc_take_rows: the row's count times the
 * scale; the dump spreads it over the row's cells, count * scale / nx, and
 * the count is read back from the row's first cell). The grid is
 * LA_BENCH_ROWS_GRID=NX,NY,NZ (default 128,128,64: a rank's slab).
 *
 * Per cycle, what worker.c does with a row-probed cycle, each step timed
 * in thread CPU time:
 *   robust    la_robust_update_ticks over the rows (an estimator of its
 *             own with the parameters la_weights_new gives the rows; over
 *             all the cycles before the other steps, so that neither
 *             update of a cycle follows the other's on the same rows);
 *   weights   la_weights_cycle_recon (the same update on the session's
 *             state, and the robust weights compacted with robust.cv):
 *             minus `robust`, the robust series' compaction;
 *   measured  la_compact of the row values;
 *   spread    la_compact_spread of both encodings.
 (The history's check, refit and learn are not replayed.) Seven rounds
 * (LA_BENCH_ROWS_ROUNDS, up to 101, for a profiler) replay every cycle
 * from a fresh state; reported are the medians over the rounds of each
 * step's CPU time per cycle (µs), the share of rows whose robust weight
 * equals the measured value and how they lie (runs, aligned groups of 8),
 * the estimator's counts (held, rises), the bytes of both encodings, and
 * FNV-1a hashes of all the weights and of all the robust encodings (two
 * builds give the same results when these agree; every round must give
 * the first round's).
 * Writes argv[1] (build/bench/rowcycle.json).
 */
#include "bench_args.h"
#include "bench_replay.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>

#include "la_compact.h"
#include "robust.h"
#include "weights.h"

#define ROUNDS_MAX 101
#define MAX_CYCLES 4096

typedef struct cyc {
  double *x;    /* row values, ns */
  double scale; /* ns per count */
} cyc_t;

/* Reads one cycle's rows; 0 or -1 (message printed). */
static int read_cycle(const char *dir, const char *app, int rank, uint64_t tag,
                      uint64_t ncell, uint64_t nx, cyc_t *c) {
  char path[1024];
  if (la_bench_dump_scale("bench_rowcycle", dir, app, rank, tag, &c->scale) != 0)
    return -1;
  FILE *f;
  snprintf(path, sizeof path, "%s/%s.r%d.c%llu.f64", dir, app, rank,
           (unsigned long long)tag);
  f = fopen(path, "rb");
  double *cells = malloc(ncell * sizeof *cells);
  size_t got = f && cells ? fread(cells, sizeof *cells, ncell, f) : 0;
  if (f) fclose(f);
  if (got != ncell) {
    fprintf(stderr, "bench_rowcycle: %s: not %llu doubles\n", path,
            (unsigned long long)ncell);
    free(cells);
    return -1;
  }
  uint64_t nr = ncell / nx;
  c->x = malloc(nr * sizeof *c->x);
  for (uint64_t k = 0; k < nr && c->x; k++)
    c->x[k] = round(cells[k * nx] * (double)nx / c->scale) * c->scale;
  free(cells);
  return c->x ? 0 : -1;
}

/* The timer's resolution as the rows show it: the median gap between
 * consecutive distinct counts of the first cycle (ns). */
static double resolution(const cyc_t *c, uint64_t nr) {
  uint64_t *v = malloc(nr * sizeof *v), m = 0;
  for (uint64_t k = 0; k < nr; k++) v[k] = (uint64_t)llround(c->x[k] / c->scale);
  qsort(v, nr, sizeof *v, la_bench_cmp_u64);
  double *gap = malloc(nr * sizeof *gap);
  for (uint64_t k = 1; k < nr; k++)
    if (v[k] != v[k - 1]) gap[m++] = (double)(v[k] - v[k - 1]);
  double g = m ? la_bench_median(gap, (int)m) : 1;
  free(v);
  free(gap);
  return g * c->scale;
}

int main(int argc, char **argv) {
  const char *out =
      la_bench_out_path(argc, argv, 1, "build/bench/rowcycle.json");
  char dir[512], app[256];
  int rank;
  if (la_bench_dump_spec("bench_rowcycle", "LA_BENCH_ROWS_RAW",
                         "scripts/bench-rowcycle.sh", dir, sizeof dir, app,
                         sizeof app, &rank) != 0)
    return 2;
  uint64_t g[3] = {128, 128, 64};
  const char *gs = getenv("LA_BENCH_ROWS_GRID");
  if (gs && sscanf(gs, "%lu,%lu,%lu", &g[0], &g[1], &g[2]) != 3) return 2;
  uint64_t nx = g[0], nr = g[1] * g[2], ncell = nx * nr;
  static uint64_t tags[MAX_CYCLES];
  int nc = la_bench_dump_tags(dir, app, rank, tags, MAX_CYCLES);
  if (nc <= 0) {
    fprintf(stderr, "bench_rowcycle: no cycles %s/%s.r%d.c*.f64\n", dir, app,
            rank);
    return 1;
  }
  cyc_t *cy = calloc((size_t)nc, sizeof *cy);
  for (int i = 0; i < nc; i++)
    if (read_cycle(dir, app, rank, tags[i], ncell, nx, &cy[i]) != 0) return 1;
  double res = resolution(&cy[0], nr);

  /* the rows' parameters as la__rows_state (session.c) gives them */
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  double tol = 0.25, rcv = 0.02;
  uint32_t confirm = 3;
  uint64_t rg[2] = {g[1], g[2]};
  la_robust_params_t rp;
  la_robust_params_default(&rp);
  rp.tol = tol;
  rp.confirm = confirm;
  rp.abs_tol = 2 * res;
  rp.stride[0] = g[1];

  /* LA_BENCH_ROWS_ROUNDS: more rounds (for a profiler), 7 by default */
  const char *rs = getenv("LA_BENCH_ROWS_ROUNDS");
  int ROUNDS = rs ? atoi(rs) : 7;
  if (ROUNDS < 1 || ROUNDS > ROUNDS_MAX) ROUNDS = 7;
  double t_rob[ROUNDS_MAX], t_w[ROUNDS_MAX], t_meas[ROUNDS_MAX],
      t_spr[ROUNDS_MAX];
  uint64_t h_w = 0, h_enc = 0, same = 0, held = 0, rises = 0;
  uint64_t same_runs = 0, long8 = 0; /* runs of equal rows; aligned 8s */
  size_t rbytes = 0, mbytes = 0;
  double *y = malloc(nr * sizeof *y), *rw = malloc(nr * sizeof *rw);
  for (int round = 0; round < ROUNDS; round++) {
    la_robust_t *r = NULL;
    la_weights_t *w = NULL;
    if (la_robust_new(nr, &rp, &r) != 0 ||
        la_weights_new(nr, res, 0, tol, confirm, rcv, rg, 2, &w) != 0) {
      fprintf(stderr, "bench_rowcycle: no estimator\n");
      return 1;
    }
    double sr = 0, sw = 0, sm = 0, ss = 0;
    uint64_t hw = 0xcbf29ce484222325ull, he = hw;
    /* the estimator alone over all the cycles first: run just before the
     * worker's own update of the same cycle, it would have trained the
     * branch predictor on the same rows (that update ran 20-25 us faster
     * than the first) */
    la_robust_stats_t *sts = calloc((size_t)nc, sizeof *sts);
    double *ys = malloc((size_t)nc * nr * sizeof *ys);
    if (!sts || !ys) return 1;
    for (int i = 0; i < nc; i++) {
      double t0 = la_bench_thread_ns() / 1e3;
      la_robust_update_ticks(r, cy[i].x, NULL, ys + (size_t)i * nr, &sts[i],
                             cy[i].scale);
      sr += la_bench_thread_ns() / 1e3 - t0;
    }
    for (int i = 0; i < nc; i++) {
      la_compact_params_t p = cp;
      p.quantum = cy[i].scale;
      la_robust_stats_t st = sts[i], st2;
      la_compact_result_t res_m, res_r, sp_m, sp_r;
      memcpy(y, ys + (size_t)i * nr, nr * sizeof *y);
      double t1 = la_bench_thread_ns() / 1e3;
      int rc = la_weights_cycle_recon(w, cy[i].x, NULL, &p, &res_r, &st2, rw);
      double t2 = la_bench_thread_ns() / 1e3;
      rc |= la_compact(cy[i].x, nr, &p, &res_m);
      double t3 = la_bench_thread_ns() / 1e3;
      rc |= la_compact_spread(&res_m, nx, &sp_m);
      rc |= la_compact_spread(&res_r, nx, &sp_r);
      double t4 = la_bench_thread_ns() / 1e3;
      if (rc != 0) {
        fprintf(stderr, "bench_rowcycle: compaction failed\n");
        return 1;
      }
      sw += t2 - t1;
      sm += t3 - t2;
      ss += t4 - t3;
      hw = la_bench_fnv(hw, y, nr * sizeof *y);
      hw = la_bench_fnv(hw, rw, nr * sizeof *rw);
      he = la_bench_fnv(he, res_r.bytes, res_r.len);
      if (round == 0) {
        for (uint64_t k = 0; k < nr; k++) {
          int eq = y[k] == cy[i].x[k];
          same += eq;
          same_runs += eq && (k == 0 || y[k - 1] != cy[i].x[k - 1]);
          long8 += eq && k % 8 == 7 && memcmp(y + k - 7, cy[i].x + k - 7,
                                              8 * sizeof *y) == 0;
        }
        held += st.suspect; /* rows: counted once each (n / nx is not
                               one row of the rows' estimator) */
        rises += st.rises;
        rbytes += res_r.len;
        mbytes += res_m.len;
      } else if (hw == 0) {
        return 1;
      }
      la_compact_result_free(&res_m);
      la_compact_result_free(&res_r);
      la_compact_result_free(&sp_m);
      la_compact_result_free(&sp_r);
    }
    if (round == 0) {
      h_w = hw;
      h_enc = he;
    } else if (hw != h_w || he != h_enc) {
      fprintf(stderr, "bench_rowcycle: round %d differs from round 0\n",
              round);
      return 1;
    }
    t_rob[round] = sr / nc;
    t_w[round] = sw / nc;
    t_meas[round] = sm / nc;
    t_spr[round] = ss / nc;
    la_robust_free(r);
    la_weights_free(w);
    free(sts);
    free(ys);
  }
  double mr = la_bench_median(t_rob, ROUNDS), mw = la_bench_median(t_w, ROUNDS);
  double mm = la_bench_median(t_meas, ROUNDS), ms = la_bench_median(t_spr, ROUNDS);
  double fsame = (double)same / ((double)nr * nc);
  printf("bench_rowcycle: %d cycles of %llu rows (rank %d), timer resolution "
         "%.2f ns, %d rounds, thread CPU µs per cycle (medians)\n",
         nc, (unsigned long long)nr, rank, res, ROUNDS);
  printf("  robust estimator (la_robust_update_ticks)   %8.1f\n", mr);
  printf("  robust estimator + robust compaction        %8.1f  (compaction "
         "%.1f)\n", mw, mw - mr);
  printf("  measured rows' compaction                   %8.1f\n", mm);
  printf("  spread of both encodings                    %8.1f\n", ms);
  printf("  rows with robust == measured %.3f; held %.1f, rises %.1f per "
         "cycle; bytes per cycle: measured %.0f, robust %.0f\n",
         fsame, (double)held / nc, (double)rises / nc, (double)mbytes / nc,
         (double)rbytes / nc);
  printf("  runs of rows with robust == measured: %.1f per cycle, mean "
         "length %.2f; aligned groups of 8 all equal: %.3f of the groups\n",
         (double)same_runs / nc, same_runs ? (double)same / same_runs : 0,
         (double)long8 / ((double)(nr / 8) * nc));
  printf("  hashes: weights %016llx robust encodings %016llx\n",
         (unsigned long long)h_w, (unsigned long long)h_enc);
  FILE *f = la_bench_open_out(out);
  if (!f) return 1;
  {
    fprintf(f,
            "{\"cycles\": %d, \"rows\": %llu, \"rounds\": %d, "
            "\"robust_us\": %.2f, \"robust_compact_us\": %.2f, "
            "\"measured_compact_us\": %.2f, \"spread_us\": %.2f, "
            "\"robust_equals_measured\": %.4f, \"equal_run_mean\": %.2f, "
            "\"held_per_cycle\": %.1f, "
            "\"rises_per_cycle\": %.1f, \"measured_bytes\": %.0f, "
            "\"robust_bytes\": %.0f, \"hash_weights\": \"%016llx\", "
            "\"hash_robust_enc\": \"%016llx\"}\n",
            nc, (unsigned long long)nr, ROUNDS, mr, mw - mr, mm, ms, fsame,
            same_runs ? (double)same / same_runs : 0, (double)held / nc, (double)rises / nc, (double)mbytes / nc,
            (double)rbytes / nc, (unsigned long long)h_w,
            (unsigned long long)h_enc);
    if (fclose(f) != 0) {
      perror(out);
      return 1;
    }
  }
  for (int i = 0; i < nc; i++) free(cy[i].x);
  free(cy);
  free(y);
  free(rw);
  return 0;
}
