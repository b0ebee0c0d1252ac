/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_whatif.h: what the parts of `lactl whatif` share: one cycle's
 * elements as a partitioner sees them (lactl_whatif_mesh.c), the figures
 * of each partition (lactl_whatif.c) and their output as a table, JSON or
 * CSV (lactl_whatif_out.c). */
#ifndef LACTL_WHATIF_H
#define LACTL_WHATIF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "la_client.h"
#include "lactl_numbering.h"

/* Version of the JSON and CSV output (docs/schema/lactl-whatif.json). */
#define LACTL_WHATIF_FORMAT_VERSION 1

/* One cycle's elements. An element is one id of the application's
 * numbering (lactl_numbering.h); the entries of several ranks with the
 * same id (an application that registers every cell on every rank and
 * probes only its own) are one element: their weights add up, and its
 * owner is the rank with the largest weight (the lowest such rank on a
 * tie). */
typedef struct lactl_mesh {
  uint32_t nprocs;
  uint64_t n;         /* elements */
  int64_t *id;        /* n ids, ascending */
  double *w;          /* n weights (non-finite values taken as 0) */
  uint32_t *owner;    /* n current ranks */
  int grid;           /* 1: every rank placed in a global grid */
  uint64_t g[3];      /* the global grid's extent (grid only) */
  uint64_t (*ijk)[3]; /* n global cell coordinates (grid only) */
  uint64_t *xadj;     /* the graph (lactl_mesh_graph): n + 1 offsets */
  uint64_t *adj;      /* neighbours */
  double *totals;     /* nprocs stored per-rank totals of the weights
                         served: robust or measured exact sums */
  int kind;           /* LA_WEIGHTS_ROBUST or LA_WEIGHTS_MEASURED */
  uint64_t nonfinite; /* values taken as 0 */
} lactl_mesh_t;

/* Builds m from t, every rank present (the caller checks), numbering its
 * elements through num. Returns 0 or an LA_E* code with why filled. */
int lactl_mesh_build(lactl_mesh_t *m, const la_traceset_t *t, lactl_num_t *num,
                     char *why, size_t why_len);
/* The 6-neighbour graph of a grid mesh (an empty graph otherwise) into
 * m->xadj, m->adj. 0 or LA_ENOMEM. */
int lactl_mesh_graph(lactl_mesh_t *m);
/* The index of id in m, or -1. */
int64_t lactl_mesh_find(const lactl_mesh_t *m, int64_t id);
void lactl_mesh_free(lactl_mesh_t *m);

/* A partition's figures. */
typedef struct lactl_wi_row {
  const char *method; /* "current", "metis", "rcb", "greedy", "file" */
  uint32_t parts;
  double max, mean, imbalance, gain;
  uint64_t moved;     /* elements whose rank changes */
  double moved_bytes; /* moved * bytes per element */
  double ms;          /* the partitioner's time */
  size_t nh;          /* horizon scores */
  double *h;          /* predicted imbalance on each following cycle */
  double hmin, hmed, hmax;
  /* The halo (grid only, client/halo.c): cells facing another part, the
   * cell values one ghost exchange sends (a cell once per neighbour part
   * it faces), the neighbour parts per part. */
  int halo;
  uint64_t halo_cells, halo_sent, nbr_max;
  double nbr_mean;
} lactl_wi_row_t;

enum { LACTL_WI_MAX_ROWS = 5 };

/* One analysed cycle. */
typedef struct lactl_wi_cycle {
  uint64_t cycle;
  uint32_t nprocs;
  uint64_t elements;
  int grid;
  uint64_t g[3];
  const char *weights; /* "robust" or "measured" */
  double total;
  size_t nh;
  const uint64_t *hcycles; /* the following cycles scored */
  lactl_wi_row_t rows[LACTL_WI_MAX_ROWS];
  int nrows;
} lactl_wi_cycle_t;

/* What the output needs besides the cycles. */
typedef struct lactl_wi_head {
  const char *app, *metric, *unit, *channel;
  double bytes_per_element;
  unsigned horizon; /* asked for */
} lactl_wi_head_t;

enum { LACTL_WI_TABLE, LACTL_WI_JSON, LACTL_WI_CSV };

void lactl_wi_begin(FILE *f, int fmt, const lactl_wi_head_t *h);
void lactl_wi_put(FILE *f, int fmt, const lactl_wi_head_t *h,
                  const lactl_wi_cycle_t *c, int first);
void lactl_wi_end(FILE *f, int fmt);

/* --plot FILE (lactl_whatif_plot.c): the cycles' figures collected as they
 * are written, then drawn as lines in an SVG: the imbalance of each
 * partition over a range of cycles, or, for one cycle with --horizon, over
 * it and the cycles that follow. */
typedef struct lactl_wi_plot lactl_wi_plot_t;
lactl_wi_plot_t *lactl_wi_plot_new(void);
void lactl_wi_plot_add(lactl_wi_plot_t *p, const lactl_wi_cycle_t *c);
/* 0, or -1 with the reason in why (nothing a line can show; the file). */
int lactl_wi_plot_write(const lactl_wi_plot_t *p, const char *path,
                        const lactl_wi_head_t *head, char *why, size_t len);
void lactl_wi_plot_free(lactl_wi_plot_t *p);

/* Fills row's halo figures for partition part (k parts) of grid mesh m
 * (lactl_whatif_mesh.c; nothing for a mesh without a grid). 0 or
 * LA_ENOMEM. */
int lactl_mesh_halo(const lactl_mesh_t *m, const uint32_t *part, uint32_t k,
                    lactl_wi_row_t *row);

/* Writes partition part (k parts) of mesh m, app's cycle by method, to
 * path (lactl_whatif_part.c): a header comment, then "ID RANK" per element
 * in m's order (ascending id). Written to path.tmp, then renamed. 0, or
 * LA_EIO with why filled. */
int lactl_wi_write_partition(const char *path, const char *app,
                             uint64_t cycle, const char *method,
                             const lactl_mesh_t *m, const uint32_t *part,
                             uint32_t k, char *why, size_t why_len);

/* Reads partition file path (the format above; ids in any order) against
 * mesh m: part[i] gets the rank of m's element i, *k the part count (the
 * header's "; parts K", else the largest rank + 1). Every element of m must
 * have exactly one line, and every line name an element of m. 0, or
 * LA_EINVAL / LA_EIO / LA_ENOMEM with why filled (line and problem). */
int lactl_wi_read_partition(const char *path, const lactl_mesh_t *m,
                            uint32_t *part, uint32_t *k, char *why,
                            size_t why_len);

#endif /* LACTL_WHATIF_H */
