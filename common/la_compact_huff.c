/* la_compact_huff.c: the entropy stage of quantized runs (docs/compaction.md,
 * "Coded quantized run").
 *
 * A rough timing series in whole timer ticks takes a few values most of the
 * time (a light stencil on a 10 ns timer: 26 ticks in 81% of the cells, 25
 * or 1 in most of the rest). A quantized run stores each as a varint of at
 * least one byte; coded, the record stores the integers' distinct values
 * relative to the run's reference once and each point as a canonical
 * Huffman code of its value: about 1.3 bits a point there. The encoder
 * writes the coded form only when it is smaller than the plain one, so a
 * record never grows. Codes are at most LA_HUFF_MAX_LEN bits: a record of
 * at most LA_CENC_QRUN_MAX (1024) points cannot need more (a Huffman code
 * of depth L needs a total weight of at least Fibonacci(L + 2), and
 * Fibonacci(17) = 1597 > 1024), and the encoder checks it anyway.
 *
 * Record body (after the tag, kind 3 with bit 2 set):
 *   varint nsym (1..count), varint zigzag(s0), nsym - 1 varints s_i -
 *   s_(i-1) - 1 (the values k - kref, ascending; kref is the quantized
 *   state qk before the record), ceil(nsym / 2) bytes of 4-bit code
 *   lengths (low nibble first; 0 for a lone symbol, else 1..15, Kraft sum
 *   <= 1), varint nbytes, then nbytes of codes, most significant bit
 *   first, canonical (by length, then value), padded with zero bits.
 * Pure C; no allocation (everything on the stack, bounded by the record).
 */
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"
#include "la_errors.h"

#define LA_HUFF_DIRECT 256 /* values in [-256, 256) are found by index */
#define LA_HUFF_FAR 32     /* other values: more than this, no coding */
#define LA_HUFF_MAX_SYMS 256
#define LA_HUFF_LUT_BITS 10 /* the decoder's table: codes up to 10 bits */
#define LA_HUFF_MIN_POINTS 32 /* shorter runs stay plain */

typedef struct {
  int64_t v;      /* k - kref */
  uint32_t n;     /* points */
  uint32_t code;  /* canonical code */
  uint8_t len;    /* code length */
} la_hsym_t;

static int by_count(const void *a, const void *b) {
  const la_hsym_t *x = *(la_hsym_t *const *)a, *y = *(la_hsym_t *const *)b;
  if (x->n != y->n) return x->n < y->n ? -1 : 1;
  return x->v < y->v ? -1 : x->v > y->v;
}

/* Code lengths of the nsym (>= 2) symbols, sorted by count ascending in
 * srt: Huffman's construction with two queues (leaves in order, internal
 * nodes in the order made), then each leaf's depth. */
static void lengths(la_hsym_t **srt, size_t nsym) {
  uint32_t w[2 * LA_HUFF_MAX_SYMS];
  uint16_t parent[2 * LA_HUFF_MAX_SYMS];
  size_t leaf = 0, node = nsym, made = nsym;
  for (size_t i = 0; i < nsym; i++) w[i] = srt[i]->n;
  for (size_t k = 0; k + 1 < nsym; k++) {
    size_t pick[2];
    for (int c = 0; c < 2; c++) {
      if (leaf < nsym && (node >= made || w[leaf] <= w[node]))
        pick[c] = leaf++;
      else
        pick[c] = node++;
    }
    w[made] = w[pick[0]] + w[pick[1]];
    parent[pick[0]] = parent[pick[1]] = (uint16_t)made;
    made++;
  }
  uint8_t depth[2 * LA_HUFF_MAX_SYMS];
  depth[made - 1] = 0;
  for (size_t i = made - 1; i-- > 0;) depth[i] = (uint8_t)(depth[parent[i]] + 1);
  for (size_t i = 0; i < nsym; i++) srt[i]->len = depth[i];
}

static int by_value(const void *a, const void *b) {
  const la_hsym_t *x = *(la_hsym_t *const *)a, *y = *(la_hsym_t *const *)b;
  return x->v < y->v ? -1 : x->v > y->v;
}

/* srt[0..n) in the order of cmp: insertion for the few symbols of a
 * typical run (qsort's calls cost more than the sort there), qsort else. */
