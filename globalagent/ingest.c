/* SPDX-License-Identifier: BSD-3-Clause */
/* ingest.c: what the GlobalAgent does with LocalAgents' messages.
 *
 * Every (application, rank, cycle) ends either stored or recorded missing
 * with a reason: a LocalAgent's TraceMissing is stored (idempotent; a real
 * trace for the key later wins) and counts the rank as present for
 * stitching, so the set closes without waiting; a set closed partial records
 * its other missing ranks with the GlobalAgent's reason (later cycles of the
 * rank arrived, timeout, the rank ended before this cycle, the application
 * ended, the open-set limit, or one job's ranks under two ids). A trace
 * stored already is a resend, or, when its application ended, a second
 * run under the same id: dropped either way, the latter said by name.
 *
 * Group commit: the messages of one loop iteration (at most store.batch_max)
 * go into one transaction, committed in a uv_check callback after the
 * iteration's I/O, on the committer thread (committer.h: the loop stores
 * nothing until its result; la_ga_commit_done then goes on here); only
 * after the commit succeeds are the LocalAgents
 * acknowledged (so nothing acknowledged can be lost) and the Trace-Sets the
 * batch closed published to subscribers (so a subscriber never sees a set the
 * store does not have); a closed set that cannot be read back to be
 * published is announced to them instead (la_ga_feed_unpublished). Traces
 * are deduplicated by the store (app, rank, cycle), so resends after a
 * reconnect change nothing. A failed commit rolls
 * back, closes every LocalAgent connection (they resend what was not acked)
 * rebuilds the stitcher from the store, forgets the cached per-application
 * rank counts (reloaded from the store) and puts the message counters back
 * to their values at the transaction's start: in-memory state follows what
 * was committed, so the resends count once. At start the stitcher's open
 * sets are rebuilt from the store too. A timer closes sets that waited longer
 * than stitch.timeout as partial, and ends the ranks of LocalAgents lost
 * (link closed, not back within stitch.timeout: lost.h).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ga.h"
#include "la_errors.h"
#include "la_log.h"
#include "la_time.h"
#include "held.h"
#include "lost.h"
#include "committer.h"
#include "owners.h"
#include "reps.h"
#include "reclaim.h"
#include "sigs.h"
#include "validate.h"

typedef struct la_ga_closed {
  struct la_ga_closed *next;
  char app_id[LA_MAX_ID_LEN + 1];
  uint64_t tag;
  int has_held; /* held: the set's traces, not read back to publish */
  la_held_set_t held;
} la_ga_closed_t;

/* la_ga_store_down with the store's error why. */
static void la__store_down(la_ga_t *ga, const char *what, const char *why) {
  snprintf(ga->store_error, sizeof ga->store_error, "%s: %s", what, why);
  if (ga->store_down) return;
  ga->store_down = 1;
  ga->store_down_ms = la_now_ms();
  ga->st.store_outages++;
  la_log_error("store unavailable (%s): LocalAgents are told to wait and "
               "resend; nothing is acknowledged until it is back",
               ga->store_error);
}

void la_ga_store_down(la_ga_t *ga, const char *what) {
  la__store_down(ga, what, la_store_errmsg(ga->store));
}

void la_ga_store_up(la_ga_t *ga) {
  if (!ga->store_down) return;
  la_log_info("store available again after %.1f s",
              (double)(la_now_ms() - ga->store_down_ms) / 1000.0);
  ga->store_down = 0;
}

static int la__txn(la_ga_t *ga) {
  if (ga->in_txn) return 0;
  if (la_store_begin(ga->store) != 0) {
    ga->st.commit_failures++;
    la_ga_store_down(ga, "cannot begin a transaction");
    return -1;
  }
  la_ga_store_up(ga);
  ga->in_txn = 1;
  ga->st_begin = ga->st;
  return 0;
}

/* After a rollback: the counters counted inside the transaction (txn 1 in
 * ga.h's LA_GA_COUNTERS) go back to what they were
 * when it began (the others are not transactional). */
static void la__restore_counts(la_ga_t *ga) {
  la_ga_stats_t *c = &ga->st;
  const la_ga_stats_t *b = &ga->st_begin;
#define LA__RESTORE(field, key, help, txn) \
  if (txn) c->field = b->field;
  LA_GA_COUNTERS(LA__RESTORE)
#undef LA__RESTORE
}

/* The stitched application app_id, or NULL (nothing is loaded). */
static la_ga_app_t *la__app_cached(la_ga_t *ga, const char *app_id) {
  for (la_ga_app_t *a = ga->apps; a; a = a->next)
    if (!strcmp(a->app_id, app_id)) return a;
  return NULL;
}

/* The application's cached nprocs and ended ranks (from the store on a
 * miss, e.g. after a restart). NULL when the store knows no nprocs. */
static la_ga_app_t *la__app(la_ga_t *ga, const char *app_id) {
  la_ga_app_t *found = la__app_cached(ga, app_id);
  if (found) return found;
  uint32_t nprocs = 0, ended = 0;
  if (la_store_app_ranks_ended(ga->store, app_id, &nprocs, &ended) != 0 ||
      nprocs == 0)
    return NULL;
  static la_ratelimit_t rl; /* stitch.max_apps refusals' log lines */
  if (la_conn_share_full(ga->n_apps, ga->set.max_apps, &ga->st.apps_refused,
                         &rl,
                         "application %s not stitched: %d applications "
                         "running (stitch.max_apps = %lld); its messages are "
                         "stored, as of unknown ranks",
                         app_id, ga->n_apps, (long long)ga->set.max_apps))
    return NULL;
  la_ga_app_t *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  ga->n_apps++;
  snprintf(a->app_id, sizeof a->app_id, "%s", app_id);
  a->nprocs = nprocs;
  a->ended = ended;
  a->next = ga->apps;
  ga->apps = a;
  return a;
}

static void la__app_forget(la_ga_t *ga, const char *app_id) {
  for (la_ga_app_t **p = &ga->apps; *p; p = &(*p)->next)
    if (!strcmp((*p)->app_id, app_id)) {
      la_ga_app_t *a = *p;
      *p = a->next;
      ga->n_apps--;
      free(a->rank_elements);
      free(a->rank_last);
      free(a);
      return;
    }
}

