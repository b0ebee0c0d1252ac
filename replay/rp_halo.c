/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_halo.c: la-replay's mesh halo (--halo-bytes-per-cell), planned on
 * rank 0: where the recorded application placed every rank in one global
 * grid (LA_registerGrid with LA_setGridOrigin), each element is a grid
 * cell; under the partition being replayed (the recorded one or a file's)
 * each replay rank exchanges with every rank owning a cell that shares a
 * face with one of its own, sending per cycle one value per cell of its
 * that faces that rank (la__halo_build, the count `lactl whatif` reports)
 * and receiving the neighbour's. An application without such a grid has
 * no mesh to derive it from: pl->halo_note says so, and la-replay keeps
 * the ring halo of --halo (ranks r-1 and r+1). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "replay.h"

static int cmp_pair(const void *x, const void *y) {
  const uint64_t *a = x, *b = y;
  if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
  return a[1] < b[1] ? -1 : a[1] > b[1];
}

/* Whether t is one placed grid: 1 with g filled, else 0 with the note. */
static int is_grid(const la_traceset_t *t, rp_plan_t *pl, int64_t *tmp) {
  uint32_t np = la_traceset_nprocs(t);
  for (uint32_t r = 0; r < np; r++) {
    uint64_t dims[3], org[3], glob[3];
    if (la_traceset_rank_grid(t, r, dims, org, glob) != 0 ||
        la__rank_numbering(t, r, NULL, tmp, NULL) != LA_NUMBERING_GRID) {
      snprintf(pl->halo_note, sizeof pl->halo_note,
               "rank %u of the recording is not placed in a global grid "
               "(LA_registerGrid with LA_setGridOrigin)",
               r);
      return 0;
    }
    if (r > 0 && memcmp(glob, pl->g, sizeof glob)) {
      snprintf(pl->halo_note, sizeof pl->halo_note,
               "ranks 0 and %u of the recording give different global grids",
               r);
      return 0;
    }
    memcpy(pl->g, glob, sizeof glob);
  }
  return np > 0;
}

int rp_halo_plan(const la_traceset_t *t, const uint32_t *owner, rp_plan_t *pl,
                 char *why, size_t why_len) {
  uint32_t np = la_traceset_nprocs(t);
  uint64_t ne = la_traceset_elements(t), big = 1;
  pl->mesh = 0;
  for (uint32_t r = 0; r < np; r++)
    if (la_traceset_rank_elements(t, r) > big)
      big = la_traceset_rank_elements(t, r);
  int64_t *tmp = malloc(big * sizeof *tmp);
  uint64_t(*pair)[2] = malloc((ne ? ne : 1) * sizeof *pair);
  uint64_t *cell = malloc((ne ? ne : 1) * sizeof *cell);
  uint32_t *part = malloc((ne ? ne : 1) * sizeof *part);
  la__halo_t h = {0};
  int rc = -1;
  if (!tmp || !pair || !cell || !part) {
    snprintf(why, why_len, "out of memory (the halo of %" PRIu64 " cells)", ne);
    goto out;
  }
  rc = 0;
  if (!is_grid(t, pl, tmp)) goto out;
  uint64_t i = 0;
  for (uint32_t r = 0; r < np; r++) {
    uint64_t n = la_traceset_rank_elements(t, r);
    la__rank_numbering(t, r, NULL, tmp, NULL);
    for (uint64_t e = 0; e < n; e++, i++)
      pair[i][0] = (uint64_t)tmp[e], pair[i][1] = owner[i];
  }
  qsort(pair, ne, sizeof *pair, cmp_pair);
  uint64_t nc = 0;
  for (uint64_t k = 0; k < ne; k++) {
    if (k && pair[k][0] == pair[k - 1][0]) {
      if (pair[k][1] == pair[k - 1][1]) continue; /* one element, merged */
      snprintf(pl->halo_note, sizeof pl->halo_note,
               "cell %" PRIu64 " of the grid is on replay ranks %" PRIu64
               " and %" PRIu64 ": not one cell per element",
               pair[k][0], pair[k - 1][1], pair[k][1]);
      goto out;
    }
    cell[nc] = pair[k][0];
    part[nc++] = (uint32_t)pair[k][1];
  }
  if (la__halo_build(cell, part, nc, pl->g, pl->nranks, &h) != 0) {
    snprintf(why, why_len, "out of memory (the halo of %" PRIu64 " cells)", nc);
    rc = -1;
    goto out;
  }
  uint64_t nl = h.off[pl->nranks];
  pl->hoff = h.off, pl->hnbr = h.nbr, pl->hsend = h.cells;
  h.off = NULL, h.nbr = NULL, h.cells = NULL;
  pl->hrecv = malloc((nl ? nl : 1) * sizeof *pl->hrecv);
  if (!pl->hrecv) {
    snprintf(why, why_len, "out of memory (the halo)");
    rc = -1;
    goto out;
  }
  /* what p receives from q: q's cells facing p (q lists p: faces pair up) */
  for (uint32_t p = 0; p < pl->nranks; p++)
    for (uint64_t k = pl->hoff[p]; k < pl->hoff[p + 1]; k++) {
      uint32_t q = pl->hnbr[k];
      pl->hrecv[k] = 0;
      for (uint64_t j = pl->hoff[q]; j < pl->hoff[q + 1]; j++)
        if (pl->hnbr[j] == p) pl->hrecv[k] = pl->hsend[j];
    }
  pl->boundary = h.boundary;
  pl->halo_cells = h.sent;
  pl->nbr_max = h.nbr_max;
  pl->nbr_mean = h.nbr_mean;
  pl->mesh = 1;
out:
  la__halo_free(&h);
  free(tmp), free(pair), free(cell), free(part);
  return rc;
}
