/* test_outq.c: unit tests of the LocalAgent's acknowledgement queue with its
 * spool (localagent/outq.{h,c}, localagent/spool.{h,c}).
 *
 * Every test gets a fresh directory from mkdtemp under /tmp (the spool is a
 * "spool" subdirectory the queue creates) and removes it afterwards.
 * Covers: push/next/ack in order; cumulative acks freeing memory and
 * unlinking files; rewind resending everything unacknowledged in order, also
 * with acks overtaking the cursor; the memory limit sending messages to disk
 * while the send order stays seq order; spill_all, close and reopen (every
 * message back in order, seq continuing, with and without a clean close);
 * the spool limit (LA_ELIMIT, dropped counted, nothing else lost); corrupt
 * spool files (truncated, bad checksum, bad header, wrong seq, bad names,
 * zero length, stale .tmp, deleted) quarantined as .bad, counted, the rest
 * delivered; acks beyond the last sent seq (LA_EPROTO); pushes out of
 * reserved order (LA_EINVAL); memory-only mode; the lock against a second
 * queue; open errors; a spool that disappears (write failures); limits
 * changed at run time; a multi-megabyte message; the file format byte by
 * byte; and a seeded stress run of 10^5 messages checking the queue against
 * a model after every operation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "la.h"
#include "la_crc32.h"
#include "outq.h"
#include "spool.h"

#define HDR LA__SPOOL_HDR_LEN

typedef struct fx {
  char dir[64];   /* mkdtemp */
  char spool[96]; /* dir/spool */
  int notes;      /* note callbacks received */
  char last[512]; /* the last one */
} fx_t;

/* ------------------------------------------------------------- helpers -- */

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  return remove(path);
}

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  strcpy(f->dir, "/tmp/test_outq.XXXXXX");
  if (mkdtemp(f->dir) == NULL) {
    free(f);
    return -1;
  }
  snprintf(f->spool, sizeof f->spool, "%s/spool", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx_t *f = *state;
  nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(f);
  return 0;
}

static void on_note(void *arg, const char *msg) {
  fx_t *f = arg;
  f->notes++;
  snprintf(f->last, sizeof f->last, "%s", msg);
}

/* Deterministic frame for seq: its length, then 8 bytes of seq, then
 * filler derived from seq. */
static size_t frame_len(uint64_t seq) {
  return 9 + (size_t)((seq * 2654435761u) >> 7) % 32;
}

static void make_frame(uint64_t seq, uint8_t *buf, size_t len) {
  size_t i;
  for (i = 0; i < len; i++)
    buf[i] = i < 8 ? (uint8_t)(seq >> (8 * i)) : (uint8_t)(seq * 131 + i * 7);
}

static int frame_ok(uint64_t seq, const uint8_t *b, size_t len) {
  size_t i;
  for (i = 0; i < len; i++) {
    uint8_t want =
        i < 8 ? (uint8_t)(seq >> (8 * i)) : (uint8_t)(seq * 131 + i * 7);
    if (b[i] != want) return 0;
  }
  return 1;
}

/* Reserves and pushes a frame of len bytes (0: frame_len(seq)); returns the
 * push result and the seq in *seq_out (if not NULL). */
static int push_len(la_outq_t *q, size_t len, uint64_t *seq_out) {
  uint8_t buf[4096];
  uint64_t seq = la_outq_reserve_seq(q);
  assert_true(seq > 0);
  if (len == 0) len = frame_len(seq);
  assert_true(len <= sizeof buf);
  make_frame(seq, buf, len);
  if (seq_out != NULL) *seq_out = seq;
  return la_outq_push(q, seq, buf, len);
}

static uint64_t push_ok(la_outq_t *q, size_t len) {
  uint64_t seq;
  assert_int_equal(push_len(q, len, &seq), 0);
  return seq;
}

/* Expects la_outq_next to give seq with its frame (len 0: frame_len). */
static void expect_next(la_outq_t *q, uint64_t want, size_t want_len) {
  uint64_t seq = 0;
  const uint8_t *b = NULL;
  size_t len = 0;
  assert_int_equal(la_outq_next(q, &seq, &b, &len), 1);
  assert_int_equal(seq, want);
  assert_int_equal(len, want_len ? want_len : frame_len(want));
  assert_true(frame_ok(seq, b, len));
}

static void expect_none(la_outq_t *q) {
  uint64_t seq;
  const uint8_t *b;
  size_t len;
  assert_int_equal(la_outq_next(q, &seq, &b, &len), 0);
}

static la_outq_stats_t stats(const la_outq_t *q) {
  la_outq_stats_t st;
  memset(&st, 0xff, sizeof st);
  la_outq_get_stats(q, &st);
  return st;
}

/* Files in dir whose names end with suffix. */
static int count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int n = 0;
  size_t m = strlen(suffix);
  if (d == NULL) return -1;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    if (de->d_name[0] != '.' && l >= m &&
        strcmp(de->d_name + l - m, suffix) == 0)
      n++;
  }
  closedir(d);
  return n;
}

