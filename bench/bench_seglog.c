/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_seglog.c: throughput of the LocalAgent's write-ahead queue and its
 * segment log (localagent/outq.c, localagent/seglog.c).
 *
 * In a fresh directory under $TMPDIR (or /tmp), appends messages of a
 * compact trace's typical sizes (256 B and 4 KiB frames) as the agent does
 * (la_outq_append: seq, one write(2) per message, memory copy), then sends
 * and acknowledges them all (la_outq_next, la_outq_ack in batches of 64, as
 * the GlobalAgent's group commit does; segments deleted), then reopens the
 * log with everything unacknowledged (replay). Cases:
 *
 *   append        1 thread, memory copies kept (queue_bytes large)
 *   append-4thr   4 threads appending at once (the worker pool)
 *   append-nomem  queue_bytes 0: sending reads every message back
 *   fsync-each    spool_fsync_interval = 0: an fsync per append
 *
 * Reports messages/s and MB/s per case (median of 3 runs) to argv[1]
 * (default build/bench/seglog.json) and as a table. The numbers depend on
 * the file system and the page cache; the fsync case on the disk. The
 * one-file-per-message spool this log replaced managed about 10^4
 * messages/s on these machines (docs/localagent.md).
 */
#include "bench_args.h"
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_test_oracle.h"
#include "outq.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int rm_one(const char *p, const struct stat *st, int fl, struct FTW *f) {
  return remove(p);
}

static int enc(void *arg, uint64_t seq, uint8_t **frame, size_t *len) {
  size_t n = *(size_t *)arg;
  uint8_t *b = malloc(n);
  if (b == NULL) return LA_ENOMEM;
  memset(b, (int)(seq & 0xff), n);
  memcpy(b, &seq, sizeof seq);
  *frame = b;
  *len = n;
  return 0;
}

typedef struct job {
  la_outq_t *q;
  size_t size;
  long n;
  int rc;
} job_t;

static void *appender(void *arg) {
  job_t *j = arg;
  la_outq_key_t k = {"bench-app", 0, 0};
  for (long i = 0; i < j->n && j->rc == 0; i++) {
    k.cycle_tag = (uint64_t)i;
    j->rc = la_outq_append(j->q, LA_OUTQ_RESOLVES, &k, enc, &j->size, NULL);
  }
  return NULL;
}

typedef struct res {
  double append, drain, replay; /* messages/s */
} res_t;

/* One run; returns 0 or -1. */
static int run(const char *dir, size_t size, long n, int threads, uint64_t mem,
               int fsync_each, res_t *r) {
  la_outq_t *q = NULL;
  char why[300];
  if (la_outq_open(dir, mem, (uint64_t)64 << 30, 0, fsync_each, NULL, NULL, &q,
                   why, sizeof why) != 0) {
    fprintf(stderr, "bench_seglog: %s\n", why);
    return -1;
  }
  job_t jobs[8];
  pthread_t t[8];
  double t0 = now_s();
  for (int i = 0; i < threads; i++) {
    jobs[i] = (job_t){q, size, n / threads, 0};
    pthread_create(&t[i], NULL, appender, &jobs[i]);
  }
  int bad = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    bad |= jobs[i].rc != 0;
  }
  la_outq_sync(q);
  double t1 = now_s();
  r->append = (double)n / (t1 - t0);
  /* send all but the last 1000, acknowledging in batches of 64 */
  uint64_t seq;
  const uint8_t *b;
  size_t len;
  long sent = 0;
  while (sent < n - 1000 && la_outq_next(q, &seq, &b, &len) == 1)
    if (++sent % 64 == 0) la_outq_ack(q, seq);
  la_outq_ack(q, seq);
  double t2 = now_s();
  r->drain = (double)sent / (t2 - t1);
  la_outq_close(q);
  /* replay what is left, plus a full log: reopen after appending again */
  if (la_outq_open(dir, mem, (uint64_t)64 << 30, 0, 0, NULL, NULL, &q, why,
                   sizeof why) != 0)
    return -1;
  jobs[0] = (job_t){q, size, n, 0};
  appender(&jobs[0]);
  la_outq_close(q);
  double t3 = now_s();
  if (la_outq_open(dir, mem, (uint64_t)64 << 30, 0, 0, NULL, NULL, &q, why,
                   sizeof why) != 0)
    return -1;
  la_outq_stats_t st;
  la_outq_get_stats(q, &st);
  double t4 = now_s();
  r->replay = (double)st.replayed / (t4 - t3);
  la_outq_close(q);
  return bad ? -1 : 0;
}

int main(int argc, char **argv) {
  const char *path =
      la_bench_out_path(argc, argv, 1, "build/bench/seglog.json");
  char base[512];
  if (la_bench_tmpdir("bench_seglog", base, sizeof base)) return 1;
  struct {
    const char *name;
    size_t size;
    long n;
    int threads;
    uint64_t mem;
    int fsync_each;
  } cases[] = {
      {"append-256B", 256, 200000, 1, 1 << 30, 0},
      {"append-4KiB", 4096, 50000, 1, 1 << 30, 0},
      {"append-4thr-256B", 256, 200000, 4, 1 << 30, 0},
      {"append-nomem-256B", 256, 200000, 1, 0, 0},
      {"fsync-each-256B", 256, 2000, 1, 1 << 30, 1},
  };
  size_t nc = sizeof cases / sizeof cases[0];
  FILE *js = fopen(path, "w");
  if (js == NULL) {
    perror(path);
    return 1;
  }
  fprintf(js, "{\n  \"bench\": \"seglog\",\n  \"cases\": [\n");
  printf("%-20s %14s %10s %14s %14s\n", "case", "append msg/s", "MB/s",
         "send+ack msg/s", "replay msg/s");
  int rc = 0;
  for (size_t c = 0; c < nc; c++) {
    res_t r[3];
    for (int k = 0; k < 3; k++) {
      char dir[600];
      snprintf(dir, sizeof dir, "%s/%s.%d", base, cases[c].name, k);
      if (run(dir, cases[c].size, cases[c].n, cases[c].threads, cases[c].mem,
              cases[c].fsync_each, &r[k]) != 0)
        rc = 1;
      nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
    }
    double a = la_test_median3(r[0].append, r[1].append, r[2].append);
    double d = la_test_median3(r[0].drain, r[1].drain, r[2].drain);
    double p = la_test_median3(r[0].replay, r[1].replay, r[2].replay);
    printf("%-20s %14.0f %10.1f %14.0f %14.0f\n", cases[c].name, a,
           a * (double)cases[c].size / 1e6, d, p);
    fprintf(js,
            "    {\"case\": \"%s\", \"frame_bytes\": %zu, \"messages\": %ld, "
            "\"threads\": %d, \"append_msgs_per_s\": %.0f, "
            "\"send_ack_msgs_per_s\": %.0f, \"replay_msgs_per_s\": %.0f}%s\n",
            cases[c].name, cases[c].size, cases[c].n, cases[c].threads, a, d, p,
            c + 1 < nc ? "," : "");
  }
  fprintf(js, "  ]\n}\n");
  fclose(js);
  nftw(base, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  printf("wrote %s\n", path);
  return rc;
}
