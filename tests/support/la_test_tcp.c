/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_tcp.c: a test daemon's TCP connections drained, read from the
 * kernel's socket tables (/proc/net/tcp, /proc/net/tcp6) and the
 * process's descriptors (/proc/PID/fd). */
#include "la_test_tcp.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_test_daemon.h"

enum { LA__TT_MAX = 256 };

/* The socket inodes of pid's descriptors; returns their count or -1. */
static int socket_inodes(pid_t pid, unsigned long *ino, int cap) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && n < cap) {
    char p[320], target[128];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    ssize_t len = readlink(p, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    unsigned long i;
    if (sscanf(target, "socket:[%lu]", &i) == 1) ino[n++] = i;
  }
  closedir(d);
  return n;
}

/* One row of a socket table: ports, queues, inode. */
typedef struct {
  unsigned lport, rport;
  unsigned long tx, rx, ino;
} la__tt_row_t;

/* The rows of /proc/net/tcp and tcp6, all of them (a busy machine has
 * thousands: a fixed cap would miss ours), into *out (malloc'ed); their
 * count or -1. */
static int read_rows(la__tt_row_t **out) {
  int cap = 1024;
  la__tt_row_t *rows = malloc((size_t)cap * sizeof *rows);
  *out = rows;
  if (!rows) return -1;
  const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
  int n = 0, opened = 0;
  for (int f = 0; f < 2; f++) {
    FILE *fp = fopen(files[f], "r");
    if (!fp) continue;
    opened++;
    char line[512];
    if (!fgets(line, sizeof line, fp)) { /* the heading */
      fclose(fp);
      continue;
    }
    while (fgets(line, sizeof line, fp)) {
      if (n == cap) {
        la__tt_row_t *more = realloc(rows, 2 * (size_t)cap * sizeof *rows);
        if (!more) {
          fclose(fp);
          return -1; /* *out still owns the old rows */
        }
        *out = rows = more;
        cap *= 2;
      }
      char laddr[64], raddr[64];
      unsigned st;
      la__tt_row_t r;
      /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
      if (sscanf(line, "%*s %63s %63s %x %lx:%lx %*s %*s %*s %*s %lu", laddr,
                 raddr, &st, &r.tx, &r.rx, &r.ino) != 6)
        continue;
      char *lc = strrchr(laddr, ':'), *rc = strrchr(raddr, ':');
      if (!lc || !rc) continue;
      r.lport = (unsigned)strtoul(lc + 1, NULL, 16);
      r.rport = (unsigned)strtoul(rc + 1, NULL, 16);
      rows[n++] = r;
    }
    fclose(fp);
  }
  return opened ? n : -1;
}

/* 1 when nothing is in flight on pid's connections to port, 0 when
 * something is, -1 when /proc cannot be read. */
static int drained(pid_t pid, uint16_t port, int *found) {
  unsigned long ino[LA__TT_MAX];
  int ni = socket_inodes(pid, ino, LA__TT_MAX);
  if (ni < 0) return -1;
  la__tt_row_t *rows = NULL;
  int nr = read_rows(&rows), ok = 1, conns = 0;
  if (nr < 0) {
    free(rows);
    return -1;
  }
  for (int i = 0; i < nr; i++) {
    int ours = 0;
    for (int k = 0; k < ni && !ours; k++) ours = rows[i].ino == ino[k];
    if (!ours || rows[i].rport != port) continue;
    conns++;
    if (rows[i].tx != 0) ok = 0;
    /* the peer's end: local port = port, remote = ours */
    for (int j = 0; j < nr; j++)
      if (rows[j].lport == port && rows[j].rport == rows[i].lport &&
          rows[j].rx != 0)
        ok = 0;
  }
  free(rows);
  if (found) *found = conns;
  return ok;
}

int la_tt_wait_drained(pid_t pid, uint16_t port, int timeout_ms, int *n) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    int r = drained(pid, port, n);
    if (r < 0) return -1;
    if (r == 1) return 0;
    if (la_td_now_ms() >= end) return -1;
    la_td_nap_ms(10);
  }
}
