/* SPDX-License-Identifier: BSD-3-Clause */
/* test_docs.c: the documentation tells the truth.
 *
 * Runs tests/docs/run_blocks.py (with Debian's /usr/bin/python3) from the
 * source tree against the build tree (build/, or $LA_TEST_BUILD_DIR):
 *   - blocks:  every "sh run" block of README.md and the docs/ pages runs
 *              in a scratch directory with the build's binaries (real
 *              daemons on ephemeral loopback ports), every "sh cluster"
 *              block parses, every "c compile" block compiles and links;
 *   - configs: the sample configurations in packaging/ set every key of
 *              the daemons, each to its default unless a "(default: ...)"
 *              comment above it says what the default is (and is right);
 *   - man:     every command and option of lactl's --help appears in its
 *              man page and bash completion, every daemon setting in the
 *              daemon's page, every LA_ function of la.h in libla(3).
 * The Markdown of README.md, CONTRIBUTING.md and the docs/ pages renders
 * as written and its links lead somewhere (tests/docs/check_markdown.py:
 * fences closed and alone on their closing line, tables without blank
 * lines, relative links to files and headings that exist, the entry point
 * docs/overview.md linking every page). And every man page converts with
 * scdoc (skipped without scdoc). A
 * failure prints the script's report, which names file and line. See
 * docs/testing.md, "Documentation that runs". */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define PY "/usr/bin/python3"

static const char *build_dir(void) {
  const char *b = getenv("LA_TEST_BUILD_DIR");
  return b && *b ? b : "build";
}

/* Runs the script in mode; its output goes to ours. Exit status or -1. */
static int run_mode(const char *mode) {
  char cmd[PATH_MAX + 128];
  if (access(PY, X_OK) != 0) {
    printf("skip: %s not found\n", PY);
    skip();
  }
  if (access("tests/docs/run_blocks.py", R_OK) != 0)
    fail_msg("run from the source tree: tests/docs/run_blocks.py not found");
  snprintf(cmd, sizeof cmd, "%s tests/docs/run_blocks.py %s . '%s' 2>&1", PY,
           mode, build_dir());
  fflush(stdout);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void need_bin(const char *name) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/bin/%s", build_dir(), name);
  if (access(p, X_OK) != 0) fail_msg("%s is not built (make all)", p);
}

static void test_blocks(void **state) {
  need_bin("lactl");
  need_bin("la-localagent");
  need_bin("la-globalagent");
  assert_int_equal(run_mode("blocks"), 0);
}

static void test_configs(void **state) {
  need_bin("la-localagent");
  need_bin("la-globalagent");
  assert_int_equal(run_mode("configs"), 0);
}

static void test_man_options(void **state) {
  need_bin("lactl");
  assert_int_equal(run_mode("man"), 0);
}

/* The Markdown renders as written: fences closed, nothing after a closing
 * fence, no blank line inside a table, every relative link to a file and
 * heading that exist, and docs/overview.md linking every page of docs/
 * (tests/docs/check_markdown.py). */
static void test_markdown(void **state) {
  if (access(PY, X_OK) != 0) {
    printf("skip: %s not found\n", PY);
    skip();
  }
  if (access("tests/docs/check_markdown.py", R_OK) != 0)
    fail_msg("run from the source tree: tests/docs/check_markdown.py missing");
  fflush(stdout);
  int st = system(PY " tests/docs/check_markdown.py README.md CONTRIBUTING.md "
                     "examples/README.md docs/*.md 2>&1");
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* The "Source layout" tables of the daemons and the store are the code's:
 * each file's purpose comment and the calls its object makes (scripts/layout_table.py over
 * build/obj, or $LA_TEST_BUILD_DIR/obj). */
static void test_layout_tables(void **state) {
  static const char *const comps[][2] = {{"localagent", "localagent"},
                                         {"globalagent", "globalagent"},
                                         {"storage", "store"}};
  const char *b = getenv("LA_TEST_BUILD_DIR");
  if (access(PY, X_OK) != 0 || system("command -v nm >/dev/null") != 0) {
    printf("skip: %s or nm not found\n", PY);
    skip();
  }
  for (size_t i = 0; i < sizeof comps / sizeof *comps; i++) {
    char cmd[700];
    snprintf(cmd, sizeof cmd,
             PY " scripts/layout_table.py --check docs/%s.md %s %s 2>&1",
             comps[i][0], comps[i][1], b && *b ? b : "build");
    fflush(stdout);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("docs/%s.md: the source layout table is not the code's "
               "(scripts/layout_table.py --write docs/%s.md %s)",
               comps[i][0], comps[i][0], comps[i][1]);
  }
}

static void test_scdoc(void **state) {
  static const char *const pages[] = {"la-localagent.8", "la-globalagent.8",
                                      "lactl.1", "libla.3", "la-replay.1"};
  if (system("command -v scdoc >/dev/null 2>&1") != 0) {
    printf("skip: scdoc not installed\n");
    skip();
  }
  for (size_t i = 0; i < sizeof pages / sizeof *pages; i++) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "scdoc < man/%s.scd > /dev/null", pages[i]);
    if (system(cmd) != 0) fail_msg("scdoc refused man/%s.scd", pages[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocks),
      cmocka_unit_test(test_configs),
      cmocka_unit_test(test_man_options),
      cmocka_unit_test(test_markdown),
      cmocka_unit_test(test_layout_tables),
      cmocka_unit_test(test_scdoc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