static void spool_path(const fx_t *f, uint64_t seq, const char *suffix,
                       char *out, size_t cap) {
  snprintf(out, cap, "%s/%020llu.lamsg%s", f->spool, (unsigned long long)seq,
           suffix);
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void write_file(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, len), (ssize_t)len);
  close(fd);
}

/* Flips one byte of a file at offset. */
static void flip_byte(const char *path, off_t off) {
  uint8_t c;
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, &c, 1, off), 1);
  c ^= 0x5a;
  assert_int_equal(pwrite(fd, &c, 1, off), 1);
  close(fd);
}

static la_outq_t *open_q(fx_t *f, uint64_t mem, uint64_t spool) {
  la_outq_t *q = NULL;
  char why[256] = "";
  int rc =
      la_outq_open_ex(f->spool, mem, spool, 0, on_note, f, &q, why, sizeof why);
  if (rc != 0) fprintf(stderr, "open: %s\n", why);
  assert_int_equal(rc, 0);
  assert_non_null(q);
  return q;
}

/* --------------------------------------------------------------- tests -- */

static void test_push_next_ack_in_order(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20);
  la_outq_stats_t st = stats(q);
  uint64_t i;
  assert_int_equal(st.next_seq, 1);
  assert_int_equal(st.items, 0);
  assert_int_equal(st.last_acked, 0);
  assert_int_equal(st.last_sent, 0);
  for (i = 1; i <= 5; i++) assert_int_equal(push_ok(q, 0), i);
  st = stats(q);
  assert_int_equal(st.items, 5);
  assert_int_equal(st.mem_items, 5);
  assert_int_equal(st.disk_items, 0);
  assert_int_equal(st.pushed, 5);
  assert_int_equal(st.next_seq, 6);
  for (i = 1; i <= 5; i++) expect_next(q, i, 0);
  expect_none(q);
  assert_int_equal(stats(q).last_sent, 5);
  assert_int_equal(la_outq_ack(q, 3), 0);
  st = stats(q);
  assert_int_equal(st.items, 2);
  assert_int_equal(st.acked, 3);
  assert_int_equal(st.last_acked, 3);
  assert_int_equal(st.mem_bytes, frame_len(4) + frame_len(5));
  assert_int_equal(la_outq_ack(q, 5), 0);
  st = stats(q);
  assert_int_equal(st.items, 0);
  assert_int_equal(st.mem_bytes, 0);
  assert_int_equal(st.acked, 5);
  expect_none(q);
  /* Nothing ever touched the disk. */
  assert_int_equal(count_files(f->spool, ".lamsg"), 0);
  la_outq_close(q);
}

static void test_cumulative_ack_unlinks(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20); /* every message to disk */
  la_outq_stats_t st;
  char path[256];
  uint64_t i, bytes = 0;
  for (i = 1; i <= 10; i++) {
    push_ok(q, 0);
    bytes += HDR + frame_len(i);
  }
  st = stats(q);
  assert_int_equal(st.disk_items, 10);
  assert_int_equal(st.mem_items, 0);
  assert_int_equal(st.disk_bytes, bytes);
  assert_int_equal(st.spilled, 10);
  assert_int_equal(count_files(f->spool, ".lamsg"), 10);
  for (i = 1; i <= 10; i++) expect_next(q, i, 0);
  expect_none(q);
  assert_int_equal(la_outq_ack(q, 4), 0);
  assert_int_equal(count_files(f->spool, ".lamsg"), 6);
  for (i = 1; i <= 10; i++) {
    spool_path(f, i, "", path, sizeof path);
    assert_int_equal(exists(path), i > 4);
  }
  st = stats(q);
  assert_int_equal(st.disk_items, 6);
  assert_int_equal(st.items, 6);
  assert_int_equal(la_outq_ack(q, 10), 0);
  assert_int_equal(count_files(f->spool, ".lamsg"), 0);
  st = stats(q);
  assert_int_equal(st.disk_items, 0);
  assert_int_equal(st.disk_bytes, 0);
  assert_int_equal(st.acked, 10);
  assert_int_equal(count_files(f->spool, ".tmp"), 0);
  la_outq_close(q);
}

static void test_rewind_resends_unacked(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20);
  uint64_t i;
  for (i = 1; i <= 6; i++) push_ok(q, 0);
  for (i = 1; i <= 4; i++) expect_next(q, i, 0);
  assert_int_equal(la_outq_ack(q, 2), 0);
  la_outq_rewind(q);
  for (i = 3; i <= 6; i++) expect_next(q, i, 0);
  expect_none(q);
  /* Rewind again, send one, then an ack from the previous connection
   * overtakes the cursor: sending resumes after the acknowledged seq. */
  la_outq_rewind(q);
  expect_next(q, 3, 0);
  assert_int_equal(la_outq_ack(q, 5), 0);
  expect_next(q, 6, 0);
  expect_none(q);
  /* A new message after everything was sent is next. */
  push_ok(q, 0);
  expect_next(q, 7, 0);
  la_outq_rewind(q);
  expect_next(q, 6, 0);
  expect_next(q, 7, 0);
  expect_none(q);
  assert_int_equal(la_outq_ack(q, 7), 0);
  la_outq_rewind(q);
  expect_none(q);
  assert_int_equal(stats(q).items, 0);
  la_outq_close(q);
}

