/* SPDX-License-Identifier: BSD-3-Clause */
/* traceset.c: making a la_traceset_t from a TraceSet message, and its plain
 * accessors (identity, ranks, element counts, exact per-rank statistics).
 *
 * Building validates what la_msg_validate cannot see alone: every rank is
 * either present or listed missing, exactly once; no rank declares more
 * elements than the cap (checked before anything is parsed); trace element
 * counts agree with rank_elements; every trace's encoding parses
 * (la_trace_open_max, capped at the trace's element count; or
 * la_trace_check_max, the same checks without the index), covers its
 * element count and has the mode the message says; the same for the
 * robust weights a trace carries (docs/fidelity.md). Every rank's index is
 * kept from the parse, unless the set is made for a visitor
 * (la__rank_visit_t), which takes what it needs from each rank's index
 * while the set is parsed: then none is kept, and a rank's is opened at
 * its first use (la__traceset_index) and kept, or for one pass alone
 * (la__traceset_rank_open). A set that passes is immutable (but for which
 * weights it serves, chosen here at build time from $LA_WEIGHTS, and the
 * indexes opened), so the numeric functions (weights.c) never re-check.
 * Does not do I/O and does not compute weights.
 */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_client_internal.h"
#include "la_errors.h"

void la_traceset_free(la_traceset_t *t) {
  if (!t) return;
  if (t->trace)
    for (uint32_t r = 0; r < t->nprocs; r++) la_trace_close(t->trace[r]);
  if (t->rob)
    for (uint32_t r = 0; r < t->nprocs; r++) la_trace_close(t->rob[r]);
  free((void *)t->trace);
  free((void *)t->rob);
  free(t->ct);
  free(t->vtx);
  free(t->missing);
  if (t->aux_free) t->aux_free(t->aux);
  if (t->msg) la_msg_free(&t->msg->base);
  free(t);
}

void *la__traceset_aux(const la_traceset_t *t) {
  return t ? t->aux : NULL;
}

/* Reads encoding b of at most cap points as la_trace_open_max parses it:
 * opened into *tr when tr is not NULL, else only checked
 * (la_trace_check_max: the same checks, codes and reasons, no index);
 * its point count and mode into *n, *mode. 0 or la_trace_open_max's
 * code, with the reason in wbuf. */
static int la__ts_read(const ProtobufCBinaryData *b, uint64_t cap,
                       la_trace_t **tr, uint64_t *n, int *mode, char *wbuf,
                       size_t wlen) {
  if (!tr) return la_trace_check_max(b->data, b->len, cap, n, mode, wbuf, wlen);
  int rc = la_trace_open_max(b->data, b->len, cap, tr, wbuf, wlen);
  if (!rc) *n = la_trace_count(*tr), *mode = la_trace_mode(*tr);
  return rc;
}

/* Checks rank r's trace (and its robust one) as la_trace_open_max would
 * parse it, capped at the trace's element count; with tr and rb not
 * NULL opened into them (the caller's, also on failure), else without
 * building an index (the set opens it at the rank's first use,
 * la__traceset_index); *rob set to 1 when it carries robust weights. 0,
 * or LA_ENOMEM / LA_EPROTO with the reason in why. */
static int la__ts_parse_rank(la_traceset_t *t, uint32_t r, la_trace_t **tr,
                             la_trace_t **rb, int *rob, char *why,
                             size_t why_len) {
  const La__CompactTrace *ct = t->ct[r];
  char wbuf[200];
  uint64_t n;
  int mode;
  *rob = 0;
  if (!ct) return 0;
  int rc = la__ts_read(&ct->segments, ct->n_elements, tr, &n, &mode, wbuf,
                       sizeof wbuf);
  if (rc == LA_ENOMEM) return rc;
  if (rc)
    return la_errorf(why, why_len, LA_EPROTO,
                     "rank %u: bad trace encoding: %s", r, wbuf);
  if (n != ct->n_elements)
    return la_errorf(why, why_len, LA_EPROTO,
                     "rank %u: encoding holds %llu points, n_elements "
                     "%llu",
                     r, (unsigned long long)n,
                     (unsigned long long)ct->n_elements);
  if (mode != (int)ct->mode)
    return la_errorf(why, why_len, LA_EPROTO,
                     "rank %u: encoding mode %s, message says %s", r,
                     la_compact_mode_name(mode),
                     la_compact_mode_name((int)ct->mode));
  if (!ct->robust_stats) return 0;
  rc = la__ts_read(&ct->robust_segments, ct->n_elements, rb, &n, &mode, wbuf,
                   sizeof wbuf);
  if (rc == LA_ENOMEM) return rc;
  if (rc)
    return la_errorf(why, why_len, LA_EPROTO,
                     "rank %u: bad robust encoding: %s", r, wbuf);
  /* the robust weights in the trace's mode, or lossless: a robust
   * reference with exceptions is served spliced, and exact
   * (la_compact_splice, docs/history.md) */
  if (n != ct->n_elements ||
      (mode != (int)ct->mode && mode != LA_COMPACT_LOSSLESS))
    return la_errorf(why, why_len, LA_EPROTO,
                     "rank %u: robust encoding holds %llu points in mode "
                     "%s, the trace %llu in mode %s",
                     r, (unsigned long long)n, la_compact_mode_name(mode),
                     (unsigned long long)ct->n_elements,
                     la_compact_mode_name((int)ct->mode));
  *rob = 1;
  return 0;
}

