/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_cellcycle.c: the LocalAgent worker's computation on a cell-probed
 * cycle, replayed outside the daemon (`make bench-cellcycle`,
 * docs/performance.md "LocalAgent (make bench-localagent)").
 *
 * Input: the cycles LA_DUMP_RAW wrote for one rank of a cell-probed run
 * (LA_BENCH_CELLS_RAW=DIR:APP[:RANK], rank 0 by default; the files
 * DIR/APP.r<rank>.c<tag>.f64, .flags and .fid, in cycle order, at most
 * LA_BENCH_CELLS_MAX of them, 40 by default; LA_BENCH_CELLS_N: only the
 * first N cells of each, e.g. a block that stays in the core's cache, to
 * tell a step's compute from its memory traffic; scripts/bench-cellcycle.sh
 * records bench_localagent's probe loop, 10^6 elements, every one probed,
 * APP bench-probe, and its ranges loop, 1000 ranges of 1000 elements,
 * bench-ranges, whose values are each range's count shared by its cells,
 * no whole counts). The timer's resolution is LA_BENCH_CELLS_RES ns
 * (default: the median positive interval of the first cycle, resolution()
 * below, which only a cell-probed cycle shows).
 *
 * Per cycle, what worker.c does with a cell-probed cycle of the time
 * metric (every default feature on: robust weights with interference
 * detection, history), each step timed in thread CPU time:
 *   take      the buffer's read: counts times the scale into the job's
 *             array, the buffer zeroed (the loop of la_app_ipc_take), and
 *             the flag bytes copied;
 *   measured  la_compact of the values (quantum = the scale);
 *   weights   la_weights_cycle_recon_starts (robust estimator and the
 *             robust series' compaction, its reconstruction and records'
 *             starts written);
 *   match     la_history_match (the values and the robust reconstruction
 *             against each representative), when none matches the robust
 *             weights on their own (la_history_match_robust_exc, per
 *             element with the session's floor of one timer step where the
 *             measured value is whole ticks, with exceptions on up to
 *             LA_COMPACT_SPLICE_MAX(n) elements, as the worker;
 *             LA_BENCH_CELLS_EXC=0: on every element only, the robust
 *             references without exceptions) and la_history_take;
 *   learn     for a cycle the history learns: la_history_refit and
 *             la_history_learn;
 *   app       the reconstruction copied out (la_app_ipc_put_weights_values'
 *             copy into the weights area).
 * Seven rounds (LA_BENCH_CELLS_ROUNDS, up to 101, for a profiler) replay
 * every cycle from a fresh state; reported are the medians over the rounds
 * of each step's CPU time per cycle and per cell (ns), each step's minor
 * page faults per cycle in the last round (memory new to the process:
 * a fresh state's learning, or an array the allocator gave back to the
 * system and maps again), the bytes and bits
 * per value of both encodings, the history's matches, the weights'
 * resolution counts (st.positive, st.coarse), on cycles of whole counts
 * how the robust weights relate element by element to the measured values
 * and to the previous cycle's weights (relation() below: how many are
 * equal, order-0 entropies in ticks), and FNV-1a hashes
 * of the robust reconstructions and of both encodings (two builds give the
 * same bytes when these agree; every round must give the first round's).
 * Writes argv[1] (build/bench/cellcycle.json).
 */
#include "bench_args.h"
#include "bench_replay.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <malloc.h>
#include <time.h>
#include <sys/resource.h>

#include "history.h"
#include "la_compact_splice.h"
#include "la_compact.h"
#include "weights.h"

#define ROUNDS_MAX 101
#define MAX_CYCLES 4096
#define N_STEPS 6

static const char *step_name[N_STEPS] = {"take",  "measured", "weights",
                                         "match", "learn",    "app"};

typedef struct cyc {
  double *counts; /* the buffer's values: timer counts */
  uint8_t *flags;
  double scale; /* ns per count */
  int shares;   /* some value is no whole count (a range's share) */
} cyc_t;

/* The thread's CPU time (ns), and its minor page faults so far in *flt
 * (first, so that reading them is not in the next step's time). */
static double stamp(long *flt) {
  struct rusage ru;
  *flt = getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_minflt : 0;
  return la_bench_thread_ns();
}

/* Bytes of a file (0 when missing), and its contents in *out. */
static size_t slurp(const char *path, void **out) {
  FILE *f = fopen(path, "rb");
  *out = NULL;
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = len > 0 ? malloc((size_t)len) : NULL;
  size_t got = b ? fread(b, 1, (size_t)len, f) : 0;
  fclose(f);
  if (!b || got != (size_t)len) {
    free(b);
    return 0;
  }
  *out = b;
  return got;
}

/* Reads one cycle (n: its elements, set by the first); 0 or -1. */
static int read_cycle(const char *dir, const char *app, int rank, uint64_t tag,
                      uint64_t *n, cyc_t *c) {
  char path[1024];
  if (la_bench_dump_scale("bench_cellcycle", dir, app, rank, tag, &c->scale) != 0)
    return -1;
  void *v, *fl;
  snprintf(path, sizeof path, "%s/%s.r%d.c%llu.f64", dir, app, rank,
           (unsigned long long)tag);
  size_t len = slurp(path, &v);
  snprintf(path, sizeof path, "%s/%s.r%d.c%llu.flags", dir, app, rank,
           (unsigned long long)tag);
  size_t flen = slurp(path, &fl);
  if (len == 0 || len % sizeof(double) || (*n && len / sizeof(double) != *n) ||
      flen != len / sizeof(double)) {
    fprintf(stderr, "bench_cellcycle: %s: values and flags do not agree\n",
            path);
    free(v);
    free(fl);
    return -1;
  }
  *n = len / sizeof(double);
  c->counts = v;
  c->flags = fl;
  /* whole counts as the buffer held them; a range's share of its cells'
   * count (the ranges loop) is no whole number and stays a fraction */
  for (uint64_t i = 0; i < *n; i++) {
    double k = c->counts[i] / c->scale, r = round(k);
    int whole = fabs(k - r) <= 1e-9 * fabs(r);
    c->counts[i] = whole ? r : k;
    c->shares |= !whole;
  }
  return 0;
}

/* The timer's resolution as libla measures it (the median difference of
 * two consecutive timer reads) shows in a light probe's interval, which is
 * about two timer reads: the median positive count of the first cycle
 * times the scale (ns). */
static double resolution(const cyc_t *c, uint64_t n) {
  double *v = malloc(n * sizeof *v);
  uint64_t m = 0;
  for (uint64_t i = 0; i < n; i++)
    if (c->counts[i] > 0) v[m++] = c->counts[i];
  double r = m ? la_bench_median(v, (int)m) : 1;
  free(v);
  return r * c->scale;
}

/* How the robust weights w relate to the measured values x and to the
 * previous cycle's weights (both whole ticks of q ns, but for a few values
 * not finite or beyond 2^15 ticks, which count as one escape symbol):
 * r->equal counts w == x, r->pred_equal w == the estimator's in-band rule
 * on the previous weights (prev, NULL in the first cycle: the previous
 * weight followed by the measured value with weight follow, rounded to
 * ticks), and the histograms (of ticks) of w, of w - x, of w - x where
 * they differ, of w - x given x (REL_CTX contexts of REL_CBINS), and of
 * w - that rule's value grow. Run on the first round only, outside the
 * timed steps. */
#define REL_BINS 65537 /* -2^15..2^15 ticks and an escape */
#define REL_CTX 257    /* measured values 0..255 ticks and the others */
#define REL_CBINS 257  /* differences -128..127 ticks and the others */
enum { H_W, H_D, H_DD, H_P, H_N };
typedef struct relation {
  uint64_t values, equal, predicted, pred_equal;
  uint64_t *h[H_N]; /* REL_BINS each */
  uint64_t *hc;     /* REL_CTX * REL_CBINS */
} relation_t;

static uint32_t rel_bin(double v, double q) {
  double t = v / q;
  if (!(fabs(t) < 32768)) return REL_BINS - 1;
  return (uint32_t)(llround(t) + 32768) % (REL_BINS - 1);
}

static void relation(relation_t *r, const double *x, const double *w,
                     const double *prev, double follow, uint64_t n, double q) {
  for (uint64_t i = 0; i < n; i++) {
    int eq = w[i] == x[i];
    r->equal += eq;
    r->h[H_W][rel_bin(w[i], q)]++;
    uint32_t d = isfinite(w[i]) && isfinite(x[i]) ? rel_bin(w[i] - x[i], q)
                                                  : REL_BINS - 1;
    r->h[H_D][d]++;
    if (!eq) r->h[H_DD][d]++;
    double tx = x[i] / q, td = d == REL_BINS - 1 ? 1e9 : (double)d - 32768;
    uint32_t cx = tx >= 0 && tx < REL_CTX - 1 ? (uint32_t)tx : REL_CTX - 1;
    uint32_t cd = td >= -128 && td < 128 ? (uint32_t)(td + 128) : 256;
    r->hc[cx * REL_CBINS + cd]++;
    if (prev) {
      double p = round(((1 - follow) * prev[i] + follow * x[i]) / q) * q;
      r->pred_equal += w[i] == p;
      r->h[H_P][isfinite(p) && isfinite(w[i]) ? rel_bin(w[i] - p, q)
                                              : REL_BINS - 1]++;
    }
  }
  r->values += n;
  r->predicted += prev ? n : 0;
}

/* Entropy of nctx histograms of nbins each (h), each of its own values
 * (order 0 given the context), bits per counted value (0: none). */
static double entropy(const uint64_t *h, uint32_t nctx, uint32_t nbins) {
  uint64_t all = 0;
  double e = 0;
  for (uint32_t c = 0; c < nctx; c++, h += nbins) {
    uint64_t m = 0;
    for (uint32_t b = 0; b < nbins; b++) m += h[b];
    for (uint32_t b = 0; b < nbins; b++)
      if (h[b]) e -= (double)h[b] * log2((double)h[b] / (double)m);
    all += m;
  }
  return all ? e / (double)all : 0;
}

int main(int argc, char **argv) {
  const char *out =
      la_bench_out_path(argc, argv, 1, "build/bench/cellcycle.json");
  char dir[512], app[256];
  int rank;
  if (la_bench_dump_spec("bench_cellcycle", "LA_BENCH_CELLS_RAW",
                         "scripts/bench-cellcycle.sh", dir, sizeof dir, app,
                         sizeof app, &rank) != 0)
    return 2;
  /* freed arrays stay in the heap, as in the daemon (main.c) */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  static uint64_t tags[MAX_CYCLES];
  int nc = la_bench_dump_tags(dir, app, rank, tags, MAX_CYCLES);
  const char *ms = getenv("LA_BENCH_CELLS_MAX");
  int maxc = ms ? atoi(ms) : 40;
  if (maxc > 0 && nc > maxc) nc = maxc;
  if (nc <= 0) {
    fprintf(stderr, "bench_cellcycle: no cycles %s/%s.r%d.c*.f64\n", dir, app,
            rank);
    return 1;
  }
  cyc_t *cy = calloc((size_t)nc, sizeof *cy);
  uint64_t n = 0;
  for (int i = 0; i < nc; i++)
    if (read_cycle(dir, app, rank, tags[i], &n, &cy[i]) != 0) return 1;
  const char *nv = getenv("LA_BENCH_CELLS_N"); /* the first N cells only */
  uint64_t first = nv ? strtoull(nv, NULL, 10) : 0;
  if (first > 0 && first < n) n = first;
  const char *resv = getenv("LA_BENCH_CELLS_RES");
  double res = resv ? strtod(resv, NULL) : resolution(&cy[0], n);

  /* the session's parameters with the default settings (session.c) */
  la_compact_params_t cp, rcp;
  la_compact_params_default(&cp);
  double tol = 0.25, rcv = 0.02;
  uint32_t confirm = 3, reps = 4;
  la_history_robust_params(&cp, rcv, &rcp);

  const char *rs = getenv("LA_BENCH_CELLS_ROUNDS");
  int ROUNDS = rs ? atoi(rs) : 7;
  if (ROUNDS < 1 || ROUNDS > ROUNDS_MAX) ROUNDS = 7;
  static double t_step[N_STEPS][ROUNDS_MAX], t_all[ROUNDS_MAX];
  long faults[N_STEPS] = {0}; /* minor page faults of the last round */
  uint64_t h_w = 0, h_enc = 0, matches = 0, rmatches = 0, positive = 0,
           coarse = 0;
  size_t rbytes = 0, mbytes = 0;
  double *buf = malloc(n * sizeof *buf), *x = malloc(n * sizeof *x);
  double *rw = malloc(n * sizeof *rw), *area = malloc(n * sizeof *area);
  uint8_t *flags = malloc(n);
  uint64_t *rst = malloc((n / 8 ? n / 8 : 1) * sizeof *rst);
  const char *ev = getenv("LA_BENCH_CELLS_EXC");
  size_t xcap = ev && !strcmp(ev, "0") ? 0 : (size_t)LA_COMPACT_SPLICE_MAX(n);
  uint64_t *xidx = malloc((xcap + 1) * sizeof *xidx);
  relation_t rel = {0};
  int rel_ok = (rel.hc = calloc(REL_CTX * REL_CBINS, sizeof *rel.hc)) != NULL;
  for (int k = 0; k < H_N; k++)
    rel_ok &= (rel.h[k] = calloc(REL_BINS, sizeof *rel.h[k])) != NULL;
  double *prev = malloc(n * sizeof *prev);
  la_robust_params_t rpd;
  la_robust_params_default(&rpd);
  if (!rel_ok || !prev) return 1;
  for (int round = 0; round < ROUNDS; round++) {
    la_weights_t *w = NULL;
    la_history_budget_t budget = {.limit = 256u << 20, .used = 0};
    la_history_t *h = la_history_new(&budget, n, reps, &cp, &rcp);
    /* the session's floor of robust references: one timer step */
    la_history_set_robust_floor(h, res);
    if (la_weights_new(n, res, 1, tol, confirm, rcv, NULL, 0, &w) != 0 || !h) {
      fprintf(stderr, "bench_cellcycle: no estimator or history\n");
      return 1;
    }
    double sum[N_STEPS] = {0};
    uint64_t hw = 0xcbf29ce484222325ull, he = hw;
    for (int i = 0; i < nc; i++) {
      /* the application's buffer, as it hands it over (not timed) */
      memcpy(buf, cy[i].counts, n * sizeof *buf);
      la_compact_params_t p = cp;
      p.quantum = cy[i].scale;
      la_robust_stats_t st;
      la_compact_result_t res_m, res_r;
      double t[N_STEPS + 1];
      long f[N_STEPS + 1];
      t[0] = stamp(&f[0]);
      for (uint64_t k = 0; k < n; k++) x[k] = buf[k] * cy[i].scale;
      memset(buf, 0, n * sizeof *buf);
      memcpy(flags, cy[i].flags, n);
      t[1] = stamp(&f[1]);
      int rc = la_compact(x, n, &p, &res_m);
      t[2] = stamp(&f[2]);
      rc |= la_weights_cycle_recon_starts(w, x, flags, &p, &res_r, &st, rw,
                                          rst, n / 8);
      t[3] = stamp(&f[3]);
      uint64_t ref = 0;
      la_fit_error_t err;
      int rm = 0;
      int m = la_history_match(h, x, rw, &ref, &err);
      size_t nx = 0;
      if (!m) /* the robust weights on their own, as the worker does */
        rm = la_history_match_robust_exc(
            h, rw, x, p.quantum, xcap && la_history_exc_due(h) ? xcap : 0,
            xidx, &nx, &ref, &err);
      int learn = la_history_take(h, m);
      t[4] = stamp(&f[4]);
      if (learn) la_history_refit(h, x, &p, &res_m);
      if (learn)
        rc |= la_history_learn_recon(h, tags[i], &res_m, &res_r, rw, rst);
      t[5] = stamp(&f[5]);
      memcpy(area, rw, n * sizeof *rw);
      t[6] = stamp(&f[6]);
      if (rc != 0) {
        fprintf(stderr, "bench_cellcycle: compaction failed\n");
        return 1;
      }
      for (int s = 0; s < N_STEPS; s++) {
        sum[s] += t[s + 1] - t[s];
        if (round == ROUNDS - 1) faults[s] += f[s + 1] - f[s];
      }
      hw = la_bench_fnv(hw, area, n * sizeof *area);
      he = la_bench_fnv(he, res_r.bytes, res_r.len);
      if (!learn) he = la_bench_fnv(he, res_m.bytes, res_m.len);
      if (round == 0) {
        if (!cy[i].shares) /* in ticks: of whole-tick values only */
          relation(&rel, x, rw, i && !cy[i - 1].shares ? prev : NULL,
                   rpd.follow, n, cy[i].scale);
        memcpy(prev, rw, n * sizeof *prev);
        positive += st.positive;
        coarse += st.coarse;
        matches += m;
        rmatches += rm && !learn;
        rbytes += res_r.len;
        if (!learn) mbytes += res_m.len; /* a refit's bytes are the rep's */
      }
      la_compact_result_free(&res_m);
      la_compact_result_free(&res_r);
    }
    if (round == 0) {
      h_w = hw;
      h_enc = he;
    } else if (hw != h_w || he != h_enc) {
      fprintf(stderr, "bench_cellcycle: round %d differs from round 0\n",
              round);
      return 1;
    }
    t_all[round] = 0;
    for (int s = 0; s < N_STEPS; s++) {
      t_step[s][round] = sum[s] / nc;
      t_all[round] += sum[s] / nc;
    }
    la_weights_free(w);
    la_history_free(h);
  }
  double med[N_STEPS], tot = la_bench_median(t_all, ROUNDS);
  printf("bench_cellcycle: %d cycles of %llu cells (rank %d), timer "
         "resolution %.2f ns, %d rounds, thread CPU per cycle (medians) and "
         "minor page faults per cycle (the last round)\n",
         nc, (unsigned long long)n, rank, res, ROUNDS);
  for (int s = 0; s < N_STEPS; s++) {
    med[s] = la_bench_median(t_step[s], ROUNDS);
    printf("  %-9s %9.1f µs  %6.2f ns/cell  %7.1f page faults\n",
           step_name[s], med[s] / 1e3, med[s] / (double)n,
           (double)faults[s] / nc);
  }
  printf("  total     %9.1f µs  %6.2f ns/cell\n", tot / 1e3, tot / (double)n);
  uint64_t nm = (uint64_t)nc - matches; /* cycles whose own bytes counted */
  printf("  history matches %llu of %d, robust references %llu (exceptions "
         "on up to %zu elements); bits per value: measured %.3f (%llu "
         "cycles not learned), robust %.3f\n",
         (unsigned long long)matches, nc, (unsigned long long)rmatches, xcap,
         nm ? 8.0 * (double)mbytes / ((double)n * (double)nm) : 0,
         (unsigned long long)nm, 8.0 * (double)rbytes / ((double)n * nc));
  printf("  weights above 0: %llu, of them below %d timer steps: %llu\n",
         (unsigned long long)positive, LA_WEIGHTS_RESOLVED_STEPS,
         (unsigned long long)coarse);
  double feq = rel.values ? (double)rel.equal / (double)rel.values : 0;
  double fpr =
      rel.predicted ? (double)rel.pred_equal / (double)rel.predicted : 0;
  double hmask =
      feq > 0 && feq < 1 ? -feq * log2(feq) - (1 - feq) * log2(1 - feq) : 0;
  double ent[H_N];
  for (int k = 0; k < H_N; k++) ent[k] = entropy(rel.h[k], 1, REL_BINS);
  double hmd = hmask + (1 - feq) * ent[H_DD];
  double hc = entropy(rel.hc, REL_CTX, REL_CBINS);
  if (rel.values < (uint64_t)nc * n)
    printf(
        "  cycles of whole timer counts, whose weights are related to their "
        "measured values below: %llu\n",
        (unsigned long long)(rel.values / n));
  if (rel.values)
    printf(
        "  robust weights equal to the measured values: %.1f%%, to the "
        "in-band rule on the previous cycle's weights: %.1f%%; order-0 "
        "entropy, bits per value: weights %.2f, weights - measured %.2f, a "
        "mask of the equal ones and the others' differences %.2f, weights "
        "given the measured value %.2f, weights - the rule's %.2f\n",
        100 * feq, 100 * fpr, ent[H_W], ent[H_D], hmd, hc, ent[H_P]);
  printf("  hashes: weights %016llx encodings %016llx\n",
         (unsigned long long)h_w, (unsigned long long)h_enc);
  FILE *f = la_bench_open_out(out);
  if (!f) return 1;
  fprintf(f,
          "{\"cycles\": %d, \"cells\": %llu, \"rounds\": %d, "
          "\"timer_res_ns\": %.6f, ",
          nc, (unsigned long long)n, ROUNDS, res);
  for (int s = 0; s < N_STEPS; s++)
    fprintf(f, "\"%s_ns_per_cell\": %.3f, \"%s_faults_per_cycle\": %.1f, ",
            step_name[s], med[s] / (double)n, step_name[s],
            (double)faults[s] / nc);
  fprintf(f,
          "\"total_ns_per_cell\": %.3f, \"history_matches\": %llu, "
          "\"robust_references\": %llu, \"exceptions_cap\": %zu, "
          "\"robust_bits_per_value\": %.4f, \"robust_equal_measured\": %.4f, "
          "\"robust_equal_rule\": %.4f, \"robust_entropy\": %.3f, "
          "\"robust_minus_measured_entropy\": %.3f, \"robust_mask_entropy\": "
          "%.3f, \"robust_given_measured_entropy\": %.3f, "
          "\"robust_minus_rule_entropy\": %.3f, \"hash_weights\": "
          "\"%016llx\", \"hash_enc\": \"%016llx\"}\n",
          tot / (double)n, (unsigned long long)matches,
          (unsigned long long)rmatches, xcap,
          8.0 * (double)rbytes / ((double)n * nc), feq, fpr, ent[H_W],
          ent[H_D], hmd, hc, ent[H_P], (unsigned long long)h_w,
          (unsigned long long)h_enc);
  if (fclose(f) != 0) {
    perror(out);
    return 1;
  }
  for (int i = 0; i < nc; i++) {
    free(cy[i].counts);
    free(cy[i].flags);
  }
  free(cy);
  free(buf);
  free(x);
  free(rw);
  free(area);
  free(flags);
  free(rst);
  free(xidx);
  for (int k = 0; k < H_N; k++) free(rel.h[k]);
  free(rel.hc);
  free(prev);
  return 0;
}
