/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ground_truth.c: the whole pipeline against the raw truth.
 *
 * Real daemons on loopback (a GlobalAgent with a fresh SQLite file, a
 * LocalAgent feeding it), real MPI runs of the examples (wavetoy, multiloop
 * with three loops accumulating into each element, heavy; wavetoy --probe
 * box, whose boxes of two rows are stored one value per box) under mpiexec -n 4
 * with LA_DUMP_RAW, which makes libla write every profiled cycle's raw
 * per-element values. For each compaction mode, every stitched Trace-Set the
 * GlobalAgent serves is compared with those raw values:
 *   - every rank and every cycle is present, every set complete;
 *   - per-rank sums equal the raw sums exactly (the exact statistics that
 *     travel with each trace: invariant 5 of docs/architecture.md);
 *   - per-element error within the mode's bound: lossless exact; maxerr
 *     |error| <= epsilon (or epsilon*|x|); polyline each segment's
 *     coefficient of variation of the error <= cv, on the decoded values,
 *     verbatim points exact.
 * Skips (with a message) when mpiexec or the binaries are missing.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_client.h"
#include "la_client_internal.h"
#include "la_compact.h"
#include "la_compact_index.h" /* whether a trace is pieced */
#include "la_test_agent.h"
#include "la_test_daemon.h"
#include "la_test_stack.h"

static la_test_stack_t S; /* S.ga NULL: the tests skip */
static char feed_addr[64], agent_addr[64], exdir[512];

static int group_setup(void **state) {
  char path[600];
  if (system("command -v mpiexec >/dev/null 2>&1") != 0 ||
      la_td_find_bin("la-globalagent", path, sizeof path) != 0 ||
      la_td_find_bin("la-localagent", path, sizeof path) != 0)
    return 0; /* tests skip */
  snprintf(exdir, sizeof exdir, "%.*s/../examples",
           (int)(strrchr(path, '/') - path), path);
  char wt[600];
  snprintf(wt, sizeof wt, "%s/wavetoy", exdir);
  if (access(wt, X_OK) != 0) return 0;
  const char *gextra[] = {"--stitch.timeout=20s", NULL};
  if (la_ts_init(&S) != 0 || la_ts_start_global(&S, gextra) != 0 ||
      la_ts_start_local(&S, NULL) != 0)
    return -1;
  snprintf(feed_addr, sizeof feed_addr, "%s", S.feed_addr);
  snprintf(agent_addr, sizeof agent_addr, "%s", la_td_addr(S.la));
  return 0;
}

static int group_teardown(void **state) {
  la_ts_free(&S);
  return 0;
}

/* Robust weights of the time metric are whole timer ticks (the LocalAgent
 * rounds its estimates so they compact exactly): within half a tick of
 * the estimate. A tick is at most 1 ns (TSC of 1 GHz or more, or
 * clock_gettime's nanoseconds). */
#define TICK_NS 1.0

/* w is the estimate e (a measured value, kept as a float) to whole ticks. */
static int near_tick(double w, double e) {
  return fabs(w - (double)(float)e) <= TICK_NS / 2 + 1e-9 * fabs(e);
}

static double *read_raw(const char *path, uint64_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  double *x = malloc((n + 1) * sizeof *x);
  size_t got = fread(x, sizeof *x, n + 1, f);
  fclose(f);
  if (got != n) {
    free(x);
    return NULL;
  }
  return x;
}

