/* SPDX-License-Identifier: BSD-3-Clause */
/* test_store.c: unit tests of the GlobalAgent's SQLite store
 * (store/store.{h,c}) and of the example queries of docs/storage.md.
 *
 * Every test gets a fresh directory from mkdtemp under /tmp with a real
 * database file in it, and removes it afterwards. Covers: create and reopen;
 * WAL mode; schema version refusal (newer, older, foreign database, garbage
 * file); RankStart/RankEnd upserts (first copy wins, RankEnd before
 * RankStart); conflicting nprocs refused with nothing written; traces
 * idempotent on (app, rank, cycle); traces before any RankStart; group commit
 * and rollback, and a batch poisoned by an injected SQLite error (a trigger)
 * rolled back whole; load_set (order, missing ranks, rank_elements, bytes,
 * validation, unknown nprocs, late ranks); set_closed idempotent; open sets
 * after a restart; the app, cycle and latest queries including cycle tags
 * >= 2^63; agent sequence bookkeeping; corrupt rows and a damaged file giving
 * clean errors; the WAL checkpointed while open and bounded; every sqlite3 and
 * Python example of docs/storage.md run against a database written here, output
 * compared with the document. The store's write throughput is measured by
 * bench/bench_store.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "la.h"
#include "la_clusters.h"
#include "la_codec.h"
#include "la_compact.h"
#include "store.h"
#include "store_reps.h"
#include "la_test_classes.h"
#include "la_test_msg.h"
#include "la_trace_msg.h"

typedef struct fx {
  char dir[64];
  char path[128];
  la_store_t *s;
} fx_t;

/* ------------------------------------------------------------- helpers -- */

/* Closes the store and opens it again (a file or a PostgreSQL URL). */
static void reopen(fx_t *f) {
  char why[600];
  la_store_close(f->s);
  f->s = NULL;
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why), 0);
}

/* test_pg_store.c runs cases of this file against PostgreSQL: it brings
 * its own fixture and raw_* helpers (TEST_STORE_PG). */
#ifndef TEST_STORE_PG
static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  return remove(path);
}

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  strcpy(f->dir, "/tmp/la_test_store.XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  snprintf(f->path, sizeof f->path, "%s/la.db", f->dir);
  char why[256];
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why), 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  la_store_close(f->s);
  nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(f);
  return 0;
}

/* Runs SQL on the file directly (as a user or a fault would). */
static void raw_exec(const char *path, const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
  if (rc != SQLITE_OK) fail_msg("%s: %s", sql, msg ? msg : "?");
  sqlite3_close(db);
}

/* One integer from a query on the file. */
static long long raw_int(const char *path, const char *sql) {
  sqlite3 *db;
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  long long v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

static void raw_text(const char *path, const char *sql, char *buf, size_t cap) {
  sqlite3 *db;
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  const unsigned char *t = sqlite3_column_text(st, 0);
  snprintf(buf, cap, "%s", t ? (const char *)t : "(null)");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

#endif /* TEST_STORE_PG */

static La__RankStart rank_start(const char *app, uint32_t rank, uint32_t nprocs,
                                uint64_t n_elements) {
  return la_test_rank_start(app, "wavetoy", rank, nprocs, n_elements);
}

static La__RankEnd rank_end(const char *app, uint32_t rank,
                            const char *reason) {
  La__RankEnd m = LA__RANK_END__INIT;
  m.seq = 99;
  m.app_id = (char *)app;
  m.rank = rank;
  m.reason = (char *)reason;
  m.has_cycles = 1;
  m.cycles = 40;
  m.has_t_end_ns = 1;
  m.t_end_ns = 1700000001000000000ull;
  return m;
}

/* A trace with its own storage (segments: len bytes of a pattern). */
typedef struct tr {
  La__CompactTrace t;
  La__SeriesStats st;
  La__FitError er;
  uint8_t seg[2048];
} tr_t;

static void mk_trace(tr_t *x, const char *app, uint32_t rank, uint64_t tag,
                     uint64_t n_elements, size_t len, uint8_t fill) {
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  La__FitError er = LA__FIT_ERROR__INIT;
  x->t = t;
  x->st = st;
  x->er = er;
  assert_true(len <= sizeof x->seg);
  for (size_t i = 0; i < len; i++) x->seg[i] = (uint8_t)(fill + i * 7);
  x->t.seq = tag * 100 + rank + 1;
  x->t.app_id = (char *)app;
  x->t.rank = rank;
  x->t.cycle_tag = tag;
  x->t.n_elements = n_elements;
  x->t.mode = LA__COMPACT_MODE__COMPACT_POLYLINE;
  x->t.segments.data = x->seg;
  x->t.segments.len = len;
  x->st.count = n_elements;
  x->st.sum = 1000.0 * (rank + 1) + (double)tag;
  x->st.min = 1.0 + rank;
  x->st.max = 50.0 + rank;
  x->t.stats = &x->st;
  x->er.max_abs = 0.5;
  x->er.rmse = 0.25;
  x->er.cv = 0.01 * (rank + 1);
  x->t.error = &x->er;
  x->t.has_t_xfer_ns = 1;
  x->t.t_xfer_ns = 1700000000500000000ull + tag;
  x->t.has_rank_seq = 1;
  x->t.rank_seq = tag / 10;
}

static int put_trace(la_store_t *s, const char *app, uint32_t rank,
                     uint64_t tag, int *was_new) {
  tr_t x;
  mk_trace(&x, app, rank, tag, 100, 40, (uint8_t)(rank * 16 + tag));
  return la_store_trace(s, &x.t, was_new);
}

static int put_rank_start(la_store_t *s, const char *app, uint32_t rank,
                          uint32_t nprocs, uint64_t nel) {
  La__RankStart m = rank_start(app, rank, nprocs, nel);
  return la_store_rank_start(s, &m, NULL);
}

/* ----------------------------------------------------------- open, schema */

static void test_open_reopen(void **state) {
  fx_t *f = *state;
  assert_int_equal(put_rank_start(f->s, "a1", 0, 2, 100), 0);
  assert_int_equal(put_trace(f->s, "a1", 0, 10, NULL), 0);
  reopen(f);
  la_store_app_t *apps;
  size_t n;
  assert_int_equal(la_store_apps(f->s, &apps, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(apps[0].app_id, "a1");
  assert_string_equal(apps[0].app_name, "wavetoy");
  assert_int_equal(apps[0].nprocs, 2);
  assert_int_equal(apps[0].cycles, 1);
  free(apps);
  assert_int_equal(raw_int(f->path, "SELECT version FROM schema_version"),
                   LA_STORE_SCHEMA_VERSION);
  assert_int_equal(raw_int(f->path, "PRAGMA application_id"),
                   LA_STORE_APPLICATION_ID);
  char mode[32];
  raw_text(f->path, "PRAGMA journal_mode", mode, sizeof mode);
  assert_string_equal(mode, "wal");
  /* FULL synchronous opens too, and sees the same data */
  la_store_close(f->s);
  char why[256];
  assert_int_equal(la_store_open(f->path, 1, &f->s, why, sizeof why), 0);
  uint32_t np, ended;
  assert_int_equal(la_store_app_ranks_ended(f->s, "a1", &np, &ended), 0);
  assert_int_equal(np, 2);
  assert_int_equal(ended, 0);
  /* bad arguments */
  la_store_t *s2 = NULL;
  assert_int_equal(la_store_open(NULL, 0, &s2, why, sizeof why), LA_EINVAL);
  assert_int_equal(
      la_store_open("/nonexistent-dir/x/la.db", 0, &s2, why, sizeof why),
      LA_EIO);
  assert_non_null(strstr(why, "/nonexistent-dir/x/la.db"));
  assert_null(s2);
  /* in-memory database works (no WAL) */
  assert_int_equal(la_store_open(":memory:", 0, &s2, why, sizeof why), 0);
  assert_int_equal(put_trace(s2, "m", 0, 1, NULL), 0);
  la_store_close(s2);
}

static void test_schema_version_refused(void **state) {
  fx_t *f = *state;
  la_store_close(f->s);
  f->s = NULL;
  char why[256];
  raw_exec(f->path, "UPDATE schema_version SET version = 2");
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why),
                   LA_EVERSION);
  assert_null(f->s);
  assert_non_null(strstr(why, "newer"));
  assert_non_null(strstr(why, "version 2"));
  raw_exec(f->path, "UPDATE schema_version SET version = 0");
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why),
                   LA_EVERSION);
  assert_non_null(strstr(why, "older"));
  raw_exec(f->path, "DELETE FROM schema_version");
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, "empty"));
  raw_exec(f->path, "INSERT INTO schema_version VALUES (1, 0)");
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why), 0);
  la_store_close(f->s);
  f->s = NULL;
  /* a table the code needs is gone: the schema check says so */
  raw_exec(f->path, "DROP TABLE agents");
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, "schema check failed"));
  /* another program's database */
  char other[160];
  snprintf(other, sizeof other, "%s/other.db", f->dir);
  raw_exec(other, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  assert_int_equal(la_store_open(other, 0, &f->s, why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, "not an LA database"));
  raw_exec(other, "PRAGMA application_id = 1234");
  assert_int_equal(la_store_open(other, 0, &f->s, why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, "application_id"));
  /* garbage */
  char junk[160];
  snprintf(junk, sizeof junk, "%s/junk.db", f->dir);
  FILE *fp = fopen(junk, "wb");
  assert_non_null(fp);
  for (int i = 0; i < 8192; i++) fputc((i * 131 + 7) & 0xff, fp);
  fclose(fp);
  assert_int_equal(la_store_open(junk, 0, &f->s, why, sizeof why), LA_EIO);
  assert_null(f->s);
  assert_non_null(strstr(why, "not a database"));
  /* an empty file is an empty database: it gets the schema */
  fp = fopen(junk, "wb");
  fclose(fp);
  assert_int_equal(la_store_open(junk, 0, &f->s, why, sizeof why), 0);
}

/* ------------------------------------------------------------ rank rows */

