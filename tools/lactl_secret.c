/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_secret.c: `lactl secret FILE` creates a shared secret for the
 * LocalAgents and the GlobalAgent: 32 random bytes, hex, mode 0600; it never
 * overwrites an existing file. Copy the same file to every node. */
#include <stdio.h>
#include <string.h>

#include "la_auth.h"

int lactl_secret_main(int argc, char **argv) {
  if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    FILE *f = argc == 2 ? stdout : stderr;
    fprintf(f, "usage: lactl secret FILE\n\nCreates FILE (mode 0600) with a "
               "new random shared secret for\nglobal.secret_file (LocalAgents) "
               "and agents.secret_file (GlobalAgent).\nRefuses to overwrite "
               "an existing file.\n");
    return argc == 2 ? 0 : 2;
  }
  char why[300];
  if (la_auth_init() != 0 ||
      la_auth_generate_secret_file(argv[1], why, sizeof why) != 0) {
    fprintf(stderr, "lactl secret: %s\n", why);
    return 1;
  }
  printf("lactl secret: wrote %s (mode 0600); copy it to every node\n",
         argv[1]);
  return 0;
}
