/* la_test_mpi.c: MPI jobs and linked LocalAgents for tests (see
 * la_test_mpi.h). */
#include "la_test_mpi.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int la_test_find_mpiexec(char *out, size_t len) {
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t k = strcspn(path, ":");
    snprintf(out, len, "%.*s/mpiexec", (int)k, path);
    if (access(out, X_OK) == 0) return 0;
    path += k + (path[k] == ':');
  }
  return -1;
}

pid_t la_test_spawn_group(const char *const *argv, const char *const *env_add,
                          const char *out) {
  int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (int i = 0; env_add && env_add[i]; i++) putenv((char *)env_add[i]);
    dup2(fd, 1);
    dup2(fd, 2);
    for (int k = 3; k < 1024; k++) close(k);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);
  close(fd);
  return pid;
}

int la_test_wait_linked(la_test_daemon_t *la, int timeout_ms, char *state,
                        size_t n) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    if (la_td_status(la, "global_link", state, n) == 0 &&
        !strcmp(state, "connected"))
      return 0;
    if (la_td_now_ms() >= end) return -1;
    la_td_nap_ms(20);
  }
}