static void la__queue_publish(la_ga_t *ga, const char *app_id, uint64_t tag) {
  la_ga_closed_t *c = calloc(1, sizeof *c);
  la_held_set_t held;
  int has = la_held_take(ga->held, app_id, tag, &held);
  /* a trace stored before its RankStart (an orphan) is in the store's set
   * but was never held: then the store is the one complete copy */
  if (has && (!c || ga->st.orphans)) {
    la_held_release(ga->held, &held);
    has = 0;
  }
  if (!c) return; /* stored anyway; subscribers can ask for it */
  snprintf(c->app_id, sizeof c->app_id, "%s", app_id);
  c->tag = tag;
  c->has_held = has;
  if (has) c->held = held;
  *ga->closed_tail = c;
  ga->closed_tail = &c->next;
}

#define LA__WHY_EVICTED                \
  "evicted: too many open Trace-Sets " \
  "(stitch.max_open_sets, stitch.max_open_memory)"

static const char LA__WHY_TIMEOUT[] = "timeout: no trace within stitch.timeout";
static const char LA__WHY_LATER[] =
    "missing: no trace for this cycle while later cycles of the rank arrived";

/* Whether a later cycle of rank than tag arrived (a trace stored while its
 * application was stitched here; the link is ordered, so this cycle's
 * trace will not come). a may be NULL. */
static int la__later_arrived(const la_ga_app_t *a, uint32_t rank,
                             uint64_t tag) {
  return a && a->rank_last && rank < a->nprocs && a->rank_last[rank] > tag + 1;
}

/* Whether rank of a sent a trace while a was stitched here. */
static int la__heard(const la_ga_app_t *a, uint32_t rank) {
  return a->rank_last && rank < a->nprocs && a->rank_last[rank] != 0;
}

/* Appends ranks lo..hi to the list in buf ("0-3,7"), "..." when full. */
static void la__range_add(char *buf, size_t len, uint32_t lo, uint32_t hi) {
  size_t used = strlen(buf);
  if (used + 24 >= len) {
    if (used + 4 < len && strcmp(buf + (used > 3 ? used - 3 : 0), "..."))
      snprintf(buf + used, len - used, "...");
    return;
  }
  const char *sep = used ? "," : "";
  if (lo == hi)
    snprintf(buf + used, len - used, "%s%u", sep, lo);
  else
    snprintf(buf + used, len - used, "%s%u-%u", sep, lo, hi);
}

/* Ranks 0..nprocs-1 in or out of the increasing list v (n) as ranges. */
static void la__ranges(const uint32_t *v, size_t n, uint32_t nprocs, int in,
                       char *buf, size_t len) {
  buf[0] = '\0';
  size_t k = 0;
  int run = 0;
  uint32_t lo = 0;
  for (uint32_t r = 0; r < nprocs; r++) {
    while (k < n && v[k] < r) k++;
    int member = (k < n && v[k] == r) == in;
    if (member && !run) lo = r, run = 1;
    if (!member && run) la__range_add(buf, len, lo, r - 1), run = 0;
  }
  if (run) la__range_add(buf, len, lo, nprocs - 1);
}

/* A set of a timed out whose missing ranks (missing, n, increasing) are
 * exactly the ranks another stitched application of the same name and
 * nprocs heard from, none of which a heard from: one job registered
 * under two ids (LA_APP_ID set apart on some nodes). Writes the reason
 * naming both ids and their hosts into why and returns 1; else 0. */
static int la__split_job(la_ga_t *ga, const la_ga_app_t *a,
                         const uint32_t *missing, size_t n, char *why,
                         size_t len) {
  if (!a || !a->app_name[0] || !a->rank_last || n == 0 || n >= a->nprocs)
    return 0;
  for (const la_ga_app_t *b = ga->apps; b; b = b->next) {
    if (b == a || b->nprocs != a->nprocs || !b->rank_last ||
        strcmp(b->app_name, a->app_name))
      continue;
    size_t k = 0;
    int fits = 1;
    for (uint32_t r = 0; r < a->nprocs && fits; r++) {
      int is_missing = k < n && missing[k] == r;
      if (is_missing) k++;
      fits = is_missing ? la__heard(b, r) && !la__heard(a, r)
                        : !la__heard(b, r);
    }
    if (!fits) continue;
    char mine[64], theirs[64], h1[LA_MAX_ID_LEN + 1] = "?",
                               h2[LA_MAX_ID_LEN + 1] = "?";
    la__ranges(missing, n, a->nprocs, 0, mine, sizeof mine);
    la__ranges(missing, n, a->nprocs, 1, theirs, sizeof theirs);
    uint32_t first_mine = 0;
    while (first_mine < a->nprocs && !la__heard(a, first_mine)) first_mine++;
    la_store_rank_host(ga->store, a->app_id, first_mine, h1, sizeof h1);
    la_store_rank_host(ga->store, b->app_id, missing[0], h2, sizeof h2);
    if (snprintf(why, len, "ranks %s arrived under app id %s from host %s "
                 "and ranks %s under app id %s from host %s: one job under "
                 "two ids? (LA_APP_ID)", mine, a->app_id, h1, theirs,
                 b->app_id, h2) >= (int)len) {
      /* truncated: the store keeps LA_STORE_REASON_MAX bytes anyway */
    }
    return 1;
  }
  return 0;
}

/* The stitcher closed a set. Its missing ranks (those without a trace nor a
 * missing record) are recorded missing with the reason of this close; the
 * set's missing ranks are then all the missing records (ranks a LocalAgent
 * reported missing count as present for the stitcher, not for the set). */
