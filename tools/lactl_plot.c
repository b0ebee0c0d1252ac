/* lactl_plot.c: `lactl plot`: hand-written SVG pictures of Trace-Sets.
 *
 *   lactl plot APP [CYCLE|latest] --rank R [--raw FILE|DIR] -o trace.svg
 *     one rank's per-element trace: the decoded (reconstructed) values as a
 *     line and, with --raw (a LA_DUMP_RAW file of little-endian doubles, or
 *     the LA_DUMP_RAW directory), the measured values as dots beneath it,
 *     like the per-element trace figures of the design study; axes with
 *     ticks and labels, a title naming app, rank, cycle, compaction mode and
 *     error.
 *   lactl plot APP --heatmap [--first N] [--last M] -o heat.svg
 *     ranks x cycles heat map of the load: each cell is the rank's total
 *     divided by the mean total of its cycle, on a diverging color scale
 *     around 1.0 (log scale: 1/2 and 2 are equally far from white), missing
 *     ranks hatched grey, with a legend and the per-cycle imbalance
 *     (max/mean) as bars above.
 *
 * No plotting library: the SVG is written by hand (valid XML, text
 * escaped). Long traces are decimated per pixel column (minimum and maximum
 * kept), so the file stays small and the picture shows every extreme. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "la_client_internal.h"
#include "lactl_util.h"

/* Trace figure geometry (px). */
#define TW 960
#define TH 540
#define ML 96 /* left margin: y tick labels and axis label */
#define MR 28
#define MT 78 /* title, subtitle, legend */
#define MB 64

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl plot APP [CYCLE|latest] --rank R [--raw FILE|DIR] "
          "[--full-range] [--weights KIND] "
          "[-o FILE.svg]\n"
          "       lactl plot APP --heatmap [--first N] [--last M] [-o "
          "FILE.svg]\n"
          "                  [--global HOST:PORT | --db FILE]\n"
          "\n"
          "Writes an SVG picture (default: stdout).\n\n"
          "  --rank R            one rank's per-element trace of a cycle "
          "(default: the\n"
          "                      latest): the decoded values as a line\n"
          "  --full-range        show every value; by default the axis stops "
          "at 1.5x the\n"
          "                      99.5th percentile and outliers above are "
          "marked and counted\n"
          "  --raw FILE|DIR      with it, the measured values as dots: a "
          "LA_DUMP_RAW file\n"
          "                      (little-endian doubles) or the LA_DUMP_RAW "
          "directory\n"
          "                      (DIR/APP.rR.cCYCLE.f64)\n"
          "  --weights KIND      robust (default where every rank has them: "
          "the line,\n"
          "                      the scale and the heat map follow them; "
          "measured values\n"
          "                      drawn light, interfered elements marked) or "
          "measured\n"
          "  --heatmap           ranks x cycles map of rank total / cycle "
          "mean (blue:\n"
          "                      below the mean, white: at it, red: above; "
          "grey: missing)\n"
          "  --first N, --last M heat map: only cycles N..M\n"
          "  -o FILE             write to FILE\n" LACTL_COMMON_HELP
          "\nExit status: 0 done, 1 unreachable, not found or unreadable "
          "--raw, 2 usage.\n");
}

/* ------------------------------------------------------------ SVG bits */

/* Text with &, <, >, " escaped. */
static void xml_text(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '&')
      fputs("&amp;", f);
    else if (c == '<')
      fputs("&lt;", f);
    else if (c == '>')
      fputs("&gt;", f);
    else if (c == '"')
      fputs("&quot;", f);
    else if (c < 0x20 && c != '\t' && c != '\n')
      fputc('?', f);
    else
      fputc(c, f);
  }
}

static void svg_begin(FILE *f, int w, int h, const char *title) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
          "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
          "font-size=\"12\">\n<title>",
          w, h, w, h);
  xml_text(f, title);
  fprintf(f, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w,
          h);
}

/* <text> at (x, y) with anchor (start, middle, end) and extra attributes. */
static void svg_label(FILE *f, double x, double y, const char *anchor,
                      const char *attrs, const char *s) {
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y,
          anchor, attrs && *attrs ? " " : "", attrs ? attrs : "");
  xml_text(f, s);
  fputs("</text>\n", f);
}

/* Ticks at "nice" values (1, 2, 5 x 10^k) covering [lo, hi]: *step and the
 * first tick; returns the tick count. */
