/* store.c: the GlobalAgent's embedded SQLite store (see store.h and
 * docs/storage.md for the schema and its rules).
 *
 * Every statement is prepared once at open and cached in the store; writes
 * run inside the caller's batch (group commit) or in a transaction of their
 * own. Idempotence comes from the keys: INSERT OR IGNORE for traces, upserts
 * guarded by "started = 0" / "ended = 0" / "nprocs = 0" for rank and
 * application rows. Everything read back is bounds-checked before it is put
 * into a message.
 *
 * Deliberately not here: stitching decisions, decoding segments, pruning old
 * data, threads (one store, one thread at a time), libuv.
 */
#include "store.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "la.h"
#include "la_codec.h"

/* ----------------------------------------------------------------- schema */

static const char la__schema_sql[] =
    "CREATE TABLE schema_version ("
    "  version INTEGER NOT NULL,"
    "  t_created_ns INTEGER NOT NULL);"
    "CREATE TABLE apps ("
    "  app_id TEXT PRIMARY KEY NOT NULL,"
    "  app_name TEXT NOT NULL DEFAULT '',"
    "  nprocs INTEGER NOT NULL DEFAULT 0,"
    "  metric TEXT NOT NULL DEFAULT '',"
    "  unit TEXT NOT NULL DEFAULT '',"
    "  period INTEGER NOT NULL DEFAULT 0,"
    "  compact_mode INTEGER,"
    "  compact_cv REAL,"
    "  compact_epsilon REAL,"
    "  compact_relative INTEGER,"
    "  compact_connected INTEGER,"
    "  compact_outliers INTEGER,"
    "  grid_nx INTEGER, grid_ny INTEGER, grid_nz INTEGER,"
    "  t_created_ns INTEGER NOT NULL);"
    "CREATE TABLE ranks ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  rank INTEGER NOT NULL,"
    "  started INTEGER NOT NULL DEFAULT 0,"
    "  n_elements INTEGER NOT NULL DEFAULT 0,"
    "  host TEXT NOT NULL DEFAULT '',"
    "  pid INTEGER,"
    "  t_start_ns INTEGER,"
    "  start_seq INTEGER,"
    "  ended INTEGER NOT NULL DEFAULT 0,"
    "  end_reason TEXT,"
    "  cycles INTEGER,"
    "  skipped INTEGER,"
    "  t_end_ns INTEGER,"
    "  end_seq INTEGER,"
    "  PRIMARY KEY (app_id, rank)) WITHOUT ROWID;"
    "CREATE TABLE traces ("
    "  id INTEGER PRIMARY KEY,"
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  n_elements INTEGER NOT NULL,"
    "  mode INTEGER NOT NULL,"
    "  segments BLOB NOT NULL,"
    "  stat_count INTEGER NOT NULL,"
    "  stat_sum REAL,"
    "  stat_min REAL,"
    "  stat_max REAL,"
    "  err_max_abs REAL,"
    "  err_rmse REAL,"
    "  err_cv REAL,"
    "  t_xfer_ns INTEGER,"
    "  rank_seq INTEGER,"
    "  seq INTEGER NOT NULL,"
    "  t_stored_ns INTEGER NOT NULL,"
    "  UNIQUE (app_id, cycle_tag, rank));"
    "CREATE TABLE trace_sets ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  closed INTEGER NOT NULL DEFAULT 0,"
    "  complete INTEGER NOT NULL DEFAULT 0,"
    "  nprocs INTEGER NOT NULL DEFAULT 0,"
    "  n_ranks_present INTEGER NOT NULL DEFAULT 0,"
    "  n_missing INTEGER NOT NULL DEFAULT 0,"
    "  missing_ranks TEXT NOT NULL DEFAULT '',"
    "  t_first_ns INTEGER,"
    "  t_last_ns INTEGER,"
    "  t_closed_ns INTEGER,"
    "  PRIMARY KEY (app_id, cycle_tag)) WITHOUT ROWID;"
    "CREATE INDEX trace_sets_open ON trace_sets(app_id, cycle_tag)"
    "  WHERE closed = 0;"
    "CREATE TABLE agents ("
    "  host TEXT PRIMARY KEY NOT NULL,"
    "  max_seq INTEGER NOT NULL,"
    "  t_updated_ns INTEGER NOT NULL) WITHOUT ROWID;";

/* Added after schema version 1 shipped; created in place (IF NOT EXISTS) in
 * older version-1 databases too, which older programs simply ignore. One
 * row per (application, cycle, rank) known to be missing, with the reason;
 * a trace stored later for that key deletes the row. */
static const char la__missing_sql[] =
    "CREATE TABLE IF NOT EXISTS missing ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  reason TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  seq INTEGER,"
    "  t_recorded_ns INTEGER NOT NULL,"
    "  PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * robust: per stored trace that carried them, the robust weights (their
 * encoding and exact statistics) and the interference figures
 * (docs/fidelity.md); a trace without them has no row. rank_fidelity: per
 * rank, the timer resolution and the interference detection status its
 * RankStart reported. */
static const char la__robust_sql[] =
    "CREATE TABLE IF NOT EXISTS robust ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  segments BLOB,"
    "  stat_count INTEGER,"
    "  stat_sum REAL,"
    "  stat_min REAL,"
    "  stat_max REAL,"
    "  interference REAL,"
    "  flagged INTEGER,"
    "  flagged_time REAL,"
    "  PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rank_fidelity ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  rank INTEGER NOT NULL,"
    "  timer_res_ns REAL,"
    "  detection TEXT,"
    "  PRIMARY KEY (app_id, rank)) WITHOUT ROWID;";

/* ------------------------------------------------------------- statements */

enum {
  S_BEGIN,
  S_COMMIT,
  S_ROLLBACK,
  S_APP_NPROCS,
  S_APP_LAZY,
  S_APP_START,
  S_RANK_START,
  S_RANK_LAZY,
  S_RANK_END,
  S_TRACE_INS,
  S_SET_TOUCH,
  S_SET_CLOSE,
  S_AGENT_UPD,
  S_AGENT_GET,
  S_APPS,
  S_CYCLES,
  S_LATEST,
  S_LOAD_APP,
  S_LOAD_ROW,
  S_LOAD_TRACES,
  S_LOAD_RANKS,
  S_OPEN_SETS,
  S_ENDED,
  S_MISS_PUT,
  S_MISS_DEL,
  S_MISS_SET,
  S_MISS_RANKS,
  S_LOAD_MISSING,
  S_MISS_COUNTS,
  S_RANK_HOST,
  S_SET_STATE,
  S_ROBUST_INS,
  S_FID_INS,
  S_LOAD_FID,
  S__COUNT
};

