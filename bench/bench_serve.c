/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_serve.c: what the live view and the static grid picture cost on
 * large sets (make bench-serve).
 *
 * 1. `lactl serve`'s element map (lactl_sv_map_of, the reduction the
 *    page's /api/map answers) of synthetic Trace-Sets of R ranks x E
 *    elements, elements by global index, reduced to 512 x 512 bins: by
 *    the mean from range sums and decoding every element, by the max from
 *    range sums and maxima and decoding every element (what the max did
 *    before), interleaved (median of 3; of LA_SERVE_REPS), decoding
 *    alone, and the bytes of the answer. Every rank carries the same
 *    compacted trace (a synthetic mesh series, polyline cv=0.05) so that
 *    the set fits in memory; each rank is still parsed, summed and
 *    decoded on its own. Sizes: 10^3 x 10^6 and 10^4 x 10^5 (10^9
 *    elements each), LA_SERVE_RANKS and LA_SERVE_ELEMENTS for one other.
 *    Then the wait of a request while a map is reduced: lactl serve's
 *    store, reduction thread and HTTP server on loopback, driven by a poll
 *    loop like lactl serve's; a client asks for the max map decoding
 *    every element (the longest reduction) and, until it comes, for the
 *    application list again and again: how long each of those took
 *    (median and max) and how long the map took. And the wait while a set
 *    arrives: the same set written to a socket as the GlobalAgent's feed
 *    sends it (a head and parts of 1 MiB), read in the poll loop
 *    (la_client_next there, as lactl serve did before its feed thread) or
 *    on lactl serve's feed thread, interleaved; the client asks for the
 *    application list until the set is taken. And publication -> map
 *    ready: the set written to the feed, read on the feed thread, taken
 *    by the loop (the event), and the mean map asked as the page does on
 *    it: the event's and the map's time from the first byte sent, the
 *    process's CPU and page faults meanwhile and its peak RSS (the set
 *    served before it made as lactl serve's feed makes it: no index
 *    kept); beside it the set decoded and parsed (its indexes kept, as
 *    la_traceset_from_bytes does), then binned, on one thread (CPU).
 *    LA_SERVE_ONLY=publish runs that alone.
 * 2. `lactl plot --grid` (lactl_plot_grid) of a 960 x 960 x 2 grid on two
 *    ranks (one k-plane each), smooth (mesh) and noisy values: the SVG's
 *    bytes and how long writing it took.
 *
 * Writes argv[1] (build/bench/serve.json) and prints a table; with
 * LA_SERVE_SVG_DIR set, also the two grid pictures into that directory.
 */
#include "bench_args.h"
#include <arpa/inet.h>
#include <malloc.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "la_client.h"
#include "la_client_internal.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_test_feedset.h"
#include "la_test_series.h"
#include "la_trace_msg.h"
#include "../tools/lactl_bin.h"
#include "../tools/lactl_http.h"
#include "../tools/lactl_plot.h"
#include "../tools/lactl_serve.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The encoding of a set (cycle cycle) of nr ranks of ne elements each,
 * every rank the same trace of x; grid: ranks are k-planes of a gx x gy x
 * nr grid. *len its bytes; NULL on failure. */
