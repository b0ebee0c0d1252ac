/* SPDX-License-Identifier: BSD-3-Clause */
/* held.c: copies of open Trace-Sets' traces for publishing without a
 * read-back (held.h). A hash of held sets by (application, cycle); each
 * holds one slot per rank, so adding and taking are linear in ranks. A
 * decoded message's encodings and statistics move into its copy instead of
 * being copied (la_held_add_decoded): the loop thread then allocates and
 * copies only the copy's small top-level parts per trace. */
#include "held.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "stitch.h"

typedef struct la__hset {
  struct la__hset *hnext;
  char *app;
  uint64_t tag;
  uint32_t hash, nprocs;
  La__CompactTrace **by_rank; /* nprocs slots */
  size_t n, bytes;
} la__hset_t;

struct la_held {
  la__hset_t **table;
  size_t nbuckets, count;
  uint64_t cap, bytes;
  la__hset_t *last; /* the set found last: traces come in bursts */
  la_held_stats_t st;
};

la_held_t *la_held_new(uint64_t cap) {
  la_held_t *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->nbuckets = 256;
  if (!(h->table = calloc(h->nbuckets, sizeof *h->table))) {
    free(h);
    return NULL;
  }
  h->cap = cap;
  return h;
}

static void la__set_free(la_held_t *h, la__hset_t *s) {
  for (uint32_t r = 0; s->by_rank && r < s->nprocs; r++)
    if (s->by_rank[r]) la__compact_trace__free_unpacked(s->by_rank[r], NULL);
  h->bytes -= s->bytes;
  free(s->by_rank);
  free(s->app);
  free(s);
}

void la_held_clear(la_held_t *h) {
  if (!h) return;
  for (size_t i = 0; i < h->nbuckets; i++) {
    for (la__hset_t *s = h->table[i], *n; s; s = n) {
      n = s->hnext;
      la__set_free(h, s);
    }
    h->table[i] = NULL;
  }
  h->count = 0;
  h->last = NULL;
}

void la_held_free(la_held_t *h) {
  if (!h) return;
  la_held_clear(h);
  free(h->table);
  free(h);
}

static la__hset_t **la__slot(la_held_t *h, const char *app, uint64_t tag,
                             uint32_t hash) {
  la__hset_t **p = &h->table[hash & (h->nbuckets - 1)];
  while (*p &&
         ((*p)->hash != hash || (*p)->tag != tag || strcmp((*p)->app, app)))
    p = &(*p)->hnext;
  return p;
}

static la__hset_t *la__find(la_held_t *h, const char *app, uint64_t tag) {
  if (h->last && h->last->tag == tag && !strcmp(h->last->app, app))
    return h->last;
  la__hset_t *s = *la__slot(h, app, tag, la_stitch_hash(app, tag));
  if (s) h->last = s;
  return s;
}

static void la__grow(la_held_t *h) {
  size_t nb = h->nbuckets * 2;
  la__hset_t **t = calloc(nb, sizeof *t);
  if (!t) return; /* slower chains, still correct */
  for (size_t i = 0; i < h->nbuckets; i++)
    for (la__hset_t *s = h->table[i], *n; s; s = n) {
      n = s->hnext;
      s->hnext = t[s->hash & (nb - 1)];
      t[s->hash & (nb - 1)] = s;
    }
  free(h->table);
  h->table = t;
  h->nbuckets = nb;
}

/* Unlinks s from the table (not freed). */
static void la__unlink(la_held_t *h, la__hset_t *s) {
  la__hset_t **p = la__slot(h, s->app, s->tag, s->hash);
  if (*p == s) *p = s->hnext;
  if (h->last == s) h->last = NULL;
  h->count--;
}

int la_held_open(la_held_t *h, const char *app, uint64_t tag, uint32_t nprocs) {
  if (!h || !app || nprocs == 0) return LA_EINVAL;
  if (la__find(h, app, tag)) return 0;
  size_t bytes = sizeof(la__hset_t) + (size_t)nprocs * sizeof(void *);
  if (h->bytes + bytes > h->cap) {
    h->st.spilled++;
    return 0;
  }
  la__hset_t *s = calloc(1, sizeof *s);
  if (!s || !(s->app = strdup(app)) ||
      !(s->by_rank = calloc(nprocs, sizeof *s->by_rank))) {
    if (s) free(s->app);
    free(s);
    return 0;
  }
  s->tag = tag;
  s->nprocs = nprocs;
  s->hash = la_stitch_hash(app, tag);
  s->bytes = bytes;
  h->bytes += bytes;
  if (h->bytes > h->st.peak_bytes) h->st.peak_bytes = h->bytes;
  if (h->count + 1 > h->nbuckets) la__grow(h);
  la__hset_t **p = &h->table[s->hash & (h->nbuckets - 1)];
  s->hnext = *p;
  *p = s;
  h->count++;
  h->last = s;
  return 0;
}