static void test_mem_limit_mixes_memory_and_disk(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 300, 1 << 20); /* three 100-byte messages */
  la_outq_stats_t st;
  uint64_t i;
  for (i = 1; i <= 10; i++) push_ok(q, 100);
  st = stats(q);
  assert_int_equal(st.mem_items, 3);
  assert_int_equal(st.mem_bytes, 300);
  assert_int_equal(st.disk_items, 7);
  assert_int_equal(st.disk_bytes, 7 * (HDR + 100));
  assert_int_equal(count_files(f->spool, ".lamsg"), 7);
  expect_next(q, 1, 100);
  expect_next(q, 2, 100);
  assert_int_equal(la_outq_ack(q, 2), 0);
  /* Memory has room again: the next two go to memory, behind the disk
   * messages 4..10 in the send order. */
  push_ok(q, 100);
  push_ok(q, 100);
  st = stats(q);
  assert_int_equal(st.mem_items, 3);
  assert_int_equal(st.disk_items, 7);
  assert_int_equal(count_files(f->spool, ".lamsg"), 7);
  for (i = 3; i <= 12; i++) expect_next(q, i, 100);
  expect_none(q);
  la_outq_rewind(q);
  for (i = 3; i <= 12; i++) expect_next(q, i, 100);
  assert_int_equal(la_outq_ack(q, 12), 0);
  st = stats(q);
  assert_int_equal(st.items, 0);
  assert_int_equal(st.mem_bytes, 0);
  assert_int_equal(st.disk_bytes, 0);
  assert_int_equal(count_files(f->spool, ".lamsg"), 0);
  la_outq_close(q);
}

static void test_spill_all_close_reopen(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1000, 1 << 20);
  la_outq_stats_t st;
  uint64_t i, gap;
  for (i = 1; i <= 20; i++) push_ok(q, 100); /* 10 in memory, 10 on disk */
  st = stats(q);
  assert_int_equal(st.mem_items, 10);
  assert_int_equal(st.disk_items, 10);
  for (i = 1; i <= 5; i++) expect_next(q, i, 100);
  assert_int_equal(la_outq_ack(q, 3), 0);
  assert_int_equal(la_outq_spill_all(q), 0);
  st = stats(q);
  assert_int_equal(st.mem_items, 0);
  assert_int_equal(st.mem_bytes, 0);
  assert_int_equal(st.disk_items, 17);
  assert_int_equal(st.spilled, 10 + 7); /* pushed to disk + spilled */
  assert_int_equal(count_files(f->spool, ".lamsg"), 17);
  /* Spilling does not disturb the cursor. */
  expect_next(q, 6, 100);
  gap = la_outq_reserve_seq(q); /* reserved, never pushed */
  assert_int_equal(gap, 21);
  assert_int_equal(la_outq_spill_all(q), 0); /* nothing left to spill */
  la_outq_close(q);

  q = open_q(f, 1000, 1 << 20);
  st = stats(q);
  assert_int_equal(st.items, 17);
  assert_int_equal(st.disk_items, 17);
  assert_int_equal(st.mem_items, 0);
  assert_int_equal(st.next_seq, 22); /* clean close: no gap beyond 21 */
  assert_int_equal(st.last_acked, 3);
  assert_int_equal(st.last_sent, 3);
  assert_int_equal(st.bad_files, 0);
  assert_int_equal(f->notes, 0);
  for (i = 4; i <= 20; i++) expect_next(q, i, 100);
  assert_int_equal(push_ok(q, 100), 22);
  expect_next(q, 22, 100);
  expect_none(q);
  assert_int_equal(la_outq_ack(q, 22), 0);
  assert_int_equal(count_files(f->spool, ".lamsg"), 0);
  la_outq_close(q);
}

static void test_seq_continues_with_empty_spool(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20);
  int i;
  for (i = 0; i < 3; i++) push_ok(q, 0);
  for (i = 1; i <= 3; i++) expect_next(q, (uint64_t)i, 0);
  assert_int_equal(la_outq_ack(q, 3), 0);
  la_outq_close(q);
  q = open_q(f, 1 << 20, 1 << 20);
  assert_int_equal(stats(q).items, 0);
  assert_int_equal(stats(q).next_seq, 4);
  assert_int_equal(stats(q).last_acked, 3);
  assert_int_equal(la_outq_reserve_seq(q), 4);
  la_outq_close(q);
}

/* A daemon that dies without closing the queue never causes a seq to be
 * handed out twice: the next incarnation starts above the persisted mark. */
