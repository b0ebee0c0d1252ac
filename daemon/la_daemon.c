/* SPDX-License-Identifier: BSD-3-Clause */
/* la_daemon.c: shared command-line and file chores of the daemons (see
 * la_daemon.h). */
#include "la_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "la_auth.h"
#include "la_log.h"
#include "la_sockio.h"

int la_daemon_configure(const char *name, const la_cfg_key_t *keys, void *set,
                        int argc, char **argv, char *config_path,
                        size_t cp_len) {
  char err[4096] = "";
  if (la_cfg_defaults(keys, set, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", name, err);
    return -1;
  }
  config_path[0] = '\0';
  for (int i = 1; i < argc; i++)
    if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) &&
        i + 1 < argc)
      snprintf(config_path, cp_len, "%s", argv[++i]);
    else if (!strncmp(argv[i], "--config=", 9))
      snprintf(config_path, cp_len, "%s", argv[i] + 9);
  int bad = 0;
  if (config_path[0] &&
      la_cfg_load(keys, set, config_path, err, sizeof err) != 0) {
    fprintf(stderr, "%s", err);
    bad = 1;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-c") || !strcmp(a, "--config")) {
      i++;
      continue;
    }
    if (!strncmp(a, "--config=", 9) || !strcmp(a, "--check-config")) continue;
    const char *eq = strchr(a, '=');
    if (strncmp(a, "--", 2) || !eq) {
      fprintf(stderr, "%s: unknown argument '%s' (see --help)\n", name, a);
      bad = 1;
      continue;
    }
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(eq - a - 2), a + 2);
    if (la_cfg_set(keys, set, key, eq + 1, err, sizeof err) != 0) {
      fprintf(stderr, "%s: %s\n", name, err);
      bad = 1;
    }
  }
  return bad ? -1 : 0;
}

int la_daemon_log_settings(const char *name, const char *target,
                           const char *level_name, int *level) {
  int bad = 0;
  if (la_log_level_parse(level_name, level) != 0) {
    fprintf(stderr, "%s: log.level '%s': use error, warn, info or debug\n",
            name, level_name);
    bad = 1;
  }
  if (strcmp(target, "stderr") && strcmp(target, "syslog")) {
    fprintf(stderr, "%s: log.target '%s': use stderr or syslog\n", name,
            target);
    bad = 1;
  }
  return bad ? -1 : 0;
}

int la_daemon_addr_ok(const char *s, int allow_zero) {
  char h[200];
  uint16_t port;
  size_t n = strlen(s);
  if (allow_zero && n > 2 && !strcmp(s + n - 2, ":0")) return 1;
  return la_hostport_parse(s, h, sizeof h, &port) == 0;
}

int la_daemon_open_in_place(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
    return LA_DAEMON_NOT_IN_PLACE;
  if (S_ISDIR(st.st_mode)) {
    errno = EISDIR;
    return -1;
  }
  /* a device or a pipe: written, never replaced (a pipe without a reader
   * fails at once: ENXIO) */
  return open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
}

int la_daemon_write_in_place(const char *path, const void *buf, size_t len) {
  int fd = la_daemon_open_in_place(path);
  if (fd == LA_DAEMON_NOT_IN_PLACE) return 0;
  if (fd < 0) return -1;
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      int pr;
      while ((pr = poll(&pfd, 1, 5000)) < 0 && errno == EINTR) {
      }
      if (pr == 1) continue;
      if (pr == 0) errno = ETIMEDOUT;
    }
    if (w <= 0) {
      int saved = w < 0 ? errno : ENOSPC;
      close(fd);
      errno = saved;
      return -1;
    }
    p += w;
    len -= (size_t)w;
  }
  return close(fd) == 0 || errno == EINTR ? 1 : -1;
}

const char *la_daemon_write_strerror(int err) {
  if (err == ENXIO)
    return "a pipe without a reader, or a socket: nothing to write into "
           "(give a regular file, or start the pipe's reader first)";
  if (err == ETIMEDOUT) return "the pipe's reader took nothing for 5 s";
  return strerror(err);
}

int la_daemon_write_number(const char *path, long value) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%ld\n", value);
  int in_place = la_daemon_write_in_place(path, buf, (size_t)n);
  if (in_place != 0) return in_place > 0 ? 0 : -1;
  /* A fresh temporary name (mkstemp: O_CREAT|O_EXCL, mode 0600), so a link
   * planted beside path is never followed; rename replaces path itself,
   * never what a link there points to. */
  char tmp[1024];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  int ok = 0;
  if (fchmod(fd, 0644) == 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    ok = w == n;
    if (w >= 0 && !ok) errno = ENOSPC; /* a short write sets no errno */
  }
  int saved = errno;
  if (close(fd) != 0 && ok) ok = 0, saved = errno;
  if (ok && rename(tmp, path) != 0) ok = 0, saved = errno;
  if (!ok) {
    unlink(tmp);
    errno = saved; /* the caller's message names the first failure */
    return -1;
  }
  return 0;
}

void la_daemon_process_setup(void) {
  umask(077);
}

