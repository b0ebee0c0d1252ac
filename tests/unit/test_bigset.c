/* SPDX-License-Identifier: BSD-3-Clause */
/* test_bigset.c: Trace-Sets larger than the feed's frame and queue limits
 * reach libla_client whole, and a set a subscriber will not get is
 * announced to it, never dropped silently.
 *
 * The real la-globalagent runs as a child process (la_test_daemon.h) with
 * small limits (feed.queue_bytes, feed.part_bytes, the client's frame
 * limit) so that a set of about 1.5 MB is "large" at little cost; the
 * ranks' traces come from a LocalAgent played by hand (la_test_link.h)
 * because it sends many ranks without running them. Assertions are on what
 * a subscriber sees (every rank's trace byte for byte, la_client_next's
 * code and la_client_notice) and on the GlobalAgent's status counters. An
 * old subscriber (a Subscribe without sets_version, read frame by frame)
 * still gets whole TraceSet frames. The applications stitched at once are
 * bounded (stitch.max_apps). A set asked by query (la_client_get,
 * la_client_latest, lactl export) comes in parts too: one of more than
 * 64 MiB, the largest frame a client takes, arrives whole, while an old
 * client still gets it as one QueryReply frame, which it refuses.
 * A stored set is read and encoded off the GlobalAgent's loop thread: while
 * a query of a set of tens of MB is served, other connections' requests
 * are answered and a LocalAgent's messages acknowledged before its reply
 * (asserted on which arrives first, never on time); a connection's own
 * requests are answered in order; a client that leaves, or a SIGTERM,
 * while its set is read leaves the daemon healthy or exiting cleanly.
 * Subscribers that leave with parts of sets unwritten give the sets'
 * memory back (feed.memory is not filled by writes that never finished).
 */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_auth.h"
#include "la_client.h"
#include "la_client_internal.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_secure_io.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_link.h"
#include "la_test_uplink.h"

#define WAIT_MS 30000
#define RANKS 48
#define N 4000 /* elements per rank: about 32 KB per lossless trace */

static struct {
  la_tu_ga_t g; /* the GlobalAgent (la_test_uplink.h) */
  la_compact_result_t r[RANKS];
  la_test_link_t link;
  size_t n; /* elements per rank of the next set (0: N) */
} T;

/* Elements per rank of the sets being made. */
static size_t nel(void) {
  return T.n ? T.n : N;
}

/* Each test: no SIGPIPE, libsodium ready (idempotent), no link yet. */
static int setup(void **state) {
  memset(&T, 0, sizeof T);
  T.link.fd = -1;
  signal(SIGPIPE, SIG_IGN);
  return la_auth_init() == 0 ? 0 : -1;
}

static int teardown(void **state) {
  if (T.link.fd >= 0) la_test_link_close(&T.link);
  for (int i = 0; i < RANKS; i++) la_compact_result_free(&T.r[i]);
  la_td_free(T.g.d);
  memset(&T, 0, sizeof T);
  return 0;
}

#define CHECK(cond, ...) \
  LA_TD_CHECK(la_td_print_log_tail(T.g.d, 3000), cond, __VA_ARGS__)

/* Starts the GlobalAgent (a secret, no fsync) with small feed limits and
 * extra (NULL-ended, may be NULL), and links the hand-played LocalAgent. */
static void start_ga(const char *const *extra) {
  char p[512];
  if (la_td_find_bin("la-globalagent", p, sizeof p) != 0) {
    print_message("skip: la-globalagent not built\n");
    skip();
  }
  const char *args[16] = {"--log.level=info", "--feed.queue_bytes=256k",
                          "--feed.part_bytes=16k"};
  int n = 3;
  for (int i = 0; extra && extra[i] && n < 15; i++) args[n++] = extra[i];
  args[n] = NULL;
  CHECK(la_tu_ga_start(&T.g, 0, 1, args, WAIT_MS) == 0,
        "la-globalagent did not start");
  int32_t status = -1;
  char why[300] = "";
  int rc = la_test_link_open(&T.link, T.g.agents_port, T.g.key, "bignode",
                             WAIT_MS, &status, why, sizeof why);
  CHECK(rc == 0 && status == 0, "handshake: %s", why);
}

/* Rank r's values: rough (lossless keeps about 8 bytes per element). */
static void rank_values(uint32_t r, uint64_t tag, double *x) {
  uint64_t s = 0x9e3779b97f4a7c15ull * (r + 1) + tag;
  for (size_t i = 0; i < nel(); i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = 1.0 + (double)(s >> 11) * 0x1.0p-53 * (r + 1);
  }
}

/* Compacts every rank's trace of cycle tag (lossless) into T.r. */
static void make_traces(uint64_t tag) {
  double *x = malloc(nel() * sizeof *x);
  assert_non_null(x);
  la_compact_params_t p;
  assert_int_equal(la_compact_spec_parse("lossless", &p, NULL, 0), 0);
  for (uint32_t r = 0; r < RANKS; r++) {
    la_compact_result_free(&T.r[r]);
    rank_values(r, tag, x);
    assert_int_equal(la_compact(x, nel(), &p, &T.r[r]), 0);
  }
  free(x);
}

/* Sends the RankStarts of app's ranks 0..nprocs-1 (nel() elements). */
static void send_rank_starts(const char *app, uint32_t nprocs) {
  for (uint32_t r = 0; r < nprocs; r++)
    assert_int_equal(
        la_test_link_rank_start(&T.link, "bignode", app, r, nprocs, nel()), 0);
}

/* Sends app's set of cycle tag: nprocs ranks of T.r (RankStarts once). */
static void send_set(const char *app, uint32_t nprocs, uint64_t tag,
                     int rank_starts) {
  make_traces(tag);
  if (rank_starts) send_rank_starts(app, nprocs);
  for (uint32_t r = 0; r < nprocs; r++)
    assert_int_equal(la_test_link_trace(&T.link, app, r, tag, &T.r[r], NULL, 0),
                     0);
  char why[300] = "";
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0, "%s",
        why);
}

/* A libla_client subscriber of every application with a frame limit of
 * 64 KiB (far below a large set), its Subscribe known to the GlobalAgent
 * when this returns; max_set: its bound before subscribing (0: default). */
static la_client_t *subscriber(uint64_t max_set) {
  la_client_t *c = NULL;
  CHECK(la_client_connect(T.g.feed_addr, 5000, &c) == 0, "connect");
  assert_int_equal(la_client_set_max_frame(c, 65536), 0);
  if (max_set) assert_int_equal(la_client_set_max_set(c, max_set), 0);
  assert_int_equal(la_client_subscribe(c, NULL, 0), 0);
  la_client_rows_t *rows = NULL; /* a round trip: the Subscribe is in */
  assert_int_equal(la_client_list(c, "apps", NULL, &rows), 0);
  la_client_rows_free(rows);
  return c;
}

