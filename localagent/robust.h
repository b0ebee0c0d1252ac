/* SPDX-License-Identifier: BSD-3-Clause */
/* robust.h: robust per-element weights of one application rank.
 *
 * A measured per-element value is the element's cost plus interference: time
 * the element did not cause (the thread was preempted, an interrupt, a
 * hypervisor's steal, the agents' own work). Interference only ever adds
 * time, comes in rare large bursts, and rarely hits the same element in
 * consecutive profiled cycles. So the cost of an element is the lower
 * envelope of its recent measurements, and a real change of cost is a level
 * that persists.
 *
 * The estimator keeps, per element, O(1) state (9 bytes, and one of scratch) and, for every
 * profiled cycle, given the measured values x[] and optional per-element
 * flags (the probe saw a context switch while timing that element):
 *
 *  - a flagged value, or a non-finite one, is not used: the weight stays the
 *    element's estimate;
 *  - a value at or below the estimate's band (est * (1 + tol) + abs_tol) is
 *    believed: below est / (1 + tol) - abs_tol it replaces the estimate at
 *    once (interference never lowers a reading: the cost went down); inside
 *    the band the estimate follows it by an exponential average (drift);
 *  - with interference detection (the `detect` parameter: the flags are the
 *    probe's, set when the thread was switched out while it timed the
 *    element) a usable value above the band is believed at once: nothing
 *    the probe can see disturbed it, so it is the element's work (a hot
 *    spot arriving, a cell migrated in); interference the probe cannot see
 *    (interrupts, a hypervisor's steal) then passes for one cycle, until
 *    the next lower reading replaces it;
 *  - otherwise (no detection, or a cycle without flags: row probes) a value
 *    above the band is suspect: the estimate stays, and the value
 *    joins the current run of suspects when it agrees with the run's level
 *    (within the band of its minimum; a value far above is interference on
 *    top of it and does not count; one far below starts a new run); after
 *    `confirm` agreeing suspects in consecutive profiled cycles the estimate
 *    jumps to the run's minimum: a real rise of cost (a moving hot spot) is
 *    followed within `confirm` profiled cycles (one more per burst that
 *    hits the element meanwhile), while random bursts, which rarely hit one
 *    element in consecutive cycles and then almost never agree, are not;
 *  - except: a rise to the level of a neighbour (elements i-1 and i+1, and
 *    on a grid the cells above and below in each dimension; its current
 *    estimate, within the band) is believed at once: a front of cost
 *    moving over the elements (a hot spot, a shock) reaches an element from
 *    a neighbour, while a burst of interference matches a neighbour's cost
 *    only by chance, and is then undone by the next cycle's lower reading;
 *  - the first cycle has no history: there an isolated spike (more than
 *    `spike` times both neighbours, which agree within a factor of two) or
 *    a flagged value takes the larger neighbour's value as its first
 *    estimate, and any other value is believed.
 *
 * Rows: on a grid whose row stride is given, a cycle in which every row
 * carries one value and one flag (row probes spread a row's time evenly
 * over its cells) is one element per row: the rules above apply to the
 * rows (neighbours: the rows beside, above and below), and each cell's
 * weight is its row's. Cells whose states differ within a row (an earlier
 * cycle measured them one by one) keep being updated cell by cell.
 *
 * The weight of an element is its estimate after the update. The rank's
 * interference estimate is sum(max(0, x - w)) over the cycle; the measured
 * values and their exact sum stay what they were (the caller keeps them).
 *
 * No libuv, no I/O, no threads: one estimator belongs to one session and is
 * updated by one worker job at a time.
 */
#ifndef LA_ROBUST_H
#define LA_ROBUST_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct la_robust la_robust_t;

typedef struct la_robust_params {
  double tol;     /* relative band above and below the estimate (0.25) */
  double abs_tol; /* absolute band, e.g. 2 x the timer resolution (0) */
  double follow;  /* weight of a value inside the band (0.25) */
  double spike;   /* first cycle: isolated spike factor (4) */
  uint32_t confirm; /* suspect cycles that make a real rise (3), 1..255 */
  int neighbour;    /* 1: a rise to a neighbour's level is believed (1) */
  uint64_t stride[2]; /* a grid's row and plane strides (0: none): more
                         neighbours, i-s and i+s */
  int detect;    /* 1: flags come from interference detection, so an
                    unflagged rise is believed at once (0) */
} la_robust_params_t;

typedef struct la_robust_stats {
  double interference; /* sum over elements of max(0, x - w) */
  double robust_sum;   /* sum of the weights (plain: the exact one is the
                          compaction's statistics of them) */
  uint64_t flagged;    /* values not used: flagged or not finite */
  uint64_t suspect;    /* values above the band, held back this cycle */
  uint64_t rises;      /* estimates that jumped up (confirmed changes) */
  uint64_t cycles;     /* cycles seen, this one included */
  uint64_t positive;   /* weights above 0 (la_weights_cycle fills it,
                          weights.h; 0 here) */
  uint64_t coarse;     /* of those, weights of elements the timer does not
                          resolve (likewise) */
} la_robust_stats_t;

/* The defaults above. */
void la_robust_params_default(la_robust_params_t *p);

/* Bytes of state for n elements (what la_robust_new allocates). */
uint64_t la_robust_bytes(uint64_t n);

/* Creates an estimator for n elements (n >= 1). p NULL: defaults. Returns
 * 0 and *out, LA_EINVAL (bad parameters) or LA_ENOMEM. */
int la_robust_new(uint64_t n, const la_robust_params_t *p, la_robust_t **out);

/* One profiled cycle: reads x[0..n) and flags[0..n) (NULL: none flagged;
 * nonzero: flagged), writes the weights into w[0..n) (w may not alias x) and
 * fills *st (may be NULL; in a row-uniform cycle its counts and sums are
 * the rows' times the row length). A row-uniform cycle allocates 9 bytes
 * per row for the update's duration (without them it runs cell by cell).
 * Returns 0 or LA_EINVAL. */
int la_robust_update(la_robust_t *r, const double *x, const uint8_t *flags,
                     double *w, la_robust_stats_t *st);

/* la_robust_update(), then each weight whose measured value x[i] is a
 * whole number of ticks of q (ns per tick; 0: none) rounded to whole ticks
 * (robust.c says why), in the same pass over the weights where it can:
 * the same weights as rounding them after. st's sums are the estimates'
 * before the rounding. Returns 0 or LA_EINVAL (q < 0 among the others). */
int la_robust_update_ticks(la_robust_t *r, const double *x,
                           const uint8_t *flags, double *w,
                           la_robust_stats_t *st, double q);

/* Frees r. NULL is fine. */
void la_robust_free(la_robust_t *r);

/* Whole timer ticks: t rounded to the nearest integer, ties to even, by
 * adding and subtracting 1.5 * 2^52 (exact for |t| < LA_ROBUST_TICK_LIMIT;
 * the AVX2 kernels use the same operations, so they give the same bits). */
#define LA_ROBUST_TICK_MAGIC 0x1.8p52
#define LA_ROBUST_TICK_LIMIT 0x1p51
static inline double la_robust_round(double t) {
  return (t + LA_ROBUST_TICK_MAGIC) - LA_ROBUST_TICK_MAGIC;
}

/* Whether x is a whole number of ticks of q ns (inv = 1 / q). */
static inline int la_robust_whole_ticks(double x, double q, double inv) {
  double t = x * inv;
  return fabs(t) < LA_ROBUST_TICK_LIMIT && la_robust_round(t) * q == x;
}

#endif
