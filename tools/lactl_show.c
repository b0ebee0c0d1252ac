/* lactl_show.c: `lactl show APP [CYCLE|latest] [--global HOST:PORT | --db
 * FILE] [--json]`: one Trace-Set: complete, partial or open, which ranks
 * are missing and why (the reason recorded for each), metric and unit,
 * close time, elements, per-rank totals (exact: the raw sums measured
 * before compaction) with a small bar, the
 * imbalance (max/mean of the totals), the compaction ratio (raw bytes = 8 x
 * elements against encoded bytes) and the error the compaction achieved on
 * each rank (max |err|, CV).
 *
 * Everything comes from the set's exact statistics and encoded sizes:
 * nothing is decoded (`lactl export` and `lactl plot` decode). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "lactl_util.h"

#define BAR 20

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: lactl show APP [CYCLE|latest] [--global HOST:PORT | --db "
      "FILE] [--json]\n"
      "\n"
      "Shows one Trace-Set of application APP (default: the latest "
      "cycle): complete,\npartial or open, the missing ranks and why, "
      "per-rank totals (exact) with a bar,\nthe imbalance (max/mean), "
      "elements, the compaction ratio (8 bytes per element\nagainst the "
      "encoded bytes) and the error achieved per rank.\n\n" LACTL_COMMON_HELP
      "  --json              one JSON object\n"
      "\nExit status: 0 done, 1 unreachable or not found, 2 usage.\n");
}

/* Per-rank figures, NaN where unknown. */
typedef struct {
  int present;
  uint64_t elements;
  double total, min, max, err_max, err_rmse, err_cv;
  size_t bytes;
  const char *mode;
} rank_t;

static void collect(const la_traceset_t *t, rank_t *r, double *imb,
                    uint64_t *raw, uint64_t *enc, double *sum) {
  uint32_t np = la_traceset_nprocs(t);
  *raw = *enc = 0;
  *sum = 0;
  for (uint32_t i = 0; i < np; i++) {
    rank_t *x = &r[i];
    x->elements = la_traceset_rank_elements(t, i);
    x->total = x->min = x->max = NAN;
    x->err_max = x->err_rmse = x->err_cv = NAN;
    x->bytes = 0;
    x->mode = "-";
    x->present = la_traceset_has_rank(t, i);
    if (!x->present) continue;
    la_traceset_rank_stats(t, i, &x->total, &x->min, &x->max);
    la_traceset_rank_error(t, i, &x->err_max, &x->err_rmse, &x->err_cv,
                           &x->bytes);
    const la_trace_t *tr = la__traceset_trace(t, i);
    if (tr) x->mode = la_compact_mode_name(la_trace_mode(tr));
    *raw += 8 * x->elements;
    *enc += x->bytes;
    *sum += x->total;
  }
  if (la_traceset_imbalance(t, imb) != 0) *imb = NAN;
}

