/* SPDX-License-Identifier: BSD-3-Clause */
/* solver.c: a C program built against an installed LA by test_install
 * (pkg-config and CMake). It must start (libla.so.0 found without
 * LD_LIBRARY_PATH) and run on without an agent. Prints "solver: started",
 * the outcome of LA_register, then "solver: OK". */
#include <la.h>
#include <stdio.h>

int main(void) {
  printf("solver: started\n");
  int rc = LA_register("solver", 0, 1, 4);
  printf("solver: register %d (%s)\n", rc, rc ? LA_lastError() : "ok");
  volatile double x = 0;
  LA_startProbe(2);
  for (int i = 0; i < 100000; i++) x += i;
  LA_stopProbe(2);
  LA_dataXfer();
  LA_finalize();
  printf("solver: OK\n");
  return 0;
}
