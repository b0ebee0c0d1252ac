/* SPDX-License-Identifier: BSD-3-Clause */
/* test_replay.c: la-replay and `lactl replay` on a run the real daemons
 * recorded (la-globalagent and la-localagent on ephemeral ports,
 * tests/support/la_test_stack.h).
 *
 * The group setup records, under mpiexec:
 *   heavy --n 13 --steps 20 on 3 ranks (LA_APP_ID heavy-rec): k-slabs of
 *     5, 4 and 4 planes of 169 cells of about a microsecond each, so rank
 *     0 carries 25% more than ranks 1 and 2;
 *   history_app --n 64 on 2 ranks (LA_APP_ID custom-rec): the metric
 *     "custom", which replay must refuse;
 *   wavetoy --n 6 --steps 6 on 2 ranks (LA_APP_ID wave-rec): a 6^3 grid
 *     in k-slabs of 3 planes, placed in the global grid.
 * Then:
 *   - `lactl replay heavy-rec --exec` runs la-replay on 3 ranks; it exits
 *     0, replays the 20 cycles, its per-rank targets are the recorded
 *     totals, the CPU time each rank spent is within a generous margin of
 *     its target, rank 0 stays the heaviest, the replayed imbalance is
 *     near the recorded one, and LA stored the replay as heavy-rec.replay
 *     (20 complete cycles of 3 ranks, metric time);
 *   - `lactl whatif --write-partition` writes one "ID RANK" line per
 *     element; la-replay --partition of that cycle (with a halo exchange)
 *     targets exactly whatif's predicted imbalance and replays near it;
 *   - refusals, each with its message and exit status: an unknown
 *     application (1), a metric other than time (1), a partition file of
 *     the wrong length or with ids that are not the application's (2), the
 *     wrong number of ranks (2);
 *   - --db: a copy of the store (VACUUM INTO), replayed with LA_GLOBAL
 *     pointing at a port nobody listens on: the cycles asked, every rank's
 *     target its stored total; `lactl replay --db` passes --db on; a
 *     missing file, a file that is not a store, an unknown application
 *     and --db with --global refused;
 *   - --db with PostgreSQL: a throw-away server (tests/support/la_test_pg.h),
 *     a second GlobalAgent storing there (--store.url) and its LocalAgent
 *     record heavy on 3 ranks; with both daemons stopped, la-replay --db
 *     postgresql:///DB?host=SOCKETDIR&user=postgres (and the keyword form
 *     host=... dbname=...) replays cycles 3..5: every rank's recorded total
 *     in the proportions of the stored robust totals (read from the feed
 *     before the GlobalAgent stopped; to 1e-3, as the lines print them),
 *     the recorded imbalance theirs, each target that total; an
 *     application the database lacks and an empty database (no LA schema)
 *     refused. Skips where the PostgreSQL server binaries are missing;
 *   - the mesh halo (--halo-bytes-per-cell 8) on wave-rec, read from the
 *     store copy, counted by hand: the recorded slabs (one plane of 36
 *     cells each way, 1 neighbour, 576 bytes per cycle), 4 strips in i of
 *     1, 2... planes (180 boundary cells, 216 sent, neighbours max 2 mean
 *     1.5, 1728 bytes) and 2 x 2 blocks in (i, j) (120 boundary cells, 144
 *     sent, 2 neighbours each, 1152 bytes); heavy-rec (no grid) keeps the
 *     ring and says so.
 *
 * Margins. The spin is calibrated against the wall clock, and each rank's
 * compute is timed both by MPI_Wtime and by its thread's CPU clock. On
 * this 2-core machine 3 ranks beside other jobs are preempted often, so
 * the wall time holds other processes' time (measured: 1.0x to 7x the
 * target at load 6-8); nothing here asserts on it. The CPU time is what
 * the spin got of the core: over 11 runs of this test at load 6-8 it was
 * 0.988 to 1.174 of the target per rank, and the replayed imbalance
 * within 0.04 of the recorded one and within 0.07 of whatif's prediction
 * (docs/balancing.md, "Replaying a partition"). The assertions allow
 * 0.67x-1.5x per rank and 0.15 on the imbalance. The recording uses
 * robust weights (the default), whose per-rank totals kept the design's
 * 5:4:4 (recorded imbalance 1.147-1.162 over 11 runs) where the measured
 * ones swung with the load (1.14-1.66); the ordering asserted is rank 0
 * (25% heavier by construction) against the others, which the CPU totals
 * kept in every run (their per-rank ratios spread by at most 0.13).
 *
 * Skips without mpiexec, the daemons, lactl, la-replay or the programs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "la_client.h"
#include "la_test_agent.h"
#include "la_test_daemon.h"
#include "la_test_pg.h"
#include "la_test_stack.h"

#define OUT_LEN 65536
#define STEPS 20
#define HEAVY "heavy-rec"
#define CUSTOM "custom-rec"
#define WAVE "wave-rec"

typedef struct {
  la_test_stack_t s;
  int up;
  char lactl[PATH_MAX], replay[PATH_MAX], heavy[PATH_MAX + 16],
      hist[PATH_MAX + 16], wave[PATH_MAX + 16], dir[PATH_MAX];
  char copy[PATH_MAX + 64]; /* a copy of the store, made once */
  char agent[96], global[96];
  char out[OUT_LEN];
} fx_t;

