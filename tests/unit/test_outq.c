/* SPDX-License-Identifier: BSD-3-Clause */
/* test_outq.c: unit tests of the LocalAgent's write-ahead send queue and
 * its segment log (localagent/outq.{h,c}, localagent/seglog.{h,c}).
 *
 * Every test gets a fresh directory from mkdtemp under /tmp (the log is a
 * "log" subdirectory the queue creates) and removes it afterwards. A
 * "crash" is a close without acks: the queue never learns it is closing in
 * any other way, and close writes nothing but an fsync, so what reopen sees
 * is what a kill -9 leaves (torn writes are made by hand).
 * Covers: append/next/ack in seq order; rewind; reopen replaying exactly the
 * unacknowledged messages in order with seqs continuing; segments deleted
 * once acknowledged; a torn tail truncated and a corrupt last record
 * skipped, the records before them kept; taken cycles and registered ranks
 * reported after a crash (also when their segment was deleted:
 * checkpoints), resolved ones not; the log limit (refusals counted once,
 * TraceMissing still recorded in the reserve); memory limit 0 (read back
 * from the log); the directory checks (symlink, group-writable, locked);
 * concurrent appends from four threads replayed in strictly increasing seq
 * order, none lost; taken cycles in the mapped table (no log write),
 * reported after a kill (a forked child's _exit), the table's overflow in
 * the log, a damaged slot noted; a table cut, claiming a million slots,
 * with slots no agent writes, or not a 0600 regular file of the user.
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "la.h"
#include "la_crc32.h"
#include "outq.h"
#include "seglog.h"
#include "syncer.h"
#include "takentab.h"

typedef struct fx {
  char dir[64];
  char log[96];
  int notes;
  char last[512];
} fx_t;

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
  snprintf(f->log, sizeof f->log, "%s/log", f->dir);
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

/* Frame for seq: 8 bytes of seq, then filler; its length depends on seq. */
static size_t frame_len(uint64_t seq) { return 9 + (size_t)(seq * 7 % 61); }

static int frame_ok(uint64_t seq, const uint8_t *b, size_t len) {
  if (len < 9) return 0;
  for (size_t i = 0; i < len; i++)
    if (b[i] != (i < 8 ? (uint8_t)(seq >> (8 * i)) : (uint8_t)(seq + i)))
      return 0;
  return 1;
}

static int enc(void *arg, uint64_t seq, uint8_t **frame, size_t *len) {
  size_t n = arg ? *(size_t *)arg : frame_len(seq);
  uint8_t *b = malloc(n);
  if (b == NULL) return LA_ENOMEM;
  for (size_t i = 0; i < n; i++)
    b[i] = i < 8 ? (uint8_t)(seq >> (8 * i)) : (uint8_t)(seq + i);
  *frame = b;
  *len = n;
  return 0;
}

static la_outq_t *open_q(fx_t *f, uint64_t mem, uint64_t lim, uint64_t seg) {
  la_outq_t *q = NULL;
  char why[512];
  int rc = la_outq_open(f->log, mem, lim, seg, 0, on_note, f, &q, why,
                        sizeof why);
  if (rc != 0) fail_msg("open: %s", why);
  return q;
}

static uint64_t app(la_outq_t *q) {
  uint64_t seq = 0;
  assert_int_equal(la_outq_append(q, 0, NULL, enc, NULL, &seq), 0);
  return seq;
}

/* Takes every message next gives, checking each; returns the count. */
static size_t drain(la_outq_t *q, uint64_t *first, uint64_t *last) {
  uint64_t seq, prev = 0;
  const uint8_t *b;
  size_t len, n = 0;
  while (la_outq_next(q, &seq, &b, &len) == 1) {
    assert_true(frame_ok(seq, b, len));
    assert_true(seq > prev);
    if (n == 0 && first) *first = seq;
    prev = seq;
    n++;
  }
  if (last) *last = prev;
  return n;
}

static size_t count_segments(fx_t *f) {
  DIR *d = opendir(f->log);
  size_t n = 0;
  struct dirent *e;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".laseg")) n++;
  closedir(d);
  return n;
}

/* Path of the newest segment file. */
static void newest_segment(fx_t *f, char *buf, size_t len) {
  DIR *d = opendir(f->log);
  char best[256] = "";
  struct dirent *e;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".laseg") && strcmp(e->d_name, best) > 0)
      snprintf(best, sizeof best, "%s", e->d_name);
  closedir(d);
  snprintf(buf, len, "%s/%.64s", f->log, best);
}

