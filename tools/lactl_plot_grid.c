/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_plot_grid.c: `lactl plot APP [CYCLE] --grid [--slice k=N]`: the
 * cost on the mesh: a 2-D map of one slice of a grid application's global
 * grid, every rank's cells placed by its origin (LA_setGridOrigin), each
 * cell coloured by its weight relative to the slice's mean on the heat
 * map's diverging scale (blue below, white at, red above; log scale from
 * 1/4 to 4 times the mean), cells no present rank has in grey, rank
 * boundaries drawn, with a legend. Bounded whatever the grid: the cells
 * are binned to at most one bin per pixel by the mean (lactl_bin.h), the
 * bins drawn as rects while there are at most 4096 of them, else as one
 * embedded PNG (lactl_png.h).
 *
 * Robust weights unless --weights measured (or the set lacks them), as the
 * other figures. Deliberately only grids: an unstructured mesh has no
 * picture without its geometry (export it as VTK instead).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_bin.h"
#include "lactl_plot.h"
#include "lactl_png.h"
#include "lactl_svg.h"

#define LA__MAP_PX 760.0 /* the map's larger side, pixels */
/* Up to this many bins, one <rect> each (small grids stay inspectable);
 * beyond, the bins are one embedded PNG image. */
#define LA__MAX_RECTS 4096

int lactl_plot_parse_slice(const char *s, int *axis, uint64_t *at) {
  if (!s || (s[0] != 'i' && s[0] != 'j' && s[0] != 'k') || s[1] != '=')
    return -1;
  *axis = s[0] - 'i';
  return lactl_parse_u64(s + 2, at);
}

/* The global grid of t (the largest extent any rank reports); 0 when a
 * rank is not a grid rank. */
static int la__global(const la_traceset_t *t, uint64_t g[3]) {
  uint32_t np = la_traceset_nprocs(t);
  g[0] = g[1] = g[2] = 0;
  for (uint32_t r = 0; r < np; r++) {
    uint64_t gl[3];
    if (la_traceset_rank_grid(t, r, NULL, NULL, gl) != 0) return 0;
    for (int d = 0; d < 3; d++)
      if (gl[d] > g[d]) g[d] = gl[d];
  }
  return np > 0;
}

