/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_global.c: the GlobalAgent stand-in of la_test_global.h.
 *
 * Who may use it: only a test whose fault the real la-globalagent cannot
 * produce. Today that is test_localagent's test_global_restart_mid_run (a
 * GlobalAgent that stores without acknowledging, then crashes and comes back
 * on the same port, and the count of copies received twice, which the real
 * store drops without a trace), test_test_global (the stand-in's own tests)
 * and bench_localagent (the LocalAgent measured alone, without the
 * GlobalAgent's store in the numbers). Plain delivery is tested against the
 * real GlobalAgent (la_test_stack.h), read back from its store.
 *
 * One thread, a poll() loop over the listener, a wake-up pipe and up to 64
 * connections; framing and validation by la_codec, the handshake by la_auth.
 * Connection state belongs to the thread; everything tests read (records,
 * counters, settings) is under one mutex. Records are allocated one by one so
 * pointers handed to tests never move.
 */
#include "la_test_global.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "la.h"
#include "la_auth.h"
#include "la_codec.h"
#include "la_secure_io.h"
#include "la_sockio.h"
#include "la_test_serve.h"

#define MAXC 64
#define HANDSHAKE_MS 5000 /* Hello and Auth must arrive within this */
#define BATCH_FLUSH_MS 50 /* ack batches flush when this old */
#define SEND_MS 1000      /* time limit of one send */
#define MAXHOSTS 64

enum { ST_HELLO, ST_AUTH, ST_READY };

typedef struct {
  int fd, id, state;
  uint64_t deadline; /* handshake deadline, ms; 0 once authenticated */
  char host[LA_TG_ID_LEN];
  uint8_t nonce[LA_AUTH_NONCE_BYTES];
  int mutual; /* the LocalAgent offered a nonce: mutual, then records */
  la_auth_session_t ses;
  la_secure_t sec;
  la_frame_reader_t rd;
  int has_seq;
  uint64_t last_seq; /* previous seq on this connection */
  uint64_t pending_seq, pending_n, pending_since; /* not yet acked */
} conn_t;

typedef struct {
  char host[LA_TG_ID_LEN];
  uint64_t max_seq;
} host_seq_t;

struct la_test_global {
  /* thread side */
  int lfd, wake[2];
  pthread_t th;
  int running;
  conn_t c[MAXC];
  int nconn_total;
  /* fixed after start */
  uint16_t port;
  char addr[32];
  /* under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int killed, drop_now;
  int ack_every, ack_delay_ms, refuse_auth, accept_any, refuse_traces;
  la_auth_key_t key;
  uint64_t ctr[LA_TG_NCOUNTERS];
  char last_refusal[256];
  la_tg_trace_t **traces;
  size_t ntraces, cap_traces;
  uint32_t *hash; /* open addressing: index + 1, 0 = empty */
  size_t hash_cap;
  la_tg_rank_start_t **starts;
  size_t nstarts, cap_starts;
  la_tg_rank_end_t **ends;
  size_t nends, cap_ends;
  host_seq_t hosts[MAXHOSTS];
  int nhosts;
};

/* ------------------------------------------------------------- records */

static uint64_t key_hash(const char *app, uint32_t rank, uint64_t tag) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *s = app; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
  h = (h ^ rank) * 1099511628211ULL;
  for (int i = 0; i < 8; i++)
    h = (h ^ ((tag >> (8 * i)) & 0xff)) * 1099511628211ULL;
  return h;
}

/* Index of the trace with that key, or -1. Caller holds mu. */
static long trace_lookup(la_test_global_t *g, const char *app, uint32_t rank,
                         uint64_t tag) {
  if (!g->hash_cap) return -1;
  size_t m = g->hash_cap - 1, i = (size_t)key_hash(app, rank, tag) & m;
  for (; g->hash[i]; i = (i + 1) & m) {
    const la_tg_trace_t *t = g->traces[g->hash[i] - 1];
    if (t->rank == rank && t->cycle_tag == tag && !strcmp(t->app_id, app))
      return (long)g->hash[i] - 1;
  }
  return -1;
}

static void hash_put(uint32_t *h, size_t cap, const la_tg_trace_t *t,
                     uint32_t idx1) {
  size_t m = cap - 1,
         i = (size_t)key_hash(t->app_id, t->rank, t->cycle_tag) & m;
  while (h[i]) i = (i + 1) & m;
  h[i] = idx1;
}

/* Appends t (owned from now on). Caller holds mu. Returns 0 or -1. */
static int trace_add(la_test_global_t *g, la_tg_trace_t *t) {
  if (g->ntraces == g->cap_traces) {
    size_t cap = g->cap_traces ? 2 * g->cap_traces : 64;
    la_tg_trace_t **a = realloc(g->traces, cap * sizeof *a);
    if (!a) return -1;
    g->traces = a;
    g->cap_traces = cap;
  }
  if (2 * (g->ntraces + 1) > g->hash_cap) {
    size_t cap = g->hash_cap ? 2 * g->hash_cap : 128;
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h) return -1;
    for (size_t i = 0; i < g->ntraces; i++)
      hash_put(h, cap, g->traces[i], (uint32_t)i + 1);
    free(g->hash);
    g->hash = h;
    g->hash_cap = cap;
  }
  g->traces[g->ntraces] = t;
  hash_put(g->hash, g->hash_cap, t, (uint32_t)++g->ntraces);
  return 0;
}

