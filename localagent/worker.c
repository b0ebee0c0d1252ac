/* SPDX-License-Identifier: BSD-3-Clause */
/* worker.c: compaction jobs on the compaction threads (pool.h), and the
 * cycles beyond agent.max_backlog on the lane (lane.h): never on the loop.
 *
 * Submitting a job logs that the agent took the cycle (a "taken" record,
 * outq.h). The job copies the buffer out of the application's shared
 * memory (scaled to the metric's unit; its flags too) and zeroes it, and
 * gives the buffer back to the application at once; then it compacts the
 * copy and appends the CompactTrace to the log — or, when the cycle cannot
 * be compacted or stored, a TraceMissing with the reason. Whatever the
 * moment the agent dies, the cycle is in the log as a trace, or as a taken
 * record that the next start turns into a TraceMissing. The application
 * profiles into the buffer again while its last cycle is compacted: it
 * waits for the agent only while its buffers are queued, not while they
 * are compacted, and not for queued ones either where agent.max_backlog
 * limits them (the default, backlog.h): a cycle beyond is taken coarsely
 * or dropped on the lane's thread (la__behind_work, lane.h), which gives
 * its buffer back the moment it is summed or zeroed. Back on the loop
 * thread the job is counted and the uplink woken, and the session's next
 * job started: a session's jobs run one at a time, in the order the
 * application handed the cycles over, because its robust weights,
 * history and weights area are sequential state (a cycle's weights
 * depend on the cycles before it, never on later ones); sessions run in
 * parallel on the pool. Memory: one copy of the values per running job,
 * at most one per session, so the peak is bounded by max_apps x
 * max_elements x 8 bytes, in practice far less.
 *
 * Channels: a buffer of k > 1 channels is copied whole; the trace's series
 * is the per-element sum over the channels (added in channel order), and
 * each channel is compacted too (with its own robust weights) into the
 * trace's ChannelTrace list. k x n_elements is within max_elements
 * (session.c), so the bound above holds with twice the bytes.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "backlog.h"
#include "la_compact_splice.h"
#include "la_errors.h"
#include "la_log.h"
#include "la_trace_msg.h"
#include "la_time.h"
#include "lane.h"
#include "placement.h"
#include "pool.h"

typedef struct la_job {
  la_lane_item_t lane; /* first: a cycle the agent is behind on (lane.h) */
  la_pool_job_t req;
  struct la_job *next; /* the session's queue (agent.h) */
  la_session_t *s;
  uint32_t buffer;
  uint64_t cycle_tag, seq, t_xfer_ns;
  la_compact_params_t cp;
  /* results, written by the worker thread */
  int rc;          /* reading and compacting */
  int log_rc;      /* appending the trace (or the missing record) */
  int missing;     /* a TraceMissing was appended instead of the trace */
  const char *why; /* reason of the missing record */
  char why_buf[280]; /* its text, when composed for this job */
  la_shm_bufmeta_t meta;
  uint64_t ns, points, bytes;
  /* robust weights (weights.h), when the session has them */
  int robust;
  la_compact_result_t rres;
  la_robust_stats_t rst;
  /* channels (n_channels > 1): each one's compaction and robust weights */
  uint32_t n_channels;
  la_compact_result_t chres[LA_SHM_MAX_CHANNELS];
  la_compact_result_t chrob[LA_SHM_MAX_CHANNELS];
  int chrob_ok[LA_SHM_MAX_CHANNELS];
  /* a row-probed cycle (la_app_ipc_take_rows): each value is a row of
   * spread cells; 1 for a cycle of cell values */
  uint64_t spread;
  /* a box- or range-probed cycle taken as pieces (la_app_ipc_take_pieces):
   * their geometry (p NULL: not such a cycle) and its bytes */
  la_pieces_t pieces;
  uint8_t *geom;
  size_t glen;
  /* history (history.h): the representative this cycle is within bound of */
  int hist;
  uint64_t hist_ref;
  la_fit_error_t hist_err;
  /* or, its measured values matching none, the representative its robust
   * weights alone are within the per-element bound of */
  int rhist;
  uint64_t rhist_ref;
  la_fit_error_t rhist_err;
  /* and the elements out of that bound, with their own robust weights
   * (la__match_robust; rexc_mem NULL: none) */
  La__HistoryExceptions rexc;
  uint64_t *rexc_mem;
  double *rexc_values;
  /* a cycle beyond agent.max_backlog (la__behind_work): coarse, its
   * reason (in coarse_buf), else NULL (dropped: why_buf) */
  const char *coarse;
  char coarse_buf[200];
} la_job_t;

/* Frees the job's exceptions (la__match_robust). */
static void la__free_exceptions(la_job_t *j) {
  free(j->rexc_mem);
  free(j->rexc_values);
  j->rexc_mem = NULL;
  j->rexc_values = NULL;
}

/* The robust weights rw[0..n) on their own (docs/history.md): a
 * representative within the per-element bound on every element, or on all
 * but at most LA_COMPACT_SPLICE_MAX(n), whose own weights then go in the
 * trace (j->rexc), when due (la_history_exc_due). Not for a row-probed
 * cycle (rows): its trace is of cells, its weights of rows, so it takes a
 * reference on every element or none. 1 when there is one (j->rhist_ref,
 * j->rhist_err). x: the cycle's measured values (la_history_match_robust). */
