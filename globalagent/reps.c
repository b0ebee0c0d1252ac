/* SPDX-License-Identifier: BSD-3-Clause */
/* reps.c: a closed Trace-Set stored by representatives
 * (store.representatives, reps.h, docs/clusters.md). */
#include "reps.h"

#include <stdlib.h>

#include "la_errcodes.h"
#include "la_log.h"
#include "sigs.h"
#include "store_reps.h"

void la_ga_representatives(la_ga_t *ga, const char *app_id, uint64_t tag) {
  la_store_rep_sig_t *known = NULL;
  uint32_t n_known = 0;
  la_ga_sigs_take(ga->rep_sigs, app_id, tag, &known, &n_known);
  if (!ga->set.representatives) { /* turned off by a reload meanwhile */
    free(known);
    return;
  }
  la_store_reps_t o;
  int rc = la_store_representatives_known(ga->store, app_id, tag,
                                          ga->set.representatives_tol, known,
                                          n_known, &o);
  free(known);
  if (rc == LA_EIO) {
    la_log_error("store: representatives of %s cycle %llu: %s", app_id,
                 (unsigned long long)tag, la_store_errmsg(ga->store));
    ga->txn_failed = 1;
    return;
  }
  if (rc) {
    la_log_error("representatives of %s cycle %llu not stored (%d): %s; "
                 "the set stays whole",
                 app_id, (unsigned long long)tag, rc,
                 la_store_errmsg(ga->store));
    return;
  }
  la_log_debug("Trace-Set %s cycle %llu: %zu classes, %zu outliers of %zu "
               "ranks (%zu signatures taken at ingest); %zu members stored "
               "by their representative (%llu of %llu segment bytes kept); "
               "%zu robust series (%zu robust signatures taken at ingest), "
               "%zu stored by their representative's",
               app_id, (unsigned long long)tag, o.classes, o.outliers,
               o.traces, o.signatures_known, o.replaced,
               (unsigned long long)o.bytes_after,
               (unsigned long long)o.bytes_before, o.robust_series,
               o.robust_signatures_known, o.robust_replaced);
}
