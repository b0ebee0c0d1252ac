/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_cipher.c: the CPU the encrypted link between the agents spends per
 * record (daemon/la_secure.c), per cipher the handshake can choose
 * (daemon/la_cipher.h).
 *
 * For frames of a steady trace (580 B), the mix's mean (4.4 KB), a noisy
 * trace (7.8 KB) and a 64 KiB frame: one side seals, the other opens, in
 * one thread, as the LocalAgent and the GlobalAgent do; the open both as
 * the GlobalAgent's pool does (in place in the frame it read) and into a
 * new buffer. Per case the process's CPU time (user + system) per record,
 * the median of 5 runs of enough records to take about 0.2 s each.
 * AES-256-GCM only where the CPU has it (said otherwise). Writes argv[1]
 * (default build/bench/cipher.json) and prints a table.
 */
#include "bench_args.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "la_auth.h"
#include "la_codec.h"
#include "la_secure.h"

#define RUNS 5

static double cpu_s(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 +
         (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Seals and opens n records of frame (len bytes) with a fresh pair of
 * sessions; returns the CPU seconds, or -1 if one did not open. */
static double run(uint32_t cipher, int in_place, const uint8_t *frame,
                  size_t len, uint8_t *rec, size_t cap, long n) {
  uint8_t key[32], hdr[LA_SECURE_HEADER_BYTES];
  memset(key, 0x5a, sizeof key);
  static la_secure_t tx, rx;
  la_secure_init(&tx);
  la_secure_init(&rx);
  if (la_secure_set_cipher(&tx, cipher) || la_secure_set_cipher(&rx, cipher))
    return -1;
  la_secure_start_tx(&tx, key, hdr);
  la_secure_start_rx(&rx, key, hdr, sizeof hdr);
  double t0 = cpu_s();
  for (long i = 0; i < n; i++) {
    long r = la_secure_seal(&tx, frame, len, rec, cap);
    uint8_t *buf;
    uint16_t type;
    const uint8_t *p;
    uint32_t l;
    int rc = in_place ? la_secure_open_in_place(&rx, rec + LA_FRAME_HEADER_LEN,
                                                (size_t)r - LA_FRAME_HEADER_LEN,
                                                1u << 20, &buf, &type, &p, &l,
                                                NULL, 0)
                      : la_secure_open(&rx, rec + LA_FRAME_HEADER_LEN,
                                       (size_t)r - LA_FRAME_HEADER_LEN,
                                       1u << 20, &buf, &type, &p, &l, NULL, 0);
    free(buf);
    if (r < 0 || rc != 0 || l + LA_FRAME_HEADER_LEN != len) return -1;
  }
  return cpu_s() - t0;
}

int main(int argc, char **argv) {
  const char *out = la_bench_out_path(argc, argv, 1, "build/bench/cipher.json");
  if (la_auth_init() != 0) return 1;
  static const size_t sizes[] = {580, 4400, 7800, 65536};
  static const uint32_t ciphers[] = {LA_CIPHER_XCHACHA20, LA_CIPHER_AES256GCM};
  FILE *js = la_bench_open_out(out);
  if (!js) return 1;
  fprintf(js, "{\"bench\": \"cipher\", \"cases\": [");
  printf("%-10s %8s %-9s %14s %12s\n", "cipher", "frame B", "open",
         "us/record", "MB/s");
  int first = 1;
  for (size_t c = 0; c < 2; c++) {
    if (!la_cipher_available(ciphers[c])) {
      printf("%-10s (not available on this CPU)\n",
             la_cipher_name(ciphers[c]));
      continue;
    }
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      size_t len = sizes[s], cap = la_secure_record_size(len);
      uint8_t *frame = malloc(len), *rec = malloc(cap);
      if (!frame || !rec) return 1;
      for (size_t i = 0; i < len; i++) frame[i] = (uint8_t)(i * 131 + 7);
      /* a valid frame: a header for the payload after it */
      la_frame_header_put(frame, 1, (uint32_t)(len - LA_FRAME_HEADER_LEN));
      long n = (long)(0.2 * 1e9 / (len * 2.0 + 400.0)); /* ~0.2 s */
      for (int ip = 1; ip >= 0; ip--) {
        double t[RUNS];
        for (int r = 0; r < RUNS; r++) {
          t[r] = run(ciphers[c], ip, frame, len, rec, cap, n);
          if (t[r] < 0) {
            fprintf(stderr, "bench_cipher: a record did not open\n");
            return 1;
          }
        }
        qsort(t, RUNS, sizeof t[0], cmp_d);
        double us = t[RUNS / 2] * 1e6 / (double)n;
        printf("%-10s %8zu %-9s %14.2f %12.0f\n", la_cipher_name(ciphers[c]),
               len, ip ? "in place" : "copy", us, (double)len / us);
        fprintf(js,
                "%s\n  {\"cipher\": \"%s\", \"frame_bytes\": %zu, "
                "\"open\": \"%s\", \"records\": %ld, "
                "\"cpu_us_per_seal_and_open\": %.3f}",
                first ? "" : ",", la_cipher_name(ciphers[c]), len,
                ip ? "in_place" : "copy", n, us);
        first = 0;
      }
      free(frame);
      free(rec);
    }
  }
  fprintf(js, "\n]}\n");
  fclose(js);
  return 0;
}
