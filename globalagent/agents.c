/* SPDX-License-Identifier: BSD-3-Clause */
/* agents.c: the GlobalAgent's LocalAgent connections.
 *
 * With a secret configured (agents.secret_file) the handshake is mutual
 * (docs/protocol.md, "Handshake"): the LocalAgent's Hello carries its nonce;
 * the GlobalAgent answers a Challenge with its own nonce, its name and the
 * header of its sending stream; the LocalAgent proves the secret over the
 * transcript (daemon/la_auth.h) in Auth, with its stream header; the
 * GlobalAgent checks the proof and answers AuthResult — next_seq from the
 * store and its own proof — as the first encrypted record. From then on
 * every frame both ways is a record (daemon/la_secure.h); a record that does
 * not open closes the connection with the reason logged. A refused agent
 * gets a clear AuthResult{LA_EAUTH, reason} and the connection closes; the
 * refusal is logged with the peer's address. Without a secret every agent is
 * accepted, unencrypted (logged at start). A LocalAgent names itself by
 * host and instance id (Hello.instance; docs/globalagent.md, "LocalAgent
 * identity"): sequences are kept per host/instance, and a second linked
 * LocalAgent with a host another instance holds is refused after its
 * proof. A linked LocalAgent's closed link is noted (lost.h). After the handshake, RankStart /
 * CompactTrace / RankEnd go to ingest.c; Acks go back only after the group
 * commit that stored them (la_ga_agent_ops.ack, called by ingest.c). Knows the
 * handshake; storage and stitching are ingest.c's.
 *
 * Off the loop thread: once a connection is authenticated, its frames are
 * kept where they were read (la_conn_ops_t.on_raw, in place: the read
 * buffer becomes theirs, or a copy of a short read's frames,
 * la_conn_ops_t.on_lent; freed once the last of them is decoded) and
 * opened (decrypted), decoded
 * and their encodings checked (la_ga_check_encodings) on the libuv thread
 * pool, in batches: a connection is in one job at a time, with every
 * frame read while its previous job ran, so the receiving stream's state
 * is used by one thread at a time and the frames are handed to ingest.c on
 * the loop thread in the order they were read; the connections with frames
 * waiting after a loop iteration share at most LA__JOBS_PER_ROUND jobs. Only
 * the loop touches the store (and the committer thread, during a commit:
 * a job's frames that come back meanwhile are parked, in order, until its
 * result, la_ga_agent_ops.resume), so acks still follow the commit alone. A job's
 * frames are dropped when their connection closed meanwhile (as frames read
 * after a close always were: nothing is stored or acknowledged after it).
 * Memory: a connection is not read while its frames not yet handled reach a
 * quarter of agents.ingest_memory, nor any while all connections' reach it;
 * each may overshoot by the one frame that crossed the line. The buffers
 * they wait in are at most a few times their bytes (a read buffer is
 * handed over once half of it, or 32 KiB, holds frames; a short read's
 * frames are copied instead), until the last frame of each is decoded.
 */
#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "committer.h"
#include "ga.h"
#include "la_errcodes.h"
#include "la_errors.h"
#include "la_log.h"
#include "la_secure.h"
#include "la_status.h"
#include "lost.h"
#include "reclaim.h"
#include "validate.h"

enum { LA__AG_HELLO = 0, LA__AG_AUTH = 1, LA__AG_READY = 2 };

/* What a job made of a frame. */
enum { LA__F_OK = 0, LA__F_BAD = 1, LA__F_REFUSED = 2 };

/* A read buffer of a connection holding frames kept in place: freed by
 * the last of them to be done with it (on the loop or the pool). */
typedef struct la__chunk {
  atomic_int refs; /* its frames, and 1 while it is the reader's */
  uint8_t *buf;    /* set when the connection hands it over (on_lent) */
} la__chunk_t;

static void la__chunk_put(la__chunk_t *ch) {
  if (ch && atomic_fetch_sub(&ch->refs, 1) == 1) {
    free(ch->buf);
    free(ch);
  }
}

/* A frame of an authenticated LocalAgent on its way through the pool: as
 * read in (data, in its chunk until decoded), decoded out (m), with the
 * verdict and its reason. */
