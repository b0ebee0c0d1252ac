/* SPDX-License-Identifier: BSD-3-Clause */
/* la_msg_validate.c: what a message must satisfy on its own (la_codec.h's
 * la_msg_validate checks the message's type, then calls
 * la_msg_check_fields; la_msg_decode runs it on every message it decodes).
 *
 * Required fields are enforced by protobuf-c's proto2 unpacker; ranges,
 * string lengths and consistency between fields are checked here. What
 * depends on a session's state (a buffer index below the registered count,
 * a rank below the application's nprocs) is for the receiver to check.
 * No I/O, no state.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_msg_validate.h"
#include "la_errcodes.h"
#include "la_errors.h"

/* ------------------------------------------------------------ validation */

/* A printable identifier of 1..LA_MAX_ID_LEN bytes (ids, names, hosts). */
static int la__id_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > LA_MAX_ID_LEN) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e) return 0;
  return 1;
}

/* A LocalAgent instance id: LA_INSTANCE_LEN lowercase hex digits. */
static int la__instance_ok(const char *s) {
  if (strlen(s) != LA_INSTANCE_LEN) return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return 0;
  return 1;
}

static int la__text_ok(const char *s, size_t max) {
  return s == NULL || strlen(s) <= max;
}

static int la__compact_ok(const La__CompactParams *c, char *why, size_t n) {
  if (!c) return 0;
  if (c->has_mode && (c->mode < LA__COMPACT_MODE__COMPACT_DEFAULT ||
                      c->mode > LA__COMPACT_MODE__COMPACT_LOSSLESS))
    return la_errorf(why, n, LA_EPROTO, "compact.mode %d unknown",
                     (int)c->mode);
  if (c->has_cv && !(isfinite(c->cv) && c->cv >= 0 && c->cv <= 100))
    return la_errorf(why, n, LA_EPROTO, "compact.cv %g outside 0..100", c->cv);
  if (c->has_epsilon && !(isfinite(c->epsilon) && c->epsilon >= 0))
    return la_errorf(why, n, LA_EPROTO,
                     "compact.epsilon %g not a finite value >= 0", c->epsilon);
  return 0;
}

/* No grid, or 3 non-zero dimensions multiplying to n_elements (each < 2^64:
 * the product of the first two fits 128 bits; past 2^64 it cannot match). */
static int la__grid_ok(size_t n_grid, const uint64_t *g, uint64_t n_elements,
                       char *why, size_t n) {
  if (n_grid == 0) return 0;
  if (n_grid != 3)
    return la_errorf(why, n, LA_EPROTO, "grid must have 3 dimensions");
  unsigned __int128 p = (unsigned __int128)g[0] * g[1];
  if (g[0] == 0 || g[1] == 0 || g[2] == 0 || p > UINT64_MAX ||
      p * g[2] != n_elements)
    return la_errorf(why, n, LA_EPROTO, "grid does not multiply to n_elements");
  return 0;
}

/* A grid's place in the global grid: no origin and no global extent, or
 * both with 3 entries, on a grid, each dimension's cells inside the global
 * grid (origin + dims <= global). */
static int la__grid_place_ok(size_t n_grid, const uint64_t *g, size_t n_org,
                             const uint64_t *org, size_t n_glob,
                             const uint64_t *glob, char *why, size_t n) {
  if (n_org == 0 && n_glob == 0) return 0;
  if (n_grid != 3 || n_org != 3 || n_glob != 3)
    return la_errorf(why, n, LA_EPROTO,
                     "grid origin and global extent need a grid and 3 "
                     "entries each");
  for (int d = 0; d < 3; d++)
    if (glob[d] == 0 || glob[d] > (1ULL << 32) ||
        (unsigned __int128)org[d] + g[d] > glob[d])
      return la_errorf(why, n, LA_EPROTO,
                       "grid dimension %d: origin %llu + %llu cells "
                       "outside the global extent %llu",
                       d, (unsigned long long)org[d], (unsigned long long)g[d],
                       (unsigned long long)glob[d]);
  return 0;
}

/* A registration's period and grid (RegisterRequest and RankStart carry
 * them under the same field names: LA__SHAPE_OK takes either): 0, or
 * LA_EPROTO with the reason. */
