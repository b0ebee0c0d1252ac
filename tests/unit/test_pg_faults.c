/* SPDX-License-Identifier: BSD-3-Clause */
/* test_pg_faults.c: a GlobalAgent on PostgreSQL (store.url) when the
 * database fails under it, with the real daemon, a real PostgreSQL server
 * (tests/support/la_test_pg.h) and LocalAgents played by hand over the
 * real link (la_test_link.h).
 *
 * Restart: the server is stopped (fast shutdown: the GlobalAgent's session
 * ends) and started again three times while connections to the
 * GlobalAgent's ports are opened and closed in a loop (so the descriptor
 * numbers libpq gives up are handed to accepted connections). The
 * GlobalAgent must stay up, store and publish again after each restart (a
 * subscriber connected throughout receives the set of every round), and
 * stop cleanly.
 *
 * Unpublishable sets: the GlobalAgent's role may write every table but not
 * read rank_grid, so each set it closes is stored but cannot be read back
 * for publishing. Every set must still reach the subscriber as a
 * SetNotice (libla_client: LA_ELIMIT, limit "store"), be counted in
 * sets_unpublished and be logged with the reason.
 *
 * Skips when PostgreSQL's server binaries or the daemon are missing.
 */
#include <errno.h>
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

#include "la.h"
#include "la_auth.h"
#include "la_client.h"
#include "la_compact.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_link.h"
#include "la_test_pg.h"
#include "la_test_uplink.h"

#define WAIT_MS 30000
#define N 8
#define ROUNDS 3
#define CONNS 40 /* connections opened to each port during an outage */
#define SETS 20

static struct {
  la_test_pg_t *pg;
  char url[400], admin[400];
  la_tu_ga_t g;
  la_client_t *sub;
  la_compact_result_t r;
  int fds[2 * CONNS];
} T;

#define CHECK(cond, ...) \
  LA_TD_CHECK(la_td_print_log_tail(T.g.d, 4000), cond, __VA_ARGS__)

static int setup(void **state) {
  (void)state;
  memset(&T, 0, sizeof T);
  for (int i = 0; i < 2 * CONNS; i++) T.fds[i] = -1;
  signal(SIGPIPE, SIG_IGN);
  if (la_auth_init() != 0) return -1;
  double x[N];
  for (int i = 0; i < N; i++) x[i] = 1.0 + i;
  la_compact_params_t cp;
  if (la_compact_spec_parse("lossless", &cp, NULL, 0) != 0 ||
      la_compact(x, N, &cp, &T.r) != 0)
    return -1;
  return 0;
}

static void close_conns(void) {
  for (int i = 0; i < 2 * CONNS; i++)
    if (T.fds[i] >= 0) {
      close(T.fds[i]);
      T.fds[i] = -1;
    }
}

static int teardown(void **state) {
  (void)state;
  close_conns();
  la_client_close(T.sub);
  la_compact_result_free(&T.r);
  la_td_free(T.g.d);
  la_test_pg_stop(T.pg);
  memset(&T, 0, sizeof T);
  return 0;
}

/* A PostgreSQL server and database "la" (T.url, as its superuser); 1 when
 * the server binaries are missing (the test skips). */
static int start_pg(void) {
  char why[2000] = "";
  int rc = la_test_pg_start(0, &T.pg, why, sizeof why);
  if (rc == 1) return 1;
  assert_true(rc == 0 || (fprintf(stderr, "%s\n", why), 0));
  assert_int_equal(
      la_test_pg_createdb(T.pg, "la", T.url, sizeof T.url, why, sizeof why), 0);
  snprintf(T.admin, sizeof T.admin, "%s", T.url);
  return 0;
}

/* The GlobalAgent on url, with options for many short connections. */
static void start_ga(const char *url) {
  char u[500];
  snprintf(u, sizeof u, "--store.url=%s", url);
  const char *args[] = {u,
                        "--log.level=info",
                        "--stitch.timeout=2s",
                        "--agents.handshake_timeout=200ms",
                        "--agents.max_handshakes_per_address=1000",
                        "--feed.max_connections_per_address=1000",
                        NULL};
  char p[512];
  if (la_td_find_bin("la-globalagent", p, sizeof p) != 0) skip();
  int rc = la_tu_ga_start(&T.g, 0, 1, args, WAIT_MS);
  if (rc != 0 && T.g.d) la_td_print_log_tail(T.g.d, 4000);
  assert_int_equal(rc, 0);
}

