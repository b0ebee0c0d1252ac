/* SPDX-License-Identifier: BSD-3-Clause */
/* la_secure.c: records of la_secure.h on libsodium: secretstream
 * (XChaCha20-Poly1305) or AES-256-GCM with counted nonces. One record = an
 * 8-byte frame header (payload length, type MSG_SEALED, zero) and one
 * message whose plaintext is one whole frame (secretstream: TAG_MESSAGE).
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
#define LA__GCM_ABYTES crypto_aead_aes256gcm_ABYTES
#define LA__GCM_DOMAIN "LA-AESGCM-1"
#define LA__GCM_REKEY "LA-AESGCM-REKEY"

void la_secure_init(la_secure_t *s) {
  if (s) memset(s, 0, sizeof *s);
}

int la_secure_set_cipher(la_secure_t *s, uint32_t cipher) {
  if (!s || s->tx_on || s->rx_on || !la_cipher_available(cipher))
    return LA_EINVAL;
  s->cipher = cipher;
  return 0;
}

static int la__gcm(const la_secure_t *s) {
  return s->cipher == LA_CIPHER_AES256GCM;
}

/* Starts one AES-256-GCM direction: its key from the direction's key and
 * the stream header, nonce 0. */
static void la__gcm_start(la_secure_gcm_t *g, const uint8_t *key,
                          const uint8_t *header) {
  crypto_generichash_state h;
  crypto_generichash_init(&h, key, LA_SECURE_KEY_BYTES, sizeof g->key);
  crypto_generichash_update(&h, (const unsigned char *)LA__GCM_DOMAIN,
                            sizeof LA__GCM_DOMAIN - 1);
  crypto_generichash_update(&h, header, LA_SECURE_HEADER_BYTES);
  crypto_generichash_final(&h, g->key, sizeof g->key);
  sodium_memzero(&h, sizeof h);
  crypto_aead_aes256gcm_beforenm(&g->st, g->key);
  g->n = 0;
}

/* The nonce of the direction's next record; rekeys first when a key has
 * sealed/opened LA_SECURE_GCM_REKEY_EVERY records. */
static void la__gcm_next(la_secure_gcm_t *g,
                         uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES]) {
  if (g->n != 0 && g->n % LA_SECURE_GCM_REKEY_EVERY == 0) {
    uint8_t k[sizeof g->key];
    crypto_generichash(k, sizeof k, (const unsigned char *)LA__GCM_REKEY,
                       sizeof LA__GCM_REKEY - 1, g->key, sizeof g->key);
    memcpy(g->key, k, sizeof k);
    sodium_memzero(k, sizeof k);
    crypto_aead_aes256gcm_beforenm(&g->st, g->key);
  }
  memset(nonce, 0, crypto_aead_aes256gcm_NPUBBYTES);
  for (int i = 0; i < 8; i++) nonce[i] = (uint8_t)(g->n >> (8 * i));
}

int la_secure_start_tx(la_secure_t *s, const uint8_t *key,
                       uint8_t header[LA_SECURE_HEADER_BYTES]) {
  if (!s || !key || !header) return LA_EINVAL;
  if (la__gcm(s)) {
    randombytes_buf(header, LA_SECURE_HEADER_BYTES);
    la__gcm_start(&s->gtx, key, header);
  } else {
    crypto_secretstream_xchacha20poly1305_init_push(&s->tx, header, key);
  }
  s->tx_on = 1;
  return 0;
}

int la_secure_start_rx(la_secure_t *s, const uint8_t *key,
                       const uint8_t *header, size_t header_len) {
  if (!s || !key || !header || header_len != LA_SECURE_HEADER_BYTES)
    return LA_EINVAL;
  if (la__gcm(s))
    la__gcm_start(&s->grx, key, header);
  else if (crypto_secretstream_xchacha20poly1305_init_pull(&s->rx, header,
                                                           key))
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
  size_t clen = frame_len + (la__gcm(s) ? LA__GCM_ABYTES : LA__ABYTES);
  if (clen > UINT32_MAX || clen + LA_FRAME_HEADER_LEN > cap) return LA_EMSGSIZE;
  la_frame_header_put(out, LA__MSG_TYPE__MSG_SEALED, (uint32_t)clen);
  if (la__gcm(s)) {
    uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES];
    la__gcm_next(&s->gtx, nonce);
    crypto_aead_aes256gcm_encrypt_detached_afternm(
        out + LA_FRAME_HEADER_LEN, out + LA_FRAME_HEADER_LEN + frame_len, NULL,
        frame, frame_len, NULL, 0, NULL, nonce, &s->gtx.st);
    s->gtx.n++;
  } else {
    crypto_secretstream_xchacha20poly1305_push(
        &s->tx, out + LA_FRAME_HEADER_LEN, NULL, frame, frame_len, NULL, 0,
        crypto_secretstream_xchacha20poly1305_TAG_MESSAGE);
  }
  s->sealed++;
  return (long)(clen + LA_FRAME_HEADER_LEN);
}

