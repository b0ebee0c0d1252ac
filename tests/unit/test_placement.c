/* SPDX-License-Identifier: BSD-3-Clause */
/* test_placement.c: the LocalAgent stays out of the ranks' way — its
 * compaction threads run at the configured lower priority, the daemon is
 * confined to the configured CPU set, and a bad CPU list is refused with a
 * clear message. Runs the real la-localagent with a real libla application
 * (a forked child) and reads what `ps`/`taskset` would show from /proc. */
#include <errno.h>
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

#include "la.h"
#include "la_test_daemon.h"
#include "la_test_stack.h"

#define WAIT_MS 20000
#define CHECK(c, ...) LA_TD_CHECK((void)0, c, __VA_ARGS__)

static la_test_daemon_t *start_agent(const char *cpus, const char *nice) {
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
  la_td_argv_add(&a, "--agent.cpus=%s", cpus);
  la_td_argv_add(&a, "--agent.worker_nice=%s", nice);
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

/* The nice value of every thread of pid into nices[]; returns the count. */
static int thread_nices(pid_t pid, int *nices, int cap) {
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
    /* fields after "(comm)": state is 3rd, nice is the 19th */
    char *p = strrchr(buf, ')');
    if (!p) continue;
    int field = 2, nice = 0;
    for (char *t = strtok(p + 1, " "); t; t = strtok(NULL, " "))
      if (++field == 19) {
        nice = atoi(t);
        break;
      }
    nices[k++] = nice;
  }
  closedir(d);
  return k;
}

static void test_worker_priority_and_cpus(void **state) {
  (void)state;
  la_test_daemon_t *d = start_agent("0", "15");
  run_app(la_td_addr(d), 20000, 4);
  CHECK(la_td_wait_status(d, "cycles_compacted", 4, WAIT_MS) == 0,
        "4 cycles not compacted");
  int nices[64], k = thread_nices(la_td_pid(d), nices, 64), low = 0, normal = 0;
  for (int i = 0; i < k; i++) {
    low += nices[i] == 15;
    normal += nices[i] == 0;
  }
  print_message("agent threads: %d, at nice 15: %d, at nice 0: %d\n", k, low,
                normal);
  CHECK(low >= 1, "no compaction thread runs at nice 15");
  CHECK(normal >= 1, "the loop thread must keep its priority");
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_worker_priority_and_cpus),
      cmocka_unit_test(test_bad_cpu_list_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
