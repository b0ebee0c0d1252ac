/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps.c: a closed Trace-Set stored by representatives
 * (store_reps.h, docs/clusters.md): the members of each behaviour class
 * but its representative lose their traces rows, their exact totals
 * and stamps packed into one rep_classes row per class
 * (store_reps_pack.c); a member with robust weights keeps its row,
 * emptied, with a rep_members row, and a rep_robust row instead of robust
 * segments of its representative's robust shape.
 *
 * Statements are prepared per call (the feature runs once per set close
 * and once per reconstructed member read, next to a decode and an
 * encode of the member's elements), so nothing is added to the store's
 * statement table.
 *
 * Deliberately not here: the grouping (compact/la_clusters.c), when to
 * run (the GlobalAgent, after it closed a set), rebuilding members when
 * a set is read (store_reps_load.c).
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_clusters.h"
#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"
#include "store_reps_pack.h"

enum {
  R_DONE,
  R_EMPTY,
  R_INS,
  R_NPROCS,
  R_ROWS,
  R_TRACES,
  R_ROBUST,
  R_RBLOBS,
  R_REMPTY,
  R_RINS,
  R_CINS,
  R_DEL,
  R__COUNT
};

static const char *const la__reps_sql[R__COUNT] = {
    [R_DONE] = "SELECT 1 FROM rep_members WHERE app_id = ?1 AND cycle_tag = ?2"
               " UNION ALL SELECT 1 FROM rep_classes WHERE app_id = ?1"
               " AND cycle_tag = ?2 LIMIT 1",
    /* every member recorded in rep_members, in one statement: as
     * store_history.c demotes, the row written again, small */
    [R_EMPTY] =
        "REPLACE INTO traces(app_id, cycle_tag, rank, n_elements, mode,"
        " segments, stat_count, stat_sum, stat_min, stat_max, err_max_abs,"
        " err_rmse, err_cv, t_xfer_ns, rank_seq, seq, t_stored_ns)"
        " SELECT app_id, cycle_tag, rank, n_elements, mode, ?3, stat_count,"
        " stat_sum, stat_min, stat_max, NULL, NULL, NULL, t_xfer_ns,"
        " rank_seq, seq, t_stored_ns FROM traces t"
        " WHERE app_id = ?1 AND cycle_tag = ?2 AND length(segments) > 0"
        " AND EXISTS (SELECT 1 FROM rep_members m WHERE m.app_id = ?1"
        " AND m.cycle_tag = ?2 AND m.rank = t.rank)",
    [R_INS] = "INSERT INTO rep_members(app_id, cycle_tag, rank, class,"
              " rep_rank, scale) VALUES (?1, ?2, ?3, ?4, ?5, CAST(?6 AS REAL))",
    [R_NPROCS] = "SELECT nprocs FROM apps WHERE app_id = ?1",
    /* the traces that have segments of their own and one channel, with
     * what a packed member keeps (store_reps_pack.h) */
    [R_ROWS] =
        "SELECT t.rank, t.n_elements, length(t.segments), t.stat_sum,"
        " t.stat_min, t.stat_max, t.t_xfer_ns, t.rank_seq, t.seq,"
        " t.t_stored_ns, CASE WHEN EXISTS (SELECT 1 FROM robust r WHERE"
        " r.app_id = t.app_id AND r.cycle_tag = t.cycle_tag"
        " AND r.rank = t.rank) THEN 1 ELSE 0 END"
        " FROM traces t"
        " WHERE t.app_id = ?1 AND t.cycle_tag = ?2 AND length(t.segments) > 0"
        " AND NOT EXISTS (SELECT 1 FROM channel_traces c WHERE"
        " c.app_id = t.app_id AND c.cycle_tag = t.cycle_tag"
        " AND c.rank = t.rank)",
    /* their encodings, for the signatures not known beforehand */
    [R_TRACES] = "SELECT rank, segments FROM traces"
                 " WHERE app_id = ?1 AND cycle_tag = ?2"
                 " AND length(segments) > 0",
    /* the robust series with segments of their own */
    [R_ROBUST] = "SELECT rank, length(segments), stat_sum FROM robust"
                 " WHERE app_id = ?1 AND cycle_tag = ?2"
                 " AND length(segments) > 0",
    /* their encodings, for the robust signatures not known beforehand */
    [R_RBLOBS] = "SELECT rank, segments FROM robust"
                 " WHERE app_id = ?1 AND cycle_tag = ?2"
                 " AND length(segments) > 0",
    /* the row written again too (rows of 4.6 KB live in their leaf page
     * whole: emptied in place, they would leave those pages in use) */
    [R_REMPTY] =
        "REPLACE INTO robust(app_id, cycle_tag, rank, segments, stat_count,"
        " stat_sum, stat_min, stat_max, interference, flagged, flagged_time)"
        " SELECT app_id, cycle_tag, rank, ?4, stat_count, stat_sum, stat_min,"
        " stat_max, interference, flagged, flagged_time FROM robust"
        " WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3"
        " AND length(segments) > 0",
    [R_RINS] = "INSERT INTO rep_robust(app_id, cycle_tag, rank, scale)"
               " VALUES (?1, ?2, ?3, CAST(?4 AS REAL))",
    [R_CINS] = "INSERT INTO rep_classes(app_id, cycle_tag, class, rep_rank,"
               " rep_total, n_elements, n_members, rank_min, rank_max,"
               " members) VALUES (?1, ?2, ?3, ?4, CAST(?5 AS REAL), ?6, ?7,"
               " ?8, ?9, ?10)",
    /* the packed members' rows (R_ROWS read them: segments of their own),
     * their ranks a JSON array */
    [R_DEL] = "DELETE FROM traces WHERE app_id = ?1 AND cycle_tag = ?2"
              " AND length(segments) > 0"
              " AND rank IN (SELECT value FROM json_each(?3))",
};
static const char *const la__reps_sql_pg[R__COUNT] = {
    [R_EMPTY] = "UPDATE traces t SET segments = CAST(?3 AS BLOB),"
                " err_max_abs = NULL, err_rmse = NULL, err_cv = NULL"
                " WHERE app_id = ?1 AND cycle_tag = ?2"
                " AND length(segments) > 0"
                " AND EXISTS (SELECT 1 FROM rep_members m WHERE"
                " m.app_id = ?1 AND m.cycle_tag = ?2 AND m.rank = t.rank)",
    [R_REMPTY] = "UPDATE robust SET segments = CAST(?4 AS BLOB)"
                 " WHERE app_id = ?1 AND cycle_tag = ?2 AND rank = ?3"
                 " AND length(segments) > 0",
    [R_DEL] = "DELETE FROM traces WHERE app_id = ?1 AND cycle_tag = ?2"
              " AND length(segments) > 0 AND rank IN (SELECT CAST(value AS"
              " INTEGER) FROM json_array_elements_text(CAST(?3 AS json)))",
};

static la_db_stmt_t *la__rst(la_store_t *s, int id) {
  la_db_stmt_t *st;
  const char *sql = la_db_kind(s->db) == LA_DB_PG && la__reps_sql_pg[id]
                        ? la__reps_sql_pg[id]
                        : la__reps_sql[id];
  if (la_db_prepare(s->db, sql, 0, &st) != 0) {
    la__store_sqlerr(s, "preparing the representatives statements");
    return NULL;
  }
  return st;
}

static void la__bind_key(la_db_stmt_t *st, const char *app_id,
                         uint64_t cycle_tag, uint32_t rank) {
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  la_db_bind_int64(st, 3, rank);
}

/* 1 when the set already has rep_members rows, 0 when not, LA_EIO. */
static int la__reps_done(la_store_t *s, const char *app_id,
                         uint64_t cycle_tag) {
  la_db_stmt_t *st = la__rst(s, R_DONE);
  if (!st) return LA_EIO;
  la__bind_key(st, app_id, cycle_tag, 0);
  int rc = la_db_step(st), r = rc == LA_DB_ROW ? 1 : 0;
  if (rc != LA_DB_ROW && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "looking up a set's representatives");
  la_db_finalize(st);
  return r;
}

/* The arrays la__reps_read fills (np ranks): signatures, decoded and
 * exact totals, element counts, segment bytes, what a packed member keeps
 * of its row (pk) and whether the rank has a robust row (rob). */
typedef struct {
  double *sig, *dtot, *tot;
  uint64_t *cnt;
  size_t *len;
  la_store_packed_t *pk;
  uint8_t *rob;
} la__sigs_t;

/* The set's robust series: signatures, decoded and exact totals,
 * segment bytes (np ranks; dtot NaN: none, or no shape). */
typedef struct {
  double *sig, *dtot, *tot;
  size_t *len;
  la_db_stmt_t *em, *ins;
} la__robust_t;

/* Member m of class c stored by its representative: its robust series
 * too when both have one and their robust signatures are within tol. */
static int la__reps_robust(la_store_t *s, const char *app_id, uint64_t tag,
                           const la_cluster_class_t *c, uint32_t r,
                           unsigned nb, double tol, la__robust_t *rb,
                           la_store_reps_t *o) {
  uint32_t p = c->rep;
  if (!(rb->dtot[p] > 0) || !(rb->dtot[r] > 0) || !isfinite(rb->dtot[p]) ||
      !isfinite(rb->dtot[r]))
    return 0;
  double d = 0;
  for (unsigned j = 0; j < nb; j++)
    d += fabs(rb->sig[(size_t)r * nb + j] - rb->sig[(size_t)p * nb + j]);
  if (!(d <= tol)) return 0; /* another shape: kept in full */
  double t = isfinite(rb->tot[r]) ? rb->tot[r] : rb->dtot[r];
  la__bind_key(rb->em, app_id, tag, r);
  la_db_bind_blob(rb->em, 4, "", 0);
  if (la_db_step(rb->em) != LA_DB_DONE) {
    la__store_sqlerr(s, "replacing a member's robust segments");
    return LA_EIO;
  }
  int64_t changed = la_db_changes(s->db);
  la_db_reset(rb->em);
  if (changed != 1) return 0;
  la__bind_key(rb->ins, app_id, tag, r);
  la_db_bind_double(rb->ins, 4, t / rb->dtot[p]);
  int rc = la__store_run(s, rb->ins, "recording a robust class member");
  if (rc) return rc;
  o->robust_replaced++;
  o->robust_bytes_after -= rb->len[r];
  return 0;
}

/* The statements la__reps_write runs. */
typedef struct {
  la_db_stmt_t *ins, *cins;
  la_store_packed_t *pk; /* scratch: a class's packed members */
  uint8_t *blob;         /* scratch: their BLOB */
  char *json;            /* every packed rank so far, "[r,r,..." */
  size_t json_len;
} la__wst_t;

/* Bytes of la__wst_t.json for n ranks (each below 2^24: 8 digits). */
#define LA__JSON_BYTES(n) (2 + (n) * 9 + 1)

/* The members of c without robust weights (np of them, in pk) into one
 * rep_classes row, their ranks added to those whose traces rows
 * la__reps_unrow removes. */
static int la__reps_pack(la_store_t *s, const char *app_id, uint64_t tag,
                         const la_cluster_class_t *c, size_t k,
                         const la__sigs_t *g, la__wst_t *w, size_t np,
                         double bound, la_store_reps_t *o) {
  size_t bl =
      la__store_pack_members(w->pk, np, g->dtot[c->rep], bound, w->blob);
  la_db_stmt_t *st = w->cins;
  la__bind_key(st, app_id, tag, (uint32_t)k);
  la_db_bind_int64(st, 4, c->rep);
  la_db_bind_double(st, 5, g->dtot[c->rep]);
  la_db_bind_int64(st, 6, la__i64(g->cnt[c->rep]));
  la_db_bind_int64(st, 7, (int64_t)np);
  la_db_bind_int64(st, 8, w->pk[0].rank);
  la_db_bind_int64(st, 9, w->pk[np - 1].rank);
  la_db_bind_blob(st, 10, w->blob, (int)bl);
  int rc = la__store_run(s, st, "recording a class's members");
  for (size_t i = 0; rc == 0 && i < np; i++)
    w->json_len += (size_t)sprintf(w->json + w->json_len, "%s%u",
                                   w->json_len ? "," : "[", w->pk[i].rank);
  if (rc == 0) {
    o->packed += np;
    o->packed_bytes += bl;
    if (bound > o->minmax_bound) o->minmax_bound = bound;
  }
  return rc;
}

/* Packed member p of a class whose representative's row is rp (decoded
 * total dtot): its min and max read back as rp's times its scale
 * (predicted) when both are known and the error of that can be stated,
 * *bound raised to it; else its own are kept. */
static void la__reps_predict(la_store_packed_t *p, const la_store_packed_t *rp,
                             double dtot, double *bound) {
  /* the scale the reader takes (store_reps_rows.c) */
  double sc = p->has_scale ? p->scale : p->sum / dtot, pmin, pmax;
  la__store_pack_minmax(sc, rp->min, rp->max, &pmin, &pmax);
  double e = p->has_min && p->has_max && rp->has_min && rp->has_max
                 ? la__store_pack_minmax_err(p->min, p->max, pmin, pmax)
                 : INFINITY;
  p->predicted = isfinite(e);
  if (p->predicted && e > *bound) *bound = e;
}

/* Records the members of c (class index k) but its representative (each
 * a trace R_ROWS read: segments of its own, in this transaction): those
 * with a robust row keep it and their traces row, emptied later
 * (la__reps_empty), with a rep_members row; the others are packed. */
static int la__reps_write(la_store_t *s, const char *app_id, uint64_t tag,
                          const la_cluster_class_t *c, size_t k,
                          const la__sigs_t *g, la__wst_t *w, unsigned nb,
                          double tol, la__robust_t *rb, la_store_reps_t *o) {
  const size_t *len = g->len;
  la_db_stmt_t *ins = w->ins;
  size_t np = 0;
  double bound = 0;
  for (uint32_t m = 0; m < c->n; m++) {
    uint32_t r = c->members[m];
    if (r == c->rep) continue;
    assert(len[r] > 0);
    if (!g->rob[r]) {
      la_store_packed_t *p = &w->pk[np++];
      *p = g->pk[r];
      /* the scale reads back as the exact total over rep_total; a member
       * without a finite total keeps its own */
      p->has_scale = !(p->has_sum && isfinite(p->sum) &&
                       p->sum / g->dtot[c->rep] == c->scale[m]);
      p->scale = c->scale[m];
      la__reps_predict(p, &g->pk[c->rep], g->dtot[c->rep], &bound);
      o->replaced++;
      o->bytes_after -= len[r];
      continue;
    }
    la__bind_key(ins, app_id, tag, r);
    la_db_bind_int64(ins, 4, (int64_t)k);
    la_db_bind_int64(ins, 5, c->rep);
    la_db_bind_double(ins, 6, c->scale[m]);
    int rc = la__store_run(s, ins, "recording a class member");
    if (rc) return rc;
    o->replaced++;
    o->bytes_after -= len[r];
    if ((rc = la__reps_robust(s, app_id, tag, c, r, nb, tol, rb, o)))
      return rc;
  }
  return np ? la__reps_pack(s, app_id, tag, c, k, g, w, np, bound, o) : 0;
}

/* *need := np flags, all 0, and *st := statement id bound to the set:
 * 0, LA_ENOMEM, LA_EIO (nothing to free then). */
static int la__reps_scan(la_store_t *s, int id, const char *app_id,
                         uint64_t tag, uint32_t np, uint8_t **need,
                         la_db_stmt_t **st) {
  *need = calloc(np ? np : 1, 1);
  *st = *need ? la__rst(s, id) : NULL;
  if (!*st) {
    int r = *need ? LA_EIO : LA_ENOMEM;
    free(*need);
    *need = NULL;
    return r;
  }
  la__bind_key(*st, app_id, tag, 0);
  return 0;
}

/* A signature taken before it was stored (share, dtot) as a rank's. */
static void la__reps_known(const double *share, double dtot, unsigned nb,
                           double *sig, double *dst) {
  memcpy(sig, share, nb * sizeof *sig);
  *dst = dtot;
}

/* The robust signatures of the ranks need[r] marks, each from its
 * stored encoding in one checking pass (la_clusters_signature_bytes). */
static int la__reps_robust_blobs(la_store_t *s, const char *app_id,
                                 uint64_t tag, uint32_t np, unsigned nb,
                                 const uint64_t *cnt, const uint8_t *need,
                                 la__robust_t *rb) {
  la_db_stmt_t *st = la__rst(s, R_RBLOBS);
  if (!st) return LA_EIO;
  la__bind_key(st, app_id, tag, 0);
  int rc, r = 0;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank = la_db_column_int64(st, 0);
    if (rank < 0 || rank >= np || !need[rank]) continue;
    const void *blob = la_db_column_blob(st, 1);
    int blen = la_db_column_bytes(st, 1);
    char why[160];
    uint64_t pts = 0;
    int sh = !blob || blen <= 0 || (size_t)blen != rb->len[rank]
                 ? LA_EPROTO
                 : la_clusters_signature_bytes(
                       blob, (size_t)blen, cnt[rank], nb,
                       rb->sig + (size_t)rank * nb, &rb->dtot[rank], &pts,
                       why, sizeof why);
    if (sh < 0 || pts != cnt[rank])
      r = la__store_corrupt(s,
                            "robust weights of %s cycle %llu rank %lld: %s",
                            app_id, (unsigned long long)tag, (long long)rank,
                            sh < 0 ? "bad segments" : "another element count");
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "reading a set's robust weights");
  la_db_finalize(st);
  return r;
}

