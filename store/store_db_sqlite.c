/* SPDX-License-Identifier: BSD-3-Clause */
/* store_db_sqlite.c: the database layer's SQLite backend (store_db.h), the
 * embedded default: a file (or ":memory:", or a "file:" URI such as lactl's
 * read-only one) opened in WAL mode with foreign keys on; each call maps
 * onto the sqlite3 call of the same name. A new file gets 32 KiB pages (a
 * trace's row then fits in one page, and the WAL takes fewer, larger frames per
 * trace); a file made with other pages (4 KiB before) keeps them and works the
 * same.
 *
 * Deliberately not here: the schema (store_schema.c) and any statement's
 * text (store_sql.c).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store.h" /* LA_STORE_APPLICATION_ID */
#include "store_ckpt.h"
#include "store_db.h"

typedef struct {
  la_db_t base;
  sqlite3 *h;
  la_ckpt_t *ckpt; /* a writable file's checkpoints (store_ckpt.c) */
  char err[512];
} la__sq_t;

typedef struct {
  la_db_stmt_t base;
  sqlite3_stmt *h;
} la__sq_stmt_t;

/* The page size of a new database file: a trace row of a few KB fits in
 * a page without overflow pages, and a commit of a batch of traces writes
 * an eighth of the WAL frames (each frame is two writes and a checksum
 * over the page) it did with SQLite's 4 KiB default (docs/scaling.md has
 * 16, 32 and 64 KiB measured). The price: a commit of one trace still
 * writes a whole page per table touched. Fixed when the file is created
 * (WAL mode cannot change it). */
static const char la__sq_page_size[] = "PRAGMA page_size = 32768";

#define SQ(db) ((la__sq_t *)(db))
#define SH(st) (((la__sq_stmt_t *)(st))->h)

static void la__sq_close(la_db_t *db) {
  la__ckpt_stop(SQ(db)->ckpt);
  sqlite3_close(SQ(db)->h);
  free(db);
}

static const char *la__sq_errmsg(la_db_t *db) {
  if (SQ(db)->err[0]) return SQ(db)->err;
  return sqlite3_errmsg(SQ(db)->h);
}

static int la__sq_readonly(la_db_t *db) {
  return sqlite3_db_readonly(SQ(db)->h, "main") == 1;
}

static int la__sq_in_txn(la_db_t *db) {
  return !sqlite3_get_autocommit(SQ(db)->h);
}

static int64_t la__sq_changes(la_db_t *db) {
  return sqlite3_changes(SQ(db)->h);
}

static int la__sq_exec(la_db_t *db, const char *sql) {
  char *msg = NULL;
  SQ(db)->err[0] = 0;
  if (sqlite3_exec(SQ(db)->h, sql, NULL, NULL, &msg) == SQLITE_OK) return 0;
  snprintf(SQ(db)->err, sizeof SQ(db)->err, "%s",
           msg ? msg : sqlite3_errmsg(SQ(db)->h));
  sqlite3_free(msg);
  return LA_EIO;
}

static int la__sq_prepare(la_db_t *db, const char *sql, int flags,
                          la_db_stmt_t **out) {
  SQ(db)->err[0] = 0;
  la__sq_stmt_t *st = calloc(1, sizeof *st);
  if (!st) return LA_ENOMEM;
  st->base.db = db;
  unsigned pf = flags & LA_DB_PERSISTENT ? SQLITE_PREPARE_PERSISTENT : 0;
  if (sqlite3_prepare_v3(SQ(db)->h, sql, -1, pf, &st->h, NULL) != SQLITE_OK) {
    free(st);
    return LA_EIO;
  }
  *out = &st->base;
  return 0;
}

static void la__sq_finalize(la_db_stmt_t *st) {
  sqlite3_finalize(SH(st));
  free(st);
}

static void la__sq_bind_int64(la_db_stmt_t *st, int i, int64_t v) {
  sqlite3_bind_int64(SH(st), i, v);
}
static void la__sq_bind_double(la_db_stmt_t *st, int i, double v) {
  sqlite3_bind_double(SH(st), i, v);
}
static void la__sq_bind_text(la_db_stmt_t *st, int i, const char *v, int n) {
  sqlite3_bind_text(SH(st), i, v, n, SQLITE_STATIC);
}
static void la__sq_bind_blob(la_db_stmt_t *st, int i, const void *v, int n) {
  sqlite3_bind_blob(SH(st), i, v, n, SQLITE_STATIC);
}
static void la__sq_bind_null(la_db_stmt_t *st, int i) {
  sqlite3_bind_null(SH(st), i);
}

static int la__sq_step(la_db_stmt_t *st) {
  SQ(st->db)->err[0] = 0;
  int rc = sqlite3_step(SH(st));
  if (rc == SQLITE_ROW) return LA_DB_ROW;
  if (rc == SQLITE_DONE) return LA_DB_DONE;
  return LA_EIO;
}

static void la__sq_reset(la_db_stmt_t *st) {
  sqlite3_reset(SH(st));
  sqlite3_clear_bindings(SH(st));
}