static void test_seq_survives_crash(void **state) {
  fx_t *f = *state;
  la_outq_t *q;
  pid_t pid = fork();
  int status;
  assert_true(pid >= 0);
  if (pid == 0) {
    la_outq_t *c = NULL;
    int i;
    if (la_outq_open(f->spool, 1 << 20, 1 << 20, 0, &c, NULL, 0) != 0) _exit(1);
    for (i = 0; i < 5; i++)
      if (la_outq_reserve_seq(c) != (uint64_t)i + 1) _exit(2);
    _exit(0); /* no close */
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  q = open_q(f, 1 << 20, 1 << 20);
  assert_int_equal(stats(q).next_seq, 1 + LA_OUTQ_SEQ_BLOCK);
  assert_int_equal(la_outq_reserve_seq(q), 1 + LA_OUTQ_SEQ_BLOCK);
  la_outq_close(q);
}

static void test_spool_limit(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 3 * (HDR + 100));
  la_outq_stats_t st;
  uint64_t s4, s5;
  int i;
  for (i = 0; i < 3; i++) push_ok(q, 100);
  assert_int_equal(push_len(q, 100, &s4), LA_ELIMIT);
  assert_int_equal(push_len(q, 1, &s5), LA_ELIMIT);
  assert_int_equal(s4, 4);
  assert_int_equal(s5, 5);
  st = stats(q);
  assert_int_equal(st.dropped, 2);
  assert_int_equal(st.pushed, 3);
  assert_int_equal(st.items, 3);
  assert_int_equal(st.disk_bytes, 3 * (HDR + 100));
  assert_int_equal(count_files(f->spool, ".lamsg"), 3);
  assert_int_equal(count_files(f->spool, ".tmp"), 0);
  expect_next(q, 1, 100);
  assert_int_equal(la_outq_ack(q, 1), 0);
  assert_int_equal(push_ok(q, 100), 6); /* room again */
  expect_next(q, 2, 100);
  expect_next(q, 3, 100);
  expect_next(q, 6, 100); /* 4 and 5 were refused, nothing else lost */
  expect_none(q);
  assert_int_equal(stats(q).dropped, 2);
  la_outq_close(q);
}

static void test_spill_all_respects_spool_limit(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1000, HDR + 100 + 50);
  la_outq_stats_t st;
  int i;
  for (i = 0; i < 3; i++) push_ok(q, 100);
  assert_int_equal(la_outq_spill_all(q), LA_ELIMIT);
  st = stats(q);
  assert_int_equal(st.disk_items, 1);
  assert_int_equal(st.mem_items, 2); /* what a close would lose */
  assert_int_equal(st.items, 3);
  for (i = 1; i <= 3; i++) expect_next(q, (uint64_t)i, 100);
  la_outq_close(q);
  q = open_q(f, 1000, 1 << 20);
  assert_int_equal(stats(q).items, 1);
  expect_next(q, 1, 100);
  expect_none(q);
  la_outq_close(q);
}

static void test_corrupt_spool_files(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20);
  char path[256], other[256];
  la_outq_stats_t st;
  int i;
  for (i = 0; i < 8; i++) push_ok(q, 100);
  la_outq_close(q);

  spool_path(f, 2, "", path, sizeof path); /* truncated payload */
  assert_int_equal(truncate(path, HDR + 50), 0);
  spool_path(f, 3, "", path, sizeof path); /* payload checksum */
  flip_byte(path, HDR + 10);
  spool_path(f, 4, "", path, sizeof path); /* zero length */
  assert_int_equal(truncate(path, 0), 0);
  spool_path(f, 5, "", path, sizeof path); /* bad magic */
  flip_byte(path, 0);
  spool_path(f, 6, "", path, sizeof path); /* header length field */
  flip_byte(path, 17);
  spool_path(f, 7, "", path, sizeof path); /* truncated header */
  assert_int_equal(truncate(path, 10), 0);
  /* A valid file under another seq's name. */
  spool_path(f, 1, "", path, sizeof path);
  spool_path(f, 30, "", other, sizeof other);
  {
    uint8_t buf[HDR + 100];
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, buf, sizeof buf), (ssize_t)sizeof buf);
    close(fd);
    write_file(other, buf, sizeof buf);
  }
  /* Bad names and a stale temporary file. */
  snprintf(path, sizeof path, "%s/junk.txt", f->spool);
  write_file(path, "x", 1);
  snprintf(path, sizeof path, "%s/123.lamsg", f->spool);
  write_file(path, "x", 1);
  snprintf(path, sizeof path, "%s/99999999999999999999.lamsg", f->spool);
  write_file(path, "x", 1); /* 20 digits, above UINT64_MAX */
  spool_path(f, 40, ".tmp", path, sizeof path);
  write_file(path, "x", 1);
  snprintf(path, sizeof path, "%s/subdir", f->spool);
  assert_int_equal(mkdir(path, 0700), 0);
  /* A file quarantined earlier stays as it is, uncounted. */
  snprintf(path, sizeof path, "%s/old.bad", f->spool);
  write_file(path, "x", 1);

  f->notes = 0;
  q = open_q(f, 0, 1 << 20);
  st = stats(q);
  /* At open: 2, 4, 5, 6, 7, 30, junk, 123, 999.., 40.tmp, subdir. */
  assert_int_equal(st.bad_files, 11);
  assert_int_equal(f->notes, 11);
  assert_int_equal(st.items, 3); /* 1, 3 (its header is fine), 8 */
  expect_next(q, 1, 100);
  {
    uint64_t seq;
    const uint8_t *b;
    size_t len;
    assert_int_equal(la_outq_next(q, &seq, &b, &len), LA_EIO); /* 3 */
    assert_non_null(strstr(f->last, "checksum"));
  }
  expect_next(q, 8, 100);
  expect_none(q);
  st = stats(q);
  assert_int_equal(st.bad_files, 12);
  assert_int_equal(st.items, 2);
  assert_int_equal(st.disk_items, 2);
  assert_int_equal(st.disk_bytes, 2 * (HDR + 100));
  assert_int_equal(st.next_seq, 9); /* not 31 or 41: those were bad */
  assert_int_equal(count_files(f->spool, ".bad"), 13);
  for (i = 2; i <= 7; i++) {
    spool_path(f, (uint64_t)i, ".bad", path, sizeof path);
    assert_true(exists(path));
  }
  spool_path(f, 40, ".tmp.bad", path, sizeof path);
  assert_true(exists(path));
  snprintf(path, sizeof path, "%s/subdir.bad", f->spool);
  assert_true(exists(path));
  la_outq_rewind(q);
  expect_next(q, 1, 100);
  expect_next(q, 8, 100);
  assert_int_equal(la_outq_ack(q, 8), 0);
  assert_int_equal(count_files(f->spool, ".lamsg"), 0);
  la_outq_close(q);

  /* Reopening finds nothing new: .bad files are left alone. */
  f->notes = 0;
  q = open_q(f, 0, 1 << 20);
  assert_int_equal(stats(q).bad_files, 0);
  assert_int_equal(stats(q).items, 0);
  assert_int_equal(f->notes, 0);
  la_outq_close(q);
}

