/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vtk.c: the cost on the mesh: `lactl export --format vtk` read back
 * by VTK itself, and `lactl plot --grid`'s map of a grid slice.
 *
 * Programs register with the real LocalAgent and GlobalAgent
 * (la_test_agent.h, lossless compaction): a grid application of two ranks
 * whose slabs sit side by side in a larger global grid, and an application
 * with its own (sparse, reversed) global ids. lactl exports one cycle of
 * each as VTK, and tests/scripts/vtk_check.py reads the file with Debian's
 * /usr/bin/python3 and its vtk module: the dimensions (the global grid's
 * cells, or one cell per element), the array names, and every measured
 * value against the values the probes left in the store; cells no rank
 * has are NaN with rank -1. An application with two channels adds
 * measured_NAME/robust_NAME per channel, checked value by value. The script's
 * failure fails the test; only a machine without /usr/bin/python3 or its vtk
 * module skips it. The grid map's SVG is checked for its cells, the empty
 * column and the rank boundaries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_test_agent.h"

#define WAIT_MS 20000
#define PY "/usr/bin/python3"

static la_test_agent_t agent;

static int setup(void **state) {
  la_td_unset_la_env();
  if (la_ta_start(&agent, NULL) != 0) fail_msg("the daemons did not start");
  return 0;
}

static int teardown(void **state) {
  LA_finalize();
  LA_setGlobalIds(NULL, 0);
  LA_setGridOrigin(0, 0, 0, 0, 0, 0);
  unsetenv("LA_APP_ID");
  la_ta_free(&agent);
  return 0;
}

/* Skips when the machine has no Debian Python with VTK. */
static void need_vtk(void) {
  char out[256];
  const char *argv[] = {PY, "-c", "import vtk", NULL};
  if (access(PY, X_OK) != 0 || la_td_run(argv, NULL, 60000, out, sizeof out))
    skip();
}

/* Exports app's cycle as VTK into dir/name.vtk; returns the path. */
static const char *export_vtk(const char *app, const char *cycle,
                              const char *name) {
  static char path[700];
  char lactl[600], err[2048];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(path, sizeof path, "%s/%s.vtk", la_td_dir(agent.st.ga), name);
  const char *argv[] = {lactl, "export", app,  cycle,      "--format",
                        "vtk", "-o",     path, "--global", agent.st.feed_addr,
                        NULL};
  if (la_td_run(argv, NULL, 20000, err, sizeof err) != 0)
    fail_msg("lactl export --format vtk: %s", err);
  return path;
}

/* Runs vtk_check.py on vtk with the expectations in spec (a file). */
static void check_vtk(const char *vtk, const char *spec) {
  char out[4096];
  const char *argv[] = {PY, "tests/scripts/vtk_check.py", vtk, spec, NULL};
  int rc = la_td_run(argv, NULL, 120000, out, sizeof out);
  if (rc != 0 || !strstr(out, "vtk_check: OK"))
    fail_msg("vtk_check.py (%d): %s", rc, out);
  print_message("%s", out);
}

static void probe_all(long n) {
  for (long e = 0; e < n; e++) {
    LA_startProbe(e);
    volatile double x = 0;
    for (int k = 0; k < 50 * (int)(e + 1); k++) x += k;
    LA_stopProbe(e);
  }
}

/* Two 2x3x2 slabs at x = 0 and x = 2 of a 5x3x2 grid: image data of 5x3x2
 * cells, each slab's values at its global cells, column x = 4 empty. */
static void run_grid_app(void) {
  setenv("LA_APP_ID", "vgrid-1", 1);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(LA_setGridOrigin(2 * r, 0, 0, 5, 3, 2), 0);
    assert_int_equal(LA_registerGrid("vgrid", r, 2, 2, 3, 2), 0);
    probe_all(12);
    assert_int_equal(LA_dataXferTagged(7), 0);
    LA_finalize();
  }
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* lactl plot --grid: slice k=1 of the same grid: 5x3 cells, the column
 * no rank has in grey, one rank boundary (3 edges) between the slabs. */