static void test_rank_upserts(void **state) {
  fx_t *f = *state;
  assert_int_equal(put_rank_start(f->s, "a", 0, 3, 100), 0);
  /* a second copy with other content changes nothing */
  La__RankStart m = rank_start("a", 0, 3, 555);
  m.host = "other";
  assert_int_equal(la_store_rank_start(f->s, &m, NULL), 0);
  assert_int_equal(
      raw_int(f->path, "SELECT n_elements FROM ranks WHERE rank = 0"), 100);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM ranks"), 1);
  /* app defined by the first RankStart */
  m = rank_start("a", 1, 3, 200);
  m.metric = "cycles";
  assert_int_equal(la_store_rank_start(f->s, &m, NULL), 0);
  char txt[64];
  raw_text(f->path, "SELECT metric FROM apps", txt, sizeof txt);
  assert_string_equal(txt, "time");
  assert_int_equal(raw_int(f->path, "SELECT compact_mode FROM apps"), 1);
  assert_int_equal(raw_int(f->path, "SELECT period FROM apps"), 10);
  /* RankEnd: once */
  La__RankEnd e = rank_end("a", 0, "finalize");
  int was_new = -1;
  assert_int_equal(la_store_rank_end(f->s, &e, &was_new), 0);
  assert_int_equal(was_new, 1);
  e = rank_end("a", 0, "disconnected"); /* a resend changes nothing */
  assert_int_equal(la_store_rank_end(f->s, &e, &was_new), 0);
  assert_int_equal(was_new, 0);
  raw_text(f->path, "SELECT end_reason FROM ranks WHERE rank = 0", txt,
           sizeof txt);
  assert_string_equal(txt, "finalize");
  uint32_t np, ended;
  assert_int_equal(la_store_app_ranks_ended(f->s, "a", &np, &ended), 0);
  assert_int_equal(np, 3);
  assert_int_equal(ended, 1);
  /* RankEnd before RankStart (rank 2): rows created, then completed */
  e = rank_end("a", 2, "disconnected");
  assert_int_equal(la_store_rank_end(f->s, &e, NULL), 0);
  assert_int_equal(raw_int(f->path, "SELECT started FROM ranks WHERE rank = 2"),
                   0);
  assert_int_equal(put_rank_start(f->s, "a", 2, 3, 300), 0);
  assert_int_equal(
      raw_int(f->path, "SELECT n_elements FROM ranks WHERE rank = 2"), 300);
  assert_int_equal(raw_int(f->path, "SELECT ended FROM ranks WHERE rank = 2"),
                   1);
  assert_int_equal(la_store_app_ranks_ended(f->s, "a", &np, &ended), 0);
  assert_int_equal(ended, 2);
  /* RankEnd of an unknown application: app created with nprocs unknown */
  e = rank_end("b", 5, NULL);
  assert_int_equal(la_store_rank_end(f->s, &e, NULL), 0);
  assert_int_equal(la_store_app_ranks_ended(f->s, "b", &np, &ended), 0);
  assert_int_equal(np, 0);
  assert_int_equal(ended, 1);
  assert_int_equal(la_store_app_ranks_ended(f->s, "zz", &np, &ended),
                   LA_ENOTFOUND);
  la_store_app_t *apps;
  size_t n;
  assert_int_equal(la_store_apps(f->s, &apps, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(apps[0].app_id, "a");
  assert_int_equal(apps[0].ranks_started, 3);
  assert_int_equal(apps[0].ranks_ended, 2);
  assert_int_equal(apps[0].n_elements_total, 600);
  assert_int_equal(apps[0].t_start_ns, 1700000000000000000ull);
  assert_int_equal(apps[0].t_last_ns, 1700000001000000000ull);
  assert_string_equal(apps[0].unit, "ns");
  free(apps);
}

static void test_conflicting_nprocs(void **state) {
  fx_t *f = *state;
  assert_int_equal(put_rank_start(f->s, "a", 0, 4, 100), 0);
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(put_trace(f->s, "a", 0, 1, NULL), 0);
  assert_int_equal(put_rank_start(f->s, "a", 1, 8, 100), LA_EPROTO);
  assert_non_null(strstr(la_store_errmsg(f->s), "nprocs 8"));
  assert_non_null(strstr(la_store_errmsg(f->s), "has 4"));
  /* a trace of a rank outside nprocs is kept, outside every set */
  int was_new;
  assert_int_equal(put_trace(f->s, "a", 4, 1, &was_new), 0);
  assert_int_equal(was_new, 1);
  /* the batch is still good */
  assert_int_equal(put_trace(f->s, "a", 1, 1, NULL), 0);
  assert_int_equal(la_store_commit(f->s), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM ranks"), 1);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 3);
  assert_int_equal(raw_int(f->path, "SELECT nprocs FROM apps"), 4);
  La__TraceSet *set;
  assert_int_equal(la_store_load_set(f->s, "a", 1, &set), 0);
  assert_int_equal(set->n_traces, 2);
  assert_int_equal(set->traces[1]->rank, 1);
  la_store_free_set(set);
  la_store_open_set_t *os;
  size_t n;
  assert_int_equal(la_store_open_sets(f->s, &os, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(os[0].n_ranks, 2);
  la_store_free_open_sets(os, n);
  /* outside a batch as well: refused, nothing written */
  assert_int_equal(put_rank_start(f->s, "a", 1, 2, 100), LA_EPROTO);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM ranks"), 1);
  /* ranks beyond any possible nprocs */
  assert_int_equal(put_trace(f->s, "x", LA_MAX_RANKS, 2, NULL), LA_EPROTO);
  assert_non_null(strstr(la_store_errmsg(f->s), "rank"));
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 3);
}

/* A rank that registers again after its end (its LocalAgent restarted:
 * a RankEnd "LocalAgent restarted", then a RankStart with a higher
 * sequence number from the same host and process) is running again; the
 * end of the registration again is the one kept. Resent or older copies of
 * either message change nothing, and a RankStart from another host or
 * another process (a second run under the same id) does not reopen. */
static void test_rank_registered_again(void **state) {
  fx_t *f = *state;
  La__RankStart m = rank_start("r", 0, 2, 10); /* seq 1 */
  int reopened = -1;
  assert_int_equal(la_store_rank_start(f->s, &m, &reopened), 0);
  assert_int_equal(reopened, 0);
  La__RankEnd e = rank_end("r", 0, "LocalAgent restarted"); /* seq 99 */
  assert_int_equal(la_store_rank_end(f->s, &e, NULL), 0);
  uint32_t np, ended;
  assert_int_equal(la_store_app_ranks_ended(f->s, "r", &np, &ended), 0);
  assert_int_equal(ended, 1);
  /* the old RankStart again: still ended */
  assert_int_equal(la_store_rank_start(f->s, &m, &reopened), 0);
  assert_int_equal(reopened, 0);
  /* from another host, even newer: not this rank's registration again */
  La__RankStart other = m;
  other.seq = 200;
  other.host = "node2";
  assert_int_equal(la_store_rank_start(f->s, &other, &reopened), 0);
  assert_int_equal(reopened, 0);
  assert_int_equal(la_store_app_ranks_ended(f->s, "r", &np, &ended), 0);
  assert_int_equal(ended, 1);
  /* another process under the same id, newer: a second run, not this */
  La__RankStart second = m;
  second.seq = 110;
  second.pid = 4242;
  assert_int_equal(la_store_rank_start(f->s, &second, &reopened), 0);
  assert_int_equal(reopened, 0);
  /* the registration again: the same process */
  La__RankStart again = m;
  again.seq = 120;
  again.has_t_start_ns = 1;
  again.t_start_ns = 1700000002000000000ull;
  assert_int_equal(la_store_rank_start(f->s, &again, &reopened), 0);
  assert_int_equal(reopened, 1);
  assert_int_equal(la_store_app_ranks_ended(f->s, "r", &np, &ended), 0);
  assert_int_equal(ended, 0);
  /* a resend of it changes nothing */
  assert_int_equal(la_store_rank_start(f->s, &again, &reopened), 0);
  assert_int_equal(reopened, 0);
  /* the old end, resent: below the new start, refused */
  int was_new = -1;
  assert_int_equal(la_store_rank_end(f->s, &e, &was_new), 0);
  assert_int_equal(was_new, 0);
  assert_int_equal(la_store_app_ranks_ended(f->s, "r", &np, &ended), 0);
  assert_int_equal(ended, 0);
  /* the program's own end */
  La__RankEnd fin = rank_end("r", 0, "finalize");
  fin.seq = 130;
  assert_int_equal(la_store_rank_end(f->s, &fin, &was_new), 0);
  assert_int_equal(was_new, 1);
  assert_int_equal(la_store_app_ranks_ended(f->s, "r", &np, &ended), 0);
  assert_int_equal(ended, 1);
  char txt[64];
  raw_text(f->path, "SELECT end_reason FROM ranks WHERE app_id = 'r'", txt,
           sizeof txt);
  assert_string_equal(txt, "finalize");
  assert_int_equal(raw_int(f->path, "SELECT CASE WHEN t_start_ns = "
                                    "1700000002000000000 THEN 1 ELSE 0 END"
                                    " FROM ranks WHERE app_id = 'r'"),
                   1);
}

/* -------------------------------------------------------------- traces */

static void test_trace_idempotent(void **state) {
  fx_t *f = *state;
  int was_new = -1;
  tr_t a, b;
  mk_trace(&a, "app", 1, 5, 100, 64, 3);
  mk_trace(&b, "app", 1, 5, 200, 80, 9); /* same key, other content */
  b.st.count = 200;
  b.t.seq = 777;
  assert_int_equal(la_store_trace(f->s, &a.t, &was_new), 0);
  assert_int_equal(was_new, 1);
  assert_int_equal(la_store_trace(f->s, &b.t, &was_new), 0);
  assert_int_equal(was_new, 0);
  assert_int_equal(la_store_trace(f->s, &a.t, &was_new), 0);
  assert_int_equal(was_new, 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 1);
  assert_int_equal(raw_int(f->path, "SELECT n_elements FROM traces"), 100);
  assert_int_equal(raw_int(f->path, "SELECT length(segments) FROM traces"), 64);
  assert_int_equal(raw_int(f->path, "SELECT n_ranks_present FROM trace_sets"),
                   1);
  /* another cycle and another rank are new */
  mk_trace(&b, "app", 1, 6, 100, 64, 3);
  assert_int_equal(la_store_trace(f->s, &b.t, &was_new), 0);
  assert_int_equal(was_new, 1);
  mk_trace(&b, "app", 0, 5, 100, 64, 3);
  assert_int_equal(la_store_trace(f->s, &b.t, &was_new), 0);
  assert_int_equal(was_new, 1);
  assert_int_equal(
      raw_int(f->path,
              "SELECT n_ranks_present FROM trace_sets WHERE cycle_tag = 5"),
      2);
  /* bad arguments */
  assert_int_equal(la_store_trace(f->s, NULL, &was_new), LA_EINVAL);
  b.t.segments.len = 0;
  assert_int_equal(la_store_trace(f->s, &b.t, &was_new), LA_EINVAL);
  /* NaN statistics come back as NaN (SQLite stores NULL) */
  mk_trace(&b, "app", 2, 5, 100, 64, 3);
  b.st.min = NAN;
  b.st.max = NAN;
  b.t.error = NULL;
  b.t.has_t_xfer_ns = 0;
  assert_int_equal(la_store_trace(f->s, &b.t, &was_new), 0);
  La__TraceSet *set;
  assert_int_equal(la_store_load_set(f->s, "app", 5, &set), 0);
  assert_int_equal(set->n_traces, 3);
  assert_true(isnan(set->traces[2]->stats->min));
  assert_null(set->traces[2]->error);
  assert_false(set->traces[2]->has_t_xfer_ns);
  assert_non_null(set->traces[1]->error);
  assert_true(set->traces[1]->has_t_xfer_ns);
  la_store_free_set(set);
}

static void test_trace_before_rank_start(void **state) {
  fx_t *f = *state;
  int was_new;
  assert_int_equal(put_trace(f->s, "late", 3, 10, &was_new), 0);
  assert_int_equal(was_new, 1);
  assert_int_equal(put_trace(f->s, "late", 0, 10, &was_new), 0);
  assert_int_equal(raw_int(f->path, "SELECT nprocs FROM apps"), 0);
  uint32_t np, ended;
  assert_int_equal(la_store_app_ranks_ended(f->s, "late", &np, &ended), 0);
  assert_int_equal(np, 0);
  /* unknown nprocs: highest rank + 1, never complete */
  La__TraceSet *set;
  char why[200];
  assert_int_equal(la_store_load_set(f->s, "late", 10, &set), 0);
  assert_int_equal(set->nprocs, 4);
  assert_false(set->complete);
  assert_int_equal(set->n_missing_ranks, 2);
  assert_int_equal(set->missing_ranks[0], 1);
  assert_int_equal(set->missing_ranks[1], 2);
  assert_int_equal(set->n_rank_elements, 4);
  assert_int_equal(set->rank_elements[0], 0);
  assert_int_equal(
      la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, why, sizeof why),
      0);
  la_store_free_set(set);
  la_store_open_set_t *os;
  size_t n;
  assert_int_equal(la_store_open_sets(f->s, &os, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(os[0].nprocs, 0);
  assert_int_equal(os[0].n_ranks, 2);
  la_store_free_open_sets(os, n);
  /* the RankStarts come: nprocs 2; the rank-3 trace is kept but is outside
   * every set */
  assert_int_equal(put_rank_start(f->s, "late", 0, 2, 100), 0);
  assert_int_equal(put_rank_start(f->s, "late", 1, 2, 120), 0);
  assert_int_equal(raw_int(f->path, "SELECT nprocs FROM apps"), 2);
  assert_int_equal(la_store_load_set(f->s, "late", 10, &set), 0);
  assert_int_equal(set->nprocs, 2);
  assert_int_equal(set->n_traces, 1);
  assert_int_equal(set->n_missing_ranks, 1);
  assert_int_equal(set->missing_ranks[0], 1);
  assert_int_equal(set->rank_elements[1], 120);
  assert_int_equal(
      la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, why, sizeof why),
      0);
  la_store_free_set(set);
  assert_int_equal(la_store_open_sets(f->s, &os, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(os[0].nprocs, 2);
  assert_int_equal(os[0].n_ranks, 1);
  assert_int_equal(os[0].ranks[0], 0);
  la_store_free_open_sets(os, n);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 2);
}

/* ------------------------------------------------------ batches, faults */

static void test_group_commit_rollback(void **state) {
  fx_t *f = *state;
  assert_int_equal(la_store_commit(f->s), LA_EINVAL);
  assert_int_equal(la_store_rollback(f->s), 0);
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(la_store_begin(f->s), LA_EINVAL);
  for (uint32_t r = 0; r < 4; r++)
    assert_int_equal(put_rank_start(f->s, "g", r, 4, 100), 0);
  for (uint64_t c = 1; c <= 10; c++)
    for (uint32_t r = 0; r < 4; r++)
      assert_int_equal(put_trace(f->s, "g", r, c, NULL), 0);
  assert_int_equal(la_store_agent_seq_update(f->s, "node1", 44), 0);
  assert_int_equal(la_store_commit(f->s), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 40);
  /* rolled back: absent everywhere */
  assert_int_equal(la_store_begin(f->s), 0);
  for (uint64_t c = 11; c <= 20; c++)
    assert_int_equal(put_trace(f->s, "g", 0, c, NULL), 0);
  assert_int_equal(la_store_set_closed(f->s, "g", 1, 1, NULL, 0, 5), 0);
  assert_int_equal(la_store_agent_seq_update(f->s, "node1", 99), 0);
  assert_int_equal(la_store_rollback(f->s), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 40);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM trace_sets"), 10);
  assert_int_equal(
      raw_int(f->path, "SELECT count(*) FROM trace_sets WHERE closed"), 0);
  uint64_t next;
  assert_int_equal(la_store_agent_next_seq(f->s, "node1", &next), 0);
  assert_int_equal(next, 45);
  la_store_cycle_t *cy;
  size_t n;
  assert_int_equal(la_store_cycles(f->s, "g", 0, UINT64_MAX, &cy, &n), 0);
  assert_int_equal(n, 10);
  free(cy);
  /* the rolled-back traces are new again */
  int was_new;
  assert_int_equal(put_trace(f->s, "g", 0, 11, &was_new), 0);
  assert_int_equal(was_new, 1);
}

/* A batch's new traces are counted in their sets' rows once per set, and
 * their keys' missing records deleted, at the commit or before anything
 * that reads those rows or records: the result is the same as per trace.
 * 40 sets in one batch (more than the store keeps at once), ranks
 * interleaved; the cycle listing in the middle of the batch sees every
 * trace; a set closed in the batch and then given a late trace counts it;
 * outside a batch a trace counts at once; a trace's missing record is gone
 * for the missing-rank list and the cycle listing later in the batch, and
 * stays when the batch is rolled back. */
static void test_deferred_writes_per_batch(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 4; r++)
    assert_int_equal(put_rank_start(f->s, "tc", r, 4, 100), 0);
  assert_int_equal(la_store_begin(f->s), 0);
  for (uint32_t r = 0; r < 3; r++)
    for (uint64_t c = 1; c <= 40; c++)
      assert_int_equal(put_trace(f->s, "tc", r, c, NULL), 0);
  la_store_cycle_t *cy;
  size_t n;
  assert_int_equal(la_store_cycles(f->s, "tc", 0, UINT64_MAX, &cy, &n), 0);
  assert_int_equal(n, 40);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(cy[i].ranks_present, 3);
    assert_int_equal(cy[i].n_missing, 1);
  }
  free(cy);
  assert_int_equal(put_trace(f->s, "tc", 3, 1, NULL), 0);
  assert_int_equal(la_store_set_closed(f->s, "tc", 2, 0, (uint32_t[]){3}, 1,
                                       7),
                   0);
  assert_int_equal(put_trace(f->s, "tc", 3, 2, NULL), 0); /* late */
  assert_int_equal(la_store_commit(f->s), 0);
  assert_int_equal(
      raw_int(f->path, "SELECT sum(n_ranks_present) FROM trace_sets"),
      3 * 40 + 2);
  assert_int_equal(raw_int(f->path, "SELECT n_ranks_present FROM trace_sets"
                                    " WHERE cycle_tag = 1"),
                   4);
  assert_int_equal(raw_int(f->path, "SELECT n_ranks_present FROM trace_sets"
                                    " WHERE cycle_tag = 2"),
                   4);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM trace_sets WHERE"
                                    " t_first_ns = 0 OR t_last_ns <"
                                    " t_first_ns"),
                   0);
  assert_int_equal(put_trace(f->s, "tc", 3, 3, NULL), 0); /* own commit */
  assert_int_equal(raw_int(f->path, "SELECT n_ranks_present FROM trace_sets"
                                    " WHERE cycle_tag = 3"),
                   4);
  /* a trace replaces its key's missing record: gone for whatever reads
   * the records later in the batch, and once committed */
  assert_int_equal(
      la_store_missing(f->s, "tc", 4, 3, "late node", 1, 9000, NULL), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM missing"), 1);
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(put_trace(f->s, "tc", 3, 4, NULL), 0);
  uint32_t *miss = NULL;
  size_t n_miss = 9;
  assert_int_equal(la_store_missing_ranks(f->s, "tc", 4, 4, &miss, &n_miss),
                   0);
  assert_int_equal(n_miss, 0);
  free(miss);
  assert_int_equal(la_store_cycles(f->s, "tc", 4, 4, &cy, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(cy[0].reasons, "");
  assert_int_equal(cy[0].ranks_present, 4);
  free(cy);
  assert_int_equal(la_store_commit(f->s), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM missing"), 0);
  /* rolled back: the record stays */
  assert_int_equal(
      la_store_missing(f->s, "tc", 41, 3, "late node", 1, 9001, NULL), 0);
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(put_trace(f->s, "tc", 3, 41, NULL), 0);
  assert_int_equal(la_store_rollback(f->s), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM missing"), 1);
}

/* The flush deletes missing records only for the sets that have any, each
 * set asked once: in a batch of ten sets whose traces alternate set by set,
 * every other set with records of four ranks, the three ranks' traces
 * delete exactly their records (the fourth rank's stay), whatever the
 * order of the sets. */
static void test_deferred_unmiss_some_sets(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 4; r++)
    assert_int_equal(put_rank_start(f->s, "um", r, 4, 100), 0);
  for (uint64_t c = 51; c < 60; c += 2)
    for (uint32_t r = 0; r < 4; r++)
      assert_int_equal(
          la_store_missing(f->s, "um", c, r, "late node", 1, 100 + c, NULL),
          0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM missing"), 20);
  assert_int_equal(la_store_begin(f->s), 0);
  for (uint32_t r = 0; r < 3; r++)
    for (uint64_t c = 50; c < 60; c++)
      assert_int_equal(put_trace(f->s, "um", r, c, NULL), 0);
  assert_int_equal(la_store_commit(f->s), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM missing"), 5);
  assert_int_equal(
      raw_int(f->path, "SELECT count(*) FROM missing WHERE rank = 3"), 5);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces WHERE"
                                    " app_id = 'um'"),
                   30);
}

/* la_store_trace_defer: a new trace's rows written at the batch's next
 * flush, from a copy (the caller's buffers may be reused at once), in the
 * order deferred; whatever reads traces in the batch sees them; a rollback
 * forgets them; a key found stored at the flush changes nothing and is
 * counted. */
static void test_deferred_traces(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 4; r++)
    assert_int_equal(put_rank_start(f->s, "dt", r, 4, 100), 0);
  assert_int_equal(la_store_begin(f->s), 0);
  uint8_t rseg[64];
  for (uint32_t r = 0; r < 3; r++)
    for (uint64_t c = 1; c <= 3; c++) {
      tr_t x;
      mk_trace(&x, "dt", r, c, 100, 40, (uint8_t)(r * 16 + c));
      La__SeriesStats rst = LA__SERIES_STATS__INIT;
      if (r == 1) { /* with robust weights and interference figures */
        for (size_t i = 0; i < sizeof rseg; i++) rseg[i] = (uint8_t)(c + i);
        x.t.has_robust_segments = 1;
        x.t.robust_segments.data = rseg;
        x.t.robust_segments.len = sizeof rseg;
        rst.count = 100;
        rst.sum = 50.5 + (double)c;
        rst.min = 0.5;
        rst.max = 4;
        x.t.robust_stats = &rst;
        x.t.has_interference = 1;
        x.t.interference = 12.25;
      }
      int was_new = 0;
      assert_int_equal(la_store_trace_defer(f->s, &x.t, &was_new), 0);
      assert_int_equal(was_new, 1);
      /* the caller's buffers are reused at once */
      memset(&x, 0xA5, sizeof x);
      memset(rseg, 0x5A, sizeof rseg);
    }
  /* a resend of a deferred key in the batch: the store says so */
  int was_new = 1;
  assert_int_equal(put_trace(f->s, "dt", 0, 1, &was_new), 0);
  assert_int_equal(was_new, 0);
  tr_t bad;
  mk_trace(&bad, "dt", LA_MAX_RANKS, 2, 100, 40, 1); /* refused now */
  assert_int_equal(la_store_trace_defer(f->s, &bad.t, &was_new), LA_EPROTO);
  assert_int_equal(was_new, 0);
  /* deferred, then a missing record of its key: the trace wins */
  tr_t y;
  mk_trace(&y, "dt", 3, 1, 100, 40, 99);
  assert_int_equal(la_store_trace_defer(f->s, &y.t, &was_new), 0);
  assert_int_equal(
      la_store_missing(f->s, "dt", 1, 3, "late node", 1, 77, &was_new), 0);
  assert_int_equal(was_new, 0);
  /* the caller was wrong (rank 2 cycle 3 is deferred already): counted,
   * the first copy stays */
  mk_trace(&y, "dt", 2, 3, 100, 40, 200);
  y.st.sum = -1;
  assert_int_equal(la_store_trace_defer(f->s, &y.t, &was_new), 0);
  la_store_cycle_t *cy;
  size_t n;
  assert_int_equal(la_store_cycles(f->s, "dt", 0, UINT64_MAX, &cy, &n), 0);
  assert_int_equal(n, 3);
  assert_int_equal(cy[0].ranks_present, 4);
  assert_int_equal(cy[1].ranks_present, 3);
  assert_int_equal(cy[2].ranks_present, 3);
  free(cy);
  assert_int_equal(la_store_deferred_found(f->s), 1);
  mk_trace(&y, "dt", 3, 2, 100, 40, 98);
  assert_int_equal(la_store_trace_defer(f->s, &y.t, &was_new), 0);
  assert_int_equal(la_store_commit(f->s), 0); /* flushes the last one */
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 11);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM robust"), 3);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM missing"), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces WHERE"
                                    " stat_sum < 0"),
                   0);
  /* rolled back: forgotten */
  assert_int_equal(la_store_begin(f->s), 0);
  mk_trace(&y, "dt", 3, 3, 100, 40, 97);
  assert_int_equal(la_store_trace_defer(f->s, &y.t, &was_new), 0);
  assert_int_equal(la_store_rollback(f->s), 0);
  assert_int_equal(la_store_commit(f->s), LA_EINVAL); /* no batch */
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 11);
  /* outside a batch: stored at once */
  assert_int_equal(la_store_trace_defer(f->s, &y.t, &was_new), 0);
  assert_int_equal(was_new, 1);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 12);
  /* what was stored is what was deferred, byte for byte */
  for (uint64_t c = 1; c <= 3; c++) {
    La__TraceSet *set = NULL;
    assert_int_equal(la_store_load_set(f->s, "dt", c, &set), 0);
    assert_int_equal(set->n_traces, 4);
    for (size_t i = 0; i < set->n_traces; i++) {
      const La__CompactTrace *t = set->traces[i];
      if (t->rank == 3) continue;
      tr_t e;
      mk_trace(&e, "dt", t->rank, c, 100, 40, (uint8_t)(t->rank * 16 + c));
      assert_int_equal(t->segments.len, 40);
      assert_memory_equal(t->segments.data, e.seg, 40);
      assert_true(t->stats->sum == e.st.sum);
      assert_true(t->error && t->error->cv == e.er.cv);
      assert_int_equal(t->t_xfer_ns, e.t.t_xfer_ns);
      assert_int_equal(t->rank_seq, e.t.rank_seq);
      if (t->rank == 1) {
        assert_non_null(t->robust_stats);
        assert_true(t->robust_stats->sum == 50.5 + (double)c);
        assert_int_equal(t->robust_segments.len, sizeof rseg);
        for (size_t k = 0; k < sizeof rseg; k++)
          assert_int_equal(t->robust_segments.data[k], (uint8_t)(c + k));
        assert_true(t->has_interference && t->interference == 12.25);
      } else {
        assert_null(t->robust_stats);
      }
    }
    la_store_free_set(set);
  }
}

