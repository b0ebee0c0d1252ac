/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve_bin.c: how `lactl serve` bins a Trace-Set's elements into
 * its element map (lactl_sv_fill, lactl_serve.h).
 *
 * The map's bins are rectangles of cells, and the cells of one row of a
 * bin are a contiguous run of one rank's elements (rows of W elements in
 * global order; a grid slice's rows are runs of dm[0] elements of a
 * k-slab rank). For the mean, such a run is one range sum of the compact
 * encoding (la_traceset_range_sum: closed form over the segments, O(log
 * segments) and not O(elements)); for the max, one range sum (the map's
 * mean of the finite values) and one range max (la_traceset_range_max:
 * a line's largest value is at an end of its stretch, exceptions and
 * verbatim values read from the parsed trace; exactly the decoded
 * values' largest), so nothing is decoded. A range sum that is not
 * finite (the run holds a NaN or an infinity, or its sum overflows)
 * makes the rank decoded and that run added value by value, so that the
 * bin keeps only its finite values as before. Elements placed by their
 * ids decode every element.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "lactl_bin.h"
#include "lactl_serve.h"

/* Whether the caller asked to stop. */
static int la__stopped(const lactl_sv_fill_t *f) {
  return f->stop && atomic_load_explicit(f->stop, memory_order_relaxed);
}

/* Bins every element of t at its place in the application's id order
 * (f->pos, by global element), in rows of b->w, decoding. */
static int la__fill_pos(la_traceset_t *t, lactl_bin_t *b, lactl_sv_fill_t *f,
                        double *w) {
  const uint32_t np = la_traceset_nprocs(t);
  uint64_t off = 0;
  for (uint32_t r = 0; r < np; r++) {
    if (la__stopped(f)) return LA_ESTATE;
    uint64_t ne = la_traceset_rank_elements(t, r);
    int have =
        la_traceset_has_rank(t, r) && la_traceset_rank_weights(t, r, w) == 0;
    if (have) f->decoded += ne;
    for (uint64_t e = 0; e < ne; e++) {
      double v = have ? w[e] : NAN;
      uint64_t p = f->pos[off + e];
      lactl_bin_add(b, p % b->w, p / b->w, v);
      if (isfinite(v)) f->sum += v, f->nfin++;
    }
    off += ne;
  }
  return 0;
}

int lactl_sv_fill(la_traceset_t *t, lactl_bin_t *b, lactl_sv_fill_t *f) {
  const uint32_t np = la_traceset_nprocs(t);
  const int grid = f->grid;
  const uint64_t *g = f->g;
  f->sum = 0, f->nfin = 0, f->ranges = 0, f->decoded = 0;
  uint64_t maxne = 1, off = 0;
  for (uint32_t r = 0; r < np; r++)
    if (la_traceset_rank_elements(t, r) > maxne)
      maxne = la_traceset_rank_elements(t, r);
  double *w = malloc(maxne * sizeof *w);
  if (!w) return LA_ENOMEM;
  if (f->pos && !grid) {
    int rc = la__fill_pos(t, b, f, w);
    free(w);
    return rc;
  }
  uint32_t *xb = malloc(b->w * sizeof *xb);
  uint64_t *xend = malloc(b->bw * sizeof *xend); /* past a column bin */
  if (!xb || !xend) {
    free(w), free(xb), free(xend);
    return LA_ENOMEM;
  }
  for (uint64_t x = 0; x < b->w; x++) {
    xb[x] = (uint32_t)lactl_bin_index(b, x, 0);
    xend[xb[x]] = x + 1;
  }
  /* range sums serve the mean, range sums and maxima the max */
  const int sums = !f->decode && b->mode != LACTL_BIN_EXTREME;
  const int max = b->mode == LACTL_BIN_MAX;
  const uint64_t at = grid ? g[2] / 2 : 0;
  int rc = 0;
  for (uint32_t r = 0; r < np && !rc; r++) {
    if (la__stopped(f)) {
      rc = LA_ESTATE;
      break;
    }
    uint64_t ne = la_traceset_rank_elements(t, r), dm[3] = {0}, o[3] = {0};
    uint64_t e0 = 0, e1 = ne;
    if (grid) {
      la_traceset_rank_grid(t, r, dm, o, NULL);
      uint64_t plane = dm[0] * dm[1];
      if (at < o[2] || at >= o[2] + dm[2] || plane == 0) {
        off += ne;
        continue;
      }
      e0 = (at - o[2]) * plane;
      e1 = e0 + plane < ne ? e0 + plane : ne;
    }
    int have = la_traceset_has_rank(t, r);
    int decoded = 0; /* w holds rank r's values */
    if (have && !sums) {
      have = la_traceset_rank_weights(t, r, w) == 0;
      decoded = have;
      if (have) f->decoded += ne;
    }
    /* the first cell's place, then one row at a time */
    const uint64_t rowlen = grid ? dm[0] : b->w, x0 = grid ? o[0] : 0;
    uint64_t cx = grid ? e0 % dm[0] : (off + e0) % b->w;
    uint64_t y = grid ? o[1] + e0 / dm[0] % dm[1] : (off + e0) / b->w;
    for (uint64_t e = e0; e < e1;) {
      uint64_t len = rowlen - cx < e1 - e ? rowlen - cx : e1 - e;
      uint64_t xa = x0 + cx, xe = xa + len < b->w ? xa + len : b->w;
      uint64_t ybase = y < b->h ? lactl_bin_index(b, 0, y) : 0;
      for (uint64_t k = xa; y < b->h && k < xe;) {
        uint32_t bx = xb[k];
        uint64_t kend = xend[bx] < xe ? xend[bx] : xe, i = bx + ybase;
        uint64_t first = e + (k - xa), cnt = kend - k;
        double s = NAN, m = NAN;
        uint64_t nm = 0;
        if (!have) {
          b->none[i] += cnt;
        } else if (!decoded &&
                   la_traceset_range_sum(t, off + first, cnt, &s) == 0 &&
                   isfinite(s) &&
                   (!max || (la_traceset_range_max(t, off + first, cnt, &m,
                                                   &nm) == 0 &&
                             nm == cnt))) {
          /* a finite sum: every value of the run is finite */
          if (max)
            lactl_bin_add_max(b, i, m, cnt);
          else
            lactl_bin_add_sum(b, i, s, cnt);
          f->sum += s, f->nfin += cnt, f->ranges++;
        } else {
          if (!decoded) { /* a value that is not finite: decode the rank */
            decoded = la_traceset_rank_weights(t, r, w) == 0;
            if (!decoded) {
              rc = LA_EIO;
              break;
            }
            f->decoded += ne;
          }
          f->sum += lactl_bin_add_run(b, i, w + first, cnt, &f->nfin);
        }
        k = kend;
      }
      if (rc) break;
      e += len;
      cx += len;
      if (cx == rowlen) {
        cx = 0;
        y = grid ? o[1] + e / dm[0] % dm[1] : y + 1;
      }
    }
    off += ne;
  }
  free(w), free(xb), free(xend);
  return rc;
}
