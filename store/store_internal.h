/* SPDX-License-Identifier: BSD-3-Clause */
/* store_internal.h: what the store's source files share and nothing else
 * includes: the store object, the prepared statements' ids, and the small
 * helpers for errors, transactions, binding and reading columns.
 *
 * The store is split by concern: store.c (open, close, transactions, shared
 * helpers), store_schema.c (schema creation and checks), store_sql.c (the
 * prepared statements' SQL), store_write.c (applications, ranks, traces,
 * missing records, closed sets, agents' sequence numbers), store_query.c
 * (lists, cycles, status queries, open sets) and store_load.c (a stored
 * Trace-Set back into a message). The public interface is store.h.
 */
#ifndef LA_GLOBAL_STORE_INTERNAL_H
#define LA_GLOBAL_STORE_INTERNAL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "la_codec.h" /* LA_MAX_RANKS, LA_MAX_ID_LEN */
#include "store.h"
#include "store_arena.h"
#include "store_db.h"

/* Ids of the statements prepared at open (SQL in store_sql.c). */
enum {
  S_BEGIN,
  S_COMMIT,
  S_ROLLBACK,
  S_APP_NPROCS,
  S_APP_LAZY,
  S_APP_START,
  S_RANK_START,
  S_RANK_REOPEN,
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
  S_MISS_ANY,
  S_MISS_SET,
  S_MISS_RANKS,
  S_LOAD_MISSING,
  S_MISS_COUNTS,
  S_RANK_HOST,
  S_SET_STATE,
  S_ROBUST_INS,
  S_FID_INS,
  S_LOAD_FID,
  S_CHAN_NAME_INS,
  S_CHAN_TRACE_INS,
  S_LOAD_CHAN_NAMES,
  S_LOAD_CHAN_TRACES,
  S_RANK_ELEMENTS,
  S_HOST_RANKS,
  S_OPEN_HOSTS,
  S__COUNT
};

/* The SQL of each statement id (store_sql.c), and where PostgreSQL runs
 * other SQL for it (NULL: the same). */
extern const char *const la__store_sql[S__COUNT];
extern const char *const la__store_sql_pg[S__COUNT];

/* Ids of the history statements (store_history.c; SQL in store_sql.c),
 * prepared on first use. */
enum {
  H_REF,
  H_INS,
  H_PENDING,
  H_DEMOTE_TRACE,
  H_DEMOTE_ROBUST,
  H_DONE,
  H_RESOLVE,
  H_RINS,     /* history_robust: robust references */
  H_RPENDING,
  H_RDONE,
  H_RRESOLVE,
  H_XINS,     /* history_exceptions: a robust reference's exceptions */
  H__COUNT
};
extern const char *const la__store_history_sql[H__COUNT];

/* Ids of the coarse statements (store_coarse.c), prepared on first use. */
enum { C_INS, C_GET, C__COUNT };
#define LA_COARSE_REASON_MAX 256 /* bytes of a coarse cycle's reason */
/* PostgreSQL's own form where it differs (NULL: la__store_history_sql's). */
extern const char *const la__store_history_sql_pg[H__COUNT];

/* Test-only fault injection: the environment variable names the commits
 * (1-based, counting every la_store_commit of this store) that fail as if
 * the disk were full, e.g. "3,6". A full disk or a read-only file cannot be
 * produced reliably in a test; nothing else reads it. */
#define LA__FAIL_ENV "LA_GA_TEST_FAIL_COMMITS"
#define LA__FAIL_MAX 16

/* store_defer.c: a set's new traces in the open batch, not yet counted in
 * its row (n of them, stored at t_first .. t_last); at most LA__TOUCH_MAX
 * sets kept (a batch's traces are of a few sets) */
#define LA__TOUCH_MAX 32
typedef struct la__touch {
  char app_id[LA_MAX_ID_LEN + 1];
  uint64_t tag, t_first, t_last;
  uint32_t n;
} la__touch_t;
/* a new trace's key whose missing record is not yet deleted (app: an
 * index into touch_apps); at most LA__UNMISS_MAX kept */
