/* control.c: the GlobalAgent's status report (lactl status --agent
 * HOST:FEEDPORT): connections, authentication failures, messages stored,
 * duplicates, commits, Trace-Sets open/complete/partial/evicted, missing
 * (application, rank, cycle) records by reason (from the store),
 * subscribers and what was dropped for them, store path. Reports only; it
 * changes nothing. */
#include <stdio.h>
#include <stdlib.h>

#include "ga.h"
#include "la_sockio.h"
#include "la_status.h"

#define U(x) ((unsigned long long)(x))
#define LA__REASON_ROWS 8 /* most frequent missing reasons reported */

/* "missing_ranks" (every record in the store) and, most frequent first,
 * "missing_reason.K" = "COUNT REASON" for the top LA__REASON_ROWS. */
static void la__missing_rows(la_ga_t *ga, La__StatusReply *r) {
  la_store_reason_count_t top[LA__REASON_ROWS];
  size_t n = 0;
  uint64_t total = 0;
  if (la_store_missing_counts(ga->store, top, LA__REASON_ROWS, &n, &total) !=
      0) {
    la_status_row(r, "missing_ranks", "? (%s)", la_store_errmsg(ga->store));
    return;
  }
  la_status_row(r, "missing_ranks", "%llu", U(total));
  for (size_t i = 0; i < n; i++) {
    char key[48];
    snprintf(key, sizeof key, "missing_reason.%zu", i + 1);
    la_status_row(r, key, "%llu %s", U(top[i].count), top[i].reason);
  }
}

La__StatusReply *la_ga_status_reply(la_ga_t *ga) {
  La__StatusReply *r = la_status_new("la-globalagent");
  if (!r) return NULL;
  const la_ga_stats_t *st = &ga->st;
  la_stitch_stats_t ss;
  la_stitch_get_stats(ga->stitch, &ss);
  la_status_row(r, "version", "%s", LA_GA_VERSION);
  la_status_row(r, "agents_listen", "%s", ga->agent_bound);
  la_status_row(r, "feed_listen", "%s", ga->feed_bound);
  la_status_row(r, "store", "%s", ga->set.db);
  la_status_row(r, "uptime_s", "%.1f", (la_now_ms() - ga->start_ms) / 1000.0);
  la_status_row(r, "state", "%s", ga->draining ? "draining" : "running");
  la_status_row(r, "authentication", "%s",
                ga->have_key ? "shared secret" : "none (any agent accepted)");
  la_status_row(r, "agents", "%d", ga->n_agents);
  la_status_row(r, "agents_accepted", "%llu", U(st->agents_accepted));
  la_status_row(r, "agents_refused", "%llu", U(st->agents_refused));
  la_status_row(r, "auth_failures", "%llu", U(st->auth_failures));
  la_status_row(r, "bad_frames", "%llu", U(st->bad_frames));
  la_status_row(r, "rank_starts", "%llu", U(st->rank_starts));
  la_status_row(r, "rank_ends", "%llu", U(st->rank_ends));
  la_status_row(r, "traces_stored", "%llu", U(st->traces));
  la_status_row(r, "traces_duplicate", "%llu", U(st->duplicates));
  la_status_row(r, "traces_late", "%llu", U(st->late));
  la_status_row(r, "traces_orphan", "%llu", U(st->orphans));
  la_status_row(r, "conflicts", "%llu", U(st->conflicts));
  la_status_row(r, "traces_invalid", "%llu", U(st->invalid));
  la_status_row(r, "commits", "%llu", U(st->commits));
  la_status_row(r, "commit_failures", "%llu", U(st->commit_failures));
  la_status_row(r, "sets_open", "%llu", U(ss.open));
  la_status_row(r, "sets_complete", "%llu", U(st->sets_complete));
  la_status_row(r, "sets_partial", "%llu", U(st->sets_partial));
  la_status_row(r, "sets_evicted", "%llu", U(st->sets_evicted));
  la_status_row(r, "missing_reported", "%llu", U(st->missing_reported));
  la__missing_rows(ga, r);
  la_status_row(r, "max_open_sets", "%lld", (long long)ga->set.max_open_sets);
  la_status_row(r, "closed_cache", "%llu", U(ss.closed_cached));
  la_status_row(r, "closed_cache_evicted", "%llu", U(ss.closed_evicted));
  la_status_row(r, "subscribers", "%d", ga->n_subs);
  la_status_row(r, "subscribers_refused", "%llu", U(st->subs_refused));
  la_status_row(r, "sets_published", "%llu", U(st->sets_published));
  la_status_row(r, "sets_dropped_for_slow_subscribers", "%llu",
                U(st->sets_dropped));
  la_status_row(r, "queries", "%llu", U(st->queries));
  return r;
}

void la_ga_status_reply_free(La__StatusReply *r) { la_status_free(r); }
