/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_huff.c: the entropy stage of quantized runs (docs/compaction.md,
 * "Coded quantized run").
 *
 * A rough timing series in whole timer ticks takes a few values most of the
 * time (a light stencil on a 10 ns timer: 26 ticks in 81% of the cells, 25
 * or 1 in most of the rest). A quantized run stores each as a varint of at
 * least one byte; coded, the record stores the integers' distinct values
 * relative to the run's reference once and then either
 *   - each point as a canonical Huffman code of its value (the point form:
 *     about 1.3 bits a point there), or
 *   - tokens (r, s): r points of the record's most common value (its mode),
 *     then one point of value s, each token a canonical Huffman code (the
 *     run form: a timer whose ticks alias with the cells' cost repeats
 *     "4 modes, then 1 tick" with few variations, about 0.5 bits a point).
 * The encoder writes the smaller form, and only when it is smaller than the
 * plain run, so a record never grows. A table holds at most
 * LA_HUFF_MAX_SYMS (256) values or tokens, and codes are at most
 * LA_HUFF_MAX_LEN (15) bits: a record of at most LA_CENC_QRUN_MAX (4096)
 * points could need more only for counts like Fibonacci numbers (a code of
 * depth L needs a total weight of at least Fibonacci(L + 2) = 2584 for
 * L = 16); the encoder then writes the other form or the plain run.
 *
 * Record body (after the tag, kind 3 with bit 2 set):
 *   point form: varint nsym (1..count), the table: varint zigzag(s0),
 *   nsym - 1 varints s_i - s_(i-1) - 1 (the values k - kref, ascending;
 *   kref is the quantized state qk before the record), ceil(nsym / 2)
 *   bytes of 4-bit code lengths (low nibble first; 0 for a lone symbol,
 *   else 1..15, Kraft sum <= 1), varint nbytes, then nbytes of codes, most
 *   significant bit first, canonical (by length, then value), padded with
 *   zero bits.
 *   run form: varint 0, varint nsym (2..count), the table as above, varint
 *   the mode's place in the table, varint ntok (1..count), the tokens
 *   t = r * nsym + (s's place in the table), 0 <= r < LA_HUFF_RUN, as
 *   varint t_0 and ntok - 1 varints t_i - t_(i-1) - 1 (ascending), their
 *   4-bit code lengths, varint nbytes and the codes as above. Token (r, s)
 *   stands for r points of the mode, then a point of s; the tokens cover
 *   the count points exactly.
 *   run form with the previous tables: varint 0, varint 0, varint nbytes
 *   and the codes: the values (as integers, not relative to kref), the
 *   mode, the tokens and their codes of the last run-form record of the
 *   encoding that wrote them. A series whose records keep the same few
 *   values and tokens pays for its tables once.
 * No allocation but the encoder's tables (la_huff_tables_t, one per
 * encoding); the rest is on the stack, bounded by the record.
 */
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"
#include "la_errors.h"
#if LA_COMPACT_X86
#include <immintrin.h>
#endif

#define LA_HUFF_DIRECT 256 /* values in [-256, 256) are found by index */
#define LA_HUFF_FAR 32     /* other values: more than this, no coding */
#define LA__FAR_BITS 6     /* their hash table: 64 slots, at most half full */
#define LA_HUFF_MIN_POINTS 32 /* shorter runs stay plain */
#define LA_HUFF_RUN 32        /* a token's mode points: 0..31 */

typedef struct {
  int64_t v;      /* k - kref (a token: its number t) */
  uint32_t n;     /* points (tokens) */
  uint32_t code;  /* canonical code */
  uint8_t len;    /* code length */
} la_hsym_t;

/* The encoder's copy of the run-form tables the last such record wrote. */
struct la_huff_tables {
  size_t nsym, ntok;
  int64_t abs[LA_HUFF_MAX_SYMS]; /* the values as integers, ascending */
  int64_t mode;                  /* the mode's integer */
  uint16_t tid[LA_HUFF_MAX_SYMS]; /* the tokens' numbers */
  uint32_t code[LA_HUFF_MAX_SYMS];
  uint8_t len[LA_HUFF_MAX_SYMS];
  uint16_t slot[LA_HUFF_RUN * LA_HUFF_MAX_SYMS]; /* number -> 1 + index */
};

void la_huff_tables_free(la_huff_tables_t *t) { free(t); }

/* a before b by count, then value (Huffman's order) */
static inline int by_count(const la_hsym_t *a, const la_hsym_t *b) {
  return a->n != b->n ? a->n < b->n : a->v < b->v;
}
static inline int by_value(const la_hsym_t *a, const la_hsym_t *b) {
  return a->v < b->v;
}

/* srt[0..n) in the order of before, a total order (values are distinct):
 * insertion for the few symbols of a typical run; a merge of sorted runs
 * of 16 for many (a series with interference has a symbol per burst),
 * where qsort's call per comparison cost more than the rest of the
 * record's coding. Any sort gives the same order. Inlined at each call,
 * so that the comparison is too. */
static inline __attribute__((always_inline)) void sort_syms(
    la_hsym_t **srt, size_t n,
    int (*before)(const la_hsym_t *, const la_hsym_t *)) {
  if (n > 48) {
    la_hsym_t *tmp[LA_HUFF_MAX_SYMS], **a = srt, **b = tmp;
    for (size_t lo = 0; lo < n; lo += 16) { /* insertion within runs */
      size_t hi = lo + 16 < n ? lo + 16 : n;
      for (size_t i = lo + 1; i < hi; i++) {
        la_hsym_t *t = srt[i];
        size_t k = i;
        for (; k > lo && before(t, srt[k - 1]); k--) srt[k] = srt[k - 1];
        srt[k] = t;
      }
    }
    for (size_t w = 16; w < n; w *= 2) { /* merges, a <-> b */
      for (size_t lo = 0; lo < n; lo += 2 * w) {
        size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
        size_t i = lo, j = mid, o = lo;
        while (i < mid && j < hi) b[o++] = before(a[j], a[i]) ? a[j++] : a[i++];
        while (i < mid) b[o++] = a[i++];
        while (j < hi) b[o++] = a[j++];
      }
      la_hsym_t **t = a;
      a = b;
      b = t;
    }
    if (a != srt) memcpy(srt, a, n * sizeof *srt);
    return;
  }
  for (size_t a = 1; a < n; a++) {
    la_hsym_t *t = srt[a];
    size_t b = a;
    for (; b > 0 && before(t, srt[b - 1]); b--) srt[b] = srt[b - 1];
    srt[b] = t;
  }
}

