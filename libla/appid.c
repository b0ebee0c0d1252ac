/* SPDX-License-Identifier: BSD-3-Clause */
/* appid.c: who this process is in its job, from the launcher's environment.
 *
 * The application id must be the same on every rank of a job, without any
 * communication, and unique across jobs on a node. In order of preference:
 * LA_APP_ID (or LA_setAppId); Slurm's job and step ids; PMIx's namespace
 * (Open MPI); then, under MPICH's Hydra (PMI_RANK set, no job id exported),
 * the pid and start time of the launcher proxy that started the ranks on
 * this node: shared by the node's ranks, unique on the node. Alone it does
 * not tell one node's ranks from another's: where MPI is initialised,
 * mpi_appid.c has rank 0 derive the id (la__app_id_job: with rank 0's host
 * name) and every rank take it.
 *
 * Launcher ids are predictable (Slurm's job ids are public), and the
 * GlobalAgent binds an id to the uid of its first rank, so another user
 * could claim a pending job's id first (docs/security.md). A derived id
 * therefore ends in a random part, ".<8 base32 characters>" (40 bits from
 * getrandom), wherever one process decides the id for the whole job: rank 0
 * under MPI (broadcast with the rest), a job of one process, a process
 * under no launcher. Where the ranks of a job derive their ids each on its
 * own (a launcher's job id without MPI, Hydra's proxy without MPI) they
 * could not agree on one, and the id stays as derived. LA_APP_ID_RANDOM=0
 * leaves it out everywhere; LA_APP_ID and LA_setAppId are taken as given.
 * The random part is drawn once per process (a registration after
 * LA_finalize keeps the id).
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include "la_internal.h"

static int la__env_long(const char *name, long *out) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end;
  long x = strtol(v, &end, 10);
  if (*end) return 0;
  *out = x;
  return 1;
}

int la__launcher_rank(int *rank, int *nprocs) {
  static const char *ranks[] = {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK",
                                "SLURM_PROCID", NULL};
  static const char *sizes[] = {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE",
                                "SLURM_NTASKS", NULL};
  long v;
  if (*rank < 0) {
    *rank = 0;
    for (int i = 0; ranks[i]; i++)
      if (la__env_long(ranks[i], &v) && v >= 0) {
        *rank = (int)v;
        break;
      }
  }
  if (*nprocs < 0) {
    *nprocs = 1;
    for (int i = 0; sizes[i]; i++)
      if (la__env_long(sizes[i], &v) && v > 0) {
        *nprocs = (int)v;
        break;
      }
  }
  if (*rank >= *nprocs)
    return la__error(LA_EINVAL, "rank %d not below nprocs %d", *rank, *nprocs);
  return 0;
}

/* Start time (clock ticks since boot) of a process, 0 if unknown. */
static unsigned long long la__start_time(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the command name may contain spaces */
  if (!p) return 0;
  unsigned long long st = 0;
  /* fields after ')': state(3) ... starttime is field 22 */
  int field = 2;
  for (char *q = p + 1; *q && field < 22; q++)
    if (*q == ' ') {
      field++;
      if (field == 22) st = strtoull(q + 1, NULL, 10);
    }
  return st;
}

static void la__sanitize(char *s) {
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && !strchr("._-:+", *s)) *s = '_';
}

/* How an id was derived: a job id every rank sees, the launcher proxy's
 * pid and start time (unique on this node), or this process's own (no
 * launcher). */
enum { LA__ID_JOB, LA__ID_PROXY, LA__ID_OWN };

/* The id derived from the launcher's environment into out; *kind says how
 * (above). 0, or LA_EINVAL. */
static int la__derive(const char *app_name, char *out, size_t len,
                      int *kind) {
  const char *v;
  int n;
  *kind = LA__ID_JOB;
  if ((v = getenv("SLURM_JOB_ID")) && *v) {
    const char *step = getenv("SLURM_STEP_ID");
    n = snprintf(out, len, "%s.slurm%s.%s", app_name, v,
                 step && *step ? step : "0");
  } else if ((v = getenv("PMIX_NAMESPACE")) && *v) {
    n = snprintf(out, len, "%s.%s", app_name, v);
  } else if (getenv("PMI_RANK") || getenv("PMI_FD") || getenv("PMI_PORT")) {
    pid_t pp = getppid();
    *kind = LA__ID_PROXY;
    n = snprintf(out, len, "%s.h%d-%llu", app_name, (int)pp,
                 la__start_time(pp));
  } else {
    pid_t p = getpid();
    *kind = LA__ID_OWN;
    n = snprintf(out, len, "%s.p%d-%llu", app_name, (int)p, la__start_time(p));
  }
  if (n <= 0 || (size_t)n >= len)
    return la__error(LA_EINVAL, "application id longer than %zu bytes",
                     len - 1);
  la__sanitize(out);
  return 0;
}

