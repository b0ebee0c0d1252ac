/* SPDX-License-Identifier: BSD-3-Clause */
/* store_write.c: the store's write calls: applications and ranks (RankStart,
 * RankEnd), compact traces with their robust weights, missing records,
 * closed Trace-Sets and the LocalAgents' sequence numbers (see store.h for
 * each call's contract).
 *
 * Every call runs in the caller's batch or in a transaction of its own
 * (la__store_wbegin / la__store_wend). Idempotence comes from the keys:
 * INSERT OR IGNORE for traces, upserts guarded by "started = 0" /
 * "ended = 0" / "nprocs = 0" for rank and application rows.
 *
 * Deliberately not here: deciding when a set closes (the stitcher does), and
 * reading anything back beyond what a write needs (store_query.c,
 * store_load.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_time.h"
#include "store_internal.h"

/* Known nprocs of app_id into *nprocs (0: unknown). Returns 1 when the
 * application row exists, 0 when not, LA_EIO. */
static int la__app_nprocs(la_store_t *s, const char *app_id, uint32_t *nprocs) {
  la_db_stmt_t *st = s->st[S_APP_NPROCS];
  la_db_bind_text(st, 1, app_id, -1);
  int rc = la_db_step(st), r;
  if (rc == LA_DB_ROW) {
    int64_t v = la_db_column_int64(st, 0);
    *nprocs = v > 0 && v <= (int64_t)LA_MAX_RANKS ? (uint32_t)v : 0;
    r = 1;
  } else if (rc == LA_DB_DONE) {
    *nprocs = 0;
    r = 0;
  } else {
    r = la__store_sqlerr(s, "reading the application");
  }
  la__done(st);
  return r;
}

/* Creates the application row (nprocs unknown) if there is none. */
static int la__app_lazy(la_store_t *s, const char *app_id, uint64_t now) {
  la_db_stmt_t *st = s->st[S_APP_LAZY];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(now));
  return la__store_run(s, st, "creating the application");
}

/* Binds a RankStart's rank row (S_RANK_START, S_RANK_REOPEN: the same
 * parameters). */
static void la__bind_rank_start(la_db_stmt_t *st, const La__RankStart *m) {
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, m->rank);
  la_db_bind_int64(st, 3, la__i64(m->n_elements));
  la__bind_text(st, 4, m->host, 128);
  if (m->has_pid) la_db_bind_int64(st, 5, m->pid);
  la__bind_opt_u64(st, 6, m->has_t_start_ns, m->t_start_ns);
  la_db_bind_int64(st, 7, la__i64(m->seq));
}

