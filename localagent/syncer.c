/* SPDX-License-Identifier: BSD-3-Clause */
/* syncer.c: the LocalAgent's log fsync on a thread of its own (syncer.h).
 * The thread sleeps on a condition variable with a deadline of one period
 * (CLOCK_MONOTONIC) and is woken early only to stop. */
#include "syncer.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "la_errcodes.h"

struct la_syncer {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop; /* under mu */
  uint64_t period_ms;
  la_outq_t *q;
};

static void la__deadline(struct timespec *ts, uint64_t ms) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += (time_t)(ms / 1000);
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static void *la__run(void *arg) {
  la_syncer_t *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    struct timespec ts;
    la__deadline(&ts, s->period_ms);
    int rc = 0;
    while (!s->stop && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    if (s->stop) break;
    pthread_mutex_unlock(&s->mu);
    la_outq_sync(s->q); /* a failure is noted; the next period tries again */
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int la_syncer_start(la_outq_t *q, uint64_t period_ms, la_syncer_t **out,
                    char *why, size_t why_len) {
  if (!q || !out || period_ms == 0) {
    if (why && why_len) snprintf(why, why_len, "log sync: bad arguments");
    return LA_EINVAL;
  }
  la_syncer_t *s = calloc(1, sizeof *s);
  if (!s) {
    if (why && why_len) snprintf(why, why_len, "log sync: out of memory");
    return LA_ENOMEM;
  }
  s->q = q;
  s->period_ms = period_ms;
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&s->th, NULL, la__run, s) != 0) {
    if (why && why_len)
      snprintf(why, why_len, "log sync: cannot start its thread");
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return LA_ENOMEM;
  }
  pthread_setname_np(s->th, "la-sync"); /* for top -H and perf */
  *out = s;
  return 0;
}

void la_syncer_stop(la_syncer_t *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->th, NULL);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
}
