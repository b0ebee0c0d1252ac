/* SPDX-License-Identifier: BSD-3-Clause */
/* la_secure_io.h: blocking helpers for the LocalAgent side of the encrypted
 * link, for tools, tests and benchmarks that talk to a GlobalAgent without
 * an event loop (the LocalAgent itself uses libuv: localagent/uplink.c).
 *
 * Runs the handshake of docs/protocol.md ("Handshake") over a connected
 * socket with la_sockio's time limits, then sends and receives frames through
 * a la_secure_t session: sealed once the session's direction is started,
 * clear before. Not here: reconnecting, queueing, acknowledgement logic.
 */
#ifndef LA_SECURE_IO_H
#define LA_SECURE_IO_H

#include <stddef.h>
#include <stdint.h>

#include "la_auth.h"
#include "la_secure.h"

/* Sends msg as one frame on fd: as a record when s is not NULL and its
 * sending stream is started, else in clear. Returns 0 or an LA_E* code
 * (LA_ENOMEM, LA_ETIMEDOUT, LA_EIO, LA_EINVAL). */
int la_secure_send_msg(int fd, la_secure_t *s, uint16_t type,
                       const ProtobufCMessage *msg, int timeout_ms);

/* Reads one frame (inner payload <= max_payload) from fd. A record is opened
 * with s (required then) and *sealed set to 1; a clear frame sets *sealed to
 * 0 (the caller decides whether it accepts clear frames). On success *type
 * and *msg are set (free with la_msg_free). Errors as la_recv_msg plus
 * LA_EAUTH (a record that does not authenticate), with why. */
int la_secure_recv_msg(int fd, la_secure_t *s, uint32_t max_payload,
                       int timeout_ms, uint16_t *type, ProtobufCMessage **msg,
                       int *sealed, char *why, size_t why_len);

/* Runs the LocalAgent's side of the handshake on fd as host: Hello with a
 * fresh nonce and the ciphers pref offers (la_cipher.h; LA_CIPHER_LEGACY:
 * none, as agents before negotiation), checks the Challenge (with an offer:
 * a cipher chosen from it), sends Auth, reads AuthResult. *status
 * gets AuthResult.status (0: accepted; then s carries both streams and
 * *next_seq is set). Returns 0 when an AuthResult arrived (accepted or not),
 * else LA_EAUTH (the GlobalAgent failed to prove the secret: the link must
 * not be used), LA_EPROTO, LA_ETIMEDOUT or LA_EIO, with why. */
int la_secure_client_handshake(int fd, const la_auth_key_t *key,
                               const char *host, la_cipher_pref_t pref,
                               int timeout_ms, la_secure_t *s,
                               int32_t *status, uint64_t *next_seq, char *why,
                               size_t why_len);

#endif /* LA_SECURE_IO_H */
