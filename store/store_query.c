/* SPDX-License-Identifier: BSD-3-Clause */
/* store_query.c: the store's read-only queries: applications, cycles and the
 * latest cycle, missing records (ranks, hosts, counts by reason), the open
 * Trace-Sets left after a restart, a set's close state and per-rank facts
 * (see store.h for each call's contract).
 *
 * Cycle tags are unsigned 64-bit values kept in SQLite's signed INTEGER: a
 * range of tags may become two signed ranges (la__ranges). Rows read back
 * are bounds-checked; values out of range read as unknown (0), or give
 * LA_EIO where a caller would otherwise index with them.
 *
 * Deliberately not here: building a Trace-Set message (store_load.c),
 * writes (store_write.c).
 */
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"

/* Ends a listing of cnt elements in the array v: on an error r frees v and
 * returns r; else hands v to the caller's array pointer (out is its
 * address) and cnt to *n, and returns 0. */
static int la__list_end(int r, void *v, size_t cnt, void *out, size_t *n) {
  if (r) {
    free(v);
    return r;
  }
  memcpy(out, &v, sizeof v);
  *n = cnt;
  return 0;
}

/* --------------------------------------------------------- missing records */

int la_store_rank_host(la_store_t *s, const char *app_id, uint32_t rank,
                       char *host, size_t cap) {
  if (!s || !app_id || !host || cap == 0) return LA_EINVAL;
  host[0] = 0;
  la_db_stmt_t *st = s->st[S_RANK_HOST];
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, rank);
  int rc = la_db_step(st), r = 0;
  if (rc == LA_DB_ROW)
    la__col_copy(st, 0, host, cap);
  else if (rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "reading the rank's host");
  la__done(st);
  if (r == 0 && !host[0]) {
    la__store_fmt(s->err, sizeof s->err, "no host known for %s rank %u", app_id,
                  rank);
    r = LA_ENOTFOUND;
  }
  return r;
}

int la_store_host_ranks(la_store_t *s, const char *host,
                        la_store_host_rank_t **out, size_t *n) {
  if (!s || !host || !out || !n) return LA_EINVAL;
  *out = NULL;
  *n = 0;
  la_db_stmt_t *st = s->st[S_HOST_RANKS];
  la_db_bind_text(st, 1, host, -1);
  la_store_host_rank_t *v = NULL;
  size_t cnt = 0, cap = 0;
  int rc, r = 0;
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    if ((r = la__store_reserve(s, &v, cnt, &cap, sizeof *v, 8))) break;
    la__col_copy(st, 0, v[cnt].app_id, sizeof v[cnt].app_id);
    v[cnt++].rank = (uint32_t)la_db_column_int64(st, 1);
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "listing a LocalAgent's ranks");
  la__done(st);
  return la__list_end(r, v, cnt, out, n);
}

int la_store_open_hosts(la_store_t *s,
                        void (*fn)(void *arg, const char *host), void *arg) {
  if (!s || !fn) return LA_EINVAL;
  la_db_stmt_t *st = s->st[S_OPEN_HOSTS];
  int rc;
  char host[LA_MAX_ID_LEN + 1];
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    la__col_copy(st, 0, host, sizeof host);
    fn(arg, host);
  }
  int r = rc == LA_DB_DONE
              ? 0
              : la__store_sqlerr(s, "listing the LocalAgents with open ranks");
  la__done(st);
  return r;
}

int la__store_rank_rows(la_store_t *s, la_db_stmt_t *st, const char *app_id,
                        uint64_t cycle_tag, uint32_t nprocs, const char *rows,
                        const char *what, uint32_t **ranks, size_t *n) {
  *ranks = NULL;
  *n = 0;
  uint32_t *v = NULL;
  size_t cnt = 0, cap = 0;
  int rc, r = 0;
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  la_db_bind_int64(st, 3, nprocs);
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank;
    if (!la__col_int(st, 0, 0, (int64_t)nprocs - 1, &rank)) {
      r = la__store_corrupt(s, "%s of %s cycle %llu: bad rank", rows, app_id,
                            (unsigned long long)cycle_tag);
      break;
    }
    if ((r = la__store_reserve(s, &v, cnt, &cap, sizeof *v, 16))) break;
    v[cnt++] = (uint32_t)rank;
  }
  if (r == 0 && rc != LA_DB_DONE) r = la__store_sqlerr(s, what);
  la__done(st);
  return la__list_end(r, v, cnt, ranks, n);
}

