/* SPDX-License-Identifier: BSD-3-Clause */
/* errors.c: error strings, the last-error detail, and verbose reporting.
 *
 * libla prints nothing unless LA_VERBOSE is set; then each distinct message
 * goes to stderr once, prefixed with "la[rank N]:". Owns the last-error
 * buffer and the verbose flag; nothing else in libla writes to stderr.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "la_errors.h"
#include "la_internal.h"

static char la__last[512];
static int la__verbose;
static int la__rank = -1;
static uint32_t la__seen[32]; /* hashes of messages already printed */
static pthread_mutex_t la__mu = PTHREAD_MUTEX_INITIALIZER;

LA_EXPORT const char *LA_strerror(int code) {
  return la_strerror(code);
}

LA_EXPORT const char *LA_lastError(void) {
  return la__last;
}

void la__set_verbose(int verbose, int rank) {
  la__verbose = verbose;
  la__rank = rank;
}

static uint32_t la__hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h ? h : 1;
}

static void la__emit(const char *msg) {
  uint32_t h = la__hash(msg);
  for (size_t i = 0; i < sizeof la__seen / sizeof la__seen[0]; i++) {
    if (la__seen[i] == h) return;
    if (la__seen[i] == 0) {
      la__seen[i] = h;
      break;
    }
  }
  if (la__rank >= 0)
    fprintf(stderr, "la[rank %d]: %s\n", la__rank, msg);
  else
    fprintf(stderr, "la: %s\n", msg);
}

/* Records code and the detail as the last error, printed when verbose or
 * loud. */
static int la__record(int code, int loud, const char *fmt, va_list ap) {
  char detail[400];
  vsnprintf(detail, sizeof detail, fmt, ap);
  pthread_mutex_lock(&la__mu);
  snprintf(la__last, sizeof la__last, "%s: %s", LA_strerror(code), detail);
  if (la__verbose || loud) la__emit(la__last);
  pthread_mutex_unlock(&la__mu);
  return code;
}

int la__error(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  la__record(code, 0, fmt, ap);
  va_end(ap);
  return code;
}

int la__warn(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  la__record(code, 1, fmt, ap);
  va_end(ap);
  return code;
}

void la__info(const char *fmt, ...) {
  if (!la__verbose) return;
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&la__mu);
  la__emit(msg);
  pthread_mutex_unlock(&la__mu);
}
