/* SPDX-License-Identifier: BSD-3-Clause */
/* test_shm_layout.c: unit tests of the shared-memory segment layout
 * (wire/la_shm_layout.h) and of the segment libla really creates.
 *
 * Covers: the header's binary layout (field offsets and sizes are ABI
 * between libla and the LocalAgent); la_shm_buffer_stride,
 * la_shm_segment_size and la_shm_values (64-byte alignment, arithmetic, no
 * overlap, no overflow at the largest sizes); la_shm_header_check accepting
 * a header filled as libla fills it, and refusing each corrupted field with
 * a reason that names it; layout 4's weights area (versions 3 and 4,
 * feature bits, its size and place); a segment made by libla's
 * la__ipc_create passing
 * the check; and a real SysV segment (IPC_PRIVATE, 0600) attached by a
 * forked child that checks the header and writes values the parent reads.
 * Every IPC object created here is removed, also when a test fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#include "la.h"
#include "la_internal.h"
#include "la_shm_layout.h"
#include "la_test_child.h"

#define HLEN ((uint64_t)sizeof(la_shm_header_t))
#define NONCE 0x5eed5eed12345678ULL

/* ------------------------------------------------------------- helpers */

/* Fills every header field but magic the way la__ipc_create does, for a
 * segment of `size` bytes with k buffers of n elements. */
static void fill_header(la_shm_header_t *h, uint64_t n, uint32_t k,
                        uint64_t size) {
  h->version = LA_SHM_VERSION;
  h->header_len = sizeof *h;
  h->n_elements = n;
  h->n_buffers = k;
  h->creator_pid = (int32_t)getpid();
  h->nonce = NONCE;
  h->buffer_stride = la_shm_buffer_stride(n);
  h->segment_size = size;
  h->n_channels = 1;
}

/* A segment-sized, 64-byte aligned heap buffer with its header filled the
 * way la__ipc_create fills it. */
static la_shm_header_t *make_segment(uint64_t n, uint32_t k, uint64_t *bytes) {
  uint64_t size = la_shm_segment_size(n, k);
  la_shm_header_t *h = aligned_alloc(LA_SHM_ALIGN, size);
  assert_non_null(h);
  memset(h, 0, size);
  fill_header(h, n, k, size);
  h->magic = LA_SHM_MAGIC;
  *bytes = size;
  return h;
}

/* Asserts the check refuses with a reason containing `word`. */
static void expect_refused(const la_shm_header_t *h, uint64_t bytes,
                           uint64_t n, uint32_t k, uint64_t nonce,
                           const char *word) {
  const char *why = la_shm_header_check(h, bytes, n, k, nonce);
  if (!why)
    fail_msg("header accepted; expected a refusal naming '%s'", word);
  if (!strstr(why, word))
    fail_msg("reason '%s' does not name '%s'", why, word);
}

static int ipc_gone(int shm_id) {
  struct shmid_ds ds;
  return shmctl(shm_id, IPC_STAT, &ds) != 0 &&
         (errno == EINVAL || errno == EIDRM);
}

/* ---------------------------------------------------------------- layout */

static void test_header_binary_layout(void **state) {
  /* The header is an ABI between separately built programs: pin it. */
  assert_int_equal(sizeof(la_shm_bufmeta_t), 64);
  assert_int_equal(sizeof(la_shm_header_t), 64 + 64 * LA_SHM_MAX_BUFFERS);
  assert_int_equal(sizeof(la_shm_header_t) % LA_SHM_ALIGN, 0);
  assert_int_equal(offsetof(la_shm_header_t, magic), 0);
  assert_int_equal(offsetof(la_shm_header_t, version), 8);
  assert_int_equal(offsetof(la_shm_header_t, header_len), 12);
  assert_int_equal(offsetof(la_shm_header_t, n_elements), 16);
  assert_int_equal(offsetof(la_shm_header_t, n_buffers), 24);
  assert_int_equal(offsetof(la_shm_header_t, creator_pid), 28);
  assert_int_equal(offsetof(la_shm_header_t, nonce), 32);
  assert_int_equal(offsetof(la_shm_header_t, buffer_stride), 40);
  assert_int_equal(offsetof(la_shm_header_t, segment_size), 48);
  assert_int_equal(offsetof(la_shm_header_t, buf), 64);
  assert_int_equal(offsetof(la_shm_bufmeta_t, cycle_tag), 0);
  assert_int_equal(offsetof(la_shm_bufmeta_t, seq), 8);
  assert_int_equal(offsetof(la_shm_bufmeta_t, scale), 16);
  assert_int_equal(offsetof(la_shm_bufmeta_t, t_xfer_ns), 24);
  assert_int_equal(offsetof(la_shm_bufmeta_t, range_errors), 32);
  /* magic spells "LA_SHM01" */
  char m[9];
  for (int i = 0; i < 8; i++)
    m[i] = (char)(LA_SHM_MAGIC >> (56 - 8 * i));
  m[8] = 0;
  assert_string_equal(m, "LA_SHM01");
  assert_true(LA_SHM_MIN_BUFFERS >= 2);
  assert_true(LA_SHM_MAX_BUFFERS >= LA_SHM_MIN_BUFFERS);
}

