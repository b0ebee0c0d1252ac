/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_ipc.c: SysV IPC objects seen from /proc/sysvipc (see
 * la_test_ipc.h). */
#include "la_test_ipc.h"

#include <stdio.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <time.h>

#include "la_test_daemon.h"

/* Calls fn(id, creator pid, arg) for every segment (shm = 1) or semaphore
 * set (shm = 0, creator pid -1: the kernel lists none), until fn returns
 * non-zero. */
static void la__tipc_each(int shm, int (*fn)(int, int, void *), void *arg) {
  FILE *f = fopen(shm ? "/proc/sysvipc/shm" : "/proc/sysvipc/sem", "r");
  char line[512];
  if (!f) return;
  if (fgets(line, sizeof line, f)) /* the column titles */
    while (fgets(line, sizeof line, f)) {
      long key, id, perms, size, cpid = -1;
      int got =
          sscanf(line, "%ld %ld %lo %ld %ld", &key, &id, &perms, &size, &cpid);
      if (got >= 2 && fn((int)id, shm && got == 5 ? (int)cpid : -1, arg)) break;
    }
  fclose(f);
}

typedef struct {
  int pid, n, last;
} la__tipc_pid_t;

static int la__tipc_by_cpid(int id, int cpid, void *arg) {
  la__tipc_pid_t *p = arg;
  if (cpid == p->pid) {
    p->n++;
    p->last = id;
  }
  return 0;
}

int la_test_ipc_count(int pid) {
  la__tipc_pid_t p = {pid, 0, -1};
  la__tipc_each(1, la__tipc_by_cpid, &p);
  return p.n;
}

int la_test_ipc_wait_count(int pid, int n, int timeout_ms) {
  struct timespec nap = {0, 5 * 1000000L};
  long long end = la_td_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    if (la_test_ipc_count(pid) == n) return 0;
    if (la_td_now_ms() >= end) return -1;
    nanosleep(&nap, NULL);
  }
}

int la_test_shm_of(int pid) {
  la__tipc_pid_t p = {pid, 0, -1};
  la__tipc_each(1, la__tipc_by_cpid, &p);
  return p.last;
}

typedef struct {
  int *ids, max, n;
} la__tipc_ids_t;

static int la__tipc_collect(int id, int cpid, void *arg) {
  la__tipc_ids_t *s = arg;
  (void)cpid;
  if (s->n >= s->max) return 1;
  s->ids[s->n++] = id;
  return 0;
}

int la_test_sem_ids(int *ids, int max) {
  la__tipc_ids_t s = {ids, max, 0};
  la__tipc_each(0, la__tipc_collect, &s);
  return s.n;
}

/* A set one of whose semaphores pid operated on last (a buffer it took:
 * which one depends on the buffer count and the cycles so far). */
static int la__tipc_sem_by_pid(int id, int cpid, void *arg) {
  la__tipc_pid_t *p = arg;
  (void)cpid;
  for (int k = 0; k < 64; k++) {
    int last = semctl(id, k, GETPID);
    if (last < 0) break; /* beyond the set's semaphores */
    if (last == p->pid) {
      p->last = id;
      break;
    }
  }
  return 0;
}

int la_test_sem_of(int pid) {
  la__tipc_pid_t p = {pid, 0, -1};
  la__tipc_each(0, la__tipc_sem_by_pid, &p);
  return p.last;
}
