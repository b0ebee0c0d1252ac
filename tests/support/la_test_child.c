/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_child.c: fork a test's child with default crash handling, and
 * wait for it (see la_test_child.h).
 */
#include "la_test_child.h"

#include <grp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

pid_t la_test_fork(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0)
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
      signal(sigs[i], SIG_DFL);
  return pid;
}

int la_test_wait(pid_t pid) {
  int st = 0;

  if (waitpid(pid, &st, 0) != pid) return -1;
  if (WIFSIGNALED(st)) return 1000 + WTERMSIG(st);
  return WEXITSTATUS(st);
}

int la_test_become(int uid) {
  return setgroups(0, NULL) == 0 && setgid((gid_t)uid) == 0 &&
                 setuid((uid_t)uid) == 0
             ? 0
             : -1;
}
