/* agents.c: the GlobalAgent's LocalAgent connections.
 *
 * With a secret configured (agents.secret_file) the handshake is mutual
 * (docs/protocol.md, "Handshake"): the LocalAgent's Hello carries its nonce;
 * the GlobalAgent answers a Challenge with its own nonce, its name and the
 * header of its sending stream; the LocalAgent proves the secret over the
 * transcript (common/la_auth.h) in Auth, with its stream header; the
 * GlobalAgent checks the proof and answers AuthResult — next_seq from the
 * store and its own proof — as the first encrypted record. From then on
 * every frame both ways is a record (common/la_secure.h); a record that does
 * not open closes the connection with the reason logged. A refused agent
 * gets a clear AuthResult{LA_EAUTH, reason} and the connection closes; the
 * refusal is logged with the peer's address. Without a secret every agent is
 * accepted, unencrypted (logged at start). After the handshake, RankStart /
 * CompactTrace / RankEnd go to ingest.c; Acks go back only after the group
 * commit that stored them (la_ga_agent_ops.ack, called by ingest.c). Knows the
 * handshake; storage and stitching are ingest.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "ga.h"
#include "la_log.h"
#include "la_secure.h"
#include "la_status.h"

enum { LA__AG_HELLO = 0, LA__AG_AUTH = 1, LA__AG_READY = 2 };

typedef struct la_ga_agent {
  la_conn_t conn; /* first */
  la_ga_t *ga;
  struct la_ga_agent *prev, *next;
  int state;
  char host[LA_MAX_ID_LEN + 1];
  uint8_t nonce[LA_AUTH_NONCE_BYTES];
  int mutual;            /* the LocalAgent offered a nonce; secret set */
  la_auth_session_t ses; /* proofs and stream keys (mutual) */
  la_secure_t sec;       /* the records (mutual) */
  uint64_t stored_seq; /* highest seq handled in the open transaction */
  uint64_t acked_seq;  /* highest seq acknowledged */
  uint64_t messages;
} la_ga_agent_t;

static void la__agent_free(la_conn_t *c) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  la_ga_t *ga = a->ga;
  LA_CONN_LIST_UNLINK(ga->agents, a);
  la_auth_session_wipe(&a->ses);
  la_secure_wipe(&a->sec);
  free(a);
}

static void la__agent_close(la_conn_t *c, const char *reason) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  /* a closing connection no longer holds a slot: it is gone by the end of
   * this loop iteration (admission counts open connections only) */
  a->ga->n_agents--;
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

/* The name this GlobalAgent gives in the Challenge (part of the
 * transcript both proofs cover). */
static void la__server_name(char *out, size_t n) {
  if (gethostname(out, n) != 0 || !out[0]) snprintf(out, n, "globalagent");
  out[n - 1] = '\0';
  for (char *p = out; *p; p++)
    if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) *p = '_';
}

/* Hello: answers the Challenge (mutual when a secret is set). Returns 0. */
static int la__handshake_hello(la_ga_agent_t *a, const La__Hello *h) {
  la_ga_t *ga = a->ga;
  la_conn_t *c = &a->conn;
  snprintf(a->host, sizeof a->host, "%s", h->host);
  la_auth_make_nonce(a->nonce);
  La__Challenge ch = LA__CHALLENGE__INIT;
  ch.nonce.data = a->nonce;
  ch.nonce.len = sizeof a->nonce;
  char server[65];
  uint8_t hdr[LA_SECURE_HEADER_BYTES];
  if (ga->have_key) {
    if (!h->has_agent_nonce) {
      ga->st.auth_failures++;
      la_log_warnx(
          "LocalAgent '%s' from %s refused: it offers no mutual "
          "authentication (no secret configured, or too old)",
          a->host, c->peer);
      la__refuse(a, LA_EAUTH,
                 "authentication failed: this GlobalAgent requires mutual "
                 "authentication and encryption (set global.secret_file to "
                 "the same secret file on the LocalAgent)");
      return 0;
    }
    la__server_name(server, sizeof server);
    if (la_auth_session_derive(&ga->key, LA_PROTOCOL_VERSION, a->host, server,
                               h->agent_nonce.data, h->agent_nonce.len,
                               a->nonce, sizeof a->nonce, &a->ses) != 0) {
      ga->st.bad_frames++;
      la_log_warnx("LocalAgent '%s' from %s refused: its nonce is %zu bytes",
                   a->host, c->peer, h->agent_nonce.len);
      la__refuse(a, LA_EPROTO, "Hello: agent_nonce must be 16..64 bytes");
      return 0;
    }
    la_secure_init(&a->sec);
    la_secure_start_tx(&a->sec, a->ses.key_g2a, hdr);
    a->mutual = 1;
    ch.server = server;
    ch.has_stream_header = 1;
    ch.stream_header.data = hdr;
    ch.stream_header.len = sizeof hdr;
  }
  a->state = LA__AG_AUTH;
  la_conn_send(c, LA__MSG_TYPE__MSG_CHALLENGE, &ch.base, 0);
  return 0;
}

