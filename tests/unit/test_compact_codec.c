/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_codec.c: the encoding and the decoder, whatever the mode:
 * lossless is exact for every bit pattern; cv 0 means lossless; any decoded
 * range equals the same slice of the full decoding; range sums from the
 * segments equal sums of the reconstruction (|diff| <= 1e-12 * sum |y|);
 * statistics equal the raw ones exactly; truncated, bit-flipped and random
 * encodings are refused, and mutated encodings with a valid checksum either
 * are refused or decode safely (ASan watches every read). On every input
 * here, the check without decoding (la_trace_check_max, what the
 * GlobalAgent runs on each trace) says what the decoder says: the same
 * return code and reason, the same point count and mode.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact_index.h"
#include "la_compact_internal.h"
#include "la_test_series.h"

/* la_trace_open_max of b[0..len) into *t, after checking that
 * la_trace_check_max agrees with it: same code, same why, and on success
 * the same point count and mode. Returns la_trace_open_max's code. */
static int open_both(const uint8_t *b, size_t len, uint64_t max, la_trace_t **t,
                     char *why, size_t why_len) {
  char why2[200] = "";
  uint64_t n = 0;
  int mode = -1;
  int rc = la_trace_open_max(b, len, max, t, why, why_len);
  int rc2 = la_trace_check_max(b, len, max, &n, &mode, why2, sizeof why2);
  assert_int_equal(rc2, rc);
  if (rc != 0) {
    assert_string_equal(why2, why);
    return rc;
  }
  assert_true(n == la_trace_count(*t));
  assert_int_equal(mode, la_trace_mode(*t));
  return rc;
}

static la_trace_t *open_ok(const la_compact_result_t *r) {
  la_trace_t *t = NULL;
  char why[200];

  assert_int_equal(
      open_both(r->bytes, r->len, LA_TRACE_MAX_POINTS, &t, why, sizeof(why)),
      0);
  return t;
}

static void test_lossless_exact(void **state) {
  double x[] = {0,
                1,
                -1,
                9007199254740992.0,
                -9007199254740992.0,
                3,
                1e300,
                -0.0,
                0.1,
                NAN,
                -NAN,
                INFINITY,
                -INFINITY,
                5e-324,
                2.5,
                7};
  uint64_t payload = UINT64_C(0x7ff8dead00beef01);
  size_t n = sizeof(x) / sizeof(x[0]), k;
  double ints[500], y[500];
  la_compact_result_t r;
  la_trace_t *t;

  memcpy(&x[9], &payload, 8); /* a NaN with a payload survives */
  for (k = 0; k <= n; k++) {  /* every prefix: int and XOR bodies */
    assert_int_equal(la_test_compact(x, k, "lossless", &r), 0);
    t = open_ok(&r);
    assert_int_equal(la_trace_decode(t, 0, k, y), 0);
    assert_memory_equal(x, y, k * sizeof(double));
    assert_int_equal(la_trace_segment_count(t), 0);
    la_trace_close(t);
    la_compact_result_free(&r);
  }
  la_compact_synth(LA_SYNTH_MESH, 500, 9, ints); /* whole ns: varints */
  /* cv 0 means lossless */
  assert_int_equal(la_test_compact(ints, 500, "polyline:cv=0", &r), 0);
  assert_int_equal(r.mode, LA_COMPACT_LOSSLESS);
  assert_true(r.len < 500 * 3); /* deltas of ~1000 ns fit in 2 bytes */
  t = open_ok(&r);
  assert_int_equal(la_trace_decode(t, 0, 500, y), 0);
  assert_memory_equal(ints, y, sizeof(ints));
  la_trace_close(t);
  la_compact_result_free(&r);
}

static long double exact_sum(const double *y, size_t n, long double *abs) {
  long double s = 0;
  size_t i;

  *abs = 0;
  for (i = 0; i < n; i++) {
    s += y[i];
    *abs += fabsl(y[i]);
  }
  return s;
}

/* la_trace_range_sum_at over ranges in rising order (one after the other,
 * after a gap, and one before the cursor now and then) gives
 * la_trace_range_sum's sums to the bit, NaN and infinities included. */
