/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_vtk.c: `lactl export --format vtk`: one cycle's weights as a
 * legacy VTK file (version 3.0, BINARY: big-endian numbers, so that NaN
 * survives, which VTK's ASCII reader refuses) that ParaView and VisIt
 * open.
 *
 *   grid applications (every rank registered with LA_registerGrid): image
 *     data (STRUCTURED_POINTS) of the global grid, spacing 1, one cell per
 *     grid cell, stitched over the ranks by their origins; cell data: one
 *     array per weight kind, NaN where no present rank has the cell, and
 *     the owning rank (-1 there).
 *   other applications: an UNSTRUCTURED_GRID of one vertex cell per
 *     element (all on one point: the geometry is the user's), in increasing
 *     global id; cell data: GlobalIds (the application's numbering,
 *     lactl_numbering.h), the weight arrays and the rank. With dense ids
 *     0..N-1, cell i is the user's element i (docs/mesh-views.md says how
 *     to attach the arrays to one's own mesh).
 *
 * The weights are a list of named arrays (la__arrays): measured, and
 * robust when every present rank carries them; for an application with
 * more than one channel, the same two per channel, named measured_NAME and
 * robust_NAME (NAME the channel's name with every character VTK's legacy
 * reader cannot take in a name replaced by '_'); NaN at the cells of a
 * rank whose trace lacks the channel. The loops write every entry alike.
 * Deliberately no XML VTK: the legacy form is read everywhere. GlobalIds are
 * doubles (exact up to 2^53), the type every reader of the legacy form takes.
 */
#include "lactl_vtk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_numbering.h"

enum { LA__MAX_ARRAYS = 2 + 2 * 64 };

/* One named cell array of the file. */
typedef struct {
  char name[80];
  la_traceset_t *set; /* the set (or channel set) its values come from */
  int kind;           /* LA_WEIGHTS_* the set serves while it is filled */
  double *v;
} la__array_t;

/* Appends set's arrays to a (from *n): measured and, when it has them,
 * robust, each named base with the suffix. */
static void la__arrays_of(la_traceset_t *set, const char *suffix,
                          la__array_t *a, size_t *n) {
  static const struct {
    const char *name;
    int kind;
  } kinds[] = {{"measured", LA_WEIGHTS_MEASURED},
               {"robust", LA_WEIGHTS_ROBUST}};
  for (size_t k = 0; k < 2 && *n < LA__MAX_ARRAYS; k++) {
    if (kinds[k].kind == LA_WEIGHTS_ROBUST && !la_traceset_has_robust(set))
      continue;
    la__array_t *x = &a[(*n)++];
    snprintf(x->name, sizeof x->name, "%s%s", kinds[k].name, suffix);
    x->set = set;
    x->kind = kinds[k].kind;
    x->v = NULL;
  }
}

/* The weight arrays of t (top of file); the channel sets made for them go
 * to chs[0..*nch) (the caller frees them). Returns the number of arrays,
 * or 0 when a channel cannot be read (with a message). */
static size_t la__arrays(la_traceset_t *t, la__array_t *a, la_traceset_t **chs,
                         size_t *nch) {
  size_t n = 0, nc = la_traceset_channels(t);
  *nch = 0;
  la__arrays_of(t, "", a, &n);
  for (size_t ch = 0; nc > 1 && ch < nc && n + 2 <= LA__MAX_ARRAYS; ch++) {
    la_traceset_t *c = NULL;
    int rc = la_traceset_channel(t, ch, &c);
    if (rc != 0) {
      fprintf(stderr, "lactl export: channel %zu: %s\n", ch,
              la_client_strerror(rc));
      return 0;
    }
    chs[(*nch)++] = c;
    char suffix[64] = "_";
    const char *name = la_traceset_channel_name(t, ch);
    for (size_t i = 0; name && name[i] && i + 2 < sizeof suffix; i++) {
      char x = name[i];
      int ok = (x >= 'a' && x <= 'z') || (x >= 'A' && x <= 'Z') ||
               (x >= '0' && x <= '9') || x == '-' || x == '.';
      suffix[i + 1] = ok ? x : '_';
      suffix[i + 2] = '\0';
    }
    la__arrays_of(c, suffix, a, &n);
  }
  return n;
}

/* 1 when every rank of t is a grid rank, with the global extent in g. */
static int la__grid_of(const la_traceset_t *t, uint64_t g[3]) {
  uint32_t np = la_traceset_nprocs(t);
  for (uint32_t r = 0; r < np; r++) {
    uint64_t gl[3];
    if (la_traceset_rank_grid(t, r, NULL, NULL, gl) != 0) return 0;
    for (int d = 0; d < 3; d++)
      if (r == 0 || gl[d] > g[d]) g[d] = gl[d];
  }
  return np > 0;
}

/* v as 8 big-endian bytes (the legacy format's BINARY). */
static void la__put(FILE *f, double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  for (int i = 7; i >= 0; i--) fputc((int)(b >> (8 * i)) & 0xff, f);
}

/* v as 4 big-endian bytes. */
static void la__put_i32(FILE *f, uint32_t v) {
  for (int i = 3; i >= 0; i--) fputc((int)(v >> (8 * i)) & 0xff, f);
}

/* Writes the cell arrays a[0..na) and the rank array (n cells each). */
static void la__cell_data(FILE *f, const la__array_t *a, size_t na,
                          const double *rank, uint64_t n) {
  fprintf(f, "CELL_DATA %llu\n", (unsigned long long)n);
  for (size_t k = 0; k < na; k++) {
    fprintf(f, "SCALARS %s double 1\nLOOKUP_TABLE default\n", a[k].name);
    for (uint64_t i = 0; i < n; i++) la__put(f, a[k].v[i]);
    fputc('\n', f);
  }
  fputs("SCALARS rank double 1\nLOOKUP_TABLE default\n", f);
  for (uint64_t i = 0; i < n; i++) la__put(f, rank[i]);
  fputc('\n', f);
}

/* An element of an unstructured export, sorted by id. */
typedef struct {
  int64_t id;
  uint64_t at; /* its index in the set's element order */
} la__el_t;

static int la__cmp_el(const void *x, const void *y) {
  const la__el_t *a = x, *b = y;
  return a->id < b->id ? -1 : a->id > b->id;
}

int lactl_vtk_write(FILE *f, lactl_num_t *num, la_traceset_t *t) {
  la__array_t a[LA__MAX_ARRAYS];
  la_traceset_t *chs[LA__MAX_ARRAYS];
  size_t nch = 0, na = la__arrays(t, a, chs, &nch);
  if (na == 0) {
    for (size_t i = 0; i < nch; i++) la_traceset_free(chs[i]);
    return LACTL_FAIL;
  }
  uint32_t np = la_traceset_nprocs(t);
  uint64_t g[3] = {0, 0, 0}, n = la_traceset_elements(t), cells = n;
  int grid = la__grid_of(t, g);
  if (grid) cells = g[0] * g[1] * g[2];
  int kind0 = la_traceset_weights_kind(t), rc = LACTL_FAIL;
  double *rank = malloc((cells ? cells : 1) * sizeof *rank);
  double *w = malloc((n ? n : 1) * sizeof *w);
  la__el_t *el = grid ? NULL : malloc((n ? n : 1) * sizeof *el);
  int ok = rank && w && (grid || el);
  for (size_t k = 0; k < na; k++)
    ok = ok && (a[k].v = malloc((cells ? cells : 1) * sizeof(double)));
  if (!ok) {
    fprintf(stderr, "lactl export: out of memory\n");
    goto out;
  }
  for (uint64_t i = 0; i < cells; i++) {
    rank[i] = grid ? -1 : NAN;
    for (size_t k = 0; k < na; k++) a[k].v[i] = NAN;
  }
  /* Where each element goes: a grid cell, or (sorted by id) a vertex. */
  uint64_t off = 0;
  for (uint32_t r = 0; r < np; r++) {
    uint64_t ne = la_traceset_rank_elements(t, r);
    const int64_t *id;
    const uint64_t *c;
    int how;
    if (ne && lactl_num_rank(num, t, r, &id, &c, &how)) goto out;
    for (uint64_t e = 0; e < ne; e++, c += 3) {
      if (grid) {
        uint64_t at = c[0] + g[0] * (c[1] + g[1] * c[2]);
        if (la_traceset_has_rank(t, r) && at < cells) rank[at] = r;
      } else {
        el[off + e] = (la__el_t){id[e], off + e};
        rank[off + e] = r;
      }
    }
    off += ne;
  }
  if (!grid) qsort(el, n, sizeof *el, la__cmp_el);
  /* Each weight array: the set's values of that kind, moved in place. */
  for (size_t k = 0; k < na; k++) {
    la_traceset_t *s = a[k].set;
    int kind_s = la_traceset_weights_kind(s);
    la_traceset_set_weights(s, a[k].kind);
    la_traceset_weights(s, w);
    la_traceset_set_weights(s, kind_s);
    off = 0;
    for (uint32_t r = 0; r < np && grid; r++) {
      uint64_t ne = la_traceset_rank_elements(t, r), dims[3], o[3];
      la_traceset_rank_grid(t, r, dims, o, NULL);
      for (uint64_t e = 0; e < ne && la_traceset_has_rank(s, r); e++) {
        uint64_t i = o[0] + e % dims[0], j = o[1] + e / dims[0] % dims[1];
        uint64_t kk = o[2] + e / (dims[0] * dims[1]);
        uint64_t at = i + g[0] * (j + g[1] * kk);
        if (at < cells) a[k].v[at] = w[off + e];
      }
      off += ne;
    }
    for (uint64_t i = 0; !grid && i < n; i++) a[k].v[i] = w[el[i].at];
  }
  fprintf(f, "# vtk DataFile Version 3.0\n");
  fprintf(f, "LA %s cycle %llu (%s)\nBINARY\n", la_traceset_app_id(t),
          (unsigned long long)la_traceset_cycle(t), la_traceset_unit(t));
  if (grid) {
    fprintf(f,
            "DATASET STRUCTURED_POINTS\nDIMENSIONS %llu %llu %llu\n"
            "ORIGIN 0 0 0\nSPACING 1 1 1\n",
            (unsigned long long)g[0] + 1, (unsigned long long)g[1] + 1,
            (unsigned long long)g[2] + 1);
  } else {
    fprintf(f, "DATASET UNSTRUCTURED_GRID\nPOINTS 1 double\n");
    for (int d = 0; d < 3; d++) la__put(f, 0);
    fprintf(f, "\nCELLS %llu %llu\n", (unsigned long long)n,
            (unsigned long long)(2 * n));
    for (uint64_t i = 0; i < n; i++) {
      la__put_i32(f, 1); /* one point: */
      la__put_i32(f, 0); /* point 0 */
    }
    fprintf(f, "\nCELL_TYPES %llu\n", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++) la__put_i32(f, 1); /* VTK_VERTEX */
    fputc('\n', f);
  }
  la__cell_data(f, a, na, rank, cells);
  if (!grid) {
    fputs("SCALARS GlobalIds double 1\nLOOKUP_TABLE default\n", f);
    for (uint64_t i = 0; i < n; i++) la__put(f, (double)el[i].id);
    fputc('\n', f);
  }
  rc = LACTL_OK;
out:
  la_traceset_set_weights(t, kind0);
  for (size_t k = 0; k < na; k++) free(a[k].v);
  for (size_t i = 0; i < nch; i++) la_traceset_free(chs[i]);
  free(rank);
  free(w);
  free(el);
  return rc;
}
