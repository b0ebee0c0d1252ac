/* SPDX-License-Identifier: BSD-3-Clause */
/* placement.c: CPU set and worker priority of the LocalAgent
 * (placement.h). */
#include "placement.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "la_limits.h"

/* Fills *set from list. Returns the number of CPUs named, or -1 (why). */
static int la__parse(const char *list, cpu_set_t *set, char *why,
                     size_t why_len) {
  CPU_ZERO(set);
  int count = 0;
  const char *p = list;
  while (*p) {
    char *end;
    errno = 0;
    long a = strtol(p, &end, 10), b;
    if (end == p || errno || a < 0 || a >= CPU_SETSIZE) goto bad;
    b = a;
    p = end;
    if (*p == '-') {
      b = strtol(p + 1, &end, 10);
      if (end == p + 1 || errno || b < a || b >= CPU_SETSIZE) goto bad;
      p = end;
    }
    for (long c = a; c <= b; c++) {
      if (!CPU_ISSET((int)c, set)) count++;
      CPU_SET((int)c, set);
    }
    if (*p == ',') p++;
    else if (*p) goto bad;
  }
  return count;
bad:
  snprintf(why, why_len, "agent.cpus '%s' is not a CPU list like 0,2-3",
           list);
  return -1;
}

int la_placement_cpus_check(const char *list, char *why, size_t why_len) {
  cpu_set_t set, allowed;
  if (!list || !list[0]) return 0;
  int n = la__parse(list, &set, why, why_len);
  if (n < 0) return LA_ECONFIG;
  if (n == 0) {
    snprintf(why, why_len, "agent.cpus '%s' names no CPU", list);
    return LA_ECONFIG;
  }
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &set) && !CPU_ISSET(c, &allowed)) {
        snprintf(why, why_len, "agent.cpus '%s': CPU %d is not available to "
                 "this process", list, c);
        return LA_ECONFIG;
      }
  }
  return 0;
}

int la_placement_cpus(const char *list, char *why, size_t why_len) {
  cpu_set_t set;
  if (!list || !list[0]) return 0;
  int rc = la_placement_cpus_check(list, why, why_len);
  if (rc) return rc;
  la__parse(list, &set, why, why_len);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    snprintf(why, why_len, "agent.cpus '%s': %s", list, strerror(errno));
    return LA_ECONFIG;
  }
  return 0;
}

static __thread int la__applied; /* this pool thread's settings are set */

int la_placement_worker(int nice, int idle) {
  if (la__applied) return 0;
  la__applied = 1;
  pthread_setname_np(pthread_self(), "la-compact"); /* top -H, perf */
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (nice > 0) setpriority(PRIO_PROCESS, (id_t)tid, nice > 19 ? 19 : nice);
  if (idle) {
    struct sched_param sp = {.sched_priority = 0};
    sched_setscheduler(0, SCHED_IDLE, &sp); /* 0: the calling thread */
  }
  return 1;
}
