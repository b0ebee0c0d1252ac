/* SPDX-License-Identifier: BSD-3-Clause */
/* store_sql.c: the SQL of the statements the store prepares once at open
 * (by the ids of store_internal.h). The schema they run against is in
 * store_schema.c; docs/storage.md documents it.
 *
 * Deliberately only text: binding, stepping and reading the rows is done by
 * the store file of each concern (store_write.c, store_query.c,
 * store_load.c).
 *
 * The SQL is SQLite's and, where the two differ, written in the form
 * PostgreSQL reads too (CASE instead of the scalar max(), comparisons
 * instead of integers as booleans, an alias on every subquery, typed
 * parameters in INSERT ... SELECT); the PostgreSQL backend rewrites the
 * rest (store_db.h).
 */
#include "store_internal.h"

const char *const la__store_sql[S__COUNT] = {
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
    /* A RankStart of an ended rank, sent after its end by the same
     * LocalAgent (a higher sequence number from the same host) for the
     * same process (pid): the rank registered again (its LocalAgent
     * restarted, or LA_finalize and LA_register again). Its end is undone;
     * a resend or an older copy (a lower number) changes nothing, and
     * another process under the same id is a second run, not this. */
    [S_RANK_REOPEN] =
        "UPDATE ranks SET ended = 0, end_reason = NULL, cycles = NULL,"
        " skipped = NULL, t_end_ns = NULL, end_seq = NULL,"
        " n_elements = ?3, pid = ?5, t_start_ns = ?6, start_seq = ?7"
        " WHERE app_id = ?1 AND rank = ?2 AND started = 1 AND ended = 1"
        " AND host = CAST(?4 AS TEXT) AND pid = CAST(?5 AS INTEGER)"
        " AND CAST(?7 AS INTEGER) > 0"
        " AND end_seq > 0 AND CAST(?7 AS INTEGER) > end_seq",
    [S_RANK_LAZY] = "INSERT OR IGNORE INTO ranks(app_id, rank) VALUES (?1, ?2)",
    [S_RANK_END] =
        "UPDATE ranks SET ended = 1, end_reason = ?3, cycles = ?4,"
        " skipped = ?5, t_end_ns = ?6, end_seq = ?7"
        " WHERE app_id = ?1 AND rank = ?2 AND ended = 0"
        " AND (CAST(?7 AS INTEGER) = 0 OR start_seq IS NULL"
        "   OR CAST(?7 AS INTEGER) > start_seq)",
    [S_TRACE_INS] =
        "INSERT OR IGNORE INTO traces(app_id, cycle_tag, rank, n_elements,"
        " mode, segments, stat_count, stat_sum, stat_min, stat_max,"
        " err_max_abs, err_rmse, err_cv, t_xfer_ns, rank_seq, seq,"
        " t_stored_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
        " ?12, ?13, ?14, ?15, ?16, ?17)",
    [S_SET_TOUCH] = /* ?4 new traces, stored from ?3 to ?5 */
        "INSERT INTO trace_sets(app_id, cycle_tag, n_ranks_present,"
        " t_first_ns, t_last_ns) VALUES (?1, ?2, ?4, ?3, ?5)"
        " ON CONFLICT(app_id, cycle_tag) DO UPDATE SET"
        " n_ranks_present = trace_sets.n_ranks_present + ?4,"
        " t_last_ns = excluded.t_last_ns",
    [S_SET_CLOSE] =
        "INSERT INTO trace_sets(app_id, cycle_tag, closed, complete, nprocs,"
        " n_ranks_present, n_missing, missing_ranks, t_closed_ns)"
        " VALUES (?1, ?2, 1, ?3, (SELECT nprocs FROM apps WHERE app_id = ?1),"
        " (SELECT count(*) FROM traces WHERE app_id = ?1 AND cycle_tag = ?2)"
        " + (SELECT coalesce(sum(n_members), 0) FROM rep_classes"
        " WHERE app_id = ?1 AND cycle_tag = ?2),"
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
        " max_seq = CASE WHEN excluded.max_seq > agents.max_seq"
        " THEN excluded.max_seq ELSE agents.max_seq END,"
        " t_updated_ns = excluded.t_updated_ns",
    [S_AGENT_GET] = "SELECT max_seq FROM agents WHERE host = ?1",
    [S_APPS] =
        "SELECT a.app_id, a.app_name, a.metric, a.unit, a.nprocs,"
        " coalesce(r.n_el, 0), coalesce(r.started, 0), coalesce(r.ended, 0),"
        " r.t_start, r.t_end, coalesce(c.cycles, 0), coalesce(c.complete, 0),"
        " coalesce(c.partial, 0), c.t_last, coalesce(r.lost, 0)"
        " FROM apps a"
        " LEFT JOIN (SELECT app_id,"
        "   sum(CASE WHEN started <> 0 THEN n_elements ELSE 0 END) AS n_el,"
        "   sum(started) AS started, sum(ended) AS ended,"
        "   sum(CASE WHEN ended <> 0 AND end_seq = 0"
        "     AND end_reason LIKE 'LocalAgent % lost' THEN 1 ELSE 0 END)"
        "   AS lost,"
        "   min(t_start_ns) AS t_start, max(t_end_ns) AS t_end"
        "   FROM ranks GROUP BY app_id) r ON r.app_id = a.app_id"
        " LEFT JOIN (SELECT app_id, count(*) AS cycles,"
        "   sum(CASE WHEN closed <> 0 AND complete <> 0 THEN 1 ELSE 0 END)"
        "   AS complete,"
        "   sum(CASE WHEN closed <> 0 AND complete = 0 THEN 1 ELSE 0 END)"
        "   AS partial, max(t_last_ns) AS t_last"
        "   FROM trace_sets GROUP BY app_id) c ON c.app_id = a.app_id"
        " ORDER BY a.app_id",
    [S_CYCLES] =
        "SELECT s.cycle_tag, s.closed, s.complete, s.n_ranks_present,"
        " s.n_missing, a.nprocs, (SELECT group_concat(x, '; ') FROM"
        "   (SELECT reason || ' (' || count(*) || ')' AS x FROM missing m"
        "   WHERE m.app_id = s.app_id AND m.cycle_tag = s.cycle_tag"
        "   AND (a.nprocs = 0 OR m.rank < a.nprocs)"
        "   GROUP BY reason ORDER BY count(*) DESC, reason) g)"
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
     * is stored (the ordered link delivered all its traces before it),
     * unless it says the rank's later cycles arrived ("missing: ..."): then
     * the rank ended after this cycle; or that its LocalAgent was lost
     * ("LocalAgent H lost"). A rank the GlobalAgent ended because its
     * LocalAgent was lost (end_seq 0, that reason) gives its end reason
     * instead. */
    [S_MISS_PUT] =
        "INSERT INTO missing(app_id, cycle_tag, rank, reason, source, seq,"
        " t_recorded_ns)"
        " SELECT CAST(?1 AS TEXT), CAST(?2 AS INTEGER), CAST(?3 AS INTEGER),"
        " CASE WHEN CAST(?5 AS TEXT) <> 'agent'"
        "   AND CAST(?4 AS TEXT) NOT LIKE 'missing:%'"
        "   AND CAST(?4 AS TEXT) NOT LIKE 'LocalAgent % lost%'"
        "   THEN coalesce((SELECT CASE WHEN end_seq = 0"
        "     AND end_reason LIKE 'LocalAgent % lost' THEN end_reason"
        "     ELSE 'rank ended before this cycle' END"
        "     FROM ranks WHERE app_id = ?1 AND rank = ?3 AND ended = 1),"
        "     CAST(?4 AS TEXT))"
        "   ELSE CAST(?4 AS TEXT) END,"
        " CAST(?5 AS TEXT), CAST(?6 AS INTEGER), CAST(?7 AS INTEGER)"
        " WHERE NOT EXISTS (SELECT 1 FROM traces"
        "   WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3)"
        " ON CONFLICT(app_id, cycle_tag, rank) DO UPDATE SET"
        " reason = excluded.reason, source = excluded.source,"
        " seq = excluded.seq, t_recorded_ns = excluded.t_recorded_ns"
        " WHERE missing.source <> 'agent' AND excluded.source = 'agent'",
    [S_MISS_DEL] =
        "DELETE FROM missing WHERE app_id = ?1 AND cycle_tag = ?2"
        " AND rank = ?3",
    /* whether a set has any missing record (the flush deletes none where
     * it has not: store_defer.c) */
    [S_MISS_ANY] =
        "SELECT 1 FROM missing WHERE app_id = ?1 AND cycle_tag = ?2 LIMIT 1",
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
    /* a lost LocalAgent's ranks not ended (a scan of ranks: once per
     * LocalAgent lost) */
    [S_HOST_RANKS] =
        "SELECT app_id, rank FROM ranks WHERE host = ?1 AND started = 1"
        " AND ended = 0 ORDER BY app_id, rank",
    /* the LocalAgents with ranks not ended (a scan of ranks at start) */
    [S_OPEN_HOSTS] =
        "SELECT DISTINCT host FROM ranks WHERE started = 1 AND ended = 0"
        " AND host IS NOT NULL AND host <> '' ORDER BY host",
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
    [S_CHAN_NAME_INS] =
        "INSERT OR IGNORE INTO rank_channels(app_id, rank, channel, name)"
        " VALUES (?1, ?2, ?3, ?4)",
    [S_CHAN_TRACE_INS] =
        "INSERT OR IGNORE INTO channel_traces(app_id, cycle_tag, rank,"
        " channel, segments, stat_count, stat_sum, stat_min, stat_max,"
        " err_max_abs, err_rmse, err_cv, robust_segments, robust_count,"
        " robust_sum, robust_min, robust_max) VALUES (?1, ?2, ?3, ?4, ?5, ?6,"
        " ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    /* the set's channel names: those of its lowest rank that has any */
    [S_LOAD_CHAN_NAMES] =
        "SELECT channel, name FROM rank_channels WHERE app_id = ?1 AND rank ="
        " (SELECT min(rank) FROM rank_channels WHERE app_id = ?1)"
        " ORDER BY channel",
    [S_LOAD_CHAN_TRACES] =
        "SELECT rank, channel, segments, stat_count, stat_sum, stat_min,"
        " stat_max, err_max_abs, err_rmse, err_cv, robust_segments,"
        " robust_count, robust_sum, robust_min, robust_max"
        " FROM channel_traces WHERE app_id = ?1 AND cycle_tag = ?2"
        " ORDER BY rank, channel",
    [S_RANK_ELEMENTS] = "SELECT n_elements FROM ranks WHERE app_id = ?1"
                        " AND rank = ?2 AND started = 1",
};

