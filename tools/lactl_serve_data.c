/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve_data.c: what `lactl serve` keeps and answers (see
 * lactl_serve.h). Per application: its latest Trace-Set, and a history of
 * at most hist cycles, each reduced when it arrives to one column of at
 * most LACTL_SV_RANK_BINS rank bins (the max and the mean of the ranks'
 * totals in each bin, robust where the set serves them, its missing ranks,
 * its coarse ranks and whether one was interfered). The element map of
 * the latest set is reduced on request to at most bins x bins
 * (lactl_bin.h, by the mean or the max) and sent as base64 float32, so an
 * answer's size depends on the canvas, not on the ranks or elements. A rank whose trace is coarse (its
 * LocalAgent was behind: block sums, exact totals) is counted in its bin
 * and named, with the reason, in the map's answer. The behaviour classes
 * of the latest set (/api/clusters) are a job of the same thread, kept
 * like the maps.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "lactl_bin.h"
#include "lactl_clusters.h"
#include "lactl_png.h"
#include "lactl_serve.h"
#include "lactl_util.h"

/* One cycle of the history. */
typedef struct {
  uint64_t tag;
  uint32_t np, rb;     /* ranks, rank bins */
  double imb, cmean;   /* max/mean of the totals, their mean */
  int robust, partial; /* totals robust; ranks missing */
  float *vmax, *vmean; /* per bin, NaN: every rank of it missing */
  uint32_t *miss;      /* per bin: missing ranks */
  uint8_t *intf;       /* per bin: a rank interfered */
  uint32_t *coarse;    /* per bin: ranks whose trace is coarse */
} la__col_t;

typedef struct {
  char id[129];
  la_traceset_t *latest;
  uint64_t gen; /* the latest set's generation (the store's count) */
  uint64_t sets;   /* received */
  la__col_t *cols; /* increasing tags, at most hist */
  size_t ncols;
  /* the application's numbering: pos[global element] = its place in id
   * order (NULL: not every rank gave ids, or too many elements), for
   * pos_n elements and pos_np ranks (asked again when those change) */
  uint32_t *pos;
  uint64_t pos_n;
  uint32_t pos_np;
  uint64_t pos_tag; /* the cycle when asked without success */
  int pos_asked;
} la__app_t;

/* What is asked of an application's latest set: its element map (with
 * the options) or its behaviour classes (what LA__CLASSES, the options
 * zero). */
enum { LA__MAP = 0, LA__CLASSES = 1 };
typedef struct {
  char app[129];
  int what;
  int kind, agg, decode;
  uint32_t bins;
  char channel[130];
} la__key_t;

/* A request waiting for its map. */
typedef struct {
  uint64_t ticket;
  la__key_t k;
} la__wait_t;

/* A map answered, kept for the next same request of the same set. */
typedef struct {
  la__key_t k;
  uint64_t gen;
  char *body;
  size_t len;
} la__kept_t;

/* The reduction handed to the thread: the set is the thread's (and no
 * longer the application's when a newer one replaced it: retired) until
 * it ends. */
typedef struct {
  la__key_t k;
  uint64_t gen;
  la_traceset_t *set;
  const uint32_t *pos;
  int retired;
  atomic_int stop;
  int rc; /* out: lactl_sv_map_of's */
  char *body;
  size_t len;
  char why[300];
} la__job_t;

struct lactl_sv {
  size_t hist;
  uint64_t gen;
  lactl_sv_work_t *work; /* started by the first map request */
  la__job_t job;         /* valid while work is busy */
  la__wait_t *wait;      /* LACTL_SV_MAX_WAITING */
  size_t nwait;
  la__kept_t kept[LACTL_SV_CACHED_MAPS];
  size_t kept_next;
  lactl_sv_map_stats_t mst;
  la__app_t *apps;
  size_t napps;
  uint64_t refused; /* sets of applications beyond LACTL_SV_MAX_APPS */
  char feed[256];
};

lactl_sv_t *lactl_sv_new(size_t hist) {
  lactl_sv_t *d = calloc(1, sizeof *d);
  if (d) d->hist = hist ? hist : 1;
  return d;
}

