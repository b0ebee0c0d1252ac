/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_show.c: `lactl show APP [CYCLE|latest] [--global HOST:PORT | --db
 * FILE] [--json]`: one Trace-Set: complete, partial or open, which ranks
 * are missing and why (the reason recorded for each), metric and unit,
 * close time, elements, per-rank totals (exact: the raw sums measured
 * before compaction) with a small bar, the
 * imbalance (max/mean of the totals), the compaction ratio (raw bytes = 8 x
 * elements against encoded bytes) and the error the compaction achieved on
 * each rank (max |err|, CV). Measurement fidelity (docs/fidelity.md): per
 * rank the measured and robust totals, the interference share, the flagged
 * element-cycles, the timer resolution and detection status, the measured
 * and robust imbalance side by side, and a warning when the timer is coarse
 * against the median element.
 *
 * Everything comes from the set's exact statistics and encoded sizes; only
 * the timer check decodes, a bounded sample of elements (`lactl export` and
 * `lactl plot` decode everything). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "lactl_clusters.h"
#include "lactl_util.h"

#define BAR 20
/* Elements sampled (evenly spaced) for the median of the timer check. */
#define MEDIAN_SAMPLE 4096
/* Warn when the median element is below this many timer steps. */
#define COARSE_STEPS 20

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl show APP [CYCLE|latest] [--global HOST:PORT | --db "
          "FILE] [--json]\n"
          "                  [--channel NAME] [--clusters [--tol X]]\n"
          "\n"
          "Shows one Trace-Set of application APP (default: the latest "
          "cycle):\ncomplete, partial or open, the missing ranks and why, "
          "per-rank totals\n(exact) with a bar, the imbalance (max/mean), "
          "elements, the compaction\nratio (8 bytes per element against the "
          "encoded bytes) and the error\nachieved per rank; where the agents "
          "report them, robust totals,\ninterference, timer resolution and "
          "detection per rank.\n\n" LACTL_COMMON_HELP LACTL_CHANNEL_HELP
          "  --json              one JSON object\n"
          "  --clusters          the behaviour classes of the ranks instead: "
          "ranks\n"
          "                      whose per-element profiles have the same "
          "shape,\n"
          "                      each class with its representative, the "
          "members'\n"
          "                      scales and ranks; then the outliers "
          "(docs/clusters.md)\n"
          "  --tol X             signature distance of alike ranks, 0..2 "
          "(0.05)\n"
          "\nExit status: 0 done, 1 unreachable or not found, 2 usage.\n");
}

/* Per-rank figures, NaN where unknown. */
typedef struct {
  int present;
  uint64_t elements;
  double total, min, max, err_max, err_rmse, err_cv;
  size_t bytes;
  const char *mode;
  /* fidelity; NaN / 0 / "" where not reported */
  double robust, interf, share, flagged_time, timer_res;
  uint64_t flagged;
  int has_robust, has_interf;
  const char *detection;
} rank_t;

/* Set-wide fidelity figures. */
typedef struct {
  double imb_robust;    /* NaN unless every present rank has robust weights */
  double robust_total;  /* same condition */
  double interf, share; /* over ranks reporting interference; NaN if none */
  uint64_t flagged;
  double timer_res; /* coarsest reported, ns; 0 when none */
  double median_ns; /* median element (sampled), ns; NaN when unknown */
  int coarse;       /* median_ns < COARSE_STEPS * timer_res */
  int any;          /* any rank reported any fidelity figure */
} fid_t;

