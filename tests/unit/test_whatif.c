/* SPDX-License-Identifier: BSD-3-Clause */
/* test_whatif.c: `lactl whatif` on what real examples stored through the
 * real daemons (la-globalagent and la-localagent on ephemeral ports,
 * tests/support/la_test_stack.h).
 *
 * The group setup runs, under mpiexec -n 4:
 *   rebalance --no-rebalance (32 x 32 cells, 12 steps): the hot spot
 *     makes the static row blocks imbalanced; every rank registers all
 *     cells and gives their ids (no grid);
 *   wavetoy --n 6 (12 steps): a 6^3 grid in k-slabs of 2, 2, 1, 1
 *     planes, placed in the global grid (LA_setGridOrigin): the first two
 *     ranks have twice the cells of the others.
 * Then, reading the GlobalAgent's store:
 *   - the current decomposition's imbalance equals max/mean of the stored
 *     per-rank robust totals, computed here from libla_client (la_client_get,
 *     la_traceset_robust_totals);
 *   - METIS (both), RCB (wavetoy) and greedy (rebalance) predict a lower
 *     imbalance than the current one, and their gain is current max / their
 *     max;
 *   - moved bytes are the moved elements times --bytes-per-element;
 *   - the halo of wavetoy's current k-slabs is the one counted by hand
 *     (JSON and CSV), every partition of the grid has one, and rebalance
 *     (no grid) none;
 *   - --horizon K gives K scores per partition, on the K cycles that
 *     follow; fewer are said on stderr when the store has fewer;
 *   - the JSON validates against docs/schema/lactl-whatif.json
 *     (tests/status_schema.py), and --csv has one line per partition;
 *   - --partition FILE scores a given partition: whatif's own
 *     --write-partition file scores what its metis row predicted (to 1e-3:
 *     imbalance, max, moved elements, the horizon scores, the halo), the
 *     static row blocks written by hand score the stored current
 *     imbalance, and bad files are refused with the line and the problem
 *     (not "ID RANK", an id not in the cycle, an id twice, elements
 *     missing, a rank beyond the header's parts, no such file, and
 *     --partition on a range of cycles);
 *   - bad input gets the documented errors: unknown application, a cycle
 *     not stored, rcb without a grid, an unknown method, --parts 0,
 *     --csv with --json.
 * Skips without mpiexec, the daemons, lactl or the examples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_client.h"
#include "la_test_agent.h"
#include "la_test_daemon.h"
#include "la_test_stack.h"

#define OUT_LEN 65536
#define STEPS 12

typedef struct {
  la_test_stack_t s;
  int up;
  char lactl[PATH_MAX], examples[PATH_MAX], dir[PATH_MAX];
  char rb[160], wt[160]; /* the two applications' ids */
  char out[OUT_LEN];
} fx_t;

static fx_t *g;

/* The id after " as " in an example's "LA registered ... as ID" line. */
static int app_id_of(const char *out, char *id, size_t len) {
  const char *p = strstr(out, "LA registered on ");
  if (!p || !(p = strstr(p, " as "))) return -1;
  p += 4;
  size_t n = strcspn(p, " ;\n");
  if (!n || n >= len) return -1;
  memcpy(id, p, n);
  id[n] = 0;
  return 0;
}

/* Runs example name under mpiexec -n 4 against the stack; its id into id. */
static int run_example(const char *name, const char *const *args, char *id,
                       size_t len) {
  const char *argv[24] = {"mpiexec", "-n", "4"};
  char path[PATH_MAX + 64], agent[96], global[96];
  int n = 3;
  snprintf(path, sizeof path, "%s/%s", g->examples, name);
  argv[n++] = path;
  for (int i = 0; args[i] && n < 23; i++) argv[n++] = args[i];
  argv[n] = NULL;
  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_td_addr(g->s.la));
  snprintf(global, sizeof global, "LA_GLOBAL=%s", g->s.feed_addr);
  const char *const env[] = {agent, global, NULL};
  int rc = la_td_run(argv, env, 120000, g->out, sizeof g->out);
  if (rc != 0 || app_id_of(g->out, id, len) != 0) {
    fprintf(stderr, "%s exited %d:\n%s\n", name, rc, g->out);
    return -1;
  }
  return 0;
}