static int la__match_robust(la_job_t *j, la_history_t *h, const double *rw,
                            const double *x, uint64_t n, int rows) {
  size_t cap = rows || !la_history_exc_due(h)
                   ? 0
                   : (size_t)LA_COMPACT_SPLICE_MAX(n),
         k = 0;
  uint64_t *mem = cap ? malloc(3 * cap * sizeof *mem) : NULL;
  double *vals = mem ? malloc(cap * sizeof *vals) : NULL;
  if (!vals) cap = 0; /* without memory: on every element */
  int m = la_history_match_robust_exc(h, rw, x, j->cp.quantum, cap, mem, &k,
                                      &j->rhist_ref, &j->rhist_err);
  if (m && k > 0) {
    la_compact_exceptions_build(mem, k, rw, &j->rexc, mem + cap,
                                mem + 2 * cap, vals);
    j->rexc_mem = mem;
    j->rexc_values = vals;
  } else {
    free(mem);
    free(vals);
  }
  return m;
}

/* Whether the robust figures of a cycle can travel (finite, >= 0). */
static int la__robust_finite(const la_robust_stats_t *st) {
  return isfinite(st->interference) && st->interference >= 0;
}

/* The job's robust weights left out (logged) when their figures cannot
 * travel: values no timer gives (1e308 in every element) make their
 * interference overflow; the measured values still go, as data. */
static void la__robust_or_none(la_job_t *j) {
  if (!j->robust || la__robust_finite(&j->rst)) return;
  la_log_warnx("%s rank %u cycle %llu: interference %g from the "
               "application's values: robust weights left out",
               j->s->app_id, j->s->rank, (unsigned long long)j->cycle_tag,
               j->rst.interference);
  j->robust = 0;
}

/* Appends the compact trace of the job; returns the la_uplink_log code,
 * or LA_EPROTO with the reason in j->why_buf when the message would not be
 * valid on the wire (what the application wrote can make its own trace
 * invalid, never the link: the GlobalAgent would refuse the frame). */
static int la__log_trace(la_job_t *j, const la_compact_result_t *res,
                         const la_compact_result_t *rres) {
  la_session_t *s = j->s;
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  La__FitError fe = LA__FIT_ERROR__INIT;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  la_trace_msg_fill(&t, &st, &fe, res);
  t.app_id = s->app_id;
  t.rank = s->rank;
  t.cycle_tag = j->cycle_tag;
  t.n_elements = s->ipc.n_elements;
  t.has_t_xfer_ns = 1;
  t.t_xfer_ns = j->t_xfer_ns;
  t.has_rank_seq = 1;
  t.rank_seq = j->seq;
  La__SeriesStats rs = LA__SERIES_STATS__INIT;
  if (j->robust) {
    la_trace_msg_robust(&t, &rs, rres);
    t.has_interference = 1;
    t.interference = j->rst.interference;
    t.has_flagged = 1;
    t.flagged = j->rst.flagged;
    t.has_flagged_time = 1;
    double ft = (double)j->meta.interference_ticks * j->meta.scale;
    t.flagged_time = ft >= 0 && ft < 1e300 ? ft : 0; /* data from the app */
  }
  La__ChannelTrace cv[LA_SHM_MAX_CHANNELS], *cp[LA_SHM_MAX_CHANNELS];
  La__SeriesStats cs[LA_SHM_MAX_CHANNELS], crs[LA_SHM_MAX_CHANNELS];
  La__FitError ce[LA_SHM_MAX_CHANNELS];
  for (uint32_t c = 0; j->n_channels > 1 && c < j->n_channels; c++) {
    const la_compact_result_t *r = &j->chres[c];
    la__channel_trace__init(&cv[c]);
    la__series_stats__init(&cs[c]);
    la__fit_error__init(&ce[c]);
    la_trace_msg_channel(&cv[c], &cs[c], &ce[c], r);
    cv[c].channel = c;
    if (j->chrob_ok[c]) {
      la__series_stats__init(&crs[c]);
      la_trace_msg_channel_robust(&cv[c], &crs[c], &j->chrob[c]);
    }
    cp[c] = &cv[c];
  }
  if (j->n_channels > 1) {
    t.n_channels = j->n_channels;
    t.channels = cp;
  }
  La__FitError he = LA__FIT_ERROR__INIT;
  if (j->hist) {
    t.has_history_ref = 1;
    t.history_ref = j->hist_ref;
    la_fit_error_t e = j->hist_err; /* the rows' error, per cell */
    e.max_abs /= (double)j->spread;
    e.rmse /= (double)j->spread;
    la_trace_msg_error(&he, &e);
    t.history_error = &he;
  }
  La__FitError rhe = LA__FIT_ERROR__INIT;
  if (j->rhist && j->robust) {
    t.has_robust_ref = 1;
    t.robust_ref = j->rhist_ref;
    la_fit_error_t e = j->rhist_err; /* per cell, as above */
    e.max_abs /= (double)j->spread;
    e.rmse /= (double)j->spread;
    la_trace_msg_error(&rhe, &e);
    t.robust_ref_error = &rhe;
  }
  if (j->rhist && j->robust && j->rexc_mem)
    t.robust_exceptions = &j->rexc;
  t.coarse = (char *)j->coarse;
  char why[200];
  if (la_msg_validate(LA__MSG_TYPE__MSG_COMPACT_TRACE, &t.base, why,
                      sizeof why) != 0) {
    snprintf(j->why_buf, sizeof j->why_buf,
             "invalid trace (values the application wrote): %s", why);
    la_log_warnx("%s rank %u cycle %llu: %s: recorded missing", s->app_id,
                 s->rank, (unsigned long long)j->cycle_tag, j->why_buf);
    return LA_EPROTO;
  }
  return la_uplink_log(s->ag, LA__MSG_TYPE__MSG_COMPACT_TRACE, &t.base, &t.seq);
}