/* ns per unit of the metric, 0 when it is not a time. */
static double unit_ns(const char *unit) {
  if (strcmp(unit, "ns") == 0) return 1;
  if (strcmp(unit, "us") == 0) return 1e3;
  if (strcmp(unit, "ms") == 0) return 1e6;
  if (strcmp(unit, "s") == 0) return 1e9;
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of up to MEDIAN_SAMPLE evenly spaced measured elements of the
 * present ranks, in the metric's unit; NaN when none could be read. */
static double sample_median(const la_traceset_t *t) {
  uint64_t n = 0;
  uint32_t np = la_traceset_nprocs(t);
  for (uint32_t i = 0; i < np; i++)
    if (la_traceset_has_rank(t, i)) n += la_traceset_rank_elements(t, i);
  if (n == 0) return NAN;
  size_t k = n < MEDIAN_SAMPLE ? (size_t)n : MEDIAN_SAMPLE, m = 0;
  double *v = malloc(k * sizeof *v);
  if (!v) return NAN;
  uint64_t pos = 0; /* position among present elements */
  for (uint32_t i = 0; i < np && m < k; i++) {
    const la_trace_t *tr = la__traceset_trace(t, i);
    uint64_t ne = la_traceset_rank_elements(t, i);
    if (!tr) continue;
    /* sample j sits at element j * n / k of the present ones */
    while (m < k) {
      uint64_t at = (uint64_t)((unsigned __int128)m * n / k);
      if (at >= pos + ne) break;
      double x;
      if (la_trace_decode(tr, at - pos, 1, &x) == 0 && isfinite(x))
        v[m] = x;
      else
        v[m] = NAN;
      m++;
    }
    pos += ne;
  }
  size_t f = 0;
  for (size_t j = 0; j < m; j++)
    if (!isnan(v[j])) v[f++] = v[j];
  double med = NAN;
  if (f) {
    qsort(v, f, sizeof *v, cmp_double);
    med = f % 2 ? v[f / 2] : (v[f / 2 - 1] + v[f / 2]) / 2;
  }
  free(v);
  return med;
}

static void collect_fidelity(const la_traceset_t *t, rank_t *r, fid_t *fd) {
  uint32_t np = la_traceset_nprocs(t);
  double im = 0, mt = 0;
  int n_interf = 0;
  memset(fd, 0, sizeof *fd);
  for (uint32_t i = 0; i < np; i++) {
    rank_t *x = &r[i];
    x->robust = x->interf = x->share = x->flagged_time = NAN;
    x->flagged = 0;
    x->timer_res = la_traceset_rank_timer_res(t, i);
    x->detection = la_traceset_rank_detection(t, i);
    if (x->timer_res > fd->timer_res) fd->timer_res = x->timer_res;
    if (x->timer_res > 0 || *x->detection) fd->any = 1;
    if (!x->present) continue;
    x->has_robust =
        la_traceset_rank_robust_stats(t, i, &x->robust, NULL, NULL) == 0;
    x->has_interf = la_traceset_rank_interference(t, i, &x->interf, &x->flagged,
                                                  &x->flagged_time) == 0;
    if (x->has_robust || x->has_interf) fd->any = 1;
    if (x->has_interf && !isnan(x->interf)) {
      x->share = x->total > 0 ? x->interf / x->total : NAN;
      im += x->interf;
      mt += x->total;
      n_interf++;
    }
    fd->flagged += x->flagged;
  }
  fd->interf = n_interf ? im : NAN;
  fd->share = n_interf && mt > 0 ? im / mt : NAN;
  fd->imb_robust = fd->robust_total = NAN;
  if (la_traceset_robust_imbalance(t, &fd->imb_robust) != 0)
    fd->imb_robust = NAN;
  if (la_traceset_has_robust(t)) {
    fd->robust_total = 0;
    for (uint32_t i = 0; i < np; i++)
      if (r[i].present) fd->robust_total += r[i].robust;
  }
  fd->median_ns = NAN;
  double scale = unit_ns(la_traceset_unit(t));
  if (fd->timer_res > 0 && scale > 0) {
    fd->median_ns = sample_median(t) * scale;
    fd->coarse = fd->median_ns < COARSE_STEPS * fd->timer_res;
  }
}

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

/* channel: --channel's name (NULL: the sum of the channels) */
static void print_json(const la_traceset_t *t, const rank_t *r, const fid_t *fd,
                       double imb, uint64_t raw, uint64_t enc, double sum,
                       const char *channel) {
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
  if (channel) {
    printf(", \"channel\": ");
    lactl_json_str(stdout, channel);
  }
  printf(", \"unit\": ");
  lactl_json_str(stdout, la_traceset_unit(t));
  printf(", \"time_ns\": %llu, \"elements\": %llu, \"total\": ",
         (unsigned long long)la_traceset_time_ns(t),
         (unsigned long long)la_traceset_elements(t));
  lactl_json_num(stdout, sum);
  printf(", \"imbalance\": ");
  lactl_json_num(stdout, imb);
  printf(",\n \"weights\": \"%s\", \"robust_total\": ",
         la_traceset_has_robust(t) ? "robust" : "measured");
  lactl_json_num(stdout, fd->robust_total);
  printf(", \"imbalance_robust\": ");
  lactl_json_num(stdout, fd->imb_robust);
  printf(", \"interference\": ");
  lactl_json_num(stdout, fd->interf);
  printf(", \"interference_share\": ");
  lactl_json_num(stdout, fd->share);
  printf(", \"flagged\": %llu, \"timer_res_ns\": ",
         (unsigned long long)fd->flagged);
  lactl_json_num(stdout, fd->timer_res);
  printf(", \"median_element_ns\": ");
  lactl_json_num(stdout, fd->median_ns);
  printf(", \"timer_coarse\": %s", fd->coarse ? "true" : "false");
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
      double g[] = {x->robust, x->interf, x->share, x->flagged_time};
      const char *h[] = {"robust_total", "interference", "interference_share",
                         "flagged_time"};
      for (int j = 0; j < 4; j++) {
        printf(", \"%s\": ", h[j]);
        lactl_json_num(stdout, g[j]);
      }
      printf(", \"flagged\": %llu, \"coarse\": ",
             (unsigned long long)x->flagged);
      const char *co = la_traceset_rank_coarse(t, i);
      if (co)
        lactl_json_str(stdout, co);
      else
        printf("null");
    } else {
      const char *why = la_traceset_missing_reason(t, i);
      printf(", \"missing_reason\": ");
      if (why)
        lactl_json_str(stdout, why);
      else
        printf("null");
    }
    printf(", \"timer_res_ns\": ");
    lactl_json_num(stdout, x->timer_res);
    printf(", \"detection\": ");
    lactl_json_str(stdout, x->detection);
    printf("}");
  }
  printf("\n ]}\n");
}

