/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_apps.c: `lactl apps [--global HOST:PORT | --db FILE] [--json]`:
 * the applications a GlobalAgent (or its store) knows: id, program name,
 * ranks, elements, metric and unit, cycles, complete and partial
 * Trace-Sets, and whether the run is still going (running) or every rank
 * has ended (ended). A table for the terminal, or one JSON object.
 *
 * It only lists: `lactl cycles` and `lactl show` look inside. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl apps [--global HOST:PORT | --db FILE] [--json]\n"
          "\n"
          "Lists the applications known to the GlobalAgent: id, name, ranks, "
          "elements,\nmetric and unit, cycles, complete and partial "
          "Trace-Sets, and state\n(running, or ended when every rank "
          "ended).\n\n" LACTL_COMMON_HELP
          "  --json              one JSON object {\"apps\": [...]}\n"
          "\nExit status: 0 done, 1 source unreachable or unreadable, 2 "
          "usage.\n");
}

static void print_json(const lactl_app_t *a, size_t n) {
  printf("{\"apps\": [");
  for (size_t i = 0; i < n; i++) {
    printf("%s\n  {\"id\": ", i ? "," : "");
    lactl_json_str(stdout, a[i].id);
    printf(", \"name\": ");
    lactl_json_str(stdout, a[i].name);
    printf(", \"ranks\": %u, \"elements\": %llu, \"metric\": ", a[i].nprocs,
           (unsigned long long)a[i].elements);
    lactl_json_str(stdout, a[i].metric);
    printf(", \"unit\": ");
    lactl_json_str(stdout, a[i].unit);
    printf(
        ", \"cycles\": %llu, \"complete\": %llu, \"partial\": %llu, "
        "\"ranks_started\": %d, \"ranks_ended\": %d, \"state\": \"%s\"}",
        (unsigned long long)a[i].cycles, (unsigned long long)a[i].complete,
        (unsigned long long)a[i].partial, a[i].ranks_started, a[i].ranks_ended,
        lactl_app_ended(&a[i]) ? "ended" : "running");
  }
  printf("%s]}\n", n ? "\n" : "");
}

static int print_text(const lactl_app_t *a, size_t n) {
  static const char *const heads[] = {"APP",      "NAME",    "RANKS",
                                      "ELEMENTS", "METRIC",  "CYCLES",
                                      "COMPLETE", "PARTIAL", "STATE"};
  if (n == 0) {
    printf("no applications\n");
    return LACTL_OK;
  }
  lactl_table_t *t = lactl_table_new(9, heads, "llrrlrrrl");
  if (!t) return LACTL_FAIL;
  for (size_t i = 0; i < n; i++) {
    char r[16], e[24], m[200], c[24], co[24], pa[24], st[48];
    if (a[i].nprocs)
      snprintf(r, sizeof r, "%u", a[i].nprocs);
    else
      snprintf(r, sizeof r, "?");
    snprintf(e, sizeof e, "%llu", (unsigned long long)a[i].elements);
    snprintf(m, sizeof m, "%s%s%s%s", a[i].metric[0] ? a[i].metric : "?",
             a[i].unit[0] ? " (" : "", a[i].unit, a[i].unit[0] ? ")" : "");
    snprintf(c, sizeof c, "%llu", (unsigned long long)a[i].cycles);
    snprintf(co, sizeof co, "%llu", (unsigned long long)a[i].complete);
    snprintf(pa, sizeof pa, "%llu", (unsigned long long)a[i].partial);
    if (lactl_app_ended(&a[i]))
      snprintf(st, sizeof st, "ended");
    else if (a[i].ranks_ended > 0)
      snprintf(st, sizeof st, "running (%d of %u ranks ended)",
               a[i].ranks_ended, a[i].nprocs);
    else
      snprintf(st, sizeof st, "running");
    const char *row[] = {
        a[i].id, a[i].name[0] ? a[i].name : "-", r, e, m, c, co, pa, st};
    if (lactl_table_row(t, row)) {
      lactl_table_free(t);
      return LACTL_FAIL;
    }
  }
  lactl_table_print(stdout, t, 0);
  lactl_table_free(t);
  return LACTL_OK;
}

int lactl_apps_main(int argc, char **argv) {
  lactl_common_t o = {0};
  int orc = lactl_common_only("apps", argc, argv, &o, usage);
  if (orc >= 0) return orc;
  if (optind < argc)
    return lactl_usage_err("apps", "unexpected argument '%s'", argv[optind]);
  lactl_src_t *s;
  orc = lactl_src_open("apps", &o, &s);
  if (orc) return orc;
  lactl_app_t *a;
  size_t n;
  int rc = lactl_src_apps(s, &a, &n);
  if (rc) {
    rc = lactl_src_fail("apps", s, rc);
    lactl_src_close(s);
    return rc;
  }
  if (o.json)
    print_json(a, n);
  else
    rc = print_text(a, n);
  free(a);
  lactl_src_close(s);
  if (rc) fprintf(stderr, "lactl apps: out of memory\n");
  return rc ? rc : lactl_out_close("apps", NULL, stdout);
}
