/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_query.c: how long a query of a large stored Trace-Set holds up the
 * GlobalAgent's ingest (make bench-query).
 *
 * Starts la-globalagent (store.fsync = no), stores one Trace-Set of 10^4
 * ranks (LA_QUERY_RANKS: another count) with traces of about 4.3 KB (about
 * 43 MB, sent by a simulated
 * LocalAgent), then a second simulated LocalAgent (the probe) sends one
 * small trace at a time and waits for its Ack, back to back: the Ack
 * latency is how long the loop thread takes to read, commit and
 * acknowledge. First for one second alone (the baseline), then while a
 * forked client asks for the large set QUERIES times in a row
 * (la_client_get, as lactl show or a catching-up balancer does). Reported
 * per run: the probe's Ack latency during the queries (median, p99 and the
 * longest: the longest stall of the loop), its median and longest alone,
 * the Acks per second during the queries, and the CPU time of the
 * GlobalAgent's main (loop) thread per query, measured over the same
 * queries run once before without the probe (/proc: less noisy than wall
 * time on a loaded machine).
 *
 * With LA_BENCH_OTHER_BIN set to another build's bin directory (e.g. a
 * worktree of main: /tmp/wt-main/build/bin), each run is made with that
 * build's daemon and with this one, interleaved, REPEATS times; medians
 * side by side, with the load average before and after. Writes argv[1]
 * (build/bench/query.json) and prints a table.
 */
#include "bench_args.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_auth.h"
#include "la_client.h"
#include "la_compact.h"
#include "la_test_daemon.h"
#include "la_test_uplink.h"

/* ranks of the large set: 10^4, or LA_QUERY_RANKS (e.g. 100000) */
static uint32_t RANKS = 10000;
#define TRACE_ELEMS 540 /* lossless, rough values: about 4.3 KB a trace */
#define PROBE_ELEMS 100
#define QUERIES 3
#define REPEATS 3
#define WAIT_MS 60000
#define MAX_ACKS 200000

static la_compact_result_t big_trace, probe_trace;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of v[0..n), sorted here. */
static double pct(double *v, int n, double p) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  int i = (int)ceil(p / 100.0 * n) - 1;
  return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* Rough values (lossless keeps about 8 bytes an element) into r. */
static int make_trace(size_t n, uint64_t seed, la_compact_result_t *r) {
  double *x = malloc(n * sizeof *x);
  la_compact_params_t p;
  if (!x || la_compact_spec_parse("lossless", &p, NULL, 0)) {
    free(x);
    return -1;
  }
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = 1.0 + (double)(s >> 11) * 0x1.0p-53;
  }
  int rc = la_compact(x, n, &p, r);
  free(x);
  return rc;
}

typedef struct run {
  int ok;
  double p50_ms, p99_ms, max_ms;     /* Acks during the queries */
  double alone_p50_ms, alone_max_ms; /* Acks before */
  double acks_per_s, query_s;
  double loop_cpu_s; /* the loop thread's CPU per query, without the probe */
  char why[300];
} run_t;

/* Stores app "big" cycle 1: RANKS ranks of big_trace, from host loader. */
static int store_big(la_tu_ga_t *g, const la_auth_key_t *k) {
  la_tu_conn_t c;
  la_tu_init(&c, 1);
  int rc = la_tu_open(&c, g->agents_port, k, "loader", 64 * 1024, WAIT_MS);
  for (uint32_t r = 0; rc == 0 && r < RANKS; r++) {
    rc = la_tu_send_rank_start(&c, "big", r, RANKS, TRACE_ELEMS, "loader",
                               WAIT_MS);
    if (rc == 0 && r % 256 == 0) rc = la_tu_read_acks(&c);
  }
  for (uint32_t r = 0; rc == 0 && r < RANKS; r++) {
    rc = la_tu_send_trace(&c, "big", r, 1, TRACE_ELEMS, &big_trace, WAIT_MS);
    if (rc == 0 && r % 256 == 0) rc = la_tu_read_acks(&c);
  }
  if (rc == 0) rc = la_tu_wait_acked(&c, WAIT_MS);
  la_tu_close(&c);
  if (rc == 0) rc = la_td_wait_status(g->d, "sets_complete", 1, WAIT_MS);
  return rc;
}

/* The probe's next trace, sent and acknowledged: its latency in ms, or -1. */
static double probe_once(la_tu_conn_t *p, uint64_t cycle) {
  uint64_t t0 = mono_ns();
  if (la_tu_send_trace(p, "probe", 0, cycle, PROBE_ELEMS, &probe_trace,
                       WAIT_MS) ||
      la_tu_wait_acked(p, WAIT_MS))
    return -1;
  return (double)(mono_ns() - t0) / 1e6;
}

