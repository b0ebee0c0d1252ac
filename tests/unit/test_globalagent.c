/* SPDX-License-Identifier: BSD-3-Clause */
/* test_globalagent.c: the real la-globalagent, fed by real la-localagent
 * daemons and real applications, end to end on loopback.
 *
 * Every test starts build/bin/la-globalagent as a child process on two
 * ephemeral ports (LocalAgents; feed) with its database, secret and log in a
 * fresh temporary directory (tests/support/la_test_daemon.h), and usually
 * one or two la-localagent daemons with different --agent.host names, so one
 * machine plays several nodes. The applications are wavetoy under mpiexec
 * (an MPMD command line gives ranks 0-1 one LocalAgent and ranks 2-3 the
 * other), forked processes calling libla with custom probes, or, where a
 * test needs exact control of what arrives, a LocalAgent played by the test
 * itself (la_sockio + la_auth: Hello, Challenge, Auth, then RankStart and
 * CompactTrace frames).
 *
 * Assertions are on what a user sees: the SQLite store (read-only, as
 * docs/storage.md shows), Trace-Sets received through libla_client, the
 * daemons' log lines and `lactl status` rows, exit statuses and checksums.
 * Never on timing: every wait is for a condition, bounded by WAIT_MS.
 *
 * Covers: several LocalAgents feeding one GlobalAgent from a real
 * MPI run (every Trace-Set complete, received once by a subscriber); a
 * killed LocalAgent (partial sets naming exactly its ranks, the application
 * unharmed); the GlobalAgent killed and restarted mid-run (nothing lost,
 * nothing twice); a wrong secret (refused on both sides, nothing stored); a
 * subscriber that stops reading (the others get everything, drops counted
 * and reported to it); garbage on both ports (only that connection closes);
 * queries (apps, cycles, get, latest) and per-rank totals equal to the raw
 * values libla dumped (LA_DUMP_RAW).
 *
 * Teardown kills every process the test started (daemons, mpiexec process
 * groups, forked ranks) and removes the temporary directories. Tests skip
 * when a daemon is not built; wavetoy tests skip without mpiexec.
 */
#include <dirent.h>
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "la.h"
#include "la_auth.h"
#include "la_secure_io.h"
#include "la_client.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_sockio.h"
#include "la_trace_msg.h"
#include "la_test_agent.h"
#include "la_test_daemon.h"
#include "la_test_check.h"
#include "la_test_stack.h"
#include "la_test_mpi.h"
#include "la_test_sql.h"
#include "la_test_ipc.h"
#include "la_test_link.h"
#include "la_test_tcp.h"

#define WAIT_MS 15000 /* longest wait for anything; a broken daemon fails */
#define WT_N 24       /* wavetoy grid: 24^3 cells, 3456 per rank */
#define MAXTAG 4096   /* cycle tags the tests use stay below this */

/* ------------------------------------------------------- test fixture -- */

enum { MAXKIDS = 16, MAXLA = 2 };

static struct {
  la_test_daemon_t *ga;        /* la-globalagent */
  la_test_daemon_t *la[MAXLA]; /* la-localagent */
  char key[600];               /* the secret file, in ga's directory */
  char db[600];                /* store.path */
  char agents_pf[600], feed_pf[600];
  uint16_t agents_port, feed_port;
  int hold[2]; /* la_td_hold_port's sockets while the GlobalAgent is down */
  char agents_addr[64], feed_addr[64];
  char la_addr[MAXLA][64];
  pid_t kids[MAXKIDS]; /* forked application ranks */
  int nkids;
  pid_t bg; /* a background mpiexec (its own process group) */
  la_client_t *subs[4];
} T;

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  T.hold[0] = T.hold[1] = -1;
  T.ga = la_td_new("la-globalagent");
  if (T.ga) {
    if (la_ts_ga_files(T.ga, sizeof T.key, T.key, T.db, T.agents_pf,
                       T.feed_pf) != 0)
      return -1;
  }
  return 0;
}

static void reap(pid_t pid) {
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

static int teardown(void **state) {
  for (int i = 0; i < 4; i++) la_client_close(T.subs[i]);
  if (T.bg > 0) {
    kill(-T.bg, SIGKILL);
    reap(T.bg);
  }
  for (int i = 0; i < T.nkids; i++)
    if (T.kids[i] > 0) {
      kill(T.kids[i], SIGKILL);
      reap(T.kids[i]);
    }
  for (int i = 0; i < MAXLA; i++) la_td_free(T.la[i]);
  la_td_free(T.ga); /* SIGTERM, SIGKILL if needed, directory removed */
  for (int i = 0; i < 2; i++) la_td_release_port(&T.hold[i]);
  memset(&T, 0, sizeof T);
  return 0;
}

static void need_daemons(void) {
  char p[1024];
  if (!T.ga || la_td_find_bin("la-localagent", p, sizeof p) != 0 ||
      la_td_find_bin("lactl", p, sizeof p) != 0) {
    print_message(
        "skip: la-globalagent, la-localagent or lactl not built "
        "(make build/bin/la-globalagent build/bin/la-localagent "
        "build/bin/lactl, or set LA_TEST_BIN_DIR)\n");
    skip();
  }
}

static void dump_logs(void) {
  la_td_print_log_tail(T.ga, 3000);
  for (int i = 0; i < MAXLA; i++) la_td_print_log_tail(T.la[i], 3000);
}

/* Fails the test (with the daemons' logs) unless cond holds. */
#define CHECK(cond, ...) LA_TD_CHECK(dump_logs(), cond, __VA_ARGS__)

/* ------------------------------------------------------------ daemons -- */

/* Reads a port number the daemon wrote into path (waits up to WAIT_MS). */
static uint16_t read_port_file(const char *path) {
  int p = la_td_read_port(path, WAIT_MS);
  CHECK(p > 0, "no port in %s", path);
  return (uint16_t)p;
}

/* Starts the GlobalAgent: ephemeral ports (or the previous run's, when
 * same_ports), the fixture's store and secret, stitch timeout 2 s, debug
 * log; extra options (NULL-terminated, may be NULL) come last and win. The
 * daemon object's own port (la_td_port, la_td_status) is the feed port,
 * where `lactl status` works; the LocalAgents' port is read from its file. */
static void start_ga(const char *const *extra, int same_ports) {
  la_td_argv_t a;
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agents.listen=127.0.0.1:%u",
                 same_ports ? (unsigned)T.agents_port : 0u);
  la_td_argv_add(&a, "--feed.listen=127.0.0.1:%u",
                 same_ports ? (unsigned)T.feed_port : 0u);
  la_ts_ga_args(&a, T.agents_pf, T.feed_pf, T.db, T.key);
  la_td_argv_add(&a, "--stitch.timeout=2s");
  la_td_argv_add(&a, "--log.level=debug");
  la_td_argv_extend(&a, extra);
  unlink(T.agents_pf);
  for (int i = 0; i < 2; i++) la_td_release_port(&T.hold[i]);
  int port = la_td_start(T.ga, a.v, T.feed_pf, WAIT_MS);
  CHECK(port > 0, "la-globalagent did not start");
  T.feed_port = (uint16_t)port;
  T.agents_port = read_port_file(T.agents_pf);
  snprintf(T.agents_addr, sizeof T.agents_addr, "127.0.0.1:%u", T.agents_port);
  snprintf(T.feed_addr, sizeof T.feed_addr, "127.0.0.1:%u", T.feed_port);
}

/* Kills the GlobalAgent (SIGKILL) and holds its two ports until start_ga
 * starts it on them again (same_ports): a bind to port 0 meanwhile (a
 * LocalAgent's, another test's) could be given one, and the restart would
 * fail with "address already in use". */
static void kill_ga(void) {
  la_td_signal(T.ga, SIGKILL);
  assert_int_equal(la_td_wait_exit(T.ga, WAIT_MS), 128 + SIGKILL);
  T.hold[0] = la_td_hold_port(T.agents_port);
  T.hold[1] = la_td_hold_port(T.feed_port);
}

/* Starts LocalAgent i as node host, linked to the GlobalAgent with the
 * secret file key (NULL: the fixture's), quick reconnects. */
static void start_la(int i, const char *host, const char *key) {
  if (!T.la[i]) T.la[i] = la_td_new("la-localagent");
  CHECK(T.la[i] != NULL, "no la-localagent");
  CHECK(la_test_start_la(T.la[i], T.agents_addr, key ? key : T.key, host,
                         WAIT_MS, T.la_addr[i], sizeof T.la_addr[i]) == 0,
        "la-localagent %s did not start", host);
}

/* Waits until LocalAgent i is linked to the GlobalAgent. */
static void wait_linked(int i) {
  char v[64] = "";
  CHECK(la_test_wait_linked(T.la[i], WAIT_MS, v, sizeof v) == 0,
        "LocalAgent %d not linked: %s", i, v);
}

/* LocalAgents 0 and 1 as nodeA and nodeB, both linked. */
static void start_two_nodes(void) {
  start_la(0, "nodeA", NULL);
  start_la(1, "nodeB", NULL);
  wait_linked(0);
  wait_linked(1);
}

/* The GlobalAgent's status rows and log (la_test_check.h). */
#define ga_status(key) la_tc_status(T.ga, key)
#define ga_wait_status(key, min) la_tc_wait_status(T.ga, key, min, WAIT_MS)
#define ga_wait_log(needle) la_tc_wait_log(T.ga, needle, WAIT_MS)

/* ------------------------------------------------------------- store --- */

/* The store's first value of a query / first column of its rows
 * (la_test_sql.h), on a fresh read-only snapshot. */
#define db_ll(...) la_test_sql_ll(T.db, __VA_ARGS__)
#define db_texts(out, max, ...) la_test_sql_texts(T.db, out, max, __VA_ARGS__)

/* Waits until query's value >= min. */
static void db_wait(long long min, const char *sql) {
  CHECK(la_test_sql_wait(T.db, min, WAIT_MS, "%s", sql) == 0,
        "store: %s stayed below %lld (is %lld)", sql, min, db_ll("%s", sql));
}

/* ------------------------------------------------------- subscribers --- */

static la_client_t *subscribe(int slot, const char *app_id) {
  la_client_t *c = NULL;
  int rc = la_client_connect(T.feed_addr, 5000, &c);
  CHECK(rc == 0, "connect to the feed: %s", la_client_strerror(rc));
  T.subs[slot] = c;
  rc = la_client_subscribe(c, app_id, 0);
  CHECK(rc == 0, "subscribe: %s", la_client_error(c));
  /* a request on the same connection: once answered, the GlobalAgent has
   * handled the Subscribe before it */
  la_client_rows_t *rows = NULL;
  rc = la_client_list(c, "apps", NULL, &rows);
  CHECK(rc == 0, "list apps: %s", la_client_error(c));
  la_client_rows_free(rows);
  return c;
}

/* What one subscriber received for one application. */
typedef struct got {
  int count[MAXTAG];          /* sets received per cycle tag */
  la_traceset_t *set[MAXTAG]; /* the first of each */
  int distinct;
  uint64_t max_dropped;
} got_t;

static void got_free(got_t *g) {
  for (int i = 0; i < MAXTAG; i++) la_traceset_free(g->set[i]);
  free(g);
}

/* Receives sets from c until it has one of each tag in tags[0..n) (or
 * WAIT_MS passes: the caller checks). Sets of other tags are kept too. */
static got_t *collect(la_client_t *c, const uint64_t *tags, int n) {
  got_t *g = calloc(1, sizeof *g);
  assert_non_null(g);
  long long end = la_td_now_ms() + WAIT_MS;
  for (;;) {
    int have = 0;
    for (int i = 0; i < n; i++) have += g->count[tags[i]] > 0;
    if (have == n) break;
    long long left = end - la_td_now_ms();
    if (left <= 0) break;
    la_traceset_t *t = NULL;
    int rc = la_client_next(c, (int)left, &t);
    if (rc == LA_ETIMEDOUT) continue;
    CHECK(rc == 0, "la_client_next: %s (%s)", la_client_strerror(rc),
          la_client_error(c));
    uint64_t tag = la_traceset_cycle(t);
    CHECK(tag < MAXTAG, "cycle tag %llu", (unsigned long long)tag);
    if (la_traceset_dropped(t) > g->max_dropped)
      g->max_dropped = la_traceset_dropped(t);
    if (g->count[tag]++ == 0) {
      g->set[tag] = t;
      g->distinct++;
    } else {
      la_traceset_free(t);
    }
  }
  return g;
}

/* ------------------------------------------------------ applications --- */

static char mpiexec[600], wavetoy[1100];

static void need_mpi(void) {
  if (la_td_find_on_path("mpiexec", mpiexec, sizeof mpiexec) != 0) {
    print_message("skip: mpiexec not found on PATH (install mpich)\n");
    skip();
  }
  if (la_td_find_bin("../examples/wavetoy", wavetoy, sizeof wavetoy) != 0) {
    snprintf(wavetoy, sizeof wavetoy, "build/examples/wavetoy");
    if (access(wavetoy, X_OK) != 0) {
      print_message("skip: wavetoy not built (make build/examples/wavetoy)\n");
      skip();
    }
  }
}

/* argv of an MPMD wavetoy run: ranks 0-1 with LA_AGENT=la[0], ranks 2-3
 * with la[1] (or all four with la[0] when nla is 1), steps time steps.
 * Strings live in static storage until the next call. no_la: --no-la, all
 * four ranks, no agent. */
static const char **wavetoy_argv(int nla, int steps, int no_la) {
  static la_td_argv_t a;
  char ag[MAXLA][100];
  const char *env[MAXLA][2];
  for (int i = 0; i < MAXLA; i++) {
    snprintf(ag[i], sizeof ag[i], "LA_AGENT=%s", T.la_addr[i]);
    env[i][0] = no_la ? NULL : ag[i];
    env[i][1] = NULL;
  }
  la_td_argv_init(&a);
  la_td_argv_add(&a, "%s", mpiexec);
  if (no_la || nla == 1) {
    la_test_wavetoy_ranks(&a, 0, 4, env[0], wavetoy, WT_N, steps);
    if (no_la) la_td_argv_add(&a, "--no-la");
  } else {
    for (int i = 0; i < 2; i++)
      la_test_wavetoy_ranks(&a, i > 0, 2, env[i], wavetoy, WT_N, steps);
  }
  return a.v;
}

/* The environment of a wavetoy run: the application id every rank agrees
 * on, 16 buffers and a period such that no buffer is reused within the run
 * (see the note at bug_... in test_localagent.c: the LocalAgent's buffer
 * reuse race closes fast applications), a raw dump directory (or none). */
static const char **wavetoy_env(const char *app_id, int period,
                                const char *dump) {
  static char id[200], per[40], raw[700];
  static const char *e[8];
  int n = 0;
  snprintf(id, sizeof id, "LA_APP_ID=%s", app_id);
  snprintf(per, sizeof per, "LA_PERIOD=%d", period);
  e[n++] = id;
  e[n++] = per;
  e[n++] = "LA_BUFFERS=16";
  if (dump) {
    snprintf(raw, sizeof raw, "LA_DUMP_RAW=%s", dump);
    e[n++] = raw;
  }
  e[n] = NULL;
  return e;
}

