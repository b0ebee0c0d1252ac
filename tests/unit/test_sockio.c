/* SPDX-License-Identifier: BSD-3-Clause */
/* test_sockio.c: unit tests of the blocking socket helpers
 * (wire/la_sockio.{h,c}) over real loopback TCP sockets.
 *
 * Covers: la_hostport_parse on good and bad inputs; la_tcp_connect to a
 * closed port (LA_ENOAGENT, quickly), to a listener (socket flags), and to a
 * listener whose queue is full (LA_ETIMEDOUT); la_send_msg/la_recv_msg
 * round trips, small and large, whole or dribbled byte by byte; la_recv_msg
 * with a silent peer (LA_ETIMEDOUT within a bounded time), a peer closing
 * before or in the middle of a frame (LA_EIO), a header announcing 1 GiB
 * (LA_EMSGSIZE at once), bad headers, garbage and invalid payloads
 * (LA_EPROTO); la_write_all to a vanished peer (LA_EIO, no SIGPIPE) and to a
 * peer that does not read (LA_ETIMEDOUT). Timing assertions use generous
 * slack: they check that calls return, and not before their time limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_codec.h"
#include "la_sockio.h"

#define T_REG LA__MSG_TYPE__MSG_REGISTER_REQUEST
#define T_REPLY LA__MSG_TYPE__MSG_REGISTER_REPLY
#define T_FIN LA__MSG_TYPE__MSG_FINALIZE
#define T_HELLO LA__MSG_TYPE__MSG_HELLO
#define T_CT LA__MSG_TYPE__MSG_COMPACT_TRACE
#define T_ACK LA__MSG_TYPE__MSG_ACK
#define SLACK_MS 4000 /* loaded CI machines are slow; never assert tighter */

/* ------------------------------------------------------------- helpers */

static int listen_on(int family, uint16_t *port, int backlog) {
  int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_storage ss;
  socklen_t sl;
  memset(&ss, 0, sizeof ss);
  if (family == AF_INET) {
    struct sockaddr_in *a = (void *)&ss;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sl = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (void *)&ss;
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    sl = sizeof *a;
  }
  if (bind(fd, (void *)&ss, sl) != 0 ||
      (backlog >= 0 && listen(fd, backlog) != 0) ||
      getsockname(fd, (void *)&ss, &sl) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                  : ((struct sockaddr_in6 *)&ss)->sin6_port);
  return fd;
}

/* A connected loopback pair: *cli from la_tcp_connect, *srv accepted. */
static void tcp_pair(int *cli, int *srv) {
  uint16_t port;
  int l = listen_on(AF_INET, &port, 8);
  assert_true(l >= 0);
  *cli = la_tcp_connect("127.0.0.1", port, 5000);
  assert_true(*cli >= 0);
  *srv = accept(l, NULL, NULL);
  assert_true(*srv >= 0);
  close(l);
}

static void build_register(La__RegisterRequest *r) {
  la__register_request__init(r);
  r->protocol = LA_PROTOCOL_VERSION;
  r->app_id = "job-5";
  r->app_name = "heat";
  r->rank = 1;
  r->nprocs = 4;
  r->pid = 99;
  r->shm_id = 5;
  r->sem_id = 6;
  r->nonce = 0x1122334455667788ULL;
  r->n_elements = 1000;
  r->n_buffers = 2;
  r->metric = "time";
  r->unit = "ns";
}

static void send_raw(int fd, const void *p, size_t n) {
  assert_int_equal(la_write_all(fd, p, n, 5000), 0);
}

static uint64_t elapsed_since(uint64_t t0) {
  return la_now_ms() - t0;
}

/* ------------------------------------------------------ host:port parse */

