/* SPDX-License-Identifier: BSD-3-Clause */
/* test_history_e2e.c: bounded history (docs/history.md) checked end to end
 * against the true values, on SQLite and on PostgreSQL.
 *
 * A real run: tests/apps/history_app (2 ranks under mpiexec, 28 profiled
 * cycles of designed costs in phases: exact repeats, 2% jitter, a moving
 * hot spot, 8% jitter, 2% jitter again) through a real LocalAgent into a
 * real GlobalAgent with history.full_cycles=2, LA_DUMP_RAW on. Every cycle
 * of every rank is then read back as a user reads it (libla_client from
 * the GlobalAgent's feed, and `lactl export --db ... --format csv`) and
 * compared with libla's dump:
 *   (a) the store: every reference that left its rank's window of
 *       full_cycles is stored as a reference (empty segments and robust
 *       segments, its history row no longer in_full), every other cycle in
 *       full; the run made such references at all;
 *   (b) every element within the mode's bound: for a demoted cycle the
 *       bound of a reference (polyline: on every record of the served
 *       encoding, or blocks of 256 when the records are more than n/8,
 *       RMSE <= cv |mean|; maxerr |error| <= eps (eps |x|); lossless bit
 *       for bit), for a cycle served in full the compaction's own bound;
 *   (c) the totals (count, sum, min, max) equal to the dump's exactly;
 *   and lactl's CSV equal to libla_client's values bit for bit.
 * Negative control: a representative's segments replaced by another
 * cycle's and a demoted cycle's sum changed by one, in the store; the same
 * check, run again, must find both.
 *
 * The PostgreSQL tests start their own server (la_test_pg) and skip only
 * when its binaries are absent; all tests skip when mpiexec, the daemons
 * or the app are not built.
 */
#include <limits.h>
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

#include "la_client.h"
#include "la_client_internal.h"
#include "la_compact.h"
#include "la_test_agent.h"
#include "la_test_daemon.h"
#include "la_test_pg.h"
#include "la_test_sql.h"
#include "la_test_stack.h"

#define NP 2
#define CYCLES 28 /* history_app's steps */
#define FULL_CYCLES 2
#define BLOCK 256 /* docs/history.md: the blocks when records are many */

static char app_path[PATH_MAX], lactl[PATH_MAX];

/* One backend's daemons and store. */
typedef struct {
  int pg;             /* 1: PostgreSQL (url), else SQLite (ts.db) */
  la_test_stack_t ts; /* the daemons */
  la_test_pg_t *server;
  char url[600];
  char db[700]; /* what lactl --db and the SQL helpers get */
} backend_t;

static backend_t *cur; /* the backend of the running test */

/* The first column of the first row of a query on the current store as an
 * integer (-1: error, no row or NULL). */