/* --------------------------------------------------------------- tests -- */

/* The queue's counters now. */
static la_outq_stats_t stats(la_outq_t *q) {
  la_outq_stats_t st;
  la_outq_get_stats(q, &st);
  return st;
}

static void test_append_next_ack(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 0);
  for (uint64_t i = 1; i <= 10; i++) assert_int_equal(app(q), i);
  uint64_t first = 0, last = 0;
  assert_int_equal(drain(q, &first, &last), 10);
  assert_int_equal(first, 1);
  assert_int_equal(last, 10);
  assert_int_equal(la_outq_ack(q, 11), LA_EPROTO);
  assert_int_equal(la_outq_ack(q, 4), 0);
  la_outq_rewind(q);
  assert_int_equal(drain(q, &first, NULL), 6);
  assert_int_equal(first, 5);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.items, 6);
  assert_int_equal(st.acked, 4);
  assert_int_equal(st.pushed, 10);
  assert_int_equal(st.dropped, 0);
  la_outq_close(q);
}

static void test_replay_after_crash(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 4096);
  for (int i = 0; i < 200; i++) app(q);
  assert_int_equal(drain(q, NULL, NULL), 200);
  assert_int_equal(la_outq_ack(q, 120), 0);
  la_outq_close(q); /* no more acks: what a kill leaves */
  q = open_q(f, 1 << 20, 1 << 20, 4096);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.replayed, 80);
  assert_int_equal(st.items, 80);
  assert_int_equal(st.last_acked, 120);
  uint64_t first = 0, last = 0;
  assert_int_equal(drain(q, &first, &last), 80);
  assert_int_equal(first, 121);
  assert_int_equal(last, 200);
  assert_int_equal(app(q), 201); /* seqs never go back */
  assert_int_equal(drain(q, NULL, NULL), 1);
  assert_int_equal(la_outq_ack(q, 201), 0);
  la_outq_close(q);
  /* everything acknowledged: nothing replayed, seq continues */
  q = open_q(f, 1 << 20, 1 << 20, 4096);
  st = stats(q);
  assert_int_equal(st.items, 0);
  assert_int_equal(app(q), 202);
  la_outq_close(q);
}

static void test_segments_deleted_when_acked(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 4096);
  for (int i = 0; i < 500; i++) app(q);
  drain(q, NULL, NULL);
  la_outq_stats_t st = stats(q);
  assert_true(st.log_segments > 5);
  assert_int_equal(count_segments(f), st.log_segments);
  assert_int_equal(la_outq_ack(q, 500), 0);
  st = stats(q);
  assert_int_equal(st.log_segments, 1); /* the active one stays */
  assert_int_equal(count_segments(f), 1);
  assert_true(st.log_bytes < 4096);
  la_outq_close(q);
}

/* Writes records 1..10 to a fresh queue and closes it; the newest log
 * segment's path goes to seg, its size is returned. */
static off_t ten_records(fx_t *f, char *seg, size_t len) {
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 0);
  struct stat sb;
  for (int i = 0; i < 10; i++) app(q);
  la_outq_close(q);
  newest_segment(f, seg, len);
  assert_int_equal(stat(seg, &sb), 0);
  return sb.st_size;
}

static void test_torn_tail_truncated(void **state) {
  fx_t *f = *state;
  char seg[256];
  off_t size = ten_records(f, seg, sizeof seg);
  la_outq_t *q;
  /* the last record cut in the middle, as a crash during write(2) */
  assert_int_equal(truncate(seg, size - 5), 0);
  q = open_q(f, 1 << 20, 1 << 20, 0);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.replayed, 9);
  assert_true(st.torn_bytes > 0);
  assert_non_null(strstr(f->last, "truncated"));
  uint64_t last = 0;
  assert_int_equal(drain(q, NULL, &last), 9);
  assert_int_equal(last, 9);
  /* seq 10 was never complete: it is a gap; the next is above it */
  assert_true(app(q) >= 10);
  la_outq_close(q);
}

