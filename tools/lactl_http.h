/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_http.h: the small, bounded, read-only HTTP/1.1 server of `lactl
 * serve`, driven by the caller's poll loop (one thread, no library).
 *
 * Every request must carry the server's token (?token=HEX, compared in
 * constant time): without it, 403. Only GET; a request's head is at most
 * LACTL_HTTP_MAX_REQUEST bytes and must arrive within
 * LACTL_HTTP_REQUEST_S seconds of the accept; at most max_conns
 * connections (one more closes the connection that has waited longest
 * without sending its request, or, when every one is answering or
 * streaming, is answered 503 and closed); an answer is
 * closed after it is sent. A server-sent event stream (EventSource) stays
 * open: events are queued to it, a stream whose queue exceeds
 * LACTL_HTTP_MAX_QUEUE bytes (a reader that does not keep up) is closed
 * (the browser reconnects and reloads), as is any connection whose output
 * makes no progress for LACTL_HTTP_STALL_S seconds. A request the handler
 * answers later (a reduction on another thread) keeps its connection
 * without a deadline until it is answered or its peer closes. Memory is thus
 * bounded by max_conns x (the largest answer + the queue).
 */
#ifndef LACTL_HTTP_H
#define LACTL_HTTP_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#define LACTL_HTTP_MAX_REQUEST 8192
#define LACTL_HTTP_REQUEST_S 10
#define LACTL_HTTP_STALL_S 30
#define LACTL_HTTP_MAX_QUEUE (16u << 20)
#define LACTL_HTTP_KEEPALIVE_S 15

typedef struct lactl_http lactl_http_t;

/* An answer the handler fills: status (200, 400, 404, ...), content type
 * (static), body (malloc'ed, taken over; may be NULL), or sse = 1 to turn
 * the connection into an event stream, or later = 1 to answer it later
 * with lactl_http_reply and ticket (the connection waits meanwhile, and
 * is closed when its peer goes). */
typedef struct lactl_http_resp {
  int status;
  const char *ctype;
  char *body;
  size_t len;
  int sse;
  int later;
  uint64_t ticket; /* set before the handler is called: this request's */
} lactl_http_resp_t;

/* Answers GET path?query (token already checked; query without it). */
typedef void (*lactl_http_fn)(void *ctx, const char *path, const char *query,
                              lactl_http_resp_t *resp);

/* Listens on addr ("host:port", port 0: any) with the token (hex, copied)
 * and at most max_conns connections. Writes "host:port" bound into bound.
 * 0 and *out, or a negative LA_E* code with the reason in why. */
int lactl_http_open(const char *addr, unsigned max_conns, const char *token,
                    lactl_http_fn fn, void *ctx, lactl_http_t **out,
                    char *bound, size_t bound_len, char *why, size_t why_len);

/* Puts the server's descriptors into p (room for cap; cap >=
 * max_conns + 1 suffices) and returns how many. */
size_t lactl_http_pollfds(lactl_http_t *h, struct pollfd *p, size_t cap);

/* Handles what poll reported for those descriptors (p, n as filled by
 * lactl_http_pollfds), then deadlines and keep-alives at now_ms
 * (CLOCK_MONOTONIC). */
void lactl_http_service(lactl_http_t *h, const struct pollfd *p, size_t n,
                        uint64_t now_ms);

/* Queues "event: NAME\ndata: DATA\n\n" to every event stream (data: one
 * line). */
void lactl_http_broadcast(lactl_http_t *h, const char *event, const char *data,
                          size_t len);

/* Answers the request of ticket that the handler left for later (body:
 * len bytes, copied). 0, or LA_ENOTFOUND when its connection is gone. */
int lactl_http_reply(lactl_http_t *h, uint64_t ticket, int status,
                     const char *ctype, const char *body, size_t len);

/* The value of parameter name in query, URL-decoded into buf (cap bytes).
 * 1 when present (and it fit), 0 when not. */
int lactl_http_param(const char *query, const char *name, char *buf,
                     size_t cap);

/* Counters: requests answered, refused for the token, connections closed
 * for a limit. */
typedef struct lactl_http_stats {
  uint64_t requests, refused, limited, streams;
} lactl_http_stats_t;
void lactl_http_stats(const lactl_http_t *h, lactl_http_stats_t *s);

void lactl_http_close(lactl_http_t *h);

/* CLOCK_MONOTONIC in ms. */
uint64_t lactl_http_now_ms(void);

#endif /* LACTL_HTTP_H */
