/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lactl.c: tests of lactl's Trace-Set subcommands (apps, cycles, show,
 * export, plot) as a user runs them: build/bin/lactl is run with fork/exec
 * and its stdout, stderr and exit status checked.
 *
 * The group setup writes a store with store/store.h directly:
 *   heat-42  4 ranks of 200, 250, 300, 350 elements, all ended; cycle 10
 *            complete, cycle 20 closed partial (rank 2 missing). Ranks 0-2
 *            compacted with polyline cv=0.05, rank 3 lossless.
 *   wave-7   2 ranks, running; cycle 5 open (only rank 0 arrived).
 *   xrobust-3 2 ranks of 100 elements, lossless, with robust weights and
 *            interference (docs/fidelity.md): rank 0 measures 100 per
 *            element but 1100 on 10 elements (robust 100 everywhere), rank
 *            1 measures 200 everywhere (robust the same); timer resolution
 *            50 ns on both; cycle 1 complete.
 * The raw series are kept, so exported values are checked against the
 * compaction bound (the achieved max |error| of each trace; lossless
 * exact), totals against the exact sums, METIS weights against their
 * rules, SVGs parsed as XML (python3's minidom) and JSON with json.load.
 * The last test starts a real la-globalagent on ephemeral ports over the
 * same database and checks that --global gives byte-identical output to
 * --db. Everything created goes into one mkdtemp directory, removed at the
 * end (set LACTL_TEST_KEEP=1 to keep it and look at the files).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sqlite3.h>

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_test_daemon.h"
#include "la_test_msg.h"
#include "la_test_series.h"
#include "la_test_stack.h"
#include "la_trace_msg.h"
#include "store.h"

#define NP 4
#define CYC_A 10
#define CYC_B 20

static const uint64_t NEL[NP] = {200, 250, 300, 350};

typedef struct {
  char dir[64], db[128], lactl[512];
  double *raw[2][NP];   /* [cycle 10, 20][rank] */
  double maxerr[2][NP]; /* achieved max |error| */
  double sum[2][NP];    /* exact sums */
  int have_python;
} fx_t;

static fx_t *g;

/* ------------------------------------------------------------- helpers */

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  return remove(path);
}

/* Element i of rank r in cycle c: plateaus of 50 elements, a rank-level
 * load (rank 1 the heaviest), and 1% deterministic noise; whole numbers on
 * rank 3 (lossless). */
static double value(uint32_t r, uint64_t c, uint64_t i) {
  static const double load[NP] = {1000, 1800, 900, 1100};
  uint64_t h = (i + 1) * 2654435761u ^ (r + 7) * 40503u ^ c * 977u;
  h = (h ^ (h >> 13)) * 0x5bd1e995u;
  double noise = ((double)(h % 2001) - 1000) / 1000 * 0.01;
  double v =
      (load[r] + 10 * (double)c + 150 * (double)((i / 50) % 3)) * (1 + noise);
  return r == 3 ? floor(v) : v;
}

static void put_trace(la_store_t *s, const char *app, uint32_t r, uint64_t c,
                      const double *x, uint64_t n, int lossless, double *maxerr,
                      double *sum) {
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.cv = 0.05;
  if (lossless) p.mode = LA_COMPACT_LOSSLESS;
  la_compact_result_t res;
  assert_int_equal(la_compact(x, n, &p, &res), 0);
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  La__FitError er = LA__FIT_ERROR__INIT;
  la_trace_msg_fill(&t, &st, &er, &res);
  la_test_trace_id(&t, c * 100 + r + 1, app, r, c, n);
  t.has_t_xfer_ns = 1;
  t.t_xfer_ns = 1700000000000000000ull + c;
  int was_new = 0;
  assert_int_equal(la_store_trace(s, &t, &was_new), 0);
  assert_int_equal(was_new, 1);
  if (maxerr) *maxerr = res.error.max_abs;
  if (sum) *sum = res.stats.sum;
  la_compact_result_free(&res);
}

static void rank_start(la_store_t *s, const char *app, const char *name,
                       uint32_t r, uint32_t np, uint64_t n) {
  La__RankStart m = la_test_rank_start(app, name, r, np, n);
  m.seq = r + 1;
  assert_int_equal(la_store_rank_start(s, &m, NULL), 0);
}

/* Rank r of xrobust-3 (see the top): a lossless trace of the measured
 * values with the robust ones and the interference figures. */
static void put_robust(la_store_t *s, uint32_t r) {
  double m[100], rb[100];
  for (int i = 0; i < 100; i++) {
    rb[i] = r == 0 ? 100 : 200;
    m[i] = r == 0 && i % 10 == 3 ? 1100 : rb[i];
  }
  la_test_robust_t rt;
  assert_int_equal(
      la_test_robust_make(&rt, "xrobust-3", r, 500 + r, 1, m, rb, 100), 0);
  rt.t.has_flagged = 1;
  rt.t.flagged = r == 0 ? 10 : 0;
  rt.t.has_flagged_time = 1;
  rt.t.flagged_time = r == 0 ? 11000 : 0;
  assert_int_equal(la_store_trace(s, &rt.t, NULL), 0);
  la_test_robust_free(&rt);
}

static void rank_end(la_store_t *s, const char *app, uint32_t r) {
  La__RankEnd m = LA__RANK_END__INIT;
  m.seq = 90 + r;
  m.app_id = (char *)app;
  m.rank = r;
  m.reason = "finalize";
  assert_int_equal(la_store_rank_end(s, &m, NULL), 0);
}