static void test_corrupt_last_record_skipped(void **state) {
  fx_t *f = *state;
  char seg[256];
  off_t size = ten_records(f, seg, sizeof seg);
  la_outq_t *q;
  int fd = open(seg, O_RDWR);
  assert_true(fd >= 0);
  uint8_t b;
  off_t at = size - 20; /* inside the last record's payload */
  assert_int_equal(pread(fd, &b, 1, at), 1);
  b ^= 0x40;
  assert_int_equal(pwrite(fd, &b, 1, at), 1);
  close(fd);
  q = open_q(f, 1 << 20, 1 << 20, 0);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.replayed, 9);
  assert_int_equal(drain(q, NULL, NULL), 9);
  la_outq_close(q);
}

static void recovered_cb(void *arg, int what, const la_outq_key_t *k) {
  char *out = arg;
  char line[300];
  snprintf(line, sizeof line, "%s:%s/%u/%llu;",
           what == LA_OUTQ_REC_TAKEN ? "taken" : "rank", k->app_id, k->rank,
           (unsigned long long)k->cycle_tag);
  strcat(out, line);
}

static void test_taken_and_ranks_recovered(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 4096);
  la_outq_key_t r0 = {"app", 0, 0}, r1 = {"app", 1, 0};
  assert_int_equal(la_outq_append(q, LA_OUTQ_OPENS_RANK, &r0, enc, NULL,
                                  NULL), 0);
  assert_int_equal(la_outq_append(q, LA_OUTQ_OPENS_RANK, &r1, enc, NULL,
                                  NULL), 0);
  la_outq_key_t c5 = {"app", 0, 5}, c6 = {"app", 0, 6}, c7 = {"app", 1, 7};
  assert_int_equal(la_outq_taken(q, &c5), 0);
  assert_int_equal(la_outq_taken(q, &c6), 0);
  assert_int_equal(la_outq_taken(q, &c7), 0);
  /* c5 gets its trace, c7 a missing record, rank 1 ends; c6 is cut short */
  assert_int_equal(la_outq_append(q, LA_OUTQ_RESOLVES, &c5, enc, NULL, NULL),
                   0);
  assert_int_equal(la_outq_append(q, LA_OUTQ_RESOLVES | LA_OUTQ_MISSING, &c7,
                                  enc, NULL, NULL), 0);
  assert_int_equal(la_outq_append(q, LA_OUTQ_CLOSES_RANK, &r1, enc, NULL,
                                  NULL), 0);
  /* many acknowledged messages later the first segments are gone, but the
   * checkpoints carry the state */
  for (int i = 0; i < 400; i++) app(q);
  drain(q, NULL, NULL);
  la_outq_stats_t st = stats(q);
  assert_int_equal(la_outq_ack(q, st.last_sent), 0);
  st = stats(q);
  assert_int_equal(st.log_segments, 1);
  assert_int_equal(st.pending_taken, 1);
  assert_int_equal(st.open_ranks, 1);
  la_outq_close(q);

  q = open_q(f, 1 << 20, 1 << 20, 4096);
  char out[512] = "";
  assert_int_equal(la_outq_recovered(q, recovered_cb, out), 2);
  assert_string_equal(out, "taken:app/0/6;rank:app/0/0;");
  /* resolving them, as the agent does at start-up, clears them for good */
  assert_int_equal(la_outq_append(q, LA_OUTQ_RESOLVES | LA_OUTQ_MISSING, &c6,
                                  enc, NULL, NULL), 0);
  assert_int_equal(la_outq_append(q, LA_OUTQ_CLOSES_RANK, &r0, enc, NULL,
                                  NULL), 0);
  la_outq_close(q);
  q = open_q(f, 1 << 20, 1 << 20, 4096);
  out[0] = '\0';
  assert_int_equal(la_outq_recovered(q, recovered_cb, out), 0);
  st = stats(q);
  assert_int_equal(st.replayed, 2);
  la_outq_close(q);
}

static void test_log_limit(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 8192, 4096);
  size_t big = 1000;
  int ok = 0, refused = 0;
  for (int i = 0; i < 20; i++) {
    int rc = la_outq_append(q, 0, NULL, enc, &big, NULL);
    if (rc == 0) ok++;
    else {
      assert_int_equal(rc, LA_ELIMIT);
      refused++;
    }
  }
  assert_true(ok >= 6 && ok < 9);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.dropped, (uint64_t)refused);
  assert_true(st.log_bytes <= 8192);
  /* a missing record still fits, in the reserve */
  la_outq_key_t k = {"app", 0, 9};
  assert_int_equal(la_outq_taken(q, &k), 0);
  assert_int_equal(la_outq_append(q, LA_OUTQ_MISSING | LA_OUTQ_RESOLVES, &k,
                                  enc, NULL, NULL), 0);
  st = stats(q);
  assert_int_equal(st.missing, 1);
  assert_int_equal(st.dropped, (uint64_t)refused); /* counted once each */
  /* acknowledged messages make room */
  drain(q, NULL, NULL);
  st = stats(q);
  assert_int_equal(la_outq_ack(q, st.last_sent), 0);
  assert_int_equal(la_outq_append(q, 0, NULL, enc, &big, NULL), 0);
  la_outq_close(q);
}

