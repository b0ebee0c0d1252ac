/* SPDX-License-Identifier: BSD-3-Clause */
/* test_libla.c: libla against the real LocalAgent.
 *
 * Every test registers a real process with real SysV shared memory and
 * semaphores over loopback TCP with the real la-localagent (uplinked to the
 * real la-globalagent, lossless compaction: la_test_agent.h), runs cycles,
 * and checks what arrived, read back from the GlobalAgent's store: element
 * values, cycle tags, the period, accumulation, ranges, grids, rows and
 * boxes, the LA_PROFILED copy LA_isProfiling chooses at every point of the
 * cycle, custom and PAPI probes, the agent killed mid-run, no agent at all, environment
 * overrides, and that no IPC object outlives LA_finalize or a killed
 * application. Grid sizes that overflow are refused; every LA_dataXfer
 * counts as a cycle, also the one that finds the agent gone.
 *
 * Faults the real agent cannot be made to show run against the LocalAgent
 * stand-in (la_test_peer): an agent that holds buffers (the skip policy,
 * the wait policy and its time limit, a wait that must notice the agent
 * died). A refused registration is the real agent's (max_apps = 1). The tags of
 * skipped cycles in DataReady and DataReady's seq are checked against a minimal
 * agent in a thread that records the raw messages.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <signal.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "la.h"
#include "la_codec.h"
#include "la_shm_layout.h"
#include "la_shm_pieces.h"
#include "la_sockio.h"
#include "la_test_agent.h"
#include "la_test_busy.h"
#include "la_test_ipc.h"
#include "la_test_peer.h"

static la_test_peer_t *peer;  /* fault tests only */
static la_test_agent_t agent; /* the real pair */

#define WAIT_MS 20000

static void reset_program(void) {
  la_td_unset_la_env();
  /* Program settings persist across tests: reset them. */
  LA_setPeriod(1);
  LA_setPolicy(LA_POLICY_WAIT);
  LA_setBuffers(4); /* libla's default */
  LA_setProbeStartFunc(NULL, NULL);
  LA_setProbeStopFunc(NULL, NULL);
  LA_setMetric("time");
  LA_enable();
}

/* The real LocalAgent and GlobalAgent. */
static int setup(void **state) {
  reset_program();
  if (la_ta_start(&agent, NULL) != 0) fail_msg("the daemons did not start");
  return 0;
}

static void free_cycles(void);

static int teardown(void **state) {
  LA_finalize();
  free_cycles();
  la_ta_free(&agent);
  return 0;
}

/* The real daemons, the LocalAgent with one compaction thread and a
 * backlog of one cycle per rank (agent.max_backlog), dropping the cycles
 * beyond it (agent.behind = drop). */
static int setup_backlog(void **state) {
  reset_program();
  static const char *const extra[] = {"--agent.max_backlog=1",
                                      "--agent.threads=1",
                                      "--agent.behind=drop", NULL};
  if (la_ta_start(&agent, extra) != 0) fail_msg("the daemons did not start");
  return 0;
}

/* The real daemons, the LocalAgent with its default backlog limit. */
static int setup_defaults(void **state) {
  reset_program();
  static const char *const extra[] = {"--agent.max_backlog=auto", NULL};
  if (la_ta_start(&agent, extra) != 0) fail_msg("the daemons did not start");
  return 0;
}

/* The LocalAgent stand-in, for the faults the real agent cannot show. */
static int setup_peer(void **state) {
  reset_program();
  peer = la_test_peer_start();
  assert_non_null(peer);
  setenv("LA_AGENT", la_test_peer_addr(peer), 1);
  return 0;
}

static int teardown_peer(void **state) {
  LA_finalize();
  la_test_peer_stop(peer);
  peer = NULL;
  return 0;
}

/* ------------------------------------------ what reached the real agent -- */

/* A stored cycle of this process's app, rank 0 (the i-th by tag). */
typedef struct {
  uint64_t tag, n;
  double *values;
} cycle_t;

static cycle_t cycles[64];

static void free_cycles(void) {
  for (size_t i = 0; i < 64; i++) {
    free(cycles[i].values);
    cycles[i].values = NULL;
  }
}

static const cycle_t *cycle_of(const char *app_id, size_t i) {
  assert_true(i < 64);
  cycle_t *c = &cycles[i];
  char sql[300];
  long long tag = la_ta_tag(&agent, app_id, 0, i);
  assert_true(tag >= 0);
  snprintf(sql, sizeof sql,
           "SELECT n_elements FROM traces WHERE app_id = '%s' AND rank = 0 "
           "AND cycle_tag = %lld",
           app_id, tag);
  long long n = la_ta_sql_int(&agent, sql);
  assert_true(n > 0);
  free(c->values);
  c->values = malloc((size_t)n * sizeof(double));
  assert_non_null(c->values);
  c->tag = (uint64_t)tag;
  c->n = (uint64_t)n;
  assert_int_equal(la_ta_values(&agent, app_id, 0, c->tag, c->values, c->n), 0);
  return c;
}

static const cycle_t *cycle(size_t i) {
  return cycle_of(LA_appId(), i);
}

/* Ends the cycle (LA_dataXfer), waits for its trace and returns it. */
static const cycle_t *xfer_one(void) {
  LA_dataXfer();
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  return cycle(0);
}

/* Waits for n traces and asserts their cycle tags are tags[0..n). */
static void expect_tags(size_t n, const uint64_t *tags) {
  assert_int_equal(la_ta_wait_traces(&agent, n, WAIT_MS), 0);
  for (size_t i = 0; i < n; i++) assert_int_equal(cycle(i)->tag, tags[i]);
}

/* What the GlobalAgent recorded of the last registration. */
typedef struct {
  char app_id[160], metric[140], unit[40];
  long long rank, nprocs, pid, n_elements, period, compact_mode;
  long long grid[3];
  double compact_cv;
} reg_t;

static reg_t last_reg(void) {
  reg_t r;
  char q[400], cv[64];
  memset(&r, 0, sizeof r);
  assert_int_equal(
      la_ta_wait_sql(&agent, "SELECT count(*) FROM ranks", 1, WAIT_MS), 0);
  assert_int_equal(la_ta_sql_text(&agent,
                                  "SELECT app_id FROM ranks ORDER BY "
                                  "t_start_ns DESC LIMIT 1",
                                  r.app_id, sizeof r.app_id),
                   0);
#define RANK_COL(col)                                                 \
  (snprintf(q, sizeof q,                                              \
            "SELECT " col " FROM ranks WHERE app_id = '%s' ORDER BY " \
            "t_start_ns DESC LIMIT 1",                                \
            r.app_id),                                                \
   la_ta_sql_int(&agent, q))
#define APP_COL(col)                                                     \
  (snprintf(q, sizeof q, "SELECT " col " FROM apps WHERE app_id = '%s'", \
            r.app_id),                                                   \
   la_ta_sql_int(&agent, q))
  r.rank = RANK_COL("rank");
  r.pid = RANK_COL("pid");
  r.n_elements = RANK_COL("n_elements");
  r.nprocs = APP_COL("nprocs");
  r.period = APP_COL("period");
  r.compact_mode = APP_COL("compact_mode");
  r.grid[0] = APP_COL("grid_nx");
  r.grid[1] = APP_COL("grid_ny");
  r.grid[2] = APP_COL("grid_nz");
#undef RANK_COL
#undef APP_COL
  snprintf(q, sizeof q, "SELECT metric FROM apps WHERE app_id = '%s'",
           r.app_id);
  la_ta_sql_text(&agent, q, r.metric, sizeof r.metric);
  snprintf(q, sizeof q, "SELECT unit FROM apps WHERE app_id = '%s'", r.app_id);
  la_ta_sql_text(&agent, q, r.unit, sizeof r.unit);
  snprintf(q, sizeof q, "SELECT compact_cv FROM apps WHERE app_id = '%s'",
           r.app_id);
  la_ta_sql_text(&agent, q, cv, sizeof cv);
  r.compact_cv = atof(cv);
  return r;
}

/* Registrations the real LocalAgent accepted. */
static long long registrations(void) {
  return la_ta_local_stat(&agent, "registrations");
}

/* Kills the real LocalAgent (SIGKILL: it cleans nothing up). */
static void kill_agent(void) {
  assert_int_equal(la_td_signal(agent.st.la, SIGKILL), 0);
  assert_true(la_td_wait_exit(agent.st.la, 10000) >= 0);
}

/* A deterministic user probe: start reads 0, stop reads e+1, so every
 * start/stop pair adds e+1 to element e. */
static double probe_zero(long e, void *arg) {
  return 0.0;
}
static double probe_e1(long e, void *arg) {
  return (double)(e + 1);
}

static void use_counting_probe(void) {
  LA_setProbeStartFunc(probe_zero, NULL);
  LA_setProbeStopFunc(probe_e1, NULL);
  LA_setMetric("custom");
}

/* use_counting_probe() and a registration of n elements (asserted). */
static void register_counting(long n) {
  use_counting_probe();
  assert_int_equal(LA_register("unit", 0, 1, n), 0);
}

static int sem_exists(int id) {
  return semctl(id, 0, GETVAL) >= 0;
}

/* The one semaphore set created since before[0..nb) was listed, or -1. */
static int new_sem_id(const int *before, int nb) {
  int now[256], n = la_test_sem_ids(now, 256), found = -1;
  for (int i = 0; i < n; i++) {
    int old = 0;
    for (int j = 0; j < nb; j++) old |= now[i] == before[j];
    if (!old) {
      if (found >= 0) return -1;
      found = now[i];
    }
  }
  return found;
}

/* Spins until this thread has used ns of CPU time. */
static void busy_cpu_ns(long ns) {
  struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

/* ---------------------------------------------------------------- tests */

static void test_values_arrive_per_element(void **state) {
  register_counting(100);
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 1);
  for (int c = 0; c < 3; c++) {
    for (long e = 0; e < 100; e += 2) {
      assert_int_equal(LA_startProbe(e), 0);
      assert_int_equal(LA_stopProbe(e), 0);
    }
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(la_ta_wait_traces(&agent, 3, WAIT_MS), 0);
  for (size_t c = 0; c < 3; c++) {
    const cycle_t *cy = cycle(c);
    assert_int_equal(cy->tag, c);
    assert_int_equal(cy->n, 100);
    for (long e = 0; e < 100; e++)
      assert_true(cy->values[e] == (e % 2 == 0 ? (double)(e + 1) : 0.0));
  }
  reg_t r = last_reg();
  assert_string_equal(r.metric, "custom");
  assert_int_equal(r.n_elements, 100);
  assert_int_equal(r.nprocs, 1);
  assert_int_equal(r.pid, getpid());
  assert_string_equal(r.app_id, LA_appId());
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 3);
}

static void test_accumulation_within_cycle(void **state) {
  register_counting(10);
  for (int loop = 0; loop < 3; loop++) { /* three loops over one element */
    LA_startProbe(4);
    LA_stopProbe(4);
  }
  LA_startProbe(7); /* nested probes of different elements */
  LA_startProbe(8);
  LA_stopProbe(8);
  LA_stopProbe(7);
  const cycle_t *cy = xfer_one();
  assert_true(cy->values[4] == 15.0);
  assert_true(cy->values[7] == 8.0);
  assert_true(cy->values[8] == 9.0);
  assert_true(cy->values[0] == 0.0);
}

static void test_buffers_are_zeroed_between_cycles(void **state) {
  use_counting_probe();
  LA_setBuffers(2);
  assert_int_equal(LA_register("unit", 0, 1, 10), 0);
  for (int c = 0; c < 6; c++) { /* buffers reused three times each */
    LA_startProbe(c);
    LA_stopProbe(c);
    LA_dataXfer();
  }
  assert_int_equal(la_ta_wait_traces(&agent, 6, WAIT_MS), 0);
  for (int c = 0; c < 6; c++) {
    const cycle_t *cy = cycle((size_t)c);
    for (int e = 0; e < 10; e++)
      assert_true(cy->values[e] == (e == c ? (double)(e + 1) : 0.0));
  }
}

static void test_element_ranges(void **state) {
  double t = 0;
  LA_setProbeStartFunc(probe_zero, NULL);
  LA_setMetric("custom");
  (void)t;
  /* stop reading = first+1 = 11 for the range starting at 10 */
  LA_setProbeStopFunc(probe_e1, NULL);
  assert_int_equal(LA_register("unit", 0, 1, 20), 0);
  assert_int_equal(LA_startRange(10, 4), 0);
  assert_int_equal(LA_stopRange(10, 4), 0);
  assert_int_equal(LA_startRange(18, 5), LA_ERANGE); /* past the end */
  assert_int_equal(LA_stopRange(0, 1), LA_ESTATE);   /* never started */
  const cycle_t *cy = xfer_one();
  for (int e = 0; e < 20; e++)
    assert_true(cy->values[e] == (e >= 10 && e < 14 ? 11.0 / 4 : 0.0));
}

static void test_period(void **state) {
  use_counting_probe();
  LA_setPeriod(3);
  assert_int_equal(LA_register("unit", 0, 1, 5), 0);
  /* cycles 0-8, then cycle 9 (profiled) as a fence: its trace is the
   * fourth, so one from a cycle not profiled would have come before it
   * (an application's cycles reach the agent in order) */
  for (int c = 0; c < 10; c++) {
    assert_int_equal(LA_isProfiling(), c % 3 == 0);
    LA_startProbe(1); /* no-op in cycles not profiled */
    LA_stopProbe(1);
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(la_ta_wait_traces(&agent, 4, WAIT_MS), 0);
  assert_int_equal(la_ta_local_stat(&agent, "cycles_received"), 4);
  assert_int_equal(la_ta_ntraces(&agent, LA_appId()), 4);
  for (size_t i = 0; i < 4; i++) {
    const cycle_t *cy = cycle(i);
    assert_int_equal(cy->tag, i * 3);
    assert_true(cy->values[1] == 2.0);
  }
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), 10);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 4);
  assert_int_equal(last_reg().period, 3);
}

static void test_period_changed_at_run_time(void **state) {
  register_counting(5); /* cycle 0 profiled */
  LA_setPeriod(4); /* decides from cycle 1 on: 4 and 8 profiled */
  for (int c = 0; c < 9; c++) LA_dataXfer();
  expect_tags(3, (const uint64_t[]){0, 4, 8});
}

static void test_explicit_cycle_tags(void **state) {
  register_counting(5);
  assert_int_equal(LA_dataXferTagged(1000), 0);
  assert_int_equal(LA_dataXferTagged(1010), 0);
  expect_tags(2, (const uint64_t[]){1000, 1010});
}

static void test_enable_disable_at_run_time(void **state) {
  register_counting(5);
  LA_disable();
  LA_dataXfer(); /* cycle 0 was already profiled: it is sent */
  assert_false(LA_isProfiling());
  LA_dataXfer(); /* cycle 1: off */
  LA_enable();
  LA_dataXfer(); /* cycle 2: off, cycle 3 starts profiled */
  assert_true(LA_isProfiling());
  LA_dataXfer();
  expect_tags(2, (const uint64_t[]){0, 3});
}

static void test_range_errors(void **state) {
  register_counting(10);
  assert_int_equal(LA_startProbe(10), LA_ERANGE);
  assert_int_equal(LA_stopProbe(-1), LA_ERANGE);
  assert_int_equal(LA_getStat(LA_STAT_RANGE_ERRORS), 0); /* per cycle */
  LA_dataXfer();
  assert_int_equal(LA_getStat(LA_STAT_RANGE_ERRORS), 2);
  assert_non_null(strstr(LA_lastError(), "outside 0..9"));
}