typedef struct la__frame {
  struct la__frame *next;
  ProtobufCMessage *m; /* the decoded message (LA__F_OK, LA__F_REFUSED) */
  char *why;           /* the reason (bad frame, refused trace); may be NULL */
  la_store_rep_sig_t *sig; /* a trace's signature (store.representatives) */
  uint8_t *data;           /* the frame's payload, in chunk */
  la__chunk_t *chunk;      /* NULL once decoded */
  int verdict;
  uint16_t type; /* as read; after the job the inner frame's */
  uint32_t len;
} la__frame_t;

/* A pool job: the frames of one or more connections (each connection in
 * at most one job at a time). */
typedef struct la__job {
  uv_work_t req;
  struct la_ga_agent *agents; /* linked through job_next */
} la__job_t;

/* Jobs started per loop iteration at most (the connections with frames
 * are spread over them): a job per connection would cost a wake-up of a
 * pool thread and of the loop per few frames. */
#define LA__JOBS_PER_ROUND 2

typedef struct la_ga_agent {
  la_conn_t conn; /* first */
  la_ga_t *ga;
  struct la_ga_agent *prev, *next;
  int state;
  char host[LA_MAX_ID_LEN + 1];
  char instance[LA_INSTANCE_LEN + 1]; /* Hello.instance; "" from an older one */
  char ident[LA_AUTH_IDENT_MAX + 1];  /* host or host/instance: the name the
                                         proofs cover and seqs are kept by */
  uint8_t nonce[LA_AUTH_NONCE_BYTES];
  int mutual;            /* the LocalAgent offered a nonce; secret set */
  la_auth_session_t ses; /* proofs and stream keys (mutual) */
  la_secure_t sec;       /* the records (mutual) */
  uint64_t stored_seq;   /* highest seq handled in the open transaction */
  uint64_t acked_seq;    /* highest seq acknowledged */
  uint64_t messages;
  /* frames read, not yet in a job (pend_bytes), and in the job (busy:
   * job_frames, job_bytes, opened with frames up to job_max_payload) */
  la__frame_t *pend, **pend_tail;
  size_t pend_bytes, job_bytes;
  la__frame_t *job_frames;
  uint32_t job_max_payload;
  int job_sigs; /* the job takes traces' signatures (store.representatives) */
  la__chunk_t *chunk; /* the reader's buffer, while frames are kept in it */
  struct la__frame *chunk_first; /* in pend: the first frame kept in it */
  struct la_ga_agent *job_next;
  int busy;
  int paused; /* counted in ga->agents_paused */
  int queued; /* in ga->agents_ready (holding the connection) */
  struct la_ga_agent *ready_next;
  struct la_ga_agent *park_next; /* in ga->agents_parked */
  uint64_t since_ms; /* accepted (loop time) */
} la_ga_agent_t;

static void la__frame_free(la__frame_t *f) {
  la_msg_free(f->m);
  free(f->why);
  free(f->sig);
  la__chunk_put(f->chunk);
  free(f);
}

/* la_reclaim_fn: a handled frame, freed on the pool (reclaim.h). */
static void la__frame_reclaim(void *p) {
  la__frame_free(p);
}

/* Drops the frames not yet in a job. */
static void la__drop_pending(la_ga_agent_t *a) {
  for (la__frame_t *f = a->pend, *n; f; f = n) {
    n = f->next;
    la__frame_free(f);
  }
  a->ga->agent_pending -= a->pend_bytes;
  a->chunk_first = NULL;
  a->pend = NULL;
  a->pend_tail = &a->pend;
  a->pend_bytes = 0;
}

static void la__agent_free(la_conn_t *c) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  la_ga_t *ga = a->ga;
  LA_CONN_LIST_UNLINK(ga->agents, a);
  la__chunk_put(a->chunk); /* none of its frames kept: the buffer is la_conn's */
  la_auth_session_wipe(&a->ses);
  la_secure_wipe(&a->sec);
  free(a);
}

