/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_gather.c: the GlobalAgent's gather window (store.gather) on the
 * traffic of busy nodes, where a cycle's traces arrive one at a time.
 *
 * One simulated LocalAgent (tests/support/la_test_uplink.h: the real
 * handshake and encrypted records) sends, per cycle, the traces of the K
 * ranks of its node one at a time, GAP_US apart (a LocalAgent finishing
 * its ranks' cycles one after the other), waits for every Ack, and idles
 * PACE_MS (the unprofiled steps of a period-15 run). The real
 * la-globalagent (fsync on) runs with store.gather = 0 (off), 1 ms and
 * 2 ms, K = 2, 4 and 16, each configuration in a fresh daemon, REPEATS
 * runs interleaved. Reported per configuration (median run): the
 * GlobalAgent's CPU time per trace (all threads' on-CPU time,
 * /proc/PID/task/TID/schedstat), commits
 * per cycle (status row commits), and the time from the cycle's last
 * trace written to its Ack (p50 over the cycles: the set's last trace,
 * which publishing waits for), and from the first trace written to the
 * cycle's last Ack (p50). Writes argv[1] (build/bench/gather.json) and
 * prints a table. To run a part or another arrival pattern:
 * LA_BENCH_GATHER_KS (e.g. "2"), LA_BENCH_GATHER_WINDOWS (ms, e.g.
 * "2"), comma-separated, and LA_BENCH_GATHER_GAP_US (the gap between a
 * cycle's traces, default 250); LA_TEST_BIN_DIR runs another build's
 * la-globalagent.
 */
#include "bench_args.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "la_auth.h"
#include "la_compact.h"
#include "la_test_daemon.h"
#include "la_test_uplink.h"

#define N_ELEMENTS 8192 /* a row-probed rank of wavetoy 128^3 */
#define CYCLES 150
#define WARMUP 5
#define GAP_US 250 /* default */
#define PACE_MS 10
#define REPEATS 3
#define WAIT_MS 30000
#define N_WIN 3
#define N_K 3

static int windows_ms[N_WIN] = {0, 1, 2};
static int ks[N_K] = {2, 4, 16};
static int n_win = N_WIN, n_k = N_K;
static int gap_us = GAP_US;

/* A comma-separated list of at most max values from the environment
 * variable name into v (kept when unset or empty); their count. */
static int env_ints(const char *name, int *v, int n, int max) {
  const char *e = getenv(name);
  if (!e || !*e) return n;
  int k = 0;
  for (char *end; *e && k < max; e = *end ? end + 1 : end) {
    long x = strtol(e, &end, 10);
    if (end == e || x < 0) break;
    v[k++] = (int)x;
  }
  return k ? k : n;
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* The on-CPU time of every thread of pid so far, in seconds
 * (/proc/PID/task/TID/schedstat, nanoseconds: finer than stat's ticks). */
static double cpu_seconds(pid_t pid) {
  char path[300];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  double s = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/%d/task/%s/schedstat", (int)pid,
             e->d_name);
    FILE *f = fopen(path, "r");
    unsigned long long ns = 0;
    if (f && fscanf(f, "%llu", &ns) == 1) s += (double)ns / 1e9;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return s;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

typedef struct run {
  int ok;
  double cpu_us;          /* GlobalAgent CPU per trace */
  double commits_per_cycle;
  double last_ack_ms;     /* p50: last trace written -> its Ack */
  double cycle_ack_ms;    /* p50: first trace written -> last Ack */
  char why[300];
} run_t;

static la_compact_result_t series[16];

/* One configuration: window ms, k ranks per cycle. */
static void one_run(int window, int k, run_t *out) {
  la_tu_ga_t g;
  la_tu_conn_t c;
  la_auth_key_t key;
  char why[256], opt[64];
  const char *app = "bench-gather";
  memset(out, 0, sizeof *out);
  memset(&key, 0, sizeof key);
  la_tu_init(&c, 1);
  snprintf(opt, sizeof opt, "--store.gather=%dms", window);
  const char *extra[] = {opt, NULL};
  if (la_tu_ga_start(&g, 1, 1, extra, WAIT_MS) != 0) {
    snprintf(out->why, sizeof out->why, "la-globalagent did not start");
    goto done;
  }
  if (la_auth_load_key(g.key, &key, why, sizeof why) != 0 ||
      la_tu_open(&c, g.agents_port, &key, "node-0", 1 << 20, WAIT_MS) != 0) {
    snprintf(out->why, sizeof out->why, "connection refused");
    goto done;
  }
  for (int r = 0; r < k; r++)
    if (la_tu_send_rank_start(&c, app, (uint32_t)r, (uint32_t)k, N_ELEMENTS,
                              "node-0", WAIT_MS) != 0) {
      snprintf(out->why, sizeof out->why, "RankStart failed");
      goto done;
    }
  if (la_tu_wait_acked(&c, WAIT_MS) != 0) {
    snprintf(out->why, sizeof out->why, "RankStarts not acknowledged");
    goto done;
  }
  double last[CYCLES], whole[CYCLES], cpu0 = 0;
  long long commits0 = 0;
  for (int cy = 0; cy < WARMUP + CYCLES; cy++) {
    if (cy == WARMUP) {
      cpu0 = cpu_seconds(la_td_pid(g.d));
      commits0 = la_td_status_ll(g.d, "commits");
    }
    uint64_t t0 = mono_ns(), tl = t0;
    for (int r = 0; r < k; r++) {
      if (r) nap_us(gap_us);
      tl = mono_ns();
      if (la_tu_send_trace(&c, app, (uint32_t)r, (uint64_t)cy, N_ELEMENTS,
                           &series[(r + cy) % 16], WAIT_MS) != 0) {
        snprintf(out->why, sizeof out->why, "send failed");
        goto done;
      }
    }
    if (la_tu_wait_acked(&c, WAIT_MS) != 0) {
      snprintf(out->why, sizeof out->why, "cycle %d not acknowledged", cy);
      goto done;
    }
    uint64_t t1 = mono_ns();
    if (cy >= WARMUP) {
      last[cy - WARMUP] = (double)(t1 - tl) / 1e6;
      whole[cy - WARMUP] = (double)(t1 - t0) / 1e6;
    }
    nap_us(PACE_MS * 1000L);
  }
  /* the CPU first: the status query costs the daemon too */
  out->cpu_us = (cpu_seconds(la_td_pid(g.d)) - cpu0) * 1e6 /
                ((double)CYCLES * k);
  out->commits_per_cycle =
      (double)(la_td_status_ll(g.d, "commits") - commits0) / CYCLES;
  out->last_ack_ms = median(last, CYCLES);
  out->cycle_ack_ms = median(whole, CYCLES);
  out->ok = la_td_status_ll(g.d, "sets_complete") == WARMUP + CYCLES;
  if (!out->ok)
    snprintf(out->why, sizeof out->why, "sets_complete %lld, expected %d",
             la_td_status_ll(g.d, "sets_complete"), WARMUP + CYCLES);
done:
  la_tu_close(&c);
  la_auth_key_wipe(&key);
  la_td_free(g.d);
}

int main(int argc, char **argv) {
  const char *json =
      la_bench_out_path(argc, argv, 1, "build/bench/gather.json");
  signal(SIGPIPE, SIG_IGN);
  char bin[1024];
  if (la_auth_init() != 0 ||
      la_td_find_bin("la-globalagent", bin, sizeof bin) != 0) {
    fprintf(stderr, "bench_gather: la-globalagent not built (make bins)\n");
    return 1;
  }
  double *x = malloc(N_ELEMENTS * sizeof *x);
  size_t bytes = 0;
  for (int i = 0; i < 16; i++) {
    if (!x || la_compact_synth(LA_SYNTH_NOISE, N_ELEMENTS, 500 + (uint64_t)i,
                               x) ||
        la_compact(x, N_ELEMENTS, NULL, &series[i])) {
      fprintf(stderr, "bench_gather: set-up failed\n");
      return 1;
    }
    bytes += series[i].len;
  }
  free(x);
  n_win = env_ints("LA_BENCH_GATHER_WINDOWS", windows_ms, N_WIN, N_WIN);
  n_k = env_ints("LA_BENCH_GATHER_KS", ks, N_K, N_K);
  const char *g = getenv("LA_BENCH_GATHER_GAP_US");
  if (g && *g) gap_us = (int)strtol(g, NULL, 10);
  static run_t r[N_WIN][N_K][REPEATS];
  for (int rep = 0; rep < REPEATS; rep++)
    for (int ki = 0; ki < n_k; ki++)
      for (int w = 0; w < n_win; w++) one_run(windows_ms[w], ks[ki], &r[w][ki][rep]);
  FILE *f = fopen(json, "w");
  if (!f) {
    perror(json);
    return 1;
  }
  int ok = 1;
  fprintf(f,
          "{\n  \"bench\": \"gather\",\n  \"configuration\": \"1 simulated "
          "LocalAgent, K ranks' traces per cycle %d us apart, %d ms idle "
          "between cycles, %d cycles after %d, %d-element traces (%zu "
          "bytes mean), fsync on, %d runs interleaved, medians\",\n"
          "  \"results\": [",
          gap_us, PACE_MS, CYCLES, WARMUP, N_ELEMENTS, bytes / 16, REPEATS);
  printf("GlobalAgent gather window: K traces per cycle, %d us apart, %d ms "
         "between cycles (%zu-byte traces, fsync on; medians of %d)\n",
         gap_us, PACE_MS, bytes / 16, REPEATS);
  printf("  %-4s %-8s %14s %15s %18s %18s\n", "K", "gather", "CPU us/trace",
         "commits/cycle", "last trace->Ack", "first->last Ack");
  for (int ki = 0; ki < n_k; ki++)
    for (int w = 0; w < n_win; w++) {
      double v[4][REPEATS];
      for (int rep = 0; rep < REPEATS; rep++) {
        const run_t *q = &r[w][ki][rep];
        if (!q->ok) {
          ok = 0;
          printf("  FAILED (K %d, gather %d ms): %s\n", ks[ki], windows_ms[w],
                 q->why);
        }
        v[0][rep] = q->cpu_us;
        v[1][rep] = q->commits_per_cycle;
        v[2][rep] = q->last_ack_ms;
        v[3][rep] = q->cycle_ack_ms;
      }
      double m[4];
      for (int i = 0; i < 4; i++) m[i] = median(v[i], REPEATS);
      char win[16] = "off";
      if (windows_ms[w]) snprintf(win, sizeof win, "%dms", windows_ms[w]);
      printf("  %-4d %-8s %14.1f %15.2f %15.2f ms %15.2f ms\n", ks[ki], win,
             m[0], m[1], m[2], m[3]);
      fprintf(f,
              "%s\n    {\"k\": %d, \"gather_ms\": %d, \"cpu_us_per_trace\": "
              "%.2f, \"commits_per_cycle\": %.3f, \"last_trace_ack_ms_p50\": "
              "%.3f, \"cycle_ack_ms_p50\": %.3f}",
              ki || w ? "," : "", ks[ki], windows_ms[w], m[0], m[1], m[2],
              m[3]);
    }
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
  printf("wrote %s\n", json);
  for (int i = 0; i < 16; i++) la_compact_result_free(&series[i]);
  return ok ? 0 : 1;
}
