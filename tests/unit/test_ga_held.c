/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ga_held.c: a Trace-Set published from the traces the GlobalAgent
 * holds in memory (globalagent/held.c) is byte for byte the set read back
 * from the store, and the memory held stays within stitch.publish_memory.
 *
 * A real store in a temporary directory (store/store.h) takes
 * RankStarts and real compact traces (la_compact of synthetic series, with
 * robust weights, interference figures, channel series and a missing rank)
 * as ingest.c gives them; the same traces go to a la_held_t as ingest.c
 * gives them. The set built by la_store_load_set_with from the held copies
 * must pack to the same bytes as la_store_load_set's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "held.h"
#include "la.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_test_msg.h"
#include "la_test_series.h"
#include "la_trace_msg.h"
#include "store.h"

#define N 2000
#define NPROCS 6

typedef struct fx {
  char dir[64], path[128];
  la_store_t *s;
  la_compact_result_t r[3]; /* two series and a robust one */
} fx_t;

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  char why[256];
  strcpy(f->dir, "/tmp/la_test_held.XXXXXX");
  assert_non_null(mkdtemp(f->dir));
  snprintf(f->path, sizeof f->path, "%s/la.db", f->dir);
  assert_int_equal(la_store_open(f->path, 0, &f->s, why, sizeof why), 0);
  double *x = malloc(N * sizeof *x);
  assert_non_null(x);
  const int kinds[3] = {LA_SYNTH_MESH, LA_SYNTH_SPIKES, LA_SYNTH_STEPS};
  for (int i = 0; i < 3; i++) {
    assert_int_equal(la_compact_synth(kinds[i], N, 11 + (uint64_t)i, x), 0);
    assert_int_equal(la_compact(x, N, NULL, &f->r[i]), 0);
  }
  free(x);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  la_store_close(f->s);
  for (int i = 0; i < 3; i++) la_compact_result_free(&f->r[i]);
  char p[160];
  snprintf(p, sizeof p, "%s/la.db-wal", f->dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/la.db-shm", f->dir);
  unlink(p);
  unlink(f->path);
  rmdir(f->dir);
  free(f);
  return 0;
}

/* put() hands h the message as the GlobalAgent decoded it from the wire
 * (la_held_add_decoded: its parts move into the held copy), else the
 * caller's own (la_held_add: copied). */
static int g_decoded;

/* Stores the trace of rank at cycle tag (store first, as ingest.c does)
 * and hands it to h. Rank 1 carries robust weights and interference
 * figures, rank 3 two channel series, rank 4 a zero sum and no error. */
static void put(fx_t *f, la_held_t *h, const char *app, uint32_t rank,
                uint64_t tag) {
  La__SeriesStats st = LA__SERIES_STATS__INIT, rst = LA__SERIES_STATS__INIT;
  La__SeriesStats cst[2] = {LA__SERIES_STATS__INIT, LA__SERIES_STATS__INIT};
  La__FitError fe = LA__FIT_ERROR__INIT;
  La__FitError cfe[2] = {LA__FIT_ERROR__INIT, LA__FIT_ERROR__INIT};
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  La__ChannelTrace ch[2] = {LA__CHANNEL_TRACE__INIT, LA__CHANNEL_TRACE__INIT};
  La__ChannelTrace *chp[2] = {&ch[0], &ch[1]};
  la_trace_msg_fill(&t, &st, rank == 4 ? NULL : &fe, &f->r[rank % 2]);
  la_test_trace_id(&t, tag * 10 + rank + 1, app, rank, tag, N);
  t.has_t_xfer_ns = 1;
  t.t_xfer_ns = 1700000000000000000ull + tag * 1000 + rank;
  t.has_rank_seq = 1;
  t.rank_seq = tag;
  if (rank == 1) {
    la_trace_msg_robust(&t, &rst, &f->r[2]);
    t.has_interference = 1;
    t.interference = 12.5;
    t.has_flagged = 1;
    t.flagged = 3;
    t.has_flagged_time = 1;
    t.flagged_time = 0.75;
  }
  if (rank == 3) {
    for (int c = 0; c < 2; c++) {
      la_trace_msg_channel(&ch[c], &cst[c], &cfe[c], &f->r[c]);
      ch[c].channel = (uint32_t)c;
    }
    la_trace_msg_channel_robust(&ch[1], &cst[0], &f->r[2]);
    t.channels = chp;
    t.n_channels = 2;
  }
  if (rank == 4) st.sum = -0.0;
  int was_new = 0;
  assert_int_equal(la_store_trace(f->s, &t, &was_new), 0);
  assert_int_equal(was_new, 1);
  if (!g_decoded) {
    la_held_add(h, &t);
    return;
  }
  size_t len = protobuf_c_message_get_packed_size(&t.base);
  uint8_t *b = malloc(len);
  assert_non_null(b);
  assert_int_equal(protobuf_c_message_pack(&t.base, b), len);
  ProtobufCMessage *m = NULL;
  char why[200];
  assert_int_equal(la_msg_decode(LA__MSG_TYPE__MSG_COMPACT_TRACE, b, len, &m,
                                 why, sizeof why),
                   0);
  free(b);
  la_held_add_decoded(h, (La__CompactTrace *)m);
  la_msg_free(m);
}