static void test_spool_file_deleted_under_us(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20);
  char path[256];
  uint64_t seq;
  const uint8_t *b;
  size_t len;
  push_ok(q, 0);
  push_ok(q, 0);
  spool_path(f, 1, "", path, sizeof path);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(la_outq_next(q, &seq, &b, &len), LA_EIO);
  assert_non_null(strstr(f->last, "missing"));
  expect_next(q, 2, 0);
  expect_none(q);
  assert_int_equal(stats(q).bad_files, 1);
  assert_int_equal(stats(q).items, 1);
  assert_int_equal(la_outq_ack(q, 2), 0);
  assert_int_equal(stats(q).items, 0);
  la_outq_close(q);
}

static void test_ack_beyond_sent(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20);
  assert_int_equal(la_outq_ack(q, 0), 0);
  assert_int_equal(la_outq_ack(q, 1), LA_EPROTO); /* nothing sent */
  push_ok(q, 0);
  push_ok(q, 0);
  push_ok(q, 0);
  expect_next(q, 1, 0);
  assert_int_equal(la_outq_ack(q, 2), LA_EPROTO);
  assert_int_equal(la_outq_ack(q, UINT64_MAX), LA_EPROTO);
  assert_int_equal(stats(q).items, 3); /* nothing freed */
  assert_int_equal(stats(q).last_acked, 0);
  assert_int_equal(la_outq_ack(q, 1), 0);
  assert_int_equal(la_outq_ack(q, 1), 0); /* repeated */
  assert_int_equal(la_outq_ack(q, 0), 0); /* old */
  assert_int_equal(stats(q).items, 2);
  assert_int_equal(stats(q).acked, 1);
  /* After a rewind the highest seq ever sent still counts. */
  expect_next(q, 2, 0);
  expect_next(q, 3, 0);
  la_outq_rewind(q);
  assert_int_equal(la_outq_ack(q, 3), 0);
  expect_none(q);
  assert_int_equal(la_outq_ack(NULL, 1), LA_EINVAL);
  la_outq_close(q);
}

static void test_push_out_of_reserved_order(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 150, 0); /* spool present but limit 0 */
  uint8_t buf[200], big[1];
  uint64_t s1, s2, s3;
  make_frame(0, buf, sizeof buf);
  assert_int_equal(la_outq_push(q, 1, buf, 10), LA_EINVAL); /* unreserved */
  s1 = la_outq_reserve_seq(q);
  s2 = la_outq_reserve_seq(q);
  assert_int_equal(s1, 1);
  assert_int_equal(s2, 2);
  assert_int_equal(la_outq_push(q, 0, buf, 10), LA_EINVAL);
  assert_int_equal(la_outq_push(q, s2 + 1, buf, 10), LA_EINVAL);
  assert_int_equal(la_outq_push(q, s2, NULL, 10), LA_EINVAL);
  assert_int_equal(la_outq_push(q, s2, buf, 0), LA_EINVAL);
  assert_int_equal(la_outq_push(NULL, s2, buf, 10), LA_EINVAL);
  make_frame(s2, buf, 10);
  assert_int_equal(la_outq_push(q, s2, buf, 10), 0); /* s1 becomes a gap */
  assert_int_equal(la_outq_push(q, s1, buf, 10), LA_EINVAL); /* too late */
  assert_int_equal(la_outq_push(q, s2, buf, 10), LA_EINVAL); /* twice */
  assert_int_equal(stats(q).dropped, 0);
  /* A refused push may be retried with the same seq. */
  s3 = la_outq_reserve_seq(q);
  make_frame(s3, buf, sizeof buf);
  assert_int_equal(la_outq_push(q, s3, buf, 200), LA_ELIMIT);
  assert_int_equal(la_outq_push(q, s3, big, (size_t)LA_OUTQ_MAX_ITEM + 1),
                   LA_EMSGSIZE);
  assert_int_equal(stats(q).dropped, 2);
  assert_int_equal(la_outq_push(q, s3, buf, 20), 0);
  expect_next(q, s2, 10);
  expect_next(q, s3, 20);
  expect_none(q);
  assert_int_equal(stats(q).pushed, 2);
  assert_int_equal(la_outq_reserve_seq(NULL), 0);
  la_outq_close(q);
}

