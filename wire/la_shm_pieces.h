/* SPDX-License-Identifier: BSD-3-Clause */
/* la_shm_pieces.h: the piece table of a shared-memory buffer (layout 6,
 * la_shm_layout.h): how libla adds a box or range probe to its record
 * (la_shm_piece_add), and how a reader spreads the records over their cells
 * after checking each one (la_shm_pieces_fold: the LocalAgent when it takes
 * a buffer, LA_DUMP_RAW when it writes the ground truth, so both give the
 * same values). la_shm_spread_add is the one spread of an interval over a
 * box's cells: libla's own (a table that is full, a segment older than 6)
 * and the fold's, so a box gives the same cell values either way (up to
 * the order of additions into a cell that other probes wrote as well).
 */
#ifndef LA_SHM_PIECES_H
#define LA_SHM_PIECES_H

#include <stdint.h>

#include "la_shm_layout.h"

/* Adds share to nk planes of nj rows of ni values from v, rows sx values
 * apart and planes sxy. Four at a time: at -O2 the compiler turns them
 * into vector adds (it does not vectorise a loop of unknown length there),
 * which halves the cost of a row's spread. */
static inline void la_shm_spread_add(double *v, double share, uint64_t ni,
                                     uint64_t nj, uint64_t nk, uint64_t sx,
                                     uint64_t sxy) {
  for (uint64_t k = 0; k < nk; k++)
    for (uint64_t j = 0; j < nj; j++) {
      double *r = v + j * sx + k * sxy;
      uint64_t i = 0;
      for (; i + 4 <= ni; i += 4) {
        r[i] += share;
        r[i + 1] += share;
        r[i + 2] += share;
        r[i + 3] += share;
      }
      for (; i < ni; i++) r[i] += share;
    }
}

/* The key of a piece whose first element is first, in channel ch. */
static inline uint64_t la_shm_piece_key(uint64_t first, uint32_t ch) {
  return ((first << 4) | ch) + 1;
}

/* Adds dv to the record of the piece (key, ni, nj, nk) in a table of mask
 * + 1 records (a power of two), looked for from record `start` on (libla
 * starts at the piece's first cell scaled to the table, so that a sweep's
 * boxes, probed in cell order, find their records in order too), claiming a free one for its first interval
 * in the cycle (head->claimed set to 1: a store, not a count, which would
 * cost a locked addition per claim). Threads that probe disjoint
 * pieces may add at once: a record is claimed with a compare-and-swap on
 * its key, and a piece's value is added by the thread that probes it (as
 * a cell's). Returns 0, or -1 when none of LA_SHM_PIECES_PROBES records
 * from the piece's place is its own or free (the caller spreads). */
