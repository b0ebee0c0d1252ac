/* SPDX-License-Identifier: BSD-3-Clause */
/* la_client.h: libla_client, the library load balancers and tools use to
 * receive Trace-Sets from an LA GlobalAgent and turn them into weights.
 *
 * A Trace-Set is every rank's compact trace of one application for one
 * profiling cycle. The client connects to the GlobalAgent's feed port,
 * subscribes (optionally to one application) and receives each Trace-Set as
 * it completes, or closes partial; it can also ask for a stored cycle or the
 * latest one. A received set (la_traceset_t) keeps every rank's trace parsed,
 * and answers what partitioners take: the dense per-element weight vector
 * over the global element numbering (ranks in order, offsets as ParMETIS's
 * vtxdist), per-rank totals, the imbalance, range sums computed from the
 * segments without expanding them, METIS integer vertex weights and Zoltan
 * float weights.
 *
 * Conventions.
 *  - Every int function returns 0 or a negative LA_E* code (la.h);
 *    la_client_strerror() explains a code and la_client_error() gives the
 *    detail of a handle's last failure. Accessors that cannot fail return
 *    their value directly.
 *  - Handles are opaque. No structure crosses the API by value.
 *  - Ownership: every la_client_t is freed with la_client_close(), every
 *    la_traceset_t with la_traceset_free(); nothing else needs freeing.
 *    Strings and arrays returned by accessors belong to the object they came
 *    from and stay valid until it is freed. Arrays passed in (weights,
 *    vtxdist, ...) belong to the caller, who sizes them as each function says.
 *  - Threads: a la_client_t is not thread-safe; use one handle per thread, or
 *    lock around every call. A la_traceset_t is immutable once made (but
 *    for la_traceset_set_weights): any number of threads may read one
 *    concurrently; it is independent of the
 *    client that received it (it may outlive it).
 *  - The library prints nothing, never exits, installs no signal handler and
 *    keeps no global state. Writes never raise SIGPIPE.
 *
 * Link with -lla_client (it needs libprotobuf-c and libm, which the shared
 * library names itself). See docs/client.md for a complete example.
 */
#ifndef LA_CLIENT_H
#define LA_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "la_errcodes.h" /* LA_E* error codes */
#include "la_limits.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LA_CLIENT_EXPORT
#else
#define LA_CLIENT_EXPORT __attribute__((visibility("default")))
#endif

/* The feed address when none is given and $LA_GLOBAL is not set. */
#define LA_CLIENT_DEFAULT_ADDR "127.0.0.1:7463"
/* Time limit of connect and of request/reply calls when none is given. */
#define LA_CLIENT_DEFAULT_TIMEOUT_MS 5000
/* Largest frame accepted from the GlobalAgent unless changed. */
#define LA_CLIENT_DEFAULT_MAX_FRAME (64u << 20)
/* Trace-Sets kept while a request waits for its reply (older ones are
 * dropped and counted in la_traceset_dropped()). */
#define LA_CLIENT_MAX_PENDING 64
/* Default largest element count of one rank in a received set (2^28:
 * 2 GiB of decoded doubles); la_client_set_max_elements changes it. */
#define LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS (UINT64_C(1) << 28)
/* Default largest Trace-Set taken from a subscription (bytes of its
 * encoding: 1 GiB); la_client_set_max_set changes it. */
#define LA_CLIENT_DEFAULT_MAX_SET (UINT64_C(1) << 30)

typedef struct la_client la_client_t;
typedef struct la_traceset la_traceset_t;

/* Text of an LA_E* code ("success" for 0). Static storage. */
LA_CLIENT_EXPORT const char *la_client_strerror(int code);

/* ------------------------------------------------------------ connection */

/* Connects to the GlobalAgent's feed at host_port ("host:port", "port" or
 * "[v6]:port"; NULL or "" means $LA_GLOBAL, or LA_CLIENT_DEFAULT_ADDR) within
 * timeout_ms; several GlobalAgent shards separated by commas: the first of
 * them that accepts (any shard serves every application, docs/sharding.md);
 * when that connection is lost later, the next call connects to the next
 * shard of the list that accepts (in list order, round) and sends the
 * subscription again, so a request or la_client_next goes on there (sets
 * closed while no shard was connected are not sent again: la_client_get
 * asks for them). timeout_ms (<= 0: LA_CLIENT_DEFAULT_TIMEOUT_MS) also becomes the
 * handle's request timeout (la_client_set_timeout). On success *out is a new
 * handle and 0 is returned. Errors: LA_EINVAL (out NULL, bad address; *out is
 * set to NULL), LA_ENOAGENT (nothing listens), LA_ETIMEDOUT, LA_ENOMEM. On
 * failure nothing is left to free. */