static void test_grid_cells(void **state) {
  use_counting_probe();
  assert_int_equal(LA_registerGrid("unit", 0, 1, 4, 3, 2), 0);
  reg_t r = last_reg();
  assert_int_equal(r.n_elements, 24);
  assert_int_equal(r.grid[0], 4);
  assert_int_equal(r.grid[2], 2);
  LA_startCell(1, 2, 1); /* 1 + 4*(2 + 3*1) = 21 */
  LA_stopCell(1, 2, 1);
  assert_int_equal(LA_startCell(4, 0, 0), LA_ERANGE);
  assert_int_equal(LA_startCell(0, 0, 2), LA_ERANGE);
  /* tile-local (1,0,0) of the tile at (2,1,1): cell (3,1,1) = 19 */
  assert_int_equal(LA_startCellOff(1, 0, 0, 2, 1, 1), 0);
  assert_int_equal(LA_stopCellOff(1, 0, 0, 2, 1, 1), 0);
  assert_int_equal(LA_startCellOff(3, 0, 0, 1, 0, 0), LA_ERANGE);
  assert_int_equal(LA_startCellOff(0, 0, 0, -1, 0, 0), LA_ERANGE);
  LA_start_counter(3); /* the design study's names */
  LA_stop_counter(3);
  LA_data_xfer();
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  const cycle_t *cy = cycle(0);
  assert_true(cy->values[21] == 22.0);
  assert_true(cy->values[3] == 4.0);
  assert_true(cy->values[19] == 20.0);
  assert_true(cy->values[0] == 0.0);
}

/* ------------------- LA_PROFILED, LA_isProfiling over the cycle, rows, boxes
 * LA_PROFILED must run the probed copy exactly in the cycles LA_isProfiling
 * names, the plain one everywhere else; what the probed copies measured
 * must arrive. Rows and boxes spread one measurement over their cells. */

static int sweeps_probed, sweeps_plain;

/* A kernel the LA_PROFILED way: probes only where probe is 1. */
LA_ALWAYS_INLINE void sweep(long n, const int probe) {
  for (long e = 0; e < n; e++) {
    if (probe) LA_startProbe(e);
    if (probe) LA_stopProbe(e);
  }
  if (probe)
    sweeps_probed++;
  else
    sweeps_plain++;
}

/* One LA_PROFILED sweep over n elements: checks that the copy that ran is
 * the one LA_isProfiling() named, and that it named want. */
static void profiled_sweep(long n, int want) {
  int p0 = sweeps_probed, q0 = sweeps_plain;
  assert_int_equal(LA_isProfiling(), want);
  LA_PROFILED(sweep(n, LA_PROBING));
  assert_int_equal(sweeps_probed - p0, want);
  assert_int_equal(sweeps_plain - q0, !want);
}

static void test_profiled_copy_follows_the_cycle(void **state) {
  use_counting_probe();
  profiled_sweep(6, 0); /* before LA_register */
  LA_setPeriod(3);
  assert_int_equal(LA_register("unit", 0, 1, 6), 0);
  /* period 3; LA_setPeriod(2) in cycle 5 decides from cycle 6 on;
   * LA_disable in cycle 8 (9 and 10 off), LA_enable in cycle 10 */
  static const int want[13] = {1, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1};
  for (int c = 0; c < 13; c++) {
    profiled_sweep(6, want[c]);
    if (c == 5) LA_setPeriod(2);
    if (c == 8) LA_disable();
    if (c == 10) LA_enable();
    if (c < 12) assert_int_equal(LA_dataXfer(), 0);
  }
  /* cycle 12, profiled and probed, is handed over by LA_finalize */
  assert_int_equal(LA_finalize(), 0);
  profiled_sweep(6, 0);
  static const uint64_t tags[5] = {0, 3, 6, 8, 12};
  assert_int_equal(la_ta_wait_traces(&agent, 5, WAIT_MS), 0);
  assert_int_equal(la_ta_ntraces(&agent, LA_appId()), 5);
  for (size_t i = 0; i < 5; i++) {
    const cycle_t *cy = cycle(i);
    assert_int_equal(cy->tag, tags[i]);
    for (long e = 0; e < 6; e++) assert_true(cy->values[e] == (double)(e + 1));
  }
}

static void test_profiled_copy_without_agent(void **state) {
  setenv("LA_AGENT", "127.0.0.1:1", 1); /* nothing listens on port 1 */
  assert_int_equal(LA_register("unit", 0, 1, 6), LA_ENOAGENT);
  for (int c = 0; c < 3; c++) {
    profiled_sweep(6, 0);
    assert_int_equal(LA_dataXfer(), 0);
  }
  LA_finalize();
  unsetenv("LA_AGENT");
  setenv("LA_DISABLE", "1", 1);
  assert_int_equal(LA_register("unit", 0, 1, 6), LA_EDISABLED);
  profiled_sweep(6, 0);
  assert_int_equal(LA_dataXfer(), 0);
  profiled_sweep(6, 0);
}

static void test_profiled_copy_after_agent_lost(void **state) {
  register_counting(6);
  profiled_sweep(6, 1);
  LA_dataXfer();
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  kill_agent();
  int rc = 0;
  for (int c = 0; c < 3 && rc == 0; c++) rc = LA_dataXfer();
  assert_int_equal(rc, LA_EAGENTLOST);
  profiled_sweep(6, 0);
}

/* Against the stand-in that keeps every buffer: skipped cycles (skip
 * policy, and the wait policy after its time limit) run the plain copy. */
static void test_profiled_copy_in_skipped_cycles(void **state) {
  use_counting_probe();
  la_test_peer_set_hold_ms(peer, -1);
  setenv("LA_WAIT_TIMEOUT_MS", "200", 1);
  LA_setBuffers(2);
  assert_int_equal(LA_register("unit", 0, 1, 6), 0);
  profiled_sweep(6, 1); /* buffer 0 */
  LA_dataXfer();
  profiled_sweep(6, 1); /* buffer 1 */
  LA_dataXfer();        /* waits 200 ms, then skips */
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 1);
  profiled_sweep(6, 0);
  LA_dataXfer(); /* after a time-out: skipped without waiting */
  profiled_sweep(6, 0);
  assert_int_equal(la_test_peer_release_all_wait(peer, 5000), 0);
  LA_dataXfer(); /* a buffer is back: profiled again */
  profiled_sweep(6, 1);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 2);
}

/* Buffer 0's piece table in the segment h (layout 6), or NULL. */
static const la_shm_pieces_head_t *pieces_of(la_shm_header_t *h) {
  if (!(h->features & LA_SHM_FEAT_PIECES)) return NULL;
  uint64_t n = h->n_elements, rows = 0;
  if (h->features & LA_SHM_FEAT_ROWS)
    for (rows = 1; rows <= n; rows++) /* the stride says the row count */
      if (n % rows == 0 &&
          la_shm_buffer_stride_r(n, h->n_channels, rows) == h->buffer_stride)
        break;
  return la_shm_pieces_head(h, n, h->n_buffers, h->n_channels, rows, 0);
}

/* The record of a piece in a table of n records, or NULL. */
static const la_shm_piece_t *piece_of(const la_shm_pieces_head_t *ph,
                                      uint64_t n, uint64_t first, uint32_t ni,
                                      uint32_t nj, uint32_t nk) {
  const la_shm_piece_t *t = (const la_shm_piece_t *)(ph + 1);
  for (uint64_t p = 0; p < n; p++)
    if (t[p].key == la_shm_piece_key(first, 0) && t[p].ni == ni &&
        t[p].nj == nj && t[p].nk == nk)
      return &t[p];
  return NULL;
}

/* Rows, boxes and a range in shared-memory layout `layout` (6: a box's or
 * range's time is one record of the piece table, a row's one row value,
 * the LocalAgent spreads both; 5: libla spreads the box and the range; 4:
 * and the rows, as for a LocalAgent older than rows): the agent gets the
 * same values each way, bit for bit. Row (0,1) is probed twice, once the
 * way an older la.h's LA_startRow does it (a box of one whole row). */
static void rows_and_boxes(const char *layout) {
  setenv("LA_SHM_LAYOUT", layout, 1);
  use_counting_probe(); /* a stop reads first + 1: the box's first cell */
  int rc = LA_registerGrid("unit", 0, 1, 4, 3, 2);
  unsetenv("LA_SHM_LAYOUT");
  assert_int_equal(rc, 0);
  assert_int_equal(LA_startRow(2, 1), 0); /* cells 20..23 */
  assert_int_equal(LA_stopRow(2, 1), 0);
  assert_int_equal(LA_startRow(0, 1), 0); /* cells 12..15 */
  assert_int_equal(LA_stopRow(0, 1), 0);
  assert_int_equal(LA_startBox(0, 0, 1, 4, 1, 1), 0); /* the same row */
  assert_int_equal(LA_stopBox(0, 0, 1, 4, 1, 1), 0);
  assert_int_equal(LA_startBox(1, 1, 0, 2, 2, 1), 0); /* cells 5, 6, 9, 10 */
  assert_int_equal(LA_stopBox(1, 1, 0, 2, 2, 1), 0);
  assert_int_equal(LA_startRow(1, 0), 0); /* cells 4..7: 5, 6 have a box's */
  assert_int_equal(LA_stopRow(1, 0), 0);
  assert_int_equal(LA_startRange(2, 2), 0); /* cells 2, 3 */
  assert_int_equal(LA_stopRange(2, 2), 0);
  /* in the segment (buffer 0): the rows' time as libla left it */
  int id = la_test_shm_of(getpid());
  assert_true(id >= 0);
  la_shm_header_t *h = shmat(id, NULL, SHM_RDONLY);
  assert_true(h != (void *)-1);
  int rows = (h->features & LA_SHM_FEAT_ROWS) != 0;
  assert_int_equal(rows, atoi(layout) >= 5);
  const la_shm_pieces_head_t *ph = pieces_of(h);
  assert_int_equal(ph != NULL, atoi(layout) >= 6);
  const double *v = la_shm_buffer_r(h, 24, 1, rows ? 6 : 0, 0);
  if (rows) {
    const double *r = la_shm_buffer_rows(h, 24, 1, 6, 0);
    assert_true(r[5] == 21.0 && r[3] == 26.0); /* rows (2,1) and (0,1) */
    assert_true(v[20] == 0.0 && v[12] == 0.0); /* not spread here */
    assert_true(r[1] == 5.0);                  /* a row */
  } else {
    assert_true(v[20] == 21.0 / 4 && v[12] == 26.0 / 4);
  }
  if (ph) { /* the box and the range: one record each, not spread */
    assert_true(v[5] == 0.0 && v[2] == 0.0);
    assert_int_equal(ph->claimed, 1); /* a mark: the agent reads the table */
    assert_int_equal(ph->spilled, 0);
    const la_shm_piece_t *b = piece_of(ph, 64, 5, 2, 2, 1);
    const la_shm_piece_t *g = piece_of(ph, 64, 2, 2, 0, 0);
    assert_true(b && b->value == 6.0);
    assert_true(g && g->value == 3.0);
  } else {
    assert_true(v[9] == 6.0 / 4 && v[2] == 3.0 / 2);
  }
  shmdt(h);
  assert_int_equal(LA_startRow(3, 0), LA_ERANGE); /* j = ny */
  assert_non_null(strstr(LA_lastError(), "outside the 4x3x2 grid"));
  assert_int_equal(LA_startBox(3, 0, 0, 2, 1, 1), LA_ERANGE); /* past nx */
  assert_int_equal(LA_startBox(0, 0, 0, 0, 1, 1), LA_ERANGE); /* empty */
  assert_int_equal(LA_stopBox(0, 0, 0, 1, 1, 1), LA_ESTATE);  /* no start */
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(LA_getStat(LA_STAT_RANGE_ERRORS), 3);
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  const cycle_t *cy = cycle(0);
  for (int e = 0; e < 24; e++) {
    double want = e >= 20 ? 21.0 / 4 : 0.0;
    if (e >= 12 && e < 16) want = 2 * 13.0 / 4;
    if (e == 5 || e == 6 || e == 9 || e == 10) want = 6.0 / 4;
    if (e >= 4 && e < 8) want += 5.0 / 4; /* row (1,0) */
    if (e == 2 || e == 3) want = 3.0 / 2; /* the range */
    if (cy->values[e] != want)
      fail_msg("layout %s, cell %d: %.17g, expected %.17g", layout, e,
               cy->values[e], want);
  }
}

static void test_rows_and_boxes_spread_evenly(void **state) {
  rows_and_boxes("6");
}

static void test_rows_and_boxes_rows_only(void **state) {
  rows_and_boxes("5");
}

static void test_rows_and_boxes_spread_by_libla(void **state) {
  rows_and_boxes("4");
}

/* Every one of the 180 boxes of a 4x3x2 grid once, the counting probe's
 * interval (its first cell + 1) each, into out (24 cells), in layout
 * `layout`; *spilled and *claimed from the piece table (layout 6). */
static void all_boxes(const char *layout, double *out, uint64_t *claimed,
                      uint64_t *spilled) {
  char app[64];
  snprintf(app, sizeof app, "unit-boxes-%s", layout);
  setenv("LA_SHM_LAYOUT", layout, 1);
  setenv("LA_APP_ID", app, 1);
  use_counting_probe();
  int rc = LA_registerGrid("unit", 0, 1, 4, 3, 2);
  unsetenv("LA_SHM_LAYOUT");
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  int boxes = 0;
  for (long k0 = 0; k0 < 2; k0++)
    for (long j0 = 0; j0 < 3; j0++)
      for (long i0 = 0; i0 < 4; i0++)
        for (long nk = 1; k0 + nk <= 2; nk++)
          for (long nj = 1; j0 + nj <= 3; nj++)
            for (long ni = 1; i0 + ni <= 4; ni++) {
              assert_int_equal(LA_startBox(i0, j0, k0, ni, nj, nk), 0);
              assert_int_equal(LA_stopBox(i0, j0, k0, ni, nj, nk), 0);
              boxes++;
            }
  assert_int_equal(boxes, 180);
  int id = la_test_shm_of(getpid());
  la_shm_header_t *h = shmat(id, NULL, SHM_RDONLY);
  assert_true(h != (void *)-1);
  const la_shm_pieces_head_t *ph = pieces_of(h);
  *claimed = 0; /* records in use */
  for (uint64_t p = 0; ph && p < 64; p++)
    *claimed += ((const la_shm_piece_t *)(ph + 1))[p].key != 0;
  *spilled = ph ? ph->spilled : 0;
  shmdt(h);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_ta_wait_traces(&agent, layout[0] == '6' ? 1 : 2,
                                     WAIT_MS),
                   0);
  memcpy(out, cycle_of(app, 0)->values, 24 * sizeof(double));
  assert_int_equal(LA_finalize(), 0);
}

/* A piece table is bounded (64 records for 24 cells): 174 distinct boxes
 * that are not whole rows fill it, the rest are spread by libla (counted as spilled), and the
 * cells get what libla's own spread gives, up to the order of additions. */
static void test_full_piece_table_falls_back(void **state) {
  double six[24], five[24];
  uint64_t claimed, spilled, c5, s5;
  all_boxes("6", six, &claimed, &spilled);
  assert_true(claimed > 0 && claimed <= 64);
  assert_int_equal(claimed + spilled, 180 - 6); /* the 6 rows: row values */
  all_boxes("5", five, &c5, &s5);
  assert_int_equal(c5 + s5, 0);
  for (int e = 0; e < 24; e++) {
    assert_true(five[e] > 0);
    if (fabs(six[e] - five[e]) > 1e-12 * five[e])
      fail_msg("cell %d: %.17g with pieces, %.17g spread by libla", e, six[e],
               five[e]);
  }
}

/* An application that writes its own piece records: a record outside the
 * grid, of a channel not declared or of no cells is refused by the agent
 * (left out, counted as out of range), the cycle's good record is kept,
 * and the next cycle starts with an empty table. */
