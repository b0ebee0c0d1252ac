/* SPDX-License-Identifier: BSD-3-Clause */
/* feed_parts.c: a feed connection's queue of Trace-Sets sent in parts
 * (feed_parts.h), and the encoding those sets share.
 *
 * A subscriber of sets_version 2 (libla_client) gets each set as a
 * TraceSetHead and TraceSetPart frames of at most feed.part_bytes: the set
 * is encoded once, shared by every subscriber that streams it, and its
 * parts are queued as the subscriber's socket drains (feed.c's on_written
 * pumps), so a set of any size reaches a subscriber that reads. One it
 * will not get (over its max_set_bytes, or its queue already holds sets
 * and this one would pass feed.queue_bytes) is announced by a SetNotice
 * naming the set, its size and the limit, and counted. A set answering a
 * Query takes the same queue (after the sets already queued), its head
 * marked query; feed.c measures it against the same bounds (la_ga_over)
 * before it is encoded.
 *
 * Knows the frames of a set in parts and the bounds of a queue; which
 * sets a connection gets, and when, is feed.c's.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_parts.h"
#include "la_log.h"
#include "reclaim.h"

/* A SetNotice queued behind sets not yet handed over, sent in its place. */
typedef struct la__notice_out {
  char app[LA_MAX_ID_LEN + 1];
  char limit_name[48];
  uint64_t tag, set_bytes, limit, dropped;
  size_t bytes; /* its frame's */
} la__notice_out_t;

/* A set queued for one subscriber in parts: what of it is sent; or a
 * notice (enc NULL). */
typedef struct la_ga_out {
  struct la_ga_out *next;
  la_ga_enc_t *enc;
  la__notice_out_t *notice;
  size_t off;    /* bytes of enc handed to the connection */
  uint32_t part; /* next part's index */
  int head_sent;
  int query; /* answers a Query: its head says so; not counted in sent */
  int own;   /* queued for this connection alone (query, stored set) */
  int wait;  /* its place kept, taken or not once measured (q->unsized) */
  int held;  /* queued while q was held (counted in held_bytes once taken) */
} la_ga_out_t;

/* Bytes of the encodings queues hold (la_ga_enc_held): one GlobalAgent
 * per process, its loop thread. */
static size_t la__enc_held;
static int la__stalled; /* a queue stopped for memory (la_ga_partq_unstall) */

int la_ga_partq_unstall(void) {
  int was = la__stalled;
  la__stalled = 0;
  return was;
}

size_t la_ga_enc_held(void) {
  return la__enc_held;
}

/* An encoding at least this large is freed on the pool when a queue drops
 * its last reference: freeing a 49 MB set (its pages unmapped) was about
 * 5% of the loop thread's CPU at 10^4 ranks. */
#define LA__ENC_FREE_ON_POOL ((size_t)1 << 20)

/* Frees an encoding and its bytes when they are a block of their own. */
static void la__enc_free(void *p) {
  la_ga_enc_t *e = p;
  if (e->data != (uint8_t *)(e + 1)) free(e->data);
  free(e);
}

/* la_ga_enc_unref, a large encoding's memory freed through r (reclaim.h;
 * NULL: at once). */
static void la__enc_unref_via(struct la_reclaim *r, la_ga_enc_t *e) {
  if (e && --e->refs == 0) {
    if (e->counted) la__enc_held -= e->len;
    if (e->len >= LA__ENC_FREE_ON_POOL)
      la_reclaim_add(r, la__enc_free, e);
    else
      la__enc_free(e);
  }
}

void la_ga_enc_unref(la_ga_enc_t *e) {
  la__enc_unref_via(NULL, e);
}

void la_ga_partq_init(la_ga_partq_t *q, la_ga_t *ga, la_conn_t *conn,
                      la_ga_room_fn *room) {
  q->ga = ga;
  q->conn = conn;
  q->room = room;
  q->out_tail = &q->out;
}

void la_ga_partq_free(la_ga_partq_t *q) {
  while (q->out) {
    la_ga_out_t *o = q->out;
    q->out = o->next;
    la__enc_unref_via(q->ga->reclaim, o->enc);
    free(o); /* and its notice, if one */
  }
  q->out_tail = &q->out;
  q->out_pending = q->query_pending = q->own_bytes = q->notice_bytes = 0;
  q->hold_at = NULL;
  q->held_bytes = 0;
  q->unsized = 0;
}

