/* SPDX-License-Identifier: BSD-3-Clause */
/* test_seglog_damage.c: damage in the LocalAgent's log (localagent/seglog.c,
 * localagent/outq.c) is skipped, counted and reported; only a record cut
 * short at the end is taken for a crash while writing.
 *
 * Every test writes, through the queue, what a worker writes for each cycle
 * (a taken record, then the trace that resolves it) for 30 cycles of one
 * rank, "crashes" (closes without acks), damages the segment by hand and
 * opens the queue again. It checks what the replay queues (the traces, in
 * seq order), what it reports (la_outq_recovered: taken cycles of a crash;
 * la_outq_damaged: taken cycles whose trace may have been in damage), the
 * counters and the notes. Covers: a flipped payload byte in the middle (29
 * come back, the damaged cycle reported damaged), a flipped length byte
 * (the next record found by its checksum), a damaged file header (all 30
 * come back), a torn tail (truncated, not damage), a damaged complete last
 * record (damage, not truncated), a garbage span over several records (a
 * cycle whose taken record it took too is only counted), a
 * cycle taken after the damage and never compacted (a crash, not damage),
 * the damage reported once across restarts, and a segment of crafted
 * record headers whose checksum work stays bounded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "outq.h"
#include "seglog.h"

#define NCYC 30

typedef struct fx {
  char dir[64];
  char log[96];
  char seg[256]; /* the segment the cycles are in */
  char notes[8192];
  long at[NCYC], size[NCYC]; /* each cycle's trace record */
  char found[512];           /* what the callbacks reported */
} fx_t;

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw) {
  return remove(path);
}

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  if (f == NULL) return -1;
  strcpy(f->dir, "/tmp/test_seglog_damage.XXXXXX");
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

/* Removes the log directory: the next open starts an empty log. */
static void fresh(fx_t *f) {
  nftw(f->log, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void on_note(void *arg, const char *msg) {
  fx_t *f = arg;
  size_t n = strlen(f->notes);
  snprintf(f->notes + n, sizeof f->notes - n, "%s\n", msg);
}

/* A frame of seq: 8 bytes of seq, then 200 bytes of filler. */
static int enc(void *arg, uint64_t seq, uint8_t **frame, size_t *len) {
  uint8_t *b = malloc(208);
  if (b == NULL) return LA_ENOMEM;
  for (size_t i = 0; i < 208; i++)
    b[i] = i < 8 ? (uint8_t)(seq >> (8 * i)) : (uint8_t)(seq + i);
  *frame = b;
  *len = 208;
  return 0;
}

static la_outq_t *open_q(fx_t *f) {
  la_outq_t *q = NULL;
  char why[512];
  f->notes[0] = '\0';
  int rc = la_outq_open(f->log, 1 << 20, 1 << 24, 0, 0, on_note, f, &q, why,
                        sizeof why);
  if (rc != 0) fail_msg("open: %s", why);
  return q;
}

static la_outq_stats_t stats(la_outq_t *q) {
  la_outq_stats_t st;
  la_outq_get_stats(q, &st);
  return st;
}

static uint32_t get32(const uint8_t *p) {
  return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Finds each cycle's trace record in the newest segment (walked by the
 * records' lengths, before any damage). */
static void locate(fx_t *f) {
  DIR *d = opendir(f->log);
  char best[256] = "";
  struct dirent *e;
  assert_non_null(d);
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, ".laseg") && strcmp(e->d_name, best) > 0)
      snprintf(best, sizeof best, "%s", e->d_name);
  closedir(d);
  snprintf(f->seg, sizeof f->seg, "%s/%.64s", f->log, best);
  FILE *fp = fopen(f->seg, "rb");
  assert_non_null(fp);
  uint8_t h[LA__SL_REC_HDR];
  long pos = LA__SL_FILE_HDR;
  for (int c = 0; c < NCYC; c++) f->at[c] = -1;
  while (fseek(fp, pos, SEEK_SET) == 0 &&
         fread(h, 1, sizeof h, fp) == sizeof h) {
    uint64_t cycle = 0;
    for (int i = 7; i >= 0; i--) cycle = cycle << 8 | h[24 + i];
    if (h[16] == LA__SL_MSG && (h[17] & LA__SL_F_RESOLVES) && cycle < NCYC) {
      f->at[cycle] = pos;
      f->size[cycle] = 8 + (long)get32(h);
    }
    pos += 8 + (long)get32(h);
  }
  fclose(fp);
  for (int c = 0; c < NCYC; c++) assert_true(f->at[c] > 0);
}

/* The queue as a worker leaves it: for each cycle a taken record and the
 * trace that resolves it; then extra cycles taken and never compacted. */
static void write_cycles(fx_t *f, int extra_taken) {
  la_outq_t *q = open_q(f);
  for (int c = 0; c < NCYC + extra_taken; c++) {
    la_outq_key_t k = {"app", 0, (uint64_t)c};
    assert_int_equal(la_outq_taken(q, &k), 0);
    if (c < NCYC)
      assert_int_equal(la_outq_append(q, LA_OUTQ_RESOLVES, &k, enc, NULL, NULL),
                       0);
  }
  la_outq_close(q); /* a crash: nothing acknowledged */
  locate(f);
}

static void flip(const char *path, long at) {
  int fd = open(path, O_RDWR);
  uint8_t b;
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, &b, 1, at), 1);
  b ^= 0x40;
  assert_int_equal(pwrite(fd, &b, 1, at), 1);
  close(fd);
}

