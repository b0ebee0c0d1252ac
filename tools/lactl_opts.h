/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_opts.h: lactl's command-line conventions: exit statuses, the
 * options every data-reading subcommand takes (--global, --db, --json),
 * usage errors, and parsing of numbers, weights kinds and cycle
 * selections. Parsing only: nothing here opens a source or prints output
 * (but lactl_usage_err and lactl_common_only's usage and help).
 */
#ifndef LACTL_OPTS_H
#define LACTL_OPTS_H

#include <stdint.h>
#include <stdio.h>

/* Exit statuses of every subcommand. */
enum { LACTL_OK = 0, LACTL_FAIL = 1, LACTL_USAGE = 2 };

/* Options every data-reading subcommand takes. */
typedef struct lactl_common {
  const char *global;  /* --global HOST:PORT (NULL: $LA_GLOBAL or default) */
  const char *db;      /* --db FILE (NULL: read the GlobalAgent) */
  int json;            /* --json */
  const char *channel; /* --channel NAME (show, export, plot; NULL: sum) */
  const char *timeout; /* --timeout SECONDS (NULL: the client's default) */
} lactl_common_t;

/* getopt_long values of the common options, and the rows to put into a
 * subcommand's option table (LACTL_COMMON_OPTIONS,). */
enum {
  LACTL_OPT_GLOBAL = 1000,
  LACTL_OPT_DB,
  LACTL_OPT_JSON,
  LACTL_OPT_TIMEOUT
};
/* --channel NAME, for the subcommands that read Trace-Sets (its row for
 * their option table, handled by lactl_common_opt, and its help). */
enum { LACTL_OPT_CHANNEL = 1100 };
#define LACTL_CHANNEL_OPTION \
  { "channel", 1, 0, LACTL_OPT_CHANNEL }
#define LACTL_CHANNEL_HELP                                              \
  "  --channel NAME      the application's channel NAME (LA_channel), " \
  "not the\n"                                                           \
  "                      sum over its channels\n"
/* clang-format off */
#define LACTL_COMMON_OPTIONS                                      \
  {"global", 1, 0, LACTL_OPT_GLOBAL}, {"db", 1, 0, LACTL_OPT_DB}, \
  {"json", 0, 0, LACTL_OPT_JSON}, {"timeout", 1, 0, LACTL_OPT_TIMEOUT}, \
  {"help", 0, 0, 'h'}
/* clang-format on */

/* Handles getopt value c (with optarg) when it is a common option: returns
 * 1 when it was one, 0 when not. */
int lactl_common_opt(lactl_common_t *o, int c, const char *optarg);

/* The help text of the common options (for usage messages). */
#define LACTL_COMMON_HELP                                                   \
  "  --global HOST:PORT  read the GlobalAgent's feed (default: $LA_GLOBAL " \
  "or\n"                                                                    \
  "                      127.0.0.1:7463)\n"                                 \
  "  --db FILE           read a GlobalAgent's SQLite store instead "        \
  "(read-only)\n"                                                           \
  "  --timeout SECONDS   wait up to SECONDS for each answer of the "        \
  "GlobalAgent\n"                                                           \
  "                      (default 5; a stored set of 10^5 ranks takes "     \
  "seconds)\n"

/* Prints "lactl CMD: MESSAGE (try 'lactl CMD --help')" to stderr and
 * returns LACTL_USAGE. */
int lactl_usage_err(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The GlobalAgent feed address: opt if given, else $LA_GLOBAL, else
 * LA_CLIENT_DEFAULT_ADDR. Never NULL. */
const char *lactl_global_addr(const char *opt);

/* Parses a decimal unsigned 64-bit number (the whole string). 0 or -1. */
int lactl_parse_u64(const char *s, uint64_t *v);
/* "measured" or "robust" (--weights) into *kind (LA_WEIGHTS_*); 0 or -1. */
int lactl_parse_weights(const char *s, int *kind);

/* A cycle selection: "latest", "N" or (if range_ok) "FIRST:LAST" (either
 * side may be empty: 0 and the largest tag). */
typedef struct lactl_sel {
  int latest;           /* "latest" (or nothing given) */
  int range;            /* FIRST:LAST */
  uint64_t first, last; /* one cycle: first == last */
} lactl_sel_t;

/* Parses s (NULL: latest) into *sel. Returns 0 or -1 (not a selection). */
int lactl_parse_sel(const char *s, int range_ok, lactl_sel_t *sel);

/* The usage error for a getopt_long failure (opterr 0; call it right after
 * getopt_long returned '?' or ':', with the same argv, long options lo and
 * short options shortopts): "option --NAME needs a value" when a known
 * option lacks its value (--app at the end, -o at the end), "unknown option
 * '...'" otherwise. Prints like lactl_usage_err and returns LACTL_USAGE. */
struct option;
int lactl_opt_err(const char *cmd, char **argv, const struct option *lo,
                  const char *shortopts);

/* Parses argv for a subcommand cmd that takes only the common options and
 * positional arguments (getopt_long; optind is left at the first
 * positional). Returns -1 to go on, or the exit status to return at once:
 * LACTL_OK after printing usage(stdout) for --help, LACTL_USAGE after
 * naming an unknown option. */
int lactl_common_only(const char *cmd, int argc, char **argv, lactl_common_t *o,
                      void (*usage)(FILE *));

#endif /* LACTL_OPTS_H */
