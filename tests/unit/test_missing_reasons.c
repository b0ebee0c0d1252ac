/* SPDX-License-Identifier: BSD-3-Clause */
/* test_missing_reasons.c: the reasons a partial Trace-Set gives for its
 * missing ranks, against the real GlobalAgent.
 *
 * LocalAgents are played by hand over the real link (la_test_link.h): the
 * handshake, RankStart, CompactTrace and RankEnd messages, then what the
 * GlobalAgent stored is read back from its SQLite store (table missing)
 * and its log. stitch.timeout is 1 s. A rank whose later cycles arrived is
 * "missing: no trace for this cycle while later cycles of the rank
 * arrived", also when it ended before the set timed out; a rank never
 * heard of is "timeout: no trace within stitch.timeout"; and one job whose
 * ranks came under two ids from two hosts is said to be one, by name.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "la.h"
#include "la_auth.h"
#include "la_compact.h"
#include "la_secure_io.h"
#include "la_test_daemon.h"
#include "la_test_link.h"
#include "la_test_msg.h"
#include "la_test_uplink.h"

#define WAIT_MS 20000
#define N 8

static struct {
  la_tu_ga_t g;
  la_test_link_t l1, l2;
  la_compact_result_t r;
  char db[700];
} T;

#define CHECK(cond, ...) \
  LA_TD_CHECK(la_td_print_log_tail(T.g.d, 3000), cond, __VA_ARGS__)

static int setup(void **state) {
  (void)state;
  memset(&T, 0, sizeof T);
  T.l1.fd = T.l2.fd = -1;
  signal(SIGPIPE, SIG_IGN);
  if (la_auth_init() != 0) return -1;
  char p[512];
  if (la_td_find_bin("la-globalagent", p, sizeof p) != 0) return -1;
  const char *args[] = {"--log.level=info", "--stitch.timeout=1s", NULL};
  if (la_tu_ga_start(&T.g, 0, 1, args, WAIT_MS) != 0) return -1;
  la_td_path(T.g.d, "la.db", T.db, sizeof T.db);
  double x[N];
  for (int i = 0; i < N; i++) x[i] = 1.0 + i;
  la_compact_params_t cp;
  if (la_compact_spec_parse("lossless", &cp, NULL, 0) != 0 ||
      la_compact(x, N, &cp, &T.r) != 0)
    return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (T.l1.fd >= 0) la_test_link_close(&T.l1);
  if (T.l2.fd >= 0) la_test_link_close(&T.l2);
  la_compact_result_free(&T.r);
  la_td_free(T.g.d);
  memset(&T, 0, sizeof T);
  return 0;
}

static void link_open(la_test_link_t *l, const char *host) {
  int32_t status = -1;
  char why[300] = "";
  int rc = la_test_link_open(l, T.g.agents_port, T.g.key, host, WAIT_MS,
                             &status, why, sizeof why);
  CHECK(rc == 0 && status == 0, "handshake: %s", why);
}

static void rank_start(la_test_link_t *l, const char *host, const char *app,
                       const char *name, uint32_t rank, uint32_t nprocs) {
  La__RankStart s = la_test_rank_start(app, name, rank, nprocs, N);
  s.seq = ++l->seq;
  s.metric = "custom";
  s.unit = "user";
  s.host = (char *)host;
  CHECK(la_secure_send_msg(l->fd, &l->sec, LA__MSG_TYPE__MSG_RANK_START,
                           &s.base, 5000) == 0,
        "RankStart not sent");
}

static void rank_end(la_test_link_t *l, const char *app, uint32_t rank) {
  La__RankEnd e = LA__RANK_END__INIT;
  e.seq = ++l->seq;
  e.app_id = (char *)app;
  e.rank = rank;
  e.reason = "finalize";
  CHECK(la_secure_send_msg(l->fd, &l->sec, LA__MSG_TYPE__MSG_RANK_END,
                           &e.base, 5000) == 0,
        "RankEnd not sent");
}

static void trace(la_test_link_t *l, const char *app, uint32_t rank,
                  uint64_t tag) {
  CHECK(la_test_link_trace(l, app, rank, tag, &T.r, NULL, 0) == 0,
        "trace not sent");
}

static void acked(la_test_link_t *l) {
  char why[300] = "";
  CHECK(la_test_link_wait_acked(l, WAIT_MS, why, sizeof why) == 0,
        "not acknowledged: %s", why);
}

/* The stored missing reason of (app, tag, rank), waited for up to WAIT_MS;
 * "" when none came. */
