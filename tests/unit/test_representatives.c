/* SPDX-License-Identifier: BSD-3-Clause */
/* test_representatives.c: behaviour classes of a stored Trace-Set (`lactl
 * show --clusters`) and a set stored by representatives
 * (store.representatives), through the real GlobalAgent, its store and
 * lactl (docs/clusters.md).
 *
 * The ranks' traces come from a LocalAgent played by hand
 * (la_test_link.h, the real handshake and link) because their classes
 * must be known: NP ranks of the synthetic set of tests/support/
 * la_test_classes.h (four class profiles times a per-rank scale, 2% noise,
 * two outlier ranks with hot spots of their own), compacted with the
 * default polyline. Asserted on what a user sees:
 *   - `lactl show APP 1 --clusters` (from the feed and from the store
 *     file) names 4 classes and the 2 outliers; its JSON lists, per class,
 *     exactly the ranks of one known class, the representative among them;
 *     nothing is reconstructed while the setting is off;
 *   - `lactl serve`'s /api/clusters of that set lists the same classes
 *     (each class's members as rank ranges) and outliers as `lactl show
 *     --clusters --json` from the store, an unknown application a 404
 *     JSON error; its page's "Behaviour classes" panel shows them
 *     (headless Chromium where installed; screenshot
 *     build/test-output/test_representatives/serve-classes.png);
 *   - with store.representatives = yes the set keeps only the
 *     representatives' and outliers' segments (rep_members rows for the
 *     34 other ranks), and every read gives each rank's exact total (the
 *     raw sum, bit for bit), the members flagged as reconstructed from a
 *     representative of their own class, their decoded values summing to
 *     their total within 1e-9 (each its own scale of its representative's
 *     values, decoded once per read), the representatives and outliers not
 *     flagged; `lactl show --clusters` finds the same classes and lists
 *     the reconstructed ranks; `lactl show` prints the exact totals;
 *   - every rank also sends robust weights (its measured shape times
 *     0.75; rank 7's reversed): the 33 members whose robust shape is
 *     their representative's keep a rep_robust row instead of robust
 *     segments, rank 7 keeps its own; every robust total reads back
 *     exact, every rebuilt robust series sums to it within 1e-9;
 *   - a next cycle whose traces name the first as their history reference
 *     (docs/history.md) is stored whole, nothing refused, although the
 *     members' first-cycle segments are gone;
 *   - the rep_members rows are exactly those of the grouping of the sent
 *     encodings (class, representative, scale bit for bit), every
 *     signature taken where ingest checked the trace (the GlobalAgent's
 *     log); a GlobalAgent restarted after half the ranks, before the set
 *     closes, takes the others' at ingest and the first half's from the
 *     stored bytes, and stores the same rows;
 *   - the Python package (python/la_weights) reads the set as the
 *     GlobalAgent serves it: every rank of cycle 1 (rep_members,
 *     rep_robust) and cycle 2 (members packed into rep_classes), values
 *     bit for bit, exact totals; a damaged rep_classes BLOB an error
 *     naming it (tests/python/check_pyreps.py);
 *   - a damaged rep_members row makes `lactl show` fail naming it (exit 1);
 *   - `lactl show --tol` out of range and `--tol` without `--clusters` are
 *     usage errors (exit 2);
 *   - the same with a PostgreSQL store (a throw-away server,
 *     la_test_pg.h; skipped when the server binaries are not installed).
 * Skips when the daemons or lactl are not built. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "la_auth.h"
#include "la_client.h"
#include "la_clusters.h"
#include "la_compact.h"
#include "la_test_classes.h"
#include "la_test_daemon.h"
#include "la_test_link.h"
#include "la_test_pg.h"
#include "la_test_series.h"
#include "la_trace_msg.h"
#include "la_test_uplink.h"

#define WAIT_MS 30000
#define NP 40
#define NE 1024
#define NOUT 2 /* ranks 5 and 25 */
#define APP "clusapp"
#define ODD_ROBUST 7 /* a member whose robust weights have another shape */
#define OUT_LEN (1 << 20)
#define PY "/usr/bin/python3" /* Debian's, with numpy */