static void test_lying_piece_records_refused(void **state) {
  use_counting_probe();
  assert_int_equal(LA_registerGrid("unit", 0, 1, 4, 3, 2), 0);
  assert_int_equal(LA_startBox(1, 1, 0, 2, 2, 1), 0); /* cells 5, 6, 9, 10 */
  assert_int_equal(LA_stopBox(1, 1, 0, 2, 2, 1), 0);
  int id = la_test_shm_of(getpid());
  la_shm_header_t *h = shmat(id, NULL, 0);
  assert_true(h != (void *)-1);
  la_shm_pieces_head_t *ph = (la_shm_pieces_head_t *)pieces_of(h);
  assert_non_null(ph);
  la_shm_piece_t *t = (la_shm_piece_t *)(ph + 1);
  const la_shm_piece_t bad[] = {
      {la_shm_piece_key(23, 0), 4, 1, 1, 0, 100.0}, /* past nx */
      {la_shm_piece_key(0, 0), 1, 4, 1, 0, 100.0},  /* past ny */
      {la_shm_piece_key(0, 3), 1, 1, 1, 0, 100.0},  /* channel 3 */
      {la_shm_piece_key(0, 0), 0, 1, 1, 0, 100.0},  /* no cells */
      {la_shm_piece_key(20, 0), 5, 0, 0, 0, 100.0}, /* range past the end */
      {la_shm_piece_key(1ULL << 40, 0), 1, 1, 1, 0, 100.0},
  };
  size_t nb = sizeof bad / sizeof bad[0], put = 0;
  for (uint64_t p = 0; p < 64 && put < nb; p++)
    if (t[p].key == 0) t[p] = bad[put++];
  assert_true(put == nb);
  shmdt(h);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  const cycle_t *cy = cycle(0);
  for (int e = 0; e < 24; e++) {
    double want = e == 5 || e == 6 || e == 9 || e == 10 ? 6.0 / 4 : 0.0;
    if (cy->values[e] != want)
      fail_msg("cell %d: %.17g, expected %.17g", e, cy->values[e], want);
  }
  assert_int_equal(LA_startRange(0, 1), 0);
  assert_int_equal(LA_stopRange(0, 1), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  cy = cycle(1);
  for (int e = 0; e < 24; e++)
    assert_true(cy->values[e] == (e == 0 ? 1.0 : 0.0));
}

/* A box record whose value the application overwrote with NaN, 1e308 or
 * -inf (the pieced path: one value per box): each such cycle is stored or
 * recorded missing, the agent keeps running, and the next honest box
 * cycle is stored with its own values. */
static void test_hostile_piece_values(void **state) {
  use_counting_probe();
  assert_int_equal(LA_registerGrid("unit", 0, 1, 4, 3, 2), 0);
  const double bad[] = {NAN, 1e308, -INFINITY};
  int id = la_test_shm_of(getpid());
  for (size_t c = 0; c < 3; c++) {
    assert_int_equal(LA_startBox(1, 1, 0, 2, 2, 1), 0);
    assert_int_equal(LA_stopBox(1, 1, 0, 2, 2, 1), 0);
    la_shm_header_t *h = shmat(id, NULL, 0);
    assert_true(h != (void *)-1);
    la_shm_pieces_head_t *ph = (la_shm_pieces_head_t *)pieces_of(h);
    assert_non_null(ph);
    la_shm_piece_t *t = (la_shm_piece_t *)(ph + 1);
    int set = 0;
    for (uint64_t p = 0; p < 64; p++)
      if (t[p].key != 0) {
        t[p].value = bad[c];
        set++;
      }
    assert_int_equal(set, 1);
    shmdt(h);
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(LA_startBox(1, 1, 0, 2, 2, 1), 0); /* cells 5, 6, 9, 10 */
  assert_int_equal(LA_stopBox(1, 1, 0, 2, 2, 1), 0);
  assert_int_equal(LA_dataXfer(), 0);
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT (SELECT count(*) FROM traces WHERE app_id = '%s') + "
           "(SELECT count(*) FROM missing WHERE app_id = '%s')",
           LA_appId(), LA_appId());
  assert_int_equal(la_ta_wait_sql(&agent, sql, 4, WAIT_MS), 0);
  assert_true(la_ta_local_stat(&agent, "cycles_received") >= 4);
  long long stored = la_ta_ntraces(&agent, LA_appId());
  assert_true(stored >= 1);
  const cycle_t *cy = cycle((size_t)stored - 1); /* the honest one, last */
  for (int e = 0; e < 24; e++) {
    double want = e == 5 || e == 6 || e == 9 || e == 10 ? 6.0 / 4 : 0.0;
    if (cy->values[e] != want)
      fail_msg("cell %d: %.17g, expected %.17g", e, cy->values[e], want);
  }
}

static void test_rows_need_a_grid(void **state) {
  register_counting(24);
  assert_int_equal(LA_startRow(0, 0), LA_ESTATE);
  assert_int_equal(LA_startBox(0, 0, 0, 1, 1, 1), LA_ESTATE);
  assert_non_null(strstr(LA_lastError(), "LA_registerGrid"));
}

/* A grid sweep with a row probe around each innermost loop, in LA_PROFILED,
 * with the wall-time metric: every cell of a profiled cycle gets its row's
 * time, the same for the row's cells. */
static double row_sink;
LA_ALWAYS_INLINE void row_sweep(long nx, long ny, long nz, const int probe) {
  for (long k = 0; k < nz; k++)
    for (long j = 0; j < ny; j++) {
      if (probe) LA_startRow(j, k);
      for (long i = 0; i < nx; i++) row_sink += (double)(i * j + k) * 1e-9;
      if (probe) LA_stopRow(j, k);
    }
}

static void test_rows_in_profiled_sweeps(void **state) {
  LA_setPeriod(2);
  assert_int_equal(LA_registerGrid("unit", 0, 1, 16, 4, 2), 0);
  for (int c = 0; c < 4; c++) {
    assert_int_equal(LA_isProfiling(), c % 2 == 0);
    LA_PROFILED(row_sweep(16, 4, 2, LA_PROBING));
    assert_int_equal(LA_dataXfer(), 0);
  }
  /* the inline row probes' errors: the calls' */
  assert_int_equal(LA_isProfiling(), 1);
  assert_int_equal(LA_startRow(4, 0), LA_ERANGE); /* j = ny */
  assert_int_equal(LA_stopRow(0, 2), LA_ERANGE);  /* k = nz */
  assert_int_equal(LA_stopRow(1, 1), LA_ESTATE);  /* no start */
  assert_int_equal(LA_startRow(1, 1), 0);
  assert_int_equal(LA_stopRow(1, 1), 0);
  assert_int_equal(LA_stopRow(1, 1), LA_ESTATE); /* stopped already */
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  for (size_t t = 0; t < 2; t++) {
    const cycle_t *cy = cycle(t);
    assert_int_equal(cy->tag, 2 * t);
    for (long r = 0; r < 8; r++)
      for (long i = 0; i < 16; i++) {
        assert_true(cy->values[r * 16 + i] > 0.0);
        assert_true(cy->values[r * 16 + i] == cy->values[r * 16]);
      }
  }
}

/* The meta data of the buffer that profiled cycle c went into. */
static uint64_t cells_said(uint64_t c) {
  int id = la_test_shm_of(getpid());
  assert_true(id >= 0);
  la_shm_header_t *h = shmat(id, NULL, SHM_RDONLY);
  assert_true(h != (void *)-1);
  uint64_t v = h->buf[c % h->n_buffers].cells;
  shmdt(h);
  return v;
}

/* A grid's cycles tell the agent whether a probe wrote a cell value: row
 * probes only, or rows and boxes (records of the piece table), NONE (the
 * agent then takes the rows and pieces without reading the cells); with a
 * cell probe, WRITTEN; a program compiled against
 * an la.h before the marks (the LA_registerGrid symbol itself), UNKNOWN
 * (the agent reads the cells). The stored values are the same each way. */
static void test_cycles_say_whether_cells_were_written(void **state) {
  for (int old = 0; old < 2; old++) {
    setenv("LA_APP_ID", old ? "unit-cells-old" : "unit-cells", 1);
    int rc = old ? (LA_registerGrid)("unit", 0, 1, 4, 3, 2)
                 : LA_registerGrid("unit", 0, 1, 4, 3, 2);
    unsetenv("LA_APP_ID");
    assert_int_equal(rc, 0);
    assert_int_equal(LA_startRow(1, 0), 0); /* rows only */
    assert_int_equal(LA_stopRow(1, 0), 0);
    assert_int_equal(LA_dataXfer(), 0);
    assert_int_equal(LA_startRow(1, 0), 0); /* a row and a cell */
    assert_int_equal(LA_stopRow(1, 0), 0);
    assert_int_equal(LA_startCell(2, 2, 1), 0);
    assert_int_equal(LA_stopCell(2, 2, 1), 0);
    assert_int_equal(LA_dataXfer(), 0);
    assert_int_equal(LA_startBox(0, 0, 0, 2, 2, 1), 0); /* a box */
    assert_int_equal(LA_stopBox(0, 0, 0, 2, 2, 1), 0);
    assert_int_equal(LA_dataXfer(), 0);
    assert_int_equal(la_ta_wait_traces(&agent, 3 * (old + 1), WAIT_MS), 0);
    if (old) {
      for (int c = 0; c < 3; c++)
        assert_int_equal(cells_said(c), LA_SHM_CELLS_UNKNOWN);
    } else {
      assert_int_equal(cells_said(0), LA_SHM_CELLS_NONE);
      assert_int_equal(cells_said(1), LA_SHM_CELLS_WRITTEN);
      /* the box is a record of the piece table (layout 6), no cell */
      assert_int_equal(cells_said(2), LA_SHM_CELLS_NONE);
    }
    /* what was stored: row (1,0) over its cells 4..7, the cell, the box */
    const char *id = old ? "unit-cells-old" : "unit-cells";
    const cycle_t *r = cycle_of(id, 0), *rc2 = cycle_of(id, 1),
                  *b = cycle_of(id, 2);
    for (int e = 0; e < 24; e++) {
      assert_true((r->values[e] > 0) == (e >= 4 && e < 8));
      assert_true(r->values[e] == r->values[e - e % 4]);
      assert_true((rc2->values[e] > 0) == ((e >= 4 && e < 8) || e == 22));
      assert_true((b->values[e] > 0) == (e == 0 || e == 1 || e == 4 || e == 5));
    }
    assert_int_equal(LA_finalize(), 0);
  }
}

/* Waits a flood may still see: none for a compaction (the agent holds no
 * more buffers than leave the application a free one), but the agent's
 * loop thread must take each notification in time, and on a machine
 * loaded far beyond its cores it is sometimes late (it fsyncs the log
 * every second, and a compaction thread at its low priority can hold the
 * log's lock): a few waits of 40 cycles there, where without a backlog
 * limit the application waits for most cycles of such a flood. */
#define FLOOD_WAITS_AT_MOST(cyc) ((cyc) / 10)

/* How many of app's cycles the store holds as traces (*stored) and as
 * missing because the agent was behind (*behind), once they add up to cyc
 * or after a minute. */
static void stored_or_behind(const char *app, int cyc, long long *stored,
                             long long *behind) {
  *stored = *behind = 0;
  for (long long end = la_td_now_ms() + 60000;
       *stored + *behind < cyc && la_td_now_ms() < end; la_td_nap_ms(50)) {
    *stored = la_ta_app_int(&agent, app,
                            "SELECT count(*) FROM traces WHERE app_id = '%s'");
    *behind = la_ta_app_int(
        &agent, app,
        "SELECT count(*) FROM missing WHERE app_id = '%s' AND reason LIKE "
        "'dropped: the LocalAgent was behind (%%agent.max_backlog = %%)'");
  }
}

/* The first of app's coarse cycles as a reader gets it: every element
 * its block's sum over the block's 250 elements (the smallest divisor of
 * 10^6 leaving at most 4096 blocks), so each block's elements equal; and
 * `lactl show` (text and --json) says it is coarse and why. */
static void expect_coarse_shown(const char *app) {
  enum { NE = 1000000, K = 250 };
  long long tag = la_ta_app_int(
      &agent, app, "SELECT min(cycle_tag) FROM coarse WHERE app_id = '%s'");
  assert_true(tag >= 0);
  double *v = malloc(NE * sizeof *v);
  assert_non_null(v);
  assert_int_equal(la_ta_values(&agent, app, 0, (uint64_t)tag, v, NE), 0);
  for (long e = 0; e < NE; e++)
    if (v[e] != v[e - e % K])
      fail_msg("coarse cycle %lld element %ld: %g, its block's first %g",
               tag, e, v[e], v[e - e % K]);
  free(v);
  char lactl[600], cyc[32], out[8192];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(cyc, sizeof cyc, "%lld", tag);
  const char *argv[] = {lactl, "show", app, cyc, "--db", agent.st.db, NULL};
  assert_int_equal(la_td_run(argv, NULL, WAIT_MS, out, sizeof out), 0);
  if (!strstr(out, "rank 0: coarse: the LocalAgent was behind ("))
    fail_msg("lactl show of a coarse cycle: %s", out);
  const char *json[] = {lactl, "show", app,         cyc,
                        "--db", agent.st.db, "--json", NULL};
  assert_int_equal(la_td_run(json, NULL, WAIT_MS, out, sizeof out), 0);
  if (!strstr(out, "\"coarse\": \"coarse: the LocalAgent was behind ("))
    fail_msg("lactl show --json of a coarse cycle: %s", out);
}

/* A flood: cyc cycles of 10^6 elements filled through 1,000 ranges and a
 * cell probe (a few milliseconds a cycle, faster than the agent compacts
 * them per cell) as app, with
 * the counting probe (every cycle the same values). The application
 * waited on few cycles (none for a compaction), skipped none, and counted
 * the cycles the agent was behind on as the agent did (LA_STAT_BEHIND,
 * before and after LA_finalize). With agent.behind = drop (coarse 0) the
 * store holds each cycle as a trace or as missing because the agent was
 * behind, some of each; with coarse (the default) every cycle as a trace,
 * some of them coarse with the reason (coarse table, cycles_coarse), each
 * with the very total of a full one. With nch channels (> 1; channel c
 * probes every (c + 1)-th range, so their totals differ), every trace,
 * coarse or full, carries each channel's series, each channel with the
 * same total in every cycle. */
static void expect_flood(const char *app, int cyc, int coarse, int nch) {
  enum { NE = 1000000 };
  use_counting_probe();
  for (int ch = 0; nch > 1 && ch < nch; ch++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", ch);
    assert_int_equal(LA_channel(name), ch);
  }
  setenv("LA_APP_ID", app, 1);
  int rc = LA_register("unit", 0, 1, NE);
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  volatile double sink = 0;
  for (int c = 0; c < cyc; c++) {
    for (long r = 0; r < 1000; r++) {
      for (int ch = 0; ch < nch; ch++) {
        if (r % (ch + 1)) continue;
        assert_int_equal(LA_startRangeC(ch, r * 1000, 1000), 0);
        for (long w = 0; w < 2000 + (r + c) % 7 * 100; w++) sink += (double)w;
        assert_int_equal(LA_stopRangeC(ch, r * 1000, 1000), 0);
      }
    }
    /* a cell too: the cycle is taken and compacted per cell (10^6), not
     * one value per range, which the agent keeps up with */
    assert_int_equal(LA_startProbe(NE - 1), 0);
    assert_int_equal(LA_stopProbe(NE - 1), 0);
    assert_int_equal(LA_dataXfer(), 0);
  }
  long long waits = LA_getStat(LA_STAT_WAITS);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 0);
  /* every notification taken and every cycle it was behind on done (on
   * the agent's lane, after the notification): the agent's count is
   * final */
  for (long long end = la_td_now_ms() + 60000;
       (la_ta_local_stat(&agent, "cycles_received") < cyc ||
        la_ta_local_stat(&agent, "jobs_in_flight") != 0) &&
       la_td_now_ms() < end;
       la_td_nap_ms(20)) {
  }
  long long told = LA_getStat(LA_STAT_BEHIND);
  assert_int_equal(told, la_ta_local_stat(&agent, coarse ? "cycles_coarse"
                                                         : "cycles_behind"));
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_getStat(LA_STAT_BEHIND), told);
  long long stored, behind;
  stored_or_behind(app, cyc, &stored, &behind);
  long long marked = la_ta_app_int(
      &agent, app,
      "SELECT count(*) FROM coarse WHERE app_id = '%s' AND reason LIKE "
      "'coarse: the LocalAgent was behind (%%agent.max_backlog = %%)'");
  print_message("%s: %lld stored (%lld coarse), %lld behind, %lld waits\n",
                app, stored, marked, behind, waits);
  if (waits > FLOOD_WAITS_AT_MOST(cyc) || stored + behind != cyc ||
      stored == 0 || (coarse ? behind != 0 || marked == 0 || marked != told
                             : behind == 0 || marked != 0 || behind != told))
    fail_msg("%lld cycles stored (%lld coarse), %lld recorded missing as "
             "behind, of %d; %lld told; %lld waits",
             stored, marked, behind, cyc, told, waits);
  /* the same values every cycle: coarse or full, the same total */
  char sql[400];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM traces t, (SELECT max(stat_sum) AS m FROM "
           "traces WHERE app_id = '%s') WHERE t.app_id = '%s' AND (m <= 0 OR "
           "abs(t.stat_sum - m) > 1e-9 * m)",
           app, app);
  assert_int_equal(la_ta_sql_int(&agent, sql), 0);
  for (int ch = 0; nch > 1 && ch < nch; ch++) {
    /* channel ch in every trace, with one total (the first trace's) */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM channel_traces WHERE app_id = '%s' AND "
             "channel = %d",
             app, ch);
    assert_int_equal(la_ta_sql_int(&agent, sql), stored);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM channel_traces c, (SELECT max(stat_sum) "
             "AS m FROM channel_traces WHERE app_id = '%s' AND channel = %d) "
             "WHERE c.app_id = '%s' AND c.channel = %d AND (m <= 0 OR "
             "abs(c.stat_sum - m) > 1e-9 * m)",
             app, ch, app, ch);
    assert_int_equal(la_ta_sql_int(&agent, sql), 0);
  }
  if (nch > 1) { /* the channels' totals differ: each its own series */
    snprintf(sql, sizeof sql,
             "SELECT count(DISTINCT round(stat_sum)) FROM channel_traces "
             "WHERE app_id = '%s'",
             app);
    assert_int_equal(la_ta_sql_int(&agent, sql), nch);
  }
  if (coarse) expect_coarse_shown(app);
}

