/* SPDX-License-Identifier: BSD-3-Clause */
/* test_services.c: the systemd units start the daemons as shipped.
 *
 * `make install-services` installs the units and sample configurations into
 * a temporary root (DESTDIR), next to copies of the built daemons where the
 * units' ExecStart= names them. Then:
 *  - `systemd-analyze verify --root` accepts each unit without a word, and
 *    `systemd-analyze security --offline=true` rates its exposure <= 2.5;
 *  - each daemon is started the way systemd would start its unit: exactly
 *    the ExecStart= words (specifiers %d, %S, %t expanded to a credentials,
 *    state and runtime directory made in the temporary root, absolute paths
 *    taken inside that root), the credential copied there readable only by
 *    the service's user, the environment systemd sets (NOTIFY_SOCKET,
 *    WATCHDOG_USEC, CREDENTIALS_DIRECTORY, STATE_DIRECTORY,
 *    RUNTIME_DIRECTORY), as a throw-away uid with the unit's capabilities
 *    and no new privileges (setpriv), in a private network namespace (the
 *    sample configurations' fixed ports collide with nothing). The test
 *    listens on the notify socket: READY=1 with a STATUS= naming the ports,
 *    which answer; WATCHDOG=1 pings; RELOADING=1 then READY=1 on SIGHUP;
 *    STOPPING=1 and exit 0 on SIGTERM. Every system call the daemon made
 *    (strace) is one the unit's SystemCallFilter= allows; again with the
 *    metrics endpoint on and scraped once (libmicrohttpd's thread).
 *  - --check-config names each problem it finds in the files and
 *    directories a configuration names.
 *
 * Runs from the source tree (as run-tests.sh does). The verify and security
 * tests skip only without systemd-analyze; starting the units needs root
 * (uids, network namespace) and strace.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "la_auth.h"
#include "la_test_daemon.h"

#define WAIT_MS 20000
#define MAX_EXPOSURE 2.5

static struct {
  char src[1024];  /* the source tree */
  char root[256];  /* the temporary root the units are installed into */
  char units[512]; /* root + the unit directory */
  int have_root;   /* install-services ran */
} T;

/* Runs cmd through sh with its output (stdout and stderr) into out.
 * Returns the exit status, or -1. */
static int run(const char *cmd, char *out, size_t len) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = 0;
  if (out && len) out[0] = '\0';
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0)
    if (out && n + 1 < len) {
      size_t take = got < len - 1 - n ? got : len - 1 - n;
      memcpy(out + n, buf, take);
      n += take;
      out[n] = '\0';
    }
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int have_tool(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return run(cmd, NULL, 0) == 0;
}

/* Copies src to dst with mode (install(1)): 0 or -1. */
static int copy_file(const char *src, const char *dst, mode_t mode) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "install -m %o '%.2000s' '%.2000s' 2>&1",
           (unsigned)mode, src, dst);
  return run(cmd, NULL, 0) == 0 ? 0 : -1;
}

/* Installs the units into T.root as `make install-services` does, with the
 * built daemons copied where ExecStart= names them and what `verify --root`
 * needs of the host (the targets the units name, /bin/kill). */
static int setup(void **state) {
  (void)state;
  if (!getcwd(T.src, sizeof T.src)) return -1;
  char p[1200], cmd[4096], out[8192];
  snprintf(p, sizeof p, "%s/packaging/la-globalagent.service", T.src);
  if (access(p, R_OK) != 0) {
    fprintf(stderr, "test_services: run from the source tree\n");
    return -1;
  }
  snprintf(T.root, sizeof T.root, "/tmp/la_services_XXXXXX");
  if (!mkdtemp(T.root)) return -1;
  chmod(T.root, 0755); /* the service's uid walks through it */
  snprintf(T.units, sizeof T.units, "%s/lib/systemd/system", T.root);
  snprintf(cmd, sizeof cmd,
           "env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C '%s' "
           "install-services DESTDIR='%s' PREFIX=/usr/local SYSCONFDIR=/etc "
           "SYSTEMDUNITDIR=/lib/systemd/system 2>&1",
           T.src, T.root);
  if (run(cmd, out, sizeof out) != 0) {
    fprintf(stderr, "install-services failed:\n%s\n", out);
    return -1;
  }
  T.have_root = 1;
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/usr/local/bin' '%s/bin'", T.root,
           T.root);
  if (run(cmd, NULL, 0) != 0) return -1;
  const char *bins[] = {"la-localagent", "la-globalagent"};
  for (int i = 0; i < 2; i++) {
    char bin[1024];
    if (la_td_find_bin(bins[i], bin, sizeof bin) != 0) return -1;
    snprintf(p, sizeof p, "%s/usr/local/bin/%s", T.root, bins[i]);
    if (copy_file(bin, p, 0755) != 0) return -1;
  }
  snprintf(p, sizeof p, "%s/bin/kill", T.root);
  if (copy_file("/bin/kill", p, 0755) != 0) return -1;
  const char *targets[] = {"sysinit", "basic", "shutdown", "network-online",
                           "multi-user"};
  for (int i = 0; i < 5; i++) {
    char from[256];
    snprintf(from, sizeof from, "/lib/systemd/system/%s.target", targets[i]);
    snprintf(p, sizeof p, "%s/%s.target", T.units, targets[i]);
    if (access(from, R_OK) == 0 && copy_file(from, p, 0644) != 0) return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  if (T.root[0]) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", T.root);
    run(cmd, NULL, 0);
  }
  return 0;
}

