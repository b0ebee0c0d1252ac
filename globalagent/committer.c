/* SPDX-License-Identifier: BSD-3-Clause */
/* committer.c: the group commit on a thread of its own (committer.h).
 *
 * The hand-over: the loop sets req under the mutex and signals; the thread
 * commits (la_store_commit, which rolls back itself when it fails), sets
 * done with the result under the mutex, wakes a waiting loop and sends the
 * uv_async. The loop takes the result once (la__take), from the async's
 * callback or from la_ga_commit_wait, whichever comes first, and hands it
 * to ingest.c's done function; the async's callback then lets the loop
 * ingest again (ingest.c's after function). Calls out only through those
 * two, so that the files using la_ga_store need nothing more. Between
 * req and done only the thread touches the store; the mutex orders
 * everything either side wrote to it.
 *
 * The gather window (la_ga_committer_gather): a small batch that expects
 * more (committer.h) is not handed over at once; a one-shot uv_timer of
 * store.gather_ms is started, the loop goes on ingesting into the same
 * open transaction, and the batch is committed when it no longer expects
 * more, grows to LA_GA_GATHER_FEW, or the timer fires (then through
 * commit_fn, ingest.c's la_ga_commit), whichever comes first. The window
 * is never extended, so nothing waits for its Ack longer than the window
 * plus the commit. A loop caller that reaches the store meanwhile
 * (la_ga_store) ends the window: it commits first, so that it reads only
 * what is committed.
 *
 * The hand-over also carries what the loop freed since the last one (the
 * batch's decoded messages, reclaim.h) when that is little (at most
 * LA_GA_CARRY_MAX pointers): the thread frees it after the commit's
 * result is out, instead of a pool job that would wake a pool thread and
 * then the loop once more for every trace of a node whose traces come
 * one at a time. More goes to a pool job as before: batches of hundreds
 * of traces share one, and the commit thread, the bottleneck there,
 * takes no more work.
 */
#include "committer.h"

#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "ga.h"
#include "la_errcodes.h"
#include "la_log.h"
#include "reclaim.h"

struct la_ga_committer {
  la_ga_t *ga;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uv_async_t async;
  int req;  /* a commit handed over, not yet taken by the thread */
  int done; /* a commit finished (rc), its result not yet taken */
  int rc;
  char why[512]; /* the store's error when rc is not 0 */
  int quit;
  la_reclaim_batch_t *freed; /* handed over with req: freed after it */
  /* tests: LA_GA_TEST_KILL_AFTER_COMMIT=n kills the daemon (SIGKILL)
   * right after its n-th commit here succeeded, before the loop hears of
   * it (nothing of that batch is acknowledged); 0: never */
  unsigned long long commits, kill_after;
  la_ga_commit_done_fn done_fn; /* ingest.c's, on the loop */
  la_ga_after_commit_fn after_fn;
  la_ga_commit_fn commit_fn;
  uv_timer_t gather;  /* the gather window's deadline (loop only) */
  int gathering;      /* the open batch waits for it */
};

