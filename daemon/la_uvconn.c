/* SPDX-License-Identifier: BSD-3-Clause */
/* la_uvconn.c: framed libuv connections (see la_uvconn.h).
 *
 * Lingering close. A connection that ends with a last message to the peer
 * (an Error, a reply sent with close_after, the answer to bad input) must
 * not simply close: if the peer is still sending, the kernel answers the
 * bytes that arrive after close() (or are unread at that moment) with a
 * reset, and the reset can discard our last message from the peer's receive
 * buffer before the peer reads it. So such a close shuts down our sending
 * side once the queued writes are out (the peer sees our message, then end
 * of stream), keeps reading and discards what arrives, and closes when the
 * peer closes, after LA_CONN_LINGER_MS, or after LA_CONN_LINGER_MAX
 * discarded bytes (then with a reset), whichever comes first. Other closes
 * (peer gone, shutdown, limits) close at once.
 */
#include "la_uvconn.h"

#include <assert.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_log.h"
#include "la_sockio.h"

enum { LA_CONN_LINGER_MS = 1000, LA_CONN_LINGER_MAX = 1 << 20 };

typedef struct {
  uv_write_t req;
  la_conn_t *c;
  int close_after;
  size_t len;
  uint8_t data[];
} la__cwr_t;

static void la__alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void la__on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void la__maybe_free(la_conn_t *c) {
  assert(c->handles_open >= 0 && c->holds >= 0);
  if (c->handles_open == 0 && c->holds == 0 && c->ops->on_free) {
    la_frame_reader_free(&c->rd);
    c->ops->on_free(c);
  }
}

static void la__on_closed(uv_handle_t *h) {
  la_conn_t *c = h->data;
  assert(c->handles_open > 0); /* each handle closes once */
  c->handles_open--;
  la__maybe_free(c);
}

void la_conn_init(la_conn_t *c, uv_loop_t *loop, uint32_t max_frame,
                  const la_conn_ops_t *ops, void *data) {
  memset(c, 0, sizeof *c);
  uv_tcp_init(loop, &c->tcp);
  uv_timer_init(loop, &c->timer);
  c->tcp.data = c->timer.data = c;
  c->handles_open = 2;
  c->ops = ops;
  c->data = data;
  la_frame_reader_init(&c->rd, max_frame);
  snprintf(c->peer, sizeof c->peer, "?");
  snprintf(c->addr, sizeof c->addr, "?");
}

void la_conn_set_max_frame(la_conn_t *c, uint32_t max_payload) {
  c->rd.max_payload = max_payload ? max_payload : LA_FRAME_DEFAULT_MAX;
}

void la_conn_set_max_output(la_conn_t *c, size_t max) {
  c->max_out = max;
}

/* Closes the handles; reset: abort the connection (RST), dropping what is
 * still queued for the peer in our buffers and the kernel's. */
static void la__finish(la_conn_t *c, int reset) {
  if (uv_is_closing((uv_handle_t *)&c->tcp)) return;
  c->lingering = 0;
  uv_read_stop((uv_stream_t *)&c->tcp);
  if (!reset || uv_tcp_close_reset(&c->tcp, la__on_closed) != 0)
    uv_close((uv_handle_t *)&c->tcp, la__on_closed);
  uv_close((uv_handle_t *)&c->timer, la__on_closed);
}

static void la__on_linger_timeout(uv_timer_t *t) {
  la__finish(t->data, 0);
}

static void la__on_shutdown(uv_shutdown_t *req, int status) {
  la_conn_t *c = req->data;
  if (status < 0) la__finish(c, 0);
  la_conn_release(c);
}

/* Starts a lingering close (see the top of this file). Returns 0, or -1
 * when the connection cannot linger (then close it at once). */
static int la__linger(la_conn_t *c) {
  uv_stream_t *st = (uv_stream_t *)&c->tcp;
  if (!uv_is_readable(st) || !uv_is_writable(st)) return -1;
  c->shut.data = c;
  if (uv_shutdown(&c->shut, st, la__on_shutdown) != 0) return -1;
  la_conn_hold(c); /* until the shutdown callback */
  c->lingering = 1;
  if (c->paused) { /* reading stopped: discard what still comes */
    c->paused = 0;
    uv_read_start(st, la__alloc, la__on_read);
  }
  uv_timer_start(&c->timer, la__on_linger_timeout, LA_CONN_LINGER_MS, 0);
  return 0;
}

