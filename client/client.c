/* SPDX-License-Identifier: BSD-3-Clause */
/* client.c: the connection to a GlobalAgent's feed: connect, subscribe, and
 * receive Trace-Sets with a time limit.
 *
 * Bytes are read without blocking into a la_frame_reader (la_codec.h), so a
 * time limit that expires in the middle of a frame loses nothing: the rest is
 * read by the next call. A broken stream (bad frame header, oversized frame,
 * peer closed, socket error) is sticky; a well-framed message that fails
 * validation only skips that message. A subscription announces
 * LA_FEED_SETS_VERSION: the GlobalAgent then sends a set as a TraceSetHead
 * and parts, reassembled here within max_set bytes, and a set that will
 * not come as a SetNotice (la_client_next: LA_ELIMIT); whole TraceSet
 * frames (an older GlobalAgent) are taken as before. A set answering a
 * Query comes the same way, its head marked query, and goes through the
 * same reassembly to the request that waits for it. Requests and their
 * replies are in query.c; Trace-Set contents in traceset.c and
 * weights.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "la_client_internal.h"
#include "la_errors.h"
#include "la_sockio.h"

#define LA__READ_CHUNK 65536

const char *la_client_strerror(int code) {
  return la_strerror(code);
}

int la__client_fail(la_client_t *c, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
  return rc;
}

int la_client_from_fd(int fd, int timeout_ms, la_client_t **out) {
  if (out) *out = NULL;
  if (fd < 0 || !out) {
    if (fd >= 0) close(fd);
    return LA_EINVAL;
  }
  la_client_t *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    return LA_ENOMEM;
  }
  c->fd = fd;
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : LA_CLIENT_DEFAULT_TIMEOUT_MS;
  c->max_rank_elements = LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS;
  c->threads = 1;
  c->max_set = LA_CLIENT_DEFAULT_MAX_SET;
  c->weights = la__weights_env();
  la_frame_reader_init(&c->rd, LA_CLIENT_DEFAULT_MAX_FRAME);
  *out = c;
  return 0;
}

int la_client_connect(const char *host_port, int timeout_ms,
                      la_client_t **out) {
  char host[256];
  uint16_t port;
  if (!out) return LA_EINVAL;
  *out = NULL;
  if (!host_port || !*host_port) host_port = getenv("LA_GLOBAL");
  if (!host_port || !*host_port) host_port = LA_CLIENT_DEFAULT_ADDR;
  if (timeout_ms <= 0) timeout_ms = LA_CLIENT_DEFAULT_TIMEOUT_MS;
  /* several GlobalAgent shards, comma-separated: the first that answers */
  int fd = LA_EINVAL, n = 0, cur = 0;
  for (const char *a = host_port; *a; n++) {
    char one[300];
    size_t k = strcspn(a, ",");
    if (k >= sizeof one ||
        (snprintf(one, sizeof one, "%.*s", (int)k, a),
         la_hostport_parse(one, host, sizeof host, &port)))
      return LA_EINVAL;
    if (fd < 0) {
      fd = la_tcp_connect(host, port, timeout_ms);
      cur = n;
    }
    a += k + (a[k] == ',');
  }
  if (fd < 0) return fd;
  char *addrs = strdup(host_port);
  int rc = addrs ? la_client_from_fd(fd, timeout_ms, out) : LA_ENOMEM;
  if (rc != 0) {
    if (!addrs) close(fd);
    free(addrs);
    return rc;
  }
  (*out)->addrs = addrs;
  (*out)->n_addrs = n;
  (*out)->cur = cur;
  return 0;
}

/* Connects again after the stream broke, when connected through a list of
 * shards: the addresses after the current one, in list order and round
 * (the current one last), the first that answers; the subscription, if
 * any, is sent again. 0, or the stream stays dead (c->err says why). */
static int la__client_sub(la_client_t *c, const char *app_id, int flags,
                          int has_cycle, uint64_t cycle_tag);
