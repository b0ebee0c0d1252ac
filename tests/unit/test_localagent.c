/* SPDX-License-Identifier: BSD-3-Clause */
/* test_localagent.c: the real la-localagent daemon, end to end.
 *
 * Every test starts build/bin/la-localagent as a child process on an
 * ephemeral port (tests/support/la_test_daemon.h) with its spool, secret and
 * log in a fresh temporary directory, with the real la-globalagent as its
 * GlobalAgent (la_test_stack.h; what reached it is read back from its
 * SQLite store and its `lactl status`), and drives it with real application
 * processes: forked children calling libla (custom probes with known
 * values, so the raw sums are exact), and wavetoy under mpiexec. Only the
 * GlobalAgent that stores without acknowledging and crashes mid-run is the
 * in-process stand-in (la_test_global.h): the real one cannot be made to
 * withhold its Acks. Assertions are on what a user sees: what reached the
 * GlobalAgent, the daemon's log lines, `lactl status` rows, exit statuses,
 * `ipcs`.
 *
 * Covers: several applications and ranks at once (every cycle
 * once, sums exact, decoded traces summing to the stats); wavetoy with 4
 * MPI ranks; an application killed mid-cycle (RankEnd "disconnected", no
 * IPC object left); garbage, oversized and unexpected frames; a connection
 * flood and the handshake timeout; registering someone else's segment
 * (refused, the victim untouched); no GlobalAgent at start and one appearing
 * later (every trace, in order, RankStart first); a GlobalAgent killed and
 * revived mid-run (nothing missing, nothing stored twice); the memory limit
 * sending everything to the spool, sent by the next run; a wrong secret;
 * SIGHUP reload and --check-config.
 *
 * Every wait is bounded (WAIT_MS); teardown kills every child, stops the
 * daemons and the stand-in, removes temporary files and IPC objects. Tests
 * skip when the daemons are not built.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_auth.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_shm_layout.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_kids.h"
#include "la_test_check.h"
#include "la_test_ipc.h"
#include "la_test_global.h"
#include "la_test_sql.h"
#include "la_test_msg.h"
#include "la_test_stack.h"

#define WAIT_MS 10000 /* longest wait for anything; a broken daemon fails */

/* ------------------------------------------------------- test fixture -- */

typedef la_test_kid_t kid_t; /* la_test_kids.h */

static struct {
  la_test_daemon_t *d; /* the LocalAgent under test: s.la */
  la_test_stack_t s;   /* s.ga: the real GlobalAgent, when a test starts it */
  la_test_global_t *g; /* the stand-in (test_global_restart_mid_run) */
  char key[600];       /* secret file shared by both daemons (s.secret) */
  char agent[64];      /* the daemon's address, for the children */
  la_test_kids_t kids;
  int victim_shm, victim_sem;
} T;

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  T.victim_shm = T.victim_sem = -1;
  if (la_ts_init(&T.s) == 0) { /* else T.d stays NULL: the tests skip */
    T.d = T.s.la;
    snprintf(T.key, sizeof T.key, "%s", T.s.secret);
  }
  return 0;
}

static int teardown(void **state) {
  la_tk_cleanup(&T.kids);
  la_ts_free(&T.s); /* SIGTERM, SIGKILL if needed, directories removed */
  T.d = NULL;
  la_test_global_stop(T.g);
  T.g = NULL;
  if (T.victim_shm >= 0) shmctl(T.victim_shm, IPC_RMID, NULL);
  if (T.victim_sem >= 0) semctl(T.victim_sem, 0, IPC_RMID);
  return 0;
}

static void need_daemon(void) {
  if (!T.d) {
    print_message(
        "skip: la-localagent or la-globalagent not built (make all, or "
        "set LA_TEST_BIN_DIR)\n");
    skip();
  }
}

/* Fails the test (with the daemon's log) unless cond holds. */
#define CHECK(cond, ...) \
  LA_TD_CHECK(la_td_print_log_tail(T.d, 4000), cond, __VA_ARGS__)

/* Starts the daemon: ephemeral port, spool and secret in its directory,
 * debug log, GlobalAgent at global ("" for none), quick reconnects; extra
 * options (NULL-terminated, may be NULL) come last and win. */
static void start_agent(const char *global, const char *const *extra) {
  char port_file[600], spool[600];
  la_td_argv_t a;
  la_td_path(T.d, "port", port_file, sizeof port_file);
  la_td_path(T.d, "spool", spool, sizeof spool);
  la_td_argv_init(&a);
  la_ts_la_args(&a, port_file, spool, global, T.key);
  la_ts_la_test_opts(&a);
  la_td_argv_extend(&a, extra);
  int port = la_td_start(T.d, a.v, port_file, WAIT_MS);
  CHECK(port > 0, "la-localagent did not start");
  snprintf(T.agent, sizeof T.agent, "%s", la_td_addr(T.d));
}

/* Starts the real GlobalAgent: agents port (0: ephemeral), the shared
 * secret, or another secret file key. */
static void start_global(uint16_t port, const char *key) {
  char listen[64], secret[700];
  snprintf(listen, sizeof listen, "--agents.listen=127.0.0.1:%u", port);
  snprintf(secret, sizeof secret, "--agents.secret_file=%s", key);
  const char *extra[] = {listen, secret, NULL};
  CHECK(la_ts_start_global(&T.s, extra) == 0, "la-globalagent did not start");
}

/* The real GlobalAgent with the fixture's secret, and the LocalAgent
 * linked to it (skips when they are not built). */
static void start_real_pair(void) {
  need_daemon();
  start_global(0, T.key);
  start_agent(T.s.ga_addr, NULL);
}

/* The stand-in GlobalAgent, for the faults the real one cannot show. */
static void start_stand_in(void) {
  T.g = la_test_global_start(0, T.key);
  CHECK(T.g != NULL, "la_test_global_start failed");
}

/* A connected socket to the daemon. */
static int connect_agent(void) {
  int fd = la_tcp_connect("127.0.0.1", la_td_port(T.d), 3000);
  CHECK(fd >= 0, "cannot connect to the daemon: %s", LA_strerror(fd));
  return fd;
}

static void status_str(const char *key, char *val, size_t len) {
  CHECK(la_td_status(T.d, key, val, len) == 0, "lactl status: no row %s", key);
}

/* The LocalAgent's status rows and log (la_test_check.h). */
#define status_ll(key) la_tc_status(T.d, key)
#define wait_status(key, min) la_tc_wait_status(T.d, key, min, WAIT_MS)
#define wait_log(needle) la_tc_wait_log(T.d, needle, WAIT_MS)

/* A `lactl status --global` counter of the real GlobalAgent. */
static long long ga_ll(const char *key) {
  return la_td_status_ll(T.s.ga, key);
}

/* Waits until the GlobalAgent's counter key is at least n. */
static void wait_ga(const char *key, long long n) {
  CHECK(la_td_wait_status(T.s.ga, key, n, WAIT_MS) == 0,
        "GlobalAgent %s: %lld, expected %lld", key, ga_ll(key), n);
}

/* Traces in the GlobalAgent's store. */
static long long ntraces(void) {
  return la_test_sql_ll(T.s.db, "SELECT count(*) FROM traces");
}

/* Waits until the GlobalAgent stored n traces: its counter (taken in the
 * batch) and then the store (the rows are committed on its committer
 * thread, a little later). */
static void wait_traces(long long n) {
  wait_ga("traces_stored", n);
  long long t0 = la_td_now_ms();
  while (ntraces() < n && la_td_now_ms() - t0 < WAIT_MS) usleep(10000);
  CHECK(ntraces() >= n, "%lld traces in the store, expected %lld",
        ntraces(), n);
}

/* What the GlobalAgent got was clean: no trace received twice, none before
 * its rank's RankStart, each RankStart and RankEnd once (ranks of them),
 * and the link in sequence order (the store numbers rows in arrival order:
 * no later row may carry a smaller seq). */