int lactl_plot_grid(FILE *f, la_traceset_t *t, int kind, int axis, int have_at,
                    uint64_t at) {
  uint64_t g[3];
  const char *app = la_traceset_app_id(t);
  if (!la__global(t, g)) {
    fprintf(stderr,
            "lactl plot: %s is not a grid application (LA_registerGrid on "
            "every rank); export it with --format vtk\n",
            app);
    return LACTL_FAIL;
  }
  if (!have_at) at = g[axis] / 2;
  if (at >= g[axis]) {
    fprintf(stderr, "lactl plot: --slice %c=%llu: the grid has %llu\n",
            'i' + axis, (unsigned long long)at, (unsigned long long)g[axis]);
    return LACTL_FAIL;
  }
  if (kind >= 0) la_traceset_set_weights(t, kind);
  int ax = axis == 0 ? 1 : 0, ay = axis == 2 ? 1 : 2; /* the plane's axes */
  uint64_t W = g[ax], H = g[ay], nel = la_traceset_elements(t);
  if (W > (1u << 14) || H > (1u << 14)) {
    fprintf(stderr,
            "lactl plot: a slice of %llux%llu cells is too large to "
            "draw (16384 per side); export it with --format vtk\n",
            (unsigned long long)W, (unsigned long long)H);
    return LACTL_FAIL;
  }
  /* the slice's cells, binned to at most one bin per pixel by the mean
   * (lactl_bin.h); a bin's owner is the last rank seen in it */
  lactl_bin_t b;
  double *w = malloc((nel ? nel : 1) * sizeof *w);
  int brc = lactl_bin_init(&b, W, H, (uint32_t)LA__MAP_PX, (uint32_t)LA__MAP_PX,
                           LACTL_BIN_MEAN);
  const uint32_t bw = b.bw, bh = b.bh;
  int32_t *owner = brc ? NULL : malloc((size_t)bw * bh * sizeof *owner);
  if (brc || !owner || !w) {
    free(owner), free(w), lactl_bin_free(&b);
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  for (size_t i = 0; i < (size_t)bw * bh; i++) owner[i] = -1;
  la_traceset_weights(t, w);
  uint64_t off = 0;
  double sum = 0;
  uint64_t nfin = 0;
  for (uint32_t r = 0; r < la_traceset_nprocs(t); r++) {
    uint64_t ne = la_traceset_rank_elements(t, r), d[3], o[3];
    la_traceset_rank_grid(t, r, d, o, NULL);
    for (uint64_t e = 0; e < ne && la_traceset_has_rank(t, r); e++) {
      uint64_t c[3] = {o[0] + e % d[0], o[1] + e / d[0] % d[1],
                       o[2] + e / (d[0] * d[1])};
      if (c[axis] != at || c[ax] >= W || c[ay] >= H) continue;
      uint64_t i = lactl_bin_index(&b, c[ax], c[ay]);
      lactl_bin_add_at(&b, i, w[off + e]);
      owner[i] = (int32_t)r;
      if (isfinite(w[off + e])) sum += w[off + e], nfin++;
    }
    off += ne;
  }
  free(w);
  double mean = nfin ? sum / (double)nfin : 0;
  double px = LA__MAP_PX / (double)(W > H ? W : H);
  double mw = px * (double)W, mh = px * (double)H;
  double qx = mw / bw, qy = mh / bh; /* one bin, px */
  int left = 60, top = 50;
  int width = (int)(left + mw + 170), height = (int)(top + mh + 60);
  char title[400], col[16];
  const char *wk =
      la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST ? "robust" : "measured";
  snprintf(title, sizeof title,
           "%s cycle %llu: %s weight per cell, slice %c=%llu", app,
           (unsigned long long)la_traceset_cycle(t), wk, 'i' + axis,
           (unsigned long long)at);
  lactl_svg_begin(f, width, height, title);
  lactl_svg_label(f, left, 30, "start", "font-size=\"14\"", title);
  if ((uint64_t)bw * bh < W * H) {
    char note[200];
    snprintf(note, sizeof note,
             "%llux%llu cells shown as %ux%u bins, each the mean of its cells",
             (unsigned long long)W, (unsigned long long)H, bw, bh);
    lactl_svg_label(f, left, 45, "start", "font-size=\"10\" fill=\"#444\"",
                    note);
  }
  /* a bin per rect while they are few, else one embedded image */
  int as_image = (uint64_t)bw * bh > LA__MAX_RECTS;
  uint8_t *rgb = as_image ? malloc((size_t)bw * bh * 3) : NULL;
  if (as_image && !rgb) {
    free(owner), lactl_bin_free(&b);
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  fprintf(f, "<g class=\"cells\" shape-rendering=\"crispEdges\">\n");
  for (uint32_t y = 0; y < bh; y++)
    for (uint32_t x = 0; x < bw; x++) {
      double val = lactl_bin_value(&b, x, y);
      if (isfinite(val) && mean > 0 && val > 0)
        lactl_svg_diverging(log2(val / mean) / 2, col, sizeof col);
      else
        snprintf(col, sizeof col, isfinite(val) ? "#2166ac" : "#bdbdbd");
      /* j (or k) grows upwards, as in a plot */
      if (as_image)
        lactl_png_hex(col, rgb + 3 * ((size_t)(bh - 1 - y) * bw + x));
      else
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                "fill=\"%s\"/>\n",
                left + qx * x, top + mh - qy * (y + 1), qx, qy, col);
    }
  if (as_image &&
      lactl_png_svg_image(f, rgb, bw, bh, left, top, mw, mh, NULL) != 0) {
    free(rgb), free(owner), lactl_bin_free(&b);
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  free(rgb);
  /* rank boundaries: edges between bins of different owners, each
   * straight run of them one line */
  for (uint32_t x = 0; x + 1 < bw; x++) /* vertical edges right of x */
    for (uint32_t y = 0; y < bh;) {
      if (owner[x + (size_t)bw * y] == owner[x + 1 + (size_t)bw * y]) {
        y++;
        continue;
      }
      uint32_t y1 = y;
      while (y1 < bh &&
             owner[x + (size_t)bw * y1] != owner[x + 1 + (size_t)bw * y1])
        y1++;
      fprintf(f,
              "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
              "stroke=\"black\"/>\n",
              left + qx * (x + 1), top + mh - qy * y, left + qx * (x + 1),
              top + mh - qy * y1);
      y = y1;
    }
  for (uint32_t y = 0; y + 1 < bh; y++) /* horizontal edges above y */
    for (uint32_t x = 0; x < bw;) {
      if (owner[x + (size_t)bw * y] == owner[x + (size_t)bw * (y + 1)]) {
        x++;
        continue;
      }
      uint32_t x1 = x;
      while (x1 < bw &&
             owner[x1 + (size_t)bw * y] != owner[x1 + (size_t)bw * (y + 1)])
        x1++;
      fprintf(f,
              "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
              "stroke=\"black\"/>\n",
              left + qx * x, top + mh - qy * (y + 1), left + qx * x1,
              top + mh - qy * (y + 1));
      x = x1;
    }
  fprintf(f,
          "</g>\n<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%.2f\" "
          "fill=\"none\" stroke=\"black\"/>\n",
          left, top, mw, mh);
  char lab[80];
  snprintf(lab, sizeof lab, "%c (0..%llu)", 'i' + ax,
           (unsigned long long)W - 1);
  lactl_svg_label(f, left + mw / 2, top + mh + 25, "middle", NULL, lab);
  snprintf(lab, sizeof lab, "%c (0..%llu)", 'i' + ay,
           (unsigned long long)H - 1);
  fprintf(f, "<g transform=\"translate(%d,%.1f) rotate(-90)\">", left - 15,
          top + mh / 2);
  lactl_svg_label(f, 0, 0, "middle", NULL, lab);
  fprintf(f, "</g>\n");
  /* legend: the diverging scale, 1/4 .. 4 times the mean */
  double lx = left + mw + 30, ly = top;
  static const double mult[] = {4, 2, 1, 0.5, 0.25};
  for (int i = 0; i < 5; i++) {
    lactl_svg_diverging(log2(mult[i]) / 2, col, sizeof col);
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"20\" height=\"20\" "
            "fill=\"%s\" stroke=\"black\"/>\n",
            lx, ly + 24 * i, col);
    snprintf(lab, sizeof lab, "%g x mean", mult[i]);
    lactl_svg_label(f, lx + 28, ly + 24 * i + 15, "start", NULL, lab);
  }
  fprintf(f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"20\" height=\"20\" "
          "fill=\"#bdbdbd\" stroke=\"black\"/>\n",
          lx, ly + 24 * 5);
  lactl_svg_label(f, lx + 28, ly + 24 * 5 + 15, "start", NULL, "no data");
  snprintf(lab, sizeof lab, "mean %.4g %s", mean, la_traceset_unit(t));
  lactl_svg_label(f, lx, ly + 24 * 6 + 15, "start", NULL, lab);
  fprintf(f, "</svg>\n");
  free(owner);
  lactl_bin_free(&b);
  return LACTL_OK;
}
