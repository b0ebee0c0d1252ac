/* SPDX-License-Identifier: BSD-3-Clause */
/* test_pydata.c: data access for analysts, end to end.
 *
 * la_client_decode_trace (the decoder the Python package calls) against
 * la_trace_decode on every record kind the encoder writes (lines, verbatim
 * runs and exceptions, quantized runs, both lossless bodies), and its
 * errors; la_client_scale_trace against the store's own rebuilding of a
 * member of a set stored by representatives; both on a pieced trace (one
 * value per box, the geometry inside the encoding). Then a real store: the real GlobalAgent and LocalAgent
 * (la_test_agent), the wavetoy example under mpiexec -n 4 with polyline,
 * maxerr and lossless compaction; tests/python/check_pydata.py (Debian's
 * /usr/bin/python3 with numpy) pip-installs python/ into a temporary
 * directory, loads the weights and compares them exactly with `lactl
 * export` (CSV, JSON and npy, which must equal the CSV), the same per
 * channel of multiloop (three channels) against `lactl export --channel`, an
 * unknown channel's error against lactl's, one channel only, a cycle demoted
 * to a history reference and a partial cycle (copies of the store), checks
 * the format versions, and validates every JSON output of lactl against
 * the schemas in docs/schema. Skips only when mpiexec, the daemons, the example
 * or /usr/bin/python3 do not exist.
 */
#include <limits.h>
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
#include "la_compact.h"
#include "la_compact_pieces.h"
#include "la_test_agent.h"
#include "la_test_daemon.h"
#include "la_test_series.h"

#define PY "/usr/bin/python3"
#define STEPS "3"

static la_test_agent_t ta;
static int stack_up;
static char src[600], bindir[600], exdir[700];

/* ------------------------------------------- the decoder, record by record */

/* Encodes x with spec (quantum q) and checks la_client_decode_trace gives
 * la_trace_decode's bits; returns the encoder's result for more checks. */
static size_t seen_lines, seen_verbatim, seen_exceptions;
static uint64_t seen_quantized;

/* Encodes x with spec (quantum q) and checks la_client_decode_trace gives
 * la_trace_decode's bits; counts the record kinds the encoding holds. */
static void roundtrip(const double *x, size_t n, const char *spec, double q) {
  la_compact_params_t p;
  la_compact_result_t r = {0};
  assert_int_equal(la_compact_spec_parse(spec, &p, NULL, 0), 0);
  p.quantum = q;
  assert_int_equal(la_compact(x, n, &p, &r), 0);
  la_trace_t *t = NULL;
  assert_int_equal(la_trace_open(r.bytes, r.len, &t, NULL, 0), 0);
  double *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
  assert_int_equal(la_trace_decode(t, 0, n, a), 0);
  char why[200] = "x";
  assert_int_equal(la_client_decode_trace(r.bytes, r.len, b, n, why, 200), 0);
  assert_string_equal(why, "");
  assert_memory_equal(a, b, n * sizeof *a);
  for (size_t i = 0; i < la_trace_segment_count(t); i++) {
    la_trace_segment_t g;
    assert_int_equal(la_trace_segment(t, i, &g), 0);
    if (g.kind == LA_SEG_LINE) seen_lines++;
    if (g.kind == LA_SEG_VERBATIM) seen_verbatim++;
    seen_exceptions += g.exceptions;
  }
  seen_quantized += r.quantized;
  la_trace_close(t);
  la_compact_result_free(&r);
  free(a);
  free(b);
}

