/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_plot.h: what the files of `lactl plot` share: the trace figure's
 * options and the two figures' entry points. lactl_plot.c parses the
 * command line and opens the source and the output; lactl_plot_trace.c
 * draws one rank's trace, lactl_plot_heat.c the ranks x cycles heat map,
 * both with the primitives of lactl_svg.h.
 */
#ifndef LACTL_PLOT_H
#define LACTL_PLOT_H

#include <stdint.h>
#include <stdio.h>

#include "lactl_util.h"

/* Options of the trace figure. */
typedef struct {
  const char *app, *raw;
  uint32_t rank;
  int have_rank;
  int full_range; /* --full-range: no clipping of outliers */
  int kind;       /* --weights: LA_WEIGHTS_*, or -1 (the set's default) */
} lactl_trace_opts_t;

/* Draws rank o->rank of the set t as an SVG document into f: its decoded
 * (or robust) values as a line, with raw_path (may be NULL; a LA_DUMP_RAW
 * file of the rank's little-endian doubles) the measured values as dots.
 * The rank must be present in t. Returns LACTL_OK, or LACTL_FAIL after a
 * message on stderr (out of memory, an unreadable or mismatched raw
 * file). */
int lactl_plot_trace(FILE *f, la_traceset_t *t, const lactl_trace_opts_t *o,
                     const char *raw_path);

/* Draws the ranks x cycles heat map of app's cycles first..last read from
 * s as an SVG document into f, with weights kind (LA_WEIGHTS_*, or -1 for
 * each set's default). Returns LACTL_OK, or LACTL_FAIL after a message on
 * stderr (no cycle in range, no ranks, a source error, out of memory). */
int lactl_plot_heat(FILE *f, lactl_src_t *s, const char *app, uint64_t first,
                    uint64_t last, int kind);

/* Draws slice `at` along axis (0 i, 1 j, 2 k; have_at 0: the middle) of
 * the global grid of t (a grid application, ranks placed by their
 * origins) as an SVG map into f, cells coloured by weights kind
 * (LA_WEIGHTS_*, or -1: the set's default). lactl_plot_grid.c. Returns
 * LACTL_OK, or LACTL_FAIL after a message (not a grid application, a
 * slice outside the grid, out of memory). */
int lactl_plot_grid(FILE *f, la_traceset_t *t, int kind, int axis,
                    int have_at, uint64_t at);
/* Parses "k=N" (or i=, j=) into *axis and *at. 0, or -1 when malformed. */
int lactl_plot_parse_slice(const char *s, int *axis, uint64_t *at);

#endif /* LACTL_PLOT_H */