/* Code lengths of the nsym (>= 2) symbols, sorted by count ascending in
 * srt: Huffman's construction with two queues (leaves in order, internal
 * nodes in the order made), then each leaf's depth. */
static void lengths(la_hsym_t **srt, size_t nsym) {
  uint32_t w[2 * LA_HUFF_MAX_SYMS];
  uint16_t parent[2 * LA_HUFF_MAX_SYMS];
  size_t leaf = 0, node = nsym, made = nsym;
  if (nsym < 2 || nsym > LA_HUFF_MAX_SYMS) return; /* never: build_code */
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

/* The canonical code of the n symbols vs[0..n) (ascending by value, each
 * with its count): every symbol's length and code. Returns the bits of
 * the coded points, or UINT64_MAX when a code would be longer than
 * LA_HUFF_MAX_LEN. A lone symbol takes length 0 and no bits. */
static uint64_t build_code(la_hsym_t **vs, size_t n) {
  la_hsym_t *srt[LA_HUFF_MAX_SYMS];
  uint64_t bits = 0;
  if (n == 1) {
    vs[0]->len = 0;
    return 0;
  }
  memcpy(srt, vs, n * sizeof *srt);
  sort_syms(srt, n, by_count);
  lengths(srt, n);
  size_t per_len[LA_HUFF_MAX_LEN + 2] = {0};
  for (size_t s = 0; s < n; s++) {
    if (srt[s]->len > LA_HUFF_MAX_LEN) return UINT64_MAX;
    bits += (uint64_t)srt[s]->n * srt[s]->len;
    per_len[srt[s]->len + 1]++;
  }
  /* canonical codes: by length, then value (a stable bucket sort of the
   * value order by length) */
  for (int l = 1; l <= LA_HUFF_MAX_LEN; l++) per_len[l + 1] += per_len[l];
  for (size_t s = 0; s < n; s++) srt[per_len[vs[s]->len]++] = vs[s];
  uint32_t code = 0;
  uint8_t len = srt[0]->len;
  for (size_t s = 0; s < n; s++) {
    code <<= srt[s]->len - len;
    len = srt[s]->len;
    srt[s]->code = code++;
  }
  return bits;
}

/* Bytes of a table of the n ascending values vs (the first zigzag when
 * zig), and of the n code lengths after it. */
static size_t table_len(la_hsym_t *const *vs, size_t n, int zig, int lens) {
  size_t size = la_varint_len(zig ? la_zigzag(vs[0]->v) : (uint64_t)vs[0]->v);
  for (size_t s = 1; s < n; s++)
    size += la_varint_len((uint64_t)(vs[s]->v - vs[s - 1]->v - 1));
  return size + (lens ? (n + 1) / 2 : 0);
}

static uint8_t *table_put(uint8_t *p, la_hsym_t *const *vs, size_t n, int zig,
                          int lens) {
  p += la_varint_write(p, zig ? la_zigzag(vs[0]->v) : (uint64_t)vs[0]->v);
  for (size_t s = 1; s < n; s++)
    p += la_varint_write(p, (uint64_t)(vs[s]->v - vs[s - 1]->v - 1));
  for (size_t s = 0; lens && s < n; s += 2)
    *p++ = (uint8_t)(vs[s]->len | (s + 1 < n ? vs[s + 1]->len << 4 : 0));
  return p;
}

/* 8 bytes, most significant first. */
static inline void put_be64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  v = __builtin_bswap64(v);
  memcpy(p, &v, 8);
#else
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (56 - 8 * i));
#endif
}

/* varint nbytes and the codes of seq[0..cnt) (indices into sym), most
 * significant bit first, into p (room up to end). Three codes a step
 * (at most 45 bits) are joined apart from the accumulator, which takes
 * them in one shift, and its pending bits are stored as 8 bytes whatever
 * their number, the pointer moved by the whole bytes: no branch on the
 * codes' lengths (a byte count that varies with the data mispredicted),
 * one shift of the accumulator per three codes. Within 8 bytes of end,
 * and for the last codes, one code a step and 4 bytes at a time. */
