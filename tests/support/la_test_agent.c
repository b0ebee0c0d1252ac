/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_agent.c: the real LocalAgent for libla's tests, read back through
 * the real GlobalAgent's store (see la_test_agent.h). */
#include "la_test_agent.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <sqlite3.h>

#include "la.h"
#include "la_compact.h"

int la_ta_start(la_test_agent_t *a, const char *const *local_extra) {
  memset(a, 0, sizeof *a);
  if (la_ts_init(&a->st) != 0 || la_ts_start_global(&a->st, NULL) != 0 ||
      la_ts_start_local(&a->st, local_extra) != 0)
    return -1;
  a->up = 1;
  setenv("LA_AGENT", la_td_addr(a->st.la), 1);
  setenv("LA_COMPACT", "lossless", 1);
  return 0;
}

void la_ta_free(la_test_agent_t *a) {
  la_ts_free(&a->st);
  a->up = 0;
}

int la_ta_wait_traces(la_test_agent_t *a, long long n, int timeout_ms) {
  return la_td_wait_status(a->st.ga, "traces_stored", n, timeout_ms);
}

int la_ta_wait_ended(la_test_agent_t *a, long long traces, long long ranks,
                     int timeout_ms) {
  if (la_ta_wait_traces(a, traces, timeout_ms)) return -1;
  return la_ta_wait_sql(a, "SELECT count(*) FROM ranks WHERE ended = 1", ranks,
                        timeout_ms);
}

long long la_ta_local_stat(la_test_agent_t *a, const char *key) {
  return la_td_status_ll(a->st.la, key);
}

/* Runs sql on a read-only connection; on a row calls fn. Returns 0 when a
 * row was read, else -1. */
/* What la_ta_run_rank's probes read. */
static struct {
  double (*value)(long e, uint64_t cycle, int rank);
  uint64_t cycle;
  int rank;
} la__ta_rank;

static double la__ta_zero(long e, void *arg) {
  (void)e, (void)arg;
  return 0.0;
}

static double la__ta_value(long e, void *arg) {
  (void)arg;
  return la__ta_rank.value(e, la__ta_rank.cycle, la__ta_rank.rank);
}

