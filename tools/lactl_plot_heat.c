/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_plot_heat.c: `lactl plot APP --heatmap`: the ranks x cycles heat
 * map of the load as SVG. Each cell is the rank's total divided by the mean
 * total of its cycle, on a diverging color scale around 1.0 (log scale: 1/2
 * and 2 are equally far from white), missing ranks hatched grey, with a
 * legend and the per-cycle imbalance (max/mean) as bars above. Robust
 * totals are used where every set serves robust weights. Bounded whatever
 * the ranks and cycles: beyond 210 ranks or 360 cycles the cells are
 * binned (lactl_bin.h), each bin showing its most extreme ratio (furthest
 * from the mean on the log scale, so a hot or idle rank is never averaged
 * away) and hatched when a rank of it is missing, each bar the worst
 * imbalance of its cycles; beyond 20000 bins they are one embedded PNG.
 *
 * Deliberately not here: the command line and the data source
 * (lactl_plot.c), the SVG primitives (lactl_svg.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_bin.h"
#include "lactl_plot.h"
#include "lactl_png.h"
#include "lactl_svg.h"

/* Most rank rows and cycle columns drawn (2 px each at least); beyond,
 * bins. Beyond LA__HEAT_RECTS bins, one image instead of rects. */
#define LA__HEAT_ROWS 210
#define LA__HEAT_COLS 360
#define LA__HEAT_RECTS 20000

/* One heat map being drawn. */
typedef struct {
  FILE *f;
  const char *app;
  lactl_cycle_t *cy; /* the cycles, nc of them */
  size_t nc;
  uint32_t np; /* ranks: the largest nprocs reported */
  double *tot; /* [cycle * np + rank]: total, then ratio to the mean;
                  NaN: missing */
  double *imb; /* [cycle]: imbalance (max/mean), NaN: unknown */
  int robust;  /* every set served robust weights */
  char unit[64], metric[160];
  double imax;        /* worst imbalance (at least 1) */
  size_t imax_c;      /* its cycle */
  double lm;          /* log of the scale's end M: it spans 1/M..M */
  int saturated;      /* some cells lie beyond the scale */
  uint32_t bc, br;    /* cycle and rank bins (nc, np when not binned) */
  double *bv;         /* [rank bin * bc + cycle bin]: the bin's ratio */
  uint8_t *bmiss;     /* same index: a rank of the bin is missing */
  double *bimb;       /* [cycle bin]: the worst imbalance of its cycles */
  int cw, ch;         /* bin size (px) */
  int ml, mt, gw, gh; /* the map's left, top, width, height (px) */
  int lh;             /* legend height (px) */
} heat_fig_t;

/* ----------------------------------------------------------------- data */

/* Totals (robust where the set serves robust weights) and imbalance of
 * cycle c from its set t. */
static void heat_cycle_totals(heat_fig_t *h, size_t c, la_traceset_t *t) {
  const uint32_t np = h->np, tn = la_traceset_nprocs(t);
  int rb = la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST;
  for (uint32_t r = 0; r < tn && r < np; r++)
    if (rb)
      la_traceset_rank_robust_stats(t, r, &h->tot[c * np + r], NULL, NULL);
    else
      la_traceset_rank_stats(t, r, &h->tot[c * np + r], NULL, NULL);
  if ((rb ? la_traceset_robust_imbalance(t, &h->imb[c])
          : la_traceset_imbalance(t, &h->imb[c])) != 0)
    h->imb[c] = NAN;
}

/* Reads every cycle's set: the totals of every (cycle, rank), nprocs (the
 * largest a set reports), metric and unit. Returns LACTL_OK, or LACTL_FAIL
 * after a message. */
static int heat_gather(heat_fig_t *h, lactl_src_t *s, uint64_t first,
                       uint64_t last, int kind) {
  lactl_app_t a;
  int rc = lactl_src_app(s, h->app, &a);
  if (!rc) rc = lactl_src_cycles(s, h->app, first, last, &h->cy, &h->nc);
  if (!rc && h->nc == 0) {
    fprintf(stderr, "lactl plot: %s has no cycle in %llu..%llu\n", h->app,
            (unsigned long long)first, (unsigned long long)last);
    return LACTL_FAIL;
  }
  if (rc) return lactl_src_fail("plot", s, rc);
  h->np = a.nprocs;
  h->robust = 1;
  h->imb = calloc(h->nc, sizeof *h->imb);
  for (size_t c = 0; h->imb && c < h->nc; c++) {
    la_traceset_t *t;
    rc = lactl_src_set(s, h->app, 0, h->cy[c].tag, &t);
    if (rc) return lactl_src_fail("plot", s, rc);
    if (c == 0) {
      snprintf(h->unit, sizeof h->unit, "%s", la_traceset_unit(t));
      snprintf(h->metric, sizeof h->metric, "%s", la_traceset_metric(t));
    }
    if (!h->tot) {
      if (la_traceset_nprocs(t) > h->np) h->np = la_traceset_nprocs(t);
      h->tot = malloc(h->nc * h->np * sizeof *h->tot);
      for (size_t i = 0; h->tot && i < h->nc * h->np; i++) h->tot[i] = NAN;
    }
    if (kind >= 0) la_traceset_set_weights(t, kind);
    if (la_traceset_weights_kind(t) != LA_WEIGHTS_ROBUST) h->robust = 0;
    if (h->tot) heat_cycle_totals(h, c, t);
    la_traceset_free(t);
    if (!h->tot) break;
  }
  if (!h->tot || !h->imb || h->np == 0) {
    fprintf(stderr, "lactl plot: %s\n",
            h->np == 0 ? "no ranks to draw" : "out of memory");
    return LACTL_FAIL;
  }
  return LACTL_OK;
}

/* ---------------------------------------------------------------- scale */

/* The smallest "round" M >= need (the scale spans 1/M .. M). */
static double scale_max(double need) {
  static const double m[] = {1.05, 1.1, 1.2, 1.25, 1.5, 2,  3,
                             4,    5,   10,  20,   50,  100};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (need <= m[i] * (1 + 1e-12)) return m[i];
  return need;
}

/* Ratios to each cycle's mean, the worst imbalance, and the scale: it
 * spans 1/M..M, M covering 98% of the cells (|log ratio| at the 98th
 * percentile), so one extreme cell does not wash out the others; cells
 * beyond saturate and the legend's ends say so. Returns LACTL_OK, or
 * LACTL_FAIL after a message. */
static int heat_scale(heat_fig_t *h) {
  const size_t nc = h->nc;
  const uint32_t np = h->np;
  double *dev = malloc(nc * np * sizeof *dev);
  size_t ndev = 0;
  if (!dev) {
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  h->imax = 1;
  for (size_t c = 0; c < nc; c++) {
    double sum = 0;
    int k = 0;
    for (uint32_t r = 0; r < np; r++)
      if (!isnan(h->tot[c * np + r])) sum += h->tot[c * np + r], k++;
    double mean = k ? sum / k : NAN;
    for (uint32_t r = 0; r < np; r++) {
      double *v = &h->tot[c * np + r];
      if (isnan(*v)) continue;
      *v = mean > 0 ? *v / mean : 1; /* from here on: the ratio */
      dev[ndev++] = *v > 0 ? fabs(log(*v)) : log(100);
    }
    if (isfinite(h->imb[c]) && h->imb[c] > h->imax)
      h->imax = h->imb[c], h->imax_c = c;
  }
  qsort(dev, ndev, sizeof *dev, lactl_svg_cmp_double);
  double dmax = ndev ? dev[ndev - 1] : 0;
  double M =
      scale_max(ndev ? exp(dev[(size_t)(0.98 * (double)(ndev - 1))]) : 1);
  h->lm = log(M);
  h->saturated = dmax > h->lm * (1 + 1e-9);
  free(dev);
  return LACTL_OK;
}

/* The bins the picture draws: at most LA__HEAT_COLS x LA__HEAT_ROWS.
 * Returns LACTL_OK, or LACTL_FAIL after a message. */
static int heat_bin(heat_fig_t *h) {
  lactl_bin_t b;
  if (lactl_bin_init(&b, h->nc, h->np, LA__HEAT_COLS, LA__HEAT_ROWS,
                     LACTL_BIN_EXTREME) != 0) {
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  h->bc = b.bw, h->br = b.bh;
  h->bv = malloc((size_t)h->bc * h->br * sizeof *h->bv);
  h->bmiss = malloc((size_t)h->bc * h->br);
  h->bimb = malloc(h->bc * sizeof *h->bimb);
  if (!h->bv || !h->bmiss || !h->bimb) {
    lactl_bin_free(&b);
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  for (size_t c = 0; c < h->nc; c++)
    for (uint32_t r = 0; r < h->np; r++)
      lactl_bin_add(&b, c, r, h->tot[c * h->np + r]);
  for (uint32_t y = 0; y < h->br; y++)
    for (uint32_t x = 0; x < h->bc; x++) {
      h->bv[(size_t)y * h->bc + x] = lactl_bin_value(&b, x, y);
      h->bmiss[(size_t)y * h->bc + x] = lactl_bin_none(&b, x, y) > 0;
    }
  for (uint32_t x = 0; x < h->bc; x++) h->bimb[x] = NAN;
  for (size_t c = 0; c < h->nc; c++) {
    uint32_t x = (uint32_t)lactl_bin_index(&b, c, 0);
    if (isfinite(h->imb[c]) && !(h->imb[c] <= h->bimb[x]))
      h->bimb[x] = h->imb[c];
  }
  lactl_bin_free(&b);
  return LACTL_OK;
}

/* The first cycle (index) of cycle bin x, and the first rank of rank bin
 * y (bins as lactl_bin_index places them). */
static size_t heat_c0(const heat_fig_t *h, uint32_t x) {
  return (size_t)(((uint64_t)x * h->nc + h->bc - 1) / h->bc);
}
static uint32_t heat_r0(const heat_fig_t *h, uint32_t y) {
  return (uint32_t)(((uint64_t)y * h->np + h->br - 1) / h->br);
}

/* ---------------------------------------------------------------- frame */

/* Cell size and the map's place; returns the document's width and height
 * in *w and *ht. */
static void heat_geometry(heat_fig_t *h, int *w, int *ht) {
  int cw = (int)(720 / h->bc), ch = (int)(420 / h->br);
  h->cw = cw < 2 ? 2 : cw > 60 ? 60 : cw;
  h->ch = ch < 2 ? 2 : ch > 32 ? 32 : ch;
  h->ml = 80;
  h->mt = 170;
  h->gw = h->cw * (int)h->bc;
  h->gh = h->ch * (int)h->br;
  h->lh = h->gh < 160 ? 160 : h->gh;
  *w = h->ml + h->gw + 230 < 640 ? 640 : h->ml + h->gw + 230;
  *ht = h->mt + (h->gh > h->lh + 30 ? h->gh : h->lh + 30) + 60;
}

/* The document's head, the title and subtitle (metric, weights, cycles,
 * ranks, worst imbalance) and the hatch pattern of missing cells. */
static void heat_title(const heat_fig_t *h, int w, int ht) {
  FILE *f = h->f;
  char title[400], sub[600], b1[32];
  snprintf(title, sizeof title, "%s: load per rank and cycle", h->app);
  snprintf(
      sub, sizeof sub,
      "%s%s%s%s, %s, %zu cycles (%llu..%llu), %u ranks; worst "
      "imbalance %s (max/mean) at cycle %llu",
      h->metric[0] ? h->metric : "value", h->unit[0] ? " (" : "", h->unit,
      h->unit[0] ? ")" : "",
      h->robust ? "robust totals (interference removed)" : "measured totals",
      h->nc, (unsigned long long)h->cy[0].tag,
      (unsigned long long)h->cy[h->nc - 1].tag, h->np,
      lactl_fmt_num(h->imax, 4, b1, sizeof b1),
      (unsigned long long)h->cy[h->imax_c].tag);
  lactl_svg_begin(f, w, ht, title);
  lactl_svg_label(f, 16, 24, "start", "font-size=\"16\" font-weight=\"bold\"",
                  title);
  lactl_svg_label(f, 16, 44, "start", "fill=\"#444\"", sub);
  fprintf(f,
          "<defs><pattern id=\"missing\" width=\"6\" height=\"6\" "
          "patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
          "fill=\"#d9d9d9\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" "
          "stroke=\"#969696\" stroke-width=\"2\"/></pattern></defs>\n");
}

/* Imbalance bars above the map: height ~ max/mean - 1, with grid lines and
 * tick labels. */
static void heat_bars(const heat_fig_t *h) {
  FILE *f = h->f;
  const int ml = h->ml, cw = h->cw;
  const int bt = 66, bh = 70; /* top and height of the bar strip */
  double bmax = h->imax > 1 ? h->imax : 1.1, bs, bf;
  int nbt = lactl_svg_ticks(1, bmax, 3, &bf, &bs);
  lactl_svg_label(f, ml - 8, bt - 6, "start", "fill=\"#444\"",
                  "imbalance per cycle (max/mean of rank totals)");
  fprintf(f, "<g stroke=\"#e3e3e3\">\n");
  for (int i = 0; i < nbt; i++) {
    double yv = bt + bh - (bf + i * bs - 1) / (bmax - 1) * bh;
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ml, yv,
            ml + h->gw, yv);
  }
  fprintf(f, "</g>\n");
  for (int i = 0; i < nbt; i++) {
    char t[32];
    double yv = bt + bh - (bf + i * bs - 1) / (bmax - 1) * bh;
    lactl_svg_tick_text(bf + i * bs, bs, t, sizeof t);
    lactl_svg_label(f, ml - 6, yv + 4, "end", "font-size=\"10\"", t);
  }
  fprintf(f, "<g fill=\"#636363\" class=\"imbalance\">\n");
  for (uint32_t x = 0; x < h->bc; x++) {
    char b[32], when[64];
    if (!isfinite(h->bimb[x])) continue;
    double hgt = (h->bimb[x] - 1) / (bmax - 1) * bh;
    if (hgt < 0.5) hgt = 0.5;
    size_t c0 = heat_c0(h, x),
           c1 = x + 1 < h->bc ? heat_c0(h, x + 1) - 1 : h->nc - 1;
    if (c1 > c0)
      snprintf(when, sizeof when, "cycles %llu..%llu, worst",
               (unsigned long long)h->cy[c0].tag,
               (unsigned long long)h->cy[c1].tag);
    else
      snprintf(when, sizeof when, "cycle %llu",
               (unsigned long long)h->cy[c0].tag);
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
            "<title>%s: %s</title></rect>\n",
            ml + x * (double)cw + (cw > 3 ? 0.5 : 0), bt + bh - hgt,
            cw > 3 ? cw - 1.0 : (double)cw, hgt, when,
            lactl_fmt_num(h->bimb[x], 4, b, sizeof b));
  }
  fprintf(f, "</g>\n");
}

/* The map: one rect per bin, rank 0 on top, with a tooltip when bins
 * are cells and there are at most LA__HEAT_RECTS; beyond that many bins,
 * one embedded image (missing bins hatched pixel by pixel); then its
 * frame. */
static int heat_cells(const heat_fig_t *h) {
  FILE *f = h->f;
  const uint32_t bc = h->bc, br = h->br;
  int binned = bc < h->nc || br < h->np;
  int tips = !binned && h->nc * h->np <= LA__HEAT_RECTS;
  int image = (size_t)bc * br > LA__HEAT_RECTS;
  uint8_t *rgb = image ? malloc((size_t)bc * br * 3) : NULL;
  if (image && !rgb) {
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  fprintf(f, "<g class=\"heatmap\" shape-rendering=\"crispEdges\">\n");
  for (uint32_t x = 0; x < bc; x++)
    for (uint32_t y = 0; y < br; y++) {
      size_t i = (size_t)y * bc + x;
      double v = h->bv[i];
      char col[16] = "url(#missing)", b[32];
      if (!h->bmiss[i] && !isnan(v))
        lactl_svg_diverging(v > 0 ? log(v) / h->lm : -1, col, sizeof col);
      if (image) {
        uint8_t *p = rgb + 3 * i;
        if (col[0] == '#')
          lactl_png_hex(col, p);
        else /* the hatch: dark every third diagonal */
          lactl_png_hex((x + y) % 3 ? "#d9d9d9" : "#969696", p);
        continue;
      }
      fprintf(f,
              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
              "fill=\"%s\"",
              h->ml + (int)x * h->cw, h->mt + (int)y * h->ch, h->cw, h->ch,
              col);
      if (!tips)
        fprintf(f, "/>\n");
      else if (isnan(v))
        fprintf(f, "><title>rank %u, cycle %llu: missing</title></rect>\n", y,
                (unsigned long long)h->cy[x].tag);
      else
        fprintf(f, "><title>rank %u, cycle %llu: %s x mean</title></rect>\n", y,
                (unsigned long long)h->cy[x].tag,
                lactl_fmt_num(v, 4, b, sizeof b));
    }
  if (image) {
    int rc =
        lactl_png_svg_image(f, rgb, bc, br, h->ml, h->mt, h->gw, h->gh, NULL);
    free(rgb);
    if (rc) {
      fprintf(stderr, "lactl plot: out of memory\n");
      return LACTL_FAIL;
    }
  }
  fprintf(f,
          "</g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
          "fill=\"none\" stroke=\"#333\"/>\n",
          h->ml, h->mt, h->gw, h->gh);
  if (binned) {
    char note[200];
    snprintf(note, sizeof note,
             "%u ranks x %zu cycles in %u x %u bins: each the most extreme "
             "ratio of its cells, hatched if a rank is missing",
             h->np, h->nc, br, bc);
    lactl_svg_label(f, h->ml, h->mt - 6, "start",
                    "font-size=\"10\" fill=\"#444\"", note);
  }
  return LACTL_OK;
}

/* Axes: cycle tags below (spaced >= 48 px), ranks left (>= 14 px). */
static void heat_axes(const heat_fig_t *h) {
  FILE *f = h->f;
  const int ml = h->ml, mt = h->mt, cw = h->cw, ch = h->ch, gh = h->gh;
  char widest[32];
  snprintf(widest, sizeof widest, "%llu",
           (unsigned long long)h->cy[h->nc - 1].tag);
  int lw_px = 8 * (int)strlen(widest) + 12; /* room for one tag label */
  int every = (lw_px + cw - 1) / cw;
  for (uint32_t c = 0; c < h->bc; c += (uint32_t)every) {
    char t[32];
    snprintf(t, sizeof t, "%llu", (unsigned long long)h->cy[heat_c0(h, c)].tag);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#333\"/>\n",
            ml + (c + 0.5) * cw, mt + gh, ml + (c + 0.5) * cw, mt + gh + 4);
    lactl_svg_label(f, ml + (c + 0.5) * cw, mt + gh + 17, "middle", NULL, t);
  }
  lactl_svg_label(f, ml + h->gw / 2.0, mt + gh + 40, "middle", NULL, "cycle");
  int reach = (14 + ch - 1) / ch;
  for (uint32_t r = 0; r < h->br; r += (uint32_t)reach) {
    char t[16];
    snprintf(t, sizeof t, "%u", heat_r0(h, r));
    lactl_svg_label(f, ml - 6, mt + (r + 0.5) * ch + 4, "end", NULL, t);
  }
  char rot[96];
  snprintf(rot, sizeof rot, "transform=\"rotate(-90 %d %.1f)\"", 24,
           mt + gh / 2.0);
  lactl_svg_label(f, 24, mt + gh / 2.0, "middle", rot, "rank");
}

/* The legend: the color scale, log spaced, 1/M at the bottom, M on top,
 * and the missing-rank swatch. */
static void heat_legend(const heat_fig_t *h) {
  FILE *f = h->f;
  const int lx = h->ml + h->gw + 30, lw = 16, ly = h->mt, lh = h->lh;
  fprintf(f,
          "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" "
          "y2=\"0\">\n");
  for (int i = 0; i <= 8; i++) {
    char col[16];
    lactl_svg_diverging(-1 + i / 4.0, col, sizeof col);
    fprintf(f, "<stop offset=\"%.3f\" stop-color=\"%s\"/>\n", i / 8.0, col);
  }
  fprintf(f,
          "</linearGradient></defs>\n"
          "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"%d\" "
          "height=\"%d\" fill=\"url(#scale)\" stroke=\"#333\"/>\n",
          lx, ly, lw, lh);
  lactl_svg_label(f, lx - 4, ly - 28, "start", "font-weight=\"bold\"",
                  "rank total / cycle mean");
  lactl_svg_label(f, lx - 4, ly - 12, "start", "font-size=\"10\" fill=\"#444\"",
                  "log scale; red above, blue below");
  for (int i = 0; i <= 4; i++) {
    double u = -1 + i / 2.0, yv = ly + lh - (u + 1) / 2 * lh;
    char t[32];
    snprintf(t, sizeof t, "%s%.3g%s",
             h->saturated && i == 0   ? "<= "
             : h->saturated && i == 4 ? ">= "
                                      : "",
             exp(u * h->lm), i == 2 ? " = mean" : "");
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
            "stroke=\"#333\"/>\n",
            lx + lw, yv, lx + lw + 4, yv);
    lactl_svg_label(f, lx + lw + 7, yv + 4, "start", NULL, t);
  }
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" "
          "fill=\"url(#missing)\" stroke=\"#333\"/>\n",
          lx, ly + lh + 12, lw);
  lactl_svg_label(f, lx + lw + 7, ly + lh + 22, "start", NULL, "rank missing");
}

int lactl_plot_heat(FILE *f, lactl_src_t *s, const char *app, uint64_t first,
                    uint64_t last, int kind) {
  heat_fig_t h = {.f = f, .app = app};
  int rc = heat_gather(&h, s, first, last, kind);
  if (rc == LACTL_OK) rc = heat_scale(&h);
  if (rc == LACTL_OK) rc = heat_bin(&h);
  if (rc == LACTL_OK) {
    int w, ht;
    heat_geometry(&h, &w, &ht);
    heat_title(&h, w, ht);
    heat_bars(&h);
    rc = heat_cells(&h);
  }
  if (rc == LACTL_OK) {
    heat_axes(&h);
    heat_legend(&h);
    fprintf(f, "</svg>\n");
  }
  free(h.bv), free(h.bmiss), free(h.bimb);
  free(h.tot);
  free(h.imb);
  free(h.cy);
  return rc;
}