static int nice_ticks(double lo, double hi, int want, double *first,
                      double *step) {
  double span = hi - lo;
  if (!(span > 0)) span = fabs(hi) > 0 ? fabs(hi) : 1;
  double raw = span / (want > 1 ? want : 1);
  double p = pow(10, floor(log10(raw))), m = raw / p;
  *step = (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  *first = ceil(lo / *step - 1e-9) * *step;
  int n = (int)floor((hi - *first) / *step + 1e-9) + 1;
  return n < 0 ? 0 : n > 50 ? 50 : n;
}

/* A tick label: as many decimals as the step needs, no exponent between
 * 1e-4 and 1e9; "0" for values tiny against the step. */
static void tick_text(double v, double step, char *buf, size_t len) {
  if (fabs(v) < step * 1e-6) v = 0;
  double a = fmax(fabs(v), step);
  if (a >= 1e9 || step < 1e-4) {
    snprintf(buf, len, "%.4g", v);
  } else {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(buf, len, "%.*f", dec, v);
  }
}

/* ----------------------------------------------------------- the trace */

typedef struct {
  const char *app, *raw;
  uint32_t rank;
  int have_rank;
  int full_range; /* --full-range: no clipping of outliers */
  int kind;       /* --weights: LA_WEIGHTS_*, or -1 (the set's default) */
} trace_opts_t;

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

/* Pixel columns of the plot area: for column c, the index range
 * [c*n/cols, (c+1)*n/cols) and its min and max of v (indexes kept to draw
 * them in order). Used when n is larger than what a line can show. */
static void column_range(uint64_t n, int cols, int c, uint64_t *a,
                         uint64_t *b) {
  *a = (uint64_t)((double)n * c / cols);
  *b = (uint64_t)((double)n * (c + 1) / cols);
  if (*b > n) *b = n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int plot_trace(FILE *f, la_traceset_t *t, const trace_opts_t *o,
                      const char *raw_path) {
  uint32_t r = o->rank;
  uint64_t n = la_traceset_rank_elements(t, r);
  double *y = malloc((n ? n : 1) * sizeof *y), *x = NULL;
  if (!y) {
    fprintf(stderr, "lactl plot: out of memory\n");
    return LACTL_FAIL;
  }
  if (o->kind >= 0) la_traceset_set_weights(t, o->kind);
  la_traceset_rank_weights(t, r, y);
  if (raw_path && read_raw(raw_path, n, &x)) {
    free(y);
    return LACTL_FAIL;
  }
  /* robust weights: the measured ones beside them, not in the scale */
  uint64_t n_int = 0;
  double int_share = 0;
  double *m = interfered(t, r, y, n, &n_int, &int_share);
  /* Value range over what is drawn. */
  double lo = INFINITY, hi = -INFINITY;
  for (uint64_t i = 0; i < n; i++) {
    if (isfinite(y[i])) lo = fmin(lo, y[i]), hi = fmax(hi, y[i]);
    if (x && isfinite(x[i])) lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
  }
  if (!(lo <= hi)) lo = 0, hi = 1;
  /* A few outliers (a cell preempted by the OS) would flatten everything
   * else: unless --full-range, the axis stops at 1.5x the 99.5th percentile
   * and what lies above is marked at the top edge and counted. */
  double full_hi = hi;
  uint64_t n_clipped = 0;
  if (!o->full_range && n > 100) {
    double *v = malloc(2 * n * sizeof *v);
    size_t m = 0;
    for (uint64_t i = 0; v && i < n; i++) {
      if (isfinite(y[i])) v[m++] = y[i];
      if (x && isfinite(x[i])) v[m++] = x[i];
    }
    if (v && m > 100) {
      qsort(v, m, sizeof *v, cmp_double);
      double cap = 1.5 * v[(size_t)(0.995 * (double)(m - 1))];
      if (cap > lo && hi > cap * 1.05) {
        hi = cap;
        for (uint64_t i = 0; i < n; i++)
          n_clipped += (isfinite(y[i]) && y[i] > hi) ||
                       (x && isfinite(x[i]) && x[i] > hi);
      }
    }
    free(v);
  }
  if (lo > 0 && lo < 0.25 * hi) lo = 0; /* start at 0 when it is near */
  double pad = (hi - lo) * 0.05;
  if (pad == 0) pad = fabs(hi) > 0 ? fabs(hi) * 0.1 : 1;
  double ylo = lo == 0 ? 0 : lo - pad, yhi = hi + pad;
  double ystep, yfirst, xstep, xfirst;
  int nyt = nice_ticks(ylo, yhi, 6, &yfirst, &ystep);
  double xmax = n > 1 ? (double)(n - 1) : 1;
  int nxt = nice_ticks(0, xmax, 8, &xfirst, &xstep);
  const int pw = TW - ML - MR, ph = TH - MT - MB;
#define PX(i) (ML + (double)(i) / xmax * pw)
#define PY(v) (MT + ph - ((v)-ylo) / (yhi - ylo) * ph)

  /* Title and subtitle. */
  const la_trace_t *tr = la__traceset_trace(t, r);
  la_compact_params_t p;
  char spec[96] = "?", title[512], sub[512], b1[32], b2[32], b3[32];
  if (tr) {
    la_trace_params(tr, &p);
    if (la_compact_spec_format(&p, spec, sizeof spec) < 0)
      snprintf(spec, sizeof spec, "%s", la_compact_mode_name(p.mode));
  }
  double emax = NAN, ecv = NAN;
  size_t bytes = 0;
  la_traceset_rank_error(t, r, &emax, NULL, &ecv, &bytes);
  const char *unit = la_traceset_unit(t);
  snprintf(title, sizeof title, "%s: rank %u, cycle %llu (%s)",
           la_traceset_app_id(t), r, (unsigned long long)la_traceset_cycle(t),
           lactl_state_name(lactl_set_state(t)));
  snprintf(sub, sizeof sub,
           "%llu elements, mode %s, %zu bytes (%sx smaller), achieved max "
           "|err| %s %s, CV %s",
           (unsigned long long)n, spec, bytes,
           lactl_fmt_ratio(bytes ? 8.0 * (double)n / (double)bytes : NAN, b1,
                           sizeof b1),
           lactl_fmt_num(emax, 3, b2, sizeof b2), unit,
           lactl_fmt_num(ecv, 3, b3, sizeof b3));
  if (m) {
    size_t l = strlen(sub);
    snprintf(sub + l, sizeof sub - l,
             "; robust weights, %llu element%s interfered with (%.1f%% of "
             "the measured time)",
             (unsigned long long)n_int, n_int == 1 ? "" : "s",
             100 * int_share);
  }
  svg_begin(f, TW, TH, title);
  svg_label(f, TW / 2.0, 24, "middle", "font-size=\"16\" font-weight=\"bold\"",
            title);
  svg_label(f, TW / 2.0, 44, "middle", "fill=\"#444\" font-size=\"11\"", sub);
  if (n_clipped) {
    char note[200], b4[32], b5[32];
    snprintf(note, sizeof note, "\xe2\x96\xb2 %llu value%s above %s %s not "
             "shown (max %s; --full-range)", (unsigned long long)n_clipped,
             n_clipped == 1 ? "" : "s",
             lactl_fmt_num(hi, 3, b4, sizeof b4), la_traceset_unit(t),
             lactl_fmt_num(full_hi, 3, b5, sizeof b5));
    svg_label(f, ML, MT - 10, "start", "fill=\"#b2182b\" font-size=\"11\"",
              note);
  }

  /* Grid and axes. */
  fprintf(f, "<g stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
  for (int i = 0; i < nyt; i++)
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ML,
            PY(yfirst + i * ystep), ML + pw, PY(yfirst + i * ystep));
  fprintf(f,
          "</g>\n<g stroke=\"#333\" stroke-width=\"1\" fill=\"none\">\n"
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
          ML, MT, pw, ph);
  for (int i = 0; i < nxt; i++)
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
            PX(xfirst + i * xstep), MT + ph, PX(xfirst + i * xstep),
            MT + ph + 5);
  for (int i = 0; i < nyt; i++)
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ML - 5,
            PY(yfirst + i * ystep), ML, PY(yfirst + i * ystep));
  fprintf(f, "</g>\n");
  for (int i = 0; i < nxt; i++) {
    char s[32];
    tick_text(xfirst + i * xstep, xstep, s, sizeof s);
    svg_label(f, PX(xfirst + i * xstep), MT + ph + 19, "middle", NULL, s);
  }
  for (int i = 0; i < nyt; i++) {
    char s[32];
    tick_text(yfirst + i * ystep, ystep, s, sizeof s);
    svg_label(f, ML - 8, PY(yfirst + i * ystep) + 4, "end", NULL, s);
  }
  char xl[64], yl[300];
  snprintf(xl, sizeof xl, "element index (rank %u)", r);
  snprintf(yl, sizeof yl, "%s%s%s%s",
           *la_traceset_metric(t) ? la_traceset_metric(t) : "value",
           *unit ? " (" : "", unit, *unit ? ")" : "");
  svg_label(f, ML + pw / 2.0, TH - 18, "middle", NULL, xl);
  char rot[96];
  snprintf(rot, sizeof rot, "transform=\"rotate(-90 %d %.1f)\"", 22,
           MT + ph / 2.0);
  svg_label(f, 22, MT + ph / 2.0, "middle", rot, yl);

  /* Data, clipped to the plot area: dots (measured) beneath the line. */
  int decimate = n > (uint64_t)(2 * pw);
  fprintf(f,
          "<clipPath id=\"area\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
          "height=\"%d\"/></clipPath>\n<g clip-path=\"url(#area)\">\n",
          ML, MT, pw, ph);
  if (x) {
    fprintf(f,
            "<g fill=\"#e6550d\" fill-opacity=\"0.55\" "
            "class=\"measured\">\n");
    if (n <= 5000) {
      for (uint64_t i = 0; i < n; i++)
        if (isfinite(x[i]))
          fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.8\"/>\n", PX(i),
                  PY(x[i]));
    } else {
      for (int c = 0; c < pw; c++) {
        uint64_t a, b;
        column_range(n, pw, c, &a, &b);
        double mn = INFINITY, mx = -INFINITY;
        for (uint64_t i = a; i < b; i++)
          if (isfinite(x[i])) mn = fmin(mn, x[i]), mx = fmax(mx, x[i]);
        if (mn > mx) continue;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\"/>\n",
                ML + c + 0.5, PY(mn));
        if (mx > mn)
          fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.5\"/>\n",
                  ML + c + 0.5, PY(mx));
      }
    }
    fprintf(f, "</g>\n");
  }
  if (m) { /* measured (decoded), light, beneath the robust line */
    fprintf(f, "<polyline class=\"measured-decoded\" fill=\"none\" "
               "stroke=\"#b0b0b0\" stroke-width=\"1\" points=\"");
    int km = 0;
    for (int c = 0; c < pw; c++) {
      uint64_t a, b;
      column_range(n, pw, c, &a, &b);
      double mx = -INFINITY;
      for (uint64_t i = a; i < b; i++)
        if (isfinite(m[i]) && m[i] > mx) mx = m[i];
      if (mx > -INFINITY)
        fprintf(f, "%s%.1f,%.1f", km++ % 8 ? " " : "\n", ML + c + 0.5,
                PY(fmin(mx, yhi)));
    }
    if (km == 0) fprintf(f, "%d,%d", ML, MT + ph);
    fprintf(f, "\"/>\n");
  }
  fprintf(f,
          "<polyline class=\"decoded\" fill=\"none\" stroke=\"#08519c\" "
          "stroke-width=\"1.6\" stroke-linejoin=\"round\" points=\"");
  int k = 0;
  if (!decimate) {
    for (uint64_t i = 0; i < n; i++)
      if (isfinite(y[i]))
        fprintf(f, "%s%.1f,%.1f", k++ % 8 ? " " : "\n", PX(i), PY(y[i]));
  } else {
    for (int c = 0; c < pw; c++) {
      uint64_t a, b, imn = 0, imx = 0;
      column_range(n, pw, c, &a, &b);
      double mn = INFINITY, mx = -INFINITY;
      for (uint64_t i = a; i < b; i++) {
        if (!isfinite(y[i])) continue;
        if (y[i] < mn) mn = y[i], imn = i;
        if (y[i] > mx) mx = y[i], imx = i;
      }
      if (mn > mx) continue;
      double v1 = imn <= imx ? mn : mx, v2 = imn <= imx ? mx : mn;
      fprintf(f, "%s%.1f,%.1f %.1f,%.1f", k++ % 4 ? " " : "\n", ML + c + 0.5,
              PY(v1), ML + c + 0.5, PY(v2));
    }
  }
  if (k == 0) fprintf(f, "%d,%d", ML, MT + ph); /* keep points non-empty */
  fprintf(f, "\"/>\n</g>\n");
  if (m && n_int) { /* interfered elements: a mark at the measured value */
    fprintf(f, "<g fill=\"#e6550d\" class=\"interfered\">\n");
    int last = -10;
    double res = la_traceset_rank_timer_res(t, r);
    for (uint64_t i = 0; i < n; i++) {
      if (!(isfinite(m[i]) && isfinite(y[i]) && m[i] > y[i] * 1.25 + 2 * res))
        continue;
      int px = (int)PX(i);
      if (px - last < 3) continue;
      last = px;
      fprintf(f, "<path d=\"M%d,%.1f l-3,-6 h6 z\"/>\n", px,
              PY(fmin(m[i], yhi)) + 6);
    }
    fprintf(f, "</g>\n");
  }
  if (n_clipped) { /* a mark at the top edge where values were clipped */
    fprintf(f, "<g fill=\"#b2182b\" class=\"clipped\">\n");
    int last = -10;
    for (uint64_t i = 0; i < n; i++) {
      if (!((isfinite(y[i]) && y[i] > hi) || (x && isfinite(x[i]) && x[i] > hi)))
        continue;
      int px = (int)PX(i);
      if (px - last < 3) continue;
      last = px;
      fprintf(f, "<path d=\"M%d,%d l-4,7 h8 z\"/>\n", px, MT);
    }
    fprintf(f, "</g>\n");
  }

  /* Legend, top right inside the margin. */
  double lx = ML + pw - 250, ly = MT - 14;
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"#08519c\" stroke-width=\"2\"/>\n",
          lx, ly - 4, lx + 22, ly - 4);
  svg_label(f, lx + 28, ly, "start", NULL,
            m ? (decimate ? "robust weight (min/max per pixel)"
                          : "robust weight")
              : (decimate ? "decoded (min/max per pixel)"
                          : "decoded (reconstructed)"));
  if (m) {
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#b0b0b0\" stroke-width=\"2\"/>\n"
            "<path d=\"M%.1f,%.1f l-3,-6 h6 z\" fill=\"#e6550d\"/>\n",
            lx - 300, ly - 4, lx - 278, ly - 4, lx - 150, ly);
    svg_label(f, lx - 272, ly, "start", NULL, "measured");
    svg_label(f, lx - 142, ly, "start", NULL, "interfered");
  }
  if (x) {
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#e6550d\" "
            "fill-opacity=\"0.7\"/>\n",
            lx - (m ? 420 : 150), ly - 4);
    svg_label(f, lx - (m ? 412 : 142), ly, "start", NULL, "measured (raw)");
  }
  fprintf(f, "</svg>\n");
