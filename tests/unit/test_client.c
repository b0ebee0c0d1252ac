/* SPDX-License-Identifier: BSD-3-Clause */
/* test_client.c: unit tests of libla_client (client/la_client.h).
 *
 * Trace-Sets are built in memory from real compactions (la_compact) of known
 * series: 4 ranks of different lengths, one compaction mode per rank
 * (lossless, polyline, maxerr, default polyline). Checks: vtxdist; dense and
 * per-rank weights equal the decoded values and stay within each trace's
 * achieved error of the raw values (lossless: exact); rank totals equal the
 * raw Neumaier sums exactly; imbalance; range sums across rank boundaries
 * against sums of the dense weights; METIS (64- and 32-bit) and Zoltan
 * weights; partial sets (NaN weights and totals, means for partitioners);
 * refusal of garbage and inconsistent sets with LA_EPROTO.
 *
 * Then the connection, against fake feed servers on loopback (one thread
 * each, scripted): two sets then a close (LA_EIO after them), a silent
 * server (LA_ETIMEDOUT in bounded time), garbage (LA_EPROTO, with the reason
 * in la_client_error), a malformed message followed by a good set (only the
 * bad one is skipped), an Error message, a set dribbled in two parts across
 * time limits, and Query/Status round trips (la_client_get, latest, list,
 * status) with a subscription set arriving in the middle of a request.
 *
 * Robust weights (docs/fidelity.md): a set whose every present trace
 * carries robust weights serves them by default (dense, range sums, METIS,
 * Zoltan), the measured ones by la_traceset_set_weights, by $LA_WEIGHTS or
 * by la_client_set_weights, and falls back to measured when a trace lacks
 * them; exact measured totals stay; robust totals, interference, timer
 * resolution and detection per rank. The last test serves such sets from a
 * real la-globalagent over a store written with store/store.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "la_client.h"
#include "la_client_internal.h"
#include "la_codec.h"
#include "la_compact_internal.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_feedset.h"
#include "la_test_msg.h"
#include "la_test_series.h"
#include "la_test_stack.h"
#include "la_trace_msg.h"
#include "store.h"

#define NR 4
#define SLACK_MS 4000

/* ------------------------------------------------------------- fixture */

static const uint64_t fx_n[NR] = {1000, 3000, 517, 2500};
static const char *const fx_spec[NR] = {"lossless", "polyline:cv=0.05",
                                        "maxerr:eps=2", "polyline"};

typedef struct fx {
  double *x[NR];
  la_compact_result_t res[NR];
  la_compact_result_t rres[NR]; /* robust weights (fx_robust) */
  La__SeriesStats rst[NR];
  int has_rres[NR];
  La__SeriesStats st[NR];
  La__FitError fe[NR];
  La__CompactTrace ct[NR];
  La__CompactTrace *ctp[NR];
  uint64_t rank_el[NR];
  uint32_t missing[NR];
  La__TraceSet ts;
} fx_t;

static void fx_series(uint32_t r, double *x, size_t n) {
  switch (r) {
    case 0: /* integers: exact lossless */
      for (size_t i = 0; i < n; i++) x[i] = 100 + (double)(i % 7) * 3;
      break;
    case 1:
      assert_int_equal(la_compact_synth(LA_SYNTH_MESH, n, 11, x), 0);
      break;
    case 2:
      for (size_t i = 0; i < n; i++)
        x[i] = 500 + 0.5 * (double)i + 40 * sin((double)i / 25.0);
      break;
    default:
      assert_int_equal(la_compact_synth(LA_SYNTH_STEPS, n, 12, x), 0);
      for (size_t i = 0; i < n; i++) x[i] = fabs(x[i]) + 1;
      break;
  }
}

/* The message form of statistics st, in m. */
static void fx_stats(La__SeriesStats *m, const la_series_stats_t *st) {
  la__series_stats__init(m);
  m->count = st->count;
  m->sum = st->sum;
  m->min = st->min;
  m->max = st->max;
}

/* Builds a set of cycle `tag`; ranks whose bit is set in `absent` are
 * missing (rank_elements still lists them). */
static void fx_make(fx_t *f, uint64_t tag, unsigned absent) {
  memset(f, 0, sizeof *f);
  la__trace_set__init(&f->ts);
  f->ts.app_id = "job-42";
  f->ts.cycle_tag = tag;
  f->ts.nprocs = NR;
  f->ts.metric = "time";
  f->ts.unit = "ns";
  f->ts.traces = f->ctp;
  f->ts.missing_ranks = f->missing;
  f->ts.rank_elements = f->rank_el;
  f->ts.n_rank_elements = NR;
  for (uint32_t r = 0; r < NR; r++) {
    size_t n = fx_n[r];
    f->rank_el[r] = n;
    f->x[r] = malloc(n * sizeof(double));
    assert_non_null(f->x[r]);
    fx_series(r, f->x[r], n);
    assert_int_equal(la_test_compact(f->x[r], n, fx_spec[r], &f->res[r]), 0);
    if (absent >> r & 1) {
      f->missing[f->ts.n_missing_ranks++] = r;
      continue;
    }
    La__CompactTrace *ct = &f->ct[r];
    la__compact_trace__init(ct);
    la__fit_error__init(&f->fe[r]);
    ct->seq = r + 1;
    ct->app_id = "job-42";
    ct->rank = r;
    ct->cycle_tag = tag;
    ct->n_elements = n;
    ct->mode = (La__CompactMode)f->res[r].mode;
    ct->segments.data = f->res[r].bytes;
    ct->segments.len = f->res[r].len;
    fx_stats(&f->st[r], &f->res[r].stats);
    ct->stats = &f->st[r];
    f->fe[r].max_abs = f->res[r].error.max_abs;
    f->fe[r].rmse = f->res[r].error.rmse;
    f->fe[r].cv = f->res[r].error.cv;
    ct->error = &f->fe[r];
    f->ctp[f->ts.n_traces++] = ct;
  }
  f->ts.complete = f->ts.n_missing_ranks == 0;
}

static void fx_free(fx_t *f) {
  for (int r = 0; r < NR; r++) {
    free(f->x[r]);
    la_compact_result_free(&f->res[r]);
    if (f->has_rres[r]) la_compact_result_free(&f->rres[r]);
  }
}

/* Gives the present ranks whose bit is set in `which` robust weights: the
 * measured series with every 10th element's interference removed (those
 * elements read 4x their cost), compacted with the same spec, and the
 * interference figures; timer resolution and detection for every rank. */
static double fx_res[NR] = {25, 25, 0, 40};
static char *fx_det[NR] = {"on", "on", "", "off (no perf events)"};
static void fx_robust(fx_t *f, unsigned which) {
  for (uint32_t r = 0; r < NR; r++) {
    La__CompactTrace *ct = &f->ct[r];
    if (!(which >> r & 1) || !ct->stats) continue;
    size_t n = fx_n[r];
    double *y = malloc(n * sizeof *y);
    assert_non_null(y);
    double interf = 0;
    uint64_t flagged = 0;
    for (size_t i = 0; i < n; i++) {
      y[i] = f->x[r][i];
      if (i % 10 == 0) { /* the measured value is 4x the cost */
        y[i] = f->x[r][i] / 4;
        interf += f->x[r][i] - y[i];
        flagged++;
      }
    }
    assert_int_equal(la_test_compact(y, n, fx_spec[r], &f->rres[r]), 0);
    free(y);
    f->has_rres[r] = 1;
    fx_stats(&f->rst[r], &f->rres[r].stats);
    ct->has_robust_segments = 1;
    ct->robust_segments.data = f->rres[r].bytes;
    ct->robust_segments.len = f->rres[r].len;
    ct->robust_stats = &f->rst[r];
    ct->has_interference = 1;
    ct->interference = interf;
    ct->has_flagged = 1;
    ct->flagged = flagged;
  }
  f->ts.timer_res_ns = fx_res;
  f->ts.n_timer_res_ns = NR;
  f->ts.detection = fx_det;
  f->ts.n_detection = NR;
}

static la_traceset_t *fx_set(const fx_t *f) {
  la_traceset_t *t = NULL;
  char why[200] = "";
  int rc = la_traceset_from_message(&f->ts, &t, why, sizeof why);
  if (rc) fprintf(stderr, "from_message: %s\n", why);
  assert_int_equal(rc, 0);
  assert_non_null(t);
  return t;
}

static uint64_t fx_total(void) {
  uint64_t n = 0;
  for (int r = 0; r < NR; r++) n += fx_n[r];
  return n;
}

static double *dense(const la_traceset_t *t) {
  double *w = malloc(la_traceset_elements(t) * sizeof *w);
  assert_non_null(w);
  assert_int_equal(la_traceset_weights(t, w), 0);
  return w;
}

/* ---------------------------------------------------------- set values */

/* The set-value tests' state: the complete fixture of cycle 7 and its set. */
typedef struct {
  fx_t f;
  la_traceset_t *t;
} set7_t;

static int set7_setup(void **state) {
  set7_t *x = malloc(sizeof *x);
  assert_non_null(x);
  fx_make(&x->f, 7, 0);
  x->t = fx_set(&x->f);
  *state = x;
  return 0;
}

static int set7_teardown(void **state) {
  set7_t *x = *state;
  la_traceset_free(x->t);
  fx_free(&x->f);
  free(x);
  return 0;
}

