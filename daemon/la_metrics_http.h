/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics_http.h: a daemon's metrics endpoint: GET /metrics over HTTP,
 * served by libmicrohttpd on its own thread.
 *
 * Threading: the daemon's loop thread renders its counters into text and
 * hands them over with la_metrics_http_publish (copied under a mutex); the
 * HTTP thread only ever serves the last text published. It never reads
 * the daemon's state. Bounded: a connection limit (a newcomer evicts the
 * connection waiting longest for its request, so idle and half-sent
 * requests cannot keep a scraper out), a per-connection deadline and
 * memory limit; any path but /metrics gets 404, any method but GET or
 * HEAD 405. Deliberately no TLS and no authentication: the endpoint
 * belongs on loopback or behind the node's firewall (docs/security.md).
 * Link the daemons with -lmicrohttpd.
 */
#ifndef LA_METRICS_HTTP_H
#define LA_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef struct la_metrics_http la_metrics_http_t;

/* The [metrics] keys both daemons' settings tables share, written with the
 * table's own S (string) and N (number) macros (settings.c); the fields
 * are metrics_listen, metrics_port_file, metrics_interval_ms and
 * metrics_max_conns. */
#define LA_METRICS_CFG_KEYS(S, N)                                            \
  S("metrics", "listen", metrics_listen, "",                                 \
    "host:port of the HTTP metrics endpoint (GET /metrics; port 0: any); "   \
    "empty: off. No authentication: keep it on loopback"),                   \
      S("metrics", "port_file", metrics_port_file, "",                       \
        "file to write the metrics port into"),                              \
      N("metrics", "interval", LA_CFG_MS, metrics_interval_ms, "1s", 100,    \
        3600000, "how often the served counters are refreshed"),             \
      N("metrics", "max_connections", LA_CFG_INT, metrics_max_conns, "8", 1, \
        1024,                                                                \
        "HTTP connections open at once (beyond: a newcomer closes "          \
        "the one waiting longest without a request answered)")

/* Whether s is a valid metrics.listen value: "" (off) or "host:port"
 * (port 0: any). Prints "NAME: metrics.listen 'S' is not host:port ..." to
 * stderr and returns 0 when not, else 1. */
int la_metrics_listen_ok(const char *name, const char *s);

/* Binds listen ("host:port", the host a name or address; port 0: any),
 * then starts the HTTP thread serving an empty page until the first
 * publish. max_conns bounds open connections: one more arriving shuts
 * down the connection that waited longest without a request being
 * answered (never the newcomer); timeout_s is both the idle timeout and
 * the deadline for a complete request after the accept or the last
 * answer (however slowly it trickles in), enforced as connections
 * arrive. Writes the bound address and port. Returns
 * 0 and *out (stop with la_metrics_http_stop), or a negative LA_E* code
 * with the reason in why. Call from the loop thread, with the daemon's
 * signal handlers installed or not: the HTTP thread blocks every signal. */
int la_metrics_http_start(const char *listen, unsigned max_conns,
                          unsigned timeout_s, la_metrics_http_t **out,
                          char *bound, size_t bound_len, uint16_t *port,
                          char *why, size_t why_len);

/* Replaces the text served (len bytes, copied). Any thread. Returns 0 or
 * LA_ENOMEM (the previous text stays). */
int la_metrics_http_publish(la_metrics_http_t *m, const char *text, size_t len);

/* Requests answered so far (any status). Any thread. */
uint64_t la_metrics_http_requests(la_metrics_http_t *m);

/* Stops the thread (open connections are closed), closes the socket and
 * frees m. NULL is ignored. */
void la_metrics_http_stop(la_metrics_http_t *m);

#endif