static void check_clean_link(int ranks) {
  assert_int_equal(ga_ll("traces_duplicate"), 0);
  assert_int_equal(ga_ll("traces_orphan"), 0);
  assert_int_equal(ga_ll("rank_starts"), ranks);
  assert_int_equal(ga_ll("rank_ends"), ranks);
  assert_int_equal(la_test_sql_ll(T.s.db,
                                  "SELECT count(*) FROM traces a JOIN traces "
                                  "b ON b.id > a.id AND b.seq <= a.seq"),
                   0);
}

/* Waits until the stand-in stored n traces. */
static void wait_tg_traces(size_t n) {
  CHECK(la_test_global_wait_traces(T.g, n, WAIT_MS) == 0,
        "%zu of %zu traces reached the stand-in", la_test_global_ntraces(T.g),
        n);
}

/* --------------------------------------------------- application child -- */

enum { REC_REGISTERED = 1, REC_CYCLE, REC_READY, REC_DONE, REC_REPLY };

typedef struct rec {
  int kind;
  int rc; /* LA_* result of the call the record reports */
  int pid;
  int sem_id;   /* REC_REGISTERED: the child's semaphore set */
  uint64_t tag; /* REC_CYCLE: cycle tag */
  double sum;   /* REC_CYCLE: raw sum of the values the probes produced */
  long profiled, waits, skipped; /* REC_DONE */
  char msg[240]; /* LA_lastError, or a RegisterReply's message */
} rec_t;

typedef struct app {
  const char *name;    /* application name */
  const char *app_id;  /* LA_setAppId */
  const char *compact; /* LA_COMPACT, NULL for the agent's default */
  int rank, nprocs;
  long n;      /* elements */
  int cycles;  /* per phase */
  int phases;  /* 0: run at once; else wait for a go byte before
                  each of the phases */
  int die;     /* after the cycles: start a probe, send REC_READY
                  and wait to be killed */
  int buffers; /* LA_setBuffers; 0: 16 (see below) */
} app_t;

/* The children use 16 value buffers unless a test says otherwise, and no
 * test but test_fast_application_keeps_its_connection runs more than 15 cycles
 * per rank: so no buffer is ever reused and the daemon's buffer-reuse race
 * (described at that test) cannot hide what the other tests check. */
#define APP_BUFFERS 16

static struct {
  uint64_t cycle;
  int rank;
} probe_ctx;

/* The value the custom probe gives element e: multiples of 0.25 below 200,
 * so every sum of up to 10^6 of them is exact in double. */
static double value_of(long e, uint64_t cycle, int rank) {
  return 100.0 + (double)((e / 50) % 7) * 10.0 +
         (double)(((uint64_t)e * 31 + cycle * 17 + (uint64_t)rank * 5) % 11) *
             0.25;
}

static double probe_start(long e, void *arg) {
  return 0.0;
}
static double probe_stop(long e, void *arg) {
  return value_of(e, probe_ctx.cycle, probe_ctx.rank);
}

static void send_rec(int fd, rec_t *r) {
  r->pid = (int)getpid();
  ssize_t w = write(fd, r, sizeof *r);
  (void)w;
}

/* The child: registers, runs its cycles, reports. Never returns. */
static void app_main(const app_t *a, int res, int go) {
  rec_t r;
  if (a->compact) setenv("LA_COMPACT", a->compact, 1);
  LA_setAgent(T.agent);
  LA_setAppId(a->app_id);
  LA_setPeriod(1);
  LA_setBuffers(a->buffers > 0 ? a->buffers : APP_BUFFERS);
  LA_setPolicy(LA_POLICY_WAIT);
  LA_setProbeStartFunc(probe_start, NULL);
  LA_setProbeStopFunc(probe_stop, NULL);
  LA_setMetric("custom");
  probe_ctx.rank = a->rank;
  memset(&r, 0, sizeof r);
  r.kind = REC_REGISTERED;
  r.rc = LA_register(a->name, a->rank, a->nprocs, a->n);
  r.sem_id = r.rc == 0 ? la_test_sem_of((int)getpid()) : -1;
  snprintf(r.msg, sizeof r.msg, "%s", LA_lastError());
  send_rec(res, &r);
  if (r.rc != 0) _exit(1);
  int phases = a->phases > 0 ? a->phases : 1;
  for (int p = 0; p < phases; p++) {
    if (a->phases > 0) {
      char c;
      ssize_t got;
      while ((got = read(go, &c, 1)) < 0 && errno == EINTR) {
      }
      if (got != 1) _exit(3);
    }
    for (int c = 0; c < a->cycles; c++) {
      memset(&r, 0, sizeof r);
      r.kind = REC_CYCLE;
      r.tag = (uint64_t)LA_getStat(LA_STAT_CYCLES);
      probe_ctx.cycle = r.tag;
      double sum = 0.0;
      for (long e = 0; e < a->n; e++) {
        LA_startProbe(e);
        LA_stopProbe(e);
        sum += value_of(e, r.tag, a->rank);
      }
      r.sum = sum;
      r.rc = LA_dataXfer();
      send_rec(res, &r);
    }
  }
  if (a->die) {
    memset(&r, 0, sizeof r);
    r.kind = REC_READY;
    r.rc = LA_startProbe(0); /* mid-cycle: a probe is open */
    send_rec(res, &r);
    for (;;) pause();
  }
  memset(&r, 0, sizeof r);
  r.kind = REC_DONE;
  r.profiled = LA_getStat(LA_STAT_PROFILED);
  r.waits = LA_getStat(LA_STAT_WAITS);
  r.skipped = LA_getStat(LA_STAT_SKIPPED);
  r.rc = LA_finalize();
  send_rec(res, &r);
  _exit(0);
}

/* Forks a child running fn(arg, res, go). */
static kid_t *spawn(void (*fn)(const void *, int, int), const void *arg,
                    int with_go) {
  kid_t *k = la_tk_spawn(&T.kids, fn, arg, with_go);
  assert_non_null(k);
  return k;
}

static void app_trampoline(const void *arg, int res, int go) {
  app_main(arg, res, go);
}

static kid_t *spawn_app(const app_t *a) {
  return spawn(app_trampoline, a, a->phases > 0);
}

/* The next record of kind from the child (skipping others), or the test
 * fails after WAIT_MS; the child's exit code (128+sig if killed). */
#define expect_rec(k, kind, out) \
  la_tc_expect(k, kind, out, sizeof *(out), WAIT_MS, T.d)
#define reap_kid(k) la_tc_reap(k, WAIT_MS, T.d)

static void go(kid_t *k) {
  assert_int_equal(la_tk_go(k), 0);
}

/* Spawns a and waits until it registered (its record into r). */
static kid_t *spawn_registered(const app_t *a, rec_t *r) {
  kid_t *k = spawn_app(a);
  expect_rec(k, REC_REGISTERED, r);
  CHECK(r->rc == 0, "%s rank %d: LA_register: %s (%s)", a->app_id, a->rank,
        LA_strerror(r->rc), r->msg);
  return k;
}

/* Runs a whole child application: registers, cycles, finalizes. Returns the
 * raw sums per cycle in sums (a->cycles of them). */
static void run_app(const app_t *a, double *sums) {
  rec_t r;
  kid_t *k = spawn_registered(a, &r);
  for (int c = 0; c < a->cycles; c++) {
    expect_rec(k, REC_CYCLE, &r);
    CHECK(r.rc == 0, "LA_dataXfer: %s", LA_strerror(r.rc));
    if (sums) sums[c] = r.sum;
  }
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(r.profiled, a->cycles);
  assert_int_equal(reap_kid(k), 0);
}

/* The largest |decoded sum - raw sum| docs/compaction.md ("Range sums")
 * allows for a trace of n positive values summing to sum under params p:
 * lossless keeps every value (rounding only); disjoint polyline segments
 * keep their sums up to quantization, 2^-11 cv relative; maxerr moves each
 * point by at most epsilon (times |value| when relative). */
