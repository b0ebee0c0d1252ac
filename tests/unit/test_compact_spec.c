/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_spec.c: parameter specs (accepted, refused with the bad token
 * named, canonical form round trip, defaults) and `lactl compact` run as a
 * user would: on a text file, a raw f64 file, stdin-less bad input, --json,
 * --help (build/bin/lactl; the test is skipped when it is not built).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "la_compact.h"

static void test_defaults(void **state) {
  la_compact_params_t p;

  la_compact_params_default(&p);
  assert_int_equal(p.mode, LA_COMPACT_POLYLINE);
  assert_true(p.cv == 0.1 && p.outliers && !p.connected && !p.relative);
  p.mode = LA_COMPACT_DEFAULT;
  assert_int_equal(la_compact_effective_mode(&p), LA_COMPACT_POLYLINE);
  p.cv = 0;
  assert_int_equal(la_compact_effective_mode(&p), LA_COMPACT_LOSSLESS);
}

static void test_accepts(void **state) {
  static const char *const ok[] = {
      "polyline",
      "polyline:cv=0.05,connected",
      "maxerr:eps=0.5",
      "maxerr:eps=0.01,relative",
      "lossless",
      "polyline:no-outliers",
      "maxerr:epsilon=3,absolute,disjoint,outliers",
      "polyline:cv=0",
      "default:cv=1e-3"};
  la_compact_params_t p, q;
  char buf[96], why[200];
  size_t i;

  for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    assert_int_equal(la_compact_spec_parse(ok[i], &p, why, sizeof(why)), 0);
    /* the canonical form parses back to the same parameters */
    assert_true(la_compact_spec_format(&p, buf, sizeof(buf)) > 0);
    assert_int_equal(la_compact_spec_parse(buf, &q, why, sizeof(why)), 0);
    assert_int_equal(p.mode, q.mode);
    assert_true(p.mode == LA_COMPACT_LOSSLESS ||
                (p.cv == q.cv && p.epsilon == q.epsilon &&
                 p.relative == q.relative && p.connected == q.connected &&
                 p.outliers == q.outliers));
  }
  la_compact_spec_parse("maxerr:eps=0.01,relative", &p, why, sizeof(why));
  assert_true(p.mode == LA_COMPACT_MAXERR && p.epsilon == 0.01 && p.relative);
  la_compact_spec_format(&p, buf, sizeof(buf));
  assert_string_equal(buf, "maxerr:eps=0.01,relative");
  assert_int_equal(la_compact_spec_format(&p, buf, 5), LA_ELIMIT);
}

static void test_refuses_naming_token(void **state) {
  static const char *const bad[][2] = {{"polyfit", "polyfit"},
                                       {"polyline:cv=abc", "cv=abc"},
                                       {"polyline:cv=-1", "cv=-1"},
                                       {"polyline:eps=2", "eps=2"},
                                       {"maxerr", "eps"},
                                       {"maxerr:eps=1,fast", "fast"},
                                       {"polyline:relative", "relative"},
                                       {"lossless:connected", "connected"},
                                       {"polyline:cv=0.1,", "empty"},
                                       {"maxerr:eps=inf", "eps=inf"},
                                       {"polyline:cv=nan", "cv=nan"},
                                       {"", "mode"}};
  la_compact_params_t p;
  char why[200];
  size_t i;

  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    why[0] = 0;
    assert_int_equal(la_compact_spec_parse(bad[i][0], &p, why, sizeof(why)),
                     LA_EINVAL);
    if (strstr(why, bad[i][1]) == NULL)
      fail_msg("'%s': reason '%s' does not name '%s'", bad[i][0], why,
               bad[i][1]);
  }
  assert_int_equal(la_compact_spec_parse(NULL, &p, why, sizeof(why)),
                   LA_EINVAL);
}

/* Every value the parser accepts, the formatter writes so that it parses
 * back to the same parameters: subnormal ones too (strtod() reports ERANGE
 * for them, and they used to be refused once formatted); a nonzero number
 * below the smallest double is refused at parse time, naming its token. */
