/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_clusters.c: the behaviour classes of one Trace-Set, for `lactl
 * show --clusters` and `lactl serve`'s /api/clusters: the ranks grouped
 * (la_clusters_group on signatures taken from the set's encodings, no
 * index built; the exact totals for the scales), printed as a table or
 * JSON (every member, or bounded: rank ranges): per class
 * its size, representative, elements, the spread of the members' scales,
 * the largest signature distance to the representative and the members as
 * rank ranges; then the outlier ranks. Reconstructed members of a set
 * stored with representatives (docs/clusters.md) are named too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "la_clusters.h"
#include "la_errcodes.h"
#include "lactl_clusters.h"
#include "lactl_util.h"

void lactl_rank_range_next(const uint32_t *r, size_t n, size_t *i,
                           uint32_t *first, uint32_t *last, uint32_t *step) {
  size_t a = *i, j = a + 1;
  uint32_t st = j < n ? r[j] - r[a] : 0;
  while (j < n && r[j] - r[j - 1] == st) j++;
  *first = r[a];
  if (j - a >= 3) {
    *last = r[j - 1], *step = st;
  } else {
    *last = r[a], *step = 1;
    j = a + 1;
  }
  *i = j;
}

const char *lactl_fmt_rank_ranges(const uint32_t *r, size_t n, char *buf,
                                  size_t len) {
  size_t o = 0, i = 0;
  buf[0] = 0;
  while (i < n) {
    uint32_t a, b, st;
    lactl_rank_range_next(r, n, &i, &a, &b, &st);
    char one[48];
    int k;
    if (b != a && st == 1)
      k = snprintf(one, sizeof one, "%s%u-%u", o ? "," : "", a, b);
    else if (b != a)
      k = snprintf(one, sizeof one, "%s%u-%u/%u", o ? "," : "", a, b, st);
    else
      k = snprintf(one, sizeof one, "%s%u", o ? "," : "", a);
    if (o + (size_t)k + 5 >= len) {
      snprintf(buf + o, len - o, ",...");
      break;
    }
    memcpy(buf + o, one, (size_t)k + 1);
    o += (size_t)k;
  }
  return buf;
}

/* "[[FIRST, LAST, STEP], ...]": ranks r[0..n) as ranges
 * (lactl_rank_range_next), at most list of them (0: all); the ranges
 * left out are counted into *more. */
static void json_ranges(FILE *f, const uint32_t *r, size_t n, size_t list,
                        size_t *more) {
  size_t i = 0, k = 0;
  *more = 0;
  fputc('[', f);
  while (i < n) {
    uint32_t a, b, st;
    lactl_rank_range_next(r, n, &i, &a, &b, &st);
    if (list && k >= list) {
      (*more)++;
      continue;
    }
    fprintf(f, "%s[%u, %u, %u]", k++ ? ", " : "", a, b, st);
  }
  fputc(']', f);
}

/* "[r, ...]" of at most list ranks (0: all), then ", \"NAME_more\": N". */
static void json_ranks(FILE *f, const char *name, const uint32_t *r, size_t n,
                       size_t list) {
  size_t k = list && n > list ? list : n;
  fprintf(f, "\"%s\": [", name);
  for (size_t i = 0; i < k; i++) fprintf(f, "%s%u", i ? ", " : "", r[i]);
  fprintf(f, "], \"%s_more\": %zu", name, n - k);
}