static double sum_bound(const la_compact_params_t *p, long n, double sum) {
  double r = 1e-9 * fabs(sum);
  switch (la_compact_effective_mode(p)) {
    case LA_COMPACT_POLYLINE:
      return r + (p->connected ? 0.5 : ldexp(p->cv, -11)) * fabs(sum);
    case LA_COMPACT_MAXERR:
      return r +
             (p->relative ? p->epsilon * fabs(sum) : p->epsilon * (double)n);
    default:
      return r;
  }
}

/* Checks one stored trace of a child application against what the child
 * computed: element count, stats.sum equal to the raw sum, the decoded trace
 * summing to stats.sum (within 1e-9 relative for lossless, within the
 * documented bound of the lossy modes, see sum_bound), and for lossless and
 * maxerr every decoded value against the value the probe gave (exact, or
 * within epsilon). spec is the compaction asked for (NULL: the daemon's
 * default, polyline:cv=0.1). */
static void check_trace(const char *app_id, uint32_t rank, uint64_t tag, long n,
                        double raw_sum, const char *spec) {
  la_compact_params_t p;
  assert_int_equal(
      la_compact_spec_parse(spec ? spec : "polyline:cv=0.1", &p, NULL, 0), 0);
  int mode = la_compact_effective_mode(&p);
  la_tsql_trace_t row;
  const la_tsql_trace_t *t = &row;
  CHECK(la_test_sql_trace(T.s.db, app_id, rank, tag, &row) == 0,
        "trace %s rank %u cycle %llu missing", app_id, rank,
        (unsigned long long)tag);
  assert_int_equal(t->n_elements, (uint64_t)n);
  assert_int_equal(t->count, (uint64_t)n);
  CHECK(t->sum == raw_sum,
        "%s rank %u cycle %llu: stats.sum %.17g, raw sum "
        "%.17g",
        app_id, rank, (unsigned long long)tag, t->sum, raw_sum);
  assert_int_equal(t->mode, mode);
  la_trace_t *tr = NULL;
  char why[200];
  CHECK(la_trace_open(t->segments, t->segments_len, &tr, why, sizeof why) == 0,
        "trace %s rank %u cycle %llu does not decode: %s", app_id, rank,
        (unsigned long long)tag, why);
  assert_int_equal(la_trace_count(tr), (uint64_t)n);
  double s = 0;
  assert_int_equal(la_trace_range_sum(tr, 0, (uint64_t)n, &s), 0);
  double bound = sum_bound(&p, n, t->sum);
  CHECK(fabs(s - t->sum) <= bound,
        "%s rank %u cycle %llu (%s): decoded sum "
        "%.17g vs stats.sum %.17g, allowed difference %.3g",
        app_id, rank, (unsigned long long)tag, la_compact_mode_name(mode), s,
        t->sum, bound);
  if (mode != LA_COMPACT_POLYLINE) {
    double *x = malloc((size_t)n * sizeof *x);
    assert_non_null(x);
    assert_int_equal(la_trace_decode(tr, 0, (uint64_t)n, x), 0);
    long bad = -1;
    for (long e = 0; e < n && bad < 0; e++) {
      double v = value_of(e, tag, (int)rank);
      double tol = mode == LA_COMPACT_LOSSLESS ? 0.0
                   : p.relative ? p.epsilon * fabs(v) * (1 + 1e-12)
                                : p.epsilon * (1 + 1e-12);
      if (!(fabs(x[e] - v) <= tol)) bad = e;
    }
    double xv = bad >= 0 ? x[bad] : 0;
    free(x);
    CHECK(bad < 0,
          "%s rank %u cycle %llu: element %ld decodes to %.17g, "
          "the probe gave %.17g",
          app_id, rank, (unsigned long long)tag, bad, xv,
          value_of(bad, tag, (int)rank));
  }
  la_trace_close(tr);
  la_test_sql_trace_free(&row);
}

/* What the GlobalAgent's store keeps of one rank: its RankStart (with its
 * application's row) and its RankEnd. */
typedef struct rank_row {
  int started, ended;
  long long start_seq, end_seq, n_elements, cycles, nprocs, compact_mode;
  char reason[64], metric[64];
} rank_row_t;

/* Reads (app_id, rank) from the store; 0, or -1 when no RankStart was
 * stored. */
static int find_rank(const char *app_id, uint32_t rank, rank_row_t *r) {
  const char *db = T.s.db;
  char text[1][64];
  memset(r, 0, sizeof *r);
#define RANK_LL(col)                                    \
  la_test_sql_ll(db,                                    \
                 "SELECT " col                          \
                 " FROM ranks WHERE app_id = '%s' AND " \
                 "rank = %u",                           \
                 app_id, rank)
  r->started = RANK_LL("started") == 1;
  r->ended = RANK_LL("ended") == 1;
  r->start_seq = RANK_LL("start_seq");
  r->end_seq = RANK_LL("end_seq");
  r->n_elements = RANK_LL("n_elements");
  r->cycles = RANK_LL("cycles");
#undef RANK_LL
  r->nprocs =
      la_test_sql_ll(db, "SELECT nprocs FROM apps WHERE app_id = '%s'", app_id);
  r->compact_mode = la_test_sql_ll(
      db, "SELECT compact_mode FROM apps WHERE app_id = '%s'", app_id);
  if (la_test_sql_texts(db, text, 1,
                        "SELECT end_reason FROM ranks WHERE app_id = '%s' AND "
                        "rank = %u",
                        app_id, rank) == 1)
    snprintf(r->reason, sizeof r->reason, "%s", text[0]);
  if (la_test_sql_texts(db, text, 1,
                        "SELECT metric FROM apps WHERE app_id = '%s'",
                        app_id) == 1)
    snprintf(r->metric, sizeof r->metric, "%s", text[0]);
  return r->started ? 0 : -1;
}

/* Waits until the store holds the RankEnd of (app_id, rank), into r. */
static void wait_rank_end(const char *app_id, uint32_t rank, rank_row_t *r) {
  CHECK(la_test_sql_wait(T.s.db, 1, WAIT_MS,
                         "SELECT ended FROM ranks WHERE app_id = '%s' AND "
                         "rank = %u",
                         app_id, rank) == 0,
        "no RankEnd stored for %s rank %u", app_id, rank);
  find_rank(app_id, rank, r);
}

/* Every trace of (app_id, rank) for tags 0..cycles-1 is stored, after the
 * rank's RankStart and before its RankEnd in the link's sequence order.
 * (Traces of one rank may carry seqs out of cycle order: the daemon compacts
 * a rank's cycles in parallel and queues each when it is done; the
 * GlobalAgent stitches by cycle tag. The link itself must be in seq order:
 * check_clean_link, called by the callers.) */
static void check_order(const char *app_id, uint32_t rank, int cycles) {
  rank_row_t r;
  CHECK(find_rank(app_id, rank, &r) == 0, "no RankStart for %s rank %u", app_id,
        rank);
  for (int c = 0; c < cycles; c++) {
    la_tsql_trace_t t;
    CHECK(la_test_sql_trace(T.s.db, app_id, rank, (uint64_t)c, &t) == 0,
          "%s rank %u cycle %d missing", app_id, rank, c);
    uint64_t seq = t.seq;
    la_test_sql_trace_free(&t);
    CHECK((long long)seq > r.start_seq,
          "%s rank %u cycle %d: seq %llu not after its "
          "RankStart's %lld",
          app_id, rank, c, (unsigned long long)seq, r.start_seq);
    CHECK(!r.ended || r.end_seq > (long long)seq,
          "%s rank %u cycle %d: seq %llu not before "
          "its RankEnd's %lld",
          app_id, rank, c, (unsigned long long)seq, r.end_seq);
  }
}

/* ------------------------------------------------------------- tests -- */

#define NAPPS 3

/* Three applications with 3, 2 and 4 ranks, different element counts and
 * compaction, registered at the same time, 4 cycles each. */
