/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_pieces.c: a pieced trace's geometry (la_compact_pieces.h).
 *
 * What a reader relies on: the geometry's bytes decode to the pieces they
 * were made from; a piece's value is spread evenly over its cells and a
 * cell in no piece is 0; range sums agree with the expanded cells, and a
 * range holding whole pieces gives their values as stored (exact totals);
 * and a geometry that lies (more pieces than cells, a count other than the
 * trace's, a piece outside the elements or the grid, a box without a grid,
 * overlapping pieces, bytes cut or left over) is refused with a reason
 * that names it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact_internal.h"
#include "la_compact_pieces.h"

/* bench_localagent's box loop: 1000 boxes of 50 x 20 x 1 on 100^3 */
static la_pieces_t bench_boxes(void) {
  la_pieces_t g = {1000, 1000000, 100, 100, 100, NULL};
  g.p = calloc(g.count, sizeof *g.p);
  assert_non_null(g.p);
  for (uint64_t b = 0; b < g.count; b++) {
    uint64_t i0 = (b % 2) * 50, j0 = (b / 2 % 5) * 20, k0 = b / 10;
    g.p[b] = (la_piece_t){i0 + j0 * 100 + k0 * 10000, 50, 20, 1};
  }
  return g;
}

static void test_boxes_round_trip_and_expand(void **state) {
  (void)state;
  la_pieces_t g = bench_boxes(), back;
  uint8_t *b;
  size_t len;
  assert_int_equal(la_pieces_encode(&g, &b, &len), 0);
  /* a box's first cell and a repeated shape: two bytes a box at most */
  assert_true(len <= 2 * g.count + 16);
  char why[160] = "";
  assert_int_equal(la_pieces_decode(b, len, g.count, g.n_cells, &back, why,
                                    sizeof why), 0);
  assert_int_equal(back.count, g.count);
  for (uint64_t i = 0; i < g.count; i++) {
    assert_int_equal(back.p[i].first, g.p[i].first);
    assert_int_equal(back.p[i].ni, g.p[i].ni);
    assert_int_equal(back.p[i].nj, g.p[i].nj);
    assert_int_equal(back.p[i].nk, g.p[i].nk);
  }
  double *v = malloc(g.count * sizeof *v), *cells = malloc(g.n_cells * sizeof *cells);
  assert_non_null(v);
  assert_non_null(cells);
  double total = 0;
  for (uint64_t i = 0; i < g.count; i++) total += v[i] = 1000.0 + 7.25 * (double)(i % 13);
  la_pieces_expand(&back, v, cells);
  double cell_total = 0;
  for (uint64_t c = 0; c < g.n_cells; c++) {
    uint64_t i = c % 100, j = c / 100 % 100, k = c / 10000;
    uint64_t piece = k * 10 + (j / 20) * 2 + i / 50;
    assert_true(cells[c] == v[piece] / 1000.0);
    cell_total += cells[c];
  }
  assert_true(la_pieces_range_sum(&back, v, 0, g.n_cells) == total);
  assert_true(cell_total > total * (1 - 1e-9) && cell_total < total * (1 + 1e-9));
  /* partial ranges: what the expanded cells add up to */
  uint64_t seed = 7;
  for (int t = 0; t < 200; t++) {
    uint64_t lo = (uint64_t)(la_compact_rand01(&seed) * 1e6),
             hi = lo + (uint64_t)(la_compact_rand01(&seed) * 3e4);
    if (hi > g.n_cells) hi = g.n_cells;
    double want = 0;
    for (uint64_t c = lo; c < hi; c++) want += cells[c];
    double got = la_pieces_range_sum(&back, v, lo, hi);
    assert_true(got >= want - 1e-9 * (want + 1) && got <= want + 1e-9 * (want + 1));
  }
  free(v);
  free(cells);
  free(b);
  la_pieces_free(&back);
  la_pieces_free(&g);
}

static void test_ranges_and_empty_cells(void **state) {
  (void)state;
  la_piece_t p[3] = {{2, 3, 0, 0}, {5, 1, 0, 0}, {9, 2, 0, 0}};
  la_pieces_t g = {3, 12, 0, 0, 0, p}, back;
  uint8_t *b;
  size_t len;
  assert_int_equal(la_pieces_encode(&g, &b, &len), 0);
  assert_int_equal(la_pieces_decode(b, len, 3, 12, &back, NULL, 0), 0);
  double v[3] = {3, 5, 4}, cells[12];
  la_pieces_expand(&back, v, cells);
  const double want[12] = {0, 0, 1, 1, 1, 5, 0, 0, 0, 2, 2, 0};
  assert_memory_equal(cells, want, sizeof want);
  assert_true(la_pieces_range_sum(&back, v, 3, 10) == 1 + 1 + 5 + 2);
  assert_true(la_pieces_range_sum(&back, v, 0, 12) == 12);
  assert_true(la_pieces_range_sum(&back, v, 6, 9) == 0);
  free(b);
  la_pieces_free(&back);
}

/* A geometry's bytes as given, checked by nothing. */
static size_t raw(uint8_t *out, const uint64_t *w, size_t n) {
  size_t len = 0;
  for (size_t i = 0; i < n; i++) len += la_varint_write(out + len, w[i]);
  return len;
}