/* ------------------------------------------------ verify and security -- */

static void need_analyze(void) {
  if (!have_tool("systemd-analyze")) {
    print_message("skip: systemd-analyze is not installed\n");
    skip();
  }
}

static const char *const services[] = {"la-globalagent.service",
                                       "la-localagent.service"};

/* `systemd-analyze VERB --root=ROOT UNIT` (verb with its options) on
 * installed unit `unit`, stdout and stderr into out; its exit status. */
static int analyze(const char *verb, const char *unit, char *out, size_t len) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "systemd-analyze %s --root='%s' '%s/%s' 2>&1", verb,
           T.root, T.units, unit);
  return run(cmd, out, len);
}

static void test_verify(void **state) {
  (void)state;
  need_analyze();
  for (int i = 0; i < 2; i++) {
    char out[8192];
    int rc = analyze("verify", services[i], out, sizeof out);
    if (rc != 0 || out[0]) fprintf(stderr, "%s:\n%s\n", services[i], out);
    assert_int_equal(rc, 0);
    assert_string_equal(out, ""); /* not even a warning */
  }
}

static void test_exposure(void **state) {
  (void)state;
  need_analyze();
  for (int i = 0; i < 2; i++) {
    char out[32768];
    analyze("security --offline=true", services[i], out, sizeof out);
    char *line = strstr(out, "Overall exposure level for ");
    if (!line) fprintf(stderr, "%s:\n%s\n", services[i], out);
    assert_non_null(line);
    char *colon = strchr(line, ':');
    assert_non_null(colon);
    double level = strtod(colon + 1, NULL);
    print_message("%s: exposure %.1f\n", services[i], level);
    if (level > MAX_EXPOSURE) fprintf(stderr, "%s\n", out);
    assert_true(level <= MAX_EXPOSURE);
  }
}

/* ------------------------------------------------- a unit, as systemd -- */

typedef struct unit {
  char exec[2048];  /* ExecStart= */
  char cred_id[64]; /* LoadCredential=ID:PATH */
  char cred_path[512];
  char state[128];   /* StateDirectory= */
  char runtime[128]; /* RuntimeDirectory= */
  char ambient[256]; /* AmbientCapabilities= */
  char user[64];     /* User=, or "" with DynamicUser=yes */
  int dynamic, nnp;
} unit_t;

static void read_unit(const char *name, unit_t *u) {
  char path[700], line[4096];
  memset(u, 0, sizeof *u);
  snprintf(path, sizeof path, "%s/%s", T.units, name);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *eq = strchr(line, '=');
    if (line[0] == '#' || !eq) continue;
    *eq = '\0';
    const char *k = line, *v = eq + 1;
    if (!strcmp(k, "ExecStart")) snprintf(u->exec, sizeof u->exec, "%s", v);
    if (!strcmp(k, "StateDirectory"))
      snprintf(u->state, sizeof u->state, "%s", v);
    if (!strcmp(k, "RuntimeDirectory"))
      snprintf(u->runtime, sizeof u->runtime, "%s", v);
    if (!strcmp(k, "AmbientCapabilities"))
      snprintf(u->ambient, sizeof u->ambient, "%s", v);
    if (!strcmp(k, "User")) snprintf(u->user, sizeof u->user, "%s", v);
    if (!strcmp(k, "DynamicUser")) u->dynamic = !strcmp(v, "yes");
    if (!strcmp(k, "NoNewPrivileges")) u->nnp = !strcmp(v, "yes");
    if (!strcmp(k, "LoadCredential")) {
      const char *c = strchr(v, ':');
      assert_non_null(c);
      snprintf(u->cred_id, sizeof u->cred_id, "%.*s", (int)(c - v), v);
      snprintf(u->cred_path, sizeof u->cred_path, "%s", c + 1);
    }
  }
  fclose(f);
  assert_true(u->exec[0] != '\0');
  assert_true(u->dynamic || u->user[0]);
}