/* agent.max_backlog = 1: a rank whose cycles come faster than the agent
 * compacts them does not wait for it: the cycles beyond the backlog are
 * recorded missing with the reason, every other one is stored, and the
 * agent and the application count them. */
static void test_backlog_drops_not_waits(void **state) {
  /* the app's, one held, notifications on their way */
  LA_setBuffers(6);
  expect_flood("unit-backlog", 30, 0, 1);
}

/* Row-probed cycles handed over faster than the agent takes them
 * (agent.max_backlog = 1, one compaction thread): a cycle it drops goes
 * back with its row values zeroed (libla marked it as rows only, so only
 * the rows are zeroed), and every stored cycle holds exactly its own rows'
 * values (the counting probe: row (j,k) reads its first cell + 1), none
 * of a dropped cycle's left in the buffer. */
static void test_dropped_row_cycles_zeroed(void **state) {
  enum { NX = 100, NY = 100, NZ = 10, CYC = 20 };
  use_counting_probe();
  LA_setBuffers(6);
  setenv("LA_COMPACT", "lossless", 1);
  setenv("LA_APP_ID", "unit-rowdrop", 1);
  int rc = LA_registerGrid("unit", 0, 1, NX, NY, NZ);
  unsetenv("LA_COMPACT");
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  for (int c = 0; c < CYC; c++) {
    for (long k = 0; k < NZ; k++)
      for (long j = 0; j < NY; j++) {
        assert_int_equal(LA_startRow(j, k), 0);
        assert_int_equal(LA_stopRow(j, k), 0);
      }
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(LA_finalize(), 0);
  const char *app = "unit-rowdrop";
  long long stored, behind;
  stored_or_behind(app, CYC, &stored, &behind);
  print_message("row cycles: %lld stored, %lld behind\n", stored, behind);
  assert_int_equal(stored + behind, CYC);
  enum { N = NX * NY * NZ };
  double *v = malloc(N * sizeof *v);
  assert_non_null(v);
  for (long long i = 0; i < stored; i++) {
    /* the same rows every cycle, so the history finds the stored cycles
     * after the first within bound of it, and the GlobalAgent demotes
     * those that leave its history.full_cycles window: a reader then
     * gets the representative's values (docs/history.md), read here */
    long long tag = la_ta_tag(&agent, app, 0, (size_t)i);
    assert_true(tag >= 0);
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT coalesce((SELECT ref_cycle FROM history WHERE app_id = "
             "'%s' AND rank = 0 AND cycle_tag = %lld AND in_full = 0), %lld)",
             app, tag, tag);
    long long read = la_ta_sql_int(&agent, sql);
    assert_true(read >= 0);
    assert_int_equal(la_ta_values(&agent, app, 0, (uint64_t)read, v, N), 0);
    for (uint64_t e = 0; e < N; e++) {
      double want = (double)(e - e % NX + 1) / NX;
      if (v[e] != want)
        fail_msg("cycle %lld cell %llu: %g, want %g", tag,
                 (unsigned long long)e, v[e], want);
    }
  }
  free(v);
}

/* The defaults (libla's 4 buffers, agent.max_backlog auto: 1 held, two
 * compaction threads at nice 10, agent.behind coarse): a flood of cycles
 * does not wait for the agent's compaction (0 waits on a machine with a
 * core to spare), and every cycle is stored, those the agent was behind
 * on coarse, marked with the reason and with their exact totals. */
static void test_defaults_never_wait(void **state) {
  expect_flood("unit-nowait", 40, 1, 1);
}

/* The same with two channels: the cycles the agent was behind on are
 * stored coarse with each channel's block sums too, so every cycle, coarse
 * or full, has each channel's exact total. */
static void test_defaults_never_wait_channels(void **state) {
  expect_flood("unit-nowait-ch", 40, 1, 2);
}

static void test_wall_time_metric_in_ns(void **state) {
  assert_int_equal(LA_register("unit", 0, 1, 4), 0);
  assert_string_equal(last_reg().unit, "ns");
  LA_startProbe(2);
  la_test_busy_ns(3000000); /* 3 ms */
  LA_stopProbe(2);
  LA_startProbe(1);
  LA_stopProbe(1);
  const cycle_t *cy = xfer_one();
  /* At least the 3 ms spent; at most a generous bound for a loaded VM. */
  assert_true(cy->values[2] >= 2.9e6);
  assert_true(cy->values[2] < 3e9);
  assert_true(cy->values[1] >= 0.0 && cy->values[1] < 1e7);
  assert_true(cy->values[0] == 0.0);
}

static void test_threads_probe_disjoint_elements(void **state) {
  assert_int_equal(LA_register("unit", 0, 1, 400), 0);
  pthread_t th[4];
  la_test_span_t sp[4];
  for (int t = 0; t < 4; t++) {
    sp[t].first = t * 100;
    sp[t].count = 100;
    sp[t].ns = 2000;
    pthread_create(&th[t], NULL, la_test_probe_span, &sp[t]);
  }
  for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
  const cycle_t *cy = xfer_one();
  for (int e = 0; e < 400; e++) assert_true(cy->values[e] >= 1900.0);
}

static void test_papi_software_event(void **state) {
  setenv("LA_METRIC", "papi:perf::TASK-CLOCK", 1);
  int rc = LA_register("unit", 0, 1, 3);
  if (rc == LA_ENOEVENT || rc == LA_EPAPI) {
    printf("skip: PAPI perf::TASK-CLOCK unavailable here: %s\n",
           LA_lastError());
    skip();
  }
  assert_int_equal(rc, 0);
  assert_string_equal(last_reg().metric, "papi:perf::TASK-CLOCK");
  LA_startProbe(1);
  busy_cpu_ns(2000000);
  LA_stopProbe(1);
  const cycle_t *cy = xfer_one();
  assert_true(cy->values[1] >= 1e6); /* task clock counts ns of CPU time */
  assert_true(cy->values[0] == 0.0);
}

static void hw_counter(const char *metric, const char *event) {
  setenv("LA_METRIC", metric, 1);
  int rc = LA_register("unit", 0, 1, 3);
  if (rc == LA_ENOEVENT) {
    /* The error must name the event; then this machine lacks the counter. */
    assert_non_null(strstr(LA_lastError(), event));
    assert_int_equal(registrations(), 0);
    printf("skip: %s: no hardware counter here (%s)\n", metric, LA_lastError());
    skip();
  }
  assert_int_equal(rc, 0);
  LA_startProbe(0);
  la_test_busy_ns(1000000);
  LA_stopProbe(0);
  LA_dataXfer();
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  assert_true(cycle(0)->values[0] > 1e5);
}

static void test_papi_cycles(void **state) {
  hw_counter("cycles", "PAPI_TOT_CYC");
}

static void test_papi_instructions(void **state) {
  hw_counter("instructions", "PAPI_TOT_INS");
}

static void test_unknown_metric(void **state) {
  setenv("LA_METRIC", "bogus", 1);
  assert_int_equal(LA_register("unit", 0, 1, 3), LA_ECONFIG);
  assert_non_null(strstr(LA_lastError(), "bogus"));
  setenv("LA_METRIC", "papi:NO_SUCH_EVENT_XYZ", 1);
  assert_int_equal(LA_register("unit", 0, 1, 3), LA_ENOEVENT);
  assert_non_null(strstr(LA_lastError(), "NO_SUCH_EVENT_XYZ"));
  assert_int_equal(registrations(), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

static void test_skip_policy(void **state) {
  use_counting_probe();
  la_test_peer_set_hold_ms(peer, -1); /* the agent keeps every buffer */
  LA_setBuffers(2);
  LA_setPolicy(LA_POLICY_SKIP);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  for (int c = 0; c < 5; c++) assert_int_equal(LA_dataXfer(), 0);
  /* cycles 0 and 1 got the two buffers; 2..5 found none */
  assert_int_equal(la_test_peer_wait_cycles(peer, 2, 10000), 0);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 2);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 4);
  assert_int_equal(LA_getStat(LA_STAT_WAITS), 0);
  assert_int_equal(la_test_peer_release_all_wait(peer, 5000), 0);
  LA_dataXfer(); /* cycle 5 not profiled; 6 gets a buffer again */
  assert_true(LA_isProfiling());
  LA_dataXfer();
  assert_int_equal(la_test_peer_wait_cycles(peer, 3, 10000), 0);
  const la_peer_cycle_t *cy = la_test_peer_cycle(peer, 2);
  assert_int_equal(cy->tag, 6);
  assert_int_equal(cy->skipped, 4); /* the skip count travels to the agent */
}

static void test_wait_policy(void **state) {
  use_counting_probe();
  la_test_peer_set_hold_ms(peer, 100); /* a slow agent */
  LA_setBuffers(2);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  for (int c = 0; c < 6; c++) {
    LA_startProbe(0);
    LA_stopProbe(0);
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(la_test_peer_wait_cycles(peer, 6, 10000), 0);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 0); /* nothing lost */
  assert_true(LA_getStat(LA_STAT_WAITS) >= 1);
  assert_true(LA_getStat(LA_STAT_WAIT_NS) > 0);
  for (size_t i = 0; i < 6; i++)
    assert_int_equal(la_test_peer_cycle(peer, i)->tag, i);
}

static void test_wait_policy_times_out(void **state) {
  use_counting_probe();
  la_test_peer_set_hold_ms(peer, -1); /* a stuck agent */
  setenv("LA_WAIT_TIMEOUT_MS", "300", 1);
  LA_setBuffers(2);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  LA_dataXfer();
  assert_int_equal(LA_dataXfer(), 0); /* waits 300 ms, then skips */
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 1);
  assert_int_equal(LA_getStat(LA_STAT_WAITS), 1);
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 1);
}

/* The helper of test_wait_takes_first_back: once the application blocks
 * on a semaphore of sem_id (GETNCNT) with the agent holding its 3 cycles,
 * the agent gives back only the last cycle's buffer. */
typedef struct {
  int sem_id, rc;
} first_back_t;

static void *give_back_last(void *arg) {
  first_back_t *f = arg;
  f->rc = la_test_peer_wait_cycles(peer, 3, 20000);
  for (long long end = la_td_now_ms() + 20000; f->rc == 0;
       la_td_nap_ms(1)) {
    int blocked = 0;
    for (int b = 0; b < 3; b++) blocked += semctl(f->sem_id, b, GETNCNT) > 0;
    if (blocked) break;
    if (la_td_now_ms() > end) f->rc = -1;
  }
  if (f->rc == 0) f->rc = la_test_peer_release_last_wait(peer, 20000);
  return NULL;
}

/* An agent that gives back a later cycle's buffer first (it was behind
 * on that cycle: agent.max_backlog) while an earlier one stays queued for
 * compaction: the waiting application takes that buffer, not waiting for
 * the one in turn (which this agent never gives back: the cycle would be
 * skipped after LA_WAIT_TIMEOUT_MS). */
static void test_wait_takes_first_back(void **state) {
  use_counting_probe();
  la_test_peer_set_hold_ms(peer, -1); /* held until told */
  setenv("LA_WAIT_TIMEOUT_MS", "20000", 1);
  LA_setBuffers(3);
  int before[256], nb = la_test_sem_ids(before, 256);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  unsetenv("LA_WAIT_TIMEOUT_MS");
  first_back_t f = {.sem_id = new_sem_id(before, nb), .rc = 0};
  assert_true(f.sem_id >= 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, give_back_last, &f), 0);
  for (int c = 0; c < 3; c++) assert_int_equal(LA_dataXfer(), 0);
  pthread_join(th, NULL);
  assert_int_equal(f.rc, 0);
  assert_int_equal(LA_getStat(LA_STAT_WAITS), 1);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 0);
  assert_int_equal(la_test_peer_release_all_wait(peer, 5000), 0);
}

static void test_agent_dies_mid_run(void **state) {
  use_counting_probe();
  int before[256], nb = la_test_sem_ids(before, 256);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  int sem_id = new_sem_id(before, nb);
  assert_true(sem_exists(sem_id));
  LA_dataXfer();
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  kill_agent(); /* libla alone must clean up */
  int rc = 0;
  for (int c = 0; c < 3 && rc == 0; c++) rc = LA_dataXfer();
  assert_int_equal(rc, LA_EAGENTLOST);
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 0);
  /* The program goes on: every call is a no-op now. */
  assert_int_equal(LA_startProbe(1), 0);
  assert_int_equal(LA_stopProbe(1), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_false(sem_exists(sem_id));
  assert_int_equal(la_test_ipc_count(getpid()), 0);
  assert_int_equal(LA_finalize(), 0);
}

static void test_cycles_counted_when_agent_lost(void **state) {
  register_counting(8);
  LA_dataXfer();
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  kill_agent();
  int calls = 1, rc = 0;
  while (rc == 0 && calls < 50) {
    rc = LA_dataXfer();
    calls++;
  }
  assert_int_equal(rc, LA_EAGENTLOST);
  /* profiled: the cycles whose values went to the agent, not the one
   * whose hand-over found it gone */
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), calls - 1);
  for (int i = 0; i < 3; i++, calls++) LA_dataXfer();
  /* the call that found the agent gone ended a cycle too */
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), calls);
}

/* One profiled cycle of the counting probe over elements 0..n-1, ended. */
static int counted_cycle(long n) {
  for (long e = 0; e < n; e++) {
    LA_startProbe(e);
    LA_stopProbe(e);
  }
  return LA_dataXfer();
}

/* The LocalAgent is killed (SIGKILL) and started again on the same port
 * while the application keeps calling LA_dataXfer: libla removes the lost
 * registration's segment and semaphore set at once, counts the cycles
 * while the agent is away as skipped, registers again (same id and rank,
 * a new segment and semaphore set) and profiling resumes: the later cycles
 * are stored at the GlobalAgent under the tags that kept counting, and the
 * gap is recorded missing there. Before, the rank ran unprofiled for the
 * rest of the run. */