static void test_stride_arithmetic(void **state) {
  /* a buffer is n doubles then n flag bytes, padded to 64 */
  assert_int_equal(la_shm_buffer_stride(1), 64);
  assert_int_equal(la_shm_buffer_stride(7), 64);   /* 63 bytes */
  assert_int_equal(la_shm_buffer_stride(8), 128);  /* 72 bytes */
  assert_int_equal(la_shm_buffer_stride(14), 128); /* 126 */
  assert_int_equal(la_shm_buffer_stride(15), 192); /* 135 */
  assert_int_equal(la_shm_buffer_stride(1000), 9024);
  assert_int_equal(la_shm_buffer_stride(1024), 9216);
  assert_int_equal(la_shm_buffer_stride(LA_SHM_MAX_ELEMENTS),
                   LA_SHM_MAX_ELEMENTS * 9);
  for (uint64_t n = 1; n <= 5000; n++) {
    uint64_t s = la_shm_buffer_stride(n);
    assert_int_equal(s % LA_SHM_ALIGN, 0);
    assert_true(s >= n * (sizeof(double) + 1));
    assert_true(s < n * (sizeof(double) + 1) + LA_SHM_ALIGN);
  }
}

static void test_segment_size_arithmetic(void **state) {
  assert_int_equal(la_shm_segment_size(1, 2), HLEN + 2 * 64);
  assert_int_equal(la_shm_segment_size(1000, 3), HLEN + 3 * 9024);
  assert_int_equal(la_shm_segment_size(1024, 16), HLEN + 16 * 9216);
  /* the largest segment does not wrap */
  uint64_t big = la_shm_segment_size(LA_SHM_MAX_ELEMENTS,
                                     LA_SHM_MAX_BUFFERS);
  assert_int_equal(big, HLEN + (uint64_t)LA_SHM_MAX_BUFFERS *
                                   LA_SHM_MAX_ELEMENTS * 9);
  assert_true(big > LA_SHM_MAX_ELEMENTS * 9 * LA_SHM_MAX_BUFFERS);
  for (uint32_t k = LA_SHM_MIN_BUFFERS; k <= LA_SHM_MAX_BUFFERS; k++)
    for (uint64_t n = 1; n < 300; n += 7) {
      uint64_t s = la_shm_segment_size(n, k);
      assert_int_equal(s % LA_SHM_ALIGN, 0);
      assert_int_equal(s, HLEN + k * la_shm_buffer_stride(n));
    }
}

static void test_flags_follow_values(void **state) {
  /* flags of buffer i: n bytes right after its values, inside its stride,
   * never overlapping the next buffer's values */
  const uint64_t ns[] = {1, 7, 8, 9, 1000, 4097};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
    uint64_t n = ns[a], bytes;
    uint32_t k = 3;
    la_shm_header_t *h = make_segment(n, k, &bytes);
    for (uint32_t i = 0; i < k; i++) {
      uint8_t *f = la_shm_flags(h, i);
      assert_ptr_equal(f, (uint8_t *)(la_shm_values(h, i) + n));
      assert_true(f + n <= (uint8_t *)la_shm_values(h, i) + h->buffer_stride);
      memset(f, LA_SHM_FLAG_INTERFERED, n); /* writable (ASan) */
      if (i + 1 < k) assert_true(f + n <= (uint8_t *)la_shm_values(h, i + 1));
    }
    assert_null(la_shm_header_check(h, bytes, n, k, NONCE));
    free(h);
  }
  assert_int_equal(offsetof(la_shm_bufmeta_t, interference_ticks), 40);
  assert_int_equal(offsetof(la_shm_bufmeta_t, n_flagged), 48);
  assert_true(LA_SHM_VERSION >= 2);
}