/* Checks one rank's decoded values y against the raw x for the mode. */
static void check_bound(const la_compact_params_t *p, const la_trace_t *t,
                        const double *x, const double *y, uint64_t n,
                        const char *what) {
  int mode = la_compact_effective_mode(p);
  if (mode == LA_COMPACT_LOSSLESS) {
    for (uint64_t i = 0; i < n; i++)
      if (memcmp(&x[i], &y[i], sizeof x[i]) != 0)
        fail_msg("%s: lossless element %llu: %.17g != %.17g", what,
                 (unsigned long long)i, y[i], x[i]);
    return;
  }
  if (mode == LA_COMPACT_MAXERR) {
    for (uint64_t i = 0; i < n; i++) {
      double bound = p->relative ? p->epsilon * fabs(x[i]) : p->epsilon;
      if (!(fabs(y[i] - x[i]) <= bound * (1 + 1e-9) + 1e-300))
        fail_msg("%s: element %llu error %g above %g", what,
                 (unsigned long long)i, fabs(y[i] - x[i]), bound);
    }
    return;
  }
  /* polyline: every line segment's CV of the error, on decoded values */
  size_t nseg = la_trace_segment_count(t);
  uint64_t covered = 0;
  for (size_t s = 0; s < nseg; s++) {
    la_trace_segment_t g;
    assert_int_equal(la_trace_segment(t, s, &g), 0);
    assert_true(g.first == covered);
    covered += g.count;
    long double sse = 0, sum = 0;
    size_t m = 0;
    for (uint64_t j = g.first; j < g.first + g.count; j++) {
      if (g.kind == LA_SEG_VERBATIM || la_trace_is_verbatim(t, j)) {
        assert_memory_equal(&x[j], &y[j], sizeof(double));
        continue;
      }
      sse += ((long double)y[j] - x[j]) * ((long double)y[j] - x[j]);
      sum += x[j];
      m++;
    }
    if (g.kind == LA_SEG_LINE &&
        !(sse * m <=
          (long double)p->cv * p->cv * sum * sum * (1 + 1e-9L) + 1e-300L))
      fail_msg("%s: segment %zu (%llu points) above cv %g", what, s,
               (unsigned long long)g.count, p->cv);
  }
  assert_true(covered == n);
}

/* A channel application's trace (the elements' sums over their channels,
 * each a whole number of timer ticks) is whole ticks too: every value k *
 * scale for an integer k, so the exact integer path of the compaction
 * applies to it (a sum of scaled values would be whole ticks for only
 * 75-84% of multiloop's elements). path: the raw dump (.f64); its .fid
 * has the scale. */
static void check_whole_ticks(const char *path, const double *x, uint64_t n,
                              const char *what) {
  char fid[820];
  snprintf(fid, sizeof fid, "%.*s.fid", (int)(strlen(path) - 4), path);
  FILE *f = fopen(fid, "r");
  double scale = 0;
  char line[256];
  const char *p = f && fgets(line, sizeof line, f) ? strstr(line, "scale=") : 0;
  if (f) fclose(f);
  if (!p || (scale = atof(p + 6)) <= 0) fail_msg("%s: no scale in %s", what, fid);
  uint64_t off = 0;
  for (uint64_t i = 0; i < n; i++)
    if (nearbyint(x[i] / scale) * scale != x[i]) off++;
  if (off)
    fail_msg("%s: %llu of %llu values are not whole ticks of %.17g ns", what,
             (unsigned long long)off, (unsigned long long)n, scale);
}

/* Runs the example (mpiexec -n 4, --n n, 5 steps, with --probe probe
 * unless NULL) with the compaction spec; checks every set against the raw
 * dump. probe "box": every trace is stored one value per box (pieced). */
