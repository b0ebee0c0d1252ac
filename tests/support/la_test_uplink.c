/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_uplink.c: simulated LocalAgent uplinks and a GlobalAgent for the
 * benchmarks (la_test_uplink.h). */
#include "la_test_uplink.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "la_secure_io.h"
#include "la_sockio.h"
#include "la_test_msg.h"
#include "la_test_stack.h"
#include "la_time.h"
#include "la_trace_msg.h"

/* Starts g->d on its files (la_ts_ga_files) with the options
 * la_tu_ga_start names; fills g's ports. 0 or -1. */
static int la__ga_run(la_tu_ga_t *g, int fsync, int secret,
                      const char *const *extra, int timeout_ms) {
  char db[600], key[600], apf[600], fpf[600];
  la_td_argv_t a;
  la_td_path(g->d, "secret", key, sizeof key);
  la_td_path(g->d, "la.db", db, sizeof db);
  la_td_path(g->d, "agents.port", apf, sizeof apf);
  la_td_path(g->d, "feed.port", fpf, sizeof fpf);
  la_td_argv_init(&a);
  la_td_argv_add(&a, "--agents.listen=127.0.0.1:0");
  la_td_argv_add(&a, "--feed.listen=127.0.0.1:0");
  la_ts_ga_args(&a, apf, fpf, db, secret ? key : NULL);
  la_td_argv_add(&a, "--store.fsync=%s", fsync ? "yes" : "no");
  la_td_argv_add(&a, "--log.level=error");
  la_td_argv_add(&a, "--stitch.timeout=60s");
  la_td_argv_extend(&a, extra);
  unlink(apf);
  if (la_td_start(g->d, a.v, fpf, timeout_ms) <= 0) return -1;
  snprintf(g->feed_addr, sizeof g->feed_addr, "%s", la_td_addr(g->d));
  int ap = la_td_read_port(apf, timeout_ms);
  if (ap < 0) return -1;
  g->agents_port = (uint16_t)ap;
  snprintf(g->agents_addr, sizeof g->agents_addr, "127.0.0.1:%u",
           g->agents_port);
  return 0;
}

int la_tu_ga_start(la_tu_ga_t *g, int fsync, int secret,
                   const char *const *extra, int timeout_ms) {
  char db[600], apf[600], fpf[600];
  memset(g, 0, sizeof *g);
  g->d = la_td_new("la-globalagent");
  if (!g->d) return -1;
  if (la_ts_ga_files(g->d, sizeof db, g->key, db, apf, fpf) != 0) return -1;
  return la__ga_run(g, fsync, secret, extra, timeout_ms);
}

int la_tu_ga_restart(la_tu_ga_t *g, int fsync, int secret,
                     const char *const *extra, int timeout_ms) {
  if (la_td_stop(g->d, timeout_ms) != 0) return -1;
  return la__ga_run(g, fsync, secret, extra, timeout_ms);
}

void la_tu_init(la_tu_conn_t *c, int secure) {
  memset(c, 0, sizeof *c);
  c->fd = -1;
  c->secure = secure;
}

/* Allocates c's reader and buffers for frames of cap bytes. 0 or -1. */
static int la__buffers(la_tu_conn_t *c, size_t cap) {
  la_frame_reader_init(&c->rd, 1 << 16);
  c->cap = cap;
  c->buf = malloc(c->cap);
  c->rec = malloc(la_secure_record_size(c->cap));
  return c->buf && c->rec ? 0 : -1;
}