/* The next set of c, which must arrive. */
static la_traceset_t *next_set(la_client_t *c) {
  la_traceset_t *t = NULL;
  int rc = la_client_next(c, WAIT_MS, &t);
  CHECK(rc == 0, "la_client_next: %s (%s)", la_client_strerror(rc),
        la_client_error(c));
  return t;
}

/* Every rank of t carries exactly the trace sent (T.r), and decodes to the
 * values it was made from. */
static void check_whole(const la_traceset_t *t, uint32_t nprocs, uint64_t tag) {
  assert_int_equal(la_traceset_nprocs(t), nprocs);
  assert_int_equal(la_traceset_cycle(t), tag);
  assert_true(la_traceset_complete(t));
  double *w = malloc(nel() * sizeof *w), *x = malloc(nel() * sizeof *x);
  assert_true(w && x);
  for (uint32_t r = 0; r < nprocs; r++) {
    const La__CompactTrace *ct = la__traceset_compact(t, r);
    CHECK(ct && ct->segments.len == T.r[r].len &&
              !memcmp(ct->segments.data, T.r[r].bytes, T.r[r].len),
          "rank %u: the trace received differs from the one sent", r);
    assert_int_equal(la_traceset_rank_weights(t, r, w), 0);
    rank_values(r, tag, x);
    assert_memory_equal(w, x, nel() * sizeof *w);
  }
  free(w);
  free(x);
}

/* Bytes of the set's encoding as the GlobalAgent sends it in parts. */
static size_t set_bytes(const la_traceset_t *t) {
  La__TraceSet m = *la__traceset_message(t);
  m.has_dropped = 0;
  return protobuf_c_message_get_packed_size(&m.base);
}

/* Sends app's set of cycle tag (all RANKS ranks; RankStarts first when
 * rank_starts) and returns it as subscriber c received it, checked whole. */
static la_traceset_t *send_whole(la_client_t *c, const char *app, uint64_t tag,
                                 int rank_starts) {
  send_set(app, RANKS, tag, rank_starts);
  la_traceset_t *t = next_set(c);
  check_whole(t, RANKS, tag);
  return t;
}

/* A set of 1.5 MB, about six times feed.queue_bytes and 24 times the client's
 * frame limit, reaches the subscriber whole, twice in a row, in parts of
 * at most feed.part_bytes; nothing is announced as lost; the set was held
 * in memory for publishing (sets_held, held_peak_bytes), none spilled. */
static void test_large_set_arrives_whole(void **state) {
  start_ga(NULL);
  la_client_t *c = subscriber(0);
  for (uint64_t tag = 5; tag <= 6; tag++) {
    la_traceset_t *t = send_whole(c, "big", tag, tag == 5);
    size_t n = set_bytes(t);
    print_message("cycle %llu: a set of %zu bytes arrived whole\n",
                  (unsigned long long)tag, n);
    CHECK(n > 5 * 262144, "the set is only %zu bytes: not large", n);
    assert_int_equal(la_traceset_dropped(t), 0);
    la_traceset_free(t);
  }
  assert_int_equal(la_td_status_ll(T.g.d, "set_notices"), 0);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_dropped_for_slow_subscribers"),
                   0);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_spilled"), 0);
  CHECK(la_td_status_ll(T.g.d, "held_peak_bytes") > 5 * 262144,
        "held_peak_bytes %lld: the set's traces were not held",
        la_td_status_ll(T.g.d, "held_peak_bytes"));
  assert_int_equal(la_td_status_ll(T.g.d, "sets_held"), 0);
  la_client_close(c);
}

/* A set's parts are written from its encoding itself, which each write
 * holds until it is done or failed: subscribers that leave with parts
 * still being written (they never read) give every set's memory back.
 * With feed.memory at about four sets, ten sets each left unread by a new
 * subscriber that then closes still reach a reading subscriber whole, none
 * announced over a memory bound: an encoding kept by a write that never
 * finished would pass feed.memory within a few sets. */
static void test_leavers_give_memory_back(void **state) {
  const char *extra[] = {"--feed.memory=6m", "--feed.memory_per_address=6m",
                         NULL};
  start_ga(extra);
  la_client_t *c = subscriber(0);
  for (uint64_t tag = 1; tag <= 10; tag++) {
    la_client_t *gone = subscriber(0);
    la_traceset_t *t = send_whole(c, "leave", tag, tag == 1);
    CHECK(set_bytes(t) > 1000000, "the set is only %zu bytes", set_bytes(t));
    la_traceset_free(t);
    la_client_close(gone); /* parts of the set unread */
  }
  assert_int_equal(la_td_status_ll(T.g.d, "set_notices"), 0);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_dropped_for_slow_subscribers"),
                   0);
  la_client_close(c);
}

/* Frames wait for the thread pool within agents.ingest_memory: at its
 * minimum (64k; one LocalAgent's share, 16k, is less than one of these
 * 32 KB traces) the connection is not read after each frame until the
 * job holding it returns. Two sets sent back to back, RankStarts first,
 * still arrive whole: nothing lost, refused or reordered (a trace handled
 * before its rank's RankStart would be stored as an orphan). */
static void test_ingest_memory_bound(void **state) {
  const char *extra[] = {"--agents.ingest_memory=64k", NULL};
  start_ga(extra);
  la_client_t *c = subscriber(0);
  for (uint64_t tag = 1; tag <= 2; tag++) {
    la_traceset_free(send_whole(c, "bounded", tag, tag == 1));
  }
  assert_int_equal(la_td_status_ll(T.g.d, "traces_stored"), 2 * RANKS);
  assert_int_equal(la_td_status_ll(T.g.d, "traces_orphan"), 0);
  assert_int_equal(la_td_status_ll(T.g.d, "traces_invalid"), 0);
  la_client_close(c);
}

/* A set above a subscriber's la_client_set_max_set: told to the
 * GlobalAgent by the Subscribe, it sends a SetNotice instead (counted);
 * set after subscribing, the client notices by itself from the set's
 * head and skips its parts. Either way la_client_next returns LA_ELIMIT
 * naming the app, cycle, size and limit, and the next set arrives with
 * the loss counted. With a small stitch.publish_memory the set is spilled
 * (published from the store), counted. */