static int setup_group(void **state) {
  g = calloc(1, sizeof *g);
  assert_non_null(g);
  strcpy(g->dir, "/tmp/la_test_lactl.XXXXXX");
  assert_non_null(mkdtemp(g->dir));
  snprintf(g->db, sizeof g->db, "%s/la.db", g->dir);
  if (la_td_find_bin("lactl", g->lactl, sizeof g->lactl) != 0) {
    fprintf(stderr, "lactl not found\n");
    return -1;
  }
  g->have_python = system(
                       "python3 -c 'import json, xml.dom.minidom' "
                       ">/dev/null 2>&1") == 0;
  la_store_t *s;
  char why[256];
  assert_int_equal(la_store_open(g->db, 0, &s, why, sizeof why), 0);
  assert_int_equal(la_store_begin(s), 0);
  for (uint32_t r = 0; r < NP; r++)
    rank_start(s, "heat-42", "heat", r, NP, NEL[r]);
  uint64_t cyc[2] = {CYC_A, CYC_B};
  for (int k = 0; k < 2; k++)
    for (uint32_t r = 0; r < NP; r++) {
      g->raw[k][r] = malloc(NEL[r] * sizeof(double));
      for (uint64_t i = 0; i < NEL[r]; i++)
        g->raw[k][r][i] = value(r, cyc[k], i);
      if (k == 1 && r == 2) continue; /* its LocalAgent died */
      put_trace(s, "heat-42", r, cyc[k], g->raw[k][r], NEL[r], r == 3,
                &g->maxerr[k][r], &g->sum[k][r]);
    }
  assert_int_equal(la_store_set_closed(s, "heat-42", CYC_A, 1, NULL, 0,
                                       1700000000100000000ull),
                   0);
  uint32_t miss = 2;
  assert_int_equal(la_store_set_closed(s, "heat-42", CYC_B, 0, &miss, 1,
                                       1700000000200000000ull),
                   0);
  for (uint32_t r = 0; r < NP; r++) rank_end(s, "heat-42", r);
  rank_start(s, "wave-7", "wave", 0, 2, 64);
  rank_start(s, "wave-7", "wave", 1, 2, 64);
  double w[64];
  for (int i = 0; i < 64; i++) w[i] = 5 + i % 8;
  put_trace(s, "wave-7", 0, 5, w, 64, 0, NULL, NULL);
  for (uint32_t r = 0; r < 2; r++) {
    La__RankStart m = la_test_rank_start("xrobust-3", NULL, r, 2, 100);
    m.seq = 400 + r;
    m.has_timer_res_ns = 1;
    m.timer_res_ns = 50;
    m.interference = r == 0 ? "on" : "off (no perf events)";
    assert_int_equal(la_store_rank_start(s, &m, NULL), 0);
    put_robust(s, r);
  }
  assert_int_equal(la_store_set_closed(s, "xrobust-3", 1, 1, NULL, 0,
                                       1700000000300000000ull),
                   0);
  assert_int_equal(la_store_commit(s), 0);
  la_store_close(s);

  /* LA_DUMP_RAW layout for rank 1, cycle 10 (little-endian doubles). */
  char path[256];
  snprintf(path, sizeof path, "%s/heat-42.r1.c10.f64", g->dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  for (uint64_t i = 0; i < NEL[1]; i++) {
    uint64_t u;
    unsigned char b[8];
    memcpy(&u, &g->raw[0][1][i], 8);
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(u >> (8 * k));
    fwrite(b, 1, 8, f);
  }
  fclose(f);
  *state = g;
  return 0;
}

static int teardown_group(void **state) {
  if (!g) return 0;
  for (int k = 0; k < 2; k++)
    for (int r = 0; r < NP; r++) free(g->raw[k][r]);
  if (getenv("LACTL_TEST_KEEP"))
    fprintf(stderr, "kept %s\n", g->dir);
  else
    nftw(g->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(g);
  g = NULL;
  return 0;
}

/* Reads a whole file (NUL-terminated, malloc'ed). */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return strdup("");
  size_t cap = 4096, n = 0, r;
  char *b = malloc(cap + 1);
  while ((r = fread(b + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) b = realloc(b, (cap *= 2) + 1);
  }
  fclose(f);
  b[n] = 0;
  return b;
}

/* Runs lactl with the NULL-terminated args (after "lactl"), stdout into
 * *out and stderr into *err (malloc'ed), within 20 s. Returns its exit
 * status, or -1. */
static int lactl_v(char **out, char **err, va_list ap) {
  const char *argv[40];
  int n = 0;
  argv[n++] = g->lactl;
  const char *a;
  while ((a = va_arg(ap, const char *)) && n < 39) argv[n++] = a;
  argv[n] = NULL;
  char po[128], pe[128];
  snprintf(po, sizeof po, "%s/stdout", g->dir);
  snprintf(pe, sizeof pe, "%s/stderr", g->dir);
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fo < 0 || fe < 0) _exit(126);
    dup2(fo, 1);
    dup2(fe, 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  int st = -1, rc = -1;
  long long t0 = la_td_now_ms();
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (la_td_now_ms() - t0 > 20000) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    usleep(2000);
  }
  if (WIFEXITED(st)) rc = WEXITSTATUS(st);
  char *o = slurp(po), *e = slurp(pe);
  if (out)
    *out = o;
  else
    free(o);
  if (err)
    *err = e;
  else
    free(e);
  return rc;
}

static int lactl(char **out, char **err, ...) {
  va_list ap;
  va_start(ap, err);
  int rc = lactl_v(out, err, ap);
  va_end(ap);
  return rc;
}

/* Runs lactl with the NULL-terminated arguments after `word`; asserts it
 * exits with `code` and says `word` on stderr. */
static void lactl_fails(int code, const char *word, ...) {
  char *o, *e;
  va_list ap;
  va_start(ap, word);
  int rc = lactl_v(&o, &e, ap);
  va_end(ap);
  if (rc < 0) fail_msg("lactl did not finish within 20 s");
  if (rc != code || !strstr(e, word))
    fail_msg("lactl exited %d, expected %d with '%s' on stderr; stderr: %s", rc,
             code, word, e);
  free(o), free(e);
}

/* Writes text into DIR/name; returns the path (static buffer). */
static const char *save(const char *name, const char *text) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", g->dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* Runs a python3 check on file: `d` is json.load of it (kind "json") or
 * the minidom document (kind "xml"); expr must be true. Returns 0, or 1
 * when python3 is missing (the check is skipped). */
static int py_check(const char *file, const char *kind, const char *expr) {
  if (!g->have_python) {
    printf("skip: python3 not found, %s check left out\n", kind);
    return 1;
  }
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json, sys, xml.dom.minidom as M\n"
           "d = %s(sys.argv[1])\n"
           "ok = (%s)\n"
           "sys.exit(0 if ok else 3)' '%s'",
           strcmp(kind, "json") ? "M.parse" : "(lambda p: json.load(open(p)))",
           expr, file);
  int rc = system(cmd);
  if (rc != 0) fail_msg("python check failed (%d): %s on %s", rc, expr, file);
  return 0;
}

