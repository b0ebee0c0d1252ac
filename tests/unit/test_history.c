/* SPDX-License-Identifier: BSD-3-Clause */
/* test_history.c: bounded history (docs/history.md).
 *
 *   - the LocalAgent's check (localagent/history.c): a noisy repeat of a
 *     cycle is within bound of its representative, a moved hot spot is not;
 *     maxerr and lossless bounds; the memory budget;
 *   - the store (store/store_history.c) on a real SQLite file: cycles
 *     within bound lose their own segments once they leave the
 *     history.full_cycles window (the bytes drop), every reader gets the
 *     representative's segments and the cycle's own exact totals, a changed
 *     cycle stays in full, a store without the history table opens and
 *     reads; the Python package reads a demoted cycle as the
 *     representative;
 *   - robust references: a rank whose measured values never repeat within
 *     their bound but whose robust weights do gets its robust weights
 *     referenced on their own (la_history_match_robust, the per-element
 *     bound); in the store only their robust segments are demoted, readers
 *     (C and Python) get the representative's robust weights, within the
 *     per-element bound, with the cycle's own exact totals and its measured
 *     series in full; bad robust references are refused;
 *   - robust references with exceptions: a cycle whose robust weights
 *     repeat but for a few elements that jump gets a reference carrying its
 *     own values there (la_history_match_robust_exc, at most 1% of the
 *     elements); demoted, readers (C and Python) get the representative's
 *     weights with the exceptions spliced in, exact, its exact totals; bad
 *     exceptions are refused with the reason;
 *   - hostile references through the real GlobalAgent's link (a cycle that
 *     does not exist, another rank's, a reference's, itself, exceptions
 *     outside the trace): refused with
 *     the reason in its log, nothing stored, the GlobalAgent serving on.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "history.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_compact_splice.h"
#include "la_secure_io.h"
#include "la_test_daemon.h"
#include "la_test_link.h"
#include "la_test_msg.h"
#include "la_test_stack.h"
#include "la_trace_msg.h"
#include "store.h"

#define N 4096

/* A cycle of a mesh: smooth costs around 1000 with noise of relative
 * amplitude noise, and a hot spot (10x) of 64 elements at hot (< 0: none). */
static void cycle_values(double *x, uint64_t seed, double noise, long hot) {
  uint64_t st = seed;
  for (long i = 0; i < N; i++) {
    double base = 1000.0 + 300.0 * sin(i * 0.003);
    if (hot >= 0 && i >= hot && i < hot + 64) base *= 10;
    x[i] = round(base * (1.0 + noise * (2 * la_compact_rand01(&st) - 1)));
  }
}

static void decode_all(const uint8_t *b, size_t len, double *out) {
  la_trace_t *t = NULL;
  assert_int_equal(la_trace_open(b, len, &t, NULL, 0), 0);
  assert_int_equal(la_trace_count(t), N);
  assert_int_equal(la_trace_decode(t, 0, N, out), 0);
  la_trace_close(t);
}

/* Whether d (decoded from bytes) reproduces x within polyline's default cv
 * on the segments of that encoding, as the LocalAgent checks. */
static int within_segments(const double *x, const double *d, const uint8_t *b,
                           size_t len) {
  la_trace_t *t = NULL;
  assert_int_equal(la_trace_open(b, len, &t, NULL, 0), 0);
  size_t k = la_trace_segment_count(t);
  uint64_t *st = malloc((k ? k : 1) * sizeof *st);
  for (size_t i = 0; i < k; i++) {
    la_trace_segment_t sg;
    assert_int_equal(la_trace_segment(t, i, &sg), 0);
    st[i] = sg.first;
  }
  la_trace_close(t);
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  int ok = la_history_within(x, d, N, &cp, st, k);
  free(st);
  return ok;
}

/* ------------------------------------------------ the LocalAgent's check */

static void test_match_noisy_not_moved(void **state) {
  (void)state;
  la_history_budget_t b = {64u << 20, 0};
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  la_history_t *h = la_history_new(&b, N, 2, &cp, NULL);
  assert_non_null(h);
  assert_int_equal(b.used, 2 * N * (sizeof(double) + 1));
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  la_compact_result_t res;
  cycle_values(x, 1, 0.02, 100);
  assert_int_equal(la_compact(x, N, &cp, &res), 0);
  uint64_t ref = 0;
  la_fit_error_t e;
  assert_int_equal(la_history_check(h, x, NULL, &ref, &e), 0); /* empty */
  size_t len0 = res.len;
  assert_int_equal(la_history_refit(h, x, &cp, &res), 1);
  assert_true(res.len >= len0);
  assert_true(res.error.cv <= 0.1);
  assert_int_equal(la_history_learn(h, 7, &res, NULL), 0);
  assert_int_equal(la_history_count(h), 1);
  /* the next cycle: other noise, the same hot spot: within bound */
  cycle_values(y, 2, 0.02, 100);
  assert_int_equal(la_history_check(h, y, NULL, &ref, &e), 1);
  assert_int_equal(ref, 7);
  assert_true(e.cv > 0 && e.cv < 0.1);
  /* the representative's decoded values, on its own segments */
  double *d = malloc(N * sizeof *d);
  decode_all(res.bytes, res.len, d);
  assert_true(within_segments(y, d, res.bytes, res.len));
  /* the hot spot moved by 200 elements: some block is far out */
  cycle_values(y, 3, 0.02, 300);
  assert_int_equal(la_history_check(h, y, NULL, &ref, &e), 0);
  /* a NaN never matches */
  cycle_values(y, 4, 0.02, 100);
  y[5] = NAN;
  assert_int_equal(la_history_check(h, y, NULL, &ref, &e), 0);
  la_compact_result_free(&res);
  la_history_free(h);
  assert_int_equal(b.used, 0);
  free(x);
  free(y);
  free(d);
}

/* A representative learned from the refit's reconstruction and the robust
 * weights' (la_history_learn_recon: nothing decoded) is the one decoding
 * its traces gives: every later cycle matches it, or not, alike, with the
 * same error bit for bit; a trace that is not the refit's is decoded. */
