/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_stack.h: the real GlobalAgent and LocalAgent, started for a test
 * or benchmark on loopback with ephemeral ports, each in its own temporary
 * directory (la_test_daemon.h), with a fresh shared secret.
 *
 *   la_test_stack_t s;
 *   if (la_ts_init(&s) != 0) ...;          // not built: skip
 *   la_ts_start_global(&s, NULL);          // SQLite store in its directory
 *   la_ts_start_local(&s, extra_args);     // uplinked to the GlobalAgent
 *   ... LA_AGENT=la_td_addr(s.la), la_client_connect(s.feed_addr, ...) ...
 *   la_ts_free(&s);
 *
 * The LocalAgent can be stopped and started again with other arguments
 * (la_ts_stop_local, la_ts_start_local) against the same GlobalAgent. */
#ifndef LA_TEST_STACK_H
#define LA_TEST_STACK_H

#include "la_test_daemon.h"

typedef struct la_test_stack_s {
  la_test_daemon_t *ga, *la;
  char secret[600]; /* the shared secret file */
  char db[600];     /* the GlobalAgent's SQLite store; a caller may
                       name an existing one before la_ts_start_global */
  char agents_pf[600], feed_pf[600]; /* the GlobalAgent's port files */
  char ga_addr[64];                  /* the GlobalAgent's agents address */
  char feed_addr[64]; /* the GlobalAgent's feed address (libla_client) */
} la_test_stack_t;

/* The files of a GlobalAgent in ga's directory, each into a buffer of len
 * bytes: secret (a fresh shared secret is written there), db (its SQLite
 * store), agents_pf and feed_pf (its two port files). For tests that start
 * the GlobalAgent with options of their own. Returns 0, or -1 when the
 * secret cannot be written (the reason goes to stderr). */
int la_ts_ga_files(const la_test_daemon_t *ga, size_t len, char *secret,
                   char *db, char *agents_pf, char *feed_pf);
/* Appends a GlobalAgent's options for its files (la_ts_ga_files): port
 * files, store and, unless secret is NULL, the secret its LocalAgents must
 * prove. The listening addresses are the caller's. */
void la_ts_ga_args(la_td_argv_t *a, const char *agents_pf, const char *feed_pf,
                   const char *db, const char *secret);
/* Appends a LocalAgent's options for a test: an ephemeral loopback port
 * written to port_file, its spool directory, the GlobalAgent at global and,
 * unless secret is NULL, the secret file; no backlog limit
 * (agent.max_backlog off: every cycle of a burst is compacted). */
void la_ts_la_args(la_td_argv_t *a, const char *port_file, const char *spool,
                   const char *global, const char *secret);
/* Appends what a test's LocalAgent runs with: debug log, reconnects 20 ms
 * after a loss at first, at most 200 ms apart. */
void la_ts_la_test_opts(la_td_argv_t *a);
/* Creates both daemons' directories and the secret. Returns 0, or -1 when a
 * daemon binary is not built or the secret cannot be written. */
int la_ts_init(la_test_stack_t *s);
/* Starts the GlobalAgent with extra arguments (NULL-terminated, may be
 * NULL) after the defaults (store.fsync=no). Returns 0 or -1. */
int la_ts_start_global(la_test_stack_t *s, const char *const *extra);
/* Starts the LocalAgent against the GlobalAgent, extra arguments after the
 * defaults (fast reconnect). Returns 0 or -1. */
int la_ts_start_local(la_test_stack_t *s, const char *const *extra);
/* Stops the LocalAgent (SIGTERM, bounded); it can be started again. */
int la_ts_stop_local(la_test_stack_t *s);
/* Stops both daemons and removes their directories. */
void la_ts_free(la_test_stack_t *s);

#endif