static fx_t *g;

/* Runs argv with LA_AGENT and LA_GLOBAL (and extra, may be NULL) set;
 * output into g->out. Returns the exit status. */
static int run(const char *const *argv, const char *extra) {
  const char *const env[] = {g->agent, g->global, extra, NULL};
  return la_td_run(argv, env, 180000, g->out, sizeof g->out);
}

/* Waits until app's cycle is stored complete. 0 or -1. */
static int wait_complete(const char *app, uint64_t cycle) {
  la_client_t *c;
  if (la_client_connect(g->s.feed_addr, 5000, &c) != 0) return -1;
  la_traceset_t *t = la_ta_complete_set(c, app, cycle, 30000);
  la_client_close(c);
  int ok = t != NULL;
  la_traceset_free(t);
  return ok ? 0 : -1;
}

static int setup_group(void **state) {
  g = calloc(1, sizeof *g);
  if (!g) return -1;
  char self[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k <= 0) return -1;
  self[k] = 0;
  int d = (int)(strrchr(self, '/') - self);
  const char *ex = getenv("LA_EXAMPLES_DIR");
  if (ex && *ex)
    snprintf(g->heavy, sizeof g->heavy, "%s/heavy", ex);
  else /* build/tests/../examples; a sanitized tree links the normal one */
    snprintf(g->heavy, sizeof g->heavy, "%.*s/../examples/heavy", d, self);
  snprintf(g->wave, sizeof g->wave, "%.*s/wavetoy",
           (int)(strrchr(g->heavy, '/') - g->heavy), g->heavy);
  /* history_app is built in the normal tree only, beside its tests: a
   * sanitized tree reaches it through its examples link (build/asan/examples
   * -> build/examples, whose ../tests is build/tests) */
  snprintf(g->hist, sizeof g->hist, "%.*s/../examples/../tests/history_app", d,
           self);
  if (system("command -v mpiexec >/dev/null 2>&1") != 0 ||
      access(g->heavy, X_OK) != 0 || access(g->hist, X_OK) != 0 ||
      access(g->wave, X_OK) != 0 ||
      la_td_find_bin("lactl", g->lactl, sizeof g->lactl) != 0 ||
      la_td_find_bin("la-replay", g->replay, sizeof g->replay) != 0 ||
      la_ts_init(&g->s) != 0)
    return 0; /* the tests skip */
  static const char *const la_extra[] = {"--global.spool_fsync=no", NULL};
  if (la_ts_start_global(&g->s, NULL) != 0 ||
      la_ts_start_local(&g->s, la_extra) != 0)
    return -1;
  snprintf(g->dir, sizeof g->dir, "%s", la_td_dir(g->s.ga));
  snprintf(g->agent, sizeof g->agent, "LA_AGENT=%s", la_td_addr(g->s.la));
  snprintf(g->global, sizeof g->global, "LA_GLOBAL=%s", g->s.feed_addr);
  const char *hv[] = {"mpiexec", "-n", "3", g->heavy, "--n", "13",
                      "--steps", "20", NULL};
  const char *hi[] = {"mpiexec", "-n", "2", g->hist, "--n", "64", NULL};
  if (run(hv, "LA_APP_ID=" HEAVY) != 0) {
    fprintf(stderr, "heavy:\n%s\n", g->out);
    return -1;
  }
  if (run(hi, "LA_APP_ID=" CUSTOM) != 0) {
    fprintf(stderr, "history_app:\n%s\n", g->out);
    return -1;
  }
  const char *wv[] = {"mpiexec", "-n", "2", g->wave, "--n", "6",
                      "--steps", "6", NULL};
  if (run(wv, "LA_APP_ID=" WAVE) != 0) {
    fprintf(stderr, "wavetoy:\n%s\n", g->out);
    return -1;
  }
  if (wait_complete(HEAVY, STEPS - 1) != 0 || wait_complete(CUSTOM, 27) != 0 ||
      wait_complete(WAVE, 5) != 0)
    return -1;
  g->up = 1;
  *state = g;
  return 0;
}

