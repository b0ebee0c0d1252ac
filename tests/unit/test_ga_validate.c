/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ga_validate.c: the real la-globalagent refuses compact traces that
 * would make a Trace-Set unreadable, and the rest of the set stays readable;
 * a pieced trace (one value per box, docs/compaction.md) goes through its
 * checks, store and client as any other, a lying geometry refused.
 *
 * The GlobalAgent runs as a child process (tests/support/la_test_daemon.h)
 * with its store, secret and log in a temporary directory. The test plays an
 * authenticated LocalAgent by hand (la_sockio + la_auth: Hello, Challenge,
 * Auth, then RankStart and CompactTrace frames), because a real LocalAgent
 * never sends a corrupt encoding. Assertions are on what users see: the
 * Trace-Set through libla_client, `lactl status` rows, the daemon's log and
 * the Acks the agent receives. Every wait is bounded and waits on an event.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_auth.h"
#include "la_secure_io.h"
#include "la_test_link.h"
#include "la_trace_msg.h"
#include "la_client.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_compact_internal.h"
#include "la_compact_pieces.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_series.h"
#include "la_test_stack.h"

#define WAIT_MS 15000

static struct {
  la_test_daemon_t *ga;
  char key[600], db[600], agents_pf[600], feed_pf[600];
  uint16_t agents_port, feed_port;
  char feed_addr[64];
} T;

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  T.ga = la_td_new("la-globalagent");
  if (!T.ga) return 0;
  if (la_ts_ga_files(T.ga, sizeof T.key, T.key, T.db, T.agents_pf, T.feed_pf) !=
      0)
    return -1;
  return 0;
}

static int teardown(void **state) {
  la_td_free(T.ga);
  memset(&T, 0, sizeof T);
  return 0;
}

#define CHECK(cond, ...) \
  LA_TD_CHECK(la_td_print_log_tail(T.ga, 3000), cond, __VA_ARGS__)

static uint16_t read_port_file(const char *path) {
  int p = la_td_read_port(path, WAIT_MS);
  CHECK(p > 0, "no port in %s", path);
  return (uint16_t)p;
}

static void start_ga(void) {
  if (!T.ga) {
    print_message("skip: la-globalagent not built\n");
    skip();
  }
  la_td_argv_t a;
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agents.listen=127.0.0.1:0");
  la_td_argv_add(&a, "--feed.listen=127.0.0.1:0");
  la_ts_ga_args(&a, T.agents_pf, T.feed_pf, T.db, T.key);
  la_td_argv_add(&a, "--stitch.timeout=60s");
  la_td_argv_add(&a, "--log.level=debug");
  int port = la_td_start(T.ga, a.v, T.feed_pf, WAIT_MS);
  CHECK(port > 0, "la-globalagent did not start");
  T.feed_port = (uint16_t)port;
  T.agents_port = read_port_file(T.agents_pf);
  snprintf(T.feed_addr, sizeof T.feed_addr, "127.0.0.1:%u", T.feed_port);
}

/* ------------------------------------------- a LocalAgent played by hand */

typedef la_test_link_t fake_t; /* la_test_link.h */

static void fake_connect(fake_t *f, const char *host) {
  int32_t status = -1;
  char why[300] = "";
  int rc = la_test_link_open(f, T.agents_port, T.key, host, WAIT_MS, &status,
                             why, sizeof why);
  CHECK(rc == 0 && status == 0, "handshake: %s", why);
}

static void fake_rank_start(fake_t *f, const char *app, uint32_t rank,
                            uint32_t nprocs, uint64_t n) {
  assert_int_equal(la_test_link_rank_start(f, "fakenode", app, rank, nprocs, n),
                   0);
}

/* Sends a trace whose encoding is bytes[0..len) but whose message fields
 * come from r (n_elements, stats, mode). */
static void fake_trace_bytes(fake_t *f, const char *app, uint32_t rank,
                             uint64_t tag, const la_compact_result_t *r,
                             const uint8_t *bytes, size_t len) {
  assert_int_equal(la_test_link_trace(f, app, rank, tag, r, bytes, len), 0);
}

