/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_daemon.h: run a real LA daemon (la-localagent, la-globalagent)
 * as a child process of a test, the way an operator would, and look at what
 * a user would see: its log, its exit status, `lactl status`.
 *
 * A la_test_daemon_t owns a fresh temporary directory (mkdtemp under
 * $TMPDIR or /tmp) for the daemon's files (port file, spool, secrets, logs)
 * and at most one running child at a time; it can be started again in the
 * same directory (a restart on the same spool). The child runs in its own
 * process group with stdout and stderr appended to DIR/<name>.out and
 * DIR/<name>.log, so a test can grep every run's log lines. Every wait is
 * bounded; la_td_free() SIGTERMs, then SIGKILLs what still runs, reaps it
 * and removes the directory: a failing test leaves nothing behind.
 *
 * Binaries are found (la_td_find_bin) in $LA_TEST_BIN_DIR, else next to the
 * test program: dirname(/proc/self/exe)/../bin (build/tests -> build/bin,
 * build/asan/tests -> the sanitized build/asan/bin), and nowhere else: a
 * sanitized tree without its own daemons never falls back to the normal
 * ones (the run would silently test unsanitized daemons), nor an
 * LA_TEST_BIN_DIR without the binary to the tree's. Not thread-safe;
 * test use only. Nothing here knows a daemon's options: callers pass them.
 */
#ifndef LA_TEST_DAEMON_H
#define LA_TEST_DAEMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct la_test_daemon la_test_daemon_t;

/* Finds the executable name (e.g. "la-localagent", "lactl") as described
 * above; writes its path into path. Returns 0, or -1 when it is not found,
 * having printed to stderr where it looked and how to build it. A daemon or
 * lactl missing in a sanitized run (LA_TEST_BIN_DIR set, or a test program
 * built with ASan or TSan) ends the program with status 1 instead: the run
 * is broken, not a test to skip. */
int la_td_find_bin(const char *name, char *path, size_t len);

/* The source tree: the first directory above the test program
 * (dirname(/proc/self/exe), then up) holding the file rel (say
 * "python/pyproject.toml"), into dir. Returns 0, or -1 when none does. */
int la_td_find_src(const char *rel, char *dir, size_t len);

/* Creates a daemon object for the program name (found with la_td_find_bin)
 * and its temporary directory. Returns NULL when the program or the
 * directory is missing (a reason goes to stderr): the caller skips. */
la_test_daemon_t *la_td_new(const char *name);

/* The temporary directory, and path = DIR/rel written into buf (returns
 * buf). */
const char *la_td_dir(const la_test_daemon_t *d);
char *la_td_path(const la_test_daemon_t *d, const char *rel, char *buf,
                 size_t len);

/* A daemon's argument vector built option by option, each one formatted
 * into the vector's own storage (LA_TD_ARGV_MAX options of up to 700
 * bytes; a longer one is truncated, one past the maximum dropped). v is
 * NULL-terminated at every step: pass it to la_td_start. */
