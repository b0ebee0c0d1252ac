/* SPDX-License-Identifier: BSD-3-Clause */
/* test_clusters.c: behaviour classes of a set's ranks (la_clusters.h,
 * docs/clusters.md), on the encodings the LocalAgent makes.
 *
 * A synthetic set of 500 ranks (la_test_classes.h: four class profiles,
 * per-rank scale in [0.5, 2), 2% noise, five outlier ranks with hot spots
 * of their own), each rank compacted with the default polyline and
 * lossless: the classes come back exactly (4 classes whose members are the
 * ranks of each known class, the outliers exactly the five), the
 * representative's decoded values times a member's scale sum to the
 * member's exact total, the result is the same on a second call and with
 * absent ranks the absent ones are in no class. Bad parameters get
 * LA_EINVAL with a reason; traces without a positive total are outliers;
 * ranks of different element counts never share a class. The slice sums
 * a signature is taken from without an index (la_trace_slice_sums) equal
 * the indexed trace's range sums on every mode, and refuse what the
 * check refuses; the ingest check's pass that takes them too
 * (la_trace_check_totals_slices) gives la_trace_check_totals' totals and
 * the same sums bit for bit where it takes them; a trace scaled record for record (la_trace_scaled, how a
 * member is read back) decodes to the scaled values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_clusters.h"
#include "la_test_classes.h"

#define NP 500
#define NE 2000
#define NOUT 5

typedef struct {
  la_trace_t *tr[NP];
  double total[NP];
} set_t;

static void make_set(set_t *s, const char *spec) {
  double *x = malloc(NE * sizeof *x);
  assert_non_null(x);
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse(spec, &p, NULL, 0), 0);
  for (uint32_t r = 0; r < NP; r++) {
    la_tc_series(r, NP, NOUT, NE, x);
    la_compact_result_t res;
    assert_int_equal(la_compact(x, NE, &p, &res), 0);
    s->total[r] = res.stats.sum;
    assert_int_equal(la_trace_open(res.bytes, res.len, &s->tr[r], NULL, 0), 0);
    la_compact_result_free(&res);
  }
  free(x);
}

static void free_set(set_t *s) {
  for (uint32_t r = 0; r < NP; r++) la_trace_close(s->tr[r]);
}

/* The classes of c are exactly the known ones among the ranks present. */
static void check_known(const la_clusters_t *c, const set_t *s,
                        const uint8_t *absent) {
  assert_int_equal(c->n_classes, LA_TC_CLASSES);
  size_t seen = 0;
  int used[LA_TC_CLASSES] = {0};
  for (size_t k = 0; k < c->n_classes; k++) {
    const la_cluster_class_t *K = &c->classes[k];
    int want = la_tc_class(K->rep, NP, NOUT);
    assert_true(want >= 0);
    assert_false(used[want]);
    used[want] = 1;
    double rep_dec;
    assert_int_equal(la_trace_range_sum(s->tr[K->rep], 0, NE, &rep_dec), 0);
    for (uint32_t m = 0; m < K->n; m++) {
      uint32_t r = K->members[m];
      assert_int_equal(la_tc_class(r, NP, NOUT), want);
      assert_false(absent && absent[r]);
      /* the representative scaled sums to the member's exact total */
      assert_true(fabs(rep_dec * K->scale[m] - s->total[r]) <=
                   1e-9 * s->total[r]);
      assert_true(K->scale[m] >= K->scale_min && K->scale[m] <= K->scale_max);
      if (m) assert_true(K->members[m] > K->members[m - 1]);
      uint32_t at;
      assert_int_equal(la_clusters_class_of(c, r, &at), (long)k);
      assert_int_equal(at, m);
    }
    assert_true(K->dist_max <= 0.05);
    assert_int_equal(K->elements, NE);
    seen += K->n;
  }
  size_t present = 0, out = 0;
  for (uint32_t r = 0; r < NP; r++) {
    if (absent && absent[r]) {
      assert_int_equal(la_clusters_class_of(c, r, NULL), -1);
      continue;
    }
    present++;
    if (la_tc_class(r, NP, NOUT) < 0) {
      assert_true(out < c->n_outliers);
      assert_int_equal(c->outliers[out++], r);
    }
  }
  assert_int_equal(out, c->n_outliers);
  assert_int_equal(seen + out, present);
  assert_int_equal(c->n_traces, present);
}

