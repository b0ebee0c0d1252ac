/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_daemon.c: a real daemon as a test's child process (see
 * la_test_daemon.h). fork/exec with only async-signal-safe calls in the
 * child (the test process may run threads such as la_test_global's);
 * waits are polls with deadlines; logs are plain files in the object's
 * temporary directory, removed with it.
 */
#include "la_test_daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "la_auth.h"

extern char **environ;

struct la_test_daemon {
  char name[64];
  char bin[1024];
  char dir[512];
  char log[600], out[600];
  pid_t pid;
  uint16_t port;
  char addr[64];
  long mark;
};

/* Daemons found with a sanitizer report by la_td_free in this process, and
 * whether the exit hook that fails the program for them is installed. */
static int la__san_found;
static int la__san_hooked;
static void la__san_atexit(void);

long long la_td_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void la_td_unset_la_env(void) {
  static const char *vars[] = {"LA_PERIOD",
                               "LA_METRIC",
                               "LA_POLICY",
                               "LA_BUFFERS",
                               "LA_AGENT",
                               "LA_COMPACT",
                               "LA_APP_ID",
                               "LA_VERBOSE",
                               "LA_DISABLE",
                               "LA_WAIT_TIMEOUT_MS",
                               "LA_CONNECT_TIMEOUT_MS",
                               "LA_DUMP_RAW",
                               "LA_TIMER",
                               "LA_GLOBAL",
                               NULL};
  for (int i = 0; vars[i]; i++) unsetenv(vars[i]);
}

int la_td_prepare(void) {
  la_td_unset_la_env();
  signal(SIGPIPE, SIG_IGN);
  return la_auth_init() == 0 ? 0 : -1;
}

void la_td_argv_init(la_td_argv_t *a) {
  a->n = 0;
  a->v[0] = NULL;
}

int la_td_argv_add(la_td_argv_t *a, const char *fmt, ...) {
  if (a->n >= LA_TD_ARGV_MAX) return -1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->buf[a->n], sizeof a->buf[a->n], fmt, ap);
  va_end(ap);
  a->v[a->n] = a->buf[a->n];
  a->v[++a->n] = NULL;
  return 0;
}

int la_td_argv_extend(la_td_argv_t *a, const char *const *more) {
  for (; more && *more; more++)
    if (la_td_argv_add(a, "%s", *more) != 0) return -1;
  return 0;
}

int la_td_wait_closed(int fd, int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    long long left = end - la_td_now_ms();
    if (left <= 0) return -1;
    struct pollfd pf = {fd, POLLIN, 0};
    int k = poll(&pf, 1, (int)left);
    if (k <= 0) continue; /* EINTR, or the time is up */
    char buf[4096];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r == 0) return 0;
    if (r < 0 && errno != EINTR && errno != EAGAIN) return 1;
  }
}

int la_td_group_setup(void **state) {
  (void)state;
  return la_td_prepare();
}

void la_td_nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int la_td_loaded_ms(int ms) {
  double load[1];
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (getloadavg(load, 1) != 1 || cpus < 1) return ms;
  double f = load[0] / (double)cpus;
  if (f <= 1.0) return ms;
  if (f > LA_TD_LOAD_SCALE_MAX) f = LA_TD_LOAD_SCALE_MAX;
  return (int)(ms * f);
}

int la_td_wait_until(int (*done)(void *arg), void *arg, int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    int last = la_td_now_ms() >= end;
    if (done(arg)) return 0;
    if (last) return -1;
    la_td_nap_ms(20);
  }
}

/* CPU seconds the running daemons of ds used so far (those that are not
 * running count 0). */
static double la__cpu_of(la_test_daemon_t *const *ds, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++) {
    pid_t p = ds[i] ? la_td_pid(ds[i]) : 0;
    double c = p > 0 ? la_td_cpu_seconds(p) : -1;
    if (c > 0) sum += c;
  }
  return sum;
}

