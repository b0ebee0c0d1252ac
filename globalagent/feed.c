/* SPDX-License-Identifier: BSD-3-Clause */
/* feed.c: the GlobalAgent's subscriber port: load balancers, lactl, live
 * views.
 *
 * A connection must speak within handshake_timeout. Subscribe{app_id filter,
 * live, latest, cycle} starts the stream: the requested stored set(s) first,
 * then every Trace-Set as it closes (complete or partial). Query gets the
 * typed answer of feed_query.c (applications, cycles, a stored Trace-Set);
 * StatusRequest the status.
 * A slow subscriber never stalls stitching: when the bytes queued to it
 * exceed feed.queue_bytes, sets are dropped for it, counted, and the count
 * travels in the next set it gets (TraceSet.dropped).
 * A subscriber of sets_version 2 (libla_client) gets each set as a
 * TraceSetHead and TraceSetPart frames of at most feed.part_bytes, from
 * its queue of sets in parts (feed_parts.c: each set encoded once and
 * shared, its parts queued as the subscriber's socket drains, a set it
 * will not get announced by a SetNotice). Older subscribers get whole
 * TraceSet frames as before.
 * A Query "traceset" of sets_version 2 gets its set the same way: the
 * QueryReply carries the set's size, then the set follows as a
 * TraceSetHead marked query and its parts, in the same queue (after the
 * sets already queued) and under the same bounds, a refusal being the
 * reply's LA_ELIMIT naming the limit. Older clients get the set inside
 * the QueryReply.
 *
 * Off the loop thread (feed_jobs.c): what reads a stored Trace-Set, a
 * Query "traceset" and a Subscribe's cycle or latest sets (of subscribers
 * that take parts), because a set of 10^4 ranks is tens of MB and loading
 * and encoding it takes the loop hundreds of ms, during which no trace
 * would be read, committed or acknowledged and no other connection
 * served. The job loads the set with its own read connection, measures it
 * against the bounds (la_ga_over, with the connection's query bytes as they
 * were when the job started: a set refused is never encoded), encodes it
 * and frees the loaded copy; the loop then sends the reply and queues the
 * parts, exactly as before. Listings, element ids and the status are small
 * and stay on the loop. A connection has one job at a time: a frame read
 * while its job runs is kept and reading stops until the job returns, so
 * replies keep the order of requests and a client that floods queries
 * fills its socket, not our memory. A connection closed meanwhile is held
 * until its job returns, which then frees the result. A subscription's
 * live sets published while its stored sets are read wait behind them.
 * Old clients' sets (one frame) are loaded on the pool too but encoded by
 * la_conn_send on the loop. A live set that closes is encoded for the
 * subscribers that take parts on the pool as well (la_ga_pub_t below):
 * offered to their queues at once (its place), measured and written by
 * the job, then taken or announced by each queue in its order and sent; a
 * set of at most LA__LOOP_ENCODE_MAX bytes is written on the loop at once.
 *
 * Limits (the port is unauthenticated): until its first request a
 * connection's frames are limited to feed.handshake_max_frame; one address
 * holds at most feed.max_connections_per_address connections; a connection
 * that is not a live subscriber is closed after feed.idle_timeout without a
 * request. Output follows what the connection asked for: a query or status
 * connection may have feed.max_output bytes queued, a subscriber
 * feed.queue_bytes (a single message or set is always taken when nothing
 * else waits); one that would pass its limit gets an Error naming it and is
 * closed gracefully (la_ga_partq_end). All feed connections together hold
 * at most feed.memory bytes (frames queued to them, and the encodings of
 * their sets in parts, each counted once however many share it), and the
 * connections of one address at most feed.memory_per_address of it (their
 * frames and the sets queued for them alone): a set that does not fit is
 * refused (a query's LA_ELIMIT reply, a SetNotice, a dropped whole set), a
 * reply that does not fit ends the connection as above. Memory freed by
 * closed connections is handed back to the system (malloc_trim) at most
 * once a second after a burst of closes. Knows the feed protocol; what is
 * stored is the store's.
 */
#include <assert.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "feed_jobs.h"
#include "feed_parts.h"
#include "feed_query.h"
#include "ga.h"
#include "la_log.h"

typedef struct la_ga_sub {
  la_conn_t conn; /* first */
  la_ga_t *ga;
  struct la_ga_sub *prev, *next;
  int spoke; /* sent a valid request: no deadline any more */
  int subscribed, live;
  char app[LA_MAX_ID_LEN + 1]; /* "" = every application */
  uint32_t sets_version;       /* Subscribe.sets_version (1: whole frames) */
  la_ga_partq_t q;    /* its sets in parts (feed_parts.h), its counts */
  struct la__fq *job; /* its request on the pool (feed_jobs.c), or NULL */
  int in_submit;      /* submitting it: a job done at once goes on here */
  uint8_t *stash;     /* the frame read while job ran (reading stopped) */
  uint32_t stash_len;
  uint16_t stash_type;
  uint64_t last_ms; /* accepted, or its last request: idle since */
} la_ga_sub_t;

/* Handing memory back after closes: glibc keeps what connections freed
 * (their frames, their sets) in its heaps, so after a flood of clients the
 * daemon would stay at its peak. A close that freed memory starts a timer
 * (if none runs) that has malloc_trim(0) called at most once a second, on
 * the thread pool (it walks every heap: on the loop, with a 10^4-rank
 * set's traces held, it was about 4% of the loop's CPU); a burst of closes
 * costs one trim. One GlobalAgent per process. */
enum { LA__TRIM_MS = 1000 };
static uv_timer_t *la__trim_timer;
static uint64_t la__trim_last_ms;