static void test_plot_grid(void **state) {
  run_grid_app();
  char lactl[600], svg[700], err[2048];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(svg, sizeof svg, "%s/grid.svg", la_td_dir(agent.st.ga));
  const char *argv[] = {lactl,    "plot",    "vgrid-1",   "7",
                        "--grid", "--slice", "k=1",       "-o",
                        svg,      "--db",    agent.st.db, NULL};
  if (la_td_run(argv, NULL, 20000, err, sizeof err) != 0)
    fail_msg("lactl plot --grid: %s", err);
  FILE *f = fopen(svg, "r");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  assert_non_null(strstr(buf, "slice k=1"));
  assert_int_equal(count(buf, "<rect x=") - 7, 15); /* frame + legend: 7 */
  assert_int_equal(count(buf, "fill=\"#bdbdbd\""), 3 + 1); /* + legend */
  assert_int_equal(count(buf, "<line "), 1 + 1); /* slabs, and grey column */
  /* a grid that is not: refused with the way out */
  const char *bad[] = {lactl, "plot", "vgrid-1",   "--grid", "--slice",
                       "k=2", "--db", agent.st.db, NULL};
  assert_int_equal(la_td_run(bad, NULL, 20000, err, sizeof err), 1);
  assert_non_null(strstr(err, "k=2: the grid has 2"));
}

/* lactl plot --grid of a slice of 1000x8 cells (8000 > the 4096 bins
 * drawn as rects): the cells binned to the map's 760 pixels across by
 * the mean, drawn as one embedded PNG of 760x8 pixels that decodes, with
 * every bin coloured (rank 1 has the whole slice) and the binning said;
 * a few rects (frame, legend) whatever the cell count. */
static void test_plot_grid_large(void **state) {
  setenv("LA_APP_ID", "vbig-1", 1);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(LA_setGridOrigin(0, 0, r, 1000, 8, 2), 0);
    assert_int_equal(LA_registerGrid("vbig", r, 2, 1000, 8, 1), 0);
    for (long e = 0; e < 8000; e++) {
      LA_startProbe(e);
      volatile double x = 0;
      for (int k = 0; k < 40 * (1 + (int)(e % 1000) / 250); k++) x += k;
      LA_stopProbe(e);
    }
    assert_int_equal(LA_dataXferTagged(3), 0);
    LA_finalize();
  }
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  char lactl[600], svg[700], err[2048];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(svg, sizeof svg, "%s/big.svg", la_td_dir(agent.st.ga));
  const char *argv[] = {lactl, "plot", "vbig-1", "3",    "--grid",    "--slice",
                        "k=1", "-o",   svg,      "--db", agent.st.db, NULL};
  if (la_td_run(argv, NULL, 20000, err, sizeof err) != 0)
    fail_msg("lactl plot --grid: %s", err);
  FILE *f = fopen(svg, "r");
  assert_non_null(f);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  assert_true(n < 200000); /* 8000 cells as rects were about 600 KB */
  assert_non_null(strstr(buf,
                         "1000x8 cells shown as 760x8 bins, each the "
                         "mean of its cells"));
  assert_int_equal(count(buf, "<image "), 1);
  assert_true(count(buf, "<rect ") < 12);
  char out[2048];
  const char *py[] = {
      PY, "-c",
      "import sys, base64, struct, zlib, xml.dom.minidom as m\n"
      "d = m.parse(sys.argv[1])\n"
      "im = d.getElementsByTagName('image')\n"
      "assert len(im) == 1\n"
      "h = im[0].getAttribute('xlink:href')\n"
      "assert h.startswith('data:image/png;base64,')\n"
      "p = base64.b64decode(h.split(',', 1)[1])\n"
      "assert p[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
      "w, ht = struct.unpack('>II', p[16:24])\n"
      "i, idat = 8, b''\n"
      "while i < len(p):\n"
      "  n, = struct.unpack('>I', p[i:i+4]); t = p[i+4:i+8]\n"
      "  assert zlib.crc32(p[i+4:i+8+n]) == struct.unpack('>I', "
      "p[i+8+n:i+12+n])[0]\n"
      "  idat += p[i+8:i+8+n] if t == b'IDAT' else b''; i += 12 + n\n"
      "raw = zlib.decompress(idat)\n"
      "assert len(raw) == ht * (1 + 3 * w)\n"
      "px = set(raw[y*(1+3*w)+1+3*x:y*(1+3*w)+4+3*x] for y in range(ht) "
      "for x in range(w))\n"
      "assert bytes((0xbd, 0xbd, 0xbd)) not in px, 'grey bins'\n"
      "assert len(px) >= 2, px\n"
      "print('png', w, ht, len(px))\n",
      svg, NULL};
  if (la_td_run(py, NULL, 60000, out, sizeof out) != 0)
    fail_msg("the embedded PNG: %s", out);
  assert_non_null(strstr(out, "png 760 8 "));
}

/* lactl plot --heatmap of 220 ranks (more than the 210 rows drawn): the
 * ranks binned to 210 rows, each bin its most extreme ratio, the binning
 * said; the one rank that works 20 times as much as the others is the
 * saturated red bin where it belongs. */