static void check_cursor(const la_trace_t *t, uint64_t n, uint64_t *s) {
  la_trace_cursor_t c = {0, 0};
  double a, b;
  uint64_t at = 0;
  for (unsigned k = 1; at < n; k++) {
    uint64_t len = 1 + la_compact_rand(s) % (n / 16 + 1);
    if (len > n - at) len = n - at;
    assert_int_equal(la_trace_range_sum_at(t, &c, at, len, &a), 0);
    assert_int_equal(la_trace_range_sum(t, at, len, &b), 0);
    assert_memory_equal(&a, &b, sizeof a);
    at += len;
    if (k % 5 == 0) at += la_compact_rand(s) % (n / 8 + 1); /* a gap */
    if (k % 7 == 0) { /* a range before the cursor: searched anew */
      uint64_t f = la_compact_rand(s) % (at < n ? at + 1 : n);
      uint64_t m = n - f < 9 ? n - f : 9;
      assert_int_equal(la_trace_range_sum_at(t, &c, f, m, &a), 0);
      assert_int_equal(la_trace_range_sum(t, f, m, &b), 0);
      assert_memory_equal(&a, &b, sizeof a);
    }
  }
  assert_int_equal(la_trace_range_sum_at(t, &c, 0, n + 1, &a), LA_ERANGE);
  assert_int_equal(la_trace_range_sum_at(t, NULL, 0, n, &a), 0);
  assert_int_equal(la_trace_range_sum(t, 0, n, &b), 0);
  assert_memory_equal(&a, &b, sizeof a);
}

static void check_ranges(const double *x, size_t n, const char *spec) {
  la_compact_result_t r;
  la_trace_t *t;
  double *y = malloc((n + 1) * sizeof(double)), *z = malloc((n + 1) * 8);
  uint64_t s = n * 31 + strlen(spec);
  la_series_stats_t st;
  double sum;
  int q;

  assert_true(y && z);
  assert_int_equal(la_test_compact(x, n, spec, &r), 0);
  la_series_stats(x, n, &st); /* the stats equal the raw ones exactly */
  assert_memory_equal(&st, &r.stats, sizeof(st));
  t = open_ok(&r);
  /* the index holds no room it does not use (a lossy body's records and
   * exceptions, whatever room their bytes made at first) */
  if (la_trace_mode(t) != LA_COMPACT_LOSSLESS) {
    assert_int_equal(t->rcap, t->nrec);
    assert_int_equal(t->xcap, t->nx);
    assert_true(t->nx > 0 || t->xpos == NULL);
  }
  assert_int_equal(la_trace_decode(t, 0, n, y), 0);
  for (q = 0; q < 300; q++) {
    uint64_t first = n ? la_compact_rand(&s) % (n + 1) : 0;
    uint64_t count = n - first ? la_compact_rand(&s) % (n - first + 1) : 0;
    long double abs, want;
    if (q == 0) {
      first = 0;
      count = n;
    }
    assert_int_equal(la_trace_decode(t, first, count, z), 0);
    assert_memory_equal(z, y + first, count * sizeof(double));
    assert_int_equal(la_trace_range_sum(t, first, count, &sum), 0);
    want = exact_sum(y + first, count, &abs);
    if (isfinite(want))
      assert_true(fabsl(sum - want) <= 1e-12L * abs + 1e-300L);
    else
      assert_true(isnan(want) ? isnan(sum) : sum == want);
  }
  check_cursor(t, n, &s);
  assert_int_equal(la_trace_decode(t, n, 1, z), LA_ERANGE);
  assert_int_equal(la_trace_range_sum(t, 0, n + 1, &sum), LA_ERANGE);
  la_trace_close(t);
  la_compact_result_free(&r);
  free(y);
  free(z);
}

/* Non-finite values inside ranges of the longer spike series. */
static void add_non_finite(int kind, double *x, size_t n) {
  if (n > 50 && kind == LA_SYNTH_SPIKES) {
    x[10] = NAN;
    x[40] = INFINITY;
  }
}

static void test_ranges_and_sums(void **state) {
  static const char *const specs[] = {
      "polyline", "polyline:connected", "maxerr:eps=2",
      "maxerr:eps=0.02,relative,connected", "lossless"};
  static const size_t sizes[] = {0, 1, 2, 100, 4099, 30000};

  assert_int_equal(
      la_test_synth_grid(sizes, sizeof(sizes) / sizeof(sizes[0]), 5,
                         add_non_finite, specs,
                         sizeof(specs) / sizeof(specs[0]), check_ranges),
      0);
}

