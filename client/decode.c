/* SPDX-License-Identifier: BSD-3-Clause */
/* decode.c: la_client_decode_trace(), one encoded compact trace (the bytes
 * of a CompactTrace's segments, or of the store's traces.segments and
 * robust.segments columns) decoded into the caller's array of doubles.
 *
 * This is the decoder readers outside C use (the Python package under
 * python/ calls it through ctypes), so every reader of a store gets the
 * values lactl and the load balancers get: the same parser and checks
 * (compact/la_compact_decode.c), nothing reimplemented. Deliberately not
 * here: reading the store, stitching ranks, choosing measured or robust
 * weights; the caller does that. la_client_splice_trace() is the store's
 * resolution of a robust reference with exceptions, for the same readers.
 */
#include <stdio.h>

#include <string.h>

#include "la_client.h"
#include "la_compact.h"
#include "la_compact_splice.h"

int la_client_decode_trace(const uint8_t *bytes, size_t len, double *out,
                           uint64_t n, char *why, size_t why_len) {
  char buf[200];
  la_trace_t *t = NULL;
  if (why && why_len) why[0] = 0;
  if ((!bytes && len) || (!out && n)) {
    if (why && why_len) snprintf(why, why_len, "no buffer");
    return LA_EINVAL;
  }
  /* at most n points: a short encoding declaring more is refused before
   * anything is allocated for them */
  int rc = la_trace_open_max(bytes, len, n, &t, buf, sizeof buf);
  if (rc == LA_ELIMIT) rc = LA_ERANGE;
  if (rc == 0 && la_trace_count(t) != n) {
    snprintf(buf, sizeof buf, "holds %llu points, not %llu",
             (unsigned long long)la_trace_count(t), (unsigned long long)n);
    rc = LA_ERANGE;
  }
  if (rc == 0 && n) rc = la_trace_decode(t, 0, n, out);
  la_trace_close(t);
  if (rc && why && why_len) snprintf(why, why_len, "%s", buf);
  return rc;
}

int la_client_splice_trace(const uint8_t *rep, size_t rep_len, uint64_t n,
                           const uint8_t *exc, size_t exc_len, uint8_t *out,
                           size_t *out_len, char *why, size_t why_len) {
  char buf[200] = "";
  if (why && why_len) why[0] = 0;
  if (!rep || !exc || !out || !out_len) {
    if (why && why_len) snprintf(why, why_len, "no buffer");
    return LA_EINVAL;
  }
  La__HistoryExceptions *x =
      la__history_exceptions__unpack(NULL, exc_len, exc);
  la_compact_result_t r;
  int rc = x ? la_compact_splice(rep, rep_len, n, x, &r, buf, sizeof buf)
             : LA_EPROTO;
  if (!x) snprintf(buf, sizeof buf, "exceptions: not a HistoryExceptions");
  if (x) la__history_exceptions__free_unpacked(x, NULL);
  if (rc == 0 && r.len > *out_len) {
    snprintf(buf, sizeof buf, "%zu bytes needed, %zu given", r.len,
             *out_len);
    rc = LA_ERANGE;
  }
  if (rc == 0) memcpy(out, r.bytes, r.len);
  if (rc == 0 || rc == LA_ERANGE) *out_len = r.len;
  if (rc == 0 || rc == LA_ERANGE) la_compact_result_free(&r);
  if (rc && why && why_len) snprintf(why, why_len, "%s", buf);
  return rc;
}