static int la__client_reconnect(la_client_t *c) {
  if (!c->addrs || c->n_addrs < 2) return c->dead; /* one: for good */
  for (int i = 1; i <= c->n_addrs; i++) {
    int idx = (c->cur + i) % c->n_addrs;
    const char *a = c->addrs;
    for (int j = 0; j < idx; j++) a += strcspn(a, ",") + 1;
    char one[300], host[256];
    uint16_t port;
    size_t k = strcspn(a, ",");
    snprintf(one, sizeof one, "%.*s", (int)k, a);
    if (la_hostport_parse(one, host, sizeof host, &port) != 0) continue;
    int fd = la_tcp_connect(host, port, c->timeout_ms);
    if (fd < 0) continue;
    close(c->fd);
    c->fd = fd;
    c->cur = idx;
    c->reconnects++;
    uint32_t max = c->rd.max_payload;
    la_frame_reader_free(&c->rd);
    la_frame_reader_init(&c->rd, max);
    free(c->in.buf);
    memset(&c->in, 0, sizeof c->in);
    c->dead = 0;
    c->err[0] = '\0';
    if (c->sub && la__client_sub(c, c->sub_app, c->sub_flags, 0, 0) != 0)
      return c->dead ? c->dead : LA_EIO;
    return 0;
  }
  return c->dead;
}

int la_client_set_timeout(la_client_t *c, int timeout_ms) {
  if (!c || timeout_ms <= 0) return LA_EINVAL;
  c->timeout_ms = timeout_ms;
  return 0;
}

int la_client_set_max_elements(la_client_t *c, uint64_t max_rank_elements) {
  if (!c || max_rank_elements == 0 || max_rank_elements > (1ULL << 32))
    return LA_EINVAL;
  c->max_rank_elements = max_rank_elements;
  return 0;
}

int la_client_set_weights(la_client_t *c, int kind) {
  if (!c || kind < LA_WEIGHTS_DEFAULT || kind > LA_WEIGHTS_ROBUST)
    return LA_EINVAL;
  c->weights = kind;
  return 0;
}

int la_client_set_max_frame(la_client_t *c, uint32_t max_payload) {
  if (!c || max_payload < 1024) return LA_EINVAL;
  if (c->got_data) return LA_ESTATE;
  c->rd.max_payload = max_payload;
  return 0;
}

int la_client_set_max_set(la_client_t *c, uint64_t max_bytes) {
  if (!c || max_bytes < 1024) return LA_EINVAL;
  c->max_set = max_bytes;
  return 0;
}

void la__client_set_visit(la_client_t *c, const la__rank_visit_t *v) {
  c->visit = v;
}

int la_client_set_threads(la_client_t *c, unsigned threads) {
  if (!c || threads > 1024) return LA_EINVAL;
  c->threads = threads;
  return 0;
}

int la_client_notice(const la_client_t *c, const char **app_id,
                     uint64_t *cycle_tag, uint64_t *set_bytes,
                     const char **limit_name, uint64_t *limit) {
  if (!c) return LA_EINVAL;
  const La__SetNotice *n = c->notice;
  if (!n) return LA_ENOTFOUND;
  if (app_id) *app_id = n->app_id;
  if (cycle_tag) *cycle_tag = n->cycle_tag;
  if (set_bytes) *set_bytes = n->set_bytes;
  if (limit_name) *limit_name = n->limit_name;
  if (limit) *limit = n->limit;
  return 0;
}

int la_client_fd(const la_client_t *c) {
  return c ? c->fd : -1;
}

int la_client_state(const la_client_t *c) {
  return c ? c->dead : LA_EINVAL;
}

const char *la_client_error(const la_client_t *c) {
  return c ? c->err : "no client";
}

void la_client_close(la_client_t *c) {
  if (!c) return;
  while (c->p_count) {
    la_traceset_free(c->pending[c->p_head]);
    c->p_head = (c->p_head + 1) % LA_CLIENT_MAX_PENDING;
    c->p_count--;
  }
  while (c->n_count) {
    la_msg_free(&c->notices[c->n_head]->base);
    c->n_head = (c->n_head + 1) % LA_CLIENT_MAX_PENDING;
    c->n_count--;
  }
  if (c->notice) la_msg_free(&c->notice->base);
  free(c->in.buf);
  la_frame_reader_free(&c->rd);
  if (c->fd >= 0) close(c->fd);
  free(c->addrs);
  free(c);
}