/* History (store_history.c, docs/history.md): prepared on first use, since
 * a read-only store written before the history table cannot prepare them.
 * H_REF: the referenced trace of the same rank, whether it has robust
 * segments, and whether it is itself a reference. */
const char *const la__store_history_sql[H__COUNT] = {
    [H_REF] =
        "SELECT t.n_elements, t.mode, length(t.segments),"
        " CASE WHEN EXISTS (SELECT 1 FROM robust r WHERE r.app_id = t.app_id"
        "   AND r.cycle_tag = t.cycle_tag AND r.rank = t.rank"
        "   AND length(r.segments) > 0) THEN 1 ELSE 0 END,"
        " CASE WHEN EXISTS (SELECT 1 FROM history h WHERE h.app_id = t.app_id"
        "   AND h.cycle_tag = t.cycle_tag AND h.rank = t.rank) OR EXISTS"
        "   (SELECT 1 FROM history_robust h WHERE h.app_id = t.app_id"
        "   AND h.cycle_tag = t.cycle_tag AND h.rank = t.rank) THEN 1 ELSE 0"
        " END,"
        " CASE WHEN EXISTS (SELECT 1 FROM rep_members m WHERE"
        "   m.app_id = t.app_id AND m.cycle_tag = t.cycle_tag"
        "   AND m.rank = t.rank) THEN 1 ELSE 0 END"
        " FROM traces t WHERE t.app_id = ?1 AND t.cycle_tag = ?2"
        " AND t.rank = ?3",
    [H_INS] =
        "INSERT OR IGNORE INTO history(app_id, cycle_tag, rank, ref_cycle,"
        " rank_seq, in_full, err_max_abs, err_rmse, err_cv)"
        " VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8)",
    [H_PENDING] =
        "SELECT cycle_tag, err_max_abs, err_rmse, err_cv FROM history"
        " WHERE app_id = ?1 AND rank = ?2 AND in_full = 1 AND rank_seq <= ?3",
    /* The row is written again rather than updated in place: a new row id
     * puts the small row beside other small rows, and the old one's leaf
     * page, emptied, goes to the free list for later traces. An update in
     * place would leave each demoted row's ~1 KB local part of its blob
     * free inside a page that only that cycle's rows ever use. */
    [H_DEMOTE_TRACE] =
        "REPLACE INTO traces(app_id, cycle_tag, rank, n_elements, mode,"
        " segments, stat_count, stat_sum, stat_min, stat_max, err_max_abs,"
        " err_rmse, err_cv, t_xfer_ns, rank_seq, seq, t_stored_ns)"
        " SELECT app_id, cycle_tag, rank, n_elements, mode, ?7, stat_count,"
        " stat_sum, stat_min, stat_max, ?4, ?5, ?6, t_xfer_ns, rank_seq, seq,"
        " t_stored_ns FROM traces"
        " WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3",
    /* the same for the robust row (H_DEMOTE_TRACE's reason) */
    [H_DEMOTE_ROBUST] =
        "REPLACE INTO robust(app_id, cycle_tag, rank, segments, stat_count,"
        " stat_sum, stat_min, stat_max, interference, flagged, flagged_time)"
        " SELECT app_id, cycle_tag, rank, ?4, stat_count, stat_sum, stat_min,"
        " stat_max, interference, flagged, flagged_time FROM robust"
        " WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3"
        " AND segments IS NOT NULL",
    [H_DONE] =
        "UPDATE history SET in_full = 0 WHERE app_id = ?1 AND cycle_tag = ?2"
        " AND rank = ?3",
    [H_RESOLVE] =
        "SELECT h.ref_cycle, t.segments, r.segments FROM history h"
        " JOIN traces t ON t.app_id = h.app_id AND t.cycle_tag = h.ref_cycle"
        " AND t.rank = h.rank LEFT JOIN robust r ON r.app_id = h.app_id"
        " AND r.cycle_tag = h.ref_cycle AND r.rank = h.rank"
        " WHERE h.app_id = ?1 AND h.cycle_tag = ?2 AND h.rank = ?3",
    /* robust references: the same for history_robust, whose demotion
     * empties only the robust segments (H_DEMOTE_ROBUST) */
    [H_RINS] =
        "INSERT OR IGNORE INTO history_robust(app_id, cycle_tag, rank,"
        " ref_cycle, rank_seq, in_full, err_max_abs, err_rmse, err_cv)"
        " VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8)",
    [H_RPENDING] =
        "SELECT cycle_tag FROM history_robust WHERE app_id = ?1 AND rank = ?2"
        " AND in_full = 1 AND rank_seq <= ?3",
    [H_RDONE] =
        "UPDATE history_robust SET in_full = 0 WHERE app_id = ?1"
        " AND cycle_tag = ?2 AND rank = ?3",
    [H_RRESOLVE] =
        "SELECT h.ref_cycle, r.segments, x.exceptions FROM history_robust h"
        " LEFT JOIN robust r ON r.app_id = h.app_id"
        " AND r.cycle_tag = h.ref_cycle AND r.rank = h.rank"
        " LEFT JOIN history_exceptions x ON x.app_id = h.app_id"
        " AND x.cycle_tag = h.cycle_tag AND x.rank = h.rank"
        " WHERE h.app_id = ?1 AND h.cycle_tag = ?2 AND h.rank = ?3",
    /* a robust reference's exceptions (history_exceptions) */
    [H_XINS] =
        "INSERT OR IGNORE INTO history_exceptions(app_id, cycle_tag, rank,"
        " exceptions) VALUES (?1, ?2, ?3, ?4)",
};

