/* agents.c: the GlobalAgent's LocalAgent connections.
 *
 * A LocalAgent says Hello (protocol, host); the GlobalAgent answers a
 * Challenge of 32 random bytes; the LocalAgent proves the shared secret with
 * a MAC over it (common/la_auth.h); the GlobalAgent answers AuthResult, with
 * next_seq from the store. A refused agent gets AuthResult{LA_EAUTH, reason}
 * and the connection closes; the refusal is logged with the peer's address.
 * Without a configured secret every agent is accepted (logged at start).
 * After that, RankStart / CompactTrace / RankEnd go to ingest.c; Acks go
 * back only after the group commit that stored them (la_ga_agents_ack).
 * Knows the handshake; storage and stitching are ingest.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ga.h"
#include "la_log.h"

enum { LA__AG_HELLO = 0, LA__AG_AUTH = 1, LA__AG_READY = 2 };

typedef struct la_ga_agent {
  la_conn_t conn; /* first */
  la_ga_t *ga;
  struct la_ga_agent *prev, *next;
  int state;
  char host[LA_MAX_ID_LEN + 1];
  uint8_t nonce[LA_AUTH_NONCE_BYTES];
  uint64_t stored_seq; /* highest seq handled in the open transaction */
  uint64_t acked_seq;  /* highest seq acknowledged */
  uint64_t messages;
} la_ga_agent_t;

static void la__on_free(la_conn_t *c) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  la_ga_t *ga = a->ga;
  if (a->prev) a->prev->next = a->next;
  else ga->agents = a->next;
  if (a->next) a->next->prev = a->prev;
  ga->n_agents--;
  free(a);
}

static void la__on_close(la_conn_t *c, const char *reason) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  if (a->state == LA__AG_READY)
    la_log_info("LocalAgent %s (%s) disconnected: %s; %llu messages",
                a->host, c->peer, reason, (unsigned long long)a->messages);
}

static void la__refuse(la_ga_agent_t *a, int code, const char *why) {
  La__AuthResult r = LA__AUTH_RESULT__INIT;
  r.status = code;
  r.message = (char *)why;
  la_conn_send(&a->conn, LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base, 1);
}

static int la__on_frame(la_conn_t *c, uint16_t type, ProtobufCMessage *m) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  la_ga_t *ga = a->ga;
  if (a->state == LA__AG_HELLO) {
    if (type != LA__MSG_TYPE__MSG_HELLO) {
      la_log_warnx("LocalAgent %s: %s before Hello: closing", c->peer,
                   la_msg_name(type));
      ga->st.bad_frames++;
      la__refuse(a, LA_EPROTO, "expected Hello");
      return 0;
    }
    La__Hello *h = (La__Hello *)m;
    snprintf(a->host, sizeof a->host, "%s", h->host);
    la_auth_make_nonce(a->nonce);
    La__Challenge ch = LA__CHALLENGE__INIT;
    ch.nonce.data = a->nonce;
    ch.nonce.len = sizeof a->nonce;
    a->state = LA__AG_AUTH;
    la_conn_send(c, LA__MSG_TYPE__MSG_CHALLENGE, &ch.base, 0);
    return 0;
  }
  if (a->state == LA__AG_AUTH) {
    if (type != LA__MSG_TYPE__MSG_AUTH) {
      ga->st.bad_frames++;
      la__refuse(a, LA_EPROTO, "expected Auth");
      return 0;
    }
    La__Auth *au = (La__Auth *)m;
    if (ga->have_key &&
        la_auth_verify(&ga->key, a->nonce, sizeof a->nonce, a->host,
                       au->mac.data, au->mac.len) != 0) {
      ga->st.auth_failures++;
      la_log_warnx("LocalAgent '%s' from %s refused: wrong secret", a->host,
                   c->peer);
      la__refuse(a, LA_EAUTH, LA_AUTH_REFUSED_MSG);
      return 0;
    }
    La__AuthResult r = LA__AUTH_RESULT__INIT;
    uint64_t next = 1;
    la_store_agent_next_seq(ga->store, a->host, &next);
    r.status = 0;
    r.has_next_seq = 1;
    r.next_seq = next;
    a->state = LA__AG_READY;
    la_conn_set_deadline(c, 0);
    la_conn_send(c, LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base, 0);
    la_log_info("LocalAgent '%s' connected from %s (next seq %llu)", a->host,
                c->peer, (unsigned long long)next);
    return 0;
  }
  uint64_t seq;
  switch (type) {
  case LA__MSG_TYPE__MSG_RANK_START: seq = ((La__RankStart *)m)->seq; break;
  case LA__MSG_TYPE__MSG_RANK_END: seq = ((La__RankEnd *)m)->seq; break;
  case LA__MSG_TYPE__MSG_COMPACT_TRACE:
    seq = ((La__CompactTrace *)m)->seq;
    break;
  case LA__MSG_TYPE__MSG_TRACE_MISSING: { /* logged until it is stored */
    const La__TraceMissing *t = (const La__TraceMissing *)m;
    seq = t->seq;
    la_log_info("%s rank %u cycle %llu missing: %s", t->app_id, t->rank,
                (unsigned long long)t->cycle_tag, t->reason);
    break;
  }
  default:
    ga->st.bad_frames++;
    la_log_warnx("LocalAgent %s: unexpected %s: closing", a->host,
                 la_msg_name(type));
    return -1;
  }
  if (la_ga_ingest(ga, a->host, type, m) != 0) return -1;
  a->messages++;
  if (seq > a->stored_seq) a->stored_seq = seq;
  return 0;
}