static void test_several_apps_and_ranks(void **state) {
  start_real_pair();
  static const struct {
    const char *id, *compact;
    int nprocs, mode;
    long n;
  } apps[NAPPS] = {
      {"alpha-1", NULL, 3, LA_COMPACT_POLYLINE, 1000},
      {"beta-2", "maxerr:eps=0.5", 2, LA_COMPACT_MAXERR, 20000},
      {"gamma-3", "lossless", 4, LA_COMPACT_LOSSLESS, 5000},
  };
  /* Each trace is checked: once, right size, exact stats.sum, decoded sum
   * and values within the mode's bound (check_trace). */
  enum { CYCLES = 4 };
  app_t a[9];
  kid_t *k[9];
  int na = 0;
  for (int i = 0; i < NAPPS; i++)
    for (int r = 0; r < apps[i].nprocs; r++, na++) {
      a[na] = (app_t){.name = "multi",
                      .app_id = apps[i].id,
                      .compact = apps[i].compact,
                      .rank = r,
                      .nprocs = apps[i].nprocs,
                      .n = apps[i].n + r * 37 + i,
                      .cycles = CYCLES,
                      .phases = 1};
      k[na] = spawn_app(&a[na]);
    }
  rec_t rr;
  for (int i = 0; i < na; i++) {
    expect_rec(k[i], REC_REGISTERED, &rr);
    CHECK(rr.rc == 0, "%s rank %d: LA_register: %s", a[i].app_id, a[i].rank,
          rr.msg);
  }
  /* all nine registered at once */
  assert_int_equal(status_ll("apps"), na);
  char row[256], key[200];
  snprintf(key, sizeof key, "app.%s.rank1", apps[1].id);
  status_str(key, row, sizeof row);
  CHECK(strstr(row, "20038 elements") != NULL, "status row %s: %s", key, row);
  for (int i = 0; i < na; i++) go(k[i]);
  double sums[9][CYCLES];
  for (int i = 0; i < na; i++) {
    for (int c = 0; c < CYCLES; c++) {
      expect_rec(k[i], REC_CYCLE, &rr);
      CHECK(rr.rc == 0 && rr.tag == (uint64_t)c, "cycle %d: rc %d tag %llu", c,
            rr.rc, (unsigned long long)rr.tag);
      sums[i][c] = rr.sum;
    }
    expect_rec(k[i], REC_DONE, &rr);
    assert_int_equal(rr.profiled, CYCLES);
    assert_int_equal(reap_kid(k[i]), 0);
  }
  wait_traces(na * CYCLES);
  wait_ga("rank_ends", na);
  /* exactly once each, nothing else */
  assert_int_equal(ntraces(), na * CYCLES);
  check_clean_link(na);
  na = 0;
  for (int i = 0; i < NAPPS; i++)
    for (int r = 0; r < apps[i].nprocs; r++, na++) {
      for (int c = 0; c < CYCLES; c++)
        check_trace(apps[i].id, (uint32_t)r, (uint64_t)c, a[na].n, sums[na][c],
                    apps[i].compact);
      check_order(apps[i].id, (uint32_t)r, CYCLES);
      rank_row_t s;
      CHECK(find_rank(apps[i].id, (uint32_t)r, &s) == 0,
            "no RankStart for %s rank %d", apps[i].id, r);
      assert_int_equal(s.nprocs, apps[i].nprocs);
      assert_int_equal(s.n_elements, a[na].n);
      assert_int_equal(s.compact_mode, apps[i].mode);
      assert_string_equal(s.metric, "custom");
      CHECK(s.ended, "no RankEnd for %s rank %d", apps[i].id, r);
      assert_string_equal(s.reason, "finalize");
      assert_int_equal(s.cycles, CYCLES);
    }
  wait_status("ranks_ended", na);
  assert_int_equal(status_ll("apps"), 0);
  assert_int_equal(status_ll("cycles_compacted"), na * CYCLES);
  assert_int_equal(status_ll("cycles_dropped"), 0);
}

/* wavetoy with 4 MPI ranks and LA_AGENT pointing at the daemon. */
static void test_wavetoy_mpiexec(void **state) {
  need_daemon();
  char wavetoy[1100];
  /* next to the daemon: build/bin/../examples/wavetoy */
  snprintf(wavetoy, sizeof wavetoy, "%s", "build/examples/wavetoy");
  if (la_td_find_bin("../examples/wavetoy", wavetoy, sizeof wavetoy) != 0 &&
      access("build/examples/wavetoy", X_OK) != 0) {
    print_message("skip: wavetoy not built (make examples)\n");
    skip();
  }
  char mpiexec[600];
  if (la_td_find_on_path("mpiexec", mpiexec, sizeof mpiexec) != 0) {
    print_message("skip: mpiexec not found on PATH (install mpich)\n");
    skip();
  }
  start_global(0, T.key);
  start_agent(T.s.ga_addr, NULL);
  char env_agent[100];
  snprintf(env_agent, sizeof env_agent, "LA_AGENT=%s", T.agent);
  const char *env[] = {env_agent, "LA_APP_ID=wavetoy-la-test", NULL};
  const char *argv[] = {mpiexec, "-n",      "4", wavetoy, "--n",
                        "24",    "--steps", "5", NULL};
  char out[8192];
  int rc = la_td_run(argv, env, 60000, out, sizeof out);
  CHECK(rc == 0, "mpiexec wavetoy exited %d:\n%s", rc, out);
  CHECK(strstr(out, "LA registered on 4 of 4 ranks") != NULL,
        "wavetoy did not register its 4 ranks:\n%s", out);
  wait_traces(4 * 5);
  wait_ga("rank_ends", 4);
  assert_int_equal(ntraces(), 20);
  assert_int_equal(ga_ll("traces_duplicate"), 0);
  long long cells = 0;
  for (uint32_t r = 0; r < 4; r++) {
    rank_row_t s;
    CHECK(find_rank("wavetoy-la-test", r, &s) == 0,
          "no RankStart for wavetoy rank %u", r);
    assert_int_equal(s.nprocs, 4);
    assert_string_equal(s.metric, "time");
    cells += s.n_elements;
    check_order("wavetoy-la-test", r, 5);
    for (uint64_t c = 0; c < 5; c++) {
      la_tsql_trace_t t;
      assert_int_equal(la_test_sql_trace(T.s.db, "wavetoy-la-test", r, c, &t),
                       0);
      la_trace_t *tr = NULL;
      assert_int_equal(la_trace_open(t.segments, t.segments_len, &tr, NULL, 0),
                       0);
      double s2 = 0;
      assert_int_equal(la_trace_range_sum(tr, 0, t.n_elements, &s2), 0);
      la_trace_close(tr);
      la_test_sql_trace_free(&t);
      /* the daemon's default, polyline:cv=0.1: sums kept to 2^-11 cv */
      CHECK(t.sum > 0 && fabs(s2 - t.sum) <= (1e-9 + ldexp(0.1, -11)) * t.sum,
            "wavetoy rank %u cycle %llu: decoded %.17g vs %.17g", r,
            (unsigned long long)c, s2, t.sum);
    }
    assert_string_equal(s.reason, "finalize");
  }
  assert_int_equal(cells, 24 * 24 * 24);
}

/* kill -9 of an application with a probe open and buffers in flight. */
static void test_app_killed_mid_cycle(void **state) {
  start_real_pair();
  app_t a = {.name = "victim",
             .app_id = "killed-1",
             .rank = 0,
             .nprocs = 1,
             .n = 50000,
             .cycles = 2,
             .die = 1};
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);
  int pid = r.pid, sem = r.sem_id;
  CHECK(sem >= 0, "the child could not find its semaphore set");
  expect_rec(k, REC_CYCLE, &r);
  expect_rec(k, REC_CYCLE, &r);
  expect_rec(k, REC_READY, &r);
  assert_int_equal(r.rc, 0);
  /* while it lives, its objects exist */
  assert_int_equal(la_test_ipc_count(pid), 1);
  CHECK(semctl(sem, 0, GETVAL) >= 0, "semaphore set %d missing too early", sem);
  wait_log("registered killed-1 rank 0/1");
  la_td_log_mark(T.d);
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(reap_kid(k), 128 + SIGKILL);
  wait_log("killed-1 rank 0 ended (disconnected)");
  rank_row_t e;
  wait_rank_end("killed-1", 0, &e);
  assert_string_equal(e.reason, "disconnected");
  assert_int_equal(e.cycles, 2);
  wait_traces(2); /* what was handed over still arrives */
  /* nothing of the process is left: segment gone, semaphores removed */
  assert_int_equal(la_test_ipc_count(pid), 0);
  errno = 0;
  CHECK(semctl(sem, 0, GETVAL) == -1 && (errno == EINVAL || errno == EIDRM),
        "semaphore set %d of the killed process still exists", sem);
  assert_int_equal(status_ll("apps"), 0);
  assert_int_equal(status_ll("ranks_ended"), 1);
}

