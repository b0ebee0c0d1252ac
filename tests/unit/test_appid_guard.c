/* SPDX-License-Identifier: BSD-3-Clause */
/* test_appid_guard.c: who may register under an application id at one
 * LocalAgent, end to end.
 *
 * The real daemons (la_test_agent.h) and applications as forked children
 * that use libla for real, each told when to go on through a pipe and
 * answering through another: a second process registering a (app id, rank)
 * that is registered already is refused at LA_register, told by which pid
 * (the first keeps its rank); a process of another uid is refused any rank
 * of an id in use, told only that the id is in use (nothing of the other
 * user's processes); once the id's last local rank ended, the id is free
 * at the LocalAgent (the GlobalAgent still refuses another uid's ranks
 * under it: test_appid_owner);
 * one user's processes cannot take every application slot.
 * Every wait is bounded; every child is reaped.
 */
#include <setjmp.h>
#include <signal.h>
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
#include "la_test_child.h"

#define WAIT_MS 20000
#define NOBODY 65534

static la_test_agent_t agent;

typedef struct kid {
  pid_t pid;
  int res, go; /* its answers; its go-ahead (a byte) */
} kid_t;

typedef struct answer {
  int rc;
  char msg[512];
} answer_t;

static double probe_zero(long e, void *arg) {
  (void)e, (void)arg;
  return 0;
}

static double probe_one(long e, void *arg) {
  (void)e, (void)arg;
  return 1;
}

/* The child: registers rank of nprocs under app_id as uid (0: as is),
 * answers with LA_register's rc and LA_lastError, waits for the go-ahead,
 * runs cycles cycles and finalizes. */