void lactl_clusters_json(FILE *f, const la_traceset_t *t,
                         const lactl_clusters_t *k, size_t list) {
  const la_clusters_t *c = &k->c;
  fprintf(f, "{\"app\": ");
  lactl_json_str(f, la_traceset_app_id(t));
  fprintf(f, ", \"cycle\": %llu, \"nprocs\": %u, \"present\": %zu, \"tol\": ",
          (unsigned long long)la_traceset_cycle(t), la_traceset_nprocs(t),
          c->n_traces);
  lactl_json_num(f, k->tol);
  fprintf(f, ",\n \"classes\": [");
  for (size_t i = 0; i < c->n_classes; i++) {
    const la_cluster_class_t *K = &c->classes[i];
    fprintf(f,
            "%s\n  {\"class\": %zu, \"size\": %u, \"representative\": %u, "
            "\"elements\": %llu, \"scale_min\": ",
            i ? "," : "", i, K->n, K->rep, (unsigned long long)K->elements);
    lactl_json_num(f, K->scale_min);
    fprintf(f, ", \"scale_max\": ");
    lactl_json_num(f, K->scale_max);
    fprintf(f, ", \"distance_max\": ");
    lactl_json_num(f, K->dist_max);
    fprintf(f, ",\n   \"ranges\": ");
    size_t more;
    json_ranges(f, K->members, K->n, list, &more);
    fprintf(f, ", \"ranges_more\": %zu", more);
    if (!list) {
      fprintf(f, ",\n   \"members\": [");
      for (uint32_t m = 0; m < K->n; m++)
        fprintf(f, "%s%u", m ? ", " : "", K->members[m]);
      fprintf(f, "],\n   \"scales\": [");
      for (uint32_t m = 0; m < K->n; m++) {
        if (m) fprintf(f, ", ");
        lactl_json_num(f, K->scale[m]);
      }
      fprintf(f, "]");
    }
    fprintf(f, "}");
  }
  fprintf(f, "\n ],\n ");
  json_ranks(f, "outliers", c->outliers, c->n_outliers, list);
  fprintf(f, ",\n ");
  json_ranks(f, "reconstructed", k->rec, k->nrec, list);
  fprintf(f, "}\n");
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
                         const double *tot) {
  for (size_t k = 0; k < c->n_classes; k++) {
    la_cluster_class_t *K = &c->classes[k];
    uint32_t rep = K->rep, at;
    for (uint32_t m = 0; m < K->n; m++)
      if (la_traceset_rank_reconstructed(t, K->members[m], &rep, NULL) == 1)
        break;
    if (rep == K->rep || la_clusters_class_of(c, rep, &at) != (long)k)
      continue;
    const la_trace_t *tr = la__traceset_trace(t, rep); /* a few: kept */
    double d;
    if (!tr || la_trace_range_sum(tr, 0, la_trace_count(tr), &d) != 0 ||
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

int lactl_clusters_of(const la_traceset_t *t, double tol,
                      const atomic_int *stop, lactl_clusters_t *out,
                      char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  out->tol = tol;
  la_cluster_params_t p;
  la_cluster_params_default(&p);
  p.tol = tol;
  const uint32_t np = la_traceset_nprocs(t);
  const size_t nn = np ? np : 1;
  const unsigned nb = p.buckets;
  double *sig = malloc(nn * nb * sizeof *sig);
  double *dtot = malloc(nn * sizeof *dtot), *tot = malloc(nn * sizeof *tot);
  uint64_t *cnt = malloc(nn * sizeof *cnt);
  int rc = sig && dtot && tot && cnt ? 0 : LA_ENOMEM;
  if (rc) snprintf(why, why_len, "out of memory");
  /* each rank's signature from its encoding (one checking pass, no index
   * built: a set of lactl serve keeps none) */
  for (uint32_t r = 0; !rc && r < np; r++) {
    const La__CompactTrace *ct = la__traceset_compact(t, r);
    tot[r] = NAN, dtot[r] = NAN, cnt[r] = 0;
    if (stop && atomic_load(stop)) {
      snprintf(why, why_len, "stopped");
      rc = LA_ESTATE;
    } else if (ct) {
      char w[160] = "";
      la_traceset_rank_stats(t, r, &tot[r], NULL, NULL);
      int s = la_clusters_signature_bytes(
          ct->segments.data, ct->segments.len, ct->n_elements, nb,
          sig + (size_t)r * nb, &dtot[r], &cnt[r], w, sizeof w);
      if (s < 0) {
        /* the set was checked when it was made: memory only */
        snprintf(why, why_len, "rank %u: %s", r, w);
        rc = s;
      }
    }
  }
  if (!rc) rc = la_clusters_group(sig, dtot, cnt, tot, np, &p, &out->c, why,
                                  why_len);
  if (!rc) {
    out->rec = malloc(nn * sizeof *out->rec);
    if (!out->rec) {
      snprintf(why, why_len, "out of memory");
      rc = LA_ENOMEM;
    }
  }
  if (!rc) {
    for (uint32_t r = 0; r < np; r++)
      if (la_traceset_rank_reconstructed(t, r, NULL, NULL) == 1)
        out->rec[out->nrec++] = r;
    adopt_stored(t, &out->c, tot);
  }
  free(sig), free(dtot), free(tot), free(cnt);
  if (rc) lactl_clusters_free(out);
  return rc;
}

void lactl_clusters_free(lactl_clusters_t *k) {
  if (!k) return;
  la_clusters_free(&k->c);
  free(k->rec);
  k->rec = NULL, k->nrec = 0;
}

int lactl_clusters_print(FILE *f, const la_traceset_t *t, double tol,
                         int json) {
  lactl_clusters_t k;
  char why[200];
  int r = lactl_clusters_of(t, tol, NULL, &k, why, sizeof why);
  if (r) {
    fprintf(stderr, "lactl show: grouping the ranks: %s\n", why);
    return LACTL_FAIL;
  }
  int rc = LACTL_OK;
  if (json) {
    lactl_clusters_json(f, t, &k, 0);
  } else {
    rc = print_text(f, t, &k.c, tol, k.rec, k.nrec);
    if (rc) fprintf(stderr, "lactl show: out of memory\n");
  }
  lactl_clusters_free(&k);
  return rc;
}
