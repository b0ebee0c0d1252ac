/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_source.h: lactl's data source: the GlobalAgent's feed (through
 * libla_client) or a GlobalAgent's SQLite store read directly (--db).
 *
 * The two sources answer the same three questions (applications, cycles of
 * an application, one Trace-Set) with the same typed messages (the feed's
 * QueryReply: AppList, CycleList, TraceSet; for a store built by the
 * GlobalAgent's own answering code), turned here into the same structures,
 * so every subcommand prints the same bytes whichever source it reads.
 * Nothing here prints except lactl_src_open() and lactl_src_fail(); no
 * function exits.
 */
#ifndef LACTL_SOURCE_H
#define LACTL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "la_client.h"
#include "lactl_opts.h"

typedef struct lactl_src lactl_src_t;

/* One application, as both sources report it. */
typedef struct lactl_app {
  char id[129], name[129], metric[129], unit[33];
  uint32_t nprocs;            /* 0: unknown (no RankStart yet) */
  uint64_t elements;          /* sum of the started ranks' element counts */
  uint64_t cycles;            /* cycles with at least one trace */
  uint64_t complete, partial; /* closed Trace-Sets */
  int ranks_started, ranks_ended;
  int ranks_lost; /* of ranks_ended: their LocalAgent was lost */
} lactl_app_t;

/* 1 when every rank of a known nprocs has ended. */
int lactl_app_ended(const lactl_app_t *a);

enum { LACTL_OPEN = 0, LACTL_COMPLETE = 1, LACTL_PARTIAL = 2 };

/* One cycle of an application. */
typedef struct lactl_cycle {
  uint64_t tag;
  int state;         /* LACTL_OPEN, LACTL_COMPLETE, LACTL_PARTIAL */
  uint32_t present;  /* ranks with a trace */
  uint32_t missing;  /* closed: missing at close; open: not arrived yet */
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
 * (unreachable, a host name that does not resolve (named, with the
 * resolver's message), missing or unreadable file) or LACTL_USAGE (an
 * address that is not HOST:PORT, or both --db and --global); *out is then
 * NULL. */
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
 * as a libla_client set (free with la_traceset_free); with the common
 * option --channel NAME, that channel's view (la_traceset_channel).
 * LA_ENOTFOUND with a message naming what is missing (an unknown channel:
 * with the set's channel names). */
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

/* Rank's global ids (the application's numbering) into ids, n = the
 * rank's element count. LA_ENOTFOUND when the rank gave none (or not all
 * are stored); other errors with a message. */
int lactl_src_rank_ids(lactl_src_t *s, const char *app, uint32_t rank,
                       int64_t *ids, uint64_t n);

#endif /* LACTL_SOURCE_H */
