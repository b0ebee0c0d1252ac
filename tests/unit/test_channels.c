/* SPDX-License-Identifier: BSD-3-Clause */
/* test_channels.c: per-kernel channels (LA_channel), end to end.
 *
 * Real daemons on loopback (la_test_stack.h): forked application ranks
 * declare channels, probe each one with a custom probe whose values are
 * known exactly, and hand them to the real LocalAgent, which ships the sum
 * and each channel's series to the real GlobalAgent. Checked as a user
 * would see it:
 *   - LA_channel's errors (bad, duplicate, too many, after LA_register);
 *   - per channel, the decoded weights equal what was probed (lossless),
 *     the set's weights are their per-element sum, the exact totals add
 *     up; a probe into an undeclared channel is counted, not written;
 *   - rows and boxes in a channel (LA_startRowC, LA_startBoxC): each
 *     channel's series is what was probed into it; with one channel, row
 *     probes alone arrive spread over their cells;
 *   - an application without channels has no channel data anywhere (no
 *     channel names or series in its sets, no row in the store's channel
 *     tables) and its trace's encoding is that of its values;
 *   - a segment header whose channel count differs from the registration's
 *     is refused by the LocalAgent, both ways;
 *   - a store made before the channel tables existed opens and reads;
 *   - lactl show/export --channel, and an unknown channel's error naming
 *     it and the channels there are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "la.h"
#include "la_client.h"
#include "la_client_internal.h"
#include "la_codec.h"
#include "la_internal.h"
#include "la_test_agent.h"
#include "la_test_msg.h"
#include "la_test_stack.h"
#include "store.h"

#define N 120    /* elements per rank */
#define NP 2     /* ranks */
#define CYCLES 3 /* profiled cycles */
#define NCH 3    /* channels of the channel application */

static la_test_stack_t S;
static int have_stack;

static int group_setup(void **state) {
  if (la_td_prepare() != 0) return -1;
  if (la_ts_init(&S) != 0) return 0; /* daemons not built: tests skip */
  if (la_ts_start_global(&S, NULL) != 0 || la_ts_start_local(&S, NULL) != 0)
    return -1;
  have_stack = 1;
  return 0;
}

static int group_teardown(void **state) {
  if (have_stack) la_ts_free(&S);
  return 0;
}

/* Value of element e in channel ch at cycle c on rank r: multiples of
 * 1/4 below 200, so every sum of them is exact. */
static double value_of(int ch, long e, uint64_t c, int r) {
  return 10.0 * (ch + 1) +
         (double)((e * 7 + ch * 3 + (long)c * 5 + r) % 13) * 0.25;
}

static struct {
  int ch;
  uint64_t cycle;
  int rank;
} pctx;

static double probe_start(long e, void *arg) {
  return 0.0;
}
static double probe_stop(long e, void *arg) {
  return value_of(pctx.ch, e, pctx.cycle, pctx.rank);
}

/* One application rank, in a child: declares nch channels (0: none),
 * probes channel 0 with the plain probe and the others with the channel
 * probes, CYCLES cycles. Exits 0 when every call behaved. */
static pid_t fork_rank(const char *app_id, int rank, int nch) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid) return pid;
  static const char *names[NCH] = {"stress", "eos", "visc"};
  LA_setAgent(la_td_addr(S.la));
  LA_setAppId(app_id);
  LA_setBuffers(4);
  LA_setCompaction("lossless");
  LA_setProbeStartFunc(probe_start, NULL);
  LA_setProbeStopFunc(probe_stop, NULL);
  LA_setMetric("custom");
  int bad = 0;
  for (int c = 0; c < nch; c++) bad |= LA_channel(names[c]) != c;
  pctx.rank = rank;
  bad |= LA_register("chtest", rank, NP, N) != 0;
  for (int cy = 0; cy < CYCLES && !bad; cy++) {
    pctx.cycle = (uint64_t)cy;
    for (int c = 0; c < (nch ? nch : 1); c++) {
      pctx.ch = c;
      for (long e = 0; e < N; e++) {
        if (c == 0) {
          bad |= LA_startProbe(e) != 0;
          bad |= LA_stopProbe(e) != 0;
        } else {
          bad |= LA_startProbeC(c, e) != 0;
          bad |= LA_stopProbeC(c, e) != 0;
        }
      }
    }
    /* an undeclared channel: counted as out of range, nothing written */
    bad |= LA_startProbeC(nch ? nch : 1, 0) != LA_ERANGE;
    bad |= LA_dataXfer() != 0;
  }
  bad |= LA_getStat(LA_STAT_RANGE_ERRORS) != CYCLES;
  bad |= LA_finalize() != 0;
  _exit(bad);
}