int la_store_missing_ranks(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, uint32_t nprocs,
                           uint32_t **ranks, size_t *n) {
  if (!s || !app_id || !ranks || !n) return LA_EINVAL;
  if (la__store_defer_flush(s) != 0) return LA_EIO; /* the records */
  return la__store_rank_rows(s, s->st[S_MISS_RANKS], app_id, cycle_tag, nprocs,
                             "missing record", "listing missing ranks", ranks,
                             n);
}

int la_store_missing_counts(la_store_t *s, la_store_reason_count_t *out,
                            size_t max, size_t *n, uint64_t *total) {
  if (!s || !n || !total || (max && !out)) return LA_EINVAL;
  *n = 0;
  *total = 0;
  int rc, r = 0;
  if (la__store_defer_flush(s) != 0) return LA_EIO; /* the records */
  la_db_stmt_t *st = s->st[S_MISS_COUNTS];
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t c = la_db_column_int64(st, 1);
    if (c < 0) c = 0;
    *total += (uint64_t)c;
    if (*n < max) {
      la__col_copy(st, 0, out[*n].reason, sizeof out[*n].reason);
      out[*n].count = (uint64_t)c;
      (*n)++;
    }
  }
  if (rc != LA_DB_DONE) r = la__store_sqlerr(s, "counting missing records");
  la__done(st);
  return r;
}

/* ----------------------------------------------------------------- queries */

int la_store_apps(la_store_t *s, la_store_app_t **out, size_t *n) {
  if (!s || !out || !n) return LA_EINVAL;
  *out = NULL;
  *n = 0;
  if (la__store_defer_flush(s) != 0) return LA_EIO; /* t_last_ns */
  la_db_stmt_t *st = s->st[S_APPS];
  la_store_app_t *v = NULL;
  size_t cnt = 0, cap = 0;
  int rc, r = 0;
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    if ((r = la__store_reserve(s, &v, cnt, &cap, sizeof *v, 8))) break;
    la_store_app_t *a = &v[cnt++];
    memset(a, 0, sizeof *a);
    la__col_copy(st, 0, a->app_id, sizeof a->app_id);
    la__col_copy(st, 1, a->app_name, sizeof a->app_name);
    la__col_copy(st, 2, a->metric, sizeof a->metric);
    la__col_copy(st, 3, a->unit, sizeof a->unit);
    int64_t x = la_db_column_int64(st, 4);
    a->nprocs = x > 0 && x <= (int64_t)LA_MAX_RANKS ? (uint32_t)x : 0;
    x = la_db_column_int64(st, 5);
    a->n_elements_total = x > 0 ? (uint64_t)x : 0;
    x = la_db_column_int64(st, 6);
    a->ranks_started = x > 0 && x <= INT32_MAX ? (int)x : 0;
    x = la_db_column_int64(st, 7);
    a->ranks_ended = x > 0 && x <= INT32_MAX ? (int)x : 0;
    a->t_start_ns = (uint64_t)la_db_column_int64(st, 8);
    uint64_t t_end = (uint64_t)la_db_column_int64(st, 9);
    a->cycles = (uint64_t)la_db_column_int64(st, 10);
    a->sets_complete = (uint64_t)la_db_column_int64(st, 11);
    a->sets_partial = (uint64_t)la_db_column_int64(st, 12);
    a->t_last_ns = (uint64_t)la_db_column_int64(st, 13);
    x = la_db_column_int64(st, 14);
    a->ranks_lost = x > 0 && x <= INT32_MAX ? (int)x : 0;
    if (t_end > a->t_last_ns) a->t_last_ns = t_end;
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "listing applications");
  la__done(st);
  return la__list_end(r, v, cnt, out, n);
}

