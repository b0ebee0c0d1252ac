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
 * robust when every present rank carries them; more kinds (channels) are
 * more entries of that list, written by the same loops. Deliberately no
 * XML VTK: the legacy form is read everywhere. GlobalIds are doubles
 * (exact up to 2^53), the type every reader of the legacy form takes.
 */
#include "lactl_vtk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lactl_numbering.h"

enum { LA__MAX_ARRAYS = 8 };

/* One named cell array of the file. */
typedef struct {
  const char *name;
  int kind; /* LA_WEIGHTS_* the set serves while it is filled */
  double *v;
} la__array_t;

/* The weight arrays t can fill: measured, and robust when it has them. */
static size_t la__arrays(const la_traceset_t *t, la__array_t *a) {
  size_t n = 0;
  a[n++] = (la__array_t){"measured", LA_WEIGHTS_MEASURED, NULL};
  if (la_traceset_has_robust(t))
    a[n++] = (la__array_t){"robust", LA_WEIGHTS_ROBUST, NULL};
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
  size_t na = la__arrays(t, a);
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
    la_traceset_set_weights(t, a[k].kind);
    la_traceset_weights(t, w);
    off = 0;
    for (uint32_t r = 0; r < np && grid; r++) {
      uint64_t ne = la_traceset_rank_elements(t, r), dims[3], o[3];
      la_traceset_rank_grid(t, r, dims, o, NULL);
      for (uint64_t e = 0; e < ne && la_traceset_has_rank(t, r); e++) {
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
  free(rank);
  free(w);
  free(el);
  return rc;
}
