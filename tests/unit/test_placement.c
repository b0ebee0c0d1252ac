/* SPDX-License-Identifier: BSD-3-Clause */
/* test_placement.c: the LocalAgent stays out of the ranks' way — its
 * compaction threads run at the configured lower priority, the daemon is
 * confined to the configured CPU set, a bad CPU list is refused with a
 * clear message, and agent.max_backlog holds what it says. Runs the real la-localagent with a real libla application
 * (a forked child) and reads what `ps`/`taskset` would show from /proc. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backlog.h"
#include "la.h"
#include "la_errcodes.h"
#include "la_test_daemon.h"
#include "la_test_stack.h"

#define WAIT_MS 20000
#define CHECK(c, ...) LA_TD_CHECK((void)0, c, __VA_ARGS__)

/* cpus and nice NULL: their defaults; extra: one more option, or NULL. */
static la_test_daemon_t *start_agent(const char *cpus, const char *nice,
                                     const char *extra) {
  la_test_daemon_t *d = la_td_new("la-localagent");
  if (!d) {
    print_message("skip: la-localagent not built\n");
    skip();
  }
  char pf[600], spool[600];
  la_td_argv_t a;
  la_td_path(d, "port", pf, sizeof pf);
  la_td_path(d, "spool", spool, sizeof spool);
  la_td_argv_init(&a);
  la_ts_la_args(&a, pf, spool, "", NULL); /* no GlobalAgent */
  if (cpus) la_td_argv_add(&a, "--agent.cpus=%s", cpus);
  if (nice) la_td_argv_add(&a, "--agent.worker_nice=%s", nice);
  if (extra) la_td_argv_add(&a, "%s", extra);
  CHECK(la_td_start(d, a.v, pf, WAIT_MS) > 0, "la-localagent did not start");
  return d;
}

/* A libla application: n elements, k profiled cycles, then finalize. */
static void run_app(const char *agent, long n, int k) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    LA_setAgent(agent);
    LA_setAppId("placement");
    if (LA_register("placement", 0, 1, n) != 0) _exit(1);
    volatile double sink = 0;
    for (int c = 0; c < k; c++) {
      for (long e = 0; e < n; e++) {
        LA_startProbe(e);
        sink += (double)e * 0.5;
        LA_stopProbe(e);
      }
      LA_dataXfer();
    }
    LA_finalize();
    _exit(0);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the application failed (status %d)", st);
}

/* Field `field` of /proc/pid/task/TID/stat (proc(5): 19 the nice value,
 * 41 the scheduling policy) of every thread of pid into out[]; returns the
 * count. */
static int thread_field(pid_t pid, int field_no, int *out, int cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return 0;
  int k = 0;
  struct dirent *e;
  while ((e = readdir(d)) && k < cap) {
    if (e->d_name[0] == '.') continue;
    char sp[384], buf[1024];
    snprintf(sp, sizeof sp, "%s/%s/stat", path, e->d_name);
    FILE *f = fopen(sp, "r");
    if (!f) continue;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    /* fields after "(comm)": state is the 3rd */
    char *p = strrchr(buf, ')');
    if (!p) continue;
    int field = 2, v = -1;
    for (char *t = strtok(p + 1, " "); t; t = strtok(NULL, " "))
      if (++field == field_no) {
        v = atoi(t);
        break;
      }
    out[k++] = v;
  }
  closedir(d);
  return k;
}

/* Threads of pid whose field is `want`; the others into *other. */
static int threads_with(pid_t pid, int field_no, int want, int *other) {
  int v[64], k = thread_field(pid, field_no, v, 64), n = 0;
  *other = 0;
  for (int i = 0; i < k; i++) {
    n += v[i] == want;
    *other += v[i] != want;
  }
  return n;
}

static void test_worker_priority_and_cpus(void **state) {
  (void)state;
  la_test_daemon_t *d = start_agent("0", "15", NULL);
  run_app(la_td_addr(d), 20000, 4);
  CHECK(la_td_wait_status(d, "cycles_compacted", 4, WAIT_MS) == 0,
        "4 cycles not compacted");
  int normal, low = threads_with(la_td_pid(d), 19, 15, &normal);
  print_message("agent threads at nice 15: %d, others: %d\n", low, normal);
  CHECK(low >= 1, "no compaction thread runs at nice 15");
  /* named, so that top -H, perf and the busy-node bench tell them apart */
  int named = la_td_threads_named(la_td_pid(d), "la-compact");
  CHECK(named == low, "%d threads named la-compact, %d at nice 15", named, low);
  CHECK(la_td_threads_named(la_td_pid(d), "la-lane") == 1, "no thread la-lane");
  CHECK(threads_with(la_td_pid(d), 19, 0, &low) >= 1,
        "the loop thread must keep its priority");
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)la_td_pid(d));
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  int found = 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "Cpus_allowed_list:", 18)) {
      found = 1;
      CHECK(!strcmp(line + 18 + strspn(line + 18, " \t"), "0\n"),
            "confined to '%s', expected 0", line + 18);
    }
  fclose(f);
  CHECK(found, "no Cpus_allowed_list");
  la_td_free(d);
}

