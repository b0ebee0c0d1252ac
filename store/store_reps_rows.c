/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_rows.c: the rows that say how a set was stored by
 * representatives (store_reps_rows.h, docs/storage.md), read in one query
 * per table: rep_members, rep_classes (each row's members unpacked,
 * store_reps_pack.c; a member's scale its exact total over the row's
 * rep_total unless it has its own; its min and max, unless it kept its
 * own, its representative's times that scale) and rep_robust; and what
 * the store's other readers ask of the packed members: a member's stamp,
 * whether a key is one, the set's ranks.
 *
 * Deliberately not here: rebuilding a member's values
 * (store_reps_load.c), writing the rows (store_reps.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"
#include "store_reps_rows.h"

static const char la__members_sql[] =
    "SELECT rank, class, rep_rank, scale FROM rep_members"
    " WHERE app_id = ?1 AND cycle_tag = ?2 ORDER BY rank";
/* with the representative's min and max (a predicted member's are
 * those times its scale) */
static const char la__classes_sql[] =
    "SELECT c.class, c.rep_rank, c.rep_total, c.n_elements, c.n_members,"
    " c.members, t.stat_min, t.stat_max FROM rep_classes c"
    " LEFT JOIN traces t ON t.app_id = c.app_id AND t.cycle_tag ="
    " c.cycle_tag AND t.rank = c.rep_rank"
    " WHERE c.app_id = ?1 AND c.cycle_tag = ?2 ORDER BY c.class";
static const char la__rmembers_sql[] =
    "SELECT rank, scale FROM rep_robust WHERE app_id = ?1 AND cycle_tag = ?2"
    " ORDER BY rank";

/* *vp (an array of *cap elements of size bytes) grown to at least need:
 * 0 or LA_ENOMEM. (store.c's la__store_reserve would make store.c, which
 * calls store_history.c, which calls this file, a cycle.) */
static int la__room(void *vp, size_t need, size_t *cap, size_t size) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 64;
  while (nc < need && nc <= SIZE_MAX / 2) nc *= 2;
  void *v;
  memcpy(&v, vp, sizeof v); /* a pointer of another type: its bytes */
  void *nv = nc >= need && nc <= SIZE_MAX / size ? realloc(v, nc * size) : NULL;
  if (!nv) return LA_ENOMEM;
  memcpy(vp, &nv, sizeof nv);
  *cap = nc;
  return 0;
}

static int la__bad_row(la_store_t *s, const char *app_id, uint64_t tag,
                       int64_t rank, const char *table) {
  return la__store_corrupt(s, "trace of %s cycle %llu rank %lld: bad %s row",
                           app_id, (unsigned long long)tag, (long long)rank,
                           table);
}

static int la__by_rank(const void *a, const void *b) {
  uint32_t x = ((const la_store_rep_member_t *)a)->rank,
           y = ((const la_store_rep_member_t *)b)->rank;
  return x < y ? -1 : x > y;
}

/* One rep_classes row (st) of the set into c: its members unpacked. */
static int la__read_class(la_store_t *s, const char *app_id, uint64_t tag,
                          la_db_stmt_t *st, la_store_reps_rows_t *c,
                          size_t *cap, size_t *pcap) {
  int64_t cls = la_db_column_int64(st, 0), rep = la_db_column_int64(st, 1),
          nel = la_db_column_int64(st, 3), nm = la_db_column_int64(st, 4);
  double tot = la_db_column_double(st, 2);
  const void *blob = la_db_column_blob(st, 5);
  int blen = la_db_column_bytes(st, 5);
  if (cls < 0 || cls > UINT32_MAX || rep < 0 || rep >= LA_MAX_RANKS ||
      nel < 1 || nel > ((int64_t)1 << 32) || nm < 1 || nm >= LA_MAX_RANKS ||
      blen < 1 || (unsigned)blen > LA_STORE_MAX_BLOB)
    return la__bad_row(s, app_id, tag, rep, "rep_classes");
  /* room for nm more of each */
  int r =
      la__room(&c->packed, c->n_packed + (size_t)nm, pcap, sizeof *c->packed);
  if (r == 0)
    r = la__room(&c->members, c->n_members + (size_t)nm, cap,
                 sizeof *c->members);
  if (r) return r;
  size_t n = 0;
  double bound;
  la_store_packed_t *p = c->packed + c->n_packed;
  if (la__store_unpack_members(blob, (size_t)blen, tot, p, (size_t)nm, &n,
                               &bound) != 0 ||
      n != (size_t)nm)
    return la__bad_row(s, app_id, tag, rep, "rep_classes");
  int rep_mm = la_db_column_type(st, 6) != LA_DB_NULL &&
               la_db_column_type(st, 7) != LA_DB_NULL;
  double rmin = rep_mm ? la_db_column_double(st, 6) : NAN,
         rmax = rep_mm ? la_db_column_double(st, 7) : NAN;
  for (size_t i = 0; i < n; i++) {
    if (p[i].rank == rep)
      return la__bad_row(s, app_id, tag, rep, "rep_classes");
    double scale = p[i].has_scale ? p[i].scale : p[i].sum / tot;
    if (!isfinite(scale) || (p[i].predicted && !rep_mm))
      return la__bad_row(s, app_id, tag, p[i].rank, "rep_classes");
    if (p[i].predicted) /* within the class's bound of its own */
      la__store_pack_minmax(scale, rmin, rmax, &p[i].min, &p[i].max);
    c->members[c->n_members++] =
        (la_store_rep_member_t){p[i].rank,
                                (uint32_t)cls,
                                (uint32_t)rep,
                                scale,
                                (int64_t)(c->n_packed + i),
                                (uint64_t)nel};
  }
  c->n_packed += n;
  return 0;
}

/* The rep_classes rows of the set into c (after its rep_members rows),
 * the members then put in rank order. */
static int la__read_classes(la_store_t *s, const char *app_id, uint64_t tag,
                            la_store_reps_rows_t *c, size_t *cap) {
  la_db_stmt_t *st;
  if (la_db_prepare(s->db, la__classes_sql, 0, &st) != 0)
    return la__store_sqlerr(s, "preparing the representatives statement");
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(tag));
  size_t pcap = 0, legacy = c->n_members;
  int rc, r = 0;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW)
    r = la__read_class(s, app_id, tag, st, c, cap, &pcap);
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading a set's classes");
  la_db_finalize(st);
  if (r || c->n_members == legacy) return r;
  qsort(c->members, c->n_members, sizeof *c->members, la__by_rank);
  for (size_t i = 1; i < c->n_members; i++)
    if (c->members[i].rank == c->members[i - 1].rank)
      return la__bad_row(s, app_id, tag, c->members[i].rank, "rep_classes");
  return 0;
}