/* Authenticates and decrypts the record c (len bytes) into m (AES-256-GCM:
 * m may be c; XChaCha20: must not overlap). Returns 0 and the plaintext's
 * length in *got, or an LA_E* code with why (the stream broken). */
static int la__decrypt(la_secure_t *s, uint8_t *m, const uint8_t *c,
                       size_t len, size_t *got, char *why, size_t why_len) {
  if (la__gcm(s)) {
    uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES];
    size_t mlen = len - LA__GCM_ABYTES;
    la__gcm_next(&s->grx, nonce);
    if (crypto_aead_aes256gcm_decrypt_detached_afternm(
            m, NULL, c, mlen, c + mlen, NULL, 0, nonce, &s->grx.st) != 0) {
      s->rx_broken = 1;
      return la_errorf(why, why_len, LA_EAUTH,
                       "encrypted record %llu does not authenticate (forged, "
                       "corrupted, replayed or out of order)",
                       (unsigned long long)s->opened + 1);
    }
    s->grx.n++;
    *got = mlen;
    return 0;
  }
  unsigned long long n = 0;
  unsigned char tag = 0;
  if (crypto_secretstream_xchacha20poly1305_pull(&s->rx, m, &n, &tag, c, len,
                                                 NULL, 0) != 0) {
    s->rx_broken = 1;
    return la_errorf(why, why_len, LA_EAUTH,
                     "encrypted record %llu does not authenticate (forged, "
                     "corrupted, replayed or out of order)",
                     (unsigned long long)s->opened + 1);
  }
  if (tag != crypto_secretstream_xchacha20poly1305_TAG_MESSAGE) {
    s->rx_broken = 1;
    return la_errorf(why, why_len, LA_EAUTH,
                     "encrypted record %llu has tag %u: the stream was ended "
                     "or rekeyed, which this protocol never does",
                     (unsigned long long)s->opened + 1, (unsigned)tag);
  }
  *got = (size_t)n;
  return 0;
}

/* The open of both entry points: decrypts payload into m (in_place: m is
 * payload) and parses the inner frame. *buf gets m unless in place. */
static int la__open(la_secure_t *s, uint8_t *in_place, const uint8_t *payload,
                    size_t len, uint32_t max_payload, uint8_t **buf,
                    uint16_t *type, const uint8_t **inner, uint32_t *inner_len,
                    char *why, size_t why_len) {
  *buf = NULL;
  if (!s || !s->rx_on)
    return la_errorf(why, why_len, LA_EPROTO,
                     "encrypted record before the handshake");
  if (s->rx_broken)
    return la_errorf(why, why_len, LA_EAUTH, "the stream failed before");
  size_t abytes = la__gcm(s) ? LA__GCM_ABYTES : LA__ABYTES;
  if (len < abytes + LA_FRAME_HEADER_LEN)
    return la_errorf(why, why_len, LA_EPROTO,
                     "encrypted record of %zu bytes: too short", len);
  uint8_t *m = in_place;
  if (!m && !(m = malloc(len - abytes)))
    return la_errorf(why, why_len, LA_ENOMEM, "out of memory");
  size_t got = 0;
  int rc = la__decrypt(s, m, payload, len, &got, why, why_len);
  uint16_t t = 0;
  uint32_t l = 0;
  if (rc == 0) {
    int hr = la_frame_header_parse(m, max_payload, &t, &l);
    if (hr == LA_EMSGSIZE)
      rc = la_errorf(why, why_len, LA_EMSGSIZE,
                     "the frame inside an encrypted record is larger than "
                     "the maximum");
    else if (hr != 0 || t == LA__MSG_TYPE__MSG_SEALED ||
             (size_t)l + LA_FRAME_HEADER_LEN != got)
      rc = la_errorf(why, why_len, LA_EPROTO,
                     "bad frame inside an encrypted record");
  }
  if (rc != 0) {
    if (m != in_place) free(m);
    return rc;
  }
  s->opened++;
  if (m != in_place) *buf = m;
  *type = t;
  *inner = m + LA_FRAME_HEADER_LEN;
  *inner_len = l;
  return 0;
}

int la_secure_open(la_secure_t *s, const uint8_t *payload, size_t len,
                   uint32_t max_payload, uint8_t **buf, uint16_t *type,
                   const uint8_t **inner, uint32_t *inner_len, char *why,
                   size_t why_len) {
  return la__open(s, NULL, payload, len, max_payload, buf, type, inner,
                  inner_len, why, why_len);
}

int la_secure_open_in_place(la_secure_t *s, uint8_t *payload, size_t len,
                            uint32_t max_payload, uint8_t **buf,
                            uint16_t *type, const uint8_t **inner,
                            uint32_t *inner_len, char *why, size_t why_len) {
  return la__open(s, s && la__gcm(s) ? payload : NULL, payload, len,
                  max_payload, buf, type, inner, inner_len, why, why_len);
}

void la_secure_wipe(la_secure_t *s) {
  if (s) sodium_memzero(s, sizeof *s);
}