/* PostgreSQL's forms of the history statements that differ: no REPLACE
 * (and an update writes a new row version there anyway); the parameters'
 * types spelled out. */
const char *const la__store_history_sql_pg[H__COUNT] = {
    [H_DEMOTE_TRACE] =
        "UPDATE traces SET segments = CAST(?7 AS BLOB),"
        " err_max_abs = CAST(?4 AS REAL), err_rmse = CAST(?5 AS REAL),"
        " err_cv = CAST(?6 AS REAL)"
        " WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3",
    [H_DEMOTE_ROBUST] =
        "UPDATE robust SET segments = CAST(?4 AS BLOB) WHERE app_id = ?1"
        " AND cycle_tag = ?2 AND rank = ?3 AND segments IS NOT NULL",
};

/* PostgreSQL: a new trace also drops its key's missing record, counts in
 * its set and stores its robust row (?18 .. ?25, when ?26 is 1) in the same
 * statement (one round trip instead of four; on SQLite store_write.c runs
 * S_MISS_DEL, S_ROBUST_INS and S_SET_TOUCH after it). Its result's row
 * count is 1 for a new trace, 0 for a resend. */
const char *const la__store_sql_pg[S__COUNT] = {
    [S_TRACE_INS] =
        "WITH ins AS (INSERT INTO traces(app_id, cycle_tag, rank, n_elements,"
        " mode, segments, stat_count, stat_sum, stat_min, stat_max,"
        " err_max_abs, err_rmse, err_cv, t_xfer_ns, rank_seq, seq,"
        " t_stored_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
        " ?12, ?13, ?14, ?15, ?16, ?17) ON CONFLICT DO NOTHING"
        " RETURNING app_id, cycle_tag, rank),"
        " del AS (DELETE FROM missing m USING ins WHERE m.app_id ="
        " ins.app_id AND m.cycle_tag = ins.cycle_tag AND m.rank = ins.rank),"
        " tch AS (INSERT INTO trace_sets(app_id, cycle_tag, n_ranks_present,"
        " t_first_ns, t_last_ns) SELECT app_id, cycle_tag, 1, ?17, ?17"
        " FROM ins ON CONFLICT(app_id, cycle_tag) DO UPDATE SET"
        " n_ranks_present = trace_sets.n_ranks_present + 1,"
        " t_last_ns = excluded.t_last_ns),"
        " rob AS (INSERT INTO robust(app_id, cycle_tag, rank, segments,"
        " stat_count, stat_sum, stat_min, stat_max, interference, flagged,"
        " flagged_time) SELECT app_id, cycle_tag, rank, CAST(?18 AS BLOB),"
        " CAST(?19 AS INTEGER), CAST(?20 AS REAL), CAST(?21 AS REAL),"
        " CAST(?22 AS REAL), CAST(?23 AS REAL), CAST(?24 AS INTEGER),"
        " CAST(?25 AS REAL) FROM ins WHERE ?26 = 1 ON CONFLICT DO NOTHING)"
        " SELECT 1 FROM ins",
};