static void test_learn_recon_as_decoded(void **state) {
  (void)state;
  la_history_budget_t b = {64u << 20, 0};
  la_compact_params_t cp, rcp;
  la_compact_params_default(&cp);
  cp.quantum = 1; /* whole values: the exact runs' path too */
  la_history_robust_params(&cp, 0.02, &rcp);
  la_history_t *ha = la_history_new(&b, N, 2, &cp, &rcp);
  la_history_t *hb = la_history_new(&b, N, 2, &cp, &rcp);
  la_history_t *hc = la_history_new(&b, N, 2, &cp, &rcp);
  assert_non_null(ha);
  assert_non_null(hb);
  assert_non_null(hc);
  double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  double *r = malloc(N * sizeof *r), *rw = malloc(N * sizeof *rw);
  double *ry = malloc(N * sizeof *ry), *rwy = malloc(N * sizeof *rwy);
  cycle_values(x, 11, 0.02, 100);
  cycle_values(r, 12, 0.005, 100); /* robust weights: smoother */
  la_compact_result_t res, rres, copy, ry_res, resc;
  uint64_t rst[N / 8];
  assert_int_equal(la_compact_recon_starts(r, N, &rcp, &rres, rw, rst, N / 8),
                   0);
  assert_true(rres.segments > 1 && rres.segments <= N / 8); /* kept */
  assert_int_equal(la_compact(x, N, &cp, &res), 0);
  assert_int_equal(la_history_refit(ha, x, &cp, &res), 1);
  /* hb: the same trace in other memory, so decoded */
  copy = res;
  copy.bytes = malloc(res.len);
  assert_non_null(copy.bytes);
  memcpy(copy.bytes, res.bytes, res.len);
  assert_int_equal(la_history_learn_recon(ha, 7, &res, &rres, rw, NULL), 0);
  assert_int_equal(la_history_learn(hb, 7, &copy, &rres), 0);
  /* hc: the robust weights' starts given too, nothing opened */
  assert_int_equal(la_compact(x, N, &cp, &resc), 0);
  assert_int_equal(la_history_refit(hc, x, &cp, &resc), 1);
  assert_int_equal(la_history_learn_recon(hc, 7, &resc, &rres, rw, rst), 0);
  for (uint64_t seed = 20; seed < 40; seed++) {
    cycle_values(y, seed, seed < 30 ? 0.02 : 0.2, seed % 3 ? 100 : 300);
    cycle_values(ry, seed + 100, 0.005, 100);
    assert_int_equal(la_compact_recon(ry, N, &rcp, &ry_res, rwy), 0);
    uint64_t ra = 0, rb = 0;
    la_fit_error_t ea, eb;
    memset(&ea, 0, sizeof ea);
    memset(&eb, 0, sizeof eb);
    int ma = la_history_match(ha, y, rwy, &ra, &ea);
    int mb = la_history_match(hb, y, rwy, &rb, &eb);
    assert_int_equal(ma, mb);
    assert_int_equal(ra, rb);
    assert_memory_equal(&ea, &eb, sizeof ea);
    uint64_t rc = 0;
    la_fit_error_t ec;
    memset(&ec, 0, sizeof ec);
    assert_int_equal(la_history_match(hc, y, rwy, &rc, &ec), ma);
    assert_int_equal(rc, ra);
    assert_memory_equal(&ec, &ea, sizeof ea);
    la_compact_result_free(&ry_res);
  }
  /* at least one matched: the check compared something */
  cycle_values(y, 21, 0.02, 100);
  uint64_t ref = 0;
  la_fit_error_t e;
  assert_int_equal(la_history_match(ha, y, rw, &ref, &e), 1);
  assert_int_equal(ref, 7);
  la_compact_result_free(&res);
  la_compact_result_free(&rres);
  la_compact_result_free(&copy);
  la_compact_result_free(&resc);
  la_history_free(ha);
  la_history_free(hb);
  la_history_free(hc);
  assert_int_equal(b.used, 0);
  free(x);
  free(y);
  free(r);
  free(rw);
  free(ry);
  free(rwy);
}


/* While nothing matches, representatives are learned at doubling gaps (up
 * to LA_HISTORY_MAX_GAP); a match starts over. */
static void test_learning_backs_off(void **state) {
  (void)state;
  la_history_budget_t b = {1u << 20, 0};
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  /* the back-off is the history's state, whatever it holds */
  la_history_t *h = la_history_new(&b, 64, 1, &cp, &cp);
  assert_non_null(h);
  char got[128] = "";
  for (int miss = 1; miss <= 64; miss++)
    if (la_history_take(h, 0))
      snprintf(got + strlen(got), sizeof got - strlen(got), "%d ", miss);
  assert_string_equal(got, "1 3 7 15 31 47 63 ");
  assert_int_equal(la_history_take(h, 1), 0); /* a match: not learned */
  assert_int_equal(la_history_take(h, 0), 1); /* the next miss is */
  assert_int_equal(la_history_take(h, 0), 0);
  assert_int_equal(la_history_take(h, 0), 1);
  assert_int_equal(la_history_take(NULL, 0), 0);
  la_history_free(h);
}

static void test_bounds_and_budget(void **state) {
  (void)state;
  double x[4] = {10, 20, 30, 40}, y[4] = {10.5, 20, 29.5, 40};
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse("maxerr:eps=0.5", &p, NULL, 0), 0);
  assert_int_equal(la_history_within(x, y, 4, &p, NULL, 0), 1);
  assert_int_equal(la_compact_spec_parse("maxerr:eps=0.4", &p, NULL, 0), 0);
  assert_int_equal(la_history_within(x, y, 4, &p, NULL, 0), 0);
  assert_int_equal(
      la_compact_spec_parse("maxerr:eps=0.02,relative", &p, NULL, 0), 0);
  assert_int_equal(la_history_within(x, y, 4, &p, NULL, 0),
                   0); /* 0.5 > 0.2 at 10 */
  assert_int_equal(la_compact_spec_parse("lossless", &p, NULL, 0), 0);
  assert_int_equal(la_history_within(x, y, 4, &p, NULL, 0), 0);
  assert_int_equal(la_history_within(x, x, 4, &p, NULL, 0), 1);
  /* the budget: a second rank that does not fit goes without */
  la_history_budget_t b = {3 * N * (sizeof(double) + 1), 0};
  la_compact_params_default(&p);
  la_history_t *h1 = la_history_new(&b, N, 2, &p, NULL);
  la_history_t *h2 = la_history_new(&b, N, 2, &p, NULL);
  assert_non_null(h1);
  assert_null(h2);
  la_history_free(h1);
  assert_non_null(h2 = la_history_new(&b, N, 2, &p, NULL));
  la_history_free(h2);
  la_history_budget_t off = {0, 0};
  assert_null(la_history_new(&off, N, 2, &p, NULL));
}

/* ------------------------------------------------------------- the store */

static char g_tmp[512];

/* Stores cycle tag of rank (rank_seq = tag) with values x, as a reference
 * to ref when ref > 0 (checked by the caller with la_history_*). */
