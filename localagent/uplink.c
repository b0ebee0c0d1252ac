/* SPDX-License-Identifier: BSD-3-Clause */
/* uplink.c: the LocalAgent's link to the GlobalAgent, one or several
 * (shards): what is sent where, and what an acknowledgement means for the
 * queue. The connections themselves (connect, handshake, encryption,
 * backoff) are uplink_link.c's; this file owns them and is told through
 * their events when one can take messages, acknowledged some, or failed.
 *
 * Once a link is connected it sends every queued message (RankStart,
 * CompactTrace, TraceMissing, RankEnd) in sequence order, each to its
 * application's shard, at most 4 MiB unacknowledged on a socket at a time.
 * Acks are cumulative; an acknowledged message leaves the queue (outq.c),
 * and only then. After a failed link everything unacknowledged is sent
 * again: the GlobalAgent deduplicates by (app, rank, cycle). Starting
 * without a GlobalAgent is normal: messages wait in the log (outq.h). Knows
 * nothing of applications; session.c, worker.c and main.c hand it messages,
 * which are written to the log (la_uplink_log, any thread) before they are
 * queued. At start it records missing the cycles whose trace the log's
 * damage may have held (la_outq_damaged).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "la_errors.h"
#include "la_log.h"
#include "la_sockio.h"
#include "uplink_link.h"

#define LA__MAX_SHARDS 16

typedef struct la_uplink la_uplink_t;

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
  la_uplink_link_t *links[LA__MAX_SHARDS];
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
static void la__acked(la_uplink_link_t *up, uint64_t seq) {
  la_uplink_t *u = up->owner;
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
        la_uplink_link_fail(u->links[0], "reading the queue: %s",
                            la_strerror(rc));
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
    la_uplink_link_t *up = k >= 0 ? u->links[k] : NULL;
    if (!up || up->state != LA_UP_READY || up->inflight >= LA_UP_INFLIGHT_MAX) {
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
    if (la_uplink_link_write(up, bytes, len) != 0) break;
  }
}

/* ------------------------------------------------------ the links' events */

static void la__on_link_ready(la_uplink_link_t *up) {
  la__pump(up->owner);
}

static void la__on_link_acked(la_uplink_link_t *up, uint64_t seq) {
  la__acked(up, seq);
  la__pump(up->owner);
  la_agent_progress(up->ag);
}

/* Only a connected link was sent messages: with several shards, the
 * retries of one that is down must not make the others resend. */
static void la__on_link_failed(la_uplink_link_t *up, int was_ready) {
  la_uplink_t *u = up->owner;
  if (was_ready || u->n == 1) la__rewind(u);
}

static const la_uplink_link_events_t la__link_events = {
    la__on_link_ready, la__on_link_acked, la__on_link_failed};

#define LA__DAMAGED_REASON \
  "its record in the LocalAgent's log was damaged (failed its checksum)"

/* A cycle an earlier run took whose trace may have been in a damaged span
 * of the log (outq.h, la_outq_damaged): recorded missing, saying so. */
static void la__on_damaged(void *arg, const la_outq_key_t *k) {
  la_agent_t *ag = arg;
  int rc = la_uplink_log_missing(ag, k->app_id, k->rank, k->cycle_tag,
                                 LA__DAMAGED_REASON);
  la_log_warnx(
      "%s rank %u cycle %llu: its record in the log was damaged: "
      "%s",
      k->app_id, k->rank, (unsigned long long)k->cycle_tag,
      rc == 0 ? "recorded missing" : "NOT recorded missing");
}

int la_uplink_start(la_agent_t *ag, char *why, size_t why_len) {
  la_uplink_t *u = calloc(1, sizeof *u);
  if (!u) return LA_ENOMEM;
  u->ag = ag;
  ag->up = u;
  /* before anything is sent: the log's damage found at open */
  la_outq_damaged(ag->q, la__on_damaged, ag);
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
    la_uplink_link_t *up = calloc(1, sizeof *up);
    if (!up) {
      rc = LA_ENOMEM;
      break;
    }
    up->ag = ag;
    up->ev = &la__link_events;
    up->owner = u;
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
    la_uplink_link_init(up, &key, have_key);
  }
  if (have_key) la_auth_key_wipe(&key);
  if (rc) return rc;
  if (u->n > 1)
    la_log_info(
        "%d GlobalAgent shards: each application goes to one by a "
        "hash of its id, failing over in list order",
        u->n);
  for (int i = 0; i < u->n; i++) la_uplink_link_connect(u->links[i]);
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
  for (int i = 0; i < u->n; i++) la_uplink_link_stop(u->links[i]);
  /* handles are closed by main.c's walk; the structs live until exit */
}

/* The link whose state speaks for the uplink: the first one not
 * connected, else the first. NULL without a GlobalAgent. */
static la_uplink_link_t *la__worst(la_agent_t *ag) {
  la_uplink_t *u = ag->up;
  if (!u || !u->n) return NULL;
  for (int i = 0; i < u->n; i++)
    if (u->links[i]->state != LA_UP_READY) return u->links[i];
  return u->links[0];
}

const char *la_uplink_state(la_agent_t *ag) {
  la_uplink_link_t *up = la__worst(ag);
  return up ? la_uplink_link_state_name(up) : "none";
}

void la_uplink_states(la_agent_t *ag, char *buf, size_t len) {
  la_uplink_t *u = ag->up;
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; u && i < u->n && at < len; i++) {
    la_uplink_link_t *up = u->links[i];
    int w = snprintf(buf + at, len - at, "%s%s %s", i ? "; " : "", up->addr_s,
                     la_uplink_link_state_name(up));
    if (w > 0) at += (size_t)w;
  }
  if (!buf[0]) snprintf(buf, len, "none");
}

uint64_t la_uplink_connects(la_agent_t *ag) {
  la_uplink_t *u = ag->up;
  uint64_t n = 0;
  for (int i = 0; u && i < u->n; i++) n += u->links[i]->connects;
  return n;
}

const char *la_uplink_last_error(la_agent_t *ag) {
  la_uplink_link_t *up = la__worst(ag);
  return up && up->last_error[0] ? up->last_error : "-";
}