static void la__on_set_closed(void *arg, const char *app_id, uint64_t tag,
                              uint32_t nprocs, int complete,
                              const uint32_t *missing, size_t n_missing,
                              uint64_t t_first_ms) {
  la_ga_t *ga = arg;
  const char *why = ga->close_reason ? ga->close_reason : LA__WHY_EVICTED;
  la_ga_app_t *app = la__app_cached(ga, app_id);
  char split[1024]; /* the store keeps LA_STORE_REASON_MAX bytes */
  if (why == LA__WHY_TIMEOUT &&
      la__split_job(ga, app, missing, n_missing, split, sizeof split)) {
    static la_ratelimit_t rl; /* this file's: split jobs' log lines */
    uint64_t missed = 0;
    why = split;
    if (la_ratelimit_ok(&rl, 1000, &missed))
      la_log_warnx("Trace-Set %s cycle %llu: %s (%llu more such since the "
                   "last line)", app_id, (unsigned long long)tag, split,
                   (unsigned long long)missed);
  }
  uint32_t *all = NULL;
  size_t n_all = 0;
  if (la__txn(ga) != 0) {
    ga->txn_failed = 1;
    return;
  }
  /* a node's ranks are usually consecutive: whether its LocalAgent is
   * connected (a scan of the connections) is asked once per run of ranks
   * of one host, not once per rank */
  char last[LA_MAX_ID_LEN + 1] = "";
  int last_connected = 1;
  for (size_t i = 0; i < n_missing; i++) {
    const char *w = why;
    char host[LA_MAX_ID_LEN + 1], gone[LA_MAX_ID_LEN + 64];
    if (why != split && la__later_arrived(app, missing[i], tag)) {
      w = LA__WHY_LATER;
    } else if (why == LA__WHY_TIMEOUT &&
        la_store_rank_host(ga->store, app_id, missing[i], host, sizeof host) ==
            0) {
      if (strcmp(host, last)) {
        snprintf(last, sizeof last, "%s", host);
        last_connected = ga->agent_ops->connected(ga, host);
      }
      if (!last_connected) {
        if (la_store_shared(ga->store)) /* linked to another shard? */
          snprintf(gone, sizeof gone, "timeout: LocalAgent %s not connected",
                   host);
        else
          la_ga_lost_reason(host, gone, sizeof gone);
        w = gone;
      }
    }
    if (la_store_missing(ga->store, app_id, tag, missing[i], w, 0, 0, NULL)) {
      ga->txn_failed = 1;
      return;
    }
  }
  if (la_store_missing_ranks(ga->store, app_id, tag, nprocs, &all, &n_all) !=
          0 ||
      la_store_set_closed(ga->store, app_id, tag, n_all == 0, all, n_all,
                          la_realtime_ns()) != 0) {
    free(all);
    ga->txn_failed = 1;
    return;
  }
  free(all);
  la_ga_representatives(ga, app_id, tag); /* takes its signatures */
  if (n_all == 0) {
    ga->st.sets_complete++;
  } else {
    ga->st.sets_partial++;
    if (!complete && !ga->close_reason) ga->st.sets_evicted++;
    if (n_missing)
      la_log_info(
          "Trace-Set %s cycle %llu closed partial: %zu of %u ranks "
          "missing (%zu: %s)",
          app_id, (unsigned long long)tag, n_all, nprocs, n_missing, why);
    else
      la_log_info(
          "Trace-Set %s cycle %llu closed partial: %zu of %u ranks "
          "reported missing by LocalAgents",
          app_id, (unsigned long long)tag, n_all, nprocs);
  }
  la__queue_publish(ga, app_id, tag);
}

/* A trace (or a LocalAgent's missing record) for a set already closed — it
 * came after the timeout, or much later from a LocalAgent's spool: it is
 * stored, and the close record follows what the store now holds, keeping
 * its original close time. When the late trace completes the set, the
 * record becomes complete and the set is published again; otherwise only
 * the missing-rank list shrinks (nothing is republished). */
static void la__reclose(la_ga_t *ga, const char *app_id, uint64_t tag) {
  La__TraceSet *set = NULL;
  int rc = la_store_load_set(ga->store, app_id, tag, &set);
  if (rc != 0) {
    la_log_error("store: cannot reload closed Trace-Set %s cycle %llu: %s",
                 app_id, (unsigned long long)tag, la_store_errmsg(ga->store));
    ga->txn_failed = 1;
    return;
  }
  uint64_t t_closed =
      set->has_t_complete_ns ? set->t_complete_ns : la_realtime_ns();
  if (la_store_set_closed(ga->store, app_id, tag, set->complete,
                          set->missing_ranks, set->n_missing_ranks,
                          t_closed) != 0) {
    ga->txn_failed = 1;
  } else if (set->complete) {
    la_log_info(
        "Trace-Set %s cycle %llu complete after a late trace; "
        "published again",
        app_id, (unsigned long long)tag);
    la__queue_publish(ga, app_id, tag);
  }
  la_store_free_set(set);
}

/* The stitcher asks whether a key it does not hold open was closed: the
 * store knows every close (this batch's too). */
static int la__lookup_closed(void *arg, const char *app_id, uint64_t tag) {
  la_ga_t *ga = arg;
  int closed = 0;
  int rc = la_store_set_is_closed(ga->store, app_id, tag, &closed);
  if (rc != 0) {
    la_log_error("store: %s", la_store_errmsg(ga->store));
    return rc;
  }
  if (!closed && la_store_shared(ga->store)) { /* see la__seed */
    snprintf(ga->seed_app, sizeof ga->seed_app, "%s", app_id);
    ga->seed_tag = tag;
    ga->seed = 1;
  }
  return closed;
}

/* Shards: a set the stitcher just opened may have ranks another shard
 * stored (it had the application before it failed, or a LocalAgent sent
 * there): they are added from the shared store, so the set completes here.
 * s is la_stitch_add's result. */
static void la__seed(la_ga_t *ga, int s, const char *app_id, uint32_t nprocs,
                     uint64_t tag) {
  if (!ga->seed) return;
  ga->seed = 0;
  if (s != LA_STITCH_NEW || tag != ga->seed_tag || strcmp(app_id, ga->seed_app))
    return;
  uint32_t *ranks = NULL;
  size_t n = 0;
  if (la_store_set_ranks(ga->store, app_id, tag, nprocs, &ranks, &n) != 0) {
    la_log_error("store: %s", la_store_errmsg(ga->store));
    ga->txn_failed = 1;
    return;
  }
  if (n > 1)
    la_stitch_restore(ga->stitch, app_id, nprocs, tag, ranks, n,
                      uv_now(ga->loop));
  free(ranks);
}