static void fake_trace(fake_t *f, const char *app, uint32_t rank, uint64_t tag,
                       const la_compact_result_t *r) {
  fake_trace_bytes(f, app, rank, tag, r, r->bytes, r->len);
}

/* Reads Acks until everything sent is acknowledged: a refused trace must be
 * acknowledged too, or the LocalAgent would resend it forever. */
static void fake_wait_acked(fake_t *f) {
  char why[300] = "";
  CHECK(la_test_link_wait_acked(f, WAIT_MS, why, sizeof why) == 0, "%s", why);
}

static void series(double *x, size_t n, double k) {
  for (size_t i = 0; i < n; i++) x[i] = k + (double)(i % 17) * 0.5;
}

/* The set of (app, cycle) as a client gets it; fails when unreadable. */
static la_traceset_t *get_set(const char *app, uint64_t tag) {
  la_client_t *c = NULL;
  CHECK(la_client_connect(T.feed_addr, 5000, &c) == 0, "client connect");
  la_traceset_t *t = NULL;
  int rc = la_client_get(c, app, tag, &t);
  CHECK(rc == 0, "la_client_get %s cycle %llu: %s (%s)", app,
        (unsigned long long)tag, la_client_strerror(rc), la_client_error(c));
  la_client_close(c);
  return t;
}

/* Cycle tag of rank 0 of app (n elements) with the encodings m
 * (measured) and r (robust), their claimed statistics as alter (may be
 * NULL) changes them for the tag. */
static void send_trace(fake_t *f, const char *app, uint64_t tag, uint64_t n,
                       const la_compact_result_t *m,
                       const la_compact_result_t *r,
                       void (*alter)(uint64_t tag, La__SeriesStats *st,
                                     La__SeriesStats *rst)) {
  La__SeriesStats st = LA__SERIES_STATS__INIT, rst = LA__SERIES_STATS__INIT;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  la_trace_msg_fill(&t, &st, NULL, m);
  la_trace_msg_robust(&t, &rst, r);
  if (alter) alter(tag, &st, &rst);
  t.app_id = (char *)app;
  t.rank = 0;
  t.cycle_tag = tag;
  t.n_elements = n;
  assert_int_equal(la_test_link_send_trace(f, &t), 0);
}

/* test_claimed_stats_checked's lies, by cycle. */
static void lie_sumapp(uint64_t tag, La__SeriesStats *st,
                       La__SeriesStats *rst) {
  if (tag == 0) st->sum *= 2;
  if (tag == 1) st->min = st->max + 1;
  if (tag == 2) rst->sum += 0.5 * rst->sum;
  if (tag == 3) st->max += 1;
}

/* A corrupt encoding (one bit flipped: checksum mismatch), a truncated one
 * and one whose element count differs from the rank's RankStart are refused,
 * logged with the LocalAgent and counted; the agent gets its Acks; the set
 * of the good ranks stays readable and lists the refused ranks missing. */