static void la__agent_close(la_conn_t *c, const char *reason) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  /* a closing connection no longer holds a slot: it is gone by the end of
   * this loop iteration (admission counts open connections only) */
  a->ga->n_agents--;
  if (a->state == LA__AG_READY) a->ga->n_linked--;
  la__drop_pending(a); /* a job in flight drops its own when it returns */
  if (a->paused) {
    a->paused = 0;
    a->ga->agents_paused--;
  }
  if (a->state == LA__AG_READY) {
    la_log_info("LocalAgent %s (%s) disconnected: %s; %llu messages", a->host,
                c->peer, reason, (unsigned long long)a->messages);
    /* lost unless it links again within stitch.timeout (lost.h) */
    if (!a->ga->draining) la_ga_lost_note(a->ga, a->host);
    la_ga_metrics_link_closed(a->host, a->messages);
  }
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
  snprintf(a->instance, sizeof a->instance, "%s",
           h->instance ? h->instance : "");
  la_auth_identity(a->host, a->instance, a->ident, sizeof a->ident);
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
    la_cipher_pref_t pref = LA_CIPHER_AUTO;
    char why[200];
    uint32_t cipher = 0;
    if (h->n_ciphers > LA_CIPHER_OFFER_MAX) {
      ga->st.bad_frames++;
      la_log_warnx("LocalAgent '%s' from %s refused: it offers %zu ciphers",
                   a->host, c->peer, h->n_ciphers);
      la__refuse(a, LA_EPROTO, "Hello: at most 8 ciphers may be offered");
      return 0;
    }
    la_cipher_parse("agents.cipher", ga->set.cipher, 0, &pref, NULL, 0);
    if (!(cipher = la_cipher_choose(pref, h->ciphers, h->n_ciphers, why,
                                    sizeof why))) {
      ga->st.auth_failures++;
      la_log_warnx("LocalAgent '%s' from %s refused: %s (agents.cipher = %s)",
                   a->host, c->peer, why, ga->set.cipher);
      char msg[300];
      snprintf(msg, sizeof msg, "refused: %s (agents.cipher = %s)", why,
               ga->set.cipher);
      la__refuse(a, LA_EAUTH, msg);
      return 0;
    }
    la__server_name(server, sizeof server);
    if (la_auth_session_derive_neg(
            &ga->key, LA_PROTOCOL_VERSION, a->ident, server, h->agent_nonce.data,
            h->agent_nonce.len, a->nonce, sizeof a->nonce, h->ciphers,
            h->n_ciphers, cipher, &a->ses) != 0) {
      ga->st.bad_frames++;
      la_log_warnx("LocalAgent '%s' from %s refused: its nonce is %zu bytes",
                   a->host, c->peer, h->agent_nonce.len);
      la__refuse(a, LA_EPROTO, "Hello: agent_nonce must be 16..64 bytes");
      return 0;
    }
    la_secure_init(&a->sec);
    la_secure_set_cipher(&a->sec, cipher);
    la_secure_start_tx(&a->sec, a->ses.key_g2a, hdr);
    a->mutual = 1;
    if (h->n_ciphers > 0) { /* an older LocalAgent is told nothing */
      ch.has_cipher = 1;
      ch.cipher = cipher;
    }
    if (a->instance[0]) { /* the proofs cover it: an older one is told nothing */
      ch.has_instance_bound = 1;
      ch.instance_bound = 1;
    }
    ch.server = server;
    ch.has_stream_header = 1;
    ch.stream_header.data = hdr;
    ch.stream_header.len = sizeof hdr;
  }
  a->state = LA__AG_AUTH;
  la_conn_send(c, LA__MSG_TYPE__MSG_CHALLENGE, &ch.base, 0);
  return 0;
}

/* Whether another linked LocalAgent holds a's host under another instance
 * id (two LocalAgents with one agent.host: cloned machines or containers):
 * then a is refused, both sides told why and what to do, and 1 returned.
 * The same instance (a LocalAgent reconnecting before its old link closed)
 * and a LocalAgent without an instance id (older) are taken as before. */
