/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve.h: what the files of `lactl serve` share. lactl_serve.c
 * parses the command line and runs the poll loop (lactl_http.c's
 * connections, the sets lactl_serve_feed.c's thread reads from the
 * GlobalAgent's feed); lactl_serve_data.c keeps, per application, the
 * latest Trace-Set and the ranks x cycles history, reduced as it arrives,
 * and answers the page's JSON, the behaviour classes of the latest set
 * (lactl_clusters.c) and the element maps reduced on
 * lactl_serve_work.c's thread, the maps by lactl_serve_bin.c's binning (range sums
 * for the mean, range sums and maxima for the max), the page's map of a
 * set summed as its ranks are parsed (lactl_serve_runs.c);
 * lactl_serve_page.c embeds the page (lactl_serve_page.html).
 */
#ifndef LACTL_SERVE_H
#define LACTL_SERVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "la_client.h"
#include "lactl_bin.h"

/* Rank bins of a history column, and the largest element map (per
 * side), both at most about the page's canvas pixels. */
#define LACTL_SV_RANK_BINS 1024
#define LACTL_SV_MAP_BINS 1024
/* The element map the page asks for first (its canvas: 512 x 512 bins,
 * the mean, robust weights where the set serves them): summed as a set's
 * ranks are parsed (lactl_sv_runs_install). */
#define LACTL_SV_PAGE_BINS 512
/* Applications kept (beyond: a set of a new one is counted, not kept). */
#define LACTL_SV_MAX_APPS 256
/* Per-rank totals listed exactly in an element map's answer up to this
 * many ranks (beyond: the history column's bins say them). */
#define LACTL_SV_EXACT_RANKS 4096
/* Elements placed by the application's ids (LA_setGlobalIds, fetched
 * once per application) up to this many; beyond, by global index. */
#define LACTL_SV_MAX_ID_ELEMENTS (UINT64_C(1) << 24)
/* Element-map requests waiting for the reduction thread at once (beyond:
 * answered 503), and answers kept for the next same request. */
#define LACTL_SV_MAX_WAITING 256
#define LACTL_SV_CACHED_MAPS 4
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
  int decode;          /* 1: decode every element, also where range sums
                          serve (the benchmark's and tests' comparison) */
  const atomic_int *stop; /* non-NULL: the reduction stops (LA_ESTATE)
                             once it is non-zero */
} lactl_sv_map_opts_t;
/* Asks for the element map of app's latest set: a grid's middle k slice;
 * else, when every rank gave ids (asked of the GlobalAgent through c once,
 * up to LACTL_SV_MAX_ID_ELEMENTS elements), the elements in the order of
 * their ids; else by global index; in rows. The map is reduced on d's
 * reduction thread (started by the first request) and answered through
 * lactl_sv_map_poll with ticket. 0 (asked), LA_ENOTFOUND (no such
 * application), LA_ELIMIT (LACTL_SV_MAX_WAITING waiting) or LA_ENOMEM,
 * the reason in why. */
int lactl_sv_map_ask(lactl_sv_t *d, const char *app,
                     const lactl_sv_map_opts_t *o, la_client_t *c,
                     uint64_t ticket, char *why, size_t why_len);
/* Asks for the behaviour classes of app's latest set (lactl_sv_classes_of),
 * computed on the reduction thread like a map and answered through
 * lactl_sv_map_poll (kept for the next request of the same set, like the
 * maps). 0, LA_ENOTFOUND, LA_ELIMIT or LA_ENOMEM as lactl_sv_map_ask. */
int lactl_sv_classes_ask(lactl_sv_t *d, const char *app, uint64_t ticket,
                         char *why, size_t why_len);
/* The classes' tolerance (lactl show --clusters' default) and how many
 * rank ranges per class, outliers and reconstructed ranks an answer
 * lists at most (the rest counted). */
#define LACTL_SV_CLASS_TOL 0.05
#define LACTL_SV_CLASS_LIST 1024
/* Writes t's behaviour classes as JSON (lactl_clusters_json, bounded by
 * LACTL_SV_CLASS_LIST: rank ranges, no per-rank arrays). 0, LA_ENOMEM or
 * LA_ESTATE (stop), the reason in why. */
int lactl_sv_classes_of(const la_traceset_t *t, const atomic_int *stop,
                        FILE *f, char *why, size_t why_len);
/* An answer: status 200 with the JSON, or an error with its reason (JSON
 * {"error": ...} for the classes, text for a map); body
 * (malloc'ed) is the receiver's. */