static void test_stats_exact(void **state) {
  double x[10000];
  int64_t isum = 0;
  la_compact_result_t r;
  size_t i;

  la_compact_synth(LA_SYNTH_MESH, 10000, 77, x); /* whole ns */
  for (i = 0; i < 10000; i++)
    isum += (int64_t)x[i];
  assert_int_equal(la_test_compact(x, 10000, "polyline", &r), 0);
  assert_true(r.stats.count == 10000);
  assert_true(r.stats.sum == (double)isum); /* exact for integers < 2^53 */
  for (i = 0; i < 10000; i++)
    assert_true(r.stats.min <= x[i] && x[i] <= r.stats.max);
  la_compact_result_free(&r);
  assert_int_equal(la_test_compact(x, 0, "polyline", &r), 0);
  assert_true(r.stats.count == 0 && r.stats.sum == 0 && isnan(r.stats.min));
  la_compact_result_free(&r);
}

/* Values near DBL_MAX: the exact statistics' sum is finite where the exact
 * sum of the values is (500 of DBL_MAX and 500 of -DBL_MAX: 0), and +-Inf
 * only where that exact sum is beyond the double range (a constant DBL_MAX
 * series); range sums are never NaN: finite and right where the range's
 * exact sum is finite, +-Inf where it overflows. */
static void test_huge_values_sums(void **state) {
  enum { N = 1000 };
  static double x[N], y[N];
  static const char *const specs[] = {"polyline", "polyline:connected",
                                      "maxerr:eps=1e300",
                                      "maxerr:eps=0.1,relative", "lossless"};
  const double M = DBL_MAX;

  (void)state;
  for (int kind = 0; kind < 3; kind++) {
    /* 0: constant M; 1: 500 x M then 500 x -M; 2: M, -M alternating */
    for (size_t i = 0; i < N; i++)
      x[i] = kind == 0 ? M : kind == 1 ? (i < N / 2 ? M : -M)
                                       : (i % 2 ? -M : M);
    for (size_t q = 0; q < sizeof(specs) / sizeof(specs[0]); q++) {
      la_compact_result_t r;
      la_series_stats_t st;
      la_trace_t *t;
      uint64_t seed = 5;
      assert_int_equal(la_test_compact(x, N, specs[q], &r), 0);
      la_series_stats(x, N, &st);
      assert_memory_equal(&st, &r.stats, sizeof(st));
      if (kind == 0 ? !(r.stats.sum == INFINITY) : !(r.stats.sum == 0))
        fail_msg("%s kind %d: sum %g", specs[q], kind, r.stats.sum);
      t = open_ok(&r);
      assert_int_equal(la_trace_decode(t, 0, N, y), 0);
      for (int k = 0; k < 400; k++) {
        uint64_t first = la_compact_rand(&seed) % N, count, pos = 0, neg = 0;
        double sum, want;
        count = 1 + la_compact_rand(&seed) % (N - first);
        if (k == 0) first = 0, count = N;
        for (uint64_t i = first; i < first + count; i++) {
          assert_true(y[i] == x[i]); /* +-M: every mode keeps them */
          pos += y[i] > 0;
          neg += y[i] < 0;
        }
        assert_int_equal(la_trace_range_sum(t, first, count, &sum), 0);
        /* exact: (pos - neg) * M, finite when |pos - neg| <= 1 */
        want = pos > neg + 1   ? INFINITY
               : neg > pos + 1 ? -INFINITY
                               : ((double)pos - (double)neg) * M;
        if (!(sum == want))
          fail_msg("%s kind %d: range [%llu, +%llu) sum %g, want %g", specs[q],
                   kind, (unsigned long long)first, (unsigned long long)count,
                   sum, want);
      }
      la_trace_close(t);
      la_compact_result_free(&r);
    }
  }
}

/* Every truncation and every single-bit flip is refused. */
static void check_refused(const la_compact_result_t *r) {
  la_trace_t *t;
  uint8_t *b;
  size_t len, bit;
  char why[200];

  for (len = 0; len < r->len; len++) {
    b = malloc(len ? len : 1); /* exact size: ASan sees any over-read */
    memcpy(b, r->bytes, len);
    assert_true(open_both(b, len, LA_TRACE_MAX_POINTS, &t, why, sizeof(why)) <
                0);
    assert_null(t);
    free(b);
  }
  b = malloc(r->len);
  for (bit = 0; bit < r->len * 8; bit++) {
    memcpy(b, r->bytes, r->len);
    b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    assert_true(
        open_both(b, r->len, LA_TRACE_MAX_POINTS, &t, why, sizeof(why)) < 0);
  }
  free(b);
}

