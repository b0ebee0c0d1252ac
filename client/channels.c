/* SPDX-License-Identifier: BSD-3-Clause */
/* channels.c: a Trace-Set's channels (LA_channel in la.h): their names, and
 * a set that serves one channel (la_traceset_channel).
 *
 * A channel's view is built as a TraceSet message of its own: a shallow
 * copy of the set's message whose traces carry the channel's encodings,
 * statistics, fit error and robust weights in place of the sum's, and
 * whose ranks without that channel are listed missing. The copy then goes
 * through la_traceset_from_message, so the view is validated and parsed
 * like any received set, and every weight function works on it unchanged.
 * Nothing here does I/O or keeps state outside the sets.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"

#define LA__NO_CHANNEL "no series of this channel in the rank's trace"

size_t la_traceset_channels(const la_traceset_t *t) {
  return t ? t->msg->n_channels : 0;
}

const char *la_traceset_channel_name(const la_traceset_t *t, size_t ch) {
  return t && ch < t->msg->n_channels ? t->msg->channels[ch] : NULL;
}

int la_traceset_channel_find(const la_traceset_t *t, const char *name) {
  if (!t || !name) return LA_EINVAL;
  for (size_t i = 0; i < t->msg->n_channels; i++)
    if (!strcmp(t->msg->channels[i], name)) return (int)i;
  return LA_ENOTFOUND;
}

/* Channel ch's series in trace ct, or NULL. */
static const La__ChannelTrace *la__series(const La__CompactTrace *ct,
                                          size_t ch) {
  for (size_t i = 0; ct && i < ct->n_channels; i++)
    if (ct->channels[i]->channel == ch) return ct->channels[i];
  return NULL;
}

int la_traceset_channel(const la_traceset_t *t, size_t ch,
                        la_traceset_t **out) {
  if (out) *out = NULL;
  if (!t || !out) return LA_EINVAL;
  const La__TraceSet *m = t->msg;
  if (ch >= m->n_channels) return LA_ENOTFOUND;
  int rc = LA_ENOMEM;
  La__TraceSet v = *m;
  size_t nt = 0, nm = m->n_missing_ranks, nr = m->n_missing_reasons;
  La__CompactTrace *tv = calloc(m->n_traces + 1, sizeof *tv);
  La__CompactTrace **tp = calloc(m->n_traces + 1, sizeof *tp);
  uint32_t *miss = calloc(m->nprocs, sizeof *miss);
  La__MissingRank *rv = calloc(m->nprocs, sizeof *rv);
  La__MissingRank **rp = calloc(m->nprocs, sizeof *rp);
  if (!tv || !tp || !miss || !rv || !rp) goto done;
  /* the missing ranks and reasons of the set, then those without ch */
  if (nm) memcpy(miss, m->missing_ranks, nm * sizeof *miss);
  for (size_t i = 0; i < nr; i++) rp[i] = m->missing_reasons[i];
  for (size_t i = 0; i < m->n_traces; i++) {
    const La__CompactTrace *ct = m->traces[i];
    const La__ChannelTrace *c = la__series(ct, ch);
    if (!c && m->n_channels > 1) {
      miss[nm++] = ct->rank;
      la__missing_rank__init(&rv[nr]);
      rv[nr].rank = ct->rank;
      rv[nr].reason = (char *)LA__NO_CHANNEL;
      rp[nr] = &rv[nr];
      nr++;
      continue;
    }
    tv[nt] = *ct;
    if (c) { /* one channel name: the trace is that channel */
      tv[nt].segments = c->segments;
      tv[nt].stats = c->stats;
      tv[nt].error = c->error;
      tv[nt].has_robust_segments = c->has_robust_segments;
      tv[nt].robust_segments = c->robust_segments;
      tv[nt].robust_stats = c->robust_stats;
      tv[nt].has_interference = 0;
    }
    tv[nt].n_channels = 0;
    tv[nt].channels = NULL;
    tp[nt] = &tv[nt];
    nt++;
  }
  /* the codec wants both lists in increasing rank order */
  for (size_t i = 1; i < nm; i++)
    for (size_t j = i; j > 0 && miss[j - 1] > miss[j]; j--) {
      uint32_t x = miss[j];
      miss[j] = miss[j - 1];
      miss[j - 1] = x;
    }
  for (size_t i = 1; i < nr; i++)
    for (size_t j = i; j > 0 && rp[j - 1]->rank > rp[j]->rank; j--) {
      La__MissingRank *x = rp[j];
      rp[j] = rp[j - 1];
      rp[j - 1] = x;
    }
  v.n_traces = nt;
  v.traces = tp;
  v.n_missing_ranks = nm;
  v.missing_ranks = miss;
  v.n_missing_reasons = nr;
  v.missing_reasons = rp;
  v.complete = m->complete && nm == 0;
  v.n_channels = 0;
  v.channels = NULL;
  char why[200];
  rc = la_traceset_from_message(&v, out, why, sizeof why);
  if (rc == 0) {
    (*out)->dropped = t->dropped;
    la__traceset_choose(*out,
                        t->robust ? LA_WEIGHTS_DEFAULT : LA_WEIGHTS_MEASURED);
  }
done:
  free(tv);
  free(tp);
  free(miss);
  free(rv);
  free(rp);
  return rc;
}

int la_traceset_channel_rank_weights(const la_traceset_t *t, size_t ch,
                                     uint32_t rank, double *w) {
  if (!t || !w || rank >= t->nprocs) return LA_EINVAL;
  la_traceset_t *v = NULL;
  int rc = la_traceset_channel(t, ch, &v);
  if (rc == 0) rc = la_traceset_rank_weights(v, rank, w);
  la_traceset_free(v);
  return rc;
}