static void same_result(const la_clusters_t *a, const la_clusters_t *b) {
  assert_int_equal(a->n_classes, b->n_classes);
  assert_int_equal(a->n_outliers, b->n_outliers);
  for (size_t k = 0; k < a->n_classes; k++) {
    assert_int_equal(a->classes[k].rep, b->classes[k].rep);
    assert_int_equal(a->classes[k].n, b->classes[k].n);
    assert_memory_equal(a->classes[k].members, b->classes[k].members,
                        a->classes[k].n * sizeof(uint32_t));
  }
}

static void known_classes(const char *spec) {
  set_t *s = calloc(1, sizeof *s);
  assert_non_null(s);
  make_set(s, spec);
  la_clusters_t c, d;
  char why[128];
  assert_int_equal(la_clusters_find((const la_trace_t *const *)s->tr,
                                    s->total, NP, NULL, &c, why, sizeof why),
                   0);
  check_known(&c, s, NULL);
  assert_int_equal(c.n_outliers, NOUT);
  /* deterministic */
  assert_int_equal(la_clusters_find((const la_trace_t *const *)s->tr,
                                    s->total, NP, NULL, &d, why, sizeof why),
                   0);
  same_result(&c, &d);
  la_clusters_free(&d);
  la_clusters_free(&c);
  /* absent ranks: a partial set */
  uint8_t absent[NP] = {0};
  la_trace_t *keep[NP];
  memcpy(keep, s->tr, sizeof keep);
  for (uint32_t r = 0; r < NP; r += 37) {
    absent[r] = 1;
    s->tr[r] = NULL;
  }
  assert_int_equal(la_clusters_find((const la_trace_t *const *)s->tr,
                                    s->total, NP, NULL, &c, why, sizeof why),
                   0);
  check_known(&c, s, absent);
  la_clusters_free(&c);
  memcpy(s->tr, keep, sizeof keep);
  free_set(s);
  free(s);
}

static void test_polyline(void **st) {
  (void)st;
  known_classes("polyline");
}

static void test_lossless(void **st) {
  (void)st;
  known_classes("lossless");
}

static void test_maxerr(void **st) {
  (void)st;
  known_classes("maxerr:eps=0.05,relative");
}

static la_trace_t *open_series(const double *x, size_t n) {
  la_compact_result_t res;
  la_trace_t *t;
  assert_int_equal(la_compact(x, n, NULL, &res), 0);
  assert_int_equal(la_trace_open(res.bytes, res.len, &t, NULL, 0), 0);
  la_compact_result_free(&res);
  return t;
}

/* Zero, negative and differently sized traces. */
static void test_edges(void **st) {
  (void)st;
  double a[64], z[64], neg[64], b[32];
  for (int i = 0; i < 64; i++) {
    a[i] = 100 + i;
    z[i] = 0;
    neg[i] = -100 - i;
  }
  for (int i = 0; i < 32; i++) b[i] = 100 + 2 * i;
  la_trace_t *t[6] = {open_series(a, 64), open_series(z, 64),
                      open_series(neg, 64), open_series(b, 32),
                      open_series(a, 64), open_series(b, 32)};
  la_clusters_t c;
  assert_int_equal(la_clusters_find((const la_trace_t *const *)t, NULL, 6,
                                    NULL, &c, NULL, 0),
                   0);
  /* {0, 4} and {3, 5}: the same shapes at 64 and 32 elements */
  assert_int_equal(c.n_classes, 2);
  assert_int_equal(c.classes[0].rep, 0);
  assert_int_equal(c.classes[0].n, 2);
  assert_int_equal(c.classes[0].members[1], 4);
  assert_int_equal(c.classes[1].rep, 3);
  assert_int_equal(c.classes[1].members[1], 5);
  assert_int_equal(c.n_outliers, 2);
  assert_int_equal(c.outliers[0], 1);
  assert_int_equal(c.outliers[1], 2);
  assert_int_equal(c.classes[0].scale[1], 1.0);
  la_clusters_free(&c);
  /* min_size 1: no outliers among the shaped ranks */
  la_cluster_params_t p;
  la_cluster_params_default(&p);
  p.min_size = 3;
  assert_int_equal(la_clusters_find((const la_trace_t *const *)t, NULL, 6,
                                    &p, &c, NULL, 0),
                   0);
  assert_int_equal(c.n_classes, 0);
  assert_int_equal(c.n_outliers, 6);
  la_clusters_free(&c);
  /* an empty set */
  assert_int_equal(la_clusters_find((const la_trace_t *const *)t, NULL, 0,
                                    NULL, &c, NULL, 0),
                   0);
  assert_int_equal(c.n_classes + c.n_outliers + c.n_traces, 0);
  la_clusters_free(&c);
  for (int i = 0; i < 6; i++) la_trace_close(t[i]);
}

