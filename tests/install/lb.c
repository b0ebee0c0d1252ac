/* SPDX-License-Identifier: BSD-3-Clause */
/* lb.c: a libla_client program built against an installed LA by
 * test_install (pkg-config and CMake). Connects to a GlobalAgent feed that
 * is not there: it must start and report LA_ENOAGENT (or a time-out), then
 * print "lb: OK". */
#include <la_client.h>
#include <stdio.h>

int main(int argc, char **argv) {
  la_client_t *c = NULL;
  int rc = la_client_connect(argc > 1 ? argv[1] : "127.0.0.1:1", 2000, &c);
  printf("lb: connect %d (%s)\n", rc, la_client_strerror(rc));
  if (rc == 0) return 1; /* nothing should listen there */
  printf("lb: OK\n");
  return 0;
}
