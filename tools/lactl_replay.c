/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_replay.c: `lactl replay APP [CYCLE|FIRST:LAST] [options]`: the
 * front door of la-replay (replay/, docs/balancing.md "Replaying a
 * partition"). It checks what it can before a job starts (the application
 * is stored, its metric is time, the rank count: the partition file's, else
 * the recorded one) and prints the mpiexec line that replays it, or with
 * --exec runs that line in its place. la-replay reads what this command
 * read: the GlobalAgent's feed, or with --db a store file (or PostgreSQL
 * URL) offline, with no GlobalAgent. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lactl_util.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl replay APP [CYCLE|FIRST:LAST] [--partition FILE] "
          "[--halo BYTES]\n"
          "                    [--halo-bytes-per-cell B] [--weights KIND] "
          "[--app-id ID]\n"
          "                    [--mpiexec CMD] [--exec]\n"
          "                    [--global HOST:PORT | --db FILE] [--timeout "
          "SECONDS]\n"
          "\n"
          "Prints the command that replays application APP's recorded "
          "per-element times\n"
          "with la-replay (every complete cycle, or those given), under the "
          "recorded\npartition or FILE's; with --exec, runs it.\n\n"
          "  --partition FILE    element -> rank (as lactl whatif writes "
          "it); the\n"
          "                      replay runs on its rank count\n"
          "  --halo BYTES        exchange BYTES with ranks r-1 and r+1 each "
          "cycle (ring)\n"
          "  --halo-bytes-per-cell B  mesh halo where APP has a grid: B bytes "
          "per cell\n"
          "                      facing each rank owning a neighbour cell, "
          "each cycle\n"
          "  --weights KIND      measured or robust (default: robust when "
          "every rank has\n"
          "                      them)\n"
          "  --app-id ID         the replay's LA application id (default: "
          "APP.replay)\n"
          "  --mpiexec CMD       the launcher (default: mpiexec)\n"
          "  --exec              run the command instead of printing it\n"
          "  --global HOST:PORT  the GlobalAgent's feed (default: $LA_GLOBAL "
          "or\n"
          "                      127.0.0.1:7463)\n"
          "  --db FILE           read a store file (or PostgreSQL URL) "
          "instead, and\n"
          "                      so does la-replay: no GlobalAgent needed\n"
          "  --timeout SECONDS   wait up to SECONDS for each answer of the "
          "GlobalAgent\n"
          "\nExit status: 0 done (with --exec: la-replay's), 1 unreachable "
          "or not\nreplayable, 2 usage.\n");
}

/* The rank count of partition file path: its "; parts K" header, else the
 * largest rank + 1. 0 when it has neither (said). */
static uint32_t file_ranks(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "lactl replay: %s: %s\n", path, strerror(errno));
    return 0;
  }
  char line[256];
  unsigned long long parts = 0, max = 0, id, r;
  int any = 0;
  while (fgets(line, sizeof line, f)) {
    const char *k;
    if (line[0] == '#') {
      if ((k = strstr(line, "; parts ")) && sscanf(k + 8, "%llu", &parts) != 1)
        parts = 0;
    } else if (sscanf(line, "%llu %llu", &id, &r) == 2) {
      any = 1;
      if (r > max) max = r;
    }
  }
  fclose(f);
  if (parts && parts < (1u << 24)) return (uint32_t)parts;
  if (!any || max >= (1u << 24)) {
    fprintf(stderr, "lactl replay: %s: no \"ID RANK\" line\n", path);
    return 0;
  }
  return (uint32_t)max + 1;
}

/* la-replay next to this lactl (the build tree's and an installation's
 * bin/), else the name for PATH. */
static void replay_path(char *buf, size_t len) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) {
      snprintf(buf, len, "%.*s/la-replay", (int)(slash - self), self);
      if (access(buf, X_OK) == 0) return;
    }
  }
  snprintf(buf, len, "la-replay");
}

/* s quoted for a POSIX shell when it needs it. */
static void put_word(FILE *f, const char *s) {
  if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789-_./:=,+@%") == strlen(s)) {
    fputs(s, f);
    return;
  }
  fputc('\'', f);
  for (; *s; s++)
    if (*s == '\'')
      fputs("'\\''", f);
    else
      fputc(*s, f);
  fputc('\'', f);
}

