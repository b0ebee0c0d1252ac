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

#include "la_compact.h"

int la_cbuf_reserve(la_cbuf_t *b, size_t more) {
  size_t cap;
  uint8_t *p;

  if (b->err)
    return b->err;
  if (b->cap - b->len >= more)
    return 0;
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
  if (la_cbuf_reserve(b, 1) == 0)
    b->p[b->len++] = v;
}

void la_cbuf_put_varint(la_cbuf_t *b, uint64_t v) {
  if (la_cbuf_reserve(b, 10) == 0)
    b->len += la_varint_write(b->p + b->len, v);
}

void la_cbuf_put_u32(la_cbuf_t *b, uint32_t v) {
  int i;

  if (la_cbuf_reserve(b, 4) != 0)
    return;
  for (i = 0; i < 4; i++)
    b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

void la_cbuf_put_f64(la_cbuf_t *b, double v) {
  uint64_t u;
  int i;

  if (la_cbuf_reserve(b, 8) != 0)
    return;
  memcpy(&u, &v, 8);
  for (i = 0; i < 8; i++)
    b->p[b->len++] = (uint8_t)(u >> (8 * i));
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
  if (r->off >= r->len)
    return LA_ETRUNC;
  *v = r->p[r->off++];
  return 0;
}

int la_creader_varint(la_creader_t *r, uint64_t *v) {
  uint64_t x = 0;
  unsigned shift = 0;
  uint8_t c;

  for (;;) {
    if (r->off >= r->len)
      return LA_ETRUNC;
    c = r->p[r->off++];
    if (shift == 63 && c > 1)
      return LA_EPROTO; /* above 2^64 - 1, or longer than 10 bytes */
    x |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80))
      break;
    shift += 7;
  }
  *v = x;
  return 0;
}

int la_creader_u32(la_creader_t *r, uint32_t *v) {
  uint32_t x = 0;
  int i;

  if (r->len - r->off < 4)
    return LA_ETRUNC;
  for (i = 0; i < 4; i++)
    x |= (uint32_t)r->p[r->off++] << (8 * i);
  *v = x;
  return 0;
}

int la_creader_f64(la_creader_t *r, double *v) {
  uint64_t u = 0;
  int i;

  if (r->len - r->off < 8)
    return LA_ETRUNC;
  for (i = 0; i < 8; i++)
    u |= (uint64_t)r->p[r->off++] << (8 * i);
  memcpy(v, &u, 8);
  return 0;
}

int la_creader_verbatim(la_creader_t *r, double *v) {
  uint64_t w;
  int64_t k;
  int rc;

  if ((rc = la_creader_varint(r, &w)) != 0)
    return rc;
  if (w == 1)
    return la_creader_f64(r, v);
  if (w & 1)
    return LA_EPROTO;
  k = la_unzigzag(w >> 1);
  if (k > (INT64_C(1) << 53) || k < -(INT64_C(1) << 53))
    return LA_EPROTO;
  *v = (double)k;
  return 0;
}

int64_t la_qpredict(double prev, int e) {
  /* ldexp(prev, -e) == prev * 2^-e when 2^-e is a normal double */
  double r = la_floor((e >= -1022 && e <= 1022 ? prev * la_pow2(-e)
                                               : ldexp(prev, -e)) +
                      0.5);

  if (!(fabs(r) < LA_QPRED_MAX))
    return 0;
  return (int64_t)r;
}

static const uint32_t crc_table[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u,
    0x706af48fu, 0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u,
    0xe0d5e91eu, 0x97d2d988u, 0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u,
    0x90bf1d91u, 0x1db71064u, 0x6ab020f2u, 0xf3b97148u, 0x84be41deu,
    0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u, 0x136c9856u,
    0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
    0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u,
    0xa2677172u, 0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu,
    0x35b5a8fau, 0x42b2986cu, 0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u,
    0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u, 0x26d930acu, 0x51de003au,
    0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u, 0xcfba9599u,
    0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
    0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u,
    0x01db7106u, 0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu,
    0x9fbfe4a5u, 0xe8b8d433u, 0x7807c9a2u, 0x0f00f934u, 0x9609a88eu,
    0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du, 0x91646c97u, 0xe6635c01u,
    0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu, 0x6c0695edu,
    0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u,
    0xfbd44c65u, 0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u,
    0x4adfa541u, 0x3dd895d7u, 0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au,
    0x346ed9fcu, 0xad678846u, 0xda60b8d0u, 0x44042d73u, 0x33031de5u,
    0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau, 0xbe0b1010u,
    0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
    0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u,
    0x2eb40d81u, 0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u,
    0x03b6e20cu, 0x74b1d29au, 0xead54739u, 0x9dd277afu, 0x04db2615u,
    0x73dc1683u, 0xe3630b12u, 0x94643b84u, 0x0d6d6a3eu, 0x7a6a5aa8u,
    0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u, 0xf00f9344u,
    0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
    0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au,
    0x67dd4accu, 0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u,
    0xd6d6a3e8u, 0xa1d1937eu, 0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u,
    0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu, 0xd80d2bdau, 0xaf0a1b4cu,
    0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u, 0x316e8eefu,
    0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu,
    0xb2bd0b28u, 0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u,
    0x2cd99e8bu, 0x5bdeae1du, 0x9b64c2b0u, 0xec63f226u, 0x756aa39cu,
    0x026d930au, 0x9c0906a9u, 0xeb0e363fu, 0x72076785u, 0x05005713u,
    0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u, 0x92d28e9bu,
    0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
    0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u,
    0x18b74777u, 0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu,
    0x8f659effu, 0xf862ae69u, 0x616bffd3u, 0x166ccf45u, 0xa00ae278u,
    0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u, 0xa7672661u, 0xd06016f7u,
    0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu, 0x40df0b66u,
    0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
    0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u,
    0xcdd70693u, 0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u,
    0x5d681b02u, 0x2a6f2b94u, 0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu,
    0x2d02ef8du,
};

/* Slicing-by-8 (same CRC, eight bytes per step) for long inputs: the seven
 * extra tables are derived from crc_table on the stack (about 2,000 steps,
 * worth it above 64 KiB; no static state). */
static uint32_t crc32_slice8(uint32_t crc, const uint8_t *p, size_t n) {
  uint32_t t[8][256];
  size_t i, k;

  for (i = 0; i < 256; i++)
    t[0][i] = crc_table[i];
  for (k = 1; k < 8; k++)
    for (i = 0; i < 256; i++)
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                         (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
                  (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
          t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
          t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
  }
  while (n--)
    crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

uint32_t la_compact_crc32(uint32_t crc, const uint8_t *p, size_t n) {
  crc = ~crc;
  if (n >= 65536)
    return ~crc32_slice8(crc, p, n);
  while (n--)
    crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}
