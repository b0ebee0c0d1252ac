/* SPDX-License-Identifier: BSD-3-Clause */
/* store_reps_rows.h: the rows that say how a set was stored by
 * representatives (store_reps_rows.c, docs/storage.md): its rep_members
 * rows, its rep_classes rows' packed members and its rep_robust rows, read
 * at once and looked up by rank.
 */
#ifndef LA_STORE_REPS_ROWS_H
#define LA_STORE_REPS_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "store_reps_pack.h"

/* A member of a class: its representative and scale; pk >= 0: packed, at
 * packed[pk], of nel elements (no traces row); -1: a rep_members row. */
typedef struct {
  uint32_t rank, cls, rep;
  double scale;
  int64_t pk;
  uint64_t nel;
} la_store_rep_member_t;

/* A rep_robust row. */
typedef struct {
  uint32_t rank;
  double scale;
} la_store_rep_rmember_t;

typedef struct la_store_reps_rows {
  la_store_rep_member_t *members; /* increasing rank */
  size_t n_members;
  la_store_packed_t *packed; /* the rep_classes rows' members */
  size_t n_packed;
  la_store_rep_rmember_t *rmembers; /* increasing rank */
  size_t n_rmembers;
} la_store_reps_rows_t;

/* The set's rows into c (all 0 before): 0, LA_EIO (a bad row: s's error
 * names it), LA_ENOMEM. */
int la__store_reps_rows_read(la_store_t *s, const char *app_id, uint64_t tag,
                             la_store_reps_rows_t *c);
void la__store_reps_rows_clear(la_store_reps_rows_t *c);
/* The member of rank, its rep_robust row; NULL: none. */
const la_store_rep_member_t *la__store_reps_rows_find(
    const la_store_reps_rows_t *c, uint32_t rank);
const la_store_rep_rmember_t *la__store_reps_rows_robust(
    const la_store_reps_rows_t *c, uint32_t rank);

#endif
