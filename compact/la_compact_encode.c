/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_encode.c: writes the records of a lossy (polyline or maxerr)
 * encoding: header, line records with quantized or exact end values and
 * their exceptions, verbatim runs, and the closing CRC-32.
 *
 * Before a line is written, its reconstruction (the decoder's arithmetic,
 * la_line_value()) is compared with the raw points: a line that misses the
 * bound turns into a verbatim run, so the bound holds whatever rounding did.
 * The same pass measures the achieved error. It does not choose segments
 * (the segmenters do) and does not decode (la_compact_decode.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"
#if LA_COMPACT_X86
#include <immintrin.h>
#endif

void la_cenc_init(la_cenc_t *e, const double *x, uint64_t n, int mode,
                  int flags, double bound, double quantum) {
  memset(e, 0, sizeof(*e));
  if (la_compact_quantum_ok(quantum)) {
    e->quantum = quantum;
    e->inv_quantum = 1 / quantum;
    flags |= LA_CENC_F_QUANTUM;
  }
  e->x = x;
  e->n = n;
  e->mode = mode;
  e->flags = flags;
  e->bound = bound;
  e->simd = la_compact_simd();
  e->qbpp = 1;
  la_stats_init(&e->stats);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC0);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC1);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC2);
  la_cbuf_put_u8(&e->out, LA_CENC_VERSION);
  la_cbuf_put_u8(&e->out, (uint8_t)mode);
  la_cbuf_put_u8(&e->out, (uint8_t)flags);
  la_cbuf_put_f64(&e->out, bound);
  la_cbuf_put_varint(&e->out, n);
  if (e->quantum > 0) la_cbuf_put_f64(&e->out, e->quantum);
  e->err = e->out.err;
}

void la_cenc_free(la_cenc_t *e) {
  la_cbuf_free(&e->out);
  la_huff_tables_free(e->huff);
  e->huff = NULL;
  free(e->exc_off);
  e->exc_off = NULL;
  e->nexc = e->exc_cap = 0;
}

void la_cenc_exception(la_cenc_t *e, uint64_t index) {
  if (e->nexc == e->exc_cap) {
    size_t cap = e->exc_cap ? 2 * e->exc_cap : 64;
    uint64_t *p = realloc(e->exc_off, cap * sizeof(*p));
    if (p == NULL) {
      e->err = LA_ENOMEM;
      return;
    }
    e->exc_off = p;
    e->exc_cap = cap;
  }
  e->exc_off[e->nexc++] = index - (e->pos + e->run);
}

void la_cenc_verbatim(la_cenc_t *e) {
  e->run++;
  e->vertex_ok = 0;
}

/* One more record, its first point at first (la_cenc_t's starts). */
static inline void la__record(la_cenc_t *e, uint64_t first) {
  if (e->starts && e->segments < e->starts_cap)
    e->starts[e->segments] = first;
  e->segments++;
}

static void flush_run(la_cenc_t *e) {
  uint64_t i;

  if (e->run == 0) return;
  la_cbuf_put_varint(&e->out, LA_REC_VERBATIM | ((e->run - 1) << LA_REC_SHIFT));
  for (i = 0; i < e->run; i++) la_cbuf_put_verbatim(&e->out, e->x[e->pos + i]);
  if (e->recon) /* verbatim values decode to themselves, bit for bit */
    memcpy(e->recon + e->pos, e->x + e->pos, e->run * sizeof *e->recon);
  la__record(e, e->pos);
  e->pos += e->run;
  e->run = 0;
  e->vertex_ok = 0;
}

/* v as 8 little-endian bytes at p (la_cbuf_put_f64()); returns p + 8. */
static uint8_t *put_f64(uint8_t *p, double v) {
  uint64_t u;
  int i;

  memcpy(&u, &v, 8);
  for (i = 0; i < 8; i++) p[i] = (uint8_t)(u >> (8 * i));
  return p + 8;
}

/* A verbatim value at p (la_cbuf_put_verbatim(), at most 9 bytes); returns
 * the end. */
static uint8_t *put_verbatim(uint8_t *p, double v) {
  if (v == v && fabs(v) <= 9007199254740992.0 && v == la_floor(v) &&
      !(v == 0 && signbit(v)))
    return p + la_varint_write(p, la_zigzag((int64_t)v) << 1);
  *p = 1;
  return put_f64(p + 1, v);
}

