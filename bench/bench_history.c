/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_history.c: stored bytes per element-cycle with and without bounded
 * history (`make bench-history`, docs/history.md).
 *
 * For each case, 1,000 cycles of 4 ranks of 8,192 elements go through what
 * the LocalAgent does (la_compact with the default polyline cv 0.1 and a
 * timer quantum of 1 ns; localagent/history.c's check, refit and learn)
 * into the GlobalAgent's store (store/store.h, a SQLite file, the
 * default history.full_cycles = 16), once with history off (every cycle in
 * full, as before) and once on. The cases (whole-ns costs, like a timer's):
 *   steady   a fixed cost field (smooth, with 8x8 classes) and 2% jitter;
 *   hotspot  the same field and a 10x hot disc that moves 64 elements a
 *            cycle;
 *   noisy    the fixed field with 8% jitter.
 * Reported: bytes of the store in use (pages minus free pages) per
 * element-cycle, the ratio, the share of cycles stored as references. The
 * bound is checked on every cycle read back from the store (what lactl
 * export and libla_client get) against the true values the bench made
 * (the values LA_DUMP_RAW would dump; the end-to-end check against a real
 * dump is test_ground_truth's): per segment of the encoding served the
 * RMSE of the error is at most cv times |mean|, and the stored sum equals
 * the true sum exactly. Writes argv[1] (build/bench/history.json).
 */
#include "bench_args.h"
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "history.h"
#include "la_compact.h"
#include "la_test_msg.h"
#include "la_trace_msg.h"
#include "store.h"

#define NEL 8192
#define RANKS 4
#define CYCLES 1000

enum { C_STEADY, C_HOTSPOT, C_NOISY, NCASES };
static const char *const names[NCASES] = {"steady", "hotspot", "noisy"};

static void values(int kase, uint32_t rank, uint64_t c, double *x) {
  uint64_t st = (c * 7919 + rank) * 2654435761u + 1;
  double jit = kase == C_NOISY ? 0.08 : 0.02;
  for (long i = 0; i < NEL; i++) {
    long g = (long)rank * NEL + i, gx = g % 128, gy = g / 128;
    double base = (((gx / 8) + (gy / 8)) % 3 == 0 ? 900 : 300) *
                  (1 + 0.3 * sin(gx * 0.05) * cos(gy * 0.03));
    if (kase == C_HOTSPOT) {
      long h = (long)((c * 64) % (RANKS * NEL));
      if (labs(g - h) < 96) base *= 10;
    }
    x[i] = round(base * (1 + jit * (2 * la_compact_rand01(&st) - 1)));
  }
}

/* Whether d is within cv of x on every record of the encoding b. */
static int within(const double *x, const double *d, const uint8_t *b,
                  size_t len, const la_compact_params_t *cp) {
  la_trace_t *t = NULL;
  if (la_trace_open(b, len, &t, NULL, 0)) return 0;
  size_t k = la_trace_segment_count(t);
  uint64_t *st = malloc((k ? k : 1) * sizeof *st);
  for (size_t i = 0; i < k; i++) {
    la_trace_segment_t sg;
    la_trace_segment(t, i, &sg);
    st[i] = sg.first;
  }
  la_trace_close(t);
  int ok = la_history_within(x, d, NEL, cp, st, k);
  free(st);
  return ok;
}

typedef struct res_s {
  double bytes_per_ec, refs, secs;
  long bound_fail, sum_fail;
} res_t;

static int run(const char *dir, int kase, int hist, res_t *out) {
  char db[600], why[300];
  snprintf(db, sizeof db, "%s/%s-%d.db", dir, names[kase], hist);
  la_store_t *s = NULL;
  if (la_store_open(db, 0, &s, why, sizeof why)) {
    fprintf(stderr, "bench_history: %s\n", why);
    return -1;
  }
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  cp.quantum = 1;
  la_history_budget_t budget = {hist ? 1u << 30 : 0, 0};
  la_history_t *h[RANKS];
  for (uint32_t r = 0; r < RANKS; r++) {
    La__RankStart rs = la_test_rank_start("bench", "bench", r, RANKS, NEL);
    la_store_rank_start(s, &rs);
    h[r] = la_history_new(&budget, NEL, 4, &cp, NULL);
  }
  double *x = malloc(NEL * sizeof *x), *d = malloc(NEL * sizeof *d);
  long refs = 0;
  uint64_t seq = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (uint64_t c = 1; c <= CYCLES; c++) {
    la_store_begin(s);
    for (uint32_t r = 0; r < RANKS; r++) {
      values(kase, r, c, x);
      la_compact_result_t res;
      la_compact(x, NEL, &cp, &res);
      uint64_t ref = 0;
      la_fit_error_t he;
      int m = la_history_check(h[r], x, NULL, &ref, &he);
      int learn = la_history_take(h[r], m); /* as the LocalAgent decides */
      if (learn) la_history_refit(h[r], x, &cp, &res);
      La__SeriesStats st = LA__SERIES_STATS__INIT;
      La__FitError fe = LA__FIT_ERROR__INIT, hfe = LA__FIT_ERROR__INIT;
      La__CompactTrace t = LA__COMPACT_TRACE__INIT;
      la_test_history_trace(&t, &st, &fe, &res, "bench", r, c, NEL, ++seq,
                            m ? ref : 0);
      if (m) {
        la_trace_msg_error(&hfe, &he);
        t.history_error = &hfe;
        refs++;
      }
      int was_new;
      if (la_store_trace(s, &t, &was_new))
        fprintf(stderr, "bench_history: %s\n", la_store_errmsg(s));
      if (learn) la_history_learn(h[r], c, &res, NULL);
      la_compact_result_free(&res);
    }
    la_store_commit(s);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  la_store_close(s);
  for (uint32_t r = 0; r < RANKS; r++) la_history_free(h[r]);
  /* bytes in use */
  sqlite3 *q = NULL;
  sqlite3_stmt *st = NULL;
  sqlite3_open(db, &q);
  sqlite3_exec(q, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
  sqlite3_prepare_v2(q,
                     "SELECT (SELECT page_count FROM pragma_page_count) - "
                     "(SELECT freelist_count FROM pragma_freelist_count), "
                     "(SELECT page_size FROM pragma_page_size)",
                     -1, &st, NULL);
  double bytes = 0;
  if (sqlite3_step(st) == SQLITE_ROW)
    bytes = (double)sqlite3_column_int64(st, 0) * sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  sqlite3_close(q);
  /* every cycle read back against the truth */
  out->bound_fail = out->sum_fail = 0;
  la_store_open(db, 0, &s, why, sizeof why);
  for (uint64_t c = 1; c <= CYCLES; c++) {
    La__TraceSet *set = NULL;
    if (la_store_load_set(s, "bench", c, &set)) {
      out->bound_fail += RANKS;
      continue;
    }
    for (size_t i = 0; i < set->n_traces; i++) {
      const La__CompactTrace *t = set->traces[i];
      values(kase, t->rank, c, x);
      la_trace_t *tr = NULL;
      if (la_trace_open(t->segments.data, t->segments.len, &tr, NULL, 0) ||
          la_trace_decode(tr, 0, NEL, d) ||
          !within(x, d, t->segments.data, t->segments.len, &cp))
        out->bound_fail++;
      la_trace_close(tr);
      if (t->stats->sum != la_compact_sum(x, NEL)) out->sum_fail++;
    }
    la_store_free_set(set);
  }
  la_store_close(s);
  free(x);
  free(d);
  out->bytes_per_ec = bytes / ((double)CYCLES * RANKS * NEL);
  out->refs = (double)refs / ((double)CYCLES * RANKS);
  out->secs =
      (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  return 0;
}

int main(int argc, char **argv) {
  const char *outp =
      la_bench_out_path(argc, argv, 1, "build/bench/history.json");
  char dir[512];
  if (la_bench_tmpdir("bench_history", dir, sizeof dir)) return 1;
  FILE *f = la_bench_open_out(outp);
  if (!f) return 1;
  fprintf(f,
          "{\n  \"elements\": %d, \"ranks\": %d, \"cycles\": %d,\n"
          "  \"compaction\": \"polyline:cv=0.1\", \"full_cycles\": %d,\n"
          "  \"cases\": [\n",
          NEL, RANKS, CYCLES, LA_STORE_HISTORY_FULL_CYCLES);
  printf("%-8s %14s %14s %7s %6s %6s %6s\n", "case", "B/el-cycle off",
         "B/el-cycle on", "ratio", "refs", "bound", "sums");
  int rc = 0;
  for (int k = 0; k < NCASES; k++) {
    res_t off, on;
    if (run(dir, k, 0, &off) || run(dir, k, 1, &on)) return 1;
    long fails = off.bound_fail + on.bound_fail + off.sum_fail + on.sum_fail;
    if (fails) rc = 1;
    printf("%-8s %14.4f %14.4f %6.1fx %5.1f%% %6s %6s\n", names[k],
           off.bytes_per_ec, on.bytes_per_ec,
           off.bytes_per_ec / on.bytes_per_ec, 100 * on.refs,
           on.bound_fail + off.bound_fail ? "FAIL" : "ok",
           on.sum_fail + off.sum_fail ? "FAIL" : "exact");
    fprintf(f,
            "    {\"case\": \"%s\", \"bytes_per_element_cycle_off\": %.5f, "
            "\"bytes_per_element_cycle_on\": %.5f, \"ratio\": %.2f, "
            "\"reference_share\": %.4f, \"bound_failures\": %ld, "
            "\"sum_failures\": %ld, \"seconds_off\": %.2f, "
            "\"seconds_on\": %.2f}%s\n",
            names[k], off.bytes_per_ec, on.bytes_per_ec,
            off.bytes_per_ec / on.bytes_per_ec, on.refs,
            on.bound_fail + off.bound_fail, on.sum_fail + off.sum_fail,
            off.secs, on.secs, k + 1 < NCASES ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) rc = 1;
  return rc;
}
