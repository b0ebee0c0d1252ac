/* SPDX-License-Identifier: BSD-3-Clause */
/* test_serve_bin.c: `lactl serve`'s element map by range sums, and its
 * reduction off the serving loop.
 *
 * Binning (lactl_sv_fill): synthetic Trace-Sets (real compact encodings:
 * polyline, maxerr, lossless, ranks of different sizes, a missing rank, a
 * lossless rank holding NaN and infinities, a k-slab grid) binned by the
 * mean from range sums and by the max from range sums and range maxima
 * give, bin by bin, the counts of the decoded binning, its means to
 * within 1e-9 of the bin's magnitude and its maxima exactly, without
 * decoding a rank that holds only finite values; a rank with a value
 * that is not finite is decoded and its non-finite cells counted as no
 * data as before; a stop request stops it.
 *
 * The feed thread: sets written to a socket as the GlobalAgent's feed
 * sends them (a head and parts) are handed over whole, one at a time; a
 * malformed one is skipped and the next comes; the end of the stream is
 * told with its reason.
 *
 * Liveness: lactl_sv (the store and the reduction thread) and lactl_http
 * on loopback, driven by a poll loop like lactl serve's: while the max
 * map of a set of 10^9 elements is reduced decoding every element (about
 * a second), the application list and the event stream are answered (they
 * arrive before the map); a newer set of the application, taken meanwhile, stops that
 * reduction, and the map that comes is the newer set's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "la_client.h"
#include "la_compact.h"
#include "la_test_classes.h"
#include "la_test_feedset.h"
#include "la_test_series.h"
#include "la_trace_msg.h"
#include "../../tools/lactl_bin.h"
#include "../../tools/lactl_clusters.h"
#include "../../tools/lactl_http.h"
#include "../../tools/lactl_serve.h"

/* The encoding of a set of nr ranks: rank r has ne[r] elements, encoded
 * by res[r] (NULL: missing); grid: k-slabs of gx x gy x nz[r] cells
 * stacked in order; rank coarse_rank's trace marked coarse with the
 * reason coarse_why (coarse_why NULL: none). *len its bytes; the caller
 * frees it. */
static uint8_t *pack_set_coarse(const char *app, uint64_t cycle, uint32_t nr,
                                const uint64_t *ne,
                                la_compact_result_t *const *res, int grid,
                                uint64_t gx, uint64_t gy, uint32_t coarse_rank,
                                const char *coarse_why, size_t *len) {
  La__TraceSet ts;
  la__trace_set__init(&ts);
  ts.app_id = (char *)app;
  ts.cycle_tag = cycle;
  ts.nprocs = nr;
  ts.metric = "time";
  ts.unit = "ns";
  La__CompactTrace *ct = calloc(nr, sizeof *ct);
  La__CompactTrace **ctp = calloc(nr, sizeof *ctp);
  La__SeriesStats *st = calloc(nr, sizeof *st);
  uint32_t *miss = calloc(nr, sizeof *miss);
  La__GridRank *gr = calloc(nr, sizeof *gr);
  La__GridRank **grp = calloc(nr, sizeof *grp);
  uint64_t *gv = calloc((size_t)nr * 9, sizeof *gv);
  assert_true(ct && ctp && st && miss && gr && grp && gv);
  size_t nt = 0, nm = 0;
  uint64_t z = 0, gz = 0;
  for (uint32_t r = 0; r < nr; r++) gz += grid ? ne[r] / (gx * gy) : 0;
  for (uint32_t r = 0; r < nr; r++) {
    if (grid) {
      la__grid_rank__init(&gr[r]);
      uint64_t *v = gv + 9 * (size_t)r, nz = ne[r] / (gx * gy);
      v[0] = gx, v[1] = gy, v[2] = nz, v[3] = 0, v[4] = 0, v[5] = z;
      v[6] = gx, v[7] = gy, v[8] = gz;
      z += nz;
      gr[r].rank = r;
      gr[r].dims = v, gr[r].n_dims = 3;
      gr[r].origin = v + 3, gr[r].n_origin = 3;
      gr[r].global = v + 6, gr[r].n_global = 3;
      grp[r] = &gr[r];
    }
    if (!res[r]) {
      miss[nm++] = r;
      continue;
    }
    la__series_stats__init(&st[r]);
    st[r].count = res[r]->stats.count, st[r].sum = res[r]->stats.sum;
    st[r].min = res[r]->stats.min, st[r].max = res[r]->stats.max;
    La__CompactTrace *c = &ct[nt];
    la__compact_trace__init(c);
    c->seq = r + 1;
    c->app_id = (char *)app;
    c->rank = r;
    c->cycle_tag = cycle;
    c->n_elements = ne[r];
    c->mode = (La__CompactMode)res[r]->mode;
    c->segments.data = res[r]->bytes;
    c->segments.len = res[r]->len;
    c->stats = &st[r];
    if (coarse_why && r == coarse_rank) c->coarse = (char *)coarse_why;
    ctp[nt++] = c;
  }
  ts.complete = nm == 0;
  ts.traces = ctp, ts.n_traces = nt;
  ts.missing_ranks = miss, ts.n_missing_ranks = nm;
  ts.rank_elements = (uint64_t *)ne, ts.n_rank_elements = nr;
  if (grid) ts.grids = grp, ts.n_grids = nr;
  *len = la__trace_set__get_packed_size(&ts);
  uint8_t *buf = malloc(*len);
  assert_non_null(buf);
  la__trace_set__pack(&ts, buf);
  free(ct), free(ctp), free(st), free(miss), free(gr), free(grp), free(gv);
  return buf;
}

/* The same, no trace coarse. */
static uint8_t *pack_set(const char *app, uint64_t cycle, uint32_t nr,
                         const uint64_t *ne, la_compact_result_t *const *res,
                         int grid, uint64_t gx, uint64_t gy, size_t *len) {
  return pack_set_coarse(app, cycle, nr, ne, res, grid, gx, gy, 0, NULL, len);
}

