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
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The id derived from the launcher's environment into out; *local set
 * when it names this process or its launcher proxy (pid and start time,
 * unique on this node only), cleared for a job id. 0, or LA_EINVAL. */
static int la__derive(const char *app_name, char *out, size_t len,
                      int *local) {
  const char *v;
  int n;
  *local = 0;
  if ((v = getenv("SLURM_JOB_ID")) && *v) {
    const char *step = getenv("SLURM_STEP_ID");
    n = snprintf(out, len, "%s.slurm%s.%s", app_name, v,
                 step && *step ? step : "0");
  } else if ((v = getenv("PMIX_NAMESPACE")) && *v) {
    n = snprintf(out, len, "%s.%s", app_name, v);
  } else if (getenv("PMI_RANK") || getenv("PMI_FD") || getenv("PMI_PORT")) {
    pid_t pp = getppid();
    *local = 1;
    n = snprintf(out, len, "%s.h%d-%llu", app_name, (int)pp,
                 la__start_time(pp));
  } else {
    pid_t p = getpid();
    *local = 1;
    n = snprintf(out, len, "%s.p%d-%llu", app_name, (int)p, la__start_time(p));
  }
  if (n <= 0 || (size_t)n >= len)
    return la__error(LA_EINVAL, "application id longer than %zu bytes",
                     len - 1);
  la__sanitize(out);
  return 0;
}

int la__app_id(const char *app_name, const char *forced, char *out,
               size_t len) {
  int local;
  if (forced && *forced) {
    int n = snprintf(out, len, "%s", forced);
    if (n <= 0 || (size_t)n >= len)
      return la__error(LA_EINVAL, "application id longer than %zu bytes",
                       len - 1);
    la__sanitize(out);
    return 0;
  }
  return la__derive(app_name, out, len, &local);
}

int la__app_id_job(const char *app_name, char *out, size_t len) {
  int local;
  int rc = la__derive(app_name, out, len, &local);
  if (rc || !local) return rc;
  /* pid and start time are unique on this node: the host name (its first
   * label, as much as fits) makes them unique in the cluster */
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) return 0;
  host[strcspn(host, ".")] = '\0';
  size_t used = strlen(out);
  if (used + 2 >= len) return 0;
  snprintf(out + used, len - used, ".%s", host);
  la__sanitize(out + used + 1);
  return 0;
}
