/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_npy.h: what `lactl export` writes besides its text formats: the
 * format version every export carries, and the .npy writer (NumPy's
 * format version 1.0, written here in C) with its JSON sidecar.
 * docs/lactl.md describes the files; docs/schema/ has the JSON Schemas.
 */
#ifndef LACTL_NPY_H
#define LACTL_NPY_H

#include <stdint.h>
#include <stdio.h>

#include "la_client.h"

/* Version of the export formats (CSV comment line, JSON "format_version",
 * the .npy sidecar's "format_version"). Raised when a column or field
 * changes meaning or goes away; adding one keeps it. */
#define LACTL_EXPORT_FORMAT_VERSION 1

/* Writes the CSV export's first two lines: the comment naming the format
 * version, application, metric and unit (from t, the first set), then the
 * column header. */
void lactl_csv_head(FILE *f, const char *app, const la_traceset_t *t);

typedef struct lactl_npy lactl_npy_t;

/* Starts a .npy export into f, a seekable file just opened for path (the
 * header's row count is written at the end, so stdout and pipes cannot
 * be used), and its sidecar path + ".json". The array is one record per
 * element of every present rank, fields cycle <u8, rank <u4, element <u8,
 * global_element <u8, value <f8 (packed, little-endian): the CSV's
 * columns. Returns the writer, or NULL after a message on stderr (cmd
 * names the command). */
lactl_npy_t *lactl_npy_start(const char *cmd, FILE *f, const char *path);

/* Appends set t's rows (its present ranks, in rank order; w has room for
 * the largest rank's values) and its sidecar entry. Returns 0, or -1 after
 * a message on stderr. */
int lactl_npy_set(lactl_npy_t *w, const la_traceset_t *t, double *w_buf);

/* ok: the export succeeded: writes the row count into the header and
 * completes the sidecar. Otherwise (or if that fails) removes the sidecar.
 * Frees w (not f, which the caller closes). Returns 0, or -1 after a
 * message on stderr. */
int lactl_npy_finish(lactl_npy_t *w, int ok);

#endif /* LACTL_NPY_H */