/* Opens rank r's measured (rob 0) or robust (1) trace into *out (NULL
 * when it has none): checked when the set was made, so only memory can
 * fail. 0 or LA_ENOMEM. */
static int la__ts_open(const la_traceset_t *t, uint32_t r, int rob,
                       la_trace_t **out) {
  const La__CompactTrace *ct = t->ct[r];
  char wbuf[200];
  *out = NULL;
  if (!ct || (rob && !ct->robust_stats)) return 0;
  const ProtobufCBinaryData *b = rob ? &ct->robust_segments : &ct->segments;
  int rc = la_trace_open_max(b->data, b->len, ct->n_elements, out, wbuf,
                             sizeof wbuf);
  assert(rc == 0 || rc == LA_ENOMEM); /* la__ts_parse_rank checked it */
  if (rc) la_trace_close(*out), *out = NULL;
  return rc ? LA_ENOMEM : 0;
}

int la__traceset_index(const la_traceset_t *t, uint32_t rank, int rob,
                       const la_trace_t **out) {
  *out = NULL;
  if (!t || rank >= t->nprocs) return 0;
  la_trace_t *_Atomic *slot = rob ? &t->rob[rank] : &t->trace[rank];
  la_trace_t *have = atomic_load_explicit(slot, memory_order_acquire), *mine;
  if (!have) {
    int rc = la__ts_open(t, rank, rob, &mine);
    if (rc || !mine) return rc;
    /* another thread may have opened it meanwhile: the first one stays */
    if (atomic_compare_exchange_strong_explicit(
            slot, &have, mine, memory_order_acq_rel, memory_order_acquire))
      have = mine;
    else
      la_trace_close(mine);
  }
  *out = have;
  return 0;
}

int la__traceset_rank_open(const la_traceset_t *t, uint32_t rank,
                           const la_trace_t **tr, la_trace_t **own) {
  *tr = NULL, *own = NULL;
  if (!t || rank >= t->nprocs) return 0;
  la_trace_t *_Atomic *slot = t->robust ? &t->rob[rank] : &t->trace[rank];
  const la_trace_t *have = atomic_load_explicit(slot, memory_order_acquire);
  if (have) {
    *tr = have;
    return 0;
  }
  int rc = la__ts_open(t, rank, t->robust, own);
  *tr = *own;
  return rc;
}

/* Ranks are parsed in blocks of at most this many, taken in order by the
 * threads; a set of fewer than 4 x LA__TS_BLOCK ranks per thread in
 * smaller blocks (down to one rank), so that each thread still gets about
 * four: a set of a few large ranks is spread over the threads too. */
#define LA__TS_BLOCK 32u
/* At most this many threads parse one set. */
#define LA__TS_MAX_THREADS 16u

/* The parse of one set shared by its threads: the next block, and the
 * lowest rank that failed (np while none) with its code and reason. */
typedef struct la__ts_job {
  la_traceset_t *t;
  const la__rank_visit_t *visit; /* NULL: none */
  int keep;                      /* the ranks' indexes kept in t */
  uint32_t block;   /* ranks per block */
  atomic_uint next; /* the next block's first rank */
  atomic_uint bad;  /* the lowest failed rank so far (np: none) */
  atomic_uint n_rob;
  pthread_mutex_t mu; /* bad's code and reason */
  int rc;
  char why[256];
} la__ts_job_t;

