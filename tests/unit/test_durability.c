/* test_durability.c: a LocalAgent killed with SIGKILL loses nothing it took.
 *
 * Real daemons (build/bin/la-localagent, build/bin/la-globalagent, started
 * as children by tests/support/la_test_daemon.h) and a real libla
 * application (a forked child that registers, probes and calls
 * LA_dataXferTagged, one cycle per byte the test sends it). Each scenario
 * kills the LocalAgent with SIGKILL at one moment, lets the application
 * finish (libla notices the dead agent and stops profiling), restarts the
 * agent on the same log directory, starts the GlobalAgent, waits until the
 * agent has nothing unacknowledged, and then checks, for every cycle the
 * agent had taken before the kill (its cycles_received status row just
 * before the kill), that the GlobalAgent's store holds the trace or that
 * the cycle was recorded missing with a reason (TraceMissing: the
 * GlobalAgent logs it; the agent counts it). The rank the killed agent had
 * registered must end with reason "LocalAgent restarted".
 *
 * Scenarios: GlobalAgent down the whole time, kill after the first cycles
 * were compacted; GlobalAgent down, kill right after cycles were received
 * (compactions probably in flight); GlobalAgent up, kill mid-run (the last
 * unacknowledged cycles used to be lost); large buffers, kill while a
 * compaction is in flight (then "LocalAgent crashed while compacting");
 * SIGTERM with large compactions in flight (they finish into the log).
 * Each prints how many taken cycles were stored, recorded missing and lost.
 *
 * Every wait is bounded; teardown kills the child and both daemons and
 * removes their directories. Tests skip when the daemons are not built.
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "la.h"
#include "la_auth.h"
#include "la_test_daemon.h"
#include "la_test_stack.h"
#include "la_test_sql.h"

#define WAIT_MS 20000
#define MAXC 64

static struct {
  la_test_daemon_t *ga, *la;
  char key[600], db[600], agents_pf[600], feed_pf[600], log_dir[600];
  uint16_t agents_port;
  char ga_addr[64];
  pid_t kid;
  int go, res; /* pipes to and from the application */
} T;

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  T.go = T.res = -1;
  T.ga = la_td_new("la-globalagent");
  T.la = la_td_new("la-localagent");
  if (T.ga && T.la) {
    la_td_path(T.la, "log", T.log_dir, sizeof T.log_dir);
    if (la_ts_ga_files(T.ga, sizeof T.key, T.key, T.db, T.agents_pf,
                       T.feed_pf) != 0)
      return -1;
  }
  return 0;
}

