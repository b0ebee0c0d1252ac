/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_spread.c: turns the compaction of per-row totals into the
 * encoding of the per-cell series they stand for.
 *
 * A row probe measures a row of k cells as one value. The LocalAgent
 * compacts the rows' values as they are (one point per row) and labels the
 * encoding "spread by k" (docs/compaction.md, flag 0x20): a decoder then
 * gives n * k points, point i being stored value i / k divided by k, and
 * range sums over any cells follow. No stage between the application and
 * the reader expands the rows; the bytes grow by the flag and one varint.
 *
 * The statistics and errors of the result are the per-cell series': count
 * times k, min and max over k, the same sum (the cells of a row add up to
 * its value), error max and RMSE over k, CV unchanged. An absolute maxerr
 * bound is per cell, so the header says the rows' bound over k. Pure C, no
 * allocation but the output bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "la_compact_internal.h"
#include "la_errors.h"

int la_compact_plain_head(const la_compact_result_t *in, uint8_t h[6],
                          double *bound, uint64_t *n, size_t *head) {
  la_creader_t r;
  double q;

  if (in == NULL || in->bytes == NULL) return LA_EINVAL;
  r.p = in->bytes;
  r.len = in->len >= 4 ? in->len - 4 : 0;
  r.off = 0;
  for (int i = 0; i < 6; i++)
    if (la_creader_u8(&r, &h[i]) != 0) return LA_EINVAL;
  if (h[0] != LA_CENC_MAGIC0 || h[1] != LA_CENC_MAGIC1 ||
      h[2] != LA_CENC_MAGIC2 || h[3] != LA_CENC_VERSION ||
      (h[5] & (LA_CENC_F_SPREAD | LA_CENC_F_PIECES)))
    return LA_EINVAL;
  if (la_creader_f64(&r, bound) != 0 || la_creader_varint(&r, n) != 0)
    return LA_EINVAL;
  if ((h[5] & LA_CENC_F_QUANTUM) && la_creader_f64(&r, &q) != 0)
    return LA_EINVAL;
  *head = r.off;
  return 0;
}

int la_compact_spread(const la_compact_result_t *in, uint64_t k,
                      la_compact_result_t *out) {
  uint8_t h[6];
  uint64_t n;
  double bound;
  size_t head;

  memset(out, 0, sizeof *out);
  if (k < 2 || k > LA_CENC_SPREAD_MAX ||
      la_compact_plain_head(in, h, &bound, &n, &head) != 0)
    return LA_EINVAL;
  if (n > LA_TRACE_MAX_POINTS / k) return LA_ELIMIT;
  size_t body = in->len - 4 - head;
  uint8_t kv[10];
  size_t kl = la_varint_write(kv, k);
  out->bytes = malloc(in->len + kl);
  if (!out->bytes) return LA_ENOMEM;
  memcpy(out->bytes, in->bytes, head);
  out->bytes[5] = (uint8_t)(h[5] | LA_CENC_F_SPREAD);
  if (h[4] == LA_COMPACT_MAXERR && !(h[5] & LA_CENC_F_RELATIVE)) {
    double b = bound / (double)k; /* per cell */
    if (!(b > 0)) b = bound;      /* a subnormal bound stays as it was */
    uint64_t u;
    memcpy(&u, &b, 8);
    for (int i = 0; i < 8; i++) out->bytes[6 + i] = (uint8_t)(u >> (8 * i));
  }
  memcpy(out->bytes + head, kv, kl);
  memcpy(out->bytes + head + kl, in->bytes + head, body);
  out->len = head + kl + body;
  uint32_t crc = la_compact_crc32(0, out->bytes, out->len);
  for (int i = 0; i < 4; i++) out->bytes[out->len + i] = (uint8_t)(crc >> (8 * i));
  out->len += 4;
  double dk = (double)k;
  out->mode = in->mode;
  out->segments = in->segments;
  out->exceptions = in->exceptions;
  out->quantized = in->quantized * k;
  out->stats.count = in->stats.count * k;
  out->stats.sum = in->stats.sum;
  out->stats.min = in->stats.min / dk;
  out->stats.max = in->stats.max / dk;
  out->error.max_abs = in->error.max_abs / dk;
  out->error.rmse = in->error.rmse / dk;
  out->error.cv = in->error.cv;
  return 0;
}
