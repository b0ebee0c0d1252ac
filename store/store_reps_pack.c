/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_pack.c: the members of one behaviour class packed into a
 * rep_classes BLOB and back (store_reps_pack.h, docs/storage.md).
 *
 * Format 2 (written): the format byte, the class's min/max bound (a
 * double, 8 bytes little-endian), then per member in increasing rank: a
 * varint of twice the rank's gap to the previous member's (the first
 * member's rank + 1), plus 1 when a flags byte follows (the member's
 * flags differ from the previous member's; before the first: none), the
 * flags saying which of the row's nullable columns it has; the exact
 * total stat_sum as the difference of its bits to rep_total's (7 bytes,
 * signed; -2^55: the double's 8 bytes follow), stat_min and stat_max only
 * when the
 * member keeps its own (F_OWN; else they read back as the
 * representative's times the scale), a scale of its own; then varints:
 * the zigzag of the difference to the previous member's of t_xfer_ns,
 * rank_seq (none when a flag says it is the same), seq and t_stored_ns
 * (each against the last member that had one; the first against 0).
 * Format 1 (read only): the format byte, then per member the gap (a
 * varint, not doubled), the flags byte, the doubles sum, min, max and
 * scale as they are, t_xfer_ns as a varint, the others as in format 2.
 *
 * Deliberately not here: which members are packed (store_reps.c), reading
 * the rows (store_reps_load.c).
 */
#include <math.h>
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
  F_OWN = 64,   /* format 2: min and max stored (not predicted) */
  F_RSAME = 128, /* format 2: rank_seq the previous member's (no delta) */
};

/* Format 2's total: the difference of its bits to the class's
 * reference total's (rep_total) in 7 bytes, signed; ESC instead: the 8
 * bytes of the double follow. */
#define LA__SUM7_ESC ((uint64_t)1 << 55)
#define LA__SUM7_MASK (((uint64_t)1 << 56) - 1)

static uint64_t la__bits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

size_t la__store_pack_bound(size_t n) {
  return 1 + 8 + n * (5 + 1 + 15 + 24 + 40);
}

static size_t la__put_bytes(uint8_t *o, uint64_t b, int n) {
  for (int i = 0; i < n; i++) o[i] = (uint8_t)(b >> (8 * i));
  return (size_t)n;
}

static size_t la__put_double(uint8_t *o, double d) {
  return la__put_bytes(o, la__bits(d), 8);
}

/* sum against ref (format 2's total). */
static size_t la__put_sum(uint8_t *o, double sum, double ref) {
  uint64_t d = la__bits(sum) - la__bits(ref);
  /* within [-2^55, 2^55), -2^55 itself the escape */
  if (d + LA__SUM7_ESC - 1 < 2 * LA__SUM7_ESC - 1)
    return la__put_bytes(o, d & LA__SUM7_MASK, 7);
  size_t k = la__put_bytes(o, LA__SUM7_ESC, 7);
  return k + la__put_double(o + k, sum);
}

static int la__get_sum(la_creader_t *r, double ref, double *sum) {
  uint64_t d = 0;
  if (r->len - r->off < 7) return LA_EPROTO;
  for (int i = 0; i < 7; i++) d |= (uint64_t)r->p[r->off + i] << (8 * i);
  r->off += 7;
  if (d == LA__SUM7_ESC) return la_creader_f64(r, sum) ? LA_EPROTO : 0;
  if (d & LA__SUM7_ESC) d |= ~LA__SUM7_MASK; /* negative */
  uint64_t b = la__bits(ref) + d;
  memcpy(sum, &b, sizeof *sum);
  return 0;
}

/* The zigzag of v's difference to *prev, written at o; *prev := v. */
static size_t la__put_delta(uint8_t *o, uint64_t v, uint64_t *prev) {
  size_t k = la_varint_write(o, la_zigzag((int64_t)(v - *prev)));
  *prev = v;
  return k;
}

void la__store_pack_minmax(double s, double rmin, double rmax, double *min,
                           double *max) {
  double a = s * rmin, b = s * rmax;
  *min = a <= b ? a : b;
  *max = a <= b ? b : a;
}

double la__store_pack_minmax_err(double min, double max, double pmin,
                                 double pmax) {
  double e = fmax(fabs(min - pmin), fabs(max - pmax));
  double m = fmax(fabs(pmin), fabs(pmax));
  if (e == 0 && isfinite(pmin) && isfinite(pmax)) return 0;
  return m > 0 && isfinite(e / m) ? e / m : INFINITY;
}

size_t la__store_pack_members(const la_store_packed_t *m, size_t n,
                              double ref, double bound, uint8_t *out) {
  size_t k = 0;
  out[k++] = LA_STORE_PACK_FORMAT;
  k += la__put_double(out + k, bound);
  uint64_t prev_rank = 0, prev_xfer = 0, prev_rseq = 0, prev_seq = 0,
           prev_stored = 0;
  unsigned prev_f = 0;
  for (size_t i = 0; i < n; i++) {
    const la_store_packed_t *p = &m[i];
    unsigned own = (p->has_min || p->has_max) && !p->predicted;
    unsigned same = p->has_rank_seq && p->rank_seq == prev_rseq;
    unsigned f = (p->has_sum ? F_SUM : 0) | (p->has_min ? F_MIN : 0) |
                 (p->has_max ? F_MAX : 0) | (p->has_xfer ? F_XFER : 0) |
                 (p->has_rank_seq ? F_RSEQ : 0) |
                 (p->has_scale ? F_SCALE : 0) | (own ? F_OWN : 0) |
                 (same ? F_RSAME : 0);
    uint64_t gap = i ? (uint64_t)p->rank - prev_rank : (uint64_t)p->rank + 1;
    unsigned with_f = i == 0 || f != prev_f;
    k += la_varint_write(out + k, 2 * gap + with_f);
    if (with_f) out[k++] = (uint8_t)f;
    prev_rank = p->rank;
    prev_f = f;
    if (p->has_sum) k += la__put_sum(out + k, p->sum, ref);
    if (own && p->has_min) k += la__put_double(out + k, p->min);
    if (own && p->has_max) k += la__put_double(out + k, p->max);
    if (p->has_scale) k += la__put_double(out + k, p->scale);
    if (p->has_xfer) k += la__put_delta(out + k, p->t_xfer_ns, &prev_xfer);
    if (p->has_rank_seq && !same)
      k += la__put_delta(out + k, p->rank_seq, &prev_rseq);
    k += la__put_delta(out + k, p->seq, &prev_seq);
    k += la__put_delta(out + k, (uint64_t)p->t_stored_ns, &prev_stored);
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

int la__store_unpack_members(const uint8_t *blob, size_t len, double ref,
                             la_store_packed_t *m, size_t max, size_t *n,
                             double *bound) {
  *n = 0;
  *bound = 0;
  if (!blob || len < 1 || (blob[0] != LA_STORE_PACK_FORMAT &&
                           blob[0] != LA_STORE_PACK_FORMAT_V1))
    return LA_EPROTO;
  int v2 = blob[0] == LA_STORE_PACK_FORMAT;
  la_creader_t r = {blob, len, 1};
  if (v2 && (la_creader_f64(&r, bound) || !(*bound >= 0)))
    return LA_EPROTO; /* NaN or negative: no bound */
  uint64_t rank = 0, xfer = 0, rseq = 0, seq = 0, stored = 0, v;
  uint8_t f = 0;
  const unsigned known = F_SUM | F_MIN | F_MAX | F_XFER | F_RSEQ | F_SCALE |
                         (v2 ? F_OWN | F_RSAME : 0);
  size_t k = 0;
  while (r.off < r.len) {
    if (k == max || la_creader_varint(&r, &v)) return LA_EPROTO;
    uint64_t gap = v2 ? v >> 1 : v;
    if (gap == 0 || gap > LA_MAX_RANKS) return LA_EPROTO;
    rank = k ? rank + gap : gap - 1; /* increasing: a gap of at least 1 */
    if (rank >= LA_MAX_RANKS ||
        ((!v2 || (v & 1)) && la_creader_u8(&r, &f)) || (f & ~known) ||
        (v2 && k == 0 && !(v & 1)))
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
    int own = !v2 || (f & F_OWN);
    if (v2 && (((f & F_OWN) && !p->has_min && !p->has_max) ||
               ((f & F_RSAME) && !p->has_rank_seq)))
      return LA_EPROTO;
    p->predicted = !own && (p->has_min || p->has_max);
    if ((p->has_sum && (v2 ? la__get_sum(&r, ref, &p->sum)
                           : la_creader_f64(&r, &p->sum))) ||
        (own && p->has_min && la_creader_f64(&r, &p->min)) ||
        (own && p->has_max && la_creader_f64(&r, &p->max)) ||
        (p->has_scale && la_creader_f64(&r, &p->scale)))
      return LA_EPROTO;
    if (p->has_xfer &&
        (v2 ? la__get_delta(&r, &xfer) : la_creader_varint(&r, &xfer)))
      return LA_EPROTO;
    if ((p->has_rank_seq && !(f & F_RSAME) && la__get_delta(&r, &rseq)) ||
        la__get_delta(&r, &seq) || la__get_delta(&r, &stored))
      return LA_EPROTO;
    p->t_xfer_ns = p->has_xfer ? xfer : 0;
    p->rank_seq = p->has_rank_seq ? rseq : 0;
    p->seq = seq;
    p->t_stored_ns = (int64_t)stored;
    k++;
  }
  *n = k;
  return 0;
}
