/* SPDX-License-Identifier: BSD-3-Clause */
/* store_schema.c: the store's schema (docs/storage.md documents it for
 * users of the sqlite3 shell, psql and Python): creating it in a new
 * database (SQLite's types; the PostgreSQL backend maps them, store_db.h),
 * checking the version of an existing one, and adding in place the tables
 * added since schema version 1 shipped.
 *
 * Deliberately not here: opening the database and its settings (store.c),
 * the statements that read and write the tables (store_sql.c).
 */
#include <stdio.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_time.h"
#include "store_internal.h"

/* The columns of one compacted series: its encoding, the exact statistics
 * of its true values and the error the encoding achieved (a trace's main
 * series, and each channel's). */
#define LA__SERIES_COLUMNS         \
  "  segments BLOB NOT NULL,"      \
  "  stat_count INTEGER NOT NULL," \
  "  stat_sum REAL,"               \
  "  stat_min REAL,"               \
  "  stat_max REAL,"               \
  "  err_max_abs REAL,"            \
  "  err_rmse REAL,"               \
  "  err_cv REAL,"

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
    "  mode INTEGER NOT NULL," LA__SERIES_COLUMNS
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

/* rep_robust (docs/clusters.md): a class member whose robust weights have
 * the shape of its representative's (signature within the set's tol) and
 * whose robust segments were therefore emptied: the scale of its robust
 * series, its exact robust total over the representative's decoded robust
 * total (its robust row's stat_* columns stay exact). A member without
 * such a row keeps its robust segments. */
static const char la__rep_robust_sql[] =
    "CREATE TABLE IF NOT EXISTS rep_robust ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  scale REAL NOT NULL,"
    "  PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;";

/* Tables with a row per trace and a blob (traces, robust, channel_traces)
 * are rowid tables, so that rows are appended in the order they arrive, with
 * their key in a unique index: the ranks of a cycle arrive interleaved, and
 * a table clustered on (app_id, cycle_tag, rank) takes each commit's rows at
 * as many places, rewriting every page it touches into the WAL
 * (docs/storage.md). Stores made before keep the clustered robust and
 * channel_traces tables they have: the statements are the same for both. */

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
    "  UNIQUE (app_id, cycle_tag, rank));"
    "CREATE TABLE IF NOT EXISTS rank_fidelity ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  rank INTEGER NOT NULL,"
    "  timer_res_ns REAL,"
    "  detection TEXT,"
    "  PRIMARY KEY (app_id, rank)) WITHOUT ROWID;";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * rank_channels: per rank that declared channels (LA_channel), their names
 * by channel id, from its RankStart. channel_traces: per stored trace of
 * such a rank (two channels or more), each channel's own series, exact
 * statistics, fit error and robust weights; the trace's row in `traces`
 * holds their per-element sum. An application without channels has no row
 * in either. */
static const char la__channels_sql[] =
    "CREATE TABLE IF NOT EXISTS rank_channels ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  rank INTEGER NOT NULL,"
    "  channel INTEGER NOT NULL,"
    "  name TEXT NOT NULL,"
    "  PRIMARY KEY (app_id, rank, channel)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS channel_traces ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  channel INTEGER NOT NULL," LA__SERIES_COLUMNS
    "  robust_segments BLOB,"
    "  robust_count INTEGER,"
    "  robust_sum REAL,"
    "  robust_min REAL,"
    "  robust_max REAL,"
    "  UNIQUE (app_id, cycle_tag, rank, channel));";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * element_ids: the application's global ids of a rank's elements, one row
 * per chunk the LocalAgent sent (elements first..first+n-1; ids: n
 * little-endian int64); a rank's ids count once the chunks cover its
 * n_elements. rank_grid: per grid-registered rank, its dimensions and,
 * when the application gave them, its origin in the global grid and the
 * global grid's dimensions (NULL otherwise). */
static const char la__numbering_sql[] =
    "CREATE TABLE IF NOT EXISTS element_ids ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  rank INTEGER NOT NULL,"
    "  first INTEGER NOT NULL,"
    "  n INTEGER NOT NULL,"
    "  ids BLOB NOT NULL,"
    "  seq INTEGER,"
    "  PRIMARY KEY (app_id, rank, first)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS rank_grid ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  rank INTEGER NOT NULL,"
    "  nx INTEGER NOT NULL, ny INTEGER NOT NULL, nz INTEGER NOT NULL,"
    "  ox INTEGER, oy INTEGER, oz INTEGER,"
    "  gnx INTEGER, gny INTEGER, gnz INTEGER,"
    "  PRIMARY KEY (app_id, rank)) WITHOUT ROWID;";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * history (docs/history.md): one row per trace that its LocalAgent found
 * within bound of an earlier full trace of the same rank (ref_cycle, a
 * representative: a trace without a history row). While in_full = 1 the
 * trace keeps its own segments; once it leaves the rank's
 * history.full_cycles most recent cycles its segments (and robust
 * segments) become empty and readers get the representative's, and its
 * err_* columns the reference's error (this row's). */
