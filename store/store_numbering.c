/* SPDX-License-Identifier: BSD-3-Clause */
/* store_numbering.c: the application's own element numbering in the store
 * (tables element_ids and rank_grid, store_schema.c): a rank's global ids
 * as the LocalAgent sent them in chunks, pages of them read back for the
 * feed's "elementids" query, and grid ranks' place in the global grid,
 * written with the RankStart and loaded into a Trace-Set (its grids).
 *
 * Statements are prepared per call (ids arrive once per rank, not per
 * cycle). What is read back is checked like every other row: chunks must
 * tile the rank's elements, ids be >= 0, a grid fit its global extent.
 *
 * Deliberately not here: deciding what the ids mean (consumers do), the
 * rest of the RankStart (store_write.c).
 */
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"

/* Prepares sql; LA_EIO (la__store_sqlerr with what) when it fails, or
 * LA_ENOTFOUND when the store is read-only and predates the numbering
 * tables (store_schema.c could not add them). */
static int la__prep(la_store_t *s, const char *sql, la_db_stmt_t **st,
                    const char *what) {
  if (la_db_prepare(s->db, sql, 0, st) == 0) return 0;
  *st = NULL;
  if (la_db_readonly(s->db) && strstr(la_db_errmsg(s->db), "no such table")) {
    la__store_fmt(s->err, sizeof s->err,
                  "%s: the store has no numbering "
                  "tables (written before they existed)",
                  what);
    return LA_ENOTFOUND;
  }
  return la__store_sqlerr(s, what);
}

/* Steps a prepared write to its end and finalizes it. 0 or LA_EIO. */
static int la__run1(la_store_t *s, la_db_stmt_t *st, const char *what) {
  int rc = la_db_step(st);
  int r = rc == LA_DB_DONE ? 0 : la__store_sqlerr(s, what);
  la_db_finalize(st);
  return r;
}

int la_store_element_ids(la_store_t *s, const La__ElementIds *m, int *was_new) {
  if (was_new) *was_new = 0;
  if (!s || !m || !m->app_id || !m->app_id[0] || !m->has_rank || !m->n_ids)
    return LA_EINVAL;
  uint64_t nel = 0;
  int r = la_store_rank_elements(s, m->app_id, m->rank, &nel);
  if (r == LA_ENOTFOUND) {
    la__store_fmt(s->err, sizeof s->err,
                  "element ids of %s rank %u before its RankStart", m->app_id,
                  m->rank);
    return LA_EPROTO;
  }
  if (r) return r;
  if (m->first > nel || m->n_ids > nel - m->first) {
    la__store_fmt(s->err, sizeof s->err,
                  "element ids %llu..%llu of %s rank %u past its %llu "
                  "elements",
                  (unsigned long long)m->first,
                  (unsigned long long)(m->first + m->n_ids - 1), m->app_id,
                  m->rank, (unsigned long long)nel);
    return LA_EPROTO;
  }
  uint8_t *blob = malloc(m->n_ids * 8);
  if (!blob) {
    la__store_fmt(s->err, sizeof s->err, "out of memory");
    return LA_ENOMEM;
  }
  for (size_t i = 0; i < m->n_ids; i++)
    for (int b = 0; b < 8; b++)
      blob[i * 8 + b] = (uint8_t)((uint64_t)m->ids[i] >> (8 * b));
  int own;
  if ((r = la__store_wbegin(s, &own))) {
    free(blob);
    return r;
  }
  la_db_stmt_t *st;
  if ((r = la__prep(s,
                    "INSERT OR IGNORE INTO element_ids(app_id, rank, first, n,"
                    " ids, seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    &st, "storing element ids")) == 0) {
    la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 2, m->rank);
    la_db_bind_int64(st, 3, la__i64(m->first));
    la_db_bind_int64(st, 4, (int64_t)m->n_ids);
    la_db_bind_blob(st, 5, blob, (int)(m->n_ids * 8));
    la__bind_opt_u64(st, 6, m->has_seq, m->seq);
    r = la__run1(s, st, "storing element ids");
    if (r == 0 && was_new) *was_new = la_db_changes(s->db) > 0;
  }
  free(blob);
  return la__store_wend(s, own, r);
}

int la__store_rank_grid(la_store_t *s, const La__RankStart *m) {
  if (m->n_grid != 3) return 0;
  la_db_stmt_t *st;
  int r = la__prep(s,
                   "INSERT OR IGNORE INTO rank_grid(app_id, rank, nx, ny, nz,"
                   " ox, oy, oz, gnx, gny, gnz) VALUES (?1, ?2, ?3, ?4, ?5,"
                   " ?6, ?7, ?8, ?9, ?10, ?11)",
                   &st, "storing the rank's grid");
  if (r) return r;
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, m->rank);
  for (int d = 0; d < 3; d++) {
    la_db_bind_int64(st, 3 + d, la__i64(m->grid[d]));
    if (m->n_grid_origin == 3 && m->n_grid_global == 3) {
      la_db_bind_int64(st, 6 + d, la__i64(m->grid_origin[d]));
      la_db_bind_int64(st, 9 + d, la__i64(m->grid_global[d]));
    }
  }
  return la__run1(s, st, "storing the rank's grid");
}

