/* fuzz_query.c: libFuzzer target for the GlobalAgent's store and feed query
 * path, from bytes a LocalAgent or a subscriber sent to what the daemon
 * would answer. The input is a stream of frames (la_frame_reader, max 1 MiB
 * payload); each is decoded and validated (la_msg_decode) as the daemon does,
 * then RankStart, CompactTrace and RankEnd are stored in a fresh in-memory
 * store (globalagent/store.c, one batch per message, as the ingest path
 * does), and a Query first closes the open Trace-Sets (complete when every
 * rank is present, as the stitcher's timeout would) and is then answered
 * the way globalagent/feed.c does (apps, cycles, traceset), the reply packed
 * and decoded again. Properties: no crash, leak or UB; every reply the store
 * yields encodes and passes the codec's own validation (a subscriber would
 * otherwise drop it). The libuv connection, the subscriber queue and live
 * publication are not exercised (the daemon's tests do that).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_codec.h"
#include "la.h"
#include "la_status.h"
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

static void la__reply(int status, const char *msg, La__QueryReply *r) {
  r->status = status;
  r->message = (char *)msg;
  la__send(r);
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

/* The feed's answer to q (globalagent/feed.c), without the connection. */
static void la__query(la_store_t *st, const La__Query *q) {
  La__QueryReply r = LA__QUERY_REPLY__INIT;
  La__StatusReply *rows = la_status_new("rows");
  if (!rows) return;
  if (!strcmp(q->what, "apps")) {
    la_store_app_t *a = NULL;
    size_t n = 0;
    if (la_store_apps(st, &a, &n) == 0) {
      for (size_t i = 0; i < n; i++)
        la_status_row(rows, a[i].app_id, "name=%s nprocs=%u metric=%s",
                      a[i].app_name, a[i].nprocs, a[i].metric);
      free(a);
    }
  } else if (!strcmp(q->what, "cycles") && q->app_id && q->app_id[0]) {
    la_store_cycle_t *c = NULL;
    size_t n = 0;
    uint64_t first = q->has_cycle_tag ? q->cycle_tag : 0;
    uint64_t last = q->has_cycle_last ? q->cycle_last : UINT64_MAX;
    if (la_store_cycles(st, q->app_id, first, last, &c, &n) == 0) {
      for (size_t i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "%llu", (unsigned long long)c[i].cycle_tag);
        la_status_row(rows, key, "ranks=%u missing=%u", c[i].ranks_present,
                      c[i].n_missing);
      }
      free(c);
    }
  } else if (!strcmp(q->what, "traceset") && q->app_id && q->app_id[0]) {
    uint64_t tag = q->cycle_tag;
    La__TraceSet *set = NULL;
    if ((q->has_cycle_tag ||
         la_store_latest_cycle(st, q->app_id, LA_STORE_LATEST_ANY, &tag) ==
             0) &&
        la_store_load_set(st, q->app_id, tag, &set) == 0) {
      r.n_sets = 1;
      r.sets = &set;
      la__reply(0, NULL, &r);
      la_store_free_set(set);
    }
    la_status_free(rows);
    return;
  }
  r.n_rows = rows->n_entries;
  r.rows = rows->entries;
  la__reply(0, NULL, &r);
  la_status_free(rows);
}

/* Stores one ingest message in its own batch. */
static void la__ingest(la_store_t *st, uint16_t type, ProtobufCMessage *m) {
  if (la_store_begin(st) != 0) return;
  int rc = LA_EINVAL;
  if (type == LA__MSG_TYPE__MSG_RANK_START)
    rc = la_store_rank_start(st, (La__RankStart *)m);
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
