/* SPDX-License-Identifier: BSD-3-Clause */
/* uplink_link.c: one connection of the LocalAgent to one GlobalAgent (a
 * shard; uplink_link.h). Connects (numeric address), says Hello, and
 * authenticates (la__handshake_*): with a secret configured the handshake is
 * mutual (docs/protocol.md, "Handshake") and the GlobalAgent must prove the
 * secret too, in its AuthResult, which is the first encrypted record; after
 * it every frame both ways is a record (daemon/la_secure.h: la__link_seal /
 * la__link_open), and a GlobalAgent that fails its proof is refused before
 * anything is sent or acknowledged. Without a secret it answers the
 * Challenge in clear (logged at start). When the link fails — refused,
 * closed, garbage, a wrong secret, no answer within 10 s — it reconnects with
 * exponential backoff (reconnect_min..reconnect_max, with jitter). What is
 * sent, and what an acknowledgement or a failure means for the queue, is
 * uplink.c's, told through the link's events.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "la_errors.h"
#include "la_log.h"
#include "uplink_link.h"

#define LA__HANDSHAKE_MS 10000

static const char *la__state_names[] = {
    "none",           "backoff",   "connecting", "hello",
    "authenticating", "connected", "stopped"};

typedef struct {
  uv_write_t req;
  la_uplink_link_t *up;
  uint64_t epoch;
  size_t len;
  uint8_t data[];
} la__upwr_t;

static int la__write_req(la_uplink_link_t *up, la__upwr_t *w);

static void la__on_timer(uv_timer_t *t) {
  la_uplink_link_t *up = t->data;
  if (up->state == LA_UP_BACKOFF)
    la_uplink_link_connect(up);
  else if (up->state >= LA_UP_CONNECTING && up->state < LA_UP_READY)
    la_uplink_link_fail(up, "no handshake within %d ms", LA__HANDSHAKE_MS);
}

/* Seeds the jitter generator from the kernel (getrandom), falling back to
 * the pid and the clock: agents restarted together must not reconnect in
 * step. */
static void la__rand_seed(la_uplink_link_t *up) {
  uint64_t s = 0;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s)
    s = ((uint64_t)getpid() << 32) ^ uv_hrtime();
  up->rng = s ? s : 0x9e3779b97f4a7c15ull;
}