static int teardown_group(void **state) {
  if (!g) return 0;
  la_ts_free(&g->s);
  free(g);
  g = NULL;
  return 0;
}

static void need_up(void) {
  if (!g->up) {
    printf("skip: mpiexec, lactl, la-replay, the daemons or the programs "
           "missing\n");
    skip();
  }
}

/* The value of key=... on la-replay's summary line in out. */
static double summary(const char *out, const char *key) {
  const char *p = strstr(out, "la-replay summary:");
  if (!p) fail_msg("no summary line in:\n%s", out);
  char k[64];
  snprintf(k, sizeof k, " %s=", key);
  const char *v = strstr(p, k);
  if (!v) fail_msg("no %s on the summary line:\n%s", key, p);
  return strtod(v + strlen(k), NULL);
}

/* Rank r's target and cpu totals (ms) from the per-rank lines. */
static void rank_line(const char *out, unsigned r, double *rec, double *tg,
                      double *cpu) {
  char head[32];
  snprintf(head, sizeof head, "\nrank %u: recorded ", r);
  const char *p = strstr(out, head);
  if (!p) fail_msg("no line for rank %u in:\n%s", r, out);
  double wall, wq, cq;
  if (sscanf(p + strlen(head),
             "%lf ms, target %lf ms, replayed %lf ms (x%lf), cpu %lf ms "
             "(x%lf)",
             rec, tg, &wall, &wq, cpu, &cq) != 6)
    fail_msg("rank %u's line does not parse:\n%s", r, p);
}

/* The end of la-replay's output (the per-rank lines and the summary), for
 * failure messages, which cmocka cuts short. */
static const char *tail(const char *out) {
  const char *p = strstr(out, "\nla-replay: ");
  return p ? p + 1 : out;
}

/* A path in the fixture's directory. */
static const char *file(const char *name) {
  static char buf[PATH_MAX + 64];
  snprintf(buf, sizeof buf, "%s/%s", g->dir, name);
  return buf;
}

static void test_replay_recorded(void **state) {
  (void)state;
  need_up();
  const char *argv[] = {g->lactl, "replay", HEAVY, "--exec", NULL};
  /* lactl replay runs the la-replay beside it, else the one on PATH: a
   * sanitized tree's lactl has none beside it (la-replay is built in the
   * normal tree only) */
  static char path[PATH_MAX * 2 + 16];
  const char *old = getenv("PATH");
  snprintf(path, sizeof path, "PATH=%.*s:%s",
           (int)(strrchr(g->replay, '/') - g->replay), g->replay,
           old ? old : "/usr/bin:/bin");
  int rc = run(argv, path);
  if (rc != 0) fail_msg("lactl replay --exec exited %d:\n%s", rc, g->out);
  assert_int_equal((int)summary(g->out, "ranks"), 3);
  assert_int_equal((int)summary(g->out, "cycles"), STEPS);
  assert_non_null(strstr(g->out, "replay_app=" HEAVY ".replay "));
  double rec[3], tg[3], cpu[3];
  for (unsigned r = 0; r < 3; r++) {
    rank_line(g->out, r, &rec[r], &tg[r], &cpu[r]);
    /* the targets are the recorded weights: their sum is the stored total
     * within the compaction's error */
    if (fabs(tg[r] / rec[r] - 1) > 0.05)
      fail_msg("rank %u: target %.3f ms, recorded %.3f ms:\n%s", r, tg[r],
               rec[r], tail(g->out));
    if (cpu[r] < 0.67 * tg[r] || cpu[r] > 1.5 * tg[r])
      fail_msg("rank %u spent %.3f ms of CPU for a target of %.3f ms:\n%s", r,
               cpu[r], tg[r], tail(g->out));
  }
  /* the ordering a user sees: rank 0 (5 planes) heaviest, recorded and
   * replayed (recorded under load the margin shrinks: 1.10x rank 1 in
   * one ASan run of the fresh-clone CI beside other work) */
  if (!(rec[0] > rec[1] && rec[0] > rec[2]))
    fail_msg("recorded: rank 0 not the heaviest:\n%s", tail(g->out));
  if (!(cpu[0] > cpu[1] && cpu[0] > cpu[2]))
    fail_msg("rank 0 is not the heaviest replayed:\n%s", tail(g->out));
  double ri = summary(g->out, "recorded_imbalance"),
         ci = summary(g->out, "cpu_imbalance");
  if (fabs(ci - ri) > 0.15)
    fail_msg("replayed imbalance %.3f, recorded %.3f:\n%s", ci, ri, tail(g->out));
  print_message("%s", tail(g->out));
  /* LA profiled the replay under its own id */
  la_client_t *c;
  la_traceset_t *t;
  assert_int_equal(wait_complete(HEAVY ".replay", STEPS - 1), 0);
  assert_int_equal(la_client_connect(g->s.feed_addr, 5000, &c), 0);
  assert_int_equal(la_client_get(c, HEAVY ".replay", STEPS - 1, &t), 0);
  assert_int_equal(la_traceset_nprocs(t), 3);
  assert_string_equal(la_traceset_metric(t), "time");
  la_traceset_free(t);
  la_client_close(c);
}

