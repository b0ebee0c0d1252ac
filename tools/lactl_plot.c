/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_plot.c: `lactl plot`: hand-written SVG pictures of Trace-Sets; the
 * command line, the data source and the output file. The figures are drawn
 * by lactl_plot_trace.c and lactl_plot_heat.c (see lactl_plot.h).
 *
 *   lactl plot APP [CYCLE|latest] --rank R [--raw FILE|DIR] -o trace.svg
 *     one rank's per-element trace: the decoded (reconstructed) values as a
 *     line and, with --raw (a LA_DUMP_RAW file of little-endian doubles, or
 *     the LA_DUMP_RAW directory), the measured values as dots beneath it,
 *     like the per-element trace figures of the design study; axes with
 *     ticks and labels, a title naming app, rank, cycle, compaction mode and
 *     error.
 *   lactl plot APP --heatmap [--first N] [--last M] -o heat.svg
 *     ranks x cycles heat map of the load: each cell is the rank's total
 *     divided by the mean total of its cycle, on a diverging color scale
 *     around 1.0 (log scale: 1/2 and 2 are equally far from white), missing
 *     ranks hatched grey, with a legend and the per-cycle imbalance
 *     (max/mean) as bars above.
 *   lactl plot APP [CYCLE|latest] --grid [--slice k=N] -o grid.svg
 *     a grid application's cost on the mesh: one slice of the global grid,
 *     stitched over the ranks by their origins (lactl_plot_grid.c).
 *
 * No plotting library: the SVG is written by hand (lactl_svg.h). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lactl_plot.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl plot APP [CYCLE|latest] --rank R [--raw FILE|DIR]\n"
          "                  [--full-range] [--weights KIND] [-o FILE.svg]\n"
          "       lactl plot APP --heatmap [--first N] [--last M] [-o "
          "FILE.svg]\n"
          "                  [--global HOST:PORT | --db FILE] [--channel "
          "NAME]\n"
          "       lactl plot APP [CYCLE|latest] --grid [--slice i|j|k=N] "
          "[-o FILE.svg]\n"
          "                  [--global HOST:PORT | --db FILE] [--channel "
          "NAME]\n"
          "\n"
          "Writes an SVG picture (default: stdout).\n\n"
          "  --rank R            one rank's per-element trace of a cycle "
          "(default: the\n"
          "                      latest): the decoded values as a line\n"
          "  --full-range        show every value; by default the axis stops "
          "at 1.5x the\n"
          "                      99.5th percentile and outliers above are "
          "marked and\n"
          "                      counted\n"
          "  --raw FILE|DIR      with it, the measured values as dots: a "
          "LA_DUMP_RAW file\n"
          "                      (little-endian doubles) or the LA_DUMP_RAW "
          "directory\n"
          "                      (DIR/APP.rR.cCYCLE.f64)\n"
          "  --weights KIND      robust (default where every rank has them: "
          "the line,\n"
          "                      the scale and the heat map follow them; "
          "measured values\n"
          "                      drawn light, interfered elements marked) or "
          "measured\n"
          "  --heatmap           ranks x cycles map of rank total / cycle "
          "mean (blue:\n"
          "                      below the mean, white: at it, red: above; "
          "grey: missing)\n"
          "  --first N, --last M heat map: only cycles N..M\n"
          "  --grid              a grid application's global grid, one slice, "
          "cells\n"
          "                      coloured by weight / mean (ranks placed by "
          "their origins)\n"
          "  --slice k=N         the slice (i=, j= or k=; default: the middle "
          "k)\n"
          "  -o, --output FILE   write to FILE\n" LACTL_CHANNEL_HELP
              LACTL_COMMON_HELP
          "\nExit status: 0 done, 1 unreachable, not found or unreadable "
          "--raw, 2 usage.\n");
}

