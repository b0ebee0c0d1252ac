/* dump.c: LA_DUMP_RAW=dir writes the raw per-element values of every
 * profiled cycle, in the metric's unit, as little-endian doubles to
 * dir/<app_id>.r<rank>.c<cycle_tag>.f64 — the ground truth against which the
 * stitched, compacted Trace-Sets are checked. It costs the application a file
 * write per profiled cycle: for validation runs, not production.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_internal.h"

int la__dump_raw(const char *dir, const char *app_id, int rank, uint64_t tag,
                 const double *values, uint64_t n, double scale) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.r%d.c%llu.f64", dir, app_id, rank,
           (unsigned long long)tag);
  FILE *f = fopen(path, "wb");
  if (!f) return la__error(LA_EIO, "LA_DUMP_RAW: %s: %s", path, strerror(errno));
  double chunk[4096];
  uint64_t done = 0;
  int rc = 0;
  while (done < n && rc == 0) {
    size_t k = n - done < 4096 ? (size_t)(n - done) : 4096;
    for (size_t i = 0; i < k; i++) chunk[i] = values[done + i] * scale;
    if (fwrite(chunk, sizeof(double), k, f) != k)
      rc = la__error(LA_EIO, "LA_DUMP_RAW: writing %s: %s", path,
                     strerror(errno));
    done += k;
  }
  if (fclose(f) != 0 && rc == 0)
    rc = la__error(LA_EIO, "LA_DUMP_RAW: closing %s", path);
  return rc;
}
