/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_pack.h: the members of one behaviour class of a set stored by
 * representatives, packed into one rep_classes row's BLOB
 * (store_reps_pack.c, docs/storage.md): each member's rank, exact
 * statistics and stamps, what its traces row held, compactly.
 */
#ifndef LA_STORE_REPS_PACK_H
#define LA_STORE_REPS_PACK_H

#include <stddef.h>
#include <stdint.h>

/* One member as its traces row held it (n_elements, mode and segments
 * are its class's; its err_* columns were NULL). */
typedef struct la_store_packed {
  uint32_t rank;
  uint8_t has_sum, has_min, has_max, has_xfer, has_rank_seq, has_scale;
  double sum, min, max; /* stat_sum, stat_min, stat_max, as they were */
  double scale;         /* only when has_scale (no finite sum) */
  uint64_t t_xfer_ns, rank_seq, seq;
  int64_t t_stored_ns;
} la_store_packed_t;

#define LA_STORE_PACK_FORMAT 1 /* the BLOB's first byte */

/* Bytes la__store_pack_members writes at most for n members. */
size_t la__store_pack_bound(size_t n);
/* The n members m (increasing rank) into out (la__store_pack_bound(n)
 * bytes): returns the bytes written. */
size_t la__store_pack_members(const la_store_packed_t *m, size_t n,
                              uint8_t *out);
/* The members of blob (len bytes) into m (room for max, in increasing
 * rank): 0 with *n set, LA_EPROTO (bad or truncated BLOB, more than max
 * members, ranks not increasing or past LA_MAX_RANKS). */
int la__store_unpack_members(const uint8_t *blob, size_t len,
                             la_store_packed_t *m, size_t max, size_t *n);

#endif