/* That set, parsed. */
static la_traceset_t *make_set(const char *app, uint64_t cycle, uint32_t nr,
                               const uint64_t *ne,
                               la_compact_result_t *const *res, int grid,
                               uint64_t gx, uint64_t gy) {
  size_t len;
  uint8_t *buf = pack_set(app, cycle, nr, ne, res, grid, gx, gy, &len);
  la_traceset_t *t = NULL;
  char why[256];
  if (la_traceset_from_bytes(buf, len, &t, why, sizeof why) != 0)
    fail_msg("the synthetic set: %s", why);
  free(buf);
  return t;
}

/* Bins t into a w x h field of at most nb x nb bins by mode, by range
 * sums (decode 0) or decoding (1). */
static void bin_on(la_traceset_t *t, uint64_t w, uint64_t h, uint32_t nb,
                   int mode, int decode, int grid, const uint64_t g[3],
                   unsigned threads, lactl_bin_t *b, lactl_sv_fill_t *f) {
  assert_int_equal(lactl_bin_init(b, w, h, nb, nb, mode), 0);
  memset(f, 0, sizeof *f);
  f->grid = grid, f->decode = decode, f->threads = threads;
  if (g) f->g[0] = g[0], f->g[1] = g[1], f->g[2] = g[2];
  assert_int_equal(lactl_sv_fill(t, b, f), 0);
}

static void bin(la_traceset_t *t, uint64_t w, uint64_t h, uint32_t nb,
                int mode, int decode, int grid, const uint64_t g[3],
                lactl_bin_t *b, lactl_sv_fill_t *f) {
  bin_on(t, w, h, nb, mode, decode, grid, g, 1, b, f);
}

/* a and b hold exactly the same bins. */
static void identical_bins(const lactl_bin_t *a, const lactl_bin_t *b) {
  size_t nb = (size_t)a->bw * a->bh;
  assert_int_equal(a->bw, b->bw);
  assert_int_equal(a->bh, b->bh);
  assert_memory_equal(a->n, b->n, nb * sizeof *a->n);
  assert_memory_equal(a->none, b->none, nb * sizeof *a->none);
  assert_memory_equal(a->acc, b->acc, nb * sizeof *a->acc);
}

/* Bins a (range sums) and b (decoded) hold the same counts and values,
 * means to within 1e-9 of the bin's magnitude; max exactly. */
static void same_bins(const lactl_bin_t *a, const lactl_bin_t *b) {
  assert_int_equal(a->bw, b->bw);
  assert_int_equal(a->bh, b->bh);
  for (uint32_t y = 0; y < a->bh; y++)
    for (uint32_t x = 0; x < a->bw; x++) {
      size_t i = x + (size_t)a->bw * y;
      assert_int_equal(a->n[i], b->n[i]);
      assert_int_equal(a->none[i], b->none[i]);
      double va = lactl_bin_value(a, x, y), vb = lactl_bin_value(b, x, y);
      if (isnan(vb)) {
        assert_true(isnan(va));
        continue;
      }
      if (a->mode == LACTL_BIN_MAX) {
        assert_true(va == vb);
      } else if (!(fabs(va - vb) <= 1e-9 * fabs(vb) + 1e-300)) {
        fail_msg("bin (%u, %u): range sums %.17g, decoded %.17g", x, y, va,
                 vb);
      }
    }
}

/* Series of n values of synthetic kind, compacted by spec. */
static la_compact_result_t *series(int kind, size_t n, const char *spec,
                                   int nonfinite) {
  double *x = malloc((n + 1) * sizeof *x);
  la_compact_result_t *r = malloc(sizeof *r);
  assert_true(x && r);
  assert_int_equal(la_compact_synth(kind, n, 11 + (uint64_t)kind, x), 0);
  if (nonfinite) x[n / 3] = NAN, x[n / 2] = INFINITY, x[n - 1] = -INFINITY;
  assert_int_equal(la_test_compact(x, n, spec, r), 0);
  free(x);
  return r;
}

static void free_series(la_compact_result_t *r) {
  if (!r) return;
  la_compact_result_free(r);
  free(r);
}

/* Elements by global index: ranks of different sizes and encodings, one
 * missing, in rows of W cells; bins of several sizes. */
/* The ranks' sizes of mixed_set. */
static const uint64_t mixed_ne[6] = {5000, 12345, 777, 30000, 2048, 9001};

/* A set of 6 ranks of mixed_ne elements, of different encodings, rank 3
 * missing; res its series (free_series each). */
static la_traceset_t *mixed_set(const char *app, la_compact_result_t *res[6]) {
  res[0] = series(LA_SYNTH_MESH, 5000, "polyline:cv=0.05", 0);
  res[1] = series(LA_SYNTH_RAMPS, 12345, "maxerr:eps=0.5", 0);
  res[2] = series(LA_SYNTH_NOISE, 777, "lossless", 0);
  res[3] = NULL; /* missing */
  res[4] = series(LA_SYNTH_SINE, 2048, "polyline:connected", 0);
  res[5] = series(LA_SYNTH_STEPS, 9001, "polyline:cv=0.01", 0);
  return make_set(app, 1, 6, mixed_ne, res, 0, 0, 0);
}