/* The client: QUERIES la_client_get of the large set. Exit status 0 or 1. */
static int query_child(const char *addr) {
  la_client_t *c = NULL;
  if (la_client_connect(addr, WAIT_MS, &c)) return 1;
  for (int q = 0; q < QUERIES; q++) {
    la_traceset_t *t = NULL;
    int rc = la_client_get(c, "big", 1, &t);
    if (rc || la_traceset_nprocs(t) != RANKS) {
      fprintf(stderr, "bench_query: la_client_get: %s (%s)\n",
              la_client_strerror(rc), la_client_error(c));
      la_client_close(c);
      return 1;
    }
    la_traceset_free(t);
  }
  la_client_close(c);
  return 0;
}

/* One run with the daemon LA_TEST_BIN_DIR names (unset: this build's). */
static void one_run(run_t *out) {
  memset(out, 0, sizeof *out);
  la_tu_ga_t g;
  memset(&g, 0, sizeof g);
  la_auth_key_t k;
  la_tu_conn_t p;
  la_tu_init(&p, 1);
  double *lat = malloc(MAX_ACKS * sizeof *lat);
  const char *extra[] = {"--stitch.timeout=600s", NULL};
  if (!lat || la_tu_ga_start(&g, 0, 1, extra, WAIT_MS) ||
      la_auth_load_key(g.key, &k, NULL, 0)) {
    snprintf(out->why, sizeof out->why, "la-globalagent did not start");
    goto done;
  }
  if (store_big(&g, &k)) {
    snprintf(out->why, sizeof out->why, "storing the large set failed");
    goto done;
  }
  if (la_tu_open(&p, g.agents_port, &k, "probe", 64 * 1024, WAIT_MS) ||
      la_tu_send_rank_start(&p, "probe", 0, 1, PROBE_ELEMS, "probe", WAIT_MS) ||
      la_tu_wait_acked(&p, WAIT_MS)) {
    snprintf(out->why, sizeof out->why, "probe connection failed");
    goto done;
  }
  uint64_t cycle = 1;
  int n = 0;
  uint64_t end = mono_ns() + 1000000000u;
  while (mono_ns() < end && n < MAX_ACKS) {
    double l = probe_once(&p, cycle++);
    if (l < 0) goto probe_failed;
    lat[n++] = l;
  }
  out->alone_max_ms = pct(lat, n, 100);
  out->alone_p50_ms = pct(lat, n, 50);

  /* the queries alone: the loop thread's CPU time per query */
  pid_t ga = la_td_pid(g.d);
  double cpu0 = la_td_main_thread_cpu_seconds(ga);
  pid_t child = fork();
  if (child == 0) _exit(query_child(g.feed_addr));
  int status = -1;
  waitpid(child, &status, 0);
  out->loop_cpu_s = (la_td_main_thread_cpu_seconds(ga) - cpu0) / QUERIES;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(out->why, sizeof out->why, "the queries failed");
    goto done;
  }

  /* the queries again, the probe's Acks meanwhile */
  uint64_t t0 = mono_ns();
  child = fork();
  if (child == 0) _exit(query_child(g.feed_addr));
  n = 0;
  for (;;) {
    pid_t w = waitpid(child, &status, WNOHANG);
    if (w == child) break;
    double l = probe_once(&p, cycle++);
    if (l < 0) {
      kill(child, SIGKILL);
      waitpid(child, NULL, 0);
      goto probe_failed;
    }
    if (n < MAX_ACKS) lat[n++] = l;
  }
  out->query_s = (double)(mono_ns() - t0) / 1e9;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(out->why, sizeof out->why, "the queries failed");
    goto done;
  }
  out->acks_per_s = n / out->query_s;
  out->max_ms = pct(lat, n, 100);
  out->p99_ms = pct(lat, n, 99);
  out->p50_ms = pct(lat, n, 50);
  out->ok = 1;
  goto done;
probe_failed:
  snprintf(out->why, sizeof out->why, "the probe's trace was not acked");
done:
  la_tu_close(&p);
  la_td_free(g.d);
  free(lat);
}

static double median3(const run_t *r, size_t off) {
  double v[REPEATS];
  int n = 0;
  for (int i = 0; i < REPEATS; i++)
    if (r[i].ok) v[n++] = *(const double *)((const char *)&r[i] + off);
  return pct(v, n, 50);
}