static void test_identity_vtxdist(void **state) {
  set7_t *x = *state;
  const fx_t *fp = &x->f;
  la_traceset_t *t = x->t;
  assert_string_equal(la_traceset_app_id(t), "job-42");
  assert_int_equal(la_traceset_cycle(t), 7);
  assert_int_equal(la_traceset_nprocs(t), NR);
  assert_int_equal(la_traceset_complete(t), 1);
  const uint32_t *miss = (const uint32_t *)1;
  assert_int_equal(la_traceset_missing(t, &miss), 0);
  assert_null(miss);
  assert_string_equal(la_traceset_metric(t), "time");
  assert_string_equal(la_traceset_unit(t), "ns");
  assert_int_equal(la_traceset_dropped(t), 0);
  assert_int_equal(la_traceset_elements(t), fx_total());
  uint64_t vtx[NR + 1];
  assert_int_equal(la_traceset_vtxdist(t, vtx), 0);
  uint64_t off = 0;
  for (int r = 0; r < NR; r++) {
    assert_int_equal(vtx[r], off);
    assert_int_equal(la_traceset_rank_elements(t, r), fx_n[r]);
    assert_true(la_traceset_has_rank(t, r));
    off += fx_n[r];
  }
  assert_int_equal(vtx[NR], off);
  assert_int_equal(la_traceset_rank_elements(t, NR), 0);
  assert_false(la_traceset_has_rank(t, NR));
  double mx, rmse, cv;
  size_t bytes;
  assert_int_equal(la_traceset_rank_error(t, 1, &mx, &rmse, &cv, &bytes), 0);
  assert_int_equal(bytes, fp->res[1].len);
  assert_true(mx == fp->res[1].error.max_abs);
  assert_true(bytes < fx_n[1] * 8); /* it did compact */
  assert_int_equal(la_traceset_rank_error(t, NR, NULL, NULL, NULL, NULL),
                   LA_EINVAL);
}

static void test_weights_decoded(void **state) {
  set7_t *x = *state;
  const fx_t *fp = &x->f;
  la_traceset_t *t = x->t;
  double *w = dense(t);
  uint64_t off = 0;
  for (uint32_t r = 0; r < NR; r++) {
    size_t n = fx_n[r];
    la_trace_t *tr;
    assert_int_equal(
        la_trace_open(fp->res[r].bytes, fp->res[r].len, &tr, NULL, 0), 0);
    double *d = malloc(n * sizeof *d), *rw = malloc(n * sizeof *rw);
    assert_int_equal(la_trace_decode(tr, 0, n, d), 0);
    assert_int_equal(la_traceset_rank_weights(t, r, rw), 0);
    double bound = fp->res[r].error.max_abs * (1 + 1e-12) + 1e-12;
    for (size_t i = 0; i < n; i++) {
      assert_true(w[off + i] == d[i]); /* bit for bit the decoded values */
      assert_true(rw[i] == d[i]);
      if (r == 0 || la_trace_is_verbatim(tr, i))
        assert_true(w[off + i] == fp->x[r][i]); /* lossless: exact */
      else
        assert_true(fabs(w[off + i] - fp->x[r][i]) <= bound);
      if (r == 2) assert_true(fabs(w[off + i] - fp->x[r][i]) <= 2.0);
    }
    free(d);
    free(rw);
    la_trace_close(tr);
    off += n;
  }
  assert_int_equal(la_traceset_rank_weights(t, NR, w), LA_EINVAL);
  free(w);
}

static void test_totals_imbalance(void **state) {
  set7_t *x = *state;
  const fx_t *fp = &x->f;
  la_traceset_t *t = x->t;
  double tot[NR], mx = 0, s = 0;
  assert_int_equal(la_traceset_rank_totals(t, tot), 0);
  for (int r = 0; r < NR; r++) {
    la_series_stats_t st;
    la_series_stats(fp->x[r], fx_n[r], &st);
    assert_true(tot[r] == st.sum); /* exact, not merely close */
    double sum, mn, mxr;
    assert_int_equal(la_traceset_rank_stats(t, r, &sum, &mn, &mxr), 0);
    assert_true(sum == st.sum && mn == st.min && mxr == st.max);
    if (st.sum > mx) mx = st.sum;
    s += st.sum;
  }
  double imb;
  assert_int_equal(la_traceset_imbalance(t, &imb), 0);
  assert_true(fabs(imb - mx / (s / NR)) <= 1e-12 * imb);
  assert_true(imb >= 1.0);
}

static void test_range_sums(void **state) {
  set7_t *x = *state;
  la_traceset_t *t = x->t;
  double *w = dense(t);
  uint64_t total = la_traceset_elements(t), vtx[NR + 1];
  la_traceset_vtxdist(t, vtx);
  struct {
    uint64_t first, count;
  } cases[] = {
      {0, total}, /* everything */
      {0, 1},
      {total - 1, 1},
      {vtx[1] - 10, 20},         /* across 0|1 */
      {vtx[1], vtx[2] - vtx[1]}, /* exactly rank 1 */
      {vtx[2] - 1, 2},           /* 1|2 */
      {5, vtx[3] + 7 - 5},       /* spans 0,1,2,3 */
      {vtx[3] - 300, 800},       /* 2|3 */
      {123, 0},                  /* empty */
      {total, 0},                /* empty at the end */
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    double want = 0, got = -1, mag = 0;
    for (uint64_t i = cases[k].first; i < cases[k].first + cases[k].count;
         i++) {
      want += w[i];
      mag += fabs(w[i]);
    }
    assert_int_equal(
        la_traceset_range_sum(t, cases[k].first, cases[k].count, &got), 0);
    assert_true(fabs(got - want) <= 1e-9 * mag + 1e-300);
    /* the largest, exactly the decoded values' */
    double mx = NAN, wmx = NAN;
    uint64_t nf = 7;
    for (uint64_t i = cases[k].first; i < cases[k].first + cases[k].count;
         i++)
      if (isnan(wmx) || w[i] > wmx) wmx = w[i];
    assert_int_equal(
        la_traceset_range_max(t, cases[k].first, cases[k].count, &mx, &nf), 0);
    assert_int_equal(nf, cases[k].count);
    assert_true(isnan(wmx) ? isnan(mx) : mx == wmx);
  }
  double s;
  assert_int_equal(la_traceset_range_max(t, total - 1, 2, &s, NULL),
                   LA_ERANGE);
  assert_int_equal(la_traceset_range_sum(t, total - 1, 2, &s), LA_ERANGE);
  assert_int_equal(la_traceset_range_sum(t, total + 1, 0, &s), LA_ERANGE);
  assert_int_equal(la_traceset_range_sum(t, 1, UINT64_MAX, &s), LA_ERANGE);
  free(w);
}

static void test_metis_zoltan(void **state) {
  set7_t *x = *state;
  la_traceset_t *t = x->t;
  uint64_t n = la_traceset_elements(t);
  double *w = dense(t), wmax = 0, scale = 0, scale32 = 0;
  for (uint64_t i = 0; i < n; i++)
    if (w[i] > wmax) wmax = w[i];
  int64_t *v = malloc(n * sizeof *v);
  int32_t *v32 = malloc(n * sizeof *v32);
  float *z = malloc(n * sizeof *z);
  assert_int_equal(la_traceset_metis_weights(t, v, 1000, &scale), 0);
  assert_int_equal(la_traceset_metis_weights32(t, v32, 1000, &scale32), 0);
  assert_true(fabs(scale - 1000 / wmax) <= 1e-12 * scale);
  assert_true(scale == scale32);
  int64_t vmax = 0;
  for (uint64_t i = 0; i < n; i++) {
    assert_true(v[i] >= 1 && v[i] <= 1000);
    assert_int_equal(v[i], v32[i]);
    if (v[i] > vmax) vmax = v[i];
    /* proportional within rounding (and the floor of 1) */
    double ideal = w[i] * scale;
    assert_true(fabs((double)v[i] - ideal) <= 0.5 + 1e-9 ||
                (v[i] == 1 && ideal < 1));
  }
  assert_int_equal(vmax, 1000);
  assert_int_equal(la_traceset_zoltan_weights(t, z), 0);
  for (uint64_t i = 0; i < n; i++) assert_true(z[i] == (float)w[i]);
  assert_int_equal(la_traceset_metis_weights(t, v, 0, NULL), LA_EINVAL);
  assert_int_equal(la_traceset_metis_weights(t, v, INT64_MAX, NULL), LA_EINVAL);
  assert_int_equal(la_traceset_metis_weights(t, v, 1, &scale), 0);
  for (uint64_t i = 0; i < n; i++) assert_int_equal(v[i], 1);
  free(v);
  free(v32);
  free(z);
  free(w);
}

