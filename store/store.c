/* SPDX-License-Identifier: BSD-3-Clause */
/* store.c: the GlobalAgent's store (see store.h and docs/storage.md for the
 * schema and its rules), an embedded SQLite file or a PostgreSQL database
 * (store_db.h, docs/sharding.md): opening and closing it,
 * transactions (group commit) and the batch helpers the other store files
 * share (store_internal.h; the error helpers are store_errors.c's).
 *
 * Every statement is prepared once at open and cached in the store; writes
 * run inside the caller's batch (group commit) or in a transaction of their
 * own. Idempotence comes from the keys: INSERT OR IGNORE for traces, upserts
 * guarded by "started = 0" / "ended = 0" / "nprocs = 0" for rank and
 * application rows. Everything read back is bounds-checked before it is put
 * into a message.
 *
 * Deliberately not here: stitching decisions, decoding segments, pruning old
 * data, threads (one store, one thread at a time), libuv.
 */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"

/* ---------------------------------------------------------------- helpers */

/* Contracts of the shared helpers: store_internal.h. */

int la__store_wbegin(la_store_t *s, int *own) {
  *own = 0;
  if (s->in_batch) {
    if (s->failed) {
      /* keep the first error's text: it is the one that matters */
      return LA_EIO;
    }
    return 0;
  }
  int r = la_store_begin(s);
  if (r == 0) *own = 1;
  return r;
}

int la__store_wend(la_store_t *s, int own, int r) {
  if (!own) return r;
  if (r == 0) return la_store_commit(s);
  la_store_rollback(s);
  return r;
}

int la__store_reserve(la_store_t *s, void *vp, size_t n, size_t *cap,
                      size_t size, size_t first) {
  if (n < *cap) return 0;
  void *v, *nv = NULL;
  /* vp points at a pointer of another type: copy its bytes, never alias */
  memcpy(&v, vp, sizeof v);
  size_t nc = *cap ? *cap * 2 : first;
  if (nc >= *cap && nc <= SIZE_MAX / size) nv = realloc(v, nc * size);
  if (!nv) {
    la__store_fmt(s->err, sizeof s->err, "out of memory");
    return LA_ENOMEM;
  }
  memcpy(vp, &nv, sizeof nv);
  *cap = nc;
  return 0;
}

/* ------------------------------------------------------------ open, close */

/* la_store_open and la_store_open_read: db_flags for la_db_open. */
static int la__store_open(const char *path, int db_flags, la_store_t **out,
                          char *why, size_t why_len) {
  if (why && why_len) why[0] = 0;
  if (!path || !path[0] || !out) {
    la__store_fmt(why, why_len, "no database path");
    return LA_EINVAL;
  }
  *out = NULL;
  la_store_t *s = calloc(1, sizeof *s);
  if (s) s->hist_full_cycles = LA_STORE_HISTORY_FULL_CYCLES;
  if (!s) {
    la__store_fmt(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  int r = la_db_open(path, db_flags, &s->db, why, why_len);
  if (r) goto fail;
  r = la__store_schema(s->db, path, why, why_len);
  if (r) goto fail;
  r = LA_EIO;
  for (int i = 0; i < S__COUNT; i++) {
    const char *sql = la_db_kind(s->db) == LA_DB_PG && la__store_sql_pg[i]
                          ? la__store_sql_pg[i]
                          : la__store_sql[i];
    if (la_db_prepare(s->db, sql, LA_DB_PERSISTENT, &s->st[i])) {
      la__store_fmt(why, why_len, "%s: schema check failed: %s", path,
                    la_db_errmsg(s->db));
      goto fail;
    }
  }
  const char *fe = getenv(LA__FAIL_ENV);
  while (fe && *fe && s->n_fail_at < LA__FAIL_MAX) {
    char *end = NULL;
    unsigned long long k = strtoull(fe, &end, 10);
    if (end == fe) break;
    s->fail_at[s->n_fail_at++] = k;
    fe = *end == ',' ? end + 1 : end;
  }
  *out = s;
  return 0;
fail:
  la_store_close(s);
  return r;
}

int la_store_open(const char *path, int synchronous_full, la_store_t **out,
                  char *why, size_t why_len) {
  return la__store_open(path, synchronous_full ? LA_DB_SYNC_FULL : 0, out, why,
                        why_len);
}

int la_store_open_read(const char *path, la_store_t **out, char *why,
                       size_t why_len) {
  if (path && !strcmp(path, ":memory:")) {
    la__store_fmt(why, why_len, "a private in-memory database has no reader");
    return LA_EINVAL;
  }
  return la__store_open(path, LA_DB_READ, out, why, why_len);
}

void la_store_close(la_store_t *s) {
  if (!s) return;
  if (s->in_batch) la_store_rollback(s);
  for (int i = 0; i < S__COUNT; i++) la_db_finalize(s->st[i]);
  la__store_history_close(s);
  la__store_coarse_close(s);
  la_db_close(s->db);
  free(s->unmiss);
  la__store_defer_forget(s);
  la__arena_free(&s->pend_arena);
  free(s->pend);
  free(s);
}

const char *la_store_errmsg(la_store_t *s) {
  return s ? s->err : "";
}

/* ----------------------------------------------------------- transactions */

int la_store_begin(la_store_t *s) {
  if (!s) return LA_EINVAL;
  if (s->in_batch) {
    la__store_fmt(s->err, sizeof s->err, "a batch is already open");
    return LA_EINVAL;
  }
  s->err[0] = 0;
  s->failed = 0;
  if (la__store_run(s, s->st[S_BEGIN], "BEGIN")) return LA_EIO;
  s->in_batch = 1;
  return 0;
}

int la_store_rollback(la_store_t *s) {
  if (!s) return LA_EINVAL;
  int r = 0;
  s->in_batch = 0;
  s->failed = 0;
  s->app_known[0] = 0;
  la__store_defer_forget(s);
  if (s->db && la_db_in_txn(s->db)) {
    int rc = la_db_step(s->st[S_ROLLBACK]);
    if (rc != LA_DB_DONE) {
      la__store_fmt(s->err, sizeof s->err, "ROLLBACK: %s", la_db_errmsg(s->db));
      r = LA_EIO;
    }
    la_db_reset(s->st[S_ROLLBACK]);
  }
  return r;
}

int la_store_commit(la_store_t *s) {
  if (!s) return LA_EINVAL;
  if (!s->in_batch) {
    la__store_fmt(s->err, sizeof s->err, "commit without a batch");
    return LA_EINVAL;
  }
  if (s->failed || la__store_defer_flush(s) != 0) {
    la_store_rollback(s);
    return LA_EIO;
  }
  s->n_commits++;
  for (int i = 0; i < s->n_fail_at; i++)
    if (s->fail_at[i] == s->n_commits) {
      la__store_fmt(s->err, sizeof s->err,
                    "COMMIT: injected failure of commit %llu (%s)",
                    (unsigned long long)s->n_commits, LA__FAIL_ENV);
      la_store_rollback(s);
      return LA_EIO;
    }
  int rc = la_db_step(s->st[S_COMMIT]);
  if (rc != LA_DB_DONE) {
    la__store_fmt(s->err, sizeof s->err, "COMMIT: %s", la_db_errmsg(s->db));
    la_db_reset(s->st[S_COMMIT]);
    la_store_rollback(s);
    return LA_EIO;
  }
  la_db_reset(s->st[S_COMMIT]);
  s->in_batch = 0;
  return 0;
}
