/* SPDX-License-Identifier: BSD-3-Clause */
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
 * A torn last record is cut off (a crash while writing); a flipped byte in
 * a record's payload or length, or in a segment's file header, is damage:
 * the records after it still come back and the damaged cycle is recorded
 * missing with a reason that says so.
 * Each prints how many taken cycles were stored, recorded missing and lost.
 *
 * Every wait is on a condition, bounded by a ceiling that grows with the
 * machine's load (la_td_loaded_ms: the daemons may be ThreadSanitizer
 * builds on a busy machine), and says on failure what it waited for and
 * what it saw. The application waits for a free buffer as long (libla's
 * LA_WAIT_TIMEOUT_MS), so that a slow agent does not make it skip cycles
 * before the kill. Teardown kills the child and both daemons and removes
 * their directories. Tests skip when the daemons are not built.
 */
#include <errno.h>
#include <poll.h>
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

#define WAIT_MS 20000 /* a wait's ceiling on a quiet machine */
#define MAXC 64

static struct {
  la_test_daemon_t *ga, *la;
  char key[600], db[600], agents_pf[600], feed_pf[600], log_dir[600];
  uint16_t agents_port;
  char ga_addr[64];
  pid_t kid;
  int go, res;      /* pipes to and from the application */
  int hold;         /* the GlobalAgent's port while it is down */
  int sent, unsent; /* cycles whose values went to the agent, and not */
} T;

/* The ceiling of every wait of this program, for the machine's load now. */
static int wait_ms(void) {
  return la_td_loaded_ms(WAIT_MS);
}

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  T.go = T.res = T.hold = -1;
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
  la_td_release_port(&T.hold);
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
  la_td_release_port(&T.hold);
  int p = la_td_start(T.ga, a.v, T.feed_pf, wait_ms());
  CHECK(p > 0, "la-globalagent did not start within %d ms", wait_ms());
  FILE *f = fopen(T.agents_pf, "r");
  unsigned v = 0;
  CHECK(f && fscanf(f, "%u", &v) == 1 && v > 0 && v < 65536,
        "no agents port file");
  fclose(f);
  T.agents_port = (uint16_t)v;
  snprintf(T.ga_addr, sizeof T.ga_addr, "127.0.0.1:%u", T.agents_port);
}

/* Stops the GlobalAgent and holds its port until start_ga starts it there
 * again: the LocalAgent started meanwhile (port 0) could be given it. */
static void ga_down(void) {
  CHECK(la_td_stop(T.ga, wait_ms()) == 0, "GA stop");
  T.hold = la_td_hold_port(T.agents_port);
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
  int p = la_td_start(T.la, a.v, pf, wait_ms());
  CHECK(p > 0, "la-localagent did not start within %d ms", wait_ms());
}

static long long la_status(const char *key) {
  return la_td_status_ll(T.la, key);
}

/* Waits until the LocalAgent's status row key is at least min; a failure
 * says what the agent and the application had done by then. */
static void la_wait_status(const char *key, long long min) {
  int ms = wait_ms();
  CHECK(la_td_wait_status(T.la, key, min, ms) == 0,
        "LocalAgent status %s did not reach %lld within %d ms: is %lld "
        "(cycles_received %lld, cycles_compacted %lld, jobs_in_flight %lld, "
        "cycles_skipped_by_apps %lld; the application handed over %d "
        "cycles and skipped %d)",
        key, min, ms, la_status(key), la_status("cycles_received"),
        la_status("cycles_compacted"), la_status("jobs_in_flight"),
        la_status("cycles_skipped_by_apps"), T.sent, T.unsent);
}

/* Waits while the daemons work (la_td_wait_working): until done(arg), as
 * long as the LocalAgent or the GlobalAgent keeps using CPU, failing when
 * neither used any for wait_ms() or after LA_TD_LOAD_SCALE_MAX * WAIT_MS.
 * Their work in a ThreadSanitizer build takes seconds of CPU and many
 * times that in wall time on a busy machine. */