static int la__shape_ok(int has_period, uint32_t period, size_t n_grid,
                        const uint64_t *g, uint64_t n_elements, size_t n_org,
                        const uint64_t *org, size_t n_glob,
                        const uint64_t *glob, char *why, size_t n) {
  if (has_period && period == 0)
    return la_errorf(why, n, LA_EPROTO, "period 0 (must be >= 1)");
  if (la__grid_ok(n_grid, g, n_elements, why, n) ||
      la__grid_place_ok(n_grid, g, n_org, org, n_glob, glob, why, n))
    return LA_EPROTO;
  return 0;
}
#define LA__SHAPE_OK(r, why, n)                                       \
  la__shape_ok((r)->has_period, (r)->period, (r)->n_grid, (r)->grid,  \
               (r)->n_elements, (r)->n_grid_origin, (r)->grid_origin, \
               (r)->n_grid_global, (r)->grid_global, why, n)

/* One chunk or page of element ids: 1..LA_ELEMENT_IDS_PAGE ids, each >= 0,
 * inside 0..2^32 elements (and inside n_elements when given). */
static int la__element_ids_ok(const La__ElementIds *e, char *why, size_t n) {
  if (!e) return la_errorf(why, n, LA_EPROTO, "element ids missing");
  if (e->n_ids == 0 || e->n_ids > LA_ELEMENT_IDS_PAGE)
    return la_errorf(why, n, LA_EPROTO, "%zu ids in one message (1..%u)",
                     e->n_ids, LA_ELEMENT_IDS_PAGE);
  uint64_t lim = e->has_n_elements ? e->n_elements : (1ULL << 32);
  if (lim > (1ULL << 32) || e->first > lim || e->n_ids > lim - e->first)
    return la_errorf(
        why, n, LA_EPROTO, "ids %llu..%llu outside the %llu elements",
        (unsigned long long)e->first,
        (unsigned long long)(e->first + e->n_ids - 1), (unsigned long long)lim);
  for (size_t i = 0; i < e->n_ids; i++)
    if (e->ids[i] < 0)
      return la_errorf(
          why, n, LA_EPROTO, "id of element %llu is negative (%lld)",
          (unsigned long long)(e->first + i), (long long)e->ids[i]);
  if (e->app_id && !la__id_ok(e->app_id))
    return la_errorf(why, n, LA_EPROTO, "app_id invalid");
  return 0;
}

static int la__rank_ok(uint32_t rank, uint32_t nprocs, char *why, size_t n) {
  if (nprocs == 0 || nprocs > LA_MAX_RANKS)
    return la_errorf(why, n, LA_EPROTO, "nprocs %u outside 1..%u", nprocs,
                     LA_MAX_RANKS);
  if (rank >= nprocs)
    return la_errorf(why, n, LA_EPROTO, "rank %u not below nprocs %u", rank,
                     nprocs);
  return 0;
}

/* Channel names (LA_channel): none, or 1..LA_MAX_CHANNELS_WIRE names of
 * 1..LA_MAX_CHANNEL_NAME_WIRE printable characters, no two the same. */
static int la__channels_ok(size_t k, char *const *names, char *why, size_t n) {
  if (k > LA_MAX_CHANNELS_WIRE)
    return la_errorf(why, n, LA_EPROTO, "%zu channels (max %u)", k,
                     LA_MAX_CHANNELS_WIRE);
  for (size_t i = 0; i < k; i++) {
    if (!la__id_ok(names[i]) || strlen(names[i]) > LA_MAX_CHANNEL_NAME_WIRE)
      return la_errorf(why, n, LA_EPROTO,
                       "channel %zu: name empty, longer than %u or not "
                       "printable",
                       i, LA_MAX_CHANNEL_NAME_WIRE);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(names[i], names[j]))
        return la_errorf(why, n, LA_EPROTO, "channel name '%s' repeated",
                         names[i]);
  }
  return 0;
}

/* A trace's channel series: indices increasing below LA_MAX_CHANNELS_WIRE, at
 * least two, each with its encoding and statistics (robust ones in pairs)
 * for the trace's n_elements. */
