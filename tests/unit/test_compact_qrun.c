/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_qrun.c: quantized runs of the polyline mode
 * (docs/compaction.md, "Rough series: quantized runs").
 *
 * Per-element timings are whole timer ticks times the ns per tick; on a
 * coarse timer most cells read 0, 1 or one step of ticks, and polyline
 * segments come out a few points long. With a quantum the encoder stores
 * such stretches exactly as integers and keeps lines where they pay. These
 * tests check what a user of the encoding relies on: exact values where
 * runs are used, the bound everywhere else, smaller output on rough series,
 * nothing changed on smooth or non-quantized series, the same bytes from
 * the scalar and AVX2 kernels, and a decoder that refuses malformed runs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact_internal.h"

#define Q 0.38518989313080604 /* ns per tick, as calibrated on one VM */

/* A coarse timer over a cheap kernel: mostly 26 ticks (one step), some 25,
 * 1 and 0, and a few preemptions of thousands of ticks. */
static void rough(double *x, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    double u = la_compact_rand01(&seed), k;
    if (u < 0.70)
      k = 26;
    else if (u < 0.80)
      k = 25;
    else if (u < 0.90)
      k = 1;
    else if (u < 0.999)
      k = 0;
    else
      k = 20000 + floor(1e5 * la_compact_rand01(&seed));
    x[i] = k * Q;
  }
}

/* Plateaus of whole ticks with a little noise: lines pay. */
static void smooth(double *x, size_t n, uint64_t seed) {
  double level = 30000;
  for (size_t i = 0; i < n; i++) {
    if (i % 5000 == 0) level = 10000 + floor(50000 * la_compact_rand01(&seed));
    x[i] = (level + floor(30 * la_compact_rand01(&seed))) * Q;
  }
}

static la_compact_params_t params(double quantum) {
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.quantum = quantum;
  return p;
}

/* Decodes r and checks: every point stored verbatim (quantized runs,
 * exceptions, verbatim runs) is bit-exact; every line segment meets the
 * polyline bound over its non-verbatim points; the range sum matches the
 * decoded sum; the statistics are the exact ones. Returns the decoded
 * values (caller frees). */
static double *check_decoding(const double *x, size_t n,
                              const la_compact_result_t *r, double cv) {
  la_trace_t *t = NULL;
  char why[128];
  double *y = malloc(n * sizeof(double)), sum = 0, rs, abs_sum = 0;
  la_series_stats_t st;

  assert_non_null(y);
  assert_int_equal(la_trace_open(r->bytes, r->len, &t, why, sizeof(why)), 0);
  assert_int_equal(la_trace_count(t), n);
  assert_int_equal(la_trace_decode(t, 0, n, y), 0);
  for (size_t i = 0; i < n; i++)
    if (la_trace_is_verbatim(t, i))
      assert_memory_equal(&x[i], &y[i], sizeof(double));
  for (size_t k = 0; k < la_trace_segment_count(t); k++) {
    la_trace_segment_t s;
    double sse = 0, sx = 0;
    uint64_t m = 0;
    assert_int_equal(la_trace_segment(t, k, &s), 0);
    if (s.kind != LA_SEG_LINE) continue;
    for (uint64_t i = s.first; i < s.first + s.count; i++) {
      if (la_trace_is_verbatim(t, i)) continue;
      sse += (y[i] - x[i]) * (y[i] - x[i]);
      sx += x[i];
      m++;
    }
    assert_true(sse * (double)m <= cv * cv * sx * sx * (1 + 1e-12));
  }
  for (size_t i = 0; i < n; i++)
    if (isfinite(y[i])) {
      sum += y[i];
      abs_sum += fabs(y[i]);
    }
  assert_int_equal(la_trace_range_sum(t, 0, n, &rs), 0);
  if (isfinite(rs)) assert_true(fabs(rs - sum) <= 1e-12 * abs_sum + 1e-300);
  la_series_stats(x, n, &st);
  assert_memory_equal(&st.sum, &r->stats.sum, sizeof(double));
  la_trace_close(t);
  return y;
}

/* x compacted with the default parameters, without (r0) and with (rq) the
 * quantum Q. */
static void compact_both(const double *x, size_t n, la_compact_result_t *r0,
                         la_compact_result_t *rq) {
  la_compact_params_t p0 = params(0), pq = params(Q);
  assert_int_equal(la_compact(x, n, &p0, r0), 0);
  assert_int_equal(la_compact(x, n, &pq, rq), 0);
}

/* No quantized run: the same records, and the quantum in the header. */
static void assert_only_header_differs(const la_compact_result_t *r0,
                                       const la_compact_result_t *rq) {
  assert_int_equal(rq->quantized, 0);
  assert_int_equal(rq->segments, r0->segments);
  assert_int_equal(rq->len, r0->len + 8);
}

/* compact_both(), where no quantized run must be taken: the same records
 * as without the quantum (only the header differs), decoding within the
 * bound. Returns the size of the encoding with the quantum. */
static size_t compact_no_runs(const double *x, size_t n) {
  la_compact_result_t r0, rq;
  compact_both(x, n, &r0, &rq);
  assert_int_equal(rq.quantized, 0);
  assert_only_header_differs(&r0, &rq);
  free(check_decoding(x, n, &rq, 0.1));
  size_t len = rq.len;
  la_compact_result_free(&r0);
  la_compact_result_free(&rq);
  return len;
}

static void test_rough_series_stored_exactly_and_smaller(void **state) {
  size_t n = 100000;
  double *x = malloc(n * sizeof(double));
  la_compact_result_t r0, rq;
  (void)state;

  rough(x, n, 7);
  compact_both(x, n, &r0, &rq);
  assert_int_equal(r0.quantized, 0);
  /* nearly every point goes to runs; they are smaller than the lines */
  assert_true(rq.quantized >= n * 95 / 100);
  assert_true(rq.len < r0.len);
  /* coded: four values and rare spikes (entropy about 1.4 bits) take
   * under 2 bits a point, where a plain run takes at least 8 */
  assert_true(rq.len * 8.0 / (double)n < 2.0);
  free(check_decoding(x, n, &rq, 0.1));
  free(check_decoding(x, n, &r0, 0.1));
  la_compact_result_free(&r0);
  la_compact_result_free(&rq);
  free(x);
}

