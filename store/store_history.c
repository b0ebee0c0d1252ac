/* SPDX-License-Identifier: BSD-3-Clause */
/* store_history.c: bounded history in the store (docs/history.md).
 *
 * A LocalAgent that found a cycle within bound of an earlier full trace of
 * the same rank (its representative) names it in the trace
 * (history_ref), or one whose robust weights alone are within the
 * per-element bound of a representative's (robust_ref). Here: the
 * reference is checked before the trace is stored (same application and
 * rank, stored, a representative itself, the same element count and mode,
 * robust weights where the trace has them), a history (history_robust) row
 * records it, and once the trace leaves its rank's full_cycles most recent
 * cycles its own segments (robust segments) are dropped (demoted):
 * readers then get the representative's segments (la__store_history_resolve,
 * called by store_load.c), and its err_* columns say the reference's error.
 * A representative has no history row, so a reference is never followed
 * further than one step, and it is never demoted.
 *
 * Statements are prepared on first use: a store written before the history
 * table, opened read-only, never needs them (it has no empty segments).
 *
 * Deliberately not here: deciding what is within bound (the LocalAgent's
 * history.c has the true values), the rest of a trace's row
 * (store_write.c, store_load.c).
 */
#include <stdlib.h>
#include <string.h>

#include "la_compact_splice.h"
#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"

/* The history statement id, prepared on first use; NULL on failure
 * (la__store_sqlerr recorded it). */
static la_db_stmt_t *la__hst(la_store_t *s, int id) {
  if (s->hist[id]) return s->hist[id];
  const char *sql =
      la_db_kind(s->db) == LA_DB_PG && la__store_history_sql_pg[id]
          ? la__store_history_sql_pg[id]
          : la__store_history_sql[id];
  if (la_db_prepare(s->db, sql, LA_DB_PERSISTENT, &s->hist[id]) != 0) {
    s->hist[id] = NULL;
    la__store_sqlerr(s, "preparing the history statements");
    return NULL;
  }
  return s->hist[id];
}

static void la__bind_key(la_db_stmt_t *st, const char *app_id,
                         uint64_t cycle_tag, uint32_t rank) {
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  la_db_bind_int64(st, 3, rank);
}

void la_store_set_history(la_store_t *s, uint64_t full_cycles) {
  if (s) s->hist_full_cycles = full_cycles;
}

/* Contracts of the functions below: store_internal.h. */

/* Whether cycle ref of t's rank can be t's reference (robust: its robust
 * weights only). 0; LA_EPROTO with the reason in s->err; LA_EIO. *gone: the
 * reference is to a trace a set stored by representatives emptied, so t is
 * kept in full (no history row). */