static void print_json(const la_traceset_t *t, const rank_t *r, double imb,
                       uint64_t raw, uint64_t enc, double sum) {
  uint32_t np = la_traceset_nprocs(t);
  const uint32_t *miss;
  size_t nm = la_traceset_missing(t, &miss);
  printf("{\"app\": ");
  lactl_json_str(stdout, la_traceset_app_id(t));
  printf(
      ", \"cycle\": %llu, \"state\": \"%s\", \"complete\": %s, "
      "\"nprocs\": %u, \"missing\": [",
      (unsigned long long)la_traceset_cycle(t),
      lactl_state_name(lactl_set_state(t)),
      la_traceset_complete(t) ? "true" : "false", np);
  for (size_t i = 0; i < nm; i++) printf("%s%u", i ? ", " : "", miss[i]);
  printf("], \"missing_reasons\": [");
  for (size_t i = 0, k = 0; i < nm; i++) {
    const char *why = la_traceset_missing_reason(t, miss[i]);
    if (!why) continue;
    printf("%s{\"rank\": %u, \"reason\": ", k++ ? ", " : "", miss[i]);
    lactl_json_str(stdout, why);
    printf("}");
  }
  printf("],\n \"metric\": ");
  lactl_json_str(stdout, la_traceset_metric(t));
  printf(", \"unit\": ");
  lactl_json_str(stdout, la_traceset_unit(t));
  printf(", \"time_ns\": %llu, \"elements\": %llu, \"total\": ",
         (unsigned long long)la_traceset_time_ns(t),
         (unsigned long long)la_traceset_elements(t));
  lactl_json_num(stdout, sum);
  printf(", \"imbalance\": ");
  lactl_json_num(stdout, imb);
  printf(",\n \"raw_bytes\": %llu, \"encoded_bytes\": %llu, \"ratio\": ",
         (unsigned long long)raw, (unsigned long long)enc);
  lactl_json_num(stdout, enc ? (double)raw / (double)enc : NAN);
  printf(",\n \"ranks\": [");
  for (uint32_t i = 0; i < np; i++) {
    const rank_t *x = &r[i];
    printf("%s\n  {\"rank\": %u, \"present\": %s, \"elements\": %llu",
           i ? "," : "", i, x->present ? "true" : "false",
           (unsigned long long)x->elements);
    if (x->present) {
      double f[] = {x->total,   x->min,      x->max,
                    x->err_max, x->err_rmse, x->err_cv};
      const char *k[] = {"total", "min", "max", "max_abs_error", "rmse", "cv"};
      for (int j = 0; j < 6; j++) {
        printf(", \"%s\": ", k[j]);
        lactl_json_num(stdout, f[j]);
      }
      printf(", \"bytes\": %zu, \"ratio\": ", x->bytes);
      lactl_json_num(stdout, x->bytes
                                 ? 8.0 * (double)x->elements / (double)x->bytes
                                 : NAN);
      printf(", \"mode\": \"%s\"", x->mode);
    } else {
      const char *why = la_traceset_missing_reason(t, i);
      printf(", \"missing_reason\": ");
      if (why)
        lactl_json_str(stdout, why);
      else
        printf("null");
    }
    printf("}");
  }
  printf("\n ]}\n");
}

static int print_text(const la_traceset_t *t, const rank_t *r, double imb,
                      uint64_t raw, uint64_t enc, double sum) {
  uint32_t np = la_traceset_nprocs(t);
  const uint32_t *miss;
  size_t nm = la_traceset_missing(t, &miss);
  const char *unit = la_traceset_unit(t);
  int state = lactl_set_state(t);
  char b1[64], b2[64], ranks[256];
  printf("%s cycle %llu: %s", la_traceset_app_id(t),
         (unsigned long long)la_traceset_cycle(t), lactl_state_name(state));
  if (nm)
    printf(", rank%s %s missing (%u of %u present)", nm > 1 ? "s" : "",
           lactl_fmt_ranks(miss, nm, ranks, sizeof ranks), np - (uint32_t)nm,
           np);
  else
    printf(", all %u ranks", np);
  printf("\n");
  printf("  metric      %s%s%s%s\n",
         *la_traceset_metric(t) ? la_traceset_metric(t) : "?",
         *unit ? " (" : "", unit, *unit ? ")" : "");
  if (state == LACTL_OPEN)
    printf("  time        open: the GlobalAgent still waits for ranks\n");
  else
    printf("  closed      %s\n",
           lactl_fmt_time(la_traceset_time_ns(t), b1, sizeof b1));
  uint64_t ne = la_traceset_elements(t);
  printf("  elements    %llu (%.6g per rank)\n", (unsigned long long)ne,
         np ? (double)ne / np : 0.0);
  printf("  total       %s %s (exact, ranks present)\n",
         lactl_fmt_num(sum, 10, b1, sizeof b1), unit);
  printf("  imbalance   %s (max/mean of rank totals)\n",
         lactl_fmt_num(imb, 4, b1, sizeof b1));
  printf("  compaction  %llu raw bytes -> %llu encoded: %sx smaller\n\n",
         (unsigned long long)raw, (unsigned long long)enc,
         lactl_fmt_ratio(enc ? (double)raw / (double)enc : NAN, b2, sizeof b2));

  double mx = 0, mean = nm < np ? sum / (double)(np - nm) : NAN;
  for (uint32_t i = 0; i < np; i++)
    if (r[i].present && r[i].total > mx) mx = r[i].total;
  char tot_head[64];
  snprintf(tot_head, sizeof tot_head, "TOTAL%s%s%s", *unit ? " (" : "", unit,
           *unit ? ")" : "");
  const char *heads[] = {"RANK",  "ELEMENTS", tot_head, "LOAD",     "/MEAN",
                         "BYTES", "RATIO",    "MODE",   "MAX|ERR|", "CV"};
  lactl_table_t *tb = lactl_table_new(10, heads, "rrrlrrrlrr");
  int bad = tb == NULL;
  for (uint32_t i = 0; !bad && i < np; i++) {
    const rank_t *x = &r[i];
    char rk[16], el[24], tot[32], bar[BAR + 1], rel[16], by[24], ra[16], em[24],
        cv[24];
    snprintf(rk, sizeof rk, "%u", i);
    snprintf(el, sizeof el, "%llu", (unsigned long long)x->elements);
    if (!x->present) {
      char why[300];
      const char *w = la_traceset_missing_reason(t, i);
      snprintf(why, sizeof why, "(missing%s%s)", w ? ": " : "", w ? w : "");
      for (char *p = why; *p; p++) /* no control characters */
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
      const char *row[] = {rk, el, "-", why, "", "", "", "", "", ""};
      bad = lactl_table_row(tb, row) != 0;
      continue;
    }
    lactl_fmt_num(x->total, 6, tot, sizeof tot);
    int w = mx > 0 && x->total > 0 ? (int)lround(x->total / mx * BAR) : 0;
    if (w > BAR) w = BAR;
    if (w == 0 && x->total > 0) w = 1;
    memset(bar, '#', (size_t)w);
    memset(bar + w, '.', (size_t)(BAR - w));
    bar[BAR] = 0;
    lactl_fmt_num(mean > 0 ? x->total / mean : NAN, 3, rel, sizeof rel);
    snprintf(by, sizeof by, "%zu", x->bytes);
    lactl_fmt_ratio(
        x->bytes ? 8.0 * (double)x->elements / (double)x->bytes : NAN, ra,
        sizeof ra);
    if (strcmp(ra, "-")) strcat(ra, "x");
    lactl_fmt_num(x->err_max, 3, em, sizeof em);
    lactl_fmt_num(x->err_cv, 3, cv, sizeof cv);
    const char *row[] = {rk, el, tot, bar, rel, by, ra, x->mode, em, cv};
    bad = lactl_table_row(tb, row) != 0;
  }
  if (bad) {
    lactl_table_free(tb);
    return LACTL_FAIL;
  }
  lactl_table_print(stdout, tb, 2);
  lactl_table_free(tb);
  return LACTL_OK;
}

