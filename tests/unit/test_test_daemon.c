/* SPDX-License-Identifier: BSD-3-Clause */
/* test_test_daemon.c: tests of the harness's sanitizer accounting
 * (tests/support/la_test_daemon.{h,c}): a daemon whose log holds a
 * sanitizer report must fail the test program that ran it, even when every
 * assertion of that program passed, and a clean daemon must not. The
 * "daemons" are small shell scripts in a temporary directory named by
 * LA_TEST_BIN_DIR, which print what a sanitizer runtime prints; each case
 * runs in a forked child so the failure the harness causes at exit can be
 * observed from outside. Does not test the real daemons (their own tests do,
 * in the ASan and TSan passes of make check).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "la_test_daemon.h"

static char bindir[256];

/* Writes an executable script bindir/name printing line to stderr, then
 * exiting with code. */
static void write_fake(const char *name, const char *line, int code) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", bindir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\necho 'fake daemon starting' >&2\n");
  if (line) fprintf(f, "echo '%s' >&2\n", line);
  fprintf(f, "exit %d\n", code);
  fclose(f);
  assert_int_equal(chmod(path, 0755), 0);
}

static int setup(void **state) {
  (void)state;
  const char *tmp = getenv("TMPDIR");
  snprintf(bindir, sizeof bindir, "%s/la-ttd-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(bindir)) return -1;
  setenv("LA_TEST_BIN_DIR", bindir, 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", bindir);
  return system(cmd) == 0 ? 0 : -1;
}

/* In a child: runs the fake daemon name to its exit, checks what
 * la_td_sanitizer_report says (want), frees it and exits 0. Returns the
 * child's exit status. */
static int run_child(const char *name, int want) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* no cmocka asserts here: plain exits tell the parent what went wrong;
     * the reports are expected, so keep them out of run-tests.sh's folder */
    unsetenv("LA_TEST_REPORT_DIR");
    la_test_daemon_t *d = la_td_new(name);
    if (!d) _exit(10);
    const char *args[] = {NULL};
    if (la_td_start(d, args, NULL, 0) != 0) _exit(11);
    if (la_td_wait_exit(d, 10000) < 0) _exit(12);
    char line[256];
    if (la_td_sanitizer_report(d, line, sizeof line) != want) _exit(13);
    if (want && !strstr(line, "Sanitizer") && !strstr(line, "runtime error"))
      _exit(14);
    if (la_td_sanitizer_reports() != 0) _exit(15);
    la_td_free(d);
    if (la_td_sanitizer_reports() != want) _exit(16);
    exit(0); /* runs the harness's exit hook */
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* A fake daemon printing line to its log and exiting with code: run to
 * its end in a child, which must exit want (1: the report fails the test
 * program) and whose la_td_sanitizer_report must say want. */
static void fake_verdict(const char *name, const char *line, int code,
                         int want) {
  write_fake(name, line, code);
  assert_int_equal(run_child(name, want), want);
}

static void test_asan_report_fails_program(void **state) {
  (void)state;
  fake_verdict("fake-asan",
               "==4242==ERROR: AddressSanitizer: "
               "heap-use-after-free on address 0x602000000010",
               1, 1);
}

static void test_leak_report_fails_program(void **state) {
  (void)state;
  /* exit 0 too: only the log tells */
  fake_verdict("fake-lsan",
               "==4243==ERROR: LeakSanitizer: detected memory "
               "leaks",
               0, 1);
}

static void test_ubsan_report_fails_program(void **state) {
  (void)state;
  fake_verdict("fake-ubsan",
               "common/x.c:10:5: runtime error: signed integer "
               "overflow",
               0, 1);
}

static void test_tsan_report_fails_program(void **state) {
  (void)state;
  fake_verdict("fake-tsan", "WARNING: ThreadSanitizer: data race (pid=4244)",
               66, 1);
}

static void test_clean_daemon_passes(void **state) {
  (void)state;
  fake_verdict("fake-clean", "listening on 127.0.0.1:0 (no errors)", 0, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_asan_report_fails_program),
      cmocka_unit_test(test_leak_report_fails_program),
      cmocka_unit_test(test_ubsan_report_fails_program),
      cmocka_unit_test(test_tsan_report_fails_program),
      cmocka_unit_test(test_clean_daemon_passes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
