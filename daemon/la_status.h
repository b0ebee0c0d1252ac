/* SPDX-License-Identifier: BSD-3-Clause */
/* la_status.h: builds a StatusReply for `lactl status` and the daemons'
 * /metrics endpoint; both daemons' control.c fill one with their counters.
 *
 * Every value goes in twice: as an entry (key, value formatted for people:
 * what `lactl status` prints and la_client_status returns) and as a typed
 * StatusMetric (counter, gauge or info, with a help line) that `lactl status
 * --json` and la_status_exposition render. Rows of applications, agents and
 * missing reasons are structured (StatusApp, StatusAgent, StatusReason).
 * Out of memory: a row is left out (the reply stays well formed). No libuv,
 * no locking: build and render on one thread.
 */
#ifndef LA_STATUS_H
#define LA_STATUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "la_codec.h"

/* A new, empty reply for the named daemon; NULL when out of memory. */
La__StatusReply *la_status_new(const char *daemon);
/* Appends an entry only (value formatted, at most 255 bytes): text for
 * people that has no typed twin (e.g. a free-text rank row). */
void la_status_row(La__StatusReply *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Typed values; key is [a-z0-9_], help one line. Each also appends the
 * entry (counter and gauge as decimal integers, real with fmt, info as
 * is). */
void la_status_counter(La__StatusReply *r, const char *key, const char *help,
                       uint64_t v);
void la_status_gauge(La__StatusReply *r, const char *key, const char *help,
                     int64_t v);
void la_status_real(La__StatusReply *r, const char *key, const char *help,
                    const char *fmt, double v);
/* A counter whose value is real (e.g. seconds spent): rendered
 * PREFIX<key>_total. */
void la_status_real_counter(La__StatusReply *r, const char *key,
                            const char *help, const char *fmt, double v);
void la_status_info(La__StatusReply *r, const char *key, const char *help,
                    const char *v);

/* Appends an application (app_id copied); returns it (owned by r) or NULL
 * when out of memory. */
La__StatusApp *la_status_app(La__StatusReply *r, const char *app_id);
/* Appends a rank to a (a NULL a is ignored); the caller fills the returned
 * row's fields. NULL when out of memory. */
La__StatusRank *la_status_rank(La__StatusApp *a, uint32_t rank);
/* Appends a connected LocalAgent's row (strings copied). */
void la_status_agent(La__StatusReply *r, const char *host, const char *address,
                     uint64_t messages, uint64_t acked_seq);
/* Appends a missing reason's row (reason copied). */
void la_status_reason(La__StatusReply *r, const char *reason, uint64_t count);

/* Frees a reply built here (not one la_msg_decode made: la_msg_free). */
void la_status_free(La__StatusReply *r);

/* Writes r's typed values to f in the Prometheus text exposition format
 * (version 0.0.4), every name prefixed with prefix ("la_localagent_"):
 * counters as PREFIX<key>_total, gauges as PREFIX<key> (reals in the
 * shortest form that reads back exactly), the info value "version" as the
 * label of PREFIX info 1 and "state" as PREFIX state{state="..."} 1, the
 * first max_apps applications' rows labelled {app="ID"} (cycles, skipped
 * and waits as PREFIX app_*_total counters, the rest gauges; the others
 * counted in PREFIX app_series_dropped) and the agents' rows summed per
 * host as PREFIX agent_messages_total{host="H"}; each name once, after its
 * HELP and TYPE lines. Returns 0, or LA_EIO when f failed. */
int la_status_exposition(const La__StatusReply *r, const char *prefix,
                         size_t max_apps, FILE *f);

/* Writes v to f in the shortest of %.15g, %.16g and %.17g that reads
 * back as v (1184.137, not 1184.1369999999999). */
void la_status_number(FILE *f, double v);

#endif