static void test_values_alignment_and_bounds(void **state) {
  const uint64_t ns[] = {1, 7, 8, 9, 1000, 4097};
  for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
    for (uint32_t k = LA_SHM_MIN_BUFFERS; k <= LA_SHM_MAX_BUFFERS;
         k += 7) {
      uint64_t n = ns[a], bytes;
      la_shm_header_t *h = make_segment(n, k, &bytes);
      char *base = (char *)h, *end = base + bytes;
      double *prev_end = NULL;
      for (uint32_t i = 0; i < k; i++) {
        double *v = la_shm_values(h, i);
        assert_int_equal((uintptr_t)v % LA_SHM_ALIGN, 0);
        assert_int_equal((char *)v - base,
                         HLEN + i * la_shm_buffer_stride(n));
        assert_true((char *)v >= base + HLEN); /* after the header */
        if (prev_end) assert_true(v >= prev_end); /* no overlap */
        assert_true((char *)(v + n) <= end);
        /* every element is writable inside the allocation (ASan) */
        for (uint64_t e = 0; e < n; e++) v[e] = (double)(i * 100000 + e);
        prev_end = v + n;
      }
      /* the writes did not touch the header */
      assert_null(la_shm_header_check(h, bytes, n, k, NONCE));
      for (uint32_t i = 0; i < k; i++)
        assert_true(la_shm_values(h, i)[n - 1] ==
                    (double)(i * 100000 + n - 1));
      free(h);
    }
}

/* ----------------------------------------------------------------- check */

static void test_check_accepts_good_headers(void **state) {
  const struct {
    uint64_t n;
    uint32_t k;
  } ok[] = {{1, 2}, {8, 2}, {1000, 3}, {12345, 16}, {65536, 4}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    uint64_t bytes;
    la_shm_header_t *h = make_segment(ok[i].n, ok[i].k, &bytes);
    const char *why = la_shm_header_check(h, bytes, ok[i].n, ok[i].k, NONCE);
    if (why) fail_msg("good header (%llu x %u) refused: %s",
                      (unsigned long long)ok[i].n, ok[i].k, why);
    /* a mapping larger than announced (page rounding) is fine */
    assert_null(la_shm_header_check(h, bytes + 4096, ok[i].n, ok[i].k,
                                    NONCE));
    free(h);
  }
}

static void test_check_refuses_each_field(void **state) {
  const uint64_t n = 1000;
  const uint32_t k = 3;
  uint64_t bytes;
  la_shm_header_t *h = make_segment(n, k, &bytes);
  la_shm_header_t good = *h;
  assert_null(la_shm_header_check(h, bytes, n, k, NONCE));

  h->magic ^= 1;
  expect_refused(h, bytes, n, k, NONCE, "magic");
  h->magic = 0; /* a segment whose creator has not finished */
  expect_refused(h, bytes, n, k, NONCE, "magic");
  *h = good;

  h->version = LA_SHM_VERSION + 1;
  expect_refused(h, bytes, n, k, NONCE, "version");
  h->version = 0;
  expect_refused(h, bytes, n, k, NONCE, "version");
  *h = good;

  h->header_len = sizeof *h - 64;
  expect_refused(h, bytes, n, k, NONCE, "header length");
  h->header_len = sizeof *h + 64;
  expect_refused(h, bytes, n, k, NONCE, "header length");
  *h = good;

  expect_refused(h, bytes, n, k, NONCE + 1, "nonce"); /* wrong quote */
  expect_refused(h, bytes, n, k, 0, "nonce");
  h->nonce = 0;
  expect_refused(h, bytes, n, k, NONCE, "nonce"); /* corrupted header */
  *h = good;

  expect_refused(h, bytes, n - 1, k, NONCE, "element count");
  expect_refused(h, bytes, n + 1, k, NONCE, "element count");
  h->n_elements = n + 1;
  expect_refused(h, bytes, n, k, NONCE, "element count");
  *h = good;

  expect_refused(h, bytes, n, k + 1, NONCE, "buffer count");
  expect_refused(h, bytes, n, k - 1, NONCE, "buffer count");
  h->n_buffers = 2;
  expect_refused(h, bytes, n, k, NONCE, "buffer count");
  *h = good;

  h->buffer_stride += 64;
  expect_refused(h, bytes, n, k, NONCE, "stride");
  h->buffer_stride = n * sizeof(double) - 64; /* buffers would overlap */
  expect_refused(h, bytes, n, k, NONCE, "stride");
  *h = good;

  h->segment_size += 64;
  expect_refused(h, bytes + 64, n, k, NONCE, "segment size");
  h->segment_size -= 128;
  expect_refused(h, bytes, n, k, NONCE, "segment size");
  *h = good;

  /* the mapping is shorter than the header says the segment is */
  expect_refused(h, bytes - 1, n, k, NONCE, "segment size");
  expect_refused(h, HLEN, n, k, NONCE, "segment size");
  free(h);
}