/* Waits until app's last cycle is stored complete. 0 or -1. */
static int wait_complete(const char *app) {
  la_client_t *c;
  if (la_client_connect(g->s.feed_addr, 5000, &c) != 0) return -1;
  la_traceset_t *t = la_ta_complete_set(c, app, STEPS - 1, 30000);
  la_client_close(c);
  int ok = t != NULL;
  la_traceset_free(t);
  return ok ? 0 : -1;
}

static int setup_group(void **state) {
  g = calloc(1, sizeof *g);
  if (!g) return -1;
  char self[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k <= 0) return -1;
  self[k] = 0;
  const char *ex = getenv("LA_EXAMPLES_DIR");
  if (ex && *ex)
    snprintf(g->examples, sizeof g->examples, "%s", ex);
  else /* build/tests/../examples; a sanitized tree links the normal one */
    snprintf(g->examples, sizeof g->examples, "%.*s/../examples",
             (int)(strrchr(self, '/') - self), self);
  char rbp[PATH_MAX + 16], wtp[PATH_MAX + 16];
  snprintf(rbp, sizeof rbp, "%s/rebalance", g->examples);
  snprintf(wtp, sizeof wtp, "%s/wavetoy", g->examples);
  if (system("command -v mpiexec >/dev/null 2>&1") != 0 ||
      access(rbp, X_OK) != 0 || access(wtp, X_OK) != 0 ||
      la_td_find_bin("lactl", g->lactl, sizeof g->lactl) != 0 ||
      la_ts_init(&g->s) != 0)
    return 0; /* the tests skip */
  static const char *const la_extra[] = {"--global.spool_fsync=no", NULL};
  if (la_ts_start_global(&g->s, NULL) != 0 ||
      la_ts_start_local(&g->s, la_extra) != 0)
    return -1;
  snprintf(g->dir, sizeof g->dir, "%s", la_td_dir(g->s.ga));
  static const char *const rb_args[] = {"--n",    "32", "--steps",        "12",
                                        "--work", "50", "--no-rebalance", NULL};
  static const char *const wt_args[] = {"--n", "6", "--steps", "12", NULL};
  if (run_example("rebalance", rb_args, g->rb, sizeof g->rb) != 0 ||
      run_example("wavetoy", wt_args, g->wt, sizeof g->wt) != 0 ||
      wait_complete(g->rb) != 0 || wait_complete(g->wt) != 0)
    return -1;
  g->up = 1;
  *state = g;
  return 0;
}

static int teardown_group(void **state) {
  if (!g) return 0;
  la_ts_free(&g->s);
  free(g);
  g = NULL;
  return 0;
}

static void need_up(void) {
  if (!g->up) {
    printf("skip: mpiexec, lactl, the daemons or the examples missing\n");
    skip();
  }
}

/* Runs lactl whatif with the NULL-terminated args and --db; stdout and
 * stderr into g->out. Returns the exit status. */
static int whatif(const char *first, ...) {
  const char *argv[40] = {g->lactl, "whatif", first};
  int n = 3;
  va_list ap;
  va_start(ap, first);
  const char *a;
  while ((a = va_arg(ap, const char *)) && n < 36) argv[n++] = a;
  va_end(ap);
  argv[n++] = "--db";
  argv[n++] = g->s.db;
  argv[n] = NULL;
  return la_td_run(argv, NULL, 60000, g->out, sizeof g->out);
}

/* A path in the fixture's directory (static buffer, two in turn). */
static const char *file(const char *name) {
  static char buf[2][PATH_MAX + 64];
  static int next;
  char *b = buf[next++ % 2];
  snprintf(b, sizeof buf[0], "%s/%s", g->dir, name);
  return b;
}

/* Runs python3 on the JSON file: `d` is the document; expr must hold. */
static void py(const char *json, const char *expr) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 -c 'import json, sys\n"
           "d = json.load(open(sys.argv[1]))\n"
           "P = lambda c, m: [p for p in c[\"partitions\"] if p[\"method\"] "
           "== m][0]\n"
           "sys.exit(0 if (%s) else 3)' '%s'",
           expr, json);
  int rc = system(cmd);
  if (rc != 0) fail_msg("check failed (%d): %s on %s", rc, expr, json);
}

