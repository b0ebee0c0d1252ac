/* la_test_series.c: compaction by spec string and the synthetic-series
 * grid the compaction tests run their checks over (see la_test_series.h).
 */
#include "la_test_series.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>

#include <cmocka.h>

void la_test_compact(const double *x, size_t n, const char *spec,
                     la_compact_result_t *r) {
  la_compact_params_t p;
  char why[200];

  if (la_compact_spec_parse(spec, &p, why, sizeof(why)) != 0)
    fail_msg("spec '%s' refused: %s", spec, why);
  assert_int_equal(la_compact(x, n, &p, r), 0);
}

void la_test_synth_grid(const size_t *sizes, size_t nsizes, uint64_t seed,
                        la_test_series_alter_fn alter, const char *const *specs,
                        size_t nspecs, la_test_series_check_fn check) {
  for (int kind = 0; kind < LA_SYNTH_KINDS; kind++)
    for (size_t k = 0; k < nsizes; k++) {
      size_t n = sizes[k];
      double *x = malloc((n + 1) * sizeof(double));
      assert_non_null(x);
      assert_int_equal(la_compact_synth(kind, n, seed + (uint64_t)kind, x), 0);
      if (alter) alter(kind, x, n);
      for (size_t s = 0; s < nspecs; s++) check(x, n, specs[s]);
      free(x);
    }
}
