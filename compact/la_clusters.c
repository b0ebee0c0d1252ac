/* SPDX-License-Identifier: BSD-3-Clause */
/* la_clusters.c: behaviour classes of a Trace-Set's ranks from their
 * compact encodings (la_clusters.h, docs/clusters.md).
 *
 * Three passes over the present ranks, in increasing rank order:
 *   1. signatures: B range sums per trace (closed form over the segments),
 *      divided by their total; a trace without a positive finite total
 *      has no shape and is an outlier;
 *   2. leaders: a rank joins the nearest class founder (same element
 *      count, L1 distance <= tol) or founds a class (at most max_classes);
 *   3. representatives: per class, the member nearest the class's mean
 *      signature; then every rank is assigned again, to the nearest
 *      representative within tol, and classes of fewer than min_size
 *      members give their ranks to the outliers.
 * Deliberately not here: reading sets (client/, store/), what a caller
 * does with the classes (lactl show --clusters, store_reps.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_clusters.h"

void la_cluster_params_default(la_cluster_params_t *p) {
  p->tol = 0.05;
  p->buckets = 16;
  p->min_size = 2;
  p->max_classes = 256;
}

void la_clusters_free(la_clusters_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n_classes; i++) {
    free(c->classes[i].members);
    free(c->classes[i].scale);
  }
  free(c->classes);
  free(c->outliers);
  memset(c, 0, sizeof *c);
}

long la_clusters_class_of(const la_clusters_t *c, uint32_t rank,
                          uint32_t *member) {
  for (size_t i = 0; i < c->n_classes; i++) {
    const la_cluster_class_t *k = &c->classes[i];
    size_t lo = 0, hi = k->n; /* members are increasing */
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (k->members[mid] < rank)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo < k->n && k->members[lo] == rank) {
      if (member) *member = (uint32_t)lo;
      return (long)i;
    }
  }
  return -1;
}

static int la__fail(int rc, char *why, size_t why_len, const char *msg);

/* L1 distance of two signatures of b values, stopping once above bound. */
static double la__dist(const double *a, const double *b, unsigned nb,
                       double bound) {
  double d = 0;
  for (unsigned j = 0; j < nb; j++) {
    d += fabs(a[j] - b[j]);
    if (d > bound) break;
  }
  return d;
}

int la_clusters_shares(double *sig, unsigned nb, double *tot) {
  *tot = NAN;
  if (nb < 1 || nb > LA_CLUSTERS_MAX_BUCKETS) return 0;
  double s = 0;
  for (unsigned j = 0; j < nb; j++) s += sig[j];
  if (!isfinite(s) || !(s > 0)) return 0;
  *tot = s;
  for (unsigned j = 0; j < nb; j++) sig[j] /= s;
  return 1;
}

/* Signature of t into sig[0..nb) and its decoded total into *tot. Returns
 * 1 when it has a shape (positive finite total), else 0. */
int la_clusters_signature(const la_trace_t *t, unsigned nb, double *sig,
                          double *tot) {
  *tot = NAN;
  if (!t || nb < 1 || nb > LA_CLUSTERS_MAX_BUCKETS) return 0;
  uint64_t m = la_trace_count(t), lo = 0;
  if (m == 0) return 0;
  for (unsigned j = 0; j < nb; j++) {
    uint64_t hi = (uint64_t)((unsigned __int128)m * (j + 1) / nb);
    double v = 0;
    if (hi > lo && la_trace_range_sum(t, lo, hi - lo, &v) != 0) return 0;
    sig[j] = v;
    lo = hi;
  }
  return la_clusters_shares(sig, nb, tot);
}

int la_clusters_signature_bytes(const uint8_t *bytes, size_t len,
                                uint64_t max_points, unsigned nb, double *sig,
                                double *tot, uint64_t *count, char *why,
                                size_t why_len) {
  *tot = NAN;
  *count = 0;
  if (nb < 1 || nb > LA_CLUSTERS_MAX_BUCKETS)
    return la__fail(LA_EINVAL, why, why_len, "buckets must be within 1..64");
  int rc = la_trace_slice_sums(bytes, len, max_points, nb, sig, count, why,
                               why_len);
  if (rc) return rc;
  return *count ? la_clusters_shares(sig, nb, tot) : 0;
}

/* The nearest of the cands[0..nc) (trace indexes) to trace i of the same
 * element count within tol, or -1; ties go to the earlier candidate. */
static long la__nearest(uint32_t i, const uint32_t *cands, size_t nc,
                        const double *sig, const uint64_t *cnt, unsigned nb,
                        double tol, double *dist) {
  long best = -1;
  double bd = tol;
  for (size_t c = 0; c < nc; c++) {
    uint32_t f = cands[c];
    if (cnt[f] != cnt[i]) continue;
    double d = la__dist(sig + (size_t)i * nb, sig + (size_t)f * nb, nb, bd);
    if (d <= bd && (best < 0 || d < bd)) {
      best = (long)c;
      bd = d;
    }
  }
  *dist = bd;
  return best;
}

