/* client.c: the connection to a GlobalAgent's feed: connect, subscribe, and
 * receive Trace-Sets with a time limit.
 *
 * Bytes are read without blocking into a la_frame_reader (la_codec.h), so a
 * time limit that expires in the middle of a frame loses nothing: the rest is
 * read by the next call. A broken stream (bad frame header, oversized frame,
 * peer closed, socket error) is sticky; a well-framed message that fails
 * validation only skips that message. Requests and their replies are in
 * query.c; Trace-Set contents in traceset.c and weights.c.
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
  int fd = LA_EINVAL;
  while (*host_port && fd < 0) {
    char one[300];
    size_t k = strcspn(host_port, ",");
    if (k >= sizeof one ||
        (snprintf(one, sizeof one, "%.*s", (int)k, host_port),
         la_hostport_parse(one, host, sizeof host, &port)))
      return LA_EINVAL;
    fd = la_tcp_connect(host, port, timeout_ms);
    host_port += k + (host_port[k] == ',');
  }
  if (fd < 0) return fd;
  return la_client_from_fd(fd, timeout_ms, out);
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
  la_frame_reader_free(&c->rd);
  if (c->fd >= 0) close(c->fd);
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
      return la__client_die(c, LA_EIO, "%s",
                            la_frame_reader_pending(&c->rd)
                                ? "connection closed in the middle of a frame"
                                : "connection closed by the GlobalAgent");
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
  int rc = la__traceset_adopt_max((La__TraceSet *)msg, 0, c->max_rank_elements,
                                  out, why, sizeof why);
  if (rc) return la__client_fail(c, rc, "bad TraceSet: %s", why);
  la__traceset_choose(*out, c->weights);
  return 0;
}

/* Keeps a set that arrived during a request; drops the oldest when full. */
static void la__client_keep(la_client_t *c, la_traceset_t *t) {
  if (c->p_count == LA_CLIENT_MAX_PENDING) {
    la_traceset_free(c->pending[c->p_head]);
    c->p_head = (c->p_head + 1) % LA_CLIENT_MAX_PENDING;
    c->p_count--;
    c->local_dropped++;
  }
  c->pending[(c->p_head + c->p_count) % LA_CLIENT_MAX_PENDING] = t;
  c->p_count++;
}

int la__client_request(la_client_t *c, uint16_t type,
                       const ProtobufCMessage *msg, uint16_t *reply_type,
                       ProtobufCMessage **reply) {
  *reply = NULL;
  la__client_begin(c);
  int rc = la__client_send(c, type, msg);
  if (rc) return rc;
  uint64_t deadline = la_now_ms() + (uint64_t)c->timeout_ms;
  for (;;) {
    uint16_t t = 0;
    ProtobufCMessage *m;
    rc = la__client_read(c, deadline, &t, &m);
    if (rc == LA_EPROTO && !c->dead && t == LA__MSG_TYPE__MSG_TRACE_SET) {
      c->local_dropped++; /* a malformed set for the subscription */
      continue;
    }
    if (rc) return rc;
    if (t == LA__MSG_TYPE__MSG_TRACE_SET) {
      la_traceset_t *s;
      if (la__client_set(c, m, &s) == 0)
        la__client_keep(c, s);
      else
        c->local_dropped++;
      continue;
    }
    if (t == LA__MSG_TYPE__MSG_ERROR) {
      rc = la__client_error_msg(c, (const La__Error *)m);
      la_msg_free(m);
      return rc;
    }
    *reply_type = t;
    *reply = m;
    return 0;
  }
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
  if (has_cycle) {
    s.has_cycle_tag = 1;
    s.cycle_tag = cycle_tag;
    s.has_has_cycle = 1;
    s.has_cycle = 1;
  }
  char why[200];
  if (la_msg_validate(LA__MSG_TYPE__MSG_SUBSCRIBE, &s.base, why, sizeof why))
    return la__client_fail(c, LA_EINVAL, "subscribe: %s", why);
  return la__client_send(c, LA__MSG_TYPE__MSG_SUBSCRIBE, &s.base);
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
  if (c->p_count) {
    *out = c->pending[c->p_head];
    c->p_head = (c->p_head + 1) % LA_CLIENT_MAX_PENDING;
    c->p_count--;
    (*out)->dropped += c->local_dropped;
    return 0;
  }
  uint64_t deadline =
      timeout_ms < 0 ? UINT64_MAX : la_now_ms() + (uint64_t)timeout_ms;
  for (;;) {
    uint16_t t = 0;
    ProtobufCMessage *m;
    int rc = la__client_read(c, deadline, &t, &m);
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
      default:
        la__client_fail(c, LA_EPROTO, "unexpected %s from the GlobalAgent",
                        la_msg_name(t));
        la_msg_free(m);
        return LA_EPROTO;
    }
  }
}
