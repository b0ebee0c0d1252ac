/* SPDX-License-Identifier: BSD-3-Clause */
/* held.h: the traces of open Trace-Sets, kept in memory for publishing.
 *
 * When a set closes, the GlobalAgent publishes it from these copies
 * instead of reading every trace back from the store: the cost of a
 * publish no longer includes reading R traces' blobs back. A copy holds
 * exactly the fields the store keeps and returns (store_load.c), so
 * subscribers receive the same set either way. Memory is bounded by
 * stitch.publish_memory, over every open set: a trace that does not fit
 * is not held and its set is published from the store (counted,
 * "spilled"). A set the stitcher opened without this module seeing its
 * first arrival (restored after a restart or a rollback) has no copies
 * and is published from the store too. No libuv; loop thread only.
 */
#ifndef LA_GLOBALAGENT_HELD_H
#define LA_GLOBALAGENT_HELD_H

#include <stddef.h>
#include <stdint.h>

#include "la.pb-c.h"

typedef struct la_held la_held_t;

/* A closed set's copies, taken out of the module: traces[0..n) sorted by
 * rank, owned by the caller (la_held_set_free, or handed on). */
typedef struct la_held_set {
  La__CompactTrace **traces;
  size_t n;
  size_t bytes; /* what they were counted for */
} la_held_set_t;

typedef struct la_held_stats {
  uint64_t sets;       /* open sets held now */
  uint64_t bytes;      /* bytes held now */
  uint64_t peak_bytes; /* most bytes held at once */
  uint64_t spilled;    /* sets that outgrew the budget (store publish) */
} la_held_stats_t;

/* A new module holding at most cap bytes (0: nothing is held). NULL when
 * out of memory. */
la_held_t *la_held_new(uint64_t cap);
/* Frees h and every copy it holds. NULL is fine. */
void la_held_free(la_held_t *h);
/* Drops every held set (after a rollback: the stitcher is rebuilt). */
void la_held_clear(la_held_t *h);

/* Starts holding the set (app, tag) of nprocs ranks, which the stitcher
 * is about to open. Out of budget or memory: the set is not held.
 * Returns 0 or LA_EINVAL. */
int la_held_open(la_held_t *h, const char *app, uint64_t tag, uint32_t nprocs);
/* A copy of t (just stored as new) into its set when that set is held and
 * the copy fits the budget; otherwise the set stops being held (its
 * copies freed, counted as spilled). A rank >= nprocs is not part of the
 * set and is ignored. */
void la_held_add(la_held_t *h, const La__CompactTrace *t);
/* As la_held_add, for a t that la_msg_decode made (each part its own
 * allocation, freed by la_msg_free): instead of being copied, its
 * encodings (segments, robust segments, channels' segments) and, when they
 * carry no unknown fields, its statistics and fit errors move into the
 * held copy, leaving those fields of t empty (NULL, length 0). Its owner
 * still frees t, and must not read those fields after the call. */
void la_held_add_decoded(la_held_t *h, La__CompactTrace *t);
/* Stops holding (app, tag) without using it. */
void la_held_drop(la_held_t *h, const char *app, uint64_t tag);
/* Takes the copies of (app, tag) out of h: 1 with *out filled, 0 when the
 * set is not held (publish from the store). Their bytes stay counted
 * against the budget until la_held_release: a set waiting for its commit
 * and publication still holds its memory. */
int la_held_take(la_held_t *h, const char *app, uint64_t tag,
                 la_held_set_t *out);
/* Frees the copies of s (whatever is left in it, the traces handed on
 * being NULL or gone with n = 0). */
void la_held_set_free(la_held_set_t *s);
/* Once a taken set is published or dropped: frees what is left of s and
 * gives its bytes back to h's budget. */
void la_held_release(la_held_t *h, la_held_set_t *s);

void la_held_get_stats(const la_held_t *h, la_held_stats_t *s);

#endif /* LA_GLOBALAGENT_HELD_H */
