/* SPDX-License-Identifier: BSD-3-Clause */
/* store.h: the GlobalAgent's embedded store (SQLite, one database file in
 * WAL mode). Applications, ranks, compact traces, missing (application,
 * rank, cycle) records with their reason, Trace-Sets and the per-LocalAgent
 * sequence numbers; docs/storage.md documents the schema for
 * users of the sqlite3 shell and Python.
 *
 * It stores what the GlobalAgent hands it and answers queries (subscribers,
 * lactl, restart). It deliberately does not stitch (the stitcher decides when
 * a Trace-Set is complete or partial; the store records it), does not decode
 * segments, does no I/O besides SQLite's and knows nothing of libuv, sockets
 * or threads. Messages given to it were validated by the codec; what it reads
 * back from the database it checks again (a corrupt database gives LA_EIO,
 * never a crash).
 *
 * Group commit: la_store_begin(), any number of write calls, then
 * la_store_commit(); only after a successful commit is anything durable (and
 * may be acknowledged). A write call that fails with LA_EIO poisons the open
 * batch: la_store_commit() then rolls it back and returns LA_EIO. A write
 * call that returns LA_EPROTO or LA_EINVAL wrote nothing and leaves the
 * batch usable. A write call made outside begin/commit runs in its own
 * transaction.
 *
 * Unsigned 64-bit values (cycle tags, sequence numbers, times) are stored in
 * SQLite's signed INTEGER with the same bits; the queries below handle cycle
 * tags >= 2^63 in unsigned order.
 *
 * One la_store_t is used by one thread at a time. Every function returns 0
 * or a negative LA_E* code (libla/la.h): LA_EIO (SQLite error or corrupt
 * content; la_store_errmsg() says which), LA_EPROTO, LA_ENOTFOUND,
 * LA_ENOMEM, LA_EINVAL, LA_EVERSION.
 */
#ifndef LA_GLOBAL_STORE_H
#define LA_GLOBAL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "la.pb-c.h"

/* Version of the schema this code creates and reads (schema_version). */
#define LA_STORE_SCHEMA_VERSION 1
/* PRAGMA application_id of LA databases ("LAG1"). */
#define LA_STORE_APPLICATION_ID 0x4C414731
/* Largest segments BLOB accepted when reading back (the codec's default
 * frame maximum). */
#define LA_STORE_MAX_BLOB (64u << 20)
/* Longest reason of a missing record kept (bytes; longer ones truncated). */
#define LA_STORE_REASON_MAX 256

typedef struct la_store la_store_t;

/* Opens or creates the database at path (":memory:" for a private in-memory
 * database, without WAL), or, when path is a PostgreSQL URL or connection
 * string (store_db.h: la_db_is_pg_url), connects to that database, which
 * several GlobalAgents may share (docs/sharding.md; every commit is then
 * durable on the server, whatever synchronous_full). SQLite: sets WAL mode,
 * foreign keys, a 5 s busy timeout, synchronous FULL (synchronous_full = 1:
 * every commit is fsync'ed, durable against power loss) or NORMAL (0: durable
 * against a process crash; a power loss may lose the last commits), then
 * creates the schema or checks it. Refuses a database whose schema_version is
 * newer than LA_STORE_SCHEMA_VERSION (LA_EVERSION), a file that is not an
 * SQLite database or is another program's database (LA_EIO), with the reason in
 * why. On success *out is the store, to close with la_store_close(). */
int la_store_open(const char *path, int synchronous_full, la_store_t **out,
                  char *why, size_t why_len);

/* Opens a second, read-only handle on the store another la_store_t of
 * this process opened at path (la_store_open made the schema): an SQLite
 * file read-only (it must exist; in WAL mode it reads the last commit
 * while the writer goes on), a PostgreSQL database with every transaction
 * read-only. It never creates nor changes the schema; its write calls fail.
 * For another thread than the writer's (one la_store_t, one thread at a
 * time). Returns 0, LA_EINVAL (":memory:", private to its connection, has
 * no second handle), LA_EIO, LA_ENOMEM, LA_EVERSION, with the reason in
 * why. Close with la_store_close(). */
int la_store_open_read(const char *path, la_store_t **out, char *why,
                       size_t why_len);

/* Opens a store to read it offline, with no GlobalAgent (lactl --db,
 * la-replay --db; store_offline.c): path is a PostgreSQL URL or connection
 * string (every transaction read-only), else an existing SQLite file,
 * opened read-only (never created, never written). Returns 0, or
 * LA_ENOTFOUND (no such file), LA_EINVAL (not a regular file, a path too
 * long), LA_EIO (not an LA store, a database error), LA_EVERSION, with the
 * reason in why, naming path as given. Close with la_store_close(). */
