/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_compact.c: `make bench-compact`: speed, size and achieved error of
 * every compaction mode, in one run, on these series:
 *   (a) synthetic_mesh: la_compact_synth(LA_SYNTH_MESH), 10^6 points, seed
 *       42 (plateaus 2,000-22,000 points, 5% periodic, 2% noise, 0.1%
 *       spikes, whole nanoseconds);
 *   (b) per-element costs measured from the examples: heavy_measured and
 *       wavetoy_measured are the last profiled cycle of
 *         mpiexec -n 1 build/examples/heavy --n 16 --steps 3     (16^3 cells)
 *         mpiexec -n 1 build/examples/wavetoy --n 48 --steps 3   (48^3 cells)
 *       run profiling into the real LocalAgent (and GlobalAgent behind it,
 *       tests/support/la_test_stack.h) with LA_DUMP_RAW=<temporary
 *       directory>: libla's own per-cell
 *       nanoseconds, as the agent would compact them; wavetoy_interfered
 *       and heavy_interfered run 4 ranks on this machine's cores (ranks
 *       preempt each other: interference) and take rank 0's last cycle.
 *       The examples are found
 *       in dirname(/proc/self/exe)/../examples; without them or mpiexec these
 *       series are skipped with a note;
 *       stencil_measured: per-cell costs measured here, in cycles (rdtsc;
 *       CLOCK_MONOTONIC ns elsewhere), of a 3-D 7-point stencil over 64^3
 *       cells with a costlier spherical "material" region, second sweep (no
 *       MPI needed).
 * Modes: every mode, and polyline_quantum: the default polyline with the
 * series' quantum (the scale of the dump's .fid; 1 for whole ns and cycles),
 * which is what the LocalAgent runs (quantized runs on rough stretches).
 * Beside raw doubles (64 bits/value) and `zstd -19` of them (when zstd is
 * on PATH: the size a general-purpose compressor reaches), the lossless
 * mode and two floors: a
 * plain sum over the same array with one accumulator (latency-bound) and
 * with eight (memory-bound), in ns per point. Per encoding also the
 * parse a subscriber makes (la_trace_open), the decode after it and the
 * check the GlobalAgent makes (la_trace_check_max). Times are
 * thread CPU time (these VMs steal wall time), median of REPS runs.
 * Writes argv[1] (default build/bench/compact.json) and prints a table.
 */
#include "bench_args.h"
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "la_compact.h"
#include "la_test_stack.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define TICK() ((double)__rdtsc())
#define TICK_UNIT "cycles"
#else
#define TICK() now_ns()
#define TICK_UNIT "ns"
#endif

#define REPS 7
#define N_SYNTH 1000000
#define G 64

#if !defined(__x86_64__) && !defined(__i386__)
static double now_ns(void) {
  struct timespec t;

  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}
#endif

static double cpu_ns(void) {
  struct timespec t;

  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The measured series: one value per cell of a G^3 grid. */
static void stencil_costs(double *cost) {
  size_t n = (size_t)G * G * G, i, j, k, c, sweep;
  double *u = malloc(n * sizeof(double)), *v = malloc(n * sizeof(double));

  for (c = 0; c < n; c++) u[c] = v[c] = (double)(c % 17);
  for (sweep = 0; sweep < 2; sweep++)
    for (k = 0; k < G; k++)
      for (j = 0; j < G; j++)
        for (i = 0; i < G; i++) {
          double t0 = TICK(), r;
          c = (k * G + j) * G + i;
          if (i == 0 || j == 0 || k == 0 || i == G - 1 || j == G - 1 ||
              k == G - 1) {
            v[c] = u[c]; /* boundary: a copy */
          } else {
            r = (u[c - 1] + u[c + 1] + u[c - G] + u[c + G] + u[c - G * G] +
                 u[c + G * G] - 6 * u[c]) *
                0.1;
            double di = (double)i - G / 2, dj = (double)j - G / 2,
                   dk = (double)k - G / 2;
            if (di * di + dj * dj + dk * dk < (G / 4) * (G / 4))
              r = r + 1e-3 * sin(r) * exp(-r * r); /* costlier material */
            v[c] = u[c] + r;
          }
          cost[c] = TICK() - t0;
        }
  free(u);
  free(v);
}

typedef struct {
  const char *name, *spec;
  int quantum; /* with the series' quantum, as the LocalAgent compacts */
} mode_t_;

static const mode_t_ modes[] = {
    {"polyline", "polyline:cv=0.1", 0},
    {"polyline_quantum", "polyline:cv=0.1", 1},
    {"polyline_connected", "polyline:cv=0.1,connected", 0},
    {"polyline_no_outliers", "polyline:cv=0.1,no-outliers", 0},
    {"maxerr_relative", "maxerr:eps=0.1,relative", 0},
    {"maxerr_absolute", NULL, 0}, /* eps = 5% of the series mean */
    {"lossless", "lossless", 0},
};

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof(double), cmp_double);
  return t[n / 2];
}

