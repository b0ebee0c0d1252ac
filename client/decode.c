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
 * resolution of a robust reference with exceptions, and
 * la_client_scale_trace() its rebuilding of a member of a set stored by
 * representatives (la_client_rep_open/_scale: the representative decoded
 * once for all its members), for the same readers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_client.h"
#include "la_compact.h"
#include "la_compact_splice.h"

/* t := the encoding bytes[0..len) of exactly n points, else the code
 * (LA_ERANGE for another count) with the reason in buf. */
static int la__open_n(const uint8_t *bytes, size_t len, uint64_t n,
                      la_trace_t **t, char *buf, size_t buf_len) {
  /* at most n points: a short encoding declaring more is refused before
   * anything is allocated for them */
  int rc = la_trace_open_max(bytes, len, n, t, buf, buf_len);
  if (rc == LA_ELIMIT) rc = LA_ERANGE;
  if (rc == 0 && la_trace_count(*t) != n) {
    snprintf(buf, buf_len, "holds %llu points, not %llu",
             (unsigned long long)la_trace_count(*t), (unsigned long long)n);
    rc = LA_ERANGE;
  }
  return rc;
}

int la_client_decode_trace(const uint8_t *bytes, size_t len, double *out,
                           uint64_t n, char *why, size_t why_len) {
  char buf[200];
  la_trace_t *t = NULL;
  if (why && why_len) why[0] = 0;
  if ((!bytes && len) || (!out && n)) {
    if (why && why_len) snprintf(why, why_len, "no buffer");
    return LA_EINVAL;
  }
  int rc = la__open_n(bytes, len, n, &t, buf, sizeof buf);
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

/* 1 with why said when scale is not finite. */
static int la__bad_scale(double scale, char *why, size_t why_len) {
  if (isfinite(scale)) return 0;
  if (why && why_len) snprintf(why, why_len, "scale %g not finite", scale);
  return 1;
}

struct la_client_rep {
  la_trace_t *t;
  uint64_t n;
  double *dec; /* its decoded values */
  double *x;   /* scratch: a member's */
};

void la_client_rep_close(la_client_rep_t *r) {
  if (!r) return;
  la_trace_close(r->t);
  free(r->dec);
  free(r->x);
  free(r);
}

int la_client_rep_open(const uint8_t *rep, size_t rep_len, uint64_t n,
                       la_client_rep_t **out, char *why, size_t why_len) {
  char buf[200] = "";
  if (why && why_len) why[0] = 0;
  if (!rep || !out) {
    if (why && why_len) snprintf(why, why_len, "no buffer");
    return LA_EINVAL;
  }
  *out = NULL;
  la_client_rep_t *r = calloc(1, sizeof *r);
  int rc = r ? la__open_n(rep, rep_len, n, &r->t, buf, sizeof buf)
             : LA_ENOMEM;
  /* the store's reader (store_reps_load.c): decode once */
  if (rc == 0) {
    r->n = n;
    r->dec = malloc((n ? n : 1) * sizeof *r->dec);
    r->x = malloc((n ? n : 1) * sizeof *r->x);
    rc = r->dec && r->x ? 0 : LA_ENOMEM;
  }
  if (rc == 0 && n) rc = la_trace_decode(r->t, 0, n, r->dec);
  if (rc) {
    la_client_rep_close(r);
    if (rc == LA_ENOMEM && !buf[0]) snprintf(buf, sizeof buf, "out of memory");
    if (why && why_len) snprintf(why, why_len, "%s", buf);
    return rc;
  }
  *out = r;
  return 0;
}

int la_client_rep_scale(la_client_rep_t *rep, double scale, uint8_t *out,
                        size_t *out_len, int *mode, char *why,
                        size_t why_len) {
  char buf[200] = "";
  if (why && why_len) why[0] = 0;
  if (!rep || !out || !out_len) {
    if (why && why_len) snprintf(why, why_len, "no buffer");
    return LA_EINVAL;
  }
  if (la__bad_scale(scale, why, why_len)) return LA_EINVAL;
  la_compact_result_t r = {0};
  int rc = la_trace_scaled(rep->t, rep->dec, scale, rep->x, &r);
  if (rc) snprintf(buf, sizeof buf, "scaling: error %d", rc);
  if (rc == 0 && r.len > *out_len) {
    snprintf(buf, sizeof buf, "%zu bytes needed, %zu given", r.len,
             *out_len);
    rc = LA_ERANGE;
  }
  if (rc == 0) memcpy(out, r.bytes, r.len);
  if (rc == 0 && mode) *mode = r.mode;
  if (rc == 0 || (rc == LA_ERANGE && r.bytes)) *out_len = r.len;
  la_compact_result_free(&r);
  if (rc == LA_ENOMEM && !buf[0]) snprintf(buf, sizeof buf, "out of memory");
  if (rc && why && why_len) snprintf(why, why_len, "%s", buf);
  return rc;
}

int la_client_scale_trace(const uint8_t *rep, size_t rep_len, uint64_t n,
                          double scale, uint8_t *out, size_t *out_len,
                          int *mode, char *why, size_t why_len) {
  if (la__bad_scale(scale, why, why_len)) return LA_EINVAL;
  la_client_rep_t *r = NULL;
  int rc = la_client_rep_open(rep, rep_len, n, &r, why, why_len);
  if (rc == 0)
    rc = la_client_rep_scale(r, scale, out, out_len, mode, why, why_len);
  la_client_rep_close(r);
  return rc;
}
