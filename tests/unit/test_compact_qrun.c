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
  uint8_t b[256];
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
      cmocka_unit_test(test_params_check_quantum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
