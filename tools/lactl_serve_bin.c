/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve_bin.c: how `lactl serve` bins a Trace-Set's elements into
 * its element map (lactl_sv_fill, lactl_serve.h).
 *
 * The map's bins are rectangles of cells, and the cells of one row of a
 * bin are a contiguous run of one rank's elements (rows of W elements in
 * global order; a grid slice's rows are runs of dm[0] elements of a
 * k-slab rank). For the mean, such a run is one range sum of the compact
 * encoding (la_traceset_range_sum's, to the bit: closed form over the
 * segments, not O(elements)), its records found from the previous run's
 * (la__trace_rank_range_sum's cursor: a rank's runs come in order, a
 * few records apart), not searched for in the whole index; for the max, one range sum (the map's
 * mean of the finite values) and one range max (la_traceset_range_max:
 * a line's largest value is at an end of its stretch, exceptions and
 * verbatim values read from the parsed trace; exactly the decoded
 * values' largest), so nothing is decoded. Each rank's index is opened for
 * its runs and closed after them (la__traceset_rank_open), on the thread
 * that bins them, unless the set keeps one already: a map of every rank
 * keeps no index (0.7 GB at 10^4 ranks x 10^6 elements) and opens them in
 * parallel. The page's map takes no index at all: it adds the run sums
 * the set's parse took (lactl_serve_runs.c), the same sums. A range sum
 * that is not finite (the run holds a NaN or an infinity, or its sum
 * overflows) makes the rank decoded and that run added value by value,
 * so that the bin keeps only its finite values as before. Elements placed by their
 * ids decode every element.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "la_client_internal.h"
#include "lactl_bin.h"
#include "lactl_serve.h"

/* Whether the caller asked to stop. */
static int la__stopped(const lactl_sv_fill_t *f) {
  return f->stop && atomic_load_explicit(f->stop, memory_order_relaxed);
}

/* Rank r's values into w (NaN: missing), its index opened for that
 * alone unless t keeps it (la__traceset_rank_open); *have 0 when missing.
 * 0 or LA_ENOMEM. */
static int la__rank_values(la_traceset_t *t, uint32_t r, uint64_t ne,
                           double *w, int *have) {
  const la_trace_t *tr;
  la_trace_t *own;
  int rc = la__traceset_rank_open(t, r, &tr, &own);
  *have = !rc && tr;
  if (*have) rc = la_trace_decode(tr, 0, ne, w) ? LA_EIO : 0;
  la_trace_close(own);
  return rc;
}

/* Bins every element of t at its place in the application's id order
 * (f->pos, by global element), in rows of b->w, decoding. */
static int la__fill_pos(la_traceset_t *t, lactl_bin_t *b, lactl_sv_fill_t *f,
                        double *w) {
  const uint32_t np = la_traceset_nprocs(t);
  uint64_t off = 0;
  for (uint32_t r = 0; r < np; r++) {
    if (la__stopped(f)) return LA_ESTATE;
    uint64_t ne = la_traceset_rank_elements(t, r);
    int have;
    int rc = la__rank_values(t, r, ne, w, &have);
    if (rc == LA_ENOMEM) return rc;
    have = have && rc == 0;
    if (have) f->decoded += ne;
    for (uint64_t e = 0; e < ne; e++) {
      double v = have ? w[e] : NAN;
      uint64_t p = f->pos[off + e];
      lactl_bin_add(b, p % b->w, p / b->w, v);
      if (isfinite(v)) f->sum += v, f->nfin++;
    }
    off += ne;
  }
  return 0;
}

/* Most threads one fill runs on. */
#define LA__FILL_MAX_THREADS 8u

/* One thread's share of a fill: the global elements [g0, g1) (whole bin
 * rows: no bin is another share's), its own figures, and its buffer of a
 * rank's decoded values (allocated at the first decoding). */
typedef struct la__share {
  la_traceset_t *t;
  lactl_bin_t *b;
  const lactl_sv_fill_t *f;
  const uint64_t *xend; /* past each column bin's last cell column */
  const lactl_sv_runs_t *runs; /* the parse's run sums, or NULL */
  atomic_uchar *counted; /* per rank: its decoding counted (once) */
  uint64_t maxne;
  uint64_t g0, g1;
  double *w;
  double sum;
  uint64_t nfin, ranges, decoded;
  int rc;
} la__share_t;

/* Rank r's values (of its trace tr) into s->w; its elements counted
 * decoded once per fill. 0 or LA_EIO / LA_ENOMEM. */
static int la__decode(la__share_t *s, const la_trace_t *tr, uint32_t r,
                      uint64_t ne) {
  if (!s->w && !(s->w = malloc(s->maxne * sizeof *s->w))) return LA_ENOMEM;
  if (la_trace_decode(tr, 0, ne, s->w) != 0) return LA_EIO;
  if (!atomic_exchange(&s->counted[r], 1)) s->decoded += ne;
  return 0;
}

/* Bins rank r's elements [e0, e1) (of ne, global offset off; a grid's:
 * the rank's dims dm and origin o) from its trace tr, or the run sums p
 * (from run at on) when not NULL; tr and p NULL: missing. 0 or an error
 * of la__decode. */
static int la__fill_trace(la__share_t *s, const la_trace_t *tr,
                          const lactl_sv_runs_t *p, size_t at, uint32_t r,
                          uint64_t off, uint64_t ne, uint64_t e0, uint64_t e1,
                          const uint64_t *dm, const uint64_t *o) {
  lactl_bin_t *b = s->b;
  const lactl_sv_fill_t *f = s->f;
  /* range sums serve the mean, range sums and maxima the max */
  const int sums = !f->decode && b->mode != LACTL_BIN_EXTREME;
  const int max = b->mode == LACTL_BIN_MAX;
  int have = tr || p;
  int decoded = 0; /* s->w holds rank r's values */
  la_trace_cursor_t cur = {0, 0}; /* the runs' range sums go up the rank */
  if (tr && !sums) {
    int rc = la__decode(s, tr, r, ne);
    if (rc == LA_ENOMEM) return rc;
    have = decoded = rc == 0;
  }
  lactl_sv_run_it_t it;
  uint64_t first, cnt, i;
  lactl_sv_run_start(&it, b, s->xend, f->grid ? dm : NULL, o, off, e0, e1);
  while (lactl_sv_run_next(&it, &first, &cnt, &i)) {
    double sm = NAN, m = NAN;
    uint64_t nm = 0;
    if (!have) {
      b->none[i] += cnt;
    } else if (p || (!decoded &&
                     la__trace_rank_range_sum(tr, ne, &cur, first, cnt,
                                              &sm) == 0 &&
                     isfinite(sm) &&
                     (!max || (la_trace_range_max(tr, first, cnt, &m, &nm) ==
                                   0 &&
                               nm == cnt)))) {
      /* a finite sum: every value of the run is finite (taken while the
       * set was parsed, p: the mean's) */
      if (p) sm = lactl_sv_runs_sum(p, &at, first);
      if (max)
        lactl_bin_add_max(b, i, m, cnt);
      else
        lactl_bin_add_sum(b, i, sm, cnt);
      s->sum += sm, s->nfin += cnt, s->ranges++;
    } else {
      if (!decoded) { /* a value that is not finite: decode the rank */
        int rc = la__decode(s, tr, r, ne);
        if (rc) return rc;
        decoded = 1;
      }
      s->sum += lactl_bin_add_run(b, i, s->w + first, cnt, &s->nfin);
    }
  }
  return 0;
}

/* Bins rank r's elements [e0, e1) (of ne, global offset off; a grid's:
 * those of the slice): from the run sums the set's parse took when they
 * serve (s->runs), else from its trace, its index opened for these runs
 * alone unless the set keeps it (la__traceset_rank_open). 0 or an error
 * of la__decode. */
static int la__fill_rank(la__share_t *s, uint32_t r, uint64_t off,
                         uint64_t ne, uint64_t e0, uint64_t e1) {
  uint64_t dm[3] = {0}, o[3] = {0};
  if (s->f->grid) {
    const uint64_t at = s->f->g[2] / 2;
    la_traceset_rank_grid(s->t, r, dm, o, NULL);
    uint64_t plane = dm[0] * dm[1];
    if (at < o[2] || at >= o[2] + dm[2] || plane == 0) return 0;
    e0 = (at - o[2]) * plane;
    e1 = e0 + plane < ne ? e0 + plane : ne;
  }
  size_t at = 0;
  if (!la_traceset_has_rank(s->t, r))
    return la__fill_trace(s, NULL, NULL, 0, r, off, ne, e0, e1, dm, o);
  if (s->runs && lactl_sv_runs_rank(s->runs, r, e0, &at))
    return la__fill_trace(s, NULL, s->runs, at, r, off, ne, e0, e1, dm, o);
  const la_trace_t *tr;
  la_trace_t *own;
  int rc = la__traceset_rank_open(s->t, r, &tr, &own);
  if (!rc) rc = la__fill_trace(s, tr, NULL, 0, r, off, ne, e0, e1, dm, o);
  la_trace_close(own);
  return rc;
}

/* A share's work: every rank, or (not a grid) the part of each rank in
 * [g0, g1). */
static void *la__fill_share(void *arg) {
  la__share_t *s = arg;
  const uint32_t np = la_traceset_nprocs(s->t);
  uint64_t off = 0;
  for (uint32_t r = 0; r < np && !s->rc && off < s->g1; r++) {
    uint64_t ne = la_traceset_rank_elements(s->t, r);
    uint64_t e0 = s->g0 > off ? s->g0 - off : 0;
    uint64_t e1 = s->g1 - off < ne ? s->g1 - off : ne;
    if (s->f->grid || e0 < e1) {
      if (la__stopped(s->f)) {
        s->rc = LA_ESTATE;
        break;
      }
      s->rc = la__fill_rank(s, r, off, ne, e0, e1);
    }
    off += ne;
  }
  return NULL;
}

/* The first cell row of bin row j (of b's bh). */
static uint64_t la__row_of_bin_row(const lactl_bin_t *b, uint64_t j) {
  return (uint64_t)(((unsigned __int128)j * b->h + b->bh - 1) / b->bh);
}

int lactl_sv_fill(la_traceset_t *t, lactl_bin_t *b, lactl_sv_fill_t *f) {
  const uint32_t np = la_traceset_nprocs(t);
  f->sum = 0, f->nfin = 0, f->ranges = 0, f->decoded = 0;
  uint64_t maxne = 1, n = la_traceset_elements(t);
  for (uint32_t r = 0; r < np; r++)
    if (la_traceset_rank_elements(t, r) > maxne)
      maxne = la_traceset_rank_elements(t, r);
  if (f->pos && !f->grid) {
    double *w = malloc(maxne * sizeof *w);
    if (!w) return LA_ENOMEM;
    int rc = la__fill_pos(t, b, f, w);
    free(w);
    return rc;
  }
  /* shares of whole bin rows; a grid's slice is binned on one thread */
  uint32_t nt = f->threads > 1 && !f->grid ? f->threads : 1;
  if (nt > LA__FILL_MAX_THREADS) nt = LA__FILL_MAX_THREADS;
  if (nt > b->bh) nt = b->bh;
  uint64_t *xend = malloc(b->bw * sizeof *xend); /* past a column bin */
  atomic_uchar *counted = calloc(np ? np : 1, sizeof *counted);
  la__share_t sh[LA__FILL_MAX_THREADS];
  if (!xend || !counted) {
    free(xend), free(counted);
    return LA_ENOMEM;
  }
  lactl_sv_run_xend(b, xend);
  const lactl_sv_runs_t *runs = lactl_sv_runs_of(t, b, f);
  for (uint32_t k = 0; k < nt; k++) {
    uint64_t y0 = la__row_of_bin_row(b, (uint64_t)k * b->bh / nt);
    uint64_t y1 = la__row_of_bin_row(b, (uint64_t)(k + 1) * b->bh / nt);
    sh[k] = (la__share_t){.t = t, .b = b, .f = f, .xend = xend, .runs = runs,
                          .counted = counted, .maxne = maxne,
                          .g0 = k ? y0 * b->w : 0,
                          .g1 = k + 1 < nt ? y1 * b->w : n};
  }
  pthread_t th[LA__FILL_MAX_THREADS];
  int started[LA__FILL_MAX_THREADS] = {0};
  for (uint32_t k = 1; k < nt; k++)
    started[k] = pthread_create(&th[k], NULL, la__fill_share, &sh[k]) == 0;
  la__fill_share(&sh[0]);
  int rc = 0;
  for (uint32_t k = 0; k < nt; k++) {
    if (k && started[k])
      pthread_join(th[k], NULL);
    else if (k) /* not started: its share here */
      la__fill_share(&sh[k]);
    if (!rc) rc = sh[k].rc;
    f->sum += sh[k].sum, f->nfin += sh[k].nfin;
    f->ranges += sh[k].ranges, f->decoded += sh[k].decoded;
    free(sh[k].w);
  }
  free(xend), free(counted);
  return rc;
}
