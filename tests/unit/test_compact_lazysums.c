/* SPDX-License-Identifier: BSD-3-Clause */
/* test_compact_lazysums.c: range sums of a parsed trace whose prefix sums
 * are built by the first range sum, not by la_trace_open
 * (compact/la_compact_decode.c, docs/compaction.md "Range sums").
 *
 * What a user relies on: every range sum is the number it was when the
 * sums were built at open, bit for bit (digests of many range sums over
 * traces of every kind, recorded from the decoder that built them at
 * open), and a trace whose values were read first answers the same range
 * sums when four threads ask for them at once as a trace asked by one
 * thread (run under ThreadSanitizer too: build/tsan/tests). */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "la_compact.h"
#include "la_compact_internal.h"
#include "la_compact_pieces.h"

#define N 20000     /* points per series */
#define NRANGES 600 /* range sums per trace */
#define THREADS 4   /* asking at once */
#define ROUNDS 8    /* traces opened afresh for the threads, per kind */
#define Q 0.38518989313080604 /* ns per tick (test_compact_qrun's) */

enum {
  K_VERBATIM,
  K_POLYLINE,
  K_MAXERR,
  K_QUANTIZED,
  K_PIECED,
  K_SPREAD,
  K_HUGE,
  K_COUNT
};
static const char *const kind_name[K_COUNT] = {"verbatim (lossless)",
                                               "polyline",
                                               "maxerr",
                                               "quantized runs",
                                               "pieced",
                                               "spread",
                                               "near DBL_MAX (rescaled sums)"};

/* A coarse timer: whole ticks, mostly one step, a few preemptions (the
 * series quantized runs are made for). */
static void rough(double *x, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    double u = la_compact_rand01(&seed);
    double k = u < 0.7     ? 26
               : u < 0.8   ? 25
               : u < 0.9   ? 1
               : u < 0.999 ? 0
                           : 20000 + floor(1e5 * u);
    x[i] = k * Q;
  }
}

/* 200 boxes of 10 x 10 x 1 cells on 100 x 20 x 10 (every cell in one). */
static la_pieces_t boxes(void) {
  la_pieces_t g = {200, 20000, 100, 20, 10, NULL};
  g.p = calloc(g.count, sizeof *g.p);
  assert_non_null(g.p);
  for (uint64_t b = 0; b < g.count; b++) {
    uint64_t i0 = (b % 10) * 10, j0 = (b / 10 % 2) * 10, k0 = b / 20;
    g.p[b] = (la_piece_t){i0 + j0 * 100 + k0 * 2000, 10, 10, 1};
  }
  return g;
}

static void compact_spec(const double *x, size_t n, const char *spec,
                         double quantum, la_compact_result_t *r) {
  la_compact_params_t p;
  char why[128];
  assert_int_equal(la_compact_spec_parse(spec, &p, why, sizeof why), 0);
  p.quantum = quantum;
  assert_int_equal(la_compact(x, n, &p, r), 0);
}

/* The encoding of a series of the given kind. */
static void make_trace(int kind, la_compact_result_t *r) {
  double *x = malloc(N * sizeof *x);
  assert_non_null(x);
  memset(r, 0, sizeof *r);
  switch (kind) {
    case K_VERBATIM:
      assert_int_equal(la_compact_synth(6, N, 7, x), 0);
      compact_spec(x, N, "lossless", 0, r);
      break;
    case K_POLYLINE: /* lines, exceptions and verbatim runs */
      assert_int_equal(la_compact_synth(6, N, 11, x), 0);
      for (size_t i = 0; i < N; i += 97) x[i] *= 40;
      compact_spec(x, N, "polyline:cv=0.1", 0, r);
      break;
    case K_MAXERR:
      assert_int_equal(la_compact_synth(3, N, 13, x), 0);
      compact_spec(x, N, "maxerr:eps=0.1,relative", 0, r);
      break;
    case K_QUANTIZED:
      rough(x, N, 17);
      compact_spec(x, N, "polyline:cv=0.1", Q, r);
      assert_true(r->quantized > N / 2);
      break;
    case K_PIECED: {
      la_pieces_t g = boxes();
      la_compact_result_t in;
      uint8_t *gb;
      size_t glen;
      assert_int_equal(la_compact_synth(1, g.count, 19, x), 0);
      compact_spec(x, g.count, "polyline:cv=0.1", 0, &in);
      assert_int_equal(la_pieces_encode(&g, &gb, &glen), 0);
      assert_int_equal(la_compact_pieced(&in, x, gb, glen, r), 0);
      free(gb);
      la_compact_result_free(&in);
      la_pieces_free(&g);
      break;
    }
    case K_SPREAD: {
      la_compact_result_t in;
      assert_int_equal(la_compact_synth(1, N / 4, 23, x), 0);
      compact_spec(x, N / 4, "polyline:cv=0.1", 0, &in);
      assert_int_equal(la_compact_spread(&in, 4, r), 0);
      la_compact_result_free(&in);
      break;
    }
    case K_HUGE: { /* their running sum leaves the double range at scale 1 */
      uint64_t s = 29;
      for (size_t i = 0; i < N; i++)
        x[i] = (0.5 + la_compact_rand01(&s)) * 0x1p1020 * (i % 3 ? 1 : -1);
      x[N / 2] = NAN;
      x[N / 3] = INFINITY;
      compact_spec(x, N, "lossless", 0, r);
      break;
    }
  }
  free(x);
}

/* The ranges asked: the whole trace, prefixes, and spans of every length
 * (one point to most of the trace) from a fixed generator. */
