/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_sql.c: read-only queries on a store (see la_test_sql.h). */
#include "la_test_sql.h"

#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The formatted query prepared on a fresh read-only connection, or NULL
 * (the connection is then closed). Release it with la__tsql_done. */
static sqlite3_stmt *la__tsql_prepare(const char *path, const char *fmt,
                                      va_list ap) {
  char sql[2048];
  vsnprintf(sql, sizeof sql, fmt, ap);
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  }
  if (!st) sqlite3_close(db);
  return st;
}

/* la__tsql_prepare with the query's arguments inline. */
__attribute__((format(printf, 2, 3))) static sqlite3_stmt *la__tsql_prepare_f(
    const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sqlite3_stmt *st = la__tsql_prepare(path, fmt, ap);
  va_end(ap);
  return st;
}

/* Finalizes st (NULL: nothing) and closes its connection. */
static void la__tsql_done(sqlite3_stmt *st) {
  sqlite3 *db = st ? sqlite3_db_handle(st) : NULL;
  sqlite3_finalize(st);
  sqlite3_close(db);
}

long long la_test_sql_vll(const char *path, const char *fmt, va_list ap) {
  sqlite3_stmt *st = la__tsql_prepare(path, fmt, ap);
  long long v = -1;
  if (st && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_type(st, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(st, 0);
  la__tsql_done(st);
  return v;
}

long long la_test_sql_ll(const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  long long v = la_test_sql_vll(path, fmt, ap);
  va_end(ap);
  return v;
}

static long long la__tsql_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int la_test_sql_wait(const char *path, long long min, int timeout_ms,
                     const char *fmt, ...) {
  char sql[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  long long end = la__tsql_now_ms() + timeout_ms;
  for (;;) {
    if (la_test_sql_ll(path, "%s", sql) >= min) return 0;
    if (la__tsql_now_ms() >= end) return -1;
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
}

int la_test_sql_texts(const char *path, char out[][64], int max,
                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sqlite3_stmt *st = la__tsql_prepare(path, fmt, ap);
  va_end(ap);
  int n = 0;
  while (st && n < max && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out[n++], 64, "%s", t ? (const char *)t : "");
  }
  la__tsql_done(st);
  return n;
}

int la_test_sql_trace(const char *path, const char *app_id, uint32_t rank,
                      uint64_t cycle_tag, la_tsql_trace_t *out) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = la__tsql_prepare_f(
      path,
      "SELECT n_elements, stat_count, seq, id, mode, stat_sum, "
      "segments FROM traces WHERE app_id = '%s' AND rank = %u "
      "AND cycle_tag = %llu",
      app_id, rank, (unsigned long long)cycle_tag);
  int rc = -1;
  if (st && sqlite3_step(st) == SQLITE_ROW) {
    out->n_elements = (uint64_t)sqlite3_column_int64(st, 0);
    out->count = (uint64_t)sqlite3_column_int64(st, 1);
    out->seq = (uint64_t)sqlite3_column_int64(st, 2);
    out->id = sqlite3_column_int64(st, 3);
    out->mode = sqlite3_column_int(st, 4);
    out->sum = sqlite3_column_type(st, 5) == SQLITE_NULL
                   ? NAN
                   : sqlite3_column_double(st, 5);
    const void *b = sqlite3_column_blob(st, 6);
    int len = sqlite3_column_bytes(st, 6);
    out->segments = malloc(len > 0 ? (size_t)len : 1);
    if (out->segments) {
      if (len > 0) memcpy(out->segments, b, (size_t)len);
      out->segments_len = (size_t)len;
      rc = 0;
    }
  }
  la__tsql_done(st);
  return rc;
}

void la_test_sql_trace_free(la_tsql_trace_t *out) {
  free(out->segments);
  out->segments = NULL;
  out->segments_len = 0;
}