static void subscribe(void) {
  assert_int_equal(la_client_connect(T.g.feed_addr, WAIT_MS, &T.sub), 0);
  assert_int_equal(la_client_subscribe(T.sub, NULL, 0), 0);
}

static long long pg_count(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  long long v = la_test_pg_vvalue(T.admin, fmt, ap);
  va_end(ap);
  return v;
}

/* Fails the test when the GlobalAgent is no longer running, with how it
 * ended (134: SIGABRT). */
static void ga_running(const char *when) {
  int st = la_td_wait_exit(T.g.d, 0);
  CHECK(st == -1, "the GlobalAgent exited %s, status %d", when, st);
}

/* Sends the RankStart of app (one rank) and its trace of cycle tag on a
 * fresh link, until the GlobalAgent acknowledges both (a batch whose
 * database session was lost fails, and the link is closed: sent again). */
static void store_cycle(const char *app, uint64_t tag) {
  long long end = la_td_now_ms() + la_td_loaded_ms(WAIT_MS);
  char why[300] = "";
  for (;;) {
    la_test_link_t l = {.fd = -1};
    int32_t status = -1;
    int rc = la_test_link_open(&l, T.g.agents_port, T.g.key, "nodeA", 5000,
                               &status, why, sizeof why);
    if (rc == 0 && status == 0 &&
        la_test_link_rank_start(&l, "nodeA", app, 0, 1, N) == 0 &&
        la_test_link_trace(&l, app, 0, tag, &T.r, NULL, 0) == 0 &&
        la_test_link_wait_acked(&l, 5000, why, sizeof why) == 0) {
      la_test_link_close(&l);
      return;
    }
    if (l.fd >= 0) la_test_link_close(&l);
    ga_running(why);
    CHECK(la_td_now_ms() < end, "cycle %llu of %s never acknowledged: %s",
          (unsigned long long)tag, app, why);
    la_td_nap_ms(100);
  }
}

/* Opens CONNS connections to each of the GlobalAgent's ports (never
 * speaking): each takes a descriptor in the daemon. */
static void open_conns(void) {
  for (int i = 0; i < 2 * CONNS; i++) {
    if (T.fds[i] >= 0) close(T.fds[i]);
    const char *a = i < CONNS ? T.g.agents_addr : T.g.feed_addr;
    T.fds[i] = la_tcp_connect("127.0.0.1", (uint16_t)atoi(strchr(a, ':') + 1),
                              2000);
  }
}

/* The next set the subscriber receives, within WAIT_MS: its cycle (the
 * set must be of app and complete). */
static uint64_t next_set(const char *app) {
  la_traceset_t *t = NULL;
  int rc = la_client_next(T.sub, la_td_loaded_ms(WAIT_MS), &t);
  CHECK(rc == 0, "subscriber: %s", la_client_error(T.sub));
  CHECK(!strcmp(la_traceset_app_id(t), app) && la_traceset_complete(t),
        "subscriber got %s cycle %llu (complete %d)", la_traceset_app_id(t),
        (unsigned long long)la_traceset_cycle(t), la_traceset_complete(t));
  uint64_t tag = la_traceset_cycle(t);
  la_traceset_free(t);
  return tag;
}

/* ------------------------------------------------------------ restart --- */