static void test_invalid_traces_refused(void **state) {
  start_ga();
  enum { N = 1000 };
  static double x[N], y[N / 2];
  la_compact_result_t good, bad, half;
  series(x, N, 3);
  series(y, N / 2, 5);
  assert_int_equal(la_compact(x, N, NULL, &good), 0);
  assert_int_equal(la_compact(x, N, NULL, &bad), 0);
  assert_int_equal(la_compact(y, N / 2, NULL, &half), 0);
  bad.bytes[bad.len / 2] ^= 0x10;

  fake_t f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  fake_connect(&f, "nodeX");
  for (uint32_t r = 0; r < 4; r++) fake_rank_start(&f, "badapp", r, 4, N);
  fake_trace(&f, "badapp", 0, 7, &good);
  fake_trace(&f, "badapp", 1, 7, &bad); /* bit flipped */
  fake_trace_bytes(&f, "badapp", 2, 7, &good, good.bytes, good.len - 3);
  fake_trace(&f, "badapp", 3, 7, &half); /* 500 of 1000 elements */
  fake_wait_acked(&f);

  CHECK(la_td_wait_status(T.ga, "traces_invalid", 3, WAIT_MS) == 0,
        "traces_invalid did not reach 3 (is %lld)",
        la_td_status_ll(T.ga, "traces_invalid"));
  assert_int_equal(la_td_status_ll(T.ga, "traces_invalid"), 3);
  CHECK(la_td_log_has(T.ga,
                      "badapp rank 1 cycle 7 from LocalAgent nodeX "
                      "refused: invalid trace: bad encoding"),
        "no log line for rank 1");
  CHECK(la_td_log_has(T.ga,
                      "badapp rank 3 cycle 7 from LocalAgent nodeX "
                      "refused: invalid trace: 500 elements, the rank "
                      "registered 1000"),
        "no log line for rank 3");

  la_traceset_t *t = get_set("badapp", 7);
  assert_int_equal(la_traceset_nprocs(t), 4);
  assert_true(la_traceset_has_rank(t, 0));
  const uint32_t *miss = NULL;
  assert_int_equal(la_traceset_missing(t, &miss), 3);
  assert_int_equal(miss[0], 1);
  assert_int_equal(miss[1], 2);
  assert_int_equal(miss[2], 3);
  static double w[N];
  assert_int_equal(la_traceset_rank_weights(t, 0, w), 0);
  la_trace_t *ref = NULL;
  static double want[N];
  assert_int_equal(la_trace_open(good.bytes, good.len, &ref, NULL, 0), 0);
  assert_int_equal(la_trace_decode(ref, 0, N, want), 0);
  assert_memory_equal(w, want, sizeof w);
  la_trace_close(ref);
  la_traceset_free(t);

  /* The agent can still deliver the good traces of those ranks. */
  fake_trace(&f, "badapp", 1, 7, &good);
  fake_trace(&f, "badapp", 2, 7, &good);
  fake_trace(&f, "badapp", 3, 7, &good);
  fake_wait_acked(&f);
  t = get_set("badapp", 7);
  assert_int_equal(la_traceset_missing(t, NULL), 0);
  la_traceset_free(t);
  assert_int_equal(la_td_status_ll(T.ga, "traces_invalid"), 3);

  close(f.fd);
  la_compact_result_free(&good);
  la_compact_result_free(&bad);
  la_compact_result_free(&half);
}

/* A well-formed trace with values the wire refuses (interference and
 * flagged_time infinite, NaN, negative) is refused like a bad encoding:
 * acknowledged, recorded missing with the field named, the link kept open
 * (closing it made the LocalAgent resend that trace for ever, stalling
 * every other application of its node); a good trace on the same link is
 * stored after it. */
static void test_invalid_values_refused_link_kept(void **state) {
  start_ga();
  enum { N = 100 };
  double x[N];
  series(x, N, 3);
  la_compact_result_t r;
  assert_int_equal(la_compact(x, N, NULL, &r), 0);
  fake_t f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  fake_connect(&f, "nodeV");
  fake_rank_start(&f, "valapp", 0, 1, N);
  const double bad[3] = {INFINITY, NAN, -1.0};
  for (int i = 0; i < 3; i++) {
    La__SeriesStats st = LA__SERIES_STATS__INIT;
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    la_trace_msg_fill(&t, &st, NULL, &r);
    t.app_id = "valapp";
    t.rank = 0;
    t.cycle_tag = (uint64_t)i;
    t.n_elements = N;
    t.has_interference = 1;
    t.interference = bad[i];
    assert_int_equal(la_test_link_send_trace(&f, &t), 0);
  }
  fake_trace(&f, "valapp", 0, 3, &r);
  fake_wait_acked(&f);
  CHECK(la_td_wait_status(T.ga, "traces_invalid", 3, WAIT_MS) == 0,
        "traces_invalid did not reach 3 (is %lld)",
        la_td_status_ll(T.ga, "traces_invalid"));
  assert_int_equal(la_td_status_ll(T.ga, "bad_frames"), 0);
  CHECK(la_td_log_has(T.ga,
                      "valapp rank 0 cycle 0 from LocalAgent nodeV "
                      "refused: invalid trace: interference inf not a "
                      "finite value >= 0"),
        "no log line naming the field");
  la_traceset_t *t = get_set("valapp", 3);
  assert_int_equal(la_traceset_missing(t, NULL), 0);
  la_traceset_free(t);
  t = get_set("valapp", 0);
  assert_int_equal(la_traceset_missing(t, NULL), 1);
  la_traceset_free(t);
  close(f.fd);
  la_compact_result_free(&r);
}

