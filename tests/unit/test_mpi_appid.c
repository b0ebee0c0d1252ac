/* SPDX-License-Identifier: BSD-3-Clause */
/* test_mpi_appid.c: one application id per MPI job, with no variable set
 * (libla/mpi_appid.c), end to end with the real daemons.
 *
 * A real GlobalAgent and two real LocalAgents (hosts nodeA and nodeB) on
 * loopback; the wavetoy example under MPICH's Hydra as a two-"host" job:
 * `mpiexec -launcher fork -hosts localhost,127.0.0.1 -ppn 1`, one Hydra
 * proxy per host, rank 0 talking to nodeA's agent and rank 1 to nodeB's,
 * as on two nodes (each rank's parent is its own proxy, so the launcher's
 * environment alone gives each rank another id). Without LA_APP_ID the job
 * must be one application of 2 ranks whose every Trace-Set is complete,
 * its id ending in the random part rank 0 drew, and a second run right
 * after it another application; with LA_APP_ID_RANDOM=0 a third run's id
 * has no random part. Also: wavetoy
 * started without mpiexec (an MPI singleton); LA_APP_ID given to one rank
 * only (no rank waits for ever; that rank registers under its own id, the
 * other under rank 0's); and LA_APP_ID given to every rank (-genv). Then,
 * without agents, tests/apps/mpi_appid_app.c compiled at run time with
 * MPICH's and Open MPI's wrappers (each where installed): both ranks print
 * one id, rank 0's LA_APP_ID when only rank 0 has one.
 *
 * Assertions are on what a user sees: the GlobalAgent's SQLite store (apps,
 * ranks, trace_sets: docs/storage.md) and the program's exit status. Skips
 * without mpiexec or the wavetoy example. Every daemon and mpiexec process
 * group is stopped in the teardown; libla removes its IPC objects (checked
 * by the IPC count before and after).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "la_test_check.h"
#include "la_test_daemon.h"
#include "la_test_ipc.h"
#include "la_test_mpi.h"
#include "la_test_sql.h"
#include "la_test_stack.h"

#define RUN_MS 90000  /* one mpiexec run, then its group is killed */
#define WAIT_MS 20000 /* a stored or closed set */
#define WT_N 16       /* wavetoy grid 16^3 */
#define WT_STEPS 6    /* profiled cycles per run (16 buffers: none reused) */

static struct {
  la_test_stack_t s;
  la_test_daemon_t *lb; /* the second LocalAgent (nodeB) */
  char la_a[64], la_b[64];
  char mpiexec[600], wavetoy[1100];
  int sems0; /* semaphore sets before the test */
} T;

static int sem_count(void) {
  static int ids[4096];
  return la_test_sem_ids(ids, 4096);
}

static void dump_logs(void) {
  la_td_print_log_tail(T.s.ga, 3000);
  la_td_print_log_tail(T.s.la, 2000);
  la_td_print_log_tail(T.lb, 2000);
}
#define CHECK(cond, ...) LA_TD_CHECK(dump_logs(), cond, __VA_ARGS__)

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  if (la_td_find_on_path("mpiexec", T.mpiexec, sizeof T.mpiexec) != 0) {
    print_message("skip: mpiexec not found on PATH (install mpich)\n");
    skip();
  }
  if (la_td_find_bin("../examples/wavetoy", T.wavetoy, sizeof T.wavetoy) !=
      0) {
    snprintf(T.wavetoy, sizeof T.wavetoy, "build/examples/wavetoy");
    if (access(T.wavetoy, X_OK) != 0) {
      print_message("skip: wavetoy not built (make build/examples/wavetoy)\n");
      skip();
    }
  }
  if (la_ts_init(&T.s) != 0) {
    print_message("skip: daemons not built\n");
    skip();
  }
  T.sems0 = sem_count();
  if (la_ts_start_global(&T.s, NULL) != 0) fail_msg("GlobalAgent");
  if (la_test_start_la(T.s.la, T.s.ga_addr, T.s.secret, "nodeA", 10000,
                       T.la_a, sizeof T.la_a) != 0)
    fail_msg("LocalAgent nodeA");
  T.lb = la_td_new("la-localagent");
  if (!T.lb || la_test_start_la(T.lb, T.s.ga_addr, T.s.secret, "nodeB", 10000,
                                T.la_b, sizeof T.la_b) != 0)
    fail_msg("LocalAgent nodeB");
  char st[64];
  if (la_test_wait_linked(T.s.la, WAIT_MS, st, sizeof st) != 0 ||
      la_test_wait_linked(T.lb, WAIT_MS, st, sizeof st) != 0)
    fail_msg("LocalAgents not linked: %s", st);
  return 0;
}

