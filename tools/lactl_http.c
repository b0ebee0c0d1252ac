/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_http.c: the bounded, token-checked HTTP server of `lactl serve`
 * (see lactl_http.h): the listening socket, connections reading one
 * request head, answers written without blocking, and event streams.
 */
#include "lactl_http.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "la_sockio.h"

/* One connection. */
typedef struct {
  int fd;
  char req[LACTL_HTTP_MAX_REQUEST + 1];
  size_t rlen;
  char *out; /* pending output */
  size_t olen, ooff, ocap;
  int answered;         /* head read and answered: only output remains */
  int sse;              /* an event stream (stays open) */
  uint64_t later;       /* the ticket of an answer to come, 0: none */
  uint64_t since_ms;    /* accept (request deadline) */
  uint64_t progress_ms; /* last output progress */
  uint64_t ping_ms;     /* last keep-alive (streams) */
} la__conn_t;

struct lactl_http {
  int lfd;
  unsigned max_conns;
  char token[65];
  lactl_http_fn fn;
  void *ctx;
  la__conn_t **c; /* max_conns slots */
  uint64_t tickets; /* given so far */
  lactl_http_stats_t st;
};

uint64_t lactl_http_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Binds and listens (non-blocking); the fd or a negative code. --listen
 * names a port always (HOST:PORT), so "localhost" alone is refused. */
static int la__listen(const char *addr, char *bound, size_t bound_len,
                      char *why, size_t why_len) {
  if (!strchr(addr, ':')) {
    snprintf(why, why_len, "--listen '%s' is not HOST:PORT", addr);
    return LA_EINVAL;
  }
  uint16_t port;
  char w[400];
  int fd = la_tcp_listen(addr, bound, bound_len, &port, w, sizeof w);
  if (fd < 0) snprintf(why, why_len, "--listen %s", w);
  return fd;
}

int lactl_http_open(const char *addr, unsigned max_conns, const char *token,
                    lactl_http_fn fn, void *ctx, lactl_http_t **out,
                    char *bound, size_t bound_len, char *why, size_t why_len) {
  *out = NULL;
  if (max_conns == 0 || strlen(token) >= sizeof((lactl_http_t *)0)->token) {
    snprintf(why, why_len, "bad limits or token");
    return LA_EINVAL;
  }
  lactl_http_t *h = calloc(1, sizeof *h);
  if (h) h->c = calloc(max_conns, sizeof *h->c);
  if (!h || !h->c) {
    free(h);
    snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  h->lfd = la__listen(addr, bound, bound_len, why, why_len);
  if (h->lfd < 0) {
    int rc = h->lfd;
    free(h->c), free(h);
    return rc;
  }
  h->max_conns = max_conns;
  snprintf(h->token, sizeof h->token, "%s", token);
  h->fn = fn, h->ctx = ctx;
  *out = h;
  return 0;
}

static void la__drop(lactl_http_t *h, unsigned i) {
  la__conn_t *c = h->c[i];
  if (!c) return;
  close(c->fd);
  free(c->out);
  free(c);
  h->c[i] = NULL;
}

/* Appends n bytes to c's output; -1 when that would pass the queue's
 * bound (streams) or memory runs out. */
static int la__queue(la__conn_t *c, const char *p, size_t n) {
  if (c->ooff == c->olen) c->ooff = c->olen = 0;
  if (c->olen - c->ooff + n > LACTL_HTTP_MAX_QUEUE && c->sse) return -1;
  if (c->olen + n > c->ocap) {
    if (c->ooff) { /* compact first */
      memmove(c->out, c->out + c->ooff, c->olen - c->ooff);
      c->olen -= c->ooff, c->ooff = 0;
    }
    if (c->olen + n > c->ocap) {
      size_t cap = c->ocap ? c->ocap : 4096;
      while (cap < c->olen + n) cap *= 2;
      char *o = realloc(c->out, cap);
      if (!o) return -1;
      c->out = o, c->ocap = cap;
    }
  }
  memcpy(c->out + c->olen, p, n);
  c->olen += n;
  return 0;
}

static const char *la__reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

/* Queues a whole answer (the connection closes once it is sent). */
static void la__answer(la__conn_t *c, int status, const char *ctype,
                       const char *body, size_t len) {
  char head[512];
  int n = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                   "Content-Length: %zu\r\nCache-Control: no-store\r\n"
                   "X-Content-Type-Options: nosniff\r\n"
                   "Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
                   status, la__reason(status), ctype, len);
  if (la__queue(c, head, (size_t)n) || (len && la__queue(c, body, len)))
    c->olen = c->ooff = 0; /* out of memory: nothing is sent, then closed */
  c->answered = 1;
}