#define LA_TD_ARGV_MAX 48
typedef struct la_td_argv {
  const char *v[LA_TD_ARGV_MAX + 1];
  int n;
  char buf[LA_TD_ARGV_MAX][700];
} la_td_argv_t;
/* Empties a. */
void la_td_argv_init(la_td_argv_t *a);
/* Appends one option, printf-formatted. Returns 0, or -1 when a is full. */
int la_td_argv_add(la_td_argv_t *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends every option of more (NULL-terminated, may be NULL). Returns 0,
 * or -1 when a is full. */
int la_td_argv_extend(la_td_argv_t *a, const char *const *more);

/* Starts the program with args (NULL-terminated, after argv[0]) and, when
 * port_file is not NULL (a path), removes it first and waits up to
 * timeout_ms for the daemon to write a port number into it. Returns the
 * port (> 0), 0 when no port_file was given and the child started, or -1
 * (could not start, exited early, no port in time: the log tail goes to
 * stderr and the child is killed). */
int la_td_start(la_test_daemon_t *d, const char *const *args,
                const char *port_file, int timeout_ms);

pid_t la_td_pid(const la_test_daemon_t *d); /* 0 when not running */
/* Threads of process pid named name (/proc/PID/task/TID/comm, as top -H
 * and perf show them). */
int la_td_threads_named(pid_t pid, const char *name);
uint16_t la_td_port(const la_test_daemon_t *d);
const char *la_td_addr(const la_test_daemon_t *d); /* "127.0.0.1:PORT" */
/* The program's name, as given to la_td_new. */
const char *la_td_name(const la_test_daemon_t *d);

/* 1 while the child runs (not exited), else 0 (it is reaped). */
int la_td_alive(la_test_daemon_t *d);
/* Sends sig to the child. Returns 0 or -1. */
int la_td_signal(la_test_daemon_t *d, int sig);
/* Waits up to timeout_ms for the child to exit. Returns its status as a
 * shell shows it (exit code, or 128 + signal), or -1 on timeout (the child
 * keeps running). */
int la_td_wait_exit(la_test_daemon_t *d, int timeout_ms);
/* SIGTERM, wait up to timeout_ms, then SIGKILL the process group. Returns
 * the status as la_td_wait_exit, -2 when it had to be killed, -3 when
 * nothing ran. */
int la_td_stop(la_test_daemon_t *d, int timeout_ms);

/* Holds 127.0.0.1:port with a listening socket while a daemon that owned
 * it is down, so that no bind to port 0 (the next daemon's, another
 * test's) is given it before the daemon starts on it again; a connection
 * made meanwhile waits in the backlog and is reset by la_td_release_port.
 * Returns the socket, or -1 (the port not held: the caller carries on). */
int la_td_hold_port(uint16_t port);

/* Closes a socket of la_td_hold_port (if *fd >= 0) and sets *fd to -1. */
void la_td_release_port(int *fd);

/* The log (stderr of every run so far), NUL-terminated, malloc'ed. */
char *la_td_log(const la_test_daemon_t *d);
/* Remembers the current end of the log: la_td_log_has and la_td_wait_log
 * then only look at lines written after it. */
void la_td_log_mark(la_test_daemon_t *d);
/* Occurrences of needle after the mark. */
int la_td_log_count(const la_test_daemon_t *d, const char *needle);
int la_td_log_has(const la_test_daemon_t *d, const char *needle);
/* Waits up to timeout_ms until needle occurs after the mark: 0 or -1. */
int la_td_wait_log(la_test_daemon_t *d, const char *needle, int timeout_ms);
/* The first log line after the mark containing needle, into buf (""
 * when none). Returns 0 when found, else -1. */
int la_td_log_line(const la_test_daemon_t *d, const char *needle, char *buf,
                   size_t len);

/* Asks the daemon for its status with `lactl status --agent ADDR` (lactl
 * found like the daemon) and copies the value of row key into val.
 * Returns 0, or -1 (lactl failed, no such row). */
int la_td_status(la_test_daemon_t *d, const char *key, char *val, size_t len);
/* The row as an integer, or -1 when it cannot be read. */
long long la_td_status_ll(la_test_daemon_t *d, const char *key);
/* Waits up to timeout_ms until row key, as an integer, is >= min. Returns
 * 0, or -1 on timeout. */
int la_td_wait_status(la_test_daemon_t *d, const char *key, long long min,
                      int timeout_ms);

/* Waits up to timeout_ms until row key, as an integer, is between 0 and
 * max (a queue drained). Returns 0, or -1 on timeout. */
int la_td_wait_status_at_most(la_test_daemon_t *d, const char *key,
                              long long max, int timeout_ms);

/* Runs argv (argv[0] a path or a name on PATH) to completion in its own
 * process group with env_add ("NAME=value", NULL-terminated, may be NULL)
 * added to the environment, stdout and stderr together into out (truncated
 * to len - 1 bytes). Kills the group after timeout_ms. Returns the status
 * as la_td_wait_exit, or -1 (could not start, killed at the time limit). */
int la_td_run(const char *const *argv, const char *const *env_add,
              int timeout_ms, char *out, size_t len);

/* Stops the child (la_td_stop, 5 s), checks its log for a sanitizer
 * report (la_td_sanitizer_report) and removes the directory. NULL is
 * ignored. A report is printed to stderr, copied to $LA_TEST_REPORT_DIR
 * when that is set, and makes the test program exit with status 1 when it
 * would otherwise have exited 0: a sanitized daemon's memory error, leak,
 * undefined behaviour or data race fails the test that ran it. */
void la_td_free(la_test_daemon_t *d);

/* Whether the daemon's log (every run so far, not only after the mark)
 * holds an AddressSanitizer, LeakSanitizer, UndefinedBehaviorSanitizer or
 * ThreadSanitizer report. Copies the line of the first one into buf (""
 * when none; buf may be NULL). Returns 1 or 0. */
int la_td_sanitizer_report(const la_test_daemon_t *d, char *buf, size_t len);

/* Number of daemons found with a sanitizer report by la_td_free so far in
 * this process. */
int la_td_sanitizer_reports(void);

/* Monotonic milliseconds. */
long long la_td_now_ms(void);
/* Unsets every variable libla and its examples read (LA_AGENT, LA_PERIOD,
 * LA_GLOBAL, ...; not the LA_TEST_* ones), so that the caller's shell does
 * not steer a test. */
void la_td_unset_la_env(void);
/* A daemon test program's group set-up: la_td_unset_la_env, SIGPIPE
 * ignored, la_auth initialised. Returns 0 or -1. */
int la_td_prepare(void);
/* la_td_prepare as a cmocka group set-up (state unused). */
int la_td_group_setup(void **state);
/* Sleeps ms milliseconds (restarted after a signal). For polls with a
 * deadline only: tests wait on events, not on time. */
void la_td_nap_ms(int ms);
/* A wait's ceiling on a loaded machine: ms times the load per CPU (the
 * 1-minute load average over the online CPUs) when that exceeds 1, at most
 * LA_TD_LOAD_SCALE_MAX times ms. A daemon slowed by other work (or by a
 * sanitizer on a busy machine) is then not taken for a broken one, while a
 * hang on a quiet machine still fails after ms. */
#define LA_TD_LOAD_SCALE_MAX 10
int la_td_loaded_ms(int ms);
/* Polls done(arg) every 20 ms until it returns non-zero, for at most
 * timeout_ms (done is called once more at the deadline). Returns 0, or -1
 * when it never became true. */
int la_td_wait_until(int (*done)(void *arg), void *arg, int timeout_ms);
/* la_td_wait_until for work whose wall time a busy machine stretches far
 * more than its CPU time (a sanitized daemon compacting, storing, sending):
 * the wait goes on while any of the n daemons ds (not running ones are
 * skipped) keeps using CPU, and gives up when none used any for idle_ms,
 * or after max_ms in all. Returns 0, or -1 when done never became true.
 * *cpu (may be NULL) gets the CPU seconds they used while waiting, *idle
 * (may be NULL) the longest stretch in ms in which they used none. */
int la_td_wait_working(int (*done)(void *arg), void *arg,
                       la_test_daemon_t *const *ds, int n, int idle_ms,
                       int max_ms, double *cpu, long long *idle);
/* Waits up to timeout_ms until path holds a port number (1..65535), as a
 * daemon's port_file option writes it. Returns the port, or -1. */
int la_td_read_port(const char *path, int timeout_ms);
/* Prints the last max bytes of the daemon's log to stdout, between
 * "---- NAME log (tail) ----" and "----" (not cmocka's print_message: it
 * truncates long messages). NULL is ignored. */
void la_td_print_log_tail(const la_test_daemon_t *d, size_t max);

/* For cmocka programs: fails the test unless cond holds, after printing the
 * message (printf-style arguments) and running dump (an expression: the
 * logs worth seeing, or (void)0). A test file defines its CHECK with it. */
#define LA_TD_CHECK(dump, cond, ...) \
  do {                               \
    if (!(cond)) {                   \
      print_message(__VA_ARGS__);    \
      print_message("\n");           \
      dump;                          \
      fail_msg("%s", #cond);         \
    }                                \
  } while (0)

/* Waits up to timeout_ms for the peer (a daemon) to close the connection
 * fd, reading and discarding whatever arrives before. Returns 0 for an
 * orderly close (recv returned 0), 1 for a reset or another error, -1 when
 * it stayed open. */
int la_td_wait_closed(int fd, int timeout_ms);

/* A TCP port on 127.0.0.1 where nobody listens (bound, then released), or
 * -1. */
int la_td_closed_port(void);
/* The first executable name (e.g. "mpiexec") on $PATH, into path. Returns
 * 0, or -1 when there is none. */
int la_td_find_on_path(const char *name, char *path, size_t len);

/* CPU seconds (user + system, /proc/PID/stat) process pid has used so far,
 * or -1. For benchmarks measuring a daemon. */
double la_td_cpu_seconds(pid_t pid);

/* VmRSS or VmHWM ("VmRSS", "VmHWM": a field of /proc/PID/status) of pid
 * in kB, -1 if unreadable. */
long la_td_vm_kb(pid_t pid, const char *field);

/* Whether pid runs under a sanitizer (libasan or libtsan mapped): its
 * allocator keeps freed memory in quarantine and adds shadow memory, so
 * memory bounds in kB do not apply to it. */
int la_td_sanitized(pid_t pid);
/* The same of process pid's main thread alone (a daemon's event loop). */
double la_td_main_thread_cpu_seconds(pid_t pid);

#endif /* LA_TEST_DAEMON_H */