int la_store_rank_start(la_store_t *s, const La__RankStart *m,
                        int *reopened) {
  if (reopened) *reopened = 0;
  if (!s || !m || !m->app_id || !m->app_id[0]) return LA_EINVAL;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  uint32_t known = 0;
  r = la__app_nprocs(s, m->app_id, &known);
  if (r < 0) goto out;
  r = 0;
  if (known && known != m->nprocs) {
    la__store_fmt(s->err, sizeof s->err,
                  "RankStart of %s rank %u says nprocs %u, but the application "
                  "has %u",
                  m->app_id, m->rank, m->nprocs, known);
    r = LA_EPROTO;
    goto out;
  }
  uint64_t now = la_realtime_ns();
  if (!known) {
    la_db_stmt_t *st = s->st[S_APP_START];
    const La__CompactParams *c = m->compact;
    la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
    la__bind_text(st, 2, m->app_name, 128);
    la_db_bind_int64(st, 3, m->nprocs);
    la__bind_text(st, 4, m->metric, 128);
    la__bind_text(st, 5, m->unit, 32);
    la_db_bind_int64(st, 6, m->has_period ? m->period : 0);
    if (c) {
      la_db_bind_int64(st, 7, c->has_mode ? (int)c->mode : 0);
      if (c->has_cv) la_db_bind_double(st, 8, c->cv);
      if (c->has_epsilon) la_db_bind_double(st, 9, c->epsilon);
      la_db_bind_int64(st, 10, c->has_relative && c->relative);
      la_db_bind_int64(st, 11, c->has_connected && c->connected);
      la_db_bind_int64(st, 12, c->has_outliers && c->outliers);
    }
    if (m->n_grid == 3) {
      for (int i = 0; i < 3; i++)
        la_db_bind_int64(st, 13 + i, la__i64(m->grid[i]));
    }
    la_db_bind_int64(st, 16, la__i64(now));
    if ((r = la__store_run(s, st, "storing the application"))) goto out;
  }
  la_db_stmt_t *st = s->st[S_RANK_REOPEN];
  la__bind_rank_start(st, m);
  if ((r = la__store_run(s, st, "reopening the rank"))) goto out;
  if (reopened) *reopened = la_db_changes(s->db) > 0;
  st = s->st[S_RANK_START];
  la__bind_rank_start(st, m);
  r = la__store_run(s, st, "storing the rank start");
  for (size_t c = 0; r == 0 && c < m->n_channels; c++) {
    st = s->st[S_CHAN_NAME_INS]; /* the first RankStart of the rank wins */
    la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 2, m->rank);
    la_db_bind_int64(st, 3, (int64_t)c);
    la__bind_text(st, 4, m->channels[c], LA_MAX_CHANNEL_NAME_WIRE);
    r = la__store_run(s, st, "storing the rank's channel names");
  }
  if (r == 0) r = la__store_rank_grid(s, m);
  if (r || !(m->has_timer_res_ns || m->interference)) goto out;
  st = s->st[S_FID_INS]; /* the first RankStart of the rank wins */
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, m->rank);
  if (m->has_timer_res_ns && isfinite(m->timer_res_ns) && m->timer_res_ns >= 0)
    la_db_bind_double(st, 3, m->timer_res_ns);
  if (m->interference) la__bind_text(st, 4, m->interference, 256);
  r = la__store_run(s, st, "storing the rank's timer resolution");
out:
  return la__store_wend(s, own, r);
}

int la_store_rank_end(la_store_t *s, const La__RankEnd *m, int *was_new) {
  if (was_new) *was_new = 0;
  if (!s || !m || !m->app_id || !m->app_id[0]) return LA_EINVAL;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  if ((r = la__app_lazy(s, m->app_id, la_realtime_ns()))) goto out;
  la_db_stmt_t *st = s->st[S_RANK_LAZY];
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, m->rank);
  if ((r = la__store_run(s, st, "creating the rank"))) goto out;
  st = s->st[S_RANK_END];
  la__bind_text(st, 1, m->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, m->rank);
  if (m->reason) la__bind_text(st, 3, m->reason, 256);
  la__bind_opt_u64(st, 4, m->has_cycles, m->cycles);
  la__bind_opt_u64(st, 5, m->has_skipped, m->skipped);
  la__bind_opt_u64(st, 6, m->has_t_end_ns, m->t_end_ns);
  la_db_bind_int64(st, 7, la__i64(m->seq));
  r = la__store_run(s, st, "storing the rank end");
  if (r == 0 && was_new) *was_new = la_db_changes(s->db) > 0;
out:
  return la__store_wend(s, own, r);
}

/* Runs statement id (S_MISS_SET) on the trace_sets row of
 * (app_id, cycle_tag) with the time now. Returns 0 or LA_EIO. */
static int la__cycle_touch(la_store_t *s, int id, const char *app_id,
                           uint64_t cycle_tag, uint64_t now, const char *what) {
  la_db_stmt_t *st = s->st[id];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  la_db_bind_int64(st, 3, la__i64(now));
  return la__store_run(s, st, what);
}

/* The robust row of a new trace, when it carries robust weights or
 * interference figures (the codec checked them). Returns 0 or LA_EIO. */
static int la__robust_has(const La__CompactTrace *t) {
  return t->robust_stats || t->has_interference || t->has_flagged ||
         t->has_flagged_time;
}