/* A trace claiming far more elements (2^32) than its rank registered (64),
 * with a short encoding, is refused before anything is expanded. */
static void test_declared_count_above_rank_refused(void **state) {
  start_ga();
  enum { N = 64 };
  double x[N];
  for (size_t i = 0; i < N; i++) x[i] = 2.0;
  la_compact_result_t small, huge;
  assert_int_equal(la_compact(x, N, NULL, &small), 0);
  huge = small;
  huge.stats.count = (uint64_t)1 << 32;

  fake_t f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  fake_connect(&f, "nodeY");
  fake_rank_start(&f, "capapp", 0, 1, N);
  fake_trace(&f, "capapp", 0, 1, &huge);
  fake_wait_acked(&f);
  CHECK(la_td_wait_status(T.ga, "traces_invalid", 1, WAIT_MS) == 0,
        "traces_invalid did not reach 1");
  CHECK(la_td_log_has(T.ga,
                      "capapp rank 0 cycle 1 from LocalAgent nodeY "
                      "refused: invalid trace: 4294967296 elements, "
                      "the rank registered 64"),
        "no log line");
  close(f.fd);
  la_compact_result_free(&small);
}

/* Robust weights (docs/fidelity.md) are checked like the measured ones: a
 * robust encoding of fewer points than the trace is refused and logged;
 * a good one is stored and reaches a client with its robust totals. */
static void test_robust_encoding_checked(void **state) {
  start_ga();
  enum { N = 1000 };
  static double x[N], y[N];
  series(x, N, 3);
  for (size_t i = 0; i < N; i++) y[i] = x[i] / 2;
  la_compact_result_t m, rgood, rshort;
  assert_int_equal(la_compact(x, N, NULL, &m), 0);
  assert_int_equal(la_compact(y, N, NULL, &rgood), 0);
  assert_int_equal(la_compact(y, N - 1, NULL, &rshort), 0);
  fake_t f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  fake_connect(&f, "nodeR");
  for (uint32_t r = 0; r < 2; r++) fake_rank_start(&f, "robapp", r, 2, N);
  for (uint32_t r = 0; r < 2; r++) {
    const la_compact_result_t *rr = r == 0 ? &rgood : &rshort;
    /* rank 1's robust statistics claim N points; its encoding holds fewer */
    La__SeriesStats st = LA__SERIES_STATS__INIT, rst = LA__SERIES_STATS__INIT;
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    la_trace_msg_fill(&t, &st, NULL, &m);
    la_trace_msg_robust(&t, &rst, &rgood);
    t.robust_segments.data = rr->bytes;
    t.robust_segments.len = rr->len;
    t.seq = ++f.seq;
    t.app_id = "robapp";
    t.rank = r;
    t.cycle_tag = 3;
    t.n_elements = N;
    assert_int_equal(
        la_secure_send_msg(f.fd, &f.sec, LA__MSG_TYPE__MSG_COMPACT_TRACE,
                           &t.base, 5000),
        0);
  }
  fake_wait_acked(&f);
  CHECK(la_td_wait_status(T.ga, "traces_invalid", 1, WAIT_MS) == 0,
        "traces_invalid did not reach 1");
  CHECK(la_td_log_has(T.ga,
                      "robapp rank 1 cycle 3 from LocalAgent nodeR "
                      "refused: invalid trace: robust encoding holds "
                      "999 points"),
        "no log line for rank 1");
  la_traceset_t *t = get_set("robapp", 3);
  assert_true(la_traceset_has_rank(t, 0));
  assert_false(la_traceset_has_rank(t, 1));
  double s = 0;
  assert_int_equal(la_traceset_rank_robust_stats(t, 0, &s, NULL, NULL), 0);
  assert_true(s == rgood.stats.sum);
  assert_int_equal(la_traceset_weights_kind(t), LA_WEIGHTS_ROBUST);
  la_traceset_free(t);
  close(f.fd);
  la_compact_result_free(&m);
  la_compact_result_free(&rgood);
  la_compact_result_free(&rshort);
}

