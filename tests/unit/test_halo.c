/* SPDX-License-Identifier: BSD-3-Clause */
/* test_halo.c: the halo of a grid partition (client/halo.c,
 * la__halo_build), which `lactl whatif` reports for each partition and
 * la-replay's mesh halo exchanges, on partitions whose boundary is known
 * by hand:
 *   - a 12 x 12 grid cut in 4 strips of 3 columns: 3 cuts of 12 faces,
 *     72 boundary cells, the inner strips 2 neighbours and the outer 1
 *     (max 2, mean 1.5), 12 cells to each neighbour;
 *   - the same grid in 2 x 2 blocks of 6 x 6: 2 cuts of 12 faces, each
 *     block 11 boundary cells (the corner cell faces both neighbours, so
 *     12 cell values sent), 2 neighbours each and none across the corner
 *     (6-neighbour stencil);
 *   - a 4 x 4 x 4 grid in k-slabs of 2, 1, 1 planes: 16 cells per face;
 *   - cells nobody registered are no neighbours (a hole in the grid);
 *   - one part: no halo. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "la_client_internal.h"

/* The cells exchanged from part p to part q (0 when they do not touch). */
static uint64_t link_cells(const la__halo_t *h, uint32_t p, uint32_t q) {
  for (uint64_t k = h->off[p]; k < h->off[p + 1]; k++)
    if (h->nbr[k] == q) return h->cells[k];
  return 0;
}

/* Builds the halo of the full g grid, part of cell c = f(i, j, k). */
static void build(const uint64_t g[3], uint32_t (*f)(uint64_t, uint64_t,
                                                     uint64_t),
                  uint32_t nparts, la__halo_t *h) {
  uint64_t n = g[0] * g[1] * g[2];
  uint64_t *cell = malloc(n * sizeof *cell);
  uint32_t *part = malloc(n * sizeof *part);
  assert_non_null(cell);
  assert_non_null(part);
  for (uint64_t c = 0; c < n; c++) {
    cell[c] = c;
    part[c] = f(c % g[0], c / g[0] % g[1], c / (g[0] * g[1]));
  }
  assert_int_equal(la__halo_build(cell, part, n, g, nparts, h), 0);
  free(cell), free(part);
}

static uint32_t strips(uint64_t i, uint64_t j, uint64_t k) {
  (void)j, (void)k;
  return (uint32_t)(i / 3);
}
static uint32_t blocks(uint64_t i, uint64_t j, uint64_t k) {
  (void)k;
  return (uint32_t)(i / 6 + 2 * (j / 6));
}
static uint32_t slabs(uint64_t i, uint64_t j, uint64_t k) {
  (void)i, (void)j;
  return k < 2 ? 0 : (uint32_t)k - 1;
}
static uint32_t one(uint64_t i, uint64_t j, uint64_t k) {
  (void)i, (void)j, (void)k;
  return 0;
}

static void test_strips(void **state) {
  (void)state;
  const uint64_t g[3] = {12, 12, 1};
  la__halo_t h;
  build(g, strips, 4, &h);
  assert_int_equal(h.boundary, 72);
  assert_int_equal(h.sent, 72);
  assert_int_equal(h.nbr_max, 2);
  assert_true(h.nbr_mean == 1.5);
  assert_int_equal(h.off[4], 6); /* links: 0-1, 1-0, 1-2, 2-1, 2-3, 3-2 */
  assert_int_equal(link_cells(&h, 0, 1), 12);
  assert_int_equal(link_cells(&h, 1, 0), 12);
  assert_int_equal(link_cells(&h, 1, 2), 12);
  assert_int_equal(link_cells(&h, 3, 2), 12);
  assert_int_equal(link_cells(&h, 0, 2), 0);
  la__halo_free(&h);
}

static void test_blocks(void **state) {
  (void)state;
  const uint64_t g[3] = {12, 12, 1};
  la__halo_t h;
  build(g, blocks, 4, &h);
  assert_int_equal(h.boundary, 44);
  assert_int_equal(h.sent, 48);
  assert_int_equal(h.nbr_max, 2);
  assert_true(h.nbr_mean == 2.0);
  assert_int_equal(link_cells(&h, 0, 1), 6);
  assert_int_equal(link_cells(&h, 0, 2), 6);
  assert_int_equal(link_cells(&h, 0, 3), 0); /* the corner: no face */
  assert_int_equal(link_cells(&h, 3, 1), 6);
  la__halo_free(&h);
}

static void test_slabs_3d(void **state) {
  (void)state;
  const uint64_t g[3] = {4, 4, 4};
  la__halo_t h;
  build(g, slabs, 3, &h);
  /* parts: k 0-1, k 2, k 3; part 1's one plane faces both others */
  assert_int_equal(h.boundary, 16 + 16 + 16);
  assert_int_equal(h.sent, 16 * 4);
  assert_int_equal(link_cells(&h, 1, 0), 16);
  assert_int_equal(link_cells(&h, 1, 2), 16);
  assert_int_equal(h.nbr_max, 2);
  la__halo_free(&h);
}

static void test_hole_and_one_part(void **state) {
  (void)state;
  /* a 3 x 1 x 1 row without its middle cell: parts 0 and 1 do not touch */
  const uint64_t g[3] = {3, 1, 1}, cell[2] = {0, 2};
  const uint32_t part[2] = {0, 1};
  la__halo_t h;
  assert_int_equal(la__halo_build(cell, part, 2, g, 2, &h), 0);
  assert_int_equal(h.boundary, 0);
  assert_int_equal(h.off[2], 0);
  assert_int_equal(h.nbr_max, 0);
  la__halo_free(&h);
  const uint64_t g2[3] = {5, 5, 5};
  build(g2, one, 1, &h);
  assert_int_equal(h.boundary, 0);
  assert_int_equal(h.sent, 0);
  la__halo_free(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strips),
      cmocka_unit_test(test_blocks),
      cmocka_unit_test(test_slabs_3d),
      cmocka_unit_test(test_hole_and_one_part),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