static void test_partial(void **state) {
  fx_t f;
  fx_make(&f, 9, 1u << 2); /* rank 2 missing */
  la_traceset_t *t = fx_set(&f);
  assert_int_equal(la_traceset_complete(t), 0);
  const uint32_t *miss;
  assert_int_equal(la_traceset_missing(t, &miss), 1);
  assert_int_equal(miss[0], 2);
  assert_false(la_traceset_has_rank(t, 2));
  assert_int_equal(la_traceset_elements(t), fx_total()); /* still numbered */
  uint64_t vtx[NR + 1];
  la_traceset_vtxdist(t, vtx);
  double *w = dense(t);
  for (uint64_t i = 0; i < la_traceset_elements(t); i++)
    assert_true(isnan(w[i]) == (i >= vtx[2] && i < vtx[3]));
  double tot[NR];
  la_traceset_rank_totals(t, tot);
  assert_true(isnan(tot[2]) && !isnan(tot[0]) && !isnan(tot[3]));
  double imb, mx = 0, s = 0;
  for (int r = 0; r < NR; r++)
    if (r != 2) {
      s += tot[r];
      if (tot[r] > mx) mx = tot[r];
    }
  assert_int_equal(la_traceset_imbalance(t, &imb), 0);
  assert_true(fabs(imb - mx / (s / 3)) <= 1e-12 * imb);
  assert_int_equal(la_traceset_rank_stats(t, 2, NULL, NULL, NULL),
                   LA_ENOTFOUND);
  double sum;
  assert_int_equal(la_traceset_range_sum(t, vtx[2] - 5, 10, &sum), 0);
  assert_true(isnan(sum));
  /* the largest leaves the missing rank's elements out */
  double mx5 = w[vtx[2] - 5], rmx;
  uint64_t nf;
  for (uint64_t i = vtx[2] - 4; i < vtx[2]; i++) mx5 = fmax(mx5, w[i]);
  assert_int_equal(la_traceset_range_max(t, vtx[2] - 5, 10, &rmx, &nf), 0);
  assert_true(rmx == mx5 && nf == 5);
  assert_int_equal(la_traceset_range_max(t, vtx[2], vtx[3] - vtx[2], &rmx, &nf),
                   0);
  assert_true(isnan(rmx) && nf == 0);
  assert_int_equal(la_traceset_range_sum(t, vtx[1], vtx[2] - vtx[1], &sum), 0);
  assert_true(isfinite(sum));
  /* METIS and Zoltan: missing elements weigh the mean of present values */
  uint64_t n = la_traceset_elements(t), cnt = 0;
  double mean = 0, wmax = 0, scale;
  for (uint64_t i = 0; i < n; i++)
    if (!isnan(w[i])) {
      mean += w[i];
      cnt++;
      if (w[i] > wmax) wmax = w[i];
    }
  mean /= (double)cnt;
  int64_t *v = malloc(n * sizeof *v);
  float *z = malloc(n * sizeof *z);
  assert_int_equal(la_traceset_metis_weights(t, v, 1000, &scale), 0);
  assert_true(fabs(scale - 1000 / wmax) <= 1e-12 * scale);
  int64_t vm = (int64_t)nearbyint(mean * scale);
  assert_int_equal(la_traceset_zoltan_weights(t, z), 0);
  for (uint64_t i = vtx[2]; i < vtx[3]; i++) {
    assert_true(llabs(v[i] - vm) <= 1);
    assert_true(fabsf(z[i] - (float)mean) <= 1e-6f * (float)mean);
  }
  for (uint64_t i = 0; i < vtx[2]; i++) assert_true(z[i] == (float)w[i]);
  free(v);
  free(z);
  free(w);
  la_traceset_free(t);
  fx_free(&f);

  /* Without rank_elements: present ranks count their traces' elements, a
   * missing rank counts 0 (its size is unknown). */
  fx_make(&f, 11, 1u << 1);
  f.ts.n_rank_elements = 0;
  t = fx_set(&f);
  assert_int_equal(la_traceset_elements(t), fx_total() - fx_n[1]);
  assert_int_equal(la_traceset_rank_elements(t, 1), 0);
  assert_int_equal(la_traceset_rank_elements(t, 2), fx_n[2]);
  la_traceset_vtxdist(t, vtx);
  assert_int_equal(vtx[1], vtx[2]);
  assert_int_equal(la_traceset_range_sum(t, 0, vtx[3], &sum), 0);
  assert_true(isfinite(sum)); /* the empty missing rank adds nothing */
  la_traceset_free(t);
  fx_free(&f);

  /* Every rank missing: no weights to give, but the set itself is fine. */
  fx_make(&f, 10, 0xf);
  t = fx_set(&f);
  assert_int_equal(la_traceset_missing(t, NULL), NR);
  assert_int_equal(la_traceset_imbalance(t, &imb), LA_EINVAL);
  int64_t one;
  float zf;
  assert_int_equal(la_traceset_metis_weights(t, &one, 10, NULL), LA_EINVAL);
  assert_int_equal(la_traceset_zoltan_weights(t, &zf), LA_EINVAL);
  la_traceset_free(t);
  fx_free(&f);
}

static void expect_proto(const La__TraceSet *m, const char *what) {
  la_traceset_t *t = (la_traceset_t *)1;
  char why[200] = "";
  assert_int_equal(la_traceset_from_message(m, &t, why, sizeof why), LA_EPROTO);
  assert_null(t);
  if (!strstr(why, what)) fprintf(stderr, "why: '%s', want '%s'\n", why, what);
  assert_non_null(strstr(why, what));
}

/* A set whose one rank declares 2^32 elements in a 30-odd-byte encoding is
 * refused by default (the per-rank cap), before anything is decoded; a set
 * within the cap is accepted. */
static void test_rank_element_cap(void **state) {
  double x[50];
  for (int i = 0; i < 50; i++) x[i] = 1.5;
  la_compact_result_t res;
  assert_int_equal(la_compact(x, 50, NULL, &res), 0);
  uint64_t n = UINT64_C(1) << 32;
  uint8_t big[128];
  la_creader_t r = {res.bytes, res.len - 4, 14};
  uint64_t old_n, tag;
  assert_int_equal(la_creader_varint(&r, &old_n), 0);
  assert_int_equal(la_creader_varint(&r, &tag), 0);
  assert_true((tag >> LA_REC_SHIFT) + 1 == old_n);
  memcpy(big, res.bytes, 14);
  size_t o = 14;
  o += la_varint_write(big + o, n);
  o += la_varint_write(
      big + o, ((n - 1) << LA_REC_SHIFT) | (tag & ((1u << LA_REC_SHIFT) - 1)));
  memcpy(big + o, res.bytes + r.off, res.len - 4 - r.off);
  o += res.len - 4 - r.off;
  uint32_t crc = la_compact_crc32(0, big, o);
  for (int i = 0; i < 4; i++) big[o + i] = (uint8_t)(crc >> (8 * i));
  o += 4;

  La__SeriesStats st = LA__SERIES_STATS__INIT;
  st.count = n;
  st.sum = 1.5 * (double)n;
  st.min = st.max = 1.5;
  La__CompactTrace ct = LA__COMPACT_TRACE__INIT;
  ct.app_id = "huge";
  ct.cycle_tag = 1;
  ct.n_elements = n;
  ct.mode = (La__CompactMode)res.mode;
  ct.segments.data = big;
  ct.segments.len = o;
  ct.stats = &st;
  La__CompactTrace *ctp = &ct;
  uint64_t re = n;
  La__TraceSet ts = LA__TRACE_SET__INIT;
  ts.app_id = "huge";
  ts.cycle_tag = 1;
  ts.nprocs = 1;
  ts.complete = 1;
  ts.traces = &ctp;
  ts.n_traces = 1;
  ts.rank_elements = &re;
  ts.n_rank_elements = 1;
  la_traceset_t *t = NULL;
  char why[200] = "";
  assert_int_equal(la_traceset_from_message(&ts, &t, why, sizeof why),
                   LA_EPROTO);
  assert_null(t);
  assert_non_null(strstr(why, "4294967296 elements, more than the"));
  /* without rank_elements, the trace's own count is capped too */
  ts.n_rank_elements = 0;
  assert_int_equal(la_traceset_from_message(&ts, &t, why, sizeof why),
                   LA_EPROTO);
  assert_non_null(strstr(why, "rank 0: 4294967296 elements"));
  /* at the cap it is accepted (opening is O(records), nothing expanded) */
  n = LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS;
  o = 14;
  o += la_varint_write(big + o, n);
  o += la_varint_write(
      big + o, ((n - 1) << LA_REC_SHIFT) | (tag & ((1u << LA_REC_SHIFT) - 1)));
  memcpy(big + o, res.bytes + r.off, res.len - 4 - r.off);
  o += res.len - 4 - r.off;
  crc = la_compact_crc32(0, big, o);
  for (int i = 0; i < 4; i++) big[o + i] = (uint8_t)(crc >> (8 * i));
  ct.segments.len = o + 4;
  ct.n_elements = st.count = re = n;
  ts.n_rank_elements = 1;
  assert_int_equal(la_traceset_from_message(&ts, &t, why, sizeof why), 0);
  assert_int_equal(la_traceset_elements(t), n);
  la_traceset_free(t);
  assert_int_equal(la_client_set_max_elements(NULL, 10), LA_EINVAL);
  la_compact_result_free(&res);
}