LA_CLIENT_EXPORT int la_client_connect(const char *host_port, int timeout_ms,
                                       la_client_t **out);

/* Adopts an already connected stream socket (TCP or AF_UNIX; the client owns
 * and closes it from now on, also when this fails). For tests and for callers
 * with their own connection set-up. Errors: LA_EINVAL (fd < 0), LA_ENOMEM. */
LA_CLIENT_EXPORT int la_client_from_fd(int fd, int timeout_ms,
                                       la_client_t **out);

/* Changes the time limit of sends and of la_client_get/latest/list/status
 * (> 0 milliseconds). Errors: LA_EINVAL. */
LA_CLIENT_EXPORT int la_client_set_timeout(la_client_t *c, int timeout_ms);

/* Changes the largest frame payload accepted (bytes, >= 1024; default
 * LA_CLIENT_DEFAULT_MAX_FRAME). A larger frame fails with LA_EMSGSIZE and
 * ends the connection. Only before anything was received. Errors: LA_EINVAL,
 * LA_ESTATE (data already received). */
/* Changes the largest element count of one rank that a received Trace-Set
 * may declare (1..2^32; default LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS). A set
 * with a rank above it is refused (LA_EPROTO, naming the rank) before any
 * trace is parsed, so a short message cannot make the client allocate or
 * decode more. Errors: LA_EINVAL. */
LA_CLIENT_EXPORT int la_client_set_max_elements(la_client_t *c,
                                                uint64_t max_rank_elements);

LA_CLIENT_EXPORT int la_client_set_max_frame(la_client_t *c,
                                             uint32_t max_payload);

/* Changes the largest Trace-Set a subscription, la_client_get or
 * la_client_latest takes (bytes of the set's encoding, >= 1024; default
 * LA_CLIENT_DEFAULT_MAX_SET). The GlobalAgent sends a set in frames of at
 * most its feed.part_bytes, which the client reassembles: a set in
 * reassembly holds about this many bytes, and about as many again while it
 * is decoded. A larger set is not received: la_client_next returns
 * LA_ELIMIT for it (la_client_notice), and so do la_client_get and
 * la_client_latest. Takes effect at once in the client and for queries,
 * and for the subscription's sets at the GlobalAgent (which then does not
 * send such a set at all) with the next la_client_subscribe. Errors:
 * LA_EINVAL. */
LA_CLIENT_EXPORT int la_client_set_max_set(la_client_t *c, uint64_t max_bytes);

/* How many threads parse and check a received set's ranks' traces (every
 * rank's encoding is validated and indexed as the set arrives, before
 * la_client_next, la_client_get or la_client_latest returns it): 1 (the
 * default) parses on the caller's thread; n > 1 also on n - 1 threads
 * started for the set and joined before the call returns (at most 16,
 * and at most one per rank: the ranks of a small set are spread over
 * them too); 0, one per online CPU. The set, and the error of a bad one
 * (the lowest failing rank's), are the same whatever the count. Errors: LA_EINVAL (c NULL, threads over 1024). */
LA_CLIENT_EXPORT int la_client_set_threads(la_client_t *c, unsigned threads);

/* Which weights a set's weight functions (dense, per rank, range sums,
 * METIS, Zoltan) serve: the measured values, or the robust ones with
 * interference (preemption, interrupts) removed (docs/fidelity.md). */
enum {
  LA_WEIGHTS_DEFAULT = 0,  /* robust when every present rank has them */
  LA_WEIGHTS_MEASURED = 1, /* always the measured values */
  LA_WEIGHTS_ROBUST = 2    /* robust; measured for a set lacking them */
};

/* Chooses the weights of the sets c receives from now on (sets already
 * returned keep theirs). Without this call the choice is $LA_WEIGHTS
 * ("measured" or "robust", read when the client was made), else
 * LA_WEIGHTS_DEFAULT. Errors: LA_EINVAL (NULL c or unknown kind). */
LA_CLIENT_EXPORT int la_client_set_weights(la_client_t *c, int kind);

/* Subscription flags. */
enum {
  LA_CLIENT_LATEST = 1, /* send the latest stored set first */
  LA_CLIENT_NO_LIVE = 2 /* no live sets (only the stored one asked for) */
};

/* Subscribes to the Trace-Sets of app_id (NULL or "": every application).
 * flags: LA_CLIENT_LATEST, LA_CLIENT_NO_LIVE. The sets then arrive through
 * la_client_next(). A refusal arrives there too, as the GlobalAgent's error.
 * Errors: LA_EINVAL (bad app id or flags), LA_ETIMEDOUT, LA_EIO (connection
 * lost). */
