/* SPDX-License-Identifier: BSD-3-Clause */
/* test_abuse.c: peers that misbehave against the REAL daemons.
 *
 * Each test starts la-localagent and/or la-globalagent as children
 * (la_test_daemon.h) on ephemeral ports in a temporary directory and plays a
 * hostile peer over real sockets: clients that never read their replies
 * (reply amplification), frames announcing huge sizes before a handshake,
 * floods of idle connections from one user (a forked child that drops to
 * uid 65534) or one address (127.0.0.2), and links planted where the
 * daemons write their pid and port files. It asserts what an operator would
 * see: the daemon closes the abuser with a log line, its memory (VmHWM and
 * VmRSS of the daemon child, from /proc) stays within what the limits allow,
 * a real application of another user (libla's LA_register, as root) still
 * registers and gets its cycles compacted, `lactl apps` still answers, and
 * no file outside the daemon's own is touched. Waits are bounded polls on
 * events (a closed socket, a log line, a status counter), never sleeps.
 * Tests that need a user switch skip when not run as root.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_codec.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_stack.h"

#define WAIT_MS 15000 /* longest wait for anything; a broken daemon fails */

#define CHECK(cond, ...) LA_TD_CHECK(dump_logs(), cond, __VA_ARGS__)

static struct {
  la_test_daemon_t *la, *ga;
  pid_t kids[8];
  int nkids;
  uint16_t agents_port, feed_port;
  char db[600];
} T;

static void dump_logs(void) {
  la_td_print_log_tail(T.la, 3000);
  la_td_print_log_tail(T.ga, 3000);
}

static int group_setup(void **state) {
  unsetenv("LA_AGENT");
  unsetenv("LA_COMPACT");
  unsetenv("LA_DISABLE");
  signal(SIGPIPE, SIG_IGN);
  return 0;
}

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  return 0;
}

static int teardown(void **state) {
  for (int i = 0; i < T.nkids; i++) {
    kill(T.kids[i], SIGKILL);
    while (waitpid(T.kids[i], NULL, 0) < 0 && errno == EINTR) {
    }
  }
  la_td_free(T.la);
  la_td_free(T.ga);
  memset(&T, 0, sizeof T);
  return 0;
}

/* Checks a memory bound unless the daemon is sanitized (then says so). */
#define CHECK_MEM(pid, cond, ...)                                    \
  do {                                                               \
    if (la_td_sanitized(pid))                                        \
      print_message("memory bound not checked: sanitized daemon\n"); \
    else                                                             \
      CHECK(cond, __VA_ARGS__);                                      \
  } while (0)

static uint16_t read_port(const char *path) {
  int p = la_td_read_port(path, WAIT_MS);
  CHECK(p > 0, "no port in %s", path);
  return (uint16_t)p;
}

/* Starts la-localagent (no GlobalAgent: traces go to its spool) with extra
 * options (NULL-terminated, may be NULL). */
static void start_la(const char *const *extra) {
  static char a[3][700];
  char pf[600], spool[600];
  T.la = la_td_new("la-localagent");
  if (!T.la) skip();
  la_td_path(T.la, "port", pf, sizeof pf);
  snprintf(a[0], sizeof a[0], "--agent.port_file=%s", pf);
  la_td_path(T.la, "spool", spool, sizeof spool);
  snprintf(a[1], sizeof a[1], "--global.spool_dir=%s", spool);
  /* every cycle compacted however fast they come (agent.max_backlog) */
  const char *args[24] = {"--agent.listen=127.0.0.1:0", a[0], a[1],
                          "--global.address=", "--global.spool_fsync=no",
                          "--agent.max_backlog=off"};
  int n = 6;
  for (int i = 0; extra && extra[i] && n < 23; i++) args[n++] = extra[i];
  args[n] = NULL;
  CHECK(la_td_start(T.la, args, pf, WAIT_MS) > 0,
        "la-localagent did not "
        "start");
}

/* Starts la-globalagent (no secret) with extra options. */
static void start_ga(const char *const *extra) {
  char apf[600], fpf[600];
  la_td_argv_t a;
  T.ga = la_td_new("la-globalagent");
  if (!T.ga) skip();
  la_td_path(T.ga, "agents.port", apf, sizeof apf);
  la_td_path(T.ga, "feed.port", fpf, sizeof fpf);
  la_td_path(T.ga, "la.db", T.db, sizeof T.db);
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agents.listen=127.0.0.1:0");
  la_td_argv_add(&a, "--feed.listen=127.0.0.1:0");
  la_ts_ga_args(&a, apf, fpf, T.db, NULL);
  la_td_argv_add(&a, "--store.fsync=no");
  la_td_argv_add(&a, "--stitch.timeout=2s");
  la_td_argv_extend(&a, extra);
  int port = la_td_start(T.ga, a.v, fpf, WAIT_MS);
  CHECK(port > 0, "la-globalagent did not start");
  T.feed_port = (uint16_t)port;
  T.agents_port = read_port(apf);
}

