/* la_compact_encode.c: writes the records of a lossy (polyline or maxerr)
 * encoding: header, line records with quantized or exact end values and
 * their exceptions, verbatim runs, and the closing CRC-32.
 *
 * Before a line is written, its reconstruction (the decoder's arithmetic,
 * la_line_value()) is compared with the raw points: a line that misses the
 * bound turns into a verbatim run, so the bound holds whatever rounding did.
 * The same pass measures the achieved error. It does not choose segments
 * (the segmenters do) and does not decode (la_compact_decode.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact.h"

void la_cenc_init(la_cenc_t *e, const double *x, uint64_t n, int mode,
                  int flags, double bound) {
  memset(e, 0, sizeof(*e));
  e->x = x;
  e->n = n;
  e->mode = mode;
  e->flags = flags;
  e->bound = bound;
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC0);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC1);
  la_cbuf_put_u8(&e->out, LA_CENC_MAGIC2);
  la_cbuf_put_u8(&e->out, LA_CENC_VERSION);
  la_cbuf_put_u8(&e->out, (uint8_t)mode);
  la_cbuf_put_u8(&e->out, (uint8_t)flags);
  la_cbuf_put_f64(&e->out, bound);
  la_cbuf_put_varint(&e->out, n);
  e->err = e->out.err;
}

void la_cenc_free(la_cenc_t *e) {
  la_cbuf_free(&e->out);
  free(e->exc_off);
  e->exc_off = NULL;
  e->nexc = e->exc_cap = 0;
}

void la_cenc_exception(la_cenc_t *e, uint64_t index) {
  if (e->nexc == e->exc_cap) {
    size_t cap = e->exc_cap ? 2 * e->exc_cap : 64;
    uint64_t *p = realloc(e->exc_off, cap * sizeof(*p));
    if (p == NULL) {
      e->err = LA_ENOMEM;
      return;
    }
    e->exc_off = p;
    e->exc_cap = cap;
  }
  e->exc_off[e->nexc++] = index - (e->pos + e->run);
}

void la_cenc_verbatim(la_cenc_t *e) {
  e->run++;
  e->vertex_ok = 0;
}

static void flush_run(la_cenc_t *e) {
  uint64_t i;

  if (e->run == 0)
    return;
  la_cbuf_put_varint(&e->out, LA_REC_VERBATIM | ((e->run - 1) << LA_REC_SHIFT));
  for (i = 0; i < e->run; i++)
    la_cbuf_put_verbatim(&e->out, e->x[e->pos + i]);
  e->pos += e->run;
  e->segments++;
  e->run = 0;
  e->vertex_ok = 0;
}

/* Quantizes v to k * 2^ex. Returns 0 when |v| / 2^ex >= 2^52. */
static int quantize(double v, int ex, int64_t *k, double *vq) {
  double s = floor(ldexp(v, -ex) + 0.5);

  if (!(fabs(s) < LA_QK_MAX))
    return 0;
  *k = (int64_t)s;
  *vq = ldexp(s, ex);
  return 1;
}

typedef struct {
  double max, sse, sum;
  uint64_t count;
} chk_t;

/* Compares the line with x[first..first+count) outside exceptions, with the
 * decoder's arithmetic (la_line_value(); the index is counted in a double,
 * which is exact). */
static int check_line(const la_cenc_t *e, uint64_t first, uint64_t count,
                      double base, double d, uint64_t off, double last,
                      double tol_abs, double tol_rel, chk_t *c) {
  const double *x = e->x + first;
  uint64_t j, j0 = 0;
  size_t k;
  double max = 0, sse = 0, sum = 0, err;
  int maxerr = tol_abs >= 0, ok = 1;

  for (k = 0; k <= e->nexc; k++) {
    uint64_t j1 = k < e->nexc ? e->exc_off[k] : count - 1;
    double tj = (double)(j0 + off);
    for (j = j0; j < j1; j++, tj += 1) {
      err = fabs(base + tj * d - x[j]);
      if (maxerr)
        ok &= err <= tol_abs + tol_rel * fabs(x[j]);
      max = err > max ? err : max;
      sse += err * err;
      sum += x[j];
    }
    j0 = j1 + 1;
  }
  err = fabs(last - x[count - 1]); /* the last point is never an exception */
  if (maxerr)
    ok &= err <= tol_abs + tol_rel * fabs(x[count - 1]);
  max = err > max ? err : max;
  sse += err * err;
  sum += x[count - 1];
  c->count = count - e->nexc;
  if (!ok || !(max < INFINITY) ||
      (!maxerr && !(sse * (double)c->count <= e->bound * e->bound * sum * sum)))
    return 0;
  c->max = max;
  c->sse = sse;
  c->sum = sum;
  return 1;
}