#define LA__HISTORY_COLUMNS                         \
  "  app_id TEXT NOT NULL REFERENCES apps(app_id)," \
  "  cycle_tag INTEGER NOT NULL,"                   \
  "  rank INTEGER NOT NULL,"                        \
  "  ref_cycle INTEGER NOT NULL,"                   \
  "  rank_seq INTEGER NOT NULL,"                    \
  "  in_full INTEGER NOT NULL,"                     \
  "  err_max_abs REAL,"                             \
  "  err_rmse REAL,"                                \
  "  err_cv REAL,"                                  \
  "  PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;"
static const char la__history_sql[] =
    "CREATE TABLE IF NOT EXISTS history (" LA__HISTORY_COLUMNS
    "CREATE INDEX IF NOT EXISTS history_full ON history(app_id, rank,"
    "  rank_seq) WHERE in_full = 1;";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * history_robust (docs/history.md): one row per trace whose robust weights
 * alone its LocalAgent found within the per-element bound of an earlier
 * trace's of the same rank (ref_cycle, a representative), its measured
 * values not: like a history row, but once the trace leaves the window only
 * its robust segments become empty (readers get the representative's
 * robust segments); its segments stay its own. */
static const char la__history_robust_sql[] =
    "CREATE TABLE IF NOT EXISTS history_robust (" LA__HISTORY_COLUMNS
    "CREATE INDEX IF NOT EXISTS history_robust_full ON history_robust(app_id,"
    "  rank, rank_seq) WHERE in_full = 1;";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * history_exceptions (docs/history.md): one row per robust reference (a
 * history_robust row) whose representative is within the per-element bound
 * except at a few elements: the cycle's own robust weights there, a
 * HistoryExceptions message (proto/la.proto). Once the trace is demoted,
 * readers splice them into the representative's robust weights. */
static const char la__history_exc_sql[] =
    "CREATE TABLE IF NOT EXISTS history_exceptions ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  exceptions BLOB NOT NULL,"
    "  PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * rep_members (docs/clusters.md): with store.representatives on, once a
 * Trace-Set closed, one row per rank that is a member but not the
 * representative of one of its behaviour classes: the class (its index in
 * that set), the representative rank and the scale. Such a rank's
 * segments are empty (its stat_* columns stay exact); readers get the
 * representative's values times the scale. */
static const char la__reps_sql[] =
    "CREATE TABLE IF NOT EXISTS rep_members ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  class INTEGER NOT NULL,"
    "  rep_rank INTEGER NOT NULL,"
    "  scale REAL NOT NULL,"
    "  PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * rep_classes (docs/clusters.md): a behaviour class of a set stored by
 * representatives whose members' traces rows were removed: one row per
 * (set, class) with its representative, that one's decoded total (a
 * member's scale is its exact total over it), the element count and the
 * members packed in `members` (store_reps_pack.c: ranks, exact
 * statistics, stamps); rank_min and rank_max bound them. Members with
 * robust weights keep their traces row and a rep_members row instead. */
static const char la__rep_classes_sql[] =
    "CREATE TABLE IF NOT EXISTS rep_classes ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  class INTEGER NOT NULL,"
    "  rep_rank INTEGER NOT NULL,"
    "  rep_total REAL NOT NULL,"
    "  n_elements INTEGER NOT NULL,"
    "  n_members INTEGER NOT NULL,"
    "  rank_min INTEGER NOT NULL,"
    "  rank_max INTEGER NOT NULL,"
    "  members BLOB NOT NULL,"
    "  PRIMARY KEY (app_id, cycle_tag, class));";

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * app_owners: the uid an application id is bound to, from its first
 * RankStart that carried one (RankStart.owner_uid), with that rank's
 * host. refused_ranks: per (application, LocalAgent host, rank), a
 * RankStart of another uid the GlobalAgent refused; that rank's later
 * messages from that host are dropped, and a RankStart of the owner's uid
 * for the same key deletes the row. Neither has a row for applications
 * whose ranks came from LocalAgents that send no uid. */