static void la__trim_work(uv_work_t *w) {
  (void)w;
  malloc_trim(0);
}

static void la__trim_done(uv_work_t *w, int status) {
  (void)status;
  free(w);
}

static void la__trim_now(uv_timer_t *t) {
  la__trim_last_ms = uv_now(t->loop);
  uv_work_t *w = malloc(sizeof *w);
  if (!w || uv_queue_work(t->loop, w, la__trim_work, la__trim_done) != 0) {
    free(w);
    malloc_trim(0); /* no pool: here */
  }
}

static void la__trim_closed(uv_handle_t *h) {
  free(h);
}

/* Asks for a trim soon (rate-limited). Loop thread. */
static void la__trim_later(la_ga_t *ga) {
  if (ga->draining) return;
  if (!la__trim_timer) {
    la__trim_timer = malloc(sizeof *la__trim_timer);
    if (!la__trim_timer) return;
    uv_timer_init(ga->loop, la__trim_timer);
    uv_unref((uv_handle_t *)la__trim_timer); /* never keeps the loop up */
  }
  if (uv_is_active((uv_handle_t *)la__trim_timer)) return;
  uint64_t now = uv_now(ga->loop), next = la__trim_last_ms + LA__TRIM_MS;
  uv_timer_start(la__trim_timer, la__trim_now, next > now ? next - now : 0, 0);
}

/* Memory was freed: the queues stopped for it are pumped again. */
static void la__unstall(la_ga_t *ga) {
  if (!la_ga_partq_unstall()) return;
  for (la_ga_sub_t *s = ga->subs; s; s = s->next)
    if (s->q.out && !s->conn.closing) la_ga_partq_pump(&s->q);
}

static void la__sub_free(la_conn_t *c) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  la_ga_t *ga = s->ga;
  LA_CONN_LIST_UNLINK(ga->subs, s);
  la_ga_partq_free(&s->q);
  free(s->stash);
  free(s);
  la__unstall(ga);
  la__trim_later(ga);
}

/* The output limit of s as it asked: a subscriber's queue, or a query
 * connection's; its name into *name. */
static uint64_t la__limit(const la_ga_sub_t *s, const char **name) {
  const la_ga_settings_t *set = &s->ga->set;
  if (s->subscribed) {
    *name = "feed.queue_bytes";
    return set->sub_queue_bytes ? set->sub_queue_bytes : set->feed_part_bytes;
  }
  *name = "feed.max_output";
  return set->feed_max_output;
}

/* Bytes held for the feed connections: frames queued to their sockets,
 * and the encodings of sets queued in parts (each once); with addr, only
 * what the connections of addr hold alone (frames, own sets). */
static size_t la__held(const la_ga_t *ga, const char *addr) {
  size_t n = addr ? 0 : la_ga_enc_held();
  for (const la_ga_sub_t *o = ga->subs; o; o = o->next)
    if (!addr || !strcmp(o->conn.addr, addr))
      n += o->conn.out_bytes + (addr ? o->q.own_bytes : 0);
  return n;
}

static const char *la__room(const la_ga_partq_t *q, size_t n, int own,
                            uint64_t *limit) {
  const la_ga_t *ga = q->ga;
  if (la__held(ga, NULL) + n > ga->set.feed_memory) {
    *limit = ga->set.feed_memory;
    return "feed.memory";
  }
  if (own && la__held(ga, q->conn->addr) + n > ga->set.feed_memory_per_addr) {
    *limit = ga->set.feed_memory_per_addr;
    return "feed.memory_per_address";
  }
  return NULL;
}

/* Sends a reply or notice to s: within its output limit and the feed's
 * memory (the frame is s's alone), else s ends with an Error naming the
 * limit (la_ga_partq_end). Returns 0 or a negative LA_E* code. */
static int la__send(la_ga_sub_t *s, uint16_t type, const ProtobufCMessage *m) {
  if (s->q.ended || s->conn.closing) return LA_EIO;
  size_t n = la_frame_size(m);
  uint64_t limit;
  const char *over = la__room(&s->q, n, 1, &limit);
  if (over) {
    la_ga_partq_end(&s->q, over, limit, n);
    return LA_ELIMIT;
  }
  return la_ga_partq_send(&s->q, type, m);
}

static void la__sub_close(la_conn_t *c, const char *reason) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  /* a closing connection no longer holds a slot: it is gone by the end of
   * this loop iteration (admission counts open connections only) */
  s->ga->n_subs--;
  if (s->subscribed)
    la_log_info("subscriber %s left (%s): %llu sets sent, %llu dropped",
                c->peer, reason, (unsigned long long)s->q.sent,
                (unsigned long long)s->q.dropped);
}

/* Bytes of a varint of v. */
static size_t la__varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

/* Queues one set to s unless its queue is full (then counts a drop).
 * base: the set's frame size without its dropped field (0: computed
 * here), so a set published to many subscribers is measured once. */
static void la__send_set_sized(la_ga_sub_t *s, La__TraceSet *set, size_t base) {
  la_ga_t *ga = s->ga;
  if (!base) {
    set->has_dropped = 0;
    base = la_frame_size(&set->base);
  }
  /* the dropped field: one tag byte (field 10) and its varint */
  size_t n = base + 1 + la__varint_len(s->q.dropped);
  uint64_t limit;
  if (s->q.ended) return;
  if (s->conn.out_bytes + n > ga->set.sub_queue_bytes ||
      la__room(&s->q, n, 1, &limit)) {
    if (s->q.dropped++ == 0 || s->q.dropped % 1000 == 0)
      la_log_warnx(
          "subscriber %s is not reading: %llu Trace-Sets dropped "
          "for it so far",
          s->conn.peer, (unsigned long long)s->q.dropped);
    ga->st.sets_dropped++;
    return;
  }
  set->has_dropped = 1;
  set->dropped = s->q.dropped;
  if (la_ga_partq_send(&s->q, LA__MSG_TYPE__MSG_TRACE_SET, &set->base) == 0)
    s->q.sent++;
}