static void la__col_free(la__col_t *c) {
  free(c->vmax), free(c->vmean), free(c->miss), free(c->intf);
  free(c->coarse);
}

void lactl_sv_free(lactl_sv_t *d) {
  if (!d) return;
  if (lactl_sv_work_busy(d->work)) {
    atomic_store(&d->job.stop, 1);
    lactl_sv_work_free(d->work); /* waits for it */
    if (d->job.retired) la_traceset_free(d->job.set);
    free(d->job.body);
  } else {
    lactl_sv_work_free(d->work);
  }
  for (size_t i = 0; i < LACTL_SV_CACHED_MAPS; i++) free(d->kept[i].body);
  free(d->wait);
  for (size_t i = 0; i < d->napps; i++) {
    la_traceset_free(d->apps[i].latest);
    for (size_t c = 0; c < d->apps[i].ncols; c++)
      la__col_free(&d->apps[i].cols[c]);
    free(d->apps[i].cols);
    free(d->apps[i].pos);
  }
  free(d->apps);
  free(d);
}

void lactl_sv_set_feed(lactl_sv_t *d, const char *status) {
  snprintf(d->feed, sizeof d->feed, "%s", status);
}

static la__app_t *la__find(lactl_sv_t *d, const char *id) {
  for (size_t i = 0; i < d->napps; i++)
    if (!strcmp(d->apps[i].id, id)) return &d->apps[i];
  return NULL;
}

/* The per-rank totals t serves (robust where it serves robust weights),
 * NaN for missing ranks, into tot (nprocs). */
static void la__totals(const la_traceset_t *t, double *tot) {
  if (la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST)
    la_traceset_robust_totals(t, tot);
  else
    la_traceset_rank_totals(t, tot);
}

/* Whether rank r of t was interfered (interference above the share). */
static int la__interfered(const la_traceset_t *t, uint32_t r) {
  double intf, sum;
  if (la_traceset_rank_interference(t, r, &intf, NULL, NULL) != 0 ||
      !isfinite(intf) || la_traceset_rank_stats(t, r, &sum, NULL, NULL) != 0)
    return 0;
  return sum > 0 && intf > LACTL_SV_INTERF_SHARE * sum;
}

/* Reduces t to column c. 0 or LA_ENOMEM. */
static int la__column(const la_traceset_t *t, la__col_t *c) {
  const uint32_t np = la_traceset_nprocs(t);
  memset(c, 0, sizeof *c);
  c->tag = la_traceset_cycle(t);
  c->np = np;
  c->robust = la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST;
  c->partial = !la_traceset_complete(t);
  double *tot = malloc((np ? np : 1) * sizeof *tot);
  lactl_bin_t bmax = {0}, bmean = {0};
  int rc = tot ? 0 : LA_ENOMEM;
  if (!rc && np) {
    rc = lactl_bin_init(&bmax, np, 1, LACTL_SV_RANK_BINS, 1, LACTL_BIN_MAX);
    if (!rc)
      rc = lactl_bin_init(&bmean, np, 1, LACTL_SV_RANK_BINS, 1, LACTL_BIN_MEAN);
  }
  c->rb = np ? bmax.bw : 0;
  if (!rc) {
    size_t rb = c->rb ? c->rb : 1;
    c->vmax = malloc(rb * sizeof *c->vmax);
    c->vmean = malloc(rb * sizeof *c->vmean);
    c->miss = calloc(rb, sizeof *c->miss);
    c->intf = calloc(rb, sizeof *c->intf);
    c->coarse = calloc(rb, sizeof *c->coarse);
    if (!c->vmax || !c->vmean || !c->miss || !c->intf || !c->coarse)
      rc = LA_ENOMEM;
  }
  if (!rc) {
    la__totals(t, tot);
    double sum = 0, mx = 0;
    uint32_t k = 0;
    for (uint32_t r = 0; r < np; r++) {
      uint64_t i = lactl_bin_index(&bmax, r, 0);
      lactl_bin_add_at(&bmax, i, tot[r]);
      lactl_bin_add_at(&bmean, i, tot[r]);
      if (!la_traceset_has_rank(t, r)) c->miss[i]++;
      if (la__interfered(t, r)) c->intf[i] = 1;
      if (la_traceset_rank_coarse(t, r)) c->coarse[i]++;
      if (isfinite(tot[r])) sum += tot[r], mx = tot[r] > mx ? tot[r] : mx, k++;
    }
    c->cmean = k ? sum / k : NAN;
    c->imb = k && sum > 0 ? mx / c->cmean : k ? 1.0 : NAN;
    for (uint32_t b = 0; b < c->rb; b++) {
      c->vmax[b] = (float)lactl_bin_value(&bmax, b, 0);
      c->vmean[b] = (float)lactl_bin_value(&bmean, b, 0);
    }
  }
  lactl_bin_free(&bmax), lactl_bin_free(&bmean);
  free(tot);
  if (rc) la__col_free(c);
  return rc;
}

