/* SPDX-License-Identifier: BSD-3-Clause */
/* ga.h: the GlobalAgent's state and the functions its files share.
 *
 * Files, each calling only those below it (scripts/depgraph.py checks):
 *   main.c     options, configuration, logging, start-up order, signals;
 *              gives ingest.c agents.c's la_ga_agent_ops
 *   agents.c   LocalAgent connections: handshake (challenge-response),
 *              then RankStart / CompactTrace / TraceMissing / RankEnd
 *              handed to ingest.c
 *   feed.c     subscriber connections: Subscribe, Query, Status; bounded
 *              per-subscriber queues; publishing; stored-set requests
 *              handed to feed_jobs.c, their sets to feed_parts.c
 *   feed_jobs.c stored sets read and encoded on the thread pool for
 *              feed.c, each job with a read connection of its own
 *   feed_parts.c a feed connection's queue of sets sent in parts (each
 *              set encoded once, shared), its bounds and SetNotices
 *   ingest.c   group commit into the store, stitching, missing ranks'
 *              reasons, acks after commit (through la_ga_agent_ops_t),
 *              closed Trace-Sets handed to feed.c; expiry timer
 *   metrics.c  the metrics endpoint (metrics.listen): control.c's report
 *              rendered on a timer, served by an HTTP thread that sees
 *              only the rendered text (daemon/la_metrics.h)
 *   control.c  the status report
 *   owners.c   application ids bound to a uid; refused ranks' messages
 *   validate.c checks a compact trace before it is stored
 *   held.c     copies of open sets' traces, to publish without a read-back
 *   sigs.c     open sets' traces' signatures, for store.representatives
 *   store*.c, stitch.c, held.c, settings.c: no libuv (unit-tested alone)
 * The one way back up is la_ga_agent_ops_t: ingest.c acknowledges and
 * closes the LocalAgents' connections through it, never by name.
 * Everything runs on the loop thread, but agents.c's opening, decoding and
 * encoding check of LocalAgents' frames (on the thread pool: a job per
 * connection at a time, its result applied in order on the loop) and
 * feed_jobs.c's reading and encoding of stored sets (the same way, with
 * read connections of their own to the store).
 */
#ifndef LA_GLOBALAGENT_GA_H
#define LA_GLOBALAGENT_GA_H

#include <stdint.h>
#include <uv.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_auth.h"
#include "la_codec.h"
#include "la_uvconn.h"
#include "settings.h"
#include "stitch.h"
#include "store.h"

#define LA_GA_VERSION "la-globalagent " LA_VERSION_STRING

/* Every counter of the GlobalAgent, once:
 *   X(field of la_ga_stats_t, key in the status and the metrics, help, txn)
 * txn 1: counted by ingest.c inside a group commit, so a rolled-back commit
 * puts it back to its value at BEGIN (la__restore_counts), and the status
 * reply shows it as of the last completed commit; 0: counts what happened
 * whatever the store did. The status reply (control.c) renders
 * each group where it belongs among the gauges, in this order. */
#define LA_GA_COUNTERS_STORE(X) \
  X(store_outages, "store_outages", "times the store became unavailable", 0)
#define LA_GA_COUNTERS_AGENTS(X)                                              \
  X(agents_accepted, "agents_accepted", "LocalAgent connections accepted", 0) \
  X(agents_refused, "agents_refused", "LocalAgent connections refused", 0)    \
  X(agents_evicted, "agents_evicted",                                         \
    "unauthenticated LocalAgent connections closed to admit a new one", 0)    \
  X(auth_failures, "auth_failures", "failed authentications", 0)              \
  X(bad_frames, "bad_frames", "connections closed for a bad frame", 0)        \
  X(rank_starts, "rank_starts", "ranks started", 1)                           \
  X(rank_ends, "rank_ends", "ranks ended", 1)                                 \
  X(ranks_reopened, "ranks_reopened",                                         \
    "ranks registered again after their end", 1)                             \
  X(traces, "traces_stored", "compact traces stored", 1)                      \
  X(duplicates, "traces_duplicate", "traces received again", 1)               \
  X(late, "traces_late", "traces of closed Trace-Sets", 1)                    \
  X(orphans, "traces_orphan", "traces of unknown ranks", 1)                   \
  X(conflicts, "conflicts", "traces conflicting with stored ones", 1)         \
  X(invalid, "traces_invalid", "traces refused by validation", 1)             \
  X(commits, "commits", "group commits", 0)                                   \
  X(commit_failures, "commit_failures", "failed group commits", 0)