/* A non-blocking connection to 127.0.0.1:port from source address src
 * (NULL: any). Returns the fd or -1. */
static int open_from(const char *src, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  if (src) {
    inet_pton(AF_INET, src, &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
      close(fd);
      return -1;
    }
  }
  a.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

/* Milliseconds until end (monotonic), at least 0. */
static int left_ms(long long end) {
  long long l = end - la_td_now_ms();
  return l > 0 ? (int)l : 0;
}

/* Whether the daemon closed fd (FIN or reset), looked at without reading
 * what it sent. */
static int peer_closed(int fd, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  return poll(&p, 1, timeout_ms) == 1 &&
         (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Writes n bytes of buf, waiting (bounded) while the socket is full.
 * Returns 0, or -1 once the daemon closed the connection. */
static int push(int fd, const void *buf, size_t n) {
  const char *p = buf;
  long long end = la_td_now_ms() + WAIT_MS;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) return -1;
    if (peer_closed(fd, 0) || la_td_now_ms() > end) return -1;
    struct pollfd q = {.fd = fd, .events = POLLOUT};
    poll(&q, 1, 100);
  }
  return 0;
}

/* Sends `count` copies of a frame on each of n connections, round-robin,
 * never reading; returns how many connections the daemon closed by the end
 * of a bounded wait. */
static int amplify(int *fds, int n, const uint8_t *frame, size_t len,
                   int count) {
  enum { BATCH = 50 };
  uint8_t *batch = malloc(len * BATCH);
  assert_non_null(batch);
  for (int i = 0; i < BATCH; i++) memcpy(batch + i * len, frame, len);
  int *dead = calloc((size_t)n, sizeof *dead);
  assert_non_null(dead);
  for (int sent = 0; sent < count; sent += BATCH)
    for (int i = 0; i < n; i++)
      if (!dead[i] && push(fds[i], batch, len * BATCH) != 0) dead[i] = 1;
  int closed = 0;
  long long end = la_td_now_ms() + WAIT_MS; /* one bounded wait for all */
  for (int i = 0; i < n; i++)
    if (dead[i] || peer_closed(fds[i], left_ms(end))) closed++;
  free(batch);
  free(dead);
  return closed;
}

enum { NCONN = 10 }; /* connections of an amplification round */

/* An amplification round against daemon d: NCONN connections to port
 * send count copies of frame each and never read (amplify), then close;
 * waits until d's status row conn_row (its open connections) counts only
 * the status query itself. d's resident memory before (*rss0), at its
 * peak (*hwm) and after (*rss1), in kB. Returns how many connections the
 * daemon closed. */
static int amplify_round(la_test_daemon_t *d, uint16_t port,
                         const uint8_t *frame, size_t len, int count,
                         const char *conn_row, long *rss0, long *hwm,
                         long *rss1) {
  pid_t pid = la_td_pid(d);
  *rss0 = la_td_vm_kb(pid, "VmRSS");
  int fds[NCONN];
  for (int i = 0; i < NCONN; i++) {
    fds[i] = open_from(NULL, port);
    CHECK(fds[i] >= 0, "connect: %s", strerror(errno));
  }
  int closed = amplify(fds, NCONN, frame, len, count);
  *hwm = la_td_vm_kb(pid, "VmHWM");
  for (int i = 0; i < NCONN; i++) close(fds[i]);
  long long end = la_td_now_ms() + WAIT_MS;
  while (la_td_status_ll(d, conn_row) > 1 && la_td_now_ms() < end)
    poll(NULL, 0, 20);
  *rss1 = la_td_vm_kb(pid, "VmRSS");
  return closed;
}

/* -------------------------------------------------- reply amplification */

/* 10 tools send StatusRequests and never read: the LocalAgent closes them
 * at its output limit and its memory stays bounded. On main nothing closed
 * them and every reply was kept (the daemon grew by ~2 KB per request). */
static void test_la_status_amplification(void **state) {
  start_la(NULL);
  pid_t pid = la_td_pid(T.la);
  enum { COUNT = 12000 };
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  uint8_t frame[64];
  long len = la_frame_pack_into(LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base,
                                frame, sizeof frame);
  assert_true(len > 0);
  long rss0, hwm, rss1;
  int closed = amplify_round(T.la, la_td_port(T.la), frame, (size_t)len, COUNT,
                             "connections", &rss0, &hwm, &rss1);
  print_message(
      "LocalAgent, %d tools x %d status requests unread: VmRSS "
      "%ld kB before, VmHWM %ld kB, VmRSS %ld kB after close; "
      "%d/%d closed by the daemon\n",
      NCONN, COUNT, rss0, hwm, rss1, closed, NCONN);
  CHECK(closed == NCONN, "only %d of %d non-reading tools were closed", closed,
        NCONN);
  /* 10 x 256 KiB output limit, plus the reading buffers: far below 40 MB */
  CHECK_MEM(pid, hwm - rss0 < 40 * 1024, "VmHWM grew by %ld kB", hwm - rss0);
  CHECK(la_td_log_has(T.la, "the peer is not reading"),
        "no log line for the output limit");
  CHECK(la_td_alive(T.la), "the daemon died");
}

/* An application of one rank through a real LocalAgent linked to the
 * GlobalAgent: n elements per cycle, lossless, so the stored Trace-Set is
 * about 8n bytes. The child exits after `cycles` cycles. */
static pid_t run_app(const char *app_id, long n, int cycles) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    LA_setAgent(la_td_addr(T.la));
    LA_setAppId(app_id);
    LA_setCompaction("lossless");
    if (LA_register("abuse", 0, 1, n) != 0) _exit(2);
    uint64_t x = 88172645463325252ull;
    for (int c = 0; c < cycles; c++) {
      for (long e = 0; e < n; e++) {
        LA_startProbe(e);
        for (int k = (int)((x ^= x << 13, x ^= x >> 7, x ^= x << 17) & 63);
             k > 0; k--)
          __asm__ volatile("");
        LA_stopProbe(e);
      }
      LA_dataXfer();
    }
    _exit(LA_finalize() == 0 ? 0 : 3);
  }
  T.kids[T.nkids++] = pid;
  return pid;
}

