/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pending.c: new traces whose rows are written at the batch's next
 * flush (la_store_trace_defer).
 *
 * A trace the caller knows is new (the GlobalAgent's stitcher has its set
 * open without its rank) is checked at once (la_store_trace's refusals),
 * copied (one allocation from the batch's arena, store_arena.h, dropped
 * all at once after the flush: the fields the store writes, the id and the
 * blobs; at most LA__PEND_BYTES a batch) and written by store_write.c's
 * la__store_trace_write at store_defer.c's flush, first and in the order
 * deferred (la__store_defer_flush calls la__pend_flush through
 * s->pend_flush, so the files' calls go one way). Storing a trace at once
 * and reading a trace's stamp flush too; a rollback frees the copies
 * (store_defer.c).
 */
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_time.h"
#include "store_internal.h"

/* Writes the deferred traces in order. Their writes keep set rows and
 * missing records for the rest of the flush (and may flush those when
 * full: the list is taken first, so such a flush writes no trace). */
static int la__pend_flush(la_store_t *s) {
  la__pend_t **v = s->pend;
  size_t n = s->n_pend, cap = s->cap_pend;
  s->pend = NULL;
  s->n_pend = s->cap_pend = 0;
  s->pend_bytes = 0;
  int r = 0;
  for (size_t i = 0; r == 0 && i < n; i++) {
    int was_new = 0;
    r = la__store_trace_write(s, &v[i]->t, v[i]->now, &was_new);
    if (r == 0 && !was_new) s->pend_found++;
  }
  /* after a failed write, the rest are dropped too: the batch rolls back */
  if (!s->pend) { /* the array is kept for the next batch */
    s->pend = v;
    s->cap_pend = cap;
    la__arena_reset(&s->pend_arena); /* no copy is left in it */
  } else {
    free(v);
  }
  return r;
}

int la_store_trace_defer(la_store_t *s, const La__CompactTrace *t,
                         int *was_new) {
  if (was_new) *was_new = 0;
  int r = la__store_trace_check(s, t);
  if (r) return r;
  size_t app = strlen(t->app_id) + 1, seg = t->segments.len;
  size_t rseg = t->robust_stats ? t->robust_segments.len : 0;
  size_t bytes = sizeof(la__pend_t) + app + seg + rseg;
  /* the copies are bounded: past LA__PEND_BYTES, stored at once (after
   * the others, flushed first) */
  if (!s->in_batch || s->failed || t->n_channels || t->has_history_ref ||
      t->has_robust_ref || t->coarse ||
      s->pend_bytes + bytes > LA__PEND_BYTES)
    return la_store_trace(s, t, was_new);
  if (s->n_pend == s->cap_pend &&
      la__store_reserve(s, &s->pend, s->n_pend, &s->cap_pend,
                        sizeof *s->pend, 256))
    return LA_ENOMEM;
  la__pend_t *p = la__arena_alloc(&s->pend_arena, bytes);
  if (!p) {
    la__store_fmt(s->err, sizeof s->err, "out of memory");
    return LA_ENOMEM;
  }
  uint8_t *b = (uint8_t *)(p + 1);
  la__compact_trace__init(&p->t);
  p->t.app_id = memcpy(b, t->app_id, app);
  p->t.segments.data = memcpy(b + app, t->segments.data, seg);
  p->t.segments.len = seg;
  p->stats = *t->stats;
  p->t.stats = &p->stats;
  if (t->error) {
    p->error = *t->error;
    p->t.error = &p->error;
  }
  if (t->robust_stats) {
    p->robust_stats = *t->robust_stats;
    p->t.robust_stats = &p->robust_stats;
    p->t.robust_segments.data = memcpy(b + app + seg,
                                       t->robust_segments.data, rseg);
    p->t.robust_segments.len = rseg;
  }
  p->t.cycle_tag = t->cycle_tag;
  p->t.rank = t->rank;
  p->t.n_elements = t->n_elements;
  p->t.mode = t->mode;
  p->t.has_t_xfer_ns = t->has_t_xfer_ns;
  p->t.t_xfer_ns = t->t_xfer_ns;
  p->t.has_rank_seq = t->has_rank_seq;
  p->t.rank_seq = t->rank_seq;
  p->t.seq = t->seq;
  p->t.has_interference = t->has_interference;
  p->t.interference = t->interference;
  p->t.has_flagged = t->has_flagged;
  p->t.flagged = t->flagged;
  p->t.has_flagged_time = t->has_flagged_time;
  p->t.flagged_time = t->flagged_time;
  p->now = la_realtime_ns();
  s->pend_flush = la__pend_flush;
  s->pend[s->n_pend++] = p;
  s->pend_bytes += bytes;
  if (was_new) *was_new = 1;
  return 0;
}

uint64_t la_store_deferred_found(const la_store_t *s) {
  return s ? s->pend_found : 0;
}
