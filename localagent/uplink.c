/* uplink.c: the LocalAgent's one persistent connection to the GlobalAgent.
 *
 * Connects (numeric address), says Hello, and authenticates (la__handshake_*):
 * with a secret configured the handshake is mutual (docs/protocol.md,
 * "Handshake") and the GlobalAgent must prove the secret too, in its
 * AuthResult, which is the first encrypted record; after it every frame both
 * ways is a record (common/la_secure.h: la__link_seal / la__link_open), and a
 * GlobalAgent that fails its proof is refused before anything is sent or
 * acknowledged. Without a secret it answers the Challenge as before, in
 * clear (logged at start). Once AuthResult says yes it sends
 * every queued message (RankStart, CompactTrace, TraceMissing, RankEnd) in
 * sequence order,
 * at most 4 MiB unacknowledged on the socket at a time. Acks are cumulative;
 * an acknowledged message leaves the queue (outq.c), and only then. When the
 * link fails — refused, closed, garbage, a wrong secret, no answer within 10 s
 * — it reconnects with exponential backoff (reconnect_min..reconnect_max,
 * with jitter) and resends everything unacknowledged: the GlobalAgent
 * deduplicates by (app, rank, cycle). Starting without a GlobalAgent is
 * normal: messages wait in the log (outq.h). Knows nothing of
 * applications; session.c, worker.c and main.c hand it messages, which are
 * written to the log (la_uplink_log, any thread) before they are queued.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "agent.h"
#include "la_auth.h"
#include "la_errors.h"
#include "la_secure.h"
#include "la_log.h"
#include "la_sockio.h"

#define LA__INFLIGHT_MAX (4u << 20)
#define LA__HANDSHAKE_MS 10000

enum {
  LA__UP_NONE = 0,  /* no GlobalAgent configured */
  LA__UP_BACKOFF,   /* waiting to reconnect */
  LA__UP_CONNECTING,
  LA__UP_HELLO,     /* Hello sent, waiting for the Challenge */
  LA__UP_AUTH,      /* Auth sent, waiting for AuthResult */
  LA__UP_READY,
  LA__UP_STOPPED
};

static const char *la__state_names[] = {"none", "backoff", "connecting",
                                        "hello", "authenticating",
                                        "connected", "stopped"};

typedef struct la_uplink {
  la_agent_t *ag;
  int state;
  uv_tcp_t tcp;
  int tcp_open;
  uv_connect_t conn;
  uv_timer_t timer;
  struct sockaddr_storage addr;
  la_frame_reader_t rd;
  la_auth_key_t key;
  int have_key;                       /* mutual handshake, records */
  uint8_t anonce[LA_AUTH_NONCE_BYTES]; /* this connection's nonce */
  la_auth_session_t ses;
  la_secure_t sec;
  int64_t backoff_ms;
  uint64_t connects, epoch;
  size_t inflight;
  char last_error[256];
  int quiet_fail; /* the failure was logged already */
  uint64_t rng;   /* jitter generator state (xorshift64*), seeded per process */
} la_uplink_t;

typedef struct {
  uv_write_t req;
  la_uplink_t *up;
  uint64_t epoch;
  size_t len;
  uint8_t data[];
} la__upwr_t;

static void la__fail(la_uplink_t *up, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void la__pump(la_uplink_t *up);
static void la__connect(la_uplink_t *up);
static int la__write_req(la_uplink_t *up, la__upwr_t *w);

static void la__on_timer(uv_timer_t *t) {
  la_uplink_t *up = t->data;
  if (up->state == LA__UP_BACKOFF) la__connect(up);
  else if (up->state >= LA__UP_CONNECTING && up->state < LA__UP_READY)
    la__fail(up, "no handshake within %d ms", LA__HANDSHAKE_MS);
}

/* Seeds the jitter generator from the kernel (getrandom), falling back to
 * the pid and the clock: agents restarted together must not reconnect in
 * step. */
static void la__rand_seed(la_uplink_t *up) {
  uint64_t s = 0;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s)
    s = ((uint64_t)getpid() << 32) ^ uv_hrtime();
  up->rng = s ? s : 0x9e3779b97f4a7c15ull;
}