/* The "wavetoy: checksum ..." line of out, into line. */
static void checksum_line(const char *out, char *line, size_t len) {
  const char *p = strstr(out, "wavetoy: checksum");
  line[0] = '\0';
  if (p) snprintf(line, len, "%.*s", (int)strcspn(p, "\n"), p);
}

/* The checksum of a --no-la run of the same problem. */
static void baseline_checksum(int steps, char *line, size_t len) {
  static char out[8192];
  int rc = la_td_run(wavetoy_argv(1, steps, 1), NULL, 60000, out, sizeof out);
  CHECK(rc == 0, "wavetoy --no-la exited %d:\n%s", rc, out);
  checksum_line(out, line, len);
  CHECK(line[0], "no checksum line:\n%s", out);
}

/* Starts argv in the background, in its own process group, with env_add,
 * output into the file out. */
static void spawn_bg(const char *const *argv, const char *const *env_add,
                     const char *out) {
  pid_t pid = la_test_spawn_group(argv, env_add, out);
  assert_true(pid > 0);
  T.bg = pid;
}

/* wavetoy as app_id on both nodes in the background (steps, period, raw
 * dumps into dump or none), its output into outf (a path in the
 * GlobalAgent's directory, 700 bytes). */
static void spawn_two_node_wavetoy(const char *app_id, int steps, int period,
                                   const char *dump, char *outf) {
  la_td_path(T.ga, "wavetoy.out", outf, 700);
  spawn_bg(wavetoy_argv(2, steps, 0), wavetoy_env(app_id, period, dump), outf);
}

/* 1 while the background job runs; else 0 and *status (exit code or
 * 128+signal). */
static int bg_running(int *status) {
  int st = 0;
  pid_t r = waitpid(T.bg, &st, WNOHANG);
  if (r == 0) return 1;
  if (r == T.bg) {
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    T.bg = 0;
  }
  return 0;
}

static int bg_wait(int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  int st = -1;
  while (bg_running(&st)) {
    CHECK(la_td_now_ms() < end, "the background run did not end");
    la_td_nap_ms(10);
  }
  return st;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return strdup("");
  char *b = calloc(1, 1 << 16);
  size_t n = fread(b, 1, (1 << 16) - 1, f);
  b[n] = '\0';
  fclose(f);
  return b;
}

/* A forked application rank calling libla with a custom probe. */
static double value_of(long e, uint64_t cycle, int rank) {
  return 100.0 + (double)((e / 50) % 7) * 10.0 +
         (double)(((uint64_t)e * 31 + cycle * 17 + (uint64_t)rank * 5) % 11) *
             0.25;
}

/* Forks one rank of app_id: registers with the LocalAgent at agent, runs
 * cycles (<= 15: no buffer reuse) of n elements, finalizes; exits 0 when
 * every call succeeded. */
static pid_t fork_rank(const char *agent, const char *app_id, int rank,
                       int nprocs, long n, int cycles) {
  assert_true(T.nkids < MAXKIDS);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
    _exit(la_ta_run_rank(agent, app_id, "gatest", rank, nprocs, n, cycles,
                         value_of));
  }
  T.kids[T.nkids++] = pid;
  return pid;
}

static int reap_kids(void) {
  int worst = 0;
  long long end = la_td_now_ms() + WAIT_MS;
  for (int i = 0; i < T.nkids; i++) {
    int st = 0;
    for (;;) {
      pid_t r = waitpid(T.kids[i], &st, WNOHANG);
      if (r == T.kids[i]) break;
      CHECK(la_td_now_ms() < end, "rank process %d did not exit",
            (int)T.kids[i]);
      la_td_nap_ms(5);
    }
    T.kids[i] = 0;
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (code > worst) worst = code;
  }
  T.nkids = 0;
  return worst;
}

/* --------------------------------------------- a LocalAgent, by hand --- */

/* la_test_link.h does the work; these check its results. */
typedef la_test_link_t fake_t;

/* Connects to the agents port as host and authenticates with the secret
 * file key. Returns the AuthResult status; on success f is ready. */
static int fake_connect(fake_t *f, const char *host, const char *key) {
  int32_t status = -1;
  char why[300] = "";
  int rc = la_test_link_open(f, T.agents_port, key, host, WAIT_MS, &status, why,
                             sizeof why);
  CHECK(rc == 0, "handshake: %s", why);
  return status;
}

/* A RankStart that names host as its LocalAgent's (as the real one does). */
static void fake_rank_start_on(fake_t *f, const char *host, const char *app_id,
                               uint32_t rank, uint32_t nprocs, uint64_t n) {
  assert_int_equal(la_test_link_rank_start(f, host, app_id, rank, nprocs, n),
                   0);
}

static void fake_rank_start(fake_t *f, const char *app_id, uint32_t rank,
                            uint32_t nprocs, uint64_t n) {
  fake_rank_start_on(f, "fakenode", app_id, rank, nprocs, n);
}

/* A LocalAgent played by hand as host, linked, that announced ranks 0-2 of
 * app (3 ranks of n elements each). */
static void fake_three_ranks(fake_t *f, const char *host, const char *app,
                             uint64_t n) {
  CHECK(fake_connect(f, host, T.key) == 0, "refused");
  for (uint32_t k = 0; k < 3; k++) fake_rank_start(f, app, k, 3, n);
}

static void fake_trace(fake_t *f, const char *app_id, uint32_t rank,
                       uint64_t tag, const la_compact_result_t *r) {
  assert_int_equal(la_test_link_trace(f, app_id, rank, tag, r, NULL, 0), 0);
}

/* Reads Acks until everything sent is acknowledged. */
static void fake_wait_acked(fake_t *f) {
  char why[300] = "";
  CHECK(la_test_link_wait_acked(f, WAIT_MS, why, sizeof why) == 0, "%s", why);
}

/* ---------------------------------------------------- shared checks --- */

/* The (rank, tag) pairs of the raw dump files of app_id in dir. */
typedef struct dumped {
  int n;
  uint32_t rank[1024];
  uint64_t tag[1024];
} dumped_t;

static void list_dumps(const char *dir, const char *app_id, dumped_t *d) {
  DIR *dp = opendir(dir);
  CHECK(dp != NULL, "no dump directory %s", dir);
  struct dirent *e;
  size_t pl = strlen(app_id);
  d->n = 0;
  while ((e = readdir(dp)) && d->n < 1024) {
    unsigned r;
    unsigned long long c;
    char tail[8];
    if (strncmp(e->d_name, app_id, pl) || e->d_name[pl] != '.') continue;
    if (sscanf(e->d_name + pl, ".r%u.c%llu.%7s", &r, &c, tail) == 3 &&
        !strcmp(tail, "f64")) {
      d->rank[d->n] = r;
      d->tag[d->n++] = c;
    }
  }
  closedir(dp);
}

/* The raw values libla measured for (app, rank, tag): count, exact sum. */
static uint64_t raw_sum(const char *dir, const char *app_id, uint32_t rank,
                        uint64_t tag, double *sum) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.r%u.c%llu.f64", dir, app_id, rank,
           (unsigned long long)tag);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "no raw dump %s", path);
  fseek(f, 0, SEEK_END);
  long bytes = ftell(f);
  fseek(f, 0, SEEK_SET);
  size_t n = (size_t)bytes / sizeof(double);
  double *x = malloc(n * sizeof *x + 1);
  assert_non_null(x);
  size_t got = fread(x, sizeof(double), n, f);
  fclose(f);
  CHECK(got == n, "short read of %s", path);
  *sum = la_compact_sum(x, n); /* the definition of stats.sum */
  free(x);
  return (uint64_t)n;
}

static int rel_close(double a, double b) {
  return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Checks a received set against the raw dumps: rank_elements and exact
 * per-rank totals (1e-9 relative) for every present rank. */
static void check_set_raw(const la_traceset_t *t, const char *dir) {
  uint32_t np = la_traceset_nprocs(t);
  double totals[64];
  assert_true(np <= 64);
  assert_int_equal(la_traceset_rank_totals(t, totals), 0);
  for (uint32_t r = 0; r < np; r++) {
    if (!la_traceset_has_rank(t, r)) continue;
    double s = 0;
    uint64_t n =
        raw_sum(dir, la_traceset_app_id(t), r, la_traceset_cycle(t), &s);
    CHECK(la_traceset_rank_elements(t, r) == n,
          "cycle %llu rank %u: %llu "
          "elements, the raw dump has %llu",
          (unsigned long long)la_traceset_cycle(t), r,
          (unsigned long long)la_traceset_rank_elements(t, r),
          (unsigned long long)n);
    CHECK(s > 0 && rel_close(totals[r], s),
          "cycle %llu rank %u: total "
          "%.17g, raw sum %.17g",
          (unsigned long long)la_traceset_cycle(t), r, totals[r], s);
  }
}

/* Runs wavetoy (MPMD over two LocalAgents when nla is 2) to completion and
 * checks it exited 0 with all four ranks registered. */
static void run_wavetoy(const char *app_id, int nla, int steps, int period,
                        const char *dump, char *out, size_t len) {
  int rc = la_td_run(wavetoy_argv(nla, steps, 0),
                     wavetoy_env(app_id, period, dump), 60000, out, len);
  CHECK(rc == 0, "mpiexec wavetoy exited %d:\n%s", rc, out);
  CHECK(strstr(out, "LA registered on 4 of 4 ranks") != NULL,
        "wavetoy did not register its 4 ranks:\n%s", out);
}

/* ------------------------------------------------------------- tests --- */

/* Two LocalAgents (nodeA: ranks 0-1, nodeB: ranks 2-3) feed one
 * GlobalAgent from one mpiexec run; a subscriber subscribed before the run
 * gets every Trace-Set exactly once, complete, with the right element
 * counts; the store agrees. */
static void test_two_agents_one_mpi_run(void **state) {
  need_daemons();
  need_mpi();
  start_ga(NULL, 0);
  start_two_nodes();
  la_client_t *sub = subscribe(0, "wt-two");
  la_client_t *all = subscribe(1, NULL); /* every application */
  enum { STEPS = 12 };
  static char out[8192];
  run_wavetoy("wt-two", 2, STEPS, 1, NULL, out, sizeof out);
  uint64_t tags[STEPS];
  for (int i = 0; i < STEPS; i++) tags[i] = (uint64_t)i;
  got_t *g = collect(sub, tags, STEPS);
  got_t *g2 = collect(all, tags, STEPS);
  /* nothing more: each exactly once (a duplicate would be queued behind) */
  db_wait(4, "SELECT count(*) FROM ranks WHERE app_id='wt-two' AND ended=1");
  CHECK(g->distinct == STEPS && g2->distinct == STEPS,
        "the subscribers "
        "got %d and %d of %d cycles",
        g->distinct, g2->distinct, STEPS);
  for (int c = 0; c < STEPS; c++) {
    CHECK(g->count[c] == 1 && g2->count[c] == 1,
          "cycle %d received %d and "
          "%d times",
          c, g->count[c], g2->count[c]);
    const la_traceset_t *t = g->set[c];
    assert_string_equal(la_traceset_app_id(t), "wt-two");
    assert_int_equal(la_traceset_nprocs(t), 4);
    CHECK(la_traceset_complete(t) && la_traceset_missing(t, NULL) == 0,
          "cycle %d incomplete: %zu ranks missing", c,
          la_traceset_missing(t, NULL));
    for (uint32_t r = 0; r < 4; r++)
      assert_int_equal(la_traceset_rank_elements(t, r), WT_N * WT_N * WT_N / 4);
    assert_int_equal(la_traceset_elements(t), WT_N * WT_N * WT_N);
    assert_int_equal(la_traceset_dropped(t), 0);
    assert_string_equal(la_traceset_metric(t), "time");
  }
  /* no set arrives twice: nothing else is queued for the subscriber */
  la_traceset_t *extra = NULL;
  int rc = la_client_next(sub, 200, &extra);
  CHECK(rc == LA_ETIMEDOUT, "an extra set arrived: cycle %llu",
        extra ? (unsigned long long)la_traceset_cycle(extra) : 0ULL);
  got_free(g);
  got_free(g2);
  /* the store: every set closed complete, each rank's trace once, ranks
   * 0-1 from nodeA and 2-3 from nodeB */
  assert_int_equal(db_ll("SELECT count(*) FROM trace_sets WHERE app_id="
                         "'wt-two' AND closed=1 AND complete=1 AND "
                         "nprocs=4 AND n_missing=0"),
                   STEPS);
  assert_int_equal(db_ll("SELECT count(*) FROM trace_sets"), STEPS);
  assert_int_equal(db_ll("SELECT count(*) FROM traces WHERE app_id="
                         "'wt-two'"),
                   4 * STEPS);
  assert_int_equal(db_ll("SELECT count(DISTINCT rank || ':' || cycle_tag) "
                         "FROM traces"),
                   4 * STEPS);
  assert_int_equal(db_ll("SELECT count(*) FROM ranks WHERE app_id='wt-two' "
                         "AND ((rank < 2 AND host='nodeA') OR (rank >= 2 "
                         "AND host='nodeB')) AND n_elements=%d "
                         "AND end_reason='finalize'",
                         WT_N * WT_N * WT_N / 4),
                   4);
  assert_int_equal(db_ll("SELECT nprocs FROM apps WHERE app_id='wt-two'"), 4);
  CHECK(db_ll("SELECT count(*) FROM agents WHERE (host LIKE 'nodeA/%%' "
              "OR host LIKE 'nodeB/%%') AND max_seq > %d",
              STEPS) == 2,
        "the agents table does not hold both LocalAgents");
  assert_int_equal(ga_status("sets_complete"), STEPS);
  assert_int_equal(ga_status("sets_partial"), 0);
  assert_int_equal(ga_status("traces_stored"), 4 * STEPS);
  assert_int_equal(ga_status("traces_orphan"), 0);
  assert_int_equal(ga_status("conflicts"), 0);
  assert_int_equal(ga_status("agents"), 2);
  assert_int_equal(ga_status("agents_linked"), 2);
}

/* Queries of what a run stored (apps, cycles, get, latest), and per-rank
 * totals equal to the raw per-element values libla measured (LA_DUMP_RAW),
 * to 1e-9 relative. */
static void test_queries_and_exact_totals(void **state) {
  need_daemons();
  need_mpi();
  start_ga(NULL, 0);
  start_two_nodes();
  char dump[700];
  la_td_path(T.ga, "raw", dump, sizeof dump);
  assert_int_equal(mkdir(dump, 0700), 0);
  enum { STEPS = 8 };
  static char out[8192];
  run_wavetoy("wt-query", 2, STEPS, 1, dump, out, sizeof out);
  db_wait(STEPS,
          "SELECT count(*) FROM trace_sets WHERE app_id='wt-query' "
          "AND closed=1");
  dumped_t *d = calloc(1, sizeof *d);
  assert_non_null(d);
  list_dumps(dump, "wt-query", d);
  CHECK(d->n == 4 * STEPS, "%d raw dumps, expected %d", d->n, 4 * STEPS);
  free(d);

  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(T.feed_addr, 5000, &c), 0);
  /* the measured values are what LA_DUMP_RAW has: compare those (the
   * default would be the robust weights) */
  la_client_set_weights(c, LA_WEIGHTS_MEASURED);
  T.subs[0] = c;
  /* apps */
  la_client_rows_t *rows = NULL;
  int rc = la_client_list(c, "apps", NULL, &rows);
  CHECK(rc == 0, "list apps: %s", la_client_error(c));
  CHECK(la_client_rows_count(rows) == 1, "%zu apps",
        la_client_rows_count(rows));
  assert_string_equal(la_client_rows_key(rows, 0), "wt-query");
  const char *v = la_client_rows_value(rows, 0);
  char want[200];
  snprintf(want, sizeof want, "nprocs=4 elements=%d", WT_N * WT_N * WT_N);
  CHECK(strstr(v, want) && strstr(v, "complete=8") && strstr(v, "partial=0") &&
            strstr(v, "ranks_ended=4"),
        "apps row: %s", v);
  la_client_rows_free(rows);
  /* cycles */
  rc = la_client_list(c, "cycles", "wt-query", &rows);
  CHECK(rc == 0, "list cycles: %s", la_client_error(c));
  CHECK(la_client_rows_count(rows) == STEPS, "%zu cycles",
        la_client_rows_count(rows));
  for (size_t i = 0; i < STEPS; i++) {
    char k[32];
    snprintf(k, sizeof k, "%zu", i);
    assert_string_equal(la_client_rows_key(rows, i), k);
    CHECK(strstr(la_client_rows_value(rows, i),
                 "state=complete ranks=4 "
                 "missing=0"),
          "cycle %zu: %s", i, la_client_rows_value(rows, i));
  }
  la_client_rows_free(rows);
  /* a client of feed protocol 1 (no version in its Query) is refused with
   * a reply naming both versions, not answered in a format it misreads */
  int fd = la_tcp_connect("127.0.0.1", (uint16_t)T.feed_port, 5000);
  assert_true(fd >= 0);
  La__Query oq = LA__QUERY__INIT;
  oq.what = "apps";
  assert_int_equal(la_send_msg(fd, LA__MSG_TYPE__MSG_QUERY, &oq.base, 5000), 0);
  uint16_t otype = 0;
  ProtobufCMessage *om = NULL;
  assert_int_equal(la_recv_msg(fd, 1u << 20, 5000, &otype, &om, NULL, 0), 0);
  close(fd);
  assert_int_equal(otype, LA__MSG_TYPE__MSG_QUERY_REPLY);
  const La__QueryReply *orep = (const La__QueryReply *)om;
  assert_int_equal(orep->status, LA_EVERSION);
  CHECK(orep->message && strstr(orep->message, "feed protocol 1") &&
            strstr(orep->message, "speaks 2"),
        "refusal: %s", orep->message ? orep->message : "(none)");
  assert_null(orep->apps);
  la_msg_free(om);
  /* get every cycle; totals against the raw dumps */
  for (uint64_t cy = 0; cy < STEPS; cy++) {
    la_traceset_t *t = NULL;
    rc = la_client_get(c, "wt-query", cy, &t);
    CHECK(rc == 0, "get cycle %llu: %s", (unsigned long long)cy,
          la_client_error(c));
    assert_int_equal(la_traceset_cycle(t), cy);
    assert_true(la_traceset_complete(t));
    check_set_raw(t, dump);
    /* the decoded weights sum to the totals within the default polyline
     * bound (2^-11 cv relative) */
    double totals[4], s = 0;
    assert_int_equal(la_traceset_rank_totals(t, totals), 0);
    for (uint32_t r = 0; r < 4; r++) {
      uint64_t first = r * (uint64_t)(WT_N * WT_N * WT_N / 4);
      assert_int_equal(
          la_traceset_range_sum(t, first, WT_N * WT_N * WT_N / 4, &s), 0);
      CHECK(fabs(s - totals[r]) <= (1e-9 + ldexp(0.1, -11)) * totals[r],
            "cycle %llu rank %u: range sum %.17g, total %.17g",
            (unsigned long long)cy, r, s, totals[r]);
    }
    la_traceset_free(t);
  }
  la_traceset_t *t = NULL;
  rc = la_client_latest(c, "wt-query", &t);
  CHECK(rc == 0, "latest: %s", la_client_error(c));
  assert_int_equal(la_traceset_cycle(t), STEPS - 1);
  check_set_raw(t, dump);
  la_traceset_free(t);
  rc = la_client_get(c, "wt-query", 999, &t);
  CHECK(rc == LA_ENOTFOUND, "get of a cycle never run: %d", rc);
  rc = la_client_latest(c, "no-such-app", &t);
  CHECK(rc == LA_ENOTFOUND, "latest of an unknown app: %d", rc);
  /* the store's stat_sum is the same exact total */
  double s = 0;
  raw_sum(dump, "wt-query", 3, 5, &s);
  la_tsql_trace_t tr;
  CHECK(la_test_sql_trace(T.db, "wt-query", 3, 5, &tr) == 0,
        "no stored trace of rank 3 at cycle 5");
  la_test_sql_trace_free(&tr);
  CHECK(rel_close(tr.sum, s), "stat_sum %.17g, raw %.17g", tr.sum, s);
  CHECK(ga_status("queries") >= STEPS + 4, "queries not counted");
}