/* Starts closing: with reset, by a reset; with linger, gracefully if it
 * can; else at once. */
static void la__close_how(la_conn_t *c, const char *reason, int reset,
                          int linger) {
  if (c->closing) return;
  c->closing = 1;
  if (c->ops->on_close) c->ops->on_close(c, reason);
  if (!reset && linger && la__linger(c) == 0) return;
  la__finish(c, reset);
}

static void la__close(la_conn_t *c, const char *reason, int reset) {
  la__close_how(c, reason, reset, 0);
}

void la_conn_close(la_conn_t *c, const char *reason) {
  la__close(c, reason, 0);
}

void la_conn_hold(la_conn_t *c) {
  /* a freed connection is never held again: holds or handles keep it */
  assert(c->holds > 0 || c->handles_open > 0);
  c->holds++;
}

void la_conn_release(la_conn_t *c) {
  assert(c->holds > 0); /* every release has its hold */
  c->holds--;
  la__maybe_free(c);
}

int la_conn_fd(la_conn_t *c) {
  uv_os_fd_t fd = -1;
  if (c->closing || uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0) return -1;
  return fd;
}

static void la__on_deadline(uv_timer_t *t) {
  la_conn_t *c = t->data;
  if (c->closing) return; /* a lingering close has its own timer callback */
  if (c->ops->on_deadline)
    c->ops->on_deadline(c);
  else
    la_conn_close(c, "deadline passed");
}

void la_conn_set_deadline(la_conn_t *c, uint64_t ms) {
  if (c->closing) return;
  if (ms == 0)
    uv_timer_stop(&c->timer);
  else
    uv_timer_start(&c->timer, la__on_deadline, ms, 0);
}

static void la__on_write(uv_write_t *req, int status) {
  la__cwr_t *w = (la__cwr_t *)req;
  la_conn_t *c = w->c;
  c->out_bytes -= w->len;
  int close_after = w->close_after;
  free(w);
  if (status < 0)
    la_conn_close(c, "write failed");
  else if (close_after)
    la__close_how(c, "done", 0, 1);
  else if (!c->closing && c->ops->on_written)
    c->ops->on_written(c);
  la_conn_release(c);
}

void la_conn_set_secure(la_conn_t *c, la_secure_t *sec) {
  c->sec = sec;
}

/* Replaces the frame in *w by the record that carries it. Returns 0 or a
 * negative LA_E* code (*w unchanged). */
static int la__seal(la_conn_t *c, la__cwr_t **w) {
  size_t cap = la_secure_record_size((*w)->len);
  la__cwr_t *r = malloc(sizeof *r + cap);
  if (!r) return LA_ENOMEM;
  long n = la_secure_seal(c->sec, (*w)->data, (*w)->len, r->data, cap);
  if (n < 0) {
    free(r);
    return (int)n;
  }
  *r = **w;
  r->len = (size_t)n;
  free(*w);
  *w = r;
  return 0;
}

/* Turns the record just read into the frame it carries: *buf (freed by the
 * caller) holds it. Returns 0, or -1 after la__bad. */
static void la__bad(la_conn_t *c, const char *why);
static int la__open(la_conn_t *c, uint16_t *type, const uint8_t **p,
                    uint32_t *len, uint8_t **buf) {
  char why[240];
  if (*type != LA__MSG_TYPE__MSG_SEALED) {
    snprintf(why, sizeof why, "%s in clear on an encrypted link",
             la_msg_name(*type));
    la__bad(c, why);
    return -1;
  }
  if (la_secure_open(c->sec, *p, *len, c->rd.max_payload, buf, type, p, len,
                     why, sizeof why) != 0) {
    la__bad(c, why);
    return -1;
  }
  return 0;
}

/* Whether n more bytes would pass c's output limit: then c closes (what is
 * queued is dropped). */
static int la__over_output(la_conn_t *c, size_t n) {
  if (!(c->max_out && c->out_bytes > 0 && c->out_bytes + n > c->max_out))
    return 0;
  la_log_warnx(
      "connection %s: %zu bytes queued and %zu more would pass "
      "the output limit of %zu: the peer is not reading: closing",
      c->peer, c->out_bytes, n, c->max_out);
  la__close(c, "output limit", 1);
  return 1;
}

/* Starts write w (its request req, len bytes in bufs): counted in the
 * connection's output and the connection held until cb; on failure w is
 * freed and the connection closed. */
