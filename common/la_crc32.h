/* la_crc32.h: CRC-32 (IEEE 802.3, zlib's crc32) for the compact trace
 * encoding and the LocalAgent's spool files. */
#ifndef LA_CRC32_H
#define LA_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* crc = la_crc32(0, p, n); continue with la_crc32(crc, q, m). */
uint32_t la_crc32(uint32_t crc, const uint8_t *p, size_t n);

/* The slicing-by-8 tables, filled once at load time and only read after
 * that (exposed for their test; never write them). */
extern uint32_t la__crc32_tables[8][256];

#endif
