/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_svg.c: the SVG primitives of `lactl plot` (see lactl_svg.h): text
 * escaping, the document's head, labels, axis ticks and the diverging
 * color scale.
 */
#include "lactl_svg.h"

#include <math.h>
#include <string.h>

void lactl_svg_text(FILE *f, const char *s) {
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

void lactl_svg_begin(FILE *f, int w, int h, const char *title) {
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
          "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
          "font-size=\"12\">\n<title>",
          w, h, w, h);
  lactl_svg_text(f, title);
  fprintf(f, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w,
          h);
}

void lactl_svg_label(FILE *f, double x, double y, const char *anchor,
                     const char *attrs, const char *s) {
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y,
          anchor, attrs && *attrs ? " " : "", attrs ? attrs : "");
  lactl_svg_text(f, s);
  fputs("</text>\n", f);
}

double lactl_svg_text_width(const char *s, double font) {
  size_t n = 0;
  for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
  return 0.6 * font * (double)n;
}

/* Splits s at spaces into lines of at most w estimated width at font;
 * stores each line's start and length (at most max) and returns the line
 * count (more than max when they do not fit). */
static int la__svg_lines(const char *s, double w, double font,
                         const char **start, size_t *len, int max) {
  int n = 0;
  const char *p = s;
  while (*p == ' ') p++;
  while (*p) {
    const char *end = p, *fit = NULL;
    for (;;) {
      const char *q = end;
      while (*q && *q != ' ') q++;
      char buf[1024];
      size_t l = (size_t)(q - p) < sizeof buf - 1 ? (size_t)(q - p)
                                                   : sizeof buf - 1;
      memcpy(buf, p, l);
      buf[l] = '\0';
      if (fit && lactl_svg_text_width(buf, font) > w) break;
      fit = q;
      end = q;
      if (!*q) break;
      end = q + 1;
    }
    if (n < max) start[n] = p, len[n] = (size_t)(fit - p);
    n++;
    p = fit;
    while (*p == ' ') p++;
  }
  return n;
}

int lactl_svg_fit(FILE *f, double x, double y, double width, double font,
                  int max_lines, double line_h, const char *attrs,
                  const char *s) {
  enum { MAXL = 8 };
  const char *start[MAXL];
  size_t len[MAXL];
  if (max_lines > MAXL) max_lines = MAXL;
  if (max_lines < 1) max_lines = 1;
  int n;
  for (;;) {
    n = la__svg_lines(s, width, font, start, len, max_lines);
    int wide = 0;
    for (int i = 0; i < n && i < max_lines; i++) {
      char buf[1024];
      size_t l = len[i] < sizeof buf - 1 ? len[i] : sizeof buf - 1;
      memcpy(buf, start[i], l);
      buf[l] = '\0';
      wide |= lactl_svg_text_width(buf, font) > width;
    }
    if ((n <= max_lines && !wide) || font <= 4) break;
    font *= 0.95;
  }
  if (n > max_lines) n = max_lines;
  for (int i = 0; i < n; i++) {
    char buf[1024];
    size_t l = len[i] < sizeof buf - 1 ? len[i] : sizeof buf - 1;
    memcpy(buf, start[i], l);
    buf[l] = '\0';
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
               "font-size=\"%.1f\"%s%s>",
            x, y + i * line_h * font / 11, font, attrs && *attrs ? " " : "",
            attrs ? attrs : "");
    lactl_svg_text(f, buf);
    fputs("</text>\n", f);
  }
  return n;
}

int lactl_svg_ticks(double lo, double hi, int want, double *first,
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

void lactl_svg_tick_text(double v, double step, char *buf, size_t len) {
  if (fabs(v) < step * 1e-6) v = 0;
  double a = fmax(fabs(v), step);
  if (a >= 1e9 || step < 1e-4) {
    snprintf(buf, len, "%.4g", v);
  } else {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    snprintf(buf, len, "%.*f", dec, v);
  }
}

void lactl_svg_diverging(double u, char *buf, size_t len) {
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

int lactl_svg_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
