/* SPDX-License-Identifier: BSD-3-Clause */
/* feed_jobs.c: the feed's jobs on the libuv thread pool (feed_jobs.h).
 *
 * A stored Trace-Set asked by a query or a subscription is read from the
 * store and encoded by a pool job, so that a set of tens or hundreds of MB
 * never holds the loop thread (which reads, commits and acknowledges the
 * LocalAgents' traces and serves every other feed connection) for the
 * hundreds of ms to seconds that takes. At most `slots` jobs run at once:
 * feed.query_jobs, and one less than the pool's threads, so that the
 * LocalAgents' ingest jobs (agents.c) always find a thread. Each slot has
 * its own read connection to the store (la_store_open_read: SQLite in WAL
 * mode reads the last commit beside the writer; PostgreSQL a second
 * connection), opened by its first job and kept for the next ones; a
 * connection is used by one thread at a time, never the loop's. A job that
 * finds no free slot waits in a first-come, first-served queue.
 *
 * Deliberately not here: what a job reads or sends (feed.c), ordering per
 * connection (feed.c runs one job per connection at a time).
 */
#include "feed_jobs.h"

#include <assert.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_log.h"

#define LA__MAX_SLOTS 64 /* feed.query_jobs' maximum */

typedef struct la_ga_fjobs {
  int slots;   /* jobs at once */
  int running; /* of them now */
  int stopping;
  la_store_t *rd[LA__MAX_SLOTS];
  int busy[LA__MAX_SLOTS];
  la_ga_fjob_t *wait, **wait_tail; /* no slot yet, oldest first */
  char path[1024];                 /* the store's, for la_store_open_read */
  la_ga_t *ga;
} la_ga_fjobs_t;

/* The pool's threads as libuv will start them (UV_THREADPOOL_SIZE). */
static int la__pool_threads(void) {
  const char *v = getenv("UV_THREADPOOL_SIZE");
  long n = v && *v ? strtol(v, NULL, 10) : 4;
  return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

/* ga's jobs, created on first use; NULL when out of memory. */
static la_ga_fjobs_t *la__pool(la_ga_t *ga) {
  if (ga->fjobs) return ga->fjobs;
  la_ga_fjobs_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->ga = ga;
  p->wait_tail = &p->wait;
  snprintf(p->path, sizeof p->path, "%s",
           ga->set.db_url[0] ? ga->set.db_url : ga->set.db);
  int threads = la__pool_threads();
  p->slots = (int)ga->set.feed_query_jobs;
  if (p->slots > LA__MAX_SLOTS) p->slots = LA__MAX_SLOTS;
  if (p->slots >= threads) {
    p->slots = threads > 1 ? threads - 1 : 1;
    la_log_warnx(
        "feed.query_jobs = %lld: %d at once, one less than the thread "
        "pool's %d threads (UV_THREADPOOL_SIZE), so that ingest always "
        "finds a thread",
        (long long)ga->set.feed_query_jobs, p->slots, threads);
  }
  ga->fjobs = p;
  return p;
}

/* Closes the idle read connections; frees p once no job runs. */
static void la__maybe_free(la_ga_fjobs_t *p) {
  for (int i = 0; i < p->slots; i++)
    if (!p->busy[i] && p->rd[i]) {
      la_store_close(p->rd[i]);
      p->rd[i] = NULL;
    }
  if (p->running) return;
  p->ga->fjobs = NULL;
  free(p);
}

/* The pool's part: the slot's read connection (opened on first use),
 * then the caller's work. */
static void la__work(uv_work_t *req) {
  la_ga_fjob_t *j = req->data;
  la_ga_fjobs_t *p = j->pool;
  la_store_t **rd = &p->rd[j->slot]; /* this job's alone while it runs */
  j->why[0] = 0;
  if (!*rd && la_store_open_read(p->path, rd, j->why, sizeof j->why) != 0)
    *rd = NULL;
  j->work(j, *rd, j->why);
}

static void la__start(la_ga_fjobs_t *p, la_ga_fjob_t *j);

/* The loop's part: frees the slot, starts the next job waiting, then
 * hands j back to its caller. */
static void la__after(uv_work_t *req, int status) {
  la_ga_fjob_t *j = req->data;
  la_ga_fjobs_t *p = j->pool;
  assert(p->busy[j->slot] && p->running > 0); /* its slot, taken at start */
  if (j->why[0] && !p->rd[j->slot])
    la_log_warnx("feed: cannot open a read connection to the store: %s",
                 j->why);
  p->busy[j->slot] = 0;
  p->running--;
  if (p->wait && !p->stopping) {
    la_ga_fjob_t *n = p->wait;
    p->wait = n->next;
    if (!p->wait) p->wait_tail = &p->wait;
    la__start(p, n);
  }
  if (p->stopping) la__maybe_free(p);
  j->done(j, status == 0);
}

/* Starts j in a free slot (there is one). */
static void la__start(la_ga_fjobs_t *p, la_ga_fjob_t *j) {
  /* at most slots jobs at once: each one's read connection is its own */
  assert(p->running < p->slots);
  int i = 0;
  while (p->busy[i]) i++;
  assert(i < p->slots);
  p->busy[i] = 1;
  p->running++;
  j->slot = i;
  j->pool = p;
  j->next = NULL;
  j->req.data = j;
  /* fails only without a work callback */
  (void)uv_queue_work(p->ga->loop, &j->req, la__work, la__after);
}

int la_ga_fjob_submit(la_ga_t *ga, la_ga_fjob_t *j) {
  j->why[0] = 0;
  if (!ga->set.db_url[0] && !strcmp(ga->set.db, ":memory:")) {
    /* a private database: no reader beside the loop's own connection */
    j->work(j, la_ga_store(ga), j->why);
    j->done(j, 1);
    return 1;
  }
  la_ga_fjobs_t *p = ga->draining ? NULL : la__pool(ga);
  if (!p || p->stopping) {
    j->done(j, 0);
    return 1;
  }
  j->pool = p;
  if (p->running < p->slots && !p->wait) {
    la__start(p, j);
    return 0;
  }
  j->next = NULL;
  *p->wait_tail = j;
  p->wait_tail = &j->next;
  return 0;
}

void la_ga_fjobs_counts(const la_ga_t *ga, int *running, int *waiting) {
  const la_ga_fjobs_t *p = ga->fjobs;
  *running = p ? p->running : 0;
  *waiting = 0;
  for (const la_ga_fjob_t *j = p ? p->wait : NULL; j; j = j->next) (*waiting)++;
}

void la_ga_fjobs_stop(la_ga_t *ga) {
  la_ga_fjobs_t *p = ga->fjobs;
  if (!p || p->stopping) return;
  p->stopping = 1;
  while (p->wait) {
    la_ga_fjob_t *j = p->wait;
    p->wait = j->next;
    j->done(j, 0);
  }
  p->wait_tail = &p->wait;
  la__maybe_free(p);
}
