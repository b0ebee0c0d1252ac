/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_whatif.c: `lactl whatif` on a stored set of 10,000 ranks (`make
 * bench-whatif`, docs/performance.md "lactl whatif at 10^4 ranks").
 *
 * The load: one application of 10,000 ranks, each a 5 x 5 x 4 block of a
 * 100 x 100 x 100 grid (LA_registerGrid with LA_setGridOrigin: 1,000,000
 * cells), 3 cycles of whole-ns costs (a smooth field of about 1 us a cell,
 * a hot corner 4x, 2% jitter), compacted as a LocalAgent does (polyline,
 * cv 0.1) and written through the GlobalAgent's own store code
 * (store/store.h: RankStart, CompactTrace, the set closed complete) into
 * a SQLite store file: the cheapest real path to a stored 10^4-rank set
 * (no daemon, no MPI job of 10^4 processes, the same rows).
 *
 * Then build/bin/lactl whatif --db reads it, for each method (metis,
 * rcb, greedy, and the default metis + rcb with --horizon 1), ROUNDS times
 * each, --timing giving its stages (read: the set from the store and its
 * message decoded; mesh: weights decoded, ids, merged; graph; each
 * partitioner; scoring: loads, moved elements, horizon, halo; output).
 * Reported: the median wall time of each stage and of the whole command.
 * The aim: under 10 s a method. Writes argv[1] (build/bench/whatif.json).
 * With LA_BENCH_KEEP=1 the store file is kept (its path printed), to
 * profile lactl whatif on it (perf record build/bin/lactl whatif bench 1
 * --db FILE --method metis --timing).
 */
#include "bench_args.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "la_compact.h"
#include "la_test_msg.h"
#include "la_trace_msg.h"
#include "store.h"

#define RX 20 /* ranks along i, j, k */
#define RY 20
#define RZ 25
#define BX 5 /* cells of a rank along i, j, k */
#define BY 5
#define BZ 4
#define RANKS (RX * RY * RZ)
#define NEL (BX * BY * BZ)
#define CYCLES 3
#define ROUNDS 3
#define APP "bench"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Rank r's costs at cycle c (ns). */
static void values(uint32_t r, uint64_t c, double *x) {
  uint64_t st = (c * 7919 + r) * 2654435761u + 1;
  uint64_t o[3] = {(uint64_t)(r % RX) * BX, (uint64_t)(r / RX % RY) * BY,
                   (uint64_t)(r / (RX * RY)) * BZ};
  for (int e = 0; e < NEL; e++) {
    double i = (double)(o[0] + e % BX), j = (double)(o[1] + e / BX % BY),
           k = (double)(o[2] + e / (BX * BY));
    double base = 1000 * (1 + 0.3 * sin(i * 0.07) * cos(j * 0.05 + k * 0.03));
    if (i * i + j * j + k * k < 30.0 * 30.0) base *= 4; /* the hot corner */
    x[e] = round(base * (1 + 0.02 * (2 * la_compact_rand01(&st) - 1)));
  }
}

/* The store file: RANKS grid ranks, CYCLES complete cycles. */
static int make_store(const char *db) {
  char why[300];
  la_store_t *s = NULL;
  if (la_store_open(db, 0, &s, why, sizeof why)) {
    fprintf(stderr, "bench_whatif: %s\n", why);
    return -1;
  }
  uint64_t dims[3] = {BX, BY, BZ}, glob[3] = {RX * BX, RY * BY, RZ * BZ};
  la_store_begin(s);
  for (uint32_t r = 0; r < RANKS; r++) {
    uint64_t org[3] = {(uint64_t)(r % RX) * BX, (uint64_t)(r / RX % RY) * BY,
                       (uint64_t)(r / (RX * RY)) * BZ};
    La__RankStart rs = la_test_rank_start(APP, APP, r, RANKS, NEL);
    rs.n_grid = 3, rs.grid = dims;
    rs.n_grid_origin = 3, rs.grid_origin = org;
    rs.n_grid_global = 3, rs.grid_global = glob;
    if (la_store_rank_start(s, &rs, NULL)) {
      fprintf(stderr, "bench_whatif: rank %u: %s\n", r, la_store_errmsg(s));
      la_store_close(s);
      return -1;
    }
  }
  if (la_store_commit(s)) {
    fprintf(stderr, "bench_whatif: %s\n", la_store_errmsg(s));
    la_store_close(s);
    return -1;
  }
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  cp.quantum = 1;
  double x[NEL];
  uint64_t seq = 0;
  for (uint64_t c = 0; c < CYCLES; c++) {
    la_store_begin(s);
    for (uint32_t r = 0; r < RANKS; r++) {
      values(r, c, x);
      la_compact_result_t res;
      la_compact(x, NEL, &cp, &res);
      La__SeriesStats st = LA__SERIES_STATS__INIT;
      La__FitError fe = LA__FIT_ERROR__INIT;
      La__CompactTrace t = LA__COMPACT_TRACE__INIT;
      la_test_history_trace(&t, &st, &fe, &res, APP, r, c, NEL, ++seq, 0);
      int was_new;
      int rc = la_store_trace(s, &t, &was_new);
      la_compact_result_free(&res);
      if (rc) {
        fprintf(stderr, "bench_whatif: trace %u/%llu: %s\n", r,
                (unsigned long long)c, la_store_errmsg(s));
        la_store_close(s);
        return -1;
      }
    }
    if (la_store_set_closed(s, APP, c, 1, NULL, 0, 1700000000000000000ull + c) ||
        la_store_commit(s)) {
      fprintf(stderr, "bench_whatif: cycle %llu: %s\n", (unsigned long long)c,
              la_store_errmsg(s));
      la_store_close(s);
      return -1;
    }
  }
  la_store_close(s);
  return 0;
}

