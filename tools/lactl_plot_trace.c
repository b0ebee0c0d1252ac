/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_plot_trace.c: `lactl plot APP [CYCLE] --rank R`: one rank's
 * per-element trace as SVG: the decoded (reconstructed) values as a line
 * and, with --raw, the measured values as dots beneath it; with robust
 * weights the measured decoded values drawn light and the interfered
 * elements marked; axes with ticks and labels, a title naming app, rank,
 * cycle, compaction mode and error.
 *
 * Long traces are decimated per pixel column (minimum and maximum kept), so
 * the file stays small and the picture shows every extreme. Unless
 * --full-range, the value axis stops at 1.5x the 99.5th percentile and the
 * values above are marked at the top edge and counted.
 *
 * Deliberately not here: the command line and the data source
 * (lactl_plot.c), the SVG primitives (lactl_svg.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "la_client_internal.h"
#include "lactl_plot.h"
#include "lactl_svg.h"

/* Trace figure geometry (px). */
#define TW 960
#define TH 540
#define ML 96 /* left margin: y tick labels and axis label */
#define MR 28
#define MT 104 /* title, subtitle (2 lines), legend, note on clipped values */
#define SUB_Y 42 /* the subtitle's first baseline */
#define LEGEND_Y 78 /* the legend's baseline */
#define NOTE_Y 96   /* the note's baseline: a row of its own below the legend */
#define TEXT_W (TW - 24) /* the widest a title or subtitle line may be */
#define MB 64

/* One trace figure being drawn. */
typedef struct {
  FILE *f;
  la_traceset_t *t;
  uint32_t r;
  uint64_t n;            /* elements */
  double *y;             /* the line: decoded values or robust weights */
  double *x;             /* --raw: measured values (NULL without) */
  double *m;             /* with robust weights: the measured decoded values */
  uint64_t n_int;        /* elements interfered with (robust weights) */
  double int_share;      /* their share of the measured time */
  double hi;             /* top of the values shown */
  double full_hi;        /* top of all values */
  uint64_t n_clipped;    /* values above hi, not shown */
  double ylo, yhi, xmax; /* the axes' ranges */
  int pw, ph;            /* plot area (px) */
  int decimate;          /* min/max per pixel column */
} trace_fig_t;

/* x and y of element index i and value v in the plot area. */
static double px(const trace_fig_t *p, double i) {
  return ML + i / p->xmax * p->pw;
}

static double py(const trace_fig_t *p, double v) {
  return MT + p->ph - (v - p->ylo) / (p->yhi - p->ylo) * p->ph;
}

/* ----------------------------------------------------------------- data */

/* The measured decoded values m[] of a rank whose set serves robust
 * weights y[], and the elements interfered with: measured above the
 * robust weight beyond the estimator's default band (25% and two timer
 * steps). Returns m (malloc'ed; NULL when the set serves measured values
 * or on no memory), the count and the interfered share of the measured
 * time. */
static double *interfered(la_traceset_t *t, uint32_t r, const double *y,
                          uint64_t n, uint64_t *count, double *share) {
  *count = 0;
  *share = 0;
  if (la_traceset_weights_kind(t) != LA_WEIGHTS_ROBUST) return NULL;
  double *m = malloc((n ? n : 1) * sizeof *m);
  if (!m) return NULL;
  la_traceset_set_weights(t, LA_WEIGHTS_MEASURED);
  la_traceset_rank_weights(t, r, m);
  la_traceset_set_weights(t, LA_WEIGHTS_ROBUST);
  double res = la_traceset_rank_timer_res(t, r), over = 0, total = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (!isfinite(m[i])) continue;
    total += m[i];
    if (isfinite(y[i]) && m[i] > y[i] * 1.25 + 2 * res) {
      (*count)++;
      over += m[i] - y[i];
    }
  }
  *share = total > 0 ? over / total : 0;
  return m;
}

/* Reads n little-endian doubles from path. */
static int read_raw(const char *path, uint64_t n, double **out) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "lactl plot: --raw %s: %s\n", path, strerror(errno));
    return LACTL_FAIL;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || (uint64_t)sb.st_size != 8 * n) {
    fprintf(stderr,
            "lactl plot: --raw %s holds %lld bytes, but the trace has %llu "
            "elements (%llu bytes of doubles): not this rank's raw file\n",
            path, (long long)sb.st_size, (unsigned long long)n,
            (unsigned long long)(8 * n));
    fclose(f);
    return LACTL_FAIL;
  }
  double *x = malloc((n ? n : 1) * sizeof *x);
  unsigned char b[8];
  for (uint64_t i = 0; x && i < n; i++) {
    if (fread(b, 1, 8, f) != 8) {
      free(x);
      x = NULL;
      break;
    }
    uint64_t u = 0;
    for (int k = 7; k >= 0; k--) u = u << 8 | b[k];
    memcpy(&x[i], &u, 8);
  }
  fclose(f);
  if (!x) {
    fprintf(stderr, "lactl plot: --raw %s: cannot read it\n", path);
    return LACTL_FAIL;
  }
  *out = x;
  return LACTL_OK;
}