static int la__start_write(la_conn_t *c, uv_write_t *req, const uv_buf_t *bufs,
                           unsigned n, uv_write_cb cb, size_t len, void *w) {
  if (uv_write(req, (uv_stream_t *)&c->tcp, bufs, n, cb) != 0) {
    free(w);
    la_conn_close(c, "write failed");
    return LA_EIO;
  }
  c->out_bytes += len;
  la_conn_hold(c); /* until the write callback */
  return 0;
}

int la_conn_send(la_conn_t *c, uint16_t type, const ProtobufCMessage *m,
                 int close_after) {
  if (c->closing) return LA_EIO;
  size_t n = la_frame_size(m);
  if (la__over_output(c, n)) return LA_ELIMIT;
  la__cwr_t *w = malloc(sizeof *w + n);
  if (!w) {
    la_conn_close(c, "out of memory");
    return LA_ENOMEM;
  }
  long len = la_frame_pack_into(type, m, w->data, n);
  if (len < 0) {
    free(w);
    return (int)len;
  }
  w->c = c;
  w->close_after = close_after;
  w->len = (size_t)len;
  if (c->sec && la__seal(c, &w) != 0) {
    free(w);
    la_conn_close(c, "cannot seal a record");
    return LA_ENOMEM;
  }
  uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->len);
  return la__start_write(c, &w->req, &b, 1, la__on_write, w->len, w);
}

/* A write of la_conn_send_ref: head copied here, the tail referenced. */
typedef struct {
  uv_write_t req;
  la_conn_t *c;
  size_t len;
  void (*release)(void *ctx, void *arg);
  void *ctx, *arg;
  uint8_t head[LA_CONN_REF_HEAD_MAX];
} la__rwr_t;

static void la__on_write_ref(uv_write_t *req, int status) {
  la__rwr_t *w = (la__rwr_t *)req;
  la_conn_t *c = w->c;
  c->out_bytes -= w->len;
  w->release(w->ctx, w->arg);
  free(w);
  if (status < 0)
    la_conn_close(c, "write failed");
  else if (!c->closing && c->ops->on_written)
    c->ops->on_written(c);
  la_conn_release(c);
}

int la_conn_send_ref(la_conn_t *c, const uint8_t *head, size_t hlen,
                     const uint8_t *tail, size_t tlen,
                     void (*release)(void *ctx, void *arg), void *ctx,
                     void *arg) {
  assert(hlen <= LA_CONN_REF_HEAD_MAX && release);
  if (c->closing) return LA_EIO;
  if (c->sec) return LA_EINVAL; /* a record is sealed from a copy */
  if (la__over_output(c, hlen + tlen)) return LA_ELIMIT;
  la__rwr_t *w = malloc(sizeof *w);
  if (!w) {
    la_conn_close(c, "out of memory");
    return LA_ENOMEM;
  }
  memcpy(w->head, head, hlen);
  w->c = c;
  w->len = hlen + tlen;
  w->release = release;
  w->ctx = ctx;
  w->arg = arg;
  uv_buf_t b[2] = {uv_buf_init((char *)w->head, (unsigned)hlen),
                   uv_buf_init((char *)tail, (unsigned)tlen)};
  return la__start_write(c, &w->req, b, 2, la__on_write_ref, w->len, w);
}

static void la__bad(la_conn_t *c, const char *why) {
  if (c->ops->on_bad) c->ops->on_bad(c, why);
  la__close_how(c, "bad input", 0, 1); /* on_bad may have sent an Error */
}

/* Reads go straight into the frame reader's buffer (no copy, no buffer
 * per read); a lingering or closing connection's, whose bytes are
 * discarded, into one of their own. */
static void la__alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  la_conn_t *c = h->data;
  size_t n = suggested < 65536 ? suggested : 65536;
  uint8_t *p;
  if (!c->lingering && !c->closing && la_frame_reader_room(&c->rd, n, &p)) {
    buf->base = (char *)p;
    buf->len = n;
    return;
  }
  buf->base = malloc(n);
  buf->len = buf->base ? n : 0;
}

/* Frees a read buffer that is not the frame reader's own. */
static void la__free_read(la_conn_t *c, const uv_buf_t *buf) {
  const uint8_t *p = (const uint8_t *)buf->base;
  if (!c->rd.buf || p < c->rd.buf || p >= c->rd.buf + c->rd.cap)
    free(buf->base);
}

/* Hands the complete frames buffered in c's reader to on_raw / on_frame
 * until none is left, c closes or on_raw pauses; rc: the feed's result. */