/* Garbage, a 1 GiB frame header and a valid frame of an unexpected type
 * each close their connection only; applications registered before and
 * after keep working. */
static void test_garbage_and_oversized_frames(void **state) {
  start_real_pair();
  app_t a = {.name = "steady",
             .app_id = "before-1",
             .rank = 0,
             .nprocs = 1,
             .n = 3000,
             .cycles = 3,
             .phases = 1};
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);

  /* 1: random bytes (fixed seed; byte 6, a reserved header byte, non-zero
   * so no seed can make a valid header) */
  uint8_t junk[256];
  srand(4242);
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rand();
  junk[6] = 0xA5;
  int fd = connect_agent();
  assert_int_equal(la_write_all(fd, junk, sizeof junk, 2000), 0);
  CHECK(la_td_wait_closed(fd, WAIT_MS) == 0,
        "garbage did not close the "
        "connection");
  close(fd);

  /* 2: a header announcing 1 GiB, then a few bytes */
  uint8_t big[16] = {0x40, 0, 0, 0, 0, LA__MSG_TYPE__MSG_REGISTER_REQUEST,
                     0,    0, 1, 2, 3, 4,
                     5,    6, 7, 8};
  fd = connect_agent();
  assert_int_equal(la_write_all(fd, big, sizeof big, 2000), 0);
  CHECK(la_td_wait_closed(fd, WAIT_MS) == 0,
        "a 1 GiB frame did not close the "
        "connection");
  close(fd);

  /* 3: a valid Ack, which only the GlobalAgent sends */
  La__Ack ack = LA__ACK__INIT;
  ack.seq = 7;
  fd = connect_agent();
  assert_int_equal(la_send_msg(fd, LA__MSG_TYPE__MSG_ACK, &ack.base, 2000), 0);
  CHECK(la_td_wait_closed(fd, WAIT_MS) == 0,
        "an unexpected Ack did not close the "
        "connection");
  close(fd);

  CHECK(la_td_alive(T.d), "the daemon died");
  wait_log("frame larger than");
  wait_log("unexpected Ack");
  /* the application registered before still works */
  go(k);
  for (int c = 0; c < 3; c++) {
    expect_rec(k, REC_CYCLE, &r);
    assert_int_equal(r.rc, 0);
  }
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(reap_kid(k), 0);
  /* and one registered after */
  app_t b = {.name = "steady",
             .app_id = "after-1",
             .rank = 0,
             .nprocs = 1,
             .n = 2000,
             .cycles = 3};
  double sums[3];
  run_app(&b, sums);
  wait_traces(6);
  for (int c = 0; c < 3; c++) {
    assert_int_equal(la_test_sql_ll(T.s.db,
                                    "SELECT count(*) FROM traces WHERE app_id "
                                    "= 'before-1' AND rank = 0 AND "
                                    "cycle_tag = %d",
                                    c),
                     1);
    check_trace("after-1", 0, (uint64_t)c, b.n, sums[c], NULL);
  }
  long long bad = status_ll("bad_frames");
  CHECK(bad >= 3, "bad_frames %lld, expected >= 3", bad);
  print_message("bad_frames after garbage, 1 GiB header, Ack: %lld\n", bad);
}

/* max_connections + 50 sockets at once; the daemon stays up and serves a
 * real application afterwards; an idle connection times out. */
static void test_connection_flood(void **state) {
  need_daemon();
  start_global(0, T.key);
  const char *extra[] = {"--agent.max_connections=20",
                         "--agent.handshake_timeout=300ms", NULL};
  start_agent(T.s.ga_addr, extra);
  enum { NFLOOD = 70 };
  int fds[NFLOOD];
  int opened = 0;
  for (int i = 0; i < NFLOOD; i++) {
    fds[i] = la_tcp_connect("127.0.0.1", la_td_port(T.d), 2000);
    if (fds[i] >= 0) opened++;
  }
  CHECK(opened == NFLOOD, "only %d of %d connections opened", opened, NFLOOD);
  /* the refused ones are closed at once by the daemon */
  int closed = 0;
  for (int i = 0; i < NFLOOD; i++)
    if (la_td_wait_closed(fds[i], 50) >= 0) closed++;
  CHECK(la_td_alive(T.d), "the daemon died in the flood");
  for (int i = 0; i < NFLOOD; i++)
    if (fds[i] >= 0) close(fds[i]);
  print_message(
      "flood: %d of %d connections closed by the daemon within "
      "50 ms each\n",
      closed, NFLOOD);
  wait_status("connections_refused", 1);
  wait_log("connection refused");
  /* once the flood is gone, a real application registers */
  long long end = la_td_now_ms() + WAIT_MS;
  while (status_ll("connections") > 1 && la_td_now_ms() < end) la_td_nap_ms(20);
  app_t a = {.name = "afterflood",
             .app_id = "flood-1",
             .rank = 0,
             .nprocs = 1,
             .n = 1000,
             .cycles = 2};
  double sums[2];
  run_app(&a, sums);
  wait_traces(2);
  check_trace("flood-1", 0, 0, a.n, sums[0], NULL);
  check_trace("flood-1", 0, 1, a.n, sums[1], NULL);
  /* an idle connection is closed after handshake_timeout */
  la_td_log_mark(T.d);
  int fd = connect_agent();
  CHECK(la_td_wait_closed(fd, WAIT_MS) == 0, "an idle connection stayed open");
  close(fd);
  wait_log("sent nothing useful within 300 ms");
  CHECK(status_ll("connections_timed_out") >= 1,
        "no timed-out connection "
        "counted");
  CHECK(la_td_alive(T.d), "the daemon died");
}

/* A segment and semaphore set with a valid header, as libla makes them,
 * owned by this (parent) process. */
static uint64_t make_victim(long n) {
  uint64_t size = la_shm_segment_size((uint64_t)n, 3);
  T.victim_shm = shmget(IPC_PRIVATE, size, IPC_CREAT | IPC_EXCL | 0600);
  assert_true(T.victim_shm >= 0);
  la_shm_header_t *h = shmat(T.victim_shm, NULL, 0);
  assert_true(h != (void *)-1);
  memset(h, 0, sizeof *h);
  uint64_t nonce = 0x5eed5eedULL * (uint64_t)getpid() + (uint64_t)time(NULL);
  h->version = LA_SHM_VERSION;
  h->header_len = sizeof *h;
  h->n_elements = (uint64_t)n;
  h->n_buffers = 3;
  h->creator_pid = (int32_t)getpid();
  h->nonce = nonce;
  h->buffer_stride = la_shm_buffer_stride((uint64_t)n);
  h->segment_size = size;
  h->n_channels = 1;
  h->magic = LA_SHM_MAGIC;
  assert_null(la_shm_header_check(h, size, (uint64_t)n, 3, nonce));
  shmdt(h);
  T.victim_sem = semget(IPC_PRIVATE, 3, IPC_CREAT | IPC_EXCL | 0600);
  assert_true(T.victim_sem >= 0);
  return nonce;
}

typedef struct {
  int shm, sem, victim_pid;
  uint64_t nonce;
  long n;
} thief_t;

/* Sends one RegisterRequest naming the victim's objects with the given pid
 * and nonce; reports the reply. */