static void sort_syms(la_hsym_t **srt, size_t n,
                      int (*cmp)(const void *, const void *)) {
  if (n > 8) {
    qsort(srt, n, sizeof *srt, cmp);
    return;
  }
  for (size_t a = 1; a < n; a++)
    for (size_t b = a; b > 0 && cmp(&srt[b - 1], &srt[b]) > 0; b--) {
      la_hsym_t *t = srt[b];
      srt[b] = srt[b - 1];
      srt[b - 1] = t;
    }
}

size_t la_huff_qrun_encode(const double *ks, uint64_t m, double kref,
                           uint8_t *out, size_t limit) {
  la_hsym_t sym[LA_HUFF_MAX_SYMS];
  uint16_t direct[2 * LA_HUFF_DIRECT]; /* 1 + index, 0: not seen */
  uint8_t idx[LA_CENC_QRUN_MAX];
  size_t nsym = 0, nfar = 0;
  /* a short run gains a few bytes at most: not worth a table */
  if (m < LA_HUFF_MIN_POINTS || m > LA_CENC_QRUN_MAX) return 0;
  /* four counters per symbol, point j in cnt[j % 4]: a run of one value
   * does not wait on one counter */
  uint32_t cnt[4][LA_HUFF_MAX_SYMS]; /* zeroed as symbols appear */
  memset(direct, 0, sizeof direct);
  for (uint64_t j = 0; j < m; j++) {
    double dd = ks[j] - kref; /* |difference| < 2^54: exact */
    size_t s;
    if (dd >= -LA_HUFF_DIRECT && dd < LA_HUFF_DIRECT) {
      uint16_t *slot = &direct[(int)dd + LA_HUFF_DIRECT];
      if (__builtin_expect(*slot == 0, 0)) {
        if (nsym == LA_HUFF_MAX_SYMS) return 0;
        sym[nsym] = (la_hsym_t){.v = (int64_t)dd};
        cnt[0][nsym] = cnt[1][nsym] = cnt[2][nsym] = cnt[3][nsym] = 0;
        *slot = (uint16_t)++nsym;
      }
      s = *slot - 1u;
    } else {
      int64_t d = (int64_t)dd;
      for (s = 0; s < nsym && sym[s].v != d; s++)
        ;
      if (s == nsym) {
        if (nsym == LA_HUFF_MAX_SYMS || ++nfar > LA_HUFF_FAR) return 0;
        cnt[0][nsym] = cnt[1][nsym] = cnt[2][nsym] = cnt[3][nsym] = 0;
        sym[nsym++] = (la_hsym_t){.v = d};
      }
    }
    cnt[j & 3][s]++;
    idx[j] = (uint8_t)s;
  }
  for (size_t s = 0; s < nsym; s++)
    sym[s].n = cnt[0][s] + cnt[1][s] + cnt[2][s] + cnt[3][s];
  /* the table's order (by value), then Huffman's (by count) */
  la_hsym_t *vs[LA_HUFF_MAX_SYMS], *srt[LA_HUFF_MAX_SYMS];
  for (size_t s = 0; s < nsym; s++) vs[s] = &sym[s];
  sort_syms(vs, nsym, by_value);
  uint64_t bits = 0;
  if (nsym > 1) {
    memcpy(srt, vs, nsym * sizeof *srt);
    sort_syms(srt, nsym, by_count);
    lengths(srt, nsym);
    size_t per_len[LA_HUFF_MAX_LEN + 2] = {0};
    for (size_t s = 0; s < nsym; s++) {
      if (srt[s]->len > LA_HUFF_MAX_LEN) return 0;
      bits += (uint64_t)srt[s]->n * srt[s]->len;
      per_len[srt[s]->len + 1]++;
    }
    /* canonical codes: by length, then value (a stable bucket sort of the
     * value order by length) */
    for (int l = 1; l <= LA_HUFF_MAX_LEN; l++) per_len[l + 1] += per_len[l];
    for (size_t s = 0; s < nsym; s++) srt[per_len[vs[s]->len]++] = vs[s];
    uint32_t code = 0;
    uint8_t len = srt[0]->len;
    for (size_t s = 0; s < nsym; s++) {
      code <<= srt[s]->len - len;
      len = srt[s]->len;
      srt[s]->code = code++;
    }
  } else {
    sym[0].len = 0;
  }
  size_t nbytes = (size_t)((bits + 7) / 8);
  size_t size = la_varint_len(nsym) + la_varint_len(la_zigzag(vs[0]->v)) +
                (nsym + 1) / 2 + la_varint_len(nbytes) + nbytes;
  for (size_t s = 1; s < nsym; s++)
    size += la_varint_len((uint64_t)(vs[s]->v - vs[s - 1]->v - 1));
  if (size >= limit) return 0; /* the plain record is as small */
  uint8_t *p = out;
  p += la_varint_write(p, nsym);
  p += la_varint_write(p, la_zigzag(vs[0]->v));
  for (size_t s = 1; s < nsym; s++)
    p += la_varint_write(p, (uint64_t)(vs[s]->v - vs[s - 1]->v - 1));
  for (size_t s = 0; s < nsym; s += 2)
    *p++ = (uint8_t)(vs[s]->len | (s + 1 < nsym ? vs[s + 1]->len << 4 : 0));
  p += la_varint_write(p, nbytes);
  /* codes into a 64-bit accumulator, four bytes out at a time */
  uint32_t code[LA_HUFF_MAX_SYMS];
  uint8_t clen[LA_HUFF_MAX_SYMS];
  for (size_t s = 0; s < nsym; s++) {
    code[s] = sym[s].code;
    clen[s] = sym[s].len;
  }
  uint64_t acc = 0;
  int nacc = 0;
  for (uint64_t j = 0; j < m && nsym > 1; j++) {
    acc = acc << clen[idx[j]] | code[idx[j]];
    nacc += clen[idx[j]];
    if (nacc >= 32) {
      nacc -= 32;
      uint32_t w = (uint32_t)(acc >> nacc);
      p[0] = (uint8_t)(w >> 24);
      p[1] = (uint8_t)(w >> 16);
      p[2] = (uint8_t)(w >> 8);
      p[3] = (uint8_t)w;
      p += 4;
    }
  }
  while (nacc >= 8) {
    nacc -= 8;
    *p++ = (uint8_t)(acc >> nacc);
  }
  if (nacc > 0) *p++ = (uint8_t)(acc << (8 - nacc));
  return (size_t)(p - out);
}