LA_CLIENT_EXPORT int la_client_subscribe(la_client_t *c, const char *app_id,
                                         int flags);

/* The same, asking first for the stored set of cycle cycle_tag. */
LA_CLIENT_EXPORT int la_client_subscribe_at(la_client_t *c, const char *app_id,
                                            int flags, uint64_t cycle_tag);

/* Waits up to timeout_ms (< 0: forever; 0: only what has already arrived)
 * for the next Trace-Set. On success *out is a new set the caller frees with
 * la_traceset_free(). Errors (*out is NULL):
 *   LA_ETIMEDOUT  nothing complete arrived in time (a partly received set is
 *                 kept for the next call);
 *   LA_EIO        the connection closed or failed (for good: every later call
 *                 returns LA_EIO), and, connected through a list of
 *                 shards, no other shard of it accepted;
 *   LA_EPROTO     a malformed or inconsistent set (skipped: the next call goes
 *                 on with the following one), or a broken stream (for good);
 *   LA_EMSGSIZE   a frame above the maximum (for good);
 *   LA_ELIMIT     a set of the subscription will not arrive: it is over a
 *                 limit (this client's la_client_set_max_set, or the
 *                 GlobalAgent's feed.queue_bytes for a subscriber that
 *                 does not keep up). la_client_error() names the
 *                 application, the cycle, the set's size and the limit;
 *                 la_client_notice() gives them typed. The next call goes
 *                 on with the following set;
 *   any negative code the GlobalAgent sent in an Error message (the
 *                 subscription was refused; la_client_error() quotes it);
 *   LA_ENOMEM.
 * In an event loop: poll la_client_fd() for input, then call la_client_next
 * with timeout 0 until it returns LA_ETIMEDOUT (one read may bring several
 * sets). */
LA_CLIENT_EXPORT int la_client_next(la_client_t *c, int timeout_ms,
                                    la_traceset_t **out);

/* After la_client_next returned LA_ELIMIT: the set that will not arrive.
 * Sets (each pointer may be NULL) *app_id (owned by c, valid until the
 * next la_client_next or la_client_close), *cycle_tag, *set_bytes (its
 * encoded size), *limit_name ("max_set_bytes": this client's bound;
 * "feed.queue_bytes": the GlobalAgent's per-subscriber queue; "store":
 * the GlobalAgent stored the set but could not read it back to publish
 * it, set_bytes and limit 0; owned by c likewise) and *limit (that
 * limit's value, bytes). Errors: LA_EINVAL (c NULL), LA_ENOTFOUND (the
 * last la_client_next did not return LA_ELIMIT). */
LA_CLIENT_EXPORT int la_client_notice(const la_client_t *c,
                                      const char **app_id, uint64_t *cycle_tag,
                                      uint64_t *set_bytes,
                                      const char **limit_name,
                                      uint64_t *limit);

/* Asks for the stored set of app_id at cycle_tag (request/reply within the
 * handle's timeout, renewed by each part of a set sent in parts; sets that
 * arrive for a subscription meanwhile are kept for la_client_next). The
 * set comes in parts of the GlobalAgent's feed.part_bytes, so its size is
 * bounded by la_client_set_max_set, not by the frame limit (a GlobalAgent
 * without parts for queries sends it in one frame). On success *out is a
 * new set to free. Errors: LA_ENOTFOUND (no such set), LA_ELIMIT (the set
 * is over la_client_set_max_set, or more sets asked at once than the
 * GlobalAgent's feed.queue_bytes lets wait: la_client_error() names the
 * limit and its value; the connection stays usable), LA_EINVAL,
 * LA_ETIMEDOUT, LA_EIO, LA_EPROTO, or the status the GlobalAgent
 * answered. */
LA_CLIENT_EXPORT int la_client_get(la_client_t *c, const char *app_id,
                                   uint64_t cycle_tag, la_traceset_t **out);

/* The same for app_id's latest stored set. */
LA_CLIENT_EXPORT int la_client_latest(la_client_t *c, const char *app_id,
                                      la_traceset_t **out);

/* Key/value rows of a listing or a status reply. */
typedef struct la_client_rows la_client_rows_t;

/* Query{what} ("apps", "cycles", ...) for app_id (NULL: none): on success
 * *out holds the reply's rows (free with la_client_rows_free). Errors as
 * la_client_get. */
LA_CLIENT_EXPORT int la_client_list(la_client_t *c, const char *what,
                                    const char *app_id, la_client_rows_t **out);

