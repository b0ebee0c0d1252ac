/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_main.c: la-replay, a synthetic MPI application that replays a recorded
 * run's costs (docs/balancing.md, "Replaying a partition"; docs/lactl.md,
 * "lactl replay").
 *
 *   mpiexec -n P la-replay APP [CYCLE|FIRST:LAST] [--partition FILE]
 *                          [--halo BYTES] [--weights KIND] [--app-id ID]
 *                          [--global HOST:PORT | --db FILE]
 *
 * Rank 0 reads APP's stored Trace-Sets from the GlobalAgent's feed, or
 * from a store file with no GlobalAgent (--db; rp_source.c, rp_load.c),
 * and sends every rank its elements' costs. Each rank
 * calibrates the spin (rp_spin.c), registers with LA under its own id
 * (default APP.replay), and per cycle optionally exchanges a halo, then
 * spends each element's recorded cost
 * with the spin between LA_startProbe and LA_stopProbe, timed as a whole
 * by MPI_Wtime (wall) and by the thread's CPU clock (what the spin got of
 * the core: on a shared or oversubscribed node the wall time also holds
 * the time other processes ran), and ends the cycle with LA_dataXfer. Rank
 * 0 prints what was recorded, targeted and replayed (rp_report.c).
 *
 * The halo: --halo BYTES, a ring (BYTES to and from ranks r-1 and r+1);
 * --halo-bytes-per-cell B, the mesh halo where APP has a grid (rp_halo.c:
 * to and from each rank owning a face-neighbour cell, B bytes per cell
 * facing it, MPI_Isend/MPI_Irecv then MPI_Waitall), which replaces the
 * ring; without a grid la-replay says so and keeps the ring (if --halo). 
 *
 * Exit status: 0 done, 1 failure (unreachable, unknown application, a
 * metric other than time, no complete cycle), 2 usage (bad options, a
 * partition file that does not fit, the wrong number of ranks). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "la.h"
#include "la_client.h"
#include "replay.h"
#include "replay_report.h"

typedef struct {
  rp_src_t src;
  long halo;          /* --halo: the ring's bytes */
  long halo_per_cell; /* --halo-bytes-per-cell: the mesh halo's */
  double calib;
  int use_la, quiet;
  char app_id[140];
} rp_opts_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpiexec -n P la-replay APP [CYCLE|FIRST:LAST] [--partition "
          "FILE]\n"
          "                 [--halo BYTES] [--halo-bytes-per-cell B]\n"
          "                 [--weights measured|robust] [--app-id ID]\n"
          "                 [--global HOST:PORT | --db FILE] [--timeout "
          "SECONDS]\n"
          "                 [--calibrate SECONDS]\n"
          "                 [--no-la] [--quiet]\n\n"
          "Replays the recorded per-element times of application APP (every "
          "complete\n"
          "cycle, or those given) with a calibrated spin, profiled by LA as "
          "APP.replay.\n\n"
          "  --partition FILE    element -> rank from FILE (as lactl whatif "
          "writes it);\n"
          "                      default: the recorded partition. P is its "
          "rank count\n"
          "                      (default: the recorded one)\n"
          "  --halo BYTES        exchange BYTES with ranks r-1 and r+1 each "
          "cycle (ring)\n"
          "  --halo-bytes-per-cell B  mesh halo: where APP placed its ranks "
          "in a grid,\n"
          "                      exchange with each rank owning a face "
          "neighbour cell\n"
          "                      B bytes per cell facing it, each cycle "
          "(else the ring)\n"
          "  --weights KIND      measured or robust (default: robust when "
          "every rank\n"
          "                      has them)\n"
          "  --app-id ID         the replay's LA application id (default: "
          "APP.replay)\n"
          "  --global HOST:PORT  the GlobalAgent's feed (default: $LA_GLOBAL "
          "or\n"
          "                      127.0.0.1:7463)\n"
          "  --db FILE           read a store instead (an SQLite store file, "
          "or a\n"
          "                      PostgreSQL URL): no GlobalAgent needed\n"
          "  --timeout SECONDS   wait up to SECONDS for each answer (default "
          "5)\n"
          "  --calibrate SECONDS calibrate the spin for about SECONDS "
          "(default 0.3)\n"
          "  --no-la             no LA profiling of the replay\n"
          "  --quiet             no line per cycle\n\n"
          "Exit status: 0 done, 1 failure, 2 usage or input that does not "
          "fit.\n");
}