static int la__cmp_class(const void *a, const void *b) {
  const la_cluster_class_t *x = a, *y = b;
  if (x->n != y->n) return x->n > y->n ? -1 : 1;
  return x->rep < y->rep ? -1 : x->rep > y->rep;
}

/* Scratch of one call; sig, tot and cnt are the caller's. */
typedef struct {
  const double *sig, *tot;
  double *dist, *mean;
  const uint64_t *cnt;
  int32_t *cls;     /* class index per rank, -1: outlier, -2: absent */
  uint32_t *lead;   /* founders, then representatives */
  uint32_t *size;   /* members per class */
} la__work_t;

static void la__work_free(la__work_t *w) {
  free(w->dist);
  free(w->mean);
  free(w->cls);
  free(w->lead);
  free(w->size);
}

static int la__fail(int rc, char *why, size_t why_len, const char *msg) {
  if (why && why_len) snprintf(why, why_len, "%s", msg);
  return rc;
}

/* Passes 2 and 3 over the signatures; fills w->cls and w->lead, returns
 * the number of classes. */
static size_t la__group(la__work_t *w, uint32_t n, unsigned nb,
                        const la_cluster_params_t *p) {
  size_t nf = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (w->cls[i] == -2 || w->cls[i] == -1) continue;
    double d;
    long c = la__nearest(i, w->lead, nf, w->sig, w->cnt, nb, p->tol, &d);
    if (c >= 0) {
      w->cls[i] = (int32_t)c;
    } else if (nf < p->max_classes) {
      w->lead[nf] = i;
      w->cls[i] = (int32_t)nf++;
    } else {
      w->cls[i] = -1;
    }
  }
  /* representatives: nearest to the mean signature of the class */
  memset(w->mean, 0, nf * nb * sizeof *w->mean);
  memset(w->size, 0, nf * sizeof *w->size);
  for (uint32_t i = 0; i < n; i++) {
    if (w->cls[i] < 0) continue;
    double *m = w->mean + (size_t)w->cls[i] * nb;
    for (unsigned j = 0; j < nb; j++) m[j] += w->sig[(size_t)i * nb + j];
    w->size[w->cls[i]]++;
  }
  for (size_t c = 0; c < nf; c++) {
    w->dist[c] = INFINITY;
    for (unsigned j = 0; j < nb; j++) w->mean[c * nb + j] /= w->size[c];
  }
  for (uint32_t i = 0; i < n; i++) {
    if (w->cls[i] < 0) continue;
    size_t c = (size_t)w->cls[i];
    double d = la__dist(w->sig + (size_t)i * nb, w->mean + c * nb, nb,
                        INFINITY);
    if (d < w->dist[c]) {
      w->dist[c] = d;
      w->lead[c] = i;
    }
  }
  /* every shaped rank again, to the nearest representative */
  memset(w->size, 0, nf * sizeof *w->size);
  for (uint32_t i = 0; i < n; i++) {
    if (w->cls[i] == -2) continue;
    if (w->tot[i] != w->tot[i] || !(w->tot[i] > 0) || !isfinite(w->tot[i])) {
      w->cls[i] = -1; /* no shape */
      continue;
    }
    double d = 0;
    long c = w->cls[i];
    if (c < 0 || w->lead[c] != i) /* a representative stays in its class */
      c = la__nearest(i, w->lead, nf, w->sig, w->cnt, nb, p->tol, &d);
    w->cls[i] = (int32_t)c;
    w->dist[i] = d;
    if (c >= 0) w->size[c]++;
  }
  return nf;
}

/* The parameters p (NULL: the defaults) checked into *q. */
static int la__params(const la_cluster_params_t *p, la_cluster_params_t *q,
                      char *why, size_t why_len) {
  if (p)
    *q = *p;
  else
    la_cluster_params_default(q);
  if (!(q->tol >= 0 && q->tol <= 2))
    return la__fail(LA_EINVAL, why, why_len, "tol must be within 0..2");
  if (q->buckets < 1 || q->buckets > LA_CLUSTERS_MAX_BUCKETS)
    return la__fail(LA_EINVAL, why, why_len, "buckets must be within 1..64");
  if (q->min_size < 1 || q->max_classes < 1)
    return la__fail(LA_EINVAL, why, why_len,
                    "min_size and max_classes must be at least 1");
  return 0;
}

