/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_compact.c: libFuzzer target for the compact-trace decoder, which the
 * GlobalAgent, libla_client and lactl run on segments a LocalAgent (or a
 * stored file) produced: la_trace_open (full validation) and, on a trace it
 * accepts, the range functions la_trace_decode, la_trace_range_sum,
 * la_trace_segment and la_trace_is_verbatim over ranges taken from the
 * input's first bytes. Properties: out-of-range requests are refused with
 * LA_ERANGE (never read or written), the segments tile [0, count), and a
 * range sum agrees with the sum of the decoded values to the documented
 * tolerance; la_trace_check_max (the GlobalAgent's check without decoding)
 * agrees with la_trace_open on every input: the same code and reason, and
 * on success the same point count and mode. Encoding is not fuzzed here
 * (test_compact_* cover it).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact.h"
#include "la.h"

/* Ranges are decoded into a buffer of at most this many points. */
#define LA__FUZZ_MAX_DECODE 4096u

static void la__check(int ok) {
  if (!ok) abort();
}

static uint64_t la__u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 16) return 0;
  uint64_t a = la__u64(data), b = la__u64(data + 8);
  data += 16;
  size -= 16;
  la_trace_t *t = NULL;
  char why[256];
  int rc = la_trace_open(data, size, &t, why, sizeof why);
  char why2[256];
  uint64_t n2 = 0;
  int mode2 = -1;
  int rc2 = la_trace_check_max(data, size, LA_TRACE_MAX_POINTS, &n2, &mode2,
                               why2, sizeof why2);
  la__check(rc2 == rc);
  if (rc != 0) {
    la__check(t == NULL && rc < 0 && why[0] != '\0' && !strcmp(why, why2));
    return 0;
  }
  uint64_t n = la_trace_count(t);
  la__check(n2 == n && mode2 == la_trace_mode(t));
  la_compact_params_t p;
  la_trace_params(t, &p);
  la__check(p.mode == la_trace_mode(t));

  /* the segments tile [0, n) in order */
  size_t ns = la_trace_segment_count(t);
  uint64_t next = 0;
  for (size_t i = 0; i < ns; i++) {
    la_trace_segment_t s;
    la__check(la_trace_segment(t, i, &s) == 0);
    la__check(s.first == next && s.count > 0 && s.count <= n - s.first);
    next = s.first + s.count;
  }
  la__check(ns == 0 || next == n);
  la_trace_segment_t s;
  la__check(la_trace_segment(t, ns, &s) == LA_ERANGE);

  /* one range inside the trace (when it has points), one anywhere */
  static double out[LA__FUZZ_MAX_DECODE];
  uint64_t first = n ? a % n : 0;
  uint64_t count = n ? b % (n - first + 1) : 0;
  if (count > LA__FUZZ_MAX_DECODE) count = LA__FUZZ_MAX_DECODE;
  la__check(la_trace_decode(t, first, count, out) == 0);
  double sum = 0, mag = 0, rsum = 0;
  for (uint64_t i = 0; i < count; i++) {
    if (!isfinite(out[i])) continue;
    sum += out[i];
    mag += fabs(out[i]);
  }
  la__check(la_trace_range_sum(t, first, count, &rsum) == 0);
  if (isfinite(sum) && isfinite(rsum) && isfinite(mag))
    la__check(fabs(rsum - sum) <= 1e-9 * mag + 1e-300 ||
              fabs(rsum - sum) <= 1e-9 * fabs(rsum));
  for (uint64_t i = 0; i < count && i < 64; i++)
    (void)la_trace_is_verbatim(t, first + i);

  int in = a <= n && b <= n - a;
  rc = la_trace_decode(t, a, b > 16 ? 16 : b, out);
  la__check(rc == 0 || rc == LA_ERANGE);
  if (in && b <= 16) la__check(rc == 0);
  rc = la_trace_range_sum(t, a, b, &rsum);
  la__check(in ? rc == 0 : rc == LA_ERANGE);
  la_trace_close(t);
  return 0;
}
