/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_svg.h: the SVG primitives `lactl plot` draws with: the document's
 * head, escaped text and labels, "nice" axis ticks and their labels, and a
 * diverging color scale. The SVG is written by hand (valid XML, text
 * escaped); there is no plotting library.
 *
 * Deliberately not here: what a figure shows (lactl_plot_trace.c,
 * lactl_plot_heat.c).
 */
#ifndef LACTL_SVG_H
#define LACTL_SVG_H

#include <stddef.h>
#include <stdio.h>

/* Writes s to f with &, <, >, " escaped and control characters other than
 * tab and newline replaced by '?'. */
void lactl_svg_text(FILE *f, const char *s);

/* Writes the XML declaration, the <svg> element of w x h px with its font,
 * the <title> (escaped) and a white background. The caller ends the
 * document with "</svg>". */
void lactl_svg_begin(FILE *f, int w, int h, const char *title);

/* Writes s (escaped) as a <text> at (x, y) with anchor (start, middle, end)
 * and attrs (extra attributes; NULL or "" for none). */
void lactl_svg_label(FILE *f, double x, double y, const char *anchor,
                     const char *attrs, const char *s);

/* Ticks at "nice" values (1, 2, 5 x 10^k) covering [lo, hi], about want of
 * them: sets *step and *first (the first tick). Returns the tick count
 * (0..50). */
/* The width text s is estimated to take at font size font: 0.6 em per
 * character (UTF-8 code point), a little more than DejaVu Sans' average. */
double lactl_svg_text_width(const char *s, double font);

/* Writes s as <text> lines centred on x from baseline y, words wrapped so
 * that each line's estimated width is at most width; when that needs more
 * than max_lines lines, the font shrinks until max_lines suffice. Lines
 * are line_h * font / 11 apart. attrs must not set font-size. Returns the
 * number of lines written. */
int lactl_svg_fit(FILE *f, double x, double y, double width, double font,
                  int max_lines, double line_h, const char *attrs,
                  const char *s);

int lactl_svg_ticks(double lo, double hi, int want, double *first,
                    double *step);

/* A tick label of v into buf (len bytes): as many decimals as step needs,
 * no exponent between 1e-4 and 1e9; "0" for values tiny against the
 * step. */
void lactl_svg_tick_text(double v, double step, char *buf, size_t len);

/* The color of u in [-1, 1] (clamped; NaN counts as -1) on a diverging
 * scale (ColorBrewer RdBu, 5 classes: blue, white at 0, red) as "#rrggbb"
 * into buf (len bytes, at least 8). */
void lactl_svg_diverging(double u, char *buf, size_t len);

/* qsort comparison of doubles, increasing (the figures sort values to
 * pick their scale's range). */
int lactl_svg_cmp_double(const void *a, const void *b);

#endif /* LACTL_SVG_H */