static const char *const la__sql[S__COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_APP_NPROCS] = "SELECT nprocs FROM apps WHERE app_id = ?1",
    [S_APP_LAZY] =
        "INSERT OR IGNORE INTO apps(app_id, t_created_ns) VALUES (?1, ?2)",
    [S_APP_START] =
        "INSERT INTO apps(app_id, app_name, nprocs, metric, unit, period,"
        " compact_mode, compact_cv, compact_epsilon, compact_relative,"
        " compact_connected, compact_outliers, grid_nx, grid_ny, grid_nz,"
        " t_created_ns)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
        " ?15, ?16)"
        " ON CONFLICT(app_id) DO UPDATE SET app_name = excluded.app_name,"
        " nprocs = excluded.nprocs, metric = excluded.metric,"
        " unit = excluded.unit, period = excluded.period,"
        " compact_mode = excluded.compact_mode,"
        " compact_cv = excluded.compact_cv,"
        " compact_epsilon = excluded.compact_epsilon,"
        " compact_relative = excluded.compact_relative,"
        " compact_connected = excluded.compact_connected,"
        " compact_outliers = excluded.compact_outliers,"
        " grid_nx = excluded.grid_nx, grid_ny = excluded.grid_ny,"
        " grid_nz = excluded.grid_nz WHERE apps.nprocs = 0",
    [S_RANK_START] =
        "INSERT INTO ranks(app_id, rank, started, n_elements, host, pid,"
        " t_start_ns, start_seq) VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?7)"
        " ON CONFLICT(app_id, rank) DO UPDATE SET started = 1,"
        " n_elements = excluded.n_elements, host = excluded.host,"
        " pid = excluded.pid, t_start_ns = excluded.t_start_ns,"
        " start_seq = excluded.start_seq WHERE ranks.started = 0",
    [S_RANK_LAZY] = "INSERT OR IGNORE INTO ranks(app_id, rank) VALUES (?1, ?2)",
    [S_RANK_END] =
        "UPDATE ranks SET ended = 1, end_reason = ?3, cycles = ?4,"
        " skipped = ?5, t_end_ns = ?6, end_seq = ?7"
        " WHERE app_id = ?1 AND rank = ?2 AND ended = 0",
    [S_TRACE_INS] =
        "INSERT OR IGNORE INTO traces(app_id, cycle_tag, rank, n_elements,"
        " mode, segments, stat_count, stat_sum, stat_min, stat_max,"
        " err_max_abs, err_rmse, err_cv, t_xfer_ns, rank_seq, seq,"
        " t_stored_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
        " ?12, ?13, ?14, ?15, ?16, ?17)",
    [S_SET_TOUCH] =
        "INSERT INTO trace_sets(app_id, cycle_tag, n_ranks_present,"
        " t_first_ns, t_last_ns) VALUES (?1, ?2, 1, ?3, ?3)"
        " ON CONFLICT(app_id, cycle_tag) DO UPDATE SET"
        " n_ranks_present = n_ranks_present + 1,"
        " t_last_ns = excluded.t_last_ns",
    [S_SET_CLOSE] =
        "INSERT INTO trace_sets(app_id, cycle_tag, closed, complete, nprocs,"
        " n_ranks_present, n_missing, missing_ranks, t_closed_ns)"
        " VALUES (?1, ?2, 1, ?3, (SELECT nprocs FROM apps WHERE app_id = ?1),"
        " (SELECT count(*) FROM traces WHERE app_id = ?1 AND cycle_tag = ?2),"
        " ?4, ?5, ?6)"
        " ON CONFLICT(app_id, cycle_tag) DO UPDATE SET closed = 1,"
        " complete = excluded.complete, nprocs = excluded.nprocs,"
        " n_ranks_present = excluded.n_ranks_present,"
        " n_missing = excluded.n_missing,"
        " missing_ranks = excluded.missing_ranks,"
        " t_closed_ns = excluded.t_closed_ns",
    [S_AGENT_UPD] =
        "INSERT INTO agents(host, max_seq, t_updated_ns) VALUES (?1, ?2, ?3)"
        " ON CONFLICT(host) DO UPDATE SET"
        " max_seq = max(max_seq, excluded.max_seq),"
        " t_updated_ns = excluded.t_updated_ns",
    [S_AGENT_GET] = "SELECT max_seq FROM agents WHERE host = ?1",
    [S_APPS] =
        "SELECT a.app_id, a.app_name, a.metric, a.unit, a.nprocs,"
        " coalesce(r.n_el, 0), coalesce(r.started, 0), coalesce(r.ended, 0),"
        " r.t_start, r.t_end, coalesce(c.cycles, 0), coalesce(c.complete, 0),"
        " coalesce(c.partial, 0), c.t_last"
        " FROM apps a"
        " LEFT JOIN (SELECT app_id,"
        "   sum(CASE WHEN started THEN n_elements ELSE 0 END) AS n_el,"
        "   sum(started) AS started, sum(ended) AS ended,"
        "   min(t_start_ns) AS t_start, max(t_end_ns) AS t_end"
        "   FROM ranks GROUP BY app_id) r ON r.app_id = a.app_id"
        " LEFT JOIN (SELECT app_id, count(*) AS cycles,"
        "   sum(closed AND complete) AS complete,"
        "   sum(closed AND NOT complete) AS partial, max(t_last_ns) AS t_last"
        "   FROM trace_sets GROUP BY app_id) c ON c.app_id = a.app_id"
        " ORDER BY a.app_id",
    [S_CYCLES] =
        "SELECT s.cycle_tag, s.closed, s.complete, s.n_ranks_present,"
        " s.n_missing, a.nprocs, (SELECT group_concat(x, '; ') FROM"
        "   (SELECT reason || ' (' || count(*) || ')' AS x FROM missing m"
        "   WHERE m.app_id = s.app_id AND m.cycle_tag = s.cycle_tag"
        "   AND (a.nprocs = 0 OR m.rank < a.nprocs)"
        "   GROUP BY reason ORDER BY count(*) DESC, reason))"
        " FROM trace_sets s"
        " JOIN apps a ON a.app_id = s.app_id"
        " WHERE s.app_id = ?1 AND s.cycle_tag BETWEEN ?2 AND ?3"
        " ORDER BY s.cycle_tag",
    [S_LATEST] =
        "SELECT cycle_tag FROM trace_sets"
        " WHERE app_id = ?1 AND cycle_tag BETWEEN ?2 AND ?3"
        " AND (?4 = 0 OR (closed = 1 AND (?4 = 2 OR complete = 1)))"
        " ORDER BY cycle_tag DESC LIMIT 1",
    [S_LOAD_APP] = "SELECT nprocs, metric, unit FROM apps WHERE app_id = ?1",
    [S_LOAD_ROW] =
        "SELECT closed, complete, t_closed_ns FROM trace_sets"
        " WHERE app_id = ?1 AND cycle_tag = ?2",
    [S_LOAD_TRACES] =
        "SELECT t.rank, t.n_elements, t.mode, t.segments, t.stat_count,"
        " t.stat_sum, t.stat_min, t.stat_max, t.err_max_abs, t.err_rmse,"
        " t.err_cv, t.t_xfer_ns, t.rank_seq, t.seq, r.segments, r.stat_count,"
        " r.stat_sum, r.stat_min, r.stat_max, r.interference, r.flagged,"
        " r.flagged_time FROM traces t LEFT JOIN robust r"
        " ON r.app_id = t.app_id AND r.cycle_tag = t.cycle_tag"
        " AND r.rank = t.rank WHERE t.app_id = ?1 AND t.cycle_tag = ?2"
        " ORDER BY t.rank",
    [S_LOAD_RANKS] =
        "SELECT rank, n_elements FROM ranks WHERE app_id = ?1 AND started = 1",
    [S_OPEN_SETS] =
        "SELECT s.app_id, s.cycle_tag, a.nprocs, s.t_first_ns, t.rank"
        " FROM trace_sets s JOIN apps a ON a.app_id = s.app_id"
        " JOIN (SELECT app_id, cycle_tag, rank FROM traces UNION"
        "   SELECT app_id, cycle_tag, rank FROM missing) t"
        " ON t.app_id = s.app_id AND t.cycle_tag = s.cycle_tag"
        " WHERE s.closed = 0 ORDER BY s.app_id, s.cycle_tag, t.rank",
    [S_ENDED] =
        "SELECT a.nprocs, (SELECT count(*) FROM ranks r"
        " WHERE r.app_id = a.app_id AND r.ended = 1)"
        " FROM apps a WHERE a.app_id = ?1",
    /* A missing record, unless a trace of that key is stored. The
     * LocalAgent's reason (source 'agent') replaces one the GlobalAgent
     * inferred; nothing else changes an existing record. The GlobalAgent's
     * reason becomes "rank ended before this cycle" when the rank's RankEnd
     * is stored (the ordered link delivered all its traces before it). */
    [S_MISS_PUT] =
        "INSERT INTO missing(app_id, cycle_tag, rank, reason, source, seq,"
        " t_recorded_ns)"
        " SELECT ?1, ?2, ?3, CASE WHEN ?5 <> 'agent' AND EXISTS (SELECT 1"
        "   FROM ranks WHERE app_id = ?1 AND rank = ?3 AND ended = 1)"
        "   THEN 'rank ended before this cycle' ELSE ?4 END, ?5, ?6, ?7"
        " WHERE NOT EXISTS (SELECT 1 FROM traces"
        "   WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3)"
        " ON CONFLICT(app_id, cycle_tag, rank) DO UPDATE SET"
        " reason = excluded.reason, source = excluded.source,"
        " seq = excluded.seq, t_recorded_ns = excluded.t_recorded_ns"
        " WHERE missing.source <> 'agent' AND excluded.source = 'agent'",
    [S_MISS_DEL] =
        "DELETE FROM missing WHERE app_id = ?1 AND cycle_tag = ?2"
        " AND rank = ?3",
    [S_MISS_SET] =
        "INSERT INTO trace_sets(app_id, cycle_tag, t_first_ns, t_last_ns)"
        " VALUES (?1, ?2, ?3, ?3) ON CONFLICT(app_id, cycle_tag) DO UPDATE"
        " SET t_last_ns = excluded.t_last_ns",
    [S_MISS_RANKS] =
        "SELECT rank FROM missing WHERE app_id = ?1 AND cycle_tag = ?2"
        " AND rank < ?3 ORDER BY rank",
    [S_LOAD_MISSING] =
        "SELECT rank, reason FROM missing WHERE app_id = ?1"
        " AND cycle_tag = ?2 ORDER BY rank",
    [S_RANK_HOST] =
        "SELECT host FROM ranks WHERE app_id = ?1 AND rank = ?2"
        " AND started = 1",
    [S_MISS_COUNTS] =
        "SELECT reason, count(*) AS n FROM missing GROUP BY reason"
        " ORDER BY n DESC, reason",
    [S_SET_STATE] =
        "SELECT closed FROM trace_sets WHERE app_id = ?1 AND cycle_tag = ?2",
    [S_ROBUST_INS] =
        "INSERT OR IGNORE INTO robust(app_id, cycle_tag, rank, segments,"
        " stat_count, stat_sum, stat_min, stat_max, interference, flagged,"
        " flagged_time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [S_FID_INS] =
        "INSERT OR IGNORE INTO rank_fidelity(app_id, rank, timer_res_ns,"
        " detection) VALUES (?1, ?2, ?3, ?4)",
    [S_LOAD_FID] =
        "SELECT rank, timer_res_ns, detection FROM rank_fidelity"
        " WHERE app_id = ?1 ORDER BY rank",
};

/* Test-only fault injection: the environment variable names the commits
 * (1-based, counting every la_store_commit of this store) that fail as if
 * the disk were full, e.g. "3,6". A full disk or a read-only file cannot be
 * produced reliably in a test; nothing else reads it. */
#define LA__FAIL_ENV "LA_GA_TEST_FAIL_COMMITS"
#define LA__FAIL_MAX 16

struct la_store {
  sqlite3 *db;
  sqlite3_stmt *st[S__COUNT];
  int in_batch; /* between la_store_begin and commit/rollback */
  int failed;   /* a write of the open batch failed with LA_EIO */
  uint64_t n_commits;
  uint64_t fail_at[LA__FAIL_MAX]; /* LA__FAIL_ENV's commit numbers */
  int n_fail_at;
  char err[512];
};

/* ---------------------------------------------------------------- helpers */

static uint64_t la__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Unsigned values keep their bits in SQLite's signed INTEGER. */
static sqlite3_int64 la__i64(uint64_t v) {
  return (sqlite3_int64)v;
}