static void test_replay_partition(void **state) {
  (void)state;
  need_up();
  const char *part = file("greedy.part");
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s", part);
  const char *wi[] = {g->lactl, "whatif", HEAVY, "10", "--method", "greedy",
                      "--csv", "--write-partition", p, "--db", g->s.db, NULL};
  int rc = run(wi, NULL);
  if (rc != 0) fail_msg("lactl whatif exited %d:\n%s", rc, g->out);
  const char *row = strstr(g->out, "\n10,greedy,3,");
  assert_non_null(row);
  double pmax, pmean, pimb;
  assert_int_equal(sscanf(row + 1, "10,greedy,3,%lf,%lf,%lf", &pmax, &pmean,
                          &pimb),
                   3);
  /* one "ID RANK" line per element (13^3), ids ascending, two header lines */
  char cmd[3 * PATH_MAX + 400];
  snprintf(cmd, sizeof cmd,
           "test $(grep -vc '^#' '%s') = 2197 && test $(grep -c '^#' '%s') "
           "= 2 && grep -v '^#' '%s' | sort -c -n",
           p, p, p);
  if (system(cmd) != 0) fail_msg("%s is not 2197 ascending lines", p);
  /* a pipe (as /dev/null, a device) is written into, not replaced by a
   * file: the same lines arrive through it */
  const char *fifo = file("greedy.fifo");
  static char got[2 * PATH_MAX], sh[16 * PATH_MAX];
  snprintf(got, sizeof got, "%s.got", fifo);
  snprintf(sh, sizeof sh,
           "rm -f '%s' && mkfifo '%s' && { timeout 60 cat '%s' > '%s' & "
           "sleep 0.2; '%s' whatif %s 10 --method greedy --csv "
           "--write-partition '%s' --db '%s' > /dev/null && wait && test -p "
           "'%s' && cmp -s '%s' '%s'; }",
           fifo, fifo, fifo, got, g->lactl, HEAVY, fifo, g->s.db, fifo, got,
           p);
  if (system(sh) != 0)
    fail_msg("--write-partition to a pipe: not the same lines, or the pipe "
             "was replaced");

  const char *rp[] = {"mpiexec", "-n", "3", g->replay, HEAVY, "10:10",
                      "--partition", p, "--halo", "4096", "--app-id",
                      "greedy.replay", NULL};
  /* the replayed CPU of one 0.6 ms cycle of 3 ranks on a shared machine:
   * a rank that lost its core's caches mid-cycle reads 40% over; the
   * replay is run again (at most three times) before that is a failure */
  double ti = 0, ci = 0;
  for (int attempt = 0; attempt < 3; attempt++) {
    char id[32]; /* each attempt its own application */
    snprintf(id, sizeof id, attempt ? "greedy.replay%d" : "greedy.replay",
             attempt);
    rp[11] = id;
    rc = run(rp, NULL);
    if (rc != 0) fail_msg("la-replay --partition exited %d:\n%s", rc, g->out);
    assert_int_equal((int)summary(g->out, "cycles"), 1);
    ti = summary(g->out, "target_imbalance");
    ci = summary(g->out, "cpu_imbalance");
    /* the same weights, the same partition: whatif's prediction exactly */
    if (fabs(ti - pimb) > 1e-3)
      fail_msg("target imbalance %.5f, whatif predicted %.5f:\n%s", ti, pimb,
               tail(g->out));
    if (fabs(ci - pimb) <= 0.15) break;
    print_message("replayed imbalance %.3f, whatif predicted %.3f: again\n",
                  ci, pimb);
  }
  if (fabs(ci - pimb) > 0.15)
    fail_msg("replayed imbalance %.3f, whatif predicted %.3f:\n%s", ci, pimb,
             tail(g->out));
  print_message("%s", tail(g->out));
}

