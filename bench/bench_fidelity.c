/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_fidelity.c: do LA's weights follow the true cost of the elements on
 * a noisy node? (`make bench-fidelity`)
 *
 * Runs bench/fidelity_app (an MPI program whose per-element cost is known
 * in work units, fidelity_cases.h) under mpiexec through the real
 * LocalAgent and GlobalAgent, for every case (classes, hotspot, stencil)
 * under every condition:
 *   clean        2 ranks, one per CPU; the agent with its default placement
 *                (compaction threads at nice 10) on the same CPUs;
 *   hog          the same with a CPU hog pinned to rank 0's CPU;
 *   2-per-core   4 ranks on the 2 CPUs;
 *   agent-nice0  2 ranks, the agent's compaction threads at nice 0 (no
 *                placement): the agent's own work competes with the ranks;
 *   agent-idle   the same with the threads in SCHED_IDLE.
 * Each rank calibrates its true cost with LA's own timer before profiling
 * starts (passes of the real loop, a robust mean per unit count, up to 64
 * points interpolated between: fidelity_app.c). From every complete Trace-Set
 * after the estimator's warm-up the driver takes the measured and the
 * robust weights (libla_client) and reports per run:
 *   spearman_robust, spearman_measured   rank correlation with the true
 *       cost over all elements of the set (median over cycles);
 *   share_measured, share_robust         (total - true total) / total over
 *       all ranks and cycles: the share interference took; *_worst: the
 *       same for the rank with the largest measured share;
 *   imb_true, imb_robust, imb_measured   imbalance (max/mean, on the true
 *       cost) of an 8-way METIS partition of the element grid computed
 *       from the true costs, the robust and the measured weights (median
 *       over every 4th cycle);
 *   flagged                              element-cycles the probes flagged;
 *   robust_over_true_{lt3,3to6,ge6}_steps  sum of the robust weights over
 *       the sum of the true costs of the elements whose true cost is below
 *       3, 3 to 6, and 6 or more timer steps (printed on a second line
 *       where elements below 6 steps exist), and off_20pct_*_steps: the
 *       share of those elements whose robust weight is more than 20% off
 *       their true cost;
 *   agent_cpu_s, landed_s                the LocalAgent's CPU time during
 *       the run, and the measured time above the truth (what landed in
 *       the ranks' weights), for the placement comparison.
 * Writes argv[1] (build/bench/fidelity.json) and prints a table. The aims
 * (docs/fidelity.md): spearman_robust >= 0.95 everywhere, share_robust < 2%
 * where share_measured > 50%, imb_robust within 3% of imb_true. The bench
 * reports; it does not assert (the machine is shared and noisy).
 * Every run is made twice: with the default compaction (polyline, cv 0.1:
 * the weights a balancer gets by default, within 10% RMS per segment) and
 * lossless (what the measurement itself delivers).
 * LA_FID_CYCLES (default 40) and LA_FID_CASES / LA_FID_CONDS /
 * LA_FID_COMPACT (comma lists) select less for a quick run; LA_FID_DUMP=PREFIX
 * writes the last set of each run as PREFIX.CASE-CONDITION.txt ("element truth
 * measured robust").
 */
#include "bench_args.h"
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <metis.h>

#include "fidelity_calib.h"
#include "fidelity_cases.h"
#include "la_client.h"
#include "la_test_stack.h"

#define WARMUP 6 /* first cycle + confirm + a margin */
#define NPARTS 8

typedef struct cond_s {
  const char *name;
  int ranks;
  int hog;               /* a CPU hog pinned to CPU 0 */
  const char *agent_arg; /* extra LocalAgent argument, or NULL */
} cond_t;

static const cond_t g_conds[] = {
    {"clean", 2, 0, NULL},
    {"hog", 2, 1, NULL},
    {"2-per-core", 4, 0, NULL},
    {"agent-nice0", 2, 0, "--agent.worker_nice=0"},
    {"agent-idle", 2, 0, "--agent.worker_idle=yes"},
};
#define NCONDS (int)(sizeof g_conds / sizeof g_conds[0])

typedef struct result_s {
  const char *kase, *cond, *compact;
  int ranks, sets;
  long n, cycles;
  double sp_robust, sp_measured;
  double share_m, share_r, share_m_worst, share_r_worst;
  long beyond_calib; /* element-cycles above 1.5x the calibrated units */
  double imb_true, imb_robust, imb_measured;
  double flagged, timer_res, agent_cpu_s, landed_s, wall_s;
  /* elements by true cost in timer steps (FID_BANDS): their count over
   * the evaluated sets, and the sums of true cost and robust weights */
  double band_n[3], band_t[3], band_r[3], band_off[3]; /* off: > 20% */
  char error[200];
} result_t;

/* The bands of true cost, in steps of the timer's resolution: below 3,
 * 3 to 6, 6 and more (docs/fidelity.md, "Light elements"). */
static const double fid_band_steps[2] = {3, 6};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int listed(const char *env, const char *name) {
  const char *l = getenv(env);
  if (!l || !*l) return 1;
  size_t n = strlen(name);
  for (const char *p = l; (p = strstr(p, name)) != NULL; p += n)
    if ((p == l || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
  return 0;
}

/* ------------------------------------------------------------ statistics */

static const double *g_sort_key;
static int cmp_idx(const void *a, const void *b) {
  double x = g_sort_key[*(const long *)a], y = g_sort_key[*(const long *)b];
  return (x > y) - (x < y);
}

/* Average ranks (ties share their mean rank). */
static void ranks_of(const double *v, long n, long *idx, double *r) {
  for (long i = 0; i < n; i++) idx[i] = i;
  g_sort_key = v;
  qsort(idx, (size_t)n, sizeof *idx, cmp_idx);
  for (long i = 0; i < n;) {
    long j = i;
    while (j + 1 < n && v[idx[j + 1]] == v[idx[i]]) j++;
    for (long k = i; k <= j; k++) r[idx[k]] = 0.5 * (double)(i + j);
    i = j + 1;
  }
}

static double pearson(const double *x, const double *y, long n) {
  double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
  for (long i = 0; i < n; i++) mx += x[i], my += y[i];
  mx /= (double)n, my /= (double)n;
  for (long i = 0; i < n; i++) {
    double a = x[i] - mx, b = y[i] - my;
    sxx += a * a, syy += b * b, sxy += a * b;
  }
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
}

/* Spearman's rank correlation; scratch holds 3n doubles and n longs. */
static double spearman(const double *x, const double *y, long n, double *s,
                       long *idx) {
  ranks_of(x, n, idx, s);
  ranks_of(y, n, idx, s + n);
  return pearson(s, s + n, n);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------------------ partition */

typedef struct graph_s {
  idx_t n, *xadj, *adjncy, *vwgt, *part;
} graph_t;

/* The 4-neighbour grid graph of nx x ny elements. */
static int graph_init(graph_t *g, long nx, long ny) {
  g->n = (idx_t)(nx * ny);
  g->xadj = malloc((size_t)(g->n + 1) * sizeof(idx_t));
  g->adjncy = malloc((size_t)g->n * 4 * sizeof(idx_t));
  g->vwgt = malloc((size_t)g->n * sizeof(idx_t));
  g->part = malloc((size_t)g->n * sizeof(idx_t));
  if (!g->xadj || !g->adjncy || !g->vwgt || !g->part) return -1;
  idx_t m = 0;
  for (long v = 0; v < nx * ny; v++) {
    long x = v % nx, y = v / nx;
    g->xadj[v] = m;
    if (x > 0) g->adjncy[m++] = (idx_t)(v - 1);
    if (x + 1 < nx) g->adjncy[m++] = (idx_t)(v + 1);
    if (y > 0) g->adjncy[m++] = (idx_t)(v - nx);
    if (y + 1 < ny) g->adjncy[m++] = (idx_t)(v + nx);
  }
  g->xadj[g->n] = m;
  return 0;
}

static void graph_free(graph_t *g) {
  free(g->xadj), free(g->adjncy), free(g->vwgt), free(g->part);
}

/* Imbalance, on the true cost, of the METIS partition computed from w. */
static double partition_imbalance(graph_t *g, const double *w,
                                  const double *truth) {
  double mean = 0;
  for (idx_t v = 0; v < g->n; v++) mean += w[v] > 0 ? w[v] : 0;
  mean /= (double)g->n;
  for (idx_t v = 0; v < g->n; v++) {
    double x = w[v] > 0 ? w[v] / mean * 1000.0 : 0;
    g->vwgt[v] = x < 1 ? 1 : x > 1e6 ? 1000000 : (idx_t)llround(x);
  }
  idx_t ncon = 1, nparts = NPARTS, objval = 0, options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = 7;
  if (METIS_PartGraphKway(&g->n, &ncon, g->xadj, g->adjncy, g->vwgt, NULL, NULL,
                          &nparts, NULL, NULL, options, &objval,
                          g->part) != METIS_OK)
    return NAN;
  double load[NPARTS] = {0}, total = 0, max = 0;
  for (idx_t v = 0; v < g->n; v++) load[g->part[v]] += truth[v];
  for (int p = 0; p < NPARTS; p++) {
    total += load[p];
    if (load[p] > max) max = load[p];
  }
  return max / (total / NPARTS);
}

/* ------------------------------------------------------------ processes */

static void pin_self(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  sched_setaffinity(0, sizeof s, &s);
}

/* A CPU hog pinned to cpu, for at most 600 s. */
static pid_t start_hog(int cpu) {
  pid_t p = fork();
  if (p == 0) {
    pin_self(cpu);
    double t0 = now_s();
    volatile double x = 1;
    while (now_s() - t0 < 600) x = x * 1.0000001 + 1e-9;
    _exit(0);
  }
  return p;
}

static void reap(pid_t p) {
  if (p <= 0) return;
  kill(p, SIGKILL);
  while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {
  }
}

/* ------------------------------------------------------------ one run */

typedef struct run_ctx_s {
  la_test_stack_t *st;
  const char *app_bin, *calib_dir;
  const char *compact; /* LA_COMPACT of the runs */
  long cycles;
  long long traces_before;
} run_ctx_t;

/* A rank's true cost table (fidelity_app --calib): m points (k, ns). */
#define CAL_MAX FC_CAL
typedef struct calib_s {
  int m;
  double k[CAL_MAX], ns[CAL_MAX];
} calib_t;

static int read_calib(const char *dir, int ranks, calib_t *cal) {
  for (int r = 0; r < ranks; r++) {
    char path[700];
    snprintf(path, sizeof path, "%s/rank%d.calib", dir, r);
    FILE *f = fopen(path, "r");
    int ok = f && fscanf(f, "%d", &cal[r].m) == 1 && cal[r].m > 0 &&
             cal[r].m <= CAL_MAX;
    for (int i = 0; ok && i < cal[r].m; i++)
      ok = fscanf(f, "%lf %lf", &cal[r].k[i], &cal[r].ns[i]) == 2 &&
           cal[r].ns[i] > 0 && (i == 0 || cal[r].k[i] > cal[r].k[i - 1]);
    if (f) fclose(f);
    if (!ok) return -1;
  }
  return 0;
}

/* Runs the application; fills res->error on failure. */
static int run_app(run_ctx_t *x, int kase, const cond_t *cd, result_t *res,
                   const char *app_id) {
  char n_ranks[16], cycles[24], env_agent[128], env_app[128], env_cmp[96];
  snprintf(n_ranks, sizeof n_ranks, "%d", cd->ranks);
  snprintf(cycles, sizeof cycles, "%ld", x->cycles);
  snprintf(env_agent, sizeof env_agent, "LA_AGENT=%s", la_td_addr(x->st->la));
  snprintf(env_app, sizeof env_app, "LA_APP_ID=%s", app_id);
  snprintf(env_cmp, sizeof env_cmp, "LA_COMPACT=%s", x->compact);
  const char *argv[] = {"mpiexec",  "-n",         n_ranks,
                        x->app_bin, "--case",     fc_case_names[kase],
                        "--cycles", cycles,       "--pin",
                        "--calib",  x->calib_dir, NULL};
  const char *env[] = {env_agent, env_app, env_cmp, "LA_PERIOD=1", NULL};
  static char out[8192];
  pid_t hog = cd->hog ? start_hog(0) : 0;
  double cpu0 = la_td_cpu_seconds(la_td_pid(x->st->la)), t0 = now_s();
  int rc = la_td_run(argv, env, 600000, out, sizeof out);
  res->wall_s = now_s() - t0;
  reap(hog);
  long long want = x->traces_before + (long long)cd->ranks * x->cycles;
  if (rc != 0) {
    snprintf(res->error, sizeof res->error, "fidelity_app exited %d: %.120s",
             rc, out);
    return -1;
  }
  if (la_td_wait_status(x->st->ga, "traces_stored", want, 120000) != 0) {
    snprintf(res->error, sizeof res->error, "GlobalAgent stored %lld of %lld",
             la_td_status_ll(x->st->ga, "traces_stored") - x->traces_before,
             want - x->traces_before);
    return -1;
  }
  res->agent_cpu_s = la_td_cpu_seconds(la_td_pid(x->st->la)) - cpu0;
  x->traces_before = la_td_status_ll(x->st->ga, "traces_stored");
  return 0;
}

/* Scratch for one set's evaluation. */
typedef struct eval_s {
  long n;
  double *meas, *rob, *truth, *scratch;
  long *idx;
  double *sp_r, *sp_m, *imb_t, *imb_r, *imb_m;
  int n_sp, n_imb;
  double tot_m[8], tot_r[8], tot_t[8]; /* per rank (at most 8) */
  graph_t g;
} eval_t;

static int eval_init(eval_t *v, long n, long nx, long cycles) {
  memset(v, 0, sizeof *v);
  v->n = n;
  v->meas = malloc((size_t)n * sizeof(double));
  v->rob = malloc((size_t)n * sizeof(double));
  v->truth = malloc((size_t)n * sizeof(double));
  v->scratch = malloc((size_t)n * 2 * sizeof(double));
  v->idx = malloc((size_t)n * sizeof(long));
  size_t c = (size_t)cycles;
  v->sp_r = calloc(c, sizeof(double)), v->sp_m = calloc(c, sizeof(double));
  v->imb_t = calloc(c, sizeof(double)), v->imb_r = calloc(c, sizeof(double));
  v->imb_m = calloc(c, sizeof(double));
  if (!v->meas || !v->rob || !v->truth || !v->scratch || !v->idx || !v->sp_r ||
      !v->sp_m || !v->imb_t || !v->imb_r || !v->imb_m)
    return -1;
  return graph_init(&v->g, nx, n / nx);
}

static void eval_free(eval_t *v) {
  free(v->meas), free(v->rob), free(v->truth), free(v->scratch), free(v->idx);
  free(v->sp_r), free(v->sp_m), free(v->imb_t), free(v->imb_r), free(v->imb_m);
  graph_free(&v->g);
}

/* Takes one Trace-Set into v; returns 0 or -1 with res->error set. */
static int eval_set(eval_t *v, la_traceset_t *t, int kase, int ranks,
                    long per_rank, uint64_t tag, const calib_t *cal,
                    int with_partition, result_t *res) {
  long nx = fc_nx[kase], ny = v->n / nx;
  if (!la_traceset_complete(t) || (long)la_traceset_elements(t) != v->n) {
    snprintf(res->error, sizeof res->error,
             "cycle %llu: incomplete set (%llu elements)",
             (unsigned long long)tag,
             (unsigned long long)la_traceset_elements(t));
    return -1;
  }
  if (!la_traceset_has_robust(t)) {
    snprintf(res->error, sizeof res->error, "cycle %llu: no robust weights",
             (unsigned long long)tag);
    return -1;
  }
  la_traceset_set_weights(t, LA_WEIGHTS_MEASURED);
  la_traceset_weights(t, v->meas);
  la_traceset_set_weights(t, LA_WEIGHTS_ROBUST);
  la_traceset_weights(t, v->rob);
  for (int r = 0; r < ranks; r++) {
    uint64_t fl = 0;
    la_traceset_rank_interference(t, (uint32_t)r, NULL, &fl, NULL);
    res->flagged += (double)fl;
    double tr = la_traceset_rank_timer_res(t, (uint32_t)r);
    if (tr > res->timer_res) res->timer_res = tr;
  }
  for (long g = 0; g < v->n; g++) {
    int r = (int)(g / per_rank);
    double k = (double)fc_units(kase, g, nx, ny, (long)tag);
    double tr = fc_true_ns(cal[r].k, cal[r].ns, cal[r].m, k);
    /* far beyond the rank's calibrated units: the truth is clamped there */
    if (k > 1.5 * cal[r].k[cal[r].m - 1]) res->beyond_calib++;
    v->truth[g] = tr;
    v->tot_m[r] += v->meas[g];
    v->tot_r[r] += v->rob[g];
    v->tot_t[r] += tr;
    if (res->timer_res > 0) {
      double steps = tr / res->timer_res;
      int b = steps < fid_band_steps[0] ? 0 : steps < fid_band_steps[1] ? 1 : 2;
      res->band_n[b]++;
      res->band_t[b] += tr;
      res->band_r[b] += v->rob[g];
      res->band_off[b] += tr > 0 && fabs(v->rob[g] / tr - 1) > 0.2;
    }
  }
  const char *dump = getenv("LA_FID_DUMP");
  if (dump && *dump) { /* the last evaluated set of each run, for a look */
    char path[600];
    snprintf(path, sizeof path, "%s.%s-%s-%s.txt", dump, res->kase, res->cond,
             res->compact);
    FILE *f = fopen(path, "w");
    for (long g = 0; f && g < v->n; g++)
      fprintf(f, "%ld %.2f %.2f %.2f\n", g, v->truth[g], v->meas[g], v->rob[g]);
    if (f) fclose(f);
  }
  v->sp_r[v->n_sp] = spearman(v->rob, v->truth, v->n, v->scratch, v->idx);
  v->sp_m[v->n_sp] = spearman(v->meas, v->truth, v->n, v->scratch, v->idx);
  v->n_sp++;
  if (with_partition) {
    v->imb_t[v->n_imb] = partition_imbalance(&v->g, v->truth, v->truth);
    v->imb_r[v->n_imb] = partition_imbalance(&v->g, v->rob, v->truth);
    v->imb_m[v->n_imb] = partition_imbalance(&v->g, v->meas, v->truth);
    v->n_imb++;
  }
  return 0;
}

static void eval_summarise(eval_t *v, int ranks, result_t *res) {
  double M = 0, R = 0, T = 0, worst = -1;
  for (int r = 0; r < ranks; r++) {
    M += v->tot_m[r], R += v->tot_r[r], T += v->tot_t[r];
    double sm = (v->tot_m[r] - v->tot_t[r]) / v->tot_m[r];
    if (sm > worst) {
      worst = sm;
      res->share_m_worst = sm;
      res->share_r_worst = (v->tot_r[r] - v->tot_t[r]) / v->tot_r[r];
    }
  }
  res->share_m = (M - T) / M;
  res->share_r = (R - T) / R;
  res->landed_s = (M - T) * 1e-9;
  res->sp_robust = median(v->sp_r, v->n_sp);
  res->sp_measured = median(v->sp_m, v->n_sp);
  res->imb_true = median(v->imb_t, v->n_imb);
  res->imb_robust = median(v->imb_r, v->n_imb);
  res->imb_measured = median(v->imb_m, v->n_imb);
  res->sets = v->n_sp;
}

static int run_one(run_ctx_t *x, int kase, const cond_t *cd, result_t *res) {
  char app_id[96];
  memset(res, 0, sizeof *res);
  res->kase = fc_case_names[kase];
  res->cond = cd->name;
  res->compact = x->compact;
  res->ranks = cd->ranks;
  res->n = fc_default_n[kase];
  res->cycles = x->cycles;
  snprintf(app_id, sizeof app_id, "fid-%s-%s-%s", res->kase, cd->name,
           x->compact);
  if (run_app(x, kase, cd, res, app_id) != 0) return -1;
  static calib_t cal[8];
  if (read_calib(x->calib_dir, cd->ranks, cal) != 0) {
    snprintf(res->error, sizeof res->error, "no calibration from the ranks");
    return -1;
  }
  long n = res->n * cd->ranks;
  eval_t v;
  la_client_t *c = NULL;
  int rc = eval_init(&v, n, fc_nx[kase], x->cycles);
  if (rc == 0 && la_client_connect(x->st->feed_addr, 10000, &c) != 0) {
    snprintf(res->error, sizeof res->error, "client: cannot connect");
    rc = -1;
  }
  for (uint64_t tag = WARMUP; rc == 0 && tag < (uint64_t)x->cycles; tag++) {
    la_traceset_t *t = NULL;
    if (la_client_get(c, app_id, tag, &t) != 0) {
      snprintf(res->error, sizeof res->error, "cycle %llu: %s",
               (unsigned long long)tag, la_client_error(c));
      rc = -1;
      break;
    }
    rc = eval_set(&v, t, kase, cd->ranks, res->n, tag, cal,
                  (tag - WARMUP) % 4 == 0, res);
    la_traceset_free(t);
  }
  la_client_close(c);
  if (rc == 0) eval_summarise(&v, cd->ranks, res);
  eval_free(&v);
  return rc;
}

/* ------------------------------------------------------------ output */

static void print_header(void) {
  printf(
      "%-8s %-8s %-11s %5s %6s %6s %7s %7s %7s %7s %6s %6s %6s %8s %6s %6s\n",
      "compact", "case", "condition", "ranks", "sp_rob", "sp_mea", "sh_mea",
      "sh_rob", "shw_mea", "shw_rob", "imb_t", "imb_r", "imb_m", "flagged",
      "agentS", "landS");
}

static void print_row(const result_t *r) {
  if (r->error[0]) {
    printf("%-8s %-8s %-11s %5d  error: %s\n", r->compact, r->kase, r->cond,
           r->ranks, r->error);
    return;
  }
  printf(
      "%-8s %-8s %-11s %5d %6.3f %6.3f %6.1f%% %6.1f%% %6.1f%% %6.1f%% %6.3f "
      "%6.3f %6.3f %8.0f %6.2f %6.2f\n",
      r->compact, r->kase, r->cond, r->ranks, r->sp_robust, r->sp_measured,
      100 * r->share_m, 100 * r->share_r, 100 * r->share_m_worst,
      100 * r->share_r_worst, r->imb_true, r->imb_robust, r->imb_measured,
      r->flagged, r->agent_cpu_s, r->landed_s);
  if (r->band_n[0] + r->band_n[1] > 0) { /* light elements: by band */
    printf("%38s robust / true by true cost:", "");
    static const char *const name[3] = {"< 3 steps", "3-6 steps",
                                        ">= 6 steps"};
    for (int b = 0; b < 3; b++)
      if (r->band_n[b] > 0)
        printf(" %s %.3f (%.0f%% of elements, %.0f%% of them off by > 20%%)%s",
               name[b], r->band_r[b] / r->band_t[b],
               100 * r->band_n[b] /
                   (r->band_n[0] + r->band_n[1] + r->band_n[2]),
               100 * r->band_off[b] / r->band_n[b], b < 2 ? ";" : "");
    printf("\n");
  }
  if (r->beyond_calib > 0) /* the truth itself is off there */
    printf("%38s warning: %ld element-cycles beyond 1.5x the rank's "
           "calibrated units: their truth is clamped\n",
           "", r->beyond_calib);
}

static void json_num(FILE *f, const char *k, double v, int last) {
  if (isfinite(v))
    fprintf(f, "\"%s\": %.6g%s", k, v, last ? "" : ", ");
  else
    fprintf(f, "\"%s\": null%s", k, last ? "" : ", ");
}

static int write_json(const char *path, const result_t *rs, int n,
                      long cycles) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f,
          "{\"bench\": \"fidelity\", \"cycles\": %ld, \"warmup\": %d, "
          "\"parts\": %d, \"cpus\": %ld, \"runs\": [\n",
          cycles, WARMUP, NPARTS, sysconf(_SC_NPROCESSORS_ONLN));
  for (int i = 0; i < n; i++) {
    const result_t *r = &rs[i];
    fprintf(f,
            "  {\"compaction\": \"%s\", \"case\": \"%s\", "
            "\"condition\": \"%s\", \"ranks\": %d, "
            "\"elements_per_rank\": %ld, \"sets\": %d, ",
            r->compact, r->kase, r->cond, r->ranks, r->n, r->sets);
    if (r->error[0]) {
      fprintf(f, "\"error\": \"");
      for (const char *p = r->error; *p; p++)
        if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) fputc(*p, f);
      fprintf(f, "\"}%s\n", i + 1 < n ? "," : "");
      continue;
    }
    json_num(f, "spearman_robust", r->sp_robust, 0);
    json_num(f, "spearman_measured", r->sp_measured, 0);
    json_num(f, "share_measured", r->share_m, 0);
    json_num(f, "share_robust", r->share_r, 0);
    json_num(f, "share_measured_worst_rank", r->share_m_worst, 0);
    json_num(f, "share_robust_worst_rank", r->share_r_worst, 0);
    json_num(f, "imbalance_true_partition", r->imb_true, 0);
    json_num(f, "imbalance_robust_partition", r->imb_robust, 0);
    json_num(f, "imbalance_measured_partition", r->imb_measured, 0);
    json_num(f, "flagged", r->flagged, 0);
    json_num(f, "timer_res_ns", r->timer_res, 0);
    static const char *const band[3] = {"lt3", "3to6", "ge6"};
    for (int b = 0; b < 3; b++) {
      char k[64];
      snprintf(k, sizeof k, "robust_over_true_%s_steps", band[b]);
      json_num(f, k, r->band_n[b] > 0 ? r->band_r[b] / r->band_t[b] : NAN, 0);
      snprintf(k, sizeof k, "elements_%s_steps", band[b]);
      json_num(f, k, r->band_n[b], 0);
      snprintf(k, sizeof k, "off_20pct_%s_steps", band[b]);
      json_num(f, k, r->band_n[b] > 0 ? r->band_off[b] / r->band_n[b] : NAN,
               0);
    }
    json_num(f, "agent_cpu_s", r->agent_cpu_s, 0);
    json_num(f, "landed_s", r->landed_s, 0);
    json_num(f, "wall_s", r->wall_s, 1);
    fprintf(f, "}%s\n", i + 1 < n ? "," : "");
  }
  fprintf(f, "]}\n");
  return fclose(f);
}

/* ------------------------------------------------------------ main */

/* The app next to this program. */
static void app_path(const char *argv0, char *out, size_t len) {
  const char *slash = strrchr(argv0, '/');
  if (slash)
    snprintf(out, len, "%.*s/fidelity_app", (int)(slash - argv0), argv0);
  else
    snprintf(out, len, "build/bench/fidelity_app");
}

int main(int argc, char **argv) {
  const char *json =
      la_bench_out_path(argc, argv, 1, "build/bench/fidelity.json");
  signal(SIGPIPE, SIG_IGN);
  char app[1024], calib[] = "/tmp/la-fidelity-XXXXXX";
  app_path(argv[0], app, sizeof app);
  if (access(app, X_OK) != 0) {
    fprintf(stderr, "bench_fidelity: %s not built\n", app);
    return 1;
  }
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
    fprintf(stderr, "bench_fidelity: needs at least 2 CPUs\n");
    return 1;
  }
  if (!mkdtemp(calib)) return 1;
  la_test_stack_t st;
  if (la_ts_init(&st) != 0 || la_ts_start_global(&st, NULL) != 0) {
    fprintf(stderr, "bench_fidelity: cannot start the GlobalAgent\n");
    la_ts_free(&st);
    return 1;
  }
  const char *cyc = getenv("LA_FID_CYCLES");
  run_ctx_t x = {&st, app, calib, "polyline", cyc ? atol(cyc) : 40, 0};
  if (x.cycles < WARMUP + 2) x.cycles = WARMUP + 2;
  static const char *const compacts[] = {"polyline", "lossless"};
  static result_t rs[2 * NCONDS * FC_NCASES];
  int nr = 0, failed = 0;
  printf(
      "== bench fidelity: %ld cycles per run (first %d are warm-up), "
      "%d-way METIS partitions\n",
      x.cycles, WARMUP, NPARTS);
  print_header();
  for (int ci = 0; ci < NCONDS && !failed; ci++) {
    const cond_t *cd = &g_conds[ci];
    if (!listed("LA_FID_CONDS", cd->name)) continue;
    const char *extra[] = {cd->agent_arg, NULL};
    if (la_ts_start_local(&st, cd->agent_arg ? extra : NULL) != 0) {
      fprintf(stderr, "bench_fidelity: cannot start the LocalAgent\n");
      failed = 1;
      break;
    }
    for (int mi = 0; mi < 2; mi++) {
      if (!listed("LA_FID_COMPACT", compacts[mi])) continue;
      x.compact = compacts[mi];
      for (int k = 0; k < FC_NCASES; k++) {
        if (!listed("LA_FID_CASES", fc_case_names[k])) continue;
        if (run_one(&x, k, cd, &rs[nr]) != 0) failed = 1;
        print_row(&rs[nr]);
        fflush(stdout);
        nr++;
      }
    }
    la_ts_stop_local(&st);
  }
  la_ts_free(&st);
  char rm[128];
  snprintf(rm, sizeof rm, "rm -rf %s", calib);
  if (system(rm) != 0)
    fprintf(stderr, "bench_fidelity: cannot remove %s\n", calib);
  if (write_json(json, rs, nr, x.cycles) != 0) {
    fprintf(stderr, "bench_fidelity: cannot write %s\n", json);
    return 1;
  }
  printf("wrote %s\n", json);
  return failed;
}