/* The GlobalAgent's status (StatusRequest; section NULL: all). */
LA_CLIENT_EXPORT int la_client_status(la_client_t *c, const char *section,
                                      la_client_rows_t **out);

LA_CLIENT_EXPORT size_t la_client_rows_count(const la_client_rows_t *r);
/* Key and value of row i (NULL when i is out of range); owned by r. */
LA_CLIENT_EXPORT const char *la_client_rows_key(const la_client_rows_t *r,
                                                size_t i);
LA_CLIENT_EXPORT const char *la_client_rows_value(const la_client_rows_t *r,
                                                  size_t i);
LA_CLIENT_EXPORT void la_client_rows_free(la_client_rows_t *r);

/* The socket, for poll()/select() (readable: call la_client_next with a
 * timeout of 0). Owned by the client: do not read, write or close it. -1 for
 * NULL. */
LA_CLIENT_EXPORT int la_client_fd(const la_client_t *c);

/* 0 while the connection is usable; once the stream is broken (closed,
 * failed, garbage, oversized frame) the error code every later call returns.
 * Tells a skipped bad set (LA_EPROTO, state 0) from a dead stream. */
LA_CLIENT_EXPORT int la_client_state(const la_client_t *c);

/* Detail of the handle's last failure ("" when none); owned by c, valid
 * until the next call on c. */
LA_CLIENT_EXPORT const char *la_client_error(const la_client_t *c);

/* Closes the connection and frees c and every set it still kept. Sets
 * returned earlier stay valid. NULL is fine. */
LA_CLIENT_EXPORT void la_client_close(la_client_t *c);

/* ------------------------------------------------------------- Trace-Sets
 * A set covers ranks 0..nprocs-1; rank r's elements are numbered
 * vtxdist[r]..vtxdist[r+1]-1 globally. A partial set lacks the traces of its
 * missing ranks: their weights and totals are NaN. A missing rank whose
 * element count the GlobalAgent did not know counts 0 elements. */

/* Makes a set from the payload of a TraceSet message (the protobuf bytes,
 * without the frame header), validating it: the message's ranges, every rank
 * either present or listed missing (exactly once), element counts matching
 * rank_elements, and every trace's encoding (parsed once, kept). payload is
 * only read (it may be freed afterwards). On success *out is a new set.
 * Errors: LA_EINVAL (NULL arguments), LA_EPROTO (garbage or an inconsistent
 * set; why, if not NULL, gets the reason), LA_ENOMEM. */
LA_CLIENT_EXPORT int la_traceset_from_bytes(const uint8_t *payload, size_t len,
                                            la_traceset_t **out, char *why,
                                            size_t why_len);

LA_CLIENT_EXPORT void la_traceset_free(la_traceset_t *t);

/* Identity and state. Strings are owned by t ("" when absent). */
LA_CLIENT_EXPORT const char *la_traceset_app_id(const la_traceset_t *t);
LA_CLIENT_EXPORT uint64_t la_traceset_cycle(const la_traceset_t *t);
LA_CLIENT_EXPORT uint32_t la_traceset_nprocs(const la_traceset_t *t);
/* 1 when every rank's trace is present, else 0. */
LA_CLIENT_EXPORT int la_traceset_complete(const la_traceset_t *t);
/* Number of missing ranks; *ranks (if not NULL) points to them, ascending,
 * owned by t (NULL when none). */
LA_CLIENT_EXPORT size_t la_traceset_missing(const la_traceset_t *t,
                                            const uint32_t **ranks);
/* 1 when rank's trace is present, 0 when missing or rank >= nprocs. */
LA_CLIENT_EXPORT int la_traceset_has_rank(const la_traceset_t *t,
                                          uint32_t rank);
/* Why rank is missing, as the GlobalAgent recorded it: the LocalAgent's
 * reason ("cycle skipped by the application", ...) or the GlobalAgent's
 * ("timeout: ...", "rank ended before this cycle", ...). Owned by t. NULL
 * when the rank is present, rank >= nprocs, or no reason is known (an open
 * set still waiting for it, or a GlobalAgent that records none). */
LA_CLIENT_EXPORT const char *la_traceset_missing_reason(const la_traceset_t *t,
                                                        uint32_t rank);
/* Why rank's trace is coarse (its LocalAgent was behind and took the
 * cycle as sums of blocks of elements: exact totals, each block's value
 * spread evenly over its elements): "coarse: the LocalAgent was behind
 * (...)". Owned by t. NULL when the trace is a full one, the rank is
 * missing or rank >= nprocs. */
LA_CLIENT_EXPORT const char *la_traceset_rank_coarse(const la_traceset_t *t,
                                                     uint32_t rank);