/* The flag bytes of the job's buffer (still the agent's, so they are this
 * cycle's), or NULL without memory. Free with free(). */
static uint8_t *la__flags(la_job_t *j) {
  la_session_t *s = j->s;
  uint64_t n = s->ipc.n_elements;
  uint8_t *flags = malloc(n ? n : 1);
  if (flags && la_app_ipc_flags(&s->ipc, j->buffer, flags) != 0) {
    free(flags);
    flags = NULL;
  }
  return flags;
}

/* Each channel's series (x[c * n..]): compacted like the sum, and its own
 * robust weights where the session keeps them (without memory for them,
 * the channel goes without). Returns 0 or the first compaction error. */
static int la__channels(la_job_t *j, const double *x, const uint8_t *flags) {
  la_session_t *s = j->s;
  uint64_t n = s->ipc.n_elements;
  for (uint32_t c = 0; c < j->n_channels; c++) {
    const double *xc = x + (uint64_t)c * n;
    int rc = la_compact(xc, n, &j->cp, &j->chres[c]);
    if (rc != 0) return rc;
    if (s->ch_weights[c] && flags)
      j->chrob_ok[c] = la_weights_cycle(s->ch_weights[c], xc, flags, &j->cp,
                                        &j->chrob[c], &j->rst) == 0;
  }
  return 0;
}

/* Takes the job's buffer into a new array *x of *nv values: a box- or
 * range-probed cycle as its pieces' values (j->pieces their geometry),
 * a row-probed cycle as its row values (j->spread = the row length, the
 * rows' state, nothing expanded to cells), else every value (with channels: their sum,
 * then each channel). Returns 0, or an error with j->why set (the buffer
 * is zeroed all the same). */
static int la__take(la_job_t *j, double **x, uint64_t *nv) {
  la_session_t *s = j->s;
  uint64_t n = s->ipc.n_elements;
  uint32_t k = s->ipc.n_channels;
  j->spread = 1;
  *nv = n;
  *x = NULL;
  if (k == 1 && s->ipc.n_pieces &&
      la_app_ipc_take_pieces(&s->ipc, j->buffer, &j->pieces, x, &j->geom,
                             &j->glen, &j->meta) == 1) {
    *nv = j->pieces.count;
    return 0;
  }
  if (s->row_len && (*x = malloc(n / s->row_len * sizeof **x)) != NULL) {
    int rc = la_app_ipc_take_rows(&s->ipc, j->buffer, *x, &j->meta);
    if (rc == 1) {
      j->spread = s->row_len;
      *nv = n / s->row_len;
      j->cp = s->row_cp;
      return 0;
    }
    free(*x);
    *x = NULL;
    if (rc < 0) {
      j->why = "dropped: the buffer could not be read";
      return rc;
    }
  }
  /* one channel: the values; k: their sum, then the k channels */
  *x = malloc((k > 1 ? k + 1 : 1) * n * sizeof(double));
  if (!*x) {
    j->why = "dropped: the LocalAgent was out of memory";
    la_app_ipc_discard(&s->ipc, j->buffer);
    return LA_ENOMEM;
  }
  double *ch = k > 1 ? *x + n : *x;
  int rc = la_app_ipc_take(&s->ipc, j->buffer, ch, k > 1 ? *x : NULL, &j->meta);
  if (rc != 0) j->why = "dropped: the buffer could not be read";
  return rc;
}

/* The job's buffer back to the application: no longer busy first, so the
 * application's next notification of it is a new cycle (queued behind
 * this job), never a second notification of this one. */
static void la__give_back(la_job_t *j) {
  unsigned was =
      __atomic_fetch_and(&j->s->busy, ~(1u << j->buffer), __ATOMIC_SEQ_CST);
  /* the agent owned the buffer until now: it is given back once */
  assert(was & (1u << j->buffer));
  (void)was;
  la_app_ipc_give_back(&j->s->ipc, j->buffer);
}

/* The reason of a trace the log did not take (j->log_rc), in j->why. */
static void la__log_why(la_job_t *j) {
  if (j->log_rc == LA_EPROTO)
    j->why = j->why_buf;
  else if (j->log_rc == LA_ELIMIT)
    j->why = "dropped: the LocalAgent's log was full (spool_bytes)";
  else if (j->log_rc != 0)
    j->why = "dropped: the LocalAgent could not write its log";
}