static off_t file_size(const char *path) {
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  return sb.st_size;
}

static void found_cb(void *arg, const la_outq_key_t *k) {
  fx_t *f = arg;
  size_t n = strlen(f->found);
  snprintf(f->found + n, sizeof f->found - n, "damaged:%s/%u/%llu;", k->app_id,
           k->rank, (unsigned long long)k->cycle_tag);
}

static void recovered_cb(void *arg, int what, const la_outq_key_t *k) {
  fx_t *f = arg;
  size_t n = strlen(f->found);
  snprintf(f->found + n, sizeof f->found - n, "%s:%s/%u/%llu;",
           what == LA_OUTQ_REC_TAKEN ? "taken" : "rank", k->app_id, k->rank,
           (unsigned long long)k->cycle_tag);
}

/* Opens the queue again: what la_outq_recovered and la_outq_damaged report
 * goes to f->found; the seqs replayed (frames checked) to seqs. Returns
 * the queue (open) and the number replayed in *n. */
static la_outq_t *reopen(fx_t *f, uint64_t *seqs, size_t *n) {
  la_outq_t *q = open_q(f);
  uint64_t seq;
  const uint8_t *b;
  size_t len;
  f->found[0] = '\0';
  la_outq_recovered(q, recovered_cb, f);
  la_outq_damaged(q, found_cb, f);
  *n = 0;
  while (la_outq_next(q, &seq, &b, &len) == 1) {
    assert_int_equal(len, 208);
    for (size_t i = 0; i < 8; i++)
      assert_int_equal(b[i], (uint8_t)(seq >> (8 * i)));
    if (*n > 0) assert_true(seq > seqs[*n - 1]);
    seqs[(*n)++] = seq;
  }
  return q;
}

/* Checks a replay that lost exactly the trace of cycle lost to damage. */
static void check_one_damaged(fx_t *f, la_outq_t *q, size_t n, int lost,
                              long damaged) {
  la_outq_stats_t st = stats(q);
  char want[64];
  assert_int_equal(n, NCYC - 1);
  assert_int_equal(st.replayed, NCYC - 1);
  assert_int_equal(st.torn_bytes, 0);
  assert_int_equal(st.damaged_bytes, damaged);
  assert_int_equal(st.damaged_spans, 1);
  assert_int_equal(st.damaged_taken, 1);
  snprintf(want, sizeof want, "damaged:app/0/%d;", lost);
  assert_string_equal(f->found, want);
  assert_non_null(strstr(f->notes, "damaged bytes at offset"));
  assert_null(strstr(f->notes, "crash"));
}

/* --------------------------------------------------------------- tests -- */

/* One flipped byte in the payload of the 16th trace of 30: the 29 others
 * come back, the damaged cycle is reported damaged (the segment used to be
 * cut there: 15 traces lost, the pending ones blamed on a crash). */
