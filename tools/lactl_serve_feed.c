/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_serve_feed.c: the feed thread of `lactl serve` (see
 * lactl_serve.h): reads the GlobalAgent's feed (la_client_next) off the
 * poll loop, so that receiving a large set (its parts, then parsing every
 * rank's trace) never holds the loop, and hands each set over through a
 * slot of one and an eventfd the loop polls. While the slot is full it
 * reads nothing more (the loop takes sets one at a time, as it did when it
 * read the feed itself: the memory is the set handed over and the one in
 * reassembly). The client is the thread's alone from start to end; it
 * parses a set's ranks on every CPU (la_client_set_threads), taking the
 * sums of the page's map as it does (lactl_sv_runs_install).
 * lactl_sv_feed_memory sets the allocator for sets that come one after
 * another.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "lactl_serve.h"

/* How long one wait on the feed lasts, so that a quit is seen (ms). */
#define LA__FEED_WAIT_MS 100

struct lactl_sv_feed {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int efd;
  la_client_t *c;
  la_traceset_t *set; /* the slot: a set the loop has not taken */
  int lost;           /* the stream's code once lost (the thread ended) */
  char why[300];      /* its reason */
  int quit;
};

/* Wakes the loop. */
static void la__wake(lactl_sv_feed_t *f) {
  uint64_t one = 1;
  while (write(f->efd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

static void *la__main(void *p) {
  lactl_sv_feed_t *f = p;
  sigset_t ss; /* Ctrl-C and SIGTERM interrupt the loop's poll */
  sigemptyset(&ss);
  sigaddset(&ss, SIGINT);
  sigaddset(&ss, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &ss, NULL);
  for (;;) {
    pthread_mutex_lock(&f->mu);
    while (f->set && !f->quit) pthread_cond_wait(&f->cv, &f->mu);
    int quit = f->quit;
    pthread_mutex_unlock(&f->mu);
    if (quit) break;
    la_traceset_t *t = NULL;
    int rc = la_client_next(f->c, LA__FEED_WAIT_MS, &t);
    if (rc == LA_ETIMEDOUT) continue;
    if (rc == LA_ELIMIT ||
        (rc == LA_EPROTO && !la_client_state(f->c))) { /* that set only */
      fprintf(stderr, "lactl serve: a set not shown: %s\n",
              la_client_error(f->c));
      continue;
    }
    pthread_mutex_lock(&f->mu);
    if (rc == 0) {
      f->set = t;
    } else {
      f->lost = rc;
      snprintf(f->why, sizeof f->why, "%s", la_client_error(f->c));
    }
    pthread_mutex_unlock(&f->mu);
    la__wake(f);
    if (rc) break; /* lost: the loop connects anew */
  }
  return NULL;
}

int lactl_sv_feed_new(la_client_t *c, lactl_sv_feed_t **out) {
  *out = NULL;
  lactl_sv_feed_t *f = calloc(1, sizeof *f);
  if (!f) return LA_ENOMEM;
  f->c = c;
  /* A set's ranks are parsed on every CPU: at 10^4 ranks the parse is most
   * of a set's time from its last part to the page; the page's map is
   * summed there, from the indexes the parse opens (lactl_serve_runs.c). */
  la_client_set_threads(c, 0);
  lactl_sv_runs_install(c);
  f->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (f->efd < 0) {
    free(f);
    return LA_EIO;
  }
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  if (pthread_create(&f->th, NULL, la__main, f) != 0) {
    close(f->efd);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
    return LA_ENOMEM;
  }
  *out = f;
  return 0;
}

void lactl_sv_feed_memory(void) {
  /* A set of 10^4 ranks x 10^6 elements is ~10^4 allocations (its
   * message's traces; the indexes the parse and a map open are freed as
   * each rank is done), freed when the next is taken. With an arena per
   * thread the parse threads' heaps are unmapped as they empty, and
   * chunks over 128 KiB are mapped each time: every set faulted its pages
   * in anew. One arena that keeps what is freed gives the next set those
   * pages; what it keeps is within the process's peak (the set the loop
   * holds and the one received). */
  (void)mallopt(M_ARENA_MAX, 1);
  (void)mallopt(M_TRIM_THRESHOLD, (int)LACTL_SV_KEEP_BYTES);
  (void)mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
}

int lactl_sv_feed_fd(const lactl_sv_feed_t *f) {
  return f ? f->efd : -1;
}

int lactl_sv_feed_next(lactl_sv_feed_t *f, la_traceset_t **t, char *why,
                       size_t why_len) {
  uint64_t v;
  *t = NULL;
  (void)!read(f->efd, &v, sizeof v); /* drained; the slot says */
  pthread_mutex_lock(&f->mu);
  int rc = 0;
  if (f->set) {
    *t = f->set, f->set = NULL, rc = 1;
    pthread_cond_signal(&f->cv); /* the next one */
  } else if (f->lost) {
    rc = f->lost;
    snprintf(why, why_len, "%s", f->why);
  }
  pthread_mutex_unlock(&f->mu);
  return rc;
}

void lactl_sv_feed_free(lactl_sv_feed_t *f) {
  if (!f) return;
  pthread_mutex_lock(&f->mu);
  f->quit = 1;
  pthread_cond_signal(&f->cv);
  pthread_mutex_unlock(&f->mu);
  pthread_join(f->th, NULL); /* after a wait on the feed, or a set */
  la_traceset_free(f->set);
  la_client_close(f->c);
  close(f->efd);
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
  free(f);
}
