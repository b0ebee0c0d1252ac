/* SPDX-License-Identifier: BSD-3-Clause */
/* store_load.c: a stored Trace-Set back into a message (la_store_load_set):
 * the application's metric and unit, the close record, the traces with their
 * robust weights, the missing records with their reasons, the ranks' element
 * counts, timer resolutions, grids (store_numbering.c), the channels' names and
 * series, checked row by row and then as a whole (la_msg_validate).
 *
 * A corrupt row gives LA_EIO with the reason in la_store_errmsg, never a
 * crash: every column is bounds-checked before it goes into the message.
 *
 * Deliberately not here: decoding the segments (the consumer does), writes
 * (store_write.c), lists of sets (store_query.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"

/* ------------------------------------------------------------- load a set */

void la_store_free_set(La__TraceSet *set) {
  if (!set) return;
  for (size_t i = 0; i < set->n_traces; i++) {
    La__CompactTrace *t = set->traces ? set->traces[i] : NULL;
    if (!t) continue;
    free(t->app_id);
    free(t->segments.data);
    free(t->stats);
    free(t->error);
    free(t->robust_segments.data);
    free(t->robust_stats);
    free(t->coarse);
    for (size_t c = 0; c < t->n_channels; c++) {
      La__ChannelTrace *ch = t->channels[c];
      if (!ch) continue;
      free(ch->segments.data);
      free(ch->stats);
      free(ch->error);
      free(ch->robust_segments.data);
      free(ch->robust_stats);
      free(ch);
    }
    free(t->channels);
    free(t);
  }
  free(set->traces);
  for (size_t i = 0; i < set->n_channels; i++)
    free(set->channels ? set->channels[i] : NULL);
  free(set->channels);
  la__store_free_grids(set);
  for (size_t i = 0; i < set->n_detection; i++)
    free(set->detection ? set->detection[i] : NULL);
  free(set->detection);
  free(set->timer_res_ns);
  for (size_t i = 0; i < set->n_missing_reasons; i++) {
    La__MissingRank *mr = set->missing_reasons ? set->missing_reasons[i] : NULL;
    if (mr) free(mr->reason);
    free(mr);
  }
  free(set->missing_reasons);
  free(set->missing_ranks);
  free(set->rank_elements);
  free(set->app_id);
  free(set->metric);
  free(set->unit);
  free(set);
}

static char *la__strdup_col(la_db_stmt_t *st, int i, size_t max, int *bad) {
  const unsigned char *t = la_db_column_text(st, i);
  int n = la_db_column_bytes(st, i);
  if (n < 0 || (size_t)n > max) {
    *bad = 1;
    return NULL;
  }
  char *p = malloc((size_t)n + 1);
  if (!p) return NULL;
  if (n && t) memcpy(p, t, (size_t)n);
  p[t ? n : 0] = 0;
  return p;
}

/* The robust columns (14..21) of an S_LOAD_TRACES row into t: all NULL
 * when the trace has no robust row. Returns 0, LA_EIO (corrupt row),
 * LA_ENOMEM. */