static void test_plot_heat_binned(void **state) {
  setenv("LA_APP_ID", "vheat-1", 1);
  const int np = 220, hot = 100;
  for (int r = 0; r < np; r++) {
    assert_int_equal(LA_register("vheat", r, np, 4), 0);
    for (long e = 0; e < 4; e++) {
      LA_startProbe(e);
      volatile double x = 0;
      for (int k = 0; k < (r == hot ? 40000 : 2000); k++) x += k;
      LA_stopProbe(e);
    }
    assert_int_equal(LA_dataXferTagged(5), 0);
    LA_finalize();
  }
  assert_int_equal(la_ta_wait_traces(&agent, (uint64_t)np, WAIT_MS), 0);
  char lactl[600], svg[700], err[2048];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(svg, sizeof svg, "%s/heat.svg", la_td_dir(agent.st.ga));
  const char *argv[] = {lactl, "plot", "vheat-1",   "--heatmap", "-o",
                        svg,   "--db", agent.st.db, NULL};
  if (la_td_run(argv, NULL, 60000, err, sizeof err) != 0)
    fail_msg("lactl plot --heatmap: %s", err);
  char out[2048];
  const char *py[] = {
      PY, "-c",
      "import sys, xml.dom.minidom as m\n"
      "d = m.parse(sys.argv[1])\n"
      "g = [x for x in d.getElementsByTagName('g') "
      "if x.getAttribute('class') == 'heatmap'][0]\n"
      "r = g.getElementsByTagName('rect')\n"
      "assert len(r) == 210, len(r)\n"
      "t = ' '.join(x.firstChild.data for x in d.getElementsByTagName('text') "
      "if x.firstChild)\n"
      "assert '220 ranks x 1 cycles in 210 x 1 bins: each the most extreme "
      "ratio' in t, t\n"
      "ys = sorted(set(float(x.getAttribute('y')) for x in r))\n"
      "hot = [ys.index(float(x.getAttribute('y'))) for x in r "
      "if x.getAttribute('fill') == '#b2182b']\n"
      "assert 100 * 210 // 220 in hot, hot\n"
      "print('heat ok', hot)\n",
      svg, NULL};
  if (la_td_run(py, NULL, 60000, out, sizeof out) != 0)
    fail_msg("the binned heat map: %s", out);
  print_message("%s", out);
}

/* lactl serve's element map of an application that is not a grid:
 * with every rank's ids (two ranks, ids interleaved and reversed), the
 * elements in id order; each bin the value `lactl export` gives the
 * element of that id (tests/python/serve_map.py). */
static void test_serve_ids(void **state) {
  setenv("LA_APP_ID", "vsid-1", 1);
  for (int r = 0; r < 2; r++) {
    int64_t ids[10];
    for (int e = 0; e < 10; e++) ids[e] = 2 * (9 - e) + r;
    assert_int_equal(LA_setGlobalIds(ids, 10), 0);
    assert_int_equal(LA_register("vsid", r, 2, 10), 0);
    probe_all(10);
    assert_int_equal(LA_dataXferTagged(4), 0);
    LA_finalize();
  }
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  assert_int_equal(
      la_ta_wait_sql(&agent, "SELECT count(*) FROM element_ids", 2, WAIT_MS),
      0);
  char lactl[600], out[4096];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  const char *py[] = {PY,       "tests/python/serve_map.py",
                      lactl,    agent.st.feed_addr,
                      "vsid-1", "id",
                      NULL};
  if (la_td_run(py, NULL, 120000, out, sizeof out) != 0 ||
      !strstr(out, "serve_map: OK vsid-1, 20 elements in id order"))
    fail_msg("serve_map.py: %s", out);
}

static void test_vtk_grid(void **state) {
  need_vtk();
  run_grid_app();
  const char *vtk = export_vtk("vgrid-1", "7", "grid");
  char spec[700];
  snprintf(spec, sizeof spec, "%s/grid.spec", la_td_dir(agent.st.ga));
  FILE *f = fopen(spec, "w");
  assert_non_null(f);
  fprintf(f, "grid 5 3 2\narrays measured robust rank\n");
  for (int r = 0; r < 2; r++) {
    double v[12];
    assert_int_equal(la_ta_values(&agent, "vgrid-1", (uint32_t)r, 7, v, 12), 0);
    for (int e = 0; e < 12; e++) {
      int i = 2 * r + e % 2, j = e / 2 % 3, k = e / 6;
      int at = i + 5 * (j + 3 * k);
      fprintf(f, "v measured %d %.17g\nv rank %d %d\n", at, v[e], at, r);
    }
  }
  for (int j = 0; j < 3; j++)
    for (int k = 0; k < 2; k++) {
      int at = 4 + 5 * (j + 3 * k);
      fprintf(f, "v measured %d nan\nv robust %d nan\nv rank %d -1\n", at, at,
              at);
    }
  fclose(f);
  check_vtk(vtk, spec);
}

