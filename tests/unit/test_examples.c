/* test_examples.c: runs the example programs under mpiexec as a user would
 * and checks what they print.
 *
 * wavetoy must give the same checksum, bit for bit, whether LA is absent (no
 * agent at LA_AGENT), disabled (LA_DISABLE=1), never called (--no-la) or
 * actively profiling into an agent (the la_test_peer stand-in): invariant 1
 * of DESIGN.md. It must exit 0 in every case. Its domain decomposition must
 * not change the answer either: -n 3 on 20 planes (a remainder to share) is
 * compared with -n 1.
 *
 * Each run is a fork/exec of mpiexec in its own process group, with the
 * parent's LA_* variables removed, stdout and stderr captured, and a time
 * limit after which the whole group is killed. The tests skip when mpiexec
 * is not installed. The binary is build/examples/wavetoy (override with
 * LA_WAVETOY), built by `make all` before `make check` runs this.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "la_test_peer.h"

extern char **environ;

#ifndef RUN_TIMEOUT_MS
#define RUN_TIMEOUT_MS 60000 /* per mpiexec run; then the group is killed */
#endif
#define OUT_CAP 16384

typedef struct run_s {
  int status;    /* exit status, or 128+signal, or -1 if it could not start */
  int timed_out; /* 1 if killed at the time limit */
  char out[OUT_CAP], err[OUT_CAP];
} run_t;

static const char *wavetoy_path(void) {
  const char *p = getenv("LA_WAVETOY");
  return p && *p ? p : "build/examples/wavetoy";
}

/* 1 if an executable named name is on PATH. */
static int on_path(const char *name) {
  const char *path = getenv("PATH");
  char buf[4096];
  if (!path) return 0;
  while (*path) {
    size_t len = strcspn(path, ":");
    if (len > 0 && len + strlen(name) + 2 < sizeof buf) {
      snprintf(buf, sizeof buf, "%.*s/%s", (int)len, path, name);
      if (access(buf, X_OK) == 0) return 1;
    }
    path += len;
    if (*path == ':') path++;
  }
  return 0;
}

static void need_mpiexec(void) {
  if (!on_path("mpiexec")) {
    print_message("skip: mpiexec not found on PATH (install mpich)\n");
    skip();
  }
  if (access(wavetoy_path(), X_OK) != 0) {
    print_message("%s missing: run `make examples` first\n", wavetoy_path());
    fail();
  }
}