static void test_rejects(void **state) {
  la_traceset_t *t = (la_traceset_t *)1;
  char why[200] = "";
  static const uint8_t garbage[] = "this is not a TraceSet at all";
  assert_int_equal(
      la_traceset_from_bytes(garbage, sizeof garbage, &t, why, sizeof why),
      LA_EPROTO);
  assert_null(t);
  assert_true(why[0] != '\0');
  assert_int_equal(la_traceset_from_bytes(NULL, 0, &t, NULL, 0), LA_EPROTO);
  assert_int_equal(la_traceset_from_bytes(garbage, 3, NULL, NULL, 0),
                   LA_EINVAL);

  fx_t f;
  fx_make(&f, 7, 0);
  /* The packed message round-trips through from_bytes. */
  size_t n = protobuf_c_message_get_packed_size(&f.ts.base);
  uint8_t *buf = malloc(n);
  protobuf_c_message_pack(&f.ts.base, buf);
  assert_int_equal(la_traceset_from_bytes(buf, n, &t, why, sizeof why), 0);
  assert_int_equal(la_traceset_elements(t), fx_total());
  la_traceset_free(t);
  /* Truncations of it are refused, never crash. */
  for (size_t k = 0; k < n; k += n / 37 + 1) {
    t = NULL;
    int rc = la_traceset_from_bytes(buf, k, &t, NULL, 0);
    assert_true(rc == LA_EPROTO || (rc == 0 && t));
    la_traceset_free(t);
  }
  free(buf);

  f.rank_el[1] += 1;
  expect_proto(&f.ts, "rank_elements");
  f.rank_el[1] -= 1;

  f.ts.complete = 0; /* a rank neither present nor missing */
  f.ts.n_traces = 3;
  expect_proto(&f.ts, "missing");
  f.missing[0] = 3; /* now listed: accepted */
  f.ts.n_missing_ranks = 1;
  assert_int_equal(la_traceset_from_message(&f.ts, &t, why, sizeof why), 0);
  la_traceset_free(t);
  f.ts.complete = 1; /* complete, yet a rank missing */
  expect_proto(&f.ts, "complete");
  f.ts.complete = 0;
  f.ts.n_traces = 2; /* ranks 2 and 3 absent, 3 listed twice */
  f.missing[1] = 3;
  f.ts.n_missing_ranks = 2;
  expect_proto(&f.ts, "twice");
  f.ts.n_traces = NR;
  f.ts.n_missing_ranks = 0;
  f.ts.complete = 1;

  /* corrupt encoding (CRC) */
  uint8_t save = f.res[1].bytes[f.res[1].len / 2];
  f.res[1].bytes[f.res[1].len / 2] ^= 0x40;
  expect_proto(&f.ts, "rank 1");
  f.res[1].bytes[f.res[1].len / 2] = save;
  /* rank 2's encoding under rank 3's counts */
  f.ct[3].segments = f.ct[2].segments;
  expect_proto(&f.ts, "rank 3");
  f.ct[3].segments.data = f.res[3].bytes;
  f.ct[3].segments.len = f.res[3].len;
  /* mode disagreeing with the encoding */
  f.ct[0].mode = LA__COMPACT_MODE__COMPACT_MAXERR;
  expect_proto(&f.ts, "mode");
  f.ct[0].mode = LA__COMPACT_MODE__COMPACT_LOSSLESS;
  /* a trace of another cycle */
  f.ct[2].cycle_tag = 8;
  expect_proto(&f.ts, "another set");
  f.ct[2].cycle_tag = 7;
  /* stats count not matching */
  f.st[0].count += 1;
  expect_proto(&f.ts, "stats.count");
  f.st[0].count -= 1;
  /* still good after all the repairs */
  assert_int_equal(la_traceset_from_message(&f.ts, &t, why, sizeof why), 0);
  la_traceset_free(t);
  fx_free(&f);
}

/* ------------------------------------------------------ fake feed server */

typedef struct srv srv_t;
typedef void (*script_fn)(srv_t *s, int fd);

struct srv {
  int lfd;
  uint16_t port;
  char addr[40];
  pthread_t th;
  script_fn fn;
  const fx_t *fx;
  /* what the server saw (read by the test after join) */
  int subscribed, sub_live, sub_latest, sub_has_cycle;
  uint64_t sub_cycle;
  char sub_app[160];
  int queries;
  int fail; /* the script met something unexpected */
};

static void *srv_main(void *arg) {
  srv_t *s = arg;
  struct pollfd p = {.fd = s->lfd, .events = POLLIN};
  if (poll(&p, 1, 10000) != 1) {
    s->fail = 1;
    return NULL;
  }
  int fd = accept(s->lfd, NULL, NULL);
  if (fd < 0) {
    s->fail = 1;
    return NULL;
  }
  s->fn(s, fd);
  close(fd);
  return NULL;
}