static struct {
  la_tu_ga_t g;
  la_test_link_t link;
  la_compact_result_t r[NP], rob[NP];
  double raw[NP], rraw[NP];
  char lactl[600], db[600];
  char *out;
} T;

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  T.link.fd = -1;
  signal(SIGPIPE, SIG_IGN);
  T.out = malloc(OUT_LEN);
  return T.out && la_auth_init() == 0 ? 0 : -1;
}

static int teardown(void **state) {
  if (T.link.fd >= 0) la_test_link_close(&T.link);
  for (int i = 0; i < NP; i++) {
    la_compact_result_free(&T.r[i]);
    la_compact_result_free(&T.rob[i]);
  }
  la_td_free(T.g.d);
  free(T.out);
  memset(&T, 0, sizeof T);
  return 0;
}

#define CHECK(cond, ...) \
  LA_TD_CHECK(la_td_print_log_tail(T.g.d, 3000), cond, __VA_ARGS__)

/* Runs lactl with args (NULL-ended) into T.out; returns its exit status. */
static int lactl(const char *const *args) {
  const char *argv[16] = {T.lactl};
  int n = 1;
  for (int i = 0; args[i] && n < 15; i++) argv[n++] = args[i];
  argv[n] = NULL;
  return la_td_run(argv, NULL, WAIT_MS, T.out, OUT_LEN);
}

static int set_complete(void *arg) {
  (void)arg;
  const char *a[] = {"show", APP, "1", "--global", T.g.feed_addr, "--json",
                     NULL};
  return lactl(a) == 0 && strstr(T.out, "\"complete\": true") != NULL;
}

/* The GlobalAgent's options: --log.level=debug (reps.c's line), then
 * extra (NULL-ended, may be NULL). */
static void ga_args(const char *const *extra, const char **args) {
  int n = 0;
  args[n++] = "--log.level=debug";
  for (int i = 0; extra && extra[i] && n < 7; i++) args[n++] = extra[i];
  args[n] = NULL;
}

static void link_open(void) {
  int32_t status = -1;
  char why[300] = "";
  int rc = la_test_link_open(&T.link, T.g.agents_port, T.g.key, "clusnode",
                             WAIT_MS, &status, why, sizeof why);
  CHECK(rc == 0 && status == 0, "handshake: %s", why);
}

/* Sends the traces of cycle 1 of ranks [lo, hi) and waits for their acks. */
static void send_traces(uint32_t lo, uint32_t hi) {
  for (uint32_t r = lo; r < hi; r++) {
    La__SeriesStats st = LA__SERIES_STATS__INIT, rst = LA__SERIES_STATS__INIT;
    La__CompactTrace ct = LA__COMPACT_TRACE__INIT;
    la_test_trace_id(&ct, 0, APP, r, 1, NE);
    la_trace_msg_fill(&ct, &st, NULL, &T.r[r]);
    ct.has_robust_segments = 1;
    ct.robust_segments.data = T.rob[r].bytes;
    ct.robust_segments.len = T.rob[r].len;
    rst.count = T.rob[r].stats.count;
    rst.sum = T.rob[r].stats.sum;
    rst.min = T.rob[r].stats.min;
    rst.max = T.rob[r].stats.max;
    ct.robust_stats = &rst;
    assert_int_equal(la_test_link_send_trace(&T.link, &ct), 0);
  }
  char why[300] = "";
  int rc = la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why);
  CHECK(rc == 0, "acks: %s", why);
}

/* Starts the GlobalAgent with extra options, sends the set of cycle 1 and
 * waits until it is stored complete; restart: stopped and started again
 * (same store) after the first half of the ranks, before the set closes. */