static void test_check_buffer_count_range(void **state) {
  /* header and announcement agree, but the count itself is out of range */
  const uint32_t bad[] = {0, 1, LA_SHM_MAX_BUFFERS + 1, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t bytes;
    la_shm_header_t *h = make_segment(10, 2, &bytes);
    h->n_buffers = bad[i];
    h->segment_size = la_shm_segment_size(10, bad[i]);
    expect_refused(h, bytes, 10, bad[i], NONCE, "buffer count");
    free(h);
  }
  for (uint32_t k = LA_SHM_MIN_BUFFERS; k <= LA_SHM_MAX_BUFFERS; k++) {
    uint64_t bytes;
    la_shm_header_t *h = make_segment(10, k, &bytes);
    assert_null(la_shm_header_check(h, bytes, 10, k, NONCE));
    free(h);
  }
}

static void test_check_element_count_range(void **state) {
  /* agreed but out of range; stride and size computed the same way, so
   * only the range check can refuse. 2^61 elements make the stride wrap
   * to 0 in 64 bits: the range check must come first. */
  const uint64_t bad[] = {0, LA_SHM_MAX_ELEMENTS + 1, 1ULL << 61,
                          UINT64_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t bytes;
    la_shm_header_t *h = make_segment(10, 2, &bytes);
    h->n_elements = bad[i];
    h->buffer_stride = la_shm_buffer_stride(bad[i]);
    h->segment_size = la_shm_segment_size(bad[i], 2);
    uint64_t claimed = h->segment_size > bytes ? h->segment_size : bytes;
    expect_refused(h, claimed, bad[i], 2, NONCE, "element count");
    free(h);
  }
  /* the maximum itself is in range (checked on the header alone) */
  uint64_t bytes;
  la_shm_header_t *h = make_segment(10, 2, &bytes);
  uint64_t n = LA_SHM_MAX_ELEMENTS;
  h->n_elements = n;
  h->buffer_stride = la_shm_buffer_stride(n);
  h->segment_size = la_shm_segment_size(n, 2);
  assert_null(la_shm_header_check(h, h->segment_size, n, 2, NONCE));
  free(h);
}

static void test_check_segment_smaller_than_header(void **state) {
  /* Only `bytes` bytes exist: the check must not read past them (a
   * heap buffer of exactly that size lets ASan see any such read). */
  const uint64_t sizes[] = {0, 1, 8, 64, HLEN - 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    uint64_t bytes = sizes[i];
    uint8_t *p = malloc(bytes ? bytes : 1);
    assert_non_null(p);
    memset(p, 0, bytes ? bytes : 1);
    const char *why =
        la_shm_header_check((const la_shm_header_t *)p, bytes, 10, 2, NONCE);
    assert_non_null(why);
    assert_non_null(strstr(why, "segment"));
    assert_non_null(strstr(why, "header"));
    free(p);
  }
}

/* -------------------------------------------------- libla's own segment */

static la__ipc_t g_ipc;
static int g_shm = -1;

static int ipc_teardown(void **state) {
  if (g_ipc.shm_id >= 0 || g_ipc.sem_id >= 0 || g_ipc.hdr)
    la__ipc_destroy(&g_ipc);
  memset(&g_ipc, 0, sizeof g_ipc);
  g_ipc.shm_id = g_ipc.sem_id = -1;
  if (g_shm >= 0) shmctl(g_shm, IPC_RMID, NULL);
  g_shm = -1;
  return 0;
}

/* Layout 4's weights area: the versions and feature bits the check takes,
 * the segment size with and without the area, where the area and its
 * slots lie (aligned, after the last buffer, inside the segment). */