/* Checks that the SVG's text fits its picture and the legend stays clear
 * of the note on clipped values (tests/python/check_svg_layout.py). */
static void svg_layout(const char *file) {
  if (!g->have_python) return;
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 tests/python/check_svg_layout.py '%s' --need-note",
           file);
  int rc = system(cmd);
  if (rc != 0) fail_msg("%s: the SVG's layout does not fit (%d)", file, rc);
}

/* Runs lactl with the NULL-terminated words c plus o1 o2. */
static int run_with(char **out, char **err, const char *const *c,
                    const char *o1, const char *o2) {
  const char *v[10] = {NULL};
  int n = 0;
  while (c[n] && n < 7) v[n] = c[n], n++;
  v[n++] = o1;
  v[n++] = o2;
  return lactl(out, err, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
               NULL);
}

/* ---------------------------------------------------------------- tests */

static void test_help_and_usage(void **state) {
  const char *cmds[] = {"apps", "cycles", "show", "export", "plot"};
  for (size_t i = 0; i < 5; i++) {
    char *o, *e;
    assert_int_equal(lactl(&o, &e, cmds[i], "--help", NULL), 0);
    assert_non_null(strstr(o, "usage: lactl"));
    assert_non_null(strstr(o, cmds[i]));
    free(o);
    free(e);
  }
  char *o, *e;
  lactl_fails(2, "which application", "show", NULL);
  lactl_fails(2, "--bogus", "apps", "--bogus", NULL);
  assert_int_equal(lactl(&o, &e, "export", "heat-42", "--format", "xml", "--db",
                         g->db, NULL),
                   2);
  free(o), free(e);
  lactl_fails(2, "one cycle", "export", "heat-42", "10:20", "--format", "metis",
              "--db", g->db, NULL);
  assert_int_equal(lactl(&o, &e, "plot", "heat-42", "--db", g->db, NULL), 2);
  free(o), free(e);
  /* the command list names the new commands, export with every format
   * and plot with every picture its --help offers */
  assert_int_equal(lactl(&o, &e, "--help", NULL), 0);
  assert_non_null(strstr(o, "export"));
  assert_non_null(strstr(o, "plot"));
  const char *ex = strstr(o, "\n  export ");
  assert_non_null(ex);
  size_t ex_len = strcspn(ex + 1, "\n");
  static const char *const formats[] = {"CSV", "JSON", "METIS", "NumPy",
                                        "VTK"};
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    const char *f = strstr(ex, formats[i]);
    if (!f || f > ex + 1 + ex_len)
      fail_msg("lactl --help: export's line does not name %s", formats[i]);
  }
  const char *pl = strstr(o, "\n  plot ");
  assert_non_null(pl);
  const char *grid = strstr(pl, "grid");
  assert_true(grid && grid < pl + 1 + strcspn(pl + 1, "\n"));
  free(o), free(e);
}

static void test_errors(void **state) {
  char *o, *e, path[200];
  /* not found: exit 1, naming the problem */
  lactl_fails(1, "no application 'nope'", "show", "nope", "--db", g->db, NULL);
  /* a program's name where the id belongs: its applications named */
  lactl_fails(1, "no application 'heat': that is a program's name", "show",
              "heat", "--db", g->db, NULL);
  lactl_fails(1, "named by its id, e.g. heat-42", "export", "heat", "--db",
              g->db, NULL);
  lactl_fails(1, "no cycle 99", "show", "heat-42", "99", "--db", g->db, NULL);
  lactl_fails(1, "no application", "cycles", "nope", "--db", g->db, NULL);
  snprintf(path, sizeof path, "%s/missing.db", g->dir);
  lactl_fails(1, "No such file", "apps", "--db", path, NULL);
  assert_int_equal(access(path, F_OK), -1); /* and it was not created */
  assert_int_equal(lactl(&o, &e, "apps", "--db", save("junk.db", "junk"), NULL),
                   1);
  free(o), free(e);
  /* unreachable GlobalAgent */
  lactl_fails(1, "cannot reach the GlobalAgent at 127.0.0.1:1", "apps",
              "--global", "127.0.0.1:1", NULL);
  lactl_fails(2, "not HOST:PORT", "apps", "--global", "no port", NULL);
  /* status names the daemon it looked for and how to point at it */
  lactl_fails(1, "cannot reach the LocalAgent at 127.0.0.1:1", "status",
              "--agent", "127.0.0.1:1", NULL);
  lactl_fails(1, "is la-localagent running? --agent HOST:PORT", "status",
              "--agent", "127.0.0.1:1", NULL);
  lactl_fails(1, "is la-globalagent running? --global HOST:PORT", "status",
              "--global", "127.0.0.1:1", NULL);
  /* a missing rank cannot be plotted */
  lactl_fails(1, "rank 2 is missing", "plot", "heat-42", "20", "--rank", "2",
              "--db", g->db, NULL);
}