/* Runs one mode on one series; writes a JSON object and a table row. */
static int bench_mode(FILE *js, const char *series, const double *x, size_t n,
                      double quantum, const mode_t_ *m, int first) {
  la_compact_params_t p;
  la_compact_result_t r = {0};
  la_trace_t *t;
  char spec[96], why[200];
  double tc[REPS], td[REPS], ts[REPS], tk[REPS], to[REPS];
  double *y = malloc(n * sizeof(double)), s;
  int i;

  if (m->spec) {
    snprintf(spec, sizeof(spec), "%s", m->spec);
  } else {
    la_series_stats_t st;
    la_series_stats(x, n, &st);
    snprintf(spec, sizeof(spec), "maxerr:eps=%.4g", 0.05 * st.sum / n);
  }
  if (y == NULL || la_compact_spec_parse(spec, &p, why, sizeof(why)) != 0)
    return -1;
  if (m->quantum) {
    if (!(quantum > 0)) {
      free(y);
      return 0; /* no quantum known for this series */
    }
    p.quantum = quantum; /* as the LocalAgent compacts: the timer's scale */
    snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec),
             " + quantum %.6g", quantum);
  }
  for (i = 0; i < REPS; i++) {
    double t0;
    la_compact_result_free(&r);
    t0 = cpu_ns();
    if (la_compact(x, n, &p, &r) != 0) return -1;
    tc[i] = (cpu_ns() - t0) / (double)n;
  }
  if (la_trace_open(r.bytes, r.len, &t, why, sizeof(why)) != 0) {
    fprintf(stderr, "bench_compact: %s: %s\n", spec, why);
    return -1;
  }
  for (i = 0; i < REPS; i++) {
    double t0 = cpu_ns();
    la_trace_decode(t, 0, n, y);
    td[i] = (cpu_ns() - t0) / (double)n;
    t0 = cpu_ns();
    for (size_t q = 0; q < 1000; q++)
      la_trace_range_sum(t, q * (n / 1000), n / 2, &s);
    ts[i] = (cpu_ns() - t0) / 1000;
    /* the check a GlobalAgent and a client make of every trace received */
    uint64_t pts;
    int mode;
    t0 = cpu_ns();
    for (int k = 0; k < 20; k++)
      if (la_trace_check_max(r.bytes, r.len, n, &pts, &mode, why,
                             sizeof(why)) != 0)
        return -1;
    tk[i] = (cpu_ns() - t0) / 20 / (double)r.len;
    /* the parse a subscriber makes of every trace it reads */
    t0 = cpu_ns();
    for (int k = 0; k < 5; k++) {
      la_trace_t *u;
      if (la_trace_open(r.bytes, r.len, &u, why, sizeof(why)) != 0) return -1;
      la_trace_close(u);
    }
    to[i] = (cpu_ns() - t0) / 5 / (double)n;
  }
  double ns = median(tc, REPS), dns = median(td, REPS), sns = median(ts, REPS);
  double kns = median(tk, REPS), ons = median(to, REPS);
  double bits = 8.0 * (double)r.len / (double)n;
  printf(
      "%-18s %-22s %7.2f %8.2f %8.2f %9.4f %9.1f %8zu %7zu %11.4g %8.4f "
      "%8.3f\n",
      series, m->name, ns, ons, dns, bits, 64 / bits, r.segments,
      r.exceptions, r.error.max_abs, r.error.cv, kns);
  if (r.quantized)
    printf(
        "%-18s %-22s (%.1f%% of points stored exactly in quantized "
        "runs)\n",
        "", "", 100.0 * (double)r.quantized / (double)n);
  fprintf(js,
          "%s\n      \"%s\": {\"spec\": \"%s\", \"ns_per_point\": %.3f, "
          "\"bits_per_value\": %.5f, \"ratio_to_raw\": %.2f, \"bytes\": %zu, "
          "\"segments\": %zu, \"exceptions\": %zu, \"max_abs_error\": %.6g, "
          "\"rmse\": %.6g, \"cv\": %.6g, \"decode_ns_per_point\": %.3f, "
          "\"range_sum_ns\": %.1f, \"check_ns_per_byte\": %.3f, "
          "\"open_ns_per_point\": %.3f, \"quantized\": %llu}",
          first ? "" : ",", m->name, spec, ns, bits, 64 / bits, r.len,
          r.segments, r.exceptions, r.error.max_abs, r.error.rmse, r.error.cv,
          dns, sns, kns, ons, (unsigned long long)r.quantized);
  la_trace_close(t);
  la_compact_result_free(&r);
  free(y);
  return 0;
}