static int put_trace(la_store_t *s, uint32_t rank, uint64_t tag,
                     const double *x, uint64_t ref, la_compact_result_t *res) {
  la_compact_params_t cp;
  la_compact_params_default(&cp);
  if (!ref) cp.cv *= LA_HISTORY_REP_BOUND; /* as the LocalAgent does */
  assert_int_equal(la_compact(x, N, &cp, res), 0);
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  La__FitError fe = LA__FIT_ERROR__INIT, he = LA__FIT_ERROR__INIT;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  la_test_history_trace(&t, &st, &fe, res, "hist", rank, tag, N,
                        tag * 10 + rank, ref);
  if (ref) {
    he.max_abs = 1;
    he.rmse = 0.5;
    he.cv = 0.01;
    t.history_error = &he;
  }
  int was_new = 0;
  return la_store_trace(s, &t, &was_new);
}

static long long q1(const char *db, const char *sql) {
  sqlite3 *d = NULL;
  sqlite3_stmt *st = NULL;
  long long v = -1;
  assert_int_equal(sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY, NULL), 0);
  assert_int_equal(sqlite3_prepare_v2(d, sql, -1, &st, NULL), 0);
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(d);
  return v;
}

/* The Python package (python/la_weights, Debian's /usr/bin/python3 with
 * numpy) reads cycle c of db, a demoted reference, as the representative's
 * values rep: the same per-element sum, bit for bit. Skipped (with a
 * message) only on a machine without that Python. */
static void python_reads(const char *db, const char *app, uint64_t c,
                         const double *rep) {
  if (access("/usr/bin/python3", X_OK) != 0 || access("python", X_OK) != 0) {
    print_message("no /usr/bin/python3 or python/: Python reader not run\n");
    return;
  }
  char cyc[32], out[4096];
  snprintf(cyc, sizeof cyc, "%llu", (unsigned long long)c);
  const char *argv[] = {
      "/usr/bin/python3",
      "-c",
      "import sys; sys.path.insert(0, 'python'); import la_weights as lw\n"
      "w = lw.open(sys.argv[1], lib='build/lib').weights(sys.argv[3], "
      "int(sys.argv[2]))\n"
      "s = 0.0\n"
      "for v in w: s += float(v)\n"
      "print(len(w), s.hex())",
      db,
      cyc,
      app,
      NULL};
  int rc = la_td_run(argv, NULL, 60000, out, sizeof out);
  if (rc != 0) fail_msg("la_weights on a demoted cycle (%d): %s", rc, out);
  double want = 0;
  for (int i = 0; i < N; i++) want += rep[i];
  long n = 0;
  char hex[64] = "";
  if (sscanf(out, "%ld %63s", &n, hex) != 2) fail_msg("python said: %s", out);
  assert_int_equal(n, N);
  if (strtod(hex, NULL) != want)
    fail_msg("la_weights' cycle %s sums to %s, the representative to %a", cyc,
             hex, want);
}

static void test_store_references(void **state) {
  (void)state;
  char db[600], why[300];
  snprintf(db, sizeof db, "%s/refs.db", g_tmp);
  la_store_t *s = NULL;
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  la_store_set_history(s, 2);
  La__RankStart rs = la_test_rank_start("hist", "hist", 0, 1, N);
  assert_int_equal(la_store_rank_start(s, &rs, NULL), 0);
  double *x = malloc(N * sizeof *x), *d = malloc(N * sizeof *d);
  double *rep = malloc(N * sizeof *rep);
  la_compact_result_t res;
  /* cycle 1 in full (the representative), 2..10 references to it */
  cycle_values(x, 1, 0.02, 100);
  assert_int_equal(put_trace(s, 0, 1, x, 0, &res), 0);
  decode_all(res.bytes, res.len, rep);
  la_compact_result_free(&res);
  double sums[11];
  for (uint64_t c = 2; c <= 10; c++) {
    cycle_values(x, c, 0.02, 100);
    sums[c] = la_compact_sum(x, N);
    assert_int_equal(put_trace(s, 0, c, x, 1, &res), 0);
    la_compact_result_free(&res);
  }
  /* cycle 11 changed (hot spot moved): in full, not a reference */
  cycle_values(x, 11, 0.02, 2000);
  assert_int_equal(put_trace(s, 0, 11, x, 0, &res), 0);
  size_t full_len = res.len;
  la_compact_result_free(&res);
  la_store_close(s);
  /* window 2 (rank_seq 11 newest): cycles 2..9 demoted, 10 still full */
  assert_int_equal(q1(db,
                      "SELECT count(*) FROM traces WHERE "
                      "length(segments) = 0"),
                   8);
  assert_int_equal(q1(db, "SELECT count(*) FROM history WHERE in_full = 1"), 1);
  assert_true(q1(db, "SELECT sum(length(segments)) FROM traces") <
              (long long)(3 * full_len + 100));
  /* every cycle reads back: references with the representative's values
   * and their own exact totals; the changed cycle its own values */
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  for (uint64_t c = 1; c <= 11; c++) {
    La__TraceSet *set = NULL;
    assert_int_equal(la_store_load_set(s, "hist", c, &set), 0);
    assert_int_equal(set->n_traces, 1);
    const La__CompactTrace *t = set->traces[0];
    decode_all(t->segments.data, t->segments.len, d);
    if (c >= 2 && c <= 10) assert_true(t->stats->sum == sums[c]);
    if (c >= 2 && c <= 9) { /* demoted: the representative's values */
      assert_memory_equal(d, rep, N * sizeof *d);
      cycle_values(x, c, 0.02, 100);
      la_compact_params_t cp;
      la_compact_params_default(&cp);
      assert_true(within_segments(x, d, t->segments.data, t->segments.len));
    }
    if (c <= 9 && c >= 2) { /* demoted: the reference's error */
      assert_non_null(t->error);
      assert_true(t->error->cv == 0.01);
    }
    if (c == 11) assert_true(fabs(d[2010] - rep[2010]) > 1000);
    la_store_free_set(set);
  }
  la_store_close(s);
  python_reads(db, "hist", 5, rep);
  /* a store written before the history table: still opens and reads */
  char old[600], cmd[1400];
  snprintf(old, sizeof old, "%s/old.db", g_tmp);
  snprintf(cmd, sizeof cmd, "cp %s %s", db, old);
  assert_int_equal(system(cmd), 0);
  sqlite3 *o = NULL;
  assert_int_equal(sqlite3_open(old, &o), 0);
  assert_int_equal(sqlite3_exec(o,
                                "DELETE FROM traces WHERE length(segments) "
                                "= 0; DROP TABLE history; PRAGMA "
                                "journal_mode = DELETE;",
                                NULL, NULL, NULL),
                   0);
  sqlite3_close(o);
  snprintf(cmd, sizeof cmd, "chmod 0444 %s", old);
  assert_int_equal(system(cmd), 0);
  char uri[700];
  snprintf(uri, sizeof uri, "file:%s?mode=ro", old);
  int ro = la_store_open(uri, 0, &s, why, sizeof why);
  if (ro != 0) /* URIs not taken: open it writable instead */
    assert_int_equal(la_store_open(old, 0, &s, why, sizeof why), 0);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(s, "hist", 10, &set), 0);
  decode_all(set->traces[0]->segments.data, set->traces[0]->segments.len, d);
  la_store_free_set(set);
  la_store_close(s);
  free(x);
  free(d);
  free(rep);
}

