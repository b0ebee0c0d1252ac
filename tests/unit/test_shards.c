/* SPDX-License-Identifier: BSD-3-Clause */
/* test_shards.c: several GlobalAgents (shards) over one PostgreSQL store
 * (docs/sharding.md), with real daemons, a real PostgreSQL server
 * (tests/support/la_test_pg.h) and real MPI jobs.
 *
 * Two la-globalagent shards share one database (store.url); two
 * la-localagent daemons (nodeA, nodeB) list both shards in global.address.
 * Two wavetoy jobs under mpiexec (an MPMD command line: ranks 0-1 on nodeA,
 * 2-3 on nodeB) profile two applications whose ids hash to different
 * shards. Mid-run, with nodeB held (SIGSTOP) so that sets of the first
 * shard's application are open in the store with ranks 0-1 only, the first
 * shard is killed (SIGKILL). Checked, as a user sees it: both jobs finish;
 * every (application, rank, cycle) is in the database exactly once; every
 * Trace-Set is closed and complete (the surviving shard completed the sets
 * the dead one had open from the database); `lactl apps` and libla_client
 * against the surviving shard find both applications and their latest
 * sets.
 *
 * Skips when PostgreSQL's server binaries, mpiexec, wavetoy or a daemon are
 * missing. Teardown kills every process it started and removes the
 * directories and the database server.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "la_auth.h"
#include "la_client.h"
#include "la_test_daemon.h"
#include "la_test_mpi.h"
#include "la_test_pg.h"
#include "la_test_tcp.h"

#define WAIT_MS 30000
#define WT_N 24
enum { NGA = 2, NLA = 2, NAPP = 2 };
enum { STEPS = 300, PERIOD = 20, CYCLES = STEPS / PERIOD };

static struct {
  la_test_pg_t *pg;
  char url[400];
  la_test_daemon_t *ga[NGA], *la[NLA];
  char key[600];
  char agents_addr[NGA][64], feed_addr[NGA][64];
  uint16_t agents_port[NGA];
  char la_addr[NLA][64];
  char app[NAPP][64];
  pid_t bg[NAPP];
  la_client_t *sub; /* subscribed at the surviving shard */
  la_client_t *sub2; /* subscribed through both, at the first */
} T;

static void dump_logs(void) {
  for (int i = 0; i < NGA; i++) la_td_print_log_tail(T.ga[i], 3000);
  for (int i = 0; i < NLA; i++) la_td_print_log_tail(T.la[i], 3000);
}

#define CHECK(cond, ...) LA_TD_CHECK(dump_logs(), cond, __VA_ARGS__)

static int teardown(void **state) {
  la_client_close(T.sub);
  la_client_close(T.sub2);
  for (int i = 0; i < NAPP; i++)
    if (T.bg[i] > 0) {
      kill(-T.bg[i], SIGKILL);
      while (waitpid(T.bg[i], NULL, 0) < 0 && errno == EINTR) {
      }
    }
  for (int i = 0; i < NLA; i++) la_td_free(T.la[i]);
  for (int i = 0; i < NGA; i++) la_td_free(T.ga[i]);
  la_test_pg_stop(T.pg);
  memset(&T, 0, sizeof T);
  return 0;
}

/* The LocalAgent's routing rule (docs/sharding.md): FNV-1a of the
 * application id, modulo the number of shards. */
static int home_shard(const char *app_id, int n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = app_id; *p; p++)
    h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
  return (int)(h % (uint64_t)n);
}

/* ------------------------------------------------------------ daemons -- */

