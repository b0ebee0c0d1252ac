/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics.h: the loop side of a daemon's metrics endpoint. A uv timer
 * on the daemon's loop asks the daemon for a status snapshot (its typed
 * StatusReply, la_status.h), renders it in the Prometheus text format and
 * publishes the text to the HTTP thread (la_metrics_http.h), which serves
 * only that text: the daemon's state is read on the loop thread alone.
 * Scrapes see values at most one interval old.
 */
#ifndef LA_METRICS_H
#define LA_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "la_codec.h"

typedef struct la_metrics la_metrics_t;

typedef struct la_metrics_conf {
  const char *listen;    /* metrics.listen: host:port ("" = off) */
  const char *port_file; /* write the bound port here ("" or NULL: don't) */
  const char *prefix;    /* metric name prefix, e.g. "la_localagent_" */
  uint64_t interval_ms;  /* snapshot period */
  unsigned max_conns;    /* HTTP connections open at once */
  size_t max_apps;       /* applications with their own series */
  /* Builds a snapshot on the loop thread (NULL: out of memory, skipped);
   * freed with la_status_free. */
  La__StatusReply *(*snapshot)(void *arg);
  void *arg;
} la_metrics_conf_t;

/* With c->listen empty: does nothing, *out = NULL, returns 0. Else binds
 * and starts the endpoint, publishes a first snapshot, starts the timer
 * (unreferenced: it never keeps the loop alive) and logs the address.
 * Returns 0, or a negative LA_E* code with the reason in why (nothing left
 * running). Loop thread, before uv_run. */
int la_metrics_start(uv_loop_t *loop, const la_metrics_conf_t *c,
                     la_metrics_t **out, char *why, size_t why_len);

/* Applies a reloaded configuration c (SIGHUP) to the endpoint *m (NULL:
 * never started): starts it when it was off and c->listen is set; stops
 * serving when c->listen is empty; when metrics.listen changed, binds the
 * new address before closing the old one, so that when the new one cannot
 * be bound the endpoint stays where it was; a new max_connections rebinds
 * the same address; interval, prefix and max_apps apply from now. Logs
 * what it changed and why anything failed. Returns 0 or the negative LA_E*
 * code of what failed. Loop thread, while uv_run runs. */
int la_metrics_reload(uv_loop_t *loop, const la_metrics_conf_t *c,
                      la_metrics_t **m);

/* Stops the HTTP thread and frees m. Call after uv_run returned, when the
 * daemon's shutdown has closed every handle of the loop (the timer too).
 * NULL is ignored. */
void la_metrics_stop(la_metrics_t *m);

#endif