/* ------------------------------------------------- robust references */

/* Robust weights of a cycle: the smooth field of cycle_values, each
 * element off by at most wobble (relative) from cycle to cycle. */
static void robust_values(double *r, uint64_t seed, double wobble) {
  uint64_t st = seed * 7 + 3;
  for (long i = 0; i < N; i++)
    r[i] = round(1000.0 + 300.0 * sin(i * 0.003)) *
           (1.0 + wobble * (2 * la_compact_rand01(&st) - 1));
}

/* Stores cycle tag (rank_seq = tag) of rank 0 of app "rob" with measured
 * values x (compacted into *res) and robust weights rx (compacted with
 * rcp into *rres), its robust weights a reference to rref when rref > 0,
 * and, when href > 0, a history_ref too. Returns la_store_trace's code. */
static int put_robust_x(la_store_t *s, uint64_t tag, const double *x,
                        const double *rx, uint64_t rref, uint64_t href,
                        La__HistoryExceptions *xc, la_compact_result_t *res,
                        la_compact_result_t *rres) {
  la_compact_params_t cp, rcp;
  la_compact_params_default(&cp);
  la_history_robust_params(&cp, 0.02, &rcp);
  assert_int_equal(la_compact(x, N, &cp, res), 0);
  memset(rres, 0, sizeof *rres);
  if (rx) assert_int_equal(la_compact(rx, N, &rcp, rres), 0);
  La__SeriesStats st = LA__SERIES_STATS__INIT, rst = LA__SERIES_STATS__INIT;
  La__FitError fe = LA__FIT_ERROR__INIT, re = LA__FIT_ERROR__INIT;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  la_test_history_trace(&t, &st, &fe, res, "rob", 0, tag, N, tag, href);
  if (rx) la_trace_msg_robust(&t, &rst, rres);
  if (rref) {
    t.has_robust_ref = 1;
    t.robust_ref = rref;
    re.max_abs = 2;
    re.rmse = 1;
    re.cv = 0.001;
    t.robust_ref_error = &re;
  }
  t.robust_exceptions = xc;
  int was_new = 0;
  return la_store_trace(s, &t, &was_new);
}

/* put_robust_x without exceptions. */
static int put_robust(la_store_t *s, uint64_t tag, const double *x,
                      const double *rx, uint64_t rref, uint64_t href,
                      la_compact_result_t *res, la_compact_result_t *rres) {
  return put_robust_x(s, tag, x, rx, rref, href, NULL, res, rres);
}

/* A new store g_tmp/name (its path into db) keeping 2 cycles in full,
 * rank 0 of app "rob" started and its cycle 1 stored in full (x and rx
 * its values, with 40% and 0.5% noise). */
static la_store_t *robust_store(char *db, size_t len, const char *name,
                                double *x, double *rx) {
  char why[300];
  snprintf(db, len, "%s/%s", g_tmp, name);
  la_store_t *s = NULL;
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  la_store_set_history(s, 2);
  La__RankStart rs = la_test_rank_start("rob", "rob", 0, 1, N);
  assert_int_equal(la_store_rank_start(s, &rs, NULL), 0);
  cycle_values(x, 1, 0.4, -1);
  robust_values(rx, 1, 0.005);
  la_compact_result_t res, rres;
  assert_int_equal(put_robust(s, 1, x, rx, 0, 0, &res, &rres), 0);
  la_compact_result_free(&res);
  la_compact_result_free(&rres);
  return s;
}

/* put_robust_x of cycle 11 is refused, with why in the store's message. */
static void refused_x(la_store_t *s, const double *x, const double *rx,
                      uint64_t rref, uint64_t href, La__HistoryExceptions *xc,
                      const char *why) {
  la_compact_result_t res, rres;
  assert_int_equal(put_robust_x(s, 11, x, rx, rref, href, xc, &res, &rres),
                   LA_EPROTO);
  if (!strstr(la_store_errmsg(s), why))
    fail_msg("refused, but not for \"%s\": %s", why, la_store_errmsg(s));
  la_compact_result_free(&res);
  la_compact_result_free(&rres);
}

static void refused(la_store_t *s, const double *x, const double *rx,
                    uint64_t rref, uint64_t href, const char *why) {
  refused_x(s, x, rx, rref, href, NULL, why);
}

/* A history of N elements with robust weights (the default polyline
 * bound, robust.cv 0.02, four representatives) charged to b; *cp and *rcp
 * its compactions. */
static la_history_t *robust_history(la_history_budget_t *b,
                                    la_compact_params_t *cp,
                                    la_compact_params_t *rcp) {
  la_compact_params_default(cp);
  la_history_robust_params(cp, 0.02, rcp);
  la_history_t *h = la_history_new(b, N, 4, cp, rcp);
  assert_non_null(h);
  return h;
}

/* The store db of app "rob", cycles 1..10 of which k robust references
 * were demoted: k robust rows emptied, every measured series in full, no
 * whole reference. */
static void robust_demoted(const char *db, long k) {
  assert_int_equal(q1(db, "SELECT count(*) FROM robust WHERE "
                          "length(segments) = 0"),
                   k);
  assert_int_equal(q1(db, "SELECT count(*) FROM traces WHERE "
                          "length(segments) = 0"),
                   0);
  assert_int_equal(q1(db, "SELECT count(*) FROM history"), 0);
  assert_int_equal(q1(db, "SELECT count(*) FROM history_robust WHERE "
                          "in_full = 0"),
                   k);
  assert_int_equal(q1(db, "SELECT count(*) FROM traces WHERE app_id = 'rob'"),
                   10);
}

