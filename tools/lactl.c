/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl.c: the `lactl` command: a table of subcommands and the dispatch to
 * them. Each subcommand lives in its own tools/lactl_NAME.c and is one row
 * of the table below (its prototype sits right above the table).
 *
 * It parses no subcommand options and opens no connection itself.
 * Exit status: 0 success, 1 failure, 2 usage or input error.
 */
#include <stdio.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"

typedef struct {
  const char *name;
  int (*main)(int argc, char **argv); /* argv[0] is the subcommand name */
  const char *summary;
} lactl_cmd_t;

int lactl_compact_main(int argc, char **argv);
int lactl_status_main(int argc, char **argv);
int lactl_secret_main(int argc, char **argv);
int lactl_apps_main(int argc, char **argv);
int lactl_cycles_main(int argc, char **argv);
int lactl_show_main(int argc, char **argv);
int lactl_export_main(int argc, char **argv);
int lactl_plot_main(int argc, char **argv);
int lactl_whatif_main(int argc, char **argv);
int lactl_replay_main(int argc, char **argv);
int lactl_serve_main(int argc, char **argv);

static const lactl_cmd_t cmds[] = {
    {"compact", lactl_compact_main,
     "compact a series from a file; print size, error and speed"},
    {"status", lactl_status_main,
     "show the status of a LocalAgent or GlobalAgent"},
    {"secret", lactl_secret_main, "create a shared secret file for the agents"},
    {"apps", lactl_apps_main, "list the applications a GlobalAgent knows"},
    {"cycles", lactl_cycles_main,
     "list an application's cycles and their state"},
    {"show", lactl_show_main,
     "show one Trace-Set: totals, imbalance, compaction, errors"},
    {"export", lactl_export_main,
     "write per-element weights: CSV, JSON, METIS, NumPy or VTK"},
    {"plot", lactl_plot_main,
     "draw a rank's trace, a ranks x cycles heat map or a grid (SVG)"},
    {"whatif", lactl_whatif_main,
     "predict what repartitioning would gain (METIS, RCB) before moving"},
    {"replay", lactl_replay_main,
     "replay recorded costs with la-replay (MPI) to measure a partition"},
    {"serve", lactl_serve_main,
     "serve a live view of the Trace-Sets to a browser (HTTP, token)"},
};

static void usage(FILE *f) {
  size_t i;

  fprintf(f,
          "usage: lactl [--version] [--help] COMMAND [ARGS]\n\n"
          "LA control tool (LA %s). Commands:\n",
          LA_VERSION_STRING);
  for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
    fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
  fprintf(f, "\n'lactl COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv) {
  size_t i;

  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("lactl %s\n", LA_VERSION_STRING);
    return 0;
  }
  for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
    if (strcmp(argv[1], cmds[i].name) == 0)
      return cmds[i].main(argc - 1, argv + 1);
  fprintf(stderr, "lactl: unknown command '%s' (try 'lactl --help')\n",
          argv[1]);
  return 2;
}
