/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics_http.c: the metrics endpoint (see la_metrics_http.h). The
 * socket is bound here (clear errors, any port with port 0); libmicrohttpd
 * accepts on it and speaks HTTP in its internal polling thread. What that
 * thread touches: the snapshot (text, length) under mu, the request
 * counter (atomic), and its own list of connections.
 *
 * Slots. libmicrohttpd stops accepting at its connection limit and leaves
 * new connections in the kernel's backlog, so a few peers that open
 * connections and send half a request (or nothing) would make a scraper
 * wait until their idle timeout passed, and a peer that trickles a byte at
 * a time would never time out. So every connection is listed here (the
 * notify-connection callback, on the HTTP thread) with the time it was
 * accepted or last answered, and whether a request of it is being
 * answered. When a connection arrives and more than max_conns are open,
 * the one waiting longest without a request being answered is shut down
 * (shutdown(2) on its socket: libmicrohttpd then reads end of stream and
 * closes it), and any connection that has not completed a request within
 * the deadline of its accept or last answer is shut down too, however it
 * trickles. libmicrohttpd's own limit sits a few connections above
 * max_conns, as a backstop only. A newcomer is never the one evicted: a
 * scraper that sends its request at once is answered. */
#include "la_metrics_http.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "la_daemon.h"
#include "la_errcodes.h"
#include "la_sockio.h"

/* Prometheus text exposition format, version 0.0.4. */
#define LA__CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* One open HTTP connection (HTTP thread only). */
typedef struct la__mconn {
  struct la__mconn *prev, *next;
  int fd;            /* -1 once shut down here */
  int busy;          /* a request of it is being answered */
  uint64_t since_ms; /* accepted, or its last request completed */
} la__mconn_t;

/* Connections libmicrohttpd may hold beyond max_conns (the newcomers that
 * evict others, and those evicted but not yet closed). */
enum { LA__MHD_SLACK = 8 };

struct la_metrics_http {
  struct MHD_Daemon *d;
  pthread_mutex_t mu; /* guards text, len */
  char *text;
  size_t len;
  atomic_uint_fast64_t requests;
  /* the HTTP thread's */
  la__mconn_t *conns;
  unsigned open; /* of conns, not shut down */
  unsigned max_conns;
  uint64_t deadline_ms;
};

static uint64_t la__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Shuts x's socket down: libmicrohttpd reads end of stream and closes it
 * (then the CLOSED notification frees x). HTTP thread. */
static void la__evict(la_metrics_http_t *m, la__mconn_t *x) {
  if (x->fd < 0) return;
  shutdown(x->fd, SHUT_RDWR);
  x->fd = -1;
  m->open--;
}

/* On each new connection (self): the connections past their deadline shut
 * down, then, while more than max_conns are open, the one idle longest
 * without a request being answered. HTTP thread. */
static void la__enforce(la_metrics_http_t *m, la__mconn_t *self) {
  uint64_t now = la__now_ms();
  for (la__mconn_t *x = m->conns; x; x = x->next)
    if (x != self && !x->busy && now - x->since_ms >= m->deadline_ms)
      la__evict(m, x);
  while (m->open > m->max_conns) {
    la__mconn_t *old = NULL;
    for (la__mconn_t *x = m->conns; x; x = x->next)
      if (x != self && x->fd >= 0 && !x->busy &&
          (!old || x->since_ms < old->since_ms))
        old = x;
    if (!old) return; /* all answering: libmicrohttpd's limit applies */
    la__evict(m, old);
  }
}

/* libmicrohttpd's connection notification (HTTP thread): lists and
 * unlists connections. */
static void la__notify(void *cls, struct MHD_Connection *c, void **ctx,
                       enum MHD_ConnectionNotificationCode toe) {
  la_metrics_http_t *m = cls;
  la__mconn_t *x = *ctx;
  if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    x = calloc(1, sizeof *x);
    if (!x) return; /* not listed: only libmicrohttpd's limits apply */
    x->fd = i ? (int)i->connect_fd : -1;
    x->since_ms = la__now_ms();
    x->next = m->conns;
    if (m->conns) m->conns->prev = x;
    m->conns = x;
    *ctx = x;
    if (x->fd >= 0) m->open++;
    la__enforce(m, x);
    return;
  }
  if (!x) return;
  if (x->fd >= 0) m->open--;
  if (x->prev)
    x->prev->next = x->next;
  else
    m->conns = x->next;
  if (x->next) x->next->prev = x->prev;
  free(x);
  *ctx = NULL;
}