static uint8_t *codes_put(uint8_t *p, const uint8_t *end, uint64_t bits,
                          const uint8_t *seq, uint64_t cnt,
                          const la_hsym_t *sym, size_t nsym) {
  uint32_t code[LA_HUFF_MAX_SYMS];
  uint8_t clen[LA_HUFF_MAX_SYMS];
  p += la_varint_write(p, (bits + 7) / 8);
  if (bits == 0) return p; /* a lone symbol: no codes */
  for (size_t s = 0; s < nsym; s++) {
    code[s] = sym[s].code;
    clen[s] = sym[s].len;
  }
  uint64_t acc = 0, j = 0; /* acc: its low nacc bits are pending */
  int nacc = 0;
  for (; j + 3 <= cnt && end - p >= 8; j += 3) { /* nacc < 8 here */
    unsigned l1 = clen[seq[j + 1]], l2 = clen[seq[j + 2]];
    unsigned l = clen[seq[j]] + l1 + l2;
    uint64_t v = (uint64_t)code[seq[j]] << (l1 + l2) |
                 (uint64_t)code[seq[j + 1]] << l2 | code[seq[j + 2]];
    acc = acc << l | v;
    nacc += (int)l;
    put_be64(p, acc << (63 - nacc) << 1); /* nacc <= 52; 0 for no bits */
    p += nacc >> 3;
    nacc &= 7;
  }
  for (; j < cnt; j++) {
    acc = acc << clen[seq[j]] | code[seq[j]];
    nacc += clen[seq[j]];
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
  return p;
}

static void count_syms(const uint8_t *idx, uint64_t m, la_hsym_t *sym,
                       size_t nsym, int simd);

/* The run form's tokens: tok[0..*ntok) distinct (r, s), seq[0..*nseq)
 * each token's index in tok. Returns the coded bits, or UINT64_MAX when
 * the form does not apply (more than LA_HUFF_MAX_SYMS distinct tokens or
 * a code too long). vrank[s]: symbol s's place in the table; mode: the
 * mode's symbol. */
static uint64_t run_tokens(const uint8_t *idx, uint64_t m, size_t nsym,
                           const uint8_t *vrank, size_t mode, la_hsym_t *tok,
                           size_t *ntok, uint8_t *seq, uint64_t *nseq,
                           la_hsym_t **vt) {
  uint16_t slot[LA_HUFF_RUN * LA_HUFF_MAX_SYMS]; /* 1 + index, 0: none */
  memset(slot, 0, LA_HUFF_RUN * nsym * sizeof *slot);
  size_t nt = 0;
  uint64_t ns = 0;
  uint32_t r = 0;
  for (uint64_t j = 0; j < m; j++) {
    size_t s = idx[j];
    if (s == mode && r < LA_HUFF_RUN - 1 && j + 1 < m) {
      r++;
      continue;
    }
    size_t t = (size_t)r * nsym + vrank[s];
    if (__builtin_expect(slot[t] == 0, 0)) {
      if (nt == LA_HUFF_MAX_SYMS) return UINT64_MAX;
      tok[nt] = (la_hsym_t){.v = (int64_t)t};
      slot[t] = (uint16_t)++nt;
    }
    seq[ns++] = (uint8_t)(slot[t] - 1);
    r = 0;
  }
  count_syms(seq, ns, tok, nt, 0);
  for (size_t k = 0; k < nt; k++) vt[k] = &tok[k];
  sort_syms(vt, nt, by_value);
  *ntok = nt;
  *nseq = ns;
  return build_code(vt, nt);
}

#if LA_COMPACT_X86
/* Bit k of the result: idx[k] != mode, for k < n (n <= 64). */
__attribute__((target("avx2"))) static uint64_t other_mask_avx2(
    const uint8_t *idx, size_t n, uint8_t mode) {
  uint8_t b[64];
  memcpy(b, idx, n);
  memset(b + n, mode, 64 - n);
  const __m256i vm = _mm256_set1_epi8((char)mode);
  uint32_t lo = (uint32_t)_mm256_movemask_epi8(
      _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)b), vm));
  uint32_t hi = (uint32_t)_mm256_movemask_epi8(
      _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(b + 32)), vm));
  return ~((uint64_t)hi << 32 | lo);
}
#endif

/* run_tokens() from the places of the points that are not the mode, 64
 * points at a time (a bit mask, AVX2 comparisons): a gap of g modes
 * before such a point is g / 32 tokens (31, mode), then (g % 32, s); the
 * modes at the end are tokens (31, mode) and a last (g' - 1, mode). The
 * same tokens in the same order as run_tokens(), one step per token
 * instead of one branch per point (modes and others alternate at random:
 * the branch mispredicts). */
static uint64_t run_tokens_gaps(const uint8_t *idx, uint64_t m, size_t nsym,
                                const uint8_t *vrank, size_t mode,
                                la_hsym_t *tok, size_t *ntok, uint8_t *seq,
                                uint64_t *nseq, la_hsym_t **vt) {
  uint16_t slot[LA_HUFF_RUN * LA_HUFF_MAX_SYMS]; /* 1 + index, 0: none */
  memset(slot, 0, LA_HUFF_RUN * nsym * sizeof *slot);
  size_t nt = 0;
  uint64_t ns = 0, next = 0; /* next: the first point not yet in a token */
  const size_t tmode = (size_t)(LA_HUFF_RUN - 1) * nsym + vrank[mode];
#define LA__TOKEN(T)                                          \
  do {                                                        \
    size_t t_ = (T);                                          \
    if (__builtin_expect(slot[t_] == 0, 0)) {                 \
      if (nt == LA_HUFF_MAX_SYMS) return UINT64_MAX;          \
      tok[nt] = (la_hsym_t){.v = (int64_t)t_};                \
      slot[t_] = (uint16_t)++nt;                              \
    }                                                         \
    seq[ns++] = (uint8_t)(slot[t_] - 1);                      \
  } while (0)
  for (uint64_t b = 0; b < m; b += 64) {
    size_t w = m - b < 64 ? (size_t)(m - b) : 64;
    uint64_t mask = other_mask_avx2(idx + b, w, (uint8_t)mode);
    while (mask) {
      uint64_t p = b + (uint64_t)__builtin_ctzll(mask), g = p - next;
      mask &= mask - 1;
      for (; g >= LA_HUFF_RUN; g -= LA_HUFF_RUN) LA__TOKEN(tmode);
      LA__TOKEN((size_t)g * nsym + vrank[idx[p]]);
      next = p + 1;
    }
  }
  if (next < m) {
    uint64_t g = m - next;
    for (; g > LA_HUFF_RUN; g -= LA_HUFF_RUN) LA__TOKEN(tmode);
    LA__TOKEN((size_t)(g - 1) * nsym + vrank[mode]);
  }
#undef LA__TOKEN
  count_syms(seq, ns, tok, nt, 1);
  for (size_t k = 0; k < nt; k++) vt[k] = &tok[k];
  sort_syms(vt, nt, by_value);
  *ntok = nt;
  *nseq = ns;
  return build_code(vt, nt);
}

/* The bits of the tokens tok[0..ntok) (numbers over the nsym values vs,
 * relative to kref) coded with the previous tables pt, each token's code
 * into rc[]; UINT64_MAX when a token or the mode is not in them. */
static uint64_t reuse_bits(const la_huff_tables_t *pt, la_hsym_t *const *vs,
                           size_t nsym, int64_t kref, int64_t mode,
                           const la_hsym_t *tok, size_t ntok, la_hsym_t *rc) {
  size_t map[LA_HUFF_MAX_SYMS], i = 0;
  uint64_t bits = 0;
  if (pt->mode != mode) return UINT64_MAX;
  for (size_t s = 0; s < nsym; s++) { /* both ascending: a merge */
    int64_t a = kref + vs[s]->v;
    while (i < pt->nsym && pt->abs[i] < a) i++;
    if (i == pt->nsym || pt->abs[i] != a) return UINT64_MAX;
    map[s] = i;
  }
  for (size_t k = 0; k < ntok; k++) {
    size_t t = (size_t)tok[k].v, r = t / nsym;
    size_t q = r * pt->nsym + map[t % nsym], at = pt->slot[q];
    if (at == 0) return UINT64_MAX;
    rc[k].code = pt->code[at - 1];
    rc[k].len = pt->len[at - 1];
    bits += (uint64_t)tok[k].n * rc[k].len;
  }
  return bits;
}