static void test_hostport_good(void **state) {
  char host[64];
  uint16_t port = 0;
  assert_int_equal(la_hostport_parse("127.0.0.1:80", host, sizeof host, &port),
                   0);
  assert_string_equal(host, "127.0.0.1");
  assert_int_equal(port, 80);

  port = 0;
  assert_int_equal(la_hostport_parse("80", host, sizeof host, &port), 0);
  assert_int_equal(port, 80);
  assert_string_equal(host, "127.0.0.1"); /* loopback by default */

  assert_int_equal(la_hostport_parse("[::1]:9", host, sizeof host, &port), 0);
  assert_string_equal(host, "::1");
  assert_int_equal(port, 9);

  assert_int_equal(
      la_hostport_parse("[fe80::1%eth0]:7000", host, sizeof host, &port), 0);
  assert_string_equal(host, "fe80::1%eth0");
  assert_int_equal(port, 7000);

  assert_int_equal(
      la_hostport_parse("node-7.cluster.local:65535", host, sizeof host, &port),
      0);
  assert_string_equal(host, "node-7.cluster.local");
  assert_int_equal(port, 65535);

  assert_int_equal(la_hostport_parse("h:1", host, sizeof host, &port), 0);
  assert_string_equal(host, "h");
  assert_int_equal(port, 1);

  /* a host that exactly fits the buffer (with its NUL) */
  char small[5];
  assert_int_equal(la_hostport_parse("abcd:5", small, sizeof small, &port), 0);
  assert_string_equal(small, "abcd");
}

static void test_hostport_bad(void **state) {
  const char *bad[] = {
      ":0",       "host:",    "host:70000",
      "a:b",      "",         "0",
      "65536",    "host:-1",  "host:0",
      "[::1]",    "[::1",     "[::1]:",
      "[::1]9",   "host:80x", "host:99999999999999999999",
      "host:8 0", "80 ",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char host[64] = "untouched";
    uint16_t port = 4321;
    int rc = la_hostport_parse(bad[i], host, sizeof host, &port);
    if (rc != LA_EINVAL)
      fail_msg("\"%s\" gave %d (host \"%s\" port %u), expected LA_EINVAL",
               bad[i], rc, host, port);
    assert_int_equal(port, 4321); /* nothing returned on failure */
  }
  char host[64];
  uint16_t port;
  assert_int_equal(la_hostport_parse(NULL, host, sizeof host, &port),
                   LA_EINVAL);
  /* host longer than the caller's buffer: refused, not truncated */
  char small[5];
  assert_int_equal(la_hostport_parse("abcde:5", small, sizeof small, &port),
                   LA_EINVAL);
  /* even the default host needs room */
  assert_int_equal(la_hostport_parse("80", small, sizeof small, &port),
                   LA_EINVAL);
}

/* ------------------------------------------------------------- connect */

static void test_connect_closed_port(void **state) {
  /* a bound but not listening socket keeps the port ours, and refuses */
  uint16_t port;
  int b = listen_on(AF_INET, &port, -1);
  assert_true(b >= 0);
  uint64_t t0 = la_now_ms();
  int fd = la_tcp_connect("127.0.0.1", port, 5000);
  uint64_t ms = elapsed_since(t0);
  if (fd >= 0) close(fd);
  assert_int_equal(fd, LA_ENOAGENT);
  assert_true(ms < 2000); /* refused at once, not after the time limit */
  /* by name, and through the parser, the same */
  char host[64];
  char spec[32];
  snprintf(spec, sizeof spec, "localhost:%u", port);
  assert_int_equal(la_hostport_parse(spec, host, sizeof host, &port), 0);
  fd = la_tcp_connect(host, port, 5000);
  if (fd >= 0) close(fd);
  assert_int_equal(fd, LA_ENOAGENT);
  close(b);
}