/* The listed connection of c, or NULL. HTTP thread. */
static la__mconn_t *la__mconn(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

/* libmicrohttpd's request-completed notification (HTTP thread): the
 * connection waits for its next request from now. */
static void la__completed(void *cls, struct MHD_Connection *c, void **con_cls,
                          enum MHD_RequestTerminationCode toe) {
  (void)cls, (void)con_cls, (void)toe;
  la__mconn_t *x = la__mconn(c);
  if (!x) return;
  x->busy = 0;
  x->since_ms = la__now_ms();
}

int la_metrics_listen_ok(const char *name, const char *s) {
  if (!s[0] || la_daemon_addr_ok(s, 1)) return 1;
  fprintf(stderr,
          "%s: metrics.listen '%s' is not host:port (e.g. 127.0.0.1:9464; "
          "empty: off)\n",
          name, s);
  return 0;
}

/* A page with a fixed body (not copied: static text). */
static enum MHD_Result la__plain(struct MHD_Connection *c, unsigned status,
                                 const char *body) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
    MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

/* libmicrohttpd's request handler (HTTP thread): the snapshot for GET
 * /metrics, 404 and 405 otherwise. A request body is never read: the
 * response goes out on the first call and the connection is closed after
 * it when a body was sent. */
static enum MHD_Result la__handle(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
  la_metrics_http_t *m = cls;
  (void)version, (void)upload, (void)upload_size, (void)con_cls;
  atomic_fetch_add(&m->requests, 1);
  la__mconn_t *x = la__mconn(c);
  if (x) x->busy = 1; /* until la__completed */
  if (strcmp(url, "/metrics") != 0)
    return la__plain(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
  if (strcmp(method, MHD_HTTP_METHOD_GET) &&
      strcmp(method, MHD_HTTP_METHOD_HEAD))
    return la__plain(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
  pthread_mutex_lock(&m->mu);
  struct MHD_Response *r =
      MHD_create_response_from_buffer(m->len, m->text, MHD_RESPMEM_MUST_COPY);
  pthread_mutex_unlock(&m->mu);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, LA__CONTENT_TYPE);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ok;
}


int la_metrics_http_start(const char *listen_addr, unsigned max_conns,
                          unsigned timeout_s, la_metrics_http_t **out,
                          char *bound, size_t bound_len, uint16_t *port,
                          char *why, size_t why_len) {
  *out = NULL;
  la_metrics_http_t *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  pthread_mutex_init(&m->mu, NULL);
  atomic_init(&m->requests, 0);
  m->max_conns = max_conns ? max_conns : 1;
  m->deadline_ms = (uint64_t)(timeout_s ? timeout_s : 1) * 1000u;
  int fd = la_tcp_listen(listen_addr, bound, bound_len, port, why, why_len);
  if (fd < 0) {
    pthread_mutex_destroy(&m->mu);
    free(m);
    return fd;
  }
  /* the HTTP thread inherits this mask: signals stay with the loop */
  sigset_t old;
  la_daemon_mask_signals(&old);
  m->d = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL, la__handle,
      m, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
      m->max_conns + LA__MHD_SLACK, MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
      MHD_OPTION_NOTIFY_CONNECTION, la__notify, m, MHD_OPTION_NOTIFY_COMPLETED,
      la__completed, m, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16384,
      MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1, MHD_OPTION_END);
  la_daemon_unmask_signals(&old);
  if (!m->d) {
    snprintf(why, why_len, "cannot start the HTTP server on %s", bound);
    close(fd);
    pthread_mutex_destroy(&m->mu);
    free(m);
    return LA_EIO;
  }
  *out = m;
  return 0;
}

int la_metrics_http_publish(la_metrics_http_t *m, const char *text,
                            size_t len) {
  char *copy = malloc(len + 1);
  if (!copy) return LA_ENOMEM;
  memcpy(copy, text, len);
  copy[len] = '\0';
  pthread_mutex_lock(&m->mu);
  char *old = m->text;
  m->text = copy;
  m->len = len;
  pthread_mutex_unlock(&m->mu);
  free(old);
  return 0;
}

uint64_t la_metrics_http_requests(la_metrics_http_t *m) {
  return (uint64_t)atomic_load(&m->requests);
}

void la_metrics_http_stop(la_metrics_http_t *m) {
  if (!m) return;
  MHD_stop_daemon(m->d); /* joins the thread, closes the listening socket
                            and every connection (each notified: freed) */
  pthread_mutex_destroy(&m->mu);
  free(m->text);
  free(m);
}