/* Runs argv, expects exit status want and msg in the output. */
static void refused(const char *const *argv, int want, const char *msg) {
  int rc = run(argv, NULL);
  if (rc != want || !strstr(g->out, msg))
    fail_msg("%s %s: exit %d (want %d), output:\n%s\n(want \"%s\")", argv[0],
             argv[1], rc, want, g->out, msg);
}

static void test_replay_refusals(void **state) {
  (void)state;
  need_up();
  const char *unknown[] = {"mpiexec", "-n", "1", g->replay, "no-such-app",
                           NULL};
  refused(unknown, 1, "no application 'no-such-app' is stored");
  const char *custom[] = {"mpiexec", "-n", "2", g->replay, CUSTOM, NULL};
  refused(custom, 1,
          "custom-rec's metric is 'custom' (unit 'user'): la-replay spends "
          "recorded time");
  const char *lcustom[] = {g->lactl, "replay", CUSTOM, NULL};
  refused(lcustom, 1, "replays only the time metric");
  const char *ranks[] = {"mpiexec", "-n", "2", g->replay, HEAVY, "3:4", NULL};
  refused(ranks, 2,
          "heavy-rec was recorded with 3 ranks, la-replay runs on 2: run it "
          "with mpiexec -n 3");
  /* a partition file of the wrong length: the first 100 elements */
  char p[PATH_MAX + 64], cmd[2 * PATH_MAX + 200];
  snprintf(p, sizeof p, "%s", file("short.part"));
  snprintf(cmd, sizeof cmd,
           "printf '# 100 elements\\n' > '%s' && seq 0 99 | sed 's/$/ 1/' "
           ">> '%s'",
           p, p);
  assert_int_equal(system(cmd), 0);
  const char *shortp[] = {"mpiexec", "-n", "2",  g->replay, HEAVY,
                          "3:4",     "--partition", p, NULL};
  refused(shortp, 2,
          "the partition file has 100 elements, heavy-rec cycle 3 has 2197");
  /* the right length, but ids 1..2197 where heavy's are 0..2196 */
  char q[PATH_MAX + 64];
  snprintf(q, sizeof q, "%s", file("shifted.part"));
  snprintf(cmd, sizeof cmd,
           "printf '# shifted; parts 3\\n' > '%s' && seq 1 2197 | "
           "sed 's/$/ 0/' >> '%s'",
           q, q);
  assert_int_equal(system(cmd), 0);
  const char *shifted[] = {"mpiexec", "-n", "3",  g->replay, HEAVY,
                           "3:4",     "--partition", q, NULL};
  refused(shifted, 2,
          "element id 0 of heavy-rec is not in the partition file");
  /* ... and its rank count decides the launch lactl replay prints */
  const char *lr[] = {g->lactl, "replay", HEAVY, "3:4", "--partition", p,
                      NULL};
  refused(lr, 0, " -n 2 ");
  const char *lr3[] = {g->lactl, "replay", HEAVY, NULL};
  refused(lr3, 0, "mpiexec -n 3 ");
}

/* The store copied once (VACUUM INTO: a consistent copy while the
 * GlobalAgent writes): the path, or NULL (failed). */
static const char *store_copy(void) {
  if (g->copy[0]) return g->copy;
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s", file("copy.db"));
  sqlite3 *db = NULL;
  char sql[PATH_MAX + 128], *err = NULL;
  snprintf(sql, sizeof sql, "VACUUM INTO '%s'", path);
  int rc = sqlite3_open_v2(g->s.db, &db, SQLITE_OPEN_READONLY, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 10000);
    rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  }
  if (rc != SQLITE_OK)
    fprintf(stderr, "copy of %s: %s\n", g->s.db, err ? err : sqlite3_errmsg(db));
  sqlite3_free(err);
  sqlite3_close(db);
  if (rc != SQLITE_OK) return NULL;
  snprintf(g->copy, sizeof g->copy, "%s", path);
  return g->copy;
}

