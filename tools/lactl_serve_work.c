/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve_work.c: the reduction thread of `lactl serve` (see
 * lactl_serve.h): runs one job at a time off the poll loop, and says that
 * it ended through an eventfd the loop polls. The job's data is handed
 * over under the mutex and handed back when lactl_sv_work_done says the
 * job ended, so the loop and the thread never touch it at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "lactl_serve.h"

struct lactl_sv_work {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int efd;
  lactl_sv_job_fn fn; /* the job waiting to run, NULL when none */
  void *arg;
  int busy; /* a job handed over and not yet collected (the loop's) */
  int done; /* the job ended (under mu) */
  int quit;
};

static void *la__main(void *p) {
  lactl_sv_work_t *w = p;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->fn && !w->quit) pthread_cond_wait(&w->cv, &w->mu);
    if (!w->fn) break; /* quit, nothing waiting */
    lactl_sv_job_fn fn = w->fn;
    void *arg = w->arg;
    w->fn = NULL;
    pthread_mutex_unlock(&w->mu);
    fn(arg);
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_mutex_unlock(&w->mu);
    uint64_t one = 1;
    while (write(w->efd, &one, sizeof one) < 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

int lactl_sv_work_new(lactl_sv_work_t **out) {
  lactl_sv_work_t *w = calloc(1, sizeof *w);
  *out = NULL;
  if (!w) return LA_ENOMEM;
  w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->efd < 0) {
    free(w);
    return LA_EIO;
  }
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->th, NULL, la__main, w) != 0) {
    close(w->efd);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    return LA_ENOMEM;
  }
  *out = w;
  return 0;
}

int lactl_sv_work_fd(const lactl_sv_work_t *w) {
  return w ? w->efd : -1;
}

int lactl_sv_work_busy(const lactl_sv_work_t *w) {
  return w && w->busy; /* written by the loop only */
}

int lactl_sv_work_run(lactl_sv_work_t *w, lactl_sv_job_fn fn, void *arg) {
  if (w->busy) return LA_ESTATE;
  pthread_mutex_lock(&w->mu);
  w->fn = fn, w->arg = arg, w->busy = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  return 0;
}

int lactl_sv_work_done(lactl_sv_work_t *w) {
  if (!w || !w->busy) return 0;
  uint64_t v;
  (void)!read(w->efd, &v, sizeof v); /* drained; done says */
  pthread_mutex_lock(&w->mu);
  int done = w->done;
  if (done) w->done = 0, w->busy = 0;
  pthread_mutex_unlock(&w->mu);
  return done;
}

void lactl_sv_work_free(lactl_sv_work_t *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->quit = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->th, NULL);
  close(w->efd);
  pthread_mutex_destroy(&w->mu);
  pthread_cond_destroy(&w->cv);
  free(w);
}