/* Keeps the run form's tables just written (tokens vt over values vs). */
static void tables_keep(la_huff_tables_t *pt, la_hsym_t *const *vs,
                        size_t nsym, int64_t kref, int64_t mode,
                        la_hsym_t *const *vt, size_t ntok) {
  for (size_t k = 0; k < pt->ntok; k++) pt->slot[pt->tid[k]] = 0;
  pt->nsym = nsym;
  pt->ntok = ntok;
  pt->mode = mode;
  for (size_t s = 0; s < nsym; s++) pt->abs[s] = kref + vs[s]->v;
  for (size_t k = 0; k < ntok; k++) {
    pt->tid[k] = (uint16_t)vt[k]->v;
    pt->code[k] = vt[k]->code;
    pt->len[k] = vt[k]->len;
    pt->slot[vt[k]->v] = (uint16_t)(k + 1);
  }
}

#if LA_COMPACT_X86
/* idx[j..) of the points ks[j..m) whose value d = k - kref was seen
 * already and is within [-LA_HUFF_DIRECT, LA_HUFF_DIRECT): four points a
 * step (AVX2: the differences truncated to 32 bits, the table gathered).
 * Returns the first point of the first group of four it did not map (a new
 * value, a far one, or the last points): the scalar loop takes those. The
 * differences are integers below 2^54; below 2^31 the truncation is the
 * scalar loop's conversion, above it the group is out of range. */
__attribute__((target("avx2"))) static uint64_t map_avx2(
    const double *ks, uint64_t j, uint64_t m, double kref,
    const uint32_t *direct, uint8_t *idx) {
  const __m256d vr = _mm256_set1_pd(kref);
  const __m128i off = _mm_set1_epi32(LA_HUFF_DIRECT),
                top = _mm_set1_epi32(2 * LA_HUFF_DIRECT),
                neg = _mm_set1_epi32(-1), zero = _mm_setzero_si128(),
                one = _mm_set1_epi32(1),
                low = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1,
                                    -1, -1, -1, -1, -1);
  for (; j + 4 <= m; j += 4) {
    __m128i b = _mm_add_epi32(
        _mm256_cvttpd_epi32(_mm256_sub_pd(_mm256_loadu_pd(ks + j), vr)), off);
    __m128i in = _mm_and_si128(_mm_cmpgt_epi32(b, neg), _mm_cmplt_epi32(b, top));
    if (_mm_movemask_ps(_mm_castsi128_ps(in)) != 0xf) break;
    __m128i sl = _mm_i32gather_epi32((const int *)direct, b, 4);
    if (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(sl, zero))) != 0)
      break;
    int w = _mm_cvtsi128_si32(_mm_shuffle_epi8(_mm_sub_epi32(sl, one), low));
    memcpy(idx + j, &w, 4);
  }
  return j;
}

/* cnt[s] = the points of idx[0..m) that are symbol s, for s < nsym (at
 * most LA__COUNT_SIMD): per symbol, AVX2 byte comparisons 32 points at a
 * time, counted by the population of the comparison's mask. */
__attribute__((target("avx2,popcnt"))) static void count_avx2(
    const uint8_t *idx, uint64_t m, size_t nsym, uint32_t *cnt) {
  uint64_t j = 0;
  for (size_t s = 0; s < nsym; s++) cnt[s] = 0;
  for (; j + 32 <= m; j += 32) {
    __m256i v = _mm256_loadu_si256((const __m256i *)(idx + j));
    for (size_t s = 0; s < nsym; s++)
      cnt[s] += (uint32_t)__builtin_popcount((uint32_t)_mm256_movemask_epi8(
          _mm256_cmpeq_epi8(v, _mm256_set1_epi8((char)s))));
  }
  for (; j < m; j++) cnt[idx[j]]++;
}
#endif

/* Symbols counted by comparisons (count_avx2) up to this many; more: one
 * counter update per point. */
#define LA__COUNT_SIMD 24

/* sym[s].n = the points of idx[0..m) that are symbol s, s < nsym. */
static void count_syms(const uint8_t *idx, uint64_t m, la_hsym_t *sym,
                       size_t nsym, int simd) {
#if LA_COMPACT_X86
  if (simd && nsym <= LA__COUNT_SIMD) {
    uint32_t c[LA__COUNT_SIMD];
    count_avx2(idx, m, nsym, c);
    for (size_t s = 0; s < nsym; s++) sym[s].n = c[s];
    return;
  }
#else
  (void)simd;
#endif
  /* four counters per symbol, point j in cnt[j % 4]: a run of one value
   * does not wait on one counter */
  uint32_t cnt[4][LA_HUFF_MAX_SYMS];
  memset(cnt, 0, 4 * sizeof cnt[0]);
  for (uint64_t j = 0; j < m; j++) cnt[j & 3][idx[j]]++;
  for (size_t s = 0; s < nsym; s++)
    sym[s].n = cnt[0][s] + cnt[1][s] + cnt[2][s] + cnt[3][s];
}

