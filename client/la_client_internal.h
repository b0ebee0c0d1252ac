/* SPDX-License-Identifier: BSD-3-Clause */
/* la_client_internal.h: libla_client's private interface, for the
 * GlobalAgent, lactl and the client's own files. Not installed: it exposes
 * protobuf-c types (La__TraceSet) and the handles' layout. Nothing here is
 * exported from libla_client.so; link libla_client.a to use it.
 */
#ifndef LA_CLIENT_INTERNAL_H
#define LA_CLIENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "la_client.h"
#include "la_codec.h"
#include "la_compact.h"

#define LA__CLIENT_ERR_LEN 256

/* A received Trace-Set: the validated message it came from (owned) and, per
 * rank, its global offset and its traces' indexes: opened by the parse
 * and kept, or, for a set made for a visitor (la__rank_visit_t), opened at
 * their first use (la__traceset_index: every encoding was checked when the
 * set was made, so an open can fail only for memory) and kept; a pass over
 * every rank that should keep none takes them with la__traceset_rank_open.
 * Immutable once built, except for the weights choice (robust:
 * la_traceset_set_weights) and the indexes opened, which any number of
 * threads may open at once (the first one kept, atomically). */
struct la_traceset {
  La__TraceSet *msg; /* owned; freed with la_msg_free */
  uint32_t nprocs;
  uint64_t *vtx;                  /* nprocs + 1 global offsets */
  la_trace_t *_Atomic *trace;     /* per rank, measured; NULL: not opened */
  la_trace_t *_Atomic *rob;       /* per rank, robust; NULL: not opened */
  uint32_t n_rob;                 /* present ranks carrying robust weights */
  int robust;                     /* the weights served: rob (1), trace (0) */
  const La__CompactTrace **ct;    /* per rank, into msg; NULL when missing */
  uint32_t *missing;              /* ascending; NULL when none */
  size_t n_missing;
  uint64_t dropped; /* msg->dropped + the client's own drops */
  void *aux;                      /* a visitor's (la__rank_visit_t) */
  void (*aux_free)(void *aux);    /* frees aux with the set */
};

/* What a client's user takes from each rank's traces while a received set
 * is parsed, with their indexes open (then closed: a set made for a
 * visitor keeps none, each opened again at its first use):
 * begin, before any rank is parsed (the set's counts, offsets and
 * messages are there), gives the set's state (NULL: nothing for this
 * set), which the set keeps (la__traceset_aux) and frees with free; rank,
 * on the parse's threads in any order, once per present rank of a set
 * that passes, with its measured and robust traces (rob NULL when none).
 * A set refused is freed with its state (not every rank visited). */
typedef struct la__rank_visit {
  void *(*begin)(void *ctx, const la_traceset_t *t);
  void (*rank)(void *state, const la_traceset_t *t, uint32_t r,
               const la_trace_t *tr, const la_trace_t *rob);
  void (*free)(void *state);
  void *ctx;
} la__rank_visit_t;

/* The state a visitor's begin gave t, or NULL. */
void *la__traceset_aux(const la_traceset_t *t);

/* Sets c's visitor of the ranks of the sets it receives (NULL: none, the
 * sets keep their indexes from the parse; v is the caller's and must
 * outlive c). */
void la__client_set_visit(la_client_t *c, const la__rank_visit_t *v);

struct la_client_rows {
  size_t n;
  char **key, **value; /* n each, owned */
};

/* What a subscription delivers in order: a set, or the notice of one that
 * will not arrive (exactly one of them is set); or the set answering a
 * Query in parts (query set; set NULL when it failed). */
typedef struct la__client_item {
  la_traceset_t *set;
  La__SetNotice *notice; /* freed with la_msg_free */
  int query;
} la__client_item_t;

