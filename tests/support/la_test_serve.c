/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_serve.c: the stand-ins' shared plumbing (see la_test_serve.h). */
#include "la_test_serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int la_test_listen(uint16_t port, uint16_t *bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (bind(fd, (void *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (void *)&a, &al) != 0) {
    close(fd);
    return -1;
  }
  *bound = ntohs(a.sin_port);
  return fd;
}

void la_test_wake(int fd) {
  if (write(fd, "x", 1) < 0) { /* the loop polls every 10 ms */
  }
}

void la_test_wake_drain(int fd) {
  char b[16];
  if (read(fd, b, sizeof b) < 0) { /* nothing to do */
  }
}

void la_test_serve_poll(int lfd, int wake_rd, int (*fd_of)(void *arg, int i),
                        int n, void (*on_accept)(void *arg),
                        void (*on_conn)(void *arg, int i), void *arg) {
  struct pollfd pf[n + 2];
  int idx[n + 2], np = 0;
  pf[np] = (struct pollfd){.fd = lfd, .events = POLLIN};
  idx[np++] = -1;
  pf[np] = (struct pollfd){.fd = wake_rd, .events = POLLIN};
  idx[np++] = -2;
  for (int i = 0; i < n; i++)
    if (fd_of(arg, i) >= 0) {
      pf[np] = (struct pollfd){.fd = fd_of(arg, i), .events = POLLIN};
      idx[np++] = i;
    }
  la_test_serve_unlock(); /* forks happen here */
  int ready = poll(pf, (nfds_t)np, 10);
  la_test_serve_lock();
  for (int k = 0; k < np && ready > 0; k++) {
    if (!pf[k].revents) continue;
    if (idx[k] == -1)
      on_accept(arg);
    else if (idx[k] == -2)
      la_test_wake_drain(wake_rd);
    else
      on_conn(arg, idx[k]);
  }
}

static pthread_mutex_t la__ts_work = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t la__ts_once = PTHREAD_ONCE_INIT;
static void la__ts_fork_lock(void) {
  pthread_mutex_lock(&la__ts_work);
}
static void la__ts_fork_unlock(void) {
  pthread_mutex_unlock(&la__ts_work);
}
static void la__ts_atfork(void) {
  pthread_atfork(la__ts_fork_lock, la__ts_fork_unlock, la__ts_fork_unlock);
}

void la_test_serve_lock(void) {
  pthread_once(&la__ts_once, la__ts_atfork);
  pthread_mutex_lock(&la__ts_work);
}

void la_test_serve_unlock(void) {
  pthread_mutex_unlock(&la__ts_work);
}

void la_test_serve_end(int *lfd) {
  close(*lfd);
  *lfd = -1;
  la_test_serve_unlock();
}

int la_test_cond_wait(pthread_mutex_t *mu, pthread_cond_t *cv,
                      int (*done)(void *), void *arg, int timeout_ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += timeout_ms / 1000;
  dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  int rc = 0;
  pthread_mutex_lock(mu);
  while (!done(arg))
    if (pthread_cond_timedwait(cv, mu, &dl) == ETIMEDOUT) {
      rc = done(arg) ? 0 : -1;
      break;
    }
  pthread_mutex_unlock(mu);
  return rc;
}

int la_test_serve_frames(int fd, la_frame_reader_t *rd,
                         la_test_frame_fn on_frame, void *arg) {
  uint8_t buf[65536];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  if (n <= 0) return 1;
  int r = la_frame_reader_feed(rd, buf, (size_t)n);
  uint16_t type;
  const uint8_t *pl;
  uint32_t len;
  while (r == 0 && (r = la_frame_reader_next(rd, &type, &pl, &len)) == 1)
    r = on_frame(arg, type, pl, len);
  return r;
}