/* Auth: checks the LocalAgent's proof; on success switches the connection to
 * records and answers AuthResult (with this side's proof) as the first one.
 * Returns 0. */
static int la__handshake_auth(la_ga_agent_t *a, const La__Auth *au) {
  la_ga_t *ga = a->ga;
  la_conn_t *c = &a->conn;
  int ok;
  if (a->mutual)
    ok = la_auth_proof_check(a->ses.agent_proof, au->mac.data, au->mac.len) ==
             0 &&
         au->has_stream_header &&
         la_secure_start_rx(&a->sec, a->ses.key_a2g, au->stream_header.data,
                            au->stream_header.len) == 0;
  else
    ok = !ga->have_key ||
         la_auth_verify(&ga->key, a->nonce, sizeof a->nonce, a->host,
                        au->mac.data, au->mac.len) == 0;
  if (!ok) {
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
  if (a->mutual) {
    r.has_server_proof = 1;
    r.server_proof.data = a->ses.server_proof;
    r.server_proof.len = sizeof a->ses.server_proof;
    la_conn_set_secure(c, &a->sec);
  }
  a->state = LA__AG_READY;
  la_conn_set_deadline(c, 0);
  /* authenticated: frames up to the configured maximum from now on */
  la_conn_set_max_frame(c, (uint32_t)ga->set.agent_max_frame);
  la_conn_send(c, LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base, 0);
  la_log_info("LocalAgent '%s' connected from %s (next seq %llu, %s)", a->host,
              c->peer, (unsigned long long)next,
              a->mutual ? "mutually authenticated, encrypted"
                        : "UNENCRYPTED: no secret");
  return 0;
}

static int la__agent_frame(la_conn_t *c, uint16_t type, ProtobufCMessage *m) {
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
    return la__handshake_hello(a, (La__Hello *)m);
  }
  if (a->state == LA__AG_AUTH) {
    if (type == LA__MSG_TYPE__MSG_ERROR) {
      La__Error *e = (La__Error *)m;
      ga->st.auth_failures++;
      la_log_warnx("LocalAgent '%s' from %s refused this GlobalAgent: %.200s",
                   a->host, c->peer, e->message ? e->message : "no reason");
      return -1;
    }
    if (type != LA__MSG_TYPE__MSG_AUTH) {
      ga->st.bad_frames++;
      la__refuse(a, LA_EPROTO, "expected Auth");
      return 0;
    }
    return la__handshake_auth(a, (La__Auth *)m);
  }
  uint64_t seq;
  switch (type) {
  case LA__MSG_TYPE__MSG_RANK_START: seq = ((La__RankStart *)m)->seq; break;
  case LA__MSG_TYPE__MSG_RANK_END: seq = ((La__RankEnd *)m)->seq; break;
  case LA__MSG_TYPE__MSG_COMPACT_TRACE:
    seq = ((La__CompactTrace *)m)->seq;
    break;
  case LA__MSG_TYPE__MSG_TRACE_MISSING:
    seq = ((La__TraceMissing *)m)->seq;
    break;
  case LA__MSG_TYPE__MSG_ELEMENT_IDS:
    seq = ((La__ElementIds *)m)->seq;
    break;
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

static void la__agent_bad(la_conn_t *c, const char *why) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  a->ga->st.bad_frames++;
  la_log_warnx("LocalAgent connection %s (%s): %s: closing", c->peer,
               a->host[0] ? a->host : "before Hello", why);
  if (a->state != LA__AG_READY) la__refuse(a, LA_EPROTO, why);
}

static void la__agent_deadline(la_conn_t *c) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  if (a->state == LA__AG_READY) return;
  la_log_info("connection %s did not authenticate in time: closing", c->peer);
  la__refuse(a, LA_ETIMEDOUT, "no handshake in time");
}

