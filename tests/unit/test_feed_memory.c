/* SPDX-License-Identifier: BSD-3-Clause */
/* test_feed_memory.c: the GlobalAgent's memory under feed clients that ask
 * and never read, against the REAL daemon.
 *
 * la-globalagent and la-localagent run as children (la_test_daemon.h) on
 * ephemeral ports; a real application (libla, a forked child) stores a
 * large Trace-Set through them; then hostile feed clients on raw sockets
 * ask for it (or for the status) and never read. Asserted is what an
 * operator sees: the daemon's resident memory (VmRSS / VmHWM of the child,
 * from /proc) stays under feed.memory plus a stated margin, a well-behaved
 * client still gets its answer, a client over its output limit reads an
 * Error naming the limit followed by an orderly end of stream (not a
 * reset), and memory goes back near where it was once the clients left.
 * Memory bounds are not checked against a sanitized daemon (its allocator
 * quarantines freed memory); the behaviour is.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "la_client.h"

#include "la.h"
#include "la_codec.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_stack.h"

#define WAIT_MS 30000

#define CHECK(cond, ...) LA_TD_CHECK(dump_logs(), cond, __VA_ARGS__)

static struct {
  la_test_daemon_t *la, *ga;
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

static int teardown(void **state) {
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

/* Starts la-globalagent with extra options (NULL-terminated), and, with
 * with_la, a LocalAgent linked to it. */
static void start_local(void);
static void start(const char *const *extra, int with_la) {
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
  la_td_argv_extend(&a, extra);
  int port = la_td_start(T.ga, a.v, fpf, WAIT_MS);
  CHECK(port > 0, "la-globalagent did not start");
  T.feed_port = (uint16_t)port;
  int ap = la_td_read_port(apf, WAIT_MS);
  CHECK(ap > 0, "no agents port");
  T.agents_port = (uint16_t)ap;
  if (with_la) start_local();
}

/* Starts the LocalAgent linked to the GlobalAgent started. */
static void start_local(void) {
  la_td_argv_t a;
  T.la = la_td_new("la-localagent");
  if (!T.la) skip();
  char pf[600], spool[600];
  la_td_path(T.la, "port", pf, sizeof pf);
  la_td_path(T.la, "spool", spool, sizeof spool);
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agent.listen=127.0.0.1:0");
  la_td_argv_add(&a, "--agent.port_file=%s", pf);
  la_td_argv_add(&a, "--global.spool_dir=%s", spool);
  la_td_argv_add(&a, "--global.address=127.0.0.1:%u", T.agents_port);
  la_td_argv_add(&a, "--global.spool_fsync=no");
  la_td_argv_add(&a, "--agent.max_backlog=off"); /* every cycle compacted */
  CHECK(la_td_start(T.la, a.v, pf, WAIT_MS) > 0, "la-localagent did not start");
}

/* One rank of n elements, one cycle, lossless: a stored Trace-Set of
 * several bytes per element. Waits for the child. */
static void run_app(const char *app_id, long n) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    LA_setAgent(la_td_addr(T.la));
    LA_setAppId(app_id);
    LA_setCompaction("lossless");
    if (LA_register("feedmem", 0, 1, n) != 0) _exit(2);
    uint64_t x = 88172645463325252ull;
    for (long e = 0; e < n; e++) {
      LA_startProbe(e);
      for (int k = (int)((x ^= x << 13, x ^= x >> 7, x ^= x << 17) & 63); k > 0;
           k--)
        __asm__ volatile("");
      LA_stopProbe(e);
    }
    LA_dataXfer();
    _exit(LA_finalize() == 0 ? 0 : 3);
  }
  int st = -1;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the application failed (%d)",
        st);
}

/* A Query "traceset" of app (sets_version 2 when parts: the set follows in
 * parts). */
static La__Query set_query(const char *app, int parts) {
  La__Query q = LA__QUERY__INIT;
  q.has_feed_protocol = 1;
  q.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  q.what = "traceset";
  q.app_id = (char *)app;
  if (parts) {
    q.has_sets_version = 1;
    q.sets_version = LA_FEED_SETS_VERSION;
  }
  return q;
}

/* Asks the feed (from 127.0.0.1) for app's set as an old client does (the
 * set inside the QueryReply). Returns the reply's status and, through
 * *size, its frame size; *ms the time it took. */
