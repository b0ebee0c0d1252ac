/* la_trace_msg.c: a compaction result as a CompactTrace (see la_trace_msg.h).
 */
#include "la_trace_msg.h"

void la_trace_msg_stats(La__SeriesStats *st, const la_series_stats_t *s) {
  st->count = s->count;
  st->sum = s->sum;
  st->min = s->min;
  st->max = s->max;
}

void la_trace_msg_error(La__FitError *fe, const la_fit_error_t *e) {
  fe->max_abs = e->max_abs;
  fe->rmse = e->rmse;
  fe->cv = e->cv;
}

void la_trace_msg_fill(La__CompactTrace *t, La__SeriesStats *st,
                       La__FitError *fe, const la_compact_result_t *res) {
  t->mode = (La__CompactMode)res->mode;
  t->segments.data = res->bytes;
  t->segments.len = res->len;
  la_trace_msg_stats(st, &res->stats);
  t->stats = st;
  if (fe) {
    la_trace_msg_error(fe, &res->error);
    t->error = fe;
  }
}

void la_trace_msg_robust(La__CompactTrace *t, La__SeriesStats *rst,
                         const la_compact_result_t *rres) {
  t->has_robust_segments = 1;
  t->robust_segments.data = rres->bytes;
  t->robust_segments.len = rres->len;
  la_trace_msg_stats(rst, &rres->stats);
  t->robust_stats = rst;
}

void la_trace_msg_channel(La__ChannelTrace *c, La__SeriesStats *st,
                          La__FitError *fe, const la_compact_result_t *res) {
  c->segments.data = res->bytes;
  c->segments.len = res->len;
  la_trace_msg_stats(st, &res->stats);
  c->stats = st;
  if (fe) {
    la_trace_msg_error(fe, &res->error);
    c->error = fe;
  }
}

void la_trace_msg_channel_robust(La__ChannelTrace *c, La__SeriesStats *rst,
                                 const la_compact_result_t *rres) {
  c->has_robust_segments = 1;
  c->robust_segments.data = rres->bytes;
  c->robust_segments.len = rres->len;
  la_trace_msg_stats(rst, &rres->stats);
  c->robust_stats = rst;
}
