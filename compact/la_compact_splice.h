/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_splice.h: a reference with exceptions (docs/history.md).
 *
 * A cycle whose robust weights are a representative's within the
 * per-element bound except at a few elements carries its own values for
 * those (HistoryExceptions: ranges of elements and their values). A reader
 * of the demoted cycle gets the representative's decoded values with the
 * cycle's own spliced in at the exceptions, re-encoded losslessly, so every
 * C reader (the store's resolution, and through it the feed, lactl and
 * libla_client) serves the same values from one function. The cycle's
 * totals are its own exact statistics, kept on its row: the splice makes
 * only the values.
 */
#ifndef LA_COMPACT_SPLICE_H
#define LA_COMPACT_SPLICE_H

#include <stddef.h>
#include <stdint.h>

#include "la.pb-c.h"
#include "la_compact.h"

/* The most exception elements a reference of n elements may carry: 1% of
 * them (none below 100 elements). Beyond, the cycle is stored in full. */
#define LA_COMPACT_SPLICE_MAX(n) ((uint64_t)(n) / 100)

/* Whether x is a valid set of exceptions for a trace of n elements: ranges
 * increasing and apart (a gap of at least one element), each of count >= 1
 * and inside [0, n), as many firsts as counts, sum(count) values, every
 * value finite, at most LA_COMPACT_SPLICE_MAX(n) elements in all. 0, or
 * LA_EPROTO with the reason in why. */
int la_compact_exceptions_check(const La__HistoryExceptions *x, uint64_t n,
                                char *why, size_t why_len);

/* Exceptions from k element indices idx (increasing) and the values v of
 * all n elements: consecutive indices become one range. *x points into
 * first, count (k each, the caller's) and values (k). Returns the number of
 * ranges. */
size_t la_compact_exceptions_build(const uint64_t *idx, size_t k,
                                   const double *v, La__HistoryExceptions *x,
                                   uint64_t *first, uint64_t *count,
                                   double *values);

/* Splices: decodes rep (an encoding of n points, la_trace_open_max and
 * la_trace_decode), sets the elements of x (checked as above) to their
 * values, and compacts the result losslessly into *out (la_compact: free
 * with la_compact_result_free; its stats are the spliced values', not the
 * cycle's). 0, or a negative code with the reason in why (a representative
 * that does not decode to n points, exceptions that are not valid, no
 * memory). */
int la_compact_splice(const uint8_t *rep, size_t rep_len, uint64_t n,
                      const La__HistoryExceptions *x,
                      la_compact_result_t *out, char *why, size_t why_len);

#endif /* LA_COMPACT_SPLICE_H */
