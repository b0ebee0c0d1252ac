/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_decode.c: parses a compact encoding once into an index of its
 * records (la_trace_t) and answers queries: the count, the reconstruction of
 * any range, the sum over any range in closed form, the list of segments;
 * without an index, the sums of equal slices in the checking pass
 * (la_trace_slice_sums); the encoding of its values times a scale, record
 * for record (la_trace_scaled).
 *
 * la_trace_open() validates everything it reads (header, every record's
 * fields and ranges, exact length, CRC-32) through a bounds-checked reader,
 * and allocates in proportion to the input size: garbage is refused, never
 * read out of bounds. The index's arrays start with room for what a body of
 * its size usually holds (about 11 bytes of index per byte), so that they
 * are not copied as they grow, and are cut to what they hold once parsed.
 * Range sums use double-double prefix sums over records, exceptions and
 * verbatim values, built by the first range sum (sums_ready(): a reader of
 * values never pays for them), so a query costs O(log records + non-finite
 * values in the range); non-finite values are kept out of the prefixes and
 * added at the end, as IEEE arithmetic would. It does not segment: a scaled
 * trace goes through the encoder (la_cenc) with the records it has.
 */
#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_index.h"
#include "la_compact_internal.h"
#include "la_errors.h"

static dd_t dd_add(dd_t a, double b) {
  double s = a.hi + b, bb = s - a.hi;
  double e = (a.hi - (s - bb)) + (b - bb);
  return (dd_t){s, a.lo + e};
}
/* a + x * y, the product exact (Dekker's two-product; |x|, |y| < 2^990, so
 * the splits do not overflow). */
static dd_t dd_add_prod(dd_t a, double x, double y) {
  double p = x * y, cx = 0x1p27 + 1, ax = cx * x, ay = cx * y;
  double xh = ax - (ax - x), xl = x - xh, yh = ay - (ay - y), yl = y - yh;
  double e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl;
  return dd_add(dd_add(a, p), e);
}
static double dd_diff(dd_t a, dd_t b) { /* a - b */
  dd_t r = dd_add(a, -b.hi);
  return r.hi + (r.lo - b.lo);
}

/* la_trace_slice_sums(): sums of nb equal slices of the points, taken in
 * the check-only pass (a lossy trace of one cell per value; ok stays 0
 * for the others, which take the indexed path) from the pass's running
 * sum of the values (la_cacc_t, which the check keeps anyway): at[k] is
 * that sum over the points before bnd[k], and slice j's sum is at[j + 1]
 * - at[j]. A record wholly inside a slice costs one comparison; only a
 * record across a boundary takes its part before it (a line's in closed
 * form, its exceptions before the boundary added; a run's values). */
typedef struct la_slices {
  unsigned nb;       /* slices */
  unsigned k;        /* the next boundary to reach: bnd[k] > the points read */
  unsigned plo, phi; /* at[plo..phi): boundaries inside the line being read,
                      * waiting for its exceptions before them */
  int ok;            /* the pass could take the sums */
  uint64_t bnd[LA_SLICES_MAX + 2]; /* slice j: points [bnd[j], bnd[j+1]);
                                    * bnd[nb + 1]: a sentinel */
  dd_t at[LA_SLICES_MAX + 1];
} la_slices_t;

/* The boundaries at or before point pos, reached with the sum so far. */
static inline void sl_reach(la_slices_t *sl, const la_cacc_t *acc,
                            uint64_t pos) {
  while (sl->bnd[sl->k] <= pos) sl->at[sl->k++] = (dd_t){acc->hi, acc->lo};
}

/* Gives the arrays p[0..np) (of the given element sizes) c + 1 slots
 * each; *cap becomes c. 0, or LA_ENOMEM with *cap as it was (each array
 * valid, with at least min(c, *cap) + 1 slots). */
static int resize(void **p[], const size_t size[], int np, size_t *cap,
                  size_t c) {
  for (int i = 0; i < np; i++) {
    void *q = realloc(*p[i], (c + 1) * size[i]);
    if (q == NULL) return LA_ENOMEM;
    *p[i] = q;
  }
  *cap = c;
  return 0;
}

/* Cuts the arrays p[0..np) to used elements (+ 1 slot); none used: freed
 * (NULL, as when never grown). A cut that fails keeps the room. */
static void cut(void **p[], const size_t size[], int np, size_t *cap,
                size_t used) {
  if (used == 0) {
    for (int i = 0; i < np; i++) free(*p[i]), *p[i] = NULL;
    *cap = 0;
  } else if (used < *cap) {
    (void)resize(p, size, np, cap, used);
  }
}

/* Makes room for need elements in the arrays p[0..np) of the given element
 * sizes, which share *cap (each array gets cap + 1 slots, for prefixes).
 * Doubles; returns 0 or LA_ENOMEM (the arrays stay valid). */
static int grow(void **p[], const size_t size[], int np, size_t *cap,
                size_t need) {
  size_t c = *cap ? *cap : 16;

  if (need <= *cap) return 0;
  while (c < need) c *= 2;
  return resize(p, size, np, cap, c);
}

void la_trace_close(la_trace_t *t) {
  if (t && t->pc) {
    la_pieces_free(t->pc);
    free(t->pc);
    free(t->pv);
    free(t->pend);
  }
  if (t == NULL) return;
  free(t->recs);
  free(t->rprefix);
  free(t->xpos);
  free(t->xval);
  free(t->xprefix);
  free(t->vals);
  free(t->vblk);
  free(t->nfpos);
  free(t->nfval);
  pthread_mutex_destroy(&t->sums_lock);
  free(t);
}

static int add_nonfinite(la_trace_t *t, uint64_t pos, double v) {
  void **p[] = {(void **)&t->nfpos, (void **)&t->nfval};
  const size_t sz[] = {sizeof(uint64_t), sizeof(double)};

  if (t->check_only || isfinite(v)) return 0;
  if (grow(p, sz, 2, &t->nfcap, t->nnf + 1)) return LA_ENOMEM;
  t->nfpos[t->nnf] = pos;
  t->nfval[t->nnf++] = v;
  return 0;
}

/* Room for `more` values more (one grow per record, not per value): the
 * values, and a checkpoint of their running sum every LA_VBLK of them
 * (range sums add the values between checkpoints: a sixteenth of the
 * memory a sum per value took, written once per block). */
static int reserve_values(la_trace_t *t, uint64_t more) {
  size_t c = t->vcap ? t->vcap : 16;

  if (t->check_only || t->nv + more <= t->vcap) return 0;
  while (c < t->nv + more) c *= 2;
  double *v = realloc(t->vals, c * sizeof *v);
  if (!v) return LA_ENOMEM;
  t->vals = v;
  dd_t *b = realloc(t->vblk, (c / LA_VBLK + 2) * sizeof *b);
  if (!b) return LA_ENOMEM;
  t->vblk = b;
  if (t->vcap == 0) t->vblk[0] = t->vrun = (dd_t){0, 0};
  t->vcap = c;
  return 0;
}

/* The running sum over vals[from .. nv), with a checkpoint at every
 * LA_VBLK values (build_sums(), rescale(): from 0); kept in registers
 * (through t it would be stored and loaded at every value: vals may alias
 * it for the compiler). */
static void sum_from(la_trace_t *t, size_t from) {
  const double *vals = t->vals, psc = t->psc;
  dd_t *blk = t->vblk, run = t->vrun;
  const size_t end = t->nv;
  for (size_t k = from; k < end; k++) {
    double v = vals[k];
    run = dd_add(run, isfinite(v) ? v * psc : 0);
    if ((k + 1) % LA_VBLK == 0) blk[(k + 1) / LA_VBLK] = run;
  }
  t->vrun = run;
}