static void kid_main(const char *app_id, int rank, int nprocs, int uid,
                     int cycles, int res, int go) {
  if (uid > 0 && la_test_become(uid) != 0) _exit(8);
  LA_setAppId(app_id);
  LA_setPeriod(1);
  LA_setBuffers(4);
  LA_setPolicy(LA_POLICY_WAIT);
  LA_setProbeStartFunc(probe_zero, NULL);
  LA_setProbeStopFunc(probe_one, NULL);
  LA_setMetric("custom");
  answer_t a;
  memset(&a, 0, sizeof a);
  a.rc = LA_register("guard", rank, nprocs, 8);
  snprintf(a.msg, sizeof a.msg, "%s", a.rc ? LA_lastError() : "");
  if (write(res, &a, sizeof a) != (ssize_t)sizeof a) _exit(9);
  if (a.rc) _exit(1);
  char b;
  while (read(go, &b, 1) < 0) {
  }
  for (int c = 0; c < cycles; c++) {
    for (long e = 0; e < 8; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    if (LA_dataXfer() != 0) _exit(2);
  }
  _exit(LA_finalize() != 0 ? 3 : 0);
}

/* Starts a child (kid_main) and returns its registration's answer. */
static answer_t spawn(kid_t *k, const char *app_id, int rank, int nprocs,
                      int uid, int cycles) {
  int res[2], go[2];
  assert_int_equal(pipe(res), 0);
  assert_int_equal(pipe(go), 0);
  k->pid = la_test_fork();
  assert_true(k->pid >= 0);
  if (k->pid == 0) {
    close(res[0]);
    close(go[1]);
    kid_main(app_id, rank, nprocs, uid, cycles, res[1], go[0]);
  }
  close(res[1]);
  close(go[0]);
  k->res = res[0];
  k->go = go[1];
  answer_t a;
  memset(&a, 0, sizeof a);
  a.rc = -9999;
  size_t got = 0;
  while (got < sizeof a) {
    ssize_t r = read(k->res, (char *)&a + got, sizeof a - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  if (got != sizeof a) snprintf(a.msg, sizeof a.msg, "child said nothing");
  return a;
}

/* Lets the child go on and returns its exit status. */
static int finish(kid_t *k) {
  /* a byte, not only the close: later children hold copies of this end */
  /* (a refused child is gone: nothing reads it then) */
  if (write(k->go, "g", 1) != 1) {
  }
  close(k->go);
  int st = la_test_wait(k->pid);
  close(k->res);
  return st;
}

static int setup(void **state) {
  (void)state;
  la_td_unset_la_env();
  if (la_ta_start(&agent, NULL) != 0) fail_msg("the daemons did not start");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  la_ta_free(&agent);
  return 0;
}

/* Two processes of one user as the same rank of one id: the second is
 * refused, told the id, the rank and the first one's pid; the first keeps
 * its rank, and another rank of the id registers. */
static void test_same_rank_twice(void **state) {
  (void)state;
  long long refused0 = la_ta_local_stat(&agent, "registrations_refused");
  kid_t k1, k2, k3;
  answer_t a = spawn(&k1, "dup-1", 0, 2, 0, 2);
  assert_int_equal(a.rc, 0);
  a = spawn(&k2, "dup-1", 0, 2, 0, 2);
  char want[128];
  snprintf(want, sizeof want, "app id dup-1 rank 0 is already registered by "
           "pid %d", (int)k1.pid);
  fprintf(stderr, "second registration: rc %d: %s\n", a.rc, a.msg);
  assert_true(a.rc < 0);
  assert_int_equal(a.rc, LA_EREFUSED);
  assert_non_null(strstr(a.msg, want));
  a = spawn(&k3, "dup-1", 1, 2, 0, 2);
  assert_int_equal(a.rc, 0);
  assert_int_equal(finish(&k2), 1);
  assert_int_equal(finish(&k1), 0);
  assert_int_equal(finish(&k3), 0);
  assert_true(la_ta_local_stat(&agent, "registrations_refused") >= refused0 + 1);
  /* both ranks' cycles, each once */
  assert_int_equal(la_ta_wait_ended(&agent, 4, 2, WAIT_MS), 0);
  assert_int_equal(la_ta_ntraces(&agent, "dup-1"), 4);
}

/* A process of another uid under an id in use: refused for any rank, told
 * only that the id is in use (no pid, no rank of the other user's); once
 * the id's only local rank ended, it registers. */
static void test_other_user(void **state) {
  (void)state;
  if (geteuid() != 0) skip();
  kid_t k1, k2, k3, k4;
  answer_t a = spawn(&k1, "own-1", 0, 2, 0, 1);
  assert_int_equal(a.rc, 0);
  char pid[32];
  snprintf(pid, sizeof pid, "%d", (int)k1.pid);
  a = spawn(&k2, "own-1", 1, 2, NOBODY, 1);
  fprintf(stderr, "another user, rank 1: rc %d: %s\n", a.rc, a.msg);
  assert_int_equal(a.rc, LA_EREFUSED);
  assert_non_null(strstr(a.msg, "app id own-1 is in use by another user"));
  assert_null(strstr(a.msg, pid));
  a = spawn(&k3, "own-1", 0, 2, NOBODY, 1);
  fprintf(stderr, "another user, rank 0: rc %d: %s\n", a.rc, a.msg);
  assert_int_equal(a.rc, LA_EREFUSED);
  assert_non_null(strstr(a.msg, "app id own-1 is in use by another user"));
  assert_null(strstr(a.msg, pid));
  assert_null(strstr(a.msg, "already registered"));
  assert_int_equal(finish(&k2), 1);
  assert_int_equal(finish(&k3), 1);
  assert_int_equal(finish(&k1), 0);
  assert_int_equal(la_td_wait_log(agent.st.la, "own-1 rank 0 ended", WAIT_MS),
                   0);
  /* free at this LocalAgent; the GlobalAgent keeps the id its first
   * uid's (test_appid_owner): it refuses the rank, and the program is told
   * (at its one LA_dataXfer, exit 2, when the refusal came by then) */
  long long refused0 = la_ta_local_stat(&agent, "ranks_refused_upstream");
  a = spawn(&k4, "own-1", 1, 2, NOBODY, 1);
  assert_int_equal(a.rc, 0);
  assert_int_equal(la_td_wait_status(agent.st.ga, "appid_refused_starts", 1,
                                     WAIT_MS),
                   0);
  assert_int_equal(la_td_wait_status(agent.st.la, "ranks_refused_upstream",
                                     refused0 + 1, WAIT_MS),
                   0);
  int st = finish(&k4);
  assert_true(st == 0 || st == 2);
  assert_int_equal(la_ta_app_int(&agent, "own-1",
                                 "SELECT count(*) FROM ranks WHERE "
                                 "app_id = '%s' AND rank = 1"),
                   0);
}

/* One user cannot fill max_apps for everyone: with max_apps 4 and
 * max_apps_per_uid 3, a fourth process of one user is refused with the
 * share named, and another user's process still registers. */
static void test_one_user_cannot_fill_max_apps(void **state) {
  (void)state;
  if (geteuid() != 0) skip();
  la_ta_free(&agent);
  const char *extra[] = {"--agent.max_apps=4", "--agent.max_apps_per_uid=3",
                         NULL};
  if (la_ta_start(&agent, extra) != 0) fail_msg("the daemons did not start");
  kid_t k[5];
  char id[32];
  for (int i = 0; i < 3; i++) {
    snprintf(id, sizeof id, "share-%d", i);
    assert_int_equal(spawn(&k[i], id, 0, 1, 0, 1).rc, 0);
  }
  answer_t a = spawn(&k[3], "share-3", 0, 1, 0, 1);
  fprintf(stderr, "fourth of one user: rc %d: %s\n", a.rc, a.msg);
  assert_int_equal(a.rc, LA_EREFUSED);
  assert_non_null(strstr(a.msg, "max_apps_per_uid = 3"));
  a = spawn(&k[4], "share-other", 0, 1, NOBODY, 1);
  fprintf(stderr, "another user: rc %d: %s\n", a.rc, a.msg);
  assert_int_equal(a.rc, 0);
  assert_int_equal(finish(&k[3]), 1);
  for (int i = 0; i < 3; i++) assert_int_equal(finish(&k[i]), 0);
  assert_int_equal(finish(&k[4]), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_same_rank_twice, setup, teardown),
      cmocka_unit_test_setup_teardown(test_other_user, setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_user_cannot_fill_max_apps,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