static void run_app(const char *app_id, int nch) {
  pid_t kids[NP];
  for (int r = 0; r < NP; r++) kids[r] = fork_rank(app_id, r, nch);
  for (int r = 0; r < NP; r++) {
    int st = 0;
    assert_int_equal(waitpid(kids[r], &st, 0), kids[r]);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("%s rank %d failed (status %d): %s", app_id, r, st,
               LA_lastError());
  }
}

/* The complete set of app_id at cycle, measured weights. */
static la_traceset_t *get_set(la_client_t *c, const char *app_id,
                              uint64_t cycle) {
  la_traceset_t *ts = la_ta_complete_set(c, app_id, cycle, 20000);
  if (!ts)
    fail_msg("%s cycle %llu: no complete Trace-Set (%s)", app_id,
             (unsigned long long)cycle, la_client_error(c));
  return ts;
}

/* ------------------------------------------------------------ the API */

static void test_channel_errors(void **state) {
  la_td_unset_la_env();
  assert_int_equal(LA_channel("stress"), 0);
  assert_int_equal(LA_channel("eos"), 1);
  assert_int_equal(LA_channel("eos"), LA_EINVAL); /* duplicate */
  assert_non_null(strstr(LA_lastError(), "twice"));
  assert_int_equal(LA_channel(""), LA_EINVAL);
  assert_int_equal(LA_channel(NULL), LA_EINVAL);
  assert_int_equal(LA_channel("two words"), LA_EINVAL);
  char lng[LA_MAX_CHANNEL_NAME + 2];
  memset(lng, 'x', sizeof lng - 1);
  lng[sizeof lng - 1] = 0;
  assert_int_equal(LA_channel(lng), LA_EINVAL);
  lng[LA_MAX_CHANNEL_NAME] = 0; /* exactly the maximum is fine */
  assert_int_equal(LA_channel(lng), 2);
  char name[16];
  for (int i = 3; i < LA_MAX_CHANNELS; i++) {
    snprintf(name, sizeof name, "k%d", i);
    assert_int_equal(LA_channel(name), i);
  }
  assert_int_equal(LA_channel("one_more"), LA_ELIMIT);
  /* LA_finalize forgets them; after LA_register (failed: no agent) no
   * channel may be declared until LA_finalize */
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_channel("a"), 0);
  LA_setAgent("127.0.0.1:1");
  assert_true(LA_register("chtest", 0, 1, 10) < 0);
  assert_int_equal(LA_channel("b"), LA_ESTATE);
  /* not profiling: the channel probes are no-ops */
  assert_int_equal(LA_startProbeC(0, 3), 0);
  assert_int_equal(LA_stopProbeC(7, 3), 0);
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_channel("b"), 0);
  assert_int_equal(LA_finalize(), 0);
}

/* --------------------------------------------------------- end to end */