/* The robust series of the set's ranks (cnt[r] > 0) into rb: their
 * signatures from known[r] when of the same point count and bytes (taken
 * at ingest), else from their stored encodings. */
static int la__reps_read_robust(la_store_t *s, const char *app_id,
                                uint64_t tag, uint32_t np, unsigned nb,
                                const uint64_t *cnt,
                                const la_store_rep_sig_t *known,
                                uint32_t n_known, la__robust_t *rb,
                                la_store_reps_t *o) {
  uint8_t *need;
  la_db_stmt_t *st;
  int r = la__reps_scan(s, R_ROBUST, app_id, tag, np, &need, &st);
  if (r) return r;
  int rc;
  size_t n_need = 0;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank = la_db_column_int64(st, 0),
            blen = la_db_column_int64(st, 1);
    if (rank < 0 || rank >= np || !cnt[rank]) continue; /* no trace */
    if (blen <= 0 || blen > LA_STORE_MAX_BLOB) {
      r = la__store_corrupt(s, "robust weights of %s cycle %llu rank %lld: "
                            "bad segments", app_id, (unsigned long long)tag,
                            (long long)rank);
      break;
    }
    const la_store_rep_sig_t *k =
        known && rank < n_known ? &known[rank] : NULL;
    if (k && k->rcount == cnt[rank] && k->rlen == (uint64_t)blen) {
      la__reps_known(k->rshare, k->rdtot, nb, rb->sig + (size_t)rank * nb,
                     &rb->dtot[rank]);
      o->robust_signatures_known++;
    } else {
      need[rank] = 1;
      n_need++;
    }
    rb->len[rank] = (size_t)blen;
    rb->tot[rank] = la_db_column_type(st, 2) == LA_DB_NULL
                        ? NAN
                        : la_db_column_double(st, 2);
    o->robust_bytes_before += (uint64_t)blen;
    o->robust_series++;
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "reading a set's robust weights");
  la_db_finalize(st);
  if (r == 0 && n_need)
    r = la__reps_robust_blobs(s, app_id, tag, np, nb, cnt, need, rb);
  free(need);
  o->robust_bytes_after = o->robust_bytes_before;
  return r;
}


