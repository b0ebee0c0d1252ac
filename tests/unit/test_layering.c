/* SPDX-License-Identifier: BSD-3-Clause */
/* test_layering.c: the files of each component call each other one way.
 *
 * Runs scripts/depgraph.py over the build's object files (build/, or
 * $LA_TEST_BUILD_DIR): a cycle between the files of one component (wire,
 * compact, daemon, libla, client, tools, localagent, globalagent) fails the
 * test, naming the files, and so does an edge between components that the
 * layers do not allow (scripts/depgraph.py's LAYERS: wire below
 * everything, then compact and daemon, then libla, client and the daemons,
 * lactl on top): a symbol taken or a header included the wrong way.
 * Controls first build, in scratch trees, two objects that call each
 * other, then a wire object that calls libla and a daemon object
 * whose dependency file names libla's header, and require the script to
 * report exactly those, so a script that stopped seeing them fails here too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_test_daemon.h"

static const char *build_dir(void) {
  const char *b = getenv("LA_TEST_BUILD_DIR");
  return b && *b ? b : "build";
}

/* Runs depgraph.py over dir; its exit status, its output in out. */
static int depgraph(const char *dir, char *out, size_t len) {
  const char *argv[] = {"/usr/bin/python3", "scripts/depgraph.py", dir, NULL};
  return la_td_run(argv, NULL, 60000, out, len);
}

/* The object directories of every component, in a scratch tree. */
#define SCRATCH_DIRS                                                      \
  "mkdir -p obj/wire obj/compact obj/daemon obj/store obj/client "        \
  "obj/tools obj/localagent obj/globalagent obj/libla && "

static void test_cycle_is_reported(void **state) {
  (void)state;
  char tmp[] = "/tmp/la-layering-XXXXXX", cmd[1024];
  assert_non_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd,
           "cd %s && " SCRATCH_DIRS
           "printf 'int b(void);\\nint a(void){return b();}\\n' > a.c && "
           "printf 'int a(void);\\nint b(void){return 1;}\\n"
           "int c(void){return a();}\\n' > b.c && "
           "cc -c a.c -o obj/libla/a.o && cc -c b.c -o obj/libla/b.o",
           tmp);
  assert_int_equal(system(cmd), 0);
  static char out[16384];
  int rc = depgraph(tmp, out, sizeof out);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  assert_int_equal(system(cmd), 0);
  if (rc != 1 || !strstr(out, "CYCLE: a.c <-> b.c"))
    fail_msg("depgraph.py missed a two-file cycle (exit %d):\n%s", rc, out);
}

static void test_upward_edge_is_reported(void **state) {
  (void)state;
  char tmp[] = "/tmp/la-layering-XXXXXX", cmd[1400];
  assert_non_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd,
           "cd %s && " SCRATCH_DIRS
           "printf 'int la_probe_x(void);\nint la_low(void){return "
           "la_probe_x();}\n' > low.c && "
           "printf 'int la_probe_x(void){return 1;}\n' > probe.c && "
           "printf 'int la_agent_y(void){return 2;}\n' > agent.c && "
           "cc -c low.c -o obj/wire/low.o && "
           "cc -c probe.c -o obj/libla/probe.o && "
           "cc -c agent.c -o obj/localagent/agent.o && "
           "printf 'obj/localagent/agent.o: localagent/agent.c libla/la.h "
           "\\\n wire/la_errcodes.h\n' > obj/localagent/agent.d",
           tmp);
  assert_int_equal(system(cmd), 0);
  static char out[16384];
  int rc = depgraph(tmp, out, sizeof out);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  assert_int_equal(system(cmd), 0);
  if (rc != 1 ||
      !strstr(out, "UPWARD: wire/low.c uses libla/probe.c (la_probe_x)") ||
      !strstr(out, "UPWARD: localagent/agent.c includes libla/la.h") ||
      strstr(out, "la_errcodes.h;"))
    fail_msg("depgraph.py missed an upward edge (exit %d):\n%s", rc, out);
}

static void test_components_are_one_way(void **state) {
  (void)state;
  char probe[600];
  snprintf(probe, sizeof probe, "%s/obj/libla", build_dir());
  if (access(probe, R_OK) != 0)
    fail_msg("%s: no objects (build first: make -j2 all)", probe);
  static char out[65536];
  int rc = depgraph(build_dir(), out, sizeof out);
  if (rc != 0) fail_msg("depgraph.py exited %d:\n%s", rc, out);
  assert_null(strstr(out, "CYCLE"));
  assert_null(strstr(out, "UPWARD"));
}

int main(void) {
  if (access("/usr/bin/python3", X_OK) != 0 || system("command -v nm "
                                                      ">/dev/null") != 0) {
    printf("skip: /usr/bin/python3 or nm missing\n");
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cycle_is_reported),
      cmocka_unit_test(test_upward_edge_is_reported),
      cmocka_unit_test(test_components_are_one_way),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