static long long sq(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long long sq(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  long long v = cur->pg ? la_test_pg_vvalue(cur->url, fmt, ap)
                        : la_test_sql_vll(cur->db, fmt, ap);
  va_end(ap);
  return v;
}

/* Runs a statement that changes the store (the negative control). */
static void sx(const char *sql) {
  if (cur->pg) {
    char q[1100];
    snprintf(q, sizeof q, "%s RETURNING 1", sql);
    assert_int_equal(la_test_pg_value(cur->url, q), 1);
    return;
  }
  sqlite3 *d = NULL;
  assert_int_equal(sqlite3_open(cur->db, &d), SQLITE_OK);
  sqlite3_busy_timeout(d, 10000);
  char *err = NULL;
  if (sqlite3_exec(d, sql, NULL, NULL, &err) != SQLITE_OK)
    fail_msg("%s: %s", sql, err);
  assert_int_equal(sqlite3_changes(d), 1);
  sqlite3_close(d);
}

/* ------------------------------------------------------------ the checks */

/* What one pass over a run found. */
typedef struct {
  long bound_fail, total_fail, store_fail, csv_fail;
  long bound_fail_demoted; /* of bound_fail: demoted cycles */
  long demoted, refs, full;
  double worst_ref;  /* the largest error / bound over demoted cycles */
  double worst_full; /* the same over cycles served in full */
  char first[600];   /* the first failure */
} verdict_t;

static void note(verdict_t *v, long *counter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(verdict_t *v, long *counter, const char *fmt, ...) {
  if (!v->first[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->first, sizeof v->first, fmt, ap);
    va_end(ap);
  }
  (*counter)++;
}

/* Polyline on the records [b, e): the largest RMSE / (cv |mean|) of the
 * error over the values, all points counted (a reference's bound). */
static double poly_ratio(const double *x, const double *y, uint64_t b,
                         uint64_t e, double cv) {
  long double sx = 0, se = 0;
  for (uint64_t i = b; i < e; i++) {
    long double d = (long double)y[i] - x[i];
    sx += x[i];
    se += d * d;
  }
  long double k = (long double)(e - b);
  long double rmse = sqrtl(se / k), lim = cv * fabsl(sx / k);
  if (rmse == 0) return 0;
  return lim > 0 ? (double)(rmse / lim) : INFINITY;
}

/* The largest error / bound of the served values y against the true x.
 * ref: y is a demoted cycle's (the representative's encoding t), checked
 * with a reference's bound; else with the compaction's own (polyline:
 * each line's CV of the error without its verbatim points, those exact). */
static double worst_ratio(const la_compact_params_t *p, const la_trace_t *t,
                          const double *x, const double *y, uint64_t n,
                          int ref) {
  double worst = 0;
  int mode = la_compact_effective_mode(p);
  if (mode == LA_COMPACT_LOSSLESS) {
    for (uint64_t i = 0; i < n; i++)
      if (memcmp(&x[i], &y[i], sizeof x[i]) != 0) return INFINITY;
    return 0;
  }
  if (mode == LA_COMPACT_MAXERR) {
    for (uint64_t i = 0; i < n; i++) {
      double bound = p->relative ? p->epsilon * fabs(x[i]) : p->epsilon;
      double d = fabs(y[i] - x[i]);
      double r = d == 0 ? 0 : bound > 0 ? d / bound : INFINITY;
      if (!(r <= worst)) worst = r;
    }
    return worst;
  }
  size_t k = la_trace_segment_count(t);
  if (ref && k > n / 8) {
    for (uint64_t b = 0; b < n; b += BLOCK) {
      double r = poly_ratio(x, y, b, b + BLOCK < n ? b + BLOCK : n, p->cv);
      if (!(r <= worst)) worst = r;
    }
    return worst;
  }
  uint64_t covered = 0;
  for (size_t s = 0; s < k; s++) {
    la_trace_segment_t g;
    if (la_trace_segment(t, s, &g) != 0 || g.first != covered) return INFINITY;
    covered += g.count;
    double r;
    if (ref) {
      r = poly_ratio(x, y, g.first, g.first + g.count, p->cv);
    } else {
      long double sse = 0, sum = 0;
      size_t m = 0;
      r = 0;
      for (uint64_t j = g.first; j < g.first + g.count; j++) {
        if (g.kind == LA_SEG_VERBATIM || la_trace_is_verbatim(t, j)) {
          if (memcmp(&x[j], &y[j], sizeof x[j]) != 0) r = INFINITY;
          continue;
        }
        long double d = (long double)y[j] - x[j];
        sse += d * d;
        sum += x[j];
        m++;
      }
      if (m && sse > 0 && r == 0)
        r = sum != 0 ? (double)sqrtl(sse * m / (sum * sum)) / p->cv : INFINITY;
    }
    if (!(r <= worst)) worst = r;
  }
  return covered == n ? worst : INFINITY;
}

static double *read_raw(const char *app_id, uint32_t r, uint64_t c,
                        const char *dump, uint64_t n) {
  char path[900];
  snprintf(path, sizeof path, "%s/%s.r%u.c%llu.f64", dump, app_id, r,
           (unsigned long long)c);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  double *x = malloc((n + 1) * sizeof *x);
  size_t got = x ? fread(x, sizeof *x, n + 1, f) : 0;
  fclose(f);
  if (got != n) {
    free(x);
    return NULL;
  }
  return x;
}

/* The exact statistics of x. */
static void raw_stats(const double *x, uint64_t n, double *sum, double *mn,
                      double *mx) {
  *sum = la_compact_sum(x, (size_t)n);
  *mn = INFINITY;
  *mx = -INFINITY;
  for (uint64_t i = 0; i < n; i++) {
    if (x[i] < *mn) *mn = x[i];
    if (x[i] > *mx) *mx = x[i];
  }
}

/* (a): how rank r's cycle c is stored. 1: a demoted reference, 0: in full
 * (a reference still in its window or not a reference); failures noted. */
static int check_stored(verdict_t *v, const char *app, uint32_t r, uint64_t c) {
  const char *key = "app_id = '%s' AND rank = %u AND cycle_tag = %llu";
  char k[300];
  snprintf(k, sizeof k, key, app, r, (unsigned long long)c);
  long long seg = sq("SELECT length(segments) FROM traces WHERE %s", k);
  long long has_ref = sq("SELECT count(*) FROM history WHERE %s", k);
  long long in_full = sq("SELECT in_full FROM history WHERE %s", k);
  long long seq = sq("SELECT rank_seq FROM traces WHERE %s", k);
  long long top =
      sq("SELECT max(rank_seq) FROM traces WHERE app_id = '%s'"
         " AND rank = %u",
         app, r);
  long long rob =
      sq("SELECT count(*) FROM robust WHERE %s"
         " AND length(segments) > 0",
         k);
  int due = has_ref == 1 && seq >= 0 && seq + FULL_CYCLES <= top;
  if (has_ref == 1) v->refs++;
  if (due) {
    if (seg != 0 || in_full != 0 || rob != 0)
      note(v, &v->store_fail,
           "rank %u cycle %llu: a reference due for demotion (rank_seq %lld"
           " of %lld) is stored with %lld bytes of segments, in_full %lld, "
           "%lld robust rows with segments",
           r, (unsigned long long)c, seq, top, seg, in_full, rob);
    else
      v->demoted++;
    return 1;
  }
  if (seg <= 0 || (has_ref == 1 && in_full != 1))
    note(v, &v->store_fail,
         "rank %u cycle %llu: not due for demotion but stored with %lld "
         "bytes of segments (reference: %lld, in_full %lld)",
         r, (unsigned long long)c, seg, has_ref, in_full);
  else
    v->full++;
  return 0;
}

/* lactl export of every cycle as CSV (measured values) into a table
 * vals[cycle][rank][element]; 0 or -1. */
static int lactl_csv(const char *app, uint64_t n, double *vals) {
  char range[32], out_path[800];
  snprintf(range, sizeof range, "0:%d", CYCLES - 1);
  la_td_path(cur->ts.ga, "export.csv", out_path, sizeof out_path);
  const char *argv[] = {lactl, "export",    app,        range,  "--format",
                        "csv", "--weights", "measured", "--db", cur->db,
                        "-o",  out_path,    NULL};
  char out[4096];
  int rc = la_td_run(argv, NULL, 120000, out, sizeof out);
  if (rc != 0) {
    print_message("lactl export exited %d: %s\n", rc, out);
    return -1;
  }
  FILE *f = fopen(out_path, "r");
  if (!f) return -1;
  char line[512];
  long rows = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long c, e, g;
    unsigned r;
    char val[64];
    if (sscanf(line, "%llu,%u,%llu,%llu,%63[^,]", &c, &r, &e, &g, val) != 5)
      continue; /* the comment and the header */
    if (c >= CYCLES || r >= NP || e >= n) {
      fclose(f);
      return -1;
    }
    vals[(c * NP + r) * n + e] = strtod(val, NULL);
    rows++;
  }
  fclose(f);
  return rows == (long)(CYCLES * NP * n) ? 0 : -1;
}

/* One pass over every cycle of app: (a), (b), (c) and lactl's CSV. */
static void check_run(const char *app, const char *spec, const char *dump,
                      uint64_t n, verdict_t *v) {
  memset(v, 0, sizeof *v);
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse(spec, &p, NULL, 0), 0);
  double *csv = malloc((size_t)CYCLES * NP * n * sizeof *csv);
  assert_non_null(csv);
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(cur->ts.feed_addr, 5000, &c), 0);
  la_client_set_weights(c, LA_WEIGHTS_MEASURED);
  /* every set complete (every trace stored, the demotions done) before
   * lactl reads the store */
  for (uint64_t cyc = 0; cyc < CYCLES; cyc++) {
    la_traceset_t *ts = la_ta_complete_set(c, app, cyc, 20000);
    if (!ts)
      fail_msg("%s cycle %llu: no complete Trace-Set (%s)", app,
               (unsigned long long)cyc, la_client_error(c));
    la_traceset_free(ts);
  }
  int have_csv = lactl_csv(app, n, csv) == 0;
  if (!have_csv) note(v, &v->csv_fail, "lactl export --db failed");
  double *y = malloc(n * sizeof *y);
  for (uint64_t cyc = 0; cyc < CYCLES; cyc++) {
    la_traceset_t *ts = la_ta_complete_set(c, app, cyc, 20000);
    if (!ts)
      fail_msg("%s cycle %llu: no complete Trace-Set (%s)", app,
               (unsigned long long)cyc, la_client_error(c));
    for (uint32_t r = 0; r < NP; r++) {
      int demoted = check_stored(v, app, r, cyc);
      double *x = read_raw(app, r, cyc, dump, n);
      if (!x)
        fail_msg("%s rank %u cycle %llu: no raw dump of %llu values", app, r,
                 (unsigned long long)cyc, (unsigned long long)n);
      const la_trace_t *t = la__traceset_trace(ts, r);
      assert_non_null(t);
      assert_int_equal(la_traceset_rank_weights(ts, r, y), 0);
      double w = worst_ratio(&p, t, x, y, n, demoted);
      double *worst = demoted ? &v->worst_ref : &v->worst_full;
      if (!(w <= *worst)) *worst = w;
      if (!(w <= 1 + 1e-9))
        note(v, &v->bound_fail,
             "rank %u cycle %llu (%s): error %.4g times the bound", r,
             (unsigned long long)cyc, demoted ? "demoted" : "in full", w);
      if (!(w <= 1 + 1e-9) && demoted) v->bound_fail_demoted++;
      double sum, mn, mx, ssum, smn, smx;
      raw_stats(x, n, &sum, &mn, &mx);
      assert_int_equal(la_traceset_rank_stats(ts, r, &ssum, &smn, &smx), 0);
      long long cnt =
          sq("SELECT stat_count FROM traces WHERE app_id = '%s'"
             " AND rank = %u AND cycle_tag = %llu",
             app, r, (unsigned long long)cyc);
      if (ssum != sum || smn != mn || smx != mx || cnt != (long long)n ||
          la_traceset_rank_elements(ts, r) != n)
        note(v, &v->total_fail,
             "rank %u cycle %llu: totals (%lld, %.17g, %.17g, %.17g) served,"
             " (%llu, %.17g, %.17g, %.17g) true",
             r, (unsigned long long)cyc, cnt, ssum, smn, smx,
             (unsigned long long)n, sum, mn, mx);
      if (have_csv && memcmp(y, csv + (cyc * NP + r) * n, n * sizeof *y) != 0)
        note(v, &v->csv_fail,
             "rank %u cycle %llu: lactl export's values differ from "
             "libla_client's",
             r, (unsigned long long)cyc);
      free(x);
    }
    la_traceset_free(ts);
  }
  la_client_close(c);
  free(y);
  free(csv);
}