static void start_ga(int i) {
  static char a[6][700];
  char agents_pf[600], feed_pf[600];
  la_td_path(T.ga[i], "agents.port", agents_pf, sizeof agents_pf);
  la_td_path(T.ga[i], "feed.port", feed_pf, sizeof feed_pf);
  snprintf(a[0], sizeof a[0], "--agents.port_file=%s", agents_pf);
  snprintf(a[1], sizeof a[1], "--feed.port_file=%s", feed_pf);
  snprintf(a[2], sizeof a[2], "--store.url=%s", T.url);
  snprintf(a[3], sizeof a[3], "--agents.secret_file=%s", T.key);
  const char *args[] = {"--agents.listen=127.0.0.1:0",
                        "--feed.listen=127.0.0.1:0", a[0], a[1], a[2], a[3],
                        /* sets open across the kill must complete from
                         * resent traces, not close partial meanwhile */
                        "--stitch.timeout=60s", "--log.level=debug", NULL};
  int fp = la_td_start(T.ga[i], args, feed_pf, WAIT_MS);
  CHECK(fp > 0, "la-globalagent %d did not start", i);
  int ap = la_td_read_port(agents_pf, WAIT_MS);
  CHECK(ap > 0, "no agents port from shard %d", i);
  snprintf(T.feed_addr[i], sizeof T.feed_addr[i], "127.0.0.1:%d", fp);
  snprintf(T.agents_addr[i], sizeof T.agents_addr[i], "127.0.0.1:%d", ap);
  T.agents_port[i] = (uint16_t)ap;
}

static void start_la(int i, const char *host) {
  char list[200];
  T.la[i] = la_td_new("la-localagent");
  CHECK(T.la[i] != NULL, "no la-localagent");
  snprintf(list, sizeof list, "%s,%s", T.agents_addr[0], T.agents_addr[1]);
  CHECK(la_test_start_la(T.la[i], list, T.key, host, WAIT_MS, T.la_addr[i],
                         sizeof T.la_addr[i]) == 0,
        "la-localagent %d did not start", i);
}

static void wait_linked(int i) {
  char v[64] = "";
  CHECK(la_test_wait_linked(T.la[i], WAIT_MS, v, sizeof v) == 0,
        "LocalAgent %d not linked to both shards: %s", i, v);
}

/* ------------------------------------------------------------- store --- */

static void db_wait(long long min, const char *sql) {
  long long end = la_td_now_ms() + WAIT_MS;
  while (la_test_pg_value(T.url, sql) < min) {
    CHECK(la_td_now_ms() < end, "store: %s stayed below %lld (is %lld)", sql,
          min, la_test_pg_value(T.url, sql));
    la_td_nap_ms(20);
  }
}

/* ------------------------------------------------------ applications --- */

static char mpiexec[600], wavetoy[1100];

/* Starts app's MPMD wavetoy run in the background in its own process
 * group: ranks 0-1 on nodeA's LocalAgent, 2-3 on nodeB's. */
static void spawn_app(int k, const char *outf) {
  char ag[NLA][100], id[200], per[40];
  snprintf(id, sizeof id, "LA_APP_ID=%s", T.app[k]);
  snprintf(per, sizeof per, "LA_PERIOD=%d", PERIOD);
  la_td_argv_t v;
  la_td_argv_init(&v);
  la_td_argv_add(&v, "%s", mpiexec);
  for (int i = 0; i < NLA; i++) {
    snprintf(ag[i], sizeof ag[i], "LA_AGENT=%s", T.la_addr[i]);
    const char *env[] = {ag[i], id, per, "LA_BUFFERS=16", NULL};
    la_test_wavetoy_ranks(&v, i > 0, 2, env, wavetoy, WT_N, STEPS);
  }
  pid_t pid = la_test_spawn_group(v.v, NULL, outf);
  assert_true(pid > 0);
  T.bg[k] = pid;
}

/* Every application's run, its output beside the second shard's files. */
static void spawn_apps(void) {
  for (int k = 0; k < NAPP; k++) {
    char name[64], outf[700];
    snprintf(name, sizeof name, "wavetoy-%d.out", k);
    la_td_path(T.ga[1], name, outf, sizeof outf);
    spawn_app(k, outf);
  }
}

