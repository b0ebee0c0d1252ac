/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_internal.h: the compaction engine's internals, shared by its
 * own files (compact/la_compact_*.c), its tests and its benchmarks.
 *
 * la_compact.h is the engine's API (parameters, la_compact(), decoding,
 * synthetic series); this header adds what its files share among themselves:
 * the fitting margins, the statistics accumulator, the byte buffer and
 * reader, the encoding's constants and record writers (docs/compaction.md is
 * the format's definition) and the segmenters. Nothing outside the engine,
 * its tests and benchmarks includes it; it may change with the engine.
 */
#ifndef LA_COMPACT_INTERNAL_H
#define LA_COMPACT_INTERNAL_H

#include <string.h>

#include "la_compact.h"
#include "la_simd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Margins that keep the bounds after quantization (docs/compaction.md):
 * polyline fits with cv * (1 - 2^-10) and quantizes with a step <= 2^-10 *
 * cv * |segment mean|; maxerr fits with epsilon * (1 - 1/16) and quantizes
 * with a step <= epsilon_min / 16. */
#define LA_COMPACT_PL_FIT (1.0 - 1.0 / 1024)
#define LA_COMPACT_PL_QSTEP (1.0 / 1024)
#define LA_COMPACT_ME_FIT (1.0 - 1.0 / 16)
#define LA_COMPACT_ME_QSTEP (1.0 / 16)
/* Polyline, outliers on: a point above LA_COMPACT_SPIKE times both of its
 * (positive) neighbours is an isolated spike, stored verbatim, never fitted. */
#define LA_COMPACT_SPIKE 4.0

/* LA_COMPACT_X86 and la_compact_simd(): la_simd.h */

/* Running exact statistics in index order: la_series_stats() is
 * la_stats_init(), la_stats_run() over x[0..n), la_stats_finish(). s and c are
 * Neumaier's sum and compensation; lo and hi ignore NaN. */
typedef struct la_stats_acc {
  double s, c, lo, hi;
} la_stats_acc_t;

static inline void la_stats_init(la_stats_acc_t *a) {
  a->s = a->c = 0;
  a->lo = __builtin_inf();
  a->hi = -__builtin_inf();
}
/* One value: the definition (Neumaier, then min and max). */
static inline void la_stats_add(la_stats_acc_t *a, double v) {
  double s = a->s, t = s + v;
  a->c += __builtin_fabs(s) >= __builtin_fabs(v) ? (s - t) + v : (v - t) + s;
  a->s = t;
  a->lo = v < a->lo ? v : a->lo;
  a->hi = v > a->hi ? v : a->hi;
}
/* x[0..n) in order; simd: may use the AVX2 kernel (same result). */
void la_stats_run(la_stats_acc_t *a, const double *x, size_t n, int simd);
/* Runs of equal values (a range or row probe spreads one measurement
 * evenly, so its elements hold the same double): la_run_end() is the first
 * index j in (i, n] with x[j] != x[i] (simd: AVX2 comparisons, the same
 * index); la_runs_probe() tells whether x[0..n) looks like runs, from its
 * first LA_RUNS_PROBE points: at most one change per LA_RUNS_MIN points.
 * The statistics and the polyline segmenter then work run by run, with
 * the same results. */
#define LA_RUNS_MIN 8
#define LA_RUNS_PROBE 64
size_t la_run_end(const double *x, size_t i, size_t n, int simd);
int la_runs_probe(const double *x, size_t n);
/* The statistics of the count points fed so far. */
void la_stats_finish(const la_stats_acc_t *a, uint64_t count,
                     la_series_stats_t *st);
/* After la_stats_finish() over all of x[0..n): when the running sum of
 * finite values left the double range (+-Inf, every value finite), sets
 * st->sum to Neumaier's sum of the values scaled by 2^-64, scaled back:
 * finite when the exact sum is, +-Inf only when it is beyond the double
 * range. Otherwise changes nothing (one test). */
void la_stats_overflow(const double *x, size_t n, la_series_stats_t *st);