int la_td_wait_working(int (*done)(void *arg), void *arg,
                       la_test_daemon_t *const *ds, int n, int idle_ms,
                       int max_ms, double *cpu, long long *idle) {
  long long t0 = la_td_now_ms(), moved = t0, longest = 0;
  double first = la__cpu_of(ds, n), last = first, used = 0;
  int rc = -1;
  for (;;) {
    long long now = la_td_now_ms();
    double c = la__cpu_of(ds, n); /* before done(), which may reap */
    if (done(arg)) {
      rc = 0;
      break;
    }
    /* a daemon that exited takes its CPU time with it: count only rises */
    if (c > last) { /* a tick (10 ms) at least */
      used += c - last;
      moved = now;
    }
    last = c;
    if (now - moved > longest) longest = now - moved;
    if (now - moved > idle_ms || now - t0 > max_ms) break;
    la_td_nap_ms(20);
  }
  if (cpu) *cpu = used;
  if (idle) *idle = longest;
  return rc;
}

int la_td_read_port(const char *path, int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    FILE *f = fopen(path, "r");
    unsigned p = 0;
    if (f) {
      if (fscanf(f, "%u", &p) != 1) p = 0;
      fclose(f);
    }
    if (p > 0 && p < 65536) return (int)p;
    if (la_td_now_ms() >= end) return -1;
    la_td_nap_ms(5);
  }
}

void la_td_print_log_tail(const la_test_daemon_t *d, size_t max) {
  char *log = d ? la_td_log(d) : NULL;
  if (!log) return;
  size_t n = strlen(log);
  printf("---- %s log (tail) ----\n%s\n----\n", d->name,
         n > max ? log + n - max : log);
  fflush(stdout);
  free(log);
}

/* Highest fd to close in a child before exec (computed before fork). */
static int max_fd(void) {
  long m = sysconf(_SC_OPEN_MAX);
  return m > 0 && m < 65536 ? (int)m : 65536;
}

/* In a child: closes every inherited fd above 2, so the test's sockets
 * (a GlobalAgent stand-in's listener, say) do not live on in the child. */
static void close_from_3(int maxfd) {
  if (close_range(3, ~0u, 0) == 0) return;
  for (int fd = 3; fd < maxfd; fd++) close(fd);
}

static int try_bin(const char *dir, const char *name, char *path, size_t len) {
  char p[2048];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  if (access(p, X_OK) != 0) return -1;
  char *r = realpath(p, NULL);
  snprintf(path, len, "%s", r ? r : p);
  free(r);
  return 0;
}

/* A daemon or lactl (a name without '/') missing where a sanitized run
 * looks for it (LA_TEST_BIN_DIR, or a sanitized test program's own tree) is
 * a broken build, not a test to skip: the program fails at once, saying
 * so. Elsewhere (the normal tree, before its daemons are built) the caller
 * decides; the message is printed either way. */
static int la__not_found(const char *name, const char *where, int strict) {
  fprintf(stderr, "la_td_find_bin: %s not found in %s (%s)\n", name, where,
          strict ? "a sanitized run uses no other tree's binaries: make "
                   "check-build-asan or check-build-tsan"
                 : "make all");
  if (strict && !strchr(name, '/')) {
    fflush(NULL);
    _exit(1);
  }
  return -1;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LA__SANITIZED 1
#else
#define LA__SANITIZED 0
#endif

int la_td_find_src(const char *rel, char *dir, size_t len) {
  char exe[4096], probe[4096 + 256];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  for (char *p = strrchr(exe, '/'); p; p = strrchr(exe, '/')) {
    *p = 0;
    snprintf(probe, sizeof probe, "%s/%s", exe, rel);
    if (access(probe, R_OK) == 0) {
      snprintf(dir, len, "%s", exe);
      return 0;
    }
  }
  return -1;
}

int la_td_find_bin(const char *name, char *path, size_t len) {
  const char *env = getenv("LA_TEST_BIN_DIR");
  char where[1300];
  if (env && *env) {
    if (try_bin(env, name, path, len) == 0) return 0;
    snprintf(where, sizeof where, "LA_TEST_BIN_DIR=%s", env);
    return la__not_found(name, where, 1);
  }
  char exe[1024];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    fprintf(stderr, "la_td_find_bin: /proc/self/exe: %s\n", strerror(errno));
    return -1;
  }
  exe[n] = '\0';
  char *dir = dirname(exe); /* .../build/tests */
  char cand[1200];
  snprintf(cand, sizeof cand, "%s/../bin", dir);
  if (try_bin(cand, name, path, len) == 0) return 0;
  /* never another tree's: build/asan/tests must not run build/bin's */
  snprintf(where, sizeof where, "%s, the test program's own tree", cand);
  return la__not_found(name, where, LA__SANITIZED);
}

