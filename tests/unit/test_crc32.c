/* test_crc32.c: the CRC-32 of compact traces and the segment log
 * (common/la_crc32.c): its slicing tables (filled once at load) against their
 * definition, the standard check value, zlib's results for split inputs,
 * and every length and alignment against a bit-by-bit reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "la_crc32.h"

/* The definition: reflected polynomial 0xEDB88320, one bit at a time. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t n) {
  crc = ~crc;
  while (n--) {
    crc ^= *p++;
    for (int b = 0; b < 8; b++)
      crc = (crc >> 1) ^ (crc & 1 ? 0xEDB88320u : 0);
  }
  return ~crc;
}

static void test_tables_match_definition(void **state) {
  (void)state;
  for (unsigned i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int b = 0; b < 8; b++)
      c = (c >> 1) ^ (c & 1 ? 0xEDB88320u : 0);
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
  assert_int_equal(la_crc32(la_crc32(0, (const uint8_t *)s, 4),
                            (const uint8_t *)s + 4, 5),
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
      assert_int_equal(la_crc32(0, buf + off, n),
                       crc_bitwise(0, buf + off, n));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables_match_definition),
      cmocka_unit_test(test_check_value),
      cmocka_unit_test(test_every_length_and_alignment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
