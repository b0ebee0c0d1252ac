/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_globalagent.c: measures the real la-globalagent.
 *
 * (a) Ingest. Starts build/bin/la-globalagent (found next to this program,
 *     see tests/support/la_test_daemon.h) with a shared secret, then opens
 *     64 simulated LocalAgent connections from this process (one poll loop:
 *     Hello, Challenge, Auth with la_auth, then RankStart and CompactTrace
 *     frames with link sequence numbers). The 64 connections are the 64
 *     ranks of one application (one rank per connection, host sim-NN), so a
 *     Trace-Set completes when all 64 traces of a cycle are stored. The
 *     traces are real la_compact outputs (default polyline, cv 0.1) of
 *     10^5-element mesh-cost series from la_compact_synth, 16 different
 *     ones. Each connection keeps up to WINDOW traces unacknowledged and
 *     sends as fast as the Acks allow. Measured from the first CompactTrace
 *     to the last Ack: traces/s stored (Acks count only durably stored
 *     traces) and Trace-Sets/s (the daemon's sets_complete over the same
 *     span; every set is complete once the last Ack is in). Once with
 *     store.fsync = yes (the default: top-level JSON fields), once with no.
 *
 * (b) Latency. A real LocalAgent and GlobalAgent (fsync on), a subscriber
 *     (libla_client, subscribed before the run) and an application of 4
 *     forked ranks calling libla, 10^5 elements each, wall-time metric,
 *     period 1. A process-shared pthread barrier starts every cycle on all
 *     ranks at once, so they call LA_dataXfer at nearly the same time. Per
 *     cycle, latency = the subscriber's CLOCK_REALTIME when la_client_next
 *     returns the complete set - the latest CompactTrace.t_xfer_ns in it
 *     (CLOCK_REALTIME that libla took inside LA_dataXfer on each rank).
 *     The subscriber parses a set on one thread, or on
 *     $LA_BENCH_SUB_THREADS (la_client_set_threads). Per stage, the
 *     median over the cycles of each stage's own time: to the latest
 *     trace stored (the store's t_stored_ns), to the set published
 *     (TraceSet.t_complete_ns), to its first bytes readable at the
 *     subscriber, to la_client_next returning; and each daemon's CPU time
 *     per cycle. LA_BENCH_LOCALAGENT_OPTS adds up to 4 options (separated
 *     by spaces) to the LocalAgent's command line.
 *     Two modes: "busy" (the ranks compute back to back: 4 ranks and both
 *     daemons share the 2 cores) and "paced" (the ranks idle 20 ms after
 *     each cycle, as ranks that leave the agents a core would); p50 and p99
 *     over CYCLES cycles after WARMUP. The top-level latency fields are the
 *     paced mode's; the busy numbers are under "latency_busy".
 *
 * The simulated LocalAgents speak the link as the LocalAgent does: mutual
 * authentication, then every frame an encrypted record (la_secure_io.h).
 *
 * (d) With --latency (bench_globalagent --latency [JSON], default
 *     build/bench/globalagent_latency.json): only (b).
 *
 * (c) With --link (bench_globalagent --link [JSON], default
 *     build/bench/globalagent_link.json): only (a), encrypted against
 *     unencrypted (a GlobalAgent without a secret, the one-way handshake and
 *     clear frames), with fsync off (CPU-bound: where the cipher's cost shows)
 *     and on, LINK_REPEATS runs of each interleaved; medians side by side,
 *     the ratio encrypted/unencrypted, and the GlobalAgent's CPU time per
 *     trace (user + system, from /proc/PID/stat), less noisy than rates.
 *
 * Every measurement runs REPEATS (3) times, interleaved, each in fresh
 * daemons; the median run is reported (for latency: the median of the
 * runs' p50, and of their p99), every run's headline number is in "runs".
 * Writes argv[1] (build/bench/globalagent.json) and prints a table.
 */
#include "bench_args.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "la.h"
#include "la_auth.h"
#include "la_client.h"
#include "la_client_internal.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_secure_io.h"
#include "la_sockio.h"
#include "la_trace_msg.h"
#include "la_test_daemon.h"
#include "la_test_uplink.h"

#define N_ELEMENTS 100000
#define N_CONNS 64
#define N_SERIES 16
#define INGEST_CYCLES 400 /* per connection: 25,600 traces per run */
#define WINDOW 16         /* unacknowledged traces per connection */
#define LAT_RANKS 4
#define WARMUP 5
#define CYCLES 110
#define PACE_MS 20
#define REPEATS 3 /* each measurement; medians reported */
#define WAIT_MS 30000
#define LINK_REPEATS 9 /* --link: runs of each configuration */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double pct(const double *v, int n, double p) {
  int i = (int)ceil(p / 100.0 * n) - 1;
  if (i < 0) i = 0;
  if (i >= n) i = n - 1;
  return v[i];
}

/* ------------------------------------------------------------- ingest -- */

/* A simulated LocalAgent and the next cycle it sends. */
typedef struct conn {
  la_tu_conn_t l;
  int next_cycle;
} conn_t;

static la_compact_result_t series[N_SERIES];
static size_t series_bytes; /* mean encoded size */

static int make_series(void) {
  double *x = malloc(N_ELEMENTS * sizeof *x);
  if (!x) return -1;
  size_t total = 0;
  for (int i = 0; i < N_SERIES; i++) {
    if (la_compact_synth(LA_SYNTH_MESH, N_ELEMENTS, 1000 + (uint64_t)i, x) ||
        la_compact(x, N_ELEMENTS, NULL, &series[i])) {
      free(x);
      return -1;
    }
    total += series[i].len;
  }
  series_bytes = total / N_SERIES;
  free(x);
  return 0;
}

/* The largest frame a connection builds: the largest trace and room. */
static size_t frame_cap(void) {
  size_t cap = series_bytes * 4 + 4096;
  for (int i = 0; i < N_SERIES; i++)
    if (series[i].len + 4096 > cap) cap = series[i].len + 4096;
  return cap;
}

static int send_trace(conn_t *c, const char *app, uint32_t rank, int cycle) {
  return la_tu_send_trace(&c->l, app, rank, (uint64_t)cycle, N_ELEMENTS,
                          &series[(rank + (uint32_t)cycle) % N_SERIES],
                          WAIT_MS);
}

typedef struct ingest {
  int ok;
  double secs, traces_per_s, sets_per_s, traces_per_commit;
  double ga_cpu_us; /* the GlobalAgent's CPU time per trace (user+sys) */
  long long traces, sets, commits;
  char why[400];
} ingest_t;

static void ingest_run(int fsync, int secure, ingest_t *out) {
  la_tu_ga_t g;
  conn_t c[N_CONNS];
  la_auth_key_t key;
  char why[256];
  const char *app = "bench-ingest";
  memset(out, 0, sizeof *out);
  memset(c, 0, sizeof c);
  for (int i = 0; i < N_CONNS; i++) la_tu_init(&c[i].l, secure);
  if (la_tu_ga_start(&g, fsync, secure, NULL, WAIT_MS) != 0) {
    snprintf(out->why, sizeof out->why, "la-globalagent did not start");
    goto done;
  }
  if (la_auth_load_key(g.key, &key, why, sizeof why) != 0) {
    snprintf(out->why, sizeof out->why, "key: %s", why);
    goto done;
  }
  for (int i = 0; i < N_CONNS; i++) {
    char host[32];
    snprintf(host, sizeof host, "sim-%02d", i);
    if (la_tu_open(&c[i].l, g.agents_port, &key, host, frame_cap(), WAIT_MS) !=
        0) {
      snprintf(out->why, sizeof out->why, "connection %d refused", i);
      goto done;
    }
    if (la_tu_send_rank_start(&c[i].l, app, (uint32_t)i, N_CONNS, N_ELEMENTS,
                              host, WAIT_MS)) {
      snprintf(out->why, sizeof out->why, "RankStart %d failed", i);
      goto done;
    }
  }
  struct pollfd pf[N_CONNS];
  /* the RankStarts acknowledged first */
  for (int i = 0; i < N_CONNS; i++)
    if (la_tu_wait_acked(&c[i].l, WAIT_MS)) {
      snprintf(out->why, sizeof out->why, "no Ack for RankStart %d", i);
      goto done;
    }
  uint64_t t0 = mono_ns(), deadline = la_now_ms() + 90000;
  double cpu0 = la_td_cpu_seconds(la_td_pid(g.d));
  int done_conns = 0;
  while (done_conns < N_CONNS) {
    for (int i = 0; i < N_CONNS; i++) {
      conn_t *k = &c[i];
      while (k->next_cycle < INGEST_CYCLES && k->l.seq - k->l.acked < WINDOW)
        if (send_trace(k, app, (uint32_t)i, k->next_cycle++)) {
          snprintf(out->why, sizeof out->why, "send on %d failed", i);
          goto done;
        }
      pf[i].fd = k->l.fd;
      pf[i].events = POLLIN;
      pf[i].revents = 0;
    }
    int n = poll(pf, N_CONNS, 1000);
    if (n < 0 && errno != EINTR) break;
    done_conns = 0;
    for (int i = 0; i < N_CONNS; i++) {
      if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
          la_tu_read_acks(&c[i].l)) {
        snprintf(out->why, sizeof out->why, "connection %d closed", i);
        goto done;
      }
      done_conns +=
          c[i].next_cycle == INGEST_CYCLES && c[i].l.acked == c[i].l.seq;
    }
    if (la_now_ms() > deadline) {
      snprintf(out->why, sizeof out->why, "not done in 90 s");
      goto done;
    }
  }
  out->secs = (double)(mono_ns() - t0) / 1e9;
  out->ga_cpu_us = (la_td_cpu_seconds(la_td_pid(g.d)) - cpu0) * 1e6 /
                   ((double)N_CONNS * INGEST_CYCLES);
  out->traces = la_td_status_ll(g.d, "traces_stored");
  out->sets = la_td_status_ll(g.d, "sets_complete");
  out->commits = la_td_status_ll(g.d, "commits");
  out->traces_per_s = (double)N_CONNS * INGEST_CYCLES / out->secs;
  out->sets_per_s = (double)out->sets / out->secs;
  out->traces_per_commit =
      out->commits > 0 ? (double)(out->traces + N_CONNS) / out->commits : 0;
  if (out->traces != (long long)N_CONNS * INGEST_CYCLES ||
      out->sets != INGEST_CYCLES)
    snprintf(out->why, sizeof out->why,
             "stored %lld traces, %lld complete "
             "sets; expected %d and %d",
             out->traces, out->sets, N_CONNS * INGEST_CYCLES, INGEST_CYCLES);
  else
    out->ok = 1;
done:
  for (int i = 0; i < N_CONNS; i++) la_tu_close(&c[i].l);
  la_auth_key_wipe(&key);
  la_td_free(g.d);
}

/* ------------------------------------------------------------ latency -- */

typedef struct shared {
  pthread_barrier_t bar;
  int failed[LAT_RANKS];
} shared_t;

/* One rank: register, CYCLES+WARMUP cycles in lockstep, finalize. */
static void rank_main(shared_t *sh, const char *agent, const char *app,
                      int rank, int paced) {
  LA_setAgent(agent);
  LA_setAppId(app);
  LA_setPeriod(1);
  LA_setBuffers(16);
  LA_setPolicy(LA_POLICY_WAIT);
  int rc = LA_register("benchlat", rank, LAT_RANKS, N_ELEMENTS);
  if (rc) sh->failed[rank] = 1;
  volatile double sink = 0;
  for (int c = 0; c < WARMUP + CYCLES; c++) {
    pthread_barrier_wait(&sh->bar);
    for (long e = 0; e < N_ELEMENTS; e++) {
      LA_startProbe(e);
      int work = 1 + (int)((e / 5000 + rank) % 4); /* plateaus */
      for (int w = 0; w < work; w++) sink += (double)w * 1e-9;
      LA_stopProbe(e);
    }
    if (LA_dataXfer() != 0) sh->failed[rank] = 1;
    if (paced) nap_ms(PACE_MS);
  }
  LA_finalize();
  _exit(sh->failed[rank]);
}

typedef struct lat {
  int ok, cycles;
  double p50, p90, p99, max, mean;
  double stored_p50;    /* latest LA_dataXfer -> latest trace inserted */
  double published_p50; /* latest LA_dataXfer -> set published (after the
                           commit) */
  double arrived_p50;   /* latest LA_dataXfer -> the set's first bytes
                           readable at the subscriber */
  /* medians over the cycles of each stage's own time: LA_dataXfer ->
   * stored (LocalAgent, link, GlobalAgent ingest), -> published (gather
   * window, commit, the set read back), -> arrived (encoding, the feed's
   * write), -> la_client_next returned (the subscriber's read and parse) */
  double stage_p50[4];
  double la_cpu_ms, ga_cpu_ms; /* each daemon's CPU time per cycle */
  char why[300];
} lat_t;

/* The median over the measured cycles of b[c] - a[c] (a NULL: 0). */
static double median_step(const double *a, const double *b) {
  double v[CYCLES];
  for (int i = 0; i < CYCLES; i++)
    v[i] = b[WARMUP + i] - (a ? a[WARMUP + i] : 0);
  qsort(v, CYCLES, sizeof *v, cmp_double);
  return pct(v, CYCLES, 50);
}

static void latency_run(int paced, lat_t *out) {
  la_tu_ga_t g;
  la_test_daemon_t *la = NULL;
  la_client_t *sub = NULL;
  pid_t kids[LAT_RANKS] = {0};
  double *ms = calloc(WARMUP + CYCLES, sizeof *ms);
  double *pub = calloc(WARMUP + CYCLES, sizeof *pub);
  uint64_t *txmax = calloc(WARMUP + CYCLES, sizeof *txmax);
  double *arr = calloc(WARMUP + CYCLES, sizeof *arr);
  char app[64];
  snprintf(app, sizeof app, "bench-latency-%s", paced ? "paced" : "busy");
  memset(out, 0, sizeof *out);
  shared_t *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED || !ms || !pub || !txmax || !arr) {
    snprintf(out->why, sizeof out->why, "no memory");
    return;
  }
  memset(sh, 0, sizeof *sh);
  pthread_barrierattr_t ba;
  pthread_barrierattr_init(&ba);
  pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&sh->bar, &ba, LAT_RANKS);
  if (la_tu_ga_start(&g, 1, 1, NULL, WAIT_MS) != 0) {
    snprintf(out->why, sizeof out->why, "la-globalagent did not start");
    goto done;
  }
  la = la_td_new("la-localagent");
  if (!la) {
    snprintf(out->why, sizeof out->why, "no la-localagent");
    goto done;
  }
  char pf[600], spool[600];
  static char a[4][700];
  la_td_path(la, "port", pf, sizeof pf);
  la_td_path(la, "spool", spool, sizeof spool);
  snprintf(a[0], sizeof a[0], "--agent.port_file=%s", pf);
  snprintf(a[1], sizeof a[1], "--global.spool_dir=%s", spool);
  snprintf(a[2], sizeof a[2], "--global.address=%s", g.agents_addr);
  snprintf(a[3], sizeof a[3], "--global.secret_file=%s", g.key);
  /* LA_BENCH_LOCALAGENT_OPTS: up to 4 more options for the LocalAgent,
   * separated by spaces (e.g. --agent.worker_nice=0) */
  static char more[600];
  const char *args[12] = {"--agent.listen=127.0.0.1:0", a[0], a[1], a[2], a[3],
                          "--log.level=warn"};
  int na = 6;
  const char *env = getenv("LA_BENCH_LOCALAGENT_OPTS");
  snprintf(more, sizeof more, "%s", env ? env : "");
  for (char *sv = NULL, *o = strtok_r(more, " ", &sv); o && na < 10;
       o = strtok_r(NULL, " ", &sv))
    args[na++] = o;
  args[na] = NULL;
  if (la_td_start(la, args, pf, WAIT_MS) <= 0) {
    snprintf(out->why, sizeof out->why, "la-localagent did not start");
    goto done;
  }
  /* the subscriber parses a set on one thread (the default: on a VM
   * without a free core, threads only wait for one another), or on
   * $LA_BENCH_SUB_THREADS (la_client_set_threads; 0: one per CPU) */
  const char *st = getenv("LA_BENCH_SUB_THREADS");
  if (la_client_connect(g.feed_addr, 5000, &sub) != 0 ||
      la_client_set_threads(sub, st && *st ? (unsigned)atoi(st) : 1) != 0 ||
      la_client_subscribe(sub, app, 0) != 0) {
    snprintf(out->why, sizeof out->why, "subscribe failed");
    goto done;
  }
  la_client_rows_t *rows = NULL;
  if (la_client_list(sub, "apps", NULL, &rows) == 0) la_client_rows_free(rows);
  char agent[64];
  snprintf(agent, sizeof agent, "%s", la_td_addr(la));
  fflush(NULL);
  for (int r = 0; r < LAT_RANKS; r++) {
    kids[r] = fork();
    if (kids[r] == 0) {
      for (int fd = 3; fd < 1024; fd++) close(fd);
      rank_main(sh, agent, app, r, paced);
    }
  }
  int got = 0;
  double cpu_la0 = la_td_cpu_seconds(la_td_pid(la)),
         cpu_ga0 = la_td_cpu_seconds(la_td_pid(g.d));
  uint64_t end = la_now_ms() + 120000;
  while (got < WARMUP + CYCLES && la_now_ms() < end) {
    la_traceset_t *t = NULL;
    /* when the set's first bytes can be read (nothing buffered: the sets
     * come one at a time; else the arrival is not known and counts as
     * now, which only moves time into the stage before) */
    uint64_t t_arr = real_ns();
    if (sub->rd.len == sub->rd.head) {
      struct pollfd pf1 = {.fd = la_client_fd(sub), .events = POLLIN};
      if (poll(&pf1, 1, WAIT_MS) > 0) t_arr = real_ns();
    }
    int rc = la_client_next(sub, WAIT_MS, &t);
    uint64_t now = real_ns();
    if (rc == LA_ETIMEDOUT) break;
    if (rc) {
      snprintf(out->why, sizeof out->why, "feed: %s", la_client_error(sub));
      goto done;
    }
    uint64_t c = la_traceset_cycle(t), tmax = 0, tpub = la_traceset_time_ns(t);
    int have = la_traceset_complete(t) && c < WARMUP + CYCLES;
    for (uint32_t r = 0; have && r < LAT_RANKS; r++) {
      const La__CompactTrace *ct = la__traceset_compact(t, r);
      if (!ct || !ct->has_t_xfer_ns)
        have = 0;
      else if (ct->t_xfer_ns > tmax)
        tmax = ct->t_xfer_ns;
    }
    la_traceset_free(t);
    if (!have) {
      snprintf(out->why, sizeof out->why, "cycle %llu: incomplete set",
               (unsigned long long)c);
      goto done;
    }
    ms[c] = ((double)now - (double)tmax) / 1e6;
    pub[c] = ((double)tpub - (double)tmax) / 1e6;
    arr[c] = ((double)t_arr - (double)tmax) / 1e6;
    txmax[c] = tmax;
    got++;
  }
  if (got < WARMUP + CYCLES) {
    snprintf(out->why, sizeof out->why, "%d of %d sets received", got,
             WARMUP + CYCLES);
    goto done;
  }
  out->la_cpu_ms =
      (la_td_cpu_seconds(la_td_pid(la)) - cpu_la0) * 1e3 / (WARMUP + CYCLES);
  out->ga_cpu_ms =
      (la_td_cpu_seconds(la_td_pid(g.d)) - cpu_ga0) * 1e3 / (WARMUP + CYCLES);
  /* the store says when each trace was inserted (t_stored_ns) */
  double *sto = calloc(WARMUP + CYCLES, sizeof *sto);
  char db[600];
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  la_td_path(g.d, "la.db", db, sizeof db);
  if (sto && sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(h,
                         "SELECT cycle_tag, max(t_stored_ns) FROM traces "
                         "GROUP BY cycle_tag",
                         -1, &q, NULL) == SQLITE_OK)
    while (sqlite3_step(q) == SQLITE_ROW) {
      long long c = sqlite3_column_int64(q, 0);
      if (c >= WARMUP && c < WARMUP + CYCLES)
        sto[c] = ((double)sqlite3_column_int64(q, 1) - (double)txmax[c]) / 1e6;
    }
  sqlite3_finalize(q);
  sqlite3_close(h);
  if (sto) { /* per stage: the median over the cycles of its own time */
    const double *at[5] = {NULL, sto, pub, arr, ms};
    for (int s = 0; s < 4; s++)
      out->stage_p50[s] = median_step(at[s], at[s + 1]);
    out->stored_p50 = median_step(NULL, sto);
    free(sto);
  }
  out->published_p50 = median_step(NULL, pub);
  out->arrived_p50 = median_step(NULL, arr);
  double *v = ms + WARMUP, sum = 0;
  qsort(v, CYCLES, sizeof *v, cmp_double);
  for (int i = 0; i < CYCLES; i++) sum += v[i];
  out->cycles = CYCLES;
  out->p50 = pct(v, CYCLES, 50);
  out->p90 = pct(v, CYCLES, 90);
  out->p99 = pct(v, CYCLES, 99);
  out->max = v[CYCLES - 1];
  out->mean = sum / CYCLES;
  out->ok = 1;