static void la__fmt(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void la__fmt(char *buf, size_t n, const char *fmt, ...) {
  if (!buf || n == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
}

/* Records an SQLite error (call before resetting the statement) and poisons
 * the open batch. */
static int la__sqlerr(la_store_t *s, const char *what) {
  la__fmt(s->err, sizeof s->err, "%s: %s", what, sqlite3_errmsg(s->db));
  if (s->in_batch) s->failed = 1;
  return LA_EIO;
}

/* Corrupt content read back: LA_EIO with the reason. */
static int la__corrupt(la_store_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int la__corrupt(la_store_t *s, const char *fmt, ...) {
  int k = snprintf(s->err, sizeof s->err, "corrupt database: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err + k, sizeof s->err - (size_t)k, fmt, ap);
  va_end(ap);
  return LA_EIO;
}

/* Steps a write statement to completion and resets it. */
static int la__run(la_store_t *s, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  int r = 0;
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) r = la__sqlerr(s, what);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return r;
}

static void la__done(sqlite3_stmt *st) {
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
}

/* Binds a string truncated to at most max bytes (NULL: ""). */
static void la__bind_text(sqlite3_stmt *st, int i, const char *v, size_t max) {
  if (!v) v = "";
  size_t n = strnlen(v, max);
  sqlite3_bind_text(st, i, v, (int)n, SQLITE_STATIC);
}

static void la__bind_opt_u64(sqlite3_stmt *st, int i, int has, uint64_t v) {
  if (has)
    sqlite3_bind_int64(st, i, la__i64(v));
  else
    sqlite3_bind_null(st, i);
}

/* A column read as double: NULL stands for NaN (SQLite stores NaN as NULL). */
static double la__col_double(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL
             ? NAN
             : sqlite3_column_double(st, i);
}

/* Copies column i (text, NULL: "") into buf, truncated. */
static void la__col_copy(sqlite3_stmt *st, int i, char *buf, size_t cap) {
  const unsigned char *t = sqlite3_column_text(st, i);
  int n = sqlite3_column_bytes(st, i);
  size_t k = t && n > 0 ? (size_t)n : 0;
  if (k >= cap) k = cap - 1;
  if (k) memcpy(buf, t, k);
  buf[k] = 0;
}

/* A column that must be an integer within [lo, hi]. */
static int la__col_int(sqlite3_stmt *st, int i, sqlite3_int64 lo,
                       sqlite3_int64 hi, sqlite3_int64 *v) {
  if (sqlite3_column_type(st, i) != SQLITE_INTEGER) return 0;
  *v = sqlite3_column_int64(st, i);
  return *v >= lo && *v <= hi;
}

/* Write calls outside a batch get a transaction of their own. */
static int la__wbegin(la_store_t *s, int *own) {
  *own = 0;
  if (s->in_batch) {
    if (s->failed) {
      /* keep the first error's text: it is the one that matters */
      return LA_EIO;
    }
    return 0;
  }
  int r = la_store_begin(s);
  if (r == 0) *own = 1;
  return r;
}

static int la__wend(la_store_t *s, int own, int r) {
  if (!own) return r;
  if (r == 0) return la_store_commit(s);
  la_store_rollback(s);
  return r;
}

/* ------------------------------------------------------------ open, close */

static int la__exec(sqlite3 *db, const char *sql, char *why, size_t n,
                    const char *path, const char *what) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    la__fmt(why, n, "%s: %s: %s", path, what, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return LA_EIO;
  }
  return 0;
}

/* Runs a one-value query; *v gets its integer (or text into txt). Returns
 * 1 with a row, 0 without, LA_EIO on error. */
static int la__query1(sqlite3 *db, const char *sql, sqlite3_int64 *v, char *txt,
                      size_t txt_len) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return LA_EIO;
  int rc = sqlite3_step(st), r;
  if (rc == SQLITE_ROW) {
    if (v) *v = sqlite3_column_int64(st, 0);
    if (txt) la__col_copy(st, 0, txt, txt_len);
    r = sqlite3_column_type(st, 0) == SQLITE_NULL ? 2 : 1;
  } else {
    r = rc == SQLITE_DONE ? 0 : LA_EIO;
  }
  sqlite3_finalize(st);
  return r;
}

/* Creates the schema, or checks the existing one's version. */
static int la__schema(sqlite3 *db, const char *path, char *why, size_t n) {
  sqlite3_int64 v = 0;
  const char *has_sql =
      "SELECT count(*) FROM sqlite_master WHERE type ="
      " 'table' AND name = 'schema_version'";
  int r = la__query1(db, has_sql, &v, NULL, 0);
  if (r < 0) goto sqlfail;
  if (v == 0) {
    /* New database: create under the write lock, checking again there. */
    if (la__exec(db, "BEGIN IMMEDIATE", why, n, path, "creating the schema"))
      return LA_EIO;
    sqlite3_int64 ntab = 0;
    r = la__query1(db, "SELECT count(*) FROM sqlite_master", &ntab, NULL, 0);
    if (r < 0) {
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      goto sqlfail;
    }
    if (ntab > 0) {
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      r = la__query1(db, has_sql, &v, NULL, 0);
      if (r < 0) goto sqlfail;
      if (v == 0) {
        la__fmt(why, n,
                "%s: not an LA database (it has tables but no "
                "schema_version table)",
                path);
        return LA_EIO;
      }
      /* created by another process meanwhile: check it below */
    } else {
      char sql[128];
      snprintf(sql, sizeof sql,
               "INSERT INTO schema_version VALUES (%d, %lld);"
               "PRAGMA application_id = %d;",
               LA_STORE_SCHEMA_VERSION, (long long)la__now_ns(),
               LA_STORE_APPLICATION_ID);
      if (la__exec(db, la__schema_sql, why, n, path, "creating the schema") ||
          la__exec(db, la__missing_sql, why, n, path, "creating the schema") ||
          la__exec(db, la__robust_sql, why, n, path, "creating the schema") ||
          la__exec(db, sql, why, n, path, "creating the schema") ||
          la__exec(db, "COMMIT", why, n, path, "creating the schema")) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return LA_EIO;
      }
      return 0;
    }
  }
  r = la__query1(db, "SELECT max(version) FROM schema_version", &v, NULL, 0);
  if (r < 0) goto sqlfail;
  if (r != 1) {
    la__fmt(why, n, "%s: schema_version table is empty", path);
    return LA_EIO;
  }
  if (v > LA_STORE_SCHEMA_VERSION) {
    la__fmt(why, n,
            "%s: database schema version %lld is newer than this program's "
            "(%d); use a newer LA or another database file",
            path, (long long)v, LA_STORE_SCHEMA_VERSION);
    return LA_EVERSION;
  }
  if (v < LA_STORE_SCHEMA_VERSION) {
    la__fmt(why, n,
            "%s: database schema version %lld is older than %d and cannot "
            "be upgraded",
            path, (long long)v, LA_STORE_SCHEMA_VERSION);
    return LA_EVERSION;
  }
  if (la__exec(db, la__missing_sql, why, n, path, "adding the missing table"))
    return LA_EIO;
  return la__exec(db, la__robust_sql, why, n, path,
                  "adding the robust and rank_fidelity tables");
sqlfail:
  la__fmt(why, n, "%s: %s", path, sqlite3_errmsg(db));
  return LA_EIO;
}

int la_store_open(const char *path, int synchronous_full, la_store_t **out,
                  char *why, size_t why_len) {
  if (why && why_len) why[0] = 0;
  if (!path || !path[0] || !out) {
    la__fmt(why, why_len, "no database path");
    return LA_EINVAL;
  }
  *out = NULL;
  la_store_t *s = calloc(1, sizeof *s);
  if (!s) {
    la__fmt(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  int r = LA_EIO, memory = strcmp(path, ":memory:") == 0;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
    la__fmt(why, why_len, "%s: %s", path,
            s->db ? sqlite3_errmsg(s->db) : "cannot open");
    goto fail;
  }
  sqlite3_busy_timeout(s->db, 5000);
  /* The first read tells a file that is not a database. */
  sqlite3_int64 appid = 0;
  if (la__query1(s->db, "PRAGMA application_id", &appid, NULL, 0) < 0) {
    la__fmt(why, why_len, "%s: %s", path, sqlite3_errmsg(s->db));
    goto fail;
  }
  if (appid != 0 && appid != LA_STORE_APPLICATION_ID) {
    la__fmt(why, why_len,
            "%s: not an LA database (SQLite application_id 0x%llx)", path,
            (unsigned long long)appid);
    goto fail;
  }
  char mode[32] = "";
  if (la__query1(s->db, "PRAGMA journal_mode = WAL", NULL, mode, sizeof mode) <
      0) {
    la__fmt(why, why_len, "%s: %s", path, sqlite3_errmsg(s->db));
    goto fail;
  }
  if (strcmp(mode, "wal") != 0 && !memory) {
    la__fmt(why, why_len,
            "%s: cannot use WAL mode (journal_mode is '%s'); put the "
            "database on a local file system",
            path, mode);
    goto fail;
  }
  if (la__exec(s->db,
               synchronous_full ? "PRAGMA synchronous = FULL"
                                : "PRAGMA synchronous = NORMAL",
               why, why_len, path, "setting synchronous") ||
      la__exec(s->db, "PRAGMA foreign_keys = ON", why, why_len, path,
               "enabling foreign keys") ||
      la__exec(s->db, "PRAGMA cache_size = -16384", why, why_len, path,
               "setting the cache size"))
    goto fail;
  r = la__schema(s->db, path, why, why_len);
  if (r) goto fail;
  r = LA_EIO;
  for (int i = 0; i < S__COUNT; i++) {
    if (sqlite3_prepare_v3(s->db, la__sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                           &s->st[i], NULL) != SQLITE_OK) {
      la__fmt(why, why_len, "%s: schema check failed: %s", path,
              sqlite3_errmsg(s->db));
      goto fail;
    }
  }
  const char *fe = getenv(LA__FAIL_ENV);
  while (fe && *fe && s->n_fail_at < LA__FAIL_MAX) {
    char *end = NULL;
    unsigned long long k = strtoull(fe, &end, 10);
    if (end == fe) break;
    s->fail_at[s->n_fail_at++] = k;
    fe = *end == ',' ? end + 1 : end;
  }
  *out = s;
  return 0;
fail:
  la_store_close(s);
  return r;
}

void la_store_close(la_store_t *s) {
  if (!s) return;
  if (s->in_batch) la_store_rollback(s);
  for (int i = 0; i < S__COUNT; i++) sqlite3_finalize(s->st[i]);
  sqlite3_close(s->db);
  free(s);
}

const char *la_store_errmsg(la_store_t *s) {
  return s ? s->err : "";
}

/* ----------------------------------------------------------- transactions */

int la_store_begin(la_store_t *s) {
  if (!s) return LA_EINVAL;
  if (s->in_batch) {
    la__fmt(s->err, sizeof s->err, "a batch is already open");
    return LA_EINVAL;
  }
  s->err[0] = 0;
  s->failed = 0;
  if (la__run(s, s->st[S_BEGIN], "BEGIN")) return LA_EIO;
  s->in_batch = 1;
  return 0;
}

int la_store_rollback(la_store_t *s) {
  if (!s) return LA_EINVAL;
  int r = 0;
  s->in_batch = 0;
  s->failed = 0;
  if (!sqlite3_get_autocommit(s->db)) {
    int rc = sqlite3_step(s->st[S_ROLLBACK]);
    if (rc != SQLITE_DONE) {
      la__fmt(s->err, sizeof s->err, "ROLLBACK: %s", sqlite3_errmsg(s->db));
      r = LA_EIO;
    }
    sqlite3_reset(s->st[S_ROLLBACK]);
  }
  return r;
}

int la_store_commit(la_store_t *s) {
  if (!s) return LA_EINVAL;
  if (!s->in_batch) {
    la__fmt(s->err, sizeof s->err, "commit without a batch");
    return LA_EINVAL;
  }
  if (s->failed) {
    la_store_rollback(s);
    return LA_EIO;
  }
  s->n_commits++;
  for (int i = 0; i < s->n_fail_at; i++)
    if (s->fail_at[i] == s->n_commits) {
      la__fmt(s->err, sizeof s->err,
              "COMMIT: injected failure of commit %llu (%s)",
              (unsigned long long)s->n_commits, LA__FAIL_ENV);
      la_store_rollback(s);
      return LA_EIO;
    }
  int rc = sqlite3_step(s->st[S_COMMIT]);
  if (rc != SQLITE_DONE) {
    la__fmt(s->err, sizeof s->err, "COMMIT: %s", sqlite3_errmsg(s->db));
    sqlite3_reset(s->st[S_COMMIT]);
    la_store_rollback(s);
    return LA_EIO;
  }
  sqlite3_reset(s->st[S_COMMIT]);
  s->in_batch = 0;
  return 0;
}

/* ------------------------------------------------------------------ writes */

/* Known nprocs of app_id into *nprocs (0: unknown). Returns 1 when the
 * application row exists, 0 when not, LA_EIO. */
static int la__app_nprocs(la_store_t *s, const char *app_id, uint32_t *nprocs) {
  sqlite3_stmt *st = s->st[S_APP_NPROCS];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st), r;
  if (rc == SQLITE_ROW) {
    sqlite3_int64 v = sqlite3_column_int64(st, 0);
    *nprocs = v > 0 && v <= (sqlite3_int64)LA_MAX_RANKS ? (uint32_t)v : 0;
    r = 1;
  } else if (rc == SQLITE_DONE) {
    *nprocs = 0;
    r = 0;
  } else {
    r = la__sqlerr(s, "reading the application");
  }
  la__done(st);
  return r;
}