/* The parsed command line. */
typedef struct {
  lactl_common_t common;
  lactl_trace_opts_t trace;
  const char *out; /* -o FILE (NULL: stdout) */
  const char *app;
  int heat;        /* --heatmap */
  int grid;        /* --grid (lactl_plot_grid.c) */
  int axis, have_at;
  uint64_t at;     /* --slice */
  lactl_sel_t sel; /* the trace's cycle */
  uint64_t first, last;
} plot_args_t;

/* Parses the options into a; *have_range is set by --first/--last. Returns
 * -1 to go on, LACTL_OK for -h (help printed), LACTL_USAGE after a
 * message. */
static int plot_opts(int argc, char **argv, plot_args_t *a, int *have_range) {
  static const struct option lo[] = {
      {"rank", 1, 0, 'r'},       {"raw", 1, 0, 'R'},
      {"heatmap", 0, 0, 'H'},    {"first", 1, 0, 'f'},
      {"last", 1, 0, 'l'},       {"output", 1, 0, 'o'},
      {"full-range", 0, 0, 'F'}, {"weights", 1, 0, 'W'},
      {"grid", 0, 0, 'G'},       {"slice", 1, 0, 'S'},
      LACTL_CHANNEL_OPTION,      LACTL_COMMON_OPTIONS,
      {0, 0, 0, 0}};
  int c;
  uint64_t rank;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
    if (lactl_common_opt(&a->common, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'r':
        if (lactl_parse_u64(optarg, &rank) || rank >= (1u << 24))
          return lactl_usage_err("plot", "--rank '%s': not a rank", optarg);
        a->trace.rank = (uint32_t)rank;
        a->trace.have_rank = 1;
        break;
      case 'R':
        a->trace.raw = optarg;
        break;
      case 'F':
        a->trace.full_range = 1;
        break;
      case 'W':
        if (lactl_parse_weights(optarg, &a->trace.kind))
          return lactl_usage_err("plot", "--weights '%s': measured or robust",
                                 optarg);
        break;
      case 'H':
        a->heat = 1;
        break;
      case 'G':
        a->grid = 1;
        break;
      case 'S':
        if (lactl_plot_parse_slice(optarg, &a->axis, &a->at))
          return lactl_usage_err("plot", "--slice '%s': i=N, j=N or k=N",
                                 optarg);
        a->have_at = 1;
        break;
      case 'f':
      case 'l':
        if (lactl_parse_u64(optarg, c == 'f' ? &a->first : &a->last))
          return lactl_usage_err("plot", "--%s '%s': not a cycle number",
                                 c == 'f' ? "first" : "last", optarg);
        *have_range = 1;
        break;
      case 'o':
        a->out = optarg;
        break;
      default:
        return lactl_opt_err("plot", argv, lo, "ho:");
    }
  }
  return -1;
}

/* Parses the command line into a and checks that its parts go together.
 * Returns -1 to go on, LACTL_OK for -h, LACTL_USAGE after a message. */
static int plot_args(int argc, char **argv, plot_args_t *a) {
  int have_range = 0;
  memset(a, 0, sizeof *a);
  a->trace.kind = -1;
  a->last = UINT64_MAX;
  int rc = plot_opts(argc, argv, a, &have_range);
  if (rc != -1) return rc;
  if (a->common.json)
    return lactl_usage_err("plot", "plot writes SVG, not JSON");
  if (optind >= argc) return lactl_usage_err("plot", "which application?");
  a->app = argv[optind];
  const char *cyc = optind + 1 < argc ? argv[optind + 1] : NULL;
  if (argc - optind > 2)
    return lactl_usage_err("plot", "unexpected argument '%s'",
                           argv[optind + 2]);
  if (a->heat && (a->trace.have_rank || a->trace.raw || cyc))
    return lactl_usage_err("plot",
                           "--heatmap takes --first/--last, not a "
                           "cycle, --rank or --raw");
  a->axis = a->have_at ? a->axis : 2;
  if (a->grid && (a->heat || a->trace.have_rank || a->trace.raw))
    return lactl_usage_err("plot", "--grid takes a cycle and --slice, not "
                                   "--heatmap, --rank or --raw");
  if (a->have_at && !a->grid)
    return lactl_usage_err("plot", "--slice is for --grid");
  if (!a->heat && !a->grid && !a->trace.have_rank)
    return lactl_usage_err("plot",
                           "say --rank R (a trace), --heatmap or --grid");
  if (!a->heat && have_range)
    return lactl_usage_err("plot", "--first/--last are for --heatmap");
  if (a->first > a->last)
    return lactl_usage_err("plot", "--first is after --last");
  if (!a->heat && lactl_parse_sel(cyc, 0, &a->sel))
    return lactl_usage_err("plot", "'%s' is not a cycle number or 'latest'",
                           cyc);
  return -1;
}