static int la__trace_channels_ok(const La__CompactTrace *t, char *why,
                                 size_t n) {
  if (t->n_channels == 0) return 0;
  if (t->n_channels < 2 || t->n_channels > LA_MAX_CHANNELS_WIRE)
    return la_errorf(why, n, LA_EPROTO, "%zu channel series (2..%u)",
                     t->n_channels, LA_MAX_CHANNELS_WIRE);
  for (size_t i = 0; i < t->n_channels; i++) {
    const La__ChannelTrace *c = t->channels[i];
    if (!c || !c->stats || c->segments.len == 0)
      return la_errorf(why, n, LA_EPROTO,
                       "channel series %zu without segments or stats", i);
    if (c->channel >= LA_MAX_CHANNELS_WIRE ||
        (i > 0 && c->channel <= t->channels[i - 1]->channel))
      return la_errorf(why, n, LA_EPROTO,
                       "channel series not in increasing channel "
                       "order below %u",
                       LA_MAX_CHANNELS_WIRE);
    if (c->stats->count != t->n_elements)
      return la_errorf(why, n, LA_EPROTO,
                       "channel %u: stats.count %llu differs from "
                       "n_elements %llu",
                       c->channel, (unsigned long long)c->stats->count,
                       (unsigned long long)t->n_elements);
    if (c->has_robust_segments != (c->robust_stats != NULL) ||
        (c->robust_stats && (c->robust_segments.len == 0 ||
                             c->robust_stats->count != t->n_elements)))
      return la_errorf(why, n, LA_EPROTO,
                       "channel %u: robust weights incomplete", c->channel);
  }
  return 0;
}

int la_msg_trace_key_ok(const La__CompactTrace *t) {
  return t && la__id_ok(t->app_id);
}

static int la__trace_ok(const La__CompactTrace *t, char *why, size_t n) {
  if (!t) return la_errorf(why, n, LA_EPROTO, "trace missing");
  if (!t->stats) return la_errorf(why, n, LA_EPROTO, "trace without stats");
  if (!la__id_ok(t->app_id))
    return la_errorf(why, n, LA_EPROTO,
                     "app_id empty, too long or not printable");
  if (t->n_elements == 0 || t->n_elements > (1ULL << 32))
    return la_errorf(why, n, LA_EPROTO, "n_elements %llu out of range",
                     (unsigned long long)t->n_elements);
  if (t->mode < LA__COMPACT_MODE__COMPACT_POLYLINE ||
      t->mode > LA__COMPACT_MODE__COMPACT_LOSSLESS)
    return la_errorf(why, n, LA_EPROTO, "trace mode %d unknown", (int)t->mode);
  if (t->stats->count != t->n_elements)
    return la_errorf(
        why, n, LA_EPROTO, "stats.count %llu differs from n_elements %llu",
        (unsigned long long)t->stats->count, (unsigned long long)t->n_elements);
  if (t->segments.len == 0)
    return la_errorf(why, n, LA_EPROTO, "segments empty");
  if (t->coarse && (!t->coarse[0] || !la__text_ok(t->coarse, 256)))
    return la_errorf(why, n, LA_EPROTO, "coarse reason empty or too long");
  /* Robust weights (docs/fidelity.md): an encoding and its statistics come
   * together or not at all. */
  if (t->has_robust_segments != (t->robust_stats != NULL))
    return la_errorf(why, n, LA_EPROTO,
                     "robust_segments and robust_stats must come together");
  if (t->robust_stats) {
    if (t->robust_segments.len == 0)
      return la_errorf(why, n, LA_EPROTO, "robust_segments empty");
    if (t->robust_stats->count != t->n_elements)
      return la_errorf(why, n, LA_EPROTO,
                       "robust_stats.count %llu differs from n_elements %llu",
                       (unsigned long long)t->robust_stats->count,
                       (unsigned long long)t->n_elements);
  }
  if (t->has_interference &&
      !(isfinite(t->interference) && t->interference >= 0))
    return la_errorf(why, n, LA_EPROTO,
                     "interference %g not a finite value >= 0",
                     t->interference);
  if (t->has_flagged && t->flagged > t->n_elements)
    return la_errorf(why, n, LA_EPROTO, "flagged %llu exceeds n_elements %llu",
                     (unsigned long long)t->flagged,
                     (unsigned long long)t->n_elements);
  if (t->has_flagged_time &&
      !(isfinite(t->flagged_time) && t->flagged_time >= 0))
    return la_errorf(why, n, LA_EPROTO,
                     "flagged_time %g not a finite value >= 0",
                     t->flagged_time);
  /* A reconstructed member (docs/clusters.md): its representative and a
   * finite scale come together, the class only with them. */
  if (t->has_rep_rank != t->has_rep_scale ||
      (t->has_rep_class && !t->has_rep_rank))
    return la_errorf(why, n, LA_EPROTO,
                     "rep_rank and rep_scale must come together");
  if (t->has_rep_scale && !isfinite(t->rep_scale))
    return la_errorf(why, n, LA_EPROTO, "rep_scale %g not finite",
                     t->rep_scale);
  return la__trace_channels_ok(t, why, n);
}

