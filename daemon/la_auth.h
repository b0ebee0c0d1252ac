/* SPDX-License-Identifier: BSD-3-Clause */
/* la_auth.h: the shared-secret challenge-response between a LocalAgent and
 * the GlobalAgent (docs/protocol.md, "LocalAgent <-> GlobalAgent").
 *
 * Both agents read the same secret file; the key is a hash of its contents.
 * The GlobalAgent sends a fresh random nonce; the LocalAgent answers with
 *   HMAC-SHA-256(key, "LA-AUTH-1" || uint8(nonce_len) || nonce || host)
 * where host is the name it sent in Hello (the length byte makes the split
 * between nonce and host unambiguous, so a MAC computed for one (nonce, host)
 * pair is never valid for another). The GlobalAgent checks it in constant
 * time. Uses libsodium; pure: no sockets, no event loop, no global state of
 * its own. Not here: framing (la_codec.h) and what a daemon logs or answers.
 */
#ifndef LA_AUTH_H
#define LA_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define LA_AUTH_KEY_BYTES 32
#define LA_AUTH_NONCE_BYTES 32 /* what la_auth_make_nonce produces */
#define LA_AUTH_NONCE_MIN 16   /* nonce lengths la_auth_mac accepts */
#define LA_AUTH_NONCE_MAX 64
#define LA_AUTH_MAC_BYTES 32
#define LA_AUTH_SECRET_MIN 16    /* bytes of secret, trailing newline off */
#define LA_AUTH_SECRET_MAX 65536 /* a larger file is not a secret file */
#define LA_AUTH_DOMAIN "LA-AUTH-1"
/* What the GlobalAgent tells a LocalAgent whose MAC does not verify: enough
 * to act on, nothing about the key. */
#define LA_AUTH_REFUSED_MSG                                                   \
  "authentication failed: MAC mismatch (check that both agents use the same " \
  "secret file)"

typedef struct la_auth_key {
  uint8_t k[LA_AUTH_KEY_BYTES];
} la_auth_key_t;

/* Initialises libsodium (idempotent, thread-safe). Call once before any other
 * function here. Returns 0 or LA_EAUTH if libsodium cannot start. */
int la_auth_init(void);

/* Loads the secret file at path into *key. The file must be a regular file
 * (symbolic links are followed), with no permission bits for group or others
 * (mode & 077 == 0, as ssh demands of private keys), holding at least
 * LA_AUTH_SECRET_MIN and at most LA_AUTH_SECRET_MAX bytes once trailing
 * newlines ("\n", "\r\n") are stripped. Any text or binary content works: the
 * key is a keyed BLAKE2b hash of it. Returns 0, LA_EINVAL (NULL argument),
 * LA_EIO (cannot open or read: the reason includes strerror) or LA_EAUTH (not
 * a regular file, permissions too open, too short, too long). On failure
 * *key is zeroed and why (if not NULL) gets a reason naming the file; the
 * file's contents never appear in it. */
int la_auth_load_key(const char *path, la_auth_key_t *key, char *why,
                     size_t why_len);

/* Fills nonce with LA_AUTH_NONCE_BYTES unpredictable bytes. */
void la_auth_make_nonce(uint8_t nonce[LA_AUTH_NONCE_BYTES]);

/* Computes the LocalAgent's answer to the challenge nonce for host (the host
 * string sent in Hello, without its terminating NUL) into mac. Returns 0, or
 * LA_EINVAL (NULL argument, nonce_len outside LA_AUTH_NONCE_MIN..MAX) in
 * which case mac is zeroed. */
int la_auth_mac(const la_auth_key_t *key, const uint8_t *nonce,
                size_t nonce_len, const char *host,
                uint8_t mac[LA_AUTH_MAC_BYTES]);

/* Checks mac (mac_len bytes) against the expected answer for nonce and host,
 * in constant time. Returns 0 when it matches, LA_EAUTH otherwise (including
 * a wrong length or invalid arguments). */
int la_auth_verify(const la_auth_key_t *key, const uint8_t *nonce,
                   size_t nonce_len, const char *host, const uint8_t *mac,
                   size_t mac_len);