static uint64_t la__rand(la_uplink_t *up) {
  uint64_t x = up->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  up->rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

static void la__on_tcp_closed(uv_handle_t *h) {
  la_uplink_t *up = h->data;
  up->tcp_open = 0;
  if (up->state != LA__UP_BACKOFF) return;
  /* backoff with +-25% jitter, from this agent's own generator */
  int64_t d = up->backoff_ms;
  double u = (double)(la__rand(up) >> 11) / 9007199254740992.0; /* [0,1) */
  d += (int64_t)((double)d * 0.5 * (u - 0.5));
  uv_timer_start(&up->timer, la__on_timer, (uint64_t)(d > 1 ? d : 1), 0);
  up->backoff_ms *= 2;
  if (up->backoff_ms > up->ag->set.reconnect_max_ms)
    up->backoff_ms = up->ag->set.reconnect_max_ms;
}

static void la__fail(la_uplink_t *up, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(up->last_error, sizeof up->last_error, fmt, ap);
  va_end(ap);
  if (up->state == LA__UP_STOPPED) return;
  if (up->quiet_fail)
    ;
  else if (up->state == LA__UP_READY || up->connects <= 1 ||
      up->backoff_ms >= up->ag->set.reconnect_max_ms)
    la_log_warnx("GlobalAgent %s: %s; retrying", up->ag->set.global,
                 up->last_error);
  else
    la_log_debug("GlobalAgent %s: %s", up->ag->set.global, up->last_error);
  up->state = LA__UP_BACKOFF;
  up->epoch++;
  up->inflight = 0;
  la_outq_rewind(up->ag->q);
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
  la_uplink_t *up = w->up;
  int current = w->epoch == up->epoch;
  if (current) up->inflight -= w->len;
  free(w);
  if (!current || up->state == LA__UP_STOPPED) return;
  if (status < 0) la__fail(up, "write: %s", uv_strerror(status));
  else la__pump(up);
}

/* la__write's transform once the link is encrypted: the record carrying the
 * frame, in a write request of its own. NULL when out of memory. */
static la__upwr_t *la__link_seal(la_uplink_t *up, const uint8_t *bytes,
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

static int la__write(la_uplink_t *up, const uint8_t *bytes, size_t len) {
  if (up->sec.tx_on) {
    la__upwr_t *w = la__link_seal(up, bytes, len);
    if (!w) {
      la__fail(up, "cannot seal a record");
      return LA_ENOMEM;
    }
    return la__write_req(up, w);
  }
  la__upwr_t *w = malloc(sizeof *w + len);
  if (!w) { /* the message counts as sent: resend it after a reconnect */
    la__fail(up, "out of memory");
    return LA_ENOMEM;
  }
  w->len = len;
  memcpy(w->data, bytes, len);
  return la__write_req(up, w);
}

/* Writes w (its data and len set; taken over). Returns 0 or LA_EIO. */
static int la__write_req(la_uplink_t *up, la__upwr_t *w) {
  size_t len = w->len;
  w->up = up;
  w->epoch = up->epoch;
  uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
  int rc = uv_write(&w->req, (uv_stream_t *)&up->tcp, &b, 1, la__on_write);
  if (rc != 0) {
    free(w);
    la__fail(up, "write: %s", uv_strerror(rc));
    return LA_EIO;
  }
  up->inflight += len;
  return 0;
}

static int la__write_msg(la_uplink_t *up, uint16_t type,
                         const ProtobufCMessage *m) {
  uint8_t *buf;
  size_t len;
  int rc = la_frame_pack(type, m, &buf, &len);
  if (rc) return rc;
  rc = la__write(up, buf, len);
  free(buf);
  return rc;
}

static void la__pump(la_uplink_t *up) {
  while (up->state == LA__UP_READY && up->inflight < LA__INFLIGHT_MAX) {
    uint64_t seq;
    const uint8_t *bytes;
    size_t len;
    int rc = la_outq_next(up->ag->q, &seq, &bytes, &len);
    if (rc == 0) break;
    if (rc == LA_EIO) continue; /* a corrupt spool file, set aside: next */
    if (rc < 0) {              /* out of memory: try again later */
      la__fail(up, "reading the queue: %s", la_strerror(rc));
      break;
    }
    if (la__write(up, bytes, len) != 0) break;
  }
}

/* ------------------------------------------------------------ handshake */

/* Sends Hello; with a secret, with this connection's fresh nonce. */
static void la__handshake_hello(la_uplink_t *up) {
  La__Hello h = LA__HELLO__INIT;
  h.protocol = LA_PROTOCOL_VERSION;
  h.host = up->ag->host;
  h.agent_version = LA_AGENT_VERSION;
  if (up->have_key) {
    la_auth_make_nonce(up->anonce);
    h.has_agent_nonce = 1;
    h.agent_nonce.data = up->anonce;
    h.agent_nonce.len = sizeof up->anonce;
  }
  up->state = LA__UP_HELLO;
  la__write_msg(up, LA__MSG_TYPE__MSG_HELLO, &h.base);
}

/* Refuses a GlobalAgent that did not prove the secret: logged once per
 * failure at error level, longest backoff, nothing sent or acknowledged. */
static void la__handshake_refuse(la_uplink_t *up, const char *why) {
  la_log_error("GlobalAgent %s failed to prove the shared secret (%s): "
               "refusing it (check global.secret_file on both agents, and "
               "that this address is the GlobalAgent)", up->ag->set.global,
               why);
  up->backoff_ms = up->ag->set.reconnect_max_ms;
  up->quiet_fail = 1;
  la__fail(up, "GlobalAgent refused: %s", why);
  up->quiet_fail = 0;
}

/* Challenge: with a secret, derives the session, starts both streams and
 * proves the secret; without, answers the one-way MAC as before. */
static void la__handshake_challenge(la_uplink_t *up, const La__Challenge *c) {
  La__Auth a = LA__AUTH__INIT;
  uint8_t mac[LA_AUTH_MAC_BYTES], hdr[LA_SECURE_HEADER_BYTES];
  if (!up->have_key) {
    if (la_auth_mac(&up->key, c->nonce.data, c->nonce.len, up->ag->host,
                    mac)) {
      la__fail(up, "cannot compute the authentication answer");
      return;
    }
    a.mac.data = mac;
    a.mac.len = sizeof mac;
    up->state = LA__UP_AUTH;
    la__write_msg(up, LA__MSG_TYPE__MSG_AUTH, &a.base);
    return;
  }
  if (!c->server || !c->has_stream_header) {
    La__Error e = LA__ERROR__INIT;
    e.code = LA_EAUTH;
    e.message = "this LocalAgent requires mutual authentication (configure "
                "agents.secret_file on the GlobalAgent)";
    la__write_msg(up, LA__MSG_TYPE__MSG_ERROR, &e.base);
    la__handshake_refuse(up, "it offers no mutual authentication: no secret "
                             "configured there, or not the GlobalAgent");
    return;
  }
  la_secure_init(&up->sec);
  if (la_auth_session_derive(&up->key, LA_PROTOCOL_VERSION, up->ag->host,
                             c->server, up->anonce, sizeof up->anonce,
                             c->nonce.data, c->nonce.len, &up->ses) != 0 ||
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
  up->state = LA__UP_AUTH;
  /* Auth itself goes in clear: the GlobalAgent switches after checking it */
  uint64_t epoch = up->epoch;
  up->sec.tx_on = 0;
  la__write_msg(up, LA__MSG_TYPE__MSG_AUTH, &a.base);
  if (up->epoch == epoch) up->sec.tx_on = 1; /* not if the write failed */
}

/* AuthResult: a refusal (clear or sealed) is logged; an acceptance must be
 * sealed and carry the GlobalAgent's proof, else the GlobalAgent is refused.
 */
static void la__handshake_result(la_uplink_t *up, const La__AuthResult *r,
                                 int sealed) {
  la_agent_t *ag = up->ag;
  if (r->status != 0) {
    la_log_error("GlobalAgent %s refused this agent: %s (check "
                 "global.secret_file on both agents)", ag->set.global,
                 r->message ? r->message : la_strerror(r->status));
    up->backoff_ms = ag->set.reconnect_max_ms;
    up->quiet_fail = 1; /* just logged */
    la__fail(up, "authentication refused: %s",
             r->message ? r->message : la_strerror(r->status));
    up->quiet_fail = 0;
    return;
  }
  if (up->have_key &&
      (!sealed || la_auth_proof_check(up->ses.server_proof,
                                      r->server_proof.data,
                                      r->has_server_proof
                                          ? r->server_proof.len
                                          : 0) != 0)) {
    la__handshake_refuse(up, sealed ? "its proof does not verify"
                                    : "it accepted this agent in clear");
    return;
  }
  la_auth_session_wipe(&up->ses); /* the streams keep what they need */
  up->state = LA__UP_READY;
  uv_timer_stop(&up->timer);
  up->backoff_ms = ag->set.reconnect_min_ms;
  up->last_error[0] = '\0';
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  la_log_info("GlobalAgent %s: connected%s; %llu messages to send",
              ag->set.global,
              up->have_key ? " (mutually authenticated, encrypted)"
                           : " (UNENCRYPTED: no secret)",
              (unsigned long long)q.items);
  la__pump(up);
}

static void la__on_frame(la_uplink_t *up, uint16_t type, const uint8_t *p,
                         uint32_t len, int sealed) {
  ProtobufCMessage *m = NULL;
  char why[240];
  if (la_msg_decode(type, p, len, &m, why, sizeof why) != 0) {
    la__fail(up, "bad message: %s", why);
    return;
  }
  la_agent_t *ag = up->ag;
  if (type == LA__MSG_TYPE__MSG_ERROR) {
    la__fail(up, "GlobalAgent error: %s", ((La__Error *)m)->message);
  } else if (up->state == LA__UP_HELLO && type == LA__MSG_TYPE__MSG_CHALLENGE) {
    la__handshake_challenge(up, (La__Challenge *)m);
  } else if ((up->state == LA__UP_AUTH ||
              (up->state == LA__UP_HELLO && ((La__AuthResult *)m)->status)) &&
             type == LA__MSG_TYPE__MSG_AUTH_RESULT) {
    la__handshake_result(up, (La__AuthResult *)m, sealed);
  } else if (up->state == LA__UP_READY && type == LA__MSG_TYPE__MSG_ACK) {
    uint64_t seq = ((La__Ack *)m)->seq;
    if (la_outq_ack(ag->q, seq) != 0)
      la_log_warnx("GlobalAgent acknowledged %llu, beyond what was sent",
                   (unsigned long long)seq);
    la__pump(up);
    la_agent_progress(ag);
  } else {
    la__fail(up, "unexpected %s", la_msg_name(type));
  }
  la_msg_free(m);
}

/* la__on_read's transform once the link is encrypted: a record is opened and
 * its frame handled; a clear frame is taken only while waiting for
 * AuthResult (a refusal in clear is how a GlobalAgent says no); anything else
 * fails the link with the reason. */
static void la__link_open(la_uplink_t *up, uint16_t type, const uint8_t *p,
                          uint32_t len) {
  if (type != LA__MSG_TYPE__MSG_SEALED) {
    if (up->state == LA__UP_AUTH && (type == LA__MSG_TYPE__MSG_AUTH_RESULT ||
                                     type == LA__MSG_TYPE__MSG_ERROR))
      la__on_frame(up, type, p, len, 0);
    else
      la__fail(up, "%s in clear on the encrypted link: closing",
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
    if (up->state == LA__UP_AUTH && rc == LA_EAUTH)
      la__handshake_refuse(up, "its first record does not authenticate");
    else
      la__fail(up, "%s: closing", why);
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
  la_uplink_t *up = st->data;
  if (nread < 0) {
    free(buf->base);
    la__fail(up, "%s", nread == UV_EOF ? "connection closed"
                                       : uv_strerror((int)nread));
    return;
  }
  int rc = nread > 0 ? la_frame_reader_feed(&up->rd, buf->base, (size_t)nread)
                     : 0;
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
  if (rc < 0 && up->epoch == epoch) la__fail(up, "malformed frame");
}

static void la__on_connect(uv_connect_t *req, int status) {
  la_uplink_t *up = req->data;
  if (up->state != LA__UP_CONNECTING) return;
  if (status < 0) {
    la__fail(up, "connect: %s", uv_strerror(status));
    return;
  }
  up->connects++;
  uv_tcp_nodelay(&up->tcp, 1);
  la_frame_reader_init(&up->rd, 16u << 20);
  uv_read_start((uv_stream_t *)&up->tcp, la__alloc, la__on_read);
  la__handshake_hello(up);
}

static void la__connect(la_uplink_t *up) {
  uv_tcp_init(up->ag->loop, &up->tcp);
  up->tcp.data = up;
  up->tcp_open = 1;
  up->state = LA__UP_CONNECTING;
  up->conn.data = up;
  int rc = uv_tcp_connect(&up->conn, &up->tcp, (struct sockaddr *)&up->addr,
                          la__on_connect);
  if (rc != 0) {
    la__fail(up, "connect: %s", uv_strerror(rc));
    return;
  }
  uv_timer_start(&up->timer, la__on_timer, LA__HANDSHAKE_MS, 0);
}

int la_uplink_start(la_agent_t *ag, char *why, size_t why_len) {
  la_uplink_t *up = calloc(1, sizeof *up);
  if (!up) return LA_ENOMEM;
  up->ag = ag;
  ag->up = up;
  uv_timer_init(ag->loop, &up->timer);
  up->timer.data = up;
  up->backoff_ms = ag->set.reconnect_min_ms;
  la__rand_seed(up);
  if (!ag->set.global[0]) {
    up->state = LA__UP_NONE;
    return 0;
  }
  if (la_auth_init() != 0) {
    snprintf(why, why_len, "libsodium failed to initialise");
    return LA_EAUTH;
  }
  if (ag->set.secret_file[0]) {
    char r[256];
    if (la_auth_load_key(ag->set.secret_file, &up->key, r, sizeof r) != 0) {
      snprintf(why, why_len, "global.secret_file: %s", r);
      return LA_EAUTH;
    }
    up->have_key = 1;
  } else {
    la_log_warnx("global.secret_file is not set: the link to the GlobalAgent "
                 "is NOT authenticated both ways nor encrypted, and the "
                 "GlobalAgent must be configured to accept agents without a "
                 "secret");
  }
  char host[200];
  uint16_t port;
  if (la_hostport_parse(ag->set.global, host, sizeof host, &port) != 0 ||
      (uv_ip4_addr(host, port, (struct sockaddr_in *)&up->addr) != 0 &&
       uv_ip6_addr(host, port, (struct sockaddr_in6 *)&up->addr) != 0)) {
    snprintf(why, why_len, "global.address '%s' is not IP:port",
             ag->set.global);
    return LA_ECONFIG;
  }
  la__connect(up);
  return 0;
}

typedef struct {
  uint16_t type;
  ProtobufCMessage *msg;
  uint64_t *seq_field;
} la__enc_t;

static int la__encode(void *arg, uint64_t seq, uint8_t **frame, size_t *len) {
  la__enc_t *e = arg;
  *e->seq_field = seq;
  return la_frame_pack(e->type, e->msg, frame, len);
}

int la_uplink_log(la_agent_t *ag, uint16_t type, ProtobufCMessage *msg,
                  uint64_t *seq_field) {
  la_outq_key_t key = {NULL, 0, 0};
  unsigned flags = 0;
  switch (type) {
  case LA__MSG_TYPE__MSG_RANK_START: {
    La__RankStart *m = (La__RankStart *)msg;
    key = (la_outq_key_t){m->app_id, m->rank, 0};
    flags = LA_OUTQ_OPENS_RANK;
    break;
  }
  case LA__MSG_TYPE__MSG_RANK_END: {
    La__RankEnd *m = (La__RankEnd *)msg;
    key = (la_outq_key_t){m->app_id, m->rank, 0};
    flags = LA_OUTQ_CLOSES_RANK;
    break;
  }
  case LA__MSG_TYPE__MSG_COMPACT_TRACE: {
    La__CompactTrace *m = (La__CompactTrace *)msg;
    key = (la_outq_key_t){m->app_id, m->rank, m->cycle_tag};
    flags = LA_OUTQ_RESOLVES;
    break;
  }
  case LA__MSG_TYPE__MSG_TRACE_MISSING: {
    La__TraceMissing *m = (La__TraceMissing *)msg;
    key = (la_outq_key_t){m->app_id, m->rank, m->cycle_tag};
    flags = LA_OUTQ_RESOLVES | LA_OUTQ_MISSING;
    break;
  }
  default:
    break;
  }
  la__enc_t e = {type, msg, seq_field};
  return la_outq_append(ag->q, flags, flags ? &key : NULL, la__encode, &e,
                        NULL);
}

int la_uplink_log_missing(la_agent_t *ag, const char *app_id, uint32_t rank,
                          uint64_t cycle_tag, const char *reason) {
  La__TraceMissing m = LA__TRACE_MISSING__INIT;
  m.app_id = (char *)app_id;
  m.rank = rank;
  m.cycle_tag = cycle_tag;
  m.reason = (char *)reason;
  return la_uplink_log(ag, LA__MSG_TYPE__MSG_TRACE_MISSING, &m.base, &m.seq);
}

void la_uplink_kick(la_agent_t *ag) {
  la_uplink_t *up = ag->up;
  if (up && up->state == LA__UP_READY) la__pump(up);
}

int la_uplink_send(la_agent_t *ag, uint16_t type, ProtobufCMessage *msg,
                   uint64_t *seq_field) {
  int rc = la_uplink_log(ag, type, msg, seq_field);
  if (rc != 0) {
    la_outq_stats_t q;
    la_outq_get_stats(ag->q, &q);
    la_log_error("%s dropped (%s): the log is full (spool_bytes) or "
                 "unwritable and the GlobalAgent is not acknowledging; %llu "
                 "dropped so far", la_msg_name(type), la_strerror(rc),
                 (unsigned long long)q.dropped);
    return rc;
  }
  la_uplink_kick(ag);
  return 0;
}

int la_uplink_idle(la_agent_t *ag) {
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  return q.items == 0;
}

void la_uplink_stop(la_agent_t *ag) {
  la_uplink_t *up = ag->up;
  if (!up) return;
  up->state = LA__UP_STOPPED;
  up->epoch++;
  la_auth_key_wipe(&up->key);
  la_auth_session_wipe(&up->ses);
  la_secure_wipe(&up->sec);
  la_frame_reader_free(&up->rd);
  /* handles are closed by main.c's walk; the struct lives until exit */
}

const char *la_uplink_state(la_agent_t *ag) {
  return ag->up ? la__state_names[ag->up->state] : "none";
}

uint64_t la_uplink_connects(la_agent_t *ag) {
  return ag->up ? ag->up->connects : 0;
}

const char *la_uplink_last_error(la_agent_t *ag) {
  return ag->up && ag->up->last_error[0] ? ag->up->last_error : "-";
}