static void test_memory_only(void **state) {
  const char *dirs[2] = {NULL, ""};
  int k;
  for (k = 0; k < 2; k++) {
    la_outq_t *q = NULL;
    la_outq_stats_t st;
    uint64_t s;
    int i;
    assert_int_equal(la_outq_open(dirs[k], 500, 1 << 20, 1, &q, NULL, 0), 0);
    for (i = 0; i < 5; i++) push_ok(q, 100);
    assert_int_equal(push_len(q, 100, &s), LA_ELIMIT);
    assert_int_equal(push_len(q, 1, &s), LA_ELIMIT);
    st = stats(q);
    assert_int_equal(st.items, 5);
    assert_int_equal(st.mem_bytes, 500);
    assert_int_equal(st.disk_items, 0);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(la_outq_spill_all(q), LA_ELIMIT);
    for (i = 1; i <= 5; i++) expect_next(q, (uint64_t)i, 100);
    assert_int_equal(la_outq_ack(q, 2), 0);
    assert_int_equal(push_ok(q, 100), 8);
    la_outq_rewind(q);
    for (i = 3; i <= 5; i++) expect_next(q, (uint64_t)i, 100);
    expect_next(q, 8, 100);
    expect_none(q);
    assert_int_equal(la_outq_ack(q, 8), 0);
    assert_int_equal(la_outq_spill_all(q), 0); /* nothing in memory */
    la_outq_close(q);
    /* Without a spool nothing persists: seqs start again at 1. */
    assert_int_equal(la_outq_open(dirs[k], 500, 0, 0, &q, NULL, 0), 0);
    assert_int_equal(stats(q).next_seq, 1);
    la_outq_close(q);
  }
}

static void test_spool_locked(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20), *q2 = NULL;
  char why[256] = "";
  assert_int_equal(la_outq_open(f->spool, 0, 1 << 20, 0, &q2, why, sizeof why),
                   LA_EIO);
  assert_null(q2);
  assert_non_null(strstr(why, "in use"));
  la_outq_close(q);
  assert_int_equal(la_outq_open(f->spool, 0, 1 << 20, 0, &q2, why, sizeof why),
                   0);
  la_outq_close(q2);
}

static void test_open_errors(void **state) {
  fx_t *f = *state;
  la_outq_t *q = NULL;
  char why[256] = "", path[256];
  struct stat st;
  assert_int_equal(la_outq_open(f->spool, 0, 0, 0, NULL, why, sizeof why),
                   LA_EINVAL);
  /* Missing parent. */
  snprintf(path, sizeof path, "%s/no/such", f->dir);
  assert_int_equal(la_outq_open(path, 0, 0, 0, &q, why, sizeof why), LA_EIO);
  assert_null(q);
  assert_non_null(strstr(why, "cannot create"));
  /* A regular file. */
  snprintf(path, sizeof path, "%s/file", f->dir);
  write_file(path, "x", 1);
  assert_int_equal(la_outq_open(path, 0, 0, 0, &q, why, sizeof why), LA_EIO);
  assert_null(q);
  /* Created with mode 0700. */
  q = open_q(f, 0, 0);
  la_outq_close(q);
  assert_int_equal(stat(f->spool, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  /* A malformed seq state file refuses to open and is left as it is. */
  snprintf(path, sizeof path, "%s/outq.nextseq", f->spool);
  write_file(path, "12x\n", 4);
  q = NULL;
  assert_int_equal(la_outq_open(f->spool, 0, 0, 0, &q, why, sizeof why),
                   LA_EIO);
  assert_null(q);
  assert_non_null(strstr(why, "outq.nextseq"));
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, 4);
  /* A valid one sets the next seq. */
  write_file(path, "00000000000000000077\n", 21);
  q = open_q(f, 0, 0);
  assert_int_equal(la_outq_reserve_seq(q), 77);
  la_outq_close(q);
}

/* The spool directory vanishes under a running queue (the closest thing to
 * a failing disk that needs no privileges): writes fail with LA_EIO,
 * counted and noted, and memory keeps working. */
static void test_spool_write_failure(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20);
  char path[256];
  uint64_t seq;
  const uint8_t *b;
  size_t len;
  push_ok(q, 0); /* 1, on disk */
  nftw(f->spool, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  assert_int_equal(stat(f->spool, &(struct stat){0}), -1);
  f->notes = 0;
  assert_int_equal(push_len(q, 0, &seq), LA_EIO);
  assert_int_equal(f->notes, 1);
  assert_non_null(strstr(f->last, "cannot write"));
  assert_int_equal(stats(q).dropped, 1);
  assert_int_equal(stats(q).items, 1);
  assert_int_equal(la_outq_next(q, &seq, &b, &len), LA_EIO); /* 1 gone */
  assert_int_equal(stats(q).bad_files, 1);
  la_outq_set_limits(q, 1 << 20, 1 << 20);
  seq = push_ok(q, 0);
  expect_next(q, seq, 0);
  expect_none(q);
  /* Reservations keep working even when the mark cannot be persisted. */
  for (int i = 0; i < (int)LA_OUTQ_SEQ_BLOCK + 2; i++)
    assert_true(la_outq_reserve_seq(q) > 0);
  assert_non_null(strstr(f->last, "high-water"));
  la_outq_close(q); /* notes that it cannot persist the next seq */
  assert_non_null(strstr(f->last, "next seq"));
  snprintf(path, sizeof path, "%s", f->spool);
  assert_int_equal(stat(path, &(struct stat){0}), -1);
}

static void test_set_limits(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20);
  uint64_t s;
  push_ok(q, 100);
  assert_int_equal(stats(q).disk_items, 1);
  la_outq_set_limits(q, 1000, 1 << 20);
  push_ok(q, 100);
  assert_int_equal(stats(q).mem_items, 1);
  la_outq_set_limits(q, 0, 0);
  assert_int_equal(push_len(q, 100, &s), LA_ELIMIT);
  assert_int_equal(stats(q).items, 2); /* nothing moved or lost */
  expect_next(q, 1, 100);
  expect_next(q, 2, 100);
  expect_none(q);
  la_outq_close(q);
}