/* SIGKILL of one of two LocalAgents mid-run: its ranks carry on
 * unprofiled (same checksum, exit 0); every cycle's Trace-Set is closed,
 * complete or partial, and the partial ones miss exactly ranks of the
 * killed agent, at least one of them both. */
static void test_killed_localagent_partial_sets(void **state) {
  need_daemons();
  need_mpi();
  /* 150 steps, period 10: 15 profiled cycles, 0..140 */
  enum { STEPS = 150, PERIOD = 10, CYCLES = STEPS / PERIOD };
  char base[256], line[256], outf[700];
  baseline_checksum(STEPS, base, sizeof base);
  start_ga(NULL, 0);
  start_two_nodes();
  la_client_t *sub = subscribe(0, "wt-kill");
  spawn_two_node_wavetoy("wt-kill", STEPS, PERIOD, NULL, outf);
  /* nodeB has delivered something of both its ranks: kill it */
  db_wait(2,
          "SELECT count(DISTINCT rank) FROM traces WHERE app_id="
          "'wt-kill' AND rank >= 2");
  int st = -1;
  CHECK(bg_running(&st),
        "the run ended before the kill (exit %d): make it "
        "longer",
        st);
  la_td_signal(T.la[1], SIGKILL);
  assert_int_equal(la_td_wait_exit(T.la[1], WAIT_MS), 128 + SIGKILL);
  st = bg_wait(60000);
  char *out = slurp(outf);
  checksum_line(out, line, sizeof line);
  CHECK(st == 0, "wavetoy exited %d after its LocalAgent was killed:\n%s", st,
        out);
  CHECK(!strcmp(line, base),
        "checksum changed:\n  with LA: %s\n  no LA:   "
        "%s",
        line, base);
  CHECK(strstr(out, "LA registered on 4 of 4 ranks") != NULL, "%s", out);
  free(out);
  /* every cycle closes (complete, or partial after the stitch timeout) */
  uint64_t tags[CYCLES];
  for (int i = 0; i < CYCLES; i++) tags[i] = (uint64_t)(i * PERIOD);
  got_t *g = collect(sub, tags, CYCLES);
  CHECK(g->distinct == CYCLES, "the subscriber got %d of %d cycles",
        g->distinct, CYCLES);
  int partial = 0, both = 0;
  for (int i = 0; i < CYCLES; i++) {
    const la_traceset_t *t = g->set[tags[i]];
    CHECK(g->count[tags[i]] == 1, "cycle %llu received %d times",
          (unsigned long long)tags[i], g->count[tags[i]]);
    const uint32_t *miss = NULL;
    size_t nm = la_traceset_missing(t, &miss);
    assert_int_equal(la_traceset_complete(t), nm == 0);
    for (size_t k = 0; k < nm; k++)
      CHECK(miss[k] >= 2, "cycle %llu misses rank %u of the live agent",
            (unsigned long long)tags[i], miss[k]);
    for (uint32_t r = 0; r < 4; r++) {
      int missing = 0;
      for (size_t k = 0; k < nm; k++) missing |= miss[k] == r;
      assert_int_equal(la_traceset_has_rank(t, r), !missing);
    }
    partial += nm > 0;
    both += nm == 2;
    if (nm) {
      /* NaN totals for the missing ranks, numbers for the others */
      double tot[4];
      assert_int_equal(la_traceset_rank_totals(t, tot), 0);
      for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(isnan(tot[r]), !la_traceset_has_rank(t, r));
    }
  }
  CHECK(both > 0,
        "no Trace-Set misses both ranks of the killed agent "
        "(%d partial)",
        partial);
  got_free(g);
  /* the store says the same, naming the killed agent's ranks */
  long long sets = db_ll(
      "SELECT count(*) FROM trace_sets WHERE app_id="
      "'wt-kill' AND closed=1");
  assert_int_equal(sets, CYCLES);
  assert_int_equal(db_ll("SELECT count(*) FROM trace_sets WHERE app_id="
                         "'wt-kill' AND complete=0 AND missing_ranks IN "
                         "('2', '3', '2,3')"),
                   partial);
  assert_int_equal(db_ll("SELECT count(*) FROM trace_sets WHERE app_id="
                         "'wt-kill' AND missing_ranks='2,3' AND n_missing=2"),
                   both);
  char hosts[4][64];
  int nh = db_texts(hosts, 4,
                    "SELECT DISTINCT r.host FROM trace_sets s JOIN"
                    " ranks r ON r.app_id = s.app_id AND ',' || "
                    "s.missing_ranks || ',' LIKE '%%,' || r.rank || ',%%' "
                    "WHERE s.app_id='wt-kill'");
  CHECK(nh == 1 && !strcmp(hosts[0], "nodeB"),
        "missing ranks belong to %d "
        "hosts, first %s",
        nh, nh ? hosts[0] : "-");
  ga_wait_log("closed partial");
  assert_int_equal(ga_status("sets_partial"), partial);
  assert_int_equal(ga_status("sets_complete"), CYCLES - partial);
  /* the killed agent's ranks removed their own IPC objects */
  char pids[2][64];
  assert_int_equal(db_texts(pids, 2,
                            "SELECT pid FROM ranks WHERE app_id="
                            "'wt-kill' AND rank >= 2"),
                   2);
  for (int i = 0; i < 2; i++)
    CHECK(la_test_ipc_count(atoi(pids[i])) == 0,
          "shared memory segment of rank pid %s left", pids[i]);
}

/* SIGKILL of the GlobalAgent mid-run, with Trace-Sets open in the store
 * (nodeB is held with SIGSTOP until then, so ranks 2-3 of the latest cycles
 * are missing for sure), and a restart on the same ports and database: the
 * open sets are rebuilt from the store; after the run every (app, rank,
 * cycle) libla profiled is in the store exactly once with its exact sum, and
 * every Trace-Set is complete. */
static void test_globalagent_restart_mid_run(void **state) {
  need_daemons();
  need_mpi();
  enum { STEPS = 150, PERIOD = 10, CYCLES = STEPS / PERIOD };
  /* a long stitch timeout: sets open across the restart must complete from
   * resent traces, not close partial while the GlobalAgent is away */
  const char *extra[] = {"--stitch.timeout=60s", NULL};
  start_ga(extra, 0);
  start_two_nodes();
  char dump[700], outf[700];
  la_td_path(T.ga, "raw", dump, sizeof dump);
  assert_int_equal(mkdir(dump, 0700), 0);
  spawn_two_node_wavetoy("wt-restart", STEPS, PERIOD, dump, outf);
  /* nodeB stops (SIGSTOP) once it delivered something: the sets of the
   * following cycles stay open in the store with ranks 0-1 only */
  db_wait(1,
          "SELECT count(*) FROM traces WHERE app_id='wt-restart' AND "
          "rank >= 2");
  int st = -1;
  CHECK(bg_running(&st), "the run ended before the kill (exit %d)", st);
  la_td_signal(T.la[1], SIGSTOP);
  /* What nodeB had already written to its socket still arrives: wait until
   * the GlobalAgent has read all of it (nothing in flight on the
   * connection, per the kernel), then until its traces are stored: two
   * group commits (nodeA's traces keep coming) that stored none of them,
   * so the sets that follow cannot complete before the kill (they wait for
   * nodeB, and the stitch timeout is long). */
  int nconn = 0;
  CHECK(la_tt_wait_drained(la_td_pid(T.la[1]), T.agents_port, WAIT_MS,
                           &nconn) == 0 &&
            nconn > 0,
        "nodeB's %d connection(s) to the GlobalAgent still hold bytes in "
        "flight after %d ms",
        nconn, WAIT_MS);
  const char *b_sql =
      "SELECT count(*) FROM traces WHERE app_id='wt-restart' AND rank >= 2";
  long long prev = -1, now_n = db_ll(b_sql), c = ga_status("commits");
  for (long long e3 = la_td_now_ms() + WAIT_MS;
       now_n != prev && la_td_now_ms() < e3;) {
    prev = now_n;
    while (ga_status("commits") < c + 2 && la_td_now_ms() < e3)
      la_td_nap_ms(10);
    c = ga_status("commits");
    now_n = db_ll(b_sql);
  }
  CHECK(now_n == prev, "nodeB's traces still being stored after %d ms",
        WAIT_MS);
  db_wait(1,
          "SELECT count(*) FROM trace_sets WHERE app_id='wt-restart' "
          "AND closed=0 AND n_ranks_present=2");
  /* the GlobalAgent dies with those sets open; nodeB goes on */
  kill_ga();
  /* read once it is dead: it stored until the kill */
  long long open_sets = db_ll(
      "SELECT count(*) FROM trace_sets WHERE "
      "closed=0");
  long long before = db_ll("SELECT count(*) FROM traces");
  la_td_signal(T.la[1], SIGCONT);
  /* the application goes on; the LocalAgents keep what is not acked */
  long long c0 = la_td_status_ll(T.la[0], "cycles_compacted");
  long long end = la_td_now_ms() + WAIT_MS;
  while (bg_running(&st) &&
         la_td_status_ll(T.la[0], "cycles_compacted") < c0 + 2 &&
         la_td_now_ms() < end)
    la_td_nap_ms(20);
  long long queued = la_td_status_ll(T.la[0], "queue_items") +
                     la_td_status_ll(T.la[1], "queue_items");
  la_td_log_mark(T.ga);
  start_ga(extra, 1);
  ga_wait_log("rebuilt");
  if (T.bg) st = bg_wait(60000);
  char *out = slurp(outf);
  CHECK(st == 0 && strstr(out, "LA registered on 4 of 4 ranks"),
        "wavetoy exited %d:\n%s", st, out);
  free(out);
  /* everything ends, is acknowledged and closed */
  db_wait(4,
          "SELECT count(*) FROM ranks WHERE app_id='wt-restart' AND "
          "ended=1");
  for (int i = 0; i < MAXLA; i++)
    CHECK(la_td_wait_status_at_most(T.la[i], "queue_items", 0, WAIT_MS) == 0,
          "LocalAgent %d still holds %lld messages", i,
          la_td_status_ll(T.la[i], "queue_items"));
  db_wait(1, "SELECT count(*) = 0 FROM trace_sets WHERE closed=0");
  /* every profiled (rank, cycle), per the raw dumps, once, exact */
  dumped_t *d = calloc(1, sizeof *d);
  assert_non_null(d);
  list_dumps(dump, "wt-restart", d);
  CHECK(d->n == 4 * CYCLES, "%d raw dumps, expected %d", d->n, 4 * CYCLES);
  assert_int_equal(db_ll("SELECT count(*) FROM traces"), d->n);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open_v2(T.db, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  for (int i = 0; i < d->n; i++) {
    sqlite3_stmt *q = NULL;
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT count(*), sum(stat_sum) FROM traces "
             "WHERE app_id='wt-restart' AND rank=%u AND cycle_tag=%llu",
             d->rank[i], (unsigned long long)d->tag[i]);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    int cnt = sqlite3_column_int(q, 0);
    double s = sqlite3_column_double(q, 1), raw = 0;
    sqlite3_finalize(q);
    CHECK(cnt == 1, "rank %u cycle %llu stored %d times", d->rank[i],
          (unsigned long long)d->tag[i], cnt);
    raw_sum(dump, "wt-restart", d->rank[i], d->tag[i], &raw);
    CHECK(rel_close(s, raw),
          "rank %u cycle %llu: stat_sum %.17g, raw "
          "%.17g",
          d->rank[i], (unsigned long long)d->tag[i], s, raw);
  }
  sqlite3_close(db);
  free(d);
  assert_int_equal(db_ll("SELECT count(*) FROM trace_sets WHERE app_id="
                         "'wt-restart' AND closed=1 AND complete=1 AND "
                         "n_ranks_present=4"),
                   CYCLES);
  assert_int_equal(db_ll("SELECT count(*) FROM trace_sets"), CYCLES);
  assert_int_equal(db_ll("SELECT count(*) FROM ranks WHERE started=1"), 4);
  print_message(
      "GlobalAgent restart: %lld traces stored and %lld sets "
      "open at the kill, %lld messages held by the LocalAgents, "
      "%lld duplicates after the restart, %lld stored after it\n",
      before, open_sets, queued, ga_status("traces_duplicate"),
      ga_status("traces_stored"));
  CHECK(ga_status("traces_stored") + before >= 4 * CYCLES,
        "counts do not add up");
}

