/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stitch.c: the GlobalAgent's stitcher: sets complete when every rank
 * arrived, close partial (naming the missing ranks) on timeout, application
 * end or eviction at the open-set limit; duplicates and late traces are
 * reported, never reopen a set — also after the bounded closed-key cache
 * forgot it (a fake lookup plays the store); restore after a restart keeps
 * each set's age. */
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

/* The fake store's answer: every key the close callback reported. */
static int lookups_fail;
static int fake_lookup(void *arg, const char *app, uint64_t tag) {
  if (lookups_fail) return LA_EIO;
  for (size_t i = 0; i < nlog; i++)
    if (log_[i].tag == tag && !strcmp(log_[i].app, app)) return 1;
  return 0;
}

static int setup(void **state) {
  lookups_fail = 0;
  nlog = 0;
  *state = la_stitch_new(100, on_close, NULL);
  return *state ? 0 : -1;
}

static int teardown(void **state) {
  la_stitch_free(*state);
  return 0;
}

/* The stitcher's counters now. */
static la_stitch_stats_t stats(la_stitch_t *st) {
  la_stitch_stats_t s;
  la_stitch_get_stats(st, &s);
  return s;
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
  la_stitch_stats_t s = stats(st);
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
  assert_int_equal(stats(st).open, 2);
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
  assert_int_equal(stats(st).open, 1);
}

static void test_limit_evicts_oldest(void **state) {
  la_stitch_t *st = *state;
  la_stitch_set_max_open(st, 3);
  for (uint64_t c = 0; c < 5; c++) la_stitch_add(st, "a", 2, 0, c, c);
  assert_int_equal(nlog, 2);
  assert_int_equal(log_[0].tag, 0);
  assert_int_equal(log_[1].tag, 1);
  assert_false(log_[0].complete);
  la_stitch_stats_t s = stats(st);
  assert_int_equal(s.evicted, 2);
  assert_int_equal(s.open, 3);
}

/* Sets of a million ranks each (a peer may declare any nprocs): the open
 * sets' memory stays under the cap, the oldest evicted as partial. */
static void test_memory_cap_evicts_oldest(void **state) {
  la_stitch_t *st = *state;
  const uint32_t np = 1000000; /* 125,000 bitmap bytes per set */
  la_stitch_set_max_memory(st, 400000);
  for (uint64_t c = 0; c < 10; c++) la_stitch_add(st, "big", np, 7, c, c);
  la_stitch_stats_t s = stats(st);
  assert_int_equal(s.open, 3);
  assert_true(s.open_bytes <= 400000);
  assert_int_equal(s.evicted, 7);
  assert_int_equal(nlog, 7);
  assert_int_equal(log_[0].tag, 0);
  assert_false(log_[0].complete);
  assert_int_equal(log_[6].tag, 6);
  /* one set larger than the cap alone is still kept */
  la_stitch_set_max_memory(st, 1000);
  assert_int_equal(la_stitch_add(st, "big", np, 1, 10, 10), LA_STITCH_NEW);
  s = stats(st);
  assert_int_equal(s.open, 1);
  assert_int_equal(la_stitch_is_open(st, "big", 10), 1);
  assert_int_equal(la_stitch_is_open(st, "big", 9), 0);
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
      assert_int_equal(
          la_stitch_add(st, "big", 130, (r * 7 + (uint32_t)c) % 130, c, c),
          LA_STITCH_NEW);
  la_stitch_stats_t s = stats(st);
  assert_int_equal(s.complete, 2000);
  assert_int_equal(s.open, 0);
}

/* The cache holds 4 closed keys; 100 sets close; a very late trace of the
 * first one (its key long forgotten by the cache) is late, opens nothing
 * and closes nothing. Formerly (a cache and no lookup) it reopened the set,
 * which later closed again and overwrote its close record. */
