/* SPDX-License-Identifier: BSD-3-Clause */
/* test_memory_share.c: one user cannot take the LocalAgent's memory,
 * end to end.
 *
 * The real daemons (la_test_agent.h) and applications as forked children
 * that use libla for real, each registering n elements in k channels and
 * told when to go on through a pipe. A registration costs the agent an
 * estimate from its elements and channels (localagent/memshare.h; the
 * test's metric "custom" has no robust weights and its several channels no
 * history: (k + 1) x 16 + 1 bytes per element; one channel adds its
 * history and its box or range pieces); beyond the user's share,
 * agent.max_memory_per_uid, it is refused, and the application reads why
 * at LA_register (the setting and the sizes); another user still
 * registers; the status shows the estimate held (app_memory_bytes) and the
 * refusals (registrations_refused_memory), and the estimate is back to 0
 * once every application ended. Every wait is bounded; every child is
 * reaped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_test_agent.h"
#include "la_test_child.h"

#define WAIT_MS 20000
#define NOBODY 65534
#define N 100000 /* elements of each application */

static la_test_agent_t agent;

typedef struct kid {
  pid_t pid;
  int res, go; /* its answer; its go-ahead (a byte) */
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

/* The child: registers app_id (N elements, channels channels) as uid (0:
 * as is), answers with LA_register's rc and LA_lastError, waits for the
 * go-ahead, runs one cycle and finalizes. */
static void kid_main(const char *app_id, int channels, int uid, int res,
                     int go) {
  if (uid > 0 && la_test_become(uid) != 0) _exit(8);
  LA_setAppId(app_id);
  LA_setBuffers(2);
  LA_setProbeStartFunc(probe_zero, NULL);
  LA_setProbeStopFunc(probe_one, NULL);
  LA_setMetric("custom");
  char name[16];
  for (int c = 0; c < channels; c++) {
    snprintf(name, sizeof name, "ch%d", c);
    if (LA_channel(name) < 0) _exit(7);
  }
  answer_t a;
  memset(&a, 0, sizeof a);
  a.rc = LA_register("memshare", 0, 1, N);
  snprintf(a.msg, sizeof a.msg, "%s", a.rc ? LA_lastError() : "");
  if (write(res, &a, sizeof a) != (ssize_t)sizeof a) _exit(9);
  if (a.rc) _exit(1);
  char b;
  while (read(go, &b, 1) < 0) {
  }
  LA_startProbe(0);
  LA_stopProbe(0);
  if (LA_dataXfer() != 0) _exit(2);
  _exit(LA_finalize() != 0 ? 3 : 0);
}

/* Starts a child (kid_main) and returns its registration's answer. */
static answer_t spawn(kid_t *k, const char *app_id, int channels, int uid) {
  int res[2], go[2];
  assert_int_equal(pipe(res), 0);
  assert_int_equal(pipe(go), 0);
  k->pid = la_test_fork();
  assert_true(k->pid >= 0);
  if (k->pid == 0) {
    close(res[0]);
    close(go[1]);
    kid_main(app_id, channels, uid, res[1], go[0]);
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
  fprintf(stderr, "%s (%d channels, uid %d): rc %d%s%s\n", app_id, channels,
          uid, a.rc, a.rc ? ": " : "", a.msg);
  return a;
}

/* Lets the child go on and returns its exit status. */
static int finish(kid_t *k) {
  if (write(k->go, "g", 1) != 1) { /* a refused child is gone */
  }
  close(k->go);
  int st = la_test_wait(k->pid);
  close(k->res);
  return st;
}

/* agent.max_memory_per_uid = 20M (20971520 bytes): two applications of
 * 10^5 elements in 4 channels (8.1 MB each) fit, a third does not, nor one
 * of 16 channels (27.3 MB) alone; another user's registers. */
static void test_memory_share_per_uid(void **state) {
  (void)state;
  la_td_unset_la_env();
  const char *extra[] = {"--agent.max_memory_per_uid=20M",
                         "--agent.max_memory=64M", NULL};
  if (la_ta_start(&agent, extra) != 0) fail_msg("the daemons did not start");
  const long long one = (4 + 1) * 16LL * N + N; /* 8100000 */
  kid_t k[5];
  assert_int_equal(spawn(&k[0], "mem-0", 4, 0).rc, 0);
  assert_int_equal(la_ta_local_stat(&agent, "app_memory_bytes"), one);
  assert_int_equal(spawn(&k[1], "mem-1", 4, 0).rc, 0);
  assert_int_equal(la_ta_local_stat(&agent, "app_memory_bytes"), 2 * one);
  answer_t a = spawn(&k[2], "mem-2", 4, 0);
  assert_int_equal(a.rc, LA_EREFUSED);
  char want[200];
  snprintf(want, sizeof want,
           "100000 elements x 4 channel(s) need %lld bytes of LocalAgent "
           "memory; this user's registrations hold %lld of "
           "agent.max_memory_per_uid = 20971520",
           one, 2 * one);
  assert_non_null(strstr(a.msg, want));
  assert_int_equal(finish(&k[2]), 1);
  /* a large multi-channel application alone is over the share */
  a = spawn(&k[2], "mem-big", 16, 0);
  assert_int_equal(a.rc, LA_EREFUSED);
  assert_non_null(strstr(a.msg, "need 27300000 bytes"));
  assert_non_null(strstr(a.msg, "agent.max_memory_per_uid"));
  assert_int_equal(finish(&k[2]), 1);
  assert_int_equal(la_ta_local_stat(&agent, "registrations_refused_memory"),
                   2);
  assert_int_equal(la_ta_local_stat(&agent, "app_memory_bytes"), 2 * one);
  if (geteuid() == 0) { /* another user: its own share */
    assert_int_equal(spawn(&k[3], "mem-other", 4, NOBODY).rc, 0);
    assert_int_equal(la_ta_local_stat(&agent, "app_memory_bytes"), 3 * one);
    assert_int_equal(finish(&k[3]), 0);
  }
  assert_int_equal(finish(&k[0]), 0);
  assert_int_equal(finish(&k[1]), 0);
  /* every application ended: nothing is held */
  assert_int_equal(la_td_wait_status_at_most(agent.st.la, "app_memory_bytes",
                                             0, WAIT_MS),
                   0);
  assert_int_equal(la_ta_local_stat(&agent, "apps"), 0);
  la_ta_free(&agent);
}

/* agent.max_memory bounds all users together: with a share of 20M each
 * and 20M in all, one user's application of 8.1 MB fits, another's too,
 * and a third (of either) is refused naming agent.max_memory. */
static void test_memory_total(void **state) {
  (void)state;
  if (geteuid() != 0) skip();
  la_td_unset_la_env();
  const char *extra[] = {"--agent.max_memory_per_uid=20M",
                         "--agent.max_memory=20M", NULL};
  if (la_ta_start(&agent, extra) != 0) fail_msg("the daemons did not start");
  kid_t k[3];
  assert_int_equal(spawn(&k[0], "tot-0", 4, 0).rc, 0);
  assert_int_equal(spawn(&k[1], "tot-1", 4, NOBODY).rc, 0);
  answer_t a = spawn(&k[2], "tot-2", 4, NOBODY);
  assert_int_equal(a.rc, LA_EREFUSED);
  assert_non_null(strstr(a.msg, "all users' registrations hold 16200000 of "
                                "agent.max_memory = 20971520"));
  assert_int_equal(finish(&k[2]), 1);
  assert_int_equal(finish(&k[0]), 0);
  assert_int_equal(finish(&k[1]), 0);
  assert_int_equal(la_td_wait_status_at_most(agent.st.la, "app_memory_bytes",
                                             0, WAIT_MS),
                   0);
  la_ta_free(&agent);
}

/* A registration of one channel may store its box- and range-probed
 * cycles one value per piece: the estimate counts the most pieces its
 * piece table holds (2048 for 10^5 elements), each as an element (16 + 1
 * bytes and history.representatives = 4 x 9) plus its geometry (24
 * bytes): 53 x 10^5 + 77 x 2048 = 5457696 bytes. With a share of
 * 10700000, room for two such registrations without the pieces, one fits
 * and holds that, a second is refused naming the pieces. */
static void test_memory_share_pieces(void **state) {
  (void)state;
  la_td_unset_la_env();
  const char *extra[] = {"--agent.max_memory_per_uid=10700000",
                         "--agent.max_memory=64M",
                         "--history.representatives=4", NULL};
  if (la_ta_start(&agent, extra) != 0) fail_msg("the daemons did not start");
  const long long one = 53LL * N + 77LL * 2048; /* 5457696 */
  kid_t k[2];
  assert_int_equal(spawn(&k[0], "piece-0", 0, 0).rc, 0);
  assert_int_equal(la_ta_local_stat(&agent, "app_memory_bytes"), one);
  answer_t a = spawn(&k[1], "piece-1", 0, 0);
  assert_int_equal(a.rc, LA_EREFUSED);
  char want[256];
  snprintf(want, sizeof want,
           "100000 elements x 1 channel(s) and up to 2048 box or range "
           "pieces need %lld bytes of LocalAgent memory; this user's "
           "registrations hold %lld of agent.max_memory_per_uid = 10700000",
           one, one);
  assert_non_null(strstr(a.msg, want));
  assert_int_equal(finish(&k[1]), 1);
  assert_int_equal(finish(&k[0]), 0);
  assert_int_equal(la_td_wait_status_at_most(agent.st.la, "app_memory_bytes",
                                             0, WAIT_MS),
                   0);
  la_ta_free(&agent);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_memory_share_per_uid),
      cmocka_unit_test(test_memory_total),
      cmocka_unit_test(test_memory_share_pieces),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