static void test_index_mean(void **state) {
  (void)state;
  const uint64_t *ne = mixed_ne;
  la_compact_result_t *res[6];
  la_traceset_t *t = mixed_set("idx", res);
  uint64_t n = la_traceset_elements(t), w = (uint64_t)ceil(sqrt((double)n));
  uint64_t h = (n + w - 1) / w;
  const uint32_t sizes[] = {16, 37, 100, 512};
  for (size_t s = 0; s < 2 * sizeof sizes / sizeof *sizes; s++) {
    const int mode = s % 2 ? LACTL_BIN_MAX : LACTL_BIN_MEAN;
    lactl_bin_t a, b;
    lactl_sv_fill_t fa, fb;
    bin(t, w, h, sizes[s / 2], mode, 0, 0, NULL, &a, &fa);
    bin(t, w, h, sizes[s / 2], mode, 1, 0, NULL, &b, &fb);
    same_bins(&a, &b);
    assert_int_equal(fa.decoded, 0); /* every value finite: no decoding */
    assert_true(fa.ranges > 0);
    assert_int_equal(fb.ranges, 0);
    assert_int_equal(fa.nfin, fb.nfin);
    assert_int_equal(fa.nfin, n - ne[3]);
    assert_true(fabs(fa.sum - fb.sum) <= 1e-9 * fabs(fb.sum));
    lactl_bin_free(&a), lactl_bin_free(&b);
  }
  /* lactl serve's rows when elements outnumber the bins: at most nb rows,
   * each bin one run of a row (a range sum per rank in it) */
  for (uint32_t nb = 16, mode = LACTL_BIN_MEAN; nb <= 64;
       mode = !mode, nb *= mode == LACTL_BIN_MEAN ? 4 : 1) {
    uint64_t ww = (n + nb - 1) / nb, hh = (n + ww - 1) / ww;
    lactl_bin_t a, b;
    lactl_sv_fill_t fa, fb;
    bin(t, ww, hh, nb, (int)mode, 0, 0, NULL, &a, &fa);
    bin(t, ww, hh, nb, (int)mode, 1, 0, NULL, &b, &fb);
    same_bins(&a, &b);
    assert_int_equal(a.bh, hh);
    assert_true(fa.ranges <= (uint64_t)nb * hh + 6); /* + rank boundaries */
    assert_int_equal(fa.decoded, 0);
    lactl_bin_free(&a), lactl_bin_free(&b);
  }
  la_traceset_free(t);
  for (int r = 0; r < 6; r++) free_series(res[r]);
}

/* The mean, its runs' records found from the previous run's
 * (lactl_sv_fill), holds to the bit the bins of a range sum per run
 * searched in the whole index (la_traceset_range_sum): the encodings of
 * mixed_set, its missing rank, rows as lactl serve makes them and square,
 * bins of several sizes. */
static void test_runs_in_order(void **state) {
  (void)state;
  la_compact_result_t *res[6];
  la_traceset_t *t = mixed_set("runs", res);
  const uint64_t n = la_traceset_elements(t);
  for (uint32_t nb = 7; nb <= 512; nb = nb * 4 + 1)
    for (int square = 0; square < 2; square++) {
      uint64_t w = square ? (uint64_t)ceil(sqrt((double)n)) : (n + nb - 1) / nb;
      uint64_t h = (n + w - 1) / w, runs = 0;
      lactl_bin_t a, b;
      lactl_sv_fill_t fa;
      bin(t, w, h, nb, LACTL_BIN_MEAN, 0, 0, NULL, &a, &fa);
      assert_int_equal(lactl_bin_init(&b, w, h, nb, nb, LACTL_BIN_MEAN), 0);
      uint32_t r = 0;
      uint64_t rend = la_traceset_rank_elements(t, 0);
      for (uint64_t g = 0; g < n;) { /* a run: one row, one bin, one rank */
        while (g >= rend) rend += la_traceset_rank_elements(t, ++r);
        uint64_t i = lactl_bin_index(&b, g % w, g / w), e = g + 1;
        while (e < rend && e % w && lactl_bin_index(&b, e % w, e / w) == i)
          e++;
        double sm;
        if (!la_traceset_has_rank(t, r)) {
          b.none[i] += e - g;
        } else {
          assert_int_equal(la_traceset_range_sum(t, g, e - g, &sm), 0);
          lactl_bin_add_sum(&b, i, sm, e - g);
          runs++;
        }
        g = e;
      }
      identical_bins(&a, &b);
      assert_int_equal(fa.ranges, runs);
      assert_int_equal(fa.decoded, 0);
      lactl_bin_free(&a), lactl_bin_free(&b);
    }
  la_traceset_free(t);
  for (int r = 0; r < 6; r++) free_series(res[r]);
}

/* A lossless rank holding NaN and infinities: its runs with them are
 * decoded, those cells no data, the rest as decoded. */
static void test_nonfinite(void **state) {
  (void)state;
  const uint64_t ne[3] = {4000, 6000, 3000};
  la_compact_result_t *res[3] = {
      series(LA_SYNTH_MESH, 4000, "polyline:cv=0.05", 0),
      series(LA_SYNTH_NOISE, 6000, "lossless", 1),
      series(LA_SYNTH_MESH, 3000, "lossless", 0)};
  la_traceset_t *t = make_set("nonfinite", 1, 3, ne, res, 0, 0, 0);
  for (int mode = LACTL_BIN_MEAN; mode <= LACTL_BIN_MAX; mode++) {
    lactl_bin_t a, b;
    lactl_sv_fill_t fa, fb;
    bin(t, 115, 114, 64, mode, 0, 0, NULL, &a, &fa);
    bin(t, 115, 114, 64, mode, 1, 0, NULL, &b, &fb);
    same_bins(&a, &b);
    assert_int_equal(fa.decoded, 6000); /* only the rank with them */
    assert_int_equal(fa.nfin, 13000 - 3);
    uint64_t none = 0;
    for (size_t i = 0; i < (size_t)a.bw * a.bh; i++) none += a.none[i];
    assert_int_equal(none, 3); /* cells past the last element: never added */
    lactl_bin_free(&a), lactl_bin_free(&b);
  }
  la_traceset_free(t);
  for (int r = 0; r < 3; r++) free_series(res[r]);
}

/* A k-slab grid: the middle slice's rows are runs of one rank; a
 * 300 x 200 slice in 64 x 50 bins and in one bin per cell. */
