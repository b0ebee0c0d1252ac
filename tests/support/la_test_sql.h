/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_sql.h: reading a GlobalAgent's SQLite store from a test, as a
 * user with the sqlite3 shell would: each call opens the file read-only (a
 * fresh snapshot, waiting up to 5 s for a writer) and closes it again.
 * Test use only.
 */
#ifndef LA_TEST_SQL_H
#define LA_TEST_SQL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* One row of the traces table (docs/storage.md), as the store keeps it. */
typedef struct la_tsql_trace {
  uint64_t n_elements, count; /* count: stat_count */
  uint64_t seq;               /* the link's sequence number */
  long long id;               /* rowid: the order the store received them */
  int mode;                   /* La__CompactMode */
  double sum;                 /* stat_sum (NaN when NULL) */
  uint8_t *segments;          /* segments_len bytes, malloc'd */
  size_t segments_len;
} la_tsql_trace_t;

/* The first column of the first row of the query (printf-formatted) as an
 * integer; -1 on any error, no row or NULL. */
long long la_test_sql_ll(const char *db, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* la_test_sql_ll with the query's arguments in ap, for a test's own
 * printf-style query helper. */
long long la_test_sql_vll(const char *db, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Waits up to timeout_ms until la_test_sql_ll of the query is at least
 * min. Returns 0, or -1 on timeout. */
int la_test_sql_wait(const char *db, long long min, int timeout_ms,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The first column of each row (at most max rows) as text into out[];
 * returns the number of rows read (0 on any error). */
int la_test_sql_texts(const char *db, char out[][64], int max, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

/* Reads the stored trace of (app_id, rank, cycle_tag) into out (free it
 * with la_test_sql_trace_free). Returns 0, or -1 when there is no such row
 * or the store cannot be read (out is then empty). */
int la_test_sql_trace(const char *db, const char *app_id, uint32_t rank,
                      uint64_t cycle_tag, la_tsql_trace_t *out);
/* Frees the segments la_test_sql_trace allocated (the other fields
 * stay); out may be empty. */
void la_test_sql_trace_free(la_tsql_trace_t *out);

#endif /* LA_TEST_SQL_H */