#define LA_GA_COUNTERS_SETS(X)                                                \
  X(sets_complete, "sets_complete", "Trace-Sets closed complete", 1)          \
  X(sets_partial, "sets_partial", "Trace-Sets closed partial", 1)             \
  X(sets_evicted, "sets_evicted", "Trace-Sets closed by the open-set limit",  \
    1)                                                                        \
  X(missing_reported, "missing_reported",                                     \
    "missing records received from LocalAgents", 1)
#define LA_GA_COUNTERS_APPS(X)                                                \
  X(apps_refused, "apps_refused",                                             \
    "messages of applications not stitched for stitch.max_apps", 0)           \
  X(appid_refused_starts, "appid_refused_starts",                             \
    "rank starts refused: their app id belongs to another uid", 1)            \
  X(appid_refused_messages, "appid_refused_messages",                         \
    "messages of those refused ranks dropped", 1)                             \
  X(appid_refused_learned, "appid_refused_learned",                           \
    "refused ranks learned from the store at their first message (no "       \
    "RankStart of theirs in this run: another shard refused them)", 1)        \
  X(appid_refused_pruned, "appid_refused_pruned",                             \
    "refused ranks' records forgotten: their RankEnd, "                       \
    "appid.refused_retention, appid.refused_max_per_agent", 1)
#define LA_GA_COUNTERS_FEED(X)                                                \
  X(subs_accepted, "subscribers_accepted", "feed connections accepted", 0)    \
  X(subs_refused, "subscribers_refused", "feed connections refused", 0)       \
  X(subs_evicted, "subscribers_evicted",                                      \
    "idle feed connections closed to admit a new one (from their address, "   \
    "or to the port)", 0)                                                     \
  X(sets_published, "sets_published", "Trace-Sets sent to subscribers", 0)    \
  X(sets_dropped, "sets_dropped_for_slow_subscribers",                        \
    "Trace-Sets dropped for slow subscribers", 0)                             \
  X(set_notices, "set_notices",                                               \
    "Trace-Sets a subscriber was told it will not get", 0)                    \
  X(sets_over_subscriber_max, "sets_over_subscriber_max",                     \
    "Trace-Sets over a subscriber's own max_set_bytes", 0)                    \
  X(sets_unpublished, "sets_unpublished",                                     \
    "closed Trace-Sets the store could not give back to publish "             \
    "(subscribers got a SetNotice)", 0)
#define LA_GA_COUNTERS_QUERIES(X) \
  X(queries, "queries", "queries answered", 0)
#define LA_GA_COUNTERS(X)                                                  \
  LA_GA_COUNTERS_STORE(X) LA_GA_COUNTERS_AGENTS(X) LA_GA_COUNTERS_SETS(X) \
  LA_GA_COUNTERS_APPS(X) LA_GA_COUNTERS_FEED(X) LA_GA_COUNTERS_QUERIES(X)

/* The counters (LA_GA_COUNTERS): what each counts is its help text. */
typedef struct la_ga_stats {
#define LA__GA_FIELD(field, key, help, txn) uint64_t field;
  LA_GA_COUNTERS(LA__GA_FIELD)
#undef LA__GA_FIELD
} la_ga_stats_t;

struct la_ga_agent;
struct la_ga_sub;
struct la_store_rep_sig;
struct la_ga_closed;

/* An application whose ranks ingest.c knows (ga->apps): its size and the
 * ranks that ended. ingest.c owns the list; control.c reads it. */
typedef struct la_ga_app {
  struct la_ga_app *next;
  char app_id[LA_MAX_ID_LEN + 1];
  uint32_t nprocs, ended;
  /* validate.c's cache of the ranks' element counts from their RankStart
   * (n_rank_elements entries, 0: not looked up yet); freed with the app */
  uint64_t *rank_elements;
  uint32_t n_rank_elements;
  /* ingest.c's: each rank's highest cycle tag + 1 of a trace stored while
   * the application was stitched here (nprocs entries, 0: none yet, NULL
   * until the first trace or out of memory); freed with the app */
  uint64_t *rank_last;
  char app_name[129]; /* from a RankStart this GlobalAgent read ("": none) */
} la_ga_app_t;
typedef struct la_ga la_ga_t;