done:
  for (int r = 0; r < LAT_RANKS; r++)
    if (kids[r] > 0) {
      int st = 0;
      uint64_t e2 = la_now_ms() + 10000;
      while (waitpid(kids[r], &st, WNOHANG) == 0 && la_now_ms() < e2) nap_ms(5);
      if (kill(kids[r], SIGKILL) == 0) waitpid(kids[r], &st, 0);
      if (out->ok && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
        out->ok = 0;
        snprintf(out->why, sizeof out->why, "rank %d failed", r);
      }
    }
  la_client_close(sub);
  la_td_free(la);
  la_td_free(g.d);
  pthread_barrier_destroy(&sh->bar);
  munmap(sh, sizeof *sh);
  free(ms);
  free(pub);
  free(txmax);
  free(arr);
}

/* --------------------------------------------------------------- main -- */

/* The run with the median traces/s (a failed run counts as 0). */
static ingest_t median_ingest(const ingest_t *r) {
  int idx[REPEATS];
  for (int i = 0; i < REPEATS; i++) idx[i] = i;
  for (int i = 0; i < REPEATS; i++)
    for (int j = i + 1; j < REPEATS; j++)
      if ((r[idx[j]].ok ? r[idx[j]].traces_per_s : 0) <
          (r[idx[i]].ok ? r[idx[i]].traces_per_s : 0)) {
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
      }
  for (int i = 0; i < REPEATS; i++)
    if (!r[i].ok) return r[i]; /* a failure is reported, not hidden */
  return r[idx[REPEATS / 2]];
}

