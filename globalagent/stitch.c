/* SPDX-License-Identifier: BSD-3-Clause */
/* stitch.c: the stitcher's hash table of open sets, their list ordered by
 * first arrival, and the bounded FIFO cache of closed keys (stitch.h). */
#include "stitch.h"

#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"

typedef struct la__set {
  struct la__set *hnext;       /* hash chain */
  struct la__set *prev, *next; /* arrival order, oldest first */
  uint64_t tag, t_first;
  uint32_t nprocs, present;
  uint32_t hash;
  char *app_id;
  uint64_t bits[]; /* nprocs bits */
} la__set_t;

typedef struct la__closed {
  struct la__closed *hnext; /* chain in the closed table */
  uint32_t hash;
  uint64_t tag;
  char *app_id; /* NULL: empty slot */
} la__closed_t;

struct la_stitch {
  la__set_t **table;
  size_t nbuckets, count, max_open;
  size_t bytes, max_bytes; /* open sets' memory (la__set_bytes), its cap */
  la__set_t *oldest, *newest;
  la__closed_t *closed;  /* ring of recently closed keys, FIFO */
  la__closed_t **ctable; /* their hash index (cbuckets, a power of 2) */
  size_t nclosed, closed_head, cbuckets;
  la_stitch_close_fn fn;
  void *arg;
  la_stitch_lookup_fn lookup;
  void *lookup_arg;
  la_stitch_stats_t st;
};

