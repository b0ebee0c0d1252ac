/* SPDX-License-Identifier: BSD-3-Clause */
/* la_secure.c: records of la_secure.h on libsodium's secretstream. One
 * record = an 8-byte frame header (payload length, type MSG_SEALED, zero)
 * and one stream message with TAG_MESSAGE whose plaintext is one whole frame.
 * Deliberately no additional data: the outer header is a function of the
 * ciphertext's length, which the MAC covers. No I/O here.
 */
#include "la_secure.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_errors.h"

#define LA__ABYTES crypto_secretstream_xchacha20poly1305_ABYTES

void la_secure_init(la_secure_t *s) {
  if (s) memset(s, 0, sizeof *s);
}

int la_secure_start_tx(la_secure_t *s, const uint8_t *key,
                       uint8_t header[LA_SECURE_HEADER_BYTES]) {
  if (!s || !key || !header) return LA_EINVAL;
  crypto_secretstream_xchacha20poly1305_init_push(&s->tx, header, key);
  s->tx_on = 1;
  return 0;
}

int la_secure_start_rx(la_secure_t *s, const uint8_t *key,
                       const uint8_t *header, size_t header_len) {
  if (!s || !key || !header || header_len != LA_SECURE_HEADER_BYTES)
    return LA_EINVAL;
  if (crypto_secretstream_xchacha20poly1305_init_pull(&s->rx, header, key))
    return LA_EAUTH;
  s->rx_on = 1;
  s->rx_broken = 0;
  return 0;
}

size_t la_secure_record_size(size_t frame_len) {
  return frame_len + LA_SECURE_OVERHEAD;
}

long la_secure_seal(la_secure_t *s, const uint8_t *frame, size_t frame_len,
                    uint8_t *out, size_t cap) {
  if (!s || !s->tx_on || !frame || !out) return LA_EINVAL;
  size_t clen = frame_len + LA__ABYTES;
  if (clen > UINT32_MAX || clen + LA_FRAME_HEADER_LEN > cap) return LA_EMSGSIZE;
  la_frame_header_put(out, LA__MSG_TYPE__MSG_SEALED, (uint32_t)clen);
  crypto_secretstream_xchacha20poly1305_push(
      &s->tx, out + LA_FRAME_HEADER_LEN, NULL, frame, frame_len, NULL, 0,
      crypto_secretstream_xchacha20poly1305_TAG_MESSAGE);
  s->sealed++;
  return (long)(clen + LA_FRAME_HEADER_LEN);
}

int la_secure_open(la_secure_t *s, const uint8_t *payload, size_t len,
                   uint32_t max_payload, uint8_t **buf, uint16_t *type,
                   const uint8_t **inner, uint32_t *inner_len, char *why,
                   size_t why_len) {
  *buf = NULL;
  if (!s || !s->rx_on)
    return la_errorf(why, why_len, LA_EPROTO,
                     "encrypted record before the handshake");
  if (s->rx_broken)
    return la_errorf(why, why_len, LA_EAUTH, "the stream failed before");
  if (len < LA__ABYTES + LA_FRAME_HEADER_LEN)
    return la_errorf(why, why_len, LA_EPROTO,
                     "encrypted record of %zu bytes: too short", len);
  size_t mlen = len - LA__ABYTES;
  uint8_t *m = malloc(mlen);
  if (!m) return la_errorf(why, why_len, LA_ENOMEM, "out of memory");
  unsigned long long got = 0;
  unsigned char tag = 0;
  if (crypto_secretstream_xchacha20poly1305_pull(&s->rx, m, &got, &tag, payload,
                                                 len, NULL, 0) != 0) {
    free(m);
    s->rx_broken = 1;
    return la_errorf(why, why_len, LA_EAUTH,
                     "encrypted record %llu does not authenticate (forged, "
                     "corrupted, replayed or out of order)",
                     (unsigned long long)s->opened + 1);
  }
  if (tag != crypto_secretstream_xchacha20poly1305_TAG_MESSAGE) {
    free(m);
    s->rx_broken = 1;
    return la_errorf(why, why_len, LA_EAUTH,
                     "encrypted record %llu has tag %u: the stream was ended "
                     "or rekeyed, which this protocol never does",
                     (unsigned long long)s->opened + 1, (unsigned)tag);
  }
  uint16_t t;
  uint32_t l;
  int rc = la_frame_header_parse(m, max_payload, &t, &l);
  if (rc != 0 || t == LA__MSG_TYPE__MSG_SEALED ||
      (size_t)l + LA_FRAME_HEADER_LEN != got) {
    free(m);
    if (rc == LA_EMSGSIZE)
      return la_errorf(why, why_len, LA_EMSGSIZE,
                       "the frame inside an encrypted record is larger than "
                       "the maximum");
    return la_errorf(why, why_len, LA_EPROTO,
                     "bad frame inside an encrypted record");
  }
  s->opened++;
  *buf = m;
  *type = t;
  *inner = m + LA_FRAME_HEADER_LEN;
  *inner_len = l;
  return 0;
}

void la_secure_wipe(la_secure_t *s) {
  if (s) sodium_memzero(s, sizeof *s);
}