struct la_client {
  int fd;
  int weights;    /* LA_WEIGHTS_*: la_client_set_weights, else $LA_WEIGHTS */
  int timeout_ms; /* sends and request/reply calls */
  int dead;       /* sticky error: the stream is unusable */
  int got_data;   /* something was received */
  la_frame_reader_t rd;
  /* sets that arrived while a request waited for its reply: a ring; the
   * notices that came meanwhile: another (a notice that finds it full is
   * dropped: its set is counted in the next set's dropped anyway); the
   * seq of each says the order across both */
  la_traceset_t *pending[LA_CLIENT_MAX_PENDING];
  uint64_t p_seq[LA_CLIENT_MAX_PENDING];
  size_t p_head, p_count;
  La__SetNotice *notices[LA_CLIENT_MAX_PENDING];
  uint64_t n_seq[LA_CLIENT_MAX_PENDING];
  size_t n_head, n_count;
  uint64_t kept; /* sets and notices kept so far */
  uint64_t local_dropped; /* sets this client dropped itself */
  uint64_t max_rank_elements; /* cap on a received set's rank */
  uint64_t max_set;           /* la_client_set_max_set */
  unsigned threads;           /* la_client_set_threads (0: the CPUs) */
  const la__rank_visit_t *visit; /* la__client_set_visit */
  /* a set arriving in parts (TraceSetHead, then TraceSetPart) */
  struct {
    int active;   /* a head came, not every part yet */
    int skip;     /* over max_set: its parts are read and dropped */
    int query;    /* it answers a Query (TraceSetHead.query) */
    uint8_t *buf; /* set_bytes (NULL when skipping) */
    uint64_t bytes, have, dropped;
    uint32_t parts, next;
  } in;
  La__SetNotice *notice; /* what the last LA_ELIMIT was about */
  /* la_client_connect's addresses (GlobalAgent shards), NULL for an
   * adopted descriptor: a lost connection is made again to the next one
   * that answers, and a subscription sent again */
  char *addrs;
  int n_addrs, cur;
  int sub; /* subscribed (la_client_subscribe): sub_app, sub_flags */
  char sub_app[LA_MAX_ID_LEN + 1];
  int sub_flags;
  uint64_t reconnects;
  char err[LA__CLIENT_ERR_LEN];
};

/* Makes a set from a message built in memory: copies it (m is only read),
 * then validates and opens it as la_traceset_from_bytes does. Errors as
 * there. */
int la_traceset_from_message(const La__TraceSet *m, la_traceset_t **out,
                             char *why, size_t why_len);

/* Same, taking ownership of m (a message decoded by la_msg_decode, which is
 * freed on failure too). Does not re-run la_msg_validate unless validate. */
int la__traceset_adopt(La__TraceSet *m, int validate, la_traceset_t **out,
                       char *why, size_t why_len);

/* Same, refusing a set with a rank of more than max_rank_elements elements
 * (declared in rank_elements or a trace's n_elements) before parsing any
 * trace; la__traceset_adopt uses LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS. */
int la__traceset_adopt_max(La__TraceSet *m, int validate,
                           uint64_t max_rank_elements, la_traceset_t **out,
                           char *why, size_t why_len);

/* Same, parsing the ranks' traces on up to threads threads (0: the online
 * CPUs); the set and any error are the same as on one (the error is the
 * lowest failing rank's). la__traceset_adopt_max parses on one. visit
 * (may be NULL) visits each rank as it is parsed (la__rank_visit_t). */
int la__traceset_adopt_threads(La__TraceSet *m, int validate,
                               uint64_t max_rank_elements, unsigned threads,
                               const la__rank_visit_t *visit,
                               la_traceset_t **out, char *why,
                               size_t why_len);

/* The weights choice of $LA_WEIGHTS: "measured" gives LA_WEIGHTS_MEASURED,
 * "robust" LA_WEIGHTS_ROBUST, anything else (or unset)
 * LA_WEIGHTS_DEFAULT. */
int la__weights_env(void);

/* Points t's weight functions at the robust weights when kind is not
 * LA_WEIGHTS_MEASURED and every present rank carries them, else at the
 * measured ones. Returns 1 when the robust weights are chosen, else 0. */
int la__traceset_choose(la_traceset_t *t, int kind);

/* max / mean of the present ranks' exact totals, measured (robust 0) or
 * robust (1). Errors: LA_EINVAL (no rank present, negative mean),
 * LA_ENOTFOUND (robust asked, and a present rank has none). */
