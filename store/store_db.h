/* SPDX-License-Identifier: BSD-3-Clause */
/* store_db.h: the thin database layer under the GlobalAgent's store: one
 * interface, two backends (SQLite, the embedded default, in
 * store_db_sqlite.c; PostgreSQL through libpq in store_db_pg.c), chosen by
 * the URL given to la_db_open.
 *
 * The calls keep sqlite3's shape (prepare, bind by 1-based index, step,
 * read columns by 0-based index, reset), so the store's files read as
 * before. SQL is written in SQLite's dialect; the PostgreSQL backend
 * rewrites the few differences once, when a statement is prepared
 * (la__db_pg_sql): ?N parameters, INSERT OR IGNORE, BEGIN IMMEDIATE,
 * group_concat, and in table definitions INTEGER, REAL, BLOB, WITHOUT
 * ROWID and an INTEGER PRIMARY KEY.
 *
 * Deliberately not here: what the tables mean (store*.c), threads (one
 * connection, one thread at a time), asynchronous I/O (calls block).
 */
#ifndef LA_GLOBAL_STORE_DB_H
#define LA_GLOBAL_STORE_DB_H

#include <stddef.h>
#include <stdint.h>

typedef struct la_db la_db_t;
typedef struct la_db_stmt la_db_stmt_t;

/* Backends. */
enum { LA_DB_SQLITE = 1, LA_DB_PG = 2 };

/* la_db_step results (errors are negative LA_E* codes). */
enum { LA_DB_ROW = 100, LA_DB_DONE = 101 };

/* Column types (la_db_column_type). */
enum {
  LA_DB_INTEGER = 1,
  LA_DB_FLOAT = 2,
  LA_DB_TEXT = 3,
  LA_DB_BLOB = 4,
  LA_DB_NULL = 5
};

/* la_db_open flags. */
#define LA_DB_SYNC_FULL 1 /* SQLite: synchronous = FULL */
/* A reader beside the daemon's own connection: SQLite opened read-only
 * (never created; WAL lets it read while the writer commits); PostgreSQL
 * with every transaction read-only. */
#define LA_DB_READ 2

/* la_db_prepare flags. */
#define LA_DB_PERSISTENT 1 /* kept for the connection's life */

/* 1 when url names a PostgreSQL database: a libpq URI (postgresql://,
 * postgres://) or a libpq keyword/value string (one with "dbname=",
 * "host=" or "service="). Anything else is an SQLite path or URI. */
int la_db_is_pg_url(const char *url);

/* url as it may be shown (status, logs): without its password (a URI's
 * ":password" before '@' removed, a keyword password's value "***"). out
 * needs strlen(url) + 4 bytes. */
void la_db_url_public(const char *url, char *out, size_t len);

/* Opens the database url names (la_db_is_pg_url: PostgreSQL, else an
 * SQLite file, ":memory:" or "file:" URI; created when absent, except an
 * SQLite URI with mode=ro). *out gets the connection; on failure NULL and
 * the reason in why (n bytes). Returns 0, LA_EINVAL, LA_ENOMEM, LA_EIO. */
int la_db_open(const char *url, int flags, la_db_t **out, char *why, size_t n);

/* Closes db and frees it (NULL: nothing). Statements must be finalized
 * first. */
void la_db_close(la_db_t *db);

/* LA_DB_SQLITE or LA_DB_PG. */
int la_db_kind(const la_db_t *db);

/* The last error's message of db ("" when none). Owned by db, valid until
 * its next call. */
const char *la_db_errmsg(la_db_t *db);

/* 1 when the database is read-only (SQLite: opened with mode=ro;
 * PostgreSQL: default_transaction_read_only on), else 0. */
int la_db_readonly(la_db_t *db);

/* 1 when a transaction is open on db (SQLite: not in autocommit mode). */
int la_db_in_txn(la_db_t *db);

/* Rows changed by the last write statement stepped to its end. */
int64_t la_db_changes(la_db_t *db);

/* Runs sql, which may hold several statements separated by ';' and no
 * parameters. Returns 0 or LA_EIO (la_db_errmsg says why). */
int la_db_exec(la_db_t *db, const char *sql);

/* Prepares one statement (SQLite dialect, parameters ?1..?N). flags:
 * LA_DB_PERSISTENT for a statement kept and reused for the connection's
 * life (PostgreSQL: a server-side prepared statement, checked now;
 * otherwise it is parsed at each step). Returns 0 with *st set, LA_ENOMEM
 * or LA_EIO (la_db_errmsg says why; *st NULL). */
int la_db_prepare(la_db_t *db, const char *sql, int flags, la_db_stmt_t **st);

/* Frees st (NULL: nothing). */
void la_db_finalize(la_db_stmt_t *st);