static void test_connect_socket_flags(void **state) {
  uint16_t port;
  int l = listen_on(AF_INET, &port, 8);
  assert_true(l >= 0);
  int fd = la_tcp_connect("127.0.0.1", port, 5000);
  assert_true(fd >= 0);
  assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
  int one = 0;
  socklen_t ol = sizeof one;
  assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, &ol), 0);
  assert_int_equal(one, 1);
  int s = accept(l, NULL, NULL);
  assert_true(s >= 0);
  /* the connection works */
  send_raw(fd, "ping", 4);
  char b[4];
  assert_int_equal(la_read_all(s, b, 4, 5000), 0);
  assert_memory_equal(b, "ping", 4);
  close(s);
  close(fd);
  close(l);
}

static void test_connect_ipv6(void **state) {
  uint16_t port;
  int l = listen_on(AF_INET6, &port, 8);
  if (l < 0) {
    print_message("skip: no IPv6 loopback here\n");
    skip();
  }
  char host[64];
  char spec[32];
  snprintf(spec, sizeof spec, "[::1]:%u", port);
  assert_int_equal(la_hostport_parse(spec, host, sizeof host, &port), 0);
  int fd = la_tcp_connect(host, port, 5000);
  assert_true(fd >= 0);
  int s = accept(l, NULL, NULL);
  assert_true(s >= 0);
  close(s);
  close(fd);
  close(l);
}

static void test_connect_timeout(void **state) {
  /* A listener with a full accept queue drops SYNs: connect hangs. */
  uint16_t port;
  int l = listen_on(AF_INET, &port, 0);
  assert_true(l >= 0);
  int fill[8];
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  for (int i = 0; i < 8; i++) {
    fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(fill[i] >= 0);
    connect(fill[i], (void *)&a, sizeof a);
  }
  usleep(100 * 1000);
  uint64_t t0 = la_now_ms();
  int fd = la_tcp_connect("127.0.0.1", port, 500);
  uint64_t ms = elapsed_since(t0);
  for (int i = 0; i < 8; i++) close(fill[i]);
  close(l);
  if (fd >= 0) {
    close(fd);
    print_message("skip: this kernel accepted beyond the backlog\n");
    skip();
  }
  assert_int_equal(fd, LA_ETIMEDOUT);
  assert_true(ms >= 400);
  assert_true(ms < 500 + SLACK_MS);
}

/* ------------------------------------------------------- send / receive */

/* The packed frame of build_register()'s message (caller frees). */
static uint8_t *register_frame(size_t *flen) {
  La__RegisterRequest r;
  uint8_t *f = NULL;
  build_register(&r);
  assert_int_equal(la_frame_pack(T_REG, &r.base, &f, flen), 0);
  return f;
}

/* la_recv_msg on fd (frames up to max bytes, timeout_ms) that must give a
 * message of type `type`; returns it (caller frees). */
static ProtobufCMessage *recv_ok(int fd, uint32_t max, int timeout_ms,
                                 uint16_t type) {
  uint16_t t = 0;
  ProtobufCMessage *m = NULL;
  char why[256] = "";
  int rc = la_recv_msg(fd, max, timeout_ms, &t, &m, why, sizeof why);
  if (rc) fail_msg("recv: %d %s", rc, why);
  assert_int_equal(t, type);
  assert_non_null(m);
  return m;
}