/* The values to draw: the line (y, in the weights asked for), the raw
 * values (x) and, with robust weights, the measured ones beside them (m,
 * not in the scale). Returns LACTL_OK or LACTL_FAIL after a message. */
static int trace_gather(trace_fig_t *p, const lactl_trace_opts_t *o,
                        const char *raw_path) {
  p->r = o->rank;
  p->n = la_traceset_rank_elements(p->t, p->r);
  p->y = malloc((p->n ? p->n : 1) * sizeof *p->y);
  if (!p->y) {
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  if (o->kind >= 0) la_traceset_set_weights(p->t, o->kind);
  la_traceset_rank_weights(p->t, p->r, p->y);
  if (raw_path && read_raw(raw_path, p->n, &p->x)) return LACTL_FAIL;
  p->m = interfered(p->t, p->r, p->y, p->n, &p->n_int, &p->int_share);
  return LACTL_OK;
}

/* ---------------------------------------------------------------- scale */

/* Element i's line or raw value lies above v. */
static int above(const trace_fig_t *p, uint64_t i, double v) {
  return (isfinite(p->y[i]) && p->y[i] > v) ||
         (p->x && isfinite(p->x[i]) && p->x[i] > v);
}

/* A few outliers (a cell preempted by the OS) would flatten everything
 * else: the axis stops at 1.5x the 99.5th percentile of lo..hi's values
 * and what lies above is counted (p->n_clipped) to be marked at the top
 * edge. Returns the top of the axis. */
static double trace_clip(trace_fig_t *p, double lo, double hi) {
  const uint64_t n = p->n;
  double *v = malloc(2 * n * sizeof *v);
  size_t k = 0;
  for (uint64_t i = 0; v && i < n; i++) {
    if (isfinite(p->y[i])) v[k++] = p->y[i];
    if (p->x && isfinite(p->x[i])) v[k++] = p->x[i];
  }
  if (v && k > 100) {
    qsort(v, k, sizeof *v, lactl_svg_cmp_double);
    double cap = 1.5 * v[(size_t)(0.995 * (double)(k - 1))];
    if (cap > lo && hi > cap * 1.05) {
      hi = cap;
      for (uint64_t i = 0; i < n; i++) p->n_clipped += above(p, i, hi);
    }
  }
  free(v);
  return hi;
}

/* The value range over what is drawn, clipped unless full_range, padded,
 * starting at 0 when 0 is near. */
static void trace_scale(trace_fig_t *p, int full_range) {
  double lo = INFINITY, hi = -INFINITY;
  for (uint64_t i = 0; i < p->n; i++) {
    if (isfinite(p->y[i])) lo = fmin(lo, p->y[i]), hi = fmax(hi, p->y[i]);
    if (p->x && isfinite(p->x[i]))
      lo = fmin(lo, p->x[i]), hi = fmax(hi, p->x[i]);
  }
  if (!(lo <= hi)) lo = 0, hi = 1;
  p->full_hi = hi;
  if (!full_range && p->n > 100) hi = trace_clip(p, lo, hi);
  p->hi = hi;
  if (lo > 0 && lo < 0.25 * hi) lo = 0; /* start at 0 when it is near */
  double pad = (hi - lo) * 0.05;
  if (pad == 0) pad = fabs(hi) > 0 ? fabs(hi) * 0.1 : 1;
  p->ylo = lo == 0 ? 0 : lo - pad;
  p->yhi = hi + pad;
  p->xmax = p->n > 1 ? (double)(p->n - 1) : 1;
  p->pw = TW - ML - MR;
  p->ph = TH - MT - MB;
  p->decimate = p->n > (uint64_t)(2 * p->pw);
}

/* ---------------------------------------------------------------- frame */

/* The document's head, the title (app, rank, cycle, state), the subtitle
 * (elements, compaction, size, error; robust weights and interference) and
 * the note on clipped values. */
static void trace_title(const trace_fig_t *p) {
  la_traceset_t *t = p->t;
  const la_trace_t *tr = la__traceset_trace(t, p->r);
  la_compact_params_t cp;
  char spec[96] = "?", title[512], sub[512], b1[32], b2[32], b3[32];
  if (tr) {
    la_trace_params(tr, &cp);
    if (la_compact_spec_format(&cp, spec, sizeof spec) < 0)
      snprintf(spec, sizeof spec, "%s", la_compact_mode_name(cp.mode));
  }
  double emax = NAN, ecv = NAN;
  size_t bytes = 0;
  la_traceset_rank_error(t, p->r, &emax, NULL, &ecv, &bytes);
  snprintf(title, sizeof title, "%s: rank %u, cycle %llu (%s)",
           la_traceset_app_id(t), p->r,
           (unsigned long long)la_traceset_cycle(t),
           lactl_state_name(lactl_set_state(t)));
  snprintf(sub, sizeof sub,
           "%llu elements, mode %s, %zu bytes (%sx smaller), achieved max "
           "|err| %s %s, CV %s",
           (unsigned long long)p->n, spec, bytes,
           lactl_fmt_ratio(bytes ? 8.0 * (double)p->n / (double)bytes : NAN, b1,
                           sizeof b1),
           lactl_fmt_num(emax, 3, b2, sizeof b2), la_traceset_unit(t),
           lactl_fmt_num(ecv, 3, b3, sizeof b3));
  if (p->m) {
    size_t l = strlen(sub);
    snprintf(sub + l, sizeof sub - l,
             "; robust weights, %llu element%s interfered with (%.1f%% of "
             "the measured time)",
             (unsigned long long)p->n_int, p->n_int == 1 ? "" : "s",
             100 * p->int_share);
  }
  lactl_svg_begin(p->f, TW, TH, title);
  lactl_svg_fit(p->f, TW / 2.0, 24, TEXT_W, 16, 1, 14, "font-weight=\"bold\"",
                title);
  lactl_svg_fit(p->f, TW / 2.0, SUB_Y, TEXT_W, 11, 2, 14,
                "fill=\"#444\" class=\"subtitle\"", sub);
  if (p->n_clipped) {
    char note[200], b4[32], b5[32];
    snprintf(note, sizeof note,
             "\xe2\x96\xb2 %llu value%s above %s %s not "
             "shown (max %s; --full-range)",
             (unsigned long long)p->n_clipped, p->n_clipped == 1 ? "" : "s",
             lactl_fmt_num(p->hi, 3, b4, sizeof b4), la_traceset_unit(t),
             lactl_fmt_num(p->full_hi, 3, b5, sizeof b5));
    lactl_svg_label(p->f, ML, NOTE_Y, "start",
                    "fill=\"#b2182b\" font-size=\"11\" class=\"note\"", note);
  }
}

/* Grid lines, the frame, ticks with their labels and the axis labels. */
static void trace_axes(const trace_fig_t *p) {
  FILE *f = p->f;
  const int pw = p->pw, ph = p->ph;
  double ystep, yfirst, xstep, xfirst;
  int nyt = lactl_svg_ticks(p->ylo, p->yhi, 6, &yfirst, &ystep);
  int nxt = lactl_svg_ticks(0, p->xmax, 8, &xfirst, &xstep);
  fprintf(f, "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
  for (int i = 0; i < nyt; i++)
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ML,
            py(p, yfirst + i * ystep), ML + pw, py(p, yfirst + i * ystep));
  fprintf(f,
          "</g>\n<g stroke=\"#333\" stroke-width=\"1\" fill=\"none\">\n"
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
          ML, MT, pw, ph);
  for (int i = 0; i < nxt; i++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
            px(p, xfirst + i * xstep), MT + ph, px(p, xfirst + i * xstep),
            MT + ph + 5);
  for (int i = 0; i < nyt; i++)
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ML - 5,
            py(p, yfirst + i * ystep), ML, py(p, yfirst + i * ystep));
  fprintf(f, "</g>\n");
  for (int i = 0; i < nxt; i++) {
    char s[32];
    lactl_svg_tick_text(xfirst + i * xstep, xstep, s, sizeof s);
    lactl_svg_label(f, px(p, xfirst + i * xstep), MT + ph + 19, "middle", NULL,
                    s);
  }
  for (int i = 0; i < nyt; i++) {
    char s[32];
    lactl_svg_tick_text(yfirst + i * ystep, ystep, s, sizeof s);
    lactl_svg_label(f, ML - 8, py(p, yfirst + i * ystep) + 4, "end", NULL, s);
  }
  const char *unit = la_traceset_unit(p->t), *metric = la_traceset_metric(p->t);
  char xl[64], yl[300], rot[96];
  snprintf(xl, sizeof xl, "element index (rank %u)", p->r);
  snprintf(yl, sizeof yl, "%s%s%s%s", *metric ? metric : "value",
           *unit ? " (" : "", unit, *unit ? ")" : "");
  lactl_svg_label(f, ML + pw / 2.0, TH - 18, "middle", NULL, xl);
  snprintf(rot, sizeof rot, "transform=\"rotate(-90 %d %.1f)\"", 22,
           MT + ph / 2.0);
  lactl_svg_label(f, 22, MT + ph / 2.0, "middle", rot, yl);
}