/* What la_stitch_add's result means for the batch: a late arrival updates
 * the closed set; a store error fails the batch (the LocalAgents resend);
 * bad input is counted as a conflict. */
static void la__stitched(la_ga_t *ga, int s, const char *app_id, uint32_t rank,
                         uint64_t tag) {
  if (s == LA_STITCH_LATE) {
    ga->st.late++;
    la__reclose(ga, app_id, tag);
  } else if (s == LA_EIO) {
    ga->txn_failed = 1;
  } else if (s < 0) {
    ga->st.conflicts++;
    la_log_warnx("%s rank %u cycle %llu: not stitched (%s)", app_id, rank,
                 (unsigned long long)tag, la_strerror(s));
  }
}

/* Before stitching an arrival of (app, tag): when it opens the set, the
 * set's traces start being held for publishing (held.h). Returns 1 when
 * it did (the caller drops them if the stitcher refuses the arrival). */
static int la__hold(la_ga_t *ga, const char *app_id, uint64_t tag,
                    uint32_t nprocs) {
  /* shards sharing a store: other shards' ranks are in the store only, so
   * such sets are published from it */
  if (ga->st.orphans || la_store_shared(ga->store) ||
      la_stitch_is_open(ga->stitch, app_id, tag))
    return 0;
  la_held_open(ga->held, app_id, tag, nprocs);
  return 1;
}

/* Stitches an arrival of rank (its trace t, or NULL for a missing record),
 * holding the trace for publishing: its encodings move into the held copy
 * (t is stored already and not read for them after); keeping its signature
 * sig (may be NULL) until the set closes. */
static void la__stitch(la_ga_t *ga, la_ga_app_t *a, const char *app_id,
                       uint32_t rank, uint64_t tag, La__CompactTrace *t,
                       const la_store_rep_sig_t *sig) {
  if (t && rank < a->nprocs && tag < UINT64_MAX) {
    if (!a->rank_last) a->rank_last = calloc(a->nprocs, sizeof *a->rank_last);
    if (a->rank_last && a->rank_last[rank] < tag + 1)
      a->rank_last[rank] = tag + 1;
  }
  int opening = la__hold(ga, app_id, tag, a->nprocs);
  if (t) la_held_add_decoded(ga->held, t);
  /* before stitching: the arrival may close the set */
  if (t && sig)
    la_ga_sigs_add(ga->rep_sigs, app_id, tag, a->nprocs, rank, sig);
  int s =
      la_stitch_add(ga->stitch, app_id, a->nprocs, rank, tag, uv_now(ga->loop));
  if (t && sig && s != LA_STITCH_NEW && s != LA_STITCH_DUP)
    la_ga_sigs_drop(ga->rep_sigs, app_id, tag); /* no open set */
  la__seed(ga, s, app_id, a->nprocs, tag);
  if (s == LA_STITCH_NEW && la_stitch_is_open(ga->stitch, app_id, tag))
    ga->batch_more = 1; /* its other ranks' traces are to come */
  if (opening && s != LA_STITCH_NEW && s != LA_STITCH_DUP)
    la_held_drop(ga->held, app_id, tag);
  la__stitched(ga, s, app_id, rank, tag);
}

/* A trace or missing record (what: " missing" or "") of a rank whose
 * application is not stitched (no RankStart known, or refused by
 * stitch.max_apps): stored, counted in orphans, and logged at most once a
 * second (a refused application of 10^4 ranks sends that many a cycle). */
static void la__orphan(la_ga_t *ga, const char *app_id, uint32_t rank,
                       uint64_t tag, const char *what) {
  static la_ratelimit_t rl; /* this file's: orphans' log lines */
  uint64_t missed = 0;
  ga->st.orphans++;
  if (!la_ratelimit_ok(&rl, 1000, &missed)) return;
  la_log_warnx(
      "%s rank %u cycle %llu%s: no RankStart known; stored, not "
      "stitched (%llu more such since the last line)",
      app_id, rank, (unsigned long long)tag, what, (unsigned long long)missed);
}

/* Whether the stored copy old of t's key is t itself (a resend): the same
 * transfer time and the same exact statistics. */
static int la__same_trace(const la_store_stamp_t *old,
                          const La__CompactTrace *t) {
  if (old->has_t_xfer_ns != (int)t->has_t_xfer_ns ||
      (t->has_t_xfer_ns && old->t_xfer_ns != t->t_xfer_ns))
    return 0;
  return old->count == t->stats->count &&
         (old->sum == t->stats->sum ||
          (old->sum != old->sum && t->stats->sum != t->stats->sum));
}

/* A trace whose (app, rank, cycle) is stored already. A resend changes
 * nothing (counted in duplicates). Another copy, of an application whose
 * every rank had ended, is a second run under the same id: it is dropped
 * too (the first copy stays), but counted in conflicts and said by name,
 * at most once a second. Store errors only make it count as a resend. */
static void la__stored_already(la_ga_t *ga, const char *host,
                               const La__CompactTrace *t) {
  static la_ratelimit_t rl; /* this file's: second runs' log lines */
  la_store_stamp_t old;
  uint32_t nprocs = 0, ended = 0;
  if (la_store_trace_stamp(ga->store, t->app_id, t->cycle_tag, t->rank,
                           &old) != 0 ||
      la__same_trace(&old, t) ||
      la_store_app_ranks_ended(ga->store, t->app_id, &nprocs, &ended) != 0 ||
      nprocs == 0 || ended < nprocs) {
    ga->st.duplicates++;
    return;
  }
  ga->st.conflicts++;
  uint64_t missed = 0;
  if (!la_ratelimit_ok(&rl, 1000, &missed)) return;
  la_log_warnx(
      "application %s already ended; traces of a second run under the same "
      "id are dropped: give each run its own id (LA_APP_ID) or let libla "
      "derive one (rank %u cycle %llu from %s; %llu more such since the "
      "last line)",
      t->app_id, t->rank, (unsigned long long)t->cycle_tag, host,
      (unsigned long long)missed);
}