/* Usage errors name what is wrong; a failed export writes nothing. */
static void test_cli_errors(void **state) {
  char *o, *e;
  lactl_fails(2, "option --global needs a value", "show", "heat-42", "--global",
              NULL);
  lactl_fails(2, "option -o needs a value", "export", "heat-42", "--db", g->db,
              "-o", NULL);
  lactl_fails(2, "option --db needs a value", "cycles", "heat-42", "--db",
              NULL);
  lactl_fails(2, "unknown option '--app'", "show", "--app", "heat-42", NULL);
  /* a typo is answered with the option meant, a stranger with none */
  lactl_fails(2, "unknown option '--chanel' (did you mean '--channel'?)",
              "show", "heat-42", "--chanel", "x", "--db", g->db, NULL);
  lactl_fails(2, "unknown option '--formt=csv' (did you mean '--format'?)",
              "export", "heat-42", "--formt=csv", "--db", g->db, NULL);
  lactl_fails(2, "unknown option '--zzz' (try", "show", "heat-42", "--zzz",
              "--db", g->db, NULL);
  lactl_fails(2, "--timeout '0' is not a number of seconds", "apps",
              "--timeout", "0", NULL);
  lactl_fails(2, "--timeout '5s' is not a number of seconds", "show",
              "heat-42", "--timeout", "5s", NULL);
  /* both sources named */
  assert_int_equal(
      lactl(&o, &e, "apps", "--db", g->db, "--global", "127.0.0.1:1", NULL), 2);
  assert_non_null(strstr(e, "--db and --global"));
  assert_string_equal(o, "");
  free(o), free(e);
  /* a host that does not resolve is named, with the resolver's words */
  lactl_fails(1, "cannot resolve host 'no-such-host.invalid'", "apps",
              "--global", "no-such-host.invalid:7463", NULL);
  /* export of an unknown application: exit 1, not even a CSV header */
  assert_int_equal(lactl(&o, &e, "export", "nope", "--db", g->db, NULL), 1);
  assert_string_equal(o, "");
  assert_non_null(strstr(e, "nope"));
  free(o), free(e);
  assert_int_equal(lactl(&o, &e, "export", "heat-42", "99", "--format", "json",
                         "--db", g->db, NULL),
                   1);
  assert_string_equal(o, "");
  free(o), free(e);
  /* stderr is not a terminal here: no progress lines */
  assert_int_equal(lactl(&o, &e, "export", "heat-42", ":", "--db", g->db, "-o",
                         save("all.csv", ""), NULL),
                   0);
  assert_null(strstr(e, "cycle 1 of"));
  assert_null(strchr(e, '\r'));
  free(o), free(e);
}

static void test_apps(void **state) {
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "apps", "--db", g->db, NULL), 0);
  assert_non_null(strstr(o, "APP"));
  assert_non_null(strstr(o, "heat-42"));
  assert_non_null(strstr(o, "time (ns)"));
  assert_non_null(strstr(o, "ended"));
  assert_non_null(strstr(o, "wave-7"));
  assert_non_null(strstr(o, "running"));
  free(o), free(e);
  assert_int_equal(lactl(&o, &e, "apps", "--db", g->db, "--json", NULL), 0);
  py_check(save("apps.json", o), "json",
           "[a[\"id\"] for a in d[\"apps\"]] == [\"heat-42\", \"wave-7\", "
           "\"xrobust-3\"] and "
           "d[\"apps\"][0][\"ranks\"] == 4 and "
           "d[\"apps\"][0][\"elements\"] == 1100 and "
           "d[\"apps\"][0][\"cycles\"] == 2 and "
           "d[\"apps\"][0][\"complete\"] == 1 and "
           "d[\"apps\"][0][\"partial\"] == 1 and "
           "d[\"apps\"][0][\"state\"] == \"ended\" and "
           "d[\"apps\"][1][\"state\"] == \"running\" and "
           "d[\"apps\"][0][\"name\"] == \"heat\"");
  free(o), free(e);
}

/* lactl apps --job: a job's applications found by the job's id, libla's
 * random part left out; an exact id wins; none found is exit 1. A store of
 * its own (jobs.db) with ids as libla derives them. */
static void test_apps_job(void **state) {
  char db[256], why[400];
  snprintf(db, sizeof db, "%s/jobs.db", g->dir);
  la_store_t *s;
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  assert_int_equal(la_store_begin(s), 0);
  static const char *ids[] = {
      "wavetoy.slurm1234.0.k3x9q2ab", "wavetoy.slurm1234.1.m4p7z2aa",
      "wavetoy.slurm12345.0.aaaabbbb", "heat.slurm1234.0",
      "wavetoy.h4711-1333.node01.zz23abcd", "run7"};
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
    rank_start(s, ids[i], "x", 0, 1, 10);
  assert_int_equal(la_store_commit(s), 0);
  la_store_close(s);
  struct {
    const char *job, *json_ids;
  } cases[] = {
      /* the id without its random part */
      {"wavetoy.slurm1234.0", "[\"wavetoy.slurm1234.0.k3x9q2ab\"]"},
      /* a prefix ending at a dot: both steps, not job 12345 */
      {"wavetoy.slurm1234",
       "[\"wavetoy.slurm1234.0.k3x9q2ab\", \"wavetoy.slurm1234.1.m4p7z2aa\"]"},
      /* a Slurm job number: its applications of any program */
      {"1234",
       "[\"heat.slurm1234.0\", \"wavetoy.slurm1234.0.k3x9q2ab\", "
       "\"wavetoy.slurm1234.1.m4p7z2aa\"]"},
      {"12345", "[\"wavetoy.slurm12345.0.aaaabbbb\"]"},
      /* an id without a random part, and the exact id: that one only */
      {"heat.slurm1234.0", "[\"heat.slurm1234.0\"]"},
      {"wavetoy.slurm1234.0.k3x9q2ab", "[\"wavetoy.slurm1234.0.k3x9q2ab\"]"},
      {"wavetoy.h4711-1333.node01", "[\"wavetoy.h4711-1333.node01.zz23abcd\"]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *o, *e, expr[300];
    assert_int_equal(lactl(&o, &e, "apps", "--job", cases[i].job, "--db", db,
                           "--json", NULL),
                     0);
    snprintf(expr, sizeof expr, "sorted(a[\"id\"] for a in d[\"apps\"]) == %s",
             cases[i].json_ids);
    py_check(save("job.json", o), "json", expr);
    free(o), free(e);
  }
  /* an exact id wins over a Slurm job number: an application named "1234"
   * is the only one listed */
  assert_int_equal(la_store_open(db, 0, &s, why, sizeof why), 0);
  assert_int_equal(la_store_begin(s), 0);
  rank_start(s, "1234", "x", 0, 1, 10);
  assert_int_equal(la_store_commit(s), 0);
  la_store_close(s);
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "apps", "--job", "1234", "--db", db, NULL), 0);
  assert_non_null(strstr(o, "1234"));
  assert_null(strstr(o, "slurm1234"));
  free(o), free(e);
  lactl_fails(1, "no application of job 'wavetoy.slurm123'", "apps", "--job",
              "wavetoy.slurm123", "--db", db, NULL);
  lactl_fails(1, "no application of job 'k3x9q2ab'", "apps", "--job",
              "k3x9q2ab", "--db", db, NULL);
  lactl_fails(2, "--job", "apps", "--job", NULL);
}