static int la__host_taken(la_ga_agent_t *a) {
  static la_ratelimit_t rl; /* this file's: such refusals' log lines */
  if (!a->instance[0]) return 0;
  for (la_ga_agent_t *o = a->ga->agents; o; o = o->next) {
    if (o == a || o->state != LA__AG_READY || o->conn.closing ||
        !o->instance[0] || strcmp(o->host, a->host) ||
        !strcmp(o->instance, a->instance))
      continue;
    /* it retries every global.reconnect_max: a line a minute at most */
    uint64_t missed = 0;
    if (la_ratelimit_ok(&rl, 60000, &missed))
      la_log_warnx("LocalAgent '%s' instance %s from %s refused: LocalAgent "
                   "instance %s from %s is linked with the same agent.host "
                   "(give each LocalAgent its own agent.host; %llu more such "
                   "refusals since the last line)",
                   a->host, a->instance, a->conn.peer, o->instance,
                   o->conn.peer, (unsigned long long)missed);
    char msg[400];
    snprintf(msg, sizeof msg,
             "agent.host '%s' is held by another LocalAgent (instance %s, "
             "from %s; this one is instance %s): give each LocalAgent its "
             "own agent.host",
             a->host, o->instance, o->conn.peer, a->instance);
    la__refuse(a, LA_EREFUSED, msg);
    return 1;
  }
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
    la_log_warnx("LocalAgent '%s' from %s refused: wrong secret (or its "
                 "handshake was altered on the way)",
                 a->host, c->peer);
    la__refuse(a, LA_EAUTH, LA_AUTH_REFUSED_MSG);
    return 0;
  }
  if (la__host_taken(a)) return 0;
  La__AuthResult r = LA__AUTH_RESULT__INIT;
  uint64_t next = 1;
  if (la_store_agent_next_seq(la_ga_store(ga), a->ident, &next) == LA_EIO) {
    /* nothing can be stored now: the LocalAgent waits for this one */
    la_ga_store_down(ga, "reading a LocalAgent's sequence number");
    char msg[300];
    snprintf(msg, sizeof msg, "the GlobalAgent's store is unavailable (%s): "
             "retry later", ga->store_error);
    la__refuse(a, LA_EIO, msg);
    return 0;
  }
  la_ga_store_up(ga);
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
  ga->n_linked++;
  la_conn_set_deadline(c, 0);
  /* authenticated: frames up to the configured maximum from now on */
  la_conn_set_max_frame(c, (uint32_t)ga->set.agent_max_frame);
  la_conn_send(c, LA__MSG_TYPE__MSG_AUTH_RESULT, &r.base, 0);
  la_log_info("LocalAgent '%s' connected from %s (%s%s%snext seq %llu, %s%s)",
              a->host, c->peer, a->instance[0] ? "instance " : "",
              a->instance, a->instance[0] ? ", " : "",
              (unsigned long long)next,
              a->mutual ? "mutually authenticated, encrypted with "
                        : "UNENCRYPTED: no secret",
              a->mutual ? la_cipher_name(a->sec.cipher) : "");
  return 0;
}

/* A message of an authenticated LocalAgent, in the order received;
 * refused: for a CompactTrace, its encodings' verdict (NULL: fine); sig:
 * its signature (NULL: none taken). Returns 0, or -1 to close the
 * connection. */
static int la__agent_msg(la_ga_agent_t *a, uint16_t type, ProtobufCMessage *m,
                         const char *refused, const la_store_rep_sig_t *sig) {
  la_ga_t *ga = a->ga;
  uint64_t seq;
  switch (type) {
    case LA__MSG_TYPE__MSG_RANK_START:
      seq = ((La__RankStart *)m)->seq;
      break;
    case LA__MSG_TYPE__MSG_RANK_END:
      seq = ((La__RankEnd *)m)->seq;
      break;
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
  int rc = la_ga_ingest(ga, a->host, type, m, refused, sig);
  if (rc != 0) return rc == LA_EIO ? LA_EIO : -1;
  a->messages++;
  if (seq > a->stored_seq) a->stored_seq = seq;
  la_ga_ingest_end(ga); /* a full batch commits with this seq acked */
  return 0;
}

/* The store is unavailable: a's LocalAgent is told so (Error, code
 * LA_EIO: it keeps this GlobalAgent for its applications and resends what
 * was not acknowledged once it connects again) and the link closes. */
static void la__store_unavailable(la_ga_agent_t *a, const char *how) {
  La__Error e = LA__ERROR__INIT;
  char msg[300];
  snprintf(msg, sizeof msg, "the GlobalAgent's store is unavailable (%s): "
           "resend later", a->ga->store_error);
  e.code = LA_EIO;
  e.message = msg;
  la_conn_send(&a->conn, LA__MSG_TYPE__MSG_ERROR, &e.base, 1);
  la_conn_end(&a->conn, how);
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
  /* not reached: authenticated connections' frames go through the pool
   * (la__agent_raw); checked here alike should that ever change */
  char w[300];
  const char *refused = NULL;
  if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE &&
      la_ga_check_encodings((const La__CompactTrace *)m, NULL, w, sizeof w) !=
          0)
    refused = w;
  return la__agent_msg(a, type, m, refused, NULL);
}