static void test_memory_limit_zero_reads_log(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 0, 1 << 20, 0);
  for (int i = 0; i < 50; i++) app(q);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.mem_items, 0);
  assert_int_equal(st.log_items, 50);
  assert_int_equal(drain(q, NULL, NULL), 50);
  la_outq_close(q);
}

static void test_memory_only(void **state) {
  la_outq_t *q = NULL;
  assert_int_equal(la_outq_open(NULL, 100, 0, 0, 0, NULL, NULL, &q, NULL, 0),
                   0);
  int ok = 0;
  for (int i = 0; i < 10; i++) ok += la_outq_append(q, 0, NULL, enc, NULL,
                                                    NULL) == 0;
  la_outq_stats_t st = stats(q);
  assert_true(ok >= 1 && ok < 10);
  assert_int_equal(st.dropped, (uint64_t)(10 - ok));
  la_outq_key_t k = {"a", 0, 1};
  assert_int_equal(la_outq_taken(q, &k), 0); /* nothing to record */
  la_outq_close(q);
}

static void test_directory_checks(void **state) {
  fx_t *f = *state;
  la_outq_t *q = NULL, *q2 = NULL;
  char why[512], path[200];
  /* a symbolic link is refused */
  snprintf(path, sizeof path, "%s/link", f->dir);
  assert_int_equal(mkdir(f->log, 0700), 0);
  assert_int_equal(symlink(f->log, path), 0);
  assert_int_equal(la_outq_open(path, 1, 1 << 20, 0, 0, NULL, NULL, &q, why,
                                sizeof why), LA_EIO);
  assert_non_null(strstr(why, "symbolic link"));
  /* group-writable is refused */
  assert_int_equal(chmod(f->log, 0770), 0);
  assert_int_equal(la_outq_open(f->log, 1, 1 << 20, 0, 0, NULL, NULL, &q,
                                why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, "writable by group or others"));
  assert_int_equal(chmod(f->log, 0700), 0);
  /* a second queue on the same log is refused */
  assert_int_equal(la_outq_open(f->log, 1, 1 << 20, 0, 0, NULL, NULL, &q,
                                why, sizeof why), 0);
  assert_int_equal(la_outq_open(f->log, 1, 1 << 20, 0, 0, NULL, NULL, &q2,
                                why, sizeof why), LA_EIO);
  assert_non_null(strstr(why, "another LocalAgent"));
  la_outq_close(q);
  /* a missing directory is created 0700 */
  snprintf(path, sizeof path, "%s/new", f->dir);
  assert_int_equal(la_outq_open(path, 1, 1 << 20, 0, 0, NULL, NULL, &q, why,
                                sizeof why), 0);
  struct stat sb;
  assert_int_equal(lstat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0700);
  la_outq_close(q);
}

#define NTHREADS 4
#define PER_THREAD 2000

static void *appender(void *arg) {
  la_outq_t *q = arg;
  for (int i = 0; i < PER_THREAD; i++)
    if (la_outq_append(q, 0, NULL, enc, NULL, NULL) != 0) return (void *)1;
  return NULL;
}

static void test_concurrent_appends(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 64 << 10, 64 << 20, 64 << 10);
  pthread_t t[NTHREADS];
  for (int i = 0; i < NTHREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, appender, q), 0);
  /* the loop thread sends and acknowledges meanwhile */
  size_t sent = 0;
  uint64_t acked = 0;
  for (int round = 0; round < 1000000 && sent < NTHREADS * PER_THREAD;
       round++) {
    uint64_t seq;
    const uint8_t *b;
    size_t len;
    int rc = la_outq_next(q, &seq, &b, &len);
    if (rc == 1) {
      assert_true(frame_ok(seq, b, len));
      sent++;
      if (sent % 100 == 0 && sent <= NTHREADS * PER_THREAD / 2) {
        assert_int_equal(la_outq_ack(q, seq), 0);
        acked = seq;
      }
    } else {
      assert_int_equal(rc, 0);
      sched_yield();
    }
  }
  for (int i = 0; i < NTHREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    assert_null(r);
  }
  sent += drain(q, NULL, NULL);
  assert_int_equal(sent, NTHREADS * PER_THREAD);
  la_outq_close(q);
  q = open_q(f, 64 << 10, 64 << 20, 64 << 10);
  uint64_t first = 0, last = 0;
  assert_int_equal(drain(q, &first, &last),
                   NTHREADS * PER_THREAD - acked);
  assert_int_equal(first, acked + 1);
  assert_int_equal(last, NTHREADS * PER_THREAD);
  la_outq_close(q);
}

