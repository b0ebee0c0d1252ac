/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_numbering.h: the application's own element numbering for lactl's
 * exports and plots: per rank of a Trace-Set, each element's global id
 * (the application's ids, else a grid's global cell index, else the
 * concatenated index) and, for grid ranks, its global (i,j,k). A rank's
 * ids are fetched once from the source and kept for later cycles. */
#ifndef LACTL_NUMBERING_H
#define LACTL_NUMBERING_H

#include <stdint.h>

#include "la_client.h"
#include "lactl_source.h"

typedef struct lactl_num lactl_num_t;

/* Which numbering a rank's ids are (the client's LA_NUMBERING_*). */
enum { LACTL_NUM_CONCAT = 0, LACTL_NUM_APP = 1, LACTL_NUM_GRID = 2 };

/* A numbering cache for app read from s (kept, not owned). NULL when out
 * of memory. */
lactl_num_t *lactl_num_new(lactl_src_t *s, const char *app);
void lactl_num_free(lactl_num_t *m);

/* Rank's numbering in t: *ids (one per element) and *ijk (3 per element:
 * global i, j, k of a grid rank; 0 otherwise) owned by m, valid until the
 * next call; *kind = LACTL_NUM_*. Returns 0, LA_ENOMEM, or the source's
 * error fetching ids (printed on stderr). */
int lactl_num_rank(lactl_num_t *m, const la_traceset_t *t, uint32_t rank,
                   const int64_t **ids, const uint64_t **ijk, int *kind);

/* Prints on stderr, once per kind, which numbering the id column of cmd's
 * output holds for ranks not numbered by the application ("" when all
 * are). */
void lactl_num_note(lactl_num_t *m, const char *cmd);

#endif /* LACTL_NUMBERING_H */
