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
 * that names it.
 *
 * The pieced encoding (la_compact_pieced): opened with la_trace_open, it
 * gives the geometry's cells, equal to the expansion of its stored values
 * (statistics and error the cells', or bounds of them without the raw
 * values);
 * range sums, range max, slice sums, the totals and the claimed-statistics
 * check answer for those cells; an encoding with a bad geometry is refused
 * with the geometry's reason. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact.h"
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


static int near(double a, double b, double rel) {
  return fabs(a - b) <= rel * (fabs(a) + fabs(b)) + 1e-300;
}

/* A 10 x 8 x 3 grid, boxes and gaps (cells in no piece), values with a
 * trend, noise and a spike (a verbatim piece). */
static la_pieces_t gapped_boxes(void) {
  la_pieces_t g = {0, 240, 10, 8, 3, NULL};
  g.p = calloc(64, sizeof *g.p);
  assert_non_null(g.p);
  for (uint64_t z = 0; z < 3; z++)
    for (uint64_t y = 0; y < 8; y += 2)
      for (uint64_t x = 0; x < 10; x += 3)
        if ((x + y + z) % 5 != 1) /* some cells stay out */
          g.p[g.count++] = (la_piece_t){x + y * 10 + z * 80,
                                        x == 9 ? 1 : 2, 2, 1};
  return g;
}