static void test_set_over_subscriber_bound(void **state) {
  const char *extra[] = {"--stitch.publish_memory=64k", NULL};
  start_ga(extra);
  la_client_t *told = subscriber(200 * 1024);
  la_client_t *self = subscriber(0);
  assert_int_equal(la_client_set_max_set(self, 200 * 1024), 0);
  assert_int_equal(la_client_set_max_set(self, 100), LA_EINVAL);
  send_set("big", RANKS, 5, 1);
  la_client_t *cs[2] = {told, self};
  for (int i = 0; i < 2; i++) {
    la_traceset_t *t = NULL;
    int rc = la_client_next(cs[i], WAIT_MS, &t);
    CHECK(rc == LA_ELIMIT, "subscriber %d: %s (%s), expected LA_ELIMIT", i,
          la_client_strerror(rc), la_client_error(cs[i]));
    assert_null(t);
    const char *app = NULL, *limit_name = NULL;
    uint64_t tag = 0, bytes = 0, limit = 0;
    assert_int_equal(
        la_client_notice(cs[i], &app, &tag, &bytes, &limit_name, &limit), 0);
    assert_string_equal(app, "big");
    assert_int_equal(tag, 5);
    CHECK(bytes > 5 * 262144, "set_bytes %llu", (unsigned long long)bytes);
    assert_string_equal(limit_name, "max_set_bytes");
    assert_int_equal(limit, 200 * 1024);
    CHECK(strstr(la_client_error(cs[i]), "big cycle 5") &&
              strstr(la_client_error(cs[i]), "max_set_bytes = 204800"),
          "error text: %s", la_client_error(cs[i]));
    print_message("subscriber %d: %s\n", i, la_client_error(cs[i]));
  }
  CHECK(la_td_wait_status(T.g.d, "set_notices", 1, WAIT_MS) == 0,
        "set_notices did not reach 1");
  assert_int_equal(la_td_status_ll(T.g.d, "set_notices"), 1);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_over_subscriber_max"), 1);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_spilled"), 1);
  /* the stream goes on: a small set arrives, the loss counted */
  send_set("small", 2, 1, 1);
  for (int i = 0; i < 2; i++) {
    la_traceset_t *t = next_set(cs[i]);
    assert_int_equal(la_client_notice(cs[i], NULL, NULL, NULL, NULL, NULL),
                     LA_ENOTFOUND);
    check_whole(t, 2, 1);
    assert_int_equal(la_traceset_dropped(t), 1);
    la_traceset_free(t);
  }
  la_client_close(told);
  la_client_close(self);
}

/* Sends app's set of cycle tag of nprocs ranks, rank r carrying T.r[r %
 * RANKS] (made for tag), without waiting for the Ack. */
static void send_wide(const char *app, uint32_t nprocs, uint64_t tag) {
  for (uint32_t r = 0; r < nprocs; r++)
    assert_int_equal(
        la_test_link_trace(&T.link, app, r, tag, &T.r[r % RANKS], NULL, 0), 0);
}

/* c's next set is app's of cycle tag, nprocs ranks, each rank the trace
 * sent (T.r[r % RANKS]). */
static void expect_wide(la_client_t *c, const char *app, uint32_t nprocs,
                        uint64_t tag) {
  la_traceset_t *t = next_set(c);
  CHECK(!strcmp(la_traceset_app_id(t), app) && la_traceset_cycle(t) == tag,
        "got %s cycle %llu, expected %s cycle %llu", la_traceset_app_id(t),
        (unsigned long long)la_traceset_cycle(t), app, (unsigned long long)tag);
  assert_int_equal(la_traceset_nprocs(t), nprocs);
  assert_true(la_traceset_complete(t));
  for (uint32_t r = 0; r < nprocs; r++) {
    const La__CompactTrace *ct = la__traceset_compact(t, r);
    const la_compact_result_t *x = &T.r[r % RANKS];
    CHECK(ct && ct->segments.len == x->len &&
              !memcmp(ct->segments.data, x->bytes, x->len),
          "%s cycle %llu rank %u: the trace received differs", app,
          (unsigned long long)tag, r);
  }
  la_traceset_free(t);
}

/* c's next is a SetNotice for app's set of cycle tag over max_set_bytes. */
static void expect_notice(la_client_t *c, const char *app, uint64_t tag) {
  la_traceset_t *t = NULL;
  int rc = la_client_next(c, WAIT_MS, &t);
  CHECK(rc == LA_ELIMIT, "%s cycle %llu: %s (%s), expected its notice", app,
        (unsigned long long)tag, la_client_strerror(rc), la_client_error(c));
  const char *napp = NULL, *limit_name = NULL;
  uint64_t ntag = 0;
  assert_int_equal(la_client_notice(c, &napp, &ntag, NULL, &limit_name, NULL),
                   0);
  CHECK(!strcmp(napp, app) && ntag == tag,
        "a notice for %s cycle %llu, expected %s cycle %llu", napp,
        (unsigned long long)ntag, app, (unsigned long long)tag);
  assert_string_equal(limit_name, "max_set_bytes");
}

/* Sets of many ranks are measured on the thread pool, after they took
 * their place in the subscribers' queues: a subscriber sees the sets in
 * the order they were published, and a set it will not get is announced
 * where the set would have come. Per cycle a wide set (300 ranks, about
 * 170 KB, measured on the pool) and a small one (2 ranks, measured at
 * once) close together, one commit apart at most: a subscriber bounded to
 * 64 KiB gets the wide set's notice then the small set, every cycle;
 * an unbounded one gets both sets whole, in that order. */
static void test_order_kept_while_measured(void **state) {
  T.n = 64;
  const char *extra[] = {"--feed.queue_bytes=4m", NULL};
  start_ga(extra); /* every set queued: the client reads after the last */
  la_client_t *bounded = subscriber(64 * 1024);
  la_client_t *all = subscriber(0);
  send_rank_starts("wide", 300);
  send_rank_starts("small", 2);
  for (uint64_t tag = 1; tag <= 3; tag++) {
    make_traces(tag);
    send_wide("wide", 300, tag);
    send_wide("small", 2, tag);
  }
  char why[300] = "";
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0, "%s",
        why);
  /* T.r holds cycle 3's traces: made again per cycle to compare */
  for (uint64_t tag = 1; tag <= 3; tag++) {
    make_traces(tag);
    expect_notice(bounded, "wide", tag);
    expect_wide(bounded, "small", 2, tag);
    expect_wide(all, "wide", 300, tag);
    expect_wide(all, "small", 2, tag);
  }
  assert_int_equal(la_td_status_ll(T.g.d, "set_notices"), 3);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_over_subscriber_max"), 3);
  la_client_close(bounded);
  la_client_close(all);
}

/* Sends Query{what, app_id (NULL: none), cycle_tag (0: none, the latest),
 * sets_version (0: none, as an old client)} on fd. */