/* In a forked child: the queue opened (notes to note, f) with rank 0 of
 * "app" registered; the child exits 2 or 3 when it cannot be. */
static la_outq_t *child_open_rank0(fx_t *f, la_outq_note_fn note) {
  la_outq_t *q = NULL;
  char why[512];
  if (la_outq_open(f->log, 1 << 20, 1 << 20, 0, 0, note, f, &q, why,
                   sizeof why) != 0)
    _exit(2);
  la_outq_key_t r0 = {"app", 0, 0};
  if (la_outq_append(q, LA_OUTQ_OPENS_RANK, &r0, enc, NULL, NULL) != 0)
    _exit(3);
  return q;
}

/* In a child that dies without closing its queue (_exit: what a kill
 * leaves): registers rank 0 of "app", takes cycles 0..taken-1 and resolves
 * those below resolved with their traces. Returns the child's exit status
 * (0: it ran; 6: a taken cycle grew the log). */
static int take_then_kill(fx_t *f, int taken, int resolved) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    la_outq_t *q = child_open_rank0(f, NULL);
    for (int c = 0; c < taken; c++) {
      la_outq_key_t k = {"app", 0, (uint64_t)c};
      la_outq_stats_t a, b;
      la_outq_get_stats(q, &a);
      if (la_outq_taken(q, &k) != 0) _exit(4);
      la_outq_get_stats(q, &b);
      /* the table's slots take the first cycles without a write */
      if (c < (int)LA_TAKENTAB_SLOTS && b.log_bytes != a.log_bytes) _exit(6);
    }
    for (int c = 0; c < resolved; c++) {
      la_outq_key_t k = {"app", 0, (uint64_t)c};
      if (la_outq_append(q, LA_OUTQ_RESOLVES, &k, enc, NULL, NULL) != 0)
        _exit(5);
    }
    _exit(0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/* Counts the taken cycles the next start reports (la_outq_recovered) and
 * checks they are exactly from..to-1 of app rank 0. */
static void taken_cb(void *arg, int what, const la_outq_key_t *k) {
  uint64_t *c = arg; /* c[0]: count, c[1]: sum of the tags */
  if (what != LA_OUTQ_REC_TAKEN) return;
  assert_string_equal(k->app_id, "app");
  c[0]++;
  c[1] += k->cycle_tag;
}

/* A taken cycle costs no write to the log: it is a slot of the mapped
 * table in the log directory (takentab.h), which a kill leaves in the page
 * cache; its taken record goes to the log in the same write as its trace.
 * After a kill every cycle taken and not resolved is reported, none that
 * was; beyond the table's slots taken records go to the log as before;
 * a damaged slot is noted and skipped. */
static void test_taken_table_survives_kill(void **state) {
  fx_t *f = *state;
  /* 10 taken, 0..5 resolved: 6..9 come back as taken */
  assert_int_equal(take_then_kill(f, 10, 6), 0);
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 0);
  uint64_t c[2] = {0, 0};
  assert_int_equal(la_outq_recovered(q, taken_cb, c), 4 + 1); /* + rank */
  assert_int_equal(c[0], 4);
  assert_int_equal(c[1], 6 + 7 + 8 + 9);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.replayed, 1 + 6); /* RankStart and six traces */
  /* resolved now, as the agent does at start-up: gone for good */
  for (int k = 6; k < 10; k++) {
    la_outq_key_t key = {"app", 0, (uint64_t)k};
    assert_int_equal(la_outq_append(q, LA_OUTQ_RESOLVES | LA_OUTQ_MISSING,
                                    &key, enc, NULL, NULL), 0);
  }
  la_outq_close(q);
  q = open_q(f, 1 << 20, 1 << 20, 0);
  c[0] = c[1] = 0;
  la_outq_recovered(q, taken_cb, c);
  assert_int_equal(c[0], 0);
  la_outq_close(q);

  /* more taken than the table has slots: the rest as taken records */
  int many = (int)LA_TAKENTAB_SLOTS + 44;
  assert_int_equal(take_then_kill(f, many, 0), 0);
  q = open_q(f, 1 << 20, 1 << 20, 0);
  c[0] = c[1] = 0;
  la_outq_recovered(q, taken_cb, c);
  assert_int_equal(c[0], (uint64_t)many);
  assert_int_equal(c[1], (uint64_t)many * (many - 1) / 2);
  for (int k = 0; k < many; k++) {
    la_outq_key_t key = {"app", 0, (uint64_t)k};
    assert_int_equal(la_outq_append(q, LA_OUTQ_RESOLVES | LA_OUTQ_MISSING,
                                    &key, enc, NULL, NULL), 0);
  }
  la_outq_close(q);

  /* a slot damaged on disk: skipped and noted, the others reported */
  assert_int_equal(take_then_kill(f, 3, 0), 0);
  char tab[160];
  snprintf(tab, sizeof tab, "%s/taken.tab", f->log);
  int fd = open(tab, O_RDWR);
  assert_true(fd >= 0);
  uint8_t b;
  off_t at = 24 + 288 * 1 + 25; /* a byte of slot 1's app id */
  assert_int_equal(pread(fd, &b, 1, at), 1);
  b ^= 0x40;
  assert_int_equal(pwrite(fd, &b, 1, at), 1);
  close(fd);
  f->last[0] = '\0';
  q = open_q(f, 1 << 20, 1 << 20, 0);
  c[0] = c[1] = 0;
  la_outq_recovered(q, taken_cb, c);
  assert_int_equal(c[0], 2);
  assert_int_equal(c[1], 0 + 2);
  assert_non_null(strstr(f->last, "damaged slots"));
  la_outq_close(q);
}

