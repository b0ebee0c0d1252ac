/* SPDX-License-Identifier: BSD-3-Clause */
/* la_cipher.h: which cipher an encrypted link between the agents uses
 * (docs/protocol.md, "Handshake"; docs/security.md, "Cipher negotiation").
 *
 * The side that connects offers the ciphers it can use, in its order of
 * preference (Hello.ciphers); the other side chooses one of them
 * (Challenge.cipher). Both the offer and the choice are bound into the
 * transcript the keys and proofs are derived from (la_auth.h), so a change
 * by anyone in between fails the handshake. A Hello without an offer is an
 * older peer: XChaCha20-Poly1305 (secretstream) and the transcript of
 * before. The settings global.cipher (LocalAgent: what to offer) and
 * agents.cipher (GlobalAgent: what to accept) take the names below.
 * Pure: no I/O, no state beyond libsodium's CPU detection.
 */
#ifndef LA_CIPHER_H
#define LA_CIPHER_H

#include <stddef.h>
#include <stdint.h>

/* Cipher ids on the wire (Hello.ciphers, Challenge.cipher). */
enum {
  LA_CIPHER_XCHACHA20 = 1, /* secretstream XChaCha20-Poly1305 */
  LA_CIPHER_AES256GCM = 2  /* AES-256-GCM, only where the CPU has AES-NI */
};

/* A setting's value: what a side offers or accepts. */
typedef enum {
  LA_CIPHER_AUTO = 0, /* AES-256-GCM where the CPU has it, else XChaCha20 */
  LA_CIPHER_ONLY_XCHACHA20,
  LA_CIPHER_ONLY_AES256GCM,
  LA_CIPHER_LEGACY /* LocalAgent: no offer, the handshake of older agents */
} la_cipher_pref_t;

#define LA_CIPHER_OFFER_MAX 8 /* ids in an offer at most (LA_AUTH_OFFER_MAX) */

/* The cipher's name ("xchacha20", "aes256gcm"; "unknown" otherwise). */
const char *la_cipher_name(uint32_t id);

/* 1 when this machine can use the cipher (AES-256-GCM needs AES-NI and
 * PCLMUL: crypto_aead_aes256gcm_is_available()). */
int la_cipher_available(uint32_t id);

/* Parses a setting's value: auto, xchacha20, aes256gcm, or (legacy_ok: the
 * LocalAgent's setting) legacy. Returns 0, or LA_EINVAL with why naming
 * the setting (name), the value and what is accepted, or saying that this
 * CPU has no AES-256-GCM. */
int la_cipher_parse(const char *name, const char *value, int legacy_ok,
                    la_cipher_pref_t *out, char *why, size_t why_len);

/* The offer of a LocalAgent with preference p: ids into offer (room for
 * LA_CIPHER_OFFER_MAX), best first. Returns how many (0: legacy). */
size_t la_cipher_offer(la_cipher_pref_t p, uint32_t *offer);

/* The GlobalAgent's choice, with preference p, among the offer (n ids,
 * those beyond LA_CIPHER_OFFER_MAX ignored; n == 0: an older peer, which
 * can only use XChaCha20). Returns the id, or 0 when none is acceptable
 * (why says what was offered and what this side accepts). */
uint32_t la_cipher_choose(la_cipher_pref_t p, const uint32_t *offer, size_t n,
                          char *why, size_t why_len);

/* 1 when id is among the first LA_CIPHER_OFFER_MAX of the offer. */
int la_cipher_offered(uint32_t id, const uint32_t *offer, size_t n);

/* What the side that offered (*n ids; 0: no offer, nothing to check)
 * makes of the other side's choice (has: Challenge.cipher present, id):
 * NULL when it answers the offer, or when there is none and the offer
 * includes XChaCha20 (a GlobalAgent older than negotiation: *n is set to 0,
 * the session is derived and encrypted as without an offer); else why not
 * ("it chose no cipher: ...", "it chose a cipher this side did not offer:
 * ..."). */
const char *la_cipher_choice_problem(const uint32_t *offer, size_t *n, int has,
                                     uint32_t id);

#endif /* LA_CIPHER_H */
