/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_store.c: write throughput of the GlobalAgent's SQLite store
 * (store/store.{h,c}).
 *
 * In a fresh directory under $TMPDIR (or /tmp), stores traces as the
 * GlobalAgent does: 64 ranks per cycle, group commits of 500 traces, every
 * Trace-Set closed when its last rank arrives, the agent's sequence number
 * updated once per batch. The traces are real compactions (default
 * polyline) of 10^5-element synthetic series. Cases: synchronous=NORMAL and
 * FULL, on the mesh series and on a mix of steps, ramps and sine.
 *
 * Reports traces/s and Trace-Sets/s per case (median of 3 runs) to argv[1]
 * (default build/bench/store.json) and as a table.
 *
 * Then the page size study: the mix traces with synchronous=FULL (the
 * GlobalAgent's store.fsync = yes) in files made beforehand with 4, 8, 16
 * and 32 KiB pages (the store keeps the page size of a file it did not
 * create), once in commits of one trace each (a small application, a
 * trace at a time: 2 ranks per cycle) and once in commits of 500 (64
 * ranks); per trace the process's CPU time (user + system: the commit's
 * WAL writes, checksums and fdatasync included, the checkpoint thread
 * too), the wall time, and the bytes written (/proc/self/io's wchar: the WAL's
 * frames, the checkpoints' pages), medians of 3 runs, the sizes
 * interleaved. The numbers depend on
 * the file system and, for FULL, on the disk. The store's behaviour is
 * tested by tests/unit/test_store.c; this program only measures.
 */
#include "bench_args.h"
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_test_msg.h"
#include "la_test_oracle.h"
#include "store.h"

enum { NV = 8, NEL = 100000, NRANKS = 64 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int rm_one(const char *p, const struct stat *st, int fl,
                  struct FTW *ftw) {
  (void)st;
  (void)fl;
  (void)ftw;
  return remove(p);
}

#define CHECK(expr)                                                           \
  do {                                                                        \
    if ((expr) != 0) {                                                        \
      fprintf(stderr, "bench_store: %s failed (line %d)\n", #expr, __LINE__); \
      goto out;                                                               \
    }                                                                         \
  } while (0)

/* The process's CPU time (user + system, all threads) in seconds. */
static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* What a run measures beyond its rate (the page size study). */
typedef struct {
  double cpu_us, wall_us, wkb; /* per trace; wkb: KB written */
} run_cost_t;

/* Bytes this process has written (write, pwrite: /proc/self/io's wchar),
 * 0 where unknown. */
static double written_bytes(void) {
  FILE *f = fopen("/proc/self/io", "r");
  char line[128];
  double v = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "wchar:", 6)) v = strtod(line + 6, NULL);
  if (f) fclose(f);
  return v;
}

/* Stores total traces from res[0..NV) in batches of batch into a new
 * database at path (ranks ranks per cycle); sets *rate to traces/s and,
 * when cost is not NULL, *cost. Returns 0 or -1. */
static int run_ranks(const char *path, int full, const la_compact_result_t *res,
                     size_t total, size_t batch, uint32_t ranks, double *rate,
                     run_cost_t *cost) {
  char why[256];
  la_store_t *s = NULL;
  int rc = -1;
  if (la_store_open(path, full, &s, why, sizeof why) != 0) {
    fprintf(stderr, "bench_store: %s: %s\n", path, why);
    return -1;
  }
  for (uint32_t r = 0; r < ranks; r++) {
    La__RankStart m = la_test_rank_start("bench", "bench", r, ranks, NEL);
    CHECK(la_store_rank_start(s, &m, NULL));
  }
  double t0 = now_s(), c0 = cpu_s(), w0 = written_bytes();
  size_t done = 0;
  uint64_t seq = 0;
  while (done < total) {
    CHECK(la_store_begin(s));
    for (size_t i = 0; i < batch && done < total; i++, done++) {
      const la_compact_result_t *rs = &res[done % NV];
      La__CompactTrace t = LA__COMPACT_TRACE__INIT;
      La__SeriesStats st = LA__SERIES_STATS__INIT;
      La__FitError er = LA__FIT_ERROR__INIT;
      t.seq = ++seq;
      t.app_id = "bench";
      t.rank = (uint32_t)(done % ranks);
      t.cycle_tag = done / ranks;
      t.n_elements = NEL;
      t.mode = (La__CompactMode)rs->mode;
      t.segments.data = rs->bytes;
      t.segments.len = rs->len;
      st.count = NEL;
      st.sum = rs->stats.sum;
      st.min = rs->stats.min;
      st.max = rs->stats.max;
      t.stats = &st;
      er.max_abs = rs->error.max_abs;
      er.rmse = rs->error.rmse;
      er.cv = rs->error.cv;
      t.error = &er;
      t.has_t_xfer_ns = 1;
      t.t_xfer_ns = seq;
      int was_new;
      CHECK(la_store_trace(s, &t, &was_new));
      if (t.rank == ranks - 1)
        CHECK(la_store_set_closed(s, "bench", t.cycle_tag, 1, NULL, 0, seq));
    }
    CHECK(la_store_agent_seq_update(s, "node1", seq));
    CHECK(la_store_commit(s));
  }
  double wall = now_s() - t0;
  *rate = (double)total / wall;
  if (cost) {
    cost->cpu_us = (cpu_s() - c0) * 1e6 / (double)total;
    cost->wall_us = wall * 1e6 / (double)total;
    cost->wkb = (written_bytes() - w0) / 1e3 / (double)total;
  }
  rc = 0;
out:
  la_store_close(s);
  return rc;
}

static int run(const char *path, int full, const la_compact_result_t *res,
               size_t total, size_t batch, double *rate) {
  return run_ranks(path, full, res, total, batch, NRANKS, rate, NULL);
}

/* ------------------------------------------------------ page size study */

/* Makes an empty database file at path with page bytes per page, in WAL
 * mode. Returns 0 or -1. */
static int make_file(const char *path, int page) {
  sqlite3 *h = NULL;
  char sql[160];
  snprintf(sql, sizeof sql,
           "PRAGMA page_size = %d; PRAGMA journal_mode = WAL;"
           " PRAGMA user_version = 0; VACUUM;",
           page);
  int rc = sqlite3_open(path, &h) == SQLITE_OK &&
                   sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
  sqlite3_close(h);
  return rc;
}

/* The page size study (see the top): writes its JSON array's members to
 * js and a table to stdout. res: the mix traces. Returns 0 or 1. */
static int page_study(const char *base, const la_compact_result_t *res,
                      FILE *js) {
  static const int pages[] = {4096, 8192, 16384, 32768};
  enum { NP = sizeof pages / sizeof pages[0] };
  struct {
    const char *name;
    size_t total, batch;
    uint32_t ranks;
  } kinds[] = {{"1 trace/commit", 600, 1, 2},
               {"500 traces/commit", 10000, 500, 64}};
  int rc = 0;
  printf("\npage size study: mix traces, synchronous=FULL, medians of 3\n");
  printf("%-18s %6s %12s %12s %12s\n", "commits", "page", "CPU us/trace",
         "wall us/tr.", "KB written/tr.");
  for (int k = 0; k < 2; k++) {
    run_cost_t c[NP][3];
    memset(c, 0, sizeof c);
    for (int rep = 0; rep < 3; rep++)
      for (int i = 0; i < NP; i++) {
        char path[600];
        double rate;
        snprintf(path, sizeof path, "%s/page-%d-%d-%d.db", base, pages[i], k,
                 rep);
        if (make_file(path, pages[i]) != 0 ||
            run_ranks(path, 1, res, kinds[k].total, kinds[k].batch,
                      kinds[k].ranks, &rate, &c[i][rep]) != 0)
          rc = 1;
      }
    for (int i = 0; i < NP; i++) {
      double cpu = la_test_median3(c[i][0].cpu_us, c[i][1].cpu_us,
                                   c[i][2].cpu_us),
             wall = la_test_median3(c[i][0].wall_us, c[i][1].wall_us,
                                    c[i][2].wall_us),
             wkb = la_test_median3(c[i][0].wkb, c[i][1].wkb, c[i][2].wkb);
      printf("%-18s %6d %12.1f %12.1f %12.1f\n", kinds[k].name, pages[i], cpu,
             wall, wkb);
      fprintf(js,
              "    {\"batch\": %zu, \"ranks\": %u, \"page_size\": %d, "
              "\"cpu_us_per_trace\": %.1f, \"wall_us_per_trace\": %.1f, "
              "\"kb_written_per_trace\": %.1f}%s\n",
              kinds[k].batch, kinds[k].ranks, pages[i], cpu, wall, wkb,
              k == 1 && i == NP - 1 ? "" : ",");
    }
  }
  return rc;
}

int main(int argc, char **argv) {
  const char *out = la_bench_out_path(argc, argv, 1, "build/bench/store.json");
  char base[512];
  if (la_bench_tmpdir("bench_store", base, sizeof base)) return 1;
  static const int mesh[] = {LA_SYNTH_MESH};
  static const int mix[] = {LA_SYNTH_STEPS, LA_SYNTH_RAMPS, LA_SYNTH_SINE};
  struct {
    const char *name;
    int full;
    const int *kinds;
    int n_kinds;
  } cases[] = {
      {"normal-mesh", 0, mesh, 1},
      {"full-mesh", 1, mesh, 1},
      {"normal-mix", 0, mix, 3},
      {"full-mix", 1, mix, 3},
  };
  const size_t total = 20000, batch = 500;
  size_t nc = sizeof cases / sizeof cases[0];
  FILE *js = fopen(out, "w");
  if (js == NULL) {
    perror(out);
    return 1;
  }
  double *x = malloc(NEL * sizeof *x);
  if (x == NULL) return 1;
  fprintf(js, "{\n  \"bench\": \"store\",\n  \"cases\": [\n");
  printf("%-12s %12s %10s %12s %14s\n", "case", "synchronous", "avg bytes",
         "traces/s", "Trace-Sets/s");
  int rc = 0;
  /* LA_BENCH_STORE_PAGES=only: the page size study alone */
  const char *po = getenv("LA_BENCH_STORE_PAGES");
  if (po && !strcmp(po, "only")) nc = 0;
  static la_compact_result_t res[NV];
  for (size_t c = 0; c < nc; c++) {
    size_t bytes = 0;
    for (int v = 0; v < NV; v++) {
      la_compact_params_t p;
      la_compact_params_default(&p);
      if (la_compact_synth(cases[c].kinds[v % cases[c].n_kinds], NEL, 1 + v,
                           x) != 0 ||
          la_compact(x, NEL, &p, &res[v]) != 0) {
        fprintf(stderr, "bench_store: compaction failed\n");
        return 1;
      }
      bytes += res[v].len;
    }
    double r[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
      char path[600];
      snprintf(path, sizeof path, "%s/%s.%d.db", base, cases[c].name, k);
      if (run(path, cases[c].full, res, total, batch, &r[k]) != 0) rc = 1;
    }
    double m = la_test_median3(r[0], r[1], r[2]);
    printf("%-12s %12s %10zu %12.0f %14.0f\n", cases[c].name,
           cases[c].full ? "FULL" : "NORMAL", bytes / NV, m, m / NRANKS);
    fprintf(js,
            "    {\"case\": \"%s\", \"synchronous\": \"%s\", \"traces\": %zu, "
            "\"batch\": %zu, \"elements\": %d, \"avg_trace_bytes\": %zu, "
            "\"traces_per_s\": %.0f, \"trace_sets_per_s\": %.0f}%s\n",
            cases[c].name, cases[c].full ? "FULL" : "NORMAL", total, batch, NEL,
            bytes / NV, m, m / NRANKS, c + 1 < nc ? "," : "");
    for (int v = 0; v < NV; v++) la_compact_result_free(&res[v]);
  }
  fprintf(js, "  ],\n  \"page_study\": [\n");
  for (int v = 0; v < NV && rc == 0; v++) {
    la_compact_params_t p;
    la_compact_params_default(&p);
    if (la_compact_synth(mix[v % 3], NEL, 1 + v, x) != 0 ||
        la_compact(x, NEL, &p, &res[v]) != 0) {
      fprintf(stderr, "bench_store: compaction failed\n");
      return 1;
    }
  }
  if (page_study(base, res, js) != 0) rc = 1;
  for (int v = 0; v < NV; v++) la_compact_result_free(&res[v]);
  free(x);
  fprintf(js, "  ]\n}\n");
  fclose(js);
  nftw(base, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  printf("wrote %s\n", out);
  return rc;
}