static void test_channels_end_to_end(void **state) {
  if (!have_stack) skip();
  run_app("ch-multi", NCH);
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(S.feed_addr, 5000, &c), 0);
  la_client_set_weights(c, LA_WEIGHTS_MEASURED);
  double w[NP * N], wc[N];
  for (uint64_t cy = 0; cy < CYCLES; cy++) {
    la_traceset_t *ts = get_set(c, "ch-multi", cy);
    assert_int_equal(la_traceset_channels(ts), NCH);
    assert_string_equal(la_traceset_channel_name(ts, 0), "stress");
    assert_string_equal(la_traceset_channel_name(ts, 1), "eos");
    assert_string_equal(la_traceset_channel_name(ts, 2), "visc");
    assert_null(la_traceset_channel_name(ts, 3));
    assert_int_equal(la_traceset_channel_find(ts, "visc"), 2);
    assert_int_equal(la_traceset_channel_find(ts, "nope"), LA_ENOTFOUND);
    /* the set's weights: the per-element sum over the channels */
    assert_int_equal(la_traceset_weights(ts, w), 0);
    double totals[NP];
    assert_int_equal(la_traceset_rank_totals(ts, totals), 0);
    for (int r = 0; r < NP; r++) {
      double sum_all = 0;
      for (long e = 0; e < N; e++) {
        double x = 0;
        for (int ch = 0; ch < NCH; ch++) x += value_of(ch, e, cy, r);
        if (w[r * N + e] != x)
          fail_msg("cycle %llu rank %d element %ld: sum %g, expected %g",
                   (unsigned long long)cy, r, e, w[r * N + e], x);
        sum_all += x;
      }
      assert_true(totals[r] == sum_all);
    }
    /* each channel: what was probed, and its exact totals */
    for (int ch = 0; ch < NCH; ch++) {
      la_traceset_t *v = NULL;
      assert_int_equal(la_traceset_channel(ts, (size_t)ch, &v), 0);
      assert_true(la_traceset_complete(v));
      assert_int_equal(la_traceset_channels(v), 0);
      double ct[NP];
      assert_int_equal(la_traceset_rank_totals(v, ct), 0);
      for (int r = 0; r < NP; r++) {
        assert_int_equal(
            la_traceset_channel_rank_weights(ts, (size_t)ch, (uint32_t)r, wc),
            0);
        double tot = 0;
        for (long e = 0; e < N; e++) {
          double x = value_of(ch, e, cy, r);
          if (wc[e] != x)
            fail_msg(
                "cycle %llu rank %d channel %d element %ld: %g, "
                "expected %g",
                (unsigned long long)cy, r, ch, e, wc[e], x);
          tot += x;
        }
        assert_true(ct[r] == tot);
      }
      la_traceset_free(v);
    }
    la_traceset_free(ts);
  }
  la_client_close(c);
}

/* An application that declares no channel: nothing about channels
 * anywhere, and its trace is the compaction of its values as before. */