int la_cenc_line(la_cenc_t *e, uint64_t count, int anchored, double a, double b,
                 double qmax, double tol_abs, double tol_rel, double *vertex) {
  uint64_t first = e->pos + e->run, off = anchored ? 1 : 0, tag;
  int connected = (e->flags & LA_CENC_F_CONNECTED) != 0, quant = 0, ex = 0;
  int has_b = anchored || count > 1;
  int64_t ka = 0, kb = 0;
  double aq = a, bq = b, base, d;
  chk_t c;
  size_t k;

  if (e->err)
    return e->err;
  if (count == 0 || first + count > e->n ||
      anchored != (connected && e->vertex_ok))
    return e->err = LA_EINVAL; /* a segmenter bug */
  if (qmax > 0 && qmax < INFINITY) {
    (void)frexp(qmax, &ex);
    ex -= 1; /* 2^ex <= qmax */
    quant = ex >= LA_QEXP_MIN && ex <= LA_QEXP_MAX &&
            (anchored || quantize(a, ex, &ka, &aq)) &&
            (!has_b || quantize(b, ex, &kb, &bq));
    if (!quant) {
      aq = a;
      bq = b;
    }
  }
  if (!has_b)
    bq = aq;
  base = anchored ? e->vertex : aq;
  d = anchored    ? (bq - base) / (double)count
      : count > 1 ? (bq - aq) / (double)(count - 1)
                  : 0;
  if (!isfinite(base) || !isfinite(bq) ||
      !check_line(e, first, count, base, d, off, bq, tol_abs, tol_rel, &c)) {
    e->fallbacks++;
    e->run += count;
    e->nexc = 0;
    e->vertex_ok = 0;
    return 0;
  }
  flush_run(e);
  tag = (uint64_t)(quant ? LA_REC_QLINE : LA_REC_RLINE) |
        (e->nexc ? LA_REC_EXC : 0) |
        (quant && ex != e->prev_exp ? LA_REC_NEWEXP : 0) |
        ((count - 1) << LA_REC_SHIFT);
  la_cbuf_put_varint(&e->out, tag);
  if (quant) {
    if (ex != e->prev_exp) {
      la_cbuf_put_varint(&e->out, la_zigzag((int64_t)ex - e->prev_exp));
      e->prev_exp = ex;
    }
    if (!anchored) {
      la_cbuf_put_varint(&e->out, la_zigzag(ka - la_qpredict(e->prev, ex)));
      e->prev = aq;
    }
    if (has_b) {
      la_cbuf_put_varint(&e->out, la_zigzag(kb - la_qpredict(e->prev, ex)));
      e->prev = bq;
    }
  } else {
    if (!anchored)
      la_cbuf_put_f64(&e->out, aq);
    if (has_b)
      la_cbuf_put_f64(&e->out, bq);
    e->prev = bq;
  }
  if (e->nexc) {
    la_cbuf_put_varint(&e->out, e->nexc);
    for (k = 0; k < e->nexc; k++) {
      la_cbuf_put_varint(&e->out, k ? e->exc_off[k] - e->exc_off[k - 1] - 1
                                    : e->exc_off[0]);
      la_cbuf_put_verbatim(&e->out, e->x[first + e->exc_off[k]]);
    }
  }
  if (c.max > e->err_max)
    e->err_max = c.max;
  e->err_sse += c.sse;
  e->err_sum += c.sum;
  e->err_count += c.count;
  e->pos += count;
  e->segments++;
  e->exceptions += e->nexc;
  e->nexc = 0;
  e->vertex_ok = 1;
  e->vertex = bq;
  *vertex = bq;
  if (e->out.err)
    e->err = e->out.err;
  return e->err ? e->err : 1;
}

int la_cenc_finish(la_cenc_t *e) {
  if (e->err)
    return e->err;
  flush_run(e);
  if (e->pos != e->n)
    return e->err = LA_EINVAL; /* a segmenter bug */
  la_cbuf_put_u32(&e->out, la_compact_crc32(0, e->out.p, e->out.len));
  return e->err = e->out.err;
}