/* Sets dropped for this subscriber so far, because it read too slowly (by
 * the GlobalAgent, plus any this client had to drop while a request waited).
 * Cumulative over the connection. */
LA_CLIENT_EXPORT uint64_t la_traceset_dropped(const la_traceset_t *t);
LA_CLIENT_EXPORT const char *la_traceset_metric(const la_traceset_t *t);
LA_CLIENT_EXPORT const char *la_traceset_unit(const la_traceset_t *t);
/* When the set completed or closed (CLOCK_REALTIME ns), 0 if unknown. */
LA_CLIENT_EXPORT uint64_t la_traceset_time_ns(const la_traceset_t *t);

/* Global element count: the sum of every rank's element count. */
LA_CLIENT_EXPORT uint64_t la_traceset_elements(const la_traceset_t *t);
/* Element count of rank (0 when rank >= nprocs). */
LA_CLIENT_EXPORT uint64_t la_traceset_rank_elements(const la_traceset_t *t,
                                                    uint32_t rank);
/* Writes nprocs+1 offsets (ParMETIS vtxdist): vtxdist[0] = 0, vtxdist[r+1] =
 * vtxdist[r] + elements of rank r. Errors: LA_EINVAL. */
LA_CLIENT_EXPORT int la_traceset_vtxdist(const la_traceset_t *t,
                                         uint64_t *vtxdist);

/* Writes nprocs exact per-rank totals: each trace's raw sum (its exact
 * statistics, computed before compaction), NaN for missing ranks. */
LA_CLIENT_EXPORT int la_traceset_rank_totals(const la_traceset_t *t,
                                             double *totals);
/* Exact statistics of rank's raw series. Errors: LA_ENOTFOUND (missing
 * rank), LA_EINVAL. Any output pointer may be NULL. */
LA_CLIENT_EXPORT int la_traceset_rank_stats(const la_traceset_t *t,
                                            uint32_t rank, double *sum,
                                            double *min, double *max);
/* Error the compaction achieved on rank's trace, and the size of its
 * encoding in bytes. Errors: LA_ENOTFOUND (missing rank, or no error
 * recorded: then *bytes is still set), LA_EINVAL. Pointers may be NULL. */
LA_CLIENT_EXPORT int la_traceset_rank_error(const la_traceset_t *t,
                                            uint32_t rank, double *max_abs,
                                            double *rmse, double *cv,
                                            size_t *bytes);
/* Whether rank's trace is a reconstruction (a set stored with
 * representatives, docs/clusters.md): 1 when its values are those of
 * its class's representative *rep times *scale (its exact statistics are
 * its own), 0 when they are its own. Errors: LA_ENOTFOUND (missing rank),
 * LA_EINVAL. Pointers may be NULL. */
LA_CLIENT_EXPORT int la_traceset_rank_reconstructed(const la_traceset_t *t,
                                                    uint32_t rank,
                                                    uint32_t *rep,
                                                    double *scale);
/* max / mean of the present ranks' totals (1.0 when they are all 0).
 * Errors: LA_EINVAL (no rank present, or a negative mean). */
LA_CLIENT_EXPORT int la_traceset_imbalance(const la_traceset_t *t,
                                           double *imbalance);

/* Writes la_traceset_elements() weights: the decoded (reconstructed) value
 * of every element in global order; NaN for missing ranks' elements. */
LA_CLIENT_EXPORT int la_traceset_weights(const la_traceset_t *t, double *w);
/* Writes rank's la_traceset_rank_elements() decoded values (NaN if the rank
 * is missing). Errors: LA_EINVAL (rank >= nprocs). */
LA_CLIENT_EXPORT int la_traceset_rank_weights(const la_traceset_t *t,
                                              uint32_t rank, double *w);
/* Sum of the weights of global elements [first, first+count), which may
 * span ranks, computed from the segments without expanding them. NaN when
 * the range covers elements of a missing rank. Errors: LA_ERANGE (past the
 * last element), LA_EINVAL. */
LA_CLIENT_EXPORT int la_traceset_range_sum(const la_traceset_t *t,
                                           uint64_t first, uint64_t count,
                                           double *sum);
/* Largest finite weight of global elements [first, first+count), which
 * may span ranks, from the segments without expanding them: exactly the
 * largest of the decoded values (la_traceset_weights). NaN, infinities and
 * missing ranks' elements are left out; *max is NaN when no element of the
 * range has a finite weight. *nfinite (may be NULL) gets how many have.
 * Errors: LA_ERANGE (past the last element), LA_EINVAL. */
LA_CLIENT_EXPORT int la_traceset_range_max(const la_traceset_t *t,
                                           uint64_t first, uint64_t count,
                                           double *max, uint64_t *nfinite);

