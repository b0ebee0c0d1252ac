/* SPDX-License-Identifier: BSD-3-Clause */
/* memshare.h: what one registration costs the LocalAgent in memory, for
 * agent.max_memory and its per-user share agent.max_memory_per_uid.
 *
 * An estimate made at registration from the registration's own numbers,
 * never from what the application writes later: n elements in k channels
 * make s series (the values, or with k > 1 their sum and each channel:
 * k + 1). Per element the agent holds, per series, a copy of the cycle
 * while it compacts it (8 bytes) and the compacted result (at most about 8
 * bytes: lossless, incompressible values); with robust weights (the time
 * metric, robust.enable), per series the robust state (la_robust_bytes: 10
 * bytes) and the weights a cycle gives (8 bytes); and one flag byte. A
 * registration of one channel adds its history's representatives
 * (history.h: reps x 9 bytes, twice with robust weights), which history
 * charges to history.memory too. A registration of one channel may store
 * its box- and range-probed cycles one value per piece (worker.c): up to
 * la_memshare_pieces pieces, each costing what an element does (the
 * pieces' own copy, result, robust state, weights and representatives)
 * plus its geometry (a la_piece_t). Nothing here is allocated: session.c
 * reserves the estimate, refuses beyond the limits, and frees it with the
 * session.
 *
 * No libuv.
 */
#ifndef LA_LOCALAGENT_MEMSHARE_H
#define LA_LOCALAGENT_MEMSHARE_H

#include <stdint.h>

/* Bytes per element of a registration of n_channels channels (0 or 1: one
 * series), with robust weights or not, with history representatives
 * (reps, 0: none). */
uint64_t la_memshare_per_element(uint32_t n_channels, int robust,
                                 uint32_t reps);

/* The most pieces a cycle of a registration of n elements in n_channels
 * channels can be stored as: the piece table's records
 * (la_shm_pieces_count), at most one per cell; 0 with several channels
 * (their cycles are never pieced). */
uint64_t la_memshare_pieces(uint64_t n, uint32_t n_channels);

/* The estimate for n elements: la_memshare_per_element times n, and per
 * piece (la_memshare_pieces) la_memshare_per_element plus the piece's
 * geometry; saturated at UINT64_MAX. */
uint64_t la_memshare_bytes(uint64_t n, uint32_t n_channels, int robust,
                           uint32_t reps);

#endif