/* Asks the feed for the stored Trace-Set of app until there is one; returns
 * the reply's frame size. */
static size_t wait_traceset(const char *app) {
  long long end = la_td_now_ms() + WAIT_MS;
  La__Query q = LA__QUERY__INIT;
  q.has_feed_protocol = 1;
  q.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  q.what = "traceset";
  q.app_id = (char *)app;
  for (;;) {
    int fd = la_tcp_connect("127.0.0.1", T.feed_port, 2000);
    CHECK(fd >= 0, "feed connect");
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    char why[200];
    size_t size = 0;
    if (la_send_msg(fd, LA__MSG_TYPE__MSG_QUERY, &q.base, 2000) == 0 &&
        la_recv_msg(fd, 1u << 30, 5000, &type, &m, why, sizeof why) == 0) {
      if (type == LA__MSG_TYPE__MSG_QUERY_REPLY &&
          ((La__QueryReply *)m)->status == 0)
        size = la_frame_size(m);
      la_msg_free(m);
    }
    close(fd);
    if (size) return size;
    CHECK(la_td_now_ms() < end, "no Trace-Set of %s stored", app);
    poll(NULL, 0, 50);
  }
}

/* 10 connections repeat a Trace-Set query on the (unauthenticated) feed port
 * and never read: the GlobalAgent ends them at feed.max_output (default,
 * 16 MiB) with an Error, memory
 * stays bounded and returns after they are gone. On main the replies piled
 * up (1.85 GB reported). */
