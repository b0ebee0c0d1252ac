/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_cycles.c: `lactl cycles APP [--first N] [--last M] [--global
 * HOST:PORT | --db FILE] [--json]`: the cycles of one application that
 * have at least one trace, in tag order, each with its state (complete,
 * partial: closed with ranks missing, open: still waiting for ranks), the
 * ranks present, the ranks missing and why they are missing (each reason
 * recorded, with how many ranks).
 *
 * Counts only; `lactl show APP CYCLE` names the missing ranks. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl cycles APP [--first N] [--last M] [--global HOST:PORT "
          "| --db FILE]\n"
          "                    [--json]\n"
          "\n"
          "Lists the cycles of application APP with their state: complete, "
          "partial\n(closed with ranks missing) or open (still waiting for "
          "ranks), the ranks\npresent, the ranks missing and why: each "
          "reason recorded, with how\nmany ranks it concerns.\n\n"
          "  --first N, --last M only cycle tags N..M\n" LACTL_COMMON_HELP
          "  --json              one JSON object {\"app\": ..., \"cycles\": "
          "[...]}\n"
          "\nExit status: 0 done, 1 unreachable or unknown application, 2 "
          "usage.\n");
}

int lactl_cycles_main(int argc, char **argv) {
  static const struct option lo[] = {{"first", 1, 0, 'f'},
                                     {"last", 1, 0, 'l'},
                                     LACTL_COMMON_OPTIONS,
                                     {0, 0, 0, 0}};
  lactl_common_t o = {0};
  uint64_t first = 0, last = UINT64_MAX;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'f':
      case 'l':
        if (lactl_parse_u64(optarg, c == 'f' ? &first : &last))
          return lactl_usage_err("cycles", "--%s '%s': not a cycle number",
                                 c == 'f' ? "first" : "last", optarg);
        break;
      default:
        return lactl_opt_err("cycles", argv, lo, "h");
    }
  }
  if (optind != argc - 1)
    return lactl_usage_err("cycles",
                           optind >= argc ? "which application? (APP)%s"
                                          : "one APP only ('%s' is extra)",
                           optind < argc ? argv[optind + 1] : "");
  if (first > last) return lactl_usage_err("cycles", "--first is after --last");
  const char *app = argv[optind];
  lactl_src_t *s;
  int orc = lactl_src_open("cycles", &o, &s);
  if (orc) return orc;
  lactl_app_t a;
  lactl_cycle_t *v = NULL;
  size_t n = 0;
  int rc = lactl_src_app(s, app, &a);
  if (!rc) rc = lactl_src_cycles(s, app, first, last, &v, &n);
  if (rc) {
    rc = lactl_src_fail("cycles", s, rc);
    lactl_src_close(s);
    return rc;
  }
  lactl_src_close(s);
  size_t cnt[3] = {0, 0, 0};
  for (size_t i = 0; i < n; i++) cnt[v[i].state]++;
  if (o.json) {
    printf("{\"app\": ");
    lactl_json_str(stdout, app);
    printf(", \"ranks\": %u, \"cycles\": [", a.nprocs);
    for (size_t i = 0; i < n; i++) {
      printf(
          "%s\n  {\"cycle\": %llu, \"state\": \"%s\", \"ranks_present\": "
          "%u, \"ranks_missing\": %u",
          i ? "," : "", (unsigned long long)v[i].tag,
          lactl_state_name(v[i].state), v[i].present, v[i].missing);
      if (v[i].reasons[0]) { /* only where reasons are recorded */
        printf(", \"reasons\": ");
        lactl_json_str(stdout, v[i].reasons);
      }
      printf("}");
    }
    printf("%s]}\n", n ? "\n" : "");
  } else {
    printf(
        "%s: %zu cycle%s (%zu complete, %zu partial, %zu open), %u "
        "ranks\n",
        app, n, n == 1 ? "" : "s", cnt[LACTL_COMPLETE], cnt[LACTL_PARTIAL],
        cnt[LACTL_OPEN], a.nprocs);
    static const char *const heads[] = {"CYCLE", "STATE", "RANKS", "MISSING",
                                        "WHY"};
    lactl_table_t *t = n ? lactl_table_new(5, heads, "rlrrl") : NULL;
    for (size_t i = 0; t && i < n; i++) {
      char tag[24], r[32], m[16];
      snprintf(tag, sizeof tag, "%llu", (unsigned long long)v[i].tag);
      if (a.nprocs)
        snprintf(r, sizeof r, "%u/%u", v[i].present, a.nprocs);
      else
        snprintf(r, sizeof r, "%u/?", v[i].present);
      snprintf(m, sizeof m, "%u", v[i].missing);
      for (char *p = v[i].reasons; *p; p++) /* no control characters */
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
      const char *row[] = {tag, lactl_state_name(v[i].state), r, m,
                           v[i].reasons};
      if (lactl_table_row(t, row)) {
        lactl_table_free(t);
        t = NULL;
      }
    }
    if (n && !t) {
      free(v);
      fprintf(stderr, "lactl cycles: out of memory\n");
      return LACTL_FAIL;
    }
    if (t) lactl_table_print(stdout, t, 2);
    lactl_table_free(t);
  }
  free(v);
  return lactl_out_close("cycles", NULL, stdout);
}
