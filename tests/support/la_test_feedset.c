/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_feedset.c: a TraceSet written as a GlobalAgent's feed sends it
 * (see la_test_feedset.h). */
#include "la_test_feedset.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "la.pb-c.h"
#include "la_codec.h"

/* Writes a frame of msg to fd. 0 or -1. */
static int la__put(int fd, uint16_t type, const ProtobufCMessage *msg) {
  uint8_t *f = NULL;
  size_t n = 0, off = 0;
  if (la_frame_pack(type, msg, &f, &n) != 0) return -1;
  while (off < n) {
    ssize_t k = send(fd, f + off, n - off, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    off += (size_t)k;
  }
  free(f);
  return off == n ? 0 : -1;
}

int la_test_feed_set(int fd, const uint8_t *set, size_t len, const char *app,
                     uint64_t cycle, size_t part_bytes) {
  if (part_bytes == 0) return -1;
  size_t parts = len ? (len + part_bytes - 1) / part_bytes : 1;
  La__TraceSetHead h = LA__TRACE_SET_HEAD__INIT;
  h.app_id = (char *)app;
  h.cycle_tag = cycle;
  h.set_bytes = len;
  h.parts = (uint32_t)parts;
  if (la__put(fd, LA__MSG_TYPE__MSG_TRACE_SET_HEAD, &h.base) != 0) return -1;
  for (size_t i = 0; i < parts; i++) {
    La__TraceSetPart p = LA__TRACE_SET_PART__INIT;
    size_t off = i * part_bytes, n = len - off < part_bytes ? len - off
                                                            : part_bytes;
    p.part = (uint32_t)i;
    p.data.data = (uint8_t *)set + off;
    p.data.len = n;
    if (la__put(fd, LA__MSG_TYPE__MSG_TRACE_SET_PART, &p.base) != 0)
      return -1;
  }
  return 0;
}