/* A cycle not read, not compacted or not logged: recorded missing with
 * j->why. */
static void la__missing_if(la_job_t *j) {
  la_session_t *s = j->s;
  if (j->rc != 0 || j->log_rc != 0) {
    int rc =
        la_uplink_log_missing(s->ag, s->app_id, s->rank, j->cycle_tag, j->why);
    j->missing = rc == 0;
  }
}

/* Makes s->pieces the state of geometry g (hash: la_pieces_hash of its
 * bytes): kept when it is the geometry of the state, else freed and made
 * afresh, as a new registration would make it (without memory the pieces
 * go without robust weights or history). */
static void la__pieces_state(la_session_t *s, const la_pieces_t *g,
                             uint64_t hash) {
  la_piece_state_t *p = &s->pieces;
  if (p->count == g->count && p->hash == hash) return;
  la_weights_free(p->weights);
  la_history_free(p->hist);
  p->weights = NULL;
  p->hist = NULL;
  p->hash = hash;
  p->count = g->count;
  p->cells_min = UINT64_MAX;
  for (uint64_t i = 0; i < g->count; i++) {
    uint64_t c = la_piece_cells(&g->p[i]);
    p->cells_min = c < p->cells_min ? c : p->cells_min;
  }
  /* per cell the cells' bound: a piece's error over its cells */
  p->cp = s->cp;
  if (s->cp.mode == LA_COMPACT_MAXERR && !s->cp.relative)
    p->cp.epsilon *= (double)p->cells_min;
  if (p->robust && la_weights_new(g->count, p->timer_res_ns, p->detect,
                                  p->tol, p->confirm, p->cv, NULL, 0,
                                  &p->weights) != 0)
    la_log_warnx("%s rank %u: no memory for the pieces' robust weights",
                 s->app_id, s->rank);
  la_compact_params_t rcp;
  la_history_robust_params(&p->cp, p->cv, &rcp);
  p->hist = la_history_new(&s->ag->hist_budget, g->count, p->reps, &p->cp,
                           p->weights ? &rcp : NULL);
  /* a piece is one timed interval: one timer step of slack, as a cell */
  la_history_set_robust_floor(p->hist, p->timer_res_ns);
}

/* A box- or range-probed cycle taken as pieces (la__take): its values
 * x[0..count), one per piece of j->pieces, compacted, given robust
 * weights (no flags: interference detection covers no box or range
 * probe) and matched against the history as measured, one value per
 * piece, in the pieces' state (la__pieces_state: a geometry other
 * than the last one's starts it afresh), and logged in the pieced form
 * (la_compact_pieced_of, each series with the geometry as
 * la_pieces_from_shm checked it); the weights area gets cells (expanded). Sets j->rc, j->log_rc and j->why. */
static void la__pieced(la_job_t *j, const double *x) {
  la_session_t *s = j->s;
  la_piece_state_t *ps = &s->pieces;
  const la_pieces_t *g = &j->pieces;
  uint64_t n = g->count, t0 = la_mono_ns();
  const uint8_t *geom = j->geom;
  size_t glen = j->glen;
  double *rw = NULL;
  uint64_t *rst = NULL;
  la_compact_result_t res, pres, prres;
  memset(&res, 0, sizeof res);
  memset(&pres, 0, sizeof pres);
  memset(&prres, 0, sizeof prres);
  la__pieces_state(s, g, la_pieces_hash(geom, glen));
  j->cp = ps->cp;
  j->cp.quantum = j->meta.scale;
  /* the history's error per cell: the pieces' over the fewest cells */
  j->spread = ps->cells_min;
  j->rc = la_compact(x, n, &j->cp, &res);
  la_history_t *h = ps->hist;
  if (j->rc == 0 && ps->weights && (rw = malloc(n * sizeof *rw)) != NULL) {
    if (h && n / 8) rst = malloc(n / 8 * sizeof *rst);
    j->robust = la_weights_cycle_recon_starts(ps->weights, x, NULL, &j->cp,
                                              &j->rres, &j->rst, rw, rst,
                                              rst ? n / 8 : 0) == 0;
    la__robust_or_none(j);
  }
  j->ns = la_mono_ns() - t0;
  if (j->rc != 0) {
    j->why = j->rc == LA_ENOMEM ? "dropped: the LocalAgent was out of memory"
                                : "dropped: compaction failed";
    goto done;
  }
  j->hist = la_history_match(h, x, j->robust ? rw : NULL, &j->hist_ref,
                             &j->hist_err);
  if (!j->hist && j->robust) /* no exceptions: the trace is of cells */
    j->rhist = la__match_robust(j, h, rw, x, n, 1);
  int learn = la_history_take(h, j->hist);
  if (learn) { /* a representative to be: with room, in full */
    la_history_refit(h, x, &j->cp, &res);
    j->rhist = 0;
    la__free_exceptions(j);
  }
  /* the geometry as la_pieces_from_shm checked it, not decoded again */
  if (la_compact_pieced_of(&res, x, g, geom, glen, &pres) != 0 ||
      (j->robust &&
       la_compact_pieced_of(&j->rres, NULL, g, geom, glen, &prres) != 0)) {
    j->rc = LA_ENOMEM;
    j->why = "dropped: the LocalAgent was out of memory";
    goto done;
  }
  j->points = n;
  j->bytes = pres.len;
  /* the weights back to the application (LA_weights), per cell; extra: a
   * failure costs only them */
  if (j->robust) {
    la_app_ipc_put_weights_pieces(&s->ipc, j->cycle_tag, j->seq,
                                  LA_SHM_WEIGHTS_ROBUST, g, rw);
  } else {
    la_app_ipc_put_weights(&s->ipc, j->cycle_tag, j->seq,
                           LA_SHM_WEIGHTS_MEASURED, &pres);
  }
  if (!__atomic_load_n(&s->refused_upstream, __ATOMIC_ACQUIRE))
    j->log_rc = la__log_trace(j, &pres, &prres);
  if (j->log_rc == 0 && learn)
    la_history_learn_recon(h, j->cycle_tag, &res, j->robust ? &j->rres : NULL,
                           rw, rst);
  la__log_why(j);
done:
  free(rw);
  free(rst);
  la__free_exceptions(j);
  la_compact_result_free(&res);
  la_compact_result_free(&pres);
  la_compact_result_free(&prres);
  la_compact_result_free(&j->rres);
}