/* The signatures of the traces R_ROWS listed but known did not give
 * (need[r]), each from its encoding in one checking pass
 * (la_clusters_signature_bytes: no index built). */
static int la__reps_read_blobs(la_store_t *s, const char *app_id,
                               uint64_t tag, uint32_t np, unsigned nb,
                               const uint8_t *need, la__sigs_t *g) {
  la_db_stmt_t *st = la__rst(s, R_TRACES);
  if (!st) return LA_EIO;
  la__bind_key(st, app_id, tag, 0);
  int rc, r = 0;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank = la_db_column_int64(st, 0);
    if (rank < 0 || rank >= np || !need[rank]) continue;
    const void *blob = la_db_column_blob(st, 1);
    int blen = la_db_column_bytes(st, 1);
    char why[160] = "another length";
    uint64_t pts = 0;
    int sh = !blob || blen <= 0 || (size_t)blen != g->len[rank]
                 ? LA_EPROTO
                 : la_clusters_signature_bytes(
                       blob, (size_t)blen, g->cnt[rank], nb,
                       g->sig + (size_t)rank * nb, &g->dtot[rank], &pts, why,
                       sizeof why);
    if (sh < 0 || pts != g->cnt[rank])
      r = la__store_corrupt(s, "trace of %s cycle %llu rank %lld: %s",
                            app_id, (unsigned long long)tag, (long long)rank,
                            sh < 0 ? why : "another element count");
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "reading a set's traces");
  la_db_finalize(st);
  return r;
}

