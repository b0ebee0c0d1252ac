/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fortran.c: the Fortran module la_mod, end to end.
 *
 * Runs the Fortran program build/tests/fortran/test_fmod (source
 * tests/fortran/test_fmod.f90; the build makes it, this file builds nothing)
 * in a child process, three ways:
 *   - "codes": the program prints every la_mod constant; each must equal the
 *     C definition in la.h, and none may be missing or extra;
 *   - no agent (LA_AGENT at a closed port): la_register fails with
 *     LA_ENOAGENT, every other call is a no-op, the program exits 0 and
 *     leaves no SysV segment or semaphore set behind;
 *   - against the real LocalAgent and GlobalAgent (la_test_agent.h,
 *     lossless compaction, read back from the GlobalAgent's store): the
 *     values that arrive carry the right 0-based indices for the program's
 *     1-based elements, cells, ranges, rows and boxes, with the right cycle
 *     tags (la_is_profiling follows a period set at run time), and no
 *     IPC object outlives the program;
 *   - the OpenMP program build/tests/fortran/test_fomp (LA_TEST_FOMP;
 *     tests/fortran/test_fomp.f90): tile offsets in a parallel region
 *     opened inside a tiled kernel (la_start_cell_off, and the trap of
 *     the per-thread la_set_tile_offset), and the channel variants of
 *     cells, rows and boxes.
 * Skips, with a message, when the Fortran program was not built. The program
 * path can be overridden with LA_TEST_FMOD.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_test_agent.h"
#include "la_test_ipc.h"

extern char **environ;

#define CHILD_TIMEOUT_MS 60000
#define OUT_MAX 65536

typedef struct {
  pid_t pid;
  int status; /* as from waitpid; -1 if it had to be killed */
  char out[OUT_MAX];
} run_t;

static const char *fmod_path(void) {
  const char *p = getenv("LA_TEST_FMOD");
  return p && *p ? p : "build/tests/fortran/test_fmod";
}

static void skip_if_missing(void) {
  if (access(fmod_path(), X_OK) != 0) {
    print_message("skip: %s not built (see tests/fortran/test_fmod.f90)\n",
                  fmod_path());
    skip();
  }
}

static uint64_t ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Runs the program with argument arg and LA_AGENT=agent (every other LA_*
 * variable removed, LA_VERBOSE=1, LA_COMPACT=lossless), stdout and stderr
 * into r->out. The environment is built before fork: the child only dup2s
 * and execs. */
static void run_path(run_t *r, const char *path, const char *arg,
                     const char *agent);
static void run_fmod(run_t *r, const char *arg, const char *agent) {
  run_path(r, fmod_path(), arg, agent);
}

/* The OpenMP program build/tests/fortran/test_fomp (LA_TEST_FOMP). */
static const char *fomp_path(void) {
  const char *p = getenv("LA_TEST_FOMP");
  return p && *p ? p : "build/tests/fortran/test_fomp";
}

/* run_fmod() of program path. */
static void run_path(run_t *r, const char *path, const char *arg,
                     const char *agent) {
  static char agent_var[300];
  size_t n = 0;
  for (char **e = environ; *e; e++) n++;
  char **envp = calloc(n + 4, sizeof *envp);
  assert_non_null(envp);
  size_t k = 0;
  for (char **e = environ; *e; e++)
    if (strncmp(*e, "LA_", 3) != 0) envp[k++] = *e;
  snprintf(agent_var, sizeof agent_var, "LA_AGENT=%s", agent);
  envp[k++] = agent_var;
  envp[k++] = "LA_VERBOSE=1";
  envp[k++] = "LA_COMPACT=lossless"; /* exact values in the store */
  envp[k] = NULL;
  char *const argv[] = {(char *)path, (char *)arg, NULL};

  int fds[2];
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execve(path, argv, envp);
    _exit(127);
  }
  close(fds[1]);
  free(envp);
  r->pid = pid;
  size_t len = 0;
  uint64_t deadline = ms_now() + CHILD_TIMEOUT_MS;
  int killed = 0;
  for (;;) {
    uint64_t now = ms_now();
    if (now >= deadline) {
      kill(pid, SIGKILL);
      killed = 1;
      break;
    }
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    int pr = poll(&pfd, 1, (int)(deadline - now));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    char tmp[4096];
    ssize_t got = read(fds[0], tmp, sizeof tmp);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size_t take = (size_t)got;
    if (take > sizeof r->out - 1 - len) take = sizeof r->out - 1 - len;
    memcpy(r->out + len, tmp, take);
    len += take;
  }
  r->out[len] = '\0';
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r->status = killed ? -1 : st;
  print_message("---- %s %s (LA_AGENT=%s) ----\n%s", path, arg, agent, r->out);
}

