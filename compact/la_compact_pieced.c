/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_pieced.c: the pieced form of an encoding (docs/compaction.md,
 * flag 0x40): one stored value per piece (a box of a grid or a range of
 * elements, la_compact_pieces.h) and the geometry inside the encoding, so
 * that la_trace_open() and every query on it give the cells.
 *
 * la_compact_pieced() turns the compaction of the pieces' values into the
 * pieced encoding (the header flag, the geometry's length and bytes after
 * the header, the body as it was) with the per-cell statistics and error;
 * the la_trace_pieces_* functions answer the decoder's queries for a
 * pieced trace from its geometry and its stored values (decoded once at
 * open: pieces are few). A cell's value is its piece's value divided by
 * the piece's cells; a cell in no piece is 0. The header's bound stays the
 * pieces' (a maxerr epsilon per stored value: a cell's error is at most
 * that over its piece's cells).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_index.h"
#include "la_errors.h"

/* Calls fn(ctx, a, b) for each row of piece p clipped to [lo, hi) that
 * keeps a cell; returns the cells so visited. */
typedef void (*la__row_fn)(void *ctx, uint64_t a, uint64_t b);

static uint64_t la__rows(const la_pieces_t *g, const la_piece_t *p,
                         uint64_t lo, uint64_t hi, la__row_fn fn, void *ctx) {
  uint64_t nj = p->nj ? p->nj : 1, nk = p->nk ? p->nk : 1, in = 0;
  for (uint64_t z = 0; z < nk; z++)
    for (uint64_t y = 0; y < nj; y++) {
      uint64_t a = p->first + y * g->nx + z * g->nx * g->ny, b = a + p->ni;
      if (a >= hi) return in;
      if (a < lo) a = lo;
      if (b > hi) b = hi;
      if (b <= a) continue;
      in += b - a;
      if (fn) fn(ctx, a, b);
    }
  return in;
}

/* ------------------------------------------------------------- the reader */

int la_trace_pieces_parse(la_trace_t *t, la_creader_t *r, uint64_t n,
                          uint64_t max_points, char *why, size_t why_len) {
  uint64_t glen;
  char gwhy[160] = "";
  int rc;

  if ((rc = la_creader_varint(r, &glen)) != 0)
    return la_errorf(why, why_len, rc, "no pieced geometry");
  if (glen > r->len - r->off)
    return la_errorf(why, why_len, LA_ETRUNC,
                     "pieced geometry of %llu bytes, %zu left",
                     (unsigned long long)glen, r->len - r->off);
  if ((t->pc = calloc(1, sizeof *t->pc)) == NULL) return LA_ENOMEM;
  rc = la_pieces_decode(r->p + r->off, (size_t)glen, n, UINT64_MAX, t->pc,
                        gwhy, sizeof gwhy);
  if (rc != 0) {
    free(t->pc);
    t->pc = NULL;
    return rc == LA_ENOMEM ? rc
                           : la_errorf(why, why_len, rc, "%s", gwhy);
  }
  if (t->pc->n_cells > max_points)
    return la_errorf(why, why_len, LA_ELIMIT,
                     "pieced: %llu cells, more than the %llu allowed",
                     (unsigned long long)t->pc->n_cells,
                     (unsigned long long)max_points);
  r->off += (size_t)glen;
  t->cells = t->pc->n_cells;
  return 0;
}

typedef struct {
  double *out, share;
  uint64_t first;
} la__fill_t;

static void la__fill(void *ctx, uint64_t a, uint64_t b) {
  la__fill_t *f = ctx;
  for (uint64_t c = a; c < b; c++) f->out[c - f->first] = f->share;
}

void la_trace_pieces_decode(const la_trace_t *t, uint64_t first,
                            uint64_t count, double *out) {
  const la_pieces_t *g = t->pc;
  uint64_t end = first + count;
  memset(out, 0, count * sizeof *out);
  for (uint64_t i = 0; i < g->count && g->p[i].first < end; i++) {
    const la_piece_t *p = &g->p[i];
    if (la_piece_end(g, p) <= first) continue;
    la__fill_t f = {out, t->pv[i] / (double)la_piece_cells(p), first};
    la__rows(g, p, first, end, la__fill, &f);
  }
}

void la_trace_pieces_max(const la_trace_t *t, uint64_t first, uint64_t count,
                         double *max, uint64_t *nfinite) {
  const la_pieces_t *g = t->pc;
  uint64_t end = first + count, covered = 0, nfin = 0;
  double m = -INFINITY;
  for (uint64_t i = 0; i < g->count && g->p[i].first < end; i++) {
    const la_piece_t *p = &g->p[i];
    if (la_piece_end(g, p) <= first) continue;
    uint64_t in = la__rows(g, p, first, end, NULL, NULL);
    double share = t->pv[i] / (double)la_piece_cells(p);
    covered += in;
    if (in && isfinite(share)) {
      nfin += in;
      if (share > m) m = share;
    }
  }
  if (covered < count) { /* cells in no piece: 0 */
    nfin += count - covered;
    if (0 > m) m = 0;
  }
  *max = m;
  *nfinite = nfin;
}

int la_trace_pieces_which(const la_trace_t *t, uint64_t i, uint64_t *j) {
  const la_pieces_t *g = t->pc;
  for (uint64_t k = 0; k < g->count && g->p[k].first <= i; k++) {
    const la_piece_t *p = &g->p[k];
    if (la_piece_end(g, p) <= i) continue;
    if (la__rows(g, p, i, i + 1, NULL, NULL)) {
      *j = k;
      return 0;
    }
  }
  return -1;
}

uint64_t la_trace_pieces_cells(const la_trace_t *t, uint64_t j0,
                               uint64_t j1) {
  uint64_t c = 0;
  for (uint64_t j = j0; j < j1; j++) c += la_piece_cells(&t->pc->p[j]);
  return c;
}

/* ----------------------------------------------------------- the writer */

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

int la_compact_pieced(const la_compact_result_t *in, const double *v,
                      const uint8_t *geom, size_t glen,
                      la_compact_result_t *out) {
  uint8_t h[6];
  uint64_t n;
  double bound;
  size_t head;
  la_pieces_t g;

  memset(out, 0, sizeof *out);
  if (v == NULL || geom == NULL ||
      la_compact_plain_head(in, h, &bound, &n, &head) != 0)
    return LA_EINVAL;
  int rc = la_pieces_decode(geom, glen, n, UINT64_MAX, &g, NULL, 0);
  if (rc != 0) return rc == LA_ENOMEM ? rc : LA_EINVAL;
  size_t body = in->len - 4 - head;
  uint8_t lv[10];
  size_t ll = la_varint_write(lv, glen);
  out->bytes = malloc(head + ll + glen + body + 4);
  if (!out->bytes) {
    la_pieces_free(&g);
    return LA_ENOMEM;
  }
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
  rc = la__cell_stats(in, v, &g, out);
  la_pieces_free(&g);
  if (rc != 0) la_compact_result_free(out);
  return rc;
}