static void test_smooth_series_keeps_lines(void **state) {
  size_t n = 100000;
  double *x = malloc(n * sizeof(double));
  (void)state;

  smooth(x, n, 3);
  assert_true(compact_no_runs(x, n) < n / 100);
  free(x);
}

static void test_mixed_series_uses_each_where_it_pays(void **state) {
  size_t n = 60000, half = n / 2;
  double *x = malloc(n * sizeof(double));
  la_compact_params_t pq = params(Q);
  la_compact_result_t rq;
  la_trace_t *t;
  char why[128];
  uint64_t q_first = 0, q_second = 0;
  (void)state;

  smooth(x, half, 11);
  rough(x + half, n - half, 12);
  assert_int_equal(la_compact(x, n, &pq, &rq), 0);
  assert_int_equal(la_trace_open(rq.bytes, rq.len, &t, why, sizeof(why)), 0);
  for (size_t i = 0; i < n; i++)
    if (la_trace_is_verbatim(t, i)) *(i < half ? &q_first : &q_second) += 1;
  la_trace_close(t);
  assert_true(q_first < half / 100);
  assert_true(q_second > (n - half) * 9 / 10);
  free(check_decoding(x, n, &rq, 0.1));
  la_compact_result_free(&rq);
  free(x);
}

static void test_values_not_multiples_fall_back_to_lines(void **state) {
  size_t n = 50000;
  double *x = malloc(n * sizeof(double));
  uint64_t seed = 5;
  (void)state;

  /* a custom probe's readings: rough, but not whole ticks */
  for (size_t i = 0; i < n; i++) x[i] = 10 + 5 * la_compact_rand01(&seed);
  compact_no_runs(x, n);
  free(x);
}

static void test_awkward_values_inside_runs(void **state) {
  size_t n = 4000;
  double *x = malloc(n * sizeof(double)), *y;
  la_compact_params_t pq = params(Q);
  la_compact_result_t rq;
  (void)state;

  rough(x, n, 9);
  x[1000] = NAN;
  x[1500] = -0.0;
  x[2000] = INFINITY;
  x[2500] = 3.14159; /* not a multiple */
  x[3000] = -26 * Q; /* negative multiples are fine */
  assert_int_equal(la_compact(x, n, &pq, &rq), 0);
  assert_true(rq.quantized > n / 2);
  y = check_decoding(x, n, &rq, 0.1);
  assert_true(isnan(y[1000]));
  assert_true(isinf(y[2000]));
  /* -0.0 and 3.14159 are not runs' values: they go to lines (or verbatim),
   * within the bound (check_decoding); the negative multiple is exact */
  assert_true(y[3000] == -26 * Q);
  free(y);
  la_compact_result_free(&rq);
  free(x);
}

static void test_scalar_and_simd_write_the_same_bytes(void **state) {
  size_t n = 70001;
  double *x = malloc(n * sizeof(double));
  la_compact_params_t pq = params(Q);
  la_compact_result_t a, b;
  (void)state;

  rough(x, n / 2, 21);
  smooth(x + n / 2, n - n / 2, 22);
  setenv("LA_COMPACT_SCALAR", "1", 1);
  assert_int_equal(la_compact(x, n, &pq, &a), 0);
  unsetenv("LA_COMPACT_SCALAR");
  assert_int_equal(la_compact(x, n, &pq, &b), 0);
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.bytes, b.bytes, a.len);
  la_compact_result_free(&a);
  la_compact_result_free(&b);
  free(x);
}

/* ------------------------------------------------- malformed encodings */

typedef struct {
  uint8_t b[8192];
  size_t len;
} enc_t;

static void put_u8(enc_t *e, uint8_t v) {
  e->b[e->len++] = v;
}
static void put_var(enc_t *e, uint64_t v) {
  e->len += la_varint_write(e->b + e->len, v);
}
static void put_f64(enc_t *e, double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  for (int i = 0; i < 8; i++) put_u8(e, (uint8_t)(u >> (8 * i)));
}

/* A polyline encoding of n points with the given flags and quantum (not
 * written when flags lack the quantum bit); the caller adds records. */
static void head(enc_t *e, uint8_t flags, uint64_t n, double quantum) {
  e->len = 0;
  put_u8(e, 'L');
  put_u8(e, 'A');
  put_u8(e, 'C');
  put_u8(e, 1);
  put_u8(e, LA_COMPACT_POLYLINE);
  put_u8(e, flags);
  put_f64(e, 0.1);
  put_var(e, n);
  if (flags & LA_CENC_F_QUANTUM) put_f64(e, quantum);
}

static int open_enc(enc_t *e, double *out, size_t n) {
  uint32_t crc = la_compact_crc32(0, e->b, e->len);
  la_trace_t *t = NULL;
  char why[128];
  int rc;

  for (int i = 0; i < 4; i++) put_u8(e, (uint8_t)(crc >> (8 * i)));
  rc = la_trace_open(e->b, e->len, &t, why, sizeof(why));
  if (rc == 0 && out) assert_int_equal(la_trace_decode(t, 0, n, out), 0);
  la_trace_close(t);
  return rc;
}

