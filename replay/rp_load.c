/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_load.c: la-replay's reading, on rank 0 only: the recorded
 * application's Trace-Sets of the chosen cycles from its source (the
 * GlobalAgent's feed or a store file: rp_source.c), each turned into every
 * replay rank's element costs in seconds.
 *
 * Under the recorded partition, replay rank r spends recorded rank r's
 * weights, element by element. Under a partition file, elements are the
 * application's numbering (la_client_set_ids), the entries of several ranks
 * with one id being one element whose weights add up, as `lactl whatif`
 * counts them; the file's ids must be exactly those, and each element goes
 * to the file's rank, its elements in ascending id order.
 *
 * Only complete cycles are replayed (an incomplete one is skipped and said
 * on stderr); cycle tags with no stored set are counted. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_client.h"
#include "replay.h"

/* Everything of one load. */
typedef struct {
  const rp_src_t *src;
  rp_plan_t *pl;
  rp_source_t *c;
  rp_part_t part;
  int have_part;
  uint64_t elements; /* the recorded set's element count */
  uint64_t *merged;  /* partition: set element -> index in part */
  uint64_t *local;   /* partition: index in part -> index on its rank */
  double scale;      /* unit -> seconds */
  double *w;         /* one set's weights */
  char *why;
  size_t why_len;
} ld_t;

static int ld_fail(ld_t *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int ld_fail(ld_t *l, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->why, l->why_len, fmt, ap);
  va_end(ap);
  return -1;
}

void rp_plan_free(rp_plan_t *pl) {
  if (pl->cost)
    for (uint32_t r = 0; r < pl->nranks; r++) free(pl->cost[r]);
  free(pl->cost), free(pl->n), free(pl->tags);
  free(pl->target), free(pl->recorded);
  free(pl->hoff), free(pl->hnbr), free(pl->hsend), free(pl->hrecv);
  memset(pl, 0, sizeof *pl);
}