static uint8_t *pack_set(uint32_t nr, uint64_t ne, const double *x,
                         const la_compact_result_t *res, int grid, uint64_t gx,
                         uint64_t gy, uint64_t cycle, size_t *len) {
  La__TraceSet ts;
  la__trace_set__init(&ts);
  ts.app_id = "bench-serve";
  ts.cycle_tag = cycle;
  ts.nprocs = nr;
  ts.complete = 1;
  ts.metric = "time";
  ts.unit = "ns";
  La__CompactTrace *ct = calloc(nr, sizeof *ct);
  La__CompactTrace **ctp = calloc(nr, sizeof *ctp);
  uint64_t *rel = calloc(nr, sizeof *rel);
  La__GridRank *gr = grid ? calloc(nr, sizeof *gr) : NULL;
  La__GridRank **grp = grid ? calloc(nr, sizeof *grp) : NULL;
  uint64_t *gv = grid ? calloc((size_t)nr * 9, sizeof *gv) : NULL;
  La__SeriesStats st;
  la__series_stats__init(&st);
  st.count = res->stats.count, st.sum = res->stats.sum;
  st.min = res->stats.min, st.max = res->stats.max;
  (void)x;
  if (!ct || !ctp || !rel || (grid && (!gr || !grp || !gv))) return NULL;
  for (uint32_t r = 0; r < nr; r++) {
    la__compact_trace__init(&ct[r]);
    ct[r].seq = r + 1;
    ct[r].app_id = "bench-serve";
    ct[r].rank = r;
    ct[r].cycle_tag = cycle;
    ct[r].n_elements = ne;
    ct[r].mode = (La__CompactMode)res->mode;
    ct[r].segments.data = res->bytes;
    ct[r].segments.len = res->len;
    ct[r].stats = &st;
    ctp[r] = &ct[r];
    rel[r] = ne;
    if (grid) {
      la__grid_rank__init(&gr[r]);
      uint64_t *v = gv + 9 * (size_t)r;
      v[0] = gx, v[1] = gy, v[2] = 1, v[3] = 0, v[4] = 0, v[5] = r;
      v[6] = gx, v[7] = gy, v[8] = nr;
      gr[r].rank = r;
      gr[r].dims = v, gr[r].n_dims = 3;
      gr[r].origin = v + 3, gr[r].n_origin = 3;
      gr[r].global = v + 6, gr[r].n_global = 3;
      grp[r] = &gr[r];
    }
  }
  ts.traces = ctp, ts.n_traces = nr;
  ts.rank_elements = rel, ts.n_rank_elements = nr;
  if (grid) ts.grids = grp, ts.n_grids = nr;
  *len = la__trace_set__get_packed_size(&ts);
  uint8_t *buf = malloc(*len);
  if (buf) la__trace_set__pack(&ts, buf);
  free(ct), free(ctp), free(rel), free(gr), free(grp), free(gv);
  return buf;
}

/* That set (cycle 1), parsed. NULL on failure. */
static la_traceset_t *make_set(uint32_t nr, uint64_t ne, const double *x,
                               const la_compact_result_t *res, int grid,
                               uint64_t gx, uint64_t gy) {
  size_t len;
  uint8_t *buf = pack_set(nr, ne, x, res, grid, gx, gy, 1, &len);
  la_traceset_t *t = NULL;
  char why[256];
  if (buf && la_traceset_from_bytes(buf, len, &t, why, sizeof why) != 0) {
    fprintf(stderr, "bench_serve: the synthetic set: %s\n", why);
    t = NULL;
  }
  free(buf);
  return t;
}

/* A visitor that takes nothing: a set made for it keeps no index, as
 * the sets lactl serve's feed thread hands over (lactl_sv_runs_install). */
static void *lean_begin(void *ctx, const la_traceset_t *t) {
  (void)ctx, (void)t;
  return NULL;
}
static const la__rank_visit_t lean_visit = {.begin = lean_begin};

/* That set (cycle 1) as lactl serve holds it: parsed, no index kept.
 * NULL on failure. */
static la_traceset_t *make_set_lean(uint32_t nr, uint64_t ne,
                                    const la_compact_result_t *res) {
  size_t len;
  uint8_t *buf = pack_set(nr, ne, NULL, res, 0, 0, 0, 1, &len);
  ProtobufCMessage *m = NULL;
  la_traceset_t *t = NULL;
  char why[256] = "";
  if (!buf ||
      la_msg_decode(LA__MSG_TYPE__MSG_TRACE_SET, buf, len, &m, why,
                    sizeof why) != 0 ||
      la__traceset_adopt_threads((La__TraceSet *)m, 0,
                                 LA_CLIENT_DEFAULT_MAX_RANK_ELEMENTS, 0,
                                 &lean_visit, &t, why, sizeof why) != 0) {
    fprintf(stderr, "bench_serve: the synthetic set: %s\n", why);
    t = NULL;
  }
  free(buf);
  return t;
}

/* ---- the wait of a request while a map is reduced */

typedef struct {
  double map_ms, med_ms, max_ms;
  int n;
} live_t;

typedef struct {
  lactl_sv_t *d;
  lactl_http_t *http;
  uint16_t port;
  atomic_int quit;
  atomic_int taken; /* the feed bench: the set arrived and was taken */
  int mean;         /* /api/map: the page's default (mean, range sums) */
  live_t *out;
} live_srv_t;