static void srv_start(srv_t *s, script_fn fn, const fx_t *fx) {
  memset(s, 0, sizeof *s);
  s->fn = fn;
  s->fx = fx;
  s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(s->lfd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof a;
  assert_int_equal(bind(s->lfd, (void *)&a, sizeof a), 0);
  assert_int_equal(listen(s->lfd, 4), 0);
  assert_int_equal(getsockname(s->lfd, (void *)&a, &sl), 0);
  s->port = ntohs(a.sin_port);
  snprintf(s->addr, sizeof s->addr, "127.0.0.1:%u", s->port);
  assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_join(srv_t *s) {
  pthread_join(s->th, NULL);
  close(s->lfd);
  assert_int_equal(s->fail, 0);
}

/* Reads the Subscribe; records it. */
static int srv_read_sub(srv_t *s, int fd) {
  uint16_t type;
  ProtobufCMessage *m = NULL;
  if (la_recv_msg(fd, 1 << 20, 5000, &type, &m, NULL, 0) != 0 ||
      type != LA__MSG_TYPE__MSG_SUBSCRIBE) {
    if (m) la_msg_free(m);
    s->fail = 1;
    return -1;
  }
  const La__Subscribe *sub = (const La__Subscribe *)m;
  s->subscribed = 1;
  snprintf(s->sub_app, sizeof s->sub_app, "%s",
           sub->app_id ? sub->app_id : "(null)");
  s->sub_live = sub->live;
  s->sub_latest = sub->latest;
  s->sub_has_cycle = sub->has_cycle;
  s->sub_cycle = sub->cycle_tag;
  la_msg_free(m);
  return 0;
}

/* Makes the fixture's set one of cycle tag. */
static void srv_set_cycle(fx_t *f, uint64_t tag) {
  f->ts.cycle_tag = tag;
  for (size_t i = 0; i < f->ts.n_traces; i++) f->ts.traces[i]->cycle_tag = tag;
  f->ts.has_dropped = 0;
}

/* Sends the fixture's set as cycle `tag` with `dropped`. */
static void srv_send_set(srv_t *s, int fd, uint64_t tag, uint64_t dropped) {
  fx_t *f = (fx_t *)s->fx; /* the test thread waits; nobody else touches */
  srv_set_cycle(f, tag);
  f->ts.has_dropped = dropped != 0;
  f->ts.dropped = dropped;
  if (la_send_msg(fd, LA__MSG_TYPE__MSG_TRACE_SET, &f->ts.base, 5000))
    s->fail = 1;
}

/* Waits (bounded) until the client closes its end. */
static void srv_wait_close(int fd) {
  char c;
  (void)la_read_all(fd, &c, 1, 10000);
}

static void script_two_sets(srv_t *s, int fd) {
  if (srv_read_sub(s, fd)) return;
  srv_send_set(s, fd, 1, 0);
  srv_send_set(s, fd, 2, 3);
}

static void script_silent(srv_t *s, int fd) {
  if (srv_read_sub(s, fd)) return;
  srv_wait_close(fd);
}

static void script_garbage(srv_t *s, int fd) {
  if (srv_read_sub(s, fd)) return;
  static const uint8_t g[] = {0, 0, 0, 4, 0, 21, 0xde, 0xad, 1, 2, 3, 4};
  la_write_all(fd, g, sizeof g, 5000);
  srv_wait_close(fd);
}

static void script_huge(srv_t *s, int fd) {
  if (srv_read_sub(s, fd)) return;
  static const uint8_t g[] = {0x40, 0, 0, 0, 0, 21, 0, 0};
  la_write_all(fd, g, sizeof g, 5000);
  srv_wait_close(fd);
}

static void script_bad_then_good(srv_t *s, int fd) {
  if (srv_read_sub(s, fd)) return;
  /* well framed, payload not a TraceSet */
  static const uint8_t g[] = {0, 0,    0,    5,    0,    21,  0,
                              0, 0xff, 0xff, 0xff, 0xff, 0xff};
  la_write_all(fd, g, sizeof g, 5000);
  /* valid protobuf, corrupt encoding */
  fx_t *f = (fx_t *)s->fx;
  size_t k = f->res[3].len / 3;
  f->res[3].bytes[k] ^= 0x10;
  srv_send_set(s, fd, 5, 0);
  f->res[3].bytes[k] ^= 0x10;
  srv_send_set(s, fd, 6, 0);
  srv_wait_close(fd);
}

static void script_error(srv_t *s, int fd) {
  if (srv_read_sub(s, fd)) return;
  La__Error e = LA__ERROR__INIT;
  e.code = LA_EREFUSED;
  e.message = "too many subscribers";
  la_send_msg(fd, LA__MSG_TYPE__MSG_ERROR, &e.base, 5000);
}

static void script_dribble(srv_t *s, int fd) {
  if (srv_read_sub(s, fd)) return;
  uint8_t *buf;
  size_t n;
  fx_t *f = (fx_t *)s->fx;
  if (la_frame_pack(LA__MSG_TYPE__MSG_TRACE_SET, &f->ts.base, &buf, &n)) {
    s->fail = 1;
    return;
  }
  la_write_all(fd, buf, 5, 5000); /* not even a whole header */
  usleep(250000);
  la_write_all(fd, buf + 5, n / 2 - 5, 5000);
  usleep(250000);
  la_write_all(fd, buf + n / 2, n - n / 2, 5000);
  free(buf);
  srv_wait_close(fd);
}

/* Answers Query and StatusRequest until the client closes. A Query for the
 * latest set is preceded by a subscription set (cycle 99). */
static void script_query(srv_t *s, int fd) {
  for (;;) {
    uint16_t type;
    ProtobufCMessage *m = NULL;
    int rc = la_recv_msg(fd, 1 << 20, 10000, &type, &m, NULL, 0);
    if (rc == LA_EIO) return; /* client closed */
    if (rc) {
      s->fail = 1;
      return;
    }
    fx_t *f = (fx_t *)s->fx;
    if (type == LA__MSG_TYPE__MSG_QUERY) {
      const La__Query *q = (const La__Query *)m;
      La__QueryReply r = LA__QUERY_REPLY__INIT;
      La__TraceSet *sets[1] = {&f->ts};
      La__AppInfo a1 = LA__APP_INFO__INIT, a2 = LA__APP_INFO__INIT;
      La__AppInfo *apps[2] = {&a1, &a2};
      La__AppList al = LA__APP_LIST__INIT;
      s->queries++;
      r.has_feed_protocol = 1;
      r.feed_protocol = LA_FEED_PROTOCOL_VERSION;
      if (!strcmp(q->what, "traceset") && strcmp(q->app_id, "job-42")) {
        r.status = LA_ENOTFOUND;
        r.message = "no application job-x";
      } else if (!strcmp(q->what, "traceset") && !q->has_cycle_tag) {
        srv_send_set(s, fd, 99, 4); /* a subscription set first */
        srv_set_cycle(f, 8);        /* the latest */
        r.n_sets = 1;
        r.sets = sets;
      } else if (!strcmp(q->what, "traceset") && q->cycle_tag == 7) {
        srv_set_cycle(f, 7);
        r.n_sets = 1;
        r.sets = sets;
      } else if (!strcmp(q->what, "traceset")) {
        r.status = LA_ENOTFOUND;
        r.message = "no such cycle";
      } else if (!strcmp(q->what, "apps")) {
        a1.app_id = "job-42";
        a1.has_nprocs = a2.has_nprocs = 1;
        a1.nprocs = 4;
        a2.app_id = "job-43";
        a2.nprocs = 2;
        al.n_apps = 2;
        al.apps = apps;
        r.apps = &al;
      } else {
        La__Error er = LA__ERROR__INIT;
        er.code = LA_EINVAL;
        er.message = "unknown query";
        la_send_msg(fd, LA__MSG_TYPE__MSG_ERROR, &er.base, 5000);
        la_msg_free(m);
        continue;
      }
      if (la_send_msg(fd, LA__MSG_TYPE__MSG_QUERY_REPLY, &r.base, 5000))
        s->fail = 1;
    } else if (type == LA__MSG_TYPE__MSG_STATUS_REQUEST) {
      La__StatusReply r = LA__STATUS_REPLY__INIT;
      La__StatusEntry e = LA__STATUS_ENTRY__INIT, *ep = &e;
      r.daemon = "la-globalagent";
      e.key = "subscribers";
      e.value = "1";
      r.n_entries = 1;
      r.entries = &ep;
      la_send_msg(fd, LA__MSG_TYPE__MSG_STATUS_REPLY, &r.base, 5000);
    } else {
      s->fail = 1;
    }
    la_msg_free(m);
  }
}

/* A GlobalAgent of feed protocol 1: it answers a listing with no version
 * (and text rows, which this client does not know). */
static void script_old_feed(srv_t *s, int fd) {
  uint16_t type;
  ProtobufCMessage *m = NULL;
  if (la_recv_msg(fd, 1 << 20, 10000, &type, &m, NULL, 0) != 0 ||
      type != LA__MSG_TYPE__MSG_QUERY) {
    s->fail = 1;
    la_msg_free(m);
    return;
  }
  const La__Query *q = (const La__Query *)m;
  if (!q->has_feed_protocol || q->feed_protocol != LA_FEED_PROTOCOL_VERSION)
    s->fail = 1;
  s->queries++;
  la_msg_free(m);
  La__QueryReply r = LA__QUERY_REPLY__INIT;
  if (la_send_msg(fd, LA__MSG_TYPE__MSG_QUERY_REPLY, &r.base, 5000))
    s->fail = 1;
  /* wait for the client to close */
  if (la_recv_msg(fd, 1 << 20, 10000, &type, &m, NULL, 0) == 0) la_msg_free(m);
}

static la_client_t *connect_to(const srv_t *s) {
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(s->addr, 5000, &c), 0);
  assert_non_null(c);
  assert_true(la_client_fd(c) >= 0);
  assert_string_equal(la_client_error(c), "");
  return c;
}

/* ------------------------------------------------------ robust weights */

/* Every weight function of t serves rank r's series decoded from enc. */
static void expect_weights_from(const la_traceset_t *t,
                                const la_compact_result_t *enc) {
  uint64_t vtx[NR + 1];
  assert_int_equal(la_traceset_vtxdist(t, vtx), 0);
  double *w = dense(t);
  float *zw = malloc(fx_total() * sizeof *zw);
  assert_non_null(zw);
  assert_int_equal(la_traceset_zoltan_weights(t, zw), 0);
  for (uint32_t r = 0; r < NR; r++) {
    size_t n = fx_n[r];
    double *v = malloc(n * sizeof *v);
    la_trace_t *tr = NULL;
    assert_int_equal(la_trace_open(enc[r].bytes, enc[r].len, &tr, NULL, 0), 0);
    assert_int_equal(la_trace_decode(tr, 0, n, v), 0);
    la_trace_close(tr);
    double s = 0;
    for (size_t i = 0; i < n; i++) {
      if (w[vtx[r] + i] != v[i])
        fail_msg("rank %u element %zu: weight %.17g, expected %.17g", r, i,
                 w[vtx[r] + i], v[i]);
      assert_true(zw[vtx[r] + i] == (float)(v[i] > 0 ? v[i] : 0));
      s += v[i];
    }
    double rs;
    assert_int_equal(la_traceset_range_sum(t, vtx[r], n, &rs), 0);
    assert_true(fabs(rs - s) <= 1e-9 * fabs(s) + 1e-9);
    free(v);
  }
  free(zw);
  free(w);
}

static void test_robust_default_and_choice(void **state) {
  fx_t f;
  fx_make(&f, 3, 0);
  fx_robust(&f, 0xf);
  la_compact_result_t meas[NR], rob[NR];
  for (int r = 0; r < NR; r++) meas[r] = f.res[r], rob[r] = f.rres[r];
  la_traceset_t *t = fx_set(&f);
  /* every rank has robust weights: they are the default */
  assert_int_equal(la_traceset_has_robust(t), 1);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_ROBUST);
  expect_weights_from(t, rob);
  /* exact measured totals are still the measured ones */
  double tot[NR], rtot[NR];
  assert_int_equal(la_traceset_rank_totals(t, tot), 0);
  assert_int_equal(la_traceset_robust_totals(t, rtot), 0);
  double mx = 0, sum = 0;
  for (int r = 0; r < NR; r++) {
    assert_true(tot[r] == f.res[r].stats.sum);
    assert_true(rtot[r] == f.rres[r].stats.sum);
    assert_true(rtot[r] < tot[r]);
    double s;
    assert_int_equal(la_traceset_rank_robust_stats(t, r, &s, NULL, NULL), 0);
    assert_true(s == rtot[r]);
    double in, ft;
    uint64_t fl;
    assert_int_equal(la_traceset_rank_interference(t, r, &in, &fl, &ft), 0);
    assert_int_equal(fl, (fx_n[r] + 9) / 10);
    assert_true(in > 0 && isnan(ft));
    assert_true(la_traceset_rank_timer_res(t, r) == fx_res[r]);
    assert_string_equal(la_traceset_rank_detection(t, r), fx_det[r]);
    sum += rtot[r];
    if (rtot[r] > mx) mx = rtot[r];
  }
  double imb;
  assert_int_equal(la_traceset_robust_imbalance(t, &imb), 0);
  assert_true(fabs(imb - mx / (sum / NR)) < 1e-12);
  /* the METIS weights follow: the heaviest robust element weighs 1000 */
  int64_t *vw = malloc(fx_total() * sizeof *vw);
  double scale;
  assert_int_equal(la_traceset_metis_weights(t, vw, 1000, &scale), 0);
  double rmax = 0;
  for (int r = 0; r < NR; r++)
    if (f.rres[r].stats.max > rmax) rmax = f.rres[r].stats.max;
  assert_true(fabs(scale * rmax - 1000) < 1000 * 0.01);
  /* switched to measured on request */
  assert_int_equal(la_traceset_set_weights(t, LA_WEIGHTS_MEASURED), 0);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_MEASURED);
  expect_weights_from(t, meas);
  assert_int_equal(la_traceset_set_weights(t, LA_WEIGHTS_ROBUST), 0);
  expect_weights_from(t, rob);
  assert_int_equal(la_traceset_set_weights(t, 7), LA_EINVAL);
  free(vw);
  la_traceset_free(t);
  /* by the environment */
  setenv("LA_WEIGHTS", "measured", 1);
  t = fx_set(&f);
  unsetenv("LA_WEIGHTS");
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_MEASURED);
  expect_weights_from(t, meas);
  la_traceset_free(t);
  fx_free(&f);
}