static void run_set_restart(const char *const *extra, int restart) {
  char p[512];
  if (la_td_find_bin("la-globalagent", p, sizeof p) != 0 ||
      la_td_find_bin("lactl", T.lactl, sizeof T.lactl) != 0) {
    print_message("skip: la-globalagent or lactl not built\n");
    skip();
  }
  const char *args[8];
  ga_args(extra, args);
  CHECK(la_tu_ga_start(&T.g, 0, 1, args, WAIT_MS) == 0,
        "la-globalagent did not start");
  la_td_path(T.g.d, "la.db", T.db, sizeof T.db);
  link_open();
  double *x = malloc(NE * sizeof *x);
  assert_non_null(x);
  for (uint32_t r = 0; r < NP; r++) {
    la_tc_series(r, NP, NOUT, NE, x);
    T.raw[r] = la_compact_sum(x, NE);
    assert_int_equal(la_compact(x, NE, NULL, &T.r[r]), 0);
    /* robust weights: the measured shape times 0.75 (ODD_ROBUST's
     * reversed: another shape) */
    for (int i = 0; i < NE / 2; i++)
      if (r == ODD_ROBUST) {
        double v = x[i];
        x[i] = x[NE - 1 - i];
        x[NE - 1 - i] = v;
      }
    for (int i = 0; i < NE; i++) x[i] *= 0.75;
    T.rraw[r] = la_compact_sum(x, NE);
    assert_int_equal(la_compact(x, NE, NULL, &T.rob[r]), 0);
    assert_int_equal(
        la_test_link_rank_start(&T.link, "clusnode", APP, r, NP, NE), 0);
  }
  free(x);
  uint32_t half = restart ? NP / 2 : NP;
  send_traces(0, half);
  if (restart) {
    la_test_link_close(&T.link);
    CHECK(la_tu_ga_restart(&T.g, 0, 1, args, WAIT_MS) == 0,
          "la-globalagent did not start again");
    link_open();
    send_traces(half, NP);
  }
  CHECK(la_td_wait_until(set_complete, NULL, WAIT_MS) == 0,
        "the set did not close complete: %s", T.out);
}

static void run_set(const char *const *extra) { run_set_restart(extra, 0); }

/* "[a, b, ...]" of the ranks of known class k. */
static void members_of(int k, char *buf, size_t len) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, len - o, "\"members\": [");
  int first = 1;
  for (uint32_t r = 0; r < NP; r++)
    if (la_tc_class(r, NP, NOUT) == k) {
      o += (size_t)snprintf(buf + o, len - o, "%s%u", first ? "" : ", ", r);
      first = 0;
    }
  snprintf(buf + o, len - o, "]");
}

/* lactl show --clusters (text and JSON) from src (--global ADDR or --db
 * FILE) finds the known classes; returns the representatives. */
static void check_clusters(const char *opt, const char *src, uint32_t *reps) {
  const char *a[] = {"show", APP, "1", opt, src, "--clusters", NULL};
  CHECK(lactl(a) == 0, "lactl show --clusters: %s", T.out);
  CHECK(strstr(T.out, "4 behaviour classes of 40 ranks present, 2 outliers"),
        "%s", T.out);
  CHECK(strstr(T.out, "outliers    5,25"), "%s", T.out);
  const char *j[] = {"show", APP, "1", opt, src, "--clusters", "--json",
                     NULL};
  CHECK(lactl(j) == 0, "lactl show --clusters --json: %s", T.out);
  CHECK(strstr(T.out, "\"outliers\": [5, 25]"), "%s", T.out);
  for (int k = 0; k < LA_TC_CLASSES; k++) {
    char want[512];
    members_of(k, want, sizeof want);
    char *m = strstr(T.out, want);
    CHECK(m != NULL, "no class of %s in %s", want, T.out);
    /* the representative, before the members on the class's line */
    char *cl = m;
    while (cl > T.out && strncmp(cl, "{\"class\"", 8)) cl--;
    char *rp = strstr(cl, "\"representative\": ");
    CHECK(rp && rp < m, "%s", T.out);
    reps[k] = (uint32_t)strtoul(rp + 18, NULL, 10);
    CHECK(la_tc_class(reps[k], NP, NOUT) == k, "representative %u of class %d",
          reps[k], k);
  }
}