/* --------------------------------------------------------------- series */

/* For pixel column c of cols: the index range [c*n/cols, (c+1)*n/cols).
 * Used when n is larger than what a line can show. */
static void column_range(uint64_t n, int cols, int c, uint64_t *a,
                         uint64_t *b) {
  *a = (uint64_t)((double)n * c / cols);
  *b = (uint64_t)((double)n * (c + 1) / cols);
  if (*b > n) *b = n;
}

/* The raw values as dots: every one up to 5000 elements, else the minimum
 * and maximum of each pixel column. */
static void trace_raw_dots(const trace_fig_t *p) {
  FILE *f = p->f;
  const double *x = p->x;
  fprintf(f, "<g fill=\"#e6550d\" fill-opacity=\"0.55\" class=\"measured\">\n");
  if (p->n <= 5000) {
    for (uint64_t i = 0; i < p->n; i++)
      if (isfinite(x[i]))
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.8\"/>\n",
                px(p, (double)i), py(p, x[i]));
  } else {
    for (int c = 0; c < p->pw; c++) {
      uint64_t a, b;
      column_range(p->n, p->pw, c, &a, &b);
      double mn = INFINITY, mx = -INFINITY;
      for (uint64_t i = a; i < b; i++)
        if (isfinite(x[i])) mn = fmin(mn, x[i]), mx = fmax(mx, x[i]);
      if (mn > mx) continue;
      fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\"/>\n", ML + c + 0.5,
              py(p, mn));
      if (mx > mn)
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\"/>\n",
                ML + c + 0.5, py(p, mx));
    }
  }
  fprintf(f, "</g>\n");
}