static void test_large_message(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 64 << 20);
  size_t n = (3u << 20) + 17, i;
  uint8_t *buf = malloc(n);
  uint64_t s, seq;
  const uint8_t *b;
  size_t len;
  assert_non_null(buf);
  for (i = 0; i < n; i++) buf[i] = (uint8_t)(i * 2654435761u >> 13);
  s = la_outq_reserve_seq(q);
  assert_int_equal(la_outq_push(q, s, buf, n), 0);
  assert_int_equal(stats(q).disk_items, 1); /* above mem_limit */
  push_ok(q, 0);
  assert_int_equal(la_outq_next(q, &seq, &b, &len), 1);
  assert_int_equal(seq, s);
  assert_int_equal(len, n);
  assert_memory_equal(b, buf, n);
  expect_next(q, 2, 0); /* frees the big read buffer */
  la_outq_rewind(q);
  assert_int_equal(la_outq_next(q, &seq, &b, &len), 1);
  assert_memory_equal(b, buf, n);
  free(buf);
  la_outq_close(q);
}

static uint32_t be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
         ((uint32_t)p[2] << 8) | p[3];
}

static void test_file_format(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20);
  const uint8_t check[] = "123456789";
  uint8_t file[HDR + 9 + 16];
  char path[256], seqbuf[32];
  int fd;
  /* CRC-32 check value (zlib/IEEE). */
  assert_int_equal(la_crc32(0, check, 9), 0xcbf43926u);
  assert_int_equal(la_outq_reserve_seq(q), 1);
  assert_int_equal(la_outq_push(q, 1, check, 9), 0);
  spool_path(f, 1, "", path, sizeof path);
  fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(read(fd, file, sizeof file), HDR + 9);
  close(fd);
  assert_memory_equal(file, "LAQM", 4);
  assert_int_equal(file[4] << 8 | file[5], 1);    /* version */
  assert_int_equal(file[6] << 8 | file[7], HDR);  /* header length */
  assert_int_equal(be32(file + 8), 0);            /* seq, high */
  assert_int_equal(be32(file + 12), 1);           /* seq, low */
  assert_int_equal(be32(file + 16), 9);           /* payload length */
  assert_int_equal(be32(file + 20), 0xcbf43926u); /* payload CRC */
  assert_int_equal(be32(file + 24), la_crc32(0, file, 24));
  assert_int_equal(be32(file + 28), 0);
  assert_memory_equal(file + HDR, check, 9);
  {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
  }
  la_outq_close(q);
  snprintf(path, sizeof path, "%s/outq.nextseq", f->spool);
  fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(read(fd, seqbuf, sizeof seqbuf), 21);
  close(fd);
  assert_memory_equal(seqbuf, "00000000000000000002\n", 21);
}

static void test_fsync_mode(void **state) {
  fx_t *f = *state;
  la_outq_t *q = NULL;
  uint64_t i;
  assert_int_equal(la_outq_open(f->spool, 200, 1 << 20, 1, &q, NULL, 0), 0);
  for (i = 1; i <= 6; i++) push_ok(q, 100);
  assert_int_equal(la_outq_spill_all(q), 0);
  la_outq_close(q);
  assert_int_equal(la_outq_open(f->spool, 200, 1 << 20, 1, &q, NULL, 0), 0);
  for (i = 1; i <= 6; i++) expect_next(q, i, 100);
  assert_int_equal(la_outq_ack(q, 6), 0);
  la_outq_close(q);
  assert_int_equal(count_files(f->spool, ".lamsg"), 0);
}