/* Floors: a plain sum over the array, one accumulator in index order (one
 * dependent add per point: the latency floor of any exact in-order sum), and
 * eight accumulators (reads at the memory bandwidth: the floor of one pass
 * over the 8 MB). noinline and volatile keep the compiler honest. */
static volatile double sink;

__attribute__((noinline)) static double sum_serial(const double *x, size_t n) {
  double s = 0;
  size_t i;

  for (i = 0; i < n; i++) s += x[i];
  return s;
}

__attribute__((noinline)) static double sum_wide(const double *x, size_t n) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0, k;

  for (; n - i >= 8; i += 8)
    for (k = 0; k < 8; k++) s[k] += x[i + k];
  for (; i < n; i++) s[0] += x[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static int on_path(const char *name);

/* Bytes of `zstd -19` of the raw doubles x[0..n) (the state of the art a
 * compact trace is compared with), or 0 when zstd is not on PATH or fails. */
static size_t zstd19_bytes(const double *x, size_t n) {
  if (!on_path("zstd")) return 0;
  char path[] = "/tmp/la-bench-zstd-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 0;
  FILE *f = fdopen(fd, "wb");
  size_t ok = f ? fwrite(x, sizeof *x, n, f) : 0;
  if (f) fclose(f);
  size_t bytes = 0;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "zstd -19 -q -c %s | wc -c", path);
  FILE *p = ok == n ? popen(cmd, "r") : NULL;
  if (p) {
    unsigned long long b = 0;
    if (fscanf(p, "%llu", &b) == 1) bytes = (size_t)b;
    if (pclose(p) != 0) bytes = 0;
  }
  unlink(path);
  return bytes;
}

static int bench_series(FILE *js, const char *name, const char *desc,
                        const double *x, size_t n, double quantum, int first) {
  double ts[REPS], tf1[REPS], tf8[REPS];
  la_series_stats_t st;
  size_t m;
  int i;

  for (i = 0; i < REPS; i++) {
    double t0 = cpu_ns();
    la_series_stats(x, n, &st);
    ts[i] = (cpu_ns() - t0) / (double)n;
    t0 = cpu_ns();
    sink = sum_serial(x, n);
    tf1[i] = (cpu_ns() - t0) / (double)n;
    t0 = cpu_ns();
    sink = sum_wide(x, n);
    tf8[i] = (cpu_ns() - t0) / (double)n;
  }
  double f1 = median(tf1, REPS), f8 = median(tf8, REPS);
  printf("%-18s %-22s %7.2f   (floor: plain sum, 1 accumulator)\n", name,
         "floor_sum_serial", f1);
  printf("%-18s %-22s %7.2f   (floor: plain sum, 8 accumulators = memory)\n",
         name, "floor_sum_memory", f8);
  fprintf(js,
          "%s\n    \"%s\": {\"description\": \"%s\", \"count\": %zu, "
          "\"mean\": %.6g, \"stats_ns_per_point\": %.3f, "
          "\"floor_sum_serial_ns_per_point\": %.3f, "
          "\"floor_sum_memory_ns_per_point\": %.3f,\n     \"modes\": {"
          "\n      \"raw\": {\"ns_per_point\": 0, \"bits_per_value\": 64, "
          "\"ratio_to_raw\": 1, \"bytes\": %zu, \"segments\": 0, "
          "\"max_abs_error\": 0, \"cv\": 0}",
          first ? "" : ",", name, desc, n, st.sum / (double)n, median(ts, REPS),
          f1, f8, 8 * n);
  printf("%-18s %-22s %7s %8s %8s %9.4f %9.1f %8s %7s %11s %8s %8s\n", name,
         "raw", "-", "-", "-", 64.0, 1.0, "-", "-", "0", "0", "-");
  size_t zb = zstd19_bytes(x, n);
  if (zb) {
    double zbits = 8.0 * (double)zb / (double)n;
    printf("%-18s %-22s %7s %8s %8s %9.4f %9.1f %8s %7s %11s %8s %8s\n",
           name, "zstd -19 (raw doubles)", "-", "-", "-", zbits, 64 / zbits,
           "-", "-", "0", "0", "-");
    fprintf(js,
            ",\n      \"zstd19\": {\"bits_per_value\": %.5f, \"bytes\": %zu, "
            "\"ratio_to_raw\": %.2f}",
            zbits, zb, 64 / zbits);
  }
  for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
    if (bench_mode(js, name, x, n, quantum, &modes[m], 0) != 0) return -1;
  fprintf(js, "}}");
  return 0;
}