static void test_robust_references(void **state) {
  (void)state;
  la_compact_params_t cp, rcp;
  la_history_budget_t b = {1u << 30, 0};
  la_history_t *h = robust_history(&b, &cp, &rcp);
  double *x = malloc(N * sizeof *x), *rx = malloc(N * sizeof *rx);
  double *d = malloc(N * sizeof *d), *rrep = malloc(N * sizeof *rrep);
  double *rd = malloc(N * sizeof *rd);
  la_compact_result_t res, rres;
  /* the LocalAgent's decision: cycle 1 learned; cycle 2's measured values
   * (40% noise) are not within their bound, its robust weights (0.5%) are
   * within the measured values' cv (0.1) of the representative's on every
   * element */
  cycle_values(x, 1, 0.4, -1);
  robust_values(rx, 1, 0.005);
  assert_int_equal(la_compact(x, N, &cp, &res), 0);
  assert_int_equal(la_compact(rx, N, &rcp, &rres), 0);
  assert_int_equal(la_history_learn(h, 1, &res, &rres), 0);
  decode_all(rres.bytes, rres.len, rrep);
  la_compact_result_free(&res);
  la_compact_result_free(&rres);
  cycle_values(x, 2, 0.4, -1);
  robust_values(rx, 2, 0.005);
  uint64_t ref = 0;
  la_fit_error_t e;
  assert_int_equal(la_history_match(h, x, rx, &ref, &e), 0);
  assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 1);
  assert_int_equal(ref, 1);
  assert_true(e.max_abs > 0 && e.max_abs <= 0.1 * 1300);
  /* one element 20% off: |r - y| = 0.2 y > 0.1 r: no reference */
  double keep = rx[777];
  rx[777] = rrep[777] * 1.2;
  assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 0);
  rx[777] = keep;
  /* the floor: r - y = 0.1 r + 5 fails without it, passes with one timer
   * step of 10, and r - y = 0.1 r + 11 fails with it */
  keep = rx[0];
  rx[0] = (rrep[0] + 5) / 0.9;
  assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 0);
  la_history_set_robust_floor(h, 10);
  la_history_set_robust_floor(h, 10); /* set, not added */
  assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 1);
  rx[0] = (rrep[0] + 11) / 0.9;
  assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 0);
  rx[0] = NAN; /* a value that is not finite never matches */
  assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 0);
  rx[0] = keep;
  /* the AVX2 test and the scalar one (LA_COMPACT_SCALAR) agree wherever
   * the one bad element is: in the first group of four, on either side
   * of a block of 64, at the end */
  const uint64_t at[] = {0, 1, 3, 63, 64, 65, N / 2, N - 5, N - 4, N - 1};
  const double bad[] = {1.2, NAN, INFINITY, -INFINITY};
  for (int scalar = 0; scalar < 2; scalar++) {
    if (scalar) setenv("LA_COMPACT_SCALAR", "1", 1);
    assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 1);
    for (size_t a = 0; a < sizeof at / sizeof *at; a++)
      for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        double was = rx[at[a]];
        rx[at[a]] = k == 0 ? rrep[at[a]] * bad[k] : bad[k];
        assert_int_equal(la_history_match_robust(h, rx, NULL, 0, &ref, &e), 0);
        rx[at[a]] = was;
      }
    if (scalar) unsetenv("LA_COMPACT_SCALAR");
  }
  /* a history without robust weights has nothing to refer to */
  la_history_t *h0 = la_history_new(&b, N, 4, &cp, NULL);
  assert_int_equal(la_history_match_robust(h0, rx, NULL, 0, &ref, &e), 0);
  la_history_free(h0);
  la_history_free(h);

  /* the store: cycle 1 in full (the representative), 2..10 with their
   * measured values in full and their robust weights a reference to it */
  char db[600], why[300];
  la_store_t *s = robust_store(db, sizeof db, "robust.db", x, rx);
  double sums[11], rsums[11];
  uint8_t *own[11] = {0};
  size_t own_len[11] = {0};
  for (uint64_t c = 2; c <= 10; c++) {
    cycle_values(x, c, 0.4, -1);
    robust_values(rx, c, 0.005);
    sums[c] = la_compact_sum(x, N);
    rsums[c] = la_compact_sum(rx, N);
    assert_int_equal(put_robust(s, c, x, rx, 1, 0, &res, &rres), 0);
    own[c] = malloc(res.len);
    memcpy(own[c], res.bytes, res.len);
    own_len[c] = res.len;
    la_compact_result_free(&res);
    la_compact_result_free(&rres);
  }
  /* refused: a robust reference to a robust reference, one on a trace
   * without robust weights, one beside a history_ref, one to itself */
  cycle_values(x, 11, 0.4, -1);
  robust_values(rx, 11, 0.005);
  refused(s, x, rx, 3, 0, "itself stored as a reference");
  refused(s, x, NULL, 1, 0, "no robust weights");
  refused(s, x, rx, 1, 1, "either a history_ref");
  refused(s, x, rx, 11, 0, "refers to itself");
  /* nor may a whole reference name a cycle whose robust weights are one */
  refused(s, x, rx, 0, 3, "itself stored as a reference");
  la_store_close(s);
  /* window 2 (rank_seq 10 newest): the robust weights of 2..8 demoted,
   * every measured series in full */
  robust_demoted(db, 7);
  /* every cycle reads back: the measured values its own (bit for bit the
   * encoding sent), the robust weights the representative's, within 10%
   * of the cycle's own on every element, and the cycle's
   * own exact totals of both */
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  for (uint64_t c = 2; c <= 10; c++) {
    La__TraceSet *set = NULL;
    assert_int_equal(la_store_load_set(s, "rob", c, &set), 0);
    assert_int_equal(set->n_traces, 1);
    const La__CompactTrace *t = set->traces[0];
    assert_int_equal(t->segments.len, own_len[c]);
    assert_memory_equal(t->segments.data, own[c], own_len[c]);
    assert_true(t->stats->sum == sums[c]);
    assert_true(t->has_robust_segments && t->robust_stats);
    assert_true(t->robust_stats->sum == rsums[c]);
    decode_all(t->robust_segments.data, t->robust_segments.len, rd);
    if (c <= 8) assert_memory_equal(rd, rrep, N * sizeof *rd);
    robust_values(rx, c, 0.005);
    for (long i = 0; i < N; i++)
      if (!(fabs(rd[i] - rx[i]) <= 0.1 * fabs(rx[i])))
        fail_msg("cycle %llu element %ld: robust %g served, %g its own",
                 (unsigned long long)c, i, rd[i], rx[i]);
    la_store_free_set(set);
    free(own[c]);
  }
  la_store_close(s);
  /* the Python package resolves them the same way */
  python_reads(db, "rob", 5, rrep);
  free(x);
  free(rx);
  free(d);
  free(rd);
  free(rrep);
}

/* ------------------------------------- robust references with exceptions */

/* Robust weights of cycle c (robust_values, 0.5%) with the k elements at
 * 30 times their weight (one cycle's jump, as interference the probe did
 * not flag makes), compacted with rcp into *rres and decoded into rd (the
 * values its trace serves). */
