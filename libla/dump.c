/* SPDX-License-Identifier: BSD-3-Clause */
/* dump.c: LA_DUMP_RAW=dir writes the raw per-element values of every
 * profiled cycle, in the metric's unit, as little-endian doubles to
 * dir/<app_id>.r<rank>.c<cycle_tag>.f64 — the ground truth against which the
 * stitched, compacted Trace-Sets are checked. Beside it, <...>.flags holds
 * the cycle's n flag bytes (LA_SHM_FLAG_INTERFERED: the element's thread was
 * switched out while it was timed) and <...>.fid one text line
 * "flagged=N interference_ns=T scale=S" (docs/fidelity.md; S is the ns per
 * count the values were multiplied by: lactl compact --quantum S). It costs the
 * application file writes per profiled cycle: for validation runs, not
 * production. With channels the values are the per-element sum over the
 * channels (what the LocalAgent ships as the trace), added in counts in
 * channel order and scaled once, as the LocalAgent adds them (a sum of
 * whole timer ticks stays whole ticks); row values (layout 5) are spread
 * over their cells as the LocalAgent spreads them (a row-probed cycle, no
 * cell values: la_shm_row_cell(), as its stored trace decodes); the
 * piece records of layout 6 of a cycle the LocalAgent stores one value
 * per piece (la_pieces_from_shm, its decision) as its trace decodes
 * (each piece's value times the scale, over its cells), those of any
 * other cycle spread over their cells first, checked as the LocalAgent
 * checks them (la_shm_pieces_fold, into a copy: the agent still reads
 * the table).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "la_compact_pieces.h"
#include "la_internal.h"

/* Why this cycle's dump failed (la__dump_cycle), and the failures since
 * the last one that worked: the first of a run of failures is said (also
 * without LA_VERBOSE: the files asked for are missing), the others only
 * counted, so that a directory removed or made unwritable mid-run is
 * reported once, not every cycle nor never. The application's thread
 * only (LA_dataXfer). */
static char la__dump_why[400];
static uint64_t la__dump_failed;

int la__dump_check(const char *dir) {
  struct stat st;
  la__dump_failed = 0; /* a new registration: its failures said anew */
  if (stat(dir, &st) != 0)
    return la__error(LA_ECONFIG,
                     "LA_DUMP_RAW=%s: %s (create the directory, or unset "
                     "LA_DUMP_RAW)",
                     dir, strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return la__error(LA_ECONFIG, "LA_DUMP_RAW=%s: not a directory", dir);
  if (access(dir, W_OK | X_OK) != 0)
    return la__error(LA_ECONFIG, "LA_DUMP_RAW=%s: cannot write into it: %s",
                     dir, strerror(errno));
  return 0;
}

static int la__dump_fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int la__dump_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(la__dump_why, sizeof la__dump_why, fmt, ap);
  va_end(ap);
  return code;
}

static FILE *la__dump_open(char *path, size_t len, const char *dir,
                           const char *app_id, int rank, uint64_t tag,
                           const char *ext) {
  snprintf(path, len, "%s/%s.r%d.c%llu.%s", dir, app_id, rank,
           (unsigned long long)tag, ext);
  FILE *f = fopen(path, "wb");
  if (!f) la__dump_fail(LA_EIO, "%s: %s", path, strerror(errno));
  return f;
}

static int la__dump_close(FILE *f, const char *path, int rc) {
  if (fclose(f) != 0 && rc == 0)
    rc = la__dump_fail(LA_EIO, "closing %s: %s", path, strerror(errno));
  return rc;
}

/* The cells of a cycle stored one value per piece (la_pieces_from_shm:
 * the table as the LocalAgent takes it), scaled, into *out (malloc'ed, n
 * values), or *out NULL when the cycle is spread over its cells. Returns
 * 0 or LA_ENOMEM. */
static int la__dump_pieces(const la_shm_pieces_head_t *ph, uint64_t n_pieces,
                           uint64_t n, const uint64_t *grid, double scale,
                           double **out) {
  la_pieces_t g;
  double *v = malloc(n_pieces * sizeof *v);
  *out = NULL;
  if (!v) return LA_ENOMEM;
  int rc = la_pieces_from_shm(ph, n_pieces, n, grid, scale, &g, v, NULL,
                              NULL);
  if (rc == 1 && (*out = malloc(n * sizeof **out)) == NULL) rc = LA_ENOMEM;
  if (rc == 1) la_pieces_expand(&g, v, *out);
  la_pieces_free(&g);
  free(v);
  return rc < 0 ? rc : 0;
}