/* ------------------------------------------------- a copy as stored -- */

/* A double as the store gives it back (a REAL column keeps no -0). */
static double la__d(double x) {
  return x == 0 ? 0.0 : x;
}

/* Whether *sub (a decoded submessage) may move into a copy: taking, and
 * it carries nothing the store would not return (no unknown fields). */
static int la__movable(int take, const ProtobufCMessage *sub) {
  return take && sub && sub->n_unknown_fields == 0;
}

/* A flat submessage (scalar fields only) as a copy may hold it: s itself
 * when it may move (the caller then empties its field), else a copy of
 * its fields without unknown ones. NULL when out of memory. */
static void *la__sub(ProtobufCMessage *s, int take) {
  if (la__movable(take, s)) return s;
  ProtobufCMessage *c = malloc(s->descriptor->sizeof_message);
  if (!c) return NULL;
  memcpy(c, s, s->descriptor->sizeof_message);
  c->n_unknown_fields = 0;
  c->unknown_fields = NULL;
  return c;
}

/* The statistics as stored, moved out of *sp or copied (la__sub). */
static La__SeriesStats *la__stats(La__SeriesStats **sp, int take) {
  La__SeriesStats *c = la__sub(&(*sp)->base, take);
  if (c == *sp) *sp = NULL;
  if (!c) return NULL;
  c->sum = la__d(c->sum);
  c->min = la__d(c->min);
  c->max = la__d(c->max);
  return c;
}

/* The fit error as stored, moved out of *ep or copied (la__sub). */
static La__FitError *la__error(La__FitError **ep, int take) {
  La__FitError *c = la__sub(&(*ep)->base, take);
  if (c == *ep) *ep = NULL;
  if (!c) return NULL;
  c->max_abs = la__d(c->max_abs);
  c->rmse = la__d(c->rmse);
  c->cv = la__d(c->cv);
  return c;
}

/* The bytes of *s into *d: moved (s left empty) when take, else copied.
 * -1 when empty or out of memory. */
static int la__bytes(ProtobufCBinaryData *d, ProtobufCBinaryData *s, int take) {
  if (!s->len) return -1;
  if (take) {
    *d = *s;
    s->data = NULL;
    s->len = 0;
    return 0;
  }
  if (!(d->data = malloc(s->len))) return -1;
  memcpy(d->data, s->data, s->len);
  d->len = s->len;
  return 0;
}

/* Channel series s as store_load.c returns it (its columns); with take,
 * its parts move out of s where they can. */
static La__ChannelTrace *la__channel(La__ChannelTrace *s, int take) {
  La__ChannelTrace *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  la__channel_trace__init(c);
  c->channel = s->channel;
  int bad = la__bytes(&c->segments, &s->segments, take) ||
            !(c->stats = la__stats(&s->stats, take));
  if (!bad && s->error && !isnan(s->error->max_abs))
    bad = !(c->error = la__error(&s->error, take));
  if (!bad && s->robust_stats && s->robust_segments.len) {
    c->has_robust_segments = 1;
    bad = la__bytes(&c->robust_segments, &s->robust_segments, take) ||
          !(c->robust_stats = la__stats(&s->robust_stats, take));
  }
  if (bad) {
    la__channel_trace__free_unpacked(c, NULL);
    return NULL;
  }
  return c;
}

/* t as store_load.c returns it after la_store_trace stored it: the fields
 * the store keeps, nothing else; with take, t's encodings and statistics
 * move into it (la_held_add_decoded). NULL when out of memory or when t has
 * something the store would return differently (channels out of order). */
