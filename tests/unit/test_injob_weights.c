/* SPDX-License-Identifier: BSD-3-Clause */
/* test_injob_weights.c: balancing inside the job, end to end.
 *
 * The real GlobalAgent and LocalAgent (la_test_agent.h); this process is
 * the application (rank 0 of 1) and probes its elements with values it
 * knows. Checked as a program balancing in the job would see it:
 *   - LA_weights before LA_register, before the first cycle, with a NULL
 *     or too small buffer: the documented codes and messages;
 *   - after each profiled cycle the generation advances by one, the cycle
 *     tag is that cycle's, and the weights are bit for bit those
 *     libla_client serves for the same rank and cycle from the
 *     GlobalAgent: the measured values (custom metric, equal to what was
 *     probed: lossless) and the robust ones (wall time);
 *   - a segment of layout 3 (LA_SHM_LAYOUT=3, as a libla older than the
 *     weights area makes it) is still profiled by the new LocalAgent, and
 *     LA_weights says LA_EVERSION; a LocalAgent that reads only layout 3
 *     (la_test_peer) refuses layout 4 and libla registers again in
 *     layout 3 by itself;
 *   - a hostile weights area (garbage written into this process's own
 *     segment, a stand-in for an agent gone wrong) is refused with
 *     LA_EPROTO naming the field, never a crash;
 *   - examples/zoltan_balance with 4 ranks lowers the imbalance it builds
 *     in at each of its rebalances (with Zoltan under Open MPI's mpiexec
 *     where it was built so, else with its own partitioner under the
 *     default MPI: build/examples/zoltan_balance.mpiexec says which).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_client.h"
#include "la_shm_layout.h"
#include "la_test_agent.h"
#include "la_test_ipc.h"
#include "la_test_peer.h"

#define N 96       /* elements */
#define CYCLES 4   /* profiled cycles per application */
#define WAIT 15000 /* ms */

static la_test_agent_t A;
static int have_stack;

static int group_setup(void **state) {
  if (la_td_prepare() != 0) return -1;
  if (la_ta_start(&A, NULL) != 0) {
    la_ta_free(&A);
    return 0; /* daemons not built: tests skip */
  }
  have_stack = 1;
  return 0;
}

static int group_teardown(void **state) {
  if (have_stack) la_ta_free(&A);
  return 0;
}

/* A clean LA_ environment pointing at the test's LocalAgent. */
static void app_env(void) {
  la_td_unset_la_env();
  setenv("LA_AGENT", la_td_addr(A.st.la), 1);
  setenv("LA_COMPACT", "lossless", 1);
}

static uint64_t cur_cycle;
static double value_of(long e, uint64_t c) {
  return 1.0 + (double)((e * 5 + (long)c * 3) % 11) * 0.5;
}
static double probe_start(long e, void *arg) {
  return 0.0;
}
static double probe_stop(long e, void *arg) {
  return value_of(e, cur_cycle);
}

/* The complete set of app_id at cycle (weights of kind). */
static la_traceset_t *get_set(const char *app_id, uint64_t cycle, int kind) {
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(A.st.feed_addr, 5000, &c), 0);
  assert_int_equal(la_client_set_weights(c, kind), 0);
  la_traceset_t *ts = la_ta_complete_set(c, app_id, cycle, 20000);
  if (!ts)
    fail_msg("%s cycle %llu: no complete Trace-Set (%s)", app_id,
             (unsigned long long)cycle, la_client_error(c));
  la_client_close(c);
  return ts;
}

/* Asserts w equals rank 0's weights of app_id's set at cycle, bit for bit. */
static void assert_as_client(const char *app_id, uint64_t cycle, int kind,
                             const double *w) {
  la_traceset_t *ts = get_set(app_id, cycle, kind);
  assert_int_equal(la_traceset_weights_kind(ts), kind);
  double cw[N];
  assert_int_equal(la_traceset_rank_weights(ts, 0, cw), 0);
  for (int e = 0; e < N; e++)
    if (memcmp(&cw[e], &w[e], sizeof(double)) != 0)
      fail_msg(
          "%s cycle %llu element %d: LA_weights %.17g, libla_client "
          "%.17g",
          app_id, (unsigned long long)cycle, e, w[e], cw[e]);
  la_traceset_free(ts);
}