/* What ingest.c needs of the LocalAgent connections around a group commit.
 * agents.c provides it (la_ga_agent_ops); main.c hands it to
 * la_ga_ingest_start. Loop thread. */
typedef struct la_ga_agent_ops {
  /* Records every connection's highest seq handled in the open
   * transaction (store). Returns 0 or -1. */
  int (*record_seqs)(la_ga_t *ga);
  /* Sends Ack{stored seq} to every agent with newly committed messages. */
  void (*ack)(la_ga_t *ga);
  /* Closes every LocalAgent connection; nothing of the open batch is
   * acknowledged (they resend it). */
  void (*close_all)(la_ga_t *ga, const char *reason);
  /* 1 when a LocalAgent authenticated as host is connected now, else 0. */
  int (*connected)(la_ga_t *ga, const char *host);
  /* Appends a row per authenticated LocalAgent to a status reply
   * (control.c, through ga->agent_ops). */
  void (*status_rows)(la_ga_t *ga, La__StatusReply *r);
  /* Tells the LocalAgent authenticated as host (when connected) that a
   * RankStart of its was refused (owners.c). */
  void (*refuse_rank)(la_ga_t *ga, const char *host, const La__RankRefused *m);
  /* A commit's result was handled: the frames parked meanwhile are handed
   * to ingest.c, in order, until a full batch's commit parks them again. */
  void (*resume)(la_ga_t *ga);
} la_ga_agent_ops_t;

struct la_ga {
  uv_loop_t *loop;
  la_ga_settings_t set;
  char config_path[512];
  uv_tcp_t agent_listener, feed_listener;
  char agent_bound[256], feed_bound[256];
  uint16_t agent_port, feed_port;
  uv_signal_t sigs[3]; /* SIGTERM, SIGINT, SIGHUP */
  uv_timer_t tick;
  uv_check_t commit_check;
  uv_poll_t shard_poll; /* shards.c: other shards' closed sets */
  uv_check_t shard_check;
  uv_timer_t shard_tick;
  int shard_on;      /* shards.c's handles are initialised (PostgreSQL) */
  int shard_polling; /* shard_poll initialised and its close not done */
  int shard_fd;      /* what shard_poll watches: a duplicate of the store
                        session's socket, owned by shards.c; -1: none */
  unsigned shard_session; /* the store session shard_fd belongs to */
  la_store_t *store;
  la_stitch_t *stitch;
  struct la_held *held; /* open sets' traces for publishing (held.h) */
  struct la_ga_sigs *rep_sigs; /* open sets' signatures (sigs.h) */
  struct la_ga_owners *owners; /* refused ranks (owners.h) */
  struct la_ga_lost *lost;     /* LocalAgents whose link closed (lost.h) */
  /* what the loop is done with, freed on the pool (reclaim.h): handled
   * frames (agents.c), published sets (ingest.c) */
  struct la_reclaim *reclaim;
  la_auth_key_t key;
  int have_key;
  const la_ga_agent_ops_t *agent_ops; /* set by la_ga_ingest_start */
  struct la_ga_agent *agents;
  /* agents.c: bytes of frames read from LocalAgents and not yet handled
   * (on the thread pool or waiting for it; at most set.ingest_memory
   * plus one frame per connection); connections not read meanwhile; the
   * connections whose first frames wait for a job (started in
   * agent_check, after the loop iteration's reads) */
  size_t agent_pending;
  int agents_paused;
  struct la_ga_agent *agents_ready;
  uv_check_t agent_check;
  int agent_check_on;
  struct la_ga_sub *subs;
  struct la_ga_fjobs *fjobs; /* feed_jobs.c's (NULL until the first job) */
  /* feed.c's: the published set being encoded on the pool (one at a
   * time), and the one waiting for it (at most one waits) */
  struct la_ga_pub *pub_running, *pub_next;
  la_ratelimit_t unpublished_rl; /* feed.c's: la_ga_feed_unpublished's log */
  int n_agents, n_subs;
  int n_linked; /* of n_agents, those authenticated (LA__AG_READY) */
  struct la_ga_app *apps;
  int n_apps; /* entries of apps, at most set.max_apps */
  int in_txn;
  int txn_failed; /* a statement of the open transaction failed */
  /* the store could not begin or commit a transaction (ingest.c): since
   * store_down_ms, with its error; LocalAgents are told (code LA_EIO) and
   * retry this GlobalAgent instead of moving to another shard */
  int store_down;
  uint64_t store_down_ms;
  char store_error[200];
  /* Shards (docs/sharding.md): the set the stitcher just asked about, not
   * closed, to complete from what other shards stored (ingest.c). */
  char seed_app[LA_MAX_ID_LEN + 1];
  uint64_t seed_tag;
  int seed;
  /* ingest.c's counters as they were when the open transaction began: a
   * rolled-back transaction puts them back, so counters follow exactly
   * what was committed. */
  la_ga_stats_t st_begin;
  /* Why the stitcher's next partial close happens (timeout, application
   * end); NULL: the open-set limit. Set by ingest.c around stitcher calls. */
  const char *close_reason;
  size_t batch_n;
  int batch_more; /* a trace of the batch joined a set still open */
  struct la_ga_closed *closed, **closed_tail; /* to publish after commit */
  /* committer.c: the commit thread, and whether it holds the store now
   * (a batch's commit handed over, its result not yet handled); the
   * expiry tick that came meanwhile (run after the result) */
  struct la_ga_committer *committer;
  int committing;
  int tick_deferred;
  uint64_t deferred_found; /* la_store_deferred_found at the last commit */
  /* agents.c: connections whose decoded frames wait for the commit's
   * result (in the order they were parked) */
  struct la_ga_agent *agents_parked, **agents_parked_tail;
  int draining;
  uint64_t start_ms;
  la_ga_stats_t st;
};