size_t la_huff_qrun_encode(const double *ks, uint64_t m, double kref,
                           uint8_t *out, size_t limit,
                           la_huff_tables_t **tables, int simd) {
  la_hsym_t sym[LA_HUFF_MAX_SYMS];
  uint32_t direct[2 * LA_HUFF_DIRECT]; /* 1 + index, 0: not seen */
  uint8_t idx[LA_CENC_QRUN_MAX];
  size_t nsym = 0, nfar = 0;
  /* a short run gains a few bytes at most: not worth a table */
  if (m < LA_HUFF_MIN_POINTS || m > LA_CENC_QRUN_MAX) return 0;
  /* the far values seen, by hash (at most LA_HUFF_FAR: never full; a
   * search through the symbols took a third of the coding of row values,
   * whose timer steps are tens of ticks) */
  int64_t far_v[1u << LA__FAR_BITS];
  uint16_t far_at[1u << LA__FAR_BITS]; /* 1 + index, 0: empty */
  memset(direct, 0, sizeof direct);
  memset(far_at, 0, sizeof far_at);
  /* each point's symbol, in order of first appearance; counted after
   * (count_syms). With AVX2 the points of values seen already go four at
   * a time (map_avx2), the others one by one here, in the same order, so
   * the symbols are numbered the same. */
  for (uint64_t j = 0, stop = 0; j < m; j++) {
#if LA_COMPACT_X86
    if (simd && j >= stop) {
      j = map_avx2(ks, j, m, kref, direct, idx);
      if (j >= m) break;
      stop = j + 4; /* the group it stopped at: one by one */
    }
#endif
    /* |difference| < 2^54, an integer: exact, and exact as an int64 */
    int64_t d = (int64_t)(ks[j] - kref);
    size_t s;
    if ((uint64_t)(d + LA_HUFF_DIRECT) < 2 * LA_HUFF_DIRECT) {
      uint32_t *slot = &direct[d + LA_HUFF_DIRECT];
      if (__builtin_expect(*slot == 0, 0)) {
        if (nsym == LA_HUFF_MAX_SYMS) return 0;
        sym[nsym] = (la_hsym_t){.v = d};
        *slot = (uint32_t)++nsym;
      }
      s = *slot - 1u;
    } else { /* a far value: by its hash (open addressing, never full) */
      size_t h = (size_t)(((uint64_t)d * 0x9E3779B97F4A7C15ull) >>
                          (64 - LA__FAR_BITS));
      while (far_at[h] != 0 && far_v[h] != d)
        h = (h + 1) & ((1u << LA__FAR_BITS) - 1);
      if (far_at[h] == 0) {
        if (nsym == LA_HUFF_MAX_SYMS || ++nfar > LA_HUFF_FAR) return 0;
        sym[nsym++] = (la_hsym_t){.v = d};
        far_v[h] = d;
        far_at[h] = (uint16_t)nsym;
      }
      s = far_at[h] - 1u;
    }
    idx[j] = (uint8_t)s;
  }
  count_syms(idx, m, sym, nsym, simd);
  size_t mode = 0;
  for (size_t s = 0; s < nsym; s++)
    if (sym[s].n > sym[mode].n) mode = s;
  la_hsym_t *vs[LA_HUFF_MAX_SYMS];
  for (size_t s = 0; s < nsym; s++) vs[s] = &sym[s];
  sort_syms(vs, nsym, by_value);
  /* the point form */
  uint64_t bits = build_code(vs, nsym);
  size_t size = SIZE_MAX;
  if (bits != UINT64_MAX)
    size = la_varint_len(nsym) + table_len(vs, nsym, 1, 1) +
           la_varint_len((bits + 7) / 8) + (size_t)((bits + 7) / 8);
  /* the run form, where the mode is at least half the points (else runs
   * are short and the point form is as good) */
  la_hsym_t tok[LA_HUFF_MAX_SYMS], *vt[LA_HUFF_MAX_SYMS];
  uint8_t seq[LA_CENC_QRUN_MAX], vrank[LA_HUFF_MAX_SYMS];
  size_t ntok = 0, rsize = SIZE_MAX;
  uint64_t nseq = 0, rbits = UINT64_MAX;
  if (nsym >= 2 && 2 * (uint64_t)sym[mode].n >= m) {
    for (size_t s = 0; s < nsym; s++) vrank[vs[s] - sym] = (uint8_t)s;
#if LA_COMPACT_X86
    if (simd)
      rbits = run_tokens_gaps(idx, m, nsym, vrank, mode, tok, &ntok, seq,
                              &nseq, vt);
    else
#endif
      rbits =
          run_tokens(idx, m, nsym, vrank, mode, tok, &ntok, seq, &nseq, vt);
    if (rbits != UINT64_MAX)
      rsize = 1 + la_varint_len(nsym) + table_len(vs, nsym, 1, 0) +
              la_varint_len(vrank[mode]) + la_varint_len(ntok) +
              table_len(vt, ntok, 0, 1) + la_varint_len((rbits + 7) / 8) +
              (size_t)((rbits + 7) / 8);
  }
  /* the run form with the previous record's tables */
  la_hsym_t reused[LA_HUFF_MAX_SYMS];
  size_t usize = SIZE_MAX;
  uint64_t ubits = UINT64_MAX;
  int64_t kr = (int64_t)kref;
  if (rbits != UINT64_MAX && tables && *tables)
    ubits = reuse_bits(*tables, vs, nsym, kr, kr + sym[mode].v, tok, ntok,
                       reused);
  if (ubits != UINT64_MAX)
    usize = 2 + la_varint_len((ubits + 7) / 8) + (size_t)((ubits + 7) / 8);
  uint8_t *p = out;
  if (usize <= rsize && usize < size && usize < limit) {
    p += la_varint_write(p, 0);
    p += la_varint_write(p, 0);
    p = codes_put(p, out + limit, ubits, seq, nseq, reused, ntok);
  } else if (rsize < size && rsize < limit) {
    p += la_varint_write(p, 0);
    p += la_varint_write(p, nsym);
    p = table_put(p, vs, nsym, 1, 0);
    p += la_varint_write(p, vrank[mode]);
    p += la_varint_write(p, ntok);
    p = table_put(p, vt, ntok, 0, 1);
    p = codes_put(p, out + limit, rbits, seq, nseq, tok, ntok);
    if (tables && !*tables) *tables = calloc(1, sizeof **tables);
    if (tables && *tables) /* without memory: no reuse, as before */
      tables_keep(*tables, vs, nsym, kr, kr + sym[mode].v, vt, ntok);
  } else if (size < limit) {
    p += la_varint_write(p, nsym);
    p = table_put(p, vs, nsym, 1, 1);
    p = codes_put(p, out + limit, bits, idx, m, sym, nsym);
  } else {
    return 0; /* the plain record is as small */
  }
  return (size_t)(p - out);
}


/* n varints of ascending values into val (the first zigzag when zig; the
 * others < bound when bound is not 0). */