/* Counts every taken cycle the next start reports, whatever its key. */
static void any_taken_cb(void *arg, int what, const la_outq_key_t *k) {
  (void)k;
  if (what == LA_OUTQ_REC_TAKEN) (*(uint64_t *)arg)++;
}

/* Writes slot i of the table at path: (app, rank, cycle) with its CRC
 * right and the slot marked taken. */
static void put_slot(const char *path, uint32_t i, const char *app,
                     uint16_t len, uint32_t rank, uint64_t cycle) {
  uint8_t s[288] = {0};
  uint32_t mark = LA_TAKENTAB_MARK;
  memcpy(s, &mark, 4);
  memcpy(s + 8, &rank, 4);
  memcpy(s + 12, &len, 2);
  memcpy(s + 16, &cycle, 8);
  memcpy(s + 24, app, len);
  uint32_t crc = la_crc32(0, s + 8, 16u + len);
  memcpy(s + 4, &crc, 4);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, s, sizeof s, 24 + (off_t)288 * i), 288);
  close(fd);
}

/* The taken table as another process may leave it: cut inside its header,
 * a header claiming a million slots (a sparse file of that size), slots
 * with their CRC right but an app id with a control character, none, or a
 * rank past the largest: each noted as damage at the next start (never
 * read as nothing taken, never a walk through the claimed size), the sound
 * slots still reported, and the table back to its size. A FIFO, a file of
 * mode 0644 and one of another user in its place are refused, saying
 * which, and the queue works without the table. */