/* Quantizes v to k * 2^ex. Returns 0 when |v| / 2^ex >= 2^52. */
static int quantize(double v, int ex, int64_t *k, double *vq) {
  /* ldexp(v, -ex) == v * 2^-ex exactly: |ex| <= LA_QEXP_MAX < 1022 */
  double s = la_floor(v * la_pow2(-ex) + 0.5);

  if (!(fabs(s) < LA_QK_MAX)) return 0;
  *k = (int64_t)s;
  *vq = s * la_pow2(ex);
  return 1;
}

typedef struct {
  double max, sse, sum; /* sse in units of 2^(2k), sum in units of 2^k */
  uint64_t count;
  int k;
} chk_t;

/* Accumulators of the check: SSE and the sum of x in four lanes (point j of
 * a run between exceptions goes to lane (j - run start) mod 4), max |error|,
 * and whether every point met its maxerr bound. The scalar and the AVX2
 * loops fill the same lanes in the same order: bit-identical results. */
typedef struct {
  double sse[4], sum[4], max;
  int ok;
} chk_lanes_t;

/* The reconstruction of points [j0, j1) of a line (value base + (j + off) *
 * d, the decoder's arithmetic: j + off counted in a double, exact) against
 * x[j0..j1). tol_abs < 0: polyline (no per-point bound). */
static void chk_run_scalar(const double *x, uint64_t j0, uint64_t j1,
                           double base, double d, uint64_t off, double tol_abs,
                           double tol_rel, chk_lanes_t *c) {
  double tj = (double)(j0 + off), max = c->max;
  uint64_t j;
  int ok = c->ok;

  for (j = j0; j < j1; j++, tj += 1) {
    double v = x[j], err = fabs(base + tj * d - v);
    size_t k = (size_t)(j - j0) & 3;
    if (tol_abs >= 0) ok &= err <= tol_abs + tol_rel * fabs(v);
    max = err > max ? err : max;
    c->sse[k] += err * err;
    c->sum[k] += v;
  }
  c->max = max;
  c->ok = ok;
}

#if LA_COMPACT_X86
__attribute__((target("avx2"))) static void chk_run_avx2(
    const double *x, uint64_t j0, uint64_t j1, double base, double d,
    uint64_t off, double tol_abs, double tol_rel, chk_lanes_t *c) {
  const __m256d sign = _mm256_set1_pd(-0.0), four = _mm256_set1_pd(4);
  const __m256d bv = _mm256_set1_pd(base), dv = _mm256_set1_pd(d);
  const __m256d ta = _mm256_set1_pd(tol_abs), tr = _mm256_set1_pd(tol_rel);
  double t0 = (double)(j0 + off);
  __m256d tj = _mm256_add_pd(_mm256_set1_pd(t0), _mm256_set_pd(3, 2, 1, 0));
  __m256d sse = _mm256_loadu_pd(c->sse), sum = _mm256_loadu_pd(c->sum);
  __m256d max = _mm256_set1_pd(c->max),
          ok = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  uint64_t j = j0;
  double m[4];
  int k;

  if (tol_abs >= 0) {
    for (; j + 4 <= j1; j += 4) {
      __m256d v = _mm256_loadu_pd(x + j);
      __m256d err = _mm256_andnot_pd(
          sign, _mm256_sub_pd(_mm256_add_pd(bv, _mm256_mul_pd(tj, dv)), v));
      __m256d tol =
          _mm256_add_pd(ta, _mm256_mul_pd(tr, _mm256_andnot_pd(sign, v)));
      ok = _mm256_and_pd(ok, _mm256_cmp_pd(err, tol, _CMP_LE_OQ));
      max = _mm256_max_pd(err, max);
      sse = _mm256_add_pd(sse, _mm256_mul_pd(err, err));
      sum = _mm256_add_pd(sum, v);
      tj = _mm256_add_pd(tj, four);
    }
  } else {
    for (; j + 4 <= j1; j += 4) {
      __m256d v = _mm256_loadu_pd(x + j);
      __m256d err = _mm256_andnot_pd(
          sign, _mm256_sub_pd(_mm256_add_pd(bv, _mm256_mul_pd(tj, dv)), v));
      max = _mm256_max_pd(err, max);
      sse = _mm256_add_pd(sse, _mm256_mul_pd(err, err));
      sum = _mm256_add_pd(sum, v);
      tj = _mm256_add_pd(tj, four);
    }
  }
  _mm256_storeu_pd(c->sse, sse);
  _mm256_storeu_pd(c->sum, sum);
  _mm256_storeu_pd(m, max);
  for (k = 0; k < 4; k++) /* max does not depend on the order */
    c->max = m[k] > c->max ? m[k] : c->max;
  c->ok &= _mm256_movemask_pd(ok) == 0xf;
  if (j < j1) { /* the tail, in the lanes it would have had */
    chk_lanes_t t = *c;
    double tjs = (double)(j0 + off) + (double)(j - j0);
    for (; j < j1; j++, tjs += 1) {
      double v = x[j], err = fabs(base + tjs * d - v);
      size_t q = (size_t)(j - j0) & 3;
      if (tol_abs >= 0) t.ok &= err <= tol_abs + tol_rel * fabs(v);
      t.max = err > t.max ? err : t.max;
      t.sse[q] += err * err;
      t.sum[q] += v;
    }
    *c = t;
  }
}
#endif

