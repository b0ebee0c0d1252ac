/* SPDX-License-Identifier: BSD-3-Clause */
/* la_secure_io.c: the blocking handshake and record I/O of la_secure_io.h,
 * on la_sockio (time limits), la_auth (proofs, keys) and la_secure (records).
 */
#include "la_secure_io.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_errors.h"
#include "la_sockio.h"

int la_secure_send_msg(int fd, la_secure_t *s, uint16_t type,
                       const ProtobufCMessage *msg, int timeout_ms) {
  if (!s || !s->tx_on) return la_send_msg(fd, type, msg, timeout_ms);
  uint8_t *frame;
  size_t len;
  int rc = la_frame_pack(type, msg, &frame, &len);
  if (rc) return rc;
  size_t cap = la_secure_record_size(len);
  uint8_t *rec = malloc(cap);
  if (!rec) {
    free(frame);
    return LA_ENOMEM;
  }
  long n = la_secure_seal(s, frame, len, rec, cap);
  free(frame);
  rc = n < 0 ? (int)n : la_write_all(fd, rec, (size_t)n, timeout_ms);
  free(rec);
  return rc;
}

int la_secure_recv_msg(int fd, la_secure_t *s, uint32_t max_payload,
                       int timeout_ms, uint16_t *type, ProtobufCMessage **msg,
                       int *sealed, char *why, size_t why_len) {
  uint8_t hdr[LA_FRAME_HEADER_LEN];
  uint64_t deadline = la_now_ms() + (uint64_t)timeout_ms;
  *sealed = 0;
  int rc = la_read_all(fd, hdr, sizeof hdr, timeout_ms);
  if (rc)
    return la_errorf(
        why, why_len, rc, "%s",
        rc == LA_ETIMEDOUT ? "no answer in time" : "connection closed by peer");
  uint16_t t;
  uint32_t len;
  uint32_t outer_max = max_payload > UINT32_MAX - LA_SECURE_OVERHEAD
                           ? UINT32_MAX
                           : max_payload + LA_SECURE_OVERHEAD;
  rc = la_frame_header_parse(hdr, outer_max, &t, &len);
  if (rc)
    return la_errorf(why, why_len, rc, "%s",
                     rc == LA_EMSGSIZE ? "frame larger than the maximum"
                                       : "bad frame header");
  uint8_t *payload = malloc(len ? len : 1);
  if (!payload) return LA_ENOMEM;
  uint64_t now = la_now_ms();
  rc =
      la_read_all(fd, payload, len, now < deadline ? (int)(deadline - now) : 0);
  if (rc) {
    free(payload);
    return la_errorf(why, why_len, rc, "truncated frame");
  }
  if (t != LA__MSG_TYPE__MSG_SEALED) {
    rc = len > max_payload ? la_errorf(why, why_len, LA_EMSGSIZE,
                                       "frame larger than the maximum")
                           : la_msg_decode(t, payload, len, msg, why, why_len);
    free(payload);
    if (rc == 0) *type = t;
    return rc;
  }
  uint8_t *buf;
  const uint8_t *inner;
  uint32_t ilen;
  rc = la_secure_open(s, payload, len, max_payload, &buf, &t, &inner, &ilen,
                      why, why_len);
  free(payload);
  if (rc) return rc;
  rc = la_msg_decode(t, inner, ilen, msg, why, why_len);
  free(buf);
  if (rc == 0) {
    *type = t;
    *sealed = 1;
  }
  return rc;
}