static int la__set_ok(const La__TraceSet *s, char *why, size_t n) {
  if (!s) return la_errorf(why, n, LA_EPROTO, "trace set missing");
  if (!la__id_ok(s->app_id))
    return la_errorf(why, n, LA_EPROTO, "app_id invalid");
  if (s->nprocs == 0 || s->nprocs > LA_MAX_RANKS)
    return la_errorf(why, n, LA_EPROTO, "nprocs %u out of range", s->nprocs);
  if (s->n_traces > s->nprocs || s->n_missing_ranks > s->nprocs)
    return la_errorf(why, n, LA_EPROTO,
                     "more traces or missing ranks than nprocs");
  if (s->complete && (s->n_traces != s->nprocs || s->n_missing_ranks))
    return la_errorf(why, n, LA_EPROTO,
                     "complete set without every rank's trace");
  if (s->n_rank_elements && s->n_rank_elements != s->nprocs)
    return la_errorf(why, n, LA_EPROTO,
                     "rank_elements has %zu entries for %u ranks",
                     s->n_rank_elements, s->nprocs);
  if (s->n_timer_res_ns && s->n_timer_res_ns != s->nprocs)
    return la_errorf(why, n, LA_EPROTO,
                     "timer_res_ns has %zu entries for %u ranks",
                     s->n_timer_res_ns, s->nprocs);
  for (size_t i = 0; i < s->n_timer_res_ns; i++)
    if (!(isfinite(s->timer_res_ns[i]) && s->timer_res_ns[i] >= 0))
      return la_errorf(why, n, LA_EPROTO,
                       "timer_res_ns of rank %zu not finite or < 0", i);
  for (size_t i = 0; i < s->n_grids; i++) {
    const La__GridRank *g = s->grids[i];
    if (!g || g->rank >= s->nprocs || g->n_dims != 3 ||
        (i > 0 && g->rank <= s->grids[i - 1]->rank))
      return la_errorf(why, n, LA_EPROTO,
                       "grid of rank %u invalid or out of order",
                       g ? g->rank : 0);
    if (la__grid_place_ok(g->n_dims, g->dims, g->n_origin, g->origin,
                          g->n_global, g->global, why, n))
      return LA_EPROTO;
  }
  if (s->n_detection && s->n_detection != s->nprocs)
    return la_errorf(why, n, LA_EPROTO,
                     "detection has %zu entries for %u ranks", s->n_detection,
                     s->nprocs);
  for (size_t i = 0; i < s->n_detection; i++)
    if (!s->detection[i] || !la__text_ok(s->detection[i], 256))
      return la_errorf(why, n, LA_EPROTO, "detection of rank %zu too long", i);
  if (la__channels_ok(s->n_channels, s->channels, why, n)) return LA_EPROTO;
  for (size_t i = 0; i < s->n_traces; i++) {
    const La__CompactTrace *t = s->traces[i];
    if (la__trace_ok(t, why, n)) return LA_EPROTO;
    if (t->rank >= s->nprocs)
      return la_errorf(why, n, LA_EPROTO, "trace rank %u >= nprocs", t->rank);
    if (i > 0 && t->rank <= s->traces[i - 1]->rank)
      return la_errorf(why, n, LA_EPROTO,
                       "traces not in increasing rank order");
    if (strcmp(t->app_id, s->app_id) || t->cycle_tag != s->cycle_tag)
      return la_errorf(why, n, LA_EPROTO,
                       "trace of rank %u belongs to another set", t->rank);
  }
  /* Both lists are in increasing rank order, so one merge walk finds a rank
   * listed in both: linear in ranks (sets may have up to LA_MAX_RANKS). */
  size_t j = 0;
  for (size_t i = 0; i < s->n_missing_ranks; i++) {
    uint32_t r = s->missing_ranks[i];
    if (r >= s->nprocs)
      return la_errorf(why, n, LA_EPROTO, "missing rank %u >= nprocs", r);
    if (i > 0 && r == s->missing_ranks[i - 1])
      return la_errorf(why, n, LA_EPROTO, "missing_ranks lists rank %u twice",
                       r);
    if (i > 0 && r < s->missing_ranks[i - 1])
      return la_errorf(why, n, LA_EPROTO,
                       "missing_ranks not in increasing order");
    while (j < s->n_traces && s->traces[j]->rank < r) j++;
    if (j < s->n_traces && s->traces[j]->rank == r)
      return la_errorf(why, n, LA_EPROTO, "rank %u both present and missing",
                       r);
  }
  if (s->n_missing_reasons > s->n_missing_ranks)
    return la_errorf(why, n, LA_EPROTO,
                     "more missing reasons than missing ranks");
  for (size_t i = 0; i < s->n_missing_reasons; i++) {
    const La__MissingRank *mr = s->missing_reasons[i];
    size_t k = 0;
    if (!mr || !mr->reason || !mr->reason[0] || !la__text_ok(mr->reason, 256))
      return la_errorf(why, n, LA_EPROTO, "missing reason empty or too long");
    while (k < s->n_missing_ranks && s->missing_ranks[k] != mr->rank) k++;
    if (k == s->n_missing_ranks)
      return la_errorf(why, n, LA_EPROTO,
                       "reason for rank %u, which is not missing", mr->rank);
    if (i > 0 && mr->rank <= s->missing_reasons[i - 1]->rank)
      return la_errorf(why, n, LA_EPROTO,
                       "missing reasons not in increasing rank order");
  }
  return 0;
}