static void test_send_recv_roundtrip(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  La__RegisterRequest r;
  build_register(&r);
  uint64_t grid[3] = {10, 10, 10};
  r.n_grid = 3;
  r.grid = grid;
  assert_int_equal(la_send_msg(c, T_REG, &r.base, 5000), 0);

  La__RegisterReply rep = LA__REGISTER_REPLY__INIT;
  rep.status = LA_EREFUSED;
  rep.message = "nonce does not match";
  La__Ack ack = LA__ACK__INIT;
  ack.seq = 77;
  assert_int_equal(la_send_msg(s, T_REPLY, &rep.base, 5000), 0);
  assert_int_equal(la_send_msg(s, T_ACK, &ack.base, 5000), 0);

  ProtobufCMessage *m = recv_ok(s, 1 << 16, 5000, T_REG);
  La__RegisterRequest *g = (void *)m;
  assert_string_equal(g->app_id, "job-5");
  assert_string_equal(g->app_name, "heat");
  assert_int_equal(g->rank, 1);
  assert_int_equal(g->nprocs, 4);
  assert_int_equal(g->nonce, 0x1122334455667788ULL);
  assert_int_equal(g->n_grid, 3);
  assert_int_equal(g->grid[2], 10);
  la_msg_free(m);

  /* two frames queued back to back come out one at a time */
  m = recv_ok(c, 1 << 16, 5000, T_REPLY);
  assert_int_equal(((La__RegisterReply *)m)->status, LA_EREFUSED);
  assert_string_equal(((La__RegisterReply *)m)->message,
                      "nonce does not match");
  la_msg_free(m);
  m = recv_ok(c, 1 << 16, 5000, T_ACK);
  assert_int_equal(((La__Ack *)m)->seq, 77);
  la_msg_free(m);
  close(c);
  close(s);
}

static void test_recv_empty_payload(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  La__Finalize f = LA__FINALIZE__INIT;
  assert_int_equal(la_send_msg(c, T_FIN, &f.base, 5000), 0);
  la_msg_free(recv_ok(s, 1024, 5000, T_FIN));
  close(c);
  close(s);
}

typedef struct {
  int fd;
  uint32_t max;
  int rc;
  uint16_t type;
  ProtobufCMessage *msg;
  char why[256];
} recv_job_t;

static void *recv_thread(void *arg) {
  recv_job_t *j = arg;
  j->rc = la_recv_msg(j->fd, j->max, 10000, &j->type, &j->msg, j->why,
                      sizeof j->why);
  return NULL;
}

static void test_send_recv_large(void **state) {
  /* 1 MiB of segments: more than the socket buffers hold, so sender and
   * receiver must overlap (the receiver runs in a thread). */
  int c, s;
  tcp_pair(&c, &s);
  size_t n = 1u << 20;
  uint8_t *seg = malloc(n);
  assert_non_null(seg);
  for (size_t i = 0; i < n; i++) seg[i] = (uint8_t)(i * 13 + (i >> 9));
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  st.count = 5000;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  t.app_id = "job-5";
  t.rank = 2;
  t.cycle_tag = 9;
  t.n_elements = 5000;
  t.mode = LA__COMPACT_MODE__COMPACT_LOSSLESS;
  t.segments.data = seg;
  t.segments.len = n;
  t.stats = &st;
  recv_job_t j = {.fd = s, .max = 2u << 20};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, recv_thread, &j), 0);
  int rc = la_send_msg(c, T_CT, &t.base, 10000);
  pthread_join(th, NULL);
  assert_int_equal(rc, 0);
  if (j.rc) fail_msg("recv: %d %s", j.rc, j.why);
  assert_int_equal(j.type, T_CT);
  La__CompactTrace *g = (void *)j.msg;
  assert_int_equal(g->segments.len, n);
  assert_memory_equal(g->segments.data, seg, n);
  assert_int_equal(g->stats->count, 5000);
  la_msg_free(j.msg);

  /* the same frame against a smaller maximum: refused by size */
  j = (recv_job_t){.fd = s, .max = 64u << 10};
  assert_int_equal(pthread_create(&th, NULL, recv_thread, &j), 0);
  la_send_msg(c, T_CT, &t.base, 2000); /* may time out: nobody reads */
  pthread_join(th, NULL);
  assert_int_equal(j.rc, LA_EMSGSIZE);
  assert_null(j.msg);
  free(seg);
  close(c);
  close(s);
}

typedef struct {
  int fd;
  const uint8_t *p;
  size_t n;
  int gap_us;
} dribble_t;

static void *dribble_thread(void *arg) {
  dribble_t *d = arg;
  for (size_t i = 0; i < d->n; i++) {
    if (send(d->fd, d->p + i, 1, MSG_NOSIGNAL) != 1) break;
    usleep((useconds_t)d->gap_us);
  }
  return NULL;
}