static void la__work(la_pool_job_t *req) {
  la_job_t *j = req->data;
  la_session_t *s = j->s;
  la_placement_worker((int)s->ag->set.worker_nice, s->ag->set.worker_idle);
  uint32_t k = s->ipc.n_channels;
  j->n_channels = k;
  double *x;
  uint64_t n; /* values in x's series: elements, or rows */
  j->rc = la__take(j, &x, &n);
  if (j->rc == 0 && j->pieces.p) { /* stored one value per piece */
    la__give_back(j);
    la__pieced(j, x);
    free(x);
    free(j->geom);
    la_pieces_free(&j->pieces);
    la__missing_if(j);
    return;
  }
  /* the state of the series: the rows' for a row-probed cycle */
  int rows = j->spread > 1;
  la_weights_t *w = rows ? s->row_weights : s->weights;
  la_history_t *h = rows ? s->row_hist : s->hist;
  uint8_t *flags = NULL; /* row probes flag nothing */
  if (j->rc == 0 && !rows && (w || k > 1)) flags = la__flags(j);
  /* Values, flags and meta data are the job's own now: the buffer goes
   * back at once, and the application profiles into it while the cycle is
   * compacted. The cycle's taken record is in the log already, so an agent
   * that dies before the trace is logged leaves it recorded as missing. */
  la__give_back(j);
  if (j->rc == 0) {
    la_compact_result_t res, sres, srres;
    memset(&res, 0, sizeof res);
    memset(&sres, 0, sizeof sres);
    memset(&srres, 0, sizeof srres);
    uint64_t t0 = la_mono_ns();
    /* the values are the application's counts times its scale: where they
     * are whole counts, rough stretches are stored exactly */
    j->cp.quantum = j->meta.scale;
    j->rc = la_compact(x, n, &j->cp, &res);
    /* the robust weights as a decoder of their trace gives them, written
     * by the encoder (la_compact_recon()): the history compares them and
     * the application reads them, and neither decodes */
    double *rw = NULL;
    uint64_t *rst = NULL; /* their records' starts, for the history */
    int robust_in = j->rc == 0 && w && (flags || rows);
    if (robust_in && (h || s->ipc.weights)) rw = malloc(n * sizeof *rw);
    if (robust_in && h && rw && n / 8) rst = malloc(n / 8 * sizeof *rst);
    /* robust weights are extra, the measured values are the record: without
     * memory for the flags, the trace goes without them */
    if (robust_in)
      j->robust = la_weights_cycle_recon_starts(w, x, flags, &j->cp, &j->rres,
                                                &j->rst, rw, rst,
                                                rst ? n / 8 : 0) == 0;
    la__robust_or_none(j);
    if (j->rc == 0 && k > 1) {
      la_robust_stats_t keep = j->rst; /* the sum's, for the trace */
      j->rc = la__channels(j, x + n, flags);
      j->rst = keep;
    }
    j->ns = la_mono_ns() - t0;
    if (j->rc != 0) {
      j->why = "dropped: compaction failed";
    } else {
      if (j->robust && !rw) /* no memory for them: it decodes them */
        j->hist =
            la_history_check(h, x, &j->rres, &j->hist_ref, &j->hist_err);
      else
        j->hist = la_history_match(h, x, j->robust ? rw : NULL,
                                   &j->hist_ref, &j->hist_err);
      /* the robust weights on their own (docs/history.md): a balancer's
       * series may repeat where the measured values do not */
      if (!j->hist && j->robust && rw)
        j->rhist = la__match_robust(j, h, rw, x, n, rows);
      int learn = la_history_take(h, j->hist);
      if (learn) { /* a representative to be: compacted with room, and in
                      full (a representative references nothing) */
        la_history_refit(h, x, &j->cp, &res);
        j->rhist = 0;
        la__free_exceptions(j);
      }
      /* what travels: a row-probed cycle's series as the cells' */
      const la_compact_result_t *out = &res, *rout = &j->rres;
      if (rows) {
        if (la_compact_spread(&res, j->spread, &sres) != 0 ||
            (j->robust && la_compact_spread(&j->rres, j->spread, &srres) != 0))
          j->rc = LA_ENOMEM;
        out = &sres;
        rout = &srres;
      }
      j->points = n * (k > 1 ? k + 1 : 1);
      j->bytes = out->len;
      for (uint32_t c = 0; k > 1 && c < k; c++) j->bytes += j->chres[c].len;
      if (j->rc != 0) {
        j->why = "dropped: the LocalAgent was out of memory";
      } else {
        /* the weights back to the application (LA_weights); extra: a
         * failure costs only them */
        if (j->robust && rw)
          la_app_ipc_put_weights_values(&s->ipc, j->cycle_tag, j->seq,
                                        LA_SHM_WEIGHTS_ROBUST, rw, j->spread);
        else
          la_app_ipc_put_weights(
              &s->ipc, j->cycle_tag, j->seq,
              j->robust ? LA_SHM_WEIGHTS_ROBUST : LA_SHM_WEIGHTS_MEASURED,
              j->robust ? rout : out);
        /* a rank the GlobalAgent refused (la_session_refused): nothing
         * more of it is shipped */
        if (!__atomic_load_n(&s->refused_upstream, __ATOMIC_ACQUIRE))
          j->log_rc = la__log_trace(j, out, rout);
        if (j->log_rc == 0 && learn) /* logged in full: a representative */
          la_history_learn_recon(h, j->cycle_tag, &res,
                                 j->robust ? &j->rres : NULL, rw, rst);
        la__log_why(j);
      }
    }
    free(rw);
    free(rst);
    la__free_exceptions(j);
    la_compact_result_free(&res);
    la_compact_result_free(&sres);
    la_compact_result_free(&srres);
    la_compact_result_free(&j->rres);
    for (uint32_t c = 0; k > 1 && c < k; c++) {
      la_compact_result_free(&j->chres[c]);
      la_compact_result_free(&j->chrob[c]);
    }
  }
  free(x);
  free(flags);
  la__missing_if(j);
}

