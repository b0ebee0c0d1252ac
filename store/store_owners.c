/* SPDX-License-Identifier: BSD-3-Clause */
/* store_owners.c: who owns an application id, in the store (tables
 * app_owners and refused_ranks, store_schema.c): the uid an id is bound to
 * by its first RankStart that carried one, and the (application, host,
 * rank) keys whose RankStart of another uid was refused, so that the
 * refusal outlives a restart of the GlobalAgent (a LocalAgent resends what
 * was not acknowledged).
 *
 * Refused rows are pruned (la_store_refused_trim, la_store_refused_expire:
 * the oldest of a LocalAgent beyond a cap, those older than a retention)
 * and looked up one key at a time (la_store_rank_refused: a shard that
 * sees a rank it had no RankStart of).
 *
 * Statements are prepared per call: they run once per rank start, once per
 * (application, host, rank) a GlobalAgent has no RankStart of, at a prune,
 * or once at start (la_store_refused_each), never per trace.
 *
 * Deliberately not here: deciding what a refusal means for the traces and
 * telling the LocalAgent (ingest.c, owners.c).
 */
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_time.h"
#include "store_internal.h"

/* Prepares sql; LA_EIO (la__store_sqlerr with what) when it fails. */
static int la__prep(la_store_t *s, const char *sql, la_db_stmt_t **st,
                    const char *what) {
  if (la_db_prepare(s->db, sql, 0, st) == 0) return 0;
  *st = NULL;
  return la__store_sqlerr(s, what);
}

/* Steps a prepared write to its end and finalizes it. 0 or LA_EIO. */
static int la__run1(la_store_t *s, la_db_stmt_t *st, const char *what) {
  int rc = la_db_step(st);
  int r = rc == LA_DB_DONE ? 0 : la__store_sqlerr(s, what);
  la_db_finalize(st);
  return r;
}

int la_store_app_owner(la_store_t *s, const char *app_id, uint32_t *uid) {
  if (!s || !app_id || !uid) return LA_EINVAL;
  la_db_stmt_t *st;
  int r = la__prep(s, "SELECT uid FROM app_owners WHERE app_id = ?1", &st,
                   "reading the application's owner");
  if (r) return r;
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  int rc = la_db_step(st);
  if (rc == LA_DB_ROW) {
    int64_t v = la_db_column_int64(st, 0);
    if (v < 0 || v >= (int64_t)UINT32_MAX)
      r = la__store_corrupt(s, "owner uid %lld of %s", (long long)v, app_id);
    else
      *uid = (uint32_t)v;
  } else {
    r = rc == LA_DB_DONE ? LA_ENOTFOUND
                         : la__store_sqlerr(s, "reading the application's owner");
  }
  la_db_finalize(st);
  return r;
}

int la_store_app_bind(la_store_t *s, const char *app_id, uint32_t uid,
                      const char *host) {
  if (!s || !app_id || !app_id[0] || uid == UINT32_MAX) return LA_EINVAL;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  la_db_stmt_t *st;
  if ((r = la__prep(s,
                    "INSERT OR IGNORE INTO app_owners(app_id, uid, host,"
                    " t_bound_ns) VALUES (?1, ?2, ?3, ?4)",
                    &st, "binding the application to its owner")) == 0) {
    la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 2, uid);
    la__bind_text(st, 3, host ? host : "", 128);
    la_db_bind_int64(st, 4, la__i64(la_realtime_ns()));
    r = la__run1(s, st, "binding the application to its owner");
  }
  return la__store_wend(s, own, r);
}