int la_huff_qrun_decode(la_creader_t *r, uint64_t m, int64_t *d,
                        int64_t *smin, int64_t *smax) {
  uint64_t nsym, w, nbytes;
  int64_t val[LA_CENC_QRUN_MAX];
  uint8_t len[LA_CENC_QRUN_MAX];
  int rc;
  if (m == 0 || m > LA_CENC_QRUN_MAX) return LA_EPROTO;
  if ((rc = la_creader_varint(r, &nsym)) != 0) return rc;
  if (nsym == 0 || nsym > m) return LA_EPROTO;
  if ((rc = la_creader_varint(r, &w)) != 0) return rc;
  val[0] = la_unzigzag(w);
  for (uint64_t s = 1; s < nsym; s++) {
    if ((rc = la_creader_varint(r, &w)) != 0) return rc;
    if (w >= (UINT64_C(1) << 55) || val[s - 1] >= (INT64_C(1) << 55))
      return LA_EPROTO; /* the caller bounds every value anyway */
    val[s] = val[s - 1] + 1 + (int64_t)w;
  }
  uint32_t per_len[LA_HUFF_MAX_LEN + 1] = {0};
  for (uint64_t s = 0; s < nsym; s += 2) {
    uint8_t b;
    if ((rc = la_creader_u8(r, &b)) != 0) return rc;
    len[s] = b & 15;
    if (s + 1 < nsym)
      len[s + 1] = b >> 4;
    else if (b >> 4)
      return LA_EPROTO;
  }
  uint64_t kraft = 0; /* in units of 2^-15 */
  for (uint64_t s = 0; s < nsym; s++) {
    if ((nsym == 1) != (len[s] == 0)) return LA_EPROTO;
    per_len[len[s]]++;
    if (len[s]) kraft += UINT64_C(1) << (LA_HUFF_MAX_LEN - len[s]);
  }
  if (kraft > (UINT64_C(1) << LA_HUFF_MAX_LEN)) return LA_EPROTO;
  if ((rc = la_creader_varint(r, &nbytes)) != 0) return rc;
  if (nbytes > r->len - r->off) return LA_ETRUNC;
  *smin = val[0]; /* the table is in ascending order */
  *smax = val[nsym - 1];
  if (nsym == 1) {
    if (nbytes != 0) return LA_EPROTO;
    for (uint64_t j = 0; j < m; j++) d[j] = val[0];
    return 0;
  }
  /* canonical decoding: the symbols by (length, value), the first code
   * and the first index of each length */
  uint16_t order[LA_CENC_QRUN_MAX];
  uint32_t first_code[LA_HUFF_MAX_LEN + 2], first_idx[LA_HUFF_MAX_LEN + 2];
  uint32_t code = 0, at = 0;
  for (int l = 1; l <= LA_HUFF_MAX_LEN; l++) {
    first_code[l] = code;
    first_idx[l] = at;
    at += per_len[l];
    code = (code + per_len[l]) << 1;
  }
  uint32_t fill[LA_HUFF_MAX_LEN + 1];
  memcpy(fill, first_idx, sizeof fill);
  for (uint64_t s = 0; s < nsym; s++) order[fill[len[s]]++] = (uint16_t)s;
  int64_t byk[LA_CENC_QRUN_MAX]; /* the values in canonical order */
  for (uint64_t k = 0; k < nsym; k++) byk[k] = val[order[k]];
  /* a table of the next lb bits: the symbol's place in order and its
   * length for every code of at most lb bits (0: a longer code, or none,
   * read bit by bit); lb no more than the longest code, so a record of
   * few short codes fills a small table */
  int maxlen = 0;
  for (int l = 1; l <= LA_HUFF_MAX_LEN; l++)
    if (per_len[l]) maxlen = l;
  int lb = maxlen < LA_HUFF_LUT_BITS ? maxlen : LA_HUFF_LUT_BITS;
  while (lb > 1 && (UINT64_C(1) << lb) > 4 * m) lb--; /* table <= 4m */
  uint16_t lut[1u << LA_HUFF_LUT_BITS];
  memset(lut, 0, sizeof(uint16_t) << lb);
  for (int l = 1; l <= lb; l++)
    for (uint32_t i = 0; i < per_len[l]; i++) {
      uint32_t c = first_code[l] + i, k = first_idx[l] + i;
      uint16_t e = (uint16_t)(k << 4 | (uint32_t)l);
      for (uint32_t f = c << (lb - l); f < (c + 1) << (lb - l); f++) lut[f] = e;
    }
  const uint8_t *p = r->p + r->off;
  uint64_t bit = 0, nbits = 8 * nbytes, win = 0; /* win: bits from bit on,
                                                    most significant first */
  uint64_t next = 0; /* bytes of p loaded into win */
  int nw = 0;        /* bits in win (zeros beyond the stream) */
  for (uint64_t j = 0; j < m; j++) {
    while (nw <= 56) { /* refill: whole bytes, zeros past the end */
      if (next < nbytes) win |= (uint64_t)p[next] << (56 - nw);
      next++;
      nw += 8;
    }
    uint32_t e = lut[win >> (64 - lb)], k;
    int l;
    if (e) {
      l = (int)(e & 15);
      k = e >> 4;
    } else { /* longer than lb bits, or not a code */
      uint32_t c = (uint32_t)(win >> (64 - lb));
      for (l = lb;;) {
        if (l == LA_HUFF_MAX_LEN) return LA_EPROTO;
        l++;
        c = c << 1 | (uint32_t)((win >> (64 - l)) & 1u);
        if (c - first_code[l] < per_len[l]) break;
      }
      k = first_idx[l] + c - first_code[l];
    }
    if (bit + (uint64_t)l > nbits) return LA_EPROTO; /* past the stream */
    bit += (uint64_t)l;
    win <<= l;
    nw -= l;
    d[j] = byk[k];
  }
  /* the stream ends in the last byte, padded with zero bits */
  if ((nbits - bit) >= 8) return LA_EPROTO;
  if (bit < nbits && (p[nbytes - 1] & ((1u << (nbits - bit)) - 1u)) != 0)
    return LA_EPROTO;
  r->off += nbytes;
  return 0;
}