int la_secure_client_handshake(int fd, const la_auth_key_t *key,
                               const char *host, la_cipher_pref_t pref,
                               int timeout_ms, la_secure_t *s,
                               int32_t *status, uint64_t *next_seq, char *why,
                               size_t why_len) {
  uint8_t an[LA_AUTH_NONCE_BYTES], hdr[LA_SECURE_HEADER_BYTES];
  la_auth_session_t ses;
  la_secure_init(s);
  la_auth_make_nonce(an);
  La__Hello h = LA__HELLO__INIT;
  h.protocol = LA_PROTOCOL_VERSION;
  h.host = (char *)host;
  h.has_agent_nonce = 1;
  h.agent_nonce.data = an;
  h.agent_nonce.len = sizeof an;
  uint32_t offer[LA_CIPHER_OFFER_MAX];
  h.n_ciphers = la_cipher_offer(pref, offer);
  h.ciphers = offer;
  int rc = la_send_msg(fd, LA__MSG_TYPE__MSG_HELLO, &h.base, timeout_ms);
  if (rc) return la_errorf(why, why_len, rc, "sending Hello failed");
  uint16_t type;
  ProtobufCMessage *m = NULL;
  int sealed;
  rc = la_secure_recv_msg(fd, s, 1 << 16, timeout_ms, &type, &m, &sealed, why,
                          why_len);
  if (rc) return rc;
  if (type == LA__MSG_TYPE__MSG_AUTH_RESULT) { /* refused at Hello */
    *status = ((La__AuthResult *)m)->status;
    la_errorf(why, why_len, 0, "%s",
              ((La__AuthResult *)m)->message ? ((La__AuthResult *)m)->message
                                             : "refused");
    la_msg_free(m);
    return 0;
  }
  if (type != LA__MSG_TYPE__MSG_CHALLENGE) {
    la_msg_free(m);
    return la_errorf(why, why_len, LA_EPROTO, "expected Challenge, got %s",
                     la_msg_name(type));
  }
  La__Challenge *c = (La__Challenge *)m;
  size_t n_bind = h.n_ciphers; /* 0: an older GlobalAgent, as before */
  const char *bad =
      la_cipher_choice_problem(offer, &n_bind, c->has_cipher, c->cipher);
  if (bad) {
    rc = la_errorf(why, why_len, LA_EAUTH, "the GlobalAgent: %s", bad);
    la_msg_free(m);
    return rc;
  }
  if (!c->server || !c->has_stream_header ||
      la_auth_session_derive_neg(key, LA_PROTOCOL_VERSION, host, c->server, an,
                                 sizeof an, c->nonce.data, c->nonce.len, offer,
                                 n_bind, c->cipher, &ses) != 0 ||
      la_secure_set_cipher(s, n_bind ? c->cipher : LA_CIPHER_XCHACHA20) != 0 ||
      la_secure_start_rx(s, ses.key_g2a, c->stream_header.data,
                         c->stream_header.len) != 0) {
    la_msg_free(m);
    la_auth_session_wipe(&ses);
    return la_errorf(why, why_len, LA_EAUTH,
                     "the GlobalAgent's Challenge lacks what mutual "
                     "authentication needs (server, stream header, nonce)");
  }
  la_msg_free(m);
  la_secure_start_tx(s, ses.key_a2g, hdr);
  La__Auth a = LA__AUTH__INIT;
  a.mac.data = ses.agent_proof;
  a.mac.len = sizeof ses.agent_proof;
  a.has_stream_header = 1;
  a.stream_header.data = hdr;
  a.stream_header.len = sizeof hdr;
  rc = la_send_msg(fd, LA__MSG_TYPE__MSG_AUTH, &a.base, timeout_ms);
  if (rc) {
    la_auth_session_wipe(&ses);
    return la_errorf(why, why_len, rc, "sending Auth failed");
  }
  rc = la_secure_recv_msg(fd, s, 1 << 16, timeout_ms, &type, &m, &sealed, why,
                          why_len);
  if (rc) {
    la_auth_session_wipe(&ses);
    return rc == LA_EAUTH ? la_errorf(why, why_len, LA_EAUTH,
                                      "the GlobalAgent failed to prove the "
                                      "secret (its record does not "
                                      "authenticate)")
                          : rc;
  }
  if (type != LA__MSG_TYPE__MSG_AUTH_RESULT) {
    la_msg_free(m);
    la_auth_session_wipe(&ses);
    return la_errorf(why, why_len, LA_EPROTO, "expected AuthResult, got %s",
                     la_msg_name(type));
  }
  La__AuthResult *r = (La__AuthResult *)m;
  rc = 0;
  if (r->status != 0) { /* a refusal may come in clear */
    *status = r->status;
    la_errorf(why, why_len, 0, "%s", r->message ? r->message : "refused");
  } else if (!sealed ||
             la_auth_proof_check(
                 ses.server_proof, r->server_proof.data,
                 r->has_server_proof ? r->server_proof.len : 0) != 0) {
    rc = la_errorf(why, why_len, LA_EAUTH,
                   "the GlobalAgent failed to prove the secret");
  } else {
    *status = 0;
    *next_seq = r->has_next_seq ? r->next_seq : 1;
  }
  la_msg_free(m);
  la_auth_session_wipe(&ses);
  return rc;
}
