/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_rangemax.c: the largest value of a trace's reconstruction
 * over a range of points (la_trace_range_max), from the index
 * la_trace_open() built, without decoding the range.
 *
 * A line record's points but its last are base + (j + off) * d
 * (la_line_value): the index times d, then base added, each rounded, and
 * rounding is monotone, so they rise (or fall) with j and the largest of
 * a stretch of them is at one of its two ends, bit for bit what the
 * decoder gives there. Its last point is stored on its own, exceptions
 * replace the line's value at their points (the ends skip them), and
 * verbatim values (verbatim and quantized runs, lossless traces) are read
 * from the index as the decoder copies them. A spread trace's cells are
 * their row's value / k, and dividing by k keeps the order. So the
 * result equals the largest decoded value exactly, in O(records +
 * exceptions + verbatim values in the range + log records).
 */
#include <math.h>

#include "la_compact_index.h"

/* The largest finite value seen and how many were finite. */
typedef struct {
  double max; /* -Inf before the first */
  uint64_t nfin;
} la__mx_t;

static inline void la__fold(la__mx_t *m, double v) {
  if (v - v == 0) { /* finite */
    m->max = v > m->max ? v : m->max;
    m->nfin++;
  }
}

/* n values of a run. */
static void la__fold_vals(la__mx_t *m, const double *v, uint64_t n) {
  double mx = m->max;
  uint64_t nf = 0;
  for (uint64_t k = 0; k < n; k++) {
    double x = v[k];
    int fin = x - x == 0;
    nf += (uint64_t)fin;
    mx = fin && x > mx ? x : mx;
  }
  m->max = mx;
  m->nfin += nf;
}

/* Points j0..j1-1 (j0 < j1 <= count) of line record q. */
static void la__line(const la_trace_t *t, const rec_t *q, uint64_t j0,
                     uint64_t j1, la__mx_t *m) {
  const uint64_t *xp = t->xpos;
  size_t xa = la_lower_bound(xp, q->x0, q->x0 + q->nx, q->first + j0);
  size_t xb = la_lower_bound(xp, xa, q->x0 + q->nx, q->first + j1);
  for (size_t x = xa; x < xb; x++) la__fold(m, t->xval[x]);
  /* the line's points before its last: [j0, lin), exceptions xa..xl */
  uint64_t lin = j1 < q->count ? j1 : q->count - 1;
  size_t xl = xb;
  if (lin < j1) { /* the last point is in the range */
    if (xb > xa && xp[xb - 1] == q->first + q->count - 1)
      xl--; /* an exception there */
    else
      la__fold(m, q->last);
  }
  if (lin <= j0) return;
  /* the first and the last of them that is no exception */
  uint64_t lo = j0, hi = lin - 1;
  for (size_t x = xa; lo < lin && x < xl && xp[x] == q->first + lo; x++) lo++;
  if (lo == lin) return; /* every one an exception */
  for (size_t x = xl; x > xa && xp[x - 1] == q->first + hi; x--) hi--;
  double a = la_line_value(q->base, q->d, q->off, lo, q->count, q->last);
  double b = la_line_value(q->base, q->d, q->off, hi, q->count, q->last);
  if (a - a == 0 && b - b == 0) { /* so is every value between */
    double v = a > b ? a : b;
    m->max = v > m->max ? v : m->max;
    m->nfin += (lin - j0) - (xl - xa);
    return;
  }
  /* an end beyond the double range (a crafted line): value by value */
  for (size_t x = xa; lo <= hi; lo++) {
    while (x < xl && xp[x] < q->first + lo) x++;
    if (x < xl && xp[x] == q->first + lo) continue;
    la__fold(m, la_line_value(q->base, q->d, q->off, lo, q->count, q->last));
  }
}

/* Stored values [first, first + count) (count > 0, inside the trace). */
static void la__max_stored(const la_trace_t *t, uint64_t first,
                           uint64_t count, la__mx_t *m) {
  uint64_t end = first + count, i = first;
  for (size_t k = la_trace_find_rec(t, first); i < end; k++) {
    const rec_t *q = &t->recs[k];
    uint64_t j0 = i - q->first, j1 = end - q->first;
    if (j1 > q->count) j1 = q->count;
    if (q->kind == LA_REC_VERBATIM)
      la__fold_vals(m, t->vals + q->x0 + j0, j1 - j0);
    else
      la__line(t, q, j0, j1, m);
    i = q->first + j1;
  }
}

/* Row r of a spread trace, cells of it in the range: its stored value's
 * finiteness counts that many cells. */
static void la__row(const la_trace_t *t, uint64_t r, uint64_t cells,
                    la__mx_t *m) {
  la__mx_t one = {-INFINITY, 0};
  la__max_stored(t, r, 1, &one);
  if (one.nfin) {
    m->max = one.max > m->max ? one.max : m->max;
    m->nfin += cells;
  }
}

int la_trace_range_max(const la_trace_t *t, uint64_t first, uint64_t count,
                       double *max, uint64_t *nfinite) {
  if (t == NULL || max == NULL || first > la_trace_count(t) ||
      count > la_trace_count(t) - first)
    return LA_ERANGE;
  la__mx_t m = {-INFINITY, 0};
  const uint64_t k = t->spread;
  if (t->pc) { /* a cell is its piece's share (0 in no piece) */
    la_trace_pieces_max(t, first, count, &m.max, &m.nfin);
    *max = m.nfin == 0 ? NAN : m.max;
    if (nfinite) *nfinite = m.nfin;
    return 0;
  }
  if (count > 0 && k == 1) {
    la__max_stored(t, first, count, &m);
  } else if (count > 0) { /* rows of k cells: a partial one at either end */
    uint64_t r0 = first / k, r1 = (first + count - 1) / k;
    uint64_t head = (r0 + 1) * k - first;
    if (r0 == r1) {
      la__row(t, r0, count, &m);
    } else {
      la__row(t, r0, head, &m);
      if (r1 > r0 + 1) {
        la__mx_t mid = {-INFINITY, 0};
        la__max_stored(t, r0 + 1, r1 - r0 - 1, &mid);
        m.max = mid.max > m.max ? mid.max : m.max;
        m.nfin += mid.nfin * k;
      }
      la__row(t, r1, first + count - r1 * k, &m);
    }
  }
  /* a cell is its row's value / k: the order is kept, and so the max */
  *max = m.nfin == 0 ? NAN : k == 1 ? m.max : m.max / (double)k;
  if (nfinite) *nfinite = m.nfin;
  return 0;
}
