/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_clusters.c: `lactl show --clusters`: the ranks of one Trace-Set
 * grouped into behaviour classes (la_clusters_find on the set's encodings,
 * the exact totals for the scales), printed as a table or JSON: per class
 * its size, representative, elements, the spread of the members' scales,
 * the largest signature distance to the representative and the members as
 * rank ranges; then the outlier ranks. Reconstructed members of a set
 * stored with representatives (docs/clusters.md) are named too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "la_clusters.h"
#include "lactl_clusters.h"
#include "lactl_util.h"

const char *lactl_fmt_rank_ranges(const uint32_t *r, size_t n, char *buf,
                                  size_t len) {
  size_t o = 0, i = 0;
  buf[0] = 0;
  while (i < n) {
    size_t j = i + 1;
    uint32_t step = j < n ? r[j] - r[i] : 0;
    while (j < n && r[j] - r[j - 1] == step) j++;
    char one[48];
    int k;
    if (j - i >= 3 && step == 1)
      k = snprintf(one, sizeof one, "%s%u-%u", o ? "," : "", r[i], r[j - 1]);
    else if (j - i >= 3)
      k = snprintf(one, sizeof one, "%s%u-%u/%u", o ? "," : "", r[i],
                   r[j - 1], step);
    else {
      k = snprintf(one, sizeof one, "%s%u", o ? "," : "", r[i]);
      j = i + 1;
    }
    if (o + (size_t)k + 5 >= len) {
      snprintf(buf + o, len - o, ",...");
      break;
    }
    memcpy(buf + o, one, (size_t)k + 1);
    o += (size_t)k;
    i = j;
  }
  return buf;
}

/* Ranks of t whose trace is a reconstruction, into a new array. */
static size_t reconstructed(const la_traceset_t *t, uint32_t **out) {
  uint32_t np = la_traceset_nprocs(t);
  size_t n = 0;
  *out = malloc((np ? np : 1) * sizeof **out);
  if (!*out) return 0;
  for (uint32_t i = 0; i < np; i++)
    if (la_traceset_rank_reconstructed(t, i, NULL, NULL) == 1) (*out)[n++] = i;
  return n;
}

static void print_json(FILE *f, const la_traceset_t *t,
                       const la_clusters_t *c, double tol,
                       const uint32_t *rec, size_t nrec) {
  fprintf(f, "{\"app\": ");
  lactl_json_str(f, la_traceset_app_id(t));
  fprintf(f, ", \"cycle\": %llu, \"nprocs\": %u, \"present\": %zu, \"tol\": ",
          (unsigned long long)la_traceset_cycle(t), la_traceset_nprocs(t),
          c->n_traces);
  lactl_json_num(f, tol);
  fprintf(f, ",\n \"classes\": [");
  for (size_t k = 0; k < c->n_classes; k++) {
    const la_cluster_class_t *K = &c->classes[k];
    fprintf(f,
            "%s\n  {\"class\": %zu, \"size\": %u, \"representative\": %u, "
            "\"elements\": %llu, \"scale_min\": ",
            k ? "," : "", k, K->n, K->rep, (unsigned long long)K->elements);
    lactl_json_num(f, K->scale_min);
    fprintf(f, ", \"scale_max\": ");
    lactl_json_num(f, K->scale_max);
    fprintf(f, ", \"distance_max\": ");
    lactl_json_num(f, K->dist_max);
    fprintf(f, ",\n   \"members\": [");
    for (uint32_t m = 0; m < K->n; m++)
      fprintf(f, "%s%u", m ? ", " : "", K->members[m]);
    fprintf(f, "],\n   \"scales\": [");
    for (uint32_t m = 0; m < K->n; m++) {
      if (m) fprintf(f, ", ");
      lactl_json_num(f, K->scale[m]);
    }
    fprintf(f, "]}");
  }
  fprintf(f, "\n ],\n \"outliers\": [");
  for (size_t i = 0; i < c->n_outliers; i++)
    fprintf(f, "%s%u", i ? ", " : "", c->outliers[i]);
  fprintf(f, "],\n \"reconstructed\": [");
  for (size_t i = 0; i < nrec; i++)
    fprintf(f, "%s%u", i ? ", " : "", rec[i]);
  fprintf(f, "]}\n");
}

