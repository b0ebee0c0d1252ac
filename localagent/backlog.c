/* SPDX-License-Identifier: BSD-3-Clause */
/* backlog.c: agent.max_backlog, parsed and applied to a rank's buffer
 * count, and agent.behind with the block size of a coarse cycle
 * (backlog.h). */
#include "backlog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "la_errcodes.h"

int la_backlog_parse(const char *spec, int *limit, char *why, size_t why_len) {
  if (!strcasecmp(spec, "auto")) {
    *limit = -1;
    return 0;
  }
  if (!strcasecmp(spec, "off")) {
    *limit = 0;
    return 0;
  }
  char *end;
  errno = 0;
  long v = strtol(spec, &end, 10);
  if (end == spec || *end || errno || v < 1 || v > LA_BACKLOG_MAX) {
    snprintf(why, why_len,
             "agent.max_backlog '%s': expected auto, off or a number "
             "1..%d",
             spec, LA_BACKLOG_MAX);
    return LA_ECONFIG;
  }
  *limit = (int)v;
  return 0;
}

uint32_t la_backlog_held_max(int limit, uint32_t n_buffers) {
  if (limit > 0) return (uint32_t)limit;
  if (limit == 0) return 0;
  /* auto: besides the L held, the buffer the application hands over, the
   * one it takes, and one for a notification the loop has not taken yet */
  return n_buffers >= 4 ? n_buffers - 3 : 1;
}

int la_backlog_behind_parse(const char *spec, int *coarse, char *why,
                            size_t why_len) {
  if (!strcasecmp(spec, "coarse") || !strcasecmp(spec, "drop")) {
    *coarse = !strcasecmp(spec, "coarse");
    return 0;
  }
  snprintf(why, why_len, "agent.behind '%s': expected coarse or drop", spec);
  return LA_ECONFIG;
}

uint64_t la_backlog_coarse_block(uint64_t n) {
  if (n < 2) return 0;
  uint64_t k = (n + LA_BACKLOG_COARSE_BLOCKS - 1) / LA_BACKLOG_COARSE_BLOCKS;
  if (k < 2) k = 2;
  while (n % k) k++; /* ends at n at the latest */
  return k;
}