/* A connection receiving a set in parts is not idle: a query connection's
 * idle deadline starts again with each write. */
static void la__sub_written(la_conn_t *c) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  if (s->q.out && !(s->subscribed && s->live))
    la_conn_set_deadline(c, (uint64_t)s->ga->set.feed_idle_ms);
  la_ga_partq_pump(&s->q);
  la__unstall(s->ga);
}

static void la__send_set(la_ga_sub_t *s, La__TraceSet *set) {
  if (s->sets_version < 2) {
    la__send_set_sized(s, set, 0);
    return;
  }
  la_ga_enc_t *e = la_ga_encode(set);
  if (e) la_ga_partq_offer(&s->q, e);
  la_ga_enc_unref(e);
}

/* A set whose encoding is at most this many bytes is written on the loop
 * as it is published: packing it takes microseconds, while a pool job
 * costs two thread wake-ups (the pool's, then the loop's uv_async) between
 * the commit and the first byte sent, milliseconds when the daemons share
 * busy cores. Larger sets (a set of 10^4 ranks is tens of MB) go to the
 * pool as below. */
#define LA__LOOP_ENCODE_MAX (64 * 1024)

/* A set of at most this many traces is measured on the loop as it is
 * published (microseconds), so that a small one is written at once as
 * above; a larger one is measured by its job on the pool too
 * (la_ga_enc_unsized: 7% of the loop thread's CPU at 10^4 ranks). */
#define LA__LOOP_MEASURE_TRACES 256

/* A published set whose encoding for the subscribers that take parts is
 * measured and written on the thread pool: the loop queues it to them at
 * once (its place in their order), a pool job measures and writes it, and
 * the loop then has the queues decide on it and what waited behind it
 * (their bounds, in their order: la_ga_partq_resolve), marks it ready
 * and pumps them. One job at a time, in the order of publishing, and at
 * most one set waiting for it; the set (and what done releases: its
 * traces held against stitch.publish_memory) lives until its job
 * returned. */
typedef struct la_ga_pub {
  uv_work_t req;
  la_ga_t *ga;
  La__TraceSet *set;
  la_ga_enc_t *enc;
  void (*done)(la_ga_t *, La__TraceSet *, void *);
  void *arg;
} la_ga_pub_t;

/* e is measured and written: the queues holding it decide whether they
 * take it (and what waited behind it), then may send it. */
static void la__enc_written(la_ga_t *ga, la_ga_enc_t *e) {
  e->ready = 1;
  if (e->failed) la_ga_encode_failed(e->app, e->tag, e->len);
  for (la_ga_sub_t *s = ga->subs; s; s = s->next) {
    if (s->q.unsized) la_ga_partq_resolve(&s->q);
    if (s->q.out && !s->conn.closing) la_ga_partq_pump(&s->q);
  }
}

static void la__pub_work(uv_work_t *req) {
  la_ga_pub_t *p = req->data;
  la_ga_enc_fill(p->enc, p->set);
}

static void la__pub_submit(la_ga_t *ga, la_ga_pub_t *p);

static void la__pub_after(uv_work_t *req, int status) {
  la_ga_pub_t *p = req->data;
  la_ga_t *ga = p->ga;
  (void)status; /* never cancelled: uv_cancel is not called on these */
  /* publish order: one encoding job at a time, the next one waits */
  assert(ga->pub_running == p);
  ga->pub_running = NULL;
  la__enc_written(ga, p->enc);
  la_ga_enc_unref(p->enc);
  p->done(ga, p->set, p->arg);
  free(p);
  la_ga_pub_t *n = ga->pub_next;
  ga->pub_next = NULL;
  if (n) la__pub_submit(ga, n);
}

/* Starts p's job, or keeps p for when the running one returns (the only
 * set waiting: la_ga_feed_publish encodes on the loop while one waits).
 * A job the pool refuses is done on the loop. */
static void la__pub_submit(la_ga_t *ga, la_ga_pub_t *p) {
  if (ga->pub_running) {
    assert(!ga->pub_next);
    ga->pub_next = p;
    return;
  }
  ga->pub_running = p;
  p->req.data = p;
  if (uv_queue_work(ga->loop, &p->req, la__pub_work, la__pub_after) != 0) {
    la__pub_work(&p->req);
    la__pub_after(&p->req, 0);
  }
}

/* Whether subscriber s is sent the Trace-Sets of app_id as they close. */
static int la__takes(const la_ga_sub_t *s, const char *app_id) {
  return s->subscribed && s->live && !s->conn.closing && !s->q.ended &&
         (!s->app[0] || strcmp(s->app, app_id) == 0);
}

int la_ga_feed_has_taker(const la_ga_t *ga, const char *app_id) {
  for (const la_ga_sub_t *s = ga->subs; s; s = s->next)
    if (la__takes(s, app_id)) return 1;
  return 0;
}

