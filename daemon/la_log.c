/* SPDX-License-Identifier: BSD-3-Clause */
/* la_log.c: leveled logging to stderr (with time stamps) or syslog.
 * Owns the logging target and level; thread-safe (one line per write). */
#include "la_log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "la_errcodes.h"

static char la__ident[64] = "la";
static int la__syslog;
static int la__level = LA_LOG_INFO;
static pthread_mutex_t la__mu = PTHREAD_MUTEX_INITIALIZER;
static const char *la__names[] = {"error", "warn", "info", "debug"};

int la_log_init(const char *ident, const char *target, int level) {
  snprintf(la__ident, sizeof la__ident, "%s", ident ? ident : "la");
  la__level = level;
  if (!target || !strcmp(target, "stderr")) {
    la__syslog = 0;
  } else if (!strcmp(target, "syslog")) {
    openlog(la__ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
    la__syslog = 1;
  } else {
    return LA_EINVAL;
  }
  return 0;
}

void la_log_set_level(int level) { la__level = level; }
int la_log_get_level(void) { return la__level; }

int la_log_level_parse(const char *s, int *level) {
  for (int i = 0; i < 4; i++)
    if (s && !strcasecmp(s, la__names[i])) {
      *level = i;
      return 0;
    }
  return LA_EINVAL;
}

const char *la_log_level_name(int level) {
  return level >= 0 && level < 4 ? la__names[level] : "?";
}

static void la__vlog(int level, int with_errno, const char *fmt, va_list ap) {
  if (level > la__level) return;
  int e = errno;
  char msg[1024];
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  if (n < 0) return;
  if (with_errno && (size_t)n < sizeof msg)
    snprintf(msg + n, sizeof msg - (size_t)n, ": %s", strerror(e));
  if (la__syslog) {
    static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
    syslog(prio[level], "%s", msg);
  } else {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    pthread_mutex_lock(&la__mu);
    fprintf(stderr, "%s.%03ld %s[%s]: %s\n", when, ts.tv_nsec / 1000000,
            la__ident, la__names[level], msg);
    pthread_mutex_unlock(&la__mu);
  }
  errno = e;
}

#define LA__LOGFN(name, level, with_errno) \
  void name(const char *fmt, ...) {        \
    va_list ap;                            \
    va_start(ap, fmt);                     \
    la__vlog(level, with_errno, fmt, ap);  \
    va_end(ap);                            \
  }
LA__LOGFN(la_log_error, LA_LOG_ERROR, 0)
LA__LOGFN(la_log_warn, LA_LOG_WARN, 1)
LA__LOGFN(la_log_warnx, LA_LOG_WARN, 0)
LA__LOGFN(la_log_info, LA_LOG_INFO, 0)
LA__LOGFN(la_log_debug, LA_LOG_DEBUG, 0)

void la_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  la__vlog(LA_LOG_ERROR, 0, fmt, ap);
  va_end(ap);
  abort();
}

int la_log_stdout_reaches_log(void) {
  struct stat out;
  if (fstat(STDOUT_FILENO, &out) != 0) return 0;
  if (!la__syslog) {
    struct stat err;
    return fstat(STDERR_FILENO, &err) == 0 && err.st_dev == out.st_dev &&
           err.st_ino == out.st_ino;
  }
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  return js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 &&
         dev == (unsigned long long)out.st_dev &&
         ino == (unsigned long long)out.st_ino;
}