static void test_payload_flip_middle(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 0);
  off_t before = file_size(f->seg);
  flip(f->seg, f->at[15] + f->size[15] / 2);
  la_outq_t *q = reopen(f, seqs, &n);
  check_one_damaged(f, q, n, 15, f->size[15]);
  assert_int_equal(file_size(f->seg), before); /* left as it is */
  la_outq_close(q);
}

/* One flipped byte in a record's length (+4 MiB: past the end of the
 * file): the next record is found by its checksum, not by the length, and
 * the damage is not taken for a torn tail. */
static void test_length_flip_resync(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 0);
  flip(f->seg, f->at[15] + 2);
  la_outq_t *q = reopen(f, seqs, &n);
  check_one_damaged(f, q, n, 15, f->size[15]);
  la_outq_close(q);
  /* a length shorter than the record, pointing inside it */
  fresh(f);
  write_cycles(f, 0);
  flip(f->seg, f->at[20]); /* the length's low byte: 64 bytes less */
  q = reopen(f, seqs, &n);
  check_one_damaged(f, q, n, 20, f->size[20]);
  la_outq_close(q);
}

/* A damaged file header: the segment's records still come back (the whole
 * segment used to be emptied). */
static void test_header_damaged(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 0);
  flip(f->seg, 3);
  la_outq_t *q = reopen(f, seqs, &n);
  la_outq_stats_t st = stats(q);
  assert_int_equal(n, NCYC);
  assert_int_equal(st.damaged_bytes, LA__SL_FILE_HDR);
  assert_int_equal(st.damaged_taken, 0);
  assert_int_equal(st.torn_bytes, 0);
  assert_string_equal(f->found, "");
  assert_non_null(strstr(f->notes, "file header"));
  la_outq_close(q);
  /* the segment number in the header wrong: the same */
  fresh(f);
  write_cycles(f, 0);
  flip(f->seg, 9);
  q = reopen(f, seqs, &n);
  assert_int_equal(n, NCYC);
  assert_int_equal(stats(q).damaged_bytes, LA__SL_FILE_HDR);
  la_outq_close(q);
}

/* A torn tail (the last record cut short) stays a crash while writing:
 * truncated, counted in torn_bytes, its taken cycle reported as a crash. */
static void test_torn_tail_is_not_damage(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 0);
  off_t size = file_size(f->seg);
  assert_int_equal(f->at[NCYC - 1] + f->size[NCYC - 1], size);
  assert_int_equal(truncate(f->seg, size - 5), 0);
  la_outq_t *q = reopen(f, seqs, &n);
  la_outq_stats_t st = stats(q);
  assert_int_equal(n, NCYC - 1);
  assert_int_equal(st.torn_bytes, f->size[NCYC - 1] - 5);
  assert_int_equal(st.damaged_bytes, 0);
  assert_int_equal(st.damaged_taken, 0);
  assert_string_equal(f->found, "taken:app/0/29;");
  assert_non_null(strstr(f->notes, "cut short (a crash while writing)"));
  assert_null(strstr(f->notes, "damaged"));
  assert_int_equal(file_size(f->seg), f->at[NCYC - 1]);
  la_outq_close(q);
}

/* The last record complete but failing its checksum is damage, not a torn
 * write: counted as damage, the file not truncated. */
static void test_damaged_last_record(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 0);
  off_t size = file_size(f->seg);
  flip(f->seg, size - 20);
  la_outq_t *q = reopen(f, seqs, &n);
  check_one_damaged(f, q, n, NCYC - 1, f->size[NCYC - 1]);
  assert_int_equal(file_size(f->seg), size);
  la_outq_close(q);
}

/* 300 bytes of garbage over the traces of cycles 10 and 11 and the taken
 * record between them: every other trace comes back; cycle 10 is reported
 * damaged; cycle 11, whose taken record went with the damage, cannot be
 * named: it is in the span noted and counted (damaged_bytes). */