la_test_daemon_t *la_td_new(const char *name) {
  la_test_daemon_t *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  snprintf(d->name, sizeof d->name, "%s", name);
  if (la_td_find_bin(name, d->bin, sizeof d->bin) != 0) {
    fprintf(stderr,
            "la_test_daemon: %s not found (set LA_TEST_BIN_DIR or "
            "build it)\n",
            name);
    free(d);
    return NULL;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(d->dir, sizeof d->dir, "%s/la-td-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(d->dir)) {
    fprintf(stderr, "la_test_daemon: mkdtemp %s: %s\n", d->dir,
            strerror(errno));
    free(d);
    return NULL;
  }
  snprintf(d->log, sizeof d->log, "%s/%s.log", d->dir, name);
  snprintf(d->out, sizeof d->out, "%s/%s.out", d->dir, name);
  if (!la__san_hooked && atexit(la__san_atexit) == 0) la__san_hooked = 1;
  return d;
}

const char *la_td_dir(const la_test_daemon_t *d) {
  return d->dir;
}

char *la_td_path(const la_test_daemon_t *d, const char *rel, char *buf,
                 size_t len) {
  snprintf(buf, len, "%s/%s", d->dir, rel);
  return buf;
}

int la_td_threads_named(pid_t pid, const char *name) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char cp[384], comm[64] = "";
    snprintf(cp, sizeof cp, "%s/%s/comm", path, e->d_name);
    FILE *f = fopen(cp, "r");
    if (!f) continue;
    if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0;
    fclose(f);
    n += !strcmp(comm, name);
  }
  closedir(d);
  return n;
}

pid_t la_td_pid(const la_test_daemon_t *d) {
  return d->pid;
}
uint16_t la_td_port(const la_test_daemon_t *d) {
  return d->port;
}
const char *la_td_addr(const la_test_daemon_t *d) {
  return d->addr;
}

const char *la_td_name(const la_test_daemon_t *d) {
  return d->name;
}