static const char la__owners_sql[] =
    "CREATE TABLE IF NOT EXISTS app_owners ("
    "  app_id TEXT PRIMARY KEY NOT NULL REFERENCES apps(app_id),"
    "  uid INTEGER NOT NULL,"
    "  host TEXT NOT NULL,"
    "  t_bound_ns INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS refused_ranks ("
    "  app_id TEXT NOT NULL,"
    "  host TEXT NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  uid INTEGER NOT NULL,"
    "  owner_uid INTEGER NOT NULL,"
    "  seq INTEGER,"
    "  t_refused_ns INTEGER NOT NULL,"
    "  PRIMARY KEY (app_id, host, rank)) WITHOUT ROWID;";

/* ------------------------------------------------- creating and checking */

/* Contracts of the functions below: store_internal.h. */

int la__store_exec(la_db_t *db, const char *sql, char *why, size_t n,
                   const char *path, const char *what) {
  if (la_db_exec(db, sql) == 0) return 0;
  la__store_fmt(why, n, "%s: %s: %s", path, what, la_db_errmsg(db));
  return LA_EIO;
}

int la__store_query1(la_db_t *db, const char *sql, int64_t *v, char *txt,
                     size_t txt_len) {
  la_db_stmt_t *st = NULL;
  if (la_db_prepare(db, sql, 0, &st) != 0) return LA_EIO;
  int rc = la_db_step(st), r;
  if (rc == LA_DB_ROW) {
    if (v) *v = la_db_column_int64(st, 0);
    if (txt) la__col_copy(st, 0, txt, txt_len);
    r = la_db_column_type(st, 0) == LA_DB_NULL ? 2 : 1;
  } else {
    r = rc == LA_DB_DONE ? 0 : LA_EIO;
  }
  la_db_finalize(st);
  return r;
}

/* The statements that differ between the backends: does the
 * schema_version table exist, how many tables are there, the lock that
 * serialises creating the schema (PostgreSQL: an advisory lock, held to
 * the transaction's end, so that shards starting together create it once),
 * and what marks the database as LA's. */
typedef struct {
  const char *has_version, *n_tables, *lock, *mark;
} la__dialect_t;

static const la__dialect_t la__sqlite_dialect = {
    "SELECT count(*) FROM sqlite_master WHERE type ="
    " 'table' AND name = 'schema_version'",
    "SELECT count(*) FROM sqlite_master", "BEGIN IMMEDIATE",
    "PRAGMA application_id = %d;"};

static const la__dialect_t la__pg_dialect = {
    "SELECT count(*) FROM information_schema.tables WHERE table_schema ="
    " current_schema() AND table_name = 'schema_version'",
    "SELECT count(*) FROM information_schema.tables WHERE table_schema ="
    " current_schema()",
    "BEGIN; SELECT pg_advisory_xact_lock(1279346481)", "SELECT %d;"};

/* Added later still, created in place (IF NOT EXISTS) like `missing`.
 * coarse (docs/storage.md): one row per trace its LocalAgent took as a
 * coarse cycle (agent.behind = coarse): the reason, "coarse: the
 * LocalAgent was behind (...)". */
static const char la__coarse_sql[] =
    "CREATE TABLE IF NOT EXISTS coarse ("
    "  app_id TEXT NOT NULL REFERENCES apps(app_id),"
    "  cycle_tag INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  reason TEXT NOT NULL,"
    "  PRIMARY KEY (app_id, cycle_tag, rank)) WITHOUT ROWID;";

/* The tables added after version 1, in the order they were added. */
static const struct {
  const char *sql, *what;
} la__added[] = {
    {la__missing_sql, "adding the missing table"},
    {la__robust_sql, "adding the robust and rank_fidelity tables"},
    {la__channels_sql, "adding the rank_channels and channel_traces tables"},
    {la__numbering_sql, "adding the element_ids and rank_grid tables"},
    {la__history_sql, "adding the history table"},
    {la__owners_sql, "adding the app_owners and refused_ranks tables"},
    {la__reps_sql, "adding the rep_members table"},
    {la__rep_robust_sql, "adding the rep_robust table"},
    {la__history_robust_sql, "adding the history_robust table"},
    {la__coarse_sql, "adding the coarse table"},
    {la__history_exc_sql, "adding the history_exceptions table"},
    {la__rep_classes_sql, "adding the rep_classes table"},
};

#define LA__CREATE "CREATE TABLE IF NOT EXISTS "
#define LA__CREATE_TEMP "CREATE TEMP TABLE IF NOT EXISTS "
#define LA__FK " REFERENCES apps(app_id)"

