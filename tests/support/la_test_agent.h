/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_agent.h: the real LocalAgent for libla's tests, and what reached
 * the real GlobalAgent behind it.
 *
 * la_ta_start() starts the real pair (la_test_stack.h), points libla at the
 * LocalAgent (LA_AGENT) and asks for lossless compaction (LA_COMPACT), so
 * the values a test reads back are exactly the ones the LocalAgent copied
 * out of the application's shared memory. What a user would see is read
 * back the way a user would: `lactl status` rows of either daemon and the
 * GlobalAgent's SQLite store (docs/storage.md: apps, ranks, traces). Every
 * wait is bounded. Test use only; not thread-safe.
 */
#ifndef LA_TEST_AGENT_H
#define LA_TEST_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "la_client.h"
#include "la_compact.h"
#include "la_test_stack.h"

typedef struct la_test_agent {
  la_test_stack_t st;
  int up; /* both daemons started */
} la_test_agent_t;

/* Starts the GlobalAgent and the LocalAgent (extra arguments for the
 * LocalAgent, NULL-terminated, may be NULL), sets LA_AGENT and
 * LA_COMPACT=lossless. Returns 0, or -1 (not built, did not start). */
int la_ta_start(la_test_agent_t *a, const char *const *local_extra);
/* Stops both daemons and removes their files. */
void la_ta_free(la_test_agent_t *a);

/* Waits until the GlobalAgent stored at least n traces. 0, or -1. */
int la_ta_wait_traces(la_test_agent_t *a, long long n, int timeout_ms);
/* Waits until a finished run is stored: at least traces traces, and at
 * least ranks ranks ended (each wait up to timeout_ms). 0, or -1. */
int la_ta_wait_ended(la_test_agent_t *a, long long traces, long long ranks,
                     int timeout_ms);
/* A `lactl status` row of the LocalAgent as an integer (-1: unreadable). */
long long la_ta_local_stat(la_test_agent_t *a, const char *key);

/* One integer from a query on the GlobalAgent's store (-1 when the query
 * fails or returns no row or NULL). */
long long la_ta_sql_int(la_test_agent_t *a, const char *sql);
/* Runs sql (a write) on the store behind the GlobalAgent's back (the SQLite
 * file, waiting out its locks). 0, or -1 (said on stderr). */
int la_ta_sql_exec(la_test_agent_t *a, const char *sql);
/* la_ta_sql_int of fmt, a query with one %s, formatted with app_id. */
long long la_ta_app_int(la_test_agent_t *a, const char *app_id,
                        const char *fmt);
/* 0 when app_id's grid (apps.grid_nx, grid_ny, grid_nz) is nx x ny x nz,
 * else -1 (the stored one is printed to stderr). */
int la_ta_app_grid(la_test_agent_t *a, const char *app_id, long long nx,
                   long long ny, long long nz);
/* One text value into buf ("" and -1 when none). */
int la_ta_sql_text(la_test_agent_t *a, const char *sql, char *buf, size_t len);
/* Waits until a query's integer is at least min. 0, or -1 on timeout. */
int la_ta_wait_sql(la_test_agent_t *a, const char *sql, long long min,
                   int timeout_ms);

/* This process's connection to the TCP port (libla's to its LocalAgent),
 * found among its descriptors, or -1. For tests that speak on libla's
 * behalf. */
int la_ta_conn_fd(uint16_t port);

/* Decodes the stored trace of (app_id, rank, cycle_tag) into out, which
 * has room for n values; the trace must hold exactly n. 0, or -1 (no such
 * trace, another length, undecodable). */
int la_ta_values(la_test_agent_t *a, const char *app_id, uint32_t rank,
                 uint64_t cycle_tag, double *out, uint64_t n);
/* What the stored encoding of (app_id, rank, cycle_tag) holds (its
 * measured values, or with robust its robust weights): stored values,
 * points, pieced or spread (la_trace_check_totals). 0, or -1 (no such
 * trace or series, undecodable). */
int la_ta_totals(la_test_agent_t *a, const char *app_id, uint32_t rank,
                 uint64_t cycle_tag, int robust, la_trace_totals_t *tot);
/* Cycle tag of app_id's i-th stored trace of rank in tag order, or -1. */
long long la_ta_tag(la_test_agent_t *a, const char *app_id, uint32_t rank,
                    size_t i);
/* Number of traces stored for app_id. */
long long la_ta_ntraces(la_test_agent_t *a, const char *app_id);

/* The complete Trace-Set of app_id at cycle from c, asked again every 50
 * ms for up to timeout_ms (a set completes once its last rank's trace is
 * stored); NULL when it did not complete in time (la_client_error(c) says
 * the last answer). Free with la_traceset_free. */
la_traceset_t *la_ta_complete_set(la_client_t *c, const char *app_id,
                                  uint64_t cycle, int timeout_ms);

/* One rank of an application, for a forked child to run: registers rank of
 * nprocs as app_name, application app_id (n elements) with the LocalAgent
 * at agent (period 1, 16 buffers, the wait policy, metric "custom"), runs
 * cycles cycles in which element e measures value(e, cycle, rank) (the
 * start probe reads 0), then finalizes. Returns 0 when every libla call
 * succeeded, else 1: the child's exit code. */
int la_ta_run_rank(const char *agent, const char *app_id, const char *app_name,
                   int rank, int nprocs, long n, int cycles,
                   double (*value)(long e, uint64_t cycle, int rank));

#endif /* LA_TEST_AGENT_H */
