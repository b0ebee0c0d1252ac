/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_kids.c: a test's application children (see la_test_kids.h). */
#include "la_test_kids.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "la_time.h"

la_test_kid_t *la_tk_spawn(la_test_kids_t *ks,
                           void (*fn)(const void *arg, int res, int go),
                           const void *arg, int with_go) {
  if (ks->n >= LA_TEST_MAX_KIDS) return NULL;
  int rp[2], gp[2] = {-1, -1};
  if (pipe2(rp, O_CLOEXEC)) return NULL;
  if (with_go && pipe2(gp, O_CLOEXEC)) {
    close(rp[0]);
    close(rp[1]);
    return NULL;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(rp[0]);
    close(rp[1]);
    if (gp[0] >= 0) close(gp[0]);
    if (gp[1] >= 0) close(gp[1]);
    return NULL;
  }
  if (pid == 0) {
    for (int fd = 3; fd < 1024; fd++)
      if (fd != rp[1] && fd != gp[0]) close(fd);
    fn(arg, rp[1], gp[0]);
    _exit(0);
  }
  close(rp[1]);
  if (gp[0] >= 0) close(gp[0]);
  la_test_kid_t *k = &ks->k[ks->n++];
  k->pid = pid;
  k->res = rp[0];
  k->go = gp[1];
  return k;
}

int la_tk_expect(la_test_kid_t *k, int kind, void *out, size_t size,
                 int timeout_ms, char *why, size_t n) {
  long long end = (long long)la_now_ms() + timeout_ms;
  char *buf = malloc(size);
  if (!buf) {
    snprintf(why, n, "out of memory");
    return -1;
  }
  for (;;) {
    long long left = end - (long long)la_now_ms();
    if (left <= 0) {
      snprintf(why, n, "child %d: no record of kind %d in time", (int)k->pid,
               kind);
      break;
    }
    struct pollfd pf = {k->res, POLLIN, 0};
    if (poll(&pf, 1, (int)left) <= 0) continue;
    ssize_t got = read(k->res, buf, size);
    if (got < 0 && errno == EINTR) continue;
    if (got != (ssize_t)size) {
      snprintf(why, n, "child %d ended without record %d", (int)k->pid, kind);
      break;
    }
    int got_kind;
    memcpy(&got_kind, buf, sizeof got_kind);
    if (got_kind == kind) {
      memcpy(out, buf, size);
      free(buf);
      return 0;
    }
  }
  free(buf);
  return -1;
}

int la_tk_go(la_test_kid_t *k) {
  return k->go >= 0 && write(k->go, "g", 1) == 1 ? 0 : -1;
}

int la_tk_reap(la_test_kid_t *k, int timeout_ms) {
  long long end = (long long)la_now_ms() + timeout_ms;
  int st = 0;
  for (;;) {
    pid_t r = waitpid(k->pid, &st, WNOHANG);
    if (r == k->pid) break;
    if (r != 0 || (long long)la_now_ms() >= end) return -1;
    usleep(5000);
  }
  k->pid = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void la_tk_kill(la_test_kid_t *k) {
  if (k->pid <= 0) return;
  kill(k->pid, SIGKILL);
  while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  k->pid = 0;
}

void la_tk_cleanup(la_test_kids_t *ks) {
  for (int i = 0; i < ks->n; i++) {
    la_test_kid_t *k = &ks->k[i];
    if (k->go >= 0) close(k->go);
    la_tk_kill(k);
    if (k->res >= 0) close(k->res);
  }
  ks->n = 0;
}