/* Creates the application row (nprocs unknown) if there is none. */
static int la__app_lazy(la_store_t *s, const char *app_id, uint64_t now) {
  sqlite3_stmt *st = s->st[S_APP_LAZY];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(now));
  return la__run(s, st, "creating the application");
}

int la_store_rank_start(la_store_t *s, const La__RankStart *m) {
  if (!s || !m || !m->app_id || !m->app_id[0]) return LA_EINVAL;
  int own, r = la__wbegin(s, &own);
  if (r) return r;
  uint32_t known = 0;
  r = la__app_nprocs(s, m->app_id, &known);
  if (r < 0) goto out;
  r = 0;
  if (known && known != m->nprocs) {
    la__fmt(s->err, sizeof s->err,
            "RankStart of %s rank %u says nprocs %u, but the application "
            "has %u",
            m->app_id, m->rank, m->nprocs, known);
    r = LA_EPROTO;
    goto out;
  }
  uint64_t now = la__now_ns();
  if (!known) {
    sqlite3_stmt *st = s->st[S_APP_START];
    const La__CompactParams *c = m->compact;
    la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
    la__bind_text(st, 2, m->app_name, 128);
    sqlite3_bind_int64(st, 3, m->nprocs);
    la__bind_text(st, 4, m->metric, 128);
    la__bind_text(st, 5, m->unit, 32);
    sqlite3_bind_int64(st, 6, m->has_period ? m->period : 0);
    if (c) {
      sqlite3_bind_int64(st, 7, c->has_mode ? (int)c->mode : 0);
      if (c->has_cv) sqlite3_bind_double(st, 8, c->cv);
      if (c->has_epsilon) sqlite3_bind_double(st, 9, c->epsilon);
      sqlite3_bind_int64(st, 10, c->has_relative && c->relative);
      sqlite3_bind_int64(st, 11, c->has_connected && c->connected);
      sqlite3_bind_int64(st, 12, c->has_outliers && c->outliers);
    }
    if (m->n_grid == 3) {
      for (int i = 0; i < 3; i++)
        sqlite3_bind_int64(st, 13 + i, la__i64(m->grid[i]));
    }
    sqlite3_bind_int64(st, 16, la__i64(now));
    if ((r = la__run(s, st, "storing the application"))) goto out;
  }
  sqlite3_stmt *st = s->st[S_RANK_START];
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, m->rank);
  sqlite3_bind_int64(st, 3, la__i64(m->n_elements));
  la__bind_text(st, 4, m->host, 128);
  if (m->has_pid) sqlite3_bind_int64(st, 5, m->pid);
  la__bind_opt_u64(st, 6, m->has_t_start_ns, m->t_start_ns);
  sqlite3_bind_int64(st, 7, la__i64(m->seq));
  r = la__run(s, st, "storing the rank start");
  if (r || !(m->has_timer_res_ns || m->interference)) goto out;
  st = s->st[S_FID_INS]; /* the first RankStart of the rank wins */
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, m->rank);
  if (m->has_timer_res_ns && isfinite(m->timer_res_ns) && m->timer_res_ns >= 0)
    sqlite3_bind_double(st, 3, m->timer_res_ns);
  if (m->interference) la__bind_text(st, 4, m->interference, 256);
  r = la__run(s, st, "storing the rank's timer resolution");
out:
  return la__wend(s, own, r);
}

int la_store_rank_end(la_store_t *s, const La__RankEnd *m, int *was_new) {
  if (was_new) *was_new = 0;
  if (!s || !m || !m->app_id || !m->app_id[0]) return LA_EINVAL;
  int own, r = la__wbegin(s, &own);
  if (r) return r;
  if ((r = la__app_lazy(s, m->app_id, la__now_ns()))) goto out;
  sqlite3_stmt *st = s->st[S_RANK_LAZY];
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, m->rank);
  if ((r = la__run(s, st, "creating the rank"))) goto out;
  st = s->st[S_RANK_END];
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, m->rank);
  if (m->reason) la__bind_text(st, 3, m->reason, 256);
  la__bind_opt_u64(st, 4, m->has_cycles, m->cycles);
  la__bind_opt_u64(st, 5, m->has_skipped, m->skipped);
  la__bind_opt_u64(st, 6, m->has_t_end_ns, m->t_end_ns);
  sqlite3_bind_int64(st, 7, la__i64(m->seq));
  r = la__run(s, st, "storing the rank end");
  if (r == 0 && was_new) *was_new = sqlite3_changes(s->db) > 0;
out:
  return la__wend(s, own, r);
}

/* The robust row of a new trace, when it carries robust weights or
 * interference figures (the codec checked them). Returns 0 or LA_EIO. */
static int la__robust_put(la_store_t *s, const La__CompactTrace *t) {
  if (!t->robust_stats && !t->has_interference && !t->has_flagged &&
      !t->has_flagged_time)
    return 0;
  sqlite3_stmt *st = s->st[S_ROBUST_INS];
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(t->cycle_tag));
  sqlite3_bind_int64(st, 3, t->rank);
  if (t->robust_stats && t->robust_segments.data) {
    sqlite3_bind_blob(st, 4, t->robust_segments.data,
                      (int)t->robust_segments.len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, la__i64(t->robust_stats->count));
    sqlite3_bind_double(st, 6, t->robust_stats->sum);
    sqlite3_bind_double(st, 7, t->robust_stats->min);
    sqlite3_bind_double(st, 8, t->robust_stats->max);
  }
  if (t->has_interference) sqlite3_bind_double(st, 9, t->interference);
  la__bind_opt_u64(st, 10, t->has_flagged, t->flagged);
  if (t->has_flagged_time) sqlite3_bind_double(st, 11, t->flagged_time);
  return la__run(s, st, "storing the trace's robust weights");
}

int la_store_trace(la_store_t *s, const La__CompactTrace *t, int *was_new) {
  if (was_new) *was_new = 0;
  if (!s || !t || !t->app_id || !t->app_id[0] || !t->stats ||
      !t->segments.data || t->segments.len == 0 || t->segments.len > INT32_MAX)
    return LA_EINVAL;
  if (t->robust_stats &&
      (!t->robust_segments.data || t->robust_segments.len == 0 ||
       t->robust_segments.len > INT32_MAX))
    return LA_EINVAL;
  if (t->rank >= LA_MAX_RANKS) {
    la__fmt(s->err, sizeof s->err, "trace of %s: rank %u >= %u", t->app_id,
            t->rank, LA_MAX_RANKS);
    return LA_EPROTO;
  }
  int own, r = la__wbegin(s, &own);
  if (r) return r;
  uint64_t now = la__now_ns();
  uint32_t nprocs = 0;
  r = la__app_nprocs(s, t->app_id, &nprocs); /* does the app row exist? */
  if (r < 0) goto out;
  if (r == 0 && (r = la__app_lazy(s, t->app_id, now))) goto out;
  r = 0;
  /* A rank not below a known nprocs is stored all the same (nothing is
   * thrown away); it belongs to no Trace-Set (load_set, open_sets skip it).
   */
  sqlite3_stmt *st = s->st[S_TRACE_INS];
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(t->cycle_tag));
  sqlite3_bind_int64(st, 3, t->rank);
  sqlite3_bind_int64(st, 4, la__i64(t->n_elements));
  sqlite3_bind_int64(st, 5, (int)t->mode);
  sqlite3_bind_blob(st, 6, t->segments.data, (int)t->segments.len,
                    SQLITE_STATIC);
  sqlite3_bind_int64(st, 7, la__i64(t->stats->count));
  sqlite3_bind_double(st, 8, t->stats->sum);
  sqlite3_bind_double(st, 9, t->stats->min);
  sqlite3_bind_double(st, 10, t->stats->max);
  if (t->error) {
    sqlite3_bind_double(st, 11, t->error->max_abs);
    sqlite3_bind_double(st, 12, t->error->rmse);
    sqlite3_bind_double(st, 13, t->error->cv);
  }
  la__bind_opt_u64(st, 14, t->has_t_xfer_ns, t->t_xfer_ns);
  la__bind_opt_u64(st, 15, t->has_rank_seq, t->rank_seq);
  sqlite3_bind_int64(st, 16, la__i64(t->seq));
  sqlite3_bind_int64(st, 17, la__i64(now));
  if ((r = la__run(s, st, "storing the trace"))) goto out;
  if (sqlite3_changes(s->db) == 0) goto out; /* a resend: nothing changes */
  if (was_new) *was_new = 1;
  st = s->st[S_MISS_DEL]; /* a real trace wins over a missing record */
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(t->cycle_tag));
  sqlite3_bind_int64(st, 3, t->rank);
  if ((r = la__run(s, st, "dropping the trace's missing record"))) goto out;
  if ((r = la__robust_put(s, t))) goto out;
  st = s->st[S_SET_TOUCH];
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(t->cycle_tag));
  sqlite3_bind_int64(st, 3, la__i64(now));
  r = la__run(s, st, "recording the trace's cycle");