/* Validates a whatif JSON file against the schema. */
static void valid(const char *json) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 tests/status_schema.py "
           "docs/schema/lactl-whatif.json '%s'",
           json);
  if (system(cmd) != 0) fail_msg("%s does not match the schema", json);
}

/* max / mean of app's stored robust per-rank totals at cycle, computed
 * from libla_client alone. */
static double stored_imbalance(const char *app, uint64_t cycle) {
  la_client_t *c;
  la_traceset_t *t;
  assert_int_equal(la_client_connect(g->s.feed_addr, 5000, &c), 0);
  assert_int_equal(la_client_get(c, app, cycle, &t), 0);
  la_client_close(c);
  assert_true(la_traceset_has_robust(t));
  uint32_t np = la_traceset_nprocs(t);
  double tot[16], max = 0, sum = 0;
  assert_true(np == 4);
  assert_int_equal(la_traceset_robust_totals(t, tot), 0);
  for (uint32_t r = 0; r < np; r++) {
    sum += tot[r];
    if (tot[r] > max) max = tot[r];
  }
  la_traceset_free(t);
  return max / (sum / np);
}

/* The checks every partition of cycle `c` (JSON expression) passes. */
static void check_partitions(const char *json, const char *meth, double cur,
                             double bpe, int horizon) {
  char e[1024];
  snprintf(e, sizeof e,
           "abs(P(d[\"cycles\"][0], \"current\")[\"imbalance\"] - %.17g) "
           "<= 1e-12 * %.17g",
           cur, cur);
  py(json, e);
  snprintf(e, sizeof e,
           "all(P(c, \"%s\")[\"imbalance\"] < P(c, \"current\")[\"imbalance\"]"
           " and abs(P(c, \"%s\")[\"gain\"] - P(c, \"current\")[\"max\"] / "
           "P(c, \"%s\")[\"max\"]) <= 1e-12 * P(c, \"%s\")[\"gain\"]"
           " and P(c, \"%s\")[\"moved_elements\"] > 0"
           " and P(c, \"%s\")[\"moved_bytes\"] == %g * P(c, \"%s\")"
           "[\"moved_elements\"] for c in d[\"cycles\"])",
           meth, meth, meth, meth, meth, meth, bpe, meth);
  py(json, e);
  snprintf(e, sizeof e,
           "all(len(c[\"horizon_cycles\"]) == %d and all(len(p[\"horizon\"]"
           "[\"scores\"]) == %d for p in c[\"partitions\"]) for c in "
           "d[\"cycles\"])",
           horizon, horizon);
  py(json, e);
}

static void test_rebalance(void **state) {
  need_up();
  const char *j = file("rb.json");
  assert_int_equal(whatif(g->rb, "4", "--horizon", "3", "--method",
                          "metis,greedy", "--json", "-o", j, NULL),
                   0);
  valid(j);
  double cur = stored_imbalance(g->rb, 4);
  print_message("rebalance cycle 4: current imbalance %.3f\n", cur);
  assert_true(cur > 1.2); /* the hot spot in the row blocks */
  check_partitions(j, "metis", cur, 8, 3);
  check_partitions(j, "greedy", cur, 8, 3);
  py(j,
     "d[\"cycles\"][0][\"grid\"] is None and d[\"cycles\"][0]"
     "[\"elements\"] == 1024 and d[\"cycles\"][0][\"horizon_cycles\"] "
     "== [5, 6, 7] and d[\"cycles\"][0][\"weights\"] == \"robust\"");
  /* no grid, no halo */
  py(j, "all(p[\"halo\"] is None for p in d[\"cycles\"][0][\"partitions\"])");
  /* the table, for people */
  assert_int_equal(whatif(g->rb, "4", NULL), 0);
  print_message("%s", g->out);
  assert_non_null(strstr(g->out, "current"));
  assert_non_null(strstr(g->out, "metis"));
  assert_non_null(strstr(g->out, "no grid"));
}

