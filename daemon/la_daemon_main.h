/* SPDX-License-Identifier: BSD-3-Clause */
/* la_daemon_main.h: the steps of main() both daemons take the same way, in
 * their fixed order: options and configuration (--help, --version,
 * --check-config), logging and the process settings; the pid file and the
 * signals (SIGHUP reloads, SIGTERM/SIGINT stop); the loop with the service
 * manager told it is ready; SIGHUP's re-reading of the configuration and
 * its logging. What each daemon starts between these steps, and what a
 * reload or a stop does, stays in its own main.c, called back through
 * la_daemon_def_t. One daemon per process: the arguments are remembered
 * for reloads. */
#ifndef LA_DAEMON_MAIN_H
#define LA_DAEMON_MAIN_H

#include <stddef.h>
#include <stdio.h>
#include <uv.h>

#include "la_config.h"

/* What a daemon's main.c tells these steps. */
typedef struct la_daemon_def {
  const char *name;    /* "la-localagent": log ident and message prefix */
  const char *version; /* printed by --version */
  /* --help's description, between the usage lines and the options */
  const char *about;
  const la_cfg_key_t *keys; /* the settings' key table (la_config.h) */
  /* What the key table cannot check (addresses, ranges between keys), on a
   * set filled from it. Returns 0, or -1 after printing every problem. */
  int (*validate)(const void *set);
  /* --check-config beyond syntax (the files the set names, as the user who
   * runs it). Returns 0, or -1 after naming every problem. */
  int (*check)(const void *set);
  /* Where in the settings the [log] target and level names are (char
   * arrays, offsetof). */
  size_t log_target_at, log_level_at;
  /* SIGHUP and SIGTERM/SIGINT, on the loop thread; daemon is what
   * la_daemon_signals was given. */
  void (*reload)(void *daemon);
  void (*stop)(void *daemon);
} la_daemon_def_t;

/* Start-up up to the loop: --help/--version; the configuration into set
 * (la_daemon_configure: defaults, the -c file, the options; its path into
 * config_path), the [log] settings and d->validate, every problem printed;
 * --check-config (d->check, then the configuration printed); then logging,
 * SIGPIPE ignored and la_daemon_process_setup. Returns -1 when the daemon goes
 * on, else the exit code (0 after --help, --version or a good check, 2 for a
 * configuration with errors). */
int la_daemon_begin(const la_daemon_def_t *d, int argc, char **argv, void *set,
                    char *config_path, size_t cp_len);

/* Installs the signal handlers in sigs, which call d->reload or d->stop
 * with daemon once the loop runs. Before the daemon opens its ports and
 * writes its port files, so that a SIGTERM sent as soon as a port file
 * appears is a clean stop, not the default action. Starts libuv's thread
 * pool first, with every signal blocked in its threads: the daemon's
 * signals reach the loop thread only (threads the daemon makes itself
 * block them too). */
void la_daemon_signals(const la_daemon_def_t *d, void *daemon, uv_loop_t *loop,
                       uv_signal_t sigs[3]);

/* Writes the pid file (when pid_file is not ""; a failure is logged): once
 * the daemon serves. */
void la_daemon_write_pid(const char *pid_file);

/* Tells the service manager the daemon is ready (with status) and runs
 * loop until it ends. */
void la_daemon_run(uv_loop_t *loop, const char *status);

/* Closes every handle of loop not closing yet (the stop's last step: the
 * loop then ends). */
void la_daemon_close_all(uv_loop_t *loop);

/* SIGHUP, first half: tells the service manager, configures n from the
 * start's arguments (its path into path) and, when that succeeds, re-opens
 * the log with n's settings and returns 0. Returns -1 when n has errors:
 * logged, the service manager told, the current configuration kept. */
int la_daemon_reload_begin(const la_daemon_def_t *d, void *n, char *path,
                           size_t path_len);

/* SIGHUP, second half (once the daemon took n's values): logs the reload
 * and tells the service manager. */
void la_daemon_reload_done(const char *path);

/* The end: removes the pid file (when not "") and logs "stopped". */
void la_daemon_end(const char *pid_file);

#endif