/* ------------------------------------------------------------- the runs */

static int backend_up(backend_t *b) {
  if (la_ts_init(&b->ts) != 0) return -1;
  char url_arg[700];
  const char *ga_pg[] = {"--history.full_cycles=2", url_arg, NULL};
  const char *ga_lite[] = {"--history.full_cycles=2", NULL};
  if (b->pg) snprintf(url_arg, sizeof url_arg, "--store.url=%s", b->url);
  if (la_ts_start_global(&b->ts, b->pg ? ga_pg : ga_lite) != 0) return -1;
  if (la_ts_start_local(&b->ts, NULL) != 0) return -1;
  snprintf(b->db, sizeof b->db, "%s", b->pg ? b->url : b->ts.db);
  return 0;
}

/* Runs history_app as app with the compaction spec and checks it; with
 * tamper, then corrupts the store and checks that the check fails. */
static void run_mode(backend_t *b, const char *spec, const char *app,
                     int tamper) {
  cur = b;
  const uint64_t n = 4096;
  char dump[800], mk[900], e_agent[128], e_spec[160], e_dump[840], e_id[160];
  la_td_path(b->ts.ga, app, dump, sizeof dump);
  snprintf(mk, sizeof mk, "mkdir -p %s", dump);
  assert_int_equal(system(mk), 0);
  snprintf(e_agent, sizeof e_agent, "LA_AGENT=%s", la_td_addr(b->ts.la));
  snprintf(e_spec, sizeof e_spec, "LA_COMPACT=%s", spec);
  snprintf(e_dump, sizeof e_dump, "LA_DUMP_RAW=%s", dump);
  snprintf(e_id, sizeof e_id, "LA_APP_ID=%s", app);
  const char *argv[] = {"mpiexec", "-n", "2", app_path, NULL};
  const char *env[] = {e_agent, e_spec, e_dump, e_id, NULL};
  char out[8192];
  int rc = la_td_run(argv, env, 120000, out, sizeof out);
  if (rc != 0 || !strstr(out, "registered on 2 of 2 ranks"))
    fail_msg("history_app exited %d:\n%s", rc, out);
  verdict_t v;
  check_run(app, spec, dump, n, &v);
  long long bytes =
      sq("SELECT sum(length(segments)) FROM traces WHERE "
         "app_id = '%s'",
         app);
  long long rbytes =
      sq("SELECT sum(length(segments)) FROM robust WHERE "
         "app_id = '%s'",
         app);
  long long full_max =
      sq("SELECT max(length(segments)) FROM traces WHERE "
         "app_id = '%s'",
         app);
  printf(
      "%s %-28s %ld rank-cycles: %ld references, %ld demoted, %ld in "
      "full; worst error/bound demoted %.3g, in full %.3g; segments %lld "
      "B (+%lld B robust), largest trace %lld B\n",
      b->pg ? "pg    " : "sqlite", spec, (long)CYCLES * NP, v.refs, v.demoted,
      v.full, v.worst_ref, v.worst_full, bytes, rbytes < 0 ? 0 : rbytes,
      full_max);
  if (v.store_fail || v.bound_fail || v.total_fail || v.csv_fail)
    fail_msg(
        "%s: %ld store, %ld bound, %ld totals, %ld CSV failures; "
        "first: %s",
        spec, v.store_fail, v.bound_fail, v.total_fail, v.csv_fail, v.first);
  /* the run must have exercised what it checks */
  assert_true(v.demoted >= 4);
  if (!tamper) return;

  /* Negative control: a demoted cycle's representative gets the segments
   * of a cycle of the moving hot spot; another demoted cycle's sum is one
   * more. Both must be found. */
  char q[1024];
  long long dem =
      sq("SELECT h.cycle_tag FROM history h WHERE h.app_id = "
         "'%s' AND h.rank = 0 AND h.in_full = 0 AND h.ref_cycle"
         " < 11 ORDER BY h.cycle_tag LIMIT 1",
         app);
  long long rep =
      sq("SELECT ref_cycle FROM history WHERE app_id = '%s' AND"
         " rank = 0 AND cycle_tag = %lld",
         app, dem);
  long long hot =
      sq("SELECT t.cycle_tag FROM traces t WHERE t.app_id = '%s'"
         " AND t.rank = 0 AND t.cycle_tag BETWEEN 12 AND 16 AND"
         " NOT EXISTS (SELECT 1 FROM history h WHERE h.app_id ="
         " t.app_id AND h.rank = 0 AND h.cycle_tag = t.cycle_tag)"
         " ORDER BY t.cycle_tag LIMIT 1",
         app);
  long long dem2 =
      sq("SELECT cycle_tag FROM history WHERE app_id = '%s' AND"
         " rank = 1 AND in_full = 0 ORDER BY cycle_tag LIMIT 1",
         app);
  if (dem < 0 || rep < 0 || hot < 0 || dem2 < 0)
    fail_msg(
        "negative control: no demoted cycle (%lld, rep %lld), hot spot "
        "cycle in full (%lld) or demoted cycle of rank 1 (%lld)",
        dem, rep, hot, dem2);
  snprintf(q, sizeof q,
           "UPDATE traces SET segments = (SELECT segments FROM traces WHERE "
           "app_id = '%s' AND rank = 0 AND cycle_tag = %lld) WHERE app_id = "
           "'%s' AND rank = 0 AND cycle_tag = %lld",
           app, hot, app, rep);
  sx(q);
  snprintf(q, sizeof q,
           "UPDATE traces SET stat_sum = stat_sum + 1 WHERE app_id = '%s' "
           "AND rank = 1 AND cycle_tag = %lld",
           app, dem2);
  sx(q);
  verdict_t bad;
  check_run(app, spec, dump, n, &bad);
  printf(
      "negative control: representative %lld of cycle %lld replaced by "
      "cycle %lld: %ld bound failures, %ld of demoted cycles (first: %s);"
      " sum of rank 1 cycle %lld changed: %ld totals failures\n",
      rep, dem, hot, bad.bound_fail, bad.bound_fail_demoted, bad.first, dem2,
      bad.total_fail);
  assert_true(bad.bound_fail_demoted >= 1);
  assert_int_equal(bad.total_fail, 1);
}