static void test_grid(void **state) {
  need_up();
  const char *j = file("wt.json");
  assert_int_equal(whatif(g->wt, "3:5", "--horizon", "2", "--bytes-per-element",
                          "100", "--json", "-o", j, NULL),
                   0);
  valid(j);
  char e[256];
  for (uint64_t c = 3; c <= 5; c++) {
    double cur = stored_imbalance(g->wt, c);
    print_message("wavetoy cycle %llu: current imbalance %.3f\n",
                  (unsigned long long)c, cur);
    snprintf(e, sizeof e,
             "abs(P(d[\"cycles\"][%llu], \"current\")[\"imbalance\"] - "
             "%.17g) <= 1e-12 * %.17g",
             (unsigned long long)c - 3, cur, cur);
    py(j, e);
  }
  check_partitions(j, "metis", stored_imbalance(g->wt, 3), 100, 2);
  check_partitions(j, "rcb", stored_imbalance(g->wt, 3), 100, 2);
  py(j,
     "[c[\"cycle\"] for c in d[\"cycles\"]] == [3, 4, 5] and "
     "all(c[\"grid\"] == [6, 6, 6] and c[\"elements\"] == 216 for c in "
     "d[\"cycles\"])");
  /* the halo of the k-slabs of 2, 2, 1, 1 planes of 36 cells: rank 0 and
   * 3 one facing plane, ranks 1 and 2 two neighbours (rank 2's one plane
   * faces both: 36 cells, sent twice) */
  py(j,
     "P(d[\"cycles\"][0], \"current\")[\"halo\"] == {\"boundary_cells\": "
     "180, \"cells_sent\": 216, \"neighbours_max\": 2, "
     "\"neighbours_mean\": 1.5} and all(p[\"halo\"][\"boundary_cells\"] > 0 "
     "for p in d[\"cycles\"][0][\"partitions\"])");
  /* --parts, --weights measured, CSV: a header and one line each */
  assert_int_equal(whatif(g->wt, "5", "--parts", "3", "--weights", "measured",
                          "--csv", "-o", file("wt.csv"), NULL),
                   0);
  FILE *f = fopen(file("wt.csv"), "r");
  assert_non_null(f);
  char line[1024];
  int n = 0, parts3 = 0;
  while (fgets(line, sizeof line, f)) {
    n++;
    if (n > 2 && strstr(line, ",3,")) parts3++;
  }
  fclose(f);
  assert_int_equal(n, 2 + 3); /* comment, header, current, metis, rcb */
  /* the halo columns close the current row */
  FILE *f2 = fopen(file("wt.csv"), "r");
  assert_non_null(f2);
  int cur = 0;
  while (fgets(line, sizeof line, f2))
    if (strstr(line, ",current,") && strstr(line, ",180,216,2,1.5\n")) cur++;
  fclose(f2);
  assert_int_equal(cur, 1);
  assert_int_equal(parts3, 2);
}

static void test_horizon_short(void **state) {
  need_up();
  /* two cycles follow 9 */
  assert_int_equal(whatif(g->wt, "9", "--horizon", "5", "--json", "-o",
                          file("short.json"), NULL),
                   0);
  assert_non_null(strstr(g->out, "only 2 complete cycles follow"));
  py(file("short.json"), "d[\"cycles\"][0][\"horizon_cycles\"] == [10, 11]");
  valid(file("short.json"));
}