static void test_cycles(void **state) {
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "cycles", "heat-42", "--db", g->db, NULL), 0);
  assert_non_null(strstr(o, "2 cycles (1 complete, 1 partial, 0 open)"));
  assert_non_null(strstr(o, "complete"));
  assert_non_null(strstr(o, "3/4"));
  free(o), free(e);
  assert_int_equal(lactl(&o, &e, "cycles", "heat-42", "--first", "15", "--db",
                         g->db, "--json", NULL),
                   0);
  py_check(save("cycles.json", o), "json",
           "d[\"cycles\"] == [{\"cycle\": 20, \"state\": \"partial\", "
           "\"ranks_present\": 3, \"ranks_missing\": 1}]");
  free(o), free(e);
  assert_int_equal(lactl(&o, &e, "cycles", "wave-7", "--db", g->db, NULL), 0);
  assert_non_null(strstr(o, "open"));
  assert_non_null(strstr(o, "1/2"));
  free(o), free(e);
}

static void test_show(void **state) {
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "show", "heat-42", "--db", g->db, NULL), 0);
  /* latest = cycle 20, partial */
  assert_non_null(strstr(o,
                         "heat-42 cycle 20: partial, rank 2 missing "
                         "(3 of 4 present)"));
  assert_non_null(strstr(o, "imbalance"));
  assert_non_null(strstr(o, "(missing)"));
  assert_non_null(strstr(o, "lossless"));
  assert_non_null(strstr(o, "####################")); /* the heaviest */
  free(o), free(e);
  assert_int_equal(
      lactl(&o, &e, "show", "heat-42", "10", "--db", g->db, "--json", NULL), 0);
  char expr[2048];
  double mx = 0, s = 0;
  for (int r = 0; r < NP; r++) {
    s += g->sum[0][r];
    if (g->sum[0][r] > mx) mx = g->sum[0][r];
  }
  snprintf(expr, sizeof expr,
           "d[\"state\"] == \"complete\" and d[\"missing\"] == [] and "
           "d[\"elements\"] == 1100 and d[\"raw_bytes\"] == 8800 and "
           "[r[\"total\"] for r in d[\"ranks\"]] == [%.17g, %.17g, %.17g, "
           "%.17g] and abs(d[\"imbalance\"] - %.17g) < 1e-12 and "
           "d[\"ranks\"][3][\"mode\"] == \"lossless\" and "
           "d[\"ranks\"][3][\"max_abs_error\"] == 0 and "
           "d[\"encoded_bytes\"] == sum(r[\"bytes\"] for r in d[\"ranks\"]) "
           "and d[\"ratio\"] > 2 and d[\"unit\"] == \"ns\"",
           g->sum[0][0], g->sum[0][1], g->sum[0][2], g->sum[0][3],
           mx / (s / NP));
  py_check(save("show10.json", o), "json", expr);
  free(o), free(e);
  assert_int_equal(
      lactl(&o, &e, "show", "heat-42", "20", "--db", g->db, "--json", NULL), 0);
  py_check(save("show20.json", o), "json",
           "d[\"state\"] == \"partial\" and d[\"missing\"] == [2] and "
           "d[\"ranks\"][2][\"present\"] == False and d[\"nprocs\"] == 4");
  free(o), free(e);
}

/* Robust weights and interference as lactl show prints them: rank 0 lost
 * half its measured time (10 x 1000 of 20000) to interference, rank 1
 * none, so the measured totals are equal (imbalance 1) and the robust ones
 * 10000 and 20000 (imbalance 20000 / 15000); the median element (200 ns)
 * is under 20 steps of the 50 ns timer. */
static void test_show_robust(void **state) {
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "show", "xrobust-3", "--db", g->db, NULL), 0);
  if (!strstr(o, "imbalance   1 measured, 1.333 robust") ||
      !strstr(o, "interference 25% of the measured time (10 element-cycles") ||
      !strstr(o, "warning: timer resolution 50 ns, median element 200 ns") ||
      !strstr(o, "off (no perf events)") || !strstr(o, "INTERF%"))
    fail_msg("unexpected lactl show output:\n%s", o);
  free(o), free(e);
  assert_int_equal(
      lactl(&o, &e, "show", "xrobust-3", "--db", g->db, "--json", NULL), 0);
  py_check(save("show_robust.json", o), "json",
           "d[\"weights\"] == \"robust\" and d[\"imbalance\"] == 1 and "
           "abs(d[\"imbalance_robust\"] - 4.0 / 3) < 1e-12 and "
           "d[\"interference_share\"] == 0.25 and d[\"flagged\"] == 10 and "
           "d[\"robust_total\"] == 30000 and d[\"timer_res_ns\"] == 50 and "
           "d[\"median_element_ns\"] == 200 and d[\"timer_coarse\"] and "
           "[r[\"total\"] for r in d[\"ranks\"]] == [20000, 20000] and "
           "[r[\"robust_total\"] for r in d[\"ranks\"]] == [10000, 20000] "
           "and [r[\"interference_share\"] for r in d[\"ranks\"]] == "
           "[0.5, 0] and [r[\"flagged\"] for r in d[\"ranks\"]] == [10, 0] "
           "and [r[\"detection\"] for r in d[\"ranks\"]] == [\"on\", "
           "\"off (no perf events)\"]");
  free(o), free(e);
  /* a set without any of it: no fidelity lines, no warning */
  assert_int_equal(lactl(&o, &e, "show", "heat-42", "10", "--db", g->db, NULL),
                   0);
  assert_null(strstr(o, "robust"));
  assert_null(strstr(o, "warning"));
  free(o), free(e);
}