static void test_recv_dribbled_frame(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  size_t flen;
  uint8_t *f = register_frame(&flen);
  dribble_t d = {.fd = c, .p = f, .n = flen, .gap_us = 500};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, dribble_thread, &d), 0);
  ProtobufCMessage *m = recv_ok(s, 4096, 10000, T_REG);
  pthread_join(th, NULL);
  assert_int_equal(((La__RegisterRequest *)m)->n_elements, 1000);
  la_msg_free(m);
  free(f);
  close(c);
  close(s);
}

/* la_recv_msg on s that must fail: no message, a reason given. Returns
 * its status; *ms (when not NULL) is how long it took. */
static int recv_fails(int s, uint32_t max, int timeout_ms, uint64_t *ms) {
  uint16_t t;
  ProtobufCMessage *m = NULL;
  char why[128] = "";
  uint64_t t0 = la_now_ms();
  int rc = la_recv_msg(s, max, timeout_ms, &t, &m, why, sizeof why);
  if (ms) *ms = elapsed_since(t0);
  assert_null(m);
  if (!why[0]) fail_msg("la_recv_msg failed (%d) without a reason", rc);
  return rc;
}

/* la_recv_msg on s times out after timeout_ms: not before min_ms, and
 * within SLACK_MS after the limit. */
static void expect_recv_timeout(int s, int timeout_ms, uint64_t min_ms) {
  uint64_t ms;
  assert_int_equal(recv_fails(s, 4096, timeout_ms, &ms), LA_ETIMEDOUT);
  assert_true(ms >= min_ms);
  assert_true(ms < (uint64_t)timeout_ms + SLACK_MS);
}

static void test_recv_timeout_silent_peer(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  expect_recv_timeout(s, 300, 250);
  close(c);
  close(s);
}

static void test_recv_timeout_mid_frame(void **state) {
  /* header and half the payload, then silence: the whole frame has one
   * deadline, so it ends after about the time limit, not twice it */
  int c, s;
  tcp_pair(&c, &s);
  size_t flen;
  uint8_t *f = register_frame(&flen);
  send_raw(c, f, LA_FRAME_HEADER_LEN + (flen - LA_FRAME_HEADER_LEN) / 2);
  expect_recv_timeout(s, 400, 300);
  free(f);
  close(c);
  close(s);
}

static void test_recv_peer_closes(void **state) {
  size_t flen;
  uint8_t *f = register_frame(&flen);
  /* cut after 0 bytes, inside the header, after the header, mid-payload,
   * one byte short */
  const size_t cuts[] = {0, 3, LA_FRAME_HEADER_LEN, LA_FRAME_HEADER_LEN + 10,
                         flen - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    int c, s;
    tcp_pair(&c, &s);
    if (cuts[i]) send_raw(c, f, cuts[i]);
    close(c);
    uint64_t ms;
    int rc = recv_fails(s, 4096, 5000, &ms);
    if (rc != LA_EIO)
      fail_msg("peer closing after %zu of %zu bytes: %d, expected LA_EIO",
               cuts[i], flen, rc);
    assert_true(ms < 2000); /* noticed at once, not at the deadline */
    close(s);
  }
  free(f);
}

static void test_recv_oversized_header(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  const uint8_t h[8] = {0x40, 0, 0, 0, 0, T_REG, 0, 0}; /* 1 GiB */
  send_raw(c, h, 8);
  uint64_t ms;
  assert_int_equal(recv_fails(s, 64u << 10, 5000, &ms), LA_EMSGSIZE);
  assert_true(ms < 2000); /* did not wait for a payload */
  close(c);
  close(s);
}