static void test_ga_feed_amplification(void **state) {
  /* default feed.max_output (16 MiB); the feed's memory bounds out of the
   * way (test_feed_memory.c tests them) */
  const char *gx[] = {"--feed.queue_bytes=4M", "--feed.memory=1G",
                      "--feed.memory_per_address=1G", NULL};
  start_ga(gx);
  char global[64], gopt[100];
  snprintf(global, sizeof global, "127.0.0.1:%u", T.agents_port);
  snprintf(gopt, sizeof gopt, "--global.address=%s", global);
  const char *lx[] = {gopt, NULL};
  start_la(lx);
  pid_t app = run_app("amp-1", 100000, 1);
  int st = -1;
  while (waitpid(app, &st, 0) < 0 && errno == EINTR) {
  }
  T.nkids = 0;
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the application failed "
        "(status %d)",
        st);
  size_t reply = wait_traceset("amp-1");
  pid_t pid = la_td_pid(T.ga);
  enum { COUNT = 200 };
  La__Query q = LA__QUERY__INIT;
  q.has_feed_protocol = 1;
  q.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  q.what = "traceset";
  q.app_id = "amp-1";
  uint8_t frame[256];
  long len =
      la_frame_pack_into(LA__MSG_TYPE__MSG_QUERY, &q.base, frame, sizeof frame);
  assert_true(len > 0);
  long rss0, hwm, rss1;
  int closed = amplify_round(T.ga, T.feed_port, frame, (size_t)len, COUNT,
                             "subscribers", &rss0, &hwm, &rss1);
  /* freed memory goes back to the system at most once a second after a
   * burst of closes (malloc_trim): a bounded wait for it */
  long long until = la_td_now_ms() + 5000;
  while (rss1 - rss0 >= 64 * 1024 && la_td_now_ms() < until) {
    poll(NULL, 0, 100);
    rss1 = la_td_vm_kb(pid, "VmRSS");
  }
  print_message(
      "GlobalAgent feed, %d connections x %d Trace-Set queries "
      "(%zu-byte replies) unread: VmRSS %ld kB before, VmHWM %ld "
      "kB, VmRSS %ld kB after close; %d/%d closed\n",
      NCONN, COUNT, reply, rss0, hwm, rss1, closed, NCONN);
  CHECK(closed == NCONN, "only %d of %d non-reading connections closed", closed,
        NCONN);
  CHECK(la_td_log_has(T.ga, "the peer is not reading"),
        "no log line for the output limit");
  /* per connection the limit (16 MiB) plus the reply being built and the
   * one that did not fit; 32 MiB for everything else */
  long bound = NCONN * (16384 + 2 * (long)(reply / 1024)) + 32768;
  CHECK_MEM(pid, hwm - rss0 < bound, "VmHWM grew by %ld kB (bound %ld kB)",
            hwm - rss0, bound);
  CHECK_MEM(pid, rss1 - rss0 < 64 * 1024,
            "VmRSS still %ld kB above the "
            "start after the connections closed",
            rss1 - rss0);
}

/* -------------------------------------------- frames before a handshake */

/* A frame header announcing `announce` bytes of type `type`, then `body`
 * bytes of it, on each of n connections; returns how many the daemon closed
 * before the whole body went out. */
static int big_frames(uint16_t port, int n, uint16_t type, uint32_t announce,
                      size_t body) {
  uint8_t hdr[8] = {(uint8_t)(announce >> 24),
                    (uint8_t)(announce >> 16),
                    (uint8_t)(announce >> 8),
                    (uint8_t)announce,
                    (uint8_t)(type >> 8),
                    (uint8_t)type,
                    0,
                    0};
  size_t chunk = 65536;
  uint8_t *junk = calloc(1, chunk);
  assert_non_null(junk);
  int closed = 0;
  int fds[16];
  for (int i = 0; i < n; i++) {
    fds[i] = open_from(NULL, port);
    CHECK(fds[i] >= 0, "connect: %s", strerror(errno));
    push(fds[i], hdr, sizeof hdr);
  }
  long long end = la_td_now_ms() + WAIT_MS; /* one bounded wait for all */
  for (int i = 0; i < n; i++) {
    int dead = 0;
    for (size_t sent = 0; sent < body && !dead; sent += chunk)
      dead = push(fds[i], junk, body - sent < chunk ? body - sent : chunk);
    if (dead || peer_closed(fds[i], left_ms(end))) closed++;
  }
  for (int i = 0; i < n; i++) close(fds[i]);
  free(junk);
  return closed;
}

/* 8 unauthenticated connections announce 64 MiB frames on the agents port
 * and send 16 MiB of each: closed at the header, memory stays flat. On main
 * each was buffered (8 x 16 MiB and more). */
static void test_ga_preauth_frames(void **state) {
  const char *gx[] = {"--agents.handshake_timeout=60s", NULL};
  start_ga(gx);
  pid_t pid = la_td_pid(T.ga);
  long rss0 = la_td_vm_kb(pid, "VmRSS");
  int closed = big_frames(T.agents_port, 8, LA__MSG_TYPE__MSG_HELLO, 64u << 20,
                          16u << 20);
  long hwm = la_td_vm_kb(pid, "VmHWM");
  print_message(
      "GlobalAgent agents port, 8 x 64 MiB frames before "
      "authentication: VmRSS %ld kB before, VmHWM %ld kB; %d/8 "
      "closed at the header\n",
      rss0, hwm, closed);
  CHECK(closed == 8, "only %d of 8 connections were closed", closed);
  CHECK(la_td_log_has(T.ga, "frame larger than the maximum"), "no log line");
  CHECK_MEM(pid, hwm - rss0 < 8 * 1024, "VmHWM grew by %ld kB", hwm - rss0);
}