/* What a packed member keeps of R_ROWS's row st (store_reps_pack.h). */
static void la__reps_row_packed(la_db_stmt_t *st, uint32_t rank,
                                la_store_packed_t *p) {
  memset(p, 0, sizeof *p);
  p->rank = rank;
  if ((p->has_sum = la_db_column_type(st, 3) != LA_DB_NULL))
    p->sum = la_db_column_double(st, 3);
  if ((p->has_min = la_db_column_type(st, 4) != LA_DB_NULL))
    p->min = la_db_column_double(st, 4);
  if ((p->has_max = la_db_column_type(st, 5) != LA_DB_NULL))
    p->max = la_db_column_double(st, 5);
  if ((p->has_xfer = la_db_column_type(st, 6) != LA_DB_NULL))
    p->t_xfer_ns = (uint64_t)la_db_column_int64(st, 6);
  if ((p->has_rank_seq = la_db_column_type(st, 7) != LA_DB_NULL))
    p->rank_seq = (uint64_t)la_db_column_int64(st, 7);
  p->seq = (uint64_t)la_db_column_int64(st, 8);
  p->t_stored_ns = la_db_column_int64(st, 9);
}

/* The set's traces (those R_ROWS selects) into g: element count, segment
 * bytes, exact total, and the signature, from known[rank] when it is of
 * the same element count and bytes, else from the encoding. */