void la_ga_feed_publish(la_ga_t *ga, La__TraceSet *set,
                        void (*done)(la_ga_t *, La__TraceSet *, void *),
                        void *arg) {
  ga->st.sets_published++;
  size_t base = 0;
  la_ga_enc_t *enc = NULL;
  int enc_tried = 0;
  for (la_ga_sub_t *s = ga->subs; s; s = s->next) {
    if (!la__takes(s, set->app_id)) continue;
    if (s->sets_version >= 2) {
      if (!enc_tried) {
        enc_tried = 1;
        /* encoded on the pool, but on the loop when the daemon drains (it
         * closes the connections next, after what is queued to them) or
         * when a set already waits for the pool: sets read back from the
         * store are not counted in stitch.publish_memory, so at most two
         * are held for it */
        int later = !ga->draining && !ga->pub_next;
        int small = set->n_traces <= LA__LOOP_MEASURE_TRACES;
        enc = !later  ? la_ga_encode(set)
              : small ? la_ga_enc_alloc(set)
                      : la_ga_enc_unsized(set);
        if (!enc && later)
          la_ga_encode_failed(set->app_id, set->cycle_tag,
                              la_ga_set_bytes(set));
        if (enc && later && enc->sized && enc->len <= LA__LOOP_ENCODE_MAX) {
          /* small: written now, sent as soon as it is queued */
          la_ga_enc_fill(enc, set);
          enc->ready = 1;
        }
      }
      if (enc)
        la_ga_partq_offer(&s->q, enc);
      else /* out of memory encoding it (logged): the subscriber is told */
        la_ga_partq_notice(&s->q, set->app_id, set->cycle_tag,
                           la_ga_set_bytes(set), "memory", 0);
      continue;
    }
    if (!base) {
      set->has_dropped = 0;
      base = la_frame_size(&set->base);
    }
    la__send_set_sized(s, set, base);
  }
  /* a queue took an encoding still to be written: a job writes it */
  int later = enc && !enc->ready && enc->refs > 1;
  la_ga_pub_t *p = later ? calloc(1, sizeof *p) : NULL;
  if (later && !p) { /* on the loop, then */
    la_ga_enc_fill(enc, set);
    la__enc_written(ga, enc);
  }
  if (!p) {
    la_ga_enc_unref(enc);
    done(ga, set, arg);
    return;
  }
  p->ga = ga;
  p->set = set;
  p->enc = enc;
  p->done = done;
  p->arg = arg;
  la__pub_submit(ga, p);
}

void la_ga_feed_unpublished(la_ga_t *ga, const char *app_id, uint64_t tag,
                            const char *why) {
  assert(app_id && why);
  ga->st.sets_unpublished++;
  uint64_t missed = 0;
  if (la_ratelimit_ok(&ga->unpublished_rl, 1000, &missed)) {
    char more[80] = "";
    if (missed)
      snprintf(more, sizeof more, " (%llu more such sets not logged)",
               (unsigned long long)missed);
    la_log_error(
        "Trace-Set %s cycle %llu is stored but cannot be published: reading "
        "it back from the store failed: %s; subscribers are sent a "
        "SetNotice (limit \"store\") instead%s",
        app_id, (unsigned long long)tag, why, more);
  }
  for (la_ga_sub_t *s = ga->subs; s; s = s->next) {
    if (!s->subscribed || !s->live || s->conn.closing || s->q.ended ||
        (s->app[0] && strcmp(s->app, app_id)))
      continue;
    if (s->sets_version >= 2)
      la_ga_partq_notice(&s->q, app_id, tag, 0, "store", 0);
    else
      s->q.dropped++; /* told in the next set's dropped count */
  }
}

/* The stored sets a Subscribe asks, read from st: app's set of cycle (when
 * has_cycle), then with latest the latest closed set of each application
 * (of app's alone when app is not ""); each one loaded is handed to fn,
 * which may change it but not keep it. Any thread, with a connection of its
 * own. */
static void la__stored_each(la_store_t *st, const char *app, int has_cycle,
                            uint64_t cycle, int latest,
                            void (*fn)(La__TraceSet *set, void *arg),
                            void *arg) {
  La__TraceSet *set = NULL;
  if (has_cycle && la_store_load_set(st, app, cycle, &set) == 0) {
    fn(set, arg);
    la_store_free_set(set);
  }
  if (!latest) return;
  la_store_app_t *a = NULL;
  size_t n = 0;
  if (la_store_apps(st, &a, &n) != 0) return;
  for (size_t i = 0; i < n; i++) {
    uint64_t tag;
    if ((app[0] && strcmp(app, a[i].app_id)) ||
        la_store_latest_cycle(st, a[i].app_id, LA_STORE_LATEST_CLOSED, &tag) !=
            0 ||
        la_store_load_set(st, a[i].app_id, tag, &set) != 0)
      continue;
    fn(set, arg);
    la_store_free_set(set);
  }
  free(a);
}

/* la__stored_each's fn for an old subscriber, on the loop: sent at once. */
static void la__send_stored(La__TraceSet *set, void *arg) {
  la__send_set(arg, set);
}

/* After a request: a live subscriber has no deadline (its queue bounds
 * it); any other connection is closed after idle_timeout without one. */
static void la__requested(la_ga_sub_t *s) {
  s->last_ms = uv_now(s->ga->loop);
  if (s->q.ended) return; /* its deadline is la_ga_partq_end's */
  if (!s->spoke) {        /* a valid request: the port's own frame limit */
    s->spoke = 1;
    la_conn_set_max_frame(&s->conn, (uint32_t)s->ga->set.feed_max_frame);
  }
  la_conn_set_deadline(&s->conn, s->subscribed && s->live
                                     ? 0
                                     : (uint64_t)s->ga->set.feed_idle_ms);
}

