/* SPDX-License-Identifier: BSD-3-Clause */
/* test_link.c: the documented build lines build programs that run.
 *
 * Installs the build tree into a temporary prefix (make install PREFIX=...,
 * or uses the install at $LA_TEST_PREFIX), reads the ```sh block of
 * README.md ("Build ...", C) and of docs/fortran.md ("## Building a
 * program", Fortran), and runs every cc or gfortran line in it exactly as
 * written, with <prefix> replaced by that prefix and <fmoddir> by the
 * module's directory (pkg-config --variable=fmoddir la), and the installed
 * la.pc on PKG_CONFIG_PATH. A tiny program (C or Fortran) is compiled by
 * the first line; each line that links it is followed by a run against the
 * real LocalAgent and GlobalAgent (la_test_agent), with no LD_LIBRARY_PATH
 * (la.pc and the documented lines carry the run path): the program must
 * register and its probed element must arrive. A documented line that no
 * longer links or runs fails here.
 *
 * Also the trap the documentation warns of: -lla before the objects fails
 * to link (Debian's gcc uses --as-needed; a static archive named first is
 * never searched), naming an la_ symbol. And docs/fortran.md's Makefile
 * (```make block) run by make, the same with the libraries in LDFLAGS
 * failing, and its Example's program built by its mpif90 lines and run.
 *
 * Runs from the source tree (as run-tests.sh does); skips, with a message,
 * when the build tree, cc, gfortran or pkg-config is missing. */
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

#include "la_test_daemon.h"
#include "la_test_agent.h"

#define RUN_MS 120000

static const char c_solver[] =
    "#include <la.h>\n"
    "#include <stdio.h>\n"
    "int main(void) {\n"
    "  if (LA_register(\"solver\", 0, 1, 4) != 0) {\n"
    "    printf(\"solver: %s\\n\", LA_lastError());\n"
    "    return 1;\n"
    "  }\n"
    "  volatile double x = 0;\n"
    "  LA_startProbe(2);\n"
    "  for (int i = 0; i < 1000000; i++) x += i;\n"
    "  LA_stopProbe(2);\n"
    "  LA_dataXfer();\n"
    "  LA_finalize();\n"
    "  printf(\"solver: OK\\n\");\n"
    "  return 0;\n"
    "}\n";

/* Element 3 (Fortran) is element 2 (C), as in the C program. */
static const char f_solver[] =
    "program solver\n"
    "  use la_mod\n"
    "  implicit none\n"
    "  integer :: ierr, i\n"
    "  real(8) :: x\n"
    "  call la_register('solver', 0, 1, 4, ierr)\n"
    "  if (ierr /= LA_OK) then\n"
    "    print '(2a)', 'solver: ', la_last_error()\n"
    "    stop 1\n"
    "  end if\n"
    "  x = 0\n"
    "  call la_start_probe(3)\n"
    "  do i = 1, 1000000\n"
    "    x = x + sqrt(real(i, 8))\n"
    "  end do\n"
    "  call la_stop_probe(3)\n"
    "  call la_data_xfer()\n"
    "  call la_finalize()\n"
    "  if (x > 0) print '(a)', 'solver: OK'\n"
    "end program solver\n";

static char prefix[PATH_MAX + 16], work[PATH_MAX], fmoddir[PATH_MAX];
static char out[1 << 16];

static char src_dir[PATH_MAX];

static int file_ok(const char *dir, const char *name) {
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, R_OK) == 0;
}

static int have(const char *tool) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

/* Skips unless the build tree, the tool and pkg-config are there. */
static void need(const char *tool) {
  if (!file_ok("build", "lib/libla.so") || !file_ok("build", "lib/libla.a") ||
      !file_ok("build", "include/la_mod.mod") ||
      !file_ok(".", "packaging/la.pc.in")) {
    print_message(
        "skip: no build tree (make all) or not run from the "
        "source tree\n");
    skip();
  }
  if (!have(tool) || !have("pkg-config")) {
    print_message("skip: %s or pkg-config not installed\n", tool);
    skip();
  }
}

/* Runs the shell command line in the work directory; 0 when it exited 0.
 * Its output is in out. */
static int sh(const char *line, const char *const *env) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cd '%s' && %s", work, line);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  int st = la_td_run(argv, env, RUN_MS, out, sizeof out);
  return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Copies s into d (cap bytes) with every "<prefix>" and "<fmoddir>"
 * replaced. */
static void subst_prefix(char *d, size_t cap, const char *s) {
  size_t n = 0;
  while (*s && n + 1 < cap) {
    if (!strncmp(s, "<prefix>", 8) || !strncmp(s, "<fmoddir>", 9)) {
      int fmod = s[1] == 'f';
      n += (size_t)snprintf(d + n, cap - n, "%s", fmod ? fmoddir : prefix);
      if (n >= cap) n = cap - 1;
      s += fmod ? 9 : 8;
    } else {
      d[n++] = *s++;
    }
  }
  d[n] = '\0';
}