int lactl_show_main(int argc, char **argv) {
  static const struct option lo[] = {LACTL_COMMON_OPTIONS, {0, 0, 0, 0}};
  lactl_common_t o = {0};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    if (c == 'h') {
      usage(stdout);
      return LACTL_OK;
    }
    return lactl_usage_err("show", "unknown or incomplete option '%s'",
                           argv[optind - 1]);
  }
  if (optind >= argc) return lactl_usage_err("show", "which application?");
  if (argc - optind > 2)
    return lactl_usage_err("show", "unexpected argument '%s'",
                           argv[optind + 2]);
  lactl_sel_t sel;
  const char *app = argv[optind];
  if (lactl_parse_sel(optind + 1 < argc ? argv[optind + 1] : NULL, 0, &sel))
    return lactl_usage_err("show", "'%s' is not a cycle number or 'latest'",
                           argv[optind + 1]);
  lactl_src_t *s;
  int orc = lactl_src_open("show", &o, &s);
  if (orc) return orc;
  la_traceset_t *t;
  int rc = lactl_src_set(s, app, sel.latest, sel.first, &t);
  if (rc) {
    rc = lactl_src_fail("show", s, rc);
    lactl_src_close(s);
    return rc;
  }
  lactl_src_close(s);
  uint32_t np = la_traceset_nprocs(t);
  rank_t *r = calloc(np ? np : 1, sizeof *r);
  if (!r) {
    la_traceset_free(t);
    fprintf(stderr, "lactl show: out of memory\n");
    return LACTL_FAIL;
  }
  double imb, sum;
  uint64_t raw, enc;
  collect(t, r, &imb, &raw, &enc, &sum);
  if (o.json)
    print_json(t, r, imb, raw, enc, sum);
  else
    rc = print_text(t, r, imb, raw, enc, sum);
  free(r);
  la_traceset_free(t);
  if (rc) {
    fprintf(stderr, "lactl show: out of memory\n");
    return rc;
  }
  return lactl_out_close("show", NULL, stdout);
}
