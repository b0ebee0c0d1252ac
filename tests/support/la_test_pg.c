/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_pg.c: a throw-away PostgreSQL server for tests (see
 * la_test_pg.h): initdb and postgres run as the "postgres" user when the
 * test is root, in a private mkdtemp directory, on a Unix socket only.
 */
#include "la_test_pg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LA__PG_MAX 4

struct la_test_pg {
  char dir[128];
  char bin[256];
  pid_t pid;
  int flags; /* la_test_pg_start's, for la_test_pg_resume */
  uid_t uid;
  gid_t gid;
};

static la_test_pg_t *la__pg_live[LA__PG_MAX];
static int la__pg_atexit;

static const char *la__pg_bindir(char *buf, size_t n) {
  const char *e = getenv("LA_TEST_PG_BIN");
  if (e && *e) {
    snprintf(buf, n, "%s", e);
    return buf;
  }
  static const char *const vers[] = {"17", "16", "15", "14", "13"};
  for (size_t i = 0; i < sizeof vers / sizeof *vers; i++) {
    snprintf(buf, n, "/usr/lib/postgresql/%s/bin", vers[i]);
    char p[300];
    snprintf(p, sizeof p, "%s/postgres", buf);
    if (access(p, X_OK) == 0) return buf;
  }
  return NULL;
}

/* Calls fn(path, arg) on everything below path, children before their
 * directory, then on path itself (symbolic links not followed). */
static void la__walk(const char *path, void (*fn)(const char *, void *),
                     void *arg) {
  struct stat sb;
  if (lstat(path, &sb) != 0) return;
  DIR *d = S_ISDIR(sb.st_mode) ? opendir(path) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    la__walk(sub, fn, arg);
  }
  if (d) closedir(d);
  fn(path, arg);
}

static void la__rm_one(const char *path, void *arg) {
  if (remove(path) != 0 && rmdir(path) != 0) return;
}

static void la__chown_one(const char *path, void *arg) {
  const la_test_pg_t *pg = arg;
  if (lchown(path, pg->uid, pg->gid) != 0) return;
}

/* Forks argv as the server's user, output to log; with wait set, waits
 * for it and returns its exit status (-1: not run); else returns its pid. */
static pid_t la__pg_spawn(la_test_pg_t *pg, const char *const *argv,
                          const char *log, int wait) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int nul = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (nul >= 0) dup2(nul, 0);
    for (int i = 3; i < 1024; i++) close(i);
    setsid();
    if (getuid() == 0) {
      if (setgroups(0, NULL) || setgid(pg->gid) || setuid(pg->uid)) _exit(126);
    }
    prctl(PR_SET_PDEATHSIG, SIGQUIT);
    if (getppid() == 1) _exit(125);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  if (!wait) return pid;
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The SysV segment the server of pg registered in its postmaster.pid (line
 * 7: key and id), or -1. */
static int la__pg_shmid(const la_test_pg_t *pg) {
  char path[200], line[128];
  snprintf(path, sizeof path, "%s/data/postmaster.pid", pg->dir);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long key = 0, id = -1;
  for (int i = 1; fgets(line, sizeof line, f); i++)
    if (i == 7 && sscanf(line, "%ld %ld", &key, &id) != 2) id = -1;
  fclose(f);
  return id >= 0 && id <= 0x7fffffff ? (int)id : -1;
}

static void la__pg_reap(la_test_pg_t *pg, int sig, int timeout_ms) {
  if (pg->pid <= 0) return;
  int shmid = la__pg_shmid(pg);
  kill(pg->pid, sig);
  for (int t = 0; t < timeout_ms; t += 20) {
    if (waitpid(pg->pid, NULL, WNOHANG) == pg->pid) {
      pg->pid = 0;
      return;
    }
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
  }
  kill(pg->pid, SIGKILL);
  waitpid(pg->pid, NULL, 0);
  pg->pid = 0;
  /* killed, the server could not remove its SysV segment: this test's own
   * (named by its pid file), removed once nothing is attached */
  struct shmid_ds ds;
  if (shmid >= 0 && shmctl(shmid, IPC_STAT, &ds) == 0 && ds.shm_nattch == 0)
    shmctl(shmid, IPC_RMID, NULL);
}