/* Ten elements with ids 18, 16, ..., 0: one vertex cell each, in increasing
 * id, GlobalIds beside the values. */
static void test_vtk_ids(void **state) {
  need_vtk();
  int64_t ids[10];
  for (int e = 0; e < 10; e++) ids[e] = 2 * (9 - e);
  setenv("LA_APP_ID", "vids-1", 1);
  assert_int_equal(LA_setGlobalIds(ids, 10), 0);
  assert_int_equal(LA_register("vids", 0, 1, 10), 0);
  probe_all(10);
  assert_int_equal(LA_dataXferTagged(3), 0);
  LA_finalize();
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  assert_int_equal(
      la_ta_wait_sql(&agent, "SELECT count(*) FROM element_ids", 1, WAIT_MS),
      0);
  const char *vtk = export_vtk("vids-1", "3", "ids");
  double v[10];
  assert_int_equal(la_ta_values(&agent, "vids-1", 0, 3, v, 10), 0);
  char spec[700];
  snprintf(spec, sizeof spec, "%s/ids.spec", la_td_dir(agent.st.ga));
  FILE *f = fopen(spec, "w");
  assert_non_null(f);
  fprintf(f, "cells 10\narrays measured robust rank GlobalIds\n");
  for (int i = 0; i < 10; i++)
    fprintf(f, "v GlobalIds %d %d\nv measured %d %.17g\n", i, 2 * i, i,
            v[9 - i]);
  fclose(f);
  check_vtk(vtk, spec);
}

static double chan_value(long e, void *arg) {
  return *(const double *)arg + (double)e;
}
static double chan_zero(long e, void *arg) {
  return 0.0;
}

/* One rank of a 2x3x2 grid with channels "stress" (element e: 10 + e) and
 * "eos" (100 + e), custom probes so the values are exact: the file has
 * the sum and each channel (measured: a custom metric has no robust). */
static void test_vtk_channels(void **state) {
  need_vtk();
  static double base = 10;
  setenv("LA_APP_ID", "vchan-1", 1);
  LA_setCompaction("lossless");
  LA_setMetric("custom");
  LA_setProbeStartFunc(chan_zero, NULL);
  LA_setProbeStopFunc(chan_value, &base);
  assert_int_equal(LA_channel("stress"), 0);
  assert_int_equal(LA_channel("eos"), 1);
  assert_int_equal(LA_registerGrid("vchan", 0, 1, 2, 3, 2), 0);
  for (int ch = 0; ch < 2; ch++) {
    base = ch ? 100 : 10;
    for (long e = 0; e < 12; e++) {
      assert_int_equal(LA_startProbeC(ch, e), 0);
      assert_int_equal(LA_stopProbeC(ch, e), 0);
    }
  }
  assert_int_equal(LA_dataXferTagged(5), 0);
  LA_finalize();
  LA_setMetric(NULL);
  LA_setProbeStartFunc(NULL, NULL);
  LA_setProbeStopFunc(NULL, NULL);
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  const char *vtk = export_vtk("vchan-1", "5", "chan");
  char spec[700];
  snprintf(spec, sizeof spec, "%s/chan.spec", la_td_dir(agent.st.ga));
  FILE *f = fopen(spec, "w");
  assert_non_null(f);
  /* a custom metric has no robust weights: measured ones alone */
  fprintf(f,
          "grid 2 3 2\narrays measured rank measured_stress "
          "measured_eos\n");
  for (int e = 0; e < 12; e++)
    fprintf(f,
            "v measured %d %d\nv measured_stress %d %d\n"
            "v measured_eos %d %d\nv rank %d 0\n",
            e, 110 + 2 * e, e, 10 + e, e, 100 + e, e);
  fclose(f);
  check_vtk(vtk, spec);
}

static int group_setup(void **state) {
  return la_td_prepare();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_plot_grid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plot_grid_large, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plot_heat_binned, setup, teardown),
      cmocka_unit_test_setup_teardown(test_serve_ids, setup, teardown),
      cmocka_unit_test_setup_teardown(test_vtk_grid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_vtk_ids, setup, teardown),
      cmocka_unit_test_setup_teardown(test_vtk_channels, setup, teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, NULL);
}
