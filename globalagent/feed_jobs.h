/* SPDX-License-Identifier: BSD-3-Clause */
/* feed_jobs.h: the feed's work on the libuv thread pool (feed_jobs.c):
 * reading stored Trace-Sets from the store and encoding them, away from
 * the loop thread, at most feed.query_jobs at once, each job with a read
 * connection of its own (la_store_open_read).
 *
 * It knows jobs, slots and read connections; what a job does and what its
 * result means are the caller's (feed.c).
 */
#ifndef LA_GLOBALAGENT_FEED_JOBS_H
#define LA_GLOBALAGENT_FEED_JOBS_H

#include <uv.h>

#include "ga.h"

typedef struct la_ga_fjob la_ga_fjob_t;

struct la_ga_fjob {
  /* Set by the caller before la_ga_fjob_submit. */
  /* The work, on a pool thread (or on the loop: see la_ga_fjob_submit);
   * st: the job's read connection to the store, used by this job alone
   * while it runs; NULL when it could not be opened (why says why). It
   * must touch nothing the loop thread uses. */
  void (*work)(la_ga_fjob_t *j, la_store_t *st, const char *why);
  /* On the loop thread, once: ran = 1 after work, 0 when the job was
   * dropped without running (the daemon is stopping). The job is the
   * caller's again (to free). */
  void (*done)(la_ga_fjob_t *j, int ran);
  /* feed_jobs.c's */
  uv_work_t req;
  struct la_ga_fjobs *pool;
  struct la_ga_fjob *next;
  int slot;
  char why[300];
};

/* Runs j: on the pool when a slot is free, else after the jobs waiting
 * before it (first come, first served). Returns 0 when j is queued (done
 * comes later, from the loop), or 1 when done was already called: the
 * daemon is stopping (ran 0), or its store has no second connection (an
 * SQLite ":memory:" database: the work ran here, on the loop, with the
 * daemon's own store). Loop thread. */
int la_ga_fjob_submit(la_ga_t *ga, la_ga_fjob_t *j);

/* The stored-set jobs running now and waiting for a slot (status gauges).
 * Loop thread. */
void la_ga_fjobs_counts(const la_ga_t *ga, int *running, int *waiting);

/* The daemon stops: jobs still waiting are dropped (done, ran 0), idle
 * read connections closed, and those of running jobs as each returns,
 * the last one freeing the rest. Loop thread; idempotent. */
void la_ga_fjobs_stop(la_ga_t *ga);

#endif /* LA_GLOBALAGENT_FEED_JOBS_H */