static int la__dump_cycle(const char *dir, const char *app_id, int rank,
                          uint64_t tag, const la__ipc_t *ipc, uint32_t buf,
                          double scale, const uint64_t *grid) {
  char path[512];
  uint64_t n = ipc->n_elements;
  uint32_t n_channels = ipc->n_channels;
  const double *values = la__ipc_values(ipc, buf);
  la_shm_pieces_head_t *ph = la__ipc_pieces(ipc, buf);
  const double *rows = la__ipc_rows(ipc, buf);
  double *folded = NULL, vscale = scale; /* what the values are scaled by */
  if (ph && ph->claimed && n_channels == 1 &&
      la_shm_cells_none(ipc->hdr->buf[buf].cells, values, n, rows,
                        rows ? ipc->n_rows : 0)) {
    /* a cycle the LocalAgent stores one value per piece: the cells as
     * its trace decodes (each piece's value times the scale, over its
     * cells: scaled already) */
    int rc = la__dump_pieces(ph, ipc->n_pieces, n, grid, scale, &folded);
    if (rc < 0) return la__dump_fail(rc, "no memory");
    if (folded) {
      values = folded;
      rows = NULL;
      vscale = 1;
    }
  }
  if (!folded && ph && ph->claimed) {
    size_t bytes = (size_t)(n * n_channels * sizeof(double));
    if (!(folded = malloc(bytes)))
      return la__dump_fail(LA_ENOMEM, "%zu bytes: no memory", bytes);
    memcpy(folded, values, bytes);
    la_shm_pieces_fold(ph, ipc->n_pieces, folded, n, n_channels,
                       grid, NULL, NULL, 0, 0, NULL);
    values = folded;
  }
  uint64_t nx = rows ? n / ipc->n_rows : 0;
  /* a row-probed cycle: the cells as the LocalAgent stores them */
  int row_only = rows && n_channels == 1 && nx >= 2 && n % ipc->n_rows == 0 &&
                 la_shm_all_zero(values, n);
  FILE *f = la__dump_open(path, sizeof path, dir, app_id, rank, tag, "f64");
  if (!f) {
    free(folded);
    return LA_EIO;
  }
  double chunk[4096];
  uint64_t done = 0;
  int rc = 0;
  while (done < n && rc == 0) {
    size_t k = n - done < 4096 ? (size_t)(n - done) : 4096;
    for (size_t i = 0; i < k && row_only; i++)
      chunk[i] = la_shm_row_cell(rows[(done + i) / nx], scale, nx);
    for (size_t i = 0; i < k && !row_only; i++) {
      double v = values[done + i];
      if (rows) v += la_shm_row_share(rows[(done + i) / nx], nx);
      for (uint32_t c = 1; c < n_channels; c++) v += values[c * n + done + i];
      chunk[i] = v * vscale;
    }
    if (fwrite(chunk, sizeof(double), k, f) != k)
      rc = la__dump_fail(LA_EIO, "writing %s: %s", path, strerror(errno));
    done += k;
  }
  free(folded);
  if ((rc = la__dump_close(f, path, rc))) return rc;

  f = la__dump_open(path, sizeof path, dir, app_id, rank, tag, "flags");
  if (!f) return LA_EIO;
  if (fwrite(la__ipc_flags(ipc, buf), 1, (size_t)n, f) != (size_t)n)
    rc = la__dump_fail(LA_EIO, "writing %s: %s", path, strerror(errno));
  if ((rc = la__dump_close(f, path, rc))) return rc;

  const la_shm_bufmeta_t *m = &ipc->hdr->buf[buf];
  f = la__dump_open(path, sizeof path, dir, app_id, rank, tag, "fid");
  if (!f) return LA_EIO;
  if (fprintf(f, "flagged=%llu interference_ns=%.0f scale=%.17g\n",
              (unsigned long long)m->n_flagged,
              (double)m->interference_ticks * scale, scale) < 0)
    rc = la__dump_fail(LA_EIO, "writing %s: %s", path, strerror(errno));
  return la__dump_close(f, path, rc);
}

int la__dump_raw(const char *dir, const char *app_id, int rank, uint64_t tag,
                 const la__ipc_t *ipc, uint32_t buf, double scale,
                 const uint64_t *grid) {
  int rc = la__dump_cycle(dir, app_id, rank, tag, ipc, buf, scale, grid);
  if (rc != 0 && la__dump_failed++ == 0)
    return la__warn(rc,
                    "LA_DUMP_RAW=%s: cycle %llu not dumped: %s (the run goes "
                    "on; later cycles are dumped when they can be, those "
                    "that cannot are not reported again)",
                    dir, (unsigned long long)tag, la__dump_why);
  if (rc == 0 && la__dump_failed) {
    la__info("LA_DUMP_RAW=%s: dumping again from cycle %llu, after %llu "
             "cycles not dumped",
             dir, (unsigned long long)tag,
             (unsigned long long)la__dump_failed);
    la__dump_failed = 0;
  }
  return rc;
}
