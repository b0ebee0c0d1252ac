/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_whatif.c: `lactl whatif APP [CYCLE|latest|FIRST:LAST]`: would a
 * repartition pay? For each cycle selected, partitions of the stored
 * weights into P parts (the application's rank count, or --parts) by METIS
 * k-way (on the grid's 6-neighbour graph where every rank is placed in a
 * global grid, else on a graph without edges: a pure weight balance), by
 * recursive coordinate bisection (grids only) and by a greedy heaviest-
 * first balance (asked for with --method), next to the application's
 * current decomposition (the stored per-rank totals). Each gets the
 * predicted max/mean, the gain over the current decomposition (current max
 * / its max), the elements and bytes that would move (--bytes-per-element,
 * a user figure), and its predicted imbalance on the --horizon K complete
 * cycles that follow (the partition of cycle c scored with their weights).
 * --partition FILE scores a partition chosen elsewhere (a balancer's, in
 * the format --write-partition writes) the same way, as the row "file".
 * Output: a table, --json (docs/schema/lactl-whatif.json) or --csv.
 *
 * Predictions only: nothing is moved, and what the weights do not show
 * (noise, migration, cache effects) is not in them (docs/balancing.md). */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lactl_part.h"
#include "lactl_util.h"
#include "lactl_whatif.h"

enum { M_METIS = 1, M_RCB = 2, M_GREEDY = 4 };

static void usage(FILE *f) {
  fprintf(f,
          "usage: lactl whatif APP [CYCLE|latest|FIRST:LAST] [--parts N] "
          "[--horizon K]\n"
          "                    [--method LIST] [--bytes-per-element B] "
          "[--weights KIND]\n"
          "                    [--json | --csv] [-o FILE] [--global "
          "HOST:PORT | --db FILE]\n"
          "                    [--channel NAME] [--write-partition FILE]\n"
          "                    [--partition FILE] [--plot FILE.svg]\n"
          "\n"
          "Predicts what repartitioning application APP would gain at a "
          "cycle (default:\nthe latest complete one) or at each complete "
          "cycle of FIRST..LAST, from the\nstored weights: the current "
          "decomposition next to new partitions.\n\n"
          "  --parts N           parts of the new partitions (default: the "
          "rank count)\n"
          "  --horizon K         score each partition on the K complete "
          "cycles that\n"
          "                      follow (default 0): min/median/max of its "
          "imbalance\n"
          "  --method LIST       partitioners, comma-separated: metis, rcb "
          "(grids only),\n"
          "                      greedy (default: metis, and rcb for a "
          "grid)\n"
          "  --bytes-per-element B  bytes that move with an element "
          "(default 8; your\n"
          "                      figure: LA does not know it)\n"
          "  --weights KIND      measured or robust (interference removed; "
          "default: robust\n"
          "                      when every rank of the cycle has them)\n"
          "  --csv               one CSV line per partition\n"
          "  --json              JSON (docs/schema/lactl-whatif.json)\n"
          "  -o, --output FILE   write to FILE (default: "
          "stdout)\n"
          "  --write-partition FILE  write the first new partition (metis "
          "unless --method\n"
          "                      says otherwise) of the one cycle to FILE: "
          "\"ID RANK\" per\n"
          "                      element, for la-replay\n"
          "  --partition FILE    score the partition in FILE (that format; "
          "every element\n"
          "                      of the cycle once) beside the others: the "
          "row \"file\"\n"
          "  --plot FILE.svg     also draw each partition's imbalance as "
          "lines: over the\n"
          "                      range FIRST:LAST, or over the cycle and "
          "its --horizon\n"
          "  --timing            the time of each stage on stderr (read, "
          "mesh, graph,\n"
          "                      each partitioner, current, scoring, "
          "output, total)\n" LACTL_CHANNEL_HELP
          LACTL_COMMON_HELP
          "\nExit status: 0 done, 1 unreachable, not found or not "
          "partitionable, 2 usage.\n");
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* min, median and max of the row's horizon scores. */
static void summarize(lactl_wi_row_t *row) {
  row->hmin = row->hmed = row->hmax = NAN;
  if (!row->nh) return;
  double *s = malloc(row->nh * sizeof *s);
  if (!s) return;
  memcpy(s, row->h, row->nh * sizeof *s);
  qsort(s, row->nh, sizeof *s, cmp_double);
  row->hmin = s[0];
  row->hmax = s[row->nh - 1];
  row->hmed = row->nh % 2 ? s[row->nh / 2]
                          : 0.5 * (s[row->nh / 2 - 1] + s[row->nh / 2]);
  free(s);
}

/* The partition part of base scored on the later cycle m: each element
 * goes to the part of its id at base, an element base lacks to the part
 * matched with its current rank (else rank mod k). */
static double score(const lactl_mesh_t *base, const uint32_t *part, uint32_t k,
                    const uint32_t *rank_part, const lactl_mesh_t *m,
                    double *loads) {
  memset(loads, 0, k * sizeof *loads);
  for (uint64_t i = 0; i < m->n; i++) {
    int64_t at = lactl_mesh_find(base, m->id[i]);
    uint32_t p;
    if (at >= 0)
      p = part[at];
    else if (m->owner[i] < base->nprocs && rank_part[m->owner[i]] != UINT32_MAX)
      p = rank_part[m->owner[i]];
    else
      p = m->owner[i] % k;
    loads[p] += m->w[i];
  }
  double imb;
  lactl_part_imbalance(loads, k, NULL, &imb);
  return imb;
}

/* Everything of one run. */
typedef struct {
  const char *app;
  int kind, methods, fmt;
  uint32_t parts; /* 0: the rank count */
  unsigned horizon;
  double bpe;
  lactl_src_t *s;
  lactl_num_t *num;
  const char *part_file; /* --write-partition FILE, or NULL */
  const char *given;     /* --partition FILE, or NULL */
  lactl_wi_plot_t *plot; /* --plot FILE: the figures drawn at the end */
  int part_written;
  int timing; /* --timing: the stages' times on stderr */
  /* ms spent: reading sets (the source's query and the message decoded),
   * building meshes (weights decoded, ids, merged), the graph, each
   * partitioner, the current row, scoring (loads, moves, horizon, halo),
   * writing the output */
  double t_read, t_mesh, t_graph, t_part[3], t_current, t_score, t_out;
  size_t n_read;
} wi_t;

/* Fetches app's cycle tag as a mesh (the weights kind applied). Returns 0,
 * -1 when the cycle is not complete, or LACTL_FAIL; a message either
 * way. */
static int load(wi_t *w, uint64_t tag, lactl_mesh_t *m, la_traceset_t **keep) {
  la_traceset_t *t;
  double t0 = now_ms();
  int rc = lactl_src_set(w->s, w->app, 0, tag, &t);
  w->t_read += now_ms() - t0;
  w->n_read++;
  if (rc) return lactl_src_fail("whatif", w->s, rc);
  if (w->kind >= 0 && la_traceset_set_weights(t, w->kind) == LA_ENOTFOUND)
    fprintf(stderr,
            "lactl whatif: %s cycle %llu: not every rank has robust "
            "weights; using the measured ones\n",
            w->app, (unsigned long long)tag);
  if (!la_traceset_complete(t)) { /* -1: the caller may skip it */
    const uint32_t *mr;
    size_t nm = la_traceset_missing(t, &mr);
    char rk[200];
    fprintf(stderr,
            "lactl whatif: %s cycle %llu is %s (rank%s %s missing): whatif "
            "needs every rank's weights\n",
            w->app, (unsigned long long)tag,
            lactl_state_name(lactl_set_state(t)), nm > 1 ? "s" : "",
            lactl_fmt_ranks(mr, nm, rk, sizeof rk));
    la_traceset_free(t);
    return -1;
  }
  char why[256];
  t0 = now_ms();
  rc = lactl_mesh_build(m, t, w->num, why, sizeof why);
  w->t_mesh += now_ms() - t0;
  if (rc) {
    fprintf(stderr, "lactl whatif: %s cycle %llu: %s\n", w->app,
            (unsigned long long)tag, why);
    lactl_mesh_free(m);
    la_traceset_free(t);
    return LACTL_FAIL;
  }
  if (m->nonfinite)
    fprintf(stderr,
            "lactl whatif: %s cycle %llu: %llu non-finite weights taken as "
            "0\n",
            w->app, (unsigned long long)tag, (unsigned long long)m->nonfinite);
  if (keep)
    *keep = t;
  else
    la_traceset_free(t);
  return 0;
}

/* The complete cycles after tag, at most w->horizon, into *out (*n). */
static int following(wi_t *w, uint64_t tag, uint64_t **out, size_t *n) {
  lactl_cycle_t *cy = NULL;
  size_t nc = 0;
  *out = NULL;
  *n = 0;
  if (!w->horizon || tag == UINT64_MAX) return 0;
  int rc = lactl_src_cycles(w->s, w->app, tag + 1, UINT64_MAX, &cy, &nc);
  if (rc && rc != LA_ENOTFOUND) return lactl_src_fail("whatif", w->s, rc);
  *out = malloc(w->horizon * sizeof **out);
  if (!*out) {
    free(cy);
    fprintf(stderr, "lactl whatif: out of memory\n");
    return LACTL_FAIL;
  }
  for (size_t i = 0; i < nc && *n < w->horizon; i++)
    if (cy[i].state == LACTL_COMPLETE) (*out)[(*n)++] = cy[i].tag;
  free(cy);
  if (*n < w->horizon)
    fprintf(stderr,
            "lactl whatif: %s cycle %llu: only %zu complete cycle%s follow%s "
            "(--horizon %u)\n",
            w->app, (unsigned long long)tag, *n, *n == 1 ? "" : "s",
            *n == 1 ? "s" : "", w->horizon);
  return 0;
}

/* Fills one partition's row: figures at the base cycle and on the horizon
 * meshes hm[0..nh). */
static int fill_row(lactl_wi_row_t *row, const char *method,
                    const lactl_mesh_t *m, const uint32_t *part, uint32_t k,
                    const lactl_mesh_t *hm, size_t nh, double cur_max,
                    double bpe) {
  double *loads = malloc(k * sizeof *loads);
  uint32_t *rank_part = malloc((m->nprocs ? m->nprocs : 1) * sizeof *rank_part);
  row->h = malloc((nh ? nh : 1) * sizeof *row->h);
  if (!loads || !rank_part || !row->h) {
    free(loads), free(rank_part);
    return LA_ENOMEM;
  }
  row->method = method;
  row->parts = k;
  lactl_part_loads(m->n, m->w, part, k, loads);
  lactl_part_imbalance(loads, k, &row->max, &row->imbalance);
  double sum = 0;
  for (uint32_t p = 0; p < k; p++) sum += loads[p];
  row->mean = sum / k;
  row->gain = row->max > 0 ? cur_max / row->max : NAN;
  int64_t stay =
      lactl_part_match(m->n, m->owner, m->nprocs, part, k, rank_part);
  if (stay < 0) {
    free(loads), free(rank_part);
    return LA_ENOMEM;
  }
  row->moved = m->n - (uint64_t)stay;
  row->moved_bytes = (double)row->moved * bpe;
  for (size_t i = 0; i < nh; i++)
    row->h[i] = score(m, part, k, rank_part, &hm[i], loads);
  row->nh = nh;
  summarize(row);
  free(loads), free(rank_part);
  return lactl_mesh_halo(m, part, k, row);
}

/* The current decomposition's row: the stored per-rank totals. */
static int current_row(lactl_wi_row_t *row, const lactl_mesh_t *m,
                       const lactl_mesh_t *hm, size_t nh) {
  row->method = "current";
  row->parts = m->nprocs;
  lactl_part_imbalance(m->totals, m->nprocs, &row->max, &row->imbalance);
  double sum = 0;
  for (uint32_t r = 0; r < m->nprocs; r++) sum += m->totals[r];
  row->mean = sum / m->nprocs;
  row->gain = 1.0;
  row->h = malloc((nh ? nh : 1) * sizeof *row->h);
  if (!row->h) return LA_ENOMEM;
  for (size_t i = 0; i < nh; i++)
    lactl_part_imbalance(hm[i].totals, hm[i].nprocs, NULL, &row->h[i]);
  row->nh = nh;
  summarize(row);
  return lactl_mesh_halo(m, m->owner, m->nprocs, row);
}

/* Analyses cycle tag and writes it. Returns LACTL_OK, LACTL_FAIL, or -1
 * when the cycle is not complete (said on stderr). */
static int one_cycle(wi_t *w, uint64_t tag, FILE *f,
                     const lactl_wi_head_t *head, int first) {
  lactl_mesh_t m, *hm = NULL;
  la_traceset_t *t = NULL;
  uint64_t *ht = NULL;
  size_t nh = 0, built = 0;
  uint32_t *part = NULL;
  lactl_wi_cycle_t c;
  memset(&c, 0, sizeof c);
  int rc = load(w, tag, &m, &t);
  if (rc) return rc < 0 ? -1 : LACTL_FAIL;
  rc = following(w, tag, &ht, &nh);
  if (!rc && nh && !(hm = calloc(nh, sizeof *hm))) rc = LACTL_FAIL;
  for (; !rc && built < nh; built++)
    if (load(w, ht[built], &hm[built], NULL)) rc = LACTL_FAIL;
  uint32_t k = w->parts ? w->parts : m.nprocs;
  int methods = w->methods ? w->methods : M_METIS | (m.grid ? M_RCB : 0);
  if (!rc && !(part = malloc((m.n ? m.n : 1) * sizeof *part))) rc = LACTL_FAIL;
  if (!rc && (methods & M_RCB) && !m.grid) {
    fprintf(stderr,
            "lactl whatif: rcb needs a grid: %s cycle %llu has ranks that "
            "are not placed in a global grid (LA_registerGrid with "
            "LA_setGridOrigin, no ids of their own)\n",
            w->app, (unsigned long long)tag);
    rc = LACTL_FAIL;
  }
  c.cycle = tag;
  c.nprocs = m.nprocs;
  c.elements = m.n;
  c.grid = m.grid;
  memcpy(c.g, m.g, sizeof c.g);
  c.weights = m.kind == LA_WEIGHTS_ROBUST ? "robust" : "measured";
  c.nh = nh;
  c.hcycles = ht;
  for (uint32_t r = 0; r < m.nprocs; r++) c.total += m.totals[r];
  double tc = now_ms();
  if (!rc && current_row(&c.rows[c.nrows++], &m, hm, nh)) rc = LACTL_FAIL;
  w->t_current += now_ms() - tc;
  double cur_max = c.rows[0].max;
  static const struct {
    int bit;
    const char *name;
  } order[] = {{M_METIS, "metis"}, {M_RCB, "rcb"}, {M_GREEDY, "greedy"}};
  for (size_t i = 0; i < 3 && !rc; i++) {
    if (!(methods & order[i].bit)) continue;
    char why[256] = "";
    double t0 = now_ms(), tg = 0;
    int e = 0;
    if (order[i].bit == M_METIS) {
      e = lactl_mesh_graph(&m);
      tg = now_ms() - t0; /* the row's time_ms holds it, as before */
      w->t_graph += tg;
      if (!e)
        e = lactl_part_metis(m.n, m.w, m.xadj, m.adj, k, part, why, sizeof why);
    } else if (order[i].bit == M_RCB) {
      e = lactl_part_rcb(m.n, m.w, (const uint64_t(*)[3])m.ijk, k, part);
    } else {
      e = lactl_part_greedy(m.n, m.w, k, part);
    }
    double ms = now_ms() - t0;
    w->t_part[i] += ms - tg;
    lactl_wi_row_t *row = &c.rows[c.nrows++];
    t0 = now_ms();
    if (!e)
      e = fill_row(row, order[i].name, &m, part, k, hm, nh, cur_max, w->bpe);
    w->t_score += now_ms() - t0;
    row->ms = ms;
    if (!e && w->part_file && !w->part_written) {
      e = lactl_wi_write_partition(w->part_file, w->app, tag, order[i].name,
                                   &m, part, k, why, sizeof why);
      w->part_written = !e;
    }
    if (e) {
      fprintf(stderr, "lactl whatif: %s cycle %llu: %s: %s\n", w->app,
              (unsigned long long)tag, order[i].name,
              *why ? why : la_client_strerror(e));
      rc = LACTL_FAIL;
    }
  }
  if (!rc && w->given) { /* the row of a partition chosen elsewhere */
    char why[512] = "";
    uint32_t kf = 0;
    double t0 = now_ms();
    int e = lactl_wi_read_partition(w->given, &m, part, &kf, why, sizeof why);
    if (!e)
      e = fill_row(&c.rows[c.nrows++], "file", &m, part, kf, hm, nh, cur_max,
                   w->bpe);
    w->t_score += now_ms() - t0;
    if (e) {
      fprintf(stderr, "lactl whatif: %s cycle %llu: %s\n", w->app,
              (unsigned long long)tag, *why ? why : la_client_strerror(e));
      rc = LACTL_FAIL;
    }
  }
  double to = now_ms();
  if (!rc) lactl_wi_put(f, w->fmt, head, &c, first);
  if (!rc) lactl_wi_plot_add(w->plot, &c);
  w->t_out += now_ms() - to;
  for (int i = 0; i < c.nrows; i++) free(c.rows[i].h);
  for (size_t i = 0; i < built; i++) lactl_mesh_free(&hm[i]);
  free(hm), free(ht), free(part);
  lactl_mesh_free(&m);
  la_traceset_free(t);
  return rc ? LACTL_FAIL : LACTL_OK;
}

/* The latest complete cycle of w->app into *tags (one). Returns 0, a
 * negative LA_E* code (the source's message), or LACTL_FAIL (said). */
static int latest_complete(wi_t *w, uint64_t **tags, size_t *n) {
  lactl_cycle_t *cy = NULL;
  size_t nc = 0;
  int rc = lactl_src_cycles(w->s, w->app, 0, UINT64_MAX, &cy, &nc);
  if (rc) return rc;
  size_t i = nc;
  while (i > 0 && cy[i - 1].state != LACTL_COMPLETE) i--;
  if (i == 0) {
    free(cy);
    fprintf(stderr, "lactl whatif: %s has no complete cycle (%zu stored)\n",
            w->app, nc);
    return LACTL_FAIL;
  }
  *tags = malloc(sizeof **tags);
  if (!*tags) {
    free(cy);
    fprintf(stderr, "lactl whatif: out of memory\n");
    return LACTL_FAIL;
  }
  **tags = cy[i - 1].tag;
  *n = 1;
  free(cy);
  return 0;
}

/* Parses --method LIST into *bits. 0 or -1. */
static int parse_methods(const char *s, int *bits) {
  *bits = 0;
  while (*s) {
    size_t n = strcspn(s, ",");
    if (n == 5 && !strncmp(s, "metis", 5))
      *bits |= M_METIS;
    else if (n == 3 && !strncmp(s, "rcb", 3))
      *bits |= M_RCB;
    else if (n == 6 && !strncmp(s, "greedy", 6))
      *bits |= M_GREEDY;
    else
      return -1;
    s += n;
    if (*s == ',') s++;
  }
  return *bits ? 0 : -1;
}

int lactl_whatif_main(int argc, char **argv) {
  static const struct option lo[] = {
      {"parts", 1, 0, 'P'},   {"horizon", 1, 0, 'H'},
      {"method", 1, 0, 'm'},  {"bytes-per-element", 1, 0, 'B'},
      {"weights", 1, 0, 'W'}, {"csv", 0, 0, 'C'},
      {"output", 1, 0, 'o'},  {"write-partition", 1, 0, 'X'},
      {"timing", 0, 0, 'T'},  {"partition", 1, 0, 'F'},
      {"plot", 1, 0, 'G'},
      LACTL_CHANNEL_OPTION,
      LACTL_COMMON_OPTIONS,   {0, 0, 0, 0}};
  lactl_common_t o = {0};
  wi_t w = {.kind = -1, .methods = 0, .bpe = 8};
  const char *out = NULL, *plot = NULL;
  int c, csv = 0;
  uint64_t v;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
    if (lactl_common_opt(&o, c, optarg)) continue;
    switch (c) {
      case 'h':
        usage(stdout);
        return LACTL_OK;
      case 'P':
        if (lactl_parse_u64(optarg, &v) || v < 1 || v > (1u << 24))
          return lactl_usage_err("whatif", "--parts '%s': 1 .. 16777216",
                                 optarg);
        w.parts = (uint32_t)v;
        break;
      case 'H':
        if (lactl_parse_u64(optarg, &v) || v > 10000)
          return lactl_usage_err("whatif", "--horizon '%s': 0 .. 10000",
                                 optarg);
        w.horizon = (unsigned)v;
        break;
      case 'm':
        if (parse_methods(optarg, &w.methods))
          return lactl_usage_err("whatif",
                                 "--method '%s': a list of metis, rcb, "
                                 "greedy",
                                 optarg);
        break;
      case 'B': {
        char *end;
        w.bpe = strtod(optarg, &end);
        if (end == optarg || *end || !isfinite(w.bpe) || w.bpe < 0)
          return lactl_usage_err(
              "whatif", "--bytes-per-element '%s': a number >= 0", optarg);
        break;
      }
      case 'W':
        if (lactl_parse_weights(optarg, &w.kind))
          return lactl_usage_err("whatif", "--weights '%s': measured or robust",
                                 optarg);
        break;
      case 'C':
        csv = 1;
        break;
      case 'o':
        out = optarg;
        break;
      case 'X':
        w.part_file = optarg;
        break;
      case 'T':
        w.timing = 1;
        break;
      case 'F':
        w.given = optarg;
        break;
      case 'G':
        plot = optarg;
        break;
      default:
        return lactl_opt_err("whatif", argv, lo, "ho:");
    }
  }
  if (csv && o.json)
    return lactl_usage_err("whatif", "--csv or --json, not both");
  w.fmt = o.json ? LACTL_WI_JSON : csv ? LACTL_WI_CSV : LACTL_WI_TABLE;
  if (optind >= argc) return lactl_usage_err("whatif", "which application?");
  if (argc - optind > 2)
    return lactl_usage_err("whatif", "unexpected argument '%s'",
                           argv[optind + 2]);
  w.app = argv[optind];
  lactl_sel_t sel;
  if (lactl_parse_sel(optind + 1 < argc ? argv[optind + 1] : NULL, 1, &sel))
    return lactl_usage_err("whatif", "'%s' is not CYCLE, latest or FIRST:LAST",
                           argv[optind + 1]);
  if (plot && !sel.range && w.horizon == 0)
    return lactl_usage_err("whatif",
                           "--plot draws lines: give a range of cycles "
                           "(FIRST:LAST) or --horizon K (one cycle reads "
                           "better as the table)");

  double t_start = now_ms();
  int orc = lactl_src_open("whatif", &o, &w.s);
  if (orc) return orc;
  uint64_t *tags = NULL;
  size_t nt = 0;
  int rc = sel.latest ? latest_complete(&w, &tags, &nt)
                      : lactl_src_select(w.s, w.app, &sel, &tags, &nt);
  if (rc) {
    rc = rc < 0 ? lactl_src_fail("whatif", w.s, rc) : rc;
    lactl_src_close(w.s);
    return rc;
  }
  if (w.part_file && nt != 1) {
    free(tags);
    lactl_src_close(w.s);
    return lactl_usage_err("whatif",
                           "--write-partition writes the partition of one "
                           "cycle: '%s' selects %zu",
                           argv[optind + 1], nt);
  }
  if (w.given && nt != 1) {
    free(tags);
    lactl_src_close(w.s);
    return lactl_usage_err("whatif",
                           "--partition scores a partition on one cycle: "
                           "'%s' selects %zu",
                           argv[optind + 1], nt);
  }
  la_traceset_t *t0 = NULL;
  rc = lactl_src_set(w.s, w.app, 0, tags[0], &t0);
  if (rc) {
    rc = lactl_src_fail("whatif", w.s, rc);
    free(tags);
    lactl_src_close(w.s);
    return rc;
  }
  lactl_wi_head_t head = {.app = w.app,
                          .channel = o.channel,
                          .bytes_per_element = w.bpe,
                          .horizon = w.horizon};
  char metric[130], unit[34];
  snprintf(metric, sizeof metric, "%s", la_traceset_metric(t0));
  snprintf(unit, sizeof unit, "%s", la_traceset_unit(t0));
  head.metric = metric;
  head.unit = unit;
  la_traceset_free(t0);
  w.num = lactl_num_new(w.s, w.app);
  FILE *f = w.num ? lactl_out_open("whatif", out) : NULL;
  if (!f) {
    if (!w.num) fprintf(stderr, "lactl whatif: out of memory\n");
    lactl_num_free(w.num);
    free(tags);
    lactl_src_close(w.s);
    return LACTL_FAIL;
  }
  if (plot && !(w.plot = lactl_wi_plot_new())) {
    fprintf(stderr, "lactl whatif: out of memory\n");
    rc = LACTL_FAIL;
  } else {
    rc = LACTL_OK;
  }
  lactl_wi_begin(f, w.fmt, &head);
  size_t done = 0;
  for (size_t i = 0; i < nt && rc == LACTL_OK; i++) {
    lactl_progress("whatif", "cycle", i, nt);
    rc = one_cycle(&w, tags[i], f, &head, done == 0);
    if (rc == LACTL_OK) done++;
    if (rc < 0 && sel.range) rc = LACTL_OK; /* a range skips it */
  }
  lactl_progress("whatif", "cycle", nt, nt);
  if (rc < 0) rc = LACTL_FAIL;
  if (rc == LACTL_OK && !done) {
    fprintf(stderr, "lactl whatif: %s has no complete cycle in %s\n", w.app,
            argv[optind + 1]);
    rc = LACTL_FAIL;
  }
  if (rc == LACTL_OK) lactl_wi_end(f, w.fmt);
  if (rc == LACTL_OK && plot) {
    char why[600];
    if (lactl_wi_plot_write(w.plot, plot, &head, why, sizeof why)) {
      fprintf(stderr, "lactl whatif: --plot: %s\n", why);
      rc = LACTL_FAIL;
    }
  }
  lactl_wi_plot_free(w.plot);
  if (w.timing)
    fprintf(stderr,
            "lactl whatif: timing: read %.1f ms (%zu sets) mesh %.1f graph "
            "%.1f metis %.1f rcb %.1f greedy %.1f current %.1f scoring %.1f "
            "output %.1f total %.1f ms\n",
            w.t_read, w.n_read, w.t_mesh, w.t_graph, w.t_part[0], w.t_part[1],
            w.t_part[2], w.t_current, w.t_score, w.t_out, now_ms() - t_start);
  lactl_num_free(w.num);
  free(tags);
  lactl_src_close(w.s);
  int rc2 = lactl_out_finish("whatif", out, f, rc == LACTL_OK);
  return rc ? rc : rc2;
}
