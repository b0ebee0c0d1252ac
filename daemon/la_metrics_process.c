/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics_process.c: process_* metrics from /proc/self (see
 * la_metrics_process.h): stat (CPU time, start time, virtual and resident
 * size), fd/ (open descriptors), limits (their maximum), and the boot time
 * from /proc/stat to make the start time absolute. */
#include "la_metrics_process.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "la_status.h"

/* The fields of /proc/self/stat after the command name: utime (14),
 * stime (15), starttime (22), vsize (23), rss (24). Returns 0 or -1. */
static int la__stat(double *cpu_ticks, double *start_ticks, double *vsize,
                    double *rss_pages) {
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return -1;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
  if (!p) return -1;
  unsigned long long ut, st, start, vs;
  long long rss;
  /* after ") ": state (3), then fields 4..24 */
  if (sscanf(p + 2,
             "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d "
             "%*d %*d %*d %*d %llu %llu %lld",
             &ut, &st, &start, &vs, &rss) != 5)
    return -1;
  *cpu_ticks = (double)ut + (double)st;
  *start_ticks = (double)start;
  *vsize = (double)vs;
  *rss_pages = (double)rss;
  return 0;
}

/* The number after the first line of path that starts with prefix, or -1
 * (no such line, or not a number: "unlimited"). */
static double la__proc_number(const char *path, const char *prefix) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[256];
  size_t len = strlen(prefix);
  double v = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long long u;
    if (!strncmp(line, prefix, len)) {
      if (sscanf(line + len, "%llu", &u) == 1) v = (double)u;
      break;
    }
  }
  fclose(f);
  return v;
}

/* Open descriptors (entries of /proc/self/fd, less the one reading it),
 * or -1. */
static double la__open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  double n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1;
}

static void la__one(FILE *f, const char *name, const char *type,
                    const char *help, double v) {
  if (v < 0) return;
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s ", name, help, name, type, name);
  la_status_number(f, v);
  fputc('\n', f);
}

int la_metrics_process(FILE *f) {
  double cpu, start, vsize, rss;
  double hz = (double)sysconf(_SC_CLK_TCK);
  double page = (double)sysconf(_SC_PAGESIZE);
  if (hz > 0 && page > 0 && la__stat(&cpu, &start, &vsize, &rss) == 0) {
    la__one(f, "process_cpu_seconds_total", "counter",
            "Total user and system CPU time spent in seconds.", cpu / hz);
    la__one(f, "process_resident_memory_bytes", "gauge",
            "Resident memory size in bytes.", rss * page);
    la__one(f, "process_virtual_memory_bytes", "gauge",
            "Virtual memory size in bytes.", vsize);
    double bt = la__proc_number("/proc/stat", "btime "); /* boot, epoch s */
    if (bt >= 0)
      la__one(f, "process_start_time_seconds", "gauge",
              "Start time of the process since unix epoch in seconds.",
              bt + start / hz);
  }
  la__one(f, "process_open_fds", "gauge", "Number of open file descriptors.",
          la__open_fds());
  la__one(f, "process_max_fds", "gauge",
          "Maximum number of open file descriptors.",
          la__proc_number("/proc/self/limits", "Max open files"));
  return ferror(f) ? LA_EIO : 0;
}
