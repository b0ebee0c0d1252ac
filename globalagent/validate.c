/* validate.c: refusing compact traces that clients could not read
 * (validate.h). */
#include "validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ga.h"
#include "la_compact.h"
#include "la_log.h"

/* One channel encoding (what: "channel 2", "channel 2 robust") of the
 * trace: it parses and holds the trace's n_elements points in its mode.
 * Returns 0, LA_EPROTO or LA_ENOMEM with the reason in why. */
static int la__channel_enc_ok(const La__CompactTrace *t,
                              const ProtobufCBinaryData *b, const char *what,
                              uint32_t ch, char *why, size_t why_len) {
  char w[200] = "";
  la_trace_t *tr = NULL;
  int rc = la_trace_open_max(b->data, b->len, t->n_elements, &tr, w, sizeof w);
  if (rc == LA_ENOMEM) {
    snprintf(why, why_len, "out of memory checking the encodings");
    return rc;
  }
  if (rc != 0) {
    snprintf(why, why_len, "invalid trace: channel %u%s: bad encoding: %s",
             ch, what, w);
    return LA_EPROTO;
  }
  uint64_t n = la_trace_count(tr);
  int mode = la_trace_mode(tr);
  la_trace_close(tr);
  if (n != t->n_elements || mode != (int)t->mode) {
    snprintf(why, why_len,
             "invalid trace: channel %u%s: encoding holds %llu points in mode "
             "%s, the trace %llu in mode %s",
             ch, what, (unsigned long long)n, la_compact_mode_name(mode),
             (unsigned long long)t->n_elements,
             la_compact_mode_name((int)t->mode));
    return LA_EPROTO;
  }
  return 0;
}

/* Every channel series of the trace, measured and robust. */
static int la__channels_ok(const La__CompactTrace *t, char *why,
                           size_t why_len) {
  for (size_t i = 0; i < t->n_channels; i++) {
    const La__ChannelTrace *c = t->channels[i];
    int rc = la__channel_enc_ok(t, &c->segments, "", c->channel, why,
                                why_len);
    if (rc == 0 && c->robust_stats)
      rc = la__channel_enc_ok(t, &c->robust_segments, " robust", c->channel,
                              why, why_len);
    if (rc) return rc;
  }
  return 0;
}

int la_ga_validate_trace(const La__CompactTrace *t, uint64_t rank_elements,
                         char *why, size_t why_len) {
  char w[200] = "";
  if (rank_elements && t->n_elements != rank_elements) {
    snprintf(why, why_len,
             "invalid trace: %llu elements, the rank registered %llu",
             (unsigned long long)t->n_elements,
             (unsigned long long)rank_elements);
    return LA_EPROTO;
  }
  la_trace_t *tr = NULL;
  int rc = la_trace_open_max(t->segments.data, t->segments.len, t->n_elements,
                             &tr, w, sizeof w);
  if (rc == LA_ENOMEM) {
    snprintf(why, why_len, "out of memory checking the encoding");
    return rc;
  }
  if (rc != 0) {
    snprintf(why, why_len, "invalid trace: bad encoding: %s", w);
    return LA_EPROTO;
  }
  uint64_t n = la_trace_count(tr);
  int mode = la_trace_mode(tr);
  la_trace_close(tr);
  if (n != t->n_elements) {
    snprintf(why, why_len,
             "invalid trace: encoding holds %llu points, n_elements %llu",
             (unsigned long long)n, (unsigned long long)t->n_elements);
    return LA_EPROTO;
  }
  if (mode != (int)t->mode) {
    snprintf(why, why_len, "invalid trace: encoding mode %s, message says %s",
             la_compact_mode_name(mode), la_compact_mode_name((int)t->mode));
    return LA_EPROTO;
  }
  if ((rc = la__channels_ok(t, why, why_len))) return rc;
  if (!t->robust_stats) return 0;
  /* The robust weights: compacted with the same parameters, so the same
   * point count and mode (docs/fidelity.md). */
  rc = la_trace_open_max(t->robust_segments.data, t->robust_segments.len,
                         t->n_elements, &tr, w, sizeof w);
  if (rc == LA_ENOMEM) {
    snprintf(why, why_len, "out of memory checking the robust encoding");
    return rc;
  }
  if (rc != 0) {
    snprintf(why, why_len, "invalid trace: bad robust encoding: %s", w);
    return LA_EPROTO;
  }
  n = la_trace_count(tr);
  mode = la_trace_mode(tr);
  la_trace_close(tr);
  if (n != t->n_elements || mode != (int)t->mode) {
    snprintf(why, why_len,
             "invalid trace: robust encoding holds %llu points in mode %s, "
             "the trace %llu in mode %s",
             (unsigned long long)n, la_compact_mode_name(mode),
             (unsigned long long)t->n_elements,
             la_compact_mode_name((int)t->mode));
    return LA_EPROTO;
  }
  return 0;
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
                        const La__CompactTrace *t, char *why, size_t why_len) {
  uint64_t ne = la__rank_elements(ga, t->app_id, t->rank);
  int rc = la_ga_validate_trace(t, ne, why, why_len);
  if (rc == 0) return 0;
  if (rc == LA_ENOMEM) { /* not the trace's fault: store it unchecked */
    la_log_warnx("%s rank %u cycle %llu from %s: %s; stored unchecked",
                 t->app_id, t->rank, (unsigned long long)t->cycle_tag, host,
                 why);
    return 0;
  }
  ga->st.invalid++;
  la_log_warnx("%s rank %u cycle %llu from LocalAgent %s refused: %s",
               t->app_id, t->rank, (unsigned long long)t->cycle_tag, host,
               why);
  return 1;
}