static void test_no_channels_unchanged(void **state) {
  if (!have_stack) skip();
  run_app("ch-none", 0);
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(S.feed_addr, 5000, &c), 0);
  la_traceset_t *ts = get_set(c, "ch-none", 1);
  assert_int_equal(la_traceset_channels(ts), 0);
  la_traceset_t *v = NULL;
  assert_int_equal(la_traceset_channel(ts, 0, &v), LA_ENOTFOUND);
  assert_null(v);
  for (uint32_t r = 0; r < NP; r++) {
    const La__CompactTrace *ct = la__traceset_compact(ts, r);
    assert_non_null(ct);
    assert_int_equal(ct->n_channels, 0);
    double x[N];
    for (long e = 0; e < N; e++) x[e] = value_of(0, e, 1, (int)r);
    la_compact_params_t p;
    assert_int_equal(la_compact_spec_parse("lossless", &p, NULL, 0), 0);
    la_compact_result_t res;
    memset(&res, 0, sizeof res);
    assert_int_equal(la_compact(x, N, &p, &res), 0);
    assert_int_equal(ct->segments.len, res.len);
    assert_memory_equal(ct->segments.data, res.bytes, res.len);
    la_compact_result_free(&res);
  }
  la_traceset_free(ts);
  la_client_close(c);
  /* the store holds no channel row for it */
  sqlite3 *db;
  assert_int_equal(sqlite3_open_v2(S.db, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  sqlite3_stmt *st;
  assert_int_equal(
      sqlite3_prepare_v2(db,
                         "SELECT (SELECT count(*) FROM rank_channels WHERE"
                         " app_id = 'ch-none') + (SELECT count(*) FROM"
                         " channel_traces WHERE app_id = 'ch-none')",
                         -1, &st, NULL),
      SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

/* ------------------------------------------------ rows and boxes (C) */

/* The stop reading of the row and box probes below (start reads 0). */
static double rb_cur;
static double rb_stop(long e, void *arg) {
  return rb_cur;
}

/* One rank of a 4x3x2 grid (nch channels declared, 0: none), one cycle
 * of row and box probes in channels (LA_startRowC, LA_startBoxC) whose
 * readings are known exactly; exits 0 when every call returned what it
 * should. */
static pid_t fork_grid_rank(const char *app_id, int nch) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid) return pid;
  LA_setAgent(la_td_addr(S.la));
  LA_setAppId(app_id);
  LA_setCompaction("lossless");
  LA_setProbeStartFunc(probe_start, NULL);
  LA_setProbeStopFunc(rb_stop, NULL);
  int bad = 0;
  if (nch) bad |= LA_channel("a") != 0 || LA_channel("b") != 1;
  bad |= LA_registerGrid("rbtest", 0, 1, 4, 3, 2) != 0;
#define RB(start, stop, v, ...)     \
  do {                              \
    rb_cur = (v);                   \
    bad |= start(__VA_ARGS__) != 0; \
    bad |= stop(__VA_ARGS__) != 0;  \
  } while (0)
  if (nch) {
    RB(LA_startRowC, LA_stopRowC, 8, 1, 1, 0); /* ch 1: cells 4..7 */
    RB(LA_startRowC, LA_stopRowC, 4, 0, 2, 1); /* ch 0: cells 20..23 */
    RB(LA_startBoxC, LA_stopBoxC, 16, 1, 0, 0, 1, 2, 2, 1); /* ch 1 */
    RB(LA_startBoxC, LA_stopBoxC, 6, 0, 2, 2, 0, 2, 1, 1);  /* ch 0 */
    RB(LA_startProbeC, LA_stopProbeC, 5, 1, 0);             /* ch 1: cell 0 */
    /* errors: channels not declared, a box past the grid, a stop
     * without its start; nothing written */
    bad |= LA_startRowC(2, 0, 0) != LA_ERANGE;
    bad |= LA_startBoxC(-1, 0, 0, 0, 1, 1, 1) != LA_ERANGE;
    bad |= LA_startBoxC(1, 3, 0, 0, 2, 1, 1) != LA_ERANGE;
    bad |= LA_stopRowC(1, 0, 0) != LA_ESTATE;
  } else {
    /* one channel: rows only, one value per row all the way */
    for (long r = 0; r < 6; r++)
      RB(LA_startRowC, LA_stopRowC, 4.0 * (double)(r + 1), 0, r % 3, r / 3);
    bad |= LA_startRowC(1, 0, 0) != LA_ERANGE;
  }
#undef RB
  bad |= LA_dataXfer() != 0;
  bad |= LA_getStat(LA_STAT_RANGE_ERRORS) != (nch ? 3 : 1);
  bad |= LA_finalize() != 0;
  _exit(bad);
}

/* LA_startRowC / LA_startBoxC: each channel's stored series is what was
 * probed into it (a row of channel 0 as a row value, of another channel
 * spread over its cells); with one channel, rows alone stay one value per
 * row to the agent and arrive spread over their cells. */
static void test_row_box_channels(void **state) {
  if (!have_stack) skip();
  static const struct {
    const char *id;
    int nch;
  } apps[] = {{"rb-2ch", 2}, {"rb-1ch", 0}};
  double want[2][24] = {{0}};
  for (int c = 20; c <= 23; c++) want[0][c] = 1;
  want[0][10] = want[0][11] = 3;
  want[1][0] = 5;
  for (int c = 4; c <= 7; c++) want[1][c] = 2;
  want[1][12] = want[1][13] = want[1][16] = want[1][17] = 4;
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(S.feed_addr, 5000, &c), 0);
  la_client_set_weights(c, LA_WEIGHTS_MEASURED);
  for (size_t a = 0; a < 2; a++) {
    pid_t kid = fork_grid_rank(apps[a].id, apps[a].nch);
    int st = 0;
    assert_int_equal(waitpid(kid, &st, 0), kid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("%s failed (status %d)", apps[a].id, st);
    la_traceset_t *ts = get_set(c, apps[a].id, 0);
    double w[24];
    if (apps[a].nch) {
      assert_int_equal(la_traceset_channels(ts), 2);
      for (int ch = 0; ch < 2; ch++) {
        assert_int_equal(la_traceset_channel_rank_weights(ts, (size_t)ch, 0, w),
                         0);
        for (int e = 0; e < 24; e++)
          if (w[e] != want[ch][e])
            fail_msg("channel %d cell %d: %g, expected %g", ch, e, w[e],
                     want[ch][e]);
      }
    }
    assert_int_equal(la_traceset_weights(ts, w), 0);
    for (int e = 0; e < 24; e++) {
      double x = apps[a].nch ? want[0][e] + want[1][e] : (double)(e / 4 + 1);
      if (w[e] != x)
        fail_msg("%s cell %d: %g, expected %g", apps[a].id, e, w[e], x);
    }
    la_traceset_free(ts);
  }
  la_client_close(c);
}

/* ------------------------------------------------------------ hostile */

/* Registers a segment of seg_ch channels whose header claims hdr_ch, with
 * a registration naming reg_names channels; returns la__link_register's
 * code (the LocalAgent's verdict). */
static int register_segment(uint32_t seg_ch, uint32_t hdr_ch,
                            size_t reg_names) {
  la__ipc_t ipc;
  assert_int_equal(la__ipc_create_ch(&ipc, 50, 2, seg_ch), 0);
  ipc.hdr->n_channels = hdr_ch; /* what a hostile application may write */
  static char *names[] = {"a", "b", "c"};
  La__RegisterRequest req =
      la_test_register_request("ch-hostile", "ch-hostile", (int32_t)getpid(),
                               ipc.shm_id, ipc.sem_id, ipc.hdr->nonce, 50, 2);
  req.metric = "custom";
  req.unit = "user";
  req.n_channels = reg_names;
  req.channels = names;
  la__link_t link = {.fd = -1};
  int rc = la__link_register(&link, la_td_addr(S.la), 5000, &req);
  la__link_close(&link);
  la__ipc_destroy(&ipc);
  return rc;
}

static void test_hostile_channel_count(void **state) {
  if (!have_stack) skip();
  /* the header claims 3 channels, the registration names none */
  assert_int_equal(register_segment(1, 3, 0), LA_EREFUSED);
  assert_non_null(strstr(LA_lastError(), "channel count does not match"));
  /* the registration names 3, the header says 1 (a segment too small) */
  assert_int_equal(register_segment(1, 1, 3), LA_EREFUSED);
  assert_non_null(strstr(LA_lastError(), "channel count does not match"));
  /* consistent: accepted */
  assert_int_equal(register_segment(3, 3, 3), 0);
}

/* --------------------------------------------------------- old store */

static void test_store_without_channel_tables(void **state) {
  char dir[] = "/tmp/la_test_channels.XXXXXX", path[64], why[256];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/la.db", dir);
  la_store_t *s = NULL;
  assert_int_equal(la_store_open(path, 0, &s, why, sizeof why), 0);
  La__RankStart rs = LA__RANK_START__INIT;
  rs.app_id = "old";
  rs.nprocs = 1;
  rs.n_elements = 4;
  rs.metric = "time";
  assert_int_equal(la_store_rank_start(s, &rs, NULL), 0);
  double x[4] = {1, 2, 3, 4};
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse("lossless", &p, NULL, 0), 0);
  la_compact_result_t res;
  memset(&res, 0, sizeof res);
  assert_int_equal(la_compact(x, 4, &p, &res), 0);
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  st.count = 4;
  st.sum = 10;
  st.min = 1;
  st.max = 4;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  t.seq = 1;
  t.app_id = "old";
  t.n_elements = 4;
  t.mode = (La__CompactMode)res.mode;
  t.segments.data = res.bytes;
  t.segments.len = res.len;
  t.stats = &st;
  assert_int_equal(la_store_trace(s, &t, NULL), 0);
  la_store_close(s);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db,
                                "DROP TABLE rank_channels;"
                                " DROP TABLE channel_traces;",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(la_store_open(path, 0, &s, why, sizeof why), 0);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(s, "old", 0, &set), 0);
  assert_int_equal(set->n_traces, 1);
  assert_int_equal(set->n_channels, 0);
  assert_int_equal(set->traces[0]->n_channels, 0);
  la_store_free_set(set);
  la_store_close(s);
  la_compact_result_free(&res);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* -------------------------------------------------------------- lactl */

