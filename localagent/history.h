/* SPDX-License-Identifier: BSD-3-Clause */
/* history.h: the LocalAgent's side of bounded history (docs/history.md).
 *
 * Per registered rank the agent keeps a few representatives: earlier
 * cycles of that rank it sent in full, decoded (the values a reader of
 * those traces gets). A new cycle's true values are compared with each
 * representative's decoded values; when one reproduces them within the
 * compaction bound (and the robust weights within theirs), the trace names
 * it (CompactTrace.history_ref) and the GlobalAgent may keep the cycle as a
 * reference to it. A cycle that matches none becomes a representative
 * itself (the least recently used one gives way).
 *
 * Memory: every representative holds n doubles and at most n bytes of
 * segment starts (twice that with robust weights), counted against one
 * budget per agent (history.memory); a rank that does not fit goes without
 * (its traces are plain full traces).
 *
 * No libuv: the worker threads call this under the rank's own mutex, so
 * compaction jobs of one rank may run concurrently. Unit-tested alone
 * (tests/unit/test_history.c).
 */
#ifndef LA_LOCALAGENT_HISTORY_H
#define LA_LOCALAGENT_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "la_compact.h"

/* Elements per block of the polyline check: the error's coefficient of
 * variation must be within cv on every block of this many elements. */
#define LA_HISTORY_BLOCK 256
/* Most representatives a rank may keep. */
#define LA_HISTORY_MAX_REPS 16

/* The budget shared by an agent's ranks. */
typedef struct la_history_budget {
  uint64_t limit; /* bytes of decoded representatives, all ranks (0: off) */
  uint64_t used;  /* updated atomically */
} la_history_budget_t;

typedef struct la_history la_history_t; /* one rank's representatives */

/* A rank's history of n elements keeping up to reps representatives
 * (1..LA_HISTORY_MAX_REPS), charged to budget (which must outlive it).
 * cp is the rank's compaction, rcp that of its robust weights (NULL: the
 * rank has none). Returns NULL when history is off (budget limit 0, reps
 * 0, n 0) or without memory: the rank then goes without. */
la_history_t *la_history_new(la_history_budget_t *budget, uint64_t n,
                             uint32_t reps, const la_compact_params_t *cp,
                             const la_compact_params_t *rcp);

/* Frees h and gives its bytes back to the budget. NULL is fine. */
void la_history_free(la_history_t *h);

/* Whether y reproduces x[0..n) within the bound of p: polyline, on every
 * block the RMSE of x - y is at most cv times |mean of x| over the block,
 * the blocks being the representative's segments (starts[0..n_starts),
 * increasing from 0: the records of its encoding, so the reference keeps
 * the form of the bound its own trace kept) or, with starts NULL, blocks
 * of LA_HISTORY_BLOCK elements; maxerr, |x - y| <= epsilon (times |x|
 * when relative) everywhere; lossless, y equals x bit for bit. A value
 * that is not finite never matches. 1 within, 0 not. */
int la_history_within(const double *x, const double *y, uint64_t n,
                      const la_compact_params_t *p, const uint64_t *starts,
                      size_t n_starts);

/* Looks for a representative that reproduces the cycle: x its true values
 * (n, as at la_history_new), rx its robust weights (NULL when the trace
 * carries none; a representative without them then still matches, one
 * with them is needed when rx is given). Returns 1 with *ref (the
 * representative's cycle tag) and *err (the error of its values against
 * x) when one is within bound (the closest, by RMSE), 0 when none is, or
 * when h is NULL. */
int la_history_match(la_history_t *h, const double *x, const double *rx,
                     uint64_t *ref, la_fit_error_t *err);

/* The per-element bound of a robust reference (la_history_match_robust):
 * the representative's decoded robust weight y of every element within
 * rel * |r| + floor of the cycle's own r (its robust weight as it would be
 * stored). rel is the measured values' bound (cp at la_history_new:
 * polyline's cv; maxerr's epsilon, relative, or added to floor when
 * absolute), held on every element instead of on every record; floor is 0
 * until la_history_set_robust_floor sets it (one step of the timer for a
 * tick-valued series: below it cycles differ by the clock alone), and
 * counts only for an element whose measured value is one timed interval,
 * a whole number of the cycle's ticks (la_history_match_robust's x and
 * q), not a share of one spread over cells (a range's: its cells together
 * differ by a step). */
void la_history_set_robust_floor(la_history_t *h, double floor);

/* Looks for a representative whose robust weights reproduce rx[0..n)
 * element by element within the bound above (every value finite; lossless:
 * bit for bit), whatever the measured values do: the robust series can
 * then be stored as a reference on its own (CompactTrace.robust_ref) while
 * the measured one is kept in full. x[0..n): the cycle's measured values,
 * q: ns per timer tick of them (its compaction's quantum); x NULL or q 0:
 * not known, the floor counts for every element. Returns 1 with *ref and
 * *err (the error of the representative's robust weights against rx) for
 * the closest one by RMSE, 0 when none is, or when h is NULL or has no
 * robust weights. */
int la_history_match_robust(la_history_t *h, const double *rx,
                            const double *x, double q, uint64_t *ref,
                            la_fit_error_t *err);

