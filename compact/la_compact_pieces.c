/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_pieces.c: a pieced trace's geometry (la_compact_pieces.h):
 * its bytes, their checks, and the expansion of the pieces' values to
 * cells and range sums. The overlap check merges the pieces' rows of
 * cells in cell order (a heap of the pieces under way: memory by pieces,
 * time by rows times their log), never a map of the cells.
 */
#include "la_compact_pieces.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact.h"
#include "la_compact_internal.h"

/* Why piece p does not fit the cells or the grid, or NULL. */
static const char *la__piece_bad(const la_pieces_t *g, const la_piece_t *p) {
  if (p->nj == 0 && p->nk == 0) {
    if (p->ni == 0) return "a piece with no cells";
    if (p->first >= g->n_cells || p->ni > g->n_cells - p->first)
      return "a piece outside the elements";
    return NULL;
  }
  if (g->nx == 0) return "a box in a geometry that is not a grid";
  if (p->ni == 0 || p->nj == 0 || p->nk == 0) return "a piece with no cells";
  if (p->first >= g->n_cells) return "a piece outside the grid";
  uint64_t i0 = p->first % g->nx, j0 = (p->first / g->nx) % g->ny,
           k0 = p->first / (g->nx * g->ny);
  if (p->ni > g->nx - i0 || p->nj > g->ny - j0 || p->nk > g->nz - k0)
    return "a piece outside the grid";
  return NULL;
}

/* A piece's cursor over its rows: the next row's first cell. */
typedef struct {
  uint64_t at;  /* first cell of row r */
  uint64_t r;   /* row within the piece: y + z * nj */
  uint64_t idx; /* the piece */
} la__cursor_t;