static void test_errors_before(void **state) {
  double w[N];
  uint64_t tag = 7, gen = 7;
  la_td_unset_la_env();
  assert_int_equal(LA_weights(w, N, &tag, &gen), LA_ESTATE);
  assert_non_null(strstr(LA_lastError(), "not registered"));
  assert_int_equal(LA_weightsWait(w, N, 0, 10, &tag, &gen), LA_ESTATE);
  assert_int_equal(tag, 7);
  assert_int_equal(gen, 7);
}

static void test_measured_equal_client(void **state) {
  if (!have_stack) skip();
  app_env();
  LA_setAppId("iw-measured");
  LA_setMetric("custom");
  LA_setProbeStartFunc(probe_start, NULL);
  LA_setProbeStopFunc(probe_stop, NULL);
  cur_cycle = 0;
  assert_int_equal(LA_register("iwtest", 0, 1, N), 0);
  double w[N + 1];
  uint64_t tag = 0, gen = 0;
  /* nothing finished yet */
  assert_int_equal(LA_weights(w, N, &tag, &gen), LA_ENOTFOUND);
  assert_non_null(strstr(LA_lastError(), "no weights yet"));
  assert_int_equal(LA_weightsWait(w, N, 0, 0, &tag, &gen), LA_ENOTFOUND);
  assert_int_equal(LA_weights(w, N - 1, &tag, &gen), LA_ERANGE);
  assert_non_null(strstr(LA_lastError(), "95 doubles for 96 elements"));
  assert_int_equal(LA_weights(NULL, N, &tag, &gen), LA_EINVAL);
  uint64_t last = 0;
  for (uint64_t c = 0; c < CYCLES; c++) {
    cur_cycle = c;
    for (long e = 0; e < N; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    assert_int_equal(LA_dataXfer(), 0);
    w[N] = -1; /* room beyond the elements stays untouched */
    int rc = LA_weightsWait(w, N + 1, last, WAIT, &tag, &gen);
    if (rc) fail_msg("cycle %llu: %s", (unsigned long long)c, LA_lastError());
    assert_int_equal(gen, last + 1); /* one generation per profiled cycle */
    assert_int_equal(tag, c);
    assert_true(w[N] == -1);
    for (long e = 0; e < N; e++) assert_true(w[e] == value_of(e, c));
    /* nothing newer: a short wait times out, w unchanged */
    double keep = w[0];
    w[0] = -5;
    assert_int_equal(LA_weightsWait(w, N, gen, 20, NULL, NULL), LA_ETIMEDOUT);
    assert_true(w[0] == -5);
    w[0] = keep;
    /* LA_weights gives the same, without waiting */
    double w2[N];
    uint64_t tag2, gen2;
    assert_int_equal(LA_weights(w2, N, &tag2, &gen2), 0);
    assert_int_equal(gen2, gen);
    assert_int_equal(tag2, tag);
    assert_memory_equal(w2, w, sizeof w2);
    assert_as_client("iw-measured", c, LA_WEIGHTS_MEASURED, w);
    last = gen;
  }
  assert_int_equal(LA_finalize(), 0);
  assert_int_equal(LA_weights(w, N, &tag, &gen), LA_ESTATE);
}

static volatile double sink;
static void spin(long units) {
  double x = 1;
  for (long i = 0; i < units * 400; i++) x = x * 1.0000001 + 1e-9;
  sink = x;
}

static void test_robust_equal_client(void **state) {
  if (!have_stack) skip();
  app_env();
  LA_setAppId("iw-robust");
  LA_setMetric("time");
  assert_int_equal(LA_register("iwtest", 0, 1, N), 0);
  double w[N];
  uint64_t tag = 0, gen = 0, last = 0;
  for (uint64_t c = 0; c < CYCLES; c++) {
    for (long e = 0; e < N; e++) {
      LA_startProbe(e);
      spin(1 + (e / 16) % 4);
      LA_stopProbe(e);
    }
    assert_int_equal(LA_dataXfer(), 0);
    int rc = LA_weightsWait(w, N, last, WAIT, &tag, &gen);
    if (rc) fail_msg("cycle %llu: %s", (unsigned long long)c, LA_lastError());
    assert_int_equal(gen, last + 1);
    assert_int_equal(tag, c);
    /* heavier blocks weigh more (the spin of block 3 is 4 x block 0's) */
    double b0 = 0, b3 = 0;
    for (long e = 0; e < 16; e++) {
      b0 += w[e];
      b3 += w[48 + e];
    }
    assert_true(b3 > 1.5 * b0);
    assert_as_client("iw-robust", c, LA_WEIGHTS_ROBUST, w);
    last = gen;
  }
  assert_int_equal(LA_finalize(), 0);
}

static void test_layout3(void **state) {
  if (!have_stack) skip();
  app_env();
  setenv("LA_SHM_LAYOUT", "3", 1);
  LA_setAppId("iw-layout3");
  LA_setMetric("time");
  la_td_log_mark(A.st.la);
  int rc = LA_register("iwtest", 0, 1, N);
  unsetenv("LA_SHM_LAYOUT");
  assert_int_equal(rc, 0);
  assert_int_equal(
      la_td_wait_log(A.st.la, "layout 3 without a weights area", WAIT), 0);
  for (long e = 0; e < N; e++) {
    LA_startProbe(e);
    LA_stopProbe(e);
  }
  assert_int_equal(LA_dataXfer(), 0);
  double w[N];
  assert_int_equal(LA_weights(w, N, NULL, NULL), LA_EVERSION);
  assert_non_null(strstr(LA_lastError(), "layout 3"));
  assert_int_equal(LA_finalize(), 0);
  /* the cycle was profiled all the same */
  assert_int_equal(la_ta_wait_sql(&A,
                                  "SELECT count(*) FROM traces WHERE "
                                  "app_id = 'iw-layout3'",
                                  1, WAIT),
                   0);
  setenv("LA_SHM_LAYOUT", "7", 1);
  assert_int_equal(LA_register("iwtest", 0, 1, N), LA_ECONFIG);
  unsetenv("LA_SHM_LAYOUT");
  LA_finalize();
}

/* The weights area of this process's registered segment, attached a
 * second time (the test plays a hostile agent). */
static la_shm_weights_hdr_t *own_area(void **seg) {
  int id = la_test_shm_of(getpid());
  assert_true(id >= 0);
  void *p = shmat(id, NULL, 0);
  assert_true(p != (void *)-1);
  *seg = p;
  return la_shm_weights_area(p, N, 3, 1);
}

/* A LocalAgent that reads only layout 3 (a stand-in: the real one reads
 * both) refuses libla's layout 4; libla registers again in layout 3 by
 * itself, profiles, and LA_weights says LA_EVERSION. */
static void test_older_agent_fallback(void **state) {
  la_td_unset_la_env();
  la_test_peer_t *p = la_test_peer_start();
  assert_non_null(p);
  la_test_peer_set_max_layout(p, 3);
  setenv("LA_AGENT", la_test_peer_addr(p), 1);
  LA_setAppId("iw-older");
  LA_setMetric("time");
  int rc = LA_register("iwtest", 0, 1, N);
  if (rc) fail_msg("LA_register: %s", LA_lastError());
  for (long e = 0; e < N; e++) {
    LA_startProbe(e);
    LA_stopProbe(e);
  }
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_test_peer_wait_cycles(p, 1, WAIT), 0);
  double w[N];
  assert_int_equal(LA_weights(w, N, NULL, NULL), LA_EVERSION);
  assert_non_null(strstr(LA_lastError(), "layout 3"));
  assert_int_equal(LA_finalize(), 0);
  /* an agent of layout 4 (before row values): a grid registers in layout
   * 4, weights and all, its row probes spread by libla */
  la_test_peer_set_max_layout(p, 4);
  rc = LA_registerGrid("iwtest", 0, 1, N / 4, 2, 2);
  if (rc) fail_msg("LA_registerGrid: %s", LA_lastError());
  for (long k = 0; k < 2; k++)
    for (long j = 0; j < 2; j++) {
      assert_int_equal(LA_startRow(j, k), 0);
      assert_int_equal(LA_stopRow(j, k), 0);
    }
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_test_peer_wait_cycles(p, 2, WAIT), 0);
  void *seg;
  (void)own_area(&seg);
  assert_int_equal(((la_shm_header_t *)seg)->version, 4);
  assert_int_equal(((la_shm_header_t *)seg)->features, LA_SHM_FEAT_WEIGHTS);
  shmdt(seg);
  assert_int_equal(LA_finalize(), 0);
  /* an agent of layout 5 (before piece tables): a grid registers in
   * layout 5, row values and all, its boxes spread by libla */
  la_test_peer_set_max_layout(p, 5);
  rc = LA_registerGrid("iwtest", 0, 1, N / 4, 2, 2);
  if (rc) fail_msg("LA_registerGrid: %s", LA_lastError());
  assert_int_equal(LA_startBox(0, 0, 0, 2, 2, 1), 0);
  assert_int_equal(LA_stopBox(0, 0, 0, 2, 2, 1), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(la_test_peer_wait_cycles(p, 3, WAIT), 0);
  (void)own_area(&seg);
  assert_int_equal(((la_shm_header_t *)seg)->version, 5);
  assert_int_equal(((la_shm_header_t *)seg)->features,
                   LA_SHM_FEAT_WEIGHTS | LA_SHM_FEAT_ROWS);
  shmdt(seg);
  assert_int_equal(LA_finalize(), 0);
  /* with no fallback wanted the refusal stands: nothing else refused */
  la_test_peer_set_max_layout(p, 2);
  assert_int_equal(LA_register("iwtest", 0, 1, N), LA_EREFUSED);
  assert_non_null(strstr(LA_lastError(), "unsupported header version"));
  LA_finalize();
  la_test_peer_stop(p);
}