/* The statistics a trace claims are checked against its encoding's
 * values (docs/compaction.md, "Checking claimed statistics"): a trace
 * whose stats.sum is twice its values' sum, one whose min is above its
 * max, one whose robust_stats.sum is off and a lossless one whose
 * stats.max is above every value are refused like other invalid traces
 * (acknowledged, recorded missing with a reason naming the field, the
 * link kept); the honest trace after them is stored. */
static void test_claimed_stats_checked(void **state) {
  start_ga();
  enum { N = 1000 };
  static double x[N];
  series(x, N, 3);
  la_compact_result_t m, ll;
  la_compact_params_t p;
  la_compact_params_default(&p);
  p.mode = LA_COMPACT_LOSSLESS;
  assert_int_equal(la_compact(x, N, NULL, &m), 0);
  assert_int_equal(la_compact(x, N, &p, &ll), 0);
  fake_t f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  fake_connect(&f, "nodeS");
  fake_rank_start(&f, "sumapp", 0, 1, N);
  for (uint64_t tag = 0; tag < 5; tag++)
    send_trace(&f, "sumapp", tag, N, tag == 3 ? &ll : &m,
               tag == 3 ? &ll : &m, lie_sumapp);
  fake_wait_acked(&f);
  CHECK(la_td_wait_status(T.ga, "traces_invalid", 4, WAIT_MS) == 0,
        "traces_invalid did not reach 4 (is %lld)",
        la_td_status_ll(T.ga, "traces_invalid"));
  assert_int_equal(la_td_status_ll(T.ga, "bad_frames"), 0);
  static const char *const why[4] = {
      "sumapp rank 0 cycle 0 from LocalAgent nodeS refused: invalid trace: "
      "stats.sum ",
      "sumapp rank 0 cycle 1 from LocalAgent nodeS refused: invalid trace: "
      "stats.min ",
      "sumapp rank 0 cycle 2 from LocalAgent nodeS refused: invalid trace: "
      "robust_stats.sum ",
      "sumapp rank 0 cycle 3 from LocalAgent nodeS refused: invalid trace: "
      "stats.min "};
  for (int i = 0; i < 4; i++) {
    CHECK(la_td_log_has(T.ga, why[i]), "no log line '%s'", why[i]);
    la_traceset_t *t = get_set("sumapp", (uint64_t)i);
    assert_int_equal(la_traceset_missing(t, NULL), 1);
    const char *r = la_traceset_missing_reason(t, 0);
    CHECK(r && strstr(r, i == 2 ? "robust_stats.sum" : i ? "stats.m"
                                                          : "stats.sum"),
          "cycle %d: missing reason '%s'", i, r ? r : "(none)");
    la_traceset_free(t);
  }
  la_traceset_t *t = get_set("sumapp", 4);
  assert_int_equal(la_traceset_missing(t, NULL), 0);
  la_traceset_free(t);
  close(f.fd);
  la_compact_result_free(&m);
  la_compact_result_free(&ll);
}

/* test_pieced_traces_checked's lie: cycle 2 claims another sum. */
static void lie_pieceapp(uint64_t tag, La__SeriesStats *st,
                         La__SeriesStats *rst) {
  (void)rst;
  if (tag == 2) st->sum *= 1.5;
}

/* Pieced traces (one value per box of a 10 x 10 x 2 grid, the geometry
 * inside the encoding, docs/compaction.md) through the real GlobalAgent,
 * its store and a client, none of them changed for it: an honest one
 * (measured and robust) is stored and a client's weights are its cells
 * (each box's value over its cells, 0 in no box) with the range sum of the
 * rank the boxes' sum; one whose geometry overlaps is refused naming the
 * geometry, one claiming another sum naming stats.sum. */