static int la__load_robust(la_store_t *s, la_db_stmt_t *st,
                           La__CompactTrace *t, la_store_reps_cache_t **reps) {
  if (la_db_column_type(st, 14) != LA_DB_NULL) {
    const void *blob = la_db_column_blob(st, 14);
    int blen = la_db_column_bytes(st, 14);
    int64_t count;
    /* empty: a reference, its representative's (store_history.c) */
    int ref = la_db_column_type(st, 14) == LA_DB_BLOB && blen == 0;
    if (ref) blob = "";
    if (la_db_column_type(st, 14) != LA_DB_BLOB || !blob || blen < 0 ||
        (unsigned)blen > LA_STORE_MAX_BLOB ||
        !la__col_int(st, 15, (int64_t)t->n_elements, (int64_t)t->n_elements,
                     &count))
      return la__store_corrupt(s,
                               "robust weights of %s cycle %llu rank %u: bad "
                               "segments or stat_count",
                               t->app_id, (unsigned long long)t->cycle_tag,
                               t->rank);
    t->robust_segments.data = malloc(blen ? (size_t)blen : 1);
    t->robust_stats = malloc(sizeof *t->robust_stats);
    if (!t->robust_segments.data || !t->robust_stats) return LA_ENOMEM;
    memcpy(t->robust_segments.data, blob, (size_t)blen);
    t->robust_segments.len = (size_t)blen;
    /* a class member's robust series, else a history one */
    int r = 0;
    if (ref && !*reps && !(*reps = la__store_reps_cache_new())) r = LA_ENOMEM;
    if (r == 0 && ref) r = la__store_reps_resolve_robust(s, t, *reps);
    if (r == 0 && ref) r = la__store_history_resolve(s, t, 1);
    if (r < 0) return r;
    t->has_robust_segments = 1;
    la__series_stats__init(t->robust_stats);
    t->robust_stats->count = (uint64_t)count;
    t->robust_stats->sum = la__col_double(st, 16);
    t->robust_stats->min = la__col_double(st, 17);
    t->robust_stats->max = la__col_double(st, 18);
  }
  if (la_db_column_type(st, 19) != LA_DB_NULL) {
    t->has_interference = 1;
    t->interference = la__col_double(st, 19);
  }
  if (la_db_column_type(st, 20) != LA_DB_NULL) {
    int64_t f;
    if (!la__col_int(st, 20, 0, (int64_t)t->n_elements, &f))
      return la__store_corrupt(s,
                               "robust weights of %s cycle %llu rank %u: bad "
                               "flagged count",
                               t->app_id, (unsigned long long)t->cycle_tag,
                               t->rank);
    t->has_flagged = 1;
    t->flagged = (uint64_t)f;
  }
  if (la_db_column_type(st, 21) != LA_DB_NULL) {
    t->has_flagged_time = 1;
    t->flagged_time = la__col_double(st, 21);
  }
  return 0;
}

/* One trace row of S_LOAD_TRACES into a new message. Returns 0, LA_EIO
 * (corrupt row; s->err says why), LA_ENOMEM. */