/* ---- mutual authentication and session keys (protocol "LA-AUTH-2") ----
 *
 * Both agents contribute a fresh nonce. The transcript
 *   T = "LA-AUTH-2" || uint32be(protocol) || lv(agent) || lv(server)
 *       || lv(agent_nonce) || lv(server_nonce)      (lv: uint8 length, bytes)
 * is hashed with the key into a per-connection master key
 *   M = BLAKE2b-256(key = K, T)
 * from which crypto_kdf (context "LA-LINK2") derives four 32-byte values:
 * 1 the LocalAgent's proof, 2 the GlobalAgent's proof, 3 the key of the
 * LocalAgent -> GlobalAgent stream, 4 the key of the other direction. The
 * two proofs are different derivations, so one cannot be reflected as the
 * other; each covers both nonces, both names and the protocol version. */
#define LA_AUTH_PROOF_BYTES 32
#define LA_AUTH_DOMAIN2 "LA-AUTH-2"

typedef struct la_auth_session {
  uint8_t agent_proof[LA_AUTH_PROOF_BYTES];
  uint8_t server_proof[LA_AUTH_PROOF_BYTES];
  uint8_t key_a2g[32]; /* LocalAgent -> GlobalAgent stream key */
  uint8_t key_g2a[32]; /* GlobalAgent -> LocalAgent stream key */
} la_auth_session_t;

/* Derives the proofs and stream keys of one connection into *out. agent and
 * server are the names sent in Hello and Challenge (1..255 bytes each,
 * without NUL); the nonces are as received (LA_AUTH_NONCE_MIN..MAX bytes).
 * Returns 0, or LA_EINVAL (NULL argument, a length out of range), in which
 * case *out is zeroed. Pure: no I/O, no state. */
int la_auth_session_derive(const la_auth_key_t *key, uint32_t protocol,
                           const char *agent, const char *server,
                           const uint8_t *agent_nonce, size_t agent_nonce_len,
                           const uint8_t *server_nonce, size_t server_nonce_len,
                           la_auth_session_t *out);

/* As la_auth_session_derive, with the cipher negotiation (la_cipher.h)
 * bound into the transcript: with offer_len > 0 (at most LA_AUTH_OFFER_MAX)
 *   T' = T || "LA-CIPHER-1" || uint8(offer_len) || uint32be(offer[i])...
 *        || uint32be(choice)
 * (choice nonzero); offer_len == 0: T alone, the transcript of a peer that
 * predates negotiation. An offer or choice altered on the way gives the
 * two sides different keys and proofs. Returns 0 or LA_EINVAL. */
#define LA_AUTH_OFFER_MAX 8
#define LA_AUTH_DOMAIN_CIPHER "LA-CIPHER-1"
int la_auth_session_derive_neg(
    const la_auth_key_t *key, uint32_t protocol, const char *agent,
    const char *server, const uint8_t *agent_nonce, size_t agent_nonce_len,
    const uint8_t *server_nonce, size_t server_nonce_len,
    const uint32_t *offer, size_t offer_len, uint32_t choice,
    la_auth_session_t *out);

/* The longest name la_auth_identity makes: a host (LA_MAX_ID_LEN), '/' and
 * an instance id (LA_INSTANCE_LEN); the transcript takes 255 bytes. */
#define LA_AUTH_IDENT_MAX 161

/* The LocalAgent's name the proofs cover (la_auth_session_derive_neg's
 * agent): "host/instance" when the GlobalAgent took the LocalAgent's
 * instance id (Challenge.instance_bound), else host alone (instance NULL or
 * ""), as before instance ids. */
void la_auth_identity(const char *host, const char *instance, char *out,
                      size_t out_len);

/* Compares a received proof (got_len bytes) with the expected one in
 * constant time. Returns 0 when equal, LA_EAUTH otherwise (wrong length or
 * NULL included). */
int la_auth_proof_check(const uint8_t want[LA_AUTH_PROOF_BYTES],
                        const uint8_t *got, size_t got_len);

/* Overwrites a session's keys and proofs. NULL is ignored. */
void la_auth_session_wipe(la_auth_session_t *s);

/* Overwrites the key so it does not linger in memory. NULL is ignored. */
void la_auth_key_wipe(la_auth_key_t *key);

/* Creates a new secret file at path: 32 random bytes as 64 lowercase hex
 * digits and a newline, mode 0600 whatever the umask, flushed to disk. Never
 * overwrites: an existing path (even a dangling symbolic link) is refused.
 * Returns 0, LA_EINVAL (NULL path), or LA_EIO with why (if not NULL) naming
 * the file and the system's reason ("File exists" for an existing file); a
 * partly written file is removed. */
int la_auth_generate_secret_file(const char *path, char *why, size_t why_len);

#endif /* LA_AUTH_H */