/* Before registration the LocalAgent takes small frames only; before a
 * request the feed port too. A 32 KiB frame (under both ports' normal
 * maximum of 64 KiB) is refused at its header, long before the handshake
 * timeout; on main the daemons waited for the rest of it. */
static void test_small_frames_before_handshake(void **state) {
  const char *lx[] = {"--agent.handshake_timeout=60s", NULL};
  start_la(lx);
  const char *gx[] = {"--agents.handshake_timeout=60s", NULL};
  start_ga(gx);
  int c1 = big_frames(la_td_port(T.la), 1, LA__MSG_TYPE__MSG_REGISTER_REQUEST,
                      32768, 16384);
  CHECK(c1 == 1, "the LocalAgent kept a 32 KiB frame before registration");
  CHECK(la_td_log_has(T.la, "frame larger than the maximum"), "no LA log");
  int c2 = big_frames(T.feed_port, 1, LA__MSG_TYPE__MSG_QUERY, 32768, 16384);
  CHECK(c2 == 1, "the feed kept a 32 KiB frame before a request");
  CHECK(la_td_log_has(T.ga, "frame larger than the maximum"), "no GA log");
}

/* ------------------------------------------------------ slot exhaustion */

/* A child that drops to uid 65534 and opens n connections to port (from
 * address src), each sending one frame, then holds them until killed. It
 * writes how many it opened to the pipe. */
static pid_t flooder(const char *src, uint16_t port, uid_t uid, int n,
                     const uint8_t *frame, size_t len, int *res) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    struct rlimit rl = {4096, 4096};
    setrlimit(RLIMIT_NOFILE, &rl);
    if (uid && (setgid(uid) != 0 || setuid(uid) != 0)) _exit(2);
    int opened = 0;
    for (int i = 0; i < n; i++) {
      int fd = open_from(src, port);
      if (fd < 0) continue;
      opened++;
      if (send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len) continue;
    }
    if (write(p[1], &opened, sizeof opened) != sizeof opened) _exit(3);
    for (;;) pause();
  }
  close(p[1]);
  T.kids[T.nkids++] = pid;
  *res = p[0];
  return pid;
}

static int read_int(int fd) {
  int v = -1;
  struct pollfd q = {.fd = fd, .events = POLLIN};
  if (poll(&q, 1, WAIT_MS * 2) == 1 && read(fd, &v, sizeof v) != sizeof v)
    v = -1;
  close(fd);
  return v;
}

/* 600 tool connections of one user (uid 65534), each idle after one
 * StatusRequest, with the LocalAgent's default limits: the user gets its
 * share, the rest is refused (counted, a few log lines), and a real
 * application of another user (root) registers and has its cycles
 * compacted. On main the 600 held all 512 slots and the application ran
 * unprofiled. */
static void test_la_uid_flood(void **state) {
  if (geteuid() != 0) {
    print_message("skip: needs root to switch users\n");
    skip();
  }
  start_la(NULL);
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  uint8_t frame[64];
  long len = la_frame_pack_into(LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base,
                                frame, sizeof frame);
  int res;
  flooder(NULL, la_td_port(T.la), 65534, 600, frame, (size_t)len, &res);
  int opened = read_int(res);
  CHECK(opened > 0, "the flooder opened no connection");
  pid_t app = fork();
  assert_true(app >= 0);
  if (app == 0) {
    LA_setAgent(la_td_addr(T.la));
    LA_setAppId("fair-1");
    if (LA_register("fair", 0, 1, 1000) != 0) _exit(2);
    for (int c = 0; c < 3; c++) {
      for (long e = 0; e < 1000; e++) {
        LA_startProbe(e);
        LA_stopProbe(e);
      }
      LA_dataXfer();
    }
    _exit(LA_finalize() == 0 ? 0 : 3);
  }
  int st = -1;
  while (waitpid(app, &st, 0) < 0 && errno == EINTR) {
  }
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "the root application could "
        "not register or finalize during the flood (status %d)",
        st);
  CHECK(la_td_wait_status(T.la, "cycles_compacted", 3, WAIT_MS) == 0,
        "the application's cycles were not compacted");
  CHECK(la_td_wait_status(T.la, "connections_refused", 600 - 128, WAIT_MS) == 0,
        "the flood was not refused beyond the user's share (%lld)",
        la_td_status_ll(T.la, "connections_refused"));
  pid_t pid = la_td_pid(T.la);
  print_message(
      "LocalAgent, 600 idle connections of uid 65534: %lld "
      "refused, %d refusal log lines, VmRSS %ld kB; the root "
      "application registered and 3 cycles were compacted\n",
      la_td_status_ll(T.la, "connections_refused"),
      la_td_log_count(T.la, "refused"), la_td_vm_kb(pid, "VmRSS"));
  CHECK(la_td_log_count(T.la, "refused") <= 20, "%d refusal log lines",
        la_td_log_count(T.la, "refused"));
}