/* Whether t's key is surely not stored (nor deferred in the batch), so
 * that its rows can be written at the commit, off the loop thread
 * (la_store_trace_defer): its set is open in the stitcher, of its
 * application's nprocs, and its rank has not arrived there. Every stored
 * trace or missing record of an open set's key marks its rank there (the
 * set rebuilt from the store after a restart or a rollback), except:
 * orphans (traces stored before their RankStart: then the store decides,
 * from the first on) and shards sharing a store (another shard may have
 * stored it). The first trace of a set, a late one, a resend: the store
 * decides, as before. */
static int la__known_new(la_ga_t *ga, const La__CompactTrace *t) {
  if (ga->st.orphans || la_store_shared(ga->store) || !t->app_id) return 0;
  const la_ga_app_t *a = la__app_cached(ga, t->app_id);
  return a && la_stitch_would_add(ga->stitch, t->app_id, a->nprocs, t->rank,
                                  t->cycle_tag);
}

/* Records (app, rank, cycle) as missing for reason (from a TraceMissing, or
 * a trace validate.c refused) and stitches the rank as arrived. Returns 0,
 * or a store error for the batch. */
static int la__ingest_missing(la_ga_t *ga, const char *host, const char *app_id,
                              uint32_t rank, uint64_t tag, const char *reason,
                              uint64_t seq) {
  int was_new = 0;
  int rc =
      la_store_missing(ga->store, app_id, tag, rank, reason, 1, seq, &was_new);
  if (rc == LA_EPROTO) {
    ga->st.conflicts++;
    la_log_warnx("%s rank %u cycle %llu missing, from %s: refused: %s", app_id,
                 rank, (unsigned long long)tag, host,
                 la_store_errmsg(ga->store));
    return 0;
  }
  if (rc != 0) return rc;
  if (!was_new) {
    ga->st.duplicates++; /* a resend, or a trace of that key is stored */
    return 0;
  }
  ga->st.missing_reported++;
  la_log_debug("%s rank %u cycle %llu missing (%s): %s", app_id, rank,
               (unsigned long long)tag, host, reason);
  la_ga_app_t *a = la__app(ga, app_id);
  if (!a) {
    la__orphan(ga, app_id, rank, tag, " missing");
    return 0;
  }
  la__stitch(ga, a, app_id, rank, tag, NULL, NULL);
  return 0;
}

/* Whether m (not a RankStart) is a message of a rank refused for its
 * application id's owner (owners.h): 1, then it is dropped; 0; LA_EIO. */
static int la__foreign(la_ga_t *ga, const char *host, uint16_t type,
                       const ProtobufCMessage *m) {
  switch (type) {
    case LA__MSG_TYPE__MSG_COMPACT_TRACE: {
      const La__CompactTrace *t = (const void *)m;
      return la_ga_owners_drop(ga, host, t->app_id, t->rank, 0);
    }
    case LA__MSG_TYPE__MSG_TRACE_MISSING: {
      const La__TraceMissing *t = (const void *)m;
      return la_ga_owners_drop(ga, host, t->app_id, t->rank, 0);
    }
    case LA__MSG_TYPE__MSG_RANK_END: {
      const La__RankEnd *e = (const void *)m;
      return la_ga_owners_drop(ga, host, e->app_id, e->rank, 1);
    }
    case LA__MSG_TYPE__MSG_ELEMENT_IDS: {
      const La__ElementIds *e = (const void *)m;
      return e->has_rank ? la_ga_owners_drop(ga, host, e->app_id, e->rank, 0)
                         : 0;
    }
    default:
      return 0;
  }
}

/* Stores rank end e (from host's LocalAgent, or the GlobalAgent's own for
 * a lost one); the application's last rank ending closes its open sets
 * with app_end_why. Returns 0 (a conflicting end is counted and logged) or
 * the store's error. */
static int la__rank_end(la_ga_t *ga, const char *host, const La__RankEnd *e,
                        const char *app_end_why) {
  int was_new = 0;
  /* cache the ended count before this end is written, so that it is
   * counted once also when the cache was empty (a restart, a rollback) */
  la__app(ga, e->app_id);
  int rc = la_store_rank_end(ga->store, e, &was_new);
  if (rc == LA_EPROTO) {
    ga->st.conflicts++;
    la_log_warnx("%s rank %u end from %s refused: %s", e->app_id, e->rank,
                 host, la_store_errmsg(ga->store));
    return 0;
  }
  if (rc != 0 || !was_new) return rc; /* a resent end changes nothing */
  ga->st.rank_ends++;
  la_ga_app_t *a = la__app(ga, e->app_id);
  if (a && ++a->ended >= a->nprocs) {
    ga->close_reason = app_end_why;
    size_t n = la_stitch_app_end(ga->stitch, e->app_id);
    ga->close_reason = NULL;
    la_log_info("application %s ended (%u ranks%s%s)%s", e->app_id, a->nprocs,
                e->seq == 0 ? "; " : "", e->seq == 0 ? app_end_why : "",
                n ? "; its open Trace-Sets closed as partial" : "");
    la__app_forget(ga, e->app_id);
  }
  return 0;
}