static void la__on_bad(la_conn_t *c, const char *why) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  a->ga->st.bad_frames++;
  la_log_warnx("LocalAgent connection %s (%s): %s: closing", c->peer,
               a->host[0] ? a->host : "before Hello", why);
  if (a->state != LA__AG_READY) la__refuse(a, LA_EPROTO, why);
}

static void la__on_deadline(la_conn_t *c) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  if (a->state == LA__AG_READY) return;
  la_log_info("connection %s did not authenticate in time: closing", c->peer);
  la__refuse(a, LA_ETIMEDOUT, "no handshake in time");
}

static const la_conn_ops_t la__ops = {
  .on_frame = la__on_frame,
  .on_bad = la__on_bad,
  .on_deadline = la__on_deadline,
  .on_close = la__on_close,
  .on_free = la__on_free,
};

void la_ga_agent_accept(la_ga_t *ga, uv_stream_t *server) {
  la_ga_agent_t *a = calloc(1, sizeof *a);
  if (!a) {
    la_refuse_connection(ga->loop, server);
    return;
  }
  a->ga = ga;
  la_conn_init(&a->conn, ga->loop, (uint32_t)ga->set.agent_max_frame,
               &la__ops, a);
  a->next = ga->agents;
  if (ga->agents) ga->agents->prev = a;
  ga->agents = a;
  ga->n_agents++;
  if (la_conn_accept(&a->conn, server) != 0) {
    la_conn_close(&a->conn, "accept failed");
    return;
  }
  ga->st.agents_accepted++;
  la_conn_set_deadline(&a->conn, (uint64_t)ga->set.handshake_ms);
}

int la_ga_agents_record_seqs(la_ga_t *ga) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next)
    if (a->stored_seq > a->acked_seq &&
        la_store_agent_seq_update(ga->store, a->host, a->stored_seq) != 0)
      return -1;
  return 0;
}

void la_ga_agents_ack(la_ga_t *ga) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next) {
    if (a->stored_seq <= a->acked_seq || a->conn.closing) continue;
    La__Ack ack = LA__ACK__INIT;
    ack.seq = a->stored_seq;
    a->acked_seq = a->stored_seq;
    la_conn_send(&a->conn, LA__MSG_TYPE__MSG_ACK, &ack.base, 0);
  }
}

void la_ga_agents_close_all(la_ga_t *ga, const char *reason) {
  for (la_ga_agent_t *a = ga->agents, *n; a; a = n) {
    n = a->next;
    a->stored_seq = a->acked_seq; /* nothing of the failed batch is acked */
    la_conn_close(&a->conn, reason);
  }
}
