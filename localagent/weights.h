/* SPDX-License-Identifier: BSD-3-Clause */
/* weights.h: the robust weights of one registered rank, as its worker jobs
 * produce them (the estimator itself is robust.h).
 *
 * A session of the time metric owns one la_weights_t. Each compaction job
 * hands it the cycle's measured values (already in ns) and the probe's flag
 * bytes; it updates the estimator, and compacts the robust weights with the
 * trace's own parameters, so the CompactTrace carries both series. Two jobs
 * of one session can run on two pool threads at once: the update is
 * serialized by a mutex (cycles may then be seen one swap out of order,
 * which the estimator tolerates: it only compares consecutive values of an
 * element). No libuv; no I/O.
 *
 * Memory: la_robust_bytes(n) per rank (9 bytes per element) for the life
 * of the registration, plus, per job in flight, n doubles of weights and n
 * flag bytes.
 */
#ifndef LA_LOCALAGENT_WEIGHTS_H
#define LA_LOCALAGENT_WEIGHTS_H

#include <stdint.h>

#include "la_compact.h"
#include "robust.h"

typedef struct la_weights la_weights_t;

/* Timer steps (of the timer's resolution) an element's measured interval
 * needs to be resolved: below it the measured values, and so the robust
 * weights, of the fidelity benchmark's stencil cells were off their true
 * cost by tens of percent either way (docs/fidelity.md, "Light
 * elements"). */
#define LA_WEIGHTS_RESOLVED_STEPS 6

/* Creates the state of a rank of n elements. timer_res_ns (0: unknown)
 * widens the band by two timer steps and sets the resolution check;
 * detect: the rank's interference detection is on (its flags are the
 * probe's: robust.h's `detect`); tol and confirm as in robust.h; cv
 * (> 0) is the polyline bound of the weights' compaction when tighter than
 * the measured values' (the weights are smooth once interference is
 * removed, and balancers rank elements by them); grid[0..n_grid) (may be NULL),
 * the rank's grid dimensions from its registration, i fastest: when they
 * multiply to n, the estimator's neighbours include the cells above and below.
 * Returns 0 and *out, or LA_EINVAL / LA_ENOMEM. */
int la_weights_new(uint64_t n, double timer_res_ns, int detect, double tol,
                   uint32_t confirm, double cv, const uint64_t *grid,
                   size_t n_grid, la_weights_t **out);

/* One profiled cycle: x[0..n) measured, flags[0..n) (NULL: none). Writes
 * the robust weights, compacted with cp (the measured values' parameters)
 * and the tighter cv of la_weights_new(), into *res (free with
 * la_compact_result_free) and the estimator's statistics into *st, with
 * st->positive (weights above 0) and st->coarse: of those, the weights
 * below LA_WEIGHTS_RESOLVED_STEPS timer steps whose measured value is a
 * whole number of ticks (cp->quantum, ns per tick: one interval a probe
 * timed; a share of a row or range is not counted); 0 when the timer's
 * resolution is unknown.
 * Returns 0, or LA_ENOMEM / a la_compact error (then *res is zeroed). */
int la_weights_cycle(la_weights_t *w, const double *x, const uint8_t *flags,
                     const la_compact_params_t *cp, la_compact_result_t *res,
                     la_robust_stats_t *st);

/* la_weights_cycle(), and recon (n doubles, or NULL: as
 * la_weights_cycle()) receives the compacted weights as a decoder of *res
 * gives them (la_compact_recon()), so the caller need not decode them.
 * Returns as la_weights_cycle(). */
int la_weights_cycle_recon(la_weights_t *w, const double *x,
                           const uint8_t *flags, const la_compact_params_t *cp,
                           la_compact_result_t *res, la_robust_stats_t *st,
                           double *recon);

/* la_weights_cycle_recon(), and starts[0..cap) (or NULL) receives the
 * first point of each of the first cap records of *res
 * (la_compact_recon_starts(); res->segments counts them all), which the
 * history keeps for a representative without opening its trace.
 * Returns as la_weights_cycle(). */
int la_weights_cycle_recon_starts(la_weights_t *w, const double *x,
                                  const uint8_t *flags,
                                  const la_compact_params_t *cp,
                                  la_compact_result_t *res,
                                  la_robust_stats_t *st, double *recon,
                                  uint64_t *starts, size_t cap);

/* Frees w. NULL is fine. */
void la_weights_free(la_weights_t *w);

#endif