static void test_robust_fallback(void **state) {
  fx_t f;
  fx_make(&f, 4, 0);
  fx_robust(&f, 0xb); /* rank 2 from an older LocalAgent */
  la_compact_result_t meas[NR];
  for (int r = 0; r < NR; r++) meas[r] = f.res[r];
  la_traceset_t *t = fx_set(&f);
  assert_int_equal(la_traceset_has_robust(t), 0);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_MEASURED);
  expect_weights_from(t, meas);
  assert_int_equal(la_traceset_set_weights(t, LA_WEIGHTS_ROBUST), LA_ENOTFOUND);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_MEASURED);
  double imb, s;
  assert_int_equal(la_traceset_robust_imbalance(t, &imb), LA_ENOTFOUND);
  assert_int_equal(la_traceset_rank_robust_stats(t, 2, &s, NULL, NULL),
                   LA_ENOTFOUND);
  assert_int_equal(la_traceset_rank_interference(t, 2, NULL, NULL, NULL),
                   LA_ENOTFOUND);
  assert_int_equal(la_traceset_rank_robust_stats(t, 1, &s, NULL, NULL), 0);
  la_traceset_free(t);
  /* a partial set: the present ranks decide */
  fx_free(&f);
  fx_make(&f, 5, 1u << 2);
  fx_robust(&f, 0xf);
  t = fx_set(&f);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_ROBUST);
  double *w = dense(t);
  assert_true(isnan(w[fx_n[0] + fx_n[1]])); /* rank 2's first element */
  free(w);
  la_traceset_free(t);
  fx_free(&f);
  /* robust weights that do not fit their trace are refused */
  fx_make(&f, 6, 0);
  fx_robust(&f, 0xf);
  la_compact_result_t shorter;
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse(fx_spec[1], &p, NULL, 0), 0);
  assert_int_equal(la_compact(f.x[1], fx_n[1] - 1, &p, &shorter), 0);
  f.ct[1].robust_segments.data = shorter.bytes;
  f.ct[1].robust_segments.len = shorter.len;
  la_traceset_t *bad = NULL;
  char why[200] = "";
  assert_int_equal(la_traceset_from_message(&f.ts, &bad, why, sizeof why),
                   LA_EPROTO);
  assert_null(bad);
  assert_non_null(strstr(why, "rank 1: robust encoding"));
  la_compact_result_free(&shorter);
  fx_free(&f);
}

/* Writes app "rob-1", 2 ranks of 200 elements, cycle 1 complete, both
 * traces with robust weights (measured 3x robust on even elements), into a
 * store at path. */
static void write_robust_store(const char *path, double *meas_sum,
                               double *rob_sum) {
  la_store_t *s;
  char why[256];
  assert_int_equal(la_store_open(path, 0, &s, why, sizeof why), 0);
  for (uint32_t r = 0; r < 2; r++) {
    La__RankStart m = la_test_rank_start("rob-1", NULL, r, 2, 200);
    m.seq = 1 + r;
    m.has_timer_res_ns = 1;
    m.timer_res_ns = 30;
    m.interference = "on";
    assert_int_equal(la_store_rank_start(s, &m, NULL), 0);
    double x[200], y[200];
    for (int i = 0; i < 200; i++) {
      y[i] = 100 * (r + 1) + i;
      x[i] = i % 2 ? y[i] : 3 * y[i];
    }
    la_test_robust_t rt;
    assert_int_equal(la_test_robust_make(&rt, "rob-1", r, 10 + r, 1, x, y, 200),
                     0);
    meas_sum[r] = rt.meas.stats.sum;
    rob_sum[r] = rt.rob.stats.sum;
    assert_int_equal(la_store_trace(s, &rt.t, NULL), 0);
    la_test_robust_free(&rt);
  }
  assert_int_equal(la_store_set_closed(s, "rob-1", 1, 1, NULL, 0, 1), 0);
  la_store_close(s);
}

/* A real GlobalAgent serves the robust weights it stored: a client gets
 * them by default, the measured ones after la_client_set_weights or with
 * LA_WEIGHTS=measured, and the timer resolution from the RankStarts. */
static void test_global_robust(void **state) {
  la_test_stack_t st;
  if (la_ts_init(&st) != 0) {
    la_ts_free(&st);
    skip();
  }
  double ms[2], rs[2];
  write_robust_store(st.db, ms, rs);
  const char *extra[] = {"--stitch.timeout=60m", NULL};
  if (la_ts_start_global(&st, extra) != 0) {
    la_ts_free(&st);
    fail_msg("la-globalagent did not start");
  }
  const char *addr = st.feed_addr;
  la_client_t *c = NULL;
  la_traceset_t *t = NULL;
  double w[400];
  assert_int_equal(la_client_connect(addr, 5000, &c), 0);
  assert_int_equal(la_client_latest(c, "rob-1", &t), 0);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_ROBUST);
  assert_int_equal(la_traceset_weights(t, w), 0);
  assert_true(w[0] == 100 && w[200] == 200); /* robust, not 300 and 600 */
  double tot[2], imb, sum;
  assert_int_equal(la_traceset_rank_totals(t, tot), 0);
  assert_true(tot[0] == ms[0] && tot[1] == ms[1]);
  assert_int_equal(la_traceset_range_sum(t, 0, 200, &sum), 0);
  assert_true(sum == rs[0]);
  assert_int_equal(la_traceset_robust_imbalance(t, &imb), 0);
  assert_true(fabs(imb - rs[1] / ((rs[0] + rs[1]) / 2)) < 1e-12);
  assert_true(la_traceset_rank_timer_res(t, 1) == 30);
  assert_string_equal(la_traceset_rank_detection(t, 0), "on");
  la_traceset_free(t);
  assert_int_equal(la_client_set_weights(c, 9), LA_EINVAL);
  assert_int_equal(la_client_set_weights(c, LA_WEIGHTS_MEASURED), 0);
  assert_int_equal(la_client_get(c, "rob-1", 1, &t), 0);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_MEASURED);
  assert_int_equal(la_traceset_weights(t, w), 0);
  assert_true(w[0] == 300 && w[200] == 600);
  la_traceset_free(t);
  la_client_close(c);
  setenv("LA_WEIGHTS", "measured", 1);
  assert_int_equal(la_client_connect(addr, 5000, &c), 0);
  unsetenv("LA_WEIGHTS");
  assert_int_equal(la_client_subscribe(c, "rob-1", LA_CLIENT_LATEST), 0);
  assert_int_equal(la_client_next(c, 10000, &t), 0);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_MEASURED);
  assert_int_equal(la_traceset_weights(t, w), 0);
  assert_true(w[0] == 300);
  la_traceset_free(t);
  la_client_close(c);
  assert_int_equal(la_td_stop(st.ga, 5000), 0);
  la_ts_free(&st);
}

/* ------------------------------------------------------- socket tests */

/* A socket test: the fixture of one cycle, a scripted server on a loopback
 * port and a client connected to it. */
typedef struct {
  fx_t f;
  srv_t s;
  la_client_t *c;
} sess_t;

/* Makes the fixture of cycle tag, starts script fn and connects a client;
 * with `subscribe`, subscribes it to every application (asserted). */
static la_client_t *sess_open(sess_t *x, uint64_t tag, script_fn fn,
                              int subscribe) {
  fx_make(&x->f, tag, 0);
  srv_start(&x->s, fn, &x->f);
  x->c = connect_to(&x->s);
  if (subscribe) assert_int_equal(la_client_subscribe(x->c, NULL, 0), 0);
  return x->c;
}

/* Closes the client, waits for the server (asserting its script met
 * nothing unexpected) and frees the fixture; x->s stays readable. */
static void sess_close(sess_t *x) {
  la_client_close(x->c);
  srv_join(&x->s);
  fx_free(&x->f);
}

/* la_client_next on c (timeout_ms) fails with rc, and la_client_error
 * then says `word`. */
static void expect_next_fails(la_client_t *c, int timeout_ms, int rc,
                              const char *word) {
  la_traceset_t *t = (la_traceset_t *)1;
  assert_int_equal(la_client_next(c, timeout_ms, &t), rc);
  assert_null(t);
  assert_non_null(strstr(la_client_error(c), word));
}

static void test_stream_two_sets(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 1, script_two_sets, 0);
  assert_int_equal(la_client_subscribe(c, "job-42", LA_CLIENT_LATEST), 0);
  la_traceset_t *t1 = NULL, *t2 = NULL, *t3 = (la_traceset_t *)1;
  assert_int_equal(la_client_next(c, 5000, &t1), 0);
  assert_int_equal(la_client_next(c, 5000, &t2), 0);
  assert_int_equal(la_traceset_cycle(t1), 1);
  assert_int_equal(la_traceset_cycle(t2), 2);
  assert_int_equal(la_traceset_dropped(t1), 0);
  assert_int_equal(la_traceset_dropped(t2), 3);
  assert_int_equal(la_traceset_elements(t2), fx_total());
  assert_int_equal(la_client_next(c, 5000, &t3), LA_EIO);
  assert_null(t3);
  assert_non_null(strstr(la_client_error(c), "closed"));
  assert_int_equal(la_client_state(c), LA_EIO);
  assert_int_equal(la_client_next(c, 0, &t3), LA_EIO); /* sticky */
  assert_int_equal(la_client_subscribe(c, NULL, 0), LA_EIO);
  double sum0 = x.f.res[0].stats.sum;
  sess_close(&x);
  assert_string_equal(x.s.sub_app, "job-42");
  assert_true(x.s.sub_live && x.s.sub_latest && !x.s.sub_has_cycle);
  /* sets outlive the client */
  double tot[NR];
  assert_int_equal(la_traceset_rank_totals(t1, tot), 0);
  assert_true(tot[0] == sum0);
  la_traceset_free(t1);
  la_traceset_free(t2);
}

static void test_subscribe_options(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 1, script_silent, 0);
  assert_int_equal(la_client_subscribe(c, "job", 8), LA_EINVAL);
  char longid[200];
  memset(longid, 'a', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  assert_int_equal(la_client_subscribe(c, longid, 0), LA_EINVAL);
  assert_int_equal(la_client_subscribe(c, "bad id", 0), LA_EINVAL);
  assert_int_equal(la_client_subscribe_at(c, NULL, LA_CLIENT_NO_LIVE, 77), 0);
  la_traceset_t *t;
  assert_int_equal(la_client_next(c, 50, &t), LA_ETIMEDOUT);
  sess_close(&x);
  assert_string_equal(x.s.sub_app, "");
  assert_true(!x.s.sub_live && !x.s.sub_latest && x.s.sub_has_cycle);
  assert_int_equal(x.s.sub_cycle, 77);
}