static void thief_try(const thief_t *t, int pid, uint64_t nonce, int res) {
  rec_t r;
  memset(&r, 0, sizeof r);
  r.kind = REC_REPLY;
  r.rc = 1;
  char host[200];
  uint16_t port;
  la_hostport_parse(T.agent, host, sizeof host, &port);
  int fd = la_tcp_connect(host, port, 3000);
  if (fd < 0) {
    r.rc = fd;
    snprintf(r.msg, sizeof r.msg, "connect failed");
    send_rec(res, &r);
    return;
  }
  La__RegisterRequest q = la_test_register_request(
      "thief-1", "thief", pid, t->shm, t->sem, nonce, (uint64_t)t->n, 3);
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  char why[200] = "";
  int rc = la_send_msg(fd, LA__MSG_TYPE__MSG_REGISTER_REQUEST, &q.base, 3000);
  if (rc == 0) rc = la_recv_msg(fd, 1 << 16, 5000, &type, &m, why, sizeof why);
  if (rc == 0 && type == LA__MSG_TYPE__MSG_REGISTER_REPLY) {
    La__RegisterReply *rep = (La__RegisterReply *)m;
    r.rc = rep->status;
    snprintf(r.msg, sizeof r.msg, "%s", rep->message ? rep->message : "");
  } else {
    r.rc = rc ? rc : 1;
    snprintf(r.msg, sizeof r.msg, "no reply: %s", why);
  }
  la_msg_free(m);
  close(fd);
  send_rec(res, &r);
}

static void thief_main(const void *arg, int res, int go) {
  const thief_t *t = arg;
  thief_try(t, (int)getpid(), t->nonce, res);          /* my pid, right nonce */
  thief_try(t, t->victim_pid, t->nonce ^ 0xFFFF, res); /* its pid, bad nonce */
  _exit(0);
}

static void test_foreign_segment_refused(void **state) {
  need_daemon();
  start_agent("", NULL);
  thief_t t = {.n = 100, .victim_pid = (int)getpid()};
  t.nonce = make_victim(t.n);
  t.shm = T.victim_shm;
  t.sem = T.victim_sem;
  kid_t *k = spawn(thief_main, &t, 0);
  rec_t r1, r2;
  expect_rec(k, REC_REPLY, &r1);
  expect_rec(k, REC_REPLY, &r2);
  assert_int_equal(reap_kid(k), 0);
  CHECK(r1.rc == LA_EREFUSED && strstr(r1.msg, "created by pid"),
        "own pid: status %d, \"%s\"", r1.rc, r1.msg);
  CHECK(r2.rc == LA_EREFUSED && strstr(r2.msg, "nonce"),
        "victim's pid, wrong nonce: status %d, \"%s\"", r2.rc, r2.msg);
  print_message("refusals: \"%s\"; \"%s\"\n", r1.msg, r2.msg);
  wait_log("refused: segment");
  assert_int_equal(la_td_log_count(T.d, "registration from"), 2);
  assert_int_equal(status_ll("registrations_refused"), 2);
  assert_int_equal(status_ll("registrations"), 0);
  /* the victim's objects are untouched */
  struct shmid_ds ds;
  assert_int_equal(shmctl(T.victim_shm, IPC_STAT, &ds), 0);
  assert_int_equal(ds.shm_nattch, 0);
  CHECK(semctl(T.victim_sem, 0, GETVAL) >= 0,
        "the victim's semaphores "
        "were removed");
  assert_int_equal(shmctl(T.victim_shm, IPC_RMID, NULL), 0);
  assert_int_equal(semctl(T.victim_sem, 0, IPC_RMID), 0);
  T.victim_shm = T.victim_sem = -1;
}

/* The GlobalAgent is missing at start and appears later on its port. */
static void test_global_appears_later(void **state) {
  need_daemon();
  int port = la_td_closed_port();
  assert_true(port > 0);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
  start_agent(addr, NULL);
  enum { CYCLES = 6 };
  app_t a = {.name = "early",
             .app_id = "early-1",
             .rank = 0,
             .nprocs = 1,
             .n = 4000,
             .cycles = CYCLES};
  double sums[CYCLES];
  run_app(&a, sums);
  wait_status("cycles_compacted", CYCLES);
  wait_status("ranks_ended", 1);
  char link[64];
  status_str("global_link", link, sizeof link);
  CHECK(strcmp(link, "connected") != 0, "linked to nothing: %s", link);
  assert_int_equal(status_ll("queue_items"), CYCLES + 2);
  start_global((uint16_t)port, T.key);
  wait_traces(CYCLES);
  wait_ga("rank_ends", 1);
  assert_int_equal(ntraces(), CYCLES);
  /* in order: arrival order is seq order (check_clean_link), RankStart
   * first, RankEnd last (check_order) */
  check_clean_link(1);
  for (int i = 0; i < CYCLES; i++)
    check_trace("early-1", 0, (uint64_t)i, a.n, sums[i], NULL);
  check_order("early-1", 0, CYCLES);
  wait_status("messages_acked", CYCLES + 2);
  status_str("global_link", link, sizeof link);
  assert_string_equal(link, "connected");
}

/* The GlobalAgent dies (having stored but not acknowledged) and comes
 * back while an application runs. */
static void test_global_restart_mid_run(void **state) {
  need_daemon();
  enum { PHASE = 5 }; /* 15 cycles: no buffer reuse (APP_BUFFERS) */
  app_t a = {.name = "longrun",
             .app_id = "restart-1",
             .rank = 0,
             .nprocs = 1,
             .n = 5000,
             .cycles = PHASE,
             .phases = 3};
  start_stand_in(); /* the real GlobalAgent always acknowledges */
  start_agent(la_test_global_addr(T.g), NULL);
  /* the stand-in's thread idle (the handshake done) before the fork: a
   * child forked while it held a lock (the ASan allocator's) could block */
  CHECK(la_test_global_wait(T.g, LA_TG_AUTH_OK, 1, WAIT_MS) == 0,
        "the LocalAgent never authenticated to the stand-in");
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);
  /* phase 1: stored, never acknowledged */
  la_test_global_set_ack(T.g, 0);
  go(k);
  for (int c = 0; c < PHASE; c++) expect_rec(k, REC_CYCLE, &r);
  wait_tg_traces(PHASE);
  /* crash; phase 2 runs with no GlobalAgent; its port held meanwhile (a
   * bind to port 0, another test's daemon, could be given it) */
  la_test_global_kill(T.g);
  int hold = la_td_hold_port(la_test_global_port(T.g));
  go(k);
  for (int c = 0; c < PHASE; c++) expect_rec(k, REC_CYCLE, &r);
  wait_status("cycles_compacted", 2 * PHASE);
  /* back, acknowledging again; phase 3 */
  la_test_global_set_ack(T.g, 1);
  la_td_release_port(&hold);
  CHECK(la_test_global_revive(T.g) == 0, "cannot revive on the same port");
  go(k);
  for (int c = 0; c < PHASE; c++) expect_rec(k, REC_CYCLE, &r);
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(reap_kid(k), 0);
  wait_tg_traces(3 * PHASE);
  CHECK(la_test_global_wait(T.g, LA_TG_RANK_ENDS, 1, WAIT_MS) == 0,
        "no RankEnd reached the stand-in");
  wait_status("messages_acked", 3 * PHASE + 2);
  assert_int_equal(la_test_global_ntraces(T.g), 3 * PHASE);
  for (uint64_t c = 0; c < 3 * PHASE; c++)
    assert_non_null(la_test_global_find(T.g, "restart-1", 0, c));
  assert_int_equal(la_test_global_rank_starts(T.g), 1);
  assert_int_equal(status_ll("queue_items"), 0);
  print_message(
      "GlobalAgent restart: %zu unique traces, %zu duplicate "
      "traces and %llu duplicate rank messages resent, %llu "
      "connections\n",
      la_test_global_ntraces(T.g), la_test_global_duplicates(T.g),
      (unsigned long long)la_test_global_count(T.g, LA_TG_RANK_DUPLICATES),
      (unsigned long long)la_test_global_count(T.g, LA_TG_CONNECTIONS));
  /* phase 1 was never acknowledged: it must have been sent again */
  CHECK(la_test_global_duplicates(T.g) >= PHASE, "only %zu duplicates",
        la_test_global_duplicates(T.g));
}

/* queue_bytes = 0: every message goes to the spool; a restart with a
 * GlobalAgent sends it all. */
