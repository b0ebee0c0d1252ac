/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_export.c: `lactl export APP [CYCLE|latest|FIRST:LAST] --format
 * csv|json|metis [-o FILE] [--max-weight N]`: per-element weights of one
 * cycle or a range of cycles, decoded from the compact traces:
 *   csv    a comment line with the format version, the header
 *          cycle,rank,element,global_element,value,id,i,j,k, then one line
 *          per element of every present rank (%.17g values: exact; id and
 *          i,j,k in the application's numbering, lactl_numbering.h, with a
 *          note on stderr where there is none);
 *   json   {"app", "metric", "unit", "sets": [one object per cycle with
 *          vtxdist, exact totals and per-rank value arrays (null for a
 *          missing rank) with the rank's numbering: its ids, and dims and
 *          origin for a grid rank]};
 *   metis  one cycle: one integer vertex weight per line in global element
 *          order, >= 1, the heaviest element = --max-weight (default 1000),
 *          as la_traceset_metis_weights computes them (docs/lactl.md);
 *   npy    the CSV's rows as a NumPy structured array, streamed, and a
 *          JSON sidecar (lactl_npy.c).
 *   vtk    one cycle: a legacy VTK file (lactl_vtk.c).
 * Elements of missing ranks are left out of csv, null in json, and get the
 * mean weight in metis; each case is reported on stderr.
 *
 * --weights measured|robust picks the measured values or the robust ones
 * with interference removed (docs/fidelity.md); without it, robust when
 * every present rank of the cycle carries them ($LA_WEIGHTS may say
 * otherwise). A cycle without robust weights is exported measured, with a
 * note on stderr, when robust ones were asked for. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_npy.h"
#include "lactl_numbering.h"
#include "lactl_vtk.h"
#include "lactl_util.h"

enum { F_CSV, F_JSON, F_METIS, F_NPY, F_VTK };

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl export APP [CYCLE|latest|FIRST:LAST]\n"
          "                    [--format csv|json|metis|npy|vtk] [-o FILE]\n"
          "                    [--max-weight N] [--global HOST:PORT | --db "
          "FILE]\n"
          "                    [--channel NAME]\n"
          "\n"
          "Writes the per-element weights (decoded values) of application "
          "APP for one\ncycle (default: the latest) or the cycles FIRST..LAST "
          "(either may be left\nout: 10:, :40).\n\n"
          "  --format csv        cycle,rank,element,global_element,value,id,"
          "i,j,k\n"
          "                      (default; id, i,j,k: the application's "
          "numbering)\n"
          "  --format json       one object per cycle, per-rank value arrays "
          "(or --json)\n"
          "  --format metis      one cycle: a METIS vertex-weight file, one "
          "integer >= 1\n"
          "                      per line in global element order\n"
          "  --format npy        the CSV's rows as a NumPy structured array\n"
          "                      (needs -o FILE; FILE.json describes it)\n"
          "  --format vtk        one cycle: a VTK file (ParaView, VisIt) of "
          "the measured\n"
          "                      and robust weights: the global grid, or one "
          "cell per id\n"
          "  --weights KIND      measured or robust (interference removed; "
          "default: robust\n"
          "                      when every rank of the cycle has them)\n"
          "  --max-weight N      metis: weight of the heaviest element "
          "(default 1000)\n"
          "  -o, --output FILE   write to FILE (default: "
          "stdout)\n" LACTL_CHANNEL_HELP LACTL_COMMON_HELP
          "\nExit status: 0 done, 1 unreachable or not found, 2 usage.\n");
}

static void note_missing(const la_traceset_t *t, const char *what) {
  const uint32_t *m;
  size_t n = la_traceset_missing(t, &m);
  char r[200];
  if (n)
    fprintf(stderr,
            "lactl export: %s cycle %llu is %s: rank%s %s missing, "
            "%s\n",
            la_traceset_app_id(t), (unsigned long long)la_traceset_cycle(t),
            lactl_state_name(lactl_set_state(t)), n > 1 ? "s" : "",
            lactl_fmt_ranks(m, n, r, sizeof r), what);
}

