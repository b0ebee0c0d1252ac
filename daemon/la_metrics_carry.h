/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics_carry.h: keeps a LocalAgent's per-application counters
 * (cycles, skipped, waits: sums over the application's registered ranks)
 * from going down when one of its ranks ends, which rate() would read as
 * a counter reset. Between snapshots it remembers each rank's last values;
 * a rank gone from the next snapshot leaves them to its application, and
 * they are added to the application's rows from then on. An application
 * gone from a snapshot (no rank left) is forgotten: its series end. Loop
 * thread (the metrics timer); no libuv.
 */
#ifndef LA_METRICS_CARRY_H
#define LA_METRICS_CARRY_H

#include "la_codec.h"

typedef struct la_metrics_carry la_metrics_carry_t;

/* Records r's ranks in *c (created on first use) and adds the totals of
 * each application's ended ranks into the application's first rank row
 * of r (a reply rendered for /metrics only). Out of memory: r is left as
 * it is. */
void la_metrics_carry_apply(la_metrics_carry_t **c, La__StatusReply *r);

/* Frees c (NULL is ignored). */
void la_metrics_carry_free(la_metrics_carry_t *c);

#endif