/* A thread of the parse: takes blocks in rank order until they run out or
 * start past a failed rank (every rank below the lowest failure is still
 * parsed, so the error said is the first rank's, as parsing in order). */
static void *la__ts_worker(void *arg) {
  la__ts_job_t *j = arg;
  const uint32_t np = j->t->nprocs, block = j->block;
  uint32_t rob_here = 0;
  for (;;) {
    uint32_t lo = atomic_fetch_add(&j->next, block);
    if (lo >= np || lo > atomic_load(&j->bad)) break;
    uint32_t hi = np - lo < block ? np : lo + block;
    for (uint32_t r = lo; r < hi; r++) {
      char why[256] = "";
      la_trace_t *tr = NULL, *rb = NULL;
      const int open = j->keep || j->visit;
      int rob, rc = la__ts_parse_rank(j->t, r, open ? &tr : NULL,
                                      open ? &rb : NULL, &rob, why, sizeof why);
      rob_here += (uint32_t)rob;
      if (!rc && tr && j->visit) j->visit->rank(j->t->aux, j->t, r, tr, rb);
      if (!rc && j->keep) {
        atomic_store_explicit(&j->t->trace[r], tr, memory_order_relaxed);
        atomic_store_explicit(&j->t->rob[r], rb, memory_order_relaxed);
        tr = rb = NULL; /* the set's (its threads joined before it is read) */
      }
      la_trace_close(tr);
      la_trace_close(rb);
      if (!rc) continue;
      pthread_mutex_lock(&j->mu);
      if (r < atomic_load(&j->bad)) {
        atomic_store(&j->bad, r);
        j->rc = rc;
        snprintf(j->why, sizeof j->why, "%s", why);
      }
      pthread_mutex_unlock(&j->mu);
      break; /* this block's later ranks come after the failure */
    }
  }
  atomic_fetch_add(&j->n_rob, rob_here);
  return NULL;
}

/* Checks every present rank's traces, on up to threads threads (0: the
 * online CPUs; at most LA__TS_MAX_THREADS, one per block), visiting each
 * with visit (NULL: none), their indexes kept in t->trace and t->rob when
 * keep: fills t->n_rob. The error is the lowest failing rank's, whatever
 * the threads. 0, LA_ENOMEM or LA_EPROTO (reason in why). */
static int la__ts_parse(la_traceset_t *t, unsigned threads,
                        const la__rank_visit_t *visit, int keep, char *why,
                        size_t why_len) {
  if (threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (unsigned)n : 1;
  }
  if (threads > LA__TS_MAX_THREADS) threads = LA__TS_MAX_THREADS;
  uint32_t block = t->nprocs / (4u * threads);
  if (block < 1) block = 1;
  if (block > LA__TS_BLOCK) block = LA__TS_BLOCK;
  uint32_t blocks = (t->nprocs + block - 1) / block;
  if (threads > blocks) threads = blocks ? blocks : 1;
  la__ts_job_t j = {.t = t, .visit = visit, .keep = keep, .block = block};
  atomic_init(&j.next, 0);
  atomic_init(&j.bad, t->nprocs);
  atomic_init(&j.n_rob, 0);
  pthread_mutex_init(&j.mu, NULL);
  pthread_t th[LA__TS_MAX_THREADS];
  unsigned started = 0;
  while (started + 1 < threads &&
         pthread_create(&th[started], NULL, la__ts_worker, &j) == 0)
    started++; /* one that will not start leaves its share to the rest */
  la__ts_worker(&j);
  for (unsigned i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&j.mu);
  t->n_rob = atomic_load(&j.n_rob);
  if (atomic_load(&j.bad) == t->nprocs) return 0;
  if (j.rc != LA_ENOMEM && why && why_len) snprintf(why, why_len, "%s", j.why);
  return j.rc;
}

/* Fills t's per-rank tables from t->msg (validated by la_msg_validate),
 * parsing its ranks on up to threads threads (la__ts_parse): without a
 * visitor (visit NULL) their indexes kept; with one, none kept, and the
 * ranks visited when its begin gives t a state. */