static void test_weights_area_layout(void **state) {
  assert_int_equal(sizeof(la_shm_weights_hdr_t), 64);
  assert_int_equal(sizeof(la_shm_weights_slot_t), 64);
  assert_int_equal(offsetof(la_shm_header_t, features), 60);
  assert_int_equal(offsetof(la_shm_weights_slot_t, seq), 0);
  assert_int_equal(la_shm_weights_stride(1), 128);
  assert_int_equal(la_shm_weights_stride(8), 128);
  assert_int_equal(la_shm_weights_stride(9), 192);
  assert_int_equal(la_shm_weights_bytes(1000), 64 + 2 * (64 + 8000));
  const uint64_t n = 1000;
  const uint32_t k = 3;
  uint64_t bytes;
  la_shm_header_t *h = make_segment(n, k, &bytes);
  la_shm_header_t good = *h;
  /* layout 3 (a libla before the area): accepted with features 0 */
  h->version = 3;
  assert_null(la_shm_header_check(h, bytes, n, k, NONCE));
  h->features = LA_SHM_FEAT_WEIGHTS;
  expect_refused(h, bytes, n, k, NONCE, "reserved");
  *h = good;
  /* layout 4 with the area: the size counts it */
  uint64_t big = bytes + la_shm_weights_bytes(n);
  h->features = LA_SHM_FEAT_WEIGHTS;
  expect_refused(h, big, n, k, NONCE, "segment size"); /* size without it */
  h->segment_size = big;
  assert_null(la_shm_header_check(h, big, n, k, NONCE));
  expect_refused(h, big - 64, n, k, NONCE, "segment size");
  h->features = 8;
  expect_refused(h, big, n, k, NONCE, "feature");
  free(h);
  /* the area starts after the last buffer, its slots inside the segment */
  uint64_t total = la_shm_segment_size(n, k) + la_shm_weights_bytes(n);
  char *seg = aligned_alloc(LA_SHM_ALIGN, total);
  assert_non_null(seg);
  la_shm_weights_hdr_t *a = la_shm_weights_area(seg, n, k, 1);
  assert_int_equal((char *)a - seg, la_shm_segment_size(n, k));
  assert_int_equal(((char *)a - seg) % LA_SHM_ALIGN, 0);
  for (uint32_t i = 0; i < LA_SHM_WEIGHTS_SLOTS; i++) {
    char *sl = (char *)la_shm_weights_slot(a, n, i);
    assert_int_equal((sl - seg) % LA_SHM_ALIGN, 0);
    assert_true(sl + 64 + n * sizeof(double) <= seg + total);
  }
  free(seg);
}

/* Layout 5's row values: where they lie in a buffer, the strides and
 * sizes with them, and what the check takes: only in version 5, only for a
 * grid registration whose rows divide the elements, with the sizes that
 * count them. */
