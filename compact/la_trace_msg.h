/* SPDX-License-Identifier: BSD-3-Clause */
/* la_trace_msg.h: the wire form of a compaction result.
 *
 * A LocalAgent turns each cycle's la_compact() result into a CompactTrace
 * (proto/la.proto): the encoded bytes, the mode, the exact statistics of the
 * raw series and the error achieved. This is the one place that copies a
 * result into those messages; the LocalAgent's worker, the load generators
 * and the tests that play a LocalAgent all use it. Nothing is allocated: the
 * message points into the result and into the caller's sub-messages, which
 * must outlive it.
 */
#ifndef LA_TRACE_MSG_H
#define LA_TRACE_MSG_H

#include "la.pb-c.h"
#include "la_compact.h"

/* *st = the statistics s (count, sum, min, max). */
void la_trace_msg_stats(La__SeriesStats *st, const la_series_stats_t *s);

/* *fe = the fitting error e (max_abs, rmse, cv). */
void la_trace_msg_error(La__FitError *fe, const la_fit_error_t *e);

/* Fills the payload fields of *t from res: mode, segments (pointing into
 * res->bytes), stats (= st, filled from res->stats) and, when fe is not
 * NULL, error (= fe, filled from res->error). The identity fields (seq,
 * app_id, rank, cycle_tag, n_elements) and the optional ones are left as
 * they are. */
void la_trace_msg_fill(La__CompactTrace *t, La__SeriesStats *st,
                       La__FitError *fe, const la_compact_result_t *res);

/* Sets the robust series of *t from rres: robust_segments (pointing into
 * rres->bytes) and robust_stats (= rst, filled from rres->stats). */
void la_trace_msg_robust(La__CompactTrace *t, La__SeriesStats *rst,
                         const la_compact_result_t *rres);

/* The same for one channel's series of a trace (ChannelTrace): the channel
 * index is left to the caller. */
void la_trace_msg_channel(La__ChannelTrace *c, La__SeriesStats *st,
                          La__FitError *fe, const la_compact_result_t *res);
void la_trace_msg_channel_robust(La__ChannelTrace *c, La__SeriesStats *rst,
                                 const la_compact_result_t *rres);

#endif /* LA_TRACE_MSG_H */