static int table_get(la_creader_t *r, uint64_t n, int zig, uint64_t bound,
                     int64_t *val) {
  uint64_t w;
  int rc;
  if ((rc = la_creader_varint(r, &w)) != 0) return rc;
  if (!zig && w >= (UINT64_C(1) << 55)) return LA_EPROTO;
  val[0] = zig ? la_unzigzag(w) : (int64_t)w;
  for (uint64_t s = 1; s < n; s++) {
    if ((rc = la_creader_varint(r, &w)) != 0) return rc;
    if (w >= (UINT64_C(1) << 55) || val[s - 1] >= (INT64_C(1) << 55))
      return LA_EPROTO; /* the caller bounds every value anyway */
    val[s] = val[s - 1] + 1 + (int64_t)w;
  }
  if (bound && (uint64_t)val[n - 1] >= bound) return LA_EPROTO;
  return 0;
}

/* The stream of nbytes codes of a table of n symbols, at r. */
static int hdec_stream(la_hdec_t *h, la_creader_t *r, uint64_t n,
                       uint64_t nbytes) {
  if (nbytes > r->len - r->off) return LA_ETRUNC;
  if (n == 1 && nbytes != 0) return LA_EPROTO;
  h->p = r->p + r->off;
  h->nbytes = nbytes;
  h->nbits = 8 * nbytes;
  h->avail = r->len - r->off; /* the codes and the records after them */
  r->off += nbytes;
  return 0;
}

/* A lookup table entry (uint64): up to 4 codes that lie whole in the
 * window, in a row: their symbols (9 bits each, LA__NOSYM past the
 * number), the first three's lengths, all their bits, their number (0:
 * no code of at most lb bits, read them one by one) and their points. */
#define LA__NOSYM 256u
#define LA__E_SYM(e, i) ((unsigned)((e) >> (9 * (i))) & 511u)
#define LA__E_L(e, i) ((unsigned)((e) >> (36 + 4 * (i))) & 15u)
#define LA__E_LEN(e) ((unsigned)((e) >> 48) & 15u)
#define LA__E_CNT(e) ((unsigned)((e) >> 52) & 7u)
#define LA__E_PTS(e) ((unsigned)((e) >> 55) & 255u)
#define LA__E_NONE                                                  \
  ((uint64_t)LA__NOSYM | (uint64_t)LA__NOSYM << 9 |                 \
   (uint64_t)LA__NOSYM << 18 | (uint64_t)LA__NOSYM << 27)

/* Entry e with the code of symbol s (l bits, w points) before its codes
 * (a fourth one dropped). */
static inline uint64_t hdec_prepend(uint64_t e, unsigned s, unsigned l,
                                    unsigned w, const uint8_t *pw) {
  unsigned cnt = LA__E_CNT(e), l0 = LA__E_L(e, 0), l1 = LA__E_L(e, 1);
  unsigned len = LA__E_LEN(e), pts = LA__E_PTS(e);
  if (cnt == 4) { /* the fourth code drops out */
    len = l0 + l1 + LA__E_L(e, 2);
    pts -= pw[LA__E_SYM(e, 3)];
    cnt = 3;
  }
  return ((e << 9 | s) & ((UINT64_C(1) << 36) - 1)) | (uint64_t)l << 36 |
         (uint64_t)l0 << 40 | (uint64_t)l1 << 44 | (uint64_t)(len + l) << 48 |
         (uint64_t)(cnt + 1) << 52 | (uint64_t)(pts + w) << 55;
}

/* The lookup table of every lb-bit window: its first code, then the
 * table of the window's bits after that code (a prefix code: the bits
 * after a window's whole codes do not change them), for windows of 1 to
 * lb bits in turn. */
static void hdec_lut(la_hdec_t *h) {
  const int lb = h->lb;
  uint64_t tmp[2u << LA_HUFF_LUT_BITS], *tb[LA_HUFF_LUT_BITS + 1];
  tb[0] = tmp;
  tmp[0] = LA__E_NONE;
  for (int b = 1; b <= lb; b++) {
    uint64_t *t = b == lb ? h->lut : tb[b - 1] + (1u << (b - 1));
    tb[b] = t;
    for (uint32_t f = 0; f < (1u << b); f++) t[f] = LA__E_NONE;
    for (int l = 1; l <= b; l++)
      for (uint32_t i = 0; i < h->per_len[l]; i++) {
        uint32_t c = h->first_code[l] + i;
        unsigned s = h->order[h->first_idx[l] + i];
        const uint64_t *rest = tb[b - l];
        uint64_t *at = t + (c << (b - l));
        for (uint32_t r = 0; r < (1u << (b - l)); r++)
          at[r] = hdec_prepend(rest[r], s, (unsigned)l, h->w[s], h->w);
      }
  }
}

/* The n code lengths (4-bit, Kraft), the byte count and the decoding
 * tables; at most m codes follow (the lookup table's size); w[s] (NULL:
 * 1): the points symbol s stands for (1..32). */
static int hdec_init(la_hdec_t *h, la_creader_t *r, uint64_t n, uint64_t m,
                     const uint8_t *w) {
  uint8_t len[LA_HUFF_MAX_SYMS];
  uint64_t nbytes;
  int rc;
  memset(h->per_len, 0, sizeof h->per_len);
  for (uint64_t s = 0; s < n; s += 2) {
    uint8_t b;
    if ((rc = la_creader_u8(r, &b)) != 0) return rc;
    len[s] = b & 15;
    if (s + 1 < n)
      len[s + 1] = b >> 4;
    else if (b >> 4)
      return LA_EPROTO;
  }
  uint64_t kraft = 0; /* in units of 2^-15 */
  for (uint64_t s = 0; s < n; s++) {
    if ((n == 1) != (len[s] == 0)) return LA_EPROTO;
    h->per_len[len[s]]++;
    if (len[s]) kraft += UINT64_C(1) << (LA_HUFF_MAX_LEN - len[s]);
  }
  if (kraft > (UINT64_C(1) << LA_HUFF_MAX_LEN)) return LA_EPROTO;
  if ((rc = la_creader_varint(r, &nbytes)) != 0) return rc;
  if ((rc = hdec_stream(h, r, n, nbytes)) != 0) return rc;
  for (uint64_t s = 0; s < n; s++) h->w[s] = w ? w[s] : 1;
  h->w[LA__NOSYM] = 0;
  if (n == 1) { /* no bits: the lone symbol, four points at a time */
    h->order[0] = 0;
    h->lb = 0;
    h->lut[0] = LA__E_NONE;
    for (int i = 0; i < 4; i++)
      h->lut[0] = hdec_prepend(h->lut[0], 0, 0, h->w[0], h->w);
    return 0;
  }
  /* canonical decoding: the symbols by (length, value), the first code
   * and the first index of each length */
  uint32_t code = 0, at = 0;
  for (int l = 1; l <= LA_HUFF_MAX_LEN; l++) {
    h->first_code[l] = code;
    h->first_idx[l] = at;
    at += h->per_len[l];
    code = (code + h->per_len[l]) << 1;
  }
  uint32_t fill[LA_HUFF_MAX_LEN + 1];
  memcpy(fill, h->first_idx, sizeof fill);
  for (uint64_t s = 0; s < n; s++) h->order[fill[len[s]]++] = (uint16_t)s;
  /* a table of the next lb bits: 6 at least (room for several short
   * codes), more while the codes longer than lb would be more than 1/64
   * of the stream's codes (by their lengths' Kraft share, a canonical
   * code's estimate of their frequency; they are read bit by bit), at
   * most LA_HUFF_LUT_BITS; no more entries than 4 a point (a short record
   * fills a small table) */
  int lb = 6;
  for (;;) {
    uint64_t longer = 0; /* in units of 2^-15 */
    for (int l = lb + 1; l <= LA_HUFF_MAX_LEN; l++)
      longer += (uint64_t)h->per_len[l] << (LA_HUFF_MAX_LEN - l);
    if (lb == LA_HUFF_LUT_BITS || 64 * longer <= (1u << LA_HUFF_MAX_LEN))
      break;
    lb++;
  }
  while (lb > 1 && (UINT64_C(1) << lb) > 4 * m) lb--; /* table <= 4m */
  h->lb = lb;
  hdec_lut(h);
  return 0;
}