typedef void (*lactl_sv_reply_fn)(void *ctx, uint64_t ticket, int status,
                                  char *body, size_t len);
/* The descriptor that turns readable when a reduction ends (-1 before the
 * first request). */
int lactl_sv_map_fd(const lactl_sv_t *d);
/* Answers what is ready (a reduction that ended, an answer kept for the
 * same set and options) and starts the next reduction; c as for
 * lactl_sv_map_ask. A newer set of an application stops the reduction of
 * its older one, which is then reduced anew. */
void lactl_sv_map_poll(lactl_sv_t *d, la_client_t *c, lactl_sv_reply_fn fn,
                       void *ctx);
/* Reductions started, stopped for a newer set, answers served from kept
 * ones. */
typedef struct lactl_sv_map_stats {
  uint64_t started, superseded, cached;
} lactl_sv_map_stats_t;
void lactl_sv_map_stats(const lactl_sv_t *d, lactl_sv_map_stats_t *s);

/* Writes set t's element map as JSON (what lactl_sv_map_json answers for
 * an application's latest set; pos: each global element's place in id
 * order, or NULL); *ms the time the reduction took. For the benchmark
 * too. */
int lactl_sv_map_of(la_traceset_t *t, const lactl_sv_map_opts_t *o,
                    const uint32_t *pos, FILE *f, double *ms, char *why,
                    size_t why_len);

/* Sets of at least this many elements are binned on every CPU
 * (lactl_sv_fill_t.threads); smaller ones take milliseconds on one. */
#define LACTL_SV_FILL_THREADED (UINT64_C(1) << 20)

/* How lactl_sv_fill bins a set's elements (lactl_serve_bin.c). */
typedef struct lactl_sv_fill {
  int grid;            /* the middle k slice of the global grid g */
  uint64_t g[3];
  const uint32_t *pos; /* not a grid: each global element's place in id
                          order, or NULL: by global index */
  int decode;          /* 1: decode even where range sums serve */
  const atomic_int *stop; /* non-NULL: stop once non-zero */
  unsigned threads;       /* > 1: elements by global index binned on up to
                             this many threads (at most 8), each whole
                             bins' rows: the same bins as on one (a mean
                             to rounding where a rank with a value that is
                             not finite spans two threads' rows) */
  double sum;             /* out: the finite values' sum and count */
  uint64_t nfin;
  uint64_t ranges, decoded; /* out: range sums taken, elements decoded */
} lactl_sv_fill_t;
/* Bins every element of t (weights as t serves them) into b (w x h cells:
 * the grid's slice, or rows of b->w): a mean by range sums of the runs of
 * a bin's row, the max by range sums and range maxima (never decoding,
 * but for a run whose sum is not finite), id places by decoding. Missing
 * ranks' cells count as no
 * data. 0, LA_ENOMEM, LA_EIO (a trace that does not decode) or LA_ESTATE
 * (stopped). */
int lactl_sv_fill(la_traceset_t *t, lactl_bin_t *b, lactl_sv_fill_t *f);

/* The global grid of t (each side's largest) when every rank is a grid
 * rank: 1; 0 otherwise. */
int lactl_sv_grid(const la_traceset_t *t, uint64_t g[3]);
/* The cells (*W x *H, in rows of *W elements by global index) of a map of
 * n elements in at most bins x bins bins. */
void lactl_sv_map_shape(uint64_t n, uint32_t bins, uint64_t *W, uint64_t *H);

/* The runs of a map's bins along a rank's elements (lactl_serve_runs.c):
 * each run the elements of one rank in one row of one bin, in the order
 * of the elements. xend: past each column bin's last cell column (b->bw
 * of them, lactl_sv_run_xend). */
typedef struct lactl_sv_run_it {
  const lactl_bin_t *b;
  const uint64_t *xend;
  int grid, seg;                 /* a grid's slice; a row's part started */
  uint64_t dm0, dm1, o1;         /* a grid rank's dims and origin */
  uint64_t rowlen, x0, cx, y, e, e1, len, xa, xe, ybase, k;
} lactl_sv_run_it_t;
void lactl_sv_run_xend(const lactl_bin_t *b, uint64_t *xend);
/* Starts the runs of elements [e0, e1) of a rank: by global index (dm
 * NULL: its first element the off-th), else a grid rank of dims dm at
 * origin o (elements of one k slice). */
void lactl_sv_run_start(lactl_sv_run_it_t *it, const lactl_bin_t *b,
                        const uint64_t *xend, const uint64_t *dm,
                        const uint64_t *o, uint64_t off, uint64_t e0,
                        uint64_t e1);
