/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_lossless.c: the lossless body: exact values, for audits and
 * replay, and what a cv or epsilon of 0 selects.
 *
 * Integer series (every value an integer of magnitude <= 2^53, none -0.0:
 * counters, nanosecond timers) are coded as zigzag LEB128 varints of the
 * difference with the previous value (the first with 0). Any other series is
 * coded value by value as x = bits XOR previous bits (the first with 0): one
 * control byte (leading zero bytes of x << 4 | trailing zero bytes) and the
 * remaining middle bytes, least significant first; x == 0 is the control byte
 * 0x80 alone. Both are exact for every bit pattern (NaN payloads included).
 *
 * It writes the header but not the CRC (la_compact.c appends it) and does
 * not build indexes for random access (la_compact_decode.c does).
 */
#include <math.h>
#include <string.h>

#include "la_compact_internal.h"

static int is_int53(double v) {
  return fabs(v) <= 9007199254740992.0 && v == (double)(int64_t)v &&
         !(v == 0 && signbit(v));
}

static void put_header(la_cbuf_t *out, size_t n, int flags) {
  la_cbuf_put_u8(out, LA_CENC_MAGIC0);
  la_cbuf_put_u8(out, LA_CENC_MAGIC1);
  la_cbuf_put_u8(out, LA_CENC_MAGIC2);
  la_cbuf_put_u8(out, LA_CENC_VERSION);
  la_cbuf_put_u8(out, LA_COMPACT_LOSSLESS);
  la_cbuf_put_u8(out, (uint8_t)flags);
  la_cbuf_put_f64(out, 0);
  la_cbuf_put_varint(out, n);
}

/* Integer deltas; returns 1 when done, 0 at the first non-integer. */
static int encode_int(const double *x, size_t n, la_cbuf_t *out) {
  int64_t prev = 0;
  size_t i, j;

  for (i = 0; i < n; i += 256) {
    size_t end = n - i < 256 ? n : i + 256;
    if (la_cbuf_reserve(out, 10 * (end - i)) != 0)
      return 1;
    uint8_t *p = out->p + out->len;
    for (j = i; j < end; j++) {
      if (!is_int53(x[j]))
        return 0;
      int64_t v = (int64_t)x[j];
      p += la_varint_write(p, la_zigzag(v - prev));
      prev = v;
    }
    out->len = (size_t)(p - out->p);
  }
  return 1;
}

static void encode_xor(const double *x, size_t n, la_cbuf_t *out) {
  uint64_t prev = 0, u, v;
  size_t i, j;

  for (i = 0; i < n; i += 256) {
    size_t end = n - i < 256 ? n : i + 256;
    if (la_cbuf_reserve(out, 9 * (end - i)) != 0)
      return;
    uint8_t *p = out->p + out->len;
    for (j = i; j < end; j++) {
      memcpy(&u, &x[j], 8);
      v = u ^ prev;
      prev = u;
      if (v == 0) {
        *p++ = 0x80;
        continue;
      }
      int lz = __builtin_clzll(v) / 8, tz = __builtin_ctzll(v) / 8, k;
      *p++ = (uint8_t)(lz << 4 | tz);
      v >>= 8 * tz;
      for (k = 0; k < 8 - lz - tz; k++, v >>= 8)
        *p++ = (uint8_t)v;
    }
    out->len = (size_t)(p - out->p);
  }
}

int la_compact_lossless_encode(const double *x, size_t n, la_cbuf_t *out) {
  size_t hdr;

  put_header(out, n, 0);
  hdr = out->len;
  if (!encode_int(x, n, out)) {
    out->len = hdr;
    out->p[5] = LA_CENC_F_XOR;
    encode_xor(x, n, out);
  }
  return out->err;
}

int la_compact_lossless_decode(la_creader_t *r, int flags, uint64_t n,
                               double *out, la_cacc_t *acc) {
  uint64_t i, w, prev = 0, v;
  int64_t iv = 0, d;
  int rc;

  if (!(flags & LA_CENC_F_XOR)) {
    /* integers: their totals exactly (|sum| <= 2^40 * 2^53), rounded once */
    __extension__ __int128 sum = 0, abs = 0;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (i = 0; i < n; i++) {
      if ((rc = la_creader_varint(r, &w)) != 0)
        return rc;
      d = la_unzigzag(w);
      if (__builtin_add_overflow(iv, d, &iv) || iv > (INT64_C(1) << 53) ||
          iv < -(INT64_C(1) << 53))
        return LA_EPROTO;
      if (out)
        out[i] = (double)iv;
      if (acc) {
        sum += iv;
        abs += iv < 0 ? -iv : iv;
        lo = iv < lo ? iv : lo;
        hi = iv > hi ? iv : hi;
      }
    }
    if (acc && n > 0) {
      la_cacc_sum(acc, (double)sum);
      la_cacc_sum(acc, (double)(sum - (__int128)(double)sum));
      acc->abs += (double)abs;
      la_cacc_exact(acc, (double)lo);
      la_cacc_exact(acc, (double)hi);
    }
    return 0;
  }
  for (i = 0; i < n; i++) {
    uint8_t c, b;
    int lz, tz, k;
    if ((rc = la_creader_u8(r, &c)) != 0)
      return rc;
    lz = c >> 4;
    tz = c & 15;
    if (lz + tz > 8 || (lz + tz == 8 && c != 0x80))
      return LA_EPROTO;
    v = 0;
    for (k = 0; k < 8 - lz - tz; k++) {
      if ((rc = la_creader_u8(r, &b)) != 0)
        return rc;
      v |= (uint64_t)b << (8 * (k + tz));
    }
    prev ^= v;
    if (out)
      memcpy(&out[i], &prev, 8);
    if (acc) {
      double x;
      memcpy(&x, &prev, 8);
      la_cacc_add(acc, x, 1);
    }
  }
  return 0;
}
