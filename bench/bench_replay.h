/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_replay.h: what the replays of dumped cycles (bench_rowcycle,
 * bench_cellcycle) share: where the dumped cycles are, the cycle tags
 * LA_DUMP_RAW wrote for a rank, the thread's CPU time, medians and FNV-1a
 * hashes of results. */
#ifndef LA_BENCH_REPLAY_H
#define LA_BENCH_REPLAY_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The calling thread's CPU time, ns. */
static inline double la_bench_thread_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int la_bench_cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline int la_bench_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1; v is sorted). */
static inline double la_bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, la_bench_cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* FNV-1a of p[0..len) continuing from h. */
static inline uint64_t la_bench_fnv(uint64_t h, const void *p, size_t len) {
  const unsigned char *b = p;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* The cycle tags of DIR/APP.r<rank>.c<tag>.f64, sorted, at most max of
 * them; their number, or -1 when dir cannot be read. */
static inline int la_bench_dump_tags(const char *dir, const char *app,
                                     int rank, uint64_t *tags, int max) {
  char pre[512];
  snprintf(pre, sizeof pre, "%s.r%d.c", app, rank);
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < max) {
    size_t lp = strlen(pre), le = strlen(e->d_name);
    if (le <= lp + 4 || strncmp(e->d_name, pre, lp) != 0 ||
        strcmp(e->d_name + le - 4, ".f64") != 0)
      continue;
    char *end;
    unsigned long long t = strtoull(e->d_name + lp, &end, 10);
    if (strcmp(end, ".f64") == 0) tags[n++] = t;
  }
  closedir(d);
  qsort(tags, (size_t)n, sizeof *tags, la_bench_cmp_u64);
  return n;
}

/* The scale= (ns per count) of DIR/APP.r<rank>.c<tag>.fid into *scale;
 * 0, or -1 after a message naming the file. */
static inline int la_bench_dump_scale(const char *prog, const char *dir,
                                      const char *app, int rank, uint64_t tag,
                                      double *scale) {
  char path[1024], line[256];
  snprintf(path, sizeof path, "%s/%s.r%d.c%llu.fid", dir, app, rank,
           (unsigned long long)tag);
  FILE *f = fopen(path, "r");
  const char *s = f && fgets(line, sizeof line, f) ? strstr(line, "scale=")
                                                   : NULL;
  if (f) fclose(f);
  if (!s || !(*scale = strtod(s + 6, NULL), *scale > 0)) {
    fprintf(stderr, "%s: %s: no scale=\n", prog, path);
    return -1;
  }
  return 0;
}

/* DIR:APP[:RANK] from the environment variable var (rank 0 unless
 * given); 0, or 2 after a message (the variable unset or malformed). */
static inline int la_bench_dump_spec(const char *prog, const char *var,
                                     const char *how, char *dir,
                                     size_t dir_len, char *app,
                                     size_t app_len, int *rank) {
  const char *spec = getenv(var);
  const char *c1 = spec ? strchr(spec, ':') : NULL;
  if (!c1 || (size_t)(c1 - spec) >= dir_len || !c1[1]) {
    fprintf(stderr, "%s: set %s=DIR:APP[:RANK] (%s records a run)\n", prog,
            var, how);
    return 2;
  }
  memcpy(dir, spec, (size_t)(c1 - spec));
  dir[c1 - spec] = 0;
  snprintf(app, app_len, "%s", c1 + 1);
  char *c2 = strchr(app, ':');
  *rank = 0;
  if (c2) {
    *c2 = 0;
    *rank = atoi(c2 + 1);
  }
  return 0;
}

#endif