/* Compares the line with x[first..first+count) outside exceptions, with the
 * decoder's arithmetic (la_line_value(); the index is counted in a double,
 * which is exact), and measures the error on the way. The self-check and
 * the error measurement are this one pass. */
static int check_line(const la_cenc_t *e, uint64_t first, uint64_t count,
                      double base, double d_line, uint64_t off, double last,
                      double tol_abs, double tol_rel, chk_t *c) {
  const double *x = e->x + first;
  uint64_t j0 = 0;
  size_t k;
  double sse, sum, err;
  int maxerr = tol_abs >= 0;
  chk_lanes_t L = {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 1};

  for (k = 0; k <= e->nexc; k++) {
    uint64_t j1 = k < e->nexc ? e->exc_off[k] : count - 1;
#if LA_COMPACT_X86
    if (e->simd && j1 - j0 >= 8)
      chk_run_avx2(x, j0, j1, base, d_line, off, tol_abs, tol_rel, &L);
    else
#endif
      chk_run_scalar(x, j0, j1, base, d_line, off, tol_abs, tol_rel, &L);
    j0 = j1 + 1;
  }
  sse = (L.sse[0] + L.sse[2]) + (L.sse[1] + L.sse[3]);
  sum = (L.sum[0] + L.sum[2]) + (L.sum[1] + L.sum[3]);
  err = fabs(last - x[count - 1]); /* the last point is never an exception */
  if (maxerr) L.ok &= err <= tol_abs + tol_rel * fabs(x[count - 1]);
  L.max = err > L.max ? err : L.max;
  sse += err * err;
  sum += x[count - 1];
  c->count = count - e->nexc;
  c->k = 0;
  if (!L.ok || !(L.max < INFINITY)) return 0;
  if (!((L.max == 0 || (L.max >= 0x1p-400 && L.max <= 0x1p400)) &&
        (sum == 0 || (fabs(sum) >= 0x1p-400 && fabs(sum) <= 0x1p400)))) {
    /* errors whose squares underflow, tiny values, or sums that overflow:
     * the same points again, everything times 2^-k (exact), k from the
     * line's values and its largest error (the reported error adds these
     * in their own unit) */
    double big = fmax(L.max, fmax(fabs(base), fabs(last))), sc;
    uint64_t j;
    k = 0;
    c->k = big > 0 && big < INFINITY ? ilogb(big) : 0;
    c->k = c->k > 1000 ? 1000 : c->k < -1000 ? -1000 : c->k;
    sc = ldexp(1, -c->k);
    sse = sum = 0;
    for (j = 0; j < count; j++) {
      double v = x[j], d;
      if (k < e->nexc && e->exc_off[k] == j) {
        k++;
        continue;
      }
      d = fabs(la_line_value(base, d_line, off, j, count, last) - v) * sc;
      sse += d * d;
      sum += v * sc;
    }
  }
  if (!maxerr && !(sse * (double)c->count <= e->bound * e->bound * sum * sum))
    return 0;
  c->max = L.max;
  c->sse = sse;
  c->sum = sum;
  return 1;
}