static int ask_set(const char *app, size_t *size, long long *ms) {
  long long t0 = la_td_now_ms();
  La__Query q = set_query(app, 0);
  int fd = la_tcp_connect("127.0.0.1", T.feed_port, 5000);
  CHECK(fd >= 0, "feed connect");
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  char why[200];
  int status = -1000;
  *size = 0;
  if (la_send_msg(fd, LA__MSG_TYPE__MSG_QUERY, &q.base, 5000) == 0 &&
      la_recv_msg(fd, 1u << 30, WAIT_MS, &type, &m, why, sizeof why) == 0) {
    if (type == LA__MSG_TYPE__MSG_QUERY_REPLY) {
      La__QueryReply *r = (La__QueryReply *)m;
      status = r->status;
      if (status == 0 && r->n_sets == 1) *size = la_frame_size(m);
      if (status != 0) print_message("reply: %s\n", r->message);
    }
    la_msg_free(m);
  }
  close(fd);
  *ms = la_td_now_ms() - t0;
  return status;
}

/* A connection to 127.0.0.1:port from src, with a small receive buffer
 * (what the kernel keeps for a client that does not read stays small). */
static int open_from(const char *src, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int small = 8192;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
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
  return fd;
}

/* 60 connections from 127.0.0.2 each ask twice for a Trace-Set of several
 * MB (half as old clients, the set inside the reply; half in parts) and
 * never read, with feed.memory = 64M and feed.memory_per_address = 32M:
 * the daemon's peak resident memory grows by less than feed.memory plus a
 * margin of 4 sets and 32 MiB (what two pool jobs load and encode, the
 * store's cache), and a client from 127.0.0.1 still gets the set. Before,
 * every connection's output limit was max(feed.max_output,
 * feed.queue_bytes) and nothing bounded them together: each held its
 * replies, hundreds of MB in all. */
static void test_set_flood_bounded(void **state) {
  enum { CONNS = 60, ASKS = 2, ELEMENTS = 600000 };
  const char *gx[] = {"--feed.memory=64M", "--feed.memory_per_address=32M",
                      NULL};
  start(gx, 1);
  run_app("big-1", ELEMENTS);
  size_t set = 0;
  long long ms = 0;
  long long end = la_td_now_ms() + WAIT_MS;
  while (ask_set("big-1", &set, &ms) != 0 || !set) {
    CHECK(la_td_now_ms() < end, "the Trace-Set was not stored");
    la_td_nap_ms(100);
  }
  pid_t pid = la_td_pid(T.ga);
  long rss0 = la_td_vm_kb(pid, "VmRSS");
  long long q0 = la_td_status_ll(T.ga, "queries");
  int fds[CONNS];
  for (int i = 0; i < CONNS; i++) {
    fds[i] = open_from("127.0.0.2", T.feed_port);
    CHECK(fds[i] >= 0, "connect: %s", strerror(errno));
    La__Query q = set_query("big-1", i % 2);
    uint8_t frame[256];
    long len = la_frame_pack_into(LA__MSG_TYPE__MSG_QUERY, &q.base, frame,
                                  sizeof frame);
    assert_true(len > 0);
    for (int k = 0; k < ASKS; k++)
      CHECK(send(fds[i], frame, (size_t)len, MSG_NOSIGNAL) == len, "send");
  }
  /* every first query taken (their jobs queued before ours) */
  CHECK(la_td_wait_status(T.ga, "queries", q0 + CONNS, WAIT_MS) == 0,
        "the queries were not handled (%lld)",
        la_td_status_ll(T.ga, "queries"));
  size_t got = 0;
  int st = ask_set("big-1", &got, &ms);
  /* the second queries too, then what the daemon holds */
  la_td_wait_status(T.ga, "queries", q0 + CONNS * ASKS + 1, WAIT_MS);
  size_t again = 0;
  long long ms2 = 0;
  int st2 = ask_set("big-1", &again, &ms2);
  long hwm = la_td_vm_kb(pid, "VmHWM"), rss1 = la_td_vm_kb(pid, "VmRSS");
  long bound = 64 * 1024 + 4 * (long)(set / 1024) + 32 * 1024;
  print_message(
      "GlobalAgent feed, %d connections x %d asks for a %zu-byte Trace-Set, "
      "never read (feed.memory 64M, per address 32M): VmRSS %ld kB before, "
      "VmHWM %ld kB (+%ld kB, bound +%ld kB), VmRSS %ld kB during; the "
      "client of 127.0.0.1: status %d in %lld ms, then %d in %lld ms\n",
      CONNS, ASKS, set, rss0, hwm, hwm - rss0, bound, rss1, st, ms, st2, ms2);
  CHECK(st == 0 && got == set,
        "the well-behaved client got status %d, %zu "
        "bytes",
        st, got);
  CHECK(st2 == 0 && again == set,
        "the well-behaved client's second ask got "
        "status %d, %zu bytes",
        st2, again);
  CHECK_MEM(pid, hwm - rss0 < bound, "VmHWM grew by %ld kB (bound %ld kB)",
            hwm - rss0, bound);
  CHECK(la_td_log_has(T.ga, "feed.memory"), "no log line naming feed.memory");
  for (int i = 0; i < CONNS; i++) close(fds[i]);
  CHECK(la_td_alive(T.ga), "the daemon died");
}