/* A read-only SQLite store (lactl --db) written before the tables of sql
 * existed cannot gain them, yet every statement must prepare: they are
 * created empty in the connection's own temporary schema (a read-only
 * connection may), which the store's statements then read as it had no
 * rows (without their foreign key: the parent of a temporary table must be
 * temporary too). Only when the file lacks them: a temporary table of the
 * same name would hide the file's. 0 or LA_EIO. */
static int la__store_add_temp(la_db_t *db, const char *sql, const char *path,
                              char *why, size_t n) {
  char name[64], q[160], tmp[2048];
  const char *p = strstr(sql, LA__CREATE);
  size_t k = p ? strcspn(p + strlen(LA__CREATE), " (") : 0;
  if (!p || k == 0 || k >= sizeof name) return 0;
  memcpy(name, p + strlen(LA__CREATE), k);
  name[k] = 0;
  snprintf(q, sizeof q,
           "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
           " AND name = '%s'",
           name);
  int64_t have = 0;
  if (la__store_query1(db, q, &have, NULL, 0) < 0) {
    la__store_fmt(why, n, "%s: %s", path, la_db_errmsg(db));
    return LA_EIO;
  }
  if (have) return 0;
  size_t o = 0;
  for (p = sql; *p && o + sizeof LA__CREATE_TEMP < sizeof tmp;) {
    if (!strncmp(p, LA__CREATE, strlen(LA__CREATE))) {
      memcpy(tmp + o, LA__CREATE_TEMP, strlen(LA__CREATE_TEMP));
      o += strlen(LA__CREATE_TEMP);
      p += strlen(LA__CREATE);
    } else if (!strncmp(p, LA__FK, strlen(LA__FK))) {
      p += strlen(LA__FK); /* a temporary table's parent must be one too */
    } else {
      tmp[o++] = *p++;
    }
  }
  if (*p) { /* cannot happen: the schema's statements are short */
    la__store_fmt(why, n, "%s: the %s table's statement is too long", path,
                  name);
    return LA_EIO;
  }
  tmp[o] = 0;
  return la__store_exec(db, tmp, why, n, path,
                        "reading without the tables added later");
}

/* A trace of a rank packed into a rep_classes row (docs/clusters.md) has
 * no traces row, yet it is stored: a later copy of its key inserts
 * nothing, as on a conflict (INSERT OR IGNORE, ON CONFLICT DO NOTHING).
 * Its key is within a class's rank_min..rank_max, has no row and is not
 * recorded missing (every rank of a closed set has one of a row, a packed
 * member or a missing record; a missing rank may still arrive). A key
 * that has a row is written again as before (REPLACE). Created in place;
 * each insert looks up rep_classes by (app_id, cycle_tag) first. */
static const char la__packed_trigger_sql[] =
    "CREATE TRIGGER IF NOT EXISTS traces_packed BEFORE INSERT ON traces"
    " WHEN EXISTS (SELECT 1 FROM rep_classes p WHERE p.app_id = NEW.app_id"
    " AND p.cycle_tag = NEW.cycle_tag AND NEW.rank BETWEEN p.rank_min AND"
    " p.rank_max) AND NOT EXISTS (SELECT 1 FROM traces t WHERE"
    " t.app_id = NEW.app_id AND t.cycle_tag = NEW.cycle_tag"
    " AND t.rank = NEW.rank) AND NOT EXISTS (SELECT 1 FROM missing m WHERE"
    " m.app_id = NEW.app_id AND m.cycle_tag = NEW.cycle_tag"
    " AND m.rank = NEW.rank)"
    " BEGIN SELECT RAISE(IGNORE); END;";
/* PostgreSQL's form (no REPLACE there: a key with a row conflicts anyway) */
static const char la__packed_trigger_pg_sql[] =
    "CREATE OR REPLACE FUNCTION la_traces_packed() RETURNS trigger AS $f$"
    " BEGIN IF EXISTS (SELECT 1 FROM rep_classes p WHERE"
    " p.app_id = NEW.app_id AND p.cycle_tag = NEW.cycle_tag AND NEW.rank"
    " BETWEEN p.rank_min AND p.rank_max) AND NOT EXISTS (SELECT 1 FROM"
    " missing m WHERE m.app_id = NEW.app_id AND m.cycle_tag = NEW.cycle_tag"
    " AND m.rank = NEW.rank) THEN RETURN NULL; END IF; RETURN NEW; END $f$"
    " LANGUAGE plpgsql;"
    " CREATE OR REPLACE TRIGGER traces_packed BEFORE INSERT ON traces"
    " FOR EACH ROW EXECUTE FUNCTION la_traces_packed();";

