/* SPDX-License-Identifier: BSD-3-Clause */
/* timer.c: the wall-time metric's clock.
 *
 * On x86 with an invariant TSC (constant_tsc and nonstop_tsc in
 * /proc/cpuinfo) probes read the TSC; elsewhere CLOCK_MONOTONIC in ns. Ticks
 * become ns outside the hot path: the ratio is calibrated for 2 ms at start,
 * refined at every LA_dataXfer over the whole run, and written into each
 * buffer's meta data for the agent to apply. The timer's resolution (its
 * smallest step) is measured once at registration, to be shown beside the
 * values: an element that costs less than a few steps is not resolved.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "la_internal.h"
#include "la_time.h"

LA_EXPORT uint64_t la__clock_ns(void) {
  return la_mono_ns();
}

static int la__tsc_invariant(void) {
#if defined(__x86_64__) || defined(__i386__)
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  char line[4096];
  int ok = 0;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "flags", 5) == 0) {
      ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
      break;
    }
  }
  fclose(f);
  return ok;
#else
  return 0;
#endif
}

static uint64_t la__ticks(const la__timer_t *t) {
#if defined(__x86_64__) || defined(__i386__)
  if (t->tsc) return la__rdtsc();
#endif
  return la_mono_ns();
}

int la__timer_init(la__timer_t *t, int mode) {
  memset(t, 0, sizeof *t);
  t->tsc = mode == 1 || (mode == 0 && la__tsc_invariant());
  if (mode == 1 && !la__tsc_invariant())
    la__info("LA_TIMER=tsc but the TSC is not invariant here; using it anyway");
  t->ns_per_tick = 1.0;
  if (!t->tsc) return 0;
  t->ns0 = la_mono_raw_ns();
  t->ticks0 = la__ticks(t);
  struct timespec two_ms = {0, 2000000};
  nanosleep(&two_ms, NULL);
  la__timer_refine(t);
  return 0;
}

double la__timer_refine(la__timer_t *t) {
  if (!t->tsc) return t->ns_per_tick = 1.0;
  uint64_t ns = la_mono_raw_ns(), ticks = la__ticks(t);
  if (ticks > t->ticks0 && ns > t->ns0)
    t->ns_per_tick = (double)(ns - t->ns0) / (double)(ticks - t->ticks0);
  return t->ns_per_tick;
}

static int la__cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

double la__timer_resolution_ns(const la__timer_t *t) {
  enum { TRIES = 301, SPIN = 1000000 };
  uint64_t d[TRIES];
  int k = 0;
  for (int i = 0; i < TRIES; i++) {
    uint64_t a = la__ticks(t), b = a;
    for (int j = 0; j < SPIN && b == a; j++) b = la__ticks(t);
    if (b > a) d[k++] = b - a; /* a timer that went back or stood: skip */
  }
  if (k == 0) return 0;
  qsort(d, (size_t)k, sizeof d[0], la__cmp_u64);
  return (double)d[k / 2] * t->ns_per_tick;
}