static int print_text(FILE *f, const la_traceset_t *t,
                      const la_clusters_t *c, double tol, const uint32_t *rec,
                      size_t nrec) {
  char b[256];
  fprintf(f,
          "%s cycle %llu: %zu behaviour class%s of %zu ranks present, %zu "
          "outlier%s (signature distance <= %s)\n",
          la_traceset_app_id(t), (unsigned long long)la_traceset_cycle(t),
          c->n_classes, c->n_classes == 1 ? "" : "es", c->n_traces,
          c->n_outliers, c->n_outliers == 1 ? "" : "s",
          lactl_fmt_num(tol, 3, b, sizeof b));
  const char *heads[] = {"CLASS",     "SIZE",      "REP",     "ELEMENTS",
                         "SCALE_MIN", "SCALE_MAX", "MAXDIST", "MEMBERS"};
  lactl_table_t *tb = lactl_table_new(8, heads, "rrrrrrrl");
  int bad = tb == NULL;
  for (size_t k = 0; !bad && k < c->n_classes; k++) {
    const la_cluster_class_t *K = &c->classes[k];
    char cl[24], sz[16], rp[16], el[24], s0[32], s1[32], dm[32], mem[200];
    snprintf(cl, sizeof cl, "%zu", k);
    snprintf(sz, sizeof sz, "%u", K->n);
    snprintf(rp, sizeof rp, "%u", K->rep);
    snprintf(el, sizeof el, "%llu", (unsigned long long)K->elements);
    lactl_fmt_num(K->scale_min, 4, s0, sizeof s0);
    lactl_fmt_num(K->scale_max, 4, s1, sizeof s1);
    lactl_fmt_num(K->dist_max, 3, dm, sizeof dm);
    lactl_fmt_rank_ranges(K->members, K->n, mem, sizeof mem);
    const char *row[] = {cl, sz, rp, el, s0, s1, dm, mem};
    bad = lactl_table_row(tb, row) != 0;
  }
  if (bad) {
    lactl_table_free(tb);
    return LACTL_FAIL;
  }
  if (c->n_classes) {
    fprintf(f, "\n");
    lactl_table_print(f, tb, 2);
  }
  lactl_table_free(tb);
  fprintf(f, "\n  outliers    %s\n",
          c->n_outliers
              ? lactl_fmt_rank_ranges(c->outliers, c->n_outliers, b, sizeof b)
              : "none");
  if (nrec)
    fprintf(f, "  reconstructed %zu ranks (stored as their representative "
               "scaled): %s\n",
            nrec, lactl_fmt_rank_ranges(rec, nrec, b, sizeof b));
  return LACTL_OK;
}

/* A set stored by representatives: its members are their representative
 * scaled, so any of them could be found nearest the class mean; the
 * representative stored is named instead (when it is in the class), and
 * the scales are taken against it. */
static void adopt_stored(const la_traceset_t *t, la_clusters_t *c,
                         const la_trace_t *const *tr, const double *tot) {
  for (size_t k = 0; k < c->n_classes; k++) {
    la_cluster_class_t *K = &c->classes[k];
    uint32_t rep = K->rep, at;
    for (uint32_t m = 0; m < K->n; m++)
      if (la_traceset_rank_reconstructed(t, K->members[m], &rep, NULL) == 1)
        break;
    double d;
    if (rep == K->rep || la_clusters_class_of(c, rep, &at) != (long)k ||
        la_trace_range_sum(tr[rep], 0, la_trace_count(tr[rep]), &d) != 0 ||
        !(d > 0))
      continue;
    K->rep = rep;
    K->scale_min = INFINITY;
    K->scale_max = -INFINITY;
    for (uint32_t m = 0; m < K->n; m++) {
      double s = tot[K->members[m]] / d;
      K->scale[m] = s;
      if (s < K->scale_min) K->scale_min = s;
      if (s > K->scale_max) K->scale_max = s;
    }
  }
}

int lactl_clusters_print(FILE *f, const la_traceset_t *t, double tol,
                         int json) {
  uint32_t np = la_traceset_nprocs(t);
  const la_trace_t **tr = calloc(np ? np : 1, sizeof *tr);
  double *tot = malloc((np ? np : 1) * sizeof *tot);
  uint32_t *rec = NULL;
  int rc = LACTL_FAIL;
  if (!tr || !tot) goto out;
  for (uint32_t i = 0; i < np; i++) {
    tr[i] = la_traceset_has_rank(t, i) ? la__traceset_trace(t, i) : NULL;
    tot[i] = NAN;
    if (tr[i]) la_traceset_rank_stats(t, i, &tot[i], NULL, NULL);
  }
  la_cluster_params_t p;
  la_cluster_params_default(&p);
  p.tol = tol;
  la_clusters_t c;
  char why[128];
  int r = la_clusters_find(tr, tot, np, &p, &c, why, sizeof why);
  if (r) {
    fprintf(stderr, "lactl show: grouping the ranks: %s\n", why);
    goto out;
  }
  size_t nrec = reconstructed(t, &rec);
  adopt_stored(t, &c, tr, tot);
  if (json) {
    print_json(f, t, &c, tol, rec, nrec);
    rc = LACTL_OK;
  } else {
    rc = print_text(f, t, &c, tol, rec, nrec);
    if (rc) fprintf(stderr, "lactl show: out of memory\n");
  }
  la_clusters_free(&c);
out:
  if (!tr || !tot) fprintf(stderr, "lactl show: out of memory\n");
  free(tr);
  free(tot);
  free(rec);
  return rc;
}