static void spiky(double *r, double *rd, uint64_t c, const uint64_t *at,
                  size_t k, const la_compact_params_t *rcp,
                  la_compact_result_t *rres) {
  robust_values(r, c, 0.005);
  for (size_t i = 0; i < k; i++) r[at[i]] *= 30;
  assert_int_equal(la_compact(r, N, rcp, rres), 0);
  decode_all(rres->bytes, rres->len, rd);
}

static void test_robust_exceptions(void **state) {
  (void)state;
  la_compact_params_t cp, rcp;
  la_history_budget_t b = {1u << 30, 0};
  la_history_t *h = robust_history(&b, &cp, &rcp);
  double *x = malloc(N * sizeof *x), *rx = malloc(N * sizeof *rx);
  double *rxd = malloc(N * sizeof *rxd), *rrep = malloc(N * sizeof *rrep);
  double *rd = malloc(N * sizeof *rd);
  double *want = malloc(11 * N * sizeof *want);
  la_compact_result_t res, rres;
  /* cycle 1 the representative */
  cycle_values(x, 1, 0.4, -1);
  robust_values(rx, 1, 0.005);
  assert_int_equal(la_compact(x, N, &cp, &res), 0);
  assert_int_equal(la_compact(rx, N, &rcp, &rres), 0);
  assert_int_equal(la_history_learn(h, 1, &res, &rres), 0);
  decode_all(rres.bytes, rres.len, rrep);
  la_compact_result_t rep_res = rres;
  la_compact_result_free(&res);
  /* cycle 2: five elements jump (three of them together): no reference
   * on every element, one with those five as exceptions */
  const uint64_t at[] = {5, 6, 7, 1000, N - 1};
  const size_t cap = LA_COMPACT_SPLICE_MAX(N);
  assert_int_equal(cap, N / 100);
  uint64_t idx[N / 100 + 1], ref = 0, first[N / 100], count[N / 100];
  double vals[N / 100];
  size_t k = 99;
  la_fit_error_t e;
  spiky(rx, rxd, 2, at, 5, &rcp, &rres);
  la_compact_result_free(&rres);
  assert_int_equal(la_history_match_robust(h, rxd, NULL, 0, &ref, &e), 0);
  for (int scalar = 0; scalar < 2; scalar++) {
    if (scalar) setenv("LA_COMPACT_SCALAR", "1", 1);
    k = 99;
    assert_int_equal(
        la_history_match_robust_exc(h, rxd, NULL, 0, cap, idx, &k, &ref, &e),
        1);
    assert_int_equal(ref, 1);
    assert_int_equal(k, 5);
    assert_memory_equal(idx, at, sizeof at);
    /* the error with the exceptions exact: the wobble's, not the jumps' */
    assert_true(e.max_abs > 0 && e.max_abs <= 0.1 * 1300);
    /* cap 0 (or no room): on every element only */
    assert_int_equal(
        la_history_match_robust_exc(h, rxd, NULL, 0, 0, idx, &k, &ref, &e), 0);
    assert_int_equal(k, 0);
    assert_int_equal(
        la_history_match_robust_exc(h, rxd, NULL, 0, cap, NULL, &k, &ref, &e),
        0);
    /* an own value that is not finite is no exception */
    double keep = rxd[1000];
    rxd[1000] = NAN;
    assert_int_equal(
        la_history_match_robust_exc(h, rxd, NULL, 0, cap, idx, &k, &ref, &e),
        0);
    rxd[1000] = keep;
    if (scalar) unsetenv("LA_COMPACT_SCALAR");
  }
  /* more than the cap (1% of the elements): none */
  {
    uint64_t many[N / 100 + 1];
    for (size_t i = 0; i <= cap; i++) many[i] = 3 + 97 * i;
    spiky(rx, rd, 2, many, cap + 1, &rcp, &rres);
    la_compact_result_free(&rres);
    assert_int_equal(
        la_history_match_robust_exc(h, rd, NULL, 0, cap, idx, &k, &ref, &e), 0);
    spiky(rx, rd, 2, many, cap, &rcp, &rres);
    la_compact_result_free(&rres);
    assert_int_equal(
        la_history_match_robust_exc(h, rd, NULL, 0, cap, idx, &k, &ref, &e), 1);
    assert_int_equal(k, cap);
  }
  /* the exceptions as they travel: ranges, and the splice a reader gets */
  La__HistoryExceptions xm;
  assert_int_equal(
      la_compact_exceptions_build(at, 5, rxd, &xm, first, count, vals), 3);
  assert_int_equal(first[0], 5);
  assert_int_equal(count[0], 3);
  assert_int_equal(first[2], N - 1);
  char why[300];
  assert_int_equal(la_compact_exceptions_check(&xm, N, why, sizeof why), 0);
  la_compact_result_t sp;
  assert_int_equal(la_compact_splice(rep_res.bytes, rep_res.len, N, &xm, &sp,
                                     why, sizeof why),
                   0);
  decode_all(sp.bytes, sp.len, rd);
  la_compact_result_free(&sp);
  for (long i = 0; i < N; i++) {
    int exc = i == 5 || i == 6 || i == 7 || i == 1000 || i == N - 1;
    if (exc ? rd[i] != rxd[i] : rd[i] != rrep[i])
      fail_msg("spliced element %ld: %g", i, rd[i]);
  }
  /* a splice of a representative of another length is refused */
  assert_int_equal(la_compact_splice(rep_res.bytes, rep_res.len, N + 1, &xm,
                                     &sp, why, sizeof why),
                   LA_EPROTO);

  /* the store: cycle 1 in full, 2..10 robust references with exceptions
   * (other elements jump in each cycle) */
  char db[600];
  la_store_t *s = robust_store(db, sizeof db, "exceptions.db", x, rx);
  double rsums[11];
  for (uint64_t c = 2; c <= 10; c++) {
    const uint64_t jump[] = {c, c + 1, 100 * c, N - c};
    cycle_values(x, c, 0.4, -1);
    spiky(rx, rxd, c, jump, 4, &rcp, &rres);
    la_compact_result_free(&rres);
    rsums[c] = la_compact_sum(rx, N);
    assert_int_equal(
        la_history_match_robust_exc(h, rxd, NULL, 0, cap, idx, &k, &ref, &e),
        1);
    assert_int_equal(k, 4);
    la_compact_exceptions_build(idx, k, rxd, &xm, first, count, vals);
    assert_int_equal(put_robust_x(s, c, x, rx, ref, 0, &xm, &res, &rres), 0);
    la_compact_result_free(&res);
    la_compact_result_free(&rres);
    memcpy(want + c * N, rrep, N * sizeof *rrep);
    for (size_t i = 0; i < 4; i++) want[c * N + jump[i]] = rxd[jump[i]];
  }
  /* refused, with the reason: exceptions not sorted, outside the trace,
   * more than 1%, a value not finite, values not matching the ranges, or
   * without a robust_ref */
  cycle_values(x, 11, 0.4, -1);
  robust_values(rx, 11, 0.005);
  uint64_t f2[2] = {1000, 5}, c2[2] = {1, 1};
  double v2[2] = {1, 2};
  La__HistoryExceptions bad;
  la__history_exceptions__init(&bad);
  bad.n_first = bad.n_count = bad.n_values = 2;
  bad.first = f2;
  bad.count = c2;
  bad.values = v2;
  refused_x(s, x, rx, 1, 0, &bad, "not after the one before");
  f2[0] = 5;
  f2[1] = 6; /* touching: one range, sent as two */
  refused_x(s, x, rx, 1, 0, &bad, "not after the one before");
  f2[1] = N - 1;
  c2[1] = 2;
  bad.n_values = 3;
  double v3[3] = {1, 2, 3};
  bad.values = v3;
  refused_x(s, x, rx, 1, 0, &bad, "outside the trace");
  c2[1] = 1;
  bad.n_values = 2;
  bad.values = v2;
  v2[1] = INFINITY;
  refused_x(s, x, rx, 1, 0, &bad, "value 1 is not finite");
  v2[1] = 2;
  bad.n_values = 1;
  refused_x(s, x, rx, 1, 0, &bad, "1 values for 2 elements");
  bad.n_values = 2;
  c2[1] = (uint64_t)cap;
  f2[1] = 100;
  refused_x(s, x, rx, 1, 0, &bad, "more than 40 elements");
  c2[1] = 1;
  refused_x(s, x, rx, 0, 0, &bad, "only with a robust_ref");
  bad.n_count = 1;
  refused_x(s, x, rx, 1, 0, &bad, "2 firsts but 1 counts");
  la_store_close(s);
  /* window 2: 2..8 demoted, their exceptions kept (all nine rows) */
  assert_int_equal(q1(db, "SELECT count(*) FROM history_exceptions"), 9);
  robust_demoted(db, 7);
  /* every cycle reads back: a demoted one the representative's robust
   * weights with its own at the exceptions, bit for bit, every element
   * within the bound of its own weights and the exceptions exact; its
   * exact totals */
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  for (uint64_t c = 2; c <= 10; c++) {
    La__TraceSet *set = NULL;
    assert_int_equal(la_store_load_set(s, "rob", c, &set), 0);
    const La__CompactTrace *t = set->traces[0];
    assert_true(t->robust_stats->sum == rsums[c]);
    decode_all(t->robust_segments.data, t->robust_segments.len, rd);
    const uint64_t jump[] = {c, c + 1, 100 * c, N - c};
    spiky(rx, rxd, c, jump, 4, &rcp, &rres);
    la_compact_result_free(&rres);
    if (c <= 8) assert_memory_equal(rd, want + c * N, N * sizeof *rd);
    for (size_t i = 0; i < 4; i++) assert_true(rd[jump[i]] == rxd[jump[i]]);
    for (long i = 0; i < N; i++)
      if (!(fabs(rd[i] - rxd[i]) <= 0.1 * fabs(rxd[i])))
        fail_msg("cycle %llu element %ld: robust %g served, %g its own",
                 (unsigned long long)c, i, rd[i], rxd[i]);
    la_store_free_set(set);
  }
  la_store_close(s);
  /* a corrupt exceptions blob: a clear error, not a crash */
  sqlite3 *o = NULL;
  assert_int_equal(sqlite3_open(db, &o), 0);
  assert_int_equal(sqlite3_exec(o,
                                "UPDATE history_exceptions SET exceptions = "
                                "x'0a0205ff' WHERE cycle_tag = 3",
                                NULL, NULL, NULL),
                   0);
  sqlite3_close(o);
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  La__TraceSet *set = NULL;
  assert_int_not_equal(la_store_load_set(s, "rob", 3, &set), 0);
  if (!strstr(la_store_errmsg(s), "exceptions"))
    fail_msg("corrupt exceptions: %s", la_store_errmsg(s));
  la_store_close(s);
  /* the Python package splices the same way */
  python_reads(db, "rob", 5, want + 5 * N);
  la_compact_result_free(&rep_res);
  la_history_free(h);
  free(x);
  free(rx);
  free(rxd);
  free(rrep);
  free(rd);
  free(want);
}