static void live_handle(void *ctx, const char *path, const char *query,
                        lactl_http_resp_t *r) {
  live_srv_t *s = ctx;
  char why[300];
  if (!strcmp(path, "/api/map")) { /* decoding: the longest reduction */
    lactl_sv_map_opts_t o = {.kind = LA_WEIGHTS_MEASURED,
                             .agg = s->mean ? LACTL_BIN_MEAN : LACTL_BIN_MAX,
                             .bins = 512,
                             .decode = !s->mean};
    if (lactl_sv_map_ask(s->d, "bench-serve", &o, NULL, r->ticket, why,
                         sizeof why) == 0)
      r->later = 1;
    return;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f && lactl_sv_apps_json(s->d, f) == 0 && fclose(f) == 0) {
    r->status = 200, r->ctype = "application/json";
    r->body = buf, r->len = len;
  }
}

static void live_reply(void *ctx, uint64_t ticket, int status, char *body,
                       size_t len) {
  live_srv_t *s = ctx;
  lactl_http_reply(s->http, ticket, status, "application/json", body, len);
  free(body);
}

static int live_get(uint16_t port, const char *path) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: b\r\n\r\n",
                   path);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

/* Reads fd until its peer closes; the bytes read. */
static size_t live_drain(int fd) {
  char buf[65536];
  size_t n = 0;
  ssize_t k;
  while ((k = recv(fd, buf, sizeof buf, 0)) > 0) n += (size_t)k;
  return n;
}

/* Asks for the application list again and again until done(s) (at most
 * 100,000 times): the waits' median and max into s->out. */
static void live_ask(live_srv_t *s, int (*done)(live_srv_t *, int), int fd0) {
  static double lat[100000];
  int n = 0;
  while (!done(s, fd0) && n < 100000) {
    double a = now_ms();
    int fd = live_get(s->port, "/api/apps?token=be");
    if (fd < 0) break;
    live_drain(fd);
    close(fd);
    lat[n++] = now_ms() - a;
  }
  qsort(lat, (size_t)n, sizeof *lat, cmp);
  s->out->n = n;
  s->out->med_ms = n ? lat[n / 2] : NAN;
  s->out->max_ms = n ? lat[n - 1] : NAN;
}

static int map_came(live_srv_t *s, int map) {
  struct pollfd p = {.fd = map, .events = POLLIN};
  (void)s;
  return map < 0 || poll(&p, 1, 0) > 0;
}

static void *live_client(void *arg) {
  live_srv_t *s = arg;
  double t0 = now_ms();
  int map = live_get(s->port, "/api/map?token=be&app=bench-serve&agg=max");
  live_ask(s, map_came, map);
  if (map >= 0) live_drain(map), close(map);
  s->out->map_ms = now_ms() - t0;
  atomic_store(&s->quit, 1);
  return NULL;
}

/* Serves set t (taken) and measures. */
static int bench_live(la_traceset_t *t, live_t *out) {
  live_srv_t s = {.d = lactl_sv_new(1), .out = out};
  char *ev = NULL, bound[64], why[256];
  size_t evn = 0;
  atomic_init(&s.quit, 0);
  if (!s.d || !t || lactl_sv_take(s.d, t, &ev, &evn) != 0 ||
      lactl_http_open("127.0.0.1:0", 16, "be", live_handle, &s, &s.http,
                      bound, sizeof bound, why, sizeof why) != 0) {
    fprintf(stderr, "bench_serve: the live server did not start\n");
    free(ev), lactl_sv_free(s.d);
    return -1;
  }
  free(ev);
  s.port = (uint16_t)atoi(strrchr(bound, ':') + 1);
  pthread_t th;
  if (pthread_create(&th, NULL, live_client, &s) != 0) return -1;
  struct pollfd p[24];
  while (!atomic_load(&s.quit)) {
    size_t n = 0;
    int mfd = lactl_sv_map_fd(s.d);
    if (mfd >= 0) p[n++] = (struct pollfd){.fd = mfd, .events = POLLIN};
    size_t h0 = n;
    n += lactl_http_pollfds(s.http, p + n, 24 - n);
    poll(p, n, 100);
    lactl_http_service(s.http, p + h0, n - h0, lactl_http_now_ms());
    lactl_sv_map_poll(s.d, NULL, live_reply, &s);
  }
  pthread_join(th, NULL);
  lactl_http_close(s.http);
  lactl_sv_free(s.d);
  return 0;
}

/* ---- the wait of a request while a set arrives on the feed */

static int set_taken(live_srv_t *s, int unused) {
  (void)unused;
  return atomic_load(&s->taken);
}

static void *feed_client(void *arg) {
  live_srv_t *s = arg;
  live_ask(s, set_taken, -1);
  atomic_store(&s->quit, 1);
  return NULL;
}

