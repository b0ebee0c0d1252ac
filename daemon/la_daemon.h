/* SPDX-License-Identifier: BSD-3-Clause */
/* la_daemon.h: what both daemons do the same way before their loop starts:
 * command-line handling (-c FILE, --check-config, --SECTION.KEY=VALUE
 * overrides, reported all at once), the [log] settings, the pid and port
 * files (written without following links) and the umask. No
 * libuv: each daemon's main.c keeps its own start-up order. */
#ifndef LA_DAEMON_H
#define LA_DAEMON_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>

#include "la_config.h"

/* Looks for --help/-h and --version first: prints usage (through usage) or
 * version and returns 0 (the caller exits 0); otherwise returns -1 and sets
 * *check when --check-config was given. */
int la_daemon_early_args(int argc, char **argv, const char *version,
                         void (*usage)(FILE *), int *check);

/* --check-config: prints the effective configuration on stdout and
 * "NAME: configuration OK" on stderr. */
void la_daemon_print_config(const char *name, const la_cfg_key_t *keys,
                            const void *set);

/* Fills set from the key table's defaults, the INI file named by -c/--config
 * (stored in config_path, "" if none), then every --section.key=value.
 * Prints each problem to stderr prefixed with name. Returns 0 or -1. */
int la_daemon_configure(const char *name, const la_cfg_key_t *keys, void *set,
                        int argc, char **argv, char *config_path,
                        size_t cp_len);

/* Checks a [log] target ("stderr", "syslog") and level name; prints the
 * problem and returns -1, else sets *level and returns 0. */
int la_daemon_log_settings(const char *name, const char *target,
                           const char *level_name, int *level);

/* Whether s is "host:port" (port 1..65535) or, with allow_zero, "host:0". */
int la_daemon_addr_ok(const char *s, int allow_zero);

/* When path is a device or a pipe (/dev/null, a FIFO a script reads):
 * it opened for writing, not blocking (a descriptor, or -1 with errno);
 * LA_DAEMON_NOT_IN_PLACE when it is missing, a regular file or a link
 * (written beside and renamed over, as files are); -1 with EISDIR for a
 * directory. */
#define LA_DAEMON_NOT_IN_PLACE (-2)
int la_daemon_open_in_place(const char *path);

/* When path is a device or a pipe (/dev/null, a FIFO a script reads),
 * writes len bytes of buf into it (within 5 s; a pipe without a reader
 * fails) and returns 1: such a path is never replaced by a file (as root,
 * renaming a file over /dev/null would replace the device). Returns 0 when
 * path is missing, a regular file or a link (the caller writes it as it
 * does), -1 with errno set on a failure (EISDIR for a directory). */
int la_daemon_write_in_place(const char *path, const void *buf, size_t len);

/* Writes "value\n" to path atomically: a new temporary file beside it
 * (created exclusively, so no planted link is followed), mode 0644, then
 * renamed over path (a link at path is replaced, not followed); a device
 * or a pipe at path is written into instead (la_daemon_write_in_place).
 * Returns 0 or -1 (errno set). */
int la_daemon_write_number(const char *path, long value);

/* errno's text for a failure of la_daemon_write_number or
 * la_daemon_write_in_place, naming the two the kernel words as "No such
 * device or address" (ENXIO): a pipe without a reader, a socket file. */
const char *la_daemon_write_strerror(int err);

/* Creates the directory file goes into (mode 0700, its parent must exist)
 * unless it exists. Returns 0, or -1 with why: the directory, errno's text
 * and, when the directory above it is missing, what to do. */
int la_daemon_make_file_dir(const char *file, char *why, size_t len);

/* la_daemon_check_file_dir for a file whose directory the daemon makes
 * (la_daemon_make_file_dir): a missing directory passes when its parent
 * exists and is writable. */
int la_daemon_check_file_dir_made(const char *name, const char *key,
                                  const char *file);

/* --check-config's checks of the files a configuration names, made as the
 * user who runs it (run it as the daemon's user). Each prints every problem
 * to stderr as "NAME: KEY: ..." naming the file and what to do, and returns
 * 0 or -1.
 *
 * la_daemon_check_secret: path is a regular file, mode 0600 or 0400 (no
 * group or other bits), owned by this process's uid (or readable because it
 * runs as root), and a valid secret (la_auth_load_key: 16 to 65536 bytes).
 * la_daemon_check_dir: dir is a directory this process can write into, owned
 * by it when owned is set and not writable by group or others; or, with
 * create, missing but in a directory it can write into (the daemon creates
 * it at start).
 * la_daemon_check_file_dir: the directory file is written into exists and
 * this process can write into it. */
int la_daemon_check_secret(const char *name, const char *key, const char *path);
int la_daemon_check_dir(const char *name, const char *key, const char *dir,
                        int owned, int create);
int la_daemon_check_file_dir(const char *name, const char *key,
                             const char *file);

/* Process-wide settings of a daemon, called once at start before any file
 * is created: umask 077, so every file it creates (store, its -wal and -shm
 * files, spool) is private unless it says otherwise. */
void la_daemon_process_setup(void);

/* A daemon's signals are its loop thread's (libuv's handlers): a thread
 * started between la_daemon_mask_signals(&old) and
 * la_daemon_unmask_signals(&old), on the calling thread, inherits a mask
 * that blocks every signal, so the kernel never hands it one. Inline:
 * the store's checkpointer, in a library linked before this one, uses
 * them too. */
static inline void la_daemon_mask_signals(sigset_t *old) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, old);
}
static inline void la_daemon_unmask_signals(const sigset_t *old) {
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

#endif
