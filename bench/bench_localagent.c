/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_localagent.c: measures the real la-localagent daemon.
 *
 * Starts build/bin/la-localagent (found next to this program, see
 * tests/support/la_test_daemon.h) with la_test_global, acknowledging every
 * message, as its GlobalAgent, then one application process (fork, libla
 * for real) that registers 10^6 elements with the wall-time metric, period
 * 1, libla's default buffers (4), wait policy, and writes cycles back to
 * back. The LocalAgent runs with its defaults (agent.max_backlog auto: a
 * cycle it cannot take without making the application wait is recorded
 * missing, "behind"); LA_BENCH_BACKLOG=off (or a number) sets
 * agent.max_backlog instead, e.g. to measure the agent's capacity with
 * every cycle compacted, and LA_BENCH_BEHIND=drop (or coarse, the
 * default) agent.behind: the cycles it was behind on stored coarse
 * (counted, with the lane thread's time per cell for them) or missing.
 * Three application loops, each in a fresh daemon, each repeated 3 times
 * (LA_BENCH_LOOP=probe, ranges or boxes: that loop alone, the others
 * reported not run):
 *
 *   probe    every element probed per cycle (LA_startProbe/LA_stopProbe
 *            around a trivial kernel): the realistic light stencil, whose
 *            own cost (two timer reads per element) sets the pace; the §4
 *            aim "0 waits at 10^6 elements per rank per cycle" is about it.
 *            Its numbers are the JSON's top-level fields.
 *   ranges   the same 10^6 values filled through 1000 element ranges
 *            (LA_startRange/LA_stopRange of 1000 elements around a short
 *            variable-length kernel: plateaus with steps): about 1 ms of
 *            application work per cycle, so cycles come as fast as the
 *            agent takes them; this measures the agent's capacity. Under
 *            "saturate" in the JSON.
 *   boxes    the same work as ranges on a grid of 100 x 100 x 100 cells
 *            (LA_registerGrid), timed by 1000 boxes of 50 x 20 x 1 cells
 *            (LA_startBox/LA_stopBox): boxes that are not rows, each one
 *            record of the piece table in shared memory (layout 6) that
 *            the agent spreads. Under "boxes" in the JSON.
 *
 * Per run: cycles per second stored through the agent (from the
 * application's first LA_dataXfer to the last trace or missing record
 * received by the GlobalAgent stand-in), the cycles recorded missing
 * because the agent was behind, the daemon's CPU time per cycle (/proc/PID/stat utime+stime,
 * clock ticks, over the same span plus the registration), how many times
 * the application waited for a buffer (LA_STAT_WAITS) and skipped cycles,
 * the daemon's compaction_ns_per_point from `lactl status`, the agent's CPU
 * per cell (its CPU per cycle over the 10^6 cells), the CPU time of its loop
 * thread (which takes the notifications: late, it makes the application
 * wait) and of its lane thread (the cycles it is behind on: lane.h), each
 * over the run, and the bits per value of
 * every encoding the traces carried (measured, robust, channels: what goes
 * on the wire and into the store). Medians of
 * the repetitions go to argv[1] (build/bench/localagent.json) and a table
 * to stdout. A run in which the daemon closed the application's connection
 * (it then runs unprofiled) is reported as incomplete, with the log line.
 */
#include "bench_args.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_auth.h"
#include "la_test_daemon.h"
#include "la_test_global.h"

#define N_ELEMENTS 1000000L
#define CYCLES 100
#define REPEATS 3
#define RANGE 1000L
#define WAIT_MS 30000

enum { MODE_PROBE = 0, MODE_RANGES = 1, MODE_BOXES = 2, N_MODES = 3 };
static const char *mode_name[] = {"probe", "ranges", "boxes"};

typedef struct {
  int rc;       /* LA_register */
  int lost;     /* a LA_dataXfer failed: profiling stopped */
  long lost_at; /* cycle of the first failure */
  long profiled, waits, skipped;
  double wait_ms;   /* LA_STAT_WAIT_NS */
  uint64_t t_first; /* CLOCK_MONOTONIC ns at the first LA_dataXfer */
  uint64_t t_last;  /* ... after the last one */
  char err[200];
} app_report_t;