static void test_decoder_reads_and_refuses_runs(void **state) {
  enc_t e;
  double v[3];
  (void)state;

  /* a good run: k = 26, 0, 1 */
  head(&e, LA_CENC_F_QUANTUM, 3, 0.5);
  put_var(&e, LA_REC_QRUN | (2 << LA_REC_SHIFT));
  put_var(&e, la_zigzag(26));
  put_var(&e, la_zigzag(-26));
  put_var(&e, la_zigzag(1));
  assert_int_equal(open_enc(&e, v, 3), 0);
  assert_true(v[0] == 13 && v[1] == 0 && v[2] == 0.5);

  /* a run without a quantum in the header */
  head(&e, 0, 1, 0);
  put_var(&e, LA_REC_QRUN);
  put_var(&e, la_zigzag(1));
  assert_int_equal(open_enc(&e, NULL, 1), LA_EPROTO);

  /* bad quanta: 0, negative, infinite, NaN, subnormal */
  const double bad[] = {0, -1, INFINITY, NAN, 1e-310};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    head(&e, LA_CENC_F_QUANTUM, 1, bad[i]);
    put_var(&e, LA_REC_QRUN);
    put_var(&e, la_zigzag(1));
    assert_int_equal(open_enc(&e, NULL, 1), LA_EPROTO);
  }

  /* integers beyond 2^53, and values that overflow */
  head(&e, LA_CENC_F_QUANTUM, 2, 1);
  put_var(&e, LA_REC_QRUN | (1 << LA_REC_SHIFT));
  put_var(&e, la_zigzag(INT64_C(1) << 52));
  put_var(&e, la_zigzag(INT64_C(1) << 52));
  assert_int_equal(open_enc(&e, NULL, 2), LA_EPROTO);
  head(&e, LA_CENC_F_QUANTUM, 1, 1e300);
  put_var(&e, LA_REC_QRUN);
  put_var(&e, la_zigzag(INT64_C(1) << 40));
  assert_int_equal(open_enc(&e, NULL, 1), LA_EPROTO);

  /* exception or exponent bits on a run; a run longer than the trace */
  head(&e, LA_CENC_F_QUANTUM, 1, 1);
  put_var(&e, LA_REC_QRUN | LA_REC_EXC);
  put_var(&e, la_zigzag(1));
  assert_int_equal(open_enc(&e, NULL, 1), LA_EPROTO);
  head(&e, LA_CENC_F_QUANTUM, 1, 1);
  put_var(&e, LA_REC_QRUN | (1 << LA_REC_SHIFT));
  put_var(&e, la_zigzag(1));
  put_var(&e, la_zigzag(1));
  assert_int_equal(open_enc(&e, NULL, 1), LA_EPROTO);

  /* a quantum flag in a lossless trace */
  e.len = 0;
  put_u8(&e, 'L');
  put_u8(&e, 'A');
  put_u8(&e, 'C');
  put_u8(&e, 1);
  put_u8(&e, LA_COMPACT_LOSSLESS);
  put_u8(&e, LA_CENC_F_QUANTUM);
  put_f64(&e, 0);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 0), LA_EPROTO);

  /* truncated inside a run */
  head(&e, LA_CENC_F_QUANTUM, 3, 1);
  put_var(&e, LA_REC_QRUN | (2 << LA_REC_SHIFT));
  put_var(&e, la_zigzag(1));
  assert_int_equal(open_enc(&e, NULL, 3), LA_ETRUNC);
}

/* ------------------------------------------------- coded quantized runs */

/* A coded run of m integers ks relative to kref, as the encoder writes it,
 * in a one-record encoding: 0 when the coder declined. */
static int coded_enc(enc_t *e, const double *ks, uint64_t m, double q) {
  head(e, LA_CENC_F_QUANTUM, m, q);
  put_var(e, LA_REC_QRUN | LA_REC_EXC | ((m - 1) << LA_REC_SHIFT));
  size_t n = la_huff_qrun_encode(ks, m, 0, e->b + e->len, m, NULL,
                                 la_compact_simd());
  e->len += n;
  return n > 0;
}

static void test_coded_runs_round_trip(void **state) {
  (void)state;
  enc_t e;
  double ks[LA_CENC_QRUN_MAX], v[LA_CENC_QRUN_MAX];
  uint64_t seed = 3;
  /* skewed, with far values; one value alone; the most values allowed */
  for (int c = 0; c < 3; c++) {
    uint64_t m = c == 2 ? LA_CENC_QRUN_MAX : 700;
    for (uint64_t j = 0; j < m; j++) {
      double u = la_compact_rand01(&seed);
      ks[j] = c == 1 ? 26
              : u < 0.8 ? 26
              : u < 0.9 ? 25
              : u < 0.99 ? 1
                         : 5000 + floor(1000 * la_compact_rand01(&seed));
    }
    assert_true(coded_enc(&e, ks, m, 0.25));
    if (c == 1) assert_true(e.len < 40); /* a lone value costs no bits */
    assert_int_equal(open_enc(&e, v, m), 0);
    for (uint64_t j = 0; j < m; j++) assert_true(v[j] == ks[j] * 0.25);
  }
  /* uniform noise over 2^16 values: no shorter than a byte a point, so
   * the coder declines and the plain run stays */
  for (uint64_t j = 0; j < 1000; j++)
    ks[j] = floor(65536 * la_compact_rand01(&seed));
  assert_int_equal(la_huff_qrun_encode(ks, 1000, 0, e.b, 1000, NULL, 1), 0);
}

/* Values far from the reference (row probes: a timer step of 26 ticks, a
 * row of hundreds of ticks): up to 32 distinct far values are coded, each
 * found again wherever it repeats (negative and positive, values that
 * share their low bits), and decode to what they were; a 33rd declines the
 * record (the plain run stays). */
static void test_coded_runs_far_values(void **state) {
  (void)state;
  enc_t e;
  double ks[LA_CENC_QRUN_MAX], v[LA_CENC_QRUN_MAX];
  uint64_t seed = 17, m = 3000;
  for (int far = 1; far <= 33; far += 8) {
    int nfar = far == 33 ? 33 : far == 25 ? 32 : far;
    for (uint64_t j = 0; j < m; j++) {
      uint64_t r = la_compact_rand(&seed) % 4;
      int64_t k = (int64_t)(la_compact_rand(&seed) % (uint64_t)nfar);
      /* far values: 26 ticks apart above 300, or 1024 apart below -300 */
      ks[j] = r == 0   ? (double)(k % 2 ? 300 + 26 * k : -300 - 1024 * k)
              : r == 1 ? 26
                       : 27;
    }
    for (int k = 0; k < nfar; k++) /* every far value at least once */
      ks[k * 7] = (double)(k % 2 ? 300 + 26 * k : -300 - 1024 * k);
    int coded = coded_enc(&e, ks, m, 0.5);
    assert_int_equal(coded, nfar <= 32);
    if (!coded) continue;
    assert_int_equal(open_enc(&e, v, m), 0);
    for (uint64_t j = 0; j < m; j++) assert_true(v[j] == ks[j] * 0.5);
  }
}