static void refused(const uint64_t *w, size_t n, uint64_t expect,
                    const char *reason) {
  uint8_t b[256];
  size_t len = raw(b, w, n);
  la_pieces_t g;
  char why[160] = "";
  assert_int_equal(la_pieces_decode(b, len, expect, UINT64_MAX, &g, why, sizeof why),
                   LA_EPROTO);
  if (!strstr(why, reason)) fail_msg("'%s' does not say '%s'", why, reason);
  assert_null(g.p);
}

static void test_lies_refused_by_name(void **state) {
  (void)state;
  /* 4 x 4 x 1 grid */
  const uint64_t more[] = {20, 16, 4, 4, 1, 0, 1, 0, 0};
  refused(more, 9, UINT64_MAX, "more pieces than elements");
  const uint64_t ok[] = {2, 16, 4, 4, 1, 0, 2, 2, 1, 2 << 1 | 1};
  refused(ok, 10, 3, "a piece count other than the trace's values");
  const uint64_t out_grid[] = {1, 16, 4, 4, 1, 2 << 1, 3, 1, 1};
  refused(out_grid, 9, 1, "a piece outside the grid");
  const uint64_t out_el[] = {1, 16, 0, 0, 0, 10 << 1, 7, 0, 0};
  refused(out_el, 9, 1, "a piece outside the elements");
  const uint64_t box_no_grid[] = {1, 16, 0, 0, 0, 0, 2, 2, 1};
  refused(box_no_grid, 9, 1, "a box in a geometry that is not a grid");
  /* boxes at (0,0) 2x2 and (1,1) 2x2: the second's first row is in the
   * first's second row */
  const uint64_t boxes_over[] = {2, 16, 4, 4, 1, 0, 2, 2, 1, 5 << 1 | 1};
  refused(boxes_over, 10, 2, "overlapping pieces (piece 1)");
  /* a 1x3 column from (1,0) and a 1x1 at (0,1): disjoint; (1,1): not */
  const uint64_t col_ok[] = {2, 16, 4, 4, 1, 1 << 1, 1, 3, 1, 3 << 1, 1, 1, 1};
  uint8_t b[64];
  la_pieces_t g;
  assert_int_equal(la_pieces_decode(b, raw(b, col_ok, 13), 2, 16, &g, NULL, 0), 0);
  la_pieces_free(&g);
  const uint64_t col_over[] = {2, 16, 4, 4, 1, 1 << 1, 1, 3, 1, 4 << 1, 1, 1, 1};
  refused(col_over, 13, 2, "overlapping pieces");
  const uint64_t ranges_over[] = {2, 16, 0, 0, 0, 0, 4, 0, 0, 3 << 1, 2, 0, 0};
  refused(ranges_over, 13, 2, "overlapping pieces (piece 1)");
  const uint64_t same_first[] = {2, 16, 0, 0, 0, 0, 4, 0, 0, 0 << 1 | 1};
  refused(same_first, 10, 2, "overlapping pieces");
  const uint64_t cut[] = {2, 16, 0, 0, 0, 0, 4, 0, 0};
  refused(cut, 9, 2, "end early");
  const uint64_t extra[] = {1, 16, 0, 0, 0, 0, 4, 0, 0, 9};
  refused(extra, 10, 1, "bytes after its last piece");
  const uint64_t bad_grid[] = {1, 16, 4, 3, 1, 0, 1, 1, 1};
  refused(bad_grid, 9, 1, "a grid that is not its cells");
  /* a geometry of other cells than the trace's */
  char why[160] = "";
  assert_int_equal(la_pieces_decode(b, raw(b, col_ok, 13), 2, 17, &g, why,
                                    sizeof why),
                   LA_EPROTO);
  assert_non_null(strstr(why, "a cell count other than the trace's elements"));
}

static void test_encode_refuses_what_decode_would(void **state) {
  (void)state;
  la_piece_t p[2] = {{0, 4, 0, 0}, {2, 2, 0, 0}};
  la_pieces_t g = {2, 16, 0, 0, 0, p};
  uint8_t *b = (uint8_t *)&g;
  size_t len = 1;
  assert_int_equal(la_pieces_encode(&g, &b, &len), LA_EINVAL);
  assert_null(b);
  assert_int_equal(len, 0);
  la_piece_t q[2] = {{4, 1, 0, 0}, {2, 1, 0, 0}}; /* out of order */
  g.p = q;
  assert_int_equal(la_pieces_encode(&g, &b, &len), LA_EINVAL);
  char why[160] = "";
  assert_int_equal(la_pieces_check(&g, why, sizeof why), LA_EPROTO);
  assert_non_null(strstr(why, "pieces out of order of first cell (piece 1)"));
  /* the hash keys a geometry: another geometry, another key */
  la_pieces_t h = bench_boxes();
  uint8_t *b1, *b2;
  size_t l1, l2;
  assert_int_equal(la_pieces_encode(&h, &b1, &l1), 0);
  h.p[999].ni = 49;
  assert_int_equal(la_pieces_encode(&h, &b2, &l2), 0);
  assert_true(la_pieces_hash(b1, l1) != la_pieces_hash(b2, l2));
  free(b1);
  free(b2);
  la_pieces_free(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_boxes_round_trip_and_expand),
      cmocka_unit_test(test_ranges_and_empty_cells),
      cmocka_unit_test(test_lies_refused_by_name),
      cmocka_unit_test(test_encode_refuses_what_decode_would),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