/* A stored set of a Subscribe, read by its job. */
typedef struct la__stored {
  char app[LA_MAX_ID_LEN + 1];
  uint64_t tag;
  size_t len;       /* its bytes in parts */
  la_ga_enc_t *enc; /* encoded; NULL: out of memory (len says how much) */
} la__stored_t;

/* A request of one connection on the thread pool (feed_jobs.c): a Query
 * "traceset", or a Subscribe's stored sets. What the pool thread reads
 * was copied in before it started; it writes only the result fields. */
typedef struct la__fq {
  la_ga_fjob_t job; /* first */
  la_ga_sub_t *s;   /* held until done */
  int subscribe;
  /* Query: the request and the connection's bounds as they were */
  La__Query q;
  char what[16], app[LA_MAX_ID_LEN + 1];
  int parts;              /* sets_version 2: the set follows in parts */
  uint64_t limit_bytes;   /* the bound of its queue of sets in parts */
  const char *limit_name; /* its name */
  size_t queued;          /* the connection's query_pending */
  la_ga_answer_t a;       /* the answer (its set already freed: parts) */
  int had_set;            /* the answer had a set (parts) */
  size_t len;             /* its bytes in parts */
  const char *over;       /* la_ga_over's verdict (NULL: fits) */
  uint64_t limit;
  la_ga_enc_t *enc; /* the set encoded (parts; NULL: refused, ENOMEM) */
  /* Subscribe: cycle of app (has_cycle), the latest of each app (latest) */
  int has_cycle, latest;
  uint64_t cycle;
  la__stored_t *sets;
  size_t n_sets;
} la__fq_t;

/* Measures the set of answer a (sets_version 2) against the bounds f
 * copied (la_ga_over, before any encoding), encodes it when it fits and
 * frees the loaded copy; the reply then carries no set. Any thread. */
static void la__query_measure(la__fq_t *f) {
  la_ga_answer_t *a = &f->a;
  f->had_set = 1;
  f->len = la_ga_set_bytes(a->set);
  /* what counts: the sets this connection asked for, its own memory (a
   * live set in its queue is shared, and bounded by la_ga_partq_offer) */
  f->over = la_ga_over(f->limit_name, f->limit_bytes, f->len,
                       f->q.has_max_set_bytes ? f->q.max_set_bytes : 0,
                       f->queued, &f->limit);
  f->enc = f->over ? NULL : la_ga_encode_quiet(a->set);
  snprintf(f->app, sizeof f->app, "%s", a->set->app_id);
  f->cycle = a->set->cycle_tag;
  la_store_free_set(a->set);
  a->set = NULL;
  a->reply.n_sets = 0;
  a->reply.sets = NULL;
}

/* The loop's end of la__query_measure: the set queued to s and its size
 * in the reply, or the reply turned into LA_ELIMIT naming the limit, or
 * LA_ENOMEM. Returns 1 when a set was queued (to pump once the reply is
 * sent). */
static int la__query_queue(la_ga_sub_t *s, la__fq_t *f) {
  la_ga_answer_t *a = &f->a;
  int queued = 0;
  if (!f->over && f->enc) f->over = la__room(&s->q, f->enc->len, 1, &f->limit);
  if (f->over) {
    la_log_info(
        "feed connection %s: Trace-Set %s cycle %llu (%zu bytes) not "
        "sent: over %s = %llu",
        s->conn.peer, f->app, (unsigned long long)f->cycle, f->len, f->over,
        (unsigned long long)f->limit);
    la_ga_answer_fail(
        a, LA_ELIMIT,
        "Trace-Set of %s cycle %llu is %zu bytes, over %s = %llu%s", f->app,
        (unsigned long long)f->cycle, f->len, f->over,
        (unsigned long long)f->limit,
        !strcmp(f->over, "max_set_bytes") ? " (la_client_set_max_set)"
        : !strncmp(f->over, "feed.memory", 11)
            ? " (the feed holds too much for its clients now: try later)"
            : " (other Trace-Sets asked on this connection are still being "
              "sent: read them first)");
  } else if (!f->enc || la_ga_partq_query(&s->q, f->enc)) {
    if (!f->enc) la_ga_encode_failed(f->app, f->cycle, f->len);
    la_ga_answer_fail(a, LA_ENOMEM,
                      "out of memory for %s cycle %llu (%zu bytes)", f->app,
                      (unsigned long long)f->cycle, f->len);
  } else {
    a->reply.has_set_bytes = 1;
    a->reply.set_bytes = f->enc->len;
    queued = 1;
  }
  la_ga_enc_unref(f->enc);
  f->enc = NULL;
  return queued;
}

/* A job's work (feed_jobs.h), on the pool: the answer to the Query, its
 * set measured and encoded for a client that takes parts. */
static void la__query_work(la_ga_fjob_t *j, la_store_t *st, const char *why) {
  la__fq_t *f = (la__fq_t *)j;
  if (!st) {
    la_ga_answer_init(&f->a);
    la_ga_answer_fail(&f->a, LA_EIO, "cannot read the store: %s", why);
    return;
  }
  if (la_ga_answer(st, &f->q, &f->a) == 0 && f->a.set && f->parts)
    la__query_measure(f);
}

/* la__stored_each's fn in a job: set encoded and appended to the job's
 * (arg). Any thread. */
static void la__stored_add(La__TraceSet *set, void *arg) {
  la__fq_t *f = arg;
  la__stored_t *v = realloc(f->sets, (f->n_sets + 1) * sizeof *v);
  if (!v) return;
  f->sets = v;
  la__stored_t *x = &v[f->n_sets++];
  snprintf(x->app, sizeof x->app, "%s", set->app_id);
  x->tag = set->cycle_tag;
  x->len = la_ga_set_bytes(set);
  x->enc = la_ga_encode_quiet(set);
}