int lactl_replay_main(int argc, char **argv) {
  static const struct option lo[] = {
      {"partition", 1, 0, 'p'}, {"halo", 1, 0, 'H'},   {"weights", 1, 0, 'W'},
      {"app-id", 1, 0, 'a'},    {"mpiexec", 1, 0, 'M'}, {"exec", 0, 0, 'x'},
      {"halo-bytes-per-cell", 1, 0, 'B'},
      LACTL_COMMON_OPTIONS,     {0, 0, 0, 0}};
  lactl_common_t o = {0};
  const char *part = NULL, *halo = NULL, *weights = NULL, *app_id = NULL,
             *mpiexec = "mpiexec", *per_cell = NULL;
  int c, exec = 0, kind;
  uint64_t v;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'p':
        part = optarg;
        break;
      case 'H':
        if (lactl_parse_u64(optarg, &v) || v > (1u << 30))
          return lactl_usage_err("replay", "--halo '%s': bytes, 0 .. 1073741824",
                                 optarg);
        halo = optarg;
        break;
      case 'B':
        if (lactl_parse_u64(optarg, &v) || v < 1 || v > (1u << 20))
          return lactl_usage_err("replay",
                                 "--halo-bytes-per-cell '%s': bytes, 1 .. "
                                 "1048576",
                                 optarg);
        per_cell = optarg;
        break;
      case 'W':
        if (lactl_parse_weights(optarg, &kind))
          return lactl_usage_err("replay", "--weights '%s': measured or robust",
                                 optarg);
        weights = optarg;
        break;
      case 'a':
        app_id = optarg;
        break;
      case 'M':
        mpiexec = optarg;
        break;
      case 'x':
        exec = 1;
        break;
      default:
        return lactl_opt_err("replay", argv, lo, "h");
    }
  }
  if (o.json) return lactl_usage_err("replay", "no --json: it prints a command");
  if (optind >= argc) return lactl_usage_err("replay", "which application?");
  if (argc - optind > 2)
    return lactl_usage_err("replay", "unexpected argument '%s'",
                           argv[optind + 2]);
  const char *app = argv[optind], *cycles = optind + 1 < argc ? argv[optind + 1] : NULL;
  lactl_sel_t sel;
  if (cycles && (lactl_parse_sel(cycles, 1, &sel) || sel.latest))
    return lactl_usage_err("replay", "'%s' is not CYCLE or FIRST:LAST", cycles);

  lactl_src_t *s;
  int rc = lactl_src_open("replay", &o, &s);
  if (rc) return rc;
  lactl_app_t a;
  rc = lactl_src_app(s, app, &a);
  if (rc) {
    rc = lactl_src_fail("replay", s, rc);
    lactl_src_close(s);
    return rc;
  }
  lactl_src_close(s);
  if (strcmp(a.metric, "time")) {
    fprintf(stderr,
            "lactl replay: %s's metric is '%s' (unit '%s'): la-replay spends "
            "recorded time, so it replays only the time metric\n",
            app, a.metric, a.unit);
    return LACTL_FAIL;
  }
  uint32_t ranks = a.nprocs;
  if (part && !(ranks = file_ranks(part))) return LACTL_USAGE;
  if (!ranks) {
    fprintf(stderr, "lactl replay: %s's rank count is not known yet\n", app);
    return LACTL_FAIL;
  }
  char bin[PATH_MAX + 16], nbuf[16];
  replay_path(bin, sizeof bin);
  snprintf(nbuf, sizeof nbuf, "%u", ranks);
  const char *av[26];
  int n = 0;
  av[n++] = mpiexec, av[n++] = "-n", av[n++] = nbuf, av[n++] = bin;
  av[n++] = app;
  if (cycles) av[n++] = cycles;
  if (o.db)
    av[n++] = "--db", av[n++] = o.db;
  else
    av[n++] = "--global", av[n++] = lactl_global_addr(o.global);
  if (o.timeout) av[n++] = "--timeout", av[n++] = o.timeout;
  if (part) av[n++] = "--partition", av[n++] = part;
  if (halo) av[n++] = "--halo", av[n++] = halo;
  if (per_cell) av[n++] = "--halo-bytes-per-cell", av[n++] = per_cell;
  if (weights) av[n++] = "--weights", av[n++] = weights;
  if (app_id) av[n++] = "--app-id", av[n++] = app_id;
  av[n] = NULL;
  if (!exec) {
    for (int i = 0; i < n; i++) {
      if (i) putchar(' ');
      put_word(stdout, av[i]);
    }
    putchar('\n');
    return LACTL_OK;
  }
  fflush(stdout);
  execvp(av[0], (char *const *)av);
  fprintf(stderr, "lactl replay: cannot run %s: %s\n", av[0], strerror(errno));
  return LACTL_FAIL;
}