static void la__after(la_pool_job_t *req);

/* Starts the session's oldest queued job unless one is running, on the
 * compaction threads (pool.h). */
static void la__next(la_session_t *s) {
  la_job_t *j = s->job_queue;
  if (s->job_running || !j) return;
  /* a session's jobs run one at a time, in order: its buffer is busy
   * from the notification until the job has copied it */
  assert(__atomic_load_n(&s->busy, __ATOMIC_SEQ_CST) & (1u << j->buffer));
  s->job_queue = j->next;
  if (!s->job_queue) s->job_queue_tail = NULL;
  s->job_running = 1;
  j->req.work = la__work;
  j->req.after = la__after;
  la_pool_submit(s->ag->pool, &j->req);
}

static void la__after(la_pool_job_t *req) {
  la_job_t *j = req->data;
  la_session_t *s = j->s;
  la_agent_t *ag = s->ag;
  ag->jobs_in_flight--;
  if (j->rc != 0 || j->log_rc != 0) {
    ag->st.cycles_dropped++;
    la_log_warnx(
        "%s rank %u cycle %llu not stored: %s (%s)%s", s->app_id, s->rank,
        (unsigned long long)j->cycle_tag, j->why ? j->why : "not compacted",
        la_strerror(j->rc ? j->rc : j->log_rc),
        j->missing ? "; recorded as missing"
                   : "; not even a missing record could be "
                     "written (counted)");
  } else {
    ag->st.cycles_compacted++;
    ag->st.points += j->points;
    ag->st.compact_ns += j->ns;
    ag->st.bytes_out += j->bytes;
    if (j->meta.range_errors)
      la_log_warnx("%s rank %u cycle %llu: %llu probes out of range", s->app_id,
                   s->rank, (unsigned long long)j->cycle_tag,
                   (unsigned long long)j->meta.range_errors);
    if (j->robust && j->rst.coarse > j->rst.positive / 2) {
      /* most elements below the timer's resolution: counted every cycle,
       * said once per rank */
      ag->st.robust_coarse++;
      if (!s->coarse_told)
        la_log_warnx(
            "%s rank %u cycle %llu: %llu of %llu weights are below %d timer "
            "steps: the timer does not resolve these elements, so neither "
            "their measured values nor their robust weights are their cost "
            "(off by tens of percent); time them in rows or boxes "
            "(LA_startRow, LA_startBox) or ranges (LA_startRange) (said once "
            "per rank; counted in robust_coarse_cycles)",
            s->app_id, s->rank, (unsigned long long)j->cycle_tag,
            (unsigned long long)j->rst.coarse,
            (unsigned long long)j->rst.positive, LA_WEIGHTS_RESOLVED_STEPS);
      s->coarse_told = 1;
    }
  }
  free(j);
  la_uplink_kick(ag);
  s->job_running = 0;
  la__next(s); /* before the release: the next job holds s too */
  s->jobs--;
  la_conn_release(&s->conn); /* the hold la_worker_submit took */
  la_agent_progress(ag);
}

/* A new job for s's cycle (compaction parameters the session's), or NULL
 * without memory. */