/* The packed bytes of a set (its dropped field unset). */
static uint8_t *packed(La__TraceSet *set, size_t *len) {
  *len = protobuf_c_message_get_packed_size(&set->base);
  uint8_t *b = malloc(*len ? *len : 1);
  assert_non_null(b);
  assert_int_equal(protobuf_c_message_pack(&set->base, b), *len);
  return b;
}

static void starts(fx_t *f, const char *app) {
  for (uint32_t r = 0; r < NPROCS; r++) {
    La__RankStart m = la_test_rank_start(app, "heldapp", r, NPROCS, N);
    assert_int_equal(la_store_rank_start(f->s, &m, NULL), 0);
  }
}

/* A partial set: every kind of trace, a missing record, a rank never
 * heard of; published from the held copies = read back from the store. */
static void test_held_set_equals_stored(void **state) {
  fx_t *f = *state;
  la_held_t *h = la_held_new(1 << 26);
  assert_non_null(h);
  starts(f, "held-app");
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(la_held_open(h, "held-app", 7, NPROCS), 0);
  for (uint32_t r = 0; r < NPROCS - 1; r++)
    if (r != 2) put(f, h, "held-app", r, 7);
  assert_int_equal(
      la_store_missing(f->s, "held-app", 7, 2, "rank 2 crashed", 1, 99, NULL),
      0);
  uint32_t missing[2] = {2, NPROCS - 1};
  assert_int_equal(la_store_set_closed(f->s, "held-app", 7, 0, missing, 2,
                                       1700000000123456789ull),
                   0);
  assert_int_equal(la_store_commit(f->s), 0);
  la_held_stats_t hs;
  la_held_get_stats(h, &hs);
  assert_int_equal(hs.sets, 1);
  assert_true(hs.bytes > 0);

  La__TraceSet *a = NULL, *b = NULL;
  assert_int_equal(la_store_load_set(f->s, "held-app", 7, &a), 0);
  la_held_set_t hset;
  assert_int_equal(la_held_take(h, "held-app", 7, &hset), 1);
  assert_int_equal(hset.n, NPROCS - 2);
  assert_int_equal(
      la_store_load_set_with(f->s, "held-app", 7, hset.traces, hset.n, &b), 0);
  size_t la_, lb;
  uint8_t *pa = packed(a, &la_), *pb = packed(b, &lb);
  assert_int_equal(la_, lb);
  assert_memory_equal(pa, pb, la_);
  assert_int_equal(b->n_missing_ranks, 2);
  assert_false(b->complete);
  free(pa);
  free(pb);
  la_store_free_set(a);
  la_store_free_set(b);
  la_held_get_stats(h, &hs); /* handed over, still counted until released */
  assert_int_equal(hs.sets, 0);
  assert_true(hs.bytes > 0);
  hset.traces = NULL; /* they went with the set */
  hset.n = 0;
  la_held_release(h, &hset);
  la_held_get_stats(h, &hs);
  assert_int_equal(hs.bytes, 0);
  assert_int_equal(la_held_take(h, "held-app", 7, &hset), 0);
  la_held_free(h);
}