static void test_late_after_cache_forgot(void **state) {
  la_stitch_t *st = *state;
  la_stitch_set_lookup(st, fake_lookup, NULL);
  assert_int_equal(la_stitch_set_closed_cache(st, 4), 0);
  for (uint64_t c = 0; c < 100; c++) {
    assert_int_equal(la_stitch_add(st, "a", 3, 0, c, c), LA_STITCH_NEW);
    assert_int_equal(la_stitch_expire(st, c + 10, 10), 1);
  }
  assert_int_equal(nlog, 100);
  la_stitch_stats_t s = stats(st);
  assert_int_equal(s.closed_cached, 4);
  assert_int_equal(s.closed_evicted, 96);
  uint64_t opened = s.opened;
  assert_int_equal(la_stitch_add(st, "a", 3, 1, 0, 1000), LA_STITCH_LATE);
  assert_int_equal(la_stitch_add(st, "a", 3, 2, 0, 1000), LA_STITCH_LATE);
  assert_int_equal(la_stitch_expire(st, 1000000, 10), 0);
  assert_int_equal(nlog, 100);
  s = stats(st);
  assert_int_equal(s.open, 0);
  assert_int_equal(s.opened, opened);
  assert_int_equal(s.late, 2);
  /* the first late answer came from the lookup and was cached: the second
   * did not ask again */
  assert_int_equal(s.lookups, 100 + 1);
  /* a cycle never seen opens normally */
  assert_int_equal(la_stitch_add(st, "a", 3, 0, 500, 1000), LA_STITCH_NEW);
}

/* A lookup that fails (the store cannot answer) opens nothing: the error
 * goes to the caller, which retries the whole batch. */
static void test_lookup_error_opens_nothing(void **state) {
  la_stitch_t *st = *state;
  la_stitch_set_lookup(st, fake_lookup, NULL);
  lookups_fail = 1;
  assert_int_equal(la_stitch_add(st, "a", 2, 0, 1, 0), LA_EIO);
  la_stitch_stats_t s = stats(st);
  assert_int_equal(s.open, 0);
  lookups_fail = 0;
  assert_int_equal(la_stitch_add(st, "a", 2, 0, 1, 0), LA_STITCH_NEW);
  assert_int_equal(la_stitch_set_closed_cache(st, 0), LA_EINVAL);
}

/* Restored sets take their place by age, whatever order they come in: the
 * one that was oldest expires first, a young one waits its full timeout,
 * and new sets queue behind them. Formerly a restore in key order blocked
 * the expiry of older sets behind a younger one. */
static void test_restore_keeps_age_order(void **state) {
  la_stitch_t *st = *state;
  uint32_t r0[] = {0};
  assert_int_equal(la_stitch_restore(st, "a", 2, 1, r0, 1, 900), 0);
  assert_int_equal(la_stitch_restore(st, "a", 2, 2, r0, 1, 100), 0);
  assert_int_equal(la_stitch_add(st, "a", 2, 0, 3, 1000), LA_STITCH_NEW);
  assert_int_equal(la_stitch_expire(st, 1050, 1000), 0);
  assert_int_equal(la_stitch_expire(st, 1100, 1000), 1);
  assert_int_equal(log_[0].tag, 2);
  assert_int_equal(la_stitch_expire(st, 1899, 1000), 0);
  assert_int_equal(la_stitch_expire(st, 1900, 1000), 1);
  assert_int_equal(log_[1].tag, 1);
  assert_int_equal(la_stitch_expire(st, 2000, 1000), 1);
  assert_int_equal(log_[2].tag, 3);
  /* the open-set limit evicts by age too */
  la_stitch_set_max_open(st, 2);
  assert_int_equal(la_stitch_restore(st, "b", 2, 1, r0, 1, 5000), 0);
  assert_int_equal(la_stitch_restore(st, "b", 2, 2, r0, 1, 3000), 0);
  assert_int_equal(la_stitch_add(st, "b", 2, 0, 3, 6000), LA_STITCH_NEW);
  assert_int_equal(nlog, 4);
  assert_int_equal(log_[3].tag, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_complete_when_all_ranks_arrive),
      T(test_sets_are_per_app_and_cycle),
      T(test_timeout_closes_partial_with_missing_ranks),
      T(test_app_end_closes_its_sets),
      T(test_memory_cap_evicts_oldest),
      T(test_limit_evicts_oldest),
      T(test_bad_input),
      T(test_restore),
      T(test_many_ranks_and_sets),
      T(test_late_after_cache_forgot),
      T(test_lookup_error_opens_nothing),
      T(test_restore_keeps_age_order),
#undef T
  };
  return cmocka_run_group_tests_name("stitch", tests, NULL, NULL);
}