#define LA__UNMISS_MAX 8192
typedef struct la__unmiss {
  int app;
  uint32_t rank;
  uint64_t tag;
} la__unmiss_t;

/* a trace written at the batch's next flush (la_store_trace_defer): a
 * copy of what the store reads of it, in one allocation from the batch's
 * arena (pend_arena), and its time */
#define LA__PEND_BYTES (64u << 20) /* the deferred copies' bound */
typedef struct la__pend {
  La__CompactTrace t;
  La__SeriesStats stats, robust_stats;
  La__FitError error;
  uint64_t now;
} la__pend_t;

struct la_store {
  la_db_t *db;
  la_db_stmt_t *st[S__COUNT];
  int in_batch; /* between la_store_begin and commit/rollback */
  int failed;   /* a write of the open batch failed with LA_EIO */
  uint64_t n_commits;
  uint64_t fail_at[LA__FAIL_MAX]; /* LA__FAIL_ENV's commit numbers */
  int n_fail_at;
  la_db_stmt_t *hist[H__COUNT]; /* store_history.c, prepared on first use */
  la_db_stmt_t *coarse[C__COUNT]; /* store_coarse.c, the same */
  uint64_t hist_full_cycles;    /* la_store_set_history */
  int hist_rref_gone; /* the same for its robust_ref */
  int hist_ref_gone; /* the trace just checked refers to a cycle whose
                        trace a set stored by representatives emptied:
                        it is stored in full, without a history row */
  /* an application whose row exists (committed, or written by the open
   * batch: forgotten at a rollback): its traces skip the lookup */
  char app_known[LA_MAX_ID_LEN + 1];
  la__touch_t touch[LA__TOUCH_MAX]; /* store_defer.c */
  size_t n_touch, touch_last;
  char touch_apps[LA__TOUCH_MAX][LA_MAX_ID_LEN + 1]; /* unmiss's apps */
  int n_touch_apps;
  la__unmiss_t *unmiss;
  size_t n_unmiss, cap_unmiss;
  la__pend_t **pend; /* store_pending.c: the batch's deferred traces */
  size_t n_pend, cap_pend, pend_bytes;
  la__arena_t pend_arena; /* where they are copied, dropped at the flush */
  int (*pend_flush)(la_store_t *s); /* store_pending.c's writer */
  uint64_t pend_found; /* deferred traces whose key was stored after all */
  char err[512];
};

/* ------------------------------------------------- errors and transactions */

/* snprintf into buf (n bytes; nothing when buf is NULL or n is 0). Here,
 * not in store.c, so that store_schema.c, which store.c calls, needs
 * nothing back from it. */