/* A LocalAgent with another secret: refused with a clear message on both
 * sides, nothing of it stored, and it keeps its traces. */
static void test_wrong_secret_refused(void **state) {
  need_daemons();
  start_ga(NULL, 0);
  char other[600], why[200];
  T.la[0] = la_td_new("la-localagent");
  assert_non_null(T.la[0]);
  la_td_path(T.la[0], "other-secret", other, sizeof other);
  assert_int_equal(la_auth_generate_secret_file(other, why, sizeof why), 0);
  start_la(0, "badnode", other);
  CHECK(la_td_wait_log(T.la[0], "refused this agent", WAIT_MS) == 0,
        "the LocalAgent never logged \"refused this agent\"");
  ga_wait_log("refused");
  char line[512];
  la_td_log_line(T.la[0], "refused this agent", line, sizeof line);
  CHECK(strstr(line, "authentication failed") && strstr(line, "secret"),
        "LocalAgent: %s", line);
  print_message("LocalAgent: %s\n", line);
  la_td_log_line(T.ga, "refused", line, sizeof line);
  CHECK(strstr(line, "badnode") && strstr(line, "127.0.0.1"), "GlobalAgent: %s",
        line);
  print_message("GlobalAgent: %s\n", line);
  /* an application runs through it: nothing reaches the store */
  enum { CYCLES = 3 };
  fork_rank(T.la_addr[0], "refused-1", 0, 2, 2000, CYCLES);
  fork_rank(T.la_addr[0], "refused-1", 1, 2, 2000, CYCLES);
  assert_int_equal(reap_kids(), 0);
  CHECK(
      la_td_wait_status(T.la[0], "cycles_compacted", 2 * CYCLES, WAIT_MS) == 0,
      "the LocalAgent compacted %lld",
      la_td_status_ll(T.la[0], "cycles_compacted"));
  CHECK(la_td_status_ll(T.la[0], "queue_items") >= 2 * CYCLES + 4,
        "the LocalAgent holds %lld messages",
        la_td_status_ll(T.la[0], "queue_items"));
  char link[64] = "";
  la_td_status(T.la[0], "global_link", link, sizeof link);
  CHECK(strcmp(link, "connected") != 0, "global_link %s", link);
  CHECK(ga_status("auth_failures") >= 1, "no authentication failure");
  assert_int_equal(ga_status("traces_stored"), 0);
  assert_int_equal(ga_status("rank_starts"), 0);
  /* not "agents": the refused LocalAgent retries, and a retry's handshake
   * is an open connection until it is refused again */
  assert_int_equal(ga_status("agents_linked"), 0);
  assert_int_equal(db_ll("SELECT count(*) FROM traces"), 0);
  assert_int_equal(db_ll("SELECT count(*) FROM apps"), 0);
  assert_int_equal(db_ll("SELECT count(*) FROM ranks"), 0);
  assert_int_equal(db_ll("SELECT count(*) FROM agents"), 0);
}

/* Compacts one synthetic series (noise, lossless: large) of n elements. */
static void big_trace(size_t n, la_compact_result_t *r) {
  double *x = malloc(n * sizeof *x);
  assert_non_null(x);
  assert_int_equal(la_compact_synth(LA_SYNTH_NOISE, n, 7, x), 0);
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse("lossless", &p, NULL, 0), 0);
  assert_int_equal(la_compact(x, n, &p, r), 0);
  free(x);
}

/* A subscriber that stops reading (small receive buffer, never reads):
 * another one still gets every set, in step with the ingest; the
 * GlobalAgent counts the drops; when the slow one reads again it gets what
 * was queued, a notice (LA_ELIMIT, over feed.queue_bytes) for each set it
 * did not get, and then a set carrying the count, which with what it
 * received adds up to everything published. */
static void test_slow_subscriber(void **state) {
  need_daemons();
  const char *extra[] = {"--feed.queue_bytes=256k", "--store.fsync=no", NULL};
  start_ga(extra, 0);
  la_client_t *fast = subscribe(0, "slow-1");
  /* the slow one: a 4 KiB receive buffer set before connecting */
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  int small = 4096;
  assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small),
                   0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons(T.feed_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  la_client_t *slow = NULL;
  assert_int_equal(la_client_from_fd(fd, 5000, &slow), 0);
  T.subs[1] = slow;
  assert_int_equal(la_client_subscribe(slow, "slow-1", 0), 0);
  la_client_rows_t *rows = NULL;
  assert_int_equal(la_client_list(slow, "apps", NULL, &rows), 0);
  la_client_rows_free(rows);

  la_compact_result_t r;
  big_trace(12500, &r);
  print_message("each Trace-Set carries a %zu-byte trace\n", r.len);
  fake_t f;
  CHECK(fake_connect(&f, "fakenode", T.key) == 0,
        "the test's LocalAgent "
        "was refused");
  fake_rank_start(&f, "slow-1", 0, 1, 12500);
  /* one set per commit; the fast subscriber reads each before the next */
  enum { SETS = 80 };
  for (uint64_t c = 0; c < SETS; c++) {
    fake_trace(&f, "slow-1", 0, c, &r);
    fake_wait_acked(&f);
    la_traceset_t *t = NULL;
    int rc = la_client_next(fast, WAIT_MS, &t);
    CHECK(rc == 0, "the fast subscriber got nothing for cycle %llu: %s",
          (unsigned long long)c, la_client_error(fast));
    CHECK(la_traceset_cycle(t) == c && la_traceset_complete(t) &&
              la_traceset_dropped(t) == 0,
          "fast subscriber: cycle %llu "
          "(expected %llu), dropped %llu",
          (unsigned long long)la_traceset_cycle(t), (unsigned long long)c,
          (unsigned long long)la_traceset_dropped(t));
    la_traceset_free(t);
  }
  ga_wait_status("sets_dropped_for_slow_subscribers", 1);
  long long dropped = ga_status("sets_dropped_for_slow_subscribers");
  ga_wait_log("not sent: over feed.queue_bytes");
  /* the slow one reads again: a status request on its connection is
   * answered behind everything queued to it, so once the reply is in, its
   * queue is empty (the sets that came with it wait in the client); the
   * next set gets through and carries the count */
  la_client_rows_t *st = NULL;
  int rc = la_client_status(slow, NULL, &st);
  CHECK(rc == 0, "status on the slow connection: %s", la_client_error(slow));
  la_client_rows_free(st);
  fake_trace(&f, "slow-1", 0, SETS, &r);
  fake_wait_acked(&f);
  int received = 0, noticed = 0;
  uint64_t last = 0, reported = 0;
  long long end = la_td_now_ms() + WAIT_MS;
  for (;;) {
    la_traceset_t *t = NULL;
    long long left = end - la_td_now_ms();
    CHECK(left > 0, "the slow subscriber never got the last set");
    rc = la_client_next(slow, (int)left, &t);
    if (rc == LA_ETIMEDOUT) continue;
    if (rc == LA_ELIMIT) { /* told: a set it will not get */
      const char *limit = NULL;
      uint64_t lim = 0;
      assert_int_equal(la_client_notice(slow, NULL, NULL, NULL, &limit, &lim),
                       0);
      assert_string_equal(limit, "feed.queue_bytes");
      assert_int_equal(lim, 256 * 1024);
      noticed++;
      continue;
    }
    CHECK(rc == 0, "slow subscriber: %s", la_client_error(slow));
    uint64_t c = la_traceset_cycle(t);
    CHECK(received == 0 || c > last, "cycle %llu after %llu",
          (unsigned long long)c, (unsigned long long)last);
    last = c;
    reported = la_traceset_dropped(t);
    la_traceset_free(t);
    if (c == SETS) break;
    received++;
  }
  la_traceset_t *t = NULL;
  assert_int_equal(la_client_next(fast, WAIT_MS, &t), 0);
  assert_int_equal(la_traceset_cycle(t), SETS);
  assert_int_equal(la_traceset_dropped(t), 0);
  la_traceset_free(t);
  print_message(
      "slow subscriber: %d sets received, %llu dropped (status "
      "%lld)\n",
      received, (unsigned long long)reported, dropped);
  CHECK(reported > 0 && (long long)reported == dropped &&
            received + (long long)reported == SETS,
        "received %d + dropped %llu "
        "!= %d published (status: %lld dropped)",
        received, (unsigned long long)reported, SETS, dropped);
  assert_int_equal(ga_status("sets_dropped_for_slow_subscribers"), dropped);
  CHECK(noticed == dropped && ga_status("set_notices") == dropped,
        "%d notices received, %lld sent, %lld dropped", noticed,
        ga_status("set_notices"), dropped);
  close(f.fd);
  la_compact_result_free(&r);
}

/* Connects to the GlobalAgent's port, writes len bytes (what they are,
 * for the message) and checks that the GlobalAgent closes the
 * connection. */
static void bytes_close_connection(uint16_t port, const void *bytes, size_t len,
                                   const char *what) {
  int fd = la_tcp_connect("127.0.0.1", port, 5000);
  assert_true(fd >= 0);
  assert_int_equal(la_write_all(fd, bytes, len, 5000), 0);
  CHECK(la_td_wait_closed(fd, WAIT_MS) >= 0, "%s did not close the connection",
        what);
  close(fd);
}

/* Garbage on the feed port and on the agents port (before and after a
 * handshake, and a 1 GiB frame header) closes only that connection: the
 * GlobalAgent keeps serving a subscriber connected before and a real run
 * after, and counts bad frames. */
static void test_garbage_closes_only_that_connection(void **state) {
  need_daemons();
  start_ga(NULL, 0);
  start_la(0, "nodeA", NULL);
  wait_linked(0);
  la_client_t *sub = subscribe(0, "after-garbage");
  uint8_t junk[256];
  srand(4242);
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rand();
  junk[6] = 0xA5; /* a reserved header byte: never a valid frame */
  /* 1: feed port, random bytes */
  bytes_close_connection(T.feed_port, junk, sizeof junk,
                         "garbage on the feed port");
  /* 2: feed port, a valid frame the port does not take (Hello) */
  int fd = la_tcp_connect("127.0.0.1", T.feed_port, 5000);
  assert_true(fd >= 0);
  La__Hello h = LA__HELLO__INIT;
  h.protocol = LA_PROTOCOL_VERSION;
  h.host = "intruder";
  assert_int_equal(la_send_msg(fd, LA__MSG_TYPE__MSG_HELLO, &h.base, 5000), 0);
  CHECK(la_td_wait_closed(fd, WAIT_MS) >= 0,
        "a Hello on the feed port did not close it");
  close(fd);
  /* 3: agents port, random bytes before Hello */
  bytes_close_connection(T.agents_port, junk, sizeof junk,
                         "garbage on the agents port");
  /* 4: agents port, a header announcing 1 GiB */
  uint8_t big[16] = {0x40, 0, 0, 0, 0, LA__MSG_TYPE__MSG_COMPACT_TRACE,
                     0,    0, 1, 2, 3, 4,
                     5,    6, 7, 8};
  bytes_close_connection(T.agents_port, big, sizeof big, "a 1 GiB frame");
  /* 5: an authenticated agent that then sends garbage */
  fake_t f;
  CHECK(fake_connect(&f, "garbler", T.key) == 0, "refused");
  assert_int_equal(la_write_all(f.fd, junk, sizeof junk, 5000), 0);
  CHECK(la_td_wait_closed(f.fd, WAIT_MS) >= 0,
        "garbage after the handshake did not close "
        "the connection");
  close(f.fd);
  /* 6: an authenticated agent sending a subscriber's message */
  CHECK(fake_connect(&f, "garbler", T.key) == 0, "refused");
  La__Subscribe s = LA__SUBSCRIBE__INIT;
  assert_int_equal(la_secure_send_msg(f.fd, &f.sec, LA__MSG_TYPE__MSG_SUBSCRIBE,
                                      &s.base, 5000),
                   0);
  CHECK(la_td_wait_closed(f.fd, WAIT_MS) >= 0,
        "a Subscribe on the agents port did not "
        "close the connection");
  close(f.fd);
  CHECK(la_td_alive(T.ga), "the GlobalAgent died");
  long long bad = ga_status("bad_frames");
  CHECK(bad >= 6, "bad_frames %lld, expected >= 6", bad);
  /* the LocalAgent's link was not touched, and a real run completes */
  char link[64] = "";
  la_td_status(T.la[0], "global_link", link, sizeof link);
  assert_string_equal(link, "connected");
  assert_int_equal(la_td_status_ll(T.la[0], "global_connects"), 1);
  enum { CYCLES = 5 };
  for (int r = 0; r < 3; r++)
    fork_rank(T.la_addr[0], "after-garbage", r, 3, 3000 + r, CYCLES);
  assert_int_equal(reap_kids(), 0);
  uint64_t tags[CYCLES] = {0, 1, 2, 3, 4};
  got_t *g = collect(sub, tags, CYCLES);
  CHECK(g->distinct == CYCLES, "the subscriber got %d of %d sets", g->distinct,
        CYCLES);
  for (int c = 0; c < CYCLES; c++) {
    const la_traceset_t *t = g->set[c];
    assert_int_equal(g->count[c], 1);
    assert_true(la_traceset_complete(t));
    double tot[3];
    assert_int_equal(la_traceset_rank_totals(t, tot), 0);
    for (int r = 0; r < 3; r++) {
      double want = 0;
      for (long e = 0; e < 3000 + r; e++)
        want += value_of(e, (uint64_t)c, r); /* multiples of 1/4: exact */
      CHECK(tot[r] == want, "cycle %d rank %d total %.17g, expected %.17g", c,
            r, tot[r], want);
    }
  }
  got_free(g);
  assert_int_equal(db_ll("SELECT count(*) FROM trace_sets WHERE app_id="
                         "'after-garbage' AND complete=1"),
                   CYCLES);
  /* nothing from the garbage connections was stored */
  assert_int_equal(db_ll("SELECT count(*) FROM apps"), 1);
  ga_wait_log("frame");
  print_message("bad_frames after 6 bad connections: %lld\n", bad);
}