static void reason_of(const char *app, uint64_t tag, uint32_t rank,
                      char *out, size_t len) {
  out[0] = '\0';
  long long end = la_td_now_ms() + la_td_loaded_ms(WAIT_MS);
  while (!out[0] && la_td_now_ms() < end) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(T.db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db,
                           "SELECT m.reason FROM missing m JOIN trace_sets s"
                           " ON s.app_id = m.app_id AND s.cycle_tag ="
                           " m.cycle_tag WHERE s.closed = 1 AND m.app_id = ?1"
                           " AND m.cycle_tag = ?2 AND m.rank = ?3",
                           -1, &st, NULL) == SQLITE_OK) {
      sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
      sqlite3_bind_int64(st, 2, (sqlite3_int64)tag);
      sqlite3_bind_int64(st, 3, rank);
      if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (!out[0]) la_td_nap_ms(50);
  }
}

/* Rank 1 skips cycle 2 but sends cycle 3, then ends; rank 2 never comes.
 * The set of cycle 2 times out: rank 1 is missing because its later
 * cycles arrived (not "rank ended before this cycle": it ended after),
 * rank 2 for the timeout. */
static void test_later_cycles_arrived(void **state) {
  (void)state;
  link_open(&T.l1, "h1");
  for (uint32_t r = 0; r < 2; r++) rank_start(&T.l1, "h1", "later-1", "w", r, 3);
  for (uint64_t tag = 0; tag < 4; tag++) {
    trace(&T.l1, "later-1", 0, tag);
    if (tag != 2) trace(&T.l1, "later-1", 1, tag);
  }
  rank_end(&T.l1, "later-1", 1);
  acked(&T.l1);
  char why[300];
  reason_of("later-1", 2, 1, why, sizeof why);
  fprintf(stderr, "rank 1, cycle 2: %s\n", why);
  assert_string_equal(why, "missing: no trace for this cycle while later "
                           "cycles of the rank arrived");
  reason_of("later-1", 2, 2, why, sizeof why);
  fprintf(stderr, "rank 2, cycle 2: %s\n", why);
  assert_string_equal(why, "timeout: no trace within stitch.timeout");
  /* the last cycle: rank 1 sent nothing later, and it ended */
  reason_of("later-1", 3, 2, why, sizeof why);
  assert_string_equal(why, "timeout: no trace within stitch.timeout");
}

/* One job of 4 ranks (name "wave"): ranks 0-1 under id jobA from host h1,
 * ranks 2-3 under id jobB from host h2. Each id's sets time out; the
 * reason and the log line say it is one job under two ids. */
static void test_one_job_two_ids(void **state) {
  (void)state;
  link_open(&T.l1, "h1");
  link_open(&T.l2, "h2");
  for (uint32_t r = 0; r < 2; r++) rank_start(&T.l1, "h1", "jobA", "wave", r, 4);
  for (uint32_t r = 2; r < 4; r++) rank_start(&T.l2, "h2", "jobB", "wave", r, 4);
  for (uint32_t r = 0; r < 2; r++) trace(&T.l1, "jobA", r, 0);
  for (uint32_t r = 2; r < 4; r++) trace(&T.l2, "jobB", r, 0);
  acked(&T.l1);
  acked(&T.l2);
  const char *want_a = "ranks 0-1 arrived under app id jobA from host h1 and "
                       "ranks 2-3 under app id jobB from host h2: one job "
                       "under two ids? (LA_APP_ID)";
  const char *want_b = "ranks 2-3 arrived under app id jobB from host h2 and "
                       "ranks 0-1 under app id jobA from host h1: one job "
                       "under two ids? (LA_APP_ID)";
  char why[300];
  reason_of("jobA", 0, 2, why, sizeof why);
  fprintf(stderr, "jobA rank 2: %s\n", why);
  assert_string_equal(why, want_a);
  reason_of("jobA", 0, 3, why, sizeof why);
  assert_string_equal(why, want_a);
  reason_of("jobB", 0, 0, why, sizeof why);
  fprintf(stderr, "jobB rank 0: %s\n", why);
  assert_string_equal(why, want_b);
  CHECK(la_td_wait_log(T.g.d, want_a, WAIT_MS) == 0, "no log line: %s",
        want_a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_later_cycles_arrived, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_one_job_two_ids, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