static int bg_wait(int k, int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  int st = 0;
  for (;;) {
    pid_t r = waitpid(T.bg[k], &st, WNOHANG);
    if (r == T.bg[k]) break;
    CHECK(la_td_now_ms() < end, "the run of %s did not end", T.app[k]);
    la_td_nap_ms(20);
  }
  T.bg[k] = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---------------------------------------------------------------- test -- */

/* PostgreSQL, two shards on it, two LocalAgents linked to both, and one
 * application id homed on each shard. 1: something is missing (skip). */
static int shards_up(void) {
  char why[2000], p[1024];
  int r = la_test_pg_start(0, &T.pg, why, sizeof why);
  if (r == 1) {
    print_message("skip: %s\n", why);
    return 1;
  }
  CHECK(r == 0, "%s", why);
  if (la_td_find_bin("la-globalagent", p, sizeof p) ||
      la_td_find_bin("la-localagent", p, sizeof p) ||
      la_td_find_bin("lactl", p, sizeof p)) {
    print_message("skip: the daemons or lactl are not built\n");
    return 1;
  }
  if (la_td_find_on_path("mpiexec", mpiexec, sizeof mpiexec) != 0) {
    print_message("skip: mpiexec not found on PATH (install mpich)\n");
    return 1;
  }
  if (la_td_find_bin("../examples/wavetoy", wavetoy, sizeof wavetoy) != 0) {
    print_message("skip: wavetoy not built\n");
    return 1;
  }
  CHECK(la_test_pg_createdb(T.pg, "la_shards", T.url, sizeof T.url, why,
                            sizeof why) == 0,
        "%s", why);
  /* one application homed on each shard */
  for (int k = 0, i = 0; k < NAPP; i++) {
    char id[64];
    snprintf(id, sizeof id, "wt-shard-%d", i);
    if (home_shard(id, NGA) == k)
      snprintf(T.app[k++], sizeof T.app[0], "%s", id);
  }
  for (int i = 0; i < NGA; i++) {
    T.ga[i] = la_td_new("la-globalagent");
    CHECK(T.ga[i] != NULL, "no la-globalagent");
  }
  la_td_path(T.ga[0], "secret", T.key, sizeof T.key);
  assert_int_equal(la_auth_init(), 0);
  assert_int_equal(la_auth_generate_secret_file(T.key, why, sizeof why), 0);
  for (int i = 0; i < NGA; i++) start_ga(i);
  start_la(0, "nodeA");
  start_la(1, "nodeB");
  wait_linked(0);
  wait_linked(1);
  return 0;
}

static void test_shards_kill_one(void **state) {
  if (shards_up()) skip();
  /* a subscriber to every application at the shard that survives: it gets
   * the sets the other shard closes too */
  assert_int_equal(la_client_connect(T.feed_addr[1], 5000, &T.sub), 0);
  assert_int_equal(la_client_subscribe(T.sub, NULL, 0), 0);
  /* and one given the shard list: it is connected to the first shard,
   * which dies; it goes on at the other by itself */
  char list[200];
  snprintf(list, sizeof list, "%s,%s", T.feed_addr[0], T.feed_addr[1]);
  assert_int_equal(la_client_connect(list, 5000, &T.sub2), 0);
  assert_int_equal(la_client_subscribe(T.sub2, NULL, 0), 0);
  spawn_apps();
  /* nodeB is held once it delivered something of the first shard's
   * application: that application's next sets stay open in the store with
   * ranks 0-1 (nodeA's) only, the second shard's too */
  char sql[400];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM traces WHERE app_id = '%s' AND rank >= 2",
           T.app[0]);
  db_wait(1, sql);
  la_td_signal(T.la[1], SIGSTOP);
  /* what nodeB had written still arrives: wait until the first shard has
   * read all of it (nothing in flight, per the kernel), then until it is
   * stored: two group commits of that shard (nodeA's traces keep coming)
   * that stored none of it */
  int nconn = 0;
  CHECK(la_tt_wait_drained(la_td_pid(T.la[1]), T.agents_port[0], WAIT_MS,
                           &nconn) == 0 &&
            nconn > 0,
        "nodeB's %d connection(s) to the first shard still hold bytes in "
        "flight after %d ms",
        nconn, WAIT_MS);
  long long prev = -1, now_n = la_test_pg_value(T.url, sql),
            commits = la_td_status_ll(T.ga[0], "commits");
  for (long long e = la_td_now_ms() + WAIT_MS;
       now_n != prev && la_td_now_ms() < e;) {
    prev = now_n;
    while (la_td_status_ll(T.ga[0], "commits") < commits + 2 &&
           la_td_now_ms() < e)
      la_td_nap_ms(10);
    commits = la_td_status_ll(T.ga[0], "commits");
    now_n = la_test_pg_value(T.url, sql);
  }
  CHECK(now_n == prev, "nodeB's traces still being stored after %d ms",
        WAIT_MS);
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM trace_sets WHERE app_id = '%s' AND "
           "closed = 0 AND n_ranks_present = 2",
           T.app[0]);
  db_wait(1, sql);
  for (int k = 0; k < NAPP; k++)
    CHECK(waitpid(T.bg[k], NULL, WNOHANG) == 0,
          "the run of %s ended before the kill", T.app[k]);
  /* the first shard dies with those sets open; nodeB goes on */
  la_td_signal(T.ga[0], SIGKILL);
  assert_int_equal(la_td_wait_exit(T.ga[0], WAIT_MS), 128 + SIGKILL);
  /* the list subscriber notices at its next call: the sets of before the
   * kill it had not read are gone with the connection; it reconnects */
  for (;;) {
    la_traceset_t *t = NULL;
    int rc2 = la_client_next(T.sub2, 300, &t);
    la_traceset_free(t);
    if (rc2 == LA_ETIMEDOUT) break;
    CHECK(rc2 == 0, "list subscriber after the kill: %s",
          la_client_error(T.sub2));
  }
  la_td_signal(T.la[1], SIGCONT);
  for (int k = 0; k < NAPP; k++) {
    int st = bg_wait(k, 120000);
    CHECK(st == 0, "wavetoy of %s exited %d", T.app[k], st);
  }
  /* the live shard's status names its PostgreSQL store and its size */
  char store[1100];
  la_td_status(T.ga[1], "store", store, sizeof store);
  CHECK(strstr(store, "la_shards") != NULL && !strstr(store, "password"),
        "store %s", store);
  CHECK(la_td_status_ll(T.ga[1], "store_bytes") > 0, "store_bytes %lld",
        la_td_status_ll(T.ga[1], "store_bytes"));
  /* each LocalAgent's status names every shard's link: the dead shard's
   * is not connected, the live one's is */
  for (int i = 0; i < NLA; i++) {
    char links[1024], want[128];
    la_td_status(T.la[i], "global_links", links, sizeof links);
    snprintf(want, sizeof want, "%s connected", T.agents_addr[1]);
    CHECK(strstr(links, want) != NULL, "global_links of %d: %s", i, links);
    snprintf(want, sizeof want, "%s connected", T.agents_addr[0]);
    CHECK(strstr(links, T.agents_addr[0]) && !strstr(links, want),
          "global_links of %d: %s", i, links);
  }
  /* everything ends, is acknowledged (by the surviving shard) and closed */
  for (int i = 0; i < NLA; i++)
    CHECK(la_td_wait_status_at_most(T.la[i], "queue_items", 0, WAIT_MS) == 0,
          "LocalAgent %d still holds %lld messages", i,
          la_td_status_ll(T.la[i], "queue_items"));
  db_wait(2 * NAPP * 2, "SELECT count(*) FROM ranks WHERE ended = 1");
  db_wait(1,
          "SELECT CASE WHEN count(*) = 0 THEN 1 ELSE 0 END FROM "
          "trace_sets WHERE closed = 0");
  for (int k = 0; k < NAPP; k++) {
    const char *a = T.app[k];
    long long n = la_test_pg_valuef(
        T.url, "SELECT count(*) FROM traces WHERE app_id = '%s'", a);
    long long d = la_test_pg_valuef(
        T.url,
        "SELECT count(*) FROM (SELECT DISTINCT cycle_tag, rank"
        " FROM traces WHERE app_id = '%s') x",
        a);
    CHECK(n == 4 * CYCLES && d == n,
          "%s: %lld traces (%lld distinct), %d "
          "expected",
          a, n, d, 4 * CYCLES);
    long long sets = la_test_pg_valuef(
        T.url, "SELECT count(*) FROM trace_sets WHERE app_id = '%s'", a);
    long long complete =
        la_test_pg_valuef(T.url,
                          "SELECT count(*) FROM trace_sets WHERE app_id"
                          " = '%s' AND closed = 1 AND complete = 1",
                          a);
    CHECK(sets == CYCLES && complete == CYCLES,
          "%s: %lld sets, %lld complete, %d expected", a, sets, complete,
          CYCLES);
    CHECK(
        la_test_pg_valuef(
            T.url, "SELECT count(*) FROM missing WHERE app_id = '%s'", a) == 0,
        "%s: missing records", a);
  }
  /* the surviving shard took the first application over */
  CHECK(la_td_log_has(T.la[0], "moving to"),
        "nodeA never moved an application to the other shard");
  /* lactl and libla_client given both shards skip the dead one */
  char both[200];
  snprintf(both, sizeof both, "%s,%s", T.feed_addr[0], T.feed_addr[1]);
  /* lactl and libla_client find both applications at the surviving shard */
  char lactl[1024], out[8192];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  const char *argv[] = {lactl, "apps", "--global", both, NULL};
  int rc = la_td_run(argv, NULL, WAIT_MS, out, sizeof out);
  CHECK(rc == 0, "lactl apps exited %d:\n%s", rc, out);
  for (int k = 0; k < NAPP; k++)
    CHECK(strstr(out, T.app[k]), "lactl apps lacks %s:\n%s", T.app[k], out);
  /* and straight from the shared database, read-only */
  const char *argv_db[] = {lactl, "apps", "--db", T.url, NULL};
  rc = la_td_run(argv_db, NULL, WAIT_MS, out, sizeof out);
  CHECK(rc == 0, "lactl apps --db exited %d:\n%s", rc, out);
  for (int k = 0; k < NAPP; k++)
    CHECK(strstr(out, T.app[k]), "lactl apps --db lacks %s:\n%s", T.app[k],
          out);
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(both, 5000, &c), 0);
  for (int k = 0; k < NAPP; k++) {
    la_traceset_t *t = NULL;
    rc = la_client_latest(c, T.app[k], &t);
    CHECK(rc == 0, "latest set of %s: %s", T.app[k], la_client_error(c));
    la_traceset_free(t);
  }
  la_client_close(c);
  /* the subscriber at the surviving shard received every set of both
   * applications, complete, whichever shard closed it */
  int got[NAPP][CYCLES] = {{0}};
  for (;;) {
    la_traceset_t *t = NULL;
    rc = la_client_next(T.sub, 2000, &t);
    if (rc == LA_ETIMEDOUT) break;
    CHECK(rc == 0, "subscriber: %s", la_client_error(T.sub));
    for (int k = 0; k < NAPP; k++) {
      uint64_t cyc = la_traceset_cycle(t) / PERIOD;
      if (!strcmp(la_traceset_app_id(t), T.app[k]) && cyc < CYCLES &&
          la_traceset_complete(t))
        got[k][cyc] = 1;
    }
    la_traceset_free(t);
  }
  for (int k = 0; k < NAPP; k++)
    for (int y = 0; y < CYCLES; y++)
      CHECK(got[k][y], "the subscriber never got %s cycle %d complete",
            T.app[k], y * PERIOD);
  /* the list subscriber got the sets closed after the kill (the last
   * cycle of each application closes at its end) from the other shard */
  int last[NAPP] = {0};
  for (;;) {
    la_traceset_t *t = NULL;
    rc = la_client_next(T.sub2, 2000, &t);
    if (rc == LA_ETIMEDOUT) break;
    CHECK(rc == 0, "list subscriber: %s", la_client_error(T.sub2));
    for (int k = 0; k < NAPP; k++)
      if (!strcmp(la_traceset_app_id(t), T.app[k]) &&
          la_traceset_cycle(t) == (uint64_t)(CYCLES - 1) * PERIOD &&
          la_traceset_complete(t))
        last[k] = 1;
    la_traceset_free(t);
  }
  for (int k = 0; k < NAPP; k++)
    CHECK(last[k], "the list subscriber never got %s's last cycle",
          T.app[k]);
}