static void *la__main(void *arg) {
  la_ga_committer_t *c = arg;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (!c->req && !c->quit) pthread_cond_wait(&c->cv, &c->mu);
    if (!c->req) break; /* quit, nothing asked */
    c->req = 0;
    la_reclaim_batch_t *freed = c->freed;
    c->freed = NULL;
    pthread_mutex_unlock(&c->mu);
    int rc = la_store_commit(c->ga->store); /* the store is ours now */
    if (rc == 0 && ++c->commits == c->kill_after) raise(SIGKILL);
    pthread_mutex_lock(&c->mu);
    c->rc = rc;
    snprintf(c->why, sizeof c->why, "%s",
             rc ? la_store_errmsg(c->ga->store) : "");
    c->done = 1;
    pthread_cond_broadcast(&c->cv);
    uv_async_send(&c->async); /* under the mutex: stop waits for it */
    pthread_mutex_unlock(&c->mu);
    la_reclaim_batch_run(freed); /* after the result: no Ack waits for it */
    pthread_mutex_lock(&c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* The result of the commit that ran (waiting for it when block), once:
 * 1 with *rc and the error in why, or 0 when it is not there (yet, or
 * taken already). */
static int la__take(la_ga_committer_t *c, int block, int *rc, char *why,
                    size_t len) {
  pthread_mutex_lock(&c->mu);
  while (block && !c->done) pthread_cond_wait(&c->cv, &c->mu);
  int got = c->done;
  if (got) {
    *rc = c->rc;
    snprintf(why, len, "%s", c->why);
    c->done = 0;
  }
  pthread_mutex_unlock(&c->mu);
  return got;
}

static void la__on_async(uv_async_t *h) {
  la_ga_committer_t *c = h->data;
  la_ga_t *ga = c->ga;
  int rc;
  char why[512];
  if (ga->committing && la__take(c, 0, &rc, why, sizeof why)) {
    ga->committing = 0;
    c->done_fn(ga, rc, why);
  }
  if (!ga->committing) c->after_fn(ga);
}

static void la__on_gather(uv_timer_t *t) {
  la_ga_committer_t *c = t->data;
  c->gathering = 0;
  c->commit_fn(c->ga);
}

int la_ga_committer_start(la_ga_t *ga, la_ga_commit_done_fn done,
                          la_ga_after_commit_fn after,
                          la_ga_commit_fn commit) {
  la_ga_committer_t *c = calloc(1, sizeof *c);
  if (!c) return LA_ENOMEM;
  c->ga = ga;
  c->done_fn = done;
  c->after_fn = after;
  c->commit_fn = commit;
  const char *k = getenv("LA_GA_TEST_KILL_AFTER_COMMIT");
  if (k) c->kill_after = strtoull(k, NULL, 10);
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    free(c);
    return LA_ENOMEM;
  }
  if (pthread_cond_init(&c->cv, NULL) != 0) {
    pthread_mutex_destroy(&c->mu);
    free(c);
    return LA_ENOMEM;
  }
  if (uv_async_init(ga->loop, &c->async, la__on_async) != 0) {
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
    return LA_ENOMEM;
  }
  c->async.data = c;
  uv_timer_init(ga->loop, &c->gather); /* cannot fail */
  c->gather.data = c;
  int e = pthread_create(&c->th, NULL, la__main, c);
  if (e != 0) {
    /* the handles are closed by the daemon's walk; c lives until stop */
    uv_close((uv_handle_t *)&c->async, NULL);
    uv_close((uv_handle_t *)&c->gather, NULL);
    c->quit = -1; /* no thread to join */
    ga->committer = c;
    la_log_warnx("commit thread not started (%d): commits run on the loop",
                 e);
    return LA_ENOMEM;
  }
  pthread_setname_np(c->th, "la-commit"); /* for top -H and perf */
  ga->committer = c;
  return 0;
}

int la_ga_committer_ready(const la_ga_t *ga) {
  const la_ga_committer_t *c = ga->committer;
  return c && c->quit == 0 &&
         !uv_is_closing((const uv_handle_t *)&c->async);
}

/* Whether what the loop freed is little enough to go with a commit. */
static int la__carry_ok(const la_ga_t *ga) {
  return la_reclaim_waiting(ga->reclaim) <= LA_GA_CARRY_MAX;
}

int la_ga_committer_carries(const la_ga_t *ga) {
  return ga->in_txn && la_ga_committer_ready(ga) && la__carry_ok(ga);
}

int la_ga_committer_gather(la_ga_t *ga, size_t batch_n, int more) {
  la_ga_committer_t *c = ga->committer;
  if (!la_ga_committer_ready(ga) || uv_is_closing((uv_handle_t *)&c->gather))
    return 0;
  int wait = more && batch_n < LA_GA_GATHER_FEW && ga->set.gather_ms > 0;
  if (c->gathering) {
    if (wait) return 1; /* the window started earlier runs on */
    la_ga_committer_gather_end(ga);
    return 0;
  }
  if (!wait) return 0;
  uv_timer_start(&c->gather, la__on_gather, (uint64_t)ga->set.gather_ms, 0);
  c->gathering = 1;
  return 1;
}

void la_ga_committer_gather_end(la_ga_t *ga) {
  la_ga_committer_t *c = ga->committer;
  if (!c || !c->gathering) return;
  uv_timer_stop(&c->gather);
  c->gathering = 0;
}

void la_ga_committer_submit(la_ga_t *ga) {
  la_ga_committer_t *c = ga->committer;
  assert(la_ga_committer_ready(ga) && !ga->committing);
  ga->committing = 1;
  pthread_mutex_lock(&c->mu);
  assert(!c->freed);
  if (la__carry_ok(ga)) /* else agents.c's check hands it to the pool */
    c->freed = la_reclaim_take(ga->reclaim); /* the batch's freed memory */
  c->req = 1;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

void la_ga_commit_wait(la_ga_t *ga) {
  int rc;
  char why[512];
  if (!ga->committing) return;
  if (!la__take(ga->committer, 1, &rc, why, sizeof why))
    return; /* not reached */
  ga->committing = 0;
  ga->committer->done_fn(ga, rc, why);
  /* the parked frames wait for the async's callback (or are dropped when
   * the daemon stops): the caller may be in the middle of anything */
}

la_store_t *la_ga_store(la_ga_t *ga) {
  la_ga_committer_t *c = ga->committer;
  if (c && c->gathering && la_ga_committer_ready(ga))
    c->commit_fn(ga); /* ends the window: handed over, waited for below */
  if (!ga->committing) return ga->store;
  /* waits for the thread to be done with the store; the result stays for
   * the async's callback (or la_ga_commit_wait), so that no caller finds
   * the Acks sent or the links closed under its feet */
  pthread_mutex_lock(&c->mu);
  while (!c->done) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  return ga->store;
}

void la_ga_committer_stop(la_ga_t *ga) {
  la_ga_committer_t *c = ga->committer;
  if (!c) return;
  la_ga_commit_wait(ga);
  if (c->quit == 0) {
    pthread_mutex_lock(&c->mu);
    c->quit = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->th, NULL);
  }
  la_reclaim_batch_run(c->freed); /* none: the thread took it with req */
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  ga->committer = NULL;
  free(c);
}