static void test_pieced_traces_checked(void **state) {
  start_ga();
  enum { N = 200, NB = 18 };
  la_piece_t p[NB];
  la_pieces_t g = {0, N, 10, 10, 2, p};
  la_test_boxes(&g, 3, 3, 3, 3); /* 18 boxes; x = 9, y = 9 in none */
  uint8_t *gb;
  size_t glen;
  assert_int_equal(la_pieces_encode(&g, &gb, &glen), 0);
  double v[NB], want[N];
  series(v, NB, 900);
  la_compact_result_t in, m, bad;
  assert_int_equal(la_compact(v, NB, NULL, &in), 0);
  assert_int_equal(la_compact_pieced(&in, v, gb, glen, &m), 0);
  /* the same with the second box from cell 2: it overlaps the first (the
   * others where they were). The
   * geometry sits after the header (14 bytes, n = 18) and its length;
   * piece 1's delta (3 << 1 | same) after count, cells (two bytes), the
   * grid and piece 0 (delta and shape) */
  memcpy(&bad, &m, sizeof bad);
  bad.bytes = malloc(m.len);
  assert_non_null(bad.bytes);
  memcpy(bad.bytes, m.bytes, m.len);
  size_t g0 = 6 + 8 + 1 + 1;
  assert_memory_equal(bad.bytes + g0, gb, glen);
  assert_int_equal(bad.bytes[g0 + 10], 3 << 1 | 1);
  assert_int_equal(bad.bytes[g0 + 11], 3 << 1 | 1);
  bad.bytes[g0 + 10] = 2 << 1 | 1; /* box 1 from cell 2, box 2 from 6 */
  bad.bytes[g0 + 11] = 4 << 1 | 1;
  uint32_t crc = la_compact_crc32(0, bad.bytes, bad.len - 4);
  for (int i = 0; i < 4; i++)
    bad.bytes[bad.len - 4 + i] = (uint8_t)(crc >> (8 * i));
  fake_t f;
  memset(&f, 0, sizeof f);
  f.fd = -1;
  fake_connect(&f, "nodeP");
  fake_rank_start(&f, "pieceapp", 0, 1, N);
  for (uint64_t tag = 0; tag < 3; tag++)
    send_trace(&f, "pieceapp", tag, N, tag == 1 ? &bad : &m, &m, lie_pieceapp);
  fake_wait_acked(&f);
  CHECK(la_td_wait_status(T.ga, "traces_invalid", 2, WAIT_MS) == 0,
        "traces_invalid did not reach 2 (is %lld)",
        la_td_status_ll(T.ga, "traces_invalid"));
  la_trace_t *tr;
  assert_int_equal(la_trace_open(in.bytes, in.len, &tr, NULL, 0), 0);
  double d[NB], sum = 0;
  assert_int_equal(la_trace_decode(tr, 0, NB, d), 0);
  la_trace_close(tr);
  la_pieces_expand(&g, d, want);
  for (int i = 0; i < NB; i++) sum += d[i];
  la_traceset_t *t = get_set("pieceapp", 0);
  assert_int_equal(la_traceset_missing(t, NULL), 0);
  double w[N], s;
  assert_int_equal(la_traceset_weights(t, w), 0);
  assert_memory_equal(w, want, sizeof want);
  assert_true(w[9] == 0 && w[0] == d[0] / 9);
  assert_int_equal(la_traceset_range_sum(t, 0, N, &s), 0);
  assert_true(fabs(s - sum) <= 1e-12 * sum);
  la_traceset_free(t);
  static const char *const reason[3] = {
      NULL, "invalid trace: bad encoding: pieced geometry: overlapping pieces",
      "invalid trace: stats.sum "};
  for (uint64_t tag = 1; tag < 3; tag++) {
    t = get_set("pieceapp", tag);
    assert_int_equal(la_traceset_missing(t, NULL), 1);
    const char *r = la_traceset_missing_reason(t, 0);
    CHECK(r && strstr(r, reason[tag]), "cycle %d: missing reason '%s'",
          (int)tag, r ? r : "(none)");
    la_traceset_free(t);
  }
  close(f.fd);
  free(gb);
  free(bad.bytes);
  la_compact_result_free(&in);
  la_compact_result_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_invalid_traces_refused),
      T(test_declared_count_above_rank_refused),
      T(test_invalid_values_refused_link_kept),
      T(test_robust_encoding_checked),
      T(test_claimed_stats_checked),
      T(test_pieced_traces_checked),
#undef T
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