out:
  r = la__wend(s, own, r);
  if (r && was_new) *was_new = 0;
  return r;
}

int la_store_agent_seq_update(la_store_t *s, const char *host, uint64_t seq) {
  if (!s || !host || !host[0]) return LA_EINVAL;
  int own, r = la__wbegin(s, &own);
  if (r) return r;
  sqlite3_stmt *st = s->st[S_AGENT_UPD];
  la__bind_text(st, 1, host, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(seq));
  sqlite3_bind_int64(st, 3, la__i64(la__now_ns()));
  r = la__run(s, st, "recording the agent's sequence number");
  return la__wend(s, own, r);
}

int la_store_agent_next_seq(la_store_t *s, const char *host,
                            uint64_t *next_seq) {
  if (!s || !host || !host[0] || !next_seq) return LA_EINVAL;
  sqlite3_stmt *st = s->st[S_AGENT_GET];
  la__bind_text(st, 1, host, LA_MAX_ID_LEN);
  int rc = sqlite3_step(st), r = 0;
  if (rc == SQLITE_ROW) {
    sqlite3_int64 v = sqlite3_column_int64(st, 0);
    *next_seq = v > 0 ? (uint64_t)v + 1 : 1;
  } else if (rc == SQLITE_DONE) {
    *next_seq = 1;
  } else {
    r = la__sqlerr(s, "reading the agent's sequence number");
  }
  la__done(st);
  return r;
}

int la_store_missing(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                     uint32_t rank, const char *reason, int from_agent,
                     uint64_t seq, int *was_new) {
  if (was_new) *was_new = 0;
  if (!s || !app_id || !app_id[0] || !reason || !reason[0]) return LA_EINVAL;
  if (rank >= LA_MAX_RANKS) {
    la__fmt(s->err, sizeof s->err, "missing record of %s: rank %u >= %u",
            app_id, rank, LA_MAX_RANKS);
    return LA_EPROTO;
  }
  int own, r = la__wbegin(s, &own);
  if (r) return r;
  uint64_t now = la__now_ns();
  uint32_t nprocs = 0;
  r = la__app_nprocs(s, app_id, &nprocs);
  if (r < 0) goto out;
  if (r == 0 && (r = la__app_lazy(s, app_id, now))) goto out;
  sqlite3_stmt *st = s->st[S_MISS_PUT];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  sqlite3_bind_int64(st, 3, rank);
  la__bind_text(st, 4, reason, LA_STORE_REASON_MAX);
  sqlite3_bind_text(st, 5, from_agent ? "agent" : "globalagent", -1,
                    SQLITE_STATIC);
  if (from_agent) sqlite3_bind_int64(st, 6, la__i64(seq));
  sqlite3_bind_int64(st, 7, la__i64(now));
  if ((r = la__run(s, st, "storing the missing record"))) goto out;
  if (sqlite3_changes(s->db) == 0) goto out; /* known already, or a trace */
  if (was_new) *was_new = 1;
  st = s->st[S_MISS_SET];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  sqlite3_bind_int64(st, 3, la__i64(now));
  r = la__run(s, st, "recording the missing record's cycle");
out:
  r = la__wend(s, own, r);
  if (r && was_new) *was_new = 0;
  return r;
}

int la_store_rank_host(la_store_t *s, const char *app_id, uint32_t rank,
                       char *host, size_t cap) {
  if (!s || !app_id || !host || cap == 0) return LA_EINVAL;
  host[0] = 0;
  sqlite3_stmt *st = s->st[S_RANK_HOST];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, rank);
  int rc = sqlite3_step(st), r = 0;
  if (rc == SQLITE_ROW)
    la__col_copy(st, 0, host, cap);
  else if (rc != SQLITE_DONE)
    r = la__sqlerr(s, "reading the rank's host");
  la__done(st);
  if (r == 0 && !host[0]) {
    la__fmt(s->err, sizeof s->err, "no host known for %s rank %u", app_id,
            rank);
    r = LA_ENOTFOUND;
  }
  return r;
}

int la_store_missing_ranks(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, uint32_t nprocs,
                           uint32_t **ranks, size_t *n) {
  if (!s || !app_id || !ranks || !n) return LA_EINVAL;
  *ranks = NULL;
  *n = 0;
  uint32_t *v = NULL;
  size_t cnt = 0, cap = 0;
  int rc, r = 0;
  sqlite3_stmt *st = s->st[S_MISS_RANKS];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  sqlite3_bind_int64(st, 3, nprocs);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    sqlite3_int64 rank;
    if (!la__col_int(st, 0, 0, (sqlite3_int64)nprocs - 1, &rank)) {
      r = la__corrupt(s, "missing record of %s cycle %llu: bad rank", app_id,
                      (unsigned long long)cycle_tag);
      break;
    }
    if (cnt == cap) {
      size_t nc = cap ? cap * 2 : 16;
      uint32_t *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        la__fmt(s->err, sizeof s->err, "out of memory");
        r = LA_ENOMEM;
        break;
      }
      v = nv;
      cap = nc;
    }
    v[cnt++] = (uint32_t)rank;
  }
  if (r == 0 && rc != SQLITE_DONE) r = la__sqlerr(s, "listing missing ranks");
  la__done(st);
  if (r) {
    free(v);
    return r;
  }
  *ranks = v;
  *n = cnt;
  return 0;
}

int la_store_missing_counts(la_store_t *s, la_store_reason_count_t *out,
                            size_t max, size_t *n, uint64_t *total) {
  if (!s || !n || !total || (max && !out)) return LA_EINVAL;
  *n = 0;
  *total = 0;
  int rc, r = 0;
  sqlite3_stmt *st = s->st[S_MISS_COUNTS];
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    sqlite3_int64 c = sqlite3_column_int64(st, 1);
    if (c < 0) c = 0;
    *total += (uint64_t)c;
    if (*n < max) {
      la__col_copy(st, 0, out[*n].reason, sizeof out[*n].reason);
      out[*n].count = (uint64_t)c;
      (*n)++;
    }
  }
  if (rc != SQLITE_DONE) r = la__sqlerr(s, "counting missing records");
  la__done(st);
  return r;
}

static int la__cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int la_store_set_closed(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                        int complete, const uint32_t *missing, size_t n_missing,
                        uint64_t t_closed_ns) {
  if (!s || !app_id || !app_id[0] || (n_missing && !missing) ||
      n_missing > LA_MAX_RANKS)
    return LA_EINVAL;
  /* "3,7": sorted, without duplicates; at most 11 bytes per rank. */
  uint32_t *v = NULL;
  char *text = NULL;
  size_t k = 0, len = 0;
  if (n_missing) {
    v = malloc(n_missing * sizeof *v);
    text = malloc(n_missing * 11 + 1);
    if (!v || !text) {
      free(v);
      free(text);
      la__fmt(s->err, sizeof s->err, "out of memory");
      return LA_ENOMEM;
    }
    memcpy(v, missing, n_missing * sizeof *v);
    qsort(v, n_missing, sizeof *v, la__cmp_u32);
    for (size_t i = 0; i < n_missing; i++) {
      if (i && v[i] == v[i - 1]) continue;
      len += (size_t)sprintf(text + len, k ? ",%u" : "%u", v[i]);
      k++;
    }
  }
  int own, r = la__wbegin(s, &own);
  if (r) goto done;
  if ((r = la__app_lazy(s, app_id, la__now_ns()))) goto out;
  sqlite3_stmt *st = s->st[S_SET_CLOSE];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  sqlite3_bind_int64(st, 3, complete ? 1 : 0);
  sqlite3_bind_int64(st, 4, (sqlite3_int64)k);
  sqlite3_bind_text(st, 5, text ? text : "", (int)len, SQLITE_STATIC);
  sqlite3_bind_int64(st, 6, la__i64(t_closed_ns));
  r = la__run(s, st, "recording the closed Trace-Set");
out:
  r = la__wend(s, own, r);
done:
  free(v);
  free(text);
  return r;
}

/* ----------------------------------------------------------------- queries */

