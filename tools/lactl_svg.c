/* lactl_svg.c: the SVG primitives of `lactl plot` (see lactl_svg.h): text
 * escaping, the document's head, labels, axis ticks and the diverging
 * color scale.
 */
#include "lactl_svg.h"

#include <math.h>

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