int la_ta_run_rank(const char *agent, const char *app_id, const char *app_name,
                   int rank, int nprocs, long n, int cycles,
                   double (*value)(long e, uint64_t cycle, int rank)) {
  la__ta_rank.value = value;
  la__ta_rank.rank = rank;
  LA_setAgent(agent);
  LA_setAppId(app_id);
  LA_setPeriod(1);
  LA_setBuffers(16);
  LA_setPolicy(LA_POLICY_WAIT);
  LA_setProbeStartFunc(la__ta_zero, NULL);
  LA_setProbeStopFunc(la__ta_value, NULL);
  LA_setMetric("custom");
  /* a rank that fails says where and why: its exit code alone is 1 */
  const char *failed = NULL;
  int c = 0;
  if (LA_register(app_name, rank, nprocs, n) != 0) failed = "LA_register";
  for (; c < cycles && !failed; c++) {
    la__ta_rank.cycle = (uint64_t)c;
    for (long e = 0; e < n; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    if (LA_dataXfer() != 0) failed = "LA_dataXfer";
  }
  if (failed)
    fprintf(stderr, "rank %d of %s: %s (cycle %d) failed: %s\n", rank,
            app_id, failed, c, LA_lastError());
  if (LA_finalize() != 0 && !failed) {
    failed = "LA_finalize";
    fprintf(stderr, "rank %d of %s: LA_finalize failed: %s\n", rank, app_id,
            LA_lastError());
  }
  return failed != NULL;
}

static int la_ta_query(la_test_agent_t *a, const char *sql,
                       void (*fn)(sqlite3_stmt *, void *), void *arg) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  int rc = -1;
  if (sqlite3_open_v2(a->st.db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_busy_timeout(db, 5000) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    fn(st, arg);
    rc = 0;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rc;
}

static void la_ta_get_int(sqlite3_stmt *st, void *arg) {
  *(long long *)arg = sqlite3_column_type(st, 0) == SQLITE_NULL
                          ? -1
                          : sqlite3_column_int64(st, 0);
}

long long la_ta_sql_int(la_test_agent_t *a, const char *sql) {
  long long v = -1;
  return la_ta_query(a, sql, la_ta_get_int, &v) == 0 ? v : -1;
}

int la_ta_sql_exec(la_test_agent_t *a, const char *sql) {
  sqlite3 *db = NULL;
  char *err = NULL;
  int rc = -1;
  if (sqlite3_open_v2(a->st.db, &db, SQLITE_OPEN_READWRITE, NULL) ==
          SQLITE_OK &&
      sqlite3_busy_timeout(db, 30000) == SQLITE_OK) {
    rc = sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK ? 0 : -1;
    if (rc) fprintf(stderr, "%s: %s\n", sql, err ? err : sqlite3_errmsg(db));
  }
  sqlite3_free(err);
  sqlite3_close(db);
  return rc;
}

long long la_ta_app_int(la_test_agent_t *a, const char *app_id,
                        const char *fmt) {
  char sql[400];
  snprintf(sql, sizeof sql, fmt, app_id);
  return la_ta_sql_int(a, sql);
}

int la_ta_app_grid(la_test_agent_t *a, const char *app_id, long long nx,
                   long long ny, long long nz) {
  long long g[3] = {
      la_ta_app_int(a, app_id, "SELECT grid_nx FROM apps WHERE app_id = '%s'"),
      la_ta_app_int(a, app_id, "SELECT grid_ny FROM apps WHERE app_id = '%s'"),
      la_ta_app_int(a, app_id, "SELECT grid_nz FROM apps WHERE app_id = '%s'")};
  if (g[0] == nx && g[1] == ny && g[2] == nz) return 0;
  fprintf(stderr,
          "%s: grid %lld x %lld x %lld stored, expected %lld x %lld x "
          "%lld\n",
          app_id, g[0], g[1], g[2], nx, ny, nz);
  return -1;
}

typedef struct {
  char *buf;
  size_t len;
} la_ta_text_t;

static void la_ta_get_text(sqlite3_stmt *st, void *arg) {
  la_ta_text_t *t = arg;
  const unsigned char *s = sqlite3_column_text(st, 0);
  snprintf(t->buf, t->len, "%s", s ? (const char *)s : "");
}

int la_ta_sql_text(la_test_agent_t *a, const char *sql, char *buf, size_t len) {
  la_ta_text_t t = {buf, len};
  buf[0] = 0;
  return la_ta_query(a, sql, la_ta_get_text, &t);
}

int la_ta_wait_sql(la_test_agent_t *a, const char *sql, long long min,
                   int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    if (la_ta_sql_int(a, sql) >= min) return 0;
    if (la_td_now_ms() > end) return -1;
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
}

typedef struct {
  double *out;
  uint64_t n;
  int rc;
} la_ta_dec_t;

static void la_ta_decode(sqlite3_stmt *st, void *arg) {
  la_ta_dec_t *d = arg;
  la_trace_t *t = NULL;
  char why[160];
  const void *b = sqlite3_column_blob(st, 0);
  int len = sqlite3_column_bytes(st, 0);
  if (la_trace_open(b, (size_t)len, &t, why, sizeof why) != 0) {
    fprintf(stderr, "la_ta_values: %s\n", why);
    return;
  }
  if (la_trace_count(t) == d->n && la_trace_decode(t, 0, d->n, d->out) == 0)
    d->rc = 0;
  la_trace_close(t);
}

int la_ta_values(la_test_agent_t *a, const char *app_id, uint32_t rank,
                 uint64_t cycle_tag, double *out, uint64_t n) {
  char sql[400];
  la_ta_dec_t d = {out, n, -1};
  snprintf(sql, sizeof sql,
           "SELECT segments FROM traces WHERE app_id = '%s' AND rank = %u "
           "AND cycle_tag = %llu",
           app_id, rank, (unsigned long long)cycle_tag);
  la_ta_query(a, sql, la_ta_decode, &d);
  return d.rc;
}

typedef struct {
  la_trace_totals_t *tot;
  int rc;
} la_ta_tot_t;

static void la_ta_totals_of(sqlite3_stmt *st, void *arg) {
  la_ta_tot_t *d = arg;
  char why[160];
  const void *b = sqlite3_column_blob(st, 0);
  int len = sqlite3_column_bytes(st, 0);
  if (b && len > 0 &&
      la_trace_check_totals(b, (size_t)len, UINT64_MAX, d->tot, why,
                            sizeof why) == 0)
    d->rc = 0;
}

int la_ta_totals(la_test_agent_t *a, const char *app_id, uint32_t rank,
                 uint64_t cycle_tag, int robust, la_trace_totals_t *tot) {
  char sql[400];
  la_ta_tot_t d = {tot, -1};
  snprintf(sql, sizeof sql,
           "SELECT segments FROM %s WHERE app_id = '%s' AND rank = %u "
           "AND cycle_tag = %llu",
           robust ? "robust" : "traces", app_id, rank,
           (unsigned long long)cycle_tag);
  la_ta_query(a, sql, la_ta_totals_of, &d);
  return d.rc;
}

long long la_ta_tag(la_test_agent_t *a, const char *app_id, uint32_t rank,
                    size_t i) {
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT cycle_tag FROM traces WHERE app_id = '%s' AND rank = %u "
           "ORDER BY cycle_tag LIMIT 1 OFFSET %zu",
           app_id, rank, i);
  return la_ta_sql_int(a, sql);
}

long long la_ta_ntraces(la_test_agent_t *a, const char *app_id) {
  char sql[300];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM traces WHERE app_id = '%s'",
           app_id);
  return la_ta_sql_int(a, sql);
}

int la_ta_conn_fd(uint16_t port) {
  for (int fd = 3; fd < 1024; fd++) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    if (getpeername(fd, (struct sockaddr *)&a, &len) == 0 &&
        a.sin_family == AF_INET && ntohs(a.sin_port) == port)
      return fd;
  }
  return -1;
}

la_traceset_t *la_ta_complete_set(la_client_t *c, const char *app_id,
                                  uint64_t cycle, int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    la_traceset_t *ts = NULL;
    int rc = la_client_get(c, app_id, cycle, &ts);
    if (rc == 0 && la_traceset_complete(ts)) return ts;
    if (ts) la_traceset_free(ts);
    if (la_td_now_ms() > end) return NULL;
    la_td_nap_ms(50);
  }
}