void la_ga_partq_end(la_ga_partq_t *q, const char *name, uint64_t limit,
                     size_t n) {
  la_conn_t *c = q->conn;
  if (q->ended || c->closing) return;
  q->ended = 1;
  la_log_warnx(
      "feed connection %s: %zu bytes queued and %zu more would pass %s = "
      "%llu: the peer is not reading: closing after an Error",
      c->peer, c->out_bytes, n, name, (unsigned long long)limit);
  la_ga_partq_free(q); /* its sets in parts: what is not written yet */
  char msg[300];
  snprintf(msg, sizeof msg,
           "%zu bytes wait for you to read them and %zu more would pass %s "
           "= %llu: closing",
           c->out_bytes, n, name, (unsigned long long)limit);
  La__Error e = LA__ERROR__INIT;
  e.code = LA_ELIMIT;
  e.message = msg;
  la_conn_set_max_output(c, 0); /* the Error goes after what waits */
  if (la_conn_send(c, LA__MSG_TYPE__MSG_ERROR, &e.base, 1) == 0)
    la_conn_set_deadline(c, (uint64_t)q->ga->set.handshake_ms);
}

int la_ga_partq_send(la_ga_partq_t *q, uint16_t type,
                     const ProtobufCMessage *m) {
  la_conn_t *c = q->conn;
  if (q->ended || c->closing) return LA_EIO;
  size_t n = la_frame_size(m);
  if (c->max_out && c->out_bytes > 0 && c->out_bytes + n > c->max_out) {
    la_ga_partq_end(q, q->limit_name ? q->limit_name : "feed.max_output",
                    c->max_out, n);
    return LA_ELIMIT;
  }
  return la_conn_send(c, type, m, 0);
}

/* Payload bytes of a set per TraceSetPart: the part limit less the frame
 * header and the part's own fields. */
static size_t la__part_data(const la_ga_t *ga) {
  return (size_t)ga->set.feed_part_bytes - 64;
}

static void la__part_written(void *ga, void *e) {
  la__enc_unref_via(((la_ga_t *)ga)->reclaim, e);
}

/* Bytes of a varint of v, written at p (NULL: counted only). */
static size_t la__varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  for (; v >= 0x80; v >>= 7, n++)
    if (p) p[n] = (uint8_t)(v | 0x80);
  if (p) p[n] = (uint8_t)v;
  return n + 1;
}

/* Sends o's next part, its k bytes at o->off. In clear, the bytes are
 * written from the encoding, which the write holds (no copy, no frame
 * buffer: a set of 10^4 ranks is tens of MB); a sealed record is made
 * from a copy (la_conn_send). Returns 0, or nonzero when c is closing. */
static int la__send_part(la_ga_partq_t *q, la_ga_out_t *o, size_t k) {
  La__TraceSetPart p = LA__TRACE_SET_PART__INIT;
  p.part = o->part;
  p.data.data = o->enc->data + o->off;
  p.data.len = k;
  if (q->conn->sec)
    return la_conn_send(q->conn, LA__MSG_TYPE__MSG_TRACE_SET_PART, &p.base, 0);
  /* the frame's header, then TraceSetPart's fields: part (1, varint) and
   * data (2, length-delimited), the data last */
  uint8_t h[LA_FRAME_HEADER_LEN + 1 + 10 + 1 + 10];
  size_t n = LA_FRAME_HEADER_LEN;
  h[n++] = 1 << 3 | 0;
  n += la__varint(h + n, p.part);
  h[n++] = 2 << 3 | 2;
  n += la__varint(h + n, k);
  la_frame_header_put(h, LA__MSG_TYPE__MSG_TRACE_SET_PART,
                      (uint32_t)(n - LA_FRAME_HEADER_LEN + k));
  assert(n + k == la_frame_size(&p.base) && n <= LA_CONN_REF_HEAD_MAX);
  o->enc->refs++; /* until the write is done */
  int rc = la_conn_send_ref(q->conn, h, n, p.data.data, k, la__part_written,
                            q->ga, o->enc);
  if (rc) o->enc->refs--;
  return rc;
}

/* Fills a SetNotice from n. */
static void la__notice_msg(La__SetNotice *m, la__notice_out_t *n) {
  m->app_id = n->app;
  m->cycle_tag = n->tag;
  m->set_bytes = n->set_bytes;
  m->limit_name = n->limit_name;
  m->limit = n->limit;
  m->has_dropped = 1;
  m->dropped = n->dropped;
}

/* Sends the notice n. 0, or nonzero when the connection is closing. */
static int la__notice_send(la_ga_partq_t *q, la__notice_out_t *n) {
  La__SetNotice m = LA__SET_NOTICE__INIT;
  la__notice_msg(&m, n);
  return la_ga_partq_send(q, LA__MSG_TYPE__MSG_SET_NOTICE, &m.base);
}