/* ------------------------------------------ (b) series from the examples */

#define EXAMPLE_TIMEOUT_S 60

/* 1 if an executable named name is on PATH. */
static int on_path(const char *name) {
  const char *path = getenv("PATH");
  char buf[PATH_MAX];

  while (path && *path) {
    size_t len = strcspn(path, ":");
    if (len > 0 && len + strlen(name) + 2 < sizeof(buf)) {
      snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, path, name);
      if (access(buf, X_OK) == 0) return 1;
    }
    path += len;
    if (*path == ':') path++;
  }
  return 0;
}

/* Runs `mpiexec -n np prog args...` with LA_AGENT=agent and LA_DUMP_RAW=dir
 * (stdout to /dev/null), in its own process group, killed after
 * EXAMPLE_TIMEOUT_S. Returns the exit status, or -1. */
static int run_example(const char *prog, const char *np,
                       const char *const *args, const char *agent,
                       const char *dir) {
  char *argv[16];
  int n = 0, st = 0;
  pid_t pid, w;
  double deadline;
  struct timespec start, now, nap = {0, 5000000};

  argv[n++] = "mpiexec";
  argv[n++] = "-n";
  argv[n++] = (char *)np;
  argv[n++] = (char *)prog;
  for (; *args && n < 15; args++) argv[n++] = (char *)*args;
  argv[n] = NULL;
  fflush(stdout);
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    setpgid(0, 0);
    if (fd >= 0) dup2(fd, 1);
    setenv("LA_AGENT", agent, 1);
    setenv("LA_DUMP_RAW", dir, 1);
    unsetenv("LA_DISABLE");
    unsetenv("LA_PERIOD");
    execvp("mpiexec", argv);
    _exit(127);
  }
  setpgid(pid, pid);
  clock_gettime(CLOCK_MONOTONIC, &start);
  deadline = (double)start.tv_sec + EXAMPLE_TIMEOUT_S;
  while ((w = waitpid(pid, &st, WNOHANG)) == 0) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)now.tv_sec > deadline) {
      fprintf(stderr, "bench_compact: %s: timed out, killed\n", prog);
      kill(-pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    nanosleep(&nap, NULL);
  }
  if (w < 0) return -1;
  kill(-pid, SIGKILL); /* ranks that outlived mpiexec, if any */
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Reads the file of dir named "<prefix>.*.r0.c<cycle>.f64" with the largest
 * cycle (the last profiled one) into *x (malloc'ed); returns its point count
 * or 0. *scale is the scale its .fid file names (0 if none). */
static size_t read_last_cycle(const char *dir, const char *prefix, double **x,
                              double *scale) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char best[PATH_MAX] = "";
  long long best_c = -1;
  size_t n = 0, plen = strlen(prefix);
  FILE *f;
  struct stat sb;

  *x = NULL;
  *scale = 0;
  if (d == NULL) return 0;
  while ((e = readdir(d)) != NULL) {
    const char *c = strstr(e->d_name, ".r0.c");
    long long cy;
    char *end;
    if (strncmp(e->d_name, prefix, plen) != 0 || e->d_name[plen] != '.' ||
        c == NULL)
      continue;
    cy = strtoll(c + 5, &end, 10);
    if (strcmp(end, ".f64") == 0 && cy > best_c) {
      best_c = cy;
      snprintf(best, sizeof(best), "%s/%s", dir, e->d_name);
    }
  }
  if (best_c >= 0 && stat(best, &sb) == 0 && sb.st_size >= 8 &&
      (f = fopen(best, "rb")) != NULL) {
    n = (size_t)sb.st_size / 8;
    *x = malloc(n * sizeof(double));
    if (*x == NULL || fread(*x, sizeof(double), n, f) != n) {
      free(*x);
      *x = NULL;
      n = 0;
    }
    fclose(f);
    snprintf(best + strlen(best) - 4, 5, ".fid");
    if ((f = fopen(best, "r")) != NULL) {
      char line[200], *sc;
      if (fgets(line, sizeof(line), f) && (sc = strstr(line, "scale=")))
        *scale = strtod(sc + 6, NULL);
      fclose(f);
    }
  }
  closedir(d);
  return n;
}

/* Removes the files of dir (the dumps). */
static void clean_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[PATH_MAX];

  if (d == NULL) return;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      unlink(path);
    }
  closedir(d);
}

