/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps.h: storing a closed Trace-Set by representatives
 * (store.representatives, docs/clusters.md).
 *
 * la_store_representatives() groups the ranks of a stored set into
 * behaviour classes (la_clusters.h) and keeps, of each class, only the
 * representative's segments: every other member's traces row is removed,
 * its rank, exact total and stamps packed into one rep_classes row
 * per class (store_reps_pack.h; its scale is its exact total over the
 * representative's decoded total; its min and max read back as the
 * representative's times its scale, within the class's stated bound); a
 * member with a robust row keeps its traces row, emptied, and a
 * rep_members row says its class,
 * representative and scale. Readers (la_store_load_set,
 * hence the feed, lactl and export) get such a member as the
 * representative's decoded values times the scale, compacted again with
 * the representative's parameters, flagged by rep_rank / rep_scale /
 * rep_class in the CompactTrace (la__store_reps_resolve, called by
 * store_load.c, with a cache per set read: each representative decoded
 * once). Outliers, ranks of several channels and traces already
 * kept as a history reference stay as they are. A member's robust
 * series is stored by its representative's too (rep_robust: its robust
 * scale) when both have one and their robust signatures are within tol;
 * otherwise it stays the rank's own.
 */
#ifndef LA_STORE_REPS_H
#define LA_STORE_REPS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct la_store_reps {
  size_t traces;    /* traces of the set grouped (those of one channel
                       with segments of their own) */
  size_t classes;   /* behaviour classes found */
  size_t outliers;  /* ranks in no class, kept in full */
  size_t replaced;  /* members whose segments were replaced */
  size_t packed;    /* of those, members whose traces rows went into a
                       rep_classes row (no robust row of their own) */
  uint64_t packed_bytes; /* those rows' members BLOB bytes */
  /* the largest class's bound on its packed members' min and max read
   * back (store_reps_pack.h: la__store_pack_minmax_err of each against
   * its representative's times its scale) */
  double minmax_bound;
  uint64_t bytes_before, bytes_after; /* their segment bytes */
  size_t robust_replaced; /* members whose robust segments were replaced */
  uint64_t robust_bytes_before, robust_bytes_after;
  size_t signatures_known; /* of traces, those whose signature was given
                              (la_store_representatives_known), not taken
                              from their stored bytes */
  size_t robust_series;           /* robust series with segments read */
  size_t robust_signatures_known; /* of those, signatures given */
} la_store_reps_t;

/* A trace's signature taken before it was stored (the GlobalAgent's
 * ingest check: la_trace_check_totals_slices, la_clusters_shares), kept
 * until its set closes. */
#define LA_STORE_REP_BUCKETS 16 /* la_cluster_params_default's buckets */
typedef struct la_store_rep_sig {
  double share[LA_STORE_REP_BUCKETS]; /* its signature */
  double dtot;    /* its decoded total; NaN: no shape */
  uint64_t count; /* its points; 0: no signature known */
  uint64_t len;   /* bytes of the encoding it was taken from */
  /* the same for its robust weights (rcount 0: none known) */
  double rshare[LA_STORE_REP_BUCKETS];
  double rdtot;
  uint64_t rcount, rlen;
} la_store_rep_sig_t;

/* Stores the set (app_id, cycle_tag) by representatives, grouping with
 * signature distance tol (la_cluster_params_t.tol). A set already stored
 * so, or of an application whose nprocs is unknown, is left alone (*out
 * all 0). In the open batch, or a transaction of its own. out may be
 * NULL. Returns 0, LA_ENOTFOUND (unknown application), LA_EINVAL,
 * LA_ENOMEM, LA_EIO (la_store_errmsg says why). */
int la_store_representatives(la_store_t *s, const char *app_id,
                             uint64_t cycle_tag, double tol,
                             la_store_reps_t *out);
/* The same, with the signatures of the set's ranks taken beforehand:
 * known[r] (r < n_known; count 0: none) stands for rank r's stored
 * trace when it is of the same element count and encoding bytes, and
 * (rcount, rlen) for its stored robust weights likewise; the others' are
 * taken from their stored bytes. known NULL: none. */
int la_store_representatives_known(la_store_t *s, const char *app_id,
                                   uint64_t cycle_tag, double tol,
                                   const la_store_rep_sig_t *known,
                                   uint32_t n_known, la_store_reps_t *out);

/* What a set read keeps between its members (store_reps_load.c): the
 * set's rep_members rows and each representative's decoded values. */
typedef struct la_store_reps_cache la_store_reps_cache_t;
la_store_reps_cache_t *la__store_reps_cache_new(void); /* NULL: no memory */
void la__store_reps_cache_free(la_store_reps_cache_t *c); /* NULL is fine */

/* For store_load.c: when t (loaded with empty segments) is a member of a
 * class, fills its segments with its representative's scaled values, its
 * mode, rep_rank, rep_scale and rep_class, drops its error (unknown), and
 * returns 1; 0 when it is no member (a history reference, perhaps);
 * LA_EIO (corrupt or unreadable representative), LA_ENOMEM. cache: the
 * set read's (la__store_reps_cache_new; it may serve several sets, one
 * after the other, reading each set's rows again). */
int la__store_reps_resolve(la_store_t *s, La__CompactTrace *t,
                           la_store_reps_cache_t *cache);
/* The same for t's robust series (loaded with empty robust segments):
 * its representative's robust values times its rep_robust scale; 1, or 0
 * when it has no rep_robust row (a history reference, perhaps), LA_EIO,
 * LA_ENOMEM. Its robust statistics are its own row's. */
int la__store_reps_resolve_robust(la_store_t *s, La__CompactTrace *t,
                                  la_store_reps_cache_t *cache);

/* Members packed into rep_classes rows: no traces row of their own.
 * la__store_reps_packed_set: the set's rows into cache, *n its packed
 * members; la__store_reps_packed_next: the next of them (increasing
 * rank) from *cur (0 at first): 1 with *rank, 0 past the last;
 * la__store_reps_packed_trace: rank's trace (one of those) as
 * la__store_reps_resolve gives a member, its exact statistics and stamps
 * the packed row's, into *out (freed with the set even on failure).
 * Return 0, LA_EIO, LA_ENOMEM. */
int la__store_reps_packed_set(la_store_t *s, const char *app_id,
                              uint64_t cycle_tag, la_store_reps_cache_t *cache,
                              size_t *n);
int la__store_reps_packed_next(const la_store_reps_cache_t *cache,
                               size_t *cur, uint32_t *rank);
int la__store_reps_packed_trace(la_store_t *s, la_store_reps_cache_t *cache,
                                uint32_t rank, La__CompactTrace **out);
/* A packed member's stamp (la_store_trace_stamp): 0, LA_ENOTFOUND (no
 * packed member of that key), LA_EIO, LA_ENOMEM. */
int la__store_reps_packed_stamp(la_store_t *s, const char *app_id,
                                uint64_t cycle_tag, uint32_t rank,
                                la_store_stamp_t *out);
/* 1 when (app_id, cycle_tag, rank) is a packed member, 0 when not, or
 * LA_EIO, LA_ENOMEM. */
int la__store_reps_is_packed(la_store_t *s, const char *app_id,
                             uint64_t cycle_tag, uint32_t rank);
/* The set's packed members below nprocs merged into the increasing list
 * *ranks (*n of them, malloc'd or NULL), each once: 0, LA_EIO,
 * LA_ENOMEM. */
int la__store_reps_packed_ranks(la_store_t *s, const char *app_id,
                                uint64_t cycle_tag, uint32_t nprocs,
                                uint32_t **ranks, size_t *n);

#endif