/* A TCP port on 127.0.0.1 with nobody listening (bound, then closed). */
static int closed_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
  if (fd < 0) return -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static void append(char *buf, size_t *len, const char *src, size_t n) {
  if (*len + n >= OUT_CAP) n = OUT_CAP - 1 - *len;
  memcpy(buf + *len, src, n);
  *len += n;
  buf[*len] = '\0';
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs `mpiexec -n np wavetoy args...` with the parent's environment minus
 * every LA_* variable, plus env (NAME=value strings, NULL-terminated). */
static void run_wavetoy(run_t *r, int np, const char *const *args,
                        const char *const *env) {
  char *argv[32], *envp[512], nbuf[16];
  int outp[2], errp[2], n = 0, e = 0;
  size_t olen = 0, elen = 0;
  pid_t pid;

  memset(r, 0, sizeof *r);
  r->status = -1;
  snprintf(nbuf, sizeof nbuf, "%d", np);
  argv[n++] = "mpiexec";
  argv[n++] = "-n";
  argv[n++] = nbuf;
  argv[n++] = (char *)wavetoy_path();
  for (int i = 0; args && args[i] && n < 31; i++) argv[n++] = (char *)args[i];
  argv[n] = NULL;
  for (char **v = environ; *v && e < 500; v++)
    if (strncmp(*v, "LA_", 3) != 0) envp[e++] = *v;
  for (int i = 0; env && env[i] && e < 511; i++) envp[e++] = (char *)env[i];
  envp[e] = NULL;

  assert_int_equal(pipe(outp), 0);
  assert_int_equal(pipe(errp), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* only async-signal-safe calls until exec */
    setpgid(0, 0);
    dup2(outp[1], 1);
    dup2(errp[1], 2);
    close(outp[0]), close(outp[1]), close(errp[0]), close(errp[1]);
    execvpe("mpiexec", argv, envp);
    _exit(127);
  }
  setpgid(pid, pid); /* either side may win the race; both set the same */
  close(outp[1]);
  close(errp[1]);

  long long deadline = now_ms() + RUN_TIMEOUT_MS;
  int open_fds = 2;
  struct pollfd pf[2] = {{outp[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
  while (open_fds > 0) {
    long long left = deadline - now_ms();
    if (left <= 0) {
      r->timed_out = 1;
      kill(-pid, SIGKILL);
      break;
    }
    int k = poll(pf, 2, (int)left);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) break;
    for (int i = 0; i < 2; i++) {
      char buf[4096];
      ssize_t got;
      if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      got = read(pf[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (i == 0) append(r->out, &olen, buf, (size_t)got);
        else append(r->err, &elen, buf, (size_t)got);
      } else if (got == 0 || errno != EINTR) {
        close(pf[i].fd);
        pf[i].fd = -1;
        open_fds--;
      }
    }
  }
  for (int i = 0; i < 2; i++)
    if (pf[i].fd >= 0) close(pf[i].fd);

  /* Wait for mpiexec without reaping it, so that its pid (the group id)
   * cannot be reused while we kill ranks that outlived it, then reap. */
  siginfo_t si;
  int st = 0;
  while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
         errno == EINTR) {
  }
  kill(-pid, SIGKILL);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Fails the test with the run's output unless it exited 0. */
static void expect_ok(const run_t *r, const char *what) {
  if (r->timed_out || r->status != 0) {
    print_message("%s: %s (status %d)\n--- stdout\n%s--- stderr\n%s\n", what,
                  r->timed_out ? "timed out" : "failed", r->status, r->out,
                  r->err);
    fail();
  }
}

/* The text after "wavetoy: checksum " on its line, into dst. */
static void checksum_of(const run_t *r, const char *what, char *dst,
                        size_t cap) {
  const char *key = "wavetoy: checksum ";
  const char *p = strstr(r->out, key);
  if (!p) {
    print_message("%s: no checksum line in:\n%s\n", what, r->out);
    fail();
  }
  p += strlen(key);
  size_t len = strcspn(p, "\n");
  assert_true(len > 0 && len < cap);
  memcpy(dst, p, len);
  dst[len] = '\0';
}

static void expect_text(const run_t *r, const char *what, const char *text) {
  if (!strstr(r->out, text)) {
    print_message("%s: expected \"%s\" in:\n%s\n", what, text, r->out);
    fail();
  }
}

static const char *const small[] = {"--n", "24", "--steps", "10", NULL};

/* No agent, LA_DISABLE=1 and --no-la: exit 0, the same checksum. */
static void test_wavetoy_la_never_changes_results(void **state) {
  static run_t none, disabled, off;
  char agent[64], c_none[64], c_disabled[64], c_off[64];
  const char *const no_la[] = {"--n", "24", "--steps", "10", "--no-la", NULL};
  need_mpiexec();

  int port = closed_port();
  assert_true(port > 0);
  snprintf(agent, sizeof agent, "LA_AGENT=127.0.0.1:%d", port);
  const char *const env_none[] = {agent, NULL};
  const char *const env_disabled[] = {"LA_DISABLE=1", NULL};

  run_wavetoy(&none, 4, small, env_none);
  expect_ok(&none, "no agent");
  run_wavetoy(&disabled, 4, small, env_disabled);
  expect_ok(&disabled, "LA_DISABLE=1");
  run_wavetoy(&off, 4, no_la, NULL);
  expect_ok(&off, "--no-la");

  expect_text(&none, "no agent", "LA not registered");
  expect_text(&disabled, "LA_DISABLE=1", "LA_DISABLE");
  expect_text(&off, "--no-la", "LA off");
  checksum_of(&none, "no agent", c_none, sizeof c_none);
  checksum_of(&disabled, "LA_DISABLE=1", c_disabled, sizeof c_disabled);
  checksum_of(&off, "--no-la", c_off, sizeof c_off);
  assert_string_equal(c_none, c_off);
  assert_string_equal(c_disabled, c_off);
  print_message("checksum %s in all three runs\n", c_off);
}

/* Profiling into an agent (the la_test_peer stand-in): all ranks register,
 * every rank delivers every cycle of its 24x24x6 slab, and the checksum is
 * still that of the uninstrumented run. */
static void test_wavetoy_profiled_same_results(void **state) {
  static run_t on, off;
  char agent[96], c_on[64], c_off[64];
  const char *const no_la[] = {"--n", "24", "--steps", "10", "--no-la", NULL};
  need_mpiexec();

  la_test_peer_t *peer = la_test_peer_start();
  assert_non_null(peer);
  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_test_peer_addr(peer));
  const char *const env_on[] = {agent, NULL};

  run_wavetoy(&on, 4, small, env_on);
  run_wavetoy(&off, 4, no_la, NULL);
  expect_ok(&on, "with an agent");
  expect_ok(&off, "--no-la");
  expect_text(&on, "with an agent", "LA registered on 4 of 4 ranks");
  checksum_of(&on, "with an agent", c_on, sizeof c_on);
  checksum_of(&off, "--no-la", c_off, sizeof c_off);
  assert_string_equal(c_on, c_off);

  assert_int_equal(la_test_peer_wait_cycles(peer, 40, 10000), 0);
  assert_int_equal(la_test_peer_wait_closed(peer, 4, 10000), 0);
  assert_int_equal(la_test_peer_registrations(peer), 4);
  la_peer_reg_t reg = la_test_peer_last_reg(peer);
  assert_string_equal(reg.app_name, "wavetoy");
  assert_int_equal(reg.nprocs, 4);
  assert_int_equal(reg.grid[0], 24);
  assert_int_equal(reg.grid[1], 24);
  assert_int_equal(reg.grid[2], 6);
  int per_rank[4] = {0, 0, 0, 0};
  for (size_t c = 0; c < la_test_peer_ncycles(peer); c++) {
    const la_peer_cycle_t *cy = la_test_peer_cycle(peer, c);
    double sum = 0.0;
    assert_true(cy->rank >= 0 && cy->rank < 4);
    assert_int_equal(cy->n, 24 * 24 * 6);
    for (uint64_t i = 0; i < cy->n; i++) {
      assert_true(cy->values[i] >= 0.0);
      sum += cy->values[i];
    }
    assert_true(sum > 0.0);
    per_rank[cy->rank]++;
  }
  for (int r = 0; r < 4; r++) assert_int_equal(per_rank[r], 10);
  la_test_peer_stop(peer);
  const char *line = strstr(on.out, "wavetoy: LA ");
  print_message("%.*s\n", line ? (int)strcspn(line, "\n") : 0,
                line ? line : "");
}

/* -n 3 on 20 planes (7, 7, 6) against -n 1: rounding at most. */
static void test_wavetoy_decomposition(void **state) {
  static run_t one, three;
  char c1[64], c3[64];
  const char *const args[] = {"--n", "20", "--steps", "20", "--no-la",
                              NULL};
  need_mpiexec();

  run_wavetoy(&one, 1, args, NULL);
  expect_ok(&one, "-n 1");
  run_wavetoy(&three, 3, args, NULL);
  expect_ok(&three, "-n 3");
  checksum_of(&one, "-n 1", c1, sizeof c1);
  checksum_of(&three, "-n 3", c3, sizeof c3);
  double a = strtod(c1, NULL), b = strtod(c3, NULL);
  assert_true(a != 0.0);
  double rel = fabs(a - b) / fabs(a);
  if (!strcmp(c1, c3))
    print_message("-n 1 and -n 3: checksum %s, bit-identical\n", c1);
  else
    print_message("-n 1 %s, -n 3 %s: relative difference %.3g\n", c1, c3,
                  rel);
  assert_true(rel <= 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_wavetoy_la_never_changes_results),
    cmocka_unit_test(test_wavetoy_profiled_same_results),
    cmocka_unit_test(test_wavetoy_decomposition),
  };
  signal(SIGPIPE, SIG_IGN);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