static la_job_t *la__job_new(la_session_t *s, uint64_t cycle_tag,
                             uint64_t seq, uint64_t t_xfer_ns) {
  la_job_t *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->s = s;
  j->cycle_tag = cycle_tag;
  j->seq = seq;
  j->t_xfer_ns = t_xfer_ns;
  j->cp = s->cp;
  return j;
}

/* The agent owns buffer j->buffer of s from here: recorded taken before
 * anything else, so a crash at any later moment leaves this record, which
 * the next start reports as missing unless the cycle's trace follows it in
 * the log; marked busy (cleared when it is given back: the session refused
 * a second notification of a busy buffer); the job holds the session's
 * connection until it is back on the loop thread. */
static void la__hold(la_session_t *s, la_job_t *j) {
  la_outq_key_t key = {s->app_id, s->rank, j->cycle_tag};
  la_outq_taken(s->ag->q, &key);
  assert(!(__atomic_load_n(&s->busy, __ATOMIC_SEQ_CST) & (1u << j->buffer)));
  __atomic_fetch_or(&s->busy, 1u << j->buffer, __ATOMIC_SEQ_CST);
  s->jobs++;
  la_conn_hold(&s->conn);
  s->ag->jobs_in_flight++;
}

/* The reason of a cycle beyond agent.max_backlog, prefixed with what was
 * done with it ("dropped", "coarse"). */
static void la__behind_why(const la_session_t *s, const char *done,
                           uint32_t held, char *why, size_t len) {
  snprintf(why, len,
           "%s: the LocalAgent was behind (%u of this rank's cycles held: "
           "queued or being compacted or summed, agent.max_backlog = %s)",
           done, held, s->ag->set.max_backlog);
}

/* A cycle beyond agent.max_backlog that gets no coarse trace, its buffer
 * given back: recorded missing with the dropped reason (j->why_buf) and
 * told to the application (LA_STAT_BEHIND). Lane thread. */
static void la__record_behind(la_job_t *j) {
  la_session_t *s = j->s;
  la_app_ipc_count_behind(&s->ipc); /* the application's LA_STAT_BEHIND */
  j->missing = la_uplink_log_missing(s->ag, s->app_id, s->rank, j->cycle_tag,
                                     j->why_buf) == 0;
}

/* The same for a cycle not read: its buffer zeroed and given back first. */
static void la__drop_behind(la_job_t *j) {
  la_app_ipc_discard(&j->s->ipc, j->buffer);
  la__give_back(j);
  la__record_behind(j);
}

/* Compacts the n / k block sums b of a coarse cycle as a trace of n cells,
 * each block's sum spread over its k cells (la_compact_spread), into *out.
 * Returns 0 or the compaction's error. */
static int la__coarse_series(la_job_t *j, const double *b, uint64_t k,
                             la_compact_result_t *out) {
  la_compact_result_t res;
  memset(&res, 0, sizeof res);
  int rc = la_compact(b, j->s->ipc.n_elements / k, &j->cp, &res);
  if (rc == 0) rc = la_compact_spread(&res, k, out);
  la_compact_result_free(&res);
  return rc;
}

/* A cycle beyond agent.max_backlog, on the lane's thread (lane.h), never
 * the loop's. agent.behind = coarse: its cells summed in blocks
 * (la_backlog_coarse_block), each channel's and their sum, in the pass
 * that zeroes the buffer, which goes back the moment it is summed; the
 * block sums compacted as spread traces (exact totals; no robust weights,
 * no history, no weights for LA_weights) marked coarse with the reason,
 * and told to the application (LA_STAT_BEHIND); without a trace (no
 * memory, the scale not valid, the log full), recorded missing as
 * dropped. agent.behind = drop: the buffer zeroed unread, given back, the
 * cycle recorded missing. */
static void la__behind_work(la_lane_item_t *it) {
  la_job_t *j = (la_job_t *)(void *)it;
  la_session_t *s = j->s;
  uint64_t n = s->ipc.n_elements, k = la_backlog_coarse_block(n);
  uint32_t nc = s->ipc.n_channels;
  if (!j->coarse) {
    la__drop_behind(j);
    return;
  }
  uint64_t t0 = la_mono_ns();
  /* the sum's blocks, then (channels) each channel's */
  double *b = k >= 2 ? malloc((nc > 1 ? nc + 1 : 1) * (n / k) * sizeof *b)
                     : NULL;
  if (!b) {
    la__drop_behind(j);
    return;
  }
  j->n_channels = nc;
  j->spread = k;
  j->rc = la_app_ipc_take_blocks(&s->ipc, j->buffer, k, b,
                                 nc > 1 ? b + n / k : NULL, &j->meta);
  la__give_back(j); /* the application's again, zeroed */
  la_compact_result_t sres;
  memset(&sres, 0, sizeof sres);
  j->cp.quantum = j->meta.scale;
  if (j->rc == 0) j->rc = la__coarse_series(j, b, k, &sres);
  for (uint32_t c = 0; j->rc == 0 && nc > 1 && c < nc; c++)
    j->rc = la__coarse_series(j, b + (c + 1) * (n / k), k, &j->chres[c]);
  if (j->rc == 0 && !__atomic_load_n(&s->refused_upstream, __ATOMIC_ACQUIRE))
    j->rc = la__log_trace(j, &sres, NULL);
  if (j->rc == 0) {
    j->ns = la_mono_ns() - t0;
    j->bytes = sres.len;
    for (uint32_t c = 0; nc > 1 && c < nc; c++) j->bytes += j->chres[c].len;
    la_app_ipc_count_behind(&s->ipc); /* the application's LA_STAT_BEHIND */
  } else {
    la_log_warnx("%s rank %u cycle %llu: no coarse trace (%s): dropped",
                 s->app_id, s->rank, (unsigned long long)j->cycle_tag,
                 la_strerror(j->rc));
    la__record_behind(j);
  }
  la_compact_result_free(&sres);
  for (uint32_t c = 0; nc > 1 && c < nc; c++)
    la_compact_result_free(&j->chres[c]);
  free(b);
}