/* lactl serve's classes of the set (/api/clusters, the page's panel in
 * headless Chromium where it is installed) are lactl show --clusters
 * --json's from the store, with the known outliers
 * (tests/python/serve_classes.py). */
static void check_serve_classes(void) {
  const char *chromium = "-";
  static const char *const cands[] = {"/usr/bin/chromium",
                                      "/usr/bin/chromium-browser"};
  for (size_t i = 0; i < sizeof cands / sizeof *cands; i++)
    if (access(cands[i], X_OK) == 0) {
      chromium = cands[i];
      break;
    }
  char outdir[600];
  const char *o = getenv("LA_TEST_OUTPUT");
  snprintf(outdir, sizeof outdir, "%s/test_representatives",
           o && *o ? o : "build/test-output");
  const char *py[] = {PY,         "tests/python/serve_classes.py",
                      T.lactl,    T.g.feed_addr,
                      APP,        "1",
                      "5,25",     chromium,
                      outdir,     NULL};
  CHECK(la_td_run(py, NULL, 240000, T.out, OUT_LEN) == 0 &&
            strstr(T.out, "serve_classes: OK"),
        "serve_classes.py: %s", T.out);
  print_message("%s", T.out);
}

static void test_show_clusters(void **state) {
  (void)state;
  run_set(NULL);
  uint32_t reps[LA_TC_CLASSES], reps2[LA_TC_CLASSES];
  check_clusters("--global", T.g.feed_addr, reps);
  CHECK(strstr(T.out, "\"reconstructed\": []"), "%s", T.out);
  check_serve_classes();
  check_clusters("--db", T.db, reps2);
  assert_memory_equal(reps, reps2, sizeof reps);
  /* bad --tol */
  const char *b1[] = {"show", APP, "1", "--db", T.db, "--clusters", "--tol",
                      "3", NULL};
  assert_int_equal(lactl(b1), 2);
  CHECK(strstr(T.out, "--tol '3' is not a number in 0..2"), "%s", T.out);
  const char *b2[] = {"show", APP, "1", "--db", T.db, "--tol", "0.1", NULL};
  assert_int_equal(lactl(b2), 2);
  CHECK(strstr(T.out, "--tol goes with --clusters"), "%s", T.out);
}

static char pg_url[600]; /* the PostgreSQL store of the test using one */