/* ks[0..m) coded by the scalar code (tables *ta) and with AVX2 (*tb):
 * the same bytes; returns their length. */
static size_t same_coded_bytes(const double *ks, uint64_t m, double kref,
                               la_huff_tables_t **ta, la_huff_tables_t **tb) {
  static uint8_t a[LA_CENC_QRUN_MAX * 10], b[LA_CENC_QRUN_MAX * 10];
  size_t na = la_huff_qrun_encode(ks, m, kref, a, m * 9, ta, 0);
  size_t nb = la_huff_qrun_encode(ks, m, kref, b, m * 9, tb, 1);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, na);
  return na;
}

/* A coded record written into exactly the room it needs (limit one byte
 * more than its length) is the same bytes as with room to spare, and
 * nothing past limit is written; with limit its length, the coder
 * declines and writes nothing past limit: the bit writer's 8-byte stores
 * stay inside the room, for the point form (many symbols, a few bits a
 * point) and the run form, in the scalar and the AVX2 code, records of
 * lengths that are not multiples of three codes. */
static void test_coded_run_stays_in_its_room(void **state) {
  (void)state;
  static uint8_t a[LA_CENC_QRUN_MAX * 10], b[LA_CENC_QRUN_MAX * 10];
  double ks[LA_CENC_QRUN_MAX];
  uint64_t seed = 41;
  for (int form = 0; form < 2; form++)
    for (uint64_t m = 100; m <= LA_CENC_QRUN_MAX; m += 997) {
      for (uint64_t j = 0; j < m; j++) {
        double u = la_compact_rand01(&seed);
        ks[j] = form == 0 ? floor(20 + 12 * u * u)
                : u < 0.8 ? 26
                          : floor(1 + 30 * la_compact_rand01(&seed));
      }
      for (int simd = 0; simd < 2; simd++) {
        size_t n = la_huff_qrun_encode(ks, m, 0, a, m * 9, NULL, simd);
        assert_true(n > 0 && n < m);
        for (size_t lim = n; lim <= n + 1; lim++) {
          memset(b, 0xa5, sizeof b);
          size_t got = la_huff_qrun_encode(ks, m, 0, b, lim, NULL, simd);
          assert_int_equal(got, lim > n ? n : 0);
          if (got) assert_memory_equal(a, b, n);
          for (size_t k = lim; k < lim + 16; k++) assert_int_equal(b[k], 0xa5);
        }
      }
    }
}

/* The run form's tokens found from the gaps between the points that are
 * not the mode (AVX2 masks) and point by point give the same bytes: modes
 * in gaps of 0..100 points (31, 32, 33 and 64 among them), at the start
 * and at the end of the record, records of 32..4096 points (not multiples
 * of 64), too many distinct tokens, and the previous tables reused over a
 * sequence of records. */
static void test_run_tokens_gaps_same_bytes(void **state) {
  (void)state;
  static double ks[LA_CENC_QRUN_MAX];
  static const uint64_t sizes[] = {32, 33, 63, 64, 65, 100, 127, 1000, 4095,
                                   4096};
  static const uint32_t gaps[] = {0, 1, 2, 5, 30, 31, 32, 33, 63, 64, 65, 100};
  uint64_t seed = 11;
  la_huff_tables_t *ta = NULL, *tb = NULL;
  int coded = 0;
  for (int round = 0; round < 400; round++) {
    uint64_t m = sizes[round % 10];
    uint32_t g = gaps[(round / 10) % 12];
    int kind = round % 4;
    uint64_t j = 0;
    /* modes first or not; then gaps of about g modes between others */
    while (j < m) {
      double u = la_compact_rand01(&seed);
      uint64_t run = kind == 0 ? g : (uint64_t)(u * 2 * g);
      for (uint64_t r = 0; r < run && j < m; r++) ks[j++] = 26;
      if (j < m)
        ks[j++] = kind == 3 ? 27 + (double)(la_compact_rand(&seed) % 300)
                : u < 0.5   ? 25
                            : 1 + (double)(la_compact_rand(&seed) % 3);
    }
    if (round % 3 == 0) /* modes at the end */
      for (uint64_t r = m > 40 ? m - (g % 40) : m; r < m; r++) ks[r] = 26;
    double kref = (double)(round % 7);
    coded += same_coded_bytes(ks, m, kref, &ta, &tb) > 0;
  }
  assert_true(coded > 200); /* the comparisons saw coded records */
  la_huff_tables_free(ta);
  la_huff_tables_free(tb);
}

/* The symbols of coded runs, mapped four at a time and counted by
 * comparisons (AVX2), give the scalar code's bytes: records of 1 to 60
 * distinct values, around the direct table's edges (-256, 255), far
 * values, differences beyond 32 bits, new values in every place of a
 * group of four, and a large reference. */
static void test_coded_symbols_same_bytes(void **state) {
  (void)state;
  static double ks[LA_CENC_QRUN_MAX];
  static const uint64_t sizes[] = {32, 35, 64, 257, 1001, 4096};
  static const int nvals[] = {1, 2, 5, 13, 24, 25, 40, 60};
  uint64_t seed = 23;
  la_huff_tables_t *ta = NULL, *tb = NULL;
  int coded = 0;
  for (int round = 0; round < 480; round++) {
    uint64_t m = sizes[round % 6];
    int nv = nvals[(round / 6) % 8];
    double kref = round % 5 == 4 ? 0x1p40 : (double)(round % 9) - 4;
    double val[60];
    for (int v = 0; v < nv; v++) {
      uint64_t u = la_compact_rand(&seed) % 16;
      double d = u < 10   ? (double)(la_compact_rand(&seed) % 64) - 8
                 : u < 12 ? (u % 2 ? -256.0 : 255.0) - (double)(v % 3)
                 : u < 14 ? (double)(la_compact_rand(&seed) % 600) - 300
                 : u < 15 ? 0x1p33 + v
                          : -(0x1p35) - v;
      val[v] = kref + d;
    }
    for (uint64_t j = 0; j < m; j++) {
      /* a skewed choice: the first values most of the time */
      uint64_t r = la_compact_rand(&seed) % 100;
      int v = r < 60 ? 0 : (int)(r % (uint64_t)nv);
      ks[j] = val[v];
    }
    coded += same_coded_bytes(ks, m, kref, &ta, &tb) > 0;
  }
  assert_true(coded > 100); /* the comparisons saw coded records */
  la_huff_tables_free(ta);
  la_huff_tables_free(tb);
}

