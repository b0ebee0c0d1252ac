/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_serve.c: what the live view and the static grid picture cost on
 * large sets (make bench-serve).
 *
 * 1. `lactl serve`'s element map (lactl_sv_map_of, the reduction the
 *    page's /api/map answers) of synthetic Trace-Sets of R ranks x E
 *    elements, elements by global index, reduced to 512 x 512 bins by the
 *    mean: the time of the reduction (median of 3) and the bytes of the
 *    answer. Every rank carries the same compacted trace (a synthetic mesh
 *    series, polyline cv=0.05) so that the set fits in memory; each rank is
 *    still decoded on its own, which is the reduction's cost. Sizes: 10^3 x
 *    10^6 and 10^4 x 10^5 (10^9 elements each), LA_SERVE_RANKS and
 *    LA_SERVE_ELEMENTS for one other.
 * 2. `lactl plot --grid` (lactl_plot_grid) of a 960 x 960 x 2 grid on two
 *    ranks (one k-plane each), smooth (mesh) and noisy values: the SVG's
 *    bytes and how long writing it took.
 *
 * Writes argv[1] (build/bench/serve.json) and prints a table; with
 * LA_SERVE_SVG_DIR set, also the two grid pictures into that directory.
 */
#include "bench_args.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "la_client.h"
#include "la_compact.h"
#include "la_test_series.h"
#include "la_trace_msg.h"
#include "../tools/lactl_bin.h"
#include "../tools/lactl_plot.h"
#include "../tools/lactl_serve.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A set of nr ranks of ne elements each, every rank the same trace of x;
 * grid: ranks are k-planes of a gx x gy x nr grid. NULL on failure. */
static la_traceset_t *make_set(uint32_t nr, uint64_t ne, const double *x,
                               const la_compact_result_t *res, int grid,
                               uint64_t gx, uint64_t gy) {
  La__TraceSet ts;
  la__trace_set__init(&ts);
  ts.app_id = "bench-serve";
  ts.cycle_tag = 1;
  ts.nprocs = nr;
  ts.complete = 1;
  ts.metric = "time";
  ts.unit = "ns";
  La__CompactTrace *ct = calloc(nr, sizeof *ct);
  La__CompactTrace **ctp = calloc(nr, sizeof *ctp);
  uint64_t *rel = calloc(nr, sizeof *rel);
  La__GridRank *gr = grid ? calloc(nr, sizeof *gr) : NULL;
  La__GridRank **grp = grid ? calloc(nr, sizeof *grp) : NULL;
  uint64_t *gv = grid ? calloc((size_t)nr * 9, sizeof *gv) : NULL;
  La__SeriesStats st;
  la__series_stats__init(&st);
  st.count = res->stats.count, st.sum = res->stats.sum;
  st.min = res->stats.min, st.max = res->stats.max;
  (void)x;
  if (!ct || !ctp || !rel || (grid && (!gr || !grp || !gv))) return NULL;
  for (uint32_t r = 0; r < nr; r++) {
    la__compact_trace__init(&ct[r]);
    ct[r].seq = r + 1;
    ct[r].app_id = "bench-serve";
    ct[r].rank = r;
    ct[r].cycle_tag = 1;
    ct[r].n_elements = ne;
    ct[r].mode = (La__CompactMode)res->mode;
    ct[r].segments.data = res->bytes;
    ct[r].segments.len = res->len;
    ct[r].stats = &st;
    ctp[r] = &ct[r];
    rel[r] = ne;
    if (grid) {
      la__grid_rank__init(&gr[r]);
      uint64_t *v = gv + 9 * (size_t)r;
      v[0] = gx, v[1] = gy, v[2] = 1, v[3] = 0, v[4] = 0, v[5] = r;
      v[6] = gx, v[7] = gy, v[8] = nr;
      gr[r].rank = r;
      gr[r].dims = v, gr[r].n_dims = 3;
      gr[r].origin = v + 3, gr[r].n_origin = 3;
      gr[r].global = v + 6, gr[r].n_global = 3;
      grp[r] = &gr[r];
    }
  }
  ts.traces = ctp, ts.n_traces = nr;
  ts.rank_elements = rel, ts.n_rank_elements = nr;
  if (grid) ts.grids = grp, ts.n_grids = nr;
  size_t len = la__trace_set__get_packed_size(&ts);
  uint8_t *buf = malloc(len);
  la_traceset_t *t = NULL;
  char why[256];
  if (buf) {
    la__trace_set__pack(&ts, buf);
    if (la_traceset_from_bytes(buf, len, &t, why, sizeof why) != 0) {
      fprintf(stderr, "bench_serve: the synthetic set: %s\n", why);
      t = NULL;
    }
  }
  free(buf), free(ct), free(ctp), free(rel), free(gr), free(grp), free(gv);
  return t;
}

