/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_shards.c: throughput of 1, 2 and 4 GlobalAgent shards writing into
 * one PostgreSQL database (docs/sharding.md), on this machine.
 *
 * Starts a throw-away PostgreSQL server (tests/support/la_test_pg.h, fsync
 * on: a commit is durable, as in production), then for each shard count
 * S starts S la-globalagent daemons with the same store.url and secret.
 * 64 simulated LocalAgent connections (this process, one poll loop, the
 * encrypted uplinks of la_test_uplink.h) play 8 applications of 8 ranks; every
 * connection goes to the shard its application hashes to (the LocalAgent's
 * rule: FNV-1a of the id modulo S), and the applications are named so that
 * they spread evenly over the shards. Each connection sends CompactTraces
 * (real la_compact outputs of 10^5-element series) keeping WINDOW
 * unacknowledged. Measured from the first trace to the last Ack: traces/s
 * durably stored (each run's count is checked in the database, as is every
 * set's completeness). REPEATS runs per shard count, interleaved, fresh
 * database each; medians reported. Writes argv[1]
 * (build/bench/shards.json) and prints a table.
 */
#include "bench_args.h"
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_auth.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_secure_io.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_pg.h"
#include "la_test_uplink.h"
#include "la_trace_msg.h"

#define N_ELEMENTS 100000
#define N_APPS 8
#define N_RANKS 8
#define N_CONNS (N_APPS * N_RANKS)
#define N_SERIES 16
#define CYCLES 100 /* per connection */
#define WINDOW 16
#define REPEATS 3
#define MAX_SHARDS 4
#define WAIT_MS 60000

static const int shard_counts[] = {1, 2, 4};
#define N_COUNTS ((int)(sizeof shard_counts / sizeof *shard_counts))

static la_compact_result_t series[N_SERIES];

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int home(const char *id, int n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = id; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
  return (int)(h % (uint64_t)n);
}

typedef struct {
  la_tu_conn_t c; /* a LocalAgent's uplink (la_test_uplink.h) */
  int app, rank, next;
} link_t;

typedef struct {
  double secs, rate;
  long long stored, complete;
  char why[300];
} run_t;

/* One shard's daemon (la_tu_ga_start with the shared store and secret);
 * its agents port into *port. */
static la_test_daemon_t *start_shard(const char *url, const char *key,
                                     uint16_t *port) {
  char u[700], k[700];
  snprintf(u, sizeof u, "--store.url=%s", url);
  snprintf(k, sizeof k, "--agents.secret_file=%s", key);
  const char *extra[] = {u, k, NULL};
  la_tu_ga_t g;
  if (la_tu_ga_start(&g, 1, 0, extra, WAIT_MS) != 0) {
    la_td_free(g.d);
    return NULL;
  }
  *port = g.agents_port;
  return g.d;
}

/* The largest frame a link sends: a trace of the largest series. */
static size_t frame_cap(void) {
  size_t cap = 1 << 16;
  for (int i = 0; i < N_SERIES; i++)
    if (series[i].len + 4096 > cap) cap = series[i].len + 4096;
  return cap;
}

static void run_shards(la_test_pg_t *pg, int nshards, int rep, run_t *out) {
  la_test_daemon_t *d[MAX_SHARDS] = {0};
  uint16_t port[MAX_SHARDS];
  link_t l[N_CONNS];
  char url[400], db[32], key[600], why[200], apps[N_APPS][32];
  la_auth_key_t k;
  int have_key = 0;
  memset(out, 0, sizeof *out);
  memset(l, 0, sizeof l);
  for (int i = 0; i < N_CONNS; i++) la_tu_init(&l[i].c, 1);
  snprintf(db, sizeof db, "bench_%d_%d", nshards, rep);
  if (la_test_pg_createdb(pg, db, url, sizeof url, why, sizeof why)) {
    snprintf(out->why, sizeof out->why, "%s", why);
    return;
  }
  snprintf(key, sizeof key, "%s/bench-secret", la_test_pg_dir(pg));
  unlink(key); /* the previous run's */
  if (la_auth_generate_secret_file(key, why, sizeof why) ||
      la_auth_load_key(key, &k, why, sizeof why)) {
    snprintf(out->why, sizeof out->why, "secret: %s", why);
    return;
  }
  have_key = 1;
  for (int s = 0; s < nshards; s++)
    if (!(d[s] = start_shard(url, key, &port[s]))) {
      snprintf(out->why, sizeof out->why, "shard %d did not start", s);
      goto done;
    }
  /* application j homes on shard j % nshards */
  for (int j = 0, i = 0; j < N_APPS; i++) {
    snprintf(apps[j], sizeof apps[j], "bench-%d", i);
    if (home(apps[j], nshards) == j % nshards) j++;
  }
  for (int i = 0; i < N_CONNS; i++) {
    link_t *c = &l[i];
    char host[32];
    c->app = i / N_RANKS;
    c->rank = i % N_RANKS;
    snprintf(host, sizeof host, "sim-%02d", i);
    if (la_tu_open(&c->c, port[home(apps[c->app], nshards)], &k, host,
                   frame_cap(), 5000)) {
      snprintf(out->why, sizeof out->why, "connection %d refused", i);
      goto done;
    }
    if (la_tu_send_rank_start(&c->c, apps[c->app], (uint32_t)c->rank, N_RANKS,
                              N_ELEMENTS, host, WAIT_MS) ||
        la_tu_wait_acked(&c->c, WAIT_MS)) {
      snprintf(out->why, sizeof out->why, "RankStart %d not acknowledged", i);
      goto done;
    }
  }
  struct pollfd pf[N_CONNS];
  uint64_t t0 = mono_ns();
  for (int busy = 1; busy;) {
    busy = 0;
    for (int i = 0; i < N_CONNS; i++) {
      link_t *c = &l[i];
      while (c->next < CYCLES && c->c.seq - c->c.acked < WINDOW) {
        const la_compact_result_t *r =
            &series[(unsigned)(c->rank + c->next) % N_SERIES];
        if (la_tu_send_trace(&c->c, apps[c->app], (uint32_t)c->rank,
                             (uint64_t)c->next++, N_ELEMENTS, r, WAIT_MS)) {
          snprintf(out->why, sizeof out->why, "send on %d failed", i);
          goto done;
        }
      }
      busy |= c->next < CYCLES || c->c.acked < c->c.seq;
      pf[i] = (struct pollfd){c->c.fd, POLLIN, 0};
    }
    if (!busy) break;
    if (poll(pf, N_CONNS, WAIT_MS) <= 0) {
      snprintf(out->why, sizeof out->why, "no Ack within %d ms", WAIT_MS);
      goto done;
    }
    for (int i = 0; i < N_CONNS; i++)
      if (pf[i].revents && la_tu_read_acks(&l[i].c)) {
        snprintf(out->why, sizeof out->why, "connection %d closed", i);
        goto done;
      }
  }
  out->secs = (double)(mono_ns() - t0) / 1e9;
  out->rate = (double)N_CONNS * CYCLES / out->secs;
  out->stored = la_test_pg_value(url, "SELECT count(*) FROM traces");
  out->complete = la_test_pg_value(
      url, "SELECT count(*) FROM trace_sets WHERE closed = 1 AND complete = 1");
  if (out->stored != (long long)N_CONNS * CYCLES ||
      out->complete != (long long)N_APPS * CYCLES)
    snprintf(out->why, sizeof out->why,
             "stored %lld traces, %lld complete sets; expected %d and %d",
             out->stored, out->complete, N_CONNS * CYCLES, N_APPS * CYCLES);
done:
  for (int i = 0; i < N_CONNS; i++) la_tu_close(&l[i].c);
  for (int s = 0; s < nshards; s++) la_td_free(d[s]);
  if (have_key) la_auth_key_wipe(&k);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const char *json =
      la_bench_out_path(argc, argv, 1, "build/bench/shards.json");
  char why[2000];
  if (la_auth_init() != 0) return 1;
  double *x = malloc(N_ELEMENTS * sizeof *x);
  for (int i = 0; x && i < N_SERIES; i++)
    if (la_compact_synth(LA_SYNTH_MESH, N_ELEMENTS, 1000 + (uint64_t)i, x) ||
        la_compact(x, N_ELEMENTS, NULL, &series[i]))
      return 1;
  free(x);
  la_test_pg_t *pg = NULL;
  int r = la_test_pg_start(LA_TEST_PG_FSYNC, &pg, why, sizeof why);
  if (r) {
    fprintf(stderr, "bench_shards: %s\n", why);
    return r == 1 ? 0 : 1;
  }
  run_t runs[N_COUNTS][REPEATS];
  int bad = 0;
  for (int rep = 0; rep < REPEATS; rep++)
    for (int c = 0; c < N_COUNTS; c++) {
      run_shards(pg, shard_counts[c], rep, &runs[c][rep]);
      if (runs[c][rep].why[0]) {
        fprintf(stderr, "bench_shards: %d shards, run %d: %s\n",
                shard_counts[c], rep, runs[c][rep].why);
        bad = 1;
      }
    }
  la_test_pg_stop(pg);
  FILE *f = la_bench_open_out(json);
  if (!f) return 1;
  fprintf(f,
          "{\n  \"benchmark\": \"shards\",\n  \"connections\": %d,\n"
          "  \"applications\": %d,\n  \"traces_per_run\": %d,\n"
          "  \"elements_per_trace\": %d,\n  \"postgresql_fsync\": true,\n"
          "  \"repeats\": %d,\n  \"results\": [\n",
          N_CONNS, N_APPS, N_CONNS * CYCLES, N_ELEMENTS, REPEATS);
  printf("%-8s %16s   runs (traces/s)\n", "shards", "median traces/s");
  for (int c = 0; c < N_COUNTS; c++) {
    double v[REPEATS];
    for (int k = 0; k < REPEATS; k++) v[k] = runs[c][k].rate;
    qsort(v, REPEATS, sizeof *v, cmp_double);
    double med = v[REPEATS / 2];
    printf("%-8d %16.0f  ", shard_counts[c], med);
    fprintf(f,
            "    {\"shards\": %d, \"traces_per_s_median\": %.1f, \"runs\": [",
            shard_counts[c], med);
    for (int k = 0; k < REPEATS; k++) {
      printf(" %.0f", runs[c][k].rate);
      fprintf(f, "%s%.1f", k ? ", " : "", runs[c][k].rate);
    }
    printf("\n");
    fprintf(f, "]}%s\n", c + 1 < N_COUNTS ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
  return bad;
}