static int lactl(const char *const *args, char *out, size_t len) {
  char bin[600];
  if (la_td_find_bin("lactl", bin, sizeof bin) != 0) return -2;
  const char *argv[16] = {bin};
  size_t i = 0;
  while (args[i] && i < 14) {
    argv[i + 1] = args[i];
    i++;
  }
  argv[i + 1] = NULL;
  return la_td_run(argv, NULL, 20000, out, len);
}

static void test_lactl_channel(void **state) {
  if (!have_stack) skip();
  run_app("ch-lactl", NCH);
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(S.feed_addr, 5000, &c), 0);
  la_traceset_free(get_set(c, "ch-lactl", 2));
  la_client_close(c);
  static char out[1 << 16];
  const char *exp[] = {"export", "ch-lactl", "2",         "--channel",
                       "eos",    "--global", S.feed_addr, NULL};
  int rc = lactl(exp, out, sizeof out);
  if (rc == -2) skip();
  if (rc != 0) fail_msg("lactl export --channel eos: %d\n%s", rc, out);
  /* cycle,rank,element,global_element,value: every value is eos's */
  int rows = 0;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    unsigned long long cy, r, e, g;
    double v;
    if (sscanf(line, "%llu,%llu,%llu,%llu,%lg", &cy, &r, &e, &g, &v) != 5)
      continue;
    if (v != value_of(1, (long)e, cy, (int)r))
      fail_msg("export --channel eos: rank %llu element %llu: %g", r, e, v);
    rows++;
  }
  assert_int_equal(rows, NP * N);
  const char *show[] = {"show",     "ch-lactl",  "2",      "--channel", "visc",
                        "--global", S.feed_addr, "--json", NULL};
  rc = lactl(show, out, sizeof out);
  if (rc != 0) fail_msg("lactl show --channel visc: %d\n%s", rc, out);
  if (!strstr(out, "\"channel\": \"visc\""))
    fail_msg("lactl show --channel visc --json names no channel:\n%s", out);
  show[7] = NULL; /* the text names it too */
  rc = lactl(show, out, sizeof out);
  if (rc != 0 || !strstr(out, "\n  channel     visc (its values only)\n"))
    fail_msg("lactl show --channel visc names no channel: %d\n%s", rc, out);
  const char *bad[] = {"show", "ch-lactl", "2",         "--channel",
                       "nope", "--global", S.feed_addr, NULL};
  rc = lactl(bad, out, sizeof out);
  assert_int_equal(rc, 1);
  if (!strstr(out, "'nope'") || !strstr(out, "stress, eos, visc"))
    fail_msg("unknown channel: %s", out);
  const char *none[] = {"show",   "ch-none",  "1",         "--channel",
                        "stress", "--global", S.feed_addr, NULL};
  rc = lactl(none, out, sizeof out);
  assert_int_equal(rc, 1);
  if (!strstr(out, "declared no channels")) fail_msg("no channels: %s", out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_channel_errors),
      cmocka_unit_test(test_channels_end_to_end),
      cmocka_unit_test(test_no_channels_unchanged),
      cmocka_unit_test(test_row_box_channels),
      cmocka_unit_test(test_hostile_channel_count),
      cmocka_unit_test(test_store_without_channel_tables),
      cmocka_unit_test(test_lactl_channel),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