static void test_grid_mean(void **state) {
  (void)state;
  const uint64_t gx = 300, gy = 200, ne[3] = {gx * gy * 2, gx * gy * 3,
                                              gx * gy * 1};
  la_compact_result_t *res[3] = {
      series(LA_SYNTH_MESH, ne[0], "polyline:cv=0.05", 0),
      series(LA_SYNTH_RAMPS, ne[1], "maxerr:eps=0.01,relative", 0),
      series(LA_SYNTH_SPIKES, ne[2], "polyline", 0)};
  la_traceset_t *t = make_set("grid", 1, 3, ne, res, 1, gx, gy);
  const uint64_t g[3] = {gx, gy, 6};
  const uint32_t sizes[] = {64, 1024};
  for (size_t s = 0; s < 4; s++) {
    const int mode = s % 2 ? LACTL_BIN_MAX : LACTL_BIN_MEAN;
    lactl_bin_t a, b;
    lactl_sv_fill_t fa, fb;
    bin(t, gx, gy, sizes[s / 2], mode, 0, 1, g, &a, &fa);
    bin(t, gx, gy, sizes[s / 2], mode, 1, 1, g, &b, &fb);
    same_bins(&a, &b);
    assert_int_equal(fa.decoded, 0);
    assert_int_equal(fa.nfin, gx * gy); /* the slice k = 3: rank 1's */
    lactl_bin_free(&a), lactl_bin_free(&b);
  }
  la_traceset_free(t);
  for (int r = 0; r < 3; r++) free_series(res[r]);
}

/* The max by range sums and maxima equals the decoded binning (values
 * negative and positive, maxerr's lines through exceptions), decoding
 * nothing; a stop request stops a reduction. */
static void test_max_and_stop(void **state) {
  (void)state;
  const uint64_t ne[2] = {20000, 15000};
  la_compact_result_t *res[2] = {
      series(LA_SYNTH_MESH, ne[0], "polyline:cv=0.05", 0),
      series(LA_SYNTH_NOISE, ne[1], "maxerr:eps=0.5", 0)};
  la_traceset_t *t = make_set("max", 1, 2, ne, res, 0, 0, 0);
  lactl_bin_t a, b;
  lactl_sv_fill_t fa, fb;
  bin(t, 188, 187, 50, LACTL_BIN_MAX, 0, 0, NULL, &a, &fa);
  bin(t, 188, 187, 50, LACTL_BIN_MAX, 1, 0, NULL, &b, &fb);
  same_bins(&a, &b);
  assert_true(fa.ranges > 0);
  assert_int_equal(fa.decoded, 0);
  assert_int_equal(fb.decoded, 35000);
  lactl_bin_free(&a), lactl_bin_free(&b);
  atomic_int stop;
  atomic_init(&stop, 1);
  assert_int_equal(lactl_bin_init(&a, 188, 187, 50, 50, LACTL_BIN_MEAN), 0);
  memset(&fa, 0, sizeof fa);
  fa.stop = &stop;
  assert_int_equal(lactl_sv_fill(t, &a, &fa), LA_ESTATE);
  assert_int_equal(fa.nfin, 0);
  lactl_bin_free(&a);
  la_traceset_free(t);
  for (int r = 0; r < 2; r++) free_series(res[r]);
}

/* Binned on several threads (rows of bins each), a set gives the bins it
 * gives on one: exactly for finite values (every layout of rows, range
 * sums and decoding); a rank with NaN and infinities that spans two
 * threads' rows: the same counts, maxima and decoded elements, means to
 * within 1e-9. */
static void test_threads(void **state) {
  (void)state;
  la_compact_result_t *res[6];
  la_traceset_t *t = mixed_set("thr", res);
  uint64_t n = la_traceset_elements(t);
  const unsigned th[] = {2, 3, 8, 64};
  for (uint32_t nb = 7; nb <= 512; nb = nb * 4 + 1)
    for (int mode = LACTL_BIN_MEAN; mode <= LACTL_BIN_MAX; mode++)
      for (int dec = 0; dec < 2; dec++) {
        uint64_t ww = (n + nb - 1) / nb, hh = (n + ww - 1) / ww;
        lactl_bin_t a, b;
        lactl_sv_fill_t fa, fb;
        bin(t, ww, hh, nb, mode, dec, 0, NULL, &a, &fa);
        for (size_t k = 0; k < sizeof th / sizeof *th; k++) {
          bin_on(t, ww, hh, nb, mode, dec, 0, NULL, th[k], &b, &fb);
          identical_bins(&a, &b);
          assert_int_equal(fa.nfin, fb.nfin);
          assert_int_equal(fa.ranges, fb.ranges);
          assert_int_equal(fa.decoded, fb.decoded);
          assert_true(fabs(fa.sum - fb.sum) <= 1e-12 * fabs(fa.sum));
          lactl_bin_free(&b);
        }
        lactl_bin_free(&a);
      }
  la_traceset_free(t);
  for (int r = 0; r < 6; r++) free_series(res[r]);
  /* the rank with NaN and infinities spans the rows of several threads */
  const uint64_t nf[3] = {4000, 6000, 3000};
  la_compact_result_t *rf[3] = {
      series(LA_SYNTH_MESH, 4000, "polyline:cv=0.05", 0),
      series(LA_SYNTH_NOISE, 6000, "lossless", 1),
      series(LA_SYNTH_MESH, 3000, "lossless", 0)};
  t = make_set("nonfinite", 1, 3, nf, rf, 0, 0, 0);
  for (int mode = LACTL_BIN_MEAN; mode <= LACTL_BIN_MAX; mode++) {
    lactl_bin_t a, b;
    lactl_sv_fill_t fa, fb;
    bin(t, 115, 114, 64, mode, 0, 0, NULL, &a, &fa);
    bin_on(t, 115, 114, 64, mode, 0, 0, NULL, 4, &b, &fb);
    same_bins(&b, &a);
    assert_int_equal(fb.decoded, 6000); /* counted once */
    assert_int_equal(fb.nfin, fa.nfin);
    lactl_bin_free(&a), lactl_bin_free(&b);
  }
  /* stopped on every thread */
  atomic_int stop;
  atomic_init(&stop, 1);
  lactl_bin_t a;
  lactl_sv_fill_t fa;
  assert_int_equal(lactl_bin_init(&a, 115, 114, 64, 64, LACTL_BIN_MEAN), 0);
  memset(&fa, 0, sizeof fa);
  fa.stop = &stop, fa.threads = 4;
  assert_int_equal(lactl_sv_fill(t, &a, &fa), LA_ESTATE);
  assert_int_equal(fa.nfin, 0);
  lactl_bin_free(&a);
  la_traceset_free(t);
  for (int r = 0; r < 3; r++) free_series(rf[r]);
}

