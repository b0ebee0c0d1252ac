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
 * weights; the caller does that.
 */
#include <stdio.h>

#include "la_client.h"
#include "la_compact.h"

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