static void test_batch_poisoned(void **state) {
  fx_t *f = *state;
  /* fault injection: a trigger makes SQLite fail on rank 99's traces */
  la_store_close(f->s);
  f->s = NULL;
  raw_exec(f->path,
           "CREATE TRIGGER boom BEFORE INSERT ON traces"
           " WHEN NEW.rank = 99"
           " BEGIN SELECT RAISE(ABORT, 'injected fault'); END;");
  reopen(f);
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(put_trace(f->s, "p", 0, 1, NULL), 0);
  assert_int_equal(put_trace(f->s, "p", 99, 1, NULL), LA_EIO);
  assert_non_null(strstr(la_store_errmsg(f->s), "injected fault"));
  /* later writes of the poisoned batch refuse, keeping the first error */
  assert_int_equal(put_trace(f->s, "p", 1, 1, NULL), LA_EIO);
  assert_non_null(strstr(la_store_errmsg(f->s), "injected fault"));
  assert_int_equal(la_store_commit(f->s), LA_EIO);
  assert_non_null(strstr(la_store_errmsg(f->s), "injected fault"));
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM apps"), 0);
  /* the store goes on */
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(put_trace(f->s, "p", 0, 1, NULL), 0);
  assert_int_equal(la_store_commit(f->s), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 1);
  /* outside a batch the failing write rolls back on its own */
  assert_int_equal(put_trace(f->s, "p", 99, 2, NULL), LA_EIO);
  assert_int_equal(put_trace(f->s, "p", 1, 2, NULL), 0);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 2);
  /* a failing COMMIT: a deferred foreign key violation */
  la_store_close(f->s);
  f->s = NULL;
  raw_exec(f->path,
           "DROP TRIGGER boom;"
           "CREATE TRIGGER boom2 AFTER INSERT ON traces"
           " WHEN NEW.rank = 98 BEGIN"
           " UPDATE traces SET app_id = 'nobody' WHERE id = NEW.id;"
           " END;");
  reopen(f);
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(put_trace(f->s, "p", 2, 3, NULL), 0);
  int r = put_trace(f->s, "p", 98, 3, NULL);
  if (r == 0) {
    assert_int_equal(la_store_commit(f->s), LA_EIO);
  } else {
    assert_int_equal(r, LA_EIO);
    assert_int_equal(la_store_commit(f->s), LA_EIO);
  }
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"), 2);
}

/* ------------------------------------------------------------- load_set */

static void test_load_set(void **state) {
  fx_t *f = *state;
  const uint64_t nel[5] = {100, 110, 120, 130, 140};
  for (uint32_t r = 0; r < 4; r++) /* rank 4: no RankStart */
    assert_int_equal(put_rank_start(f->s, "ls", r, 5, nel[r]), 0);
  static tr_t x[5];
  const uint32_t order[4] = {4, 0, 3, 2}; /* rank 1 missing */
  assert_int_equal(la_store_begin(f->s), 0);
  for (int i = 0; i < 4; i++) {
    uint32_t r = order[i];
    mk_trace(&x[r], "ls", r, 77, nel[r], 100 + 37 * r, (uint8_t)(r * 11));
    assert_int_equal(la_store_trace(f->s, &x[r].t, NULL), 0);
  }
  assert_int_equal(la_store_commit(f->s), 0);
  La__TraceSet *set;
  char why[200];
  assert_int_equal(la_store_load_set(f->s, "ls", 77, &set), 0);
  assert_int_equal(
      la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, why, sizeof why),
      0);
  assert_string_equal(set->app_id, "ls");
  assert_int_equal(set->cycle_tag, 77);
  assert_int_equal(set->nprocs, 5);
  assert_false(set->complete);
  assert_int_equal(set->n_missing_ranks, 1);
  assert_int_equal(set->missing_ranks[0], 1);
  assert_int_equal(set->n_traces, 4);
  const uint32_t want[4] = {0, 2, 3, 4};
  for (int i = 0; i < 4; i++) {
    const La__CompactTrace *t = set->traces[i];
    const tr_t *o = &x[want[i]];
    assert_int_equal(t->rank, want[i]);
    assert_string_equal(t->app_id, "ls");
    assert_int_equal(t->cycle_tag, 77);
    assert_int_equal(t->n_elements, o->t.n_elements);
    assert_int_equal(t->mode, o->t.mode);
    assert_int_equal(t->seq, o->t.seq);
    assert_int_equal(t->segments.len, o->t.segments.len);
    assert_memory_equal(t->segments.data, o->seg, o->t.segments.len);
    assert_int_equal(t->stats->count, o->st.count);
    assert_true(t->stats->sum == o->st.sum);
    assert_true(t->stats->min == o->st.min);
    assert_true(t->stats->max == o->st.max);
    assert_true(t->error->cv == o->er.cv);
    assert_true(t->error->rmse == o->er.rmse);
    assert_int_equal(t->t_xfer_ns, o->t.t_xfer_ns);
    assert_int_equal(t->rank_seq, o->t.rank_seq);
  }
  assert_int_equal(set->n_rank_elements, 5);
  for (int r = 0; r < 4; r++) assert_int_equal(set->rank_elements[r], nel[r]);
  assert_int_equal(set->rank_elements[4], 0);
  assert_string_equal(set->metric, "time");
  assert_string_equal(set->unit, "ns");
  assert_false(set->has_t_complete_ns);
  /* it packs and decodes as a TraceSet frame */
  uint8_t *buf;
  size_t len;
  assert_int_equal(
      la_frame_pack(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, &buf, &len), 0);
  ProtobufCMessage *m;
  assert_int_equal(
      la_msg_decode(LA__MSG_TYPE__MSG_TRACE_SET, buf + LA_FRAME_HEADER_LEN,
                    len - LA_FRAME_HEADER_LEN, &m, why, sizeof why),
      0);
  la_msg_free(m);
  free(buf);
  la_store_free_set(set);
  /* closed partial, then the late rank arrives: the set as it is now */
  uint32_t miss = 1;
  assert_int_equal(la_store_set_closed(f->s, "ls", 77, 0, &miss, 1, 12345), 0);
  assert_int_equal(la_store_load_set(f->s, "ls", 77, &set), 0);
  assert_true(set->has_t_complete_ns);
  assert_int_equal(set->t_complete_ns, 12345);
  la_store_free_set(set);
  mk_trace(&x[1], "ls", 1, 77, nel[1], 50, 1);
  assert_int_equal(la_store_trace(f->s, &x[1].t, NULL), 0);
  assert_int_equal(la_store_load_set(f->s, "ls", 77, &set), 0);
  assert_true(set->complete);
  assert_int_equal(set->n_missing_ranks, 0);
  assert_int_equal(set->n_traces, 5);
  assert_int_equal(
      la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, why, sizeof why),
      0);
  la_store_free_set(set);
  /* not found */
  set = (La__TraceSet *)1;
  assert_int_equal(la_store_load_set(f->s, "ls", 78, &set), LA_ENOTFOUND);
  assert_null(set);
  assert_int_equal(la_store_load_set(f->s, "nope", 77, &set), LA_ENOTFOUND);
  assert_int_equal(la_store_load_set(f->s, "", 77, &set), LA_EINVAL);
  la_store_free_set(NULL);
}

static void test_set_closed(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 8; r++)
    assert_int_equal(put_rank_start(f->s, "c", r, 8, 10), 0);
  for (uint32_t r = 0; r < 8; r++)
    if (r != 1 && r != 3) assert_int_equal(put_trace(f->s, "c", r, 4, NULL), 0);
  const uint32_t miss[3] = {3, 1, 3};
  assert_int_equal(la_store_set_closed(f->s, "c", 4, 0, miss, 3, 111), 0);
  char txt[64];
  raw_text(f->path, "SELECT missing_ranks FROM trace_sets", txt, sizeof txt);
  assert_string_equal(txt, "1,3");
  assert_int_equal(raw_int(f->path, "SELECT n_missing FROM trace_sets"), 2);
  assert_int_equal(raw_int(f->path, "SELECT nprocs FROM trace_sets"), 8);
  assert_int_equal(raw_int(f->path, "SELECT n_ranks_present FROM trace_sets"),
                   6);
  assert_int_equal(raw_int(f->path, "SELECT t_closed_ns FROM trace_sets"), 111);
  /* closing again overwrites */
  assert_int_equal(la_store_set_closed(f->s, "c", 4, 1, NULL, 0, 222), 0);
  raw_text(f->path, "SELECT missing_ranks FROM trace_sets", txt, sizeof txt);
  assert_string_equal(txt, "");
  assert_int_equal(raw_int(f->path, "SELECT complete FROM trace_sets"), 1);
  assert_int_equal(raw_int(f->path, "SELECT t_closed_ns FROM trace_sets"), 222);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM trace_sets"), 1);
  /* a set with no trace at all, of an unknown app */
  assert_int_equal(la_store_set_closed(f->s, "new", 9, 0, miss, 1, 1), 0);
  assert_int_equal(
      raw_int(f->path,
              "SELECT n_ranks_present FROM trace_sets WHERE app_id = 'new'"),
      0);
  assert_int_equal(la_store_set_closed(f->s, NULL, 9, 0, NULL, 0, 1),
                   LA_EINVAL);
  assert_int_equal(la_store_set_closed(f->s, "c", 9, 0, NULL, 2, 1), LA_EINVAL);
}

/* ---------------------------------------------------- restart, queries */

static void test_open_sets_restart(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 4; r++)
    assert_int_equal(put_rank_start(f->s, "A", r, 4, 10), 0);
  assert_int_equal(put_rank_start(f->s, "B", 0, 2, 10), 0);
  assert_int_equal(la_store_begin(f->s), 0);
  for (uint64_t c = 1; c <= 3; c++)
    for (uint32_t r = 0; r < 4; r++)
      if (!(c == 3 && (r == 1 || r == 2)))
        assert_int_equal(put_trace(f->s, "A", r, c, NULL), 0);
  assert_int_equal(put_trace(f->s, "B", 1, 7, NULL), 0);
  assert_int_equal(la_store_set_closed(f->s, "A", 2, 1, NULL, 0, 9), 0);
  assert_int_equal(la_store_commit(f->s), 0);
  /* a batch in progress when the GlobalAgent dies is not there */
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(put_trace(f->s, "B", 0, 8, NULL), 0);
  reopen(f); /* la_store_close rolls the open batch back */
  la_store_open_set_t *os;
  size_t n;
  assert_int_equal(la_store_open_sets(f->s, &os, &n), 0);
  assert_int_equal(n, 3);
  assert_string_equal(os[0].app_id, "A");
  assert_int_equal(os[0].cycle_tag, 1);
  assert_int_equal(os[0].nprocs, 4);
  assert_int_equal(os[0].n_ranks, 4);
  for (uint32_t r = 0; r < 4; r++) assert_int_equal(os[0].ranks[r], r);
  assert_true(os[0].t_first_ns > 1600000000000000000ull);
  assert_string_equal(os[1].app_id, "A");
  assert_int_equal(os[1].cycle_tag, 3);
  assert_int_equal(os[1].n_ranks, 2);
  assert_int_equal(os[1].ranks[0], 0);
  assert_int_equal(os[1].ranks[1], 3);
  assert_string_equal(os[2].app_id, "B");
  assert_int_equal(os[2].cycle_tag, 7);
  assert_int_equal(os[2].nprocs, 2);
  assert_int_equal(os[2].n_ranks, 1);
  assert_int_equal(os[2].ranks[0], 1);
  la_store_free_open_sets(os, n);
  /* closing them empties the list */
  assert_int_equal(la_store_set_closed(f->s, "A", 1, 1, NULL, 0, 9), 0);
  const uint32_t m[2] = {1, 2};
  assert_int_equal(la_store_set_closed(f->s, "A", 3, 0, m, 2, 9), 0);
  assert_int_equal(la_store_set_closed(f->s, "B", 7, 0, m, 1, 9), 0);
  assert_int_equal(la_store_open_sets(f->s, &os, &n), 0);
  assert_int_equal(n, 0);
  assert_null(os);
  la_store_free_open_sets(os, n);
}