/* Signed ranges of the unsigned interval [first, last], in unsigned order:
 * returns how many (0..2). */
static int la__ranges(uint64_t first, uint64_t last, int64_t lo[2],
                      int64_t hi[2]) {
  const uint64_t top = (uint64_t)INT64_MAX;
  if (first > last) return 0;
  if (last <= top || first > top) {
    lo[0] = la__i64(first);
    hi[0] = la__i64(last);
    return 1;
  }
  lo[0] = la__i64(first);
  hi[0] = INT64_MAX;
  lo[1] = INT64_MIN;
  hi[1] = la__i64(last);
  return 2;
}

int la_store_cycles(la_store_t *s, const char *app_id, uint64_t first,
                    uint64_t last, la_store_cycle_t **out, size_t *n) {
  if (!s || !app_id || !out || !n) return LA_EINVAL;
  *out = NULL;
  *n = 0;
  int64_t lo[2], hi[2];
  int nr = la__ranges(first, last, lo, hi), r = 0;
  la_store_cycle_t *v = NULL;
  size_t cnt = 0, cap = 0;
  if (la__store_defer_flush(s) != 0) return LA_EIO; /* rows, records */
  la_db_stmt_t *st = s->st[S_CYCLES];
  for (int k = 0; k < nr && r == 0; k++) {
    la_db_bind_text(st, 1, app_id, -1);
    la_db_bind_int64(st, 2, lo[k]);
    la_db_bind_int64(st, 3, hi[k]);
    int rc;
    while ((rc = la_db_step(st)) == LA_DB_ROW) {
      if ((r = la__store_reserve(s, &v, cnt, &cap, sizeof *v, 64))) break;
      la_store_cycle_t *c = &v[cnt++];
      int64_t present, missing, nprocs;
      c->cycle_tag = (uint64_t)la_db_column_int64(st, 0);
      c->closed = la_db_column_int64(st, 1) != 0;
      c->complete = c->closed && la_db_column_int64(st, 2) != 0;
      present = la_db_column_int64(st, 3);
      missing = la_db_column_int64(st, 4);
      nprocs = la_db_column_int64(st, 5);
      if (present < 0 || present > (int64_t)LA_MAX_RANKS) present = 0;
      if (nprocs < 0 || nprocs > (int64_t)LA_MAX_RANKS) nprocs = 0;
      if (missing < 0 || missing > (int64_t)LA_MAX_RANKS) missing = 0;
      c->ranks_present = (uint32_t)present;
      if (!c->closed) missing = nprocs > present ? nprocs - present : 0;
      c->n_missing = (uint32_t)missing;
      la__col_copy(st, 6, c->reasons, sizeof c->reasons);
    }
    if (r == 0 && rc != LA_DB_DONE) r = la__store_sqlerr(s, "listing cycles");
    la__done(st);
  }
  return la__list_end(r, v, cnt, out, n);
}

int la_store_latest_cycle(la_store_t *s, const char *app_id, int complete_only,
                          uint64_t *cycle_tag) {
  if (!s || !app_id || !cycle_tag || complete_only < 0 || complete_only > 2)
    return LA_EINVAL;
  /* Tags >= 2^63 (negative in SQLite) are the largest: look there first. */
  const int64_t lo[2] = {INT64_MIN, 0}, hi[2] = {-1, INT64_MAX};
  if (la__store_defer_flush(s) != 0) return LA_EIO; /* the sets' rows */
  la_db_stmt_t *st = s->st[S_LATEST];
  for (int k = 0; k < 2; k++) {
    la_db_bind_text(st, 1, app_id, -1);
    la_db_bind_int64(st, 2, lo[k]);
    la_db_bind_int64(st, 3, hi[k]);
    la_db_bind_int64(st, 4, complete_only);
    int rc = la_db_step(st);
    if (rc == LA_DB_ROW) {
      *cycle_tag = (uint64_t)la_db_column_int64(st, 0);
      la__done(st);
      return 0;
    }
    if (rc != LA_DB_DONE) {
      int r = la__store_sqlerr(s, "finding the latest cycle");
      la__done(st);
      return r;
    }
    la__done(st);
  }
  la__store_fmt(s->err, sizeof s->err, "no such cycle of %s", app_id);
  return LA_ENOTFOUND;
}