/* Feeds x[stats_pos..end) to the statistics (points of verbatim runs and of
 * lines, in index order, while they are still in cache). The statistics do
 * not depend on how the points are split between calls (la_stats_run() is
 * the definition, bit for bit, whatever the split), so the encoder feeds
 * them in chunks of at least LA_CENC_STATS_CHUNK points (32 KB, still in
 * L1/L2): short records would otherwise pay a call and a tail each. */
#define LA_CENC_STATS_CHUNK 4096
static void stats_upto(la_cenc_t *e, uint64_t end) {
  if (end > e->stats_pos) {
    la_stats_run(&e->stats, e->x + e->stats_pos, end - e->stats_pos, e->simd);
    e->stats_pos = end;
  }
}

int la_cenc_line(la_cenc_t *e, uint64_t count, int anchored, double a, double b,
                 double qmax, double tol_abs, double tol_rel, double *vertex) {
  uint64_t first = e->pos + e->run, off = anchored ? 1 : 0, tag;
  int connected = (e->flags & LA_CENC_F_CONNECTED) != 0, quant = 0, ex = 0;
  int has_b = anchored || count > 1;
  int64_t ka = 0, kb = 0;
  double aq = a, bq = b, base, d;
  chk_t c;
  size_t k;

  if (e->err) return e->err;
  if (count == 0 || first + count > e->n ||
      anchored != (connected && e->vertex_ok))
    return e->err = LA_EINVAL; /* a segmenter bug */
  if (qmax > 0 && qmax < INFINITY) {
    uint64_t qb;
    memcpy(&qb, &qmax, 8);
    if (qb >> 52 != 0) { /* normal: the exponent field (frexp's, minus 1) */
      ex = (int)(qb >> 52) - 1023;
    } else {
      (void)frexp(qmax, &ex);
      ex -= 1;
    }
    /* 2^ex <= qmax < 2^(ex+1) */
    quant = ex >= LA_QEXP_MIN && ex <= LA_QEXP_MAX &&
            (anchored || quantize(a, ex, &ka, &aq)) &&
            (!has_b || quantize(b, ex, &kb, &bq));
    if (!quant) {
      aq = a;
      bq = b;
    }
  }
  if (!has_b) bq = aq;
  base = anchored ? e->vertex : aq;
  d = anchored    ? (bq - base) / (double)count
      : count > 1 ? (bq - aq) / (double)(count - 1)
                  : 0;
  if (!isfinite(base) || !isfinite(bq) ||
      !check_line(e, first, count, base, d, off, bq, tol_abs, tol_rel, &c)) {
    e->fallbacks++;
    e->run += count;
    e->nexc = 0;
    e->vertex_ok = 0;
    return 0;
  }
  flush_run(e);
  if (first + count - e->stats_pos >= LA_CENC_STATS_CHUNK)
    stats_upto(e, first + count);
  tag = (uint64_t)(quant ? LA_REC_QLINE : LA_REC_RLINE) |
        (e->nexc ? LA_REC_EXC : 0) |
        (quant && ex != e->prev_exp ? LA_REC_NEWEXP : 0) |
        ((count - 1) << LA_REC_SHIFT);
  /* the record's head: tag, exponent delta, two values, exception count:
   * at most 3 varints + 2 doubles + 2 varints <= 66 bytes */
  size_t rec0 = e->out.len;
  if (la_cbuf_reserve(&e->out, 66) == 0) {
    uint8_t *p = e->out.p + e->out.len;
    p += la_varint_write(p, tag);
    if (quant) {
      if (ex != e->prev_exp) {
        p += la_varint_write(p, la_zigzag((int64_t)ex - e->prev_exp));
        e->prev_exp = ex;
      }
      if (!anchored) {
        p += la_varint_write(p, la_zigzag(ka - la_qpredict(e->prev, ex)));
        e->prev = aq;
      }
      if (has_b) {
        p += la_varint_write(p, la_zigzag(kb - la_qpredict(e->prev, ex)));
        e->prev = bq;
      }
    } else {
      if (!anchored) p = put_f64(p, aq);
      if (has_b) p = put_f64(p, bq);
      e->prev = bq;
    }
    if (e->nexc) p += la_varint_write(p, e->nexc);
    e->out.len = (size_t)(p - e->out.p);
  }
  for (k = 0; k < e->nexc; k++) /* offset gap + verbatim value */
    if (la_cbuf_reserve(&e->out, 19) == 0) {
      uint8_t *p = e->out.p + e->out.len;
      p += la_varint_write(
          p, k ? e->exc_off[k] - e->exc_off[k - 1] - 1 : e->exc_off[0]);
      p = put_verbatim(p, e->x[first + e->exc_off[k]]);
      e->out.len = (size_t)(p - e->out.p);
    }
  e->rec_bytes = e->out.len - rec0;
  if (e->recon) { /* the decoder's values: the line, its exceptions */
    double *o = e->recon + first;
    for (uint64_t j = 0; j < count; j++)
      o[j] = la_line_value(base, d, off, j, count, bq);
    for (k = 0; k < e->nexc; k++)
      o[e->exc_off[k]] = e->x[first + e->exc_off[k]];
  }
  if (c.max > e->err_max) e->err_max = c.max;
  if (e->err_sse == 0 && e->err_sum == 0) /* nothing to rescale yet */
    e->err_k = c.k;
  if (c.k == e->err_k) {
    e->err_sse += c.sse;
    e->err_sum += c.sum;
  } else { /* in the totals' unit, unless that overflows: then in c's */
    double s2 = ldexp(c.sse, 2 * (c.k - e->err_k));
    double s1 = ldexp(c.sum, c.k - e->err_k);
    if (isfinite(s2) && isfinite(s1)) {
      e->err_sse += s2;
      e->err_sum += s1;
    } else {
      e->err_sse = ldexp(e->err_sse, 2 * (e->err_k - c.k)) + c.sse;
      e->err_sum = ldexp(e->err_sum, e->err_k - c.k) + c.sum;
      e->err_k = c.k;
    }
  }
  e->err_count += c.count;
  la__record(e, e->pos);
  e->pos += count;
  e->exceptions += e->nexc;
  e->nexc = 0;
  e->vertex_ok = 1;
  e->vertex = bq;
  *vertex = bq;
  if (e->out.err) e->err = e->out.err;
  return e->err ? e->err : 1;
}

