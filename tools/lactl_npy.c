/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_npy.c: `lactl export --format npy`: a NumPy .npy file (format
 * version 1.0) holding one structured array, and a JSON sidecar naming the
 * export format version and what the array is; also the CSV export's
 * versioned head. See lactl_npy.h for the contracts, docs/lactl.md for
 * the files.
 *
 * The array streams: the header is written first with room for any row
 * count, rows go out in blocks of ROWS_PER_BLOCK as each rank is decoded,
 * and the count is patched into the header at the end (the same header
 * length, the padding absorbs the digits). Nothing holds more than one
 * rank's values and one block of rows. Deliberately not here: choosing
 * cycles and weights, reading the source (lactl_export.c does that).
 */
#include "lactl_npy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_format.h"
#include "lactl_source.h"

#define ROW_BYTES 36 /* 8 + 4 + 8 + 8 + 8, packed */
#define ROWS_PER_BLOCK 4096
#define DESCR                                                \
  "[('cycle', '<u8'), ('rank', '<u4'), ('element', '<u8'), " \
  "('global_element', '<u8'), ('value', '<f8')]"

struct lactl_npy {
  const char *cmd;
  FILE *f, *side;
  char side_path[4096];
  uint64_t rows, sets;
  size_t hdr_len; /* magic, version, length and dict: a multiple of 64 */
  size_t nbuf;    /* rows in buf */
  uint8_t buf[ROWS_PER_BLOCK * ROW_BYTES];
};

/* The header for rows rows into h (room for 256 bytes); its length, the
 * same for every row count (room for 20 digits), a multiple of 64. */
static size_t npy_header(uint64_t rows, char *h) {
  char dict[200];
  int n = snprintf(dict, sizeof dict,
                   "{'descr': " DESCR
                   ", 'fortran_order': False, 'shape': (%llu,), }",
                   (unsigned long long)rows);
  int longest = n - snprintf(NULL, 0, "%llu", (unsigned long long)rows) + 20;
  size_t total = (10 + (size_t)longest + 1 + 63) / 64 * 64;
  size_t hl = total - 10;
  memcpy(h, "\x93NUMPY\x01\x00", 8);
  h[8] = (char)(hl & 0xff);
  h[9] = (char)(hl >> 8);
  memcpy(h + 10, dict, (size_t)n);
  memset(h + 10 + n, ' ', total - 10 - (size_t)n - 1);
  h[total - 1] = '\n';
  return total;
}

static void put_le(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int flush_rows(lactl_npy_t *w) {
  if (w->nbuf && fwrite(w->buf, ROW_BYTES, w->nbuf, w->f) != w->nbuf) {
    fprintf(stderr, "lactl %s: writing the array failed: %s\n", w->cmd,
            strerror(errno));
    return -1;
  }
  w->nbuf = 0;
  return 0;
}

void lactl_csv_head(FILE *f, const char *app, const la_traceset_t *t) {
  const char *s[3] = {app, la_traceset_metric(t), la_traceset_unit(t)};
  fprintf(f, "# lactl export format %d", LACTL_EXPORT_FORMAT_VERSION);
  for (int i = 0; i < 3; i++) { /* one line: no control characters */
    fputs(i == 0 ? "; app " : i == 1 ? "; metric " : "; unit ", f);
    for (const char *p = s[i]; *p; p++)
      fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, f);
  }
  fputs("\ncycle,rank,element,global_element,value,id,i,j,k\n", f);
}

lactl_npy_t *lactl_npy_start(const char *cmd, FILE *f, const char *path) {
  lactl_npy_t *w = calloc(1, sizeof *w);
  if (!w) {
    fprintf(stderr, "lactl %s: out of memory\n", cmd);
    return NULL;
  }
  w->cmd = cmd;
  w->f = f;
  int n = snprintf(w->side_path, sizeof w->side_path, "%s.json", path);
  if (n < 0 || (size_t)n >= sizeof w->side_path) {
    fprintf(stderr, "lactl %s: %s: path too long\n", cmd, path);
    free(w);
    return NULL;
  }
  char h[256];
  w->hdr_len = npy_header(0, h);
  if (fwrite(h, 1, w->hdr_len, f) != w->hdr_len) {
    fprintf(stderr, "lactl %s: %s: %s\n", cmd, path, strerror(errno));
    free(w);
    return NULL;
  }
  w->side = fopen(w->side_path, "w");
  if (!w->side) {
    fprintf(stderr, "lactl %s: %s: %s\n", cmd, w->side_path, strerror(errno));
    free(w);
    return NULL;
  }
  return w;
}

