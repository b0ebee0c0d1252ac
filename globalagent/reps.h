/* SPDX-License-Identifier: BSD-3-Clause */
/* reps.h: store.representatives (docs/clusters.md): a Trace-Set that just
 * closed is stored by representatives, in the batch that closed it.
 *
 * Deliberately not here: the grouping (compact/la_clusters.c) and the
 * store's rows (store/store_reps.c). Loop thread (or whichever thread
 * holds the store's batch).
 */
#ifndef LA_GLOBALAGENT_REPS_H
#define LA_GLOBALAGENT_REPS_H

#include <stdint.h>

#include "ga.h"

/* The set (app_id, tag) closed: takes its signatures out of ga->sigs
 * and, with store.representatives on, groups its ranks and keeps only
 * each class's representative in full (la_store_representatives_known
 * with store.representatives_tol and those signatures). A store failure
 * fails the batch (ga->txn_failed); any other error is logged and leaves
 * the set whole. */
void la_ga_representatives(la_ga_t *ga, const char *app_id, uint64_t tag);

#endif
