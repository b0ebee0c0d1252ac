/* SPDX-License-Identifier: BSD-3-Clause */
/* la_secure.h: the encrypted, authenticated records of the link between a
 * LocalAgent and the GlobalAgent, after the handshake (docs/protocol.md,
 * "Records").
 *
 * Each direction has its own key from la_auth_session_derive and one of two
 * ciphers (la_cipher.h, chosen in the handshake): XChaCha20-Poly1305 as one
 * libsodium secretstream (its counter and rekeying are libsodium's), or
 * AES-256-GCM where the CPU has it. AES-256-GCM's key of a direction is
 * BLAKE2b-256(key = the direction's key, "LA-AESGCM-1" || the 24-byte stream
 * header the sender sent), its 12-byte nonce the record's number in the
 * direction (uint64, little-endian, then 4 zero bytes), counted by both
 * sides and never sent; after every 2^32 records both sides replace the key
 * by BLAKE2b-256(key = key, "LA-AESGCM-REKEY"), so no key seals more than
 * 2^32 records and no nonce repeats under a key. Every frame (la_codec.h)
 * travels as one record inside an outer frame of type MSG_SEALED whose
 * length prefix stays in clear, so a reader bounds the size before
 * allocating. The counter makes a forged, replayed, reordered or dropped
 * record fail to open; once one fails, the receiving side is unusable for
 * good. Pure: no sockets, no event loop, no logging, no global state; a
 * session is used by one thread. Not here: the handshake messages (the
 * daemons), key derivation (la_auth.h), the negotiation (la_cipher.h).
 */
#ifndef LA_SECURE_H
#define LA_SECURE_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "la_cipher.h"
#include "la_codec.h"

#define LA_SECURE_KEY_BYTES crypto_secretstream_xchacha20poly1305_KEYBYTES
#define LA_SECURE_HEADER_BYTES \
  crypto_secretstream_xchacha20poly1305_HEADERBYTES /* 24 */
/* Bytes a record adds to the frame it carries at most: outer header + MAC
 * (secretstream's 17; AES-256-GCM's 16). */
#define LA_SECURE_OVERHEAD \
  (LA_FRAME_HEADER_LEN + crypto_secretstream_xchacha20poly1305_ABYTES)
/* Records under one AES-256-GCM key before both sides rekey. */
#define LA_SECURE_GCM_REKEY_EVERY ((uint64_t)1 << 32)

/* One direction of AES-256-GCM. */
typedef struct la_secure_gcm {
  crypto_aead_aes256gcm_state st; /* the key expanded (beforenm) */
  uint8_t key[crypto_aead_aes256gcm_KEYBYTES];
  uint64_t n; /* records sealed/opened: the next nonce */
} la_secure_gcm_t;

typedef struct la_secure {
  uint32_t cipher; /* LA_CIPHER_* (la_cipher.h); 0: XChaCha20 */
  crypto_secretstream_xchacha20poly1305_state tx, rx;
  la_secure_gcm_t gtx, grx;
  int tx_on, rx_on;
  int rx_broken;           /* a record failed: nothing more is opened */
  uint64_t sealed, opened; /* records, for status and tests */
} la_secure_t;

/* Zeroes s: neither direction started. */
void la_secure_init(la_secure_t *s);

/* Sets the cipher of both directions (before either starts): an id of
 * la_cipher.h this machine can use. Returns 0 or LA_EINVAL. */
int la_secure_set_cipher(la_secure_t *s, uint32_t cipher);

/* Starts the sending stream with key; writes the header the peer needs
 * (LA_SECURE_HEADER_BYTES, not secret) into header. Returns 0 or LA_EINVAL. */
int la_secure_start_tx(la_secure_t *s, const uint8_t *key,
                       uint8_t header[LA_SECURE_HEADER_BYTES]);

/* Starts the receiving stream with key and the peer's header (header_len
 * must be LA_SECURE_HEADER_BYTES). Returns 0, LA_EINVAL or LA_EAUTH (a
 * header libsodium refuses). */
int la_secure_start_rx(la_secure_t *s, const uint8_t *key,
                       const uint8_t *header, size_t header_len);

/* Bytes of the record that carries a frame of frame_len bytes. */
size_t la_secure_record_size(size_t frame_len);

/* Seals frame (frame_len bytes, a whole frame) into out (cap bytes, must not
 * overlap frame) as one record. Returns the record's length, LA_EINVAL (the
 * sending stream is not started) or LA_EMSGSIZE (cap too small, or a record
 * longer than 4 GiB). */
long la_secure_seal(la_secure_t *s, const uint8_t *frame, size_t frame_len,
                    uint8_t *out, size_t cap);

/* Opens the payload (len bytes) of one received MSG_SEALED frame and parses
 * the frame inside, whose payload may be at most max_payload bytes. On
 * success returns 0 and sets *buf (malloc'ed, the caller frees it), and the
 * inner frame's *type, *payload (inside *buf) and *payload_len. Errors, with
 * why (if not NULL) naming the problem: LA_EAUTH (the record does not
 * authenticate: forged, corrupted, replayed, reordered or after a missing
 * one; or the stream ended), LA_EPROTO (a bad inner frame, or the receiving
 * stream not started), LA_EMSGSIZE, LA_ENOMEM. After LA_EAUTH every later
 * call fails too. */
int la_secure_open(la_secure_t *s, const uint8_t *payload, size_t len,
                   uint32_t max_payload, uint8_t **buf, uint16_t *type,
                   const uint8_t **inner, uint32_t *inner_len, char *why,
                   size_t why_len);

/* As la_secure_open, on a payload this call may overwrite: with
 * AES-256-GCM the frame is decrypted in place (*buf NULL, *inner inside
 * payload), with XChaCha20 into *buf as la_secure_open does. */
int la_secure_open_in_place(la_secure_t *s, uint8_t *payload, size_t len,
                            uint32_t max_payload, uint8_t **buf,
                            uint16_t *type, const uint8_t **inner,
                            uint32_t *inner_len, char *why, size_t why_len);

/* Overwrites both stream states. NULL is ignored. */
void la_secure_wipe(la_secure_t *s);

#endif /* LA_SECURE_H */