int la_store_open_offline(const char *path, la_store_t **out, char *why,
                          size_t why_len);

/* Rolls back an open batch, finalizes the statements and closes the
 * database. NULL is fine. */
void la_store_close(la_store_t *s);

/* Starts a batch (BEGIN IMMEDIATE: takes the write lock now). Returns 0,
 * LA_EINVAL when a batch is already open, or LA_EIO. */
int la_store_begin(la_store_t *s);
/* Commits the batch. On failure (or after a write call of the batch failed
 * with LA_EIO) the batch is rolled back and LA_EIO returned: the caller must
 * not acknowledge any of its messages. LA_EINVAL when no batch is open. */
int la_store_commit(la_store_t *s);
/* Rolls the batch back. Returns 0 (also when no batch is open) or LA_EIO. */
int la_store_rollback(la_store_t *s);
/* Text of the last error (SQLite's message with context, or the reason of
 * an LA_EPROTO); "" when none. Valid until the next call on s. */
const char *la_store_errmsg(la_store_t *s);

/* Records a RankStart: the application row (app_name, nprocs, metric, unit,
 * compact parameters, period, grid) is created, or completed when an
 * earlier trace created it with nprocs unknown; the first RankStart of an
 * application defines it. The rank row (n_elements, host, pid, t_start_ns,
 * seq) is written once per (app_id, rank): a later copy changes nothing.
 * Strings longer than the struct fields of la_store_app_t are truncated.
 * The rank's timer resolution and detection status (timer_res_ns,
 * interference), when given, go to the rank_fidelity table, also once;
 * its grid (dimensions, origin and global extent when given) to the
 * rank_grid table, also once.
 * A RankStart of a rank that ended, from the same host and process (pid)
 * with a higher sequence number than its RankEnd, is a registration again (its
 * LocalAgent restarted; LA_finalize and LA_register again): the end is
 * undone and the row takes the new start; *reopened (may be NULL) says so.
 * Returns 0, LA_EPROTO when the application is known with another nprocs
 * (nothing written; la_store_errmsg says why), LA_EINVAL, LA_EIO. */
int la_store_rank_start(la_store_t *s, const La__RankStart *m,
                        int *reopened);

/* Application id owners (store_owners.c; docs/security.md). The uid
 * app_id is bound to into *uid: 0, LA_ENOTFOUND (not bound), LA_EINVAL,
 * LA_EIO. */
int la_store_app_owner(la_store_t *s, const char *app_id, uint32_t *uid);
/* Binds app_id (whose application row exists: after its RankStart) to uid,
 * unless it is bound already (the first binding stays); host: the
 * LocalAgent of that RankStart. 0, LA_EINVAL, LA_EIO. */
int la_store_app_bind(la_store_t *s, const char *app_id, uint32_t uid,
                      const char *host);
/* Records that the RankStart (seq) of app_id's rank from the LocalAgent
 * host, registered by uid, was refused for owner (the bound uid); a row of
 * that key is replaced. 0, LA_EINVAL, LA_EIO. */
int la_store_rank_refuse(la_store_t *s, const char *app_id, const char *host,
                         uint32_t rank, uint32_t uid, uint32_t owner,
                         uint64_t seq);
/* Deletes the refusal of (app_id, host, rank), if any (the owner's uid
 * started that rank from that host). 0, LA_EINVAL, LA_EIO. */
int la_store_rank_unrefuse(la_store_t *s, const char *app_id,
                           const char *host, uint32_t rank);
/* The uid refused for (app_id, host, rank) into *uid (UINT32_MAX: its
 * RankStart said none). 0, LA_ENOTFOUND, LA_EINVAL, LA_EIO. */
int la_store_rank_refused(la_store_t *s, const char *app_id, const char *host,
                          uint32_t rank, uint32_t *uid);
/* Deletes host's oldest refusals beyond the newest keep, calling fn (may be
 * NULL) for each after its row went; *n gets how many. 0, LA_EINVAL,
 * LA_ENOMEM, LA_EIO. */
int la_store_refused_trim(la_store_t *s, const char *host, uint64_t keep,
                          void (*fn)(void *arg, const char *app_id,
                                     const char *host, uint32_t rank),
                          void *arg, uint64_t *n);