/* Back on the loop thread: the cycle counted (coarse, or dropped as
 * behind), the uplink woken, the session's hold released. */
static void la__behind_done(la_lane_item_t *it) {
  la_job_t *j = (la_job_t *)(void *)it;
  la_session_t *s = j->s;
  la_agent_t *ag = s->ag;
  if (j->coarse && j->rc == 0) {
    ag->st.cycles_coarse++;
    ag->st.coarse_ns += j->ns;
    ag->st.bytes_out += j->bytes;
  } else {
    ag->st.cycles_dropped++;
    ag->st.cycles_behind++;
    if (!j->missing)
      la_log_warnx("%s rank %u cycle %llu: not even a missing record could "
                   "be written (counted)",
                   s->app_id, s->rank, (unsigned long long)j->cycle_tag);
  }
  free(j);
  ag->jobs_in_flight--;
  la_uplink_kick(ag);
  s->jobs--;
  la_conn_release(&s->conn); /* the hold la__behind_submit took */
  la_agent_progress(ag);
}

/* A cycle beyond agent.max_backlog: recorded taken, its buffer the
 * agent's (busy) until the lane gives it back, handed to the lane
 * (la__behind_work). Without memory for the job, dropped here. */
static void la__behind_submit(la_session_t *s, uint32_t i, uint64_t cycle_tag,
                              uint64_t seq, uint64_t t_xfer_ns, uint32_t held,
                              int coarse) {
  la_job_t *j = la__job_new(s, cycle_tag, seq, t_xfer_ns);
  if (!j) {
    char why[200];
    la__behind_why(s, "dropped", held, why, sizeof why);
    la_app_ipc_discard(&s->ipc, i);
    la_app_ipc_give_back(&s->ipc, i);
    s->ag->st.cycles_dropped++;
    s->ag->st.cycles_behind++;
    la_app_ipc_count_behind(&s->ipc);
    la_uplink_log_missing(s->ag, s->app_id, s->rank, cycle_tag, why);
    la_uplink_kick(s->ag);
    return;
  }
  j->buffer = i;
  /* the reasons composed here, where the settings are read */
  la__behind_why(s, "dropped", held, j->why_buf, sizeof j->why_buf);
  if (coarse) {
    la__behind_why(s, "coarse", held, j->coarse_buf, sizeof j->coarse_buf);
    j->coarse = j->coarse_buf;
  }
  la__hold(s, j);
  j->lane.work = la__behind_work;
  j->lane.done = la__behind_done;
  la_lane_submit(s->ag->lane, &j->lane);
}

/* Whether the agent holds as many of s's buffers as agent.max_backlog
 * allows (backlog.h); *held gets how many it holds. */
static int la__behind(la_session_t *s, uint32_t *held) {
  int limit = -1; /* checked at start-up and reload: parses */
  char why[160];
  int rc = la_backlog_parse(s->ag->set.max_backlog, &limit, why, sizeof why);
  assert(rc == 0);
  (void)rc;
  uint32_t max = la_backlog_held_max(limit, s->ipc.n_buffers);
  *held = (uint32_t)__builtin_popcount(
      __atomic_load_n(&s->busy, __ATOMIC_SEQ_CST));
  return max > 0 && *held >= max;
}

int la_worker_submit(la_session_t *s, uint32_t i, uint64_t cycle_tag,
                     uint64_t seq, uint64_t t_xfer_ns) {
  /* its buffers held (queued, or being copied) up to the limit: the agent
   * is behind, and the application must not wait for it */
  uint32_t held;
  if (la__behind(s, &held)) {
    int coarse = 1; /* checked at start-up and reload: parses */
    char why[80];
    la_backlog_behind_parse(s->ag->set.behind, &coarse, why, sizeof why);
    la__behind_submit(s, i, cycle_tag, seq, t_xfer_ns, held, coarse);
    return 0;
  }
  la_job_t *j = la__job_new(s, cycle_tag, seq, t_xfer_ns);
  if (!j) return LA_ENOMEM;
  j->req.data = j;
  j->buffer = i;
  la__hold(s, j);
  if (s->job_queue_tail)
    s->job_queue_tail->next = j;
  else
    s->job_queue = j;
  s->job_queue_tail = j;
  la__next(s);
  return 0;
}