/* The tables added after version 1, created in place when missing; in a
 * read-only SQLite store, as empty temporary tables. */
static int la__store_add_tables(la_db_t *db, const char *path, char *why,
                                size_t n) {
  int ro = la_db_readonly(db);
  for (size_t i = 0; i < sizeof la__added / sizeof la__added[0]; i++)
    if (ro ? la__store_add_temp(db, la__added[i].sql, path, why, n)
           : la__store_exec(db, la__added[i].sql, why, n, path,
                            la__added[i].what))
      return LA_EIO;
  if (!ro && la__store_exec(db,
                            la_db_kind(db) == LA_DB_PG
                                ? la__packed_trigger_pg_sql
                                : la__packed_trigger_sql,
                            why, n, path, "adding the traces_packed trigger"))
    return LA_EIO;
  return 0;
}

int la__store_schema(la_db_t *db, const char *path, char *why, size_t n) {
  const la__dialect_t *d =
      la_db_kind(db) == LA_DB_PG ? &la__pg_dialect : &la__sqlite_dialect;
  int64_t v = 0;
  int r = la__store_query1(db, d->has_version, &v, NULL, 0);
  if (r < 0) goto sqlfail;
  if (v == 0) {
    /* New database: create under the write lock, checking again there. */
    if (la__store_exec(db, d->lock, why, n, path, "creating the schema"))
      return LA_EIO;
    int64_t ntab = 0;
    r = la__store_query1(db, d->n_tables, &ntab, NULL, 0);
    if (r < 0) {
      la_db_exec(db, "ROLLBACK");
      goto sqlfail;
    }
    if (ntab > 0) {
      la_db_exec(db, "ROLLBACK");
      r = la__store_query1(db, d->has_version, &v, NULL, 0);
      if (r < 0) goto sqlfail;
      if (v == 0) {
        la__store_fmt(why, n,
                      "%s: not an LA database (it has tables but no "
                      "schema_version table)",
                      path);
        return LA_EIO;
      }
      /* created by another process meanwhile: check it below */
    } else {
      char sql[160], mark[64];
      snprintf(mark, sizeof mark, d->mark, LA_STORE_APPLICATION_ID);
      snprintf(sql, sizeof sql,
               "INSERT INTO schema_version VALUES (%d, %lld);%s",
               LA_STORE_SCHEMA_VERSION, (long long)la_realtime_ns(), mark);
      if (la__store_exec(db, la__schema_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__missing_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__robust_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__channels_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__numbering_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__history_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__owners_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__reps_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__rep_robust_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__history_robust_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__coarse_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__history_exc_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, la__rep_classes_sql, why, n, path,
                         "creating the schema") ||
          la__store_exec(db, sql, why, n, path, "creating the schema") ||
          la__store_exec(db, "COMMIT", why, n, path, "creating the schema")) {
        la_db_exec(db, "ROLLBACK");
        return LA_EIO;
      }
      return 0;
    }
  }
  r = la__store_query1(db, "SELECT max(version) FROM schema_version", &v, NULL,
                       0);
  if (r < 0) goto sqlfail;
  if (r != 1) {
    la__store_fmt(why, n, "%s: schema_version table is empty", path);
    return LA_EIO;
  }
  if (v > LA_STORE_SCHEMA_VERSION) {
    la__store_fmt(
        why, n,
        "%s: database schema version %lld is newer than this program's "
        "(%d); use a newer LA or another database file",
        path, (long long)v, LA_STORE_SCHEMA_VERSION);
    return LA_EVERSION;
  }
  if (v < LA_STORE_SCHEMA_VERSION) {
    la__store_fmt(
        why, n,
        "%s: database schema version %lld is older than %d and cannot "
        "be upgraded",
        path, (long long)v, LA_STORE_SCHEMA_VERSION);
    return LA_EVERSION;
  }
  if (la_db_kind(db) != LA_DB_PG) return la__store_add_tables(db, path, why, n);
  if (la_db_readonly(db)) return 0; /* lactl: reads what there is */
  /* PostgreSQL: shards adding the tables at once would collide */
  if (la__store_exec(db, d->lock, why, n, path, "adding tables")) return LA_EIO;
  r = la__store_add_tables(db, path, why, n);
  if (r == 0) r = la__store_exec(db, "COMMIT", why, n, path, "adding tables");
  if (r) la_db_exec(db, "ROLLBACK");
  return r;
sqlfail:
  la__store_fmt(why, n, "%s: %s", path, la_db_errmsg(db));
  return LA_EIO;
}
