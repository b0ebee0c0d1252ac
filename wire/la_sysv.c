/* SPDX-License-Identifier: BSD-3-Clause */
/* la_sysv.c: SysV IPC helpers shared by libla and the LocalAgent
 * (la_sysv.h). */
#include "la_sysv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int la_pid_uid(int pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int uid = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "Uid:", 4)) {
      uid = atoi(line + 4);
      break;
    }
  fclose(f);
  return uid;
}