typedef struct {
  int fd;
  const uint8_t *set;
  size_t len;
  int rc;
} feed_job_t;

/* The GlobalAgent: the set in parts of 1 MiB (feed.part_bytes). */
static void *feed_writer(void *arg) {
  feed_job_t *j = arg;
  j->rc = la_test_feed_set(j->fd, j->set, j->len, "bench-serve", 2, 1 << 20);
  return NULL;
}

/* Starts the server of the feed benches: set t (taken, cycle 1) in s's
 * store, the HTTP server, and a feed on a socket pair sv (the
 * GlobalAgent writes sv[1]) read by *c, or by the feed thread *feed when
 * thread. 0 or -1. */
static int feed_open(live_srv_t *s, la_traceset_t *t, int sv[2],
                     la_client_t **c, lactl_sv_feed_t **feed, int thread) {
  char *ev = NULL, bound[64], why[256];
  size_t evn = 0;
  *c = NULL, *feed = NULL;
  atomic_init(&s->quit, 0);
  atomic_init(&s->taken, 0);
  if (!s->d || !t || lactl_sv_take(s->d, t, &ev, &evn) != 0 ||
      lactl_http_open("127.0.0.1:0", 16, "be", live_handle, s, &s->http,
                      bound, sizeof bound, why, sizeof why) != 0 ||
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
      la_client_from_fd(sv[0], 0, c) != 0 ||
      (thread && lactl_sv_feed_new(*c, feed) != 0)) {
    fprintf(stderr, "bench_serve: the feed bench did not start\n");
    return -1;
  }
  free(ev);
  s->port = (uint16_t)atoi(strrchr(bound, ':') + 1);
  return 0;
}

/* Serves set t (taken, cycle 1) while the encoding set[0..len) (cycle 2)
 * arrives on a feed, read by the loop itself (thread 0: la_client_next
 * in the poll loop, as lactl serve did before its feed thread) or by
 * lactl serve's feed thread (1); a client asks for the application list
 * until the set is taken. out->map_ms: from the first byte sent to the
 * set taken. */
static int bench_feed(la_traceset_t *t, const uint8_t *set, size_t len,
                      int thread, live_t *out) {
  live_srv_t s = {.d = lactl_sv_new(2), .out = out};
  char *ev = NULL, why[256];
  size_t evn = 0;
  int sv[2] = {-1, -1};
  la_client_t *c;
  lactl_sv_feed_t *feed;
  if (feed_open(&s, t, sv, &c, &feed, thread) != 0) return -1;
  feed_job_t j = {.fd = sv[1], .set = set, .len = len};
  pthread_t cl, wr;
  if (pthread_create(&cl, NULL, feed_client, &s) != 0) return -1;
  double t0 = now_ms();
  if (pthread_create(&wr, NULL, feed_writer, &j) != 0) return -1;
  struct pollfd p[24];
  while (!atomic_load(&s.quit)) {
    size_t n = 0;
    int ffd = thread ? lactl_sv_feed_fd(feed) : la_client_fd(c);
    p[n++] = (struct pollfd){.fd = ffd, .events = POLLIN};
    size_t h0 = n;
    n += lactl_http_pollfds(s.http, p + n, 24 - n);
    poll(p, n, 100);
    la_traceset_t *got = NULL;
    if (thread)
      lactl_sv_feed_next(feed, &got, why, sizeof why);
    else
      la_client_next(c, 0, &got);
    if (got && lactl_sv_take(s.d, got, &ev, &evn) == 0) {
      free(ev);
      out->map_ms = now_ms() - t0;
      atomic_store(&s.taken, 1);
    }
    lactl_http_service(s.http, p + h0, n - h0, lactl_http_now_ms());
  }
  pthread_join(cl, NULL);
  pthread_join(wr, NULL);
  if (feed)
    lactl_sv_feed_free(feed);
  else
    la_client_close(c);
  close(sv[1]);
  lactl_http_close(s.http);
  lactl_sv_free(s.d);
  return j.rc;
}

/* ---- publication -> map ready */

typedef struct {
  double event_ms, map_ms; /* from the first byte sent */
  double cpu_ms;           /* the process's CPU meanwhile, feed writer too */
  double faults;           /* the process's page faults meanwhile (minor) */
} pub_t;

/* The process's minor page faults so far. */
static double minflt(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_minflt : NAN;
}

/* The process's peak resident size (MB) since peak_reset (VmHWM). */
static double peak_mb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  double kb = NAN;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb / 1024;
}

