/* SPDX-License-Identifier: BSD-3-Clause */
/* test_examples.c: runs the example programs under mpiexec as a user would
 * and checks what they print.
 *
 * wavetoy must give the same checksum, bit for bit, whether LA is absent (no
 * agent at LA_AGENT), disabled (LA_DISABLE=1), never called (--no-la) or
 * actively profiling into the real LocalAgent (values read back from the
 * real GlobalAgent's store, la_test_agent.h): invariant 1 of
 * docs/architecture.md. It must exit 0 in every case. Its domain decomposition
 * must not change the answer either: -n 3 on 20 planes (a remainder to share)
 * is compared with -n 1.
 *
 * heavy, multiloop and fwave (the Fortran one, through la_mod) must give the
 * same checksum with no agent at LA_AGENT as with --no-la, and exit 0.
 * wavetoy's and fwave's probe modes (--probe row, cell-always), profiling
 * every few steps into the real agent, keep the checksum too; each profiled
 * step delivers every cell, a row's cells one value spread evenly.
 * rebalance must run to the end without agents and say why it does not
 * rebalance: with no LocalAgent (LA not profiling) and with the real
 * LocalAgent but no GlobalAgent; its checksum must not change. Against the
 * real daemons (la-globalagent and la-localagent on ephemeral ports, see
 * tests/support/la_test_stack.h) it must rebalance at least once, with the
 * same checksum as the run without LA (the cells migrate intact); and the
 * partitions it makes from the same Trace-Sets' robust weights must be as
 * balanced, by the cost model's work units, as those from the measured
 * ones (within 2%: the noise of METIS on noisy weights).
 *
 * Each run is a fork/exec of mpiexec in its own process group, with the
 * parent's LA_* variables removed, stdout and stderr captured, and a time
 * limit after which the whole group is killed. The tests skip when mpiexec
 * is not installed. The binaries are build/examples/NAME (override the
 * directory with LA_EXAMPLES_DIR, or wavetoy alone with LA_WAVETOY), built by
 * `make all` before `make check` runs this.
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

#include "la_test_agent.h"

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

/* Path of example name (static buffer, rotated over a few calls). */
static const char *example_path(const char *name) {
  static char buf[4][512];
  static int next;
  const char *w = getenv("LA_WAVETOY"), *dir = getenv("LA_EXAMPLES_DIR");
  char *b = buf[next++ % 4];
  if (!strcmp(name, "wavetoy") && w && *w) return w;
  snprintf(b, sizeof buf[0], "%s/%s", dir && *dir ? dir : "build/examples",
           name);
  return b;
}