int la__store_reps_rows_read(la_store_t *s, const char *app_id, uint64_t tag,
                             la_store_reps_rows_t *c) {
  la_db_stmt_t *st;
  const char *sql = la__members_sql;
  if (la_db_prepare(s->db, sql, 0, &st) != 0)
    return la__store_sqlerr(s, "preparing the representatives statement");
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(tag));
  size_t cap = 0;
  int rc, r = 0;
  int64_t prev = -1;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t m = la_db_column_int64(st, 0), cls = la_db_column_int64(st, 1),
            rep = la_db_column_int64(st, 2);
    double scale = la_db_column_double(st, 3);
    if (m <= prev || m >= LA_MAX_RANKS || cls < 0 || cls > UINT32_MAX ||
        rep < 0 || rep >= LA_MAX_RANKS || rep == m || !isfinite(scale)) {
      r = la__bad_row(s, app_id, tag, m, "rep_members");
      break;
    }
    prev = m;
    if ((r = la__room(&c->members, c->n_members + 1, &cap, sizeof *c->members)))
      break;
    c->members[c->n_members++] = (la_store_rep_member_t){
        (uint32_t)m, (uint32_t)cls, (uint32_t)rep, scale, -1, 0};
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading a set's class members");
  la_db_finalize(st);
  if (r == 0) r = la__read_classes(s, app_id, tag, c, &cap);
  if (r) return r;
  /* the members whose robust series are their representative's */
  sql = la__rmembers_sql;
  if (la_db_prepare(s->db, sql, 0, &st) != 0)
    return la__store_sqlerr(s, "preparing the representatives statement");
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(tag));
  cap = 0;
  prev = -1;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t m = la_db_column_int64(st, 0);
    double scale = la_db_column_double(st, 1);
    if (m <= prev || m >= LA_MAX_RANKS || !isfinite(scale)) {
      r = la__store_corrupt(s,
                            "robust weights of %s cycle %llu rank %lld: bad "
                            "rep_robust row",
                            app_id, (unsigned long long)tag, (long long)m);
      break;
    }
    prev = m;
    if ((r = la__room(&c->rmembers, c->n_rmembers + 1, &cap,
                      sizeof *c->rmembers)))
      break;
    c->rmembers[c->n_rmembers++] = (la_store_rep_rmember_t){(uint32_t)m, scale};
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading a set's robust class members");
  la_db_finalize(st);
  return r;
}

