/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_format.c: JSON, time and number formatting, output files and text
 * tables for lactl (see lactl_format.h). */
#include "lactl_format.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lactl_opts.h"

void lactl_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch == '\n')
      fputs("\\n", f);
    else if (ch == '\t')
      fputs("\\t", f);
    else if (ch < 0x20 || ch == 0x7f)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

void lactl_json_num(FILE *f, double v) {
  if (v == v && v - v == 0)
    fprintf(f, "%.17g", v);
  else
    fputs("null", f);
}

const char *lactl_fmt_time(uint64_t ns, char *buf, size_t len) {
  if (ns == 0) {
    snprintf(buf, len, "-");
    return buf;
  }
  time_t sec = (time_t)(ns / 1000000000u);
  struct tm tm;
  gmtime_r(&sec, &tm);
  char d[24];
  strftime(d, sizeof d, "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(buf, len, "%s.%03u UTC", d, (unsigned)(ns % 1000000000u / 1000000u));
  return buf;
}

const char *lactl_fmt_num(double v, int prec, char *buf, size_t len) {
  if (v != v)
    snprintf(buf, len, "-");
  else if (fabs(v) >= pow(10, prec) && fabs(v) < 1e15) /* no exponent */
    snprintf(buf, len, "%.0f", v);
  else
    snprintf(buf, len, "%.*g", prec, v);
  return buf;
}

const char *lactl_fmt_ratio(double v, char *buf, size_t len) {
  if (v >= 100 && v < 1e15)
    snprintf(buf, len, "%.0f", v);
  else
    lactl_fmt_num(v, 3, buf, len);
  return buf;
}

const char *lactl_fmt_ranks(const uint32_t *r, size_t n, char *buf,
                            size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n; i++) {
    char one[16];
    int k = snprintf(one, sizeof one, "%s%u", i ? "," : "", r[i]);
    if (o + (size_t)k + 4 >= len) {
      snprintf(buf + o, len - o, ",...");
      break;
    }
    memcpy(buf + o, one, (size_t)k + 1);
    o += (size_t)k;
  }
  return buf;
}

/* Output meant for stdout is spooled here until lactl_out_finish says the
 * command succeeded: a failure half-way writes nothing to stdout. */
static FILE *la__spool;

FILE *lactl_out_open(const char *cmd, const char *path) {
  if (!path || !strcmp(path, "-")) {
    la__spool = tmpfile();
    if (!la__spool)
      fprintf(stderr, "lactl %s: cannot spool the output: %s\n", cmd,
              strerror(errno));
    return la__spool;
  }
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, "lactl %s: %s: %s\n", cmd, path, strerror(errno));
  return f;
}

/* Copies the spool to stdout. 0 or -1. */
static int la__spool_copy(FILE *f) {
  char buf[1 << 16];
  size_t n;
  if (fflush(f) || fseek(f, 0, SEEK_SET)) return -1;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    if (fwrite(buf, 1, n, stdout) != n) return -1;
  return ferror(f) ? -1 : 0;
}

int lactl_out_finish(const char *cmd, const char *path, FILE *f, int ok) {
  int bad = ferror(f);
  if (f == la__spool) {
    if (ok && !bad) bad |= la__spool_copy(f) != 0;
    fclose(f);
    la__spool = NULL;
    f = stdout;
  }
  if (f == stdout)
    bad |= fflush(f) != 0 || ferror(f);
  else
    bad |= fclose(f) != 0;
  if (!ok) {
    if (f != stdout && path) remove(path); /* no half-written file */
    return LACTL_FAIL;
  }
  if (bad) {
    fprintf(stderr, "lactl %s: writing %s failed\n", cmd,
            f == stdout || !path ? "the output" : path);
    return LACTL_FAIL;
  }
  return LACTL_OK;
}

int lactl_out_close(const char *cmd, const char *path, FILE *f) {
  return lactl_out_finish(cmd, path, f, 1);
}

void lactl_progress(const char *cmd, const char *what, size_t done,
                    size_t total) {
  static int tty = -1;
  static struct timespec last;
  struct timespec now;
  if (tty < 0) tty = isatty(STDERR_FILENO);
  if (!tty || total < 2) return;
  if (done >= total) { /* finished: erase the line */
    fprintf(stderr, "\r\033[K");
    return;
  }
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (done &&
      (now.tv_sec - last.tv_sec) * 1000000000L + (now.tv_nsec - last.tv_nsec) <
          200000000L)
    return;
  last = now;
  fprintf(stderr, "\rlactl %s: %s %zu of %zu (%zu%%)\033[K", cmd, what, done,
          total, done * 100 / total);
}

/* ---------------------------------------------------------------- table */

struct lactl_table {
  int ncols;
  char align[16];
  size_t nrows, cap; /* rows, the heads being row 0 */
  char **cell;       /* nrows * ncols */
};

lactl_table_t *lactl_table_new(int ncols, const char *const *heads,
                               const char *align) {
  if (ncols < 1 || ncols > 15) return NULL;
  lactl_table_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->ncols = ncols;
  snprintf(t->align, sizeof t->align, "%s", align);
  if (lactl_table_row(t, heads)) {
    lactl_table_free(t);
    return NULL;
  }
  return t;
}

int lactl_table_row(lactl_table_t *t, const char *const *cells) {
  if (t->nrows == t->cap) {
    size_t nc = t->cap ? 2 * t->cap : 16;
    char **v = realloc(t->cell, nc * (size_t)t->ncols * sizeof *v);
    if (!v) return -1;
    t->cell = v;
    t->cap = nc;
  }
  char **row = t->cell + t->nrows * (size_t)t->ncols;
  for (int i = 0; i < t->ncols; i++) {
    row[i] = strdup(cells[i] ? cells[i] : "");
    if (!row[i]) {
      while (i-- > 0) free(row[i]);
      return -1;
    }
  }
  t->nrows++;
  return 0;
}

void lactl_table_print(FILE *f, const lactl_table_t *t, int indent) {
  int w[16] = {0};
  size_t len = (size_t)indent + 1;
  for (int i = 0; i < t->ncols; i++) {
    for (size_t r = 0; r < t->nrows; r++) {
      int n = (int)strlen(t->cell[r * (size_t)t->ncols + (size_t)i]);
      if (n > w[i]) w[i] = n;
    }
    len += (size_t)w[i] + 2;
  }
  char *line = malloc(len + 1);
  if (!line) return;
  for (size_t r = 0; r < t->nrows; r++) {
    size_t o = (size_t)snprintf(line, len + 1, "%*s", indent, "");
    for (int i = 0; i < t->ncols; i++) {
      const char *c = t->cell[r * (size_t)t->ncols + (size_t)i];
      o += (size_t)snprintf(line + o, len + 1 - o,
                            t->align[i] == 'r' ? "%*s  " : "%-*s  ", w[i], c);
    }
    while (o > 0 && line[o - 1] == ' ') o--; /* no trailing blanks */
    line[o] = 0;
    fprintf(f, "%s\n", line);
  }
  free(line);
}

void lactl_table_free(lactl_table_t *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++) free(t->cell[i]);
  free(t->cell);
  free(t);
}