static void test_silent_timeout(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 1, script_silent, 1);
  la_traceset_t *t = (la_traceset_t *)1;
  uint64_t t0 = la_now_ms();
  assert_int_equal(la_client_next(c, 300, &t), LA_ETIMEDOUT);
  uint64_t dt = la_now_ms() - t0;
  assert_null(t);
  assert_true(dt >= 290 && dt < 300 + SLACK_MS);
  t0 = la_now_ms();
  assert_int_equal(la_client_next(c, 0, &t), LA_ETIMEDOUT);
  assert_true(la_now_ms() - t0 < SLACK_MS);
  /* a timeout is not sticky: the connection is still usable */
  assert_int_equal(la_client_subscribe(c, "job-42", 0), 0);
  sess_close(&x);
}

static void test_garbage(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 1, script_garbage, 1);
  expect_next_fails(c, 5000, LA_EPROTO, "frame header");
  assert_int_equal(la_client_state(c), LA_EPROTO);
  /* sticky */
  expect_next_fails(c, 0, LA_EPROTO, "frame header");
  sess_close(&x);

  c = sess_open(&x, 1, script_huge, 1);
  expect_next_fails(c, 5000, LA_EMSGSIZE, "larger");
  sess_close(&x);
}

/* ---- a set's ranks parsed on several threads (la_client_set_threads) */

#define PT_NR 300u  /* ranks: blocks of 32 on several threads */
#define PT_NE 1000u /* elements per rank */

typedef struct {
  int fd;
  uint8_t *set;
  size_t len;
} pt_job_t;

static void *pt_writer(void *arg) {
  pt_job_t *j = arg;
  la_test_feed_set(j->fd, j->set, j->len, "par", 1, 4096);
  return NULL;
}

/* The encoding of a set of nr (at most PT_NR) ranks, rank r's trace the
 * series of seed r (polyline); ranks bad[0..nbad) with a byte of their
 * encoding flipped (as test_bad_message_skipped's rank 3). */
static uint8_t *pt_pack(uint32_t nr, const uint32_t *bad, size_t nbad,
                        size_t *len) {
  static la_compact_result_t res[PT_NR];
  static La__CompactTrace ct[PT_NR];
  static La__CompactTrace *ctp[PT_NR];
  static La__SeriesStats st[PT_NR];
  double x[PT_NE];
  La__TraceSet ts = LA__TRACE_SET__INIT;
  ts.app_id = "par", ts.cycle_tag = 1, ts.nprocs = nr, ts.complete = 1;
  ts.metric = "time", ts.unit = "ns";
  for (uint32_t r = 0; r < nr; r++) {
    for (uint32_t e = 0; e < PT_NE; e++)
      x[e] = 100 + (r % 7) * 10 + (e % 50 < 25 ? e % 50 : 50 - e % 50);
    assert_int_equal(la_test_compact(x, PT_NE, "polyline:cv=0.05", &res[r]),
                     0);
    la__compact_trace__init(&ct[r]);
    la__series_stats__init(&st[r]);
    st[r].count = res[r].stats.count, st[r].sum = res[r].stats.sum;
    st[r].min = res[r].stats.min, st[r].max = res[r].stats.max;
    ct[r].app_id = "par", ct[r].rank = r, ct[r].cycle_tag = 1;
    ct[r].n_elements = PT_NE, ct[r].mode = (La__CompactMode)res[r].mode;
    ct[r].segments.data = res[r].bytes, ct[r].segments.len = res[r].len;
    ct[r].stats = &st[r];
    ctp[r] = &ct[r];
  }
  for (size_t i = 0; i < nbad; i++)
    res[bad[i]].bytes[res[bad[i]].len / 3] ^= 0x10;
  ts.traces = ctp, ts.n_traces = nr;
  *len = la__trace_set__get_packed_size(&ts);
  uint8_t *buf = malloc(*len);
  assert_non_null(buf);
  la__trace_set__pack(&ts, buf);
  for (uint32_t r = 0; r < nr; r++) la_compact_result_free(&res[r]);
  return buf;
}

/* Receives set[0..len) on a client parsing on `threads` threads: its
 * la_client_next code, *t the set, why the error said. */
static int pt_receive(uint8_t *set, size_t len, unsigned threads,
                      la_traceset_t **t, char *why, size_t why_len) {
  int sv[2];
  la_client_t *c = NULL;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(la_client_from_fd(sv[0], 0, &c), 0);
  assert_int_equal(la_client_set_threads(c, threads), 0);
  pt_job_t j = {.fd = sv[1], .set = set, .len = len};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, pt_writer, &j), 0);
  int rc = la_client_next(c, 10000, t);
  snprintf(why, why_len, "%s", rc ? la_client_error(c) : "");
  pthread_join(th, NULL);
  la_client_close(c);
  close(sv[1]);
  return rc;
}

/* A set of nr ranks parsed on 1, 4 and every CPU's threads: the same
 * weights on each; with ranks bad[0..nbad) flipped, refused on each with
 * the same error, which names `first` (the lowest bad rank's reason). */
static void pt_same_on_any_threads(uint32_t nr, const uint32_t *bad,
                                   size_t nbad, const char *first) {
  size_t len;
  uint8_t *set = pt_pack(nr, NULL, 0, &len);
  la_traceset_t *t[3] = {NULL, NULL, NULL};
  const unsigned th[3] = {1, 4, 0};
  char why[300];
  for (int i = 0; i < 3; i++) {
    assert_int_equal(pt_receive(set, len, th[i], &t[i], why, sizeof why), 0);
    assert_int_equal(la_traceset_nprocs(t[i]), nr);
    assert_int_equal(la_traceset_elements(t[i]), (uint64_t)nr * PT_NE);
  }
  static double w0[PT_NE], w1[PT_NE];
  for (uint32_t r = 0; r < nr; r++)
    for (int i = 1; i < 3; i++) {
      assert_int_equal(la_traceset_rank_weights(t[0], r, w0), 0);
      assert_int_equal(la_traceset_rank_weights(t[i], r, w1), 0);
      assert_memory_equal(w0, w1, sizeof w0);
    }
  for (int i = 0; i < 3; i++) la_traceset_free(t[i]);
  free(set);
  set = pt_pack(nr, bad, nbad, &len);
  char said[3][300];
  for (int i = 0; i < 3; i++) {
    la_traceset_t *u = (la_traceset_t *)1;
    assert_int_equal(pt_receive(set, len, th[i], &u, said[i], sizeof said[i]),
                     LA_EPROTO);
    assert_null(u);
    assert_non_null(strstr(said[i], first));
    assert_string_equal(said[0], said[i]);
  }
  free(set);
}

static void test_parse_threads(void **state) {
  la_client_t *c = NULL;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(la_client_from_fd(sv[0], 0, &c), 0);
  assert_int_equal(la_client_set_threads(c, 1025), LA_EINVAL);
  assert_int_equal(la_client_set_threads(NULL, 2), LA_EINVAL);
  la_client_close(c);
  close(sv[1]);
  /* bad ranks in several blocks: the first is said, as on one thread */
  const uint32_t bad[] = {250, 70, 71, 299};
  pt_same_on_any_threads(PT_NR, bad, 4, "rank 70: bad trace encoding");
}

/* A set of fewer ranks than threads: the threads take single ranks (not
 * one block of 32 on one thread); the set and the error said are still
 * those of one thread: ranks 3 and 1 bad say rank 1, whichever thread
 * parsed which. */
static void test_parse_threads_few_ranks(void **state) {
  const uint32_t bad[] = {3, 1};
  pt_same_on_any_threads(4, bad, 2, "rank 1: bad trace encoding");
}

static void test_bad_message_skipped(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 1, script_bad_then_good, 1);
  la_traceset_t *t = NULL;
  expect_next_fails(c, 5000, LA_EPROTO, "malformed TraceSet");
  assert_int_equal(la_client_state(c), 0); /* skipped, not dead */
  expect_next_fails(c, 5000, LA_EPROTO, "rank 3");
  assert_int_equal(la_client_next(c, 5000, &t), 0);
  assert_int_equal(la_traceset_cycle(t), 6);
  la_traceset_free(t);
  sess_close(&x);
}

static void test_error_message(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 1, script_error, 1);
  la_traceset_t *t;
  expect_next_fails(c, 5000, LA_EREFUSED, "too many subscribers");
  assert_int_equal(la_client_next(c, 5000, &t), LA_EIO);
  sess_close(&x);
}

static void test_dribble(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 33, script_dribble, 1);
  la_traceset_t *t = NULL;
  int timeouts = 0, rc;
  uint64_t t0 = la_now_ms();
  while ((rc = la_client_next(c, 40, &t)) == LA_ETIMEDOUT &&
         la_now_ms() - t0 < SLACK_MS)
    timeouts++;
  assert_int_equal(rc, 0);
  assert_true(timeouts >= 2); /* arrived in parts, nothing lost */
  assert_int_equal(la_traceset_cycle(t), 33);
  double *w = dense(t);
  assert_true(w[0] == x.f.x[0][0]);
  free(w);
  la_traceset_free(t);
  sess_close(&x);
}