/* Grows a pointer array to hold one more. Returns 0 or -1. */
static int grow(void ***arr, size_t n, size_t *cap) {
  if (n < *cap) return 0;
  size_t c = *cap ? 2 * *cap : 16;
  void **a = realloc(*arr, c * sizeof *a);
  if (!a) return -1;
  *arr = a;
  *cap = c;
  return 0;
}

static void host_seq_update(la_test_global_t *g, const char *host,
                            uint64_t seq) {
  for (int i = 0; i < g->nhosts; i++)
    if (!strcmp(g->hosts[i].host, host)) {
      if (seq > g->hosts[i].max_seq) g->hosts[i].max_seq = seq;
      return;
    }
  if (g->nhosts == MAXHOSTS) return;
  snprintf(g->hosts[g->nhosts].host, LA_TG_ID_LEN, "%s", host);
  g->hosts[g->nhosts++].max_seq = seq;
}

/* Highest seq stored from host, or -1 if none. Caller holds mu. */
static int64_t host_seq_get(la_test_global_t *g, const char *host) {
  for (int i = 0; i < g->nhosts; i++)
    if (!strcmp(g->hosts[i].host, host)) return (int64_t)g->hosts[i].max_seq;
  return -1;
}

static void bump(la_test_global_t *g, la_tg_counter_t what) {
  g->ctr[what]++;
  pthread_cond_broadcast(&g->cv);
}

/* --------------------------------------------------------- connections */

static void conn_close(la_test_global_t *g, conn_t *c) {
  if (c->fd < 0) return;
  close(c->fd);
  c->fd = -1;
  la_frame_reader_free(&c->rd);
  la_auth_session_wipe(&c->ses);
  la_secure_wipe(&c->sec);
  pthread_mutex_lock(&g->mu);
  bump(g, LA_TG_CLOSED);
  pthread_mutex_unlock(&g->mu);
}

/* Tells the peer why (best effort) and counts a protocol error; the caller
 * closes the connection. Before authentication the answer is an AuthResult
 * (the LocalAgent is waiting for one), after it an Error. */
static void protocol_error(la_test_global_t *g, conn_t *c, int code,
                           const char *why) {
  pthread_mutex_lock(&g->mu); /* counted first: the client may be quicker */
  if (c->state != ST_READY)
    snprintf(g->last_refusal, sizeof g->last_refusal, "%s", why);
  bump(g, LA_TG_PROTOCOL_ERRORS);
  pthread_mutex_unlock(&g->mu);
  if (c->state != ST_READY) {
    La__AuthResult r = LA__AUTH_RESULT__INIT;
    r.status = code;
    r.message = (char *)why;
    la_send_msg(c->fd, LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base, 200);
  } else {
    La__Error e = LA__ERROR__INIT;
    e.code = code;
    e.message = (char *)why;
    la_secure_send_msg(c->fd, c->mutual ? &c->sec : NULL,
                       LA__MSG_TYPE__MSG_ERROR, &e.base, 200);
  }
}

static int send_ack(la_test_global_t *g, conn_t *c) {
  La__Ack a = LA__ACK__INIT;
  a.seq = c->pending_seq;
  c->pending_n = c->pending_since = 0;
  pthread_mutex_lock(&g->mu); /* counted first: the client may be quicker */
  g->ctr[LA_TG_LAST_ACK] = a.seq;
  bump(g, LA_TG_ACKS);
  pthread_mutex_unlock(&g->mu);
  return la_secure_send_msg(c->fd, c->mutual ? &c->sec : NULL,
                            LA__MSG_TYPE__MSG_ACK, &a.base, SEND_MS)
             ? -1
             : 0;
}

