/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_whatif_plot.c: `lactl whatif --plot FILE`: the predicted imbalance
 * of each partition as lines in an SVG, where a line reads better than a
 * table: over a range of cycles (each cycle's own partitions, scored on
 * it), or, for one cycle with --horizon K, over that cycle and the K that
 * follow (how long each partition's gain holds).
 *
 * Deliberately not here: computing the figures (lactl_whatif.c) and the
 * table, JSON and CSV (lactl_whatif_out.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_svg.h"
#include "lactl_whatif.h"

typedef struct {
  const char *method; /* the row's method: a string literal */
  size_t n, cap;
  double *x, *y;
} wi_series_t;

struct lactl_wi_plot {
  size_t cycles; /* cycles added */
  wi_series_t per_cycle[LACTL_WI_MAX_ROWS]; /* imbalance at each cycle */
  wi_series_t hold[LACTL_WI_MAX_ROWS];      /* the first cycle's horizon */
  int n_per_cycle, n_hold;
  int oom;
};

lactl_wi_plot_t *lactl_wi_plot_new(void) {
  return calloc(1, sizeof(lactl_wi_plot_t));
}

static void series_free(wi_series_t *s, int n) {
  for (int i = 0; i < n; i++) free(s[i].x), free(s[i].y);
}

void lactl_wi_plot_free(lactl_wi_plot_t *p) {
  if (!p) return;
  series_free(p->per_cycle, p->n_per_cycle);
  series_free(p->hold, p->n_hold);
  free(p);
}

/* The series of method in s[0..*n), a new one when absent (NULL when all
 * LACTL_WI_MAX_ROWS are taken). */
static wi_series_t *series_of(wi_series_t *s, int *n, const char *method) {
  for (int i = 0; i < *n; i++)
    if (!strcmp(s[i].method, method)) return &s[i];
  if (*n >= LACTL_WI_MAX_ROWS) return NULL;
  s[*n] = (wi_series_t){.method = method};
  return &s[(*n)++];
}

static int series_put(wi_series_t *s, double x, double y) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    double *nx = realloc(s->x, cap * sizeof *nx);
    if (!nx) return -1;
    s->x = nx;
    double *ny = realloc(s->y, cap * sizeof *ny);
    if (!ny) return -1;
    s->y = ny;
    s->cap = cap;
  }
  s->x[s->n] = x;
  s->y[s->n++] = y;
  return 0;
}

void lactl_wi_plot_add(lactl_wi_plot_t *p, const lactl_wi_cycle_t *c) {
  if (!p || p->oom) return;
  for (int r = 0; r < c->nrows; r++) {
    const lactl_wi_row_t *row = &c->rows[r];
    wi_series_t *s = series_of(p->per_cycle, &p->n_per_cycle, row->method);
    if (!s || series_put(s, (double)c->cycle, row->imbalance)) p->oom = 1;
    if (p->cycles > 0 || !row->h || row->nh == 0) continue;
    /* the first cycle's partitions held over the cycles that follow */
    wi_series_t *h = series_of(p->hold, &p->n_hold, row->method);
    if (!h || series_put(h, (double)c->cycle, row->imbalance)) p->oom = 1;
    for (size_t j = 0; h && j < row->nh && j < c->nh; j++)
      if (isfinite(row->h[j]) &&
          series_put(h, (double)c->hcycles[j], row->h[j]))
        p->oom = 1;
  }
  p->cycles++;
}

/* One color per method, in the order the table lists them. */
static const char *color_of(const char *method) {
  static const struct {
    const char *m, *c;
  } k[] = {{"current", "#000000"}, {"metis", "#d62728"}, {"rcb", "#1f77b4"},
           {"greedy", "#2ca02c"},  {"file", "#9467bd"}};
  for (size_t i = 0; i < sizeof k / sizeof *k; i++)
    if (!strcmp(k[i].m, method)) return k[i].c;
  return "#7f7f7f";
}