#undef PX
#undef PY
  free(m);
  free(x);
  free(y);
  return LACTL_OK;
}

/* ---------------------------------------------------------- heat map */

/* Diverging scale (ColorBrewer RdBu, 5 classes) for u in [-1, 1]. */
static void diverging(double u, char *buf, size_t len) {
  static const double stop[5][3] = {{33, 102, 172},
                                    {103, 169, 207},
                                    {247, 247, 247},
                                    {239, 138, 98},
                                    {178, 24, 43}};
  if (!(u >= -1)) u = -1;
  if (u > 1) u = 1;
  double pos = (u + 1) * 2; /* 0..4 */
  int i = (int)floor(pos);
  if (i >= 4) i = 3;
  double w = pos - i;
  int rgb[3];
  for (int k = 0; k < 3; k++)
    rgb[k] = (int)lround(stop[i][k] * (1 - w) + stop[i + 1][k] * w);
  snprintf(buf, len, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* The smallest "round" M >= need (the scale spans 1/M .. M). */
static double scale_max(double need) {
  static const double m[] = {1.05, 1.1, 1.2, 1.25, 1.5, 2,  3,
                             4,    5,   10,  20,   50,  100};
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    if (need <= m[i] * (1 + 1e-12)) return m[i];
  return need;
}

static int plot_heat(FILE *f, lactl_src_t *s, const char *app, uint64_t first,
                     uint64_t last, int kind) {
  int robust = 1; /* every set served robust weights */
  lactl_app_t a;
  lactl_cycle_t *cy = NULL;
  size_t nc = 0;
  int rc = lactl_src_app(s, app, &a);
  if (!rc) rc = lactl_src_cycles(s, app, first, last, &cy, &nc);
  if (!rc && nc == 0) {
    free(cy);
    fprintf(stderr, "lactl plot: %s has no cycle in %llu..%llu\n", app,
            (unsigned long long)first, (unsigned long long)last);
    return LACTL_FAIL;
  }
  if (rc) return lactl_src_fail("plot", s, rc);
  /* Totals of every (cycle, rank); nprocs is the largest a set reports. */
  uint32_t np = a.nprocs;
  double *tot = NULL, *imb = calloc(nc, sizeof *imb);
  char unit[64] = "", metric[160] = "";
  for (size_t c = 0; imb && c < nc; c++) {
    la_traceset_t *t;
    rc = lactl_src_set(s, app, 0, cy[c].tag, &t);
    if (rc) {
      free(tot);
      free(imb);
      free(cy);
      return lactl_src_fail("plot", s, rc);
    }
    if (c == 0) {
      snprintf(unit, sizeof unit, "%s", la_traceset_unit(t));
      snprintf(metric, sizeof metric, "%s", la_traceset_metric(t));
    }
    if (!tot) {
      if (la_traceset_nprocs(t) > np) np = la_traceset_nprocs(t);
      tot = malloc(nc * np * sizeof *tot);
      for (size_t i = 0; tot && i < nc * np; i++) tot[i] = NAN;
    }
    if (kind >= 0) la_traceset_set_weights(t, kind);
    if (la_traceset_weights_kind(t) != LA_WEIGHTS_ROBUST) robust = 0;
    if (tot) { /* robust totals when the set serves robust weights */
      uint32_t tn = la_traceset_nprocs(t);
      int rb = la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST;
      for (uint32_t r = 0; r < tn && r < np; r++)
        if (rb) la_traceset_rank_robust_stats(t, r, &tot[c * np + r], NULL, NULL);
        else la_traceset_rank_stats(t, r, &tot[c * np + r], NULL, NULL);
      if ((rb ? la_traceset_robust_imbalance(t, &imb[c])
              : la_traceset_imbalance(t, &imb[c])) != 0)
        imb[c] = NAN;
    }
    la_traceset_free(t);
    if (!tot) break;
  }
  if (!tot || !imb || np == 0) {
    fprintf(stderr, "lactl plot: %s\n",
            np == 0 ? "no ranks to draw" : "out of memory");
    free(tot);
    free(imb);
    free(cy);
    return LACTL_FAIL;
  }
  /* Ratios to each cycle's mean, and the scale: it spans 1/M..M, M
   * covering 98% of the cells (|log ratio| at the 98th percentile), so one
   * extreme cell does not wash out the others; cells beyond saturate and
   * the legend's ends say so. */
  double imax = 1, *dev = malloc(nc * np * sizeof *dev);
  size_t imax_c = 0, ndev = 0;
  if (!dev) {
    fprintf(stderr, "lactl plot: out of memory\n");
    free(tot);
    free(imb);
    free(cy);
    return LACTL_FAIL;
  }
  for (size_t c = 0; c < nc; c++) {
    double sum = 0;
    int k = 0;
    for (uint32_t r = 0; r < np; r++)
      if (!isnan(tot[c * np + r])) sum += tot[c * np + r], k++;
    double mean = k ? sum / k : NAN;
    for (uint32_t r = 0; r < np; r++) {
      double *v = &tot[c * np + r];
      if (isnan(*v)) continue;
      *v = mean > 0 ? *v / mean : 1; /* from here on: the ratio */
      dev[ndev++] = *v > 0 ? fabs(log(*v)) : log(100);
    }
    if (isfinite(imb[c]) && imb[c] > imax) imax = imb[c], imax_c = c;
  }
  qsort(dev, ndev, sizeof *dev, cmp_double);
  double dmax = ndev ? dev[ndev - 1] : 0;
  double M = scale_max(ndev ? exp(dev[(size_t)(0.98 * (double)(ndev - 1))])
                            : 1),
         lm = log(M);
  int saturated = dmax > lm * (1 + 1e-9);
  free(dev);

  /* Geometry. */
  int cw = (int)(720 / nc), ch = (int)(420 / np);
  cw = cw < 2 ? 2 : cw > 60 ? 60 : cw;
  ch = ch < 2 ? 2 : ch > 32 ? 32 : ch;
  const int ml = 80, mt = 170, gw = cw * (int)nc, gh = ch * (int)np;
  const int lh = gh < 160 ? 160 : gh; /* legend height */
  const int w = ml + gw + 230 < 640 ? 640 : ml + gw + 230;
  const int h = mt + (gh > lh + 30 ? gh : lh + 30) + 60;
  char title[400], sub[600], b1[32], b2[32];
  snprintf(title, sizeof title, "%s: load per rank and cycle", app);
  snprintf(sub, sizeof sub,
           "%s%s%s%s, %s, %zu cycles (%llu..%llu), %u ranks; worst "
           "imbalance %s (max/mean) at cycle %llu",
           metric[0] ? metric : "value", unit[0] ? " (" : "", unit,
           unit[0] ? ")" : "",
           robust ? "robust totals (interference removed)"
                  : "measured totals",
           nc, (unsigned long long)cy[0].tag,
           (unsigned long long)cy[nc - 1].tag, np,
           lactl_fmt_num(imax, 4, b1, sizeof b1),
           (unsigned long long)cy[imax_c].tag);
  svg_begin(f, w, h, title);
  svg_label(f, 16, 24, "start", "font-size=\"16\" font-weight=\"bold\"", title);
  svg_label(f, 16, 44, "start", "fill=\"#444\"", sub);
  fprintf(f,
          "<defs><pattern id=\"missing\" width=\"6\" height=\"6\" "
          "patternUnits=\"userSpaceOnUse\" "
          "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" "
          "fill=\"#d9d9d9\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" "
          "stroke=\"#969696\" stroke-width=\"2\"/></pattern></defs>\n");

  /* Imbalance bars above the map: height ~ max/mean - 1. */
  const int bt = 66, bh = 70; /* top and height of the bar strip */
  double bmax = imax > 1 ? imax : 1.1, bs, bf;
  int nbt = nice_ticks(1, bmax, 3, &bf, &bs);
  svg_label(f, ml - 8, bt - 6, "start", "fill=\"#444\"",
            "imbalance per cycle (max/mean of rank totals)");
  fprintf(f, "<g stroke=\"#e3e3e3\">\n");
  for (int i = 0; i < nbt; i++) {
    double yv = bt + bh - (bf + i * bs - 1) / (bmax - 1) * bh;
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", ml, yv,
            ml + gw, yv);
  }
  fprintf(f, "</g>\n");
  for (int i = 0; i < nbt; i++) {
    char t[32];
    double yv = bt + bh - (bf + i * bs - 1) / (bmax - 1) * bh;
    tick_text(bf + i * bs, bs, t, sizeof t);
    svg_label(f, ml - 6, yv + 4, "end", "font-size=\"10\"", t);
  }
  fprintf(f, "<g fill=\"#636363\" class=\"imbalance\">\n");
  for (size_t c = 0; c < nc; c++) {
    if (!isfinite(imb[c])) continue;
    double hgt = (imb[c] - 1) / (bmax - 1) * bh;
    if (hgt < 0.5) hgt = 0.5;
    fprintf(f,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
            "<title>cycle %llu: %s</title></rect>\n",
            ml + c * (double)cw + (cw > 3 ? 0.5 : 0), bt + bh - hgt,
            cw > 3 ? cw - 1.0 : (double)cw, hgt, (unsigned long long)cy[c].tag,
            lactl_fmt_num(imb[c], 4, b2, sizeof b2));
  }
  fprintf(f, "</g>\n");

  /* The map: one rect per (cycle, rank); rank 0 on top. */
  int tips = nc * np <= 20000;
  fprintf(f, "<g class=\"heatmap\" shape-rendering=\"crispEdges\">\n");
  for (size_t c = 0; c < nc; c++)
    for (uint32_t r = 0; r < np; r++) {
      double v = tot[c * np + r];
      char col[16] = "url(#missing)";
      if (!isnan(v)) diverging(v > 0 ? log(v) / lm : -1, col, sizeof col);
      fprintf(f,
              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
              "fill=\"%s\"",
              ml + (int)c * cw, mt + (int)r * ch, cw, ch, col);
      if (tips) {
        if (isnan(v))
          fprintf(f, "><title>rank %u, cycle %llu: missing</title></rect>\n", r,
                  (unsigned long long)cy[c].tag);
        else
          fprintf(f, "><title>rank %u, cycle %llu: %s x mean</title></rect>\n",
                  r, (unsigned long long)cy[c].tag,
                  lactl_fmt_num(v, 4, b2, sizeof b2));
      } else {
        fprintf(f, "/>\n");
      }
    }
  fprintf(f,
          "</g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
          "fill=\"none\" stroke=\"#333\"/>\n",
          ml, mt, gw, gh);

  /* Axes: cycle tags below (spaced >= 48 px), ranks left (>= 14 px). */
  char widest[32];
  snprintf(widest, sizeof widest, "%llu", (unsigned long long)cy[nc - 1].tag);
  int lw_px = 8 * (int)strlen(widest) + 12; /* room for one tag label */
  int every = (lw_px + cw - 1) / cw;
  for (size_t c = 0; c < nc; c += (size_t)every) {
    char t[32];
    snprintf(t, sizeof t, "%llu", (unsigned long long)cy[c].tag);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#333\"/>\n",
            ml + (c + 0.5) * cw, mt + gh, ml + (c + 0.5) * cw, mt + gh + 4);
    svg_label(f, ml + (c + 0.5) * cw, mt + gh + 17, "middle", NULL, t);
  }
  svg_label(f, ml + gw / 2.0, mt + gh + 40, "middle", NULL, "cycle");
  int reach = (14 + ch - 1) / ch;
  for (uint32_t r = 0; r < np; r += (uint32_t)reach) {
    char t[16];
    snprintf(t, sizeof t, "%u", r);
    svg_label(f, ml - 6, mt + (r + 0.5) * ch + 4, "end", NULL, t);
  }
  char rot[96];
  snprintf(rot, sizeof rot, "transform=\"rotate(-90 %d %.1f)\"", 24,
           mt + gh / 2.0);
  svg_label(f, 24, mt + gh / 2.0, "middle", rot, "rank");

  /* Legend: the color scale, log spaced, 1/M at the bottom, M on top. */
  const int lx = ml + gw + 30, lw = 16;
  const int ly = mt;
  fprintf(f,
          "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" "
          "y2=\"0\">\n");
  for (int i = 0; i <= 8; i++) {
    char col[16];
    diverging(-1 + i / 4.0, col, sizeof col);
    fprintf(f, "<stop offset=\"%.3f\" stop-color=\"%s\"/>\n", i / 8.0, col);
  }
  fprintf(f,
          "</linearGradient></defs>\n"
          "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"%d\" "
          "height=\"%d\" fill=\"url(#scale)\" stroke=\"#333\"/>\n",
          lx, ly, lw, lh);
  svg_label(f, lx - 4, ly - 28, "start", "font-weight=\"bold\"",
            "rank total / cycle mean");
  svg_label(f, lx - 4, ly - 12, "start", "font-size=\"10\" fill=\"#444\"",
            "log scale; red above, blue below");
  for (int i = 0; i <= 4; i++) {
    double u = -1 + i / 2.0, yv = ly + lh - (u + 1) / 2 * lh;
    char t[32];
    snprintf(t, sizeof t, "%s%.3g%s",
             saturated && i == 0   ? "<= "
             : saturated && i == 4 ? ">= "
                                   : "",
             exp(u * lm), i == 2 ? " = mean" : "");
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
            "stroke=\"#333\"/>\n",
            lx + lw, yv, lx + lw + 4, yv);
    svg_label(f, lx + lw + 7, yv + 4, "start", NULL, t);
  }
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" "
          "fill=\"url(#missing)\" stroke=\"#333\"/>\n",
          lx, ly + lh + 12, lw);
  svg_label(f, lx + lw + 7, ly + lh + 22, "start", NULL, "rank missing");
  fprintf(f, "</svg>\n");
  free(tot);
  free(imb);
  free(cy);
  return LACTL_OK;
}

