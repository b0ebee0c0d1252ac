/* SPDX-License-Identifier: BSD-3-Clause */
/* sigs.c: open Trace-Sets' signatures until their close (sigs.h). A hash
 * of sets by (application, cycle), each with one entry per rank. */
#include "sigs.h"

#include <stdlib.h>
#include <string.h>

#include "stitch.h"

typedef struct la__sset {
  struct la__sset *hnext;
  char *app;
  uint64_t tag;
  uint32_t hash, nprocs;
  la_store_rep_sig_t *by_rank; /* nprocs entries */
} la__sset_t;

struct la_ga_sigs {
  la__sset_t **table;
  size_t nbuckets, count, bytes;
  la__sset_t *last; /* the set found last: traces come in bursts */
};

la_ga_sigs_t *la_ga_sigs_new(void) {
  la_ga_sigs_t *g = calloc(1, sizeof *g);
  if (g && !(g->table = calloc(g->nbuckets = 64, sizeof *g->table))) {
    free(g);
    return NULL;
  }
  return g;
}

static size_t la__bytes(uint32_t nprocs) {
  return sizeof(la__sset_t) + (size_t)nprocs * sizeof(la_store_rep_sig_t);
}

static void la__sset_free(la_ga_sigs_t *g, la__sset_t *s) {
  g->bytes -= la__bytes(s->nprocs);
  g->count--;
  free(s->by_rank);
  free(s->app);
  free(s);
}

void la_ga_sigs_clear(la_ga_sigs_t *g) {
  if (!g) return;
  for (size_t i = 0; i < g->nbuckets; i++) {
    for (la__sset_t *s = g->table[i], *n; s; s = n) {
      n = s->hnext;
      la__sset_free(g, s);
    }
    g->table[i] = NULL;
  }
  g->last = NULL;
}

void la_ga_sigs_free(la_ga_sigs_t *g) {
  if (!g) return;
  la_ga_sigs_clear(g);
  free(g->table);
  free(g);
}

/* The link that points at (app, tag)'s set, or at the chain's end. */
static la__sset_t **la__slot(la_ga_sigs_t *g, const char *app, uint64_t tag) {
  uint32_t h = la_stitch_hash(app, tag);
  la__sset_t **p = &g->table[h & (g->nbuckets - 1)];
  while (*p && ((*p)->hash != h || (*p)->tag != tag || strcmp((*p)->app, app)))
    p = &(*p)->hnext;
  return p;
}

/* (app, tag)'s set, unlinked from g, or NULL. */
static la__sset_t *la__unlink(la_ga_sigs_t *g, const char *app, uint64_t tag) {
  la__sset_t **p = la__slot(g, app, tag), *s = *p;
  if (!s) return NULL;
  *p = s->hnext;
  if (g->last == s) g->last = NULL;
  return s;
}

/* Doubles the buckets (kept as they are when out of memory). */
static void la__grow(la_ga_sigs_t *g) {
  size_t nb = g->nbuckets * 2;
  la__sset_t **t = calloc(nb, sizeof *t);
  if (!t) return;
  for (size_t i = 0; i < g->nbuckets; i++)
    for (la__sset_t *s = g->table[i], *n; s; s = n) {
      n = s->hnext;
      s->hnext = t[s->hash & (nb - 1)];
      t[s->hash & (nb - 1)] = s;
    }
  free(g->table);
  g->table = t;
  g->nbuckets = nb;
}

/* (app, tag)'s set of nprocs ranks, opened when new and within the
 * budget; NULL otherwise. */
static la__sset_t *la__open(la_ga_sigs_t *g, const char *app, uint64_t tag,
                            uint32_t nprocs) {
  if (g->last && g->last->tag == tag && !strcmp(g->last->app, app))
    return g->last;
  la__sset_t **p = la__slot(g, app, tag), *s = *p;
  if (!s) {
    if (g->bytes + la__bytes(nprocs) > LA_GA_SIGS_MAX_BYTES ||
        !(s = calloc(1, sizeof *s)))
      return NULL;
    if (!(s->app = strdup(app)) ||
        !(s->by_rank = calloc(nprocs, sizeof *s->by_rank))) {
      free(s->app);
      free(s);
      return NULL;
    }
    s->tag = tag;
    s->nprocs = nprocs;
    s->hash = la_stitch_hash(app, tag);
    s->hnext = *p;
    *p = s;
    g->bytes += la__bytes(nprocs);
    if (++g->count > g->nbuckets) la__grow(g);
  }
  g->last = s;
  return s;
}

void la_ga_sigs_add(la_ga_sigs_t *g, const char *app, uint64_t tag,
                    uint32_t nprocs, uint32_t rank,
                    const la_store_rep_sig_t *sig) {
  if (!g || !app || !sig || !sig->count || rank >= nprocs) return;
  la__sset_t *s = la__open(g, app, tag, nprocs);
  if (s && rank < s->nprocs) s->by_rank[rank] = *sig;
}

int la_ga_sigs_take(la_ga_sigs_t *g, const char *app, uint64_t tag,
                    la_store_rep_sig_t **out, uint32_t *n) {
  la__sset_t *s = g && app ? la__unlink(g, app, tag) : NULL;
  if (!s) return 0;
  *out = s->by_rank;
  *n = s->nprocs;
  s->by_rank = NULL;
  la__sset_free(g, s);
  return 1;
}

void la_ga_sigs_drop(la_ga_sigs_t *g, const char *app, uint64_t tag) {
  la__sset_t *s = g && app ? la__unlink(g, app, tag) : NULL;
  if (s) la__sset_free(g, s);
}

void la_ga_sigs_usage(const la_ga_sigs_t *g, size_t *sets, size_t *bytes) {
  *sets = g ? g->count : 0;
  *bytes = g ? g->bytes : 0;
}