static void test_rows_layout(void **state) {
  const uint64_t n = 1001, rows = 7; /* 143 cells a row */
  const uint32_t k = 3, ch = 2;
  /* after 2 x 1001 doubles and 1001 flag bytes, 8-aligned */
  assert_int_equal(la_shm_rows_offset(n, ch), 16016 + 1008);
  assert_int_equal(la_shm_buffer_stride_r(n, ch, rows),
                   (16016 + 1008 + 56 + 63) / 64 * 64);
  assert_int_equal(la_shm_buffer_stride_r(n, ch, 0),
                   la_shm_buffer_stride_ch(n, ch));
  uint64_t segsz = la_shm_segment_size_r(n, k, ch, rows);
  char *seg = aligned_alloc(LA_SHM_ALIGN, segsz);
  assert_non_null(seg);
  for (uint32_t i = 0; i < k; i++) {
    char *v = (char *)la_shm_buffer_r(seg, n, ch, rows, i);
    char *f = (char *)la_shm_buffer_flags_r(seg, n, ch, rows, i);
    char *r = (char *)la_shm_buffer_rows(seg, n, ch, rows, i);
    assert_int_equal((v - seg) % LA_SHM_ALIGN, 0);
    assert_true(f == v + 16016);
    assert_true(r >= f + n && (r - seg) % 8 == 0);
    assert_true(r + rows * 8 <= seg + segsz);
    if (i + 1 < k)
      assert_true(r + rows * 8 <=
                  (char *)la_shm_buffer_r(seg, n, ch, rows, i + 1));
  }
  free(seg);

  /* a header of layout 5 with rows and the weights area */
  la_shm_header_t *h = calloc(1, sizeof *h);
  assert_non_null(h);
  uint64_t size = segsz + la_shm_weights_bytes(n);
  fill_header(h, n, k, size);
  h->version = 5;
  h->n_channels = ch;
  h->features = LA_SHM_FEAT_WEIGHTS | LA_SHM_FEAT_ROWS;
  h->buffer_stride = la_shm_buffer_stride_r(n, ch, rows);
  h->magic = LA_SHM_MAGIC;
  assert_null(la_shm_header_check_r(h, size, n, k, ch, rows, NONCE));
  const char *why;
  /* the registration was not a grid, or a grid whose rows do not divide */
  why = la_shm_header_check_r(h, size, n, k, ch, 0, NONCE);
  assert_non_null(why);
  assert_non_null(strstr(why, "without a grid"));
  why = la_shm_header_check_r(h, size, n, k, ch, 11 * 13 * 2, NONCE);
  assert_non_null(why);
  assert_non_null(strstr(why, "without a grid"));
  why = la_shm_header_check_r(h, size, n, k, ch, 143, NONCE);
  assert_non_null(why); /* rows of another grid: another stride */
  assert_non_null(strstr(why, "stride"));
  /* rows in a version 4 header */
  h->version = 4;
  why = la_shm_header_check_r(h, size, n, k, ch, rows, NONCE);
  assert_non_null(why);
  assert_non_null(strstr(why, "older than version 5"));
  /* version 5 without rows: the layout-4 geometry */
  h->version = 5;
  h->features = LA_SHM_FEAT_WEIGHTS;
  why = la_shm_header_check_r(h, size, n, k, ch, rows, NONCE);
  assert_non_null(why);
  assert_non_null(strstr(why, "stride"));
  h->buffer_stride = la_shm_buffer_stride_ch(n, ch);
  h->segment_size = la_shm_segment_size_ch(n, k, ch) + la_shm_weights_bytes(n);
  assert_null(la_shm_header_check_r(h, h->segment_size, n, k, ch, rows, NONCE));
  /* a segment smaller than the rows it claims */
  h->features = LA_SHM_FEAT_WEIGHTS | LA_SHM_FEAT_ROWS;
  h->buffer_stride = la_shm_buffer_stride_r(n, ch, rows);
  h->segment_size = size;
  why = la_shm_header_check_r(h, size - 64, n, k, ch, rows, NONCE);
  assert_non_null(why);
  assert_non_null(strstr(why, "segment size"));
  free(h);
}

/* Layout 6's piece area: its size (records derived from the elements,
 * bounded), where buffer i's table lies (after the weights area, inside
 * the segment), and the versions and sizes the check takes. */
static void test_pieces_layout(void **state) {
  assert_int_equal(sizeof(la_shm_piece_t), 32);
  assert_int_equal(la_shm_pieces_count(1), LA_SHM_PIECES_MIN);
  assert_int_equal(la_shm_pieces_count(64 * 64), 64);
  assert_int_equal(la_shm_pieces_count(64 * 64 + 1), 128);
  assert_int_equal(la_shm_pieces_count(1ULL << 32), LA_SHM_PIECES_MAX);
  const uint64_t n = 24 * 1000, grid_rows = 1000;
  const uint32_t k = 2, ch = 1;
  uint64_t base = la_shm_segment_size_r(n, k, ch, grid_rows) +
                  la_shm_weights_bytes(n);
  uint64_t size = base + la_shm_pieces_bytes(n, k);
  assert_int_equal(la_shm_pieces_bytes(n, k), 2 * (64 + 512 * 32));
  char *seg = aligned_alloc(LA_SHM_ALIGN, size);
  assert_non_null(seg);
  memset(seg, 0, size);
  la_shm_header_t *h = (la_shm_header_t *)seg;
  fill_header(h, n, k, size);
  h->magic = LA_SHM_MAGIC;
  h->version = 6;
  h->features = LA_SHM_FEAT_WEIGHTS | LA_SHM_FEAT_ROWS | LA_SHM_FEAT_PIECES;
  h->buffer_stride = la_shm_buffer_stride_r(n, ch, grid_rows);
  assert_int_equal((char *)la_shm_pieces_head(seg, n, k, ch, grid_rows, 0) -
                       seg,
                   base);
  assert_int_equal((char *)la_shm_pieces_head(seg, n, k, ch, grid_rows, 1) -
                       seg,
                   base + la_shm_pieces_stride(n));
  assert_null(la_shm_header_check_r(h, size, n, k, ch, grid_rows, NONCE));
  const char *why =
      la_shm_header_check_r(h, size - 32, n, k, ch, grid_rows, NONCE);
  assert_non_null(why); /* a segment smaller than its piece tables */
  assert_non_null(strstr(why, "segment size"));
  h->version = 5; /* pieces only from version 6 */
  why = la_shm_header_check_r(h, size, n, k, ch, grid_rows, NONCE);
  assert_non_null(why);
  assert_non_null(strstr(why, "older than version 6"));
  h->version = 6; /* a version-6 header without the table: layout 5's */
  h->features = LA_SHM_FEAT_WEIGHTS | LA_SHM_FEAT_ROWS;
  h->segment_size = base;
  assert_null(la_shm_header_check_r(h, base, n, k, ch, grid_rows, NONCE));
  free(seg);
}