static void test_query(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 7, script_query, 0);
  la_traceset_t *t = NULL;
  assert_int_equal(la_client_get(c, "job-42", 7, &t), 0);
  assert_int_equal(la_traceset_cycle(t), 7);
  assert_int_equal(la_traceset_elements(t), fx_total());
  la_traceset_free(t);
  t = (la_traceset_t *)1;
  assert_int_equal(la_client_get(c, "job-42", 12345, &t), LA_ENOTFOUND);
  assert_null(t);
  assert_non_null(strstr(la_client_error(c), "no such cycle"));
  assert_int_equal(la_client_latest(c, "job-x", &t), LA_ENOTFOUND);
  assert_int_equal(la_client_latest(c, "job-42", &t), 0);
  assert_int_equal(la_traceset_cycle(t), 8);
  la_traceset_free(t);
  assert_int_equal(la_client_get(c, NULL, 1, &t), LA_EINVAL);
  /* the set that arrived during a request waits for la_client_next */
  assert_int_equal(la_client_next(c, 0, &t), 0);
  assert_int_equal(la_traceset_cycle(t), 99);
  assert_int_equal(la_traceset_dropped(t), 4);
  la_traceset_free(t);
  assert_int_equal(la_client_next(c, 0, &t), LA_ETIMEDOUT);

  la_client_rows_t *rows = NULL;
  assert_int_equal(la_client_list(c, "apps", NULL, &rows), 0);
  assert_int_equal(la_client_rows_count(rows), 2);
  assert_string_equal(la_client_rows_key(rows, 1), "job-43");
  assert_non_null(strstr(la_client_rows_value(rows, 0), " nprocs=4 "));
  assert_null(la_client_rows_key(rows, 2));
  la_client_rows_free(rows);
  assert_int_equal(la_client_list(c, "bogus", NULL, &rows), LA_EINVAL);
  assert_null(rows);
  assert_non_null(strstr(la_client_error(c), "unknown query"));
  assert_int_equal(la_client_status(c, NULL, &rows), 0);
  assert_int_equal(la_client_rows_count(rows), 1);
  assert_string_equal(la_client_rows_key(rows, 0), "subscribers");
  la_client_rows_free(rows);
  sess_close(&x);
  assert_int_equal(x.s.queries, 6);
}

/* A reply of another feed protocol is refused with LA_EVERSION, naming
 * both versions, not read as an empty listing. */
static void test_query_old_feed(void **state) {
  sess_t x;
  la_client_t *c = sess_open(&x, 1, script_old_feed, 0);
  la_client_rows_t *rows = (la_client_rows_t *)1;
  assert_int_equal(la_client_list(c, "apps", NULL, &rows), LA_EVERSION);
  assert_null(rows);
  assert_non_null(strstr(la_client_error(c), "feed protocol 1"));
  sess_close(&x);
  assert_int_equal(x.s.queries, 1);
}

static void test_connect_errors(void **state) {
  la_client_t *c = (la_client_t *)1;
  /* a port nobody listens on */
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t sl = sizeof a;
  assert_int_equal(bind(l, (void *)&a, sizeof a), 0);
  getsockname(l, (void *)&a, &sl);
  char addr[40];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", ntohs(a.sin_port));
  close(l);
  assert_int_equal(la_client_connect(addr, 2000, &c), LA_ENOAGENT);
  assert_null(c);
  assert_int_equal(la_client_connect("not a port", 100, &c), LA_EINVAL);
  assert_int_equal(la_client_connect("x:1", 100, NULL), LA_EINVAL);
  setenv("LA_GLOBAL", addr, 1);
  assert_int_equal(la_client_connect(NULL, 2000, &c), LA_ENOAGENT);
  unsetenv("LA_GLOBAL");
  assert_int_equal(la_client_from_fd(-1, 0, &c), LA_EINVAL);
  /* accessors on NULL are harmless */
  assert_int_equal(la_client_fd(NULL), -1);
  la_client_close(NULL);
  la_traceset_free(NULL);
  assert_int_equal(la_traceset_nprocs(NULL), 0);
  assert_string_equal(la_client_strerror(LA_ENOTFOUND), "not found");
  /* adopting a socket: set_max_frame before data only */
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(la_client_from_fd(sv[0], 1000, &c), 0);
  assert_int_equal(la_client_set_max_frame(c, 10), LA_EINVAL);
  assert_int_equal(la_client_set_max_frame(c, 4096), 0);
  assert_int_equal(la_client_set_timeout(c, 0), LA_EINVAL);
  assert_int_equal(la_client_set_timeout(c, 200), 0);
  assert_int_equal(write(sv[1], "\0\0\x20\0\0\x15\0\0", 8), 8);
  la_traceset_t *t;
  assert_int_equal(la_client_next(c, 1000, &t), LA_EMSGSIZE);
  assert_int_equal(la_client_set_max_frame(c, 1 << 20), LA_ESTATE);
  la_client_close(c);
  close(sv[1]);
}

/* A set made for a visitor: the visitor sees every present rank once,
 * with its index open, on the parse's threads, and the set keeps its
 * state; the set keeps no index, and opens a rank's at its first use, by
 * whichever thread reads first: four threads reading every rank of it at
 * once get the weights and range sums one thread gets from the same set
 * made without a visitor (its indexes kept from the parse). */
typedef struct {
  atomic_uint ranks, bad;
} fu_state_t;

static void *fu_begin(void *ctx, const la_traceset_t *t) {
  (void)ctx, (void)t;
  return calloc(1, sizeof(fu_state_t));
}

static void fu_rank(void *state, const la_traceset_t *t, uint32_t r,
                    const la_trace_t *tr, const la_trace_t *rob) {
  fu_state_t *s = state;
  atomic_fetch_add(&s->ranks, 1);
  if (rob || la_trace_count(tr) != la_traceset_rank_elements(t, r))
    atomic_fetch_add(&s->bad, 1);
}

static const la__rank_visit_t fu_visit = {
    .begin = fu_begin, .rank = fu_rank, .free = free, .ctx = NULL};

typedef struct {
  la_traceset_t *t, *ref;
  int bad;
} fu_job_t;

static void *fu_reader(void *arg) {
  fu_job_t *j = arg;
  static _Thread_local double w0[PT_NE], w1[PT_NE];
  for (uint32_t r = 0; r < la_traceset_nprocs(j->t); r++) {
    const uint64_t first = (uint64_t)r * PT_NE + 3, count = PT_NE - 3;
    double a, b;
    if (la_traceset_rank_weights(j->t, r, w0) ||
        la_traceset_rank_weights(j->ref, r, w1) ||
        memcmp(w0, w1, sizeof w0) ||
        la_traceset_range_sum(j->t, first, count, &a) ||
        la_traceset_range_sum(j->ref, first, count, &b) ||
        memcmp(&a, &b, sizeof a))
      j->bad = 1;
  }
  return NULL;
}

static void test_visit_and_first_use(void **state) {
  (void)state;
  size_t len;
  uint8_t *set = pt_pack(64, NULL, 0, &len);
  la_traceset_t *t = NULL, *ref = NULL;
  ProtobufCMessage *m = NULL;
  char why[256];
  assert_int_equal(la_traceset_from_bytes(set, len, &ref, why, sizeof why), 0);
  assert_int_equal(
      la_msg_decode(LA__MSG_TYPE__MSG_TRACE_SET, set, len, &m, why, sizeof why),
      0);
  assert_int_equal(la__traceset_adopt_threads((La__TraceSet *)m, 0,
                                              LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS,
                                              4, &fu_visit, &t, why,
                                              sizeof why),
                   0);
  fu_state_t *st = la__traceset_aux(t);
  assert_non_null(st);
  assert_int_equal(atomic_load(&st->ranks), 64);
  assert_int_equal(atomic_load(&st->bad), 0);
  for (uint32_t r = 0; r < 64; r++) /* no index kept from the parse */
    assert_null(atomic_load(&t->trace[r]));
  fu_job_t j[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    j[i] = (fu_job_t){.t = t, .ref = ref};
    assert_int_equal(pthread_create(&th[i], NULL, fu_reader, &j[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_false(j[i].bad);
  }
  for (uint32_t r = 0; r < 64; r++) /* opened once read, and kept */
    assert_non_null(atomic_load(&t->trace[r]));
  la_traceset_free(t);
  la_traceset_free(ref);
  free(set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_identity_vtxdist, set7_setup,
                                      set7_teardown),
      cmocka_unit_test_setup_teardown(test_weights_decoded, set7_setup,
                                      set7_teardown),
      cmocka_unit_test_setup_teardown(test_totals_imbalance, set7_setup,
                                      set7_teardown),
      cmocka_unit_test_setup_teardown(test_range_sums, set7_setup,
                                      set7_teardown),
      cmocka_unit_test_setup_teardown(test_metis_zoltan, set7_setup,
                                      set7_teardown),
      cmocka_unit_test(test_partial),
      cmocka_unit_test(test_rejects),
      cmocka_unit_test(test_rank_element_cap),
      cmocka_unit_test(test_robust_default_and_choice),
      cmocka_unit_test(test_robust_fallback),
      cmocka_unit_test(test_global_robust),
      cmocka_unit_test(test_stream_two_sets),
      cmocka_unit_test(test_subscribe_options),
      cmocka_unit_test(test_silent_timeout),
      cmocka_unit_test(test_garbage),
      cmocka_unit_test(test_bad_message_skipped),
      cmocka_unit_test(test_parse_threads),
      cmocka_unit_test(test_parse_threads_few_ranks),
      cmocka_unit_test(test_visit_and_first_use),
      cmocka_unit_test(test_error_message),
      cmocka_unit_test(test_dribble),
      cmocka_unit_test(test_query),
      cmocka_unit_test(test_query_old_feed),
      cmocka_unit_test(test_connect_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