/* Each application's stored traces and sets: every (rank, cycle) once,
 * every set closed complete, nothing recorded missing. */
static void all_stored_complete(void) {
  for (int k = 0; k < NAPP; k++) {
    const char *a = T.app[k];
    long long n = la_test_pg_valuef(
        T.url, "SELECT count(*) FROM traces WHERE app_id = '%s'", a);
    long long complete =
        la_test_pg_valuef(T.url,
                          "SELECT count(*) FROM trace_sets WHERE app_id"
                          " = '%s' AND closed = 1 AND complete = 1",
                          a);
    long long missing = la_test_pg_valuef(
        T.url, "SELECT count(*) FROM missing WHERE app_id = '%s'", a);
    CHECK(n == 4 * CYCLES && complete == CYCLES && missing == 0,
          "%s: %lld traces (%d expected), %lld sets complete (%d), %lld "
          "missing records",
          a, n, 4 * CYCLES, complete, CYCLES, missing);
  }
}

/* The database stops for a few seconds under two shards while two jobs
 * run: the shards say their store is unavailable, the LocalAgents wait
 * for their shard instead of moving (no job split over two shards), and
 * once the database is back every trace is stored once and every set
 * closes complete. */
static void test_shards_database_outage(void **state) {
  if (shards_up()) skip();
  spawn_apps();
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM traces WHERE app_id = '%s'", T.app[0]);
  db_wait(1, sql);
  assert_int_equal(la_test_pg_halt(T.pg), 0);
  /* a shard finds out at its next transaction, and says so */
  char st[400] = "";
  for (long long end = la_td_now_ms() + WAIT_MS;
       strncmp(st, "unavailable", 11) != 0 && la_td_now_ms() < end;) {
    la_td_nap_ms(100);
    for (int i = 0; i < NGA && strncmp(st, "unavailable", 11) != 0; i++)
      la_td_status(T.ga[i], "store_state", st, sizeof st);
  }
  CHECK(!strncmp(st, "unavailable", 11), "store_state %s", st);
  /* the jobs go on; their cycles wait in the logs: the outage lasts until
   * the LocalAgents hold 4 more messages than when it was seen (or the
   * jobs ended) */
  long long q0 = 0, q = 0;
  for (int i = 0; i < NLA; i++) q0 += la_td_status_ll(T.la[i], "queue_items");
  for (long long end = la_td_now_ms() + WAIT_MS; la_td_now_ms() < end;) {
    q = 0;
    for (int i = 0; i < NLA; i++) q += la_td_status_ll(T.la[i], "queue_items");
    int running = 0;
    for (int k = 0; k < NAPP; k++) { /* not reaped: bg_wait does that */
      siginfo_t si = {0};
      running += waitid(P_PID, (id_t)T.bg[k], &si,
                        WEXITED | WNOHANG | WNOWAIT) == 0 &&
                 si.si_pid == 0;
    }
    if (q >= q0 + 4 || !running) break;
    la_td_nap_ms(20);
  }
  char why[2000] = "";
  CHECK(la_test_pg_resume(T.pg, why, sizeof why) == 0, "%s", why);
  for (int k = 0; k < NAPP; k++) {
    int code = bg_wait(k, 120000);
    CHECK(code == 0, "wavetoy of %s exited %d", T.app[k], code);
  }
  for (int i = 0; i < NLA; i++)
    CHECK(la_td_wait_status_at_most(T.la[i], "queue_items", 0, WAIT_MS) == 0,
          "LocalAgent %d still holds %lld messages", i,
          la_td_status_ll(T.la[i], "queue_items"));
  db_wait(1,
          "SELECT CASE WHEN count(*) = 0 THEN 1 ELSE 0 END FROM "
          "trace_sets WHERE closed = 0");
  all_stored_complete();
  for (int i = 0; i < NLA; i++)
    CHECK(!la_td_log_has(T.la[i], "moving to"),
          "LocalAgent %d moved an application during the outage", i);
  for (int i = 0; i < NGA; i++) {
    la_td_status(T.ga[i], "store_state", st, sizeof st);
    CHECK(!strcmp(st, "available"), "shard %d store_state %s", i, st);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_shards_database_outage, teardown),
      cmocka_unit_test_teardown(test_shards_kill_one, teardown),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