static void send_query(int fd, const char *what, const char *app, uint64_t tag,
                       uint32_t sets_version) {
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)what;
  q.app_id = (char *)app;
  q.has_cycle_tag = tag != 0;
  q.cycle_tag = tag;
  q.has_feed_protocol = 1;
  q.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  q.has_sets_version = sets_version != 0;
  q.sets_version = sets_version;
  assert_int_equal(la_send_msg(fd, LA__MSG_TYPE__MSG_QUERY, &q.base, 5000), 0);
}

/* Receives one message on fd within max frame bytes: la_recv_msg's code
 * (the reason printed when it fails), *type and *m. */
static int recv_one(int fd, uint32_t max, uint16_t *type,
                    ProtobufCMessage **m) {
  char why[300] = "";
  int rc = la_recv_msg(fd, max, WAIT_MS, type, m, why, sizeof why);
  if (rc) print_message("receiving: %s\n", why);
  return rc;
}

/* An old subscriber (Subscribe without sets_version) gets whole TraceSet
 * frames for sets that fit, as before; a set over feed.queue_bytes is not
 * sent to it (it cannot take parts) but counted, and reported in its next
 * set; a new subscriber alongside gets that set whole. */
static void test_old_subscriber(void **state) {
  start_ga(NULL);
  int fd = la_tcp_connect("127.0.0.1", (uint16_t)la_td_port(T.g.d), 5000);
  assert_true(fd >= 0);
  La__Subscribe s = LA__SUBSCRIBE__INIT;
  s.app_id = "";
  assert_int_equal(la_send_msg(fd, LA__MSG_TYPE__MSG_SUBSCRIBE, &s.base, 5000),
                   0);
  send_query(fd, "apps", NULL, 0, 0); /* a round trip: the Subscribe is in */
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  char why[300] = "";
  assert_int_equal(
      la_recv_msg(fd, 1u << 20, WAIT_MS, &type, &m, why, sizeof why), 0);
  assert_int_equal(type, LA__MSG_TYPE__MSG_QUERY_REPLY);
  la_msg_free(m);
  la_client_t *c = subscriber(0);

  for (int step = 0; step < 3; step++) {
    /* a small set, a large one, a small one */
    const char *app = step == 1 ? "big" : "small";
    uint32_t nprocs = step == 1 ? RANKS : 2;
    uint64_t tag = (uint64_t)step + 1;
    send_set(app, nprocs, tag, step < 2);
    la_traceset_t *t = next_set(c);
    check_whole(t, nprocs, tag);
    la_traceset_free(t);
    if (step == 1) continue; /* nothing for the old one */
    int rc = la_recv_msg(fd, 1u << 20, WAIT_MS, &type, &m, why, sizeof why);
    CHECK(rc == 0, "old subscriber: %s", why);
    CHECK(type == LA__MSG_TYPE__MSG_TRACE_SET, "old subscriber got a %s",
          la_msg_name(type));
    rc = la_traceset_from_message((const La__TraceSet *)m, &t, why, sizeof why);
    la_msg_free(m);
    CHECK(rc == 0, "old subscriber's set: %s", why);
    check_whole(t, nprocs, tag);
    assert_int_equal(la_traceset_dropped(t), step == 2 ? 1 : 0);
    la_traceset_free(t);
  }
  assert_int_equal(la_td_status_ll(T.g.d, "sets_dropped_for_slow_subscribers"),
                   1);
  assert_int_equal(la_td_status_ll(T.g.d, "set_notices"), 0);
  close(fd);
  la_client_close(c);
}

/* Sends RankEnd of app's rank on the hand-played link and waits for its
 * Ack. */
static void send_rank_end(const char *app, uint32_t rank) {
  La__RankEnd e = LA__RANK_END__INIT;
  e.seq = ++T.link.seq;
  e.app_id = (char *)app;
  e.rank = rank;
  e.reason = "finalize";
  assert_int_equal(
      la_secure_send_msg(T.link.fd, &T.link.sec, LA__MSG_TYPE__MSG_RANK_END,
                         &e.base, 5000),
      0);
  char why[300] = "";
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0, "%s",
        why);
}

/* With stitch.max_apps = 2, a third running application is not stitched:
 * its messages are stored and acknowledged, the refusal is logged naming
 * the application and the setting, and counted (apps_refused), and the
 * warnings about its traces are rate-limited; once one of the two ended,
 * the third is stitched and its sets published. */
static void test_app_list_bounded(void **state) {
  const char *extra[] = {"--stitch.max_apps=2", NULL};
  start_ga(extra);
  la_client_t *c = subscriber(0);
  send_set("app1", 1, 1, 1);
  send_set("app2", 1, 1, 1);
  for (int i = 0; i < 2; i++) la_traceset_free(next_set(c));
  assert_int_equal(la_td_status_ll(T.g.d, "apps_running"), 2);
  send_set("app3", 1, 1, 1);
  CHECK(la_td_wait_status(T.g.d, "apps_refused", 1, WAIT_MS) == 0,
        "apps_refused did not grow");
  CHECK(la_td_log_has(T.g.d,
                      "application app3 not stitched: 2 applications "
                      "running (stitch.max_apps = 2)"),
        "no log line for the refusal");
  /* a refused application of many ranks: each of its traces counted, the
   * warning about them logged at most once a second, not once a trace */
  long long orphans = la_td_status_ll(T.g.d, "traces_orphan");
  la_td_log_mark(T.g.d);
  send_set("app4", 40, 1, 1);
  CHECK(la_td_wait_status(T.g.d, "traces_orphan", orphans + 40, WAIT_MS) == 0,
        "app4's 40 traces not counted as not stitched");
  int lines = la_td_log_count(T.g.d, "no RankStart known");
  CHECK(lines <= 2, "%d log lines for 40 traces of a refused application",
        lines);
  la_traceset_t *t = NULL;
  assert_int_equal(la_client_next(c, 300, &t), LA_ETIMEDOUT);
  assert_int_equal(la_td_status_ll(T.g.d, "apps_running"), 2);
  send_rank_end("app1", 0); /* app1 ended: a slot is free */
  assert_int_equal(la_td_status_ll(T.g.d, "apps_running"), 1);
  send_set("app3", 1, 2, 0);
  t = next_set(c);
  assert_string_equal(la_traceset_app_id(t), "app3");
  check_whole(t, 1, 2);
  la_traceset_free(t);
  assert_int_equal(la_td_status_ll(T.g.d, "apps_running"), 2);
  la_client_close(c);
}

/* Sends Query "traceset" of app's cycle tag on fd as an old client does
 * (no sets_version) and receives the reply within max frame bytes:
 * returns la_recv_msg's code, with *reply (NULL on failure). */
static int old_query(int fd, const char *app, uint64_t tag, uint32_t max,
                     La__QueryReply **reply) {
  send_query(fd, "traceset", app, tag, 0);
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  *reply = NULL;
  int rc = recv_one(fd, max, &type, &m);
  if (rc) return rc;
  CHECK(type == LA__MSG_TYPE__MSG_QUERY_REPLY, "old client got a %s",
        la_msg_name(type));
  *reply = (La__QueryReply *)m;
  return 0;
}