int la_store_rank_refuse(la_store_t *s, const char *app_id, const char *host,
                         uint32_t rank, uint32_t uid, uint32_t owner,
                         uint64_t seq) {
  if (!s || !app_id || !app_id[0] || !host) return LA_EINVAL;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  la_db_stmt_t *st;
  if ((r = la__prep(s,
                    "INSERT INTO refused_ranks(app_id, host, rank, uid,"
                    " owner_uid, seq, t_refused_ns) VALUES (?1, ?2, ?3, ?4,"
                    " ?5, ?6, ?7) ON CONFLICT(app_id, host, rank) DO UPDATE"
                    " SET uid = excluded.uid, owner_uid = excluded.owner_uid,"
                    " seq = excluded.seq, t_refused_ns = excluded.t_refused_ns",
                    &st, "recording a refused rank")) == 0) {
    la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
    la__bind_text(st, 2, host, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 3, rank);
    la_db_bind_int64(st, 4, uid);
    la_db_bind_int64(st, 5, owner);
    la_db_bind_int64(st, 6, la__i64(seq));
    la_db_bind_int64(st, 7, la__i64(la_realtime_ns()));
    r = la__run1(s, st, "recording a refused rank");
  }
  return la__store_wend(s, own, r);
}

int la_store_rank_unrefuse(la_store_t *s, const char *app_id,
                           const char *host, uint32_t rank) {
  if (!s || !app_id || !host) return LA_EINVAL;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  la_db_stmt_t *st;
  if ((r = la__prep(s,
                    "DELETE FROM refused_ranks WHERE app_id = ?1 AND"
                    " host = ?2 AND rank = ?3",
                    &st, "forgetting a refused rank")) == 0) {
    la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
    la__bind_text(st, 2, host, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 3, rank);
    r = la__run1(s, st, "forgetting a refused rank");
  }
  return la__store_wend(s, own, r);
}

int la_store_refused_each(la_store_t *s,
                          int (*fn)(void *arg, const char *app_id,
                                    const char *host, uint32_t rank,
                                    uint32_t uid),
                          void *arg) {
  if (!s || !fn) return LA_EINVAL;
  la_db_stmt_t *st;
  int r = la__prep(s,
                   "SELECT app_id, host, rank, uid FROM refused_ranks"
                   " ORDER BY app_id, host, rank",
                   &st, "listing refused ranks");
  if (r) return r;
  int rc;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    char app[LA_MAX_ID_LEN + 1], host[LA_MAX_ID_LEN + 1];
    la__col_copy(st, 0, app, sizeof app);
    la__col_copy(st, 1, host, sizeof host);
    int64_t rank = la_db_column_int64(st, 2), uid = la_db_column_int64(st, 3);
    if (!app[0] || rank < 0 || rank >= (int64_t)LA_MAX_RANKS || uid < 0 ||
        uid > (int64_t)UINT32_MAX) /* UINT32_MAX: no uid said */
      r = la__store_corrupt(s, "refused rank %lld of '%s' (uid %lld)",
                            (long long)rank, app, (long long)uid);
    else
      r = fn(arg, app, host, (uint32_t)rank, (uint32_t)uid);
  }
  if (r == 0 && rc != LA_DB_DONE) r = la__store_sqlerr(s, "listing refused ranks");
  la_db_finalize(st);
  return r;
}

int la_store_rank_refused(la_store_t *s, const char *app_id, const char *host,
                          uint32_t rank, uint32_t *uid) {
  if (!s || !app_id || !host || !uid) return LA_EINVAL;
  la_db_stmt_t *st;
  int r = la__prep(s,
                   "SELECT uid FROM refused_ranks WHERE app_id = ?1 AND"
                   " host = ?2 AND rank = ?3",
                   &st, "reading a refused rank");
  if (r) return r;
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la__bind_text(st, 2, host, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 3, rank);
  int rc = la_db_step(st);
  if (rc == LA_DB_ROW) {
    int64_t v = la_db_column_int64(st, 0);
    if (v < 0 || v > (int64_t)UINT32_MAX)
      r = la__store_corrupt(s, "refused uid %lld of %s", (long long)v, app_id);
    else
      *uid = (uint32_t)v;
  } else {
    r = rc == LA_DB_DONE ? LA_ENOTFOUND
                         : la__store_sqlerr(s, "reading a refused rank");
  }
  la_db_finalize(st);
  return r;
}

