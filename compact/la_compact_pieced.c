/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_pieced.c: the pieced form of an encoding (docs/compaction.md,
 * flag 0x40): one stored value per piece (a box of a grid or a range of
 * elements, la_compact_pieces.h) and the geometry inside the encoding, so
 * that la_trace_open() and every query on it give the cells.
 *
 * la_compact_pieced() turns the compaction of the pieces' values into the
 * pieced encoding (the header flag, the geometry's length and bytes after
 * the header, the body as it was) with the per-cell statistics and error;
 * la_compact_pieced_read.c answers the decoder's queries for it. A cell's
 * value is its piece's value divided by the piece's cells; a cell in no
 * piece is 0. The header's bound stays the pieces' (a maxerr epsilon per
 * stored value: a cell's error is at most that over its piece's cells).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_index.h"
#include "la_errors.h"

/* The per-cell statistics and error of out (a pieced encoding whose
 * pieces' raw values are v) into out->stats and out->error. */
static int la__cell_stats(const la_compact_result_t *in, const double *v,
                          const la_pieces_t *g, la_compact_result_t *out) {
  la_trace_t *t = NULL;
  int rc = la_trace_open(in->bytes, in->len, &t, NULL, 0);
  if (rc != 0) return rc;
  uint64_t covered = 0, m = 0;
  double mn = INFINITY, mx = -INFINITY, emax = 0, e2 = 0, xs = 0;
  int any = 0;
  for (uint64_t i = 0; i < g->count; i++) {
    double cells = (double)la_piece_cells(&g->p[i]), share = v[i] / cells;
    covered += la_piece_cells(&g->p[i]);
    if (!isnan(share)) {
      any = 1;
      mn = share < mn ? share : mn;
      mx = share > mx ? share : mx;
    }
    if (la_trace_is_verbatim(t, i)) continue; /* exact, not in the error */
    double d, e;
    la_trace_decode(t, i, 1, &d);
    e = fabs(v[i] - d) / cells;
    if (e > emax || isnan(e)) emax = e;
    e2 += e * e * cells;
    xs += v[i];
    m += la_piece_cells(&g->p[i]);
  }
  la_trace_close(t);
  if (covered < g->n_cells) { /* cells in no piece: exactly 0 */
    any = 1;
    mn = mn < 0 ? mn : 0;
    mx = mx > 0 ? mx : 0;
    m += g->n_cells - covered;
  }
  out->stats.count = g->n_cells;
  out->stats.sum = in->stats.sum;
  out->stats.min = any ? mn : in->stats.min;
  out->stats.max = any ? mx : in->stats.max;
  out->error.max_abs = emax;
  out->error.rmse = m ? sqrt(e2 / (double)m) : 0;
  out->error.cv = out->error.rmse == 0 ? 0
                                       : out->error.rmse /
                                             fabs(xs / (double)m);
  return 0;
}

/* Without the pieces' raw values (a robust series: the LocalAgent keeps
 * only its decoded values): bounds from in's, every cell's share of a
 * value in [min, max] over a piece of [fewest, most] cells lying between
 * the corners' quotients, the error at most the pieces' over the fewest
 * cells. */
static void la__cell_bounds(const la_compact_result_t *in,
                            const la_pieces_t *g, la_compact_result_t *out) {
  uint64_t covered = 0, cmin = UINT64_MAX, cmax = 0;
  for (uint64_t i = 0; i < g->count; i++) {
    uint64_t c = la_piece_cells(&g->p[i]);
    covered += c;
    cmin = c < cmin ? c : cmin;
    cmax = c > cmax ? c : cmax;
  }
  double lo = fmin(in->stats.min / (double)cmin, in->stats.min / (double)cmax),
         hi = fmax(in->stats.max / (double)cmin, in->stats.max / (double)cmax);
  if (covered < g->n_cells) { /* cells in no piece: exactly 0 */
    lo = fmin(lo, 0);
    hi = fmax(hi, 0);
  }
  out->stats.count = g->n_cells;
  out->stats.sum = in->stats.sum;
  out->stats.min = lo;
  out->stats.max = hi;
  out->error.max_abs = in->error.max_abs / (double)cmin;
  out->error.rmse = in->error.rmse / (double)cmin;
  double mean = fabs(in->stats.sum / (double)g->n_cells);
  out->error.cv = out->error.rmse == 0 ? 0 : out->error.rmse / mean;
}

int la_compact_pieced_of(const la_compact_result_t *in, const double *v,
                         const la_pieces_t *g, const uint8_t *geom,
                         size_t glen, la_compact_result_t *out) {
  uint8_t h[6];
  uint64_t n;
  double bound;
  size_t head;

  memset(out, 0, sizeof *out);
  if (geom == NULL || g == NULL ||
      la_compact_plain_head(in, h, &bound, &n, &head) != 0 || g->count != n)
    return LA_EINVAL;
  size_t body = in->len - 4 - head;
  uint8_t lv[10];
  size_t ll = la_varint_write(lv, glen);
  out->bytes = malloc(head + ll + glen + body + 4);
  if (!out->bytes) return LA_ENOMEM;
  memcpy(out->bytes, in->bytes, head);
  out->bytes[5] = (uint8_t)(h[5] | LA_CENC_F_PIECES);
  memcpy(out->bytes + head, lv, ll);
  memcpy(out->bytes + head + ll, geom, glen);
  memcpy(out->bytes + head + ll + glen, in->bytes + head, body);
  out->len = head + ll + glen + body;
  uint32_t crc = la_compact_crc32(0, out->bytes, out->len);
  for (int i = 0; i < 4; i++)
    out->bytes[out->len + i] = (uint8_t)(crc >> (8 * i));
  out->len += 4;
  out->mode = in->mode;
  out->segments = in->segments;
  out->exceptions = in->exceptions;
  out->quantized = in->quantized;
  int rc = 0;
  if (v)
    rc = la__cell_stats(in, v, g, out);
  else
    la__cell_bounds(in, g, out);
  if (rc != 0) la_compact_result_free(out);
  return rc;
}

int la_compact_pieced(const la_compact_result_t *in, const double *v,
                      const uint8_t *geom, size_t glen,
                      la_compact_result_t *out) {
  uint8_t h[6];
  uint64_t n;
  double bound;
  size_t head;
  la_pieces_t g;

  memset(out, 0, sizeof *out);
  if (geom == NULL || la_compact_plain_head(in, h, &bound, &n, &head) != 0)
    return LA_EINVAL;
  int rc = la_pieces_decode(geom, glen, n, UINT64_MAX, &g, NULL, 0);
  if (rc != 0) return rc == LA_ENOMEM ? rc : LA_EINVAL;
  rc = la_compact_pieced_of(in, v, &g, geom, glen, out);
  la_pieces_free(&g);
  return rc;
}