static int decode_status(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

int la_td_alive(la_test_daemon_t *d) {
  if (d->pid <= 0) return 0;
  pid_t p = d->pid;
  int st;
  pid_t r;
  while ((r = waitpid(p, &st, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == 0) return 1;
  d->pid = 0;
  return 0;
}

int la_td_signal(la_test_daemon_t *d, int sig) {
  return d->pid > 0 ? kill(d->pid, sig) : -1;
}

int la_td_wait_exit(la_test_daemon_t *d, int timeout_ms) {
  if (d->pid <= 0) return -3;
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    int st;
    pid_t r;
    while ((r = waitpid(d->pid, &st, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r == d->pid) {
      d->pid = 0;
      return decode_status(st);
    }
    if (r < 0) {
      d->pid = 0;
      return -1;
    }
    if (la_td_now_ms() >= end) return -1;
    la_td_nap_ms(5);
  }
}

int la_td_stop(la_test_daemon_t *d, int timeout_ms) {
  if (d->pid <= 0) return -3;
  kill(d->pid, SIGTERM);
  int rc = la_td_wait_exit(d, timeout_ms);
  if (rc != -1 || d->pid <= 0) return rc;
  kill(-d->pid, SIGKILL);
  kill(d->pid, SIGKILL);
  la_td_wait_exit(d, 5000);
  d->pid = 0;
  return -2;
}

int la_td_hold_port(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1; /* past the daemon's connections in TIME_WAIT */
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  /* listening: no other socket binds the port, SO_REUSEADDR or not */
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void la_td_release_port(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static char *slurp(const char *path, long from) {
  FILE *f = fopen(path, "r");
  if (!f) return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  if (from > n) from = n;
  fseek(f, from, SEEK_SET);
  char *b = malloc((size_t)(n - from) + 1);
  if (!b) {
    fclose(f);
    return NULL;
  }
  size_t got = fread(b, 1, (size_t)(n - from), f);
  b[got] = '\0';
  fclose(f);
  return b;
}

char *la_td_log(const la_test_daemon_t *d) {
  return slurp(d->log, 0);
}

void la_td_log_mark(la_test_daemon_t *d) {
  struct stat st;
  d->mark = stat(d->log, &st) == 0 ? (long)st.st_size : 0;
}

int la_td_log_count(const la_test_daemon_t *d, const char *needle) {
  char *b = slurp(d->log, d->mark);
  int n = 0;
  if (!b) return 0;
  for (char *p = b; (p = strstr(p, needle)); p += strlen(needle)) n++;
  free(b);
  return n;
}

int la_td_log_has(const la_test_daemon_t *d, const char *needle) {
  return la_td_log_count(d, needle) > 0;
}

int la_td_wait_log(la_test_daemon_t *d, const char *needle, int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    if (la_td_log_has(d, needle)) return 0;
    if (la_td_now_ms() >= end) return -1;
    la_td_nap_ms(10);
  }
}

int la_td_log_line(const la_test_daemon_t *d, const char *needle, char *buf,
                   size_t len) {
  char *b = slurp(d->log, d->mark);
  if (len) buf[0] = '\0';
  if (!b) return -1;
  char *p = strstr(b, needle);
  int rc = -1;
  if (p) {
    char *s = p, *e = strchr(p, '\n');
    while (s > b && s[-1] != '\n') s--;
    if (!e) e = p + strlen(p);
    snprintf(buf, len, "%.*s", (int)(e - s), s);
    rc = 0;
  }
  free(b);
  return rc;
}

static void print_log_tail(const la_test_daemon_t *d) {
  char *b = slurp(d->log, 0);
  if (!b) return;
  size_t n = strlen(b);
  fprintf(stderr, "---- %s log (tail) ----\n%s\n----\n", d->name,
          n > 3000 ? b + n - 3000 : b);
  free(b);
}

int la_td_start(la_test_daemon_t *d, const char *const *args,
                const char *port_file, int timeout_ms) {
  if (d->pid > 0) return -1;
  char *argv[128];
  int n = 0;
  argv[n++] = d->bin;
  for (int i = 0; args && args[i] && n < 127; i++) argv[n++] = (char *)args[i];
  argv[n] = NULL;
  if (port_file) unlink(port_file);
  int lfd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  int ofd = open(d->out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (lfd < 0 || ofd < 0 || nfd < 0) {
    if (lfd >= 0) close(lfd);
    if (ofd >= 0) close(ofd);
    if (nfd >= 0) close(nfd);
    return -1;
  }
  int maxfd = max_fd();
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) { /* async-signal-safe only until exec */
    setpgid(0, 0);
    /* a test that dies (a failed assertion longjmps past its cleanup, a
     * crash) takes its daemons with it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(nfd, 0);
    dup2(ofd, 1);
    dup2(lfd, 2);
    close_from_3(maxfd);
    execv(argv[0], argv);
    _exit(127);
  }
  close(lfd);
  close(ofd);
  close(nfd);
  if (pid < 0) return -1;
  setpgid(pid, pid);
  d->pid = pid;
  d->port = 0;
  d->addr[0] = '\0';
  if (!port_file) return 0;
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    int p = la_td_read_port(port_file, 0);
    if (p > 0) {
      d->port = (uint16_t)p;
      snprintf(d->addr, sizeof d->addr, "127.0.0.1:%d", p);
      return p;
    }
    if (!la_td_alive(d)) {
      fprintf(stderr, "la_test_daemon: %s exited before writing %s\n", d->name,
              port_file);
      print_log_tail(d);
      return -1;
    }
    if (la_td_now_ms() >= end) {
      fprintf(stderr,
              "la_test_daemon: %s wrote no port into %s within %d "
              "ms\n",
              d->name, port_file, timeout_ms);
      print_log_tail(d);
      la_td_stop(d, 1000);
      return -1;
    }
    la_td_nap_ms(5);
  }
}

int la_td_run(const char *const *argv, const char *const *env_add,
              int timeout_ms, char *out, size_t len) {
  char *envp[1024];
  int e = 0;
  for (char **v = environ; *v && e < 900; v++) {
    int overridden = 0;
    for (int i = 0; env_add && env_add[i]; i++) {
      const char *eq = strchr(env_add[i], '=');
      size_t k = eq ? (size_t)(eq - env_add[i]) : strlen(env_add[i]);
      if (!strncmp(*v, env_add[i], k) && (*v)[k] == '=') overridden = 1;
    }
    if (!overridden) envp[e++] = *v;
  }
  for (int i = 0; env_add && env_add[i] && e < 1023; i++)
    envp[e++] = (char *)env_add[i];
  envp[e] = NULL;
  if (len) out[0] = '\0';
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int maxfd = max_fd();
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (nfd >= 0) dup2(nfd, 0);
    dup2(p[1], 1);
    dup2(p[1], 2);
    close_from_3(maxfd);
    execvpe(argv[0], (char *const *)argv, envp);
    _exit(127);
  }
  close(p[1]);
  if (nfd >= 0) close(nfd);
  if (pid < 0) {
    close(p[0]);
    return -1;
  }
  setpgid(pid, pid);
  size_t got = 0;
  int killed = 0;
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    long long left = end - la_td_now_ms();
    if (left <= 0) {
      killed = 1;
      kill(-pid, SIGKILL);
      break;
    }
    struct pollfd pf = {p[0], POLLIN, 0};
    int k = poll(&pf, 1, (int)left);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) continue;
    char buf[4096];
    ssize_t r = read(p[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (len && got < len - 1) {
      size_t c = (size_t)r < len - 1 - got ? (size_t)r : len - 1 - got;
      memcpy(out + got, buf, c);
      got += c;
      out[got] = '\0';
    }
  }
  close(p[0]);
  /* the group may outlive its leader (mpiexec's ranks): wait, then kill */
  siginfo_t si;
  long long end2 = la_td_now_ms() + (killed ? 5000 : timeout_ms);
  for (;;) {
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && si.si_pid == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (la_td_now_ms() >= end2) {
      killed = 1;
      kill(-pid, SIGKILL);
      end2 = la_td_now_ms() + 5000;
    }
    la_td_nap_ms(5);
  }
  kill(-pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return killed ? -1 : decode_status(st);
}

int la_td_status(la_test_daemon_t *d, const char *key, char *val, size_t len) {
  char lactl[1024];
  if (len) val[0] = '\0';
  if (!d->addr[0] || la_td_find_bin("lactl", lactl, sizeof lactl) != 0)
    return -1;
  const char *argv[] = {lactl, "status", "--agent", d->addr, NULL};
  char *out = malloc(65536);
  if (!out) return -1;
  int rc = la_td_run(argv, NULL, 5000, out, 65536);
  if (rc != 0) {
    free(out);
    return -1;
  }
  size_t kl = strlen(key);
  int found = -1;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    char *s = line;
    while (*s == ' ') s++;
    if (strncmp(s, key, kl) || (s[kl] != ' ' && s[kl] != '\0')) continue;
    s += kl;
    while (*s == ' ') s++;
    snprintf(val, len, "%s", s);
    found = 0;
    break;
  }
  free(out);
  return found;
}

long long la_td_status_ll(la_test_daemon_t *d, const char *key) {
  char v[256];
  if (la_td_status(d, key, v, sizeof v) != 0) return -1;
  char *end;
  long long x = strtoll(v, &end, 10);
  return end == v ? -1 : x;
}

int la_td_wait_status(la_test_daemon_t *d, const char *key, long long min,
                      int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    if (la_td_status_ll(d, key) >= min) return 0;
    if (la_td_now_ms() >= end) return -1;
    la_td_nap_ms(20);
  }
}

int la_td_wait_status_at_most(la_test_daemon_t *d, const char *key,
                              long long max, int timeout_ms) {
  long long end = la_td_now_ms() + timeout_ms;
  for (;;) {
    long long v = la_td_status_ll(d, key);
    if (v >= 0 && v <= max) return 0;
    if (la_td_now_ms() >= end) return -1;
    la_td_nap_ms(20);
  }
}

static int rm_one(const char *path, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

/* Markers that only a sanitizer runtime prints (our own log lines never
 * contain them). "runtime error:" is UBSan's per-report line. */
static const char *const la__san_markers[] = {
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "WARNING: ThreadSanitizer",
    "ERROR: ThreadSanitizer",
    "FATAL: ThreadSanitizer",
    "runtime error:",
    "SUMMARY: UndefinedBehaviorSanitizer",
    NULL};

static void la__san_atexit(void) {
  if (la__san_found == 0) return;
  fprintf(stderr,
          "la_test_daemon: %d daemon log(s) held a sanitizer report: "
          "failing this test program\n",
          la__san_found);
  fflush(stderr);
  _exit(1);
}

/* The earliest marker in b, or NULL. */
static const char *la__san_first(const char *b) {
  const char *first = NULL;
  for (int i = 0; la__san_markers[i]; i++) {
    const char *p = strstr(b, la__san_markers[i]);
    if (p && (!first || p < first)) first = p;
  }
  return first;
}

int la_td_sanitizer_report(const la_test_daemon_t *d, char *buf, size_t len) {
  if (buf && len) buf[0] = '\0';
  char *b = slurp(d->log, 0);
  if (!b) return 0;
  const char *p = la__san_first(b);
  if (p && buf && len) {
    const char *s = p, *e = strchr(p, '\n');
    while (s > b && s[-1] != '\n') s--;
    if (!e) e = p + strlen(p);
    snprintf(buf, len, "%.*s", (int)(e - s), s);
  }
  free(b);
  return p != NULL;
}

int la_td_sanitizer_reports(void) {
  return la__san_found;
}

/* Prints the report (from the line of its first marker, at most 8 KiB)
 * and copies the whole log to $LA_TEST_REPORT_DIR/<name>.<n>.log. */
static void la__san_complain(const la_test_daemon_t *d) {
  char *b = slurp(d->log, 0);
  if (!b) return;
  const char *p = la__san_first(b);
  if (!p) {
    free(b);
    return;
  }
  la__san_found++;
  const char *s = p;
  while (s > b && s[-1] != '\n') s--;
  size_t n = strlen(s);
  fprintf(stderr,
          "---- la_test_daemon: sanitizer report in the log of %s "
          "(%s) ----\n%.*s\n----\n",
          d->name, d->bin, (int)(n > 8192 ? 8192 : n), s);
  const char *dir = getenv("LA_TEST_REPORT_DIR");
  if (dir && *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.%ld.%d.log", dir, d->name,
             (long)getpid(), la__san_found);
    FILE *f = fopen(path, "w");
    if (f) {
      fputs(b, f);
      fclose(f);
    }
  }
  free(b);
}

void la_td_free(la_test_daemon_t *d) {
  if (!d) return;
  if (d->pid > 0) la_td_stop(d, 5000);
  la__san_complain(d);
  if (d->dir[0]) nftw(d->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(d);
}

int la_td_closed_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
  if (fd < 0) return -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

int la_td_find_on_path(const char *name, char *path, size_t len) {
  const char *p = getenv("PATH");
  while (p && *p) {
    size_t k = strcspn(p, ":");
    snprintf(path, len, "%.*s/%s", (int)k, p, name);
    if (access(path, X_OK) == 0) return 0;
    p += k + (p[k] == ':');
  }
  return -1;
}

/* CPU seconds (utime + stime) of the /proc stat file path, or -1. */
static double la__stat_cpu_seconds(const char *path) {
  char buf[2048];
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the command may hold spaces */
  unsigned long long ut = 0, st = 0;
  /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt
   * majflt cmajflt utime stime */
  if (!p ||
      sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

double la_td_cpu_seconds(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  return la__stat_cpu_seconds(path);
}

double la_td_main_thread_cpu_seconds(pid_t pid) {
  char path[80];
  snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)pid);
  return la__stat_cpu_seconds(path);
}

long la_td_vm_kb(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long v = -1;
  size_t fl = strlen(field);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, field, fl) && line[fl] == ':') v = atol(line + fl + 1);
  if (f) fclose(f);
  return v;
}

int la_td_sanitized(pid_t pid) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
  FILE *f = fopen(path, "r");
  int yes = 0;
  while (f && !yes && fgets(line, sizeof line, f))
    yes = strstr(line, "libasan") || strstr(line, "libtsan");
  if (f) fclose(f);
  return yes;
}