/* agents.c */
/* Accepts a LocalAgent's connection from the listener (main.c). */
void la_ga_agent_accept(la_ga_t *ga, uv_stream_t *server);
/* agents.max_connections is reached: closes the unauthenticated connection
 * that has waited longest (a second at least; agents_evicted). Returns 1
 * when it closed one (the count is lower at once), else 0. */
int la_ga_agent_make_room(la_ga_t *ga);
/* The connections as ingest.c drives them (la_ga_agent_ops_t). */
extern const la_ga_agent_ops_t la_ga_agent_ops;

/* ingest.c */
/* Opens the store, rebuilds the stitcher and starts the commit check and
 * expiry timer; agents (kept) is how ingest.c reaches the LocalAgents'
 * connections. Returns 0, or -1 with the reason in why. */
int la_ga_ingest_start(la_ga_t *ga, const la_ga_agent_ops_t *agents, char *why,
                       size_t why_len);
/* Handles one message of an authenticated agent (host), in the open group
 * commit (la_ga_ingest_end follows); 0, -1 (close), or LA_EIO: the store
 * is unavailable (la_ga_store_down: the LocalAgent is told to resend later,
 * to this GlobalAgent).
 * enc_why: for a CompactTrace, la_ga_check_encodings' verdict (NULL: its
 * encodings are fine; else the reason it is refused), and sig the
 * signature it took (NULL or count 0: none), kept until the set closes
 * (sigs.h). m is la_msg_decode's
 * and stays the caller's to free, but a stored trace's encodings and
 * statistics may have moved out of it (held for publishing, their fields
 * left empty): the caller does not read those after the call. */
int la_ga_ingest(la_ga_t *ga, const char *host, uint16_t type,
                 ProtobufCMessage *m, const char *enc_why,
                 const struct la_store_rep_sig *sig);
/* After la_ga_ingest returned 0 and the message's sequence number was
 * recorded for its Ack: commits when the batch is full (store.batch_max),
 * so that the commit acknowledges that message too. */
void la_ga_ingest_end(la_ga_t *ga);

/* The store is unavailable (what: the operation that failed) / available
 * again: logged once each way, said in the status (store_state). */