/* Sets closed while no subscriber is connected are published to nobody
 * (counted in sets_published, not read back): their traces held for
 * publishing are let go (sets_held and held_bytes back to 0), the sets
 * are stored whole (la_client_get gives every rank's trace as sent), and
 * a subscriber that connects afterwards gets the next set whole; one that
 * subscribes to another application only gets nothing of this one. */
static void test_sets_without_subscriber(void **state) {
  start_ga(NULL);
  T.n = 500; /* small sets: this is about who reads them */
  for (uint64_t tag = 1; tag <= 3; tag++)
    send_set("nobody", RANKS, tag, tag == 1);
  CHECK(la_td_wait_status(T.g.d, "sets_published", 3, WAIT_MS) == 0,
        "sets_published is %lld", la_td_status_ll(T.g.d, "sets_published"));
  CHECK(la_td_wait_status_at_most(T.g.d, "held_bytes", 0, WAIT_MS) == 0,
        "held_bytes is %lld", la_td_status_ll(T.g.d, "held_bytes"));
  assert_int_equal(la_td_status_ll(T.g.d, "sets_held"), 0);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_unpublished"), 0);
  la_client_t *c = NULL;
  CHECK(la_client_connect(T.g.feed_addr, 5000, &c) == 0, "connect");
  for (uint64_t tag = 1; tag <= 3; tag++) {
    la_traceset_t *q = NULL;
    int rc = la_client_get(c, "nobody", tag, &q);
    CHECK(rc == 0, "la_client_get: %s (%s)", la_client_strerror(rc),
          la_client_error(c));
    make_traces(tag); /* T.r: what was sent for this cycle */
    check_whole(q, RANKS, tag);
    la_traceset_free(q);
  }
  /* a subscriber of another application: not a taker of these */
  la_client_t *other = NULL;
  CHECK(la_client_connect(T.g.feed_addr, 5000, &other) == 0, "connect");
  assert_int_equal(la_client_subscribe(other, "elsewhere", 0), 0);
  la_client_rows_t *rows = NULL; /* a round trip: the Subscribe is in */
  assert_int_equal(la_client_list(other, "apps", NULL, &rows), 0);
  la_client_rows_free(rows);
  send_set("nobody", RANKS, 4, 0);
  CHECK(la_td_wait_status(T.g.d, "sets_published", 4, WAIT_MS) == 0,
        "sets_published is %lld", la_td_status_ll(T.g.d, "sets_published"));
  la_client_close(c);
  c = subscriber(0);
  la_traceset_t *t = send_whole(c, "nobody", 5, 0);
  la_traceset_free(t);
  la_traceset_t *none = NULL;
  assert_int_equal(la_client_next(other, 200, &none), LA_ETIMEDOUT);
  assert_null(none);
  assert_int_equal(la_td_status_ll(T.g.d, "sets_published"), 5);
  la_client_close(other);
  la_client_close(c);
}

/* A subscriber that asks for a set by query while a live set streams to
 * it in parts gets both whole: the queried one from la_client_get and
 * la_client_latest, the live one from la_client_next. A bound below the
 * set makes the query fail with LA_ELIMIT naming la_client_set_max_set's
 * value, not announced as a lost set, and the connection goes on. An old
 * client gets the same set inside one QueryReply. */
static void test_query_in_parts_beside_live_sets(void **state) {
  start_ga(NULL);
  la_client_t *c = subscriber(0);
  send_set("big", RANKS, 5, 1);
  la_traceset_t *q = NULL;
  int rc = la_client_get(c, "big", 5, &q);
  CHECK(rc == 0, "la_client_get: %s (%s)", la_client_strerror(rc),
        la_client_error(c));
  check_whole(q, RANKS, 5);
  assert_int_equal(la_traceset_dropped(q), 0);
  la_traceset_free(q);
  la_traceset_t *t = next_set(c); /* the live set, kept meanwhile */
  check_whole(t, RANKS, 5);
  assert_int_equal(la_traceset_dropped(t), 0);
  CHECK(set_bytes(t) > 5 * 262144, "the set is only %zu bytes", set_bytes(t));
  la_traceset_free(t);

  assert_int_equal(la_client_set_max_set(c, 200 * 1024), 0);
  rc = la_client_latest(c, "big", &q);
  CHECK(rc == LA_ELIMIT, "la_client_latest: %s (%s), expected LA_ELIMIT",
        la_client_strerror(rc), la_client_error(c));
  assert_null(q);
  CHECK(strstr(la_client_error(c), "big cycle 5") &&
            strstr(la_client_error(c), "max_set_bytes = 204800"),
        "error text: %s", la_client_error(c));
  print_message("%s\n", la_client_error(c));
  assert_int_equal(la_client_set_max_set(c, LA_CLIENT_DEFAULT_MAX_SET), 0);
  send_set("big", RANKS, 6, 0);
  rc = la_client_latest(c, "big", &q);
  CHECK(rc == 0, "la_client_latest: %s (%s)", la_client_strerror(rc),
        la_client_error(c));
  check_whole(q, RANKS, 6);
  la_traceset_free(q);
  t = next_set(c);
  check_whole(t, RANKS, 6);
  assert_int_equal(la_traceset_dropped(t), 0);
  la_traceset_free(t);
  assert_int_equal(la_td_status_ll(T.g.d, "set_notices"), 0);
  la_client_close(c);

  int fd = la_tcp_connect("127.0.0.1", (uint16_t)la_td_port(T.g.d), 5000);
  assert_true(fd >= 0);
  La__QueryReply *r = NULL;
  assert_int_equal(old_query(fd, "big", 6, 4u << 20, &r), 0);
  CHECK(r->status == 0 && r->n_sets == 1 && !r->has_set_bytes,
        "old client: status %d, %zu sets", r->status, r->n_sets);
  rc = la_traceset_from_message(r->sets[0], &t, NULL, 0);
  la_msg_free(&r->base);
  assert_int_equal(rc, 0);
  check_whole(t, RANKS, 6);
  la_traceset_free(t);
  close(fd);
}

/* Runs lactl export of app's cycle tag from the GlobalAgent as METIS
 * weights into a file and checks each line against
 * la_traceset_metis_weights of t (the same set fetched by the client). */