/* la_trace_slice_sums() (the signatures' pass without an index) against
 * range sums on the indexed trace: every synthetic kind, the modes and
 * their flags, quantized runs, a spread trace, slice counts above the
 * point count; a cut encoding gets la_trace_check_max()'s code. */
static void slices_match(const la_compact_result_t *res, uint64_t spread) {
  la_trace_t *t;
  assert_int_equal(la_trace_open(res->bytes, res->len, &t, NULL, 0), 0);
  uint64_t m = la_trace_count(t);
  double *v = malloc((m ? m : 1) * sizeof *v), mag = 0;
  assert_non_null(v);
  assert_int_equal(la_trace_decode(t, 0, m, v), 0);
  for (uint64_t i = 0; i < m; i++) mag += fabs(v[i]);
  const unsigned nbs[] = {1, 3, 16, 64};
  for (size_t b = 0; b < 4; b++) {
    unsigned nb = nbs[b];
    double got[LA_SLICES_MAX];
    uint64_t pts = 0, lo = 0;
    char why[128];
    assert_int_equal(la_trace_slice_sums(res->bytes, res->len, m, nb, got,
                                         &pts, why, sizeof why),
                     0);
    assert_int_equal(pts, m);
    /* the ingest check's pass (la_trace_check_totals_slices): the same
     * totals as la_trace_check_totals, and, where it takes them, the same
     * sums bit for bit (a lossy trace of one cell per value) */
    la_trace_totals_t tt, tw;
    double in_pass[LA_SLICES_MAX];
    int ok = -1;
    assert_int_equal(la_trace_check_totals_slices(res->bytes, res->len, m,
                                                  &tt, nb, in_pass, &ok,
                                                  why, sizeof why),
                     0);
    assert_int_equal(
        la_trace_check_totals(res->bytes, res->len, m, &tw, NULL, 0), 0);
    assert_memory_equal(&tt, &tw, sizeof tt);
    assert_int_equal(ok, spread == 1 && la_trace_mode(t) != LA_COMPACT_LOSSLESS);
    for (unsigned j = 0; ok && j < nb; j++)
      assert_true(in_pass[j] == got[j]);
    for (unsigned j = 0; j < nb; j++) {
      uint64_t hi = (uint64_t)((unsigned __int128)m * (j + 1) / nb);
      double want = 0;
      if (hi > lo) assert_int_equal(la_trace_range_sum(t, lo, hi - lo, &want), 0);
      assert_true(fabs(got[j] - want) <= 1e-12 * mag + 1e-300);
      lo = hi;
    }
    if (m && nb == 16 && spread == 1) { /* the signature from the bytes */
      double s1[16], s2[16], t1, t2;
      uint64_t c;
      int a = la_clusters_signature(t, 16, s1, &t1);
      assert_int_equal(la_clusters_signature_bytes(res->bytes, res->len, m,
                                                   16, s2, &t2, &c, NULL, 0),
                       a);
      assert_int_equal(c, m);
      if (a)
        for (int j = 0; j < 16; j++)
          assert_true(fabs(s1[j] - s2[j]) <= 1e-12 * mag / t1);
    }
  }
  /* cut and corrupted: the check's code */
  uint64_t pts, np;
  int mode;
  double got[16];
  size_t cut = res->len / 2;
  assert_int_equal(la_trace_slice_sums(res->bytes, cut, m, 16, got, &pts, NULL,
                                       0),
                   la_trace_check_max(res->bytes, cut, m, &np, &mode, NULL, 0));
  la_trace_totals_t tt;
  int ok;
  assert_int_equal(la_trace_check_totals_slices(res->bytes, cut, m, &tt, 16,
                                                got, &ok, NULL, 0),
                   la_trace_check_max(res->bytes, cut, m, &np, &mode, NULL, 0));
  uint8_t *bad = malloc(res->len);
  assert_non_null(bad);
  memcpy(bad, res->bytes, res->len);
  bad[res->len / 2] ^= 0x5a;
  assert_int_equal(
      la_trace_slice_sums(bad, res->len, m, 16, got, &pts, NULL, 0),
      la_trace_check_max(bad, res->len, m, &np, &mode, NULL, 0));
  assert_true(la_trace_slice_sums(res->bytes, res->len, m ? m - 1 : 0, 16,
                                  got, &pts, NULL, 0) != 0 || m == 0);
  free(bad);
  free(v);
  la_trace_close(t);
}