static void test_registers_again_after_agent_restart(void **state) {
  register_counting(8);
  char app[LA_MAX_APP_ID + 1];
  snprintf(app, sizeof app, "%s", LA_appId());
  for (int c = 0; c < 3; c++) assert_int_equal(counted_cycle(8), 0);
  assert_int_equal(la_ta_wait_traces(&agent, 3, WAIT_MS), 0);
  int old_shm = la_test_shm_of(getpid()), old_sem = la_test_sem_of(getpid());
  assert_true(old_shm >= 0 && old_sem >= 0);
  uint16_t port = la_td_port(agent.st.la);
  kill_agent();
  /* held until the agent starts there again: a bind to port 0 meanwhile
   * (another test's daemon) could be given it */
  int hold = la_td_hold_port(port);
  /* the next call finds it gone; the old objects go with it */
  assert_int_equal(counted_cycle(8), LA_EAGENTLOST);
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
  assert_false(sem_exists(old_sem));
  for (int c = 0; c < 5; c++) assert_int_equal(counted_cycle(8), 0);
  /* the registration is still in force: what it fixed stays fixed */
  assert_int_equal(LA_setBuffers(4), LA_ESTATE);
  long skipped_away = LA_getStat(LA_STAT_SKIPPED);
  assert_int_equal(skipped_away, 6); /* the cycle that found it gone, 5 */
  char listen[64];
  snprintf(listen, sizeof listen, "--agent.listen=127.0.0.1:%u", port);
  const char *const again[] = {listen, NULL};
  la_td_release_port(&hold);
  assert_int_equal(la_ts_start_local(&agent.st, again), 0);
  assert_int_equal(la_td_port(agent.st.la), port);
  /* within the backoff (1, 2, 4 s after the loss) it registers again */
  long long t0 = la_td_now_ms();
  while (LA_getStat(LA_STAT_REGISTERED) == 0 &&
         la_td_now_ms() - t0 < WAIT_MS) {
    assert_int_equal(counted_cycle(8), 0);
    la_td_nap_ms(20);
  }
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 1);
  assert_int_equal(LA_getStat(LA_STAT_REREGISTERED), 1);
  long gap = LA_getStat(LA_STAT_SKIPPED);
  assert_true(gap > skipped_away);
  long profiled = LA_getStat(LA_STAT_PROFILED);
  /* a new segment and semaphore set; the old ones stay gone */
  assert_int_equal(la_test_ipc_count(getpid()), 1);
  assert_true(la_test_sem_of(getpid()) >= 0);
  assert_false(sem_exists(old_sem));
  for (int c = 0; c < 3; c++) assert_int_equal(counted_cycle(8), 0);
  long cycles = LA_getStat(LA_STAT_CYCLES);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), profiled + 3);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED) + gap, cycles);
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(la_test_ipc_wait_count(getpid(), 0, WAIT_MS), 0);
  /* stored: 3 before, the cycles after; each of the gap's cycles (the
   * newest 64 of them) recorded missing */
  long long after = LA_getStat(LA_STAT_PROFILED) - 3;
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT COUNT(*) FROM traces WHERE app_id = '%s' AND rank = 0",
           app);
  assert_int_equal(la_ta_wait_sql(&agent, sql, 3 + after, WAIT_MS), 0);
  long long newest = la_ta_tag(&agent, app, 0, (size_t)(2 + after));
  assert_int_equal(newest, cycles - 1);
  double v[8];
  assert_int_equal(la_ta_values(&agent, app, 0, (uint64_t)newest, v, 8), 0);
  for (int e = 0; e < 8; e++) assert_true(v[e] == (double)(e + 1));
  long long gap_recorded = gap < 64 ? gap : 64;
  snprintf(sql, sizeof sql,
           "SELECT COUNT(*) FROM missing WHERE app_id = '%s' AND rank = 0 "
           "AND cycle_tag >= 3 AND reason LIKE 'skipped by the application%%'",
           app);
  assert_int_equal(la_ta_wait_sql(&agent, sql, gap_recorded, WAIT_MS), 0);
  /* the GlobalAgent completes the later cycles' Trace-Sets */
  snprintf(sql, sizeof sql,
           "SELECT COUNT(*) FROM trace_sets WHERE app_id = '%s' AND "
           "cycle_tag = %lld AND complete = 1",
           app, newest);
  assert_int_equal(la_ta_wait_sql(&agent, sql, 1, WAIT_MS), 0);
  /* the registration again undid the end the restarted agent gave the
   * rank, so the rank's row ends as the program did: finalized */
  snprintf(sql, sizeof sql,
           "SELECT COUNT(*) FROM ranks WHERE app_id = '%s' AND rank = 0 "
           "AND ended = 1 AND end_reason = 'finalize'",
           app);
  assert_int_equal(la_ta_wait_sql(&agent, sql, 1, WAIT_MS), 0);
}

/* A LocalAgent that never comes back costs the application nothing it
 * could measure: LA_dataXfer in the lost state reads the clock, and a try
 * to register again (at most one a second, backing off) meets a refused
 * connect at once. */
static void test_agent_away_costs_nothing(void **state) {
  register_counting(8);
  assert_int_equal(counted_cycle(8), 0);
  kill_agent();
  assert_int_equal(counted_cycle(8), LA_EAGENTLOST);
  long long t0 = la_td_now_ms();
  long calls = 0, slow = 0;
  uint64_t worst = 0;
  while (la_td_now_ms() - t0 < 3500) { /* tries 1 s and 3 s after */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    assert_int_equal(LA_dataXfer(), 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u +
                  (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
    if (ns > worst) worst = ns;
    if (ns > 100000) slow++;
    calls++;
  }
  long long elapsed_ns = (la_td_now_ms() - t0) * 1000000;
  print_message("agent away: %ld LA_dataXfer calls, %.1f ns each, worst "
                "%.1f us, %ld over 100 us\n", calls,
                (double)elapsed_ns / (double)calls, worst / 1e3, slow);
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 0);
  assert_int_equal(LA_getStat(LA_STAT_REREGISTERED), 0);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), calls + 1);
  /* one time check: per cycle, a clock read (tens of ns; 2 us leaves
   * room for a busy node); no call waits anywhere near a deadline
   * (slow calls are preemption on a busy node, and the tries) */
  assert_true(elapsed_ns / calls < 2000);
  assert_true(worst < 1000000000);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

static void test_wait_notices_dead_agent(void **state) {
  use_counting_probe();
  la_test_peer_set_hold_ms(peer, -1);
  la_test_peer_set_cleanup(peer, 0);
  LA_setBuffers(2);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  LA_dataXfer();
  la_test_peer_kill(peer);
  /* waiting for buffer 0 that the dead agent holds must end */
  assert_int_equal(LA_dataXfer(), LA_EAGENTLOST);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

/* The agent closes the connection while the application runs: the cycle
 * that ends next cannot be handed over, so it is not profiled but skipped,
 * and LA_dataXfer says the agent is lost. Before, LA_STAT_PROFILED counted
 * it (2 profiled cycles, one of which never reached an agent). */
static void test_failed_data_ready_not_profiled(void **state) {
  use_counting_probe();
  la_test_peer_set_cleanup(peer, 0);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  LA_startProbe(1);
  LA_stopProbe(1);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_test_peer_wait_cycles(peer, 1, WAIT_MS), 0);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 1);
  la_test_peer_kill(peer); /* closes the connection */
  LA_startProbe(2);
  LA_stopProbe(2);
  assert_int_equal(LA_dataXfer(), LA_EAGENTLOST);
  assert_non_null(strstr(LA_lastError(), "closed the connection"));
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), 2);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 1);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 1);
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 1);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 1);
}

/* The same at LA_finalize: an open cycle holding measurements that cannot
 * be handed over counts as skipped, and LA_finalize says why. */
static void test_failed_last_cycle_not_profiled(void **state) {
  use_counting_probe();
  la_test_peer_set_cleanup(peer, 0);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_test_peer_wait_cycles(peer, 1, WAIT_MS), 0);
  la_test_peer_kill(peer);
  LA_startProbe(3);
  LA_stopProbe(3);
  assert_int_equal(LA_finalize(), LA_EAGENTLOST);
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), 2);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 1);
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 1);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

