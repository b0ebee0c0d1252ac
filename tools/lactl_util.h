/* lactl_util.h: what lactl's subcommands share: the data source (the
 * GlobalAgent's feed through libla_client, or the SQLite store read
 * directly), the common options (--global, --db, --json), argument parsing
 * (cycle numbers and ranges), JSON and time formatting, and output files.
 *
 * The two sources answer the same three questions (applications, cycles of
 * an application, one Trace-Set) with the same structures, so every
 * subcommand prints the same bytes whichever source it reads. Nothing here
 * prints except lactl_src_fail() and lactl_usage_err(); no function exits.
 */
#ifndef LACTL_UTIL_H
#define LACTL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "la_client.h"

/* Exit statuses of every subcommand. */
enum { LACTL_OK = 0, LACTL_FAIL = 1, LACTL_USAGE = 2 };

/* ------------------------------------------------------------- options */

/* Options every data-reading subcommand takes. */
typedef struct lactl_common {
  const char *global; /* --global HOST:PORT (NULL: $LA_GLOBAL or default) */
  const char *db;     /* --db FILE (NULL: read the GlobalAgent) */
  int json;           /* --json */
} lactl_common_t;

/* getopt_long values of the common options, and the rows to put into a
 * subcommand's option table (LACTL_COMMON_OPTIONS,). */
enum { LACTL_OPT_GLOBAL = 1000, LACTL_OPT_DB, LACTL_OPT_JSON };
/* clang-format off */
#define LACTL_COMMON_OPTIONS                                      \
  {"global", 1, 0, LACTL_OPT_GLOBAL}, {"db", 1, 0, LACTL_OPT_DB}, \
  {"json", 0, 0, LACTL_OPT_JSON}, {"help", 0, 0, 'h'}
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
  "(read-only)\n"

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

/* --------------------------------------------------------------- source */

typedef struct lactl_src lactl_src_t;

/* One application, as both sources report it. */
typedef struct lactl_app {
  char id[129], name[129], metric[129], unit[33];
  uint32_t nprocs;            /* 0: unknown (no RankStart yet) */
  uint64_t elements;          /* sum of the started ranks' element counts */
  uint64_t cycles;            /* cycles with at least one trace */
  uint64_t complete, partial; /* closed Trace-Sets */
  int ranks_started, ranks_ended;
} lactl_app_t;

/* 1 when every rank of a known nprocs has ended. */
int lactl_app_ended(const lactl_app_t *a);

enum { LACTL_OPEN = 0, LACTL_COMPLETE = 1, LACTL_PARTIAL = 2 };

/* One cycle of an application. */
typedef struct lactl_cycle {
  uint64_t tag;
  int state;        /* LACTL_OPEN, LACTL_COMPLETE, LACTL_PARTIAL */
  uint32_t present; /* ranks with a trace */
  uint32_t missing; /* closed: missing at close; open: not arrived yet */
  char reasons[512]; /* missing records by reason, "timeout (2); ..."; ""
                        when none are recorded */
} lactl_cycle_t;

/* "open", "complete" or "partial". */
const char *lactl_state_name(int state);

/* State of a Trace-Set: complete (every rank), partial (closed with ranks
 * missing) or open (not closed yet: ranks may still come). */
int lactl_set_state(const la_traceset_t *t);

/* Opens the source o says (db, else the feed at lactl_global_addr). On
 * failure prints "lactl CMD: why" and returns the exit status: LACTL_FAIL
 * (unreachable, missing or unreadable file) or LACTL_USAGE (an address
 * that is not HOST:PORT); *out is then NULL. */
int lactl_src_open(const char *cmd, const lactl_common_t *o, lactl_src_t **out);
void lactl_src_close(lactl_src_t *s);

/* Every application, ordered by id. *out is malloc'ed (free it). Returns 0
 * or a negative LA_E* code (the detail in lactl_src_error). */
int lactl_src_apps(lactl_src_t *s, lactl_app_t **out, size_t *n);

/* Application id: *out filled; LA_ENOTFOUND (with a message) when the
 * source does not know it. */
int lactl_src_app(lactl_src_t *s, const char *id, lactl_app_t *out);

/* Cycles of app with first <= tag <= last, increasing. *out is malloc'ed
 * (free it; NULL when *n is 0). LA_ENOTFOUND for an unknown application. */
int lactl_src_cycles(lactl_src_t *s, const char *app, uint64_t first,
                     uint64_t last, lactl_cycle_t **out, size_t *n);

/* The Trace-Set of app at cycle (latest: the largest tag with a trace),
 * as a libla_client set (free with la_traceset_free). LA_ENOTFOUND with a
 * message naming what is missing. */
int lactl_src_set(lactl_src_t *s, const char *app, int latest, uint64_t cycle,
                  la_traceset_t **out);

/* Detail of the last failure ("" when none). */
const char *lactl_src_error(const lactl_src_t *s);

/* Prints "lactl CMD: detail" for failure rc and returns LACTL_FAIL. */
int lactl_src_fail(const char *cmd, lactl_src_t *s, int rc);

/* Tags of the cycles sel selects for app: one tag (latest resolved), or
 * the cycles with a trace in the range. *tags is malloc'ed (free it).
 * LA_ENOTFOUND when none. */
int lactl_src_select(lactl_src_t *s, const char *app, const lactl_sel_t *sel,
                     uint64_t **tags, size_t *n);

/* ----------------------------------------------------------- formatting */

/* Writes s as a JSON string (quoted, escaped) to f. */
void lactl_json_str(FILE *f, const char *s);
/* Writes v as a JSON number (%.17g), or null when not finite. */
void lactl_json_num(FILE *f, double v);

/* "YYYY-MM-DD HH:MM:SS.mmm UTC" of a CLOCK_REALTIME time in ns, or "-" for
 * 0. buf holds at least 32 bytes. */
const char *lactl_fmt_time(uint64_t ns, char *buf, size_t len);

/* A number for a table: %.*g with prec digits, but whole numbers instead
 * of an exponent up to 1e15 (1234567, not 1.23e+06); "-" when NaN. */
const char *lactl_fmt_num(double v, int prec, char *buf, size_t len);

/* A ratio: 3 significant digits below 100, a whole number above; "-" for
 * NaN. */
const char *lactl_fmt_ratio(double v, char *buf, size_t len);

/* "2,5,7" of n ranks (at most len - 1 bytes, "..." when cut). */
const char *lactl_fmt_ranks(const uint32_t *r, size_t n, char *buf, size_t len);

/* Opens path for writing ("-" or NULL: stdout). Prints the reason and
 * returns NULL on failure. */
FILE *lactl_out_open(const char *cmd, const char *path);
/* Closes f (unless stdout, which is flushed) and checks for write errors.
 * Returns LACTL_OK or LACTL_FAIL (with a message). */
int lactl_out_close(const char *cmd, const char *path, FILE *f);

/* A text table: columns sized to their widest cell, left- ('l') or
 * right-aligned ('r'), two spaces apart. Cells are copied. */
typedef struct lactl_table lactl_table_t;
/* ncols heads and an align string of ncols letters. NULL when out of
 * memory. */
lactl_table_t *lactl_table_new(int ncols, const char *const *heads,
                               const char *align);
/* Adds a row of ncols cells. 0 or -1 (out of memory). */
int lactl_table_row(lactl_table_t *t, const char *const *cells);
/* Prints the heads and rows, each line starting with indent spaces. */
void lactl_table_print(FILE *f, const lactl_table_t *t, int indent);
void lactl_table_free(lactl_table_t *t);

#endif /* LACTL_UTIL_H */
