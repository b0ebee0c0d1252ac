/* SPDX-License-Identifier: BSD-3-Clause */
/* la_daemon_main.c: the steps of main() both daemons share (see
 * la_daemon_main.h): start-up up to the loop, the pid file and signals, the
 * loop, SIGHUP's re-read of the configuration, the end. It knows no
 * daemon's settings: their layout stays behind la_daemon_def_t. */
#include "la_daemon_main.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "la_daemon.h"
#include "la_log.h"
#include "la_notify.h"
#include "la_uvconn.h"

/* The process's one daemon: its definition, its arguments (for reloads)
 * and what the signal handlers call. */
static int la__argc;
static char **la__argv;
static const la_daemon_def_t *la__def;
static void *la__daemon;

/* --help: the usage lines, the description, the options and every key of
 * the settings (la_daemon_early_args's usage callback). */
static void la__usage(FILE *f) {
  const la_daemon_def_t *d = la__def;
  fprintf(f,
          "usage: %s [-c FILE] [--check-config] [--SECTION.KEY=VALUE ...]\n"
          "       %s --help | --version\n\n%s\n\n"
          "  -c, --config FILE   INI configuration file\n"
          "  --check-config      print the effective configuration and exit\n"
          "  --help, --version\n\nSettings (also INI keys "
          "'[section] key = value'):\n",
          d->name, d->name, d->about);
  la_cfg_help(d->keys, f);
}

/* Re-opens the log with set's [log] settings (checked by configure). */
static void la__log_open(const la_daemon_def_t *d, const void *set) {
  const char *target = (const char *)set + d->log_target_at;
  const char *level_name = (const char *)set + d->log_level_at;
  int level = LA_LOG_INFO;
  la_log_level_parse(level_name, &level);
  la_log_init(d->name, target, level);
}

/* Fills set from the key table, the file and the options, and checks it.
 * Returns 0, or -1 after printing every problem. */
static int la__configure(const la_daemon_def_t *d, int argc, char **argv,
                         void *set, char *config_path, size_t cp_len) {
  int bad = la_daemon_configure(d->name, d->keys, set, argc, argv, config_path,
                                cp_len) != 0;
  int level;
  if (la_daemon_log_settings(d->name, (const char *)set + d->log_target_at,
                             (const char *)set + d->log_level_at, &level))
    bad = 1;
  if (d->validate(set) != 0) bad = 1;
  return bad ? -1 : 0;
}

/* --check-config: the exit code, 0 with the configuration printed. */
static int la__check(const la_daemon_def_t *d, const void *set) {
  if (d->check(set) != 0) {
    fprintf(stderr, "%s: configuration has errors (above)\n", d->name);
    return 2;
  }
  la_daemon_print_config(d->name, d->keys, set);
  return 0;
}

int la_daemon_begin(const la_daemon_def_t *d, int argc, char **argv, void *set,
                    char *config_path, size_t cp_len) {
  la__argc = argc;
  la__argv = argv;
  la__def = d;
  int check,
      rc = la_daemon_early_args(argc, argv, d->version, la__usage, &check);
  if (rc >= 0) return rc;
  if (la__configure(d, argc, argv, set, config_path, cp_len) != 0) return 2;
  if (check) return la__check(d, set);
  la__log_open(d, set);
  signal(SIGPIPE, SIG_IGN);
  la_daemon_process_setup(); /* umask 077: private files */
  return -1;
}

static void la__on_signal(uv_signal_t *h, int signum) {
  if (signum == SIGHUP)
    la__def->reload(la__daemon);
  else
    la__def->stop(la__daemon);
}

/* The thread pool's start: a job that does nothing, queued once. */
static uv_work_t la__pool_start;
static void la__noop_work(uv_work_t *w) {
  (void)w;
}
static void la__noop_after(uv_work_t *w, int status) {
  (void)w, (void)status;
}

void la_daemon_signals(const la_daemon_def_t *d, void *daemon, uv_loop_t *loop,
                       uv_signal_t sigs[3]) {
  la__daemon = daemon;
  /* libuv makes every pool thread at the first job: made now, with all
   * signals blocked, they inherit that mask, and the kernel hands SIGTERM
   * and SIGHUP to the loop thread. A signal taken by a pool thread blocked
   * in its condition wait was seen to stall a sanitized daemon's stop. */
  sigset_t old;
  la_daemon_mask_signals(&old);
  int rc = uv_queue_work(loop, &la__pool_start, la__noop_work, la__noop_after);
  if (rc)
    la_log_warnx("thread pool not started (%s): a signal may reach it",
                 uv_strerror(rc));
  la_daemon_unmask_signals(&old);
  la_uv_signals(loop, sigs, la__on_signal, daemon);
}

void la_daemon_write_pid(const char *pid_file) {
  if (pid_file[0] && la_daemon_write_number(pid_file, (long)getpid()) != 0)
    la_log_warnx("cannot write pid_file %s: %s", pid_file,
                 la_daemon_write_strerror(errno));
}

void la_daemon_run(uv_loop_t *loop, const char *status) {
  la_notify_start(loop);
  la_notify_ready(status);
  uv_run(loop, UV_RUN_DEFAULT);
}

static void la__close_walk(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

void la_daemon_close_all(uv_loop_t *loop) {
  uv_walk(loop, la__close_walk, NULL);
}

int la_daemon_reload_begin(const la_daemon_def_t *d, void *n, char *path,
                           size_t path_len) {
  la_notify_reloading();
  if (la__configure(d, la__argc, la__argv, n, path, path_len) != 0) {
    la_log_warnx(
        "SIGHUP: configuration has errors (above); keeping the "
        "current one");
    la_notify_ready("configuration has errors: kept the current one");
    return -1;
  }
  la__log_open(d, n);
  return 0;
}

void la_daemon_reload_done(const char *path) {
  la_log_info("SIGHUP: configuration reloaded%s%s", path[0] ? " from " : "",
              path);
  la_notify_ready("configuration reloaded");
}

/* Whether path is a regular file (not a link, a device or a pipe) that
 * holds this process's pid: the pid file to remove at the end. Another
 * instance's pid file, or /dev/null given as one, is left alone (as root,
 * unlinking /dev/null removes the device). */
static int la__pid_file_ours(const char *path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  char buf[32];
  ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
                  ? read(fd, buf, sizeof buf - 1)
                  : -1;
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  char *end;
  long v = strtol(buf, &end, 10);
  return end != buf && *end == '\n' && v == (long)getpid();
}

void la_daemon_end(const char *pid_file) {
  if (pid_file[0] && la__pid_file_ours(pid_file)) unlink(pid_file);
  la_log_info("stopped");
}