/* Starts the daemon pair for a, or fails the test. */
static void start_daemons(la_test_agent_t *a) {
  if (la_ta_start(a, NULL) != 0) {
    la_ta_free(a);
    fail_msg("the daemons did not start");
  }
}

static void assert_exit_0(const run_t *r) {
  if (r->status == -1) fail_msg("test_fmod timed out");
  if (!WIFEXITED(r->status))
    fail_msg("test_fmod died of signal %d", WTERMSIG(r->status));
  if (WEXITSTATUS(r->status) != 0)
    fail_msg("test_fmod exited with status %d", WEXITSTATUS(r->status));
  assert_non_null(strstr(r->out, "fmod: OK"));
}

/* run_fmod(), which must exit 0 having printed `ok`. */
static void run_fmod_ok(run_t *r, const char *arg, const char *agent,
                        const char *ok) {
  run_fmod(r, arg, agent);
  assert_exit_0(r);
  assert_non_null(strstr(r->out, ok));
}

/* Semaphore sets that exist now but not in before[0..nb) and were set up
 * by process pid (libla SETALLs a set right after creating it, which
 * records pid as the last operator of every semaphore): other users' jobs
 * on this node are not ours to count. */
static int new_sems(const int *before, size_t nb, pid_t pid) {
  int now[4096];
  size_t nn = (size_t)la_test_sem_ids(now, 4096), fresh = 0;
  for (size_t i = 0; i < nn; i++) {
    size_t j = 0;
    while (j < nb && before[j] != now[i]) j++;
    if (j == nb && semctl(now[i], 0, GETPID) == (int)pid) {
      print_message("semaphore set %d appeared during the run\n", now[i]);
      fresh++;
    }
  }
  return (int)fresh;
}

/* "127.0.0.1:PORT" where nothing listens (a port just released). */
static void closed_port(char *buf, size_t cap) {
  int port = la_td_closed_port();
  assert_true(port > 0);
  snprintf(buf, cap, "127.0.0.1:%d", port);
}

/* ----------------------------------------------------------- the tests */

/* Every constant of la_mod equals its C definition; none missing or extra. */
static void test_constants_match_c(void **state) {
  skip_if_missing();
  /* clang-format off */
  static const struct {
    const char *name;
    long value;
  } want[] = {
    {"LA_OK", 0},
#define XX(name, val, msg) {"LA_" #name, val},
    LA_ERRNO_MAP(XX)
#undef XX
    {"LA_POLICY_WAIT", LA_POLICY_WAIT},
    {"LA_POLICY_SKIP", LA_POLICY_SKIP},
    {"LA_STAT_CYCLES", LA_STAT_CYCLES},
    {"LA_STAT_PROFILED", LA_STAT_PROFILED},
    {"LA_STAT_SKIPPED", LA_STAT_SKIPPED},
    {"LA_STAT_WAITS", LA_STAT_WAITS},
    {"LA_STAT_RANGE_ERRORS", LA_STAT_RANGE_ERRORS},
    {"LA_STAT_WAIT_NS", LA_STAT_WAIT_NS},
    {"LA_STAT_REGISTERED", LA_STAT_REGISTERED},
    {"LA_STAT_TIMER_RES_NS", LA_STAT_TIMER_RES_NS},
    {"LA_STAT_FLAGGED", LA_STAT_FLAGGED},
    {"LA_STAT_INTERFERENCE_NS", LA_STAT_INTERFERENCE_NS},
    {"LA_STAT_REREGISTERED", LA_STAT_REREGISTERED},
    {"LA_STAT_REFUSED", LA_STAT_REFUSED},
    {"LA_STAT_BEHIND", LA_STAT_BEHIND},
  };
  /* clang-format on */
  static run_t r;
  char port[64];
  closed_port(port, sizeof port);
  run_fmod(&r, "codes", port);
  assert_true(r.status != -1 && WIFEXITED(r.status));
  assert_int_equal(WEXITSTATUS(r.status), 0);
  size_t lines = 0;
  for (const char *p = r.out; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, sizeof want / sizeof want[0]);
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    char line[96];
    snprintf(line, sizeof line, "%s %ld\n", want[i].name, want[i].value);
    const char *hit = strstr(r.out, line);
    if (!hit || (hit != r.out && hit[-1] != '\n'))
      fail_msg("la_mod lacks or mistypes \"%s %ld\"", want[i].name,
               want[i].value);
  }
}

