/* test_stitch.c: the GlobalAgent's stitcher: sets complete when every rank
 * arrived, close partial (naming the missing ranks) on timeout, application
 * end or eviction at the open-set limit; duplicates and late traces are
 * reported, never reopen a set; restore after a restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la.h"
#include "stitch.h"

typedef struct {
  char app[64];
  uint64_t tag;
  uint32_t nprocs;
  int complete;
  uint32_t missing[16];
  size_t n_missing;
} closed_t;

static closed_t log_[4096];
static size_t nlog;

static void on_close(void *arg, const char *app, uint64_t tag, uint32_t np,
                     int complete, const uint32_t *missing, size_t nm,
                     uint64_t t_first) {
  closed_t *c = &log_[nlog++];
  snprintf(c->app, sizeof c->app, "%s", app);
  c->tag = tag;
  c->nprocs = np;
  c->complete = complete;
  c->n_missing = nm;
  for (size_t i = 0; i < nm && i < 16; i++) c->missing[i] = missing[i];
}

static int setup(void **state) {
  nlog = 0;
  *state = la_stitch_new(100, on_close, NULL);
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  la_stitch_free(*state);
  return 0;
}

static void test_complete_when_all_ranks_arrive(void **state) {
  la_stitch_t *st = *state;
  assert_int_equal(la_stitch_add(st, "a", 4, 2, 7, 0), LA_STITCH_NEW);
  assert_int_equal(la_stitch_add(st, "a", 4, 0, 7, 0), LA_STITCH_NEW);
  assert_int_equal(la_stitch_add(st, "a", 4, 0, 7, 0), LA_STITCH_DUP);
  assert_int_equal(la_stitch_add(st, "a", 4, 3, 7, 0), LA_STITCH_NEW);
  assert_int_equal(nlog, 0);
  assert_int_equal(la_stitch_add(st, "a", 4, 1, 7, 0), LA_STITCH_NEW);
  assert_int_equal(nlog, 1);
  assert_true(log_[0].complete);
  assert_int_equal(log_[0].tag, 7);
  assert_int_equal(log_[0].n_missing, 0);
  /* a resend after completion: late, and no new set is opened */
  assert_int_equal(la_stitch_add(st, "a", 4, 1, 7, 5), LA_STITCH_LATE);
  la_stitch_stats_t s;
  la_stitch_get_stats(st, &s);
  assert_int_equal(s.open, 0);
  assert_int_equal(s.complete, 1);
  assert_int_equal(s.duplicates, 1);
  assert_int_equal(s.late, 1);
}

static void test_sets_are_per_app_and_cycle(void **state) {
  la_stitch_t *st = *state;
  la_stitch_add(st, "a", 2, 0, 1, 0);
  la_stitch_add(st, "b", 2, 0, 1, 0);
  la_stitch_add(st, "a", 2, 0, 2, 0);
  la_stitch_add(st, "b", 2, 1, 1, 0);
  assert_int_equal(nlog, 1);
  assert_string_equal(log_[0].app, "b");
  la_stitch_stats_t s;
  la_stitch_get_stats(st, &s);
  assert_int_equal(s.open, 2);
}

static void test_timeout_closes_partial_with_missing_ranks(void **state) {
  la_stitch_t *st = *state;
  la_stitch_add(st, "a", 5, 1, 3, 1000);
  la_stitch_add(st, "a", 5, 3, 3, 1500);
  la_stitch_add(st, "a", 5, 0, 4, 2000);
  assert_int_equal(la_stitch_expire(st, 1999, 1000), 0);
  assert_int_equal(la_stitch_expire(st, 2000, 1000), 1);
  assert_int_equal(nlog, 1);
  assert_false(log_[0].complete);
  assert_int_equal(log_[0].n_missing, 3);
  assert_int_equal(log_[0].missing[0], 0);
  assert_int_equal(log_[0].missing[1], 2);
  assert_int_equal(log_[0].missing[2], 4);
  assert_int_equal(la_stitch_expire(st, 3000, 1000), 1);
}

static void test_app_end_closes_its_sets(void **state) {
  la_stitch_t *st = *state;
  la_stitch_add(st, "a", 3, 0, 1, 0);
  la_stitch_add(st, "a", 3, 0, 2, 0);
  la_stitch_add(st, "b", 3, 0, 1, 0);
  assert_int_equal(la_stitch_app_end(st, "a"), 2);
  assert_int_equal(nlog, 2);
  assert_string_equal(log_[0].app, "a");
  assert_string_equal(log_[1].app, "a");
  la_stitch_stats_t s;
  la_stitch_get_stats(st, &s);
  assert_int_equal(s.open, 1);
}

static void test_limit_evicts_oldest(void **state) {
  la_stitch_t *st = *state;
  la_stitch_set_max_open(st, 3);
  for (uint64_t c = 0; c < 5; c++) la_stitch_add(st, "a", 2, 0, c, c);
  assert_int_equal(nlog, 2);
  assert_int_equal(log_[0].tag, 0);
  assert_int_equal(log_[1].tag, 1);
  assert_false(log_[0].complete);
  la_stitch_stats_t s;
  la_stitch_get_stats(st, &s);
  assert_int_equal(s.evicted, 2);
  assert_int_equal(s.open, 3);
}

static void test_bad_input(void **state) {
  la_stitch_t *st = *state;
  assert_int_equal(la_stitch_add(st, "a", 4, 4, 1, 0), LA_EINVAL);
  assert_int_equal(la_stitch_add(st, "a", 0, 0, 1, 0), LA_EINVAL);
  la_stitch_add(st, "a", 4, 0, 1, 0);
  assert_int_equal(la_stitch_add(st, "a", 8, 1, 1, 0), LA_EINVAL);
}

static void test_restore(void **state) {
  la_stitch_t *st = *state;
  uint32_t ranks[] = {0, 2};
  assert_int_equal(la_stitch_restore(st, "a", 3, 9, ranks, 2, 100), 0);
  assert_int_equal(nlog, 0);
  assert_int_equal(la_stitch_add(st, "a", 3, 1, 9, 200), LA_STITCH_NEW);
  assert_int_equal(nlog, 1);
  assert_true(log_[0].complete);
  uint32_t all[] = {0, 1};
  assert_int_equal(la_stitch_restore(st, "b", 2, 1, all, 2, 100), 0);
  assert_int_equal(nlog, 2); /* complete already: closes at once */
}

static void test_many_ranks_and_sets(void **state) {
  la_stitch_t *st = *state;
  la_stitch_set_max_open(st, 100000);
  for (uint64_t c = 0; c < 2000; c++)
    for (uint32_t r = 0; r < 130; r++)
      assert_int_equal(la_stitch_add(st, "big", 130, (r * 7 + (uint32_t)c) % 130,
                                     c, c), LA_STITCH_NEW);
  la_stitch_stats_t s;
  la_stitch_get_stats(st, &s);
  assert_int_equal(s.complete, 2000);
  assert_int_equal(s.open, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    T(test_complete_when_all_ranks_arrive),
    T(test_sets_are_per_app_and_cycle),
    T(test_timeout_closes_partial_with_missing_ranks),
    T(test_app_end_closes_its_sets),
    T(test_limit_evicts_oldest),
    T(test_bad_input),
    T(test_restore),
    T(test_many_ranks_and_sets),
#undef T
  };
  return cmocka_run_group_tests_name("stitch", tests, NULL, NULL);
}