/* The integer k of v when v is exactly k * quantum (|k| < 2^53, v not
 * -0.0): *k set, returns 1; else 0 (NaN, Inf and other values). The decoder
 * computes k * quantum: the same double. */
static inline int qint(const la_cenc_t *e, double v, double *k) {
  double r = la_floor(v * e->inv_quantum + 0.5);
  *k = r;
  return r * e->quantum == v && __builtin_fabs(r) < 0x1p53 &&
         !(v == 0 && signbit(v));
}

/* Bytes of the zigzag varint of the integer difference d (|d| < 2^54). */
static inline uint64_t qdelta_len(double d) {
  uint64_t z = la_zigzag((int64_t)d);
  return 1 + (z >= 0x80) + (z >= 0x4000) + (z >= 0x200000) + (z >= 0x10000000) +
         (z >= 0x800000000ull) + (z >= 0x40000000000ull) +
         (z >= 0x2000000000000ull);
}

uint64_t la_cenc_qcost(const la_cenc_t *e, uint64_t first, uint64_t count,
                       double *k) {
  uint64_t bytes = 0, j;
  double kp = *k, kj;

  if (e->quantum <= 0 || first + count > e->n) return UINT64_MAX;
  for (j = first; j < first + count; j++) {
    if (!qint(e, e->x[j], &kj)) return UINT64_MAX;
    if (kp != kp) kp = kj; /* NaN: the chain starts here */
    bytes += qdelta_len(kj - kp);
    kp = kj;
  }
  *k = kp;
  return bytes;
}

#if LA_COMPACT_X86
/* qint() over x[0..max), four points a step: stores the integers in ks and
 * returns the number of leading points that are multiples (the same
 * arithmetic as qint(): floor(v / q + 0.5) with the same rounding). */