static void test_database_restart(void **state) {
  (void)state;
  if (start_pg() == 1) skip();
  start_ga(T.url);
  subscribe();
  store_cycle("pgrestart", 0);
  assert_int_equal(next_set("pgrestart"), 0);
  for (int round = 1; round <= ROUNDS; round++) {
    /* fast shutdown: the server ends the GlobalAgent's session and libpq
     * closes its socket; connections accepted next take its number. They
     * stay silent past agents.handshake_timeout, so the GlobalAgent
     * refuses them (writes, then shuts them down) */
    assert_int_equal(la_test_pg_halt(T.pg), 0);
    for (int k = 0; k < 3; k++) {
      open_conns();
      la_td_nap_ms(600);
    }
    char why[2000] = "";
    CHECK(la_test_pg_resume(T.pg, why, sizeof why) == 0, "%s", why);
    open_conns(); /* and while the session is opened again */
    la_td_nap_ms(600);
    ga_running("during a database restart");
    store_cycle("pgrestart", (uint64_t)round);
    CHECK(pg_count("SELECT count(*) FROM trace_sets WHERE app_id ="
                   " 'pgrestart' AND closed = 1 AND complete = 1") ==
              round + 1,
          "round %d: the set was not stored complete", round);
    /* stale sockets are harmless to the daemon but cost test time */
    close_conns();
    CHECK(next_set("pgrestart") == (uint64_t)round,
          "round %d: the subscriber did not get the set", round);
  }
  ga_running("after the restarts");
  int st = la_td_stop(T.g.d, WAIT_MS);
  CHECK(st == 0, "la-globalagent exited with %d", st);
}

/* ------------------------------------------------------- unpublishable - */

static void test_unreadable_set_is_announced(void **state) {
  (void)state;
  if (start_pg() == 1) skip();
  char why[2000] = "";
  CHECK(la_test_pg_exec(T.admin, "CREATE ROLE lawriter LOGIN", why,
                        sizeof why) == 0 &&
            la_test_pg_exec(T.admin, "GRANT CREATE ON SCHEMA public TO lawriter",
                            why, sizeof why) == 0,
        "%s", why);
  char url[500];
  snprintf(url, sizeof url, "%s", T.url);
  char *u = strstr(url, "user=postgres");
  assert_non_null(u);
  snprintf(u, sizeof url - (size_t)(u - url), "user=lawriter");
  /* the schema, made (and owned) by the role; then it may no longer read
   * one table it writes */
  start_ga(url);
  CHECK(la_td_stop(T.g.d, WAIT_MS) == 0, "first start did not stop");
  la_td_free(T.g.d);
  T.g.d = NULL;
  CHECK(la_test_pg_exec(T.admin, "REVOKE SELECT ON rank_grid FROM lawriter",
                        why, sizeof why) == 0,
        "%s", why);
  start_ga(url);
  subscribe();
  for (int i = 0; i < SETS; i++) store_cycle("pgnoread", (uint64_t)i);
  CHECK(pg_count("SELECT count(*) FROM trace_sets WHERE app_id ="
                 " 'pgnoread' AND closed = 1 AND complete = 1") == SETS,
        "the sets were not stored complete");
  /* the subscriber is told about every set */
  int told[SETS] = {0};
  for (int i = 0; i < SETS; i++) {
    la_traceset_t *t = NULL;
    int rc = la_client_next(T.sub, la_td_loaded_ms(WAIT_MS), &t);
    if (rc == 0) {
      CHECK(0, "cycle %llu was published, yet it cannot be read",
            (unsigned long long)la_traceset_cycle(t));
    }
    CHECK(rc == LA_ELIMIT, "subscriber, set %d of %d: %s", i + 1, SETS,
          la_client_error(T.sub));
    const char *app = NULL, *limit = NULL;
    uint64_t tag = 0;
    assert_int_equal(la_client_notice(T.sub, &app, &tag, NULL, &limit, NULL),
                     0);
    CHECK(!strcmp(app, "pgnoread") && tag < SETS && !strcmp(limit, "store"),
          "notice of %s cycle %llu over %s", app, (unsigned long long)tag,
          limit);
    CHECK(strstr(la_client_error(T.sub), "store"),
          "the notice's text does not say why: %s", la_client_error(T.sub));
    told[tag]++;
  }
  for (int i = 0; i < SETS; i++)
    CHECK(told[i] == 1, "cycle %d announced %d times", i, told[i]);
  CHECK(la_td_wait_status(T.g.d, "sets_unpublished", SETS, WAIT_MS) == 0,
        "sets_unpublished is %lld", la_td_status_ll(T.g.d, "sets_unpublished"));
  CHECK(la_td_status_ll(T.g.d, "sets_published") == 0,
        "sets_published is %lld", la_td_status_ll(T.g.d, "sets_published"));
  CHECK(la_td_log_has(T.g.d, "pgnoread cycle 0") &&
            la_td_log_has(T.g.d, "permission denied"),
        "the log does not name the set and the reason");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_database_restart, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unreadable_set_is_announced, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