static void la__num(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, "%.7g", v);
  else
    fputs("null", f);
}

static void la__col_json(FILE *f, const la__col_t *c) {
  fprintf(f, "{\"cycle\":%llu,\"np\":%u,\"rb\":%u,\"imbalance\":",
          (unsigned long long)c->tag, c->np, c->rb);
  la__num(f, c->imb);
  fputs(",\"mean\":", f);
  la__num(f, c->cmean);
  fprintf(f, ",\"weights\":\"%s\",\"partial\":%s,\"max\":\"",
          c->robust ? "robust" : "measured", c->partial ? "true" : "false");
  lactl_base64(f, c->vmax, c->rb * sizeof *c->vmax);
  fputs("\",\"avg\":\"", f);
  lactl_base64(f, c->vmean, c->rb * sizeof *c->vmean);
  fputs("\",\"miss\":[", f);
  for (uint32_t b = 0; b < c->rb; b++)
    fprintf(f, "%s%u", b ? "," : "", c->miss[b]);
  fputs("],\"intf\":[", f);
  for (uint32_t b = 0; b < c->rb; b++)
    fprintf(f, "%s%u", b ? "," : "", c->intf[b]);
  fputs("],\"coarse\":[", f);
  for (uint32_t b = 0; b < c->rb; b++)
    fprintf(f, "%s%u", b ? "," : "", c->coarse[b]);
  fputs("]}", f);
}

/* Puts column c into a's history (sorted by tag; a column of the same
 * tag is replaced; beyond hist the oldest goes). Takes c's arrays. */
static int la__insert(lactl_sv_t *d, la__app_t *a, la__col_t *c, size_t *at) {
  size_t i = a->ncols;
  while (i > 0 && a->cols[i - 1].tag > c->tag) i--;
  if (i > 0 && a->cols[i - 1].tag == c->tag) {
    la__col_free(&a->cols[i - 1]);
    a->cols[i - 1] = *c;
    *at = i - 1;
    return 0;
  }
  if (a->ncols == d->hist) {
    if (i == 0) { /* older than all kept: not kept */
      la__col_free(c);
      *at = SIZE_MAX;
      return 0;
    }
    la__col_free(&a->cols[0]);
    memmove(a->cols, a->cols + 1, (a->ncols - 1) * sizeof *a->cols);
    a->ncols--, i--;
  } else {
    la__col_t *n = realloc(a->cols, (a->ncols + 1) * sizeof *n);
    if (!n) {
      la__col_free(c);
      return LA_ENOMEM;
    }
    a->cols = n;
  }
  memmove(a->cols + i + 1, a->cols + i, (a->ncols - i) * sizeof *a->cols);
  a->cols[i] = *c;
  a->ncols++;
  *at = i;
  return 0;
}