static void test_spool_survives_restart(void **state) {
  need_daemon();
  enum { CYCLES = 5 };
  const char *extra[] = {"--global.queue_bytes=0", NULL};
  start_agent("", extra);
  app_t a = {.name = "spooled",
             .app_id = "spool-1",
             .rank = 0,
             .nprocs = 1,
             .n = 3000,
             .cycles = CYCLES,
             .compact = "lossless"};
  double sums[CYCLES];
  run_app(&a, sums);
  wait_status("ranks_ended", 1);
  wait_status("spool_items", CYCLES + 2);
  assert_int_equal(status_ll("queue_mem_bytes"), 0);
  assert_int_equal(la_td_stop(T.d, WAIT_MS), 0);
  wait_log("stopped");
  la_td_log_mark(T.d);
  start_global(0, T.key);
  start_agent(T.s.ga_addr, NULL);
  char line[512];
  wait_log("from an earlier run");
  la_td_log_line(T.d, "from an earlier run", line, sizeof line);
  CHECK(strstr(line, "holds 7 messages") != NULL, "%s", line);
  wait_traces(CYCLES);
  wait_ga("rank_ends", 1);
  check_clean_link(1);
  for (int c = 0; c < CYCLES; c++)
    check_trace("spool-1", 0, (uint64_t)c, a.n, sums[c], "lossless");
  check_order("spool-1", 0, CYCLES);
  /* acknowledged, so deleted from the spool */
  long long end = la_td_now_ms() + WAIT_MS;
  while (status_ll("spool_items") > 0 && la_td_now_ms() < end) la_td_nap_ms(20);
  assert_int_equal(status_ll("spool_items"), 0);
}

static void test_wrong_secret(void **state) {
  need_daemon();
  char other[600], why[200];
  la_td_path(T.d, "other-secret", other, sizeof other);
  assert_int_equal(la_auth_generate_secret_file(other, why, sizeof why), 0);
  start_global(0, other);
  start_agent(T.s.ga_addr, NULL);
  wait_log("refused this agent");
  char link[64];
  status_str("global_link", link, sizeof link);
  CHECK(strcmp(link, "connected") != 0, "global_link is %s", link);
  CHECK(ga_ll("auth_failures") > 0, "no auth failure counted");
  CHECK(!la_td_log_has(T.s.ga, "' connected from"),
        "the GlobalAgent admitted the LocalAgent");
  char line[512];
  la_td_log_line(T.d, "refused this agent", line, sizeof line);
  print_message("%s\n", line);
}

/* A GlobalAgent that accepts the link and closes it at the first trace (a
 * frame it refuses) is retried ever more slowly, up to reconnect_max
 * (docs/security.md), not at reconnect_min for ever: the handshake alone
 * does not reset the backoff, an Ack does. With reconnect_min 20 ms and
 * reconnect_max 400 ms the LocalAgent connected about 60 times in 2 s
 * before; now at most a dozen. */
static void test_refused_link_backs_off(void **state) {
  need_daemon();
  start_stand_in();
  la_test_global_set_refuse_traces(T.g, 1);
  const char *extra[] = {"--global.reconnect_min=20ms",
                         "--global.reconnect_max=400ms", NULL};
  start_agent(la_test_global_addr(T.g), extra);
  app_t a = {.name = "backoff", .app_id = "backoff", .nprocs = 1, .n = 50,
             .cycles = 1};
  run_app(&a, NULL);
  CHECK(la_test_global_wait(T.g, LA_TG_PROTOCOL_ERRORS, 1, WAIT_MS) == 0,
        "the stand-in never refused a trace");
  uint64_t c0 = la_test_global_count(T.g, LA_TG_CONNECTIONS);
  usleep(2000 * 1000);
  uint64_t c1 = la_test_global_count(T.g, LA_TG_CONNECTIONS);
  print_message("%llu connections in 2 s after the first refusal\n",
                (unsigned long long)(c1 - c0));
  CHECK(c1 - c0 <= 12,
        "%llu connections in 2 s: the refused link is retried at "
        "reconnect_min",
        (unsigned long long)(c1 - c0));
  CHECK(c1 - c0 >= 2, "the link was not retried at all");
}

/* A port file that cannot be written stops both daemons with a message
 * that says why (the system's reason), not only which file. */
static void test_port_file_error_says_why(void **state) {
  need_daemon();
  const char *names[2] = {"la-localagent", "la-globalagent"};
  for (int i = 0; i < 2; i++) {
    char bin[1024], spool[700], db[700], out[4096];
    if (la_td_find_bin(names[i], bin, sizeof bin) != 0) continue;
    la_td_path(T.d, "pf-spool", spool, sizeof spool);
    la_td_path(T.d, "pf.db", db, sizeof db);
    char a1[800], a2[800];
    const char *argv_la[] = {bin, "--agent.listen=127.0.0.1:0",
                             "--agent.port_file=/nonexistent-la-dir/port", a1,
                             NULL};
    const char *argv_ga[] = {bin, "--agents.listen=127.0.0.1:0",
                             "--agents.port_file=/nonexistent-la-dir/port",
                             "--feed.listen=127.0.0.1:0", a2, NULL};
    snprintf(a1, sizeof a1, "--global.spool_dir=%s", spool);
    snprintf(a2, sizeof a2, "--store.path=%s", db);
    int rc = la_td_run(i == 0 ? argv_la : argv_ga, NULL, 10000, out, sizeof out);
    print_message("%s exited %d: %s", names[i], rc, out);
    CHECK(rc != 0, "%s started without its port file", names[i]);
    CHECK(strstr(out, "/nonexistent-la-dir/port: No such file or directory"),
          "%s: the message does not say why: %s", names[i], out);
  }
}

/* test_fast_application_keeps_its_connection: DAEMON BUG (a buffer given back
 * before its busy bit was cleared).
 *
 * localagent/worker.c:la__work (thread pool) gives buffer i back to the
 * application (la_app_ipc_take -> semop +1, app_ipc.c:129) right after
 * copying it, but the session's busy bit for i is cleared only later, in
 * la__after on the loop thread (worker.c:61). An application that cycles
 * faster than that round trip takes buffer i again, fills it and sends
 * DataReady{buffer i} before la__after ran; session.c:182 then sees the bit
 * still set, logs "buffer i notified twice before it was read: closing" and
 * closes the application's connection: the rank ends with "protocol error",
 * profiling stops for the rest of the run (LA_STAT_PROFILED < cycles) and
 * the remaining cycles never reach the GlobalAgent. The window is the whole
 * compaction of the cycle (la__after runs after it), so any application
 * faster than compaction hits it: small meshes back to back, and 10^6
 * elements (bench_localagent) alike.
 *
 * Reproduction: one application, default 3 buffers, wait policy, 64
 * elements, 1000 cycles back to back. Expected: 1000 traces, RankEnd
 * "finalize", no "notified twice" line. Actual (2-core VM): the connection
 * is closed within the first few to few hundred cycles.
 *
 * A fix must clear the busy bit before the semaphore is given back (an
 * atomic per-buffer flag set on submit and cleared by the worker just
 * before semop), or accept a DataReady for a buffer whose semaphore the
 * daemon has already released. */
static void test_fast_application_keeps_its_connection(void **state) {
  start_real_pair();
  enum { CYCLES = 1000 };
  app_t a = {.name = "fast",
             .app_id = "fast-1",
             .rank = 0,
             .nprocs = 1,
             .n = 64,
             .cycles = CYCLES,
             .buffers = 3};
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);
  int lost_at = -1;
  for (int c = 0; c < CYCLES; c++) {
    expect_rec(k, REC_CYCLE, &r);
    if (r.rc != 0 && lost_at < 0) lost_at = c;
  }
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(reap_kid(k), 0);
  rank_row_t e;
  wait_rank_end("fast-1", 0, &e);
  char line[512];
  la_td_log_line(T.d, "notified twice", line, sizeof line);
  CHECK(!line[0] && !strcmp(e.reason, "finalize") && r.profiled == CYCLES,
        "the daemon closed a correct application: RankEnd \"%s\" after %llu "
        "cycles; the application profiled %ld of %d cycles (first failing "
        "LA_dataXfer at cycle %d); log: %s",
        e.reason, (unsigned long long)e.cycles, r.profiled, CYCLES, lost_at,
        line);
  wait_traces(CYCLES);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* SIGHUP re-reads the file (log.level error -> info); --check-config
 * reports a bad file by file:line and exits 2. */