/* The measured decoded values beside robust weights: a light line through
 * each pixel column's maximum, beneath the robust line. */
static void trace_measured_line(const trace_fig_t *p) {
  FILE *f = p->f;
  fprintf(f,
          "<polyline class=\"measured-decoded\" fill=\"none\" "
          "stroke=\"#b0b0b0\" stroke-width=\"1\" points=\"");
  int km = 0;
  for (int c = 0; c < p->pw; c++) {
    uint64_t a, b;
    column_range(p->n, p->pw, c, &a, &b);
    double mx = -INFINITY;
    for (uint64_t i = a; i < b; i++)
      if (isfinite(p->m[i]) && p->m[i] > mx) mx = p->m[i];
    if (mx > -INFINITY)
      fprintf(f, "%s%.1f,%.1f", km++ % 8 ? " " : "\n", ML + c + 0.5,
              py(p, fmin(mx, p->yhi)));
  }
  if (km == 0) fprintf(f, "%d,%d", ML, MT + p->ph);
  fprintf(f, "\"/>\n");
}

/* The line: every value, or each pixel column's minimum and maximum in
 * index order when decimated. */
static void trace_line(const trace_fig_t *p) {
  FILE *f = p->f;
  const double *y = p->y;
  fprintf(f,
          "<polyline class=\"decoded\" fill=\"none\" stroke=\"#08519c\" "
          "stroke-width=\"1.6\" stroke-linejoin=\"round\" points=\"");
  int k = 0;
  if (!p->decimate) {
    for (uint64_t i = 0; i < p->n; i++)
      if (isfinite(y[i]))
        fprintf(f, "%s%.1f,%.1f", k++ % 8 ? " " : "\n", px(p, (double)i),
                py(p, y[i]));
  } else {
    for (int c = 0; c < p->pw; c++) {
      uint64_t a, b, imn = 0, imx = 0;
      column_range(p->n, p->pw, c, &a, &b);
      double mn = INFINITY, mx = -INFINITY;
      for (uint64_t i = a; i < b; i++) {
        if (!isfinite(y[i])) continue;
        if (y[i] < mn) mn = y[i], imn = i;
        if (y[i] > mx) mx = y[i], imx = i;
      }
      if (mn > mx) continue;
      double v1 = imn <= imx ? mn : mx, v2 = imn <= imx ? mx : mn;
      fprintf(f, "%s%.1f,%.1f %.1f,%.1f", k++ % 4 ? " " : "\n", ML + c + 0.5,
              py(p, v1), ML + c + 0.5, py(p, v2));
    }
  }
  if (k == 0) fprintf(f, "%d,%d", ML, MT + p->ph); /* keep points non-empty */
  fprintf(f, "\"/>\n");
}