void la_test_pg_stop(la_test_pg_t *pg) {
  if (!pg) return;
  la__pg_reap(pg, SIGINT, 30000); /* fast shutdown */
  la__walk(pg->dir, la__rm_one, NULL);
  for (int i = 0; i < LA__PG_MAX; i++)
    if (la__pg_live[i] == pg) la__pg_live[i] = NULL;
  free(pg);
}

static void la__pg_exit(void) {
  for (int i = 0; i < LA__PG_MAX; i++)
    if (la__pg_live[i]) la_test_pg_stop(la__pg_live[i]);
}

/* The tail of file path into buf (n bytes). */
static void la__tail(const char *path, char *buf, size_t n) {
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  long from = sz > (long)n - 1 ? sz - (long)n + 1 : 0;
  fseek(f, from, SEEK_SET);
  size_t k = fread(buf, 1, n - 1, f);
  buf[k] = 0;
  fclose(f);
}

/* Starts the server of pg on its data directory and waits until it
 * accepts connections: 0, or -1 with the reason (the log's tail) in why. */
static int la__pg_serve(la_test_pg_t *pg, char *why, size_t n) {
  char exe[300], data[200], log[200], tail[1500];
  snprintf(data, sizeof data, "%s/data", pg->dir);
  snprintf(log, sizeof log, "%s/log", pg->dir);
  snprintf(exe, sizeof exe, "%s/postgres", pg->bin);
  const char *fsync = pg->flags & LA_TEST_PG_FSYNC ? "fsync=on" : "fsync=off";
  char sock[200];
  snprintf(sock, sizeof sock, "unix_socket_directories=%s", pg->dir);
  const char *srv[] = {exe,
                       "-D",
                       data,
                       "-c",
                       "listen_addresses=",
                       "-c",
                       sock,
                       "-c",
                       fsync,
                       "-c",
                       "max_connections=60",
                       "-c",
                       "shared_buffers=64MB",
                       NULL};
  pg->pid = la__pg_spawn(pg, srv, log, 0);
  if (pg->pid < 0) {
    pg->pid = 0;
    snprintf(why, n, "fork: %s", strerror(errno));
    return -1;
  }
  char url[300];
  snprintf(url, sizeof url, "host=%s dbname=postgres user=postgres", pg->dir);
  for (int t = 0; t < 30000; t += 50) {
    if (PQping(url) == PQPING_OK) return 0;
    if (waitpid(pg->pid, NULL, WNOHANG) == pg->pid) {
      pg->pid = 0;
      break;
    }
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
  }
  la__tail(log, tail, sizeof tail);
  snprintf(why, n, "the PostgreSQL server did not start: %s", tail);
  return -1;
}

const char *la_test_pg_dir(const la_test_pg_t *pg) {
  return pg->dir;
}