/* The next run: its first element (of the rank's), count and bin index
 * (lactl_bin_index). 1, or 0 when none is left. */
int lactl_sv_run_next(lactl_sv_run_it_t *it, uint64_t *first, uint64_t *cnt,
                      uint64_t *bin);

/* The sums of the page's map's runs (LACTL_SV_PAGE_BINS, the mean, by
 * global index), taken while a set's ranks are parsed: c's sets of more
 * than LACTL_SV_MAX_ID_ELEMENTS elements that are not a grid get them,
 * each rank's from its index as it is parsed (then closed), so that the
 * map opens no index again. */
void lactl_sv_runs_install(la_client_t *c);
typedef struct lactl_sv_runs lactl_sv_runs_t;
/* t's run sums when they serve the fill of b by f (the same bins, the
 * mean, by global index, the weights t serves now), else NULL. */
const lactl_sv_runs_t *lactl_sv_runs_of(const la_traceset_t *t,
                                        const lactl_bin_t *b,
                                        const lactl_sv_fill_t *f);
/* Where rank r's runs from its element e0 on start (*at), 1; 0 when its
 * sums were not taken (a sum not finite: the rank is binned from its
 * trace). */
int lactl_sv_runs_rank(const lactl_sv_runs_t *p, uint32_t r, uint64_t e0,
                       size_t *at);
/* The sum of run *at (of first element first), *at then the next one. */
double lactl_sv_runs_sum(const lactl_sv_runs_t *p, size_t *at,
                         uint64_t first);

/* The reduction thread (lactl_serve_work.c): one job at a time. */
typedef struct lactl_sv_work lactl_sv_work_t;
typedef void (*lactl_sv_job_fn)(void *arg);
/* Starts the thread. 0, LA_ENOMEM or LA_EIO. */
int lactl_sv_work_new(lactl_sv_work_t **w);
/* The eventfd that turns readable when a job ends. */
int lactl_sv_work_fd(const lactl_sv_work_t *w);
/* Whether a job was handed over and not yet collected. */
int lactl_sv_work_busy(const lactl_sv_work_t *w);
/* Hands fn(arg) to the thread: arg is the thread's until
 * lactl_sv_work_done says 1. 0, or LA_ESTATE while busy. */
int lactl_sv_work_run(lactl_sv_work_t *w, lactl_sv_job_fn fn, void *arg);
/* 1 once the job handed over ended (then not busy), else 0. */
int lactl_sv_work_done(lactl_sv_work_t *w);
/* Waits for the job in progress (ask it to stop first), ends the thread. */
void lactl_sv_work_free(lactl_sv_work_t *w);

/* The feed thread (lactl_serve_feed.c): reads the sets of a subscribed
 * client (taken: closed by lactl_sv_feed_free) off the poll loop and hands
 * them over one at a time. 0, LA_ENOMEM or LA_EIO (c not taken then). */
typedef struct lactl_sv_feed lactl_sv_feed_t;
int lactl_sv_feed_new(la_client_t *c, lactl_sv_feed_t **f);
/* The eventfd that turns readable when a set waits or the stream is lost. */
int lactl_sv_feed_fd(const lactl_sv_feed_t *f);
/* 1 with *t the next set (the caller's), 0 when none waits, or the code of
 * the lost stream (the thread ended; why says what) once no set waits. A
 * set that does not come (over a limit, malformed) is said on stderr. */
int lactl_sv_feed_next(lactl_sv_feed_t *f, la_traceset_t **t, char *why,
                       size_t why_len);
/* Ends the thread (within 100 ms, or once the set it is receiving has
 * arrived), frees what waits, closes the client. */
void lactl_sv_feed_free(lactl_sv_feed_t *f);
/* Sets the process's allocator for sets that replace one another (lactl
 * serve calls it first, before any thread starts): one arena, free memory
 * at its top given back only past LACTL_SV_KEEP_BYTES, chunks below 32 MiB
 * from it, so that the next set reuses the pages the freed set leaves
 * instead of faulting in new ones. Advisory: without glibc's malloc
 * it does nothing. */
#define LACTL_SV_KEEP_BYTES (1024u * 1024u * 1024u)
void lactl_sv_feed_memory(void);

/* Sets the line the page shows about the feed ("" when fine). */
void lactl_sv_set_feed(lactl_sv_t *d, const char *status);

/* The embedded page (lactl_serve_page.c). */
const char *lactl_sv_page(size_t *len);

#endif /* LACTL_SERVE_H */