/* A uid no account uses, for the service's user. */
static uid_t throwaway_uid(void) {
  for (uid_t u = 61000 + (uid_t)(getpid() % 1000);; u++)
    if (!getpwuid(u)) return u;
}

/* A private network namespace with loopback up: the sample configurations'
 * fixed ports are this test's alone. */
static void private_network(void) {
  static int done;
  if (done) return;
  assert_int_equal(unshare(CLONE_NEWNET), 0);
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(s >= 0);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  assert_int_equal(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
  ifr.ifr_flags |= IFF_UP;
  assert_int_equal(ioctl(s, SIOCSIFFLAGS, &ifr), 0);
  close(s);
  done = 1;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for a notification containing want; every message received is
 * appended to log. Returns 0 or -1 (deadline). */
static int wait_notify(int sock, const char *want, char *log, size_t len,
                       int timeout_ms) {
  long long end = now_ms() + timeout_ms;
  for (;;) {
    long long left = end - now_ms();
    if (left <= 0) return -1;
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    if (poll(&pfd, 1, (int)left) <= 0) continue;
    char msg[4096];
    ssize_t n = recv(sock, msg, sizeof msg - 1, 0);
    if (n <= 0) continue;
    msg[n] = '\0';
    size_t l = strlen(log);
    snprintf(log + l, len - l, "%s\n--\n", msg);
    if (strstr(msg, want)) return 0;
  }
}

/* Connects to host:port (an IPv4 address) over TCP: 0 or -1. */
static int port_answers(const char *addr) {
  char host[64];
  int port;
  if (sscanf(addr, "%63[^:]:%d", host, &port) != 2) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, host, &a.sin_addr) != 1) return -1;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int rc = connect(s, (struct sockaddr *)&a, sizeof a);
  close(s);
  return rc;
}

/* GET /metrics from 127.0.0.1:port; 0 when the answer is a 200 whose body
 * has the counter `want`, else -1 (the reply's start in got). */
static int http_metrics(int port, const char *want, char *got, size_t len) {
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  got[0] = '\0';
  if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
    if (s >= 0) close(s);
    snprintf(got, len, "connect: %s", strerror(errno));
    return -1;
  }
  const char req[] = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (write(s, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
    close(s);
    return -1;
  }
  static char body[1 << 18];
  size_t n = 0;
  ssize_t k;
  while (n + 1 < sizeof body &&
         (k = read(s, body + n, sizeof body - 1 - n)) > 0)
    n += (size_t)k;
  close(s);
  body[n] = '\0';
  snprintf(got, len, "%.200s", body);
  return strncmp(body, "HTTP/1.", 7) == 0 && strstr(body, " 200 ") &&
                 strstr(body, want)
             ? 0
             : -1;
}

/* Adds " name " for every system call of group (recursively) to set. */
static void filter_group(const char *group, char *set, size_t len) {
  char cmd[256], out[16384];
  snprintf(cmd, sizeof cmd, "systemd-analyze syscall-filter '%s' 2>/dev/null",
           group);
  assert_int_equal(run(cmd, out, sizeof out), 0);
  char *save = NULL;
  int first = 1;
  for (char *l = strtok_r(out, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    while (*l == ' ') l++;
    if (first) { /* the group's own name */
      first = 0;
      continue;
    }
    if (!*l || *l == '#') continue;
    if (*l == '@') {
      filter_group(l, set, len);
      continue;
    }
    char tok[128];
    snprintf(tok, sizeof tok, " %s ", l);
    if (!strstr(set, tok)) {
      size_t n = strlen(set);
      snprintf(set + n, len - n, "%s ", l);
    }
  }
}

/* The system calls a unit's SystemCallFilter= lines allow, as " a b ... ". */
static void unit_syscalls(const char *name, char *allowed, size_t len) {
  char path[700], line[1024];
  static char allow[65536], deny[65536];
  allow[0] = ' ', allow[1] = '\0';
  deny[0] = ' ', deny[1] = '\0';
  snprintf(path, sizeof path, "%s/%s", T.units, name);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "SystemCallFilter=", 17)) continue;
    char *v = line + 17, *save = NULL;
    int neg = *v == '~';
    if (neg) v++;
    for (char *g = strtok_r(v, " ", &save); g; g = strtok_r(NULL, " ", &save))
      filter_group(g, neg ? deny : allow, sizeof allow);
  }
  fclose(f);
  assert_true(strlen(allow) > 100); /* the unit has a filter */
  allowed[0] = ' ', allowed[1] = '\0';
  char *save = NULL;
  for (char *c = strtok_r(allow, " ", &save); c;
       c = strtok_r(NULL, " ", &save)) {
    char tok[128];
    snprintf(tok, sizeof tok, " %s ", c);
    if (strstr(deny, tok)) continue;
    size_t n = strlen(allowed);
    snprintf(allowed + n, len - n, "%s ", c);
  }
}