/* The stream's next 57 bits at least, from bit on, most significant
 * first: 8 bytes in one load where the encoding has them (the bits past
 * the stream do not matter: a code that reaches them is refused), else
 * byte by byte, zeros past the stream. */
static inline uint64_t hdec_peek(const la_hdec_t *h, uint64_t bit) {
  uint64_t at = bit >> 3, w = 0;
  if (__builtin_expect(at + 8 <= h->avail, 1)) {
    memcpy(&w, h->p + at, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    w = __builtin_bswap64(w);
#else
    uint64_t b = 0;
    for (int i = 0; i < 8; i++) b |= (uint64_t)h->p[at + i] << (56 - 8 * i);
    w = b;
#endif
  } else {
    for (uint64_t i = 0; i < 8 && at + i < h->nbytes; i++)
      w |= (uint64_t)h->p[at + i] << (56 - 8 * i);
  }
  return w << (bit & 7);
}

/* The one code at the window win (e: its entry; at least 15 bits): its
 * symbol, its length in *l; -1: not a code. A lone symbol takes no bits. */
static int hdec_one(const la_hdec_t *h, uint64_t win, uint64_t e,
                    unsigned *l) {
  if (LA__E_CNT(e)) {
    *l = LA__E_L(e, 0);
    return (int)LA__E_SYM(e, 0);
  }
  /* longer than lb bits, or not a code */
  const int lb = h->lb;
  uint32_t c = (uint32_t)(win >> (64 - lb));
  int k = lb;
  for (;;) {
    if (k == LA_HUFF_MAX_LEN) return -1;
    k++;
    c = c << 1 | (uint32_t)((win >> (64 - k)) & 1u);
    if (c - h->first_code[k] < h->per_len[k]) break;
  }
  *l = (unsigned)k;
  return h->order[h->first_idx[k] + c - h->first_code[k]];
}

/* The stream ends in its last byte, padded with zero bits. */
static int hdec_end(const la_hdec_t *h, uint64_t bit) {
  if ((h->nbits - bit) >= 8) return LA_EPROTO;
  if (bit < h->nbits &&
      (h->p[h->nbytes - 1] & ((1u << (h->nbits - bit)) - 1u)) != 0)
    return LA_EPROTO;
  return 0;
}

/* What hdec_read makes of the symbols. */
enum {
  LA__TO_POINTS, /* d[j] = v[s], a point a symbol */
  LA__TO_RUNS,   /* d filled with the mode's value before: a token s is
                  * run[s] of them, then v[s] (w[s] = run[s] + 1 points) */
  LA__TO_SUM     /* only the sum of the v[s] (a token's: of its points) */
};

/* The codes of m points, each window's whole codes at once (their points
 * within the record, their bits within the stream), else one code (and
 * its refusal), then the stream's end. v, run: LA__NOSYM + 1 entries,
 * v[LA__NOSYM] the mode's value (LA__TO_RUNS) or 0 (LA__TO_SUM);
 * d: m + LA_HUFF_SLACK. *last: the last symbol. */
static inline __attribute__((always_inline)) int hdec_read(
    const la_hdec_t *h, uint64_t m, int to, int64_t *d, const int64_t *v,
    const uint8_t *run, __int128 *sum, unsigned *last) {
  const uint64_t *lut = h->lut, nbits = h->nbits;
  const uint8_t *w = h->w;
  const int lb = h->lb;
  uint64_t bit = 0, j = 0, le = 0, win = 0;
  int nw = 0; /* win's bits from bit on: at least 32 at each code */
  __int128 acc = 0;
  while (j < m) {
    if (nw < 32) { /* every few windows: the load off the codes' path */
      win = hdec_peek(h, bit);
      nw = 57;
    }
    uint64_t e = lut[(win >> 1) >> (63 - lb)]; /* lb 0: entry 0 */
    unsigned len = LA__E_LEN(e), pts = LA__E_PTS(e);
    if (__builtin_expect(
            LA__E_CNT(e) != 0 && bit + len <= nbits && pts <= m - j, 1)) {
      unsigned s0 = LA__E_SYM(e, 0), s1 = LA__E_SYM(e, 1),
               s2 = LA__E_SYM(e, 2), s3 = LA__E_SYM(e, 3);
      if (to == LA__TO_POINTS) { /* past the codes: written over later */
        d[j] = v[s0];
        d[j + 1] = v[s1];
        d[j + 2] = v[s2];
        d[j + 3] = v[s3];
      } else if (to == LA__TO_RUNS) { /* past them: the mode's value */
        uint64_t q = j;
        d[q + run[s0]] = v[s0];
        q += w[s0];
        d[q + run[s1]] = v[s1];
        q += w[s1];
        d[q + run[s2]] = v[s2];
        q += w[s2];
        d[q + run[s3]] = v[s3];
      } else { /* exact for values in range (the caller checks) */
        acc += (int64_t)((uint64_t)v[s0] + (uint64_t)v[s1] +
                         (uint64_t)v[s2] + (uint64_t)v[s3]);
      }
      le = e;
      j += pts;
      bit += len;
      win <<= len;
      nw -= (int)len;
      continue;
    }
    unsigned l;
    int k = hdec_one(h, win, e, &l);
    if (k < 0 || bit + l > nbits) return LA_EPROTO; /* past the stream */
    if (w[k] > m - j) return LA_EPROTO;             /* past the record */
    if (to == LA__TO_POINTS)
      d[j] = v[k];
    else if (to == LA__TO_RUNS)
      d[j + run[k]] = v[k];
    else
      acc += v[k];
    le = (uint64_t)1 << 52 | (uint64_t)k;
    j += w[k];
    bit += l;
    win <<= l;
    nw -= (int)l;
  }
  *last = LA__E_SYM(le, LA__E_CNT(le) - 1);
  if (to == LA__TO_SUM) *sum = acc;
  return hdec_end(h, bit);
}

/* The run form's body after its leading 0, its tables kept in st (or
 * taken from st: a record that reuses them). */
static int decode_runs(la_creader_t *r, uint64_t m, int64_t kref, int64_t *d,
                       __int128 *sum, int64_t *last, int64_t *smin,
                       int64_t *smax, la_huff_dec_t *st) {
  uint64_t nsym, mode, ntok;
  int rc;
  if ((rc = la_creader_varint(r, &nsym)) != 0) return rc;
  if (nsym == 0) { /* the previous tables */
    if (!st->have) return LA_EPROTO;
    uint64_t nbytes;
    if ((rc = la_creader_varint(r, &nbytes)) != 0) return rc;
    if ((rc = hdec_stream(&st->h, r, st->ntok, nbytes)) != 0) return rc;
  } else {
    st->have = 0;
    if (nsym < 2 || nsym > m || nsym > LA_HUFF_MAX_SYMS) return LA_EPROTO;
    if ((rc = table_get(r, nsym, 1, 0, st->val)) != 0) return rc;
    if ((rc = la_creader_varint(r, &mode)) != 0) return rc;
    if (mode >= nsym) return LA_EPROTO;
    if ((rc = la_creader_varint(r, &ntok)) != 0) return rc;
    if (ntok == 0 || ntok > m || ntok > LA_HUFF_MAX_SYMS) return LA_EPROTO;
    if ((rc = table_get(r, ntok, 0, LA_HUFF_RUN * nsym, st->tok)) != 0)
      return rc;
    uint8_t w[LA_HUFF_MAX_SYMS]; /* a token's points: its run, then s */
    for (uint64_t k = 0; k < ntok; k++) {
      w[k] = (uint8_t)((uint64_t)st->tok[k] / nsym + 1);
      st->tsym[k] = (uint8_t)((uint64_t)st->tok[k] % nsym);
    }
    if ((rc = hdec_init(&st->h, r, ntok, m, w)) != 0) return rc;
    for (uint64_t s = 0; s < nsym; s++) st->val[s] += kref; /* integers */
    st->nsym = nsym;
    st->ntok = ntok;
    st->mode = mode;
    st->have = 1;
  }
  /* the values relative to kref: |integer| and |kref| < 2^53 (the
   * callers check every run's values), so no overflow */
  nsym = st->nsym;
  ntok = st->ntok;
  int64_t rel[LA_HUFF_MAX_SYMS], v[LA__NOSYM + 1];
  uint8_t run[LA__NOSYM + 1];
  for (uint64_t s = 0; s < nsym; s++) rel[s] = st->val[s] - kref;
  *smin = rel[0];
  *smax = rel[nsym - 1];
  const int64_t vm = rel[st->mode];
  unsigned ls = 0;
  if (d) {
    for (uint64_t k = 0; k < ntok; k++) {
      v[k] = rel[st->tsym[k]];
      run[k] = (uint8_t)(st->h.w[k] - 1);
    }
    v[LA__NOSYM] = vm;
    run[LA__NOSYM] = 0;
    for (uint64_t j = 0; j < m + LA_HUFF_SLACK; j++) d[j] = vm;
    rc = hdec_read(&st->h, m, LA__TO_RUNS, d, v, run, NULL, &ls);
  } else {
    for (uint64_t k = 0; k < ntok; k++) /* wraps only out of range */
      v[k] = (int64_t)((uint64_t)(st->h.w[k] - 1) * (uint64_t)vm +
                       (uint64_t)rel[st->tsym[k]]);
    v[LA__NOSYM] = 0;
    rc = hdec_read(&st->h, m, LA__TO_SUM, NULL, v, NULL, sum, &ls);
  }
  *last = rel[st->tsym[ls]];
  return rc;
}

int la_huff_qrun_decode(la_creader_t *r, uint64_t m, int64_t kref, int64_t *d,
                        __int128 *sum, int64_t *last, int64_t *smin,
                        int64_t *smax, la_huff_dec_t *st) {
  uint64_t nsym;
  int64_t val[LA__NOSYM + 1];
  la_hdec_t h;
  unsigned ls = 0;
  int rc;
  if (m == 0 || m > LA_CENC_QRUN_MAX) return LA_EPROTO;
  if ((rc = la_creader_varint(r, &nsym)) != 0) return rc;
  if (nsym == 0) return decode_runs(r, m, kref, d, sum, last, smin, smax, st);
  if (nsym > m || nsym > LA_HUFF_MAX_SYMS) return LA_EPROTO;
  if ((rc = table_get(r, nsym, 1, 0, val)) != 0) return rc;
  if ((rc = hdec_init(&h, r, nsym, m, NULL)) != 0) return rc;
  *smin = val[0]; /* the table is in ascending order */
  *smax = val[nsym - 1];
  val[LA__NOSYM] = 0;
  if (d)
    rc = hdec_read(&h, m, LA__TO_POINTS, d, val, NULL, NULL, &ls);
  else
    rc = hdec_read(&h, m, LA__TO_SUM, NULL, val, NULL, sum, &ls);
  *last = val[ls];
  return rc;
}
