/* SPDX-License-Identifier: BSD-3-Clause */
/* test_appid_owner.c: application ids owned across nodes, end to end.
 *
 * The real GlobalAgent and two real LocalAgents ("node-a", "node-b") on
 * loopback, and applications as forked children that use libla for real,
 * each setuid to one of two unused uids. A job of the first uid registers
 * an id on node-a; a process of the second uid registers the same id on
 * node-b (where nothing of the first uid runs, so the LocalAgent's own
 * guard lets it through). Shown: the job's Trace-Sets complete and its
 * values bit-exact (lossless), nothing of the other process stored, its
 * RankEnd not counted as the job's; the other process told at once
 * (LA_dataXfer and LA_finalize return LA_EREFUSED, LA_lastError the
 * reason, LA_getStat(LA_STAT_REFUSED) 1); the GlobalAgent's counters and
 * its one log line naming the id and both uids; the LocalAgent's counter;
 * the binding kept across a restart of the GlobalAgent; one uid's job on
 * both nodes still stitches. Every wait is bounded; every child reaped.
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

#include "la.h"
#include "la_test_agent.h"
#include "la_compact.h"
#include "la_test_child.h"
#include "la_test_link.h"
#include "la_test_mpi.h"

#define WAIT_MS 60000
#define OWNER 40101 /* uids no account uses */
#define OTHER 40102
#define N 24
#define CYCLES 6

static struct {
  la_test_agent_t ta; /* GlobalAgent and node-a's LocalAgent; ta.st.db */
  la_test_daemon_t *lb; /* node-b's LocalAgent */
  char lb_addr[64];
  uint16_t agents_port;
  int hold; /* la_td_hold_port's socket while the GlobalAgent is down */
  int up;
  char verbose[8192]; /* the other process's LA_VERBOSE lines */
} T;

/* What the job measures: exact in binary, different per element, cycle and
 * rank. */
static double job_value(long e, uint64_t cycle, int rank) {
  return 1000.0 * rank + 10.0 * (double)e + (double)cycle + 0.25;
}


/* Starts rank of nprocs of app_id as uid at agent in a child; its exit
 * status is 0 when every libla call succeeded. */
static pid_t spawn_job_rank(const char *agent, const char *app_id, int rank,
                            int nprocs, int uid) {
  pid_t p = la_test_fork();
  assert_true(p >= 0);
  if (p == 0) {
    if (la_test_become(uid) != 0) _exit(8);
    _exit(la_ta_run_rank(agent, app_id, "owned", rank, nprocs, N, CYCLES,
                         job_value));
  }
  return p;
}

static int run_job_rank(const char *agent, const char *app_id, int rank,
                        int nprocs, int uid) {
  return la_test_wait(spawn_job_rank(agent, app_id, rank, nprocs, uid));
}

/* What the other user's process saw. */
typedef struct verdict {
  int reg_rc, xfer_rc, fin_rc;
  long refused_stat, cycles;
  char why[512];
} verdict_t;

static double probe_zero(long e, void *arg) {
  (void)e, (void)arg;
  return 0;
}

static double probe_other(long e, void *arg) {
  (void)arg;
  return -7.0 - (double)e; /* nothing the job measures */
}

/* The other user's process: registers rank of nprocs under app_id at
 * agent as uid with LA_VERBOSE=1 (its stderr into err), runs cycles until
 * LA_dataXfer returns an error (bounded by WAIT_MS), finalizes, and writes
 * what it saw to fd. */
