/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_spread.c: spread encodings, one stored value per row of k
 * cells (docs/compaction.md, flag 0x20).
 *
 * A row probe measures a row as one value; the LocalAgent compacts the
 * rows and labels the encoding spread by the row length. What a reader
 * relies on: the trace has a point per cell, each the row's decoded value
 * over k; range sums over any cells agree with the decoded values; the
 * segments, the verbatim points, the statistics and the bound speak of
 * cells; the bytes cost the flag and one varint more than the rows'; and
 * the decoder refuses a bad spread, or one that would make more points
 * than the caller allows, before it allocates anything. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact_internal.h"

#define Q 0.38518989313080604 /* ns per tick */
#define NR 1500                /* rows */

/* Row times in ticks times Q: plateaus with noise and a few spikes. */
static void rows_series(double *x, uint64_t seed) {
  for (size_t i = 0; i < NR; i++) {
    double base = i < 500 ? 1000 : i < 1000 ? 3000 : 1800;
    double k = floor(base * (1 + 0.03 * la_compact_rand01(&seed)));
    if (la_compact_rand01(&seed) < 0.005) k += 50000;
    x[i] = k * Q;
  }
}

/* rows compacted with p, then spread by k; *rt and *ct opened on both. */
static void spread_pair(const double *x, const la_compact_params_t *p,
                        uint64_t k, la_compact_result_t *res,
                        la_compact_result_t *sp, la_trace_t **rt,
                        la_trace_t **ct) {
  char why[200];
  assert_int_equal(la_compact(x, NR, p, res), 0);
  assert_int_equal(la_compact_spread(res, k, sp), 0);
  assert_int_equal(la_trace_open(res->bytes, res->len, rt, why, sizeof why),
                   0);
  if (la_trace_open(sp->bytes, sp->len, ct, why, sizeof why) != 0)
    fail_msg("spread trace refused: %s", why);
}

/* Every mode: the cells decode to the rows' values over k, exactly;
 * range sums over cells agree with them; segments and verbatim points
 * are the rows' in cells; statistics are the cells'. */