/* Hand-made coded bodies: each field out of bounds is refused, never read
 * past, never a crash. Symbols 0 and 1 (k = 0, 1), n points. */
static void coded_head(enc_t *e, uint64_t n, uint64_t nsym) {
  head(e, LA_CENC_F_QUANTUM, n, 1);
  put_var(e, LA_REC_QRUN | LA_REC_EXC | ((n - 1) << LA_REC_SHIFT));
  put_var(e, nsym);
  put_var(e, la_zigzag(0));
  for (uint64_t s = 1; s < nsym; s++) put_var(e, 0);
}

static void test_coded_runs_refused(void **state) {
  (void)state;
  enc_t e;
  double v[8];
  /* good: codes 0 -> "0", 1 -> "1"; points 0,1,1,0 = bits 0110 */
  coded_head(&e, 4, 2);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0x60);
  assert_int_equal(open_enc(&e, v, 4), 0);
  assert_true(v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 0);
  /* no symbols; more symbols than points */
  coded_head(&e, 4, 0);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  coded_head(&e, 2, 3);
  put_u8(&e, 1 | 2 << 4);
  put_u8(&e, 2);
  put_var(&e, 1);
  put_u8(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 2), LA_EPROTO);
  /* lengths: over-full (three codes of one bit), a zero length beside
   * others, a lone symbol with a length, a stray high nibble */
  coded_head(&e, 4, 3);
  put_u8(&e, 1 | 1 << 4);
  put_u8(&e, 1);
  put_var(&e, 1);
  put_u8(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  coded_head(&e, 4, 2);
  put_u8(&e, 0 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  coded_head(&e, 4, 1);
  put_u8(&e, 1);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  coded_head(&e, 4, 1);
  put_u8(&e, 0 | 3 << 4);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  /* a lone symbol with code bytes */
  coded_head(&e, 4, 1);
  put_u8(&e, 0);
  put_var(&e, 1);
  put_u8(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  /* codes that are not in the table (an incomplete code: "00", "01") */
  coded_head(&e, 4, 2);
  put_u8(&e, 2 | 2 << 4);
  put_var(&e, 1);
  put_u8(&e, 0xff);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  /* the stream ends early; a whole byte too many; padding not zero */
  coded_head(&e, 8, 2);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0x60);
  put_var(&e, 0); /* as if a record followed */
  assert_int_not_equal(open_enc(&e, NULL, 8), 0);
  coded_head(&e, 4, 2);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 2);
  put_u8(&e, 0x60);
  put_u8(&e, 0x00);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  coded_head(&e, 4, 2);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0x61);
  assert_int_equal(open_enc(&e, NULL, 4), LA_EPROTO);
  /* the byte count beyond the encoding */
  coded_head(&e, 4, 2);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1000);
  put_u8(&e, 0x60);
  assert_int_not_equal(open_enc(&e, NULL, 4), 0);
  /* a coded run longer than a record may be */
  head(&e, LA_CENC_F_QUANTUM, LA_CENC_QRUN_MAX + 1, 1);
  put_var(&e, LA_REC_QRUN | LA_REC_EXC |
                  ((uint64_t)LA_CENC_QRUN_MAX << LA_REC_SHIFT));
  put_var(&e, 1);
  put_var(&e, 0);
  put_u8(&e, 0);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, LA_CENC_QRUN_MAX + 1), LA_EPROTO);
  /* values beyond 2^53 through the symbol table */
  head(&e, LA_CENC_F_QUANTUM, 2, 1);
  put_var(&e, LA_REC_QRUN | LA_REC_EXC | (1 << LA_REC_SHIFT));
  put_var(&e, 2);
  put_var(&e, la_zigzag(0));
  put_var(&e, (UINT64_C(1) << 53));
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0x40);
  assert_int_equal(open_enc(&e, NULL, 2), LA_EPROTO);
}

/* ------------------------------------------- coded runs: the run form */

/* A timer that aliases with the cells' cost: 26 ticks, and after every 3
 * or 4 such cells one of 1 or 25; rarely a far value. */
static void aliased(double *ks, size_t m, uint64_t *seed) {
  size_t gap = 0, want = 3;
  for (size_t j = 0; j < m; j++) {
    if (gap == want) {
      ks[j] = la_compact_rand01(seed) < 0.5 ? 1 : 25;
      gap = 0;
      want = la_compact_rand01(seed) < 0.5 ? 3 : 4;
    } else {
      ks[j] = la_compact_rand01(seed) > 0.997 ? 52 : 26;
      gap++;
    }
  }
}

static void test_run_form_round_trip(void **state) {
  (void)state;
  enc_t e;
  double ks[LA_CENC_QRUN_MAX], v[LA_CENC_QRUN_MAX];
  uint64_t seed = 5;
  for (int c = 0; c < 4; c++) {
    uint64_t m = c == 0 ? LA_CENC_QRUN_MAX : 100 + 300 * (uint64_t)c;
    aliased(ks, m, &seed);
    if (c == 1) /* the mode up to the end, in a run longer than a token */
      for (uint64_t j = m - 70; j < m; j++) ks[j] = 26;
    if (c == 2) ks[m - 1] = 1; /* ends on another value */
    if (c == 3) /* long runs of the mode */
      for (uint64_t j = 0; j < m; j++) ks[j] = j % 97 == 96 ? 25 : 26;
    assert_true(coded_enc(&e, ks, m, 0.5));
    /* the run form (a leading 0), well under a bit a point */
    size_t body = e.len - 22 - la_varint_len(m) -
                  la_varint_len(LA_REC_QRUN | LA_REC_EXC |
                                ((m - 1) << LA_REC_SHIFT));
    assert_int_equal(e.b[e.len - body], 0);
    assert_true(8 * body < (c == 0 ? 8 * m / 10 : c == 3 ? 3 * m / 10 : m));
    assert_int_equal(open_enc(&e, v, m), 0);
    for (uint64_t j = 0; j < m; j++) assert_true(v[j] == ks[j] * 0.5);
  }
  /* the mode under half the points: the point form */
  for (uint64_t j = 0; j < 600; j++) ks[j] = (double)(j % 3);
  assert_true(coded_enc(&e, ks, 600, 1));
  assert_int_not_equal(e.b[e.len - (e.len - 22 - la_varint_len(600) -
                                    la_varint_len(LA_REC_QRUN | LA_REC_EXC |
                                                  (599u << LA_REC_SHIFT)))],
                       0);
}

