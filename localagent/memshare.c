/* SPDX-License-Identifier: BSD-3-Clause */
/* memshare.c: the memory estimate of one registration (memshare.h). */
#include "memshare.h"

#include "la_compact_pieces.h"
#include "la_shm_layout.h"

uint64_t la_memshare_per_element(uint32_t n_channels, int robust,
                                 uint32_t reps) {
  uint64_t series = n_channels > 1 ? (uint64_t)n_channels + 1 : 1;
  uint64_t per_series = 8 + 8 + (robust ? 10 + 8 : 0);
  uint64_t b = series * per_series + 1;
  if (n_channels <= 1 && reps) b += (uint64_t)reps * 9 * (robust ? 2 : 1);
  return b;
}

uint64_t la_memshare_pieces(uint64_t n, uint32_t n_channels) {
  if (n_channels > 1) return 0;
  uint64_t p = la_shm_pieces_count(n);
  return p < n ? p : n; /* no two pieces share a cell */
}

uint64_t la_memshare_bytes(uint64_t n, uint32_t n_channels, int robust,
                           uint32_t reps) {
  uint64_t per = la_memshare_per_element(n_channels, robust, reps), out;
  /* a piece: a series element as a cell is, and its geometry */
  uint64_t per_piece = per + sizeof(la_piece_t), pieces;
  if (__builtin_mul_overflow(per, n, &out) ||
      __builtin_mul_overflow(per_piece, la_memshare_pieces(n, n_channels),
                             &pieces) ||
      __builtin_add_overflow(out, pieces, &out))
    return UINT64_MAX;
  return out;
}