/* The same for refusals recorded before before_ns (realtime), at most
 * 10,000 a call (the caller calls again while *n is that). */
int la_store_refused_expire(la_store_t *s, uint64_t before_ns,
                            void (*fn)(void *arg, const char *app_id,
                                       const char *host, uint32_t rank),
                            void *arg, uint64_t *n);
/* Calls fn for every refused (app_id, host, rank) with the refused uid, in
 * key order, until fn returns non-zero (returned). 0, LA_EINVAL, LA_EIO
 * (a row out of range: corrupt). */
int la_store_refused_each(la_store_t *s,
                          int (*fn)(void *arg, const char *app_id,
                                    const char *host, uint32_t rank,
                                    uint32_t uid),
                          void *arg);

/* Records a RankEnd once per (app_id, rank) (reason, cycles, skipped,
 * t_end_ns, seq), unless its sequence number is below the rank's start's
 * (an end from before a registration again); creates the application and rank rows if no RankStart came
 * (nprocs and n_elements unknown = 0). *was_new (may be NULL) is 1 when this
 * rank had not ended before, 0 for a resend. Returns 0, LA_EINVAL, LA_EIO. */
int la_store_rank_end(la_store_t *s, const La__RankEnd *m, int *was_new);

/* Stores a compact trace once per (app_id, rank, cycle_tag): *was_new (may
 * be NULL) is 1 when it was stored, 0 when that key was already stored (the
 * first copy wins, whatever this one holds). Creates the application row
 * (nprocs unknown) when no RankStart came yet, and the cycle's trace_sets
 * row (open) with its first trace. The segments are stored as given. A
 * trace whose rank is not below the application's nprocs is stored too but
 * belongs to no Trace-Set (la_store_load_set and la_store_open_sets leave
 * it out). Robust weights and interference figures (robust_* fields,
 * interference, flagged, flagged_time), when present, go to the robust
 * table in the same transaction. Returns 0, LA_EPROTO when rank >=
 * LA_MAX_RANKS (nothing written; acknowledge and count it, a resend would
 * be refused again), LA_EINVAL (also robust_stats without
 * robust_segments), LA_EIO. */
int la_store_trace(la_store_t *s, const La__CompactTrace *t, int *was_new);

/* la_store_trace for a trace the caller knows is new (no row of its key is
 * stored, none is deferred), inside a batch: t is checked now and copied,
 * and its rows are written at the batch's next flush (store_defer.c: at
 * the latest the commit's, which on the GlobalAgent runs on its committer
 * thread), in the order deferred; *was_new is set to 1. A trace the copy
 * does not cover (channels, a history reference), one past the copies'
 * bound (64 MiB a batch) or outside a batch is stored at once by
 * la_store_trace, which sets *was_new. Should the key be
 * stored after all at the flush, nothing changes and it is counted
 * (la_store_deferred_found). Returns as la_store_trace, or LA_ENOMEM. */
int la_store_trace_defer(la_store_t *s, const La__CompactTrace *t,
                         int *was_new);

/* How many deferred traces found their key stored at the flush (the
 * caller's knowledge was wrong: 0 unless a bug or another writer). */
uint64_t la_store_deferred_found(const la_store_t *s);

/* What tells two copies of a trace apart: a resend carries the stored
 * one's transfer time and exact statistics; another run's differs. */
typedef struct la_store_stamp {
  uint64_t seq, t_xfer_ns, count;
  int has_t_xfer_ns;
  double sum;
} la_store_stamp_t;

/* The stamp of the stored trace of (app_id, cycle_tag, rank) into *out.
 * Returns 0, LA_ENOTFOUND (none stored), LA_EINVAL, LA_EIO. */
int la_store_trace_stamp(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                         uint32_t rank, la_store_stamp_t *out);

/* Bounded history (docs/history.md): a trace that names a history_ref
 * keeps its own segments while it is among its rank's full_cycles most
 * recent cycles (by rank_seq), then is kept as a reference to its
 * representative. 0: at once. Default 16. */
#define LA_STORE_HISTORY_FULL_CYCLES 16
void la_store_set_history(la_store_t *s, uint64_t full_cycles);

/* host: the LocalAgent's name, its agent.host or, from a LocalAgent that
 * sends an instance id, "host/instance" (la_auth_identity), so that two
 * LocalAgents with one host name keep their own sequences. */
/* Records seq as stored from the LocalAgent of host (keeps the highest;
 * seq < 2^63). Call it in the batch that stored the messages. Returns 0,
 * LA_EINVAL, LA_EIO. */
