/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_pieced_read.c: a pieced trace's queries (docs/compaction.md,
 * flag 0x40; la_compact_pieced.c writes it): the decoder's parse of the
 * geometry after the header, and its cells, range sums, range max and the
 * stored value of a cell, from the geometry and the stored values
 * (decoded once at open: pieces are few). A cell's value is its piece's
 * value divided by the piece's cells; a cell in no piece is 0. A range
 * starts its search at the first piece that may reach it (a running most
 * of the pieces' ends, kept at open), so a trace read in slices does not
 * go over every piece for each one.
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
  if (t->check_only) return 0;
  /* the running most of the pieces' ends: where a range's pieces start */
  if ((t->pend = malloc(t->pc->count * sizeof *t->pend)) == NULL)
    return LA_ENOMEM;
  for (uint64_t j = 0, e = 0; j < t->pc->count; j++) {
    uint64_t pe = la_piece_end(t->pc, &t->pc->p[j]);
    t->pend[j] = e = pe > e ? pe : e;
  }
  return 0;
}

/* The first piece that may hold a cell at or after lo: pieces before it
 * all end at or before lo. */
static uint64_t la__from(const la_trace_t *t, uint64_t lo) {
  uint64_t a = 0, b = t->pc->count;
  while (a < b) {
    uint64_t mid = a + (b - a) / 2;
    if (t->pend[mid] <= lo)
      a = mid + 1;
    else
      b = mid;
  }
  return a;
}

double la_trace_pieces_sum(const la_trace_t *t, uint64_t first,
                           uint64_t count) {
  uint64_t j = la__from(t, first);
  la_pieces_t tail = *t->pc;
  tail.count -= j;
  tail.p += j;
  return la_pieces_range_sum(&tail, t->pv + j, first, first + count);
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
  for (uint64_t i = la__from(t, first); i < g->count && g->p[i].first < end;
       i++) {
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
  for (uint64_t i = la__from(t, first); i < g->count && g->p[i].first < end;
       i++) {
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
  for (uint64_t k = la__from(t, i); k < g->count && g->p[k].first <= i;
       k++) {
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