/* Writes text to the fixture's file name; returns its path. */
static const char *put(const char *name, const char *text) {
  const char *path = file(name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
  return path;
}

/* The given partition scored as whatif's own prediction for it. */
static void same_as_metis(const char *json) {
  py(json,
     "all(abs(P(c, \"file\")[k] - P(c, \"metis\")[k]) <= 1e-3 * "
     "P(c, \"metis\")[k] for c in d[\"cycles\"] for k in (\"imbalance\", "
     "\"max\", \"mean\", \"gain\"))");
  py(json,
     "all(P(c, \"file\")[\"moved_elements\"] == P(c, \"metis\")"
     "[\"moved_elements\"] and P(c, \"file\")[\"halo\"] == P(c, "
     "\"metis\")[\"halo\"] and P(c, \"file\")[\"parts\"] == 4 and "
     "len(P(c, \"file\")[\"horizon\"][\"scores\"]) == 2 and all(abs(a - "
     "b) <= 1e-3 * b for a, b in zip(P(c, \"file\")[\"horizon\"][\"scores\"],"
     " P(c, \"metis\")[\"horizon\"][\"scores\"])) for c in d[\"cycles\"])");
}

static void test_given_partition(void **state) {
  need_up();
  /* whatif's own partition, written, then scored (file() has two buffers:
   * the paths kept are copied) */
  char pf[PATH_MAX + 64], j[PATH_MAX + 64], wpf[PATH_MAX + 64];
  snprintf(pf, sizeof pf, "%s", file("rb.part"));
  snprintf(j, sizeof j, "%s", file("given.json"));
  snprintf(wpf, sizeof wpf, "%s", file("wt.part"));
  assert_int_equal(whatif(g->rb, "4", "--method", "metis", "--write-partition",
                          pf, NULL),
                   0);
  assert_int_equal(whatif(g->rb, "4", "--method", "metis", "--partition", pf,
                          "--horizon", "2", "--json", "-o", j, NULL),
                   0);
  valid(j);
  same_as_metis(j);
  assert_int_equal(whatif(g->wt, "3", "--method", "metis", "--write-partition",
                          wpf, NULL),
                   0);
  assert_int_equal(whatif(g->wt, "3", "--method", "metis", "--partition", wpf,
                          "--horizon", "2", "--json", "-o", j, NULL),
                   0);
  valid(j);
  same_as_metis(j); /* with the grid's halo */
  /* the static row blocks (8 rows of 32 cells per rank), written by hand,
   * in descending order: the stored current imbalance, nothing moves */
  static char rows[1024 * 16];
  size_t at = 0;
  for (int id = 1023; id >= 0; id--)
    at += (size_t)snprintf(rows + at, sizeof rows - at, "%d %d\n", id,
                           id / 256);
  int rc = whatif(g->rb, "4", "--partition", put("rows.part", rows), "--json",
                  "-o", j, NULL);
  if (rc) fail_msg("exit %d: %s", rc, g->out);
  char e[512];
  double cur = stored_imbalance(g->rb, 4);
  snprintf(e, sizeof e,
           "abs(P(d[\"cycles\"][0], \"file\")[\"imbalance\"] - %.17g) <= "
           "1e-3 * %.17g and P(d[\"cycles\"][0], \"file\")"
           "[\"moved_elements\"] == 0",
           cur, cur);
  py(j, e);
  /* the table names the row */
  assert_int_equal(whatif(g->rb, "4", "--partition", pf, NULL), 0);
  assert_non_null(strstr(g->out, "file"));
}

/* Runs python3 on the SVG and the JSON whatif wrote for the same run:
 * `lines` maps each polyline's method to its points [(x, y)], `d` is the
 * JSON; expr must hold. */
static void svg_py(const char *svg, const char *json, const char *expr) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 -c 'import json, sys, xml.etree.ElementTree as E\n"
           "ns = \"{http://www.w3.org/2000/svg}\"\n"
           "lines = {p.get(\"class\"): [tuple(map(float, q.split(\",\"))) "
           "for q in p.get(\"points\").split()] for p in "
           "E.parse(sys.argv[1]).iter(ns + \"polyline\")}\n"
           "d = json.load(open(sys.argv[2]))\n"
           "P = lambda c, m: [p for p in c[\"partitions\"] if p[\"method\"] "
           "== m][0]\n"
           "sys.exit(0 if (%s) else 3)' '%s' '%s'",
           expr, svg, json);
  int rc = system(cmd);
  if (rc != 0) fail_msg("check failed (%d): %s on %s", rc, expr, svg);
}