static int la__load_trace(la_store_t *s, la_db_stmt_t *st, const char *app_id,
                          uint64_t cycle_tag, La__CompactTrace **out,
                          la_store_reps_cache_t **reps) {
  int64_t rank, nel, mode, count;
  if (!la__col_int(st, 0, 0, (int64_t)LA_MAX_RANKS - 1, &rank))
    return la__store_corrupt(s, "trace of %s cycle %llu: bad rank", app_id,
                             (unsigned long long)cycle_tag);
  if (!la__col_int(st, 1, 1, (int64_t)1 << 32, &nel) ||
      !la__col_int(st, 2, LA__COMPACT_MODE__COMPACT_POLYLINE,
                   LA__COMPACT_MODE__COMPACT_LOSSLESS, &mode) ||
      !la__col_int(st, 4, nel, nel, &count))
    return la__store_corrupt(
        s,
        "trace of %s cycle %llu rank %lld: bad n_elements, "
        "mode or stat_count",
        app_id, (unsigned long long)cycle_tag, (long long)rank);
  const void *blob = la_db_column_blob(st, 3);
  int blen = la_db_column_bytes(st, 3);
  /* empty: a reference, its representative's (store_history.c) */
  int ref = la_db_column_type(st, 3) == LA_DB_BLOB && blen == 0;
  if (ref) blob = "";
  if (la_db_column_type(st, 3) != LA_DB_BLOB || !blob || blen < 0 ||
      (unsigned)blen > LA_STORE_MAX_BLOB)
    return la__store_corrupt(
        s,
        "trace of %s cycle %llu rank %lld: segments BLOB of "
        "%d bytes",
        app_id, (unsigned long long)cycle_tag, (long long)rank, blen);
  La__CompactTrace *t = calloc(1, sizeof *t);
  if (!t) return LA_ENOMEM;
  *out = t;
  la__compact_trace__init(t);
  t->app_id = strdup(app_id);
  t->segments.data = malloc(blen ? (size_t)blen : 1);
  t->stats = malloc(sizeof *t->stats);
  int has_err = la_db_column_type(st, 8) != LA_DB_NULL ||
                la_db_column_type(st, 9) != LA_DB_NULL ||
                la_db_column_type(st, 10) != LA_DB_NULL;
  if (has_err) t->error = malloc(sizeof *t->error);
  if (!t->app_id || !t->segments.data || !t->stats || (has_err && !t->error))
    return LA_ENOMEM;
  memcpy(t->segments.data, blob, (size_t)blen);
  t->segments.len = (size_t)blen;
  t->rank = (uint32_t)rank;
  t->cycle_tag = cycle_tag;
  t->n_elements = (uint64_t)nel;
  t->mode = (La__CompactMode)mode;
  la__series_stats__init(t->stats);
  t->stats->count = (uint64_t)count;
  t->stats->sum = la__col_double(st, 5);
  t->stats->min = la__col_double(st, 6);
  t->stats->max = la__col_double(st, 7);
  if (has_err) {
    la__fit_error__init(t->error);
    t->error->max_abs = la__col_double(st, 8);
    t->error->rmse = la__col_double(st, 9);
    t->error->cv = la__col_double(st, 10);
  }
  if (la_db_column_type(st, 11) != LA_DB_NULL) {
    t->has_t_xfer_ns = 1;
    t->t_xfer_ns = (uint64_t)la_db_column_int64(st, 11);
  }
  if (la_db_column_type(st, 12) != LA_DB_NULL) {
    t->has_rank_seq = 1;
    t->rank_seq = (uint64_t)la_db_column_int64(st, 12);
  }
  t->seq = (uint64_t)la_db_column_int64(st, 13);
  /* a class member stored by its representative, else a history one */
  int r = 0;
  if (ref && !*reps && !(*reps = la__store_reps_cache_new())) r = LA_ENOMEM;
  if (r == 0 && ref) r = la__store_reps_resolve(s, t, *reps);
  if (r == 0 && ref) r = la__store_history_resolve(s, t, 0);
  if (r == 1) r = 0;
  if (r == 0) r = la__store_coarse_load(s, t);
  return r ? r : la__load_robust(s, st, t, reps);
}

/* A BLOB column of at most LA_STORE_MAX_BLOB bytes into a new buffer:
 * 1 when copied, 0 when the column is no such BLOB, LA_ENOMEM. */
static int la__col_blob(la_db_stmt_t *st, int i, ProtobufCBinaryData *out) {
  const void *blob = la_db_column_blob(st, i);
  int blen = la_db_column_bytes(st, i);
  if (la_db_column_type(st, i) != LA_DB_BLOB || !blob || blen <= 0 ||
      (unsigned)blen > LA_STORE_MAX_BLOB)
    return 0;
  if (!(out->data = malloc((size_t)blen))) return LA_ENOMEM;
  memcpy(out->data, blob, (size_t)blen);
  out->len = (size_t)blen;
  return 1;
}

/* Exact statistics from columns i..i+3 (count, sum, min, max), count
 * required to be n. Returns 1, 0 (bad count), LA_ENOMEM. */
static int la__col_stats(la_db_stmt_t *st, int i, uint64_t n,
                         La__SeriesStats **out) {
  int64_t count;
  if (!la__col_int(st, i, (int64_t)n, (int64_t)n, &count)) return 0;
  if (!(*out = malloc(sizeof **out))) return LA_ENOMEM;
  la__series_stats__init(*out);
  (*out)->count = (uint64_t)count;
  (*out)->sum = la__col_double(st, i + 1);
  (*out)->min = la__col_double(st, i + 2);
  (*out)->max = la__col_double(st, i + 3);
  return 1;
}

/* One S_LOAD_CHAN_TRACES row into a new channel series of t. Returns 0,
 * LA_EIO (corrupt row), LA_ENOMEM. */