int la_daemon_early_args(int argc, char **argv, const char *version,
                         void (*usage)(FILE *), int *check) {
  *check = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--version")) {
      printf("%s\n", version);
      return 0;
    }
    if (!strcmp(argv[i], "--check-config")) *check = 1;
  }
  return -1;
}

void la_daemon_print_config(const char *name, const la_cfg_key_t *keys,
                            const void *set) {
  la_cfg_print(keys, set, stdout);
  fprintf(stderr, "%s: configuration OK\n", name);
}

int la_daemon_check_secret(const char *name, const char *key,
                           const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    int e = errno;
    fprintf(stderr, "%s: %s: secret file %s: %s%s%s%s\n", name, key, path,
            strerror(e), e == ENOENT ? " (create one with: lactl secret " : "",
            e == ENOENT ? path : "", e == ENOENT ? ")" : "");
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    fprintf(stderr, "%s: %s: secret file %s is not a regular file\n", name, key,
            path);
    return -1;
  }
  if (st.st_mode & 077) {
    fprintf(stderr,
            "%s: %s: secret file %s has mode %04o: it must be 0600 or 0400, "
            "with no access for group or others (run: chmod 600 %s)\n",
            name, key, path, (unsigned)(st.st_mode & 07777), path);
    return -1;
  }
  uid_t me = geteuid();
  if (me != 0 && st.st_uid != me) {
    fprintf(stderr,
            "%s: %s: secret file %s belongs to uid %u, but this agent runs as "
            "uid %u and cannot read it: under systemd the unit passes it as a "
            "credential (LoadCredential=); otherwise chown it to the agent's "
            "user\n",
            name, key, path, (unsigned)st.st_uid, (unsigned)me);
    return -1;
  }
  la_auth_key_t k;
  char why[400];
  if (la_auth_init() != 0 || la_auth_load_key(path, &k, why, sizeof why) != 0) {
    fprintf(stderr, "%s: %s: %s\n", name, key, why);
    return -1;
  }
  la_auth_key_wipe(&k);
  return 0;
}

/* Whether this process may create entries in dir (effective ids). */
static int la__writable(const char *dir) {
  return faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
}

/* The directory part of path ("." when it has none) into buf. */
static void la__dirname(const char *path, char *buf, size_t len) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(buf, len, ".");
  else if (slash == path)
    snprintf(buf, len, "/");
  else
    snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

int la_daemon_check_dir(const char *name, const char *key, const char *dir,
                        int owned, int create) {
  struct stat st;
  if (lstat(dir, &st) != 0) {
    int e = errno;
    char parent[1024];
    la__dirname(dir, parent, sizeof parent);
    if (e == ENOENT && create && la__writable(parent)) return 0;
    if (e == ENOENT && create)
      fprintf(stderr,
              "%s: %s: directory %s does not exist and cannot be created: "
              "%s is missing or not writable by uid %u\n",
              name, key, dir, parent, (unsigned)geteuid());
    else
      fprintf(stderr, "%s: %s: directory %s: %s%s\n", name, key, dir,
              strerror(e),
              e == ENOENT ? " (create it, or let the unit's "
                            "StateDirectory= do it)"
                          : "");
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "%s: %s: %s is not a directory%s\n", name, key, dir,
            S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
    return -1;
  }
  if (owned && st.st_uid != geteuid()) {
    fprintf(stderr,
            "%s: %s: directory %s belongs to uid %u, not to this agent's uid "
            "%u (chown it, or run the agent as its owner)\n",
            name, key, dir, (unsigned)st.st_uid, (unsigned)geteuid());
    return -1;
  }
  if (owned && (st.st_mode & (S_IWGRP | S_IWOTH))) {
    fprintf(stderr,
            "%s: %s: directory %s is writable by group or others (mode %03o): "
            "chmod 700 it\n",
            name, key, dir, (unsigned)(st.st_mode & 0777));
    return -1;
  }
  if (!la__writable(dir)) {
    fprintf(stderr, "%s: %s: directory %s is not writable by uid %u\n", name,
            key, dir, (unsigned)geteuid());
    return -1;
  }
  return 0;
}

int la_daemon_check_file_dir(const char *name, const char *key,
                             const char *file) {
  char dir[1024];
  la__dirname(file, dir, sizeof dir);
  return la_daemon_check_dir(name, key, dir, 0, 0);
}

int la_daemon_check_file_dir_made(const char *name, const char *key,
                                  const char *file) {
  char dir[1024];
  la__dirname(file, dir, sizeof dir);
  return la_daemon_check_dir(name, key, dir, 0, 1);
}

int la_daemon_make_file_dir(const char *file, char *why, size_t len) {
  char dir[1024];
  la__dirname(file, dir, sizeof dir);
  if (mkdir(dir, 0700) == 0 || errno == EEXIST) return 0;
  int e = errno;
  snprintf(why, len, "cannot create its directory %s: %s%s", dir,
           strerror(e),
           e == ENOENT ? " (the directory above it is missing: create it, "
                         "or choose another path)"
                       : "");
  return -1;
}
