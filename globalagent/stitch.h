/* SPDX-License-Identifier: BSD-3-Clause */
/* stitch.h: which ranks of which (application, cycle) have arrived.
 *
 * A Trace-Set is every rank's trace of one application for one cycle tag. The
 * stitcher only keeps bookkeeping — a bitmap of the ranks present per open
 * set, oldest first — because the traces themselves are in the store; so
 * memory per open set is nprocs bits. A set closes complete when its last
 * rank arrives, or partial when it has waited longer than the timeout, when
 * its application ends, or when the open-set limit forces the oldest out
 * (counted as evicted). Closing calls the close callback with the missing
 * ranks.
 *
 * A closed set never reopens. Whether a key not open now was closed before
 * is answered by a bounded cache of recently closed keys (FIFO; evictions
 * counted) and, when the cache does not know the key, by the closed-lookup
 * callback (the GlobalAgent asks its store), so a trace arriving any time
 * after its set closed is reported late, however many sets closed since.
 * Memory: at most max_open open sets, together at most max_memory bytes
 * (la_stitch_set_max_memory; one set alone may exceed it), and closed_cache
 * cached keys.
 * No libuv, no I/O of its own: unit-tested alone with a fake lookup.
 */
#ifndef LA_STITCH_H
#define LA_STITCH_H

#include <stddef.h>
#include <stdint.h>

/* Closed keys remembered in memory by default (stitch.closed_cache). */
#define LA_STITCH_CLOSED_CACHE_DEFAULT 65536

typedef void (*la_stitch_close_fn)(void *arg, const char *app_id,
                                   uint64_t cycle_tag, uint32_t nprocs,
                                   int complete, const uint32_t *missing,
                                   size_t n_missing, uint64_t t_first_ms);

/* Was (app_id, cycle_tag) closed before? Returns 1 (closed), 0 (not closed,
 * or never seen), or a negative LA_E* code (the answer is unknown). */
typedef int (*la_stitch_lookup_fn)(void *arg, const char *app_id,
                                   uint64_t cycle_tag);

typedef struct la_stitch la_stitch_t;

typedef struct la_stitch_stats {
  uint64_t open, opened, complete, partial, evicted, duplicates, late;
  uint64_t closed_cached;  /* closed keys in the cache now */
  uint64_t closed_evicted; /* closed keys the full cache forgot */
  uint64_t lookups;        /* closed-lookup callback calls */
  uint64_t open_bytes;     /* memory of the open sets now */
} la_stitch_stats_t;

enum { LA_STITCH_DUP = 0, LA_STITCH_NEW = 1, LA_STITCH_LATE = 2 };

/* max_open: open sets kept at most (>= 1). fn is called for every close.
 * The closed-key cache holds LA_STITCH_CLOSED_CACHE_DEFAULT keys; no lookup
 * is set. Returns NULL when out of memory; free with la_stitch_free. */
la_stitch_t *la_stitch_new(size_t max_open, la_stitch_close_fn fn, void *arg);
void la_stitch_free(la_stitch_t *st);
void la_stitch_set_max_open(la_stitch_t *st, size_t max_open);
/* Open sets' memory at most (bitmap, key, bookkeeping: nprocs / 8 + about
 * 100 bytes each); opening one more evicts the oldest (as partial,
 * counted as evicted) until it fits. 0 (the default): no limit but
 * max_open. One set larger than bytes alone is still kept. */
void la_stitch_set_max_memory(la_stitch_t *st, size_t bytes);

/* Sets the callback asked whether a key missing from the closed cache was
 * closed (NULL: none; then only cached keys are known closed). */
void la_stitch_set_lookup(la_stitch_t *st, la_stitch_lookup_fn fn, void *arg);

/* Resizes the closed-key cache to n keys (>= 1); the keys it held are
 * forgotten (the lookup still knows them). Returns 0, LA_EINVAL (n 0), or
 * LA_ENOMEM (the old cache is kept). */
int la_stitch_set_closed_cache(la_stitch_t *st, size_t n);

/* Rank `rank` of app_id (nprocs ranks) delivered cycle_tag at now_ms.
 * Returns LA_STITCH_NEW (recorded; the set may have closed complete in the
 * callback), LA_STITCH_DUP (already recorded in an open set),
 * LA_STITCH_LATE (the set was already closed: nothing is opened), or
 * LA_EINVAL (rank >= nprocs, nprocs 0, or nprocs different from the set's),
 * LA_ENOMEM, or the lookup's error (nothing recorded). */
int la_stitch_add(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                  uint32_t rank, uint64_t cycle_tag, uint64_t now_ms);

/* Reopens a set from the store after a restart (ranks already present);
 * t_first_ms (on the now_ms clock) keeps its age: the set takes its place
 * among the open sets by age, so it expires and is evicted by age. Returns
 * 0 or an error as la_stitch_add. */
int la_stitch_restore(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                      uint64_t cycle_tag, const uint32_t *ranks, size_t n,
                      uint64_t t_first_ms);

/* Closes as partial every set older than timeout_ms. Returns how many. */
size_t la_stitch_expire(la_stitch_t *st, uint64_t now_ms, uint64_t timeout_ms);

/* Closes as partial every open set of app_id (its application ended). */
size_t la_stitch_app_end(la_stitch_t *st, const char *app_id);

/* The hash of a set's key (FNV-1a of the application id, then the tag's
 * bytes): the stitcher's, and held.c's for the same keys. */
uint32_t la_stitch_hash(const char *app_id, uint64_t cycle_tag);

/* 1 when la_stitch_add(st, app_id, nprocs, rank, cycle_tag, ..) would
 * return LA_STITCH_NEW without a lookup: the set is open with nprocs
 * ranks, rank < nprocs has not arrived in it. Else 0. */
int la_stitch_would_add(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                        uint32_t rank, uint64_t cycle_tag);

/* 1 when (app_id, cycle_tag) is open in st, else 0. */
int la_stitch_is_open(la_stitch_t *st, const char *app_id, uint64_t cycle_tag);

void la_stitch_get_stats(const la_stitch_t *st, la_stitch_stats_t *s);

#endif
