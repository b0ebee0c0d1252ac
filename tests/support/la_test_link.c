/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_link.c: a hand-played LocalAgent link (see la_test_link.h). */
#include "la_test_link.h"

#include <stdio.h>
#include <unistd.h>

#include "la_auth.h"
#include "la_codec.h"
#include "la_errcodes.h"
#include "la_errors.h"
#include "la_secure_io.h"
#include "la_sockio.h"
#include "la_test_msg.h"
#include "la_time.h"
#include "la_trace_msg.h"

int la_test_link_open(la_test_link_t *l, uint16_t port, const char *key_path,
                      const char *host, int timeout_ms, int32_t *status,
                      char *why, size_t n) {
  return la_test_link_open_cipher(l, port, key_path, host, LA_CIPHER_AUTO,
                                  timeout_ms, status, why, n);
}

int la_test_link_open_cipher(la_test_link_t *l, uint16_t port,
                             const char *key_path, const char *host,
                             la_cipher_pref_t pref, int timeout_ms,
                             int32_t *status, char *why, size_t n) {
  l->fd = -1;
  l->seq = 0;
  l->refusals = 0;
  la_auth_key_t k;
  int rc = la_auth_load_key(key_path, &k, why, n);
  if (rc) return rc;
  l->fd = la_tcp_connect("127.0.0.1", port, timeout_ms);
  if (l->fd < 0) {
    rc = l->fd;
    snprintf(why, n, "connect to port %u: %s", port, la_strerror(rc));
    la_auth_key_wipe(&k);
    return rc;
  }
  uint64_t next = 1;
  *status = -1;
  rc = la_secure_client_handshake(l->fd, &k, host, pref, timeout_ms, &l->sec,
                                  status,
                                  &next, why, n);
  la_auth_key_wipe(&k);
  l->seq = next > 0 ? next - 1 : 0;
  return rc;
}

int la_test_link_rank_start(la_test_link_t *l, const char *host,
                            const char *app_id, uint32_t rank, uint32_t nprocs,
                            uint64_t n) {
  return la_test_link_rank_start_uid(l, host, app_id, rank, nprocs, n, -1);
}

int la_test_link_rank_start_uid(la_test_link_t *l, const char *host,
                                const char *app_id, uint32_t rank,
                                uint32_t nprocs, uint64_t n, long uid) {
  La__RankStart s = la_test_rank_start(app_id, NULL, rank, nprocs, n);
  s.seq = ++l->seq;
  if (uid >= 0) {
    s.has_owner_uid = 1;
    s.owner_uid = (uint32_t)uid;
  }
  s.metric = "custom";
  s.unit = "user";
  s.host = (char *)host;
  return la_secure_send_msg(l->fd, &l->sec, LA__MSG_TYPE__MSG_RANK_START,
                            &s.base, 5000);
}

int la_test_link_trace(la_test_link_t *l, const char *app_id, uint32_t rank,
                       uint64_t tag, const la_compact_result_t *r,
                       const uint8_t *bytes, size_t len) {
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  la_trace_msg_fill(&t, &st, NULL, r);
  if (bytes) {
    t.segments.data = (uint8_t *)bytes;
    t.segments.len = len;
  }
  t.app_id = (char *)app_id;
  t.rank = rank;
  t.cycle_tag = tag;
  t.n_elements = r->stats.count;
  return la_test_link_send_trace(l, &t);
}

int la_test_link_rank_end(la_test_link_t *l, const char *app_id,
                          uint32_t rank) {
  La__RankEnd e = LA__RANK_END__INIT;
  e.seq = ++l->seq;
  e.app_id = (char *)app_id;
  e.rank = rank;
  e.reason = "finalize";
  return la_secure_send_msg(l->fd, &l->sec, LA__MSG_TYPE__MSG_RANK_END,
                            &e.base, 5000);
}

int la_test_link_send_trace(la_test_link_t *l, La__CompactTrace *t) {
  t->seq = ++l->seq;
  return la_secure_send_msg(l->fd, &l->sec, LA__MSG_TYPE__MSG_COMPACT_TRACE,
                            &t->base, 5000);
}

int la_test_link_wait_acked(la_test_link_t *l, int timeout_ms, char *why,
                            size_t n) {
  long long end = (long long)la_now_ms() + timeout_ms;
  uint64_t acked = 0;
  while (acked < l->seq) {
    long long left = end - (long long)la_now_ms();
    if (left <= 0) {
      snprintf(why, n, "Ack %llu never came (last %llu)",
               (unsigned long long)l->seq, (unsigned long long)acked);
      return LA_ETIMEDOUT;
    }
    uint16_t type = 0;
    ProtobufCMessage *m = NULL;
    int sealed = 0;
    int rc = la_secure_recv_msg(l->fd, &l->sec, 1 << 16, (int)left, &type, &m,
                                &sealed, why, n);
    if (rc) return rc;
    if (type == LA__MSG_TYPE__MSG_RANK_REFUSED) {
      const La__RankRefused *x = (const La__RankRefused *)m;
      l->refusals++;
      l->refused_seq = x->seq;
      l->refused_rank = x->rank;
      snprintf(l->refused_reason, sizeof l->refused_reason, "%s", x->reason);
      la_msg_free(m);
      continue;
    }
    if (type != LA__MSG_TYPE__MSG_ACK) {
      snprintf(why, n, "expected an Ack, got %s", la_msg_name(type));
      la_msg_free(m);
      return LA_EPROTO;
    }
    acked = ((La__Ack *)m)->seq;
    la_msg_free(m);
  }
  return 0;
}

void la_test_link_close(la_test_link_t *l) {
  if (l->fd >= 0) close(l->fd);
  l->fd = -1;
}
