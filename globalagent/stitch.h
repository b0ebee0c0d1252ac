/* stitch.h: which ranks of which (application, cycle) have arrived.
 *
 * A Trace-Set is every rank's trace of one application for one cycle tag. The
 * stitcher only keeps bookkeeping — a bitmap of the ranks present per open
 * set, in arrival order — because the traces themselves are in the store; so
 * memory per open set is nprocs bits. A set closes complete when its last
 * rank arrives, or partial when it has waited longer than the timeout, when
 * its application ends, or when the open-set limit forces the oldest out
 * (counted as evicted). Closing calls the close callback with the missing
 * ranks. Recently closed keys are remembered (a bounded FIFO) so a late or
 * resent trace is reported as such instead of opening a set that can never
 * complete. No libuv, no I/O: unit-tested alone.
 */
#ifndef LA_STITCH_H
#define LA_STITCH_H

#include <stddef.h>
#include <stdint.h>

typedef void (*la_stitch_close_fn)(void *arg, const char *app_id,
                                   uint64_t cycle_tag, uint32_t nprocs,
                                   int complete, const uint32_t *missing,
                                   size_t n_missing, uint64_t t_first_ms);

typedef struct la_stitch la_stitch_t;

typedef struct la_stitch_stats {
  uint64_t open, opened, complete, partial, evicted, duplicates, late;
} la_stitch_stats_t;

enum { LA_STITCH_DUP = 0, LA_STITCH_NEW = 1, LA_STITCH_LATE = 2 };

/* max_open: open sets kept at most (>= 1). fn is called for every close. */
la_stitch_t *la_stitch_new(size_t max_open, la_stitch_close_fn fn, void *arg);
void la_stitch_free(la_stitch_t *st);
void la_stitch_set_max_open(la_stitch_t *st, size_t max_open);

/* Rank `rank` of app_id (nprocs ranks) delivered cycle_tag at now_ms.
 * Returns LA_STITCH_NEW (recorded; the set may have closed complete in the
 * callback), LA_STITCH_DUP (already recorded in an open set),
 * LA_STITCH_LATE (the set was already closed), or LA_EINVAL (rank >= nprocs,
 * nprocs 0, or nprocs different from the set's), LA_ENOMEM. */
int la_stitch_add(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                  uint32_t rank, uint64_t cycle_tag, uint64_t now_ms);

/* Reopens a set from the store after a restart (ranks already present);
 * t_first_ms keeps its age. Returns 0 or an error as la_stitch_add. */
int la_stitch_restore(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                      uint64_t cycle_tag, const uint32_t *ranks, size_t n,
                      uint64_t t_first_ms);

/* Closes as partial every set older than timeout_ms. Returns how many. */
size_t la_stitch_expire(la_stitch_t *st, uint64_t now_ms, uint64_t timeout_ms);

/* Closes as partial every open set of app_id (its application ended). */
size_t la_stitch_app_end(la_stitch_t *st, const char *app_id);

void la_stitch_get_stats(const la_stitch_t *st, la_stitch_stats_t *s);

#endif