static int teardown(void **state) {
  if (T.kid > 0) {
    kill(T.kid, SIGKILL);
    while (waitpid(T.kid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  if (T.go >= 0) close(T.go);
  if (T.res >= 0) close(T.res);
  la_td_free(T.la);
  la_td_free(T.ga);
  return 0;
}

static void dump_logs(void) {
  la_td_print_log_tail(T.la, 3000);
  la_td_print_log_tail(T.ga, 3000);
}

#define CHECK(cond, ...) LA_TD_CHECK(dump_logs(), cond, __VA_ARGS__)

static void need_daemons(void) {
  if (!T.ga || !T.la) {
    print_message("skip: la-globalagent or la-localagent not built\n");
    skip();
  }
}

/* ------------------------------------------------------------ daemons -- */

/* Starts the GlobalAgent; port 0 picks one (remembered for restarts). */
static void start_ga(uint16_t port) {
  la_td_argv_t a;
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agents.listen=127.0.0.1:%u", port);
  la_ts_ga_args(&a, T.agents_pf, T.feed_pf, T.db, T.key);
  la_td_argv_add(&a, "--feed.listen=127.0.0.1:0");
  la_td_argv_add(&a, "--stitch.timeout=2s");
  la_td_argv_add(&a, "--log.level=debug");
  unlink(T.agents_pf);
  int p = la_td_start(T.ga, a.v, T.feed_pf, WAIT_MS);
  CHECK(p > 0, "la-globalagent did not start");
  FILE *f = fopen(T.agents_pf, "r");
  unsigned v = 0;
  CHECK(f && fscanf(f, "%u", &v) == 1 && v > 0 && v < 65536,
        "no agents port file");
  fclose(f);
  T.agents_port = (uint16_t)v;
  snprintf(T.ga_addr, sizeof T.ga_addr, "127.0.0.1:%u", T.agents_port);
}

/* Starts the LocalAgent on the fixture's log directory. */
static void start_la(const char *const *extra) {
  char pf[600];
  la_td_argv_t a;
  la_td_path(T.la, "port", pf, sizeof pf);
  la_td_argv_init(&a);
  la_ts_la_args(&a, pf, T.log_dir, T.ga_addr, T.key);
  la_ts_la_test_opts(&a);
  la_td_argv_extend(&a, extra);
  int p = la_td_start(T.la, a.v, pf, WAIT_MS);
  CHECK(p > 0, "la-localagent did not start");
}

static long long la_status(const char *key) {
  return la_td_status_ll(T.la, key);
}

static void la_wait_status(const char *key, long long min) {
  CHECK(la_td_wait_status(T.la, key, min, WAIT_MS) == 0,
        "LocalAgent status %s did not reach %lld (is %lld)", key, min,
        la_status(key));
}

/* ------------------------------------------------------- application -- */

typedef struct rec {
  int64_t tag;
  int32_t rc, pad;
} rec_t;

/* The application: registers n elements, then one cycle per byte on go
 * (the byte's value is ignored; EOF ends the run), reporting each
 * LA_dataXferTagged's result; finalizes. */
static void app_main(int go, int res, long n, int buffers, const char *app) {
  LA_setAgent(la_td_addr(T.la));
  LA_setAppId(app);
  LA_setPeriod(1);
  LA_setBuffers(buffers);
  LA_setPolicy(LA_POLICY_WAIT);
  setenv("LA_WAIT_TIMEOUT_MS", "3000", 1);
  rec_t r = {-1, LA_register("durable", 0, 1, n), 0};
  if (write(res, &r, sizeof r) != sizeof r) _exit(2);
  if (r.rc != 0) _exit(1);
  char c;
  for (int64_t tag = 0;; tag++) {
    ssize_t got;
    while ((got = read(go, &c, 1)) < 0 && errno == EINTR) {
    }
    if (got != 1) break;
    for (long e = 0; e < n; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    r.tag = tag;
    r.rc = LA_dataXferTagged((uint64_t)tag);
    if (write(res, &r, sizeof r) != sizeof r) _exit(2);
  }
  LA_finalize();
  _exit(0);
}

static void spawn_app(long n, int buffers, const char *app) {
  int go[2], res[2];
  assert_int_equal(pipe(go), 0);
  assert_int_equal(pipe(res), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(go[1]);
    close(res[0]);
    app_main(go[0], res[1], n, buffers, app);
  }
  close(go[0]);
  close(res[1]);
  T.kid = pid;
  T.go = go[1];
  T.res = res[0];
  rec_t r;
  CHECK(read(T.res, &r, sizeof r) == sizeof r && r.rc == 0,
        "the application did not register");
}

/* Runs k more cycles; returns how many LA_dataXferTagged calls returned 0. */
static int app_cycles(int k, int *handed) {
  int ok = 0;
  for (int i = 0; i < k; i++) {
    rec_t r;
    CHECK(write(T.go, "c", 1) == 1, "the application is gone");
    CHECK(read(T.res, &r, sizeof r) == sizeof r, "no answer from the app");
    if (r.rc == 0) {
      ok++;
      if (r.tag >= 0 && r.tag < MAXC) handed[r.tag] = 1;
    }
  }
  return ok;
}

static void app_finish(void) {
  close(T.go);
  T.go = -1;
  int st = 0;
  long long end = la_td_now_ms() + WAIT_MS;
  pid_t w;
  while ((w = waitpid(T.kid, &st, WNOHANG)) == 0 && la_td_now_ms() < end)
    la_td_nap_ms(10);
  CHECK(w == T.kid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the application did not finish cleanly (status %d)", st);
  T.kid = 0;
}

/* -------------------------------------------------------------- store -- */

/* The store's first value of a query (la_test_sql.h). */
#define db_ll(...) la_test_sql_ll(T.db, __VA_ARGS__)

/* Whether the GlobalAgent's store records cycle tag of app rank 0 as
 * missing (the `missing` table); the reason goes into why. */
static int missing_logged(const char *app, int tag, char *why, size_t len) {
  char reason[1][64];
  if (la_test_sql_texts(T.db, reason, 1,
                        "SELECT reason FROM missing WHERE app_id='%s' AND "
                        "cycle_tag=%d AND rank=0",
                        app, tag) != 1)
    return 0;
  snprintf(why, len, "%s", reason[0]);
  return 1;
}

/* ----------------------------------------------------------- scenario -- */

enum { KILL_AFTER_COMPACTED, KILL_AFTER_RECEIVED, KILL_WHILE_PENDING };

typedef struct scen {
  const char *app;
  int ga_up;  /* GlobalAgent running during the application */
  long n;     /* elements */
  int before; /* cycles before the kill */
  int after;  /* cycles after it (the application finds no agent) */
  int moment;
  int term; /* stop with SIGTERM (drain_timeout 0), not SIGKILL */
} scen_t;

static void run_scenario(const scen_t *sc) {
  need_daemons();
  int handed[MAXC] = {0};
  start_ga(0); /* learn a port for the GlobalAgent */
  uint16_t port = T.agents_port;
  if (!sc->ga_up) CHECK(la_td_stop(T.ga, WAIT_MS) == 0, "GA stop");
  const char *no_drain[] = {"--agent.drain_timeout=0", NULL};
  start_la(sc->term ? no_drain : NULL);
  spawn_app(sc->n, 3, sc->app);
  la_wait_status("registrations", 1);

  long long taken = 0;
  if (sc->moment == KILL_WHILE_PENDING) {
    /* cycles one by one until a compaction is seen in flight */
    for (int i = 0; i < sc->before; i++) {
      app_cycles(1, handed);
      long long end = la_td_now_ms() + 2000, p = 0;
      while ((p = la_status("jobs_in_flight")) == 0 &&
             la_status("cycles_received") < i + 1 && la_td_now_ms() < end) {
      }
      if (p > 0) break;
    }
    taken = la_status("cycles_received");
  } else {
    app_cycles(sc->before, handed);
    la_wait_status("cycles_received", sc->before);
    if (sc->moment == KILL_AFTER_COMPACTED)
      la_wait_status("cycles_compacted", sc->before);
    taken = la_status("cycles_received");
  }
  CHECK(taken > 0, "no cycle reached the agent");
  if (sc->term) {
    /* drain_timeout 0: exit without waiting for acknowledgements */
    CHECK(la_td_signal(T.la, SIGTERM) == 0, "signal");
    CHECK(la_td_wait_exit(T.la, WAIT_MS) == 0, "no clean exit");
  } else {
    CHECK(la_td_signal(T.la, SIGKILL) == 0, "kill");
    CHECK(la_td_wait_exit(T.la, WAIT_MS) == 128 + SIGKILL, "not killed");
  }

  /* the application goes on without its agent */
  app_cycles(sc->after, handed);
  app_finish();

  la_td_log_mark(T.la);
  start_la(NULL);
  if (!sc->ga_up) start_ga(port);
  long long end = la_td_now_ms() + WAIT_MS;
  char link[64] = "";
  while ((la_td_status(T.la, "global_link", link, sizeof link) != 0 ||
          strcmp(link, "connected") != 0 || la_status("queue_items") != 0 ||
          la_status("cycles_pending") > 0) &&
         la_td_now_ms() < end)
    la_td_nap_ms(20);
  CHECK(la_status("queue_items") == 0,
        "the restarted agent still has %lld "
        "unacknowledged messages",
        la_status("queue_items"));

  int stored = 0, missing = 0, lost = 0, handed_n = 0;
  char why[300];
  for (int c = 0; c < MAXC; c++) handed_n += handed[c];
  for (int c = 0; c < taken; c++) {
    CHECK(handed[c], "cycle %d reached the agent but the app saw an error", c);
    if (db_ll("SELECT count(*) FROM traces WHERE app_id='%s' AND "
              "cycle_tag=%d AND rank=0",
              sc->app, c) == 1) {
      stored++;
    } else if (missing_logged(sc->app, c, why, sizeof why)) {
      missing++;
      CHECK(strstr(why, "LocalAgent") != NULL, "cycle %d: reason '%s'", c, why);
    } else {
      lost++;
      print_message(
          "cycle %d taken by the agent: neither stored nor "
          "recorded missing\n",
          c);
    }
  }
  print_message(
      "%s: %d cycles handed over, %lld taken by the agent before "
      "the kill: %d stored, %d recorded missing, %d lost\n",
      sc->app, handed_n, taken, stored, missing, lost);
  CHECK(lost == 0, "%d taken cycles lost", lost);
  /* the killed agent's rank is ended, with the reason */
  if (sc->term) { /* a clean stop ended the rank itself */
    CHECK(db_ll("SELECT count(*) FROM ranks WHERE app_id='%s' AND rank=0 "
                "AND ended=1",
                sc->app) == 1,
          "rank 0 of %s not ended", sc->app);
    return;
  }
  CHECK(db_ll("SELECT count(*) FROM ranks WHERE app_id='%s' AND rank=0 AND "
              "ended=1 AND end_reason='LocalAgent restarted'",
              sc->app) == 1,
        "rank 0 of %s not ended with 'LocalAgent restarted'", sc->app);
  CHECK(la_status("ranks_ended_at_restart") == 1, "ranks_ended_at_restart");
  CHECK(la_status("missing_at_restart") >= missing,
        "missing_at_restart %lld < %d", la_status("missing_at_restart"),
        missing);
}

static void test_kill_ga_down_after_compaction(void **state) {
  scen_t sc = {"durable-a", 0, 5000, 8, 3, KILL_AFTER_COMPACTED, 0};
  run_scenario(&sc);
}

static void test_kill_ga_down_after_receipt(void **state) {
  scen_t sc = {"durable-b", 0, 200000, 12, 2, KILL_AFTER_RECEIVED, 0};
  run_scenario(&sc);
}

static void test_kill_ga_up_mid_run(void **state) {
  scen_t sc = {"durable-c", 1, 50000, 10, 2, KILL_AFTER_RECEIVED, 0};
  run_scenario(&sc);
}

static void test_kill_while_compacting(void **state) {
  scen_t sc = {"durable-d", 0, 1 << 21, 10, 1, KILL_WHILE_PENDING, 0};
  run_scenario(&sc);
}

/* SIGTERM with drain_timeout 0 (exit without waiting for acks) with large
 * compactions in flight and no GlobalAgent: the compactions finish into the
 * log before the agent exits, and the next start sends them (on main the
 * trace was freed after the queue had been spooled). */
static void test_stop_with_compactions_in_flight(void **state) {
  scen_t sc = {"durable-e", 0, 1 << 22, 10, 1, KILL_WHILE_PENDING, 1};
  run_scenario(&sc);
}

/* A torn last record (the agent killed inside write(2)) is cut off at the
 * next start, which says so, and everything before it is sent. */
static void test_torn_log_tail(void **state) {
  need_daemons();
  int handed[MAXC] = {0};
  start_ga(0);
  uint16_t port = T.agents_port;
  CHECK(la_td_stop(T.ga, WAIT_MS) == 0, "GA stop");
  start_la(NULL);
  spawn_app(3000, 3, "durable-t");
  app_cycles(5, handed);
  la_wait_status("cycles_compacted", 5);
  CHECK(la_td_signal(T.la, SIGKILL) == 0, "kill");
  la_td_wait_exit(T.la, WAIT_MS);
  app_finish();
  /* half a record at the end of the newest segment */
  char seg[700];
  snprintf(seg, sizeof seg, "%s/%020d.laseg", T.log_dir, 1);
  FILE *f = fopen(seg, "ab");
  CHECK(f != NULL, "no segment %s", seg);
  fwrite("\x40\x00\x00\x00garbage", 1, 11, f);
  fclose(f);
  la_td_log_mark(T.la);
  start_la(NULL);
  CHECK(la_td_wait_log(T.la, "cut short or corrupt", WAIT_MS) == 0,
        "no log line about the torn tail");
  CHECK(la_status("log_torn_bytes") == 11, "log_torn_bytes %lld",
        la_status("log_torn_bytes"));
  start_ga(port);
  long long end = la_td_now_ms() + WAIT_MS;
  while (db_ll("SELECT count(*) FROM traces WHERE app_id='durable-t'") < 5 &&
         la_td_now_ms() < end)
    la_td_nap_ms(20);
  CHECK(db_ll("SELECT count(*) FROM traces WHERE app_id='durable-t'") == 5,
        "traces stored: %lld",
        db_ll("SELECT count(*) FROM traces WHERE app_id='durable-t'"));
}

/* A log directory writable by others is refused with a clear error. */
static void test_unsafe_log_dir_refused(void **state) {
  need_daemons();
  CHECK(mkdir(T.log_dir, 0777) == 0 && chmod(T.log_dir, 0777) == 0, "mkdir");
  char pf[600], a1[700];
  la_td_path(T.la, "port", pf, sizeof pf);
  snprintf(a1, sizeof a1, "--global.spool_dir=%s", T.log_dir);
  const char *args[] = {"--agent.listen=127.0.0.1:0", a1,
                        "--global.address=", NULL};
  la_td_start(T.la, args, NULL, WAIT_MS);
  CHECK(la_td_wait_exit(T.la, WAIT_MS) == 1, "the agent did not refuse");
  CHECK(la_td_log_has(T.la, "writable by group or others"), "no clear error");
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_kill_ga_down_after_compaction),
      T(test_kill_ga_down_after_receipt),
      T(test_kill_ga_up_mid_run),
      T(test_kill_while_compacting),
      T(test_stop_with_compactions_in_flight),
      T(test_torn_log_tail),
      T(test_unsafe_log_dir_refused),
#undef T
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