static uint64_t la__rand(la_uplink_link_t *up) {
  uint64_t x = up->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  up->rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

static void la__on_tcp_closed(uv_handle_t *h) {
  la_uplink_link_t *up = h->data;
  up->tcp_open = 0;
  if (up->state != LA_UP_BACKOFF) return;
  /* backoff with +-25% jitter, from this agent's own generator */
  int64_t d = up->backoff_ms;
  double u = (double)(la__rand(up) >> 11) / 9007199254740992.0; /* [0,1) */
  d += (int64_t)((double)d * 0.5 * (u - 0.5));
  uv_timer_start(&up->timer, la__on_timer, (uint64_t)(d > 1 ? d : 1), 0);
  up->backoff_ms *= 2;
  if (up->backoff_ms > up->ag->set.reconnect_max_ms)
    up->backoff_ms = up->ag->set.reconnect_max_ms;
}

void la_uplink_link_fail(la_uplink_link_t *up, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(up->last_error, sizeof up->last_error, fmt, ap);
  va_end(ap);
  if (up->state == LA_UP_STOPPED) return;
  if (up->quiet_fail)
    ;
  else if (up->state == LA_UP_READY || up->connects <= 1 ||
           up->backoff_ms >= up->ag->set.reconnect_max_ms)
    la_log_warnx("GlobalAgent %s: %s; retrying", up->addr_s, up->last_error);
  else
    la_log_debug("GlobalAgent %s: %s", up->addr_s, up->last_error);
  /* only a connected link was sent messages: with several shards, the
   * retries of one that is down must not make the others resend */
  int was_ready = up->state == LA_UP_READY;
  /* a link that stayed up a while without an Ack (nothing to send) was
   * healthy: a GlobalAgent restart is retried quickly */
  if (was_ready && uv_now(up->ag->loop) - up->ready_ms >=
                       (uint64_t)up->ag->set.reconnect_max_ms)
    up->backoff_ms = up->ag->set.reconnect_min_ms;
  up->state = LA_UP_BACKOFF;
  up->epoch++;
  up->inflight = 0;
  /* a GlobalAgent whose database is down is not a failed shard: moving
   * the applications to another one that shares the database would only
   * split their jobs (docs/sharding.md) */
  up->failing = !up->store_fail;
  if (!up->store_fail) up->store_wait = 0; /* failed otherwise since */
  up->store_fail = 0;
  up->ev->failed(up, was_ready);
  uv_timer_stop(&up->timer);
  la_frame_reader_free(&up->rd);
  la_auth_session_wipe(&up->ses);
  la_secure_wipe(&up->sec);
  if (up->tcp_open && !uv_is_closing((uv_handle_t *)&up->tcp))
    uv_close((uv_handle_t *)&up->tcp, la__on_tcp_closed);
  else if (!up->tcp_open)
    la__on_tcp_closed((uv_handle_t *)&up->tcp);
}

static void la__on_write(uv_write_t *req, int status) {
  la__upwr_t *w = (la__upwr_t *)req;
  la_uplink_link_t *up = w->up;
  int current = w->epoch == up->epoch;
  if (current) up->inflight -= w->len;
  free(w);
  if (!current || up->state == LA_UP_STOPPED) return;
  if (status < 0)
    la_uplink_link_fail(up, "write: %s", uv_strerror(status));
  else
    up->ev->ready(up);
}

/* la__write's transform once the link is encrypted: the record carrying the
 * frame, in a write request of its own. NULL when out of memory. */
static la__upwr_t *la__link_seal(la_uplink_link_t *up, const uint8_t *bytes,
                                 size_t len) {
  size_t cap = la_secure_record_size(len);
  la__upwr_t *w = malloc(sizeof *w + cap);
  if (!w) return NULL;
  long n = la_secure_seal(&up->sec, bytes, len, w->data, cap);
  if (n < 0) {
    free(w);
    return NULL;
  }
  w->len = (size_t)n;
  return w;
}

int la_uplink_link_write(la_uplink_link_t *up, const uint8_t *bytes,
                         size_t len) {
  if (up->sec.tx_on) {
    la__upwr_t *w = la__link_seal(up, bytes, len);
    if (!w) {
      la_uplink_link_fail(up, "cannot seal a record");
      return LA_ENOMEM;
    }
    return la__write_req(up, w);
  }
  la__upwr_t *w = malloc(sizeof *w + len);
  if (!w) { /* the message counts as sent: resend it after a reconnect */
    la_uplink_link_fail(up, "out of memory");
    return LA_ENOMEM;
  }
  w->len = len;
  memcpy(w->data, bytes, len);
  return la__write_req(up, w);
}

/* Writes w (its data and len set; taken over). Returns 0 or LA_EIO. */
static int la__write_req(la_uplink_link_t *up, la__upwr_t *w) {
  size_t len = w->len;
  w->up = up;
  w->epoch = up->epoch;
  uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
  int rc = uv_write(&w->req, (uv_stream_t *)&up->tcp, &b, 1, la__on_write);
  if (rc != 0) {
    free(w);
    la_uplink_link_fail(up, "write: %s", uv_strerror(rc));
    return LA_EIO;
  }
  up->inflight += len;
  return 0;
}

static int la__write_msg(la_uplink_link_t *up, uint16_t type,
                         const ProtobufCMessage *m) {
  uint8_t *buf;
  size_t len;
  int rc = la_frame_pack(type, m, &buf, &len);
  if (rc) return rc;
  rc = la_uplink_link_write(up, buf, len);
  free(buf);
  return rc;
}

/* ------------------------------------------------------------ handshake */

/* Sends Hello; with a secret, with this connection's fresh nonce. */
static void la__handshake_hello(la_uplink_link_t *up) {
  La__Hello h = LA__HELLO__INIT;
  h.protocol = LA_PROTOCOL_VERSION;
  h.host = up->ag->host;
  h.agent_version = LA_AGENT_VERSION;
  if (up->ag->instance[0]) h.instance = up->ag->instance;
  if (up->have_key) {
    la_auth_make_nonce(up->anonce);
    h.has_agent_nonce = 1;
    h.agent_nonce.data = up->anonce;
    h.agent_nonce.len = sizeof up->anonce;
    la_cipher_pref_t pref = LA_CIPHER_AUTO; /* validated at start */
    la_cipher_parse("global.cipher", up->ag->set.cipher, 1, &pref, NULL, 0);
    up->n_offer = la_cipher_offer(pref, up->offer);
    h.n_ciphers = up->n_offer;
    h.ciphers = up->offer;
  }
  up->state = LA_UP_HELLO;
  la__write_msg(up, LA__MSG_TYPE__MSG_HELLO, &h.base);
}

/* Ends a handshake this side refuses, after the caller logged why: longest
 * backoff, nothing sent or acknowledged. */
static void la__handshake_end(la_uplink_link_t *up, const char *why) {
  up->backoff_ms = up->ag->set.reconnect_max_ms;
  up->quiet_fail = 1;
  la_uplink_link_fail(up, "GlobalAgent refused: %s", why);
  up->quiet_fail = 0;
}

/* Refuses a GlobalAgent that did not prove the secret: logged once per
 * failure at error level. */
static void la__handshake_refuse(la_uplink_link_t *up, const char *why) {
  la_log_error(
      "GlobalAgent %s failed to prove the shared secret (%s): "
      "refusing it (check global.secret_file on both agents, and "
      "that this address is the GlobalAgent)",
      up->addr_s, why);
  la__handshake_end(up, why);
}

/* 0 when the Challenge's cipher answers this connection's offer (*n: the
 * offered ids the session binds; 0 with a GlobalAgent older than cipher
 * negotiation, talked to as before), else logs why and refuses the
 * GlobalAgent. */
static int la__handshake_cipher(la_uplink_link_t *up, const La__Challenge *c,
                                size_t *n) {
  *n = up->n_offer;
  const char *why =
      la_cipher_choice_problem(up->offer, n, c->has_cipher, c->cipher);
  if (!why) {
    if (up->n_offer && !*n)
      la_log_info("GlobalAgent %s predates cipher negotiation: XChaCha20, "
                  "as before",
                  up->addr_s);
    return 0;
  }
  la_log_error("GlobalAgent %s: %s: refusing it (global.cipher = %s; "
               "a GlobalAgent older than cipher negotiation needs xchacha20, "
               "auto or legacy here)",
               up->addr_s, why, up->ag->set.cipher);
  la__handshake_end(up, why);
  return -1;
}

/* Challenge: with a secret, derives the session, starts both streams and
 * proves the secret; without, answers the one-way MAC as before. */
static void la__handshake_challenge(la_uplink_link_t *up,
                                    const La__Challenge *c) {
  La__Auth a = LA__AUTH__INIT;
  uint8_t mac[LA_AUTH_MAC_BYTES], hdr[LA_SECURE_HEADER_BYTES];
  if (!up->have_key) {
    if (la_auth_mac(&up->key, c->nonce.data, c->nonce.len, up->ag->host, mac)) {
      la_uplink_link_fail(up, "cannot compute the authentication answer");
      return;
    }
    a.mac.data = mac;
    a.mac.len = sizeof mac;
    up->state = LA_UP_AUTH;
    la__write_msg(up, LA__MSG_TYPE__MSG_AUTH, &a.base);
    return;
  }
  if (!c->server || !c->has_stream_header) {
    La__Error e = LA__ERROR__INIT;
    e.code = LA_EAUTH;
    e.message =
        "this LocalAgent requires mutual authentication (configure "
        "agents.secret_file on the GlobalAgent)";
    la__write_msg(up, LA__MSG_TYPE__MSG_ERROR, &e.base);
    la__handshake_refuse(up,
                         "it offers no mutual authentication: no secret "
                         "configured there, or not the GlobalAgent");
    return;
  }
  size_t n_bind;
  if (la__handshake_cipher(up, c, &n_bind) != 0) return;
  /* the name the proofs cover: with the instance when the GlobalAgent took
   * it, else the host alone (an older GlobalAgent) */
  char ident[LA_AUTH_IDENT_MAX + 1];
  la_auth_identity(up->ag->host,
                   c->has_instance_bound && c->instance_bound
                       ? up->ag->instance
                       : NULL,
                   ident, sizeof ident);
  la_secure_init(&up->sec);
  if (la_auth_session_derive_neg(&up->key, LA_PROTOCOL_VERSION, ident,
                                 c->server, up->anonce, sizeof up->anonce,
                                 c->nonce.data, c->nonce.len, up->offer,
                                 n_bind, c->cipher, &up->ses) != 0 ||
      la_secure_set_cipher(&up->sec,
                           n_bind ? c->cipher : LA_CIPHER_XCHACHA20) != 0 ||
      la_secure_start_rx(&up->sec, up->ses.key_g2a, c->stream_header.data,
                         c->stream_header.len) != 0) {
    la__handshake_refuse(up, "a malformed Challenge");
    return;
  }
  a.mac.data = up->ses.agent_proof;
  a.mac.len = sizeof up->ses.agent_proof;
  la_secure_start_tx(&up->sec, up->ses.key_a2g, hdr);
  a.has_stream_header = 1;
  a.stream_header.data = hdr;
  a.stream_header.len = sizeof hdr;
  up->state = LA_UP_AUTH;
  /* Auth itself goes in clear: the GlobalAgent switches after checking it */
  uint64_t epoch = up->epoch;
  up->sec.tx_on = 0;
  la__write_msg(up, LA__MSG_TYPE__MSG_AUTH, &a.base);
  if (up->epoch == epoch) up->sec.tx_on = 1; /* not if the write failed */
}

/* AuthResult: a refusal (clear or sealed) is logged; an acceptance must be
 * sealed and carry the GlobalAgent's proof, else the GlobalAgent is refused.
 */
/* The GlobalAgent's store is unavailable (it said so, code LA_EIO): the
 * link closes and is retried after the backoff, and its applications stay
 * routed to it; what it did not acknowledge goes again once it is back. */
static void la__store_wait(la_uplink_link_t *up, const char *msg) {
  if (!up->store_wait)
    la_log_warnx("GlobalAgent %s: its store is unavailable (%s): waiting for "
                 "it, not moving applications", up->addr_s,
                 msg ? msg : "no reason given");
  up->store_wait = up->store_fail = 1;
  up->quiet_fail = 1; /* just logged */
  la_uplink_link_fail(up, "store unavailable: %s", msg ? msg : "-");
  up->quiet_fail = 0;
}

static void la__handshake_result(la_uplink_link_t *up, const La__AuthResult *r,
                                 int sealed) {
  la_agent_t *ag = up->ag;
  if (r->status == LA_EIO) { /* its store is unavailable: wait for it */
    la__store_wait(up, r->message);
    return;
  }
  if (r->status != 0) {
    /* LA_EREFUSED: its host name is held by another LocalAgent (the
     * message says so and what to do); anything else is the secret's */
    la_log_error(
        "GlobalAgent %s refused this agent: %s%s", up->addr_s,
        r->message ? r->message : la_strerror(r->status),
        r->status == LA_EREFUSED
            ? "; retrying every global.reconnect_max"
            : " (check global.secret_file on both agents)");
    up->backoff_ms = ag->set.reconnect_max_ms;
    up->quiet_fail = 1; /* just logged */
    la_uplink_link_fail(up, "authentication refused: %s",
                        r->message ? r->message : la_strerror(r->status));
    up->quiet_fail = 0;
    return;
  }
  if (up->have_key &&
      (!sealed || la_auth_proof_check(
                      up->ses.server_proof, r->server_proof.data,
                      r->has_server_proof ? r->server_proof.len : 0) != 0)) {
    la__handshake_refuse(up, sealed ? "its proof does not verify"
                                    : "it accepted this agent in clear");
    return;
  }
  la_auth_session_wipe(&up->ses); /* the streams keep what they need */
  up->state = LA_UP_READY;
  up->failing = 0;
  if (up->store_wait)
    la_log_info("GlobalAgent %s: connected again after its store came back",
                up->addr_s);
  up->store_wait = 0;
  uv_timer_stop(&up->timer);
  /* the backoff is reset by progress (an Ack), not by a handshake: a
   * GlobalAgent that accepts the link and then closes it at the first
   * message (one it refuses) is retried ever more slowly, up to
   * reconnect_max, not at reconnect_min for ever */
  up->ready_ms = uv_now(ag->loop);
  up->last_error[0] = '\0';
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  la_log_info("GlobalAgent %s: connected%s; %llu messages to send", up->addr_s,
              up->have_key ? " (mutually authenticated, encrypted)"
                           : " (UNENCRYPTED: no secret)",
              (unsigned long long)q.items);
  up->ev->ready(up);
}

static void la__on_frame(la_uplink_link_t *up, uint16_t type, const uint8_t *p,
                         uint32_t len, int sealed) {
  ProtobufCMessage *m = NULL;
  char why[240];
  if (la_msg_decode(type, p, len, &m, why, sizeof why) != 0) {
    la_uplink_link_fail(up, "bad message: %s", why);
    return;
  }
  if (type == LA__MSG_TYPE__MSG_ERROR && ((La__Error *)m)->code == LA_EIO) {
    la__store_wait(up, ((La__Error *)m)->message);
  } else if (type == LA__MSG_TYPE__MSG_ERROR) {
    la_uplink_link_fail(up, "GlobalAgent error: %s", ((La__Error *)m)->message);
  } else if (up->state == LA_UP_HELLO && type == LA__MSG_TYPE__MSG_CHALLENGE) {
    la__handshake_challenge(up, (La__Challenge *)m);
  } else if ((up->state == LA_UP_AUTH ||
              (up->state == LA_UP_HELLO && ((La__AuthResult *)m)->status)) &&
             type == LA__MSG_TYPE__MSG_AUTH_RESULT) {
    la__handshake_result(up, (La__AuthResult *)m, sealed);
  } else if (up->state == LA_UP_READY &&
             type == LA__MSG_TYPE__MSG_RANK_REFUSED) {
    la_agent_rank_refused(up->ag, (La__RankRefused *)m);
  } else if (up->state == LA_UP_READY && type == LA__MSG_TYPE__MSG_ACK) {
    up->backoff_ms = up->ag->set.reconnect_min_ms; /* progress */
    up->ev->acked(up, ((La__Ack *)m)->seq);
  } else {
    la_uplink_link_fail(up, "unexpected %s", la_msg_name(type));
  }
  la_msg_free(m);
}

/* la__on_read's transform once the link is encrypted: a record is opened and
 * its frame handled; a clear frame is taken only while waiting for
 * AuthResult (a refusal in clear is how a GlobalAgent says no); anything else
 * fails the link with the reason. */
static void la__link_open(la_uplink_link_t *up, uint16_t type, const uint8_t *p,
                          uint32_t len) {
  if (type != LA__MSG_TYPE__MSG_SEALED) {
    if (up->state == LA_UP_AUTH && (type == LA__MSG_TYPE__MSG_AUTH_RESULT ||
                                    type == LA__MSG_TYPE__MSG_ERROR))
      la__on_frame(up, type, p, len, 0);
    else
      la_uplink_link_fail(up, "%s in clear on the encrypted link: closing",
                          la_msg_name(type));
    return;
  }
  uint8_t *buf;
  const uint8_t *ip;
  uint32_t ilen;
  uint16_t itype;
  char why[240];
  int rc = la_secure_open(&up->sec, p, len, up->rd.max_payload, &buf, &itype,
                          &ip, &ilen, why, sizeof why);
  if (rc != 0) {
    if (up->state == LA_UP_AUTH && rc == LA_EAUTH)
      la__handshake_refuse(up, "its first record does not authenticate");
    else
      la_uplink_link_fail(up, "%s: closing", why);
    return;
  }
  la__on_frame(up, itype, ip, ilen, 1);
  free(buf);
}

static void la__alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  size_t n = suggested < 65536 ? suggested : 65536;
  buf->base = malloc(n);
  buf->len = buf->base ? n : 0;
}

