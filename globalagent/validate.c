/* SPDX-License-Identifier: BSD-3-Clause */
/* validate.c: refusing compact traces that clients could not read
 * (validate.h). */
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ga.h"
#include "la_clusters.h"
#include "la_compact.h"
#include "la_log.h"

/* One encoding of the trace (what: "", "robust ", "channel 2 ",
 * "channel 2 robust "): it parses (la_trace_check_totals: every check the
 * decoder makes, without decoding), holds the trace's n_elements points in
 * its mode, and the statistics claimed for it (st, field: "stats",
 * "robust_stats", "channel 2 stats", ...) agree with its values
 * (la_trace_claim_check). sig (may be NULL, zeroed by the caller): its
 * signature, taken in the same pass when that pass can
 * (la_trace_check_totals_slices; count stays 0 when not). Returns 0 or
 * LA_EPROTO with the reason in why. */
static int la__enc_ok(const La__CompactTrace *t, const ProtobufCBinaryData *b,
                      const La__SeriesStats *st, const char *what,
                      const char *field, la_store_rep_sig_t *sig, char *why,
                      size_t why_len) {
  char w[200] = "";
  la_trace_totals_t tot;
  int sums_ok = 0;
  if ((sig ? la_trace_check_totals_slices(b->data, b->len, t->n_elements,
                                          &tot, LA_STORE_REP_BUCKETS,
                                          sig->share, &sums_ok, w, sizeof w)
           : la_trace_check_totals(b->data, b->len, t->n_elements, &tot, w,
                                   sizeof w)) != 0) {
    snprintf(why, why_len, "invalid trace: bad %sencoding: %s", what, w);
    return LA_EPROTO;
  }
  if (tot.n_points != t->n_elements || tot.mode != (int)t->mode) {
    snprintf(why, why_len,
             "invalid trace: %sencoding holds %llu points in mode %s, the "
             "trace %llu in mode %s",
             what, (unsigned long long)tot.n_points,
             la_compact_mode_name(tot.mode),
             (unsigned long long)t->n_elements,
             la_compact_mode_name((int)t->mode));
    return LA_EPROTO;
  }
  if (sig && sums_ok) { /* the signature, from the same pass */
    la_clusters_shares(sig->share, LA_STORE_REP_BUCKETS, &sig->dtot);
    sig->count = tot.n_points;
    sig->len = b->len;
  }
  if (!st) return 0;
  const la_series_stats_t claim = {st->count, st->sum, st->min, st->max};
  return la_trace_claim_check(&tot, &claim, field, why, why_len) ? LA_EPROTO
                                                                 : 0;
}

/* The element count of t against its rank's (0: unknown). Returns 0 or
 * LA_EPROTO with the reason in why. */
static int la__elements_ok(const La__CompactTrace *t, uint64_t rank_elements,
                           char *why, size_t why_len) {
  if (rank_elements && t->n_elements != rank_elements) {
    snprintf(
        why, why_len, "invalid trace: %llu elements, the rank registered %llu",
        (unsigned long long)t->n_elements, (unsigned long long)rank_elements);
    return LA_EPROTO;
  }
  return 0;
}

int la_ga_check_encodings(const La__CompactTrace *t, la_store_rep_sig_t *sig,
                          char *why, size_t why_len) {
  if (sig) memset(sig, 0, sizeof *sig);
  /* a trace of several channels is stored whole (store_reps.c) */
  int rc = la__enc_ok(t, &t->segments, t->stats, "", "stats",
                      t->n_channels ? NULL : sig, why, why_len);
  /* The robust weights: compacted with the same parameters, so the same
   * point count and mode (docs/fidelity.md). */
  if (rc == 0 && t->robust_stats) {
    la_store_rep_sig_t rs; /* the robust signature, from its own pass */
    memset(&rs, 0, sizeof rs);
    rc = la__enc_ok(t, &t->robust_segments, t->robust_stats, "robust ",
                    "robust_stats", sig && !t->n_channels ? &rs : NULL, why,
                    why_len);
    if (rc == 0 && sig && rs.count) {
      memcpy(sig->rshare, rs.share, sizeof sig->rshare);
      sig->rdtot = rs.dtot;
      sig->rcount = rs.count;
      sig->rlen = rs.len;
    }
  }
  for (size_t i = 0; rc == 0 && i < t->n_channels; i++) {
    const La__ChannelTrace *c = t->channels[i];
    char what[48], field[64];
    snprintf(what, sizeof what, "channel %u ", c->channel);
    snprintf(field, sizeof field, "channel %u stats", c->channel);
    rc = la__enc_ok(t, &c->segments, c->stats, what, field, NULL, why,
                    why_len);
    if (rc == 0 && c->robust_stats) {
      snprintf(what, sizeof what, "channel %u robust ", c->channel);
      snprintf(field, sizeof field, "channel %u robust_stats", c->channel);
      rc = la__enc_ok(t, &c->robust_segments, c->robust_stats, what, field,
                      NULL, why, why_len);
    }
  }
  return rc;
}

int la_ga_validate_trace(const La__CompactTrace *t, uint64_t rank_elements,
                         char *why, size_t why_len) {
  int rc = la__elements_ok(t, rank_elements, why, why_len);
  return rc ? rc : la_ga_check_encodings(t, NULL, why, why_len);
}

/* The element count rank registered (its RankStart), 0 when unknown: from
 * the application's cache (ga->apps) when it has the rank, else from the
 * store, then cached. A count never changes once stored (a RankStart that
 * disagrees is refused), so one store read per rank suffices. */
static uint64_t la__rank_elements(la_ga_t *ga, const char *app_id,
                                  uint32_t rank) {
  la_ga_app_t *a = ga->apps;
  while (a && strcmp(a->app_id, app_id)) a = a->next;
  if (a && rank < a->n_rank_elements && a->rank_elements[rank])
    return a->rank_elements[rank];
  uint64_t ne = 0;
  /* LA_ENOTFOUND (no RankStart yet) or a read error: the encoding is still
   * checked on its own. */
  if (la_store_rank_elements(ga->store, app_id, rank, &ne) != 0) return 0;
  if (a && !a->rank_elements && a->nprocs &&
      (a->rank_elements = calloc(a->nprocs, sizeof *a->rank_elements)))
    a->n_rank_elements = a->nprocs;
  if (a && rank < a->n_rank_elements) a->rank_elements[rank] = ne;
  return ne;
}

int la_ga_trace_refused(la_ga_t *ga, const char *host,
                        const La__CompactTrace *t, const char *enc_why,
                        char *why, size_t why_len) {
  uint64_t ne = la__rank_elements(ga, t->app_id, t->rank);
  if (la__elements_ok(t, ne, why, why_len) == 0) {
    if (!enc_why) return 0;
    snprintf(why, why_len, "%s", enc_why);
  }
  ga->st.invalid++;
  la_log_warnx("%s rank %u cycle %llu from LocalAgent %s refused: %s",
               t->app_id, t->rank, (unsigned long long)t->cycle_tag, host, why);
  return 1;
}