/* The stages --timing prints, in its order. */
enum { NSTAGE = 10 };
static const char *const stage[NSTAGE] = {"read",  "mesh",  "graph",
                                          "metis", "rcb",   "greedy",
                                          "current", "scoring", "output",
                                          "total"};

/* Runs lactl whatif with args, its stage times (ms; NAN when absent) from
 * the --timing line on stderr, the command's wall time into *wall (s).
 * 0 or -1. */
static int run_whatif(const char *lactl, const char *db, const char *method,
                      const char *dir, double *ms, double *wall) {
  char errf[600], cmd[2400];
  snprintf(errf, sizeof errf, "%s/timing.txt", dir);
  snprintf(cmd, sizeof cmd,
           "'%s' whatif " APP " 1 --db '%s' %s%s %s --timing --csv -o "
           "'%s/out.csv' 2> '%s'",
           lactl, db, method ? "--method " : "", method ? method : "",
           method ? "" : "--horizon 1", dir, errf);
  double t0 = now_s();
  int rc = system(cmd);
  *wall = now_s() - t0;
  FILE *f = fopen(errf, "r");
  char line[2048] = "";
  int found = 0;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, "lactl whatif: timing:")) {
      found = 1;
      break;
    }
  if (f) fclose(f);
  if (rc != 0 || !found) {
    fprintf(stderr, "bench_whatif: %s exited %d, %s\n", cmd, rc,
            found ? "" : "no timing line");
    return -1;
  }
  for (int i = 0; i < NSTAGE; i++) {
    char key[40];
    snprintf(key, sizeof key, " %s ", stage[i]);
    const char *p = strstr(line, key);
    ms[i] = p ? strtod(p + strlen(key), NULL) : NAN;
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return isnan(x) ? (isnan(y) ? 0 : 1) : isnan(y) ? -1 : x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *outp = la_bench_out_path(argc, argv, 1, "build/bench/whatif.json");
  char lactl[600], self[512];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = 0;
  /* build/bench/bench_whatif -> build/bin/lactl */
  snprintf(lactl, sizeof lactl, "%.*s/../bin/lactl",
           (int)(strrchr(self, '/') - self), self);
  if (access(lactl, X_OK) != 0) {
    fprintf(stderr, "bench_whatif: %s: not built (make -j2 all)\n", lactl);
    return 1;
  }
  char dir[512], db[600];
  if (la_bench_tmpdir("bench_whatif", dir, sizeof dir)) return 1;
  snprintf(db, sizeof db, "%s/store.db", dir);
  double t0 = now_s();
  if (make_store(db)) return 1;
  double tstore = now_s() - t0;
  printf("store: %d ranks x %d cells (%dx%dx%d grid), %d cycles, written in "
         "%.1f s\n",
         RANKS, NEL, RX * BX, RY * BY, RZ * BZ, CYCLES, tstore);
  FILE *f = la_bench_open_out(outp);
  if (!f) return 1;
  static const char *const methods[] = {"metis", "rcb", "greedy", NULL};
  static const char *const label[] = {"metis", "rcb", "greedy",
                                      "default+horizon1"};
  fprintf(f,
          "{\n  \"ranks\": %d, \"cells\": %d, \"grid\": [%d, %d, %d], "
          "\"cycles\": %d, \"rounds\": %d, \"store_write_s\": %.2f,\n"
          "  \"runs\": [\n",
          RANKS, RANKS * NEL, RX * BX, RY * BY, RZ * BZ, CYCLES, ROUNDS,
          tstore);
  printf("%-17s %7s", "method", "wall s");
  for (int i = 0; i < NSTAGE; i++) printf(" %8s", stage[i]);
  printf("   (median of %d, ms)\n", ROUNDS);
  int bad = 0;
  for (int m = 0; m < 4; m++) {
    double ms[ROUNDS][NSTAGE], wall[ROUNDS], med[NSTAGE], col[ROUNDS];
    for (int k = 0; k < ROUNDS; k++)
      if (run_whatif(lactl, db, methods[m], dir, ms[k], &wall[k])) return 1;
    for (int i = 0; i < NSTAGE; i++) {
      for (int k = 0; k < ROUNDS; k++) col[k] = ms[k][i];
      qsort(col, ROUNDS, sizeof *col, cmp_double);
      med[i] = col[ROUNDS / 2];
    }
    qsort(wall, ROUNDS, sizeof *wall, cmp_double);
    double w = wall[ROUNDS / 2];
    bad |= w >= 10;
    printf("%-17s %7.2f", label[m], w);
    for (int i = 0; i < NSTAGE; i++)
      if (isnan(med[i]))
        printf(" %8s", "-");
      else
        printf(" %8.0f", med[i]);
    printf("\n");
    fprintf(f, "    {\"method\": \"%s\", \"wall_s\": %.3f, \"stages_ms\": {",
            label[m], w);
    int first = 1;
    for (int i = 0; i < NSTAGE; i++)
      if (!isnan(med[i])) {
        fprintf(f, "%s\"%s\": %.1f", first ? "" : ", ", stage[i], med[i]);
        first = 0;
      }
    fprintf(f, "}}%s\n", m < 3 ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  printf("aim: under 10 s a method: %s\n", bad ? "NOT met" : "met");
  const char *keep = getenv("LA_BENCH_KEEP");
  if (keep && !strcmp(keep, "1")) {
    printf("store kept: %s\n", db);
    return 0;
  }
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "bench_whatif: could not remove %s\n", dir);
  return 0;
}