static void test_sighup_and_check_config(void **state) {
  need_daemon();
  char conf[600], port_file[600], spool[600];
  char a0[700], a1[700], a2[700];
  la_td_path(T.d, "la.conf", conf, sizeof conf);
  la_td_path(T.d, "port", port_file, sizeof port_file);
  la_td_path(T.d, "spool", spool, sizeof spool);
  write_file(conf, "# test\n[log]\nlevel = error\n");
  snprintf(a0, sizeof a0, "--agent.port_file=%s", port_file);
  snprintf(a1, sizeof a1, "--global.spool_dir=%s", spool);
  snprintf(a2, sizeof a2, "--config=%s", conf);
  const char *args[] = {a2, "--agent.listen=127.0.0.1:0", a0,
                        a1, "--global.address=",          NULL};
  CHECK(la_td_start(T.d, args, port_file, WAIT_MS) > 0, "no start");
  /* at level error the info lines are not logged */
  assert_int_equal(status_ll("apps"), 0);
  CHECK(!la_td_log_has(T.d, "ready"), "info line logged at level error");
  write_file(conf, "# test\n[log]\nlevel = info\n");
  assert_int_equal(la_td_signal(T.d, SIGHUP), 0);
  wait_log("SIGHUP: configuration reloaded");
  CHECK(la_td_alive(T.d), "the daemon died on SIGHUP");
  char st[64];
  status_str("state", st, sizeof st);
  assert_string_equal(st, "running");
  /* a bad file: SIGHUP keeps the old configuration, logs why */
  write_file(conf, "[log]\nlevel = chatty\n");
  la_td_log_mark(T.d);
  assert_int_equal(la_td_signal(T.d, SIGHUP), 0);
  wait_log("keeping the current one");
  CHECK(la_td_alive(T.d), "the daemon died on a bad SIGHUP");
  assert_int_equal(la_td_stop(T.d, WAIT_MS), 0);

  /* --check-config */
  char bin[1024], bad[600], good[600], out[4096];
  assert_int_equal(la_td_find_bin("la-localagent", bin, sizeof bin), 0);
  la_td_path(T.d, "bad.conf", bad, sizeof bad);
  write_file(bad, "[agent]\nmax_connections = 10\nthreads = lots\n");
  const char *argv[] = {bin, "-c", bad, "--check-config", NULL};
  int rc = la_td_run(argv, NULL, WAIT_MS, out, sizeof out);
  char where[700];
  snprintf(where, sizeof where, "%s:3", bad);
  CHECK(rc == 2 && strstr(out, where),
        "--check-config on a bad file: exit "
        "%d, output:\n%s",
        rc, out);
  la_td_path(T.d, "good.conf", good, sizeof good);
  write_file(good, "[agent]\nmax_connections = 10\n");
  const char *argv2[] = {bin, "-c", good, "--check-config", NULL};
  rc = la_td_run(argv2, NULL, WAIT_MS, out, sizeof out);
  CHECK(rc == 0 && strstr(out, "configuration OK"),
        "--check-config on a "
        "good file: exit %d:\n%s",
        rc, out);
}

/* A child that floods the agent: 10^6 elements in 8 buffers, 1000 of them
 * probed a cycle (far faster than the agent compacts a cycle), until the
 * agent is gone; reports its registration only. */
static void flood_main(const void *arg, int res, int go) {
  (void)arg, (void)go;
  LA_setAgent(T.agent);
  LA_setAppId("flood-1");
  LA_setBuffers(8);
  LA_setProbeStartFunc(probe_start, NULL);
  LA_setProbeStopFunc(probe_stop, NULL);
  LA_setMetric("custom");
  rec_t r;
  memset(&r, 0, sizeof r);
  r.kind = REC_REGISTERED;
  r.rc = LA_register("flood", 0, 1, 1000000);
  snprintf(r.msg, sizeof r.msg, "%s", LA_lastError());
  send_rec(res, &r);
  if (r.rc != 0) _exit(1);
  for (int c = 0; c < 1000000 && LA_getStat(LA_STAT_REGISTERED); c++) {
    for (long e = 0; e < 1000000; e += 1000) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    if (LA_dataXfer() != 0) break;
  }
  LA_finalize();
  _exit(0);
}

/* Compactions the last "finishing N compactions before exit" since the
 * log's mark names, 0 without one. */
static int forced_jobs(void) {
  char line[300];
  int n = 0;
  if (la_td_log_line(T.d, "compactions before exit", line, sizeof line) != 0)
    return 0;
  const char *at = strstr(line, "finishing ");
  return at && sscanf(at, "finishing %d", &n) == 1 ? n : 0;
}

/* The agent stopped by force (a second SIGTERM) while a flooding rank's
 * cycles were on the lane (agent.max_backlog = 1 with one compaction
 * thread: a rank's second cycle in flight is on the lane): it exits 0 and
 * the rank's session is freed, its end logged, once the cycles finish.
 * Before, the lane's items were freed without their done callbacks and
 * the session stayed (no end, its hold never released). The agent is
 * stopped (SIGSTOP) while the rank fills its buffers, so that cycles wait
 * for it; a run where the signals found fewer than two cycles in flight
 * proves nothing and is tried again (up to 6 runs). */
static void test_forced_stop_ends_ranks_on_the_lane(void **state) {
  need_daemon();
  const char *extra[] = {"--agent.max_backlog=1", "--agent.threads=1",
                         "--agent.behind=coarse", NULL};
  int run, jobs = 0;
  for (run = 0; run < 6 && jobs < 2; run++) {
    la_td_log_mark(T.d);
    start_agent("", extra);
    rec_t r;
    kid_t *k = spawn(flood_main, NULL, 0);
    expect_rec(k, REC_REGISTERED, &r);
    CHECK(r.rc == 0, "LA_register: %s", r.msg);
    wait_status("cycles_coarse", 1);
    assert_int_equal(la_td_signal(T.d, SIGSTOP), 0);
    la_td_nap_ms(300);
    la_td_signal(T.d, SIGTERM);
    la_td_signal(T.d, SIGCONT);
    la_td_nap_ms(1);
    la_td_signal(T.d, SIGTERM);
    int st = la_td_wait_exit(T.d, WAIT_MS);
    CHECK(st == 0, "run %d: la-localagent exited %d", run, st);
    assert_int_equal(reap_kid(k), 0);
    jobs = la_td_log_has(T.d, "second signal") ? forced_jobs() : 0;
    print_message("run %d: %d cycles in flight at the forced stop; rank "
                  "end logged: %s\n",
                  run, jobs, la_td_log_has(T.d, "flood-1 rank 0 ended")
                                 ? "yes" : "no");
    if (jobs >= 2)
      CHECK(la_td_log_has(T.d, "flood-1 rank 0 ended"),
            "run %d: stopped by force with %d cycles in flight, the rank's "
            "session was never freed (no end logged)",
            run, jobs);
  }
  CHECK(jobs >= 2, "in %d runs the agent never stopped by force with a "
                   "cycle on the lane", run);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_several_apps_and_ranks),
      T(test_wavetoy_mpiexec),
      T(test_app_killed_mid_cycle),
      T(test_garbage_and_oversized_frames),
      T(test_connection_flood),
      T(test_foreign_segment_refused),
      T(test_global_appears_later),
      T(test_global_restart_mid_run),
      T(test_spool_survives_restart),
      T(test_wrong_secret),
      T(test_refused_link_backs_off),
      T(test_port_file_error_says_why),
      T(test_sighup_and_check_config),
      T(test_fast_application_keeps_its_connection),
      T(test_forced_stop_ends_ranks_on_the_lane),
#undef T
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