static void test_refused_registration(void **state) {
  /* a real refusal: the LocalAgent takes one application at a time */
  const char *one[] = {"--agent.max_apps=1", NULL};
  assert_int_equal(la_ts_stop_local(&agent.st), 0);
  assert_int_equal(la_ts_start_local(&agent.st, one), 0);
  setenv("LA_AGENT", la_td_addr(agent.st.la), 1);
  int go[2], done[2];
  assert_int_equal(pipe(go), 0);
  assert_int_equal(pipe(done), 0);
  pid_t pid = fork();
  if (pid == 0) { /* the application that is there first */
    char b;
    if (LA_register("first", 0, 1, 8) != 0) _exit(3);
    if (write(go[1], "r", 1) != 1 || read(done[0], &b, 1) != 1) _exit(4);
    LA_finalize();
    _exit(0);
  }
  /* the child's ends closed here: a child that fails gives end-of-file,
   * not a wait for ever */
  close(go[1]);
  close(done[0]);
  char b;
  if (read(go[0], &b, 1) != 1) {
    int st = 0;
    waitpid(pid, &st, 0);
    fail_msg("the first application did not register (exit %d)",
             WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  assert_int_equal(LA_register("unit", 0, 1, 8), LA_EREFUSED);
  assert_non_null(strstr(LA_lastError(), "too many applications"));
  assert_int_equal(LA_startProbe(0), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
  assert_int_equal(write(done[1], "d", 1), 1);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(go[0]);
  close(done[1]);
}

static void test_no_agent(void **state) {
  setenv("LA_AGENT", "127.0.0.1:1", 1); /* nothing listens on port 1 */
  assert_int_equal(LA_register("unit", 0, 1, 1000), LA_ENOAGENT);
  assert_non_null(strstr(LA_lastError(), "127.0.0.1:1"));
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 0);
  for (int c = 0; c < 3; c++) {
    assert_int_equal(LA_startProbe(5), 0);
    assert_int_equal(LA_stopProbe(5), 0);
    assert_int_equal(LA_startCell(0, 0, 0), 0);
    assert_int_equal(LA_startRange(0, 10), 0);
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

static void test_disable_env(void **state) {
  setenv("LA_DISABLE", "1", 1);
  assert_int_equal(LA_register("unit", 0, 1, 10), LA_EDISABLED);
  assert_int_equal(registrations(), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

static void test_env_overrides_program(void **state) {
  use_counting_probe();
  LA_setPeriod(2);
  setenv("LA_PERIOD", "5", 1);
  setenv("LA_APP_ID", "job-42", 1);
  setenv("LA_COMPACT", "polyline:cv=0.05", 1);
  assert_int_equal(LA_register("unit", 0, 1, 10), 0);
  LA_setPeriod(7); /* the environment wins */
  reg_t r = last_reg();
  assert_int_equal(r.period, 5);
  assert_string_equal(r.app_id, "job-42");
  assert_true(r.compact_mode >= 0); /* parameters were sent */
  assert_int_equal(r.compact_mode, 1);
  assert_true(r.compact_cv == 0.05);
  for (int c = 0; c < 6; c++) LA_dataXfer();
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  assert_int_equal(cycle(1)->tag, 5);
}

static void test_bad_environment(void **state) {
  /* each bad setting refused, with an error naming the variable and the
   * value (README: "naming the variable") */
  static const char *const bad[][3] = {
      {"LA_PERIOD", "abc", "LA_PERIOD=abc"},
      {"LA_POLICY", "sometimes", "LA_POLICY=sometimes"},
      {"LA_COMPACT", "zigzag", "LA_COMPACT=zigzag: "},
      {"LA_METRIC", "tiem", "LA_METRIC=tiem: no such metric"},
      {"LA_AGENT", "127.0.0.1", "LA_AGENT=127.0.0.1: the LocalAgent's "
                                "address is not host:port"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv(bad[i][0], bad[i][1], 1);
    assert_int_equal(LA_register("unit", 0, 1, 10), LA_ECONFIG);
    assert_non_null(strstr(LA_lastError(), bad[i][2]));
    unsetenv(bad[i][0]);
  }
  /* LA_DUMP_RAW into a directory that is not there: refused at once,
   * not found out after the run by the files missing */
  setenv("LA_DUMP_RAW", "/nonexistent/la-dump", 1);
  assert_int_equal(LA_register("unit", 0, 1, 10), LA_ECONFIG);
  assert_non_null(
      strstr(LA_lastError(), "LA_DUMP_RAW=/nonexistent/la-dump: No such"));
  unsetenv("LA_DUMP_RAW");
  /* the program's own bad choice is named by its call */
  assert_int_equal(LA_setMetric("tiem"), 0);
  assert_int_equal(LA_register("unit", 0, 1, 10), LA_ECONFIG);
  assert_non_null(strstr(LA_lastError(), "LA_setMetric(\"tiem\")"));
  assert_int_equal(LA_setMetric("time"), 0);
  setenv("LA_AGENT", "nowhere", 1);
  assert_int_equal(LA_register("unit", 0, 1, 10), LA_ECONFIG);
  assert_non_null(strstr(LA_lastError(), "LA_AGENT=nowhere"));
  /* a host name that does not resolve: no agent, said so, not "invalid
   * argument: no LocalAgent at" */
  setenv("LA_AGENT", "no-such-host.invalid:7461", 1);
  assert_int_equal(LA_register("unit", 0, 1, 10), LA_ENOAGENT);
  assert_non_null(strstr(LA_lastError(), "host 'no-such-host.invalid'"));
  assert_non_null(strstr(LA_lastError(), "is not known here"));
  assert_int_equal(registrations(), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

static void test_bad_arguments(void **state) {
  assert_int_equal(LA_register("unit", 0, 1, 0), LA_EINVAL);
  assert_int_equal(LA_register("unit", 0, 1, -5), LA_EINVAL);
  assert_int_equal(LA_register("", 0, 1, 5), LA_EINVAL);
  assert_int_equal(LA_register("has space", 0, 1, 5), LA_EINVAL);
  assert_int_equal(LA_register("unit", 3, 2, 5), LA_EINVAL);
  assert_int_equal(LA_registerGrid("unit", 0, 1, 0, 3, 3), LA_EINVAL);
  assert_int_equal(LA_setPeriod(0), LA_EINVAL);
  assert_int_equal(LA_setBuffers(1), LA_EINVAL);
  assert_int_equal(LA_setBuffers(17), LA_EINVAL);
  assert_int_equal(LA_setPolicy(9), LA_EINVAL);
  assert_int_equal(LA_getStat(99), LA_EINVAL);
  assert_string_equal(LA_strerror(LA_ENOAGENT), "no LA agent reachable");
  assert_string_equal(LA_strerror(12345), "unknown LA error code");
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

static void test_register_twice(void **state) {
  assert_int_equal(LA_register("unit", 0, 1, 5), 0);
  char id[LA_MAX_APP_ID + 1];
  snprintf(id, sizeof id, "%s", LA_appId());
  assert_int_equal(LA_register("unit", 0, 1, 5), LA_ESTATE);
  /* the message says which registration holds and how to end it */
  assert_non_null(strstr(LA_lastError(), "registered already"));
  assert_non_null(strstr(LA_lastError(), id));
  assert_non_null(strstr(LA_lastError(), "LA_finalize ends"));
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_register("unit", 0, 1, 5), 0); /* again after finalize */
}

static void test_finalize_removes_ipc(void **state) {
  int before[256], nb = la_test_sem_ids(before, 256);
  assert_int_equal(LA_register("unit", 0, 1, 1000), 0);
  int sem_id = new_sem_id(before, nb);
  assert_true(sem_exists(sem_id));
  LA_dataXfer();
  assert_int_equal(LA_finalize(), 0);
  assert_false(sem_exists(sem_id)); /* libla removed it itself */
  /* the agent detached when the connection closed: segment gone */
  assert_int_equal(la_test_ipc_wait_count(getpid(), 0, 5000), 0);
  /* the agent saw a finalize, not a lost connection */
  assert_int_equal(la_td_wait_log(agent.st.la, "ended (finalize)", WAIT_MS), 0);
}

static void test_launcher_environment(void **state) {
  setenv("PMI_RANK", "2", 1);
  setenv("PMI_SIZE", "4", 1);
  assert_int_equal(LA_register("unit", -1, -1, 5), 0);
  reg_t r = last_reg();
  assert_int_equal(r.rank, 2);
  assert_int_equal(r.nprocs, 4);
  /* Under Hydra the id is derived from the launcher proxy (our parent):
   * the same for every rank of the node. */
  char expect[64];
  snprintf(expect, sizeof expect, "unit.h%d-", (int)getppid());
  assert_memory_equal(r.app_id, expect, strlen(expect));
  /* no random part: each rank derives the id on its own (no MPI here), and
   * the node's ranks must find the same one */
  const char *rest = r.app_id + strlen(expect);
  assert_int_equal(strspn(rest, "0123456789"), strlen(rest));
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
}

/* Whether id ends in a random part as libla draws it: ".<8 base32>". */
static int has_random_part(const char *id) {
  const char *dot = strrchr(id, '.');
  return dot && strlen(dot + 1) == 8 &&
         strspn(dot + 1, "abcdefghijklmnopqrstuvwxyz234567") == 8;
}

/* Registers "unit" as rank of nprocs and returns its id (static). */
static const char *registered_id(int rank, int nprocs) {
  static char id[LA_MAX_APP_ID + 1];
  int rc = LA_register("unit", rank, nprocs, 5);
  if (rc != 0) fail_msg("LA_register: %s", LA_lastError());
  snprintf(id, sizeof id, "%s", LA_appId());
  assert_int_equal(LA_finalize(), 0);
  return id;
}

/* A derived id gains a random part where one process decides it alone (no
 * launcher; a job of one process), so no other user can claim it first;
 * the same process keeps it; another process draws its own;
 * LA_APP_ID_RANDOM=0 leaves it out; a bad value is refused by name;
 * LA_APP_ID is taken as given; ranks that derive their ids each on their
 * own (a Slurm job of two tasks without MPI) get none. */
static void test_app_id_random_part(void **state) {
  char id[LA_MAX_APP_ID + 1], want[64];
  snprintf(id, sizeof id, "%s", registered_id(0, 1));
  snprintf(want, sizeof want, "unit.p%d-", (int)getpid());
  assert_memory_equal(id, want, strlen(want));
  assert_true(has_random_part(id));
  assert_string_equal(registered_id(0, 1), id); /* kept by the process */
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    const char *c = registered_id(0, 1);
    _exit(write(p[1], c, strlen(c) + 1) > 0 ? 0 : 1);
  }
  close(p[1]);
  char child[LA_MAX_APP_ID + 1] = "";
  assert_true(read(p[0], child, sizeof child - 1) > 0);
  close(p[0]);
  int status = -1;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  print_message("parent %s, child %s\n", id, child);
  assert_true(has_random_part(child));
  assert_string_not_equal(strrchr(child, '.'), strrchr(id, '.'));

  setenv("LA_APP_ID_RANDOM", "0", 1);
  const char *plain = registered_id(0, 1);
  assert_false(has_random_part(plain));
  assert_memory_equal(plain, id, strlen(plain));
  assert_int_equal(strlen(plain) + 9, strlen(id));
  setenv("LA_APP_ID_RANDOM", "maybe", 1);
  assert_int_equal(LA_register("unit", 0, 1, 5), LA_ECONFIG);
  assert_non_null(strstr(LA_lastError(), "LA_APP_ID_RANDOM=maybe"));
  unsetenv("LA_APP_ID_RANDOM");

  setenv("LA_APP_ID", "given-7", 1);
  assert_string_equal(registered_id(0, 1), "given-7");
  unsetenv("LA_APP_ID");

  /* Slurm without MPI: one task adds it, two tasks cannot agree on one */
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  const char *one = registered_id(0, 1);
  assert_memory_equal(one, "unit.slurm4242.3.", 17);
  assert_true(has_random_part(one));
  assert_string_equal(registered_id(1, 2), "unit.slurm4242.3");
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_STEP_ID");
}

/* The hand-off between two real processes: the application runs in a child
 * process; the agent stand-in in this one. */
static void test_two_processes(void **state) {
  pid_t pid = fork();
  if (pid == 0) {
    LA_setProbeStartFunc(probe_zero, NULL);
    LA_setProbeStopFunc(probe_e1, NULL);
    LA_setMetric("custom");
    LA_setBuffers(2);
    if (LA_register("child", 0, 1, 50000) != 0) _exit(3);
    for (int c = 0; c < 20; c++) {
      for (long e = c; e < 50000; e += 1000) {
        LA_startProbe(e);
        LA_stopProbe(e);
      }
      if (LA_dataXfer() != 0) _exit(4);
    }
    LA_finalize();
    _exit(LA_getStat(LA_STAT_SKIPPED) == 0 ? 0 : 5);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(la_ta_wait_traces(&agent, 20, WAIT_MS), 0);
  char child_app[160];
  assert_int_equal(la_ta_sql_text(&agent, "SELECT app_id FROM apps", child_app,
                                  sizeof child_app),
                   0);
  for (size_t c = 0; c < 20; c++) {
    const cycle_t *cy = cycle_of(child_app, c);
    assert_int_equal(cy->tag, c);
    double sum = 0;
    for (long e = 0; e < 50000; e++) sum += cy->values[e];
    double expect = 0;
    for (long e = (long)c; e < 50000; e += 1000) expect += (double)(e + 1);
    assert_true(sum == expect);
  }
  assert_int_equal(la_test_ipc_wait_count(pid, 0, WAIT_MS), 0);
}

static void test_application_killed(void **state) {
  /* kill -9 mid-cycle: the agent side removes what the process left. */
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    if (LA_register("victim", 0, 1, 1000) != 0) _exit(3);
    LA_dataXfer();
    LA_startProbe(3);
    if (write(pfd[1], "r", 1) != 1) _exit(4);
    for (;;) pause();
  }
  close(pfd[1]);
  char b;
  assert_int_equal(read(pfd[0], &b, 1), 1);
  close(pfd[0]);
  assert_true(la_test_ipc_count(pid) > 0);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  /* its segment and semaphore set are gone */
  assert_int_equal(la_test_ipc_wait_count(pid, 0, WAIT_MS), 0);
}

/* A fresh directory for LA_DUMP_RAW in dir (256 bytes), set in the
 * environment. */
static void dump_dir(char *dir) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, 256, "%.200s/la_dump_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(dir));
  setenv("LA_DUMP_RAW", dir, 1);
}

/* Reads up to max doubles of dir/stem.f64 into v; returns how many. */
static size_t dump_read(const char *dir, const char *stem, double *v,
                        size_t max) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.f64", dir, stem);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  size_t got = fread(v, sizeof(double), max, f);
  fclose(f);
  return got;
}

/* Removes the three files of stem (app.rRANK.cTAG) from dir. */
static void dump_remove(const char *dir, const char *stem) {
  static const char *const ext[] = {"f64", "flags", "fid"};
  char path[512];
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s.%s", dir, stem, ext[i]);
    assert_int_equal(unlink(path), 0);
  }
}

static void test_dump_raw(void **state) {
  char dir[256];
  dump_dir(dir);
  setenv("LA_APP_ID", "dumpjob", 1);
  register_counting(6);
  LA_startProbe(4);
  LA_stopProbe(4);
  LA_dataXferTagged(77);
  double v[7];
  assert_int_equal(dump_read(dir, "dumpjob.r0.c77", v, 7), 6);
  assert_true(v[4] == 5.0 && v[0] == 0.0);
  char path[512];
  /* beside the values: the flags and the .fid line, which names the scale
   * (the quantum for lactl compact --quantum) */
  char line[256] = "";
  snprintf(path, sizeof path, "%s/dumpjob.r0.c77.fid", dir);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof line, f));
  fclose(f);
  assert_non_null(strstr(line, " scale=1\n"));
  dump_remove(dir, "dumpjob.r0.c77");
  assert_int_equal(rmdir(dir), 0);
}

/* LA_DUMP_RAW's directory removed mid-run, then a file in its place: the
 * cycles go on, and stderr says so once (also without LA_VERBOSE), naming
 * the directory and the first cycle not dumped, not every cycle nor
 * never. */
static void test_dump_raw_gone(void **state) {
  char dir[256], err[300], text[4096] = "";
  dump_dir(dir);
  setenv("LA_APP_ID", "dumpgone", 1);
  snprintf(err, sizeof err, "%s.stderr", dir);
  fflush(stderr);
  int saved = dup(2);
  int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  assert_int_equal(dup2(fd, 2), 2);
  close(fd);
  register_counting(6);
  for (int tag = 1; tag <= 8; tag++) {
    if (tag == 2) { /* gone */
      dump_remove(dir, "dumpgone.r0.c1");
      assert_int_equal(rmdir(dir), 0);
    }
    if (tag == 5) { /* a file in its place */
      FILE *f = fopen(dir, "w");
      assert_non_null(f);
      fclose(f);
    }
    LA_startProbe(4);
    LA_stopProbe(4);
    assert_int_equal(LA_dataXferTagged(tag), 0);
  }
  fflush(stderr);
  assert_int_equal(dup2(saved, 2), 2);
  close(saved);
  FILE *f = fopen(err, "r");
  assert_non_null(f);
  size_t got = fread(text, 1, sizeof text - 1, f);
  text[got] = '\0';
  fclose(f);
  int n = 0;
  for (const char *p = text; (p = strstr(p, "LA_DUMP_RAW=")) != NULL; p++) n++;
  assert_int_equal(n, 1);
  assert_non_null(strstr(text, dir));
  assert_non_null(strstr(text, "cycle 2 not dumped"));
  assert_int_equal(unlink(err), 0);
  assert_int_equal(unlink(dir), 0);
}

/* What the store holds of app's i-th cycle (rank 0): its measured
 * values' encoding, or with robust its robust weights'. */
static la_trace_totals_t stored_of(const char *app, size_t i, int robust) {
  la_trace_totals_t tot;
  memset(&tot, 0, sizeof tot);
  long long tag = la_ta_tag(&agent, app, 0, i);
  assert_true(tag >= 0);
  assert_int_equal(
      la_ta_totals(&agent, app, 0, (uint64_t)tag, robust, &tot), 0);
  return tot;
}

/* LA_DUMP_RAW of cycles of piece records and row values, with a cell
 * value (the agent spreads the pieces over the cells it reads) and without
 * (libla says no cell was written: the agent spreads them without reading
 * the cells), and of pieces only (stored one value per piece) (layout 6):
 * the files hold what the agent stored, bit for bit. */
static void test_dump_raw_pieces(void **state) {
  char dir[256];
  dump_dir(dir);
  setenv("LA_APP_ID", "dumppieces", 1);
  use_counting_probe();
  int rc = LA_registerGrid("unit", 0, 1, 4, 3, 2);
  unsetenv("LA_DUMP_RAW");
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  for (int c = 0; c < 3; c++) {
    assert_int_equal(LA_startBox(1, 1, 0, 3, 2, 2), 0); /* 12 cells */
    assert_int_equal(LA_stopBox(1, 1, 0, 3, 2, 2), 0);
    if (c == 2) { /* pieces only, none overlapping: stored per piece */
      assert_int_equal(LA_startRange(0, 3), 0);
      assert_int_equal(LA_stopRange(0, 3), 0);
      assert_int_equal(LA_dataXferTagged(5 + (uint64_t)c), 0);
      continue;
    }
    assert_int_equal(LA_startRange(3, 7), 0);
    assert_int_equal(LA_stopRange(3, 7), 0);
    assert_int_equal(LA_startRow(1, 1), 0);
    assert_int_equal(LA_stopRow(1, 1), 0);
    if (c == 0) {
      assert_int_equal(LA_startProbe(6), 0);
      assert_int_equal(LA_stopProbe(6), 0);
    }
    assert_int_equal(LA_dataXferTagged(5 + (uint64_t)c), 0);
  }
  assert_int_equal(la_ta_wait_traces(&agent, 3, WAIT_MS), 0);
  for (int c = 0; c < 3; c++) {
    char stem[64];
    snprintf(stem, sizeof stem, "dumppieces.r0.c%d", 5 + c);
    double v[25];
    assert_int_equal(dump_read(dir, stem, v, 25), 24);
    const cycle_t *cy = cycle_of("dumppieces", (size_t)c);
    assert_int_equal(cy->n, 24);
    for (int e = 0; e < 24; e++) {
      int box = e % 4 >= 1 && (e / 4) % 3 >= 1;
      int zero = c < 2 ? e < 3 || (e >= 12 && e < 16) || e == 20
                       : e >= 3 && !box;
      if (v[e] != cy->values[e] || (v[e] == 0) != zero)
        fail_msg("cycle %d cell %d: dumped %.17g, stored %.17g", c, e, v[e],
                 cy->values[e]);
    }
    if (c < 2) assert_true(c == 0 ? v[6] > 7.0 : v[6] < 7.0); /* cell's 7 */
    assert_int_equal(stored_of("dumppieces", (size_t)c, 0).pieced, c == 2);
    dump_remove(dir, stem);
  }
  assert_int_equal(rmdir(dir), 0);
  assert_int_equal(LA_finalize(), 0);
}

/* Asserts cycle i of app holds want[0..24) per cell, bit for bit. */
static void expect_cells(const char *app, size_t i, const double *want) {
  const cycle_t *cy = cycle_of(app, i);
  assert_int_equal(cy->n, 24);
  for (int e = 0; e < 24; e++)
    if (cy->values[e] != want[e])
      fail_msg("%s cycle %zu cell %d: %.17g, expected %.17g", app, i, e,
               cy->values[e], want[e]);
}

/* The weights of a cycle stored one value per piece: the LocalAgent
 * writes the pieces into the weights slot where libla says it spreads
 * them (LA_SHM_WEIGHTS_F_PIECES), and LA_weights gives each cell its
 * piece's value over its cells; with the flag cleared (a libla before
 * it) the agent writes the cells, and LA_weights gives the same. */
static void test_weights_of_pieces_either_way(void **state) {
  setenv("LA_APP_ID", "unit-wpieces", 1);
  setenv("LA_INTERFERENCE", "off", 1);
  int rc = LA_registerGrid("unit", 0, 1, 8, 8, 1);
  unsetenv("LA_APP_ID");
  unsetenv("LA_INTERFERENCE");
  assert_int_equal(rc, 0);
  int id = la_test_shm_of(getpid());
  assert_true(id >= 0);
  la_shm_header_t *h = shmat(id, NULL, 0);
  assert_true(h != (void *)-1);
  la_shm_weights_hdr_t *a = la_shm_weights_area_r(h, 64, h->n_buffers, 1, 8);
  assert_true(a->flags & LA_SHM_WEIGHTS_F_PIECES);
  uint64_t gen = 0;
  for (int old = 0; old < 2; old++) {
    if (old) a->flags &= ~LA_SHM_WEIGHTS_F_PIECES;
    int robust = 0; /* the measured weights (first cycles): per cell */
    for (int c = 0; c < 20 && !robust; c++) {
      for (int b = 0; b < 4; b++) { /* four boxes of 4 x 4 cells */
        assert_int_equal(LA_startBox((b % 2) * 4, (b / 2) * 4, 0, 4, 4, 1), 0);
        busy_cpu_ns(200000);
        assert_int_equal(LA_stopBox((b % 2) * 4, (b / 2) * 4, 0, 4, 4, 1), 0);
      }
      assert_int_equal(LA_dataXfer(), 0);
      double w[64];
      uint64_t tag;
      rc = LA_weightsWait(w, 64, gen, WAIT_MS, &tag, &gen);
      if (rc) fail_msg("cycle %d: %s", c, LA_lastError());
      for (int e = 0; e < 64; e++) { /* its box's share, the same bits */
        int first = (e / 32) * 32 + (e % 8) / 4 * 4;
        if (!(w[e] > 0) || w[e] != w[first])
          fail_msg("flag %d cycle %d: LA_weights cell %d: %.17g, its box's "
                   "first cell %.17g", !old, c, e, w[e], w[first]);
      }
      la_shm_weights_slot_t *sl =
          la_shm_weights_slot(a, 64, (uint32_t)(gen % LA_SHM_WEIGHTS_SLOTS));
      robust = sl->kind == LA_SHM_WEIGHTS_ROBUST;
      assert_int_equal(sl->pieces, robust && !old ? 4 : 0);
    }
    if (!robust) fail_msg("flag %d: no robust weights in 20 cycles", !old);
  }
  shmdt(h);
  assert_int_equal(LA_finalize(), 0);
}

/* A cycle whose meta data says no cell value was written while a cell
 * was (a probe that does not mark cells: the inline probes of an older
 * la.h, as the direct write below): the LocalAgent reads the resident
 * cells and finds it out, so the cycle is stored with its cell and its
 * box, per cell; the next cycle of the buffer, boxes only, is stored one
 * value per piece without the earlier cell. Without swap only: with
 * swap on, the agent believes the word as before (docs/localagent.md). */
static void test_cells_said_none_but_written(void **state) {
  struct sysinfo si;
  if (sysinfo(&si) != 0 || si.totalswap != 0) {
    print_message("swap is on: the agent believes the word; not checked\n");
    return;
  }
  const char *app = "unit-cells-lie";
  setenv("LA_APP_ID", app, 1);
  use_counting_probe(); /* a stop reads first + 1 */
  int rc = LA_registerGrid("unit", 0, 1, 4, 3, 2);
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  uint32_t nb = 0;
  for (int c = 0; c < 2; c++) {
    for (uint32_t b = 0; b < (c ? nb : 1); b++) { /* every buffer once */
      assert_int_equal(LA_startBox(0, 0, 0, 2, 2, 1), 0); /* 0 1 4 5: 1 */
      assert_int_equal(LA_stopBox(0, 0, 0, 2, 2, 1), 0);
      if (c == 0) la__hot.values[22] += 5.0; /* unmarked */
      assert_int_equal(LA_dataXfer(), 0);
      if (c == 0) { /* said NONE (test_cycles_say_whether_cells_were_written) */
        int id = la_test_shm_of(getpid());
        la_shm_header_t *h = shmat(id, NULL, SHM_RDONLY);
        assert_true(h != (void *)-1);
        nb = h->n_buffers;
        shmdt(h);
      }
    }
  }
  assert_int_equal(la_ta_wait_traces(&agent, 1 + nb, WAIT_MS), 0);
  double want[24] = {0};
  want[0] = want[1] = want[4] = want[5] = 1.0 / 4;
  double want0[24];
  memcpy(want0, want, sizeof want);
  want0[22] = 5.0;
  assert_false(stored_of(app, 0, 0).pieced);
  expect_cells(app, 0, want0);
  for (uint32_t c = 1; c <= nb; c++) { /* the lying buffer's again too */
    assert_true(stored_of(app, c, 0).pieced);
    expect_cells(app, c, want);
  }
  assert_int_equal(LA_finalize(), 0);
}

/* Box and range probes, one measurement each (layout 6): a cycle of
 * boxes and a range that share no cell is stored one value per piece
 * (the encoding holds 4 values for the 24 cells, the pieced form), and
 * every reader gets the cells libla's own spread gives, bit for bit (the
 * counting probe: a piece's value over its cells), the total exact, and
 * LA_weights per cell; a cycle of overlapping boxes, or of a box and a
 * cell probe, is stored per cell as before, with the same values. */
static void test_box_cycles_stored_pieced(void **state) {
  const char *app = "unit-pieced";
  setenv("LA_APP_ID", app, 1);
  use_counting_probe(); /* a stop reads first + 1 */
  int rc = LA_registerGrid("unit", 0, 1, 4, 3, 2);
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  for (int t = 0; t < 2; t++) { /* cells 0 1 4 5: 1 each time */
    assert_int_equal(LA_startBox(0, 0, 0, 2, 2, 1), 0);
    assert_int_equal(LA_stopBox(0, 0, 0, 2, 2, 1), 0);
  }
  assert_int_equal(LA_startBox(2, 1, 0, 2, 2, 1), 0); /* 6 7 10 11: 7 */
  assert_int_equal(LA_stopBox(2, 1, 0, 2, 2, 1), 0);
  assert_int_equal(LA_startRange(8, 2), 0); /* 8 9: 9 */
  assert_int_equal(LA_stopRange(8, 2), 0);
  assert_int_equal(LA_startBox(1, 0, 1, 3, 3, 1), 0); /* 9 cells from 13 */
  assert_int_equal(LA_stopBox(1, 0, 1, 3, 3, 1), 0);
  assert_int_equal(LA_dataXfer(), 0);
  double want[24] = {0};
  for (int e = 0; e < 24; e++) {
    if (e == 0 || e == 1 || e == 4 || e == 5) want[e] = 2.0 / 4;
    if (e == 6 || e == 7 || e == 10 || e == 11) want[e] = 7.0 / 4;
    if (e == 8 || e == 9) want[e] = 9.0 / 2;
    if (e >= 12 && e % 4 != 0) want[e] = 14.0 / 9;
  }
  double w[24];
  uint64_t tag, gen;
  assert_int_equal(LA_weightsWait(w, 24, 0, WAIT_MS, &tag, &gen), 0);
  for (int e = 0; e < 24; e++)
    if (w[e] != want[e])
      fail_msg("LA_weights cell %d: %.17g, expected %.17g", e, w[e], want[e]);
  /* overlapping boxes: cell 5 is in both */
  assert_int_equal(LA_startBox(0, 0, 0, 2, 2, 1), 0);
  assert_int_equal(LA_stopBox(0, 0, 0, 2, 2, 1), 0);
  assert_int_equal(LA_startBox(1, 1, 0, 2, 2, 1), 0); /* 5 6 9 10: 6 */
  assert_int_equal(LA_stopBox(1, 1, 0, 2, 2, 1), 0);
  assert_int_equal(LA_dataXfer(), 0);
  /* a box and a cell */
  assert_int_equal(LA_startBox(2, 1, 0, 2, 2, 1), 0);
  assert_int_equal(LA_stopBox(2, 1, 0, 2, 2, 1), 0);
  assert_int_equal(LA_startCell(0, 0, 0), 0); /* 1 */
  assert_int_equal(LA_stopCell(0, 0, 0), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_ta_wait_traces(&agent, 3, WAIT_MS), 0);

  la_trace_totals_t t0 = stored_of(app, 0, 0), t1 = stored_of(app, 1, 0),
                    t2 = stored_of(app, 2, 0);
  assert_true(t0.pieced && t0.stored == 4 && t0.n_points == 24);
  assert_true(!t1.pieced && t1.stored == 24 && t1.spread == 1);
  assert_true(!t2.pieced && t2.stored == 24 && t2.spread == 1);
  expect_cells(app, 0, want);
  char sql[200];
  snprintf(sql, sizeof sql,
           "SELECT stat_sum = 32.0 AND stat_count = 24 FROM traces WHERE "
           "app_id = '%s' AND cycle_tag = %lld",
           app, la_ta_tag(&agent, app, 0, 0));
  assert_int_equal(la_ta_sql_int(&agent, sql), 1); /* 2 + 7 + 9 + 14 */
  double want1[24] = {0}, want2[24] = {0};
  want1[0] = want1[1] = want1[4] = 1.0 / 4;
  want1[5] = 1.0 / 4 + 6.0 / 4;
  want1[6] = want1[9] = want1[10] = 6.0 / 4;
  expect_cells(app, 1, want1);
  want2[0] = 1;
  want2[6] = want2[7] = want2[10] = want2[11] = 7.0 / 4;
  expect_cells(app, 2, want2);
  assert_int_equal(LA_finalize(), 0);
}

/* A cycle of boxes in two channels is stored per cell (the per-element
 * sum over the channels, and each channel), as before. */
static void test_box_cycles_with_channels_per_cell(void **state) {
  const char *app = "unit-pieced-ch";
  use_counting_probe();
  assert_int_equal(LA_channel("a"), 0);
  assert_int_equal(LA_channel("b"), 1);
  setenv("LA_APP_ID", app, 1);
  int rc = LA_registerGrid("unit", 0, 1, 4, 3, 2);
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  assert_int_equal(LA_startBoxC(0, 0, 0, 0, 2, 2, 1), 0); /* 0 1 4 5: 1 */
  assert_int_equal(LA_stopBoxC(0, 0, 0, 0, 2, 2, 1), 0);
  assert_int_equal(LA_startBoxC(1, 2, 1, 0, 2, 2, 1), 0); /* 6 7 10 11: 7 */
  assert_int_equal(LA_stopBoxC(1, 2, 1, 0, 2, 2, 1), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  la_trace_totals_t t = stored_of(app, 0, 0);
  assert_true(!t.pieced && t.stored == 24);
  double want[24] = {0};
  want[0] = want[1] = want[4] = want[5] = 1.0 / 4;
  want[6] = want[7] = want[10] = want[11] = 7.0 / 4;
  expect_cells(app, 0, want);
  assert_int_equal(LA_finalize(), 0);
}

/* Robust weights of box-probed cycles, one per piece (the time metric):
 * three cycles of 4 boxes of 16 cells, then three of 8 boxes of 8 cells,
 * each doing a twentieth of the work. Every cycle is stored pieced, its
 * robust weights too, with the cycle's own piece count; the new geometry
 * starts the pieces' robust state afresh, so its first cycle's weights
 * are of its own measured values (within their range), not the earlier
 * boxes' 20 times larger ones; LA_weights gives each cell its piece's
 * weight over the piece's cells. */
static void test_box_geometry_change_restarts_robust(void **state) {
  const char *app = "unit-piece-geom";
  setenv("LA_APP_ID", app, 1);
  setenv("LA_INTERFERENCE", "off", 1);
  int rc = LA_registerGrid("unit", 0, 1, 8, 8, 1);
  unsetenv("LA_APP_ID");
  unsetenv("LA_INTERFERENCE");
  assert_int_equal(rc, 0);
  uint64_t last = 0;
  double w3[64];
  for (int c = 0; c < 6; c++) {
    int big = c < 3;
    for (int b = 0; b < (big ? 4 : 8); b++) {
      long i0 = (b % 2) * 4,
           j0 = big ? (b / 2) * 4 : (b / 2) * 2, nj = big ? 4 : 2;
      assert_int_equal(LA_startBox(i0, j0, 0, 4, nj, 1), 0);
      busy_cpu_ns(big ? 1000000 : 50000);
      assert_int_equal(LA_stopBox(i0, j0, 0, 4, nj, 1), 0);
    }
    assert_int_equal(LA_dataXfer(), 0);
    double w[64];
    uint64_t tag, gen;
    rc = LA_weightsWait(w, 64, last, WAIT_MS, &tag, &gen);
    if (rc) fail_msg("cycle %d: %s", c, LA_lastError());
    last = gen;
    /* per cell: every cell of a piece its piece's share */
    for (int e = 0; e < 64; e++) {
      int first = big ? (e / 32) * 32 + (e % 8) / 4 * 4
                      : (e / 16) * 16 + (e % 8) / 4 * 4;
      assert_true(w[e] == w[first] && w[e] > 0);
    }
    if (c == 3) memcpy(w3, w, sizeof w3);
  }
  assert_int_equal(la_ta_wait_traces(&agent, 6, WAIT_MS), 0);
  for (size_t c = 0; c < 6; c++)
    for (int robust = 0; robust < 2; robust++) {
      la_trace_totals_t t = stored_of(app, c, robust);
      if (!t.pieced || t.stored != (c < 3 ? 4u : 8u) || t.n_points != 64)
        fail_msg("cycle %zu %s: pieced %d, %llu stored values", c,
                 robust ? "robust weights" : "measured", t.pieced,
                 (unsigned long long)t.stored);
    }
  const cycle_t *m = cycle_of(app, 3);
  double lo = INFINITY, hi = 0;
  for (int e = 0; e < 64; e++) {
    lo = fmin(lo, m->values[e]);
    hi = fmax(hi, m->values[e]);
  }
  for (int e = 0; e < 64; e++) /* a tick of rounding over 8 cells */
    if (!(w3[e] >= lo - 1.0 && w3[e] <= hi + 1.0))
      fail_msg("cell %d: robust weight %.17g outside the cycle's measured "
               "[%.17g, %.17g]",
               e, w3[e], lo, hi);
  assert_int_equal(LA_finalize(), 0);
}

/* The cycle whose representative app's i-th cycle references (its
 * history row), or -1 when it references none. */
static long long history_ref_of(const char *app, size_t i) {
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT ref_cycle FROM history WHERE app_id = '%s' AND rank = 0 "
           "AND cycle_tag = %lld",
           app, la_ta_tag(&agent, app, 0, i));
  return la_ta_sql_int(&agent, sql);
}

/* Boxes of one geometry (geom 0: 4 cells each at 0 and 6, 9 from 13; 1:
 * two of 2 x 3 cells at 0 and 2), probed once each: the same values. */
static void probe_geometry(int geom) {
  static const long b[2][3][6] = {
      {{0, 0, 0, 2, 2, 1}, {2, 1, 0, 2, 2, 1}, {1, 0, 1, 3, 3, 1}},
      {{0, 0, 0, 2, 3, 1}, {2, 0, 0, 2, 3, 1}, {0}}};
  for (int i = 0; i < 3 && b[geom][i][3]; i++) {
    const long *x = b[geom][i];
    assert_int_equal(LA_startBox(x[0], x[1], x[2], x[3], x[4], x[5]), 0);
    assert_int_equal(LA_stopBox(x[0], x[1], x[2], x[3], x[4], x[5]), 0);
  }
  assert_int_equal(LA_dataXfer(), 0);
}

/* The history of box-probed cycles is their geometry's (one value per
 * piece): repeats of one geometry reference its first cycle; the first
 * cycle of another geometry references nothing (a representative of other
 * pieces never matches) and becomes the new geometry's representative,
 * and so does the first one after the geometry changes back. Every cycle
 * is stored pieced with its own cells. */
static void test_box_history_keyed_by_geometry(void **state) {
  const char *app = "unit-piece-hist";
  setenv("LA_APP_ID", app, 1);
  use_counting_probe(); /* the same values every cycle */
  int rc = LA_registerGrid("unit", 0, 1, 4, 3, 2);
  unsetenv("LA_APP_ID");
  assert_int_equal(rc, 0);
  static const int geom[] = {0, 0, 0, 1, 1, 0, 0};
  for (int c = 0; c < 7; c++) probe_geometry(geom[c]);
  assert_int_equal(la_ta_wait_traces(&agent, 7, WAIT_MS), 0);
  long long tag[7];
  for (size_t c = 0; c < 7; c++) tag[c] = la_ta_tag(&agent, app, 0, c);
  static const int rep[] = {-1, 0, 0, -1, 3, -1, 5}; /* whose, or none */
  for (size_t c = 0; c < 7; c++) {
    long long want = rep[c] < 0 ? -1 : tag[rep[c]], got = history_ref_of(app, c);
    if (got != want)
      fail_msg("cycle %zu: history reference %lld, expected %lld", c, got,
               want);
    la_trace_totals_t t = stored_of(app, c, 0);
    assert_true(t.pieced && t.stored == (geom[c] ? 2u : 3u));
    const cycle_t *cy = cycle_of(app, c);
    double sum = 0;
    for (int e = 0; e < 24; e++) sum += cy->values[e];
    /* 1 + 7 + 14, or 1 + 3 */
    assert_true(fabs(sum - (geom[c] ? 4.0 : 22.0)) < 1e-12);
  }
  assert_int_equal(LA_finalize(), 0);
}

static void test_grid_overflow_refused(void **state) {
  /* (2^62+1) * 4 wraps to 4 in 64 bits: a 4-cell "grid" of 2^64+4 cells */
  assert_int_equal(LA_registerGrid("unit", 0, 1, (1L << 62) + 1, 4, 1),
                   LA_EINVAL);
  assert_non_null(strstr(LA_lastError(), "larger than 2^32"));
  assert_int_equal(LA_registerGrid("unit", 0, 1, 1L << 40, 1L << 40, 1L << 40),
                   LA_EINVAL);
  assert_int_equal(LA_registerGrid("unit", 0, 1, 1L << 16, 1L << 16, 2),
                   LA_EINVAL);
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 0);
  assert_int_equal(registrations(), 0);
  assert_int_equal(la_test_ipc_count(getpid()), 0);
}

/* A minimal agent: answers the registration and records DataReady. */
#define FAKE_MAX 8
static struct {
  int lfd;
  int sem_id;
  int n;
  uint64_t tag[FAKE_MAX], seq[FAKE_MAX];
  size_t ntags[FAKE_MAX];
  uint64_t tags[FAKE_MAX][70];
  pthread_mutex_t mu;
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *fake_agent(void *arg) {
  int fd = accept(fake.lfd, NULL, NULL);
  if (fd < 0) return NULL;
  uint16_t type;
  ProtobufCMessage *m = NULL;
  char why[128];
  if (la_recv_msg(fd, 1u << 16, 5000, &type, &m, why, sizeof why) != 0) {
    close(fd);
    return NULL;
  }
  pthread_mutex_lock(&fake.mu);
  fake.sem_id = ((La__RegisterRequest *)m)->sem_id;
  pthread_mutex_unlock(&fake.mu);
  la_msg_free(m);
  La__RegisterReply ok = LA__REGISTER_REPLY__INIT;
  la_send_msg(fd, LA__MSG_TYPE__MSG_REGISTER_REPLY, &ok.base, 5000);
  while (la_recv_msg(fd, 1u << 16, 5000, &type, &m, why, sizeof why) == 0) {
    if (type == LA__MSG_TYPE__MSG_DATA_READY) {
      La__DataReady *d = (La__DataReady *)m;
      pthread_mutex_lock(&fake.mu);
      if (fake.n < FAKE_MAX) {
        fake.tag[fake.n] = d->cycle_tag;
        fake.seq[fake.n] = d->seq;
        fake.ntags[fake.n] = d->n_skipped_tags;
        for (size_t i = 0; i < d->n_skipped_tags && i < 70; i++)
          fake.tags[fake.n][i] = d->skipped_tags[i];
        fake.n++;
      }
      pthread_mutex_unlock(&fake.mu);
    }
    la_msg_free(m);
  }
  close(fd);
  return NULL;
}

static int fake_wait(int n) {
  for (int i = 0; i < 500; i++) {
    pthread_mutex_lock(&fake.mu);
    int have = fake.n;
    pthread_mutex_unlock(&fake.mu);
    if (have >= n) return 0;
    usleep(10000);
  }
  return -1;
}

static void give_back(int sem_id, unsigned short i) {
  struct sembuf op = {.sem_num = i, .sem_op = 1};
  assert_int_equal(semop(sem_id, &op, 1), 0);
}

static void test_skipped_tags_in_data_ready(void **state) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  fake.lfd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fake.lfd >= 0);
  assert_int_equal(bind(fake.lfd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fake.lfd, 4), 0);
  assert_int_equal(getsockname(fake.lfd, (struct sockaddr *)&a, &len), 0);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(a.sin_port));
  setenv("LA_AGENT", addr, 1);
  fake.n = 0;
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, fake_agent, NULL), 0);
  use_counting_probe();
  LA_setBuffers(2);
  LA_setPolicy(LA_POLICY_SKIP);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0);
  LA_dataXferTagged(10); /* buffer 0 */
  LA_dataXferTagged(11); /* buffer 1; the next cycle finds none */
  LA_dataXferTagged(12);
  LA_dataXferTagged(13);
  LA_dataXferTagged(14);
  give_back(fake.sem_id, 0);
  LA_dataXferTagged(15); /* skipped too; the next cycle gets buffer 0 */
  LA_dataXferTagged(16);
  for (uint64_t t = 100; t < 170; t++) LA_dataXferTagged(t); /* 70 more */
  give_back(fake.sem_id, 1);
  LA_dataXferTagged(170);
  LA_dataXferTagged(171);
  assert_int_equal(fake_wait(4), 0);
  /* and the cycle after 171 found no buffer either */
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 4 + 71 + 1);
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), 2 + 3 + 2 + 70 + 2);
  /* DataReady's seq counts the cycles handed over */
  for (int i = 0; i < 4; i++) assert_int_equal(fake.seq[i], i);
  assert_int_equal(fake.tag[2], 16);
  assert_int_equal(fake.ntags[0] + fake.ntags[1], 0);
  assert_int_equal(fake.ntags[2], 4);
  for (int i = 0; i < 4; i++) assert_int_equal(fake.tags[2][i], 12 + i);
  /* 71 skipped (100..170): the newest 64, oldest first */
  assert_int_equal(fake.tag[3], 171);
  assert_int_equal(fake.ntags[3], 64);
  for (int i = 0; i < 64; i++) assert_int_equal(fake.tags[3][i], 107 + i);
  LA_finalize();
  pthread_join(th, NULL);
  close(fake.lfd);
}

