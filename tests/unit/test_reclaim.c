/* SPDX-License-Identifier: BSD-3-Clause */
/* test_reclaim.c: the GlobalAgent's freeing of what its loop is done with
 * (globalagent/reclaim.c): every pointer handed over is freed exactly
 * once, by a pool job (la_reclaim_flush) or by whichever thread a batch
 * taken whole goes to (la_reclaim_take, as the commit thread takes the
 * batch's freed messages with its commit), and nothing is freed twice or
 * left behind when both are mixed. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "reclaim.h"

#define N_ITEMS 10

/* An item: which thread freed it, how many times. */
typedef struct item {
  int freed;
  pthread_t by;
} item_t;

static void item_free(void *p) {
  item_t *it = p;
  it->freed++;
  it->by = pthread_self();
}

static void *run_batch(void *b) {
  la_reclaim_batch_run(b);
  return NULL;
}

/* A batch taken whole holds every pointer added, leaves the reclaim
 * empty (a flush then starts no job), and frees each pointer once on the
 * thread it is run on. */
static void test_take_frees_on_the_taking_thread(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  la_reclaim_t *r = la_reclaim_new(&loop);
  assert_non_null(r);
  assert_null(la_reclaim_take(r)); /* nothing waits */
  item_t it[N_ITEMS];
  memset(it, 0, sizeof it);
  for (int i = 0; i < N_ITEMS; i++) la_reclaim_add(r, item_free, &it[i]);
  assert_int_equal(la_reclaim_waiting(r), N_ITEMS);
  la_reclaim_batch_t *b = la_reclaim_take(r);
  assert_non_null(b);
  assert_int_equal(la_reclaim_waiting(r), 0);
  assert_null(la_reclaim_take(r));
  la_reclaim_flush(r); /* nothing left for a pool job */
  assert_int_equal(la_reclaim_stats(r).jobs, 0);
  for (int i = 0; i < N_ITEMS; i++) assert_int_equal(it[i].freed, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, run_batch, b), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  for (int i = 0; i < N_ITEMS; i++) {
    assert_int_equal(it[i].freed, 1);
    assert_true(pthread_equal(it[i].by, th));
  }
  la_reclaim_batch_run(NULL); /* nothing */
  la_reclaim_stats_t st = la_reclaim_stats(r);
  assert_int_equal(st.added, N_ITEMS);
  assert_int_equal(st.on_loop, 0);
  la_reclaim_free(r);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* Pointers added after a take go to the next hand-over, a pool job here:
 * each of both groups is freed once, the first by the taking thread, the
 * second on the pool, and what waits at la_reclaim_free is freed there. */
static void test_take_then_flush_then_free(void **state) {
  (void)state;
  uv_loop_t loop;
  assert_int_equal(uv_loop_init(&loop), 0);
  la_reclaim_t *r = la_reclaim_new(&loop);
  assert_non_null(r);
  item_t a[N_ITEMS], b[N_ITEMS], c[3];
  memset(a, 0, sizeof a);
  memset(b, 0, sizeof b);
  memset(c, 0, sizeof c);
  for (int i = 0; i < N_ITEMS; i++) la_reclaim_add(r, item_free, &a[i]);
  la_reclaim_batch_t *taken = la_reclaim_take(r);
  for (int i = 0; i < N_ITEMS; i++) la_reclaim_add(r, item_free, &b[i]);
  la_reclaim_flush(r);
  assert_int_equal(la_reclaim_stats(r).jobs, 1);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0); /* the job ran */
  for (int i = 0; i < N_ITEMS; i++) {
    assert_int_equal(b[i].freed, 1);
    assert_int_equal(a[i].freed, 0); /* still the taker's */
  }
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, run_batch, taken), 0);
  assert_int_equal(pthread_join(th, NULL), 0);
  for (int i = 0; i < N_ITEMS; i++) assert_int_equal(a[i].freed, 1);
  for (int i = 0; i < 3; i++) la_reclaim_add(r, item_free, &c[i]);
  la_reclaim_free(r); /* frees what waits, on this thread */
  for (int i = 0; i < 3; i++) {
    assert_int_equal(c[i].freed, 1);
    assert_true(pthread_equal(c[i].by, pthread_self()));
  }
  for (int i = 0; i < N_ITEMS; i++) assert_int_equal(b[i].freed, 1);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_take_frees_on_the_taking_thread),
      cmocka_unit_test(test_take_then_flush_then_free),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