int lactl_wi_plot_write(const lactl_wi_plot_t *p, const char *path,
                        const lactl_wi_head_t *head, char *why, size_t len) {
  if (p->oom) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  const wi_series_t *s;
  int n;
  const char *what;
  if (p->cycles >= 2) {
    s = p->per_cycle, n = p->n_per_cycle;
    what = "each cycle's partitions, scored on that cycle";
  } else if (p->cycles == 1 && p->n_hold > 0) {
    s = p->hold, n = p->n_hold;
    what = "the cycle's partitions, scored on it and the cycles that follow";
  } else {
    snprintf(why, len,
             "--plot draws lines: give a range of cycles (FIRST:LAST) or "
             "--horizon K; one cycle reads better as the table");
    return -1;
  }
  double x0 = INFINITY, x1 = -INFINITY, y0 = 1, y1 = 1;
  for (int i = 0; i < n; i++)
    for (size_t j = 0; j < s[i].n; j++) {
      if (!isfinite(s[i].y[j])) continue;
      x0 = fmin(x0, s[i].x[j]), x1 = fmax(x1, s[i].x[j]);
      y0 = fmin(y0, s[i].y[j]), y1 = fmax(y1, s[i].y[j]);
    }
  if (!(x1 >= x0)) {
    snprintf(why, len, "no finite imbalance to draw");
    return -1;
  }
  if (x1 == x0) x0 -= 0.5, x1 += 0.5;
  if (y1 - y0 < 0.01) y1 = y0 + 0.01;
  y1 += 0.05 * (y1 - y0);
  FILE *f = fopen(path, "w");
  if (!f) {
    snprintf(why, len, "%s: %s", path, strerror(errno));
    return -1;
  }
  enum { W = 760, H = 440, L = 70, R = 150, T = 50, B = 60 };
  const double pw = W - L - R, ph = H - T - B;
#define PX(v) (L + ((v) - x0) / (x1 - x0) * pw)
#define PY(v) (T + ph - ((v) - y0) / (y1 - y0) * ph)
  char title[600];
  snprintf(title, sizeof title, "%s: predicted imbalance (max/mean of %s%s%s)",
           head->app, head->metric, head->channel ? ", channel " : "",
           head->channel ? head->channel : "");
  lactl_svg_begin(f, W, H, title);
  lactl_svg_label(f, L, 22, "start", "font-size=\"14\"", title);
  lactl_svg_label(f, L, 40, "start", "font-size=\"11\" fill=\"#555\"", what);
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" "
          "fill=\"none\" stroke=\"#999\"/>\n",
          L, T, pw, ph);
  char tick[64];
  double first, step;
  int nt = lactl_svg_ticks(y0, y1, 6, &first, &step);
  for (int i = 0; i < nt; i++) {
    double v = first + i * step;
    if (v < y0 - 1e-12 || v > y1 + 1e-12) continue;
    fprintf(f,
            "<line x1=\"%d\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#eee\"/>\n",
            L, L + pw, PY(v), PY(v));
    lactl_svg_tick_text(v, step, tick, sizeof tick);
    lactl_svg_label(f, L - 6, PY(v) + 4, "end", NULL, tick);
  }
  nt = lactl_svg_ticks(x0, x1, 8, &first, &step);
  if (step < 1) step = 1, first = ceil(x0);
  for (double v = first; v <= x1 + 1e-9; v += step) {
    if (v < x0 - 1e-9) continue;
    snprintf(tick, sizeof tick, "%.0f", v);
    lactl_svg_label(f, PX(v), T + ph + 16, "middle", NULL, tick);
  }
  lactl_svg_label(f, L + pw / 2, H - 18, "middle", NULL, "cycle");
  char rot[64];
  snprintf(rot, sizeof rot, "transform=\"rotate(-90 16 %.0f)\"", T + ph / 2);
  lactl_svg_label(f, 16, T + ph / 2, "middle", rot, "max / mean");
  /* the current decomposition last and dashed: on top where lines meet */
  int order[LACTL_WI_MAX_ROWS], k = 0;
  for (int i = 0; i < n; i++)
    if (strcmp(s[i].method, "current")) order[k++] = i;
  for (int i = 0; i < n; i++)
    if (!strcmp(s[i].method, "current")) order[k++] = i;
  for (int o = 0; o < n; o++) {
    int i = order[o];
    const char *col = color_of(s[i].method);
    int dash = !strcmp(s[i].method, "current");
    fprintf(f,
            "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" "
            "stroke-width=\"1.5\"%s points=\"",
            s[i].method, col, dash ? " stroke-dasharray=\"6,3\"" : "");
    for (size_t j = 0; j < s[i].n; j++)
      if (isfinite(s[i].y[j]))
        fprintf(f, "%.1f,%.1f ", PX(s[i].x[j]), PY(s[i].y[j]));
    fputs("\"/>\n", f);
    for (size_t j = 0; j < s[i].n && s[i].n <= 200; j++)
      if (isfinite(s[i].y[j]))
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                PX(s[i].x[j]), PY(s[i].y[j]), col);
    double ly = T + 14 + 18 * i;
    fprintf(f,
            "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"%s\" stroke-width=\"2\"%s/>\n",
            L + pw + 12, L + pw + 34, ly - 4, ly - 4, col,
            dash ? " stroke-dasharray=\"6,3\"" : "");
    lactl_svg_label(f, L + pw + 40, ly, "start", NULL, s[i].method);
  }
#undef PX
#undef PY
  fputs("</svg>\n", f);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    snprintf(why, len, "%s: cannot write", path);
    return -1;
  }
  return 0;
}