int lactl_sv_take(lactl_sv_t *d, la_traceset_t *t, char **event, size_t *len) {
  *event = NULL, *len = 0;
  const char *id = la_traceset_app_id(t);
  la__app_t *a = la__find(d, id);
  if (!a) {
    if (d->napps >= LACTL_SV_MAX_APPS) {
      d->refused++;
      la_traceset_free(t);
      return LA_ELIMIT;
    }
    la__app_t *n = realloc(d->apps, (d->napps + 1) * sizeof *n);
    if (!n) {
      la_traceset_free(t);
      return LA_ENOMEM;
    }
    d->apps = n;
    a = &d->apps[d->napps++];
    memset(a, 0, sizeof *a);
    snprintf(a->id, sizeof a->id, "%s", id);
  }
  la__col_t c;
  int rc = la__column(t, &c);
  size_t at = SIZE_MAX;
  if (!rc) rc = la__insert(d, a, &c, &at);
  if (rc) {
    la_traceset_free(t);
    return rc;
  }
  a->sets++;
  if (!a->latest || la_traceset_cycle(a->latest) <= la_traceset_cycle(t)) {
    if (a->latest && lactl_sv_work_busy(d->work) && d->job.set == a->latest) {
      /* being reduced: the thread stops, and the set is freed when it
       * has (the waiting requests get the new set's map) */
      d->job.retired = 1;
      atomic_store(&d->job.stop, 1);
    } else {
      la_traceset_free(a->latest);
    }
    a->latest = t;
    a->gen = ++d->gen;
  } else {
    la_traceset_free(t);
  }
  FILE *f = open_memstream(event, len);
  if (!f) return LA_ENOMEM;
  fputs("{\"app\":", f);
  lactl_json_str(f, a->id);
  fprintf(f,
          ",\"cycle\":%llu,\"latest\":%llu,\"col\":", (unsigned long long)c.tag,
          (unsigned long long)la_traceset_cycle(a->latest));
  if (at != SIZE_MAX)
    la__col_json(f, &a->cols[at]);
  else
    fputs("null", f);
  fputs("}", f);
  if (fclose(f) != 0) {
    free(*event);
    *event = NULL;
    return LA_ENOMEM;
  }
  return 0;
}

int lactl_sv_apps_json(lactl_sv_t *d, FILE *f) {
  fputs("{\"feed\":", f);
  lactl_json_str(f, d->feed);
  fprintf(f, ",\"refused_sets\":%llu,\"apps\":[",
          (unsigned long long)d->refused);
  for (size_t i = 0; i < d->napps; i++) {
    const la__app_t *a = &d->apps[i];
    const la_traceset_t *t = a->latest;
    fputs(i ? ",{\"id\":" : "{\"id\":", f);
    lactl_json_str(f, a->id);
    fprintf(f,
            ",\"cycle\":%llu,\"nprocs\":%u,\"elements\":%llu,\"state\":\"%s\","
            "\"sets\":%llu,\"metric\":",
            (unsigned long long)la_traceset_cycle(t), la_traceset_nprocs(t),
            (unsigned long long)la_traceset_elements(t),
            lactl_state_name(lactl_set_state(t)), (unsigned long long)a->sets);
    lactl_json_str(f, la_traceset_metric(t));
    fputs(",\"unit\":", f);
    lactl_json_str(f, la_traceset_unit(t));
    fputs("}", f);
  }
  fputs("]}", f);
  return 0;
}

int lactl_sv_heat_json(lactl_sv_t *d, const char *app, FILE *f, char *why,
                       size_t why_len) {
  const la__app_t *a = la__find(d, app);
  if (!a) {
    snprintf(why, why_len, "no application '%s'", app);
    return LA_ENOTFOUND;
  }
  fputs("{\"app\":", f);
  lactl_json_str(f, a->id);
  fprintf(f, ",\"hist\":%zu,\"cols\":[", d->hist);
  for (size_t i = 0; i < a->ncols; i++) {
    if (i) fputc(',', f);
    la__col_json(f, &a->cols[i]);
  }
  fputs("]}", f);
  return 0;
}

/* Sorting (id, element) pairs. */
typedef struct {
  int64_t id;
  uint64_t e;
} la__ide_t;
static int la__ide_cmp(const void *a, const void *b) {
  const la__ide_t *x = a, *y = b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  return x->e < y->e ? -1 : x->e > y->e;
}

/* a's places in id order for set t, asked of the GlobalAgent through c
 * once (again when the element or rank count changes, and at the next
 * cycle after an answer without every rank's ids): NULL when not
 * every rank gave ids, c is NULL, or the set has more than
 * LACTL_SV_MAX_ID_ELEMENTS elements. */