int la_store_agent_seq_update(la_store_t *s, const char *host, uint64_t seq);
/* *next_seq = highest seq recorded for host + 1, or 1 when none (the
 * AuthResult.next_seq). Returns 0, LA_EINVAL, LA_EIO. */
int la_store_agent_next_seq(la_store_t *s, const char *host,
                            uint64_t *next_seq);

/* Records that the Trace-Set (app_id, cycle_tag) was closed: complete (1)
 * or partial (0), the ranks missing (sorted and deduplicated; stored as the
 * text "3,7" in trace_sets.missing_ranks), t_closed_ns. nprocs and
 * n_ranks_present are taken from the database at this moment. Closing again
 * overwrites the previous record. Creates the rows it needs when no trace of
 * that cycle was stored. Returns 0, LA_EINVAL, LA_EIO. */
int la_store_set_closed(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                        int complete, const uint32_t *missing, size_t n_missing,
                        uint64_t t_closed_ns);

/* Records that rank's trace of (app_id, cycle_tag) will never be stored,
 * with a reason (non-empty; truncated to LA_STORE_REASON_MAX bytes), once
 * per key: nothing is written when a trace of that key is stored (the trace
 * wins), and an existing record is kept, except that a LocalAgent's record
 * (from_agent 1, with its link seq) replaces one the GlobalAgent inferred
 * (from_agent 0: "timeout" and the like, which becomes "rank ended before
 * this cycle" when the rank's RankEnd is stored, unless it starts with
 * "missing:"). A trace stored later
 * deletes the record (la_store_trace). Creates the application row (nprocs
 * unknown) and the cycle's trace_sets row (open) if needed. *was_new (may be
 * NULL) is 1 when a record was written or replaced. Returns 0, LA_EPROTO
 * when rank >= LA_MAX_RANKS (nothing written), LA_EINVAL, LA_EIO. */
int la_store_missing(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                     uint32_t rank, const char *reason, int from_agent,
                     uint64_t seq, int *was_new);

/* A rank of a LocalAgent's (la_store_host_ranks). */
typedef struct la_store_host_rank {
  char app_id[129]; /* LA_MAX_ID_LEN + 1 */
  uint32_t rank;
} la_store_host_rank_t;

/* The started ranks not ended whose RankStart came from host, by app_id
 * then rank, into *out (malloc'ed, NULL when *n is 0; the caller frees it):
 * the ranks of a LocalAgent that was lost. Returns 0, LA_EINVAL, LA_ENOMEM,
 * LA_EIO. */
int la_store_host_ranks(la_store_t *s, const char *host,
                        la_store_host_rank_t **out, size_t *n);

/* Calls fn with each host whose RankStart of a rank not ended is stored
 * (a LocalAgent that had ranks open when the GlobalAgent stopped), in
 * order. Returns 0, LA_EINVAL, LA_EIO. */
int la_store_open_hosts(la_store_t *s,
                        void (*fn)(void *arg, const char *host), void *arg);

/* The host of rank's LocalAgent (its RankStart's host) into host (cap
 * bytes, truncated). Returns 0, LA_ENOTFOUND (no RankStart stored, or no
 * host in it), LA_EINVAL, LA_EIO. */
int la_store_rank_host(la_store_t *s, const char *app_id, uint32_t rank,
                       char *host, size_t cap);

/* The ranks below nprocs with a missing record for (app_id, cycle_tag),
 * increasing, into *ranks (malloc'ed, NULL when *n is 0; the caller frees
 * it). Returns 0, LA_EINVAL, LA_ENOMEM, LA_EIO. */
int la_store_missing_ranks(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, uint32_t nprocs,
                           uint32_t **ranks, size_t *n);

typedef struct la_store_reason_count {
  char reason[LA_STORE_REASON_MAX + 1];
  uint64_t count;
} la_store_reason_count_t;

/* Missing records by reason, most frequent first: at most max of them into
 * out (*n filled), *total = all records. Returns 0, LA_EINVAL, LA_EIO. */
int la_store_missing_counts(la_store_t *s, la_store_reason_count_t *out,
                            size_t max, size_t *n, uint64_t *total);

/* ---------------------------------------------------------------- queries */

