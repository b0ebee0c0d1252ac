/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_whatif_part.c: `lactl whatif --write-partition FILE`: one
 * partition of one cycle as a file la-replay --partition reads
 * (docs/lactl.md): a '#' header naming the application, cycle, method,
 * parts and elements, then "ID RANK" per element, ids ascending (the
 * application's numbering, lactl_numbering.h), rank = the part. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lactl_util.h"
#include "lactl_whatif.h"

int lactl_wi_write_partition(const char *path, const char *app,
                             uint64_t cycle, const char *method,
                             const lactl_mesh_t *m, const uint32_t *part,
                             uint32_t k, char *why, size_t why_len) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    snprintf(why, why_len, "--write-partition %s: path too long", path);
    return LA_EIO;
  }
  FILE *f = fopen(tmp, "w");
  if (!f) {
    snprintf(why, why_len, "--write-partition %s: %s", tmp, strerror(errno));
    return LA_EIO;
  }
  fprintf(f, "# lactl whatif partition 1; app ");
  lactl_json_str(f, app);
  fprintf(f,
          "; cycle %llu; method %s; parts %u; elements %llu\n"
          "# ID RANK, one line per element, ids ascending\n",
          (unsigned long long)cycle, method, k, (unsigned long long)m->n);
  for (uint64_t i = 0; i < m->n; i++)
    fprintf(f, "%lld %u\n", (long long)m->id[i], part[i]);
  int bad = ferror(f);
  if (fclose(f) != 0) bad = 1;
  if (bad || rename(tmp, path) != 0) {
    snprintf(why, why_len, "--write-partition %s: %s", path,
             bad ? "write failed" : strerror(errno));
    remove(tmp);
    return LA_EIO;
  }
  return 0;
}