/* lactl export --weights: robust by default when present, measured on
 * request; a set without robust weights asked for them says so. */
static void test_export_weights(void **state) {
  char *o, *e;
  assert_int_equal(
      lactl(&o, &e, "export", "xrobust-3", "1", "--db", g->db, NULL), 0);
  assert_non_null(strstr(o, "\n1,0,3,3,100,3,0,0,0\n"));
  assert_null(strstr(o, ",1100,"));
  free(o), free(e);
  assert_int_equal(lactl(&o, &e, "export", "xrobust-3", "1", "--weights",
                         "measured", "--db", g->db, NULL),
                   0);
  assert_non_null(strstr(o, "\n1,0,3,3,1100,3,0,0,0\n"));
  free(o), free(e);
  assert_int_equal(lactl(&o, &e, "export", "heat-42", "10", "--weights",
                         "robust", "--format", "json", "--db", g->db, NULL),
                   0);
  assert_non_null(strstr(e, "not every rank has robust weights"));
  assert_non_null(strstr(o, "\"weights\": \"measured\""));
  free(o), free(e);
  lactl_fails(2, "measured or robust", "export", "xrobust-3", "--weights",
              "best", "--db", g->db, NULL);
}

/* Checks a CSV export against the raw series: rows of present ranks only,
 * values within each trace's achieved error, rank 3 exact. */
static void check_csv(const char *csv, int k, uint64_t cycle) {
  /* the format version comment, then the header */
  assert_memory_equal(csv, "# lactl export format 1; app ", 29);
  csv = strchr(csv, '\n') + 1;
  const char *p = strchr(csv, '\n');
  assert_non_null(p);
  const char *head = "cycle,rank,element,global_element,value,id,i,j,k\n";
  assert_memory_equal(csv, head, strlen(head));
  uint64_t rows[NP] = {0};
  uint64_t off[NP + 1] = {0};
  for (int r = 0; r < NP; r++) off[r + 1] = off[r] + NEL[r];
  for (p++; *p;) {
    unsigned long long c, e, ge, id, i, j, kk;
    unsigned r;
    double v;
    int n = 0;
    if (sscanf(p, "%llu,%u,%llu,%llu,%lf,%llu,%llu,%llu,%llu\n%n", &c, &r, &e,
               &ge, &v, &id, &i, &j, &kk, &n) != 9)
      break;
    /* no ids, no grid: the id is the concatenated numbering */
    assert_int_equal(id, ge);
    assert_true(i == 0 && j == 0 && kk == 0);
    p += n;
    if (c != cycle) continue;
    assert_true(r < NP);
    assert_true(e < NEL[r]);
    assert_int_equal(ge, off[r] + e);
    double x = g->raw[k][r][e];
    if (r == 3)
      assert_true(v == x);
    else if (!(fabs(v - x) <= g->maxerr[k][r] * (1 + 1e-9) + 1e-9))
      fail_msg(
          "cycle %llu rank %u element %llu: %.17g vs raw %.17g, bound "
          "%g",
          c, r, e, v, x, g->maxerr[k][r]);
    rows[r]++;
  }
  for (int r = 0; r < NP; r++)
    assert_int_equal(rows[r], k == 1 && r == 2 ? 0 : NEL[r]);
}

static void test_export_csv(void **state) {
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "export", "heat-42", "10", "--format", "csv",
                         "--db", g->db, NULL),
                   0);
  check_csv(o, 0, CYC_A);
  free(o), free(e);
  char out[200];
  snprintf(out, sizeof out, "%s/range.csv", g->dir);
  assert_int_equal(lactl(&o, &e, "export", "heat-42", "10:20", "--format",
                         "csv", "-o", out, "--db", g->db, NULL),
                   0);
  assert_non_null(strstr(e, "rank 2 missing")); /* said on stderr */
  free(o), free(e);
  char *csv = slurp(out);
  check_csv(csv, 0, CYC_A);
  check_csv(csv, 1, CYC_B);
  free(csv);
}

static void test_export_json(void **state) {
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "export", "heat-42", ":", "--format", "json",
                         "--db", g->db, NULL),
                   0);
  char expr[1024];
  snprintf(expr, sizeof expr,
           "[s[\"cycle\"] for s in d[\"sets\"]] == [10, 20] and "
           "d[\"sets\"][0][\"vtxdist\"] == [0, 200, 450, 750, 1100] and "
           "[len(r[\"values\"]) for r in d[\"sets\"][0][\"ranks\"]] == "
           "[200, 250, 300, 350] and "
           "d[\"sets\"][1][\"ranks\"][2][\"values\"] is None and "
           "d[\"sets\"][1][\"missing\"] == [2] and "
           "d[\"sets\"][0][\"ranks\"][3][\"values\"][7] == %.17g and "
           "d[\"sets\"][0][\"totals\"][1] == %.17g",
           g->raw[0][3][7], g->sum[0][1]);
  py_check(save("export.json", o), "json", expr);
  free(o), free(e);
}

static void test_export_metis(void **state) {
  char *o, *e;
  assert_int_equal(lactl(&o, &e, "export", "heat-42", "10", "--format", "metis",
                         "--max-weight", "500", "--db", g->db, NULL),
                   0);
  long lines = 0, mx = 0, mn = 1 << 30;
  for (char *p = o; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    assert_true(end > p && *end == '\n');
    lines++;
    if (v > mx) mx = v;
    if (v < mn) mn = v;
    p = end + 1;
  }
  assert_int_equal(lines, 1100);
  assert_true(mn >= 1);
  assert_int_equal(mx, 500);
  free(o), free(e);
  /* partial set: still one weight per element, said on stderr */
  assert_int_equal(lactl(&o, &e, "export", "heat-42", "20", "--format", "metis",
                         "--db", g->db, NULL),
                   0);
  lines = 0;
  for (char *p = o; *p; p++) lines += *p == '\n';
  assert_int_equal(lines, 1100);
  assert_non_null(strstr(e, "mean weight"));
  free(o), free(e);
}

