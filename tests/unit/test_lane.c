/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lane.c: unit tests of the LocalAgent's lane (localagent/lane.{h,c}):
 * the thread for the cycles the agent is behind on.
 *
 * Each item is malloc'ed with a payload of its own, as the agent's jobs
 * hold memory and a hold on their session; its done callback records the
 * order and the thread it ran on and frees both. Covers: items worked in
 * the order submitted and their done callbacks run on the loop thread;
 * a stop by force (the loop's handles closed and the loop ended while the
 * lane still had items queued, as a second SIGTERM or the drain timeout
 * does) runs every item's done callback, in order, on the stopping thread,
 * so nothing is left (ASan's leak checker in asan/test_lane). Every wait
 * is bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "lane.h"

#define N_ITEMS 6
#define WAIT_MS 20000

typedef struct item {
  la_lane_item_t lane; /* first, as in the agent's jobs */
  int id;
  char *payload; /* what the item holds until its done callback */
} item_t;

/* The state the items report to (the test thread reads it after the lane
 * thread was joined or under mu). */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int gate_open; /* the first item's work waits for it */
  int worked[N_ITEMS], n_worked;
  int done[N_ITEMS], n_done;
  pthread_t done_thread[N_ITEMS];
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reset(int gate_open) {
  pthread_mutex_lock(&S.mu);
  S.gate_open = gate_open;
  S.n_worked = S.n_done = 0;
  pthread_mutex_unlock(&S.mu);
}

static void work(la_lane_item_t *it) {
  item_t *x = (item_t *)(void *)it;
  pthread_mutex_lock(&S.mu);
  while (!S.gate_open) pthread_cond_wait(&S.cv, &S.mu);
  S.worked[S.n_worked++] = x->id;
  pthread_cond_broadcast(&S.cv);
  pthread_mutex_unlock(&S.mu);
  x->payload[0] = 'w';
}

static void done(la_lane_item_t *it) {
  item_t *x = (item_t *)(void *)it;
  pthread_mutex_lock(&S.mu);
  S.done_thread[S.n_done] = pthread_self();
  S.done[S.n_done++] = x->payload[0] == 'w' ? x->id : -1;
  pthread_mutex_unlock(&S.mu);
  free(x->payload);
  free(x);
}

static void submit_all(la_lane_t *l) {
  for (int i = 0; i < N_ITEMS; i++) {
    item_t *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->payload = malloc(4096);
    assert_non_null(x->payload);
    x->payload[0] = 0;
    x->id = i;
    x->lane.work = work;
    x->lane.done = done;
    la_lane_submit(l, &x->lane);
  }
}

static int n_done(void) {
  pthread_mutex_lock(&S.mu);
  int n = S.n_done;
  pthread_mutex_unlock(&S.mu);
  return n;
}

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* The done callbacks ran once each, in the order submitted, after their
 * work, on thread th. */
static void expect_done_in_order(pthread_t th) {
  assert_int_equal(S.n_done, N_ITEMS);
  for (int i = 0; i < N_ITEMS; i++) {
    assert_int_equal(S.worked[i], i);
    assert_int_equal(S.done[i], i);
    assert_true(pthread_equal(S.done_thread[i], th));
  }
}

/* A loop and its lane with every item submitted (the gate open or not). */
static la_lane_t *start(uv_loop_t *loop, int gate_open) {
  reset(gate_open);
  assert_int_equal(uv_loop_init(loop), 0);
  la_lane_t *l = NULL;
  char why[128];
  assert_int_equal(la_lane_start(loop, &l, why, sizeof why), 0);
  submit_all(l);
  return l;
}

/* The daemon's stop: every handle closed (la_daemon_close_all), the loop
 * run until it ends. */
static void end_loop(uv_loop_t *loop) {
  uv_walk(loop, close_walk, NULL);
  assert_int_equal(uv_run(loop, UV_RUN_DEFAULT), 0);
}

/* la_lane_stop, then every done callback ran on th, and the loop closes. */
static void stop(uv_loop_t *loop, la_lane_t *l, pthread_t th) {
  la_lane_stop(l);
  expect_done_in_order(th);
  assert_int_equal(uv_loop_close(loop), 0);
}

/* The running loop takes each worked item and runs its done callback on
 * the loop thread, in order. */
static void test_lane_done_on_loop(void **state) {
  (void)state;
  uv_loop_t loop;
  la_lane_t *l = start(&loop, 1);
  long long end = now_ms() + WAIT_MS;
  while (n_done() < N_ITEMS && now_ms() < end) uv_run(&loop, UV_RUN_ONCE);
  expect_done_in_order(pthread_self());
  end_loop(&loop);
  stop(&loop, l, pthread_self());
}

/* A stop by force: the loop's handles closed and the loop ended while the
 * lane's thread was still on the first item and the others were queued;
 * the work then finishes, and la_lane_stop runs every item's done
 * callback (in order, on this thread), which frees it and its payload.
 * Before, the items were freed with free() alone: their payloads (an
 * agent's job's hold on its session) were lost. */
static void test_lane_forced_stop_frees_items(void **state) {
  (void)state;
  uv_loop_t loop;
  la_lane_t *l = start(&loop, 0);
  end_loop(&loop);
  assert_int_equal(n_done(), 0);
  /* the lane's thread goes on with what was queued, the loop gone */
  pthread_mutex_lock(&S.mu);
  S.gate_open = 1;
  pthread_cond_broadcast(&S.cv);
  long long end = now_ms() + WAIT_MS;
  while (S.n_worked < N_ITEMS && now_ms() < end) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 10 * 1000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&S.cv, &S.mu, &ts);
  }
  pthread_mutex_unlock(&S.mu);
  stop(&loop, l, pthread_self());
}

/* The same with the stop while the work may still be queued: the thread
 * does it during la_lane_stop, and the done callbacks follow. */
static void test_lane_forced_stop_with_work_queued(void **state) {
  (void)state;
  uv_loop_t loop;
  la_lane_t *l = start(&loop, 1);
  end_loop(&loop);
  stop(&loop, l, pthread_self());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lane_done_on_loop),
      cmocka_unit_test(test_lane_forced_stop_frees_items),
      cmocka_unit_test(test_lane_forced_stop_with_work_queued),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