/* Opens, decodes and checks a's frames of the job in order with the
 * connection's receiving stream (used by this job alone). After a bad
 * frame the rest are left (the connection closes). Pool thread. */
static void la__work_agent(la_ga_agent_t *a) {
  for (la__frame_t *f = a->job_frames; f; f = f->next) {
    char why[300];
    const uint8_t *p = f->data;
    uint32_t len = f->len;
    uint16_t type = f->type;
    uint8_t *plain = NULL;
    int rc = 0;
    if (a->mutual) {
      if (type != LA__MSG_TYPE__MSG_SEALED)
        rc = la_errorf(why, sizeof why, LA_EPROTO,
                       "%s in clear on an encrypted link", la_msg_name(type));
      else
        rc = la_secure_open_in_place(&a->sec, f->data, len,
                                     a->job_max_payload, &plain, &type, &p,
                                     &len, why, sizeof why);
    }
    if (rc == 0) rc = la_msg_unpack(type, p, len, &f->m, why, sizeof why);
    free(plain);
    la__chunk_put(f->chunk); /* the message has copies of what it needs */
    f->chunk = NULL;
    f->data = NULL;
    char sub[200];
    if (rc == 0 && la_msg_validate(type, f->m, sub, sizeof sub) != 0) {
      snprintf(why, sizeof why, "%s: %s", la_msg_name(type), sub);
      /* A trace whose key is usable is refused like one with a bad
       * encoding: acknowledged and recorded missing, the link kept (what a
       * LocalAgent sends may carry values an application wrote; closing
       * would make it resend the same trace for ever). */
      if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE &&
          la_msg_trace_key_ok((const La__CompactTrace *)f->m)) {
        f->type = type;
        f->verdict = LA__F_REFUSED;
        snprintf(why, sizeof why, "invalid trace: %s", sub);
        f->why = strdup(why);
        continue;
      }
      la_msg_free(f->m);
      f->m = NULL;
      rc = LA_EPROTO;
    }
    if (rc != 0) {
      f->verdict = LA__F_BAD;
      f->why = strdup(why);
      return;
    }
    f->type = type;
    /* the signature, in the pass that checks the trace (NULL: no memory,
     * then taken from the stored bytes at the set's close) */
    if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE && a->job_sigs)
      f->sig = malloc(sizeof *f->sig);
    if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE &&
        la_ga_check_encodings((const La__CompactTrace *)f->m, f->sig, why,
                              sizeof why) != 0) {
      f->verdict = LA__F_REFUSED;
      f->why = strdup(why);
    }
  }
}

/* The thread pool's part of a job. */
static void la__work(uv_work_t *req) {
  la__job_t *j = req->data;
  for (la_ga_agent_t *a = j->agents; a; a = a->job_next) la__work_agent(a);
}

/* Whether a is over its share of agents.ingest_memory, or all are. */
static int la__over(const la_ga_agent_t *a) {
  size_t all = (size_t)a->ga->set.ingest_memory;
  return a->pend_bytes + a->job_bytes >= all / 4 || a->ga->agent_pending >= all;
}

/* Puts a (frames waiting, no job) on the list agent_check starts jobs
 * from, holding it until then. */
static void la__ready(la_ga_agent_t *a) {
  if (a->queued) return;
  a->queued = 1;
  la_conn_hold(&a->conn);
  a->ready_next = a->ga->agents_ready;
  a->ga->agents_ready = a;
}

/* Reads again the paused connections that are under their share, while
 * the total is under agents.ingest_memory. */
static void la__resume_some(la_ga_t *ga) {
  for (la_ga_agent_t *a = ga->agents; a && ga->agents_paused; a = a->next) {
    if (!a->paused || la__over(a)) continue;
    a->paused = 0;
    ga->agents_paused--;
    la_conn_resume(&a->conn); /* may pause it again */
  }
}