static int la__ts_build(la_traceset_t *t, uint64_t cap, unsigned threads,
                        const la__rank_visit_t *visit, char *why,
                        size_t why_len) {
  const La__TraceSet *m = t->msg;
  uint32_t np = m->nprocs;
  /* The cap first, before allocating anything per rank or parsing. */
  for (size_t i = 0; i < m->n_rank_elements; i++)
    if (m->rank_elements[i] > cap)
      return la_errorf(why, why_len, LA_EPROTO,
                       "rank %zu: %llu elements, more than the %llu "
                       "allowed",
                       i, (unsigned long long)m->rank_elements[i],
                       (unsigned long long)cap);
  for (size_t i = 0; i < m->n_traces; i++)
    if (m->traces[i]->n_elements > cap)
      return la_errorf(why, why_len, LA_EPROTO,
                       "rank %u: %llu elements, more than the %llu allowed",
                       m->traces[i]->rank,
                       (unsigned long long)m->traces[i]->n_elements,
                       (unsigned long long)cap);
  t->nprocs = np;
  t->vtx = calloc((size_t)np + 1, sizeof *t->vtx);
  t->trace = calloc(np, sizeof *t->trace);
  t->rob = calloc(np, sizeof *t->rob);
  t->ct = calloc(np, sizeof *t->ct);
  if (!t->vtx || !t->trace || !t->rob || !t->ct) return LA_ENOMEM;
  if (m->n_traces + m->n_missing_ranks != np)
    return la_errorf(why, why_len, LA_EPROTO,
                     "%zu traces and %zu missing ranks for %u ranks",
                     m->n_traces, m->n_missing_ranks, np);
  for (size_t i = 0; i < m->n_traces; i++)
    t->ct[m->traces[i]->rank] = m->traces[i];
  if (m->n_missing_ranks) {
    /* With the counts matching, ranks listed once each and without a trace
     * (the codec checked the latter) are exactly the ranks without one. */
    uint8_t *seen = calloc(np, 1);
    t->missing = malloc(m->n_missing_ranks * sizeof *t->missing);
    if (!seen || !t->missing) {
      free(seen);
      return LA_ENOMEM;
    }
    for (size_t i = 0; i < m->n_missing_ranks; i++) {
      uint32_t r = m->missing_ranks[i];
      if (seen[r]++) {
        free(seen);
        return la_errorf(why, why_len, LA_EPROTO,
                         "missing_ranks lists rank %u twice", r);
      }
    }
    free(seen);
    for (uint32_t r = 0; r < np; r++)
      if (!t->ct[r]) t->missing[t->n_missing++] = r;
  }
  uint64_t total = 0;
  for (uint32_t r = 0; r < np; r++) {
    const La__CompactTrace *ct = t->ct[r];
    uint64_t n = m->n_rank_elements ? m->rank_elements[r] : 0;
    if (ct) {
      if (m->n_rank_elements && n != ct->n_elements)
        return la_errorf(why, why_len, LA_EPROTO,
                         "rank %u: trace of %llu elements, rank_elements "
                         "says %llu",
                         r, (unsigned long long)ct->n_elements,
                         (unsigned long long)n);
      n = ct->n_elements;
    } else if (n > (1ULL << 32)) {
      return la_errorf(why, why_len, LA_EPROTO,
                       "rank %u: %llu elements out of range", r,
                       (unsigned long long)n);
    }
    t->vtx[r] = total;
    total += n; /* < 2^24 * (2^32 + 1): no overflow */
  }
  t->vtx[np] = total;
  if (visit && (t->aux = visit->begin(visit->ctx, t)) != NULL)
    t->aux_free = visit->free;
  int rc = la__ts_parse(t, threads, t->aux ? visit : NULL, visit == NULL,
                        why, why_len);
  if (rc) return rc;
  t->dropped = m->has_dropped ? m->dropped : 0;
  la__traceset_choose(t, la__weights_env());
  return 0;
}

int la__weights_env(void) {
  const char *v = getenv("LA_WEIGHTS");
  if (v && strcmp(v, "measured") == 0) return LA_WEIGHTS_MEASURED;
  if (v && strcmp(v, "robust") == 0) return LA_WEIGHTS_ROBUST;
  return LA_WEIGHTS_DEFAULT;
}

int la__traceset_choose(la_traceset_t *t, int kind) {
  uint32_t present = t->nprocs - (uint32_t)t->n_missing;
  t->robust = kind != LA_WEIGHTS_MEASURED && present > 0 && t->n_rob == present;
  return t->robust;
}

int la__traceset_adopt(La__TraceSet *m, int validate, la_traceset_t **out,
                       char *why, size_t why_len) {
  return la__traceset_adopt_max(
      m, validate, LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS, out, why, why_len);
}