/* The sidecar's opening, from the first set. */
static void side_head(lactl_npy_t *w, const la_traceset_t *t) {
  FILE *s = w->side;
  fprintf(s,
          "{\"format\": \"lactl-export-npy\", \"format_version\": %d, "
          "\"app\": ",
          LACTL_EXPORT_FORMAT_VERSION);
  lactl_json_str(s, la_traceset_app_id(t));
  fputs(", \"metric\": ", s);
  lactl_json_str(s, la_traceset_metric(t));
  fputs(", \"unit\": ", s);
  lactl_json_str(s, la_traceset_unit(t));
  fputs(
      ",\n \"dtype\": [[\"cycle\", \"<u8\"], [\"rank\", \"<u4\"], "
      "[\"element\", \"<u8\"], [\"global_element\", \"<u8\"], "
      "[\"value\", \"<f8\"]],\n \"sets\": [",
      s);
}

int lactl_npy_set(lactl_npy_t *w, const la_traceset_t *t, double *v) {
  uint32_t np = la_traceset_nprocs(t);
  uint64_t cyc = la_traceset_cycle(t), g = 0, first_row = w->rows;
  for (uint32_t r = 0; r < np; r++) {
    uint64_t ne = la_traceset_rank_elements(t, r);
    if (la_traceset_has_rank(t, r)) {
      if (la_traceset_rank_weights(t, r, v)) {
        fprintf(stderr, "lactl %s: rank %u does not decode\n", w->cmd, r);
        return -1;
      }
      for (uint64_t e = 0; e < ne; e++) {
        uint8_t *p = w->buf + w->nbuf * ROW_BYTES;
        uint64_t bits;
        memcpy(&bits, &v[e], sizeof bits);
        put_le(p, cyc, 8);
        put_le(p + 8, r, 4);
        put_le(p + 12, e, 8);
        put_le(p + 20, g + e, 8);
        put_le(p + 28, bits, 8);
        if (++w->nbuf == ROWS_PER_BLOCK && flush_rows(w)) return -1;
      }
      w->rows += ne;
    }
    g += ne;
  }
  if (w->sets == 0) side_head(w, t);
  const uint32_t *m;
  size_t nm = la_traceset_missing(t, &m);
  fprintf(
      w->side,
      "%s\n  {\"cycle\": %llu, \"state\": \"%s\", \"nprocs\": %u, "
      "\"elements\": %llu, \"weights\": \"%s\", \"first_row\": %llu, "
      "\"rows\": %llu, \"missing\": [",
      w->sets ? "," : "", (unsigned long long)cyc,
      lactl_state_name(lactl_set_state(t)), np, (unsigned long long)g,
      la_traceset_weights_kind(t) == LA_WEIGHTS_ROBUST ? "robust" : "measured",
      (unsigned long long)first_row, (unsigned long long)(w->rows - first_row));
  for (size_t i = 0; i < nm; i++) fprintf(w->side, "%s%u", i ? ", " : "", m[i]);
  fputs("]}", w->side);
  w->sets++;
  return 0;
}

int lactl_npy_finish(lactl_npy_t *w, int ok) {
  int rc = ok && w->sets ? 0 : -1;
  if (rc == 0 && flush_rows(w)) rc = -1;
  if (rc == 0) {
    char h[256];
    size_t hl = npy_header(w->rows, h);
    if (hl != w->hdr_len || fflush(w->f) || fseek(w->f, 0, SEEK_SET) ||
        fwrite(h, 1, hl, w->f) != hl || fseek(w->f, 0, SEEK_END)) {
      fprintf(stderr, "lactl %s: writing the header failed: %s\n", w->cmd,
              strerror(errno));
      rc = -1;
    }
  }
  if (rc == 0)
    fprintf(w->side, "\n ],\n \"rows\": %llu}\n", (unsigned long long)w->rows);
  if (w->side) {
    int bad = ferror(w->side);
    bad |= fclose(w->side) != 0;
    if (bad && rc == 0) {
      fprintf(stderr, "lactl %s: writing %s failed\n", w->cmd, w->side_path);
      rc = -1;
    }
  }
  if (rc) remove(w->side_path);
  free(w);
  return rc;
}