/* One application of an AppList (ids and names as the store keeps them). */
static int la__app_info_ok(const La__AppInfo *a, char *why, size_t n) {
  if (!a || !la__id_ok(a->app_id))
    return la_errorf(why, n, LA_EPROTO,
                     "application id empty, too long or not printable");
  if (!la__text_ok(a->app_name, LA_MAX_ID_LEN) ||
      !la__text_ok(a->metric, LA_MAX_ID_LEN) || !la__text_ok(a->unit, 32))
    return la_errorf(why, n, LA_EPROTO, "%s: name, metric or unit too long",
                     a->app_id);
  if (a->nprocs > LA_MAX_RANKS || a->ranks_started > LA_MAX_RANKS ||
      a->ranks_ended > LA_MAX_RANKS)
    return la_errorf(why, n, LA_EPROTO, "%s: rank counts above %u", a->app_id,
                     LA_MAX_RANKS);
  return 0;
}

/* One cycle of a CycleList. */
static int la__cycle_info_ok(const La__CycleInfo *c, char *why, size_t n) {
  if (!c) return la_errorf(why, n, LA_EPROTO, "cycle missing");
  if (c->state != LA__CYCLE_STATE__CYCLE_OPEN &&
      c->state != LA__CYCLE_STATE__CYCLE_COMPLETE &&
      c->state != LA__CYCLE_STATE__CYCLE_PARTIAL)
    return la_errorf(why, n, LA_EPROTO, "cycle %llu: state %d unknown",
                     (unsigned long long)c->cycle_tag, (int)c->state);
  if (c->ranks_present > LA_MAX_RANKS || c->ranks_missing > LA_MAX_RANKS)
    return la_errorf(why, n, LA_EPROTO, "cycle %llu: rank counts above %u",
                     (unsigned long long)c->cycle_tag, LA_MAX_RANKS);
  if (!la__text_ok(c->reasons, LA_MAX_REASONS_LEN))
    return la_errorf(why, n, LA_EPROTO,
                     "cycle %llu: reasons longer than %u bytes",
                     (unsigned long long)c->cycle_tag, LA_MAX_REASONS_LEN);
  return 0;
}

/* A QueryReply answers one kind of query: Trace-Sets, applications (by
 * increasing id) or cycles (by increasing tag), each entry valid. The
 * feed protocol version is the receiver's to check (it answers a mismatch
 * with LA_EVERSION, not as a malformed message). */