/* la_trace_scaled(): the representative's records through scaled ends
 * decode to its values times the scale (within 2^-30 of the magnitude),
 * in its mode, with the scaled values' exact statistics. */
static void scaled_match(const la_compact_result_t *res) {
  la_trace_t *t, *u;
  assert_int_equal(la_trace_open(res->bytes, res->len, &t, NULL, 0), 0);
  uint64_t m = la_trace_count(t);
  size_t nn = m ? m : 1;
  double *dec = malloc(nn * sizeof *dec), *x = malloc(nn * sizeof *x);
  double *y = malloc(nn * sizeof *y);
  assert_true(dec && x && y);
  assert_int_equal(la_trace_decode(t, 0, m, dec), 0);
  const double scales[] = {1, 0.37, 2.5e3};
  for (int k = 0; k < 3; k++) {
    la_compact_result_t o;
    assert_int_equal(la_trace_scaled(t, dec, scales[k], x, &o), 0);
    assert_int_equal(la_trace_open(o.bytes, o.len, &u, NULL, 0), 0);
    assert_int_equal(la_trace_count(u), m);
    assert_int_equal(la_trace_mode(u), la_trace_mode(t));
    assert_int_equal(la_trace_decode(u, 0, m, y), 0);
    double mag = 0;
    for (uint64_t i = 0; i < m; i++) {
      assert_true(x[i] == dec[i] * scales[k]);
      if (fabs(x[i]) > mag) mag = fabs(x[i]);
    }
    /* a spread trace is compacted anew (its own bound) */
    for (uint64_t i = 0; la_trace_spread(t) == 1 && i < m; i++)
      if (!(fabs(y[i] - x[i]) <= 0x1p-29 * mag)) {
        print_error("mode %d spread %llu scale %g point %llu: %.17g vs %.17g\n",
                    la_trace_mode(t), (unsigned long long)la_trace_spread(t),
                    scales[k], (unsigned long long)i, y[i], x[i]);
        fail();
      }
    assert_int_equal(o.stats.count, m);
    assert_true(o.stats.sum == la_compact_sum(x, (size_t)m));
    la_trace_close(u);
    la_compact_result_free(&o);
  }
  la_compact_result_t o;
  assert_int_equal(la_trace_scaled(t, dec, NAN, x, &o), LA_EINVAL);
  assert_int_equal(la_trace_scaled(t, dec, 2, dec, &o), m ? LA_EINVAL : 0);
  la_compact_result_free(&o);
  free(dec);
  free(x);
  free(y);
  la_trace_close(t);
}