int la_tu_open(la_tu_conn_t *c, uint16_t port, const la_auth_key_t *k,
               const char *host, size_t max_frame, int timeout_ms) {
  char why[256];
  uint16_t type;
  ProtobufCMessage *m = NULL;
  c->fd = la_tcp_connect("127.0.0.1", port, timeout_ms);
  if (c->fd < 0) return -1;
  if (c->secure) {
    int32_t status = -1;
    uint64_t next = 1;
    if (la_secure_client_handshake(c->fd, k, host, LA_CIPHER_AUTO, timeout_ms,
                                   &c->sec, &status, &next, why,
                                   sizeof why) != 0 ||
        status != 0)
      return -1;
    c->seq = c->acked = next - 1;
    return la__buffers(c, max_frame);
  }
  La__Hello h = LA__HELLO__INIT;
  h.protocol = LA_PROTOCOL_VERSION;
  h.host = (char *)host;
  if (la_send_msg(c->fd, LA__MSG_TYPE__MSG_HELLO, &h.base, timeout_ms) ||
      la_recv_msg(c->fd, 1 << 16, timeout_ms, &type, &m, why, sizeof why) ||
      type != LA__MSG_TYPE__MSG_CHALLENGE)
    return -1;
  La__Challenge *ch = (La__Challenge *)m;
  uint8_t mac[LA_AUTH_MAC_BYTES];
  la_auth_mac(k, ch->nonce.data, ch->nonce.len, host, mac);
  la_msg_free(m);
  La__Auth au = LA__AUTH__INIT;
  au.mac.data = mac;
  au.mac.len = sizeof mac;
  if (la_send_msg(c->fd, LA__MSG_TYPE__MSG_AUTH, &au.base, timeout_ms) ||
      la_recv_msg(c->fd, 1 << 16, timeout_ms, &type, &m, why, sizeof why) ||
      type != LA__MSG_TYPE__MSG_AUTH_RESULT)
    return -1;
  La__AuthResult *ar = (La__AuthResult *)m;
  int ok = ar->status == 0;
  c->seq = ar->has_next_seq && ar->next_seq ? ar->next_seq - 1 : 0;
  c->acked = c->seq;
  la_msg_free(m);
  return ok ? la__buffers(c, max_frame) : -1;
}

void la_tu_close(la_tu_conn_t *c) {
  if (c->fd >= 0) close(c->fd);
  if (c->buf) la_frame_reader_free(&c->rd);
  free(c->buf);
  free(c->rec);
  la_secure_wipe(&c->sec);
  la_tu_init(c, c->secure);
}

/* Frames m into c->buf and, when c->secure, seals it into c->rec: *out
 * points at what goes on the wire. Its length, or -1. */
static long la__frame(la_tu_conn_t *c, uint16_t type, const ProtobufCMessage *m,
                      const uint8_t **out) {
  long n = la_frame_pack_into(type, m, c->buf, c->cap);
  if (n < 0) return -1;
  *out = c->buf;
  if (!c->secure) return n;
  *out = c->rec;
  return la_secure_seal(&c->sec, c->buf, (size_t)n, c->rec,
                        la_secure_record_size(c->cap));
}

int la_tu_send(la_tu_conn_t *c, uint16_t type, const ProtobufCMessage *m,
               int timeout_ms) {
  const uint8_t *w;
  long n = la__frame(c, type, m, &w);
  if (n < 0) return -1;
  return la_write_all(c->fd, w, (size_t)n, timeout_ms) ? -1 : 0;
}

int la_tu_send_rank_start(la_tu_conn_t *c, const char *app, uint32_t rank,
                          uint32_t nprocs, uint64_t n, const char *host,
                          int timeout_ms) {
  La__RankStart s = la_test_rank_start_min(app, rank, nprocs, n);
  s.seq = ++c->seq;
  s.host = (char *)host;
  return la_tu_send(c, LA__MSG_TYPE__MSG_RANK_START, &s.base, timeout_ms);
}

/* The CompactTrace of la_tu_send_trace in *t (st and fe its parts), with
 * the next sequence number of c. */
static void la__trace(la_tu_conn_t *c, La__CompactTrace *t, La__SeriesStats *st,
                      La__FitError *fe, const char *app, uint32_t rank,
                      uint64_t cycle, uint64_t n,
                      const la_compact_result_t *r) {
  la__series_stats__init(st);
  la__fit_error__init(fe);
  la__compact_trace__init(t);
  la_trace_msg_fill(t, st, fe, r);
  t->seq = ++c->seq;
  t->app_id = (char *)app;
  t->rank = rank;
  t->cycle_tag = cycle;
  t->n_elements = n;
  t->has_t_xfer_ns = 1;
  t->t_xfer_ns = la_realtime_ns();
  t->has_rank_seq = 1;
  t->rank_seq = cycle;
}