/* Row probes only (a grid of 12 rows of 8 cells): the agent writes the
 * cycle's weights as one value per row (the slot says spread 8) and
 * LA_weights gives every cell its row's share, bit for bit what
 * libla_client serves from the GlobalAgent, for robust and measured
 * weights. */
static void test_row_cycles_per_cell(void **state) {
  if (!have_stack) skip();
  app_env();
  LA_setAppId("iw-rows");
  LA_setMetric("time");
  assert_int_equal(LA_registerGrid("iwtest", 0, 1, 8, 4, 3), 0);
  double w[N];
  uint64_t gen = 0, last = 0;
  for (uint64_t c = 0; c < CYCLES; c++) {
    for (long k = 0; k < 3; k++)
      for (long j = 0; j < 4; j++) {
        assert_int_equal(LA_startRow(j, k), 0);
        spin(1 + (j + k) % 3);
        assert_int_equal(LA_stopRow(j, k), 0);
      }
    assert_int_equal(LA_dataXfer(), 0);
    int rc = LA_weightsWait(w, N, last, WAIT, NULL, &gen);
    if (rc) fail_msg("cycle %llu: %s", (unsigned long long)c, LA_lastError());
    void *seg;
    (void)own_area(&seg); /* the segment; its area is after the rows */
    const la_shm_header_t *h = seg;
    assert_int_equal(h->features & LA_SHM_FEAT_ROWS, LA_SHM_FEAT_ROWS);
    la_shm_weights_hdr_t *a =
        la_shm_weights_area_r(seg, N, h->n_buffers, 1, 12);
    la_shm_weights_slot_t *sl = la_shm_weights_slot(a, N, gen % 2);
    assert_int_equal(sl->spread, 8); /* one value per row in the slot */
    shmdt(seg);
    for (int e = 0; e < N; e++) {
      assert_true(w[e] > 0);
      assert_true(w[e] == w[e - e % 8]); /* a row's cells alike */
    }
    assert_as_client("iw-rows", c, LA_WEIGHTS_ROBUST, w);
    last = gen;
  }
  assert_int_equal(LA_finalize(), 0);
}