/* A value (room reserved by reserve_values); summed by sum_from() when a
 * range sum first needs it (build_sums()). */
static inline int add_value(la_trace_t *t, uint64_t pos, double v) {
  if (t->check_only) {
    if (t->sl) sl_reach(t->sl, t->acc, pos);
    if (t->acc) la_cacc_add(t->acc, v, 1);
    return 0;
  }
  t->vals[t->nv++] = v;
  return isfinite(v) ? 0 : add_nonfinite(t, pos, v);
}

/* count values (kref + d[j]) * q of a coded quantized run, all finite (the
 * caller checked the table's extremes), stored. */
static void add_qvalues(la_trace_t *t, int64_t kref, const int64_t *d,
                        uint64_t count, double q) {
  double *vals = t->vals;
  size_t nv = t->nv;
  for (uint64_t j = 0; j < count; j++) vals[nv + j] = (double)(kref + d[j]) * q;
  t->nv = nv + count;
}

/* The exact sum of a coded quantized run's count integers d[j], every
 * one within the table's [smin, smax]: as doubles in four lanes while
 * count * max|d| < 2^53 (exact integers), else in 128 bits. */
static __int128 qsum(const int64_t *d, uint64_t count, int64_t smin,
                     int64_t smax) {
  int64_t dm = smin < 0 ? -smin : smin;
  if (smax > dm) dm = smax;
  if ((double)dm * (double)count < 0x1p53) {
    double l0 = 0, l1 = 0, l2 = 0, l3 = 0;
    uint64_t j = 0;
    for (; j + 4 <= count; j += 4) {
      l0 += (double)d[j];
      l1 += (double)d[j + 1];
      l2 += (double)d[j + 2];
      l3 += (double)d[j + 3];
    }
    for (; j < count; j++) l0 += (double)d[j];
    return (int64_t)((l0 + l1) + (l2 + l3)); /* exact integers */
  }
  __int128 ks = 0;
  for (uint64_t j = 0; j < count; j++) ks += d[j];
  return ks;
}

/* The totals (la_cacc_add) of a coded quantized run's count values
 * (kref + d[j]) * q, all finite and stored exactly, every d[j] within the
 * table's [smin, smax], dsum the d[j]'s exact sum: the integers' sum
 * times q added as exact parts. It differs from adding the rounded values
 * one by one by their roundings (half an ulp each), far inside what the
 * claim check allows for the lossy modes runs occur in. The table's
 * extremes are values the trace stores (an encoder writes no value it
 * does not use). */
static void acc_qvalues(la_cacc_t *acc, int64_t kref, __int128 dsum,
                        uint64_t count, double q, int64_t smin, int64_t smax) {
  __int128 ks = (__int128)kref * (__int128)count + dsum;
  double kh = (double)ks, kl = (double)(ks - (__int128)kh), p = kh * q;
  la_cacc_sum(acc, p);
  la_cacc_sum(acc, fma(kh, q, -p)); /* the product's rounding, exactly */
  la_cacc_sum(acc, kl * q);
  double lo = (double)(kref + smin) * q, hi = (double)(kref + smax) * q;
  acc->abs += (double)count * fmax(fabs(lo), fabs(hi)) * (1 + 0x1p-50);
  la_cacc_exact(acc, lo);
  la_cacc_exact(acc, hi);
}

/* Finite sum of vals[a .. b) (times psc): the checkpoints between, the
 * values before the first and after the last. */
static dd_t vsum(const la_trace_t *t, size_t a, size_t b) {
  dd_t s = {0, 0};
  size_t ba = (a + LA_VBLK - 1) / LA_VBLK, bb = b / LA_VBLK, k;

  if (ba >= bb) {
    for (k = a; k < b; k++)
      s = dd_add(s, isfinite(t->vals[k]) ? t->vals[k] * t->psc : 0);
    return s;
  }
  for (k = a; k < ba * LA_VBLK; k++)
    s = dd_add(s, isfinite(t->vals[k]) ? t->vals[k] * t->psc : 0);
  s = dd_add(s, t->vblk[bb].hi - t->vblk[ba].hi);
  s = dd_add(s, t->vblk[bb].lo - t->vblk[ba].lo);
  for (k = bb * LA_VBLK; k < b; k++)
    s = dd_add(s, isfinite(t->vals[k]) ? t->vals[k] * t->psc : 0);
  return s;
}

/* Finite part of the sum of points j0..j1-1 (j0 < j1) of record q. */
static dd_t rec_partial(const la_trace_t *t, const rec_t *q, uint64_t j0,
                        uint64_t j1, dd_t s) {
  uint64_t lin_end = j1 < q->count ? j1 : q->count - 1, cnt;
  size_t x0, x1;

  if (q->kind == LA_REC_VERBATIM) {
    dd_t v = vsum(t, q->x0 + j0, q->x0 + j1);
    return dd_add(dd_add(s, v.hi), v.lo);
  }
  if (lin_end > j0) {
    double c = (double)(cnt = lin_end - j0);
    double h = c * ((double)(j0 + lin_end - 1 + 2 * q->off) / 2);
    if (t->psc == 1) {
      s = dd_add(s, c * q->base);
      s = dd_add(s, q->d * h);
    } else { /* values near DBL_MAX: their products exactly (rescale()) */
      s = dd_add_prod(s, c, q->base * t->psc);
      s = dd_add_prod(s, q->d * t->psc, h);
    }
  }
  if (j1 == q->count) s = dd_add(s, q->last * t->psc);
  x0 = la_lower_bound(t->xpos, q->x0, q->x0 + q->nx, q->first + j0);
  x1 = la_lower_bound(t->xpos, x0, q->x0 + q->nx, q->first + j1);
  if (x1 > x0) {
    s = dd_add(s, t->xprefix[x1].hi - t->xprefix[x0].hi);
    s = dd_add(s, t->xprefix[x1].lo - t->xprefix[x0].lo);
  }
  return s;
}

/* Reads one quantized value at exponent e, predicted from *prev. */
static int read_qvalue(la_creader_t *r, int e, double *prev) {
  uint64_t w;
  int64_t k;
  int rc;

  if ((rc = la_creader_varint(r, &w)) != 0) return rc;
  if (__builtin_add_overflow(la_qpredict(*prev, e), la_unzigzag(w), &k) ||
      !(fabs((double)k) < LA_QK_MAX))
    return LA_EPROTO;
  /* ldexp((double)k, e), exactly: |k| >= 1 and e >= LA_QEXP_MIN keep the
   * product normal, and it is 0 or infinite where ldexp's is */
  *prev =
      e >= -1022 && e <= 1022 ? (double)k * la_pow2(e) : ldexp((double)k, e);
  return 0;
}

static int read_rvalue(la_creader_t *r, double *prev) {
  int rc = la_creader_f64(r, prev);
  return rc ? rc : isfinite(*prev) ? 0 : LA_EPROTO;
}

/* Adds line q's points (before its exceptions) to acc: their sum as
 * rec_partial() makes it, and its absolute sum (the line is monotone from
 * its first point to its last: |sum| when they share a sign, else at most
 * count times the larger end). */