static int wait_working(int (*done)(void *), double *cpu, long long *idle) {
  la_test_daemon_t *const ds[] = {T.la, T.ga};
  return la_td_wait_working(done, NULL, ds, 2, wait_ms(),
                            LA_TD_LOAD_SCALE_MAX * WAIT_MS, cpu, idle);
}

static int la_exit_st;
/* Whether the LocalAgent exited (its status into la_exit_st). */
static int la_exited(void *arg) {
  la_exit_st = la_td_wait_exit(T.la, 0);
  return la_exit_st != -1 || la_td_pid(T.la) <= 0;
}

/* ------------------------------------------------------- application -- */

typedef struct rec {
  int64_t tag;
  int32_t rc;
  int32_t sent; /* 1 when the cycle's values went to the agent */
} rec_t;

/* The application: registers n elements, then one cycle per byte on go
 * (the byte's value is ignored; EOF ends the run), reporting each
 * LA_dataXferTagged's result and whether it handed the cycle to the agent;
 * finalizes. It waits up to wait_ms for a free buffer (a dead agent ends
 * the wait at once). */
static void app_main(int go, int res, long n, int buffers, const char *app,
                     int wait_ms) {
  char wt[32];
  snprintf(wt, sizeof wt, "%d", wait_ms);
  LA_setAgent(la_td_addr(T.la));
  LA_setAppId(app);
  LA_setPeriod(1);
  LA_setBuffers(buffers);
  LA_setPolicy(LA_POLICY_WAIT);
  setenv("LA_WAIT_TIMEOUT_MS", wt, 1);
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
    long profiled = LA_getStat(LA_STAT_PROFILED);
    r.tag = tag;
    r.rc = LA_dataXferTagged((uint64_t)tag);
    r.sent = LA_getStat(LA_STAT_PROFILED) > profiled;
    if (write(res, &r, sizeof r) != sizeof r) _exit(2);
  }
  LA_finalize();
  _exit(0);
}

static void app_read(rec_t *r);

static void spawn_app(long n, int buffers, const char *app) {
  int go[2], res[2];
  assert_int_equal(pipe(go), 0);
  assert_int_equal(pipe(res), 0);
  int ms = wait_ms();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(go[1]);
    close(res[0]);
    app_main(go[0], res[1], n, buffers, app, ms);
  }
  close(go[0]);
  close(res[1]);
  T.kid = pid;
  T.go = go[1];
  T.res = res[0];
  rec_t r;
  app_read(&r);
  CHECK(r.rc == 0, "the application did not register: %d", r.rc);
}

/* The application's next record; it may wait wait_ms for a buffer, so
 * this waits a little longer. */
static void app_read(rec_t *r) {
  int ms = wait_ms() + WAIT_MS;
  struct pollfd p = {T.res, POLLIN, 0};
  int n;
  while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR) {
  }
  CHECK(n == 1, "no answer from the application within %d ms", ms);
  CHECK(read(T.res, r, sizeof *r) == sizeof *r, "the application is gone");
}

/* Runs k more cycles; marks in handed the tags whose LA_dataXferTagged
 * returned 0 and counts in T.sent and T.unsent whether the application
 * handed each one to the agent. */
static void app_cycles(int k, int *handed) {
  for (int i = 0; i < k; i++) {
    rec_t r;
    CHECK(write(T.go, "c", 1) == 1, "the application is gone");
    app_read(&r);
    if (r.rc == 0 && r.tag >= 0 && r.tag < MAXC) handed[r.tag] = 1;
    if (r.sent)
      T.sent++;
    else
      T.unsent++;
  }
}

static int kid_st;
static int kid_exited(void *arg) {
  return waitpid(T.kid, &kid_st, WNOHANG) == T.kid;
}