static void test_plot(void **state) {
  need_up();
  char svg[PATH_MAX + 64], j[PATH_MAX + 64];
  snprintf(svg, sizeof svg, "%s", file("range.svg"));
  snprintf(j, sizeof j, "%s", file("range.json"));
  /* a range: one point per cycle and partition, higher where the
   * imbalance is higher, the cycles left to right */
  int rc = whatif(g->wt, "3:6", "--method", "metis", "--json", "-o", j,
                  "--plot", svg, NULL);
  if (rc) fail_msg("exit %d: %s", rc, g->out);
  svg_py(svg, j,
         "sorted(lines) == [\"current\", \"metis\"] and all(len(v) == "
         "len(d[\"cycles\"]) == 4 for v in lines.values()) and all("
         "lines[m][i][0] < lines[m][i + 1][0] for m in lines for i in "
         "range(3)) and all((lines[m][a][1] < lines[m][b][1]) == "
         "(P(d[\"cycles\"][a], m)[\"imbalance\"] > P(d[\"cycles\"][b], m)"
         "[\"imbalance\"]) for m in lines for a in range(4) for b in "
         "range(4) if P(d[\"cycles\"][a], m)[\"imbalance\"] != "
         "P(d[\"cycles\"][b], m)[\"imbalance\"])");
  /* one cycle held over its horizon: the cycle and the 3 that follow */
  snprintf(svg, sizeof svg, "%s", file("hold.svg"));
  snprintf(j, sizeof j, "%s", file("hold.json"));
  rc = whatif(g->rb, "4", "--horizon", "3", "--method", "metis,greedy",
              "--json", "-o", j, "--plot", svg, NULL);
  if (rc) fail_msg("exit %d: %s", rc, g->out);
  svg_py(svg, j,
         "sorted(lines) == [\"current\", \"greedy\", \"metis\"] and "
         "all(len(v) == 4 for v in lines.values()) and "
         "(lines[\"metis\"][0][1] > lines[\"current\"][0][1]) == "
         "(P(d[\"cycles\"][0], \"metis\")[\"imbalance\"] < "
         "P(d[\"cycles\"][0], \"current\")[\"imbalance\"])");
}

/* Exit status code and text on stderr. */
static void fails(int code, const char *text, int rc) {
  if (rc != code || !strstr(g->out, text))
    fail_msg("exit %d (expected %d), expected '%s' in: %s", rc, code, text,
             g->out);
}

static void test_errors(void **state) {
  need_up();
  fails(1, "no application 'nope'", whatif("nope", NULL));
  fails(1, "has no cycle 99", whatif(g->wt, "99", NULL));
  fails(1, "rcb needs a grid", whatif(g->rb, "4", "--method", "rcb", NULL));
  fails(2, "--method 'scotch'", whatif(g->wt, "--method", "scotch", NULL));
  fails(2, "--parts '0'", whatif(g->wt, "--parts", "0", NULL));
  fails(2, "--csv or --json", whatif(g->wt, "--csv", "--json", NULL));
  fails(2, "--bytes-per-element '-1'",
        whatif(g->wt, "--bytes-per-element", "-1", NULL));
  fails(1, "has no cycle in 50..60", whatif(g->wt, "50:60", NULL));
  fails(2, "--plot draws lines",
        whatif(g->rb, "4", "--plot", file("one.svg"), NULL));
  fails(1, "/nonexistent/x.svg: No such file",
        whatif(g->wt, "3:5", "--plot", "/nonexistent/x.svg", NULL));
}

static void test_given_partition_errors(void **state) {
  need_up();
  fails(1, "nope.part: No such file",
        whatif(g->rb, "4", "--partition", file("nope.part"), NULL));
  fails(1, ":2: not \"ID RANK\"",
        whatif(g->rb, "4", "--partition", put("bad1", "# x\n0 zero\n"), NULL));
  fails(1, ":1: not \"ID RANK\"",
        whatif(g->rb, "4", "--partition", put("bad2", "0 -1\n"), NULL));
  fails(1, ":2: id 5000 is not an element of the cycle",
        whatif(g->rb, "4", "--partition", put("bad3", "0 0\n5000 1\n"),
               NULL));
  fails(1, ":3: id 1 again",
        whatif(g->rb, "4", "--partition", put("bad4", "0 0\n1 1\n1 2\n"),
               NULL));
  fails(1, "1022 of the cycle's 1024 elements have no rank (id 2 the first)",
        whatif(g->rb, "4", "--partition", put("bad5", "0 0\n1 1\n"), NULL));
  fails(1, "rank 7 in a partition of 4 parts",
        whatif(g->rb, "4", "--partition",
               put("bad6", "# x; parts 4; y\n0 7\n"), NULL));
  fails(2, "--partition scores a partition on one cycle",
        whatif(g->rb, "3:5", "--partition", file("rb.part"), NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rebalance),
      cmocka_unit_test(test_grid),
      cmocka_unit_test(test_horizon_short),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_given_partition),
      cmocka_unit_test(test_given_partition_errors),
      cmocka_unit_test(test_plot),
  };
  return cmocka_run_group_tests(tests, setup_group, teardown_group);
}