/* Runs argv with no GlobalAgent reachable (LA_GLOBAL: a port nobody
 * listens on; port 9, discard, is closed on loopback here): exit status. */
static int run_offline(const char *const *argv) {
  const char *const env[] = {"LA_GLOBAL=127.0.0.1:9", NULL};
  return la_td_run(argv, env, 180000, g->out, sizeof g->out);
}

static void test_replay_db(void **state) {
  (void)state;
  need_up();
  const char *db = store_copy();
  assert_non_null(db);
  const char *rp[] = {"mpiexec", "-n", "3", g->replay, HEAVY, "3:5", "--db",
                      db, "--no-la", "--quiet", "--calibrate", "0.05", NULL};
  int rc = run_offline(rp);
  if (rc != 0) fail_msg("la-replay --db exited %d:\n%s", rc, g->out);
  assert_int_equal((int)summary(g->out, "ranks"), 3);
  assert_int_equal((int)summary(g->out, "cycles"), 3);
  assert_non_null(strstr(g->out, "cycles 3..5 (3 replayed)"));
  for (unsigned r = 0; r < 3; r++) {
    double rec, tg, cpu;
    rank_line(g->out, r, &rec, &tg, &cpu);
    if (fabs(tg / rec - 1) > 0.05)
      fail_msg("rank %u: target %.3f ms, stored %.3f ms:\n%s", r, tg, rec,
               tail(g->out));
  }
  /* lactl replay --db: checks the store, hands la-replay --db */
  const char *lr[] = {g->lactl, "replay", HEAVY, "3:5", "--db", db, NULL};
  rc = run_offline(lr);
  if (rc != 0 || !strstr(g->out, " --db ") || strstr(g->out, "--global"))
    fail_msg("lactl replay --db exited %d:\n%s", rc, g->out);
  /* refusals */
  const char *missing[] = {"mpiexec", "-n", "1", g->replay, HEAVY, "--db",
                           file("no-such.db"), NULL};
  refused(missing, 1, "no-such.db: No such file or directory");
  char junk[PATH_MAX + 64], cmd[PATH_MAX + 100];
  snprintf(junk, sizeof junk, "%s", file("junk.db"));
  snprintf(cmd, sizeof cmd, "echo 'not a database' > '%s'", junk);
  assert_int_equal(system(cmd), 0);
  const char *notstore[] = {"mpiexec", "-n", "1", g->replay, HEAVY, "--db",
                            junk, NULL};
  refused(notstore, 1, "cannot read the store");
  const char *unknown[] = {"mpiexec", "-n", "1", g->replay, "no-such-app",
                           "--db", db, NULL};
  refused(unknown, 1, "no application 'no-such-app' is stored at");
  const char *both[] = {"mpiexec", "-n", "1", g->replay, HEAVY, "--db", db,
                        "--global", "127.0.0.1:9", NULL};
  refused(both, 2, "--db and --global both name the source");
  const char *lmissing[] = {g->lactl, "replay", HEAVY, "--db",
                            file("no-such.db"), NULL};
  refused(lmissing, 1, "No such file or directory");
}

/* la-replay --db URL of heavy-pg cycles 3..5, offline: every rank's
 * recorded total in the proportions of tot (the stored robust totals of
 * the three cycles summed), its target that total. */