/* "N", "FIRST:LAST", "FIRST:" or ":LAST" into src. 0 or -1. */
static int parse_cycles(const char *s, rp_src_t *src) {
  char *end;
  const char *colon = strchr(s, ':');
  src->first = 0;
  src->last = UINT64_MAX;
  if (!colon) {
    if (*s < '0' || *s > '9') return -1;
    src->first = src->last = strtoull(s, &end, 10);
    return *end ? -1 : 0;
  }
  if (colon != s) {
    if (*s < '0' || *s > '9') return -1;
    src->first = strtoull(s, &end, 10);
    if (end != colon) return -1;
  }
  if (colon[1]) {
    if (colon[1] < '0' || colon[1] > '9') return -1;
    src->last = strtoull(colon + 1, &end, 10);
    if (*end) return -1;
  }
  return src->first <= src->last ? 0 : -1;
}

/* Parses argv into o. 0, 1 (--help done) or 2 (usage error, said on rank
 * 0). */
static int parse(int argc, char **argv, int rank, rp_opts_t *o) {
  static const struct option lo[] = {
      {"partition", 1, 0, 'p'}, {"halo", 1, 0, 'H'},    {"weights", 1, 0, 'W'},
      {"app-id", 1, 0, 'a'},    {"global", 1, 0, 'g'},  {"timeout", 1, 0, 'T'},
      {"calibrate", 1, 0, 'C'}, {"no-la", 0, 0, 'N'},   {"quiet", 0, 0, 'q'},
      {"db", 1, 0, 'D'},        {"halo-bytes-per-cell", 1, 0, 'B'},
      {"help", 0, 0, 'h'},      {0, 0, 0, 0}};
  int c;
  char *end;
  const char *app_id = NULL;
  opterr = 0;
#define BAD(...)                                                         \
  do {                                                                   \
    if (rank == 0) {                                                     \
      fprintf(stderr, "la-replay: " __VA_ARGS__);                        \
      fprintf(stderr, " (try 'la-replay --help')\n");                    \
    }                                                                    \
    return 2;                                                            \
  } while (0)
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    switch (c) {
      case 'h':
        if (rank == 0) usage(stdout);
        return 1;
      case 'p':
        o->src.partition = optarg;
        break;
      case 'H':
        o->halo = strtol(optarg, &end, 10);
        if (*optarg < '0' || *optarg > '9' || *end || o->halo < 0 ||
            o->halo > (1L << 30))
          BAD("--halo '%s': bytes, 0 .. 1073741824", optarg);
        break;
      case 'B':
        o->halo_per_cell = strtol(optarg, &end, 10);
        if (*optarg < '0' || *optarg > '9' || *end || o->halo_per_cell < 1 ||
            o->halo_per_cell > (1L << 20))
          BAD("--halo-bytes-per-cell '%s': bytes, 1 .. 1048576", optarg);
        o->src.mesh_halo = 1;
        break;
      case 'W':
        if (!strcmp(optarg, "measured"))
          o->src.weights = LA_WEIGHTS_MEASURED;
        else if (!strcmp(optarg, "robust"))
          o->src.weights = LA_WEIGHTS_ROBUST;
        else
          BAD("--weights '%s': measured or robust", optarg);
        break;
      case 'a':
        app_id = optarg;
        break;
      case 'g':
        o->src.global = optarg;
        break;
      case 'D':
        if (!*optarg) BAD("--db: which store?");
        o->src.db = optarg;
        break;
      case 'T': {
        double s = strtod(optarg, &end);
        if (end == optarg || *end || !(s > 0) || s > 86400)
          BAD("--timeout '%s': seconds, above 0 and at most 86400", optarg);
        o->src.timeout_ms = (int)ceil(s * 1000);
        break;
      }
      case 'C':
        o->calib = strtod(optarg, &end);
        if (end == optarg || *end || !(o->calib >= 0.01) || o->calib > 60)
          BAD("--calibrate '%s': seconds, 0.01 .. 60", optarg);
        break;
      case 'N':
        o->use_la = 0;
        break;
      case 'q':
        o->quiet = 1;
        break;
      default:
        BAD("unknown option or missing argument '%s'", argv[optind - 1]);
    }
  }
  if (o->src.db && o->src.global)
    BAD("--db and --global both name the source: give one");
  if (optind >= argc) BAD("which application?");
  o->src.app = argv[optind];
  if (optind + 1 < argc && parse_cycles(argv[optind + 1], &o->src))
    BAD("'%s' is not CYCLE or FIRST:LAST", argv[optind + 1]);
  if (optind + 2 < argc) BAD("unexpected argument '%s'", argv[optind + 2]);
  int n = app_id ? snprintf(o->app_id, sizeof o->app_id, "%s", app_id)
                 : snprintf(o->app_id, sizeof o->app_id, "%s.replay",
                            o->src.app);
  if (n < 1 || n > 128) BAD("the replay's application id is not 1 .. 128 characters");