/* ------------------------------------ hostile references, real GlobalAgent */

static int send_ref(la_test_link_t *l, uint32_t rank, uint64_t tag,
                    uint64_t ref, const la_compact_result_t *r) {
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  la_test_history_trace(&t, &st, NULL, r, "hostile", rank, tag, N, ++l->seq,
                        ref);
  return la_secure_send_msg(l->fd, &l->sec, LA__MSG_TYPE__MSG_COMPACT_TRACE,
                            &t.base, 5000);
}

static la_test_stack_t ts; /* freed by its teardown, even after a failure */
static int have_ts;

static int ts_teardown(void **state) {
  if (have_ts) la_ts_free(&ts);
  have_ts = 0;
  return 0;
}

/* The robust series learned from rep[0..N), then whether cyc[0..N) (of
 * measured values x, q ns per tick) references it with the given floor
 * (one timer step): 1 or 0, the AVX2 test and the scalar one
 * (LA_COMPACT_SCALAR) agreeing. */
static int robust_ref_with(const double *rep, const double *cyc,
                           const double *x, double q, double floor) {
  la_compact_params_t cp, rcp;
  la_history_budget_t b = {1u << 30, 0};
  la_history_t *h = robust_history(&b, &cp, &rcp);
  la_history_set_robust_floor(h, floor);
  la_compact_result_t res, rres;
  assert_int_equal(la_compact(rep, N, &cp, &res), 0);
  assert_int_equal(la_compact(rep, N, &rcp, &rres), 0);
  assert_int_equal(la_history_learn(h, 1, &res, &rres), 0);
  la_compact_result_free(&res);
  la_compact_result_free(&rres);
  uint64_t ref = 0;
  la_fit_error_t e;
  int m = la_history_match_robust(h, cyc, x, q, &ref, &e);
  setenv("LA_COMPACT_SCALAR", "1", 1);
  assert_int_equal(la_history_match_robust(h, cyc, x, q, &ref, &e), m);
  unsetenv("LA_COMPACT_SCALAR");
  la_history_free(h);
  return m;
}

/* The floor of one timer step is a timed interval's slack: an element
 * whose measured value is a share of one interval spread over cells (a
 * range's 1000th: 0.1 ns on a 0.4 ns tick) does not get it, so robust
 * weights twice the representative's are no reference; whole ticks still
 * get it, their robust weights whole or not (a line's points). */