static void test_taken_table_hostile(void **state) {
  fx_t *f = *state;
  char tab[160];
  snprintf(tab, sizeof tab, "%s/taken.tab", f->log);
  struct stat sb;
  uint64_t n = 0;

  /* cut inside the header: three slots were taken */
  assert_int_equal(take_then_kill(f, 3, 0), 0);
  assert_int_equal(truncate(tab, 10), 0);
  f->last[0] = '\0';
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 0);
  assert_non_null(strstr(f->last, "taken.tab"));
  assert_non_null(strstr(f->last, "cannot be read"));
  la_outq_close(q);

  /* a header claiming 2^20 slots, the file that size */
  assert_int_equal(take_then_kill(f, 0, 0), 0);
  int fd = open(tab, O_RDWR);
  assert_true(fd >= 0);
  uint32_t big = 1u << 20;
  assert_int_equal(pwrite(fd, &big, 4, 8), 4);
  assert_int_equal(ftruncate(fd, 24 + (off_t)288 * big), 0);
  close(fd);
  f->last[0] = '\0';
  q = open_q(f, 1 << 20, 1 << 20, 0);
  assert_non_null(strstr(f->last, "cannot be read"));
  la_outq_close(q);
  assert_int_equal(stat(tab, &sb), 0);
  assert_int_equal(sb.st_size, 24 + 288 * (off_t)LA_TAKENTAB_SLOTS);

  /* slots with their CRC right and what no agent writes in them */
  assert_int_equal(take_then_kill(f, 2, 0), 0); /* slots 0 and 1: sound */
  put_slot(tab, 2, "a\nb", 3, 0, 5);
  put_slot(tab, 3, "", 0, 0, 6);
  put_slot(tab, 4, "app\0x", 5, 0, 7);
  put_slot(tab, 5, "app", 3, UINT32_MAX, 8);
  f->last[0] = '\0';
  q = open_q(f, 1 << 20, 1 << 20, 0);
  la_outq_recovered(q, any_taken_cb, &n);
  assert_int_equal(n, 2);
  assert_non_null(strstr(f->last, "4 damaged slots"));
  la_outq_close(q);

  /* refused in its place: a link, a FIFO, mode 0644, another user's file */
  char elsewhere[200];
  snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", f->dir);
  assert_int_equal(rename(tab, elsewhere), 0);
  assert_int_equal(symlink(elsewhere, tab), 0);
  f->last[0] = '\0';
  q = open_q(f, 1 << 20, 1 << 20, 0);
  assert_non_null(strstr(f->last, "taken.tab refused: a symbolic link"));
  la_outq_close(q);
  assert_int_equal(unlink(elsewhere), 0);
  assert_int_equal(unlink(tab), 0);
  assert_int_equal(mkfifo(tab, 0600), 0);
  f->last[0] = '\0';
  q = open_q(f, 1 << 20, 1 << 20, 0);
  assert_non_null(strstr(f->last, "not a regular file"));
  la_outq_key_t k = {"app", 0, 1};
  assert_int_equal(la_outq_taken(q, &k), 0); /* in the log instead */
  la_outq_close(q);
  assert_int_equal(unlink(tab), 0);
  fd = open(tab, O_RDWR | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(fchmod(fd, 0644), 0);
  f->last[0] = '\0';
  q = open_q(f, 1 << 20, 1 << 20, 0);
  assert_non_null(strstr(f->last, "mode 644"));
  la_outq_close(q);
  if (geteuid() == 0) {
    assert_int_equal(fchmod(fd, 0600), 0);
    assert_int_equal(fchown(fd, 65534, 65534), 0);
    f->last[0] = '\0';
    q = open_q(f, 1 << 20, 1 << 20, 0);
    assert_non_null(strstr(f->last, "owned by uid 65534"));
    la_outq_close(q);
  }
  close(fd);
}

/* The table cut to nothing by another process while the queue runs: the
 * next stores into its map fault (SIGBUS), which the queue survives; the
 * cycles its slots held and every later one go to the log as taken
 * records, said once, and a kill after it reports them all. */