static void test_queries(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 2; r++)
    assert_int_equal(put_rank_start(f->s, "q", r, 2, 10), 0);
  const uint64_t big = (1ull << 63) + 5, bigger = UINT64_MAX - 1;
  const uint64_t tags[6] = {10, 20, 30, 40, big, bigger};
  for (int i = 0; i < 6; i++) {
    assert_int_equal(put_trace(f->s, "q", 0, tags[i], NULL), 0);
    if (i != 2) assert_int_equal(put_trace(f->s, "q", 1, tags[i], NULL), 0);
  }
  const uint32_t miss = 1;
  assert_int_equal(la_store_set_closed(f->s, "q", 10, 1, NULL, 0, 1), 0);
  assert_int_equal(la_store_set_closed(f->s, "q", 20, 1, NULL, 0, 2), 0);
  assert_int_equal(la_store_set_closed(f->s, "q", 30, 0, &miss, 1, 3), 0);
  assert_int_equal(la_store_set_closed(f->s, "q", big, 1, NULL, 0, 4), 0);
  la_store_cycle_t *cy;
  size_t n;
  assert_int_equal(la_store_cycles(f->s, "q", 0, UINT64_MAX, &cy, &n), 0);
  assert_int_equal(n, 6);
  for (int i = 0; i < 6; i++) assert_int_equal(cy[i].cycle_tag, tags[i]);
  assert_true(cy[0].closed && cy[0].complete);
  assert_int_equal(cy[0].ranks_present, 2);
  assert_true(cy[2].closed && !cy[2].complete);
  assert_int_equal(cy[2].ranks_present, 1);
  assert_int_equal(cy[2].n_missing, 1);
  assert_true(!cy[3].closed && !cy[3].complete);
  assert_int_equal(cy[3].n_missing, 0);
  free(cy);
  assert_int_equal(la_store_cycles(f->s, "q", 15, 35, &cy, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(cy[0].cycle_tag, 20);
  assert_int_equal(cy[1].cycle_tag, 30);
  free(cy);
  assert_int_equal(la_store_cycles(f->s, "q", 35, big, &cy, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(cy[0].cycle_tag, 40);
  assert_int_equal(cy[1].cycle_tag, big);
  free(cy);
  assert_int_equal(la_store_cycles(f->s, "q", big + 1, UINT64_MAX, &cy, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(cy[0].cycle_tag, bigger);
  free(cy);
  assert_int_equal(la_store_cycles(f->s, "q", 50, 40, &cy, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(la_store_cycles(f->s, "none", 0, 100, &cy, &n), 0);
  assert_int_equal(n, 0);
  /* an open cycle awaiting ranks */
  assert_int_equal(put_trace(f->s, "q", 0, 50, NULL), 0);
  assert_int_equal(la_store_cycles(f->s, "q", 50, 50, &cy, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(cy[0].n_missing, 1);
  free(cy);
  uint64_t t;
  assert_int_equal(la_store_latest_cycle(f->s, "q", LA_STORE_LATEST_ANY, &t),
                   0);
  assert_int_equal(t, bigger);
  assert_int_equal(
      la_store_latest_cycle(f->s, "q", LA_STORE_LATEST_COMPLETE, &t), 0);
  assert_int_equal(t, big);
  assert_int_equal(la_store_set_closed(f->s, "q", big, 0, &miss, 1, 4), 0);
  assert_int_equal(
      la_store_latest_cycle(f->s, "q", LA_STORE_LATEST_COMPLETE, &t), 0);
  assert_int_equal(t, 20);
  assert_int_equal(la_store_latest_cycle(f->s, "q", LA_STORE_LATEST_CLOSED, &t),
                   0);
  assert_int_equal(t, big);
  assert_int_equal(la_store_latest_cycle(f->s, "none", 0, &t), LA_ENOTFOUND);
  assert_int_equal(la_store_latest_cycle(f->s, "q", 3, &t), LA_EINVAL);
  /* apps summary */
  la_store_app_t *apps;
  assert_int_equal(la_store_apps(f->s, &apps, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(apps[0].cycles, 7);
  assert_int_equal(apps[0].sets_complete, 2);
  assert_int_equal(apps[0].sets_partial, 2);
  assert_int_equal(apps[0].ranks_started, 2);
  assert_int_equal(apps[0].ranks_ended, 0);
  assert_true(apps[0].t_last_ns > 1600000000000000000ull);
  free(apps);
  /* the set of a tag >= 2^63 loads with its tag */
  La__TraceSet *set;
  assert_int_equal(la_store_load_set(f->s, "q", bigger, &set), 0);
  assert_int_equal(set->cycle_tag, bigger);
  assert_int_equal(set->traces[1]->cycle_tag, bigger);
  la_store_free_set(set);
}

static void test_agent_seq(void **state) {
  fx_t *f = *state;
  uint64_t next = 0;
  assert_int_equal(la_store_agent_next_seq(f->s, "n1", &next), 0);
  assert_int_equal(next, 1);
  assert_int_equal(la_store_agent_seq_update(f->s, "n1", 5), 0);
  assert_int_equal(la_store_agent_seq_update(f->s, "n1", 3), 0); /* lower */
  assert_int_equal(la_store_agent_seq_update(f->s, "n2", 1000), 0);
  assert_int_equal(la_store_agent_next_seq(f->s, "n1", &next), 0);
  assert_int_equal(next, 6);
  reopen(f);
  assert_int_equal(la_store_agent_next_seq(f->s, "n1", &next), 0);
  assert_int_equal(next, 6);
  assert_int_equal(la_store_agent_next_seq(f->s, "n2", &next), 0);
  assert_int_equal(next, 1001);
  assert_int_equal(la_store_agent_next_seq(f->s, "n3", &next), 0);
  assert_int_equal(next, 1);
  assert_int_equal(la_store_agent_seq_update(f->s, "", 5), LA_EINVAL);
  assert_int_equal(la_store_agent_next_seq(f->s, NULL, &next), LA_EINVAL);
}

/* ------------------------------------------------ robust weights -- */

/* A trace carrying robust weights and interference figures, and ranks
 * reporting their timer resolution and detection status, come back from
 * la_store_load_set exactly as stored; ranks and traces without them come
 * back without them. */
/* Robust references (docs/history.md): a trace whose robust weights alone
 * refer to an earlier cycle keeps its own segments; once out of the
 * history.full_cycles window its robust segments are the representative's
 * (its statistics its own), before that its own; a robust reference to a
 * cycle whose robust weights are themselves one is refused. */
static void test_robust_history(void **state) {
  fx_t *f = *state;
  assert_int_equal(put_rank_start(f->s, "rh", 0, 1, 100), 0);
  la_store_set_history(f->s, 1);
  tr_t x[5];
  uint8_t rseg[5][48];
  La__SeriesStats rst[5];
  La__FitError rer = LA__FIT_ERROR__INIT;
  rer.max_abs = 3;
  rer.rmse = 1.5;
  rer.cv = 0.04;
  for (uint64_t c = 1; c <= 4; c++) {
    mk_trace(&x[c], "rh", 0, c, 100, 40, (uint8_t)(10 * c));
    x[c].t.rank_seq = c;
    for (size_t i = 0; i < sizeof rseg[c]; i++)
      rseg[c][i] = (uint8_t)(100 + 3 * c + i);
    la__series_stats__init(&rst[c]);
    rst[c].count = 100;
    rst[c].sum = 500.0 + (double)c;
    rst[c].min = 1;
    rst[c].max = 9;
    x[c].t.has_robust_segments = 1;
    x[c].t.robust_segments.data = rseg[c];
    x[c].t.robust_segments.len = sizeof rseg[c];
    x[c].t.robust_stats = &rst[c];
    if (c > 1) {
      x[c].t.has_robust_ref = 1;
      x[c].t.robust_ref = 1;
      x[c].t.robust_ref_error = &rer;
    }
    assert_int_equal(la_store_trace(f->s, &x[c].t, NULL), 0);
  }
  /* to a cycle whose robust weights are a reference: refused */
  tr_t bad;
  mk_trace(&bad, "rh", 0, 5, 100, 40, 77);
  bad.t.rank_seq = 5;
  bad.t.has_robust_segments = 1;
  bad.t.robust_segments.data = rseg[1];
  bad.t.robust_segments.len = sizeof rseg[1];
  bad.t.robust_stats = &rst[1];
  bad.t.has_robust_ref = 1;
  bad.t.robust_ref = 2;
  assert_int_equal(la_store_trace(f->s, &bad.t, NULL), LA_EPROTO);
  assert_non_null(strstr(la_store_errmsg(f->s), "itself stored as a reference"));
  reopen(f);
  /* window 1 (rank_seq 4 newest): cycles 2 and 3 demoted, 4 still full */
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM history_robust"
                                    " WHERE in_full = 0"),
                   2);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM history"), 0);
  for (uint64_t c = 1; c <= 4; c++) {
    La__TraceSet *set = NULL;
    assert_int_equal(la_store_load_set(f->s, "rh", c, &set), 0);
    assert_int_equal(set->n_traces, 1);
    const La__CompactTrace *t = set->traces[0];
    /* the measured series its own, always */
    assert_int_equal(t->segments.len, 40);
    assert_memory_equal(t->segments.data, x[c].seg, 40);
    assert_true(t->stats->sum == x[c].st.sum);
    /* the robust series the representative's once demoted; its own
     * statistics */
    uint64_t from = c == 2 || c == 3 ? 1 : c;
    assert_true(t->has_robust_segments);
    assert_int_equal(t->robust_segments.len, sizeof rseg[from]);
    assert_memory_equal(t->robust_segments.data, rseg[from],
                        sizeof rseg[from]);
    assert_true(t->robust_stats->sum == rst[c].sum);
    la_store_free_set(set);
  }
}

/* Robust references with exceptions (docs/history.md): once demoted, a
 * cycle's robust weights are the representative's with its own values at
 * its exceptions (history_exceptions), exact, encoded losslessly; its
 * statistics its own; before that its own encoding. Exceptions outside the
 * trace are refused. */
static void test_robust_history_exceptions(void **state) {
  fx_t *f = *state;
  enum { NX = 200 };
  assert_int_equal(put_rank_start(f->s, "rx", 0, 1, NX), 0);
  la_store_set_history(f->s, 1);
  double v[NX], d[NX];
  for (int i = 0; i < NX; i++) v[i] = 100.0 + (double)(i % 17);
  la_compact_result_t rep;
  assert_int_equal(la_compact(v, NX, NULL, &rep), 0);
  la_trace_t *tr = NULL;
  assert_int_equal(la_trace_open(rep.bytes, rep.len, &tr, NULL, 0), 0);
  double rv[NX];
  assert_int_equal(la_trace_decode(tr, 0, NX, rv), 0);
  la_trace_close(tr);
  tr_t x[5];
  La__SeriesStats rst[5];
  La__FitError rer = LA__FIT_ERROR__INIT;
  /* cycle 2: elements 3 and 4 its own; 3: 0 and 199; 4: 10, in full */
  uint64_t first[5][2] = {{0}, {0}, {3}, {0, NX - 1}, {10}};
  uint64_t count[5][2] = {{0}, {0}, {2}, {1, 1}, {1}};
  double vals[5][2] = {{0}, {0}, {2000, 2001}, {3000, 3001}, {4000}};
  size_t nr[5] = {0, 0, 1, 2, 1};
  La__HistoryExceptions xc[5];
  for (uint64_t c = 1; c <= 4; c++) {
    mk_trace(&x[c], "rx", 0, c, NX, 40, (uint8_t)(10 * c));
    x[c].t.rank_seq = c;
    la__series_stats__init(&rst[c]);
    rst[c].count = NX;
    rst[c].sum = 20000.0 + (double)c;
    rst[c].min = 1;
    rst[c].max = 4000;
    x[c].t.has_robust_segments = 1;
    x[c].t.robust_segments.data = rep.bytes;
    x[c].t.robust_segments.len = rep.len;
    x[c].t.robust_stats = &rst[c];
    if (c > 1) {
      x[c].t.has_robust_ref = 1;
      x[c].t.robust_ref = 1;
      x[c].t.robust_ref_error = &rer;
      la__history_exceptions__init(&xc[c]);
      xc[c].n_first = xc[c].n_count = nr[c];
      xc[c].first = first[c];
      xc[c].count = count[c];
      xc[c].n_values = c == 2 ? 2 : nr[c];
      xc[c].values = vals[c];
      x[c].t.robust_exceptions = &xc[c];
    }
    assert_int_equal(la_store_trace(f->s, &x[c].t, NULL), 0);
  }
  /* exceptions outside the trace: refused, nothing stored */
  tr_t bad;
  mk_trace(&bad, "rx", 0, 5, NX, 40, 77);
  bad.t.rank_seq = 5;
  bad.t.has_robust_segments = 1;
  bad.t.robust_segments.data = rep.bytes;
  bad.t.robust_segments.len = rep.len;
  bad.t.robust_stats = &rst[1];
  bad.t.has_robust_ref = 1;
  bad.t.robust_ref = 1;
  uint64_t bf = NX, bc = 1;
  double bv = 1;
  La__HistoryExceptions bx;
  la__history_exceptions__init(&bx);
  bx.n_first = bx.n_count = bx.n_values = 1;
  bx.first = &bf;
  bx.count = &bc;
  bx.values = &bv;
  bad.t.robust_exceptions = &bx;
  assert_int_equal(la_store_trace(f->s, &bad.t, NULL), LA_EPROTO);
  assert_non_null(strstr(la_store_errmsg(f->s), "outside the trace"));
  reopen(f);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM history_exceptions"),
                   3);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces WHERE"
                                    " app_id = 'rx'"),
                   4);
  for (uint64_t c = 1; c <= 4; c++) {
    La__TraceSet *set = NULL;
    assert_int_equal(la_store_load_set(f->s, "rx", c, &set), 0);
    const La__CompactTrace *t = set->traces[0];
    assert_memory_equal(t->segments.data, x[c].seg, 40);
    assert_true(t->robust_stats->sum == rst[c].sum);
    if (c == 2 || c == 3) { /* demoted: spliced, losslessly */
      assert_int_equal(la_trace_open(t->robust_segments.data,
                                     t->robust_segments.len, &tr, NULL, 0),
                       0);
      assert_int_equal(la_trace_mode(tr), LA_COMPACT_LOSSLESS);
      assert_int_equal(la_trace_decode(tr, 0, NX, d), 0);
      la_trace_close(tr);
      for (int i = 0; i < NX; i++) {
        double want = rv[i];
        size_t at = 0;
        for (size_t r = 0; r < nr[c]; r++) {
          if ((uint64_t)i >= first[c][r] &&
              (uint64_t)i < first[c][r] + count[c][r])
            want = vals[c][at + (size_t)i - first[c][r]];
          at += count[c][r];
        }
        if (d[i] != want) fail_msg("cycle %llu element %d: %g, not %g",
                                   (unsigned long long)c, i, d[i], want);
      }
    } else { /* in full: its own encoding */
      assert_int_equal(t->robust_segments.len, rep.len);
      assert_memory_equal(t->robust_segments.data, rep.bytes, rep.len);
    }
    la_store_free_set(set);
  }
  la_compact_result_free(&rep);
}

/* Bytes the set's rows take in the SQLite file: the pages of the traces
 * and representatives tables and their indexes, less the room unused in
 * them (dbstat). */
#ifndef TEST_STORE_PG
static long long set_bytes(const char *path) {
  return raw_int(path,
                 "SELECT sum(pgsize - unused) FROM dbstat WHERE name IN"
                 " ('traces', 'sqlite_autoindex_traces_1', 'rep_members',"
                 " 'rep_classes', 'sqlite_autoindex_rep_classes_1')");
}
#endif

/* The 16-slice signature of a trace's segments. */
static void signature(const La__CompactTrace *t, double *sig) {
  double tot;
  uint64_t pts;
  char why[160];
  assert_int_equal(la_clusters_signature_bytes(t->segments.data,
                                               t->segments.len, t->n_elements,
                                               16, sig, &tot, &pts, why,
                                               sizeof why),
                   1); /* a shape */
  assert_int_equal(pts, t->n_elements);
}

/* v at *k as a varint (LEB128), in hex. */
static void hex_varint(char *hex, size_t *k, uint64_t v) {
  do {
    unsigned b = (unsigned)(v & 0x7f) | (v > 0x7f ? 0x80 : 0);
    *k += (size_t)sprintf(hex + *k, "%02x", b);
    v >>= 7;
  } while (v);
}

static void hex_double(char *hex, size_t *k, double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  for (int i = 0; i < 8; i++)
    *k += (size_t)sprintf(hex + *k, "%02x", (unsigned)(b >> (8 * i)) & 0xff);
}

/* The rep_classes BLOB of the n traces t (increasing rank) in format 1
 * (docs/storage.md: what stores before format 2 wrote; each member's min
 * and max as they were), in hex: per member the rank's gap, the flags
 * (sum, min, max, t_xfer_ns when it has one, rank_seq), the three
 * doubles, t_xfer_ns, then zigzag deltas of rank_seq, seq and
 * t_stored_ns (0 here). */
static void pack_v1_hex(const La__CompactTrace *const *t, size_t n,
                        char *hex) {
  size_t k = (size_t)sprintf(hex, "01");
  uint64_t prev = 0, rseq = 0, seq = 0;
  for (size_t i = 0; i < n; i++) {
    hex_varint(hex, &k, i ? t[i]->rank - prev : (uint64_t)t[i]->rank + 1);
    prev = t[i]->rank;
    k += (size_t)sprintf(hex + k, "%02x",
                         1 | 2 | 4 | (t[i]->has_t_xfer_ns ? 8 : 0) | 16);
    hex_double(hex, &k, t[i]->stats->sum);
    hex_double(hex, &k, t[i]->stats->min);
    hex_double(hex, &k, t[i]->stats->max);
    if (t[i]->has_t_xfer_ns) hex_varint(hex, &k, t[i]->t_xfer_ns);
    assert_true(t[i]->has_rank_seq && t[i]->rank_seq >= rseq &&
                t[i]->seq >= seq);
    hex_varint(hex, &k, 2 * (t[i]->rank_seq - rseq));
    hex_varint(hex, &k, 2 * (t[i]->seq - seq));
    hex_varint(hex, &k, 0);
    rseq = t[i]->rank_seq;
    seq = t[i]->seq;
  }
}

/* A BLOB literal of hex in either database's SQL. */
#ifdef TEST_STORE_PG
#define BLOB_LIT "decode('%s', 'hex')"
#else
#define BLOB_LIT "X'%s'"
#endif

/* Member v (read back) of a set stored by representatives against u (as
 * stored): its min and max within bound of its own (store_reps_pack.h:
 * relative to the larger magnitude of those read back). */
static void minmax_within(const La__CompactTrace *u, const La__CompactTrace *v,
                          double bound) {
  double m = fmax(fabs(v->stats->min), fabs(v->stats->max));
  if (fabs(u->stats->min - v->stats->min) > bound * m ||
      fabs(u->stats->max - v->stats->max) > bound * m)
    fail_msg("rank %u: min %.17g max %.17g read as %.17g, %.17g: beyond the "
             "bound %g",
             u->rank, u->stats->min, u->stats->max, v->stats->min,
             v->stats->max, bound);
}

/* A 10^3-rank set of small traces (polyline, tens of bytes each) stored by
 * representatives (store_reps.h): its members, but two with robust
 * weights, leave the traces table for a rep_classes row per class, and
 * the set's rows take at least 7x fewer bytes (SQLite; t_xfer_ns 32 us
 * apart between a class's members: 14 bytes a packed member); read back,
 * every rank is there with the total, count and stamps it was stored
 * with, bit for bit, a packed member's min and max within its class's
 * stated bound of its own (its representative's times its scale), every
 * other rank's bit for bit; a member's values its representative's
 * scaled (signature within the grouping's tolerance of its own, decoded
 * total its exact total), an outlier's or representative's segments its
 * own; its stamp and the set's ranks (shards) see every rank; a resend of
 * a member stores nothing; a later cycle's history reference to a member
 * is kept in full; a class's row rewritten in format 1 (min and max as
 * they were) reads back bit for bit; a damaged rep_classes row is an
 * error naming it. */
static void test_reps_packed_small(void **state) {
  fx_t *f = *state;
  enum { R = 1000, NEL = 1024, OUT = 8 };
  la_compact_params_t cp;
  assert_int_equal(la_compact_spec_parse("polyline", &cp, NULL, 0), 0);
  static la_compact_result_t res[R];
  static double x[NEL];
  for (uint32_t r = 0; r < R; r++) {
    La__RankStart m = la_test_rank_start("pk", "pk", r, R, NEL);
    assert_int_equal(la_store_rank_start(f->s, &m, NULL), 0);
    la_tc_series(r, R, OUT, NEL, x);
    assert_int_equal(la_compact(x, NEL, &cp, &res[r]), 0);
  }
  La__SeriesStats rst = LA__SERIES_STATS__INIT;
  assert_int_equal(la_store_begin(f->s), 0);
  for (uint32_t r = 0; r < R; r++) {
    La__SeriesStats st = LA__SERIES_STATS__INIT;
    La__FitError fe = LA__FIT_ERROR__INIT;
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    la_test_history_trace(&t, &st, &fe, &res[r], "pk", r, 1, NEL, 10 + 3 * r,
                          0);
    t.has_t_xfer_ns = r % 97 != 0; /* a few without */
    t.t_xfer_ns = 1000000 + 7919ull * r;
    if (r == 2 || r == 3) { /* robust weights: kept as rep_members rows */
      rst = st;
      t.has_robust_segments = 1;
      t.robust_segments = t.segments;
      t.robust_stats = &rst;
    }
    assert_int_equal(la_store_trace(f->s, &t, NULL), 0);
  }
  assert_int_equal(la_store_set_closed(f->s, "pk", 1, 1, NULL, 0, 1), 0);
  assert_int_equal(la_store_commit(f->s), 0);
  La__TraceSet *a = NULL, *b = NULL;
  assert_int_equal(la_store_load_set(f->s, "pk", 1, &a), 0);
  assert_int_equal(a->n_traces, R);
#ifndef TEST_STORE_PG
  long long before = set_bytes(f->path);
#endif
  la_store_reps_t o;
  assert_int_equal(la_store_representatives(f->s, "pk", 1, 0.05, &o), 0);
  assert_int_equal(o.classes, LA_TC_CLASSES);
  assert_int_equal(o.outliers, OUT);
  assert_int_equal(o.replaced, R - OUT - LA_TC_CLASSES);
  assert_true(o.packed >= o.replaced - 2 && o.packed < o.replaced);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM rep_classes"),
                   LA_TC_CLASSES);
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"),
                   R - (long long)o.packed);
#ifndef TEST_STORE_PG
  long long after = set_bytes(f->path);
  print_message("set of %d small traces: %lld -> %lld bytes (%.1fx), %.1f "
                "bytes per packed member\n",
                R, before, after, (double)before / (double)after,
                (double)o.packed_bytes / (double)o.packed);
  assert_true(before >= 7 * after);
#endif
  print_message("min and max of packed members within %.3g\n",
                o.minmax_bound);
  assert_true(o.minmax_bound > 0 && o.minmax_bound < 1);
  /* done once: a second call changes nothing */
  la_store_reps_t o2;
  assert_int_equal(la_store_representatives(f->s, "pk", 1, 0.05, &o2), 0);
  assert_int_equal(o2.replaced, 0);
  reopen(f);
  assert_int_equal(la_store_load_set(f->s, "pk", 1, &b), 0);
  assert_int_equal(b->n_traces, R);
  assert_int_equal(b->complete, 1);
  size_t rebuilt = 0;
  for (uint32_t r = 0; r < R; r++) {
    const La__CompactTrace *u = a->traces[r], *v = b->traces[r];
    assert_int_equal(v->rank, r);
    assert_int_equal(v->n_elements, NEL);
    assert_int_equal(u->stats->count, v->stats->count);
    assert_memory_equal(&u->stats->sum, &v->stats->sum, sizeof(double));
    if (v->has_rep_rank && r != 2 && r != 3) { /* packed */
      minmax_within(u, v, o.minmax_bound);
    } else {
      assert_memory_equal(&u->stats->min, &v->stats->min, sizeof(double));
      assert_memory_equal(&u->stats->max, &v->stats->max, sizeof(double));
    }
    assert_int_equal(u->seq, v->seq);
    assert_int_equal(u->has_t_xfer_ns, v->has_t_xfer_ns);
    assert_int_equal(u->t_xfer_ns, v->t_xfer_ns);
    assert_int_equal(u->has_rank_seq, v->has_rank_seq);
    assert_int_equal(u->rank_seq, v->rank_seq);
    la_store_stamp_t sv;
    assert_int_equal(la_store_trace_stamp(f->s, "pk", 1, r, &sv), 0);
    assert_int_equal(sv.seq, u->seq);
    assert_int_equal(sv.has_t_xfer_ns, u->has_t_xfer_ns);
    if (u->has_t_xfer_ns) assert_int_equal(sv.t_xfer_ns, u->t_xfer_ns);
    assert_int_equal(sv.count, u->stats->count);
    assert_memory_equal(&sv.sum, &u->stats->sum, sizeof sv.sum);
    if (!v->has_rep_rank) {
      assert_int_equal(u->segments.len, v->segments.len);
      assert_memory_equal(u->segments.data, v->segments.data,
                          u->segments.len);
      continue;
    }
    rebuilt++;
    assert_int_equal(la_tc_class(v->rep_rank, R, OUT), la_tc_class(r, R, OUT));
    double su16[16], sv16[16], d = 0;
    signature(u, su16);
    signature(v, sv16);
    for (int k = 0; k < 16; k++) d += fabs(su16[k] - sv16[k]);
    assert_true(d <= 0.05 + 1e-12);
    la_trace_t *tr = NULL;
    double sum;
    assert_int_equal(la_trace_open(v->segments.data, v->segments.len, &tr,
                                   NULL, 0),
                     0);
    assert_int_equal(la_trace_range_sum(tr, 0, NEL, &sum), 0);
    la_trace_close(tr);
    assert_true(fabs(sum - v->stats->sum) <= 1e-9 * fabs(v->stats->sum));
  }
  assert_int_equal(rebuilt, o.replaced);
  uint32_t *ranks = NULL;
  size_t n = 0;
  assert_int_equal(la_store_set_ranks(f->s, "pk", 1, R, &ranks, &n), 0);
  assert_int_equal(n, R);
  for (uint32_t r = 0; r < R; r++) assert_int_equal(ranks[r], r);
  free(ranks);
  /* a copy of a member's trace (a resend), or of a representative's,
   * stores nothing: the set reads back the same */
  for (uint32_t r = 0; r < R; r++) {
    if (r != b->traces[0]->rep_rank && r != 1 && r != 7) continue;
    La__SeriesStats st = LA__SERIES_STATS__INIT;
    La__FitError fe = LA__FIT_ERROR__INIT;
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    la_test_history_trace(&t, &st, &fe, &res[r], "pk", r, 1, NEL, 10 + 3 * r,
                          0);
    int was_new = -1;
    assert_int_equal(la_store_trace(f->s, &t, &was_new), 0);
    assert_int_equal(was_new, 0);
  }
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces"),
                   R - (long long)o.packed);
  /* a later cycle naming a packed member's as its history reference:
   * stored in full, without a history row, not refused */
  {
    uint32_t r = b->traces[1]->has_rep_rank ? 1 : 7;
    La__SeriesStats st = LA__SERIES_STATS__INIT;
    La__FitError fe = LA__FIT_ERROR__INIT;
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    la_test_history_trace(&t, &st, &fe, &res[r], "pk", r, 2, NEL, 5000, 1);
    int was_new = -1;
    assert_int_equal(la_store_trace(f->s, &t, &was_new), 0);
    assert_int_equal(was_new, 1);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM history"), 0);
    assert_int_equal(raw_int(f->path, "SELECT count(*) FROM traces WHERE"
                                      " cycle_tag = 2 AND length(segments) > 0"),
                     1);
  }
  /* closed again: every rank still counted present */
  assert_int_equal(la_store_set_closed(f->s, "pk", 1, 1, NULL, 0, 2), 0);
  assert_int_equal(raw_int(f->path, "SELECT n_ranks_present FROM trace_sets"
                                    " WHERE app_id = 'pk' AND cycle_tag = 1"),
                   R);
  /* class 0's row as a store before format 2 wrote it: its members' min
   * and max read back as they were */
  static const La__CompactTrace *v1[R];
  size_t n1 = 0;
  for (uint32_t r = 0; r < R; r++)
    if (b->traces[r]->has_rep_rank && b->traces[r]->rep_class == 0 &&
        r != 2 && r != 3)
      v1[n1++] = a->traces[r];
  assert_true(n1 > 100);
  static char hex[2 * R * 48], sql[sizeof hex + 200];
  pack_v1_hex(v1, n1, hex);
  snprintf(sql, sizeof sql,
           "UPDATE rep_classes SET members = " BLOB_LIT " WHERE class = 0",
           hex);
  raw_exec(f->path, sql);
  reopen(f);
  La__TraceSet *c = NULL;
  assert_int_equal(la_store_load_set(f->s, "pk", 1, &c), 0);
  assert_int_equal(c->n_traces, R);
  for (size_t i = 0; i < n1; i++) {
    const La__CompactTrace *u = v1[i], *v = c->traces[u->rank];
    assert_int_equal(v->rank, u->rank);
    assert_true(v->has_rep_rank && v->rep_class == 0);
    assert_memory_equal(&u->stats->sum, &v->stats->sum, sizeof(double));
    assert_memory_equal(&u->stats->min, &v->stats->min, sizeof(double));
    assert_memory_equal(&u->stats->max, &v->stats->max, sizeof(double));
    assert_int_equal(u->has_t_xfer_ns, v->has_t_xfer_ns);
    assert_int_equal(u->t_xfer_ns, v->t_xfer_ns);
    assert_int_equal(u->seq, v->seq);
  }
  la_store_free_set(c);
  c = NULL;
  la_store_free_set(a);
  la_store_free_set(b);
  /* a damaged rep_classes row: an error naming it, no set */
  raw_exec(f->path, "UPDATE rep_classes SET members = substr(members, 1, 11)"
                    " WHERE class = 1");
  assert_int_equal(la_store_load_set(f->s, "pk", 1, &c), LA_EIO);
  assert_null(c);
  assert_non_null(strstr(la_store_errmsg(f->s), "bad rep_classes row"));
  assert_non_null(strstr(la_store_errmsg(f->s), "pk cycle 1 rank"));
  for (uint32_t r = 0; r < R; r++) la_compact_result_free(&res[r]);
}

static void test_robust_round_trip(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 3; r++) {
    La__RankStart m = rank_start("rb", r, 3, 100);
    if (r == 0) {
      m.has_timer_res_ns = 1;
      m.timer_res_ns = 12.5;
      m.interference = "on";
    } else if (r == 1) {
      m.interference = "off (perf_event_paranoid=3)";
    }
    assert_int_equal(la_store_rank_start(f->s, &m, NULL), 0);
  }
  tr_t x, y;
  uint8_t rseg[64];
  for (size_t i = 0; i < sizeof rseg; i++) rseg[i] = (uint8_t)(200 - i);
  La__SeriesStats rst = LA__SERIES_STATS__INIT;
  mk_trace(&x, "rb", 0, 7, 100, 40, 1);
  x.t.has_robust_segments = 1;
  x.t.robust_segments.data = rseg;
  x.t.robust_segments.len = sizeof rseg;
  rst.count = 100;
  rst.sum = 900.25;
  rst.min = 0.5;
  rst.max = 44;
  x.t.robust_stats = &rst;
  x.t.has_interference = 1;
  x.t.interference = 100.75;
  x.t.has_flagged = 1;
  x.t.flagged = 9;
  x.t.has_flagged_time = 1;
  x.t.flagged_time = 130.5;
  int was_new = 0;
  assert_int_equal(la_store_trace(f->s, &x.t, &was_new), 0);
  assert_int_equal(was_new, 1);
  /* a resend with other robust figures changes nothing */
  x.t.interference = 1;
  x.t.flagged = 1;
  assert_int_equal(la_store_trace(f->s, &x.t, &was_new), 0);
  assert_int_equal(was_new, 0);
  /* rank 1: interference figures only (no robust weights); rank 2: none */
  mk_trace(&y, "rb", 1, 7, 100, 40, 2);
  y.t.has_flagged = 1;
  y.t.flagged = 0;
  y.t.has_interference = 1;
  y.t.interference = 0;
  assert_int_equal(la_store_trace(f->s, &y.t, NULL), 0);
  assert_int_equal(put_trace(f->s, "rb", 2, 7, NULL), 0);
  reopen(f);

  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(f->s, "rb", 7, &set), 0);
  char why[200];
  assert_int_equal(
      la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, why, sizeof why),
      0);
  assert_int_equal(set->n_traces, 3);
  const La__CompactTrace *a = set->traces[0], *b = set->traces[1],
                         *c = set->traces[2];
  assert_true(a->has_robust_segments);
  assert_int_equal(a->robust_segments.len, sizeof rseg);
  assert_memory_equal(a->robust_segments.data, rseg, sizeof rseg);
  assert_non_null(a->robust_stats);
  assert_int_equal(a->robust_stats->count, 100);
  assert_true(a->robust_stats->sum == 900.25);
  assert_true(a->robust_stats->min == 0.5);
  assert_true(a->robust_stats->max == 44);
  assert_true(a->has_interference && a->interference == 100.75);
  assert_true(a->has_flagged && a->flagged == 9);
  assert_true(a->has_flagged_time && a->flagged_time == 130.5);
  /* the measured side is untouched */
  assert_int_equal(a->segments.len, 40);
  assert_memory_equal(a->segments.data, x.seg, 40);
  assert_true(a->stats->sum == x.st.sum);
  assert_false(b->has_robust_segments);
  assert_null(b->robust_stats);
  assert_true(b->has_interference && b->interference == 0);
  assert_true(b->has_flagged && b->flagged == 0);
  assert_false(b->has_flagged_time);
  assert_false(c->has_robust_segments || c->has_interference ||
               c->has_flagged || c->has_flagged_time);
  assert_null(c->robust_stats);
  assert_int_equal(set->n_timer_res_ns, 3);
  assert_int_equal(set->n_detection, 3);
  assert_true(set->timer_res_ns[0] == 12.5);
  assert_true(set->timer_res_ns[1] == 0);
  assert_true(set->timer_res_ns[2] == 0);
  assert_string_equal(set->detection[0], "on");
  assert_string_equal(set->detection[1], "off (perf_event_paranoid=3)");
  assert_string_equal(set->detection[2], "");
  la_store_free_set(set);

  /* an application whose ranks report none of it has empty lists */
  assert_int_equal(put_rank_start(f->s, "plain", 0, 1, 100), 0);
  assert_int_equal(put_trace(f->s, "plain", 0, 1, NULL), 0);
  assert_int_equal(la_store_load_set(f->s, "plain", 1, &set), 0);
  assert_int_equal(set->n_timer_res_ns, 0);
  assert_int_equal(set->n_detection, 0);
  assert_null(set->traces[0]->robust_stats);
  la_store_free_set(set);

  /* robust rows that do not fit their trace are corruption, not a crash */
  raw_exec(f->path, "UPDATE robust SET stat_count = 99 WHERE rank = 0");
  assert_int_equal(la_store_load_set(f->s, "rb", 7, &set), LA_EIO);
  assert_null(set);
  assert_non_null(strstr(la_store_errmsg(f->s), "robust weights"));
  raw_exec(f->path,
           "UPDATE robust SET stat_count = 100, interference = -1"
           " WHERE rank = 0");
  assert_int_equal(la_store_load_set(f->s, "rb", 7, &set), LA_EIO);
  assert_non_null(strstr(la_store_errmsg(f->s), "interference"));
  raw_exec(f->path,
           "UPDATE robust SET interference = 1 WHERE rank = 0;"
           "UPDATE rank_fidelity SET timer_res_ns = -3");
  assert_int_equal(la_store_load_set(f->s, "rb", 7, &set), LA_EIO);
  assert_non_null(strstr(la_store_errmsg(f->s), "timer_res_ns"));
}

