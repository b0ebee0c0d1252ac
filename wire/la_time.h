/* SPDX-License-Identifier: BSD-3-Clause */
/* la_time.h: the clocks LA reads outside the probes, as plain integers: one
 * home for the clock_gettime wrappers that libla, the daemons, the client
 * library and lactl share. Header-only (static inline), so it links into
 * every part, libla included, without pulling in anything.
 *
 * Deliberately not here: the probes' timer (libla/timer.c and la.h read the
 * TSC or CLOCK_MONOTONIC on the hot path themselves) and formatting of
 * times for people (la_log.c).
 */
#ifndef LA_TIME_H
#define LA_TIME_H

#include <stdint.h>
#include <time.h>

/* Clock id's reading in ns (clock_gettime). */
static inline uint64_t la_clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in ns: for durations and deadlines. */
static inline uint64_t la_mono_ns(void) {
  return la_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC_RAW in ns: not slewed by NTP (timer calibration). */
static inline uint64_t la_mono_raw_ns(void) {
  return la_clock_ns(CLOCK_MONOTONIC_RAW);
}

/* CLOCK_REALTIME in ns since the epoch: for times stored or shown. */
static inline uint64_t la_realtime_ns(void) {
  return la_clock_ns(CLOCK_REALTIME);
}

/* CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID). */
static inline uint64_t la_thread_cpu_ns(void) {
  return la_clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Monotonic milliseconds (CLOCK_MONOTONIC): for deadlines in ms. */
static inline uint64_t la_now_ms(void) {
  return la_mono_ns() / 1000000u;
}

#endif /* LA_TIME_H */