/* Growable byte buffer: capacity doubles; the first allocation failure is
 * sticky in err (LA_ENOMEM) and later puts are ignored. */
typedef struct la_cbuf {
  uint8_t *p;
  size_t len, cap;
  int err;
} la_cbuf_t;

int la_cbuf_reserve(la_cbuf_t *b, size_t more);
void la_cbuf_free(la_cbuf_t *b);
void la_cbuf_put_u8(la_cbuf_t *b, uint8_t v);
void la_cbuf_put_varint(la_cbuf_t *b, uint64_t v);
void la_cbuf_put_f64(la_cbuf_t *b, double v); /* 8 bytes, little-endian */
void la_cbuf_put_u32(la_cbuf_t *b, uint32_t v);
/* A verbatim value: zigzag integer when v is an integer of magnitude
 * <= 2^53 (and not -0.0), else the tag 1 and the 8 raw bytes. */
void la_cbuf_put_verbatim(la_cbuf_t *b, double v);

/* Bounds-checked reader of bytes[0..len). Every getter returns 0,
 * LA_ETRUNC (not enough bytes) or LA_EPROTO (varint longer than 10 bytes or
 * above 2^64-1, bad verbatim tag). */
typedef struct la_creader {
  const uint8_t *p;
  size_t len, off;
} la_creader_t;