typedef struct {
  const char *series, *prog, *np, *desc;
  const char *args[6];
} example_t;

static const example_t examples[] = {
    {"heavy_measured",
     "heavy",
     "1",
     "measured from examples/heavy (mpiexec -n 1, --n 16 --steps 3): libla's "
     "per-cell ns of the last profiled cycle (LA_DUMP_RAW)",
     {"--n", "16", "--steps", "3", NULL}},
    {"wavetoy_measured",
     "wavetoy",
     "1",
     "measured from examples/wavetoy (mpiexec -n 1, --n 48 --steps 3): "
     "libla's per-cell ns of the last profiled cycle (LA_DUMP_RAW)",
     {"--n", "48", "--steps", "3", NULL}},
    {"wavetoy_interfered",
     "wavetoy",
     "4",
     "measured from examples/wavetoy under interference (mpiexec -n 4 on "
     "this machine's cores, --n 64 --steps 3): rank 0's per-cell ns of the "
     "last profiled cycle (LA_DUMP_RAW)",
     {"--n", "64", "--steps", "3", NULL}},
    {"heavy_interfered",
     "heavy",
     "4",
     "measured from examples/heavy under interference (mpiexec -n 4, --n 24 "
     "--steps 3): rank 0's per-cell ns of the last profiled cycle",
     {"--n", "24", "--steps", "3", NULL}},
};
#define NEXAMPLES (sizeof(examples) / sizeof(examples[0]))

/* Runs the examples against the real daemons and loads the last
 * cycle of each into xs[k] (NULL and ns[k] = 0 when skipped), with the
 * scale of its values in qs[k]. */
static void measure_examples(double **xs, size_t *ns, double *qs) {
  char exe[PATH_MAX], dir[PATH_MAX], tmp[] = "/tmp/la_bench_compact.XXXXXX";
  char prog[PATH_MAX + 32];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  la_test_stack_t daemons;
  size_t k;

  for (k = 0; k < NEXAMPLES; k++) {
    xs[k] = NULL;
    ns[k] = 0;
  }
  if (len <= 0) {
    printf(
        "note: /proc/self/exe unreadable: skipping the series measured "
        "from the examples\n");
    return;
  }
  exe[len] = '\0';
  snprintf(dir, sizeof(dir), "%s", exe);
  *strrchr(dir, '/') = '\0'; /* readlink gives an absolute path */
  if (!on_path("mpiexec")) {
    printf(
        "note: mpiexec not found on PATH: skipping the series measured "
        "from the examples\n");
    return;
  }
  if (mkdtemp(tmp) == NULL) {
    printf(
        "note: no temporary directory: skipping the series measured from "
        "the examples\n");
    return;
  }
  if (la_ts_init(&daemons) != 0 || la_ts_start_global(&daemons, NULL) != 0 ||
      la_ts_start_local(&daemons, NULL) != 0) {
    printf(
        "note: the LocalAgent and GlobalAgent did not start: skipping the "
        "series measured from the examples\n");
    la_ts_free(&daemons);
    rmdir(tmp);
    return;
  }
  for (k = 0; k < NEXAMPLES; k++) {
    const example_t *ex = &examples[k];
    int st;
    snprintf(prog, sizeof(prog), "%s/../examples/%s", dir, ex->prog);
    if (access(prog, X_OK) != 0) {
      printf("note: %s not built (make examples): skipping %s\n", prog,
             ex->series);
      continue;
    }
    st = run_example(prog, ex->np, ex->args, la_td_addr(daemons.la), tmp);
    ns[k] = read_last_cycle(tmp, ex->prog, &xs[k], &qs[k]);
    clean_dir(tmp);
    if (st != 0 || ns[k] == 0) {
      printf("note: %s exited with %d and left %zu values: skipping %s\n",
             ex->prog, st, ns[k], ex->series);
      free(xs[k]);
      xs[k] = NULL;
      ns[k] = 0;
    }
  }
  la_ts_free(&daemons);
  clean_dir(tmp);
  if (rmdir(tmp) != 0) perror(tmp);
}