static int ipc_setup(void **state) {
  memset(&g_ipc, 0, sizeof g_ipc);
  g_ipc.shm_id = g_ipc.sem_id = -1;
  g_shm = -1;
  return 0;
}

static void test_libla_segment_passes_check(void **state) {
  int rc = la__ipc_create(&g_ipc, 1000, 3);
  if (rc == LA_EIPC) {
    print_message("skip: SysV IPC not available: %s\n", LA_lastError());
    skip();
  }
  assert_int_equal(rc, 0);
  struct shmid_ds ds;
  assert_int_equal(shmctl(g_ipc.shm_id, IPC_STAT, &ds), 0);
  assert_int_equal(ds.shm_perm.mode & 0777, 0600);
  /* layout 6: the buffers, then the weights area (LA_weights), then the
   * piece tables */
  assert_int_equal(ds.shm_segsz, la_shm_segment_size(1000, 3) +
                                      la_shm_weights_bytes(1000) +
                                      la_shm_pieces_bytes(1000, 3));
  assert_int_equal(g_ipc.n_pieces, 64);
  assert_int_equal(ds.shm_cpid, getpid());
  la_shm_header_t *h = g_ipc.hdr;
  assert_int_equal((uintptr_t)h % LA_SHM_ALIGN, 0);
  const char *why = la_shm_header_check(h, ds.shm_segsz, 1000, 3, h->nonce);
  if (why) fail_msg("libla's own segment refused: %s", why);
  assert_int_equal(h->creator_pid, getpid());
  assert_true(h->nonce != 0);
  assert_non_null(la_shm_header_check(h, ds.shm_segsz, 1000, 3,
                                      h->nonce ^ 1));
  /* semaphore set: one per buffer, 0600, all free (1) */
  struct semid_ds sds;
  union {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
  } arg = {.buf = &sds};
  assert_int_equal(semctl(g_ipc.sem_id, 0, IPC_STAT, arg), 0);
  assert_int_equal(sds.sem_nsems, 3);
  assert_int_equal(sds.sem_perm.mode & 0777, 0600);
  for (int i = 0; i < 3; i++)
    assert_int_equal(semctl(g_ipc.sem_id, i, GETVAL), 1);
  /* values start at zero */
  for (uint32_t i = 0; i < 3; i++)
    for (uint64_t e = 0; e < 1000; e++)
      assert_true(la_shm_values(h, i)[e] == 0.0);

  /* a second segment gets another nonce */
  la__ipc_t other;
  assert_int_equal(la__ipc_create(&other, 10, 2), 0);
  uint64_t n2 = other.hdr->nonce;
  la__ipc_destroy(&other);
  assert_true(n2 != h->nonce);

  int shm = g_ipc.shm_id, sem = g_ipc.sem_id;
  la__ipc_destroy(&g_ipc);
  assert_true(ipc_gone(shm));
  assert_int_equal(semctl(sem, 0, GETVAL), -1);
  la__ipc_destroy(&g_ipc); /* idempotent */
}

static void test_libla_rejects_bad_sizes(void **state) {
  assert_int_equal(la__ipc_create(&g_ipc, 0, 2), LA_EINVAL);
  assert_int_equal(la__ipc_create(&g_ipc, LA_SHM_MAX_ELEMENTS + 1, 2),
                   LA_EINVAL);
  assert_int_equal(g_ipc.shm_id, -1);
  assert_int_equal(g_ipc.sem_id, -1);
}

/* ---------------------------------------------- real segment, two procs */