typedef struct {
  int ok; /* every cycle arrived */
  double cycles_per_s, cpu_ms_per_cycle, ns_per_point, app_ms_per_cycle;
  double bits_per_value; /* every encoding of the traces, per element */
  long waits, skipped, traces, behind;
  double wait_ms; /* the application's time waiting for a buffer */
  long coarse;           /* of traces: coarse cycles (agent.behind) */
  double coarse_ns_cell; /* their time per cell (status coarse_seconds) */
  double loop_ms;        /* the loop thread's CPU over the run */
  double lane_ms;        /* the lane thread's ("la-lane"), 0 without one */
  char why[400];
} run_t;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile double sink;

/* CPU seconds of the thread of pid named comm (the first), 0 without
 * one. */
static double thread_cpu_named(pid_t pid, const char *comm) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
  DIR *d = opendir(dir);
  double cpu = 0;
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    char path[400], name[64] = "";
    snprintf(path, sizeof path, "%s/%s/comm", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    int got = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    name[strcspn(name, "\n")] = '\0';
    if (!got || strcmp(name, comm)) continue;
    snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
    unsigned long ut = 0, st = 0;
    f = fopen(path, "r");
    char line[1024];
    if (f && fgets(line, sizeof line, f)) {
      const char *q = strrchr(line, ')');
      if (q && sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                      &ut, &st) == 2)
        cpu = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    }
    if (f) fclose(f);
    break;
  }
  if (d) closedir(d);
  return cpu;
}

/* The application: never returns. */
static void app_main(const char *agent, int mode, int res, int go) {
  app_report_t r;
  memset(&r, 0, sizeof r);
  LA_setAgent(agent);
  static const char *const app[] = {"bench-probe", "bench-ranges",
                                    "bench-boxes"};
  LA_setAppId(app[mode]);
  LA_setMetric("time");
  LA_setPeriod(1);
  LA_setPolicy(LA_POLICY_WAIT);
  r.rc = mode == MODE_BOXES ? LA_registerGrid("bench", 0, 1, 100, 100, 100)
                            : LA_register("bench", 0, 1, N_ELEMENTS);
  snprintf(r.err, sizeof r.err, "%s", LA_lastError());
  if (write(res, &r, sizeof r) != (ssize_t)sizeof r || r.rc != 0) _exit(1);
  char c;
  if (read(go, &c, 1) != 1) _exit(2);
  r.lost_at = -1;
  double acc = 0;
  for (long cy = 0; cy < CYCLES; cy++) {
    if (mode == MODE_PROBE) {
      for (long e = 0; e < N_ELEMENTS; e++) {
        LA_startProbe(e);
        acc += (double)(e & 7);
        LA_stopProbe(e);
      }
    } else {
      for (long b = 0; b < N_ELEMENTS / RANGE; b++) {
        /* box b: 50 x 20 cells, ten to a 100 x 100 plane */
        long i0 = (b % 2) * 50, j0 = (b / 2 % 5) * 20, k0 = b / 10;
        if (mode == MODE_RANGES)
          LA_startRange(b * RANGE, RANGE);
        else
          LA_startBox(i0, j0, k0, 50, 20, 1);
        long k = 20 + (b % 13) * 8 + ((b / 50) % 4) * 30;
        for (long i = 0; i < k; i++) acc += (double)(i ^ b);
        if (mode == MODE_RANGES)
          LA_stopRange(b * RANGE, RANGE);
        else
          LA_stopBox(i0, j0, k0, 50, 20, 1);
      }
    }
    if (cy == 0) r.t_first = mono_ns();
    int rc = LA_dataXfer();
    if ((rc != 0 || !LA_getStat(LA_STAT_REGISTERED)) && !r.lost) {
      r.lost = 1;
      r.lost_at = cy;
      snprintf(r.err, sizeof r.err, "%s", LA_lastError());
    }
  }
  r.t_last = mono_ns();
  sink = acc;
  r.profiled = LA_getStat(LA_STAT_PROFILED);
  r.waits = LA_getStat(LA_STAT_WAITS);
  r.skipped = LA_getStat(LA_STAT_SKIPPED);
  r.wait_ms = (double)LA_getStat(LA_STAT_WAIT_NS) / 1e6;
  LA_finalize();
  ssize_t w = write(res, &r, sizeof r);
  (void)w;
  _exit(0);
}