static int la__reps_read(la_store_t *s, const char *app_id, uint64_t tag,
                         uint32_t np, unsigned nb,
                         const la_store_rep_sig_t *known, uint32_t n_known,
                         la__sigs_t *g, la_store_reps_t *o) {
  uint8_t *need;
  la_db_stmt_t *st;
  int r = la__reps_scan(s, R_ROWS, app_id, tag, np, &need, &st);
  if (r) return r;
  int rc;
  size_t n_need = 0;
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank = la_db_column_int64(st, 0), n = la_db_column_int64(st, 1),
            blen = la_db_column_int64(st, 2);
    if (rank < 0 || rank >= LA_MAX_RANKS || n < 1 || n > ((int64_t)1 << 32) ||
        blen <= 0 || blen > LA_STORE_MAX_BLOB) {
      r = la__store_corrupt(s, "trace of %s cycle %llu: bad row", app_id,
                            (unsigned long long)tag);
      break;
    }
    if (rank >= np) continue; /* in no Trace-Set */
    const la_store_rep_sig_t *k =
        known && rank < n_known ? &known[rank] : NULL;
    if (k && k->count == (uint64_t)n && k->len == (uint64_t)blen) {
      la__reps_known(k->share, k->dtot, nb, g->sig + (size_t)rank * nb,
                     &g->dtot[rank]);
    } else {
      need[rank] = 1;
      n_need++;
    }
    g->cnt[rank] = (uint64_t)n;
    g->len[rank] = (size_t)blen;
    g->tot[rank] = la_db_column_type(st, 3) == LA_DB_NULL
                       ? NAN
                       : la_db_column_double(st, 3);
    la__reps_row_packed(st, (uint32_t)rank, &g->pk[rank]);
    g->rob[rank] = la_db_column_int64(st, 10) != 0;
    o->bytes_before += (uint64_t)blen;
    o->traces++;
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "reading a set's traces");
  la_db_finalize(st);
  o->signatures_known = o->traces - n_need;
  if (r == 0 && n_need)
    r = la__reps_read_blobs(s, app_id, tag, np, nb, need, g);
  free(need);
  return r;
}