/* A store of its own (PATH) with xclip-1: one rank of 1000 elements whose
 * robust weights are 100 but 100000 on element 500 (clipped from the
 * trace's axis), measured 1100 on every tenth element (interfered): the
 * trace plot then has all of its legend and the note on clipped values. */
static void make_clip_store(const char *path) {
  la_store_t *s;
  char why[256];
  assert_int_equal(la_store_open(path, 0, &s, why, sizeof why), 0);
  assert_int_equal(la_store_begin(s), 0);
  La__RankStart m = la_test_rank_start("xclip-1", NULL, 0, 1, 1000);
  m.seq = 1;
  m.has_timer_res_ns = 1;
  m.timer_res_ns = 1;
  m.interference = "on";
  assert_int_equal(la_store_rank_start(s, &m, NULL), 0);
  double mv[1000], rb[1000];
  for (int i = 0; i < 1000; i++) {
    rb[i] = i == 500 ? 100000 : 100;
    mv[i] = i % 10 == 3 ? 1100 : rb[i];
  }
  la_test_robust_t rt;
  assert_int_equal(la_test_robust_make(&rt, "xclip-1", 0, 2, 1, mv, rb, 1000),
                   0);
  rt.t.has_flagged = 1;
  rt.t.flagged = 100;
  rt.t.has_flagged_time = 1;
  rt.t.flagged_time = 100000;
  assert_int_equal(la_store_trace(s, &rt.t, NULL), 0);
  la_test_robust_free(&rt);
  assert_int_equal(la_store_set_closed(s, "xclip-1", 1, 1, NULL, 0,
                                       1700000000400000000ull),
                   0);
  assert_int_equal(la_store_commit(s), 0);
  la_store_close(s);
}

static void test_plot_trace(void **state) {
  char *o, *e, out[200];
  snprintf(out, sizeof out, "%s/trace.svg", g->dir);
  assert_int_equal(lactl(&o, &e, "plot", "heat-42", "10", "--rank", "1",
                         "--raw", g->dir, "-o", out, "--db", g->db, NULL),
                   0);
  free(o), free(e);
  char *svg = slurp(out);
  assert_non_null(strstr(svg, "<polyline class=\"decoded\""));
  assert_non_null(strstr(svg, "<circle"));
  assert_non_null(strstr(svg, "heat-42: rank 1, cycle 10 (complete)"));
  assert_non_null(strstr(svg, "element index"));
  free(svg);
  py_check(out, "xml",
           "len(d.getElementsByTagName(\"polyline\")) == 1 and "
           "len(d.getElementsByTagName(\"circle\")) >= 250 and "
           "len(d.getElementsByTagName(\"text\")) > 10");
  /* robust weights, interfered elements and a clipped value: the subtitle
   * at its longest, the whole legend and the note, all inside the picture
   * and clear of each other */
  char clipdb[200];
  snprintf(clipdb, sizeof clipdb, "%s/clip.db", g->dir);
  make_clip_store(clipdb);
  snprintf(out, sizeof out, "%s/clip.svg", g->dir);
  assert_int_equal(lactl(&o, &e, "plot", "xclip-1", "--rank", "0", "-o", out,
                         "--db", clipdb, NULL),
                   0);
  free(o), free(e);
  svg_layout(out);
  /* without --raw: the line only; a raw file of the wrong size refused */
  assert_int_equal(
      lactl(&o, &e, "plot", "heat-42", "--rank", "3", "--db", g->db, NULL), 0);
  assert_non_null(strstr(o, "<polyline"));
  assert_null(strstr(o, "<circle cx"));
  py_check(save("trace3.svg", o), "xml",
           "d.documentElement.tagName == \"svg\"");
  free(o), free(e);
  char bad[200];
  snprintf(bad, sizeof bad, "%s/heat-42.r1.c10.f64", g->dir);
  lactl_fails(1, "not this rank's raw file", "plot", "heat-42", "10", "--rank",
              "0", "--raw", bad, "--db", g->db, NULL);
}

static void test_plot_heatmap(void **state) {
  char *o, *e, out[200];
  snprintf(out, sizeof out, "%s/heat.svg", g->dir);
  assert_int_equal(lactl(&o, &e, "plot", "heat-42", "--heatmap", "-o", out,
                         "--db", g->db, NULL),
                   0);
  free(o), free(e);
  char *svg = slurp(out);
  assert_non_null(strstr(svg, "class=\"heatmap\""));
  assert_non_null(strstr(svg, "url(#missing)")); /* rank 2, cycle 20 */
  assert_non_null(strstr(svg, "rank total / cycle mean"));
  free(svg);
  py_check(out, "xml",
           "len([r for r in d.getElementsByTagName(\"rect\") if "
           "r.parentNode.getAttribute(\"class\") == \"heatmap\"]) == 8 and "
           "len(d.getElementsByTagName(\"linearGradient\")) == 1");
  assert_int_equal(lactl(&o, &e, "plot", "heat-42", "--heatmap", "--first",
                         "50", "--db", g->db, NULL),
                   1);
  free(o), free(e);
}

/* The same commands through a real GlobalAgent give the same bytes. */
/* A store written before the tables added after schema version 1
 * (missing, robust, rank_fidelity, rank_channels, channel_traces,
 * element_ids, rank_grid, history), read-only on disk: lactl --db opens it
 * (nothing to create there) and reads what it has: the same output as the
 * full store for an application that used none of those tables, measured
 * values where the robust weights were. */
