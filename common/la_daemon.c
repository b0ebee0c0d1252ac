/* la_daemon.c: shared command-line and file chores of the daemons (see
 * la_daemon.h). */
#include "la_daemon.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int la_daemon_write_number(const char *path, long value) {
  /* A fresh temporary name (mkstemp: O_CREAT|O_EXCL, mode 0600), so a link
   * planted beside path is never followed; rename replaces path itself,
   * never what a link there points to. */
  char tmp[1024];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= sizeof tmp)
    return -1;
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%ld\n", value);
  int ok = fchmod(fd, 0644) == 0 && write(fd, buf, (size_t)n) == n;
  if (close(fd) != 0) ok = 0;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    return -1;
  }
  return 0;
}

void la_daemon_process_setup(void) { umask(077); }

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