int la_ga_ingest(la_ga_t *ga, const char *host, uint16_t type,
                 ProtobufCMessage *m, const char *enc_why,
                 const la_store_rep_sig_t *sig) {
  assert(!ga->committing); /* agents.c parks messages meanwhile */
  if (la__txn(ga) != 0) return LA_EIO; /* the store is unavailable */
  int rc = 0, foreign = 0;
  char why[300];
  if (type == LA__MSG_TYPE__MSG_RANK_START &&
      (rc = la_ga_owners_rank_start(ga, host, (const La__RankStart *)m)) !=
          0) {
    /* refused (1: owners.c told and counted it), or the store failed */
    if (rc == 1) rc = 0;
  } else if (type != LA__MSG_TYPE__MSG_RANK_START &&
             (foreign = la__foreign(ga, host, type, m)) != 0) {
    /* a refused rank's message: acked with the batch, nothing stored (or
     * the store failed asking) */
    if (foreign < 0) rc = foreign;
  } else if (type == LA__MSG_TYPE__MSG_RANK_START) {
    const La__RankStart *r = (const La__RankStart *)m;
    int reopened = 0;
    rc = la_store_rank_start(ga->store, r, &reopened);
    if (rc == 0) rc = la_ga_owners_started(ga, host, r);
    if (rc == LA_EPROTO) {
      ga->st.conflicts++;
      la_log_warnx(
          "%s rank %u from %s: %s; its traces are stored but not "
          "stitched",
          r->app_id, r->rank, host, la_store_errmsg(ga->store));
      rc = 0;
    } else if (rc == 0) {
      ga->st.rank_starts++;
      /* a rank registered again after its end: no longer counted ended
       * (an application forgotten at its end is read again from the
       * store, which counts it no more) */
      la_ga_app_t *a = la__app_cached(ga, r->app_id);
      if (reopened) {
        ga->st.ranks_reopened++;
        la_log_info("%s rank %u from %s registered again after its end; "
                    "its end is undone",
                    r->app_id, r->rank, host);
        if (a && a->ended > 0) a->ended--;
      }
      a = la__app(ga, r->app_id);
      if (a) a->nprocs = r->nprocs;
      if (a && r->app_name && !a->app_name[0])
        snprintf(a->app_name, sizeof a->app_name, "%s", r->app_name);
    }
  } else if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE &&
             la_ga_trace_refused(ga, host, (const La__CompactTrace *)m, enc_why,
                                 why, sizeof why)) {
    /* refused (validate.c logged and counted it): recorded missing with the
     * reason, acked with the batch */
    const La__CompactTrace *t = (const La__CompactTrace *)m;
    rc = la__ingest_missing(ga, host, t->app_id, t->rank, t->cycle_tag, why,
                            t->seq);
  } else if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE) {
    La__CompactTrace *t = (La__CompactTrace *)m;
    int was_new = 0;
    rc = la__known_new(ga, t) ? la_store_trace_defer(ga->store, t, &was_new)
                              : la_store_trace(ga->store, t, &was_new);
    if (rc == LA_EPROTO) { /* refused for good: resending cannot help */
      ga->st.conflicts++;
      la_log_warnx("%s rank %u cycle %llu from %s refused: %s", t->app_id,
                   t->rank, (unsigned long long)t->cycle_tag, host,
                   la_store_errmsg(ga->store));
      rc = 0;
    } else if (rc == 0 && !was_new) {
      la__stored_already(ga, host, t);
    } else if (rc == 0) {
      ga->st.traces++;
      la_ga_app_t *a = la__app(ga, t->app_id);
      if (!a) {
        la__orphan(ga, t->app_id, t->rank, t->cycle_tag, "");
      } else {
        la__stitch(ga, a, t->app_id, t->rank, t->cycle_tag, t, sig);
      }
    }
  } else if (type == LA__MSG_TYPE__MSG_TRACE_MISSING) {
    const La__TraceMissing *t = (const La__TraceMissing *)m;
    rc = la__ingest_missing(ga, host, t->app_id, t->rank, t->cycle_tag,
                            t->reason, t->seq);
  } else if (type == LA__MSG_TYPE__MSG_RANK_END) {
    rc = la__rank_end(ga, host, (const La__RankEnd *)m,
                      "application ended before this cycle");
  } else if (type == LA__MSG_TYPE__MSG_ELEMENT_IDS) {
    const La__ElementIds *e = (const La__ElementIds *)m;
    int was_new = 0;
    rc = e->n_ids > LA_ELEMENT_IDS_CHUNK
             ? LA_EPROTO
             : la_store_element_ids(ga->store, e, &was_new);
    if (rc == LA_EPROTO || rc == LA_EINVAL) { /* resending cannot help */
      ga->st.conflicts++;
      la_log_warnx("element ids %llu.. of %s rank %u from %s refused: %s",
                   (unsigned long long)e->first, e->app_id ? e->app_id : "?",
                   e->rank, host,
                   e->n_ids > LA_ELEMENT_IDS_CHUNK
                       ? "chunk too large"
                       : la_store_errmsg(ga->store));
      rc = 0;
    } else if (rc == 0 && !was_new) {
      ga->st.duplicates++;
    }
  }
  if (rc != 0) {
    la_log_error("store: %s", la_store_errmsg(ga->store));
    ga->txn_failed = 1;
  }
  ga->batch_n++;
  return 0;
}

void la_ga_ingest_end(la_ga_t *ga) {
  if (ga->batch_n >= (size_t)ga->set.batch_max) la_ga_commit(ga);
}

static int la__cmp_first(const void *a, const void *b) {
  const la_store_open_set_t *x = a, *y = b;
  return x->t_first_ns < y->t_first_ns ? -1 : x->t_first_ns > y->t_first_ns;
}

/* A stored first-seen time (CLOCK_REALTIME ns) on the loop's clock (ms):
 * now minus the set's age; a time in the future counts as age 0. */
static uint64_t la__loop_time(uint64_t t_first_ns, uint64_t real_now_ns,
                              uint64_t loop_now_ms) {
  uint64_t age_ms = t_first_ns && t_first_ns < real_now_ns
                        ? (real_now_ns - t_first_ns) / 1000000u
                        : 0;
  return age_ms < loop_now_ms ? loop_now_ms - age_ms : 0;
}

/* A new stitcher (settings, store lookup) holding the store's open sets,
 * each with the age it had (oldest restored first). */
static void la__rebuild_stitch(la_ga_t *ga) {
  la_stitch_free(ga->stitch);
  ga->stitch =
      la_stitch_new((size_t)ga->set.max_open_sets, la__on_set_closed, ga);
  if (!ga->stitch) return;
  la_stitch_set_max_memory(ga->stitch, (size_t)ga->set.max_open_memory);
  la_stitch_set_lookup(ga->stitch, la__lookup_closed, ga);
  if (ga->set.closed_cache > 0 &&
      la_stitch_set_closed_cache(ga->stitch, (size_t)ga->set.closed_cache))
    la_log_error("stitch.closed_cache %lld: out of memory; keeping %d keys",
                 (long long)ga->set.closed_cache,
                 LA_STITCH_CLOSED_CACHE_DEFAULT);
  la_store_open_set_t *v = NULL;
  size_t n = 0;
  if (la_store_open_sets(ga->store, &v, &n) != 0) {
    la_log_error("store: cannot list open Trace-Sets: %s",
                 la_store_errmsg(ga->store));
    return;
  }
  if (n > 1) qsort(v, n, sizeof *v, la__cmp_first);
  uint64_t now = uv_now(ga->loop), real = la_realtime_ns();
  for (size_t i = 0; i < n; i++)
    if (v[i].nprocs)
      la_stitch_restore(ga->stitch, v[i].app_id, v[i].nprocs, v[i].cycle_tag,
                        v[i].ranks, v[i].n_ranks,
                        la__loop_time(v[i].t_first_ns, real, now));
  if (n) la_log_info("rebuilt %zu open Trace-Sets from the store", n);
  la_store_free_open_sets(v, n);
}

