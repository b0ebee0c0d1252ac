/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_load.c: a member of a set stored by representatives, read
 * back (la__store_reps_resolve, store_reps.h, docs/clusters.md): its
 * representative's decoded values times its scale, encoded with the
 * representative's records and parameters, flagged by rep_rank, rep_scale and
 * rep_class; its exact statistics are its own row's, or, for a member
 * packed into a rep_classes row (no traces row of its own), that row's
 * (la__store_reps_packed_trace); such members are also listed for the
 * set's other readers (stamps, ranks present, history references).
 *
 * A set read (store_load.c's trace loop) keeps a cache
 * (la_store_reps_cache_t): the set's rep_members and rep_classes rows,
 * read in one query each at its first member (store_reps_rows.c), and
 * each representative's decoded values (and robust values), decoded at
 * its first member; every further member is a
 * lookup, n products and the representative's records written again
 * through the scaled ends (la_trace_scaled). A member listed in rep_robust gets
 * its robust series the same way, from its representative's robust
 * series times its robust scale.
 *
 * Deliberately not here: storing by representatives (store_reps.c), the
 * rest of a trace's loading (store_load.c).
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact.h"
#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"
#include "store_reps_rows.h"


typedef struct {
  uint32_t rep;
  int robust; /* its robust series */
  uint64_t n;
  la_trace_t *tr; /* parsed */
  double *x;      /* decoded values */
} la__rep_t;

struct la_store_reps_cache {
  char app_id[LA_MAX_ID_LEN + 1];
  uint64_t cycle_tag;
  int loaded;               /* rows read for (app_id, cycle_tag) */
  la_store_reps_rows_t rows; /* the set's rows */
  la__rep_t *reps;
  size_t n_reps, cap_reps;
  double *scaled; /* scratch: a member's values */
  uint64_t scaled_cap;
};

static const char la__rep_sql[] =
    "SELECT segments FROM traces WHERE app_id = ?1 AND cycle_tag = ?2"
    " AND rank = ?3";
static const char la__rep_robust_sql[] =
    "SELECT segments FROM robust WHERE app_id = ?1 AND cycle_tag = ?2"
    " AND rank = ?3";

la_store_reps_cache_t *la__store_reps_cache_new(void) {
  return calloc(1, sizeof(la_store_reps_cache_t));
}

static void la__cache_clear(la_store_reps_cache_t *c) {
  for (size_t i = 0; i < c->n_reps; i++) {
    free(c->reps[i].x);
    la_trace_close(c->reps[i].tr);
  }
  free(c->reps);
  la__store_reps_rows_clear(&c->rows);
  free(c->scaled);
  memset(c, 0, sizeof *c);
}

void la__store_reps_cache_free(la_store_reps_cache_t *c) {
  if (!c) return;
  la__cache_clear(c);
  free(c);
}


static int la__bad_member_row(la_store_t *s, const La__CompactTrace *t,
                              int64_t rank) {
  return la__store_corrupt(s,
                           "trace of %s cycle %llu rank %lld: bad "
                           "rep_members row",
                           t->app_id, (unsigned long long)t->cycle_tag,
                           (long long)rank);
}


/* Representative rep of t's set, decoded into a new entry of c. */
static int la__decode_rep(la_store_t *s, const La__CompactTrace *t,
                          uint32_t rep, int robust, la_store_reps_cache_t *c,
                          la__rep_t **out) {
  la_db_stmt_t *st;
  const char *what = robust ? "robust weights" : "segments";
  if (la_db_prepare(s->db, robust ? la__rep_robust_sql : la__rep_sql, 0,
                    &st) != 0)
    return la__store_sqlerr(s, "preparing the representatives statement");
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
  la_db_bind_int64(st, 3, rep);
  int rc = la_db_step(st);
  if (rc != LA_DB_ROW) {
    int r = rc == LA_DB_DONE
                ? la__store_corrupt(s,
                                    "trace of %s cycle %llu rank %u: its "
                                    "representative %u is not stored",
                                    t->app_id,
                                    (unsigned long long)t->cycle_tag,
                                    t->rank, rep)
                : la__store_sqlerr(s, "loading a member's representative");
    la_db_finalize(st);
    return r;
  }
  const void *blob = la_db_column_blob(st, 0);
  int blen = la_db_column_bytes(st, 0);
  if (blen < 0 || (unsigned)blen > LA_STORE_MAX_BLOB) {
    la_db_finalize(st);
    return la__bad_member_row(s, t, t->rank);
  }
  /* the representative may itself be kept as a history reference */
  La__CompactTrace rt;
  la__compact_trace__init(&rt);
  rt.app_id = t->app_id;
  rt.cycle_tag = t->cycle_tag;
  rt.rank = rep;
  uint8_t *copy = malloc(blen ? (size_t)blen : 1);
  if (!copy) {
    la_db_finalize(st);
    return LA_ENOMEM;
  }
  if (blen) memcpy(copy, blob, (size_t)blen);
  la_db_finalize(st);
  ProtobufCBinaryData *d = robust ? &rt.robust_segments : &rt.segments;
  d->data = copy;
  d->len = (size_t)blen;
  int r = blen ? 0 : la__store_history_resolve(s, &rt, robust);
  la_trace_t *tr = NULL;
  char why[160] = "";
  if (r == 0)
    r = la_trace_open_max(d->data, d->len, t->n_elements, &tr, why,
                          sizeof why);
  free(d->data);
  if (r == 0 && la_trace_count(tr) != t->n_elements) {
    la_trace_close(tr);
    return la__store_corrupt(s,
                             "trace of %s cycle %llu rank %u: its "
                             "representative has another element count",
                             t->app_id, (unsigned long long)t->cycle_tag,
                             t->rank);
  }
  if (r) {
    if (r == LA_ENOMEM || r == LA_EIO) return r;
    return la__store_corrupt(s,
                             "trace of %s cycle %llu rank %u: its "
                             "representative's %s: %s",
                             t->app_id, (unsigned long long)t->cycle_tag,
                             t->rank, what, why);
  }
  la__rep_t e = {.rep = rep, .robust = robust, .n = t->n_elements, .tr = tr};
  e.x = malloc((e.n ? e.n : 1) * sizeof *e.x);
  r = e.x ? la_trace_decode(tr, 0, e.n, e.x) : LA_ENOMEM;
  if (r == 0)
    r = la__store_reserve(s, &c->reps, c->n_reps, &c->cap_reps,
                          sizeof *c->reps, 8);
  if (r) {
    free(e.x);
    la_trace_close(tr);
    return r == LA_ENOMEM ? LA_ENOMEM : LA_EIO;
  }
  c->reps[c->n_reps] = e;
  *out = &c->reps[c->n_reps++];
  return 0;
}

/* t's segments := rep's values times scale, encoded record for record
 * as rep's (la_trace_scaled: no segmentation). */
static int la__reps_scale(la_store_t *s, La__CompactTrace *t,
                          const la__rep_t *rep, double scale,
                          la_store_reps_cache_t *c) {
  ProtobufCBinaryData *d = rep->robust ? &t->robust_segments : &t->segments;
  size_t n = (size_t)rep->n;
  if (n > c->scaled_cap) {
    double *x = realloc(c->scaled, n * sizeof *x);
    if (!x) return LA_ENOMEM;
    c->scaled = x;
    c->scaled_cap = n;
  }
  la_compact_result_t res = {0};
  int r = la_trace_scaled(rep->tr, rep->x, scale, c->scaled, &res);
  if (r) {
    la__store_fmt(s->err, sizeof s->err,
                  "reconstructing rank %u of %s cycle %llu: error %d", t->rank,
                  t->app_id, (unsigned long long)t->cycle_tag, r);
    return r == LA_ENOMEM ? LA_ENOMEM : LA_EIO;
  }
  free(d->data);
  d->data = res.bytes; /* the message owns it now */
  d->len = res.len;
  if (!rep->robust) t->mode = (La__CompactMode)res.mode;
  return 0;
}

/* The cached decoding of rep (its robust series when robust), decoded
 * now when not yet. */
static int la__rep_of(la_store_t *s, const La__CompactTrace *t, uint32_t rep,
                      int robust, la_store_reps_cache_t *c, la__rep_t **out) {
  for (size_t i = c->n_reps; i-- > 0;)
    if (c->reps[i].rep == rep && c->reps[i].robust == robust) {
      *out = &c->reps[i];
      break;
    }
  int r = *out ? 0 : la__decode_rep(s, t, rep, robust, c, out);
  if (r == 0 && (*out)->n != t->n_elements)
    r = la__store_corrupt(s,
                          "trace of %s cycle %llu rank %u: its "
                          "representative has another element count",
                          t->app_id, (unsigned long long)t->cycle_tag,
                          t->rank);
  return r;
}

/* c holds the set's rows (read now when it holds another set's). */
static int la__cache_key(la_store_t *s, const char *app_id, uint64_t tag,
                         la_store_reps_cache_t *c) {
  if (c->loaded && c->cycle_tag == tag && strcmp(c->app_id, app_id) == 0)
    return 0;
  la__cache_clear(c);
  snprintf(c->app_id, sizeof c->app_id, "%s", app_id);
  c->cycle_tag = tag;
  c->loaded = 1;
  int r = la__store_reps_rows_read(s, app_id, tag, &c->rows);
  if (r) la__cache_clear(c);
  return r;
}

static int la__cache_set(la_store_t *s, const La__CompactTrace *t,
                         la_store_reps_cache_t *c) {
  return la__cache_key(s, t->app_id, t->cycle_tag, c);
}

static int la__resolve(la_store_t *s, La__CompactTrace *t,
                       la_store_reps_cache_t *c) {
  int r = la__cache_set(s, t, c);
  if (r) return r;
  const la_store_rep_member_t *m = la__store_reps_rows_find(&c->rows, t->rank);
  if (!m) return 0; /* no member: a history reference, perhaps */
  la__rep_t *rep = NULL;
  r = la__rep_of(s, t, m->rep, 0, c, &rep);
  if (r == 0) r = la__reps_scale(s, t, rep, m->scale, c);
  if (r) return r;
  if (t->error) {
    free(t->error);
    t->error = NULL; /* the member's own error is not known */
  }
  t->has_rep_rank = t->has_rep_scale = t->has_rep_class = 1;
  t->rep_rank = m->rep;
  t->rep_scale = m->scale;
  t->rep_class = m->cls;
  return 1;
}

/* t's robust series from its representative's, when a rep_robust row
 * says so: 1, else 0. */
static int la__resolve_robust(la_store_t *s, La__CompactTrace *t,
                              la_store_reps_cache_t *c) {
  int r = la__cache_set(s, t, c);
  if (r) return r;
  const la_store_rep_rmember_t *rm =
      la__store_reps_rows_robust(&c->rows, t->rank);
  const la_store_rep_member_t *m =
      rm ? la__store_reps_rows_find(&c->rows, t->rank) : NULL;
  if (!rm) return 0;
  if (!m)
    return la__store_corrupt(s,
                             "robust weights of %s cycle %llu rank %u: a "
                             "rep_robust row without its rep_members row",
                             t->app_id, (unsigned long long)t->cycle_tag,
                             t->rank);
  la__rep_t *rep = NULL;
  r = la__rep_of(s, t, m->rep, 1, c, &rep);
  if (r == 0) r = la__reps_scale(s, t, rep, rm->scale, c);
  return r ? r : 1;
}

int la__store_reps_resolve_robust(la_store_t *s, La__CompactTrace *t,
                                  la_store_reps_cache_t *cache) {
  return la__resolve_robust(s, t, cache);
}

int la__store_reps_resolve(la_store_t *s, La__CompactTrace *t,
                           la_store_reps_cache_t *cache) {
  return la__resolve(s, t, cache);
}

/* ------------------------------------- members packed into rep_classes */

/* The member of rank in c when it is packed, else NULL. */
static const la_store_rep_member_t *la__packed(const la_store_reps_cache_t *c,
                                      uint32_t rank) {
  const la_store_rep_member_t *m = la__store_reps_rows_find(&c->rows, rank);
  return m && m->pk >= 0 ? m : NULL;
}

int la__store_reps_packed_set(la_store_t *s, const char *app_id,
                              uint64_t cycle_tag, la_store_reps_cache_t *c,
                              size_t *n) {
  int r = la__cache_key(s, app_id, cycle_tag, c);
  *n = r ? 0 : c->rows.n_packed;
  return r;
}

int la__store_reps_packed_next(const la_store_reps_cache_t *c, size_t *cur,
                               uint32_t *rank) {
  const la_store_reps_rows_t *w = &c->rows;
  while (*cur < w->n_members && w->members[*cur].pk < 0) ++*cur;
  if (*cur >= w->n_members) return 0;
  *rank = w->members[(*cur)++].rank;
  return 1;
}

int la__store_reps_packed_trace(la_store_t *s, la_store_reps_cache_t *c,
                                uint32_t rank, La__CompactTrace **out) {
  const la_store_rep_member_t *m = la__packed(c, rank);
  assert(c->loaded && m);
  const la_store_packed_t *p = &c->rows.packed[m->pk];
  La__CompactTrace *t = calloc(1, sizeof *t);
  if (!t) return LA_ENOMEM;
  *out = t;
  la__compact_trace__init(t);
  t->app_id = strdup(c->app_id);
  t->stats = malloc(sizeof *t->stats);
  if (!t->app_id || !t->stats) return LA_ENOMEM;
  la__series_stats__init(t->stats);
  t->rank = rank;
  t->cycle_tag = c->cycle_tag;
  t->n_elements = m->nel;
  t->stats->count = m->nel;
  t->stats->sum = p->has_sum ? p->sum : NAN;
  t->stats->min = p->has_min ? p->min : NAN;
  t->stats->max = p->has_max ? p->max : NAN;
  t->has_t_xfer_ns = p->has_xfer;
  t->t_xfer_ns = p->t_xfer_ns;
  t->has_rank_seq = p->has_rank_seq;
  t->rank_seq = p->rank_seq;
  t->seq = p->seq;
  int r = la__resolve(s, t, c);
  assert(r != 0);
  return r == 1 ? 0 : r;
}