static void check_lactl_export(const la_traceset_t *t, const char *app,
                               uint64_t tag) {
  char lactl[512], path[600], cyc[24], out[4096] = "";
  CHECK(la_td_find_bin("lactl", lactl, sizeof lactl) == 0, "no lactl");
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/bigset-%d.metis", dir && *dir ? dir : "/tmp",
           (int)getpid());
  snprintf(cyc, sizeof cyc, "%llu", (unsigned long long)tag);
  const char *argv[] = {lactl,      "export",      app,  cyc,
                        "--format", "metis",       "-o", path,
                        "--global", T.g.feed_addr, NULL};
  int st = la_td_run(argv, NULL, 300000, out, sizeof out);
  CHECK(st == 0, "lactl export exited %d: %s", st, out);
  uint64_t n = la_traceset_elements(t);
  int64_t *w = malloc(n * sizeof *w);
  assert_non_null(w);
  assert_int_equal(la_traceset_metis_weights(t, w, 1000, NULL), 0);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "lactl export wrote no %s", path);
  char line[64];
  uint64_t i = 0;
  while (fgets(line, sizeof line, f)) {
    CHECK(i < n && strtoll(line, NULL, 10) == w[i],
          "line %llu of the export: %s (expected %lld of %llu)",
          (unsigned long long)i + 1, line, i < n ? (long long)w[i] : -1LL,
          (unsigned long long)n);
    i++;
  }
  fclose(f);
  unlink(path);
  free(w);
  CHECK(i == n, "lactl export wrote %llu lines for %llu elements",
        (unsigned long long)i, (unsigned long long)n);
}

/* Connects a libla_client (*c) and returns "huge" cycle 1 as
 * la_client_get gives it, which must succeed. */
static la_traceset_t *get_huge(la_client_t **c) {
  CHECK(la_client_connect(T.g.feed_addr, 120000, c) == 0, "connect");
  la_traceset_t *t = NULL;
  int rc = la_client_get(*c, "huge", 1, &t);
  CHECK(rc == 0, "la_client_get: %s (%s)", la_client_strerror(rc),
        la_client_error(*c));
  return t;
}

/* A set of more than 64 MiB (LA_CLIENT_DEFAULT_MAX_FRAME: it can never be
 * one frame to a client) and 270 times feed.queue_bytes, asked by
 * la_client_get and by la_client_latest, arrives whole, every rank's
 * trace byte for byte; a client whose la_client_set_max_set is below it
 * gets LA_ELIMIT naming that limit and its connection goes on; a second
 * query before the first set is read is refused naming feed.queue_bytes;
 * lactl export of it from the GlobalAgent writes every element's weight; an
 * old client gets one QueryReply frame, above its frame limit
 * (LA_EMSGSIZE), as before. */
static void test_query_set_over_frame_limit(void **state) {
  start_ga(NULL);
  T.n = 180000; /* 48 ranks of about 1.4 MB: 69 MB */
  send_set("huge", RANKS, 1, 1);
  la_client_t *c = NULL;
  la_traceset_t *t = get_huge(&c);
  check_whole(t, RANKS, 1);
  size_t n = set_bytes(t);
  print_message("la_client_get: a set of %zu bytes arrived whole\n", n);
  CHECK(n > LA_CLIENT_DEFAULT_MAX_FRAME, "the set is only %zu bytes", n);
  la_traceset_free(t);
  int rc = la_client_latest(c, "huge", &t);
  CHECK(rc == 0, "la_client_latest: %s (%s)", la_client_strerror(rc),
        la_client_error(c));
  check_whole(t, RANKS, 1);
  assert_int_equal(set_bytes(t), n);

  la_traceset_t *u = NULL;
  assert_int_equal(la_client_set_max_set(c, 1 << 20), 0);
  rc = la_client_get(c, "huge", 1, &u);
  CHECK(rc == LA_ELIMIT, "la_client_get: %s (%s), expected LA_ELIMIT",
        la_client_strerror(rc), la_client_error(c));
  assert_null(u);
  CHECK(strstr(la_client_error(c), "max_set_bytes = 1048576"), "error text: %s",
        la_client_error(c));
  print_message("%s\n", la_client_error(c));
  la_client_rows_t *rows = NULL; /* the connection goes on */
  assert_int_equal(la_client_list(c, "cycles", "huge", &rows), 0);
  assert_int_equal(la_client_rows_count(rows), 1);
  la_client_rows_free(rows);
  la_client_close(c);

  /* a client of sets_version 2 asks twice before reading: the second set
   * would pass feed.queue_bytes on top of the first, which the socket
   * cannot have taken yet: refused, naming that limit; the first comes
   * whole */
  int fd = la_tcp_connect("127.0.0.1", (uint16_t)la_td_port(T.g.d), 5000);
  assert_true(fd >= 0);
  for (int i = 0; i < 2; i++)
    send_query(fd, "traceset", "huge", 1, LA_FEED_SETS_VERSION);
  int replies = 0, refused = 0;
  uint64_t got = 0, announced = 0;
  while (replies < 2 || got < announced) {
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    assert_int_equal(recv_one(fd, 1u << 20, &type, &m), 0);
    if (type == LA__MSG_TYPE__MSG_QUERY_REPLY) {
      La__QueryReply *r = (La__QueryReply *)m;
      replies++;
      if (r->has_set_bytes) announced += r->set_bytes;
      if (r->status == LA_ELIMIT) {
        refused++;
        CHECK(strstr(r->message, "feed.queue_bytes = 262144"), "reply: %s",
              r->message);
        print_message("second query: %s\n", r->message);
      }
    } else if (type == LA__MSG_TYPE__MSG_TRACE_SET_PART) {
      got += ((La__TraceSetPart *)m)->data.len;
    } else {
      CHECK(type == LA__MSG_TYPE__MSG_TRACE_SET_HEAD, "got a %s",
            la_msg_name(type));
      CHECK(((La__TraceSetHead *)m)->query, "a head not marked query");
    }
    la_msg_free(m);
  }
  assert_int_equal(refused, 1);
  assert_int_equal(got, announced);
  close(fd);

  check_lactl_export(t, "huge", 1);
  la_traceset_free(t);

  fd = la_tcp_connect("127.0.0.1", (uint16_t)la_td_port(T.g.d), 5000);
  assert_true(fd >= 0);
  La__QueryReply *r = NULL;
  assert_int_equal(old_query(fd, "huge", 1, LA_CLIENT_DEFAULT_MAX_FRAME, &r),
                   LA_EMSGSIZE);
  close(fd);
}

/* Sends a StatusRequest on fd and returns the value of counter key in
 * the reply (-1: no such row, or no reply). */
static long long raw_status(int fd, const char *key) {
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  assert_int_equal(
      la_send_msg(fd, LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base, 5000), 0);
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  if (recv_one(fd, 4u << 20, &type, &m) != 0) return -1;
  long long v = -1;
  if (type == LA__MSG_TYPE__MSG_STATUS_REPLY) {
    const La__StatusReply *r = (const La__StatusReply *)m;
    for (size_t i = 0; i < r->n_entries; i++)
      if (!strcmp(r->entries[i]->key, key))
        v = strtoll(r->entries[i]->value, NULL, 10);
  }
  la_msg_free(m);
  return v;
}