/* A whole aliased timing series through la_compact: the segmenter keeps
 * it in quantized runs (it did not when it priced runs at a byte a point),
 * exact, with the exact sum, well under a bit a point. */
static void test_run_form_whole_series(void **state) {
  (void)state;
  size_t n = 1 << 18;
  double *ks = malloc(n * sizeof *ks), *x = malloc(n * sizeof *x);
  double *y = malloc(n * sizeof *y);
  assert_true(ks && x && y);
  uint64_t seed = 9;
  aliased(ks, n, &seed);
  for (size_t j = 0; j < n; j++) x[j] = ks[j] * 0.38519008621557316;
  la_compact_params_t p = params(0.38519008621557316);
  la_compact_result_t r = {0};
  assert_int_equal(la_compact(x, n, &p, &r), 0);
  assert_true(r.quantized >= n - n / 100);
  assert_true(8.0 * (double)r.len / (double)n < 0.8);
  la_trace_t *t = NULL;
  char why[128];
  assert_int_equal(la_trace_open(r.bytes, r.len, &t, why, sizeof why), 0);
  assert_int_equal(la_trace_decode(t, 0, n, y), 0);
  for (size_t j = 0; j < n; j++)
    if (la_trace_is_verbatim(t, j)) assert_true(y[j] == x[j]);
  la_series_stats_t st;
  la_series_stats(x, n, &st);
  assert_memory_equal(&st.sum, &r.stats.sum, sizeof(double));
  la_trace_close(t);
  la_compact_result_free(&r);
  free(ks);
  free(x);
  free(y);
}

/* Hand-made run-form bodies over symbols 0 and 1 (mode 0), n points. */
static void run_head(enc_t *e, uint64_t n, uint64_t nsym, uint64_t mode) {
  coded_head(e, n, 0);
  e->len--; /* coded_head wrote zigzag(0) for nsym 0: take it back */
  put_var(e, nsym);
  put_var(e, la_zigzag(0));
  for (uint64_t s = 1; s < nsym; s++) put_var(e, 0);
  put_var(e, mode);
}

static void test_run_form_refused(void **state) {
  (void)state;
  enc_t e;
  double v[16];
  /* good: tokens 1 = (0, s1) -> "0", 2 = (1, s0) -> "1"; n = 5:
   * "1","0","1" = 1, 0 0, 1 ... (1,s0)=0,0 (0,s1)=1 (1,s0)=0,0: 0 0 1 0 0 */
  run_head(&e, 5, 2, 0);
  put_var(&e, 2);
  put_var(&e, 1);
  put_var(&e, 0);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0xa0); /* 1 0 1 */
  assert_int_equal(open_enc(&e, v, 5), 0);
  assert_true(v[0] == 0 && v[1] == 0 && v[2] == 1 && v[3] == 0 && v[4] == 0);
  /* one symbol; the mode not in the table */
  run_head(&e, 5, 1, 0);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  run_head(&e, 5, 2, 2);
  put_var(&e, 1);
  put_var(&e, 0);
  put_u8(&e, 0);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  /* no tokens; a token beyond the run limit */
  run_head(&e, 5, 2, 0);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  run_head(&e, 5, 2, 0);
  put_var(&e, 1);
  put_var(&e, 32 * 2);
  put_u8(&e, 0);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  /* a token past the record: (1, s0) covers 2 points, n = 5 is odd */
  run_head(&e, 5, 2, 0);
  put_var(&e, 1);
  put_var(&e, 2);
  put_u8(&e, 0);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  /* a lone token that covers the record: (4, s1) for n = 10 */
  run_head(&e, 10, 2, 0);
  put_var(&e, 1);
  put_var(&e, 4 * 2 + 1);
  put_u8(&e, 0);
  put_var(&e, 0);
  assert_int_equal(open_enc(&e, v, 10), 0);
  assert_true(v[3] == 0 && v[4] == 1 && v[8] == 0 && v[9] == 1);
  /* the stream too long (a byte after the codes) or padding not zero */
  run_head(&e, 5, 2, 0);
  put_var(&e, 2);
  put_var(&e, 1);
  put_var(&e, 0);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 2);
  put_u8(&e, 0xa0);
  put_u8(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  run_head(&e, 5, 2, 0);
  put_var(&e, 2);
  put_var(&e, 1);
  put_var(&e, 0);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0xa1);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  /* the previous tables: without a record that wrote them, refused; after
   * one, read with its values as integers (the second record's kref is 1,
   * its values still 0 and 1). Tokens 1 = (0, s1) -> "0", 2 = (1, s0) ->
   * "1": record one 1 1 0 = 0 0 0 0 1, record two 0 1 1 = 1 0 0 0 0 */
  head(&e, LA_CENC_F_QUANTUM, 5, 1);
  put_var(&e, LA_REC_QRUN | LA_REC_EXC | (4 << LA_REC_SHIFT));
  put_var(&e, 0);
  put_var(&e, 0);
  put_var(&e, 1);
  put_u8(&e, 0x60);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
  head(&e, LA_CENC_F_QUANTUM, 10, 1);
  put_var(&e, LA_REC_QRUN | LA_REC_EXC | (4 << LA_REC_SHIFT));
  put_var(&e, 0);
  put_var(&e, 2);
  put_var(&e, la_zigzag(0));
  put_var(&e, 0);
  put_var(&e, 0);
  put_var(&e, 2);
  put_var(&e, 1);
  put_var(&e, 0);
  put_u8(&e, 1 | 1 << 4);
  put_var(&e, 1);
  put_u8(&e, 0xc0);
  put_var(&e, LA_REC_QRUN | LA_REC_EXC | (4 << LA_REC_SHIFT));
  put_var(&e, 0);
  put_var(&e, 0);
  put_var(&e, 1);
  put_u8(&e, 0x60);
  assert_int_equal(open_enc(&e, v, 10), 0);
  for (int j = 0; j < 10; j++) assert_true(v[j] == (j == 4 || j == 5));
  /* tokens not ascending cannot be written: a gap varint is unsigned; the
   * third token would pass the limit */
  run_head(&e, 5, 2, 0);
  put_var(&e, 3);
  put_var(&e, 1);
  put_var(&e, 0);
  put_var(&e, 62);
  put_u8(&e, 1 | 2 << 4);
  put_u8(&e, 2);
  put_var(&e, 1);
  put_u8(&e, 0);
  assert_int_equal(open_enc(&e, NULL, 5), LA_EPROTO);
}