int la_creader_u8(la_creader_t *r, uint8_t *v);
/* la_creader_varint's general case (any length). */
int la__creader_varint_long(la_creader_t *r, uint64_t *v);
static inline uint64_t la_zigzag(int64_t v) {
  return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t la_unzigzag(uint64_t u) {
  return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}
/* One varint; one of one or two bytes (most of an encoding's) inline. */
static inline int la_creader_varint(la_creader_t *r, uint64_t *v) {
  if (r->len - r->off >= 2) {
    uint8_t b0 = r->p[r->off], b1 = r->p[r->off + 1];
    if (b0 < 0x80) {
      *v = b0;
      r->off++;
      return 0;
    }
    if (b1 < 0x80) {
      *v = (uint64_t)(b0 & 0x7f) | (uint64_t)b1 << 7;
      r->off += 2;
      return 0;
    }
  }
  return la__creader_varint_long(r, v);
}
/* 8 bytes, little-endian, as a double. */
static inline int la_creader_f64(la_creader_t *r, double *v) {
  uint64_t u = 0;
  if (r->len - r->off < 8) return LA_ETRUNC;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(&u, r->p + r->off, 8);
#else
  for (int i = 0; i < 8; i++) u |= (uint64_t)r->p[r->off + i] << (8 * i);
#endif
  r->off += 8;
  memcpy(v, &u, 8);
  return 0;
}
int la_creader_u32(la_creader_t *r, uint32_t *v);
/* A verbatim value (la_cbuf_put_verbatim). */
static inline int la_creader_verbatim(la_creader_t *r, double *v) {
  uint64_t w;
  int64_t k;
  int rc;
  if ((rc = la_creader_varint(r, &w)) != 0) return rc;
  if (w == 1) return la_creader_f64(r, v);
  if (w & 1) return LA_EPROTO;
  k = la_unzigzag(w >> 1);
  if (k > (INT64_C(1) << 53) || k < -(INT64_C(1) << 53)) return LA_EPROTO;
  *v = (double)k;
  return 0;
}

/* Bytes of v as a LEB128 varint. */
static inline size_t la_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* Writes v as a LEB128 varint at p (10 bytes of room); returns its length. */
static inline size_t la_varint_write(uint8_t *p, uint64_t v) {
  size_t i = 0;
  while (v >= 0x80) {
    p[i++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[i++] = (uint8_t)v;
  return i;
}

/* CRC-32 of the encoding: la_crc32() of wire/la_crc32.h. */
#include "la_crc32.h"
#define la_compact_crc32 la_crc32

/* Encoding constants (docs/compaction.md, "Binary encoding"). */
#define LA_CENC_MAGIC0 0x4C /* 'L' */
#define LA_CENC_MAGIC1 0x41 /* 'A' */
#define LA_CENC_MAGIC2 0x43 /* 'C' */
#define LA_CENC_VERSION 1
#define LA_CENC_F_CONNECTED 0x01
#define LA_CENC_F_RELATIVE 0x02
#define LA_CENC_F_OUTLIERS 0x04
#define LA_CENC_F_XOR 0x08     /* lossless: XOR body (else integer deltas) */
#define LA_CENC_F_QUANTUM 0x10 /* lossy: a quantum follows n; QRUN records */
#define LA_CENC_F_SPREAD 0x20 /* a varint k follows: each point is k cells */
#define LA_CENC_F_PIECES 0x40 /* a geometry follows: one point per piece */
#define LA_CENC_F_KNOWN 0x7f
#define LA_CENC_SPREAD_MAX (UINT64_C(1) << 32)
#define LA_CENC_HEADER_MAX 42

struct la_compact_result;
/* The header of in, an encoding neither spread nor pieced (the start of
 * la_compact_spread and la_compact_pieced): its first 6 bytes h, bound, n
 * and the bytes the header takes (*head). 0 or LA_EINVAL. */
int la_compact_plain_head(const struct la_compact_result *in, uint8_t h[6],
                          double *bound, uint64_t *n, size_t *head);
enum {
  LA_REC_QLINE = 0,
  LA_REC_RLINE = 1,
  LA_REC_VERBATIM = 2,
  LA_REC_QRUN = 3 /* exact values k * quantum, k as zigzag varint deltas */
};
#define LA_CENC_QRUN_MAX 4096 /* points of one quantized run record */
#define LA_HUFF_MAX_LEN 15     /* bits of a coded quantized run's codes */
#define LA_REC_EXC 0x04       /* tag bit: exceptions follow */
#define LA_REC_NEWEXP 0x08    /* tag bit: exponent delta follows */
#define LA_REC_SHIFT 4        /* tag >> 4 is the record's point count - 1 */
#define LA_QK_MAX 4503599627370496.0       /* 2^52: |k| must stay below */
#define LA_QPRED_MAX 4611686018427387904.0 /* 2^62 */
#define LA_QEXP_MIN (-1000)
#define LA_QEXP_MAX 1000

/* Value of point j (0-based) of a line record of count points: base + (j +
 * off) * d, except the last point, which is exactly `last`. Fresh records:
 * base = first value, off = 0, d = (last - base) / (count - 1); records
 * continuing a connected polyline: base = previous vertex, off = 1,
 * d = (last - base) / count. Encoder and decoder both use this. */
static inline double la_line_value(double base, double d, uint64_t off,
                                   uint64_t j, uint64_t count, double last) {
  return j + 1 == count ? last : base + (double)(j + off) * d;
}

/* Exact, call-free equivalents of libm functions on the encoder's hot
 * paths (same results bit for bit): la_pow2(k) is 2^k for |k| <= 1022, so
 * v * la_pow2(k) is ldexp(v, k) (one correctly rounded multiplication);
 * la_floor(u) is floor(u). */
static inline double la_pow2(int k) {
  union {
    uint64_t u;
    double d;
  } b;
  b.u = (uint64_t)(k + 1023) << 52;
  return b.d;
}
static inline double la_floor(double u) {
  if (u == 0 || !(__builtin_fabs(u) < 0x1p62))
    return __builtin_floor(u);   /* +-0 keep their sign; large, NaN, Inf */
  double f = (double)(int64_t)u; /* truncation, exact: |u| < 2^62 */
  return f > u ? f - 1 : f;
}

/* Prediction of the integer of a quantized value from the previous stored
 * line value prev, at exponent e: floor(prev * 2^-e + 0.5), or 0 when that is
 * not below 2^62 in magnitude (or not a number). */
static inline int64_t la_qpredict(double prev, int e) {
  /* ldexp(prev, -e) == prev * 2^-e when 2^-e is a normal double */
  double r = la_floor((e >= -1022 && e <= 1022 ? prev * la_pow2(-e)
                                               : __builtin_ldexp(prev, -e)) +
                      0.5);
  if (!(__builtin_fabs(r) < LA_QPRED_MAX)) return 0;
  return (int64_t)r;
}

/* The encoder the segmenters feed (la_compact_encode.c). Records are written
 * in order; exceptions are given before the line that contains them. Every
 * line is checked against the raw points before it is written; a line that
 * misses its bound (a floating-point corner case) is written as a verbatim
 * run instead and counted in fallbacks. */
struct la_cenc {
  la_cbuf_t out;
  const double *x; /* the raw series (for checks and verbatim values) */
  uint64_t n, pos; /* points; points covered by written records */
  int mode, flags;
  double bound; /* cv (polyline) or epsilon (maxerr) */
  /* exceptions of the open line: offsets from its first point */
  uint64_t *exc_off;
  size_t nexc, exc_cap;
  uint64_t run; /* points of the open verbatim run (starting at pos) */
  double prev;  /* last stored line value (prediction base) */
  int prev_exp;
  int vertex_ok; /* the last record is a line: a connected line may follow */
  double vertex; /* its last value */
  /* outputs */
  size_t segments, exceptions, fallbacks;
  /* over the points checked: max |error|, and SSE and sum in units of
   * 2^(2 err_k) and 2^err_k (err_k != 0 when values were tiny or huge) */
  double err_max, err_sse, err_sum;
  uint64_t err_count;
  int err_k;
  int err;
  int simd;             /* la_compact_simd() */
  la_stats_acc_t stats; /* statistics of x[0..stats_pos) */
  uint64_t stats_pos;
  size_t rec_bytes; /* bytes of the last line record (with exceptions) */
  /* quantized runs: quantum (0: none), its inverse, the integer of the last
   * value of a run (the decoder's delta chain), points so stored */
  double quantum, inv_quantum, qk;
  uint64_t quantized;
  /* bytes a point of the recent quantized run records took (decayed; 1,
   * a plain run's least, before the first): coded runs take far less */
  double qbpp;
  struct la_huff_tables *huff; /* the run form's last tables (or NULL) */
  double *recon; /* NULL, or receives each written record's decoded values */
  /* NULL, or receives each record's first point, for the first starts_cap
   * records (segments counts them all) */
  uint64_t *starts;
  size_t starts_cap;
};
typedef struct la_cenc la_cenc_t;

/* Starts an encoding of x[0..n) in *e (zeroed first): writes the header.
 * quantum > 0 (finite, normal) allows quantized runs (la_cenc_qrun()) and
 * is recorded in the header; 0 does not. */
void la_cenc_init(la_cenc_t *e, const double *x, uint64_t n, int mode,
                  int flags, double bound, double quantum);
/* Marks x[index] as an exception of the next line (indexes increasing,
 * inside that line, neither its first nor its last point). */
void la_cenc_exception(la_cenc_t *e, uint64_t index);
/* Adds the next point (x[pos + run]) to the open verbatim run. */
void la_cenc_verbatim(la_cenc_t *e);
/* Writes a line over the next count points. anchored: it continues a
 * connected polyline from the previous vertex (a is ignored); else a is its
 * value at the first point. b is its value at the last point. qmax: largest
 * quantization step the bound allows (<= 0: store exact doubles). tol_abs,
 * tol_rel: maxerr bound per point (|err| <= tol_abs + tol_rel*|x|); for
 * polyline (tol_abs < 0) the check is RMSE <= bound * |mean|. Returns 1 and
 * sets *vertex to the stored last value when a line was written, 0 when it
 * fell back to verbatim, or a negative error. */
int la_cenc_line(la_cenc_t *e, uint64_t count, int anchored, double a, double b,
                 double qmax, double tol_abs, double tol_rel, double *vertex);
/* Whether q can be a trace's quantum: positive and normal, with a normal
 * reciprocal (the encoder and the decoder both check it). */
static inline int la_compact_quantum_ok(double q) {
  return q > 0 && __builtin_isnormal(q) && __builtin_isnormal(1 / q);
}
/* Bytes a quantized run would take for x[first..first+count) after a run
 * ending at integer *k (NaN: the run starts at the first point's own
 * integer; record tag not counted), updating *k; or UINT64_MAX when a point
 * is not a whole multiple of the quantum (or no quantum). */
uint64_t la_cenc_qcost(const la_cenc_t *e, uint64_t first, uint64_t count,
                       double *k);
/* What count points that take plain bytes as a plain run (la_cenc_qcost)
 * are expected to take as the encoder writes runs: coded where the recent
 * runs were (e->qbpp). */
static inline double la_cenc_qcost_est(const la_cenc_t *e, uint64_t plain,
                                       uint64_t count) {
  double coded = (double)count * e->qbpp + 2;
  return coded < (double)plain ? coded : (double)plain;
}
/* Writes the next points (from pos + run, after the open verbatim run), as
 * many as are whole multiples of the quantum, at most max and at most
 * LA_CENC_QRUN_MAX, as one quantized run record: exact values. Returns the
 * number of points written (0: the next point is not such a multiple, or no
 * quantum), or a negative error. The open line must have no exceptions. */
int64_t la_cenc_qrun(la_cenc_t *e, uint64_t max);
/* Flushes the open run and appends the CRC. Returns 0 or e->err. */
int la_cenc_finish(la_cenc_t *e);
/* Frees e's buffers (not out.p when the caller took it). */
void la_cenc_free(la_cenc_t *e);

/* Lossless encoding of x[0..n) into out: header and body, no CRC. Integer
 * series (every value an integer of magnitude <= 2^53, no -0.0) get zigzag
 * varint deltas, others XOR with the previous value. Returns 0 or
 * LA_ENOMEM. */
int la_compact_lossless_encode(const double *x, size_t n, la_cbuf_t *out);
/* The totals of values met while only checking an encoding
 * (la_trace_check_totals): the finite values' sum as a double-double, an
 * upper bound of their absolute sum, the least and greatest value stored
 * exactly, and which non-finite values occur. */
typedef struct {
  double hi, lo; /* finite sum, hi + lo */
  double abs;    /* >= the sum of |v| over the finite values */
  double emin, emax; /* over exactly stored numbers, +-Inf included (NaN:
                        none yet) */
  int nan, pinf, ninf;
} la_cacc_t;

static inline void la_cacc_sum(la_cacc_t *a, double v) {
  double s = a->hi + v, bb = s - a->hi;
  a->lo += (a->hi - (s - bb)) + (v - bb);
  a->hi = s;
}

/* A value stored exactly (a raw value): the extremes. */
static inline void la_cacc_exact(la_cacc_t *a, double v) {
  if (!(a->emin <= v)) a->emin = v;
  if (!(a->emax >= v)) a->emax = v;
}

/* One value v (exact: stored exactly, so it is a raw value). */
static inline void la_cacc_add(la_cacc_t *a, double v, int exact) {
  if (v - v != 0) { /* NaN or +-Inf: always stored bit-exactly */
    if (v != v) {
      a->nan = 1;
      return;
    }
    if (v > 0)
      a->pinf = 1;
    else
      a->ninf = 1;
    la_cacc_exact(a, v);
    return;
  }
  la_cacc_sum(a, v);
  a->abs += v < 0 ? -v : v;
  if (exact) la_cacc_exact(a, v);
}

/* Decodes the n values of a lossless body (flags from the header) from r
 * into out (NULL: only checks the body, writing nothing), adding each to
 * acc when acc is not NULL. Returns 0, LA_ETRUNC or LA_EPROTO. */
int la_compact_lossless_decode(la_creader_t *r, int flags, uint64_t n,
                               double *out, la_cacc_t *acc);

/* Segmenters: one pass over x, feeding enc. Return 0 or LA_ENOMEM. */
int la_compact_polyline_run(const double *x, size_t n,
                            const la_compact_params_t *p, la_cenc_t *enc);
int la_compact_maxerr_run(const double *x, size_t n,
                          const la_compact_params_t *p, la_cenc_t *enc);

/* Maxerr segmentation of x (disjoint, no outliers, no quantization, every
 * point finite) with the interval [x - tol, x + tol], tol = tol_abs +
 * tol_rel * |x|: writes each segment's length into lens (capacity n) and
 * returns the number of segments, or LA_ENOMEM. Tests compare it with a
 * brute-force optimum. */
long la_compact_maxerr_lengths(const double *x, size_t n, double tol_abs,
                               double tol_rel, size_t *lens);

/* The entropy stage of quantized runs (la_compact_huff.c): the body of a
 * coded run of the m (1..LA_CENC_QRUN_MAX) integers ks (exact doubles),
 * relative to the quantized state kref, into out when it takes fewer than
 * limit bytes (out has limit bytes of room): returns its length, else 0
 * (write the plain run). *tables (NULL at the start of an encoding, freed
 * with la_huff_tables_free) keeps the run form's last tables so that later
 * records reuse them; tables NULL: no reuse. simd: AVX2 may find the run
 * form's tokens (the same bytes). The decoder reads such a body
 * of m points into d[0..m) (the integers minus kref; d has room for
 * LA_HUFF_SLACK more, which it may overwrite), or with d NULL only their
 * sum into *sum (exact where every kref + d[j] is within +-2^53, which
 * the caller checks) and the last into *last (what a check keeps), with
 * the least and greatest value of its table (every d[j] is within them):
 * 0, LA_ETRUNC or LA_EPROTO; st (zeroed at the start of a trace) carries
 * the tables from record to record. */
#define LA_HUFF_LUT_BITS 10 /* the decoder's table: windows of 6 to 10 bits */
#define LA_HUFF_MAX_SYMS 256 /* distinct values (tokens) the encoder codes */
#define LA_HUFF_SLACK 4      /* d's room past m the decoder writes into */
typedef struct la_huff_tables la_huff_tables_t;
void la_huff_tables_free(la_huff_tables_t *t);
size_t la_huff_qrun_encode(const double *ks, uint64_t m, double kref,
                           uint8_t *out, size_t limit,
                           la_huff_tables_t **tables, int simd);

/* A canonical decoder: the tables of n symbols' code lengths, then the
 * stream, read 8 bytes at a time. lut: for every lb-bit window, up to 4
 * codes that lie whole in it (la_compact_huff.c, hdec_lut). */
typedef struct {
  uint32_t per_len[LA_HUFF_MAX_LEN + 1];
  uint32_t first_code[LA_HUFF_MAX_LEN + 2], first_idx[LA_HUFF_MAX_LEN + 2];
  uint16_t order[LA_HUFF_MAX_SYMS]; /* canonical place -> symbol */
  uint8_t w[LA_HUFF_MAX_SYMS + 1];  /* each symbol's points (0: none) */
  uint64_t lut[1u << LA_HUFF_LUT_BITS];
  int lb;
  const uint8_t *p;
  uint64_t nbytes, nbits, avail; /* avail: bytes readable at p */
} la_hdec_t;

typedef struct {
  int have;                        /* a run-form record wrote tables */
  uint64_t nsym, ntok, mode;
  int64_t val[LA_HUFF_MAX_SYMS];   /* its values, as integers */
  int64_t tok[LA_HUFF_MAX_SYMS];   /* its tokens */
  uint8_t tsym[LA_HUFF_MAX_SYMS];  /* each token's symbol */
  la_hdec_t h;                     /* its codes */
} la_huff_dec_t;
int la_huff_qrun_decode(la_creader_t *r, uint64_t m, int64_t kref, int64_t *d,
                        __int128 *sum, int64_t *last, int64_t *smin,
                        int64_t *smax, la_huff_dec_t *st);

#ifdef __cplusplus
}
#endif
#endif /* LA_COMPACT_INTERNAL_H */