/* Removes the traces rows of the members packed (R_DEL, one statement):
 * each was a trace R_ROWS read, so as many rows go as were packed. */
static int la__reps_unrow(la_store_t *s, const char *app_id, uint64_t tag,
                          la__wst_t *w, const la_store_reps_t *o) {
  la_db_stmt_t *del = la__rst(s, R_DEL);
  if (!del) return LA_EIO;
  memcpy(w->json + w->json_len, "]", 2);
  la__bind_key(del, app_id, tag, 0);
  la_db_bind_text(del, 3, w->json, (int)w->json_len + 1);
  int r = 0;
  if (la_db_step(del) != LA_DB_DONE)
    r = la__store_sqlerr(s, "removing the members' trace rows");
  else if (la_db_changes(s->db) != (int64_t)o->packed)
    r = la__store_corrupt(s,
                          "%s cycle %llu: %lld members' trace rows removed, "
                          "%zu packed",
                          app_id, (unsigned long long)tag,
                          (long long)la_db_changes(s->db), o->packed);
  la_db_finalize(del);
  return r;
}

/* Empties the segments of every member the batch recorded in rep_members
 * (R_EMPTY, one statement): each was a trace R_ROWS read, so as many
 * rows change as were recorded. */
static int la__reps_empty(la_store_t *s, const char *app_id, uint64_t tag,
                          const la_store_reps_t *o) {
  la_db_stmt_t *em = la__rst(s, R_EMPTY);
  if (!em) return LA_EIO;
  la__bind_key(em, app_id, tag, 0);
  la_db_bind_blob(em, 3, "", 0);
  int r = 0;
  if (la_db_step(em) != LA_DB_DONE)
    r = la__store_sqlerr(s, "replacing the members' segments");
  else if (la_db_changes(s->db) != (int64_t)(o->replaced - o->packed))
    r = la__store_corrupt(s,
                          "%s cycle %llu: %lld members' segments emptied, "
                          "%zu recorded",
                          app_id, (unsigned long long)tag,
                          (long long)la_db_changes(s->db),
                          o->replaced - o->packed);
  la_db_finalize(em);
  return r;
}

