/* SPDX-License-Identifier: BSD-3-Clause */
/* ex_floor.h: the "hand-written minimal instrumentation" the overhead study
 * compares LA with (docs/performance.md): two raw timer reads around an element's
 * work and a store into a local array; no library, no agent. The examples'
 * --floor mode uses it. Not part of LA. */
#ifndef EX_FLOOR_H
#define EX_FLOOR_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ex_floor_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
#else
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

#endif