/* Decodes the ids of one stored chunk (n of them, first element cfirst)
 * that fall in [first, first + max) into out[k - first]. Returns 0, or
 * LA_EIO for a chunk whose blob is not n ids >= 0. */
static int la__chunk_ids(la_store_t *s, la_db_stmt_t *st, uint64_t cfirst,
                         uint64_t n, uint64_t first, uint64_t end,
                         int64_t *out) {
  const uint8_t *b = la_db_column_blob(st, 3);
  if ((uint64_t)la_db_column_bytes(st, 3) != n * 8 || (n && !b))
    return la__store_corrupt(s,
                             "element ids chunk at %llu: %llu ids, blob "
                             "of %d bytes",
                             (unsigned long long)cfirst, (unsigned long long)n,
                             la_db_column_bytes(st, 3));
  uint64_t lo = cfirst > first ? cfirst : first;
  uint64_t hi = cfirst + n < end ? cfirst + n : end;
  for (uint64_t k = lo; k < hi; k++) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
      v |= (uint64_t)b[(k - cfirst) * 8 + (uint64_t)i] << (8 * i);
    if (v > INT64_MAX)
      return la__store_corrupt(s, "element id of element %llu negative",
                               (unsigned long long)k);
    out[k - first] = (int64_t)v;
  }
  return 0;
}

int la_store_rank_ids(la_store_t *s, const char *app_id, uint32_t rank,
                      uint64_t first, size_t max, int64_t **ids, size_t *n,
                      uint64_t *n_elements) {
  if (!s || !app_id || !ids || !n || !n_elements || max == 0) return LA_EINVAL;
  *ids = NULL;
  *n = 0;
  int r = la_store_rank_elements(s, app_id, rank, n_elements);
  if (r) {
    if (r == LA_ENOTFOUND)
      la__store_fmt(s->err, sizeof s->err, "no rank %u of %s", rank, app_id);
    return r;
  }
  uint64_t nel = *n_elements;
  la_db_stmt_t *st;
  if ((r = la__prep(s,
                    "SELECT coalesce(sum(n), 0) FROM element_ids"
                    " WHERE app_id = ?1 AND rank = ?2",
                    &st, "reading element ids")))
    return r;
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, rank);
  int64_t have = la_db_step(st) == LA_DB_ROW ? la_db_column_int64(st, 0) : -1;
  la_db_finalize(st);
  if (have < 0) return la__store_sqlerr(s, "reading element ids");
  if ((uint64_t)have != nel) {
    la__store_fmt(s->err, sizeof s->err,
                  "%s rank %u has %lld of its %llu element ids", app_id, rank,
                  (long long)have, (unsigned long long)nel);
    return LA_ENOTFOUND;
  }
  if (first >= nel) return 0;
  uint64_t end = nel - first < max ? nel : first + max;
  int64_t *out = malloc((size_t)(end - first) * sizeof *out);
  if (!out) {
    la__store_fmt(s->err, sizeof s->err, "out of memory");
    return LA_ENOMEM;
  }
  if ((r = la__prep(s,
                    "SELECT first, n, 0, ids FROM element_ids WHERE app_id ="
                    " ?1 AND rank = ?2 AND first < ?4 AND first + n > ?3"
                    " ORDER BY first",
                    &st, "reading element ids"))) {
    free(out);
    return r;
  }
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, rank);
  la_db_bind_int64(st, 3, la__i64(first));
  la_db_bind_int64(st, 4, la__i64(end));
  uint64_t next = first; /* the chunks must tile [first, end) */
  int rc;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t cf, cn;
    if (!la__col_int(st, 0, 0, (int64_t)1 << 32, &cf) ||
        !la__col_int(st, 1, 1, LA_ELEMENT_IDS_PAGE, &cn) ||
        (uint64_t)cf > next || (uint64_t)(cf + cn) <= next) {
      r = la__store_corrupt(s,
                            "element ids of %s rank %u do not tile its "
                            "elements at %llu",
                            app_id, rank, (unsigned long long)next);
      break;
    }
    r = la__chunk_ids(s, st, (uint64_t)cf, (uint64_t)cn, first, end, out);
    next = (uint64_t)(cf + cn);
  }
  if (r == 0 && rc != LA_DB_DONE) r = la__store_sqlerr(s, "reading ids");
  if (r == 0 && next < end)
    r = la__store_corrupt(s, "element ids of %s rank %u stop at %llu", app_id,
                          rank, (unsigned long long)next);
  la_db_finalize(st);
  if (r) {
    free(out);
    return r;
  }
  *ids = out;
  *n = (size_t)(end - first);
  return 0;
}