/* The fidelity table: one row per rank. Returns 0 or LACTL_FAIL (memory). */
static int print_fidelity(const la_traceset_t *t, const rank_t *r) {
  uint32_t np = la_traceset_nprocs(t);
  const char *heads[] = {"RANK",    "MEASURED",      "ROBUST",   "INTERF%",
                         "FLAGGED", "TIMER_RES(ns)", "DETECTION"};
  lactl_table_t *tb = lactl_table_new(7, heads, "rrrrrrl");
  int bad = tb == NULL;
  for (uint32_t i = 0; !bad && i < np; i++) {
    const rank_t *x = &r[i];
    char rk[16], me[32], ro[32], sh[32], fl[24], tr[32], de[260];
    snprintf(rk, sizeof rk, "%u", i);
    lactl_fmt_num(x->present ? x->total : NAN, 6, me, sizeof me);
    lactl_fmt_num(x->robust, 6, ro, sizeof ro);
    lactl_fmt_num(x->share * 100, 3, sh, sizeof sh);
    if (x->has_interf)
      snprintf(fl, sizeof fl, "%llu", (unsigned long long)x->flagged);
    else
      snprintf(fl, sizeof fl, "-");
    lactl_fmt_num(x->timer_res > 0 ? x->timer_res : NAN, 4, tr, sizeof tr);
    snprintf(de, sizeof de, "%s", *x->detection ? x->detection : "-");
    for (char *p = de; *p; p++) /* no control characters */
      if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    const char *row[] = {rk, me, ro, sh, fl, tr, de};
    bad = lactl_table_row(tb, row) != 0;
  }
  if (!bad) {
    printf("\n");
    lactl_table_print(stdout, tb, 2);
  }
  lactl_table_free(tb);
  return bad ? LACTL_FAIL : 0;
}

/* One line per coarse trace: its rank and why (la_traceset_rank_coarse). */
static void print_coarse(const la_traceset_t *t) {
  uint32_t np = la_traceset_nprocs(t);
  for (uint32_t i = 0; i < np; i++) {
    const char *w = la_traceset_rank_coarse(t, i);
    if (!w) continue;
    char why[300];
    snprintf(why, sizeof why, "%s", w);
    for (char *p = why; *p; p++) /* no control characters */
      if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    printf("  rank %u: %s\n", i, why);
  }
}