static backend_t lite = {.pg = 0}, pgb = {.pg = 1};
static int lite_up, pg_up;

static int group_setup(void **state) {
  (void)state;
  char self[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k <= 0) return -1;
  self[k] = 0;
  /* build/tests/history_app; from a sanitized tree (build/asan/tests)
   * through its link to the normal build's examples, as the examples */
  snprintf(app_path, sizeof app_path, "%.*s/../examples/../tests/history_app",
           (int)(strrchr(self, '/') - self), self);
  if (system("command -v mpiexec >/dev/null 2>&1") != 0 ||
      access(app_path, X_OK) != 0 ||
      la_td_find_bin("lactl", lactl, sizeof lactl) != 0)
    return 0; /* the tests skip */
  lite_up = backend_up(&lite) == 0;
  return lite_up ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  if (lite_up) la_ts_free(&lite.ts);
  if (pg_up) la_ts_free(&pgb.ts);
  la_test_pg_stop(pgb.server);
  return 0;
}

static void need_lite(void) {
  if (!lite_up) {
    printf("skip: mpiexec, lactl, the daemons or history_app missing\n");
    skip();
  }
}

/* The PostgreSQL backend, started on first use. */
static void need_pg(void) {
  need_lite();
  if (pg_up) return;
  char why[2048];
  int r = la_test_pg_start(0, &pgb.server, why, sizeof why);
  if (r == 1) {
    printf("skip: no PostgreSQL server binaries\n");
    skip();
  }
  if (r != 0) fail_msg("PostgreSQL: %s", why);
  if (la_test_pg_createdb(pgb.server, "la_history", pgb.url, sizeof pgb.url,
                          why, sizeof why) != 0)
    fail_msg("createdb: %s", why);
  if (backend_up(&pgb) != 0) fail_msg("daemons on PostgreSQL did not start");
  pg_up = 1;
}