static void la__plain(la__conn_t *c, int status, const char *msg) {
  la__answer(c, status, "text/plain; charset=utf-8", msg, strlen(msg));
}

/* Constant-time comparison of the token given with ours. */
static int la__token_ok(const lactl_http_t *h, const char *given) {
  size_t n = strlen(h->token), g = strlen(given);
  unsigned char d = (unsigned char)(n != g);
  for (size_t i = 0; i < n; i++)
    d |= (unsigned char)(h->token[i] ^ (i < g ? given[i] : 0));
  return d == 0;
}

static int la__hex(int ch) {
  return ch >= '0' && ch <= '9'   ? ch - '0'
         : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
         : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                  : -1;
}

int lactl_http_param(const char *query, const char *name, char *buf,
                     size_t cap) {
  size_t nl = strlen(name);
  for (const char *p = query; p && *p;) {
    const char *end = strchr(p, '&');
    if (!end) end = p + strlen(p);
    if ((size_t)(end - p) > nl && !strncmp(p, name, nl) && p[nl] == '=') {
      size_t o = 0;
      for (const char *q = p + nl + 1; q < end; q++) {
        int ch = (unsigned char)*q;
        if (ch == '+')
          ch = ' ';
        else if (ch == '%' && q + 2 < end + 0 + 1 && la__hex(q[1]) >= 0 &&
                 la__hex(q[2]) >= 0) {
          ch = la__hex(q[1]) * 16 + la__hex(q[2]);
          q += 2;
        }
        if (o + 1 >= cap || ch == 0) return 0;
        buf[o++] = (char)ch;
      }
      buf[o] = 0;
      return 1;
    }
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* The request head is complete in c->req: answers it. */
static void la__request(lactl_http_t *h, la__conn_t *c) {
  char *sp1 = strchr(c->req, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
  h->st.requests++;
  if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7)) {
    la__plain(c, 400, "bad request\n");
    return;
  }
  *sp1 = *sp2 = 0;
  char *target = sp1 + 1, *q = strchr(target, '?');
  if (q) *q++ = 0;
  char tok[80];
  if (!lactl_http_param(q, "token", tok, sizeof tok) || !la__token_ok(h, tok)) {
    h->st.refused++;
    la__plain(c, 403,
              "forbidden: this lactl serve needs the token it printed "
              "(?token=...)\n");
    return;
  }
  if (strcmp(c->req, "GET")) {
    la__plain(c, 405, "method not allowed: GET only\n");
    return;
  }
  lactl_http_resp_t r = {.status = 404,
                         .ctype = "text/plain; charset=utf-8",
                         .ticket = ++h->tickets};
  h->fn(h->ctx, target, q ? q : "", &r);
  if (r.later) {
    c->later = r.ticket;
  } else if (r.sse) {
    static const char head[] =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
        "Connection: keep-alive\r\n\r\nretry: 1000\n\n";
    c->sse = 1, c->answered = 1;
    h->st.streams++;
    la__queue(c, head, sizeof head - 1);
  } else if (r.body || r.status == 200) {
    la__answer(c, r.status, r.ctype, r.body, r.len);
  } else {
    la__plain(c, r.status, r.status == 404 ? "not found\n" : "error\n");
  }
  free(r.body);
}

size_t lactl_http_pollfds(lactl_http_t *h, struct pollfd *p, size_t cap) {
  size_t n = 0;
  if (n < cap) p[n++] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
  for (unsigned i = 0; i < h->max_conns && n < cap; i++) {
    la__conn_t *c = h->c[i];
    if (!c) continue;
    short ev = c->answered ? 0 : POLLIN;
    if (c->olen > c->ooff) ev |= POLLOUT;
    if (c->sse || c->later) ev |= POLLIN; /* to see the peer close */
    p[n++] = (struct pollfd){.fd = c->fd, .events = ev};
  }
  return n;
}

static void la__accept(lactl_http_t *h, uint64_t now) {
  for (;;) {
    int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    unsigned i = 0;
    while (i < h->max_conns && h->c[i]) i++;
    if (i == h->max_conns) { /* full: the one waiting longest for its
                                request goes, so idle peers cannot keep
                                the browser out */
      unsigned old = h->max_conns;
      for (unsigned k = 0; k < h->max_conns; k++)
        if (!h->c[k]->answered && !h->c[k]->later &&
            (old == h->max_conns || h->c[k]->since_ms < h->c[old]->since_ms))
          old = k;
      if (old < h->max_conns) {
        h->st.limited++;
        la__drop(h, old);
        i = old;
      }
    }
    la__conn_t *c = i < h->max_conns ? calloc(1, sizeof *c) : NULL;
    if (!c) {
      static const char busy[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
          "Content-Length: 32\r\nConnection: close\r\n\r\n"
          "too many connections: try later\n";
      h->st.limited++;
      (void)!send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    c->fd = fd;
    c->since_ms = c->progress_ms = c->ping_ms = now;
    h->c[i] = c;
  }
}

/* Reads what c's peer sent; 0 to keep c, -1 to drop it. */
static int la__read(lactl_http_t *h, la__conn_t *c) {
  char buf[4096];
  const int done = c->answered || c->later;
  ssize_t n = recv(c->fd, done ? buf : c->req + c->rlen,
                   done ? sizeof buf : LACTL_HTTP_MAX_REQUEST - c->rlen, 0);
  if (n == 0) return -1;
  if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
  if (done) return 0; /* ignored: one request per connection */
  c->rlen += (size_t)n;
  c->req[c->rlen] = 0;
  if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
    la__request(h, c);
  } else if (c->rlen >= LACTL_HTTP_MAX_REQUEST) {
    h->st.limited++;
    la__plain(c, 431, "request head too large\n");
  }
  return 0;
}

/* Writes what c has pending; 0 to keep c, -1 to drop it. */
static int la__write(la__conn_t *c, uint64_t now) {
  while (c->olen > c->ooff) {
    ssize_t n = send(c->fd, c->out + c->ooff, c->olen - c->ooff,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
    c->ooff += (size_t)n;
    c->progress_ms = now;
  }
  return c->answered && !c->sse ? -1 : 0; /* an answer sent: closed */
}

void lactl_http_service(lactl_http_t *h, const struct pollfd *p, size_t n,
                        uint64_t now) {
  for (size_t k = 0; k < n; k++) {
    if (p[k].fd == h->lfd) {
      if (p[k].revents & POLLIN) la__accept(h, now);
      continue;
    }
    for (unsigned i = 0; i < h->max_conns; i++) {
      la__conn_t *c = h->c[i];
      if (!c || c->fd != p[k].fd) continue;
      int drop = 0;
      if (p[k].revents & (POLLIN | POLLHUP | POLLERR)) drop = la__read(h, c);
      if (!drop && (c->answered || (p[k].revents & POLLOUT)))
        drop = la__write(c, now);
      if (drop) la__drop(h, i);
      break;
    }
  }
  for (unsigned i = 0; i < h->max_conns; i++) {
    la__conn_t *c = h->c[i];
    if (!c) continue;
    int late = !c->answered && !c->later &&
               now - c->since_ms > LACTL_HTTP_REQUEST_S * 1000u;
    int stalled =
        c->olen > c->ooff && now - c->progress_ms > LACTL_HTTP_STALL_S * 1000u;
    if (late || stalled) {
      h->st.limited++;
      la__drop(h, i);
      continue;
    }
    if (c->sse && now - c->ping_ms >= LACTL_HTTP_KEEPALIVE_S * 1000u) {
      c->ping_ms = now;
      if (la__queue(c, ": keep-alive\n\n", 14) || la__write(c, now)) {
        h->st.limited++;
        la__drop(h, i);
      }
    }
  }
}

void lactl_http_broadcast(lactl_http_t *h, const char *event, const char *data,
                          size_t len) {
  char head[96];
  int hn = snprintf(head, sizeof head, "event: %s\ndata: ", event);
  uint64_t now = lactl_http_now_ms();
  for (unsigned i = 0; i < h->max_conns; i++) {
    la__conn_t *c = h->c[i];
    if (!c || !c->sse) continue;
    if (la__queue(c, head, (size_t)hn) || la__queue(c, data, len) ||
        la__queue(c, "\n\n", 2) || la__write(c, now)) {
      h->st.limited++; /* a reader that does not keep up: it reconnects */
      la__drop(h, i);
    }
  }
}

int lactl_http_reply(lactl_http_t *h, uint64_t ticket, int status,
                     const char *ctype, const char *body, size_t len) {
  for (unsigned i = 0; ticket && i < h->max_conns; i++) {
    la__conn_t *c = h->c[i];
    if (!c || c->later != ticket) continue;
    c->later = 0;
    la__answer(c, status, ctype, body, len);
    if (la__write(c, lactl_http_now_ms())) la__drop(h, i);
    return 0;
  }
  return LA_ENOTFOUND;
}

void lactl_http_stats(const lactl_http_t *h, lactl_http_stats_t *s) {
  *s = h->st;
}

void lactl_http_close(lactl_http_t *h) {
  if (!h) return;
  for (unsigned i = 0; i < h->max_conns; i++) la__drop(h, i);
  close(h->lfd);
  free(h->c);
  free(h);
}