static void test_truncated_and_flipped(void **state) {
  static const char *const specs[] = {"polyline", "maxerr:eps=1,connected",
                                      "lossless"};
  double x[300];
  la_compact_result_t r;
  size_t s;

  la_compact_synth(LA_SYNTH_SPIKES, 300, 1, x);
  x[7] = NAN;
  for (s = 0; s < 3; s++) {
    assert_int_equal(la_test_compact(x, 300, specs[s], &r), 0);
    check_refused(&r);
    la_compact_result_free(&r);
  }
}

/* Random mutations with the checksum fixed: the parser itself must refuse
 * or produce a trace that decodes without a single bad read. */
static void test_fuzz_valid_crc(void **state) {
  double x[200], *y = malloc(1 << 20);
  uint64_t s = 12345;
  la_compact_result_t r;
  int it, opened = 0;
  char why[200];

  assert_non_null(y);
  la_compact_synth(LA_SYNTH_STEPS, 200, 2, x);
  x[50] = NAN;
  for (it = 0; it < 6000; it++) {
    la_trace_t *t;
    uint8_t *b;
    uint32_t crc;
    int m;
    assert_int_equal(la_test_compact(x, 200,
                                     it % 3 == 0   ? "polyline:cv=0.01"
                                     : it % 3 == 1 ? "maxerr:eps=3,connected"
                                                   : "lossless",
                                     &r),
                     0);
    b = malloc(r.len);
    memcpy(b, r.bytes, r.len);
    for (m = 0; m < 1 + (int)(la_compact_rand(&s) % 4); m++) {
      size_t at = 6 + la_compact_rand(&s) % (r.len - 10); /* body, bound */
      b[at] = (uint8_t)la_compact_rand(&s);
    }
    crc = la_compact_crc32(0, b, r.len - 4);
    memcpy(b + r.len - 4, &crc, 4); /* little-endian host */
    if (open_both(b, r.len, LA_TRACE_MAX_POINTS, &t, why, sizeof(why)) == 0) {
      uint64_t n = la_trace_count(t);
      double sum;
      opened++;
      if (n <= (1 << 17))
        assert_int_equal(la_trace_decode(t, 0, n, y), 0);
      assert_int_equal(la_trace_range_sum(t, 0, n, &sum), 0);
      assert_int_equal(la_trace_range_sum(t, n / 3, n / 2, &sum), 0);
      la_trace_close(t);
    } else {
      assert_true(why[0] != 0);
    }
    free(b);
    la_compact_result_free(&r);
  }
  assert_true(opened > 0 && opened < 6000);
  free(y);
}

static void test_garbage(void **state) {
  uint8_t b[256];
  uint64_t s = 99;
  la_trace_t *t;
  char why[200];
  int it;
  size_t i;

  for (it = 0; it < 2000; it++) {
    size_t len = la_compact_rand(&s) % sizeof(b);
    for (i = 0; i < len; i++)
      b[i] = (uint8_t)la_compact_rand(&s);
    if (it % 2) /* a valid magic and version, then garbage */
      memcpy(b, "LAC\001", len < 4 ? len : 4);
    assert_true(open_both(b, len, LA_TRACE_MAX_POINTS, &t, why, sizeof(why)) <
                0);
  }
  assert_int_equal(la_trace_open(NULL, 0, &t, why, sizeof(why)), LA_ETRUNC);
  memcpy(b, "LAC\002", 4);
  memset(b + 4, 0, 20);
  assert_int_equal(la_trace_open(b, 24, &t, why, sizeof(why)), LA_EVERSION);
}

/* Rewrites a one-record lossy encoding of a constant series so that it
 * declares n points (its one line record covering all of them): a few dozen
 * bytes standing for any number of points. Returns the new length. */
