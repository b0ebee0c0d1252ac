/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ga_reclaim.c: the GlobalAgent's freeing on the thread pool
 * (globalagent/reclaim.c): every pointer handed over is freed exactly
 * once, whether it rides on another job (la_reclaim_take), gets a job of
 * its own (la_reclaim_flush, la_reclaim_flush_old once it has waited
 * LA_RECLAIM_WAIT_MS of loop time), or is still waiting at la_reclaim_free;
 * and la_reclaim_flush_old leaves alone what has not waited that long.
 * A real libuv loop and thread pool; the loop's clock only moves when the
 * test runs the loop, so nothing here depends on how fast the machine is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <uv.h>

#include "reclaim.h"

/* What the freeing function saw: a counter per pointer. */
enum { N_ITEMS = 64 };
static _Atomic int freed[N_ITEMS];

static void la__count_free(void *p) {
  int *slot = p;
  freed[*slot]++;
  free(slot);
}

static void la__add(la_reclaim_t *r, int i) {
  int *slot = malloc(sizeof *slot);
  assert_non_null(slot);
  *slot = i;
  la_reclaim_add(r, la__count_free, slot);
}

static int la__sum(void) {
  int s = 0;
  for (int i = 0; i < N_ITEMS; i++) {
    assert_true(freed[i] <= 1); /* never twice */
    s += freed[i];
  }
  return s;
}

/* A fresh loop and reclaim on it, the counters at zero. */
static la_reclaim_t *la__start(uv_loop_t *loop) {
  for (int i = 0; i < N_ITEMS; i++) freed[i] = 0;
  assert_int_equal(uv_loop_init(loop), 0);
  la_reclaim_t *r = la_reclaim_new(loop);
  assert_non_null(r);
  return r;
}

/* Another job that takes what waits, as agents.c's decoding job does. */
typedef struct {
  uv_work_t req;
  la_reclaim_batch_t *b;
  int ended;
} la__rider_t;

static void la__ride_work(uv_work_t *req) {
  la__rider_t *j = req->data;
  la_reclaim_run(j->b);
}

static void la__ride_after(uv_work_t *req, int status) {
  la__rider_t *j = req->data;
  (void)status;
  la_reclaim_end(j->b);
  j->ended = 1;
}

static void test_ride(void **state) {
  (void)state;
  uv_loop_t loop;
  la_reclaim_t *r = la__start(&loop);
  assert_null(la_reclaim_take(r)); /* nothing waits */
  for (int i = 0; i < 10; i++) la__add(r, i);
  la__rider_t j = {.b = la_reclaim_take(r)};
  assert_non_null(j.b);
  assert_null(la_reclaim_take(r)); /* all of it went */
  j.req.data = &j;
  assert_int_equal(uv_queue_work(&loop, &j.req, la__ride_work, la__ride_after),
                   0);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_true(j.ended);
  assert_int_equal(la__sum(), 10);
  la_reclaim_stats_t st = la_reclaim_stats(r);
  assert_int_equal(st.added, 10);
  assert_int_equal(st.rides, 1);
  assert_int_equal(st.jobs, 0);
  assert_int_equal(st.on_loop, 0);
  la_reclaim_free(r);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* A batch whose job never ran its work: la_reclaim_end frees it. */
static void test_end_without_run(void **state) {
  (void)state;
  uv_loop_t loop;
  la_reclaim_t *r = la__start(&loop);
  for (int i = 0; i < 5; i++) la__add(r, i);
  la_reclaim_batch_t *b = la_reclaim_take(r);
  assert_non_null(b);
  assert_int_equal(la__sum(), 0);
  la_reclaim_end(b);
  assert_int_equal(la__sum(), 5);
  la_reclaim_end(NULL); /* nothing taken: nothing to do */
  la_reclaim_run(NULL);
  la_reclaim_free(r);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void la__on_wait(uv_timer_t *t) {
  (void)t; /* only moves the loop's clock */
}

static void test_flush_old(void **state) {
  (void)state;
  uv_loop_t loop;
  la_reclaim_t *r = la__start(&loop);
  for (int i = 0; i < 3; i++) la__add(r, i);
  /* the loop's clock has not moved: still waiting for a job to ride on */
  la_reclaim_flush_old(r);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(la__sum(), 0);
  assert_int_equal(la_reclaim_stats(r).jobs, 0);
  /* LA_RECLAIM_WAIT_MS later (by the loop's clock): a job of its own */
  uv_timer_t t;
  uv_timer_init(&loop, &t);
  uv_timer_start(&t, la__on_wait, LA_RECLAIM_WAIT_MS, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  la_reclaim_flush_old(r);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(la__sum(), 3);
  assert_int_equal(la_reclaim_stats(r).jobs, 1);
  /* what waits at la_reclaim_free is freed there */
  for (int i = 3; i < 7; i++) la__add(r, i);
  la_reclaim_flush(r);
  la__add(r, 7);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(la__sum(), 7);
  la_reclaim_free(r);
  assert_int_equal(la__sum(), 8);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ride),
      cmocka_unit_test(test_end_without_run),
      cmocka_unit_test(test_flush_old),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