/* The index in base (n elements of size bytes, each starting with its
 * rank, a uint32_t, in increasing rank) of rank, or n. */
static size_t la__by_rank_find(const void *base, size_t n, size_t size,
                               uint32_t rank) {
  const unsigned char *b = base;
  size_t lo = 0, hi = n;
  uint32_t x;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    memcpy(&x, b + mid * size, sizeof x);
    if (x < rank)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < n) memcpy(&x, b + lo * size, sizeof x);
  return lo < n && x == rank ? lo : n;
}

_Static_assert(offsetof(la_store_rep_member_t, rank) == 0 &&
                   offsetof(la_store_rep_rmember_t, rank) == 0,
               "la__by_rank_find reads a row's rank first");

const la_store_rep_rmember_t *la__store_reps_rows_robust(
    const la_store_reps_rows_t *c, uint32_t rank) {
  size_t i =
      la__by_rank_find(c->rmembers, c->n_rmembers, sizeof *c->rmembers, rank);
  return i < c->n_rmembers ? &c->rmembers[i] : NULL;
}

const la_store_rep_member_t *la__store_reps_rows_find(
    const la_store_reps_rows_t *c, uint32_t rank) {
  size_t i =
      la__by_rank_find(c->members, c->n_members, sizeof *c->members, rank);
  return i < c->n_members ? &c->members[i] : NULL;
}

void la__store_reps_rows_clear(la_store_reps_rows_t *c) {
  free(c->members);
  free(c->packed);
  free(c->rmembers);
  memset(c, 0, sizeof *c);
}

/* ------------------------------------- members packed into rep_classes */

/* The set's rows into c, cleared on failure. */
static int la__rows(la_store_t *s, const char *app_id, uint64_t tag,
                    la_store_reps_rows_t *c) {
  memset(c, 0, sizeof *c);
  int r = la__store_reps_rows_read(s, app_id, tag, c);
  if (r) la__store_reps_rows_clear(c);
  return r;
}

int la__store_reps_packed_stamp(la_store_t *s, const char *app_id,
                                uint64_t cycle_tag, uint32_t rank,
                                la_store_stamp_t *out) {
  la_store_reps_rows_t c;
  int r = la__rows(s, app_id, cycle_tag, &c);
  const la_store_rep_member_t *m =
      r ? NULL : la__store_reps_rows_find(&c, rank);
  if (r == 0 && (!m || m->pk < 0)) r = LA_ENOTFOUND;
  if (r == 0) {
    const la_store_packed_t *p = &c.packed[m->pk];
    out->seq = p->seq;
    out->has_t_xfer_ns = p->has_xfer;
    out->t_xfer_ns = p->t_xfer_ns;
    out->count = m->nel;
    out->sum = p->has_sum ? p->sum : NAN;
  }
  la__store_reps_rows_clear(&c);
  return r;
}

int la__store_reps_is_packed(la_store_t *s, const char *app_id,
                             uint64_t cycle_tag, uint32_t rank) {
  la_store_stamp_t st;
  int r = la__store_reps_packed_stamp(s, app_id, cycle_tag, rank, &st);
  return r == 0 ? 1 : r == LA_ENOTFOUND ? 0 : r;
}

int la__store_reps_packed_ranks(la_store_t *s, const char *app_id,
                                uint64_t cycle_tag, uint32_t nprocs,
                                uint32_t **ranks, size_t *n) {
  la_store_reps_rows_t c;
  int r = la__rows(s, app_id, cycle_tag, &c);
  uint32_t *v =
      r == 0 && c.n_packed ? malloc((*n + c.n_packed) * sizeof *v) : NULL;
  if (r == 0 && c.n_packed && !v) r = LA_ENOMEM;
  if (v) { /* merge the two increasing lists */
    size_t i = 0, k = 0;
    for (size_t j = 0; j < c.n_members; j++) {
      const la_store_rep_member_t *m = &c.members[j];
      if (m->pk < 0 || m->rank >= nprocs) continue;
      while (i < *n && (*ranks)[i] < m->rank) v[k++] = (*ranks)[i++];
      if (i < *n && (*ranks)[i] == m->rank) i++; /* a row of its own too */
      v[k++] = m->rank;
    }
    while (i < *n) v[k++] = (*ranks)[i++];
    free(*ranks);
    *ranks = v;
    *n = k;
  }
  la__store_reps_rows_clear(&c);
  return r;
}