static void test_subnormal_values_round_trip(void **state) {
  static const char *const ok[] = {
      "maxerr:eps=5e-323", "maxerr:eps=4.9406564584124654e-324",
      "maxerr:eps=1e-310,relative", "polyline:cv=3e-320",
      "maxerr:eps=2.2250738585072014e-308"};
  static const double vals[] = {0x1p-1074, 0x1.8p-1060, 0x1.fffffffffffffp-1023,
                                0x1p-1022, 5e-323};
  la_compact_params_t p, q;
  char buf[96], why[200];
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    if (la_compact_spec_parse(ok[i], &p, why, sizeof(why)) != 0)
      fail_msg("'%s' refused: %s", ok[i], why);
    assert_true(p.cv > 0 && (p.mode == LA_COMPACT_POLYLINE || p.epsilon > 0));
    assert_true(la_compact_spec_format(&p, buf, sizeof(buf)) > 0);
    if (la_compact_spec_parse(buf, &q, why, sizeof(why)) != 0)
      fail_msg("'%s' formatted as '%s', refused: %s", ok[i], buf, why);
    assert_true(p.mode == q.mode && p.cv == q.cv && p.epsilon == q.epsilon &&
                p.relative == q.relative);
  }
  for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
    la_compact_params_default(&p);
    p.mode = LA_COMPACT_MAXERR;
    p.epsilon = vals[i];
    assert_true(la_compact_spec_format(&p, buf, sizeof(buf)) > 0);
    if (la_compact_spec_parse(buf, &q, why, sizeof(why)) != 0)
      fail_msg("eps %a formatted as '%s', refused: %s", vals[i], buf, why);
    assert_true(q.epsilon == vals[i]);
  }
  assert_int_equal(
      la_compact_spec_parse("maxerr:eps=1e-400", &p, why, sizeof(why)),
      LA_EINVAL);
  assert_non_null(strstr(why, "eps=1e-400"));
  assert_non_null(strstr(why, "smallest"));
}

/* Runs lactl with args; returns its exit status, output in out. */
static int lactl(char *const args[], char *out, size_t cap) {
  int fd[2], st;
  pid_t pid;
  ssize_t r;
  size_t len = 0;

  assert_int_equal(pipe(fd), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[0]);
    execv("build/bin/lactl", args);
    _exit(127);
  }
  close(fd[1]);
  while ((r = read(fd[0], out + len, cap - 1 - len)) > 0) {
    len += (size_t)r;
    if (len + 1 == cap)
      len = cap / 2; /* keep reading: the child must not get SIGPIPE */
  }
  out[len] = 0;
  close(fd[0]);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_lactl(void **state) {
  char text[] = "/tmp/la_test_compact_XXXXXX", bin[sizeof(text)];
  char out[1 << 16];
  double x[5000];
  FILE *f;
  int i, fd;

  if (access("build/bin/lactl", X_OK) != 0) skip();
  la_compact_synth(LA_SYNTH_STEPS, 5000, 3, x);
  fd = mkstemp(text);
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  fprintf(f, "# per-element costs\n");
  for (i = 0; i < 5000; i++) fprintf(f, "%.17g\n", x[i]);
  fclose(f);
  memcpy(bin, "/tmp/la_test_compact_XXXXXX", sizeof(bin));
  fd = mkstemp(bin); /* its own unique name, created exclusively */
  assert_true(fd >= 0);
  f = fdopen(fd, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(x, 8, 5000, f), 5000); /* little-endian host */
  fclose(f);
  {
    char *a[] = {"lactl", "compact", text, NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    if (!strstr(out, "5000 values, text"))
      fail_msg("lactl compact %s printed:\n%s", text, out);
    assert_non_null(strstr(out, "bits/value"));
  }
  {
    char *a[] = {"lactl", "compact", "--mode",     "maxerr", "--eps",
                 "20",    "--json",  "--segments", bin,      NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "\"format\": \"f64\""));
    assert_non_null(strstr(out, "\"spec\": \"maxerr:eps=20\""));
    assert_non_null(strstr(out, "\"segment_list\""));
  }
  {
    char *a[] = {"lactl", "compact", "--spec", "maxerr:eps=x", text, NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "eps=x"));
  }
  f = fopen(text, "a");
  fprintf(f, "12\nnot-a-number\n");
  fclose(f);
  {
    char *a[] = {"lactl", "compact", text, NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 2);
    assert_non_null(strstr(out, ":5003: not a number"));
  }
  {
    char *a[] = {"lactl", "compact", "/nonexistent/file", NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 2);
  }
  {
    char *a[] = {"lactl", "compact", "--help", NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "usage: lactl compact"));
  }
  {
    char *a[] = {"lactl", "frobnicate", NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 2);
  }
  unlink(text);
  unlink(bin);
}

