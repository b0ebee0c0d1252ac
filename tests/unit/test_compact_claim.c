/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_claim.c: checking a trace's claimed statistics against its
 * encoding (la_trace_check_totals, la_trace_claim_check; docs/compaction.md,
 * "Checking claimed statistics").
 *
 * Every honest claim passes: the exact statistics la_compact computed, for
 * every synthetic series kind, every mode and option, quantized series,
 * spread (row) encodings, series with NaN, +-Inf and -0.0, values near
 * DBL_MAX and subnormals, and the empty series. The totals agree with the
 * decoder's (la_trace_range_sum), so the check reads nothing the decoder
 * would not. Dishonest claims are refused naming the field.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la.h"
#include "la_compact.h"

enum { N = 5000 };

/* The claim res->stats passes, and the totals' sum is the decoder's. */
static void honest(const la_compact_result_t *res, const char *what) {
  la_trace_totals_t tot;
  char why[300] = "";
  int rc = la_trace_check_totals(res->bytes, res->len, LA_TRACE_MAX_POINTS,
                                 &tot, why, sizeof why);
  if (rc != 0) fail_msg("%s: check_totals: %s", what, why);
  rc = la_trace_claim_check(&tot, &res->stats, "stats", why, sizeof why);
  if (rc != 0) fail_msg("%s: honest claim refused: %s", what, why);
  la_trace_t *t = NULL;
  assert_int_equal(la_trace_open(res->bytes, res->len, &t, why, sizeof why), 0);
  double s = 0;
  assert_int_equal(la_trace_range_sum(t, 0, la_trace_count(t), &s), 0);
  la_trace_close(t);
  if (!tot.has_nan && !tot.has_pinf && !tot.has_ninf && isfinite(s) &&
      isfinite(tot.sum) && !(fabs(s - tot.sum) <= 1e-9 * tot.abs_sum + 1e-300))
    fail_msg("%s: totals' sum %.17g, decoder's %.17g", what, tot.sum, s);
}

static void modes(const double *x, size_t n, double quantum, const char *what) {
  static const struct {
    int mode, relative, connected, outliers;
    double bound;
  } m[] = {
      {LA_COMPACT_POLYLINE, 0, 0, 1, 0.1},  {LA_COMPACT_POLYLINE, 0, 0, 0, 0.1},
      {LA_COMPACT_POLYLINE, 0, 1, 1, 0.05}, {LA_COMPACT_POLYLINE, 0, 0, 1, 0.5},
      {LA_COMPACT_MAXERR, 0, 0, 1, 1.0},    {LA_COMPACT_MAXERR, 0, 1, 0, 50},
      {LA_COMPACT_MAXERR, 1, 0, 1, 0.01},   {LA_COMPACT_LOSSLESS, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
    la_compact_params_t p;
    la_compact_params_default(&p);
    p.mode = m[i].mode;
    p.relative = m[i].relative;
    p.connected = m[i].connected;
    p.outliers = m[i].outliers;
    if (p.mode == LA_COMPACT_POLYLINE) p.cv = m[i].bound;
    if (p.mode == LA_COMPACT_MAXERR) p.epsilon = m[i].bound;
    if (p.mode == LA_COMPACT_POLYLINE) p.quantum = quantum;
    la_compact_result_t r;
    if (la_compact(x, n, &p, &r) != 0) continue; /* a mode refusing x */
    char w[200];
    snprintf(w, sizeof w, "%s mode %d/%zu", what, p.mode, i);
    honest(&r, w);
    la_compact_result_t sp;
    if (n > 0 && la_compact_spread(&r, 4, &sp) == 0) {
      snprintf(w, sizeof w, "%s mode %d/%zu spread", what, p.mode, i);
      honest(&sp, w);
      la_compact_result_free(&sp);
    }
    la_compact_result_free(&r);
  }
}

static void test_honest_claims_pass(void **state) {
  static double x[N];
  for (int k = 0; k < LA_SYNTH_KINDS; k++) {
    assert_int_equal(la_compact_synth(k, N, 7, x), 0);
    modes(x, N, 0, la_compact_synth_name(k));
    if (k == LA_SYNTH_MESH) modes(x, N, 1.0, "mesh quantized");
  }
  /* a timer aliasing with the cells' cost: coded runs in the run form,
   * later records reusing the first one's tables; and the point form */
  for (size_t i = 0; i < N; i++)
    x[i] = 0.385 * (double)(i % 9 == 4 ? 1 : i % 9 == 8 ? 25 : 26);
  modes(x, N, 0.385, "aliased ticks");
  for (size_t i = 0; i < N; i++) x[i] = 0.385 * (double)(20 + (i * 7) % 5);
  modes(x, N, 0.385, "few ticks");
  for (size_t i = 0; i < N; i++) x[i] = 100 + (double)(i % 13);
  x[10] = NAN;
  x[20] = INFINITY;
  x[30] = -0.0;
  modes(x, N, 0, "nan inf");
  x[10] = 5;
  modes(x, N, 0, "inf");
  x[40] = -INFINITY;
  modes(x, N, 0, "both inf");
  for (size_t i = 0; i < N; i++) x[i] = DBL_MAX / 4 * (1 + (double)(i % 3));
  modes(x, N, 0, "huge");
  for (size_t i = 0; i < N; i++) x[i] = 0x1p-1070 * (double)(1 + i % 5);
  modes(x, N, 0, "subnormal");
  modes(x, 0, 0, "empty");
}

/* A claim that lies: refused, why naming the field. */
static void refused(const la_compact_result_t *r, la_series_stats_t st,
                    const char *field_in_why) {
  la_trace_totals_t tot;
  char why[300] = "";
  assert_int_equal(la_trace_check_totals(r->bytes, r->len, LA_TRACE_MAX_POINTS,
                                         &tot, why, sizeof why),
                   0);
  int rc = la_trace_claim_check(&tot, &st, "stats", why, sizeof why);
  if (rc != LA_EPROTO || !strstr(why, field_in_why))
    fail_msg("claim not refused naming %s: rc %d, '%s'", field_in_why, rc,
             why);
}

static void test_false_claims_refused(void **state) {
  static double x[N];
  assert_int_equal(la_compact_synth(LA_SYNTH_MESH, N, 3, x), 0);
  la_compact_result_t r, ll;
  assert_int_equal(la_compact(x, N, NULL, &r), 0);
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_LOSSLESS;
  assert_int_equal(la_compact(x, N, &p, &ll), 0);
  la_series_stats_t st = r.stats;
  st.sum *= 1.5; /* the default cv 0.1 allows about 11% */
  refused(&r, st, "stats.sum");
  st = r.stats;
  st.sum = NAN;
  refused(&r, st, "stats.sum");
  st = r.stats;
  st.count++;
  refused(&r, st, "stats.count");
  st = r.stats;
  st.min = st.max + 1;
  refused(&r, st, "stats.min");
  st = ll.stats;
  st.sum += 1; /* lossless: exact up to rounding */
  refused(&ll, st, "stats.sum");
  st = ll.stats;
  st.max += 1;
  refused(&ll, st, "stats.max");
  st = ll.stats;
  st.min = st.max = st.sum / (double)st.count; /* the mean, no spread */
  refused(&ll, st, "stats.min");
  la_compact_result_free(&r);
  la_compact_result_free(&ll);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_honest_claims_pass),
      cmocka_unit_test(test_false_claims_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