static inline int la_shm_piece_add(la_shm_pieces_head_t *head,
                                   la_shm_piece_t *t, uint64_t mask,
                                   uint64_t start, uint64_t key, uint32_t ni,
                                   uint32_t nj, uint32_t nk, double dv) {
  for (uint32_t p = 0; p < LA_SHM_PIECES_PROBES; p++) {
    la_shm_piece_t *r = &t[(start + p) & mask];
    uint64_t k = __atomic_load_n(&r->key, __ATOMIC_ACQUIRE);
    if (k == 0) {
      if (__atomic_compare_exchange_n(&r->key, &k, key, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        r->ni = ni;
        r->nj = nj;
        r->nk = nk;
        r->value += dv;
        if (!__atomic_load_n(&head->claimed, __ATOMIC_RELAXED))
          __atomic_store_n(&head->claimed, 1, __ATOMIC_RELAXED);
        return 0;
      }
    }
    if (k == key && r->ni == ni && r->nj == nj && r->nk == nk) {
      r->value += dv;
      return 0;
    }
  }
  return -1;
}

/* Checks one record (a copy: the application may rewrite the table) of a
 * buffer of n_channels x n elements, grid nx x ny x nz (nx 0: not a grid,
 * only ranges are valid). Returns NULL, or why it is refused. */
static inline const char *la_shm_piece_check(const la_shm_piece_t *r,
                                             uint64_t n, uint32_t n_channels,
                                             uint64_t nx, uint64_t ny,
                                             uint64_t nz) {
  uint64_t first = (r->key - 1) >> 4;
  uint32_t ch = (uint32_t)((r->key - 1) & 15u);
  if (ch >= n_channels) return "a piece in a channel not declared";
  if (r->nj == 0 && r->nk == 0) {
    if (r->ni == 0 || first >= n || r->ni > n - first)
      return "an element range outside the elements";
    return 0;
  }
  if (nx == 0) return "a box in a registration that is not a grid";
  if (r->ni == 0 || r->nj == 0 || r->nk == 0) return "a box with no cells";
  if (first >= n) return "a box outside the grid";
  uint64_t i0 = first % nx, j0 = (first / nx) % ny, k0 = first / (nx * ny);
  if (r->ni > nx - i0 || r->nj > ny - j0 || r->nk > nz - k0)
    return "a box outside the grid";
  return 0;
}

/* Whether a cycle wrote neither a cell value nor a row value, only piece
 * records (what is stored one value per piece, la_pieces_from_shm): mark,
 * what libla said (bufmeta.cells), NONE, or UNKNOWN with cells[0..n) all
 * 0 (WRITTEN: no, whatever the cells hold); rows[0..n_rows) all 0 (rows
 * NULL: none). The LocalAgent and LA_DUMP_RAW decide alike. */
static inline int la_shm_cells_none(uint64_t mark, const double *cells,
                                    uint64_t n, const double *rows,
                                    uint64_t n_rows) {
  if (mark == LA_SHM_CELLS_WRITTEN ||
      (mark != LA_SHM_CELLS_NONE && !la_shm_all_zero(cells, n)))
    return 0;
  return rows == NULL || la_shm_all_zero(rows, n_rows);
}

/* Adds share times the cells of the ni consecutive elements from e that
 * fall in each block of k consecutive elements to blocks (what the
 * blocks' sums of the spread cells would hold, without the cells). */
static inline void la_shm_spread_blocks(double *blocks, uint64_t k,
                                        uint64_t e, uint64_t ni,
                                        double share) {
  for (uint64_t end = e + ni; e < end;) {
    uint64_t b = e / k, stop = (b + 1) * k < end ? (b + 1) * k : end;
    blocks[b] += share * (double)(stop - e);
    e = stop;
  }
}

/* Spreads each record of a table of n_pieces over its cells of values
 * (n_channels x n elements, channel-major) as its value divided evenly
 * (la_shm_spread_add, the application's arithmetic), in table order, after
 * checking it (la_shm_piece_check; grid NULL: not a grid). With blocks
 * (not NULL), adds each record's share of the cells instead to the sums
 * of blocks of k consecutive elements over the channels (a coarse cycle:
 * the cells are not touched), and with ch_blocks (not NULL) to its own
 * channel's block sums too (n_channels x n / k, channel-major). With zero, the records (all of them) and
 * the head are zeroed. Returns the records refused (left out), *why the
 * first one's reason. */
static inline uint64_t la_shm_pieces_fold(la_shm_pieces_head_t *head,
                                          uint64_t n_pieces, double *values,
                                          uint64_t n, uint32_t n_channels,
                                          const uint64_t *grid, double *blocks,
                                          double *ch_blocks, uint64_t k,
                                          int zero,
                                          const char **why) {
  la_shm_piece_t *t = (la_shm_piece_t *)(head + 1);
  uint64_t nx = grid ? grid[0] : 0, ny = grid ? grid[1] : 0,
           nz = grid ? grid[2] : 0, bad = 0;
  for (uint64_t p = 0; p < n_pieces; p++) {
    la_shm_piece_t r;
    __builtin_memcpy(&r, &t[p], sizeof r);
    if (r.key == 0) continue;
    const char *no = la_shm_piece_check(&r, n, n_channels, nx, ny, nz);
    if (no) {
      if (bad++ == 0 && why) *why = no;
      continue;
    }
    uint64_t first = (r.key - 1) >> 4, ch = (r.key - 1) & 15u;
    uint64_t nj = r.nj ? r.nj : 1, nk = r.nk ? r.nk : 1;
    double share = r.value / (double)((uint64_t)r.ni * nj * nk);
    if (!blocks) {
      la_shm_spread_add(values + ch * n + first, share, r.ni, nj, nk, nx,
                        nx * ny);
      continue;
    }
    for (uint64_t z = 0; z < nk; z++)
      for (uint64_t y = 0; y < nj; y++) {
        uint64_t e = first + y * nx + z * nx * ny;
        la_shm_spread_blocks(blocks, k, e, r.ni, share);
        if (ch_blocks)
          la_shm_spread_blocks(ch_blocks + ch * (n / k), k, e, r.ni, share);
      }
  }
  if (zero) {
    __builtin_memset(t, 0, n_pieces * sizeof *t);
    __builtin_memset(head, 0, sizeof *head);
  }
  return bad;
}

#endif /* LA_SHM_PIECES_H */
