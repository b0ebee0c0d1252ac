/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rerun.c: a second run under an application id that already ended,
 * end to end.
 *
 * The real daemons (la_test_agent.h); each run is a forked child that uses
 * libla for real (la_ta_run_rank). The second run's traces have keys the
 * first run stored: the GlobalAgent keeps the first run's, drops the
 * second's, counts them in conflicts (`lactl status`) and says by name what
 * happened and what to do, once a second at most. A resend of the first run
 * (the same trace again) is only a duplicate.
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
#define N 16
#define CYCLES 3

static la_test_agent_t agent;

static double value(long e, uint64_t cycle, int rank) {
  return 1.0 + (double)e + 100.0 * (double)cycle + 1000.0 * rank;
}

/* Runs the application app_id (2 ranks, CYCLES cycles) as two children;
 * both must succeed. */
static void run_app(const char *app_id) {
  pid_t k[2];
  for (int r = 0; r < 2; r++) {
    k[r] = la_test_fork();
    assert_true(k[r] >= 0);
    if (k[r] == 0)
      _exit(la_ta_run_rank(la_td_addr(agent.st.la), app_id, "rerun", r, 2, N,
                           CYCLES, value));
  }
  for (int r = 0; r < 2; r++) assert_int_equal(la_test_wait(k[r]), 0);
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

/* LA_APP_ID=x twice, one run after the other: the first run's traces stay;
 * the second's are counted as conflicts and logged by name with what to
 * do. */
static void test_second_run_said(void **state) {
  (void)state;
  run_app("rerun-1");
  assert_int_equal(la_ta_wait_ended(&agent, 2 * CYCLES, 2, WAIT_MS), 0);
  long long c0 = la_td_status_ll(agent.st.ga, "conflicts");
  long long d0 = la_td_status_ll(agent.st.ga, "traces_duplicate");
  assert_true(c0 >= 0 && d0 >= 0);
  double first[N];
  assert_int_equal(la_ta_values(&agent, "rerun-1", 1, 2, first, N), 0);
  la_td_log_mark(agent.st.ga);
  run_app("rerun-1"); /* the same values, later transfer times */
  int said = la_td_wait_log(
      agent.st.ga,
      "application rerun-1 already ended; traces of a second run under the "
      "same id are dropped: give each run its own id (LA_APP_ID) or let "
      "libla derive one",
      WAIT_MS);
  long long c1 = la_td_status_ll(agent.st.ga, "conflicts");
  fprintf(stderr, "second run: conflicts %lld -> %lld, duplicates %lld -> "
          "%lld\n", c0, c1, d0,
          la_td_status_ll(agent.st.ga, "traces_duplicate"));
  assert_int_equal(said, 0);
  assert_int_equal(la_td_wait_status(agent.st.ga, "conflicts",
                                     c0 + 2 * CYCLES, WAIT_MS),
                   0);
  /* once a second at most: 6 traces in well under a second, few lines */
  assert_true(la_td_log_count(agent.st.ga, "already ended; traces of a "
                                           "second run") <= 2);
  /* the first run's traces are the ones stored */
  assert_int_equal(la_ta_ntraces(&agent, "rerun-1"), 2 * CYCLES);
  double again[N];
  assert_int_equal(la_ta_values(&agent, "rerun-1", 1, 2, again, N), 0);
  assert_memory_equal(first, again, sizeof first);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_second_run_said, setup, teardown),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