static int put_csv(FILE *f, const la_traceset_t *t, double *w,
                   lactl_num_t *num) {
  uint32_t np = la_traceset_nprocs(t);
  unsigned long long cyc = (unsigned long long)la_traceset_cycle(t), g = 0;
  note_missing(t, "left out of the CSV");
  for (uint32_t r = 0; r < np; r++) {
    uint64_t ne = la_traceset_rank_elements(t, r);
    const int64_t *id;
    const uint64_t *c;
    int kind;
    if (la_traceset_has_rank(t, r)) {
      if (la_traceset_rank_weights(t, r, w) ||
          lactl_num_rank(num, t, r, &id, &c, &kind))
        return -1;
      for (uint64_t e = 0; e < ne; e++, c += 3)
        fprintf(f, "%llu,%u,%llu,%llu,%.17g,%lld,%llu,%llu,%llu\n", cyc, r,
                (unsigned long long)e, g + e, w[e], (long long)id[e],
                (unsigned long long)c[0], (unsigned long long)c[1],
                (unsigned long long)c[2]);
    }
    g += ne;
  }
  return 0;
}

/* Rank r's numbering as JSON members: "numbering", "ids" (one per
 * element), and for a grid rank "dims" and "origin". */
static int put_json_ids(FILE *f, const la_traceset_t *t, uint32_t r,
                        lactl_num_t *num) {
  static const char *const names[] = {"concat", "app", "grid"};
  const int64_t *id;
  const uint64_t *c;
  int kind;
  uint64_t ne = la_traceset_rank_elements(t, r), dims[3], o[3];
  if (lactl_num_rank(num, t, r, &id, &c, &kind)) return -1;
  fprintf(f, ", \"numbering\": \"%s\"",
          names[kind >= 0 && kind <= 2 ? kind : 0]);
  if (la_traceset_rank_grid(t, r, dims, o, NULL) == 0)
    fprintf(f, ", \"dims\": [%llu, %llu, %llu], \"origin\": [%llu, %llu, %llu]",
            (unsigned long long)dims[0], (unsigned long long)dims[1],
            (unsigned long long)dims[2], (unsigned long long)o[0],
            (unsigned long long)o[1], (unsigned long long)o[2]);
  fputs(",\n     \"ids\": [", f);
  for (uint64_t e = 0; e < ne; e++)
    fprintf(f, "%s%lld", e ? (e % 8 ? ", " : ",\n      ") : "",
            (long long)id[e]);
  fputc(']', f);
  return 0;
}

static int put_json(FILE *f, const la_traceset_t *t, double *w, int first,
                    lactl_num_t *num) {
  uint32_t np = la_traceset_nprocs(t);
  const uint32_t *m;
  size_t nm = la_traceset_missing(t, &m);
  double imb;
  note_missing(t, "null in the JSON");
  fprintf(f,
          "%s\n  {\"cycle\": %llu, \"state\": \"%s\", \"nprocs\": %u, "
          "\"missing\": [",
          first ? "" : ",", (unsigned long long)la_traceset_cycle(t),
          lactl_state_name(lactl_set_state(t)), np);
  for (size_t i = 0; i < nm; i++) fprintf(f, "%s%u", i ? ", " : "", m[i]);
  fprintf(
      f, "], \"weights\": \"%s\"",
      la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST ? "robust" : "measured");
  fprintf(f, ", \"time_ns\": %llu, \"imbalance\": ",
          (unsigned long long)la_traceset_time_ns(t));
  lactl_json_num(f, la_traceset_imbalance(t, &imb) ? NAN : imb);
  fprintf(f, ",\n   \"vtxdist\": [0");
  uint64_t g = 0;
  for (uint32_t r = 0; r < np; r++) {
    g += la_traceset_rank_elements(t, r);
    fprintf(f, ", %llu", (unsigned long long)g);
  }
  fprintf(f, "],\n   \"totals\": [");
  for (uint32_t r = 0; r < np; r++) {
    double s = NAN;
    la_traceset_rank_stats(t, r, &s, NULL, NULL);
    if (r) fputs(", ", f);
    lactl_json_num(f, s);
  }
  fprintf(f, "],\n   \"ranks\": [");
  for (uint32_t r = 0; r < np; r++) {
    uint64_t ne = la_traceset_rank_elements(t, r);
    fprintf(f, "%s\n    {\"rank\": %u, \"values\": ", r ? "," : "", r);
    if (!la_traceset_has_rank(t, r)) {
      fputs("null}", f);
      continue;
    }
    if (la_traceset_rank_weights(t, r, w)) return -1;
    fputc('[', f);
    for (uint64_t e = 0; e < ne; e++) {
      if (e) fputs(e % 8 ? ", " : ",\n     ", f);
      lactl_json_num(f, w[e]);
    }
    fputc(']', f);
    if (put_json_ids(f, t, r, num)) return -1;
    fputc('}', f);
  }
  fprintf(f, "\n   ]}");
  return 0;
}