/* Sends the cumulative Ack if the policy says it is time. Returns 0, or -1
 * if the connection broke. */
static int maybe_ack(la_test_global_t *g, conn_t *c, uint64_t now) {
  if (c->fd < 0 || !c->pending_n) return 0;
  pthread_mutex_lock(&g->mu);
  int every = g->ack_every, delay = g->ack_delay_ms;
  pthread_mutex_unlock(&g->mu);
  if (every <= 0) return 0;
  uint64_t age = now - c->pending_since;
  int due;
  if (delay > 0)
    due = age >= (uint64_t)delay;
  else if (every == 1)
    due = 1;
  else
    due = c->pending_n >= (uint64_t)every || age >= BATCH_FLUSH_MS;
  return due ? send_ack(g, c) : 0;
}

static int on_hello(la_test_global_t *g, conn_t *c, const La__Hello *h) {
  if (h->protocol != LA_PROTOCOL_VERSION) { /* la_codec checks it too */
    char why[160];
    snprintf(why, sizeof why, "Hello: protocol version %u, expected %u",
             h->protocol, LA_PROTOCOL_VERSION);
    protocol_error(g, c, LA_EPROTO, why);
    return -1;
  }
  snprintf(c->host, sizeof c->host, "%s", h->host);
  la_auth_make_nonce(c->nonce);
  La__Challenge ch = LA__CHALLENGE__INIT;
  ch.nonce.data = c->nonce;
  ch.nonce.len = sizeof c->nonce;
  uint8_t hdr[LA_SECURE_HEADER_BYTES];
  pthread_mutex_lock(&g->mu);
  int keyed = !g->accept_any;
  la_auth_key_t key = g->key;
  pthread_mutex_unlock(&g->mu);
  if (h->has_agent_nonce && keyed) { /* mutual (the LocalAgent's default) */
    /* the cipher as the GlobalAgent's agents.cipher = auto chooses it */
    uint32_t cipher = h->n_ciphers <= LA_CIPHER_OFFER_MAX
                          ? la_cipher_choose(LA_CIPHER_AUTO, h->ciphers,
                                             h->n_ciphers, NULL, 0)
                          : 0;
    if (!cipher ||
        la_auth_session_derive_neg(&key, LA_PROTOCOL_VERSION, c->host,
                                   "test-global", h->agent_nonce.data,
                                   h->agent_nonce.len, c->nonce,
                                   sizeof c->nonce, h->ciphers, h->n_ciphers,
                                   cipher, &c->ses) != 0) {
      protocol_error(g, c, LA_EPROTO, "Hello: bad agent_nonce or ciphers");
      return -1;
    }
    la_secure_init(&c->sec);
    la_secure_set_cipher(&c->sec, cipher);
    ch.has_cipher = h->n_ciphers > 0;
    ch.cipher = cipher;
    la_secure_start_tx(&c->sec, c->ses.key_g2a, hdr);
    c->mutual = 1;
    ch.server = "test-global";
    ch.has_stream_header = 1;
    ch.stream_header.data = hdr;
    ch.stream_header.len = sizeof hdr;
  }
  la_auth_key_wipe(&key);
  if (la_send_msg(c->fd, LA__MSG_TYPE__MSG_CHALLENGE, &ch.base, SEND_MS))
    return -1;
  c->state = ST_AUTH;
  return 0;
}