/* Reads the first ```sh block after the line starting with heading in doc:
 * its command lines (comments and blank lines left out) into lines. Returns
 * their number. */
static int doc_block(const char *doc, const char *heading, char lines[][512],
                     int max) {
  FILE *f = fopen(doc, "r");
  if (!f) fail_msg("cannot read %s", doc);
  char buf[1024];
  int state = 0, n = 0; /* 0 before the heading, 1 before ```sh, 2 inside */
  while (fgets(buf, sizeof buf, f)) {
    buf[strcspn(buf, "\n")] = '\0';
    if (state == 0 && !strncmp(buf, heading, strlen(heading)))
      state = 1;
    else if (state == 1 && !strcmp(buf, "```sh"))
      state = 2;
    else if (state == 2 && !strncmp(buf, "```", 3))
      break;
    else if (state == 2 && buf[0] && buf[0] != '#' && n < max)
      snprintf(lines[n++], 512, "%.511s", buf);
  }
  fclose(f);
  if (n == 0) fail_msg("%s: no ```sh block after '%s'", doc, heading);
  return n;
}

/* A private work directory with the program's source and LA installed
 * in work/prefix by make install from the build tree (or the install at
 * $LA_TEST_PREFIX); sets prefix and fmoddir. */
static void make_work(const char *src_name, const char *src) {
  const char *tmp = getenv("TMPDIR");
  snprintf(work, sizeof work, "%s/la-link-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(work));
  char p[PATH_MAX + 64], cmd[6 * PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", work, src_name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(src, f);
  fclose(f);
  const char *given = getenv("LA_TEST_PREFIX");
  if (given && *given) {
    assert_non_null(realpath(given, prefix));
  } else {
    snprintf(prefix, sizeof prefix, "%s/prefix", work);
    snprintf(cmd, sizeof cmd,
             "unset MAKEFLAGS MFLAGS MAKELEVEL; make -s -C '%s' install "
             "PREFIX='%s' SYSCONFDIR='%s/etc' "
             "SYSTEMDUNITDIR='%s/lib/systemd/system' >/dev/null",
             src_dir, prefix, prefix, prefix);
    if (sh(cmd, NULL) != 0) fail_msg("make install failed:\n%s", out);
  }
  snprintf(cmd, sizeof cmd,
           "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config "
           "--variable=fmoddir la",
           prefix);
  if (sh(cmd, NULL) != 0) fail_msg("no la.pc in %s/lib/pkgconfig", prefix);
  snprintf(fmoddir, sizeof fmoddir, "%.*s", (int)strcspn(out, "\n"), out);
}

static void remove_work(void) {
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
  if (system(cmd) != 0) print_message("could not remove %s\n", work);
}

/* Runs the documented lines of doc for the tool; after each line that makes
 * ./solver, runs it against a LocalAgent stand-in. */
static void run_documented(const char *doc, const char *heading,
                           const char *tool, const char *src_name,
                           const char *src) {
  need(tool);
  char lines[16][512], line[1024], pc_path[PATH_MAX + 64];
  int n = doc_block(doc, heading, lines, 16);
  make_work(src_name, src);
  la_test_agent_t ta;
  if (la_ta_start(&ta, NULL) != 0) fail_msg("the daemons did not start");
  char agent[128];
  snprintf(agent, sizeof agent, "LA_AGENT=%s", getenv("LA_AGENT"));
  snprintf(pc_path, sizeof pc_path, "PKG_CONFIG_PATH=%s/lib/pkgconfig", prefix);
  int ran = 0, built = 0;
  for (int i = 0; i < n; i++) {
    size_t tl = strlen(tool);
    if (strncmp(lines[i], tool, tl) || lines[i][tl] != ' ') continue;
    subst_prefix(line, sizeof line, lines[i]);
    const char *env[] = {pc_path, NULL};
    char old[PATH_MAX + 16]; /* a failed link must not run the last one */
    snprintf(old, sizeof old, "%s/solver", work);
    unlink(old);
    print_message("%s: %s\n", doc, lines[i]);
    if (sh(line, env) != 0)
      fail_msg("%s: documented line failed:\n  %s\n%s", doc, line, out);
    if (!strstr(line, "-o solver")) continue;
    built++;
    /* la.pc has a run path (as make install writes it for a libdir
     * outside the loader's path): no LD_LIBRARY_PATH */
    const char *renv[] = {agent, NULL};
    if (sh("./solver", renv) != 0 || !strstr(out, "solver: OK"))
      fail_msg("%s: the program built by\n  %s\ndid not run:\n%s", doc, line,
               out);
    ran++;
    /* the program's first cycle, as the real daemons stored it */
    char app[128], q[256];
    double v[4];
    assert_int_equal(la_ta_wait_sql(&ta,
                                    "SELECT count(*) FROM apps WHERE "
                                    "app_name = 'solver'",
                                    ran, 10000),
                     0);
    assert_int_equal(la_ta_sql_text(&ta,
                                    "SELECT app_id FROM apps WHERE app_name "
                                    "= 'solver' ORDER BY t_created_ns DESC, "
                                    "rowid DESC LIMIT 1",
                                    app, sizeof app),
                     0);
    snprintf(q, sizeof q, "SELECT count(*) FROM traces WHERE app_id = '%s'",
             app);
    assert_int_equal(la_ta_wait_sql(&ta, q, 1, 10000), 0);
    long long tag = la_ta_tag(&ta, app, 0, 0);
    assert_true(tag >= 0);
    assert_int_equal(la_ta_values(&ta, app, 0, (uint64_t)tag, v, 4), 0);
    assert_true(v[2] > 0.0);
    assert_true(v[0] == 0.0);
  }
  print_message("%d documented link lines built programs that ran\n", built);
  assert_true(built >= 3); /* shared, static, pkg-config */
  la_ta_free(&ta);
  remove_work();
}

static void test_c_lines_in_readme(void **state) {
  (void)state;
  run_documented("README.md", "Build (after `make install", "cc", "solver.c",
                 c_solver);
}

static void test_fortran_lines_in_fortran_md(void **state) {
  (void)state;
  run_documented("docs/fortran.md", "## Building a program", "gfortran",
                 "solver.f90", f_solver);
}

/* -lla before the object: the link fails, naming what it missed. */
static void test_lla_first_fails(void **state) {
  (void)state;
  need("gfortran");
  make_work("solver.f90", f_solver);
  char line[3 * PATH_MAX];
  snprintf(line, sizeof line, "gfortran -I%s -c solver.f90", fmoddir);
  assert_int_equal(sh(line, NULL), 0);
  snprintf(line, sizeof line,
           "gfortran -o solver %s/lib/libla.a -lprotobuf-c -ldl -lpthread "
           "-lm solver.o",
           prefix);
  assert_int_not_equal(sh(line, NULL), 0);
  assert_non_null(strstr(out, "undefined reference"));
  assert_non_null(strstr(out, "la_"));
  snprintf(line, sizeof line, "gfortran -o solver -L%s/lib -lla solver.o",
           prefix);
  if (sh(line, NULL) == 0) {
    print_message(
        "note: this toolchain does not link with --as-needed: "
        "-lla first still linked the shared library\n");
  } else {
    assert_non_null(strstr(out, "undefined reference"));
    assert_non_null(strstr(out, "la_"));
  }
  remove_work();
}

/* The text of the first block fenced with `fence` (e.g. "```make") after
 * the line starting with heading in doc, lines as written, into buf. */
static void doc_text(const char *doc, const char *heading, const char *fence,
                     char *buf, size_t cap) {
  FILE *f = fopen(doc, "r");
  if (!f) fail_msg("cannot read %s", doc);
  char line[1024];
  size_t n = 0;
  int state = 0; /* 0 before the heading, 1 before the fence, 2 inside */
  buf[0] = '\0';
  while (fgets(line, sizeof line, f)) {
    if (state == 0 && !strncmp(line, heading, strlen(heading)))
      state = 1;
    else if (state == 1 && !strncmp(line, fence, strlen(fence)) &&
             line[strlen(fence)] == '\n')
      state = 2;
    else if (state == 2 && !strncmp(line, "```", 3))
      break;
    else if (state == 2 && n + strlen(line) < cap) {
      memcpy(buf + n, line, strlen(line) + 1);
      n += strlen(line);
    }
  }
  fclose(f);
  if (n == 0) fail_msg("%s: no %s block after '%s'", doc, fence, heading);
}

/* Writes text into work/name. */
static void write_work(const char *name, const char *text) {
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/%s", work, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The program app_name ran against ta: its first stored trace holds n
 * values; returns them in v (caller's, n of them). */
static void stored_values(la_test_agent_t *ta, const char *app_name, double *v,
                          uint64_t n) {
  char app[128], q[256];
  snprintf(q, sizeof q, "SELECT count(*) FROM apps WHERE app_name = '%s'",
           app_name);
  assert_int_equal(la_ta_wait_sql(ta, q, 1, 10000), 0);
  snprintf(q, sizeof q,
           "SELECT app_id FROM apps WHERE app_name = '%s' ORDER BY "
           "t_created_ns DESC, rowid DESC LIMIT 1",
           app_name);
  assert_int_equal(la_ta_sql_text(ta, q, app, sizeof app), 0);
  snprintf(q, sizeof q, "SELECT count(*) FROM traces WHERE app_id = '%s'", app);
  assert_int_equal(la_ta_wait_sql(ta, q, 1, 20000), 0);
  long long tag = la_ta_tag(ta, app, 0, 0);
  assert_true(tag >= 0);
  assert_int_equal(la_ta_values(ta, app, 0, (uint64_t)tag, v, n), 0);
}

/* The Makefile of docs/fortran.md ("## Building a program"), as written:
 * make builds a program that runs; the same Makefile with the libraries in
 * LDFLAGS (before the objects) fails to link under --as-needed. */
static void test_fortran_makefile(void **state) {
  (void)state;
  need("gfortran");
  need("make");
  static char mk[8192];
  doc_text("docs/fortran.md", "## Building a program", "```make", mk,
           sizeof mk);
  make_work("solver.f90", f_solver);
  write_work("Makefile", mk);
  la_test_agent_t ta;
  if (la_ta_start(&ta, NULL) != 0) fail_msg("the daemons did not start");
  char agent[128], pc_path[PATH_MAX + 64];
  snprintf(agent, sizeof agent, "LA_AGENT=%s", getenv("LA_AGENT"));
  snprintf(pc_path, sizeof pc_path, "PKG_CONFIG_PATH=%s/lib/pkgconfig", prefix);
  const char *env[] = {pc_path, NULL}, *renv[] = {agent, NULL};
  if (sh("unset MAKEFLAGS MFLAGS MAKELEVEL; make", env) != 0)
    fail_msg("docs/fortran.md's Makefile failed:\n%s", out);
  if (sh("./solver", renv) != 0 || !strstr(out, "solver: OK"))
    fail_msg("the program the Makefile built did not run:\n%s", out);
  double v[4];
  stored_values(&ta, "solver", v, 4);
  assert_true(v[2] > 0.0 && v[0] == 0.0);
  /* the libraries before the objects */
  char *ld = strstr(mk, "LDLIBS +=");
  assert_non_null(ld);
  memcpy(ld, "LDFLAGS+=", 9);
  write_work("Makefile", mk);
  if (sh("rm -f solver solver.o; unset MAKEFLAGS MFLAGS MAKELEVEL; make",
         env) == 0) {
    print_message(
        "note: this toolchain does not link with --as-needed: LDFLAGS "
        "still linked the shared library\n");
  } else {
    assert_non_null(strstr(out, "undefined reference"));
    assert_non_null(strstr(out, "la_"));
  }
  la_ta_free(&ta);
  remove_work();
}

/* The Example of docs/fortran.md: its program, built by its mpif90 lines
 * as written, runs against the real daemons and every element's value
 * arrives. */
static void test_fortran_example(void **state) {
  (void)state;
  need("mpif90");
  static char prog[16384];
  char lines[16][512], line[1024], pc_path[PATH_MAX + 64], agent[128];
  doc_text("docs/fortran.md", "## Example", "```fortran", prog, sizeof prog);
  int n = doc_block("docs/fortran.md", "## Example", lines, 16);
  make_work("heat.f90", prog);
  la_test_agent_t ta;
  if (la_ta_start(&ta, NULL) != 0) fail_msg("the daemons did not start");
  snprintf(agent, sizeof agent, "LA_AGENT=%s", getenv("LA_AGENT"));
  snprintf(pc_path, sizeof pc_path, "PKG_CONFIG_PATH=%s/lib/pkgconfig", prefix);
  const char *env[] = {pc_path, NULL}, *renv[] = {agent, NULL};
  int built = 0;
  for (int i = 0; i < n; i++) {
    if (strncmp(lines[i], "mpif90 ", 7)) continue;
    subst_prefix(line, sizeof line, lines[i]);
    print_message("docs/fortran.md: %s\n", lines[i]);
    if (sh(line, env) != 0)
      fail_msg("documented line failed:\n  %s\n%s", line, out);
    built += strstr(line, "-o heat") != NULL;
  }
  assert_int_equal(built, 1);
  if (sh("./heat", renv) != 0)
    fail_msg("the Example's program did not run:\n%s", out);
  static double v[100000];
  stored_values(&ta, "heat", v, 100000);
  for (int e = 0; e < 100000; e++)
    if (!(v[e] > 0.0)) fail_msg("heat element %d: %g, expected > 0", e, v[e]);
  la_ta_free(&ta);
  remove_work();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c_lines_in_readme),
      cmocka_unit_test(test_fortran_lines_in_fortran_md),
      cmocka_unit_test(test_lla_first_fails),
      cmocka_unit_test(test_fortran_makefile),
      cmocka_unit_test(test_fortran_example),
  };
  if (!realpath(".", src_dir)) return 1;
  return cmocka_run_group_tests_name("link", tests, NULL, NULL);
}
