/* SPDX-License-Identifier: BSD-3-Clause */
/* la_sysv.h: SysV IPC helpers that both sides of the shared-memory hand-off
 * need: libla, which creates the segment and the semaphore set and hands
 * the set to the agent's uid, and the LocalAgent, which verifies, reads and
 * removes them. The segment's layout is la_shm_layout.h's, not this file's.
 * No libuv, no logging: libla links it (LIBLA_COMMON_OBJ in the Makefile).
 */
#ifndef LA_SYSV_H
#define LA_SYSV_H

#include <sys/sem.h>

/* semctl's fourth argument, which the caller must define (semctl(2)). */
union la_semun {
  int val;
  struct semid_ds *buf;
  unsigned short *array;
};

/* The real uid of the live process pid, read from /proc/PID/status.
 * Returns the uid, or -1 when the process is gone or its status cannot be
 * read. */
int la_pid_uid(int pid);

#endif