static int on_auth(la_test_global_t *g, conn_t *c, const La__Auth *a) {
  pthread_mutex_lock(&g->mu);
  int ok;
  if (g->refuse_auth)
    ok = 0;
  else if (g->accept_any)
    ok = a->mac.len == LA_AUTH_MAC_BYTES;
  else if (c->mutual)
    ok =
        la_auth_proof_check(c->ses.agent_proof, a->mac.data, a->mac.len) == 0 &&
        a->has_stream_header &&
        la_secure_start_rx(&c->sec, c->ses.key_a2g, a->stream_header.data,
                           a->stream_header.len) == 0;
  else
    ok = la_auth_verify(&g->key, c->nonce, sizeof c->nonce, c->host,
                        a->mac.data, a->mac.len) == 0;
  int64_t max = host_seq_get(g, c->host);
  pthread_mutex_unlock(&g->mu);
  La__AuthResult r = LA__AUTH_RESULT__INIT;
  if (!ok) {
    const char *why = LA_AUTH_REFUSED_MSG;
    r.status = LA_EAUTH;
    r.message = (char *)why;
    pthread_mutex_lock(&g->mu);
    snprintf(g->last_refusal, sizeof g->last_refusal, "%s", why);
    bump(g, LA_TG_AUTH_FAILURES);
    pthread_mutex_unlock(&g->mu);
    la_send_msg(c->fd, LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base, 200);
    return -1;
  }
  r.status = 0;
  r.has_next_seq = 1;
  r.next_seq = max < 0 ? 1 : (uint64_t)max + 1;
  if (c->mutual) {
    r.has_server_proof = 1;
    r.server_proof.data = c->ses.server_proof;
    r.server_proof.len = sizeof c->ses.server_proof;
  }
  c->state = ST_READY;
  c->deadline = 0;
  pthread_mutex_lock(&g->mu); /* counted first: the client may be quicker */
  bump(g, LA_TG_AUTH_OK);
  pthread_mutex_unlock(&g->mu);
  return la_secure_send_msg(c->fd, c->mutual ? &c->sec : NULL,
                            LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base, SEND_MS)
             ? -1
             : 0;
}

static int rank_started(la_test_global_t *g, const char *app, uint32_t rank) {
  for (size_t i = 0; i < g->nstarts; i++)
    if (g->starts[i]->rank == rank && !strcmp(g->starts[i]->app_id, app))
      return 1;
  return 0;
}

static int rank_ended(la_test_global_t *g, const char *app, uint32_t rank) {
  for (size_t i = 0; i < g->nends; i++)
    if (g->ends[i]->rank == rank && !strcmp(g->ends[i]->app_id, app)) return 1;
  return 0;
}

/* Stores one RankStart / CompactTrace / RankEnd. Caller holds mu. Returns 0
 * or -1 (out of memory). */
static int store(la_test_global_t *g, conn_t *c, uint16_t type,
                 const ProtobufCMessage *m) {
  if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE) {
    const La__CompactTrace *t = (const void *)m;
    if (trace_lookup(g, t->app_id, t->rank, t->cycle_tag) >= 0) {
      bump(g, LA_TG_DUPLICATES);
      return 0;
    }
    la_tg_trace_t *r = calloc(1, sizeof *r);
    if (!r || !(r->segments = malloc(t->segments.len ? t->segments.len : 1))) {
      free(r);
      return -1;
    }
    memcpy(r->segments, t->segments.data, t->segments.len);
    r->segments_len = t->segments.len;
    r->wire_bytes = t->segments.len +
                    (t->has_robust_segments ? t->robust_segments.len : 0);
    for (size_t i = 0; i < t->n_channels; i++)
      r->wire_bytes += t->channels[i]->segments.len +
                       (t->channels[i]->has_robust_segments
                            ? t->channels[i]->robust_segments.len
                            : 0);
    r->has_robust = t->has_robust_segments;
    r->conn = c->id;
    snprintf(r->host, sizeof r->host, "%s", c->host);
    snprintf(r->app_id, sizeof r->app_id, "%s", t->app_id);
    r->rank = t->rank;
    r->cycle_tag = t->cycle_tag;
    r->seq = t->seq;
    r->n_elements = t->n_elements;
    r->mode = (int)t->mode;
    r->count = t->stats->count;
    r->sum = t->stats->sum;
    r->min = t->stats->min;
    r->max = t->stats->max;
    if (t->error) {
      r->has_error = 1;
      r->max_abs = t->error->max_abs;
      r->rmse = t->error->rmse;
      r->cv = t->error->cv;
    }
    r->t_xfer_ns = t->t_xfer_ns;
    r->rank_seq = t->rank_seq;
    if (trace_add(g, r)) {
      free(r->segments);
      free(r);
      return -1;
    }
    if (!rank_started(g, r->app_id, r->rank)) g->ctr[LA_TG_ORPHANS]++;
    g->ctr[LA_TG_TRACES] = g->ntraces;
  } else if (type == LA__MSG_TYPE__MSG_TRACE_MISSING) {
    bump(g, LA_TG_MISSING);
  } else if (type == LA__MSG_TYPE__MSG_RANK_START) {
    const La__RankStart *s = (const void *)m;
    if (rank_started(g, s->app_id, s->rank)) {
      bump(g, LA_TG_RANK_DUPLICATES);
      return 0;
    }
    if (grow((void ***)&g->starts, g->nstarts, &g->cap_starts)) return -1;
    la_tg_rank_start_t *r = calloc(1, sizeof *r);
    if (!r) return -1;
    r->conn = c->id;
    snprintf(r->host, sizeof r->host, "%s", c->host);
    snprintf(r->app_id, sizeof r->app_id, "%s", s->app_id);
    snprintf(r->app_name, sizeof r->app_name, "%s",
             s->app_name ? s->app_name : "");
    snprintf(r->metric, sizeof r->metric, "%s", s->metric);
    snprintf(r->unit, sizeof r->unit, "%s", s->unit ? s->unit : "");
    r->rank = s->rank;
    r->nprocs = s->nprocs;
    r->period = s->period;
    r->seq = s->seq;
    r->n_elements = s->n_elements;
    r->pid = s->pid;
    r->compact_mode = s->compact ? (int)s->compact->mode : -1;
    g->starts[g->nstarts++] = r;
    g->ctr[LA_TG_RANK_STARTS] = g->nstarts;
  } else {
    const La__RankEnd *e = (const void *)m;
    if (rank_ended(g, e->app_id, e->rank)) {
      bump(g, LA_TG_RANK_DUPLICATES);
      return 0;
    }
    if (grow((void ***)&g->ends, g->nends, &g->cap_ends)) return -1;
    la_tg_rank_end_t *r = calloc(1, sizeof *r);
    if (!r) return -1;
    r->conn = c->id;
    snprintf(r->host, sizeof r->host, "%s", c->host);
    snprintf(r->app_id, sizeof r->app_id, "%s", e->app_id);
    snprintf(r->reason, sizeof r->reason, "%s", e->reason ? e->reason : "");
    r->rank = e->rank;
    r->seq = e->seq;
    r->cycles = e->cycles;
    r->skipped = e->skipped;
    g->ends[g->nends++] = r;
    g->ctr[LA_TG_RANK_ENDS] = g->nends;
  }
  pthread_cond_broadcast(&g->cv);
  return 0;
}