int la_tu_send_trace(la_tu_conn_t *c, const char *app, uint32_t rank,
                     uint64_t cycle, uint64_t n, const la_compact_result_t *r,
                     int timeout_ms) {
  La__SeriesStats st;
  La__FitError fe;
  La__CompactTrace t;
  la__trace(c, &t, &st, &fe, app, rank, cycle, n, r);
  return la_tu_send(c, LA__MSG_TYPE__MSG_COMPACT_TRACE, &t.base, timeout_ms);
}

int la_tu_batch_trace(la_tu_conn_t *c, la_tu_batch_t *b, const char *app,
                      uint32_t rank, uint64_t cycle, uint64_t n,
                      const la_compact_result_t *r,
                      const la_compact_result_t *rr) {
  La__SeriesStats st, rst;
  La__FitError fe;
  La__CompactTrace t;
  const uint8_t *w;
  la__trace(c, &t, &st, &fe, app, rank, cycle, n, r);
  if (rr) {
    la__series_stats__init(&rst);
    la_trace_msg_robust(&t, &rst, rr);
  }
  long len = la__frame(c, LA__MSG_TYPE__MSG_COMPACT_TRACE, &t.base, &w);
  if (len < 0) return -1;
  if (b->len + (size_t)len > b->cap) {
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + (size_t)len) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
  }
  if (b->n == b->ncap) {
    uint32_t nc = b->ncap ? 2 * b->ncap : 64;
    size_t *e = realloc(b->end, nc * sizeof *e);
    if (!e) return -1;
    b->end = e;
    b->ncap = nc;
  }
  memcpy(b->p + b->len, w, (size_t)len);
  b->len += (size_t)len;
  b->end[b->n++] = b->len;
  return 0;
}

void la_tu_batch_reset(la_tu_batch_t *b) {
  b->len = 0;
  b->n = 0;
}

void la_tu_batch_free(la_tu_batch_t *b) {
  free(b->p);
  free(b->end);
  memset(b, 0, sizeof *b);
}

int la_tu_read_acks(la_tu_conn_t *c) {
  uint8_t tmp[4096];
  ssize_t n = recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT);
  if (n == 0) return -1;
  if (n < 0) return errno == EAGAIN || errno == EINTR ? 0 : -1;
  if (la_frame_reader_feed(&c->rd, tmp, (size_t)n)) return -1;
  uint16_t type;
  const uint8_t *p;
  uint32_t len;
  int k;
  while ((k = la_frame_reader_next(&c->rd, &type, &p, &len)) == 1) {
    ProtobufCMessage *m = NULL;
    uint8_t *plain = NULL;
    if (c->secure && (type != LA__MSG_TYPE__MSG_SEALED ||
                      la_secure_open(&c->sec, p, len, 1 << 16, &plain, &type,
                                     &p, &len, NULL, 0) != 0))
      return -1;
    int bad = type != LA__MSG_TYPE__MSG_ACK ||
              la_msg_decode(type, p, len, &m, NULL, 0);
    free(plain);
    if (bad) return -1;
    uint64_t s = ((La__Ack *)m)->seq;
    la_msg_free(m);
    if (s > c->acked) c->acked = s;
  }
  return k < 0 ? -1 : 0;
}

int la_tu_wait_acked(la_tu_conn_t *c, int timeout_ms) {
  while (c->acked < c->seq) {
    struct pollfd p = {c->fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0 || la_tu_read_acks(c)) return -1;
  }
  return 0;
}

long long la_tu_proc_field(pid_t pid, const char *file, const char *field) {
  char path[64], line[256];
  size_t fl = strlen(field);
  long long v = -1;
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, fl) && line[fl] == ':') {
      v = strtoll(line + fl + 1, NULL, 10);
      break;
    }
  fclose(f);
  return v;
}

long la_tu_proc_kib(pid_t pid, const char *field) {
  return (long)la_tu_proc_field(pid, "status", field);
}