/* No agent: register fails with LA_ENOAGENT, the program is unaffected and
 * no IPC object outlives it. */
static void test_no_agent(void **state) {
  skip_if_missing();
  static run_t r;
  static int before[4096];
  size_t nb = (size_t)la_test_sem_ids(before, 4096);
  char port[64];
  closed_port(port, sizeof port);
  run_fmod_ok(&r, "noagent", port, "fmod: OK (profiled F)");
  assert_int_equal(la_test_ipc_count(r.pid), 0);
  assert_int_equal(new_sems(before, nb, r.pid), 0);
}

/* The values of app_id's trace of rank 0 that arrived i-th (by the
 * DataReady seq); the trace must hold exactly n values. Returns its tag. */
static uint64_t trace_by_seq(la_test_agent_t *a, const char *app_id, size_t i,
                             double *out, uint64_t n) {
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT cycle_tag FROM traces WHERE app_id = '%s' AND rank = 0 "
           "AND rank_seq = %zu",
           app_id, i);
  long long tag = la_ta_sql_int(a, sql);
  assert_true(tag >= 0);
  assert_int_equal(la_ta_values(a, app_id, 0, (uint64_t)tag, out, n), 0);
  return (uint64_t)tag;
}

/* Only these 0-based indices are non-zero (positive); all others exactly 0. */
static void assert_nonzero_exactly(uint64_t tag, const double *v, uint64_t n,
                                   const long *idx, size_t n_idx) {
  for (uint64_t e = 0; e < n; e++) {
    int listed = 0;
    for (size_t i = 0; i < n_idx; i++) listed |= (uint64_t)idx[i] == e;
    if (listed && !(v[e] > 0.0))
      fail_msg("cycle tag %llu: element %llu is %g, expected > 0",
               (unsigned long long)tag, (unsigned long long)e, v[e]);
    if (!listed && v[e] != 0.0)
      fail_msg("cycle tag %llu: element %llu is %g, expected exactly 0",
               (unsigned long long)tag, (unsigned long long)e, v[e]);
  }
}

/* With the real LocalAgent (lossless compaction; what it sent read back
 * from the real GlobalAgent's store): the program's 1-based elements,
 * ranges and cells arrive at the right 0-based indices, with the right
 * tags, and no IPC object outlives the program. */