/* The defaults: compaction threads at nice 10 in the normal class, the
 * loop thread at nice 0; agent.worker_idle puts them in SCHED_IDLE (the
 * loop stays SCHED_OTHER); worker_nice 0 leaves them at the daemon's. */
static void test_worker_priority_settings(void **state) {
  (void)state;
  static const struct {
    const char *nice, *extra;
    int want_nice, want_policy; /* of the compaction threads */
  } c[] = {
      {NULL, NULL, 10, SCHED_OTHER},
      {NULL, "--agent.worker_idle=yes", 10, SCHED_IDLE},
      {"0", NULL, 0, SCHED_OTHER},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    la_test_daemon_t *d = start_agent(NULL, c[i].nice, c[i].extra);
    run_app(la_td_addr(d), 20000, 4);
    CHECK(la_td_wait_status(d, "cycles_compacted", 4, WAIT_MS) == 0,
          "4 cycles not compacted");
    pid_t pid = la_td_pid(d);
    int others, idle = threads_with(pid, 41, SCHED_IDLE, &others);
    int rest, at_nice = threads_with(pid, 19, c[i].want_nice, &rest);
    print_message("nice %s, %s: %d threads at nice %d, %d in SCHED_IDLE, "
                  "%d not\n",
                  c[i].nice ? c[i].nice : "default",
                  c[i].extra ? c[i].extra : "-", at_nice, c[i].want_nice,
                  idle, others);
    if (c[i].want_policy == SCHED_IDLE) {
      CHECK(idle >= 1, "no compaction thread in SCHED_IDLE");
      CHECK(others >= 1, "the loop thread must stay SCHED_OTHER");
    } else {
      CHECK(idle == 0, "%d threads in SCHED_IDLE without worker_idle", idle);
    }
    if (c[i].want_nice == 0) {
      CHECK(rest == 0, "%d threads below the daemon's priority", rest);
    } else {
      CHECK(at_nice >= 1, "no compaction thread at nice %d", c[i].want_nice);
      CHECK(threads_with(pid, 19, 0, &rest) >= 1,
            "the loop thread must keep its priority");
    }
    la_td_free(d);
  }
}

static void test_bad_cpu_list_refused(void **state) {
  (void)state;
  char bin[600];
  if (la_td_find_bin("la-localagent", bin, sizeof bin) != 0) skip();
  const char *bad[] = {"0-x", "3-1", "", NULL};
  for (int i = 0; bad[i]; i++) {
    if (!bad[i][0]) continue;
    char opt[64], cmd[800];
    snprintf(opt, sizeof opt, "--agent.cpus=%s", bad[i]);
    snprintf(cmd, sizeof cmd, "%s %s --check-config 2>&1", bin, opt);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[4096] = "";
    size_t got = fread(out, 1, sizeof out - 1, p);
    out[got] = 0;
    int st = pclose(p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0, "'%s' accepted", bad[i]);
    CHECK(strstr(out, "agent.cpus") != NULL, "no reason naming agent.cpus: %s",
          out);
  }
}

/* agent.max_backlog: auto holds all but three of a rank's buffers (at
 * least one), a number holds that many whatever the buffers, off no limit; a
 * value outside auto, off, 1..15 is refused naming the setting, by the
 * parser and by the daemon's --check-config. */
static void test_backlog_setting(void **state) {
  (void)state;
  char why[200] = "";
  int lim = 99;
  assert_int_equal(la_backlog_parse("auto", &lim, why, sizeof why), 0);
  assert_int_equal(la_backlog_held_max(lim, 2), 1);
  assert_int_equal(la_backlog_held_max(lim, 4), 1);
  assert_int_equal(la_backlog_held_max(lim, 6), 3);
  assert_int_equal(la_backlog_held_max(lim, 16), 13);
  assert_int_equal(la_backlog_parse("OFF", &lim, why, sizeof why), 0);
  assert_int_equal(la_backlog_held_max(lim, 3), 0);
  assert_int_equal(la_backlog_parse("2", &lim, why, sizeof why), 0);
  assert_int_equal(la_backlog_held_max(lim, 3), 2);
  assert_int_equal(la_backlog_held_max(lim, 16), 2);
  const char *bad[] = {"0", "16", "-1", "2x", "", "always", NULL};
  for (int i = 0; bad[i]; i++) {
    why[0] = 0;
    CHECK(la_backlog_parse(bad[i], &lim, why, sizeof why) == LA_ECONFIG,
          "max_backlog '%s' accepted", bad[i]);
    CHECK(strstr(why, "agent.max_backlog") != NULL, "reason: '%s'", why);
  }
  char bin[600];
  if (la_td_find_bin("la-localagent", bin, sizeof bin) != 0) skip();
  char cmd[800], out[4096] = "";
  snprintf(cmd, sizeof cmd, "%s --agent.max_backlog=16 --check-config 2>&1",
           bin);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t got = fread(out, 1, sizeof out - 1, p);
  out[got] = 0;
  int st = pclose(p);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0, "max_backlog 16 accepted");
  CHECK(strstr(out, "agent.max_backlog '16'") != NULL,
        "no reason naming agent.max_backlog: %s", out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_worker_priority_and_cpus),
      cmocka_unit_test(test_worker_priority_settings),
      cmocka_unit_test(test_bad_cpu_list_refused),
      cmocka_unit_test(test_backlog_setting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
