/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_format.h: how lactl writes: JSON strings and numbers, times,
 * numbers and ratios for tables, rank lists, output files and aligned text
 * tables. No data source, no option parsing; every subcommand prints the
 * same bytes whichever source it read.
 */
#ifndef LACTL_FORMAT_H
#define LACTL_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes s as a JSON string (quoted, escaped) to f. */
void lactl_json_str(FILE *f, const char *s);
/* Writes v as a JSON number (%.17g), or null when not finite. */
void lactl_json_num(FILE *f, double v);

/* "YYYY-MM-DD HH:MM:SS.mmm UTC" of a CLOCK_REALTIME time in ns, or "-" for
 * 0. buf holds at least 32 bytes. */
const char *lactl_fmt_time(uint64_t ns, char *buf, size_t len);

/* A number for a table: %.*g with prec digits, but whole numbers instead
 * of an exponent up to 1e15 (1234567, not 1.23e+06); "-" when NaN. */
const char *lactl_fmt_num(double v, int prec, char *buf, size_t len);

/* A ratio: 3 significant digits below 100, a whole number above; "-" for
 * NaN. */
const char *lactl_fmt_ratio(double v, char *buf, size_t len);

/* "2,5,7" of n ranks (at most len - 1 bytes, "..." when cut). */
const char *lactl_fmt_ranks(const uint32_t *r, size_t n, char *buf, size_t len);

/* Opens path for writing ("-" or NULL: stdout, through a temporary spool
 * that reaches stdout only when lactl_out_finish is told the command
 * succeeded). Prints the reason and returns NULL on failure. */
FILE *lactl_out_open(const char *cmd, const char *path);
/* Ends the output f of lactl_out_open (or stdout itself): with ok, copies
 * a spool to stdout, closes a file (stdout is flushed) and checks for
 * write errors, returning LACTL_OK or LACTL_FAIL (with a message). Without
 * ok, drops a spool, removes a file (path) and returns LACTL_FAIL: a
 * failed command leaves no partial output. */
int lactl_out_finish(const char *cmd, const char *path, FILE *f, int ok);
/* lactl_out_finish(cmd, path, f, 1). */
int lactl_out_close(const char *cmd, const char *path, FILE *f);

/* Progress of a long job on stderr ("lactl CMD: WHAT done of total"), at
 * most five times a second, and only when stderr is a terminal; done ==
 * total erases the line. */
void lactl_progress(const char *cmd, const char *what, size_t done,
                    size_t total);

/* A text table: columns sized to their widest cell, left- ('l') or
 * right-aligned ('r'), two spaces apart. Cells are copied. */
typedef struct lactl_table lactl_table_t;
/* ncols heads and an align string of ncols letters. NULL when out of
 * memory. */
lactl_table_t *lactl_table_new(int ncols, const char *const *heads,
                               const char *align);
/* Adds a row of ncols cells. 0 or -1 (out of memory). */
int lactl_table_row(lactl_table_t *t, const char *const *cells);
/* Prints the heads and rows, each line starting with indent spaces. */
void lactl_table_print(FILE *f, const lactl_table_t *t, int indent);
void lactl_table_free(lactl_table_t *t);

#endif /* LACTL_FORMAT_H */