/* la_store_refused_each's callback: appends "app/host/rank/uid;". */
static int refused_row(void *arg, const char *app_id, const char *host,
                       uint32_t rank, uint32_t uid) {
  char *buf = arg;
  size_t n = strlen(buf);
  snprintf(buf + n, 256 - n, "%s/%s/%u/%u;", app_id, host, rank, uid);
  return 0;
}

/* la_store_refused_trim / _expire's callback: appends "app/host/rank;". */
static void forgot_row(void *arg, const char *app_id, const char *host,
                       uint32_t rank) {
  char *buf = arg;
  size_t n = strlen(buf);
  snprintf(buf + n, 256 - n, "%s/%s/%u;", app_id, host, rank);
}

/* Application id owners: the first binding stays, across a reopen; refused
 * ranks are recorded once per (app, host, rank), listed in key order,
 * updated and deleted, read one key at a time, pruned beyond a cap per
 * LocalAgent (the oldest first) and by age. */
static void test_app_owners(void **state) {
  fx_t *f = *state;
  uint32_t uid = 7;
  assert_int_equal(la_store_app_owner(f->s, "own", &uid), LA_ENOTFOUND);
  assert_int_equal(uid, 7);
  assert_int_equal(put_rank_start(f->s, "own", 0, 2, 10), 0);
  assert_int_equal(la_store_app_bind(f->s, "own", 40101, "node-a"), 0);
  assert_int_equal(la_store_app_bind(f->s, "own", 40102, "node-b"), 0);
  assert_int_equal(la_store_app_bind(f->s, "own", UINT32_MAX, "x"), LA_EINVAL);
  assert_int_equal(la_store_app_owner(f->s, "own", &uid), 0);
  assert_int_equal(uid, 40101);
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(
      la_store_rank_refuse(f->s, "own", "node-b", 1, 40102, 40101, 5), 0);
  assert_int_equal(
      la_store_rank_refuse(f->s, "own", "node-b", 1, 40103, 40101, 9), 0);
  assert_int_equal(
      la_store_rank_refuse(f->s, "own", "node-a", 3, 40104, 40101, 6), 0);
  assert_int_equal(la_store_commit(f->s), 0);
  reopen(f);
  assert_int_equal(la_store_app_owner(f->s, "own", &uid), 0);
  assert_int_equal(uid, 40101);
  char rows[256] = "";
  assert_int_equal(la_store_refused_each(f->s, refused_row, rows), 0);
  assert_string_equal(rows, "own/node-a/3/40104;own/node-b/1/40103;");
  assert_int_equal(la_store_rank_unrefuse(f->s, "own", "node-b", 1), 0);
  assert_int_equal(la_store_rank_unrefuse(f->s, "own", "node-b", 2), 0);
  rows[0] = 0;
  assert_int_equal(la_store_refused_each(f->s, refused_row, rows), 0);
  assert_string_equal(rows, "own/node-a/3/40104;");
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM app_owners"), 1);

  /* one key read back */
  assert_int_equal(la_store_rank_refused(f->s, "own", "node-a", 3, &uid), 0);
  assert_int_equal(uid, 40104);
  assert_int_equal(la_store_rank_refused(f->s, "own", "node-a", 4, &uid),
                   LA_ENOTFOUND);
  /* a LocalAgent's oldest beyond a cap go, then all older than a time; a
   * RankStart that said no uid (UINT32_MAX) is a row like the others */
  for (uint32_t r = 1; r <= 5; r++)
    assert_int_equal(la_store_rank_refuse(f->s, "own", "node-c", r,
                                          r == 5 ? UINT32_MAX : 40105, 40101,
                                          r),
                     0);
  char gone[256] = "";
  uint64_t n = 99;
  assert_int_equal(
      la_store_refused_trim(f->s, "node-c", 2, forgot_row, gone, &n), 0);
  assert_int_equal(n, 3);
  assert_string_equal(gone, "own/node-c/1;own/node-c/2;own/node-c/3;");
  rows[0] = 0;
  assert_int_equal(la_store_refused_each(f->s, refused_row, rows), 0);
  assert_string_equal(rows,
                      "own/node-a/3/40104;own/node-c/4/40105;"
                      "own/node-c/5/4294967295;");
  assert_int_equal(la_store_rank_refused(f->s, "own", "node-c", 5, &uid), 0);
  assert_int_equal(uid, UINT32_MAX);
  assert_int_equal(
      la_store_refused_trim(f->s, "node-c", 2, forgot_row, gone, &n), 0);
  assert_int_equal(n, 0);
  assert_int_equal(la_store_refused_expire(f->s, 1, NULL, NULL, &n), 0);
  assert_int_equal(n, 0); /* nothing recorded before 1970 */
  gone[0] = 0;
  assert_int_equal(la_store_refused_expire(f->s, UINT64_MAX / 2, forgot_row,
                                           gone, &n),
                   0);
  assert_int_equal(n, 3);
  rows[0] = 0;
  assert_int_equal(la_store_refused_each(f->s, refused_row, rows), 0);
  assert_string_equal(rows, "");
}