static void test_decode_record_kinds(void **state) {
  enum { N = 3000 };
  double *x = malloc(N * sizeof *x);
  static const char *const lossy[] = {"polyline:cv=0.05",
                                      "polyline:cv=0.001,connected",
                                      "polyline:cv=0.01,no-outliers",
                                      "maxerr:eps=0.01,relative",
                                      "maxerr:eps=5",
                                      NULL};
  /* lines with exceptions (spikes) and verbatim runs (noise) */
  for (int k = 0; k < LA_SYNTH_KINDS; k++) {
    assert_int_equal(la_compact_synth(k, N, 7 + (uint64_t)k, x), 0);
    for (int i = 0; lossy[i]; i++) roundtrip(x, N, lossy[i], 0);
    roundtrip(x, N, "lossless", 0); /* integer deltas or XOR */
  }
  assert_true(seen_lines > 0 && seen_verbatim > 0 && seen_exceptions > 0);
  /* quantized runs: rough whole multiples of a timer step */
  uint64_t s = 11;
  for (int i = 0; i < N; i++)
    x[i] = 0.375 * (double)(1000 + la_compact_rand(&s) % 900);
  roundtrip(x, N, "polyline:cv=0.01", 0.375);
  assert_true(seen_quantized > 0);
  for (int i = 0; i < N; i++) x[i] = 0.1 * i + 1e-7 * (i % 3); /* XOR */
  roundtrip(x, N, "lossless", 0);
  roundtrip(x, 0, "lossless", 0); /* no point at all */
  free(x);
}

static void test_decode_errors(void **state) {
  double x[64], y[64];
  for (int i = 0; i < 64; i++) x[i] = 100 + i % 7;
  la_compact_result_t r = {0};
  la_compact_params_t p;
  la_compact_params_default(&p);
  assert_int_equal(la_compact(x, 64, &p, &r), 0);
  char why[200];
  /* another point count, either way: LA_ERANGE, saying so */
  assert_int_equal(la_client_decode_trace(r.bytes, r.len, y, 63, why, 200),
                   LA_ERANGE);
  assert_non_null(strstr(why, "64"));
  double *big = malloc(65 * sizeof *big);
  assert_int_equal(la_client_decode_trace(r.bytes, r.len, big, 65, why, 200),
                   LA_ERANGE);
  assert_non_null(strstr(why, "not 65"));
  free(big);
  /* a flipped byte: the checksum */
  uint8_t *bad = malloc(r.len);
  memcpy(bad, r.bytes, r.len);
  bad[r.len / 2] ^= 0x40;
  assert_int_equal(la_client_decode_trace(bad, r.len, y, 64, why, 200),
                   LA_EPROTO);
  assert_true(why[0] != 0);
  /* cut short, and not a trace at all */
  int rc = la_client_decode_trace(r.bytes, r.len - 5, y, 64, NULL, 0);
  assert_true(rc == LA_ETRUNC || rc == LA_EPROTO);
  assert_int_equal(
      la_client_decode_trace((const uint8_t *)"hello, world!!!!!!!", 19, y, 64,
                             why, 200),
      LA_EPROTO);
  assert_int_equal(la_client_decode_trace(NULL, 5, y, 64, why, 200), LA_EINVAL);
  assert_int_equal(la_client_decode_trace(r.bytes, r.len, NULL, 64, why, 200),
                   LA_EINVAL);
  free(bad);
  la_compact_result_free(&r);
}

/* la_client_scale_trace (a member of a set stored by representatives, as
 * the store's reader rebuilds it) against open + decode + la_trace_scaled
 * on every spec: the same bytes and mode, values within 2^-30 relative of
 * the representative's times the scale; la_client_rep_open/_scale (the
 * representative decoded once) the same bytes and mode for two scales;
 * and their errors. */
