/* la_crc32.c: CRC-32 (IEEE 802.3, the same as zlib's crc32), slicing-by-8
 * (eight bytes per step) with a byte-wise tail. Used to detect damage in
 * compact trace encodings and in the LocalAgent's segment log.
 *
 * The tables are filled once, when the program (or the library holding
 * this file) is loaded, from their definition: la__crc32_tables[0] is the
 * byte-wise table of the reflected polynomial 0xEDB88320, and
 * la__crc32_tables[k][i] = (t[k-1][i] >> 8) ^ t[0][t[k-1][i] & 0xff]
 * (test_crc32 checks them against it). After that they are only read: no
 * state, safe from any thread. */
#include "la_crc32.h"

uint32_t la__crc32_tables[8][256];

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
}

uint32_t la_crc32(uint32_t crc, const uint8_t *p, size_t n) {
  const uint32_t(*t)[256] = la__crc32_tables;

  crc = ~crc;
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
  return ~crc;
}