/* An older store: application "old", 2 ranks of 100 elements with a trace
 * of cycle 3 each, written, closed, then without the tables drop drops. */
static void old_store(fx_t *f, const char *drop) {
  for (uint32_t r = 0; r < 2; r++) {
    assert_int_equal(put_rank_start(f->s, "old", r, 2, 100), 0);
    assert_int_equal(put_trace(f->s, "old", r, 3, NULL), 0);
  }
  la_store_close(f->s);
  f->s = NULL;
  raw_exec(f->path, drop);
}

/* A store written before the robust and rank_fidelity tables existed opens,
 * reads as before, gains the tables, and then stores robust weights. */
static void test_store_without_robust_tables(void **state) {
  fx_t *f = *state;
  old_store(f, "DROP TABLE robust; DROP TABLE rank_fidelity;");
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM sqlite_master WHERE name IN"
                           " ('robust', 'rank_fidelity')"),
                   0);
  reopen(f);
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM sqlite_master WHERE name IN"
                           " ('robust', 'rank_fidelity')"),
                   2);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(f->s, "old", 3, &set), 0);
  assert_int_equal(set->n_traces, 2);
  assert_true(set->complete);
  assert_null(set->traces[0]->robust_stats);
  assert_int_equal(set->n_timer_res_ns, 0);
  la_store_free_set(set);
  tr_t x;
  La__SeriesStats rst = LA__SERIES_STATS__INIT;
  mk_trace(&x, "old", 0, 4, 100, 40, 9);
  x.t.has_robust_segments = 1;
  x.t.robust_segments = x.t.segments;
  rst.count = 100;
  rst.sum = 5;
  x.t.robust_stats = &rst;
  assert_int_equal(la_store_trace(f->s, &x.t, NULL), 0);
  assert_int_equal(la_store_load_set(f->s, "old", 4, &set), 0);
  assert_non_null(set->traces[0]->robust_stats);
  assert_true(set->traces[0]->robust_stats->sum == 5);
  la_store_free_set(set);
}

/* A store written before the owners' tables existed opens, gains them
 * (empty: nothing bound), and then binds. */
static void test_store_without_owner_tables(void **state) {
  fx_t *f = *state;
  old_store(f, "DROP TABLE app_owners; DROP TABLE refused_ranks;");
  reopen(f);
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM sqlite_master WHERE name IN"
                           " ('app_owners', 'refused_ranks')"),
                   2);
  uint32_t uid = 0;
  assert_int_equal(la_store_app_owner(f->s, "old", &uid), LA_ENOTFOUND);
  assert_int_equal(la_store_app_bind(f->s, "old", 40101, "node-a"), 0);
  assert_int_equal(la_store_app_owner(f->s, "old", &uid), 0);
  assert_int_equal(uid, 40101);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(f->s, "old", 3, &set), 0);
  assert_int_equal(set->n_traces, 2);
  la_store_free_set(set);
}

/* The tables with a row and a blob per trace are rowid tables in a new
 * store (rows appended as they arrive, the key in a unique index); a store
 * made when robust and channel_traces were clustered on their key (WITHOUT
 * ROWID) keeps them, and stores, reads and deduplicates robust weights the
 * same way. */
static void test_per_trace_tables_layout(void **state) {
  fx_t *f = *state;
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM sqlite_master WHERE name IN"
                           " ('traces', 'robust', 'channel_traces')"
                           " AND sql NOT LIKE '%WITHOUT ROWID%'"),
                   3);
  old_store(f,
            "DROP TABLE robust;"
            "CREATE TABLE robust (app_id TEXT NOT NULL REFERENCES apps(app_id),"
            " cycle_tag INTEGER NOT NULL, rank INTEGER NOT NULL,"
            " segments BLOB, stat_count INTEGER, stat_sum REAL,"
            " stat_min REAL, stat_max REAL, interference REAL,"
            " flagged INTEGER, flagged_time REAL,"
            " PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;");
  reopen(f);
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM sqlite_master WHERE"
                           " name = 'robust' AND sql LIKE '%WITHOUT ROWID%'"),
                   1);
  tr_t x;
  La__SeriesStats rst = LA__SERIES_STATS__INIT;
  for (uint32_t r = 0; r < 2; r++) {
    mk_trace(&x, "old", r, 4, 100, 40, (uint8_t)(9 + r));
    x.t.has_robust_segments = 1;
    x.t.robust_segments = x.t.segments;
    rst.count = 100;
    rst.sum = 5 + r;
    x.t.robust_stats = &rst;
    x.t.has_interference = 1;
    x.t.interference = 2;
    int was_new = 0;
    assert_int_equal(la_store_trace(f->s, &x.t, &was_new), 0);
    assert_int_equal(was_new, 1);
    rst.sum = 99; /* a resend changes nothing */
    assert_int_equal(la_store_trace(f->s, &x.t, &was_new), 0);
    assert_int_equal(was_new, 0);
  }
  assert_int_equal(raw_int(f->path, "SELECT count(*) FROM robust"), 2);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(f->s, "old", 4, &set), 0);
  assert_int_equal(set->n_traces, 2);
  for (uint32_t r = 0; r < 2; r++) {
    assert_non_null(set->traces[r]->robust_stats);
    assert_true(set->traces[r]->robust_stats->sum == 5 + r);
    assert_true(set->traces[r]->interference == 2);
  }
  la_store_free_set(set);
}

