/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_mpi.c: MPI jobs and linked LocalAgents for tests (see
 * la_test_mpi.h). */
#include "la_test_mpi.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_test_stack.h"

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

int la_test_start_la(la_test_daemon_t *la, const char *global,
                     const char *secret, const char *host, int timeout_ms,
                     char *addr, size_t n) {
  char port_file[600], spool[600];
  la_td_argv_t a;
  la_td_path(la, "port", port_file, sizeof port_file);
  la_td_path(la, "spool", spool, sizeof spool);
  la_td_argv_init(&a);
  la_ts_la_args(&a, port_file, spool, global, secret);
  la_td_argv_add(&a, "--agent.host=%s", host);
  la_ts_la_test_opts(&a);
  if (la_td_start(la, a.v, port_file, timeout_ms) <= 0) return -1;
  snprintf(addr, n, "%s", la_td_addr(la));
  return 0;
}

void la_test_wavetoy_ranks(la_td_argv_t *a, int sep, int np,
                           const char *const *env, const char *wavetoy, int n,
                           int steps) {
  if (sep) la_td_argv_add(a, ":");
  la_td_argv_add(a, "-n");
  la_td_argv_add(a, "%d", np);
  if (env && env[0]) {
    la_td_argv_add(a, "env");
    la_td_argv_extend(a, env);
  }
  la_td_argv_add(a, "%s", wavetoy);
  la_td_argv_add(a, "--n");
  la_td_argv_add(a, "%d", n);
  la_td_argv_add(a, "--steps");
  la_td_argv_add(a, "%d", steps);
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
