/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_check.h: the bounded waits of la_test_daemon.h and
 * la_test_kids.h as cmocka checks, for the daemons' test programs.
 *
 * Each helper waits as its support function does and, when the wait fails,
 * prints what it waited for and the tail of a daemon's log (the daemon the
 * test watches, dump, may be NULL) and fails the running test. They are
 * static inline in this header because they call cmocka, which the
 * benchmarks linking the support objects do not have: include it after
 * <cmocka.h>, in test programs only.
 */
#ifndef LA_TEST_CHECK_H
#define LA_TEST_CHECK_H

#include <stddef.h>
#include <sys/types.h>

#include "la_test_daemon.h"
#include "la_test_kids.h"

#define LA_TC_LOG_TAIL 4000 /* bytes of the log printed on a failure */

/* d's `lactl status` row key as an integer; fails when there is none. */
static inline long long la_tc_status(la_test_daemon_t *d, const char *key) {
  long long v = la_td_status_ll(d, key);
  LA_TD_CHECK(la_td_print_log_tail(d, LA_TC_LOG_TAIL), v >= 0,
              "%s: lactl status has no numeric row %s", la_td_name(d), key);
  return v;
}

/* Waits up to timeout_ms until d's status row key is at least min. */
static inline void la_tc_wait_status(la_test_daemon_t *d, const char *key,
                                     long long min, int timeout_ms) {
  LA_TD_CHECK(la_td_print_log_tail(d, LA_TC_LOG_TAIL),
              la_td_wait_status(d, key, min, timeout_ms) == 0,
              "%s: status %s did not reach %lld (is %lld)", la_td_name(d), key,
              min, la_td_status_ll(d, key));
}

/* Waits up to timeout_ms until d logs needle (after its mark). */
static inline void la_tc_wait_log(la_test_daemon_t *d, const char *needle,
                                  int timeout_ms) {
  LA_TD_CHECK(la_td_print_log_tail(d, LA_TC_LOG_TAIL),
              la_td_wait_log(d, needle, timeout_ms) == 0,
              "%s never logged \"%s\"", la_td_name(d), needle);
}

/* la_tk_expect: the child's next record of kind into out (size bytes). */
static inline void la_tc_expect(la_test_kid_t *k, int kind, void *out,
                                size_t size, int timeout_ms,
                                la_test_daemon_t *dump) {
  char why[200] = "";
  LA_TD_CHECK(
      la_td_print_log_tail(dump, LA_TC_LOG_TAIL),
      la_tk_expect(k, kind, out, size, timeout_ms, why, sizeof why) == 0, "%s",
      why);
}

/* la_tk_reap: the child's exit code (128 + signal when killed); fails when
 * it did not exit within timeout_ms. */
static inline int la_tc_reap(la_test_kid_t *k, int timeout_ms,
                             la_test_daemon_t *dump) {
  pid_t pid = k->pid;
  int code = la_tk_reap(k, timeout_ms);
  LA_TD_CHECK(la_td_print_log_tail(dump, LA_TC_LOG_TAIL), code >= 0,
              "child %d did not exit", (int)pid);
  return code;
}

#endif /* LA_TEST_CHECK_H */