/* Reads column i as a grid extent 1..2^32 into *v. 0 when NULL, 1 when
 * read, -1 when out of range. */
static int la__grid_col(la_db_stmt_t *st, int i, uint64_t *v) {
  if (la_db_column_type(st, i) == LA_DB_NULL) return 0;
  int64_t x;
  if (!la__col_int(st, i, 0, (int64_t)1 << 32, &x)) return -1;
  *v = (uint64_t)x;
  return 1;
}

/* One La__GridRank with its three arrays in one allocation. */
typedef struct {
  La__GridRank g;
  uint64_t v[9];
} la__grid_t;

int la__store_load_grids(la_store_t *s, const char *app_id, La__TraceSet *set) {
  la_db_stmt_t *st;
  int r = la__prep(s,
                   "SELECT rank, nx, ny, nz, ox, oy, oz, gnx, gny, gnz FROM"
                   " rank_grid WHERE app_id = ?1 ORDER BY rank",
                   &st, "loading the ranks' grids");
  if (r) return r == LA_ENOTFOUND ? 0 : r; /* an older store: no grids */
  la_db_bind_text(st, 1, app_id, -1);
  size_t cap = 0;
  int rc;
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank;
    if (!la__col_int(st, 0, 0, INT64_MAX, &rank)) {
      r = la__store_corrupt(s, "rank_grid of %s: bad rank", app_id);
      break;
    }
    if ((uint64_t)rank >= set->nprocs) continue;
    if ((r = la__store_reserve(s, &set->grids, set->n_grids, &cap,
                               sizeof *set->grids, 8)))
      break;
    la__grid_t *g = calloc(1, sizeof *g);
    if (!g) {
      r = LA_ENOMEM;
      break;
    }
    la__grid_rank__init(&g->g);
    set->grids[set->n_grids++] = &g->g;
    g->g.rank = (uint32_t)rank;
    int got[9], any = 0, bad = 0;
    for (int i = 0; i < 9; i++) {
      got[i] = la__grid_col(st, 1 + i, &g->v[i]);
      if (got[i] < 0 || (i < 3 && got[i] == 0) || (i < 3 && g->v[i] == 0))
        bad = 1;
      if (i >= 3) any += got[i] == 1;
    }
    if (bad || (any != 0 && any != 6)) {
      r = la__store_corrupt(s, "rank_grid of %s rank %lld: bad extents", app_id,
                            (long long)rank);
      break;
    }
    g->g.n_dims = 3;
    g->g.dims = g->v;
    if (any) {
      g->g.n_origin = g->g.n_global = 3;
      g->g.origin = g->v + 3;
      g->g.global = g->v + 6;
    }
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading the ranks' grids");
  la_db_finalize(st);
  return r;
}

void la__store_free_grids(La__TraceSet *set) {
  for (size_t i = 0; i < set->n_grids; i++)
    free(set->grids ? set->grids[i] : NULL); /* la__grid_t starts with it */
  free(set->grids);
  set->grids = NULL;
  set->n_grids = 0;
}