static const char *wavetoy_path(void) {
  return example_path("wavetoy");
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

/* Skips without mpiexec; fails when example name was not built. */
static void need_example(const char *name) {
  if (!on_path("mpiexec")) {
    print_message("skip: mpiexec not found on PATH (install mpich)\n");
    skip();
  }
  if (access(example_path(name), X_OK) != 0) {
    print_message("%s missing: run `make examples` first\n",
                  example_path(name));
    fail();
  }
}

static void need_mpiexec(void) {
  need_example("wavetoy");
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

/* Runs `mpiexec -n np prog args...` with the parent's environment minus
 * every LA_* variable, plus env (NAME=value strings, NULL-terminated). */
static void run_prog(run_t *r, const char *prog, int np,
                     const char *const *args, const char *const *env) {
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
  argv[n++] = (char *)prog;
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
        if (i == 0)
          append(r->out, &olen, buf, (size_t)got);
        else
          append(r->err, &elen, buf, (size_t)got);
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

static void run_wavetoy(run_t *r, int np, const char *const *args,
                        const char *const *env) {
  run_prog(r, wavetoy_path(), np, args, env);
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

/* The text after "NAME: checksum " on its line, into dst. */
static void checksum_named(const run_t *r, const char *name, const char *what,
                           char *dst, size_t cap) {
  char key[64];
  snprintf(key, sizeof key, "%s: checksum ", name);
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

static void checksum_of(const run_t *r, const char *what, char *dst,
                        size_t cap) {
  checksum_named(r, "wavetoy", what, dst, cap);
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

  int port = la_td_closed_port();
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

/* Profiling into the real LocalAgent (lossless compaction, read back from
 * the real GlobalAgent's store): all ranks register, every rank delivers
 * every cycle of its 24x24x6 slab, and the checksum is still that of the
 * uninstrumented run. */
static void test_wavetoy_profiled_same_results(void **state) {
  static run_t on, off;
  static double values[24 * 24 * 6];
  static la_test_agent_t a;
  char agent[96], app_id[160], name[80], c_on[64], c_off[64];
  const char *const no_la[] = {"--n", "24", "--steps", "10", "--no-la", NULL};
  need_mpiexec();

  if (la_ta_start(&a, NULL) != 0) {
    la_ta_free(&a);
    fail_msg("the daemons did not start");
  }
  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_td_addr(a.st.la));
  const char *const env_on[] = {agent, "LA_COMPACT=lossless", NULL};

  run_wavetoy(&on, 4, small, env_on);
  run_wavetoy(&off, 4, no_la, NULL);
  expect_ok(&on, "with an agent");
  expect_ok(&off, "--no-la");
  expect_text(&on, "with an agent", "LA registered on 4 of 4 ranks");
  checksum_of(&on, "with an agent", c_on, sizeof c_on);
  checksum_of(&off, "--no-la", c_off, sizeof c_off);
  assert_string_equal(c_on, c_off);

  assert_int_equal(la_ta_wait_ended(&a, 40, 4, 20000), 0);
  assert_int_equal(la_ta_local_stat(&a, "registrations"), 4);
  assert_int_equal(la_ta_sql_int(&a, "SELECT count(*) FROM apps"), 1);
  assert_int_equal(
      la_ta_sql_text(&a, "SELECT app_id FROM apps", app_id, sizeof app_id), 0);
  assert_int_equal(
      la_ta_app_int(&a, app_id,
                    "SELECT count(*) FROM ranks WHERE app_id = '%s'"),
      4);
  char q[300];
  snprintf(q, sizeof q, "SELECT app_name FROM apps WHERE app_id = '%s'",
           app_id);
  la_ta_sql_text(&a, q, name, sizeof name);
  assert_string_equal(name, "wavetoy");
  assert_int_equal(
      la_ta_app_int(&a, app_id, "SELECT nprocs FROM apps WHERE app_id = '%s'"),
      4);
  assert_int_equal(la_ta_app_grid(&a, app_id, 24, 24, 6), 0);
  assert_int_equal(
      la_ta_app_int(&a, app_id,
                    "SELECT count(*) FROM traces WHERE app_id = '%s'"),
      40);
  for (uint32_t r = 0; r < 4; r++) {
    int cycles = 0;
    for (size_t i = 0;; i++) {
      long long tag = la_ta_tag(&a, app_id, r, i);
      if (tag < 0) break;
      /* the trace holds exactly the slab's 24 * 24 * 6 values */
      assert_int_equal(
          la_ta_values(&a, app_id, r, (uint64_t)tag, values, 24 * 24 * 6), 0);
      double sum = 0.0;
      for (size_t e = 0; e < 24 * 24 * 6; e++) {
        assert_true(values[e] >= 0.0);
        sum += values[e];
      }
      assert_true(sum > 0.0);
      cycles++;
    }
    assert_int_equal(cycles, 10);
  }
  la_ta_free(&a);
  const char *line = strstr(on.out, "wavetoy: LA ");
  print_message("%.*s\n", line ? (int)strcspn(line, "\n") : 0,
                line ? line : "");
}

/* -n 3 on 20 planes (7, 7, 6) against -n 1: rounding at most. */
static void test_wavetoy_decomposition(void **state) {
  static run_t one, three;
  char c1[64], c3[64];
  const char *const args[] = {"--n", "20", "--steps", "20", "--no-la", NULL};
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
    print_message("-n 1 %s, -n 3 %s: relative difference %.3g\n", c1, c3, rel);
  assert_true(rel <= 1e-12);
}

/* ------------------------------------------- heavy, multiloop, fwave */

/* Runs example name with args under -n 4 twice: LA_AGENT at a closed port
 * and --no-la. Both exit 0 and print the same checksum line. */
static void check_invariance(const char *name, const char *const *args) {
  static run_t none, off;
  const char *argv_none[16], *argv_off[16];
  char agent[64], c_none[96], c_off[96], what[64];
  int k = 0;
  need_example(name);
  for (; args[k] && k < 14; k++) argv_none[k] = argv_off[k] = args[k];
  argv_none[k] = NULL;
  argv_off[k] = "--no-la";
  argv_off[k + 1] = NULL;

  int port = la_td_closed_port();
  assert_true(port > 0);
  snprintf(agent, sizeof agent, "LA_AGENT=127.0.0.1:%d", port);
  const char *const env_none[] = {agent, NULL};

  run_prog(&none, example_path(name), 4, argv_none, env_none);
  snprintf(what, sizeof what, "%s, no agent", name);
  expect_ok(&none, what);
  expect_text(&none, what, "LA not registered");
  checksum_named(&none, name, what, c_none, sizeof c_none);
  run_prog(&off, example_path(name), 4, argv_off, NULL);
  snprintf(what, sizeof what, "%s --no-la", name);
  expect_ok(&off, what);
  expect_text(&off, what, "LA off");
  checksum_named(&off, name, what, c_off, sizeof c_off);
  assert_string_equal(c_none, c_off);
  print_message("%s: checksum %s with no agent and with --no-la\n", name,
                c_off);
}

static void test_heavy_invariance(void **state) {
  const char *const args[] = {"--n", "12", "--steps", "4", NULL};
  check_invariance("heavy", args);
}

static void test_multiloop_invariance(void **state) {
  const char *const args[] = {"--n", "48", "--steps", "30", NULL};
  check_invariance("multiloop", args);
}

static void test_fwave_invariance(void **state) {
  const char *const args[] = {"--n", "40", "--steps", "20", NULL};
  check_invariance("fwave", args);
}

/* ---------------------------------------------- probe modes (--probe) */

/* Runs example name with args (NULL-terminated, up to 12) under -n 2 into
 * the real agent a as application app_id with LA_PERIOD=period, and with
 * --no-la: both exit 0 and print the same checksum. */
static void probe_mode_run(la_test_agent_t *a, const char *name,
                           const char *const *args, const char *app_id,
                           int period) {
  static run_t on, off;
  const char *argv_off[16];
  char agent[96], id[96], per[32], c_on[96], c_off[96];
  int k = 0;
  need_example(name);
  for (; args[k] && k < 12; k++) argv_off[k] = args[k];
  argv_off[k] = "--no-la";
  argv_off[k + 1] = NULL;
  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_td_addr(a->st.la));
  snprintf(id, sizeof id, "LA_APP_ID=%s", app_id);
  snprintf(per, sizeof per, "LA_PERIOD=%d", period);
  const char *const env[] = {agent, id, per, "LA_COMPACT=lossless", NULL};
  run_prog(&on, example_path(name), 2, args, env);
  expect_ok(&on, app_id);
  expect_text(&on, app_id, "LA registered on 2 of 2 ranks");
  run_prog(&off, example_path(name), 2, argv_off, NULL);
  expect_ok(&off, "--no-la");
  checksum_named(&on, name, app_id, c_on, sizeof c_on);
  checksum_named(&off, name, "--no-la", c_off, sizeof c_off);
  assert_string_equal(c_on, c_off);
}

/* Every stored trace of app_id (ranks 0 and 1): n values in rows of row
 * cells, each cell > 0 and, when spread is set, equal to the rest of its
 * row. Returns the number of traces. */
static int probe_mode_traces(la_test_agent_t *a, const char *app_id, uint64_t n,
                             uint64_t row, int spread) {
  static double values[24 * 24 * 12];
  int traces = 0;
  assert_true(n <= sizeof values / sizeof values[0]);
  for (uint32_t r = 0; r < 2; r++)
    for (size_t i = 0;; i++) {
      long long tag = la_ta_tag(a, app_id, r, i);
      if (tag < 0) break;
      assert_int_equal(la_ta_values(a, app_id, r, (uint64_t)tag, values, n), 0);
      for (uint64_t e = 0; e < n; e++) {
        assert_true(values[e] > 0.0);
        if (spread) assert_true(values[e] == values[e - e % row]);
      }
      traces++;
    }
  return traces;
}

/* wavetoy --probe row and --probe cell-always, fwave --probe row, each at a
 * period > 1 into the real agent: the checksum of the run without LA, one
 * trace per profiled step and rank, every cell measured, a row's cells
 * equal (one measurement spread over the row). */
static void test_probe_modes_same_results(void **state) {
  static la_test_agent_t a;
  need_mpiexec();
  if (la_ta_start(&a, NULL) != 0) {
    la_ta_free(&a);
    fail_msg("the daemons did not start");
  }
  const char *const wt_row[] = {"--n",     "24",  "--steps", "10",
                                "--probe", "row", NULL};
  const char *const wt_always[] = {"--n",     "24",          "--steps", "10",
                                   "--probe", "cell-always", NULL};
  const char *const fw_row[] = {"--n", "24",          "--steps",
                                "10",  "--probe=row", NULL};
  probe_mode_run(&a, "wavetoy", wt_row, "wt-row.1", 2);
  probe_mode_run(&a, "wavetoy", wt_always, "wt-always.1", 3);
  probe_mode_run(&a, "fwave", fw_row, "fw-row.1", 2);
  /* steps 0, 2, ..., 8 (period 2) and 0, 3, 6, 9 (period 3), two ranks */
  assert_int_equal(la_ta_wait_ended(&a, 10 + 8 + 10, 6, 20000), 0);
  assert_int_equal(probe_mode_traces(&a, "wt-row.1", 24 * 24 * 12, 24, 1), 10);
  assert_int_equal(probe_mode_traces(&a, "wt-always.1", 24 * 24 * 12, 24, 0),
                   8);
  assert_int_equal(probe_mode_traces(&a, "fw-row.1", 24 * 12, 24, 1), 10);
  la_ta_free(&a);
}

/* --------------------------------------------------------- rebalance */

static const char *const rb_args[] = {"--n",     "32", "--steps", "10",
                                      "--every", "5",  NULL};
static const char *const rb_no_la[] = {"--n",     "32", "--steps", "10",
                                       "--every", "5",  "--no-la", NULL};

/* The number N in "rebalance: N rebalance", or -1. */
static long rebalance_count(const run_t *r) {
  const char *p = strstr(r->out, "rebalance: ");
  while (p) {
    char *end;
    long n = strtol(p + strlen("rebalance: "), &end, 10);
    if (end != p + strlen("rebalance: ") && !strncmp(end, " rebalance", 10))
      return n;
    p = strstr(p + 1, "rebalance: ");
  }
  return -1;
}

/* No LocalAgent and no GlobalAgent: a note, no rebalancing, exit 0, the
 * checksum of --no-la. */
static void test_rebalance_without_agents(void **state) {
  static run_t none, off;
  char agent[64], global[64], c_none[96], c_off[96];
  need_example("rebalance");
  snprintf(agent, sizeof agent, "LA_AGENT=127.0.0.1:%d", la_td_closed_port());
  snprintf(global, sizeof global, "LA_GLOBAL=127.0.0.1:%d",
           la_td_closed_port());
  const char *const env[] = {agent, global, NULL};

  run_prog(&none, example_path("rebalance"), 4, rb_args, env);
  expect_ok(&none, "rebalance, no agents");
  expect_text(&none, "rebalance, no agents", "rebalance: note: ");
  expect_text(&none, "rebalance, no agents", "running without rebalancing");
  expect_text(&none, "rebalance, no agents", "without rebalancing; the static");
  assert_null(strstr(none.out, "rebalance after step"));
  run_prog(&off, example_path("rebalance"), 4, rb_no_la, NULL);
  expect_ok(&off, "rebalance --no-la");
  checksum_named(&none, "rebalance", "no agents", c_none, sizeof c_none);
  checksum_named(&off, "rebalance", "--no-la", c_off, sizeof c_off);
  assert_string_equal(c_none, c_off);
  const char *note = strstr(none.out, "rebalance: note: ");
  print_message("%.*s\n", (int)strcspn(note, "\n"), note);
}

/* Why LA runs unprofiled is printed whole, up to its advice: a metric
 * whose PAPI library cannot be loaded (a long path, named twice in
 * LA_lastError) ends with its advice "use LA_METRIC=time" on wavetoy's LA
 * line and in rebalance's note, which goes on "running without
 * rebalancing". */
static void test_long_reason_printed_whole(void **state) {
  static run_t w, rb;
  char agent[64], global[64];
  need_example("rebalance");
  snprintf(agent, sizeof agent, "LA_AGENT=127.0.0.1:%d", la_td_closed_port());
  snprintf(global, sizeof global, "LA_GLOBAL=127.0.0.1:%d",
           la_td_closed_port());
  const char *const env[] = {
      agent, global, "LA_METRIC=cycles",
      "LA_PAPI_LIB=/nonexistent/la-test-examples/libpapi-not-installed.so.7",
      NULL};
  run_wavetoy(&w, 1, small, env);
  expect_ok(&w, "wavetoy, PAPI library missing");
  expect_text(&w, "wavetoy, PAPI library missing", "LA not registered");
  const char *line = strstr(w.out, "LA not registered");
  size_t len = strcspn(line, "\n");
  print_message("%.*s\n", (int)len, line);
  const char *advice = strstr(line, "use LA_METRIC=time");
  assert_true(advice && advice < line + len);
  run_prog(&rb, example_path("rebalance"), 2, rb_args, env);
  expect_ok(&rb, "rebalance, PAPI library missing");
  expect_text(&rb, "rebalance, PAPI library missing", "rebalance: note: ");
  line = strstr(rb.out, "rebalance: note: ");
  len = strcspn(line, "\n");
  advice = strstr(line, "use LA_METRIC=time");
  assert_true(advice && advice < line + len);
  assert_non_null(strstr(advice, "running without rebalancing"));
  assert_true(strstr(advice, "running without rebalancing") < line + len);
}

/* The real LocalAgent, uplinked to a GlobalAgent that is not there, and
 * no GlobalAgent feed: LA profiles, the program says it cannot reach the
 * GlobalAgent and runs on. */
static void test_rebalance_without_globalagent(void **state) {
  static run_t r;
  static la_test_stack_t s;
  char agent[96], global[64];
  need_example("rebalance");
  assert_int_equal(la_ts_init(&s), 0);
  snprintf(s.ga_addr, sizeof s.ga_addr, "127.0.0.1:%d", la_td_closed_port());
  if (la_ts_start_local(&s, NULL) != 0) {
    la_ts_free(&s);
    fail_msg("la-localagent did not start");
  }
  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_td_addr(s.la));
  snprintf(global, sizeof global, "LA_GLOBAL=127.0.0.1:%d",
           la_td_closed_port());
  const char *const env[] = {agent, global, NULL};
  run_prog(&r, example_path("rebalance"), 4, rb_args, env);
  la_ts_free(&s);
  expect_ok(&r, "rebalance, no GlobalAgent");
  expect_text(&r, "rebalance, no GlobalAgent", "LA registered on 4 of 4");
  expect_text(&r, "rebalance, no GlobalAgent", "no GlobalAgent feed at");
  assert_null(strstr(r.out, "rebalance after step"));
}

/* The whole loop: real la-globalagent and la-localagent on ephemeral
 * ports, rebalance under -n 4 fetches Trace-Sets and repartitions. */
static void test_rebalance_with_agents(void **state) {
  static run_t on, off;
  static la_test_stack_t s;
  char c_on[96], c_off[96];
  char agent[96], global[96];
  need_example("rebalance");
  const char *const la_extra[] = {"--global.spool_fsync=no", NULL};
  if (la_ts_init(&s) != 0) {
    la_ts_free(&s);
    print_message("skip: la-globalagent or la-localagent not built\n");
    skip();
  }
  if (la_ts_start_global(&s, NULL) != 0 ||
      la_ts_start_local(&s, la_extra) != 0) {
    la_ts_free(&s);
    fail_msg("the daemons did not start");
  }

  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_td_addr(s.la));
  snprintf(global, sizeof global, "LA_GLOBAL=%s", s.feed_addr);
  const char *const env[] = {agent, global, NULL};
  const char *const args[] = {"--n",     "32", "--steps", "20",
                              "--every", "5",  NULL};
  const char *const no_la[] = {"--n", "32", "--steps", "20", "--no-la", NULL};
  run_prog(&on, example_path("rebalance"), 4, args, env);
  run_prog(&off, example_path("rebalance"), 4, no_la, NULL);
  /* every rank's cell ids (32 x 32 each) reached the store */
  la_test_agent_t view = {.st = s, .up = 1};
  assert_int_equal(
      la_ta_wait_sql(&view, "SELECT sum(n) FROM element_ids", 4 * 1024, 20000),
      0);
  la_ts_free(&s);

  expect_ok(&on, "rebalance with agents");
  expect_ok(&off, "rebalance --no-la");
  expect_text(&on, "rebalance with agents", "LA registered on 4 of 4 ranks");
  expect_text(&on, "rebalance with agents", "rebalance after step 4: ");
  long n = rebalance_count(&on);
  if (n < 1) {
    print_message("expected at least one rebalance in:\n%s\n", on.out);
    fail();
  }
  checksum_named(&on, "rebalance", "with agents", c_on, sizeof c_on);
  checksum_named(&off, "rebalance", "--no-la", c_off, sizeof c_off);
  assert_string_equal(c_on, c_off);
  const char *line = strstr(on.out, "rebalance: average imbalance");
  print_message("%ld rebalances; %.*s\n", n,
                line ? (int)strcspn(line, "\n") : 0, line ? line : "");
}

/* Robust weights balance at least as well as measured ones: rebalance
 * (4 ranks on this machine's cores, so preemption lands in the measured
 * values; interference detection on: the test skips where the kernel
 * refuses it) partitions each fetched Trace-Set by its robust and by its
 * measured weights, and prints both partitions' imbalance by work units
 * (the cost model's truth) over the steps each would serve, so the two
 * kinds are compared on the same profiled cycles. The hot spot moves, so
 * some cells rose in the cycle a rebalance uses: an unflagged rise is
 * believed at once (docs/fidelity.md); while it waited robust.confirm
 * cycles, robust weights balanced 3-6% worse than measured ones here.
 * Runs RB_RUNS times against the same daemons and compares the averages
 * over all their steps. */
#define RB_RUNS 8
static void test_rebalance_robust_not_worse(void **state) {
  static run_t run;
  static la_test_stack_t s;
  char agent[96], global[96];
  (void)state;
  need_example("rebalance");
  if (la_ts_init(&s) != 0) {
    la_ts_free(&s);
    print_message("skip: la-globalagent or la-localagent not built\n");
    skip();
  }
  if (la_ts_start_global(&s, NULL) != 0 || la_ts_start_local(&s, NULL) != 0) {
    la_ts_free(&s);
    fail_msg("the daemons did not start");
  }
  snprintf(agent, sizeof agent, "LA_AGENT=%s", la_td_addr(s.la));
  snprintf(global, sizeof global, "LA_GLOBAL=%s", s.feed_addr);
  const char *const env[] = {agent, global, "LA_INTERFERENCE=on", NULL};
  const char *const args[] = {"--n",     "64", "--steps", "40",
                              "--every", "5",  "--quiet", NULL};
  double sum_r = 0, sum_m = 0;
  long steps = 0;
  for (int k = 0; k < RB_RUNS; k++) {
    run_prog(&run, example_path("rebalance"), 4, args, env);
    expect_ok(&run, "rebalance with agents");
    const char *p = strstr(run.out, "measured weights: imbalance ");
    double i_r = NAN, i_m = NAN;
    long k_steps = 0;
    if (!p || sscanf(p,
                     "measured weights: imbalance %lf robust, %lf measured by "
                     "work units (averages over the %ld steps",
                     &i_r, &i_m, &k_steps) != 3 || k_steps < 20) {
      print_message("no comparison of robust and measured weights over 20 "
                    "steps or more in:\n%s\n", run.out);
      la_ts_free(&s);
      fail();
    }
    print_message("run %d: imbalance by work units, %ld steps: robust %.4f, "
                  "measured %.4f\n", k, k_steps, i_r, i_m);
    sum_r += i_r * (double)k_steps;
    sum_m += i_m * (double)k_steps;
    steps += k_steps;
  }
  la_test_agent_t view = {.st = s, .up = 1};
  int detected = la_ta_wait_sql(
      &view, "SELECT count(*) FROM rank_fidelity WHERE detection = 'on'", 4,
      20000);
  la_ts_free(&s);
  if (detected != 0) {
    print_message("skip: the kernel refuses interference detection\n");
    skip();
  }
  double i_r = sum_r / (double)steps, i_m = sum_m / (double)steps;
  print_message("%d runs: robust %.4f, measured %.4f (ratio %.4f)\n",
                RB_RUNS, i_r, i_m, i_r / i_m);
  /* The margin: the partitions METIS makes from two nearly equal weight
   * vectors differ by chance, mostly through the measured weights' noise
   * (4 ranks on 2 cores). Fifteen runs of this test (3 to 8 rebalance
   * runs each) on the 2-core machine at a load average of 5-9 gave ratios
   * 0.986-1.016 (mean 0.999); with rises waiting robust.confirm cycles
   * (six runs) they were 1.026-1.059. */
  if (!(i_r <= i_m * 1.02)) {
    print_message("robust weights balance worse than measured ones: %.4f > "
                  "%.4f x 1.02\n", i_r, i_m);
    fail();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wavetoy_la_never_changes_results),
      cmocka_unit_test(test_wavetoy_profiled_same_results),
      cmocka_unit_test(test_wavetoy_decomposition),
      cmocka_unit_test(test_heavy_invariance),
      cmocka_unit_test(test_multiloop_invariance),
      cmocka_unit_test(test_fwave_invariance),
      cmocka_unit_test(test_probe_modes_same_results),
      cmocka_unit_test(test_rebalance_without_agents),
      cmocka_unit_test(test_long_reason_printed_whole),
      cmocka_unit_test(test_rebalance_without_globalagent),
      cmocka_unit_test(test_rebalance_with_agents),
      cmocka_unit_test(test_rebalance_robust_not_worse),
  };
  signal(SIGPIPE, SIG_IGN);
  /* LA_TEST_FILTER=pattern runs only the matching tests (cmocka's glob) */
  const char *only = getenv("LA_TEST_FILTER");
  if (only && only[0]) cmocka_set_test_filter(only);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
