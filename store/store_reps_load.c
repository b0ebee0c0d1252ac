/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_load.c: a member of a set stored by representatives, read
 * back (la__store_reps_resolve, store_reps.h, docs/clusters.md): its
 * representative's decoded values times its scale, encoded with the
 * representative's records and parameters, flagged by rep_rank, rep_scale and
 * rep_class; its exact statistics are its own row's.
 *
 * A set read (store_load.c's trace loop) keeps a cache
 * (la_store_reps_cache_t): the set's rep_members rows, read in one query
 * at its first member, and each representative's decoded values (and
 * robust values), decoded at its first member; every further member is a
 * lookup, n products and the representative's records written again
 * through the scaled ends (la_trace_scaled). A member listed in rep_robust gets
 * its robust series the same way, from its representative's robust
 * series times its robust scale.
 *
 * Deliberately not here: storing by representatives (store_reps.c), the
 * rest of a trace's loading (store_load.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact.h"
#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"

typedef struct {
  uint32_t rank, cls, rep;
  double scale;
} la__member_t;

typedef struct {
  uint32_t rank;
  double scale;
} la__rmember_t;

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
  int loaded;            /* members read for (app_id, cycle_tag) */
  la__member_t *members; /* increasing rank */
  size_t n_members;
  la__rmember_t *rmembers; /* rep_robust rows, increasing rank */
  size_t n_rmembers;
  la__rep_t *reps;
  size_t n_reps, cap_reps;
  double *scaled; /* scratch: a member's values */
  uint64_t scaled_cap;
};

static const char la__members_sql[] =
    "SELECT rank, class, rep_rank, scale FROM rep_members"
    " WHERE app_id = ?1 AND cycle_tag = ?2 ORDER BY rank";
static const char la__rmembers_sql[] =
    "SELECT rank, scale FROM rep_robust WHERE app_id = ?1 AND cycle_tag = ?2"
    " ORDER BY rank";
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
  free(c->members);
  free(c->rmembers);
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

/* The rep_members and rep_robust rows of t's set into c. Returns 0, LA_EIO, LA_ENOMEM. */
static int la__read_members(la_store_t *s, const La__CompactTrace *t,
                            la_store_reps_cache_t *c) {
  la_db_stmt_t *st;
  const char *sql = la__members_sql;
  if (la_db_prepare(s->db, sql, 0, &st) != 0)
    return la__store_sqlerr(s, "preparing the representatives statement");
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
  size_t cap = 0;
  int rc, r = 0;
  int64_t prev = -1;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t m = la_db_column_int64(st, 0), cls = la_db_column_int64(st, 1),
            rep = la_db_column_int64(st, 2);
    double scale = la_db_column_double(st, 3);
    if (m <= prev || m >= LA_MAX_RANKS || cls < 0 || cls > UINT32_MAX ||
        rep < 0 || rep >= LA_MAX_RANKS || rep == m || !isfinite(scale)) {
      r = la__bad_member_row(s, t, m);
      break;
    }
    prev = m;
    if ((r = la__store_reserve(s, &c->members, c->n_members, &cap,
                               sizeof *c->members, 64)))
      break;
    c->members[c->n_members++] = (la__member_t){
        (uint32_t)m, (uint32_t)cls, (uint32_t)rep, scale};
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading a set's class members");
  la_db_finalize(st);
  if (r) return r;
  /* the members whose robust series are their representative's */
  sql = la__rmembers_sql;
  if (la_db_prepare(s->db, sql, 0, &st) != 0)
    return la__store_sqlerr(s, "preparing the representatives statement");
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
  cap = 0;
  prev = -1;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t m = la_db_column_int64(st, 0);
    double scale = la_db_column_double(st, 1);
    if (m <= prev || m >= LA_MAX_RANKS || !isfinite(scale)) {
      r = la__store_corrupt(s,
                            "robust weights of %s cycle %llu rank %lld: bad "
                            "rep_robust row",
                            t->app_id, (unsigned long long)t->cycle_tag,
                            (long long)m);
      break;
    }
    prev = m;
    if ((r = la__store_reserve(s, &c->rmembers, c->n_rmembers, &cap,
                               sizeof *c->rmembers, 64)))
      break;
    c->rmembers[c->n_rmembers++] = (la__rmember_t){(uint32_t)m, scale};
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading a set's robust class members");
  la_db_finalize(st);
  return r;
}

static const la__rmember_t *la__find_rmember(const la_store_reps_cache_t *c,
                                             uint32_t rank) {
  size_t lo = 0, hi = c->n_rmembers;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->rmembers[mid].rank < rank)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->n_rmembers && c->rmembers[lo].rank == rank ? &c->rmembers[lo]
                                                            : NULL;
}

static const la__member_t *la__find_member(const la_store_reps_cache_t *c,
                                           uint32_t rank) {
  size_t lo = 0, hi = c->n_members;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->members[mid].rank < rank)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < c->n_members && c->members[lo].rank == rank ? &c->members[lo]
                                                          : NULL;
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

/* c holds t's set's rows (read now when it holds another set's). */
static int la__cache_set(la_store_t *s, const La__CompactTrace *t,
                         la_store_reps_cache_t *c) {
  if (c->loaded && c->cycle_tag == t->cycle_tag &&
      strcmp(c->app_id, t->app_id) == 0)
    return 0;
  la__cache_clear(c);
  snprintf(c->app_id, sizeof c->app_id, "%s", t->app_id);
  c->cycle_tag = t->cycle_tag;
  c->loaded = 1;
  int r = la__read_members(s, t, c);
  if (r) la__cache_clear(c);
  return r;
}

static int la__resolve(la_store_t *s, La__CompactTrace *t,
                       la_store_reps_cache_t *c) {
  int r = la__cache_set(s, t, c);
  if (r) return r;
  const la__member_t *m = la__find_member(c, t->rank);
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
  const la__rmember_t *rm = la__find_rmember(c, t->rank);
  const la__member_t *m = rm ? la__find_member(c, t->rank) : NULL;
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