static void test_robust_reference_shares(void **state) {
  (void)state;
  const double q = 0.385, step = 10;
  double *rep = malloc(N * sizeof *rep), *cyc = malloc(N * sizeof *cyc);
  double *x = malloc(N * sizeof *x);
  for (uint64_t i = 0; i < N; i++) { /* a range's share, ranges of 64 */
    rep[i] = 0.1 * (1 + (double)(i / 64 % 3));
    cyc[i] = x[i] = 2 * rep[i];
  }
  /* q or x unknown: the floor for every element, as before */
  assert_int_equal(robust_ref_with(rep, cyc, x, 0, step), 1);
  assert_int_equal(robust_ref_with(rep, cyc, NULL, q, step), 1);
  assert_int_equal(robust_ref_with(rep, cyc, x, q, step), 0);
  /* one element twice the representative's is enough to miss */
  for (uint64_t i = 0; i < N; i++) cyc[i] = x[i] = rep[i];
  assert_int_equal(robust_ref_with(rep, cyc, x, q, step), 1);
  for (uint64_t a = 0; a < N; a += N / 4 - 1) {
    cyc[a] = x[a] = 2 * rep[a];
    assert_int_equal(robust_ref_with(rep, cyc, x, q, step), 0);
    cyc[a] = x[a] = rep[a];
  }
  /* whole ticks (cells of 26 ticks, one timer step) keep the floor: 4
   * ticks more than the representative is beyond 0.1 r, within it plus
   * the floor, and so is a weight between ticks */
  for (uint64_t i = 0; i < N; i++) {
    rep[i] = 26 * q;
    x[i] = 30 * q;
    cyc[i] = i % 2 ? x[i] : x[i] + q / 3;
  }
  assert_int_equal(robust_ref_with(rep, cyc, x, q, step), 1);
  assert_int_equal(robust_ref_with(rep, cyc, x, q, 0), 0);
  free(rep);
  free(cyc);
  free(x);
}

static void test_hostile_references(void **state) {
  (void)state;
  if (la_ts_init(&ts) != 0) skip();
  have_ts = 1;
  assert_int_equal(la_ts_start_global(&ts, NULL), 0);
  const char *p = strrchr(ts.ga_addr, ':');
  uint16_t port = (uint16_t)atoi(p + 1);
  la_test_link_t l;
  int32_t status = -1;
  char why[300];
  assert_int_equal(la_test_link_open(&l, port, ts.secret, "evil", 5000, &status,
                                     why, sizeof why),
                   0);
  assert_int_equal(status, 0);
  assert_int_equal(la_test_link_rank_start(&l, "evil", "hostile", 0, 2, N), 0);
  assert_int_equal(la_test_link_rank_start(&l, "evil", "hostile", 1, 2, N), 0);
  double *x = malloc(N * sizeof *x);
  la_compact_result_t r;
  cycle_values(x, 1, 0.02, 100);
  assert_int_equal(la_compact(x, N, NULL, &r), 0);
  assert_int_equal(la_test_link_trace(&l, "hostile", 0, 1, &r, NULL, 0), 0);
  assert_int_equal(send_ref(&l, 0, 2, 1, &r), 0);  /* fine */
  assert_int_equal(send_ref(&l, 0, 3, 99, &r), 0); /* no such cycle */
  assert_int_equal(send_ref(&l, 1, 4, 1, &r), 0);  /* another rank's */
  assert_int_equal(send_ref(&l, 0, 5, 2, &r), 0);  /* a reference */
  assert_int_equal(send_ref(&l, 0, 6, 6, &r), 0);  /* itself */
  { /* a robust reference whose exceptions lie outside the trace */
    La__SeriesStats st = LA__SERIES_STATS__INIT, rst = LA__SERIES_STATS__INIT;
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    la_test_history_trace(&t, &st, NULL, &r, "hostile", 0, 7, N, ++l.seq, 0);
    la_trace_msg_robust(&t, &rst, &r);
    t.has_robust_ref = 1;
    t.robust_ref = 1;
    uint64_t f = N - 1, c = 2;
    double v[2] = {1, 2};
    La__HistoryExceptions xc;
    la__history_exceptions__init(&xc);
    xc.n_first = xc.n_count = 1;
    xc.first = &f;
    xc.count = &c;
    xc.n_values = 2;
    xc.values = v;
    t.robust_exceptions = &xc;
    assert_int_equal(la_secure_send_msg(l.fd, &l.sec,
                                        LA__MSG_TYPE__MSG_COMPACT_TRACE,
                                        &t.base, 5000),
                     0);
  }
  if (la_test_link_wait_acked(&l, 10000, why, sizeof why) != 0)
    fail_msg("not acked: %s", why);
  la_test_link_close(&l);
  if (la_td_wait_log(ts.ga, "itself stored as a reference", 5000) != 0) {
    char *log = la_td_log(ts.ga);
    fail_msg("no refusal of a reference to a reference; log:\n%s", log);
  }
  assert_int_equal(
      la_td_wait_log(ts.ga, "that rank has no stored trace of that cycle",
                     5000),
      0);
  assert_int_equal(la_td_wait_log(ts.ga, "refers to itself", 5000), 0);
  assert_int_equal(la_td_wait_log(ts.ga, "outside the trace", 5000), 0);
  assert_int_equal(la_td_wait_log(ts.ga, "cycle 4 from evil refused", 5000), 0);
  /* nothing of the refused cycles is stored; the good reference is */
  char q[200];
  snprintf(q, sizeof q,
           "SELECT count(*) FROM traces WHERE app_id = "
           "'hostile'");
  assert_int_equal(q1(ts.db, q), 2);
  assert_int_equal(q1(ts.db, "SELECT count(*) FROM history"), 1);
  /* and the GlobalAgent serves on */
  assert_int_equal(la_td_alive(ts.ga), 1);
  la_compact_result_free(&r);
  free(x);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(g_tmp, sizeof g_tmp, "%s/test_history.XXXXXX", t ? t : "/tmp");
  if (!mkdtemp(g_tmp)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_match_noisy_not_moved),
      cmocka_unit_test(test_learning_backs_off),
      cmocka_unit_test(test_learn_recon_as_decoded),
      cmocka_unit_test(test_bounds_and_budget),
      cmocka_unit_test(test_store_references),
      cmocka_unit_test(test_robust_references),
      cmocka_unit_test(test_robust_exceptions),
      cmocka_unit_test(test_robust_reference_shares),
      cmocka_unit_test_teardown(test_hostile_references, ts_teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", g_tmp, g_tmp);
  if (system(cmd) != 0) rc = 1;
  return rc;
}