/* A tool connection that stops asking is closed after idle_timeout. On main
 * a tool connection never timed out (and the key did not exist). */
static void test_la_tool_idle_timeout(void **state) {
  const char *lx[] = {"--agent.idle_timeout=300ms", NULL};
  start_la(lx);
  int fd = la_tcp_connect("127.0.0.1", la_td_port(T.la), 2000);
  CHECK(fd >= 0, "connect");
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  assert_int_equal(
      la_send_msg(fd, LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base, 2000), 0);
  CHECK(peer_closed(fd, WAIT_MS), "an idle tool connection stayed open");
  close(fd);
  CHECK(la_td_wait_log(T.la, "idle for 300 ms", WAIT_MS) == 0, "no log");
}

/* 300 idle query connections from 127.0.0.2 on the feed port, default
 * limits: `lactl apps` from 127.0.0.1 still answers. On main the flood held
 * all 256 feed slots and lactl failed. */
static void test_feed_address_flood(void **state) {
  start_ga(NULL);
  La__Query q = LA__QUERY__INIT;
  q.has_feed_protocol = 1;
  q.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  q.what = "apps";
  uint8_t frame[64];
  long len =
      la_frame_pack_into(LA__MSG_TYPE__MSG_QUERY, &q.base, frame, sizeof frame);
  int res;
  flooder("127.0.0.2", T.feed_port, 0, 300, frame, (size_t)len, &res);
  int opened = read_int(res);
  CHECK(opened > 0, "the flooder opened no connection");
  char lactl[600], addr[64], out[4096];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(addr, sizeof addr, "127.0.0.1:%u", T.feed_port);
  const char *argv[] = {lactl, "apps", "--global", addr, NULL};
  int rc = la_td_run(argv, NULL, WAIT_MS, out, sizeof out);
  print_message(
      "GlobalAgent feed, 300 idle connections from 127.0.0.2: "
      "%lld refused; lactl apps exit %d\n",
      la_td_status_ll(T.ga, "subscribers_refused"), rc);
  CHECK(rc == 0, "lactl apps failed during the flood: %s", out);
  CHECK(la_td_wait_status(T.ga, "subscribers_refused", 300 - 64, WAIT_MS) == 0,
        "the flood was not refused beyond the address's share");
}

/* 20 connections from 127.0.0.2 that never authenticate on the agents
 * port: one address gets agents.max_handshakes_per_address (8) of them, the
 * rest are refused and counted. On main all 20 were kept until the
 * handshake timeout. */
static void test_ga_handshakes_per_address(void **state) {
  const char *gx[] = {"--agents.handshake_timeout=60s", NULL};
  start_ga(gx);
  int fds[20], refused = 0;
  for (int i = 0; i < 20; i++) {
    fds[i] = open_from("127.0.0.2", T.agents_port);
    CHECK(fds[i] >= 0, "connect: %s", strerror(errno));
  }
  long long end = la_td_now_ms() + WAIT_MS; /* one bounded wait for all */
  for (int i = 0; i < 20; i++)
    if (peer_closed(fds[i], i < 8 ? 0 : left_ms(end))) refused++;
  long long counted = la_td_status_ll(T.ga, "agents_refused");
  print_message(
      "GlobalAgent agents port, 20 unauthenticated connections "
      "from 127.0.0.2: %d closed at once, %lld refusals counted\n",
      refused, counted);
  CHECK(refused >= 12, "only %d of 20 were refused", refused);
  CHECK(counted >= 12, "%lld refusals counted", counted);
  CHECK(la_td_log_has(T.ga, "max_handshakes_per_address"), "no log line");
  for (int i = 0; i < 20; i++) close(fds[i]);
}

/* A feed connection that made a query and then stays silent is closed after
 * feed.idle_timeout. On main it stayed open for ever (and the key did not
 * exist). */
