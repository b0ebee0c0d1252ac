/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_opts.c: lactl's common options, usage errors and argument parsing
 * (see lactl_opts.h). */
#include "lactl_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "la_client.h"
#include "la_config.h"

int lactl_common_opt(lactl_common_t *o, int c, const char *arg) {
  switch (c) {
    case LACTL_OPT_GLOBAL:
      o->global = arg;
      return 1;
    case LACTL_OPT_DB:
      o->db = arg;
      return 1;
    case LACTL_OPT_JSON:
      o->json = 1;
      return 1;
    case LACTL_OPT_CHANNEL:
      o->channel = arg;
      return 1;
    case LACTL_OPT_TIMEOUT:
      o->timeout = arg;
      return 1;
    default:
      return 0;
  }
}

int lactl_usage_err(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "lactl %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (try 'lactl %s --help')\n", cmd);
  return LACTL_USAGE;
}

const char *lactl_global_addr(const char *opt) {
  if (opt && *opt) return opt;
  const char *e = getenv("LA_GLOBAL");
  return e && *e ? e : LA_CLIENT_DEFAULT_ADDR;
}

int lactl_parse_weights(const char *s, int *kind) {
  if (!strcmp(s, "measured"))
    *kind = LA_WEIGHTS_MEASURED;
  else if (!strcmp(s, "robust"))
    *kind = LA_WEIGHTS_ROBUST;
  else
    return -1;
  return 0;
}

int lactl_parse_u64(const char *s, uint64_t *v) {
  if (!s || *s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(s, &end, 10);
  if (errno || *end) return -1;
  *v = x;
  return 0;
}

int lactl_parse_sel(const char *s, int range_ok, lactl_sel_t *sel) {
  memset(sel, 0, sizeof *sel);
  if (!s || !strcmp(s, "latest")) {
    sel->latest = 1;
    return 0;
  }
  const char *colon = strchr(s, ':');
  if (!colon) {
    if (lactl_parse_u64(s, &sel->first)) return -1;
    sel->last = sel->first;
    return 0;
  }
  if (!range_ok) return -1;
  char a[32];
  size_t la = (size_t)(colon - s);
  if (la >= sizeof a) return -1;
  memcpy(a, s, la);
  a[la] = 0;
  sel->range = 1;
  sel->first = 0;
  sel->last = UINT64_MAX;
  if (la && lactl_parse_u64(a, &sel->first)) return -1;
  if (colon[1] && lactl_parse_u64(colon + 1, &sel->last)) return -1;
  return sel->first <= sel->last ? 0 : -1;
}

int lactl_common_only(const char *cmd, int argc, char **argv, lactl_common_t *o,
                      void (*usage)(FILE *)) {
  static const struct option lo[] = {LACTL_COMMON_OPTIONS, {0, 0, 0, 0}};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (lactl_common_opt(o, c, optarg)) continue;
    if (c == 'h') {
      usage(stdout);
      return LACTL_OK;
    }
    return lactl_opt_err(cmd, argv, lo, "h");
  }
  return -1;
}

int lactl_opt_err(const char *cmd, char **argv, const struct option *lo,
                  const char *shortopts) {
  const char *a = argv[optind - 1];
  if (a[0] == '-' && a[1] == '-') {
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const struct option *hit = NULL;
    int n = 0;
    for (const struct option *p = lo; p->name; p++) {
      if (strncmp(p->name, name, len)) continue;
      if (strlen(p->name) == len) { /* exact: no ambiguity */
        hit = p;
        n = 1;
        break;
      }
      hit = p;
      n++;
    }
    if (n > 1)
      return lactl_usage_err(cmd, "option '%.*s' is ambiguous", (int)len + 2,
                             a);
    if (n == 1 && hit->has_arg == required_argument && !eq)
      return lactl_usage_err(cmd, "option --%s needs a value", hit->name);
    if (n == 1 && hit->has_arg == no_argument && eq)
      return lactl_usage_err(cmd, "option --%s takes no value", hit->name);
    /* a typo: the closest option, at most 2 edits and fewer than a
     * third of its name (as the daemons suggest their settings) */
    const struct option *best = NULL;
    size_t best_d = 3;
    char typed[64];
    snprintf(typed, sizeof typed, "%.*s", (int)(len < 63 ? len : 63), name);
    for (const struct option *p = lo; p->name; p++) {
      size_t d = la_cfg_distance(typed, p->name);
      if (d < best_d && d * 3 < strlen(p->name)) best = p, best_d = d;
    }
    if (best)
      return lactl_usage_err(cmd, "unknown option '%s' (did you mean '--%s'?)",
                             a, best->name);
    return lactl_usage_err(cmd, "unknown option '%s'", a);
  }
  const char *p = optopt ? strchr(shortopts, optopt) : NULL;
  if (p && p[1] == ':')
    return lactl_usage_err(cmd, "option -%c needs a value", optopt);
  if (optopt) return lactl_usage_err(cmd, "unknown option '-%c'", optopt);
  return lactl_usage_err(cmd, "unknown option '%s'", a);
}