int la__traceset_adopt_max(La__TraceSet *m, int validate,
                           uint64_t max_rank_elements, la_traceset_t **out,
                           char *why, size_t why_len) {
  return la__traceset_adopt_threads(m, validate, max_rank_elements, 1, NULL,
                                    out, why, why_len);
}

int la__traceset_adopt_threads(La__TraceSet *m, int validate,
                               uint64_t max_rank_elements, unsigned threads,
                               const la__rank_visit_t *visit,
                               la_traceset_t **out, char *why,
                               size_t why_len) {
  if (why && why_len) why[0] = '\0';
  if (!out) {
    if (m) la_msg_free(&m->base);
    return LA_EINVAL;
  }
  *out = NULL;
  if (!m) return LA_EINVAL;
  if (validate &&
      la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &m->base, why, why_len)) {
    la_msg_free(&m->base);
    return LA_EPROTO;
  }
  la_traceset_t *t = calloc(1, sizeof *t);
  if (!t) {
    la_msg_free(&m->base);
    return LA_ENOMEM;
  }
  t->msg = m;
  int rc = la__ts_build(t, max_rank_elements, threads, visit, why, why_len);
  if (rc) {
    if (rc == LA_ENOMEM && why && why_len)
      snprintf(why, why_len, "out of memory");
    la_traceset_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

int la_traceset_from_bytes(const uint8_t *payload, size_t len,
                           la_traceset_t **out, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  if (out) *out = NULL;
  if (!out || (!payload && len)) return LA_EINVAL;
  ProtobufCMessage *m = NULL;
  int rc = la_msg_decode(LA__MSG_TYPE__MSG_TRACE_SET,
                         payload ? payload : (const uint8_t *)"", len, &m, why,
                         why_len);
  if (rc) return rc;
  return la__traceset_adopt((La__TraceSet *)m, 0, out, why, why_len);
}

int la_traceset_from_message(const La__TraceSet *m, la_traceset_t **out,
                             char *why, size_t why_len) {
  if (out) *out = NULL;
  if (!m || !out) return LA_EINVAL;
  /* Validate first: packing a message with NULL required fields would
   * crash protobuf-c. */
  if (la_msg_validate(LA__MSG_TYPE__MSG_TRACE_SET, &m->base, why, why_len))
    return LA_EPROTO;
  size_t n = protobuf_c_message_get_packed_size(&m->base);
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) return LA_ENOMEM;
  protobuf_c_message_pack(&m->base, buf);
  int rc = la_traceset_from_bytes(buf, n, out, why, why_len);
  free(buf);
  return rc;
}

/* ------------------------------------------------------------ accessors */

const La__TraceSet *la__traceset_message(const la_traceset_t *t) {
  return t ? t->msg : NULL;
}

const la_trace_t *la__traceset_trace(const la_traceset_t *t, uint32_t rank) {
  const la_trace_t *tr;
  return la__traceset_index(t, rank, 0, &tr) == 0 ? tr : NULL;
}

const La__CompactTrace *la__traceset_compact(const la_traceset_t *t,
                                             uint32_t rank) {
  return t && rank < t->nprocs ? t->ct[rank] : NULL;
}

const char *la_traceset_app_id(const la_traceset_t *t) {
  return t && t->msg->app_id ? t->msg->app_id : "";
}

uint64_t la_traceset_cycle(const la_traceset_t *t) {
  return t ? t->msg->cycle_tag : 0;
}

uint32_t la_traceset_nprocs(const la_traceset_t *t) {
  return t ? t->nprocs : 0;
}

int la_traceset_complete(const la_traceset_t *t) {
  return t && t->n_missing == 0 ? 1 : 0;
}

size_t la_traceset_missing(const la_traceset_t *t, const uint32_t **ranks) {
  if (ranks) *ranks = t ? t->missing : NULL;
  return t ? t->n_missing : 0;
}

int la_traceset_has_rank(const la_traceset_t *t, uint32_t rank) {
  return t && rank < t->nprocs && t->ct[rank] ? 1 : 0;
}

const char *la_traceset_missing_reason(const la_traceset_t *t, uint32_t rank) {
  if (!t || rank >= t->nprocs || t->ct[rank]) return NULL;
  /* validated by the codec: increasing ranks, each listed missing */
  for (size_t i = 0; i < t->msg->n_missing_reasons; i++)
    if (t->msg->missing_reasons[i]->rank == rank)
      return t->msg->missing_reasons[i]->reason;
  return NULL;
}

