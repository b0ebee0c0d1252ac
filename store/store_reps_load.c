/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_load.c: a member of a set stored by representatives, read
 * back (la__store_reps_resolve, store_reps.h, docs/clusters.md): its
 * representative's decoded values times its scale, compacted again with
 * the representative's parameters, flagged by rep_rank, rep_scale and
 * rep_class; its exact statistics are its own row's. The statement is
 * prepared per member read, next to a decode and an encode of its
 * elements.
 *
 * Deliberately not here: storing by representatives (store_reps.c), the
 * rest of a trace's loading (store_load.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact.h"
#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"

static const char la__resolve_sql[] =
    "SELECT m.class, m.rep_rank, m.scale, t.segments FROM rep_members m"
    " JOIN traces t ON t.app_id = m.app_id AND t.cycle_tag = m.cycle_tag"
    " AND t.rank = m.rep_rank"
    " WHERE m.app_id = ?1 AND m.cycle_tag = ?2 AND m.rank = ?3";

/* t's segments := the representative encoding rep[0..len) decoded, times
 * scale, compacted with its parameters. */
static int la__reps_scale(la_store_t *s, La__CompactTrace *t,
                          const uint8_t *rep, size_t len, double scale) {
  la_trace_t *tr = NULL;
  char why[160];
  if (la_trace_open_max(rep, len, t->n_elements, &tr, why, sizeof why) != 0 ||
      la_trace_count(tr) != t->n_elements) {
    if (!tr)
      return la__store_corrupt(s,
                               "trace of %s cycle %llu rank %u: its "
                               "representative's segments: %s",
                               t->app_id, (unsigned long long)t->cycle_tag,
                               t->rank, why);
    la_trace_close(tr);
    return la__store_corrupt(s,
                             "trace of %s cycle %llu rank %u: its "
                             "representative has another element count",
                             t->app_id, (unsigned long long)t->cycle_tag,
                             t->rank);
  }
  size_t n = (size_t)t->n_elements;
  double *x = malloc(n * sizeof *x);
  la_compact_params_t p;
  la_compact_result_t res = {0};
  int r = x ? la_trace_decode(tr, 0, n, x) : LA_ENOMEM;
  la_trace_params(tr, &p);
  la_trace_close(tr);
  p.quantum = 0; /* scaled values are no whole ticks */
  if (r == 0) {
    for (size_t i = 0; i < n; i++) x[i] *= scale;
    r = la_compact(x, n, &p, &res);
  }
  free(x);
  if (r) {
    la__store_fmt(s->err, sizeof s->err,
                  "reconstructing rank %u of %s cycle %llu: error %d", t->rank,
                  t->app_id, (unsigned long long)t->cycle_tag, r);
    return r == LA_ENOMEM ? LA_ENOMEM : LA_EIO;
  }
  free(t->segments.data);
  t->segments.data = res.bytes; /* the message owns it now */
  t->segments.len = res.len;
  t->mode = (La__CompactMode)res.mode;
  return 0;
}

int la__store_reps_resolve(la_store_t *s, La__CompactTrace *t) {
  la_db_stmt_t *st;
  if (la_db_prepare(s->db, la__resolve_sql, 0, &st) != 0)
    return la__store_sqlerr(s, "preparing the representatives statement");
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
  la_db_bind_int64(st, 3, t->rank);
  int rc = la_db_step(st), r;
  if (rc == LA_DB_DONE) {
    la_db_finalize(st);
    return 0;
  }
  if (rc != LA_DB_ROW) {
    r = la__store_sqlerr(s, "loading a member's representative");
    la_db_finalize(st);
    return r;
  }
  int64_t cls = la_db_column_int64(st, 0), rep = la_db_column_int64(st, 1);
  double scale = la_db_column_double(st, 2);
  const void *blob = la_db_column_blob(st, 3);
  int blen = la_db_column_bytes(st, 3);
  if (cls < 0 || cls > UINT32_MAX || rep < 0 || rep >= LA_MAX_RANKS ||
      rep == t->rank || !isfinite(scale) || blen < 0 ||
      (unsigned)blen > LA_STORE_MAX_BLOB) {
    la_db_finalize(st);
    return la__store_corrupt(s,
                             "trace of %s cycle %llu rank %u: bad "
                             "rep_members row",
                             t->app_id, (unsigned long long)t->cycle_tag,
                             t->rank);
  }
  /* the representative may itself be kept as a history reference */
  La__CompactTrace rt;
  la__compact_trace__init(&rt);
  rt.app_id = t->app_id;
  rt.cycle_tag = t->cycle_tag;
  rt.rank = (uint32_t)rep;
  uint8_t *copy = malloc(blen ? (size_t)blen : 1);
  if (!copy) {
    la_db_finalize(st);
    return LA_ENOMEM;
  }
  if (blen) memcpy(copy, blob, (size_t)blen);
  la_db_finalize(st);
  rt.segments.data = copy;
  rt.segments.len = (size_t)blen;
  r = blen ? 0 : la__store_history_resolve(s, &rt, 0);
  if (r == 0)
    r = la__reps_scale(s, t, rt.segments.data, rt.segments.len, scale);
  free(rt.segments.data);
  if (r) return r;
  if (t->error) {
    free(t->error);
    t->error = NULL; /* the member's own error is not known */
  }
  t->has_rep_rank = t->has_rep_scale = t->has_rep_class = 1;
  t->rep_rank = (uint32_t)rep;
  t->rep_scale = scale;
  t->rep_class = (uint32_t)cls;
  return 1;
}