static uint64_t msg_seq(uint16_t type, const ProtobufCMessage *m) {
  if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE)
    return ((const La__CompactTrace *)m)->seq;
  if (type == LA__MSG_TYPE__MSG_RANK_START)
    return ((const La__RankStart *)m)->seq;
  if (type == LA__MSG_TYPE__MSG_TRACE_MISSING)
    return ((const La__TraceMissing *)m)->seq;
  return ((const La__RankEnd *)m)->seq;
}

/* Handles one decoded message. Returns 0, or -1 to close the connection. */
static int on_message(la_test_global_t *g, conn_t *c, uint16_t type,
                      const ProtobufCMessage *m) {
  char why[160];
  if (c->state == ST_HELLO) {
    if (type == LA__MSG_TYPE__MSG_HELLO)
      return on_hello(g, c, (const La__Hello *)m);
    snprintf(why, sizeof why, "expected Hello, got %s", la_msg_name(type));
  } else if (c->state == ST_AUTH) {
    if (type == LA__MSG_TYPE__MSG_AUTH)
      return on_auth(g, c, (const La__Auth *)m);
    snprintf(why, sizeof why, "expected Auth, got %s", la_msg_name(type));
  } else if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE ||
             type == LA__MSG_TYPE__MSG_RANK_START ||
             type == LA__MSG_TYPE__MSG_TRACE_MISSING ||
             type == LA__MSG_TYPE__MSG_RANK_END) {
    uint64_t seq = msg_seq(type, m);
    pthread_mutex_lock(&g->mu);
    int refuse = g->refuse_traces && type == LA__MSG_TYPE__MSG_COMPACT_TRACE;
    pthread_mutex_unlock(&g->mu);
    if (refuse) { /* as a GlobalAgent does with a frame it cannot take */
      protocol_error(g, c, LA_EPROTO, "CompactTrace refused (test)");
      return -1;
    }
    pthread_mutex_lock(&g->mu);
    bump(g, LA_TG_MESSAGES);
    if (c->has_seq && seq <= c->last_seq) bump(g, LA_TG_SEQ_ERRORS);
    int rc = store(g, c, type, m);
    if (rc == 0) {
      host_seq_update(g, c->host, seq);
      if (seq > g->ctr[LA_TG_MAX_SEQ]) g->ctr[LA_TG_MAX_SEQ] = seq;
    }
    pthread_mutex_unlock(&g->mu);
    if (rc) return -1; /* not stored: must not be acked */
    c->has_seq = 1;
    c->last_seq = seq;
    c->pending_seq = seq;
    if (!c->pending_n++) c->pending_since = la_now_ms();
    return maybe_ack(g, c, la_now_ms());
  } else {
    snprintf(why, sizeof why, "unexpected %s after authentication",
             la_msg_name(type));
  }
  protocol_error(g, c, LA_EPROTO, why);
  return -1;
}

