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
 * timer reads the socket now and then and, when the store reconnected
 * (a new socket), watches the new one.
 *
 * Deliberately not here: routing (the LocalAgents choose shards), stitching
 * the sets another shard had open (ingest.c), anything on SQLite.
 */
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
  if (la_store_load_set(ga->store, app_id, tag, &set) != 0) {
    la_log_warnx("set %s cycle %llu closed by another shard: %s", app_id,
                 (unsigned long long)tag, la_store_errmsg(ga->store));
    return;
  }
  set->has_t_complete_ns = 1;
  set->t_complete_ns = la_realtime_ns();
  la_ga_feed_publish(ga, set, la__published, NULL);
}

static void la__drain(la_ga_t *ga, int consume) {
  if (la_store_closed_elsewhere(ga->store, consume, la__on_elsewhere, ga) < 0)
    la_log_debug("store: %s", la_store_errmsg(ga->store));
}

static void la__on_poll(uv_poll_t *h, int status, int events) {
  la__drain(h->data, 1);
}

static void la__on_check(uv_check_t *h) {
  la__drain(h->data, 0);
}

static void la__poll_start(la_ga_t *ga) {
  ga->shard_fd = la_store_fd(ga->store);
  if (ga->shard_fd < 0) return;
  uv_poll_init(ga->loop, &ga->shard_poll, ga->shard_fd);
  ga->shard_poll.data = ga;
  uv_poll_start(&ga->shard_poll, UV_READABLE, la__on_poll);
}

static void la__on_poll_closed(uv_handle_t *h) {
  la_ga_t *ga = h->data;
  if (!ga->draining) la__poll_start(ga);
}

static void la__on_tick(uv_timer_t *t) {
  la_ga_t *ga = t->data;
  la__drain(ga, 1);
  int fd = la_store_fd(ga->store);
  if (fd == ga->shard_fd || ga->draining) return;
  if (ga->shard_fd < 0) { /* no session when it started watching */
    la__poll_start(ga);
  } else if (!uv_is_closing((uv_handle_t *)&ga->shard_poll)) {
    la_log_info("store: reconnected; watching the new session");
    uv_close((uv_handle_t *)&ga->shard_poll, la__on_poll_closed);
  }
}

int la_ga_shards_start(la_ga_t *ga) {
  int fd = la_store_watch(ga->store);
  if (fd == -1) return 0; /* SQLite: a GlobalAgent alone */
  if (fd < 0) {
    la_log_error("store: %s", la_store_errmsg(ga->store));
    return fd;
  }
  la__poll_start(ga);
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
