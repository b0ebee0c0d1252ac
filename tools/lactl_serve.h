/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve.h: what the files of `lactl serve` share. lactl_serve.c
 * parses the command line and runs the poll loop (the GlobalAgent's feed
 * and lactl_http.c's connections); lactl_serve_data.c keeps, per
 * application, the latest Trace-Set and the ranks x cycles history,
 * reduced as it arrives, and answers the page's JSON;
 * lactl_serve_page.c embeds the page (lactl_serve_page.html).
 */
#ifndef LACTL_SERVE_H
#define LACTL_SERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "la_client.h"

/* Rank bins of a history column, and the largest element map (per
 * side), both at most about the page's canvas pixels. */
#define LACTL_SV_RANK_BINS 1024
#define LACTL_SV_MAP_BINS 1024
/* Applications kept (beyond: a set of a new one is counted, not kept). */
#define LACTL_SV_MAX_APPS 256
/* Per-rank totals listed exactly in an element map's answer up to this
 * many ranks (beyond: the history column's bins say them). */
#define LACTL_SV_EXACT_RANKS 4096
/* Elements placed by the application's ids (LA_setGlobalIds, fetched
 * once per application) up to this many; beyond, by global index. */
#define LACTL_SV_MAX_ID_ELEMENTS (UINT64_C(1) << 24)
/* A rank is marked interfered when interference added more than this
 * share of its measured total. */
#define LACTL_SV_INTERF_SHARE 0.05

typedef struct lactl_sv lactl_sv_t;

/* A new store keeping hist cycles per application. NULL: out of memory. */
lactl_sv_t *lactl_sv_new(size_t hist);
void lactl_sv_free(lactl_sv_t *d);

/* Takes set t (owned from now on, also on failure): reduces it to its
 * application's history column and keeps it as the latest set when it is
 * the newest. *event (malloc'ed, *len bytes, one JSON line: app, cycle,
 * the column) is what the event stream announces. 0, LA_ENOMEM, or
 * LA_ELIMIT (LACTL_SV_MAX_APPS applications already: counted). */
int lactl_sv_take(lactl_sv_t *d, la_traceset_t *t, char **event, size_t *len);

/* Answers as JSON into f: the applications; an application's history
 * (every column); the element map of its latest set. 0, or LA_ENOTFOUND
 * / LA_EINVAL with the reason in why. */
int lactl_sv_apps_json(lactl_sv_t *d, FILE *f);
int lactl_sv_heat_json(lactl_sv_t *d, const char *app, FILE *f, char *why,
                       size_t why_len);

/* The element map's options, from the page's query. */
typedef struct lactl_sv_map_opts {
  int kind;            /* LA_WEIGHTS_MEASURED or LA_WEIGHTS_ROBUST */
  const char *channel; /* "" or NULL: the sum */
  int agg;             /* LACTL_BIN_MEAN or LACTL_BIN_MAX */
  uint32_t bins;       /* per side, 16..LACTL_SV_MAP_BINS */
} lactl_sv_map_opts_t;
/* The element map of app's latest set: a grid's middle k slice; else,
 * when every rank gave ids (asked of the GlobalAgent through c once, up
 * to LACTL_SV_MAX_ID_ELEMENTS elements), the elements in the order of
 * their ids; else by global index; in rows. */
int lactl_sv_map_json(lactl_sv_t *d, const char *app,
                      const lactl_sv_map_opts_t *o, la_client_t *c, FILE *f,
                      char *why, size_t why_len);

/* Writes set t's element map as JSON (what lactl_sv_map_json answers for
 * an application's latest set; pos: each global element's place in id
 * order, or NULL); *ms the time the reduction took. For the benchmark
 * too. */
int lactl_sv_map_of(la_traceset_t *t, const lactl_sv_map_opts_t *o,
                    const uint32_t *pos, FILE *f, double *ms, char *why,
                    size_t why_len);

/* Sets the line the page shows about the feed ("" when fine). */
void lactl_sv_set_feed(lactl_sv_t *d, const char *status);

/* The embedded page (lactl_serve_page.c). */
const char *lactl_sv_page(size_t *len);

#endif /* LACTL_SERVE_H */