/* The next thing the feed thread hands over, waiting up to 20 s: 1 and
 * *t, or the lost stream's code. */
static int feed_wait(lactl_sv_feed_t *f, la_traceset_t **t, char *why,
                     size_t why_len) {
  for (int i = 0; i < 200; i++) {
    struct pollfd p = {.fd = lactl_sv_feed_fd(f), .events = POLLIN};
    poll(&p, 1, 100);
    int rc = lactl_sv_feed_next(f, t, why, why_len);
    if (rc) return rc;
  }
  fail_msg("the feed thread handed nothing over in 20 s");
  return 0;
}

/* A feed thread reading a client on one end of a socket pair sv (sv[1]:
 * the GlobalAgent's end, the test's to close). */
static lactl_sv_feed_t *feed_start(int sv[2]) {
  la_client_t *c;
  lactl_sv_feed_t *f;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  assert_int_equal(la_client_from_fd(sv[0], 0, &c), 0);
  assert_int_equal(lactl_sv_feed_new(c, &f), 0);
  return f;
}

/* The feed thread: sets sent in parts as the GlobalAgent sends them
 * arrive whole, one at a time; a malformed one is skipped (said on
 * stderr) and the next arrives; the stream's end is told with its
 * reason. */
static void test_feed_thread(void **state) {
  (void)state;
  const uint64_t ne[3] = {5000, 7000, 3000};
  la_compact_result_t *res[3] = {
      series(LA_SYNTH_MESH, 5000, "polyline:cv=0.05", 0),
      series(LA_SYNTH_RAMPS, 7000, "maxerr:eps=0.5", 0), NULL};
  size_t len;
  uint8_t *set = pack_set("fed", 4, 3, ne, res, 0, 0, 0, &len);
  la_traceset_t *want = make_set("fed", 4, 3, ne, res, 0, 0, 0);
  int sv[2];
  lactl_sv_feed_t *f = feed_start(sv);
  la_traceset_t *t = NULL;
  char why[300] = "";
  assert_int_equal(lactl_sv_feed_next(f, &t, why, sizeof why), 0);
  /* two sets, then a malformed one (its bytes cut), then a third */
  assert_int_equal(la_test_feed_set(sv[1], set, len, "fed", 4, 1000), 0);
  assert_int_equal(la_test_feed_set(sv[1], set, len, "fed", 4, 333), 0);
  assert_int_equal(la_test_feed_set(sv[1], set, len / 2, "fed", 5, 1000), 0);
  assert_int_equal(la_test_feed_set(sv[1], set, len, "fed", 4, len), 0);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(feed_wait(f, &t, why, sizeof why), 1);
    assert_string_equal(la_traceset_app_id(t), "fed");
    assert_int_equal(la_traceset_cycle(t), 4);
    assert_int_equal(la_traceset_elements(t), 15000);
    assert_false(la_traceset_has_rank(t, 2));
    double a, b;
    assert_int_equal(la_traceset_range_sum(t, 100, 9000, &a), 0);
    assert_int_equal(la_traceset_range_sum(want, 100, 9000, &b), 0);
    assert_true(a == b);
    la_traceset_free(t);
  }
  /* the GlobalAgent goes away: the loop is told, with the reason */
  close(sv[1]);
  int rc = feed_wait(f, &t, why, sizeof why);
  assert_int_equal(rc, LA_EIO);
  assert_null(t);
  assert_true(strstr(why, "closed") != NULL);
  lactl_sv_feed_free(f);
  la_traceset_free(want);
  free(set);
  for (int r = 0; r < 3; r++) free_series(res[r]);
}

/* ---- liveness: the store, the reduction thread and HTTP on loopback */

typedef struct {
  lactl_sv_t *d;
  lactl_http_t *http;
  atomic_int take_b; /* the client asks for the newer set */
  atomic_int quit;
} srv_t;

static void handle(void *ctx, const char *path, const char *query,
                   lactl_http_resp_t *r) {
  srv_t *s = ctx;
  char *buf = NULL, why[300] = "";
  size_t len = 0;
  if (!strcmp(path, "/events")) {
    r->sse = 1;
    return;
  }
  if (!strcmp(path, "/api/map")) {
    /* decoding every element: a reduction long enough to watch */
    lactl_sv_map_opts_t o = {.kind = LA_WEIGHTS_MEASURED,
                             .agg = LACTL_BIN_MAX, .bins = 512, .decode = 1};
    if (lactl_sv_map_ask(s->d, "big", &o, NULL, r->ticket, why, sizeof why))
      fail_msg("map asked: %s", why);
    r->later = 1;
    return;
  }
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(lactl_sv_apps_json(s->d, f), 0);
  fclose(f);
  r->status = 200, r->ctype = "application/json", r->body = buf, r->len = len;
}

static void reply(void *ctx, uint64_t ticket, int status, char *body,
                  size_t len) {
  srv_t *s = ctx;
  lactl_http_reply(s->http, ticket, status, "application/json", body, len);
  free(body);
}

/* A client socket to port that sent GET path. */
static int get(uint16_t port, const char *path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_true(fd >= 0);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  char req[512];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
                   path);
  assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
  return fd;
}

/* Reads from fd until it closes (or, until holds a substring) into buf. */
static size_t read_until(int fd, char *buf, size_t cap, const char *until) {
  size_t n = 0;
  for (;;) {
    ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
    if (k <= 0) break;
    n += (size_t)k;
    buf[n] = 0;
    if ((until && strstr(buf, until)) || n + 1 >= cap) break;
  }
  buf[n] = 0;
  return n;
}

