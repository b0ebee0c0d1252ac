/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_splice.c: a reference with exceptions, checked, built and
 * spliced (la_compact_splice.h, docs/history.md).
 *
 * Deliberately not here: which elements are exceptions (the LocalAgent's
 * history.c decides), where they are stored (store_history.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_compact_splice.h"
#include "la_errcodes.h"
#include "la_errors.h"

int la_compact_exceptions_check(const La__HistoryExceptions *x, uint64_t n,
                                char *why, size_t why_len) {
  if (!x) return la_errorf(why, why_len, LA_EPROTO, "exceptions missing");
  if (x->n_first != x->n_count)
    return la_errorf(why, why_len, LA_EPROTO,
                     "exceptions: %zu firsts but %zu counts", x->n_first,
                     x->n_count);
  if (x->n_first == 0)
    return la_errorf(why, why_len, LA_EPROTO, "exceptions: no range");
  uint64_t total = 0, end = 0, max = LA_COMPACT_SPLICE_MAX(n);
  for (size_t i = 0; i < x->n_first; i++) {
    uint64_t f = x->first[i], c = x->count[i];
    if (c == 0)
      return la_errorf(why, why_len, LA_EPROTO,
                       "exceptions: range %zu is empty", i);
    if (i > 0 && f <= end)
      return la_errorf(why, why_len, LA_EPROTO,
                       "exceptions: range %zu (first %llu) not after the "
                       "one before with a gap",
                       i, (unsigned long long)f);
    if (f >= n || c > n - f)
      return la_errorf(why, why_len, LA_EPROTO,
                       "exceptions: range %zu (%llu + %llu) outside the "
                       "trace's %llu elements",
                       i, (unsigned long long)f, (unsigned long long)c,
                       (unsigned long long)n);
    end = f + c;
    total += c;
    if (total > max)
      return la_errorf(why, why_len, LA_EPROTO,
                       "exceptions: more than %llu elements (1%% of %llu)",
                       (unsigned long long)max, (unsigned long long)n);
  }
  if (x->n_values != total)
    return la_errorf(why, why_len, LA_EPROTO,
                     "exceptions: %zu values for %llu elements", x->n_values,
                     (unsigned long long)total);
  for (size_t i = 0; i < x->n_values; i++)
    if (!isfinite(x->values[i]))
      return la_errorf(why, why_len, LA_EPROTO,
                       "exceptions: value %zu is not finite", i);
  return 0;
}

size_t la_compact_exceptions_build(const uint64_t *idx, size_t k,
                                   const double *v, La__HistoryExceptions *x,
                                   uint64_t *first, uint64_t *count,
                                   double *values) {
  size_t r = 0;
  for (size_t i = 0; i < k; i++) {
    if (r > 0 && idx[i] == first[r - 1] + count[r - 1]) {
      count[r - 1]++;
    } else {
      first[r] = idx[i];
      count[r++] = 1;
    }
    values[i] = v[idx[i]];
  }
  la__history_exceptions__init(x);
  x->n_first = x->n_count = r;
  x->first = first;
  x->count = count;
  x->n_values = k;
  x->values = values;
  return r;
}

int la_compact_splice(const uint8_t *rep, size_t rep_len, uint64_t n,
                      const La__HistoryExceptions *x,
                      la_compact_result_t *out, char *why, size_t why_len) {
  memset(out, 0, sizeof *out);
  int rc = la_compact_exceptions_check(x, n, why, why_len);
  if (rc) return rc;
  la_trace_t *t = NULL;
  char tw[160] = "";
  rc = la_trace_open_max(rep, rep_len, n, &t, tw, sizeof tw);
  if (rc == 0 && la_trace_count(t) != n) rc = LA_EPROTO;
  if (rc) {
    la_trace_close(t);
    return la_errorf(why, why_len, rc,
                     "the representative does not decode to %llu points%s%s",
                     (unsigned long long)n, tw[0] ? ": " : "", tw);
  }
  double *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) {
    la_trace_close(t);
    return la_errorf(why, why_len, LA_ENOMEM, "no memory for %llu values",
                     (unsigned long long)n);
  }
  rc = la_trace_decode(t, 0, n, v);
  la_trace_close(t);
  size_t at = 0;
  for (size_t i = 0; rc == 0 && i < x->n_first; i++) {
    memcpy(v + x->first[i], x->values + at, x->count[i] * sizeof *v);
    at += x->count[i];
  }
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_LOSSLESS;
  if (rc == 0) rc = la_compact(v, (size_t)n, &p, out);
  free(v);
  if (rc)
    return la_errorf(why, why_len, rc, "splicing %llu values failed",
                     (unsigned long long)n);
  return 0;
}