static La__CompactTrace *la__copy(La__CompactTrace *t, int take,
                                  size_t *bytes) {
  for (size_t i = 1; i < t->n_channels; i++)
    if (t->channels[i]->channel <= t->channels[i - 1]->channel) return NULL;
  La__CompactTrace *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  la__compact_trace__init(c);
  size_t n =
      sizeof *c + sizeof *c->stats + 64 + strlen(t->app_id) + t->segments.len;
  int bad = !(c->app_id = strdup(t->app_id)) ||
            la__bytes(&c->segments, &t->segments, take) ||
            !(c->stats = la__stats(&t->stats, take));
  c->seq = t->seq;
  c->rank = t->rank;
  c->cycle_tag = t->cycle_tag;
  c->n_elements = t->n_elements;
  c->mode = t->mode;
  if (!bad && t->error &&
      !(isnan(t->error->max_abs) && isnan(t->error->rmse) &&
        isnan(t->error->cv)))
    bad = !(c->error = la__error(&t->error, take));
  c->has_t_xfer_ns = t->has_t_xfer_ns;
  c->t_xfer_ns = t->t_xfer_ns;
  c->has_rank_seq = t->has_rank_seq;
  c->rank_seq = t->rank_seq;
  if (!bad && t->robust_stats && t->robust_segments.len) {
    c->has_robust_segments = 1;
    n += t->robust_segments.len + sizeof *c->robust_stats;
    bad = la__bytes(&c->robust_segments, &t->robust_segments, take) ||
          !(c->robust_stats = la__stats(&t->robust_stats, take));
  }
  if (t->has_interference && !isnan(t->interference)) {
    c->has_interference = 1;
    c->interference = la__d(t->interference);
  }
  c->has_flagged = t->has_flagged;
  c->flagged = t->flagged;
  if (t->has_flagged_time && !isnan(t->flagged_time)) {
    c->has_flagged_time = 1;
    c->flagged_time = la__d(t->flagged_time);
  }
  if (!bad && t->n_channels) {
    c->channels = calloc(t->n_channels, sizeof *c->channels);
    bad = !c->channels;
    for (size_t i = 0; !bad && i < t->n_channels; i++) {
      La__ChannelTrace *s = t->channels[i];
      n += sizeof(La__ChannelTrace) + 64 + s->segments.len +
           s->robust_segments.len;
      bad = !(c->channels[i] = la__channel(s, take));
      if (!bad) c->n_channels++;
    }
  }
  if (bad) {
    la__compact_trace__free_unpacked(c, NULL);
    return NULL;
  }
  *bytes = n;
  return c;
}

/* Stops holding s: its copies are freed and the set counted as spilled. */
static void la__spill(la_held_t *h, la__hset_t *s) {
  la__unlink(h, s);
  la__set_free(h, s);
  h->st.spilled++;
}

/* la_held_add (take 0) and la_held_add_decoded (take 1). */
static void la__add(la_held_t *h, La__CompactTrace *t, int take) {
  if (!h || !h->count) return;
  la__hset_t *s = la__find(h, t->app_id, t->cycle_tag);
  if (!s || t->rank >= s->nprocs) return;
  size_t bytes = 0;
  La__CompactTrace *c = s->by_rank[t->rank] ? NULL : la__copy(t, take, &bytes);
  if (!c || h->bytes + bytes > h->cap) {
    if (c) la__compact_trace__free_unpacked(c, NULL);
    la__spill(h, s);
    return;
  }
  s->by_rank[t->rank] = c;
  s->n++;
  s->bytes += bytes;
  h->bytes += bytes;
  if (h->bytes > h->st.peak_bytes) h->st.peak_bytes = h->bytes;
}

void la_held_add(la_held_t *h, const La__CompactTrace *t) {
  la__add(h, (La__CompactTrace *)t, 0); /* take 0: t is only read */
}

void la_held_add_decoded(la_held_t *h, La__CompactTrace *t) {
  la__add(h, t, 1);
}

void la_held_drop(la_held_t *h, const char *app, uint64_t tag) {
  if (!h || !h->count) return;
  la__hset_t *s = la__find(h, app, tag);
  if (!s) return;
  la__unlink(h, s);
  la__set_free(h, s);
}

int la_held_take(la_held_t *h, const char *app, uint64_t tag,
                 la_held_set_t *out) {
  memset(out, 0, sizeof *out);
  if (!h || !h->count) return 0;
  la__hset_t *s = la__find(h, app, tag);
  if (!s) return 0;
  la__unlink(h, s);
  if (s->n && !(out->traces = malloc(s->n * sizeof *out->traces))) {
    la__set_free(h, s);
    return 0;
  }
  for (uint32_t r = 0; r < s->nprocs; r++) /* by rank, as the store loads */
    if (s->by_rank[r]) {
      out->traces[out->n++] = s->by_rank[r];
      s->by_rank[r] = NULL;
    }
  out->bytes = s->bytes; /* still counted until la_held_release */
  s->bytes = 0;
  la__set_free(h, s); /* the slots are empty: only the bookkeeping */
  return 1;
}

void la_held_release(la_held_t *h, la_held_set_t *s) {
  if (h && s->bytes <= h->bytes) h->bytes -= s->bytes;
  la_held_set_free(s);
}

void la_held_set_free(la_held_set_t *s) {
  for (size_t i = 0; i < s->n; i++)
    if (s->traces[i]) la__compact_trace__free_unpacked(s->traces[i], NULL);
  free(s->traces);
  memset(s, 0, sizeof *s);
}

void la_held_get_stats(const la_held_t *h, la_held_stats_t *s) {
  memset(s, 0, sizeof *s);
  if (!h) return;
  *s = h->st;
  s->sets = h->count;
  s->bytes = h->bytes;
}