static void test_feed_idle_timeout(void **state) {
  const char *gx[] = {"--feed.idle_timeout=300ms", NULL};
  start_ga(gx);
  int fd = la_tcp_connect("127.0.0.1", T.feed_port, 2000);
  CHECK(fd >= 0, "connect");
  La__Query q = LA__QUERY__INIT;
  q.has_feed_protocol = 1;
  q.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  q.what = "apps";
  assert_int_equal(la_send_msg(fd, LA__MSG_TYPE__MSG_QUERY, &q.base, 2000), 0);
  uint16_t type;
  ProtobufCMessage *m = NULL;
  char why[200];
  assert_int_equal(
      la_recv_msg(fd, 1u << 20, WAIT_MS, &type, &m, why, sizeof why), 0);
  la_msg_free(m);
  CHECK(peer_closed(fd, WAIT_MS), "an idle query connection stayed open");
  close(fd);
  CHECK(la_td_wait_log(T.ga, "idle for 300 ms", WAIT_MS) == 0, "no log");
}

/* ----------------------------------------------------------------- files */

/* Links planted at the temporary names beside the port and pid files are
 * not followed (their targets stay untouched), the files hold the right
 * numbers, and the store and its -wal/-shm files are private. On main the
 * daemon wrote through "<port_file>.tmp" into the link's target and the
 * store was world-readable. */
static void test_files_not_followed(void **state) {
  T.la = la_td_new("la-localagent");
  if (!T.la) skip();
  char pf[600], pidf[600], victim[600], link1[700], link2[700];
  la_td_path(T.la, "port", pf, sizeof pf);
  la_td_path(T.la, "la.pid", pidf, sizeof pidf);
  la_td_path(T.la, "victim", victim, sizeof victim);
  FILE *f = fopen(victim, "w");
  assert_non_null(f);
  fputs("precious\n", f);
  fclose(f);
  snprintf(link1, sizeof link1, "%s.tmp", pf);
  snprintf(link2, sizeof link2, "%s.tmp", pidf);
  assert_int_equal(symlink(victim, link1), 0);
  assert_int_equal(symlink(victim, link2), 0);
  char a[2][700], spool[600], sp[700];
  snprintf(a[0], sizeof a[0], "--agent.port_file=%s", pf);
  snprintf(a[1], sizeof a[1], "--agent.pid_file=%s", pidf);
  la_td_path(T.la, "spool", spool, sizeof spool);
  snprintf(sp, sizeof sp, "--global.spool_dir=%s", spool);
  const char *args[] = {"--agent.listen=127.0.0.1:0", a[0], a[1], sp,
                        "--global.address=",          NULL};
  int port = la_td_start(T.la, args, pf, WAIT_MS);
  CHECK(port > 0, "la-localagent did not start");
  char buf[64] = "";
  f = fopen(victim, "r");
  assert_non_null(f);
  CHECK(fgets(buf, sizeof buf, f) && !strcmp(buf, "precious\n"),
        "the link's target was overwritten: '%s'", buf);
  fclose(f);
  CHECK(read_port(pf) == port, "port file");
  struct stat st;
  assert_int_equal(stat(pf, &st), 0);
  CHECK((st.st_mode & 0777) == 0644, "port file mode %o", st.st_mode & 0777);
  long long end = la_td_now_ms() + WAIT_MS;
  while (stat(pidf, &st) != 0 && la_td_now_ms() < end) poll(NULL, 0, 10);
  f = fopen(pidf, "r");
  CHECK(f != NULL, "no pid file");
  int p = 0;
  CHECK(fscanf(f, "%d", &p) == 1 && p == la_td_pid(T.la), "pid file %d", p);
  fclose(f);

  start_ga(NULL); /* the store: la.db and its WAL files, 0600 */
  const char *sfx[] = {"", "-wal", "-shm"};
  int seen = 0;
  for (int i = 0; i < 3; i++) {
    char path[700];
    snprintf(path, sizeof path, "%s%s", T.db, sfx[i]);
    if (stat(path, &st) != 0) continue;
    seen++;
    CHECK((st.st_mode & 077) == 0, "%s has mode %o", path, st.st_mode & 0777);
  }
  CHECK(seen >= 2, "the store files were not found (%d)", seen);
}

/* Sends frame (len bytes) and, in the same write, `junk` bytes of a frame
 * the daemon refuses at its header, on a fresh connection to port; then
 * reads the first message back. Returns 1 when it is want_type with a
 * message containing want (the refusal's text), else 0 (what came instead
 * in got). */