/* ------------------------------------------------------------- stress -- */

static uint64_t rng_state;
static uint64_t rnd(void) { /* xorshift64*, fixed seed per run */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

#define STRESS_N 100000

/* Random pushes (with an occasional skipped reservation), sends, acks
 * (an occasional bogus one), rewinds and one spill/close/reopen in the
 * middle, against a model: the pushed seqs in order, the index of the
 * oldest unacknowledged one and of the next one to send. */
static void test_stress_random(void **state) {
  fx_t *f = *state;
  uint64_t *pushed = malloc(STRESS_N * sizeof *pushed);
  size_t n = 0, head = 0, cur = 0;
  uint64_t last_sent = 0, last_acked = 0, acked_total = 0, sent_total = 0;
  la_outq_t *q = open_q(f, 16 << 10, 64 << 20); /* ~16 KiB in memory */
  int reopened = 0;
  la_outq_stats_t st;
  assert_non_null(pushed);
  rng_state = 0x9e3779b97f4a7c15ull;
  while (n < STRESS_N) {
    uint64_t r = rnd() % 1000;
    if (r < 500) { /* push */
      uint64_t seq;
      if (rnd() % 50 == 0) la_outq_reserve_seq(q); /* a gap */
      seq = push_ok(q, 0);
      assert_true(n == 0 || seq > pushed[n - 1]);
      pushed[n++] = seq;
    } else if (r < 900) { /* send */
      if (cur < n) {
        expect_next(q, pushed[cur], 0);
        if (pushed[cur] > last_sent) last_sent = pushed[cur];
        cur++;
        sent_total++;
      } else {
        expect_none(q);
      }
    } else if (r < 980) { /* ack */
      uint64_t a;
      if (rnd() % 20 == 0) {
        assert_int_equal(la_outq_ack(q, last_sent + 1), LA_EPROTO);
        continue;
      }
      a = last_acked + rnd() % (last_sent - last_acked + 1);
      assert_int_equal(la_outq_ack(q, a), 0);
      while (head < n && pushed[head] <= a) {
        head++;
        acked_total++;
      }
      if (cur < head) cur = head;
      if (a > last_acked) last_acked = a;
    } else { /* reconnect */
      la_outq_rewind(q);
      cur = head;
    }
    if (!reopened && n == STRESS_N / 2) {
      reopened = 1;
      assert_int_equal(la_outq_spill_all(q), 0);
      st = stats(q);
      la_outq_close(q);
      q = open_q(f, 16 << 10, 64 << 20);
      assert_int_equal(stats(q).items, st.items);
      assert_int_equal(stats(q).next_seq, st.next_seq);
      assert_int_equal(stats(q).bad_files, 0);
      cur = head; /* a new process sends everything again */
      if (head < n)
        last_sent = last_acked = pushed[head] - 1;
      else
        last_sent = last_acked = st.next_seq - 1;
    }
    st = stats(q);
    assert_int_equal(st.items, n - head);
    assert_int_equal(st.items, st.mem_items + st.disk_items);
    assert_true(st.mem_bytes <= 16 << 10);
    assert_int_equal(st.last_sent, last_sent);
  }
  /* Drain: everything unacknowledged, once, in order. */
  la_outq_rewind(q);
  for (cur = head; cur < n; cur++) expect_next(q, pushed[cur], 0);
  expect_none(q);
  if (n > 0) assert_int_equal(la_outq_ack(q, pushed[n - 1]), 0);
  st = stats(q);
  assert_int_equal(st.items, 0);
  assert_int_equal(st.mem_bytes, 0);
  assert_int_equal(st.disk_bytes, 0);
  assert_int_equal(st.dropped, 0);
  assert_int_equal(st.bad_files, 0);
  assert_int_equal(f->notes, 0);
  assert_true(sent_total > STRESS_N / 2);
  assert_true(acked_total > 0);
  assert_int_equal(count_files(f->spool, ".lamsg"), 0);
  assert_int_equal(count_files(f->spool, ".tmp"), 0);
  la_outq_close(q);
  free(pushed);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_push_next_ack_in_order),
      T(test_cumulative_ack_unlinks),
      T(test_rewind_resends_unacked),
      T(test_mem_limit_mixes_memory_and_disk),
      T(test_spill_all_close_reopen),
      T(test_seq_continues_with_empty_spool),
      T(test_seq_survives_crash),
      T(test_spool_limit),
      T(test_spill_all_respects_spool_limit),
      T(test_corrupt_spool_files),
      T(test_spool_file_deleted_under_us),
      T(test_ack_beyond_sent),
      T(test_push_out_of_reserved_order),
      T(test_memory_only),
      T(test_spool_locked),
      T(test_open_errors),
      T(test_spool_write_failure),
      T(test_set_limits),
      T(test_large_message),
      T(test_file_format),
      T(test_fsync_mode),
      T(test_stress_random),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