/* ------------------------------------------ LA_finalize's open cycle -- */

/* Probes after the last LA_dataXfer: LA_finalize hands their cycle over as
 * the last one, tagged as LA_dataXfer would have (the cycle count). */
static void test_finalize_hands_over_open_cycle(void **state) {
  register_counting(10);
  LA_startProbe(1);
  LA_stopProbe(1);
  assert_int_equal(LA_dataXfer(), 0);
  LA_startProbe(3); /* cycle 1, never ended by LA_dataXfer */
  LA_stopProbe(3);
  LA_startProbe(3);
  LA_stopProbe(3);
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), 2);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 2);
  assert_int_equal(la_ta_wait_ended(&agent, 2, 1, WAIT_MS), 0);
  assert_int_equal(la_ta_ntraces(&agent, LA_appId()), 2);
  const cycle_t *c = cycle(1);
  assert_int_equal(c->tag, 1);
  for (long e = 0; e < 10; e++)
    assert_true(c->values[e] == (e == 3 ? 8.0 : 0.0));
  /* the rank's end reports both cycles */
  assert_int_equal(la_ta_app_int(&agent, LA_appId(),
                                 "SELECT cycles FROM ranks WHERE app_id = "
                                 "'%s'"),
                   2);
}

/* The usual end (LA_dataXfer after the last step, then LA_finalize): the
 * open cycle holds nothing and nothing more is sent. Range errors of the
 * open cycle alone are no measurement. The range-error counter does not
 * count the last profiled cycle's errors twice when the open cycle is not
 * profiled. Each phase is an application of its own (LA_APP_ID). */