static void test_cells_are_rows_over_k(void **state) {
  (void)state;
  static double x[NR], rv[NR], cv[NR * 7];
  const uint64_t k = 7;
  const char *specs[] = {"polyline:cv=0.05", "maxerr:eps=40",
                         "maxerr:eps=0.01,relative", "lossless",
                         "polyline:cv=0.1,connected"};
  rows_series(x, 42);
  for (size_t m = 0; m < sizeof specs / sizeof specs[0]; m++) {
    la_compact_params_t p;
    char why[200];
    assert_int_equal(la_compact_spec_parse(specs[m], &p, why, sizeof why), 0);
    p.quantum = Q;
    la_compact_result_t res, sp;
    la_trace_t *rt, *ct;
    spread_pair(x, &p, k, &res, &sp, &rt, &ct);
    /* the flag and one varint more */
    assert_int_equal(sp.len, res.len + 1);
    assert_int_equal(la_trace_count(ct), NR * k);
    assert_int_equal(la_trace_spread(ct), k);
    assert_int_equal(la_trace_spread(rt), 1);
    assert_int_equal(la_trace_decode(rt, 0, NR, rv), 0);
    assert_int_equal(la_trace_decode(ct, 0, NR * k, cv), 0);
    for (uint64_t i = 0; i < NR * k; i++)
      if (cv[i] != rv[i / k] / (double)k)
        fail_msg("%s: cell %llu decodes to %.17g, its row %.17g / %llu",
                 specs[m], (unsigned long long)i, cv[i], rv[i / k],
                 (unsigned long long)k);
    /* partial decodes at any offset give the same cells */
    double part[40];
    assert_int_equal(la_trace_decode(ct, 5 * k + 3, 40, part), 0);
    assert_memory_equal(part, cv + 5 * k + 3, sizeof part);
    /* range sums over any cells, partial rows at either end included */
    uint64_t seed = 7;
    for (int q = 0; q < 300; q++) {
      uint64_t a = la_compact_rand(&seed) % (NR * k);
      uint64_t c = 1 + la_compact_rand(&seed) % (NR * k - a);
      if (q < 3) c = q + 1; /* inside one row */
      double s, want = 0, mag = 0;
      assert_int_equal(la_trace_range_sum(ct, a, c, &s), 0);
      for (uint64_t i = a; i < a + c; i++) {
        want += cv[i];
        mag += fabs(cv[i]);
      }
      if (!(fabs(s - want) <= 1e-12 * mag + 1e-300))
        fail_msg("%s: sum of cells [%llu, +%llu) %.17g, decoded %.17g",
                 specs[m], (unsigned long long)a, (unsigned long long)c, s,
                 want);
    }
    /* the same sums to the bit with a cursor, runs of cells in order
     * (partial rows at either end) */
    la_trace_cursor_t cur = {0, 0};
    for (uint64_t a = 0, c = 5; a < NR * k; a += c, c = c % 23 + 3) {
      double s0, s1;
      if (c > NR * k - a) c = NR * k - a;
      assert_int_equal(la_trace_range_sum_at(ct, &cur, a, c, &s1), 0);
      assert_int_equal(la_trace_range_sum(ct, a, c, &s0), 0);
      assert_memory_equal(&s1, &s0, sizeof s0);
    }
    /* segments and verbatim points in cells */
    assert_int_equal(la_trace_segment_count(ct), la_trace_segment_count(rt));
    for (size_t i = 0; i < la_trace_segment_count(rt); i++) {
      la_trace_segment_t a, b;
      assert_int_equal(la_trace_segment(rt, i, &a), 0);
      assert_int_equal(la_trace_segment(ct, i, &b), 0);
      assert_int_equal(b.first, a.first * k);
      assert_int_equal(b.count, a.count * k);
      assert_true(b.v0 == a.v0 / (double)k && b.v1 == a.v1 / (double)k);
    }
    for (uint64_t i = 0; i < NR * k; i += 5)
      assert_int_equal(la_trace_is_verbatim(ct, i),
                       la_trace_is_verbatim(rt, i / k));
    /* statistics of the cells: the rows' total, their extremes over k */
    assert_int_equal(sp.stats.count, NR * k);
    assert_true(sp.stats.sum == res.stats.sum);
    assert_true(sp.stats.min == res.stats.min / (double)k);
    assert_true(sp.stats.max == res.stats.max / (double)k);
    assert_true(sp.error.cv == res.error.cv);
    /* the checker agrees with the parser */
    uint64_t np;
    int mode;
    assert_int_equal(la_trace_check_max(sp.bytes, sp.len, NR * k, &np, &mode,
                                        why, sizeof why),
                     0);
    assert_int_equal(np, NR * k);
    assert_int_equal(mode, res.mode);
    la_trace_close(rt);
    la_trace_close(ct);
    la_compact_result_free(&res);
    la_compact_result_free(&sp);
  }
}

/* An absolute maxerr bound is per cell: rows compacted with eps * k decode
 * to cells within eps of the true cells, and the header says eps. */
static void test_absolute_bound_is_per_cell(void **state) {
  (void)state;
  static double x[NR], cv[NR * 10];
  const uint64_t k = 10;
  const double eps = 3.0;
  rows_series(x, 5);
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_MAXERR;
  p.epsilon = eps * (double)k; /* the rows' bound */
  la_compact_result_t res, sp;
  la_trace_t *rt, *ct;
  spread_pair(x, &p, k, &res, &sp, &rt, &ct);
  la_compact_params_t got;
  la_trace_params(ct, &got);
  assert_true(got.epsilon == eps);
  assert_int_equal(la_trace_decode(ct, 0, NR * k, cv), 0);
  for (uint64_t i = 0; i < NR * k; i++)
    assert_true(fabs(cv[i] - x[i / k] / (double)k) <= eps);
  assert_true(sp.error.max_abs <= eps);
  la_trace_close(rt);
  la_trace_close(ct);
  la_compact_result_free(&res);
  la_compact_result_free(&sp);
}

/* The lossless rows (6 points, n varint one byte) spread by k, with the
 * spread varint replaced by `kv` (kl bytes) and the CRC redone. */