static void expect_proto(const char *word) {
  double w[N];
  int rc = LA_weights(w, N, NULL, NULL);
  if (rc != LA_EPROTO)
    fail_msg("expected LA_EPROTO naming '%s', got %d (%s)", word, rc,
             LA_lastError());
  if (!strstr(LA_lastError(), word))
    fail_msg("'%s' does not name '%s'", LA_lastError(), word);
}

static void test_hostile_area(void **state) {
  if (!have_stack) skip();
  app_env();
  LA_setAppId("iw-hostile");
  LA_setMetric("time");
  LA_setBuffers(3);
  assert_int_equal(LA_register("iwtest", 0, 1, N), 0);
  for (long e = 0; e < N; e++) {
    LA_startProbe(e);
    LA_stopProbe(e);
  }
  assert_int_equal(LA_dataXfer(), 0);
  double w[N];
  uint64_t gen = 0;
  assert_int_equal(LA_weightsWait(w, N, 0, WAIT, NULL, &gen), 0);
  assert_int_equal(gen, 1);
  void *seg;
  la_shm_weights_hdr_t *a = own_area(&seg);
  la_shm_weights_slot_t *s1 = la_shm_weights_slot(a, N, 1);
  la_shm_weights_hdr_t ka = *a;
  la_shm_weights_slot_t ks = *s1;
  struct {
    const char *word;
    void (*poke)(la_shm_weights_hdr_t *, la_shm_weights_slot_t *);
  } cases[] = {
      {"bad magic number", NULL},
      {"unknown version", NULL},
      {"unexpected header length", NULL},
      {"element count is not this rank's", NULL},
      {"unexpected slot count", NULL},
      {"unexpected slot stride", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    *a = ka;
    switch (i) {
      case 0:
        a->magic = 0x4141414141414141ULL;
        break;
      case 1:
        a->version = 99;
        break;
      case 2:
        a->header_len = 1u << 30;
        break;
      case 3:
        a->n_elements = ~0ULL;
        break;
      case 4:
        a->n_slots = 1000;
        break;
      case 5:
        a->slot_stride = 8;
        break;
    }
    expect_proto(cases[i].word);
  }
  *a = ka;
  assert_int_equal(LA_weights(w, N, NULL, NULL), 0);
  /* the slot: wrong element count, channel, kind, a generation in the
   * wrong slot */
  s1->n_elements = (uint64_t)1 << 40;
  expect_proto("weights slot 1 (generation 1): element count");
  *s1 = ks;
  s1->channel = 3;
  expect_proto("unknown channel");
  *s1 = ks;
  s1->kind = 77;
  expect_proto("unknown kind");
  *s1 = ks;
  s1->spread = 7; /* 96 elements are not rows of 7 */
  expect_proto("spread does not divide the element count");
  *s1 = ks;
  /* pieces (libla says it spreads them): more than the slot holds, a
   * range past the elements, a box in a registration without a grid */
  assert_true(a->flags & LA_SHM_WEIGHTS_F_PIECES);
  s1->pieces = N / 4 + 1;
  expect_proto("more pieces than the slot holds");
  la_shm_piece_t *pr = (la_shm_piece_t *)(void *)(s1 + 1), kp = pr[0];
  s1->pieces = 1;
  pr[0] = (la_shm_piece_t){.key = ((uint64_t)(N - 2) << 4) + 1, .ni = 3,
                           .value = 1};
  expect_proto("weights slot 1 (generation 1): an element range outside");
  pr[0] = (la_shm_piece_t){.key = 1, .ni = 2, .nj = 2, .nk = 1, .value = 1};
  expect_proto("a box in a registration that is not a grid");
  /* a good one: its value over its cells, 0 elsewhere */
  pr[0] = (la_shm_piece_t){.key = (10 << 4) + 1, .ni = 4, .value = 2};
  assert_int_equal(LA_weights(w, N, NULL, NULL), 0);
  for (long e = 0; e < N; e++)
    assert_true(w[e] == (e >= 10 && e < 14 ? 0.5 : 0.0));
  pr[0] = kp;
  *s1 = ks;
  s1->seq = 2 * 2; /* generation 2 belongs in slot 0 */
  expect_proto("which belongs in slot 0");
  /* a slot forever being written, the other empty: nothing to read */
  s1->seq = 2 * 1 + 1;
  assert_int_equal(LA_weights(w, N, NULL, NULL), LA_ENOTFOUND);
  /* garbage everywhere */
  memset(a, 0xa5, la_shm_weights_bytes(N));
  expect_proto("weights area");
  /* the real agent writes the next generation only into its own slot
   * layout: restore and go on profiling, the garbage did no harm */
  *a = ka;
  memset(s1, 0, la_shm_weights_stride(N));
  memset(la_shm_weights_slot(a, N, 0), 0, la_shm_weights_stride(N));
  for (long e = 0; e < N; e++) {
    LA_startProbe(e);
    LA_stopProbe(e);
  }
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(LA_weightsWait(w, N, 1, WAIT, NULL, &gen), 0);
  assert_int_equal(gen, 2);
  shmdt(seg);
  assert_int_equal(LA_finalize(), 0);
}

/* examples/zoltan_balance under its launcher with 4 ranks (Open MPI's
 * mpiexec when it was built with Zoltan, else the default MPI's with its
 * own slices partitioner), imbalance measured by the exact cost model at
 * the step of the decision: the rebalances lower it on the whole (the
 * mean after at least 10% below the mean before) and at least two of the
 * three lower it. Not "every one lowers it": the weights are measured
 * times of 4 ranks oversubscribed on a shared machine; a rebalance of a
 * mild imbalance (1.35) was seen to move cells without changing the most
 * loaded rank's (after == before), and once, with sanitized daemons
 * beside the four ranks on two cores, to raise it (1.35 -> 1.55) while the
 * other two lowered it (mean 1.69 -> 1.30). */
static void test_zoltan_example(void **state) {
  if (!have_stack) skip();
  const char *dir = getenv("LA_EXAMPLES_DIR");
  char exe[512], lfile[600], launcher[256] = "";
  snprintf(exe, sizeof exe, "%s/zoltan_balance",
           dir && *dir ? dir : "build/examples");
  snprintf(lfile, sizeof lfile, "%s.mpiexec", exe);
  FILE *lf = fopen(lfile, "r");
  if (access(exe, X_OK) != 0 || !lf) {
    if (lf) fclose(lf);
    print_message("%s not built: run `make examples`\n", exe);
    skip();
  }
  if (!fgets(launcher, sizeof launcher, lf)) launcher[0] = 0;
  fclose(lf);
  launcher[strcspn(launcher, "\n")] = 0;
  int ompi = strstr(launcher, "openmpi") != NULL;
  print_message("zoltan_balance with %s\n", launcher);
  char out[600];
  snprintf(out, sizeof out, "%s/zoltan.out", la_td_dir(A.st.la));
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "%sLA_AGENT=%s LA_APP_ID=iw-zoltan timeout 120 %s %s -n 4 %s "
           "--steps 24 --every 6 > %s 2>&1",
           ompi ? "OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_"
                  "mechanism=none "
                : "",
           la_td_addr(A.st.la), launcher,
           ompi && geteuid() == 0 ? "--allow-run-as-root" : "", exe, out);
  int st = system(cmd);
  FILE *f = fopen(out, "r");
  assert_non_null(f);
  char line[512];
  int rebalances = 0, better = 0;
  double sum_before = 0, sum_after = 0;
  while (fgets(line, sizeof line, f)) {
    double before, after;
    if (sscanf(line, "rebalance step %*d: imbalance before %lf after %lf",
               &before, &after) == 2) {
      rebalances++;
      better += after < before;
      sum_before += before;
      sum_after += after;
    }
  }
  fclose(f);
  if (st != 0 || rebalances != 3 || better < 2 ||
      !(sum_after < 0.9 * sum_before)) {
    char show[700];
    snprintf(show, sizeof show, "cat %s >&2", out);
    if (system(show) != 0) print_error("cannot show %s\n", out);
    fail_msg(
        "zoltan_balance: status %d, %d rebalances, %d lowered the "
        "imbalance, mean %.3f -> %.3f (want 3, >= 2, 10%% lower)",
        st, rebalances, better,
        rebalances ? sum_before / rebalances : 0.0,
        rebalances ? sum_after / rebalances : 0.0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_errors_before),
      cmocka_unit_test(test_measured_equal_client),
      cmocka_unit_test(test_robust_equal_client),
      cmocka_unit_test(test_row_cycles_per_cell),
      cmocka_unit_test(test_layout3),
      cmocka_unit_test(test_older_agent_fallback),
      cmocka_unit_test(test_hostile_area),
      cmocka_unit_test(test_zoltan_example),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