typedef struct la_store_app {
  char app_id[129], app_name[129], metric[129], unit[33];
  uint32_t nprocs;           /* 0: no RankStart yet */
  uint64_t n_elements_total; /* sum of the started ranks' n_elements */
  uint64_t cycles;           /* cycles with at least one trace */
  uint64_t sets_complete, sets_partial; /* closed Trace-Sets */
  int ranks_started, ranks_ended;
  int ranks_lost; /* of ranks_ended: ended as their LocalAgent was lost */
  uint64_t t_start_ns; /* earliest rank t_start_ns (0: unknown) */
  uint64_t t_last_ns;  /* latest trace stored or rank ended (0: none) */
} la_store_app_t;

/* Every application, ordered by app_id. *out is malloc'ed (NULL when *n is
 * 0); the caller frees it. Returns 0, LA_ENOMEM, LA_EIO. */
int la_store_apps(la_store_t *s, la_store_app_t **out, size_t *n);

typedef struct la_store_cycle {
  uint64_t cycle_tag;
  int closed, complete;   /* complete: closed as complete */
  uint32_t ranks_present; /* traces stored for this cycle */
  uint32_t n_missing;     /* closed: ranks recorded missing at close;
                             open: ranks not arrived yet (nprocs - present,
                             0 when nprocs is unknown) */
  char reasons[512];      /* missing records by reason, most frequent
                             first: "timeout (2); skipped (1)"; "" when
                             none; truncated to fit */
} la_store_cycle_t;

/* Cycles of app_id with first <= cycle_tag <= last (unsigned), in
 * increasing tag order. *out is malloc'ed (NULL when *n is 0); the caller
 * frees it. An unknown application gives *n = 0. Returns 0, LA_EINVAL,
 * LA_ENOMEM, LA_EIO. */
int la_store_cycles(la_store_t *s, const char *app_id, uint64_t first,
                    uint64_t last, la_store_cycle_t **out, size_t *n);

/* Which cycles la_store_latest_cycle considers. */
enum {
  LA_STORE_LATEST_ANY = 0,      /* any cycle with a trace, open or closed */
  LA_STORE_LATEST_COMPLETE = 1, /* Trace-Sets closed as complete */
  LA_STORE_LATEST_CLOSED = 2    /* closed Trace-Sets, complete or partial */
};
/* *cycle_tag = the largest (unsigned) cycle tag of app_id of that kind.
 * Returns 0, LA_ENOTFOUND when there is none, LA_EINVAL, LA_EIO. */
int la_store_latest_cycle(la_store_t *s, const char *app_id, int complete_only,
                          uint64_t *cycle_tag);

/* Builds the TraceSet of (app_id, cycle_tag) from the database as it is
 * now: the traces ordered by rank (those of ranks >= nprocs, stored before
 * the application's RankStart, are left out), missing_ranks = the ranks
 * below nprocs without a trace, missing_reasons = the missing records of
 * those ranks (by rank), complete = no rank missing, rank_elements
 * from the RankStart rows (0 where unknown), nprocs (when no RankStart came,
 * the highest rank present + 1, and complete = 0), metric, unit,
 * t_complete_ns = the close time when the set was closed, each trace's
 * robust weights and interference figures where stored, and timer_res_ns /
 * detection per rank (0 / "" where unknown) when any rank reported them
 * (both empty otherwise), grids: the grid-registered ranks' dimensions and
 * place in the global grid (rank_grid). The result passes
 * la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET); *out owns all its memory and
 * is freed with la_store_free_set(). Returns 0, LA_ENOTFOUND when neither
 * a trace nor a missing record of that cycle is stored, LA_EINVAL,
 * LA_ENOMEM, LA_EIO (corrupt rows). */
int la_store_load_set(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                      La__TraceSet **out);
/* The same with the set's traces given instead of read back: traces[0..n)
 * (by rank, each as la_store_load_set would load it, with its channel
 * series) become the set's; everything else is read as above. Takes
 * ownership of the array and the traces, also on failure. */
int la_store_load_set_with(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, La__CompactTrace **traces,
                           size_t n, La__TraceSet **out);
/* Frees a set built by la_store_load_set. NULL is fine. */
void la_store_free_set(La__TraceSet *set);

typedef struct la_store_open_set {
  char app_id[129];
  uint64_t cycle_tag;
  uint32_t nprocs; /* 0: no RankStart yet */
  uint32_t *ranks; /* ranks with a trace, increasing (below nprocs when
                      nprocs is known) */
  size_t n_ranks;
  uint64_t t_first_ns; /* when its first trace was stored */
} la_store_open_set_t;

/* Every (app_id, cycle_tag) with a trace or a missing record but no closed
 * Trace-Set record (ranks: those with either), ordered by app_id then
 * cycle tag (for the stitcher after a restart).
 * Free with la_store_free_open_sets(). Returns 0, LA_ENOMEM, LA_EIO. */