/* Binds a series' statistics (count, sum, min, max) to parameters at ..
 * at + 3 of st, and its fit error (max_abs, rmse, cv), when e is not NULL,
 * to at + 4 .. at + 6. */
static void la__bind_stats(la_db_stmt_t *st, int at, const La__SeriesStats *s,
                           const La__FitError *e) {
  la_db_bind_int64(st, at, la__i64(s->count));
  la_db_bind_double(st, at + 1, s->sum);
  la_db_bind_double(st, at + 2, s->min);
  la_db_bind_double(st, at + 3, s->max);
  if (e) {
    la_db_bind_double(st, at + 4, e->max_abs);
    la_db_bind_double(st, at + 5, e->rmse);
    la_db_bind_double(st, at + 6, e->cv);
  }
}

/* Binds the robust row's columns segments .. flagged_time of t to
 * parameters at .. at + 7 of st. */
static void la__robust_bind(la_db_stmt_t *st, int at,
                            const La__CompactTrace *t) {
  if (t->robust_stats && t->robust_segments.data) {
    la_db_bind_blob(st, at, t->robust_segments.data,
                    (int)t->robust_segments.len);
    la__bind_stats(st, at + 1, t->robust_stats, NULL);
  }
  if (t->has_interference) la_db_bind_double(st, at + 5, t->interference);
  la__bind_opt_u64(st, at + 6, t->has_flagged, t->flagged);
  if (t->has_flagged_time) la_db_bind_double(st, at + 7, t->flagged_time);
}

static int la__robust_put(la_store_t *s, const La__CompactTrace *t) {
  if (!la__robust_has(t)) return 0;
  la_db_stmt_t *st = s->st[S_ROBUST_INS];
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
  la_db_bind_int64(st, 3, t->rank);
  la__robust_bind(st, 4, t);
  return la__store_run(s, st, "storing the trace's robust weights");
}

/* The channel_traces rows of a new trace of several channels (the codec
 * checked them). Returns 0, LA_EINVAL (a blob too large), LA_EIO. */
static int la__channels_put(la_store_t *s, const La__CompactTrace *t) {
  int r = 0;
  for (size_t i = 0; r == 0 && i < t->n_channels; i++) {
    const La__ChannelTrace *c = t->channels[i];
    if (c->segments.len > INT32_MAX || c->robust_segments.len > INT32_MAX)
      return LA_EINVAL;
    la_db_stmt_t *st = s->st[S_CHAN_TRACE_INS];
    la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
    la_db_bind_int64(st, 3, t->rank);
    la_db_bind_int64(st, 4, c->channel);
    la_db_bind_blob(st, 5, c->segments.data, (int)c->segments.len);
    la__bind_stats(st, 6, c->stats, c->error);
    if (c->robust_stats) {
      la_db_bind_blob(st, 13, c->robust_segments.data,
                      (int)c->robust_segments.len);
      la__bind_stats(st, 14, c->robust_stats, NULL);
    }
    r = la__store_run(s, st, "storing the trace's channels");
  }
  return r;
}

int la__store_trace_check(la_store_t *s, const La__CompactTrace *t) {
  if (!s || !t || !t->app_id || !t->app_id[0] || !t->stats ||
      !t->segments.data || t->segments.len == 0 || t->segments.len > INT32_MAX)
    return LA_EINVAL;
  if (t->robust_stats &&
      (!t->robust_segments.data || t->robust_segments.len == 0 ||
       t->robust_segments.len > INT32_MAX))
    return LA_EINVAL;
  if (t->rank >= LA_MAX_RANKS) {
    la__store_fmt(s->err, sizeof s->err, "trace of %s: rank %u >= %u",
                  t->app_id, t->rank, LA_MAX_RANKS);
    return LA_EPROTO;
  }
  return 0;
}

int la_store_trace(la_store_t *s, const La__CompactTrace *t, int *was_new) {
  if (was_new) *was_new = 0;
  int r = la__store_trace_check(s, t);
  if (r) return r;
  /* the batch's deferred traces first: one may have this key */
  if (s->n_pend && (r = la__store_defer_flush(s))) return r;
  return la__store_trace_write(s, t, la_realtime_ns(), was_new);
}

