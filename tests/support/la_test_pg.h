/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_pg.h: a throw-away PostgreSQL server for tests of the store's
 * PostgreSQL backend and of several GlobalAgents (shards).
 *
 * la_test_pg_start makes a directory with mkdtemp, runs initdb and then
 * the postgres server from /usr/lib/postgresql/<version>/bin (or
 * LA_TEST_PG_BIN) as the unprivileged "postgres" user when the test runs as
 * root, listening only on a Unix socket in that directory; it waits until
 * the server accepts connections. la_test_pg_halt and la_test_pg_resume
 * stop it (fast shutdown) and start it again on the same data, for tests
 * of a database restart. la_test_pg_stop stops the server (fast
 * shutdown, then SIGKILL) and removes the directory; an atexit handler
 * does the same for every server still running when the test exits, and
 * the server dies with the test process (parent-death signal). Test use
 * only; not thread-safe.
 */
#ifndef LA_TEST_PG_H
#define LA_TEST_PG_H

#include <stdarg.h>
#include <stddef.h>

typedef struct la_test_pg la_test_pg_t;

/* la_test_pg_start flags. */
#define LA_TEST_PG_FSYNC 1 /* keep fsync on (benchmarks); tests turn it off */

/* Starts a server. Returns 0 with *out set; 1 when the PostgreSQL server
 * binaries are not installed (the caller skips); -1 on failure with the
 * reason in why (the server's log included when it would not start). */
int la_test_pg_start(int flags, la_test_pg_t **out, char *why, size_t n);

/* Creates database name (fresh: dropped first when it exists) and writes
 * its libpq connection string into url. Returns 0 or -1 (why). */
int la_test_pg_createdb(la_test_pg_t *pg, const char *name, char *url,
                        size_t url_len, char *why, size_t n);

/* Stops the server as `pg_ctl stop -m fast` does (its sessions end), keeping
 * its data and socket directory: la_test_pg_resume starts it again. Returns
 * 0, or -1 when it was not running. */
int la_test_pg_halt(la_test_pg_t *pg);

/* Starts a server la_test_pg_halt stopped, on the same data and socket, and
 * waits until it accepts connections. Returns 0 or -1 (why). */
int la_test_pg_resume(la_test_pg_t *pg, char *why, size_t n);

/* Runs one SQL statement (a GRANT, CREATE ROLE, ...) on database url.
 * Returns 0, or -1 with the server's message in why. */
int la_test_pg_exec(const char *url, const char *sql, char *why, size_t n);

/* The directory of the server's Unix socket (and its data). */
const char *la_test_pg_dir(const la_test_pg_t *pg);

/* Runs one SQL statement on database url and returns the first column of
 * its first row as a long long (-1 on error or without a row). */
long long la_test_pg_value(const char *url, const char *sql);
/* la_test_pg_value of a printf-formatted statement (at most 4 KiB). */
long long la_test_pg_valuef(const char *url, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* la_test_pg_valuef with the arguments in ap, for a test's own
 * printf-style query helper. */
long long la_test_pg_vvalue(const char *url, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* Stops the server, removes its directory and frees pg (NULL: nothing). */
void la_test_pg_stop(la_test_pg_t *pg);

#endif /* LA_TEST_PG_H */