static void test_taken_table_cut_while_open(void **state) {
  fx_t *f = *state;
  char tab[160];
  snprintf(tab, sizeof tab, "%s/taken.tab", f->log);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    la_outq_t *q = child_open_rank0(f, on_note);
    for (int c = 0; c < 3; c++) { /* three slots */
      la_outq_key_t k = {"app", 0, (uint64_t)c};
      if (la_outq_taken(q, &k) != 0) _exit(4);
    }
    if (truncate(tab, 0) != 0) _exit(5);
    for (int c = 3; c < 5; c++) { /* the first faults */
      la_outq_key_t k = {"app", 0, (uint64_t)c};
      if (la_outq_taken(q, &k) != 0) _exit(6);
    }
    la_outq_key_t k1 = {"app", 0, 1}; /* resolved: frees nothing now */
    if (la_outq_append(q, LA_OUTQ_RESOLVES, &k1, enc, NULL, NULL) != 0)
      _exit(7);
    if (f->notes != 1 || !strstr(f->last, "taken.tab was cut") ||
        !strstr(f->last, "3 cycles of its slots written there"))
      _exit(8);
    _exit(0); /* a kill: nothing closed */
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  la_outq_t *q = open_q(f, 1 << 20, 1 << 20, 0);
  uint64_t c[2] = {0, 0};
  la_outq_recovered(q, taken_cb, c);
  assert_int_equal(c[0], 4); /* 0, 2, 3, 4 */
  assert_int_equal(c[1], 0 + 2 + 3 + 4);
  for (int k = 0; k < 5; k++) {
    la_outq_key_t key = {"app", 0, (uint64_t)k};
    assert_int_equal(la_outq_append(q, LA_OUTQ_RESOLVES | LA_OUTQ_MISSING,
                                    &key, enc, NULL, NULL), 0);
  }
  la_outq_close(q);

  /* replaced (another file renamed over it): found at the next sync, the
   * slots go to the log as above */
  char other[200];
  snprintf(other, sizeof other, "%s/other.tab", f->dir);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    la_outq_t *q2 = NULL;
    char why[512];
    f->notes = 0;
    if (la_outq_open(f->log, 1 << 20, 1 << 20, 0, 0, on_note, f, &q2, why,
                     sizeof why) != 0)
      _exit(2);
    for (int c2 = 10; c2 < 12; c2++) { /* two slots */
      la_outq_key_t k = {"app", 0, (uint64_t)c2};
      if (la_outq_taken(q2, &k) != 0) _exit(4);
    }
    int fd = open(other, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || close(fd) != 0 || rename(other, tab) != 0) _exit(5);
    if (la_outq_sync(q2) != 0) _exit(6);
    la_outq_key_t k = {"app", 0, 12};
    if (la_outq_taken(q2, &k) != 0) _exit(7);
    if (f->notes != 1 || !strstr(f->last, "cut or replaced") ||
        !strstr(f->last, "2 cycles of its slots written there"))
      _exit(8);
    _exit(0);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  q = open_q(f, 1 << 20, 1 << 20, 0);
  c[0] = c[1] = 0;
  la_outq_recovered(q, taken_cb, c);
  assert_int_equal(c[0], 3);
  assert_int_equal(c[1], 10 + 11 + 12);
  la_outq_close(q);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)


/* The log's fsync on the syncer's thread: what is appended is fsynced
 * within a period, while appends go on from other threads (the fsync
 * holds no lock: TSan checks the sharing); stopping a syncer whose period
 * is an hour away returns at once, and la_outq_sync with nothing new
 * syncs nothing. */
static void test_syncer_thread(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f, 64 << 10, 64 << 20, 64 << 10);
  la_outq_stats_t st;
  la_outq_get_stats(q, &st);
  uint64_t before = st.fsyncs;
  la_syncer_t *sy = NULL;
  char why[200];
  assert_int_equal(la_syncer_start(q, 0, &sy, why, sizeof why), LA_EINVAL);
  assert_int_equal(la_syncer_start(q, 5, &sy, why, sizeof why), 0);
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    assert_int_equal(pthread_create(&t[i], NULL, appender, q), 0);
  for (int i = 0; i < 2; i++) {
    void *r = NULL;
    pthread_join(t[i], &r);
    assert_null(r);
  }
  app(q); /* after the appenders: the syncer must catch this one too */
  int synced = 0;
  for (int i = 0; i < 2000 && !synced; i++) { /* up to 10 s */
    usleep(5000);
    la_outq_get_stats(q, &st);
    synced = st.fsyncs > before;
  }
  assert_true(synced);
  la_syncer_stop(sy);
  /* everything appended is synced now: another sync does nothing */
  assert_int_equal(la_outq_sync(q), 0);
  la_outq_get_stats(q, &st);
  uint64_t after = st.fsyncs;
  assert_int_equal(la_outq_sync(q), 0);
  la_outq_get_stats(q, &st);
  assert_int_equal(st.fsyncs, after);
  assert_int_equal(la_syncer_start(q, 3600 * 1000, &sy, why, sizeof why), 0);
  la_syncer_stop(sy); /* at once, not in an hour */
  la_syncer_stop(NULL);
  la_outq_close(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    T(test_append_next_ack),
    T(test_replay_after_crash),
    T(test_segments_deleted_when_acked),
    T(test_torn_tail_truncated),
    T(test_corrupt_last_record_skipped),
    T(test_taken_and_ranks_recovered),
    T(test_log_limit),
    T(test_memory_limit_zero_reads_log),
    T(test_memory_only),
    T(test_directory_checks),
    T(test_concurrent_appends),
    T(test_syncer_thread),
    T(test_taken_table_survives_kill),
    T(test_taken_table_hostile),
    T(test_taken_table_cut_while_open),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