static int child_main(int shm_id, uint64_t n, uint32_t k, uint64_t nonce) {
  /* what the LocalAgent does: attach by id, check, then use */
  la_shm_header_t *h = shmat(shm_id, NULL, 0);
  if (h == (void *)-1) return 10;
  struct shmid_ds ds;
  if (shmctl(shm_id, IPC_STAT, &ds) != 0) return 11;
  if (la_shm_header_check(h, ds.shm_segsz, n, k, nonce) != NULL) return 12;
  if (la_shm_header_check(h, ds.shm_segsz, n, k, nonce + 1) == NULL)
    return 13;
  if (la_shm_header_check(h, ds.shm_segsz, n + 1, k, nonce) == NULL)
    return 14;
  if (h->creator_pid != getppid()) return 15;
  for (uint32_t i = 0; i < k; i++) {
    double *v = la_shm_values(h, i);
    if ((uintptr_t)v % LA_SHM_ALIGN) return 16;
    for (uint64_t e = 0; e < n; e++) v[e] = 1000.0 * i + (double)e + 0.5;
    h->buf[i].cycle_tag = 100 + i;
    h->buf[i].seq = i;
    h->buf[i].scale = 0.25;
  }
  if (shmdt(h) != 0) return 17;
  return 0;
}

static void test_sysv_segment_two_processes(void **state) {
  const uint64_t n = 5000;
  const uint32_t k = 4;
  uint64_t size = la_shm_segment_size(n, k);
  g_shm = shmget(IPC_PRIVATE, size, IPC_CREAT | IPC_EXCL | 0600);
  if (g_shm < 0) {
    print_message("skip: shmget: %s\n", strerror(errno));
    skip();
  }
  struct shmid_ds ds;
  assert_int_equal(shmctl(g_shm, IPC_STAT, &ds), 0);
  assert_int_equal(ds.shm_perm.mode & 0777, 0600);
  assert_int_equal(ds.shm_segsz, size);
  la_shm_header_t *h = shmat(g_shm, NULL, 0);
  assert_true(h != (void *)-1);
  fill_header(h, n, k, size);
  __atomic_store_n(&h->magic, LA_SHM_MAGIC, __ATOMIC_RELEASE);

  pid_t pid = la_test_fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    shmdt(h); /* attach afresh, as an unrelated process would */
    _exit(child_main(g_shm, n, k, NONCE));
  }
  int st = la_test_wait(pid);
  if (st != 0)
    fail_msg(
        "child failed: %s %d (10 shmat, 11 stat, 12 check refused, "
        "13/14 wrong nonce/count accepted, 15 pid, 16 alignment)",
        st >= 1000 ? "signal" : "exit", st >= 1000 ? st - 1000 : st);
  /* the parent sees what the child wrote */
  for (uint32_t i = 0; i < k; i++) {
    double *v = la_shm_values(h, i);
    for (uint64_t e = 0; e < n; e++)
      if (v[e] != 1000.0 * i + (double)e + 0.5)
        fail_msg("buffer %u element %llu: %g", i, (unsigned long long)e,
                 v[e]);
    assert_int_equal(h->buf[i].cycle_tag, 100 + i);
    assert_int_equal(h->buf[i].seq, i);
    assert_true(h->buf[i].scale == 0.25);
  }
  /* the child's writes stayed inside the buffers */
  assert_null(la_shm_header_check(h, size, n, k, NONCE));
  assert_int_equal(shmctl(g_shm, IPC_STAT, &ds), 0);
  assert_int_equal(ds.shm_nattch, 1);
  assert_int_equal(shmdt(h), 0);
  assert_int_equal(shmctl(g_shm, IPC_RMID, NULL), 0);
  assert_true(ipc_gone(g_shm));
  g_shm = -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_header_binary_layout),
    cmocka_unit_test(test_stride_arithmetic),
    cmocka_unit_test(test_flags_follow_values),
    cmocka_unit_test(test_segment_size_arithmetic),
    cmocka_unit_test(test_values_alignment_and_bounds),
    cmocka_unit_test(test_check_accepts_good_headers),
    cmocka_unit_test(test_check_refuses_each_field),
    cmocka_unit_test(test_check_buffer_count_range),
    cmocka_unit_test(test_check_element_count_range),
    cmocka_unit_test(test_check_segment_smaller_than_header),
    cmocka_unit_test(test_weights_area_layout),
    cmocka_unit_test(test_rows_layout),
    cmocka_unit_test(test_pieces_layout),
    cmocka_unit_test_setup_teardown(test_libla_segment_passes_check,
                                    ipc_setup, ipc_teardown),
    cmocka_unit_test_setup_teardown(test_libla_rejects_bad_sizes, ipc_setup,
                                    ipc_teardown),
    cmocka_unit_test_setup_teardown(test_sysv_segment_two_processes,
                                    ipc_setup, ipc_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
