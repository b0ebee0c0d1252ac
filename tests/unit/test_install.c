/* SPDX-License-Identifier: BSD-3-Clause */
/* test_install.c: make install, and building against the installed LA the
 * documented ways.
 *
 * Installs the already-built tree (make install only copies what `make libs
 * bins` built, so it does not race the main build) into a prefix under the
 * test's TMPDIR, then builds the programs of tests/install/ with exactly the
 * documented command lines and runs them with no LD_LIBRARY_PATH (so they
 * must find libla.so.0 through la.pc's run path) and no agent (LA then
 * reports LA_ENOAGENT and the program runs on):
 *   - C: cc $(pkg-config --cflags la) -c ...; cc ... $(pkg-config --libs la),
 *     also with pkg-config --static, and the static archive line;
 *   - Fortran with the la_mod module, found through la.pc's Cflags;
 *   - libla_client through la_client.pc;
 *   - a CMake project: find_package(LA) with LA::la, LA::la_static,
 *     LA::la_client and LA::la_fortran (and a too-new version refused).
 * Also: libla.so has no DT_NEEDED on libpapi; a staged install (DESTDIR,
 * PREFIX=/opt/la-test, LIBDIR) names the final paths, never the staging
 * directory, no @NAME@ placeholder is installed, and make uninstall leaves
 * no file and no directory but the prefix behind; a system LIBDIR gets
 * no run path; CC, CFLAGS and LDFLAGS reach the commands that build what
 * is installed, and nothing else (tests, examples, benchmarks) is built;
 * make PAPI=0 FORTRAN=0 builds a libla whose PAPI metrics fail naming the
 * reason; the Spack recipe (packaging/spack/package.py) compiles and maps
 * its variants to those make variables (tests/install/
 * check_spack_package.py, without Spack).
 *
 * Runs from the source tree (as run-tests.sh does); skips, with a message,
 * when the build tree is missing (make all first) or a tool (pkg-config,
 * gfortran, cmake) is not installed. */
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

#define RUN_MS 240000

static char src[PATH_MAX], work[PATH_MAX], prefix[PATH_MAX + 16];
static char out[1 << 16];
static char install_out[4096];

/* Runs the shell command line in the work directory with the installed
 * la.pc on PKG_CONFIG_PATH, no LD_LIBRARY_PATH, no agent and make's
 * variables of an enclosing make unset. 0 when it exited 0; its output is
 * in out. */