int la_store_app_ranks_ended(la_store_t *s, const char *app_id,
                             uint32_t *nprocs, uint32_t *ended) {
  if (!s || !app_id || !nprocs || !ended) return LA_EINVAL;
  la_db_stmt_t *st = s->st[S_ENDED];
  la_db_bind_text(st, 1, app_id, -1);
  int rc = la_db_step(st), r = 0;
  if (rc == LA_DB_ROW) {
    int64_t a = la_db_column_int64(st, 0);
    int64_t e = la_db_column_int64(st, 1);
    *nprocs = a > 0 && a <= (int64_t)LA_MAX_RANKS ? (uint32_t)a : 0;
    *ended = e > 0 && e <= (int64_t)LA_MAX_RANKS ? (uint32_t)e : 0;
  } else {
    r = la__store_no_app(s, rc, app_id, "counting ended ranks");
  }
  la__done(st);
  return r;
}

/* ------------------------------------------------------------- open sets */

void la_store_free_open_sets(la_store_open_set_t *v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) free(v[i].ranks);
  free(v);
}

static int la__cmp_open(const void *a, const void *b) {
  const la_store_open_set_t *x = a, *y = b;
  int c = strcmp(x->app_id, y->app_id);
  if (c) return c;
  return x->cycle_tag < y->cycle_tag ? -1 : x->cycle_tag > y->cycle_tag;
}

int la_store_open_sets(la_store_t *s, la_store_open_set_t **out, size_t *n) {
  if (!s || !out || !n) return LA_EINVAL;
  *out = NULL;
  *n = 0;
  la_store_open_set_t *v = NULL, *cur = NULL;
  size_t cnt = 0, cap = 0, rcap = 0;
  int rc, r = 0;
  if (la__store_defer_flush(s) != 0) return LA_EIO; /* the sets' rows */
  la_db_stmt_t *st = s->st[S_OPEN_SETS];
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    const char *app = (const char *)la_db_column_text(st, 0);
    int alen = la_db_column_bytes(st, 0);
    uint64_t tag = (uint64_t)la_db_column_int64(st, 1);
    int64_t np = la_db_column_int64(st, 2), rank;
    if (!app || alen <= 0 || alen > (int)LA_MAX_ID_LEN || np < 0 ||
        np > (int64_t)LA_MAX_RANKS ||
        !la__col_int(st, 4, 0, (int64_t)LA_MAX_RANKS - 1, &rank)) {
      r = la__store_corrupt(s,
                            "open Trace-Set row with a bad app_id, nprocs or "
                            "rank");
      break;
    }
    if (!cur || cur->cycle_tag != tag || strcmp(cur->app_id, app) != 0) {
      if ((r = la__store_reserve(s, &v, cnt, &cap, sizeof *v, 16))) break;
      cur = &v[cnt++];
      memset(cur, 0, sizeof *cur);
      memcpy(cur->app_id, app, (size_t)alen);
      cur->cycle_tag = tag;
      cur->nprocs = (uint32_t)np;
      cur->t_first_ns = (uint64_t)la_db_column_int64(st, 3);
      rcap = 0;
    }
    if (cur->nprocs && rank >= cur->nprocs) continue;
    if ((r = la__store_reserve(s, &cur->ranks, cur->n_ranks, &rcap,
                               sizeof *cur->ranks, 8)))
      break;
    cur->ranks[cur->n_ranks++] = (uint32_t)rank;
  }
  if (r == 0 && rc != LA_DB_DONE) r = la__store_sqlerr(s, "listing open sets");
  la__done(st);
  if (r) {
    if (r == LA_ENOMEM) la__store_fmt(s->err, sizeof s->err, "out of memory");
    la_store_free_open_sets(v, cnt);
    return r;
  }
  if (cnt > 1) qsort(v, cnt, sizeof *v, la__cmp_open);
  *out = v;
  *n = cnt;
  return 0;
}

