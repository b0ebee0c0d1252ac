/* SPDX-License-Identifier: BSD-3-Clause */
/* la_crc32.h: CRC-32 (IEEE 802.3, zlib's crc32) for the compact trace
 * encoding and the LocalAgent's spool files; carry-less multiplication
 * where the CPU has it, tables elsewhere (la_crc32.c). */
#ifndef LA_CRC32_H
#define LA_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* crc = la_crc32(0, p, n); continue with la_crc32(crc, q, m). */
uint32_t la_crc32(uint32_t crc, const uint8_t *p, size_t n);

/* The table path alone, whatever the CPU (for tests: la_crc32 must give
 * the same). */
uint32_t la__crc32_tables_only(uint32_t crc, const uint8_t *p, size_t n);

/* 1 when la_crc32 folds with carry-less multiplication on this CPU
 * (inputs of 64 bytes and more), else 0. */
int la__crc32_clmul_on(void);

/* The slicing-by-8 tables, filled once at load time and only read after
 * that (exposed for their test; never write them). */
extern uint32_t la__crc32_tables[8][256];

#endif