static void test_garbage_span(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 0);
  uint8_t junk[300];
  srand(7);
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (uint8_t)rand();
  int fd = open(f->seg, O_RDWR);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, junk, sizeof junk, f->at[10] + 100), sizeof junk);
  close(fd);
  la_outq_t *q = reopen(f, seqs, &n);
  la_outq_stats_t st = stats(q);
  assert_int_equal(st.torn_bytes, 0);
  assert_true(st.damaged_bytes >= sizeof junk);
  /* trace records are 243 bytes, taken records 35: one span from the
   * trace of 10 to the taken record of 12 */
  assert_int_equal(n, NCYC - 2);
  assert_int_equal(st.damaged_spans, 1);
  assert_int_equal(st.damaged_bytes, f->at[12] - 35 - f->at[10]);
  assert_string_equal(f->found, "damaged:app/0/10;");
  assert_non_null(strstr(f->notes, "damaged bytes at offset"));
  la_outq_close(q);
}

/* A cycle taken after the damage and never compacted is a crash, not
 * damage; a cycle taken before and resolved is neither. */
static void test_crash_after_damage(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 1); /* cycle 30 taken, never compacted */
  flip(f->seg, f->at[15] + 40);
  la_outq_t *q = reopen(f, seqs, &n);
  assert_int_equal(n, NCYC - 1);
  assert_string_equal(f->found, "taken:app/0/30;damaged:app/0/15;");
  la_outq_close(q);
}

/* The damage stays in the file, but once its cycle is recorded missing the
 * next start reports it no more. */
static void test_damage_reported_once(void **state) {
  fx_t *f = *state;
  uint64_t seqs[64];
  size_t n;
  write_cycles(f, 0);
  flip(f->seg, f->at[15] + 100);
  la_outq_t *q = reopen(f, seqs, &n);
  assert_string_equal(f->found, "damaged:app/0/15;");
  la_outq_key_t k = {"app", 0, 15};
  assert_int_equal(la_outq_append(q, LA_OUTQ_MISSING | LA_OUTQ_RESOLVES, &k,
                                  enc, NULL, NULL),
                   0);
  la_outq_close(q);
  q = reopen(f, seqs, &n);
  la_outq_stats_t st = stats(q);
  assert_string_equal(f->found, "");
  assert_int_equal(n, NCYC);             /* 29 traces and the missing record */
  assert_int_equal(st.damaged_spans, 1); /* found again, reported once */
  assert_int_equal(st.damaged_taken, 0);
  la_outq_close(q);
}

/* A segment of crafted record headers, each claiming a body as long as the
 * rest of the file and failing its checksum: without a bound the search for
 * the next record would checksum ~16 GiB; it stays bounded, and what it did
 * not search is damage, not a torn tail to truncate. */
static void test_resync_work_bounded(void **state) {
  fx_t *f = *state;
  la_outq_t *q = open_q(f);
  la_outq_close(q);
  char seg[256];
  snprintf(seg, sizeof seg, "%s/%020d.laseg", f->log, 2);
  size_t size = 1 << 20;
  uint8_t *b = calloc(1, size);
  assert_non_null(b);
  memcpy(b, "LASEG001", 8);
  b[8] = 2;
  for (size_t at = LA__SL_FILE_HDR; at + LA__SL_REC_HDR <= size; at += 32) {
    uint32_t body = (uint32_t)(size - at - 8);
    for (int i = 0; i < 4; i++) b[at + i] = (uint8_t)(body >> (8 * i));
    b[at + 16] = LA__SL_MSG;
  }
  /* the first one reaching past the end: not a torn tail while the rest of
   * the segment is unsearched */
  b[LA__SL_FILE_HDR + 2] = 0x20;
  FILE *fp = fopen(seg, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(b, 1, size, fp), size);
  fclose(fp);
  free(b);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  q = open_q(f);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  la_outq_stats_t st = stats(q);
  print_message("1 MiB of crafted headers scanned in %.3f s\n", s);
  assert_int_equal(st.damaged_bytes, size - LA__SL_FILE_HDR);
  assert_int_equal(st.torn_bytes, 0); /* nothing truncated */
  assert_non_null(strstr(f->notes, "too much damage"));
  assert_true(s < 5.0);
  la_outq_close(q);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_payload_flip_middle), T(test_length_flip_resync),
      T(test_header_damaged),      T(test_torn_tail_is_not_damage),
      T(test_damaged_last_record), T(test_garbage_span),
      T(test_crash_after_damage),  T(test_damage_reported_once),
      T(test_resync_work_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
