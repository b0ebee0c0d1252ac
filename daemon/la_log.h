/* SPDX-License-Identifier: BSD-3-Clause */
/* la_log.h: the daemons' and tools' logging, to stderr or syslog, by level.
 *
 * la_log_warn() appends the text of errno; la_log_warnx() does not.
 * la_fatal() is for broken internal invariants only, never for input.
 * libla does not use this (it stays silent unless LA_VERBOSE; see errors.c).
 */
#ifndef LA_LOG_H
#define LA_LOG_H

enum { LA_LOG_ERROR = 0, LA_LOG_WARN = 1, LA_LOG_INFO = 2, LA_LOG_DEBUG = 3 };

/* ident names the program in every line; target is "stderr" or "syslog".
 * Returns 0 or LA_EINVAL for an unknown target. */
int la_log_init(const char *ident, const char *target, int level);
void la_log_set_level(int level);
int la_log_get_level(void);
/* "error", "warn", "info", "debug" -> LA_LOG_*; returns 0 or LA_EINVAL. */
int la_log_level_parse(const char *s, int *level);
const char *la_log_level_name(int level);

/* 1 when a line written to stdout already reaches where log lines go
 * (target stderr and stdout the same file as stderr, or target syslog and
 * stdout systemd's journal stream, $JOURNAL_STREAM): a daemon that prints
 * a line on stdout for scripts then logs nothing more, so the line is
 * not there twice. 0 otherwise. */
int la_log_stdout_reaches_log(void);

void la_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void la_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void la_log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void la_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void la_log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void la_fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif /* LA_LOG_H */
