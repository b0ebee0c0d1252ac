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
 * (default build/bench/store.json) and as a table. The numbers depend on
 * the file system and, for FULL, on the disk. The store's behaviour is
 * tested by tests/unit/test_store.c; this program only measures.
 */
#include "bench_args.h"
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Stores total traces from res[0..NV) in batches of batch into a new
 * database at path; sets *rate to traces/s. Returns 0 or -1. */
static int run(const char *path, int full, const la_compact_result_t *res,
               size_t total, size_t batch, double *rate) {
  char why[256];
  la_store_t *s = NULL;
  int rc = -1;
  if (la_store_open(path, full, &s, why, sizeof why) != 0) {
    fprintf(stderr, "bench_store: %s: %s\n", path, why);
    return -1;
  }
  for (uint32_t r = 0; r < NRANKS; r++) {
    La__RankStart m = la_test_rank_start("bench", "bench", r, NRANKS, NEL);
    CHECK(la_store_rank_start(s, &m));
  }
  double t0 = now_s();
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
      t.rank = (uint32_t)(done % NRANKS);
      t.cycle_tag = done / NRANKS;
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
      if (t.rank == NRANKS - 1)
        CHECK(la_store_set_closed(s, "bench", t.cycle_tag, 1, NULL, 0, seq));
    }
    CHECK(la_store_agent_seq_update(s, "node1", seq));
    CHECK(la_store_commit(s));
  }
  *rate = (double)total / (now_s() - t0);
  rc = 0;
out:
  la_store_close(s);
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
  for (size_t c = 0; c < nc; c++) {
    static la_compact_result_t res[NV];
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
  free(x);
  fprintf(js, "  ]\n}\n");
  fclose(js);
  nftw(base, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  printf("wrote %s\n", out);
  return rc;
}