/* The same with the messages decoded from the wire, whose parts move into
 * the held copies instead of being copied: the same bytes again. */
static void test_held_decoded_set_equals_stored(void **state) {
  g_decoded = 1;
  test_held_set_equals_stored(state);
  g_decoded = 0;
}

/* Over the budget a set is not held (published from the store); taking
 * it says so, and the memory held never passes the budget. */
static void test_budget(void **state) {
  fx_t *f = *state;
  size_t cap = 700; /* the slots and one small trace at most */
  la_held_t *h = la_held_new(cap);
  assert_non_null(h);
  starts(f, "budget-app");
  assert_int_equal(la_store_begin(f->s), 0);
  assert_int_equal(la_held_open(h, "budget-app", 1, NPROCS), 0);
  for (uint32_t r = 0; r < NPROCS; r++) {
    put(f, h, "budget-app", r, 1);
    la_held_stats_t hs;
    la_held_get_stats(h, &hs);
    assert_true(hs.bytes <= cap);
    assert_true(hs.peak_bytes <= cap);
  }
  assert_int_equal(la_store_commit(f->s), 0);
  la_held_stats_t hs;
  la_held_get_stats(h, &hs);
  assert_int_equal(hs.spilled, 1);
  assert_int_equal(hs.sets, 0);
  la_held_set_t hset;
  assert_int_equal(la_held_take(h, "budget-app", 1, &hset), 0);
  /* budget 0: nothing is ever held */
  la_held_t *z = la_held_new(0);
  assert_int_equal(la_held_open(z, "budget-app", 2, NPROCS), 0);
  la_held_get_stats(z, &hs);
  assert_int_equal(hs.sets, 0);
  la_held_free(z);
  /* dropped and cleared sets free what they held */
  assert_int_equal(la_held_open(h, "budget-app", 3, 2), 0);
  assert_int_equal(la_held_open(h, "budget-app", 4, 2), 0);
  la_held_drop(h, "budget-app", 3);
  la_held_get_stats(h, &hs);
  assert_int_equal(hs.sets, 1);
  la_held_clear(h);
  la_held_get_stats(h, &hs);
  assert_int_equal(hs.sets, 0);
  assert_int_equal(hs.bytes, 0);
  la_held_free(h);
}

/* Many ranks, one set: every trace held, taken back by rank. */
static void test_many_ranks_by_rank(void **state) {
  (void)state;
  enum { R = 20000 };
  la_held_t *h = la_held_new(1ull << 30);
  assert_non_null(h);
  assert_int_equal(la_held_open(h, "big", 5, R), 0);
  uint8_t seg[16] = {1, 2, 3};
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  st.count = 1;
  for (uint32_t i = 0; i < R; i++) {
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    t.app_id = "big";
    t.rank = (i * 7919u) % R; /* every rank once, out of order */
    t.cycle_tag = 5;
    t.n_elements = 1;
    t.segments.data = seg;
    t.segments.len = sizeof seg;
    t.stats = &st;
    la_held_add(h, &t);
  }
  la_held_add(
      h, &(La__CompactTrace){
             .app_id = "big", .rank = R, .cycle_tag = 5}); /* not of the set */
  la_held_set_t s;
  assert_int_equal(la_held_take(h, "big", 5, &s), 1);
  assert_int_equal(s.n, R);
  for (uint32_t i = 0; i < R; i++) assert_int_equal(s.traces[i]->rank, i);
  la_held_release(h, &s);
  la_held_stats_t hs;
  la_held_get_stats(h, &hs);
  assert_int_equal(hs.bytes, 0);
  la_held_free(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_held_set_equals_stored, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_held_decoded_set_equals_stored,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
      cmocka_unit_test(test_many_ranks_by_rank),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
