/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_scale.c: one GlobalAgent under applications of 10^3, 10^4 and 10^5
 * ranks.
 *
 * For each size, REPEATS times, a fresh la-globalagent (store.fsync = yes,
 * its default durability; a shared secret, so every link is authenticated and
 * encrypted) takes the traces of one application from many simulated
 * LocalAgents (la_test_uplink.h: the real handshake and sealed frames, as
 * localagent/uplink.c sends them), each connection one node hosting a
 * contiguous block of ranks. The traces are real compactions
 * (la_compact, default polyline cv 0.1, as the LocalAgent's worker
 * produces them, la_trace_msg.h) of 10^5-element series made once: two
 * steady ones (mesh costs: plateaus, 2% noise) and two noisy ones (spikes:
 * interference on a rough baseline; white noise would not compact at all
 * and is not what a mesh's costs look like); rank r of cycle c sends series (r
 * + c) % 4 under its own rank and cycle ids. Every node sends its ranks'
 * RankStarts, then cycle after cycle its ranks' traces, keeping up to WINDOW
 * unacknowledged (the LocalAgent's log keeps them until the Ack too).
 *
 * A subscriber (libla_client, subscribed before the first trace, in its own
 * thread) receives every Trace-Set. Per size:
 *   - ingest rate: traces acknowledged (= durably stored) per second, from
 *     the first CompactTrace to the last Ack;
 *   - latency per cycle: the subscriber's CLOCK_REALTIME when
 *     la_client_next returns the complete set minus the time the last
 *     trace of that cycle was written to its socket; median and max; and
 *     the part of it up to the GlobalAgent's publish (the set's
 *     t_complete_ns, taken after the commit, before encoding it for the
 *     subscriber): the rest is encoding, the network and the client's
 *     decoding and checking of the whole set;
 *   - the GlobalAgent's peak RSS (VmHWM) and its RSS after the RankStarts,
 *     from /proc;
 *   - its CPU time (user + system) per set and per trace.
 * Sizes too large for a 2-core machine in a few minutes run fewer cycles
 * (CYCLES per size below, printed and in the JSON). LA_SCALE_RANKS (a comma
 * list, e.g. "10000") runs only those sizes; for the scaling model,
 * LA_SCALE_STEADY=1 sends only the steady series (small traces),
 * LA_SCALE_FSYNC=0 runs the store without fsync and LA_SCALE_ROBUST=0 sends
 * traces without robust weights (all three named in the JSON). By default
 * every trace carries robust weights, as a LocalAgent's do with the
 * wall-time metric: the steady mesh costs of its series' seed (the
 * interference-free baseline), compacted the same way.
 * Writes argv[1] (build/bench/scale.json) and prints a table.
 */
#include "bench_args.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_client.h"
#include "la_compact.h"
#include "la_test_daemon.h"
#include "la_time.h"
#include "la_test_uplink.h"

#define N_ELEMENTS 100000
#define N_SERIES 4
#define WINDOW 64 /* unacknowledged traces per connection */
#define WAIT_MS 60000
#define REPEATS 3 /* runs per size, in fresh daemons; medians reported */
#define PACED 3   /* cycles sent one at a time after the pipelined ones */

typedef struct size_cfg {
  uint32_t ranks, nodes, cycles;
} size_cfg_t;