/* The grouping of the set's traces and the rows it leads to. */
static int la__reps_apply(la_store_t *s, const char *app_id, uint64_t tag,
                          uint32_t np, double tol,
                          const la_store_rep_sig_t *known, uint32_t n_known,
                          la_store_reps_t *o) {
  size_t nn = np ? np : 1;
  la_cluster_params_t p;
  la_cluster_params_default(&p);
  p.tol = tol;
  assert(p.buckets == LA_STORE_REP_BUCKETS);
  la__sigs_t g = {0};
  g.sig = malloc(nn * p.buckets * sizeof *g.sig);
  g.dtot = malloc(nn * sizeof *g.dtot);
  g.tot = malloc(nn * sizeof *g.tot);
  g.cnt = calloc(nn, sizeof *g.cnt);
  g.len = calloc(nn, sizeof *g.len);
  g.pk = calloc(nn, sizeof *g.pk);
  g.rob = calloc(nn, 1);
  la__wst_t w = {0};
  w.pk = malloc(nn * sizeof *w.pk);
  w.blob = malloc(la__store_pack_bound(nn));
  w.json = malloc(LA__JSON_BYTES(nn));
  la__robust_t rb = {0};
  rb.sig = malloc(nn * p.buckets * sizeof *rb.sig);
  rb.dtot = malloc(nn * sizeof *rb.dtot);
  rb.tot = malloc(nn * sizeof *rb.tot);
  rb.len = calloc(nn, sizeof *rb.len);
  int r = 0;
  if (!g.sig || !g.dtot || !g.tot || !g.cnt || !g.len || !g.pk || !g.rob ||
      !w.pk || !w.blob || !w.json || !rb.sig ||
      !rb.dtot || !rb.tot || !rb.len) {
    r = LA_ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < np; i++) rb.tot[i] = rb.dtot[i] = NAN;
  for (size_t i = 0; i < np; i++) g.tot[i] = g.dtot[i] = NAN;
  r = la__reps_read(s, app_id, tag, np, p.buckets, known, n_known, &g, o);
  if (r == 0)
    r = la__reps_read_robust(s, app_id, tag, np, p.buckets, g.cnt, known,
                             n_known, &rb, o);
  if (r) goto out;
  la_clusters_t c;
  char why[128];
  r = la_clusters_group(g.sig, g.dtot, g.cnt, g.tot, np, &p, &c, why,
                        sizeof why);
  if (r) {
    la__store_fmt(s->err, sizeof s->err, "grouping the ranks: %s", why);
    goto out;
  }
  o->classes = c.n_classes;
  o->outliers = c.n_outliers;
  w.ins = la__rst(s, R_INS);
  w.cins = w.ins ? la__rst(s, R_CINS) : NULL;
  rb.em = w.cins ? la__rst(s, R_REMPTY) : NULL;
  rb.ins = rb.em ? la__rst(s, R_RINS) : NULL;
  if (!rb.ins) r = LA_EIO;
  o->bytes_after = o->bytes_before;
  for (size_t k = 0; r == 0 && k < c.n_classes; k++)
    r = la__reps_write(s, app_id, tag, &c.classes[k], k, &g, &w, p.buckets,
                       tol, &rb, o);
  if (r == 0 && o->packed) r = la__reps_unrow(s, app_id, tag, &w, o);
  if (r == 0 && o->replaced > o->packed) r = la__reps_empty(s, app_id, tag, o);
  la_db_finalize(w.ins);
  la_db_finalize(w.cins);
  la_db_finalize(rb.em);
  la_db_finalize(rb.ins);
  la_clusters_free(&c);
out:
  free(g.sig);
  free(g.dtot);
  free(g.tot);
  free(g.cnt);
  free(g.len);
  free(g.pk);
  free(g.rob);
  free(w.pk);
  free(w.blob);
  free(w.json);
  free(rb.sig);
  free(rb.dtot);
  free(rb.tot);
  free(rb.len);
  return r;
}