/* A job's work, on the pool: a Subscribe's stored sets, encoded. */
static void la__subscribe_work(la_ga_fjob_t *j, la_store_t *st,
                               const char *why) {
  la__fq_t *f = (la__fq_t *)j;
  (void)why; /* logged by feed_jobs.c; the subscriber gets no stored set */
  if (st)
    la__stored_each(st, f->app, f->has_cycle, f->cycle, f->latest,
                    la__stored_add, f);
}

static int la__sub_frame(la_conn_t *c, uint16_t type, ProtobufCMessage *m);

/* Handles the frame kept while s's job ran, and the next ones, until one
 * starts a job again; then reads s again. Loop thread, outside s's
 * callbacks. */
static void la__sub_next(la_ga_sub_t *s) {
  while (s->stash && !s->job && !s->conn.closing && !s->q.ended) {
    uint8_t *p = s->stash;
    s->stash = NULL;
    ProtobufCMessage *m = NULL;
    char why[240];
    int rc = la_msg_decode(s->stash_type, p, s->stash_len, &m, why, sizeof why);
    free(p);
    if (rc != 0) {
      la_conn_bad(&s->conn, why);
      return;
    }
    la__sub_frame(&s->conn, s->stash_type, m);
    la_msg_free(m);
  }
  if (!s->job) la_conn_resume(&s->conn);
}

/* A reply carrying a set whole (an old client's): refused with LA_ELIMIT
 * when it does not fit in the feed's memory. */
static void la__reply_room(la_ga_sub_t *s, la_ga_answer_t *a) {
  uint64_t limit;
  size_t n = la_frame_size(&a->reply.base);
  const char *over = la__room(&s->q, n, 1, &limit);
  if (!over) return;
  la_log_info(
      "feed connection %s: Trace-Set %s cycle %llu (%zu bytes) not sent: "
      "over %s = %llu",
      s->conn.peer, a->set->app_id, (unsigned long long)a->set->cycle_tag, n,
      over, (unsigned long long)limit);
  la_ga_answer_fail(a, LA_ELIMIT,
                    "Trace-Set of %s cycle %llu is %zu bytes, over %s = %llu "
                    "(the feed holds too much for its clients now: try later)",
                    a->set->app_id, (unsigned long long)a->set->cycle_tag, n,
                    over, (unsigned long long)limit);
}

/* After the job of f (feed_jobs.h): its result sent to its connection,
 * unless that closed meanwhile, then freed; the connection's next
 * request goes on. Loop thread. */
static void la__job_done(la_ga_fjob_t *j, int ran) {
  la__fq_t *f = (la__fq_t *)j;
  la_ga_sub_t *s = f->s;
  assert(s->job == f); /* the connection's one job */
  int live = ran && !s->conn.closing && !s->q.ended;
  if (f->subscribe) {
    for (size_t i = 0; i < f->n_sets; i++) {
      la__stored_t *x = &f->sets[i];
      if (live && x->enc)
        la_ga_partq_offer_stored(&s->q, x->enc);
      else if (live)
        la_ga_encode_failed(x->app, x->tag, x->len);
      la_ga_enc_unref(x->enc);
    }
    free(f->sets);
    la_ga_partq_release(&s->q);
    if (live) la_ga_partq_pump(&s->q);
  } else {
    int parts = live && f->had_set && la__query_queue(s, f);
    if (live && f->a.set) /* a set inside the reply (an old client) */
      la__reply_room(s, &f->a);
    if (live) la__send(s, LA__MSG_TYPE__MSG_QUERY_REPLY, &f->a.reply.base);
    la_ga_enc_unref(f->enc);
    la_ga_answer_free(&f->a);
    if (parts) la_ga_partq_pump(&s->q);
  }
  free(f);
  s->job = NULL;
  if (live && !s->in_submit) {
    la__requested(s);
    la__sub_next(s);
  }
  la_conn_release(&s->conn);
}

/* Runs f, filled by the caller, on the pool for s, holding s until it is
 * done; s's later frames wait (la__sub_raw). */
static void la__submit(la_ga_sub_t *s, la__fq_t *f) {
  /* one job per feed connection: its replies keep its requests' order */
  assert(!s->job);
  f->s = s;
  f->job.done = la__job_done;
  la_conn_hold(&s->conn);
  s->job = f;
  s->in_submit = 1;
  la_ga_fjob_submit(s->ga, &f->job);
  s->in_submit = 0;
}

/* Answers a Query (feed_query.c) with one QueryReply; a Trace-Set asked
 * with sets_version 2 follows it in parts (la__query_queue). A "traceset"
 * is answered by a job on the pool (la__query_work), the rest here. */