static int read_report(int fd, app_report_t *r, int timeout_ms) {
  struct pollfd pf = {fd, POLLIN, 0};
  if (poll(&pf, 1, timeout_ms) <= 0) return -1;
  return read(fd, r, sizeof *r) == (ssize_t)sizeof *r ? 0 : -1;
}

static void run_once(int mode, const char *key, run_t *out) {
  memset(out, 0, sizeof *out);
  la_test_daemon_t *d = la_td_new("la-localagent");
  la_test_global_t *g = NULL;
  pid_t kid = -1;
  int res[2] = {-1, -1}, go[2] = {-1, -1};
  if (!d) {
    snprintf(out->why, sizeof out->why, "la-localagent not built");
    return;
  }
  g = la_test_global_start(0, key);
  if (!g) {
    snprintf(out->why, sizeof out->why, "la_test_global_start failed");
    goto done;
  }
  la_test_global_set_ack(g, 1);
  char port_file[600], spool[600], a0[700], a1[700], a2[700], a3[700];
  la_td_path(d, "port", port_file, sizeof port_file);
  la_td_path(d, "spool", spool, sizeof spool);
  snprintf(a0, sizeof a0, "--agent.port_file=%s", port_file);
  snprintf(a1, sizeof a1, "--global.spool_dir=%s", spool);
  snprintf(a2, sizeof a2, "--global.address=%s", la_test_global_addr(g));
  snprintf(a3, sizeof a3, "--global.secret_file=%s", key);
  char a4[64] = "--log.level=info", a5[64] = "--log.level=info";
  const char *backlog = getenv("LA_BENCH_BACKLOG");
  if (backlog && *backlog)
    snprintf(a4, sizeof a4, "--agent.max_backlog=%s", backlog);
  const char *behind = getenv("LA_BENCH_BEHIND");
  if (behind && *behind)
    snprintf(a5, sizeof a5, "--agent.behind=%s", behind);
  const char *args[] = {"--agent.listen=127.0.0.1:0", a0, a1, a2, a3, a4, a5,
                        "--log.level=info",           NULL};
  if (la_td_start(d, args, port_file, 10000) <= 0) {
    snprintf(out->why, sizeof out->why, "la-localagent did not start");
    goto done;
  }
  if (pipe2(res, O_CLOEXEC) || pipe2(go, O_CLOEXEC)) goto done;
  char agent[64];
  snprintf(agent, sizeof agent, "%s", la_td_addr(d));
  fflush(NULL);
  kid = fork();
  if (kid == 0) {
    for (int fd = 3; fd < 1024; fd++)
      if (fd != res[1] && fd != go[0]) close(fd);
    app_main(agent, mode, res[1], go[0]);
  }
  close(res[1]);
  close(go[0]);
  res[1] = go[0] = -1;
  app_report_t r;
  if (read_report(res[0], &r, 10000) != 0 || r.rc != 0) {
    snprintf(out->why, sizeof out->why, "LA_register: %s", r.err);
    goto done;
  }
  double cpu0 = la_td_cpu_seconds(la_td_pid(d));
  double loop0 = la_td_main_thread_cpu_seconds(la_td_pid(d));
  double lane0 = thread_cpu_named(la_td_pid(d), "la-lane");
  if (write(go[1], "g", 1) != 1) goto done;
  if (read_report(res[0], &r, WAIT_MS) != 0) {
    snprintf(out->why, sizeof out->why, "the application did not finish");
    goto done;
  }
  /* every cycle at the GlobalAgent, as a trace or recorded missing; when
   * profiling stopped, whatever the daemon still sends before its RankEnd */
  int arrived = 0;
  if (r.lost) {
    arrived = la_test_global_wait(g, LA_TG_RANK_ENDS, 1, 5000) == 0;
  } else {
    for (uint64_t end = mono_ns() + (uint64_t)WAIT_MS * 1000000u;
         !arrived && mono_ns() < end;) {
      arrived = la_test_global_ntraces(g) +
                    la_test_global_count(g, LA_TG_MISSING) >=
                CYCLES;
      if (!arrived) usleep(2000);
    }
  }
  uint64_t t_end = mono_ns();
  out->behind = (long)la_test_global_count(g, LA_TG_MISSING);
  double cpu1 = la_td_cpu_seconds(la_td_pid(d));
  out->loop_ms = (la_td_main_thread_cpu_seconds(la_td_pid(d)) - loop0) * 1e3;
  out->lane_ms = (thread_cpu_named(la_td_pid(d), "la-lane") - lane0) * 1e3;
  out->traces = (long)la_test_global_ntraces(g);
  uint64_t wire = 0;
  for (long i = 0; i < out->traces; i++)
    wire += la_test_global_trace(g, (size_t)i)->wire_bytes;
  out->bits_per_value =
      out->traces > 0 ? 8.0 * (double)wire / ((double)N_ELEMENTS * out->traces)
                      : 0;
  char v[256] = "";
  if (la_td_status(d, "compaction_ns_per_point", v, sizeof v) == 0)
    out->ns_per_point = atof(v);
  out->coarse = (long)la_td_status_ll(d, "cycles_coarse");
  if (out->coarse > 0 && la_td_status(d, "coarse_seconds", v, sizeof v) == 0)
    out->coarse_ns_cell = atof(v) * 1e9 / ((double)out->coarse * N_ELEMENTS);
  out->cycles_per_s = (double)out->traces / ((double)(t_end - r.t_first) / 1e9);
  out->cpu_ms_per_cycle =
      out->traces > 0 ? (cpu1 - cpu0) * 1e3 / (double)out->traces : 0;
  out->app_ms_per_cycle =
      (double)(r.t_last - r.t_first) / 1e6 / (double)(CYCLES - 1);
  out->waits = r.waits;
  out->wait_ms = r.wait_ms;
  out->skipped = r.skipped;
  out->ok = !r.lost && arrived && r.profiled == CYCLES &&
            out->traces + out->behind == CYCLES;
  if (!out->ok) {
    char line[300] = "";
    la_td_log_line(d, "closing", line, sizeof line);
    snprintf(out->why, sizeof out->why,
             "%ld of %d cycles profiled, %ld "
             "traces and %ld missing arrived, profiling stopped at cycle %ld "
             "(%s); daemon: %s",
             r.profiled, CYCLES, out->traces, out->behind, r.lost_at, r.err,
             line[0] ? line : "-");
  }
done:
  if (go[1] >= 0) close(go[1]);
  if (res[0] >= 0) close(res[0]);
  if (kid > 0) {
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
  }
  la_td_free(d);
  la_test_global_stop(g);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct {
  int complete; /* every repetition complete */
  double cps, cpu, waits, skipped, nspp, app_ms, bits, behind;
  double coarse, coarse_ns; /* coarse cycles, their ns per cell */
  double loop_ms, lane_ms;  /* loop and lane threads' CPU per run */
  char why[400];
} summary_t;

static void summarize(const run_t *runs, int n, summary_t *s) {
  double a[REPEATS], b[REPEATS], c[REPEATS], d[REPEATS], e[REPEATS], f[REPEATS],
      g[REPEATS], h[REPEATS], x[REPEATS], y[REPEATS], lo[REPEATS],
      la[REPEATS];
  int k = 0;
  memset(s, 0, sizeof *s);
  s->complete = 1;
  for (int i = 0; i < n; i++) {
    if (!runs[i].ok) {
      s->complete = 0;
      if (!s->why[0]) snprintf(s->why, sizeof s->why, "%s", runs[i].why);
      continue;
    }
    a[k] = runs[i].cycles_per_s;
    b[k] = runs[i].cpu_ms_per_cycle;
    c[k] = (double)runs[i].waits;
    d[k] = (double)runs[i].skipped;
    e[k] = runs[i].ns_per_point;
    f[k] = runs[i].app_ms_per_cycle;
    g[k] = runs[i].bits_per_value;
    h[k] = (double)runs[i].behind;
    x[k] = (double)runs[i].coarse;
    y[k] = runs[i].coarse_ns_cell;
    lo[k] = runs[i].loop_ms;
    la[k] = runs[i].lane_ms;
    k++;
  }
  if (k == 0) return;
  s->cps = median(a, k);
  s->cpu = median(b, k);
  s->waits = median(c, k);
  s->skipped = median(d, k);
  s->nspp = median(e, k);
  s->app_ms = median(f, k);
  s->bits = median(g, k);
  s->behind = median(h, k);
  s->coarse = median(x, k);
  s->coarse_ns = median(y, k);
  s->loop_ms = median(lo, k);
  s->lane_ms = median(la, k);
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20)
      fprintf(f, "\\u%04x", *s);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

static void json_fields(FILE *f, const summary_t *s, int ok_runs) {
  fprintf(f, "\"complete\": %s, \"complete_runs\": %d, ",
          s->complete ? "true" : "false", ok_runs);
  if (ok_runs > 0)
    fprintf(f,
            "\"cycles_per_s\": %.2f, \"agent_cpu_ms_per_cycle\": %.3f, "
            "\"app_waits\": %.0f, \"skipped\": %.0f, \"ns_per_point\": %.3f, "
            "\"app_ms_per_cycle\": %.3f, \"agent_cpu_ns_per_cell\": %.2f, "
            "\"bits_per_value\": %.3f, \"behind\": %.0f, \"coarse\": %.0f, "
            "\"coarse_ns_per_cell\": %.3f, \"loop_cpu_ms\": %.0f, "
            "\"lane_cpu_ms\": %.0f",
            s->cps, s->cpu, s->waits, s->skipped, s->nspp, s->app_ms,
            s->cpu * 1e6 / (double)N_ELEMENTS, s->bits, s->behind, s->coarse,
            s->coarse_ns, s->loop_ms, s->lane_ms);
  else
    fprintf(f,
            "\"cycles_per_s\": null, \"agent_cpu_ms_per_cycle\": null, "
            "\"app_waits\": null");
  if (s->why[0]) {
    fprintf(f, ", \"failure\": ");
    json_str(f, s->why);
  }
}

int main(int argc, char **argv) {
  const char *json =
      la_bench_out_path(argc, argv, 1, "build/bench/localagent.json");
  signal(SIGPIPE, SIG_IGN);
  if (la_auth_init() != 0) return 1;
  char dir[] = "/tmp/la-bench-XXXXXX", key[64], why[200];
  if (!mkdtemp(dir)) return 1;
  snprintf(key, sizeof key, "%s/secret", dir);
  if (la_auth_generate_secret_file(key, why, sizeof why) != 0) {
    fprintf(stderr, "bench_localagent: %s\n", why);
    rmdir(dir);
    return 1;
  }
  char bin[1024];
  if (la_td_find_bin("la-localagent", bin, sizeof bin) != 0) {
    fprintf(stderr, "bench_localagent: la-localagent not built\n");
    unlink(key);
    rmdir(dir);
    return 1;
  }
  run_t runs[N_MODES][REPEATS];
  summary_t sum[N_MODES];
  int ok_runs[N_MODES] = {0, 0, 0};
  uint64_t t0 = mono_ns();
  const char *only = getenv("LA_BENCH_LOOP");
  for (int m = 0; m < N_MODES; m++) {
    for (int i = 0; i < REPEATS; i++) {
      if (only && *only && strcmp(only, mode_name[m]) != 0) {
        memset(&runs[m][i], 0, sizeof runs[m][i]);
        snprintf(runs[m][i].why, sizeof runs[m][i].why,
                 "not run (LA_BENCH_LOOP=%s)", only);
        continue;
      }
      run_once(m, key, &runs[m][i]);
      ok_runs[m] += runs[m][i].ok;
      printf(
          "  %-7s run %d: %s %7.2f cycles/s, agent %6.2f ms CPU/cycle, "
          "app %6.2f ms/cycle, %ld waits (%.1f ms), %ld skipped, %ld behind, "
          "%ld coarse (%.2f ns/cell), loop %.0f ms CPU, lane %.0f ms CPU, "
          "%.2f ns/point, %.2f bits/value%s%s\n",
          mode_name[m], i + 1, runs[m][i].ok ? "  " : "!!",
          runs[m][i].cycles_per_s, runs[m][i].cpu_ms_per_cycle,
          runs[m][i].app_ms_per_cycle, runs[m][i].waits, runs[m][i].wait_ms,
          runs[m][i].skipped,
          runs[m][i].behind, runs[m][i].coarse, runs[m][i].coarse_ns_cell,
          runs[m][i].loop_ms, runs[m][i].lane_ms, runs[m][i].ns_per_point, runs[m][i].bits_per_value,
          runs[m][i].ok ? "" : "\n          incomplete: ",
          runs[m][i].ok ? "" : runs[m][i].why);
      fflush(stdout);
    }
    summarize(runs[m], REPEATS, &sum[m]);
  }
  unlink(key);
  rmdir(dir);

  printf(
      "\nla-localagent, 1 application x 10^6 elements, wall-time metric, "
      "period 1, 4 buffers, wait policy, agent.max_backlog %s, %d cycles, "
      "medians of %d runs (%.1f s)\n",
      getenv("LA_BENCH_BACKLOG") && *getenv("LA_BENCH_BACKLOG")
          ? getenv("LA_BENCH_BACKLOG")
          : "auto",
      CYCLES, REPEATS, (double)(mono_ns() - t0) / 1e9);
  printf("  %-34s %12s %12s %12s\n", "", "probe", "ranges", "boxes");
  printf("  %-34s %12s %12s %12s\n", "(application loop)", "every elem.",
         "1000 ranges", "1000 boxes");
  const char *labels[] = {"cycles/s stored through the agent",
                          "agent CPU ms per stored cycle",
                          "application waits",
                          "skipped cycles",
                          "compaction ns/point",
                          "application ms per cycle",
                          "agent CPU ns per cell",
                          "bits per value (all encodings)",
                          "cycles missing: agent behind",
                          "of stored: coarse (agent.behind)",
                          "coarse: lane ns per cell",
                          "loop thread CPU ms (100 cycles)",
                          "lane thread CPU ms (100 cycles)"};
  for (int l = 0; l < 13; l++) {
    printf("  %-34s", labels[l]);
    for (int m = 0; m < N_MODES; m++) {
      double v[] = {sum[m].cps,
                    sum[m].cpu,
                    sum[m].waits,
                    sum[m].skipped,
                    sum[m].nspp,
                    sum[m].app_ms,
                    sum[m].cpu * 1e6 / (double)N_ELEMENTS,
                    sum[m].bits,
                    sum[m].behind,
                    sum[m].coarse,
                    sum[m].coarse_ns,
                    sum[m].loop_ms,
                    sum[m].lane_ms};
      if (ok_runs[m] == 0)
        printf(" %12s", "n/a");
      else
        printf(" %12.*f", l == 2 || l == 3 || (l >= 8 && l != 10) ? 0 : 2,
               v[l]);
    }
    printf("\n");
  }
  for (int m = 0; m < N_MODES; m++)
    if (!sum[m].complete)
      printf("  %s: %d of %d runs incomplete: %s\n", mode_name[m],
             REPEATS - ok_runs[m], REPEATS, sum[m].why);

  FILE *f = fopen(json, "w");
  if (!f) {
    fprintf(stderr, "bench_localagent: cannot write %s\n", json);
    return 1;
  }
  fprintf(f,
          "{\n  \"benchmark\": \"localagent\",\n  \"elements\": %ld, "
          "\"cycles\": %d, \"repeats\": %d, \"metric\": \"time\", "
          "\"period\": 1, \"buffers\": 4, \"policy\": \"wait\",\n",
          N_ELEMENTS, CYCLES, REPEATS);
  fprintf(f,
          "  \"mode\": \"probe: every element probed each cycle "
          "(LA_startProbe/LA_stopProbe around a trivial kernel)\",\n  ");
  json_fields(f, &sum[0], ok_runs[0]);
  fprintf(f,
          ",\n  \"saturate\": {\"mode\": \"ranges: values filled "
          "through 1000 LA_startRange/LA_stopRange ranges of 1000 elements, "
          "~1 ms of application work per cycle\", ");
  json_fields(f, &sum[1], ok_runs[1]);
  fprintf(f,
          "},\n  \"boxes\": {\"mode\": \"boxes: the ranges' work on a grid "
          "of 100x100x100 cells timed by 1000 LA_startBox/LA_stopBox boxes "
          "of 50x20x1 cells\", ");
  json_fields(f, &sum[2], ok_runs[2]);
  fprintf(f, "},\n  \"aims\": {\"app_waits\": 0}\n}\n");
  fclose(f);
  printf("wrote %s\n", json);
  return ok_runs[0] > 0 ? 0 : 1;
}