__attribute__((target("avx2"))) static uint64_t qscan_avx2(const la_cenc_t *e,
                                                           const double *x,
                                                           uint64_t max,
                                                           double *ks) {
  const __m256d iq = _mm256_set1_pd(e->inv_quantum);
  const __m256d q = _mm256_set1_pd(e->quantum), half = _mm256_set1_pd(0.5);
  const __m256d lim = _mm256_set1_pd(0x1p53), sign = _mm256_set1_pd(-0.0);
  const __m256i negz = _mm256_set1_epi64x((long long)0x8000000000000000ull);
  uint64_t m = 0;

  for (; m + 4 <= max; m += 4) {
    __m256d v = _mm256_loadu_pd(x + m);
    __m256d r = _mm256_floor_pd(_mm256_add_pd(_mm256_mul_pd(v, iq), half));
    __m256d ok = _mm256_and_pd(
        _mm256_cmp_pd(_mm256_mul_pd(r, q), v, _CMP_EQ_OQ),
        _mm256_cmp_pd(_mm256_andnot_pd(sign, r), lim, _CMP_LT_OQ));
    __m256i nz = _mm256_cmpeq_epi64(_mm256_castpd_si256(v), negz);
    _mm256_storeu_pd(ks + m, r);
    if (_mm256_movemask_pd(ok) != 0xf ||
        _mm256_movemask_pd(_mm256_castsi256_pd(nz)) != 0)
      break;
  }
  return m;
}
#endif

int64_t la_cenc_qrun(la_cenc_t *e, uint64_t max) {
  double ks[LA_CENC_QRUN_MAX], kp = e->qk;
  uint64_t first = e->pos + e->run, m;
  uint8_t *p;

  if (e->err) return e->err;
  if (e->quantum <= 0 || e->nexc != 0) return 0;
  if (max > e->n - first) max = e->n - first;
  if (max > LA_CENC_QRUN_MAX) max = LA_CENC_QRUN_MAX;
  m = 0;
#if LA_COMPACT_X86
  if (e->simd) m = qscan_avx2(e, e->x + first, max, ks);
#endif
  for (; m < max && qint(e, e->x[first + m], &ks[m]); m++)
    ;
  if (m == 0) return 0;
  flush_run(e);
  if (la_cbuf_reserve(&e->out, 10 + 9 * m) != 0) return e->err = e->out.err;
  p = e->out.p + e->out.len;
  /* coded where that takes less than a byte a point (the plain run takes
   * at least one), else plain */
  uint64_t tag = LA_REC_QRUN | ((m - 1) << LA_REC_SHIFT);
  size_t tl = la_varint_write(p, tag | LA_REC_EXC);
  size_t coded = la_huff_qrun_encode(ks, m, e->qk, p + tl, m, &e->huff,
                                      e->simd);
  if (coded) {
    p += tl + coded;
    kp = ks[m - 1];
  } else {
    p += la_varint_write(p, tag);
    for (uint64_t j = 0; j < m; j++) { /* |difference| < 2^54: exact */
      p += la_varint_write(p, la_zigzag((int64_t)(ks[j] - kp)));
      kp = ks[j];
    }
  }
  e->qbpp = 0.75 * e->qbpp +
            0.25 * (double)(size_t)(p - (e->out.p + e->out.len)) / (double)m;
  e->out.len = (size_t)(p - e->out.p);
  if (e->recon) /* k * quantum is x exactly (qint) */
    memcpy(e->recon + first, e->x + first, m * sizeof *e->recon);
  e->qk = kp;
  la__record(e, e->pos);
  e->pos += m;
  e->quantized += m;
  e->vertex_ok = 0;
  if (e->pos - e->stats_pos >= LA_CENC_STATS_CHUNK) stats_upto(e, e->pos);
  return (int64_t)m;
}

int la_cenc_finish(la_cenc_t *e) {
  if (e->err) return e->err;
  flush_run(e);
  stats_upto(e, e->n);
  if (e->pos != e->n) return e->err = LA_EINVAL; /* a segmenter bug */
  la_cbuf_put_u32(&e->out, la_compact_crc32(0, e->out.p, e->out.len));
  return e->err = e->out.err;
}