/* Whether fd has something to read now. */
static int readable(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

typedef struct {
  uint16_t port;
  srv_t *s;
  int apps_first, event_first, map_cycle2, events_ok;
} cli_t;

static void *client(void *arg) {
  cli_t *c = arg;
  static char buf[1 << 22];
  char path[128];
  snprintf(path, sizeof path, "/events?token=ab");
  int ev = get(c->port, path);
  read_until(ev, buf, sizeof buf, "retry: 1000\n\n"); /* the stream's head */
  int map = get(c->port, "/api/map?token=ab&app=big&agg=max");
  /* while it is reduced: the application list */
  int apps = get(c->port, "/api/apps?token=ab");
  read_until(apps, buf, sizeof buf, NULL);
  close(apps);
  c->apps_first = strstr(buf, "\"id\":\"big\"") && !readable(map);
  /* a newer set: its event comes, the reduction of the older one stops */
  atomic_store(&c->s->take_b, 1);
  read_until(ev, buf, sizeof buf, "\n\n");
  c->events_ok = strstr(buf, "event: set") && strstr(buf, "\"cycle\":2");
  c->event_first = !readable(map);
  read_until(map, buf, sizeof buf, NULL);
  char *body = strstr(buf, "\r\n\r\n");
  c->map_cycle2 = strstr(buf, "HTTP/1.1 200") && body &&
                  strstr(body, "\"cycle\":2,") && strstr(body, "\"agg\":\"max\"");
  if (!c->map_cycle2) print_message("the map's answer: %.300s\n", buf);
  close(map);
  close(ev);
  atomic_store(&c->s->quit, 1);
  return NULL;
}

static void test_live(void **state) {
  (void)state;
  const uint32_t nr = 1000;
  const uint64_t e = 1000000;
  la_compact_result_t *one = series(LA_SYNTH_MESH, e, "polyline:cv=0.05", 0);
  uint64_t *ne = malloc(nr * sizeof *ne);
  la_compact_result_t **res = malloc(nr * sizeof *res);
  assert_true(ne && res);
  for (uint32_t r = 0; r < nr; r++) ne[r] = e, res[r] = one;
  srv_t s = {.d = lactl_sv_new(4)};
  atomic_init(&s.take_b, 0);
  atomic_init(&s.quit, 0);
  char *ev = NULL, bound[64], why[256];
  size_t evn = 0;
  assert_int_equal(
      lactl_sv_take(s.d, make_set("big", 1, nr, ne, res, 0, 0, 0), &ev, &evn),
      0);
  free(ev);
  la_traceset_t *b = make_set("big", 2, nr, ne, res, 0, 0, 0);
  assert_int_equal(lactl_http_open("127.0.0.1:0", 8, "ab", handle, &s,
                                   &s.http, bound, sizeof bound, why,
                                   sizeof why),
                   0);
  cli_t c = {.port = (uint16_t)atoi(strrchr(bound, ':') + 1), .s = &s};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, client, &c), 0);
  struct pollfd p[16];
  while (!atomic_load(&s.quit)) {
    size_t n = 0;
    int mfd = lactl_sv_map_fd(s.d);
    if (mfd >= 0) p[n++] = (struct pollfd){.fd = mfd, .events = POLLIN};
    size_t h0 = n;
    n += lactl_http_pollfds(s.http, p + n, 16 - n);
    poll(p, n, 100);
    lactl_http_service(s.http, p + h0, n - h0, lactl_http_now_ms());
    lactl_sv_map_poll(s.d, NULL, reply, &s);
    if (b && atomic_load(&s.take_b)) { /* the feed brings cycle 2 */
      assert_int_equal(lactl_sv_take(s.d, b, &ev, &evn), 0);
      lactl_http_broadcast(s.http, "set", ev, evn);
      free(ev);
      b = NULL;
    }
  }
  pthread_join(th, NULL);
  lactl_sv_map_stats_t st;
  lactl_sv_map_stats(s.d, &st);
  print_message("maps reduced %llu, stopped %llu\n",
                (unsigned long long)st.started,
                (unsigned long long)st.superseded);
  assert_true(c.apps_first);  /* answered while the map was reduced */
  assert_true(c.events_ok);   /* the event of the newer set came */
  assert_true(c.event_first); /* before the map */
  assert_true(c.map_cycle2);  /* the map of the newer set */
  assert_int_equal(st.superseded, 1);
  assert_int_equal(st.started, 2);
  lactl_http_close(s.http);
  lactl_sv_free(s.d);
  la_traceset_free(b);
  free_series(one);
  free(ne), free(res);
}

/* A set whose rank 1 is coarse (its LocalAgent was behind): the history
 * column lactl_sv_take sends counts it in its rank bin (the page's lower
 * corner mark), and the element map's answer names it with its reason
 * (the page's line above the map); a rank not coarse is in neither. */
static void test_coarse_marked(void **state) {
  (void)state;
  const uint64_t ne[3] = {4000, 6000, 3000};
  la_compact_result_t *res[3] = {
      series(LA_SYNTH_MESH, 4000, "polyline:cv=0.05", 0),
      series(LA_SYNTH_STEPS, 6000, "polyline:cv=0.05", 0),
      series(LA_SYNTH_MESH, 3000, "lossless", 0)};
  const char *why = "coarse: the LocalAgent was behind (test)";
  size_t len;
  uint8_t *buf =
      pack_set_coarse("coarse", 1, 3, ne, res, 0, 0, 0, 1, why, &len);
  la_traceset_t *t = NULL;
  char err[256];
  assert_int_equal(la_traceset_from_bytes(buf, len, &t, err, sizeof err), 0);
  free(buf);
  assert_string_equal(la_traceset_rank_coarse(t, 1), why);
  assert_null(la_traceset_rank_coarse(t, 0));
  /* the map's answer */
  char *out = NULL;
  size_t outn = 0;
  FILE *f = open_memstream(&out, &outn);
  assert_non_null(f);
  lactl_sv_map_opts_t o = {.kind = LA_WEIGHTS_MEASURED,
                           .agg = LACTL_BIN_MEAN,
                           .bins = 64};
  double ms;
  assert_int_equal(lactl_sv_map_of(t, &o, NULL, f, &ms, err, sizeof err), 0);
  fclose(f);
  if (!strstr(out, "\"coarse\":[{\"rank\":1,\"reason\":\"coarse: the "
                   "LocalAgent was behind (test)\"}]"))
    fail_msg("the map's answer: %s", out);
  free(out);
  /* the history column: three ranks, three bins, the middle one coarse */
  lactl_sv_t *d = lactl_sv_new(4);
  char *ev = NULL;
  size_t evn = 0;
  assert_int_equal(lactl_sv_take(d, t, &ev, &evn), 0);
  if (!strstr(ev, "\"coarse\":[0,1,0]"))
    fail_msg("the history column: %.*s", (int)evn, ev);
  free(ev);
  lactl_sv_free(d);
  for (int r = 0; r < 3; r++) free_series(res[r]);
}

