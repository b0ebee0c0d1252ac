/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_recon.c: la_compact_recon(), the encoder's reconstruction
 * of what it writes (the LocalAgent hands the robust weights so obtained
 * to the application and to the history instead of decoding them).
 *
 * For every mode and option the engine has (polyline with and without a
 * quantum, connected, outliers off; maxerr absolute and relative;
 * lossless) and series of every shape (the synthetic kinds; row-probed
 * series, one value per row of 64 cells; rows broken by NaN, +-Inf and
 * -0.0 cells; whole ticks times a scale so that quantized runs occur;
 * noise that makes lines fall back to verbatim runs), the bytes equal
 * la_compact()'s and the reconstruction equals la_trace_decode() of them
 * bit for bit (memcmp: NaN payloads and the sign of zero included), with
 * and without the AVX2 kernels.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact_internal.h"

#define ROW 64

/* Checks one series under one set of parameters. */
static void check(const double *x, size_t n, const la_compact_params_t *p) {
  la_compact_result_t a, b;
  double *rec = malloc((n ? n : 1) * sizeof *rec);
  double *dec = malloc((n ? n : 1) * sizeof *dec);
  assert_non_null(rec);
  assert_non_null(dec);
  for (size_t i = 0; i < n; i++) rec[i] = -12345.5; /* every one written */
  assert_int_equal(la_compact(x, n, p, &a), 0);
  assert_int_equal(la_compact_recon(x, n, p, &b, rec), 0);
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.bytes, b.bytes, a.len);
  assert_int_equal(a.segments, b.segments);
  la_trace_t *t = NULL;
  assert_int_equal(la_trace_open(b.bytes, b.len, &t, NULL, 0), 0);
  assert_int_equal(la_trace_count(t), n);
  assert_int_equal(la_trace_decode(t, 0, n, dec), 0);
  /* the records' starts as the encoder gives them (a capacity of half
   * of them: the first half written, the count whole) are the trace's */
  size_t k = la_trace_segment_count(t), cap = (k + 1) / 2;
  uint64_t *st = malloc((cap ? cap : 1) * sizeof *st);
  la_compact_result_t c;
  assert_non_null(st);
  assert_int_equal(la_compact_recon_starts(x, n, p, &c, rec,
                                           st, cap), 0);
  assert_int_equal(c.len, a.len);
  assert_memory_equal(c.bytes, a.bytes, a.len);
  assert_int_equal(c.segments, k);
  for (size_t i = 0; i < cap; i++) {
    la_trace_segment_t sg;
    assert_int_equal(la_trace_segment(t, i, &sg), 0);
    if (st[i] != sg.first)
      fail_msg("record %zu of %zu: start %llu, the trace's %llu (mode %d)", i,
               k, (unsigned long long)st[i], (unsigned long long)sg.first,
               p->mode);
  }
  la_compact_result_free(&c);
  free(st);
  la_trace_close(t);
  for (size_t i = 0; i < n; i++)
    if (memcmp(&rec[i], &dec[i], sizeof *dec) != 0)
      fail_msg("point %zu of %zu: reconstructed %a, decoded %a (mode %d)", i, n,
               rec[i], dec[i], p->mode);
  la_compact_result_free(&a);
  la_compact_result_free(&b);
  free(rec);
  free(dec);
}

/* The parameter sets: index 0 .. N_PARAMS - 1; quantum for those that use
 * one. */
#define N_PARAMS 8
static void params(int k, double quantum, la_compact_params_t *p) {
  la_compact_params_default(p);
  switch (k) {
    case 0:
      break; /* polyline cv 0.1, outliers on */
    case 1:
      p->quantum = quantum;
      break;
    case 2:
      p->connected = 1;
      p->quantum = quantum;
      break;
    case 3:
      p->outliers = 0;
      p->cv = 0.02;
      break;
    case 4:
      p->mode = LA_COMPACT_MAXERR;
      p->epsilon = 0.5;
      break;
    case 5:
      p->mode = LA_COMPACT_MAXERR;
      p->epsilon = 0.05;
      p->relative = 1;
      p->connected = 1;
      break;
    case 6:
      p->mode = LA_COMPACT_LOSSLESS;
      break;
    default:
      p->cv = 0.001; /* tight: many short lines, fallbacks */
      p->quantum = quantum;
      break;
  }
}

