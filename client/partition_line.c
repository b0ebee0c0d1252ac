/* SPDX-License-Identifier: BSD-3-Clause */
/* partition_line.c: one line of a partition file, as `lactl whatif
 * --write-partition` writes it (docs/lactl.md): a '#' comment, which may
 * give the part count ("; parts K"), a blank line, or "ID RANK". Shared by
 * `lactl whatif --partition` and `la-replay --partition`, which each check
 * the ids against what they hold and word their own messages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"

int la__partition_line(const char *line, int64_t *id, uint32_t *rank,
                       uint32_t *parts) {
  if (line[0] == '#') {
    const char *kp = strstr(line, "; parts ");
    unsigned long long v;
    if (kp && sscanf(kp + 8, "%llu", &v) == 1 && v >= 1 &&
        v <= LA__PARTITION_MAX_RANKS)
      *parts = (uint32_t)v;
    return 0;
  }
  if (line[strspn(line, " \t\r\n")] == 0) return 0;
  char *e1, *e2;
  errno = 0;
  long long i = strtoll(line, &e1, 10);
  unsigned long long r = strtoull(e1, &e2, 10);
  if (errno || e1 == line || e2 == e1 || e2[strspn(e2, " \t\r\n")] || i < 0 ||
      r >= LA__PARTITION_MAX_RANKS || strchr(e1, '-'))
    return -1;
  *id = (int64_t)i;
  *rank = (uint32_t)r;
  return 1;
}
