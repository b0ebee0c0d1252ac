/* SPDX-License-Identifier: BSD-3-Clause */
/* test_test_global.c: tests of the GlobalAgent stand-in
 * (tests/support/la_test_global.{h,c}), driven by a plain blocking client
 * built from la_sockio. It doubles as the executable specification of the
 * LocalAgent <-> GlobalAgent protocol (docs/protocol.md):
 *
 *   Hello{protocol, host} -> Challenge{nonce} -> Auth{mac} -> AuthResult
 *   then RankStart / CompactTrace / RankEnd, each with a link sequence
 *   number, answered by cumulative Ack{seq}; resends are idempotent.
 *
 * Covers: a full session (fields stored, segments copied, duplicates counted
 * and not stored, acks, next_seq); a wrong secret, a forced refusal, a short
 * MAC in accept-any mode (AuthResult LA_EAUTH, connection closed, the peer
 * still serving); protocol violations (data before the handshake, a second
 * Hello, an unknown protocol version, garbage bytes, a 1 GiB frame header),
 * each closing only that connection; the ack policies (never, each, batches,
 * delayed; a policy change acks what waits); sequence errors and orphan
 * traces; thousands of traces resent in full (nothing missing, nothing
 * duplicated); next_seq per host; kill and revive on the same port with the
 * records kept; a restart on a given port; dropped connections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "la.h"
#include "la_auth.h"
#include "la_codec.h"
#include "la_sockio.h"
#include "la_test_daemon.h"
#include "la_test_global.h"
#include "la_test_msg.h"

#define T_HELLO LA__MSG_TYPE__MSG_HELLO
#define T_CHAL LA__MSG_TYPE__MSG_CHALLENGE
#define T_AUTH LA__MSG_TYPE__MSG_AUTH
#define T_RES LA__MSG_TYPE__MSG_AUTH_RESULT
#define T_START LA__MSG_TYPE__MSG_RANK_START
#define T_END LA__MSG_TYPE__MSG_RANK_END
#define T_CT LA__MSG_TYPE__MSG_COMPACT_TRACE
#define T_ACK LA__MSG_TYPE__MSG_ACK
#define T_ERR LA__MSG_TYPE__MSG_ERROR
#define WAIT_MS 5000 /* generous: loaded machines are slow */
#define MAXP (1u << 20)

typedef struct {
  char dir[64];
  char key_a[96], key_b[96];
  la_auth_key_t a, b;
  la_test_global_t *g;
} fx_t;