static void run_mode(const char *example, const char *n, const char *spec,
                     const char *app_id, const char *probe) {
  char prog[700];
  snprintf(prog, sizeof prog, "%s/%s", exdir, example);
  if (!S.ga || access(prog, X_OK) != 0) {
    printf("skip: mpiexec, the daemons or examples/%s are missing\n", example);
    skip();
  }
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse(spec, &p, NULL, 0), 0);
  char dump[600], env_agent[128], env_spec[160], env_dump[640], env_id[160];
  snprintf(dump, sizeof dump, "%s/raw-%s", la_td_dir(S.ga), app_id);
  char mk[700];
  snprintf(mk, sizeof mk, "mkdir -p %s", dump);
  assert_int_equal(system(mk), 0);
  snprintf(env_agent, sizeof env_agent, "LA_AGENT=%s", agent_addr);
  snprintf(env_spec, sizeof env_spec, "LA_COMPACT=%s", spec);
  snprintf(env_dump, sizeof env_dump, "LA_DUMP_RAW=%s", dump);
  snprintf(env_id, sizeof env_id, "LA_APP_ID=%s", app_id);
  const int steps = 5, np = 4;
  const char *argv[] = {"mpiexec", "-n",      "4", prog,    "--n",
                        n,         "--steps", "5", "--probe", probe,
                        NULL};
  if (!probe) argv[8] = NULL;
  const char *env[] = {env_agent, env_spec, env_dump, env_id, NULL};
  char out[8192];
  int rc = la_td_run(argv, env, 120000, out, sizeof out);
  if (rc != 0) fail_msg("%s exited %d:\n%s", example, rc, out);
  if (!strstr(out, "registered on 4 of 4 ranks"))
    fail_msg("%s did not register every rank:\n%s", example, out);

  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(feed_addr, 5000, &c), 0);
  /* the measured values are what LA_DUMP_RAW has: compare those (the
   * default would be the robust weights) */
  la_client_set_weights(c, LA_WEIGHTS_MEASURED);
  for (uint64_t cycle = 0; cycle < (uint64_t)steps; cycle++) {
    la_traceset_t *ts = la_ta_complete_set(c, app_id, cycle, 20000);
    if (!ts)
      fail_msg("%s cycle %llu: no complete Trace-Set (%s)", app_id,
               (unsigned long long)cycle, la_client_error(c));
    assert_int_equal(la_traceset_nprocs(ts), np);
    double totals[4];
    assert_int_equal(la_traceset_rank_totals(ts, totals), 0);
    for (uint32_t r = 0; r < (uint32_t)np; r++) {
      char path[800], what[200];
      snprintf(path, sizeof path, "%s/%s.r%u.c%llu.f64", dump, app_id, r,
               (unsigned long long)cycle);
      snprintf(what, sizeof what, "%s rank %u cycle %llu", spec, r,
               (unsigned long long)cycle);
      const la_trace_t *t = la__traceset_trace(ts, r);
      assert_non_null(t);
      uint64_t n = la_trace_count(t);
      if (probe && !strcmp(probe, "box") && t->pc == NULL)
        fail_msg("%s: stored per cell, not one value per box", what);
      double *x = read_raw(path, n);
      if (!x)
        fail_msg("%s: raw dump %s missing or not %llu values", what, path,
                 (unsigned long long)n);
      if (!strcmp(example, "multiloop")) check_whole_ticks(path, x, n, what);
      /* exact per-rank sums: the statistics are of the raw series (of
       * boxes stored one value each: the boxes' measured sum, of which the
       * dumped cells are shares, whose sum rounds differently) */
      double raw_sum = la_compact_sum(x, (size_t)n);
      int pieced = t->pc != NULL;
      if (pieced ? !(fabs(totals[r] - raw_sum) <= 1e-12 * fabs(raw_sum))
                 : totals[r] != raw_sum)
        fail_msg("%s: total %.17g != raw sum %.17g", what, totals[r], raw_sum);
      double *y = malloc(n * sizeof *y);
      assert_int_equal(la_traceset_rank_weights(ts, r, y), 0);
      check_bound(&p, t, x, y, n, what);
      free(x);
      free(y);
    }
    la_traceset_free(ts);
  }
  la_client_close(c);
}

/* One run_mode() case: the example, its --n, the spec and the app id. */
typedef struct {
  const char *example, *n, *spec, *app_id, *probe;
} mode_case_t;

static void test_mode(void **s) {
  const mode_case_t *m = *s;
  run_mode(m->example, m->n, m->spec, m->app_id, m->probe);
}

/* A cmocka test named `name` running test_mode on one case. */
#define MODE_TEST(name, example, n, spec, app_id) \
  MODE_TEST_PROBE(name, example, n, spec, app_id, NULL)
/* The same with --probe probe. */
#define MODE_TEST_PROBE(name, example, n, spec, app_id, probe) \
  {                                                            \
    name, test_mode, NULL, NULL, &(mode_case_t) {              \
      example, n, spec, app_id, probe                          \
    }                                                          \
  }

