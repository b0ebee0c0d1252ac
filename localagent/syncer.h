/* SPDX-License-Identifier: BSD-3-Clause */
/* syncer.h: the thread that fsyncs the LocalAgent's log every
 * spool_fsync_interval, so that neither the loop thread (which takes the
 * applications' notifications: a stalled loop makes an application wait
 * for a buffer) nor a compaction waits for the disk. */
#ifndef LA_SYNCER_H
#define LA_SYNCER_H

#include <stdint.h>

#include "outq.h"

typedef struct la_syncer la_syncer_t;

/* Starts a thread that calls la_outq_sync(q) every period_ms (> 0).
 * Returns 0, LA_EINVAL or LA_ENOMEM (why says which). */
int la_syncer_start(la_outq_t *q, uint64_t period_ms, la_syncer_t **out,
                    char *why, size_t why_len);

/* Stops the thread (a sync in progress finishes first) and frees it; the
 * caller's la_outq_close syncs what is left. Accepts NULL. */
void la_syncer_stop(la_syncer_t *s);

#endif /* LA_SYNCER_H */