/* A store written before the element_ids and rank_grid tables existed
 * opens, reads as before (no grids, no ids), gains the tables and then
 * stores a rank's ids and grid; ids read back in pages, resends change
 * nothing, ids past a rank's elements or of an unknown rank are refused. */
static void test_store_without_numbering_tables(void **state) {
  fx_t *f = *state;
  old_store(f, "DROP TABLE element_ids; DROP TABLE rank_grid;");
  reopen(f);
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM sqlite_master WHERE name IN"
                           " ('element_ids', 'rank_grid')"),
                   2);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(f->s, "old", 3, &set), 0);
  assert_int_equal(set->n_traces, 2);
  assert_int_equal(set->n_grids, 0);
  la_store_free_set(set);
  int64_t *ids = NULL;
  size_t n = 0;
  uint64_t nel = 0;
  assert_int_equal(la_store_rank_ids(f->s, "old", 1, 0, 10, &ids, &n, &nel),
                   LA_ENOTFOUND);
  int64_t v[100];
  for (int i = 0; i < 100; i++) v[i] = 5000 - i;
  La__ElementIds m = LA__ELEMENT_IDS__INIT;
  m.app_id = "old";
  m.has_rank = 1;
  m.rank = 1;
  m.ids = v;
  m.n_ids = 60;
  int was_new = 0;
  assert_int_equal(la_store_element_ids(f->s, &m, &was_new), 0);
  assert_true(was_new);
  assert_int_equal(la_store_element_ids(f->s, &m, &was_new), 0);
  assert_false(was_new);
  /* 60 of 100: not all there yet */
  assert_int_equal(la_store_rank_ids(f->s, "old", 1, 0, 10, &ids, &n, &nel),
                   LA_ENOTFOUND);
  assert_non_null(strstr(la_store_errmsg(f->s), "60 of its 100"));
  m.first = 60;
  m.ids = v + 60;
  m.n_ids = 41;
  assert_int_equal(la_store_element_ids(f->s, &m, NULL), LA_EPROTO);
  m.n_ids = 40;
  assert_int_equal(la_store_element_ids(f->s, &m, NULL), 0);
  /* a page across both chunks */
  assert_int_equal(la_store_rank_ids(f->s, "old", 1, 50, 30, &ids, &n, &nel),
                   0);
  assert_int_equal(n, 30);
  assert_int_equal(nel, 100);
  for (int i = 0; i < 30; i++) assert_int_equal(ids[i], v[50 + i]);
  free(ids);
  m.rank = 7; /* no RankStart */
  assert_int_equal(la_store_element_ids(f->s, &m, NULL), LA_EPROTO);
  /* a grid rank with its origin comes back in the set */
  La__RankStart rs = rank_start("g", 0, 1, 6);
  uint64_t dims[3] = {1, 2, 3}, org[3] = {4, 0, 1}, glob[3] = {5, 2, 4};
  rs.n_grid = rs.n_grid_origin = rs.n_grid_global = 3;
  rs.grid = dims;
  rs.grid_origin = org;
  rs.grid_global = glob;
  assert_int_equal(la_store_rank_start(f->s, &rs, NULL), 0);
  tr_t x;
  mk_trace(&x, "g", 0, 1, 6, 40, 1);
  assert_int_equal(la_store_trace(f->s, &x.t, NULL), 0);
  assert_int_equal(la_store_load_set(f->s, "g", 1, &set), 0);
  assert_int_equal(set->n_grids, 1);
  assert_int_equal(set->grids[0]->origin[0], 4);
  assert_int_equal(set->grids[0]->global[2], 4);
  assert_int_equal(set->grids[0]->dims[1], 2);
  la_store_free_set(set);
}

/* --------------------------------------------------------- corruption */

static void expect_corrupt(fx_t *f, const char *sql, const char *needle) {
  La__TraceSet *set = NULL;
  raw_exec(f->path, sql);
  int r = la_store_load_set(f->s, "k", 1, &set);
  if (r != LA_EIO)
    fail_msg("after %s: load_set returned %d (%s)", sql, r,
             la_store_errmsg(f->s));
  assert_null(set);
  if (!strstr(la_store_errmsg(f->s), needle))
    fail_msg("after %s: '%s' does not say '%s'", sql, la_store_errmsg(f->s),
             needle);
}

static void test_corrupt_rows(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 3; r++) {
    assert_int_equal(put_rank_start(f->s, "k", r, 3, 100), 0);
    assert_int_equal(put_trace(f->s, "k", r, 1, NULL), 0);
  }
  La__TraceSet *set;
  assert_int_equal(la_store_load_set(f->s, "k", 1, &set), 0);
  la_store_free_set(set);
  raw_exec(f->path,
           "CREATE TABLE keep AS SELECT * FROM traces;"
           "CREATE TABLE keep_apps AS SELECT * FROM apps;");
  const char *restore =
      "DELETE FROM traces; INSERT INTO traces SELECT * FROM keep;"
      "DELETE FROM apps; INSERT INTO apps SELECT * FROM keep_apps;";
  /* the raw connection does not check foreign keys: damage is the point */
  static const struct {
    const char *sql, *needle;
  } damage[] = {
      {"UPDATE traces SET segments = zeroblob(0) WHERE rank = 1",
       "segments BLOB of 0 bytes"},
      {"UPDATE traces SET segments = 'text' WHERE rank = 1", "segments"},
      {"UPDATE traces SET segments = 42 WHERE rank = 2", "segments"},
      {"UPDATE traces SET stat_count = 5 WHERE rank = 0", "stat_count"},
      {"UPDATE traces SET n_elements = -1 WHERE rank = 0", "n_elements"},
      {"UPDATE traces SET n_elements = 1e12 WHERE rank = 0", "n_elements"},
      {"UPDATE traces SET mode = 9 WHERE rank = 0", "mode"},
      {"UPDATE traces SET rank = 'x' WHERE rank = 0", "rank"},
      {"UPDATE apps SET nprocs = -5", "nprocs"},
      {"UPDATE apps SET nprocs = 99999999999", "nprocs"},
      {"UPDATE apps SET metric = hex(randomblob(200))", "metric"},
  };
  for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
    expect_corrupt(f, damage[i].sql, damage[i].needle);
    raw_exec(f->path, restore);
  }
  expect_corrupt(f, "UPDATE ranks SET n_elements = 'many' WHERE rank = 1",
                 "n_elements");
  raw_exec(f->path, "UPDATE ranks SET n_elements = 100");
  raw_exec(f->path, restore);
  assert_int_equal(la_store_load_set(f->s, "k", 1, &set), 0);
  la_store_free_set(set);
  /* the open-sets query checks its rows too */
  raw_exec(f->path, "UPDATE traces SET rank = -3 WHERE rank = 1");
  la_store_open_set_t *os;
  size_t n;
  assert_int_equal(la_store_open_sets(f->s, &os, &n), LA_EIO);
  assert_non_null(strstr(la_store_errmsg(f->s), "corrupt"));
}

static long long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
}

/* The WAL is checkpointed while the store is open (by its checkpoint
 * thread, store_ckpt.c) and stays bounded: 20 MB of traces written in
 * batches of 100 reach the database file before it is closed, and the WAL
 * never holds more than the 64 MiB of pages (16000 frames of 4 KiB, 2000
 * of 32 KiB) at which the writer checkpoints inline (plus a batch). */
static void test_wal_checkpointed_bounded(void **state) {
  fx_t *f = *state;
  char wal[160];
  snprintf(wal, sizeof wal, "%s-wal", f->path);
  long long wal_max = 0;
  for (uint32_t b = 0; b < 100; b++) {
    assert_int_equal(la_store_begin(f->s), 0);
    for (uint32_t i = 0; i < 100; i++) {
      tr_t x;
      int was_new = 0;
      mk_trace(&x, "wal-app", b * 100 + i, 1, 100, 2048, (uint8_t)i);
      assert_int_equal(la_store_trace(f->s, &x.t, &was_new), 0);
      assert_true(was_new);
    }
    assert_int_equal(la_store_commit(f->s), 0);
    long long w = file_size(wal);
    if (w > wal_max) wal_max = w;
  }
  /* 64 MiB of pages, their frames' headers (24 bytes per 4 KiB page at
   * most) and a batch with its pages' slack */
  assert_true(wal_max <= 16LL * 4096000 * (4096 + 24) / 4096 + (2 << 20));
  /* the last commit's checkpoint runs on the thread: wait for it */
  for (int i = 0; i < 200 && file_size(f->path) < 16LL * 1000 * 1000; i++)
    usleep(50 * 1000);
  assert_true(file_size(f->path) >= 16LL * 1000 * 1000);
}

static void test_damaged_file(void **state) {
  fx_t *f = *state;
  for (uint32_t r = 0; r < 4; r++)
    assert_int_equal(put_rank_start(f->s, "d", r, 4, 100), 0);
  assert_int_equal(la_store_begin(f->s), 0);
  for (uint64_t c = 0; c < 300; c++)
    for (uint32_t r = 0; r < 4; r++) {
      tr_t x;
      mk_trace(&x, "d", r, c, 100, 1500, (uint8_t)c);
      assert_int_equal(la_store_trace(f->s, &x.t, NULL), 0);
    }
  assert_int_equal(la_store_commit(f->s), 0);
  la_store_close(f->s); /* checkpoints the WAL into the file */
  f->s = NULL;
  struct stat sb;
  assert_int_equal(stat(f->path, &sb), 0);
  assert_true(sb.st_size > 100000);
  /* overwrite pages in the middle with garbage: every call must return
   * cleanly (an error or a result), never crash */
  int fd = open(f->path, O_WRONLY);
  assert_true(fd >= 0);
  uint8_t junk[4096];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)(i * 97 + 13);
  for (off_t off = 4096 * 2; off < sb.st_size; off += 4096 * 5)
    assert_int_equal(pwrite(fd, junk, sizeof junk, off), (ssize_t)sizeof junk);
  close(fd);
  char why[256];
  int r = la_store_open(f->path, 0, &f->s, why, sizeof why);
  if (r != 0) {
    assert_int_equal(r, LA_EIO);
    assert_true(why[0] != 0);
    return;
  }
  int errors = 0;
  for (uint64_t c = 0; c < 300; c++) {
    La__TraceSet *set = NULL;
    r = la_store_load_set(f->s, "d", c, &set);
    if (r == 0) {
      char w[200];
      assert_int_equal(
          la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, w, sizeof w),
          0);
      la_store_free_set(set);
    } else {
      assert_true(r == LA_EIO || r == LA_ENOTFOUND);
      errors++;
    }
  }
  la_store_open_set_t *os;
  size_t n;
  r = la_store_open_sets(f->s, &os, &n);
  if (r == 0) la_store_free_open_sets(os, n);
  la_store_app_t *apps;
  r = la_store_apps(f->s, &apps, &n);
  if (r == 0) free(apps);
  la_store_cycle_t *cy;
  r = la_store_cycles(f->s, "d", 0, UINT64_MAX, &cy, &n);
  if (r == 0) free(cy);
  assert_true(errors > 0);
  /* writes fail cleanly too (or succeed) */
  r = put_trace(f->s, "d", 0, 1000, NULL);
  assert_true(r == 0 || r == LA_EIO);
}

/* --------------------------------------------------------- documentation */

/* The database the examples of docs/storage.md run against: application
 * wavetoy-1234, 4 ranks, cycles 10 and 20 complete, 30 partial (rank 2
 * missing), 40 open (ranks 0 and 1 so far). Element i of rank r costs
 * 1000 * (r + 1) ns + (cycle) ns, plus 500 ns in the second half of the
 * rank's elements (whole numbers: the sums are exact). */
static void build_doc_db(la_store_t *s) {
  const uint64_t nel[4] = {1000, 1200, 900, 1100};
  for (uint32_t r = 0; r < 4; r++) {
    La__RankStart m = rank_start("wavetoy-1234", r, 4, nel[r]);
    m.host = r < 2 ? "node1" : "node2";
    m.seq = 1;
    m.has_timer_res_ns = 1; /* fidelity, for the robust example */
    m.timer_res_ns = r < 2 ? 20 : 41.5;
    m.interference = r < 2 ? "on" : "off (perf_event_paranoid=3)";
    assert_int_equal(la_store_rank_start(s, &m, NULL), 0);
  }
  assert_int_equal(la_store_begin(s), 0);
  for (uint64_t c = 10; c <= 40; c += 10)
    for (uint32_t r = 0; r < 4; r++) {
      if (c == 30 && r == 2) continue;
      if (c == 40 && r >= 2) continue;
      double *x = malloc(nel[r] * sizeof *x);
      assert_non_null(x);
      for (uint64_t i = 0; i < nel[r]; i++)
        x[i] = 1000.0 * (r + 1) + (double)c + (i >= nel[r] / 2 ? 500.0 : 0);
      la_compact_params_t p;
      la_compact_params_default(&p);
      la_compact_result_t res;
      assert_int_equal(la_compact(x, nel[r], &p, &res), 0);
      La__CompactTrace t = LA__COMPACT_TRACE__INIT;
      La__SeriesStats st = LA__SERIES_STATS__INIT;
      La__FitError er = LA__FIT_ERROR__INIT;
      la_trace_msg_fill(&t, &st, &er, &res);
      t.seq = c + r;
      t.app_id = "wavetoy-1234";
      t.rank = r;
      t.cycle_tag = c;
      t.n_elements = nel[r];
      /* cycle 20 carries robust weights: the step of 500 in the second
       * half was interference (docs/fidelity.md) */
      la_compact_result_t rres;
      La__SeriesStats rst = LA__SERIES_STATS__INIT;
      if (c == 20) {
        for (uint64_t i = 0; i < nel[r]; i++) x[i] = 1000.0 * (r + 1) + 20;
        assert_int_equal(la_compact(x, nel[r], &p, &rres), 0);
        la_trace_msg_robust(&t, &rst, &rres);
        t.has_interference = 1;
        t.interference = res.stats.sum - rres.stats.sum;
        t.has_flagged = 1;
        t.flagged = nel[r] - nel[r] / 2;
        t.has_flagged_time = 1;
        t.flagged_time = (double)t.flagged * (1000.0 * (r + 1) + 520);
      }
      assert_int_equal(la_store_trace(s, &t, NULL), 0);
      la_compact_result_free(&res);
      if (c == 20) la_compact_result_free(&rres);
      free(x);
    }
  const uint32_t miss = 2;
  /* as the GlobalAgent records it when cycle 30 times out */
  assert_int_equal(
      la_store_missing(s, "wavetoy-1234", 30, 2,
                       "timeout: no trace within stitch.timeout", 0, 0, NULL),
      0);
  assert_int_equal(la_store_set_closed(s, "wavetoy-1234", 10, 1, NULL, 0,
                                       1700000000100000000ull),
                   0);
  assert_int_equal(la_store_set_closed(s, "wavetoy-1234", 20, 1, NULL, 0,
                                       1700000000200000000ull),
                   0);
  assert_int_equal(la_store_set_closed(s, "wavetoy-1234", 30, 0, &miss, 1,
                                       1700000000300000000ull),
                   0);
  assert_int_equal(la_store_agent_seq_update(s, "node1", 41), 0);
  assert_int_equal(la_store_agent_seq_update(s, "node2", 32), 0);
  assert_int_equal(la_store_commit(s), 0);
  La__RankEnd e = rank_end("wavetoy-1234", 2, "disconnected");
  assert_int_equal(la_store_rank_end(s, &e, NULL), 0);
}