/* The application's nprocs into *np: 0, LA_ENOTFOUND, LA_EIO. */
static int la__reps_nprocs(la_store_t *s, const char *app_id, uint32_t *np) {
  la_db_stmt_t *st = la__rst(s, R_NPROCS);
  if (!st) return LA_EIO;
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  int rc = la_db_step(st), r = 0;
  if (rc == LA_DB_ROW) {
    int64_t v = la_db_column_int64(st, 0);
    if (v < 0 || v > LA_MAX_RANKS)
      r = la__store_corrupt(s, "application %s: nprocs %lld", app_id,
                            (long long)v);
    else
      *np = (uint32_t)v;
  } else {
    r = la__store_no_app(s, rc, app_id, "reading an application's nprocs");
  }
  la_db_finalize(st);
  return r;
}

int la_store_representatives(la_store_t *s, const char *app_id,
                             uint64_t cycle_tag, double tol,
                             la_store_reps_t *out) {
  return la_store_representatives_known(s, app_id, cycle_tag, tol, NULL, 0,
                                        out);
}

int la_store_representatives_known(la_store_t *s, const char *app_id,
                                   uint64_t cycle_tag, double tol,
                                   const la_store_rep_sig_t *known,
                                   uint32_t n_known, la_store_reps_t *out) {
  la_store_reps_t o = {0};
  if (out) *out = o;
  if (!s || !app_id || !(tol >= 0 && tol <= 2)) return LA_EINVAL;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  uint32_t np = 0;
  r = la__reps_done(s, app_id, cycle_tag);
  if (r == 0) r = la__reps_nprocs(s, app_id, &np);
  /* nprocs unknown (no RankStart): no Trace-Set to group */
  if (r == 0 && np)
    r = la__reps_apply(s, app_id, cycle_tag, np, tol, known, n_known, &o);
  if (r == 1) r = 0; /* done before */
  r = la__store_wend(s, own, r);
  if (out) *out = o;
  return r;
}