static void la__drain(la_conn_t *c, int rc) {
  la_conn_hold(c); /* on_frame may close c */
  uint16_t type;
  const uint8_t *p;
  uint32_t len;
  int lent = 0; /* on_raw kept frames in the reader's buffer */
  while (rc == 0 && !c->closing && !c->paused &&
         (rc = la_frame_reader_next(&c->rd, &type, &p, &len)) == 1) {
    ProtobufCMessage *m = NULL;
    char why[240];
    uint8_t *plain = NULL;
    int raw = c->ops->on_raw ? c->ops->on_raw(c, type, p, len) : 0;
    if (raw > 0 && (raw & LA_CONN_RAW_IN_PLACE)) {
      assert(c->ops->on_lent);
      lent = 1;
      raw &= ~LA_CONN_RAW_IN_PLACE;
    }
    if (raw == LA_CONN_RAW_PAUSE) {
      c->paused = 1;
      uv_read_stop((uv_stream_t *)&c->tcp);
    }
    if (raw < 0) {
      la__close_how(c, "protocol error", 0, 1);
      rc = 0;
      break;
    }
    rc = 0;
    if (raw != LA_CONN_RAW_PASS) continue;
    if (c->sec && la__open(c, &type, &p, &len, &plain) != 0) break;
    int drc = la_msg_decode(type, p, len, &m, why, sizeof why);
    free(plain);
    if (drc != 0) {
      la__bad(c, why);
      break;
    }
    rc = c->ops->on_frame(c, type, m);
    la_msg_free(m);
    if (rc != 0) {
      la__close_how(c, "protocol error", 0, 1); /* a reply may be queued */
      rc = 0;
      break;
    }
  }
  if (lent) { /* the owner's now; the reader goes on in a new buffer */
    const uint8_t *was = NULL;
    uint8_t *b = la_frame_reader_give(&c->rd, &was);
    c->ops->on_lent(c, b, was);
    if (c->rd.error && rc == 0) rc = c->rd.error;
  }
  if (rc < 0 && !c->closing)
    la__bad(c, rc == LA_EMSGSIZE  ? "frame larger than the maximum"
               : rc == LA_ENOMEM ? "out of memory"
                                 : "malformed frame header");
  la_conn_release(c);
}

static void la__on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  la_conn_t *c = st->data;
  if (c->lingering) { /* discard; the peer's end of stream ends it */
    la__free_read(c, buf);
    if (nread < 0)
      la__finish(c, 0);
    else if ((c->linger_bytes += (size_t)nread) > LA_CONN_LINGER_MAX)
      la__finish(c, 1);
    return;
  }
  if (nread < 0 || c->closing) {
    la__free_read(c, buf);
    if (nread < 0)
      la_conn_close(c, nread == UV_EOF ? "disconnected" : "connection error");
    return;
  }
  int rc = 0;
  if (nread > 0 && (const uint8_t *)buf->base == c->rd.buf + c->rd.len)
    rc = la_frame_reader_wrote(&c->rd, (size_t)nread); /* read in place */
  else if (nread > 0)
    rc = la_frame_reader_feed(&c->rd, buf->base, (size_t)nread);
  la__free_read(c, buf);
  la__drain(c, rc);
}

void la_conn_resume(la_conn_t *c) {
  if (!c->paused || c->closing) return;
  c->paused = 0;
  la__drain(c, 0);
  if (!c->paused && !c->closing)
    uv_read_start((uv_stream_t *)&c->tcp, la__alloc, la__on_read);
}

void la_conn_bad(la_conn_t *c, const char *why) {
  la__bad(c, why);
}

void la_conn_end(la_conn_t *c, const char *reason) {
  la__close_how(c, reason, 0, 1);
}

int la_conn_accept(la_conn_t *c, uv_stream_t *server) {
  int rc = uv_accept(server, (uv_stream_t *)&c->tcp);
  if (rc != 0) return rc;
  struct sockaddr_storage a;
  int al = sizeof a;
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&a, &al) == 0) {
    char ip[48] = "?";
    int port = 0;
    if (a.ss_family == AF_INET) {
      uv_ip4_name((struct sockaddr_in *)&a, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in *)&a)->sin_port);
    } else if (a.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&a, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
    snprintf(c->addr, sizeof c->addr, "%s", ip);
  }
  uv_tcp_nodelay(&c->tcp, 1);
  return uv_read_start((uv_stream_t *)&c->tcp, la__alloc, la__on_read);
}