static void la__sift_down(la__cursor_t *h, uint64_t n, uint64_t i) {
  for (;;) {
    uint64_t l = 2 * i + 1, m = i;
    if (l < n && h[l].at < h[m].at) m = l;
    if (l + 1 < n && h[l + 1].at < h[m].at) m = l + 1;
    if (m == i) return;
    la__cursor_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static void la__sift_up(la__cursor_t *h, uint64_t i) {
  while (i > 0) {
    uint64_t up = (i - 1) / 2;
    if (h[up].at <= h[i].at) return;
    la__cursor_t t = h[i];
    h[i] = h[up];
    h[up] = t;
    i = up;
  }
}

/* Whether two of g's pieces (in order of first cell) share a cell: their
 * rows merged in cell order, each starting at or after the previous one's
 * end. A piece joins the heap when the merge reaches its first cell, so
 * the heap holds the pieces under way (a sweep's boxes of one plane), not
 * all of them. *which: the piece found overlapping. Returns 0, 1
 * (overlap) or LA_ENOMEM. */
static int la__overlap(const la_pieces_t *g, uint64_t *which) {
  if (g->count < 2) return 0;
  la__cursor_t *h = malloc(g->count * sizeof *h);
  if (!h) return LA_ENOMEM;
  uint64_t n = 0, next = 0, end = 0;
  int any = 0, rc = 0;
  while (n || next < g->count) {
    if (next < g->count && (n == 0 || g->p[next].first <= h[0].at)) {
      h[n] = (la__cursor_t){g->p[next].first, 0, next};
      la__sift_up(h, n++);
      next++;
      continue;
    }
    la__cursor_t c = h[0];
    const la_piece_t *p = &g->p[c.idx];
    if (any && c.at < end) {
      *which = c.idx;
      rc = 1;
      break;
    }
    any = 1;
    end = c.at + p->ni;
    uint64_t rows = p->nj ? (uint64_t)p->nj * p->nk : 1;
    if (++c.r < rows) {
      uint64_t y = c.r % p->nj, z = c.r / p->nj;
      c.at = p->first + y * g->nx + z * g->nx * g->ny;
      h[0] = c;
    } else {
      h[0] = h[--n];
    }
    la__sift_down(h, n, 0);
  }
  free(h);
  return rc;
}

static int la__refuse(char *why, size_t why_len, const char *what,
                      uint64_t i) {
  if (why && why_len)
    snprintf(why, why_len, "pieced geometry: %s (piece %llu)", what,
             (unsigned long long)i);
  return LA_EPROTO;
}

/* The counts and the grid of g. */
static int la__check_head(const la_pieces_t *g, char *why, size_t why_len) {
  if (g->n_cells == 0 || g->n_cells > LA_TRACE_MAX_POINTS)
    return la__refuse(why, why_len, "a cell count out of range", 0);
  if (g->count == 0 || g->count > g->n_cells)
    return la__refuse(why, why_len, "more pieces than elements (or none)", 0);
  if ((g->nx || g->ny || g->nz) &&
      (!g->nx || !g->ny || !g->nz || g->nx > g->n_cells ||
       g->ny > g->n_cells / g->nx || g->nz != g->n_cells / (g->nx * g->ny) ||
       g->n_cells % (g->nx * g->ny)))
    return la__refuse(why, why_len, "a grid that is not its cells", 0);
  return 0;
}

int la_pieces_check(const la_pieces_t *g, char *why, size_t why_len) {
  int rc = la__check_head(g, why, why_len);
  if (rc != 0) return rc;
  uint64_t total = 0;
  for (uint64_t i = 0; i < g->count; i++) {
    const la_piece_t *p = &g->p[i];
    if (i > 0 && p->first <= g->p[i - 1].first)
      return la__refuse(why, why_len,
                        p->first == g->p[i - 1].first
                            ? "overlapping pieces"
                            : "pieces out of order of first cell",
                        i);
    const char *bad = la__piece_bad(g, p);
    if (bad) return la__refuse(why, why_len, bad, i);
    total += la_piece_cells(p);
    if (total > g->n_cells)
      return la__refuse(why, why_len, "overlapping pieces", i);
  }
  uint64_t which = 0;
  int o = la__overlap(g, &which);
  if (o < 0) return o;
  if (o) return la__refuse(why, why_len, "overlapping pieces", which);
  return 0;
}

int la_pieces_decode(const uint8_t *b, size_t len, uint64_t expect_count,
                     uint64_t expect_cells, la_pieces_t *g, char *why,
                     size_t why_len) {
  la_creader_t r = {b, len, 0};
  memset(g, 0, sizeof *g);
  uint64_t f[5];
  for (int i = 0; i < 5; i++)
    if (la_creader_varint(&r, &f[i]) != 0)
      return la__refuse(why, why_len, "its header ends early", 0);
  g->count = f[0];
  g->n_cells = f[1];
  g->nx = f[2];
  g->ny = f[3];
  g->nz = f[4];
  if (expect_cells != UINT64_MAX && g->n_cells != expect_cells)
    return la__refuse(why, why_len,
                      "a cell count other than the trace's elements", 0);
  if (expect_count != UINT64_MAX && g->count != expect_count)
    return la__refuse(why, why_len,
                      "a piece count other than the trace's values", 0);
  int rc = la__check_head(g, why, why_len);
  if (rc != 0) return rc;
  /* every piece takes a byte at least: a count beyond the bytes is a lie
   * found before the allocation */
  if (g->count > len - r.off)
    return la__refuse(why, why_len, "its pieces end early", 0);
  g->p = malloc(g->count * sizeof *g->p);
  if (!g->p) return LA_ENOMEM;
  la_piece_t prev = {0, 0, 0, 0};
  for (uint64_t i = 0; i < g->count; i++) {
    uint64_t d, s[3] = {prev.ni, prev.nj, prev.nk};
    if (la_creader_varint(&r, &d) != 0) goto early;
    if (!(d & 1))
      for (int k = 0; k < 3; k++)
        if (la_creader_varint(&r, &s[k]) != 0) goto early;
    if (i == 0 && (d & 1)) {
      la_pieces_free(g);
      return la__refuse(why, why_len, "a first piece without its shape", i);
    }
    uint64_t delta = d >> 1;
    if (delta > g->n_cells || s[0] > UINT32_MAX || s[1] > UINT32_MAX ||
        s[2] > UINT32_MAX || (s[1] == 0) != (s[2] == 0)) {
      la_pieces_free(g);
      return la__refuse(why, why_len, "a piece outside the elements", i);
    }
    la_piece_t p = {(i ? prev.first : 0) + delta, (uint32_t)s[0],
                    (uint32_t)s[1], (uint32_t)s[2]};
    g->p[i] = prev = p;
  }
  if (r.off != len) {
    la_pieces_free(g);
    return la__refuse(why, why_len, "bytes after its last piece",
                      g->count);
  }
  rc = la_pieces_check(g, why, why_len);
  if (rc != 0) la_pieces_free(g);
  return rc;
early:
  la_pieces_free(g);
  return la__refuse(why, why_len, "its pieces end early", 0);
}

int la_pieces_encode(const la_pieces_t *g, uint8_t **out, size_t *len) {
  la_cbuf_t b = {0};
  *out = NULL;
  *len = 0;
  int rc = la_pieces_check(g, NULL, 0);
  if (rc != 0) return rc == LA_EPROTO ? LA_EINVAL : rc;
  la_cbuf_put_varint(&b, g->count);
  la_cbuf_put_varint(&b, g->n_cells);
  la_cbuf_put_varint(&b, g->nx);
  la_cbuf_put_varint(&b, g->ny);
  la_cbuf_put_varint(&b, g->nz);
  for (uint64_t i = 0; i < g->count; i++) {
    const la_piece_t *p = &g->p[i], *q = i ? &g->p[i - 1] : NULL;
    int same = q && q->ni == p->ni && q->nj == p->nj && q->nk == p->nk;
    la_cbuf_put_varint(&b, ((p->first - (q ? q->first : 0)) << 1) | (uint64_t)same);
    if (!same) {
      la_cbuf_put_varint(&b, p->ni);
      la_cbuf_put_varint(&b, p->nj);
      la_cbuf_put_varint(&b, p->nk);
    }
  }
  if (b.err) {
    la_cbuf_free(&b);
    return LA_ENOMEM;
  }
  *out = b.p;
  *len = b.len;
  return 0;
}

void la_pieces_free(la_pieces_t *g) {
  free(g->p);
  g->p = NULL;
  g->count = 0;
}

void la_pieces_expand(const la_pieces_t *g, const double *v, double *cells) {
  /* pieces share no cell: as many cells as the trace's cover them all */
  uint64_t covered = 0;
  for (uint64_t i = 0; i < g->count; i++) covered += la_piece_cells(&g->p[i]);
  if (covered != g->n_cells) memset(cells, 0, g->n_cells * sizeof *cells);
  for (uint64_t i = 0; i < g->count; i++) {
    const la_piece_t *p = &g->p[i];
    double share = v[i] / (double)la_piece_cells(p);
    uint64_t nj = p->nj ? p->nj : 1, nk = p->nk ? p->nk : 1;
    for (uint64_t z = 0; z < nk; z++)
      for (uint64_t y = 0; y < nj; y++) {
        double *c = cells + p->first + y * g->nx + z * g->nx * g->ny;
        for (uint64_t x = 0; x < p->ni; x++) c[x] = share;
      }
  }
}

double la_pieces_range_sum(const la_pieces_t *g, const double *v,
                           uint64_t lo, uint64_t hi) {
  double s = 0;
  if (hi > g->n_cells) hi = g->n_cells;
  for (uint64_t i = 0; i < g->count && g->p[i].first < hi; i++) {
    const la_piece_t *p = &g->p[i];
    uint64_t end = la_piece_end(g, p);
    if (end <= lo) continue;
    if (p->first >= lo && end <= hi) { /* wholly inside: as stored */
      s += v[i];
      continue;
    }
    uint64_t nj = p->nj ? p->nj : 1, nk = p->nk ? p->nk : 1, in = 0;
    for (uint64_t z = 0; z < nk; z++)
      for (uint64_t y = 0; y < nj; y++) {
        uint64_t a = p->first + y * g->nx + z * g->nx * g->ny, b = a + p->ni;
        if (a < lo) a = lo;
        if (b > hi) b = hi;
        if (b > a) in += b - a;
      }
    if (in) s += v[i] / (double)la_piece_cells(p) * (double)in;
  }
  return s;
}

uint64_t la_pieces_hash(const uint8_t *b, size_t len) {
  uint64_t h = UINT64_C(1469598103934665603);
  for (size_t i = 0; i < len; i++) {
    h ^= b[i];
    h *= UINT64_C(1099511628211);
  }
  return h;
}