static void test_scale_trace(void **state) {
  enum { N = 2000 };
  static const char *const specs[] = {"polyline:cv=0.05", "maxerr:eps=5",
                                      "polyline:cv=0.01,no-outliers",
                                      "lossless", NULL};
  double *x = malloc(N * sizeof *x), *d = malloc(N * sizeof *d),
         *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
  size_t cap = 9 * N + 64;
  uint8_t *out = malloc(cap);
  char why[200];
  assert_true(x && d && y && z && out);
  assert_int_equal(la_compact_synth(1, N, 5, x), 0);
  for (int i = 0; specs[i]; i++) {
    la_compact_params_t p;
    la_compact_result_t r = {0}, want = {0};
    assert_int_equal(la_compact_spec_parse(specs[i], &p, NULL, 0), 0);
    assert_int_equal(la_compact(x, N, &p, &r), 0);
    la_trace_t *t = NULL;
    assert_int_equal(la_trace_open(r.bytes, r.len, &t, NULL, 0), 0);
    assert_int_equal(la_trace_decode(t, 0, N, d), 0);
    assert_int_equal(la_trace_scaled(t, d, 0.6180339887, y, &want), 0);
    size_t len = cap;
    int mode = -1;
    why[0] = 'x';
    assert_int_equal(la_client_scale_trace(r.bytes, r.len, N, 0.6180339887,
                                           out, &len, &mode, why, sizeof why),
                     0);
    assert_string_equal(why, "");
    assert_int_equal(len, want.len);
    assert_memory_equal(out, want.bytes, len);
    assert_int_equal(mode, want.mode);
    assert_int_equal(la_client_decode_trace(out, len, z, N, why, sizeof why),
                     0);
    for (int k = 0; k < N; k++)
      assert_true(fabs(z[k] - 0.6180339887 * d[k]) <=
                  ldexp(fabs(0.6180339887 * d[k]), -30));
    /* the representative decoded once (la_client_rep_open): each member
     * of it the bytes la_client_scale_trace gives, a second scale too */
    la_client_rep_t *h = NULL;
    assert_int_equal(la_client_rep_open(r.bytes, r.len, N, &h, why,
                                        sizeof why),
                     0);
    for (int k = 0; k < 2; k++) {
      double sc = k ? 1.75 : 0.6180339887;
      uint8_t *o2 = malloc(cap);
      size_t l1 = cap, l2 = cap;
      int m1 = -1, m2 = -2;
      assert_non_null(o2);
      assert_int_equal(la_client_scale_trace(r.bytes, r.len, N, sc, out, &l1,
                                             &m1, why, sizeof why),
                       0);
      assert_int_equal(
          la_client_rep_scale(h, sc, o2, &l2, &m2, why, sizeof why), 0);
      assert_int_equal(l1, l2);
      assert_memory_equal(out, o2, l1);
      assert_int_equal(m1, m2);
      free(o2);
    }
    assert_int_equal(la_client_rep_scale(h, NAN, out, &len, NULL, why,
                                         sizeof why),
                     LA_EINVAL);
    la_client_rep_close(h);
    assert_int_equal(la_client_rep_open(r.bytes, r.len, N + 1, &h, why,
                                        sizeof why),
                     LA_ERANGE);
    assert_null(h);
    /* too small a buffer: the length needed */
    len = want.len - 1;
    assert_int_equal(la_client_scale_trace(r.bytes, r.len, N, 0.6180339887,
                                           out, &len, NULL, why, sizeof why),
                     LA_ERANGE);
    assert_int_equal(len, want.len);
    assert_non_null(strstr(why, "bytes needed"));
    la_trace_close(t);
    la_compact_result_free(&want);
    if (specs[i + 1]) {
      la_compact_result_free(&r);
      continue;
    }
    /* errors: another point count, a damaged encoding, no buffer, a
     * scale not finite */
    len = cap;
    assert_int_equal(la_client_scale_trace(r.bytes, r.len, N + 1, 2.0, out,
                                           &len, NULL, why, sizeof why),
                     LA_ERANGE);
    assert_non_null(strstr(why, "points"));
    r.bytes[r.len / 2] ^= 0x5a;
    assert_int_equal(la_client_scale_trace(r.bytes, r.len, N, 2.0, out, &len,
                                           NULL, why, sizeof why),
                     LA_EPROTO);
    assert_string_not_equal(why, "");
    assert_int_equal(la_client_scale_trace(NULL, 0, N, 2.0, out, &len, NULL,
                                           why, sizeof why),
                     LA_EINVAL);
    assert_int_equal(la_client_scale_trace(r.bytes, r.len, N, NAN, out, &len,
                                           NULL, why, sizeof why),
                     LA_EINVAL);
    assert_non_null(strstr(why, "not finite"));
    la_compact_result_free(&r);
  }
  free(x);
  free(d);
  free(y);
  free(z);
  free(out);
}