static void other_main(const char *agent, const char *app_id, int rank,
                       int nprocs, int uid, int fd, const char *err) {
  verdict_t v;
  memset(&v, 0, sizeof v);
  if (!freopen(err, "w", stderr)) _exit(7);
  setvbuf(stderr, NULL, _IONBF, 0); /* the child ends with _exit */
  setenv("LA_VERBOSE", "1", 1);
  if (la_test_become(uid) != 0) _exit(8);
  LA_setAgent(agent);
  LA_setAppId(app_id);
  LA_setPeriod(1);
  LA_setBuffers(4);
  LA_setPolicy(LA_POLICY_WAIT);
  LA_setProbeStartFunc(probe_zero, NULL);
  LA_setProbeStopFunc(probe_other, NULL);
  LA_setMetric("custom");
  v.reg_rc = LA_register("owned", rank, nprocs, N);
  for (int i = 0; v.reg_rc == 0 && v.xfer_rc == 0 && i < WAIT_MS / 10; i++) {
    for (long e = 0; e < N; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    v.xfer_rc = LA_dataXfer();
    if (v.xfer_rc == 0) usleep(10000);
  }
  snprintf(v.why, sizeof v.why, "%s", LA_lastError());
  v.refused_stat = LA_getStat(LA_STAT_REFUSED);
  v.cycles = LA_getStat(LA_STAT_CYCLES);
  v.fin_rc = LA_finalize();
  if (write(fd, &v, sizeof v) != (ssize_t)sizeof v) _exit(9);
  _exit(0);
}

/* Runs other_main in a child; what it printed with LA_VERBOSE=1 goes to
 * T.verbose. */
static verdict_t run_other(const char *agent, const char *app_id, int rank,
                           int nprocs, int uid) {
  int p[2];
  char err[700];
  la_td_path(T.lb, "other.err", err, sizeof err);
  assert_int_equal(pipe(p), 0);
  pid_t pid = la_test_fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    other_main(agent, app_id, rank, nprocs, uid, p[1], err);
  }
  close(p[1]);
  verdict_t v;
  memset(&v, 0, sizeof v);
  size_t got = 0;
  while (got < sizeof v) {
    ssize_t r = read(p[0], (char *)&v + got, sizeof v - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(p[0]);
  assert_int_equal(la_test_wait(pid), 0);
  assert_int_equal(got, sizeof v);
  FILE *f = fopen(err, "r");
  assert_non_null(f);
  size_t n = fread(T.verbose, 1, sizeof T.verbose - 1, f);
  T.verbose[n] = 0;
  fclose(f);
  unlink(err);
  fprintf(stderr, "uid %d on node-b: register %d, dataXfer %d after %ld "
          "cycles, finalize %d, LA_STAT_REFUSED %ld: %s\n", uid, v.reg_rc,
          v.xfer_rc, v.cycles, v.fin_rc, v.refused_stat, v.why);
  return v;
}

/* Starts the GlobalAgent on the agents port (0: a new one, remembered),
 * with the settings extra (NULL-terminated, may be NULL) added. */
static void start_ga_with(uint16_t port, const char *const *extra) {
  la_test_stack_t *s = &T.ta.st;
  la_td_argv_t a;
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agents.listen=127.0.0.1:%u", port);
  la_td_argv_add(&a, "--feed.listen=127.0.0.1:0");
  la_ts_ga_args(&a, s->agents_pf, s->feed_pf, s->db, s->secret);
  la_td_argv_add(&a, "--store.fsync=no");
  /* the job's sets wait for its second rank, started later */
  la_td_argv_add(&a, "--stitch.timeout=300s");
  la_td_argv_add(&a, "--log.level=debug");
  for (int i = 0; extra && extra[i]; i++) la_td_argv_add(&a, "%s", extra[i]);
  unlink(s->agents_pf);
  la_td_release_port(&T.hold);
  int fp = la_td_start(s->ga, a.v, s->feed_pf, WAIT_MS);
  if (fp <= 0) fail_msg("la-globalagent did not start");
  int ap = la_td_read_port(s->agents_pf, WAIT_MS);
  if (ap <= 0) fail_msg("no agents port");
  T.agents_port = (uint16_t)ap;
  snprintf(s->ga_addr, sizeof s->ga_addr, "127.0.0.1:%d", ap);
  snprintf(s->feed_addr, sizeof s->feed_addr, "127.0.0.1:%d", fp);
}

static void start_ga(uint16_t port) {
  start_ga_with(port, NULL);
}

/* Stops the GlobalAgent and holds its agents port until start_ga_with
 * starts it there again: a bind to port 0 meanwhile (another test's
 * daemon) could be given it, and the restart would fail. */
static void ga_down(void) {
  assert_int_equal(la_td_stop(T.ta.st.ga, WAIT_MS), 0);
  T.hold = la_td_hold_port(T.agents_port);
}

static void wait_linked(la_test_daemon_t *la) {
  char v[128] = "";
  if (la_test_wait_linked(la, WAIT_MS, v, sizeof v) != 0)
    fail_msg("LocalAgent %s not linked: %s", la_td_name(la), v);
}

static int setup(void **state) {
  (void)state;
  la_td_unset_la_env();
  memset(&T, 0, sizeof T);
  T.hold = -1;
  if (geteuid() != 0) return 0; /* the tests skip: they need setuid */
  if (la_ts_init(&T.ta.st) != 0) return 0; /* not built: skip */
  start_ga(0);
  const char *a_args[] = {"--agent.host=node-a", NULL};
  if (la_ts_start_local(&T.ta.st, a_args) != 0)
    fail_msg("node-a's LocalAgent did not start");
  T.lb = la_td_new("la-localagent");
  if (!T.lb ||
      la_test_start_la(T.lb, T.ta.st.ga_addr, T.ta.st.secret, "node-b",
                       WAIT_MS, T.lb_addr, sizeof T.lb_addr) != 0)
    fail_msg("node-b's LocalAgent did not start");
  setenv("LA_COMPACT", "lossless", 1);
  T.ta.up = T.up = 1;
  wait_linked(T.ta.st.la);
  wait_linked(T.lb);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  la_td_release_port(&T.hold);
  la_td_free(T.lb);
  la_ts_free(&T.ta.st);
  return 0;
}

static long long sql(const char *fmt, const char *app_id) {
  return la_ta_app_int(&T.ta, app_id, fmt);
}

/* Waits until app_id has no refused_ranks row. A pruning is counted in
 * the batch that deletes the rows, and the rows go at that batch's commit
 * on the committer thread: a test that saw the count waits for the store. */
static void refused_rows_gone(const char *app_id) {
  char q[256];
  snprintf(q, sizeof q,
           "SELECT (SELECT count(*) FROM refused_ranks WHERE app_id = '%s') "
           "= 0",
           app_id);
  if (la_ta_wait_sql(&T.ta, q, 1, WAIT_MS) != 0)
    fail_msg("%lld refused ranks of %s left (%s)",
             sql("SELECT count(*) FROM refused_ranks WHERE app_id = '%s'",
                 app_id),
             app_id, la_td_log(T.ta.st.ga));
}

/* Every cycle of app_id complete with nprocs ranks, each rank's values
 * exactly the job's. */
static void assert_job_exact(const char *app_id, int nprocs) {
  la_test_daemon_t *ga = T.ta.st.ga;
  char q[300];
  snprintf(q, sizeof q,
           "SELECT count(*) FROM trace_sets WHERE app_id = '%s' AND "
           "closed = 1 AND complete = 1",
           app_id);
  if (la_ta_wait_sql(&T.ta, q, CYCLES, WAIT_MS) != 0)
    fail_msg("%s: %lld of %d sets complete (%s)", app_id,
             la_ta_sql_int(&T.ta, q), CYCLES, la_td_log(ga));
  assert_int_equal(sql("SELECT count(*) FROM trace_sets WHERE app_id = '%s'",
                       app_id),
                   CYCLES);
  assert_int_equal(la_ta_ntraces(&T.ta, app_id), (long long)CYCLES * nprocs);
  for (int r = 0; r < nprocs; r++)
    for (uint64_t c = 0; c < CYCLES; c++) {
      double got[N];
      assert_int_equal(la_ta_values(&T.ta, app_id, (uint32_t)r, c, got, N), 0);
      for (long e = 0; e < N; e++)
        if (got[e] != job_value(e, c, r))
          fail_msg("%s rank %d cycle %llu element %ld: %.17g, not %.17g",
                   app_id, r, (unsigned long long)c, e, got[e],
                   job_value(e, c, r));
    }
  assert_int_equal(sql("SELECT count(*) FROM missing WHERE app_id = '%s'",
                       app_id),
                   0);
}

/* The other user's process on node-b under the job's id is refused and
 * told; the job (on node-a) is untouched; the GlobalAgent counts and says
 * it once; the binding survives a restart. */
static void test_other_user_other_node(void **state) {
  (void)state;
  if (!T.up) skip();
  la_test_daemon_t *ga = T.ta.st.ga;
  const char *la_a = la_td_addr(T.ta.st.la);
  const char *id = "job42.0";
  /* the job's first rank binds the id to its uid */
  assert_int_equal(run_job_rank(la_a, id, 0, 2, OWNER), 0);
  assert_int_equal(la_td_wait_status(ga, "rank_starts", 1, WAIT_MS), 0);
  /* the other user, on the node where the job has no rank */
  verdict_t v = run_other(T.lb_addr, id, 1, 2, OTHER);
  assert_int_equal(v.reg_rc, 0); /* node-b's LocalAgent knows no owner */
  assert_int_equal(v.xfer_rc, LA_EREFUSED);
  assert_non_null(strstr(v.why,
                         "app id job42.0 belongs to another user on the "
                         "front end: choose another id (LA_APP_ID)"));
  assert_int_equal(v.refused_stat, 1);
  assert_int_equal(v.fin_rc, LA_EREFUSED);
  assert_non_null(strstr(T.verbose,
                         "app id job42.0 belongs to another user on the "
                         "front end: choose another id (LA_APP_ID)"));
  /* the job's second rank, after it */
  assert_int_equal(run_job_rank(la_a, id, 1, 2, OWNER), 0);
  assert_job_exact(id, 2);
  /* nothing of node-b's process in the job: its rank, its end */
  assert_int_equal(sql("SELECT count(*) FROM ranks WHERE app_id = '%s' AND "
                       "host = 'node-b'",
                       id),
                   0);
  assert_int_equal(sql("SELECT count(*) FROM ranks WHERE app_id = '%s' AND "
                       "host = 'node-a' AND started = 1 AND ended = 1",
                       id),
                   2);
  assert_int_equal(sql("SELECT count(*) FROM traces WHERE app_id = '%s' AND "
                       "stat_min < 0",
                       id),
                   0);
  assert_int_equal(sql("SELECT uid FROM app_owners WHERE app_id = '%s'", id),
                   OWNER);
  /* the refusal's record went with the refused rank's RankEnd: nothing of
   * that rank can follow */
  assert_int_equal(la_td_wait_status(ga, "appid_refused_pruned", 1, WAIT_MS),
                   0);
  refused_rows_gone(id); /* the count precedes the commit */
  /* counted and said once, naming the id and both uids */
  assert_int_equal(la_td_wait_status(ga, "appid_refused_starts", 1, WAIT_MS),
                   0);
  /* its RankEnd at least, dropped */
  assert_int_equal(
      la_td_wait_status(ga, "appid_refused_messages", 1, WAIT_MS), 0);
  char line[200];
  snprintf(line, sizeof line,
           "app id %s belongs to uid %d: rank 1 of uid %d from LocalAgent "
           "node-b refused",
           id, OWNER, OTHER);
  assert_int_equal(la_td_log_count(ga, line), 1);
  assert_int_equal(la_td_status_ll(ga, "appid_refused_starts"), 1);
  assert_true(la_td_status_ll(T.lb, "ranks_refused_upstream") == 1);
  assert_int_equal(la_td_status_ll(T.ta.st.la, "ranks_refused_upstream"), 0);

  /* the binding is the store's: a restarted GlobalAgent keeps it */
  ga_down();
  start_ga(T.agents_port);
  wait_linked(T.ta.st.la);
  wait_linked(T.lb);
  v = run_other(T.lb_addr, id, 0, 2, OTHER);
  assert_int_equal(v.xfer_rc, LA_EREFUSED);
  assert_non_null(strstr(v.why, "app id job42.0 belongs to another user"));
  assert_int_equal(v.fin_rc, LA_EREFUSED);
  assert_int_equal(la_td_wait_status(ga, "appid_refused_starts", 1, WAIT_MS),
                   0);
  assert_true(la_td_status_ll(T.lb, "ranks_refused_upstream") == 2);
  /* the job's sets as they were */
  assert_job_exact(id, 2);
  assert_int_equal(sql("SELECT count(*) FROM ranks WHERE app_id = '%s' AND "
                       "host = 'node-b'",
                       id),
                   0);
}

/* One user's job on both nodes (a real multi-node job): bound to that uid,
 * nothing refused, every set complete and exact. */
static void test_same_user_two_nodes(void **state) {
  (void)state;
  if (!T.up) skip();
  la_test_daemon_t *ga = T.ta.st.ga;
  long long refused = la_td_status_ll(ga, "appid_refused_starts");
  long long up_b = la_td_status_ll(T.lb, "ranks_refused_upstream");
  const char *id = "job43.0";
  pid_t p = spawn_job_rank(T.lb_addr, id, 1, 2, OWNER);
  assert_int_equal(run_job_rank(la_td_addr(T.ta.st.la), id, 0, 2, OWNER), 0);
  assert_int_equal(la_test_wait(p), 0);
  assert_job_exact(id, 2);
  assert_int_equal(sql("SELECT uid FROM app_owners WHERE app_id = '%s'", id),
                   OWNER);
  assert_int_equal(sql("SELECT count(DISTINCT host) FROM ranks WHERE "
                       "app_id = '%s'",
                       id),
                   2);
  assert_int_equal(la_td_status_ll(ga, "appid_refused_starts"), refused);
  assert_int_equal(la_td_status_ll(T.lb, "ranks_refused_upstream"), up_b);
}

/* LocalAgents played by hand (la_test_link.h) against the real
 * GlobalAgent: what a refused rank sends before its LocalAgent heard of the
 * refusal (traces of another element count, in the same batch as its
 * RankStart) and what it resends to a restarted GlobalAgent is
 * acknowledged and dropped, never stored; the RankRefused names the
 * RankStart's seq; the owner's rank of the same number from its own node
 * is stored and its set completes. */
static void link_open(la_test_link_t *l, const char *host) {
  int32_t status = -1;
  char why[300] = "";
  if (la_test_link_open(l, T.agents_port, T.ta.st.secret, host, WAIT_MS,
                        &status, why, sizeof why) != 0 || status != 0)
    fail_msg("handshake of %s: %s", host, why);
}

static void link_acked(la_test_link_t *l) {
  char why[300] = "";
  if (la_test_link_wait_acked(l, WAIT_MS, why, sizeof why) != 0)
    fail_msg("acks: %s", why);
}

static void test_refused_rank_messages_dropped(void **state) {
  (void)state;
  if (!T.up) skip();
  la_test_daemon_t *ga = T.ta.st.ga;
  const char *id = "hand.1";
  double x[16];
  for (int i = 0; i < 16; i++) x[i] = 1.0 + i;
  la_compact_result_t r8, r16;
  assert_int_equal(la_compact(x, 8, NULL, &r8), 0);
  assert_int_equal(la_compact(x, 16, NULL, &r16), 0);
  long long stored0 = la_td_status_ll(ga, "traces_stored");
  long long dropped0 = la_td_status_ll(ga, "appid_refused_messages");
  la_test_link_t a, b;
  link_open(&a, "hand-a");
  assert_int_equal(la_test_link_rank_start_uid(&a, "hand-a", id, 0, 2, 8,
                                               OWNER),
                   0);
  assert_int_equal(la_test_link_trace(&a, id, 0, 0, &r8, NULL, 0), 0);
  link_acked(&a);
  /* another uid's rank 1, of 16 elements, and its traces right behind */
  link_open(&b, "hand-b");
  assert_int_equal(la_test_link_rank_start_uid(&b, "hand-b", id, 1, 2, 16,
                                               OTHER),
                   0);
  uint64_t start_seq = b.seq;
  for (uint64_t t = 0; t < 3; t++)
    assert_int_equal(la_test_link_trace(&b, id, 1, t, &r16, NULL, 0), 0);
  link_acked(&b);
  assert_int_equal(b.refusals, 1);
  assert_int_equal(b.refused_seq, start_seq);
  assert_int_equal(b.refused_rank, 1);
  assert_non_null(strstr(b.refused_reason,
                         "app id hand.1 belongs to another user on the front "
                         "end: choose another id (LA_APP_ID)"));
  assert_int_equal(la_td_wait_status(ga, "appid_refused_messages",
                                     dropped0 + 3, WAIT_MS),
                   0);
  assert_int_equal(la_td_status_ll(ga, "traces_stored"), stored0 + 1);
  la_test_link_close(&b);
  /* a restarted GlobalAgent reads the refusal back: a resend is dropped */
  la_test_link_close(&a);
  ga_down();
  long long n_refused =
      la_ta_sql_int(&T.ta, "SELECT count(*) FROM refused_ranks");
  assert_true(n_refused >= 1);
  la_td_log_mark(ga);
  start_ga(T.agents_port);
  char want[120];
  snprintf(want, sizeof want, "%lld ranks refused for their app id's owner",
           n_refused);
  assert_int_equal(la_td_wait_log(ga, want, WAIT_MS), 0);
  link_open(&b, "hand-b");
  assert_int_equal(la_test_link_trace(&b, id, 1, 2, &r16, NULL, 0), 0);
  link_acked(&b);
  assert_int_equal(la_td_wait_status(ga, "appid_refused_messages", 1, WAIT_MS),
                   0);
  assert_int_equal(la_td_status_ll(ga, "traces_stored"), 0);
  /* the owner's own rank 1, from its node: stored, the set complete */
  link_open(&a, "hand-a");
  assert_int_equal(la_test_link_rank_start_uid(&a, "hand-a", id, 1, 2, 8,
                                               OWNER),
                   0);
  assert_int_equal(la_test_link_trace(&a, id, 1, 0, &r8, NULL, 0), 0);
  link_acked(&a);
  assert_int_equal(a.refusals, 0);
  char q[200];
  snprintf(q, sizeof q,
           "SELECT count(*) FROM trace_sets WHERE app_id = '%s' AND "
           "cycle_tag = 0 AND closed = 1 AND complete = 1",
           id);
  assert_int_equal(la_ta_wait_sql(&T.ta, q, 1, WAIT_MS), 0);
  assert_int_equal(sql("SELECT count(*) FROM traces WHERE app_id = '%s'", id),
                   2);
  assert_int_equal(sql("SELECT count(*) FROM traces WHERE app_id = '%s' AND "
                       "n_elements <> 8",
                       id),
                   0);
  assert_int_equal(sql("SELECT count(*) FROM ranks WHERE app_id = '%s' AND "
                       "host = 'hand-b'",
                       id),
                   0);
  la_test_link_close(&a);
  la_compact_result_free(&r8);
  la_compact_result_free(&r16);
  wait_linked(T.ta.st.la); /* the real LocalAgents found the new one */
  wait_linked(T.lb);
}

/* Sends count traces (cycles 0..count-1) of rank, 16 elements each, and
 * waits for their acknowledgement. */
static void send_traces(la_test_link_t *l, const char *id, uint32_t rank,
                        int count) {
  double x[16];
  for (int i = 0; i < 16; i++) x[i] = -1.0 - i;
  la_compact_result_t r16;
  assert_int_equal(la_compact(x, 16, NULL, &r16), 0);
  for (int t = 0; t < count; t++)
    assert_int_equal(
        la_test_link_trace(l, id, rank, (uint64_t)t, &r16, NULL, 0), 0);
  la_compact_result_free(&r16);
  link_acked(l);
}

/* A refusal another shard recorded (written to the store behind this
 * GlobalAgent's back, after it read the store at start): the rank's
 * messages, of which this GlobalAgent saw no RankStart, are dropped, the
 * store asked once; its RankEnd drops the record. Another rank of no
 * RankStart is still stored as before. */
static void test_refusal_learned_from_store(void **state) {
  (void)state;
  if (!T.up) skip();
  la_test_daemon_t *ga = T.ta.st.ga;
  const char *id = "behind.1";
  long long learned0 = la_td_status_ll(ga, "appid_refused_learned");
  long long dropped0 = la_td_status_ll(ga, "appid_refused_messages");
  long long pruned0 = la_td_status_ll(ga, "appid_refused_pruned");
  la_test_link_t a, b;
  link_open(&a, "learn-a");
  assert_int_equal(la_test_link_rank_start_uid(&a, "learn-a", id, 0, 2, 16,
                                               OWNER),
                   0);
  send_traces(&a, id, 0, 1);
  char q[400];
  snprintf(q, sizeof q,
           "INSERT INTO refused_ranks(app_id, host, rank, uid, owner_uid, "
           "seq, t_refused_ns) VALUES ('%s', 'learn-b', 1, %d, %d, 1, "
           "CAST((julianday('now') - 2440587.5) * 86400000000000 AS "
           "INTEGER))",
           id, OTHER, OWNER);
  assert_int_equal(la_ta_sql_exec(&T.ta, q), 0);
  long long stored0 = la_td_status_ll(ga, "traces_stored");
  link_open(&b, "learn-b");
  send_traces(&b, id, 1, 3);
  assert_int_equal(la_td_wait_status(ga, "appid_refused_messages",
                                     dropped0 + 3, WAIT_MS),
                   0);
  assert_int_equal(la_td_status_ll(ga, "appid_refused_learned"), learned0 + 1);
  assert_int_equal(la_td_status_ll(ga, "traces_stored"), stored0);
  assert_int_equal(sql("SELECT count(*) FROM traces WHERE app_id = '%s' AND "
                       "rank = 1",
                       id),
                   0);
  /* a rank nobody refused, of no RankStart either: stored, as before */
  send_traces(&b, "behind.2", 0, 1);
  assert_int_equal(la_td_wait_status(ga, "traces_stored", stored0 + 1,
                                     WAIT_MS),
                   0);
  /* the refused rank's end: its record goes, and it is not the owner's */
  assert_int_equal(la_test_link_rank_end(&b, id, 1), 0);
  link_acked(&b);
  assert_int_equal(la_td_wait_status(ga, "appid_refused_pruned", pruned0 + 1,
                                     WAIT_MS),
                   0);
  assert_int_equal(la_td_status_ll(ga, "appid_refused_messages"), dropped0 + 4);
  assert_int_equal(la_td_status_ll(ga, "appid_refused_learned"), learned0 + 1);
  assert_int_equal(sql("SELECT count(*) FROM refused_ranks WHERE app_id = "
                       "'%s'",
                       id),
                   0);
  assert_int_equal(sql("SELECT count(*) FROM ranks WHERE app_id = '%s' AND "
                       "rank = 1",
                       id),
                   0);
  la_test_link_close(&a);
  la_test_link_close(&b);
}

/* Restarts the GlobalAgent with extra settings (NULL: the defaults) and
 * waits for the real LocalAgents to find it. */
static void restart_ga(const char *const *extra) {
  ga_down();
  la_td_log_mark(T.ta.st.ga);
  start_ga_with(T.agents_port, extra);
  wait_linked(T.ta.st.la);
  wait_linked(T.lb);
}

/* One LocalAgent cannot grow refused_ranks past
 * appid.refused_max_per_agent (the oldest go, counted and said), and
 * records older than appid.refused_retention go. */
static void test_refused_pruned(void **state) {
  (void)state;
  if (!T.up) skip();
  const char *cap3[] = {"--appid.refused_max_per_agent=3", NULL};
  restart_ga(cap3);
  la_test_daemon_t *ga = T.ta.st.ga;
  const char *id = "cap.1";
  la_test_link_t a, b;
  link_open(&a, "cap-a");
  assert_int_equal(la_test_link_rank_start_uid(&a, "cap-a", id, 0, 8, 16,
                                               OWNER),
                   0);
  link_acked(&a);
  link_open(&b, "cap-b");
  for (uint32_t r = 1; r <= 5; r++) {
    assert_int_equal(la_test_link_rank_start_uid(&b, "cap-b", id, r, 8, 16,
                                                 OTHER),
                     0);
    link_acked(&b); /* one batch each: their refusal times in rank order */
  }
  assert_int_equal(b.refusals, 5);
  assert_int_equal(la_td_wait_status(ga, "appid_refused_starts", 5, WAIT_MS),
                   0);
  assert_int_equal(la_td_status_ll(ga, "appid_refused_pruned"), 2);
  assert_int_equal(sql("SELECT count(*) FROM refused_ranks WHERE app_id = "
                       "'%s' AND host = 'cap-b'",
                       id),
                   3);
  assert_int_equal(sql("SELECT min(rank) FROM refused_ranks WHERE app_id = "
                       "'%s' AND host = 'cap-b'",
                       id),
                   3);
  assert_true(la_td_log_count(ga, "LocalAgent cap-b: more than 3 refused "
                                  "ranks recorded") >= 1);
  /* the pruned ranks' messages are no longer known as refused (rank 1);
   * the kept ones' still are (rank 5) */
  long long dropped0 = la_td_status_ll(ga, "appid_refused_messages");
  send_traces(&b, id, 5, 1);
  assert_int_equal(la_td_wait_status(ga, "appid_refused_messages",
                                     dropped0 + 1, WAIT_MS),
                   0);
  la_test_link_close(&a);
  la_test_link_close(&b);
  /* a retention of a second: the three left go */
  const char *short_retention[] = {"--appid.refused_retention=1s", NULL};
  restart_ga(short_retention);
  ga = T.ta.st.ga;
  assert_int_equal(la_td_wait_status(ga, "appid_refused_pruned", 3, WAIT_MS),
                   0);
  /* counted in the batch that deletes them; the rows go at its commit (on
   * the committer thread, after the count is seen): waited for */
  refused_rows_gone(id);
  assert_int_equal(la_td_wait_log(ga, "refused ranks' records older than "
                                      "appid.refused_retention",
                                  WAIT_MS),
                   0);
  restart_ga(NULL);
}

/* An older LocalAgent's RankStart (no owner_uid) under a bound id: stored
 * by default (neither bound nor checked); refused with
 * appid.require_owner = yes (recorded with no uid, its messages dropped,
 * its LocalAgent not sent a RankRefused it would not understand). */
static void test_require_owner(void **state) {
  (void)state;
  if (!T.up) skip();
  la_test_daemon_t *ga = T.ta.st.ga;
  la_test_link_t a, b;
  link_open(&a, "req-a");
  assert_int_equal(la_test_link_rank_start_uid(&a, "req-a", "old.1", 0, 2, 16,
                                               OWNER),
                   0);
  assert_int_equal(la_test_link_rank_start_uid(&a, "req-a", "old.2", 0, 2, 16,
                                               OWNER),
                   0);
  link_acked(&a);
  /* the default: appid.require_owner = no */
  long long stored0 = la_td_status_ll(ga, "traces_stored");
  link_open(&b, "req-b");
  assert_int_equal(la_test_link_rank_start(&b, "req-b", "old.1", 1, 2, 16), 0);
  send_traces(&b, "old.1", 1, 2);
  assert_int_equal(la_td_wait_status(ga, "traces_stored", stored0 + 2,
                                     WAIT_MS),
                   0);
  assert_int_equal(b.refusals, 0);
  la_test_link_close(&a);
  la_test_link_close(&b);
  const char *req[] = {"--appid.require_owner=yes", NULL};
  restart_ga(req);
  ga = T.ta.st.ga;
  link_open(&b, "req-b");
  assert_int_equal(la_test_link_rank_start(&b, "req-b", "old.2", 1, 2, 16), 0);
  send_traces(&b, "old.2", 1, 3);
  assert_int_equal(la_td_wait_status(ga, "appid_refused_messages", 3, WAIT_MS),
                   0);
  assert_int_equal(la_td_status_ll(ga, "appid_refused_starts"), 1);
  assert_int_equal(la_td_status_ll(ga, "traces_stored"), 0);
  assert_int_equal(b.refusals, 0); /* not told: it would not understand */
  assert_int_equal(sql("SELECT uid FROM refused_ranks WHERE app_id = '%s' "
                       "AND host = 'req-b' AND rank = 1",
                       "old.2"),
                   4294967295LL);
  assert_int_equal(sql("SELECT count(*) FROM ranks WHERE app_id = '%s' AND "
                       "host = 'req-b'",
                       "old.2"),
                   0);
  assert_int_equal(la_td_log_count(ga, "app id old.2 belongs to uid 40101: "
                                       "rank 1 of no uid from LocalAgent "
                                       "req-b"),
                   1);
  /* an id bound to nobody is still open to it */
  assert_int_equal(la_test_link_rank_start(&b, "req-b", "old.3", 0, 1, 16), 0);
  send_traces(&b, "old.3", 0, 1);
  assert_int_equal(la_td_wait_status(ga, "traces_stored", 1, WAIT_MS), 0);
  la_test_link_close(&b);
  restart_ga(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_other_user_other_node),
      cmocka_unit_test(test_same_user_two_nodes),
      cmocka_unit_test(test_refused_rank_messages_dropped),
      cmocka_unit_test(test_refusal_learned_from_store),
      cmocka_unit_test(test_refused_pruned),
      cmocka_unit_test(test_require_owner),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
