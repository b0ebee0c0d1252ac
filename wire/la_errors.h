/* SPDX-License-Identifier: BSD-3-Clause */
/* la_errors.h: the text of LA's error codes (the LA_ERRNO_MAP list of
 * la_errcodes.h), for every component: libla's LA_strerror, the daemons, lactl
 * and the client library all answer from this one list; and la_errorf, the
 * one way a function hands its caller the reason with its error code. */
#ifndef LA_ERRORS_H
#define LA_ERRORS_H

/* Text of an LA_E* code; "success" for 0, "unknown LA error code" else. */
const char *la_strerror(int code);

#include <stdarg.h>
#include <stddef.h>

/* Writes the formatted reason into why (n bytes, truncated, always
 * terminated; nothing when why is NULL or n is 0) and returns code, so a
 * failing function can end with: return la_errorf(why, n, LA_EPROTO, ...). */
int la_errorf(char *why, size_t n, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same with the arguments as a va_list (for a function that takes its
 * own "fmt, ..." and keeps the reason in its object); ap is used up. */
int la_verrorf(char *why, size_t n, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

#endif