int la_listen(uv_loop_t *loop, uv_tcp_t *tcp, const char *l,
              uv_connection_cb cb, char *bound, size_t bound_len,
              uint16_t *port_out, char *why, size_t why_len) {
  char host[200];
  uint16_t port = 0;
  size_t ll = strlen(l);
  if (ll >= 2 && !strcmp(l + ll - 2, ":0")) { /* la_hostport_parse refuses 0 */
    snprintf(host, sizeof host, "%.*s", (int)(ll - 2), l);
    size_t hl = strlen(host);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
      memmove(host, host + 1, hl - 2);
      host[hl - 2] = '\0';
    }
  } else if (la_hostport_parse(l, host, sizeof host, &port) != 0) {
    snprintf(why, why_len, "'%s' is not host:port", l);
    return LA_ECONFIG;
  }
  struct sockaddr_storage addr;
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) != 0 &&
      uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) != 0) {
    snprintf(why, why_len, "'%s' is not an IP address", host);
    return LA_ECONFIG;
  }
  uv_tcp_init(loop, tcp);
  int rc = uv_tcp_bind(tcp, (struct sockaddr *)&addr, 0);
  if (rc == 0) rc = uv_listen((uv_stream_t *)tcp, 511, cb);
  if (rc != 0) {
    snprintf(why, why_len, "cannot listen on %s: %s%s", l, uv_strerror(rc),
             rc == UV_EADDRINUSE
                 ? " (another program listens there, perhaps an agent "
                   "already running: stop it, or choose another port; "
                   "port 0 takes a free one)"
                 : "");
    return LA_EIO;
  }
  struct sockaddr_storage b;
  int bl = sizeof b;
  uv_tcp_getsockname(tcp, (struct sockaddr *)&b, &bl);
  *port_out =
      ntohs(b.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&b)->sin6_port
                                    : ((struct sockaddr_in *)&b)->sin_port);
  snprintf(bound, bound_len, "%s:%u", host, *port_out);
  return 0;
}

static void la__free_handle(uv_handle_t *h) {
  free(h);
}

int la_ratelimit_ok(la_ratelimit_t *r, uint64_t interval_ms, uint64_t *missed) {
  uint64_t now = uv_hrtime() / 1000000u;
  if (now < r->next_ms) {
    r->suppressed++;
    return 0;
  }
  *missed = r->suppressed;
  r->suppressed = 0;
  r->next_ms = now + interval_ms;
  return 1;
}

int la_conn_share_full(long long held, long long cap, uint64_t *refused,
                       la_ratelimit_t *rl, const char *fmt, ...) {
  if (held < cap) return 0;
  (*refused)++;
  uint64_t missed;
  if (la_ratelimit_ok(rl, 1000, &missed)) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    la_log_warnx("%s; %llu more refusals not logged", msg,
                 (unsigned long long)missed);
  }
  return 1;
}

la_conn_t *la_conn_admit(uv_loop_t *loop, uv_stream_t *server,
                         const la_conn_ops_t *ops,
                         const la_conn_admission_t *adm, void *owner) {
  la_conn_t *c = calloc(1, adm->size);
  if (!c) {
    la_refuse_connection(loop, server);
    return NULL;
  }
  la_conn_init(c, loop, adm->max_frame, ops, c);
  la_conn_set_max_output(c, adm->max_output);
  adm->on_new(c, owner);
  if (la_conn_accept(c, server) != 0) {
    la_conn_close(c, "accept failed");
    return NULL;
  }
  const char *why = adm->refuse ? adm->refuse(c) : NULL;
  if (why) {
    la_conn_close(c, why);
    return NULL;
  }
  la_conn_set_deadline(c, adm->deadline_ms);
  return c;
}

void la_refuse_connection(uv_loop_t *loop, uv_stream_t *server) {
  uv_tcp_t *t = malloc(sizeof *t);
  if (!t) return;
  uv_tcp_init(loop, t);
  uv_accept(server, (uv_stream_t *)t);
  uv_close((uv_handle_t *)t, la__free_handle);
}

void la_uv_signals(uv_loop_t *loop, uv_signal_t sig[3], uv_signal_cb cb,
                   void *data) {
  static const int nums[3] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(loop, &sig[i]);
    sig[i].data = data;
    uv_signal_start(&sig[i], cb, nums[i]);
  }
}
