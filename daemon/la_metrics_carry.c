/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics_carry.c: per-application counters that never drop when a
 * rank ends (see la_metrics_carry.h). Two small arrays, searched linearly:
 * at most one entry per registered rank, one per application with a rank
 * that ended. */
#include "la_metrics_carry.h"

#include <stdlib.h>
#include <string.h>

typedef struct la__sum {
  uint64_t cycles, skipped, waits;
} la__sum_t;

typedef struct la__rank_seen {
  char *app_id;
  uint32_t rank;
  int32_t pid;
  la__sum_t last;
  int seen; /* in the current snapshot */
} la__rank_seen_t;

typedef struct la__app_carry {
  char *app_id;
  la__sum_t ended; /* of its ranks that ended */
} la__app_carry_t;

struct la_metrics_carry {
  la__rank_seen_t *ranks;
  size_t n_ranks, cap_ranks;
  la__app_carry_t *apps;
  size_t n_apps, cap_apps;
};

/* Makes room for one more element of size sz in *v (n used, *cap room).
 * Returns 0 or -1. */
static int la__room(void *v, size_t n, size_t *cap, size_t sz) {
  if (n < *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 16;
  void *p = realloc(*(void **)v, nc * sz);
  if (!p) return -1;
  *(void **)v = p;
  *cap = nc;
  return 0;
}

static la__app_carry_t *la__app(la_metrics_carry_t *c, const char *id,
                                int add) {
  for (size_t i = 0; i < c->n_apps; i++)
    if (!strcmp(c->apps[i].app_id, id)) return &c->apps[i];
  if (!add || la__room(&c->apps, c->n_apps, &c->cap_apps, sizeof *c->apps))
    return NULL;
  la__app_carry_t *a = &c->apps[c->n_apps];
  memset(a, 0, sizeof *a);
  if (!(a->app_id = strdup(id))) return NULL;
  c->n_apps++;
  return a;
}

static const La__StatusApp *la__in_reply(const La__StatusReply *r,
                                         const char *id) {
  for (size_t i = 0; i < r->n_apps; i++)
    if (!strcmp(r->apps[i]->app_id, id)) return r->apps[i];
  return NULL;
}

void la_metrics_carry_apply(la_metrics_carry_t **cp, La__StatusReply *r) {
  if (!*cp && !(*cp = calloc(1, sizeof **cp))) return;
  la_metrics_carry_t *c = *cp;
  for (size_t i = 0; i < c->n_ranks; i++) c->ranks[i].seen = 0;
  /* the ranks now: their last values */
  for (size_t i = 0; i < r->n_apps; i++) {
    const La__StatusApp *a = r->apps[i];
    for (size_t k = 0; k < a->n_ranks; k++) {
      const La__StatusRank *rk = a->ranks[k];
      la__rank_seen_t *s = NULL;
      for (size_t j = 0; j < c->n_ranks && !s; j++)
        if (c->ranks[j].rank == rk->rank && c->ranks[j].pid == rk->pid &&
            !strcmp(c->ranks[j].app_id, a->app_id))
          s = &c->ranks[j];
      if (!s) {
        if (la__room(&c->ranks, c->n_ranks, &c->cap_ranks, sizeof *c->ranks))
          continue;
        s = &c->ranks[c->n_ranks];
        memset(s, 0, sizeof *s);
        if (!(s->app_id = strdup(a->app_id))) continue;
        s->rank = rk->rank;
        s->pid = rk->pid;
        c->n_ranks++;
      }
      s->last = (la__sum_t){rk->cycles, rk->skipped, rk->waits};
      s->seen = 1;
    }
  }
  /* the ranks gone: their last values to their application */
  for (size_t j = 0; j < c->n_ranks;) {
    la__rank_seen_t *s = &c->ranks[j];
    if (s->seen) {
      j++;
      continue;
    }
    la__app_carry_t *a = NULL;
    if (la__in_reply(r, s->app_id)) a = la__app(c, s->app_id, 1);
    if (a) {
      a->ended.cycles += s->last.cycles;
      a->ended.skipped += s->last.skipped;
      a->ended.waits += s->last.waits;
    }
    free(s->app_id);
    c->ranks[j] = c->ranks[--c->n_ranks];
  }
  /* the applications gone are forgotten; the others get their carry */
  for (size_t j = 0; j < c->n_apps;) {
    la__app_carry_t *a = &c->apps[j];
    const La__StatusApp *in = la__in_reply(r, a->app_id);
    if (!in || in->n_ranks == 0) {
      free(a->app_id);
      c->apps[j] = c->apps[--c->n_apps];
      continue;
    }
    La__StatusRank *first = in->ranks[0];
    first->cycles += a->ended.cycles;
    first->skipped += a->ended.skipped;
    first->waits += a->ended.waits;
    j++;
  }
}

void la_metrics_carry_free(la_metrics_carry_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->n_ranks; i++) free(c->ranks[i].app_id);
  for (size_t i = 0; i < c->n_apps; i++) free(c->apps[i].app_id);
  free(c->ranks);
  free(c->apps);
  free(c);
}
