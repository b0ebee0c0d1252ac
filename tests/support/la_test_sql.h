/* la_test_sql.h: reading a GlobalAgent's SQLite store from a test, as a
 * user with the sqlite3 shell would: each call opens the file read-only (a
 * fresh snapshot, waiting up to 5 s for a writer) and closes it again.
 * Test use only.
 */
#ifndef LA_TEST_SQL_H
#define LA_TEST_SQL_H

/* The first column of the first row of the query (printf-formatted) as an
 * integer; -1 on any error, no row or NULL. */
long long la_test_sql_ll(const char *db, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The first column of each row (at most max rows) as text into out[];
 * returns the number of rows read (0 on any error). */
int la_test_sql_texts(const char *db, char out[][64], int max, const char *fmt,
                      ...) __attribute__((format(printf, 4, 5)));

#endif /* LA_TEST_SQL_H */