/* Behaviour classes (/api/clusters): a set of 10^4 ranks in the known
 * classes of la_test_classes.h, taken by lactl_sv and asked for its
 * classes, is answered (on the reduction thread) with exactly those
 * classes, each one range of ranks (class k: k, k+4, ..., class 1 without
 * the outliers: 1, 9, ...), the same heads (size, representative, scales)
 * as `lactl show --clusters --json` of the set and no per-rank arrays;
 * the outliers listed; a second request is answered from the kept
 * answer; an unknown application is LA_ENOTFOUND; and a list bound of 2
 * lists two outliers and counts the rest. */
#define TC_NP 10000u
#define TC_NOUT 10u
#define TC_NE 256u

typedef struct {
  int status;
  char *body;
  size_t len;
  int n;
} got_t;

static void got_reply(void *ctx, uint64_t ticket, int status, char *body,
                      size_t len) {
  got_t *g = ctx;
  (void)ticket;
  free(g->body);
  g->status = status, g->body = body, g->len = len, g->n++;
}

/* Polls d until n answers came. */
static void wait_answers(lactl_sv_t *d, got_t *g, int n) {
  for (int i = 0; i < 6000 && g->n < n; i++) {
    lactl_sv_map_poll(d, NULL, got_reply, g);
    if (g->n >= n) break;
    struct pollfd p = {.fd = lactl_sv_map_fd(d), .events = POLLIN};
    poll(&p, 1, 50);
  }
  assert_int_equal(g->n, n);
}

static void test_classes(void **state) {
  (void)state;
  la_compact_result_t **res = calloc(TC_NP, sizeof *res);
  uint64_t *ne = malloc(TC_NP * sizeof *ne);
  double *x = malloc(TC_NE * sizeof *x);
  assert_true(res && ne && x);
  for (uint32_t r = 0; r < TC_NP; r++) {
    la_tc_series(r, TC_NP, TC_NOUT, TC_NE, x);
    res[r] = malloc(sizeof *res[r]);
    assert_non_null(res[r]);
    assert_int_equal(la_test_compact(x, TC_NE, "polyline:cv=0.02", res[r]), 0);
    ne[r] = TC_NE;
  }
  free(x);
  la_traceset_t *t = make_set("classes", 3, TC_NP, ne, res, 0, 0, 0);
  /* what lactl show --clusters --json prints of the set */
  char *show = NULL, *lim = NULL;
  size_t shown = 0, limn = 0;
  FILE *f = open_memstream(&show, &shown);
  assert_non_null(f);
  assert_int_equal(lactl_clusters_print(f, t, LACTL_SV_CLASS_TOL, 1), 0);
  fclose(f);
  lactl_clusters_t k;
  char why[256];
  assert_int_equal(lactl_clusters_of(t, LACTL_SV_CLASS_TOL, NULL, &k, why,
                                     sizeof why),
                   0);
  f = open_memstream(&lim, &limn);
  assert_non_null(f);
  lactl_clusters_json(f, t, &k, 2);
  fclose(f);
  lactl_sv_t *d = lactl_sv_new(4);
  char *ev = NULL;
  size_t evn = 0;
  assert_int_equal(lactl_sv_take(d, t, &ev, &evn), 0);
  free(ev);
  assert_int_equal(lactl_sv_classes_ask(d, "nope", 1, why, sizeof why),
                   LA_ENOTFOUND);
  assert_non_null(strstr(why, "nope"));
  got_t g = {0};
  assert_int_equal(lactl_sv_classes_ask(d, "classes", 2, why, sizeof why), 0);
  wait_answers(d, &g, 1);
  assert_int_equal(g.status, 200);
  char *body = strndup(g.body, g.len);
  assert_non_null(body);
  /* exactly the known classes, each one range; the outliers */
  assert_int_equal(k.c.n_classes, LA_TC_CLASSES);
  for (size_t c = 0; c < k.c.n_classes; c++) {
    const la_cluster_class_t *K = &k.c.classes[c];
    int want = la_tc_class(K->rep, TC_NP, TC_NOUT);
    assert_true(want >= 0);
    uint32_t n = 0;
    for (uint32_t r = 0; r < TC_NP; r++)
      n += la_tc_class(r, TC_NP, TC_NOUT) == want;
    assert_int_equal(K->n, n);
    char head[512], rng[96];
    int hn = snprintf(head, sizeof head,
                      "{\"class\": %zu, \"size\": %u, \"representative\": %u, "
                      "\"elements\": %u, \"scale_min\": ",
                      c, n, K->rep, TC_NE);
    if (!strstr(body, head)) fail_msg("%s not in %s", head, body);
    /* the head up to the ranges as lactl show --json prints it */
    const char *h = strstr(body, head), *e = strstr(h, ",\n   \"ranges\"");
    assert_non_null(e);
    assert_true((size_t)(e - h) > (size_t)hn);
    char *same = strndup(h, (size_t)(e - h));
    if (!strstr(show, same)) fail_msg("%s not in lactl show's %s", same, show);
    free(same);
    uint32_t last = (uint32_t)want;
    for (uint32_t r = (uint32_t)want; r < TC_NP; r += LA_TC_CLASSES) last = r;
    if (want == 1) /* without the outliers 5, 1005, ..., 9005 */
      snprintf(rng, sizeof rng,
               "\"ranges\": [[1, 1, 1], [9, 1001, 4], [1009, 2001, 4], ");
    else
      snprintf(rng, sizeof rng,
               "\"ranges\": [[%d, %u, 4]], \"ranges_more\": 0}", want, last);
    if (!strstr(h, rng)) fail_msg("%s not in %s", rng, h);
  }
  char out[256] = "\"outliers\": [";
  for (uint32_t r = 0, i = 0; r < TC_NP; r++)
    if (la_tc_class(r, TC_NP, TC_NOUT) < 0)
      snprintf(out + strlen(out), sizeof out - strlen(out), "%s%u",
               i++ ? ", " : "", r);
  strcat(out, "], \"outliers_more\": 0");
  if (!strstr(body, out)) fail_msg("%s not in %s", out, body);
  assert_null(strstr(body, "\"members\""));
  assert_null(strstr(body, "\"scales\""));
  assert_true(g.len < 4096); /* ranges, not 10^4 ranks */
  /* again: the kept answer */
  lactl_sv_map_stats_t st;
  lactl_sv_map_stats(d, &st);
  assert_int_equal(st.started, 1);
  assert_int_equal(lactl_sv_classes_ask(d, "classes", 3, why, sizeof why), 0);
  wait_answers(d, &g, 2);
  assert_int_equal(g.status, 200);
  assert_int_equal(g.len, strlen(body));
  assert_memory_equal(g.body, body, g.len);
  lactl_sv_map_stats(d, &st);
  assert_int_equal(st.started, 1);
  assert_int_equal(st.cached, 1);
  /* a bound of two */
  if (!strstr(lim, "\"outliers\": [5, 1005], \"outliers_more\": 8"))
    fail_msg("bounded: %s", lim);
  free(body), free(g.body), free(show), free(lim);
  lactl_clusters_free(&k);
  lactl_sv_free(d);
  for (uint32_t r = 0; r < TC_NP; r++) free_series(res[r]);
  free(res), free(ne);
}