static void write_secret(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

static int teardown(void **state) {
  fx_t *f = *state;
  la_test_global_stop(f->g);
  unlink(f->key_a);
  unlink(f->key_b);
  rmdir(f->dir);
  free(f);
  return 0;
}

static int setup(void **state) {
  fx_t *f = calloc(1, sizeof *f);
  if (!f) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/la_test_tg.XXXXXX");
  if (!mkdtemp(f->dir) || la_auth_init()) {
    free(f);
    return -1;
  }
  snprintf(f->key_a, sizeof f->key_a, "%s/secret-a", f->dir);
  snprintf(f->key_b, sizeof f->key_b, "%s/secret-b", f->dir);
  write_secret(f->key_a, "the right secret, shared by both agents\n");
  write_secret(f->key_b, "some other secret, from another cluster\n");
  *state = f;
  if (la_auth_load_key(f->key_a, &f->a, NULL, 0) ||
      la_auth_load_key(f->key_b, &f->b, NULL, 0) ||
      !(f->g = la_test_global_start(0, f->key_a))) {
    teardown(state);
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------- client helpers */

static int cli_connect(la_test_global_t *g) {
  int fd = la_tcp_connect("127.0.0.1", la_test_global_port(g), WAIT_MS);
  assert_true(fd >= 0);
  return fd;
}

/* Receives one message, expecting type; returns it (caller frees). */
static ProtobufCMessage *expect(int fd, uint16_t want) {
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  char why[160] = "";
  int rc = la_recv_msg(fd, MAXP, WAIT_MS, &type, &m, why, sizeof why);
  if (rc) fail_msg("waiting for %s: %s (%d)", la_msg_name(want), why, rc);
  if (type != want) {
    if (type == T_ERR)
      fail_msg("wanted %s, got Error: %s", la_msg_name(want),
               ((La__Error *)m)->message);
    fail_msg("wanted %s, got %s", la_msg_name(want), la_msg_name(type));
  }
  return m;
}

/* Reads until the peer closes; returns 1 if it closed within WAIT_MS
 * (skipping any Error or AuthResult sent first). */
static int closed_by_peer(int fd) {
  uint64_t end = la_now_ms() + WAIT_MS;
  while (la_now_ms() < end) {
    uint16_t type;
    ProtobufCMessage *m = NULL;
    int rc = la_recv_msg(fd, MAXP, WAIT_MS, &type, &m, NULL, 0);
    if (rc == LA_EIO) return 1;
    if (rc == 0)
      la_msg_free(m);
    else if (rc == LA_ETIMEDOUT)
      return 0;
  }
  return 0;
}

static void send_hello(int fd, uint32_t proto, const char *host) {
  La__Hello h = LA__HELLO__INIT;
  h.protocol = proto;
  h.host = (char *)host;
  h.agent_version = "test-client";
  assert_int_equal(la_send_msg(fd, T_HELLO, &h.base, WAIT_MS), 0);
}

/* Runs the handshake as host with key (NULL: a MAC of mac_len zero bytes).
 * Returns AuthResult.status; *next_seq gets next_seq (or 0), why the
 * message. */
static int handshake(int fd, const la_auth_key_t *key, const char *host,
                     size_t mac_len, uint64_t *next_seq, char *why,
                     size_t why_len) {
  send_hello(fd, LA_PROTOCOL_VERSION, host);
  La__Challenge *c = (La__Challenge *)expect(fd, T_CHAL);
  assert_int_equal(c->nonce.len, LA_AUTH_NONCE_BYTES);
  uint8_t mac[64] = {0};
  if (key)
    assert_int_equal(la_auth_mac(key, c->nonce.data, c->nonce.len, host, mac),
                     0);
  la_msg_free(&c->base);
  La__Auth a = LA__AUTH__INIT;
  a.mac.data = mac;
  a.mac.len = mac_len;
  assert_int_equal(la_send_msg(fd, T_AUTH, &a.base, WAIT_MS), 0);
  La__AuthResult *r = (La__AuthResult *)expect(fd, T_RES);
  int status = r->status;
  if (next_seq) *next_seq = r->has_next_seq ? r->next_seq : 0;
  if (why) snprintf(why, why_len, "%s", r->message ? r->message : "");
  la_msg_free(&r->base);
  return status;
}

static int login(fx_t *f, const char *host, uint64_t *next_seq) {
  int fd = cli_connect(f->g);
  assert_int_equal(handshake(fd, &f->a, host, 32, next_seq, NULL, 0), 0);
  return fd;
}

static void send_start(int fd, uint64_t seq, const char *app, uint32_t rank,
                       uint32_t nprocs) {
  La__RankStart s = la_test_rank_start_min(app, rank, nprocs, 1000);
  La__CompactParams cp = LA__COMPACT_PARAMS__INIT;
  cp.has_mode = 1;
  cp.mode = LA__COMPACT_MODE__COMPACT_POLYLINE;
  s.seq = seq;
  s.app_name = "wavetoy";
  s.has_pid = 1;
  s.pid = 4242;
  s.has_period = 1;
  s.period = 3;
  s.compact = &cp;
  assert_int_equal(la_send_msg(fd, T_START, &s.base, WAIT_MS), 0);
}

static void send_trace(int fd, uint64_t seq, const char *app, uint32_t rank,
                       uint64_t tag) {
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  La__FitError fe = LA__FIT_ERROR__INIT;
  uint8_t seg[24];
  for (size_t i = 0; i < sizeof seg; i++)
    seg[i] = (uint8_t)(tag * 31 + rank * 7 + i);
  st.count = 1000;
  st.sum = 1000.0 * (double)(tag + 1);
  st.min = 0.5;
  st.max = 2.0 * (double)(tag + 1);
  fe.max_abs = 0.25;
  fe.rmse = 0.1;
  fe.cv = 0.05;
  t.seq = seq;
  t.app_id = (char *)app;
  t.rank = rank;
  t.cycle_tag = tag;
  t.n_elements = 1000;
  t.mode = LA__COMPACT_MODE__COMPACT_POLYLINE;
  t.segments.data = seg;
  t.segments.len = sizeof seg;
  t.stats = &st;
  t.error = &fe;
  t.has_rank_seq = 1;
  t.rank_seq = tag / 3;
  assert_int_equal(la_send_msg(fd, T_CT, &t.base, WAIT_MS), 0);
}

static void send_end(int fd, uint64_t seq, const char *app, uint32_t rank,
                     const char *reason) {
  La__RankEnd e = LA__RANK_END__INIT;
  e.seq = seq;
  e.app_id = (char *)app;
  e.rank = rank;
  e.reason = (char *)reason;
  e.has_cycles = 1;
  e.cycles = 30;
  assert_int_equal(la_send_msg(fd, T_END, &e.base, WAIT_MS), 0);
}

static uint64_t recv_ack(int fd) {
  La__Ack *a = (La__Ack *)expect(fd, T_ACK);
  uint64_t s = a->seq;
  la_msg_free(&a->base);
  return s;
}

/* A fresh connection of node01 sends the trace of rank of "app" at cycle
 * 0 as its first message (seq 1); it must be acknowledged. */
static void fresh_trace_acked(fx_t *f, uint32_t rank) {
  int fd = login(f, "node01", NULL);
  send_trace(fd, 1, "app", rank, 0);
  assert_int_equal(recv_ack(fd), 1);
  close(fd);
}

/* Asserts nothing arrives on fd within ms. */
static void no_message_within(int fd, int ms) {
  uint16_t type;
  ProtobufCMessage *m = NULL;
  int rc = la_recv_msg(fd, MAXP, ms, &type, &m, NULL, 0);
  if (rc == 0) {
    la_msg_free(m);
    fail_msg("unexpected %s", la_msg_name(type));
  }
  assert_int_equal(rc, LA_ETIMEDOUT);
}

/* ---------------------------------------------------------------- tests */

static void full_session(void **state) {
  fx_t *f = *state;
  la_test_global_t *g = f->g;
  assert_non_null(strstr(la_test_global_addr(g), "127.0.0.1:"));
  uint64_t next = 99;
  int fd = login(f, "node01", &next);
  assert_int_equal(next, 1); /* nothing stored from node01 yet */
  assert_int_equal(la_test_global_count(g, LA_TG_AUTH_OK), 1);

  send_start(fd, 1, "job-7", 2, 4);
  assert_int_equal(recv_ack(fd), 1);
  send_trace(fd, 2, "job-7", 2, 0);
  assert_int_equal(recv_ack(fd), 2);
  send_trace(fd, 3, "job-7", 2, 3);
  assert_int_equal(recv_ack(fd), 3);
  send_trace(fd, 4, "job-7", 2, 0);  /* a resend: same (app, rank, tag) */
  assert_int_equal(recv_ack(fd), 4); /* acked all the same */
  send_end(fd, 5, "job-7", 2, "finalize");
  assert_int_equal(recv_ack(fd), 5);

  assert_int_equal(la_test_global_wait_traces(g, 2, WAIT_MS), 0);
  assert_int_equal(la_test_global_ntraces(g), 2);
  assert_int_equal(la_test_global_duplicates(g), 1);
  assert_int_equal(la_test_global_rank_starts(g), 1);
  assert_int_equal(la_test_global_rank_ends(g), 1);
  assert_int_equal(la_test_global_max_seq(g), 5);
  assert_int_equal(la_test_global_count(g, LA_TG_MESSAGES), 5);
  assert_int_equal(la_test_global_count(g, LA_TG_ACKS), 5);
  assert_int_equal(la_test_global_count(g, LA_TG_LAST_ACK), 5);
  assert_int_equal(la_test_global_count(g, LA_TG_ORPHANS), 0);
  assert_int_equal(la_test_global_count(g, LA_TG_SEQ_ERRORS), 0);
  assert_int_equal(la_test_global_auth_failures(g), 0);

  const la_tg_trace_t *t = la_test_global_trace(g, 0);
  assert_non_null(t);
  assert_string_equal(t->app_id, "job-7");
  assert_string_equal(t->host, "node01");
  assert_int_equal(t->rank, 2);
  assert_int_equal(t->cycle_tag, 0);
  assert_int_equal(t->seq, 2); /* the first copy is the one kept */
  assert_int_equal(t->n_elements, 1000);
  assert_int_equal(t->mode, LA__COMPACT_MODE__COMPACT_POLYLINE);
  assert_int_equal(t->segments_len, 24);
  for (size_t i = 0; i < 24; i++)
    assert_int_equal(t->segments[i], (uint8_t)(2 * 7 + i));
  assert_int_equal(t->count, 1000);
  assert_true(t->sum == 1000.0 && t->min == 0.5 && t->max == 2.0);
  assert_true(t->has_error && t->max_abs == 0.25 && t->rmse == 0.1 &&
              t->cv == 0.05);
  assert_int_equal(t->rank_seq, 0);
  assert_ptr_equal(la_test_global_find(g, "job-7", 2, 3),
                   la_test_global_trace(g, 1));
  assert_null(la_test_global_find(g, "job-7", 2, 6));
  assert_null(la_test_global_find(g, "job-7", 1, 3));
  assert_null(la_test_global_find(g, "job-8", 2, 3));
  assert_null(la_test_global_trace(g, 2));

  const la_tg_rank_start_t *s = la_test_global_rank_start(g, 0);
  assert_non_null(s);
  assert_string_equal(s->app_id, "job-7");
  assert_string_equal(s->app_name, "wavetoy");
  assert_string_equal(s->metric, "time");
  assert_string_equal(s->unit, "ns");
  assert_int_equal(s->rank, 2);
  assert_int_equal(s->nprocs, 4);
  assert_int_equal(s->n_elements, 1000);
  assert_int_equal(s->period, 3);
  assert_int_equal(s->pid, 4242);
  assert_int_equal(s->compact_mode, LA__COMPACT_MODE__COMPACT_POLYLINE);
  const la_tg_rank_end_t *e = la_test_global_rank_end(g, 0);
  assert_non_null(e);
  assert_string_equal(e->reason, "finalize");
  assert_int_equal(e->cycles, 30);
  assert_null(la_test_global_rank_end(g, 1));
  close(fd);
  assert_int_equal(la_test_global_wait(g, LA_TG_CLOSED, 1, WAIT_MS), 0);

  /* The next session from node01 learns where its numbering stands. */
  fd = login(f, "node01", &next);
  assert_int_equal(next, 6);
  close(fd);
  fd = login(f, "node02", &next);
  assert_int_equal(next, 1);
  close(fd);
}

static void wrong_secret_refused(void **state) {
  fx_t *f = *state;
  int fd = cli_connect(f->g);
  char why[256];
  assert_int_equal(handshake(fd, &f->b, "node01", 32, NULL, why, sizeof why),
                   LA_EAUTH);
  assert_non_null(strstr(why, "MAC mismatch"));
  assert_non_null(strstr(why, "same secret file"));
  assert_true(closed_by_peer(fd));
  close(fd);
  assert_int_equal(la_test_global_auth_failures(f->g), 1);
  char last[256];
  la_test_global_last_refusal(f->g, last, sizeof last);
  assert_string_equal(last, why);

  /* A MAC for another host does not pass either. */
  fd = cli_connect(f->g);
  send_hello(fd, LA_PROTOCOL_VERSION, "node01");
  La__Challenge *c = (La__Challenge *)expect(fd, T_CHAL);
  uint8_t mac[32];
  la_auth_mac(&f->a, c->nonce.data, c->nonce.len, "node02", mac);
  la_msg_free(&c->base);
  La__Auth a = LA__AUTH__INIT;
  a.mac.data = mac;
  a.mac.len = sizeof mac;
  assert_int_equal(la_send_msg(fd, T_AUTH, &a.base, WAIT_MS), 0);
  La__AuthResult *r = (La__AuthResult *)expect(fd, T_RES);
  assert_int_equal(r->status, LA_EAUTH);
  la_msg_free(&r->base);
  assert_true(closed_by_peer(fd));
  close(fd);
  assert_int_equal(la_test_global_auth_failures(f->g), 2);

  /* Still serving the right secret; nothing was stored meanwhile. */
  fresh_trace_acked(f, 0);
  assert_int_equal(la_test_global_ntraces(f->g), 1);

  /* The stand-in can be switched to the other secret. */
  assert_int_equal(la_test_global_set_key(f->g, f->key_b), 0);
  fd = cli_connect(f->g);
  assert_int_equal(handshake(fd, &f->b, "node01", 32, NULL, NULL, 0), 0);
  close(fd);
  char bad[128];
  snprintf(bad, sizeof bad, "%s/none", f->dir);
  assert_int_equal(la_test_global_set_key(f->g, bad), LA_EIO);
}

static void forced_refusal_and_accept_any(void **state) {
  fx_t *f = *state;
  la_test_global_set_refuse_auth(f->g, 1);
  int fd = cli_connect(f->g);
  assert_int_equal(handshake(fd, &f->a, "node01", 32, NULL, NULL, 0), LA_EAUTH);
  assert_true(closed_by_peer(fd));
  close(fd);
  assert_int_equal(la_test_global_auth_failures(f->g), 1);
  la_test_global_set_refuse_auth(f->g, 0);

  /* Accept-any mode: any MAC of the right length passes. */
  la_test_global_t *g = la_test_global_start(0, NULL);
  assert_non_null(g);
  fd = la_tcp_connect("127.0.0.1", la_test_global_port(g), WAIT_MS);
  assert_true(fd >= 0);
  assert_int_equal(handshake(fd, NULL, "nodeX", 32, NULL, NULL, 0), 0);
  close(fd);
  fd = la_tcp_connect("127.0.0.1", la_test_global_port(g), WAIT_MS);
  assert_int_equal(handshake(fd, NULL, "nodeX", 16, NULL, NULL, 0), LA_EAUTH);
  close(fd);
  la_test_global_stop(g);

  /* A secret file the stand-in refuses: start fails. */
  chmod(f->key_b, 0644);
  assert_null(la_test_global_start(0, f->key_b));
}

static void protocol_violations(void **state) {
  fx_t *f = *state;
  la_test_global_t *g = f->g;
  /* Data before the handshake: refused with an AuthResult, which is what
   * the LocalAgent waits for during the handshake. */
  int fd = cli_connect(g);
  send_trace(fd, 1, "app", 0, 0);
  La__AuthResult *r = (La__AuthResult *)expect(fd, T_RES);
  assert_int_equal(r->status, LA_EPROTO);
  assert_non_null(strstr(r->message, "expected Hello"));
  la_msg_free(&r->base);
  assert_true(closed_by_peer(fd));
  close(fd);

  /* Hello again instead of Auth. */
  fd = cli_connect(g);
  send_hello(fd, LA_PROTOCOL_VERSION, "node01");
  la_msg_free(expect(fd, T_CHAL));
  send_hello(fd, LA_PROTOCOL_VERSION, "node01");
  r = (La__AuthResult *)expect(fd, T_RES);
  assert_int_equal(r->status, LA_EPROTO);
  assert_non_null(strstr(r->message, "expected Auth"));
  la_msg_free(&r->base);
  assert_true(closed_by_peer(fd));
  close(fd);

  /* Hello after authentication: an Error now. */
  fd = login(f, "node01", NULL);
  send_hello(fd, LA_PROTOCOL_VERSION, "node01");
  La__Error *e = (La__Error *)expect(fd, T_ERR);
  assert_int_equal(e->code, LA_EPROTO);
  assert_non_null(strstr(e->message, "unexpected Hello"));
  la_msg_free(&e->base);
  close(fd);

  /* A protocol version the GlobalAgent does not speak. */
  fd = cli_connect(g);
  send_hello(fd, LA_PROTOCOL_VERSION + 1, "node01");
  r = (La__AuthResult *)expect(fd, T_RES);
  assert_int_equal(r->status, LA_EPROTO);
  assert_non_null(strstr(r->message, "protocol version"));
  char last[256];
  la_test_global_last_refusal(g, last, sizeof last);
  assert_string_equal(last, r->message);
  la_msg_free(&r->base);
  assert_true(closed_by_peer(fd));
  close(fd);

  /* Garbage bytes, before and after the handshake. */
  fd = cli_connect(g);
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  assert_int_equal(la_write_all(fd, junk, sizeof junk - 1, WAIT_MS), 0);
  assert_true(closed_by_peer(fd));
  close(fd);
  fd = login(f, "node01", NULL);
  uint8_t rnd[300];
  for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (uint8_t)(i * 151 + 7);
  assert_int_equal(la_write_all(fd, rnd, sizeof rnd, WAIT_MS), 0);
  assert_true(closed_by_peer(fd));
  close(fd);

  /* A header announcing 1 GiB: refused at once, nothing allocated. */
  fd = login(f, "node01", NULL);
  uint8_t hdr[8] = {0x40, 0, 0, 0, 0, T_CT, 0, 0};
  assert_int_equal(la_write_all(fd, hdr, sizeof hdr, WAIT_MS), 0);
  assert_true(closed_by_peer(fd));
  close(fd);

  /* A well-framed payload that fails validation (rank >= nprocs). */
  fd = login(f, "node01", NULL);
  La__RankStart s = la_test_rank_start_min("app", 4, 4, 10);
  uint8_t buf[256];
  long n = la_frame_pack_into(T_START, &s.base, buf, sizeof buf);
  assert_true(n > 0);
  assert_int_equal(la_write_all(fd, buf, (size_t)n, WAIT_MS), 0);
  e = (La__Error *)expect(fd, T_ERR);
  assert_non_null(strstr(e->message, "rank"));
  la_msg_free(&e->base);
  assert_true(closed_by_peer(fd));
  close(fd);

  assert_int_equal(la_test_global_count(g, LA_TG_PROTOCOL_ERRORS), 8);
  assert_int_equal(la_test_global_ntraces(g), 0);
  assert_int_equal(la_test_global_rank_starts(g), 0);

  /* Through all of that it kept serving. */
  fresh_trace_acked(f, 0);
  assert_int_equal(la_test_global_ntraces(g), 1);
}

static void ack_policies(void **state) {
  fx_t *f = *state;
  la_test_global_t *g = f->g;
  int fd = login(f, "node01", NULL);

  /* Never: stored, not acknowledged. */
  la_test_global_set_ack(g, 0);
  send_trace(fd, 1, "app", 0, 0);
  send_trace(fd, 2, "app", 0, 1);
  assert_int_equal(la_test_global_wait_traces(g, 2, WAIT_MS), 0);
  no_message_within(fd, 200);
  /* Back to each: what waits is acked at once, cumulatively. */
  la_test_global_set_ack(g, 1);
  assert_int_equal(recv_ack(fd), 2);
  no_message_within(fd, 100);

  /* Batches of 3: acks 5 and 8, then 9 once the batch is 50 ms old. (A
   * machine so loaded that 50 ms pass between two sends may flush a batch
   * early; acks stay increasing and fewer than messages.) */
  la_test_global_set_ack(g, 3);
  for (uint64_t s = 3; s <= 9; s++) send_trace(fd, s, "app", 0, s);
  uint64_t acks[7], nacks = 0, last = 2;
  while (last < 9 && nacks < 7) {
    acks[nacks] = recv_ack(fd);
    assert_true(acks[nacks] > last);
    last = acks[nacks++];
  }
  assert_int_equal(last, 9);
  assert_true(nacks <= 3);
  if (nacks == 3) {
    assert_int_equal(acks[0], 5);
    assert_int_equal(acks[1], 8);
  }
  no_message_within(fd, 100);

  /* Delayed: nothing for 300 ms, then one Ack for both. */
  la_test_global_set_ack(g, 1);
  la_test_global_set_ack_delay(g, 300);
  uint64_t start = la_now_ms();
  send_trace(fd, 10, "app", 0, 10);
  send_trace(fd, 11, "app", 0, 11);
  no_message_within(fd, 150);
  assert_int_equal(recv_ack(fd), 11);
  assert_true(la_now_ms() - start >= 290);
  la_test_global_set_ack_delay(g, 0);
  send_trace(fd, 12, "app", 0, 12);
  assert_int_equal(recv_ack(fd), 12);
  close(fd);
  assert_int_equal(la_test_global_ntraces(g), 12);
  assert_int_equal(la_test_global_count(g, LA_TG_LAST_ACK), 12);
}

static void sequence_errors_and_orphans(void **state) {
  fx_t *f = *state;
  la_test_global_t *g = f->g;
  int fd = login(f, "node01", NULL);
  send_trace(fd, 5, "app", 1, 0); /* before its RankStart: an orphan */
  assert_int_equal(recv_ack(fd), 5);
  send_start(fd, 3, "app", 1, 2); /* seq went backwards */
  assert_int_equal(recv_ack(fd), 3);
  send_start(fd, 6, "app", 1, 2); /* RankStart resent */
  assert_int_equal(recv_ack(fd), 6);
  send_end(fd, 7, "app", 1, "disconnected");
  assert_int_equal(recv_ack(fd), 7);
  send_end(fd, 7, "app", 1, "disconnected"); /* same seq twice */
  assert_int_equal(recv_ack(fd), 7);
  close(fd);
  assert_int_equal(la_test_global_count(g, LA_TG_ORPHANS), 1);
  assert_int_equal(la_test_global_count(g, LA_TG_SEQ_ERRORS), 2);
  assert_int_equal(la_test_global_count(g, LA_TG_RANK_DUPLICATES), 2);
  assert_int_equal(la_test_global_rank_starts(g), 1);
  assert_int_equal(la_test_global_rank_ends(g), 1);
  assert_int_equal(la_test_global_max_seq(g), 7);
  /* A new connection starts its own order: a resend from 1 is fine. */
  fresh_trace_acked(f, 1);
  assert_int_equal(la_test_global_count(g, LA_TG_SEQ_ERRORS), 2);
  assert_int_equal(la_test_global_duplicates(g), 1);
}

/* Thousands of traces from several ranks, then all of them resent on a new
 * connection: nothing missing, nothing stored twice. */
static void many_traces_resent(void **state) {
  fx_t *f = *state;
  la_test_global_t *g = f->g;
  enum { RANKS = 4, CYCLES = 600 };
  la_test_global_set_ack(g, 64);
  for (int pass = 0; pass < 2; pass++) {
    int fd = login(f, "node01", NULL);
    uint64_t seq = 0;
    for (uint32_t r = 0; r < RANKS; r++) send_start(fd, ++seq, "big", r, RANKS);
    for (uint64_t c = 0; c < CYCLES; c++)
      for (uint32_t r = 0; r < RANKS; r++) send_trace(fd, ++seq, "big", r, c);
    uint64_t last = 0;
    while (last < seq) last = recv_ack(fd);
    assert_int_equal(last, seq);
    close(fd);
  }
  assert_int_equal(la_test_global_ntraces(g), RANKS * CYCLES);
  assert_int_equal(la_test_global_duplicates(g), RANKS * CYCLES);
  assert_int_equal(la_test_global_rank_starts(g), RANKS);
  for (uint64_t c = 0; c < CYCLES; c++)
    for (uint32_t r = 0; r < RANKS; r++) {
      const la_tg_trace_t *t = la_test_global_find(g, "big", r, c);
      assert_non_null(t);
      assert_int_equal(t->cycle_tag, c);
      assert_int_equal(t->rank, r);
      assert_int_equal(t->conn, 0); /* first copies only */
    }
}

/* The GlobalAgent "crashes" with messages unacknowledged and comes back on
 * the same port; the client resends what was not acked, plus new data. */
static void kill_and_revive(void **state) {
  fx_t *f = *state;
  la_test_global_t *g = f->g;
  uint16_t port = la_test_global_port(g);
  int fd = login(f, "node01", NULL);
  send_start(fd, 1, "app", 0, 1);
  send_trace(fd, 2, "app", 0, 0);
  assert_int_equal(recv_ack(fd), 1);
  assert_int_equal(recv_ack(fd), 2);
  la_test_global_set_ack(g, 0); /* stored but never acked: */
  send_trace(fd, 3, "app", 0, 1);
  assert_int_equal(la_test_global_wait_traces(g, 2, WAIT_MS), 0);
  la_test_global_kill(g);
  la_test_global_kill(g); /* idempotent */
  assert_true(closed_by_peer(fd));
  close(fd);
  assert_true(la_tcp_connect("127.0.0.1", port, 500) < 0);
  /* held until the revival: a bind to port 0 meanwhile (another test's
   * daemon) could be given it */
  int hold = la_td_hold_port(port);
  assert_int_equal(la_test_global_ntraces(g), 2); /* records kept */

  la_test_global_set_ack(g, 1);
  la_td_release_port(&hold);
  assert_int_equal(la_test_global_revive(g), 0);
  assert_int_equal(la_test_global_port(g), port);
  uint64_t next = 0;
  fd = login(f, "node01", &next);
  assert_int_equal(next, 4);      /* the store kept seq 3 */
  send_trace(fd, 3, "app", 0, 1); /* resend of the unacked one */
  assert_int_equal(recv_ack(fd), 3);
  send_trace(fd, 4, "app", 0, 2);
  assert_int_equal(recv_ack(fd), 4);
  send_end(fd, 5, "app", 0, "finalize");
  assert_int_equal(recv_ack(fd), 5);
  close(fd);
  assert_int_equal(la_test_global_ntraces(g), 3);
  assert_int_equal(la_test_global_duplicates(g), 1);
  for (uint64_t c = 0; c < 3; c++)
    assert_non_null(la_test_global_find(g, "app", 0, c));
  assert_int_equal(la_test_global_revive(g), 0); /* running: no-op */

  /* Drop connections: the client sees the close, the listener stays. */
  fd = login(f, "node01", NULL);
  la_test_global_drop_connections(g);
  assert_true(closed_by_peer(fd));
  close(fd);
  fd = login(f, "node01", NULL);
  close(fd);

  /* A fresh stand-in on a given port (the old one's), empty. */
  la_test_global_stop(g);
  f->g = g = la_test_global_start(port, f->key_a);
  assert_non_null(g);
  assert_int_equal(la_test_global_port(g), port);
  assert_int_equal(la_test_global_ntraces(g), 0);
  fd = login(f, "node01", &next);
  assert_int_equal(next, 1);
  close(fd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(full_session),
      T(wrong_secret_refused),
      T(forced_refusal_and_accept_any),
      T(protocol_violations),
      T(ack_policies),
      T(sequence_errors_and_orphans),
      T(many_traces_resent),
      T(kill_and_revive),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