static void pieced_round_trip(const la_compact_params_t *prm) {
  la_pieces_t g = gapped_boxes();
  uint8_t *gb;
  size_t glen;
  assert_int_equal(la_pieces_encode(&g, &gb, &glen), 0);
  double *v = malloc(g.count * sizeof *v);
  assert_non_null(v);
  for (uint64_t i = 0; i < g.count; i++)
    v[i] = 4000.0 + 25.0 * (double)i + (double)(i * 7919 % 13) +
           (i == 17 ? 9e4 : 0);
  la_compact_result_t in, out;
  assert_int_equal(la_compact(v, g.count, prm, &in), 0);
  assert_int_equal(la_compact_pieced(&in, v, gb, glen, &out), 0);
  assert_true(out.len <= in.len + glen + 4);
  la_trace_t *ti, *t;
  char why[200] = "";
  assert_int_equal(la_trace_open(in.bytes, in.len, &ti, NULL, 0), 0);
  assert_int_equal(la_trace_open(out.bytes, out.len, &t, why, sizeof why), 0);
  assert_int_equal(la_trace_count(t), g.n_cells);
  /* the cells: the expansion of the values the pieces' encoding gives */
  double *d = malloc(g.count * sizeof *d), *want = malloc(240 * sizeof *want),
         *cells = malloc(240 * sizeof *cells), *raw = malloc(240 * sizeof *raw);
  assert_int_equal(la_trace_decode(ti, 0, g.count, d), 0);
  la_pieces_expand(&g, d, want);
  la_pieces_expand(&g, v, raw);
  assert_int_equal(la_trace_decode(t, 0, 240, cells), 0);
  assert_memory_equal(cells, want, 240 * sizeof *cells);
  double part[37];
  assert_int_equal(la_trace_decode(t, 101, 37, part), 0);
  assert_memory_equal(part, want + 101, sizeof part);
  /* range sums and range max against the cells; the whole is the stored
   * values' sum as stored */
  double whole = 0, s, m;
  for (uint64_t i = 0; i < g.count; i++) whole += d[i];
  assert_int_equal(la_trace_range_sum(t, 0, 240, &s), 0);
  assert_true(s == whole);
  uint64_t nfin;
  for (uint64_t lo = 0; lo < 240; lo += 7)
    for (uint64_t n = 1; lo + n <= 240; n += 23) {
      double ws = 0, wm = -INFINITY;
      for (uint64_t c = lo; c < lo + n; c++) {
        ws += want[c];
        wm = want[c] > wm ? want[c] : wm;
      }
      assert_int_equal(la_trace_range_sum(t, lo, n, &s), 0);
      assert_true(near(s, ws, 1e-12));
      assert_int_equal(la_trace_range_max(t, lo, n, &m, &nfin), 0);
      assert_true(m == wm);
      assert_int_equal(nfin, n);
    }
  /* a cell in no piece: 0, not verbatim; the spike's cells verbatim when
   * the spike is stored so in the pieces' encoding */
  assert_true(cells[2] == 0 && cells[82] == 0); /* x = 2: no box */
  assert_int_equal(la_trace_is_verbatim(t, 2), 0);
  uint64_t spike = g.p[17].first;
  assert_int_equal(la_trace_is_verbatim(t, spike), la_trace_is_verbatim(ti, 17));
  /* segments: in cells, from their first piece's first cell, over the
   * cells of their pieces */
  uint64_t segcells = 0, covered = 0;
  for (uint64_t i = 0; i < g.count; i++) covered += la_piece_cells(&g.p[i]);
  for (size_t i = 0; i < la_trace_segment_count(t); i++) {
    la_trace_segment_t sg;
    assert_int_equal(la_trace_segment(t, i, &sg), 0);
    segcells += sg.count;
  }
  assert_int_equal(la_trace_segment_count(t), la_trace_segment_count(ti));
  if (la_trace_segment_count(t)) assert_int_equal(segcells, covered);
  /* the totals and the claimed statistics: cells, pieces, exact sum */
  la_trace_totals_t tot;
  assert_int_equal(la_trace_check_totals(out.bytes, out.len, 240, &tot, why,
                                         sizeof why), 0);
  assert_int_equal(tot.n_points, 240);
  assert_int_equal(tot.stored, g.count);
  assert_true(tot.pieced);
  assert_true(near(tot.sum, whole, 1e-15));
  assert_int_equal(out.stats.count, 240);
  assert_true(out.stats.min == 0); /* the cells in no piece */
  double rmax = -INFINITY, rsum = 0;
  for (int c = 0; c < 240; c++) {
    rmax = raw[c] > rmax ? raw[c] : rmax;
    rsum += raw[c];
  }
  assert_true(out.stats.max == rmax);
  assert_true(near(out.stats.sum, rsum, 1e-12));
  assert_int_equal(la_trace_claim_check(&tot, &out.stats, "measured", why,
                                        sizeof why), 0);
  la_series_stats_t lie = out.stats;
  lie.sum *= 1.5;
  assert_int_equal(la_trace_claim_check(&tot, &lie, "measured", why, sizeof why),
                   LA_EPROTO);
  /* the error is the cells': what la_fit_error_measure says of them */
  uint8_t skip[240];
  for (int c = 0; c < 240; c++) skip[c] = (uint8_t)la_trace_is_verbatim(t, c);
  la_fit_error_t fe;
  la_fit_error_measure(raw, want, 240, skip, &fe);
  assert_true(near(out.error.max_abs, fe.max_abs, 1e-9));
  assert_true(near(out.error.rmse, fe.rmse, 1e-9));
  assert_true(near(out.error.cv, fe.cv, 1e-9));
  /* without the raw values (a robust series): the same bytes, and the
   * statistics and error bounds of the cells' that the check accepts */
  la_compact_result_t ob;
  assert_int_equal(la_compact_pieced(&in, NULL, gb, glen, &ob), 0);
  assert_int_equal(ob.len, out.len);
  assert_memory_equal(ob.bytes, out.bytes, out.len);
  assert_int_equal(ob.stats.count, 240);
  assert_true(ob.stats.sum == out.stats.sum);
  assert_true(ob.stats.min <= out.stats.min && ob.stats.max >= out.stats.max);
  assert_true(ob.error.max_abs >= out.error.max_abs * (1 - 1e-12));
  assert_true(ob.error.rmse >= out.error.rmse * (1 - 1e-12));
  assert_int_equal(la_trace_claim_check(&tot, &ob.stats, "robust", why,
                                        sizeof why), 0);
  la_compact_result_free(&ob);
  /* slice sums, one pass or indexed: the range sums' */
  double sl[8], sl2[8];
  uint64_t np;
  int ok;
  assert_int_equal(la_trace_slice_sums(out.bytes, out.len, 240, 8, sl, &np,
                                       why, sizeof why), 0);
  assert_int_equal(np, 240);
  assert_int_equal(la_trace_check_totals_slices(out.bytes, out.len, 240, &tot,
                                                8, sl2, &ok, why, sizeof why),
                   0);
  for (unsigned j = 0; j < 8; j++) {
    assert_int_equal(la_trace_range_sum(t, 240 * j / 8, 240 / 8, &s), 0);
    assert_true(near(sl[j], s, 1e-12));
    if (ok) assert_true(near(sl2[j], s, 1e-12));
  }
  /* more cells than allowed: a limit, before anything else */
  la_trace_t *t2;
  assert_int_equal(la_trace_open_max(out.bytes, out.len, 239, &t2, why,
                                     sizeof why),
                   LA_ELIMIT);
  la_trace_close(t);
  la_trace_close(ti);
  la_compact_result_free(&in);
  la_compact_result_free(&out);
  free(v);
  free(d);
  free(want);
  free(cells);
  free(raw);
  free(gb);
  la_pieces_free(&g);
}