static const uint32_t *la__positions(la__app_t *a, la_client_t *c,
                                     const la_traceset_t *t) {
  const uint64_t n = la_traceset_elements(t);
  const uint32_t np = la_traceset_nprocs(t);
  const uint64_t tag = la_traceset_cycle(t);
  if (a->pos_asked && a->pos_n == n && a->pos_np == np &&
      (a->pos || a->pos_tag == tag))
    return a->pos;
  free(a->pos);
  a->pos = NULL, a->pos_n = n, a->pos_np = np, a->pos_asked = 1;
  a->pos_tag = tag; /* without ids (yet): asked again for the next cycle */
  if (!c || n == 0 || n > LACTL_SV_MAX_ID_ELEMENTS) return NULL;
  int64_t *ids = malloc(n * sizeof *ids);
  la__ide_t *p = malloc(n * sizeof *p);
  uint32_t *pos = malloc(n * sizeof *pos);
  uint32_t napp = 0;
  if (ids && p && pos && la_client_set_ids(c, t, ids, &napp) == 0 &&
      napp == np) {
    for (uint64_t e = 0; e < n; e++) p[e] = (la__ide_t){ids[e], e};
    qsort(p, n, sizeof *p, la__ide_cmp);
    for (uint64_t k = 0; k < n; k++) pos[p[k].e] = (uint32_t)k;
    a->pos = pos, pos = NULL;
  }
  free(ids), free(p), free(pos);
  return a->pos;
}