static int refusal_read(uint16_t port, const uint8_t *frame, size_t len,
                        size_t junk, uint16_t want_type, const char *want,
                        char *got, size_t got_len) {
  static uint8_t buf[1 << 17];
  int fd = open_from("127.0.0.1", port);
  if (fd < 0) {
    snprintf(got, got_len, "connect: %s", strerror(errno));
    return 0;
  }
  memcpy(buf, frame, len);
  memset(buf + len, 0xff, junk); /* a header announcing 4 GiB */
  int ok = 0;
  if (send(fd, buf, len + junk, MSG_NOSIGNAL) != (ssize_t)(len + junk)) {
    snprintf(got, got_len, "send: %s", strerror(errno));
  } else {
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    char why[200] = "";
    int rc = la_recv_msg(fd, 1u << 20, WAIT_MS, &type, &m, why, sizeof why);
    const char *text = NULL;
    if (rc == 0 && type == LA__MSG_TYPE__MSG_AUTH_RESULT)
      text = ((La__AuthResult *)m)->message;
    if (rc == 0 && type == LA__MSG_TYPE__MSG_REGISTER_REPLY)
      text = ((La__RegisterReply *)m)->message;
    if (rc == 0 && type == LA__MSG_TYPE__MSG_ERROR)
      text = ((La__Error *)m)->message;
    ok = rc == 0 && type == want_type && text && strstr(text, want);
    if (!ok)
      snprintf(got, got_len, "rc %d (%s), %s '%s'", rc, why,
               rc == 0 ? la_msg_name(type) : "-", text ? text : "");
    la_msg_free(m);
  }
  close(fd);
  return ok;
}

/* A peer refused at the GlobalAgent's agents port (a frame before Hello)
 * or at the LocalAgent's RegService (a registration of a segment that is
 * not there) that sends 64 KiB more right behind its first frame reads the
 * refusal's text, 50 times of 50: the daemons shut their sending side down
 * once the refusal is written, read and drop what still comes, and close
 * when the peer does (la_uvconn.c, lingering close). A plain close would
 * answer the unread bytes with a reset that can discard the refusal before
 * the peer reads it. */
static void test_refusals_read(void **state) {
  enum { TRIES = 50, JUNK = 64 * 1024 };
  start_ga(NULL);
  start_la(NULL);
  uint16_t la_port = 0;
  {
    const char *a = la_td_addr(T.la), *c = strrchr(a, ':');
    la_port = (uint16_t)atoi(c + 1);
  }
  La__RankEnd re = LA__RANK_END__INIT;
  re.app_id = "x";
  uint8_t f1[256], f2[512];
  long l1 = la_frame_pack_into(LA__MSG_TYPE__MSG_RANK_END, &re.base, f1,
                               sizeof f1);
  La__RegisterRequest rr = LA__REGISTER_REQUEST__INIT;
  rr.protocol = LA_PROTOCOL_VERSION;
  rr.app_id = "refusal-read";
  rr.app_name = "refusal-read";
  rr.nprocs = 1;
  rr.pid = (int32_t)getpid();
  rr.shm_id = 0x7ffffff0; /* no such segment */
  rr.sem_id = 0x7ffffff0;
  rr.n_elements = 10;
  rr.n_buffers = 2;
  rr.metric = "time";
  rr.unit = "ns";
  long l2 = la_frame_pack_into(LA__MSG_TYPE__MSG_REGISTER_REQUEST, &rr.base, f2,
                               sizeof f2);
  assert_true(l1 > 0 && l2 > 0);
  int ga_ok = 0, la_ok = 0;
  char got[400] = "", ga_got[400] = "", la_got[400] = "";
  for (int i = 0; i < TRIES; i++) {
    if (refusal_read(T.agents_port, f1, (size_t)l1, JUNK,
                     LA__MSG_TYPE__MSG_AUTH_RESULT, "expected Hello", got,
                     sizeof got))
      ga_ok++;
    else
      snprintf(ga_got, sizeof ga_got, "%s", got);
    if (refusal_read(la_port, f2, (size_t)l2, JUNK,
                     LA__MSG_TYPE__MSG_REGISTER_REPLY, "", got, sizeof got))
      la_ok++;
    else
      snprintf(la_got, sizeof la_got, "%s", got);
  }
  print_message("refusal read: GlobalAgent %d of %d, LocalAgent %d of %d\n",
                ga_ok, TRIES, la_ok, TRIES);
  CHECK(ga_ok == TRIES, "GlobalAgent: %d of %d; last failure: %s", ga_ok,
        TRIES, ga_got);
  CHECK(la_ok == TRIES, "LocalAgent: %d of %d; last failure: %s", la_ok,
        TRIES, la_got);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_la_status_amplification),
      T(test_ga_feed_amplification),
      T(test_ga_preauth_frames),
      T(test_small_frames_before_handshake),
      T(test_la_uid_flood),
      T(test_la_tool_idle_timeout),
      T(test_feed_address_flood),
      T(test_ga_handshakes_per_address),
      T(test_refusals_read),
      T(test_feed_idle_timeout),
      T(test_files_not_followed),
#undef T
  };
  return cmocka_run_group_tests(tests, group_setup, NULL);
}