uint32_t la_stitch_hash(const char *app, uint64_t tag) {
  uint32_t h = 2166136261u;
  for (const char *p = app; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
  for (int i = 0; i < 8; i++) h = (h ^ (uint8_t)(tag >> (8 * i))) * 16777619u;
  return h;
}

la_stitch_t *la_stitch_new(size_t max_open, la_stitch_close_fn fn, void *arg) {
  la_stitch_t *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->nbuckets = 1024;
  st->table = calloc(st->nbuckets, sizeof *st->table);
  if (!st->table ||
      la_stitch_set_closed_cache(st, LA_STITCH_CLOSED_CACHE_DEFAULT) != 0) {
    free(st->table);
    free(st);
    return NULL;
  }
  st->max_open = max_open ? max_open : 1;
  st->fn = fn;
  st->arg = arg;
  return st;
}

void la_stitch_set_max_open(la_stitch_t *st, size_t max_open) {
  st->max_open = max_open ? max_open : 1;
}

void la_stitch_set_max_memory(la_stitch_t *st, size_t bytes) {
  st->max_bytes = bytes;
}

void la_stitch_set_lookup(la_stitch_t *st, la_stitch_lookup_fn fn, void *arg) {
  st->lookup = fn;
  st->lookup_arg = arg;
}

int la_stitch_set_closed_cache(la_stitch_t *st, size_t n) {
  if (n == 0 || n > SIZE_MAX / 4 / sizeof(la__closed_t)) return LA_EINVAL;
  size_t nb = 16;
  while (nb < n) nb *= 2;
  la__closed_t *ring = calloc(n, sizeof *ring);
  la__closed_t **index = calloc(nb, sizeof *index);
  if (!ring || !index) {
    free(ring);
    free(index);
    return LA_ENOMEM;
  }
  for (size_t i = 0; i < st->nclosed; i++) free(st->closed[i].app_id);
  free(st->closed);
  free(st->ctable);
  st->closed = ring;
  st->ctable = index;
  st->nclosed = n;
  st->cbuckets = nb;
  st->closed_head = 0;
  st->st.closed_cached = 0;
  return 0;
}

/* What an open set of nprocs ranks with key app costs in memory. */
static size_t la__set_bytes(uint32_t nprocs, const char *app) {
  return sizeof(la__set_t) + (nprocs + 63) / 64 * sizeof(uint64_t) +
         strlen(app) + 1;
}

static void la__set_free(la__set_t *s) {
  free(s->app_id);
  free(s);
}

void la_stitch_free(la_stitch_t *st) {
  if (!st) return;
  for (la__set_t *s = st->oldest, *n; s; s = n) {
    n = s->next;
    la__set_free(s);
  }
  for (size_t i = 0; i < st->nclosed; i++) free(st->closed[i].app_id);
  free(st->closed);
  free(st->ctable);
  free(st->table);
  free(st);
}

static la__set_t **la__slot(la_stitch_t *st, const char *app, uint64_t tag,
                            uint32_t h) {
  la__set_t **p = &st->table[h & (st->nbuckets - 1)];
  while (*p &&
         ((*p)->hash != h || (*p)->tag != tag || strcmp((*p)->app_id, app)))
    p = &(*p)->hnext;
  return p;
}

static int la__was_closed(const la_stitch_t *st, const char *app, uint64_t tag,
                          uint32_t h) {
  for (const la__closed_t *c = st->ctable[h & (st->cbuckets - 1)]; c;
       c = c->hnext)
    if (c->hash == h && c->tag == tag && !strcmp(c->app_id, app)) return 1;
  return 0;
}

/* Caches (app, tag) as closed; when the cache is full the oldest key is
 * forgotten (counted). Out of memory: not cached (the lookup knows it). */
static void la__remember_closed(la_stitch_t *st, const char *app, uint64_t tag,
                                uint32_t h) {
  la__closed_t *c = &st->closed[st->closed_head];
  if (c->app_id) { /* evict the oldest: unlink it from its chain */
    la__closed_t **p = &st->ctable[c->hash & (st->cbuckets - 1)];
    while (*p && *p != c) p = &(*p)->hnext;
    if (*p) *p = c->hnext;
    free(c->app_id);
    c->app_id = NULL;
    st->st.closed_cached--;
    st->st.closed_evicted++;
  }
  c->app_id = strdup(app);
  c->hash = h;
  c->tag = tag;
  c->hnext = NULL;
  if (c->app_id) {
    la__closed_t **head = &st->ctable[c->hash & (st->cbuckets - 1)];
    c->hnext = *head;
    *head = c;
    st->st.closed_cached++;
  }
  st->closed_head = (st->closed_head + 1) % st->nclosed;
}

static void la__grow(la_stitch_t *st) {
  size_t nb = st->nbuckets * 2;
  la__set_t **t = calloc(nb, sizeof *t);
  if (!t) return; /* keep the old table: slower, still correct */
  for (size_t i = 0; i < st->nbuckets; i++)
    for (la__set_t *s = st->table[i], *n; s; s = n) {
      n = s->hnext;
      s->hnext = t[s->hash & (nb - 1)];
      t[s->hash & (nb - 1)] = s;
    }
  free(st->table);
  st->table = t;
  st->nbuckets = nb;
}

/* Unlinks s, reports it closed, frees it. */
static void la__close(la_stitch_t *st, la__set_t *s, int complete) {
  la__set_t **p = la__slot(st, s->app_id, s->tag, s->hash);
  *p = s->hnext;
  if (s->prev)
    s->prev->next = s->next;
  else
    st->oldest = s->next;
  if (s->next)
    s->next->prev = s->prev;
  else
    st->newest = s->prev;
  st->count--;
  st->bytes -= la__set_bytes(s->nprocs, s->app_id);
  uint32_t stackbuf[256], *missing = stackbuf;
  size_t nm = s->nprocs - s->present;
  if (nm > 256 && !(missing = malloc(nm * sizeof *missing))) {
    missing = stackbuf;
    nm = 256; /* out of memory: report the first 256 */
  }
  size_t k = 0;
  for (uint32_t r = 0; r < s->nprocs && k < nm; r++)
    if (!(s->bits[r / 64] >> (r % 64) & 1)) missing[k++] = r;
  if (complete)
    st->st.complete++;
  else
    st->st.partial++;
  la__remember_closed(st, s->app_id, s->tag, s->hash);
  if (st->fn)
    st->fn(st->arg, s->app_id, s->tag, s->nprocs, complete, missing, k,
           s->t_first);
  if (missing != stackbuf) free(missing);
  la__set_free(s);
}

static la__set_t *la__open(la_stitch_t *st, const char *app, uint32_t nprocs,
                           uint64_t tag, uint32_t h, uint64_t now) {
  size_t need = la__set_bytes(nprocs, app);
  while (st->oldest && (st->count >= st->max_open ||
                        (st->max_bytes && st->bytes + need > st->max_bytes))) {
    st->st.evicted++;
    la__close(st, st->oldest, 0);
  }
  size_t words = (nprocs + 63) / 64;
  la__set_t *s = calloc(1, sizeof *s + words * sizeof(uint64_t));
  if (!s || !(s->app_id = strdup(app))) {
    free(s);
    return NULL;
  }
  s->tag = tag;
  s->nprocs = nprocs;
  s->hash = h;
  s->t_first = now;
  if (st->count + 1 > st->nbuckets) la__grow(st);
  la__set_t **p = &st->table[h & (st->nbuckets - 1)];
  s->hnext = *p;
  *p = s;
  /* ordered by t_first: new sets go last (O(1)); a restored older set goes
   * before the younger ones (callers restore oldest first) */
  la__set_t *after = st->newest;
  while (after && after->t_first > now) after = after->prev;
  s->prev = after;
  s->next = after ? after->next : st->oldest;
  if (s->next)
    s->next->prev = s;
  else
    st->newest = s;
  if (after)
    after->next = s;
  else
    st->oldest = s;
  st->count++;
  st->bytes += need;
  st->st.opened++;
  return s;
}

/* Marks rank present; closes the set when complete. 1 new, 0 duplicate. */
static int la__mark(la_stitch_t *st, la__set_t *s, uint32_t rank) {
  uint64_t bit = 1ULL << (rank % 64);
  if (s->bits[rank / 64] & bit) return 0;
  s->bits[rank / 64] |= bit;
  if (++s->present == s->nprocs) la__close(st, s, 1);
  return 1;
}

int la_stitch_add(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                  uint32_t rank, uint64_t cycle_tag, uint64_t now_ms) {
  if (nprocs == 0 || rank >= nprocs) return LA_EINVAL;
  uint32_t h = la_stitch_hash(app_id, cycle_tag);
  la__set_t *s = *la__slot(st, app_id, cycle_tag, h);
  if (!s) {
    int closed = la__was_closed(st, app_id, cycle_tag, h);
    if (!closed && st->lookup) {
      st->st.lookups++;
      closed = st->lookup(st->lookup_arg, app_id, cycle_tag);
      if (closed < 0) return closed;
      if (closed) la__remember_closed(st, app_id, cycle_tag, h);
    }
    if (closed) {
      st->st.late++;
      return LA_STITCH_LATE;
    }
    if (!(s = la__open(st, app_id, nprocs, cycle_tag, h, now_ms)))
      return LA_ENOMEM;
  } else if (s->nprocs != nprocs) {
    return LA_EINVAL;
  }
  if (!la__mark(st, s, rank)) {
    st->st.duplicates++;
    return LA_STITCH_DUP;
  }
  return LA_STITCH_NEW;
}

int la_stitch_restore(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                      uint64_t cycle_tag, const uint32_t *ranks, size_t n,
                      uint64_t t_first_ms) {
  if (nprocs == 0) return LA_EINVAL;
  uint32_t h = la_stitch_hash(app_id, cycle_tag);
  la__set_t *s = *la__slot(st, app_id, cycle_tag, h);
  if (!s && !(s = la__open(st, app_id, nprocs, cycle_tag, h, t_first_ms)))
    return LA_ENOMEM;
  if (s->nprocs != nprocs) return LA_EINVAL;
  for (size_t i = 0; i < n; i++) {
    if (ranks[i] >= nprocs) return LA_EINVAL;
    /* la__mark frees the set when it completes: stop touching it then */
    if (la__mark(st, s, ranks[i]) && !*la__slot(st, app_id, cycle_tag, h))
      break;
  }
  return 0;
}

size_t la_stitch_expire(la_stitch_t *st, uint64_t now_ms, uint64_t timeout_ms) {
  size_t n = 0;
  while (st->oldest && now_ms - st->oldest->t_first >= timeout_ms &&
         now_ms >= st->oldest->t_first) {
    la__close(st, st->oldest, 0);
    n++;
  }
  return n;
}

size_t la_stitch_app_end(la_stitch_t *st, const char *app_id) {
  size_t n = 0;
  for (la__set_t *s = st->oldest, *next; s; s = next) {
    next = s->next;
    if (!strcmp(s->app_id, app_id)) {
      la__close(st, s, 0);
      n++;
    }
  }
  return n;
}

int la_stitch_would_add(la_stitch_t *st, const char *app_id, uint32_t nprocs,
                        uint32_t rank, uint64_t cycle_tag) {
  const la__set_t *s =
      *la__slot(st, app_id, cycle_tag, la_stitch_hash(app_id, cycle_tag));
  return s && s->nprocs == nprocs && rank < nprocs &&
         !(s->bits[rank / 64] & (1ULL << (rank % 64)));
}

int la_stitch_is_open(la_stitch_t *st, const char *app_id, uint64_t cycle_tag) {
  return *la__slot(st, app_id, cycle_tag, la_stitch_hash(app_id, cycle_tag)) != NULL;
}

void la_stitch_get_stats(const la_stitch_t *st, la_stitch_stats_t *s) {
  *s = st->st;
  s->open = st->count;
  s->open_bytes = st->bytes;
}