const char *la_traceset_rank_coarse(const la_traceset_t *t, uint32_t rank) {
  if (!t || rank >= t->nprocs || !t->ct[rank]) return NULL;
  const char *why = t->ct[rank]->coarse;
  return why && why[0] ? why : NULL;
}

uint64_t la_traceset_dropped(const la_traceset_t *t) {
  return t ? t->dropped : 0;
}

const char *la_traceset_metric(const la_traceset_t *t) {
  return t && t->msg->metric ? t->msg->metric : "";
}

const char *la_traceset_unit(const la_traceset_t *t) {
  return t && t->msg->unit ? t->msg->unit : "";
}

uint64_t la_traceset_time_ns(const la_traceset_t *t) {
  return t && t->msg->has_t_complete_ns ? t->msg->t_complete_ns : 0;
}

uint64_t la_traceset_elements(const la_traceset_t *t) {
  return t ? t->vtx[t->nprocs] : 0;
}

uint64_t la_traceset_rank_elements(const la_traceset_t *t, uint32_t rank) {
  return t && rank < t->nprocs ? t->vtx[rank + 1] - t->vtx[rank] : 0;
}

int la_traceset_vtxdist(const la_traceset_t *t, uint64_t *vtxdist) {
  if (!t || !vtxdist) return LA_EINVAL;
  memcpy(vtxdist, t->vtx, ((size_t)t->nprocs + 1) * sizeof *vtxdist);
  return 0;
}

int la_traceset_rank_totals(const la_traceset_t *t, double *totals) {
  if (!t || !totals) return LA_EINVAL;
  for (uint32_t r = 0; r < t->nprocs; r++)
    totals[r] = t->ct[r] ? t->ct[r]->stats->sum : NAN;
  return 0;
}

int la_traceset_rank_stats(const la_traceset_t *t, uint32_t rank, double *sum,
                           double *min, double *max) {
  if (!t || rank >= t->nprocs) return LA_EINVAL;
  const La__CompactTrace *ct = t->ct[rank];
  if (!ct) return LA_ENOTFOUND;
  if (sum) *sum = ct->stats->sum;
  if (min) *min = ct->stats->min;
  if (max) *max = ct->stats->max;
  return 0;
}

int la_traceset_rank_error(const la_traceset_t *t, uint32_t rank,
                           double *max_abs, double *rmse, double *cv,
                           size_t *bytes) {
  if (!t || rank >= t->nprocs) return LA_EINVAL;
  const La__CompactTrace *ct = t->ct[rank];
  if (!ct) return LA_ENOTFOUND;
  if (bytes) *bytes = ct->segments.len;
  if (!ct->error) return LA_ENOTFOUND;
  if (max_abs) *max_abs = ct->error->max_abs;
  if (rmse) *rmse = ct->error->rmse;
  if (cv) *cv = ct->error->cv;
  return 0;
}

int la_traceset_rank_reconstructed(const la_traceset_t *t, uint32_t rank,
                                   uint32_t *rep, double *scale) {
  if (!t || rank >= t->nprocs) return LA_EINVAL;
  const La__CompactTrace *ct = t->ct[rank];
  if (!ct) return LA_ENOTFOUND;
  if (!ct->has_rep_rank) return 0;
  if (rep) *rep = ct->rep_rank;
  if (scale) *scale = ct->rep_scale;
  return 1;
}

int la_traceset_imbalance(const la_traceset_t *t, double *imbalance) {
  return la__traceset_imbalance_of(t, 0, imbalance);
}

int la__traceset_imbalance_of(const la_traceset_t *t, int robust,
                              double *imbalance) {
  if (!t || !imbalance) return LA_EINVAL;
  double mx = -INFINITY, s = 0, c = 0; /* Neumaier */
  size_t k = 0;
  for (uint32_t r = 0; r < t->nprocs; r++) {
    if (!t->ct[r]) continue;
    if (robust && !t->ct[r]->robust_stats) return LA_ENOTFOUND;
    double v = robust ? t->ct[r]->robust_stats->sum : t->ct[r]->stats->sum;
    double u = s + v;
    c += fabs(s) >= fabs(v) ? (s - u) + v : (v - u) + s;
    s = u;
    if (v > mx || isnan(v)) mx = v;
    k++;
  }
  if (k == 0) return LA_EINVAL;
  double mean = (s + c) / (double)k;
  if (mean < 0) return LA_EINVAL;
  *imbalance = mean == 0 && mx == 0 ? 1.0 : mx / mean;
  return 0;
}