int la__traceset_imbalance_of(const la_traceset_t *t, int robust,
                              double *imbalance);

/* The message a set was made from (owned by t). */
const La__TraceSet *la__traceset_message(const la_traceset_t *t);

/* Rank's measured trace, its index opened and kept (la__traceset_index);
 * NULL when the rank is missing, out of range, or there was no memory for
 * the index. Owned by t. */
const la_trace_t *la__traceset_trace(const la_traceset_t *t, uint32_t rank);
/* Rank's measured (rob 0) or robust (1) trace, its index opened at the
 * first call and kept in t (thread-safe): *out, or NULL when the rank has
 * no such trace. 0 or LA_ENOMEM. */
int la__traceset_index(const la_traceset_t *t, uint32_t rank, int rob,
                       const la_trace_t **out);
/* The trace of rank's weights (la__traceset_index of the chosen kind) for
 * one pass over it that should not keep its index (a map of every rank):
 * t's own when it was opened, else one opened for the caller alone, which
 * *own holds (NULL otherwise) for the caller to la_trace_close. *tr NULL:
 * the rank is missing (or rank out of range). 0 or LA_ENOMEM. */
int la__traceset_rank_open(const la_traceset_t *t, uint32_t rank,
                           const la_trace_t **tr, la_trace_t **own);
/* la__traceset_rank_range_sum's sum over [first, first+count) of tr (the
 * trace of a rank of n elements; NULL: missing, NaN), from cursor c. */
int la__trace_rank_range_sum(const la_trace_t *tr, uint64_t n,
                             la_trace_cursor_t *c, uint64_t first,
                             uint64_t count, double *sum);
/* la_traceset_range_sum() of rank's elements [first, first+count)
 * (counted from the rank's first), the same sum to the bit, its records
 * searched from c on (la_trace_range_sum_at: zeroed before the rank's
 * first range, then its ranges in rising order; NULL: from anywhere). NaN
 * for a missing rank. 0, LA_EINVAL or LA_ERANGE. */
int la__traceset_rank_range_sum(const la_traceset_t *t, uint32_t rank,
                                la_trace_cursor_t *c, uint64_t first,
                                uint64_t count, double *sum);
const La__CompactTrace *la__traceset_compact(const la_traceset_t *t,
                                             uint32_t rank);

/* Sends msg (of frame type type) and waits, within the handle's timeout, for
 * the first reply that is not a TraceSet (TraceSets that arrive meanwhile are
 * kept for la_client_next). On success *reply (free with la_msg_free) and
 * *reply_type are set. An Error reply returns its code (or LA_EPROTO when it
 * is not a negative LA_E* code) with the message in la_client_error(). */
int la__client_request(la_client_t *c, uint16_t type,
                       const ProtobufCMessage *msg, uint16_t *reply_type,
                       ProtobufCMessage **reply);

/* Sends Query q (with feed_protocol = LA_FEED_PROTOCOL_VERSION; q is only
 * read) and waits for its QueryReply, as la__client_request. On success
 * *out is the decoded, validated reply with status 0 (free with
 * la_msg_free(&(*out)->base)). Errors: those of la__client_request,
 * LA_EPROTO (another reply), LA_EVERSION (a reply of another feed
 * protocol), or the reply's negative status, each with its detail in
 * la_client_error(). */
int la__client_query(la_client_t *c, const La__Query *q, La__QueryReply **out);

/* After a QueryReply announced a set in parts (set_bytes): waits for that
 * set (TraceSetHead.query and its parts), within the handle's timeout
 * renewed by each of its parts; subscription sets and notices that come
 * meanwhile are kept for la_client_next. On success *out is the set (its
 * weights chosen as for la_client_next's). Errors: as la__client_request,
 * LA_ELIMIT (the set is over la_client_set_max_set: its parts are read
 * and dropped by later calls, the connection stays usable), LA_EPROTO (a
 * bad set or parts), LA_ENOMEM; the detail in la_client_error(). */
int la__client_query_set(la_client_t *c, la_traceset_t **out);