/* Whether fd has something to read now. */
static int readable(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, 0) == 1;
}

/* A client of its own on the feed port. */
static int feed_fd(void) {
  int fd = la_tcp_connect("127.0.0.1", (uint16_t)la_td_port(T.g.d), 5000);
  assert_true(fd >= 0);
  return fd;
}

/* Stores "huge" cycle 1: 48 ranks of 100,000 elements, about 38 MB. */
static void store_large_set(void) {
  T.n = 100000;
  send_set("huge", RANKS, 1, 1);
  T.n = 0;
}

/* Asks "huge" cycle 1 on a (sets_version 2), then asks for the status on
 * b until the GlobalAgent counted that query: each status reply came while
 * the query was being served. Returns how many status replies that took. */
static int ask_large_set(int a, int b) {
  long long q0 = raw_status(b, "queries");
  assert_true(q0 >= 0);
  send_query(a, "traceset", "huge", 1, LA_FEED_SETS_VERSION);
  int n = 0;
  long long q;
  while ((q = raw_status(b, "queries")) >= 0 && q < q0 + 1) n++;
  CHECK(q == q0 + 1, "status: queries %lld, expected %lld", q, q0 + 1);
  return n;
}

/* A frame of a set in parts: a part's bytes added to *got; 1 when it was
 * a part or a head, else 0. */
static int set_frame(uint16_t type, const ProtobufCMessage *m, uint64_t *got) {
  if (type == LA__MSG_TYPE__MSG_TRACE_SET_PART)
    *got += ((const La__TraceSetPart *)m)->data.len;
  return type == LA__MSG_TYPE__MSG_TRACE_SET_PART ||
         type == LA__MSG_TYPE__MSG_TRACE_SET_HEAD;
}

/* Reads fd's answer to a query of a set in parts to its end: the
 * QueryReply, the head and every part; returns the set's bytes. */
static uint64_t read_set_answer(int fd) {
  int replied = 0;
  uint64_t got = 0, announced = 0;
  while (!replied || got < announced) {
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    assert_int_equal(recv_one(fd, 1u << 20, &type, &m), 0);
    if (!set_frame(type, m, &got)) {
      CHECK(type == LA__MSG_TYPE__MSG_QUERY_REPLY, "got a %s",
            la_msg_name(type));
      La__QueryReply *r = (La__QueryReply *)m;
      CHECK(r->status == 0 && r->has_set_bytes, "reply: %d %s", r->status,
            r->message ? r->message : "");
      announced = r->set_bytes;
      replied = 1;
    }
    la_msg_free(m);
  }
  assert_int_equal(got, announced);
  return announced;
}

/* While a query of a 38 MB stored set is being served to one client, the
 * GlobalAgent answers another client's status requests and stores and
 * acknowledges a LocalAgent's message: both happen before the set's
 * QueryReply arrives (on the loop thread, reading and encoding the set
 * would have answered it first). The set then arrives whole. */
static void test_query_does_not_stall(void **state) {
  start_ga(NULL);
  store_large_set();
  int a = feed_fd(), b = feed_fd();
  int n = ask_large_set(a, b);
  CHECK(!readable(a),
        "the set's reply arrived before a status request sent after it was "
        "answered");
  /* the job shows in the status while it runs (its reply follows its end) */
  long long running = raw_status(b, "feed_jobs_running");
  CHECK(running == 1 || readable(a),
        "feed_jobs_running %lld while the set was being read", running);
  /* a LocalAgent's message is stored and acknowledged meanwhile */
  assert_int_equal(
      la_test_link_rank_start(&T.link, "bignode", "other", 0, 1, 10), 0);
  char why[300] = "";
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0, "%s",
        why);
  CHECK(!readable(a),
        "the set's reply arrived before a RankStart sent after it was "
        "acknowledged");
  print_message("%d status replies and an Ack before the set's reply\n", n + 1);
  uint64_t bytes = read_set_answer(a);
  CHECK(bytes > 30u << 20, "the set is only %llu bytes",
        (unsigned long long)bytes);
  close(a);
  close(b);
}

/* Subscribes fd (sets in parts, every application, live) and returns once
 * the GlobalAgent took it (a status round trip on fd). */
static void raw_subscribe(int fd) {
  La__Subscribe m = LA__SUBSCRIBE__INIT;
  m.has_sets_version = 1;
  m.sets_version = LA_FEED_SETS_VERSION;
  assert_int_equal(la_send_msg(fd, LA__MSG_TYPE__MSG_SUBSCRIBE, &m.base, 5000),
                   0);
  assert_true(raw_status(fd, "commits") >= 0);
}

/* Reads one live set in parts on fd (its head, then every part); returns
 * its cycle tag and puts its bytes in *bytes. */
static uint64_t read_live_set(int fd, uint64_t *bytes) {
  uint64_t got = 0, announced = 0, tag = 0;
  int head = 0;
  while (!head || got < announced) {
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    assert_int_equal(recv_one(fd, 1u << 20, &type, &m), 0);
    CHECK(set_frame(type, m, &got), "got a %s", la_msg_name(type));
    if (type == LA__MSG_TYPE__MSG_TRACE_SET_HEAD) {
      const La__TraceSetHead *h = (const La__TraceSetHead *)m;
      CHECK(!head, "a second head before the set's last part");
      head = 1;
      announced = h->set_bytes;
      tag = h->cycle_tag;
    }
    la_msg_free(m);
  }
  *bytes = got;
  return tag;
}

/* A 38 MB set that closes is encoded for its subscribers on the thread
 * pool: a LocalAgent's message sent once the set's last trace was
 * acknowledged is stored and acknowledged before the set's first frame
 * reaches the subscriber (on the loop thread, encoding the set would have
 * sent it first). Sets closed back to back then arrive whole and in
 * order. */