/* Starts the peak resident size anew (Linux: clear_refs 5). */
static void peak_reset(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (f) fputs("5", f), fclose(f);
}

/* The process's CPU time so far (ms, every thread). */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct {
  live_srv_t *s;
  double t0, c0, f0;
  int ev[2]; /* a pipe: the set taken */
  pub_t *out;
} pub_client_t;

/* The page: on the event, asks for the element map (mean, 512 bins). */
static void *pub_client(void *arg) {
  pub_client_t *p = arg;
  struct pollfd w = {.fd = p->ev[0], .events = POLLIN};
  while (poll(&w, 1, -1) < 0) { /* the event (the page's event stream) */
  }
  int fd = live_get(p->s->port, "/api/map?token=be&app=bench-serve");
  size_t n = fd >= 0 ? live_drain(fd) : 0;
  if (fd >= 0) close(fd);
  p->out->map_ms = n ? now_ms() - p->t0 : NAN;
  p->out->cpu_ms = cpu_ms() - p->c0;
  p->out->faults = minflt() - p->f0;
  atomic_store(&p->s->quit, 1);
  return NULL;
}

/* Serves set t (taken, cycle 1) while the encoding set[0..len) (cycle 2)
 * arrives on the feed as the GlobalAgent sends it, read on lactl serve's
 * feed thread; when it is taken (the event the page gets), a client asks
 * for its element map as the page does. Nothing else asks meanwhile. */
static int bench_publish(la_traceset_t *t, const uint8_t *set, size_t len,
                         pub_t *out) {
  live_srv_t s = {.d = lactl_sv_new(2), .mean = 1};
  char *ev = NULL, why[256];
  size_t evn = 0;
  int sv[2] = {-1, -1};
  la_client_t *c;
  lactl_sv_feed_t *feed;
  if (feed_open(&s, t, sv, &c, &feed, 1) != 0) return -1;
  feed_job_t j = {.fd = sv[1], .set = set, .len = len};
  pub_client_t pc = {.s = &s, .out = out};
  if (pipe(pc.ev) != 0) return -1;
  pthread_t cl, wr;
  out->event_ms = out->map_ms = NAN;
  pc.t0 = now_ms(), pc.c0 = cpu_ms(), pc.f0 = minflt();
  if (pthread_create(&cl, NULL, pub_client, &pc) != 0 ||
      pthread_create(&wr, NULL, feed_writer, &j) != 0)
    return -1;
  struct pollfd p[24];
  while (!atomic_load(&s.quit)) {
    size_t n = 0;
    p[n++] = (struct pollfd){.fd = lactl_sv_feed_fd(feed), .events = POLLIN};
    int mfd = lactl_sv_map_fd(s.d);
    if (mfd >= 0) p[n++] = (struct pollfd){.fd = mfd, .events = POLLIN};
    size_t h0 = n;
    n += lactl_http_pollfds(s.http, p + n, 24 - n);
    poll(p, n, 100);
    la_traceset_t *got = NULL;
    lactl_sv_feed_next(feed, &got, why, sizeof why);
    if (got && lactl_sv_take(s.d, got, &ev, &evn) == 0) {
      free(ev);
      out->event_ms = now_ms() - pc.t0;
      (void)!write(pc.ev[1], "e", 1);
    }
    lactl_http_service(s.http, p + h0, n - h0, lactl_http_now_ms());
    lactl_sv_map_poll(s.d, NULL, live_reply, &s);
  }
  pthread_join(cl, NULL);
  pthread_join(wr, NULL);
  close(pc.ev[0]), close(pc.ev[1]);
  lactl_sv_feed_free(feed);
  close(sv[1]);
  lactl_http_close(s.http);
  lactl_sv_free(s.d);
  return j.rc || isnan(out->map_ms) ? -1 : 0;
}

/* Publication -> map ready of nr x ne, LA_SERVE_REPS times; prints the
 * medians and appends their JSON fields to js. */