static int sh(const char *fmt, ...) {
  char line[8192], cmd[3 * PATH_MAX + 8192 + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd,
           "cd '%s' && unset LD_LIBRARY_PATH MAKEFLAGS MFLAGS MAKELEVEL && "
           "export PKG_CONFIG_PATH='%s/lib/pkgconfig' "
           "LA_AGENT=127.0.0.1:1 S='%s' && %s",
           work, prefix, src, line);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  int st = la_td_run(argv, NULL, RUN_MS, out, sizeof out);
  return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* sh() that must succeed. */
#define SH_OK(...)                                                  \
  do {                                                              \
    if (sh(__VA_ARGS__) != 0) fail_msg("command failed:\n%s", out); \
  } while (0)

static int have(const char *tool) {
  char cmd[200];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
  return system(cmd) == 0;
}

static void need(const char *tool) {
  if (!have(tool)) {
    print_message("skip: %s not installed (make deps)\n", tool);
    skip();
  }
}

/* Runs ./prog (in work) and checks it started and ran to its end. */
static void run_prog(const char *prog, const char *name) {
  if (sh("./%s", prog) != 0)
    fail_msg("%s did not run (libla.so.0 not found?):\n%s", prog, out);
  char want[64];
  snprintf(want, sizeof want, "%s: OK", name);
  if (!strstr(out, want)) fail_msg("%s: no '%s' in:\n%s", prog, want, out);
}

static int group_setup(void **state) {
  (void)state;
  if (!realpath(".", src)) return -1;
  if (access("build/lib/libla.so", R_OK) ||
      access("build/lib/libla_client.so", R_OK) ||
      access("build/include/la_mod.mod", R_OK) ||
      access("tests/install/solver.c", R_OK)) {
    work[0] = '\0'; /* tests skip */
    return 0;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(work, sizeof work, "%s/la-install-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(work)) return -1;
  snprintf(prefix, sizeof prefix, "%s/prefix", work);
  /* installs what the main build made: nothing is rebuilt; the services
   * (units, configurations) go into the prefix, not the machine's /etc */
  if (sh("make -s -C \"$S\" install PREFIX='%s' SYSCONFDIR='%s/etc' "
         "SYSTEMDUNITDIR='%s/lib/systemd/system'",
         prefix, prefix, prefix) != 0) {
    fprintf(stderr, "test_install: make install failed:\n%s\n", out);
    return -1;
  }
  snprintf(install_out, sizeof install_out, "%.4000s", out);
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  if (work[0]) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", work);
  }
  return 0;
}

#define NEED_INSTALL()                                      \
  do {                                                      \
    if (!work[0]) {                                         \
      print_message(                                        \
          "skip: no build tree (make all) or not run from " \
          "the source tree\n");                             \
      skip();                                               \
    }                                                       \
    need("pkg-config");                                     \
  } while (0)

/* What make install put and said; libla.so does not need libpapi. */
static void test_layout(void **state) {
  (void)state;
  NEED_INSTALL();
  const char *files[] = {"lib/libla.so.0",
                         "lib/libla.so",
                         "lib/libla.a",
                         "lib/libla_client.so.0",
                         "lib/libla_client.a",
                         "include/la.h",
                         "include/la_errcodes.h",
                         "include/la_limits.h",
                         "include/la_client.h",
                         "bin/lactl",
                         "bin/la-replay",
                         "lib/pkgconfig/la.pc",
                         "lib/pkgconfig/la_client.pc",
                         "lib/cmake/LA/LAConfig.cmake",
                         "lib/cmake/LA/LAConfigVersion.cmake"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", prefix, files[i]);
    if (access(p, R_OK)) fail_msg("make install did not put %s", files[i]);
  }
  /* the module sits in its compiler's directory, which la.pc names */
  SH_OK(
      "test -f \"$(pkg-config --variable=fmoddir la)/la_mod.mod\" && "
      "pkg-config --variable=fmoddir la");
  assert_non_null(strstr(out, "/lib/fortran/gfortran-"));
  assert_int_not_equal(sh("test -e '%s/include/la_mod.mod'", prefix), 0);
  SH_OK("readelf -d '%s/lib/libla.so.0'", prefix);
  assert_non_null(strstr(out, "libprotobuf-c"));
  if (strstr(out, "libpapi")) fail_msg("libla.so needs libpapi:\n%s", out);
  /* the prefix is not on pkg-config's path nor the loader's: it says so */
  assert_non_null(strstr(install_out, "PKG_CONFIG_PATH="));
  assert_non_null(strstr(install_out, "run path"));
  SH_OK("pkg-config --libs la");
  assert_non_null(strstr(out, "-Wl,-rpath,"));
  /* install ran install-services: units naming the installed daemons */
  SH_OK("cat '%s/lib/systemd/system/la-localagent.service'", prefix);
  char want[PATH_MAX + 64];
  snprintf(want, sizeof want, "%s/bin/la-localagent", prefix);
  assert_non_null(strstr(out, want));
  /* no template's @NAME@ left in any installed text file (the unit copies
   * under share/la included) */
  sh("grep -rIlE '@[A-Z_]+@' '%s'", prefix);
  if (out[0]) fail_msg("installed with @NAME@ placeholders:\n%s", out);
}

/* The documented C lines; the program starts with no LD_LIBRARY_PATH. */
static void test_c_pkgconfig(void **state) {
  (void)state;
  NEED_INSTALL();
  SH_OK("cc -O2 $(pkg-config --cflags la) -c \"$S/tests/install/solver.c\"");
  SH_OK("cc -o solver solver.o $(pkg-config --libs la)");
  run_prog("solver", "solver");
  assert_non_null(strstr(out, "register -3")); /* LA_ENOAGENT, ran on */
  SH_OK("cc -o solver_s solver.o $(pkg-config --static --libs la)");
  run_prog("solver_s", "solver");
  /* the static archive with the libraries pkg-config --static lists */
  SH_OK("pkg-config --static --libs la");
  const char *priv[] = {"-lprotobuf-c", "-ldl", "-lpthread", "-lm"};
  for (size_t i = 0; i < 4; i++) assert_non_null(strstr(out, priv[i]));
  SH_OK(
      "cc -o solver_a solver.o '%s/lib/libla.a' -lprotobuf-c -ldl "
      "-lpthread -lm",
      prefix);
  run_prog("solver_a", "solver");
  SH_OK("readelf -d solver_a");
  assert_null(strstr(out, "libla.so"));
  assert_null(strstr(out, "libpapi"));
}

static void test_client_pkgconfig(void **state) {
  (void)state;
  NEED_INSTALL();
  SH_OK(
      "cc -O2 $(pkg-config --cflags la_client) -c "
      "\"$S/tests/install/lb.c\"");
  SH_OK("cc -o lb lb.o $(pkg-config --libs la_client)");
  run_prog("lb", "lb");
  SH_OK("cc -o lb_s lb.o $(pkg-config --static --libs la_client)");
  run_prog("lb_s", "lb");
}

static void test_fortran_pkgconfig(void **state) {
  (void)state;
  NEED_INSTALL();
  need("gfortran");
  SH_OK(
      "gfortran -O2 $(pkg-config --cflags la) -c "
      "\"$S/tests/install/solver.f90\" -o fsolver.o");
  SH_OK("gfortran -o fsolver fsolver.o $(pkg-config --libs la)");
  run_prog("fsolver", "fsolver");
}

/* find_package(LA) from a CMake project (tests/install/CMakeLists.txt). */
static void test_cmake_consumer(void **state) {
  (void)state;
  NEED_INSTALL();
  need("cmake");
  need("gfortran");
  SH_OK(
      "cmake -S \"$S/tests/install\" -B cmake-build "
      "-DCMAKE_PREFIX_PATH='%s' && cmake --build cmake-build",
      prefix);
  run_prog("cmake-build/solver", "solver");
  run_prog("cmake-build/solver_static", "solver");
  run_prog("cmake-build/fsolver", "fsolver");
  run_prog("cmake-build/lb", "lb");
  SH_OK("readelf -d cmake-build/solver_static");
  assert_null(strstr(out, "libla.so"));
  /* a component LA was not installed with is an error */
  SH_OK(
      "printf 'cmake_minimum_required(VERSION 3.13)\\nproject(x C)\\n"
      "find_package(LA REQUIRED COMPONENTS la_nothing)\\n' > "
      "cm2.txt && mkdir -p cm2 && cp cm2.txt cm2/CMakeLists.txt");
  assert_int_not_equal(
      sh("cmake -S cm2 -B cm2/b -DCMAKE_PREFIX_PATH='%s'", prefix), 0);
  assert_non_null(strstr(out, "la_nothing"));
}

/* A staged install names the final paths; uninstall removes every file. */
static void test_staged_install_and_uninstall(void **state) {
  (void)state;
  NEED_INSTALL();
  const char *vars =
      "DESTDIR=\"$PWD/stage\" PREFIX=/opt/la-test "
      "LIBDIR=/opt/la-test/lib64";
  SH_OK("make -s -C \"$S\" install %s", vars);
  SH_OK(
      "test -f stage/opt/la-test/lib64/libla.so.0 && "
      "test -f stage/opt/la-test/lib64/cmake/LA/LAConfig.cmake && "
      "cat stage/opt/la-test/lib64/pkgconfig/la.pc");
  assert_non_null(strstr(out, "libdir=/opt/la-test/lib64"));
  assert_non_null(strstr(out, "-Wl,-rpath,${libdir}"));
  /* nothing installed names the staging directory */
  assert_int_not_equal(sh("grep -rl \"$PWD/stage\" stage"), 0);
  SH_OK("make -s -C \"$S\" uninstall %s && find stage ! -type d", vars);
  if (out[0]) fail_msg("make uninstall left:\n%s", out);
  /* nor a directory: only the prefix (and the path to it) remains */
  SH_OK("find stage -mindepth 1 ! -path stage/opt ! -path stage/opt/la-test");
  if (out[0]) fail_msg("make uninstall left directories:\n%s", out);
  /* a system libdir: no run path */
  SH_OK(
      "make -s -C \"$S\" install-files DESTDIR=\"$PWD/stage2\" "
      "PREFIX=/usr >/dev/null && cat stage2/usr/lib/pkgconfig/la.pc");
  assert_null(strstr(out, "rpath"));
  SH_OK(
      "make -s -C \"$S\" uninstall DESTDIR=\"$PWD/stage2\" PREFIX=/usr "
      "&& find stage2 ! -type d");
  if (out[0]) fail_msg("make uninstall left:\n%s", out);
}

/* make install builds only what it installs, with the given CC, CFLAGS
 * and LDFLAGS, and writes nothing outside a private prefix (a dry run into
 * an empty build directory). */
static void test_install_builds_only_what_it_installs(void **state) {
  (void)state;
  NEED_INSTALL();
  SH_OK(
      "make -n -C \"$S\" install BUILD=\"$PWD/dry\" PREFIX=\"$PWD/p\" "
      "CC=cc CFLAGS=-DLA_TEST_CFLAGS_MARK LDFLAGS=-L/la-test-ldflags-mark");
  char *line = strtok(out, "\n");
  int compiled = 0, linked = 0;
  for (; line; line = strtok(NULL, "\n")) {
    /* a private prefix: nothing goes to the machine's /etc or units */
    if (strstr(line, " /etc/") || strstr(line, " /lib/systemd") ||
        strstr(line, " /usr/"))
      fail_msg("make install PREFIX=<private> writes outside it:\n%s", line);
    if (strstr(line, "tests/unit") || strstr(line, "bench/") ||
        strstr(line, "examples/") || strstr(line, "-march=native"))
      fail_msg("make install builds more than it installs:\n%s", line);
    if (!strncmp(line, "cc ", 3) && strstr(line, " -c ") &&
        strstr(line, ".c -o ")) {
      compiled++;
      if (!strstr(line, "-DLA_TEST_CFLAGS_MARK") ||
          !strstr(line, "-fvisibility=hidden"))
        fail_msg("CFLAGS not added to the build's own:\n%s", line);
    }
    if (strstr(line, "-soname,libla.so.0")) {
      linked++;
      assert_non_null(strstr(line, "-L/la-test-ldflags-mark"));
    }
  }
  assert_true(compiled > 10);
  assert_int_equal(linked, 1);
}

/* make PAPI=0 FORTRAN=0: no papi.h, no Fortran; a PAPI metric then fails
 * with LA_EPAPI saying libla was built without PAPI, and time works. */
static void test_build_without_papi(void **state) {
  (void)state;
  NEED_INSTALL();
  SH_OK(
      "make -s -C \"$S\" BUILD=\"$PWD/nopapi\" PAPI=0 FORTRAN=0 "
      "\"$PWD/nopapi/lib/libla.so\" 2>&1");
  SH_OK("readelf -d nopapi/lib/libla.so; nm -D nopapi/lib/libla.so");
  assert_null(strstr(out, "papi"));
  assert_null(strstr(out, "__la_mod_MOD")); /* no Fortran module */
  SH_OK(
      "cc -I\"$S/libla\" -I\"$S/wire\" -c \"$S/tests/install/solver.c\" "
      "-o np.o && cc -o np np.o -L\"$PWD/nopapi/lib\" "
      "-Wl,-rpath,\"$PWD/nopapi/lib\" -lla");
  SH_OK("LA_METRIC=cycles ./np");
  assert_non_null(strstr(out, "register -8"));
  assert_non_null(strstr(out, "built without PAPI"));
  assert_non_null(strstr(out, "solver: OK"));
}

/* The Spack recipe compiles and its directives and make variables follow
 * its variants (checked against a stand-in for Spack's API). */
static void test_spack_package(void **state) {
  (void)state;
  NEED_INSTALL();
  if (access("/usr/bin/python3", X_OK)) {
    print_message("skip: /usr/bin/python3 not installed\n");
    skip();
  }
  if (access("packaging/spack/package.py", R_OK))
    fail_msg("no packaging/spack/package.py");
  if (sh("/usr/bin/python3 -B \"$S/tests/install/check_spack_package.py\" "
         "\"$S/packaging/spack/package.py\" \"$S/Makefile\" 2>&1") != 0 ||
      !strstr(out, "spack package: OK"))
    fail_msg("packaging/spack/package.py:\n%s", out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_c_pkgconfig),
      cmocka_unit_test(test_client_pkgconfig),
      cmocka_unit_test(test_fortran_pkgconfig),
      cmocka_unit_test(test_cmake_consumer),
      cmocka_unit_test(test_staged_install_and_uninstall),
      cmocka_unit_test(test_install_builds_only_what_it_installs),
      cmocka_unit_test(test_build_without_papi),
      cmocka_unit_test(test_spack_package),
  };
  return cmocka_run_group_tests_name("install", tests, group_setup,
                                     group_teardown);
}