/* Every system call in an strace -f log that allowed does not list, as
 * " a b ... " into bad ("" when none). */
static void syscalls_outside(const char *trace, const char *allowed, char *bad,
                             size_t len) {
  FILE *f = fopen(trace, "r");
  assert_non_null(f);
  char line[8192];
  bad[0] = '\0';
  while (fgets(line, sizeof line, f)) {
    char *p = line;
    while (*p >= '0' && *p <= '9') p++; /* the pid */
    while (*p == ' ') p++;
    if (!strncmp(p, "<... ", 5)) p += 5;
    if (!((*p >= 'a' && *p <= 'z') || *p == '_')) continue; /* ---, +++ */
    char name[64];
    if (sscanf(p, "%63[a-z0-9_]", name) != 1) continue;
    char tok[80];
    snprintf(tok, sizeof tok, " %s ", name);
    if (strstr(allowed, tok) || strstr(bad, tok)) continue;
    size_t n = strlen(bad);
    snprintf(bad + n, len - n, "%s", n ? "" : " ");
    n = strlen(bad);
    snprintf(bad + n, len - n, "%s ", name);
  }
  fclose(f);
}

typedef struct service {
  pid_t pid;        /* setpriv -> strace -> the daemon */
  int notify;       /* the NOTIFY_SOCKET the test listens on */
  char base[200];   /* this service's directories */
  char trace[700];  /* strace's log */
  char out[700];    /* stdout and stderr */
  char msgs[32768]; /* notifications received */
} service_t;

static void mkdir_for(const char *path, mode_t mode, uid_t uid) {
  assert_true(mkdir(path, mode) == 0 || errno == EEXIST);
  assert_int_equal(chmod(path, mode), 0);
  assert_int_equal(chown(path, uid, uid), 0);
}

