/* SPDX-License-Identifier: BSD-3-Clause */
/* shards.c: what a GlobalAgent does as one of several shards over one
 * PostgreSQL store (docs/sharding.md) besides ingesting: it publishes to
 * its own subscribers the Trace-Sets the other shards close, so that a
 * subscriber connected to any shard receives every application's sets.
 *
 * The store listens (LISTEN la_sets); each shard's la_store_set_closed
 * notifies in the closing transaction, so a set is announced only once it
 * is committed. The connection's socket is watched with a uv_poll; a
 * uv_check also takes the notifications libpq read while running the
 * store's statements (they never make the socket readable again); a
 * timer reads the socket now and then and watches the session the store
 * holds now.
 *
 * The poll never watches libpq's own descriptor: libpq closes it by itself
 * (a session lost inside any statement, PQreset, PQfinish), and a number
 * closed under an active poll is soon handed to an accepted connection,
 * which libuv then aborts on. The poll watches a duplicate owned here,
 * closed only in the poll's close callback, after libuv forgot it; a new
 * poll (on the next session's socket) is made only after that. So the
 * order is always: uv_close, its callback, close(duplicate), uv_poll_init.
 *
 * Deliberately not here: routing (the LocalAgents choose shards), stitching
 * the sets another shard had open (ingest.c), anything on SQLite.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ga.h"
#include "la_log.h"
#include "la_time.h"

#define LA__SHARDS_TICK_MS 200

/* la_ga_feed_publish's done: the set read back is freed. */
static void la__published(la_ga_t *ga, La__TraceSet *set, void *arg) {
  (void)ga, (void)arg;
  la_store_free_set(set);
}

static void la__on_elsewhere(void *arg, const char *app_id, uint64_t tag) {
  la_ga_t *ga = arg;
  La__TraceSet *set = NULL;
  if (la_store_load_set(la_ga_store(ga), app_id, tag, &set) != 0) {
    la_ga_feed_unpublished(ga, app_id, tag, la_store_errmsg(la_ga_store(ga)));
    return;
  }
  set->has_t_complete_ns = 1;
  set->t_complete_ns = la_realtime_ns();
  la_ga_feed_publish(ga, set, la__published, NULL);
}

static void la__drain(la_ga_t *ga, int consume) {
  if (la_store_closed_elsewhere(la_ga_store(ga), consume, la__on_elsewhere, ga) < 0)
    la_log_debug("store: %s", la_store_errmsg(la_ga_store(ga)));
}

static void la__watch(la_ga_t *ga);

/* The poll is closed: its descriptor is ours to close now; the store's
 * current session, if any, is watched next. */
static void la__on_poll_closed(uv_handle_t *h) {
  la_ga_t *ga = h->data;
  assert(ga->shard_polling && ga->shard_fd >= 0);
  close(ga->shard_fd);
  ga->shard_fd = -1;
  ga->shard_polling = 0;
  la__watch(ga);
}

/* Stops watching (the session was lost or replaced, or the daemon stops). */
static void la__unwatch(la_ga_t *ga) {
  if (ga->shard_polling && !uv_is_closing((uv_handle_t *)&ga->shard_poll))
    uv_close((uv_handle_t *)&ga->shard_poll, la__on_poll_closed);
}

static void la__on_poll(uv_poll_t *h, int status, int events) {
  la_ga_t *ga = h->data;
  (void)events;
  /* a lost session reads as end of file on our duplicate until closed */
  if (status < 0 ||
      la_store_closed_elsewhere(la_ga_store(ga), 1, la__on_elsewhere, ga) < 0) {
    la_log_debug("store: %s", status < 0 ? uv_strerror(status)
                                        : la_store_errmsg(la_ga_store(ga)));
    la__unwatch(ga);
  }
}

static void la__on_check(uv_check_t *h) {
  la__drain(h->data, 0);
}

/* Watches the store's current session (nothing while it has none, or
 * while the previous poll is still closing). */
static void la__watch(la_ga_t *ga) {
  if (ga->draining || ga->shard_polling) return;
  assert(ga->shard_fd < 0);
  int fd = la_store_fd(la_ga_store(ga));
  if (fd < 0) return;
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) {
    la_log_warnx("store: cannot watch the session for other shards' sets: %s",
                 strerror(errno));
    return;
  }
  int rc = uv_poll_init(ga->loop, &ga->shard_poll, own);
  if (rc != 0) {
    la_log_warnx("store: cannot watch the session for other shards' sets: %s",
                 uv_strerror(rc));
    close(own);
    return;
  }
  ga->shard_fd = own;
  ga->shard_polling = 1;
  ga->shard_session = la_store_session(la_ga_store(ga));
  ga->shard_poll.data = ga;
  uv_poll_start(&ga->shard_poll, UV_READABLE, la__on_poll);
}

static void la__on_tick(uv_timer_t *t) {
  la_ga_t *ga = t->data;
  la__drain(ga, 1);
  if (ga->draining) return;
  if (!ga->shard_polling) {
    la__watch(ga);
  } else if (!uv_is_closing((uv_handle_t *)&ga->shard_poll) &&
             (la_store_fd(la_ga_store(ga)) < 0 ||
              la_store_session(la_ga_store(ga)) != ga->shard_session)) {
    if (la_store_fd(la_ga_store(ga)) >= 0)
      la_log_info("store: reconnected; watching the new session");
    la__unwatch(ga);
  }
}

int la_ga_shards_start(la_ga_t *ga) {
  ga->shard_fd = -1;
  int fd = la_store_watch(la_ga_store(ga));
  if (fd == -1) return 0; /* SQLite: a GlobalAgent alone */
  if (fd < 0) {
    la_log_error("store: %s", la_store_errmsg(la_ga_store(ga)));
    return fd;
  }
  ga->shard_on = 1;
  la__watch(ga);
  uv_check_init(ga->loop, &ga->shard_check);
  ga->shard_check.data = ga;
  uv_check_start(&ga->shard_check, la__on_check);
  uv_timer_init(ga->loop, &ga->shard_tick);
  ga->shard_tick.data = ga;
  uv_timer_start(&ga->shard_tick, la__on_tick, LA__SHARDS_TICK_MS,
                 LA__SHARDS_TICK_MS);
  la_log_info("shared store: publishing the sets other shards close too");
  return 0;
}

void la_ga_shards_stop(la_ga_t *ga) {
  if (!ga->shard_on) return;
  ga->shard_on = 0;
  uv_close((uv_handle_t *)&ga->shard_check, NULL);
  uv_close((uv_handle_t *)&ga->shard_tick, NULL);
  la__unwatch(ga); /* its callback closes our descriptor (draining: no
                      new poll) */
}