static void la__query(la_ga_sub_t *s, const La__Query *q) {
  s->ga->st.queries++;
  la_ga_answer_t a;
  if (!strcmp(q->what, "traceset") && q->app_id && q->app_id[0]) {
    la__fq_t *f = calloc(1, sizeof *f);
    if (!f) {
      la_ga_answer_init(&a);
      la_ga_answer_fail(&a, LA_ENOMEM, "out of memory");
    } else {
      la__query__init(&f->q);
      snprintf(f->what, sizeof f->what, "%s", q->what);
      snprintf(f->app, sizeof f->app, "%s", q->app_id);
      f->q.what = f->what;
      f->q.app_id = f->app;
      f->q.has_cycle_tag = q->has_cycle_tag;
      f->q.cycle_tag = q->cycle_tag;
      f->q.has_feed_protocol = q->has_feed_protocol;
      f->q.feed_protocol = q->feed_protocol;
      f->q.has_max_set_bytes = q->has_max_set_bytes;
      f->q.max_set_bytes = q->max_set_bytes;
      f->parts = q->has_sets_version && q->sets_version >= LA_FEED_SETS_VERSION;
      /* sets in parts queued to any connection: feed.queue_bytes */
      f->limit_bytes = s->ga->set.sub_queue_bytes;
      f->limit_name = "feed.queue_bytes";
      f->queued = s->q.query_pending;
      f->job.work = la__query_work;
      la__submit(s, f);
      return;
    }
  } else {
    la_ga_answer(la_ga_store(s->ga), q, &a);
  }
  la__send(s, LA__MSG_TYPE__MSG_QUERY_REPLY, &a.reply.base);
  la_ga_answer_free(&a);
}

/* The stored sets a Subscribe asks (its cycle, the latest): read on the
 * pool for a subscriber that takes parts, live sets meanwhile held behind
 * them; read here for an old one. */
static void la__subscribe_stored(la_ga_sub_t *s, const La__Subscribe *m) {
  int has_cycle = m->has_cycle && s->app[0];
  if (!has_cycle && !m->latest) return;
  la__fq_t *f = s->sets_version >= 2 ? calloc(1, sizeof *f) : NULL;
  if (f) {
    f->subscribe = 1;
    snprintf(f->app, sizeof f->app, "%s", s->app);
    f->has_cycle = has_cycle;
    f->cycle = m->cycle_tag;
    f->latest = m->latest;
    f->job.work = la__subscribe_work;
    la_ga_partq_hold(&s->q);
    la__submit(s, f);
    return;
  }
  la__stored_each(la_ga_store(s->ga), s->app, has_cycle, m->cycle_tag,
                  m->latest, la__send_stored, s);
}

static void la__subscribe(la_ga_sub_t *s, const La__Subscribe *m) {
  s->subscribed = 1;
  s->live = !m->has_live || m->live;
  s->sets_version = m->has_sets_version ? m->sets_version : 1;
  s->q.max_set = m->has_max_set_bytes ? m->max_set_bytes : 0;
  la_conn_set_max_output(&s->conn, (size_t)la__limit(s, &s->q.limit_name));
  snprintf(s->app, sizeof s->app, "%s", m->app_id ? m->app_id : "");
  la_log_info("subscriber %s: %s%s", s->conn.peer,
              s->app[0] ? s->app : "every application",
              s->live ? ", live" : "");
  la__subscribe_stored(s, m);
}

static int la__sub_frame(la_conn_t *c, uint16_t type, ProtobufCMessage *m) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  switch (type) {
    case LA__MSG_TYPE__MSG_SUBSCRIBE:
      la__subscribe(s, (La__Subscribe *)m);
      la__requested(s);
      if (s->job) la_conn_set_deadline(c, 0); /* until it is done */
      return 0;
    case LA__MSG_TYPE__MSG_QUERY:
      la__query(s, (La__Query *)m);
      la__requested(s);
      if (s->job) la_conn_set_deadline(c, 0);
      return 0;
    case LA__MSG_TYPE__MSG_STATUS_REQUEST: {
      La__StatusReply *r = la_ga_status_reply(s->ga, 1);
      if (r) la__send(s, LA__MSG_TYPE__MSG_STATUS_REPLY, &r->base);
      la_ga_status_reply_free(r);
      la__requested(s);
      return 0;
    }
    default: {
      s->ga->st.bad_frames++;
      la_log_warnx("subscriber %s: unexpected %s: closing", c->peer,
                   la_msg_name(type));
      La__Error e = LA__ERROR__INIT;
      e.code = LA_EPROTO;
      e.message = "this port takes Subscribe, Query and StatusRequest";
      la_conn_send(c, LA__MSG_TYPE__MSG_ERROR, &e.base, 1);
      return 0;
    }
  }
}

/* la_conn_ops_t.on_raw: a frame read while the connection's job runs is
 * kept (one, at most feed.max_frame) and reading stops until the job is
 * done (la__sub_next); else la_conn decodes it for la__sub_frame. */
static int la__sub_raw(la_conn_t *c, uint16_t type, const uint8_t *p,
                       uint32_t len) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  if (s->q.ended) return LA_CONN_RAW_TAKEN; /* ending: requests ignored */
  if (!s->job) return LA_CONN_RAW_PASS;
  s->stash = malloc(len ? len : 1);
  if (!s->stash) return -1;
  memcpy(s->stash, p, len);
  s->stash_len = len;
  s->stash_type = type;
  return LA_CONN_RAW_PAUSE;
}

static void la__sub_bad(la_conn_t *c, const char *why) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  s->ga->st.bad_frames++;
  la_log_warnx("subscriber connection %s: %s: closing", c->peer, why);
}

static void la__sub_deadline(la_conn_t *c) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  if (s->q.ended) {
    la_log_info(
        "feed connection %s did not read its Error within %lld ms: "
        "resetting it",
        c->peer, (long long)s->ga->set.handshake_ms);
    /* what waits for it in the kernel would keep the close (our FIN
     * behind it) from ever reaching a peer that does not read: reset */
    int fd = la_conn_fd(c);
    struct linger lg = {1, 0};
    if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    la_conn_close(c, "limit passed");
    return;
  }
  if (s->spoke)
    la_log_info("feed connection %s idle for %lld ms: closing", c->peer,
                (long long)s->ga->set.feed_idle_ms);
  else
    la_log_info("feed connection %s sent no request within %lld ms: closing",
                c->peer, (long long)s->ga->set.handshake_ms);
  la_conn_close(c, s->spoke ? "idle timeout" : "handshake timeout");
}