/* Row probes (wavetoy --probe row, 4 ranks of 20x20x5 cells, lossless):
 * every cell of a row carries its row's measured value (libla spreads the
 * row's time evenly), and the robust weights the agents serve are one
 * weight per row spread over its cells: in the first cycle the row's value
 * itself (stored as a float; an isolated spike row takes a neighbour row's
 * value), later a value between the smallest and the largest so far: a
 * cycle's weights depend on it and the cycles before it, never on a later
 * one, however far behind the agent falls (eight steps with 3 buffers keep
 * several cycles of a rank queued at the agent at once). */
static void test_row_probes_weights(void **s) {
  char prog[700];
  snprintf(prog, sizeof prog, "%s/wavetoy", exdir);
  if (!S.ga || access(prog, X_OK) != 0) {
    printf("skip: mpiexec, the daemons or examples/wavetoy are missing\n");
    skip();
  }
  const char *app_id = "gt-rows";
  enum { NP = 4, STEPS = 8, NX = 20 };
  char dump[600], mk[700], env_agent[128], env_dump[640];
  snprintf(dump, sizeof dump, "%s/raw-%s", la_td_dir(S.ga), app_id);
  snprintf(mk, sizeof mk, "mkdir -p %s", dump);
  assert_int_equal(system(mk), 0);
  snprintf(env_agent, sizeof env_agent, "LA_AGENT=%s", agent_addr);
  snprintf(env_dump, sizeof env_dump, "LA_DUMP_RAW=%s", dump);
  const char *argv[] = {"mpiexec", "-n", "4",       prog,  "--n", "20",
                        "--steps", "8",  "--probe", "row", NULL};
  /* without interference detection: a row flagged as preempted would
   * rightly get a weight below anything measured (the interference
   * removed), which is not the property checked here */
  const char *env[] = {env_agent,
                       env_dump,
                       "LA_COMPACT=lossless",
                       "LA_APP_ID=gt-rows",
                       "LA_INTERFERENCE=off",
                       NULL};
  char out[8192];
  int rc = la_td_run(argv, env, 120000, out, sizeof out);
  if (rc != 0) fail_msg("wavetoy --probe row exited %d:\n%s", rc, out);
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(feed_addr, 5000, &c), 0);
  assert_int_equal(la_client_set_weights(c, LA_WEIGHTS_ROBUST), 0);
  double *lo[NP] = {0}, *hi[NP] = {0}; /* per rank and row, so far */
  for (uint64_t cycle = 0; cycle < STEPS; cycle++) {
    la_traceset_t *ts = NULL;
    long long end = la_td_now_ms() + 20000;
    while ((rc = la_client_get(c, app_id, cycle, &ts)) != 0 ||
           !la_traceset_complete(ts)) {
      if (ts) la_traceset_free(ts);
      ts = NULL;
      if (la_td_now_ms() > end)
        fail_msg("cycle %llu: no complete Trace-Set (%s)",
                 (unsigned long long)cycle, la_client_error(c));
      usleep(50000);
    }
    for (uint32_t r = 0; r < NP; r++) {
      char path[800];
      snprintf(path, sizeof path, "%s/%s.r%u.c%llu.f64", dump, app_id, r,
               (unsigned long long)cycle);
      const la_trace_t *tr = la__traceset_trace(ts, r);
      uint64_t n = la_trace_count(tr);
      double *x = read_raw(path, n), *w = malloc(n * sizeof *w);
      assert_true(x && w && n % NX == 0);
      /* one value per row, from the buffer to the store: the trace holds
       * the rows' values, each spread over its NX cells by the decoder,
       * which gives the cells LA_DUMP_RAW wrote, bit for bit */
      if (la_trace_spread(tr) != NX)
        fail_msg("cycle %llu rank %u: stored with %llu cells per value, not "
                 "one value per row of %d",
                 (unsigned long long)cycle, r,
                 (unsigned long long)la_trace_spread(tr), NX);
      assert_int_equal(la_trace_decode(tr, 0, n, w), 0);
      for (uint64_t i = 0; i < n; i++)
        if (w[i] != x[i])
          fail_msg("cycle %llu rank %u cell %llu: stored %.17g, raw %.17g",
                   (unsigned long long)cycle, r, (unsigned long long)i, w[i],
                   x[i]);
      assert_int_equal(la_traceset_rank_weights(ts, r, w), 0);
      if (!lo[r]) {
        lo[r] = malloc(n / NX * sizeof(double));
        hi[r] = malloc(n / NX * sizeof(double));
        for (uint64_t k = 0; k < n / NX; k++) lo[r][k] = hi[r][k] = x[k * NX];
      }
      for (uint64_t k = 0; k < n / NX; k++) {
        double v = x[k * NX], wk = w[k * NX];
        lo[r][k] = v < lo[r][k] ? v : lo[r][k];
        hi[r][k] = v > hi[r][k] ? v : hi[r][k];
        for (uint64_t i = k * NX; i < (k + 1) * NX; i++)
          if (x[i] != v || w[i] != wk)
            fail_msg(
                "cycle %llu rank %u row %llu cell %llu: value %.17g "
                "weight %.17g, the row's first cell %.17g %.17g",
                (unsigned long long)cycle, r, (unsigned long long)k,
                (unsigned long long)(i - k * NX), x[i], w[i], v, wk);
        int ok;
        if (cycle == 0) { /* the value, or, for an isolated spike row (more
                             than 4x its neighbour rows), a neighbour's */
          double left = k > 0 ? x[(k - 1) * NX] : NAN;
          double right = k + 1 < n / NX ? x[(k + 1) * NX] : NAN;
          ok = near_tick(wk, v) ||
               (wk < v / 4 && (near_tick(wk, left) || near_tick(wk, right)));
          lo[r][k] = wk < lo[r][k] ? wk : lo[r][k];
        } else {
          ok = wk >= (double)(float)lo[r][k] - TICK_NS / 2 &&
               wk <= (double)(float)hi[r][k] + TICK_NS / 2;
        }
        if (!ok)
          fail_msg(
              "cycle %llu rank %u row %llu: weight %.17g, measured "
              "%.17g (%.17g .. %.17g so far)",
              (unsigned long long)cycle, r, (unsigned long long)k, wk, v,
              lo[r][k], hi[r][k]);
      }
      free(x);
      free(w);
    }
    la_traceset_free(ts);
  }
  for (int r = 0; r < NP; r++) {
    free(lo[r]);
    free(hi[r]);
  }
  la_client_close(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      MODE_TEST("test_polyline_default", "wavetoy", "20", "polyline:cv=0.1",
                "gt-poly"),
      MODE_TEST("test_polyline_connected", "wavetoy", "20",
                "polyline:cv=0.05,connected,no-outliers", "gt-polyc"),
      MODE_TEST("test_maxerr_relative", "wavetoy", "20",
                "maxerr:eps=0.05,relative", "gt-maxrel"),
      MODE_TEST("test_maxerr_absolute", "wavetoy", "20", "maxerr:eps=200",
                "gt-maxabs"),
      MODE_TEST("test_lossless", "wavetoy", "20", "lossless", "gt-lossless"),
      /* three loops per step accumulate into the same elements */
      MODE_TEST("test_multiloop_polyline", "multiloop", "64", "polyline:cv=0.1",
                "gt-ml-poly"),
      MODE_TEST("test_multiloop_maxerr", "multiloop", "64",
                "maxerr:eps=0.1,relative", "gt-ml-max"),
      MODE_TEST("test_heavy_lossless", "heavy", "8", "lossless",
                "gt-hv-lossless"),
      /* boxes of two rows: one value per box from the buffer to the
       * readers, the cells LA_DUMP_RAW wrote */
      MODE_TEST_PROBE("test_box_lossless", "wavetoy", "20", "lossless",
                      "gt-box-lossless", "box"),
      MODE_TEST_PROBE("test_box_maxerr_absolute", "wavetoy", "20",
                      "maxerr:eps=200", "gt-box-maxabs", "box"),
      cmocka_unit_test(test_row_probes_weights),
  };
  return cmocka_run_group_tests_name("ground_truth", tests, group_setup,
                                     group_teardown);
}