static void line_totals(la_cacc_t *acc, const rec_t *q) {
  double first = la_line_value(q->base, q->d, q->off, 0, q->count, q->last);
  double s = q->last;
  if (q->count > 1) {
    double c = (double)(q->count - 1);
    double h = c * ((double)(q->count - 2 + 2 * q->off) / 2);
    la_cacc_sum(acc, c * q->base);
    la_cacc_sum(acc, q->d * h);
    s += c * q->base + q->d * h;
  }
  la_cacc_sum(acc, q->last);
  if ((first >= 0 && q->last >= 0) || (first <= 0 && q->last <= 0))
    acc->abs += fabs(s);
  else
    acc->abs += (double)q->count * fmax(fabs(first), fabs(q->last));
}

/* Line q (not yet in acc) across the boundaries after its first point:
 * the sum at each is acc's and the line's points before it, in closed form
 * as rec_partial() takes them (its exceptions come with sl_exception()).
 * Boundaries at or before its first point were reached. */
static void sl_line(la_slices_t *sl, const la_cacc_t *acc, const rec_t *q) {
  uint64_t end = q->first + q->count;
  sl->plo = sl->phi = sl->k;
  for (; sl->bnd[sl->k] < end; sl->k++) {
    uint64_t j1 = sl->bnd[sl->k] - q->first; /* 0 < j1 < count */
    double c = (double)j1, h = c * ((double)(j1 - 1 + 2 * q->off) / 2);
    sl->at[sl->k] = dd_add(dd_add((dd_t){acc->hi, acc->lo}, c * q->base),
                           q->d * h);
  }
  sl->phi = sl->k;
}

/* An exception of the line sl_line() took, at point pos: v for the line's
 * value there, at the boundaries after it. */
static void sl_exception(la_slices_t *sl, uint64_t pos, double line,
                         double v) {
  for (unsigned k = sl->phi; k > sl->plo && sl->bnd[k - 1] > pos; k--)
    sl->at[k - 1] = dd_add(dd_add(sl->at[k - 1], -line), v);
}

/* A coded quantized run at point pos, count values (kref + d[j]) * q (not
 * yet in acc), across the boundaries after its first point. */
static void sl_qrun(la_slices_t *sl, const la_cacc_t *acc, uint64_t pos,
                    uint64_t count, int64_t kref, const int64_t *d, double q) {
  dd_t s = {acc->hi, acc->lo};
  uint64_t j = 0;
  for (; sl->bnd[sl->k] < pos + count; sl->k++) {
    for (; pos + j < sl->bnd[sl->k]; j++)
      s = dd_add(s, (double)(kref + d[j]) * q);
    sl->at[sl->k] = s;
  }
}

/* Parses the records of a lossy body, indexing them unless t->check_only
 * (then every check is made and nothing is kept); *hst: the coded runs'
 * tables from record to record, allocated at the first coded run. */