static const la_conn_ops_t la__ops = {
    .on_frame = la__sub_frame,
    .on_bad = la__sub_bad,
    .on_deadline = la__sub_deadline,
    .on_close = la__sub_close,
    .on_free = la__sub_free,
    .on_written = la__sub_written,
    .on_raw = la__sub_raw,
};

/* A connection idle this long may be closed for a new one from its
 * address (a burst of new connections does not push each other out). */
enum { LA__EVICT_IDLE_MS = 1000 };

/* Whether o holds nothing for its peer and waits for nothing since at
 * least LA__EVICT_IDLE_MS: not a live subscriber, no request on the pool,
 * nothing queued to write. */
static int la__idle(const la_ga_sub_t *o, uint64_t now) {
  return !(o->subscribed && o->live) && !o->job && !o->q.out && !o->q.ended &&
         o->conn.out_bytes == 0 && now - o->last_ms >= LA__EVICT_IDLE_MS;
}

/* Closes o (la__idle) to admit a new connection; what: the limit reached.
 * Counted in subscribers_evicted, logged at most once a second. */
static void la__evict(la_ga_t *ga, la_ga_sub_t *o, uint64_t now,
                      const char *what) {
  static la_ratelimit_t erl; /* this file's: eviction log lines */
  uint64_t missed = 0;
  if (la_ratelimit_ok(&erl, 1000, &missed))
    la_log_info(
        "feed connection %s idle for %llu ms closed: a new one "
        "(%s = %lld; %llu more since the last line)",
        o->conn.peer, (unsigned long long)(now - o->last_ms), what,
        (long long)(strcmp(what, "feed.max_connections")
                        ? ga->set.feed_max_per_addr
                        : ga->set.max_subscribers),
        (unsigned long long)missed);
  ga->st.subs_evicted++;
  la_conn_close(&o->conn, "idle, closed for a new connection");
}

int la_ga_feed_make_room(la_ga_t *ga) {
  uint64_t now = uv_now(ga->loop);
  la_ga_sub_t *oldest = NULL;
  for (la_ga_sub_t *o = ga->subs; o; o = o->next)
    if (!o->conn.closing && la__idle(o, now) &&
        (!oldest || o->last_ms < oldest->last_ms))
      oldest = o;
  if (!oldest) return 0;
  la__evict(ga, oldest, now, "feed.max_connections");
  return 1;
}

/* la_conn_admission_t.refuse: whether the peer's address already holds
 * its share of the feed port. A full share makes room by closing the
 * address's connection idle the longest (one that is not a live
 * subscriber and has nothing in flight), so connections left idle by one
 * client cannot keep that address's next client (a `lactl status`) out;
 * only when every one of them is busy is the new one refused. */
static const char *la__addr_over_cap(la_conn_t *c) {
  static la_ratelimit_t rl; /* this file's: refusal log lines */
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  la_ga_t *ga = s->ga;
  int n = 0;
  la_ga_sub_t *oldest = NULL;
  uint64_t now = uv_now(ga->loop);
  for (la_ga_sub_t *o = ga->subs; o; o = o->next)
    if (o != s && !o->conn.closing && !strcmp(o->conn.addr, c->addr)) {
      n++;
      if (la__idle(o, now) && (!oldest || o->last_ms < oldest->last_ms))
        oldest = o;
    }
  if (n >= ga->set.feed_max_per_addr && oldest) {
    la__evict(ga, oldest, now, "feed.max_connections_per_address");
    return NULL;
  }
  if (!la_conn_share_full(n, ga->set.feed_max_per_addr, &ga->st.subs_refused,
                          &rl,
                          "feed connection %s refused: %d open from that "
                          "address (feed.max_connections_per_address = %lld)",
                          c->peer, n, (long long)ga->set.feed_max_per_addr))
    return NULL;
  return "too many connections from this address";
}

/* la_conn_admission_t.on_new: a feed connection of ga, in its list. */
static void la__sub_new(la_conn_t *c, void *owner) {
  la_ga_sub_t *s = (la_ga_sub_t *)c;
  s->ga = owner;
  s->last_ms = uv_now(s->ga->loop);
  la_ga_partq_init(&s->q, s->ga, c, la__room);
  s->q.limit_name = "feed.max_output";
  LA_CONN_LIST_PUSH(s->ga->subs, s);
  s->ga->n_subs++;
}

void la_ga_feed_accept(la_ga_t *ga, uv_stream_t *server) {
  const la_conn_admission_t adm = {
      .size = sizeof(la_ga_sub_t),
      .max_frame = (uint32_t)ga->set.feed_handshake_max_frame,
      .max_output = (size_t)ga->set.feed_max_output, /* until it subscribes */
      .deadline_ms = (uint64_t)ga->set.handshake_ms,
      .on_new = la__sub_new,
      .refuse = la__addr_over_cap,
  };
  if (la_conn_admit(ga->loop, server, &la__ops, &adm, ga))
    ga->st.subs_accepted++;
}

void la_ga_feed_close_all(la_ga_t *ga, const char *reason) {
  for (la_ga_sub_t *s = ga->subs, *n; s; s = n) {
    n = s->next;
    la_conn_close(&s->conn, reason);
  }
  la_ga_fjobs_stop(ga); /* jobs running end with the loop */
  if (la__trim_timer) {
    uv_close((uv_handle_t *)la__trim_timer, la__trim_closed);
    la__trim_timer = NULL;
  }
}