static void test_values_arrive(void **state) {
  skip_if_missing();
  static run_t r;
  static la_test_agent_t a;
  static int before[4096];
  size_t nb = (size_t)la_test_sem_ids(before, 4096);
  start_daemons(&a);
  run_fmod_ok(&r, "agent", la_td_addr(a.st.la), "fmod: OK (profiled T)");
  assert_int_equal(la_ta_wait_ended(&a, 5, 2, 20000), 0);
  assert_int_equal(la_ta_local_stat(&a, "registrations"), 2);
  assert_int_equal(la_ta_sql_int(&a,
                                 "SELECT count(*) FROM ranks WHERE "
                                 "end_reason = 'finalize'"),
                   2);
  assert_int_equal(la_ta_sql_int(&a, "SELECT count(*) FROM traces"), 5);
  /* Phase 1 declared channels main and aux: their names, and both series
   * of each of its 4 traces (aux probed in the first 3) */
  assert_int_equal(la_ta_sql_int(&a,
                                 "SELECT count(*) FROM rank_channels WHERE "
                                 "app_id = 'fmod-app.1' AND ((channel = 0 AND "
                                 "name = 'main') OR (channel = 1 AND name = "
                                 "'aux'))"),
                   2);
  assert_int_equal(la_ta_sql_int(&a,
                                 "SELECT count(*) FROM channel_traces WHERE "
                                 "app_id = 'fmod-app.1'"),
                   8);
  assert_int_equal(la_ta_sql_int(&a,
                                 "SELECT count(*) FROM channel_traces WHERE "
                                 "app_id = 'fmod-app.1' AND channel = 1 AND "
                                 "stat_sum > 0"),
                   3);

  /* Names trimmed of the Fortran blanks. Phase 1 under fmod-app.1. */
  char text[160];
  assert_int_equal(la_ta_sql_text(&a,
                                  "SELECT app_name FROM apps WHERE app_id = "
                                  "'fmod-app.1'",
                                  text, sizeof text),
                   0);
  assert_string_equal(text, "fmodtest");
  /* The grid registration (the last), under fmod-grid.1. */
  const char *grid = "fmod-grid.1";
  la_ta_sql_text(&a, "SELECT app_name FROM apps WHERE app_id = 'fmod-grid.1'",
                 text, sizeof text);
  assert_string_equal(text, "fmodtest");
  la_ta_sql_text(&a, "SELECT metric FROM apps WHERE app_id = 'fmod-grid.1'",
                 text, sizeof text);
  assert_string_equal(text, "time");
  assert_int_equal(
      la_ta_app_int(&a, grid, "SELECT rank FROM ranks WHERE app_id = '%s'"), 0);
  assert_int_equal(
      la_ta_app_int(&a, grid, "SELECT nprocs FROM apps WHERE app_id = '%s'"),
      1);
  assert_int_equal(
      la_ta_app_int(&a, grid, "SELECT pid FROM ranks WHERE app_id = '%s'"),
      r.pid);
  assert_int_equal(
      la_ta_app_int(&a, grid,
                    "SELECT n_elements FROM ranks WHERE app_id = '%s'"),
      24);
  assert_int_equal(
      la_ta_app_int(&a, grid, "SELECT period FROM apps WHERE app_id = '%s'"),
      1);
  assert_int_equal(la_ta_app_grid(&a, grid, 4, 3, 2), 0);
  /* the buffer count is what the LocalAgent saw registering */
  char line[200];
  snprintf(line, sizeof line,
           "registered fmod-grid.1 rank 0/1 (pid %d, 24 elements, 2 buffers,",
           (int)r.pid);
  assert_true(la_td_log_has(a.st.la, line));

  /* Phase 1: elements 1, 3, 10 and range 5..6 -> 0, 2, 9, 4, 5. */
  static const long flat[] = {0, 2, 9, 4, 5};
  static const uint64_t tags[] = {0, 1, 1000, 4};
  double v[24];
  assert_int_equal(la_ta_ntraces(&a, "fmod-app.1"), 4);
  for (size_t seen = 0; seen < 4; seen++) {
    /* arrived seen-th (seq), with the right tag and exactly 12 values */
    uint64_t tag = trace_by_seq(&a, "fmod-app.1", seen, v, 12);
    assert_int_equal(tag, tags[seen]);
    if (tag == 4) {
      static const long last[] = {11}; /* element 12 after la_enable */
      assert_nonzero_exactly(tag, v, 12, last, 1);
    } else {
      assert_nonzero_exactly(tag, v, 12, flat, 5);
      /* a range spreads one measurement evenly */
      assert_true(v[4] == v[5]);
    }
  }
  assert_int_equal(
      la_ta_app_int(&a, "fmod-app.1",
                    "SELECT skipped FROM ranks WHERE app_id = '%s'"),
      0);

  /* Phase 2: cells (2,1,1) and (4,3,2) of 4x3x2 -> 1 and 23; row (2,1) ->
   * 4..7 and box (1..2, 1..2, 2) -> 12, 13, 16, 17, each spread evenly. */
  static const long cells[] = {1, 23, 4, 5, 6, 7, 12, 13, 16, 17};
  assert_int_equal(la_ta_ntraces(&a, grid), 1);
  assert_int_equal(trace_by_seq(&a, grid, 0, v, 24), 0);
  assert_nonzero_exactly(0, v, 24, cells, 10);
  assert_true(v[4] == v[5] && v[4] == v[6] && v[4] == v[7]);
  assert_true(v[12] == v[13] && v[12] == v[16] && v[12] == v[17]);

  /* Neither segments nor semaphore sets outlive the program. */
  assert_int_equal(la_test_ipc_wait_count(r.pid, 0, 10000), 0);
  long long end = la_td_now_ms() + 10000;
  while (new_sems(before, nb, r.pid) != 0 && la_td_now_ms() < end)
    usleep(10000);
  assert_int_equal(new_sems(before, nb, r.pid), 0);
  la_ta_free(&a);
}

/* The application's numbering from Fortran (test_fmod numbering): 32-bit
 * global ids reach the store; a grid registered with its array's bounds
 * takes the program's indices (and a tile offset) for cells, rows and
 * boxes, and its origin in the global grid is stored with the rank. */
