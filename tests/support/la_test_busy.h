/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_busy.h: known amounts of work for the tests that time elements
 * through libla: a busy wait of so many nanoseconds of wall time, and a
 * thread body that probes a span of elements around such a wait (several
 * threads probing disjoint elements of one registration).
 */
#ifndef LA_TEST_BUSY_H
#define LA_TEST_BUSY_H

#include <stdint.h>

/* Spins (no sleep, no system call but clock_gettime) until ns nanoseconds
 * of CLOCK_MONOTONIC time have passed. */
void la_test_busy_ns(uint64_t ns);

/* A span of elements for la_test_probe_span. */
typedef struct {
  long first, count; /* elements first .. first + count - 1 */
  uint64_t ns;       /* busy time inside each element's probe */
} la_test_span_t;

/* A pthread start routine: arg is a la_test_span_t; for each element of
 * the span in order, LA_startProbe, la_test_busy_ns(ns), LA_stopProbe.
 * Returns NULL. */
void *la_test_probe_span(void *arg);

#endif /* LA_TEST_BUSY_H */
