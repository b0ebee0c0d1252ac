/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_main.c: la-replay, a synthetic MPI application that replays a recorded
 * run's costs (docs/balancing.md, "Replaying a partition"; docs/lactl.md,
 * "lactl replay").
 *
 *   mpiexec -n P la-replay APP [CYCLE|FIRST:LAST] [--partition FILE]
 *                          [--halo BYTES] [--weights KIND] [--app-id ID]
 *
 * Rank 0 reads APP's stored Trace-Sets from the GlobalAgent's feed
 * (rp_load.c) and sends every rank its elements' costs. Each rank
 * calibrates the spin (rp_spin.c), registers with LA under its own id
 * (default APP.replay), and per cycle optionally exchanges BYTES with its
 * neighbour ranks r-1 and r+1, then spends each element's recorded cost
 * with the spin between LA_startProbe and LA_stopProbe, timed as a whole
 * by MPI_Wtime (wall) and by the thread's CPU clock (what the spin got of
 * the core: on a shared or oversubscribed node the wall time also holds
 * the time other processes ran), and ends the cycle with LA_dataXfer. Rank 0 prints what
 * was recorded, targeted and replayed (rp_report.c).
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
  long halo;
  double calib;
  int use_la, quiet;
  char app_id[140];
} rp_opts_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpiexec -n P la-replay APP [CYCLE|FIRST:LAST] [--partition "
          "FILE]\n"
          "                 [--halo BYTES] [--weights measured|robust] "
          "[--app-id ID]\n"
          "                 [--global HOST:PORT] [--timeout SECONDS] "
          "[--calibrate SECONDS]\n"
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
          "cycle\n"
          "  --weights KIND      measured or robust (default: robust when "
          "every rank\n"
          "                      has them)\n"
          "  --app-id ID         the replay's LA application id (default: "
          "APP.replay)\n"
          "  --global HOST:PORT  the GlobalAgent's feed (default: $LA_GLOBAL "
          "or\n"
          "                      127.0.0.1:7463)\n"
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
  char *hbuf = o.halo ? calloc(2, (size_t)o.halo) : NULL;
  double *mine = malloc(2 * (nc ? nc : 1) * sizeof *mine);
  double *all = rank == 0 ? malloc(2 * (size_t)size * nc * sizeof *all) : NULL;
  if ((o.halo && !hbuf) || !mine || (rank == 0 && !all)) {
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
                          .rate_max = rmax};
    rp_report_end(&pl, &h, all, all + (size_t)size * nc);
    fflush(stdout);
  }
  free(all), free(mine), free(hbuf), free(cost);
  rp_plan_free(&pl);
  MPI_Finalize();
  return 0;
}