static void test_recv_bad_header(void **state) {
  const uint8_t bad[][8] = {
      {0, 0, 0, 2, 0, T_ACK, 0, 1}, /* reserved byte */
      {0, 0, 0, 2, 0, 99, 0, 0},    /* unknown type */
      {0, 0, 0, 2, 0, 0, 0, 0},     /* MSG_NONE */
  };
  for (size_t i = 0; i < 3; i++) {
    int c, s;
    tcp_pair(&c, &s);
    send_raw(c, bad[i], 8);
    send_raw(c, "\x08\x01", 2);
    assert_int_equal(recv_fails(s, 4096, 5000, NULL), LA_EPROTO);
    close(c);
    close(s);
  }
}

static void test_recv_garbage_and_invalid(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  /* garbage payload under a RegisterRequest header */
  const uint8_t g[8 + 5] = {0, 0,    0,    5,    0,    T_REG, 0,
                            0, 0xff, 0xff, 0xff, 0xff, 0xff};
  send_raw(c, g, sizeof g);
  uint16_t t;
  ProtobufCMessage *m = NULL;
  char why[256] = "";
  assert_int_equal(la_recv_msg(s, 4096, 5000, &t, &m, why, sizeof why),
                   LA_EPROTO);
  assert_null(m);
  assert_non_null(strstr(why, "RegisterRequest"));

  /* well-formed protobuf that fails validation: rank >= nprocs */
  La__RegisterRequest r;
  build_register(&r);
  r.rank = 4;
  assert_int_equal(la_send_msg(c, T_REG, &r.base, 5000), 0);
  why[0] = 0;
  assert_int_equal(la_recv_msg(s, 4096, 5000, &t, &m, why, sizeof why),
                   LA_EPROTO);
  assert_null(m);
  assert_non_null(strstr(why, "rank"));

  /* the framing stayed in step: the next good frame is read */
  build_register(&r);
  assert_int_equal(la_send_msg(c, T_REG, &r.base, 5000), 0);
  la_msg_free(recv_ok(s, 4096, 5000, T_REG));
  close(c);
  close(s);
}

static void test_send_type_mismatch(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  La__RegisterRequest r;
  build_register(&r);
  assert_int_equal(la_send_msg(c, T_HELLO, &r.base, 1000), LA_EINVAL);
  assert_int_equal(la_send_msg(c, 999, &r.base, 1000), LA_EINVAL);
  char b[8];
  usleep(20 * 1000);
  assert_int_equal(recv(s, b, sizeof b, MSG_DONTWAIT), -1); /* nothing */
  assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
  close(c);
  close(s);
}

static void test_recv_without_reason_buffer(void **state) {
  /* why is optional: NULL must be accepted on every error path */
  int c, s;
  tcp_pair(&c, &s);
  uint16_t t;
  ProtobufCMessage *m = NULL;
  assert_int_equal(la_recv_msg(s, 4096, 50, &t, &m, NULL, 0), LA_ETIMEDOUT);
  const uint8_t g[8 + 2] = {0, 0, 0, 2, 0, T_REG, 0, 0, 0xff, 0xff};
  send_raw(c, g, sizeof g);
  assert_int_equal(la_recv_msg(s, 4096, 5000, &t, &m, NULL, 0), LA_EPROTO);
  const uint8_t big[8] = {0x40, 0, 0, 0, 0, T_REG, 0, 0};
  send_raw(c, big, 8);
  assert_int_equal(la_recv_msg(s, 4096, 5000, &t, &m, NULL, 0), LA_EMSGSIZE);
  close(c);
  assert_int_equal(la_recv_msg(s, 4096, 5000, &t, &m, NULL, 0), LA_EIO);
  assert_null(m);
  close(s);
}

/* ---------------------------------------------------- read / write all */