/* METIS vertex weights, la_traceset_elements() of them: w = round(value *
 * scale), at least 1, at most max_weight, with scale = max_weight / (the
 * largest value), so the heaviest element weighs exactly max_weight
 * (e.g. 1000). Elements of missing ranks, and non-finite values, get the
 * weight of the mean of the present finite values; negative values get 1.
 * When no value is positive every weight is 1 and *scale is 0. *scale (if
 * not NULL) receives the scale. max_weight: 1..2^53 (int64) or 1..2^31-1
 * (int32: METIS built with 32-bit idx_t, as Debian's). Keep max_weight times
 * the element count below the range of idx_t: METIS sums weights. Errors:
 * LA_EINVAL (bad arguments, or no finite value present). */
LA_CLIENT_EXPORT int la_traceset_metis_weights(const la_traceset_t *t,
                                               int64_t *vwgt,
                                               int64_t max_weight,
                                               double *scale);
LA_CLIENT_EXPORT int la_traceset_metis_weights32(const la_traceset_t *t,
                                                 int32_t *vwgt,
                                                 int32_t max_weight,
                                                 double *scale);

/* Zoltan object weights (float), la_traceset_elements() of them: the
 * decoded values; missing ranks' elements and non-finite values get the mean
 * of the present finite values; negative values become 0 (Zoltan requires
 * weights >= 0). Errors: LA_EINVAL (bad arguments, or no finite value). */
LA_CLIENT_EXPORT int la_traceset_zoltan_weights(const la_traceset_t *t,
                                                float *w);

/* ------------------------------------------------------------- fidelity
 * Robust weights and interference (docs/fidelity.md). A trace from an older
 * LocalAgent carries none of these; the functions then say LA_ENOTFOUND. */

/* Switches the weights t serves (see LA_WEIGHTS_*). A set made by
 * la_traceset_from_bytes starts with $LA_WEIGHTS's choice, one received by
 * a client with the client's. Changes t: not while other threads read it.
 * Errors: LA_EINVAL, LA_ENOTFOUND (LA_WEIGHTS_ROBUST asked, but a present
 * rank lacks robust weights: t then serves the measured ones). */
LA_CLIENT_EXPORT int la_traceset_set_weights(la_traceset_t *t, int kind);
/* LA_WEIGHTS_ROBUST or LA_WEIGHTS_MEASURED: what t's weights are now. */
LA_CLIENT_EXPORT int la_traceset_weights_kind(const la_traceset_t *t);
/* 1 when every present rank's trace carries robust weights (and one is
 * present), else 0. */
LA_CLIENT_EXPORT int la_traceset_has_robust(const la_traceset_t *t);
/* Exact statistics of rank's robust weights. Errors: LA_ENOTFOUND (missing
 * rank or no robust weights), LA_EINVAL. Pointers may be NULL. */
LA_CLIENT_EXPORT int la_traceset_rank_robust_stats(const la_traceset_t *t,
                                                   uint32_t rank, double *sum,
                                                   double *min, double *max);
/* Writes nprocs exact robust totals, NaN for missing ranks and ranks
 * without robust weights. Errors: LA_EINVAL. */
LA_CLIENT_EXPORT int la_traceset_robust_totals(const la_traceset_t *t,
                                               double *totals);
/* max / mean of the present ranks' robust totals. Errors: LA_ENOTFOUND (a
 * present rank has no robust weights), LA_EINVAL (no rank present). */
LA_CLIENT_EXPORT int la_traceset_robust_imbalance(const la_traceset_t *t,
                                                  double *imbalance);
/* Rank's interference figures for the cycle: the time interference added
 * (sum over elements of max(0, measured - robust), metric unit; NaN when
 * not reported), the element-cycles the probe saw a context switch in (0
 * when not reported) and their measured time (NaN when not reported).
 * Errors: LA_ENOTFOUND (missing rank, or none reported), LA_EINVAL.
 * Pointers may be NULL. */
LA_CLIENT_EXPORT int la_traceset_rank_interference(const la_traceset_t *t,
                                                   uint32_t rank,
                                                   double *interference,
                                                   uint64_t *flagged,
                                                   double *flagged_time);
/* Rank's timer resolution in ns as libla measured it; 0 when unknown. */
LA_CLIENT_EXPORT double la_traceset_rank_timer_res(const la_traceset_t *t,
                                                   uint32_t rank);
/* Rank's interference detection status: "on", "off (reason)", or "" when
 * unknown. Owned by t. */
LA_CLIENT_EXPORT const char *la_traceset_rank_detection(const la_traceset_t *t,
                                                        uint32_t rank);