void la_ga_partq_pump(la_ga_partq_t *q) {
  la_conn_t *c = q->conn;
  size_t chunk = la__part_data(q->ga);
  size_t part = (size_t)q->ga->set.feed_part_bytes;
  while (
      q->out && !c->closing && !q->ended && !q->hold_out &&
      c->out_bytes < 2 * part &&
      !(c->out_bytes > 0 && c->max_out && c->out_bytes + part > c->max_out)) {
    la_ga_out_t *o = q->out;
    if (o->notice) {                             /* its place reached */
      if (la__notice_send(q, o->notice)) return; /* closing */
      q->notice_bytes -= o->notice->bytes;
      q->out = o->next;
      if (!q->out) q->out_tail = &q->out;
      if (q->hold_at == &o->next) q->hold_at = &q->out;
      free(o); /* and its notice */
      continue;
    }
    if (!o->enc->ready || o->wait) return; /* pumped again once it is */
    uint64_t limit;
    if (q->room(q, part, 1, &limit)) {
      la__stalled = 1; /* pumped again once memory is freed */
      return;
    }
    if (!o->head_sent) {
      La__TraceSetHead h = LA__TRACE_SET_HEAD__INIT;
      h.app_id = o->enc->app;
      h.cycle_tag = o->enc->tag;
      h.set_bytes = o->enc->len;
      h.parts = (uint32_t)((o->enc->len + chunk - 1) / chunk);
      h.has_dropped = !o->query;
      h.dropped = o->query ? 0 : q->dropped;
      h.has_query = h.query = o->query;
      if (la_conn_send(c, LA__MSG_TYPE__MSG_TRACE_SET_HEAD, &h.base, 0))
        return; /* closing */
      o->head_sent = 1;
      continue;
    }
    size_t k = o->enc->len - o->off < chunk ? o->enc->len - o->off : chunk;
    if (la__send_part(q, o, k)) return;
    o->off += k;
    o->part++;
    q->out_pending -= k;
    if (o->query) q->query_pending -= k;

    if (o->off == o->enc->len) {
      q->out = o->next;
      if (!q->out) q->out_tail = &q->out;
      if (!o->query) q->sent++;
      if (o->own) q->own_bytes -= o->enc->len;
      la__enc_unref_via(q->ga->reclaim, o->enc);
      free(o);
    }
  }
}

static void la__notice_at(la_ga_partq_t *q, const char *app_id, uint64_t tag,
                          size_t set_bytes, const char *limit_name,
                          uint64_t limit, la_ga_out_t ***at);

/* Tells q's subscriber that the set of e will not reach it: limit_name =
 * limit is what it is over; at: where in the queue (la__notice_at). Counted
 * (set_notices) and in q->dropped. */
static void la__notice(la_ga_partq_t *q, const la_ga_enc_t *e,
                       const char *limit_name, uint64_t limit,
                       la_ga_out_t ***at) {
  if (q->dropped == 0 || (q->dropped + 1) % 1000 == 0)
    la_log_warnx(
        "subscriber %s: Trace-Set %s cycle %llu (%zu bytes) not sent: "
        "over %s = %llu (%llu not delivered to it so far)",
        q->conn->peer, e->app, (unsigned long long)e->tag, e->len, limit_name,
        (unsigned long long)limit, (unsigned long long)q->dropped + 1);
  la__notice_at(q, e->app, e->tag, e->len, limit_name, limit, at);
}

void la_ga_partq_notice(la_ga_partq_t *q, const char *app_id, uint64_t tag,
                        size_t set_bytes, const char *limit_name,
                        uint64_t limit) {
  la__notice_at(q, app_id, tag, set_bytes, limit_name, limit, NULL);
}

/* la_ga_partq_notice, the notice put at *at in q (NULL: last), *at then
 * moving past it: sent at once when nothing is queued ahead of it. */