/* The loop's part of a job, for a: hands its frames to ingest.c in order,
 * until one is bad or the connection closes. While a commit runs on the
 * committer thread the rest wait (parked, in order) for its result: returns
 * 1 when a is parked (it keeps its job and its hold), else 0. */
static int la__after_agent(la_ga_agent_t *a, int status) {
  /* the connection's one job is this one */
  assert(a->busy);
  la_ga_t *ga = a->ga;
  while (a->job_frames) {
    la__frame_t *f = a->job_frames;
    if (status == 0 && !a->conn.closing && ga->committing) {
      a->park_next = NULL;
      *ga->agents_parked_tail = a;
      ga->agents_parked_tail = &a->park_next;
      return 1;
    }
    a->job_frames = f->next;
    if (status == 0 && !a->conn.closing) {
      if (f->verdict == LA__F_BAD)
        la_conn_bad(&a->conn, f->why ? f->why : "a frame does not decode");
      else {
        int rc = la__agent_msg(a, f->type, f->m,
                               f->verdict == LA__F_OK
                                   ? NULL
                                   : (f->why ? f->why : "invalid trace"),
                               f->sig);
        if (rc == LA_EIO)
          la__store_unavailable(a, "store unavailable");
        else if (rc != 0)
          la_conn_end(&a->conn, "protocol error");
      }
    }
    assert(ga->agent_pending >= f->len && a->job_bytes >= f->len);
    ga->agent_pending -= f->len; /* counted when read */
    a->job_bytes -= f->len;
    /* its message was decoded on the pool: freed there too */
    la_reclaim_add(ga->reclaim, la__frame_reclaim, f);
  }
  assert(a->job_bytes == 0);
  a->busy = 0;
  if (a->pend && !a->conn.closing) la__ready(a); /* read meanwhile */
  return 0;
}

static void la__after(uv_work_t *req, int status) {
  la__job_t *j = req->data;
  la_ga_t *ga = j->agents->ga;
  for (la_ga_agent_t *a = j->agents, *n; a; a = n) {
    n = a->job_next;
    if (!la__after_agent(a, status)) la_conn_release(&a->conn);
  }
  free(j);
  la__resume_some(ga);
}

static void la__resume(la_ga_t *ga) {
  while (ga->agents_parked && !ga->committing) {
    la_ga_agent_t *a = ga->agents_parked;
    ga->agents_parked = a->park_next;
    if (!ga->agents_parked) ga->agents_parked_tail = &ga->agents_parked;
    if (la__after_agent(a, 0)) break; /* parked again, at the tail */
    la_conn_release(&a->conn);
  }
  la__resume_some(ga);
}

/* Moves a's frames waiting into job j. */
static void la__join(la__job_t *j, la_ga_agent_t *a) {
  /* one job per connection at a time: its receiving stream's state is
   * used by one thread, and its frames reach ingest.c in the order read */
  assert(!a->busy && !a->job_frames && a->pend);
  assert(!a->chunk_first); /* their buffer handed over (la__agent_lent) */
  a->job_frames = a->pend;
  a->job_bytes = a->pend_bytes;
  a->job_max_payload = a->conn.rd.max_payload;
  a->job_sigs = a->ga->set.representatives;
  a->pend = NULL;
  a->pend_tail = &a->pend;
  a->pend_bytes = 0;
  a->busy = 1;
  a->job_next = j->agents;
  j->agents = a;
  la_conn_hold(&a->conn); /* until la__after */
}

static void la__queue(la_ga_t *ga, la__job_t *j) {
  j->req.data = j;
  if (uv_queue_work(ga->loop, &j->req, la__work, la__after) != 0) {
    la__work(&j->req); /* no pool: on the loop thread */
    la__after(&j->req, 0);
  }
}

/* agent_check: after the iteration's reads (and the jobs that returned),
 * the connections with frames waiting and no job, spread over at most
 * LA__JOBS_PER_ROUND jobs. */