static void test_slice_sums(void **st) {
  (void)st;
  const char *specs[] = {"polyline", "polyline:cv=0.02,connected",
                         "maxerr:eps=0.01,relative",
                         "maxerr:eps=50,connected,no-outliers", "lossless"};
  const size_t ns[] = {1, 5, 2000};
  double *x = malloc(2000 * sizeof *x);
  assert_non_null(x);
  for (int kind = 0; kind < LA_SYNTH_KINDS; kind++)
    for (size_t si = 0; si < 5; si++)
      for (size_t ni = 0; ni < 3; ni++) {
        la_compact_params_t p;
        la_compact_result_t res, sp;
        assert_int_equal(la_compact_spec_parse(specs[si], &p, NULL, 0), 0);
        assert_int_equal(la_compact_synth(kind, ns[ni], 7 + kind, x), 0);
        if (kind == LA_SYNTH_MESH && si == 0) p.quantum = 1; /* ticks */
        assert_int_equal(la_compact(x, ns[ni], &p, &res), 0);
        slices_match(&res, 1);
        scaled_match(&res);
        if (si == 0 && ns[ni] > 1) {
          assert_int_equal(la_compact_spread(&res, 3, &sp), 0);
          slices_match(&sp, 3);
          scaled_match(&sp);
          la_compact_result_free(&sp);
        }
        la_compact_result_free(&res);
      }
  /* rough integer ticks: polyline writes quantized runs across the
   * slices' boundaries, of few distinct values coded (mod 13), else plain */
  for (size_t mod = 13; mod < 1000; mod += 984) {
    for (size_t i = 0; i < 2000; i++)
      x[i] = (double)((i * 7919 + i * i * 31) % mod);
    la_compact_params_t p;
    la_compact_result_t res;
    assert_int_equal(la_compact_spec_parse("polyline", &p, NULL, 0), 0);
    p.quantum = 1;
    assert_int_equal(la_compact(x, 2000, &p, &res), 0);
    slices_match(&res, 1);
    la_compact_result_free(&res);
  }
  free(x);
  double g[4];
  uint64_t pts;
  char why[64];
  assert_int_equal(la_trace_slice_sums((const uint8_t *)"LAC", 3, 8, 0, g,
                                       &pts, why, sizeof why),
                   LA_EINVAL);
  la_trace_totals_t tt;
  int ok;
  assert_int_equal(la_trace_check_totals_slices((const uint8_t *)"LAC", 3, 8,
                                                &tt, 65, g, &ok, why,
                                                sizeof why),
                   LA_EINVAL);
}

static void test_bad_params(void **st) {
  (void)st;
  la_trace_t *none[1] = {NULL};
  la_cluster_params_t p;
  la_clusters_t c;
  char why[128];
  struct {
    double tol;
    unsigned b;
    uint32_t min, maxc;
    const char *say;
  } bad[] = {{-1, 16, 2, 8, "tol"},     {NAN, 16, 2, 8, "tol"},
             {3, 16, 2, 8, "tol"},      {0.05, 0, 2, 8, "buckets"},
             {0.05, 65, 2, 8, "buckets"}, {0.05, 16, 0, 8, "min_size"},
             {0.05, 16, 2, 0, "max_classes"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    la_cluster_params_default(&p);
    p.tol = bad[i].tol;
    p.buckets = bad[i].b;
    p.min_size = bad[i].min;
    p.max_classes = bad[i].maxc;
    why[0] = 0;
    assert_int_equal(la_clusters_find((const la_trace_t *const *)none, NULL,
                                      1, &p, &c, why, sizeof why),
                     LA_EINVAL);
    assert_non_null(strstr(why, bad[i].say));
    assert_int_equal(c.n_classes, 0);
  }
  assert_int_equal(la_clusters_find(NULL, NULL, 1, NULL, &c, why, sizeof why),
                   LA_EINVAL);
  la_clusters_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_polyline), cmocka_unit_test(test_lossless),
      cmocka_unit_test(test_maxerr), cmocka_unit_test(test_edges),
      cmocka_unit_test(test_bad_params), cmocka_unit_test(test_slice_sums)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