/* Reads frames from fd until end of stream or an error: the last frame's
 * type and (an Error's) message into msg. Returns 0 when the stream ended
 * orderly (recv returned 0), 1 on a reset or another error, -1 when it
 * stayed open past the wait. *frames counts the frames read. */
static int read_to_end(int fd, uint16_t *last, char *msg, size_t len,
                       int *frames) {
  *frames = 0;
  *last = 0;
  msg[0] = '\0';
  for (;;) {
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    char why[200];
    int rc = la_recv_msg(fd, 1u << 24, WAIT_MS, &type, &m, why, sizeof why);
    if (rc != 0) {
      char b;
      ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT);
      if (r == 0) return 0;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
      /* la_recv_msg stops at end of stream too: tell it from a reset */
      return (rc == LA_ETIMEDOUT) ? -1 : (r < 0 && errno == ECONNRESET) ? 1 : 0;
    }
    (*frames)++;
    *last = type;
    if (type == LA__MSG_TYPE__MSG_ERROR)
      snprintf(msg, len, "%s", ((La__Error *)m)->message);
    la_msg_free(m);
  }
}

/* A status client that sends requests and does not read, with
 * feed.max_output = 64k: once its replies pass the limit the daemon
 * queues an Error naming feed.max_output after them and ends the stream;
 * the client, reading then, gets every reply, the Error, and an orderly
 * end of stream. Before, the connection was reset at the limit: what was
 * queued was dropped and the client saw a reset without a word. */
static void test_error_reaches_slow_reader(void **state) {
  const char *gx[] = {"--feed.max_output=64k", NULL};
  start(gx, 0);
  int fd = open_from(NULL, T.feed_port);
  CHECK(fd >= 0, "connect");
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  uint8_t frame[64];
  long len = la_frame_pack_into(LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base,
                                frame, sizeof frame);
  assert_true(len > 0);
  int sent = 0;
  long long end = la_td_now_ms() + WAIT_MS;
  while (!la_td_log_has(T.ga, "the peer is not reading") &&
         la_td_now_ms() < end) {
    for (int i = 0; i < 50; i++)
      if (send(fd, frame, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) == len)
        sent++;
    la_td_nap_ms(5);
  }
  CHECK(la_td_log_has(T.ga, "the peer is not reading"),
        "the daemon never found the client over its limit (%d sent)", sent);
  uint16_t last;
  char msg[400];
  int frames;
  int how = read_to_end(fd, &last, msg, sizeof msg, &frames);
  print_message(
      "feed.max_output 64k, %d status requests unread: read %d frames, the "
      "last %s (\"%s\"), then %s\n",
      sent, frames, la_msg_name(last), msg,
      how == 0   ? "end of stream"
      : how == 1 ? "a reset"
                 : "nothing");
  close(fd);
  CHECK(last == LA__MSG_TYPE__MSG_ERROR, "the last frame was %s, not an Error",
        la_msg_name(last));
  CHECK(strstr(msg, "feed.max_output") != NULL,
        "the Error does not name "
        "the limit: %s",
        msg);
  CHECK(how == 0, "the stream did not end orderly (%d)", how);
}

