/* SPDX-License-Identifier: BSD-3-Clause */
/* reclaim.c: freeing on libuv's thread pool what the loop thread is done
 * with (reclaim.h). A batch is an array of (function, pointer) pairs
 * owned by the loop until it is handed to a job; the job frees the
 * pointers on a pool thread and its after callback (on the loop) frees
 * the array. uv_queue_work orders the hand-over, so the pool thread
 * sees everything the loop wrote before it. A batch taken whole
 * (la_reclaim_take) is freed by whichever thread the caller hands it to,
 * the hand-over ordered by the caller (committer.c: its mutex).
 */
#include "reclaim.h"

#include <stdlib.h>

typedef struct la__item {
  la_reclaim_fn fn;
  void *p;
} la__item_t;

/* A pool job, or a batch taken whole (la_reclaim_take: req unused). */
struct la_reclaim_batch {
  uv_work_t req;
  la__item_t *v;
  size_t n;
};
typedef struct la_reclaim_batch la__rjob_t;

struct la_reclaim {
  uv_loop_t *loop;
  la__item_t *v; /* waiting: v[0..n), room for cap */
  size_t n, cap;
  la_reclaim_stats_t st;
};

la_reclaim_t *la_reclaim_new(uv_loop_t *loop) {
  la_reclaim_t *r = calloc(1, sizeof *r);
  if (r) r->loop = loop;
  return r;
}

static void la__free_items(la__item_t *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i].fn(v[i].p);
}

static void la__work(uv_work_t *req) {
  la__rjob_t *j = req->data;
  la__free_items(j->v, j->n);
  j->n = 0;
}

static void la__after(uv_work_t *req, int status) {
  la__rjob_t *j = req->data;
  (void)status; /* never cancelled; a job not run still frees below */
  la__free_items(j->v, j->n);
  free(j->v);
  free(j);
}

la_reclaim_batch_t *la_reclaim_take(la_reclaim_t *r) {
  if (!r || r->n == 0) return NULL;
  la__rjob_t *j = malloc(sizeof *j);
  if (!j) { /* out of memory: freed here */
    r->st.on_loop += r->n;
    la__free_items(r->v, r->n);
    r->n = 0;
    return NULL;
  }
  j->v = r->v;
  j->n = r->n;
  j->req.data = j;
  r->v = NULL;
  r->n = r->cap = 0;
  return j;
}

void la_reclaim_batch_run(la_reclaim_batch_t *b) {
  if (b) la__after(&b->req, 0);
}

size_t la_reclaim_waiting(const la_reclaim_t *r) {
  return r ? r->n : 0;
}

void la_reclaim_flush(la_reclaim_t *r) {
  la__rjob_t *j = la_reclaim_take(r);
  if (!j) return;
  r->st.jobs++;
  if (uv_queue_work(r->loop, &j->req, la__work, la__after) != 0) {
    r->st.on_loop += j->n;
    la__after(&j->req, 0); /* no pool: freed here */
  }
}

void la_reclaim_add(la_reclaim_t *r, la_reclaim_fn fn, void *p) {
  if (!p) return;
  if (r && r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 256;
    la__item_t *v = realloc(r->v, cap * sizeof *v);
    if (v) {
      r->v = v;
      r->cap = cap;
    }
  }
  if (!r || r->n == r->cap) { /* out of memory: freed here */
    if (r) r->st.on_loop++, r->st.added++;
    fn(p);
    return;
  }
  r->v[r->n].fn = fn;
  r->v[r->n].p = p;
  r->n++;
  r->st.added++;
  if (r->n >= LA_RECLAIM_BATCH) la_reclaim_flush(r);
}

la_reclaim_stats_t la_reclaim_stats(const la_reclaim_t *r) {
  la_reclaim_stats_t z = {0, 0, 0};
  return r ? r->st : z;
}

void la_reclaim_free(la_reclaim_t *r) {
  if (!r) return;
  la__free_items(r->v, r->n);
  free(r->v);
  free(r);
}