static void test_pieced_trace_polyline(void **state) {
  (void)state;
  la_compact_params_t p;
  la_compact_params_default(&p);
  pieced_round_trip(&p);
}

static void test_pieced_trace_maxerr(void **state) {
  (void)state;
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_MAXERR;
  p.epsilon = 30;
  pieced_round_trip(&p);
}

static void test_pieced_trace_lossless(void **state) {
  (void)state;
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_LOSSLESS;
  p.cv = 0;
  pieced_round_trip(&p);
}

/* out with its geometry byte at off changed to x and the CRC made good */
static void patch(la_compact_result_t *out, size_t off, uint8_t x) {
  out->bytes[off] = x;
  uint32_t crc = la_compact_crc32(0, out->bytes, out->len - 4);
  for (int i = 0; i < 4; i++)
    out->bytes[out->len - 4 + i] = (uint8_t)(crc >> (8 * i));
}

static void test_pieced_bad_geometry_refused(void **state) {
  (void)state;
  /* ranges (0,4) and (6,2) of 10 cells */
  la_piece_t p[2] = {{0, 4, 0, 0}, {6, 2, 0, 0}};
  la_pieces_t g = {2, 10, 0, 0, 0, p};
  uint8_t *gb;
  size_t glen;
  assert_int_equal(la_pieces_encode(&g, &gb, &glen), 0);
  double v[2] = {8, 6};
  la_compact_params_t prm;
  la_compact_params_default(&prm);
  la_compact_result_t in, out;
  assert_int_equal(la_compact(v, 2, &prm, &in), 0);
  assert_int_equal(la_compact_pieced(&in, v, gb, glen, &out), 0);
  la_trace_t *t;
  char why[200] = "";
  assert_int_equal(la_trace_open(out.bytes, out.len, &t, why, sizeof why), 0);
  double c[10];
  assert_int_equal(la_trace_decode(t, 0, 10, c), 0);
  const double want[10] = {2, 2, 2, 2, 0, 0, 3, 3, 0, 0};
  assert_memory_equal(c, want, sizeof want);
  la_trace_close(t);
  /* the geometry starts after the header (14 bytes, n) and its length */
  size_t g0 = 6 + 8 + 1 + 1;
  assert_int_equal(out.bytes[g0 - 1], glen);
  assert_memory_equal(out.bytes + g0, gb, glen);
  /* the second range from cell 2 (delta 2): it overlaps the first */
  size_t d1 = g0 + glen - 4; /* delta << 1, 2, 0, 0 */
  assert_int_equal(out.bytes[d1], 6 << 1);
  patch(&out, d1, 2 << 1);
  assert_int_equal(la_trace_open(out.bytes, out.len, &t, why, sizeof why),
                   LA_EPROTO);
  if (!strstr(why, "pieced geometry: overlapping pieces (piece 1)"))
    fail_msg("why: %s", why);
  la_trace_totals_t tot;
  assert_int_equal(la_trace_check_totals(out.bytes, out.len, 10, &tot, why,
                                         sizeof why),
                   LA_EPROTO);
  /* a count other than the trace's values */
  patch(&out, d1, 6 << 1);
  patch(&out, g0, 3);
  assert_int_equal(la_trace_open(out.bytes, out.len, &t, why, sizeof why),
                   LA_EPROTO);
  assert_non_null(strstr(why, "a piece count other than the trace's values"));
  patch(&out, g0, 2);
  /* spread and pieced together: bad flags */
  patch(&out, 5, (uint8_t)(out.bytes[5] | LA_CENC_F_SPREAD));
  assert_int_equal(la_trace_open(out.bytes, out.len, &t, why, sizeof why),
                   LA_EPROTO);
  assert_non_null(strstr(why, "bad flags"));
  /* a geometry length past the bytes */
  patch(&out, 5, (uint8_t)(out.bytes[5] & ~LA_CENC_F_SPREAD));
  patch(&out, g0 - 1, 100);
  assert_int_equal(la_trace_open(out.bytes, out.len, &t, why, sizeof why),
                   LA_ETRUNC);
  assert_non_null(strstr(why, "pieced geometry of 100 bytes"));
  /* the writer refuses a geometry of another count, or a pieced input */
  la_compact_result_t o2;
  assert_int_equal(la_compact_pieced(&in, v, gb, glen - 3, &o2), LA_EINVAL);
  patch(&out, g0 - 1, (uint8_t)glen);
  assert_int_equal(la_compact_pieced(&out, v, gb, glen, &o2), LA_EINVAL);
  /* with the geometry decoded by the caller: the same bytes and cell
   * statistics, a geometry of another count refused */
  la_compact_result_t o3, o4;
  assert_int_equal(la_compact_pieced(&in, v, gb, glen, &o3), 0);
  assert_int_equal(la_compact_pieced_of(&in, v, &g, gb, glen, &o4), 0);
  assert_int_equal(o3.len, o4.len);
  assert_memory_equal(o3.bytes, o4.bytes, o3.len);
  assert_memory_equal(&o3.stats, &o4.stats, sizeof o3.stats);
  assert_memory_equal(&o3.error, &o4.error, sizeof o3.error);
  la_compact_result_free(&o4);
  assert_int_equal(la_compact_pieced_of(&in, NULL, &g, gb, glen, &o4), 0);
  la_compact_result_free(&o3);
  assert_int_equal(la_compact_pieced(&in, NULL, gb, glen, &o3), 0);
  assert_memory_equal(o3.bytes, o4.bytes, o3.len);
  assert_memory_equal(&o3.stats, &o4.stats, sizeof o3.stats);
  la_compact_result_free(&o3);
  la_compact_result_free(&o4);
  la_pieces_t g1 = {1, 10, 0, 0, 0, p};
  assert_int_equal(la_compact_pieced_of(&in, v, &g1, gb, glen, &o2),
                   LA_EINVAL);
  la_compact_result_free(&in);
  la_compact_result_free(&out);
  free(gb);
}