static int la__check_ref(la_store_t *s, const La__CompactTrace *t,
                         uint64_t ref, int robust, int *gone) {
  const char *refused = NULL;
  *gone = 0;
  if (!t->has_rank_seq)
    refused = "a reference needs the cycle's rank_seq";
  else if (t->n_channels)
    refused = "a trace of several channels cannot be a reference";
  else if (ref == t->cycle_tag)
    refused = "it refers to itself";
  else if (robust && t->has_history_ref)
    refused = "a trace names either a history_ref or a robust_ref";
  else if (robust && !t->robust_stats)
    refused = "the trace has no robust weights";
  char xwhy[200];
  if (!refused && robust && t->robust_exceptions &&
      la_compact_exceptions_check(t->robust_exceptions, t->n_elements, xwhy,
                                  sizeof xwhy) != 0)
    refused = xwhy;
  la_db_stmt_t *st = refused ? NULL : la__hst(s, H_REF);
  if (!refused && !st) return LA_EIO;
  int r = 0;
  if (st) {
    la__bind_key(st, t->app_id, ref, t->rank);
    int rc = la_db_step(st);
    /* the part referenced: its segments, or its robust segments */
    int have = rc == LA_DB_ROW && (robust ? la_db_column_int64(st, 3)
                                          : la_db_column_int64(st, 2) > 0);
    int packed = rc == LA_DB_DONE
                     ? la__store_reps_is_packed(s, t->app_id, ref, t->rank)
                     : 0;
    if (packed < 0) {
      r = packed;
    } else if (packed) {
      /* a member packed by representatives (docs/clusters.md): as an
       * emptied one below, this trace is kept in full */
      *gone = 1;
    } else if (rc == LA_DB_DONE) {
      refused = "that rank has no stored trace of that cycle";
    } else if (rc != LA_DB_ROW) {
      r = la__store_sqlerr(s, "checking the trace's history reference");
    } else if (la_db_column_int64(st, 4)) {
      refused = "that cycle is itself stored as a reference";
    } else if (!have && la_db_column_int64(st, 5)) {
      /* emptied as a member of a set stored by representatives
       * (docs/clusters.md): this trace is kept in full instead */
      *gone = 1;
    } else if (!have) {
      refused = robust ? "that cycle has no robust weights"
                       : "that cycle's trace has no segments";
    } else if ((uint64_t)la_db_column_int64(st, 0) != t->n_elements ||
               la_db_column_int64(st, 1) != (int64_t)t->mode) {
      refused = "that cycle has another element count or compaction mode";
    } else if (!robust && t->robust_stats && !la_db_column_int64(st, 3)) {
      refused = "that cycle has no robust weights";
    }
    la__done(st);
  }
  if (r == 0 && refused) {
    la__store_fmt(s->err, sizeof s->err,
                  "trace of %s rank %u cycle %llu: %s reference to cycle "
                  "%llu refused: %s",
                  t->app_id, t->rank, (unsigned long long)t->cycle_tag,
                  robust ? "robust history" : "history",
                  (unsigned long long)ref, refused);
    r = LA_EPROTO;
  }
  return r;
}

int la__store_history_check(la_store_t *s, const La__CompactTrace *t) {
  s->hist_ref_gone = s->hist_rref_gone = 0;
  int r = 0;
  if (t->robust_exceptions && !t->has_robust_ref) {
    la__store_fmt(s->err, sizeof s->err,
                  "trace of %s rank %u cycle %llu: robust_exceptions "
                  "refused: they come only with a robust_ref",
                  t->app_id, t->rank, (unsigned long long)t->cycle_tag);
    return LA_EPROTO;
  }
  if (t->has_history_ref)
    r = la__check_ref(s, t, t->history_ref, 0, &s->hist_ref_gone);
  if (r == 0 && t->has_robust_ref)
    r = la__check_ref(s, t, t->robust_ref, 1, &s->hist_rref_gone);
  return r;
}

/* Demotes one trace: its segments (and robust segments) dropped, its
 * error the reference's; robust (a robust reference, err unused): only its
 * robust segments. Returns 0 or LA_EIO. */
static int la__demote(la_store_t *s, const char *app_id, uint32_t rank,
                      uint64_t cycle_tag, int robust, const double err[3],
                      const int has_err[3]) {
  la_db_stmt_t *st = NULL;
  int r = 0;
  if (!robust) {
    if (!(st = la__hst(s, H_DEMOTE_TRACE))) return LA_EIO;
    la__bind_key(st, app_id, cycle_tag, rank);
    for (int i = 0; i < 3; i++)
      if (has_err[i]) la_db_bind_double(st, 4 + i, err[i]);
    la_db_bind_blob(st, 7, "", 0); /* empty, not NULL */
    r = la__store_run(s, st, "demoting a trace to its reference");
  }
  if (r == 0 && (st = la__hst(s, H_DEMOTE_ROBUST)) == NULL) r = LA_EIO;
  if (r == 0) {
    la__bind_key(st, app_id, cycle_tag, rank);
    la_db_bind_blob(st, 4, "", 0);
    r = la__store_run(s, st, "demoting a trace's robust weights");
  }
  if (r == 0 && (st = la__hst(s, robust ? H_RDONE : H_DONE)) == NULL)
    r = LA_EIO;
  if (r == 0) {
    la__bind_key(st, app_id, cycle_tag, rank);
    r = la__store_run(s, st, "recording a trace's demotion");
  }
  return r;
}

/* The history row (robust: history_robust row) of a new trace that names a
 * reference. 0 or LA_EIO. */
