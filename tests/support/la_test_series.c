/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_series.c: compaction by spec string, the synthetic-series grid
 * the compaction tests run their checks over, and trace messages with
 * robust weights (see la_test_series.h).
 */
#include "la_test_series.h"

#include <stdio.h>
#include <stdlib.h>

#include "la.h"

#include "la_trace_msg.h"

int la_test_compact(const double *x, size_t n, const char *spec,
                    la_compact_result_t *r) {
  la_compact_params_t p;
  char why[200];
  int rc = la_compact_spec_parse(spec, &p, why, sizeof(why));

  if (rc != 0) {
    fprintf(stderr, "spec '%s' refused: %s\n", spec, why);
    return rc;
  }
  return la_compact(x, n, &p, r);
}

int la_test_synth_grid(const size_t *sizes, size_t nsizes, uint64_t seed,
                       la_test_series_alter_fn alter, const char *const *specs,
                       size_t nspecs, la_test_series_check_fn check) {
  for (int kind = 0; kind < LA_SYNTH_KINDS; kind++)
    for (size_t k = 0; k < nsizes; k++) {
      size_t n = sizes[k];
      double *x = malloc((n + 1) * sizeof(double));
      if (!x) return LA_ENOMEM;
      int rc = la_compact_synth(kind, n, seed + (uint64_t)kind, x);
      if (rc != 0) {
        free(x);
        return rc;
      }
      if (alter) alter(kind, x, n);
      for (size_t s = 0; s < nspecs; s++) check(x, n, specs[s]);
      free(x);
    }
  return 0;
}

void la_test_trace_id(La__CompactTrace *t, uint64_t seq, const char *app,
                      uint32_t rank, uint64_t cycle, uint64_t n) {
  t->seq = seq;
  t->app_id = (char *)app;
  t->rank = rank;
  t->cycle_tag = cycle;
  t->n_elements = n;
}

int la_test_robust_make(la_test_robust_t *x, const char *app, uint32_t r,
                        uint64_t seq, uint64_t cycle, const double *meas,
                        const double *rob, size_t n) {
  la_compact_params_t p;
  int rc;

  la_compact_params_default(&p);
  p.mode = LA_COMPACT_LOSSLESS;
  if ((rc = la_compact(meas, n, &p, &x->meas)) != 0) return rc;
  if ((rc = la_compact(rob, n, &p, &x->rob)) != 0) {
    la_compact_result_free(&x->meas);
    return rc;
  }
  la__compact_trace__init(&x->t);
  la__series_stats__init(&x->st);
  la__series_stats__init(&x->rst);
  la_trace_msg_fill(&x->t, &x->st, NULL, &x->meas);
  la_trace_msg_robust(&x->t, &x->rst, &x->rob);
  la_test_trace_id(&x->t, seq, app, r, cycle, n);
  x->t.has_interference = 1;
  x->t.interference = x->meas.stats.sum - x->rob.stats.sum;
  return 0;
}

void la_test_robust_free(la_test_robust_t *x) {
  la_compact_result_free(&x->meas);
  la_compact_result_free(&x->rob);
}

void la_test_boxes(la_pieces_t *g, uint32_t ni, uint32_t nj, uint64_t sx,
                   uint64_t sy) {
  g->count = 0;
  for (uint64_t z = 0; z < g->nz; z++)
    for (uint64_t y = 0; y + nj <= g->ny; y += sy)
      for (uint64_t x = 0; x + ni <= g->nx; x += sx)
        g->p[g->count++] =
            (la_piece_t){x + y * g->nx + z * g->nx * g->ny, ni, nj, 1};
}