/* A connection of the stand-in, as la_test_serve_frames hands it around. */
typedef struct {
  la_test_global_t *g;
  conn_t *c;
} global_conn_t;

/* la_test_serve_frames: one frame, opened first on an encrypted link.
 * Returns 0, or 1 to close the connection. */
static int on_frame(void *arg, uint16_t type, const uint8_t *pl, uint32_t len) {
  la_test_global_t *g = ((global_conn_t *)arg)->g;
  conn_t *c = ((global_conn_t *)arg)->c;
  ProtobufCMessage *m;
  char why[160];
  uint8_t *plain = NULL; /* after a mutual handshake: records only */
  if (c->mutual && c->state == ST_READY &&
      (type != LA__MSG_TYPE__MSG_SEALED ||
       la_secure_open(&c->sec, pl, len, LA_FRAME_DEFAULT_MAX, &plain, &type,
                      &pl, &len, why, sizeof why) != 0)) {
    if (type != LA__MSG_TYPE__MSG_SEALED)
      snprintf(why, sizeof why, "clear frame on an encrypted link");
    protocol_error(g, c, LA_EPROTO, why);
    return 1;
  }
  int drc = la_msg_decode(type, pl, len, &m, why, sizeof why);
  free(plain);
  if (drc) {
    protocol_error(g, c, LA_EPROTO, why);
    return 1;
  }
  int rc = on_message(g, c, type, m);
  la_msg_free(m);
  return rc != 0;
}

/* Reads what is there and handles every complete frame. Returns 0, or -1 to
 * close the connection. */
static int on_readable(la_test_global_t *g, conn_t *c) {
  global_conn_t x = {g, c};
  int r = la_test_serve_frames(c->fd, &c->rd, on_frame, &x);
  if (r < 0)
    protocol_error(g, c, r == LA_EMSGSIZE ? LA_EMSGSIZE : LA_EPROTO,
                   r == LA_EMSGSIZE ? "frame too large" : "bad frame");
  return r ? -1 : 0;
}