int la__store_trace_write(la_store_t *s, const La__CompactTrace *t,
                          uint64_t now, int *was_new) {
  if (was_new) *was_new = 0;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  uint32_t nprocs = 0;
  if (strcmp(s->app_known, t->app_id)) {
    r = la__app_nprocs(s, t->app_id, &nprocs); /* does the app row exist? */
    if (r < 0) goto out;
    if (r == 0 && (r = la__app_lazy(s, t->app_id, now))) goto out;
    snprintf(s->app_known, sizeof s->app_known, "%s", t->app_id);
    r = 0;
  }
  if ((r = la__store_history_check(s, t))) goto out; /* store_history.c */
  /* A rank not below a known nprocs is stored all the same (nothing is
   * thrown away); it belongs to no Trace-Set (load_set, open_sets skip it).
   */
  la_db_stmt_t *st = s->st[S_TRACE_INS];
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
  la_db_bind_int64(st, 3, t->rank);
  la_db_bind_int64(st, 4, la__i64(t->n_elements));
  la_db_bind_int64(st, 5, (int)t->mode);
  la_db_bind_blob(st, 6, t->segments.data, (int)t->segments.len);
  la__bind_stats(st, 7, t->stats, t->error);
  la__bind_opt_u64(st, 14, t->has_t_xfer_ns, t->t_xfer_ns);
  la__bind_opt_u64(st, 15, t->has_rank_seq, t->rank_seq);
  la_db_bind_int64(st, 16, la__i64(t->seq));
  la_db_bind_int64(st, 17, la__i64(now));
  int pg = la_db_kind(s->db) == LA_DB_PG;
  if (pg) { /* S_TRACE_INS also writes the robust row: ?18 .. ?26 */
    la__robust_bind(st, 18, t);
    la_db_bind_int64(st, 26, la__robust_has(t));
  }
  if ((r = la__store_run(s, st, "storing the trace"))) goto out;
  if (la_db_changes(s->db) == 0) goto out; /* a resend: nothing changes */
  if (was_new) *was_new = 1;
  /* on PostgreSQL, S_TRACE_INS did the next three */
  if (pg) goto extras;
  /* a real trace wins over a missing record: deleted at the flush */
  if ((r = la__store_unmiss(s, t->app_id, t->cycle_tag, t->rank))) goto out;
extras:
  if (!pg && (r = la__robust_put(s, t))) goto out;
  if ((r = la__channels_put(s, t))) goto out;
  if ((r = la__store_history_put(s, t))) goto out;
  if ((r = la__store_coarse_put(s, t))) goto out;
  if (!pg) r = la__store_touch(s, t->app_id, t->cycle_tag, now);
out:
  r = la__store_wend(s, own, r);
  if (r && was_new) *was_new = 0;
  return r;
}

int la_store_agent_seq_update(la_store_t *s, const char *host, uint64_t seq) {
  if (!s || !host || !host[0]) return LA_EINVAL;
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  la_db_stmt_t *st = s->st[S_AGENT_UPD];
  la__bind_text(st, 1, host, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(seq));
  la_db_bind_int64(st, 3, la__i64(la_realtime_ns()));
  r = la__store_run(s, st, "recording the agent's sequence number");
  return la__store_wend(s, own, r);
}

int la_store_agent_next_seq(la_store_t *s, const char *host,
                            uint64_t *next_seq) {
  if (!s || !host || !host[0] || !next_seq) return LA_EINVAL;
  la_db_stmt_t *st = s->st[S_AGENT_GET];
  la__bind_text(st, 1, host, LA_MAX_ID_LEN);
  int rc = la_db_step(st), r = 0;
  if (rc == LA_DB_ROW) {
    int64_t v = la_db_column_int64(st, 0);
    *next_seq = v > 0 ? (uint64_t)v + 1 : 1;
  } else if (rc == LA_DB_DONE) {
    *next_seq = 1;
  } else {
    r = la__store_sqlerr(s, "reading the agent's sequence number");
  }
  la__done(st);
  return r;
}

