/* SPDX-License-Identifier: BSD-3-Clause */
/* la_notify.c: systemd service notification through libsystemd's
 * sd_notify (see la_notify.h); compiled to no-ops without HAVE_SYSTEMD. */
#include "la_notify.h"

#include <stdio.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

static uv_timer_t la__watchdog; /* the process's one keep-alive timer */

static void la__on_watchdog(uv_timer_t *t) {
  (void)t;
  sd_notify(0, "WATCHDOG=1");
}

int la_notify_start(uv_loop_t *loop) {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return 0;
  uint64_t ms = usec / 2000; /* half the watchdog interval */
  if (ms == 0) ms = 1;
  int rc = uv_timer_init(loop, &la__watchdog);
  if (rc == 0) rc = uv_timer_start(&la__watchdog, la__on_watchdog, ms, ms);
  if (rc == 0) uv_unref((uv_handle_t *)&la__watchdog);
  sd_notify(0, "WATCHDOG=1");
  return rc;
}

static void la__send(const char *what, const char *status) {
  if (!status) {
    sd_notify(0, what);
    return;
  }
  char msg[600];
  snprintf(msg, sizeof msg, "%s%sSTATUS=%s", what, what[0] ? "\n" : "", status);
  sd_notify(0, msg);
}
#else
int la_notify_start(uv_loop_t *loop) {
  (void)loop;
  return 0;
}

static void la__send(const char *what, const char *status) {
  (void)what;
  (void)status;
}
#endif

void la_notify_ready(const char *status) {
  la__send("READY=1", status);
}

void la_notify_status(const char *status) {
  la__send("", status);
}

void la_notify_reloading(void) {
  la__send("RELOADING=1", NULL);
}

void la_notify_stopping(const char *status) {
  la__send("STOPPING=1", status);
}