static void la__on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  la_uplink_link_t *up = st->data;
  if (nread < 0) {
    free(buf->base);
    la_uplink_link_fail(
        up, "%s",
        nread == UV_EOF ? "connection closed" : uv_strerror((int)nread));
    return;
  }
  int rc =
      nread > 0 ? la_frame_reader_feed(&up->rd, buf->base, (size_t)nread) : 0;
  free(buf->base);
  uint64_t epoch = up->epoch;
  uint16_t type;
  const uint8_t *p;
  uint32_t len;
  while (rc == 0 && up->epoch == epoch &&
         (rc = la_frame_reader_next(&up->rd, &type, &p, &len)) == 1) {
    rc = 0;
    if (up->sec.rx_on) {
      la__link_open(up, type, p, len);
      continue;
    }
    la__on_frame(up, type, p, len, 0);
  }
  if (rc < 0 && up->epoch == epoch) la_uplink_link_fail(up, "malformed frame");
}

static void la__on_connect(uv_connect_t *req, int status) {
  la_uplink_link_t *up = req->data;
  if (up->state != LA_UP_CONNECTING) return;
  if (status < 0) {
    la_uplink_link_fail(up, "connect: %s", uv_strerror(status));
    return;
  }
  up->connects++;
  uv_tcp_nodelay(&up->tcp, 1);
  la_frame_reader_init(&up->rd, 16u << 20);
  uv_read_start((uv_stream_t *)&up->tcp, la__alloc, la__on_read);
  la__handshake_hello(up);
}

