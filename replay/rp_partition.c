/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_partition.c: reads a partition file, as `lactl whatif
 * --write-partition` writes it (docs/lactl.md): '#' comment lines, then
 * one line per element, "ID RANK", ids strictly ascending (the order of
 * the application's element numbering: its own global ids, a grid's global
 * cell index, or the concatenated index). A comment "; parts K" gives the
 * rank count (ranks without elements included); else it is the largest
 * rank + 1. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "la_client_internal.h"

void rp_part_free(rp_part_t *p) {
  free(p->id), free(p->rank);
  memset(p, 0, sizeof *p);
}

int rp_part_read(const char *path, rp_part_t *p, char *why, size_t why_len) {
  memset(p, 0, sizeof *p);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(why, why_len, "%s: %s", path, strerror(errno));
    return -1;
  }
  char line[256];
  uint64_t cap = 0, ln = 0;
  uint32_t parts = 0;
  int rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    ln++;
    if (!strchr(line, '\n') && !feof(f)) {
      snprintf(why, why_len, "%s:%" PRIu64 ": line too long", path, ln);
      rc = -1;
      break;
    }
    int64_t id;
    uint32_t r;
    int kind = la__partition_line(line, &id, &r, &parts);
    if (kind == 0) continue; /* a comment (maybe the rank count), a blank */
    if (kind < 0) {
      snprintf(why, why_len,
               "%s:%" PRIu64 ": not \"ID RANK\" (an id >= 0 and a rank "
               "0 .. 16777215)",
               path, ln);
      rc = -1;
      break;
    }
    if (p->n && id <= p->id[p->n - 1]) {
      snprintf(why, why_len,
               "%s:%" PRIu64 ": id %lld after %" PRId64
               ": ids must be strictly ascending",
               path, ln, (long long)id, p->id[p->n - 1]);
      rc = -1;
      break;
    }
    if (p->n == cap) {
      cap = cap ? 2 * cap : 1024;
      int64_t *ni = realloc(p->id, cap * sizeof *ni);
      if (ni) p->id = ni;
      uint32_t *nr = ni ? realloc(p->rank, cap * sizeof *nr) : NULL;
      if (nr) p->rank = nr;
      if (!ni || !nr) {
        snprintf(why, why_len, "%s: out of memory", path);
        rc = -1;
        break;
      }
    }
    p->id[p->n] = id;
    p->rank[p->n++] = (uint32_t)r;
    if (r + 1 > p->nranks) p->nranks = (uint32_t)r + 1;
  }
  if (!rc && ferror(f)) {
    snprintf(why, why_len, "%s: read error", path);
    rc = -1;
  }
  fclose(f);
  if (!rc && parts && p->nranks > parts) {
    snprintf(why, why_len, "%s: rank %u in a partition of %u parts", path,
             p->nranks - 1, parts);
    rc = -1;
  }
  if (!rc && parts) p->nranks = parts;
  if (!rc && !p->n) {
    snprintf(why, why_len, "%s: no element in the file", path);
    rc = -1;
  }
  if (rc) rp_part_free(p);
  return rc;
}