static void fake_rank_end_why(fake_t *f, const char *app_id, uint32_t rank,
                              uint64_t seq, const char *reason) {
  La__RankEnd e = LA__RANK_END__INIT;
  e.seq = seq;
  e.app_id = (char *)app_id;
  e.rank = rank;
  e.reason = (char *)reason;
  assert_int_equal(
      la_secure_send_msg(f->fd, &f->sec, LA__MSG_TYPE__MSG_RANK_END, &e.base,
                         5000),
      0);
}

static void fake_rank_end(fake_t *f, const char *app_id, uint32_t rank,
                          uint64_t seq) {
  fake_rank_end_why(f, app_id, rank, seq, "finalize");
}

/* test_resent_rank_end_changes_nothing: DAEMON BUG (protocol.md
 * "Resends are idempotent").
 *
 * globalagent/ingest.c:176-185 counts every RankEnd that
 * la_store_rank_end() accepts as a new end (++a->ended), but
 * la_store_rank_end (store/store.c:702) returns 0 for a duplicate
 * too (the row is already ended; nothing tells the caller). A RankEnd the
 * LocalAgent resends after a reconnect (stored, but its Ack lost with the
 * connection, or the GlobalAgent restarted after the commit and rebuilt
 * ended = 1 from the store) is counted twice: with nprocs = 2 the
 * application is declared ended while rank 1 still runs ("application ...
 * ended (2 ranks); its open Trace-Sets closed as partial"), its open sets
 * are closed partial and published, and rank 1's next trace is "late": the
 * set is closed again and published a second time.
 *
 * Reproduction (below, a LocalAgent played by the test): app of 2 ranks;
 * cycle 0 of both ranks, cycle 1 of rank 0, RankEnd of rank 0, all acked;
 * reconnect and resend that RankEnd with its seq; then cycle 1 of rank 1.
 * Expected: the resend changes nothing; cycle 1 completes once; no partial
 * set, no late trace. Actual: cycle 1 is published partial (rank 1 missing)
 * and again complete; sets_partial 1, traces_late 1.
 *
 * A fix: la_store_rank_end (like la_store_trace's was_new) reports whether
 * the rank's end was new, and ingest.c counts only new ends. */