static void replay_pg(const char *url, const double *tot) {
  const char *rp[] = {"mpiexec", "-n",      "3",    g->replay, "heavy-pg",
                      "3:5",     "--db",    url,    "--no-la", "--quiet",
                      "--calibrate", "0.05", NULL};
  int rc = run_offline(rp);
  if (rc != 0) fail_msg("la-replay --db %s exited %d:\n%s", url, rc, g->out);
  assert_int_equal((int)summary(g->out, "ranks"), 3);
  assert_int_equal((int)summary(g->out, "cycles"), 3);
  assert_non_null(strstr(g->out, "cycles 3..5 (3 replayed)"));
  double rec[3], tg, cpu, rsum = 0, tsum = 0;
  for (unsigned r = 0; r < 3; r++) {
    rank_line(g->out, r, &rec[r], &tg, &cpu);
    if (fabs(tg / rec[r] - 1) > 0.05)
      fail_msg("rank %u: target %.3f ms, stored %.3f ms:\n%s", r, tg, rec[r],
               tail(g->out));
    rsum += rec[r], tsum += tot[r];
  }
  /* the lines print ms to 3 decimals (~1.6 ms each: 3e-4 at most) */
  double tmax = 0;
  for (unsigned r = 0; r < 3; r++) {
    if (fabs(rec[r] / rsum - tot[r] / tsum) > 1e-3)
      fail_msg("rank %u: recorded share %.6f, stored share %.6f:\n%s", r,
               rec[r] / rsum, tot[r] / tsum, tail(g->out));
    if (tot[r] > tmax) tmax = tot[r];
  }
  double imb = summary(g->out, "recorded_imbalance");
  if (fabs(imb - tmax / (tsum / 3)) > 1e-3)
    fail_msg("recorded imbalance %.4f, stored %.4f", imb, tmax / (tsum / 3));
}

static void test_replay_db_pg(void **state) {
  (void)state;
  need_up();
  la_test_pg_t *pg = NULL;
  char why[2048], url[600], empty[600];
  int r = la_test_pg_start(0, &pg, why, sizeof why);
  if (r == 1) {
    printf("skip: no PostgreSQL server binaries\n");
    skip();
  }
  if (r != 0) fail_msg("PostgreSQL: %s", why);
  if (la_test_pg_createdb(pg, "la_replay", url, sizeof url, why,
                          sizeof why) != 0 ||
      la_test_pg_createdb(pg, "la_empty", empty, sizeof empty, why,
                          sizeof why) != 0)
    fail_msg("createdb: %s", why);
  /* a GlobalAgent on PostgreSQL, its LocalAgent, heavy recorded */
  la_test_stack_t ps;
  char url_arg[700], agent[96];
  snprintf(url_arg, sizeof url_arg, "--store.url=%s", url);
  const char *ga[] = {url_arg, NULL};
  static const char *const la_extra[] = {"--global.spool_fsync=no", NULL};
  assert_int_equal(la_ts_init(&ps), 0);
  if (la_ts_start_global(&ps, ga) != 0 ||
      la_ts_start_local(&ps, la_extra) != 0)
    fail_msg("the daemons on PostgreSQL did not start");
  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_td_addr(ps.la));
  const char *hv[] = {"mpiexec", "-n", "3", g->heavy, "--n", "13",
                      "--steps", "20", NULL};
  const char *const env[] = {agent, "LA_APP_ID=heavy-pg", NULL};
  if (la_td_run(hv, env, 180000, g->out, sizeof g->out) != 0)
    fail_msg("heavy on the PostgreSQL stack:\n%s", g->out);
  /* the stored robust totals of cycles 3..5, from the feed */
  la_client_t *c;
  double tot[3] = {0, 0, 0};
  assert_int_equal(la_client_connect(ps.feed_addr, 5000, &c), 0);
  la_traceset_t *last = la_ta_complete_set(c, "heavy-pg", STEPS - 1, 30000);
  assert_non_null(last);
  la_traceset_free(last);
  for (uint64_t cy = 3; cy <= 5; cy++) {
    la_traceset_t *t;
    double rt[3];
    assert_int_equal(la_client_get(c, "heavy-pg", cy, &t), 0);
    assert_int_equal(la_traceset_nprocs(t), 3);
    assert_true(la_traceset_has_robust(t));
    assert_int_equal(la_traceset_robust_totals(t, rt), 0);
    for (int k = 0; k < 3; k++) tot[k] += rt[k];
    la_traceset_free(t);
  }
  la_client_close(c);
  la_ts_free(&ps); /* no GlobalAgent from here on */
  /* the URI form, the socket directory as its host */
  char uri[900];
  snprintf(uri, sizeof uri, "postgresql:///la_replay?host=%s&user=postgres",
           la_test_pg_dir(pg));
  replay_pg(uri, tot);
  replay_pg(url, tot); /* the keyword form */
  /* refusals */
  const char *unknown[] = {"mpiexec", "-n", "1", g->replay, "no-such-app",
                           "--db", uri, NULL};
  int rc = run_offline(unknown);
  if (rc != 1 || !strstr(g->out, "no application 'no-such-app' is stored"))
    fail_msg("unknown application: exit %d:\n%s", rc, g->out);
  const char *noschema[] = {"mpiexec", "-n", "1", g->replay, "heavy-pg",
                            "--db", empty, NULL};
  rc = run_offline(noschema);
  if (rc != 1 || !strstr(g->out, "not an LA store"))
    fail_msg("empty database: exit %d:\n%s", rc, g->out);
  la_test_pg_stop(pg);
}