static double la__ms_since(const struct timespec *a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) * 1e3 +
         (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

int lactl_sv_map_of(la_traceset_t *t, const lactl_sv_map_opts_t *o,
                    const uint32_t *pos, FILE *f, double *ms, char *why,
                    size_t why_len) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  la_traceset_t *v = t, *view = NULL;
  if (o->channel && *o->channel) {
    int ch = la_traceset_channel_find(t, o->channel);
    if (ch < 0 || la_traceset_channel(t, (size_t)ch, &view) != 0) {
      snprintf(why, why_len, "%s has no channel '%s'", la_traceset_app_id(t),
               o->channel);
      return LA_ENOTFOUND;
    }
    v = view;
  }
  int robust_ok = la_traceset_set_weights(v, o->kind) == 0;
  const uint32_t np = la_traceset_nprocs(v);
  const uint64_t n = la_traceset_elements(v);
  uint64_t g[3], W, H;
  int grid = lactl_sv_grid(v, g);
  if (grid) pos = NULL;
  if (grid)
    W = g[0], H = g[1];
  else
    lactl_sv_map_shape(n, o->bins, &W, &H);
  lactl_bin_t b;
  /* a large set's rows of bins are binned on every CPU */
  long cpus = n >= LACTL_SV_FILL_THREADED ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
  lactl_sv_fill_t fl = {.grid = grid, .g = {g[0], g[1], g[2]}, .pos = pos,
                        .decode = o->decode, .stop = o->stop,
                        .threads = cpus > 1 ? (unsigned)cpus : 1};
  int rc = lactl_bin_init(&b, W, H, o->bins, o->bins, o->agg);
  if (!rc) rc = lactl_sv_fill(v, &b, &fl);
  float *vals = rc ? NULL : malloc((size_t)b.bw * b.bh * sizeof *vals);
  double *tot = malloc((np ? np : 1) * sizeof *tot);
  if (!rc && (!vals || !tot)) rc = LA_ENOMEM;
  if (rc) {
    snprintf(why, why_len, "%s reducing %s",
             rc == LA_ESTATE ? "stopped" : la_client_strerror(rc),
             la_traceset_app_id(t));
    free(vals), free(tot), lactl_bin_free(&b), la_traceset_free(view);
    return rc;
  }
  for (uint32_t y = 0; y < b.bh; y++)
    for (uint32_t x = 0; x < b.bw; x++)
      vals[x + (size_t)b.bw * y] = (float)lactl_bin_value(&b, x, y);
  la__totals(v, tot);
  double ms_red = la__ms_since(&t0);
  fputs("{\"app\":", f);
  lactl_json_str(f, la_traceset_app_id(t));
  fprintf(
      f,
      ",\"cycle\":%llu,\"state\":\"%s\",\"nprocs\":%u,\"elements\":%llu,"
      "\"weights\":\"%s\",\"robust_available\":%s,\"channel\":",
      (unsigned long long)la_traceset_cycle(t),
      lactl_state_name(lactl_set_state(t)), np, (unsigned long long)n,
      la_traceset_weights_kind(v) == LA_WEIGHTS_ROBUST ? "robust" : "measured",
      la_traceset_has_robust(v) && robust_ok ? "true" : "false");
  lactl_json_str(f, o->channel ? o->channel : "");
  fputs(",\"channels\":[", f);
  for (size_t c = 0; c < la_traceset_channels(t); c++) {
    if (c) fputc(',', f);
    lactl_json_str(f, la_traceset_channel_name(t, c));
  }
  fputs("],\"unit\":", f);
  lactl_json_str(f, la_traceset_unit(t));
  if (grid)
    fprintf(
        f,
        ",\"layout\":\"grid\",\"grid\":[%llu,%llu,%llu],\"slice\":\"k=%llu\"",
        (unsigned long long)g[0], (unsigned long long)g[1],
        (unsigned long long)g[2], (unsigned long long)(g[2] / 2));
  else
    fputs(pos ? ",\"layout\":\"id\"" : ",\"layout\":\"index\"", f);
  fprintf(f,
          ",\"w\":%llu,\"h\":%llu,\"bw\":%u,\"bh\":%u,\"agg\":\"%s\","
          "\"mean\":",
          (unsigned long long)W, (unsigned long long)H, b.bw, b.bh,
          lactl_bin_mode_name(o->agg));
  la__num(f, fl.nfin ? fl.sum / (double)fl.nfin : NAN);
  fputs(",\"values\":\"", f);
  lactl_base64(f, vals, (size_t)b.bw * b.bh * sizeof *vals);
  fputs("\",\"totals\":", f);
  if (np <= LACTL_SV_EXACT_RANKS) {
    fputc('[', f);
    for (uint32_t r = 0; r < np; r++) {
      if (r) fputc(',', f);
      lactl_json_num(f, tot[r]); /* exact, as lactl show --json */
    }
    fputc(']', f);
  } else {
    fputs("null", f);
  }
  fputs(",\"missing\":[", f);
  for (uint32_t r = 0, k = 0; r < np; r++)
    if (!la_traceset_has_rank(v, r)) {
      fprintf(f, "%s{\"rank\":%u,\"reason\":", k++ ? "," : "", r);
      const char *why_m = la_traceset_missing_reason(v, r);
      lactl_json_str(f, why_m ? why_m : "");
      fputc('}', f);
      if (k >= 64) break;
    }
  fputs("],\"interfered\":[", f);
  for (uint32_t r = 0, k = 0; r < np && k < 1024; r++)
    if (la_traceset_has_rank(v, r) && la__interfered(v, r))
      fprintf(f, "%s%u", k++ ? "," : "", r);
  fputs("],\"coarse\":[", f);
  for (uint32_t r = 0, k = 0; r < np && k < 64; r++) {
    const char *why_c = la_traceset_rank_coarse(v, r);
    if (!why_c) continue;
    fprintf(f, "%s{\"rank\":%u,\"reason\":", k++ ? "," : "", r);
    lactl_json_str(f, why_c);
    fputc('}', f);
  }
  double imb = NAN;
  if (la_traceset_weights_kind(v) == LA_WEIGHTS_ROBUST
          ? la_traceset_robust_imbalance(v, &imb)
          : la_traceset_imbalance(v, &imb))
    imb = NAN;
  fputs("],\"imbalance\":", f);
  la__num(f, imb);
  fprintf(f,
          ",\"reduce_ms\":%.3f,\"reduced_by\":\"%s\",\"range_sums\":%llu,"
          "\"decoded\":%llu}",
          ms_red,
          fl.decoded && fl.ranges ? "range sums and decoding"
          : fl.decoded            ? "decoding"
          : o->agg == LACTL_BIN_MAX ? "range sums and maxima"
                                  : "range sums",
          (unsigned long long)fl.ranges, (unsigned long long)fl.decoded);
  if (ms) *ms = ms_red;
  free(vals), free(tot);
  lactl_bin_free(&b);
  la_traceset_free(view);
  return 0;
}