static void test_old_store_read_only(void **state) {
  (void)state;
  char old[300], sql[400];
  snprintf(old, sizeof old, "%s/old.db", g->dir);
  sqlite3 *src = NULL, *dst = NULL;
  assert_int_equal(sqlite3_open(g->db, &src), SQLITE_OK);
  snprintf(sql, sizeof sql, "VACUUM INTO '%s'", old);
  assert_int_equal(sqlite3_exec(src, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(src);
  assert_int_equal(sqlite3_open(old, &dst), SQLITE_OK);
  assert_int_equal(sqlite3_exec(dst,
                                "PRAGMA journal_mode = DELETE;"
                                " DROP TABLE missing; DROP TABLE robust;"
                                " DROP TABLE rank_fidelity;"
                                " DROP TABLE channel_traces;"
                                " DROP TABLE rank_channels;"
                                " DROP TABLE element_ids;"
                                " DROP TABLE rank_grid; DROP TABLE history;",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(dst);
  assert_int_equal(chmod(old, 0444), 0);
  assert_int_equal(chmod(g->dir, 0555), 0);
  const char *const cmds[][8] = {
      {"apps", NULL},
      {"cycles", "heat-42", NULL},
      {"show", "heat-42", "10", NULL},
      {"show", "heat-42", "20", NULL},
      {"export", "heat-42", "10", "--format", "csv", NULL},
      {"export", "heat-42", "10", "--format", "json", NULL},
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char *want, *got, *err;
    assert_int_equal(run_with(&want, NULL, cmds[i], "--db", g->db), 0);
    int rc = run_with(&got, &err, cmds[i], "--db", old);
    /* apps: the same list; the rest: the same words */
    if (rc != 0 || strcmp(got, want) != 0) {
      fprintf(stderr,
              "lactl %s %s on the old store: exit %d, stderr: %s\n"
              "--- got:\n%s\n--- want:\n%s\n",
              cmds[i][0], cmds[i][1] ? cmds[i][1] : "", rc, err, got, want);
      fails++;
    }
    free(want);
    free(got);
    free(err);
  }
  /* the robust weights are gone with their table: the measured values */
  char *o, *e;
  int rc = lactl(&o, &e, "export", "xrobust-3", "1", "--db", old, NULL);
  if (rc != 0)
    fprintf(stderr, "export xrobust-3: %d %s\n", rc, e);
  else if (!strstr(o, ",1100,"))
    fprintf(stderr, "export xrobust-3:\n%s", o);
  fails += rc != 0 || !strstr(o, ",1100,");
  free(o), free(e);
  assert_int_equal(chmod(g->dir, 0700), 0);
  assert_int_equal(fails, 0);
}

static void test_global_same_output(void **state) {
  la_test_stack_t st;
  if (la_ts_init(&st) != 0) {
    la_ts_free(&st);
    skip();
  }
  snprintf(st.db, sizeof st.db, "%s", g->db); /* serve the test's store */
  /* The expected outputs first, from the file alone. */
  const char *const cmds[][6] = {
      {"apps", NULL},
      {"apps", "--json", NULL},
      {"cycles", "heat-42", NULL},
      {"cycles", "wave-7", "--json", NULL},
      {"show", "heat-42", "10", NULL},
      {"show", "heat-42", "20", "--json", NULL},
      {"show", "heat-42", NULL},
      {"show", "heat-42", "--timeout", "30", NULL},
      {"show", "wave-7", NULL},
      {"export", "heat-42", "10:20", NULL},
      {"export", "heat-42", "20", "--format", "metis", NULL},
      {"show", "xrobust-3", "--json", NULL},
      {"show", "xrobust-3", NULL},
      {"export", "xrobust-3", "--format", "json", NULL},
  };
  enum { NC = sizeof cmds / sizeof cmds[0] };
  char *want[NC];
  for (int i = 0; i < NC; i++)
    assert_int_equal(run_with(&want[i], NULL, cmds[i], "--db", g->db), 0);
  const char *extra[] = {"--stitch.timeout=60m", NULL};
  if (la_ts_start_global(&st, extra) != 0) {
    la_ts_free(&st);
    fail_msg("la-globalagent did not start");
  }
  const char *addr = st.feed_addr;
  for (int i = 0; i < NC; i++) {
    const char *const *c = cmds[i];
    char *got, *err;
    int rc = run_with(&got, &err, c, "--global", addr);
    if (rc != 0 || strcmp(got, want[i]) != 0) {
      fprintf(stderr,
              "lactl %s ... --global: exit %d, stderr: %s\n"
              "--- got:\n%s\n--- want (--db):\n%s\n",
              c[0], rc, err, got, want[i]);
      la_ts_free(&st);
      fail_msg("--global and --db differ for lactl %s", c[0]);
    }
    free(got);
    free(err);
    free(want[i]);
  }
  /* a not-found through the feed is the same exit and words */
  lactl_fails(1, "no cycle 99", "show", "heat-42", "99", "--global", addr,
              NULL);
  /* the agents' port where the feed's belongs: the user is told to look
   * at the address, not that the GlobalAgent closed the connection */
  char *o = NULL, *e = NULL;
  assert_int_equal(lactl(&o, &e, "apps", "--global", st.ga_addr, NULL), 1);
  if (!strstr(e, "is this the GlobalAgent's feed address"))
    fail_msg("lactl apps on the agents' port said: %s", e);
  free(o), free(e);
  /* and a LocalAgent's port (it closes a stranger's connection) */
  if (la_ts_start_local(&st, NULL) != 0) fail_msg("la-localagent did not start");
  char la_addr[64];
  snprintf(la_addr, sizeof la_addr, "127.0.0.1:%u", la_td_port(st.la));
  assert_int_equal(lactl(&o, &e, "apps", "--global", la_addr, NULL), 1);
  if (!strstr(e, "is this the GlobalAgent's feed address"))
    fail_msg("lactl apps on the LocalAgent's port said: %s", e);
  free(o), free(e);
  assert_int_equal(la_ts_stop_local(&st), 0);
  assert_int_equal(la_td_stop(st.ga, 5000), 0);
  la_ts_free(&st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help_and_usage),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_cli_errors),
      cmocka_unit_test(test_apps),
      cmocka_unit_test(test_apps_job),
      cmocka_unit_test(test_cycles),
      cmocka_unit_test(test_show),
      cmocka_unit_test(test_show_robust),
      cmocka_unit_test(test_export_weights),
      cmocka_unit_test(test_export_csv),
      cmocka_unit_test(test_export_json),
      cmocka_unit_test(test_export_metis),
      cmocka_unit_test(test_plot_trace),
      cmocka_unit_test(test_plot_heatmap),
      cmocka_unit_test(test_old_store_read_only),
      cmocka_unit_test(test_global_same_output),
  };
  return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
