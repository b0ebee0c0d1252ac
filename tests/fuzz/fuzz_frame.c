/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_frame.c: libFuzzer target for the wire codec's receiving side, the
 * code every daemon runs on bytes a peer sent: la_frame_reader_* (the input
 * is cut into feeds of sizes taken from its first bytes, so frames straddle
 * feed boundaries) and la_msg_decode (decode + validation) of every complete
 * frame. Properties checked besides "no crash, no leak, no UB": the reader
 * never buffers more than one partial frame plus one feed, an error is
 * sticky, and a message that decoded re-encodes (la_frame_pack) into a frame
 * that decodes again to the same encoding. It does not drive sockets or
 * libuv (the daemons' framed connections are tested by their own tests).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "la_codec.h"
#include "la.h"

#define LA__FUZZ_MAX_PAYLOAD 65536u

static void la__check(int ok) {
  if (!ok) abort();
}

/* Decodes the payload; when it is accepted, packs it again and checks that
 * the packed frame decodes to the same bytes. */
static void la__roundtrip(uint16_t type, const uint8_t *p, uint32_t n) {
  ProtobufCMessage *m = NULL;
  char why[256];
  if (la_msg_decode(type, p, n, &m, why, sizeof why) != 0) {
    la__check(m == NULL && why[0] != '\0');
    return;
  }
  uint8_t *f = NULL;
  size_t flen = 0;
  la__check(la_frame_pack(type, m, &f, &flen) == 0);
  la__check(flen >= LA_FRAME_HEADER_LEN && flen == la_frame_size(m));
  uint16_t t2;
  uint32_t n2;
  la__check(la_frame_header_parse(f, LA_FRAME_DEFAULT_MAX, &t2, &n2) == 0);
  la__check(t2 == type && n2 == flen - LA_FRAME_HEADER_LEN);
  ProtobufCMessage *m2 = NULL;
  la__check(la_msg_decode(t2, f + LA_FRAME_HEADER_LEN, n2, &m2, why,
                          sizeof why) == 0);
  uint8_t *f2 = NULL;
  size_t f2len = 0;
  la__check(la_frame_pack(type, m2, &f2, &f2len) == 0);
  la__check(f2len == flen && memcmp(f, f2, flen) == 0);
  free(f2);
  free(f);
  la_msg_free(m2);
  la_msg_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  /* byte 0: a seed for the feed sizes; byte 1: the largest feed - 1 */
  unsigned seed = data[0], maxfeed = (unsigned)data[1] + 1u;
  data += 2;
  size -= 2;
  la_frame_reader_t r;
  la_frame_reader_init(&r, LA__FUZZ_MAX_PAYLOAD);
  size_t off = 0;
  int err = 0;
  while (off < size) {
    seed = seed * 1103515245u + 12345u;
    size_t k = 1 + (seed >> 16) % maxfeed;
    if (k > size - off) k = size - off;
    int rc = la_frame_reader_feed(&r, data + off, k);
    off += k;
    if (err) {
      la__check(rc == err); /* sticky */
      continue;
    }
    if (rc != 0) {
      la__check(rc < 0);
      err = rc;
      continue;
    }
    for (;;) {
      uint16_t type;
      const uint8_t *p;
      uint32_t n;
      rc = la_frame_reader_next(&r, &type, &p, &n);
      if (rc == 1) {
        la__check(n <= LA__FUZZ_MAX_PAYLOAD);
        la__roundtrip(type, p, n);
        continue;
      }
      if (rc < 0) {
        la__check(rc == LA_EPROTO || rc == LA_EMSGSIZE);
        err = rc;
      }
      break;
    }
    if (!err)
      la__check(la_frame_reader_pending(&r) <
                LA_FRAME_HEADER_LEN + LA__FUZZ_MAX_PAYLOAD + maxfeed);
  }
  la_frame_reader_free(&r);
  return 0;
}