static int la__load_channel(la_store_t *s, la_db_stmt_t *st,
                            La__CompactTrace *t) {
  int64_t ch = 0;
  La__ChannelTrace *c = calloc(1, sizeof *c);
  La__ChannelTrace **v = realloc(t->channels, (t->n_channels + 1) * sizeof *v);
  if (!c || !v) {
    free(c);
    if (v) t->channels = v;
    return LA_ENOMEM;
  }
  t->channels = v;
  la__channel_trace__init(c);
  t->channels[t->n_channels++] = c;
  int ok = la__col_int(st, 1, 0, LA_MAX_CHANNELS_WIRE - 1, &ch) &&
           (t->n_channels == 1 ||
            ch > (int64_t)t->channels[t->n_channels - 2]->channel);
  c->channel = (uint32_t)ch;
  int r = ok ? la__col_blob(st, 2, &c->segments) : 0;
  if (r == 1) r = la__col_stats(st, 3, t->n_elements, &c->stats);
  if (r == 1 && la_db_column_type(st, 10) != LA_DB_NULL) {
    r = la__col_blob(st, 10, &c->robust_segments);
    c->has_robust_segments = r == 1;
    if (r == 1) r = la__col_stats(st, 11, t->n_elements, &c->robust_stats);
  }
  if (r == LA_ENOMEM) return r;
  if (r != 1)
    return la__store_corrupt(s,
                             "channel series of %s cycle %llu rank %u: bad "
                             "channel, segments or counts",
                             t->app_id, (unsigned long long)t->cycle_tag,
                             t->rank);
  if (la_db_column_type(st, 7) != LA_DB_NULL) {
    if (!(c->error = malloc(sizeof *c->error))) return LA_ENOMEM;
    la__fit_error__init(c->error);
    c->error->max_abs = la__col_double(st, 7);
    c->error->rmse = la__col_double(st, 8);
    c->error->cv = la__col_double(st, 9);
  }
  return 0;
}

static int la__load_channel_names(la_store_t *s, const char *app_id,
                                  La__TraceSet *set);

/* The channel series of the set's traces (rows of ranks without a loaded
 * trace skipped), then the channel names. Returns 0, LA_EIO, LA_ENOMEM. */
static int la__load_channels(la_store_t *s, const char *app_id,
                             uint64_t cycle_tag, La__TraceSet *set) {
  int r = 0, rc;
  size_t i = 0;
  la_db_stmt_t *st = s->st[S_LOAD_CHAN_TRACES];
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank = la_db_column_int64(st, 0);
    while (i < set->n_traces && set->traces[i]->rank < rank) i++;
    if (i == set->n_traces) break;
    if (set->traces[i]->rank == rank)
      r = la__load_channel(s, st, set->traces[i]);
  }
  if (r == 0 && rc != LA_DB_DONE && rc != LA_DB_ROW)
    r = la__store_sqlerr(s, "loading the channel series");
  la__done(st);
  return r ? r : la__load_channel_names(s, app_id, set);
}

/* The application's channel names into set->channels. Returns 0, LA_EIO,
 * LA_ENOMEM. */
static int la__load_channel_names(la_store_t *s, const char *app_id,
                                  La__TraceSet *set) {
  int r = 0, rc, bad = 0;
  la_db_stmt_t *st = s->st[S_LOAD_CHAN_NAMES];
  la_db_bind_text(st, 1, app_id, -1);
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    char **v = realloc(set->channels, (set->n_channels + 1) * sizeof *v);
    if (!v) {
      r = LA_ENOMEM;
      break;
    }
    set->channels = v;
    char *name = la__strdup_col(st, 1, LA_MAX_CHANNEL_NAME_WIRE, &bad);
    if (bad || la_db_column_int64(st, 0) != (int64_t)set->n_channels)
      r = la__store_corrupt(s, "channel names of %s: bad row", app_id);
    else if (!name)
      r = LA_ENOMEM;
    if (r) {
      free(name);
      break;
    }
    set->channels[set->n_channels++] = name;
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading the channel names");
  la__done(st);
  return r;
}

/* The missing records of a set into set->missing_reasons, by rank (ranks
 * >= nprocs left out when nprocs is known). Returns 0, LA_EIO, LA_ENOMEM. */
