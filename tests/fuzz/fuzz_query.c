/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_query.c: libFuzzer target for the GlobalAgent's store and feed query
 * path, from bytes a LocalAgent or a subscriber sent to what the daemon
 * would answer. The input is a stream of frames (la_frame_reader, max 1 MiB
 * payload); each is decoded and validated (la_msg_decode) as the daemon does,
 * then RankStart, CompactTrace and RankEnd are stored in a fresh in-memory
 * store (store/store.c, one batch per message, as the ingest path
 * does), and a Query first closes the open Trace-Sets (complete when every
 * rank is present, as the stitcher's timeout would) and is then answered
 * by the GlobalAgent's own answering code (store/feed_query.c: apps,
 * cycles, traceset, or a refusal such as another feed protocol version),
 * the typed reply packed and decoded again. Properties: no crash, leak or
 * UB; every reply the store yields carries the feed protocol version,
 * encodes and passes the codec's own validation (a subscriber would
 * otherwise drop it). The libuv connection, the subscriber queue and live
 * publication are not exercised (the daemon's tests do that).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_query.h"
#include "la_codec.h"
#include "la_errcodes.h"
#include "store.h"

static void la__check(int ok) {
  if (!ok) abort();
}

/* Packs reply r and checks that a subscriber would accept it. */
static void la__send(La__QueryReply *r) {
  uint8_t *f = NULL;
  size_t n = 0;
  if (la_frame_pack(LA__MSG_TYPE__MSG_QUERY_REPLY, &r->base, &f, &n) != 0)
    return; /* out of memory only */
  ProtobufCMessage *m = NULL;
  char why[256];
  int rc = la_msg_decode(LA__MSG_TYPE__MSG_QUERY_REPLY,
                         f + LA_FRAME_HEADER_LEN, n - LA_FRAME_HEADER_LEN, &m,
                         why, sizeof why);
  la__check(rc == 0);
  la_msg_free(m);
  free(f);
}

/* Closes every open set, complete when all nprocs ranks are present. */
static void la__close_open(la_store_t *st) {
  la_store_open_set_t *v = NULL;
  size_t n = 0;
  if (la_store_open_sets(st, &v, &n) != 0) return;
  for (size_t i = 0; i < n; i++) {
    int complete = v[i].nprocs > 0 && v[i].n_ranks == v[i].nprocs;
    if (la_store_begin(st) != 0) break;
    if (la_store_set_closed(st, v[i].app_id, v[i].cycle_tag, complete, NULL,
                            0, 1) != 0 ||
        la_store_commit(st) != 0)
      la_store_rollback(st);
  }
  la_store_free_open_sets(v, n);
}

/* The feed's answer to q (feed_query.c, what globalagent/feed.c sends),
 * without the connection. */
static void la__query(la_store_t *st, const La__Query *q) {
  la_ga_answer_t a;
  int rc = la_ga_answer(st, q, &a);
  la__check(rc == a.reply.status && rc <= 0);
  la__check(a.reply.has_feed_protocol &&
            a.reply.feed_protocol == LA_FEED_PROTOCOL_VERSION);
  la__send(&a.reply);
  la_ga_answer_free(&a);
}

/* Stores one ingest message in its own batch. */
static void la__ingest(la_store_t *st, uint16_t type, ProtobufCMessage *m) {
  if (la_store_begin(st) != 0) return;
  int rc = LA_EINVAL;
  if (type == LA__MSG_TYPE__MSG_RANK_START)
    rc = la_store_rank_start(st, (La__RankStart *)m, NULL);
  else if (type == LA__MSG_TYPE__MSG_COMPACT_TRACE)
    rc = la_store_trace(st, (La__CompactTrace *)m, NULL);
  else if (type == LA__MSG_TYPE__MSG_RANK_END)
    rc = la_store_rank_end(st, (La__RankEnd *)m, NULL);
  la__check(rc == 0 || rc == LA_EPROTO || rc == LA_EINVAL);
  if (rc == 0)
    la__check(la_store_commit(st) == 0);
  else
    la_store_rollback(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  la_store_t *st = NULL;
  char why[256];
  if (la_store_open(":memory:", 0, &st, why, sizeof why) != 0) abort();
  la_frame_reader_t r;
  la_frame_reader_init(&r, 1u << 20);
  if (la_frame_reader_feed(&r, data, size) == 0) {
    uint16_t type;
    const uint8_t *p;
    uint32_t n;
    while (la_frame_reader_next(&r, &type, &p, &n) == 1) {
      ProtobufCMessage *m = NULL;
      if (la_msg_decode(type, p, n, &m, why, sizeof why) != 0) continue;
      if (type == LA__MSG_TYPE__MSG_QUERY) {
        la__close_open(st);
        la__query(st, (La__Query *)m);
      } else {
        la__ingest(st, type, m);
      }
      la_msg_free(m);
    }
  }
  la_frame_reader_free(&r);
  la_store_close(st);
  return 0;
}