/* One size of part 1; prints its row and appends its JSON. */
static int bench_map(FILE *js, uint32_t nr, uint64_t ne, int first) {
  double *x = malloc(ne * sizeof *x);
  la_compact_result_t res;
  if (!x || la_compact_synth(LA_SYNTH_MESH, ne, 7, x) != 0 ||
      la_test_compact(x, ne, "polyline:cv=0.05", &res) != 0) {
    fprintf(stderr, "bench_serve: cannot make the series\n");
    free(x);
    return -1;
  }
  la_traceset_t *t = make_set(nr, ne, x, &res, 0, 0, 0);
  free(x);
  if (!t) {
    la_compact_result_free(&res);
    return -1;
  }
  lactl_sv_map_opts_t o = {
      .kind = LA_WEIGHTS_MEASURED, .agg = LACTL_BIN_MEAN, .bins = 512};
  double ms[3];
  size_t bytes = 0;
  for (int i = 0; i < 3; i++) {
    char *b = NULL, why[256];
    size_t n = 0;
    FILE *f = open_memstream(&b, &n);
    if (!f || lactl_sv_map_of(t, &o, NULL, f, &ms[i], why, sizeof why) != 0) {
      fprintf(stderr, "bench_serve: %s\n", why);
      return -1;
    }
    fclose(f);
    bytes = n;
    free(b);
  }
  qsort(ms, 3, sizeof *ms, cmp);
  /* the decoding alone, for comparison: every rank's weights */
  double *w = malloc(ne * sizeof *w), dec[3];
  for (int i = 0; w && i < 3; i++) {
    double t0 = now_ms();
    for (uint32_t r = 0; r < nr; r++) la_traceset_rank_weights(t, r, w);
    dec[i] = now_ms() - t0;
  }
  free(w);
  qsort(dec, 3, sizeof *dec, cmp);
  double el = (double)nr * (double)ne;
  printf(
      "  %6u ranks x %8llu elements  reduce %9.1f ms (%.2f ns/element;"
      " decoding alone %.1f ms)  answer %8zu bytes\n",
      nr, (unsigned long long)ne, ms[1], ms[1] * 1e6 / el, dec[1], bytes);
  fprintf(js,
          "%s\n  {\"ranks\": %u, \"elements_per_rank\": %llu, "
          "\"reduce_ms_median\": %.3f, \"ns_per_element\": %.4f, "
          "\"decode_ms_median\": %.3f, \"answer_bytes\": %zu, \"bins\": 512}",
          first ? "" : ",", nr, (unsigned long long)ne, ms[1], ms[1] * 1e6 / el,
          dec[1], bytes);
  la_traceset_free(t);
  la_compact_result_free(&res);
  return 0;
}

/* Part 2: the grid picture of a 960 x 960 slice of a series of kind
 * (mesh: smooth plateaus; noise: every cell different, the PNG's worst
 * case). */
static int bench_grid(FILE *js, int kind, const char *name) {
  const uint64_t gx = 960, gy = 960, ne = gx * gy;
  double *x = malloc(ne * sizeof *x);
  la_compact_result_t res;
  if (!x || la_compact_synth(kind, ne, 9, x) != 0 ||
      la_test_compact(x, ne, "polyline:cv=0.05", &res) != 0) {
    free(x);
    return -1;
  }
  la_traceset_t *t = make_set(2, ne, x, &res, 1, gx, gy);
  free(x);
  if (!t) return -1;
  char *b = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&b, &n);
  double t0 = now_ms();
  int rc = f ? lactl_plot_grid(f, t, LA_WEIGHTS_MEASURED, 2, 1, 1) : -1;
  if (f) fclose(f);
  double ms = now_ms() - t0;
  const char *dir = getenv("LA_SERVE_SVG_DIR"); /* keep the pictures */
  if (dir && b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/grid-%s.svg", dir, name);
    FILE *o = fopen(path, "w");
    if (o) fwrite(b, 1, n, o), fclose(o);
  }
  size_t rects = 0;
  for (const char *p = b; p && (p = strstr(p, "<rect")); p++) rects++;
  printf(
      "  grid 960x960 slice (%s): SVG %zu bytes, %zu <rect>s, written in "
      "%.1f ms\n",
      name, n, rects, ms);
  fprintf(js,
          "%s\n \"grid_960_%s\": {\"svg_bytes\": %zu, \"rects\": %zu, "
          "\"ms\": %.1f}",
          kind == LA_SYNTH_MESH ? "]," : ",", name, n, rects, ms);
  free(b);
  la_traceset_free(t);
  la_compact_result_free(&res);
  return rc;
}

int main(int argc, char **argv) {
  const char *out = la_bench_out_path(argc, argv, 1, "build/bench/serve.json");
  FILE *js = la_bench_open_out(out);
  if (!js) return 1;
  double load[1] = {0};
  FILE *la = fopen("/proc/loadavg", "r");
  if (la && fscanf(la, "%lf", &load[0]) != 1) load[0] = -1;
  if (la) fclose(la);
  printf("lactl serve: element map (512x512 bins, mean), load %.2f\n", load[0]);
  fprintf(js, "{\"load_before\": %.2f, \"maps\": [", load[0]);
  const char *er = getenv("LA_SERVE_RANKS"), *ee = getenv("LA_SERVE_ELEMENTS");
  int rc = 0;
  if (er && ee)
    rc = bench_map(js, (uint32_t)strtoul(er, NULL, 10), strtoull(ee, NULL, 10),
                   1);
  else
    rc = bench_map(js, 1000, 1000000, 1) || bench_map(js, 10000, 100000, 0);
  if (!rc) rc = bench_grid(js, LA_SYNTH_MESH, "mesh");
  if (!rc) rc = bench_grid(js, LA_SYNTH_NOISE, "noise");
  fprintf(js, "}\n");
  fclose(js);
  return rc ? 1 : 0;
}