/* The data, clipped to the plot area: dots (measured) beneath the lines. */
static void trace_series(const trace_fig_t *p) {
  fprintf(p->f,
          "<clipPath id=\"area\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
          "height=\"%d\"/></clipPath>\n<g clip-path=\"url(#area)\">\n",
          ML, MT, p->pw, p->ph);
  if (p->x) trace_raw_dots(p);
  if (p->m) trace_measured_line(p);
  trace_line(p);
  fprintf(p->f, "</g>\n");
}

/* Marks above the area: interfered elements (a triangle at the measured
 * value) and clipped values (a triangle at the top edge), at most one per
 * 3 px. */
static void trace_marks(const trace_fig_t *p) {
  FILE *f = p->f;
  if (p->m && p->n_int) {
    fprintf(f, "<g fill=\"#e6550d\" class=\"interfered\">\n");
    int last = -10;
    double res = la_traceset_rank_timer_res(p->t, p->r);
    for (uint64_t i = 0; i < p->n; i++) {
      if (!(isfinite(p->m[i]) && isfinite(p->y[i]) &&
            p->m[i] > p->y[i] * 1.25 + 2 * res))
        continue;
      int x = (int)px(p, (double)i);
      if (x - last < 3) continue;
      last = x;
      fprintf(f, "<path d=\"M%d,%.1f l-3,-6 h6 z\"/>\n", x,
              py(p, fmin(p->m[i], p->yhi)) + 6);
    }
    fprintf(f, "</g>\n");
  }
  if (p->n_clipped) {
    fprintf(f, "<g fill=\"#b2182b\" class=\"clipped\">\n");
    int last = -10;
    for (uint64_t i = 0; i < p->n; i++) {
      if (!above(p, i, p->hi)) continue;
      int x = (int)px(p, (double)i);
      if (x - last < 3) continue;
      last = x;
      fprintf(f, "<path d=\"M%d,%d l-4,7 h8 z\"/>\n", x, MT);
    }
    fprintf(f, "</g>\n");
  }
}

/* The legend, top right inside the margin, on its own row between the
 * subtitle and the note on clipped values. */
static void trace_legend(const trace_fig_t *p) {
  FILE *f = p->f;
  double lx = ML + p->pw - 250, ly = LEGEND_Y;
  fprintf(f, "<g class=\"legend\">\n");
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"#08519c\" stroke-width=\"2\"/>\n",
          lx, ly - 4, lx + 22, ly - 4);
  lactl_svg_label(f, lx + 28, ly, "start", NULL,
                  p->m ? (p->decimate ? "robust weight (min/max per pixel)"
                                      : "robust weight")
                       : (p->decimate ? "decoded (min/max per pixel)"
                                      : "decoded (reconstructed)"));
  if (p->m) {
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#b0b0b0\" stroke-width=\"2\"/>\n"
            "<path d=\"M%.1f,%.1f l-3,-6 h6 z\" fill=\"#e6550d\"/>\n",
            lx - 300, ly - 4, lx - 278, ly - 4, lx - 150, ly);
    lactl_svg_label(f, lx - 272, ly, "start", NULL, "measured");
    lactl_svg_label(f, lx - 142, ly, "start", NULL, "interfered");
  }
  if (p->x) {
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#e6550d\" "
            "fill-opacity=\"0.7\"/>\n",
            lx - (p->m ? 420 : 150), ly - 4);
    lactl_svg_label(f, lx - (p->m ? 412 : 142), ly, "start", NULL,
                    "measured (raw)");
  }
  fprintf(f, "</g>\n");
}

int lactl_plot_trace(FILE *f, la_traceset_t *t, const lactl_trace_opts_t *o,
                     const char *raw_path) {
  trace_fig_t p = {.f = f, .t = t};
  int rc = trace_gather(&p, o, raw_path);
  if (rc == LACTL_OK) {
    trace_scale(&p, o->full_range);
    trace_title(&p);
    trace_axes(&p);
    trace_series(&p);
    trace_marks(&p);
    trace_legend(&p);
    fprintf(f, "</svg>\n");
  }
  free(p.m);
  free(p.x);
  free(p.y);
  return rc;
}
