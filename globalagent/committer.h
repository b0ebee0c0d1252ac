/* SPDX-License-Identifier: BSD-3-Clause */
/* committer.h: the group commit on a thread of its own.
 *
 * Committing a batch (SQLite: writing its pages to the WAL and fdatasync;
 * PostgreSQL: the COMMIT round trip) took about a third of the loop
 * thread's CPU. The loop now hands the commit to the committer thread and
 * goes on reading, decrypting and decoding (on the pool) while it runs;
 * the result comes back through a uv_async and the loop then acknowledges
 * and publishes (ingest.c, la_ga_commit_done), exactly as before, so
 * nothing is acknowledged before it is durable.
 *
 * While a commit runs the store belongs to the committer: the loop does
 * not ingest (agents.c parks the decoded messages, in order, until the
 * result; ingest.c's expiry tick waits too), and any other loop code that
 * uses the store reaches it through la_ga_store(), which first waits for
 * the thread to be done with it (the commit's result is still handled by
 * the uv_async's callback: acks, publishing, a failure's recovery never
 * happen inside such a caller). The store is then committed or rolled
 * back, with no batch open. One commit at a time; the batch the
 * loop builds next starts after the result.
 *
 * The gather window: on a busy node the ranks' traces of a cycle come one
 * at a time, and each was a commit of its own (one fdatasync and about
 * nine pages for one trace). A batch of fewer than LA_GA_GATHER_FEW
 * messages that expects more (one of its traces joined a Trace-Set still
 * missing ranks, and it closed no set: nothing waits to be published)
 * waits up to store.gather_ms for them before it is committed; the batch
 * that closes the set is committed at once, so publishing is not delayed.
 */
#ifndef LA_GLOBALAGENT_COMMITTER_H
#define LA_GLOBALAGENT_COMMITTER_H

#include <stddef.h>

typedef struct la_ga la_ga_t;
typedef struct la_ga_committer la_ga_committer_t;

/* What the loop does with a commit's result (rc: la_store_commit's; why:
 * the store's error when it failed, taken on the thread), and
 * once it may ingest again (ingest.c's la_ga_commit_done and
 * la_ga_after_commit). */
typedef void (*la_ga_commit_done_fn)(la_ga_t *ga, int rc, const char *why);
typedef void (*la_ga_after_commit_fn)(la_ga_t *ga);
/* Commits the open batch now (ingest.c's la_ga_commit): the window ended. */
typedef void (*la_ga_commit_fn)(la_ga_t *ga);

/* A batch of this many messages or more is committed without waiting. */
#define LA_GA_GATHER_FEW 32

/* What the loop freed goes with a commit when at most this many
 * pointers (reclaim.h), else to a pool job. */
#define LA_GA_CARRY_MAX 64

/* Starts the thread and its uv_async on ga->loop. Returns 0, or a
 * negative LA_E* code (then commits run on the loop, as before; when
 * ga->committer is NULL, out of memory). */
int la_ga_committer_start(la_ga_t *ga, la_ga_commit_done_fn done,
                          la_ga_after_commit_fn after,
                          la_ga_commit_fn commit);

/* Whether a commit can be handed over now (started, its uv_async not
 * closing: the daemon stops). */
int la_ga_committer_ready(const la_ga_t *ga);

/* Whether a batch is open whose commit the thread will take, with what
 * the loop freed until then (reclaim.h: at most LA_GA_CARRY_MAX
 * pointers): the loop then keeps that for it rather than starting a pool
 * job. It is committed within the iteration, or the gather window, or at
 * a failure on the loop (ingest.c then hands it to the pool). */
int la_ga_committer_carries(const la_ga_t *ga);

/* Whether the open batch of batch_n messages waits for more before it is
 * committed (more: it expects more, as above): 1 starts the window (or
 * keeps the one started for this batch running: it is never extended),
 * 0 ends it (commit now). Without a commit thread, never. */
int la_ga_committer_gather(la_ga_t *ga, size_t batch_n, int more);

/* Ends the window, if one runs (the batch is being committed). */
void la_ga_committer_gather_end(la_ga_t *ga);

/* Hands the open batch's commit to the thread, with what the loop freed
 * meanwhile when at most LA_GA_CARRY_MAX pointers (la_reclaim_take: freed
 * by the thread after the commit's result); ga->committing until the
 * result is handled.
 * la_ga_committer_ready must hold. */
void la_ga_committer_submit(la_ga_t *ga);

/* When a commit runs: waits for it and handles its result (the done
 * function) before returning. Nothing when none runs. */
void la_ga_commit_wait(la_ga_t *ga);

/* Stops the thread (after la_ga_commit_wait) and frees it; the uv_async
 * must be closed, or the loop no longer run. */
void la_ga_committer_stop(la_ga_t *ga);

#endif
