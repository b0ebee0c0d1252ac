/* SPDX-License-Identifier: BSD-3-Clause */
/* memshare.c: the memory estimate of one registration (memshare.h). */
#include "memshare.h"

uint64_t la_memshare_per_element(uint32_t n_channels, int robust,
                                 uint32_t reps) {
  uint64_t series = n_channels > 1 ? (uint64_t)n_channels + 1 : 1;
  uint64_t per_series = 8 + 8 + (robust ? 10 + 8 : 0);
  uint64_t b = series * per_series + 1;
  if (n_channels <= 1 && reps) b += (uint64_t)reps * 9 * (robust ? 2 : 1);
  return b;
}

uint64_t la_memshare_bytes(uint64_t n, uint32_t n_channels, int robust,
                           uint32_t reps) {
  uint64_t per = la_memshare_per_element(n_channels, robust, reps), out;
  return __builtin_mul_overflow(per, n, &out) ? UINT64_MAX : out;
}
