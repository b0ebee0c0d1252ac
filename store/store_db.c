/* SPDX-License-Identifier: BSD-3-Clause */
/* store_db.c: the database layer's front (store_db.h): choosing the backend
 * from the URL and passing each call to it.
 *
 * Deliberately not here: any SQL or any backend's detail
 * (store_db_sqlite.c, store_db_pg.c).
 */
#include "store_db.h"

#include <stdio.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"

int la_db_is_pg_url(const char *url) {
  if (!url) return 0;
  if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11))
    return 1;
  return strstr(url, "dbname=") || strstr(url, "host=") ||
         strstr(url, "service=");
}

/* The PostgreSQL connection string u without its password: a URI's
 * user:password@ loses ":password", a keyword's password=value its value. */
void la_db_url_public(const char *u, char *out, size_t len) {
  snprintf(out, len, "%s", u);
  char *scheme = strstr(out, "://");
  char *auth_end = scheme ? scheme + 3 + strcspn(scheme + 3, "/?") : NULL;
  char *at = scheme ? memchr(scheme + 3, '@', (size_t)(auth_end - scheme - 3))
                    : NULL; /* user:password@ is before the path */
  if (at) {
    char *colon = memchr(scheme + 3, ':', (size_t)(at - scheme - 3));
    if (colon) memmove(colon, at, strlen(at) + 1);
  }
  char *pw = strstr(out, "password=");
  if (pw) {
    char *v = pw + strlen("password="), *end = v;
    while (*end && *end != ' ' && *end != '&') end++;
    memmove(v + 3, end, strlen(end) + 1);
    memcpy(v, "***", 3);
  }
}

int la_db_open(const char *url, int flags, la_db_t **out, char *why, size_t n) {
  if (out) *out = NULL;
  if (!url || !url[0] || !out) return LA_EINVAL;
  if (la_db_is_pg_url(url)) return la__db_pg_open(url, flags, out, why, n);
  return la__db_sqlite_open(url, flags, out, why, n);
}

/* Contracts: store_db.h. */

void la_db_close(la_db_t *db) {
  if (db) db->ops->close(db);
}
int la_db_kind(const la_db_t *db) {
  return db->kind;
}
const char *la_db_errmsg(la_db_t *db) {
  return db->ops->errmsg(db);
}
int la_db_readonly(la_db_t *db) {
  return db->ops->readonly(db);
}
int la_db_in_txn(la_db_t *db) {
  return db->ops->in_txn(db);
}
int64_t la_db_changes(la_db_t *db) {
  return db->ops->changes(db);
}
int la_db_exec(la_db_t *db, const char *sql) {
  return db->ops->exec(db, sql);
}

int la_db_prepare(la_db_t *db, const char *sql, int flags, la_db_stmt_t **st) {
  *st = NULL;
  return db->ops->prepare(db, sql, flags, st);
}

void la_db_finalize(la_db_stmt_t *st) {
  if (st) st->db->ops->finalize(st);
}
void la_db_bind_int64(la_db_stmt_t *st, int i, int64_t v) {
  st->db->ops->bind_int64(st, i, v);
}
void la_db_bind_double(la_db_stmt_t *st, int i, double v) {
  st->db->ops->bind_double(st, i, v);
}
void la_db_bind_text(la_db_stmt_t *st, int i, const char *v, int n) {
  st->db->ops->bind_text(st, i, v, n);
}
void la_db_bind_blob(la_db_stmt_t *st, int i, const void *v, int n) {
  st->db->ops->bind_blob(st, i, v, n);
}
void la_db_bind_null(la_db_stmt_t *st, int i) {
  st->db->ops->bind_null(st, i);
}
int la_db_step(la_db_stmt_t *st) {
  return st->db->ops->step(st);
}
void la_db_reset(la_db_stmt_t *st) {
  st->db->ops->reset(st);
}
int la_db_column_type(la_db_stmt_t *st, int i) {
  return st->db->ops->column_type(st, i);
}
int64_t la_db_column_int64(la_db_stmt_t *st, int i) {
  return st->db->ops->column_int64(st, i);
}
double la_db_column_double(la_db_stmt_t *st, int i) {
  return st->db->ops->column_double(st, i);
}
const unsigned char *la_db_column_text(la_db_stmt_t *st, int i) {
  return st->db->ops->column_text(st, i);
}
const void *la_db_column_blob(la_db_stmt_t *st, int i) {
  return st->db->ops->column_blob(st, i);
}
int la_db_column_bytes(la_db_stmt_t *st, int i) {
  return st->db->ops->column_bytes(st, i);
}