static int la__load_missing(la_store_t *s, const char *app_id,
                            uint64_t cycle_tag, int64_t nprocs,
                            La__TraceSet *set) {
  size_t cap = 0;
  int rc, r = 0, bad = 0;
  int64_t prev = -1;
  la_db_stmt_t *st = s->st[S_LOAD_MISSING];
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank;
    if (!la__col_int(st, 0, 0, (int64_t)LA_MAX_RANKS - 1, &rank) ||
        rank <= prev) {
      r = la__store_corrupt(s, "missing records of %s cycle %llu: bad rank",
                            app_id, (unsigned long long)cycle_tag);
      break;
    }
    prev = rank;
    if (nprocs && rank >= nprocs) continue;
    if ((r = la__store_reserve(s, &set->missing_reasons, set->n_missing_reasons,
                               &cap, sizeof *set->missing_reasons, 8)))
      break;
    La__MissingRank *mr = calloc(1, sizeof *mr);
    if (!mr) {
      r = LA_ENOMEM;
      break;
    }
    la__missing_rank__init(mr);
    mr->rank = (uint32_t)rank;
    set->missing_reasons[set->n_missing_reasons++] = mr;
    mr->reason = la__strdup_col(st, 1, LA_STORE_REASON_MAX, &bad);
    if (bad || (mr->reason && !mr->reason[0])) {
      r = la__store_corrupt(s,
                            "missing record of %s cycle %llu rank %lld: bad "
                            "reason",
                            app_id, (unsigned long long)cycle_tag,
                            (long long)rank);
      break;
    }
    if (!mr->reason) {
      r = LA_ENOMEM;
      break;
    }
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading the missing records");
  la__done(st);
  return r;
}

/* Timer resolution and detection status per rank (set->nprocs entries,
 * 0 and "" where a rank reported none) when any rank of the application
 * reported them; left empty otherwise. Returns 0, LA_EIO, LA_ENOMEM. */
static int la__load_fidelity(la_store_t *s, const char *app_id,
                             La__TraceSet *set) {
  int rc, r = 0, bad = 0;
  la_db_stmt_t *st = s->st[S_LOAD_FID];
  la_db_bind_text(st, 1, app_id, -1);
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank;
    if (!la__col_int(st, 0, 0, INT64_MAX, &rank)) {
      r = la__store_corrupt(s, "rank_fidelity of %s: bad rank", app_id);
      break;
    }
    if (rank >= set->nprocs) continue;
    if (!set->n_timer_res_ns) {
      size_t n = set->nprocs;
      set->timer_res_ns = calloc(n, sizeof *set->timer_res_ns);
      set->detection = calloc(n, sizeof *set->detection);
      if (!set->timer_res_ns || !set->detection) {
        r = LA_ENOMEM;
        break;
      }
      set->n_timer_res_ns = set->n_detection = n;
      for (size_t i = 0; i < n && r == 0; i++)
        if (!(set->detection[i] = strdup(""))) r = LA_ENOMEM;
      if (r) break;
    }
    double res =
        la_db_column_type(st, 1) == LA_DB_NULL ? 0 : la_db_column_double(st, 1);
    if (!(isfinite(res) && res >= 0)) {
      r = la__store_corrupt(s,
                            "rank_fidelity of %s rank %lld: bad timer_res_ns",
                            app_id, (long long)rank);
      break;
    }
    set->timer_res_ns[rank] = res;
    if (la_db_column_type(st, 2) != LA_DB_NULL) {
      char *d = la__strdup_col(st, 2, 256, &bad);
      if (bad) {
        r = la__store_corrupt(
            s, "rank_fidelity of %s rank %lld: detection too long", app_id,
            (long long)rank);
        break;
      }
      if (!d) {
        r = LA_ENOMEM;
        break;
      }
      free(set->detection[rank]);
      set->detection[rank] = d;
    }
  }
  if (r == 0 && rc != LA_DB_DONE)
    r = la__store_sqlerr(s, "loading the ranks' timer resolution");
  la__done(st);
  return r;
}