int main(int argc, char **argv) {
  const char *path =
      la_bench_out_path(argc, argv, 1, "build/bench/compact.json");
  size_t ns = (size_t)G * G * G;
  double *x = malloc(N_SYNTH * sizeof(double)), *c = malloc(ns * 8);
  double *xm[NEXAMPLES], qm[NEXAMPLES];
  size_t nm[NEXAMPLES], k;
  char desc[200];
  FILE *js;
  int rc = 0;

  if (x == NULL || c == NULL || (js = fopen(path, "w")) == NULL) {
    perror(path);
    return 1;
  }
  la_compact_synth(LA_SYNTH_MESH, N_SYNTH, 42, x);
  measure_examples(xm, nm, qm);
  stencil_costs(c);
  printf("compaction engine: CPU ns per point, median of %d runs\n", REPS);
  printf(
      "  chk ns/B: la_trace_check_max (what the GlobalAgent and clients "
      "check of each trace received), CPU ns per encoded byte\n"
      "  open ns: la_trace_open (the parse and index a subscriber makes of "
      "each trace), CPU ns per point; dec ns: la_trace_decode after it\n");
  printf("%-18s %-22s %7s %8s %8s %9s %9s %8s %7s %11s %8s %8s\n", "series",
         "mode", "ns/pt", "open ns", "dec ns", "bits/val", "ratio",
         "segments", "except", "max|err|", "CV", "chk ns/B");
  fprintf(js,
          "{\n  \"benchmark\": \"compact\",\n  \"timer\": "
          "\"CLOCK_THREAD_CPUTIME_ID\",\n  \"reps\": %d,\n  \"series\": {",
          REPS);
  rc |= bench_series(js, "synthetic_mesh",
                     "la_compact_synth mesh, seed 42: plateaus 2000-22000, "
                     "5% periodic, 2% noise, 0.1% spikes, whole ns",
                     x, N_SYNTH, 1.0, 1);
  snprintf(desc, sizeof(desc),
           "measured here: 7-point stencil on 64^3 cells, per-cell %s, "
           "spherical costlier region (stands in for the examples)",
           TICK_UNIT);
  for (k = 0; k < NEXAMPLES; k++)
    if (xm[k] != NULL)
      rc |= bench_series(js, examples[k].series, examples[k].desc, xm[k], nm[k],
                         qm[k], 0);
  rc |= bench_series(js, "stencil_measured", desc, c, ns, 1.0, 0);
  fprintf(js,
          "\n  },\n  \"aims\": {\"polyline_ns_per_point\": 3, "
          "\"maxerr_ns_per_point\": 10, \"polyline_ratio_to_raw\": 100, "
          "\"measured_polyline_quantum_ns_per_point\": 6}"
          "\n}\n");
  fclose(js);
  printf(
      "aims: polyline <= 3 ns/pt, maxerr <= 10 ns/pt, polyline >= 100x "
      "smaller than raw on synthetic_mesh; on measured series the "
      "LocalAgent's mode (polyline_quantum) <= 6 ns/pt\nwrote %s\n",
      path);
  for (k = 0; k < NEXAMPLES; k++) free(xm[k]);
  free(x);
  free(c);
  return rc ? 1 : 0;
}
