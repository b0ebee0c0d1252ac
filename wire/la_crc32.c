/* SPDX-License-Identifier: BSD-3-Clause */
/* la_crc32.c: CRC-32 (IEEE 802.3, the same as zlib's crc32). Two paths
 * giving the same results: slicing-by-8 tables (eight bytes per step, a
 * byte-wise tail), everywhere; and, on x86-64 CPUs with the carry-less
 * multiply instruction (PCLMULQDQ, checked at load time), folding of
 * 64-byte blocks for inputs of 64 bytes and more, about ten times faster
 * on the compact traces the GlobalAgent checks. Used to detect damage in
 * compact trace encodings and in the LocalAgent's segment log.
 *
 * The tables are filled once, when the program (or the library holding
 * this file) is loaded, from their definition: la__crc32_tables[0] is the
 * byte-wise table of the reflected polynomial 0xEDB88320, and
 * la__crc32_tables[k][i] = (t[k-1][i] >> 8) ^ t[0][t[k-1][i] & 0xff]
 * (test_crc32 checks them against it). The folding constants (powers of x
 * modulo the polynomial) are computed then too, not written down. After
 * that everything is only read: no state, safe from any thread.
 *
 * Folding. Bytes are the coefficients of a polynomial over GF(2), the
 * first byte's lowest bit the highest power ("reflected"): 16 bytes loaded
 * little-endian are a 128-bit value whose bit i is the coefficient of
 * x^(127-i), and the CRC register (without its inversions) after a message
 * M is M(x) x^32 mod P. A block R followed by T bits contributes
 * R(x) x^T, and R = L x^64 + H (L its low, H its high 64 bits) gives
 * R x^T = L x^(T+64) + H x^T, congruent modulo P to L K1 + H K2 with
 * K1 = x^(T+64) mod P, K2 = x^T mod P, each of degree < 32: two carry-less
 * multiplies (a 64 x 64-bit product of reflected values comes out one
 * power of x low, so the constants stored are x^(T+63) and x^(T-1) mod P).
 * Four such accumulators fold 64 bytes a step (T = 512), then are folded
 * into one (T = 128) with the 16-byte blocks left; the last 128-bit value
 * is congruent to everything before it, so the table path finishes: it
 * runs over that value's 16 bytes and the tail from a zero register. The
 * initial register is XORed into the first 4 bytes, as the byte-wise
 * algorithm does.
 */
#include "la_crc32.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define LA__CRC_CLMUL 1
#include <emmintrin.h>
#include <wmmintrin.h>
#endif

uint32_t la__crc32_tables[8][256];

#ifdef LA__CRC_CLMUL
static int la__clmul_on;
/* {x^575, x^511} and {x^191, x^127} mod P, each reflected into 64 bits
 * (the coefficient of x^d at bit 63 - d): folding by 512 and 128 bits. */
static uint64_t la__k512[2], la__k128[2];

/* x^n mod P (P = x^32 + 0x04C11DB7's terms), reflected into 64 bits. */
static uint64_t la__xpow_mod(unsigned n) {
  uint64_t r = 1; /* x^0, normal bit order: bit d is x^d */
  for (unsigned i = 0; i < n; i++) {
    r <<= 1;
    if (r & (1ull << 32)) r ^= 0x104C11DB7ull;
  }
  uint64_t out = 0;
  for (int d = 0; d < 32; d++)
    if (r >> d & 1) out |= 1ull << (63 - d);
  return out;
}
#endif

/* Runs before main() (and when a shared library holding it is loaded), so
 * la_crc32() never sees an empty table and needs no check per call. */
__attribute__((constructor)) static void la__crc32_fill(void) {
  uint32_t(*t)[256] = la__crc32_tables;

  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int b = 0; b < 8; b++) c = (c >> 1) ^ (c & 1 ? 0xEDB88320u : 0);
    t[0][i] = c;
  }
  for (int k = 1; k < 8; k++)
    for (uint32_t i = 0; i < 256; i++)
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
#ifdef LA__CRC_CLMUL
  la__k512[0] = la__xpow_mod(512 + 63);
  la__k512[1] = la__xpow_mod(512 - 1);
  la__k128[0] = la__xpow_mod(128 + 63);
  la__k128[1] = la__xpow_mod(128 - 1);
  __builtin_cpu_init(); /* a constructor may run before libgcc's */
  la__clmul_on = __builtin_cpu_supports("pclmul") != 0;
#endif
}

/* The table path on the register itself (no inversions). */
static uint32_t la__crc32_raw(uint32_t crc, const uint8_t *p, size_t n) {
  const uint32_t(*t)[256] = la__crc32_tables;

  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
                         (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                  (uint32_t)p[7] << 24;
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
          t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
          t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
  }
  while (n--) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

uint32_t la__crc32_tables_only(uint32_t crc, const uint8_t *p, size_t n) {
  return ~la__crc32_raw(~crc, p, n);
}

#ifdef LA__CRC_CLMUL
/* x folded forward over the bits after it (constants k), plus next. */
__attribute__((target("pclmul,sse2"))) static inline __m128i la__fold(
    __m128i x, __m128i k, __m128i next) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
  __m128i hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The register (no inversions) after p[0..n), n >= 64, from crc. */
__attribute__((target("pclmul,sse2"))) static uint32_t la__crc32_clmul(
    uint32_t crc, const uint8_t *p, size_t n) {
  __m128i k512 = _mm_loadu_si128((const __m128i *)la__k512);
  __m128i k128 = _mm_loadu_si128((const __m128i *)la__k128);
  __m128i a0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
                             _mm_cvtsi32_si128((int)crc));
  __m128i a1 = _mm_loadu_si128((const __m128i *)(p + 16));
  __m128i a2 = _mm_loadu_si128((const __m128i *)(p + 32));
  __m128i a3 = _mm_loadu_si128((const __m128i *)(p + 48));
  p += 64;
  n -= 64;
  for (; n >= 64; n -= 64, p += 64) {
    a0 = la__fold(a0, k512, _mm_loadu_si128((const __m128i *)p));
    a1 = la__fold(a1, k512, _mm_loadu_si128((const __m128i *)(p + 16)));
    a2 = la__fold(a2, k512, _mm_loadu_si128((const __m128i *)(p + 32)));
    a3 = la__fold(a3, k512, _mm_loadu_si128((const __m128i *)(p + 48)));
  }
  __m128i r = la__fold(a0, k128, a1);
  r = la__fold(r, k128, a2);
  r = la__fold(r, k128, a3);
  for (; n >= 16; n -= 16, p += 16)
    r = la__fold(r, k128, _mm_loadu_si128((const __m128i *)p));
  uint8_t last[16];
  _mm_storeu_si128((__m128i *)last, r);
  return la__crc32_raw(la__crc32_raw(0, last, 16), p, n);
}
#endif

int la__crc32_clmul_on(void) {
#ifdef LA__CRC_CLMUL
  return la__clmul_on;
#else
  return 0;
#endif
}

uint32_t la_crc32(uint32_t crc, const uint8_t *p, size_t n) {
#ifdef LA__CRC_CLMUL
  if (n >= 64 && la__clmul_on) return ~la__crc32_clmul(~crc, p, n);
#endif
  return ~la__crc32_raw(~crc, p, n);
}