static const la_conn_ops_t la__ops = {
    .on_frame = la__agent_frame,
    .on_bad = la__agent_bad,
    .on_deadline = la__agent_deadline,
    .on_close = la__agent_close,
    .on_free = la__agent_free,
};

/* la_conn_admission_t.refuse: whether the peer's address already holds
 * its share of unauthenticated connections (authenticated LocalAgents are
 * not limited per address). */
static const char *la__handshakes_over_cap(la_conn_t *c) {
  static la_ratelimit_t rl; /* this file's: refusal log lines */
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  la_ga_t *ga = a->ga;
  int n = 0;
  for (la_ga_agent_t *o = ga->agents; o; o = o->next)
    if (o != a && o->state != LA__AG_READY && !o->conn.closing &&
        !strcmp(o->conn.addr, c->addr))
      n++;
  if (!la_conn_share_full(
          n, ga->set.agent_max_handshakes_per_addr, &ga->st.agents_refused, &rl,
          "LocalAgent connection %s refused: %d handshakes open from "
          "that address (agents.max_handshakes_per_address = %lld)",
          c->peer, n, (long long)ga->set.agent_max_handshakes_per_addr))
    return NULL;
  return "too many handshakes from this address";
}

/* la_conn_admission_t.on_new: a LocalAgent connection of ga, in its list. */
static void la__agent_new(la_conn_t *c, void *owner) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  a->ga = owner;
  LA_CONN_LIST_PUSH(a->ga->agents, a);
  a->ga->n_agents++;
}

void la_ga_agent_accept(la_ga_t *ga, uv_stream_t *server) {
  /* unauthenticated: small frames only, until the handshake succeeds */
  const la_conn_admission_t adm = {
      .size = sizeof(la_ga_agent_t),
      .max_frame = (uint32_t)ga->set.agent_handshake_max_frame,
      .max_output = (size_t)ga->set.agent_max_output,
      .deadline_ms = (uint64_t)ga->set.handshake_ms,
      .on_new = la__agent_new,
      .refuse = la__handshakes_over_cap,
  };
  if (la_conn_admit(ga->loop, server, &la__ops, &adm, ga))
    ga->st.agents_accepted++;
}

/* The la_ga_agent_ops_t entries (ga.h says what each does). */
static int la__record_seqs(la_ga_t *ga) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next)
    if (a->stored_seq > a->acked_seq &&
        la_store_agent_seq_update(ga->store, a->host, a->stored_seq) != 0)
      return -1;
  return 0;
}

static void la__ack(la_ga_t *ga) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next) {
    if (a->stored_seq <= a->acked_seq || a->conn.closing) continue;
    La__Ack ack = LA__ACK__INIT;
    ack.seq = a->stored_seq;
    a->acked_seq = a->stored_seq;
    la_conn_send(&a->conn, LA__MSG_TYPE__MSG_ACK, &ack.base, 0);
  }
}

static int la__connected(la_ga_t *ga, const char *host) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next)
    if (a->state == LA__AG_READY && !a->conn.closing && !strcmp(a->host, host))
      return 1;
  return 0;
}

static void la__close_all(la_ga_t *ga, const char *reason) {
  for (la_ga_agent_t *a = ga->agents, *n; a; a = n) {
    n = a->next;
    a->stored_seq = a->acked_seq; /* nothing of the failed batch is acked */
    la_conn_close(&a->conn, reason);
  }
}

static void la__status_rows(la_ga_t *ga, La__StatusReply *r) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next)
    if (a->state == LA__AG_READY && !a->conn.closing)
      la_status_agent(r, a->host, a->conn.peer, a->messages, a->acked_seq);
}

const la_ga_agent_ops_t la_ga_agent_ops = {
    .record_seqs = la__record_seqs,
    .ack = la__ack,
    .close_all = la__close_all,
    .connected = la__connected,
    .status_rows = la__status_rows,
};
