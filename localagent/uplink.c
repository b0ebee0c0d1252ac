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
  LA__UP_NONE = 0, /* no GlobalAgent configured */
  LA__UP_BACKOFF,  /* waiting to reconnect */
  LA__UP_CONNECTING,
  LA__UP_HELLO, /* Hello sent, waiting for the Challenge */
  LA__UP_AUTH,  /* Auth sent, waiting for AuthResult */
  LA__UP_READY,
  LA__UP_STOPPED
};

static const char *la__state_names[] = {
    "none",           "backoff",   "connecting", "hello",
    "authenticating", "connected", "stopped"};

typedef struct la_uplink la_uplink_t;

/* One connection to one GlobalAgent (shard). */
typedef struct la__link {
  la_agent_t *ag;
  la_uplink_t *u; /* the uplink it belongs to */
  int idx;        /* its place in global.address */
  char addr_s[64];
  int failing; /* failed since it was last connected: routed around */
  int state;
  uv_tcp_t tcp;
  int tcp_open;
  uv_connect_t conn;
  uv_timer_t timer;
  struct sockaddr_storage addr;
  la_frame_reader_t rd;
  la_auth_key_t key;
  int have_key;                        /* mutual handshake, records */
  uint8_t anonce[LA_AUTH_NONCE_BYTES]; /* this connection's nonce */
  la_auth_session_t ses;
  la_secure_t sec;
  int64_t backoff_ms;
  uint64_t connects, epoch;
  size_t inflight;
  char last_error[256];
  int quiet_fail; /* the failure was logged already */
  uint64_t rng;   /* jitter generator state (xorshift64*), seeded per process */
} la__link_t;

#define LA__MAX_SHARDS 16

/* Where an application's messages go (several shards). */
typedef struct {
  char app_id[LA_MAX_ID_LEN + 1];
  int shard;
} la__route_t;

/* A message written to a shard and not yet acknowledged by the whole
 * queue's cumulative acknowledgement. */
typedef struct {
  uint64_t seq;
  int shard, acked;
} la__sent_t;

struct la_uplink {
  la_agent_t *ag;
  int n; /* shards in global.address (0: none) */
  la__link_t *links[LA__MAX_SHARDS];
  la__route_t *routes;
  size_t n_routes, routes_cap;
  la__sent_t *sent; /* in seq order */
  size_t n_sent, sent_cap;
  /* the message read from the queue whose shard cannot take it yet */
  uint8_t *pend;
  size_t pend_len;
  uint64_t pend_seq;
  int have_pend;
};

typedef struct {
  uv_write_t req;
  la__link_t *up;
  uint64_t epoch;
  size_t len;
  uint8_t data[];
} la__upwr_t;

static void la__fail(la__link_t *up, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void la__pump(la_uplink_t *u);
static void la__rewind(la_uplink_t *u);
static void la__acked(la__link_t *up, uint64_t seq);
static void la__connect(la__link_t *up);
static int la__write_req(la__link_t *up, la__upwr_t *w);

static void la__on_timer(uv_timer_t *t) {
  la__link_t *up = t->data;
  if (up->state == LA__UP_BACKOFF)
    la__connect(up);
  else if (up->state >= LA__UP_CONNECTING && up->state < LA__UP_READY)
    la__fail(up, "no handshake within %d ms", LA__HANDSHAKE_MS);
}

/* Seeds the jitter generator from the kernel (getrandom), falling back to
 * the pid and the clock: agents restarted together must not reconnect in
 * step. */
static void la__rand_seed(la__link_t *up) {
  uint64_t s = 0;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s)
    s = ((uint64_t)getpid() << 32) ^ uv_hrtime();
  up->rng = s ? s : 0x9e3779b97f4a7c15ull;
}

static uint64_t la__rand(la__link_t *up) {
  uint64_t x = up->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  up->rng = x;
  return x * 0x2545f4914f6cdd1dull;
}

