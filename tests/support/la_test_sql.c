/* la_test_sql.c: read-only queries on a store (see la_test_sql.h). */
#include "la_test_sql.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>

/* Prepares the formatted query on a fresh read-only connection; *db and
 * *st are set (possibly NULL) for the caller to finalize and close. */
static void la__tsql_prepare(const char *path, sqlite3 **db, sqlite3_stmt **st,
                             const char *fmt, va_list ap) {
  char sql[2048];
  vsnprintf(sql, sizeof sql, fmt, ap);
  *db = NULL;
  *st = NULL;
  if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
    return;
  sqlite3_busy_timeout(*db, 5000);
  sqlite3_prepare_v2(*db, sql, -1, st, NULL);
}

long long la_test_sql_ll(const char *path, const char *fmt, ...) {
  sqlite3 *db;
  sqlite3_stmt *st;
  va_list ap;
  va_start(ap, fmt);
  la__tsql_prepare(path, &db, &st, fmt, ap);
  va_end(ap);
  long long v = -1;
  if (st && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_type(st, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

int la_test_sql_texts(const char *path, char out[][64], int max,
                      const char *fmt, ...) {
  sqlite3 *db;
  sqlite3_stmt *st;
  va_list ap;
  va_start(ap, fmt);
  la__tsql_prepare(path, &db, &st, fmt, ap);
  va_end(ap);
  int n = 0;
  while (st && n < max && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out[n++], 64, "%s", t ? (const char *)t : "");
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}