static void la__on_check(uv_check_t *h) {
  la_ga_t *ga = h->data;
  la__job_t *jobs[LA__JOBS_PER_ROUND] = {NULL};
  int k = 0;
  while (ga->agents_ready) {
    la_ga_agent_t *a = ga->agents_ready;
    ga->agents_ready = a->ready_next;
    a->queued = 0;
    if (!a->busy && a->pend && !a->conn.closing) {
      if (!jobs[k] && !(jobs[k] = calloc(1, sizeof *jobs[k]))) {
        la_log_error("LocalAgent %s: out of memory: closing", a->host);
        la_conn_close(&a->conn, "out of memory");
      } else {
        la__join(jobs[k], a);
        k = (k + 1) % LA__JOBS_PER_ROUND;
      }
    }
    la_conn_release(&a->conn);
  }
  for (int i = 0; i < LA__JOBS_PER_ROUND; i++)
    if (jobs[i]) la__queue(ga, jobs[i]);
  /* the frames this iteration handled: with the batch's commit when the
   * commit thread takes one (it wakes anyway), else a pool job */
  if (!la_ga_committer_carries(ga)) la_reclaim_flush(ga->reclaim);
}

/* la_conn_ops_t.on_raw: an authenticated connection's frame, kept where
 * it was read to wait for its job; before that, la_conn decodes it for
 * la__agent_frame. */
static int la__agent_raw(la_conn_t *c, uint16_t type, const uint8_t *p,
                         uint32_t len) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  la_ga_t *ga = a->ga;
  if (a->state != LA__AG_READY) return LA_CONN_RAW_PASS;
  if (!a->chunk && (a->chunk = malloc(sizeof *a->chunk))) {
    atomic_init(&a->chunk->refs, 1); /* the reader's, until on_lent */
    a->chunk->buf = NULL;
  }
  la__frame_t *f = a->chunk ? calloc(1, sizeof *f) : NULL;
  if (!f) {
    la_log_error("LocalAgent %s: out of memory: closing", a->host);
    return -1;
  }
  if (!a->chunk_first) a->chunk_first = f;
  atomic_fetch_add(&a->chunk->refs, 1);
  f->chunk = a->chunk;
  f->data = (uint8_t *)p; /* the pool opens it in place */
  f->type = type;
  f->len = len;
  *a->pend_tail = f;
  a->pend_tail = &f->next;
  a->pend_bytes += len;
  ga->agent_pending += len;
  if (!a->busy) la__ready(a);
  if (!la__over(a)) return LA_CONN_RAW_TAKEN | LA_CONN_RAW_IN_PLACE;
  a->paused = 1;
  ga->agents_paused++;
  return LA_CONN_RAW_PAUSE | LA_CONN_RAW_IN_PLACE;
}

/* la_conn_ops_t.on_lent: the buffer the frames kept since the last call
 * are in (the read buffer, or a copy after a short read: they move there);
 * freed by the last of them. They are all still waiting in pend: a job
 * takes them after this read's callback at the earliest. */
static void la__agent_lent(la_conn_t *c, uint8_t *buf, const uint8_t *was) {
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  assert(a->chunk && !a->chunk->buf);
  if (buf != was)
    for (la__frame_t *f = a->chunk_first; f; f = f->next)
      if (f->chunk == a->chunk) f->data = buf + (f->data - was);
  a->chunk->buf = buf;
  a->chunk_first = NULL;
  la__chunk_t *ch = a->chunk;
  a->chunk = NULL;
  la__chunk_put(ch); /* the reader's reference */
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
    .on_raw = la__agent_raw,
    .on_lent = la__agent_lent,
};

/* A connection not authenticated this long may be closed to admit a new
 * one: a LocalAgent in its handshake (a few round trips) and a burst of new
 * connections do not push each other out. */
enum { LA__EVICT_WAIT_MS = 1000 };

/* The connection other than self not authenticated (from addr; any when
 * addr is NULL) that has waited longest, LA__EVICT_WAIT_MS at least;
 * NULL when none has. */
static la_ga_agent_t *la__longest_waiting(la_ga_t *ga, const la_ga_agent_t *self,
                                          const char *addr) {
  uint64_t now = uv_now(ga->loop);
  la_ga_agent_t *old = NULL;
  for (la_ga_agent_t *o = ga->agents; o; o = o->next)
    if (o != self && o->state != LA__AG_READY && !o->conn.closing &&
        (!addr || !strcmp(o->conn.addr, addr)) &&
        now - o->since_ms >= LA__EVICT_WAIT_MS &&
        (!old || o->since_ms < old->since_ms))
      old = o;
  return old;
}

