/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_ipc.h: what a test can see of SysV IPC objects, from
 * /proc/sysvipc, to assert that nothing outlived a process or a test.
 *
 * Segments are found by their creator's pid (the kernel records it);
 * semaphore sets have no creator pid, so they are found by the pid of the
 * last operation on semaphore 0 (libla's SETALL at creation) or by
 * comparing the ids listed before and after. Test use only.
 */
#ifndef LA_TEST_IPC_H
#define LA_TEST_IPC_H

/* Number of SysV segments whose creator is pid (semaphore sets are counted
 * by the test runner's ipcs comparison). */
int la_test_ipc_count(int pid);
/* Waits up to timeout_ms until la_test_ipc_count(pid) == n: 0, or -1 on
 * timeout (a bounded poll: agents remove segments asynchronously). */
int la_test_ipc_wait_count(int pid, int n, int timeout_ms);
/* Id of a segment created by pid (the last listed), or -1. */
int la_test_shm_of(int pid);
/* Ids of the semaphore sets that exist now, at most max; returns how many. */
int la_test_sem_ids(int *ids, int max);
/* Id of a semaphore set one of whose semaphores pid operated on last (the
 * last listed), or -1. */
int la_test_sem_of(int pid);

#endif /* LA_TEST_IPC_H */
