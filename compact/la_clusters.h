/* SPDX-License-Identifier: BSD-3-Clause */
/* la_clusters.h: behaviour classes of the ranks of one Trace-Set
 * (docs/clusters.md), computed from the compact encodings.
 *
 * Most ranks of a large mesh code behave alike: their per-element profiles
 * differ only by a factor (more or fewer elements of the same kind, a
 * faster or slower node). la_clusters_find() groups the ranks whose
 * profiles have the same shape: each trace is summarised by the shares of
 * its total that fall into B equal slices of its elements (its signature,
 * B range sums computed in closed form from the segments, nothing
 * decoded), and two ranks are alike when they have the same element
 * count and their signatures are within an L1 distance tol. Each class
 * has a representative (the member nearest the class's mean signature)
 * and for every member a scale: its total over the representative's
 * decoded total, so the representative's values times the scale sum to
 * the member's total. Ranks that fit no class of at least min_size
 * members (or whose total is not a positive number) are outliers.
 *
 * Deterministic: the same traces give the same classes, representatives
 * and outliers (ranks are visited in increasing order, ties go to the
 * lower rank). Pure C + libm, like the rest of compact/; no state.
 */
#ifndef LA_CLUSTERS_H
#define LA_CLUSTERS_H

#include <stddef.h>
#include <stdint.h>

#include "la_compact.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LA_CLUSTERS_MAX_BUCKETS 64

typedef struct la_cluster_params {
  double tol;           /* L1 distance of two signatures (shares summing to
                           1; 0..2) below which ranks are alike; 0.05 */
  unsigned buckets;     /* signature length B, 1..LA_CLUSTERS_MAX_BUCKETS;
                           16 */
  uint32_t min_size;    /* members a class needs; smaller ones are
                           outliers; 2 */
  uint32_t max_classes; /* classes founded at most; a rank alike to none
                           when there are that many is an outlier; 256 */
} la_cluster_params_t;

typedef struct la_cluster_class {
  uint32_t rep;         /* the representative rank */
  uint32_t n;           /* members, the representative among them */
  uint32_t *members;    /* n ranks, increasing */
  double *scale;        /* n: member total / representative decoded total */
  double scale_min, scale_max;
  double dist_max;      /* largest signature distance of a member to rep */
  uint64_t elements;    /* element count of every member */
} la_cluster_class_t;

typedef struct la_clusters {
  size_t n_classes;
  la_cluster_class_t *classes; /* largest first, then by representative */
  size_t n_outliers;
  uint32_t *outliers;          /* increasing */
  size_t n_traces;             /* present traces considered */
} la_clusters_t;

/* Fills *p with the defaults above. */
void la_cluster_params_default(la_cluster_params_t *p);

/* Groups the present traces tr[0..n) (tr[r] is rank r's parsed encoding,
 * NULL when absent). totals (may be NULL) are the ranks' exact totals
 * (the raw sums that travel with a trace), used for the scales; without
 * them the decoded totals are. p NULL: the defaults. On success returns 0
 * and fills *out (free with la_clusters_free); every present rank is in
 * exactly one class or among the outliers. Errors: LA_EINVAL (tr or out
 * NULL, parameters out of range, with why), LA_ENOMEM; *out is then
 * zeroed. Cost: B range sums per trace and B operations per trace and
 * class (docs/clusters.md measures it). */
int la_clusters_find(const la_trace_t *const *tr, const double *totals,
                     uint32_t n, const la_cluster_params_t *p,
                     la_clusters_t *out, char *why, size_t why_len);

/* The two steps of la_clusters_find(), for callers that parse one trace
 * at a time (the store: a parsed index is far larger than its encoding,
 * and is still in the cache right after parsing):
 * la_clusters_signature() writes trace t's signature into sig[0..buckets)
 * and its decoded total into *total, and returns 1, or 0 (with *total NaN)
 * when it has no shape (t NULL, no points, total not a positive finite
 * number, buckets out of range). la_clusters_group() groups n ranks from
 * their signatures sig[r * p->buckets ..], decoded totals dtot[r] (NaN: no
 * shape) and element counts count[r] (0: rank absent), with the exact
 * totals as la_clusters_find() takes them; same results and errors. */
int la_clusters_signature(const la_trace_t *t, unsigned buckets, double *sig,
                          double *total);
/* As la_clusters_signature(), from the encoding bytes[0..len) itself,
 * without building its index (la_trace_slice_sums(): one checking pass
 * for a lossy trace): *count gets its point count. Returns 1 (a shape),
 * 0 (none: *total NaN), or the error la_trace_open_max() would return
 * for a bad encoding, LA_EINVAL for buckets out of range (why says). */
int la_clusters_signature_bytes(const uint8_t *bytes, size_t len,
                                uint64_t max_points, unsigned buckets,
                                double *sig, double *total, uint64_t *count,
                                char *why, size_t why_len);
/* The signature from B slice sums sig[0..buckets) (la_trace_slice_sums,
 * la_trace_check_totals_slices), in place: the shares, and the decoded
 * total into *total; 1, or 0 when it has no shape (*total NaN: the total
 * is not a positive finite number, buckets out of range). */
int la_clusters_shares(double *sig, unsigned buckets, double *total);
int la_clusters_group(const double *sig, const double *dtot,
                      const uint64_t *count, const double *totals, uint32_t n,
                      const la_cluster_params_t *p, la_clusters_t *out,
                      char *why, size_t why_len);

/* Frees what la_clusters_find() allocated and zeroes *c. NULL is fine. */
void la_clusters_free(la_clusters_t *c);

/* The class of rank in c (its index in c->classes) and its member index
 * into *member (may be NULL); -1 when rank is an outlier or absent. */
long la_clusters_class_of(const la_clusters_t *c, uint32_t rank,
                          uint32_t *member);

#ifdef __cplusplus
}
#endif
#endif /* LA_CLUSTERS_H */