/* Every byte of a pieced encoding changed (the CRC made good): opened or
 * refused, never a crash or a read outside (ASan); what opens answers
 * every query over its cells. */
static void test_pieced_every_byte_changed(void **state) {
  (void)state;
  la_pieces_t g = gapped_boxes();
  uint8_t *gb;
  size_t glen;
  assert_int_equal(la_pieces_encode(&g, &gb, &glen), 0);
  double v[64];
  for (uint64_t i = 0; i < g.count; i++) v[i] = 100.0 + (double)(i % 7);
  la_compact_params_t prm;
  la_compact_params_default(&prm);
  la_compact_result_t in, out;
  assert_int_equal(la_compact(v, g.count, &prm, &in), 0);
  assert_int_equal(la_compact_pieced(&in, v, gb, glen, &out), 0);
  uint8_t *orig = malloc(out.len);
  assert_non_null(orig);
  memcpy(orig, out.bytes, out.len);
  int opened = 0, refused_n = 0;
  for (size_t off = 5; off + 4 < out.len; off++)
    for (int delta = 1; delta < 256; delta += 37) {
      memcpy(out.bytes, orig, out.len);
      patch(&out, off, (uint8_t)(orig[off] + delta));
      la_trace_t *t;
      char why[200] = "";
      int rc = la_trace_open(out.bytes, out.len, &t, why, sizeof why);
      if (rc != 0) {
        assert_true(why[0] != 0);
        refused_n++;
        continue;
      }
      opened++;
      uint64_t n = la_trace_count(t), nf;
      double *c = malloc((n ? n : 1) * sizeof *c), s, m;
      assert_non_null(c);
      assert_int_equal(la_trace_decode(t, 0, n, c), 0);
      assert_int_equal(la_trace_range_sum(t, 0, n, &s), 0);
      assert_int_equal(la_trace_range_max(t, 0, n, &m, &nf), 0);
      for (size_t i = 0; i < la_trace_segment_count(t); i++) {
        la_trace_segment_t sg;
        assert_int_equal(la_trace_segment(t, i, &sg), 0);
      }
      for (uint64_t i = 0; i < n; i += 7) (void)la_trace_is_verbatim(t, i);
      free(c);
      la_trace_close(t);
    }
  assert_true(opened > 0 && refused_n > 0);
  free(orig);
  la_compact_result_free(&in);
  la_compact_result_free(&out);
  free(gb);
  la_pieces_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_boxes_round_trip_and_expand),
      cmocka_unit_test(test_ranges_and_empty_cells),
      cmocka_unit_test(test_lies_refused_by_name),
      cmocka_unit_test(test_encode_refuses_what_decode_would),
      cmocka_unit_test(test_pieced_trace_polyline),
      cmocka_unit_test(test_pieced_trace_maxerr),
      cmocka_unit_test(test_pieced_trace_lossless),
      cmocka_unit_test(test_pieced_bad_geometry_refused),
      cmocka_unit_test(test_pieced_every_byte_changed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
