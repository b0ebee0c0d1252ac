/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_bin.c: reduction of a w x h field to bounded bins by mean, max or
 * the most extreme ratio (see lactl_bin.h).
 */
#include "lactl_bin.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"

int lactl_bin_dims(lactl_bin_t *b, uint64_t w, uint64_t h, uint32_t maxw,
                   uint32_t maxh, int mode) {
  memset(b, 0, sizeof *b);
  if (w == 0 || h == 0 || maxw == 0 || maxh == 0 || mode < LACTL_BIN_MEAN ||
      mode > LACTL_BIN_EXTREME)
    return LA_EINVAL;
  b->w = w, b->h = h, b->mode = mode;
  b->bw = w < maxw ? (uint32_t)w : maxw;
  b->bh = h < maxh ? (uint32_t)h : maxh;
  return 0;
}

int lactl_bin_init(lactl_bin_t *b, uint64_t w, uint64_t h, uint32_t maxw,
                   uint32_t maxh, int mode) {
  int rc = lactl_bin_dims(b, w, h, maxw, maxh, mode);
  if (rc) return rc;
  size_t nb = (size_t)b->bw * b->bh;
  b->acc = malloc(nb * sizeof *b->acc);
  b->n = calloc(nb, sizeof *b->n);
  b->none = calloc(nb, sizeof *b->none);
  if (!b->acc || !b->n || !b->none) {
    lactl_bin_free(b);
    return LA_ENOMEM;
  }
  for (size_t i = 0; i < nb; i++) b->acc[i] = mode == LACTL_BIN_MEAN ? 0 : NAN;
  return 0;
}

void lactl_bin_add(lactl_bin_t *b, uint64_t x, uint64_t y, double v) {
  assert(x < b->w && y < b->h);
  lactl_bin_add_at(b, lactl_bin_index(b, x, y), v);
}

double lactl_bin_value(const lactl_bin_t *b, uint32_t bx, uint32_t by) {
  assert(bx < b->bw && by < b->bh);
  size_t i = bx + (size_t)b->bw * by;
  if (b->n[i] == 0) return NAN;
  return b->mode == LACTL_BIN_MEAN ? b->acc[i] / (double)b->n[i] : b->acc[i];
}

uint64_t lactl_bin_none(const lactl_bin_t *b, uint32_t bx, uint32_t by) {
  assert(bx < b->bw && by < b->bh);
  return b->none[bx + (size_t)b->bw * by];
}

void lactl_bin_free(lactl_bin_t *b) {
  free(b->acc), free(b->n), free(b->none);
  b->acc = NULL, b->n = NULL, b->none = NULL;
}

const char *lactl_bin_mode_name(int mode) {
  return mode == LACTL_BIN_MEAN  ? "mean"
         : mode == LACTL_BIN_MAX ? "max"
                                 : "most extreme";
}