/* The trace's set into *t, checked to hold the rank, and the raw file's
 * path into raw_path (cap bytes) when --raw names the LA_DUMP_RAW
 * directory; *rp is the raw file to read (NULL: none). Returns LACTL_OK or
 * LACTL_FAIL after a message. */
static int plot_trace_set(lactl_src_t *s, const plot_args_t *a,
                          la_traceset_t **t, char *raw_path, size_t cap,
                          const char **rp) {
  const uint32_t rank = a->trace.rank;
  int rc = LACTL_OK;
  *rp = a->trace.raw;
  int e = lactl_src_set(s, a->app, a->sel.latest, a->sel.first, t);
  if (e) {
    rc = lactl_src_fail("plot", s, e);
  } else if (rank >= la_traceset_nprocs(*t)) {
    fprintf(stderr, "lactl plot: %s has %u ranks: no rank %u\n", a->app,
            la_traceset_nprocs(*t), rank);
    rc = LACTL_FAIL;
  } else if (!la_traceset_has_rank(*t, rank)) {
    fprintf(stderr, "lactl plot: rank %u is missing from %s cycle %llu\n", rank,
            a->app, (unsigned long long)la_traceset_cycle(*t));
    rc = LACTL_FAIL;
  }
  struct stat sb;
  if (rc == LACTL_OK && *rp && stat(*rp, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    snprintf(raw_path, cap, "%s/%s.r%u.c%llu.f64", *rp, a->app, rank,
             (unsigned long long)la_traceset_cycle(*t));
    *rp = raw_path;
  }
  return rc;
}

int lactl_plot_main(int argc, char **argv) {
  plot_args_t a;
  int rc = plot_args(argc, argv, &a);
  if (rc != -1) return rc;
  lactl_src_t *s;
  int orc = lactl_src_open("plot", &a.common, &s);
  if (orc) return orc;
  la_traceset_t *t = NULL;
  char raw_path[4200];
  const char *rp = NULL;
  rc = LACTL_OK;
  if (a.grid) {
    int e = lactl_src_set(s, a.app, a.sel.latest, a.sel.first, &t);
    if (e) rc = lactl_src_fail("plot", s, e);
  } else if (!a.heat) {
    rc = plot_trace_set(s, &a, &t, raw_path, sizeof raw_path, &rp);
  }
  FILE *f = rc == LACTL_OK ? lactl_out_open("plot", a.out) : NULL;
  if (rc == LACTL_OK && !f) rc = LACTL_FAIL;
  if (rc == LACTL_OK && a.grid)
    rc = lactl_plot_grid(f, t, a.trace.kind, a.axis, a.have_at, a.at);
  else if (rc == LACTL_OK)
    rc = a.heat ? lactl_plot_heat(f, s, a.app, a.first, a.last, a.trace.kind)
                : lactl_plot_trace(f, t, &a.trace, rp);
  la_traceset_free(t);
  lactl_src_close(s);
  if (f) {
    int rc2 = lactl_out_close("plot", a.out, f);
    if (!rc) rc = rc2;
    if (rc && a.out && strcmp(a.out, "-")) remove(a.out);
  }
  return rc;
}