static void la__on_tcp_closed(uv_handle_t *h) {
  la__link_t *up = h->data;
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

static void la__fail(la__link_t *up, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(up->last_error, sizeof up->last_error, fmt, ap);
  va_end(ap);
  if (up->state == LA__UP_STOPPED) return;
  if (up->quiet_fail)
    ;
  else if (up->state == LA__UP_READY || up->connects <= 1 ||
           up->backoff_ms >= up->ag->set.reconnect_max_ms)
    la_log_warnx("GlobalAgent %s: %s; retrying", up->addr_s, up->last_error);
  else
    la_log_debug("GlobalAgent %s: %s", up->addr_s, up->last_error);
  /* only a connected link was sent messages: with several shards, the
   * retries of one that is down must not make the others resend */
  int was_ready = up->state == LA__UP_READY;
  up->state = LA__UP_BACKOFF;
  up->epoch++;
  up->inflight = 0;
  up->failing = 1;
  if (was_ready || up->u->n == 1) la__rewind(up->u);
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
  la__link_t *up = w->up;
  int current = w->epoch == up->epoch;
  if (current) up->inflight -= w->len;
  free(w);
  if (!current || up->state == LA__UP_STOPPED) return;
  if (status < 0)
    la__fail(up, "write: %s", uv_strerror(status));
  else
    la__pump(up->u);
}

/* la__write's transform once the link is encrypted: the record carrying the
 * frame, in a write request of its own. NULL when out of memory. */
static la__upwr_t *la__link_seal(la__link_t *up, const uint8_t *bytes,
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

static int la__write(la__link_t *up, const uint8_t *bytes, size_t len) {
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
static int la__write_req(la__link_t *up, la__upwr_t *w) {
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

static int la__write_msg(la__link_t *up, uint16_t type,
                         const ProtobufCMessage *m) {
  uint8_t *buf;
  size_t len;
  int rc = la_frame_pack(type, m, &buf, &len);
  if (rc) return rc;
  rc = la__write(up, buf, len);
  free(buf);
  return rc;
}

/* ------------------------------------------------------------- routing */

/* The application id in a queued frame (field app_id of RankStart, RankEnd,
 * CompactTrace, TraceMissing, ElementIds), read from the protobuf wire
 * form without decoding the rest: *id and *n, or 0 when there is none. */
static int la__frame_app(const uint8_t *f, size_t len, const uint8_t **id,
                         size_t *n) {
  if (len < LA_FRAME_HEADER_LEN) return 0;
  uint16_t type = (uint16_t)(f[4] << 8 | f[5]); /* la_codec.c layout */
  uint32_t field;
  switch (type) {
    case LA__MSG_TYPE__MSG_ELEMENT_IDS:
      field = 4;
      break;
    case LA__MSG_TYPE__MSG_RANK_START:
    case LA__MSG_TYPE__MSG_RANK_END:
    case LA__MSG_TYPE__MSG_COMPACT_TRACE:
    case LA__MSG_TYPE__MSG_TRACE_MISSING:
      field = 2;
      break;
    default:
      return 0;
  }
  const uint8_t *p = f + LA_FRAME_HEADER_LEN, *end = f + len;
  while (p < end) {
    uint64_t key = 0, v = 0;
    for (int sh = 0; p < end && sh < 64; sh += 7) {
      key |= (uint64_t)(*p & 0x7f) << sh;
      if (!(*p++ & 0x80)) break;
    }
    int wt = (int)(key & 7);
    if (wt == 0 || wt == 2) {
      for (int sh = 0; p < end && sh < 64; sh += 7) {
        v |= (uint64_t)(*p & 0x7f) << sh;
        if (!(*p++ & 0x80)) break;
      }
    }
    if (wt == 1) v = 8;
    if (wt == 5) v = 4;
    if (wt == 3 || wt == 4 || wt > 5 || (wt != 0 && v > (uint64_t)(end - p)))
      return 0;
    if (wt == 2 && (key >> 3) == field) {
      *id = p;
      *n = (size_t)v;
      return 1;
    }
    if (wt != 0) p += v;
  }
  return 0;
}

/* The home shard of an application: FNV-1a of its id, modulo n. The same
 * on every LocalAgent with the same global.address list. */
static int la__home(const uint8_t *id, size_t n, int shards) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ id[i]) * 0x100000001b3ull;
  return (int)(h % (uint64_t)shards);
}

/* The shard for the application's next message: the one it has been
 * going to while that one works; else, from its home shard on in list
 * order, the first that has not failed since it last connected (so every
 * LocalAgent moves an application to the same shard). -1 when every
 * shard is failing, -2 out of memory. */
static int la__route(la_uplink_t *u, const uint8_t *id, size_t n) {
  if (n > LA_MAX_ID_LEN) n = LA_MAX_ID_LEN;
  la__route_t *r = NULL;
  for (size_t i = 0; i < u->n_routes; i++)
    if (strlen(u->routes[i].app_id) == n &&
        !memcmp(u->routes[i].app_id, id, n)) {
      r = &u->routes[i];
      break;
    }
  if (r && !u->links[r->shard]->failing) return r->shard;
  int home = la__home(id, n, u->n), k = -1;
  for (int i = 0; i < u->n && k < 0; i++)
    if (!u->links[(home + i) % u->n]->failing) k = (home + i) % u->n;
  if (k < 0) return -1;
  if (!r) {
    if (u->n_routes == u->routes_cap) {
      size_t nc = u->routes_cap ? u->routes_cap * 2 : 16;
      la__route_t *v = realloc(u->routes, nc * sizeof *v);
      if (!v) return -2;
      u->routes = v;
      u->routes_cap = nc;
    }
    r = &u->routes[u->n_routes++];
    memcpy(r->app_id, id, n);
    r->app_id[n] = 0;
  } else {
    la_log_info("application %s: GlobalAgent %s failed, moving to %s",
                r->app_id, u->links[r->shard]->addr_s, u->links[k]->addr_s);
  }
  r->shard = k;
  return k;
}

/* Everything unacknowledged goes again (after a link failed): the queue's
 * cursor back to its first unacknowledged message. */
static void la__rewind(la_uplink_t *u) {
  u->n_sent = 0;
  u->have_pend = 0;
  la_outq_rewind(u->ag->q);
}

/* Link up acknowledged seq: its messages up to seq are stored. The queue
 * drops what every shard has acknowledged, in seq order. */
static void la__acked(la__link_t *up, uint64_t seq) {
  la_uplink_t *u = up->u;
  if (u->n == 1) {
    if (la_outq_ack(u->ag->q, seq) != 0)
      la_log_warnx("GlobalAgent acknowledged %llu, beyond what was sent",
                   (unsigned long long)seq);
    return;
  }
  for (size_t i = 0; i < u->n_sent && u->sent[i].seq <= seq; i++)
    if (u->sent[i].shard == up->idx) u->sent[i].acked = 1;
  size_t k = 0;
  while (k < u->n_sent && u->sent[k].acked) k++;
  if (k == 0) return;
  if (la_outq_ack(u->ag->q, u->sent[k - 1].seq) != 0)
    la_log_warnx("GlobalAgent %s acknowledged %llu, beyond what was sent",
                 up->addr_s, (unsigned long long)seq);
  memmove(u->sent, u->sent + k, (u->n_sent - k) * sizeof *u->sent);
  u->n_sent -= k;
}

/* Sends the queue's messages, each to its application's shard, in seq
 * order; stops at the first whose shard is not connected or is full (it
 * waits as u->pend), so nothing overtakes it. */
static void la__pump(la_uplink_t *u) {
  for (;;) {
    uint64_t seq;
    const uint8_t *bytes;
    size_t len;
    if (u->have_pend) {
      seq = u->pend_seq;
      bytes = u->pend;
      len = u->pend_len;
    } else {
      int rc = la_outq_next(u->ag->q, &seq, &bytes, &len);
      if (rc == 0) break;
      if (rc == LA_EIO) continue; /* a corrupt spool file, set aside: next */
      if (rc < 0) {               /* out of memory: try again later */
        la__fail(u->links[0], "reading the queue: %s", la_strerror(rc));
        break;
      }
    }
    int k = 0;
    if (u->n > 1) {
      const uint8_t *id = NULL;
      size_t idn = 0;
      k = la__frame_app(bytes, len, &id, &idn) ? la__route(u, id, idn) : 0;
      if (k == -2) k = -1;
    }
    la__link_t *up = k >= 0 ? u->links[k] : NULL;
    if (!up || up->state != LA__UP_READY || up->inflight >= LA__INFLIGHT_MAX) {
      if (!u->have_pend) { /* hold it until its shard can take it */
        uint8_t *c = malloc(len ? len : 1);
        if (!c) {
          la__rewind(u);
          break;
        }
        memcpy(c, bytes, len);
        free(u->pend);
        u->pend = c;
        u->pend_len = len;
        u->pend_seq = seq;
        u->have_pend = 1;
      }
      break;
    }
    if (u->n > 1) {
      if (u->n_sent == u->sent_cap) {
        size_t nc = u->sent_cap ? u->sent_cap * 2 : 1024;
        la__sent_t *v = realloc(u->sent, nc * sizeof *v);
        if (!v) break; /* out of memory: the message waits */
        u->sent = v;
        u->sent_cap = nc;
      }
      u->sent[u->n_sent++] = (la__sent_t){seq, k, 0};
    }
    u->have_pend = 0;
    if (la__write(up, bytes, len) != 0) break;
  }
}

/* ------------------------------------------------------------ handshake */

/* Sends Hello; with a secret, with this connection's fresh nonce. */
static void la__handshake_hello(la__link_t *up) {
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
static void la__handshake_refuse(la__link_t *up, const char *why) {
  la_log_error(
      "GlobalAgent %s failed to prove the shared secret (%s): "
      "refusing it (check global.secret_file on both agents, and "
      "that this address is the GlobalAgent)",
      up->addr_s, why);
  up->backoff_ms = up->ag->set.reconnect_max_ms;
  up->quiet_fail = 1;
  la__fail(up, "GlobalAgent refused: %s", why);
  up->quiet_fail = 0;
}

/* Challenge: with a secret, derives the session, starts both streams and
 * proves the secret; without, answers the one-way MAC as before. */
static void la__handshake_challenge(la__link_t *up, const La__Challenge *c) {
  La__Auth a = LA__AUTH__INIT;
  uint8_t mac[LA_AUTH_MAC_BYTES], hdr[LA_SECURE_HEADER_BYTES];
  if (!up->have_key) {
    if (la_auth_mac(&up->key, c->nonce.data, c->nonce.len, up->ag->host, mac)) {
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
    e.message =
        "this LocalAgent requires mutual authentication (configure "
        "agents.secret_file on the GlobalAgent)";
    la__write_msg(up, LA__MSG_TYPE__MSG_ERROR, &e.base);
    la__handshake_refuse(up,
                         "it offers no mutual authentication: no secret "
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
static void la__handshake_result(la__link_t *up, const La__AuthResult *r,
                                 int sealed) {
  la_agent_t *ag = up->ag;
  if (r->status != 0) {
    la_log_error(
        "GlobalAgent %s refused this agent: %s (check "
        "global.secret_file on both agents)",
        up->addr_s, r->message ? r->message : la_strerror(r->status));
    up->backoff_ms = ag->set.reconnect_max_ms;
    up->quiet_fail = 1; /* just logged */
    la__fail(up, "authentication refused: %s",
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
  up->state = LA__UP_READY;
  up->failing = 0;
  uv_timer_stop(&up->timer);
  up->backoff_ms = ag->set.reconnect_min_ms;
  up->last_error[0] = '\0';
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  la_log_info("GlobalAgent %s: connected%s; %llu messages to send", up->addr_s,
              up->have_key ? " (mutually authenticated, encrypted)"
                           : " (UNENCRYPTED: no secret)",
              (unsigned long long)q.items);
  la__pump(up->u);
}

static void la__on_frame(la__link_t *up, uint16_t type, const uint8_t *p,
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
    la__acked(up, ((La__Ack *)m)->seq);
    la__pump(up->u);
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
static void la__link_open(la__link_t *up, uint16_t type, const uint8_t *p,
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
  la__link_t *up = st->data;
  if (nread < 0) {
    free(buf->base);
    la__fail(up, "%s",
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
  if (rc < 0 && up->epoch == epoch) la__fail(up, "malformed frame");
}

static void la__on_connect(uv_connect_t *req, int status) {
  la__link_t *up = req->data;
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

static void la__connect(la__link_t *up) {
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
  la_uplink_t *u = calloc(1, sizeof *u);
  if (!u) return LA_ENOMEM;
  u->ag = ag;
  ag->up = u;
  if (!ag->set.global[0]) return 0;
  if (la_auth_init() != 0) {
    snprintf(why, why_len, "libsodium failed to initialise");
    return LA_EAUTH;
  }
  la_auth_key_t key;
  int have_key = 0;
  if (ag->set.secret_file[0]) {
    char r[256];
    if (la_auth_load_key(ag->set.secret_file, &key, r, sizeof r) != 0) {
      snprintf(why, why_len, "global.secret_file: %s", r);
      return LA_EAUTH;
    }
    have_key = 1;
  } else {
    la_log_warnx(
        "global.secret_file is not set: the link to the GlobalAgent "
        "is NOT authenticated both ways nor encrypted, and the "
        "GlobalAgent must be configured to accept agents without a "
        "secret");
  }
  /* global.address: one GlobalAgent, or several shards, comma-separated */
  const char *p = ag->set.global;
  int rc = 0;
  while (*p && rc == 0) {
    size_t k = strcspn(p, ",");
    char one[64], host[200];
    uint16_t port;
    snprintf(one, sizeof one, "%.*s", (int)(k < 63 ? k : 63), p);
    p += k + (p[k] == ',');
    la__link_t *up = calloc(1, sizeof *up);
    if (!up) {
      rc = LA_ENOMEM;
      break;
    }
    up->ag = ag;
    up->u = u;
    snprintf(up->addr_s, sizeof up->addr_s, "%s", one);
    if (u->n == LA__MAX_SHARDS || k >= 63 ||
        la_hostport_parse(one, host, sizeof host, &port) != 0 ||
        (uv_ip4_addr(host, port, (struct sockaddr_in *)&up->addr) != 0 &&
         uv_ip6_addr(host, port, (struct sockaddr_in6 *)&up->addr) != 0)) {
      if (u->n == LA__MAX_SHARDS)
        snprintf(why, why_len, "global.address: more than %d GlobalAgents",
                 LA__MAX_SHARDS);
      else
        snprintf(why, why_len,
                 "global.address '%s' is not IP:port (or a list of them)",
                 ag->set.global);
      free(up);
      rc = LA_ECONFIG;
      break;
    }
    up->idx = u->n;
    u->links[u->n++] = up;
    uv_timer_init(ag->loop, &up->timer);
    up->timer.data = up;
    up->backoff_ms = ag->set.reconnect_min_ms;
    la__rand_seed(up);
    up->key = key;
    up->have_key = have_key;
  }
  if (have_key) la_auth_key_wipe(&key);
  if (rc) return rc;
  if (u->n > 1)
    la_log_info(
        "%d GlobalAgent shards: each application goes to one by a "
        "hash of its id, failing over in list order",
        u->n);
  for (int i = 0; i < u->n; i++) la__connect(u->links[i]);
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
  la_uplink_t *u = ag->up;
  if (u && u->n) la__pump(u);
}

int la_uplink_send(la_agent_t *ag, uint16_t type, ProtobufCMessage *msg,
                   uint64_t *seq_field) {
  int rc = la_uplink_log(ag, type, msg, seq_field);
  if (rc != 0) {
    la_outq_stats_t q;
    la_outq_get_stats(ag->q, &q);
    la_log_error(
        "%s dropped (%s): the log is full (spool_bytes) or "
        "unwritable and the GlobalAgent is not acknowledging; %llu "
        "dropped so far",
        la_msg_name(type), la_strerror(rc), (unsigned long long)q.dropped);
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
  la_uplink_t *u = ag->up;
  if (!u) return;
  for (int i = 0; i < u->n; i++) {
    la__link_t *up = u->links[i];
    up->state = LA__UP_STOPPED;
    up->epoch++;
    la_auth_key_wipe(&up->key);
    la_auth_session_wipe(&up->ses);
    la_secure_wipe(&up->sec);
    la_frame_reader_free(&up->rd);
  }
  /* handles are closed by main.c's walk; the structs live until exit */
}

/* The link whose state speaks for the uplink: the first one not
 * connected, else the first. NULL without a GlobalAgent. */
static la__link_t *la__worst(la_agent_t *ag) {
  la_uplink_t *u = ag->up;
  if (!u || !u->n) return NULL;
  for (int i = 0; i < u->n; i++)
    if (u->links[i]->state != LA__UP_READY) return u->links[i];
  return u->links[0];
}

const char *la_uplink_state(la_agent_t *ag) {
  la__link_t *up = la__worst(ag);
  return up ? la__state_names[up->state] : "none";
}

uint64_t la_uplink_connects(la_agent_t *ag) {
  la_uplink_t *u = ag->up;
  uint64_t n = 0;
  for (int i = 0; u && i < u->n; i++) n += u->links[i]->connects;
  return n;
}

const char *la_uplink_last_error(la_agent_t *ag) {
  la__link_t *up = la__worst(ag);
  return up && up->last_error[0] ? up->last_error : "-";
}