/* Formats the handle's error detail; returns rc. */
int la__client_fail(la_client_t *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------- numbering */

/* How la__rank_numbering numbered a rank. */
enum { LA_NUMBERING_CONCAT = 0, LA_NUMBERING_APP = 1, LA_NUMBERING_GRID = 2 };

/* Asks q and points *r at the reply with status 0, keeping what must be
 * freed in *hold; called again with q NULL, frees *hold. Returns 0 or an
 * LA_E* code (its detail is the asker's to keep). */
typedef int (*la__ids_ask_t)(void *ctx, La__Query *q, const La__QueryReply **r,
                             void **hold);

/* Checks one "elementids" reply r for (app_id, rank, first) of a rank of n
 * elements and copies its ids to ids[first..]. Returns the count copied,
 * or LA_EPROTO (another page), LA_EINVAL (the rank has another element
 * count) with the reason in why. */
int la__ids_page(const La__QueryReply *r, const char *app_id, uint32_t rank,
                 uint64_t first, uint64_t n, int64_t *ids, char *why,
                 size_t len);

/* Every page of rank's ids through ask into ids (n of them). Returns 0, the
 * asker's error, or la__ids_page's (reason in why). */
int la__ids_fetch(la__ids_ask_t ask, void *ctx, const char *app_id,
                  uint32_t rank, int64_t *ids, uint64_t n, char *why,
                  size_t len);

/* Every rank's ids of set t through ask into ids (la_client_set_ids'
 * work, for any source): one per element in set order, the application's
 * where its rank gave them, else numbered by la__rank_numbering. *n_app
 * (if not NULL) counts the ranks numbered by the application. Returns 0,
 * the asker's error, or la__ids_page's (reason in why). */
int la__set_ids_fetch(la__ids_ask_t ask, void *ctx, const la_traceset_t *t,
                      int64_t *ids, uint32_t *n_app, char *why, size_t len);

/* Rank's numbering: ids[e] (if ids is not NULL) = app_ids[e] when given,
 * else the global cell index of a grid rank with an origin, else the
 * concatenated index; ijk[e] (if not NULL) = the element's global (i,j,k)
 * for a grid rank, 0,0,0 otherwise. app_ids may equal ids. Returns
 * LA_NUMBERING_APP, _GRID or _CONCAT: which numbering ids got. */
int la__rank_numbering(const la_traceset_t *t, uint32_t rank,
                       const int64_t *app_ids, int64_t *ids,
                       uint64_t (*ijk)[3]);

/* One line of a partition file (partition_line.c): 0 for a comment or a
 * blank line (a comment's "; parts K", 1 <= K <= LA__PARTITION_MAX_RANKS,
 * sets *parts), 1 for "ID RANK" (an id >= 0 into *id, a rank below
 * LA__PARTITION_MAX_RANKS into *rank), -1 for anything else. */
#define LA__PARTITION_MAX_RANKS (1u << 24)
int la__partition_line(const char *line, int64_t *id, uint32_t *rank,
                       uint32_t *parts);

/* The halo of a partition of a structured grid (halo.c): for part p, its
 * neighbour parts nbr[off[p] .. off[p+1]) (ascending) and, for each, how
 * many of p's cells share a face with one of that neighbour's cells. */
typedef struct la__halo {
  uint32_t nparts;
  uint64_t *off;     /* nparts + 1 offsets into nbr and cells */
  uint32_t *nbr;     /* neighbour parts */
  uint64_t *cells;   /* p's cells facing that neighbour */
  uint64_t boundary; /* cells facing at least one other part */
  uint64_t sent;     /* sum of cells: the cell values one exchange sends */
  uint64_t nbr_max;  /* the most neighbour parts of a part */
  double nbr_mean;   /* neighbour parts per part */
} la__halo_t;

/* Builds h for n cells, their global indices cell[] (i + g0*(j + g1*k),
 * ascending, distinct) of a g0*g1*g2 grid and their parts part[] (each <
 * nparts). 0 or LA_ENOMEM. Free with la__halo_free. */
int la__halo_build(const uint64_t *cell, const uint32_t *part, uint64_t n,
                   const uint64_t g[3], uint32_t nparts, la__halo_t *h);
void la__halo_free(la__halo_t *h);

#endif /* LA_CLIENT_INTERNAL_H */