/* la_test_serve_poll: the listener is readable. */
static void on_accept(void *arg) {
  la_test_global_t *g = arg;
  int fd = accept4(g->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return;
  int slot = -1;
  for (int i = 0; i < MAXC; i++)
    if (g->c[i].fd < 0) {
      slot = i;
      break;
    }
  if (slot < 0) {
    close(fd);
    return;
  }
  conn_t *c = &g->c[slot];
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->id = g->nconn_total++;
  c->state = ST_HELLO;
  c->deadline = la_now_ms() + HANDSHAKE_MS;
  la_frame_reader_init(&c->rd, LA_FRAME_DEFAULT_MAX);
  pthread_mutex_lock(&g->mu);
  bump(g, LA_TG_CONNECTIONS);
  pthread_mutex_unlock(&g->mu);
}

/* la_test_serve_poll: connection i's descriptor, and i is readable. */
static int fd_cb(void *arg, int i) {
  return ((la_test_global_t *)arg)->c[i].fd;
}

static void conn_cb(void *arg, int i) {
  la_test_global_t *g = arg;
  if (g->c[i].fd >= 0 && on_readable(g, &g->c[i])) conn_close(g, &g->c[i]);
}

static void *global_main(void *arg) {
  la_test_global_t *g = arg;
  la_test_serve_lock();
  for (;;) {
    pthread_mutex_lock(&g->mu);
    int killed = g->killed, drop = g->drop_now;
    g->drop_now = 0;
    pthread_mutex_unlock(&g->mu);
    if (killed) break;
    uint64_t now = la_now_ms();
    for (int i = 0; i < MAXC; i++) {
      conn_t *c = &g->c[i];
      if (c->fd < 0) continue;
      if (drop) {
        conn_close(g, c);
      } else if (c->deadline && now >= c->deadline) {
        protocol_error(g, c, LA_ETIMEDOUT, "handshake not completed in time");
        conn_close(g, c);
      } else if (maybe_ack(g, c, now)) {
        conn_close(g, c);
      }
    }
    la_test_serve_poll(g->lfd, g->wake[0], fd_cb, MAXC, on_accept, conn_cb, g);
  }
  for (int i = 0; i < MAXC; i++) conn_close(g, &g->c[i]);
  la_test_serve_end(&g->lfd);
  return NULL;
}

/* --------------------------------------------------------------- public */

/* Listens on 127.0.0.1:port; sets g->port. Returns 0 or -1. */
static int listen_on(la_test_global_t *g, uint16_t port) {
  if ((g->lfd = la_test_listen(port, &g->port)) < 0) return -1;
  snprintf(g->addr, sizeof g->addr, "127.0.0.1:%u", g->port);
  return 0;
}

static int run(la_test_global_t *g) {
  for (int i = 0; i < MAXC; i++) g->c[i].fd = -1;
  pthread_mutex_lock(&g->mu);
  g->killed = 0;
  g->drop_now = 0;
  pthread_mutex_unlock(&g->mu);
  if (pthread_create(&g->th, NULL, global_main, g) != 0) {
    close(g->lfd);
    g->lfd = -1;
    return -1;
  }
  g->running = 1;
  return 0;
}

la_test_global_t *la_test_global_start(uint16_t port, const char *key_path) {
  if (la_auth_init() != 0) return NULL;
  la_test_global_t *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->lfd = -1;
  g->ack_every = 1;
  g->accept_any = key_path == NULL;
  if (key_path) {
    char why[512];
    if (la_auth_load_key(key_path, &g->key, why, sizeof why)) {
      fprintf(stderr, "la_test_global: %s\n", why);
      free(g);
      return NULL;
    }
  }
  if (pipe2(g->wake, O_CLOEXEC) != 0) {
    free(g);
    return NULL;
  }
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  if (listen_on(g, port) != 0 || run(g) != 0) {
    g->running = 0;
    la_test_global_stop(g);
    return NULL;
  }
  return g;
}

uint16_t la_test_global_port(const la_test_global_t *g) {
  return g->port;
}
const char *la_test_global_addr(const la_test_global_t *g) {
  return g->addr;
}

void la_test_global_set_ack(la_test_global_t *g, int every) {
  pthread_mutex_lock(&g->mu);
  g->ack_every = every < 0 ? 0 : every;
  pthread_mutex_unlock(&g->mu);
  la_test_wake(g->wake[1]);
}

void la_test_global_set_ack_delay(la_test_global_t *g, int delay_ms) {
  pthread_mutex_lock(&g->mu);
  g->ack_delay_ms = delay_ms < 0 ? 0 : delay_ms;
  pthread_mutex_unlock(&g->mu);
  la_test_wake(g->wake[1]);
}

void la_test_global_set_refuse_traces(la_test_global_t *g, int on) {
  pthread_mutex_lock(&g->mu);
  g->refuse_traces = on;
  pthread_mutex_unlock(&g->mu);
}

void la_test_global_set_refuse_auth(la_test_global_t *g, int on) {
  pthread_mutex_lock(&g->mu);
  g->refuse_auth = on;
  pthread_mutex_unlock(&g->mu);
}

int la_test_global_set_key(la_test_global_t *g, const char *key_path) {
  la_auth_key_t k;
  memset(&k, 0, sizeof k);
  if (key_path) {
    char why[512];
    int rc = la_auth_load_key(key_path, &k, why, sizeof why);
    if (rc) {
      fprintf(stderr, "la_test_global: %s\n", why);
      return rc;
    }
  }
  pthread_mutex_lock(&g->mu);
  g->key = k;
  g->accept_any = key_path == NULL;
  pthread_mutex_unlock(&g->mu);
  la_auth_key_wipe(&k);
  return 0;
}

uint64_t la_test_global_count(la_test_global_t *g, la_tg_counter_t what) {
  if ((unsigned)what >= LA_TG_NCOUNTERS) return 0;
  pthread_mutex_lock(&g->mu);
  uint64_t v = g->ctr[what];
  pthread_mutex_unlock(&g->mu);
  return v;
}

typedef struct {
  la_test_global_t *g;
  la_tg_counter_t what;
  uint64_t n;
} wait_t;

static int counter_reached(void *arg) {
  wait_t *w = arg;
  return w->g->ctr[w->what] >= w->n;
}

int la_test_global_wait(la_test_global_t *g, la_tg_counter_t what, uint64_t n,
                        int timeout_ms) {
  if ((unsigned)what >= LA_TG_NCOUNTERS) return -1;
  wait_t w = {g, what, n};
  return la_test_cond_wait(&g->mu, &g->cv, counter_reached, &w, timeout_ms);
}

int la_test_global_wait_traces(la_test_global_t *g, size_t n_unique,
                               int timeout_ms) {
  return la_test_global_wait(g, LA_TG_TRACES, n_unique, timeout_ms);
}

size_t la_test_global_ntraces(la_test_global_t *g) {
  return (size_t)la_test_global_count(g, LA_TG_TRACES);
}

size_t la_test_global_duplicates(la_test_global_t *g) {
  return (size_t)la_test_global_count(g, LA_TG_DUPLICATES);
}

int la_test_global_rank_starts(la_test_global_t *g) {
  return (int)la_test_global_count(g, LA_TG_RANK_STARTS);
}

int la_test_global_rank_ends(la_test_global_t *g) {
  return (int)la_test_global_count(g, LA_TG_RANK_ENDS);
}

int la_test_global_auth_failures(la_test_global_t *g) {
  return (int)la_test_global_count(g, LA_TG_AUTH_FAILURES);
}

uint64_t la_test_global_max_seq(la_test_global_t *g) {
  return la_test_global_count(g, LA_TG_MAX_SEQ);
}

const la_tg_trace_t *la_test_global_trace(la_test_global_t *g, size_t i) {
  pthread_mutex_lock(&g->mu);
  const la_tg_trace_t *t = i < g->ntraces ? g->traces[i] : NULL;
  pthread_mutex_unlock(&g->mu);
  return t;
}

const la_tg_trace_t *la_test_global_find(la_test_global_t *g,
                                         const char *app_id, uint32_t rank,
                                         uint64_t cycle_tag) {
  if (!app_id) return NULL;
  pthread_mutex_lock(&g->mu);
  long i = trace_lookup(g, app_id, rank, cycle_tag);
  const la_tg_trace_t *t = i >= 0 ? g->traces[i] : NULL;
  pthread_mutex_unlock(&g->mu);
  return t;
}

const la_tg_rank_start_t *la_test_global_rank_start(la_test_global_t *g,
                                                    size_t i) {
  pthread_mutex_lock(&g->mu);
  const la_tg_rank_start_t *r = i < g->nstarts ? g->starts[i] : NULL;
  pthread_mutex_unlock(&g->mu);
  return r;
}

const la_tg_rank_end_t *la_test_global_rank_end(la_test_global_t *g, size_t i) {
  pthread_mutex_lock(&g->mu);
  const la_tg_rank_end_t *r = i < g->nends ? g->ends[i] : NULL;
  pthread_mutex_unlock(&g->mu);
  return r;
}

void la_test_global_last_refusal(la_test_global_t *g, char *buf, size_t len) {
  if (!buf || !len) return;
  pthread_mutex_lock(&g->mu);
  snprintf(buf, len, "%s", g->last_refusal);
  pthread_mutex_unlock(&g->mu);
}

void la_test_global_drop_connections(la_test_global_t *g) {
  pthread_mutex_lock(&g->mu);
  g->drop_now = 1;
  pthread_mutex_unlock(&g->mu);
  la_test_wake(g->wake[1]);
}

void la_test_global_kill(la_test_global_t *g) {
  if (!g->running) return;
  pthread_mutex_lock(&g->mu);
  g->killed = 1;
  pthread_mutex_unlock(&g->mu);
  la_test_wake(g->wake[1]);
  pthread_join(g->th, NULL);
  g->running = 0;
}

int la_test_global_revive(la_test_global_t *g) {
  if (g->running) return 0;
  if (listen_on(g, g->port) != 0) return -1;
  return run(g);
}

void la_test_global_stop(la_test_global_t *g) {
  if (!g) return;
  la_test_global_kill(g);
  if (g->lfd >= 0) close(g->lfd);
  for (size_t i = 0; i < g->ntraces; i++) {
    free(g->traces[i]->segments);
    free(g->traces[i]);
  }
  for (size_t i = 0; i < g->nstarts; i++) free(g->starts[i]);
  for (size_t i = 0; i < g->nends; i++) free(g->ends[i]);
  free(g->traces);
  free(g->hash);
  free(g->starts);
  free(g->ends);
  la_auth_key_wipe(&g->key);
  close(g->wake[0]);
  close(g->wake[1]);
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  free(g);
}