/* A row-probed series: each row of ROW cells holds one row time (whole
 * ticks times scale, / ROW); odd > 0 puts a NaN, +-Inf or -0.0 cell into
 * about one row in odd, breaking its run. */
static void rows(double *x, size_t n, double scale, double noise, int odd,
                 uint64_t *s) {
  for (size_t r = 0; r * ROW < n; r++) {
    double u = la_compact_rand01(s);
    double ticks = floor(100 * (1 + noise * u * u * u) +
                         (la_compact_rand(s) % 20 == 0 ? 150 : 0));
    for (size_t i = r * ROW; i < (r + 1) * ROW && i < n; i++)
      x[i] = ticks * scale / ROW;
    if (odd && la_compact_rand(s) % (uint64_t)odd == 0) {
      size_t i = r * ROW + la_compact_rand(s) % ROW;
      static const double bad[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
      if (i < n) x[i] = bad[la_compact_rand(s) % 5];
    }
  }
}

static void run_all(int simd) {
  if (simd)
    unsetenv("LA_COMPACT_SCALAR");
  else
    setenv("LA_COMPACT_SCALAR", "1", 1);
  const size_t n = 4 * ROW * ROW; /* 256 rows */
  double *x = malloc(n * sizeof *x);
  assert_non_null(x);
  la_compact_params_t p;
  uint64_t s = 42;
  const double scales[] = {0.38518613960771247, 1.0, 0.25};
  for (int k = 0; k < N_PARAMS; k++) {
    for (int sc = 0; sc < 3; sc++) {
      double q = scales[sc] / ROW;
      params(k, q, &p);
      for (int odd = 0; odd <= 8; odd += 4)
        for (int nz = 0; nz < 3; nz++) {
          rows(x, n, scales[sc], nz == 0 ? 0.05 : nz == 1 ? 0.6 : 3, odd, &s);
          check(x, n, &p);
          check(x, n - 37, &p); /* a last row cut short */
        }
    }
    for (int kind = 0; kind < LA_SYNTH_KINDS; kind++) {
      assert_int_equal(la_compact_synth(kind, n, 7 + kind, x), 0);
      check(x, n, &p);
    }
    /* tiny series */
    for (size_t m = 0; m <= 5; m++) {
      rows(x, m, 1.0, 0.6, 2, &s);
      check(x, m, &p);
    }
  }
  free(x);
}

static void test_recon_simd(void **state) {
  (void)state;
  run_all(1);
}

static void test_recon_scalar(void **state) {
  (void)state;
  run_all(0);
}

/* recon must be given (n > 0) and must not be the input. */
static void test_recon_args(void **state) {
  (void)state;
  double x[4] = {1, 2, 3, 4};
  la_compact_result_t r;
  assert_int_equal(la_compact_recon(x, 4, NULL, &r, NULL), LA_EINVAL);
  assert_int_equal(la_compact_recon(x, 4, NULL, &r, x), LA_EINVAL);
  assert_int_equal(la_compact_recon(NULL, 0, NULL, &r, NULL), 0);
  la_compact_result_free(&r);
  /* starts: a capacity needs memory */
  double rec[4];
  assert_int_equal(la_compact_recon_starts(x, 4, NULL, &r, rec, NULL, 1),
                   LA_EINVAL);
  uint64_t st[4];
  assert_int_equal(la_compact_recon_starts(x, 4, NULL, &r, rec, st, 4), 0);
  assert_true(r.segments >= 1 && r.segments <= 4);
  assert_int_equal(st[0], 0);
  la_compact_result_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_recon_simd),
      cmocka_unit_test(test_recon_scalar),
      cmocka_unit_test(test_recon_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