static int bench_pub(FILE *js, uint32_t nr, uint64_t ne,
                     const la_compact_result_t *res, int reps) {
  size_t slen;
  uint8_t *set2 = pack_set(nr, ne, NULL, res, 0, 0, 0, 2, &slen);
  double ev[9], mp[9], cp[9], pf[9];
  /* the peak of the publications: what the sets made before left free
   * in the heap given back first (lactl serve's allocator keeps it) */
  malloc_trim(0);
  peak_reset();
  for (int i = 0; i < reps; i++) {
    pub_t o;
    if (!set2 || bench_publish(make_set_lean(nr, ne, res), set2,
                               slen, &o) != 0) {
      free(set2);
      return -1;
    }
    ev[i] = o.event_ms, mp[i] = o.map_ms, cp[i] = o.cpu_ms, pf[i] = o.faults;
  }
  double peak = peak_mb(); /* the sets of the publications, the process's */
  /* where the time goes, one thread each: the set decoded and its ranks
   * parsed (la_traceset_from_bytes), then its mean map */
  double dec = NAN, red = NAN, c0 = cpu_ms();
  la_traceset_t *t = NULL;
  char why[256];
  if (la_traceset_from_bytes(set2, slen, &t, why, sizeof why) == 0) {
    dec = cpu_ms() - c0;
    lactl_bin_t b;
    lactl_sv_fill_t fl = {.threads = 1};
    uint64_t n = la_traceset_elements(t), w = (n + 511) / 512;
    c0 = cpu_ms();
    if (lactl_bin_init(&b, w, (n + w - 1) / w, 512, 512, LACTL_BIN_MEAN) == 0 &&
        lactl_sv_fill(t, &b, &fl) == 0)
      red = cpu_ms() - c0;
    lactl_bin_free(&b);
  }
  la_traceset_free(t);
  free(set2);
  qsort(ev, (size_t)reps, sizeof *ev, cmp);
  qsort(mp, (size_t)reps, sizeof *mp, cmp);
  qsort(cp, (size_t)reps, sizeof *cp, cmp);
  qsort(pf, (size_t)reps, sizeof *pf, cmp);
  printf("    publication (%zu bytes on the feed) -> event %.1f ms, -> "
         "mean map answered %.1f ms (CPU %.1f ms, %.0f page faults, peak "
         "RSS %.0f MB); one thread: decoding and parsing the set %.1f ms "
         "CPU, binning it %.1f ms\n",
         slen, ev[reps / 2], mp[reps / 2], cp[reps / 2], pf[reps / 2], peak,
         dec, red);
  fprintf(js,
          ", \"publish_event_ms\": %.1f, \"publish_map_ms\": %.1f, "
          "\"publish_cpu_ms\": %.1f, \"publish_faults\": %.0f, "
          "\"publish_peak_rss_mb\": %.0f, \"parse_cpu_ms\": %.1f, "
          "\"bin_cpu_ms\": %.1f",
          ev[reps / 2], mp[reps / 2], cp[reps / 2], pf[reps / 2], peak, dec,
          red);
  return 0;
}

