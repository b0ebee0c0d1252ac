/* SPDX-License-Identifier: BSD-3-Clause */
/* reclaim.h: freeing on libuv's thread pool what the loop thread is done
 * with.
 *
 * A LocalAgent's message is decoded on the pool, so its many small
 * allocations live in a pool thread's malloc arena; freeing them on the
 * loop thread cost it about as much as storing the message (the arena's
 * lock, chunks unlinked and consolidated). The loop hands such memory
 * here instead (la_reclaim_add) and a pool job frees it: the loop's work
 * per message is a pointer appended to an array. Memory is bounded: the
 * loop hands the array to a job each iteration (la_reclaim_flush, from
 * agents.c's check), or with the open batch's commit to the commit thread
 * (committer.h: within the iteration or the gather window), and at once
 * when it holds LA_RECLAIM_BATCH pointers;
 * what is handed over but not yet freed is never touched again by the loop.
 * When the pool refuses a job, or at la_reclaim_free, the loop frees it
 * itself. Loop thread only, except the freeing functions, which run on a
 * pool thread and must not touch loop state.
 */
#ifndef LA_GLOBALAGENT_RECLAIM_H
#define LA_GLOBALAGENT_RECLAIM_H

#include <stddef.h>
#include <uv.h>

/* Pointers handed to a job at once when this many wait. */
#define LA_RECLAIM_BATCH 4096

typedef struct la_reclaim la_reclaim_t;

/* What la_reclaim_add's pointer is freed with (on a pool thread). */
typedef void (*la_reclaim_fn)(void *p);

/* A new one handing its jobs to loop's pool; NULL when out of memory. */
la_reclaim_t *la_reclaim_new(uv_loop_t *loop);

/* Frees p with fn later, on the pool (at once, on the loop, when out of
 * memory). r may be NULL (frees at once); p may be NULL (nothing). */
void la_reclaim_add(la_reclaim_t *r, la_reclaim_fn fn, void *p);

/* Hands what waits to a pool job (nothing when nothing waits). */
void la_reclaim_flush(la_reclaim_t *r);

/* The pointers waiting (0 for NULL). */
size_t la_reclaim_waiting(const la_reclaim_t *r);

/* What waits, taken whole for another thread to free (a thread woken
 * anyway, so that no pool job wakes a pool thread and then the loop for
 * it: committer.c's, after the commit it hands over); NULL when nothing
 * waits. r adds to a new array afterwards. */
typedef struct la_reclaim_batch la_reclaim_batch_t;
la_reclaim_batch_t *la_reclaim_take(la_reclaim_t *r);

/* Frees b's pointers and b, on any thread (the freeing functions touch
 * no loop state). NULL is fine. */
void la_reclaim_batch_run(la_reclaim_batch_t *b);

/* Pointers added, and of them freed on the loop (a refused job, out of
 * memory, la_reclaim_free), since la_reclaim_new. */
typedef struct la_reclaim_stats {
  unsigned long long added, on_loop, jobs;
} la_reclaim_stats_t;
la_reclaim_stats_t la_reclaim_stats(const la_reclaim_t *r);

/* Frees what waits (on the loop) and r. Jobs already handed over free
 * their own pointers when they run. NULL is fine. */
void la_reclaim_free(la_reclaim_t *r);

#endif
