/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_whatif_part.c: partition files. `lactl whatif --write-partition
 * FILE` writes one partition of one cycle as a file la-replay --partition
 * reads (docs/lactl.md): a '#' header naming the application, cycle,
 * method, parts and elements, then "ID RANK" per element, ids ascending
 * (the application's numbering, lactl_numbering.h), rank = the part.
 * `lactl whatif --partition FILE` reads such a file back against a cycle's
 * mesh, to score a partition chosen elsewhere (a balancer's). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_daemon.h"
#include "lactl_util.h"
#include "lactl_whatif.h"
#include "la_client_internal.h"

int lactl_wi_write_partition(const char *path, const char *app,
                             uint64_t cycle, const char *method,
                             const lactl_mesh_t *m, const uint32_t *part,
                             uint32_t k, char *why, size_t why_len) {
  char tmp[4200];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    snprintf(why, why_len, "--write-partition %s: path too long", path);
    return LA_EIO;
  }
  /* a device or a pipe (/dev/null) is written into, never replaced */
  int fd = la_daemon_open_in_place(path);
  FILE *f = NULL;
  if (fd >= 0 && fcntl(fd, F_SETFL, 0) == 0) f = fdopen(fd, "w");
  if (fd >= 0 && !f) close(fd);
  if (fd == -1 || (fd >= 0 && !f)) {
    snprintf(why, why_len, "--write-partition %s: %s", path, strerror(errno));
    return LA_EIO;
  }
  if (!f && !(f = fopen(tmp, "w"))) {
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
  if (fd >= 0) {
    if (!bad) return 0;
    snprintf(why, why_len, "--write-partition %s: write failed", path);
    return LA_EIO;
  }
  if (bad || rename(tmp, path) != 0) {
    snprintf(why, why_len, "--write-partition %s: %s", path,
             bad ? "write failed" : strerror(errno));
    remove(tmp);
    return LA_EIO;
  }
  return 0;
}

int lactl_wi_read_partition(const char *path, const lactl_mesh_t *m,
                            uint32_t *part, uint32_t *k, char *why,
                            size_t why_len) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(why, why_len, "--partition %s: %s", path, strerror(errno));
    return LA_EINVAL;
  }
  uint8_t *seen = calloc(m->n ? m->n : 1, 1);
  if (!seen) {
    fclose(f);
    snprintf(why, why_len, "--partition %s: out of memory", path);
    return LA_ENOMEM;
  }
  char line[256];
  uint64_t ln = 0, got = 0;
  uint32_t parts = 0, top = 0;
  int rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    ln++;
    if (!strchr(line, '\n') && !feof(f)) {
      snprintf(why, why_len, "--partition %s:%" PRIu64 ": line too long",
               path, ln);
      rc = LA_EINVAL;
      break;
    }
    int64_t id;
    uint32_t r;
    int kind = la__partition_line(line, &id, &r, &parts);
    if (kind == 0) continue; /* a comment (maybe the part count), a blank */
    if (kind < 0) {
      snprintf(why, why_len,
               "--partition %s:%" PRIu64 ": not \"ID RANK\" (an id >= 0 "
               "and a rank 0 .. 16777215)",
               path, ln);
      rc = LA_EINVAL;
      break;
    }
    int64_t at = lactl_mesh_find(m, (int64_t)id);
    if (at < 0) {
      snprintf(why, why_len,
               "--partition %s:%" PRIu64 ": id %lld is not an element of "
               "the cycle",
               path, ln, (long long)id);
      rc = LA_EINVAL;
      break;
    }
    if (seen[at]) {
      snprintf(why, why_len, "--partition %s:%" PRIu64 ": id %lld again",
               path, ln, (long long)id);
      rc = LA_EINVAL;
      break;
    }
    seen[at] = 1;
    got++;
    part[at] = (uint32_t)r;
    if (r + 1 > top) top = (uint32_t)r + 1;
  }
  if (!rc && ferror(f)) {
    snprintf(why, why_len, "--partition %s: read error", path);
    rc = LA_EIO;
  }
  fclose(f);
  if (!rc && parts && top > parts) {
    snprintf(why, why_len, "--partition %s: rank %u in a partition of %u "
             "parts", path, top - 1, parts);
    rc = LA_EINVAL;
  }
  if (!rc && got < m->n) {
    uint64_t i = 0;
    while (seen[i]) i++;
    snprintf(why, why_len,
             "--partition %s: %" PRIu64 " of the cycle's %" PRIu64
             " elements have no rank (id %lld the first)",
             path, m->n - got, m->n, (long long)m->id[i]);
    rc = LA_EINVAL;
  }
  free(seen);
  if (!rc) *k = parts ? parts : top;
  return rc;
}