/* One refused key read by a prune. */
typedef struct la__rkey {
  char app[LA_MAX_ID_LEN + 1], host[LA_MAX_ID_LEN + 1];
  uint32_t rank;
} la__rkey_t;

/* Runs st (bound; columns app_id, host, rank), then deletes each key it
 * listed, calling fn for it first. *n gets how many. Finalizes st. 0,
 * LA_ENOMEM, LA_EIO (la_store_refused_* says when). */
static int la__prune(la_store_t *s, la_db_stmt_t *st,
                     void (*fn)(void *arg, const char *app_id,
                                const char *host, uint32_t rank),
                     void *arg, uint64_t *n) {
  la__rkey_t *k = NULL;
  size_t nk = 0, cap = 0;
  int r = 0, rc;
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    if (nk == cap) {
      size_t nc = cap ? cap * 2 : 16;
      la__rkey_t *b = realloc(k, nc * sizeof *k);
      if (!b) {
        r = LA_ENOMEM;
        break;
      }
      k = b;
      cap = nc;
    }
    la__col_copy(st, 0, k[nk].app, sizeof k[nk].app);
    la__col_copy(st, 1, k[nk].host, sizeof k[nk].host);
    int64_t rank = la_db_column_int64(st, 2);
    if (rank < 0 || rank >= (int64_t)LA_MAX_RANKS) continue; /* never loaded */
    k[nk++].rank = (uint32_t)rank;
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "listing refused ranks to prune");
  la_db_finalize(st);
  for (size_t i = 0; r == 0 && i < nk; i++) {
    r = la_store_rank_unrefuse(s, k[i].app, k[i].host, k[i].rank);
    if (r == 0 && fn) fn(arg, k[i].app, k[i].host, k[i].rank);
  }
  if (r == 0 && n) *n = nk;
  free(k);
  return r;
}

int la_store_refused_trim(la_store_t *s, const char *host, uint64_t keep,
                          void (*fn)(void *arg, const char *app_id,
                                     const char *host, uint32_t rank),
                          void *arg, uint64_t *n) {
  if (!s || !host) return LA_EINVAL;
  if (n) *n = 0;
  la_db_stmt_t *st;
  int r = la__prep(s, "SELECT count(*) FROM refused_ranks WHERE host = ?1",
                   &st, "counting a LocalAgent's refused ranks");
  if (r) return r;
  la__bind_text(st, 1, host, LA_MAX_ID_LEN);
  int64_t have = 0;
  if (la_db_step(st) == LA_DB_ROW)
    have = la_db_column_int64(st, 0);
  else
    r = la__store_sqlerr(s, "counting a LocalAgent's refused ranks");
  la_db_finalize(st);
  if (r || have <= 0 || (uint64_t)have <= keep) return r;
  if ((r = la__prep(s,
                    "SELECT app_id, host, rank FROM refused_ranks WHERE"
                    " host = ?1 ORDER BY t_refused_ns, app_id, rank"
                    " LIMIT ?2",
                    &st, "listing a LocalAgent's oldest refused ranks")))
    return r;
  la__bind_text(st, 1, host, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, have - (int64_t)keep);
  return la__prune(s, st, fn, arg, n);
}

int la_store_refused_expire(la_store_t *s, uint64_t before_ns,
                            void (*fn)(void *arg, const char *app_id,
                                       const char *host, uint32_t rank),
                            void *arg, uint64_t *n) {
  if (!s) return LA_EINVAL;
  if (n) *n = 0;
  la_db_stmt_t *st;
  int r = la__prep(s,
                   "SELECT app_id, host, rank FROM refused_ranks WHERE"
                   " t_refused_ns < ?1 ORDER BY t_refused_ns LIMIT 10000",
                   &st, "listing expired refused ranks");
  if (r) return r;
  la_db_bind_int64(st, 1, la__i64(before_ns));
  return la__prune(s, st, fn, arg, n);
}