void la_ga_store_down(la_ga_t *ga, const char *what);
void la_ga_store_up(la_ga_t *ga);
/* Commits the open transaction, then acks and publishes: on the
 * committer thread when it runs (committer.h; the acks and publishing
 * follow its result, la_ga_commit_done), else here. Nothing while a
 * commit runs or when no batch is open. */
void la_ga_commit(la_ga_t *ga);
/* The batch's commit returned rc (0: durable): acks and publishes, or
 * handles the failure (rollback done: links closed, state rebuilt); why:
 * the store's error then (NULL: read from the store now). */
void la_ga_commit_done(la_ga_t *ga, int rc, const char *why);
/* The commit's result was handled and the loop may ingest again: the
 * parked frames (agent_ops->resume), the expiry tick that waited. */
void la_ga_after_commit(la_ga_t *ga);
/* Commits what was received, the messages parked meanwhile too, and
 * waits for it (the daemon stops; acks go out before the links close). */
void la_ga_commit_drain(la_ga_t *ga);
/* The store for loop code outside the batch being built: waits for a
 * commit that runs to finish first (its result is handled later, by the
 * committer's uv_async; committer.h). */
la_store_t *la_ga_store(la_ga_t *ga);
void la_ga_ingest_stop(la_ga_t *ga);

/* shards.c: with a shared (PostgreSQL) store, publishes the sets the other
 * shards close to this one's subscribers too. Nothing on SQLite. Returns 0
 * or LA_EIO (logged). */
int la_ga_shards_start(la_ga_t *ga);
/* Closes shards.c's handles (the daemon stops); nothing on SQLite. */
void la_ga_shards_stop(la_ga_t *ga);

/* feed.c */
void la_ga_feed_accept(la_ga_t *ga, uv_stream_t *server);
/* feed.max_connections is reached: closes the connection idle longest (a
 * second at least, not a live subscriber, nothing in flight;
 * subscribers_evicted). Returns 1 when it closed one, else 0. */
int la_ga_feed_make_room(la_ga_t *ga);
/* Whether a live subscriber's filter takes app_id's Trace-Sets now: 0 when
 * la_ga_feed_publish would send a set of it to nobody (the commit then
 * does not read it back). */
int la_ga_feed_has_taker(const la_ga_t *ga, const char *app_id);
/* Sends a closed Trace-Set to every live subscriber whose filter matches.
 * Takes set: done(ga, set, arg) is called once the feed no longer needs it
 * (at once, or after a job on the thread pool encoded it for the
 * subscribers that take parts), on the loop thread. */
void la_ga_feed_publish(la_ga_t *ga, La__TraceSet *set,
                        void (*done)(la_ga_t *ga, La__TraceSet *set, void *arg),
                        void *arg);
/* A closed (committed) Trace-Set that cannot be published, why saying
 * why (the store's error reading it back): every live subscriber whose
 * filter matches is told, a SetNotice with limit "store" (sets in parts)
 * or one more in the next set's dropped count (whole sets). Counted in
 * sets_unpublished and logged (at most once a second). */
void la_ga_feed_unpublished(la_ga_t *ga, const char *app_id, uint64_t tag,
                            const char *why);
void la_ga_feed_close_all(la_ga_t *ga, const char *reason);

/* metrics.c */
/* Starts the metrics endpoint when metrics.listen is set (after the
 * listeners). Returns 0, or a negative LA_E* code with the reason. */
int la_ga_metrics_start(la_ga_t *ga, char *why, size_t why_len);
/* Stops it; after uv_run returned. */
void la_ga_metrics_stop(la_ga_t *ga);
/* Applies ga->set's [metrics] keys after a reload (la_metrics_reload). */
void la_ga_metrics_reload(la_ga_t *ga);
/* An authenticated LocalAgent link of host closed after messages: its
 * count stays in la_globalagent_agent_messages_total{host} (agents.c). */
void la_ga_metrics_link_closed(const char *host, uint64_t messages);

/* control.c */
/* The status reply; with_store: also the missing records by reason (a
 * query on the store, left out of the periodic metrics snapshot). */
La__StatusReply *la_ga_status_reply(la_ga_t *ga, int with_store);
void la_ga_status_reply_free(La__StatusReply *r);

#endif
