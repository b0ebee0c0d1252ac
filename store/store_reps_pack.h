/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_pack.h: the members of one behaviour class of a set stored by
 * representatives, packed into one rep_classes row's BLOB
 * (store_reps_pack.c, docs/storage.md): each member's rank, exact total
 * and stamps, what its traces row held, compactly; its min and max are
 * its representative's times its scale (format 2; format 1 rows, which
 * hold them as they were, still read).
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
  /* min and max are to be predicted (la__store_pack_minmax): the BLOB
   * says the member had them, not what they were (format 2) */
  uint8_t predicted;
  double sum, min, max; /* stat_sum, stat_min, stat_max, as they were */
  double scale;         /* only when has_scale (no finite sum) */
  uint64_t t_xfer_ns, rank_seq, seq;
  int64_t t_stored_ns;
} la_store_packed_t;

#define LA_STORE_PACK_FORMAT 2    /* the BLOB's first byte, as written */
#define LA_STORE_PACK_FORMAT_V1 1 /* min and max as they were: read only */

/* Bytes la__store_pack_members writes at most for n members. */
size_t la__store_pack_bound(size_t n);
/* The n members m (increasing rank) into out (la__store_pack_bound(n)
 * bytes), format 2: a member's min and max are written only when it is
 * not predicted (m[i].predicted 0), its total against ref (the row's
 * rep_total); bound: the class's (stored in the header,
 * la__store_pack_minmax). Returns the bytes written. */
size_t la__store_pack_members(const la_store_packed_t *m, size_t n,
                              double ref, double bound, uint8_t *out);
/* The members of blob (len bytes, format 1 or 2; ref the row's
 * rep_total) into m (room for max,
 * in increasing rank): 0 with *n set and *bound the class's (0 for
 * format 1: every min and max as it was), LA_EPROTO (bad or truncated
 * BLOB, more than max members, ranks not increasing or past
 * LA_MAX_RANKS). A predicted member's min and max are left to the caller
 * (la__store_pack_minmax). */
int la__store_unpack_members(const uint8_t *blob, size_t len, double ref,
                             la_store_packed_t *m, size_t max, size_t *n,
                             double *bound);
/* The min and max a predicted member of scale s reads back: its
 * representative's exact ones (rmin, rmax) times s, in order. */
void la__store_pack_minmax(double s, double rmin, double rmax, double *min,
                           double *max);
/* The error of (min, max) against the predicted (pmin, pmax), relative to
 * the larger magnitude of those: what the class's bound holds the
 * largest of. Infinite when it cannot be stated (then the member keeps
 * its own). */
double la__store_pack_minmax_err(double min, double max, double pmin,
                                 double pmax);

#endif