int la_test_pg_start(int flags, la_test_pg_t **out, char *why, size_t n) {
  *out = NULL;
  char bindir[256];
  if (!la__pg_bindir(bindir, sizeof bindir)) {
    snprintf(why, n, "no PostgreSQL server binaries");
    return 1;
  }
  la_test_pg_t *pg = calloc(1, sizeof *pg);
  if (!pg) return -1;
  snprintf(pg->bin, sizeof pg->bin, "%s", bindir);
  pg->flags = flags;
  snprintf(pg->dir, sizeof pg->dir, "/tmp/la-pg-XXXXXX");
  if (!mkdtemp(pg->dir)) {
    snprintf(why, n, "mkdtemp: %s", strerror(errno));
    free(pg);
    return -1;
  }
  pg->uid = getuid();
  pg->gid = getgid();
  if (getuid() == 0) {
    struct passwd *pw = getpwnam("postgres");
    if (!pw) {
      snprintf(why, n, "running as root and there is no 'postgres' user");
      la_test_pg_stop(pg);
      return -1;
    }
    pg->uid = pw->pw_uid;
    pg->gid = pw->pw_gid;
    la__walk(pg->dir, la__chown_one, pg);
  }
  if (!la__pg_atexit) {
    atexit(la__pg_exit);
    la__pg_atexit = 1;
  }
  for (int i = 0; i < LA__PG_MAX; i++)
    if (!la__pg_live[i]) {
      la__pg_live[i] = pg;
      break;
    }
  char exe[300], data[200], log[200], tail[1500];
  snprintf(data, sizeof data, "%s/data", pg->dir);
  snprintf(log, sizeof log, "%s/log", pg->dir);
  snprintf(exe, sizeof exe, "%s/initdb", pg->bin);
  const char *init[] = {
      exe,     "-D", data,   "-U",        "postgres",          "-A",
      "trust", "-E", "UTF8", "--no-sync", "--no-instructions", NULL};
  if (la__pg_spawn(pg, init, log, 1) != 0) {
    la__tail(log, tail, sizeof tail);
    snprintf(why, n, "initdb failed: %s", tail);
    la_test_pg_stop(pg);
    return -1;
  }
  if (la__pg_serve(pg, why, n) != 0) {
    la_test_pg_stop(pg);
    return -1;
  }
  *out = pg;
  return 0;
}

int la_test_pg_halt(la_test_pg_t *pg) {
  if (!pg || pg->pid <= 0) return -1;
  la__pg_reap(pg, SIGINT, 30000); /* fast shutdown */
  return 0;
}

int la_test_pg_resume(la_test_pg_t *pg, char *why, size_t n) {
  if (!pg || pg->pid > 0) {
    snprintf(why, n, "the server is running");
    return -1;
  }
  return la__pg_serve(pg, why, n);
}

static void la__pg_quiet(void *arg, const char *msg) {}

int la_test_pg_exec(const char *url, const char *sql, char *why, size_t n) {
  PGconn *c = PQconnectdb(url);
  int r = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    PQsetNoticeProcessor(c, la__pg_quiet, NULL);
    PGresult *res = PQexec(c, sql);
    ExecStatusType s = PQresultStatus(res);
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)
      r = 0;
    else
      snprintf(why, n, "%s: %s", sql, PQresultErrorMessage(res));
    PQclear(res);
  } else {
    snprintf(why, n, "%s", PQerrorMessage(c));
  }
  PQfinish(c);
  return r;
}

int la_test_pg_createdb(la_test_pg_t *pg, const char *name, char *url,
                        size_t url_len, char *why, size_t n) {
  char admin[300], sql[200];
  snprintf(admin, sizeof admin, "host=%s dbname=postgres user=postgres",
           pg->dir);
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", name);
  if (la_test_pg_exec(admin, sql, why, n)) return -1;
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
  if (la_test_pg_exec(admin, sql, why, n)) return -1;
  snprintf(url, url_len, "host=%s dbname=%s user=postgres", pg->dir, name);
  return 0;
}

long long la_test_pg_value(const char *url, const char *sql) {
  PGconn *c = PQconnectdb(url);
  long long v = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult *res = PQexec(c, sql);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0 &&
        !PQgetisnull(res, 0, 0))
      v = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
  }
  PQfinish(c);
  return v;
}

long long la_test_pg_vvalue(const char *url, const char *fmt, va_list ap) {
  char sql[4096];
  vsnprintf(sql, sizeof sql, fmt, ap);
  return la_test_pg_value(url, sql);
}

long long la_test_pg_valuef(const char *url, const char *fmt, ...) {
  char sql[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(sql, sizeof sql, fmt, ap);
  va_end(ap);
  return la_test_pg_value(url, sql);
}
