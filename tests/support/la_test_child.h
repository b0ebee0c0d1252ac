/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_child.h: a child process for a test that must survive a crash
 * or a call that does not return (a check that may segfault, a process
 * that attaches shared memory afresh).
 *
 * cmocka installs signal handlers that would resume the test run inside
 * the child after a crash; la_test_fork() puts the defaults back there, so
 * a crash kills only the child and the parent sees the signal.
 */
#ifndef LA_TEST_CHILD_H
#define LA_TEST_CHILD_H

#include <sys/types.h>

/* Flushes stdio and forks. In the child, restores the default action of
 * SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT and returns 0 (the child
 * ends with _exit); in the parent returns the child's pid, or -1 if fork
 * failed. */
pid_t la_test_fork(void);

/* Waits for child pid; returns its exit status, 1000 + the number of the
 * signal that killed it, or -1 if waitpid failed. */
int la_test_wait(pid_t pid);

/* Drops the calling process (run as root) to uid, its group the same
 * number and no supplementary groups: a process of another user. 0, or -1
 * if a step failed. */
int la_test_become(int uid);

#endif /* LA_TEST_CHILD_H */