int la_store_open_sets(la_store_t *s, la_store_open_set_t **out, size_t *n);
void la_store_free_open_sets(la_store_open_set_t *v, size_t n);

/* *closed = 1 when the Trace-Set (app_id, cycle_tag) has a closed record
 * (la_store_set_closed, committed or in the open batch), else 0 (open, or
 * unknown). Returns 0, LA_EINVAL, LA_EIO (poisons an open batch). */
int la_store_set_is_closed(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, int *closed);

/* 1 when the store is a database other GlobalAgents (shards) may write too
 * (PostgreSQL), 0 for an SQLite file. */
int la_store_shared(const la_store_t *s);

/* PostgreSQL: starts listening for the sets other shards close (their
 * la_store_set_closed, delivered once committed) and returns the socket to
 * watch for them; -1 on SQLite; LA_EIO. */
int la_store_watch(la_store_t *s);

/* The socket to watch (it changes when the store reconnects to the
 * server), or -1 on SQLite and while the session is lost. libpq closes it
 * when the session is lost or opened again: an event loop watches a
 * duplicate of its own (shards.c). */
int la_store_fd(la_store_t *s);

/* Which session of the server the store holds: a number that changes each
 * time the store opens its session again (the socket may keep its number
 * across that). 0 on SQLite. */
unsigned la_store_session(la_store_t *s);

/* The store's size in bytes: SQLite's main file at path, PostgreSQL's
 * database (pg_database_size); -1 when unknown. */
int64_t la_store_bytes(la_store_t *s, const char *path);

/* Calls fn(arg, app_id, cycle_tag) for every set another shard closed and
 * committed since the last call, reading the socket first when consume is
 * set (never blocks). Returns how many, LA_EINVAL, or LA_EIO (the
 * connection failed). */
int la_store_closed_elsewhere(la_store_t *s, int consume,
                              void (*fn)(void *arg, const char *app_id,
                                         uint64_t cycle_tag),
                              void *arg);

/* The ranks below nprocs of the Trace-Set (app_id, cycle_tag) that have a
 * trace or a missing record, written by any shard (committed) or in the
 * open batch, increasing, into a new array *ranks (free it) of *n. Returns
 * 0, LA_EINVAL, LA_ENOMEM, LA_EIO (a corrupt row; poisons an open
 * batch on a database error). */
int la_store_set_ranks(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                       uint32_t nprocs, uint32_t **ranks, size_t *n);

/* *nprocs (0: unknown) and *ended (ranks whose RankEnd is stored) of
 * app_id. Returns 0, LA_ENOTFOUND for an unknown application, LA_EINVAL,
 * LA_EIO. */
int la_store_app_ranks_ended(la_store_t *s, const char *app_id,
                             uint32_t *nprocs, uint32_t *ended);

/* *n_elements = the element count rank of app_id declared in its RankStart.
 * Returns 0, LA_ENOTFOUND (no RankStart stored for that rank), LA_EINVAL,
 * LA_EIO. Does not poison an open batch. */
int la_store_rank_elements(la_store_t *s, const char *app_id, uint32_t rank,
                           uint64_t *n_elements);

/* ------------------------------------------- the application's numbering */

/* Stores one chunk of a rank's global ids (m->app_id, m->rank, elements
 * m->first..m->first+n_ids-1) once per (app_id, rank, first): a resend
 * changes nothing (*was_new, may be NULL, says whether it was stored).
 * Returns 0, LA_EPROTO (no RankStart of the rank stored, or ids past its
 * element count: nothing written, la_store_errmsg says which), LA_EINVAL
 * (no app_id, rank or ids), LA_ENOMEM, LA_EIO. */
int la_store_element_ids(la_store_t *s, const La__ElementIds *m, int *was_new);

/* Up to max global ids of rank's elements first.. into *ids (malloc'ed,
 * the caller frees it; NULL when *n is 0, i.e. first >= *n_elements), and
 * the rank's element count into *n_elements. Returns 0, LA_ENOTFOUND (no
 * such rank, or its ids are not all stored: la_store_errmsg says how many
 * are), LA_EINVAL, LA_ENOMEM, LA_EIO (corrupt chunks). */
int la_store_rank_ids(la_store_t *s, const char *app_id, uint32_t rank,
                      uint64_t first, size_t max, int64_t **ids, size_t *n,
                      uint64_t *n_elements);

#endif /* LA_GLOBAL_STORE_H */