int la_store_apps(la_store_t *s, la_store_app_t **out, size_t *n) {
  if (!s || !out || !n) return LA_EINVAL;
  *out = NULL;
  *n = 0;
  sqlite3_stmt *st = s->st[S_APPS];
  la_store_app_t *v = NULL;
  size_t cnt = 0, cap = 0;
  int rc, r = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (cnt == cap) {
      size_t nc = cap ? cap * 2 : 8;
      la_store_app_t *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        la__fmt(s->err, sizeof s->err, "out of memory");
        r = LA_ENOMEM;
        break;
      }
      v = nv;
      cap = nc;
    }
    la_store_app_t *a = &v[cnt++];
    memset(a, 0, sizeof *a);
    la__col_copy(st, 0, a->app_id, sizeof a->app_id);
    la__col_copy(st, 1, a->app_name, sizeof a->app_name);
    la__col_copy(st, 2, a->metric, sizeof a->metric);
    la__col_copy(st, 3, a->unit, sizeof a->unit);
    sqlite3_int64 x = sqlite3_column_int64(st, 4);
    a->nprocs = x > 0 && x <= (sqlite3_int64)LA_MAX_RANKS ? (uint32_t)x : 0;
    x = sqlite3_column_int64(st, 5);
    a->n_elements_total = x > 0 ? (uint64_t)x : 0;
    x = sqlite3_column_int64(st, 6);
    a->ranks_started = x > 0 && x <= INT32_MAX ? (int)x : 0;
    x = sqlite3_column_int64(st, 7);
    a->ranks_ended = x > 0 && x <= INT32_MAX ? (int)x : 0;
    a->t_start_ns = (uint64_t)sqlite3_column_int64(st, 8);
    uint64_t t_end = (uint64_t)sqlite3_column_int64(st, 9);
    a->cycles = (uint64_t)sqlite3_column_int64(st, 10);
    a->sets_complete = (uint64_t)sqlite3_column_int64(st, 11);
    a->sets_partial = (uint64_t)sqlite3_column_int64(st, 12);
    a->t_last_ns = (uint64_t)sqlite3_column_int64(st, 13);
    if (t_end > a->t_last_ns) a->t_last_ns = t_end;
  }
  if (r == 0 && rc != SQLITE_DONE) r = la__sqlerr(s, "listing applications");
  la__done(st);
  if (r) {
    free(v);
    return r;
  }
  *out = v;
  *n = cnt;
  return 0;
}

/* Signed ranges of the unsigned interval [first, last], in unsigned order:
 * returns how many (0..2). */
static int la__ranges(uint64_t first, uint64_t last, sqlite3_int64 lo[2],
                      sqlite3_int64 hi[2]) {
  const uint64_t top = (uint64_t)INT64_MAX;
  if (first > last) return 0;
  if (last <= top || first > top) {
    lo[0] = la__i64(first);
    hi[0] = la__i64(last);
    return 1;
  }
  lo[0] = la__i64(first);
  hi[0] = INT64_MAX;
  lo[1] = INT64_MIN;
  hi[1] = la__i64(last);
  return 2;
}

int la_store_cycles(la_store_t *s, const char *app_id, uint64_t first,
                    uint64_t last, la_store_cycle_t **out, size_t *n) {
  if (!s || !app_id || !out || !n) return LA_EINVAL;
  *out = NULL;
  *n = 0;
  sqlite3_int64 lo[2], hi[2];
  int nr = la__ranges(first, last, lo, hi), r = 0;
  la_store_cycle_t *v = NULL;
  size_t cnt = 0, cap = 0;
  sqlite3_stmt *st = s->st[S_CYCLES];
  for (int k = 0; k < nr && r == 0; k++) {
    sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, lo[k]);
    sqlite3_bind_int64(st, 3, hi[k]);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (cnt == cap) {
        size_t nc = cap ? cap * 2 : 64;
        la_store_cycle_t *nv = realloc(v, nc * sizeof *nv);
        if (!nv) {
          la__fmt(s->err, sizeof s->err, "out of memory");
          r = LA_ENOMEM;
          break;
        }
        v = nv;
        cap = nc;
      }
      la_store_cycle_t *c = &v[cnt++];
      sqlite3_int64 present, missing, nprocs;
      c->cycle_tag = (uint64_t)sqlite3_column_int64(st, 0);
      c->closed = sqlite3_column_int64(st, 1) != 0;
      c->complete = c->closed && sqlite3_column_int64(st, 2) != 0;
      present = sqlite3_column_int64(st, 3);
      missing = sqlite3_column_int64(st, 4);
      nprocs = sqlite3_column_int64(st, 5);
      if (present < 0 || present > (sqlite3_int64)LA_MAX_RANKS) present = 0;
      if (nprocs < 0 || nprocs > (sqlite3_int64)LA_MAX_RANKS) nprocs = 0;
      if (missing < 0 || missing > (sqlite3_int64)LA_MAX_RANKS) missing = 0;
      c->ranks_present = (uint32_t)present;
      if (!c->closed) missing = nprocs > present ? nprocs - present : 0;
      c->n_missing = (uint32_t)missing;
      la__col_copy(st, 6, c->reasons, sizeof c->reasons);
    }
    if (r == 0 && rc != SQLITE_DONE) r = la__sqlerr(s, "listing cycles");
    la__done(st);
  }
  if (r) {
    free(v);
    return r;
  }
  *out = v;
  *n = cnt;
  return 0;
}

int la_store_latest_cycle(la_store_t *s, const char *app_id, int complete_only,
                          uint64_t *cycle_tag) {
  if (!s || !app_id || !cycle_tag || complete_only < 0 || complete_only > 2)
    return LA_EINVAL;
  /* Tags >= 2^63 (negative in SQLite) are the largest: look there first. */
  const sqlite3_int64 lo[2] = {INT64_MIN, 0}, hi[2] = {-1, INT64_MAX};
  sqlite3_stmt *st = s->st[S_LATEST];
  for (int k = 0; k < 2; k++) {
    sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, lo[k]);
    sqlite3_bind_int64(st, 3, hi[k]);
    sqlite3_bind_int64(st, 4, complete_only);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      *cycle_tag = (uint64_t)sqlite3_column_int64(st, 0);
      la__done(st);
      return 0;
    }
    if (rc != SQLITE_DONE) {
      int r = la__sqlerr(s, "finding the latest cycle");
      la__done(st);
      return r;
    }
    la__done(st);
  }
  la__fmt(s->err, sizeof s->err, "no such cycle of %s", app_id);
  return LA_ENOTFOUND;
}

int la_store_app_ranks_ended(la_store_t *s, const char *app_id,
                             uint32_t *nprocs, uint32_t *ended) {
  if (!s || !app_id || !nprocs || !ended) return LA_EINVAL;
  sqlite3_stmt *st = s->st[S_ENDED];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st), r = 0;
  if (rc == SQLITE_ROW) {
    sqlite3_int64 a = sqlite3_column_int64(st, 0);
    sqlite3_int64 e = sqlite3_column_int64(st, 1);
    *nprocs = a > 0 && a <= (sqlite3_int64)LA_MAX_RANKS ? (uint32_t)a : 0;
    *ended = e > 0 && e <= (sqlite3_int64)LA_MAX_RANKS ? (uint32_t)e : 0;
  } else if (rc == SQLITE_DONE) {
    la__fmt(s->err, sizeof s->err, "no application %s", app_id);
    r = LA_ENOTFOUND;
  } else {
    r = la__sqlerr(s, "counting ended ranks");
  }
  la__done(st);
  return r;
}

/* ------------------------------------------------------------- load a set */

void la_store_free_set(La__TraceSet *set) {
  if (!set) return;
  for (size_t i = 0; i < set->n_traces; i++) {
    La__CompactTrace *t = set->traces ? set->traces[i] : NULL;
    if (!t) continue;
    free(t->app_id);
    free(t->segments.data);
    free(t->stats);
    free(t->error);
    free(t->robust_segments.data);
    free(t->robust_stats);
    free(t);
  }
  free(set->traces);
  for (size_t i = 0; i < set->n_detection; i++)
    free(set->detection ? set->detection[i] : NULL);
  free(set->detection);
  free(set->timer_res_ns);
  for (size_t i = 0; i < set->n_missing_reasons; i++) {
    La__MissingRank *mr = set->missing_reasons ? set->missing_reasons[i] : NULL;
    if (mr) free(mr->reason);
    free(mr);
  }
  free(set->missing_reasons);
  free(set->missing_ranks);
  free(set->rank_elements);
  free(set->app_id);
  free(set->metric);
  free(set->unit);
  free(set);
}

static char *la__strdup_col(sqlite3_stmt *st, int i, size_t max, int *bad) {
  const unsigned char *t = sqlite3_column_text(st, i);
  int n = sqlite3_column_bytes(st, i);
  if (n < 0 || (size_t)n > max) {
    *bad = 1;
    return NULL;
  }
  char *p = malloc((size_t)n + 1);
  if (!p) return NULL;
  if (n && t) memcpy(p, t, (size_t)n);
  p[t ? n : 0] = 0;
  return p;
}

/* The robust columns (14..21) of an S_LOAD_TRACES row into t: all NULL
 * when the trace has no robust row. Returns 0, LA_EIO (corrupt row),
 * LA_ENOMEM. */
static int la__load_robust(la_store_t *s, sqlite3_stmt *st,
                           La__CompactTrace *t) {
  if (sqlite3_column_type(st, 14) != SQLITE_NULL) {
    const void *blob = sqlite3_column_blob(st, 14);
    int blen = sqlite3_column_bytes(st, 14);
    sqlite3_int64 count;
    if (sqlite3_column_type(st, 14) != SQLITE_BLOB || !blob || blen <= 0 ||
        (unsigned)blen > LA_STORE_MAX_BLOB ||
        !la__col_int(st, 15, (sqlite3_int64)t->n_elements,
                     (sqlite3_int64)t->n_elements, &count))
      return la__corrupt(s,
                         "robust weights of %s cycle %llu rank %u: bad "
                         "segments or stat_count",
                         t->app_id, (unsigned long long)t->cycle_tag, t->rank);
    t->robust_segments.data = malloc((size_t)blen);
    t->robust_stats = malloc(sizeof *t->robust_stats);
    if (!t->robust_segments.data || !t->robust_stats) return LA_ENOMEM;
    memcpy(t->robust_segments.data, blob, (size_t)blen);
    t->robust_segments.len = (size_t)blen;
    t->has_robust_segments = 1;
    la__series_stats__init(t->robust_stats);
    t->robust_stats->count = (uint64_t)count;
    t->robust_stats->sum = la__col_double(st, 16);
    t->robust_stats->min = la__col_double(st, 17);
    t->robust_stats->max = la__col_double(st, 18);
  }
  if (sqlite3_column_type(st, 19) != SQLITE_NULL) {
    t->has_interference = 1;
    t->interference = la__col_double(st, 19);
  }
  if (sqlite3_column_type(st, 20) != SQLITE_NULL) {
    sqlite3_int64 f;
    if (!la__col_int(st, 20, 0, (sqlite3_int64)t->n_elements, &f))
      return la__corrupt(s,
                         "robust weights of %s cycle %llu rank %u: bad "
                         "flagged count",
                         t->app_id, (unsigned long long)t->cycle_tag, t->rank);
    t->has_flagged = 1;
    t->flagged = (uint64_t)f;
  }
  if (sqlite3_column_type(st, 21) != SQLITE_NULL) {
    t->has_flagged_time = 1;
    t->flagged_time = la__col_double(st, 21);
  }
  return 0;
}

