/* SPDX-License-Identifier: BSD-3-Clause */
/* control.c: the GlobalAgent's status report (lactl status --agent
 * HOST:FEEDPORT): connections, authentication failures, messages stored,
 * duplicates, commits, Trace-Sets open/complete/partial/evicted, missing
 * (application, rank, cycle) records by reason (from the store),
 * subscribers and what was dropped for them, store path and size, the
 * applications it knows and the LocalAgents connected (typed too, see
 * la_status.h). Reports only; it changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "feed_jobs.h"
#include "ga.h"
#include "store_db.h"
#include "held.h"
#include "la_sockio.h"
#include "la_status.h"

#define U(x) ((unsigned long long)(x))
#define LA__REASON_ROWS 8 /* most frequent missing reasons reported */

/* "missing_ranks" (every record in the store) and, most frequent first,
 * "missing_reason.K" = "COUNT REASON" for the top LA__REASON_ROWS (typed:
 * the reply's missing rows). */
static void la__missing_rows(la_ga_t *ga, La__StatusReply *r) {
  la_store_reason_count_t top[LA__REASON_ROWS];
  size_t n = 0;
  uint64_t total = 0;
  if (la_store_missing_counts(la_ga_store(ga), top, LA__REASON_ROWS, &n, &total) !=
      0) {
    la_status_row(r, "missing_ranks", "? (%s)", la_store_errmsg(la_ga_store(ga)));
    return;
  }
  la_status_gauge(r, "missing_ranks",
                  "(application, rank, cycle) records missing in the store",
                  (int64_t)total);
  for (size_t i = 0; i < n; i++) {
    char key[48];
    snprintf(key, sizeof key, "missing_reason.%zu", i + 1);
    la_status_row(r, key, "%llu %s", U(top[i].count), top[i].reason);
    la_status_reason(r, top[i].reason, top[i].count);
  }
}

/* One row of the counter table (ga.h, LA_GA_COUNTERS). */
#define LA__COUNTER(field, key, help, txn) \
  la_status_counter(r, key, help, st->field);

