/* SPDX-License-Identifier: BSD-3-Clause */
/* test_crc32.c: the CRC-32 of compact traces and the segment log
 * (wire/la_crc32.c): its slicing tables (filled once at load) against their
 * definition, the standard check value, zlib's results for split inputs,
 * every length and alignment against a bit-by-bit reference, and the
 * carry-less multiplication path (where the CPU has it) against the
 * tables on random lengths, alignments and split points. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_crc32.h"

/* The definition: reflected polynomial 0xEDB88320, one bit at a time. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n) {
  crc = ~crc;
  while (n--) {
    crc ^= *p++;
    for (int b = 0; b < 8; b++) crc = (crc >> 1) ^ (crc & 1 ? 0xEDB88320u : 0);
  }
  return ~crc;
}

static void test_tables_match_definition(void **state) {
  (void)state;
  for (unsigned i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int b = 0; b < 8; b++) c = (c >> 1) ^ (c & 1 ? 0xEDB88320u : 0);
    assert_int_equal(la__crc32_tables[0][i], c);
  }
  for (int k = 1; k < 8; k++)
    for (unsigned i = 0; i < 256; i++) {
      uint32_t prev = la__crc32_tables[k - 1][i];
      assert_int_equal(la__crc32_tables[k][i],
                       (prev >> 8) ^ la__crc32_tables[0][prev & 0xff]);
    }
}

static void test_check_value(void **state) {
  const char *s = "123456789";
  (void)state;
  /* the catalogued check value of CRC-32/ISO-HDLC (zlib's crc32) */
  assert_int_equal(la_crc32(0, (const uint8_t *)s, 9), 0xCBF43926u);
  assert_int_equal(la_crc32(0, NULL, 0), 0);
  /* continuing a CRC over a split input gives the CRC of the whole */
  assert_int_equal(
      la_crc32(la_crc32(0, (const uint8_t *)s, 4), (const uint8_t *)s + 4, 5),
      0xCBF43926u);
}

static void test_every_length_and_alignment(void **state) {
  uint8_t buf[600];
  uint64_t r = 0x9E3779B97F4A7C15ull;
  (void)state;
  for (size_t i = 0; i < sizeof(buf); i++) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    buf[i] = (uint8_t)(r >> 56);
  }
  for (size_t off = 0; off < 8; off++)
    for (size_t n = 0; n + off <= 520; n++)
      assert_int_equal(la_crc32(0, buf + off, n), crc_bitwise(0, buf + off, n));
}

/* Whether /proc/cpuinfo lists pclmulqdq (x86-64 Linux), else 0. */
static int cpu_has_pclmul(void) {
#if defined(__x86_64__)
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[4096];
  int has = 0;
  if (!f) return 0;
  while (!has && fgets(line, sizeof line, f))
    if (!strncmp(line, "flags", 5) && strstr(line, " pclmulqdq")) has = 1;
  fclose(f);
  return has;
#else
  return 0;
#endif
}

static void test_fast_path_matches_tables(void **state) {
  enum { CAP = 300000 };
  uint8_t *buf = malloc(CAP + 64);
  uint64_t r = 0x2545F4914F6CDD1Dull;
  (void)state;
  assert_non_null(buf);
  /* a CPU with the instruction uses it */
  assert_int_equal(la__crc32_clmul_on(), cpu_has_pclmul());
  for (size_t i = 0; i < CAP + 64; i++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    buf[i] = (uint8_t)r;
  }
  for (int k = 0; k < 3000; k++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    size_t off = r % 64;
    /* mostly around the 64-byte threshold and small multiples, some long */
    size_t n = k % 10 == 0 ? (size_t)(r >> 20) % CAP : (size_t)(r >> 20) % 700;
    uint32_t seed = (uint32_t)(r >> 32);
    uint32_t want = la__crc32_tables_only(seed, buf + off, n);
    assert_int_equal(la_crc32(seed, buf + off, n), want);
    size_t cut = n ? (size_t)(r >> 40) % n : 0; /* continued over a split */
    assert_int_equal(
        la_crc32(la_crc32(seed, buf + off, cut), buf + off + cut, n - cut),
        want);
  }
  /* all zeros and all ones, where folding constants show any slip */
  memset(buf, 0, 4096);
  assert_int_equal(la_crc32(0, buf, 4096), la__crc32_tables_only(0, buf, 4096));
  memset(buf, 0xff, 4096);
  assert_int_equal(la_crc32(7, buf, 4096), la__crc32_tables_only(7, buf, 4096));
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables_match_definition),
      cmocka_unit_test(test_check_value),
      cmocka_unit_test(test_every_length_and_alignment),
      cmocka_unit_test(test_fast_path_matches_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
