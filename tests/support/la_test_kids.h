/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_kids.h: child processes of a test that play applications.
 *
 * A test forks children that call libla (each is a separate process, as
 * ranks are). A child reports through a pipe in fixed-size records whose
 * first member is an int kind; it may wait for "go" bytes from the test
 * between phases. The test reads the records it expects, sends go bytes,
 * and reaps or kills the children; la_tk_cleanup() kills and reaps whatever
 * is left (from a teardown, also after a failed test). Functions return 0
 * or -1 with the reason in why. Test use only.
 */
#ifndef LA_TEST_KIDS_H
#define LA_TEST_KIDS_H

#include <stddef.h>
#include <sys/types.h>

#define LA_TEST_MAX_KIDS 24

typedef struct la_test_kid {
  pid_t pid; /* 0 once reaped */
  int res;   /* records from the child */
  int go;    /* go bytes to the child; -1 when unused */
} la_test_kid_t;

typedef struct la_test_kids {
  la_test_kid_t k[LA_TEST_MAX_KIDS];
  int n;
} la_test_kids_t;

/* Forks a child running fn(arg, res, go) (go is -1 unless with_go) and then
 * exiting 0. The child keeps no other descriptor above 2 than its pipe
 * ends, so nothing of the parent's (a listener, a daemon's socket) outlives
 * the parent's copy. Returns the child, or NULL when the table is full or
 * fork fails. */
la_test_kid_t *la_tk_spawn(la_test_kids_t *ks,
                           void (*fn)(const void *arg, int res, int go),
                           const void *arg, int with_go);

/* Reads records of size bytes from the child until one of the given kind
 * (the record's first int), which is copied to out. -1 when none arrives
 * within timeout_ms or the child ends first. */
int la_tk_expect(la_test_kid_t *k, int kind, void *out, size_t size,
                 int timeout_ms, char *why, size_t n);

/* Sends the child one go byte. */
int la_tk_go(la_test_kid_t *k);

/* Waits up to timeout_ms for the child to exit; returns its exit code
 * (128 + signal when killed), or -1 when it did not exit in time. */
int la_tk_reap(la_test_kid_t *k, int timeout_ms);

/* SIGKILLs the child and reaps it. */
void la_tk_kill(la_test_kid_t *k);

/* Closes every pipe and kills and reaps every child not yet reaped. */
void la_tk_cleanup(la_test_kids_t *ks);

#endif /* LA_TEST_KIDS_H */