#undef BAD
  return 0;
}

/* Rank 0 sends n doubles to rank to (in pieces an int counts). */
static void send_doubles(const double *a, uint64_t n, int to) {
  const uint64_t piece = 1u << 26;
  for (uint64_t o = 0; o < n; o += piece)
    MPI_Send(a + o, (int)(n - o < piece ? n - o : piece), MPI_DOUBLE, to, 7,
             MPI_COMM_WORLD);
}
static void recv_doubles(double *a, uint64_t n) {
  const uint64_t piece = 1u << 26;
  for (uint64_t o = 0; o < n; o += piece)
    MPI_Recv(a + o, (int)(n - o < piece ? n - o : piece), MPI_DOUBLE, 0, 7,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Rank 0 loads and checks the plan; the verdict goes to every rank.
 * Returns 0 or the exit status. */
static int load_all(const rp_opts_t *o, int rank, int size, rp_plan_t *pl) {
  int st[2] = {0, 0};
  if (rank == 0) {
    char why[1024];
    int usage = 0;
    if (rp_load(&o->src, pl, why, sizeof why, &usage)) {
      fprintf(stderr, "la-replay: %s\n", why);
      st[0] = usage ? 2 : 1;
    } else if ((uint32_t)size != pl->nranks) {
      if (o->src.partition)
        fprintf(stderr,
                "la-replay: the partition %s has %u ranks, la-replay runs "
                "on %d: run it with mpiexec -n %u\n",
                o->src.partition, pl->nranks, size, pl->nranks);
      else
        fprintf(stderr,
                "la-replay: %s was recorded with %u ranks, la-replay runs "
                "on %d: run it with mpiexec -n %u (or give --partition)\n",
                o->src.app, pl->nranks, size, pl->nranks);
      st[0] = 2;
    } else if (o->halo_per_cell && !pl->mesh) {
      fprintf(stderr,
              "la-replay: no mesh halo: %s; %s\n", pl->halo_note,
              o->halo ? "the ring halo of --halo (ranks r-1 and r+1) is "
                        "exchanged instead"
                      : "no halo is exchanged (--halo BYTES gives the ring)");
    } else if (o->halo_per_cell) {
      uint64_t most = 0;
      for (uint64_t k = 0; k < pl->hoff[pl->nranks]; k++) {
        if (pl->hsend[k] > most) most = pl->hsend[k];
        if (pl->hrecv[k] > most) most = pl->hrecv[k];
      }
      if (most * (uint64_t)o->halo_per_cell > INT_MAX) {
        fprintf(stderr,
                "la-replay: --halo-bytes-per-cell %ld: a rank would send "
                "%" PRIu64 " cells of it in one message, above %d bytes\n",
                o->halo_per_cell, most, INT_MAX);
        st[0] = 2;
      }
    }
    st[1] = (int)(st[0] ? 0 : pl->nc);
  }
  MPI_Bcast(st, 2, MPI_INT, 0, MPI_COMM_WORLD);
  return st[0];
}

/* Rank r's costs (nc * n seconds) from rank 0, into *cost and *n. */
static int distribute(rp_plan_t *pl, int rank, int size, size_t nc,
                      double **cost, uint64_t *n) {
  uint64_t my = 0;
  if (rank == 0) {
    for (int r = 1; r < size; r++)
      MPI_Send(&pl->n[r], 1, MPI_UINT64_T, r, 6, MPI_COMM_WORLD);
    my = pl->n[0];
  } else {
    MPI_Recv(&my, 1, MPI_UINT64_T, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  double *a = malloc((nc * my > 0 ? nc * my : 1) * sizeof *a);
  int ok = a != NULL, all;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!all) {
    if (!ok) fprintf(stderr, "la-replay: rank %d: out of memory\n", rank);
    free(a);
    return 1;
  }
  if (rank == 0) {
    memcpy(a, pl->cost[0], nc * my * sizeof *a);
    for (int r = 1; r < size; r++) send_doubles(pl->cost[r], nc * pl->n[r], r);
  } else {
    recv_doubles(a, nc * my);
  }
  *cost = a;
  *n = my;
  return 0;
}

/* One rank's mesh halo: its neighbours, cells sent to and received from
 * each. */
typedef struct {
  int n;
  int *nbr;
  uint64_t *send, *recv;
  uint64_t send_max, recv_total;
  MPI_Request *rq;
  MPI_Status *st;
} mh_t;

/* Rank 0 sends every rank its part of the plan's halo (mesh decided on
 * rank 0, broadcast). 0, or 1 when out of memory somewhere. */
static int mesh_distribute(const rp_plan_t *pl, int rank, int size, int mesh,
                           mh_t *h) {
  memset(h, 0, sizeof *h);
  if (!mesh) return 0;
  uint64_t n = 0;
  if (rank == 0) {
    for (int r = 1; r < size; r++) {
      uint64_t k = pl->hoff[r + 1] - pl->hoff[r];
      MPI_Send(&k, 1, MPI_UINT64_T, r, 8, MPI_COMM_WORLD);
    }
    n = pl->hoff[1] - pl->hoff[0];
  } else {
    MPI_Recv(&n, 1, MPI_UINT64_T, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  uint64_t *v = malloc((n ? 3 * n : 1) * sizeof *v);
  h->nbr = malloc((n ? n : 1) * sizeof *h->nbr);
  h->send = malloc((n ? n : 1) * sizeof *h->send);
  h->recv = malloc((n ? n : 1) * sizeof *h->recv);
  h->rq = malloc((n ? 2 * n : 1) * sizeof *h->rq);
  h->st = malloc((n ? 2 * n : 1) * sizeof *h->st);
  int ok = v && h->nbr && h->send && h->recv && h->rq && h->st, all;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!all) {
    if (!ok) fprintf(stderr, "la-replay: rank %d: out of memory\n", rank);
    free(v);
    return 1;
  }
  if (rank == 0) {
    for (int r = 0; r < size; r++) {
      uint64_t k0 = pl->hoff[r], k = pl->hoff[r + 1] - k0;
      uint64_t *w = r ? malloc((k ? 3 * k : 1) * sizeof *w) : v;
      if (!w) {
        fprintf(stderr, "la-replay: rank 0: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      for (uint64_t j = 0; j < k; j++) {
        w[3 * j] = pl->hnbr[k0 + j];
        w[3 * j + 1] = pl->hsend[k0 + j];
        w[3 * j + 2] = pl->hrecv[k0 + j];
      }
      if (r) {
        MPI_Send(w, (int)(3 * k), MPI_UINT64_T, r, 9, MPI_COMM_WORLD);
        free(w);
      }
    }
  } else {
    MPI_Recv(v, (int)(3 * n), MPI_UINT64_T, 0, 9, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  }
  h->n = (int)n;
  for (uint64_t j = 0; j < n; j++) {
    h->nbr[j] = (int)v[3 * j];
    h->send[j] = v[3 * j + 1];
    h->recv[j] = v[3 * j + 2];
    if (h->send[j] > h->send_max) h->send_max = h->send[j];
    h->recv_total += h->recv[j];
  }
  free(v);
  return 0;
}

static void mesh_free(mh_t *h) {
  free(h->nbr), free(h->send), free(h->recv), free(h->rq), free(h->st);
}

/* One exchange of the mesh halo: from every neighbour its cells facing
 * this rank, to every neighbour this rank's facing it, bytes per cell,
 * nonblocking point-to-point, all posted, then waited on. One send buffer
 * serves every send (MPI lets sends share a buffer). */
static void mesh_halo(const mh_t *h, long bytes, char *out, char *in) {
  int k = 0;
  uint64_t at = 0;
  for (int j = 0; j < h->n; j++) {
    MPI_Irecv(in + at, (int)(h->recv[j] * (uint64_t)bytes), MPI_BYTE,
              h->nbr[j], 3, MPI_COMM_WORLD, &h->rq[k++]);
    at += h->recv[j] * (uint64_t)bytes;
  }
  for (int j = 0; j < h->n; j++)
    MPI_Isend(out, (int)(h->send[j] * (uint64_t)bytes), MPI_BYTE, h->nbr[j],
              3, MPI_COMM_WORLD, &h->rq[k++]);
  MPI_Waitall(k, h->rq, h->st);
}

/* The calling thread's CPU time in seconds. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sends and receives bytes with ranks rank-1 and rank+1. */
static void halo(char *out, char *in, long bytes, int rank, int size) {
  int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int up = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  MPI_Sendrecv(out, (int)bytes, MPI_BYTE, up, 1, in, (int)bytes, MPI_BYTE,
               down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(out, (int)bytes, MPI_BYTE, down, 2, in, (int)bytes, MPI_BYTE,
               up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  rp_opts_t o = {.src = {.last = UINT64_MAX}, .calib = 0.3, .use_la = 1};
  int rc = parse(argc, argv, rank, &o);
  if (rc) {
    MPI_Finalize();
    return rc == 1 ? 0 : rc;
  }
  rp_plan_t pl;
  memset(&pl, 0, sizeof pl);
  if ((rc = load_all(&o, rank, size, &pl)) != 0) {
    rp_plan_free(&pl);
    MPI_Finalize();
    return rc;
  }
  size_t nc = pl.nc;
  uint64_t nc64 = nc;
  MPI_Bcast(&nc64, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  nc = (size_t)nc64;
  double *cost = NULL;
  uint64_t n = 0;
  if (distribute(&pl, rank, size, nc, &cost, &n)) {
    rp_plan_free(&pl);
    MPI_Finalize();
    return 1;
  }
  int mesh = rank == 0 ? pl.mesh : 0;
  MPI_Bcast(&mesh, 1, MPI_INT, 0, MPI_COMM_WORLD);
  mh_t mh;
  if (mesh_distribute(&pl, rank, size, mesh, &mh)) {
    mesh_free(&mh);
    free(cost);
    rp_plan_free(&pl);
    MPI_Finalize();
    return 1;
  }
  if (mesh) o.halo = 0; /* the mesh halo replaces the ring */
  char *hbuf = o.halo ? calloc(2, (size_t)o.halo) : NULL;
  char *mout = mesh ? calloc(1, mh.send_max * (uint64_t)o.halo_per_cell + 1)
                    : NULL;
  char *min = mesh ? malloc(mh.recv_total * (uint64_t)o.halo_per_cell + 1)
                   : NULL;
  double *mine = malloc(2 * (nc ? nc : 1) * sizeof *mine);
  double *all = rank == 0 ? malloc(2 * (size_t)size * nc * sizeof *all) : NULL;
  if ((o.halo && !hbuf) || (mesh && (!mout || !min)) || !mine ||
      (rank == 0 && !all)) {
    fprintf(stderr, "la-replay: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  MPI_Barrier(MPI_COMM_WORLD);
  double rate = rp_spin_calibrate(o.calib), rmin = rate, rmax = rate;
  MPI_Reduce(&rate, &rmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&rate, &rmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  int la_on = 0;
  if (o.use_la) {
    LA_setAppId(o.app_id); /* every rank: no broadcast of the id */
    /* LA needs at least one element; a rank the partition gives none has
     * one that is never probed. */
    int lrc = LA_register("la-replay", rank, size, n ? (long)n : 1);
    la_on = lrc == 0;
    if (lrc && rank == 0)
      fprintf(stderr, "la-replay: not profiled by LA: %s\n", LA_lastError());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  uint64_t x = (uint64_t)rank + 1;
  for (size_t c = 0; c < nc; c++) {
    if (o.halo) halo(hbuf, hbuf + o.halo, o.halo, rank, size);
    if (mesh) mesh_halo(&mh, o.halo_per_cell, mout, min);
    const double *w = cost + c * n;
    double carry = 0, c0 = cpu_now(), t0 = MPI_Wtime();
    for (uint64_t e = 0; e < n; e++) {
      double want = w[e] * rate + carry;
      uint64_t it = want > 0 ? (uint64_t)want : 0;
      carry = want - (double)it;
      if (la_on) LA_startProbe((long)e);
      x = rp_spin(it, x);
      if (la_on) LA_stopProbe((long)e);
    }
    mine[c] = MPI_Wtime() - t0;
    mine[nc + c] = cpu_now() - c0;
    if (la_on) LA_dataXfer();
  }
  __asm__ volatile("" : : "r"(x));
  if (la_on) LA_finalize();
  /* all: every rank's wall times, then every rank's CPU times */
  MPI_Gather(mine, (int)nc, MPI_DOUBLE, all, (int)nc, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  MPI_Gather(mine + nc, (int)nc, MPI_DOUBLE, rank == 0 ? all + (size_t)size * nc : NULL,
             (int)nc, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (!o.quiet)
      for (size_t c = 0; c < nc; c++) rp_report_cycle(&pl, c, all, all + (size_t)size * nc);
    rp_report_head_t h = {.app = o.src.app,
                          .replay_app = la_on ? o.app_id : "-",
                          .partition = o.src.partition,
                          .rate_min = rmin,
                          .rate_max = rmax,
                          .halo = mesh ? "mesh" : o.halo ? "ring" : "none",
                          .ring_bytes = o.halo,
                          .bytes_per_cell = o.halo_per_cell};
    rp_report_end(&pl, &h, all, all + (size_t)size * nc);
    fflush(stdout);
  }
  free(all), free(mine), free(hbuf), free(cost), free(mout), free(min);
  mesh_free(&mh);
  rp_plan_free(&pl);
  MPI_Finalize();
  return 0;
}
