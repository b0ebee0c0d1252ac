/* SPDX-License-Identifier: BSD-3-Clause */
/* pool.c: the LocalAgent's compaction threads (pool.h). Queued jobs under
 * one mutex and condition; finished jobs on a lock-free stack the loop
 * takes whole when the eventfd the threads write wakes it. */
#include "pool.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "la_daemon.h"
#include "la_errcodes.h"

#define LA__POOL_MAX 128

struct la_pool {
  uv_poll_t poll; /* the eventfd, on the loop */
  int efd;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  la_pool_job_t *q, *q_tail; /* queued (mu) */
  int stop;                  /* (mu) */
  la_pool_job_t *done;       /* finished, newest first (atomic) */
  int pending;               /* submitted, after not run (loop only) */
  int n;
  pthread_t th[LA__POOL_MAX];
};

static void la__push_done(la_pool_t *p, la_pool_job_t *j) {
  la_pool_job_t *head = __atomic_load_n(&p->done, __ATOMIC_RELAXED);
  do
    j->next = head;
  while (!__atomic_compare_exchange_n(&p->done, &head, j, 1, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED));
}

static void *la__thread(void *arg) {
  la_pool_t *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->q && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
    la_pool_job_t *j = p->q;
    if (!j) break; /* stopping, nothing left */
    p->q = j->next;
    if (!p->q) p->q_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    j->work(j);
    la__push_done(p, j); /* the job is the loop's from here */
    uint64_t one = 1;
    while (write(p->efd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Calls the after callback of every job finished so far, oldest first. */
static void la__run_done(la_pool_t *p) {
  la_pool_job_t *j = __atomic_exchange_n(&p->done, NULL, __ATOMIC_ACQUIRE);
  la_pool_job_t *oldest = NULL;
  while (j) { /* the stack is newest first */
    la_pool_job_t *next = j->next;
    j->next = oldest;
    oldest = j;
    j = next;
  }
  while (oldest) {
    la_pool_job_t *next = oldest->next;
    p->pending--;
    assert(p->pending >= 0);
    oldest->after(oldest);
    oldest = next;
  }
}

static void la__drain_efd(la_pool_t *p) {
  uint64_t v;
  while (read(p->efd, &v, sizeof v) < 0 && errno == EINTR) {
  }
}

static void la__on_ready(uv_poll_t *h, int status, int events) {
  (void)status;
  (void)events;
  la_pool_t *p = h->data;
  la__drain_efd(p); /* before taking the list: a later push writes again */
  la__run_done(p);
}

static void la__free_unstarted(uv_handle_t *h) {
  la_pool_t *p = h->data;
  close(p->efd);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

int la_pool_start(uv_loop_t *loop, int threads, la_pool_t **out, char *why,
                  size_t why_len) {
  assert(threads >= 1 && threads <= LA__POOL_MAX);
  la_pool_t *p = calloc(1, sizeof *p);
  if (!p) goto oom;
  p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (p->efd < 0) {
    snprintf(why, why_len, "compaction threads: eventfd: %s",
             strerror(errno));
    free(p);
    return LA_ENOMEM;
  }
  if (uv_poll_init(loop, &p->poll, p->efd) != 0) {
    close(p->efd);
    free(p);
    goto oom;
  }
  p->poll.data = p;
  uv_poll_start(&p->poll, UV_READABLE, la__on_ready);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  /* the threads never take the process's signals: the loop's */
  sigset_t old;
  la_daemon_mask_signals(&old);
  for (; p->n < threads; p->n++)
    if (pthread_create(&p->th[p->n], NULL, la__thread, p) != 0) break;
  la_daemon_unmask_signals(&old);
  if (p->n == 0) {
    uv_close((uv_handle_t *)&p->poll, la__free_unstarted);
    snprintf(why, why_len, "compaction threads: none could be started");
    return LA_ENOMEM;
  }
  *out = p;
  return 0;
oom:
  snprintf(why, why_len, "compaction threads: out of memory");
  return LA_ENOMEM;
}

void la_pool_submit(la_pool_t *p, la_pool_job_t *j) {
  assert(j->work && j->after);
  p->pending++;
  j->next = NULL;
  pthread_mutex_lock(&p->mu);
  if (p->q_tail)
    p->q_tail->next = j;
  else
    p->q = j;
  p->q_tail = j;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

int la_pool_pending(const la_pool_t *p) {
  return p ? p->pending : 0;
}

void la_pool_stop(la_pool_t *p) {
  if (!p) return;
  assert(uv_is_closing((uv_handle_t *)&p->poll));
  while (p->pending > 0) {
    if (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
      struct pollfd pf = {.fd = p->efd, .events = POLLIN};
      poll(&pf, 1, 1000);
    }
    la__drain_efd(p);
    la__run_done(p);
  }
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n; i++) pthread_join(p->th[i], NULL);
  close(p->efd);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
