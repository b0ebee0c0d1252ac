/* SPDX-License-Identifier: BSD-3-Clause */
/* pool.h: the LocalAgent's compaction threads, and how a finished job gets
 * back to the loop without making the loop wait for the thread.
 *
 * libuv's own pool tells the loop through a uv_async_t, whose send marks
 * the handle busy, writes the loop's wake-up descriptor, and only then
 * marks it done; the loop, woken by that write, spins (and yields) until
 * the sender has marked it done. A compaction thread runs below the ranks'
 * priority (nice, or SCHED_IDLE): preempted between the write and the
 * mark, by the loop it just woke or by a rank, it leaves the loop thread
 * spinning at the normal priority on a core a rank needs. Here a thread
 * pushes its finished job onto a lock-free list and then writes an
 * eventfd: once the loop is woken, nothing it does waits for the thread.
 *
 * Jobs are taken first in, first out, by whichever thread is free; a
 * job's after callback runs on the loop thread. No thread touches the
 * loop.
 */
#ifndef LA_LOCALAGENT_POOL_H
#define LA_LOCALAGENT_POOL_H

#include <stddef.h>
#include <uv.h>

typedef struct la_pool la_pool_t;

typedef struct la_pool_job la_pool_job_t;
struct la_pool_job {
  void (*work)(la_pool_job_t *j);  /* on a pool thread */
  void (*after)(la_pool_job_t *j); /* then on the loop thread */
  void *data;                      /* the caller's */
  la_pool_job_t *next;             /* the pool's */
};

/* Starts threads (1..128) on loop. Returns 0, or LA_ENOMEM with the reason
 * in why (nothing started). */
int la_pool_start(uv_loop_t *loop, int threads, la_pool_t **out, char *why,
                  size_t why_len);

/* Queues j (work and after set); on the loop thread. */
void la_pool_submit(la_pool_t *p, la_pool_job_t *j);

/* Jobs submitted whose after callback has not run yet. */
int la_pool_pending(const la_pool_t *p);

/* After the loop has ended (its handles closed, la_daemon_close_all):
 * every job still queued or running finishes and its after callback runs
 * here, on the calling thread (one may submit more: those too); then the
 * threads end and p is freed. NULL: nothing. */
void la_pool_stop(la_pool_t *p);

#endif