/* Binding, as sqlite3's: index i from 1. Text and blobs are not copied:
 * v must stay valid until the statement is reset. n is the length in
 * bytes (text: -1 for up to its NUL). An unbound parameter is NULL. */
void la_db_bind_int64(la_db_stmt_t *st, int i, int64_t v);
void la_db_bind_double(la_db_stmt_t *st, int i, double v);
void la_db_bind_text(la_db_stmt_t *st, int i, const char *v, int n);
void la_db_bind_blob(la_db_stmt_t *st, int i, const void *v, int n);
void la_db_bind_null(la_db_stmt_t *st, int i);

/* Runs the statement on the first call after a reset, then moves to the
 * next row. Returns LA_DB_ROW (a row can be read), LA_DB_DONE or LA_EIO
 * (la_db_errmsg says why). */
int la_db_step(la_db_stmt_t *st);

/* Ends the statement's run and clears its bindings, ready to run again. */
void la_db_reset(la_db_stmt_t *st);

/* Reading column i (from 0) of the current row, as sqlite3's: a NULL reads
 * as 0, 0.0, NULL. Text and blob pointers stay valid until the next step
 * or reset; la_db_column_bytes is the length of either. */
int la_db_column_type(la_db_stmt_t *st, int i);
int64_t la_db_column_int64(la_db_stmt_t *st, int i);
double la_db_column_double(la_db_stmt_t *st, int i);
const unsigned char *la_db_column_text(la_db_stmt_t *st, int i);
const void *la_db_column_blob(la_db_stmt_t *st, int i);
int la_db_column_bytes(la_db_stmt_t *st, int i);

/* PostgreSQL only: the connection's socket (for an event loop to watch),
 * or -1 (SQLite, or the session is lost). libpq closes it itself when the
 * session is lost, reset or finished: watch a duplicate. */
int la_db_pg_fd(la_db_t *db);

/* PostgreSQL only: the number of the current session (it grows each time
 * a lost session is opened again), 0 on SQLite. */
unsigned la_db_pg_session(la_db_t *db);

/* PostgreSQL only: calls fn(arg, channel, payload) for every notification
 * (LISTEN) another session sent, reading what the socket holds first when
 * consume is set (never blocks). Returns how many, or LA_EIO when the
 * connection failed. 0 on SQLite. */
int la_db_pg_notices(la_db_t *db, int consume,
                     void (*fn)(void *arg, const char *channel,
                                const char *payload),
                     void *arg);

/* ------------------------------------------------------------ backends */

/* What each backend provides (store_db.c dispatches). */
typedef struct la_db_ops {
  void (*close)(la_db_t *db);
  const char *(*errmsg)(la_db_t *db);
  int (*readonly)(la_db_t *db);
  int (*in_txn)(la_db_t *db);
  int64_t (*changes)(la_db_t *db);
  int (*exec)(la_db_t *db, const char *sql);
  int (*prepare)(la_db_t *db, const char *sql, int flags, la_db_stmt_t **st);
  void (*finalize)(la_db_stmt_t *st);
  void (*bind_int64)(la_db_stmt_t *st, int i, int64_t v);
  void (*bind_double)(la_db_stmt_t *st, int i, double v);
  void (*bind_text)(la_db_stmt_t *st, int i, const char *v, int n);
  void (*bind_blob)(la_db_stmt_t *st, int i, const void *v, int n);
  void (*bind_null)(la_db_stmt_t *st, int i);
  int (*step)(la_db_stmt_t *st);
  void (*reset)(la_db_stmt_t *st);
  int (*column_type)(la_db_stmt_t *st, int i);
  int64_t (*column_int64)(la_db_stmt_t *st, int i);
  double (*column_double)(la_db_stmt_t *st, int i);
  const unsigned char *(*column_text)(la_db_stmt_t *st, int i);
  const void *(*column_blob)(la_db_stmt_t *st, int i);
  int (*column_bytes)(la_db_stmt_t *st, int i);
} la_db_ops_t;

/* Every backend's connection and statement begin with these. */
struct la_db {
  const la_db_ops_t *ops;
  int kind;
};
struct la_db_stmt {
  la_db_t *db;
};

/* The backends' open functions (contract of la_db_open). */
int la__db_sqlite_open(const char *url, int flags, la_db_t **out, char *why,
                       size_t n);
int la__db_pg_open(const char *url, int flags, la_db_t **out, char *why,
                   size_t n);

/* sql rewritten for PostgreSQL (see the top of this file) into a new
 * string the caller frees; *nparams gets the highest ?N. NULL when out of
 * memory. */
char *la__db_pg_sql(const char *sql, int *nparams);

#endif /* LA_GLOBAL_STORE_DB_H */