/* Writes a partition file of the 6^3 grid, rank of cell (i, j, k) by f. */
static const char *grid_part(const char *name,
                             unsigned (*f)(unsigned, unsigned, unsigned)) {
  static char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s", file(name));
  FILE *o = fopen(path, "w");
  assert_non_null(o);
  fprintf(o, "# %s of the 6x6x6 grid; parts 4\n", name);
  for (unsigned c = 0; c < 216; c++)
    fprintf(o, "%u %u\n", c, f(c % 6, c / 6 % 6, c / 36));
  assert_int_equal(fclose(o), 0);
  return path;
}
static unsigned strips(unsigned i, unsigned j, unsigned k) {
  (void)j, (void)k;
  return i * 4 / 6; /* i 0-1, 2, 3-4, 5 */
}
static unsigned blocks(unsigned i, unsigned j, unsigned k) {
  (void)k;
  return i / 3 + 2 * (j / 3);
}

/* Runs la-replay on wave-rec from the store copy with the mesh halo;
 * checks the halo figures of its summary. */
static void mesh_run(const char *np, const char *part, double boundary,
                     double nmax, double nmean, double bytes) {
  const char *rp[18] = {"mpiexec", "-n", np, g->replay, WAVE, "1:3",
                        "--db", store_copy(), "--halo-bytes-per-cell", "8",
                        "--no-la", "--quiet", "--calibrate", "0.05"};
  int n = 14;
  if (part) rp[n++] = "--partition", rp[n++] = part;
  rp[n] = NULL;
  int rc = run_offline(rp);
  if (rc != 0) fail_msg("la-replay (mesh halo) exited %d:\n%s", rc, g->out);
  const char *p = strstr(g->out, "la-replay summary:");
  if (!p || !strstr(p, " halo=mesh "))
    fail_msg("no mesh halo:\n%s", g->out);
  if (summary(g->out, "halo_boundary_cells") != boundary ||
      summary(g->out, "halo_neighbours_max") != nmax ||
      fabs(summary(g->out, "halo_neighbours_mean") - nmean) > 1e-9 ||
      summary(g->out, "halo_bytes_per_cycle") != bytes)
    fail_msg("%s: want boundary %g, neighbours %g/%g, %g bytes:\n%s",
             part ? part : "recorded", boundary, nmax, nmean, bytes,
             tail(g->out));
  print_message("%s", strstr(g->out, "halo: mesh"));
}

static void test_replay_mesh_halo(void **state) {
  (void)state;
  need_up();
  assert_non_null(store_copy());
  /* the recorded k-slabs: 36 cells each way */
  mesh_run("2", NULL, 72, 1, 1, 72 * 8);
  /* strips: 36 + 36 + 72 + 36 boundary cells, 216 sent */
  mesh_run("4", grid_part("strips.part", strips), 180, 2, 1.5, 216 * 8);
  /* blocks: 30 per block, 36 sent (18 to each side neighbour) */
  mesh_run("4", grid_part("blocks.part", blocks), 120, 2, 2, 144 * 8);
  /* no grid: the ring, said */
  const char *rp[] = {"mpiexec", "-n", "3", g->replay, HEAVY, "3:3",
                      "--db", store_copy(), "--halo-bytes-per-cell", "8",
                      "--halo", "64", "--no-la", "--quiet", "--calibrate",
                      "0.05", NULL};
  int rc = run_offline(rp);
  if (rc != 0) fail_msg("la-replay exited %d:\n%s", rc, g->out);
  assert_non_null(strstr(g->out,
                         "no mesh halo: rank 0 of the recording is not "
                         "placed in a global grid"));
  assert_non_null(strstr(g->out, " halo=ring "));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replay_recorded),
      cmocka_unit_test(test_replay_partition),
      cmocka_unit_test(test_replay_refusals),
      cmocka_unit_test(test_replay_db),
      cmocka_unit_test(test_replay_db_pg),
      cmocka_unit_test(test_replay_mesh_halo),
  };
  return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
