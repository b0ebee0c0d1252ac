/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_apps.c: `lactl apps [--job ID] [--global HOST:PORT | --db FILE]
 * [--json]`: the applications a GlobalAgent (or its store) knows: id,
 * program name, ranks, elements, metric and unit, cycles, complete and
 * partial Trace-Sets, and whether the run is still going (running) or
 * every rank has ended (ended). A table for the terminal, or one JSON
 * object. --job finds a job's applications by what the user knows of it
 * (job_match below), the random part libla adds to derived ids left out.
 *
 * It only lists: `lactl cycles` and `lactl show` look inside. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl apps [--job ID] [--global HOST:PORT | --db FILE] "
          "[--json]\n"
          "\n"
          "Lists the applications known to the GlobalAgent: id, name, ranks, "
          "elements,\nmetric and unit, cycles, complete and partial "
          "Trace-Sets, and state\n(running, or ended when every rank "
          "ended; ended-lost when ranks were ended\nbecause their "
          "LocalAgent was lost).\n\n"
          "  --job ID            only the applications of job ID: the one "
          "whose id is ID\n"
          "                      exactly, when there is one; else those "
          "whose id, its\n"
          "                      random part left out, is ID or starts "
          "with ID and a dot,\n"
          "                      and, ID a number, those of Slurm job ID "
          "(a part slurmID)\n" LACTL_COMMON_HELP
          "  --json              one JSON object {\"apps\": [...]}\n"
          "\nExit status: 0 done, 1 source unreachable or unreadable, or no "
          "application\nof the job given, 2 usage.\n");
}

/* "ended", "ended-lost" (ranks ended as their LocalAgent was lost) or
 * "running". */
static const char *state_word(const lactl_app_t *a) {
  if (!lactl_app_ended(a)) return "running";
  return a->ranks_lost > 0 ? "ended-lost" : "ended";
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
        "\"ranks_started\": %d, \"ranks_ended\": %d, \"ranks_lost\": %d, "
        "\"state\": \"%s\"}",
        (unsigned long long)a[i].cycles, (unsigned long long)a[i].complete,
        (unsigned long long)a[i].partial, a[i].ranks_started, a[i].ranks_ended,
        a[i].ranks_lost, state_word(&a[i]));
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
    if (lactl_app_ended(&a[i]) && a[i].ranks_lost > 0)
      snprintf(st, sizeof st, "ended-lost (%d of %u ranks)", a[i].ranks_lost,
               a[i].nprocs);
    else if (lactl_app_ended(&a[i]))
      snprintf(st, sizeof st, "ended");
    else if (a[i].ranks_lost > 0)
      snprintf(st, sizeof st, "running (%d of %u ranks lost)",
               a[i].ranks_lost, a[i].nprocs);
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

/* Whether the last dot-separated part of id, from last_dot, is a random
 * part as libla draws it: 8 characters of the base32 alphabet (a-z, 2-7). */
static int random_part(const char *last_dot) {
  if (!last_dot || strlen(last_dot + 1) != 8) return 0;
  for (const char *p = last_dot + 1; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '2' && *p <= '7'))) return 0;
  return 1;
}

/* Whether id is of job (no exact match among the applications: the
 * caller checks that first): id without its random part is job or starts
 * with "job."; or job is a number and a dot-separated part of id is
 * "slurm<job>". */
static int job_match(const char *id, const char *job) {
  size_t lj = strlen(job), li = strlen(id);
  const char *dot = strrchr(id, '.');
  size_t base = random_part(dot) ? (size_t)(dot - id) : li;
  if (base >= lj && !strncmp(id, job, lj) && (base == lj || id[lj] == '.'))
    return 1;
  if (!lj || strspn(job, "0123456789") != lj) return 0;
  for (const char *p = id; p && *p; p = strchr(p, '.'), p = p ? p + 1 : p) {
    size_t n = strcspn(p, ".");
    if (n == 5 + lj && !strncmp(p, "slurm", 5) && !strncmp(p + 5, job, lj))
      return 1;
  }
  return 0;
}

/* Keeps in a[0..*n) the applications of job (job_match's rule, an exact
 * id winning). */
static void filter_job(lactl_app_t *a, size_t *n, const char *job) {
  size_t k = 0;
  for (size_t i = 0; i < *n; i++)
    if (!strcmp(a[i].id, job)) {
      a[0] = a[i];
      *n = 1;
      return;
    }
  for (size_t i = 0; i < *n; i++)
    if (job_match(a[i].id, job)) a[k++] = a[i];
  *n = k;
}

int lactl_apps_main(int argc, char **argv) {
  static const struct option lo[] = {
      {"job", 1, 0, 'j'}, LACTL_COMMON_OPTIONS, {0, 0, 0, 0}};
  lactl_common_t o = {0};
  const char *job = NULL;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'j':
        if (!optarg[0] || strlen(optarg) > 128)
          return lactl_usage_err("apps", "--job '%s': empty or longer than "
                                 "128 bytes", optarg);
        job = optarg;
        break;
      default:
        return lactl_opt_err("apps", argv, lo, "h");
    }
  }
  if (optind < argc)
    return lactl_usage_err("apps", "unexpected argument '%s'", argv[optind]);
  int orc;
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
  if (job) {
    filter_job(a, &n, job);
    if (n == 0) {
      fprintf(stderr,
              "lactl apps: no application of job '%s' ('lactl apps' lists "
              "them all)\n",
              job);
      free(a);
      lactl_src_close(s);
      return LACTL_FAIL;
    }
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