/* ------------------------------------------------------ one encoded trace
 * For readers of an encoding outside a Trace-Set: the GlobalAgent's store
 * (docs/storage.md: traces.segments, robust.segments) read offline, or a
 * language binding (docs/python.md). */

/* Decodes the encoded compact trace bytes[0..len) (format in
 * docs/compaction.md, "Binary encoding") into out[0..n), where n is the
 * number of points the trace must hold (the rank's element count, the
 * store's traces.n_elements). The values are those la_traceset_rank_weights
 * serves: the same parser, checks and reconstruction. bytes is only read;
 * out belongs to the caller. On success returns 0 and every out[i] is set.
 * Errors (out's content is then unspecified; why, if not NULL, gets the
 * reason, "" on success): LA_EINVAL (bytes NULL with len > 0, or out NULL
 * with n > 0), LA_EPROTO (not a valid encoding: bad magic, malformed
 * record, bad quantum, checksum mismatch, trailing bytes), LA_ETRUNC (ends
 * early), LA_EVERSION (an encoding version this build does not read),
 * LA_ERANGE (a valid encoding of another number of points than n; one
 * declaring more is refused before anything is allocated), LA_ENOMEM.
 * Thread-safe; keeps nothing. */
LA_CLIENT_EXPORT int la_client_decode_trace(const uint8_t *bytes, size_t len,
                                            double *out, uint64_t n, char *why,
                                            size_t why_len);

/* A robust reference with exceptions (docs/history.md), as the store's
 * readers resolve it: the representative's encoded robust weights
 * rep[0..rep_len) (n points) with the cycle's own values at its exceptions
 * exc[0..exc_len) (a HistoryExceptions message, the store's
 * history_exceptions.exceptions) spliced in, encoded losslessly into
 * out[0..*out_len) (in: its capacity; 9 n + 64 bytes always suffice; out:
 * the encoding's length). The same function the GlobalAgent's store uses
 * (compact/la_compact_splice.c). 0, or LA_EINVAL (a buffer NULL), LA_EPROTO
 * (exceptions not valid, a representative that is not an encoding of n
 * points), LA_ERANGE (out too small: *out_len says how much is needed),
 * LA_ENOMEM; why gets the reason. Thread-safe; keeps nothing. */
LA_CLIENT_EXPORT int la_client_splice_trace(const uint8_t *rep,
                                            size_t rep_len, uint64_t n,
                                            const uint8_t *exc,
                                            size_t exc_len, uint8_t *out,
                                            size_t *out_len, char *why,
                                            size_t why_len);

/* A member of a set stored by representatives (docs/clusters.md), as the
 * store's readers rebuild it: the representative's encoding rep[0..rep_len)
 * (n points) decoded, times scale, and encoded again record for record
 * with the representative's records (la_trace_scaled, the function the
 * GlobalAgent's store uses: the same bytes as its reader serves), into
 * out[0..*out_len) (in: its capacity; out: the encoding's length); *mode
 * (when mode is not NULL) gets the encoding's LA__COMPACT_MODE. 0, or
 * LA_EINVAL (a buffer NULL, scale not finite), LA_EPROTO and the other
 * codes of la_client_decode_trace (rep not an encoding of n points),
 * LA_ERANGE (out too small: *out_len says how much is needed), LA_ENOMEM;
 * why gets the reason. Thread-safe; keeps nothing. */
LA_CLIENT_EXPORT int la_client_scale_trace(const uint8_t *rep, size_t rep_len,
                                           uint64_t n, double scale,
                                           uint8_t *out, size_t *out_len,
                                           int *mode, char *why,
                                           size_t why_len);
/* The same with a representative decoded once for all its members:
 * la_client_rep_open parses and decodes rep (n points) into *out (0, or
 * the codes of la_client_decode_trace, LA_EINVAL, LA_ENOMEM; why gets the
 * reason); la_client_rep_scale writes a member of scale into out as
 * la_client_scale_trace does (the same bytes and codes); one thread at a
 * time per representative; la_client_rep_close frees it (NULL is fine). */
typedef struct la_client_rep la_client_rep_t;
LA_CLIENT_EXPORT int la_client_rep_open(const uint8_t *rep, size_t rep_len,
                                        uint64_t n, la_client_rep_t **out,
                                        char *why, size_t why_len);
LA_CLIENT_EXPORT int la_client_rep_scale(la_client_rep_t *rep, double scale,
                                         uint8_t *out, size_t *out_len,
                                         int *mode, char *why,
                                         size_t why_len);
LA_CLIENT_EXPORT void la_client_rep_close(la_client_rep_t *rep);