static int la__query_reply_ok(const La__QueryReply *q, char *why, size_t n) {
  if (q->status > 0)
    return la_errorf(why, n, LA_EPROTO, "status %d > 0", q->status);
  if (!la__text_ok(q->message, 1024))
    return la_errorf(why, n, LA_EPROTO, "reply message too long");
  if ((q->n_sets > 0) + (q->apps != NULL) + (q->cycles != NULL) +
          (q->element_ids != NULL) + q->has_set_bytes >
      1)
    return la_errorf(why, n, LA_EPROTO, "more than one kind of answer");
  if (q->element_ids && la__element_ids_ok(q->element_ids, why, n))
    return LA_EPROTO;
  for (size_t i = 0; i < q->n_sets; i++)
    if (la__set_ok(q->sets[i], why, n)) return LA_EPROTO;
  for (size_t i = 0; q->apps && i < q->apps->n_apps; i++) {
    const La__AppInfo *a = q->apps->apps[i];
    if (la__app_info_ok(a, why, n)) return LA_EPROTO;
    if (i > 0 && strcmp(q->apps->apps[i - 1]->app_id, a->app_id) >= 0)
      return la_errorf(why, n, LA_EPROTO,
                       "applications not in increasing id order");
  }
  for (size_t i = 0; q->cycles && i < q->cycles->n_cycles; i++) {
    const La__CycleInfo *c = q->cycles->cycles[i];
    if (la__cycle_info_ok(c, why, n)) return LA_EPROTO;
    if (i > 0 && q->cycles->cycles[i - 1]->cycle_tag >= c->cycle_tag)
      return la_errorf(why, n, LA_EPROTO, "cycles not in increasing tag order");
  }
  return 0;
}

/* A status metric's name: 1..LA_MAX_ID_LEN of [a-z0-9_] (it becomes a JSON
 * key and a metric name). */
static int la__metric_name_ok(const char *s) {
  size_t k = s ? strlen(s) : 0;
  if (k == 0 || k > LA_MAX_ID_LEN) return 0;
  for (size_t i = 0; i < k; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '_'))
      return 0;
  return 1;
}

/* StatusReply: the daemon's name; typed values named and of a known kind
 * with their value, numbers finite; ids of applications and agents. */
static int la__status_ok(const La__StatusReply *s, char *why, size_t n) {
  if (!la__id_ok(s->daemon))
    return la_errorf(why, n, LA_EPROTO, "daemon name invalid");
  for (size_t i = 0; i < s->n_metrics; i++) {
    const La__StatusMetric *m = s->metrics[i];
    if (!la__metric_name_ok(m->name))
      return la_errorf(why, n, LA_EPROTO, "status metric %zu: name invalid", i);
    if (!la__text_ok(m->text, 1024) || !la__text_ok(m->help, 1024))
      return la_errorf(why, n, LA_EPROTO, "status metric %s: text too long",
                       m->name);
    int ok = m->kind == LA__STATUS_KIND__STATUS_INFO
                 ? m->text != NULL
                 : (m->kind == LA__STATUS_KIND__STATUS_COUNTER ||
                    m->kind == LA__STATUS_KIND__STATUS_GAUGE) &&
                       (m->has_integer || (m->has_real && isfinite(m->real)));
    if (!ok)
      return la_errorf(why, n, LA_EPROTO, "status metric %s: no valid value",
                       m->name);
  }
  for (size_t i = 0; i < s->n_apps; i++)
    if (!la__id_ok(s->apps[i]->app_id))
      return la_errorf(why, n, LA_EPROTO, "status app %zu: app_id invalid", i);
  for (size_t i = 0; i < s->n_agents; i++)
    if (!la__id_ok(s->agents[i]->host) ||
        !la__text_ok(s->agents[i]->address, 64))
      return la_errorf(why, n, LA_EPROTO,
                       "status agent %zu: host or address invalid", i);
  for (size_t i = 0; i < s->n_missing; i++)
    if (!la__text_ok(s->missing[i]->reason, 256))
      return la_errorf(why, n, LA_EPROTO, "status reason %zu: too long", i);
  return 0;
}