/* One test: a compaction mode on a backend. */
typedef struct {
  int pg;
  const char *spec, *app;
  int tamper; /* with the negative control */
} case_t;

static const case_t cases[] = {
    {0, "polyline:cv=0.1", "he-poly", 1},
    {0, "maxerr:eps=0.1,relative", "he-max", 1},
    {0, "lossless", "he-lossless", 0},
    {1, "polyline:cv=0.1", "he-poly", 1},
    {1, "maxerr:eps=0.1,relative", "he-max", 1},
    {1, "lossless", "he-lossless", 0},
};

static void test_mode(void **state) {
  const case_t *k = *state;
  if (k->pg)
    need_pg();
  else
    need_lite();
  run_mode(k->pg ? &pgb : &lite, k->spec, k->app, k->tamper);
}

int main(void) {
  enum { NCASES = sizeof cases / sizeof cases[0] };
  struct CMUnitTest tests[NCASES];
  static char names[NCASES][80];
  for (int i = 0; i < NCASES; i++) {
    snprintf(names[i], sizeof names[i], "%s %s",
             cases[i].pg ? "postgresql" : "sqlite", cases[i].spec);
    tests[i] =
        (struct CMUnitTest){names[i], test_mode, NULL, NULL, (void *)&cases[i]};
  }
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