static void test_numbering(void **state) {
  la_test_agent_t a;
  run_t r;
  start_daemons(&a);
  run_fmod_ok(&r, "numbering", la_td_addr(a.st.la), "fmod: OK (numbering)");
  assert_int_equal(la_ta_wait_traces(&a, 2, 20000), 0);
  assert_int_equal(
      la_ta_wait_sql(&a, "SELECT count(*) FROM element_ids", 1, 20000), 0);
  const char *ids = "fmod-ids.1", *lb = "fmod-lb.1";
  assert_int_equal(
      la_ta_app_int(&a, ids,
                    "SELECT sum(n) FROM element_ids WHERE app_id = '%s'"),
      12);
  char hex[80];
  la_ta_sql_text(&a,
                 "SELECT hex(substr(ids, 1, 16)) FROM element_ids WHERE "
                 "app_id = 'fmod-ids.1' AND first = 0",
                 hex, sizeof hex);
  assert_string_equal(hex, "6400000000000000C800000000000000"); /* 100, 200 */
  assert_int_equal(
      la_ta_app_int(&a, lb,
                    "SELECT nx * 100 + ny * 10 + nz FROM rank_grid "
                    "WHERE app_id = '%s'"),
      642);
  assert_int_equal(
      la_ta_app_int(&a, lb,
                    "SELECT ox * 100 + oy * 10 + oz FROM rank_grid "
                    "WHERE app_id = '%s'"),
      1000);
  assert_int_equal(
      la_ta_app_int(&a, lb,
                    "SELECT gnx * 100 + gny * 10 + gnz FROM rank_grid "
                    "WHERE app_id = '%s'"),
      2042);
  double v[48];
  assert_int_equal(trace_by_seq(&a, lb, 0, v, 48), 0);
  /* cells 0, 47 and (tile) 9; row (2,3) -> 36..41 and the tiled box ->
   * 1, 2, each spread evenly */
  static const long cells[] = {0, 9, 47, 36, 37, 38, 39, 40, 41, 1, 2};
  assert_nonzero_exactly(0, v, 48, cells, 11);
  for (int c = 37; c <= 41; c++) assert_true(v[c] == v[36]);
  assert_true(v[1] == v[2]);
  la_ta_free(&a);
}

/* Custom probe functions from Fortran (test_fmod probes): the function
 * gets the 1-based element and its argument, one set while registered
 * measures from the next cycle, LA_finalize hands the open cycle over,
 * and under the time metric they are refused (checked in Fortran). */
static void test_custom_probes(void **state) {
  skip_if_missing();
  la_test_agent_t a;
  run_t r;
  start_daemons(&a);
  run_fmod_ok(&r, "probes", la_td_addr(a.st.la), "fmod: OK (probes)");
  assert_int_equal(la_ta_wait_ended(&a, 3, 2, 20000), 0);
  const char *id = "fmod-probes.1";
  char metric[64];
  la_ta_sql_text(&a, "SELECT metric FROM apps WHERE app_id = 'fmod-probes.1'",
                 metric, sizeof metric);
  assert_string_equal(metric, "custom");
  la_ta_sql_text(&a, "SELECT metric FROM apps WHERE app_id = 'fmod-probes.2'",
                 metric, sizeof metric);
  assert_string_equal(metric, "time");
  assert_int_equal(la_ta_ntraces(&a, id), 3);
  static const double want[3][4] = {
      {0, 20, 30, 0}, {0, 0, 0, 4000}, {1000, 0, 0, 0}};
  for (size_t i = 0; i < 3; i++) {
    double v[4];
    assert_int_equal(trace_by_seq(&a, id, i, v, 4), i);
    for (int e = 0; e < 4; e++)
      if (v[e] != want[i][e])
        fail_msg("cycle %zu element %d: %g, expected %g", i, e, v[e],
                 want[i][e]);
  }
  la_ta_free(&a);
}

/* test_fomp MODE against the real daemons (a), which must exit 0 having
 * printed "fomp: OK (MODE)". Fails, not skips, when test_fomp was not
 * built while test_fmod was (the build makes both). */
static void run_fomp_ok(run_t *r, la_test_agent_t *a, const char *mode) {
  if (access(fomp_path(), X_OK) != 0)
    fail_msg("%s not built (tests/fortran/test_fomp.f90)", fomp_path());
  run_path(r, fomp_path(), mode, la_td_addr(a->st.la));
  if (r->status == -1) fail_msg("test_fomp timed out");
  if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
    fail_msg("test_fomp %s failed (status %d)", mode, r->status);
  char ok[64];
  snprintf(ok, sizeof ok, "fomp: OK (%s)", mode);
  assert_non_null(strstr(r->out, ok));
}