static size_t forge(uint8_t *out, const uint8_t *kv, size_t kl) {
  static const double x[6] = {1, 2, 3, 4, 5, 6};
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_LOSSLESS;
  la_compact_result_t res, sp;
  assert_int_equal(la_compact(x, 6, &p, &res), 0);
  assert_int_equal(la_compact_spread(&res, 3, &sp), 0);
  /* header: 14 bytes, n (one byte), then the spread varint (3: one) */
  assert_int_equal(sp.bytes[5] & LA_CENC_F_SPREAD, LA_CENC_F_SPREAD);
  assert_int_equal(sp.bytes[15], 3);
  memcpy(out, sp.bytes, 15);
  memcpy(out + 15, kv, kl);
  memcpy(out + 15 + kl, sp.bytes + 16, sp.len - 16 - 4);
  size_t len = 15 + kl + sp.len - 16 - 4;
  uint32_t crc = la_compact_crc32(0, out, len);
  for (int i = 0; i < 4; i++) out[len + i] = (uint8_t)(crc >> (8 * i));
  la_compact_result_free(&res);
  la_compact_result_free(&sp);
  return len + 4;
}

static void test_bad_spreads_refused(void **state) {
  (void)state;
  uint8_t b[128];
  char why[200];
  la_trace_t *t = NULL;
  uint64_t np;
  int mode;
  const uint8_t k3[] = {3};
  size_t len = forge(b, k3, 1);
  assert_int_equal(la_trace_open(b, len, &t, why, sizeof why), 0);
  assert_int_equal(la_trace_count(t), 18);
  la_trace_close(t);
  /* 0, 1 and 2^32 + 1 cells per value */
  const uint8_t k0[] = {0}, k1[] = {1}, kbig[] = {0x81, 0x80, 0x80, 0x80, 0x10};
  const uint8_t *bad[] = {k0, k1, kbig};
  size_t badl[] = {1, 1, 5};
  for (int i = 0; i < 3; i++) {
    len = forge(b, bad[i], badl[i]);
    assert_int_equal(la_trace_open(b, len, &t, why, sizeof why), LA_EPROTO);
    assert_non_null(strstr(why, "bad spread"));
    assert_int_equal(
        la_trace_check_max(b, len, 1000, &np, &mode, why, sizeof why),
        LA_EPROTO);
  }
  /* a spread making more cells than the caller expects: refused before
   * anything is allocated, saying how many */
  len = forge(b, k3, 1);
  assert_int_equal(la_trace_open_max(b, len, 17, &t, why, sizeof why),
                   LA_ELIMIT);
  assert_non_null(strstr(why, "6 points of 3 cells"));
  const uint8_t khuge[] = {0x80, 0x80, 0x80, 0x80, 0x10}; /* 2^32 */
  len = forge(b, khuge, 5);
  assert_int_equal(la_trace_open(b, len, &t, why, sizeof why), 0);
  assert_int_equal(la_trace_count(t), 6ull << 32);
  la_trace_close(t);
  assert_int_equal(la_trace_open_max(b, len, 1u << 20, &t, why, sizeof why),
                   LA_ELIMIT);
  /* the flag without its varint: a truncated header */
  len = forge(b, k3, 0);
  assert_int_not_equal(la_trace_open(b, len, &t, why, sizeof why), 0);
}

/* The encoder refuses what it cannot label: k below 2, a trace spread
 * already, bytes that are not an encoding. */
static void test_spread_refuses(void **state) {
  (void)state;
  static const double x[4] = {1, 2, 3, 4};
  la_compact_params_t p;
  la_compact_params_default(&p);
  la_compact_result_t res, sp, sp2;
  assert_int_equal(la_compact(x, 4, &p, &res), 0);
  assert_int_equal(la_compact_spread(&res, 1, &sp), LA_EINVAL);
  assert_null(sp.bytes);
  assert_int_equal(la_compact_spread(&res, 2, &sp), 0);
  assert_int_equal(la_compact_spread(&sp, 2, &sp2), LA_EINVAL);
  assert_null(sp2.bytes);
  res.bytes[0] ^= 1;
  assert_int_equal(la_compact_spread(&res, 2, &sp2), LA_EINVAL);
  la_compact_result_free(&res);
  la_compact_result_free(&sp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cells_are_rows_over_k),
      cmocka_unit_test(test_absolute_bound_is_per_cell),
      cmocka_unit_test(test_bad_spreads_refused),
      cmocka_unit_test(test_spread_refuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