static char *slurp(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, (size_t)n, fp), (size_t)n);
  p[n] = 0;
  fclose(fp);
  return p;
}

/* docs/storage.md, found from the current directory (make check runs from
 * the top of the tree) or from the test program's location. */
static char *read_doc(void) {
  char *d = slurp("docs/storage.md");
  if (d) return d;
  char exe[512], path[600];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return NULL;
  exe[n] = 0;
  for (int up = 0; up < 4; up++) {
    char *slash = strrchr(exe, '/');
    if (!slash) break;
    *slash = 0;
    snprintf(path, sizeof path, "%s/docs/storage.md", exe);
    if ((d = slurp(path))) return d;
  }
  return NULL;
}

/* Next fenced block at or after *p: its language in lang, its body (a
 * malloc'ed copy) returned, *p moved past it. NULL when none is left. */
static char *next_block(const char **p, char *lang, size_t lang_len) {
  const char *s = *p;
  for (;;) {
    const char *q = strstr(s, "```");
    if (!q) return NULL;
    if (q != *p && q[-1] != '\n') { /* not at a line start */
      s = q + 3;
      continue;
    }
    const char *eol = strchr(q, '\n');
    if (!eol) return NULL;
    size_t ll = (size_t)(eol - q - 3);
    if (ll >= lang_len) ll = lang_len - 1;
    memcpy(lang, q + 3, ll);
    lang[ll] = 0;
    const char *body = eol + 1;
    const char *end = strstr(body, "\n```");
    if (!end) return NULL;
    size_t bl = (size_t)(end - body) + 1;
    char *b = malloc(bl + 1);
    assert_non_null(b);
    memcpy(b, body, bl);
    b[bl] = 0;
    *p = end + 4;
    return b;
  }
}

static void rstrip(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
}

static char *run_capture(const char *cmd) {
  FILE *pp = popen(cmd, "r");
  assert_non_null(pp);
  size_t cap = 4096, len = 0;
  char *out = malloc(cap);
  assert_non_null(out);
  size_t k;
  while ((k = fread(out + len, 1, cap - len - 1, pp)) > 0) {
    len += k;
    if (cap - len < 2) {
      cap *= 2;
      out = realloc(out, cap);
      assert_non_null(out);
    }
  }
  out[len] = 0;
  pclose(pp);
  return out;
}

static void test_doc_examples(void **state) {
  fx_t *f = *state;
  char *doc = read_doc();
  if (!doc) {
    skip();
    return;
  }
  build_doc_db(f->s);
  la_store_close(f->s); /* as a user would see it; the WAL is checkpointed */
  f->s = NULL;
  /* LA_TEST_STORE_DOC_DB=path keeps a copy, for updating the document */
  const char *keep = getenv("LA_TEST_STORE_DOC_DB");
  if (keep && keep[0]) {
    char cp[600];
    snprintf(cp, sizeof cp, "cp %s '%s'", f->path, keep);
    assert_int_equal(system(cp), 0);
  }
  int have_py = system("python3 -c 'import sqlite3' >/dev/null 2>&1") == 0;
  const char *p = doc;
  char lang[32], file[200], cmd[600];
  int n_sql = 0, n_py = 0;
  char *code;
  while ((code = next_block(&p, lang, sizeof lang))) {
    if (strcmp(lang, "sql") != 0 && strcmp(lang, "python") != 0) {
      free(code);
      continue;
    }
    const char *save = p;
    char lang2[32];
    char *want = next_block(&p, lang2, sizeof lang2);
    if (!want || strcmp(lang2, "text") != 0) {
      /* an example without an expected output is not checked */
      free(want);
      free(code);
      p = save;
      continue;
    }
    int is_sql = strcmp(lang, "sql") == 0;
    snprintf(file, sizeof file, "%s/example.%s", f->dir, is_sql ? "sql" : "py");
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fputs(code, fp);
    fclose(fp);
    if (is_sql)
      snprintf(cmd, sizeof cmd, "cd %s && sqlite3 -header la.db < %s 2>&1",
               f->dir, file);
    else if (have_py)
      snprintf(cmd, sizeof cmd, "cd %s && python3 %s 2>&1", f->dir, file);
    else
      cmd[0] = 0;
    if (cmd[0]) {
      char *got = run_capture(cmd);
      rstrip(got);
      rstrip(want);
      if (strcmp(got, want) != 0)
        fail_msg("docs/storage.md example:\n%s\nexpected:\n%s\ngot:\n%s", code,
                 want, got);
      free(got);
      is_sql ? n_sql++ : n_py++;
    }
    free(want);
    free(code);
  }
  free(doc);
  printf("  docs/storage.md: %d sqlite3 and %d Python examples checked\n",
         n_sql, n_py);
  assert_true(n_sql >= 5);
  if (have_py) assert_true(n_py >= 1);
  reopen(f);
}

/* ----------------------------------------------------- missing records -- */

/* The reason stored for (app, tag, rank), "" when none. */
static void missing_reason(fx_t *f, const char *app, uint64_t tag,
                           uint32_t rank, char *buf, size_t cap) {
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT coalesce((SELECT reason FROM missing WHERE app_id = '%s'"
           " AND cycle_tag = %llu AND rank = %u), '')",
           app, (unsigned long long)tag, rank);
  raw_text(f->path, sql, buf, cap);
}

/* Every (app, rank, cycle) ends stored or missing with a reason: a
 * LocalAgent's record is idempotent and beats the GlobalAgent's inferred
 * one, a trace beats both (also when it comes later), a rank that ended
 * gets "rank ended before this cycle", and sets load with the reasons. */
/* Records rank's cycle 5 of app "m" as missing (from_agent and seq as
 * la_store_missing takes them) and checks it succeeded and whether it
 * wrote or replaced a record. */
static void missing_5(la_store_t *s, uint32_t rank, const char *reason,
                      int from_agent, uint64_t seq, int written) {
  int nw = -1;
  assert_int_equal(
      la_store_missing(s, "m", 5, rank, reason, from_agent, seq, &nw), 0);
  assert_int_equal(nw, written);
}

static void test_missing_records(void **state) {
  fx_t *f = *state;
  la_store_t *s = f->s;
  char why[300];
  int nw = -1;
  for (uint32_t r = 0; r < 3; r++)
    assert_int_equal(put_rank_start(s, "m", r, 3, 100), 0);
  assert_int_equal(put_trace(s, "m", 0, 5, NULL), 0);
  /* the LocalAgent's record, then its resend */
  missing_5(s, 1, "skipped", 1, 7, 1);
  missing_5(s, 1, "skipped", 1, 7, 0);
  /* the GlobalAgent's inference does not replace it... */
  missing_5(s, 1, "timeout", 0, 0, 0);
  missing_reason(f, "m", 5, 1, why, sizeof why);
  assert_string_equal(why, "skipped");
  /* ...but a LocalAgent's record replaces an inferred one */
  missing_5(s, 2, "timeout", 0, 0, 1);
  missing_5(s, 2, "buffer lost", 1, 9, 1);
  missing_reason(f, "m", 5, 2, why, sizeof why);
  assert_string_equal(why, "buffer lost");
  /* a stored trace: no record for it */
  missing_5(s, 0, "timeout", 1, 3, 0);
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM missing WHERE "
                           "rank = 0"),
                   0);
  uint32_t *mr = NULL;
  size_t n = 0;
  assert_int_equal(la_store_missing_ranks(s, "m", 5, 3, &mr, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(mr[0], 1);
  assert_int_equal(mr[1], 2);
  free(mr);
  assert_int_equal(la_store_set_closed(s, "m", 5, 0, (uint32_t[]){1, 2}, 2, 10),
                   0);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(s, "m", 5, &set), 0);
  assert_int_equal(set->n_missing_ranks, 2);
  assert_int_equal(set->n_missing_reasons, 2);
  assert_int_equal(set->missing_reasons[0]->rank, 1);
  assert_string_equal(set->missing_reasons[0]->reason, "skipped");
  assert_int_equal(set->missing_reasons[1]->rank, 2);
  assert_string_equal(set->missing_reasons[1]->reason, "buffer lost");
  la_store_free_set(set);
  la_store_cycle_t *cy = NULL;
  assert_int_equal(la_store_cycles(s, "m", 5, 5, &cy, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(cy[0].reasons, "buffer lost (1); skipped (1)");
  free(cy);
  /* a late trace wins: the record goes, the set loads without it */
  assert_int_equal(put_trace(s, "m", 1, 5, &nw), 0);
  assert_int_equal(nw, 1);
  missing_reason(f, "m", 5, 1, why, sizeof why);
  assert_string_equal(why, "");
  assert_int_equal(la_store_load_set(s, "m", 5, &set), 0);
  assert_int_equal(set->n_missing_ranks, 1);
  assert_int_equal(set->n_missing_reasons, 1);
  assert_int_equal(set->missing_reasons[0]->rank, 2);
  la_store_free_set(set);
  /* an ended rank: the GlobalAgent's reason says so */
  La__RankEnd e = rank_end("m", 2, "finalize");
  assert_int_equal(la_store_rank_end(s, &e, NULL), 0);
  assert_int_equal(la_store_missing(s, "m", 6, 2, "timeout", 0, 0, &nw), 0);
  missing_reason(f, "m", 6, 2, why, sizeof why);
  assert_string_equal(why, "rank ended before this cycle");
  /* a cycle nobody delivered loads from its records alone, and is open
   * for a restarted stitcher with its reported ranks */
  assert_int_equal(la_store_missing(s, "m", 7, 0, "skipped", 1, 20, NULL), 0);
  assert_int_equal(la_store_load_set(s, "m", 7, &set), 0);
  assert_int_equal(set->n_traces, 0);
  assert_int_equal(set->n_missing_ranks, 3);
  assert_int_equal(set->n_missing_reasons, 1);
  assert_false(set->complete);
  la_store_free_set(set);
  la_store_open_set_t *os = NULL;
  assert_int_equal(la_store_open_sets(s, &os, &n), 0);
  int found = 0;
  for (size_t i = 0; i < n; i++)
    if (os[i].cycle_tag == 7) {
      found = 1;
      assert_int_equal(os[i].n_ranks, 1);
      assert_int_equal(os[i].ranks[0], 0);
    }
  assert_true(found);
  la_store_free_open_sets(os, n);
  /* counts by reason, most frequent first */
  la_store_reason_count_t top[2];
  uint64_t total = 0;
  assert_int_equal(la_store_missing_counts(s, top, 2, &n, &total), 0);
  assert_int_equal(total, 3);
  assert_int_equal(n, 2);
  assert_int_equal(top[0].count, 1);
  /* the host a timeout's reason names */
  char host[64];
  assert_int_equal(la_store_rank_host(s, "m", 1, host, sizeof host), 0);
  assert_string_equal(host, "node1");
  assert_int_equal(la_store_rank_host(s, "m", 5, host, sizeof host),
                   LA_ENOTFOUND);
  /* refused: bad rank, empty reason */
  assert_int_equal(la_store_missing(s, "m", 8, LA_MAX_RANKS, "x", 1, 1, &nw),
                   LA_EPROTO);
  assert_int_equal(la_store_missing(s, "m", 8, 1, "", 1, 1, &nw), LA_EINVAL);
  /* survives a reopen */
  reopen(f);
  assert_int_equal(la_store_missing_counts(f->s, top, 2, &n, &total), 0);
  assert_int_equal(total, 3);
}

/* The test-only fault injection fails exactly the commits it names, and a
 * failed commit leaves nothing behind. */
static void test_injected_commit_failure(void **state) {
  fx_t *f = *state;
  char why[256];
  la_store_close(f->s);
  f->s = NULL;
  setenv("LA_GA_TEST_FAIL_COMMITS", "2", 1);
  int rc = la_store_open(f->path, 0, &f->s, why, sizeof why);
  unsetenv("LA_GA_TEST_FAIL_COMMITS");
  assert_int_equal(rc, 0);
  for (uint64_t tag = 1; tag <= 3; tag++) {
    assert_int_equal(la_store_begin(f->s), 0);
    assert_int_equal(put_trace(f->s, "inj", 0, tag, NULL), 0);
    rc = la_store_commit(f->s);
    assert_int_equal(rc, tag == 2 ? LA_EIO : 0);
    if (rc) assert_non_null(strstr(la_store_errmsg(f->s), "injected"));
  }
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM traces WHERE "
                           "app_id = 'inj' AND cycle_tag = 2"),
                   0);
  assert_int_equal(raw_int(f->path,
                           "SELECT count(*) FROM traces WHERE "
                           "app_id = 'inj'"),
                   2);
}

#ifndef TEST_STORE_PG
/* A new store gets 32 KiB pages; a store made with SQLite's default 4 KiB
 * pages (every store before) keeps them, and stores and returns traces,
 * across checkpoints and a reopen, as before. */
static void test_page_size(void **state) {
  fx_t *f = *state;
  assert_int_equal(put_rank_start(f->s, "p", 0, 1, 100), 0);
  assert_int_equal(raw_int(f->path, "PRAGMA page_size"), 32768);
  char old[160], why[256];
  snprintf(old, sizeof old, "%s/old.db", f->dir);
  raw_exec(old,
           "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL;"
           " CREATE TABLE x (a); DROP TABLE x;");
  la_store_t *s = NULL;
  assert_int_equal(la_store_open(old, 0, &s, why, sizeof why), 0);
  const uint32_t R = 600;
  static tr_t x[600];
  for (uint32_t r = 0; r < R; r++)
    assert_int_equal(put_rank_start(s, "old", r, R, 100), 0);
  for (uint64_t tag = 1; tag <= 2; tag++) {
    assert_int_equal(la_store_begin(s), 0);
    for (uint32_t r = 0; r < R; r++) {
      mk_trace(&x[r], "old", r, tag, 100, 2048, (uint8_t)(r + tag));
      assert_int_equal(la_store_trace(s, &x[r].t, NULL), 0);
    }
    assert_int_equal(la_store_commit(s), 0);
  }
  la_store_close(s);
  assert_int_equal(la_store_open(old, 0, &s, why, sizeof why), 0);
  La__TraceSet *set = NULL;
  assert_int_equal(la_store_load_set(s, "old", 2, &set), 0);
  assert_int_equal(set->n_traces, R);
  for (uint32_t r = 0; r < R; r++) {
    assert_int_equal(set->traces[r]->rank, r);
    assert_int_equal(set->traces[r]->segments.len, 2048);
    assert_memory_equal(set->traces[r]->segments.data, x[r].seg, 2048);
  }
  la_store_free_set(set);
  la_store_close(s);
  assert_int_equal(raw_int(old, "PRAGMA page_size"), 4096);
  assert_int_equal(raw_int(old, "SELECT count(*) FROM traces"), 2 * R);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_open_reopen),
      T(test_schema_version_refused),
      T(test_rank_upserts),
      T(test_rank_registered_again),
      T(test_conflicting_nprocs),
      T(test_trace_idempotent),
      T(test_trace_before_rank_start),
      T(test_group_commit_rollback),
      T(test_deferred_writes_per_batch),
      T(test_deferred_unmiss_some_sets),
      T(test_deferred_traces),
      T(test_batch_poisoned),
      T(test_load_set),
      T(test_set_closed),
      T(test_open_sets_restart),
      T(test_queries),
      T(test_agent_seq),
      T(test_corrupt_rows),
      T(test_robust_round_trip),
      T(test_robust_history),
      T(test_robust_history_exceptions),
      T(test_reps_packed_small),
      T(test_store_without_numbering_tables),
      T(test_store_without_robust_tables),
      T(test_per_trace_tables_layout),
      T(test_missing_records),
      T(test_injected_commit_failure),
      T(test_wal_checkpointed_bounded),
      T(test_page_size),
      T(test_damaged_file),
      T(test_doc_examples),
      T(test_app_owners),
      T(test_store_without_owner_tables),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif /* TEST_STORE_PG */