/* A tiled kernel that opens its OpenMP region inside the tile loop (test_
 * fomp tiles, 2 threads, metric custom: each cell's stop reads the work
 * of the cell the program meant, c + 1 for C index c). With
 * la_start_cell_off every cell holds its own work; with the per-thread
 * la_set_tile_offset the thread that never set one is refused (the
 * program saw range errors naming la_set_tile_offset): every stored value
 * is its own cell's work or 0, never another cell's; once every offset is
 * back at 0,0,0 that thread probes again. */
static void test_omp_tiles(void **state) {
  skip_if_missing();
  la_test_agent_t a;
  static run_t r;
  start_daemons(&a);
  run_fomp_ok(&r, &a, "tiles");
  assert_int_equal(la_ta_wait_ended(&a, 2, 1, 20000), 0);
  const char *id = "fomp-tiles.1";
  assert_int_equal(la_ta_ntraces(&a, id), 2);
  double v[64];
  assert_int_equal(la_ta_values(&a, id, 0, 0, v, 64), 0);
  for (int c = 0; c < 64; c++)
    if (v[c] != c + 1)
      fail_msg("cell_off: cell %d holds %g, expected its work %d", c, v[c],
               c + 1);
  assert_int_equal(la_ta_values(&a, id, 0, 1, v, 64), 0);
  int own = 0, refused = 0;
  for (int c = 0; c < 64; c++) {
    if (v[c] == c + 1)
      own++;
    else if (v[c] == 0)
      refused++;
    else
      fail_msg("tile offset: cell %d holds %g: not its work %d nor 0", c, v[c],
               c + 1);
  }
  print_message("tile offset: %d cells measured, %d refused\n", own, refused);
  assert_true(own > 0 && refused > 0);
  /* refused in the sweep, probed once every offset was back at 0,0,0 */
  assert_true(v[8] == 9);
  assert_non_null(strstr(r.out, "la_set_tile_offset"));
  la_ta_free(&a);
}

/* Channel variants of cells, rows and boxes from Fortran (test_fomp
 * channels): each channel's stored series is what was probed into it. */
static void test_channel_rows_boxes(void **state) {
  skip_if_missing();
  la_test_agent_t a;
  static run_t r;
  start_daemons(&a);
  run_fomp_ok(&r, &a, "channels");
  assert_int_equal(la_ta_wait_ended(&a, 1, 1, 20000), 0);
  double want[2][24] = {{0}};
  for (int c = 20; c <= 23; c++) want[0][c] = 1;             /* row (3,2), 4 */
  want[0][10] = want[0][11] = 3;                             /* box, 6 */
  want[1][0] = 5;                                            /* cell (1,1,1) */
  for (int c = 4; c <= 7; c++) want[1][c] = 2;               /* row (2,1), 8 */
  want[1][12] = want[1][13] = want[1][16] = want[1][17] = 4; /* box, 16 */
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(a.st.feed_addr, 5000, &c), 0);
  la_client_set_weights(c, LA_WEIGHTS_MEASURED);
  la_traceset_t *ts = la_ta_complete_set(c, "fomp-ch.1", 0, 20000);
  if (!ts) fail_msg("no Trace-Set: %s", la_client_error(c));
  assert_int_equal(la_traceset_channels(ts), 2);
  double w[24];
  for (int ch = 0; ch < 2; ch++) {
    assert_int_equal(la_traceset_channel_rank_weights(ts, (size_t)ch, 0, w), 0);
    for (int e = 0; e < 24; e++)
      if (w[e] != want[ch][e])
        fail_msg("channel %d cell %d: %g, expected %g", ch, e, w[e],
                 want[ch][e]);
  }
  assert_int_equal(la_traceset_weights(ts, w), 0);
  for (int e = 0; e < 24; e++) assert_true(w[e] == want[0][e] + want[1][e]);
  la_traceset_free(ts);
  la_client_close(c);
  la_ta_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_constants_match_c),
      cmocka_unit_test(test_no_agent),
      cmocka_unit_test(test_values_arrive),
      cmocka_unit_test(test_numbering),
      cmocka_unit_test(test_custom_probes),
      cmocka_unit_test(test_omp_tiles),
      cmocka_unit_test(test_channel_rows_boxes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