static int parse_records_st(la_trace_t *t, la_creader_t *r, char *why,
                            size_t why_len, la_huff_dec_t **hst) {
  rec_t scratch; /* the record being read when nothing is kept */
  uint64_t pos = 0, tag, count, j, c, gap, xp;
  int64_t qk = 0; /* integer of the last value of a quantized run */
  double prev = 0, a, b, v;
  int prev_exp = 0, vertex_ok = 0, rc, kind;
  int connected = (t->flags & LA_CENC_F_CONNECTED) != 0;
  void **r_arrays[] = {(void **)&t->recs, (void **)&t->rprefix};
  const size_t r_sizes[] = {sizeof(rec_t), sizeof(dd_t)};
  void **xp_arrays[] = {(void **)&t->xpos, (void **)&t->xval,
                        (void **)&t->xprefix};
  const size_t xp_sizes[] = {sizeof(uint64_t), sizeof(double), sizeof(dd_t)};

  if (t->sl && t->spread == 1 && !t->pc) { /* a spread trace: the indexed path */
    la_slices_t *sl = t->sl;
    assert(t->acc != NULL);
    for (unsigned k = 0; k <= sl->nb; k++)
      sl->bnd[k] = (uint64_t)((unsigned __int128)t->n * k / sl->nb);
    sl->bnd[sl->nb + 1] = UINT64_MAX;
    sl->k = sl->plo = sl->phi = 0;
    sl->ok = 1;
  } else {
    t->sl = NULL;
  }
  while (pos < t->n) {
    size_t at = r->off;
    rec_t *q;
    if ((rc = la_creader_varint(r, &tag)) != 0) goto bad;
    kind = (int)(tag & 3);
    count = (tag >> LA_REC_SHIFT) + 1;
    if (count > t->n - pos ||
        (kind == LA_REC_VERBATIM && (tag & (LA_REC_EXC | LA_REC_NEWEXP))) ||
        (kind == LA_REC_QRUN && (tag & LA_REC_NEWEXP)) ||
        (kind == LA_REC_QRUN && (tag & LA_REC_EXC) &&
         count > LA_CENC_QRUN_MAX) ||
        (kind == LA_REC_QRUN && t->quantum == 0) ||
        (kind == LA_REC_RLINE && (tag & LA_REC_NEWEXP)))
      return la_errorf(why, why_len, LA_EPROTO, "bad record tag at byte %zu",
                       at);
    if (t->check_only)
      q = &scratch;
    else if (grow(r_arrays, r_sizes, 2, &t->rcap, t->nrec + 1))
      return LA_ENOMEM;
    else
      q = &t->recs[t->nrec];
    memset(q, 0, sizeof(*q));
    q->first = pos;
    q->count = count;
    q->kind = (uint8_t)(kind == LA_REC_QRUN ? LA_REC_VERBATIM : kind);
    if (kind == LA_REC_QRUN && (tag & LA_REC_EXC)) {
      /* coded: every value is kref + one of the table's, so the table's
       * least and greatest bound them all (checked once, the same way
       * when only checking) */
      int64_t coded[LA_CENC_QRUN_MAX + LA_HUFF_SLACK], kref = qk, smin, smax,
          last;
      __int128 dsum = 0;
      if (!*hst && !(*hst = calloc(1, sizeof **hst))) return LA_ENOMEM;
      /* the values themselves where they are kept or a slice boundary
       * falls inside the run; else (a check) only their sum */
      if (t->sl) sl_reach(t->sl, t->acc, pos);
      int keep = !t->check_only ||
                 (t->sl && t->sl->bnd[t->sl->k] < pos + count);
      if ((rc = la_huff_qrun_decode(r, count, kref, keep ? coded : NULL,
                                    &dsum, &last, &smin, &smax, *hst)) != 0) {
        if (rc == LA_ETRUNC) goto bad;
        return la_errorf(why, why_len, LA_EPROTO,
                         "malformed coded quantized run at byte %zu", at);
      }
      if (kref + smin <= -(INT64_C(1) << 53) ||
          kref + smax >= (INT64_C(1) << 53))
        return la_errorf(why, why_len, LA_EPROTO,
                         "quantized value out of range at byte %zu", at);
      if (!isfinite(fmax(fabs((double)(kref + smin)),
                         fabs((double)(kref + smax))) * t->quantum))
        return la_errorf(why, why_len, LA_EPROTO,
                         "quantized value overflows at byte %zu", at);
      q->x0 = t->nv;
      if ((rc = reserve_values(t, count)) != 0) return rc;
      if (t->sl)
        sl_qrun(t->sl, t->acc, pos, count, kref, coded, t->quantum);
      if (!t->check_only)
        add_qvalues(t, kref, coded, count, t->quantum);
      else if (t->acc)
        acc_qvalues(t->acc, kref, keep ? qsum(coded, count, smin, smax) : dsum,
                    count, t->quantum, smin, smax);
      qk = kref + last;
      vertex_ok = 0;
      goto next;
    }
    if (kind == LA_REC_QRUN) { /* exact values, indexed as verbatim ones */
      q->x0 = t->nv;
      /* a plain value takes a byte at least: room for no more */
      if (count > r->len - r->off) {
        rc = LA_ETRUNC;
        goto bad;
      }
      if ((rc = reserve_values(t, count)) != 0) return rc;
      for (j = 0; j < count; j++) {
        uint64_t w;
        int64_t dk;
        if ((rc = la_creader_varint(r, &w)) != 0) goto bad;
        dk = la_unzigzag(w);
        if (dk >= (INT64_C(1) << 54) || dk <= -(INT64_C(1) << 54) ||
            qk + dk >= (INT64_C(1) << 53) || qk + dk <= -(INT64_C(1) << 53))
          return la_errorf(why, why_len, LA_EPROTO,
                           "quantized value out of range at byte %zu", at);
        qk += dk;
        v = (double)qk * t->quantum;
        if (!isfinite(v))
          return la_errorf(why, why_len, LA_EPROTO,
                           "quantized value overflows at byte %zu", at);
        if ((rc = add_value(t, pos + j, v)) != 0) return rc;
      }
      vertex_ok = 0;
      goto next;
    }
    if (kind == LA_REC_VERBATIM) {
      q->x0 = t->nv;
      if (count > r->len - r->off) { /* a byte a value at least */
        rc = LA_ETRUNC;
        goto bad;
      }
      if ((rc = reserve_values(t, count)) != 0) return rc;
      for (j = 0; j < count; j++) {
        if ((rc = la_creader_verbatim(r, &v)) != 0) goto bad;
        if ((rc = add_value(t, pos + j, v)) != 0) return rc;
      }
      vertex_ok = 0;
      goto next;
    }
    q->off = connected && vertex_ok;
    q->quant = kind == LA_REC_QLINE;
    if (tag & LA_REC_NEWEXP) {
      uint64_t w;
      int64_t de;
      if ((rc = la_creader_varint(r, &w)) != 0) goto bad;
      de = la_unzigzag(w);
      if (de > 4 * LA_QEXP_MAX || de < -4 * LA_QEXP_MAX ||
          prev_exp + de < LA_QEXP_MIN || prev_exp + de > LA_QEXP_MAX)
        return la_errorf(why, why_len, LA_EPROTO, "bad exponent at byte %zu",
                         at);
      prev_exp += (int)de;
    }
    if (q->off) {
      a = prev; /* the previous vertex */
    } else {
      rc = q->quant ? read_qvalue(r, prev_exp, &prev) : read_rvalue(r, &prev);
      if (rc) goto bad;
      a = prev;
    }
    if (q->off || count > 1) {
      rc = q->quant ? read_qvalue(r, prev_exp, &prev) : read_rvalue(r, &prev);
      if (rc) goto bad;
    }
    b = prev;
    q->base = a;
    q->last = b;
    q->d = q->off      ? (b - a) / (double)count
           : count > 1 ? (b - a) / (double)(count - 1)
                       : 0;
    if (!isfinite(q->d))
      return la_errorf(why, why_len, LA_EPROTO, "line overflows at byte %zu",
                       at);
    if (t->sl) {
      sl_reach(t->sl, t->acc, pos);
      sl_line(t->sl, t->acc, q);
    }
    if (t->acc) line_totals(t->acc, q);
    q->x0 = t->nx;
    if (tag & LA_REC_EXC) {
      if ((rc = la_creader_varint(r, &c)) != 0) goto bad;
      if (c == 0 || c > count)
        return la_errorf(why, why_len, LA_EPROTO,
                         "bad exception count at byte %zu", at);
      xp = 0;
      for (j = 0; j < c; j++) {
        double line;
        if ((rc = la_creader_varint(r, &gap)) != 0) goto bad;
        if (gap >= count || (xp = (j ? xp + 1 : 0) + gap) >= count)
          return la_errorf(why, why_len, LA_EPROTO,
                           "exception outside its segment at byte %zu", at);
        if ((rc = la_creader_verbatim(r, &v)) != 0) goto bad;
        if (t->check_only) {
          if (t->acc) { /* the point is v, not the line's value */
            line = la_line_value(q->base, q->d, q->off, xp, count, q->last);
            la_cacc_sum(t->acc, -line);
            la_cacc_add(t->acc, v, 1);
            if (t->sl && t->sl->phi > t->sl->plo)
              sl_exception(t->sl, pos + xp, line, v);
          }
          continue;
        }
        if (grow(xp_arrays, xp_sizes, 3, &t->xcap, t->nx + 1)) return LA_ENOMEM;
        if (t->nx == 0) t->xprefix[0] = (dd_t){0, 0};
        line = la_line_value(q->base, q->d, q->off, xp, count, q->last);
        t->xpos[t->nx] = pos + xp;
        t->xval[t->nx] = v;
        t->xprefix[t->nx + 1] =
            dd_add(dd_add(t->xprefix[t->nx], -line), isfinite(v) ? v : 0);
        t->nx++;
        if ((rc = add_nonfinite(t, pos + xp, v)) != 0) return rc;
      }
      q->nx = c;
    }
    vertex_ok = 1;
  next:
    pos += count;
    if (!t->check_only) t->nrec++;
  }
  return 0;
bad:
  return la_errorf(why, why_len, rc,
                   rc == LA_ETRUNC
                       ? "truncated in the record at byte %zu"
                       : "malformed value in the record at byte %zu",
                   r->off);
}

/* The bytes of a body per record and per exception parse_records
 * reserves room for: (72 + 16) / 32 + (8 + 8 + 16) / 4 = 10.75 bytes of
 * index per byte of the body. */
#define LA__REC_BYTES 32
#define LA__EXC_BYTES 4

static int parse_records(la_trace_t *t, la_creader_t *r, char *why,
                         size_t why_len) {
  la_huff_dec_t *hst = NULL;
  void **r_arrays[] = {(void **)&t->recs, (void **)&t->rprefix};
  const size_t r_sizes[] = {sizeof(rec_t), sizeof(dd_t)};
  void **xp_arrays[] = {(void **)&t->xpos, (void **)&t->xval,
                        (void **)&t->xprefix};
  const size_t xp_sizes[] = {sizeof(uint64_t), sizeof(double), sizeof(dd_t)};
  if (!t->check_only) {
    /* Room for the records and exceptions a body of this many bytes
     * usually holds (a polyline of 10^6 points, 6 KB: 174 records, 954
     * exceptions), about 11 times its bytes (LA__REC_BYTES): no array
     * copied as it grows (beyond, doubled as before), then cut to what
     * it holds. */
    size_t body = r->len - r->off;
    size_t er = body / LA__REC_BYTES, ex = body / LA__EXC_BYTES;
    if (er > t->n) er = t->n;
    if (ex > t->n) ex = t->n;
    if ((er > 16 && resize(r_arrays, r_sizes, 2, &t->rcap, er)) ||
        (ex > 16 && resize(xp_arrays, xp_sizes, 3, &t->xcap, ex)))
      return LA_ENOMEM;
  }
  int rc = parse_records_st(t, r, why, why_len, &hst);
  free(hst);
  if (rc == 0 && !t->check_only) {
    cut(r_arrays, r_sizes, 2, &t->rcap, t->nrec);
    cut(xp_arrays, xp_sizes, 3, &t->xcap, t->nx);
  }
  return rc;
}

/* The prefix sums were built at psc = 1 (the values as they are). When one
 * left the double range (a running sum of values near DBL_MAX: Inf, or NaN
 * from Inf - Inf), they are built again with every value times 2^-64: a
 * sum of at most 2^40 doubles then stays below 2^1000, and range sums
 * scale back (Inf only where the range's own sum overflows). Values below
 * 2^-958 lose bits there, next to values near 2^1024. */