/* One size of part 1; prints its row and appends its JSON. */
static int bench_map(FILE *js, uint32_t nr, uint64_t ne, int first) {
  double *x = malloc(ne * sizeof *x);
  la_compact_result_t res;
  if (!x || la_compact_synth(LA_SYNTH_MESH, ne, 7, x) != 0 ||
      la_test_compact(x, ne, "polyline:cv=0.05", &res) != 0) {
    fprintf(stderr, "bench_serve: cannot make the series\n");
    free(x);
    return -1;
  }
  la_traceset_t *t = make_set(nr, ne, x, &res, 0, 0, 0);
  free(x);
  if (!t) {
    la_compact_result_free(&res);
    return -1;
  }
  const char *er = getenv("LA_SERVE_REPS");
  int reps = er && atoi(er) >= 1 && atoi(er) <= 9 ? atoi(er) : 3;
  const char *only = getenv("LA_SERVE_ONLY");
  if (only && !strcmp(only, "publish")) { /* that figure alone */
    la_traceset_free(t);
    fprintf(js, "%s\n  {\"ranks\": %u, \"elements_per_rank\": %llu, "
            "\"reps\": %d", first ? "" : ",", nr, (unsigned long long)ne,
            reps);
    int rc = bench_pub(js, nr, ne, &res, reps);
    fprintf(js, "}");
    la_compact_result_free(&res);
    return rc;
  }
  lactl_sv_map_opts_t o = {
      .kind = LA_WEIGHTS_MEASURED, .agg = LACTL_BIN_MEAN, .bins = 512};
  /* interleaved: mean by range sums, mean decoding, max by range sums
   * and maxima, max decoding (what the max did before) */
  double ms[4][9];
  size_t bytes = 0;
  for (int i = 0; i < reps; i++)
    for (int v = 0; v < 4; v++) {
      char *b = NULL, why[256];
      size_t n = 0;
      o.agg = v < 2 ? LACTL_BIN_MEAN : LACTL_BIN_MAX;
      o.decode = v % 2;
      FILE *f = open_memstream(&b, &n);
      if (!f || lactl_sv_map_of(t, &o, NULL, f, &ms[v][i], why,
                                sizeof why) != 0) {
        fprintf(stderr, "bench_serve: %s\n", why);
        return -1;
      }
      fclose(f);
      if (v == 0) bytes = n;
      free(b);
    }
  double med[4];
  for (int v = 0; v < 4; v++) {
    qsort(ms[v], (size_t)reps, sizeof *ms[v], cmp);
    med[v] = ms[v][reps / 2];
  }
  /* the decoding alone, for comparison: every rank's weights */
  double *w = malloc(ne * sizeof *w), dec[9];
  for (int i = 0; w && i < reps; i++) {
    double t0 = now_ms();
    for (uint32_t r = 0; r < nr; r++) la_traceset_rank_weights(t, r, w);
    dec[i] = now_ms() - t0;
  }
  free(w);
  qsort(dec, (size_t)reps, sizeof *dec, cmp);
  double el = (double)nr * (double)ne;
  printf(
      "  %6u ranks x %8llu elements  mean: %9.1f ms by range sums "
      "(%.3f ns/element), %9.1f ms decoding; max: %9.1f ms by range "
      "maxima, %9.1f ms decoding (decoding alone %.1f ms)  answer %8zu "
      "bytes\n",
      nr, (unsigned long long)ne, med[0], med[0] * 1e6 / el, med[1], med[2],
      med[3], dec[reps / 2], bytes);
  la_traceset_free(t);
  live_t lv;
  if (bench_live(make_set(nr, ne, NULL, &res, 0, 0, 0), &lv) != 0) return -1;
  printf("    while a max map is reduced decoding (%.1f ms): %d requests "
         "answered, median %.2f ms, max %.2f ms\n",
         lv.map_ms, lv.n, lv.med_ms, lv.max_ms);
  /* a set arriving on the feed, read in the loop and on the feed
   * thread, interleaved */
  size_t slen;
  uint8_t *set2 = pack_set(nr, ne, NULL, &res, 0, 0, 0, 2, &slen);
  live_t fv[2][9];
  for (int i = 0; set2 && i < reps; i++)
    for (int th = 0; th < 2; th++)
      if (bench_feed(make_set(nr, ne, NULL, &res, 0, 0, 0), set2, slen, th,
                     &fv[th][i]) != 0)
        return -1;
  free(set2);
  double fa[2], fn[2], fm[2], fx[2];
  for (int th = 0; th < 2; th++) {
    double a[9], b[9], c[9], d[9];
    for (int i = 0; i < reps; i++)
      a[i] = fv[th][i].map_ms, b[i] = fv[th][i].n, c[i] = fv[th][i].med_ms,
      d[i] = fv[th][i].max_ms;
    qsort(a, (size_t)reps, sizeof *a, cmp);
    qsort(b, (size_t)reps, sizeof *b, cmp);
    qsort(c, (size_t)reps, sizeof *c, cmp);
    qsort(d, (size_t)reps, sizeof *d, cmp);
    fa[th] = a[reps / 2], fn[th] = b[reps / 2], fm[th] = c[reps / 2];
    fx[th] = d[reps / 2];
    printf("    while the set (%zu bytes) arrives, read %s: taken after "
           "%.1f ms, %.0f requests answered, median %.2f ms, max %.2f ms\n",
           slen, th ? "on the feed thread" : "in the loop", fa[th], fn[th],
           fm[th], fx[th]);
  }
  fprintf(js,
          "%s\n  {\"ranks\": %u, \"elements_per_rank\": %llu, "
          "\"reps\": %d, \"reduce_ms_median\": %.3f, \"ns_per_element\": "
          "%.4f, \"reduce_decoding_ms_median\": %.3f, "
          "\"max_reduce_ms_median\": %.3f, "
          "\"max_reduce_decoding_ms_median\": %.3f, "
          "\"decode_ms_median\": %.3f, \"answer_bytes\": %zu, \"bins\": 512, "
          "\"live_max_map_ms\": %.1f, \"live_requests\": %d, "
          "\"live_request_ms_median\": %.3f, \"live_request_ms_max\": %.3f, "
          "\"set_bytes\": %zu, \"feed_loop_taken_ms\": %.1f, "
          "\"feed_loop_requests\": %.0f, \"feed_loop_request_ms_median\": "
          "%.3f, \"feed_loop_request_ms_max\": %.3f, "
          "\"feed_thread_taken_ms\": %.1f, \"feed_thread_requests\": %.0f, "
          "\"feed_thread_request_ms_median\": %.3f, "
          "\"feed_thread_request_ms_max\": %.3f",
          first ? "" : ",", nr, (unsigned long long)ne, reps, med[0],
          med[0] * 1e6 / el, med[1], med[2], med[3], dec[reps / 2], bytes,
          lv.map_ms, lv.n, lv.med_ms, lv.max_ms, slen, fa[0], fn[0], fm[0],
          fx[0], fa[1], fn[1], fm[1], fx[1]);
  int rc = bench_pub(js, nr, ne, &res, reps);
  fprintf(js, "}");
  la_compact_result_free(&res);
  return rc;
}