/* A pieced trace (docs/compaction.md, flag 0x40: one value per box of a
 * 10 x 8 x 3 grid, some cells in no box): la_client_decode_trace gives
 * the cells as la_trace_decode does, each box's value over its cells and
 * 0 elsewhere; another cell count is LA_ERANGE; la_client_scale_trace's
 * encoding decodes to the cells times the scale (lossless: exactly). */
static void test_decode_pieced(void **state) {
  (void)state;
  static const char *const specs[] = {"polyline:cv=0.05", "maxerr:eps=5",
                                      "lossless", NULL};
  la_piece_t p[40];
  la_pieces_t g = {0, 240, 10, 8, 3, p};
  la_test_boxes(&g, 2, 2, 3, 2); /* 36 boxes; x = 2, 5, 8, 9 in none */
  uint8_t *gb;
  size_t glen;
  assert_int_equal(la_pieces_encode(&g, &gb, &glen), 0);
  double v[40], cells[240], want[240], d[40], z2[240];
  uint8_t out[9 * 240 + 64];
  char why[200];
  for (uint64_t i = 0; i < g.count; i++)
    v[i] = 1000.0 + 40.0 * (double)i + (double)(i * 31 % 11);
  for (int i = 0; specs[i]; i++) {
    la_compact_params_t prm;
    la_compact_result_t in = {0}, r = {0};
    assert_int_equal(la_compact_spec_parse(specs[i], &prm, NULL, 0), 0);
    assert_int_equal(la_compact(v, g.count, &prm, &in), 0);
    assert_int_equal(la_compact_pieced(&in, v, gb, glen, &r), 0);
    la_trace_t *t = NULL;
    assert_int_equal(la_trace_open(in.bytes, in.len, &t, NULL, 0), 0);
    assert_int_equal(la_trace_decode(t, 0, g.count, d), 0);
    la_trace_close(t);
    la_pieces_expand(&g, d, want);
    assert_int_equal(la_client_decode_trace(r.bytes, r.len, cells, 240, why,
                                            sizeof why),
                     0);
    assert_memory_equal(cells, want, sizeof want);
    assert_true(cells[2] == 0 && cells[0] == d[0] / 4);
    assert_int_equal(la_client_decode_trace(r.bytes, r.len, cells, 239, why,
                                            sizeof why),
                     LA_ERANGE);
    size_t len = sizeof out;
    assert_int_equal(la_client_scale_trace(r.bytes, r.len, 240, 2.0, out,
                                           &len, NULL, why, sizeof why),
                     0);
    assert_int_equal(la_client_decode_trace(out, len, z2, 240, why,
                                            sizeof why),
                     0);
    if (prm.mode == LA_COMPACT_LOSSLESS)
      for (int k = 0; k < 240; k++) assert_true(z2[k] == 2.0 * want[k]);
    la_compact_result_free(&in);
    la_compact_result_free(&r);
  }
  free(gb);
}

/* --------------------------------------------------- the store, end to end */