static void rescale(la_trace_t *t) {
  dd_t sum = {0, 0};
  size_t k, e;

  if ((t->nrec == 0 || isfinite(t->rprefix[t->nrec].hi)) &&
      (t->nv == 0 || isfinite(t->vrun.hi)) &&
      (t->nx == 0 || isfinite(t->xprefix[t->nx].hi)))
    return;
  t->psc = 0x1p-64;
  t->vrun = (dd_t){0, 0};
  sum_from(t, 0);
  for (k = 0; k < t->nrec; k++) {
    const rec_t *q = &t->recs[k];
    if (q->kind == LA_REC_VERBATIM) continue;
    for (e = q->x0; e < q->x0 + q->nx; e++) {
      double v = t->xval[e];
      double line = la_line_value(q->base, q->d, q->off, t->xpos[e] - q->first,
                                  q->count, q->last);
      t->xprefix[e + 1] = dd_add(dd_add(t->xprefix[e], -line * t->psc),
                                 isfinite(v) ? v * t->psc : 0);
    }
  }
  for (k = 0; k < t->nrec; k++) {
    dd_t rs = rec_partial(t, &t->recs[k], 0, t->recs[k].count, (dd_t){0, 0});
    sum = dd_add(dd_add(sum, rs.hi), rs.lo);
    t->rprefix[k + 1] = sum;
  }
}

/* The prefix sums range sums read, as the parse left them to be built:
 * the values' running sum with its checkpoints, the records' sums (a
 * lossless trace's one record: the values' running sum), then rescale().
 * Every sum in the same order as when they were built at open, so every
 * range sum is the same, bit for bit. */
static void build_sums(la_trace_t *t) {
  dd_t sum = {0, 0};

  if (t->nv) sum_from(t, 0);
  if (t->mode == LA_COMPACT_LOSSLESS) {
    if (t->nrec) t->rprefix[1] = t->vrun;
  } else {
    t->rprefix[0] = (dd_t){0, 0};
    for (size_t k = 0; k < t->nrec; k++) {
      const rec_t *q = &t->recs[k];
      dd_t rs = rec_partial(t, q, 0, q->count, (dd_t){0, 0});
      sum = dd_add(dd_add(sum, rs.hi), rs.lo);
      t->rprefix[k + 1] = sum;
    }
  }
  rescale(t);
}

/* The prefix sums of t, built by the first query that reads them (a
 * reader of decoded values or of totals never pays for them); safe when
 * threads ask at once: one builds under t's lock, the others wait for it,
 * and every later query sees them built (acquire). t is la_trace_open's,
 * allocated writable: the const is the queries'. */
static void sums_ready(const la_trace_t *ct) {
  la_trace_t *t = (la_trace_t *)ct;

  assert(!t->check_only);
  if (atomic_load_explicit(&t->sums_built, memory_order_acquire)) return;
  pthread_mutex_lock(&t->sums_lock);
  if (!atomic_load_explicit(&t->sums_built, memory_order_relaxed)) {
    build_sums(t);
    atomic_store_explicit(&t->sums_built, 1, memory_order_release);
  }
  pthread_mutex_unlock(&t->sums_lock);
}

int la_trace_open(const uint8_t *bytes, size_t len, la_trace_t **out, char *why,
                  size_t why_len) {
  return la_trace_open_max(bytes, len, LA_TRACE_MAX_POINTS, out, why, why_len);
}

static void decode_stored(const la_trace_t *t, uint64_t first, uint64_t count,
                          double *out);

/* The one parser of an encoding, for la_trace_open_max (t allocated and
 * zeroed: builds its index) and la_trace_check_max (t->check_only: makes
 * the same checks in the same order, so the same result and why, keeping
 * nothing). On failure what t holds is for the caller to free. */
static int parse_trace(const uint8_t *bytes, size_t len, uint64_t max_points,
                       la_trace_t *t, char *why, size_t why_len) {
  la_creader_t r;
  uint8_t h[6];
  uint32_t crc, want;
  uint64_t n;
  int rc, i;

  if (len < 4 + 6 + 8 + 1)
    return la_errorf(
        why, why_len,
        len >= 3 && memcmp(bytes, "LAC", 3) != 0 ? LA_EPROTO : LA_ETRUNC,
        "%zu bytes: shorter than any compact trace", len);
  r.p = bytes;
  r.len = len - 4;
  r.off = 0;
  for (i = 0; i < 6; i++) la_creader_u8(&r, &h[i]);
  if (h[0] != LA_CENC_MAGIC0 || h[1] != LA_CENC_MAGIC1 ||
      h[2] != LA_CENC_MAGIC2)
    return la_errorf(why, why_len, LA_EPROTO,
                     "not a compact trace (bad magic)");
  if (h[3] != LA_CENC_VERSION)
    return la_errorf(why, why_len, LA_EVERSION,
                     "encoding version %u (this build reads version %d)", h[3],
                     LA_CENC_VERSION);
  if (h[4] < LA_COMPACT_POLYLINE || h[4] > LA_COMPACT_LOSSLESS)
    return la_errorf(why, why_len, LA_EPROTO, "unknown mode %u", h[4]);
  if ((h[5] & ~LA_CENC_F_KNOWN) ||
      (h[4] == LA_COMPACT_LOSSLESS
           ? (h[5] & ~(LA_CENC_F_XOR | LA_CENC_F_SPREAD |
                                   LA_CENC_F_PIECES)) != 0
                                   : (h[5] & LA_CENC_F_XOR) != 0) ||
      ((h[5] & LA_CENC_F_SPREAD) && (h[5] & LA_CENC_F_PIECES)) ||
      (h[4] != LA_COMPACT_MAXERR && (h[5] & LA_CENC_F_RELATIVE)))
    return la_errorf(why, why_len, LA_EPROTO, "bad flags 0x%02x for mode %u",
                     h[5], h[4]);
  t->mode = h[4];
  t->flags = h[5];
  la_creader_f64(&r, &t->bound);
  if ((rc = la_creader_varint(&r, &n)) != 0) {
    rc = la_errorf(why, why_len, rc, "bad point count");
    goto out;
  }
  if (!(t->bound >= 0 && t->bound < INFINITY) ||
      (t->mode == LA_COMPACT_LOSSLESS) != (t->bound == 0)) {
    rc = la_errorf(why, why_len, LA_EPROTO, "bad bound %g for mode %d",
                   t->bound, t->mode);
    goto out;
  }
  if (t->flags & LA_CENC_F_QUANTUM) {
    if ((rc = la_creader_f64(&r, &t->quantum)) != 0) {
      rc = la_errorf(why, why_len, rc, "no quantum");
      goto out;
    }
    if (!la_compact_quantum_ok(t->quantum)) {
      rc = la_errorf(why, why_len, LA_EPROTO, "bad quantum %g", t->quantum);
      goto out;
    }
  }
  t->spread = 1;
  if (t->flags & LA_CENC_F_SPREAD) {
    if ((rc = la_creader_varint(&r, &t->spread)) != 0) {
      rc = la_errorf(why, why_len, rc, "no spread");
      goto out;
    }
    if (t->spread < 2 || t->spread > LA_CENC_SPREAD_MAX) {
      rc = la_errorf(why, why_len, LA_EPROTO, "bad spread %llu",
                     (unsigned long long)t->spread);
      goto out;
    }
  }
  if (max_points > LA_TRACE_MAX_POINTS) max_points = LA_TRACE_MAX_POINTS;
  if (n > max_points / t->spread) { /* before anything is allocated */
    if (t->spread > 1)
      rc = la_errorf(why, why_len, LA_ELIMIT,
                     "declares %llu points of %llu cells, more than the %llu "
                     "cells allowed",
                     (unsigned long long)n, (unsigned long long)t->spread,
                     (unsigned long long)max_points);
    else
      rc = la_errorf(why, why_len, LA_ELIMIT,
                     "declares %llu points, more than the %llu allowed",
                     (unsigned long long)n, (unsigned long long)max_points);
    goto out;
  }
  t->cells = n * t->spread;
  if ((t->flags & LA_CENC_F_PIECES) &&
      (rc = la_trace_pieces_parse(t, &r, n, max_points, why, why_len)) != 0)
    goto out;
  t->n = n;
  if (t->mode == LA_COMPACT_LOSSLESS) {
    uint64_t j;
    if (n > r.len - r.off) { /* every value takes at least one byte */
      rc = la_errorf(why, why_len, LA_ETRUNC,
                     "%llu values cannot fit in %zu bytes",
                     (unsigned long long)n, r.len - r.off);
      goto out;
    }
    if (t->check_only) {
      if ((rc = la_compact_lossless_decode(&r, t->flags, n, NULL, t->acc)) !=
          0) {
        rc = la_errorf(why, why_len, rc, "lossless body %s at byte %zu",
                       rc == LA_ETRUNC ? "truncated" : "malformed", r.off);
        goto out;
      }
      goto body_done;
    }
    t->recs = calloc(1, sizeof(rec_t));
    t->rprefix = calloc(2, sizeof(dd_t));
    if (!t->recs || !t->rprefix || reserve_values(t, n ? n : 1) != 0) {
      rc = LA_ENOMEM;
      goto out;
    }
    if ((rc = la_compact_lossless_decode(&r, t->flags, n, t->vals, NULL)) !=
        0) {
      rc = la_errorf(why, why_len, rc, "lossless body %s at byte %zu",
                     rc == LA_ETRUNC ? "truncated" : "malformed", r.off);
      goto out;
    }
    for (j = 0; j < n; j++) {
      double v = t->vals[t->nv++];
      if ((rc = add_nonfinite(t, j, v)) != 0) goto out;
    }
    t->recs[0] = (rec_t){.first = 0, .count = n, .kind = LA_REC_VERBATIM};
    t->nrec = n > 0;
  } else if ((rc = parse_records(t, &r, why, why_len)) != 0) {
    goto out;
  }
body_done:
  if (r.off != r.len) {
    rc = la_errorf(why, why_len, LA_EPROTO, "%zu bytes after the last record",
                   r.len - r.off);
    goto out;
  }
  r.len = len;
  la_creader_u32(&r, &want);
  crc = la_compact_crc32(0, bytes, len - 4);
  if (crc != want) {
    rc = la_errorf(why, why_len, LA_EPROTO, "checksum mismatch");
    goto out;
  }
  if (!t->check_only && t->rprefix == NULL &&
      (t->rprefix = calloc(1, sizeof(dd_t))) == NULL)
    rc = LA_ENOMEM;
  if (rc == 0 && !t->check_only && t->pc) { /* the pieces' values, once */
    if ((t->pv = malloc((n ? n : 1) * sizeof *t->pv)) == NULL)
      rc = LA_ENOMEM;
    else if (n)
      decode_stored(t, 0, n, t->pv);
  }
out:
  return rc;
}