static void test_finalize_drops_empty_open_cycle(void **state) {
  setenv("LA_APP_ID", "fin-usual", 1);
  register_counting(10);
  LA_startProbe(2);
  LA_stopProbe(2);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(LA_finalize(), 0); /* cycle 1: nothing probed */
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), 1);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 1);
  assert_int_equal(la_ta_wait_ended(&agent, 1, 1, WAIT_MS), 0);
  assert_int_equal(la_ta_ntraces(&agent, "fin-usual"), 1);

  setenv("LA_APP_ID", "fin-period", 1);
  LA_setPeriod(2);
  register_counting(10);
  LA_startProbe(2);
  LA_stopProbe(2);
  LA_startProbe(-1); /* two range errors in cycle 0 */
  LA_stopProbe(10);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(LA_getStat(LA_STAT_RANGE_ERRORS), 2);
  assert_false(LA_isProfiling()); /* cycle 1 is not profiled */
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_getStat(LA_STAT_RANGE_ERRORS), 2);
  assert_int_equal(LA_getStat(LA_STAT_CYCLES), 1);
  assert_int_equal(la_ta_wait_ended(&agent, 2, 2, WAIT_MS), 0);
  assert_int_equal(la_ta_ntraces(&agent, "fin-period"), 1);

  /* an open profiled cycle with only an out-of-range probe: not sent */
  setenv("LA_APP_ID", "fin-range", 1);
  LA_setPeriod(1);
  register_counting(10);
  LA_startProbe(12);
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_getStat(LA_STAT_RANGE_ERRORS), 1);
  assert_int_equal(LA_getStat(LA_STAT_PROFILED), 0);
  assert_int_equal(la_ta_wait_ended(&agent, 2, 3, WAIT_MS), 0);
  assert_int_equal(la_ta_ntraces(&agent, "fin-range"), 0);
  unsetenv("LA_APP_ID");
}

/* --------------------------------------- settings while registered -- */

/* The settings LA_register fixed are refused while it is in force, with
 * LA_ESTATE naming the call, and nothing changes; after LA_finalize they
 * are taken again, for the next registration. */
static void test_fixed_settings_refused_while_registered(void **state) {
  register_counting(4);
  char id[LA_MAX_APP_ID + 1];
  snprintf(id, sizeof id, "%s", LA_appId());
  struct {
    int rc;
    const char *call;
  } r[] = {
      {LA_setMetric("time"), "LA_setMetric"},
      {LA_setBuffers(4), "LA_setBuffers"},
      {LA_setAgent("127.0.0.1:1"), "LA_setAgent"},
      {LA_setCompaction("lossless"), "LA_setCompaction"},
      {LA_setAppId("another-app"), "LA_setAppId"},
  };
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    if (r[i].rc != LA_ESTATE)
      fail_msg("%s returned %d, not LA_ESTATE", r[i].call, r[i].rc);
    /* each call's message names it: check the last one's */
  }
  assert_non_null(strstr(LA_lastError(), "LA_setAppId while registered"));
  assert_string_equal(LA_appId(), id);
  LA_startProbe(1);
  LA_stopProbe(1);
  assert_int_equal(LA_dataXfer(), 0); /* still custom, still 2 */
  const cycle_t *c = xfer_one();
  assert_true(c->values[1] == 2.0);
  reg_t g = last_reg();
  assert_string_equal(g.metric, "custom");
  LA_finalize();
  /* unregistered: the next registration's settings */
  assert_int_equal(LA_setMetric("custom"), 0);
  assert_int_equal(LA_setBuffers(3), 0);
}

/* Probe functions set while registered with the time metric would change
 * what is measured under the registered unit: refused. */
static void test_probe_functions_refused_with_time_metric(void **state) {
  LA_setMetric("time");
  assert_int_equal(LA_register("unit", 0, 1, 4), 0);
  assert_int_equal(LA_setProbeStartFunc(probe_zero, NULL), LA_ESTATE);
  assert_non_null(strstr(LA_lastError(), "metric 'time'"));
  assert_int_equal(LA_setProbeStopFunc(probe_e1, NULL), LA_ESTATE);
  LA_finalize();
  /* nothing was kept: the next registration measures time */
  assert_int_equal(LA_register("unit", 0, 1, 4), 0);
  reg_t g = last_reg();
  assert_string_equal(g.metric, "time");
}

static double probe_e10(long e, void *arg) {
  return 10.0 * (double)(e + 1) + (arg ? *(double *)arg : 0.0);
}

/* With the metric custom, probe functions set while registered take over
 * at the next cycle boundary: the cycle in progress is measured by the
 * old ones to its end. */
static void test_probe_functions_switch_at_next_cycle(void **state) {
  register_counting(4); /* start 0, stop e+1 */
  LA_startProbe(0);
  LA_stopProbe(0); /* +1 */
  assert_int_equal(LA_setProbeStopFunc(probe_e10, NULL), 0);
  LA_startProbe(0);
  LA_stopProbe(0); /* still the old function: +1 */
  assert_int_equal(LA_dataXfer(), 0);
  LA_startProbe(0);
  LA_stopProbe(0); /* the new one: +10 */
  assert_int_equal(LA_dataXfer(), 0);
  double extra = 0.5; /* its argument changes too */
  assert_int_equal(LA_setProbeStopFunc(probe_e10, &extra), 0);
  LA_startProbe(1);
  LA_stopProbe(1); /* in cycle 2, still without the argument: +20 */
  assert_int_equal(LA_dataXfer(), 0);
  LA_startProbe(1);
  LA_stopProbe(1); /* +20.5 */
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(LA_setProbeStartFunc(NULL, NULL), 0); /* stop serves */
  LA_startProbe(2);
  LA_stopProbe(2); /* cycle 4 keeps its start function: +30.5 */
  assert_int_equal(LA_dataXfer(), 0);
  LA_startProbe(2);
  LA_stopProbe(2); /* cycle 5: the stop function serves both: 0 */
  LA_startProbe(3);
  LA_stopProbe(3);
  assert_int_equal(LA_setProbeStopFunc(NULL, NULL), 0); /* none from 6 */
  assert_int_equal(LA_dataXfer(), 0);
  LA_startProbe(1);
  LA_stopProbe(1); /* cycle 6: no function, nothing measured */
  LA_startRange(0, 4);
  LA_stopRange(0, 4);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_ta_wait_traces(&agent, 7, WAIT_MS), 0);
  double want[7][4] = {{2, 0, 0, 0},   {10, 0, 0, 0},    {0, 20, 0, 0},
                       {0, 20.5, 0, 0}, {0, 0, 30.5, 0}, {0, 0, 0, 0},
                       {0, 0, 0, 0}};
  for (size_t i = 0; i < 7; i++) {
    const cycle_t *c = cycle(i);
    assert_int_equal(c->tag, i);
    for (int e = 0; e < 4; e++)
      if (c->values[e] != want[i][e])
        fail_msg("cycle %zu element %d: %g, expected %g", i, e, c->values[e],
                 want[i][e]);
  }
}

/* LA_setPolicy at run time: from the next cycle that needs a buffer. */
static void test_policy_changed_at_run_time(void **state) {
  use_counting_probe();
  la_test_peer_set_hold_ms(peer, -1); /* the agent keeps every buffer */
  LA_setBuffers(2);
  assert_int_equal(LA_register("unit", 0, 1, 8), 0); /* wait policy */
  assert_int_equal(LA_setPolicy(LA_POLICY_SKIP), 0);
  assert_int_equal(LA_dataXfer(), 0); /* cycle 1: the second buffer */
  long long t0 = la_td_now_ms();
  assert_int_equal(LA_dataXfer(), 0); /* cycle 2: none, skipped at once */
  assert_int_equal(LA_getStat(LA_STAT_SKIPPED), 1);
  assert_int_equal(LA_getStat(LA_STAT_WAITS), 0);
  assert_true(la_td_now_ms() - t0 < 5000); /* not the 10 s wait */
  assert_int_equal(la_test_peer_release_all_wait(peer, 5000), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define P(f) cmocka_unit_test_setup_teardown(f, setup_peer, teardown_peer)
      T(test_values_arrive_per_element),
      T(test_accumulation_within_cycle),
      T(test_buffers_are_zeroed_between_cycles),
      T(test_element_ranges),
      T(test_period),
      T(test_period_changed_at_run_time),
      T(test_explicit_cycle_tags),
      T(test_enable_disable_at_run_time),
      T(test_range_errors),
      T(test_grid_cells),
      T(test_profiled_copy_follows_the_cycle),
      T(test_profiled_copy_without_agent),
      T(test_profiled_copy_after_agent_lost),
      P(test_profiled_copy_in_skipped_cycles),
      T(test_rows_and_boxes_spread_evenly),
      T(test_rows_and_boxes_rows_only),
      T(test_rows_and_boxes_spread_by_libla),
      T(test_full_piece_table_falls_back),
      T(test_lying_piece_records_refused),
      T(test_hostile_piece_values),
      T(test_dump_raw_pieces),
      T(test_box_cycles_stored_pieced),
      T(test_cells_said_none_but_written),
      T(test_weights_of_pieces_either_way),
      T(test_box_cycles_with_channels_per_cell),
      T(test_box_geometry_change_restarts_robust),
      T(test_box_history_keyed_by_geometry),
      T(test_rows_need_a_grid),
      T(test_rows_in_profiled_sweeps),
      T(test_cycles_say_whether_cells_were_written),
      cmocka_unit_test_setup_teardown(test_backlog_drops_not_waits,
                                      setup_backlog, teardown),
      cmocka_unit_test_setup_teardown(test_defaults_never_wait,
                                      setup_defaults, teardown),
      cmocka_unit_test_setup_teardown(test_defaults_never_wait_channels,
                                      setup_defaults, teardown),
      cmocka_unit_test_setup_teardown(test_dropped_row_cycles_zeroed,
                                      setup_backlog, teardown),
      T(test_wall_time_metric_in_ns),
      T(test_threads_probe_disjoint_elements),
      T(test_papi_software_event),
      T(test_papi_cycles),
      T(test_papi_instructions),
      T(test_unknown_metric),
      P(test_skip_policy),
      P(test_wait_policy),
      P(test_wait_policy_times_out),
      P(test_wait_takes_first_back),
      T(test_agent_dies_mid_run),
      T(test_cycles_counted_when_agent_lost),
      T(test_registers_again_after_agent_restart),
      T(test_agent_away_costs_nothing),
      P(test_wait_notices_dead_agent),
      P(test_failed_data_ready_not_profiled),
      P(test_failed_last_cycle_not_profiled),
      T(test_refused_registration),
      T(test_no_agent),
      T(test_disable_env),
      T(test_env_overrides_program),
      T(test_bad_environment),
      T(test_bad_arguments),
      T(test_register_twice),
      T(test_finalize_removes_ipc),
      T(test_launcher_environment),
      P(test_app_id_random_part),
      T(test_two_processes),
      T(test_application_killed),
      T(test_dump_raw),
      T(test_dump_raw_gone),
      T(test_grid_overflow_refused),
      P(test_skipped_tags_in_data_ready),
      T(test_finalize_hands_over_open_cycle),
      T(test_finalize_drops_empty_open_cycle),
      T(test_fixed_settings_refused_while_registered),
      T(test_probe_functions_refused_with_time_metric),
      T(test_probe_functions_switch_at_next_cycle),
      P(test_policy_changed_at_run_time),
#undef T
#undef P
  };
  return cmocka_run_group_tests_name("libla", tests, NULL, NULL);
}