static int put_metis(const char *cmd, FILE *f, const la_traceset_t *t,
                     int64_t max_weight) {
  uint64_t n = la_traceset_elements(t);
  int64_t *v = malloc((n ? n : 1) * sizeof *v);
  double scale;
  if (!v) {
    fprintf(stderr, "lactl %s: out of memory\n", cmd);
    return LACTL_FAIL;
  }
  if (la_traceset_metis_weights(t, v, max_weight, &scale)) {
    fprintf(stderr, "lactl %s: %s cycle %llu has no finite value to weigh\n",
            cmd, la_traceset_app_id(t),
            (unsigned long long)la_traceset_cycle(t));
    free(v);
    return LACTL_FAIL;
  }
  note_missing(t, "its elements get the mean weight");
  for (uint64_t i = 0; i < n; i++) fprintf(f, "%lld\n", (long long)v[i]);
  free(v);
  return LACTL_OK;
}

int lactl_export_main(int argc, char **argv) {
  static const struct option lo[] = {{"format", 1, 0, 'F'},
                                     {"output", 1, 0, 'o'},
                                     {"max-weight", 1, 0, 'M'},
                                     {"weights", 1, 0, 'W'},
                                     LACTL_CHANNEL_OPTION,
                                     LACTL_COMMON_OPTIONS,
                                     {0, 0, 0, 0}};
  lactl_common_t o = {0};
  const char *out = NULL;
  int c, fmt = F_CSV, kind = -1; /* -1: the client's default */
  uint64_t maxw = 1000;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'F':
        if (!strcmp(optarg, "csv"))
          fmt = F_CSV;
        else if (!strcmp(optarg, "json"))
          fmt = F_JSON;
        else if (!strcmp(optarg, "metis"))
          fmt = F_METIS;
        else if (!strcmp(optarg, "npy"))
          fmt = F_NPY;
        else if (!strcmp(optarg, "vtk")) /* lactl_vtk.c */
          fmt = F_VTK;
        else
          return lactl_usage_err(
              "export", "--format '%s': csv, json, metis, npy or vtk", optarg);
        break;
      case 'o':
        out = optarg;
        break;
      case 'M':
        if (lactl_parse_u64(optarg, &maxw) || maxw < 1 || maxw > (1ull << 53))
          return lactl_usage_err("export", "--max-weight '%s': 1 .. 2^53",
                                 optarg);
        break;
      case 'W':
        if (lactl_parse_weights(optarg, &kind))
          return lactl_usage_err("export", "--weights '%s': measured or robust",
                                 optarg);
        break;
      default:
        return lactl_opt_err("export", argv, lo, "ho:");
    }
  }
  if (o.json) fmt = F_JSON; /* --json: the same as --format json */
  if (optind >= argc) return lactl_usage_err("export", "which application?");
  if (argc - optind > 2)
    return lactl_usage_err("export", "unexpected argument '%s'",
                           argv[optind + 2]);
  const char *app = argv[optind];
  lactl_sel_t sel;
  if (lactl_parse_sel(optind + 1 < argc ? argv[optind + 1] : NULL, 1, &sel))
    return lactl_usage_err("export", "'%s' is not CYCLE, latest or FIRST:LAST",
                           argv[optind + 1]);
  if ((fmt == F_METIS || fmt == F_VTK) && sel.range)
    return lactl_usage_err("export", "--format %s takes one cycle",
                           fmt == F_VTK ? "vtk" : "metis");
  if (fmt == F_NPY && (!out || !strcmp(out, "-")))
    return lactl_usage_err("export", "--format npy needs -o FILE");

  lactl_src_t *s;
  int orc = lactl_src_open("export", &o, &s);
  if (orc) return orc;
  uint64_t *tags = NULL;
  size_t nt = 1;
  int rc = sel.range ? lactl_src_select(s, app, &sel, &tags, &nt) : 0;
  if (rc) {
    rc = lactl_src_fail("export", s, rc);
    lactl_src_close(s);
    return rc;
  }
  FILE *f = lactl_out_open("export", out);
  if (!f) {
    free(tags);
    lactl_src_close(s);
    return LACTL_FAIL;
  }
  double *w = NULL;
  size_t wcap = 0;
  rc = LACTL_OK;
  lactl_npy_t *npy = fmt == F_NPY ? lactl_npy_start("export", f, out) : NULL;
  if (fmt == F_NPY && !npy) rc = LACTL_FAIL;
  lactl_num_t *num = lactl_num_new(s, app);
  if (!num) rc = LACTL_FAIL;
  for (size_t i = 0; i < nt && rc == LACTL_OK; i++) {
    lactl_progress("export", "cycle", i, nt);
    la_traceset_t *t;
    int e = tags ? lactl_src_set(s, app, 0, tags[i], &t)
                 : lactl_src_set(s, app, sel.latest, sel.first, &t);
    if (e) {
      rc = lactl_src_fail("export", s, e);
      break;
    }
    if (kind >= 0 && la_traceset_set_weights(t, kind) == LA_ENOTFOUND)
      fprintf(stderr,
              "lactl export: %s cycle %llu: not every rank has robust "
              "weights; exporting the measured ones\n",
              app, (unsigned long long)la_traceset_cycle(t));
    if (i == 0 && fmt == F_CSV) lactl_csv_head(f, app, t);
    if (i == 0 && fmt == F_JSON) {
      fprintf(
          f, "{\"format_version\": %d, \"app\": ", LACTL_EXPORT_FORMAT_VERSION);
      lactl_json_str(f, app);
      fprintf(f, ", \"metric\": ");
      lactl_json_str(f, la_traceset_metric(t));
      fprintf(f, ", \"unit\": ");
      lactl_json_str(f, la_traceset_unit(t));
      fprintf(f, ", \"sets\": [");
    }
    /* room for the largest rank */
    size_t need = 1;
    for (uint32_t r = 0; r < la_traceset_nprocs(t); r++)
      if (la_traceset_rank_elements(t, r) > need)
        need = (size_t)la_traceset_rank_elements(t, r);
    if (need > wcap) {
      double *nw = realloc(w, need * sizeof *w);
      if (!nw) {
        fprintf(stderr, "lactl export: out of memory\n");
        rc = LACTL_FAIL;
      } else {
        w = nw;
        wcap = need;
      }
    }
    if (rc == LACTL_OK) {
      if (fmt == F_METIS)
        rc = put_metis("export", f, t, (int64_t)maxw);
      else if (fmt == F_NPY) {
        note_missing(t, "left out of the array");
        if (lactl_npy_set(npy, t, w)) rc = LACTL_FAIL;
      } else if (fmt == F_VTK)
        rc = lactl_vtk_write(f, num, t);
      else if ((fmt == F_CSV ? put_csv(f, t, w, num)
                             : put_json(f, t, w, i == 0, num)))
        rc = LACTL_FAIL;
    }
    la_traceset_free(t);
  }
  lactl_progress("export", "cycle", nt, nt);
  if (fmt == F_JSON && rc == LACTL_OK) fprintf(f, "\n]}\n");
  if (npy && lactl_npy_finish(npy, rc == LACTL_OK)) rc = LACTL_FAIL;
  if ((fmt == F_CSV || fmt == F_JSON) && rc == LACTL_OK)
    lactl_num_note(num, "export");
  lactl_num_free(num);
  free(w);
  free(tags);
  lactl_src_close(s);
  int rc2 = lactl_out_finish("export", out, f, rc == LACTL_OK);
  return rc ? rc : rc2; /* on failure nothing reached stdout or -o FILE */
}