/* Part 2: the grid picture of a 960 x 960 slice of a series of kind
 * (mesh: smooth plateaus; noise: every cell different, the PNG's worst
 * case). */
static int bench_grid(FILE *js, int kind, const char *name) {
  const uint64_t gx = 960, gy = 960, ne = gx * gy;
  double *x = malloc(ne * sizeof *x);
  la_compact_result_t res;
  if (!x || la_compact_synth(kind, ne, 9, x) != 0 ||
      la_test_compact(x, ne, "polyline:cv=0.05", &res) != 0) {
    free(x);
    return -1;
  }
  la_traceset_t *t = make_set(2, ne, x, &res, 1, gx, gy);
  free(x);
  if (!t) return -1;
  char *b = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&b, &n);
  double t0 = now_ms();
  int rc = f ? lactl_plot_grid(f, t, LA_WEIGHTS_MEASURED, 2, 1, 1) : -1;
  if (f) fclose(f);
  double ms = now_ms() - t0;
  const char *dir = getenv("LA_SERVE_SVG_DIR"); /* keep the pictures */
  if (dir && b) {
    char path[4096];
    snprintf(path, sizeof path, "%s/grid-%s.svg", dir, name);
    FILE *o = fopen(path, "w");
    if (o) fwrite(b, 1, n, o), fclose(o);
  }
  size_t rects = 0;
  for (const char *p = b; p && (p = strstr(p, "<rect")); p++) rects++;
  printf(
      "  grid 960x960 slice (%s): SVG %zu bytes, %zu <rect>s, written in "
      "%.1f ms\n",
      name, n, rects, ms);
  fprintf(js,
          "%s\n \"grid_960_%s\": {\"svg_bytes\": %zu, \"rects\": %zu, "
          "\"ms\": %.1f}",
          kind == LA_SYNTH_MESH ? "]," : ",", name, n, rects, ms);
  free(b);
  la_traceset_free(t);
  la_compact_result_free(&res);
  return rc;
}

int main(int argc, char **argv) {
  lactl_sv_feed_memory(); /* as lactl serve: before any thread */
  const char *out = la_bench_out_path(argc, argv, 1, "build/bench/serve.json");
  FILE *js = la_bench_open_out(out);
  if (!js) return 1;
  double load[1] = {0};
  FILE *la = fopen("/proc/loadavg", "r");
  if (la && fscanf(la, "%lf", &load[0]) != 1) load[0] = -1;
  if (la) fclose(la);
  printf("lactl serve: element map (512x512 bins, mean), load %.2f\n", load[0]);
  fprintf(js, "{\"load_before\": %.2f, \"maps\": [", load[0]);
  const char *er = getenv("LA_SERVE_RANKS"), *ee = getenv("LA_SERVE_ELEMENTS");
  int rc = 0;
  if (er && ee)
    rc = bench_map(js, (uint32_t)strtoul(er, NULL, 10), strtoull(ee, NULL, 10),
                   1);
  else
    rc = bench_map(js, 1000, 1000000, 1) || bench_map(js, 10000, 100000, 0);
  const char *only = getenv("LA_SERVE_ONLY");
  if (only && !strcmp(only, "publish")) {
    fprintf(js, "]}\n");
    fclose(js);
    return rc ? 1 : 0;
  }
  if (!rc) rc = bench_grid(js, LA_SYNTH_MESH, "mesh");
  if (!rc) rc = bench_grid(js, LA_SYNTH_NOISE, "noise");
  fprintf(js, "}\n");
  fclose(js);
  return rc ? 1 : 0;
}