/* ---------------------------------------------------- a set's close state */

int la_store_set_is_closed(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, int *closed) {
  if (!s || !app_id || !closed) return LA_EINVAL;
  *closed = 0;
  la_db_stmt_t *st = s->st[S_SET_STATE];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  int rc = la_db_step(st), r = 0;
  if (rc == LA_DB_ROW)
    *closed = la_db_column_int64(st, 0) != 0;
  else if (rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "reading a Trace-Set's state");
  la__done(st);
  return r;
}

/* ------------------------------------------------ a stored trace's stamp */

int la_store_trace_stamp(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                         uint32_t rank, la_store_stamp_t *out) {
  if (!s || !app_id || !out) return LA_EINVAL;
  memset(out, 0, sizeof *out);
  if (la__store_defer_flush(s) != 0) return LA_EIO; /* deferred traces */
  la_db_stmt_t *st = NULL;
  if (la_db_prepare(s->db,
                    "SELECT seq, t_xfer_ns, stat_count, stat_sum FROM traces"
                    " WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3",
                    0, &st) != 0) {
    la__store_fmt(s->err, sizeof s->err, "reading a trace's stamp: %s",
                  la_db_errmsg(s->db));
    return LA_EIO;
  }
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  la_db_bind_int64(st, 3, (int64_t)rank);
  int rc = la_db_step(st), r = 0;
  if (rc == LA_DB_ROW) {
    out->seq = (uint64_t)la_db_column_int64(st, 0);
    out->has_t_xfer_ns = la_db_column_type(st, 1) != LA_DB_NULL;
    out->t_xfer_ns = (uint64_t)la_db_column_int64(st, 1);
    out->count = (uint64_t)la_db_column_int64(st, 2);
    out->sum = la_db_column_double(st, 3);
  } else if (rc == LA_DB_DONE) {
    r = LA_ENOTFOUND;
  } else {
    la__store_fmt(s->err, sizeof s->err, "reading a trace's stamp: %s",
                  la_db_errmsg(s->db));
    r = LA_EIO;
  }
  la_db_finalize(st);
  /* a member of a set stored by representatives, packed (store_reps.h) */
  if (r == LA_ENOTFOUND)
    r = la__store_reps_packed_stamp(s, app_id, cycle_tag, rank, out);
  return r;
}

/* ------------------------------------------------------ a rank's elements */

int la_store_rank_elements(la_store_t *s, const char *app_id, uint32_t rank,
                           uint64_t *n_elements) {
  if (!s || !app_id || !n_elements) return LA_EINVAL;
  *n_elements = 0;
  la_db_stmt_t *st = s->st[S_RANK_ELEMENTS]; /* asked per rank: prepared */
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, (int64_t)rank);
  int rc = la_db_step(st), r = 0;
  if (rc == LA_DB_ROW) {
    int64_t v = la_db_column_int64(st, 0);
    if (v > 0 && v <= (int64_t)1 << 32)
      *n_elements = (uint64_t)v;
    else
      r = LA_ENOTFOUND;
  } else if (rc == LA_DB_DONE) {
    r = LA_ENOTFOUND;
  } else {
    la__store_fmt(s->err, sizeof s->err, "reading a rank's element count: %s",
                  la_db_errmsg(s->db));
    r = LA_EIO;
  }
  la__done(st);
  return r;
}

int64_t la_store_bytes(la_store_t *s, const char *path) {
  if (!s) return -1;
  if (la_db_kind(s->db) != LA_DB_PG) {
    struct stat sb;
    return path && stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
  }
  la_db_stmt_t *st;
  int64_t v = -1;
  if (la_db_prepare(s->db, "SELECT pg_database_size(current_database())", 0,
                    &st) != 0)
    return -1;
  if (la_db_step(st) == LA_DB_ROW) v = la_db_column_int64(st, 0);
  la_db_finalize(st);
  return v;
}
