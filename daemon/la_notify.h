/* SPDX-License-Identifier: BSD-3-Clause */
/* la_notify.h: the daemons' side of systemd's service notification
 * (Type=notify): READY=1 once listening, STATUS= lines, RELOADING=1 around a
 * SIGHUP reload, STOPPING=1 when a shutdown starts, and WATCHDOG=1 from a
 * libuv timer at half of WATCHDOG_USEC when the unit sets WatchdogSec=.
 *
 * Uses libsystemd's sd_notify when built with HAVE_SYSTEMD (the Makefile
 * sets it when pkg-config finds libsystemd); otherwise every function here
 * does nothing. Outside systemd (no NOTIFY_SOCKET) every function is a
 * no-op too, so the daemons call them unconditionally. Not thread-safe:
 * call from the loop's thread.
 */
#ifndef LA_NOTIFY_H
#define LA_NOTIFY_H

#include <uv.h>

/* Starts the watchdog timer on loop when the service manager asks for
 * keep-alive pings (WATCHDOG_USEC, for this pid), unreferenced so it never
 * keeps the loop alive; a uv_walk that closes every handle closes it too.
 * Returns 0, or a negative libuv error if the timer cannot start. */
int la_notify_start(uv_loop_t *loop);

/* READY=1 with STATUS=status: the daemon is listening and serving. Also
 * ends a reload announced by la_notify_reloading. */
void la_notify_ready(const char *status);

/* STATUS=status alone (a line systemctl status shows). */
void la_notify_status(const char *status);

/* RELOADING=1: a configuration reload started; la_notify_ready ends it. */
void la_notify_reloading(void);

/* STOPPING=1 with STATUS=status: the daemon is shutting down. */
void la_notify_stopping(const char *status);

#endif /* LA_NOTIFY_H */
