/* SPDX-License-Identifier: BSD-3-Clause */
/* halo.c: the halo of a partition of a structured grid, shared by `lactl
 * whatif` (the halo volume of each partition it scores) and la-replay
 * (the messages of its mesh halo): for each part, the parts owning a cell
 * that shares a face with one of its cells (6-neighbour stencil), and per
 * such neighbour part how many of its own cells do (what a ghost-cell
 * exchange sends that neighbour, one value per cell).
 *
 * Cells are global cell indices i + gx*(j + gy*k) of a gx*gy*gz grid
 * (the numbering la__rank_numbering gives a placed grid rank), ascending
 * and distinct; a neighbour index absent from the list (a cell no rank
 * registered) is no neighbour. Internal to LA's tools
 * (la_client_internal.h). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"

void la__halo_free(la__halo_t *h) {
  free(h->off), free(h->nbr), free(h->cells);
  memset(h, 0, sizeof *h);
}

/* The index of cell c in cell[0..n), or -1: by position when the cells
 * are a contiguous range (dense, the common case: a whole grid), else by
 * bisection. */
static int64_t la__halo_find(const uint64_t *cell, uint64_t n, int dense,
                             uint64_t c) {
  if (dense) return c >= cell[0] && c - cell[0] < n ? (int64_t)(c - cell[0]) : -1;
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (cell[mid] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && cell[lo] == c ? (int64_t)lo : -1;
}

static int la__cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

int la__halo_build(const uint64_t *cell, const uint32_t *part, uint64_t n,
                   const uint64_t g[3], uint32_t nparts, la__halo_t *h) {
  memset(h, 0, sizeof *h);
  h->nparts = nparts;
  uint64_t cap = 1024, np = 0;
  /* (part << 32 | neighbour part), one per boundary cell and neighbour */
  uint64_t *pair = malloc(cap * sizeof *pair);
  h->off = calloc((size_t)nparts + 1, sizeof *h->off);
  if (!pair || !h->off) {
    free(pair);
    la__halo_free(h);
    return LA_ENOMEM;
  }
  const uint64_t step[3] = {1, g[0], g[0] * g[1]};
  int dense = n > 0 && cell[n - 1] - cell[0] == n - 1;
  for (uint64_t v = 0; v < n; v++) {
    assert(v == 0 || cell[v] > cell[v - 1]);
    assert(part[v] < nparts);
    uint64_t c[3] = {cell[v] % g[0], cell[v] / g[0] % g[1],
                     cell[v] / step[2]};
    uint32_t seen[6];
    int ns = 0;
    for (int d = 0; d < 3; d++)
      for (int s = -1; s <= 1; s += 2) {
        if ((s < 0 && c[d] == 0) || (s > 0 && c[d] + 1 >= g[d])) continue;
        int64_t u = la__halo_find(cell, n, dense,
                                  s < 0 ? cell[v] - step[d] : cell[v] + step[d]);
        if (u < 0 || part[u] == part[v]) continue;
        int dup = 0;
        for (int i = 0; i < ns; i++) dup |= seen[i] == part[u];
        if (!dup) seen[ns++] = part[u];
      }
    if (np + (uint64_t)ns > cap) {
      uint64_t *p2 = realloc(pair, 2 * cap * sizeof *p2);
      if (!p2) {
        free(pair);
        la__halo_free(h);
        return LA_ENOMEM;
      }
      pair = p2;
      cap *= 2;
    }
    for (int i = 0; i < ns; i++)
      pair[np++] = (uint64_t)part[v] << 32 | seen[i];
    h->boundary += ns > 0;
  }
  qsort(pair, np, sizeof *pair, la__cmp_u64);
  uint64_t nl = 0;
  for (uint64_t i = 0; i < np; i++) nl += i == 0 || pair[i] != pair[i - 1];
  h->nbr = malloc((nl ? nl : 1) * sizeof *h->nbr);
  h->cells = malloc((nl ? nl : 1) * sizeof *h->cells);
  if (!h->nbr || !h->cells) {
    free(pair);
    la__halo_free(h);
    return LA_ENOMEM;
  }
  uint64_t k = 0;
  for (uint64_t i = 0; i < np; i++) {
    if (i == 0 || pair[i] != pair[i - 1]) {
      h->nbr[k] = (uint32_t)pair[i];
      h->cells[k] = 0;
      h->off[(pair[i] >> 32) + 1]++;
      k++;
    }
    h->cells[k - 1]++;
    h->sent += 1;
  }
  free(pair);
  for (uint32_t p = 0; p < nparts; p++) {
    uint64_t d = h->off[p + 1];
    if (d > h->nbr_max) h->nbr_max = d;
    h->off[p + 1] += h->off[p];
  }
  h->nbr_mean = nparts ? (double)nl / nparts : 0;
  return 0;
}