void la_uplink_link_connect(la_uplink_link_t *up) {
  uv_tcp_init(up->ag->loop, &up->tcp);
  up->tcp.data = up;
  up->tcp_open = 1;
  up->state = LA_UP_CONNECTING;
  up->conn.data = up;
  int rc = uv_tcp_connect(&up->conn, &up->tcp, (struct sockaddr *)&up->addr,
                          la__on_connect);
  if (rc != 0) {
    la_uplink_link_fail(up, "connect: %s", uv_strerror(rc));
    return;
  }
  uv_timer_start(&up->timer, la__on_timer, LA__HANDSHAKE_MS, 0);
}

void la_uplink_link_init(la_uplink_link_t *up, const la_auth_key_t *key,
                         int have_key) {
  uv_timer_init(up->ag->loop, &up->timer);
  up->timer.data = up;
  up->backoff_ms = up->ag->set.reconnect_min_ms;
  la__rand_seed(up);
  if (have_key) up->key = *key;
  up->have_key = have_key;
}

void la_uplink_link_stop(la_uplink_link_t *up) {
  up->state = LA_UP_STOPPED;
  up->epoch++;
  la_auth_key_wipe(&up->key);
  la_auth_session_wipe(&up->ses);
  la_secure_wipe(&up->sec);
  la_frame_reader_free(&up->rd);
}

const char *la_uplink_link_state_name(const la_uplink_link_t *up) {
  return la__state_names[up->state];
}