static long db_count(const char *sql) {
  if (*pg_url) return (long)la_test_pg_value(pg_url, sql);
  sqlite3 *q = NULL;
  sqlite3_stmt *st = NULL;
  long n = -1;
  if (sqlite3_open_v2(T.db, &q, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(q, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = (long)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(q);
  return n;
}

/* The store's rep_members rows are exactly those of the grouping of the
 * traces' encodings as sent (la_clusters_signature_bytes, what the store
 * takes from its stored bytes): the same classes, representatives and
 * scales, bit for bit, whether the GlobalAgent took a signature at ingest
 * or from the stored bytes. */
static void check_members_exact(void) {
  la_cluster_params_t p;
  la_cluster_params_default(&p);
  static double sig[NP * LA_CLUSTERS_MAX_BUCKETS];
  double dtot[NP];
  uint64_t cnt[NP];
  for (uint32_t r = 0; r < NP; r++)
    assert_true(la_clusters_signature_bytes(T.r[r].bytes, T.r[r].len, NE,
                                            p.buckets, sig + r * p.buckets,
                                            &dtot[r], &cnt[r], NULL,
                                            0) >= 0);
  la_clusters_t c;
  assert_int_equal(
      la_clusters_group(sig, dtot, cnt, T.raw, NP, &p, &c, NULL, 0), 0);
  static char q[16384];
  size_t o = (size_t)snprintf(q, sizeof q,
                              "SELECT count(*) FROM rep_members m JOIN"
                              " (VALUES ");
  int n = 0;
  for (size_t k = 0; k < c.n_classes; k++)
    for (uint32_t m = 0; m < c.classes[k].n; m++) {
      if (c.classes[k].members[m] == c.classes[k].rep) continue;
      o += (size_t)snprintf(q + o, sizeof q - o, "%s(%u, %zu, %u, %.17g)",
                            n++ ? ", " : "", c.classes[k].members[m], k,
                            c.classes[k].rep, c.classes[k].scale[m]);
    }
  snprintf(q + o, sizeof q - o,
           ") AS v ON m.rank = v.column1 AND m.class = v.column2"
           " AND m.rep_rank = v.column3 AND m.scale = v.column4"
           " WHERE m.cycle_tag = 1");
  la_clusters_free(&c);
  assert_int_equal(n, 34);
  CHECK(db_count(q) == 34, "rep_members rows differ from the grouping of "
                           "the stored bytes");
}

/* The set stored by representatives (extra: the store's options) read
 * back through the feed, libla_client and lactl (--db: src, NULL for
 * none). */
static void check_representatives(const char *const *extra, const char *db) {
  run_set(extra);
  uint32_t reps[LA_TC_CLASSES];
  check_clusters("--global", T.g.feed_addr, reps);
  /* 40 ranks - 2 outliers - 4 representatives */
  CHECK(db_count("SELECT count(*) FROM rep_members") == 34, "rep_members");
  check_members_exact();
  /* every signature was taken where ingest checked the trace */
  CHECK(la_td_log_has(T.g.d, "40 robust series (40 robust signatures "
                             "taken at ingest)"),
        "robust signatures not taken at ingest");
  CHECK(la_td_log_has(T.g.d, "40 ranks (40 signatures taken at ingest)"),
        "signatures not taken at ingest");
  CHECK(db_count("SELECT count(*) FROM traces WHERE length(segments) = 0") ==
            34,
        "emptied traces");
  /* robust weights: the members' but ODD_ROBUST's, whose shape differs */
  CHECK(db_count("SELECT count(*) FROM rep_robust") == 33, "rep_robust");
  CHECK(db_count("SELECT count(*) FROM robust WHERE length(segments) = 0") ==
            33,
        "emptied robust");
  CHECK(db_count("SELECT count(*) FROM rep_robust WHERE rank = 7") == 0,
        "odd robust kept");
  /* the reconstructed ranks are named */
  CHECK(strstr(T.out, "\"reconstructed\": [") != NULL, "%s", T.out);
  /* libla_client: exact totals, flags, representatives of the same class */
  la_client_t *c = NULL;
  la_traceset_t *t = NULL;
  assert_int_equal(la_client_connect(T.g.feed_addr, WAIT_MS, &c), 0);
  assert_int_equal(la_client_get(c, APP, 1, &t), 0);
  assert_int_equal(la_traceset_has_robust(t), 1);
  assert_int_equal(la_traceset_set_weights(t, LA_WEIGHTS_MEASURED), 0);
  int recon = 0;
  double *w = malloc(NE * sizeof *w);
  assert_non_null(w);
  for (uint32_t r = 0; r < NP; r++) {
    double sum;
    assert_int_equal(la_traceset_rank_stats(t, r, &sum, NULL, NULL), 0);
    assert_true(sum == T.raw[r]); /* exact */
    uint32_t rep = 0;
    double scale = 0;
    int f = la_traceset_rank_reconstructed(t, r, &rep, &scale);
    int k = la_tc_class(r, NP, NOUT);
    if (k < 0 || reps[k] == r) {
      assert_int_equal(f, 0);
      continue;
    }
    assert_int_equal(f, 1);
    recon++;
    assert_int_equal(rep, reps[k]);
    assert_true(scale > 0.2 && scale < 5);
    assert_int_equal(la_traceset_rank_weights(t, r, w), 0);
    double d = 0;
    for (int i = 0; i < NE; i++) d += w[i];
    assert_true(fabs(d - sum) <= 1e-9 * sum);
  }
  assert_int_equal(recon, 34);
  /* every robust total exact, every rebuilt robust series summing to it */
  assert_int_equal(la_traceset_set_weights(t, LA_WEIGHTS_ROBUST), 0);
  for (uint32_t r = 0; r < NP; r++) {
    double sum;
    assert_int_equal(la_traceset_rank_robust_stats(t, r, &sum, NULL, NULL),
                     0);
    assert_true(sum == T.rraw[r]); /* exact */
    assert_int_equal(la_traceset_rank_weights(t, r, w), 0);
    double d = 0;
    for (int i = 0; i < NE; i++) d += w[i];
    /* rebuilt: within rounding; kept whole: within its own compaction */
    int rebuilt = la_traceset_rank_reconstructed(t, r, NULL, NULL) == 1 &&
                  r != ODD_ROBUST;
    assert_true(fabs(d - sum) <= (rebuilt ? 1e-9 : 1e-3) * sum);
  }
  free(w);
  la_traceset_free(t);
  la_client_close(c);
  /* cycle 2, each rank naming cycle 1 as its history reference (what a
   * LocalAgent with history on sends): the members' cycle 1 has no
   * segments left, so they are kept in full, never refused */
  for (uint32_t r = 0; r < NP; r++) {
    La__SeriesStats st = LA__SERIES_STATS__INIT;
    La__FitError fe = LA__FIT_ERROR__INIT;
    La__CompactTrace ct = LA__COMPACT_TRACE__INIT;
    la_test_trace_id(&ct, 0, APP, r, 2, NE);
    la_trace_msg_fill(&ct, &st, &fe, &T.r[r]);
    ct.has_rank_seq = 1;
    ct.rank_seq = 2;
    ct.has_history_ref = 1;
    ct.history_ref = 1;
    assert_int_equal(la_test_link_send_trace(&T.link, &ct), 0);
  }
  char why[300] = "";
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0,
        "acks: %s", why);
  assert_int_equal(la_td_status_ll(T.g.d, "conflicts"), 0);
  /* every rank of cycle 2 stored: its own row, or (no robust weights)
   * packed into its class's rep_classes row once the set closed */
  CHECK(db_count("SELECT (SELECT count(*) FROM traces WHERE cycle_tag = 2)"
                 " + (SELECT coalesce(sum(n_members), 0) FROM rep_classes"
                 " WHERE cycle_tag = 2)") == NP,
        "cycle 2 stored");
  /* lactl show: the exact totals, from the store */
  const char *a[] = {"show", APP, "1", "--db", db, "--json", NULL};
  CHECK(lactl(a) == 0, "%s", T.out);
  for (uint32_t r = 0; r < NP; r += 7) {
    char want[96];
    snprintf(want, sizeof want, "\"rank\": %u, \"present\": true", r);
    char *p = strstr(T.out, want);
    CHECK(p != NULL, "%s", T.out);
    p = strstr(p, "\"total\": ");
    CHECK(p && strtod(p + 9, NULL) == T.raw[r], "rank %u total", r);
  }
}

/* The Python package (python/la_weights) reads the set stored by
 * representatives, cycle 1 (rep_members, rep_robust) and cycle 2 (members
 * packed into rep_classes), as the GlobalAgent serves it
 * (tests/python/check_pyreps.py): every rank, the values bit for bit, the
 * exact totals, a damaged rep_classes BLOB an error naming it. Skips the
 * Python part when python3 or libla_client.so is missing. */
static void check_python(void) {
  char src[600], lib[700], probe[800], work[700], totals[800], script[800];
  if (access(PY, X_OK) != 0 || la_td_find_src("python/pyproject.toml", src, sizeof src) != 0) {
    print_message("skip: %s or the source tree missing\n", PY);
    return;
  }
  /* libla_client.so of the normal build (the sanitized trees have none) */
  snprintf(lib, sizeof lib, "%s/build/lib", src);
  snprintf(probe, sizeof probe, "%s/libla_client.so", lib);
  if (access(probe, R_OK) != 0) {
    print_message("skip: %s not built\n", probe);
    return;
  }
  snprintf(work, sizeof work, "%s/py", la_td_dir(T.g.d));
  snprintf(totals, sizeof totals, "%s/py-totals", la_td_dir(T.g.d));
  FILE *f = fopen(totals, "w");
  assert_non_null(f);
  for (uint32_t r = 0; r < NP; r++)
    fprintf(f, "%u %a %a\n", r, T.raw[r], T.rraw[r]);
  assert_int_equal(fclose(f), 0);
  snprintf(script, sizeof script, "%s/tests/python/check_pyreps.py", src);
  char bindir[600];
  snprintf(bindir, sizeof bindir, "%.*s", (int)(strrchr(T.lactl, '/') - T.lactl),
           T.lactl);
  const char *argv[] = {PY,       script,  "--db",     T.db,
                        "--global", T.g.feed_addr, "--bin", bindir,
                        "--lib",  lib,     "--src",    src,
                        "--work", work,    "--app",    APP,
                        "--totals", totals, NULL};
  int rc = la_td_run(argv, NULL, 120000, T.out, OUT_LEN);
  printf("%s", T.out);
  CHECK(rc == 0 && strstr(T.out, "check_pyreps: all checks passed"),
        "check_pyreps.py exited %d", rc);
}

static void test_representatives(void **state) {
  (void)state;
  const char *extra[] = {"--store.representatives=yes", NULL};
  pg_url[0] = 0;
  check_representatives(extra, T.db);
  check_python();
  /* a damaged membership row: reading the set says so, never crashes */
  la_td_stop(T.g.d, WAIT_MS);
  sqlite3 *q = NULL;
  assert_int_equal(sqlite3_open(T.db, &q), SQLITE_OK);
  assert_int_equal(sqlite3_exec(q,
                                "UPDATE rep_members SET rep_rank = rank"
                                " WHERE rank = 1",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(q);
  const char *a[] = {"show", APP, "1", "--db", T.db, NULL};
  assert_int_equal(lactl(a), 1);
  CHECK(strstr(T.out, "rank 1: bad rep_members row"), "%s", T.out);
}

/* A GlobalAgent restarted before the set closes: the ranks it received
 * before have no signature in memory, it takes theirs from the stored
 * bytes, the others' at ingest; the set is grouped and stored exactly as
 * without the restart. */
static void test_restart_before_close(void **state) {
  (void)state;
  const char *extra[] = {"--store.representatives=yes", NULL};
  pg_url[0] = 0;
  run_set_restart(extra, 1);
  CHECK(la_td_log_has(T.g.d, "40 ranks (20 signatures taken at ingest)"),
        "not 20 signatures taken at ingest");
  CHECK(la_td_log_has(T.g.d, "40 robust series (20 robust signatures "
                             "taken at ingest)"),
        "not 20 robust signatures taken at ingest");
  CHECK(db_count("SELECT count(*) FROM rep_members") == 34, "rep_members");
  check_members_exact();
  CHECK(db_count("SELECT count(*) FROM traces WHERE length(segments) = 0") ==
            34,
        "emptied traces");
  CHECK(db_count("SELECT count(*) FROM rep_robust") == 33, "rep_robust");
}

/* The same on a PostgreSQL store (a throw-away server). */
static void test_representatives_pg(void **state) {
  (void)state;
  la_test_pg_t *pg = NULL;
  char why[600], url[700];
  int r = la_test_pg_start(0, &pg, why, sizeof why);
  if (r == 1) {
    print_message("skip: PostgreSQL server binaries not installed\n");
    skip();
  }
  assert_int_equal(r, 0);
  assert_int_equal(la_test_pg_createdb(pg, "la_reps", pg_url, sizeof pg_url,
                                       why, sizeof why),
                   0);
  snprintf(url, sizeof url, "--store.url=%s", pg_url);
  const char *extra[] = {"--store.representatives=yes", url, NULL};
  check_representatives(extra, pg_url);
  pg_url[0] = 0;
  la_test_pg_stop(pg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_show_clusters, setup, teardown),
      cmocka_unit_test_setup_teardown(test_representatives, setup, teardown),
      cmocka_unit_test_setup_teardown(test_restart_before_close, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_representatives_pg, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
