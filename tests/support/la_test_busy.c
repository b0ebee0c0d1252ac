/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_busy.c: busy waits and probed spans for timing tests (see
 * la_test_busy.h).
 */
#include "la_test_busy.h"

#include <time.h>

#include "la.h"

static uint64_t la__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void la_test_busy_ns(uint64_t ns) {
  uint64_t end = la__mono_ns() + ns;
  while (la__mono_ns() < end) {
  }
}

void *la_test_probe_span(void *arg) {
  const la_test_span_t *s = arg;
  for (long e = s->first; e < s->first + s->count; e++) {
    LA_startProbe(e);
    la_test_busy_ns(s->ns);
    LA_stopProbe(e);
  }
  return NULL;
}
