/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve_runs.c: an element map's layout (lactl_sv_grid,
 * lactl_sv_map_shape), the runs of its bins along a rank's elements
 * (lactl_sv_run_*: what lactl_serve_bin.c bins, one range sum each), and
 * the sums of the page's map's runs taken while a received set
 * is parsed (lactl_sv_runs_*, see lactl_serve.h).
 *
 * The client parses every rank of a set as it arrives; for a set of the
 * page's kind (by global index, more than LACTL_SV_MAX_ID_ELEMENTS
 * elements), a visitor of the parse (la__rank_visit_t) takes each rank's
 * run sums for the page's map (LACTL_SV_PAGE_BINS, the mean, the weights
 * a robust request gets) from the index the parse opened, on the parse's
 * threads, before that index is closed: the map's binning then adds
 * stored sums and opens no index again (the parse is most of a
 * publication's CPU). Each sum is la__trace_rank_range_sum's, the one the
 * binning takes from the trace, so the map is the same to the bit. A rank
 * with a run whose sum is not finite keeps none and is binned from its
 * trace, as before. The runs are one allocation per set, kept with it
 * (la__traceset_aux): about one per bin of the map and two per rank.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "lactl_serve.h"

int lactl_sv_grid(const la_traceset_t *t, uint64_t g[3]) {
  uint32_t np = la_traceset_nprocs(t);
  g[0] = g[1] = g[2] = 0;
  for (uint32_t r = 0; r < np; r++) {
    uint64_t gl[3];
    if (la_traceset_rank_grid(t, r, NULL, NULL, gl) != 0) return 0;
    for (int k = 0; k < 3; k++) g[k] = gl[k] > g[k] ? gl[k] : g[k];
  }
  return np > 0 && g[0] && g[1] && g[2];
}

void lactl_sv_map_shape(uint64_t n, uint32_t bins, uint64_t *W, uint64_t *H) {
  if (n <= (uint64_t)bins * bins) {
    /* a square of cells, each its own bin */
    *W = (uint64_t)ceil(sqrt((double)(n ? n : 1)));
    while (*W * *W < n) ++*W;
    *H = n ? (n + *W - 1) / *W : 1;
  } else {
    /* at most bins rows of W elements: each bin is one run of about
     * W / bins consecutive elements, one range sum per rank in it */
    *W = (n + bins - 1) / bins;
    *H = (n + *W - 1) / *W;
  }
}

void lactl_sv_run_xend(const lactl_bin_t *b, uint64_t *xend) {
  /* column bin j holds the cell columns x with x * bw / w = j (each at
   * least one: bw <= w), up to the first x with (j + 1) * w <= x * bw */
  for (uint32_t j = 0; j < b->bw; j++)
    xend[j] =
        (uint64_t)(((unsigned __int128)(j + 1) * b->w + b->bw - 1) / b->bw);
}

void lactl_sv_run_start(lactl_sv_run_it_t *it, const lactl_bin_t *b,
                        const uint64_t *xend, const uint64_t *dm,
                        const uint64_t *o, uint64_t off, uint64_t e0,
                        uint64_t e1) {
  memset(it, 0, sizeof *it);
  it->b = b, it->xend = xend, it->grid = dm != NULL;
  if (it->grid) {
    it->dm0 = dm[0], it->dm1 = dm[1], it->o1 = o[1];
    it->rowlen = dm[0], it->x0 = o[0];
    it->cx = e0 % dm[0];
    it->y = o[1] + e0 / dm[0] % dm[1];
  } else {
    it->rowlen = b->w;
    it->cx = (off + e0) % b->w;
    it->y = (off + e0) / b->w;
  }
  it->e = e0, it->e1 = e1;
}

int lactl_sv_run_next(lactl_sv_run_it_t *it, uint64_t *first, uint64_t *cnt,
                      uint64_t *bin) {
  const lactl_bin_t *b = it->b;
  while (!it->seg || it->y >= b->h || it->k >= it->xe) {
    if (it->seg) { /* that part of a row is done: the next */
      it->e += it->len, it->cx += it->len;
      if (it->cx == it->rowlen) {
        it->cx = 0;
        it->y = it->grid ? it->o1 + it->e / it->dm0 % it->dm1 : it->y + 1;
      }
    }
    if (it->e >= it->e1) return 0;
    it->len = it->rowlen - it->cx < it->e1 - it->e ? it->rowlen - it->cx
                                                   : it->e1 - it->e;
    it->xa = it->x0 + it->cx;
    it->xe = it->xa + it->len < b->w ? it->xa + it->len : b->w;
    it->ybase = it->y < b->h ? lactl_bin_index(b, 0, it->y) : 0;
    it->k = it->xa, it->seg = 1;
  }
  uint64_t bx = lactl_bin_index(b, it->k, 0);
  uint64_t kend = it->xend[bx] < it->xe ? it->xend[bx] : it->xe;
  *first = it->e + (it->k - it->xa);
  *cnt = kend - it->k;
  *bin = bx + it->ybase;
  it->k = kend;
  return 1;
}

#define LA__RUNS_MAGIC 0x6c617275u /* "laru" */

struct lactl_sv_runs {
  uint32_t magic;
  int robust;     /* the robust weights' sums (else the measured ones') */
  lactl_bin_t b;  /* the map's cells and bins (no arrays) */
  uint64_t *xend; /* b.bw */
  uint32_t np;
  size_t *at;      /* np + 1: rank r's room is [at[r], at[r + 1]) */
  size_t *n;       /* per rank: its runs (valid where ok) */
  uint8_t *ok;     /* per rank: its sums taken */
  uint64_t *first; /* per run: its first element (of its rank's) */
  double *sum;     /* per run: its range sum */
  /* one allocation: the struct, then the arrays */
};

/* The most runs n elements can have in rows of w cells with column bins
 * of at least minw cells: a run ends at a bin's column end, a row's end
 * or the rank's. */
static size_t la__runs_bound(uint64_t n, uint64_t w, uint64_t minw) {
  return (size_t)(n / minw + 2 * (n / w) + 6);
}

static void *la__begin(void *ctx, const la_traceset_t *t) {
  (void)ctx;
  const uint64_t n = la_traceset_elements(t);
  const uint32_t np = la_traceset_nprocs(t);
  uint64_t g[3], W, H;
  if (n <= LACTL_SV_MAX_ID_ELEMENTS || np == 0 || lactl_sv_grid(t, g))
    return NULL; /* ids may place it, or a grid's slice: binned as asked */
  lactl_bin_t b;
  lactl_sv_map_shape(n, LACTL_SV_PAGE_BINS, &W, &H);
  if (lactl_bin_dims(&b, W, H, LACTL_SV_PAGE_BINS, LACTL_SV_PAGE_BINS,
                     LACTL_BIN_MEAN) != 0)
    return NULL;
  const uint64_t minw = b.w / b.bw;
  size_t runs = 0;
  uint32_t present = 0, rob = 0;
  for (uint32_t r = 0; r < np; r++) {
    const La__CompactTrace *ct = la__traceset_compact(t, r);
    if (!ct) continue;
    present++, rob += ct->robust_stats != NULL;
    runs += la__runs_bound(la_traceset_rank_elements(t, r), b.w, minw);
  }
  /* the struct, xend, at, n, first, sum (8-byte items), then ok */
  size_t items = b.bw + 2 * ((size_t)np + 1) + 2 * runs;
  size_t head = (sizeof(lactl_sv_runs_t) + 7) / 8 * 8;
  char *m = malloc(head + items * 8 + np);
  if (!m) return NULL; /* binned from the traces */
  lactl_sv_runs_t *p = (lactl_sv_runs_t *)m;
  p->magic = LA__RUNS_MAGIC;
  /* as la_traceset_set_weights(LA_WEIGHTS_ROBUST) chooses */
  p->robust = present > 0 && rob == present;
  p->b = b;
  p->np = np;
  p->xend = (uint64_t *)(m + head);
  p->at = (size_t *)(p->xend + b.bw);
  p->n = p->at + np + 1;
  p->first = (uint64_t *)(p->n + np + 1);
  p->sum = (double *)(p->first + runs);
  p->ok = (uint8_t *)(p->sum + runs);
  memset(p->ok, 0, np);
  lactl_sv_run_xend(&p->b, p->xend);
  size_t at = 0;
  for (uint32_t r = 0; r < np; r++) {
    p->at[r] = at, p->n[r] = 0;
    if (la__traceset_compact(t, r))
      at += la__runs_bound(la_traceset_rank_elements(t, r), b.w, minw);
  }
  p->at[np] = at;
  return p;
}

/* Rank r's run sums from its index (its weights' trace), on a parse
 * thread: its own slots only. */
static void la__rank(void *state, const la_traceset_t *t, uint32_t r,
                     const la_trace_t *tr, const la_trace_t *rob) {
  lactl_sv_runs_t *p = state;
  const la_trace_t *w = p->robust ? rob : tr;
  const uint64_t ne = la_traceset_rank_elements(t, r);
  if (!w) return; /* binned from the trace */
  lactl_sv_run_it_t it;
  la_trace_cursor_t cur = {0, 0};
  uint64_t first, cnt, bin;
  size_t k = p->at[r];
  lactl_sv_run_start(&it, &p->b, p->xend, NULL, NULL, t->vtx[r], 0, ne);
  while (lactl_sv_run_next(&it, &first, &cnt, &bin)) {
    double sm;
    assert(k < p->at[r + 1]); /* la__runs_bound */
    if (k == p->at[r + 1] ||
        la__trace_rank_range_sum(w, ne, &cur, first, cnt, &sm) != 0 ||
        !isfinite(sm))
      return; /* not finite: the binning decodes the rank */
    p->first[k] = first, p->sum[k++] = sm;
  }
  p->n[r] = k - p->at[r];
  p->ok[r] = 1;
}

static const la__rank_visit_t la__visit = {
    .begin = la__begin, .rank = la__rank, .free = free, .ctx = NULL};

void lactl_sv_runs_install(la_client_t *c) {
  la__client_set_visit(c, &la__visit);
}

const lactl_sv_runs_t *lactl_sv_runs_of(const la_traceset_t *t,
                                        const lactl_bin_t *b,
                                        const lactl_sv_fill_t *f) {
  const lactl_sv_runs_t *p = la__traceset_aux(t);
  if (!p || p->magic != LA__RUNS_MAGIC || f->grid || f->pos || f->decode ||
      b->mode != LACTL_BIN_MEAN || b->w != p->b.w || b->h != p->b.h ||
      b->bw != p->b.bw || b->bh != p->b.bh ||
      (la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST) != p->robust)
    return NULL;
  return p;
}

int lactl_sv_runs_rank(const lactl_sv_runs_t *p, uint32_t r, uint64_t e0,
                       size_t *at) {
  if (r >= p->np || !p->ok[r]) return 0;
  size_t lo = p->at[r], hi = lo + p->n[r]; /* the first run from e0 on */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (p->first[mid] < e0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *at = lo;
  return 1;
}

double lactl_sv_runs_sum(const lactl_sv_runs_t *p, size_t *at, uint64_t first) {
  assert(p->first[*at] == first); /* the same runs, in the same order */
  (void)first;
  return p->sum[(*at)++];
}
