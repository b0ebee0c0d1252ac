/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_bin.h: the aggregation that keeps a picture's size bounded
 * whatever the cell count: a field of w x h cells is reduced to at most
 * maxw x maxh bins, each bin the mean, the maximum or the most extreme
 * ratio (furthest from 1 on a log scale) of its cells' finite values; a
 * bin without any finite value is "no data" and counts its cells without
 * one. `lactl serve` (the live view) and `lactl plot --grid/--heatmap`
 * (the static pictures) both draw these bins, never one mark per cell.
 *
 * Cell (x, y) falls in bin (x * bw / w, y * bh / h): bins are contiguous
 * and of equal size to within one cell.
 */
#ifndef LACTL_BIN_H
#define LACTL_BIN_H

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

enum {
  LACTL_BIN_MEAN = 0,   /* mean of the bin's finite values */
  LACTL_BIN_MAX = 1,    /* largest finite value */
  LACTL_BIN_EXTREME = 2 /* the value v > 0 with the largest |log v|; a
                           value <= 0 is the most extreme of all */
};

typedef struct lactl_bin {
  uint64_t w, h;   /* cells */
  uint32_t bw, bh; /* bins */
  int mode;
  double *acc;    /* per bin: sum, max or the extreme value */
  uint64_t *n;    /* per bin: finite values */
  uint64_t *none; /* per bin: cells added without a finite value */
} lactl_bin_t;

/* Sets b up for a w x h field (each >= 1) reduced to at most maxw x maxh
 * bins (each >= 1) by mode (LACTL_BIN_*). 0, or LA_ENOMEM / LA_EINVAL
 * (b is then empty: lactl_bin_free is still fine). */
int lactl_bin_init(lactl_bin_t *b, uint64_t w, uint64_t h, uint32_t maxw,
                   uint32_t maxh, int mode);
/* The same cells and bins without the bins' arrays (for lactl_bin_index
 * only; nothing to free). 0 or LA_EINVAL. */
int lactl_bin_dims(lactl_bin_t *b, uint64_t w, uint64_t h, uint32_t maxw,
                   uint32_t maxh, int mode);

/* The bin of cell (x, y) (x < w, y < h). */
static inline uint64_t lactl_bin_index(const lactl_bin_t *b, uint64_t x,
                                       uint64_t y) {
  uint64_t bx = (uint64_t)((unsigned __int128)x * b->bw / b->w);
  uint64_t by = (uint64_t)((unsigned __int128)y * b->bh / b->h);
  return bx + (uint64_t)b->bw * by;
}

/* Adds cell (x, y)'s value v (NaN or inf: no data). */
void lactl_bin_add(lactl_bin_t *b, uint64_t x, uint64_t y, double v);

/* The same for bin index i (lactl_bin_index), for callers that walk
 * cells in order (inline: it runs once per element). */
static inline double lactl_bin__dev(double v) {
  return v > 0 ? fabs(log(v)) : INFINITY;
}
static inline void lactl_bin_add_at(lactl_bin_t *b, uint64_t i, double v) {
  assert(i < (uint64_t)b->bw * b->bh);
  if (!isfinite(v)) {
    b->none[i]++;
    return;
  }
  double *a = &b->acc[i];
  if (b->mode == LACTL_BIN_MEAN)
    *a += v;
  else if (b->mode == LACTL_BIN_MAX)
    *a = b->n[i] == 0 || v > *a ? v : *a;
  else if (b->n[i] == 0 || lactl_bin__dev(v) > lactl_bin__dev(*a))
    *a = v;
  b->n[i]++;
}

/* Adds n cells' values v[0..n), all of bin i, keeping the running
 * figures in registers (the live view's inner loop); returns the sum of
 * the finite ones and adds their count to *nfin. */
static inline double lactl_bin_add_run(lactl_bin_t *b, uint64_t i,
                                       const double *v, size_t n,
                                       uint64_t *nfin) {
  assert(i < (uint64_t)b->bw * b->bh);
  double acc = b->acc[i], sum = 0;
  uint64_t cnt = b->n[i], c0 = cnt;
  if (b->mode == LACTL_BIN_EXTREME) {
    for (size_t k = 0; k < n; k++) {
      lactl_bin_add_at(b, i, v[k]);
      if (isfinite(v[k])) sum += v[k];
    }
    *nfin += b->n[i] - c0;
    return sum;
  }
  for (size_t k = 0; k < n; k++) {
    double x = v[k];
    if (!isfinite(x)) continue;
    sum += x;
    if (b->mode == LACTL_BIN_MAX) acc = cnt == 0 || x > acc ? x : acc;
    cnt++;
  }
  if (b->mode == LACTL_BIN_MEAN) acc += sum;
  b->acc[i] = acc;
  b->none[i] += n - (cnt - c0);
  b->n[i] = cnt;
  *nfin += cnt - c0;
  return sum;
}

/* Adds n cells of mean bin i whose values are all finite and sum to s
 * (a range sum of the compact encoding stands for its cells). */
static inline void lactl_bin_add_sum(lactl_bin_t *b, uint64_t i, double s,
                                     uint64_t n) {
  assert(i < (uint64_t)b->bw * b->bh && b->mode == LACTL_BIN_MEAN &&
         isfinite(s));
  b->acc[i] += s;
  b->n[i] += n;
}

/* Adds n cells of max bin i whose values are all finite, the largest m
 * (a range max of the compact encoding stands for its cells). */
static inline void lactl_bin_add_max(lactl_bin_t *b, uint64_t i, double m,
                                     uint64_t n) {
  assert(i < (uint64_t)b->bw * b->bh && b->mode == LACTL_BIN_MAX &&
         isfinite(m) && n > 0);
  if (b->n[i] == 0 || m > b->acc[i]) b->acc[i] = m;
  b->n[i] += n;
}

/* The value of bin (bx, by): NaN when none of its cells had one. */
double lactl_bin_value(const lactl_bin_t *b, uint32_t bx, uint32_t by);

/* Cells of bin (bx, by) added without a finite value. */
uint64_t lactl_bin_none(const lactl_bin_t *b, uint32_t bx, uint32_t by);

void lactl_bin_free(lactl_bin_t *b);

/* The name of mode for a legend ("mean", "max", "most extreme"). */
const char *lactl_bin_mode_name(int mode);

#endif /* LACTL_BIN_H */