static int la__history_row(la_store_t *s, const La__CompactTrace *t,
                           int robust) {
  la_db_stmt_t *st = la__hst(s, robust ? H_RINS : H_INS);
  if (!st) return LA_EIO;
  const La__FitError *e = robust ? t->robust_ref_error : t->history_error;
  la__bind_key(st, t->app_id, t->cycle_tag, t->rank);
  la_db_bind_int64(st, 4, la__i64(robust ? t->robust_ref : t->history_ref));
  la_db_bind_int64(st, 5, la__i64(t->rank_seq));
  if (e) {
    la_db_bind_double(st, 6, e->max_abs);
    la_db_bind_double(st, 7, e->rmse);
    la_db_bind_double(st, 8, e->cv);
  }
  int r = la__store_run(s, st, robust
                                   ? "storing the trace's robust reference"
                                   : "storing the trace's history reference");
  if (r != 0 || !robust || !t->robust_exceptions) return r;
  /* its exceptions, as the message (checked by la__check_ref) */
  size_t len = la__history_exceptions__get_packed_size(t->robust_exceptions);
  uint8_t *b = malloc(len ? len : 1);
  if (!b)
    return la__store_corrupt(s, "no memory for a trace's %zu bytes of "
                                "history exceptions", len);
  la__history_exceptions__pack(t->robust_exceptions, b);
  if (!(st = la__hst(s, H_XINS))) {
    free(b);
    return LA_EIO;
  }
  la__bind_key(st, t->app_id, t->cycle_tag, t->rank);
  la_db_bind_blob(st, 4, b, len);
  r = la__store_run(s, st, "storing the robust reference's exceptions");
  free(b);
  return r;
}

/* Demotes the rank's references (robust: robust references) with rank_seq
 * at most upto. 0 or LA_EIO. */
static int la__demote_upto(la_store_t *s, const La__CompactTrace *t,
                           uint64_t upto, int robust) {
  /* few rows (at most the window's): collected first, updated after */
  enum { BATCH = 64 };
  uint64_t tags[BATCH];
  double errs[BATCH][3];
  int has[BATCH][3];
  size_t k;
  int r = 0;
  do {
    la_db_stmt_t *st = la__hst(s, robust ? H_RPENDING : H_PENDING);
    if (!st) return LA_EIO;
    la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 2, t->rank);
    la_db_bind_int64(st, 3, la__i64(upto));
    int rc;
    k = 0;
    while (k < BATCH && (rc = la_db_step(st)) == LA_DB_ROW) {
      tags[k] = (uint64_t)la_db_column_int64(st, 0);
      for (int i = 0; i < 3; i++) {
        has[k][i] = !robust && la_db_column_type(st, 1 + i) != LA_DB_NULL;
        errs[k][i] = has[k][i] ? la_db_column_double(st, 1 + i) : 0;
      }
      k++;
    }
    if (k < BATCH && rc != LA_DB_DONE)
      r = la__store_sqlerr(s, "finding the references to demote");
    la__done(st);
    for (size_t i = 0; r == 0 && i < k; i++)
      r = la__demote(s, t->app_id, t->rank, tags[i], robust, errs[i], has[i]);
  } while (r == 0 && k == BATCH);
  return r;
}

int la__store_history_put(la_store_t *s, const La__CompactTrace *t) {
  if (!t->has_rank_seq) return 0;
  int r = 0;
  if (t->has_history_ref && !s->hist_ref_gone && (r = la__history_row(s, t, 0)))
    return r;
  if (t->has_robust_ref && !s->hist_rref_gone &&
      (r = la__history_row(s, t, 1)))
    return r;
  /* The rank's references that left the window of its full_cycles most
   * recent cycles (this one's rank_seq is the newest the link delivered). */
  if (t->rank_seq < s->hist_full_cycles) return 0;
  uint64_t upto = t->rank_seq - s->hist_full_cycles;
  r = la__demote_upto(s, t, upto, 0);
  return r ? r : la__demote_upto(s, t, upto, 1);
}

/* t's robust segments: the representative's rep[0..len) with the
 * exceptions xb[0..xlen) (a HistoryExceptions message) spliced in
 * (la_compact_splice). 0, LA_ENOMEM, or LA_EIO: the store is corrupt. */