/* One trace row of S_LOAD_TRACES into a new message. Returns 0, LA_EIO
 * (corrupt row; s->err says why), LA_ENOMEM. */
static int la__load_trace(la_store_t *s, sqlite3_stmt *st, const char *app_id,
                          uint64_t cycle_tag, La__CompactTrace **out) {
  sqlite3_int64 rank, nel, mode, count;
  if (!la__col_int(st, 0, 0, (sqlite3_int64)LA_MAX_RANKS - 1, &rank))
    return la__corrupt(s, "trace of %s cycle %llu: bad rank", app_id,
                       (unsigned long long)cycle_tag);
  if (!la__col_int(st, 1, 1, (sqlite3_int64)1 << 32, &nel) ||
      !la__col_int(st, 2, LA__COMPACT_MODE__COMPACT_POLYLINE,
                   LA__COMPACT_MODE__COMPACT_LOSSLESS, &mode) ||
      !la__col_int(st, 4, nel, nel, &count))
    return la__corrupt(s,
                       "trace of %s cycle %llu rank %lld: bad n_elements, "
                       "mode or stat_count",
                       app_id, (unsigned long long)cycle_tag, (long long)rank);
  const void *blob = sqlite3_column_blob(st, 3);
  int blen = sqlite3_column_bytes(st, 3);
  if (sqlite3_column_type(st, 3) != SQLITE_BLOB || !blob || blen <= 0 ||
      (unsigned)blen > LA_STORE_MAX_BLOB)
    return la__corrupt(s,
                       "trace of %s cycle %llu rank %lld: segments BLOB of "
                       "%d bytes",
                       app_id, (unsigned long long)cycle_tag, (long long)rank,
                       blen);
  La__CompactTrace *t = calloc(1, sizeof *t);
  if (!t) return LA_ENOMEM;
  *out = t;
  la__compact_trace__init(t);
  t->app_id = strdup(app_id);
  t->segments.data = malloc((size_t)blen);
  t->stats = malloc(sizeof *t->stats);
  int has_err = sqlite3_column_type(st, 8) != SQLITE_NULL ||
                sqlite3_column_type(st, 9) != SQLITE_NULL ||
                sqlite3_column_type(st, 10) != SQLITE_NULL;
  if (has_err) t->error = malloc(sizeof *t->error);
  if (!t->app_id || !t->segments.data || !t->stats || (has_err && !t->error))
    return LA_ENOMEM;
  memcpy(t->segments.data, blob, (size_t)blen);
  t->segments.len = (size_t)blen;
  t->rank = (uint32_t)rank;
  t->cycle_tag = cycle_tag;
  t->n_elements = (uint64_t)nel;
  t->mode = (La__CompactMode)mode;
  la__series_stats__init(t->stats);
  t->stats->count = (uint64_t)count;
  t->stats->sum = la__col_double(st, 5);
  t->stats->min = la__col_double(st, 6);
  t->stats->max = la__col_double(st, 7);
  if (has_err) {
    la__fit_error__init(t->error);
    t->error->max_abs = la__col_double(st, 8);
    t->error->rmse = la__col_double(st, 9);
    t->error->cv = la__col_double(st, 10);
  }
  if (sqlite3_column_type(st, 11) != SQLITE_NULL) {
    t->has_t_xfer_ns = 1;
    t->t_xfer_ns = (uint64_t)sqlite3_column_int64(st, 11);
  }
  if (sqlite3_column_type(st, 12) != SQLITE_NULL) {
    t->has_rank_seq = 1;
    t->rank_seq = (uint64_t)sqlite3_column_int64(st, 12);
  }
  t->seq = (uint64_t)sqlite3_column_int64(st, 13);
  return la__load_robust(s, st, t);
}

/* The missing records of a set into set->missing_reasons, by rank (ranks
 * >= nprocs left out when nprocs is known). Returns 0, LA_EIO, LA_ENOMEM. */
static int la__load_missing(la_store_t *s, const char *app_id,
                            uint64_t cycle_tag, sqlite3_int64 nprocs,
                            La__TraceSet *set) {
  size_t cap = 0;
  int rc, r = 0, bad = 0;
  sqlite3_int64 prev = -1;
  sqlite3_stmt *st = s->st[S_LOAD_MISSING];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    sqlite3_int64 rank;
    if (!la__col_int(st, 0, 0, (sqlite3_int64)LA_MAX_RANKS - 1, &rank) ||
        rank <= prev) {
      r = la__corrupt(s, "missing records of %s cycle %llu: bad rank", app_id,
                      (unsigned long long)cycle_tag);
      break;
    }
    prev = rank;
    if (nprocs && rank >= nprocs) continue;
    if (set->n_missing_reasons == cap) {
      size_t nc = cap ? cap * 2 : 8;
      La__MissingRank **nv = realloc(set->missing_reasons, nc * sizeof *nv);
      if (!nv) {
        r = LA_ENOMEM;
        break;
      }
      set->missing_reasons = nv;
      cap = nc;
    }
    La__MissingRank *mr = calloc(1, sizeof *mr);
    if (!mr) {
      r = LA_ENOMEM;
      break;
    }
    la__missing_rank__init(mr);
    mr->rank = (uint32_t)rank;
    set->missing_reasons[set->n_missing_reasons++] = mr;
    mr->reason = la__strdup_col(st, 1, LA_STORE_REASON_MAX, &bad);
    if (bad || (mr->reason && !mr->reason[0])) {
      r = la__corrupt(s,
                      "missing record of %s cycle %llu rank %lld: bad "
                      "reason",
                      app_id, (unsigned long long)cycle_tag, (long long)rank);
      break;
    }
    if (!mr->reason) {
      r = LA_ENOMEM;
      break;
    }
  }
  if (r == 0 && rc != SQLITE_DONE)
    r = la__sqlerr(s, "loading the missing records");
  la__done(st);
  return r;
}

/* Timer resolution and detection status per rank (set->nprocs entries,
 * 0 and "" where a rank reported none) when any rank of the application
 * reported them; left empty otherwise. Returns 0, LA_EIO, LA_ENOMEM. */
static int la__load_fidelity(la_store_t *s, const char *app_id,
                             La__TraceSet *set) {
  int rc, r = 0, bad = 0;
  sqlite3_stmt *st = s->st[S_LOAD_FID];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    sqlite3_int64 rank;
    if (!la__col_int(st, 0, 0, INT64_MAX, &rank)) {
      r = la__corrupt(s, "rank_fidelity of %s: bad rank", app_id);
      break;
    }
    if (rank >= set->nprocs) continue;
    if (!set->n_timer_res_ns) {
      size_t n = set->nprocs;
      set->timer_res_ns = calloc(n, sizeof *set->timer_res_ns);
      set->detection = calloc(n, sizeof *set->detection);
      if (!set->timer_res_ns || !set->detection) {
        r = LA_ENOMEM;
        break;
      }
      set->n_timer_res_ns = set->n_detection = n;
      for (size_t i = 0; i < n && r == 0; i++)
        if (!(set->detection[i] = strdup(""))) r = LA_ENOMEM;
      if (r) break;
    }
    double res = sqlite3_column_type(st, 1) == SQLITE_NULL
                     ? 0
                     : sqlite3_column_double(st, 1);
    if (!(isfinite(res) && res >= 0)) {
      r = la__corrupt(s, "rank_fidelity of %s rank %lld: bad timer_res_ns",
                      app_id, (long long)rank);
      break;
    }
    set->timer_res_ns[rank] = res;
    if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
      char *d = la__strdup_col(st, 2, 256, &bad);
      if (bad) {
        r = la__corrupt(s, "rank_fidelity of %s rank %lld: detection too long",
                        app_id, (long long)rank);
        break;
      }
      if (!d) {
        r = LA_ENOMEM;
        break;
      }
      free(set->detection[rank]);
      set->detection[rank] = d;
    }
  }
  if (r == 0 && rc != SQLITE_DONE)
    r = la__sqlerr(s, "loading the ranks' timer resolution");
  la__done(st);
  return r;
}