static void la__notice_at(la_ga_partq_t *q, const char *app_id, uint64_t tag,
                          size_t set_bytes, const char *limit_name,
                          uint64_t limit, la_ga_out_t ***at) {
  q->dropped++;
  q->ga->st.set_notices++;
  la__notice_out_t n = {.tag = tag,
                        .set_bytes = set_bytes,
                        .limit = limit,
                        .dropped = q->dropped};
  snprintf(n.app, sizeof n.app, "%s", app_id);
  snprintf(n.limit_name, sizeof n.limit_name, "%s", limit_name);
  la_conn_t *c = q->conn;
  if (!q->out) q->out_tail = &q->out;
  la_ga_out_t **where = at ? *at : q->out_tail;
  /* sets queued ahead of it not all handed over, or stored sets being read
   * to go before it: it waits for them, in its place, bounded as if it
   * were written (la_ga_partq_send) */
  la_ga_out_t *o = (where != &q->out || q->hold_out) && !q->ended && !c->closing
                       ? calloc(1, sizeof *o + sizeof n)
                       : NULL;
  if (!o) {
    la__notice_send(q, &n);
    return;
  }
  La__SetNotice m = LA__SET_NOTICE__INIT;
  la__notice_msg(&m, &n);
  n.bytes = la_frame_size(&m.base);
  size_t waiting = c->out_bytes + q->notice_bytes;
  if (c->max_out && waiting > 0 && waiting + n.bytes > c->max_out) {
    free(o);
    la_ga_partq_end(q, q->limit_name ? q->limit_name : "feed.max_output",
                    c->max_out, n.bytes);
    return;
  }
  o->notice = (la__notice_out_t *)(o + 1);
  *o->notice = n;
  q->notice_bytes += n.bytes;
  o->next = *where;
  *where = o;
  if (q->out_tail == where) q->out_tail = &o->next;
  if (at) *at = &o->next;
}

const char *la_ga_over(const char *queue_name, uint64_t queue_bytes, size_t len,
                       uint64_t max, size_t queued, uint64_t *limit) {
  if (max && len > max) {
    *limit = max;
    return "max_set_bytes";
  }
  if (queued > 0 && queued + len > queue_bytes) {
    *limit = queue_bytes;
    return queue_name;
  }
  return NULL;
}

/* o's bytes counted in q's and the feed's: o is taken. */
static void la__count(la_ga_partq_t *q, la_ga_out_t *o) {
  la_ga_enc_t *e = o->enc;
  if (!e->counted) {
    e->counted = 1;
    la__enc_held += e->len;
  }
  if (o->query) q->query_pending += e->len;
  if (o->own) q->own_bytes += e->len;
  if (o->held && q->hold_at) q->held_bytes += e->len;
  q->out_pending += e->len;
}

/* Puts e among q's sets in parts (query: it answers a Query), without
 * sending anything yet: at *at (NULL: last), at then moving past it;
 * wait: its place only, counted once la_ga_partq_resolve takes it. 0 or
 * LA_ENOMEM. */
static int la__enqueue_at(la_ga_partq_t *q, la_ga_enc_t *e, int query,
                          la_ga_out_t ***at, int wait) {
  la_ga_out_t *o = calloc(1, sizeof *o);
  if (!o) return LA_ENOMEM;
  o->enc = e;
  o->query = query;
  o->own = query || at != NULL;
  o->held = q->hold_out && !o->own;
  o->wait = wait;
  e->refs++;
  if (wait)
    q->unsized++;
  else
    la__count(q, o);
  if (!q->out) q->out_tail = &q->out;
  la_ga_out_t **where = at ? *at : q->out_tail;
  o->next = *where;
  *where = o;
  if (q->out_tail == where) q->out_tail = &o->next;
  if (at) *at = &o->next;
  return 0;
}

int la_ga_partq_query(la_ga_partq_t *q, la_ga_enc_t *e) {
  return la__enqueue_at(q, e, 1, NULL, 0);
}

/* Whether q takes e now (stored: before the live sets held): the limit it
 * would pass by name, its value in *limit, counted; NULL when it fits. */
static const char *la__verdict(la_ga_partq_t *q, const la_ga_enc_t *e,
                               int stored, uint64_t *limit) {
  la_ga_t *ga = q->ga;
  if (e->failed) { /* out of memory encoding it (logged) */
    *limit = 0;
    return "memory";
  }
  size_t queued = q->conn->out_bytes + q->out_pending;
  if (stored) queued -= q->held_bytes;
  const char *over = la_ga_over("feed.queue_bytes", ga->set.sub_queue_bytes,
                                e->len, q->max_set, queued, limit);
  /* memory: a stored set is this connection's alone; a live one already
   * queued elsewhere costs nothing more */
  if (!over && (stored || !e->counted))
    over = q->room(q, e->len, stored, limit);
  if (over && !strcmp(over, "max_set_bytes"))
    ga->st.sets_over_subscriber_max++;
  else if (over)
    ga->st.sets_dropped++;
  return over;
}

