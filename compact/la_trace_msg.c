/* SPDX-License-Identifier: BSD-3-Clause */
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

/* The fields a CompactTrace and a ChannelTrace share, given by address:
 * segments from res, *stats = st filled from res->stats, and *error = fe
 * filled from res->error when fe is not NULL. */
static void la__series(ProtobufCBinaryData *segments, La__SeriesStats **stats,
                       La__SeriesStats *st, La__FitError **error,
                       La__FitError *fe, const la_compact_result_t *res) {
  segments->data = res->bytes;
  segments->len = res->len;
  la_trace_msg_stats(st, &res->stats);
  *stats = st;
  if (fe) {
    la_trace_msg_error(fe, &res->error);
    *error = fe;
  }
}

/* The same for the robust series (which has no error). */
static void la__robust(protobuf_c_boolean *has, ProtobufCBinaryData *segments,
                       La__SeriesStats **stats, La__SeriesStats *rst,
                       const la_compact_result_t *rres) {
  *has = 1;
  segments->data = rres->bytes;
  segments->len = rres->len;
  la_trace_msg_stats(rst, &rres->stats);
  *stats = rst;
}

void la_trace_msg_fill(La__CompactTrace *t, La__SeriesStats *st,
                       La__FitError *fe, const la_compact_result_t *res) {
  t->mode = (La__CompactMode)res->mode;
  la__series(&t->segments, &t->stats, st, &t->error, fe, res);
}

void la_trace_msg_robust(La__CompactTrace *t, La__SeriesStats *rst,
                         const la_compact_result_t *rres) {
  la__robust(&t->has_robust_segments, &t->robust_segments, &t->robust_stats,
             rst, rres);
}

void la_trace_msg_channel(La__ChannelTrace *c, La__SeriesStats *st,
                          La__FitError *fe, const la_compact_result_t *res) {
  la__series(&c->segments, &c->stats, st, &c->error, fe, res);
}

void la_trace_msg_channel_robust(La__ChannelTrace *c, La__SeriesStats *rst,
                                 const la_compact_result_t *rres) {
  la__robust(&c->has_robust_segments, &c->robust_segments, &c->robust_stats,
             rst, rres);
}