/* Starts unit name as systemd would (see the file's comment). */
static void start_unit(const char *name, service_t *sv, uid_t uid, int traced,
                       int metrics) {
  unit_t u;
  read_unit(name, &u);
  memset(sv, 0, sizeof *sv);
  char state[256], run_[256], cred[256], p[600];
  snprintf(sv->base, sizeof sv->base, "%.100s/svc-%.60s", T.root, name);
  mkdir_for(sv->base, 0755, 0);
  snprintf(state, sizeof state, "%s/state", sv->base);
  snprintf(run_, sizeof run_, "%s/run", sv->base);
  snprintf(cred, sizeof cred, "%s/credentials", sv->base);
  mkdir_for(state, 0755, 0);
  mkdir_for(run_, 0755, 0);
  mkdir_for(cred, 0700, 0);
  char state_dir[512] = "", runtime_dir[512] = "";
  if (u.state[0]) {
    snprintf(state_dir, sizeof state_dir, "%s/%s", state, u.state);
    mkdir_for(state_dir, 0700, uid);
  }
  if (u.runtime[0]) {
    snprintf(runtime_dir, sizeof runtime_dir, "%s/%s", run_, u.runtime);
    mkdir_for(runtime_dir, 0755, uid);
  }
  if (u.cred_id[0]) { /* systemd's copy: mode 0400, the service's own */
    char src[1024];
    snprintf(src, sizeof src, "%s%s", T.root, u.cred_path);
    snprintf(p, sizeof p, "%s/%s", cred, u.cred_id);
    assert_int_equal(copy_file(src, p, 0400), 0);
    assert_int_equal(chown(p, uid, uid), 0);
  }
  mkdir_for(cred, 0500, uid);
  /* the notify socket */
  sv->notify = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(sv->notify >= 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  assert_true(strlen(sv->base) < 90);
  snprintf(sa.sun_path, sizeof sa.sun_path, "%.90s/notify", sv->base);
  unlink(sa.sun_path); /* an earlier start of the same unit's */
  assert_int_equal(bind(sv->notify, (struct sockaddr *)&sa, sizeof sa), 0);
  chmod(sa.sun_path, 0777);
  snprintf(sv->trace, sizeof sv->trace, "%s/trace", sv->base);
  snprintf(sv->out, sizeof sv->out, "%s/out", sv->base);
  int tfd = open(sv->trace, O_CREAT | O_WRONLY | O_TRUNC, 0600);
  assert_true(tfd >= 0 && fchown(tfd, uid, uid) == 0);
  close(tfd);

  /* ExecStart=, word by word: specifiers expanded, paths in T.root */
  static char words[64][1024];
  char *argv[96];
  int argc = 0;
  char ids[64];
  snprintf(ids, sizeof ids, "%u", (unsigned)uid);
  static char o_uid[64], o_gid[64];
  snprintf(o_uid, sizeof o_uid, "--reuid=%u", (unsigned)uid);
  snprintf(o_gid, sizeof o_gid, "--regid=%u", (unsigned)uid);
  argv[argc++] = "/usr/bin/setpriv";
  argv[argc++] = o_uid;
  argv[argc++] = o_gid;
  argv[argc++] = "--clear-groups";
  if (u.nnp) argv[argc++] = "--no-new-privs";
  if (!strcmp(u.ambient, "CAP_IPC_OWNER")) {
    argv[argc++] = "--inh-caps=-all,+ipc_owner";
    argv[argc++] = "--ambient-caps=-all,+ipc_owner";
    argv[argc++] = "--bounding-set=-all,+ipc_owner";
  } else {
    assert_string_equal(u.ambient, ""); /* no other capability expected */
    argv[argc++] = "--inh-caps=-all";
    argv[argc++] = "--bounding-set=-all";
  }
  if (traced) {
    argv[argc++] = "/usr/bin/strace";
    argv[argc++] = "-f";
    argv[argc++] = "-qq";
    argv[argc++] = "-o";
    argv[argc++] = sv->trace;
  }
  int nw = 0;
  char *save = NULL;
  for (char *w = strtok_r(u.exec, " ", &save); w;
       w = strtok_r(NULL, " ", &save)) {
    assert_true(nw < 64);
    char *o = words[nw];
    size_t n = 0;
    if (w[0] == '/') n = (size_t)snprintf(o, 1024, "%s", T.root);
    for (const char *c = w; *c && n < 1000; c++) {
      const char *rep = NULL;
      char one[2] = {*c, 0};
      if (*c == '%') {
        c++;
        rep = *c == 'd'   ? cred
              : *c == 'S' ? state
              : *c == 't' ? run_
              : *c == '%' ? "%"
                          : NULL;
        if (!rep) fail_msg("unexpected specifier %%%c in %s", *c, name);
      }
      n += (size_t)snprintf(o + n, 1024 - n, "%s", rep ? rep : one);
    }
    argv[argc++] = words[nw++];
  }
  static char o_mport[600];
  if (metrics) { /* the metrics endpoint on: its thread's calls traced too */
    char mdir[300];
    snprintf(mdir, sizeof mdir, "%s/metrics", sv->base);
    mkdir_for(mdir, 0755, uid);
    snprintf(o_mport, sizeof o_mport, "--metrics.port_file=%s/port", mdir);
    argv[argc++] = "--metrics.listen=127.0.0.1:0";
    argv[argc++] = o_mport;
  }
  argv[argc] = NULL;
  (void)ids;

  char e_notify[700], e_cred[800], e_state[900], e_run[900];
  snprintf(e_notify, sizeof e_notify, "NOTIFY_SOCKET=%s", sa.sun_path);
  snprintf(e_cred, sizeof e_cred, "CREDENTIALS_DIRECTORY=%s", cred);
  snprintf(e_state, sizeof e_state, "STATE_DIRECTORY=%s", state_dir);
  snprintf(e_run, sizeof e_run, "RUNTIME_DIRECTORY=%s", runtime_dir);
  char *envp[] = {
      "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
      "/sbin:/bin",
      "LANG=C.UTF-8",
      e_notify,
      "WATCHDOG_USEC=1000000", /* the unit's is 60 s */
      e_cred,
      u.state[0] ? e_state : "LA_NO_STATE=1",
      u.runtime[0] ? e_run : "LA_NO_RUNTIME=1",
      NULL};
  int ofd = open(sv->out, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  assert_true(ofd >= 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    umask(077); /* UMask= */
    int nul = open("/dev/null", O_RDONLY);
    dup2(nul, 0);
    dup2(ofd, 1);
    dup2(ofd, 2);
    if (chdir("/") != 0) _exit(126);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  close(ofd);
  setpgid(pid, pid);
  sv->pid = pid;
}

static void print_out(const service_t *sv) {
  char cmd[800];
  snprintf(cmd, sizeof cmd, "tail -c 3000 '%s' >&2", sv->out);
  if (system(cmd) != 0) fprintf(stderr, "(no output)\n");
  fprintf(stderr, "notifications:\n%s\n", sv->msgs);
}

static void stop_unit(service_t *sv) {
  if (sv->pid > 0) {
    kill(-sv->pid, SIGKILL);
    waitpid(sv->pid, NULL, 0);
    sv->pid = 0;
  }
  if (sv->notify >= 0) close(sv->notify);
  sv->notify = -1;
}

#define SV_CHECK(sv, cond, ...) \
  do {                          \
    if (!(cond)) {              \
      print_out(sv);            \
      stop_unit(sv);            \
      fail_msg(__VA_ARGS__);    \
    }                           \
  } while (0)

/* Waits up to ms for pid to exit; returns its exit status or -1. */
static int wait_exit(pid_t pid, int ms) {
  long long end = now_ms() + ms;
  for (;;) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (now_ms() > end) return -1;
    usleep(20000);
  }
}

/* The daemon's pid: strace's child (the only process in the group that
 * runs the daemon's binary). */
static pid_t daemon_pid(const service_t *sv, const char *bin) {
  char cmd[512], out[256];
  snprintf(cmd, sizeof cmd, "pgrep -g %d -x '%.15s'", (int)sv->pid, bin);
  if (run(cmd, out, sizeof out) != 0) return -1;
  return (pid_t)atoi(out);
}

/* Starts the unit, checks the notifications, its ports, reload, stop and
 * its system calls. ports: the STATUS= words that are addresses follow
 * these prefixes. */
static void service_lifecycle(const char *unit, const char *bin,
                              const char *const *addr_prefixes, int metrics) {
  if (geteuid() != 0) {
    print_message("skip: starting a unit's daemon as its user needs root\n");
    skip();
  }
  need_analyze();
  if (!have_tool("strace") || access("/usr/bin/setpriv", X_OK) != 0) {
    print_message("skip: strace or setpriv missing (make deps)\n");
    skip();
  }
  private_network();
  char secret[700], why[256];
  snprintf(secret, sizeof secret, "%s/etc/la/secret", T.root);
  if (access(secret, F_OK) != 0)
    assert_int_equal(la_auth_generate_secret_file(secret, why, sizeof why), 0);
  static char allowed[65536];
  unit_syscalls(unit, allowed, sizeof allowed);

  /* A sanitized daemon (the asan/tsan passes) makes system calls of its
   * runtime (LeakSanitizer's ptrace) that neither strace nor the filter
   * allow: it runs untraced, and its filter is checked in the normal pass. */
  char cmd[1200], bin_path[1024];
  assert_int_equal(la_td_find_bin(bin, bin_path, sizeof bin_path), 0);
  snprintf(cmd, sizeof cmd,
           "ldd '%s' | grep -q -e libasan -e libtsan -e libubsan", bin_path);
  int traced = run(cmd, NULL, 0) != 0;
  service_t sv;
  start_unit(unit, &sv, throwaway_uid(), traced, metrics);
  SV_CHECK(
      &sv,
      wait_notify(sv.notify, "READY=1", sv.msgs, sizeof sv.msgs, WAIT_MS) == 0,
      "%s: no READY=1", unit);
  const char *status = strstr(sv.msgs, "STATUS=");
  SV_CHECK(&sv, status != NULL, "%s: READY=1 without STATUS=", unit);
  print_message("%s: %.*s\n", unit, (int)strcspn(status, "\n"), status);
  for (int i = 0; addr_prefixes[i]; i++) {
    const char *a = strstr(status, addr_prefixes[i]);
    SV_CHECK(&sv, a != NULL, "%s: STATUS= names no '%s'", unit,
             addr_prefixes[i]);
    char addr[64];
    sscanf(a + strlen(addr_prefixes[i]), "%63[0-9.:]", addr);
    SV_CHECK(&sv, port_answers(addr) == 0, "%s: %s does not answer", unit,
             addr);
  }
  if (metrics) { /* a scrape, so the HTTP thread accepts, reads, writes */
    char pf[800], got[256] = "";
    snprintf(pf, sizeof pf, "cat '%s/metrics/port'", sv.base);
    char portbuf[32] = "";
    SV_CHECK(&sv, run(pf, portbuf, sizeof portbuf) == 0 && atoi(portbuf) > 0,
             "%s: no metrics port file", unit);
    int ok = -1;
    for (int i = 0; i < 50 && ok != 0; i++) { /* first publish: interval */
      ok = http_metrics(atoi(portbuf), "_info{", got, sizeof got);
      if (ok != 0) usleep(100000);
    }
    SV_CHECK(&sv, ok == 0, "%s: GET /metrics failed: %s", unit, got);
  }
  SV_CHECK(
      &sv,
      wait_notify(sv.notify, "WATCHDOG=1", sv.msgs, sizeof sv.msgs, 3000) == 0,
      "%s: no WATCHDOG=1 within 3 s (WATCHDOG_USEC is 1 s)", unit);
  pid_t dpid = daemon_pid(&sv, bin);
  SV_CHECK(&sv, dpid > 0, "%s: daemon process not found", unit);
  /* ExecReload= */
  kill(dpid, SIGHUP);
  SV_CHECK(&sv,
           wait_notify(sv.notify, "RELOADING=1", sv.msgs, sizeof sv.msgs,
                       WAIT_MS) == 0,
           "%s: no RELOADING=1 after SIGHUP", unit);
  SV_CHECK(
      &sv,
      wait_notify(sv.notify, "READY=1", sv.msgs, sizeof sv.msgs, WAIT_MS) == 0,
      "%s: no READY=1 after the reload", unit);
  SV_CHECK(&sv, strstr(sv.msgs, "configuration reloaded") != NULL,
           "%s: the reload failed", unit);
  /* systemctl stop */
  kill(dpid, SIGTERM);
  SV_CHECK(&sv,
           wait_notify(sv.notify, "STOPPING=1", sv.msgs, sizeof sv.msgs,
                       WAIT_MS) == 0,
           "%s: no STOPPING=1 after SIGTERM", unit);
  int st = wait_exit(sv.pid, WAIT_MS);
  SV_CHECK(&sv, st == 0, "%s: exit status %d after SIGTERM", unit, st);
  sv.pid = 0;
  if (!traced) {
    print_message("%s: sanitized daemon: system calls not traced\n", unit);
    stop_unit(&sv);
    return;
  }
  char bad[4096], all[8192];
  syscalls_outside(sv.trace, " ", all, sizeof all); /* every one it made */
  int n = 0;
  for (const char *c = all; (c = strchr(c + 1, ' ')) != NULL;) n++;
  print_message(
      "%s: %d distinct system calls, each checked against its "
      "SystemCallFilter=\n",
      unit, n - 1);
  SV_CHECK(&sv, n > 30, "%s: strace saw only:%s", unit, all);
  syscalls_outside(sv.trace, allowed, bad, sizeof bad);
  SV_CHECK(&sv, bad[0] == '\0',
           "%s: system calls its SystemCallFilter= refuses:%s", unit, bad);
  stop_unit(&sv);
}

static void test_globalagent_unit(void **state) {
  (void)state;
  const char *addrs[] = {"agents on ", "feed on ", NULL};
  service_lifecycle("la-globalagent.service", "la-globalagent", addrs, 0);
}

/* The same with the metrics endpoint on: libmicrohttpd's thread stays
 * within the unit's SystemCallFilter= too. */
static void test_globalagent_unit_metrics(void **state) {
  (void)state;
  const char *addrs[] = {"agents on ", "feed on ", NULL};
  service_lifecycle("la-globalagent.service", "la-globalagent", addrs, 1);
}

static void test_localagent_unit(void **state) {
  (void)state;
  const char *addrs[] = {"listening on ", NULL};
  service_lifecycle("la-localagent.service", "la-localagent", addrs, 0);
}

static void test_localagent_unit_metrics(void **state) {
  (void)state;
  const char *addrs[] = {"listening on ", NULL};
  service_lifecycle("la-localagent.service", "la-localagent", addrs, 1);
}

/* ------------------------------------------------------ --check-config -- */

/* Runs BIN --check-config -c the installed sample configuration ARGS (as
 * the uid as_uid unless it is 0), asserts the exit status and that the
 * output contains want. */
static void check_config(const char *bin, uid_t as_uid, int want_rc,
                         const char *want, const char *args) {
  char path[1024], cmd[4096], out[16384];
  assert_int_equal(la_td_find_bin(bin, path, sizeof path), 0);
  char conf[800];
  snprintf(conf, sizeof conf, "%s/etc/la/%s.conf", T.root, bin);
  char as[128] = "";
  if (as_uid)
    snprintf(as, sizeof as,
             "/usr/bin/setpriv --reuid=%u --regid=%u "
             "--clear-groups ",
             (unsigned)as_uid, (unsigned)as_uid);
  snprintf(cmd, sizeof cmd, "%s'%s' --check-config -c '%s' %s 2>&1", as, path,
           conf, args);
  int rc = run(cmd, out, sizeof out);
  if (rc != want_rc || !strstr(out, want))
    fail_msg("%s\nexit %d (expected %d), output:\n%s\nexpected: %s", cmd, rc,
             want_rc, out, want);
}

static void test_check_config(void **state) {
  (void)state;
  char d[700], secret[800], why[256], a[4096];
  snprintf(d, sizeof d, "%s/check", T.root);
  mkdir_for(d, 0755, 0);
  snprintf(secret, sizeof secret, "%s/secret", d);
  assert_int_equal(la_auth_generate_secret_file(secret, why, sizeof why), 0);
  const char *ga = "la-globalagent", *la = "la-localagent";
  char good_ga[2048], good_la[2048];
  snprintf(good_ga, sizeof good_ga,
           "--agents.secret_file='%s' --store.path='%s/la.db'", secret, d);
  snprintf(good_la, sizeof good_la,
           "--global.secret_file='%s' --global.spool_dir='%s/spool'", secret,
           d);
  check_config(ga, 0, 0, "la-globalagent: configuration OK", good_ga);
  check_config(la, 0, 0, "la-localagent: configuration OK", good_la);

  /* the secret file */
  snprintf(a, sizeof a, "%s --agents.secret_file='%s/none'", good_ga, d);
  check_config(ga, 0, 2,
               "No such file or directory (create one with: lactl "
               "secret",
               a);
  chmod(secret, 0640);
  check_config(ga, 0, 2, "has mode 0640: it must be 0600 or 0400", good_ga);
  check_config(la, 0, 2, "has mode 0640: it must be 0600 or 0400", good_la);
  chmod(secret, 0400);
  check_config(ga, 0, 0, "configuration OK", good_ga);
  chmod(secret, 0600);
  char shortf[800];
  snprintf(shortf, sizeof shortf, "%s/short", d);
  FILE *f = fopen(shortf, "w");
  assert_non_null(f);
  fputs("short\n", f);
  fclose(f);
  chmod(shortf, 0600);
  snprintf(a, sizeof a, "%s --global.secret_file='%s'", good_la, shortf);
  check_config(la, 0, 2, "too short", a);
  if (geteuid() == 0) {
    /* root's 0600 secret, checked as the service's user: the problem the
     * units' LoadCredential= solves */
    uid_t u = throwaway_uid();
    snprintf(a, sizeof a, "--agents.secret_file='%s' --store.path=/tmp/x.db",
             secret);
    check_config(ga, u, 2, "belongs to uid 0, but this agent runs as uid", a);
    check_config(ga, u, 2, "LoadCredential=", a);
  }

  /* directories */
  /* the store's directory the GlobalAgent makes; not its parent */
  snprintf(a, sizeof a, "%s --store.path='%s/missing/la.db'", good_ga, d);
  check_config(ga, 0, 0, "configuration OK", a);
  snprintf(a, sizeof a, "%s --store.path='%s/no/missing/la.db'", good_ga, d);
  check_config(ga, 0, 2, "store.path: directory", a);
  check_config(ga, 0, 2, "/no/missing does not exist and cannot be created", a);
  snprintf(a, sizeof a, "%s --daemon.pid_file='%s/nodir/ga.pid'", good_ga, d);
  check_config(ga, 0, 2, "daemon.pid_file: directory", a);
  snprintf(a, sizeof a, "%s --global.spool_dir='%s/no/spool'", good_la, d);
  check_config(la, 0, 2, "spool does not exist and cannot be created", a);
  snprintf(a, sizeof a, "%s --agent.port_file='%s/nodir/port'", good_la, d);
  check_config(la, 0, 2, "agent.port_file: directory", a);
  char spool[800];
  snprintf(spool, sizeof spool, "%s/spool", d);
  assert_int_equal(mkdir(spool, 0770), 0);
  chmod(spool, 0770);
  check_config(la, 0, 2, "is writable by group or others (mode 770)", good_la);
  chmod(spool, 0700);
  check_config(la, 0, 0, "configuration OK", good_la);
  if (geteuid() == 0) {
    assert_int_equal(chown(spool, 12345, 12345), 0);
    check_config(la, 0, 2, "belongs to uid 12345, not to this agent's uid 0",
                 good_la);
    assert_int_equal(rmdir(spool), 0);
  }

  /* addresses */
  snprintf(a, sizeof a, "%s --agents.listen=nowhere", good_ga);
  check_config(ga, 0, 2, "agents.listen 'nowhere' is not host:port", a);
  snprintf(a, sizeof a, "%s --global.address=host:99999", good_la);
  check_config(la, 0, 2, "global.address 'host:99999' is not host:port", a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_verify),
      cmocka_unit_test(test_exposure),
      cmocka_unit_test(test_check_config),
      cmocka_unit_test(test_globalagent_unit),
      cmocka_unit_test(test_localagent_unit),
      cmocka_unit_test(test_globalagent_unit_metrics),
      cmocka_unit_test(test_localagent_unit_metrics),
  };
  return cmocka_run_group_tests_name("services", tests, setup, teardown);
}