/* The application's nprocs (0: unknown) into *nprocs, its metric and unit
 * into set. Returns 0, LA_ENOTFOUND, LA_EIO, LA_ENOMEM. */
static int la__load_app(la_store_t *s, const char *app_id, La__TraceSet *set,
                        int64_t *nprocs) {
  int r = 0, bad = 0;
  la_db_stmt_t *st = s->st[S_LOAD_APP];
  la_db_bind_text(st, 1, app_id, -1);
  int rc = la_db_step(st);
  if (rc == LA_DB_ROW) {
    if (!la__col_int(st, 0, 0, (int64_t)LA_MAX_RANKS, nprocs))
      r = la__store_corrupt(s, "application %s: bad nprocs", app_id);
    if (r == 0) {
      set->metric = la__strdup_col(st, 1, 128, &bad);
      set->unit = la__strdup_col(st, 2, 128, &bad);
      if (bad)
        r = la__store_corrupt(s, "application %s: metric or unit too long",
                              app_id);
      else if (!set->metric || !set->unit)
        r = LA_ENOMEM;
    }
  } else {
    r = la__store_no_app(s, rc, app_id, "loading the application");
  }
  la__done(st);
  return r;
}

/* The close time of the set, when it was closed. Returns 0 or LA_EIO. */
static int la__load_close(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                          La__TraceSet *set) {
  int r = 0;
  la_db_stmt_t *st = s->st[S_LOAD_ROW];
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  int rc = la_db_step(st);
  if (rc == LA_DB_ROW) {
    if (la_db_column_int64(st, 0) &&
        la_db_column_type(st, 2) == LA_DB_INTEGER) {
      set->has_t_complete_ns = 1;
      set->t_complete_ns = (uint64_t)la_db_column_int64(st, 2);
    }
  } else if (rc != LA_DB_DONE) {
    r = la__store_sqlerr(s, "loading the Trace-Set record");
  }
  la__done(st);
  return r;
}

/* The packed members (store_reps.h) of ranks below before (*pr the next
 * of them, *more whether there is one) into set, by rank. */
static int la__load_packed(la_store_t *s, int64_t nprocs, int64_t before,
                           la_store_reps_cache_t *reps, size_t *cur,
                           uint32_t *pr, int *more, La__TraceSet *set,
                           size_t *cap, int64_t *prev) {
  int r = 0;
  for (; r == 0 && *more && (int64_t)*pr < before;
       *more = la__store_reps_packed_next(reps, cur, pr)) {
    if (nprocs && *pr >= nprocs) continue;
    if ((r = la__store_reserve(s, &set->traces, set->n_traces, cap,
                               sizeof *set->traces, 16)))
      break;
    set->traces[set->n_traces] = NULL;
    r = la__store_reps_packed_trace(s, reps, *pr, &set->traces[set->n_traces]);
    if (r == 0) r = la__store_coarse_load(s, set->traces[set->n_traces]);
    if (set->traces[set->n_traces]) set->n_traces++;
    *prev = *pr;
  }
  return r;
}

/* The traces of the set, by rank (those of ranks >= nprocs, stored before
 * the RankStart, left out when nprocs is known). Returns 0, LA_EIO,
 * LA_ENOMEM. */
