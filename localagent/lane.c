/* SPDX-License-Identifier: BSD-3-Clause */
/* lane.c: the thread for the work on cycles the agent is behind on
 * (lane.h). Items go through two FIFO lists under one mutex: queued (the
 * thread takes them one at a time) and done (the loop takes them all when
 * the uv_async_t the thread sends fires). */
#include "lane.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "la_errcodes.h"

struct la_lane {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uv_async_t async; /* the thread's "items done", on the loop */
  /* under mu */
  la_lane_item_t *q, *q_tail;       /* queued */
  la_lane_item_t *done, *done_tail; /* worked, for the loop */
  int stop;
};

static void la__append(la_lane_item_t **head, la_lane_item_t **tail,
                       la_lane_item_t *it) {
  it->next = NULL;
  if (*tail)
    (*tail)->next = it;
  else
    *head = it;
  *tail = it;
}

static void *la__run(void *arg) {
  la_lane_t *l = arg;
  pthread_mutex_lock(&l->mu);
  for (;;) {
    while (!l->q && !l->stop) pthread_cond_wait(&l->cv, &l->mu);
    la_lane_item_t *it = l->q;
    if (!it) break; /* stopping, nothing left */
    l->q = it->next;
    if (!l->q) l->q_tail = NULL;
    pthread_mutex_unlock(&l->mu);
    it->work(it);
    pthread_mutex_lock(&l->mu);
    la__append(&l->done, &l->done_tail, it);
    if (!l->stop) uv_async_send(&l->async);
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

/* The loop's side: every item worked so far, in order. */
static void la__on_done(uv_async_t *a) {
  la_lane_t *l = a->data;
  pthread_mutex_lock(&l->mu);
  la_lane_item_t *it = l->done;
  l->done = l->done_tail = NULL;
  pthread_mutex_unlock(&l->mu);
  while (it) {
    la_lane_item_t *next = it->next;
    it->done(it);
    it = next;
  }
}

int la_lane_start(uv_loop_t *loop, la_lane_t **out, char *why,
                  size_t why_len) {
  la_lane_t *l = calloc(1, sizeof *l);
  if (!l || uv_async_init(loop, &l->async, la__on_done) != 0) {
    free(l);
    if (why && why_len) snprintf(why, why_len, "lane: out of memory");
    return LA_ENOMEM;
  }
  l->async.data = l;
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  if (pthread_create(&l->th, NULL, la__run, l) != 0) {
    /* the handle stays with the loop (closed with the others): l too */
    if (why && why_len) snprintf(why, why_len, "lane: cannot start its thread");
    return LA_ENOMEM;
  }
  pthread_setname_np(l->th, "la-lane"); /* for top -H and perf */
  *out = l;
  return 0;
}

void la_lane_submit(la_lane_t *l, la_lane_item_t *it) {
  pthread_mutex_lock(&l->mu);
  la__append(&l->q, &l->q_tail, it);
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

void la_lane_stop(la_lane_t *l) {
  if (!l) return;
  pthread_mutex_lock(&l->mu);
  l->stop = 1;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
  pthread_join(l->th, NULL);
  /* the items worked after the loop stopped taking them, in order, as
   * la__on_done would have taken them: their done callbacks free them and
   * what they hold (la_pool_stop does the same for its jobs) */
  assert(!l->q);
  la_lane_item_t *it = l->done;
  l->done = l->done_tail = NULL;
  while (it) {
    la_lane_item_t *next = it->next;
    it->done(it);
    it = next;
  }
  pthread_cond_destroy(&l->cv);
  pthread_mutex_destroy(&l->mu);
  free(l);
}
