/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_history.c: stored bytes per element-cycle with and without bounded
 * history (`make bench-history`, docs/history.md).
 *
 * For each case, 1,000 cycles of 4 ranks of 8,192 elements go through what
 * the LocalAgent does (la_compact with the default polyline cv 0.1 and a
 * timer quantum of 1 ns; the robust weights of localagent/weights.c with
 * the default robust.* settings, as stored (decoded); localagent/history.c's
 * check, refit and learn) into the GlobalAgent's store (store/store.h, a
 * SQLite file, the default history.full_cycles = 16), three times: history
 * off (every cycle in full), "whole" (a reference needs the measured values
 * and the robust weights within bound) and "robust" (besides, the robust
 * weights referenced on their own within the per-element bound,
 * la_history_match_robust, as the worker does). The cases (whole-ns
 * costs, like a timer's):
 *   steady   a fixed cost field (smooth, with 8x8 classes) and 2% jitter;
 *   hotspot  the same field and a 10x hot disc that moves 64 elements a
 *            cycle;
 *   noisy    the fixed field with 8% jitter.
 * With LA_HISTORY_RAW=DIR:APP a fourth case, "recorded", replays a real run
 * instead: the cycles LA_DUMP_RAW wrote as DIR/APP.r<rank>.c<tag>.f64 (and
 * .flags, the probe's flags, replayed to the estimator with interference
 * detection on), in cycle order, every rank present in every cycle, each
 * with the timer quantum of its .fid file; the timer's step (the robust
 * floor, libla measures it at registration and the dump lacks it) is the
 * smallest gap of more than 4 ticks between the first cycle's values.
 * LA_HISTORY_RECORDED_ONLY=1 runs that case alone. LA_HISTORY_EXC_PERMILLE
 * (1..9) caps the exceptions at that many per thousand elements instead of
 * LA_COMPACT_SPLICE_MAX's ten.
 * Reported: bytes of the store in use (pages minus free pages) per
 * element-cycle, the ratio (off / robust), the share of cycles stored as
 * references and as robust references. The bound is checked on every
 * cycle read back from the store (what lactl export and libla_client get)
 * against the true values the bench made (the values LA_DUMP_RAW would
 * dump; the end-to-end check against a real dump is test_ground_truth's):
 * per segment of the encoding served the RMSE of the error is at most cv
 * times |mean|, and the stored sum equals the true sum exactly; the robust
 * weights (the estimator replayed) within robust.cv per record of the
 * encoding served or, a robust reference, within cv of their own plus one
 * timer step on every element. Per case also: how far each cycle's robust
 * weights are from the cycle before's, element by element. Writes argv[1]
 * (build/bench/history.json).
 */
#include "bench_args.h"
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "history.h"
#include "la_compact.h"
#include "la_compact_splice.h"
#include "la_test_msg.h"
#include "la_trace_msg.h"
#include "store.h"
#include "weights.h"

#define NEL 8192
#define RANKS 4
#define CYCLES 1000
#define MAX_RAW_CYCLES 100000
/* The LocalAgent's robust.* defaults (localagent/settings.c) */
#define ROBUST_CV 0.02
#define ROBUST_TOL 0.25
#define ROBUST_CONFIRM 3
/* the per-element bound of a robust reference (history.h): the measured
 * values' polyline cv */
#define ROBUST_REL 0.1

enum { C_STEADY, C_HOTSPOT, C_NOISY, C_RECORDED, NCASES };
static const char *const names[NCASES] = {"steady", "hotspot", "noisy",
                                          "recorded"};

/* One case's shape: the synthetic ones are NEL x RANKS x CYCLES; a
 * recorded run has its own. */
typedef struct case_s {
  int kind;
  uint64_t n;
  uint32_t ranks;
  uint64_t cycles;
  double quantum;
  double timer_res; /* ns of one timer step (the robust floor) */
  int detect;       /* recorded: the probe's flags are replayed */
  char dir[512], app[128];
  uint64_t *tags; /* recorded: the dump's cycle tags in order */
} case_t;

static int raw_path(const case_t *k, uint32_t rank, uint64_t tag,
                    const char *ext, char *out, size_t len) {
  int w = snprintf(out, len, "%s/%s.r%u.c%llu.%s", k->dir, k->app, rank,
                   (unsigned long long)tag, ext);
  return w > 0 && (size_t)w < len ? 0 : -1;
}

/* The timer quantum (ns per count) of a recorded cycle, from the "scale="
 * of its .fid line: each cycle's values are its counts times the scale
 * libla measured for it, so every cycle has its own. 0, or -1 with a
 * message. */
static int raw_scale(const case_t *k, uint32_t rank, uint64_t tag,
                     double *q) {
  char path[800], line[256] = "";
  FILE *f = NULL;
  const char *sc;
  int ok = raw_path(k, rank, tag, "fid", path, sizeof path) == 0 &&
           (f = fopen(path, "r")) && fgets(line, sizeof line, f) &&
           (sc = strstr(line, "scale=")) && sscanf(sc, "scale=%lf", q) == 1 &&
           *q > 0;
  if (f) fclose(f);
  if (!ok)
    fprintf(stderr, "bench_history: %s: not an LA_DUMP_RAW .fid line with "
                    "its scale\n", path);
  return ok ? 0 : -1;
}

/* Cycle c (1-based) of rank rank into x, and its timer quantum into *q
 * (when q is not NULL). 0, or -1 with a message. */
static int values(const case_t *k, uint32_t rank, uint64_t c, double *x,
                  double *q) {
  if (k->kind == C_RECORDED) {
    char path[800];
    FILE *f = NULL;
    int ok = raw_path(k, rank, k->tags[c - 1], "f64", path, sizeof path) == 0 &&
             (f = fopen(path, "rb")) && fread(x, sizeof *x, k->n, f) == k->n;
    if (f) fclose(f);
    if (!ok) fprintf(stderr, "bench_history: cannot read %s\n", path);
    if (ok && q && raw_scale(k, rank, k->tags[c - 1], q)) ok = 0;
    return ok ? 0 : -1;
  }
  if (q) *q = k->quantum;
  uint64_t st = (c * 7919 + rank) * 2654435761u + 1;
  double jit = k->kind == C_NOISY ? 0.08 : 0.02;
  for (long i = 0; i < NEL; i++) {
    long g = (long)rank * NEL + i, gx = g % 128, gy = g / 128;
    double base = (((gx / 8) + (gy / 8)) % 3 == 0 ? 900 : 300) *
                  (1 + 0.3 * sin(gx * 0.05) * cos(gy * 0.03));
    if (k->kind == C_HOTSPOT) {
      long h = (long)((c * 64) % (RANKS * NEL));
      if (labs(g - h) < 96) base *= 10;
    }
    x[i] = round(base * (1 + jit * (2 * la_compact_rand01(&st) - 1)));
  }
  return 0;
}

/* Cycle c's flag bytes of rank rank into fl (recorded: its .flags file;
 * synthetic: none, NULL returned). fl, NULL, or NULL with *bad set. */
static const uint8_t *flags_of(const case_t *k, uint32_t rank, uint64_t c,
                               uint8_t *fl, int *bad) {
  if (k->kind != C_RECORDED) return NULL;
  char path[800];
  FILE *f = NULL;
  int ok = raw_path(k, rank, k->tags[c - 1], "flags", path, sizeof path) == 0 &&
           (f = fopen(path, "rb")) && fread(fl, 1, k->n, f) == k->n;
  if (f) fclose(f);
  if (!ok) {
    fprintf(stderr, "bench_history: cannot read %s\n", path);
    *bad = 1;
  }
  return ok ? fl : NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n > 0; v is sorted). */
static double median(double *v, uint64_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* LA_HISTORY_RAW=DIR:APP: the recorded case's shape from rank 0's files
 * (every other rank must have the same cycles and element count). 0, or -1
 * with a message. */
static int recorded(const char *spec, case_t *k) {
  memset(k, 0, sizeof *k);
  k->kind = C_RECORDED;
  const char *colon = strrchr(spec, ':');
  if (!colon || colon == spec || !colon[1] ||
      (size_t)(colon - spec) >= sizeof k->dir ||
      strlen(colon + 1) >= sizeof k->app) {
    fprintf(stderr, "bench_history: LA_HISTORY_RAW must be DIR:APP (the "
                    "LA_DUMP_RAW directory and the application id)\n");
    return -1;
  }
  memcpy(k->dir, spec, (size_t)(colon - spec));
  snprintf(k->app, sizeof k->app, "%s", colon + 1);
  DIR *d = opendir(k->dir);
  if (!d) {
    fprintf(stderr, "bench_history: %s: %s\n", k->dir, strerror(errno));
    return -1;
  }
  k->tags = malloc(MAX_RAW_CYCLES * sizeof *k->tags);
  size_t alen = strlen(k->app);
  struct dirent *e;
  uint32_t max_rank = 0;
  while (k->tags && (e = readdir(d))) {
    unsigned r;
    unsigned long long tag;
    char tail[8];
    if (strncmp(e->d_name, k->app, alen) || e->d_name[alen] != '.' ||
        sscanf(e->d_name + alen, ".r%u.c%llu.%7s", &r, &tag, tail) != 3 ||
        strcmp(tail, "f64"))
      continue;
    if (r > max_rank) max_rank = r;
    if (r == 0 && k->cycles < MAX_RAW_CYCLES) k->tags[k->cycles++] = tag;
  }
  closedir(d);
  if (!k->tags || k->cycles < 2) {
    fprintf(stderr, "bench_history: fewer than 2 cycles of %s rank 0 in %s\n",
            k->app, k->dir);
    return -1;
  }
  qsort(k->tags, k->cycles, sizeof *k->tags, cmp_u64);
  k->ranks = max_rank + 1;
  char path[800];
  struct stat sb;
  if (raw_path(k, 0, k->tags[0], "f64", path, sizeof path) ||
      stat(path, &sb) || sb.st_size < 8 || sb.st_size % 8) {
    fprintf(stderr, "bench_history: %s: not an LA_DUMP_RAW cycle\n", path);
    return -1;
  }
  k->n = (uint64_t)sb.st_size / 8;
  if (raw_scale(k, 0, k->tags[0], &k->quantum)) return -1;
  /* the timer's step, as libla measures it at registration (not in the
   * dump): the smallest gap between the first cycle's distinct values of
   * more than 4 ticks (a step is many ticks of a cycle counter) */
  double *x = malloc(k->n * sizeof *x);
  if (!x || values(k, 0, 1, x, NULL)) {
    free(x);
    return -1;
  }
  qsort(x, k->n, sizeof *x, cmp_double);
  k->timer_res = 0;
  for (uint64_t i = 1; i < k->n; i++) {
    double g = x[i] - x[i - 1];
    if (g > 4 * k->quantum && (k->timer_res == 0 || g < k->timer_res))
      k->timer_res = g;
  }
  free(x);
  k->detect = 1;
  return 0;
}

/* Whether d is within cv of x on every record of the encoding b. */
static int within(const double *x, const double *d, uint64_t n,
                  const uint8_t *b, size_t len,
                  const la_compact_params_t *cp) {
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
  int ok = la_history_within(x, d, n, cp, st, k);
  free(st);
  return ok;
}

typedef struct res_s {
  double bytes_per_ec, refs, rrefs, secs;
  double decide_ns; /* CPU of the LocalAgent's decision, per element-cycle */
  double exc_per_ref; /* exception elements per robust reference, mean */
  long bound_fail, sum_fail, rbound_fail;
} res_t;

/* The history variants a case runs: off (every cycle in full), whole (a
 * reference needs the measured values and the robust weights within
 * bound), robust (besides, the robust weights on their own, within the
 * per-element bound: la_history_match_robust) and exceptions (robust
 * references with exceptions too: la_history_match_robust_exc with up to
 * LA_COMPACT_SPLICE_MAX(n) elements, as the worker does). */
enum { H_OFF, H_WHOLE, H_ROBUST, H_EXC, NVARIANTS };
static const char *const variants[NVARIANTS] = {"off", "whole", "robust",
                                                "exceptions"};

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

/* Rank r's robust estimator through cycle c, each cycle as the
 * LocalAgent's worker runs it: the weights as stored (decoded) into rw,
 * their compaction into *rres (freed first when rres->bytes). 0, or -1. */
static int robust_cycle(const case_t *k, la_weights_t *w, uint32_t r,
                        uint64_t c, const double *x, uint8_t *fl,
                        const la_compact_params_t *cp,
                        la_compact_result_t *rres, double *rw) {
  int bad = 0;
  const uint8_t *f = flags_of(k, r, c, fl, &bad);
  la_robust_stats_t rst;
  if (bad) return -1;
  return la_weights_cycle_recon(w, x, f, cp, rres, &rst, rw) ? -1 : 0;
}

static int run(const char *dir, const case_t *k, int hist, res_t *out) {
  char db[600], why[300];
  const uint64_t n = k->n, cycles = k->cycles;
  const uint32_t ranks = k->ranks;
  snprintf(db, sizeof db, "%s/%s-%d.db", dir, names[k->kind], hist);
  la_store_t *s = NULL;
  if (la_store_open(db, 0, &s, why, sizeof why)) {
    fprintf(stderr, "bench_history: %s\n", why);
    return -1;
  }
  la_compact_params_t cp, rcp;
  la_compact_params_default(&cp);
  cp.quantum = k->quantum;
  la_history_robust_params(&cp, ROBUST_CV, &rcp);
  la_history_budget_t budget = {hist != H_OFF ? 1u << 30 : 0, 0};
  la_history_t **h = calloc(ranks, sizeof *h);
  la_weights_t **w = calloc(ranks, sizeof *w);
  for (uint32_t r = 0; h && w && r < ranks; r++) {
    La__RankStart rs = la_test_rank_start("bench", "bench", r, ranks, n);
    la_store_rank_start(s, &rs, NULL);
    h[r] = la_history_new(&budget, n, 4, &cp, &rcp);
    la_history_set_robust_floor(h[r], k->timer_res);
    if (la_weights_new(n, k->timer_res, k->detect, ROBUST_TOL, ROBUST_CONFIRM,
                       ROBUST_CV, NULL, 0, &w[r]))
      w[r] = NULL;
  }
  double *x = malloc(n * sizeof *x), *d = malloc(n * sizeof *d);
  double *rw = malloc(n * sizeof *rw);
  uint8_t *fl = malloc(n);
  /* LA_HISTORY_EXC_PERMILLE (1..10): a lower cap than the store's, to
   * see what the cap buys */
  size_t xcap = LA_COMPACT_SPLICE_MAX(n);
  const char *pm = getenv("LA_HISTORY_EXC_PERMILLE");
  if (pm && atoi(pm) > 0 && atoi(pm) < 10)
    xcap = (size_t)(n * (uint64_t)atoi(pm) / 1000);
  uint64_t *xmem = malloc((3 * xcap + 1) * sizeof *xmem);
  double *xval = malloc((xcap + 1) * sizeof *xval);
  for (uint32_t r = 0; w && r < ranks; r++)
    if (!w[r]) fl = NULL;
  if (!h || !w || !x || !d || !rw || !fl || !xmem || !xval) {
    fprintf(stderr, "bench_history: out of memory\n");
    return -1;
  }
  long refs = 0, rrefs = 0, unreadable = 0, nexc = 0;
  double decide = 0;
  uint64_t seq = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (uint64_t c = 1; c <= cycles; c++) {
    la_store_begin(s);
    for (uint32_t r = 0; r < ranks; r++) {
      la_compact_result_t res, rres = {0};
      if (values(k, r, c, x, &cp.quantum) ||
          robust_cycle(k, w[r], r, c, x, fl, &cp, &rres, rw)) {
        unreadable++;
        continue;
      }
      la_compact(x, n, &cp, &res);
      uint64_t ref = 0, rref = 0;
      la_fit_error_t he, rhe;
      /* as the LocalAgent's worker decides */
      double c0 = cpu_ns();
      int m = la_history_match(h[r], x, rw, &ref, &he);
      size_t k = 0;
      int rm = !m && hist >= H_ROBUST &&
               la_history_match_robust_exc(
                   h[r], rw, x, cp.quantum,
                   hist == H_EXC && la_history_exc_due(h[r]) ? xcap : 0, xmem,
                   &k, &rref, &rhe);
      decide += cpu_ns() - c0;
      int learn = la_history_take(h[r], m);
      if (learn) {
        la_history_refit(h[r], x, &cp, &res);
        rm = 0;
      }
      La__HistoryExceptions xm;
      if (rm && k)
        la_compact_exceptions_build(xmem, k, rw, &xm, xmem + xcap,
                                    xmem + 2 * xcap, xval);
      La__SeriesStats st = LA__SERIES_STATS__INIT, rst = LA__SERIES_STATS__INIT;
      La__FitError fe = LA__FIT_ERROR__INIT, hfe = LA__FIT_ERROR__INIT;
      La__FitError rfe = LA__FIT_ERROR__INIT;
      La__CompactTrace t = LA__COMPACT_TRACE__INIT;
      la_test_history_trace(&t, &st, &fe, &res, "bench", r, c, n, ++seq,
                            m ? ref : 0);
      la_trace_msg_robust(&t, &rst, &rres);
      if (m) {
        la_trace_msg_error(&hfe, &he);
        t.history_error = &hfe;
        refs++;
      }
      if (rm) {
        t.has_robust_ref = 1;
        t.robust_ref = rref;
        la_trace_msg_error(&rfe, &rhe);
        t.robust_ref_error = &rfe;
        if (k) t.robust_exceptions = &xm;
        nexc += (long)k;
        rrefs++;
      }
      int was_new;
      if (la_store_trace(s, &t, &was_new))
        fprintf(stderr, "bench_history: %s\n", la_store_errmsg(s));
      if (learn) la_history_learn(h[r], c, &res, &rres);
      la_compact_result_free(&res);
      la_compact_result_free(&rres);
    }
    la_store_commit(s);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  la_store_close(s);
  for (uint32_t r = 0; r < ranks; r++) {
    la_history_free(h[r]);
    la_weights_free(w[r]);
    if (la_weights_new(n, k->timer_res, k->detect, ROBUST_TOL, ROBUST_CONFIRM,
                       ROBUST_CV, NULL, 0, &w[r]))
      unreadable++;
  }
  free(h);
  if (unreadable) {
    free(x);
    free(d);
    return -1;
  }
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
  /* every cycle read back against the truth: the measured values within
   * their bound of the true ones, the sum exact; the robust weights (the
   * estimator replayed from the start) within the polyline bound of rcp on
   * the records served or, a robust reference, element by element within
   * the measured values' cv of their own plus one timer step */
  out->bound_fail = out->sum_fail = out->rbound_fail = 0;
  la_store_open(db, 0, &s, why, sizeof why);
  for (uint64_t c = 1; c <= cycles; c++) {
    La__TraceSet *set = NULL;
    if (la_store_load_set(s, "bench", c, &set)) {
      out->bound_fail += ranks;
      continue;
    }
    for (size_t i = 0; i < set->n_traces; i++) {
      const La__CompactTrace *t = set->traces[i];
      la_trace_t *tr = NULL;
      la_compact_result_t rres = {0};
      if (values(k, t->rank, c, x, NULL) ||
          la_trace_open(t->segments.data, t->segments.len, &tr, NULL, 0) ||
          la_trace_decode(tr, 0, n, d) ||
          !within(x, d, n, t->segments.data, t->segments.len, &cp))
        out->bound_fail++;
      la_trace_close(tr);
      tr = NULL;
      if (t->stats->sum != la_compact_sum(x, n)) out->sum_fail++;
      int rok = values(k, t->rank, c, x, &cp.quantum) == 0 &&
                robust_cycle(k, w[t->rank], t->rank, c, x, fl, &cp, &rres,
                             rw) == 0 &&
                t->has_robust_segments &&
                la_trace_open(t->robust_segments.data, t->robust_segments.len,
                              &tr, NULL, 0) == 0 &&
                la_trace_decode(tr, 0, n, d) == 0;
      la_trace_close(tr);
      la_compact_result_free(&rres);
      if (rok && !within(rw, d, n, t->robust_segments.data,
                         t->robust_segments.len, &rcp)) {
        for (uint64_t e = 0; rok && e < n; e++)
          rok = fabs(d[e] - rw[e]) <= cp.cv * fabs(rw[e]) + k->timer_res;
      }
      if (!rok) out->rbound_fail++;
    }
    la_store_free_set(set);
  }
  la_store_close(s);
  for (uint32_t r = 0; r < ranks; r++) la_weights_free(w[r]);
  free(w);
  free(x);
  free(d);
  free(rw);
  free(fl);
  free(xmem);
  free(xval);
  out->decide_ns = decide / ((double)cycles * ranks * n);
  out->exc_per_ref = rrefs ? (double)nexc / (double)rrefs : 0;
  out->bytes_per_ec = bytes / ((double)cycles * ranks * n);
  out->refs = (double)refs / ((double)cycles * ranks);
  out->rrefs = (double)rrefs / ((double)cycles * ranks);
  out->secs =
      (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  return 0;
}

/* How far a recorded run's cycles are from their predecessors: the share
 * of LA_HISTORY_BLOCK-element blocks of cycle c within the polyline bound
 * of cycle c - 1 (RMSE of the difference <= cv |mean|, la_history_within
 * on one block), the median of every block's RMSE / |mean| and the median
 * over cycles of the largest block's. What keeps references away, or not. 0, or -1. */
static int drift(const case_t *k, double *blocks_within, double *median_block,
                 double *median_worst) {
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  uint64_t n = k->n, nb = (n + LA_HISTORY_BLOCK - 1) / LA_HISTORY_BLOCK;
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  double *worst = malloc(k->cycles * k->ranks * sizeof *worst);
  double *each = malloc(k->cycles * k->ranks * nb * sizeof *each);
  uint64_t in = 0, all = 0, nw = 0;
  int rc = x && y && worst && each ? 0 : -1;
  for (uint32_t r = 0; rc == 0 && r < k->ranks; r++)
    for (uint64_t c = 2; rc == 0 && c <= k->cycles; c++) {
      if (values(k, r, c - 1, y, NULL) || values(k, r, c, x, NULL)) {
        rc = -1;
        break;
      }
      double w = 0;
      for (uint64_t b = 0; b < nb; b++) {
        uint64_t lo = b * LA_HISTORY_BLOCK,
                 len = n - lo < LA_HISTORY_BLOCK ? n - lo : LA_HISTORY_BLOCK;
        double se = 0, sx = 0;
        for (uint64_t i = lo; i < lo + len; i++) {
          se += (x[i] - y[i]) * (x[i] - y[i]);
          sx += x[i];
        }
        double m = fabs(sx / (double)len), e = sqrt(se / (double)len);
        double q = m > 0 ? e / m : (e > 0 ? INFINITY : 0);
        if (q > w) w = q;
        each[all] = q;
        in += la_history_within(x + lo, y + lo, len, &cp, NULL, 0);
        all++;
      }
      worst[nw++] = w;
    }
  if (rc == 0 && nw > 0) {
    *median_worst = median(worst, nw);
    *median_block = median(each, all);
    *blocks_within = (double)in / (double)all;
  }
  free(x);
  free(y);
  free(worst);
  free(each);
  return nw > 0 ? rc : -1;
}

/* How far a case's robust weights (as stored, the estimator replayed) are
 * from those of the cycle before, element by element: per cycle the
 * smallest relative bound rel with |r - y| <= rel |r| + one timer step on
 * every element, its median over cycles, the share of cycles within
 * ROBUST_REL, and the median over cycles of the elements beyond it (count,
 * and their share of the cycle's robust total). 0, or -1. */
static int robust_drift(const case_t *k, double *median_rel,
                        double *within_share, double *median_out,
                        double *median_out_share) {
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  cp.quantum = k->quantum;
  uint64_t n = k->n;
  double *x = malloc(n * sizeof *x), *rw = malloc(n * sizeof *rw);
  double *prev = malloc(n * sizeof *prev);
  double *need = malloc(k->cycles * k->ranks * sizeof *need);
  double *outs = malloc(k->cycles * k->ranks * sizeof *outs);
  double *oshare = malloc(k->cycles * k->ranks * sizeof *oshare);
  uint8_t *fl = malloc(n);
  int rc = x && rw && prev && need && outs && oshare && fl ? 0 : -1;
  uint64_t nn = 0, in = 0;
  for (uint32_t r = 0; rc == 0 && r < k->ranks; r++) {
    la_weights_t *w = NULL;
    if (la_weights_new(n, k->timer_res, k->detect, ROBUST_TOL, ROBUST_CONFIRM,
                       ROBUST_CV, NULL, 0, &w)) {
      rc = -1;
      break;
    }
    for (uint64_t c = 1; rc == 0 && c <= k->cycles; c++) {
      la_compact_result_t rres = {0};
      if (values(k, r, c, x, &cp.quantum) ||
          robust_cycle(k, w, r, c, x, fl, &cp, &rres, rw)) {
        rc = -1;
        break;
      }
      la_compact_result_free(&rres);
      if (c > 1) {
        double m = 0, out = 0, ow = 0, all = 0;
        for (uint64_t i = 0; i < n; i++) {
          double e = fabs(rw[i] - prev[i]) - k->timer_res;
          double q = e <= 0 ? 0 : (rw[i] != 0 ? e / fabs(rw[i]) : INFINITY);
          if (q > m) m = q;
          all += fabs(rw[i]);
          if (q > ROBUST_REL) {
            out++;
            ow += fabs(rw[i]);
          }
        }
        outs[nn] = out;
        oshare[nn] = all > 0 ? ow / all : 0;
        need[nn++] = m;
        in += m <= ROBUST_REL;
      }
      memcpy(prev, rw, n * sizeof *rw);
    }
    la_weights_free(w);
  }
  if (rc == 0 && nn) {
    *median_rel = median(need, nn);
    *median_out = median(outs, nn);
    *median_out_share = median(oshare, nn);
    *within_share = (double)in / (double)nn;
  }
  free(x);
  free(rw);
  free(prev);
  free(need);
  free(outs);
  free(oshare);
  free(fl);
  return nn ? rc : -1;
}

int main(int argc, char **argv) {
  const char *outp =
      la_bench_out_path(argc, argv, 1, "build/bench/history.json");
  char dir[512];
  if (la_bench_tmpdir("bench_history", dir, sizeof dir)) return 1;
  FILE *f = la_bench_open_out(outp);
  if (!f) return 1;
  case_t cases[NCASES] = {{0}};
  int ncases = C_RECORDED, first = 0;
  for (int k = 0; k < C_RECORDED; k++)
    cases[k] = (case_t){.kind = k, .n = NEL, .ranks = RANKS, .cycles = CYCLES,
                        .quantum = 1};
  const char *raw = getenv("LA_HISTORY_RAW");
  if (raw && *raw) {
    if (recorded(raw, &cases[C_RECORDED])) return 1;
    ncases++;
    const char *only = getenv("LA_HISTORY_RECORDED_ONLY");
    if (only && *only && strcmp(only, "0")) first = C_RECORDED;
  }
  fprintf(f,
          "{\n  \"compaction\": \"polyline:cv=0.1\", \"robust_cv\": %g, "
          "\"full_cycles\": %d,\n  \"cases\": [\n",
          ROBUST_CV, LA_STORE_HISTORY_FULL_CYCLES);
  printf("bytes per element-cycle (measured and robust series): history off,"
         " whole references only, robust references too, and robust "
         "references with exceptions; cycles as references (whole, robust) "
         "with robust and with exceptions; the decision's CPU, ns per "
         "element-cycle\n");
  printf("%-8s %22s %8s %8s %8s %8s %7s %6s %6s %6s %6s %6s %6s %6s %6s "
         "%6s\n",
         "case", "ranks x elements x cyc", "off", "whole", "robust", "exc",
         "ratio", "whole", "+rob", "+exc", "exc/r", "ns", "ns+x", "bound",
         "rbound", "sums");
  int rc = 0;
  for (int i = first; i < ncases; i++) {
    const case_t *k = &cases[i];
    res_t v[NVARIANTS];
    long fails = 0;
    for (int j = 0; j < NVARIANTS; j++) {
      if (run(dir, k, j, &v[j])) return 1;
      fails += v[j].bound_fail + v[j].sum_fail + v[j].rbound_fail;
    }
    if (fails) rc = 1;
    long bf = 0, rbf = 0, sf = 0;
    for (int j = 0; j < NVARIANTS; j++) {
      bf += v[j].bound_fail;
      rbf += v[j].rbound_fail;
      sf += v[j].sum_fail;
    }
    double need = 0, rin = 0, nout = 0, oshare = 0;
    if (robust_drift(k, &need, &rin, &nout, &oshare)) return 1;
    printf("%s: robust weights against the cycle before: the per-element "
           "bound every element meets, median %.3g; cycles within %.2g: "
           "%.1f%%; elements beyond, median %.0f (%.2g%% of the weight)\n",
           names[k->kind], need, ROBUST_REL, 100 * rin, nout, 100 * oshare);
    char shape[64];
    snprintf(shape, sizeof shape, "%u x %llu x %llu", k->ranks,
             (unsigned long long)k->n, (unsigned long long)k->cycles);
    printf("%-8s %22s %8.4f %8.4f %8.4f %8.4f %6.2fx %5.1f%% %5.1f%% %5.1f%% "
           "%6.1f %6.3f %6.3f %6s %6s %6s\n",
           names[k->kind], shape, v[H_OFF].bytes_per_ec,
           v[H_WHOLE].bytes_per_ec, v[H_ROBUST].bytes_per_ec,
           v[H_EXC].bytes_per_ec,
           v[H_OFF].bytes_per_ec / v[H_EXC].bytes_per_ec,
           100 * v[H_EXC].refs, 100 * v[H_ROBUST].rrefs, 100 * v[H_EXC].rrefs,
           v[H_EXC].exc_per_ref, v[H_ROBUST].decide_ns, v[H_EXC].decide_ns,
           bf ? "FAIL" : "ok", rbf ? "FAIL" : "ok", sf ? "FAIL" : "exact");
    fprintf(f,
            "    {\"case\": \"%s\", \"ranks\": %u, \"elements\": %llu, "
            "\"cycles\": %llu, \"quantum_ns\": %.17g, \"timer_res_ns\": %.6g, "
            "\"bound_failures\": %ld, \"robust_bound_failures\": %ld, "
            "\"sum_failures\": %ld,\n      \"variants\": [",
            names[k->kind], k->ranks, (unsigned long long)k->n,
            (unsigned long long)k->cycles, k->quantum, k->timer_res, bf, rbf,
            sf);
    for (int j = 0; j < NVARIANTS; j++)
      fprintf(f,
              "{\"history\": \"%s\", \"bytes_per_element_cycle\": %.5f, "
              "\"reference_share\": %.4f, \"robust_reference_share\": %.4f, "
              "\"exceptions_per_robust_reference\": %.2f, "
              "\"decision_ns_per_element_cycle\": %.4f, "
              "\"seconds\": %.2f}%s",
              variants[j], v[j].bytes_per_ec, v[j].refs, v[j].rrefs,
              v[j].exc_per_ref, v[j].decide_ns, v[j].secs,
              j + 1 < NVARIANTS ? ", " : "");
    fprintf(f, "]}%s\n", i + 1 < ncases ? "," : "");
  }
  if (ncases > C_RECORDED) {
    double within_share = 0, block = 0, worst = 0;
    if (drift(&cases[C_RECORDED], &within_share, &block, &worst)) return 1;
    printf("recorded: %.1f%% of %d-element blocks within the bound (cv %.2g) "
           "of the cycle before; RMSE / |mean| of a block, median %.3f, of "
           "a cycle's largest block, median %.3f\n",
           100 * within_share, LA_HISTORY_BLOCK, 0.1, block, worst);
    fprintf(f, "  ],\n  \"recorded_blocks_within\": %.4f, "
               "\"recorded_block_cv_median\": %.4f, "
               "\"recorded_worst_block_cv_median\": %.4f\n}\n",
            within_share, block, worst);
  } else {
    fprintf(f, "  ]\n}\n");
  }
  free(cases[C_RECORDED].tags);
  fclose(f);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) rc = 1;
  return rc;
}