static int la__sq_column_type(la_db_stmt_t *st, int i) {
  switch (sqlite3_column_type(SH(st), i)) {
    case SQLITE_INTEGER:
      return LA_DB_INTEGER;
    case SQLITE_FLOAT:
      return LA_DB_FLOAT;
    case SQLITE_TEXT:
      return LA_DB_TEXT;
    case SQLITE_BLOB:
      return LA_DB_BLOB;
    default:
      return LA_DB_NULL;
  }
}
static int64_t la__sq_column_int64(la_db_stmt_t *st, int i) {
  return sqlite3_column_int64(SH(st), i);
}
static double la__sq_column_double(la_db_stmt_t *st, int i) {
  return sqlite3_column_double(SH(st), i);
}
static const unsigned char *la__sq_column_text(la_db_stmt_t *st, int i) {
  return sqlite3_column_text(SH(st), i);
}
static const void *la__sq_column_blob(la_db_stmt_t *st, int i) {
  return sqlite3_column_blob(SH(st), i);
}
static int la__sq_column_bytes(la_db_stmt_t *st, int i) {
  return sqlite3_column_bytes(SH(st), i);
}

static const la_db_ops_t la__sq_ops = {
    la__sq_close,       la__sq_errmsg,       la__sq_readonly,
    la__sq_in_txn,      la__sq_changes,      la__sq_exec,
    la__sq_prepare,     la__sq_finalize,     la__sq_bind_int64,
    la__sq_bind_double, la__sq_bind_text,    la__sq_bind_blob,
    la__sq_bind_null,   la__sq_step,         la__sq_reset,
    la__sq_column_type, la__sq_column_int64, la__sq_column_double,
    la__sq_column_text, la__sq_column_blob,  la__sq_column_bytes,
};

/* Runs a one-value PRAGMA query; its text into txt (txt_len bytes), or
 * its integer into *v. Returns 0 or LA_EIO. */
static int la__sq_pragma(sqlite3 *h, const char *sql, int64_t *v, char *txt,
                         size_t txt_len) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) return LA_EIO;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    if (v) *v = sqlite3_column_int64(st, 0);
    if (txt) {
      const unsigned char *t = sqlite3_column_text(st, 0);
      snprintf(txt, txt_len, "%s", t ? (const char *)t : "");
    }
  }
  sqlite3_finalize(st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : LA_EIO;
}

int la__db_sqlite_open(const char *url, int flags, la_db_t **out, char *why,
                       size_t n) {
  la__sq_t *db = calloc(1, sizeof *db);
  if (!db) {
    snprintf(why, n, "out of memory");
    return LA_ENOMEM;
  }
  db->base.ops = &la__sq_ops;
  db->base.kind = LA_DB_SQLITE;
  int memory = strcmp(url, ":memory:") == 0;
  int of = (flags & LA_DB_READ ? SQLITE_OPEN_READONLY
                               : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
           SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(url, &db->h, of, NULL) != SQLITE_OK) {
    snprintf(why, n, "%s: %s", url,
             db->h ? sqlite3_errmsg(db->h) : "cannot open");
    goto fail;
  }
  sqlite3_busy_timeout(db->h, 5000);
  /* The first read tells a file that is not a database. */
  int64_t appid = 0;
  if (la__sq_pragma(db->h, "PRAGMA application_id", &appid, NULL, 0) < 0) {
    snprintf(why, n, "%s: %s", url, sqlite3_errmsg(db->h));
    goto fail;
  }
  if (appid != 0 && appid != LA_STORE_APPLICATION_ID) {
    snprintf(why, n, "%s: not an LA database (SQLite application_id 0x%llx)",
             url, (unsigned long long)appid);
    goto fail;
  }
  /* A new file (no page yet): its page size, before WAL mode writes its
   * first page. An existing file keeps its own. */
  int64_t pages = 0;
  int rw = sqlite3_db_readonly(db->h, "main") != 1;
  if (rw && (la__sq_pragma(db->h, "PRAGMA page_count", &pages, NULL, 0) < 0 ||
             (pages == 0 &&
              la__sq_pragma(db->h, la__sq_page_size, NULL, NULL, 0) < 0))) {
    snprintf(why, n, "%s: %s", url, sqlite3_errmsg(db->h));
    goto fail;
  }
  /* Read-only (lactl --db): the file's journal mode as it is (a copy in
   * rollback mode cannot be switched, nor needs to be). */
  char mode[32] = "wal";
  if (rw && la__sq_pragma(db->h, "PRAGMA journal_mode = WAL", NULL, mode,
                          sizeof mode) < 0) {
    snprintf(why, n, "%s: %s", url, sqlite3_errmsg(db->h));
    goto fail;
  }
  if (strcmp(mode, "wal") != 0 && !memory) {
    snprintf(why, n,
             "%s: cannot use WAL mode (journal_mode is '%s'); put the "
             "database on a local file system",
             url, mode);
    goto fail;
  }
  static const char *const what[] = {
      "setting synchronous", "enabling foreign keys", "setting the cache size"};
  const char *sql[] = {flags & LA_DB_SYNC_FULL ? "PRAGMA synchronous = FULL"
                                               : "PRAGMA synchronous = NORMAL",
                       "PRAGMA foreign_keys = ON",
                       "PRAGMA cache_size = -16384"};
  for (int i = 0; i < 3; i++)
    if (la__sq_exec(&db->base, sql[i])) {
      snprintf(why, n, "%s: %s: %s", url, what[i], db->err);
      goto fail;
    }
  if (!la__sq_readonly(&db->base) && la__ckpt_start(db->h, &db->ckpt)) {
    snprintf(why, n, "%s: cannot start the checkpoint thread", url);
    goto fail;
  }
  *out = &db->base;
  return 0;
fail:
  sqlite3_close(db->h);
  free(db);
  return LA_EIO;
}