/* 60 connections from 127.0.0.2 flood status and apps requests without
 * reading until the daemon ends each at its output limit (feed.max_output
 * = 4M), then close: once they are gone the daemon's resident memory is
 * back within 24 MiB of where it was (memory handed back with
 * malloc_trim). Before, it stayed at its peak (hundreds of MB). */
static void test_memory_returned_after_flood(void **state) {
  enum { CONNS = 60 };
  const char *gx[] = {"--feed.max_output=4M", "--feed.queue_bytes=4M",
                      "--feed.memory=1G", "--feed.memory_per_address=1G", NULL};
  start(gx, 0);
  pid_t pid = la_td_pid(T.ga);
  long rss0 = la_td_vm_kb(pid, "VmRSS");
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  La__Query qa = LA__QUERY__INIT;
  qa.has_feed_protocol = 1;
  qa.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  qa.what = "apps";
  uint8_t f1[64], f2[64];
  long l1 = la_frame_pack_into(LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base, f1,
                               sizeof f1);
  long l2 =
      la_frame_pack_into(LA__MSG_TYPE__MSG_QUERY, &qa.base, f2, sizeof f2);
  assert_true(l1 > 0 && l2 > 0);
  int fds[CONNS], done[CONNS];
  for (int i = 0; i < CONNS; i++) {
    fds[i] = open_from("127.0.0.2", T.feed_port);
    CHECK(fds[i] >= 0, "connect: %s", strerror(errno));
    fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    done[i] = 0;
  }
  long long end = la_td_now_ms() + 2 * WAIT_MS;
  int ndone = 0;
  long sent = 0;
  while (ndone < CONNS && la_td_now_ms() < end) {
    for (int i = 0; i < CONNS; i++) {
      if (done[i]) continue;
      struct pollfd p = {.fd = fds[i], .events = POLLRDHUP};
      if (poll(&p, 1, 0) == 1 &&
          (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
        done[i] = 1;
        ndone++;
        continue;
      }
      for (int k = 0; k < 64; k++) {
        const uint8_t *f = (k & 1) ? f2 : f1;
        size_t l = (size_t)((k & 1) ? l2 : l1);
        if (send(fds[i], f, l, MSG_NOSIGNAL) != (ssize_t)l) break;
        sent++;
      }
    }
    /* a connection ended (its Error unread) is reset after its deadline
     * (agents.handshake_timeout): count that too */
  }
  long hwm = la_td_vm_kb(pid, "VmHWM");
  for (int i = 0; i < CONNS; i++) close(fds[i]);
  CHECK(la_td_wait_status_at_most(T.ga, "subscribers", 1, WAIT_MS) == 0,
        "the connections did not go");
  /* the trim runs within a second of the last close */
  long rss1 = la_td_vm_kb(pid, "VmRSS");
  end = la_td_now_ms() + 5000;
  while (rss1 - rss0 >= 24 * 1024 && la_td_now_ms() < end) {
    la_td_nap_ms(100);
    rss1 = la_td_vm_kb(pid, "VmRSS");
  }
  print_message(
      "GlobalAgent feed, %d connections x status/apps requests unread "
      "(%ld sent, %d ended by the daemon): VmRSS %ld kB before, VmHWM %ld "
      "kB, VmRSS %ld kB after they left\n",
      CONNS, sent, ndone, rss0, hwm, rss1);
  CHECK(ndone == CONNS, "only %d of %d connections were ended", ndone, CONNS);
  CHECK_MEM(pid, hwm - rss0 > 64 * 1024,
            "the flood did not grow the daemon (VmHWM +%ld kB): no test",
            hwm - rss0);
  CHECK_MEM(pid, rss1 - rss0 < 24 * 1024,
            "VmRSS still %ld kB above the start after the clients left",
            rss1 - rss0);
}

/* lactl status answers, times times in a row, at the feed port. */
static void lactl_status_served(int times) {
  char lactl[1024], out[8192], addr[64];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(addr, sizeof addr, "127.0.0.1:%u", T.feed_port);
  for (int k = 0; k < times; k++) {
    const char *argv[] = {lactl, "status", "--global", addr, NULL};
    int rc = la_td_run(argv, NULL, WAIT_MS, out, sizeof out);
    CHECK(rc == 0 && strstr(out, "la-globalagent"),
          "lactl status %d exited %d:\n%s", k, rc, out);
  }
}

/* One client fills its address's share of the feed port with connections
 * that made a request and then stay idle (feed.max_connections_per_address
 * = 8); `lactl status` from the same address
 * still answers: the connection idle the longest makes room for it. A
 * ninth live subscriber is refused: subscribers are not idle. Before,
 * every later connection from the address was refused until the idle
 * ones timed out (feed.idle_timeout, 60 s). */
static void test_idle_connections_make_room(void **state) {
  enum { CAP = 8 };
  const char *gx[] = {"--feed.max_connections_per_address=8",
                      "--feed.idle_timeout=10min", NULL};
  start(gx, 0);
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  uint8_t f[64];
  long l = la_frame_pack_into(LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base, f,
                              sizeof f);
  assert_true(l > 0);
  int fds[CAP];
  for (int i = 0; i < CAP; i++) {
    fds[i] = open_from("127.0.0.1", T.feed_port);
    CHECK(fds[i] >= 0, "connect: %s", strerror(errno));
    /* each asks once, then stays idle */
    CHECK(send(fds[i], f, (size_t)l, MSG_NOSIGNAL) == (ssize_t)l, "send");
  }
  CHECK(la_td_wait_status_at_most(T.ga, "subscribers", CAP, WAIT_MS) == 0,
        "connections");
  la_td_nap_ms(1300); /* idle a while: a burst does not push out a burst */
  lactl_status_served(3);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", T.feed_port);
  CHECK(la_td_status_ll(T.ga, "subscribers_evicted") >= 1,
        "subscribers_evicted %lld",
        la_td_status_ll(T.ga, "subscribers_evicted"));
  for (int i = 0; i < CAP; i++) close(fds[i]);
  /* live subscribers are not idle: the share holds against them */
  la_client_t *sub[CAP + 1] = {0};
  for (int i = 0; i < CAP; i++) {
    assert_int_equal(la_client_connect(addr, 5000, &sub[i]), 0);
    assert_int_equal(la_client_subscribe(sub[i], NULL, 0), 0);
  }
  la_td_nap_ms(500); /* the earlier connections' closes are seen */
  la_traceset_t *t = NULL;
  int rc = la_client_connect(addr, 5000, &sub[CAP]);
  if (rc == 0) {
    la_client_subscribe(sub[CAP], NULL, 0);
    rc = la_client_next(sub[CAP], 5000, &t);
  }
  CHECK(rc != 0 && rc != LA_ETIMEDOUT, "a ninth subscriber was served (%d)",
        rc);
  for (int i = 0; i <= CAP; i++) la_client_close(sub[i]);
}

/* Opens n connections from 127.0.0.1 to port that ask once (a
 * StatusRequest, or nothing when ask is 0) and then stay idle. */
static void open_idle(int *fds, int n, uint16_t port, int ask) {
  La__StatusRequest rq = LA__STATUS_REQUEST__INIT;
  uint8_t f[64];
  long l = la_frame_pack_into(LA__MSG_TYPE__MSG_STATUS_REQUEST, &rq.base, f,
                              sizeof f);
  assert_true(l > 0);
  for (int i = 0; i < n; i++) {
    fds[i] = open_from("127.0.0.1", port);
    CHECK(fds[i] >= 0, "connect: %s", strerror(errno));
    if (ask)
      CHECK(send(fds[i], f, (size_t)l, MSG_NOSIGNAL) == (ssize_t)l, "send");
  }
}

/* The feed port's max_connections (8, below the address's share) is full
 * of idle connections from 127.0.0.1: `lactl status` still answers and a
 * live subscriber still gets its Trace-Set, each admitted by closing the
 * connection idle the longest (subscribers_evicted). Before, both were
 * refused until the idle ones timed out (feed.idle_timeout). */
static void test_idle_connections_make_room_port(void **state) {
  enum { CAP = 8 };
  const char *gx[] = {"--feed.max_connections=8",
                      "--feed.max_connections_per_address=64",
                      "--feed.idle_timeout=10min", NULL};
  start(gx, 1);
  int fds[CAP + 1];
  open_idle(fds, CAP, T.feed_port, 1);
  CHECK(la_td_wait_status_at_most(T.ga, "subscribers", CAP, WAIT_MS) == 0,
        "connections");
  la_td_nap_ms(1300); /* idle a while: a burst does not push out a burst */
  lactl_status_served(3);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", T.feed_port);
  /* the port full again, then a subscriber */
  open_idle(fds + CAP, 1, T.feed_port, 1);
  la_td_nap_ms(1300);
  la_client_t *sub = NULL;
  assert_int_equal(la_client_connect(addr, 5000, &sub), 0);
  assert_int_equal(la_client_subscribe(sub, "portfull", 0), 0);
  run_app("portfull", 1000);
  la_traceset_t *t = NULL;
  int rc = la_client_next(sub, WAIT_MS, &t);
  CHECK(rc == 0, "the subscriber got no set: %d", rc);
  la_traceset_free(t);
  la_client_close(sub);
  CHECK(la_td_status_ll(T.ga, "subscribers_evicted") >= 2,
        "subscribers_evicted %lld",
        la_td_status_ll(T.ga, "subscribers_evicted"));
  CHECK(la_td_log_has(T.ga, "(feed.max_connections = 8;"), "no log line");
  for (int i = 0; i <= CAP; i++) close(fds[i]);
}

/* The agents port's per-address share of unauthenticated connections
 * (agents.max_handshakes_per_address, 8) is full of idle connections from
 * 127.0.0.1 when the node's LocalAgent starts: it still authenticates at
 * once (the connection that waited longest is closed for it,
 * agents_evicted) and its traces are stored promptly. A burst of new
 * connections then cannot pass the share: those that find only young
 * ones are refused. Before, the LocalAgent was refused and backed off
 * until the idle ones timed out (agents.handshake_timeout). */
static void test_idle_handshakes_make_room(void **state) {
  enum { CAP = 8, BURST = 20 };
  const char *gx[] = {"--agents.handshake_timeout=10min", NULL};
  start(gx, 0);
  int fds[CAP + BURST];
  open_idle(fds, CAP, T.agents_port, 0);
  CHECK(la_td_wait_status(T.ga, "agents", CAP, WAIT_MS) == 0, "connections");
  la_td_nap_ms(1300);
  long long t0 = la_td_now_ms();
  start_local();
  CHECK(la_td_wait_status(T.ga, "agents_linked", 1, 5000) == 0,
        "the LocalAgent did not link (agents_refused %lld)",
        la_td_status_ll(T.ga, "agents_refused"));
  run_app("preauth", 1000);
  CHECK(la_td_wait_status(T.ga, "traces_stored", 1, 5000) == 0,
        "the trace was not stored");
  long long ms = la_td_now_ms() - t0;
  assert_true(la_td_status_ll(T.ga, "agents_evicted") >= 1);
  CHECK(la_td_log_has(T.ga,
                      "closed to admit a new one "
                      "(agents.max_handshakes_per_address full"),
        "no log line");
  /* a burst: 7 idle ones left old enough to make room, the rest refused */
  long long refused0 = la_td_status_ll(T.ga, "agents_refused");
  open_idle(fds + CAP, BURST, T.agents_port, 0);
  CHECK(la_td_wait_status(T.ga, "agents_refused", refused0 + BURST - CAP,
                          WAIT_MS) == 0,
        "agents_refused %lld, %lld before",
        la_td_status_ll(T.ga, "agents_refused"), refused0);
  long long open = la_td_status_ll(T.ga, "agents");
  print_message(
      "LocalAgent linked and its trace stored %lld ms after it "
      "started; after a burst of %d: %lld connections open, "
      "%lld evicted, %lld refused\n",
      ms, BURST, open, la_td_status_ll(T.ga, "agents_evicted"),
      la_td_status_ll(T.ga, "agents_refused"));
  CHECK(open <= CAP + 1, "%lld connections open", open);
  for (int i = 0; i < CAP + BURST; i++) close(fds[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_set_flood_bounded, teardown),
      cmocka_unit_test_teardown(test_error_reaches_slow_reader, teardown),
      cmocka_unit_test_teardown(test_memory_returned_after_flood, teardown),
      cmocka_unit_test_teardown(test_idle_connections_make_room, teardown),
      cmocka_unit_test_teardown(test_idle_connections_make_room_port, teardown),
      cmocka_unit_test_teardown(test_idle_handshakes_make_room, teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, NULL);
}