static inline void la__store_fmt(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void la__store_fmt(char *buf, size_t n, const char *fmt, ...) {
  if (!buf || n == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, n, fmt, ap);
  va_end(ap);
}

/* Records a database error with what failed (call before resetting the
 * statement) and poisons the open batch. Returns LA_EIO. */
int la__store_sqlerr(la_store_t *s, const char *what);

/* Corrupt content read back: records "corrupt database: " and the reason.
 * Returns LA_EIO. */
int la__store_corrupt(la_store_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The error of a step (result rc) that found no row of app_id: for
 * LA_DB_DONE LA_ENOTFOUND with "no application APP_ID", else
 * la__store_sqlerr(s, what). */
int la__store_no_app(la_store_t *s, int rc, const char *app_id,
                     const char *what);

/* Steps a write statement to completion, then resets it and clears its
 * bindings. Returns 0 or LA_EIO (la__store_sqlerr with what). */
int la__store_run(la_store_t *s, la_db_stmt_t *st, const char *what);

/* Starts a write call: inside a batch it joins it (LA_EIO when the batch is
 * poisoned, keeping the first error's text), outside it begins a
 * transaction of its own and sets *own. Returns 0 or an LA_E* code. */
int la__store_wbegin(la_store_t *s, int *own);

/* Ends a write call begun by la__store_wbegin with result r: a transaction
 * of its own is committed when r is 0, rolled back otherwise. Returns r, or
 * the commit's error. */
int la__store_wend(la_store_t *s, int own, int r);

/* Makes room for element n of the array *vp (elements of size bytes,
 * capacity *cap): grows it to twice its capacity, or first elements, when
 * n == *cap. vp is the address of the array pointer; on failure the array
 * is unchanged (the caller still owns and frees it). Returns 0 or
 * LA_ENOMEM (with "out of memory" in s->err). */
int la__store_reserve(la_store_t *s, void *vp, size_t n, size_t *cap,
                      size_t size, size_t first);

/* ---------------------------------------------------- binding and columns */

/* Unsigned values keep their bits in the database's signed INTEGER. */
static inline int64_t la__i64(uint64_t v) {
  return (int64_t)v;
}

/* Resets a read statement and clears its bindings. */
static inline void la__done(la_db_stmt_t *st) {
  la_db_reset(st);
}

/* Binds a string truncated to at most max bytes (NULL: ""). */
static inline void la__bind_text(la_db_stmt_t *st, int i, const char *v,
                                 size_t max) {
  if (!v) v = "";
  size_t n = strnlen(v, max);
  la_db_bind_text(st, i, v, (int)n);
}

/* Binds v when has is set, NULL otherwise. */
static inline void la__bind_opt_u64(la_db_stmt_t *st, int i, int has,
                                    uint64_t v) {
  if (has)
    la_db_bind_int64(st, i, la__i64(v));
  else
    la_db_bind_null(st, i);
}

/* A column read as double: NULL stands for NaN (SQLite stores NaN as NULL). */
static inline double la__col_double(la_db_stmt_t *st, int i) {
  return la_db_column_type(st, i) == LA_DB_NULL ? NAN
                                                : la_db_column_double(st, i);
}

/* Copies column i (text, NULL: "") into buf, truncated. */
static inline void la__col_copy(la_db_stmt_t *st, int i, char *buf,
                                size_t cap) {
  const unsigned char *t = la_db_column_text(st, i);
  int n = la_db_column_bytes(st, i);
  size_t k = t && n > 0 ? (size_t)n : 0;
  if (k >= cap) k = cap - 1;
  if (k) memcpy(buf, t, k);
  buf[k] = 0;
}

/* A column that must be an integer within [lo, hi]: 1 with *v set, else
 * 0. */
static inline int la__col_int(la_db_stmt_t *st, int i, int64_t lo, int64_t hi,
                              int64_t *v) {
  if (la_db_column_type(st, i) != LA_DB_INTEGER) return 0;
  *v = la_db_column_int64(st, i);
  return *v >= lo && *v <= hi;
}

/* ------------------------------------------------------------------ schema */

/* Runs sql on db; on error writes "path: what: message" into why. Returns 0
 * or LA_EIO. */
int la__store_exec(la_db_t *db, const char *sql, char *why, size_t n,
                   const char *path, const char *what);

/* Runs a one-value query; *v (may be NULL) gets its integer, txt (may be
 * NULL) its text, truncated to txt_len. Returns 1 with a row, 2 with a row
 * whose value is NULL, 0 without a row, LA_EIO on error. */
int la__store_query1(la_db_t *db, const char *sql, int64_t *v, char *txt,
                     size_t txt_len);

/* Creates the schema in a new database, or checks the version of an
 * existing one and adds the tables added since version 1 shipped. Returns
 * 0, LA_EVERSION or LA_EIO with the reason in why. */
int la__store_schema(la_db_t *db, const char *path, char *why, size_t n);

/* ------------------------------------------------------ store_query.c */

/* Runs st (parameters: app_id, cycle_tag, nprocs; one column: a rank below
 * nprocs) and collects the ranks into a new array *ranks of *n, then
 * resets st. A bad rank is corrupt ("ROWS of APP cycle N: bad rank"), a
 * failed step la__store_sqlerr(s, what). Returns 0, LA_EIO, LA_ENOMEM. */
int la__store_rank_rows(la_store_t *s, la_db_stmt_t *st, const char *app_id,
                        uint64_t cycle_tag, uint32_t nprocs, const char *rows,
                        const char *what, uint32_t **ranks, size_t *n);

/* ----------------------------------------------- store_shards.c */

/* PostgreSQL: tells the other shards, when the open transaction commits,
 * that (app_id, cycle_tag) was closed (NOTIFY). Nothing on SQLite. Returns
 * 0 or LA_EIO. */
int la__store_notify_closed(la_store_t *s, const char *app_id,
                            uint64_t cycle_tag);

/* ----------------------------------------------- store_numbering.c */

/* The rank_grid row of a RankStart with a grid (nothing without one), in
 * the caller's transaction; the first one of a rank stays. 0 or LA_EIO. */
int la__store_rank_grid(la_store_t *s, const La__RankStart *m);
/* set->grids from the rank_grid rows of app_id (ranks below set->nprocs,
 * increasing). Returns 0, LA_EIO (corrupt rows), LA_ENOMEM. */
int la__store_load_grids(la_store_t *s, const char *app_id, La__TraceSet *set);
/* Frees set->grids as la__store_load_grids made them. */
void la__store_free_grids(La__TraceSet *set);

/* --------------------------------------------------- store_defer.c */

/* A new trace of (app_id, tag) stored at now, in the open
 * batch: counted in the set's row at the next flush. 0 or LA_EIO. */
int la__store_touch(la_store_t *s, const char *app_id, uint64_t tag,
                    uint64_t now);
/* A new trace of (app_id, tag, rank) in the open batch: its key's missing
 * record, if any, is deleted at the next flush. 0 or LA_EIO. */
int la__store_unmiss(la_store_t *s, const char *app_id, uint64_t tag,
                     uint32_t rank);
/* Writes what la__store_touch and la__store_unmiss kept and forgets it:
 * before the commit and before any statement that reads or replaces a set
 * row's n_ranks_present, t_first_ns or t_last_ns, or reads the missing
 * records. 0 or LA_EIO. */
int la__store_defer_flush(la_store_t *s);
/* Forgets it (a rollback), the deferred traces too. */
void la__store_defer_forget(la_store_t *s);
/* la_store_trace's checks of t before anything is written: 0, LA_EINVAL,
 * LA_EPROTO (with the error in s->err). */
int la__store_trace_check(la_store_t *s, const La__CompactTrace *t);
/* la_store_trace's writes of a checked t stored at now (store_write.c);
 * store_defer.c's flush calls it for the deferred traces. */
int la__store_trace_write(la_store_t *s, const La__CompactTrace *t,
                          uint64_t now, int *was_new);

/* ------------------------------------------------- store_history.c */

/* Before a trace is inserted: when it names a history_ref (or a
 * robust_ref), checks that the reference is usable (docs/history.md). A reference to a trace a set
 * stored by representatives emptied (docs/clusters.md) is not refused:
 * s->hist_ref_gone says the trace is kept in full, without a history row.
 * Returns 0, or LA_EPROTO with the reason in s->err (the trace is
 * refused), LA_EIO. */
int la__store_history_check(la_store_t *s, const La__CompactTrace *t);
/* After a new trace was inserted: its history row (when it names a
 * reference) and the demotion of the rank's cycles that left the
 * history.full_cycles window. In the caller's transaction. 0 or LA_EIO. */
int la__store_history_put(la_store_t *s, const La__CompactTrace *t);
/* A loaded trace whose segments (robust: 0, or robust segments: 1) are
 * empty is a reference: fills them from its representative. Returns 0,
 * LA_EIO (no usable representative: corrupt). */
int la__store_history_resolve(la_store_t *s, La__CompactTrace *t, int robust);
/* Finalizes the history statements (la_store_close). */
void la__store_history_close(la_store_t *s);
/* A trace's coarse row (CompactTrace.coarse set: a coarse cycle, its
 * reason), in the caller's transaction; nothing for a full trace. 0 or
 * LA_EIO. */
int la__store_coarse_put(la_store_t *s, const La__CompactTrace *t);
/* A loaded trace's coarse reason into t->coarse (malloc'd) when it has a
 * coarse row. 0, LA_EIO (corrupt row), LA_ENOMEM. */
int la__store_coarse_load(la_store_t *s, La__CompactTrace *t);
/* Finalizes the coarse statements (la_store_close). */
void la__store_coarse_close(la_store_t *s);

#endif /* LA_GLOBAL_STORE_INTERNAL_H */