int lactl_plot_main(int argc, char **argv) {
  static const struct option lo[] = {
      {"rank", 1, 0, 'r'},  {"raw", 1, 0, 'R'},  {"heatmap", 0, 0, 'H'},
      {"first", 1, 0, 'f'}, {"last", 1, 0, 'l'}, {"output", 1, 0, 'o'},
      {"full-range", 0, 0, 'F'}, {"weights", 1, 0, 'W'},
      LACTL_COMMON_OPTIONS,      {0, 0, 0, 0}};
  lactl_common_t o = {0};
  trace_opts_t to = {0};
  to.kind = -1;
  const char *out = NULL;
  int c, heat = 0, have_range = 0;
  uint64_t first = 0, last = UINT64_MAX, rank;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'r':
        if (lactl_parse_u64(optarg, &rank) || rank >= (1u << 24))
          return lactl_usage_err("plot", "--rank '%s': not a rank", optarg);
        to.rank = (uint32_t)rank;
        to.have_rank = 1;
        break;
      case 'R':
        to.raw = optarg;
        break;
      case 'F':
        to.full_range = 1;
        break;
      case 'W':
        if (lactl_parse_weights(optarg, &to.kind))
          return lactl_usage_err("plot", "--weights '%s': measured or robust",
                                 optarg);
        break;
      case 'H':
        heat = 1;
        break;
      case 'f':
      case 'l':
        if (lactl_parse_u64(optarg, c == 'f' ? &first : &last))
          return lactl_usage_err("plot", "--%s '%s': not a cycle number",
                                 c == 'f' ? "first" : "last", optarg);
        have_range = 1;
        break;
      case 'o':
        out = optarg;
        break;
      default:
        return lactl_usage_err("plot", "unknown or incomplete option '%s'",
                               argv[optind - 1]);
    }
  }
  if (o.json) return lactl_usage_err("plot", "plot writes SVG, not JSON");
  if (optind >= argc) return lactl_usage_err("plot", "which application?");
  const char *app = argv[optind];
  const char *cyc = optind + 1 < argc ? argv[optind + 1] : NULL;
  if (argc - optind > 2)
    return lactl_usage_err("plot", "unexpected argument '%s'",
                           argv[optind + 2]);
  if (heat && (to.have_rank || to.raw || cyc))
    return lactl_usage_err("plot",
                           "--heatmap takes --first/--last, not a "
                           "cycle, --rank or --raw");
  if (!heat && !to.have_rank)
    return lactl_usage_err("plot", "say --rank R (a trace) or --heatmap");
  if (!heat && have_range)
    return lactl_usage_err("plot", "--first/--last are for --heatmap");
  if (first > last) return lactl_usage_err("plot", "--first is after --last");
  lactl_sel_t sel;
  if (!heat && lactl_parse_sel(cyc, 0, &sel))
    return lactl_usage_err("plot", "'%s' is not a cycle number or 'latest'",
                           cyc);

  lactl_src_t *s;
  int orc = lactl_src_open("plot", &o, &s);
  if (orc) return orc;
  la_traceset_t *t = NULL;
  char raw_path[4200];
  const char *rp = to.raw;
  int rc = LACTL_OK;
  if (!heat) {
    int e = lactl_src_set(s, app, sel.latest, sel.first, &t);
    if (e) {
      rc = lactl_src_fail("plot", s, e);
    } else if (to.rank >= la_traceset_nprocs(t)) {
      fprintf(stderr, "lactl plot: %s has %u ranks: no rank %u\n", app,
              la_traceset_nprocs(t), to.rank);
      rc = LACTL_FAIL;
    } else if (!la_traceset_has_rank(t, to.rank)) {
      fprintf(stderr, "lactl plot: rank %u is missing from %s cycle %llu\n",
              to.rank, app, (unsigned long long)la_traceset_cycle(t));
      rc = LACTL_FAIL;
    }
    struct stat sb;
    if (rc == LACTL_OK && rp && stat(rp, &sb) == 0 && S_ISDIR(sb.st_mode)) {
      snprintf(raw_path, sizeof raw_path, "%s/%s.r%u.c%llu.f64", rp, app,
               to.rank, (unsigned long long)la_traceset_cycle(t));
      rp = raw_path;
    }
  }
  FILE *f = rc == LACTL_OK ? lactl_out_open("plot", out) : NULL;
  if (rc == LACTL_OK && !f) rc = LACTL_FAIL;
  if (rc == LACTL_OK)
    rc = heat ? plot_heat(f, s, app, first, last, to.kind)
              : plot_trace(f, t, &to, rp);
  la_traceset_free(t);
  lactl_src_close(s);
  if (f) {
    int rc2 = lactl_out_close("plot", out, f);
    if (!rc) rc = rc2;
    if (rc && out && strcmp(out, "-")) remove(out);
  }
  return rc;
}