#define LA__RANDOM_CHARS 8 /* base32: 40 bits */

int la__app_id_random_on(void) {
  const char *v = getenv("LA_APP_ID_RANDOM");
  return !(v && (!strcmp(v, "0") || !strcasecmp(v, "no") ||
                 !strcasecmp(v, "false") || !strcasecmp(v, "off")));
}

/* This process's random part (drawn once per process: a fork draws its
 * own) into r. 0, or LA_EIO when the kernel gives no random bytes. */
static int la__random_part(char r[LA__RANDOM_CHARS + 1]) {
  static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
  static char part[LA__RANDOM_CHARS + 1]; /* this file's: the drawn part */
  static pid_t drawn_by;                  /* the process that drew it */
  if (!part[0] || drawn_by != getpid()) {
    uint8_t b[5];
    size_t got = 0;
    while (got < sizeof b) {
      ssize_t n = getrandom(b + got, sizeof b - got, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return la__error(LA_EIO,
                         "no random bytes for the application id's random "
                         "part (getrandom: %s): set LA_APP_ID, or "
                         "LA_APP_ID_RANDOM=0",
                         n < 0 ? strerror(errno) : "none");
      got += (size_t)n;
    }
    uint64_t x = 0;
    for (int i = 0; i < 5; i++) x = x << 8 | b[i];
    for (int i = 0; i < LA__RANDOM_CHARS; i++)
      part[i] = b32[(x >> (5 * (LA__RANDOM_CHARS - 1 - i))) & 31];
    part[LA__RANDOM_CHARS] = '\0';
    drawn_by = getpid();
  }
  memcpy(r, part, LA__RANDOM_CHARS + 1);
  return 0;
}

/* Appends ".<random part>" to the id in out (unless LA_APP_ID_RANDOM=0).
 * 0, LA_EINVAL (no room), LA_EIO. */
static int la__add_random(char *out, size_t len) {
  if (!la__app_id_random_on()) return 0;
  char r[LA__RANDOM_CHARS + 1];
  int rc = la__random_part(r);
  if (rc) return rc;
  size_t used = strlen(out);
  if (used + 1 + LA__RANDOM_CHARS >= len)
    return la__error(LA_EINVAL,
                     "application id %s with its random part longer than "
                     "%zu bytes (a shorter program name, or LA_APP_ID)",
                     out, len - 1);
  snprintf(out + used, len - used, ".%s", r);
  return 0;
}

int la__app_id(const char *app_name, const char *forced, int nprocs,
               char *out, size_t len) {
  int kind;
  if (forced && *forced) {
    int n = snprintf(out, len, "%s", forced);
    if (n <= 0 || (size_t)n >= len)
      return la__error(LA_EINVAL, "application id longer than %zu bytes",
                       len - 1);
    la__sanitize(out);
    return 0;
  }
  int rc = la__derive(app_name, out, len, &kind);
  if (rc) return rc;
  /* only where no other process has to find the same id */
  if (nprocs == 1 || kind == LA__ID_OWN) return la__add_random(out, len);
  return 0;
}

int la__app_id_job(const char *app_name, char *out, size_t len) {
  int kind;
  int rc = la__derive(app_name, out, len, &kind);
  if (rc) return rc;
  if (kind != LA__ID_JOB) {
    /* pid and start time are unique on this node: the host name (its first
     * label, as much as fits beside the random part) makes them unique in
     * the cluster */
    size_t room = la__app_id_random_on() ? len - 1 - LA__RANDOM_CHARS : len;
    char host[256] = "";
    size_t used = strlen(out);
    if (gethostname(host, sizeof host - 1) == 0 && host[0] &&
        used + 2 < room) {
      host[strcspn(host, ".")] = '\0';
      snprintf(out + used, room - used, ".%s", host);
      la__sanitize(out + used + 1);
    }
  }
  return la__add_random(out, len);
}