int lactl_sv_classes_of(const la_traceset_t *t, const atomic_int *stop,
                        FILE *f, char *why, size_t why_len) {
  lactl_clusters_t k;
  int rc = lactl_clusters_of(t, LACTL_SV_CLASS_TOL, stop, &k, why, why_len);
  if (rc) return rc;
  lactl_clusters_json(f, t, &k, LACTL_SV_CLASS_LIST);
  lactl_clusters_free(&k);
  return 0;
}

/* The thread's job: the map or the classes of the job's set. */
static void la__job_run(void *arg) {
  la__job_t *j = arg;
  lactl_sv_map_opts_t o = {.kind = j->k.kind,
                           .channel = j->k.channel,
                           .agg = j->k.agg,
                           .bins = j->k.bins,
                           .decode = j->k.decode,
                           .stop = &j->stop};
  FILE *f = open_memstream(&j->body, &j->len);
  j->rc = !f ? LA_ENOMEM
          : j->k.what == LA__CLASSES
              ? lactl_sv_classes_of(j->set, &j->stop, f, j->why, sizeof j->why)
              : lactl_sv_map_of(j->set, &o, j->pos, f, NULL, j->why,
                                sizeof j->why);
  if (!f) snprintf(j->why, sizeof j->why, "out of memory");
  if (f && fclose(f) != 0 && !j->rc) {
    j->rc = LA_ENOMEM;
    snprintf(j->why, sizeof j->why, "out of memory");
  }
  if (j->rc) free(j->body), j->body = NULL, j->len = 0;
}

static int la__key_eq(const la__key_t *a, const la__key_t *b) {
  return a->what == b->what && a->kind == b->kind && a->agg == b->agg &&
         a->bins == b->bins &&
         a->decode == b->decode && !strcmp(a->app, b->app) &&
         !strcmp(a->channel, b->channel);
}

/* Queues request ticket for k (its app known or not). */
static int la__ask(lactl_sv_t *d, const la__key_t *k, uint64_t ticket,
                   char *why, size_t why_len) {
  const char *app = k->app;
  if (!la__find(d, app)) {
    snprintf(why, why_len, "no application '%s'", app);
    return LA_ENOTFOUND;
  }
  if (!d->wait) d->wait = malloc(LACTL_SV_MAX_WAITING * sizeof *d->wait);
  if (!d->work && lactl_sv_work_new(&d->work) != 0) d->work = NULL;
  if (!d->wait || !d->work) {
    snprintf(why, why_len, "out of memory: no reduction thread");
    return LA_ENOMEM;
  }
  if (d->nwait >= LACTL_SV_MAX_WAITING) {
    snprintf(why, why_len, "%d element maps already asked: try later",
             LACTL_SV_MAX_WAITING);
    return LA_ELIMIT;
  }
  la__wait_t *w = &d->wait[d->nwait++];
  w->ticket = ticket;
  w->k = *k;
  return 0;
}

int lactl_sv_map_ask(lactl_sv_t *d, const char *app,
                     const lactl_sv_map_opts_t *o, la_client_t *c,
                     uint64_t ticket, char *why, size_t why_len) {
  (void)c;
  la__key_t k;
  memset(&k, 0, sizeof k);
  k.what = LA__MAP;
  snprintf(k.app, sizeof k.app, "%s", app);
  snprintf(k.channel, sizeof k.channel, "%s", o->channel ? o->channel : "");
  k.kind = o->kind, k.agg = o->agg, k.bins = o->bins;
  k.decode = o->decode;
  return la__ask(d, &k, ticket, why, why_len);
}

int lactl_sv_classes_ask(lactl_sv_t *d, const char *app, uint64_t ticket,
                         char *why, size_t why_len) {
  la__key_t k;
  memset(&k, 0, sizeof k);
  k.what = LA__CLASSES;
  snprintf(k.app, sizeof k.app, "%s", app);
  return la__ask(d, &k, ticket, why, why_len);
}

int lactl_sv_map_fd(const lactl_sv_t *d) {
  return lactl_sv_work_fd(d->work);
}

void lactl_sv_map_stats(const lactl_sv_t *d, lactl_sv_map_stats_t *s) {
  *s = d->mst;
}