La__StatusReply *la_ga_status_reply(la_ga_t *ga, int with_store) {
  La__StatusReply *r = la_status_new("la-globalagent");
  if (!r) return NULL;
  /* the counters counted inside a group commit (txn 1) as of the last
   * commit that completed: a reader who sees traces_stored = n finds n
   * rows in the store (the open batch, or the one the committer thread is
   * writing, is not there yet and may still be rolled back) */
  la_ga_stats_t view = ga->st;
  if (ga->in_txn || ga->committing) {
#define LA__DURABLE(field, key, help, txn) \
  if (txn) view.field = ga->st_begin.field;
    LA_GA_COUNTERS(LA__DURABLE)
#undef LA__DURABLE
  }
  const la_ga_stats_t *st = &view;
  la_stitch_stats_t ss;
  la_stitch_get_stats(ga->stitch, &ss);
  la_status_info(r, "version", "daemon version", LA_GA_VERSION);
  la_status_info(r, "agents_listen", "address for LocalAgents",
                 ga->agent_bound);
  la_status_info(r, "feed_listen", "address for subscribers and tools",
                 ga->feed_bound);
  char url[sizeof ga->set.db_url + 8]; /* "***" may be longer */
  if (ga->set.db_url[0]) la_db_url_public(ga->set.db_url, url, sizeof url);
  la_status_info(r, "store",
                 ga->set.db_url[0] ? "PostgreSQL store (no password)"
                                   : "SQLite store file",
                 ga->set.db_url[0] ? url : ga->set.db);
  la_status_gauge(r, "store_bytes",
                  ga->set.db_url[0] ? "size of the PostgreSQL database"
                                    : "size of the store's main file",
                  la_store_bytes(la_ga_store(ga), ga->set.db));
  char sstate[300];
  if (ga->store_down)
    snprintf(sstate, sizeof sstate, "unavailable for %.0f s: %s",
             (double)(la_now_ms() - ga->store_down_ms) / 1000.0,
             ga->store_error);
  la_status_info(r, "store_state",
                 "available, or unavailable since when and why (LocalAgents "
                 "wait and resend)",
                 ga->store_down ? sstate : "available");
  LA_GA_COUNTERS_STORE(LA__COUNTER)
  la_status_real(r, "uptime_seconds", "seconds since start", "%.1f",
                 (la_now_ms() - ga->start_ms) / 1000.0);
  la_status_info(r, "state", "running or draining",
                 ga->draining ? "draining" : "running");
  la_status_info(r, "authentication", "how LocalAgents are authenticated",
                 ga->have_key ? "shared secret" : "none (any agent accepted)");
  la_status_gauge(r, "agents", "LocalAgent connections open", ga->n_agents);
  la_status_gauge(r, "agents_linked",
                  "LocalAgents authenticated (connections open minus those "
                  "in their handshake)",
                  ga->n_linked);
  LA_GA_COUNTERS_AGENTS(LA__COUNTER)
  la_status_gauge(r, "sets_open", "Trace-Sets open", (int64_t)ss.open);
  LA_GA_COUNTERS_SETS(LA__COUNTER)
  if (with_store) la__missing_rows(ga, r);
  la_status_gauge(r, "max_open_sets", "open Trace-Sets kept at most",
                  ga->set.max_open_sets);
  la_status_gauge(r, "apps_running", "applications being stitched", ga->n_apps);
  LA_GA_COUNTERS_APPS(LA__COUNTER)
  la_status_gauge(r, "closed_cache", "closed Trace-Set keys in memory",
                  (int64_t)ss.closed_cached);
  la_status_counter(r, "closed_cache_evicted",
                    "closed keys the full cache forgot", ss.closed_evicted);
  la_status_gauge(r, "subscribers", "feed connections open", ga->n_subs);
  LA_GA_COUNTERS_FEED(LA__COUNTER)
  la_held_stats_t hs;
  la_held_get_stats(ga->held, &hs);
  la_status_gauge(r, "sets_held", "open Trace-Sets held in memory to publish",
                  (int64_t)hs.sets);
  la_status_gauge(r, "held_bytes", "bytes of traces held to publish",
                  (int64_t)hs.bytes);
  la_status_gauge(r, "held_peak_bytes", "most bytes of traces held at once",
                  (int64_t)hs.peak_bytes);
  la_status_counter(r, "sets_spilled",
                    "Trace-Sets over stitch.publish_memory, published from "
                    "the store",
                    hs.spilled);
  LA_GA_COUNTERS_QUERIES(LA__COUNTER)
  int jobs_running, jobs_waiting;
  la_ga_fjobs_counts(ga, &jobs_running, &jobs_waiting);
  la_status_gauge(r, "feed_jobs_running",
                  "stored sets being read and encoded for queries and "
                  "subscriptions (at most feed.query_jobs)",
                  jobs_running);
  la_status_gauge(r, "feed_jobs_waiting",
                  "stored-set requests waiting for one of those jobs",
                  jobs_waiting);
  la_status_gauge(r, "sets_encoding",
                  "closed Trace-Sets being encoded for subscribers on the "
                  "thread pool, or waiting for it (at most 2)",
                  (ga->pub_running != NULL) + (ga->pub_next != NULL));
  for (const la_ga_app_t *a = ga->apps; a; a = a->next) {
    La__StatusApp *sa = la_status_app(r, a->app_id);
    if (!sa) break;
    sa->has_nprocs = sa->has_ranks_ended = 1;
    sa->nprocs = a->nprocs;
    sa->ranks_ended = a->ended;
  }
  if (ga->agent_ops && ga->agent_ops->status_rows)
    ga->agent_ops->status_rows(ga, r);
  return r;
}

void la_ga_status_reply_free(La__StatusReply *r) {
  la_status_free(r);
}
