/* SPDX-License-Identifier: BSD-3-Clause */
/* sigs.h: the signatures of open Trace-Sets' traces, taken where ingest
 * checks each trace (validate.c, on the thread pool) and kept until the
 * set closes, so that storing it by representatives (reps.c,
 * store.representatives, docs/clusters.md) groups its ranks without a
 * pass over their encodings.
 *
 * One entry per rank of a set (16 shares, the decoded total, the point
 * count and the encoding's bytes: sizeof(la_store_rep_sig_t)), allocated
 * at the set's first signature, at most LA_GA_SIGS_MAX_BYTES over every
 * open set: a set that does not fit keeps none. A signature not kept (no
 * room, a restart, a rollback, a lossless trace) is taken from the stored
 * bytes at the close, as before. No libuv; loop thread only.
 */
#ifndef LA_GLOBALAGENT_SIGS_H
#define LA_GLOBALAGENT_SIGS_H

#include <stddef.h>
#include <stdint.h>

#include "store_reps.h"

/* The most bytes of signatures kept at once: 64 MiB, about 220,000
 * traces of open sets (304 bytes each: the measured and the robust
 * signature). */
#define LA_GA_SIGS_MAX_BYTES ((size_t)64 << 20)

typedef struct la_ga_sigs la_ga_sigs_t;

/* A new, empty module; NULL when out of memory. */
la_ga_sigs_t *la_ga_sigs_new(void);
/* Frees g and what it keeps. NULL is fine. */
void la_ga_sigs_free(la_ga_sigs_t *g);
/* Forgets every set (after a rollback). */
void la_ga_sigs_clear(la_ga_sigs_t *g);
/* Keeps sig (count 0: none taken, ignored) as rank's in the set (app,
 * tag) of nprocs ranks. A rank >= nprocs, a set over the budget or out of
 * memory: not kept. */
void la_ga_sigs_add(la_ga_sigs_t *g, const char *app, uint64_t tag,
                    uint32_t nprocs, uint32_t rank,
                    const la_store_rep_sig_t *sig);
/* Takes the set's signatures out of g: 1 with *out (*n entries, one per
 * rank, count 0 where none; the caller frees it), 0 when it keeps none. */
int la_ga_sigs_take(la_ga_sigs_t *g, const char *app, uint64_t tag,
                    la_store_rep_sig_t **out, uint32_t *n);
/* Forgets the set (app, tag), if kept. */
void la_ga_sigs_drop(la_ga_sigs_t *g, const char *app, uint64_t tag);
/* Sets kept and bytes they hold now. */
void la_ga_sigs_usage(const la_ga_sigs_t *g, size_t *sets, size_t *bytes);

#endif