int la_trace_open_max(const uint8_t *bytes, size_t len, uint64_t max_points,
                      la_trace_t **out, char *why, size_t why_len) {
  la_trace_t *t;
  int rc;

  if (out == NULL || (bytes == NULL && len > 0))
    return la_errorf(why, why_len, LA_EINVAL, "no buffer");
  *out = NULL;
  if ((t = calloc(1, sizeof(*t))) == NULL) return LA_ENOMEM;
  if (pthread_mutex_init(&t->sums_lock, NULL) != 0) {
    free(t);
    return LA_ENOMEM;
  }
  t->psc = 1;
  if ((rc = parse_trace(bytes, len, max_points, t, why, why_len)) != 0) {
    la_trace_close(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* The check-only parse, with the values' totals in *acc and the sums of
 * sl->nb slices in *sl (sl->ok says whether the pass took them) when not
 * NULL. */
static int check_trace(const uint8_t *bytes, size_t len, uint64_t max_points,
                       la_trace_t *t, la_cacc_t *acc, la_slices_t *sl,
                       char *why, size_t why_len) {
  if (bytes == NULL && len > 0)
    return la_errorf(why, why_len, LA_EINVAL, "no buffer");
  memset(t, 0, sizeof *t);
  t->check_only = 1;
  t->psc = 1;
  t->acc = acc;
  if (acc) *acc = (la_cacc_t){.emin = NAN, .emax = NAN};
  if (sl) sl->ok = 0;
  t->sl = sl;
  int rc = parse_trace(bytes, len, max_points, t, why, why_len);
  if (t->pc) { /* check-only keeps nothing */
    la_pieces_free(t->pc);
    free(t->pc);
    t->pc = NULL;
  }
  if (rc == 0 && sl && sl->ok) { /* the last boundary, after every point */
    sl->ok = !acc->nan && !acc->pinf && !acc->ninf;
    sl_reach(sl, acc, sl->bnd[sl->nb]);
  }
  return rc;
}

/* The slice sums a check-only pass took into sums[0..sl->nb): 1, or 0
 * when it could not (lossless, spread, a value not finite, beyond the
 * double range). */
static int slices_out(const la_slices_t *sl, double *sums) {
  int ok = sl->ok;
  for (unsigned j = 0; ok && j < sl->nb; j++) {
    sums[j] = dd_diff(sl->at[j + 1], sl->at[j]);
    ok = isfinite(sums[j]);
  }
  return ok;
}

int la_trace_check_max(const uint8_t *bytes, size_t len, uint64_t max_points,
                       uint64_t *n_points, int *mode, char *why,
                       size_t why_len) {
  la_trace_t t;
  int rc;

  if (n_points == NULL || mode == NULL)
    return la_errorf(why, why_len, LA_EINVAL, "no buffer");
  if ((rc = check_trace(bytes, len, max_points, &t, NULL, NULL, why,
                        why_len)) != 0)
    return rc;
  *n_points = t.cells;
  *mode = t.mode;
  return 0;
}

/* la_trace_check_totals() and la_trace_check_totals_slices(): sl NULL
 * for the former. */
static int check_totals(const uint8_t *bytes, size_t len, uint64_t max_points,
                        la_trace_totals_t *tot, la_slices_t *sl, char *why,
                        size_t why_len) {
  la_trace_t t;
  la_cacc_t a;
  int rc;

  if (tot == NULL) return la_errorf(why, why_len, LA_EINVAL, "no totals");
  if ((rc = check_trace(bytes, len, max_points, &t, &a, sl, why, why_len)) !=
      0)
    return rc;
  memset(tot, 0, sizeof *tot);
  tot->n_points = t.cells;
  tot->stored = t.n;
  tot->spread = t.spread;
  tot->pieced = (t.flags & LA_CENC_F_PIECES) != 0;
  tot->mode = t.mode;
  tot->bound = t.bound;
  tot->relative = (t.flags & LA_CENC_F_RELATIVE) != 0;
  tot->sum = a.hi + a.lo;
  tot->abs_sum = a.abs;
  tot->exact_min = a.emin;
  tot->exact_max = a.emax;
  tot->has_nan = a.nan;
  tot->has_pinf = a.pinf;
  tot->has_ninf = a.ninf;
  return 0;
}

int la_trace_check_totals(const uint8_t *bytes, size_t len,
                          uint64_t max_points, la_trace_totals_t *tot,
                          char *why, size_t why_len) {
  return check_totals(bytes, len, max_points, tot, NULL, why, why_len);
}

int la_trace_check_totals_slices(const uint8_t *bytes, size_t len,
                                 uint64_t max_points, la_trace_totals_t *tot,
                                 unsigned nb, double *sums, int *sums_ok,
                                 char *why, size_t why_len) {
  la_slices_t sl;
  int rc;

  if (nb < 1 || nb > LA_SLICES_MAX || !sums || !sums_ok)
    return la_errorf(why, why_len, LA_EINVAL, "bad slice count or buffer");
  *sums_ok = 0;
  sl.nb = nb;
  if ((rc = check_totals(bytes, len, max_points, tot, &sl, why, why_len)) !=
      0)
    return rc;
  *sums_ok = slices_out(&sl, sums);
  return 0;
}

uint64_t la_trace_count(const la_trace_t *t) {
  return t->cells;
}
uint64_t la_trace_spread(const la_trace_t *t) {
  return t->spread;
}
int la_trace_mode(const la_trace_t *t) {
  return t->mode;
}

void la_trace_params(const la_trace_t *t, la_compact_params_t *p) {
  memset(p, 0, sizeof(*p));
  p->mode = t->mode;
  if (t->mode == LA_COMPACT_POLYLINE) p->cv = t->bound;
  if (t->mode == LA_COMPACT_MAXERR) p->epsilon = t->bound;
  p->relative = (t->flags & LA_CENC_F_RELATIVE) != 0;
  p->connected = (t->flags & LA_CENC_F_CONNECTED) != 0;
  p->outliers = (t->flags & LA_CENC_F_OUTLIERS) != 0;
  p->quantum = t->quantum;
}

static int bad_range(const la_trace_t *t, uint64_t first, uint64_t count) {
  return t == NULL || first > la_trace_count(t) ||
         count > la_trace_count(t) - first;
}

/* Stored values [first, first + count) (count > 0, inside the trace). */
static void decode_stored(const la_trace_t *t, uint64_t first, uint64_t count,
                          double *out) {
  uint64_t end = first + count, i = first;
  size_t k;

  for (k = la_trace_find_rec(t, first); i < end; k++) {
    const rec_t *q = &t->recs[k];
    uint64_t j0 = i - q->first, j1 = end - q->first, j;
    size_t x;
    if (j1 > q->count) j1 = q->count;
    if (q->kind == LA_REC_VERBATIM) {
      memcpy(out + (i - first), t->vals + q->x0 + j0, (j1 - j0) * 8);
    } else {
      double *o = out + (i - first);
      for (j = j0; j < j1; j++)
        o[j - j0] = la_line_value(q->base, q->d, q->off, j, q->count, q->last);
      x = la_lower_bound(t->xpos, q->x0, q->x0 + q->nx, i);
      for (; x < q->x0 + q->nx && t->xpos[x] < q->first + j1; x++)
        out[t->xpos[x] - first] = t->xval[x];
    }
    i = q->first + j1;
  }
}

int la_trace_decode(const la_trace_t *t, uint64_t first, uint64_t count,
                    double *out) {
  if (bad_range(t, first, count) || (out == NULL && count > 0))
    return LA_ERANGE;
  if (count == 0) return 0;
  if (t->pc) {
    la_trace_pieces_decode(t, first, count, out);
    return 0;
  }
  if (t->spread == 1) {
    decode_stored(t, first, count, out);
    return 0;
  }
  /* a spread trace: the stored values of the cells' rows, a block at a
   * time, each divided over its cells */
  uint64_t k = t->spread, end = first + count, i = first;
  double dk = (double)k, v[256];
  while (i < end) {
    uint64_t r0 = i / k, r1 = (end - 1) / k + 1;
    if (r1 - r0 > 256) r1 = r0 + 256;
    decode_stored(t, r0, r1 - r0, v);
    for (uint64_t r = r0; r < r1; r++) {
      double c = v[r - r0] / dk;
      uint64_t e = (r + 1) * k < end ? (r + 1) * k : end;
      for (; i < e; i++) out[i - first] = c;
    }
  }
  return 0;
}

/* The record of t holding stored value i, as la_trace_find_rec finds it
 * (the one record whose first value is the last at or before i), searched
 * from record *hint forward (galloping, then halving) when the hint is at
 * or before it, else over every record; *hint becomes the record found. */
static size_t find_rec_from(const la_trace_t *t, size_t *hint, uint64_t i) {
  size_t lo = *hint, hi, step = 1;

  if (lo >= t->nrec || t->recs[lo].first > i)
    return *hint = la_trace_find_rec(t, i);
  for (hi = lo + 1; hi < t->nrec && t->recs[hi].first <= i; hi = lo + step)
    lo = hi, step *= 2;
  if (hi > t->nrec) hi = t->nrec;
  return *hint = la_trace_find_rec_in(t, lo, hi, i);
}

/* Sum of stored values [first, first + count) (count > 0, inside); c (may
 * be NULL) where the search for its records starts. */
static double sum_stored(const la_trace_t *t, la_trace_cursor_t *c,
                         uint64_t first, uint64_t count) {
  uint64_t last;
  size_t k0, k1, f;
  dd_t s = {0, 0};
  double r;

  sums_ready(t);
  last = first + count - 1;
  if (c) {
    k0 = find_rec_from(t, &c->rec, first);
    k1 = find_rec_from(t, &c->rec, last);
  } else {
    k0 = la_trace_find_rec(t, first);
    k1 = la_trace_find_rec(t, last);
  }
  if (k0 == k1) {
    const rec_t *q = &t->recs[k0];
    s = rec_partial(t, q, first - q->first, last + 1 - q->first, s);
  } else {
    const rec_t *q0 = &t->recs[k0], *q1 = &t->recs[k1];
    s = rec_partial(t, q0, first - q0->first, q0->count, s);
    s = dd_add(s, dd_diff(t->rprefix[k1], t->rprefix[k0 + 1]));
    s = rec_partial(t, q1, 0, last + 1 - q1->first, s);
  }
  r = (s.hi + s.lo) / t->psc; /* exact, or +-Inf past the double range */
  f = c && c->nf <= t->nnf && (c->nf == 0 || t->nfpos[c->nf - 1] < first)
          ? c->nf
          : 0; /* the values not finite before c->nf are before first */
  f = la_lower_bound(t->nfpos, f, t->nnf, first);
  if (c) c->nf = f;
  for (; f < t->nnf && t->nfpos[f] <= last; f++) r += t->nfval[f];
  return r;
}

int la_trace_range_sum(const la_trace_t *t, uint64_t first, uint64_t count,
                       double *sum) {
  return la_trace_range_sum_at(t, NULL, first, count, sum);
}

int la_trace_range_sum_at(const la_trace_t *t, la_trace_cursor_t *c,
                          uint64_t first, uint64_t count, double *sum) {
  if (bad_range(t, first, count) || sum == NULL) return LA_ERANGE;
  *sum = 0;
  if (count == 0) return 0;
  if (t->pc) { /* whole pieces as stored: exact totals */
    *sum = la_trace_pieces_sum(t, first, count);
    return 0;
  }
  uint64_t k = t->spread;
  if (k == 1) {
    *sum = sum_stored(t, c, first, count);
    return 0;
  }
  /* a spread trace: whole rows from the stored sums, the cells of a
   * partial row at either end as that many cells of its value / k */
  uint64_t r0 = first / k, r1 = (first + count - 1) / k;
  double v;
  if (r0 == r1) {
    decode_stored(t, r0, 1, &v);
    *sum = (double)count * (v / (double)k);
    return 0;
  }
  double s = 0;
  uint64_t head = (r0 + 1) * k - first, tail = first + count - r1 * k;
  if (head < k) { /* a partial first row */
    decode_stored(t, r0, 1, &v);
    s += (double)head * (v / (double)k);
    r0++;
  }
  if (tail < k) { /* a partial last row */
    decode_stored(t, r1, 1, &v);
    s += (double)tail * (v / (double)k);
  } else {
    r1++;
  }
  if (r1 > r0) s += sum_stored(t, c, r0, r1 - r0);
  *sum = s;
  return 0;
}

size_t la_trace_segment_count(const la_trace_t *t) {
  return t->mode == LA_COMPACT_LOSSLESS ? 0 : t->nrec;
}

int la_trace_segment(const la_trace_t *t, size_t i, la_trace_segment_t *s) {
  const rec_t *q;

  if (i >= la_trace_segment_count(t)) return LA_ERANGE;
  q = &t->recs[i];
  memset(s, 0, sizeof(*s));
  s->first = q->first * t->spread;
  s->count = q->count * t->spread;
  if (t->pc) { /* pieced: from its first piece's first cell, its cells */
    s->first = t->pc->p[q->first].first;
    s->count = la_trace_pieces_cells(t, q->first, q->first + q->count);
  }
  if (q->kind == LA_REC_VERBATIM) {
    s->kind = LA_SEG_VERBATIM;
    s->v0 = t->vals[q->x0];
    s->v1 = t->vals[q->x0 + q->count - 1];
  } else {
    s->kind = LA_SEG_LINE;
    s->v0 = la_line_value(q->base, q->d, q->off, 0, q->count, q->last);
    s->v1 = q->last;
    s->exceptions = q->nx;
    s->quantized = q->quant;
  }
  if (t->spread > 1) { /* the cells' values */
    s->v0 /= (double)t->spread;
    s->v1 /= (double)t->spread;
  }
  if (t->pc) { /* the cells' values of its first and last pieces */
    s->v0 /= (double)la_trace_pieces_cells(t, q->first, q->first + 1);
    s->v1 /= (double)la_trace_pieces_cells(t, q->first + q->count - 1,
                                           q->first + q->count);
  }
  return 0;
}

int la_trace_is_verbatim(const la_trace_t *t, uint64_t i) {
  const rec_t *q;
  size_t x;

  if (i >= la_trace_count(t)) return 0;
  if (t->pc) {
    if (la_trace_pieces_which(t, i, &i) != 0) return 0; /* in no piece */
  } else {
    i /= t->spread; /* the stored value of the cell */
  }
  q = &t->recs[la_trace_find_rec(t, i)];
  if (q->kind == LA_REC_VERBATIM) return 1;
  x = la_lower_bound(t->xpos, q->x0, q->x0 + q->nx, i);
  return x < q->x0 + q->nx && t->xpos[x] == i;
}

/* The indexed path of la_trace_slice_sums(). */
static int slice_sums_open(const uint8_t *bytes, size_t len,
                           uint64_t max_points, unsigned nb, double *sums,
                           uint64_t *n_points, char *why, size_t why_len) {
  la_trace_t *t;
  int rc = la_trace_open_max(bytes, len, max_points, &t, why, why_len);
  if (rc) return rc;
  uint64_t m = la_trace_count(t), lo = 0;
  for (unsigned j = 0; j < nb; j++) {
    uint64_t hi = (uint64_t)((unsigned __int128)m * (j + 1) / nb);
    sums[j] = 0;
    if (hi > lo) la_trace_range_sum(t, lo, hi - lo, &sums[j]);
    lo = hi;
  }
  *n_points = m;
  la_trace_close(t);
  return 0;
}

int la_trace_slice_sums(const uint8_t *bytes, size_t len, uint64_t max_points,
                        unsigned nb, double *sums, uint64_t *n_points,
                        char *why, size_t why_len) {
  la_trace_t t;
  la_slices_t sl;
  la_cacc_t a; /* the running sum the slice sums come from */
  int rc;

  if (nb < 1 || nb > LA_SLICES_MAX || !sums || !n_points)
    return la_errorf(why, why_len, LA_EINVAL, "bad slice count or buffer");
  sl.nb = nb;
  if ((rc = check_trace(bytes, len, max_points, &t, &a, &sl, why,
                        why_len)) != 0)
    return rc;
  if (!slices_out(&sl, sums)) /* lossless, spread, or beyond the range */
    return slice_sums_open(bytes, len, max_points, nb, sums, n_points, why,
                           why_len);
  *n_points = t.n;
  return 0;
}

/* One record of t again, its values x (the scaled ones): a line through
 * its scaled ends with its exceptions, a run of its points verbatim.
 * Returns 0 or the encoder's error. */
static int scaled_rec(const la_trace_t *t, const rec_t *q, double scale,
                      la_cenc_t *e) {
  if (q->kind == LA_REC_VERBATIM) { /* verbatim and quantized runs */
    for (uint64_t j = 0; j < q->count; j++) la_cenc_verbatim(e);
    return e->err;
  }
  int anchored = (e->flags & LA_CENC_F_CONNECTED) && e->vertex_ok;
  double a = la_line_value(q->base, q->d, q->off, 0, q->count, q->last);
  double b = q->last * scale, v;
  a *= scale;
  for (uint64_t k = q->x0; k < q->x0 + q->nx; k++)
    la_cenc_exception(e, t->xpos[k]);
  /* the points are the line's values times scale, up to rounding: the
   * check allows that and nothing more */
  double tol = 0x1p-30 * (fabs(a) + fabs(b));
  int rc = la_cenc_line(e, q->count, anchored, a, b, 0, tol, 0x1p-30, &v);
  return rc < 0 ? rc : 0;
}

int la_trace_scaled(const la_trace_t *t, const double *dec, double scale,
                    double *x, la_compact_result_t *out) {
  if (!out) return LA_EINVAL;
  memset(out, 0, sizeof *out);
  uint64_t n = la_trace_count(t);
  if (!dec || !x || (n && dec == x) || !isfinite(scale)) return LA_EINVAL;
  for (uint64_t i = 0; i < n; i++) x[i] = dec[i] * scale;
  la_compact_params_t p;
  la_trace_params(t, &p);
  p.quantum = 0; /* scaled values are no whole ticks */
  sums_ready(t); /* psc: whether rescale() scaled them */
  if (t->mode == LA_COMPACT_LOSSLESS || t->spread != 1 || t->pc ||
      t->psc != 1)
    return la_compact(x, (size_t)n, &p, out);
  la_cenc_t e;
  la_cenc_init(&e, x, n, t->mode, t->flags & ~LA_CENC_F_QUANTUM, t->bound, 0);
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < t->nrec; k++)
    rc = scaled_rec(t, &t->recs[k], scale, &e);
  if (rc == 0) rc = la_cenc_finish(&e);
  if (rc) {
    la_cenc_free(&e);
    return rc;
  }
  la_stats_finish(&e.stats, n, &out->stats);
  la_stats_overflow(x, (size_t)n, &out->stats);
  out->mode = t->mode;
  out->segments = e.segments;
  out->exceptions = e.exceptions;
  uint8_t *b = realloc(e.out.p, e.out.len ? e.out.len : 1);
  out->bytes = b ? b : e.out.p;
  out->len = e.out.len;
  memset(&e.out, 0, sizeof e.out);
  la_cenc_free(&e);
  return 0;
}