/* ------------------------------------------------------------- channels
 * An application that declared channels (LA_channel: one per kernel, say
 * "stress", "eos") sends, per rank and cycle, the per-element sum over its
 * channels, which every function above serves, and each channel's own
 * series with its exact statistics and robust weights. */

/* Number of channel names of the set (its lowest rank's declaration, in
 * channel order); 0 when the application declared none. */
LA_CLIENT_EXPORT size_t la_traceset_channels(const la_traceset_t *t);
/* Name of channel ch, owned by t; NULL when ch is out of range. */
LA_CLIENT_EXPORT const char *la_traceset_channel_name(const la_traceset_t *t,
                                                      size_t ch);
/* The id of the channel called name, or LA_ENOTFOUND (LA_EINVAL for NULL
 * arguments). */
LA_CLIENT_EXPORT int la_traceset_channel_find(const la_traceset_t *t,
                                              const char *name);
/* A new set (free with la_traceset_free) that serves channel ch of t: the
 * same cycle and ranks, whose weights, totals, statistics, errors and
 * robust weights are channel ch's (interference figures are left out: they
 * are the sum's). A present rank whose trace lacks that channel is missing
 * in it, with the reason. The weights kind follows t's. An application
 * with one channel name has no separate series: its channel 0 is the set.
 * Errors: LA_EINVAL, LA_ENOTFOUND (no such channel), LA_ENOMEM, LA_EPROTO
 * (the channel's series do not decode). */
LA_CLIENT_EXPORT int la_traceset_channel(const la_traceset_t *t, size_t ch,
                                         la_traceset_t **out);
/* Writes rank's la_traceset_rank_elements() values of channel ch (decoded,
 * measured or robust as t serves them); NaN when the rank is missing or
 * lacks the channel. Errors: LA_EINVAL, LA_ENOTFOUND (no such channel),
 * LA_ENOMEM, LA_EPROTO. */
LA_CLIENT_EXPORT int la_traceset_channel_rank_weights(const la_traceset_t *t,
                                                      size_t ch,
                                                      uint32_t rank,
                                                      double *w);

/* ---------------------------------------------- the application's numbering
 * The weights above are indexed by the concatenated numbering (vtxdist).
 * An application that gave its own global ids (LA_setGlobalIds) or a
 * grid's place in the global grid (LA_setGridOrigin) is also numbered its
 * way: la_client_set_ids gives the id of every element of a set, so that
 * weight w[i] belongs to the application's element ids[i]
 * (docs/mesh-views.md). */
/* Fetches rank's global ids from the GlobalAgent (request/reply, page by
 * page) into ids, which has room for n = the rank's element count.
 * Errors: LA_ENOTFOUND (the rank gave no ids, or they are not all stored
 * yet; la_client_error says how many are), LA_EINVAL (bad arguments, or n
 * is not the rank's element count), LA_ETIMEDOUT, LA_EIO, LA_EPROTO. */
LA_CLIENT_EXPORT int la_client_rank_ids(la_client_t *c, const char *app_id,
                                        uint32_t rank, int64_t *ids,
                                        uint64_t n);
/* Writes la_traceset_elements(t) ids, in the set's element order (ranks in
 * order, as la_traceset_weights): the application's global ids for ranks
 * that gave them, else for a grid rank with an origin its global cell index
 * gi + gnx*(gj + gny*gk), else the concatenated index vtxdist[r] + e.
 * *n_app (may be NULL) = ranks numbered by their own ids: when it is
 * nprocs, ids are the application's throughout. Asks the GlobalAgent once
 * per rank (la_client_rank_ids). Errors: LA_EINVAL, and those of
 * la_client_rank_ids but LA_ENOTFOUND. */
LA_CLIENT_EXPORT int la_client_set_ids(la_client_t *c, const la_traceset_t *t,
                                       int64_t *ids, uint32_t *n_app);
/* Rank's grid (LA_registerGrid): its dimensions nx, ny, nz, its first
 * cell's (i, j, k) in the global grid and the global grid's dimensions, 3
 * each (any pointer may be NULL). When the application gave no origin,
 * origin is 0,0,0 and global the rank's own dimensions. Rank's element e
 * is its cell (e % nx, e / nx % ny, e / (nx*ny)). Errors: LA_ENOTFOUND
 * (not a grid rank, or rank >= nprocs), LA_EINVAL. */
LA_CLIENT_EXPORT int la_traceset_rank_grid(const la_traceset_t *t,
                                           uint32_t rank, uint64_t *dims,
                                           uint64_t *origin, uint64_t *global);

#ifdef __cplusplus
}
#endif
#endif /* LA_CLIENT_H */