int la_clusters_find(const la_trace_t *const *tr, const double *totals,
                     uint32_t n, const la_cluster_params_t *pp,
                     la_clusters_t *out, char *why, size_t why_len) {
  la_cluster_params_t p;
  if (out) memset(out, 0, sizeof *out);
  if (!tr || !out) return la__fail(LA_EINVAL, why, why_len, "no traces");
  int r = la__params(pp, &p, why, why_len);
  if (r) return r;
  size_t nn = n ? n : 1;
  double *sig = malloc(nn * p.buckets * sizeof *sig);
  double *tot = malloc(nn * sizeof *tot);
  uint64_t *cnt = malloc(nn * sizeof *cnt);
  if (!sig || !tot || !cnt) {
    r = la__fail(LA_ENOMEM, why, why_len, "out of memory");
  } else {
    for (uint32_t i = 0; i < n; i++) {
      cnt[i] = tr[i] ? la_trace_count(tr[i]) : 0;
      la_clusters_signature(tr[i], p.buckets, sig + (size_t)i * p.buckets,
                            &tot[i]);
    }
    r = la_clusters_group(sig, tot, cnt, totals, n, &p, out, why, why_len);
  }
  free(sig);
  free(tot);
  free(cnt);
  return r;
}

int la_clusters_group(const double *sig, const double *dtot,
                      const uint64_t *count, const double *totals, uint32_t n,
                      const la_cluster_params_t *pp, la_clusters_t *out,
                      char *why, size_t why_len) {
  la_cluster_params_t p;
  if (out) memset(out, 0, sizeof *out);
  if (!out || (n && (!sig || !dtot || !count)))
    return la__fail(LA_EINVAL, why, why_len, "no signatures");
  int rc = la__params(pp, &p, why, why_len);
  if (rc) return rc;
  unsigned nb = p.buckets;
  size_t nn = n ? n : 1;
  la__work_t w = {0};
  w.sig = sig;
  w.tot = dtot;
  w.cnt = count;
  w.dist = malloc(nn * sizeof *w.dist);
  w.cls = malloc(nn * sizeof *w.cls);
  size_t nc = p.max_classes < nn ? p.max_classes : nn;
  w.mean = malloc(nc * nb * sizeof *w.mean);
  w.lead = malloc(nc * sizeof *w.lead);
  w.size = malloc(nc * sizeof *w.size);
  if (!w.dist || !w.cls || !w.mean || !w.lead || !w.size) {
    la__work_free(&w);
    return la__fail(LA_ENOMEM, why, why_len, "out of memory");
  }
  size_t present = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!count[i]) {
      w.cls[i] = -2;
      continue;
    }
    present++;
    w.cls[i] = isfinite(dtot[i]) && dtot[i] > 0 ? 0 : -1;
  }
  size_t nf = la__group(&w, n, nb, &p);
  /* the classes big enough, and the outliers */
  size_t nk = 0, no = 0;
  for (size_t c = 0; c < nf; c++)
    if (w.size[c] >= p.min_size) nk++;
  for (uint32_t i = 0; i < n; i++)
    if (w.cls[i] == -1 || (w.cls[i] >= 0 && w.size[w.cls[i]] < p.min_size))
      no++;
  out->n_traces = present;
  out->classes = calloc(nk ? nk : 1, sizeof *out->classes);
  out->outliers = malloc((no ? no : 1) * sizeof *out->outliers);
  int32_t *slot = malloc((nf ? nf : 1) * sizeof *slot);
  int bad = !out->classes || !out->outliers || !slot;
  for (size_t c = 0, k = 0; !bad && c < nf; c++) {
    slot[c] = -1;
    if (w.size[c] < p.min_size) continue;
    la_cluster_class_t *K = &out->classes[k];
    K->rep = w.lead[c];
    K->elements = w.cnt[K->rep];
    K->members = malloc(w.size[c] * sizeof *K->members);
    K->scale = malloc(w.size[c] * sizeof *K->scale);
    K->scale_min = INFINITY;
    K->scale_max = -INFINITY;
    slot[c] = (int32_t)k++;
    out->n_classes = k;
    bad = !K->members || !K->scale;
  }
  for (uint32_t i = 0; !bad && i < n; i++) {
    int32_t c = w.cls[i];
    if (c == -2) continue;
    if (c == -1 || slot[c] < 0) {
      out->outliers[out->n_outliers++] = i;
      continue;
    }
    la_cluster_class_t *K = &out->classes[slot[c]];
    double t = totals && isfinite(totals[i]) ? totals[i] : w.tot[i];
    double s = t / w.tot[K->rep];
    K->members[K->n] = i;
    K->scale[K->n++] = s;
    if (s < K->scale_min) K->scale_min = s;
    if (s > K->scale_max) K->scale_max = s;
    if (w.dist[i] > K->dist_max) K->dist_max = w.dist[i];
  }
  free(slot);
  la__work_free(&w);
  if (bad) {
    la_clusters_free(out);
    return la__fail(LA_ENOMEM, why, why_len, "out of memory");
  }
  qsort(out->classes, out->n_classes, sizeof *out->classes, la__cmp_class);
  return 0;
}