static void test_write_to_closed_peer(void **state) {
  /* With SIGPIPE at its default (terminate), a write to a vanished peer
   * must come back as LA_EIO: the process surviving is the test. */
  void (*old)(int) = signal(SIGPIPE, SIG_DFL);
  int c, s;
  tcp_pair(&c, &s);
  close(s);
  usleep(20 * 1000);
  static uint8_t buf[65536];
  int rc = 0;
  for (int i = 0; i < 200 && rc == 0; i++) {
    rc = la_write_all(c, buf, sizeof buf, 2000);
    if (rc == 0) usleep(5 * 1000);
  }
  assert_int_equal(rc, LA_EIO);
  /* and la_send_msg the same */
  La__Ack a = LA__ACK__INIT;
  assert_int_equal(la_send_msg(c, T_ACK, &a.base, 1000), LA_EIO);
  close(c);
  signal(SIGPIPE, old);
}

static void test_write_all_timeout(void **state) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  int small = 4096;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  size_t n = 16u << 20;
  uint8_t *buf = calloc(1, n);
  assert_non_null(buf);
  uint64_t t0 = la_now_ms();
  int rc = la_write_all(sv[0], buf, n, 300);
  uint64_t ms = elapsed_since(t0);
  assert_int_equal(rc, LA_ETIMEDOUT);
  assert_true(ms >= 250);
  assert_true(ms < 300 + SLACK_MS);
  free(buf);
  close(sv[0]);
  close(sv[1]);
}

static void test_read_all_exact(void **state) {
  int c, s;
  tcp_pair(&c, &s);
  send_raw(c, "abc", 3);
  send_raw(c, "defgh", 5);
  char b[8] = {0};
  assert_int_equal(la_read_all(s, b, 0, 100), 0); /* nothing asked */
  assert_int_equal(la_read_all(s, b, 6, 5000), 0);
  assert_memory_equal(b, "abcdef", 6);
  /* the rest stays for the next read */
  assert_int_equal(la_read_all(s, b, 2, 5000), 0);
  assert_memory_equal(b, "gh", 2);
  /* fewer bytes than asked, then silence: time out */
  send_raw(c, "x", 1);
  uint64_t t0 = la_now_ms();
  assert_int_equal(la_read_all(s, b, 2, 200), LA_ETIMEDOUT);
  assert_true(elapsed_since(t0) >= 150);
  /* and then the peer closes */
  close(c);
  assert_int_equal(la_read_all(s, b, 2, 5000), LA_EIO);
  close(s);
}

static void test_now_ms_monotonic(void **state) {
  uint64_t a = la_now_ms();
  usleep(50 * 1000);
  uint64_t b = la_now_ms();
  assert_true(b >= a + 45);
  assert_true(b < a + 50 + SLACK_MS);
}

int main(void) {
  signal(SIGPIPE, SIG_DFL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hostport_good),
      cmocka_unit_test(test_hostport_bad),
      cmocka_unit_test(test_connect_closed_port),
      cmocka_unit_test(test_connect_socket_flags),
      cmocka_unit_test(test_connect_ipv6),
      cmocka_unit_test(test_connect_timeout),
      cmocka_unit_test(test_send_recv_roundtrip),
      cmocka_unit_test(test_recv_empty_payload),
      cmocka_unit_test(test_send_recv_large),
      cmocka_unit_test(test_recv_dribbled_frame),
      cmocka_unit_test(test_recv_timeout_silent_peer),
      cmocka_unit_test(test_recv_timeout_mid_frame),
      cmocka_unit_test(test_recv_peer_closes),
      cmocka_unit_test(test_recv_oversized_header),
      cmocka_unit_test(test_recv_bad_header),
      cmocka_unit_test(test_recv_garbage_and_invalid),
      cmocka_unit_test(test_send_type_mismatch),
      cmocka_unit_test(test_recv_without_reason_buffer),
      cmocka_unit_test(test_write_to_closed_peer),
      cmocka_unit_test(test_write_all_timeout),
      cmocka_unit_test(test_read_all_exact),
      cmocka_unit_test(test_now_ms_monotonic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
