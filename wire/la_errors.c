/* SPDX-License-Identifier: BSD-3-Clause */
/* la_errors.c: la_strerror, generated from LA_ERRNO_MAP (la_errcodes.h),
 * and la_errorf. */
#include "la_errors.h"

#include <stdarg.h>
#include <stdio.h>

#include "la_errcodes.h"

const char *la_strerror(int code) {
  switch (code) {
    case 0:
      return "success";
#define LA__ERR_CASE(name, val, msg) \
  case val:                          \
    return msg;
      LA_ERRNO_MAP(LA__ERR_CASE)
#undef LA__ERR_CASE
    default:
      return "unknown LA error code";
  }
}

int la_verrorf(char *why, size_t n, int code, const char *fmt, va_list ap) {
  if (why && n) vsnprintf(why, n, fmt, ap);
  return code;
}

int la_errorf(char *why, size_t n, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  la_verrorf(why, n, code, fmt, ap);
  va_end(ap);
  return code;
}