int la_store_load_set(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                      La__TraceSet **out) {
  if (!s || !app_id || !app_id[0] || !out) return LA_EINVAL;
  *out = NULL;
  La__TraceSet *set = calloc(1, sizeof *set);
  if (!set) goto nomem;
  la__trace_set__init(set);
  int r = 0, bad = 0, rc;
  sqlite3_int64 nprocs = 0;

  /* The application. */
  sqlite3_stmt *st = s->st[S_LOAD_APP];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    if (!la__col_int(st, 0, 0, (sqlite3_int64)LA_MAX_RANKS, &nprocs))
      r = la__corrupt(s, "application %s: bad nprocs", app_id);
    if (r == 0) {
      set->metric = la__strdup_col(st, 1, 128, &bad);
      set->unit = la__strdup_col(st, 2, 128, &bad);
      if (bad)
        r = la__corrupt(s, "application %s: metric or unit too long", app_id);
      else if (!set->metric || !set->unit)
        r = LA_ENOMEM;
    }
  } else if (rc == SQLITE_DONE) {
    la__fmt(s->err, sizeof s->err, "no application %s", app_id);
    r = LA_ENOTFOUND;
  } else {
    r = la__sqlerr(s, "loading the application");
  }
  la__done(st);
  if (r) goto fail;
  set->app_id = strdup(app_id);
  if (!set->app_id) goto nomem;
  set->cycle_tag = cycle_tag;

  /* The close record, if any. */
  st = s->st[S_LOAD_ROW];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    if (sqlite3_column_int64(st, 0) &&
        sqlite3_column_type(st, 2) == SQLITE_INTEGER) {
      set->has_t_complete_ns = 1;
      set->t_complete_ns = (uint64_t)sqlite3_column_int64(st, 2);
    }
  } else if (rc != SQLITE_DONE) {
    r = la__sqlerr(s, "loading the Trace-Set record");
  }
  la__done(st);
  if (r) goto fail;

  /* The traces, by rank. */
  size_t cap = 0;
  sqlite3_int64 prev = -1;
  st = s->st[S_LOAD_TRACES];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    sqlite3_int64 rank = sqlite3_column_int64(st, 0);
    if (nprocs && rank >= nprocs) continue; /* stored before RankStart */
    if (rank <= prev) {
      r = la__corrupt(s, "traces of %s cycle %llu: rank %lld repeated", app_id,
                      (unsigned long long)cycle_tag, (long long)rank);
      break;
    }
    prev = rank;
    if (set->n_traces == cap) {
      size_t nc = cap ? cap * 2 : 16;
      La__CompactTrace **nv = realloc(set->traces, nc * sizeof *nv);
      if (!nv) {
        r = LA_ENOMEM;
        break;
      }
      set->traces = nv;
      cap = nc;
    }
    set->traces[set->n_traces] = NULL;
    r = la__load_trace(s, st, app_id, cycle_tag, &set->traces[set->n_traces]);
    if (set->traces[set->n_traces]) set->n_traces++;
    if (r) break;
  }
  if (r == 0 && rc != SQLITE_DONE) r = la__sqlerr(s, "loading the traces");
  la__done(st);
  if (r) goto fail;

  /* The missing records, by rank (reasons attached below). */
  r = la__load_missing(s, app_id, cycle_tag, nprocs, set);
  if (r) goto fail;
  if (set->n_traces == 0 && set->n_missing_reasons == 0) {
    la__fmt(s->err, sizeof s->err, "no trace of %s cycle %llu", app_id,
            (unsigned long long)cycle_tag);
    r = LA_ENOTFOUND;
    goto fail;
  }

  /* nprocs, missing ranks, completeness. */
  int known = nprocs > 0;
  if (!known) {
    uint32_t hi = 0;
    if (set->n_traces) hi = set->traces[set->n_traces - 1]->rank + 1;
    if (set->n_missing_reasons &&
        set->missing_reasons[set->n_missing_reasons - 1]->rank + 1 > hi)
      hi = set->missing_reasons[set->n_missing_reasons - 1]->rank + 1;
    nprocs = hi;
  }
  set->nprocs = (uint32_t)nprocs;
  size_t n_missing = (size_t)nprocs - set->n_traces;
  if (n_missing) {
    set->missing_ranks = malloc(n_missing * sizeof *set->missing_ranks);
    if (!set->missing_ranks) goto nomem;
    size_t j = 0, k = 0;
    for (uint32_t rk = 0; rk < set->nprocs; rk++) {
      if (j < set->n_traces && set->traces[j]->rank == rk)
        j++;
      else
        set->missing_ranks[k++] = rk;
    }
    set->n_missing_ranks = k;
  }
  /* Keep only the reasons of ranks listed missing (a trace always wins). */
  size_t kept = 0;
  for (size_t i = 0, j = 0; i < set->n_missing_reasons; i++) {
    La__MissingRank *mr = set->missing_reasons[i];
    while (j < set->n_missing_ranks && set->missing_ranks[j] < mr->rank) j++;
    if (j < set->n_missing_ranks && set->missing_ranks[j] == mr->rank) {
      set->missing_reasons[kept++] = mr;
    } else {
      free(mr->reason);
      free(mr);
    }
  }
  set->n_missing_reasons = kept;
  set->complete = known && n_missing == 0;

  /* Elements per rank from the RankStart rows. */
  set->rank_elements = calloc((size_t)nprocs, sizeof *set->rank_elements);
  if (!set->rank_elements) goto nomem;
  set->n_rank_elements = (size_t)nprocs;
  st = s->st[S_LOAD_RANKS];
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    sqlite3_int64 rank, nel;
    if (!la__col_int(st, 0, 0, INT64_MAX, &rank) ||
        !la__col_int(st, 1, 0, (sqlite3_int64)1 << 32, &nel)) {
      r = la__corrupt(s, "ranks of %s: bad rank or n_elements", app_id);
      break;
    }
    if (rank < nprocs) set->rank_elements[rank] = (uint64_t)nel;
  }
  if (r == 0 && rc != SQLITE_DONE) r = la__sqlerr(s, "loading the ranks");
  la__done(st);
  if (r) goto fail;
  if ((r = la__load_fidelity(s, app_id, set))) goto fail;

  char why[200];
  if (la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, why,
                      sizeof why)) {
    r = la__corrupt(s, "Trace-Set %s cycle %llu: %s", app_id,
                    (unsigned long long)cycle_tag, why);
    goto fail;
  }
  *out = set;
  return 0;
nomem:
  la__fmt(s->err, sizeof s->err, "out of memory");
  r = LA_ENOMEM;
fail:
  la_store_free_set(set);
  if (r == LA_ENOMEM) la__fmt(s->err, sizeof s->err, "out of memory");
  return r;
}

/* ------------------------------------------------------------- open sets */

void la_store_free_open_sets(la_store_open_set_t *v, size_t n) {
  if (!v) return;
  for (size_t i = 0; i < n; i++) free(v[i].ranks);
  free(v);
}

static int la__cmp_open(const void *a, const void *b) {
  const la_store_open_set_t *x = a, *y = b;
  int c = strcmp(x->app_id, y->app_id);
  if (c) return c;
  return x->cycle_tag < y->cycle_tag ? -1 : x->cycle_tag > y->cycle_tag;
}

int la_store_open_sets(la_store_t *s, la_store_open_set_t **out, size_t *n) {
  if (!s || !out || !n) return LA_EINVAL;
  *out = NULL;
  *n = 0;
  la_store_open_set_t *v = NULL, *cur = NULL;
  size_t cnt = 0, cap = 0, rcap = 0;
  int rc, r = 0;
  sqlite3_stmt *st = s->st[S_OPEN_SETS];
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *app = (const char *)sqlite3_column_text(st, 0);
    int alen = sqlite3_column_bytes(st, 0);
    uint64_t tag = (uint64_t)sqlite3_column_int64(st, 1);
    sqlite3_int64 np = sqlite3_column_int64(st, 2), rank;
    if (!app || alen <= 0 || alen > (int)LA_MAX_ID_LEN || np < 0 ||
        np > (sqlite3_int64)LA_MAX_RANKS ||
        !la__col_int(st, 4, 0, (sqlite3_int64)LA_MAX_RANKS - 1, &rank)) {
      r = la__corrupt(s,
                      "open Trace-Set row with a bad app_id, nprocs or "
                      "rank");
      break;
    }
    if (!cur || cur->cycle_tag != tag || strcmp(cur->app_id, app) != 0) {
      if (cnt == cap) {
        size_t nc = cap ? cap * 2 : 16;
        la_store_open_set_t *nv = realloc(v, nc * sizeof *nv);
        if (!nv) {
          r = LA_ENOMEM;
          break;
        }
        v = nv;
        cap = nc;
      }
      cur = &v[cnt++];
      memset(cur, 0, sizeof *cur);
      memcpy(cur->app_id, app, (size_t)alen);
      cur->cycle_tag = tag;
      cur->nprocs = (uint32_t)np;
      cur->t_first_ns = (uint64_t)sqlite3_column_int64(st, 3);
      rcap = 0;
    }
    if (cur->nprocs && rank >= cur->nprocs) continue;
    if (cur->n_ranks == rcap) {
      size_t nc = rcap ? rcap * 2 : 8;
      uint32_t *nr = realloc(cur->ranks, nc * sizeof *nr);
      if (!nr) {
        r = LA_ENOMEM;
        break;
      }
      cur->ranks = nr;
      rcap = nc;
    }
    cur->ranks[cur->n_ranks++] = (uint32_t)rank;
  }
  if (r == 0 && rc != SQLITE_DONE) r = la__sqlerr(s, "listing open sets");
  la__done(st);
  if (r) {
    if (r == LA_ENOMEM) la__fmt(s->err, sizeof s->err, "out of memory");
    la_store_free_open_sets(v, cnt);
    return r;
  }
  if (cnt > 1) qsort(v, cnt, sizeof *v, la__cmp_open);
  *out = v;
  *n = cnt;
  return 0;
}

/* ---------------------------------------------------- a set's close state */

int la_store_set_is_closed(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, int *closed) {
  if (!s || !app_id || !closed) return LA_EINVAL;
  *closed = 0;
  sqlite3_stmt *st = s->st[S_SET_STATE];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  sqlite3_bind_int64(st, 2, la__i64(cycle_tag));
  int rc = sqlite3_step(st), r = 0;
  if (rc == SQLITE_ROW) *closed = sqlite3_column_int64(st, 0) != 0;
  else if (rc != SQLITE_DONE) r = la__sqlerr(s, "reading a Trace-Set's state");
  la__done(st);
  return r;
}

/* ------------------------------------------------------ a rank's elements */

int la_store_rank_elements(la_store_t *s, const char *app_id, uint32_t rank,
                           uint64_t *n_elements) {
  if (!s || !app_id || !n_elements) return LA_EINVAL;
  *n_elements = 0;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(s->db,
                         "SELECT n_elements FROM ranks WHERE app_id = ?1"
                         " AND rank = ?2 AND started = 1",
                         -1, &st, NULL) != SQLITE_OK) {
    la__fmt(s->err, sizeof s->err, "reading a rank's element count: %s",
            sqlite3_errmsg(s->db));
    return LA_EIO;
  }
  sqlite3_bind_text(st, 1, app_id, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)rank);
  int rc = sqlite3_step(st), r = 0;
  if (rc == SQLITE_ROW) {
    sqlite3_int64 v = sqlite3_column_int64(st, 0);
    if (v > 0 && v <= (sqlite3_int64)1 << 32) *n_elements = (uint64_t)v;
    else r = LA_ENOTFOUND;
  } else if (rc == SQLITE_DONE) {
    r = LA_ENOTFOUND;
  } else {
    la__fmt(s->err, sizeof s->err, "reading a rank's element count: %s",
            sqlite3_errmsg(s->db));
    r = LA_EIO;
  }
  sqlite3_finalize(st);
  return r;
}