static void loadavg(char *buf, size_t n) {
  FILE *f = fopen("/proc/loadavg", "r");
  buf[0] = 0;
  if (f && fgets(buf, (int)n, f)) buf[strcspn(buf, " ")] = 0;
  if (f) fclose(f);
}

#define MED(r, field) median3(r, offsetof(run_t, field))

static void json_build(FILE *f, const char *name, const run_t *r) {
  fprintf(f,
          "  \"%s\": {\"ack_p50_ms\": %.3f, \"ack_p99_ms\": %.3f, "
          "\"ack_max_ms\": %.3f, \"ack_alone_p50_ms\": %.3f, "
          "\"ack_alone_max_ms\": %.3f, \"acks_per_s\": %.0f, "
          "\"query_s\": %.3f, \"loop_cpu_s_per_query\": %.3f, "
          "\"runs_max_ms\": [",
          name, MED(r, p50_ms), MED(r, p99_ms), MED(r, max_ms),
          MED(r, alone_p50_ms), MED(r, alone_max_ms), MED(r, acks_per_s),
          MED(r, query_s), MED(r, loop_cpu_s));
  for (int i = 0; i < REPEATS; i++)
    fprintf(f, "%s%.3f", i ? ", " : "", r[i].ok ? r[i].max_ms : -1.0);
  fprintf(f, "]}");
}

static void row(const char *name, const run_t *r) {
  printf("%-6s %8.2f %8.2f %8.2f %8.2f %8.2f %8.0f %8.2f %9.3f\n", name,
         MED(r, p50_ms), MED(r, p99_ms), MED(r, max_ms), MED(r, alone_p50_ms),
         MED(r, alone_max_ms), MED(r, acks_per_s), MED(r, query_s),
         MED(r, loop_cpu_s));
}

int main(int argc, char **argv) {
  const char *out = la_bench_out_path(argc, argv, 1, "build/bench/query.json");
  const char *other = getenv("LA_BENCH_OTHER_BIN");
  const char *nr = getenv("LA_QUERY_RANKS");
  if (nr && *nr) {
    char *e;
    unsigned long v = strtoul(nr, &e, 10);
    if (*e || v < 1 || v > 1000000) {
      fprintf(stderr, "bench_query: LA_QUERY_RANKS: 1 to 10^6, not %s\n", nr);
      return 2;
    }
    RANKS = (uint32_t)v;
  }
  if (la_auth_init() || make_trace(TRACE_ELEMS, 7, &big_trace) ||
      make_trace(PROBE_ELEMS, 9, &probe_trace)) {
    fprintf(stderr, "bench_query: cannot make the traces\n");
    return 1;
  }
  printf("set: %u ranks of %zu-byte traces (about %.0f MB)\n", RANKS,
         big_trace.len, RANKS * (double)big_trace.len / 1e6);
  char la0[32], la1[32];
  loadavg(la0, sizeof la0);
  run_t mine[REPEATS], theirs[REPEATS];
  for (int i = 0; i < REPEATS; i++) {
    if (other && *other) {
      setenv("LA_TEST_BIN_DIR", other, 1);
      one_run(&theirs[i]);
      unsetenv("LA_TEST_BIN_DIR");
      if (!theirs[i].ok) fprintf(stderr, "other: %s\n", theirs[i].why);
    }
    one_run(&mine[i]);
    if (!mine[i].ok) fprintf(stderr, "this: %s\n", mine[i].why);
  }
  loadavg(la1, sizeof la1);
  printf(
      "Acks of a probe LocalAgent while %d queries of the set are served "
      "(medians of %d runs; load average %s -> %s)\n",
      QUERIES, REPEATS, la0, la1);
  printf("%-6s %8s %8s %8s %8s %8s %8s %8s %9s\n", "build", "p50 ms", "p99 ms",
         "max ms", "alone50", "alonemax", "acks/s", "query s", "loopCPU/q");
  if (other && *other) row("other", theirs);
  row("this", mine);
  FILE *f = la_bench_open_out(out);
  if (!f) return 1;
  fprintf(f, "{\n  \"ranks\": %u, \"trace_bytes\": %zu, \"queries\": %d,\n",
          RANKS, big_trace.len, QUERIES);
  fprintf(f, "  \"loadavg_before\": \"%s\", \"loadavg_after\": \"%s\",\n", la0,
          la1);
  json_build(f, "this", mine);
  if (other && *other) {
    fprintf(f, ",\n");
    json_build(f, "other", theirs);
  }
  fprintf(f, "\n}\n");
  fclose(f);
  la_compact_result_free(&big_trace);
  la_compact_result_free(&probe_trace);
  return 0;
}
