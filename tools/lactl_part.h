/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_part.h: the partitioners of `lactl whatif`: n weighted elements
 * into k parts (part[i] in 0..k-1), and what a partition costs and moves.
 *
 *   METIS k-way on a graph (CSR: xadj[n+1], adj[xadj[n]]; an empty graph
 *     is a pure weight balance);
 *   recursive coordinate bisection (RCB) on integer coordinates: the
 *     longest extent of the elements' bounding box is cut where the weight
 *     on each side matches its share of the parts, recursively;
 *   greedy: the heaviest element first, each onto the lightest part
 *     (longest processing time first; no locality at all).
 * Pure computation: no I/O, no global state. */
#ifndef LACTL_PART_H
#define LACTL_PART_H

#include <stddef.h>
#include <stdint.h>

/* From this many parts on, METIS runs in two levels (sqrt(k) parts, then
 * each into its share: lactl_part.c), for the time a direct k-way takes
 * into 10^4 parts. */
#define LACTL_METIS_TWO_LEVEL 2048

/* METIS_PartGraphKway with vertex weights scaled from w (the heaviest
 * element weighs as much as 32-bit weights allow, every element at least
 * 1), a fixed seed, parts balanced to METIS's default tolerance (in two
 * levels from LACTL_METIS_TWO_LEVEL parts on). Returns 0,
 * LA_ERANGE (more elements or edges than METIS's 32-bit indices take),
 * LA_ENOMEM, or LA_EINVAL (METIS failed); why gets the reason. */
int lactl_part_metis(uint64_t n, const double *w, const uint64_t *xadj,
                     const uint64_t *adj, uint32_t k, uint32_t *part, char *why,
                     size_t why_len);

/* RCB on xyz (3 coordinates per element). Returns 0 or LA_ENOMEM. */
int lactl_part_rcb(uint64_t n, const double *w, const uint64_t (*xyz)[3],
                   uint32_t k, uint32_t *part);

/* Greedy (LPT). Returns 0 or LA_ENOMEM. */
int lactl_part_greedy(uint64_t n, const double *w, uint32_t k, uint32_t *part);

/* Adds each element's weight to loads[part[i]] (loads has k entries, set
 * to 0 here). */
void lactl_part_loads(uint64_t n, const double *w, const uint32_t *part,
                      uint32_t k, double *loads);

/* max / mean of k loads (mean = their sum / k) into *imb, their maximum
 * into *max (either may be NULL); 1 when they are all 0. */
void lactl_part_imbalance(const double *loads, uint32_t k, double *max,
                          double *imb);

/* The parts matched to the current owners (owner[i] in 0..nranks-1):
 * pairs (rank, part) taken greedily by the number of elements they share,
 * largest first, each rank and part at most once; rank_part[r] is rank
 * r's part (or UINT32_MAX when none is left for it). Returns the elements
 * that stay (on the rank their part is matched to), or -1 (out of
 * memory). */
int64_t lactl_part_match(uint64_t n, const uint32_t *owner, uint32_t nranks,
                         const uint32_t *part, uint32_t k, uint32_t *rank_part);

#endif /* LACTL_PART_H */
