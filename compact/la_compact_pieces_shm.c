/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_pieces_shm.c: a cycle's piece records (the piece table of a
 * shared-memory buffer, wire/la_shm_pieces.h) as the geometry of a pieced
 * trace and its values: the one decision, for the LocalAgent and for
 * LA_DUMP_RAW alike, whether a cycle is stored one value per piece.
 */
#include <stdlib.h>
#include <string.h>

#include "la_compact_pieces.h"
#include "la_shm_pieces.h"

/* Orders pieces (with their values beside them) by first cell. */
typedef struct {
  la_piece_t p;
  double v;
} la__piece_value_t;

static int la__by_first(const void *a, const void *b) {
  uint64_t x = ((const la__piece_value_t *)a)->p.first,
           y = ((const la__piece_value_t *)b)->p.first;
  return x < y ? -1 : x > y;
}

int la_pieces_from_shm(const la_shm_pieces_head_t *head, uint64_t n_records,
                       uint64_t n_cells, const uint64_t *grid, double scale,
                       la_pieces_t *g, double *values, uint8_t **geom,
                       size_t *glen) {
  const la_shm_piece_t *t = (const la_shm_piece_t *)(head + 1);
  memset(g, 0, sizeof *g);
  if (__atomic_load_n(&head->spilled, __ATOMIC_RELAXED) != 0) return 0;
  uint64_t nx = grid ? grid[0] : 0, ny = grid ? grid[1] : 0,
           nz = grid ? grid[2] : 0, m = 0;
  la__piece_value_t *pv = malloc((n_records ? n_records : 1) * sizeof *pv);
  if (!pv) return LA_ENOMEM;
  for (uint64_t i = 0; i < n_records; i++) {
    la_shm_piece_t r; /* a copy: the application may rewrite the table */
    memcpy(&r, &t[i], sizeof r);
    if (r.key == 0) continue;
    /* one channel: a record of another is refused as the fold refuses it */
    if (la_shm_piece_check(&r, n_cells, 1, nx, ny, nz) != NULL) {
      free(pv);
      return 0;
    }
    pv[m].p = (la_piece_t){(r.key - 1) >> 4, r.ni, r.nj, r.nk};
    pv[m++].v = r.value * scale;
  }
  if (m == 0) {
    free(pv);
    return 0;
  }
  qsort(pv, m, sizeof *pv, la__by_first);
  g->p = malloc(m * sizeof *g->p);
  if (!g->p) {
    free(pv);
    return LA_ENOMEM;
  }
  g->count = m;
  g->n_cells = n_cells;
  g->nx = nx;
  g->ny = ny;
  g->nz = nz;
  for (uint64_t i = 0; i < m; i++) {
    g->p[i] = pv[i].p;
    values[i] = pv[i].v;
  }
  free(pv);
  /* checked as it is encoded (overlapping pieces: LA_EINVAL, per cell) */
  uint8_t *b = NULL;
  size_t len = 0;
  int rc = la_pieces_encode(g, &b, &len);
  if (rc == 0 && geom) {
    *geom = b;
    *glen = len;
  } else {
    free(b);
  }
  if (rc != 0) la_pieces_free(g);
  return rc == 0 ? 1 : rc == LA_ENOMEM ? rc : 0;
}