/* Every single-byte change of a good coded encoding (its CRC redone) is
 * refused or decodes to some values: never read out of bounds (the
 * sanitized build checks), the checker agreeing with the parser. */
static void test_coded_runs_mutated(void **state) {
  (void)state;
  enc_t e, m;
  double ks[3 * LA_CENC_QRUN_MAX];
  static double v[3 * LA_CENC_QRUN_MAX];
  uint64_t seed = 11;
  /* the point form, the run form, and a whole series whose later records
   * reuse the first one's tables */
  for (int form = 0; form < 3; form++) {
    for (int j = 0; j < 300; j++) {
      double u = la_compact_rand01(&seed);
      ks[j] = u < 0.7 ? 26 : u < 0.85 ? 25 : u < 0.97 ? 1 : 700;
    }
    if (form == 1) aliased(ks, 300, &seed);
    if (form < 2) {
      assert_true(coded_enc(&e, ks, 300, 1));
    } else {
      size_t n = 3 * LA_CENC_QRUN_MAX;
      for (size_t j = 0; j < n; j++) ks[j] = j % 9 == 4 ? 1 : j % 9 == 8 ? 25 : 26;
      la_compact_params_t p = params(1);
      la_compact_result_t r = {0};
      assert_int_equal(la_compact(ks, n, &p, &r), 0);
      assert_true(r.len - 4 <= sizeof e.b - 4);
      memcpy(e.b, r.bytes, r.len - 4);
      e.len = r.len - 4;
      la_compact_result_free(&r);
    }
    for (size_t at = 6; at < e.len; at++)
      for (int flip = 1; flip < 256; flip <<= 1) {
        m = e;
        m.b[at] ^= (uint8_t)flip;
        la_trace_t *t = NULL;
        char why[128];
        uint32_t crc = la_compact_crc32(0, m.b, m.len);
        for (int i = 0; i < 4; i++) m.b[m.len + i] = (uint8_t)(crc >> (8 * i));
        int rc = la_trace_open(m.b, m.len + 4, &t, why, sizeof why);
        uint64_t np;
        int mode;
        assert_int_equal(
            la_trace_check_max(m.b, m.len + 4, 1u << 20, &np, &mode, why,
                               sizeof why),
            rc);
        if (rc == 0 && la_trace_count(t) <= 3 * LA_CENC_QRUN_MAX)
          assert_int_equal(la_trace_decode(t, 0, la_trace_count(t), v), 0);
        la_trace_close(t);
      }
  }
}

/* A coded point-form record of 43 points, value 3 at every third point
 * (j % 3 == 0) and 0 elsewhere, codes "0" and "1": 43 bits in 6 bytes
 * (nbytes of them written, the last one or-ed with pad), then, when
 * follow, a plain one-point record (k = 3 + 7); its codes are the last
 * bytes of the encoding otherwise. */
#define LA__M 43
static void stream_enc(enc_t *e, uint64_t nbytes, uint8_t pad, int follow) {
  uint8_t bits[6] = {0};
  for (int j = 0; j < LA__M; j++)
    if (j % 3 == 0) bits[j / 8] |= (uint8_t)(0x80u >> (j % 8));
  bits[5] |= pad;
  head(e, LA_CENC_F_QUANTUM, LA__M + (follow ? 1 : 0), 0.5);
  put_var(e, LA_REC_QRUN | LA_REC_EXC |
                 ((uint64_t)(LA__M - 1) << LA_REC_SHIFT));
  put_var(e, 2);
  put_var(e, la_zigzag(0));
  put_var(e, 2); /* 0, then 3 */
  put_u8(e, 1 | 1 << 4);
  put_var(e, nbytes);
  for (uint64_t b = 0; b < nbytes; b++) put_u8(e, b < 6 ? bits[b] : 0);
  if (follow) {
    put_var(e, LA_REC_QRUN);
    put_var(e, la_zigzag(7));
  }
}

/* la_trace_open's result, la_trace_check_totals' the same, and on
 * success the values and their sum (check_totals and its slices as
 * decoded). */
static int open_and_check(enc_t *e, double *v, size_t n, double *sum) {
  uint32_t crc = la_compact_crc32(0, e->b, e->len);
  for (int i = 0; i < 4; i++) put_u8(e, (uint8_t)(crc >> (8 * i)));
  la_trace_t *t = NULL;
  la_trace_totals_t tot, tsl;
  char why[128], why2[128];
  double sums[LA_SLICES_MAX];
  int ok = 0;
  int rc = la_trace_open(e->b, e->len, &t, why, sizeof why);
  assert_int_equal(la_trace_check_totals(e->b, e->len, n, &tot, why2,
                                         sizeof why2),
                   rc);
  if (rc != 0) {
    assert_string_equal(why, why2);
    return rc;
  }
  assert_int_equal(la_trace_decode(t, 0, n, v), 0);
  la_trace_close(t);
  assert_int_equal(la_trace_check_totals_slices(e->b, e->len, n, &tsl,
                                                LA_SLICES_MAX, sums, &ok, why,
                                                sizeof why),
                   0);
  assert_memory_equal(&tot.sum, &tsl.sum, sizeof(double));
  *sum = tot.sum;
  return 0;
}