static int cmp_pair(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
  return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* Seconds per unit of the time metric's unit. 0 for an unknown unit. */
static double unit_scale(const char *u) {
  if (!strcmp(u, "ns")) return 1e-9;
  if (!strcmp(u, "us")) return 1e-6;
  if (!strcmp(u, "ms")) return 1e-3;
  if (!strcmp(u, "s")) return 1.0;
  return 0;
}

/* First complete set: the partition's shape (rank counts and element
 * counts), the partition file matched to the set's ids. */
static int shape(ld_t *l, const la_traceset_t *t) {
  rp_plan_t *pl = l->pl;
  uint32_t np = la_traceset_nprocs(t);
  pl->rec_nprocs = np;
  l->elements = la_traceset_elements(t);
  pl->nranks = l->have_part ? l->part.nranks : np;
  pl->n = calloc(pl->nranks, sizeof *pl->n);
  pl->cost = calloc(pl->nranks, sizeof *pl->cost);
  l->w = malloc((l->elements ? l->elements : 1) * sizeof *l->w);
  if (!pl->n || !pl->cost || !l->w) return ld_fail(l, "out of memory");
  if (!l->have_part) {
    for (uint32_t r = 0; r < np; r++) pl->n[r] = la_traceset_rank_elements(t, r);
    return 0;
  }
  uint64_t ne = l->elements;
  int64_t *ids = malloc((ne ? ne : 1) * sizeof *ids);
  int64_t(*pair)[2] = malloc((ne ? ne : 1) * sizeof *pair);
  l->merged = malloc((ne ? ne : 1) * sizeof *l->merged);
  l->local = malloc(l->part.n * sizeof *l->local);
  if (!ids || !pair || !l->merged || !l->local) {
    free(ids), free(pair);
    return ld_fail(l, "out of memory (%" PRIu64 " elements)", ne);
  }
  int rc = rp_source_set_ids(l->c, t, ids);
  if (rc) {
    free(ids), free(pair);
    return ld_fail(l, "%s's element ids: %s", l->src->app,
                   rp_source_error(l->c));
  }
  for (uint64_t i = 0; i < ne; i++) pair[i][0] = ids[i], pair[i][1] = (int64_t)i;
  qsort(pair, ne, sizeof *pair, cmp_pair);
  uint64_t distinct = 0; /* distinct ids so far */
  int64_t bad = -1;       /* the first id that is not the file's */
  for (uint64_t i = 0; i < ne; i++) {
    if (i == 0 || pair[i][0] != pair[i - 1][0]) {
      if (bad < 0 && (distinct >= l->part.n || l->part.id[distinct] != pair[i][0]))
        bad = pair[i][0];
      distinct++;
    }
    l->merged[pair[i][1]] = distinct - 1;
  }
  free(ids), free(pair);
  if (distinct != l->part.n)
    return ld_fail(l,
                   "the partition file has %" PRIu64 " elements, %s cycle %"
                   PRIu64 " has %" PRIu64
                   " (lactl whatif --write-partition writes one line per "
                   "element)",
                   l->part.n, l->src->app, la_traceset_cycle(t), distinct);
  if (bad >= 0)
    return ld_fail(l,
                   "element id %" PRId64 " of %s is not in the partition "
                   "file: it was written for another application or "
                   "numbering",
                   bad, l->src->app);
  for (uint64_t k = 0; k < l->part.n; k++)
    l->local[k] = pl->n[l->part.rank[k]]++;
  return 0;
}

/* The mesh halo under the partition (rp_halo.c), from the first set. */
static int halo(ld_t *l, const la_traceset_t *t) {
  uint64_t ne = l->elements, i = 0;
  uint32_t *owner = malloc((ne ? ne : 1) * sizeof *owner);
  if (!owner) return ld_fail(l, "out of memory");
  for (uint32_t r = 0; r < l->pl->rec_nprocs; r++)
    for (uint64_t e = 0; e < la_traceset_rank_elements(t, r); e++, i++)
      owner[i] = l->have_part ? l->part.rank[l->merged[i]] : r;
  int rc = rp_halo_plan(t, owner, l->pl, l->why, l->why_len);
  free(owner);
  return rc;
}

/* Appends set t (complete, shaped like the first) as the next cycle. */
static int add_cycle(ld_t *l, la_traceset_t *t) {
  rp_plan_t *pl = l->pl;
  uint64_t tag = la_traceset_cycle(t);
  if (la_traceset_nprocs(t) != pl->rec_nprocs ||
      la_traceset_elements(t) != l->elements)
    return ld_fail(l,
                   "%s cycle %" PRIu64 " has %u ranks and %" PRIu64
                   " elements, cycle %" PRIu64 " %u and %" PRIu64
                   ": la-replay replays one registration (give a cycle "
                   "range within it)",
                   l->src->app, tag, la_traceset_nprocs(t),
                   la_traceset_elements(t), pl->tags[0], pl->rec_nprocs,
                   l->elements);
  for (uint32_t r = 0; !l->have_part && r < pl->rec_nprocs; r++)
    if (la_traceset_rank_elements(t, r) != pl->n[r])
      return ld_fail(l, "%s cycle %" PRIu64 ": rank %u's element count changed",
                     l->src->app, tag, r);
  size_t c = pl->nc;
  uint64_t *tags = realloc(pl->tags, (c + 1) * sizeof *tags);
  if (tags) pl->tags = tags;
  double *tg = tags ? realloc(pl->target, (c + 1) * pl->nranks * sizeof *tg) : NULL;
  if (tg) pl->target = tg;
  double *rec =
      tg ? realloc(pl->recorded, (c + 1) * pl->rec_nprocs * sizeof *rec) : NULL;
  if (rec) pl->recorded = rec;
  if (!rec) return ld_fail(l, "out of memory");
  for (uint32_t r = 0; r < pl->nranks; r++) {
    double *a = realloc(pl->cost[r], (c + 1) * (pl->n[r] ? pl->n[r] : 1) *
                                         sizeof *a);
    if (!a) return ld_fail(l, "out of memory");
    pl->cost[r] = a;
    memset(a + c * pl->n[r], 0, pl->n[r] * sizeof *a);
  }
  pl->tags[c] = tag;
  double *recc = pl->recorded + c * pl->rec_nprocs;
  if (la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST)
    la_traceset_robust_totals(t, recc);
  else
    la_traceset_rank_totals(t, recc);
  for (uint32_t r = 0; r < pl->rec_nprocs; r++) recc[r] *= l->scale;
  la_traceset_weights(t, l->w);
  uint64_t i = 0;
  for (uint32_t r = 0; r < pl->rec_nprocs; r++)
    for (uint64_t e = 0; e < la_traceset_rank_elements(t, r); e++, i++) {
      double v = isfinite(l->w[i]) && l->w[i] > 0 ? l->w[i] * l->scale : 0;
      if (!l->have_part) {
        pl->cost[r][c * pl->n[r] + e] = v;
      } else {
        uint64_t k = l->merged[i];
        uint32_t to = l->part.rank[k];
        pl->cost[to][c * pl->n[to] + l->local[k]] += v;
      }
    }
  for (uint32_t r = 0; r < pl->nranks; r++) {
    double s = 0;
    for (uint64_t e = 0; e < pl->n[r]; e++) s += pl->cost[r][c * pl->n[r] + e];
    pl->target[c * pl->nranks + r] = s;
  }
  pl->nc = c + 1;
  return 0;
}

/* The metric check: replay spends time. */
static int check_metric(ld_t *l, const la_traceset_t *t) {
  const char *m = la_traceset_metric(t), *u = la_traceset_unit(t);
  if (strcmp(m, "time") || !(l->scale = unit_scale(u)))
    return ld_fail(l,
                   "%s's metric is '%s' (unit '%s'): la-replay spends "
                   "recorded time, so it replays only the time metric",
                   l->src->app, m, u);
  snprintf(l->pl->metric, sizeof l->pl->metric, "%s", m);
  snprintf(l->pl->unit, sizeof l->pl->unit, "%s", u);
  return 0;
}

static int load(ld_t *l, int *usage) {
  const rp_src_t *src = l->src;
  rp_plan_t *pl = l->pl;
  int rc = rp_source_open(src, &l->c, l->why, l->why_len);
  if (rc) return -1;
  const char *addr = rp_source_where(l->c);
  if (src->partition) {
    if (rp_part_read(src->partition, &l->part, l->why, l->why_len)) {
      *usage = 1;
      return -1;
    }
    l->have_part = 1;
  }
  la_traceset_t *t = NULL;
  uint64_t last = src->last;
  rc = rp_source_set(l->c, src->app, 1, 0, &t);
  if (rc == LA_ENOTFOUND)
    return ld_fail(l,
                   "no application '%s' is stored at %s (lactl apps lists "
                   "them)",
                   src->app, addr);
  if (rc)
    return ld_fail(l, "%s at %s: %s", src->app, addr, rp_source_error(l->c));
  if (check_metric(l, t)) {
    la_traceset_free(t);
    return -1;
  }
  if (last == UINT64_MAX || last > la_traceset_cycle(t))
    last = la_traceset_cycle(t);
  la_traceset_free(t);
  for (uint64_t tag = src->first; tag <= last; tag++) {
    rc = rp_source_set(l->c, src->app, 0, tag, &t);
    if (rc == LA_ENOTFOUND) {
      pl->absent++;
      continue;
    }
    if (rc)
      return ld_fail(l, "%s cycle %" PRIu64 ": %s", src->app, tag,
                     rp_source_error(l->c));
    if (!la_traceset_complete(t)) {
      fprintf(stderr,
              "la-replay: %s cycle %" PRIu64 " is not complete (%zu rank%s "
              "missing): skipped\n",
              src->app, tag, la_traceset_missing(t, NULL),
              la_traceset_missing(t, NULL) == 1 ? "" : "s");
      pl->skipped_incomplete++;
      la_traceset_free(t);
      continue;
    }
    rc = check_metric(l, t);
    if (!rc && !pl->nc) {
      rc = shape(l, t);
      if (rc && l->have_part) *usage = 1;
      if (!rc && src->mesh_halo) rc = halo(l, t);
      pl->weights = la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST
                        ? "robust"
                        : "measured";
    }
    if (!rc) rc = add_cycle(l, t);
    la_traceset_free(t);
    if (rc) return -1;
    if (tag == UINT64_MAX) break;
  }
  if (!pl->nc)
    return ld_fail(l,
                   "%s has no complete cycle in %" PRIu64 "..%" PRIu64
                   " (%" PRIu64 " incomplete, %" PRIu64 " not stored)",
                   src->app, src->first, last, pl->skipped_incomplete,
                   pl->absent);
  return 0;
}

int rp_load(const rp_src_t *src, rp_plan_t *pl, char *why, size_t why_len,
            int *usage) {
  ld_t l = {.src = src, .pl = pl, .why = why, .why_len = why_len};
  memset(pl, 0, sizeof *pl);
  *usage = 0;
  int rc = load(&l, usage);
  rp_source_close(l.c);
  rp_part_free(&l.part);
  free(l.merged), free(l.local), free(l.w);
  if (rc) rp_plan_free(pl);
  return rc;
}