int la_msg_check_fields(uint16_t type, const ProtobufCMessage *m, char *why,
                        size_t n) {
  switch (type) {
    case LA__MSG_TYPE__MSG_REGISTER_REQUEST: {
      const La__RegisterRequest *r = (const void *)m;
      if (r->protocol != LA_PROTOCOL_VERSION)
        return la_errorf(why, n, LA_EPROTO, "protocol version %u, expected %u",
                         r->protocol, LA_PROTOCOL_VERSION);
      if (!la__id_ok(r->app_id))
        return la_errorf(why, n, LA_EPROTO,
                         "app_id empty, too long or not printable");
      if (!la__id_ok(r->app_name))
        return la_errorf(why, n, LA_EPROTO,
                         "app_name empty, too long or not printable");
      if (la__rank_ok(r->rank, r->nprocs, why, n)) return LA_EPROTO;
      if (r->pid <= 0)
        return la_errorf(why, n, LA_EPROTO, "pid %d invalid", r->pid);
      if (r->shm_id < 0 || r->sem_id < 0)
        return la_errorf(why, n, LA_EPROTO, "negative shm_id or sem_id");
      if (r->n_elements == 0 || r->n_elements > (1ULL << 32))
        return la_errorf(why, n, LA_EPROTO, "n_elements %llu outside 1..2^32",
                         (unsigned long long)r->n_elements);
      if (r->n_buffers < 2 || r->n_buffers > 16)
        return la_errorf(why, n, LA_EPROTO, "n_buffers %u outside 2..16",
                         r->n_buffers);
      if (!la__id_ok(r->metric) || !la__text_ok(r->unit, 32))
        return la_errorf(why, n, LA_EPROTO, "metric or unit invalid");
      if (LA__SHAPE_OK(r, why, n)) return LA_EPROTO;
      if (r->host && r->host[0] && !la__id_ok(r->host))
        return la_errorf(why, n, LA_EPROTO, "host invalid");
      if (la__channels_ok(r->n_channels, r->channels, why, n)) return LA_EPROTO;
      return la__compact_ok(r->compact, why, n);
    }
    case LA__MSG_TYPE__MSG_REGISTER_REPLY: {
      const La__RegisterReply *r = (const void *)m;
      if (!la__text_ok(r->message, 1024))
        return la_errorf(why, n, LA_EPROTO, "reply message too long");
      return 0;
    }
    case LA__MSG_TYPE__MSG_DATA_READY: {
      const La__DataReady *d = (const void *)m;
      if (d->buffer >= 16)
        return la_errorf(why, n, LA_EPROTO, "buffer %u >= 16", d->buffer);
      if (d->n_skipped_tags > 64)
        return la_errorf(why, n, LA_EPROTO, "%zu skipped tags (max 64)",
                         d->n_skipped_tags);
      return 0;
    }
    case LA__MSG_TYPE__MSG_HELLO: {
      const La__Hello *h = (const void *)m;
      if (h->protocol != LA_PROTOCOL_VERSION)
        return la_errorf(why, n, LA_EPROTO, "protocol version %u, expected %u",
                         h->protocol, LA_PROTOCOL_VERSION);
      if (!la__id_ok(h->host))
        return la_errorf(why, n, LA_EPROTO, "host invalid");
      if (h->instance && !la__instance_ok(h->instance))
        return la_errorf(why, n, LA_EPROTO,
                         "instance is not %d lowercase hex digits",
                         LA_INSTANCE_LEN);
      return 0;
    }
    case LA__MSG_TYPE__MSG_CHALLENGE: {
      const La__Challenge *c = (const void *)m;
      if (c->nonce.len < 16 || c->nonce.len > 64)
        return la_errorf(why, n, LA_EPROTO, "challenge nonce of %zu bytes",
                         c->nonce.len);
      return 0;
    }
    case LA__MSG_TYPE__MSG_AUTH: {
      const La__Auth *a = (const void *)m;
      if (a->mac.len < 16 || a->mac.len > 64)
        return la_errorf(why, n, LA_EPROTO, "mac of %zu bytes", a->mac.len);
      return 0;
    }
    case LA__MSG_TYPE__MSG_RANK_START: {
      const La__RankStart *r = (const void *)m;
      if (!la__id_ok(r->app_id))
        return la_errorf(why, n, LA_EPROTO, "app_id invalid");
      if (la__rank_ok(r->rank, r->nprocs, why, n)) return LA_EPROTO;
      if (r->n_elements == 0 || r->n_elements > (1ULL << 32))
        return la_errorf(why, n, LA_EPROTO, "n_elements out of range");
      if (!la__id_ok(r->metric))
        return la_errorf(why, n, LA_EPROTO, "metric invalid");
      if (LA__SHAPE_OK(r, why, n)) return LA_EPROTO;
      if (r->has_n_element_ids && r->n_element_ids != r->n_elements)
        return la_errorf(why, n, LA_EPROTO,
                         "%llu element ids announced for %llu elements",
                         (unsigned long long)r->n_element_ids,
                         (unsigned long long)r->n_elements);
      if (la__channels_ok(r->n_channels, r->channels, why, n)) return LA_EPROTO;
      if (r->has_owner_uid && r->owner_uid == UINT32_MAX)
        return la_errorf(why, n, LA_EPROTO, "owner_uid %u is no uid",
                         r->owner_uid);
      return la__compact_ok(r->compact, why, n);
    }
    case LA__MSG_TYPE__MSG_ELEMENT_IDS:
      return la__element_ids_ok((const void *)m, why, n);
    case LA__MSG_TYPE__MSG_RANK_REFUSED: {
      const La__RankRefused *r = (const void *)m;
      if (!la__id_ok(r->app_id))
        return la_errorf(why, n, LA_EPROTO, "app_id invalid");
      if (r->rank >= LA_MAX_RANKS)
        return la_errorf(why, n, LA_EPROTO, "rank %u out of range", r->rank);
      if (r->code >= 0 || r->code <= LA__ERR_LAST)
        return la_errorf(why, n, LA_EPROTO, "code %d is no LA error code",
                         r->code);
      if (!r->reason || !r->reason[0] || !la__text_ok(r->reason, 256))
        return la_errorf(why, n, LA_EPROTO, "reason empty or too long");
      return 0;
    }
    case LA__MSG_TYPE__MSG_RANK_END: {
      const La__RankEnd *r = (const void *)m;
      if (!la__id_ok(r->app_id))
        return la_errorf(why, n, LA_EPROTO, "app_id invalid");
      if (!la__text_ok(r->reason, 256))
        return la_errorf(why, n, LA_EPROTO, "reason long");
      return 0;
    }
    case LA__MSG_TYPE__MSG_TRACE_MISSING: {
      const La__TraceMissing *t = (const void *)m;
      if (!la__id_ok(t->app_id))
        return la_errorf(why, n, LA_EPROTO, "app_id invalid");
      if (!t->reason || !t->reason[0] || !la__text_ok(t->reason, 256))
        return la_errorf(why, n, LA_EPROTO, "reason empty or too long");
      return 0;
    }
    case LA__MSG_TYPE__MSG_COMPACT_TRACE:
      return la__trace_ok((const void *)m, why, n);
    case LA__MSG_TYPE__MSG_SUBSCRIBE: {
      const La__Subscribe *s = (const void *)m;
      if (s->app_id && s->app_id[0] && !la__id_ok(s->app_id))
        return la_errorf(why, n, LA_EPROTO, "app_id filter invalid");
      return 0;
    }
    case LA__MSG_TYPE__MSG_TRACE_SET:
      return la__set_ok((const void *)m, why, n);
    case LA__MSG_TYPE__MSG_TRACE_SET_HEAD: {
      const La__TraceSetHead *h = (const void *)m;
      if (!la__id_ok(h->app_id))
        return la_errorf(why, n, LA_EPROTO, "app_id invalid");
      if (h->parts == 0 || h->set_bytes < h->parts)
        return la_errorf(why, n, LA_EPROTO, "%u parts for %llu bytes", h->parts,
                         (unsigned long long)h->set_bytes);
      return 0;
    }
    case LA__MSG_TYPE__MSG_TRACE_SET_PART: {
      const La__TraceSetPart *p = (const void *)m;
      if (p->data.len == 0)
        return la_errorf(why, n, LA_EPROTO, "empty part %u", p->part);
      return 0;
    }
    case LA__MSG_TYPE__MSG_SET_NOTICE: {
      const La__SetNotice *x = (const void *)m;
      if (!la__id_ok(x->app_id))
        return la_errorf(why, n, LA_EPROTO, "app_id invalid");
      if (!la__id_ok(x->limit_name))
        return la_errorf(why, n, LA_EPROTO, "limit_name invalid");
      return 0;
    }
    case LA__MSG_TYPE__MSG_QUERY: {
      const La__Query *q = (const void *)m;
      if (!la__id_ok(q->what))
        return la_errorf(why, n, LA_EPROTO, "query kind invalid");
      return 0;
    }
    case LA__MSG_TYPE__MSG_QUERY_REPLY:
      return la__query_reply_ok((const void *)m, why, n);
    case LA__MSG_TYPE__MSG_STATUS_REPLY:
      return la__status_ok((const void *)m, why, n);
    case LA__MSG_TYPE__MSG_ERROR: {
      const La__Error *er = (const void *)m;
      if (!la__text_ok(er->message, 1024))
        return la_errorf(why, n, LA_EPROTO, "error message too long");
      return 0;
    }
    default:
      return 0;
  }
}