static int la__load_traces(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, int64_t nprocs,
                           La__TraceSet *set) {
  int r = 0, rc = LA_DB_DONE;
  size_t cap = 0;
  int64_t prev = -1;
  la_store_reps_cache_t *reps = la__store_reps_cache_new(); /* members */
  if (!reps) return LA_ENOMEM;
  /* members packed into rep_classes rows, merged by rank */
  size_t n_packed = 0, cur = 0;
  uint32_t pr = 0;
  r = la__store_reps_packed_set(s, app_id, cycle_tag, reps, &n_packed);
  int more = r == 0 && la__store_reps_packed_next(reps, &cur, &pr);
  la_db_stmt_t *st = s->st[S_LOAD_TRACES];
  la_db_bind_text(st, 1, app_id, -1);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  while (r == 0 && (rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank = la_db_column_int64(st, 0);
    if (nprocs && rank >= nprocs) continue; /* stored before RankStart */
    r = la__load_packed(s, nprocs, rank, reps, &cur, &pr,
                        &more, set, &cap, &prev);
    if (r) break;
    if (more && pr == rank) /* stored again since: its row is served */
      more = la__store_reps_packed_next(reps, &cur, &pr);
    if (rank <= prev) {
      r = la__store_corrupt(s, "traces of %s cycle %llu: rank %lld repeated",
                            app_id, (unsigned long long)cycle_tag,
                            (long long)rank);
      break;
    }
    prev = rank;
    if ((r = la__store_reserve(s, &set->traces, set->n_traces, &cap,
                               sizeof *set->traces, 16)))
      break;
    set->traces[set->n_traces] = NULL;
    r = la__load_trace(s, st, app_id, cycle_tag, &set->traces[set->n_traces],
                       &reps);
    if (set->traces[set->n_traces]) set->n_traces++;
    if (r) break;
  }
  if (r == 0 && rc != LA_DB_DONE) r = la__store_sqlerr(s, "loading the traces");
  la__done(st);
  if (r == 0) /* the packed members after the last row */
    r = la__load_packed(s, nprocs, INT64_MAX, reps, &cur,
                        &pr, &more, set, &cap, &prev);
  la__store_reps_cache_free(reps);
  return r;
}

/* From the traces and missing records loaded: set->nprocs (nprocs when
 * known, else the highest rank present + 1), the missing ranks (below
 * nprocs without a trace), only the reasons of those ranks (a trace always
 * wins), and completeness. Returns 0 or LA_ENOMEM. */
static int la__settle_missing(La__TraceSet *set, int64_t nprocs) {
  int known = nprocs > 0;
  if (!known) {
    uint32_t hi = 0;
    if (set->n_traces) hi = set->traces[set->n_traces - 1]->rank + 1;
    if (set->n_missing_reasons &&
        set->missing_reasons[set->n_missing_reasons - 1]->rank + 1 > hi)
      hi = set->missing_reasons[set->n_missing_reasons - 1]->rank + 1;
    nprocs = hi;
  }
  set->nprocs = (uint32_t)nprocs;
  size_t n_missing = (size_t)nprocs - set->n_traces;
  if (n_missing) {
    set->missing_ranks = malloc(n_missing * sizeof *set->missing_ranks);
    if (!set->missing_ranks) return LA_ENOMEM;
    size_t j = 0, k = 0;
    for (uint32_t rk = 0; rk < set->nprocs; rk++) {
      if (j < set->n_traces && set->traces[j]->rank == rk)
        j++;
      else
        set->missing_ranks[k++] = rk;
    }
    set->n_missing_ranks = k;
  }
  size_t kept = 0;
  for (size_t i = 0, j = 0; i < set->n_missing_reasons; i++) {
    La__MissingRank *mr = set->missing_reasons[i];
    while (j < set->n_missing_ranks && set->missing_ranks[j] < mr->rank) j++;
    if (j < set->n_missing_ranks && set->missing_ranks[j] == mr->rank) {
      set->missing_reasons[kept++] = mr;
    } else {
      free(mr->reason);
      free(mr);
    }
  }
  set->n_missing_reasons = kept;
  set->complete = known && n_missing == 0;
  return 0;
}

/* Elements per rank (set->nprocs entries, 0 where unknown) from the
 * RankStart rows. Returns 0, LA_EIO, LA_ENOMEM. */
static int la__load_rank_elements(la_store_t *s, const char *app_id,
                                  La__TraceSet *set) {
  size_t nprocs = set->nprocs;
  set->rank_elements = calloc(nprocs, sizeof *set->rank_elements);
  if (!set->rank_elements) return LA_ENOMEM;
  set->n_rank_elements = nprocs;
  int r = 0, rc;
  la_db_stmt_t *st = s->st[S_LOAD_RANKS];
  la_db_bind_text(st, 1, app_id, -1);
  while ((rc = la_db_step(st)) == LA_DB_ROW) {
    int64_t rank, nel;
    if (!la__col_int(st, 0, 0, INT64_MAX, &rank) ||
        !la__col_int(st, 1, 0, (int64_t)1 << 32, &nel)) {
      r = la__store_corrupt(s, "ranks of %s: bad rank or n_elements", app_id);
      break;
    }
    if ((uint64_t)rank < nprocs) set->rank_elements[rank] = (uint64_t)nel;
  }
  if (r == 0 && rc != LA_DB_DONE) r = la__store_sqlerr(s, "loading the ranks");
  la__done(st);
  return r;
}

/* la_store_load_set, with the traces given (held != NULL) or loaded. */
static int la__load_set(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                        La__CompactTrace **held, size_t n_held,
                        La__TraceSet **out) {
  *out = NULL;
  int r = LA_ENOMEM;
  int64_t nprocs = 0;
  if (la__store_defer_flush(s) != 0) { /* its missing records */
    for (size_t i = 0; i < n_held; i++)
      la__compact_trace__free_unpacked(held[i], NULL);
    free(held);
    return LA_EIO;
  }
  La__TraceSet *set = calloc(1, sizeof *set);
  if (!set) {
    for (size_t i = 0; i < n_held; i++)
      la__compact_trace__free_unpacked(held[i], NULL);
    free(held);
    goto fail;
  }
  la__trace_set__init(set);
  if (held) {
    set->traces = held;
    set->n_traces = n_held;
  }
  if ((r = la__load_app(s, app_id, set, &nprocs))) goto fail;
  r = LA_ENOMEM;
  if (!(set->app_id = strdup(app_id))) goto fail;
  set->cycle_tag = cycle_tag;
  if ((r = la__load_close(s, app_id, cycle_tag, set)) ||
      (!held && (r = la__load_traces(s, app_id, cycle_tag, nprocs, set))) ||
      (!held && (r = la__load_channels(s, app_id, cycle_tag, set))) ||
      (held && (r = la__load_channel_names(s, app_id, set))) ||
      (r = la__load_missing(s, app_id, cycle_tag, nprocs, set)))
    goto fail;
  if (set->n_traces == 0 && set->n_missing_reasons == 0) {
    la__store_fmt(s->err, sizeof s->err, "no trace of %s cycle %llu", app_id,
                  (unsigned long long)cycle_tag);
    r = LA_ENOTFOUND;
    goto fail;
  }
  if ((r = la__settle_missing(set, nprocs)) ||
      (r = la__load_rank_elements(s, app_id, set)) ||
      (r = la__load_fidelity(s, app_id, set)) ||
      (r = la__store_load_grids(s, app_id, set)))
    goto fail;
  char why[200];
  if (la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &set->base, why,
                      sizeof why)) {
    r = la__store_corrupt(s, "Trace-Set %s cycle %llu: %s", app_id,
                          (unsigned long long)cycle_tag, why);
    goto fail;
  }
  *out = set;
  return 0;
fail:
  la_store_free_set(set);
  if (r == LA_ENOMEM) la__store_fmt(s->err, sizeof s->err, "out of memory");
  return r;
}

int la_store_load_set(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                      La__TraceSet **out) {
  if (!s || !app_id || !app_id[0] || !out) return LA_EINVAL;
  return la__load_set(s, app_id, cycle_tag, NULL, 0, out);
}

int la_store_load_set_with(la_store_t *s, const char *app_id,
                           uint64_t cycle_tag, La__CompactTrace **traces,
                           size_t n, La__TraceSet **out) {
  if (!s || !app_id || !app_id[0] || !out || (n && !traces)) {
    for (size_t i = 0; i < n && traces; i++)
      la__compact_trace__free_unpacked(traces[i], NULL);
    free(traces);
    return LA_EINVAL;
  }
  if (!traces && !(traces = calloc(1, sizeof *traces))) return LA_ENOMEM;
  return la__load_set(s, app_id, cycle_tag, traces, n, out);
}