/* The page's map of a large set (more elements than ids may place) fed
 * to lactl serve's feed thread, summed as its ranks are parsed
 * (lactl_sv_runs_install), is the map of the same set binned from its
 * traces, to the bit: the same bins, sum, count and range sums, on one
 * thread and on two; a rank with values that are not finite is binned
 * from its trace, a missing one counts no data. Another map of that set
 * (the max) is binned from the traces. */
static void test_page_runs(void **state) {
  (void)state;
  la_compact_result_t *a = series(LA_SYNTH_MESH, 4000000, "polyline:cv=0.05",
                                  0),
                      *b = series(LA_SYNTH_RAMPS, 3000000, "maxerr:eps=0.5",
                                  0),
                      *c = series(LA_SYNTH_STEPS, 3000000,
                                  "polyline:cv=0.01", 1),
                      *d = series(LA_SYNTH_NOISE, 777, "lossless", 0);
  const uint64_t ne[7] = {4000000, 3000000, 3000000, 2000000,
                          4000000, 777,     3000000};
  la_compact_result_t *res[7] = {a, b, c, NULL, a, d, b};
  size_t len;
  uint8_t *set = pack_set("big", 3, 7, ne, res, 0, 0, 0, &len);
  la_traceset_t *want = make_set("big", 3, 7, ne, res, 0, 0, 0);
  int sv[2];
  lactl_sv_feed_t *f = feed_start(sv);
  assert_int_equal(la_test_feed_set(sv[1], set, len, "big", 3, 1 << 20), 0);
  la_traceset_t *t = NULL;
  char why[300] = "";
  assert_int_equal(feed_wait(f, &t, why, sizeof why), 1);
  const uint64_t n = la_traceset_elements(t);
  assert_true(n > LACTL_SV_MAX_ID_ELEMENTS);
  uint64_t W, H;
  lactl_sv_map_shape(n, LACTL_SV_PAGE_BINS, &W, &H);
  for (unsigned threads = 1; threads <= 2; threads++) {
    lactl_bin_t ba, bb;
    lactl_sv_fill_t fa, fb;
    bin_on(t, W, H, LACTL_SV_PAGE_BINS, LACTL_BIN_MEAN, 0, 0, NULL, threads,
           &ba, &fa);
    assert_non_null(lactl_sv_runs_of(t, &ba, &fa)); /* the parse's sums */
    bin_on(want, W, H, LACTL_SV_PAGE_BINS, LACTL_BIN_MEAN, 0, 0, NULL,
           threads, &bb, &fb);
    assert_null(lactl_sv_runs_of(want, &bb, &fb)); /* from the traces */
    identical_bins(&ba, &bb);
    assert_memory_equal(&fa.sum, &fb.sum, sizeof fa.sum);
    assert_int_equal(fa.nfin, fb.nfin);
    assert_int_equal(fa.ranges, fb.ranges);
    assert_int_equal(fa.decoded, fb.decoded);
    assert_int_equal(fa.decoded, 3000000); /* rank 2, values not finite */
    lactl_bin_free(&ba), lactl_bin_free(&bb);
    /* the max: not what the parse summed, binned from the traces */
    bin_on(t, W, H, LACTL_SV_PAGE_BINS, LACTL_BIN_MAX, 0, 0, NULL, threads,
           &ba, &fa);
    assert_null(lactl_sv_runs_of(t, &ba, &fa));
    bin_on(want, W, H, LACTL_SV_PAGE_BINS, LACTL_BIN_MAX, 0, 0, NULL, threads,
           &bb, &fb);
    identical_bins(&ba, &bb);
    lactl_bin_free(&ba), lactl_bin_free(&bb);
  }
  la_traceset_free(t);
  close(sv[1]);
  lactl_sv_feed_free(f);
  la_traceset_free(want);
  free(set);
  free_series(a), free_series(b), free_series(c), free_series(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_coarse_marked), cmocka_unit_test(test_classes),
      cmocka_unit_test(test_index_mean), cmocka_unit_test(test_runs_in_order),
      cmocka_unit_test(test_nonfinite),
      cmocka_unit_test(test_threads),
      cmocka_unit_test(test_grid_mean), cmocka_unit_test(test_max_and_stop),
      cmocka_unit_test(test_feed_thread), cmocka_unit_test(test_page_runs),
      cmocka_unit_test(test_live)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