static void la__drop_closed(la_ga_t *ga) {
  for (la_ga_closed_t *c = ga->closed, *n; c; c = n) {
    n = c->next;
    if (c->has_held) la_held_release(ga->held, &c->held);
    free(c);
  }
  ga->closed = NULL;
  ga->closed_tail = &ga->closed;
}

/* la_ga_feed_publish's done for a set closed by this GlobalAgent (c): the
 * set freed, its traces' budget released (only now: they lived until
 * the feed was done with them). */
static void la__free_set(void *set) {
  la_store_free_set(set);
}

static void la__published(la_ga_t *ga, La__TraceSet *set, void *arg) {
  la_ga_closed_t *c = arg;
  /* its traces' parts were allocated on the pool: freed there too */
  la_reclaim_add(ga->reclaim, la__free_set, set);
  if (c->has_held) la_held_release(ga->held, &c->held);
  free(c);
}

void la_ga_commit(la_ga_t *ga) {
  if (!ga->in_txn || ga->committing) return;
  la_ga_committer_gather_end(ga);
  int rc = ga->txn_failed ? -1 : ga->agent_ops->record_seqs(ga);
  ga->in_txn = 0;
  ga->batch_n = 0;
  ga->batch_more = 0;
  if (rc == 0 && la_ga_committer_ready(ga)) {
    la_ga_committer_submit(ga); /* la_ga_commit_done follows its result */
    return;
  }
  if (rc == 0) rc = la_store_commit(ga->store);
  la_reclaim_flush(ga->reclaim); /* kept for a hand-over (committer.h) */
  la_ga_commit_done(ga, rc, NULL);
}

void la_ga_commit_done(la_ga_t *ga, int rc, const char *why) {
  if (rc != 0) {
    if (!why) why = la_store_errmsg(ga->store);
    ga->st.commit_failures++;
    la_log_error(
        "store: commit failed (%s): closing LocalAgent links so "
        "they resend",
        why);
    la__store_down(ga, "commit failed", why);
    la_store_rollback(ga->store);
    ga->txn_failed = 0;
    la__restore_counts(ga);
    while (ga->apps) la__app_forget(ga, ga->apps->app_id);
    la_ga_owners_load(ga); /* the refusals the store kept */
    ga->agent_ops->close_all(ga, "store failure");
    la__drop_closed(ga);
    la_held_clear(ga->held);
    la_ga_sigs_clear(ga->rep_sigs);
    la__rebuild_stitch(ga);
    return;
  }
  ga->st.commits++;
  uint64_t found = la_store_deferred_found(ga->store);
  if (found != ga->deferred_found) { /* la__known_new was wrong: a bug */
    la_log_error("store: %llu trace(s) taken for new were stored already "
                 "(kept once; the traces counter counted them again)",
                 (unsigned long long)(found - ga->deferred_found));
    ga->deferred_found = found;
  }
  ga->agent_ops->ack(ga);
  while (ga->closed) {
    la_ga_closed_t *c = ga->closed;
    ga->closed = c->next;
    if (!la_ga_feed_has_taker(ga, c->app_id)) {
      /* no subscriber takes it: published to nobody, so not read back
       * (nor assembled from the copies held) */
      ga->st.sets_published++;
      la__published(ga, NULL, c);
      continue;
    }
    La__TraceSet *set = NULL;
    /* from the copies held (handed over to the set), else read back */
    int rc2 = c->has_held
                  ? la_store_load_set_with(ga->store, c->app_id, c->tag,
                                           c->held.traces, c->held.n, &set)
                  : la_store_load_set(ga->store, c->app_id, c->tag, &set);
    if (c->has_held) { /* the traces went with the set */
      c->held.traces = NULL;
      c->held.n = 0;
    }
    if (rc2 == 0) {
      set->has_t_complete_ns = 1;
      set->t_complete_ns = la_realtime_ns();
      la_ga_feed_publish(ga, set, la__published, c);
    } else {
      la_ga_feed_unpublished(ga, c->app_id, c->tag, la_store_errmsg(ga->store));
      la__published(ga, NULL, c);
    }
  }
  ga->closed_tail = &ga->closed;
}

/* Ends, in the open batch, the ranks of host's LocalAgent not ended, with
 * the reason "LocalAgent HOST lost" (lost.h); an application whose ranks
 * have then all ended closes its open sets with that reason. *n_ended: how
 * many. Returns 0, or LA_EIO (the store failed: the batch rolls back). */
static int la__agent_lost(la_ga_t *ga, const char *host, size_t *n_ended) {
  *n_ended = 0;
  if (la__txn(ga) != 0) return LA_EIO;
  la_store_host_rank_t *r = NULL;
  size_t n = 0;
  if (la_store_host_ranks(ga->store, host, &r, &n) != 0) {
    la_log_error("store: %s", la_store_errmsg(ga->store));
    ga->txn_failed = 1;
    return LA_EIO;
  }
  char why[LA_MAX_ID_LEN + 64];
  la_ga_lost_reason(host, why, sizeof why);
  size_t apps = 0;
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    La__RankEnd e = LA__RANK_END__INIT;
    e.seq = 0; /* the GlobalAgent's own: a registration again undoes it */
    e.app_id = r[i].app_id;
    e.rank = r[i].rank;
    e.reason = why;
    e.has_t_end_ns = 1;
    e.t_end_ns = la_realtime_ns();
    apps += i == 0 || strcmp(r[i].app_id, r[i - 1].app_id) != 0;
    /* its open sets close with the reason once its last rank ended */
    rc = la__rank_end(ga, host, &e, why);
  }
  free(r);
  if (rc != 0) {
    ga->txn_failed = 1;
    return LA_EIO;
  }
  if (n)
    la_log_warnx("%s: not linked again within stitch.timeout (%lld ms): "
                 "%zu ranks of %zu applications ended as lost; what it sends "
                 "if it comes back is still stored",
                 why, (long long)ga->set.set_timeout_ms, n, apps);
  *n_ended = n;
  return 0;
}