/* The codes read several to a window and eight bytes at a time: a record
 * that ends inside a window, its codes the encoding's last bytes or not;
 * a stream a byte short (the bits after it are the next record's, or
 * none), a padding bit set, a byte too many: refused the same way by
 * the parser and the check. */
static void test_coded_stream_end(void **state) {
  (void)state;
  enc_t e;
  double v[LA__M + 1], sum;
  for (int follow = 0; follow < 2; follow++) {
    stream_enc(&e, 6, 0, follow);
    assert_int_equal(open_and_check(&e, v, LA__M + (size_t)follow, &sum), 0);
    double want = 0;
    for (int j = 0; j < LA__M; j++) {
      assert_true(v[j] == (j % 3 == 0 ? 1.5 : 0));
      want += v[j];
    }
    if (follow) {
      assert_true(v[LA__M] == 5); /* (3 + 7) * 0.5 */
      want += 5;
    }
    assert_true(sum == want);
    stream_enc(&e, 5, 0, follow);
    assert_int_equal(open_and_check(&e, v, LA__M + (size_t)follow, &sum),
                     LA_EPROTO);
    stream_enc(&e, 6, 0x04, follow);
    assert_int_equal(open_and_check(&e, v, LA__M + (size_t)follow, &sum),
                     LA_EPROTO);
    stream_enc(&e, 7, 0, follow);
    assert_int_equal(open_and_check(&e, v, LA__M + (size_t)follow, &sum),
                     LA_EPROTO);
  }
}
#undef LA__M

/* Whole series in coded runs (both forms, tables reused, far values
 * with long codes): the check's sum, taken from the codes without the
 * values, is the one taken from the decoded values (slices in every
 * record), and the decoded trace's sum. */
static void test_coded_check_sums(void **state) {
  (void)state;
  size_t n = 5 * LA_CENC_QRUN_MAX + 77;
  double *ks = malloc(n * sizeof *ks), *x = malloc(n * sizeof *x);
  assert_true(ks && x);
  for (int c = 0; c < 3; c++) {
    uint64_t seed = 21 + (uint64_t)c;
    if (c == 0) aliased(ks, n, &seed);
    for (size_t j = 0; c > 0 && j < n; j++) {
      double u = la_compact_rand01(&seed);
      ks[j] = u < 0.6 ? 26 : u < 0.75 ? 25 : u < 0.9 ? 1 : u < 0.998 ? 0
              : c == 2 ? 2000 + floor(3e4 * la_compact_rand01(&seed)) : 3;
    }
    int64_t ksum = 0;
    for (size_t j = 0; j < n; j++) {
      x[j] = ks[j] * 0.5;
      ksum += (int64_t)ks[j];
    }
    la_compact_params_t p = params(0.5);
    la_compact_result_t r = {0};
    assert_int_equal(la_compact(x, n, &p, &r), 0);
    assert_true(r.quantized >= n - n / 100);
    la_trace_totals_t tot, tsl;
    char why[128];
    double sums[LA_SLICES_MAX];
    int ok = 0;
    assert_int_equal(
        la_trace_check_totals(r.bytes, r.len, n, &tot, why, sizeof why), 0);
    assert_int_equal(la_trace_check_totals_slices(r.bytes, r.len, n, &tsl,
                                                  LA_SLICES_MAX, sums, &ok,
                                                  why, sizeof why),
                     0);
    assert_true(ok);
    assert_memory_equal(&tot.sum, &tsl.sum, sizeof(double));
    la_trace_t *t = NULL;
    double rs = 0;
    assert_int_equal(la_trace_open(r.bytes, r.len, &t, why, sizeof why), 0);
    assert_int_equal(la_trace_range_sum(t, 0, n, &rs), 0);
    la_trace_close(t);
    assert_true(fabs(tot.sum - rs) <= 1e-12 * (double)ksum);
    la_compact_result_free(&r);
  }
  free(ks);
  free(x);
}

static void test_params_check_quantum(void **state) {
  la_compact_params_t p;
  (void)state;
  la_compact_params_default(&p);
  assert_true(p.quantum == 0);
  p.quantum = -1;
  assert_int_equal(la_compact_params_check(&p, NULL, 0), LA_EINVAL);
  p.quantum = INFINITY;
  assert_int_equal(la_compact_params_check(&p, NULL, 0), LA_EINVAL);
  p.quantum = 1;
  assert_int_equal(la_compact_params_check(&p, NULL, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rough_series_stored_exactly_and_smaller),
      cmocka_unit_test(test_smooth_series_keeps_lines),
      cmocka_unit_test(test_mixed_series_uses_each_where_it_pays),
      cmocka_unit_test(test_values_not_multiples_fall_back_to_lines),
      cmocka_unit_test(test_awkward_values_inside_runs),
      cmocka_unit_test(test_scalar_and_simd_write_the_same_bytes),
      cmocka_unit_test(test_decoder_reads_and_refuses_runs),
      cmocka_unit_test(test_coded_runs_round_trip),
    cmocka_unit_test(test_coded_runs_far_values),
      cmocka_unit_test(test_coded_symbols_same_bytes),
      cmocka_unit_test(test_run_tokens_gaps_same_bytes),
      cmocka_unit_test(test_coded_run_stays_in_its_room),
      cmocka_unit_test(test_coded_runs_refused),
      cmocka_unit_test(test_run_form_round_trip),
      cmocka_unit_test(test_run_form_whole_series),
      cmocka_unit_test(test_run_form_refused),
      cmocka_unit_test(test_coded_runs_mutated),
      cmocka_unit_test(test_coded_stream_end),
      cmocka_unit_test(test_coded_check_sums),
      cmocka_unit_test(test_params_check_quantum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