static int la__splice(la_store_t *s, La__CompactTrace *t, const void *rep,
                      size_t len, const void *xb, int xlen) {
  La__HistoryExceptions *x =
      xb && xlen > 0
          ? la__history_exceptions__unpack(NULL, (size_t)xlen, xb)
          : NULL;
  la_compact_result_t out;
  char why[200];
  int r = x ? la_compact_splice(rep, len, t->n_elements, x, &out, why,
                                sizeof why)
            : LA_EPROTO;
  if (x) la__history_exceptions__free_unpacked(x, NULL);
  if (r == LA_ENOMEM) return r;
  if (r != 0)
    return la__store_corrupt(s,
                             "trace of %s cycle %llu rank %u: its robust "
                             "reference's exceptions: %s",
                             t->app_id, (unsigned long long)t->cycle_tag,
                             t->rank, x ? why : "not a HistoryExceptions");
  free(t->robust_segments.data);
  t->robust_segments.data = out.bytes; /* malloc'ed: the trace's now */
  t->robust_segments.len = out.len;
  return 0;
}

int la__store_history_resolve(la_store_t *s, La__CompactTrace *t, int robust) {
  la_db_stmt_t *st = NULL;
  int rc = LA_DB_DONE, r = 0, col = robust ? 2 : 1;
  if (robust) { /* a robust reference first, else a whole one's */
    if (!(st = la__hst(s, H_RRESOLVE))) return LA_EIO;
    la__bind_key(st, t->app_id, t->cycle_tag, t->rank);
    if ((rc = la_db_step(st)) == LA_DB_ROW) col = 1;
    if (rc == LA_DB_DONE) {
      la__done(st);
      st = NULL;
    }
  }
  if (!st) {
    if (!(st = la__hst(s, H_RESOLVE))) return LA_EIO;
    la__bind_key(st, t->app_id, t->cycle_tag, t->rank);
    rc = la_db_step(st);
  }
  const void *blob = rc == LA_DB_ROW ? la_db_column_blob(st, col) : NULL;
  int blen = rc == LA_DB_ROW ? la_db_column_bytes(st, col) : 0;
  if (rc != LA_DB_ROW && rc != LA_DB_DONE) {
    r = la__store_sqlerr(s, "loading a trace's representative");
  } else if (rc == LA_DB_DONE) { /* not a reference: an empty trace */
    r = la__store_corrupt(s,
                          "trace of %s cycle %llu rank %u: %s BLOB of 0 "
                          "bytes and no history reference",
                          t->app_id, (unsigned long long)t->cycle_tag, t->rank,
                          robust ? "robust segments" : "segments");
  } else if (!blob || blen <= 0 || (unsigned)blen > LA_STORE_MAX_BLOB) {
    r = la__store_corrupt(s,
                          "trace of %s cycle %llu rank %u: stored as a "
                          "reference%s, but its representative is not "
                          "stored in full",
                          t->app_id, (unsigned long long)t->cycle_tag, t->rank,
                          robust ? " (robust weights)" : "");
  } else if (robust && col == 1 &&
             la_db_column_type(st, 2) != LA_DB_NULL) {
    /* a reference with exceptions: the representative's values with the
     * cycle's own spliced in (the cycle's robust stats, on its row, stay
     * its exact totals) */
    r = la__splice(s, t, blob, (size_t)blen, la_db_column_blob(st, 2),
                   la_db_column_bytes(st, 2));
  } else {
    ProtobufCBinaryData *d = robust ? &t->robust_segments : &t->segments;
    free(d->data);
    if (!(d->data = malloc((size_t)blen))) {
      d->len = 0;
      r = LA_ENOMEM;
    } else {
      memcpy(d->data, blob, (size_t)blen);
      d->len = (size_t)blen;
    }
  }
  la__done(st);
  return r;
}

void la__store_history_close(la_store_t *s) {
  for (int i = 0; i < H__COUNT; i++) {
    la_db_finalize(s->hist[i]);
    s->hist[i] = NULL;
  }
}