/* After the iteration's I/O: commits the batch, unless it waits for more
 * in the gather window (committer.h; nothing waits to be published). */
static void la__on_check(uv_check_t *h) {
  la_ga_t *ga = h->data;
  if (ga->in_txn && !ga->committing &&
      la_ga_committer_gather(ga, ga->batch_n,
                             ga->batch_more && !ga->closed && !ga->txn_failed))
    return;
  la_ga_commit(ga);
}

/* Closes the sets that waited longer than stitch.timeout; while a commit
 * runs, after its result (la_ga_after_commit). */
static void la__expire(la_ga_t *ga) {
  if (ga->committing) {
    ga->tick_deferred = 1;
    return;
  }
  ga->tick_deferred = 0;
  ga->close_reason = LA__WHY_TIMEOUT;
  la_stitch_expire(ga->stitch, uv_now(ga->loop),
                   (uint64_t)ga->set.set_timeout_ms);
  ga->close_reason = NULL;
  /* LocalAgents not linked again within stitch.timeout: lost */
  const char *lost[16];
  size_t n_lost = ga->store_down ? 0 : la_ga_lost_due(ga, lost, 16);
  for (size_t i = 0, n; i < n_lost; i++) {
    if (la__agent_lost(ga, lost[i], &n) != 0) break;
    la_ga_lost_ended(ga, lost[i], n);
  }
  /* refusals past appid.refused_retention, in the iteration's batch */
  if (!ga->store_down && la_ga_owners_expire_due(ga, uv_now(ga->loop)) &&
      la__txn(ga) == 0 && la_ga_owners_expire(ga) != 0) {
    la_log_error("store: %s", la_store_errmsg(ga->store));
    ga->txn_failed = 1;
  }
}

static void la__on_tick(uv_timer_t *t) {
  la__expire(t->data);
}

void la_ga_after_commit(la_ga_t *ga) {
  /* the arrivals first: a set they complete does not time out */
  ga->agent_ops->resume(ga);
  if (ga->tick_deferred) la__expire(ga);
}

/* Commits everything received, the frames parked meanwhile too, and
 * waits for it: the daemon stops. */
static void la__commit_all(la_ga_t *ga) {
  for (int guard = 0; guard < 1000000; guard++) {
    la_ga_commit_wait(ga);
    if (ga->agents_parked) {
      ga->agent_ops->resume(ga);
      continue;
    }
    la_ga_commit(ga);
    if (!ga->committing) return;
  }
}

void la_ga_commit_drain(la_ga_t *ga) {
  la__commit_all(ga);
}

static void la__note_open_host(void *arg, const char *host) {
  la_ga_lost_note(arg, host);
}

int la_ga_ingest_start(la_ga_t *ga, const la_ga_agent_ops_t *agents, char *why,
                       size_t why_len) {
  ga->agent_ops = agents;
  char r[400];
  const char *db = ga->set.db_url[0] ? ga->set.db_url : ga->set.db;
  if (la_store_open(db, ga->set.fsync, &ga->store, r, sizeof r)) {
    if (ga->set.db_url[0])
      snprintf(why, why_len, "store.url: %s", r);
    else
      snprintf(why, why_len, "store.path %s: %s", ga->set.db, r);
    return LA_EIO;
  }
  la_store_set_history(ga->store, (uint64_t)ga->set.history_full_cycles);
  ga->closed_tail = &ga->closed;
  ga->agents_parked_tail = &ga->agents_parked;
  ga->held = la_held_new(ga->set.publish_memory);
  ga->rep_sigs = la_ga_sigs_new();
  ga->reclaim = la_reclaim_new(ga->loop);
  ga->owners = la_ga_owners_new();
  if (ga->owners && la_ga_owners_load(ga) != 0) {
    snprintf(why, why_len, "store: cannot read the refused ranks: %s",
             la_store_errmsg(ga->store));
    return LA_EIO;
  }
  /* LocalAgents that had ranks open when this GlobalAgent last stopped:
   * lost unless they link again within stitch.timeout, as if their links
   * had closed now (lost.h) */
  if (la_store_open_hosts(ga->store, la__note_open_host, ga) != 0) {
    snprintf(why, why_len, "store: cannot read the LocalAgents with open "
             "ranks: %s", la_store_errmsg(ga->store));
    return LA_EIO;
  }
  la__rebuild_stitch(ga);
  if (!ga->stitch || !ga->held || !ga->rep_sigs || !ga->owners ||
      !ga->reclaim) {
    snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  if (la_ga_committer_start(ga, la_ga_commit_done, la_ga_after_commit,
                            la_ga_commit) != 0 &&
      !ga->committer) {
    snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  uv_check_init(ga->loop, &ga->commit_check);
  ga->commit_check.data = ga;
  uv_check_start(&ga->commit_check, la__on_check);
  uv_timer_init(ga->loop, &ga->tick);
  ga->tick.data = ga;
  uint64_t every = (uint64_t)ga->set.set_timeout_ms / 4;
  if (every < 10) every = 10;
  if (every > 1000) every = 1000;
  uv_timer_start(&ga->tick, la__on_tick, every, every);
  return 0;
}

void la_ga_ingest_stop(la_ga_t *ga) {
  la__commit_all(ga);
  la_ga_committer_stop(ga);
  la__drop_closed(ga);
  while (ga->apps) la__app_forget(ga, ga->apps->app_id);
  la_ga_lost_free(ga);
  la_stitch_free(ga->stitch);
  ga->stitch = NULL;
  la_held_free(ga->held);
  ga->held = NULL;
  la_ga_sigs_free(ga->rep_sigs);
  ga->rep_sigs = NULL;
  la_ga_owners_free(ga->owners);
  ga->owners = NULL;
  la_store_close(ga->store);
  ga->store = NULL;
  la_reclaim_free(ga->reclaim); /* what was published last */
  ga->reclaim = NULL;
}