static int teardown(void **state) {
  la_td_free(T.lb);
  la_ts_free(&T.s);
  /* every rank has ended and the agents are gone: no semaphore set of
   * theirs may be left (the segments were marked for removal at creation) */
  int now = sem_count();
  if (now > T.sems0) fail_msg("semaphore sets left: %d before, %d now",
                              T.sems0, now);
  return 0;
}

static long long db_ll(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static long long db_ll(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  long long v = la_test_sql_vll(T.s.db, fmt, ap);
  va_end(ap);
  return v;
}

/* Runs the two-host job: `mpiexec [extra...] -launcher fork -hosts
 * localhost,127.0.0.1 -ppn 1 -n 1 -env LA_AGENT A [env0] wavetoy : -n 1
 * -env LA_AGENT B [env1] wavetoy`, with 16 buffers, period 1. env0/env1:
 * one more "NAME VALUE" pair for that rank (NULL: none). Fails unless it
 * exits 0 in time. */
static void run_two_hosts(const char *const *extra, const char *const *env0,
                          const char *const *env1) {
  la_td_argv_t a;
  la_td_argv_init(&a);
  la_td_argv_add(&a, "%s", T.mpiexec);
  for (int i = 0; extra && extra[i]; i++) la_td_argv_add(&a, "%s", extra[i]);
  la_td_argv_add(&a, "-launcher");
  la_td_argv_add(&a, "fork");
  la_td_argv_add(&a, "-hosts");
  la_td_argv_add(&a, "localhost,127.0.0.1");
  la_td_argv_add(&a, "-ppn");
  la_td_argv_add(&a, "1");
  for (int r = 0; r < 2; r++) {
    const char *const *e = r ? env1 : env0;
    if (r) la_td_argv_add(&a, ":");
    la_td_argv_add(&a, "-n");
    la_td_argv_add(&a, "1");
    la_td_argv_add(&a, "-env");
    la_td_argv_add(&a, "LA_AGENT");
    la_td_argv_add(&a, "%s", r ? T.la_b : T.la_a);
    if (e) {
      la_td_argv_add(&a, "-env");
      la_td_argv_add(&a, "%s", e[0]);
      la_td_argv_add(&a, "%s", e[1]);
    }
    la_td_argv_add(&a, "%s", T.wavetoy);
    la_td_argv_add(&a, "--n");
    la_td_argv_add(&a, "%d", WT_N);
    la_td_argv_add(&a, "--steps");
    la_td_argv_add(&a, "%d", WT_STEPS);
  }
  static const char *env[] = {"LA_BUFFERS=16", "LA_PERIOD=1", NULL};
  static char out[16384];
  int rc = la_td_run(a.v, env, RUN_MS, out, sizeof out);
  CHECK(rc == 0, "mpiexec exited %d:\n%s", rc, out);
  CHECK(strstr(out, "wavetoy: checksum") != NULL, "no checksum:\n%s", out);
}

/* Waits until app_id has `sets` closed Trace-Sets, then checks that every
 * one of them is complete with its nprocs ranks. */
static void expect_complete(const char *app_id, int nprocs, int sets) {
  CHECK(la_test_sql_wait(T.s.db, sets, WAIT_MS,
                         "SELECT count(*) FROM trace_sets WHERE app_id = '%s' "
                         "AND closed = 1",
                         app_id) == 0,
        "%s: %lld of %d sets closed", app_id,
        db_ll("SELECT count(*) FROM trace_sets WHERE app_id = '%s' AND "
              "closed = 1",
              app_id),
        sets);
  CHECK(db_ll("SELECT nprocs FROM apps WHERE app_id = '%s'", app_id) == nprocs,
        "%s: nprocs %lld", app_id,
        db_ll("SELECT nprocs FROM apps WHERE app_id = '%s'", app_id));
  CHECK(db_ll("SELECT count(*) FROM trace_sets WHERE app_id = '%s'",
              app_id) == sets,
        "%s: %lld sets", app_id,
        db_ll("SELECT count(*) FROM trace_sets WHERE app_id = '%s'", app_id));
  CHECK(db_ll("SELECT count(*) FROM trace_sets WHERE app_id = '%s' AND "
              "complete = 1 AND n_ranks_present = %d",
              app_id, nprocs) == sets,
        "%s: %lld of %d sets complete", app_id,
        db_ll("SELECT count(*) FROM trace_sets WHERE app_id = '%s' AND "
              "complete = 1",
              app_id),
        sets);
}

/* Whether id ends in a random part as libla draws it: ".<8 base32>". */
static int has_random_part(const char *id) {
  const char *dot = strrchr(id, '.');
  return dot && strlen(dot + 1) == 8 &&
         strspn(dot + 1, "abcdefghijklmnopqrstuvwxyz234567") == 8;
}

/* The ids of the applications stored, in creation order (at most 4). */
static int app_ids(char ids[4][64]) {
  return la_test_sql_texts(T.s.db, ids, 4,
                           "SELECT app_id FROM apps ORDER BY t_created_ns");
}

static void test_two_hosts_one_application(void **state) {
  char ids[4][64];
  run_two_hosts(NULL, NULL, NULL);
  CHECK(la_test_sql_wait(T.s.db, 1, WAIT_MS, "SELECT count(*) FROM apps") == 0,
        "no application stored");
  CHECK(app_ids(ids) == 1, "%lld applications, first %s",
        db_ll("SELECT count(*) FROM apps"), ids[0]);
  print_message("run 1: %s\n", ids[0]);
  /* rank 0's id: the proxy's pid and start time, and rank 0's host */
  CHECK(!strncmp(ids[0], "wavetoy.h", 9), "id %s", ids[0]);
  expect_complete(ids[0], 2, WT_STEPS);
  /* the two ranks came through the two LocalAgents */
  CHECK(db_ll("SELECT count(DISTINCT host) FROM ranks WHERE app_id = '%s'",
              ids[0]) == 2,
        "ranks of %s not on two hosts", ids[0]);

  /* the same job again: another application */
  run_two_hosts(NULL, NULL, NULL);
  CHECK(la_test_sql_wait(T.s.db, 2, WAIT_MS, "SELECT count(*) FROM apps") == 0,
        "second run not stored");
  CHECK(app_ids(ids) == 2, "%lld applications",
        db_ll("SELECT count(*) FROM apps"));
  print_message("run 2: %s\n", ids[1]);
  CHECK(strcmp(ids[0], ids[1]) != 0, "both runs are %s", ids[0]);
  expect_complete(ids[1], 2, WT_STEPS);
  /* each ends in the random part rank 0 drew (no other user can predict
   * the id), which every rank took with the rest */
  CHECK(has_random_part(ids[0]) && has_random_part(ids[1]),
        "no random part: %s, %s", ids[0], ids[1]);

  /* LA_APP_ID_RANDOM=0 on every rank: the id as derived, no random part */
  const char *plain[] = {"-genv", "LA_APP_ID_RANDOM", "0", NULL};
  run_two_hosts(plain, NULL, NULL);
  CHECK(la_test_sql_wait(T.s.db, 3, WAIT_MS, "SELECT count(*) FROM apps") == 0,
        "third run not stored");
  CHECK(app_ids(ids) == 3, "%lld applications",
        db_ll("SELECT count(*) FROM apps"));
  print_message("run 3 (LA_APP_ID_RANDOM=0): %s\n", ids[2]);
  CHECK(!strncmp(ids[2], "wavetoy.h", 9) && !has_random_part(ids[2]), "id %s",
        ids[2]);
  expect_complete(ids[2], 2, WT_STEPS);
}

/* wavetoy without mpiexec: MPI_Init makes a singleton, which agrees with
 * itself. */
static void test_singleton(void **state) {
  char agent[100], out[8192], ids[4][64];
  snprintf(agent, sizeof agent, "LA_AGENT=%s", T.la_a);
  const char *env[] = {agent, "LA_BUFFERS=16", NULL};
  char n[16], steps[16];
  snprintf(n, sizeof n, "%d", WT_N);
  snprintf(steps, sizeof steps, "%d", WT_STEPS);
  const char *argv[] = {T.wavetoy, "--n", n, "--steps", steps, NULL};
  int rc = la_td_run(argv, env, RUN_MS, out, sizeof out);
  CHECK(rc == 0, "wavetoy exited %d:\n%s", rc, out);
  CHECK(la_test_sql_wait(T.s.db, 1, WAIT_MS, "SELECT count(*) FROM apps") == 0,
        "no application stored");
  CHECK(app_ids(ids) == 1, "%lld applications",
        db_ll("SELECT count(*) FROM apps"));
  print_message("singleton: %s\n", ids[0]);
  expect_complete(ids[0], 1, WT_STEPS);
}

/* LA_APP_ID on rank 1 only: nobody waits (the broadcast runs on both), rank
 * 1 registers under its own id, rank 0 under the id it derived. Neither
 * application completes a set: each misses the other's rank. */
static void test_app_id_on_one_rank(void **state) {
  const char *env1[] = {"LA_APP_ID", "mixed-1"};
  char ids[4][64];
  run_two_hosts(NULL, NULL, env1);
  CHECK(la_test_sql_wait(T.s.db, 2, WAIT_MS, "SELECT count(*) FROM apps") == 0,
        "%lld applications", db_ll("SELECT count(*) FROM apps"));
  CHECK(db_ll("SELECT count(*) FROM ranks WHERE app_id = 'mixed-1' AND rank "
              "= 1") == 1,
        "rank 1 is not mixed-1");
  CHECK(db_ll("SELECT count(*) FROM ranks WHERE app_id LIKE 'wavetoy.h%%' "
              "AND rank = 0") == 1,
        "rank 0 has no derived id");
  CHECK(app_ids(ids) == 2, "applications");
  CHECK(db_ll("SELECT count(*) FROM trace_sets WHERE complete = 1") == 0,
        "a set completed");
}

/* LA_APP_ID given to every rank (-genv): that id, one application. */
static void test_app_id_on_every_rank(void **state) {
  const char *extra[] = {"-genv", "LA_APP_ID", "given-1", NULL};
  char ids[4][64];
  run_two_hosts(extra, NULL, NULL);
  CHECK(la_test_sql_wait(T.s.db, 1, WAIT_MS, "SELECT count(*) FROM apps") == 0,
        "no application stored");
  CHECK(app_ids(ids) == 1 && !strcmp(ids[0], "given-1"), "%lld apps, %s",
        db_ll("SELECT count(*) FROM apps"), ids[0]);
  expect_complete("given-1", 2, WT_STEPS);
}

/* ------------------------------------------ both ABIs, without agents -- */

/* Compiles tests/apps/mpi_appid_app.c with the compiler wrapper cc into
 * dir/name against build/lib/libla.a. 0, or -1 (the output printed). */
static int build_app(const char *cc, const char *dir, const char *name,
                     char *prog, size_t len) {
  snprintf(prog, len, "%s/%s", dir, name);
  const char *argv[] = {cc, "-Ibuild/include", "-o", prog,
                        "tests/apps/mpi_appid_app.c", "build/lib/libla.a",
                        "-lprotobuf-c", "-ldl", "-lpthread", "-lm", NULL};
  char out[8192];
  int rc = la_td_run(argv, NULL, RUN_MS, out, sizeof out);
  if (rc != 0) print_message("%s exited %d:\n%s\n", cc, rc, out);
  return rc == 0 ? 0 : -1;
}

/* Runs prog as 2 ranks with launcher (its own arguments first), rank 0
 * under `env LA_APP_ID=first` when first is not NULL; checks both ranks
 * print one id, want when not NULL, else one that starts with
 * "appidtest.". With LA_VERBOSE=1 no rank may say it "registers apart
 * from rank 0": they all took one id; nor, under LA_APP_ID, that the id
 * has a random part. */
static void run_app(const char *const *launcher, const char *prog,
                    const char *first, const char *want) {
  la_td_argv_t a;
  la_td_argv_init(&a);
  la_td_argv_extend(&a, launcher);
  la_td_argv_add(&a, "-n");
  la_td_argv_add(&a, "1");
  if (first) {
    la_td_argv_add(&a, "env");
    la_td_argv_add(&a, "LA_APP_ID=%s", first);
  }
  la_td_argv_add(&a, "%s", prog);
  la_td_argv_add(&a, ":");
  la_td_argv_add(&a, "-n");
  la_td_argv_add(&a, "1");
  la_td_argv_add(&a, "%s", prog);
  char agent[64];
  snprintf(agent, sizeof agent, "LA_AGENT=127.0.0.1:%d", la_td_closed_port());
  const char *env[] = {agent, "LA_VERBOSE=1", NULL};
  static char out[16384];
  int rc = la_td_run(a.v, env, RUN_MS, out, sizeof out);
  if (rc != 0) fail_msg("%s exited %d:\n%s", launcher[0], rc, out);
  if (strstr(out, "registers apart"))
    fail_msg("a rank says it registers apart under one id:\n%s", out);
  /* rank 0's LA_APP_ID has no random part: no rank may say it has one */
  if (first && strstr(out, "random"))
    fail_msg("a rank says LA_APP_ID=%s has a random part:\n%s", first, out);
  char id[2][200] = {"", ""};
  for (int r = 0; r < 2; r++) {
    char key[32];
    snprintf(key, sizeof key, "rank %d id ", r);
    const char *p = strstr(out, key);
    if (!p) fail_msg("no line of rank %d:\n%s", r, out);
    p += strlen(key);
    snprintf(id[r], sizeof id[r], "%.*s", (int)strcspn(p, " \n"), p);
  }
  print_message("%s: %s / %s\n", launcher[0], id[0], id[1]);
  if (strcmp(id[0], id[1]) != 0)
    fail_msg("two ids: %s and %s:\n%s", id[0], id[1], out);
  if (want ? strcmp(id[0], want) != 0
           : strncmp(id[0], "appidtest.", 10) != 0 || !has_random_part(id[0]))
    fail_msg("id %s, expected %s", id[0],
             want ? want : "appidtest.*.<random part>");
}

/* Each MPI library found (MPICH: mpicc and mpiexec; Open MPI: mpicc.openmpi
 * and mpirun.openmpi): both ranks take rank 0's id, also when only rank 0
 * has LA_APP_ID (the broadcast carries it), which the launcher's
 * environment alone cannot give rank 1. */
static void test_both_abis(void **state) {
  char tmpl[600], prog[700], path[600];
  const char *tmp = getenv("TMPDIR");
  snprintf(tmpl, sizeof tmpl, "%s/la-appid.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (access("tests/apps/mpi_appid_app.c", R_OK) != 0 ||
      access("build/lib/libla.a", R_OK) != 0) {
    print_message("skip: run from the source tree with build/lib/libla.a\n");
    skip();
  }
  assert_non_null(mkdtemp(tmpl));
  int ran = 0;
  static const char *mpich[] = {"mpiexec", NULL};
  static const char *ompi[] = {"mpirun.openmpi", "--allow-run-as-root",
                               "--oversubscribe", NULL};
  struct {
    const char *cc, *name;
    const char *const *launcher;
  } libs[] = {{"mpicc.mpich", "app_mpich", mpich},
              {"mpicc.openmpi", "app_ompi", ompi}};
  for (int i = 0; i < 2; i++) {
    if (la_td_find_on_path(libs[i].cc, path, sizeof path) != 0 ||
        la_td_find_on_path(libs[i].launcher[0], path, sizeof path) != 0) {
      print_message("%s or %s not found: not tried\n", libs[i].cc,
                    libs[i].launcher[0]);
      continue;
    }
    if (build_app(libs[i].cc, tmpl, libs[i].name, prog, sizeof prog) != 0)
      fail_msg("%s could not build the test program", libs[i].cc);
    run_app(libs[i].launcher, prog, NULL, NULL);
    run_app(libs[i].launcher, prog, "first-1", "first-1");
    /* a character an id may not hold becomes '_', on both ranks */
    run_app(libs[i].launcher, prog, "first/2", "first_2");
    unlink(prog);
    ran++;
  }
  rmdir(tmpl);
  if (!ran) {
    print_message("skip: no MPI compiler wrapper and launcher found\n");
    skip();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_two_hosts_one_application, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_singleton, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_id_on_one_rank, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_app_id_on_every_rank, setup,
                                      teardown),
      cmocka_unit_test(test_both_abis),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
