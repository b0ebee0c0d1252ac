/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_index.h: the index la_trace_open() builds of an encoding
 * (la_trace_t), shared by the decoder (la_compact_decode.c) and the
 * queries answered from it in files of their own (la_compact_rangemax.c):
 * the records in order, the exceptions of the lines, the verbatim values,
 * and how to find a point's record. Internal to the engine.
 */
#ifndef LA_COMPACT_INDEX_H
#define LA_COMPACT_INDEX_H

#include <pthread.h>
#include <stdatomic.h>

#include "la_compact_internal.h"
#include "la_compact_pieces.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A double-double: hi + lo. */
typedef struct {
  double hi, lo;
} dd_t;

#define LA_VBLK 32 /* values per checkpoint of their running sum */

/* One record: a line (LA_REC_QLINE or LA_REC_RLINE) or a run of values
 * (LA_REC_VERBATIM, also quantized runs). */
typedef struct {
  uint64_t first, count;
  double base, d, last; /* line: la_line_value(base, d, off, j, count, last) */
  uint64_t off;         /* 1: continues a connected polyline */
  uint64_t x0, nx;      /* line: its exceptions; verbatim: its values */
  uint8_t kind, quant;
} rec_t;

/* A parsed encoding (la_compact.h's la_trace_t): its records, their
 * exceptions and verbatim values, with prefix sums for range sums (rprefix,
 * vblk, vrun and psc: built by the first range sum, under sums_lock, see
 * sums_ready() in la_compact_decode.c; xprefix at open, scaled then). */
struct la_trace {
  uint64_t n;      /* stored values */
  uint64_t spread; /* points per stored value (1, or k of a spread trace) */
  uint64_t cells;  /* points: n * spread, or a pieced trace's cells */
  la_pieces_t *pc; /* a pieced trace's geometry (NULL: not pieced) */
  double *pv;      /* its stored values, decoded at open (not check_only) */
  uint64_t *pend;  /* pend[j]: the most of la_piece_end over pieces 0..j */
  int mode, flags;
  double bound, quantum; /* quantum: 0 without LA_CENC_F_QUANTUM */
  rec_t *recs;
  dd_t *rprefix; /* finite sum of the records before k (nrec + 1) */
  size_t nrec, rcap;
  uint64_t *xpos; /* exceptions: positions, values, prefix of corrections */
  double *xval;
  dd_t *xprefix;
  size_t nx, xcap;
  double *vals; /* verbatim values (all values of a lossless trace) */
  dd_t *vblk;   /* finite sum of vals[0 .. k * LA_VBLK) (times psc) */
  dd_t vrun;    /* finite sum of vals[0 .. nv) (times psc) */
  size_t nv, vcap;
  uint64_t *nfpos; /* non-finite values in order, with their values */
  double *nfval;
  size_t nnf, nfcap;
  int check_only; /* la_trace_check_max: parse and check, keep nothing */
  la_cacc_t *acc; /* la_trace_check_totals: the values' totals (check_only) */
  struct la_slices *sl; /* la_trace_slice_sums: per-slice sums (check_only) */
  /* the prefix sums hold values times psc: 1, or 2^-64 when they would
   * leave the double range at 1 (values near DBL_MAX; rescale()) */
  double psc;
  atomic_int sums_built;     /* 1: rprefix, vblk, vrun, psc built */
  pthread_mutex_t sums_lock; /* held while they are built */
};

/* A pieced trace (la_compact_pieced_read.c): parses and checks the geometry
 * that follows the header (n stored values) into t->pc, LA_ELIMIT past
 * max_points cells; la_trace_pieces_values decodes t->pv after the body.
 * The queries below answer for cells [first, first + count), inside. */
int la_trace_pieces_parse(la_trace_t *t, la_creader_t *r, uint64_t n,
                          uint64_t max_points, char *why, size_t why_len);
void la_trace_pieces_decode(const la_trace_t *t, uint64_t first,
                            uint64_t count, double *out);
/* The sum of cells [first, first + count): la_pieces_range_sum. */
double la_trace_pieces_sum(const la_trace_t *t, uint64_t first,
                           uint64_t count);
/* The largest finite cell value (-INFINITY: none) and the finite cells. */
void la_trace_pieces_max(const la_trace_t *t, uint64_t first, uint64_t count,
                         double *max, uint64_t *nfinite);
/* The stored value holding cell i: 0 and *j, or -1 for a cell in no piece. */
int la_trace_pieces_which(const la_trace_t *t, uint64_t i, uint64_t *j);
/* Cells of pieces [j0, j1). */
uint64_t la_trace_pieces_cells(const la_trace_t *t, uint64_t j0, uint64_t j1);

/* First index k in sorted pos[lo..hi) with pos[k] >= v. */
static inline size_t la_lower_bound(const uint64_t *pos, size_t lo, size_t hi,
                                    uint64_t v) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pos[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Index of the record of t that holds stored value i, searched by halving
 * recs[lo..hi) (recs[lo].first <= i, and i < recs[hi].first when hi <
 * t->nrec). */
static inline size_t la_trace_find_rec_in(const la_trace_t *t, size_t lo,
                                          size_t hi, uint64_t i) {
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (t->recs[mid].first <= i)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Index of the record of t that holds stored value i (i < t->n). */
static inline size_t la_trace_find_rec(const la_trace_t *t, uint64_t i) {
  return la_trace_find_rec_in(t, 0, t->nrec, i);
}

#ifdef __cplusplus
}
#endif
#endif /* LA_COMPACT_INDEX_H */