static void test_publish_does_not_stall(void **state) {
  const char *ex[] = {"--feed.queue_bytes=512M", NULL}; /* keeps every set */
  start_ga(ex);
  int a = feed_fd();
  raw_subscribe(a);
  T.n = 100000;
  make_traces(1);
  send_rank_starts("huge", RANKS);
  for (uint32_t r = 0; r + 1 < RANKS; r++)
    assert_int_equal(
        la_test_link_trace(&T.link, "huge", r, 1, &T.r[r], NULL, 0), 0);
  char why[300] = "";
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0, "%s",
        why);
  CHECK(!readable(a), "a set arrived before its last trace");
  assert_int_equal(la_test_link_trace(&T.link, "huge", RANKS - 1, 1,
                                      &T.r[RANKS - 1], NULL, 0),
                   0);
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0, "%s",
        why); /* the set is committed and being published */
  assert_int_equal(
      la_test_link_rank_start(&T.link, "bignode", "other", 0, 1, 10), 0);
  CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0, "%s",
        why);
  CHECK(!readable(a),
        "the set reached its subscriber before a RankStart sent after its "
        "last trace was acknowledged");
  int b = feed_fd(); /* the encoding shows in the status while it runs */
  long long encoding = raw_status(b, "sets_encoding");
  CHECK(encoding == 1 || readable(a), "sets_encoding %lld while encoding",
        encoding);
  print_message("sets_encoding %lld after the RankStart's Ack\n", encoding);
  uint64_t bytes = 0;
  assert_int_equal(read_live_set(a, &bytes), 1);
  CHECK(bytes > 30u << 20, "the set is only %llu bytes",
        (unsigned long long)bytes);
  /* sets closed back to back (several in one commit): in order, whole */
  T.n = 0;
  make_traces(2);
  send_rank_starts("small", RANKS);
  for (uint64_t tag = 2; tag <= 5; tag++) {
    for (uint32_t r = 0; r < RANKS; r++)
      assert_int_equal(
          la_test_link_trace(&T.link, "small", r, tag, &T.r[r], NULL, 0), 0);
    if (tag >= 4)
      CHECK(la_test_link_wait_acked(&T.link, WAIT_MS, why, sizeof why) == 0,
            "%s", why);
  }
  for (uint64_t tag = 2; tag <= 5; tag++) {
    uint64_t got = read_live_set(a, &bytes);
    CHECK(got == tag, "set of cycle %llu arrived where %llu was due",
          (unsigned long long)got, (unsigned long long)tag);
    CHECK(bytes > 1u << 20, "set %llu is only %llu bytes",
          (unsigned long long)tag, (unsigned long long)bytes);
  }
  assert_int_equal(raw_status(b, "sets_encoding"), 0);
  close(a);
  close(b);
}

/* With feed.query_jobs = 1, a second client's query of a stored set waits
 * for the first one's job: the status shows one job running and one
 * waiting while neither reply came, both sets then arrive whole, and the
 * gauges go back to 0. */
static void test_query_waits_for_a_job(void **state) {
  const char *ex[] = {"--feed.query_jobs=1", NULL};
  start_ga(ex);
  store_large_set();
  int a = feed_fd(), c = feed_fd(), b = feed_fd();
  ask_large_set(a, b);
  ask_large_set(c, b);
  long long running = raw_status(b, "feed_jobs_running");
  long long waiting = raw_status(b, "feed_jobs_waiting");
  CHECK((running == 1 && waiting == 1) || readable(a),
        "feed_jobs_running %lld, feed_jobs_waiting %lld with two queries in "
        "flight and one job allowed",
        running, waiting);
  read_set_answer(a);
  read_set_answer(c);
  running = raw_status(b, "feed_jobs_running");
  waiting = raw_status(b, "feed_jobs_waiting");
  CHECK(running == 0 && waiting == 0,
        "feed_jobs_running %lld, feed_jobs_waiting %lld after both answers",
        running, waiting);
  close(a);
  close(b);
  close(c);
}

/* Requests pipelined on one connection are answered in order: a set
 * asked in parts, then the application list, then the status: the set's
 * QueryReply first, then the list's, then the StatusReply (the set's
 * parts may come between), and the set whole. */
static void test_pipelined_in_order(void **state) {
  start_ga(NULL);
  store_large_set();
  int a = feed_fd();
  send_query(a, "traceset", "huge", 1, LA_FEED_SETS_VERSION);
  send_query(a, "apps", NULL, 0, 0);
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  assert_int_equal(
      la_send_msg(a, LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base, 5000), 0);
  int step = 0; /* 0: set's reply, 1: list's, 2: status, 3: done */
  uint64_t got = 0, announced = 0;
  while (step < 3 || got < announced) {
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    assert_int_equal(recv_one(a, 4u << 20, &type, &m), 0);
    if (set_frame(type, m, &got)) {
      /* parts may come between the replies */
    } else if (type == LA__MSG_TYPE__MSG_QUERY_REPLY) {
      La__QueryReply *r = (La__QueryReply *)m;
      CHECK(step < 2, "a QueryReply after the StatusReply");
      if (step == 0) {
        CHECK(r->status == 0 && r->has_set_bytes && !r->apps,
              "first reply: status %d, set_bytes %d, apps %p", r->status,
              r->has_set_bytes, (void *)r->apps);
        announced = r->set_bytes;
      } else {
        CHECK(r->status == 0 && r->apps && !r->has_set_bytes,
              "second reply: not the application list");
      }
      step++;
    } else if (type == LA__MSG_TYPE__MSG_STATUS_REPLY) {
      CHECK(step == 2, "the StatusReply came before %s",
            step == 0 ? "both QueryReplies" : "the list's QueryReply");
      step++;
    } else {
      CHECK(0, "got a %s", la_msg_name(type));
    }
    la_msg_free(m);
  }
  assert_int_equal(got, announced);
  close(a);
}

/* A client that disconnects while its set is being read leaves the
 * GlobalAgent healthy: the status answers, and another client then gets
 * the set whole (its sanitized build: no leak, no race, la_td_free). A
 * SIGTERM while a set is being read: the daemon exits 0. */
static void test_leave_while_served(void **state) {
  start_ga(NULL);
  store_large_set();
  int a = feed_fd(), b = feed_fd();
  ask_large_set(a, b);
  close(a);
  assert_true(raw_status(b, "queries") >= 1);
  la_client_t *c = NULL;
  la_traceset_t *t = get_huge(&c);
  assert_int_equal(la_traceset_nprocs(t), RANKS);
  assert_true(la_traceset_complete(t));
  la_traceset_free(t);
  la_client_close(c);

  a = feed_fd();
  ask_large_set(a, b);
  int st = la_td_stop(T.g.d, 60000);
  CHECK(st == 0, "la-globalagent exited %d on SIGTERM while reading a set", st);
  close(a);
  close(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_large_set_arrives_whole, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_leavers_give_memory_back, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ingest_memory_bound, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_set_over_subscriber_bound, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_old_subscriber, setup, teardown),
      cmocka_unit_test_setup_teardown(test_app_list_bounded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sets_without_subscriber, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_query_in_parts_beside_live_sets,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_query_set_over_frame_limit, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_query_does_not_stall, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_pipelined_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_publish_does_not_stall, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_query_waits_for_a_job, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_leave_while_served, setup, teardown),
      cmocka_unit_test_setup_teardown(test_order_kept_while_measured, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