/* la_history_match_robust, and a reference with exceptions: when no
 * representative holds on every element, the most recently used one out
 * of the bound on at most cap elements (LA_COMPACT_SPLICE_MAX of n: the
 * cycle then carries its own values there, CompactTrace.robust_exceptions;
 * an element whose own value is not finite is never one). Returns 1 with
 * *ref, *err (the error with the exceptions exact: the values a reader
 * gets) and the exceptions' indices, increasing, in exc[0..*n_exc) (room
 * for cap; *n_exc 0: within on every element, the closest by RMSE); 0 and
 * *n_exc 0 when none is. exc NULL: cap 0. Cost: the test on every element
 * stops at a representative's first miss; with exceptions, one pass over
 * both series per representative tried (stopping at its cap + 1st miss),
 * the most recently used first, until one holds. */
int la_history_match_robust_exc(la_history_t *h, const double *rx,
                                const double *x, double q, size_t cap,
                                uint64_t *exc, size_t *n_exc, uint64_t *ref,
                                la_fit_error_t *err);

/* Whether this cycle's robust check should look for exceptions (call
 * la_history_match_robust_exc with a cap; else cap 0): a search that finds
 * nothing costs a pass over each representative up to its cap + 1st miss
 * (on a rank whose weights never repeat, 0.3 ns per element a cycle on
 * 10^6 cells, against 0.01 for the test on every element), so while it
 * finds none it is due at the 1st, 3rd, 7th, 15th and 31st cycle and then
 * every LA_HISTORY_MAX_GAP-th, as learning (la_history_take); a robust
 * reference found, with exceptions or without, starts over. NULL h: 0. */
int la_history_exc_due(la_history_t *h);

/* The worker's step before logging a trace: la_history_match of the
 * cycle's true values x and of its robust weights as compacted (rres,
 * decoded here; NULL when the trace carries none): the estimator's own
 * values stay inside weights.c, so the robust series is compared as
 * stored. Returns 1 with *ref and *err, or 0 (no match, h NULL, no
 * memory). */
int la_history_check(la_history_t *h, const double *x,
                     const la_compact_result_t *rres, uint64_t *ref,
                     la_fit_error_t *err);

/* Fraction of the compaction bound a representative is compacted with:
 * its decoded values then leave room for the next cycles' own variation
 * (with the full bound a greedy polyline fills every segment up to it, and
 * nothing else would fit). */
#define LA_HISTORY_REP_BOUND 0.5

/* Longest gap, in unmatched cycles, between two representatives learned
 * while no cycle matches (see la_history_take). */
#define LA_HISTORY_MAX_GAP 16

/* Whether the cycle just checked (matched: la_history_check's result)
 * should become a representative (la_history_refit, la_history_learn).
 * A match: no. While cycles keep matching nothing, representatives are
 * learned with gaps that double up to LA_HISTORY_MAX_GAP cycles (the 1st,
 * 3rd, 7th, 15th, 31st miss, then every 16th): a rank whose cycles never repeat
 * within the bound (noisy timings) stops paying a third compaction and two
 * decodes per cycle for representatives nothing uses, and a phase that
 * starts repeating is still learned within LA_HISTORY_MAX_GAP cycles. A
 * match resets the gap to 1. NULL h: 0. */
int la_history_take(la_history_t *h, int matched);

/* A cycle that matched no representative will become one: recompacts its
 * true values x with cp's bound times LA_HISTORY_REP_BOUND (lossless:
 * nothing to do) and, on success, replaces *res (the old one is freed).
 * The trace stays within cp's bound. Returns 1 when replaced, 0 when not
 * (h NULL, lossless, a compaction error: *res unchanged). */
int la_history_refit(la_history_t *h, const double *x,
                     const la_compact_params_t *cp, la_compact_result_t *res);

/* Makes cycle_tag a representative after its full trace was logged: the
 * decoded values of res (and of rres, the robust weights, or NULL) replace
 * the least recently used representative. Returns 0, or a negative code
 * (a trace that does not decode to n points: nothing changes). NULL h: 0. */
int la_history_learn(la_history_t *h, uint64_t cycle_tag,
                     const la_compact_result_t *res,
                     const la_compact_result_t *rres);

/* la_history_learn(), and rrecon (n doubles, or NULL: decoded) holds the
 * robust weights as a decoder of rres gives them (la_weights_cycle_recon's
 * recon), so they are copied rather than decoded; rstarts (or NULL: the
 * trace is opened when it needs them) the first points of rres's records,
 * at least min(rres->segments, n / 8) of them
 * (la_weights_cycle_recon_starts with a capacity of n / 8). The values of
 * res are not decoded either when res is what la_history_refit() just
 * wrote: the refit keeps them as it compacts (la_compact_recon_starts). */
int la_history_learn_recon(la_history_t *h, uint64_t cycle_tag,
                           const la_compact_result_t *res,
                           const la_compact_result_t *rres,
                           const double *rrecon, const uint64_t *rstarts);

/* The robust weights' compaction of a rank compacting with cp: cp with
 * polyline's cv lowered to robust_cv when that is tighter (robust.cv, as
 * weights.c compacts them). */
void la_history_robust_params(const la_compact_params_t *cp, double robust_cv,
                              la_compact_params_t *out);

/* Representatives held now (for tests and status). */
uint32_t la_history_count(la_history_t *h);

#endif
