/* SPDX-License-Identifier: BSD-3-Clause */
/* validate.h: the GlobalAgent's check of a compact trace before it is stored.
 *
 * The codec has already checked what a CompactTrace says on its own (ranges,
 * stats.count == n_elements). This adds what needs the encoding and the
 * application's state: the encoding parses completely (header, every record,
 * positions in order, finite line values, exact length, CRC) with no more
 * points than the rank registered, holds exactly n_elements points, and has
 * the mode the message says (and the same of the robust encoding when the
 * trace carries one); n_elements equals the element count of the
 * rank's RankStart when one is stored. A trace that fails would make its
 * whole Trace-Set unreadable for every client, so it is refused instead:
 * logged with the LocalAgent and the reason, counted (status row
 * traces_invalid) and acknowledged like any handled message. It does not
 * store, stitch or decide about duplicates.
 */
#ifndef LA_GLOBALAGENT_VALIDATE_H
#define LA_GLOBALAGENT_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "la.pb-c.h"
#include "store_reps.h"

struct la_ga;

/* Checks t (already validated by la_msg_validate) against rank_elements,
 * the element count its rank registered (0: unknown, then only the
 * encoding's own consistency is checked). Returns 0 when t may be stored,
 * or LA_EPROTO with the reason in why ("invalid trace: ..."). Pure: no I/O,
 * no state, no allocation; each encoding is read once and not decoded
 * (la_trace_check_max), so the cost is the encodings' bytes, not the
 * trace's point count. */
int la_ga_validate_trace(const La__CompactTrace *t, uint64_t rank_elements,
                         char *why, size_t why_len);

/* The part of la_ga_validate_trace that needs nothing but t: every
 * encoding of t parses and holds n_elements points in t's mode. sig (may
 * be NULL: store.representatives off) gets the signature of t's measured
 * series, taken in the pass that checks it (docs/clusters.md; count 0
 * when that pass cannot take it: a lossless or spread trace, one of
 * several channels; undefined when t is refused). Returns 0 or LA_EPROTO
 * with the reason in why. Pure and thread-safe: agents.c runs it on the thread pool,
 * beside the record's decryption. */
int la_ga_check_encodings(const La__CompactTrace *t, la_store_rep_sig_t *sig,
                          char *why, size_t why_len);

/* The ingest step, on the loop thread: looks up the rank's element count
 * in the store and checks t's against it; enc_why is the verdict of
 * la_ga_check_encodings, run before (NULL: the encodings are fine, else
 * its reason). Returns 1 when t was refused (it has been logged with host
 * and counted; the caller stores nothing and carries on, so the message
 * is acknowledged with its batch; why says the reason, the element count's
 * first, as la_ga_validate_trace gives them), 0 when t may be stored. */
int la_ga_trace_refused(struct la_ga *ga, const char *host,
                        const La__CompactTrace *t, const char *enc_why,
                        char *why, size_t why_len);

#endif
