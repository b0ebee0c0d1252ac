/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_pieces.h: the geometry of a pieced trace (a cycle of box and
 * range probes stored one value per piece) and its expansion to cells.
 *
 * A pieced trace's encoding holds one value per piece, in order of the
 * pieces' first cells; its geometry says which cells each piece stands
 * for: a range of consecutive elements (first, count), or a box of
 * ni x nj x nk cells of an nx x ny x nz grid from its first cell. Readers
 * expand it to cells (a piece's value divided evenly over its cells; a
 * cell in no piece is 0) and take range sums from the pieces (a piece
 * wholly inside the range adds its value as stored: exact totals).
 *
 * The geometry's bytes (varints, LEB128):
 *   count, n_cells, nx, ny, nz        (nx = ny = nz = 0: not a grid)
 *   per piece: (delta << 1) | same    delta: first cell minus the previous
 *                                     piece's (the first piece: its first
 *                                     cell); same: the previous shape
 *              ni, nj, nk             only without same; a range is
 *                                     (count, 0, 0)
 * A decoder refuses, naming which: more pieces than cells, a count other
 * than the trace's, a piece outside the elements or the grid, a box in a
 * geometry that is not a grid, pieces out of order or overlapping, bytes
 * that end early or go on after the last piece.
 *
 * Pure C, no global state; functions return 0 or a negative LA_E* code.
 */
#ifndef LA_COMPACT_PIECES_H
#define LA_COMPACT_PIECES_H

#include <stddef.h>
#include <stdint.h>

#include "la_errcodes.h"
#include "la_shm_layout.h"

typedef struct la_piece {
  uint64_t first;     /* first cell (element) */
  uint32_t ni, nj, nk; /* a box's shape; a range: (count, 0, 0) */
} la_piece_t;

typedef struct la_pieces {
  uint64_t count;          /* pieces */
  uint64_t n_cells;        /* cells of the trace */
  uint64_t nx, ny, nz;     /* the grid (0: none, ranges only) */
  la_piece_t *p;           /* count of them, in order of first cell */
} la_pieces_t;

/* Cells of piece p. */
static inline uint64_t la_piece_cells(const la_piece_t *p) {
  return (uint64_t)p->ni * (p->nj ? p->nj : 1) * (p->nk ? p->nk : 1);
}

/* One past the last cell of piece p of g. */
static inline uint64_t la_piece_end(const la_pieces_t *g, const la_piece_t *p) {
  if (p->nj == 0) return p->first + p->ni;
  return p->first + (uint64_t)(p->nk - 1) * g->nx * g->ny +
         (uint64_t)(p->nj - 1) * g->nx + p->ni;
}

/* Checks g as a decoder does (counts, grid, each piece inside the cells
 * or the grid, in order of first cell, no two sharing a cell). Returns 0,
 * LA_EPROTO with why naming the first problem (why may be NULL), or
 * LA_ENOMEM. */
int la_pieces_check(const la_pieces_t *g, char *why, size_t why_len);

/* The geometry's bytes into *out (malloc'ed, *len of them). LA_EINVAL
 * when la_pieces_check refuses g: what leaves is what a reader accepts. */
int la_pieces_encode(const la_pieces_t *g, uint8_t **out, size_t *len);

/* Parses and checks a geometry (see above) into *g (la_pieces_free).
 * expect_count: the trace's stored values, expect_cells: its elements
 * (UINT64_MAX: not checked). Returns 0, LA_ENOMEM, or LA_EPROTO with why
 * naming the first problem. */
int la_pieces_decode(const uint8_t *b, size_t len, uint64_t expect_count,
                     uint64_t expect_cells, la_pieces_t *g, char *why,
                     size_t why_len);

void la_pieces_free(la_pieces_t *g);

/* The cells (g->n_cells of them) of the pieces' values v (g->count); g
 * as la_pieces_check accepts it (no two pieces share a cell: pieces that
 * cover every cell write each once, and no cell is zeroed first). */
void la_pieces_expand(const la_pieces_t *g, const double *v, double *cells);

/* The sum of cells [lo, hi) of the expansion of v, from the pieces: a
 * piece wholly inside adds its value, one partly inside its share times
 * its cells inside. */
double la_pieces_range_sum(const la_pieces_t *g, const double *v,
                           uint64_t lo, uint64_t hi);

/* FNV-1a of a geometry's bytes (the LocalAgent's history key: a changed
 * geometry starts afresh). */
uint64_t la_pieces_hash(const uint8_t *b, size_t len);

/* A cycle's piece records as a geometry of n_cells cells (grid: nx, ny,
 * nz, or NULL: ranges only) and its values (values: n_records doubles,
 * each record's value times scale, in the geometry's order), when the
 * cycle is stored one value per piece: the table (head, then n_records
 * records, read once each: the application may rewrite them) holds a
 * claimed record, every record passes la_shm_piece_check in channel 0, no
 * two share a cell, and no probe spilled into the cells. Returns 1 and *g
 * (la_pieces_free), with geom (not NULL) the geometry's bytes in *geom
 * (malloc'ed, *glen of them: la_pieces_encode), 0 when the cycle is not
 * so (*g empty: it is spread over its cells), or LA_ENOMEM. The caller
 * checks that no cell value and no row value was written
 * (la_shm_cells_none). */
int la_pieces_from_shm(const la_shm_pieces_head_t *head, uint64_t n_records,
                       uint64_t n_cells, const uint64_t *grid, double scale,
                       la_pieces_t *g, double *values, uint8_t **geom,
                       size_t *glen);

#endif /* LA_COMPACT_PIECES_H */
