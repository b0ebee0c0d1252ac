/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact.c: la_compact(), the entry point: checks the parameters,
 * computes the exact statistics, runs the segmenter of the mode (or the
 * lossless coder) and packages the result with the achieved error.
 *
 * In the lossy modes the exact statistics are computed by the encoder, line
 * by line right after its self-check, while the points are in cache.
 *
 * The segmenters, the record format and the lossless body live in their own
 * files; this one only wires them together and owns the result's memory.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"

void la_compact_result_free(la_compact_result_t *r) {
  if (r == NULL) return;
  free(r->bytes);
  memset(r, 0, sizeof(*r));
}

/* sse and sum in units of 2^(2k) and 2^k. */
static void fill_error(la_fit_error_t *e, double max, double sse, double sum,
                       uint64_t m, int k) {
  double r = m ? sqrt(sse / (double)m) : 0;
  e->max_abs = max;
  e->rmse = k ? ldexp(r, k) : r;
  e->cv = r == 0 ? 0 : r / fabs(sum / (double)m);
}

/* Hands the buffer to the result, trimmed to its length. */
static void take(la_cbuf_t *b, la_compact_result_t *out) {
  uint8_t *p = realloc(b->p, b->len ? b->len : 1);

  out->bytes = p ? p : b->p;
  out->len = b->len;
  memset(b, 0, sizeof(*b));
}

/* la_compact(), and with recon (may be NULL) la_compact_recon(), with
 * starts (may be NULL) la_compact_recon_starts(). */
static int compact(const double *x, size_t n, const la_compact_params_t *p,
                   la_compact_result_t *out, double *recon, uint64_t *starts,
                   size_t cap) {
  la_compact_params_t def;
  la_cenc_t enc;
  int mode, flags, rc;

  if (out == NULL) return LA_EINVAL;
  memset(out, 0, sizeof(*out));
  if (p == NULL) {
    la_compact_params_default(&def);
    p = &def;
  }
  if (la_compact_params_check(p, NULL, 0) != 0 || (x == NULL && n > 0))
    return LA_EINVAL;
  if ((uint64_t)n > LA_TRACE_MAX_POINTS) return LA_ELIMIT;
  mode = la_compact_effective_mode(p);
  out->mode = mode;
  if (mode == LA_COMPACT_LOSSLESS) {
    la_cbuf_t b = {0};
    la_series_stats(x, n, &out->stats);
    if ((rc = la_compact_lossless_encode(x, n, &b)) == 0) {
      la_cbuf_put_u32(&b, la_compact_crc32(0, b.p, b.len));
      rc = b.err;
    }
    if (rc != 0) {
      la_cbuf_free(&b);
      memset(out, 0, sizeof(*out));
      return rc;
    }
    take(&b, out);
    if (recon && n > 0) /* lossless: every value decodes to itself */
      memcpy(recon, x, n * sizeof *recon);
    return 0;
  }
  flags = (p->connected ? LA_CENC_F_CONNECTED : 0) |
          (p->outliers ? LA_CENC_F_OUTLIERS : 0) |
          (mode == LA_COMPACT_MAXERR && p->relative ? LA_CENC_F_RELATIVE : 0);
  la_cenc_init(&enc, x, n, mode, flags,
               mode == LA_COMPACT_POLYLINE ? p->cv : p->epsilon,
               mode == LA_COMPACT_POLYLINE ? p->quantum : 0);
  enc.recon = recon;
  enc.starts = starts;
  enc.starts_cap = cap;
  rc = mode == LA_COMPACT_POLYLINE ? la_compact_polyline_run(x, n, p, &enc)
                                   : la_compact_maxerr_run(x, n, p, &enc);
  if (rc == 0) rc = la_cenc_finish(&enc);
  if (rc != 0) {
    la_cenc_free(&enc);
    memset(out, 0, sizeof(*out));
    return rc;
  }
  /* the encoder fed every point to the statistics, in order */
  la_stats_finish(&enc.stats, n, &out->stats);
  la_stats_overflow(x, n, &out->stats);
  out->segments = enc.segments;
  out->exceptions = enc.exceptions;
  out->quantized = enc.quantized;
  fill_error(&out->error, enc.err_max, enc.err_sse, enc.err_sum, enc.err_count,
             enc.err_k);
  take(&enc.out, out);
  la_cenc_free(&enc);
  return 0;
}

int la_compact(const double *x, size_t n, const la_compact_params_t *p,
               la_compact_result_t *out) {
  return compact(x, n, p, out, NULL, NULL, 0);
}

int la_compact_recon(const double *x, size_t n, const la_compact_params_t *p,
                     la_compact_result_t *out, double *recon) {
  if ((recon == NULL && n > 0) || (recon != NULL && recon == x)) {
    if (out != NULL) memset(out, 0, sizeof(*out));
    return LA_EINVAL;
  }
  return compact(x, n, p, out, recon, NULL, 0);
}

int la_compact_recon_starts(const double *x, size_t n,
                            const la_compact_params_t *p,
                            la_compact_result_t *out, double *recon,
                            uint64_t *starts, size_t cap) {
  if ((recon == NULL && n > 0) || (recon != NULL && recon == x) ||
      (starts == NULL && cap > 0)) {
    if (out != NULL) memset(out, 0, sizeof(*out));
    return LA_EINVAL;
  }
  return compact(x, n, p, out, recon, starts, cap);
}