static void test_resent_rank_end_changes_nothing(void **state) {
  need_daemons();
  start_ga(NULL, 0);
  la_client_t *sub = subscribe(0, "dupend-1");
  la_compact_result_t r;
  big_trace(1000, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeX", T.key) == 0, "refused");
  fake_rank_start(&f, "dupend-1", 0, 2, 1000);
  fake_rank_start(&f, "dupend-1", 1, 2, 1000);
  fake_trace(&f, "dupend-1", 0, 0, &r);
  fake_trace(&f, "dupend-1", 1, 0, &r);
  fake_trace(&f, "dupend-1", 0, 1, &r);
  uint64_t end_seq = ++f.seq;
  fake_rank_end(&f, "dupend-1", 0, end_seq);
  fake_wait_acked(&f);
  close(f.fd);
  /* the LocalAgent reconnects and resends the RankEnd (same seq) */
  CHECK(fake_connect(&f, "nodeX", T.key) == 0, "refused");
  fake_rank_end(&f, "dupend-1", 0, end_seq);
  f.seq = end_seq;
  fake_wait_acked(&f);
  /* rank 1 goes on */
  fake_trace(&f, "dupend-1", 1, 1, &r);
  fake_wait_acked(&f);
  uint64_t tags[2] = {0, 1};
  got_t *g = collect(sub, tags, 2);
  la_traceset_t *extra = NULL;
  int more = la_client_next(sub, 500, &extra) == 0;
  int partial1 = g->set[1] && !la_traceset_complete(g->set[1]);
  int times1 = g->count[1] + (more && la_traceset_cycle(extra) == 1);
  la_traceset_free(extra);
  got_free(g);
  long long partial = ga_status("sets_partial"),
            late = ga_status("traces_late");
  close(f.fd);
  la_compact_result_free(&r);
  CHECK(!partial1 && times1 == 1 && partial == 0 && late == 0 &&
            !la_td_log_has(T.ga, "application dupend-1 ended"),
        "a resent RankEnd ended the application early: cycle 1 received "
        "%d times, first %s; sets_partial %lld, traces_late %lld",
        times1, partial1 ? "partial" : "complete", partial, late);
}

/* ------------------------------------- missing ranks, commit failures --- */

static void fake_missing(fake_t *f, const char *app_id, uint32_t rank,
                         uint64_t tag, const char *reason) {
  La__TraceMissing t = LA__TRACE_MISSING__INIT;
  t.seq = ++f->seq;
  t.app_id = (char *)app_id;
  t.rank = rank;
  t.cycle_tag = tag;
  t.reason = (char *)reason;
  assert_int_equal(
      la_secure_send_msg(f->fd, &f->sec, LA__MSG_TYPE__MSG_TRACE_MISSING,
                         &t.base, 5000),
      0);
}

/* Runs `lactl A1 A2 [A3 [A4]] --global FEED` (NULL: no argument) and
 * returns its output (static). */
static const char *lactl_out(const char *a1, const char *a2, const char *a3,
                             const char *a4) {
  static char out[65536];
  char lactl[1024];
  CHECK(la_td_find_bin("lactl", lactl, sizeof lactl) == 0, "no lactl");
  const char *argv[8] = {lactl, a1, a2};
  int k = 3;
  if (a3) argv[k++] = a3;
  if (a4) argv[k++] = a4;
  argv[k++] = "--global";
  argv[k++] = T.feed_addr;
  argv[k] = NULL;
  int rc = la_td_run(argv, NULL, WAIT_MS, out, sizeof out);
  CHECK(rc == 0, "lactl %s %s %s %s: exit %d: %s", a1, a2, a3, a4, rc, out);
  return out;
}

/* The next set c receives (within WAIT_MS); the caller frees it. */
static la_traceset_t *next_set(la_client_t *c) {
  la_traceset_t *t = NULL;
  int rc = la_client_next(c, WAIT_MS, &t);
  CHECK(rc == 0, "no Trace-Set: %s", la_client_strerror(rc));
  return t;
}

/* The next Trace-Set sub receives is cycle's, complete or partial as
 * complete says. */
static void expect_set(la_client_t *sub, uint64_t cycle, int complete) {
  la_traceset_t *t = next_set(sub);
  CHECK(la_traceset_cycle(t) == cycle &&
            (la_traceset_complete(t) != 0) == (complete != 0),
        "cycle %llu should be published %s", (unsigned long long)cycle,
        complete ? "complete" : "partial");
  la_traceset_free(t);
}

/* test_trace_missing_closes_set_with_reason: a LocalAgent's TraceMissing
 * is stored and counts the rank as delivered, so the set closes at once
 * (stitch.timeout is an hour) as partial, the rank's reason travelling with
 * it to subscribers, `lactl show` and the store; a resend changes nothing;
 * a real trace arriving later wins (the set is republished complete); ranks
 * that ended before a cycle are recorded with that reason. Formerly the
 * GlobalAgent closed the link at the first TraceMissing. */
static void test_trace_missing_closes_set_with_reason(void **state) {
  need_daemons();
  const char *ex[] = {"--stitch.timeout=60m", NULL};
  start_ga(ex, 0);
  const char *app = "miss-1", *why = "cycle skipped by the application";
  la_client_t *sub = subscribe(0, app);
  la_compact_result_t r;
  big_trace(500, &r);
  fake_t f;
  fake_three_ranks(&f, "nodeM", app, 500);
  fake_trace(&f, app, 0, 1, &r);
  fake_missing(&f, app, 1, 1, why);
  fake_trace(&f, app, 2, 1, &r);
  fake_wait_acked(&f);
  la_traceset_t *t = next_set(sub);
  CHECK(la_traceset_cycle(t) == 1 && !la_traceset_complete(t),
        "cycle 1 should close partial");
  const uint32_t *miss;
  CHECK(la_traceset_missing(t, &miss) == 1 && miss[0] == 1,
        "rank 1 should be the missing one");
  const char *got = la_traceset_missing_reason(t, 1);
  CHECK(got && !strcmp(got, why), "reason of rank 1: %s", got ? got : "none");
  CHECK(la_traceset_missing_reason(t, 0) == NULL, "rank 0 has a reason");
  la_traceset_free(t);
  const char *out = lactl_out("show", app, "1", "--json");
  CHECK(strstr(out,
               "\"missing_reasons\": [{\"rank\": 1, \"reason\": "
               "\"cycle skipped by the application\"}]") != NULL,
        "lactl show --json: %s", out);
  out = lactl_out("show", app, "1", NULL);
  CHECK(strstr(out, "(missing: cycle skipped by the application)"),
        "lactl show: %s", out);
  CHECK(db_ll("SELECT count(*) FROM missing WHERE app_id = '%s' AND "
              "cycle_tag = 1 AND rank = 1 AND reason = '%s' AND source = "
              "'agent'",
              app, why) == 1,
        "store: no missing record");
  CHECK(db_ll("SELECT missing_ranks = '1' FROM trace_sets WHERE app_id = "
              "'%s' AND cycle_tag = 1",
              app) == 1,
        "store: set record");
  /* a resend (its Ack lost) changes nothing */
  fake_missing(&f, app, 1, 1, why);
  fake_wait_acked(&f);
  CHECK(ga_status("missing_reported") == 1 && ga_status("missing_ranks") == 1,
        "a resent TraceMissing counted twice: %lld reported, %lld records",
        ga_status("missing_reported"), ga_status("missing_ranks"));
  /* the real trace comes after all: it wins, the set is complete */
  fake_trace(&f, app, 1, 1, &r);
  fake_wait_acked(&f);
  expect_set(sub, 1, 1); /* republished complete */
  CHECK(db_ll("SELECT count(*) FROM missing WHERE app_id = '%s' AND "
              "cycle_tag = 1",
              app) == 0,
        "the superseded record stayed");
  /* cycle 2: only rank 0; ranks 1 and 2 end, then rank 0: the set closes
   * with their reason */
  fake_trace(&f, app, 0, 2, &r);
  fake_rank_end(&f, app, 1, ++f.seq);
  fake_rank_end(&f, app, 2, ++f.seq);
  fake_rank_end(&f, app, 0, ++f.seq);
  fake_wait_acked(&f);
  t = next_set(sub);
  CHECK(la_traceset_cycle(t) == 2 && la_traceset_missing(t, NULL) == 2,
        "cycle 2 should close with 2 ranks missing");
  got = la_traceset_missing_reason(t, 2);
  CHECK(got && !strcmp(got, "rank ended before this cycle"), "rank 2: %s",
        got ? got : "no reason");
  la_traceset_free(t);
  out = lactl_out("cycles", app, "--json", "--first=2");
  CHECK(strstr(out, "\"reasons\": \"rank ended before this cycle (2)\""),
        "lactl cycles --json: %s", out);
  close(f.fd);
  la_compact_result_free(&r);
}

/* test_timeout_reason_in_status: a set closed by the timeout records its
 * missing ranks with the reason "timeout: ...", naming the rank's
 * LocalAgent when it is not connected; counted by reason in the status and
 * shown by `lactl cycles`. Formerly nothing recorded why. */
static void test_timeout_reason_in_status(void **state) {
  need_daemons();
  const char *ex[] = {"--stitch.timeout=100ms", NULL};
  start_ga(ex, 0);
  const char *app = "miss-2";
  la_client_t *sub = subscribe(0, app);
  la_compact_result_t r;
  big_trace(300, &r);
  fake_t f, g;
  CHECK(fake_connect(&f, "nodeT", T.key) == 0, "refused");
  CHECK(fake_connect(&g, "nodeU", T.key) == 0, "refused");
  fake_rank_start_on(&f, "nodeT", app, 0, 3, 300);
  fake_rank_start_on(&f, "nodeT", app, 1, 3, 300);
  fake_rank_start_on(&g, "nodeU", app, 2, 3, 300);
  fake_wait_acked(&f);
  fake_wait_acked(&g);
  close(g.fd); /* rank 2's LocalAgent goes away */
  ga_wait_log("LocalAgent nodeU (");
  fake_trace(&f, app, 0, 3, &r);
  fake_wait_acked(&f);
  la_traceset_t *t = next_set(sub);
  const char *w1 = la_traceset_missing_reason(t, 1);
  const char *w2 = la_traceset_missing_reason(t, 2);
  CHECK(w1 && !strcmp(w1, "timeout: no trace within stitch.timeout") && w2 &&
            !strcmp(w2, "LocalAgent nodeU lost"),
        "rank 1: %s; rank 2: %s", w1 ? w1 : "none", w2 ? w2 : "none");
  la_traceset_free(t);
  ga_wait_status("missing_ranks", 2);
  char v1[300] = "", v2[300] = "";
  CHECK(la_td_status(T.ga, "missing_reason.1", v1, sizeof v1) == 0 &&
            la_td_status(T.ga, "missing_reason.2", v2, sizeof v2) == 0 &&
            !strcmp(v1, "1 LocalAgent nodeU lost") &&
            !strcmp(v2, "1 timeout: no trace within stitch.timeout"),
        "status missing_reason.1: '%s', .2: '%s'", v1, v2);
  const char *out = lactl_out("cycles", app, "--first=3", "--last=3");
  CHECK(strstr(out,
               "LocalAgent nodeU lost (1); timeout: "
               "no trace within stitch.timeout (1)"),
        "lactl cycles: %s", out);
  close(f.fd);
  la_compact_result_free(&r);
}

/* Sends one message (kind 'S' RankStart, 'T' trace, 'E' RankEnd) and waits
 * for its Ack; when the GlobalAgent closes the link instead (a failed
 * commit), reconnects and resends it with the same seq, as a LocalAgent
 * does. Returns how many times the link was closed. */
static int deliver(fake_t *f, char kind, const char *app, uint32_t rank,
                   uint32_t nprocs, uint64_t tag,
                   const la_compact_result_t *r) {
  int closed = 0;
  uint64_t seq = f->seq + 1;
  for (;;) {
    f->seq = seq - 1;
    if (kind == 'S') fake_rank_start(f, app, rank, nprocs, r->stats.count);
    if (kind == 'T') fake_trace(f, app, rank, tag, r);
    if (kind == 'E') fake_rank_end(f, app, rank, ++f->seq);
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    char why[200] = "";
    int sealed = 0;
    int rc = la_secure_recv_msg(f->fd, &f->sec, 1 << 16, WAIT_MS, &type, &m,
                                &sealed, why, sizeof why);
    if (rc == 0 && type == LA__MSG_TYPE__MSG_ACK) {
      uint64_t acked = ((La__Ack *)m)->seq;
      la_msg_free(m);
      CHECK(acked == seq, "Ack %llu for seq %llu", (unsigned long long)acked,
            (unsigned long long)seq);
      return closed;
    }
    /* a failed commit: the GlobalAgent says its store is unavailable
     * (code LA_EIO: resend to it later), then closes */
    int said = rc == 0 && type == LA__MSG_TYPE__MSG_ERROR &&
               ((La__Error *)m)->code == LA_EIO &&
               strstr(((La__Error *)m)->message, "store is unavailable");
    la_msg_free(m);
    CHECK((rc != 0 || said) && ++closed < 5,
          "expected an Ack, a store-unavailable Error or a close: rc %d %s",
          rc, why);
    close(f->fd);
    CHECK(fake_connect(f, "nodeF", T.key) == 0, "refused");
    CHECK(f->seq + 1 == seq,
          "after the failure the GlobalAgent wants seq "
          "%llu, not %llu",
          (unsigned long long)f->seq + 1, (unsigned long long)seq);
  }
}

/* test_commit_failure_counts_exact: commits 3 (a trace) and 7 (a RankEnd)
 * fail (LA_GA_TEST_FAIL_COMMITS); the LocalAgent resends. Afterwards the
 * counters equal what was stored, the RankEnd counted once, and the running
 * application's next set completes. Formerly the failed batch's
 * counts stayed: traces_stored 5 for 4 traces, and the resent RankEnd made
 * the 2-rank application "end" with rank 1 still running, closing cycle 1
 * partial. */
static void test_commit_failure_counts_exact(void **state) {
  need_daemons();
  const char *ex[] = {"--stitch.timeout=60m", NULL};
  setenv("LA_GA_TEST_FAIL_COMMITS", "3,7", 1);
  start_ga(ex, 0);
  unsetenv("LA_GA_TEST_FAIL_COMMITS");
  const char *app = "cfail-1";
  la_client_t *sub = subscribe(0, app);
  la_compact_result_t r;
  big_trace(400, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeF", T.key) == 0, "refused");
  int fails = 0;
  fails += deliver(&f, 'S', app, 0, 2, 0, &r); /* commit 1 */
  fails += deliver(&f, 'S', app, 1, 2, 0, &r); /* 2 */
  fails += deliver(&f, 'T', app, 0, 2, 0, &r); /* 3 fails, 4 */
  fails += deliver(&f, 'T', app, 1, 2, 0, &r); /* 5: cycle 0 complete */
  fails += deliver(&f, 'T', app, 0, 2, 1, &r); /* 6 */
  fails += deliver(&f, 'E', app, 0, 2, 0, &r); /* 7 fails, 8 */
  fails += deliver(&f, 'T', app, 1, 2, 1, &r); /* 9: cycle 1 complete */
  CHECK(fails == 2, "%d injected failures seen, 2 expected", fails);
  uint64_t tags[2] = {0, 1};
  got_t *g = collect(sub, tags, 2);
  int ok0 = g->set[0] && la_traceset_complete(g->set[0]);
  int ok1 = g->set[1] && la_traceset_complete(g->set[1]);
  int n1 = g->count[1];
  got_free(g);
  long long stored = ga_status("traces_stored"), ends = ga_status("rank_ends"),
            starts = ga_status("rank_starts"),
            partial = ga_status("sets_partial"),
            complete = ga_status("sets_complete"),
            late = ga_status("traces_late"),
            failures = ga_status("commit_failures");
  close(f.fd);
  la_compact_result_free(&r);
  CHECK(failures == 2 && stored == 4 && ends == 1 && starts == 2 &&
            complete == 2 && partial == 0 && late == 0 && ok0 && ok1 &&
            n1 == 1 && db_ll("SELECT count(*) FROM traces") == 4 &&
            !la_td_log_has(T.ga, "application cfail-1 ended"),
        "after 2 failed commits: commit_failures %lld, traces_stored %lld "
        "(4 stored), rank_starts %lld, rank_ends %lld (1 ended), "
        "sets_complete %lld, sets_partial %lld, traces_late %lld; cycle 0 "
        "%s, cycle 1 %s (received %d times)",
        failures, stored, starts, ends, complete, partial, late,
        ok0 ? "complete" : "not complete", ok1 ? "complete" : "not complete",
        n1);
}

/* ---------------------------------------- late traces, restored ages --- */

/* The first column of the first row of a query, as a 64-bit integer read
 * as unsigned (times in ns); 0 when there is none. */
static uint64_t db_u64(const char *sql) {
  return (uint64_t)db_ll("%s", sql);
}

/* test_late_trace_never_reopens_a_closed_set: with a closed-key cache of
 * one key (stitch.closed_cache=1), cycle 5 closes partial (ranks 1 and 2
 * reported missing), cycle 6 closes and pushes cycle 5 out of the cache.
 * Rank 1's trace of cycle 5 then arrives (a LocalAgent's very late resend):
 * it is late, stored, the set stays closed partial with its original close
 * time and only rank 2 missing, nothing is republished; rank 2's trace
 * completes it: closed complete, same close time, published again once.
 * Formerly the late trace reopened the set, whose next close overwrote the
 * record (new close time) and published it again. */
static void test_late_trace_never_reopens_a_closed_set(void **state) {
  need_daemons();
  const char *ex[] = {"--stitch.timeout=100ms", "--stitch.closed_cache=1",
                      NULL};
  start_ga(ex, 0);
  const char *app = "late-1";
  la_client_t *sub = subscribe(0, app);
  la_compact_result_t r;
  big_trace(300, &r);
  fake_t f;
  fake_three_ranks(&f, "nodeL", app, 300);
  for (uint64_t c = 5; c <= 6; c++) {
    fake_trace(&f, app, 0, c, &r);
    fake_missing(&f, app, 1, c, "rank 1 gone");
    fake_missing(&f, app, 2, c, "rank 2 gone");
  }
  fake_wait_acked(&f);
  for (uint64_t c = 5; c <= 6; c++) {
    expect_set(sub, c, 0);
  }
  ga_wait_status("closed_cache_evicted", 1);
  const char *row =
      "SELECT %s FROM trace_sets WHERE app_id='late-1' AND "
      "cycle_tag=5";
  char q[300];
  snprintf(q, sizeof q, row, "t_closed_ns");
  uint64_t t_closed = db_u64(q);
  CHECK(t_closed > 0, "cycle 5 has no close time");
  /* rank 1, very late */
  fake_trace(&f, app, 1, 5, &r);
  fake_wait_acked(&f);
  ga_wait_status("traces_late", 1);
  snprintf(q, sizeof q, row,
           "closed = 1 AND complete = 0 AND missing_ranks = '2' AND "
           "n_missing = 1 AND n_ranks_present = 2");
  CHECK(db_ll("%s", q) == 1 && ga_status("sets_open") == 0,
        "after a late trace cycle 5 is no longer closed partial missing "
        "rank 2 (sets_open %lld)",
        ga_status("sets_open"));
  /* what the timeout would close, had the set been reopened */
  fake_trace(&f, app, 0, 7, &r);
  fake_wait_acked(&f);
  la_traceset_t *t = next_set(sub);
  CHECK(la_traceset_cycle(t) == 7,
        "cycle %llu published, not 7 (a late "
        "trace republished a partial set?)",
        (unsigned long long)la_traceset_cycle(t));
  la_traceset_free(t);
  snprintf(q, sizeof q, row, "t_closed_ns");
  CHECK(db_u64(q) == t_closed, "cycle 5's close time was overwritten");
  /* rank 2 completes it */
  fake_trace(&f, app, 2, 5, &r);
  fake_wait_acked(&f);
  expect_set(sub, 5, 1); /* published again, complete */
  snprintf(q, sizeof q, row,
           "closed = 1 AND complete = 1 AND missing_ranks = '' AND "
           "n_ranks_present = 3");
  CHECK(db_ll("%s", q) == 1, "cycle 5 not recorded complete");
  snprintf(q, sizeof q, row, "t_closed_ns");
  CHECK(db_u64(q) == t_closed, "cycle 5's close time was overwritten");
  CHECK(ga_status("traces_late") == 2 && ga_status("sets_open") == 0,
        "traces_late %lld, sets_open %lld", ga_status("traces_late"),
        ga_status("sets_open"));
  close(f.fd);
  la_compact_result_free(&r);
}

/* Runs one statement on the store, read-write (the GlobalAgent is down). */
static void db_exec(const char *sql) {
  sqlite3 *db = NULL;
  char *err = NULL;
  assert_int_equal(sqlite3_open_v2(T.db, &db, SQLITE_OPEN_READWRITE, NULL),
                   SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  CHECK(rc == SQLITE_OK, "%s: %s", sql, err ? err : "?");
  sqlite3_free(err);
  sqlite3_close(db);
}

/* test_restart_keeps_age_and_closed_sets: stitch.timeout is 60 s. Before a
 * kill -9 of the GlobalAgent, cycle 1 and 2 are open (rank 0 of 2) and
 * cycle 3 closed partial (rank 1 reported missing). While it is down,
 * cycle 1 is made 59.5 s old in the store (waiting that long is the only
 * other way). After the restart cycle 1 closes by timeout at once while
 * cycle 2 (its real age, a few seconds) and a new cycle 4 stay open; rank
 * 1's trace of cycle 3 is late and completes the closed set (it is not
 * reopened). Formerly restored sets began a new 60 s and the closed-key
 * cache started empty, so cycle 3 was reopened as a new open set. */
static void test_restart_keeps_age_and_closed_sets(void **state) {
  need_daemons();
  const char *ex[] = {"--stitch.timeout=60s", NULL};
  start_ga(ex, 0);
  const char *app = "age-1";
  la_compact_result_t r;
  big_trace(200, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeR", T.key) == 0, "refused");
  fake_rank_start(&f, app, 0, 2, 200);
  fake_rank_start(&f, app, 1, 2, 200);
  fake_trace(&f, app, 0, 1, &r);
  fake_trace(&f, app, 0, 2, &r);
  fake_trace(&f, app, 0, 3, &r);
  fake_missing(&f, app, 1, 3, "rank 1 gone");
  fake_wait_acked(&f);
  db_wait(1,
          "SELECT closed FROM trace_sets WHERE app_id='age-1' AND "
          "cycle_tag=3");
  close(f.fd);
  kill_ga();
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char sql[300];
  snprintf(sql, sizeof sql,
           "UPDATE trace_sets SET t_first_ns = %lld WHERE "
           "app_id='age-1' AND cycle_tag=1",
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec - 59500000000LL);
  db_exec(sql);
  uint64_t t_closed3 = db_u64(
      "SELECT t_closed_ns FROM trace_sets WHERE "
      "app_id='age-1' AND cycle_tag=3");
  la_td_log_mark(T.ga);
  start_ga(ex, 1);
  ga_wait_log("rebuilt 2 open Trace-Sets");
  CHECK(fake_connect(&f, "nodeR", T.key) == 0, "refused");
  fake_trace(&f, app, 0, 4, &r);
  fake_trace(&f, app, 1, 3, &r);
  fake_wait_acked(&f);
  db_wait(1,
          "SELECT closed FROM trace_sets WHERE app_id='age-1' AND "
          "cycle_tag=1");
  CHECK(db_ll("SELECT count(*) FROM trace_sets WHERE app_id='age-1' AND "
              "closed=0 AND cycle_tag IN (2, 4)") == 2,
        "cycle 2 or 4 closed with cycle 1: ages not kept");
  /* closed by the timeout; rank 1's reason says its cycle 3 arrived */
  CHECK(db_ll("SELECT count(*) FROM missing WHERE app_id='age-1' AND "
              "cycle_tag=1 AND rank=1 AND reason = 'missing: no trace for "
              "this cycle while later cycles of the rank arrived'") == 1,
        "cycle 1 did not close by timeout");
  CHECK(ga_status("traces_late") == 1 && ga_status("sets_open") == 2,
        "rank 1's trace of closed cycle 3: traces_late %lld, sets_open %lld",
        ga_status("traces_late"), ga_status("sets_open"));
  CHECK(db_ll("SELECT closed = 1 AND complete = 1 AND missing_ranks = '' "
              "FROM trace_sets WHERE app_id='age-1' AND cycle_tag=3") == 1 &&
            db_u64("SELECT t_closed_ns FROM trace_sets WHERE "
                   "app_id='age-1' AND cycle_tag=3") == t_closed3,
        "cycle 3 not completed in place");
  close(f.fd);
  la_compact_result_free(&r);
}

/* A SIGTERM sent the moment the GlobalAgent's first port file appears (a
 * supervisor that starts and at once stops it) is a clean stop, exit 0: the
 * handlers are in place before any port is announced. Five times, the
 * file watched without pause. */
static void test_sigterm_at_first_port_file(void **state) {
  need_daemons();
  for (int i = 0; i < 5; i++) {
    la_td_argv_t a;
    la_td_argv_init(&a);
    la_td_argv_add(&a, "--agents.listen=127.0.0.1:0");
    la_td_argv_add(&a, "--feed.listen=127.0.0.1:0");
    la_ts_ga_args(&a, T.agents_pf, T.feed_pf, T.db, T.key);
    unlink(T.agents_pf);
    CHECK(la_td_start(T.ga, a.v, NULL, WAIT_MS) == 0,
          "la-globalagent did not start");
    long long end = la_td_now_ms() + WAIT_MS;
    struct stat st;
    while ((stat(T.agents_pf, &st) != 0 || st.st_size == 0) &&
           la_td_alive(T.ga) && la_td_now_ms() < end) {
    }
    CHECK(la_td_signal(T.ga, SIGTERM) == 0, "no daemon to signal");
    int rc = la_td_wait_exit(T.ga, WAIT_MS);
    CHECK(rc == 0,
          "run %d: exit status %d after SIGTERM at its port file "
          "(143: killed by the signal's default action)",
          i, rc);
  }
}

/* The message that fills a group commit (store.batch_max) is acknowledged
 * by that commit: a LocalAgent whose last message filled a batch gets its
 * Ack without sending anything more. Formerly the full batch committed
 * before that message's sequence number was recorded, so its Ack waited
 * for the next message; with nothing more to send, for ever. batch_max 1:
 * every message fills its batch. */
static void test_message_filling_a_batch_is_acked(void **state) {
  need_daemons();
  const char *ex[] = {"--store.batch_max=1", NULL};
  start_ga(ex, 0);
  la_compact_result_t r;
  big_trace(1000, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeB", T.key) == 0, "refused");
  char why[300] = "";
  fake_rank_start(&f, "batch-1", 0, 1, 1000);
  int rc1 = la_test_link_wait_acked(&f, 5000, why, sizeof why);
  fake_trace(&f, "batch-1", 0, 0, &r);
  int rc2 = rc1 ? rc1 : la_test_link_wait_acked(&f, 5000, why, sizeof why);
  long long stored = ga_status("traces_stored");
  close(f.fd);
  la_compact_result_free(&r);
  CHECK(rc1 == 0 && rc2 == 0,
        "the %s that filled its batch was stored (traces_stored %lld) but "
        "not acknowledged: %s",
        rc1 ? "RankStart" : "CompactTrace", stored, why);
}

/* test_burst_within_gather_window_is_one_commit: the gather window
 * (store.gather, here 1 s). A cycle's traces of four ranks sent 20 ms
 * apart, as a busy node's ranks' come, are one group commit (the
 * `commits` status row): the first joins a set still missing ranks, so
 * its batch waits; the fourth closes the set, and the batch is committed
 * at once; the set is published complete. A lone trace of a set whose
 * other rank never sends is acknowledged all the same once the window
 * ends, in one commit of its own. Without the window (store.gather=0)
 * the burst was four commits. */
static void test_burst_within_gather_window_is_one_commit(void **state) {
  need_daemons();
  const char *ex[] = {"--store.gather=1s", "--stitch.timeout=60m", NULL};
  start_ga(ex, 0);
  la_client_t *sub = subscribe(0, "gather-1");
  la_compact_result_t r;
  big_trace(300, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeG", T.key) == 0, "refused");
  for (uint32_t k = 0; k < 4; k++) fake_rank_start(&f, "gather-1", k, 4, 300);
  fake_rank_start(&f, "gather-2", 0, 2, 300);
  fake_wait_acked(&f);
  long long c0 = ga_status("commits");
  for (uint32_t k = 0; k < 4; k++) {
    fake_trace(&f, "gather-1", k, 0, &r);
    nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
  }
  fake_wait_acked(&f);
  long long c1 = ga_status("commits");
  expect_set(sub, 0, 1);
  fake_trace(&f, "gather-2", 0, 0, &r); /* rank 1 never sends */
  fake_wait_acked(&f);
  long long c2 = ga_status("commits");
  close(f.fd);
  la_compact_result_free(&r);
  CHECK(c1 - c0 == 1,
        "a burst of 4 traces within the window took %lld commits (1 "
        "expected)",
        c1 - c0);
  CHECK(c2 - c1 == 1, "the lone trace took %lld commits (1 expected)",
        c2 - c1);
  CHECK(db_ll("SELECT count(*) FROM traces WHERE app_id LIKE 'gather-%%'") ==
            5,
        "not every trace of the burst and the lone one is stored");
  /* the commits' thread and the checkpointer are named (top -H, perf, the
   * busy-node bench's per-thread table) */
  CHECK(la_td_threads_named(la_td_pid(T.ga), "la-commit") == 1,
        "no thread named la-commit");
  CHECK(la_td_threads_named(la_td_pid(T.ga), "la-ckpt") == 1,
        "no thread named la-ckpt");
}

/* start_ga(ex, 0) with LA_GA_TEST_KILL_AFTER_COMMIT=n: the GlobalAgent
 * kills itself right after its n-th commit, before acknowledging it. */
static void start_ga_killed_after(const char *const *ex, const char *n) {
  setenv("LA_GA_TEST_KILL_AFTER_COMMIT", n, 1);
  start_ga(ex, 0);
  unsetenv("LA_GA_TEST_KILL_AFTER_COMMIT");
}

/* The set of tag sub receives next: whether complete, its nprocs in *n. */
static int set_received(la_client_t *sub, uint64_t tag, uint32_t *n) {
  uint64_t tags[1] = {tag};
  got_t *g = collect(sub, tags, 1);
  int complete = g->set[0] && la_traceset_complete(g->set[0]);
  *n = g->set[0] ? la_traceset_nprocs(g->set[0]) : 0;
  got_free(g);
  return complete;
}

/* Reads f's link until it closes (the GlobalAgent killed): whether an
 * Ack of seq or later came before. */
static int acked_until_closed(fake_t *f, uint64_t seq) {
  int acked = 0;
  for (;;) {
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    char why[200] = "";
    int sealed = 0;
    if (la_secure_recv_msg(f->fd, &f->sec, 1 << 16, WAIT_MS, &type, &m,
                           &sealed, why, sizeof why) != 0)
      return acked;
    if (type == LA__MSG_TYPE__MSG_ACK && ((La__Ack *)m)->seq >= seq)
      acked = 1;
    la_msg_free(m);
  }
}

/* test_kill_between_commit_and_ack: the group commit runs on the
 * committer thread and the loop acknowledges after its result. The
 * GlobalAgent is killed (LA_GA_TEST_KILL_AFTER_COMMIT, SIGKILL on the
 * committer thread) right after the commit of rank 0's trace succeeded,
 * before the loop heard of it: no Ack was sent for it, yet it is stored,
 * and the restarted GlobalAgent asks the LocalAgent for the next sequence
 * number (nothing to resend). A LocalAgent resending it all the same
 * changes nothing (traces_duplicate, one row); rank 1's trace completes the
 * set, published once with both traces. Every message is its own batch
 * (store.batch_max=1). */
static void test_kill_between_commit_and_ack(void **state) {
  need_daemons();
  const char *ex[] = {"--store.batch_max=1", "--stitch.timeout=60m", NULL};
  start_ga_killed_after(ex, "3");
  const char *app = "kcommit-1";
  la_compact_result_t r;
  big_trace(300, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeK", T.key) == 0, "refused");
  fake_rank_start(&f, app, 0, 2, 300); /* commit 1 */
  fake_rank_start(&f, app, 1, 2, 300); /* commit 2 */
  fake_wait_acked(&f);
  fake_trace(&f, app, 0, 0, &r); /* commit 3, then killed */
  uint64_t trace_seq = f.seq;
  int acked = acked_until_closed(&f, trace_seq);
  close(f.fd);
  CHECK(la_td_wait_exit(T.ga, WAIT_MS) == 128 + SIGKILL,
        "the GlobalAgent was not killed after its third commit");
  CHECK(!acked, "an Ack for seq %llu came before its commit was handled",
        (unsigned long long)trace_seq);
  CHECK(db_ll("SELECT count(*) FROM traces WHERE app_id='kcommit-1'") == 1,
        "the committed trace is not in the store");
  start_ga(ex, 1);
  la_client_t *sub = subscribe(0, app);
  CHECK(fake_connect(&f, "nodeK", T.key) == 0, "refused");
  CHECK(f.seq == trace_seq,
        "after the restart the GlobalAgent wants seq %llu, not %llu (the "
        "trace's commit recorded it)",
        (unsigned long long)f.seq + 1, (unsigned long long)trace_seq + 1);
  f.seq = trace_seq - 1; /* resent all the same, with its seq */
  fake_trace(&f, app, 0, 0, &r);
  fake_trace(&f, app, 1, 0, &r);
  fake_wait_acked(&f);
  uint32_t n = 0;
  int complete = set_received(sub, 0, &n);
  long long dup = ga_status("traces_duplicate"),
            stored = ga_status("traces_stored"),
            published = ga_status("sets_published");
  close(f.fd);
  la_compact_result_free(&r);
  CHECK(complete && n == 2 && published == 1 && dup == 1 && stored == 1 &&
            db_ll("SELECT count(*) FROM traces WHERE app_id='kcommit-1'") ==
                2,
        "after the restart: set %s of %u ranks, sets_published %lld (1); "
        "traces_duplicate %lld (1 expected), traces_stored %lld (1)",
        complete ? "complete" : "not complete", n, published, dup, stored);
}

/* test_kill_after_gathered_commit: traces gathered into one commit (the
 * gather window, here 1 s: a set of 3 ranks still missing one) are
 * acknowledged only after that commit's result. The GlobalAgent is
 * killed (LA_GA_TEST_KILL_AFTER_COMMIT) right after the commit holding
 * ranks 0 and 1's traces succeeded: neither was acknowledged, both are
 * stored (one commit), and the restarted GlobalAgent asks for the
 * sequence number after the second (nothing to resend). Rank 2's trace
 * then completes the set, published once with the three ranks. */
static void test_kill_after_gathered_commit(void **state) {
  need_daemons();
  const char *ex[] = {"--store.gather=1s", "--stitch.timeout=60m", NULL};
  start_ga_killed_after(ex, "4");
  const char *app = "kgather-1";
  la_compact_result_t r;
  big_trace(300, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeQ", T.key) == 0, "refused");
  for (uint32_t k = 0; k < 3; k++) { /* commits 1-3 */
    fake_rank_start(&f, app, k, 3, 300);
    fake_wait_acked(&f);
  }
  uint64_t first_seq = f.seq + 1;
  fake_trace(&f, app, 0, 0, &r); /* gathered: commit 4, then killed */
  fake_trace(&f, app, 1, 0, &r);
  uint64_t last_seq = f.seq;
  int acked = acked_until_closed(&f, first_seq);
  close(f.fd);
  CHECK(la_td_wait_exit(T.ga, WAIT_MS) == 128 + SIGKILL,
        "the GlobalAgent was not killed after its fourth commit");
  CHECK(!acked, "an Ack for a gathered trace came before its commit was "
        "handled");
  CHECK(db_ll("SELECT count(*) FROM traces WHERE app_id='kgather-1'") == 2,
        "the gathered commit does not hold both traces");
  start_ga(ex, 1);
  la_client_t *sub = subscribe(0, app);
  CHECK(fake_connect(&f, "nodeQ", T.key) == 0, "refused");
  CHECK(f.seq == last_seq,
        "after the restart the GlobalAgent wants seq %llu, not %llu (the "
        "gathered commit recorded it)",
        (unsigned long long)f.seq + 1, (unsigned long long)last_seq + 1);
  fake_trace(&f, app, 2, 0, &r);
  fake_wait_acked(&f);
  uint32_t n = 0;
  int complete = set_received(sub, 0, &n);
  long long published = ga_status("sets_published");
  close(f.fd);
  la_compact_result_free(&r);
  CHECK(complete && n == 3 && published == 1 &&
            db_ll("SELECT count(*) FROM traces WHERE app_id='kgather-1'") ==
                3,
        "after the restart: set %s of %u ranks, sets_published %lld (1)",
        complete ? "complete" : "not complete", n, published);
}

/* A rank whose LocalAgent restarted gets the end "LocalAgent restarted";
 * when it registers again (a RankStart after that end, from the same
 * LocalAgent's newer sequence numbers) it runs again: the application does
 * not end while it runs, its cycles complete their sets, and its row ends
 * as the program does. */
static void test_rank_registered_again_runs_on(void **state) {
  need_daemons();
  start_ga(NULL, 0);
  const char *app = "again-1";
  la_client_t *sub = subscribe(0, app);
  la_compact_result_t r;
  big_trace(300, &r);
  fake_t f;
  CHECK(fake_connect(&f, "nodeR", T.key) == 0, "refused");
  fake_rank_start(&f, app, 0, 2, 300);
  fake_rank_start(&f, app, 1, 2, 300);
  fake_trace(&f, app, 0, 0, &r);
  fake_trace(&f, app, 1, 0, &r);
  /* rank 0's LocalAgent restarted: its end, then its registration again */
  fake_rank_end_why(&f, app, 0, ++f.seq, "LocalAgent restarted");
  fake_rank_start(&f, app, 0, 2, 300);
  fake_trace(&f, app, 0, 1, &r);
  fake_trace(&f, app, 1, 1, &r);
  /* rank 1 ends: the application runs on with rank 0 */
  fake_rank_end(&f, app, 1, ++f.seq);
  fake_trace(&f, app, 0, 2, &r);
  fake_wait_acked(&f);
  expect_set(sub, 0, 1);
  expect_set(sub, 1, 1);
  CHECK(!la_td_log_has(T.ga, "application again-1 ended"),
        "the application ended while its registered-again rank ran");
  CHECK(ga_status("ranks_reopened") == 1, "ranks_reopened %lld",
        ga_status("ranks_reopened"));
  CHECK(db_ll("SELECT count(*) FROM ranks WHERE app_id = '%s' AND rank = 0 "
              "AND ended = 0",
              app) == 1,
        "rank 0 not running again in the store");
  /* rank 0 finalizes: now the application ends, cycle 2 closes with
   * rank 1's reason */
  fake_rank_end(&f, app, 0, ++f.seq);
  fake_wait_acked(&f);
  la_traceset_t *t = next_set(sub);
  CHECK(la_traceset_cycle(t) == 2 && la_traceset_missing(t, NULL) == 1,
        "cycle 2 should close with rank 1 missing");
  const char *got = la_traceset_missing_reason(t, 1);
  CHECK(got && !strcmp(got, "rank ended before this cycle"), "rank 1: %s",
        got ? got : "no reason");
  la_traceset_free(t);
  CHECK(la_td_wait_log(T.ga, "application again-1 ended", WAIT_MS) == 0,
        "the application did not end");
  CHECK(db_ll("SELECT count(*) FROM ranks WHERE app_id = '%s' AND rank = 0 "
              "AND ended = 1 AND end_reason = 'finalize'",
              app) == 1,
        "rank 0's row does not end as the program did");
  close(f.fd);
  la_compact_result_free(&r);
}

/* Reads LocalAgent i's instance id (spool/instance) into out ("" when the
 * file is missing). */
static void la_instance(int i, char *out, size_t n) {
  char path[700];
  la_td_path(T.la[i], "spool/instance", path, sizeof path);
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(out, (int)n, f)) out[0] = '\0';
  fclose(f);
  out[strcspn(out, "\n")] = '\0';
}

/* Runs one two-rank application of n cycles through LocalAgent i and waits
 * until all its traces are stored. */
static void run_app_through(int i, const char *app_id, int n) {
  fork_rank(T.la_addr[i], app_id, 0, 2, 500, n);
  fork_rank(T.la_addr[i], app_id, 1, 2, 500, n);
  assert_int_equal(reap_kids(), 0);
  char sql[200];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM traces WHERE app_id = '%s'", app_id);
  db_wait(2 * n, sql);
  assert_int_equal(db_ll("%s", sql), 2 * n);
}

/* Two LocalAgents with one agent.host (cloned machines, containers): each
 * has its own instance id (kept in its log directory); the second is
 * refused while the first is linked, both sides saying why and what to do,
 * and the first one's data is intact. Once the first is gone the second
 * links with its own sequence (a row of its own in agents); a restart keeps
 * the instance; a wiped log makes a new instance that starts at seq 1 and
 * loses nothing. */
static void test_same_host_second_agent_refused(void **state) {
  need_daemons();
  enum { CYCLES = 3 };
  start_ga(NULL, 0);
  start_la(0, "twin", NULL);
  wait_linked(0);
  char inst0[64], inst1[64];
  la_instance(0, inst0, sizeof inst0);
  CHECK(strlen(inst0) == LA_INSTANCE_LEN, "instance file: '%s'", inst0);
  start_la(1, "twin", NULL);
  la_instance(1, inst1, sizeof inst1);
  CHECK(strlen(inst1) == LA_INSTANCE_LEN && strcmp(inst0, inst1),
        "instances '%s' '%s'", inst0, inst1);
  CHECK(la_td_wait_log(T.la[1], "refused this agent", WAIT_MS) == 0,
        "the second LocalAgent never logged \"refused this agent\"");
  char line[700];
  la_td_log_line(T.la[1], "refused this agent", line, sizeof line);
  CHECK(strstr(line, "agent.host 'twin' is held by another LocalAgent") &&
            strstr(line, inst0) && strstr(line, inst1) &&
            strstr(line, "give each LocalAgent its own agent.host"),
        "LocalAgent: %s", line);
  print_message("LocalAgent: %s\n", line);
  ga_wait_log("is linked with the same agent.host");
  la_td_log_line(T.ga, "is linked with the same agent.host", line,
                 sizeof line);
  CHECK(strstr(line, inst0) && strstr(line, inst1) &&
            strstr(line, "give each LocalAgent its own agent.host"),
        "GlobalAgent: %s", line);
  print_message("GlobalAgent: %s\n", line);
  run_app_through(0, "twin-1", CYCLES);
  char link[64] = "";
  la_td_status(T.la[1], "global_link", link, sizeof link);
  CHECK(strcmp(link, "connected") != 0, "second LocalAgent: global_link %s",
        link);
  assert_int_equal(ga_status("agents_linked"), 1);
  char key0[200], key1[200], sql[300];
  snprintf(key0, sizeof key0, "twin/%s", inst0);
  snprintf(key1, sizeof key1, "twin/%s", inst1);
  snprintf(sql, sizeof sql, "SELECT max_seq FROM agents WHERE host = '%s'",
           key0);
  long long seq0 = db_ll("%s", sql);
  CHECK(seq0 >= 2 * CYCLES, "first LocalAgent's max_seq %lld", seq0);
  assert_int_equal(db_ll("SELECT count(*) FROM agents"), 1);

  /* the first one stops: the second links, with its own sequence */
  CHECK(la_td_stop(T.la[0], WAIT_MS) == 0, "first LocalAgent did not stop");
  wait_linked(1);
  run_app_through(1, "twin-2", CYCLES);
  snprintf(sql, sizeof sql, "SELECT max_seq FROM agents WHERE host = '%s'",
           key1);
  db_wait(1, sql);
  CHECK(db_ll("%s", sql) < seq0 + 2 * CYCLES,
        "second LocalAgent's max_seq %lld continues the first's %lld",
        db_ll("%s", sql), seq0);
  snprintf(sql, sizeof sql, "SELECT max_seq FROM agents WHERE host = '%s'",
           key0);
  assert_int_equal(db_ll("%s", sql), seq0);

  /* a restart keeps the instance (the log directory); a wiped log makes
   * a new one, which starts at seq 1 and loses nothing */
  CHECK(la_td_stop(T.la[1], WAIT_MS) == 0, "second LocalAgent did not stop");
  start_la(0, "twin", NULL);
  wait_linked(0);
  char again[64];
  la_instance(0, again, sizeof again);
  assert_string_equal(again, inst0);
  CHECK(la_td_stop(T.la[0], WAIT_MS) == 0, "first LocalAgent did not stop");
  char path[700];
  la_td_path(T.la[0], "spool/instance", path, sizeof path);
  assert_int_equal(unlink(path), 0);
  start_la(0, "twin", NULL);
  wait_linked(0);
  la_instance(0, again, sizeof again);
  CHECK(strlen(again) == LA_INSTANCE_LEN && strcmp(again, inst0),
        "instance after the wipe: '%s'", again);
  run_app_through(0, "twin-3", CYCLES);
  assert_int_equal(db_ll("SELECT count(*) FROM agents"), 3);
  assert_int_equal(db_ll("SELECT count(*) FROM traces"), 3 * 2 * CYCLES);

  /* a file that holds no id stops the start, naming it and the fix */
  CHECK(la_td_stop(T.la[0], WAIT_MS) == 0, "first LocalAgent did not stop");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("not-an-id\n", f);
  fclose(f);
  la_td_log_mark(T.la[0]);
  CHECK(la_test_start_la(T.la[0], T.agents_addr, T.key, "twin", WAIT_MS,
                         T.la_addr[0], sizeof T.la_addr[0]) != 0,
        "started with a damaged instance file");
  la_td_log_line(T.la[0], "does not hold an instance id", line, sizeof line);
  CHECK(strstr(line, "spool/instance") && strstr(line, "remove it"),
        "LocalAgent: '%s'", line);
  print_message("LocalAgent: %s\n", line);
}

/* A LocalAgent killed mid-run (all of the application's ranks on it, as
 * with `heavy -n 2` on one node), its link not back within stitch.timeout:
 * it is lost. The sets waiting on its ranks (rank 1 is stopped a while
 * before, so rank 0's later cycles wait on it) close with the reason
 * "LocalAgent nodeK lost" (not "timeout"), its ranks end with that reason,
 * no set of the application stays open and `lactl apps` shows it
 * ended-lost. Restarted on its log, it sends what the GlobalAgent had not
 * acknowledged (held back by stopping the GlobalAgent before the kill):
 * stored, every cycle the LocalAgent compacted is in the store, and every
 * (rank, cycle) of the application is stored or recorded missing. Formerly
 * the open cycle closed as "timeout: LocalAgent nodeK not connected" and
 * the application stayed "running" for ever. */
static void test_lost_localagent_ends_its_ranks(void **state) {
  need_daemons();
  const char *app = "lost-1";
  start_ga(NULL, 0);
  start_la(0, "nodeK", NULL);
  wait_linked(0);
  fork_rank(T.la_addr[0], app, 0, 2, 4000, 1000000);
  fork_rank(T.la_addr[0], app, 1, 2, 4000, 1000000);
  db_wait(10, "SELECT count(*) FROM traces WHERE app_id = 'lost-1'");
  /* rank 1 stops: sets of rank 0's later cycles wait on it */
  CHECK(kill(T.kids[1], SIGSTOP) == 0, "SIGSTOP rank 1");
  db_wait(1, "SELECT count(*) FROM traces WHERE app_id = 'lost-1' AND "
             "rank = 0 AND cycle_tag > (SELECT coalesce(max(cycle_tag), -1) "
             "FROM traces WHERE app_id = 'lost-1' AND rank = 1)");
  /* the GlobalAgent stops reading: what the LocalAgent compacts now waits
   * in its log, not acknowledged */
  la_td_signal(T.ga, SIGSTOP);
  long long c0 = la_td_status_ll(T.la[0], "cycles_compacted");
  long long end = la_td_now_ms() + WAIT_MS;
  while (la_td_status_ll(T.la[0], "cycles_compacted") < c0 + 6 &&
         la_td_now_ms() < end)
    la_td_nap_ms(10);
  for (int i = 0; i < T.nkids; i++)
    CHECK(waitpid(T.kids[i], NULL, WNOHANG) == 0,
          "rank %d ended before the kill: make it longer", i);
  long long compacted = la_td_status_ll(T.la[0], "cycles_compacted");
  CHECK(la_td_status_ll(T.la[0], "queue_items") > 0,
        "nothing waits unacknowledged in the LocalAgent's log");
  la_td_signal(T.la[0], SIGKILL);
  assert_int_equal(la_td_wait_exit(T.la[0], WAIT_MS), 128 + SIGKILL);
  la_td_signal(T.ga, SIGCONT);
  kill(T.kids[1], SIGCONT);
  reap_kids(); /* the ranks lost their LocalAgent: they fail, as they say */

  ga_wait_log("LocalAgent nodeK lost: not linked again within stitch.timeout");
  char line[600];
  la_td_log_line(T.ga, "LocalAgent nodeK lost: not linked", line, sizeof line);
  print_message("GlobalAgent: %s\n", line);
  db_wait(2, "SELECT count(*) FROM ranks WHERE app_id = 'lost-1' AND "
             "ended = 1 AND end_reason = 'LocalAgent nodeK lost'");
  db_wait(1, "SELECT count(*) = 0 FROM trace_sets WHERE app_id = 'lost-1' "
             "AND closed = 0");
  long long lost = db_ll("SELECT count(*) FROM missing WHERE app_id = "
                         "'lost-1' AND reason = 'LocalAgent nodeK lost'");
  long long other = db_ll("SELECT count(*) FROM missing WHERE app_id = "
                          "'lost-1' AND reason <> 'LocalAgent nodeK lost'");
  CHECK(lost >= 1 && other == 0,
        "missing records: %lld 'LocalAgent nodeK lost', %lld others", lost,
        other);
  const char *out = lactl_out("apps", "--job", app, NULL);
  CHECK(strstr(out, "ended-lost (2 of 2 ranks)"), "lactl apps:\n%s", out);
  print_message("lactl apps:\n%s", out);

  /* back with its log: what was not acknowledged is stored now */
  start_la(0, "nodeK", NULL);
  wait_linked(0);
  CHECK(la_td_wait_status_at_most(T.la[0], "queue_items", 0, WAIT_MS) == 0,
        "the LocalAgent still holds %lld messages",
        la_td_status_ll(T.la[0], "queue_items"));
  long long stored = db_ll("SELECT count(*) FROM traces WHERE app_id = "
                           "'lost-1'");
  CHECK(stored >= compacted,
        "%lld traces stored, the LocalAgent had compacted %lld", stored,
        compacted);
  db_wait(1, "SELECT count(*) = 0 FROM trace_sets WHERE app_id = 'lost-1' "
             "AND closed = 0");
  /* nothing dropped silently: each (rank, cycle) stored or missing */
  char gaps[4][64];
  int ng = db_texts(
      gaps, 4,
      "SELECT s.cycle_tag || ':' || r.rank || ' closed ' || s.closed || "
      "' complete ' || s.complete FROM trace_sets s JOIN ranks r ON "
      "r.app_id = s.app_id WHERE s.app_id = 'lost-1' AND NOT EXISTS (SELECT "
      "1 FROM traces t WHERE t.app_id = s.app_id AND t.cycle_tag = "
      "s.cycle_tag AND t.rank = r.rank) AND NOT EXISTS (SELECT 1 FROM "
      "missing m WHERE m.app_id = s.app_id AND m.cycle_tag = s.cycle_tag "
      "AND m.rank = r.rank) ORDER BY s.cycle_tag");
  CHECK(ng == 0, "%d (cycle:rank) neither stored nor missing, first %s", ng,
        ng ? gaps[0] : "-");
  char why[4][64];
  int nw = db_texts(why, 4,
                    "SELECT DISTINCT reason || ' (' || source || ')' FROM "
                    "missing WHERE app_id = 'lost-1'");
  for (int i = 0; i < nw; i++) print_message("missing: %s\n", why[i]);
  /* the GlobalAgent's reason is the true one; the LocalAgent's own (what
   * its log says it lost in the crash) replaces it where it has one */
  assert_int_equal(db_ll("SELECT count(*) FROM missing WHERE app_id = "
                         "'lost-1' AND source <> 'agent' AND reason <> "
                         "'LocalAgent nodeK lost'"),
                   0);
}

/* A LocalAgent gone for good while the GlobalAgent was down: nothing saw
 * its link close, yet the restarted GlobalAgent finds its ranks open in
 * the store, waits stitch.timeout for it to link again and then ends them
 * as lost, so its application does not stay "running" for ever. */
static void test_lost_while_globalagent_down(void **state) {
  need_daemons();
  const char *app = "lostdown-1";
  start_ga(NULL, 0);
  start_la(0, "nodeD", NULL);
  wait_linked(0);
  fork_rank(T.la_addr[0], app, 0, 1, 4000, 1000000);
  db_wait(1, "SELECT count(*) FROM traces WHERE app_id = 'lostdown-1'");
  kill_ga();
  la_td_signal(T.la[0], SIGKILL);
  assert_int_equal(la_td_wait_exit(T.la[0], WAIT_MS), 128 + SIGKILL);
  reap_kids(); /* the rank lost its LocalAgent: it fails, as it says */
  CHECK(db_ll("SELECT count(*) FROM ranks WHERE app_id = 'lostdown-1' AND "
              "ended = 0") == 1,
        "the rank is not open in the store after the kill");
  start_ga(NULL, 1);
  ga_wait_log("LocalAgent nodeD lost: not linked again within stitch.timeout");
  db_wait(1, "SELECT count(*) FROM ranks WHERE app_id = 'lostdown-1' AND "
             "ended = 1 AND end_reason = 'LocalAgent nodeD lost'");
  const char *out = lactl_out("apps", "--job", app, NULL);
  CHECK(strstr(out, "ended-lost (1 of 1 ranks)"), "lactl apps:\n%s", out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_two_agents_one_mpi_run),
      T(test_queries_and_exact_totals),
      T(test_killed_localagent_partial_sets),
      T(test_lost_localagent_ends_its_ranks),
      T(test_lost_while_globalagent_down),
      T(test_globalagent_restart_mid_run),
      T(test_wrong_secret_refused),
      T(test_same_host_second_agent_refused),
      T(test_slow_subscriber),
      T(test_garbage_closes_only_that_connection),
      T(test_resent_rank_end_changes_nothing),
      T(test_rank_registered_again_runs_on),
      T(test_trace_missing_closes_set_with_reason),
      T(test_timeout_reason_in_status),
      T(test_late_trace_never_reopens_a_closed_set),
      T(test_restart_keeps_age_and_closed_sets),
      T(test_commit_failure_counts_exact),
      T(test_sigterm_at_first_port_file),
      T(test_message_filling_a_batch_is_acked),
      T(test_kill_between_commit_and_ack),
      T(test_kill_after_gathered_commit),
      T(test_burst_within_gather_window_is_one_commit),
#undef T
  };
  /* LA_TEST_FILTER=pattern runs only the matching tests (cmocka's glob) */
  const char *only = getenv("LA_TEST_FILTER");
  if (only && only[0]) cmocka_set_test_filter(only);
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