/* Closes o (unauthenticated) to admit a new connection; what: the share
 * that was full. Counted in agents_evicted, logged at most once a second. */
static void la__evict(la_ga_t *ga, la_ga_agent_t *o, const char *what) {
  static la_ratelimit_t rl; /* this file's: eviction log lines */
  uint64_t missed = 0;
  if (la_ratelimit_ok(&rl, 1000, &missed))
    la_log_info("LocalAgent connection %s not authenticated after %llu ms "
                "closed to admit a new one (%s full; %llu more since the "
                "last line)",
                o->conn.peer,
                (unsigned long long)(uv_now(ga->loop) - o->since_ms), what,
                (unsigned long long)missed);
  ga->st.agents_evicted++;
  la_conn_close(&o->conn, "not authenticated, closed for a new connection");
}

int la_ga_agent_make_room(la_ga_t *ga) {
  la_ga_agent_t *o = la__longest_waiting(ga, NULL, NULL);
  if (!o) return 0;
  la__evict(ga, o, "agents.max_connections");
  return 1;
}

/* la_conn_admission_t.refuse: whether the peer's address already holds
 * its share of unauthenticated connections (authenticated LocalAgents are
 * not limited per address). A full share makes room by closing the
 * address's unauthenticated connection that has waited longest (a second
 * at least), so idle connections cannot keep that address's LocalAgent
 * out; only when all of them are younger is the new one refused. */
static const char *la__handshakes_over_cap(la_conn_t *c) {
  static la_ratelimit_t rl; /* this file's: refusal log lines */
  la_ga_agent_t *a = (la_ga_agent_t *)c;
  la_ga_t *ga = a->ga;
  int n = 0;
  for (la_ga_agent_t *o = ga->agents; o; o = o->next)
    if (o != a && o->state != LA__AG_READY && !o->conn.closing &&
        !strcmp(o->conn.addr, c->addr))
      n++;
  la_ga_agent_t *old;
  if (n >= ga->set.agent_max_handshakes_per_addr &&
      (old = la__longest_waiting(ga, a, c->addr))) {
    la__evict(ga, old, "agents.max_handshakes_per_address");
    return NULL;
  }
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
  a->since_ms = uv_now(a->ga->loop);
  a->pend_tail = &a->pend;
  LA_CONN_LIST_PUSH(a->ga->agents, a);
  a->ga->n_agents++;
}

void la_ga_agent_accept(la_ga_t *ga, uv_stream_t *server) {
  if (!ga->agent_check_on) { /* the first connection starts it */
    uv_check_init(ga->loop, &ga->agent_check);
    ga->agent_check.data = ga;
    uv_check_start(&ga->agent_check, la__on_check);
    ga->agent_check_on = 1;
  }
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
        la_store_agent_seq_update(ga->store, a->ident, a->stored_seq) != 0)
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
    if (a->state == LA__AG_READY && !a->conn.closing)
      la__store_unavailable(a, reason); /* they resend, to this one */
    else
      la_conn_close(&a->conn, reason);
  }
}

static void la__status_rows(la_ga_t *ga, La__StatusReply *r) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next)
    if (a->state == LA__AG_READY && !a->conn.closing)
      la_status_agent(r, a->host, a->conn.peer, a->messages, a->acked_seq);
}

static void la__refuse_rank(la_ga_t *ga, const char *host,
                            const La__RankRefused *m) {
  for (la_ga_agent_t *a = ga->agents; a; a = a->next)
    if (a->state == LA__AG_READY && !a->conn.closing && !strcmp(a->host, host))
      la_conn_send(&a->conn, LA__MSG_TYPE__MSG_RANK_REFUSED, &m->base, 0);
}

const la_ga_agent_ops_t la_ga_agent_ops = {
    .record_seqs = la__record_seqs,
    .ack = la__ack,
    .close_all = la__close_all,
    .connected = la__connected,
    .status_rows = la__status_rows,
    .refuse_rank = la__refuse_rank,
    .resume = la__resume,
};