static int print_text(const la_traceset_t *t, const rank_t *r, const fid_t *fd,
                      double imb, uint64_t raw, uint64_t enc, double sum,
                      const char *channel) {
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
  if (channel) printf("  channel     %s (its values only)\n", channel);
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
  if (fd->any)
    printf("  imbalance   %s measured, %s robust (max/mean of rank totals)\n",
           lactl_fmt_num(imb, 4, b1, sizeof b1),
           lactl_fmt_num(fd->imb_robust, 4, b2, sizeof b2));
  else
    printf("  imbalance   %s (max/mean of rank totals)\n",
           lactl_fmt_num(imb, 4, b1, sizeof b1));
  if (!isnan(fd->share))
    printf(
        "  interference %s%% of the measured time (%llu element-cycles "
        "flagged)\n",
        lactl_fmt_num(fd->share * 100, 3, b1, sizeof b1),
        (unsigned long long)fd->flagged);
  if (fd->coarse)
    printf(
        "  warning: timer resolution %s ns, median element %s ns: most "
        "elements read only a few timer steps\n",
        lactl_fmt_num(fd->timer_res, 4, b1, sizeof b1),
        lactl_fmt_num(fd->median_ns, 4, b2, sizeof b2));
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
  print_coarse(t);
  if (fd->any) return print_fidelity(t, r);
  return LACTL_OK;
}

int lactl_show_main(int argc, char **argv) {
  lactl_common_t o = {0};
  enum { OPT_CLUSTERS = 2000, OPT_TOL };
  static const struct option lo[] = {
      LACTL_CHANNEL_OPTION, LACTL_COMMON_OPTIONS,
      {"clusters", 0, 0, OPT_CLUSTERS}, {"tol", 1, 0, OPT_TOL}, {0, 0, 0, 0}};
  int c, orc, clusters = 0, has_tol = 0;
  double tol = 0.05;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    if (c == 'h') {
      usage(stdout);
      return LACTL_OK;
    }
    if (c == OPT_CLUSTERS) {
      clusters = 1;
      continue;
    }
    if (c == OPT_TOL) {
      char *end;
      tol = strtod(optarg, &end);
      if (end == optarg || *end || !(tol >= 0 && tol <= 2))
        return lactl_usage_err("show", "--tol '%s' is not a number in 0..2",
                               optarg);
      has_tol = 1;
      continue;
    }
    return lactl_opt_err("show", argv, lo, "h");
  }
  if (has_tol && !clusters)
    return lactl_usage_err("show", "--tol goes with --clusters");
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
  orc = lactl_src_open("show", &o, &s);
  if (orc) return orc;
  la_traceset_t *t;
  int rc = lactl_src_set(s, app, sel.latest, sel.first, &t);
  if (rc) {
    rc = lactl_src_fail("show", s, rc);
    lactl_src_close(s);
    return rc;
  }
  lactl_src_close(s);
  if (clusters) {
    rc = lactl_clusters_print(stdout, t, tol, o.json);
    la_traceset_free(t);
    return rc ? rc : lactl_out_close("show", NULL, stdout);
  }
  uint32_t np = la_traceset_nprocs(t);
  rank_t *r = calloc(np ? np : 1, sizeof *r);
  if (!r) {
    la_traceset_free(t);
    fprintf(stderr, "lactl show: out of memory\n");
    return LACTL_FAIL;
  }
  double imb, sum;
  uint64_t raw, enc;
  fid_t fd;
  collect(t, r, &imb, &raw, &enc, &sum);
  collect_fidelity(t, r, &fd);
  if (o.json)
    print_json(t, r, &fd, imb, raw, enc, sum, o.channel);
  else
    rc = print_text(t, r, &fd, imb, raw, enc, sum, o.channel);
  free(r);
  la_traceset_free(t);
  if (rc) {
    fprintf(stderr, "lactl show: out of memory\n");
    return rc;
  }
  return lactl_out_close("show", NULL, stdout);
}
