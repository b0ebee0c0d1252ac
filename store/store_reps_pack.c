/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_pack.c: the members of one behaviour class packed into a
 * rep_classes BLOB and back (store_reps_pack.h, docs/storage.md).
 *
 * After a format byte, per member in increasing rank: the rank's gap to
 * the previous member's (varint; the first member's rank + 1), a flags
 * byte saying which of the row's nullable columns it has, the doubles as
 * they are (8 bytes each, little-endian: stat_sum, stat_min, stat_max, a
 * scale of its own), then varints: t_xfer_ns, rank_seq, seq and
 * t_stored_ns, the last three as the zigzag of their difference to the
 * previous member's (consecutive ranks of a cycle differ little).
 *
 * Deliberately not here: which members are packed (store_reps.c), reading
 * the rows (store_reps_load.c).
 */
#include <string.h>

#include "la_codec.h"            /* LA_MAX_RANKS */
#include "la_compact_internal.h" /* varints, zigzag, la_creader_t */
#include "la_errcodes.h"
#include "store_reps_pack.h"

enum {
  F_SUM = 1,
  F_MIN = 2,
  F_MAX = 4,
  F_XFER = 8,
  F_RSEQ = 16,
  F_SCALE = 32,
};

size_t la__store_pack_bound(size_t n) {
  return 1 + n * (5 + 1 + 32 + 40);
}

static size_t la__put_double(uint8_t *o, double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  for (int i = 0; i < 8; i++) o[i] = (uint8_t)(b >> (8 * i));
  return 8;
}

size_t la__store_pack_members(const la_store_packed_t *m, size_t n,
                              uint8_t *out) {
  size_t k = 0;
  out[k++] = LA_STORE_PACK_FORMAT;
  uint64_t prev_rank = 0, prev_rseq = 0, prev_seq = 0, prev_stored = 0;
  for (size_t i = 0; i < n; i++) {
    const la_store_packed_t *p = &m[i];
    uint64_t gap = i ? (uint64_t)p->rank - prev_rank : (uint64_t)p->rank + 1;
    k += la_varint_write(out + k, gap);
    prev_rank = p->rank;
    out[k++] = (uint8_t)((p->has_sum ? F_SUM : 0) | (p->has_min ? F_MIN : 0) |
                         (p->has_max ? F_MAX : 0) | (p->has_xfer ? F_XFER : 0) |
                         (p->has_rank_seq ? F_RSEQ : 0) |
                         (p->has_scale ? F_SCALE : 0));
    if (p->has_sum) k += la__put_double(out + k, p->sum);
    if (p->has_min) k += la__put_double(out + k, p->min);
    if (p->has_max) k += la__put_double(out + k, p->max);
    if (p->has_scale) k += la__put_double(out + k, p->scale);
    if (p->has_xfer) k += la_varint_write(out + k, p->t_xfer_ns);
    if (p->has_rank_seq) {
      k += la_varint_write(out + k,
                           la_zigzag((int64_t)(p->rank_seq - prev_rseq)));
      prev_rseq = p->rank_seq;
    }
    k += la_varint_write(out + k, la_zigzag((int64_t)(p->seq - prev_seq)));
    prev_seq = p->seq;
    k += la_varint_write(
        out + k, la_zigzag((int64_t)((uint64_t)p->t_stored_ns - prev_stored)));
    prev_stored = (uint64_t)p->t_stored_ns;
  }
  return k;
}

/* The difference to *prev a varint of r holds, added to it. */
static int la__get_delta(la_creader_t *r, uint64_t *prev) {
  uint64_t v;
  if (la_creader_varint(r, &v)) return LA_EPROTO;
  *prev += (uint64_t)la_unzigzag(v);
  return 0;
}

int la__store_unpack_members(const uint8_t *blob, size_t len,
                             la_store_packed_t *m, size_t max, size_t *n) {
  *n = 0;
  if (!blob || len < 1 || blob[0] != LA_STORE_PACK_FORMAT) return LA_EPROTO;
  la_creader_t r = {blob, len, 1};
  uint64_t rank = 0, rseq = 0, seq = 0, stored = 0, v;
  size_t k = 0;
  while (r.off < r.len) {
    uint8_t f;
    if (k == max || la_creader_varint(&r, &v) || v == 0 || v > LA_MAX_RANKS)
      return LA_EPROTO;
    rank = k ? rank + v : v - 1; /* increasing: a gap of at least 1 */
    if (rank >= LA_MAX_RANKS || la_creader_u8(&r, &f) ||
        (f & ~(F_SUM | F_MIN | F_MAX | F_XFER | F_RSEQ | F_SCALE)))
      return LA_EPROTO;
    la_store_packed_t *p = &m[k];
    memset(p, 0, sizeof *p);
    p->rank = (uint32_t)rank;
    p->has_sum = !!(f & F_SUM);
    p->has_min = !!(f & F_MIN);
    p->has_max = !!(f & F_MAX);
    p->has_xfer = !!(f & F_XFER);
    p->has_rank_seq = !!(f & F_RSEQ);
    p->has_scale = !!(f & F_SCALE);
    if ((p->has_sum && la_creader_f64(&r, &p->sum)) ||
        (p->has_min && la_creader_f64(&r, &p->min)) ||
        (p->has_max && la_creader_f64(&r, &p->max)) ||
        (p->has_scale && la_creader_f64(&r, &p->scale)) ||
        (p->has_xfer && la_creader_varint(&r, &p->t_xfer_ns)) ||
        (p->has_rank_seq && la__get_delta(&r, &rseq)) ||
        la__get_delta(&r, &seq) || la__get_delta(&r, &stored))
      return LA_EPROTO;
    p->rank_seq = p->has_rank_seq ? rseq : 0;
    p->seq = seq;
    p->t_stored_ns = (int64_t)stored;
    k++;
  }
  *n = k;
  return 0;
}
