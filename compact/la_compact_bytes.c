/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_bytes.c: the byte-level primitives of the compact encoding:
 * a growable output buffer, LEB128 varints, little-endian doubles, verbatim
 * values, CRC-32, and a reader that never reads past its end.
 *
 * It knows nothing of records, segments or modes (la_compact_encode.c and
 * la_compact_decode.c do) and never allocates per value: the buffer doubles.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"

int la_cbuf_reserve(la_cbuf_t *b, size_t more) {
  size_t cap;
  uint8_t *p;

  if (b->err) return b->err;
  if (b->cap - b->len >= more) return 0;
  cap = b->cap ? b->cap : 256;
  while (cap - b->len < more) {
    if (cap > SIZE_MAX / 2) {
      b->err = LA_ENOMEM;
      return b->err;
    }
    cap *= 2;
  }
  p = realloc(b->p, cap);
  if (p == NULL) {
    b->err = LA_ENOMEM;
    return b->err;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

void la_cbuf_free(la_cbuf_t *b) {
  free(b->p);
  memset(b, 0, sizeof(*b));
}

void la_cbuf_put_u8(la_cbuf_t *b, uint8_t v) {
  if (la_cbuf_reserve(b, 1) == 0) b->p[b->len++] = v;
}

void la_cbuf_put_varint(la_cbuf_t *b, uint64_t v) {
  if (la_cbuf_reserve(b, 10) == 0) b->len += la_varint_write(b->p + b->len, v);
}

void la_cbuf_put_u32(la_cbuf_t *b, uint32_t v) {
  int i;

  if (la_cbuf_reserve(b, 4) != 0) return;
  for (i = 0; i < 4; i++) b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

void la_cbuf_put_f64(la_cbuf_t *b, double v) {
  uint64_t u;
  int i;

  if (la_cbuf_reserve(b, 8) != 0) return;
  memcpy(&u, &v, 8);
  for (i = 0; i < 8; i++) b->p[b->len++] = (uint8_t)(u >> (8 * i));
}

void la_cbuf_put_verbatim(la_cbuf_t *b, double v) {
  if (v == v && fabs(v) <= 9007199254740992.0 && v == floor(v) &&
      !(v == 0 && signbit(v))) {
    la_cbuf_put_varint(b, la_zigzag((int64_t)v) << 1);
  } else {
    la_cbuf_put_u8(b, 1);
    la_cbuf_put_f64(b, v);
  }
}

int la_creader_u8(la_creader_t *r, uint8_t *v) {
  if (r->off >= r->len) return LA_ETRUNC;
  *v = r->p[r->off++];
  return 0;
}

int la__creader_varint_long(la_creader_t *r, uint64_t *v) {
  uint64_t x = 0;
  unsigned shift = 0;
  uint8_t c;

  for (;;) {
    if (r->off >= r->len) return LA_ETRUNC;
    c = r->p[r->off++];
    if (shift == 63 && c > 1)
      return LA_EPROTO; /* above 2^64 - 1, or longer than 10 bytes */
    x |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) break;
    shift += 7;
  }
  *v = x;
  return 0;
}

/* Reads an n-byte little-endian unsigned number (n <= 8). */
static int creader_le(la_creader_t *r, int n, uint64_t *v) {
  uint64_t x = 0;
  int i;

  if (r->len - r->off < (size_t)n) return LA_ETRUNC;
  for (i = 0; i < n; i++) x |= (uint64_t)r->p[r->off++] << (8 * i);
  *v = x;
  return 0;
}

int la_creader_u32(la_creader_t *r, uint32_t *v) {
  uint64_t x;
  int rc = creader_le(r, 4, &x);

  if (rc == 0) *v = (uint32_t)x;
  return rc;
}