static void app_finish(void) {
  close(T.go);
  T.go = -1;
  int ms = wait_ms();
  kid_st = 0;
  CHECK(la_td_wait_until(kid_exited, NULL, ms) == 0,
        "the application did not exit within %d ms of its last cycle", ms);
  CHECK(WIFEXITED(kid_st) && WEXITSTATUS(kid_st) == 0,
        "the application did not finish cleanly (status %d)", kid_st);
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

/* Whether the LocalAgent is linked to the GlobalAgent with nothing
 * unacknowledged and no taken cycle still to log. */
static int la_drained(void *arg) {
  char link[64];
  return la_td_status(T.la, "global_link", link, sizeof link) == 0 &&
         strcmp(link, "connected") == 0 && la_status("queue_items") == 0 &&
         la_status("cycles_pending") == 0;
}

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
  if (!sc->ga_up) ga_down();
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
  /* the cycles the agent took are tags 0..taken-1 only if none was
   * skipped (the application waits for a buffer as long as we do) */
  CHECK(T.unsent == 0,
        "the application skipped %d of its first %d cycles (no buffer "
        "within %d ms)",
        T.unsent, T.sent + T.unsent, wait_ms());
  int ms = wait_ms(), st;
  long long t0 = la_td_now_ms();
  if (sc->term) {
    /* drain_timeout 0: exit without waiting for acknowledgements */
    long long in_flight = la_status("jobs_in_flight"), idle;
    double cpu;
    CHECK(la_td_signal(T.la, SIGTERM) == 0, "signal");
    wait_working(la_exited, &cpu, &idle);
    st = la_exit_st;
    CHECK(st == 0,
          "after SIGTERM with %lld compactions in flight the LocalAgent did "
          "not exit with status 0: status %d (-1: still running) after "
          "%lld ms, the daemons having used %.1f s of CPU meanwhile, none "
          "for %lld ms at most",
          in_flight, st, la_td_now_ms() - t0, cpu, idle);
    print_message("%s: %.1f s of CPU after SIGTERM\n", sc->app, cpu);
  } else {
    CHECK(la_td_signal(T.la, SIGKILL) == 0, "kill");
    st = la_td_wait_exit(T.la, ms);
    CHECK(st == 128 + SIGKILL, "SIGKILL: status %d after %d ms", st, ms);
  }
  print_message("%s: the LocalAgent exited %lld ms after the signal\n", sc->app,
                la_td_now_ms() - t0);

  /* the application goes on without its agent */
  app_cycles(sc->after, handed);
  app_finish();

  la_td_log_mark(T.la);
  start_la(NULL);
  if (!sc->ga_up) start_ga(port);
  t0 = la_td_now_ms();
  double cpu;
  long long idle;
  int drained = wait_working(la_drained, &cpu, &idle);
  char link[64] = "";
  la_td_status(T.la, "global_link", link, sizeof link);
  CHECK(drained == 0,
        "the restarted agent did not send everything in %lld ms (the "
        "daemons used %.1f s of CPU, none for %lld ms at most): "
        "global_link '%s', queue_items %lld, cycles_pending %lld, "
        "log_replayed %lld, messages_acked %lld",
        la_td_now_ms() - t0, cpu, idle, link, la_status("queue_items"),
        la_status("cycles_pending"), la_status("log_replayed"),
        la_status("messages_acked"));
  print_message(
      "%s: the restarted agent sent its log in %lld ms (%.1f s of "
      "CPU)\n",
      sc->app, la_td_now_ms() - t0, cpu);

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

static int torn_stored(void *arg) {
  return db_ll("SELECT count(*) FROM traces WHERE app_id='durable-t'") >= 5;
}

/* A torn last record (the agent killed inside write(2)) is cut off at the
 * next start, which says so, and everything before it is sent. */
static void test_torn_log_tail(void **state) {
  need_daemons();
  int handed[MAXC] = {0};
  start_ga(0);
  uint16_t port = T.agents_port;
  ga_down();
  start_la(NULL);
  spawn_app(3000, 3, "durable-t");
  app_cycles(5, handed);
  la_wait_status("cycles_compacted", 5);
  CHECK(la_td_signal(T.la, SIGKILL) == 0, "kill");
  la_td_wait_exit(T.la, wait_ms());
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
  CHECK(la_td_wait_log(T.la, "a crash while writing", wait_ms()) == 0,
        "no log line about the torn tail within %d ms", wait_ms());
  CHECK(la_status("log_torn_bytes") == 11, "log_torn_bytes %lld",
        la_status("log_torn_bytes"));
  CHECK(la_status("log_damaged_bytes") == 0, "log_damaged_bytes %lld",
        la_status("log_damaged_bytes"));
  start_ga(port);
  int ms = wait_ms();
  la_td_wait_until(torn_stored, NULL, ms);
  CHECK(db_ll("SELECT count(*) FROM traces WHERE app_id='durable-t'") == 5,
        "traces of durable-t stored within %d ms: %lld, expected 5", ms,
        db_ll("SELECT count(*) FROM traces WHERE app_id='durable-t'"));
}

/* ------------------------------------------------------- damaged log -- */

/* Offsets of the records of a segment file (walked by their lengths, before
 * any damage); the record of tag's CompactTrace (a MSG record that resolves
 * a cycle of app) goes to *at and its size to *size. Returns the number of
 * records. */
static int seg_records(const char *seg, const char *app, int tag, long *at,
                       long *size) {
  FILE *f = fopen(seg, "rb");
  CHECK(f != NULL, "no segment %s", seg);
  uint8_t h[32];
  long pos = 16;
  int n = 0;
  *at = -1;
  while (fseek(f, pos, SEEK_SET) == 0 && fread(h, 1, 32, f) == 32) {
    uint32_t body = h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24;
    uint64_t cycle = 0;
    for (int i = 7; i >= 0; i--) cycle = cycle << 8 | h[24 + i];
    char id[256] = "";
    size_t alen = (size_t)(h[18] | h[19] << 8);
    CHECK(alen < sizeof id && fread(id, 1, alen, f) == alen, "record");
    /* kind 1 (message) with the "resolves a taken cycle" flag (4) */
    if (h[16] == 1 && (h[17] & 4) && (int)cycle == tag && !strcmp(id, app)) {
      *at = pos;
      *size = 8 + (long)body;
    }
    pos += 8 + (long)body;
    n++;
  }
  fclose(f);
  CHECK(*at >= 0, "no record of %s cycle %d in %s", app, tag, seg);
  return n;
}

static void flip_byte(const char *path, long at) {
  FILE *f = fopen(path, "r+b");
  CHECK(f != NULL, "open %s", path);
  CHECK(fseek(f, at, SEEK_SET) == 0, "seek");
  int c = fgetc(f);
  CHECK(c != EOF, "%s has no byte %ld", path, at);
  CHECK(fseek(f, at, SEEK_SET) == 0 && fputc(c ^ 0x40, f) != EOF, "write");
  fclose(f);
}

enum { DAMAGE_PAYLOAD, DAMAGE_LENGTH, DAMAGE_HEADER };

/* 30 cycles compacted into the log with no GlobalAgent, the agent killed,
 * one byte of its log segment flipped (how), the agent restarted with the
 * GlobalAgent up: every cycle but the damaged one is stored, and the
 * damaged one is recorded missing with a reason that says so. */
static void run_damage(const char *app, int how) {
  need_daemons();
  int handed[MAXC] = {0};
  start_ga(0);
  uint16_t port = T.agents_port;
  ga_down();
  start_la(NULL);
  spawn_app(2000, 3, app);
  app_cycles(30, handed);
  la_wait_status("cycles_compacted", 30);
  CHECK(la_td_signal(T.la, SIGKILL) == 0, "kill");
  la_td_wait_exit(T.la, wait_ms());
  app_finish();
  char seg[700];
  long at = -1, size = 0;
  snprintf(seg, sizeof seg, "%s/%020d.laseg", T.log_dir, 1);
  int n = seg_records(seg, app, 15, &at, &size);
  CHECK(n >= 60,
        "segment 1 holds %d records, expected 30 taken and 30 "
        "traces at least",
        n);
  if (how == DAMAGE_PAYLOAD) flip_byte(seg, at + size / 2);
  if (how == DAMAGE_LENGTH) flip_byte(seg, at + 2); /* length: +4 MiB */
  if (how == DAMAGE_HEADER) flip_byte(seg, 3);      /* "LASEG001" */
  la_td_log_mark(T.la);
  start_la(NULL);
  start_ga(port);
  double cpu;
  long long idle;
  CHECK(wait_working(la_drained, &cpu, &idle) == 0,
        "the restarted agent did not send its log: queue_items %lld",
        la_status("queue_items"));
  int stored = 0, missing = 0, lost = 0;
  char why[300] = "";
  for (int c = 0; c < 30; c++) {
    if (db_ll("SELECT count(*) FROM traces WHERE app_id='%s' AND "
              "cycle_tag=%d AND rank=0",
              app, c) == 1)
      stored++;
    else if (missing_logged(app, c, why, sizeof why))
      missing++;
    else
      lost++;
  }
  print_message(
      "%s: 30 cycles logged, one byte flipped: %d stored, %d "
      "recorded missing ('%s'), %d lost; log_damaged_bytes %lld, "
      "log_torn_bytes %lld\n",
      app, stored, missing, why, lost, la_status("log_damaged_bytes"),
      la_status("log_torn_bytes"));
  CHECK(la_td_log_has(T.la, "damaged"), "no log line about the damage");
  CHECK(!la_td_log_has(T.la, "a crash while writing"),
        "damage blamed on a crash");
  CHECK(la_status("log_torn_bytes") == 0, "log_torn_bytes %lld",
        la_status("log_torn_bytes"));
  long long dmg = la_status("log_damaged_bytes");
  CHECK(how == DAMAGE_HEADER ? dmg == 16 : dmg == size,
        "log_damaged_bytes %lld (the record is %ld bytes)", dmg, size);
  CHECK(lost == 0, "%d cycles lost", lost);
  if (how == DAMAGE_HEADER) {
    CHECK(stored == 30, "%d of 30 stored", stored);
    return;
  }
  CHECK(stored == 29 && missing == 1, "%d stored, %d missing", stored, missing);
  CHECK(missing_logged(app, 15, why, sizeof why), "cycle 15 not missing");
  CHECK(strstr(why, "damaged") != NULL, "cycle 15 missing for '%s'", why);
  CHECK(la_status("log_damaged_cycles") == 1, "log_damaged_cycles %lld",
        la_status("log_damaged_cycles"));
}

/* A flipped byte in the payload of one record in the middle of a segment:
 * the records after it are kept (they used to be cut off with it). */
static void test_damaged_record_skipped(void **state) {
  run_damage("durable-x", DAMAGE_PAYLOAD);
}

/* A flipped byte in the length of one record: the next record is found
 * by its checksum, not by the damaged length. */
static void test_damaged_length_resync(void **state) {
  run_damage("durable-y", DAMAGE_LENGTH);
}

/* A flipped byte in a segment's file header: its records still come back
 * (the segment used to be emptied). */
static void test_damaged_segment_header(void **state) {
  run_damage("durable-z", DAMAGE_HEADER);
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
  la_td_start(T.la, args, NULL, wait_ms());
  CHECK(la_td_wait_exit(T.la, wait_ms()) == 1, "the agent did not refuse");
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
      T(test_damaged_record_skipped),
      T(test_damaged_length_resync),
      T(test_damaged_segment_header),
      T(test_unsafe_log_dir_refused),
#undef T
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