static void range_at(uint64_t n, int k, uint64_t *first, uint64_t *count) {
  uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
  s ^= s >> 29;
  s *= 0xbf58476d1ce4e5b9ull;
  s ^= s >> 32;
  if (k == 0) {
    *first = 0, *count = n;
  } else if (k < 40) {
    *first = 0, *count = 1 + s % n;
  } else {
    uint64_t len = k % 3 == 0 ? 1 + s % 64 : 1 + (s >> 20) % n;
    *first = (s >> 7) % n;
    if (len > n - *first) len = n - *first;
    *count = len;
  }
}

static void range_sums(const la_trace_t *t, double *out) {
  uint64_t n = la_trace_count(t), first, count;
  for (int k = 0; k < NRANGES; k++) {
    range_at(n, k, &first, &count);
    assert_int_equal(la_trace_range_sum(t, first, count, &out[k]), 0);
  }
}

static la_trace_t *open_trace(const la_compact_result_t *r) {
  la_trace_t *t;
  char why[128];
  if (la_trace_open(r->bytes, r->len, &t, why, sizeof why) != 0)
    fail_msg("la_trace_open: %s", why);
  return t;
}

/* The encoding of a series of the kind, and its range sums asked by one
 * thread of a trace opened for them. */
static void one_thread_sums(int kind, la_compact_result_t *r, double *sums) {
  make_trace(kind, r);
  la_trace_t *t = open_trace(r);
  range_sums(t, sums);
  la_trace_close(t);
}

static uint64_t fnv(uint64_t h, const void *p, size_t len) {
  const uint8_t *b = p;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* Digests of the encodings and of their NRANGES range sums' bits, taken
 * with the decoder that built the sums at open (commit 1d0f3cd). A changed
 * encoding (the encoder's business) is told apart from changed sums. */
static const uint64_t want_bytes[K_COUNT] = {
    0xe78001a735fe9c52ull, 0x414ba63ea2194604ull, 0x5a02fd04c73be645ull,
    0x10590dfedaa53131ull, 0x2c0e5f7723283f82ull, 0x85b45ac4c042b802ull,
    0x65939071ab3fb76full};
static const uint64_t want_sums[K_COUNT] = {
    0xf8cde5fa4f2ca195ull, 0xb46833630650ada7ull, 0x38040649a0401608ull,
    0x1121d63bc8435f6eull, 0x3a9c9c8cdc51c926ull, 0x5e41d2bf8fbdfdaeull,
    0x09e1784188908e99ull};

static void test_sums_as_built_at_open(void **state) {
  (void)state;
  double sums[NRANGES];
  int bad = 0;
  for (int kind = 0; kind < K_COUNT; kind++) {
    la_compact_result_t r;
    one_thread_sums(kind, &r, sums);
    uint64_t hb = fnv(0xcbf29ce484222325ull, r.bytes, r.len);
    uint64_t hs = fnv(0xcbf29ce484222325ull, sums, sizeof sums);
    if (hb != want_bytes[kind] || hs != want_sums[kind]) {
      print_error(
          "%s: encoding 0x%016llxull (want 0x%016llxull), sums "
          "0x%016llxull (want 0x%016llxull)%s\n",
          kind_name[kind], (unsigned long long)hb,
          (unsigned long long)want_bytes[kind], (unsigned long long)hs,
          (unsigned long long)want_sums[kind],
          hb != want_bytes[kind] ? ": the encoding changed" : "");
      bad = 1;
    }
    la_compact_result_free(&r);
  }
  assert_false(bad);
}

typedef struct {
  const la_trace_t *t;
  pthread_barrier_t *start;
  double sums[NRANGES];
} asker_t;

static void *ask(void *arg) {
  asker_t *a = arg;
  pthread_barrier_wait(a->start);
  range_sums(a->t, a->sums);
  return NULL;
}

static void test_threads_after_values(void **state) {
  (void)state;
  double ref[NRANGES], *dec = malloc(N * sizeof *dec);
  assert_non_null(dec);
  for (int kind = 0; kind < K_COUNT; kind++) {
    la_compact_result_t r;
    one_thread_sums(kind, &r, ref); /* the reference */
    for (int round = 0; round < ROUNDS; round++) {
      asker_t a[THREADS];
      pthread_t th[THREADS];
      pthread_barrier_t start;
      la_trace_t *t = open_trace(&r);
      uint64_t n = la_trace_count(t);
      assert_true(n <= N);
      /* a subscriber reads the values (weights) first */
      assert_int_equal(la_trace_decode(t, 0, n, dec), 0);
      assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
      for (int i = 0; i < THREADS; i++) {
        a[i].t = t;
        a[i].start = &start;
        assert_int_equal(pthread_create(&th[i], NULL, ask, &a[i]), 0);
      }
      for (int i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        if (memcmp(a[i].sums, ref, sizeof ref) != 0)
          fail_msg("%s: thread %d's range sums differ from one thread's",
                   kind_name[kind], i);
      }
      pthread_barrier_destroy(&start);
      /* the values read before are the values read after */
      double *again = malloc(n * sizeof *again);
      assert_non_null(again);
      assert_int_equal(la_trace_decode(t, 0, n, again), 0);
      assert_memory_equal(again, dec, n * sizeof *dec);
      free(again);
      la_trace_close(t);
    }
    la_compact_result_free(&r);
  }
  free(dec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sums_as_built_at_open),
      cmocka_unit_test(test_threads_after_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