static size_t stretch_encoding(const uint8_t *in, size_t len, uint64_t n,
                               uint8_t *out) {
  la_creader_t r = {in, len - 4, 14};
  uint64_t old_n, tag;
  assert_int_equal(la_creader_varint(&r, &old_n), 0);
  assert_int_equal(la_creader_varint(&r, &tag), 0);
  assert_true((tag >> LA_REC_SHIFT) + 1 == old_n); /* one record */
  memcpy(out, in, 14);
  size_t o = 14;
  o += la_varint_write(out + o, n);
  o += la_varint_write(out + o,
                       ((n - 1) << LA_REC_SHIFT) |
                           (tag & ((1u << LA_REC_SHIFT) - 1)));
  memcpy(out + o, in + r.off, len - 4 - r.off);
  o += len - 4 - r.off;
  uint32_t crc = la_compact_crc32(0, out, o);
  for (int i = 0; i < 4; i++) out[o + i] = (uint8_t)(crc >> (8 * i));
  return o + 4;
}
/* The point-count cap: an encoding of a few dozen bytes can declare 2^32
 * points; la_trace_open_max refuses it (LA_ELIMIT, before allocating for the
 * points) when the caller's cap is lower, and accepts exactly the cap. Every
 * truncation and bit flip of the stretched encoding is refused or opens
 * within the cap. */
static void test_point_count_cap(void **state) {
  double x[50];
  for (int i = 0; i < 50; i++) x[i] = 7.25;
  la_compact_result_t res;
  assert_int_equal(la_compact(x, 50, NULL, &res), 0);
  uint8_t big[128];
  uint64_t n = UINT64_C(1) << 32;
  size_t len = stretch_encoding(res.bytes, res.len, n, big);
  assert_true(len < 40);
  la_trace_t *t = NULL;
  char why[200] = "";
  assert_int_equal(la_trace_open(big, len, &t, why, sizeof why), 0);
  assert_int_equal(la_trace_count(t), n); /* uncapped: what a peer says */
  la_trace_close(t);
  t = NULL;
  assert_int_equal(open_both(big, len, 1000, &t, why, sizeof why), LA_ELIMIT);
  assert_null(t);
  assert_non_null(strstr(why, "4294967296"));
  assert_int_equal(open_both(big, len, n, &t, why, sizeof why), 0);
  la_trace_close(t);
  assert_int_equal(open_both(big, len, n - 1, &t, why, sizeof why), LA_ELIMIT);
  /* the original, capped at its own count, opens */
  assert_int_equal(
      la_trace_open_max(res.bytes, res.len, 50, &t, why, sizeof why), 0);
  la_trace_close(t);
  for (size_t k = 0; k < len; k++) {
    t = NULL;
    int rc = open_both(big, k, 1000, &t, why, sizeof why);
    assert_true(rc < 0 && t == NULL);
  }
  for (size_t bit = 0; bit < len * 8; bit++) {
    uint8_t m[128];
    memcpy(m, big, len);
    m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    t = NULL;
    int rc = open_both(m, len, 1000, &t, why, sizeof why);
    if (rc == 0) {
      assert_true(la_trace_count(t) <= 1000);
      la_trace_close(t);
    } else {
      assert_null(t);
    }
  }
  la_compact_result_free(&res);
}

static void test_header_fields(void **state) {
  double x[50];
  la_compact_result_t r;
  la_compact_params_t p, q;
  la_trace_t *t;

  la_compact_synth(LA_SYNTH_RAMPS, 50, 4, x);
  assert_int_equal(
      la_compact_spec_parse("maxerr:eps=0.25,relative,connected", &p, NULL, 0),
      0);
  assert_int_equal(la_compact(x, 50, &p, &r), 0);
  assert_memory_equal(r.bytes, "LAC\001\002", 5);
  t = open_ok(&r);
  la_trace_params(t, &q);
  /* the encoding says how it was made */
  assert_true(q.mode == p.mode && q.epsilon == p.epsilon && q.relative &&
              q.connected && q.outliers && q.cv == 0);
  assert_int_equal(la_trace_mode(t), LA_COMPACT_MAXERR);
  la_trace_close(t);
  la_compact_result_free(&r);
  assert_int_equal(la_compact(NULL, 5, &p, &r), LA_EINVAL);
  p.cv = -1;
  assert_int_equal(la_compact(x, 5, &p, &r), LA_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lossless_exact),
      cmocka_unit_test(test_ranges_and_sums),
      cmocka_unit_test(test_stats_exact),
      cmocka_unit_test(test_huge_values_sums),
      cmocka_unit_test(test_truncated_and_flipped),
      cmocka_unit_test(test_fuzz_valid_crc),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_header_fields),
      cmocka_unit_test(test_point_count_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