/* Median of the runs' p50 and, separately, of their p99; max is the
 * largest of every run's (so it is never below the p99 shown); the other
 * fields from the run with the median p50. */
static lat_t median_lat(const lat_t *r) {
  double p50[REPEATS], p99[REPEATS], max = 0;
  for (int i = 0; i < REPEATS; i++) {
    if (!r[i].ok) return r[i];
    p50[i] = r[i].p50;
    p99[i] = r[i].p99;
    if (r[i].max > max) max = r[i].max;
  }
  qsort(p50, REPEATS, sizeof *p50, cmp_double);
  qsort(p99, REPEATS, sizeof *p99, cmp_double);
  lat_t m = r[0];
  for (int i = 0; i < REPEATS; i++)
    if (r[i].p50 == p50[REPEATS / 2]) m = r[i];
  m.p99 = p99[REPEATS / 2];
  m.max = max;
  return m;
}

/* The median traces/s of n runs (a failed run counts as 0). */
static double median_rate(const ingest_t *r, int n) {
  double v[LINK_REPEATS];
  for (int i = 0; i < n; i++) v[i] = r[i].ok ? r[i].traces_per_s : 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* The median GlobalAgent CPU time per trace of n runs. */
static double median_cpu(const ingest_t *r, int n) {
  double v[LINK_REPEATS];
  for (int i = 0; i < n; i++) v[i] = r[i].ok ? r[i].ga_cpu_us : 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* The latency measurements' JSON objects "latency" (paced) and
 * "latency_busy", each followed by a comma. */
static void lat_write_json(FILE *f, const lat_t *paced, const lat_t *busy) {
  const lat_t *ls[2] = {paced, busy};
  const char *ln[2] = {"latency", "latency_busy"};
  for (int i = 0; i < 2; i++)
    fprintf(f,
            "  \"%s\": {\"ok\": %s, \"configuration\": \"1 LocalAgent + "
            "GlobalAgent (fsync on) + 1 subscriber, %d forked ranks x %d "
            "elements, wall-time metric, period 1, barrier before every "
            "cycle, %s\", \"cycles\": %d, \"warmup\": %d, \"p50_ms\": "
            "%.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, "
            "\"mean_ms\": %.3f, \"to_stored_p50_ms\": %.3f, "
            "\"to_published_p50_ms\": %.3f, \"to_arrived_p50_ms\": "
            "%.3f, \"stages_p50_ms\": {\"stored\": %.3f, \"published\": "
            "%.3f, \"arrived\": %.3f, \"returned\": %.3f}, "
            "\"localagent_cpu_ms_per_cycle\": %.3f, "
            "\"globalagent_cpu_ms_per_cycle\": %.3f%s%s%s},\n",
            ln[i], ls[i]->ok ? "true" : "false", LAT_RANKS, N_ELEMENTS,
            i == 0 ? "ranks idle 20 ms after each cycle"
                   : "ranks compute back to back",
            ls[i]->cycles, WARMUP, ls[i]->p50, ls[i]->p90, ls[i]->p99,
            ls[i]->max, ls[i]->mean, ls[i]->stored_p50, ls[i]->published_p50,
            ls[i]->arrived_p50, ls[i]->stage_p50[0], ls[i]->stage_p50[1],
            ls[i]->stage_p50[2], ls[i]->stage_p50[3], ls[i]->la_cpu_ms,
            ls[i]->ga_cpu_ms, ls[i]->ok ? "" : ", \"error\": \"",
            ls[i]->ok ? "" : ls[i]->why, ls[i]->ok ? "" : "\"");
}

/* The latency table: percentiles, then the median time from the latest
 * LA_dataXfer to each stage. */
static void lat_print(const lat_t *paced, const lat_t *busy) {
  const lat_t *ls[2] = {paced, busy};
  printf(
      "LA_dataXfer -> complete Trace-Set at a subscriber: %d ranks x %d "
      "elements, %d cycles after %d warm-up\n",
      LAT_RANKS, N_ELEMENTS, CYCLES, WARMUP);
  printf("  %-26s %7s %7s %7s %7s %7s %7s %7s %7s\n", "mode", "p50 ms",
         "p90 ms", "p99 ms", "max ms", "mean ms", "stored", "publ.", "arrived");
  for (int i = 0; i < 2; i++) {
    const char *name =
        i == 0 ? "paced (20 ms idle/cycle)" : "busy (back to back)";
    if (!ls[i]->ok) {
      printf("  %-26s FAILED: %s\n", name, ls[i]->why);
      continue;
    }
    printf("  %-26s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f\n", name,
           ls[i]->p50, ls[i]->p90, ls[i]->p99, ls[i]->max, ls[i]->mean,
           ls[i]->stored_p50, ls[i]->published_p50, ls[i]->arrived_p50);
  }
  printf(
      "  (medians from the latest LA_dataXfer: stored: the latest trace "
      "inserted; publ.: the set published after its commit; arrived: its "
      "first bytes readable at the subscriber)\n");
  printf("  per stage, the median of each cycle's own time (ms):\n");
  printf("  %-26s %9s %9s %9s %9s %9s %9s\n", "mode", "->stored",
         "->publ.", "->arrived", "->next()", "LA cpu", "GA cpu");
  for (int i = 0; i < 2; i++)
    if (ls[i]->ok)
      printf("  %-26s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
             i == 0 ? "paced" : "busy", ls[i]->stage_p50[0],
             ls[i]->stage_p50[1], ls[i]->stage_p50[2], ls[i]->stage_p50[3],
             ls[i]->la_cpu_ms, ls[i]->ga_cpu_ms);
  printf("  (LA cpu, GA cpu: each daemon's CPU time per cycle, ms)\n");
  printf("  aim: median < 10 ms (paced: %s, busy: %s)\n",
         paced->ok && paced->p50 < 10 ? "met" : "NOT met",
         busy->ok && busy->p50 < 10 ? "met" : "NOT met");
}

/* --latency: only (b), REPEATS runs of each mode interleaved. */
static int latency_main(const char *json) {
  lat_t latr[2][REPEATS];
  for (int k = 0; k < REPEATS; k++) {
    latency_run(1, &latr[0][k]);
    latency_run(0, &latr[1][k]);
  }
  lat_t paced = median_lat(latr[0]), busy = median_lat(latr[1]);
  FILE *f = fopen(json, "w");
  if (!f) {
    perror(json);
    return 1;
  }
  fprintf(f, "{\n  \"bench\": \"globalagent_latency\",\n");
  lat_write_json(f, &paced, &busy);
  fprintf(f, "  \"repeats\": %d,\n  \"runs\": {", REPEATS);
  for (int i = 0; i < 2; i++) {
    fprintf(f, "%s\"latency_ms_p50_%s\": [", i ? ", " : "",
            i ? "busy" : "paced");
    for (int k = 0; k < REPEATS; k++)
      fprintf(f, "%s%.3f", k ? ", " : "", latr[i][k].p50);
    fprintf(f, "]");
  }
  fprintf(f, "}\n}\n");
  fclose(f);
  lat_print(&paced, &busy);
  printf("  runs' p50 (paced / busy):");
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < REPEATS; k++)
      printf("%s%.2f", k ? " " : (i ? " / " : " "), latr[i][k].p50);
  printf("\nwrote %s\n", json);
  return paced.ok && busy.ok ? 0 : 1;
}

/* --link: ingest encrypted vs unencrypted, fsync off and on, interleaved. */
static int link_main(const char *json) {
  static ingest_t r[2][2][LINK_REPEATS]; /* [fsync][secure][run] */
  for (int k = 0; k < LINK_REPEATS; k++)
    for (int fs = 0; fs < 2; fs++)
      for (int sec = 0; sec < 2; sec++) ingest_run(fs, sec, &r[fs][sec][k]);
  FILE *f = fopen(json, "w");
  if (!f) {
    perror(json);
    return 1;
  }
  int ok = 1;
  printf(
      "GlobalAgent ingest, link encrypted vs not: %d connections, %d "
      "cycles, window %d, %zu-byte traces, median of %d interleaved "
      "runs\n",
      N_CONNS, INGEST_CYCLES, WINDOW, series_bytes, LINK_REPEATS);
  printf("  %-6s %16s %16s %8s  runs (encrypted / unencrypted)\n", "fsync",
         "encrypted tr/s", "clear tr/s", "ratio");
  fprintf(f, "{\n  \"bench\": \"globalagent_link\",\n  \"repeats\": %d,\n",
          LINK_REPEATS);
  for (int fs = 0; fs < 2; fs++) {
    double e = median_rate(r[fs][1], LINK_REPEATS),
           p = median_rate(r[fs][0], LINK_REPEATS);
    printf("  %-6s %16.0f %16.0f %8.3f  ", fs ? "on" : "off", e, p,
           p > 0 ? e / p : 0);
    fprintf(f,
            "  \"fsync_%s\": {\"encrypted_traces_per_s\": %.0f, "
            "\"unencrypted_traces_per_s\": %.0f, \"ratio\": %.4f, "
            "\"runs_encrypted\": [",
            fs ? "on" : "off", e, p, p > 0 ? e / p : 0);
    for (int k = 0; k < LINK_REPEATS; k++) {
      fprintf(f, "%s%.0f", k ? ", " : "", r[fs][1][k].traces_per_s);
      printf("%s%.0f", k ? " " : "", r[fs][1][k].traces_per_s);
    }
    fprintf(f, "], \"runs_unencrypted\": [");
    printf(" / ");
    for (int k = 0; k < LINK_REPEATS; k++) {
      fprintf(f, "%s%.0f", k ? ", " : "", r[fs][0][k].traces_per_s);
      printf("%s%.0f", k ? " " : "", r[fs][0][k].traces_per_s);
    }
    double ce = median_cpu(r[fs][1], LINK_REPEATS),
           cp = median_cpu(r[fs][0], LINK_REPEATS);
    fprintf(f,
            "], \"ga_cpu_us_per_trace_encrypted\": %.2f, "
            "\"ga_cpu_us_per_trace_unencrypted\": %.2f}%s\n",
            ce, cp, fs ? "" : ",");
    printf(
        "\n  %-6s GlobalAgent CPU per trace: encrypted %.2f us, clear "
        "%.2f us (ratio %.3f)\n",
        "", ce, cp, cp > 0 ? ce / cp : 0);
    for (int sec = 0; sec < 2; sec++)
      for (int k = 0; k < LINK_REPEATS; k++)
        if (!r[fs][sec][k].ok) {
          ok = 0;
          printf("  FAILED (fsync %s, %s): %s\n", fs ? "on" : "off",
                 sec ? "encrypted" : "clear", r[fs][sec][k].why);
        }
  }
  fprintf(f, "}\n");
  fclose(f);
  printf("  aim: encrypted within 10%% of unencrypted (ratio >= 0.90)\n");
  printf("wrote %s\n", json);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  int link = argc > 1 && !strcmp(argv[1], "--link");
  int lat_only = argc > 1 && !strcmp(argv[1], "--latency");
  if (link || lat_only) {
    argc--;
    argv++;
  }
  const char *json =
      la_bench_out_path(argc, argv, 1,
                        link       ? "build/bench/globalagent_link.json"
                        : lat_only ? "build/bench/globalagent_latency.json"
                                   : "build/bench/globalagent.json");
  signal(SIGPIPE, SIG_IGN);
  for (const char *const *v =
           (const char *const[]){"LA_PERIOD", "LA_METRIC", "LA_AGENT",
                                 "LA_APP_ID", "LA_DISABLE", "LA_BUFFERS",
                                 "LA_COMPACT", "LA_DUMP_RAW", NULL};
       *v; v++)
    unsetenv(*v);
  if (la_auth_init() != 0 || (!lat_only && make_series() != 0)) {
    fprintf(stderr, "bench_globalagent: set-up failed\n");
    return 1;
  }
  char bin[1024];
  if (la_td_find_bin("la-globalagent", bin, sizeof bin) != 0 ||
      la_td_find_bin("la-localagent", bin, sizeof bin) != 0) {
    fprintf(stderr, "bench_globalagent: daemons not built (make bins)\n");
    return 1;
  }
  if (link) return link_main(json);
  if (lat_only) return latency_main(json);
  /* each measurement REPEATS times, interleaved; the run with the median
   * headline number is reported (the VM is noisy) */
  ingest_t inr[2][REPEATS];
  lat_t latr[2][REPEATS];
  for (int k = 0; k < REPEATS; k++) {
    ingest_run(1, 1, &inr[0][k]);
    ingest_run(0, 1, &inr[1][k]);
    latency_run(1, &latr[0][k]);
    latency_run(0, &latr[1][k]);
  }
  ingest_t in1 = median_ingest(inr[0]), in0 = median_ingest(inr[1]);
  lat_t paced = median_lat(latr[0]), busy = median_lat(latr[1]);
  FILE *f = fopen(json, "w");
  if (!f) {
    perror(json);
    return 1;
  }
  fprintf(f, "{\n");
  fprintf(f, "  \"bench\": \"globalagent\",\n");
  fprintf(f, "  \"traces_per_s\": %.0f,\n", in1.traces_per_s);
  fprintf(f, "  \"tracesets_per_s\": %.1f,\n", in1.sets_per_s);
  fprintf(f, "  \"latency_ms_p50\": %.3f,\n", paced.p50);
  fprintf(f, "  \"latency_ms_p99\": %.3f,\n", paced.p99);
  fprintf(f, "  \"ingest\": {\n");
  fprintf(f,
          "    \"configuration\": \"%d simulated LocalAgent connections "
          "= %d ranks of one application (one rank each), %d cycles, "
          "up to %d unacknowledged traces per connection, %d-element "
          "mesh series compacted polyline cv=0.1 (mean %zu bytes)\",\n",
          N_CONNS, N_CONNS, INGEST_CYCLES, WINDOW, N_ELEMENTS, series_bytes);
  fprintf(f,
          "    \"connections\": %d, \"ranks_per_set\": %d, "
          "\"traces\": %d, \"trace_bytes_mean\": %zu,\n",
          N_CONNS, N_CONNS, N_CONNS * INGEST_CYCLES, series_bytes);
  const ingest_t *ins[2] = {&in1, &in0};
  for (int i = 0; i < 2; i++)
    fprintf(f,
            "    \"fsync_%s\": {\"ok\": %s, \"seconds\": %.3f, "
            "\"traces_per_s\": %.0f, \"tracesets_per_s\": %.1f, "
            "\"commits\": %lld, \"messages_per_commit\": %.1f%s%s%s}%s\n",
            i == 0 ? "on" : "off", ins[i]->ok ? "true" : "false", ins[i]->secs,
            ins[i]->traces_per_s, ins[i]->sets_per_s, ins[i]->commits,
            ins[i]->traces_per_commit, ins[i]->ok ? "" : ", \"error\": \"",
            ins[i]->ok ? "" : ins[i]->why, ins[i]->ok ? "" : "\"",
            i == 0 ? "," : "");
  fprintf(f, "  },\n");
  fprintf(f, "  \"traces_per_s_fsync_off\": %.0f,\n", in0.traces_per_s);
  fprintf(f, "  \"tracesets_per_s_fsync_off\": %.1f,\n", in0.sets_per_s);
  lat_write_json(f, &paced, &busy);
  fprintf(f, "  \"repeats\": %d,\n  \"runs\": {", REPEATS);
  const char *rn[4] = {"traces_per_s_fsync_on", "traces_per_s_fsync_off",
                       "latency_ms_p50_paced", "latency_ms_p50_busy"};
  for (int i = 0; i < 4; i++) {
    fprintf(f, "%s\"%s\": [", i ? ", " : "", rn[i]);
    for (int k = 0; k < REPEATS; k++)
      fprintf(f, "%s%.3f", k ? ", " : "",
              i < 2 ? inr[i][k].traces_per_s : latr[i - 2][k].p50);
    fprintf(f, "]");
  }
  fprintf(f, "},\n");
  fprintf(f, "  \"latency_ms_p50_busy\": %.3f,\n", busy.p50);
  fprintf(f, "  \"latency_ms_p99_busy\": %.3f,\n", busy.p99);
  fprintf(f, "  \"aims\": {\"traces_per_s\": 5000, \"latency_ms_p50\": 10}\n");
  fprintf(f, "}\n");
  fclose(f);

  printf(
      "GlobalAgent ingest: %d connections = %d ranks of one app, %d "
      "cycles, window %d, %d-element traces (%zu bytes mean)\n",
      N_CONNS, N_CONNS, INGEST_CYCLES, WINDOW, N_ELEMENTS, series_bytes);
  printf("  %-10s %10s %12s %14s %9s %12s\n", "fsync", "seconds", "traces/s",
         "Trace-Sets/s", "commits", "msgs/commit");
  for (int i = 0; i < 2; i++) {
    if (!ins[i]->ok) {
      printf("  %-10s FAILED: %s\n", i == 0 ? "on" : "off", ins[i]->why);
      continue;
    }
    printf("  %-10s %10.3f %12.0f %14.1f %9lld %12.1f\n", i == 0 ? "on" : "off",
           ins[i]->secs, ins[i]->traces_per_s, ins[i]->sets_per_s,
           ins[i]->commits, ins[i]->traces_per_commit);
  }
  printf("  aim: >= 5,000 traces/s (fsync on: %s)\n",
         in1.ok && in1.traces_per_s >= 5000 ? "met" : "NOT met");
  lat_print(&paced, &busy);
  printf("wrote %s\n", json);
  for (int i = 0; i < N_SERIES; i++) la_compact_result_free(&series[i]);
  return in1.ok && in0.ok && paced.ok && busy.ok ? 0 : 1;
}