int la_store_missing(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                     uint32_t rank, const char *reason, int from_agent,
                     uint64_t seq, int *was_new) {
  if (was_new) *was_new = 0;
  if (!s || !app_id || !app_id[0] || !reason || !reason[0]) return LA_EINVAL;
  if (rank >= LA_MAX_RANKS) {
    la__store_fmt(s->err, sizeof s->err, "missing record of %s: rank %u >= %u",
                  app_id, rank, LA_MAX_RANKS);
    return LA_EPROTO;
  }
  int own, r = la__store_wbegin(s, &own);
  if (r) return r;
  /* the batch's traces' rows and records as the statements below expect */
  if ((r = la__store_defer_flush(s))) goto out;
  uint64_t now = la_realtime_ns();
  uint32_t nprocs = 0;
  r = la__app_nprocs(s, app_id, &nprocs);
  if (r < 0) goto out;
  if (r == 0 && (r = la__app_lazy(s, app_id, now))) goto out;
  la_db_stmt_t *st = s->st[S_MISS_PUT];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  la_db_bind_int64(st, 3, rank);
  la__bind_text(st, 4, reason, LA_STORE_REASON_MAX);
  la_db_bind_text(st, 5, from_agent ? "agent" : "globalagent", -1);
  if (from_agent) la_db_bind_int64(st, 6, la__i64(seq));
  la_db_bind_int64(st, 7, la__i64(now));
  if ((r = la__store_run(s, st, "storing the missing record"))) goto out;
  if (la_db_changes(s->db) == 0) goto out; /* known already, or a trace */
  if (was_new) *was_new = 1;
  r = la__cycle_touch(s, S_MISS_SET, app_id, cycle_tag, now,
                      "recording the missing record's cycle");
out:
  r = la__store_wend(s, own, r);
  if (r && was_new) *was_new = 0;
  return r;
}

static int la__cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int la_store_set_closed(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                        int complete, const uint32_t *missing, size_t n_missing,
                        uint64_t t_closed_ns) {
  if (!s || !app_id || !app_id[0] || (n_missing && !missing) ||
      n_missing > LA_MAX_RANKS)
    return LA_EINVAL;
  /* "3,7": sorted, without duplicates; at most 11 bytes per rank. */
  uint32_t *v = NULL;
  char *text = NULL;
  size_t k = 0, len = 0;
  if (n_missing) {
    v = malloc(n_missing * sizeof *v);
    text = malloc(n_missing * 11 + 1);
    if (!v || !text) {
      free(v);
      free(text);
      la__store_fmt(s->err, sizeof s->err, "out of memory");
      return LA_ENOMEM;
    }
    memcpy(v, missing, n_missing * sizeof *v);
    qsort(v, n_missing, sizeof *v, la__cmp_u32);
    for (size_t i = 0; i < n_missing; i++) {
      if (i && v[i] == v[i - 1]) continue;
      len += (size_t)sprintf(text + len, k ? ",%u" : "%u", v[i]);
      k++;
    }
  }
  int own, r = la__store_wbegin(s, &own);
  if (r) goto done;
  if ((r = la__store_defer_flush(s))) goto out;
  if ((r = la__app_lazy(s, app_id, la_realtime_ns()))) goto out;
  la_db_stmt_t *st = s->st[S_SET_CLOSE];
  la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(cycle_tag));
  la_db_bind_int64(st, 3, complete ? 1 : 0);
  la_db_bind_int64(st, 4, (int64_t)k);
  la_db_bind_text(st, 5, text ? text : "", (int)len);
  la_db_bind_int64(st, 6, la__i64(t_closed_ns));
  r = la__store_run(s, st, "recording the closed Trace-Set");
  if (r == 0) r = la__store_notify_closed(s, app_id, cycle_tag);
out:
  r = la__store_wend(s, own, r);
done:
  free(v);
  free(text);
  return r;
}