/* Answers waiting request i with a copy of body (status) and drops it. */
static void la__answer(lactl_sv_t *d, size_t i, int status, const char *body,
                       size_t len, lactl_sv_reply_fn fn, void *ctx) {
  char *b = malloc(len ? len : 1);
  uint64_t ticket = d->wait[i].ticket;
  if (b) memcpy(b, body, len);
  d->wait[i] = d->wait[--d->nwait];
  fn(ctx, ticket, b ? status : 500, b, b ? len : 0);
}

/* The kept answer for key k of the set of generation gen, or NULL. */
static const la__kept_t *la__kept(const lactl_sv_t *d, const la__key_t *k,
                                  uint64_t gen) {
  for (size_t i = 0; i < LACTL_SV_CACHED_MAPS; i++)
    if (d->kept[i].body && d->kept[i].gen == gen &&
        la__key_eq(&d->kept[i].k, k))
      return &d->kept[i];
  return NULL;
}

/* Collects the job that ended: answers its requests, keeps its map. */
static void la__collect(lactl_sv_t *d, lactl_sv_reply_fn fn, void *ctx) {
  la__job_t *j = &d->job;
  if (j->retired) la_traceset_free(j->set);
  j->set = NULL;
  if (j->rc == LA_ESTATE) { /* stopped for a newer set: asked again */
    d->mst.superseded++;
    return;
  }
  const la__app_t *a = la__find(d, j->k.app);
  int current = a && a->gen == j->gen;
  for (size_t i = d->nwait; i-- > 0;) {
    if (!la__key_eq(&d->wait[i].k, &j->k)) continue;
    if (j->rc) {
      char *msg = NULL;
      size_t n = 0;
      FILE *m = open_memstream(&msg, &n);
      if (m && j->k.what == LA__CLASSES) { /* the classes' errors: JSON */
        fputs("{\"error\":", m);
        lactl_json_str(m, j->why);
        fputs("}\n", m);
      } else if (m) {
        fprintf(m, "%s\n", j->why);
      }
      if (m && fclose(m) != 0) free(msg), msg = NULL, n = 0;
      la__answer(d, i, j->rc == LA_ENOTFOUND ? 404 : 500, msg ? msg : "", n,
                 fn, ctx);
      free(msg);
    } else {
      la__answer(d, i, 200, j->body, j->len, fn, ctx);
    }
  }
  if (!j->rc && current) { /* kept for the next same request */
    la__kept_t *k = &d->kept[d->kept_next++ % LACTL_SV_CACHED_MAPS];
    free(k->body);
    k->k = j->k, k->gen = j->gen, k->body = j->body, k->len = j->len;
    j->body = NULL;
  }
  free(j->body);
  j->body = NULL;
}

void lactl_sv_map_poll(lactl_sv_t *d, la_client_t *c, lactl_sv_reply_fn fn,
                       void *ctx) {
  if (lactl_sv_work_done(d->work)) la__collect(d, fn, ctx);
  /* the same map of the same set again: no reduction */
  for (size_t i = d->nwait; i-- > 0;) {
    const la__app_t *a = la__find(d, d->wait[i].k.app);
    const la__kept_t *k = a ? la__kept(d, &d->wait[i].k, a->gen) : NULL;
    if (k) {
      d->mst.cached++;
      la__answer(d, i, 200, k->body, k->len, fn, ctx);
    }
  }
  if (!d->nwait || lactl_sv_work_busy(d->work)) return;
  /* the request waiting longest next (the array keeps no order once one
   * is answered from the middle: the smallest ticket) */
  size_t first = 0;
  for (size_t i = 1; i < d->nwait; i++)
    if (d->wait[i].ticket < d->wait[first].ticket) first = i;
  la__app_t *a = la__find(d, d->wait[first].k.app);
  assert(a && a->latest); /* applications are never removed */
  la__job_t *j = &d->job;
  free(j->body);
  memset(j, 0, sizeof *j);
  j->k = d->wait[first].k;
  j->gen = a->gen;
  j->set = a->latest;
  j->pos = j->k.what == LA__MAP ? la__positions(a, c, a->latest) : NULL;
  atomic_init(&j->stop, 0);
  if (lactl_sv_work_run(d->work, la__job_run, j) == 0) d->mst.started++;
}