void la_ga_partq_offer(la_ga_partq_t *q, la_ga_enc_t *e) {
  uint64_t limit = 0;
  /* a stored set going before the live ones held (hold_at) counts only
   * what was queued before them, as when it was sent at once */
  int stored = q->hold_at != NULL && !q->hold_out;
  if (q->ended) return;
  /* not measured yet, or behind one that is not: its place now, the
   * verdict in queue order once measured (la_ga_partq_resolve) */
  int wait = !stored && (!e->sized || q->unsized);
  const char *over = wait ? NULL : la__verdict(q, e, stored, &limit);
  if (over) {
    la__notice(q, e, over, limit, NULL);
    return;
  }
  if (la__enqueue_at(q, e, 0, stored ? &q->hold_at : NULL, wait)) {
    la__notice(q, e, "memory", 0, NULL);
    return;
  }
  if (!stored) la_ga_partq_pump(q); /* stored ones: once all are in */
}

void la_ga_partq_resolve(la_ga_partq_t *q) {
  for (la_ga_out_t **at = &q->out; *at && q->unsized;) {
    la_ga_out_t *o = *at;
    if (!o->wait) {
      at = &o->next;
      continue;
    }
    /* it and what follows: once it is measured and written (ready is the
     * loop's; sized may still be written by its job) */
    if (!o->enc->ready) return;
    o->wait = 0;
    q->unsized--;
    uint64_t limit = 0;
    const char *over = la__verdict(q, o->enc, 0, &limit);
    if (!over) {
      la__count(q, o);
      at = &o->next;
      continue;
    }
    /* announced where it stood: nothing after it was sent before */
    *at = o->next;
    if (q->out_tail == &o->next) q->out_tail = at;
    if (q->hold_at == &o->next) q->hold_at = at;
    la__notice(q, o->enc, over, limit, &at);
    la__enc_unref_via(q->ga->reclaim, o->enc);
    free(o);
  }
}

void la_ga_partq_hold(la_ga_partq_t *q) {
  q->hold_out = 1;
  q->held_bytes = 0;
  if (!q->out) q->out_tail = &q->out;
  q->hold_at = q->out_tail;
}

void la_ga_partq_offer_stored(la_ga_partq_t *q, la_ga_enc_t *e) {
  q->hold_out = 0;
  la_ga_partq_offer(q, e);
}

void la_ga_partq_release(la_ga_partq_t *q) {
  q->hold_out = 0;
  q->hold_at = NULL;
  q->held_bytes = 0;
}

size_t la_ga_set_bytes(const La__TraceSet *set) {
  La__TraceSet copy = *set;
  copy.has_dropped = 0;
  return protobuf_c_message_get_packed_size(&copy.base);
}

la_ga_enc_t *la_ga_enc_alloc(const La__TraceSet *set) {
  size_t n = la_ga_set_bytes(set);
  la_ga_enc_t *e = malloc(sizeof *e + (n ? n : 1));
  if (!e) return NULL;
  e->refs = 1;
  e->ready = e->counted = e->failed = 0;
  e->sized = 1;
  snprintf(e->app, sizeof e->app, "%s", set->app_id);
  e->tag = set->cycle_tag;
  e->len = n;
  e->data = (uint8_t *)(e + 1);
  return e;
}

la_ga_enc_t *la_ga_enc_unsized(const La__TraceSet *set) {
  la_ga_enc_t *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->refs = 1;
  snprintf(e->app, sizeof e->app, "%s", set->app_id);
  e->tag = set->cycle_tag;
  return e;
}

void la_ga_enc_fill(la_ga_enc_t *e, const La__TraceSet *set) {
  if (!e->sized) {
    size_t len = la_ga_set_bytes(set);
    e->data = malloc(len ? len : 1);
    e->len = len;
    e->failed = !e->data;
    e->sized = 1;
    if (e->failed) return;
  }
  La__TraceSet copy = *set;
  copy.has_dropped = 0;
  size_t n = protobuf_c_message_pack(&copy.base, e->data);
  (void)n;
  assert(n == e->len); /* the set did not change since it was measured */
}

la_ga_enc_t *la_ga_encode_quiet(const La__TraceSet *set) {
  la_ga_enc_t *e = la_ga_enc_alloc(set);
  if (!e) return NULL;
  la_ga_enc_fill(e, set);
  e->ready = 1;
  return e;
}

void la_ga_encode_failed(const char *app, uint64_t tag, size_t n) {
  la_log_warnx(
      "Trace-Set %s cycle %llu: out of memory encoding %zu bytes "
      "for subscribers",
      app, (unsigned long long)tag, n);
}

la_ga_enc_t *la_ga_encode(const La__TraceSet *set) {
  la_ga_enc_t *e = la_ga_encode_quiet(set);
  if (!e)
    la_ga_encode_failed(set->app_id, set->cycle_tag, la_ga_set_bytes(set));
  return e;
}