static int group_setup(void **state) {
  char path[900];
  if (la_td_find_src("python/pyproject.toml", src, sizeof src) != 0)
    return -1;
  if (system("command -v mpiexec >/dev/null 2>&1") != 0 ||
      access(PY, X_OK) != 0 || la_td_find_bin("lactl", path, sizeof path) != 0)
    return 0; /* the store test skips */
  snprintf(bindir, sizeof bindir, "%.*s", (int)(strrchr(path, '/') - path),
           path);
  snprintf(exdir, sizeof exdir, "%s/../examples", bindir);
  snprintf(path, sizeof path, "%s/wavetoy", exdir);
  if (access(path, X_OK) != 0) return 0;
  snprintf(path, sizeof path, "%s/multiloop", exdir);
  if (access(path, X_OK) != 0) return 0;
  if (la_ta_start(&ta, NULL) != 0) return 0;
  stack_up = 1;
  return 0;
}

static int group_teardown(void **state) {
  if (stack_up) la_ta_free(&ta);
  return 0;
}

/* Runs example ex (wavetoy, multiloop) on 4 ranks for STEPS steps with the
 * compaction spec as application app_id and waits until its sets are
 * complete in the store. */
static void run_app(const char *ex, const char *spec, const char *app_id) {
  char prog[900], env_spec[160], env_id[160], out[8192];
  snprintf(prog, sizeof prog, "%s/%s", exdir, ex);
  snprintf(env_spec, sizeof env_spec, "LA_COMPACT=%s", spec);
  snprintf(env_id, sizeof env_id, "LA_APP_ID=%s", app_id);
  const char *argv[] = {"mpiexec", "-n",      "4",   prog, "--n",
                        "24",      "--steps", STEPS, NULL};
  const char *env[] = {env_spec, env_id, NULL};
  int rc = la_td_run(argv, env, 120000, out, sizeof out);
  if (rc != 0) fail_msg("%s exited %d:\n%s", ex, rc, out);
  char sql[300];
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM trace_sets WHERE app_id = '%s'"
           " AND closed = 1 AND complete = 1",
           app_id);
  if (la_ta_wait_sql(&ta, sql, atoi(STEPS), 30000) != 0)
    fail_msg("%s: %s complete sets never stored", app_id, STEPS);
}

static void test_python_store(void **state) {
  if (!stack_up) {
    printf(
        "skip: mpiexec, %s, the daemons, lactl, examples/wavetoy or "
        "examples/multiloop are "
        "missing\n",
        PY);
    skip();
  }
  run_app("wavetoy", "polyline:cv=0.05", "py-poly");
  run_app("wavetoy", "maxerr:eps=0.05,relative", "py-maxerr");
  run_app("wavetoy", "lossless", "py-lossless");
  run_app("multiloop", "polyline:cv=0.05", "py-multi");
  char work[700], cmd[4096], out[65536], lib[PATH_MAX], ex[PATH_MAX];
  snprintf(work, sizeof work, "%s/py", la_td_dir(ta.st.ga));
  /* libla_client.so of the normal build (the sanitized trees have none):
   * next to the examples, which every tree links to */
  assert_non_null(realpath(exdir, ex));
  snprintf(lib, sizeof lib, "%.*s/lib", (int)(strrchr(ex, '/') - ex), ex);
  snprintf(cmd, sizeof cmd, "%s/tests/python/check_pydata.py", src);
  const char *argv[] = {PY,
                        cmd,
                        "--db",
                        ta.st.db,
                        "--bin",
                        bindir,
                        "--lib",
                        lib,
                        "--src",
                        src,
                        "--work",
                        work,
                        "--apps",
                        "py-poly,py-maxerr,py-lossless",
                        "--channel-apps",
                        "py-multi",
                        NULL};
  int rc = la_td_run(argv, NULL, 240000, out, sizeof out);
  printf("%s", out);
  if (rc != 0) fail_msg("check_pydata.py exited %d", rc);
  assert_non_null(strstr(out, "check_pydata: all checks passed"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_record_kinds),
      cmocka_unit_test(test_decode_errors),
      cmocka_unit_test(test_scale_trace),
      cmocka_unit_test(test_decode_pieced),
      cmocka_unit_test(test_python_store),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