/* Starts a call: forgets the last error unless the stream is dead (then it
 * keeps saying why). */
static void la__client_begin(la_client_t *c) {
  if (!c->dead) c->err[0] = '\0';
}

/* Sends one message within the handle's timeout. */
static int la__client_send(la_client_t *c, uint16_t type,
                           const ProtobufCMessage *msg) {
  if (c->dead) return c->dead; /* c->err still says why */
  int rc = la_send_msg(c->fd, type, msg, c->timeout_ms);
  if (rc == LA_EIO) {
    c->dead = LA_EIO;
    return la__client_fail(c, rc, "sending %s: connection lost",
                           la_msg_name(type));
  }
  if (rc)
    return la__client_fail(c, rc, "sending %s: %s", la_msg_name(type),
                           la_strerror(rc));
  return 0;
}

/* Marks the stream unusable with rc and the reason. */
static int la__client_die(la_client_t *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int la__client_die(la_client_t *c, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  c->dead = la_verrorf(c->err, sizeof c->err, rc, fmt, ap);
  va_end(ap);
  return rc;
}

/* Reads the next message, waiting until deadline (ms of la_now_ms;
 * UINT64_MAX: forever). Returns 0 with *type and *msg (free with
 * la_msg_free), LA_ETIMEDOUT, a sticky stream error, or LA_EPROTO for one
 * message that failed decoding (the stream goes on). */
static int la__client_read(la_client_t *c, uint64_t deadline, uint16_t *type,
                           ProtobufCMessage **msg) {
  uint8_t chunk[LA__READ_CHUNK];
  char why[200];
  *msg = NULL;
  for (;;) {
    if (c->dead) return c->dead; /* c->err still says why */
    const uint8_t *payload;
    uint32_t len;
    int r = la_frame_reader_next(&c->rd, type, &payload, &len);
    if (r < 0)
      return la__client_die(c, r, "%s",
                            r == LA_EMSGSIZE
                                ? "frame larger than the allowed maximum"
                                : "bad frame header (not an LA stream?)");
    if (r == 1) {
      why[0] = '\0';
      int rc = la_msg_decode(*type, payload, len, msg, why, sizeof why);
      if (rc == LA_ENOMEM) return la__client_fail(c, rc, "out of memory");
      if (rc)
        return la__client_fail(c, LA_EPROTO, "malformed %s: %s",
                               la_msg_name(*type), why);
      return 0;
    }
    /* Need more bytes. */
    int wait_ms;
    if (deadline == UINT64_MAX) {
      wait_ms = -1;
    } else {
      uint64_t now = la_now_ms();
      wait_ms = now >= deadline                ? 0
                : deadline - now > 1000000000u ? 1000000000
                                               : (int)(deadline - now);
    }
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int pr = poll(&pfd, 1, wait_ms);
    if (pr < 0) {
      if (errno == EINTR) continue;
      return la__client_die(c, LA_EIO, "poll: %s", strerror(errno));
    }
    if (pr == 0)
      return la__client_fail(c, LA_ETIMEDOUT, "nothing received in time");
    ssize_t n = recv(c->fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return la__client_die(c, LA_EIO, "connection failed: %s",
                            strerror(errno));
    }
    if (n == 0)
      return la__client_die(
          c, LA_EIO, "%s",
          la_frame_reader_pending(&c->rd)
              ? "connection closed in the middle of a frame"
          : c->got_data
              ? "connection closed by the GlobalAgent"
              : "connection closed before any answer: is this the "
                "GlobalAgent's feed address (its feed.listen)? A "
                "LocalAgent's port, or another service, closes it");
    c->got_data = 1;
    int rc = la_frame_reader_feed(&c->rd, chunk, (size_t)n);
    if (rc)
      return la__client_die(
          c, rc, "%s",
          rc == LA_EMSGSIZE ? "frame larger than the allowed maximum"
          : rc == LA_ENOMEM ? "out of memory"
                            : "bad frame header (not an LA stream?)");
  }
}

/* An Error message as a return code. */
static int la__client_error_msg(la_client_t *c, const La__Error *e) {
  int code = e->code < 0 && e->code > LA__ERR_LAST ? e->code : LA_EPROTO;
  return la__client_fail(c, code, "GlobalAgent: %s (%s)", e->message,
                         la_strerror(e->code));
}

/* Turns a received TraceSet into a set (takes msg). */
static int la__client_set(la_client_t *c, ProtobufCMessage *msg,
                          la_traceset_t **out) {
  char why[200] = "";
  int rc = la__traceset_adopt_threads((La__TraceSet *)msg, 0,
                                      c->max_rank_elements, c->threads,
                                      c->visit, out,
                                      why, sizeof why);
  if (rc) return la__client_fail(c, rc, "bad TraceSet: %s", why);
  la__traceset_choose(*out, c->weights);
  return 0;
}

/* A SetNotice made here: the set app_id/tag of set_bytes is over this
 * client's max_set. NULL when out of memory. */
static La__SetNotice *la__client_own_notice(la_client_t *c,
                                            const La__TraceSetHead *h) {
  La__SetNotice *n = malloc(sizeof *n);
  if (!n) return NULL;
  la__set_notice__init(n);
  n->app_id = strdup(h->app_id);
  n->limit_name = strdup("max_set_bytes");
  if (!n->app_id || !n->limit_name) {
    la_msg_free(&n->base);
    return NULL;
  }
  n->cycle_tag = h->cycle_tag;
  n->set_bytes = h->set_bytes;
  n->limit = c->max_set;
  n->has_dropped = 1;
  n->dropped = h->dropped + 1;
  return n;
}

/* Takes one frame of a set in parts or a notice (takes m). Returns 0 with
 * *it filled (a whole set, or a notice), 1 when more parts are needed,
 * or an error for this set (LA_EPROTO: parts out of order or a bad set;
 * LA_ENOMEM), which the next set does not inherit. */
static int la__client_take(la_client_t *c, uint16_t t, ProtobufCMessage *m,
                           la__client_item_t *it) {
  it->set = NULL;
  it->notice = NULL;
  it->query = 0;
  if (t == LA__MSG_TYPE__MSG_SET_NOTICE) {
    it->notice = (La__SetNotice *)m;
    return 0;
  }
  int rc = 1;
  if (t == LA__MSG_TYPE__MSG_TRACE_SET_HEAD) {
    const La__TraceSetHead *h = (const La__TraceSetHead *)m;
    if (c->in.active && !c->in.query)
      c->local_dropped++; /* the last set's parts never ended */
    free(c->in.buf);
    memset(&c->in, 0, sizeof c->in);
    c->in.active = 1;
    c->in.bytes = h->set_bytes;
    c->in.parts = h->parts;
    c->in.dropped = h->dropped;
    c->in.query = h->has_query && h->query;
    if (h->set_bytes > c->max_set && c->in.query) {
      c->in.skip = 1; /* its parts are read and dropped */
      it->query = 1;
      rc = la__client_fail(
          c, LA_ELIMIT,
          "Trace-Set of %s cycle %llu (%llu bytes) not delivered: over "
          "max_set_bytes = %llu (la_client_set_max_set)",
          h->app_id, (unsigned long long)h->cycle_tag,
          (unsigned long long)h->set_bytes, (unsigned long long)c->max_set);
    } else if (h->set_bytes > c->max_set) {
      c->in.skip = 1; /* told now; its parts are read and dropped */
      c->local_dropped++;
      it->notice = la__client_own_notice(c, h);
      rc = it->notice ? 0 : LA_ENOMEM;
    } else if (!(c->in.buf = malloc(h->set_bytes))) {
      c->in.skip = 1;
      it->query = c->in.query;
      c->local_dropped += !c->in.query;
      rc = la__client_fail(c, LA_ENOMEM,
                           "out of memory for a Trace-Set of %llu bytes",
                           (unsigned long long)h->set_bytes);
    }
    la_msg_free(m);
    return rc;
  }
  /* TraceSetPart */
  const La__TraceSetPart *p = (const La__TraceSetPart *)m;
  const int query = c->in.query;
  if (!c->in.active || p->part != c->in.next ||
      p->data.len > c->in.bytes - c->in.have) {
    rc = la__client_fail(c, LA_EPROTO,
                         "Trace-Set part %u out of order (expected %u of "
                         "%u)",
                         p->part, c->in.next, c->in.parts);
    la_msg_free(m);
    free(c->in.buf);
    memset(&c->in, 0, sizeof c->in);
    it->query = query;
    c->local_dropped += !query;
    return rc;
  }
  if (c->in.buf) memcpy(c->in.buf + c->in.have, p->data.data, p->data.len);
  c->in.have += p->data.len;
  c->in.next++;
  la_msg_free(m);
  if (c->in.next < c->in.parts) return 1;
  uint8_t *buf = c->in.buf;
  uint64_t bytes = c->in.bytes, have = c->in.have, dropped = c->in.dropped;
  memset(&c->in, 0, sizeof c->in);
  if (!buf) return 1; /* skipped: its notice went out with the head */
  it->query = query;
  ProtobufCMessage *set = NULL;
  char why[200] = "";
  rc = have != bytes
           ? la_errorf(why, sizeof why, LA_EPROTO,
                       "%llu bytes in parts for %llu announced",
                       (unsigned long long)have, (unsigned long long)bytes)
           : la_msg_decode(LA__MSG_TYPE__MSG_TRACE_SET, buf, (size_t)bytes,
                           &set, why, sizeof why);
  free(buf);
  if (rc) {
    c->local_dropped += !query;
    return la__client_fail(c, rc == LA_ENOMEM ? rc : LA_EPROTO,
                           "Trace-Set in parts: %s", why);
  }
  La__TraceSet *ts = (La__TraceSet *)set;
  ts->has_dropped = 1;
  ts->dropped = dropped;
  rc = la__client_set(c, set, &it->set);
  if (rc) c->local_dropped += !query;
  return rc;
}

/* The return of la_client_next for a notice: LA_ELIMIT, with the notice
 * kept for la_client_notice and its text in la_client_error (takes n). */
static int la__client_noticed(la_client_t *c, La__SetNotice *n) {
  if (c->notice) la_msg_free(&c->notice->base);
  c->notice = n;
  if (!strcmp(n->limit_name, "store"))
    return la__client_fail(
        c, LA_ELIMIT,
        "Trace-Set of %s cycle %llu not delivered: the GlobalAgent stored it "
        "but could not read it back from its store to publish it (its log "
        "says why)",
        n->app_id, (unsigned long long)n->cycle_tag);
  return la__client_fail(
      c, LA_ELIMIT,
      "Trace-Set of %s cycle %llu (%llu bytes) not delivered: over %s = "
      "%llu%s",
      n->app_id, (unsigned long long)n->cycle_tag,
      (unsigned long long)n->set_bytes, n->limit_name,
      (unsigned long long)n->limit,
      strcmp(n->limit_name, "max_set_bytes")
          ? " at the GlobalAgent (this subscriber does not keep up)"
          : " (la_client_set_max_set)");
}

/* Keeps a set or notice that arrived during a request. A set that finds
 * its ring full drops the oldest set (counted); a notice that finds its
 * ring full is dropped (its set is in the GlobalAgent's count). */
static void la__client_keep(la_client_t *c, la__client_item_t it) {
  const size_t max = LA_CLIENT_MAX_PENDING;
  if (it.notice) {
    if (c->n_count == max) {
      la_msg_free(&it.notice->base);
      return;
    }
    c->notices[(c->n_head + c->n_count) % max] = it.notice;
    c->n_seq[(c->n_head + c->n_count) % max] = c->kept++;
    c->n_count++;
    return;
  }
  if (c->p_count == max) {
    la_traceset_free(c->pending[c->p_head]);
    c->p_head = (c->p_head + 1) % max;
    c->p_count--;
    c->local_dropped++;
  }
  c->pending[(c->p_head + c->p_count) % max] = it.set;
  c->p_seq[(c->p_head + c->p_count) % max] = c->kept++;
  c->p_count++;
}

/* 1 when t is a frame of a subscription's sets in parts or a notice. */
static int la__client_parted(uint16_t t) {
  return t == LA__MSG_TYPE__MSG_TRACE_SET_HEAD ||
         t == LA__MSG_TYPE__MSG_TRACE_SET_PART ||
         t == LA__MSG_TYPE__MSG_SET_NOTICE;
}

/* Reads, within the handle's timeout, until what a request waits for
 * arrives: with set NULL the first message that is not a subscription's
 * (*reply_type, *reply), else the set in parts marked query (*set, or
 * that set's error), the time limit renewed by each of its frames. What a
 * subscription delivers meanwhile is kept for la_client_next; a query's
 * set no request waits for any more (its request timed out) is dropped. */
static int la__client_wait(la_client_t *c, uint16_t *reply_type,
                           ProtobufCMessage **reply, la_traceset_t **set) {
  uint64_t deadline = la_now_ms() + (uint64_t)c->timeout_ms;
  for (;;) {
    uint16_t t = 0;
    ProtobufCMessage *m;
    int rc = la__client_read(c, deadline, &t, &m);
    if (rc == LA_EPROTO && !c->dead && t == LA__MSG_TYPE__MSG_TRACE_SET) {
      c->local_dropped++; /* a malformed set for the subscription */
      continue;
    }
    if (rc) return rc;
    if (t == LA__MSG_TYPE__MSG_TRACE_SET) {
      la__client_item_t it = {NULL, NULL, 0};
      if (la__client_set(c, m, &it.set) == 0)
        la__client_keep(c, it);
      else
        c->local_dropped++;
      continue;
    }
    if (la__client_parted(t)) {
      la__client_item_t it;
      rc = la__client_take(c, t, m, &it);
      if (it.query && set) {
        *set = it.set;
        return rc;
      }
      if (it.query)
        la_traceset_free(it.set);
      else if (rc == 0)
        la__client_keep(c, it);
      if (set && c->in.active && c->in.query) /* the set is coming */
        deadline = la_now_ms() + (uint64_t)c->timeout_ms;
      la__client_begin(c); /* a set's trouble is not the request's */
      continue;
    }
    if (t == LA__MSG_TYPE__MSG_ERROR) {
      rc = la__client_error_msg(c, (const La__Error *)m);
      la_msg_free(m);
      return rc;
    }
    if (set) {
      rc = la__client_fail(c, LA_EPROTO,
                           "expected the Trace-Set in parts, got %s",
                           la_msg_name(t));
      la_msg_free(m);
      return rc;
    }
    *reply_type = t;
    *reply = m;
    return 0;
  }
}

int la__client_request(la_client_t *c, uint16_t type,
                       const ProtobufCMessage *msg, uint16_t *reply_type,
                       ProtobufCMessage **reply) {
  *reply = NULL;
  la__client_begin(c);
  int rc = la__client_send(c, type, msg);
  if (rc == 0) rc = la__client_wait(c, reply_type, reply, NULL);
  /* a lost connection: once more through the next shard that answers
   * (requests only read) */
  if (rc == LA_EIO && c->dead && la__client_reconnect(c) == 0) {
    rc = la__client_send(c, type, msg);
    if (rc == 0) rc = la__client_wait(c, reply_type, reply, NULL);
  }
  return rc;
}

int la__client_query_set(la_client_t *c, la_traceset_t **out) {
  *out = NULL;
  int rc = la__client_wait(c, NULL, NULL, out);
  if (rc && c->in.active && c->in.query && c->in.buf) {
    free(c->in.buf); /* given up: the rest is read and dropped */
    c->in.buf = NULL;
    c->in.skip = 1;
  }
  return rc;
}

static int la__client_sub(la_client_t *c, const char *app_id, int flags,
                          int has_cycle, uint64_t cycle_tag) {
  if (!c || (flags & ~(LA_CLIENT_LATEST | LA_CLIENT_NO_LIVE))) return LA_EINVAL;
  la__client_begin(c);
  if (app_id && strlen(app_id) > LA_MAX_ID_LEN)
    return la__client_fail(c, LA_EINVAL, "app id longer than %u bytes",
                           LA_MAX_ID_LEN);
  La__Subscribe s = LA__SUBSCRIBE__INIT;
  s.app_id = (char *)(app_id ? app_id : "");
  s.has_live = 1;
  s.live = !(flags & LA_CLIENT_NO_LIVE);
  s.has_latest = 1;
  s.latest = (flags & LA_CLIENT_LATEST) != 0;
  s.has_sets_version = 1;
  s.sets_version = LA_FEED_SETS_VERSION;
  s.has_max_set_bytes = 1;
  s.max_set_bytes = c->max_set;
  if (has_cycle) {
    s.has_cycle_tag = 1;
    s.cycle_tag = cycle_tag;
    s.has_has_cycle = 1;
    s.has_cycle = 1;
  }
  char why[200];
  if (la_msg_validate(LA__MSG_TYPE__MSG_SUBSCRIBE, &s.base, why, sizeof why))
    return la__client_fail(c, LA_EINVAL, "subscribe: %s", why);
  int rc = la__client_send(c, LA__MSG_TYPE__MSG_SUBSCRIBE, &s.base);
  if (rc == 0) { /* sent again after a reconnect (from now on) */
    c->sub = 1;
    snprintf(c->sub_app, sizeof c->sub_app, "%s", s.app_id);
    c->sub_flags = flags & ~LA_CLIENT_LATEST;
  }
  return rc;
}

int la_client_subscribe(la_client_t *c, const char *app_id, int flags) {
  return la__client_sub(c, app_id, flags, 0, 0);
}

int la_client_subscribe_at(la_client_t *c, const char *app_id, int flags,
                           uint64_t cycle_tag) {
  return la__client_sub(c, app_id, flags, 1, cycle_tag);
}

int la_client_next(la_client_t *c, int timeout_ms, la_traceset_t **out) {
  if (out) *out = NULL;
  if (!c || !out) return LA_EINVAL;
  la__client_begin(c);
  if (c->notice) { /* said by the last call */
    la_msg_free(&c->notice->base);
    c->notice = NULL;
  }
  if (c->n_count &&
      (!c->p_count || c->n_seq[c->n_head] < c->p_seq[c->p_head])) {
    La__SetNotice *n = c->notices[c->n_head];
    c->n_head = (c->n_head + 1) % LA_CLIENT_MAX_PENDING;
    c->n_count--;
    return la__client_noticed(c, n);
  }
  if (c->p_count) {
    *out = c->pending[c->p_head];
    c->p_head = (c->p_head + 1) % LA_CLIENT_MAX_PENDING;
    c->p_count--;
    (*out)->dropped += c->local_dropped;
    return 0;
  }
  uint64_t deadline =
      timeout_ms < 0 ? UINT64_MAX : la_now_ms() + (uint64_t)timeout_ms;
  int reconnects = 0; /* each address once per call at most */
  for (;;) {
    uint16_t t = 0;
    ProtobufCMessage *m;
    int rc = la__client_read(c, deadline, &t, &m);
    if (rc == LA_EIO && c->dead && reconnects++ < c->n_addrs &&
        la__client_reconnect(c) == 0)
      continue; /* the subscription goes on at the next shard */
    if (rc) return rc;
    switch (t) {
      case LA__MSG_TYPE__MSG_TRACE_SET:
        rc = la__client_set(c, m, out);
        if (rc == 0) (*out)->dropped += c->local_dropped;
        return rc;
      case LA__MSG_TYPE__MSG_ERROR:
        rc = la__client_error_msg(c, (const La__Error *)m);
        la_msg_free(m);
        return rc;
      case LA__MSG_TYPE__MSG_TRACE_SET_HEAD:
      case LA__MSG_TYPE__MSG_TRACE_SET_PART:
      case LA__MSG_TYPE__MSG_SET_NOTICE: {
        la__client_item_t it;
        rc = la__client_take(c, t, m, &it);
        if (it.query) { /* a query's set no request waits for any more */
          la_traceset_free(it.set);
          la__client_begin(c);
          continue;
        }
        if (rc == 1) continue;
        if (rc) return rc;
        if (it.notice) return la__client_noticed(c, it.notice);
        *out = it.set;
        (*out)->dropped += c->local_dropped;
        return 0;
      }
      default:
        la__client_fail(c, LA_EPROTO, "unexpected %s from the GlobalAgent",
                        la_msg_name(t));
        la_msg_free(m);
        return LA_EPROTO;
    }
  }
}