static const size_cfg_t sizes[] = {
    {1000, 32, 20},
    {10000, 100, 6},
    {100000, 250, 2},
};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static la_compact_result_t series[N_SERIES];
static la_compact_result_t robust[N_SERIES]; /* series[i]'s robust weights */
static size_t series_len[N_SERIES];

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0), which it sorts. */
static double median(double *v, uint32_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* LA_SCALE_STEADY=1: every series steady. LA_SCALE_FSYNC=0: no fsync. */
static int steady_only(void) {
  const char *e = getenv("LA_SCALE_STEADY");
  return e && !strcmp(e, "1");
}
static int fsync_on(void) {
  const char *e = getenv("LA_SCALE_FSYNC");
  return !(e && !strcmp(e, "0"));
}
/* LA_SCALE_ROBUST=0: traces without robust weights. */
static int robust_on(void) {
  const char *e = getenv("LA_SCALE_ROBUST");
  return !(e && !strcmp(e, "0"));
}

/* The four series, compacted once: 0 and 2 steady, 1 and 3 noisy; each
 * one's robust weights are the steady mesh costs of its seed. */
static int make_series(void) {
  double *x = malloc(N_ELEMENTS * sizeof *x);
  if (!x) return -1;
  for (int i = 0; i < N_SERIES; i++) {
    int kind = i % 2 && !steady_only() ? LA_SYNTH_SPIKES : LA_SYNTH_MESH;
    if (la_compact_synth(kind, N_ELEMENTS, 7000 + (uint64_t)i, x) ||
        la_compact(x, N_ELEMENTS, NULL, &series[i]) ||
        la_compact_synth(LA_SYNTH_MESH, N_ELEMENTS, 7000 + (uint64_t)i, x) ||
        la_compact(x, N_ELEMENTS, NULL, &robust[i])) {
      free(x);
      return -1;
    }
    series_len[i] = series[i].len + (robust_on() ? robust[i].len : 0);
  }
  free(x);
  return 0;
}

/* ----------------------------------------------------------- subscriber -- */

typedef struct sub {
  la_client_t *c;
  uint32_t cycles, nprocs;
  uint64_t *recv_ns; /* per cycle, 0 until its complete set arrived */
  uint64_t *pub_ns;  /* per cycle: when the GlobalAgent published it */
  uint32_t got, bad, notices;
  char why[300];
} sub_t;

static void *sub_main(void *arg) {
  sub_t *s = arg;
  while (s->got < s->cycles) {
    la_traceset_t *t = NULL;
    int rc = la_client_next(s->c, WAIT_MS * 2, &t);
    uint64_t now = la_realtime_ns();
    if (rc == LA_ELIMIT) { /* a set it will not get, and why: go on */
      s->notices++;
      snprintf(s->why, sizeof s->why, "notice: %s", la_client_error(s->c));
      continue;
    }
    if (rc) {
      snprintf(s->why, sizeof s->why, "subscriber: %s", la_client_error(s->c));
      break;
    }
    uint64_t c = la_traceset_cycle(t);
    if (c < s->cycles && la_traceset_complete(t) &&
        la_traceset_nprocs(t) == s->nprocs && !s->recv_ns[c]) {
      s->pub_ns[c] = la_traceset_time_ns(t);
      __atomic_store_n(&s->recv_ns[c], now, __ATOMIC_RELEASE);
      s->got++;
    } else {
      s->bad++;
    }
    la_traceset_free(t);
  }
  return NULL;
}

/* CPU seconds (user + system) this process has used so far. */
static double self_cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
         (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* CPU seconds thread th has used so far (0 when unknown). */
static double thread_cpu_seconds(pthread_t th) {
  clockid_t id;
  struct timespec ts;
  if (pthread_getcpuclockid(th, &id) || clock_gettime(id, &ts)) return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ run -- */

typedef struct result {
  int ok;
  size_cfg_t cfg;
  double secs, traces_per_s;
  double lat_median_ms, lat_max_ms;
  double pub_median_ms; /* to the GlobalAgent's publish (t_complete_ns) */
  double paced_median_ms, paced_pub_median_ms; /* the same, paced cycles */
  double rss_peak_mib, rss_base_mib;
  double cpu_per_set_ms, cpu_per_trace_us;
  double loop_cpu_per_trace_us; /* the GlobalAgent's loop thread alone */
  double gen_cpu_per_trace_us;  /* this process: senders and subscriber */
  double sub_cpu_per_trace_us;  /* the subscriber's thread alone */
  double written_per_trace;     /* the GlobalAgent's bytes written (wchar) */
  double disk_per_trace;        /* of them sent to the disk (write_bytes) */
  double set_bytes;       /* the complete set's size on the wire (approx.) */
  double store_per_trace; /* store file bytes per trace, after its stop */
  long long sets_complete, traces, commits;
  double runs_per_s[REPEATS]; /* every run's traces/s */
  char why[400];
} result_t;

/* One node: its connection, block of ranks and the frames it sends next. */
typedef struct node {
  la_tu_conn_t l;
  uint32_t first, n; /* ranks first..first+n */
  uint32_t cycle;    /* the first cycle of b */
  la_tu_batch_t b;   /* its ranks' traces of cycles cycle..limit, in order */
  uint64_t seq0;     /* the sequence number before b's first frame */
  uint32_t sent;     /* b's frames written */
  size_t off;        /* b's bytes written */
} node_t;

/* Builds and seals every node's traces of cycles nd->cycle..limit ahead of
 * their sending (what a LocalAgent does before it writes is not what the
 * GlobalAgent is measured on). 0, or -1 with the reason in why. */
static int prepare_cycles(node_t *nd, uint32_t C, const char *app,
                          uint32_t limit, char *why, size_t why_len) {
  const la_compact_result_t *rob = robust_on() ? robust : NULL;
  for (uint32_t i = 0; i < C; i++) {
    node_t *k = &nd[i];
    la_tu_batch_reset(&k->b);
    k->seq0 = k->l.seq;
    k->sent = 0;
    k->off = 0;
    for (uint32_t c = k->cycle; c < limit; c++)
      for (uint32_t j = 0; j < k->n; j++) {
        uint32_t rank = k->first + j;
        if (la_tu_batch_trace(&k->l, &k->b, app, rank, c, N_ELEMENTS,
                              &series[(rank + c) % N_SERIES],
                              rob ? &rob[(rank + c) % N_SERIES] : NULL)) {
          snprintf(why, why_len, "no memory for the frames of %u", i);
          return -1;
        }
      }
  }
  return 0;
}

/* Writes what node k may send now: its frames up to WINDOW unacknowledged,
 * as many bytes as the socket takes; a frame that completes a cycle of the
 * node sets last_ns[its cycle] to now when later. 1 when more is allowed
 * than the socket took (wait for POLLOUT), 0 when not, -1 on an error. */
static int write_some(node_t *k, uint64_t *last_ns) {
  uint64_t acked = k->l.acked > k->seq0 ? k->l.acked - k->seq0 : 0;
  uint64_t allowed = acked + WINDOW < k->b.n ? acked + WINDOW : k->b.n;
  if (k->sent >= allowed) return 0;
  size_t to = k->b.end[allowed - 1];
  ssize_t w =
      send(k->l.fd, k->b.p + k->off, to - k->off, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (w < 0) return errno == EAGAIN || errno == EINTR ? 1 : -1;
  k->off += (size_t)w;
  uint64_t now = 0;
  while (k->sent < k->b.n && k->b.end[k->sent] <= k->off) {
    if (k->sent % k->n == k->n - 1) { /* the node's last rank of a cycle */
      uint32_t c = k->cycle + k->sent / k->n;
      if (!now) now = la_realtime_ns();
      if (now > last_ns[c]) last_ns[c] = now;
    }
    k->sent++;
  }
  k->l.seq = k->seq0 + k->sent;
  return k->off < to;
}

/* Every node sends its prepared frames (prepare_cycles), with up to WINDOW
 * unacknowledged, until all are acknowledged; last_ns[c] gets the time the
 * last trace of cycle c was written. 0, or -1 with the reason in why. */
static int send_cycles(node_t *nd, uint32_t C, uint32_t limit,
                       uint64_t *last_ns, char *why, size_t why_len) {
  struct pollfd *pf = calloc(C, sizeof *pf);
  uint64_t deadline = la_now_ms() + 20u * 60u * 1000u;
  uint32_t done_nodes = 0;
  int rc = -1;
  if (!pf) {
    snprintf(why, why_len, "no memory");
    return -1;
  }
  for (uint32_t i = 0; i < C; i++) nd[i].l.seq = nd[i].seq0;
  while (done_nodes < C) {
    for (uint32_t i = 0; i < C; i++) {
      int more = write_some(&nd[i], last_ns);
      if (more < 0) {
        snprintf(why, why_len, "send on %u failed: %s", i, strerror(errno));
        goto out;
      }
      pf[i].fd = nd[i].l.fd;
      pf[i].events = POLLIN | (more ? POLLOUT : 0);
      pf[i].revents = 0;
    }
    int n = poll(pf, C, 1000);
    if (n < 0 && errno != EINTR) {
      snprintf(why, why_len, "poll: %s", strerror(errno));
      goto out;
    }
    done_nodes = 0;
    for (uint32_t i = 0; i < C; i++) {
      if ((pf[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
          la_tu_read_acks(&nd[i].l)) {
        snprintf(why, why_len, "connection %u closed", i);
        goto out;
      }
      done_nodes += nd[i].sent == nd[i].b.n && nd[i].l.acked == nd[i].l.seq;
    }
    if (la_now_ms() > deadline) {
      snprintf(why, why_len, "not done in 20 minutes");
      goto out;
    }
  }
  for (uint32_t i = 0; i < C; i++) nd[i].cycle = limit;
  rc = 0;
out:
  free(pf);
  return rc;
}

static void run(const size_cfg_t *cfg, result_t *out) {
  la_tu_ga_t g;
  la_auth_key_t key;
  char why[256], host[32];
  const char *app = "bench-scale";
  uint32_t C = cfg->nodes, R = cfg->ranks;
  node_t *nd = calloc(C, sizeof *nd);
  uint32_t all = cfg->cycles + PACED;
  uint64_t *last_ns = calloc(all, sizeof *last_ns);
  sub_t sub = {.cycles = all, .nprocs = R};
  sub.recv_ns = calloc(all, sizeof *sub.recv_ns);
  sub.pub_ns = calloc(all, sizeof *sub.pub_ns);
  pthread_t th;
  int th_started = 0;
  memset(out, 0, sizeof *out);
  memset(&key, 0, sizeof key);
  out->cfg = *cfg;
  if (!nd || !last_ns || !sub.recv_ns || !sub.pub_ns) {
    snprintf(out->why, sizeof out->why, "no memory");
    goto done;
  }
  for (uint32_t i = 0; i < C; i++) la_tu_init(&nd[i].l, 1);
  /* the client's defaults: sets of R traces arrive in parts; the feed's
   * queue holds two sets of 10^4 ranks (43 MB each: sets closed back to
   * back queue behind the one being sent; beyond feed.queue_bytes the
   * subscriber gets a SetNotice instead, counted here) */
  const char *extra[] = {"--agents.max_connections=4096",
                         "--feed.queue_bytes=1G", NULL};
  if (la_tu_ga_start(&g, fsync_on(), 1, extra, WAIT_MS) != 0) {
    snprintf(out->why, sizeof out->why, "la-globalagent did not start");
    goto done;
  }
  if (la_auth_load_key(g.key, &key, why, sizeof why) != 0) {
    snprintf(out->why, sizeof out->why, "key: %s", why);
    goto done;
  }
  if (la_client_connect(g.feed_addr, WAIT_MS, &sub.c) != 0 ||
      la_client_subscribe(sub.c, app, 0) != 0) {
    snprintf(out->why, sizeof out->why, "subscribe failed");
    goto done;
  }
  la_client_rows_t *rows = NULL; /* a round trip: the Subscribe is in */
  if (la_client_list(sub.c, "apps", NULL, &rows) == 0)
    la_client_rows_free(rows);
  size_t cap = 4096;
  for (int i = 0; i < N_SERIES; i++)
    if (series_len[i] + 4096 > cap) cap = series_len[i] + 4096;
  for (uint32_t i = 0; i < C; i++) {
    nd[i].first = (uint32_t)((uint64_t)R * i / C);
    nd[i].n = (uint32_t)((uint64_t)R * (i + 1) / C) - nd[i].first;
    snprintf(host, sizeof host, "node-%04u", i);
    if (la_tu_open(&nd[i].l, g.agents_port, &key, host, cap, WAIT_MS) != 0) {
      snprintf(out->why, sizeof out->why, "connection %u refused", i);
      goto done;
    }
    for (uint32_t k = 0; k < nd[i].n; k++) {
      if (la_tu_send_rank_start(&nd[i].l, app, nd[i].first + k, R, N_ELEMENTS,
                                host, WAIT_MS)) {
        snprintf(out->why, sizeof out->why, "RankStart on %u failed", i);
        goto done;
      }
    }
  }
  for (uint32_t i = 0; i < C; i++) /* every RankStart acknowledged */
    if (la_tu_wait_acked(&nd[i].l, WAIT_MS)) {
      snprintf(out->why, sizeof out->why, "no Ack for RankStarts on %u", i);
      goto done;
    }
  pid_t pid = la_td_pid(g.d);
  out->rss_base_mib = (double)la_tu_proc_kib(pid, "VmRSS") / 1024.0;
  if (prepare_cycles(nd, C, app, cfg->cycles, out->why, sizeof out->why))
    goto done;
  if (pthread_create(&th, NULL, sub_main, &sub) != 0) {
    snprintf(out->why, sizeof out->why, "no thread");
    goto done;
  }
  th_started = 1;
  double cpu0 = la_td_cpu_seconds(pid);
  double loop0 = la_td_main_thread_cpu_seconds(pid), gen0 = self_cpu_seconds();
  double sub0 = thread_cpu_seconds(th);
  /* bytes written (write, pwrite: page cache and sockets) */
  long long wr0 = la_tu_proc_field(pid, "io", "wchar");
  /* of them the bytes the kernel sent (or will send) to the disk */
  long long dk0 = la_tu_proc_field(pid, "io", "write_bytes");
  uint64_t t0 = la_mono_ns();
  if (send_cycles(nd, C, cfg->cycles, last_ns, out->why, sizeof out->why))
    goto done;
  out->secs = (double)(la_mono_ns() - t0) / 1e9;
  double cpu = la_td_cpu_seconds(pid) - cpu0;
  double loop = la_td_main_thread_cpu_seconds(pid) - loop0;
  double gen = self_cpu_seconds() - gen0;
  double subcpu = thread_cpu_seconds(th) - sub0;
  double wr = (double)(la_tu_proc_field(pid, "io", "wchar") - wr0);
  double dk = (double)(la_tu_proc_field(pid, "io", "write_bytes") - dk0);
  out->commits = la_td_status_ll(g.d, "commits"); /* the pipelined ones */
  /* paced: one cycle at a time, the next once its set arrived */
  for (uint32_t p = 0; p < PACED; p++) {
    uint32_t c = cfg->cycles + p;
    if (prepare_cycles(nd, C, app, c + 1, out->why, sizeof out->why) ||
        send_cycles(nd, C, c + 1, last_ns, out->why, sizeof out->why))
      goto done;
    uint64_t end = la_now_ms() + WAIT_MS * 2;
    while (!__atomic_load_n(&sub.recv_ns[c], __ATOMIC_ACQUIRE) &&
           la_now_ms() < end) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  pthread_join(th, NULL);
  th_started = 0;
  out->rss_peak_mib = (double)la_tu_proc_kib(pid, "VmHWM") / 1024.0;
  out->traces = la_td_status_ll(g.d, "traces_stored");
  out->sets_complete = la_td_status_ll(g.d, "sets_complete");
  out->traces_per_s = (double)R * cfg->cycles / out->secs;
  char dbp[600];
  struct stat sb;
  double fb = 0;
  la_td_stop(g.d, WAIT_MS); /* it checkpoints the WAL into the file */
  la_td_path(g.d, "la.db", dbp, sizeof dbp);
  if (stat(dbp, &sb) == 0) fb += (double)sb.st_size;
  la_td_path(g.d, "la.db-wal", dbp, sizeof dbp);
  if (stat(dbp, &sb) == 0) fb += (double)sb.st_size;
  out->store_per_trace = fb / ((double)R * (cfg->cycles + PACED));
  out->cpu_per_set_ms = cpu * 1e3 / cfg->cycles;
  out->cpu_per_trace_us = cpu * 1e6 / ((double)R * cfg->cycles);
  out->loop_cpu_per_trace_us = loop * 1e6 / ((double)R * cfg->cycles);
  out->gen_cpu_per_trace_us = gen * 1e6 / ((double)R * cfg->cycles);
  out->sub_cpu_per_trace_us = subcpu * 1e6 / ((double)R * cfg->cycles);
  out->written_per_trace = wr0 < 0 ? 0 : wr / ((double)R * cfg->cycles);
  out->disk_per_trace = dk0 < 0 ? 0 : dk / ((double)R * cfg->cycles);
  size_t total = 0;
  for (int i = 0; i < N_SERIES; i++) total += series_len[i];
  out->set_bytes = (double)R * ((double)total / N_SERIES + 120);
  if (sub.got < all) {
    snprintf(out->why, sizeof out->why,
             "%u of %u sets received (%u other, %u notices)%s%s", sub.got, all,
             sub.bad, sub.notices, sub.why[0] ? ": " : "", sub.why);
    goto done;
  }
  double *lat = calloc(all, sizeof *lat);
  if (!lat) goto done;
  for (uint32_t c = 0; c < all; c++)
    lat[c] = ((double)sub.pub_ns[c] - (double)last_ns[c]) / 1e6;
  out->pub_median_ms = median(lat, cfg->cycles);
  out->paced_pub_median_ms = median(lat + cfg->cycles, PACED);
  for (uint32_t c = 0; c < all; c++)
    lat[c] = ((double)sub.recv_ns[c] - (double)last_ns[c]) / 1e6;
  out->lat_median_ms = median(lat, cfg->cycles);
  out->lat_max_ms = lat[cfg->cycles - 1];
  out->paced_median_ms = median(lat + cfg->cycles, PACED);
  free(lat);
  if (out->traces != (long long)((uint64_t)R * all) ||
      out->sets_complete != (long long)all)
    snprintf(out->why, sizeof out->why,
             "stored %lld traces, %lld complete sets; expected %llu and %u",
             out->traces, out->sets_complete, (unsigned long long)R * all, all);
  else
    out->ok = 1;
done:
  for (uint32_t i = 0; nd && i < C; i++) {
    la_tu_close(&nd[i].l);
    la_tu_batch_free(&nd[i].b);
  }
  if (th_started) { /* a failure: the subscriber's connection ends it */
    la_td_free(g.d);
    g.d = NULL;
    pthread_join(th, NULL);
  }
  la_client_close(sub.c);
  la_auth_key_wipe(&key);
  la_td_free(g.d);
  free(nd);
  free(last_ns);
  free(sub.recv_ns);
  free(sub.pub_ns);
}

/* The median over the runs rr[0..REPEATS) of the double at offset off. */
static double median_at(const result_t *rr, size_t off) {
  double v[REPEATS];
  for (int k = 0; k < REPEATS; k++)
    memcpy(&v[k], (const char *)&rr[k] + off, sizeof v[k]);
  return median(v, REPEATS);
}

/* The measurements a run's result reports as the median over the runs. */
static const size_t median_fields[] = {
    offsetof(result_t, secs),
    offsetof(result_t, traces_per_s),
    offsetof(result_t, lat_median_ms),
    offsetof(result_t, lat_max_ms),
    offsetof(result_t, pub_median_ms),
    offsetof(result_t, paced_median_ms),
    offsetof(result_t, paced_pub_median_ms),
    offsetof(result_t, rss_peak_mib),
    offsetof(result_t, rss_base_mib),
    offsetof(result_t, cpu_per_set_ms),
    offsetof(result_t, cpu_per_trace_us),
    offsetof(result_t, loop_cpu_per_trace_us),
    offsetof(result_t, gen_cpu_per_trace_us),
    offsetof(result_t, sub_cpu_per_trace_us),
    offsetof(result_t, store_per_trace),
    offsetof(result_t, written_per_trace),
    offsetof(result_t, disk_per_trace),
};

/* *m = the runs rr with every measurement their median (a failed run is
 * reported instead). */
static void median_result(const result_t *rr, result_t *m) {
  for (int k = 0; k < REPEATS; k++)
    if (!rr[k].ok) {
      *m = rr[k];
      return;
    }
  *m = rr[0];
  for (size_t i = 0; i < sizeof median_fields / sizeof median_fields[0]; i++) {
    double v = median_at(rr, median_fields[i]);
    memcpy((char *)m + median_fields[i], &v, sizeof v);
  }
  for (int k = 0; k < REPEATS; k++) m->runs_per_s[k] = rr[k].traces_per_s;
}

/* Whether LA_SCALE_RANKS (unset: every size) names ranks. */
static int wanted(uint32_t ranks) {
  const char *e = getenv("LA_SCALE_RANKS");
  if (!e || !*e) return 1;
  for (const char *p = e; *p;) {
    char *end;
    unsigned long v = strtoul(p, &end, 10);
    if (end == p) return 0;
    if (v == ranks) return 1;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return 0;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *json = la_bench_out_path(argc, argv, 1, "build/bench/scale.json");
  char bin[512];
  if (la_td_find_bin("la-globalagent", bin, sizeof bin) != 0) {
    fprintf(stderr, "bench_scale: la-globalagent not built\n");
    return 1;
  }
  if (la_auth_init() != 0 || make_series() != 0) {
    fprintf(stderr, "bench_scale: cannot make the series\n");
    return 1;
  }
  result_t r[N_SIZES];
  int ran[N_SIZES] = {0}, ok = 1;
  for (size_t i = 0; i < N_SIZES; i++) {
    if (!wanted(sizes[i].ranks)) continue;
    fprintf(stderr, "bench_scale: %u ranks on %u nodes, %u cycles...\n",
            sizes[i].ranks, sizes[i].nodes, sizes[i].cycles);
    result_t rr[REPEATS];
    for (int k = 0; k < REPEATS; k++) run(&sizes[i], &rr[k]);
    median_result(rr, &r[i]);
    ran[i] = 1;
    if (!r[i].ok) {
      ok = 0;
      fprintf(stderr, "bench_scale: %u ranks: %s\n", sizes[i].ranks, r[i].why);
    }
  }
  FILE *f = fopen(json, "w");
  if (!f) {
    perror(json);
    return 1;
  }
  printf(
      "GlobalAgent at scale: one application, store.fsync = %s, "
      "encrypted links, %d-element traces (%zu, %zu, %zu, %zu bytes: "
      "steady, %s; %s), window %d per node; %ld cores; median of %d runs\n",
      fsync_on() ? "yes" : "no", N_ELEMENTS, series_len[0], series_len[1],
      series_len[2], series_len[3], steady_only() ? "steady" : "noisy",
      robust_on() ? "with robust weights" : "no robust weights", WINDOW,
      sysconf(_SC_NPROCESSORS_ONLN), REPEATS);
  printf(
      "  latency ms = last trace of a cycle -> the set published by the "
      "GlobalAgent (pub) / received and checked by the subscriber (recv); "
      "pipelined cycles, then %d paced ones\n",
      PACED);
  printf(
      "  CPU/tr us: the GlobalAgent's CPU per trace (all threads), loop: its "
      "event loop's thread alone, gen: this load generator's (senders, whose "
      "frames are built and sealed before the timing, and subscriber), sub: "
      "its subscriber alone (it decodes and checks every set); wr KB/tr: "
      "the GlobalAgent's bytes written per trace (its store, WAL and "
      "checkpoints, and the sets sent to the subscriber), disk KB/tr: of "
      "them the bytes sent to the disk (/proc/PID/io write_bytes: the WAL "
      "and the checkpoints)\n");
  printf(
      "  %7s %5s %6s %9s %9s %8s %8s %8s %8s %8s %8s %10s %9s %7s %7s "
      "%7s %9s %9s\n",
      "ranks", "nodes", "cycles", "traces/s", "tr/commit", "pub", "recv",
      "pacedpub", "pacedrcv", "RSS MiB", "base MiB", "CPU/set ms", "CPU/tr us",
      "loop", "gen", "sub", "wr KB/tr", "disk KB/tr");
  fprintf(f,
          "{\n  \"bench\": \"scale\",\n  \"elements\": %d,\n  \"window\": %d,\n"
          "  \"fsync\": %s,\n  \"steady_only\": %s,\n  \"robust\": %s,\n"
          "  \"repeats\": %d,\n"
          "  \"cores\": %ld,\n"
          "  \"series_bytes\": [%zu, %zu, %zu, %zu],\n  \"sizes\": [\n",
          N_ELEMENTS, WINDOW, fsync_on() ? "true" : "false",
          steady_only() ? "true" : "false", robust_on() ? "true" : "false",
          REPEATS, sysconf(_SC_NPROCESSORS_ONLN), series_len[0], series_len[1],
          series_len[2], series_len[3]);
  int first = 1;
  for (size_t i = 0; i < N_SIZES; i++) {
    if (!ran[i]) continue;
    const result_t *x = &r[i];
    if (x->ok)
      printf(
          "  %7u %5u %6u %9.0f %9.0f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f "
          "%10.1f %9.2f %7.2f %7.2f %7.2f %9.1f %9.1f\n",
          x->cfg.ranks, x->cfg.nodes, x->cfg.cycles, x->traces_per_s,
          x->commits > 0
              ? (double)x->cfg.ranks * x->cfg.cycles / (double)x->commits
              : 0,
          x->pub_median_ms, x->lat_median_ms, x->paced_pub_median_ms,
          x->paced_median_ms, x->rss_peak_mib, x->rss_base_mib,
          x->cpu_per_set_ms, x->cpu_per_trace_us, x->loop_cpu_per_trace_us,
          x->gen_cpu_per_trace_us, x->sub_cpu_per_trace_us,
          x->written_per_trace / 1e3, x->disk_per_trace / 1e3);
    else
      printf("  %7u %5u %6u  FAILED: %s\n", x->cfg.ranks, x->cfg.nodes,
             x->cfg.cycles, x->why);
    fprintf(f,
            "%s    {\"ranks\": %u, \"nodes\": %u, \"cycles\": %u, \"ok\": %s, "
            "\"traces_per_s\": %.0f, \"secs\": %.3f, \"commits\": %lld, "
            "\"published_median_ms\": %.2f, \"latency_median_ms\": %.2f, "
            "\"paced_published_median_ms\": %.2f, "
            "\"paced_latency_median_ms\": %.2f, \"paced_cycles\": %d, "
            "\"latency_max_ms\": %.2f, "
            "\"rss_peak_mib\": %.1f, \"rss_after_rank_starts_mib\": %.1f, "
            "\"cpu_per_set_ms\": %.2f, \"cpu_per_trace_us\": %.3f, "
            "\"loop_cpu_per_trace_us\": %.3f, \"gen_cpu_per_trace_us\": %.3f, "
            "\"subscriber_cpu_per_trace_us\": %.3f, "
            "\"set_bytes_approx\": %.0f, \"store_bytes_per_trace\": %.0f, "
            "\"written_bytes_per_trace\": %.0f, "
            "\"disk_written_bytes_per_trace\": %.0f, "
            "\"runs_traces_per_s\": [%.0f, %.0f, "
            "%.0f], "
            "\"error\": \"%s\"}",
            first ? "" : ",\n", x->cfg.ranks, x->cfg.nodes, x->cfg.cycles,
            x->ok ? "true" : "false", x->traces_per_s, x->secs, x->commits,
            x->pub_median_ms, x->lat_median_ms, x->paced_pub_median_ms,
            x->paced_median_ms, PACED, x->lat_max_ms, x->rss_peak_mib,
            x->rss_base_mib, x->cpu_per_set_ms, x->cpu_per_trace_us,
            x->loop_cpu_per_trace_us, x->gen_cpu_per_trace_us,
            x->sub_cpu_per_trace_us, x->set_bytes, x->store_per_trace,
            x->written_per_trace, x->disk_per_trace, x->runs_per_s[0], x->runs_per_s[1],
            x->runs_per_s[2], x->ok ? "" : x->why);
    first = 0;
  }
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
  for (int i = 0; i < N_SERIES; i++) {
    la_compact_result_free(&series[i]);
    la_compact_result_free(&robust[i]);
  }
  return ok ? 0 : 1;
}