/* Writes len bytes into a fresh temporary file; its name into path. */
static void tmp_file(char *path, const void *b, size_t len) {
  strcpy(path, "/tmp/la_test_compact_XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, b, len), (ssize_t)len);
  close(fd);
}

/* lactl compact's input rules and tuning options: a BOM or a non-ASCII
 * comment keeps a text file text, an overflowing number names its line,
 * options the mode ignores are warned about, ε as a share of the range,
 * --sweep and --decoded. */
static void test_lactl_input_rules(void **state) {
  char out[1 << 16], p[64];
  static const char bom[] =
      "\xEF\xBB\xBF# co\xC3\xBBt par \xC3\xA9l\xC3\xA9ment\n1\n2\n3\n4.5\n";
  if (access("build/bin/lactl", X_OK) != 0) skip();
  tmp_file(p, bom, sizeof bom - 1);
  {
    char *a[] = {"lactl", "compact", "--reps", "1", p, NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    if (!strstr(out, "(4 values, text)")) fail_msg("BOM file read as: %s", out);
  }
  unlink(p);
  tmp_file(p, "1\n2\n\n1e999\n", 11);
  {
    char *a[] = {"lactl", "compact", p, NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 2);
    if (!strstr(out, ":4: '1e999' is out of the range of a double"))
      fail_msg("overflow reported as: %s", out);
  }
  unlink(p);
  {
    char *a[] = {"lactl", "compact",     "--eps",     "3", "--reps",
                 "1",     "--synthetic", "mesh:1000", NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "warning: --eps applies to maxerr only"));
  }
  {
    char *a[] = {"lactl",  "compact", "--mode",      "maxerr",
                 "--eps",  "1%range", "--synthetic", "steps:1000",
                 "--json", "--reps",  "1",           NULL};
    double x[1000], lo = 1e300, hi = -1e300, eps;
    la_compact_synth(LA_SYNTH_STEPS, 1000, 1, x);
    for (int i = 0; i < 1000; i++) {
      if (x[i] < lo) lo = x[i];
      if (x[i] > hi) hi = x[i];
    }
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    char *s = strstr(out, "\"spec\": \"maxerr:eps=");
    assert_non_null(s);
    eps = strtod(s + strlen("\"spec\": \"maxerr:eps="), NULL);
    assert_true(fabs(eps - (hi - lo) / 100) <= 1e-3 * (hi - lo) / 100);
    s = strstr(out, "\"max_abs_error\": ");
    assert_non_null(s);
    assert_true(strtod(s + 17, NULL) <= eps);
  }
  {
    char *a[] = {"lactl",       "compact",   "--sweep", "cv=0.01,0.1,0.3",
                 "--synthetic", "mesh:5000", NULL};
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    assert_non_null(strstr(out, "\n0.01 "));
    assert_non_null(strstr(out, "\n0.1 "));
    assert_non_null(strstr(out, "\n0.3 "));
  }
  {
    char *a[] = {"lactl",       "compact",   "--decoded", "-",
                 "--spec",      "lossless",  "--reps",    "1",
                 "--synthetic", "steps:4:7", NULL};
    double x[4];
    char want[256];
    int n = 0;
    la_compact_synth(LA_SYNTH_STEPS, 4, 7, x);
    for (int i = 0; i < 4; i++)
      n += snprintf(want + n, sizeof want - (size_t)n, "%.17g\n", x[i]);
    assert_int_equal(lactl(a, out, sizeof(out)), 0);
    if (!strstr(out, want)) fail_msg("decoded: %s, want %s", out, want);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_accepts),
      cmocka_unit_test(test_refuses_naming_token),
      cmocka_unit_test(test_subnormal_values_round_trip),
      cmocka_unit_test(test_lactl),
      cmocka_unit_test(test_lactl_input_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
