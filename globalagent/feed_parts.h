/* SPDX-License-Identifier: BSD-3-Clause */
/* feed_parts.h: a feed connection's queue of Trace-Sets sent in parts
 * (feed_parts.c), and the encoding those sets share.
 *
 * A set is encoded once (la_ga_enc_t, its TraceSet without the dropped
 * field), shared by every queue that holds it, and sent as a TraceSetHead
 * and TraceSetPart frames of at most feed.part_bytes, queued to the
 * connection only as its socket drains (la_ga_partq_pump from on_written).
 * A set a queue will not take (la_ga_over) is announced by a SetNotice.
 *
 * feed.c owns the connections and embeds one queue in each: it decides
 * which sets are offered and when; this file how they are bounded, cut
 * and sent. Loop thread, except where a function says any thread.
 */
#ifndef LA_GLOBALAGENT_FEED_PARTS_H
#define LA_GLOBALAGENT_FEED_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "ga.h"

/* A Trace-Set encoded once (without its dropped field), shared by the
 * queues holding it; freed with its last reference (la_ga_enc_unref).
 * Read-only outside feed_parts.c, but for ready. An encoding made by
 * la_ga_enc_alloc is measured (len) but not written until la_ga_enc_fill
 * has run (on the thread pool) and its owner set ready: queues take it
 * and bound it meanwhile, and send nothing of it, nor of what follows it,
 * before it is ready. */
typedef struct la_ga_enc {
  int refs;
  int ready;   /* data written (loop thread only) */
  int counted; /* in la_ga_enc_held (queued once, loop thread) */
  /* len known (la_ga_enc_alloc, or la_ga_enc_fill of an la_ga_enc_unsized
   * one: the loop reads it once that fill returned); failed: the fill ran
   * out of memory, len is the size it needed and nothing is written */
  int sized, failed;
  char app[LA_MAX_ID_LEN + 1];
  uint64_t tag;
  size_t len;
  uint8_t *data; /* len bytes: after the struct, or its own block */
} la_ga_enc_t;

/* One connection's sets in parts, oldest first. */
typedef struct la_ga_partq la_ga_partq_t;

/* The bound of feed memory n more bytes would pass, by name
 * ("feed.memory" for every feed connection together;
 * "feed.memory_per_address" with own, for q's address: n is held for q
 * alone), its value in *limit; NULL when they fit. feed.c defines it (it
 * knows every connection) and hands it to la_ga_partq_init, so that this
 * layer does not call up into feed.c. Loop thread. */
typedef const char *la_ga_room_fn(const la_ga_partq_t *q, size_t n, int own,
                                  uint64_t *limit);

struct la_ga_partq {
  /* set by la_ga_partq_init */
  la_ga_t *ga;
  la_conn_t *conn; /* where the frames go */
  la_ga_room_fn *room; /* the feed's memory bounds (la_ga_room_fn) */
  /* set by the owner: Subscribe.max_set_bytes (0: none) */
  uint64_t max_set;
  /* the subscriber's sets sent whole and not delivered to it (dropped or
   * announced); the owner counts its whole-frame sets here too */
  uint64_t sent, dropped;
  /* read-only outside feed_parts.c: the sets queued (NULL: none), the
   * bytes not yet handed over of those answering queries, and the bytes of
   * the sets queued for this connection alone (query answers and a
   * Subscribe's stored sets, whole until their last part is handed over:
   * counted in its address's share of feed.memory) */
  struct la_ga_out *out;
  size_t query_pending;
  size_t own_bytes;
  /* set by the owner: the connection's output limit by name (its value is
   * the connection's max_out): "feed.max_output" or "feed.queue_bytes" */
  const char *limit_name;
  /* la_ga_partq_end ran: nothing more is queued or sent but its Error */
  int ended;
  /* feed_parts.c's */
  struct la_ga_out **out_tail;
  size_t out_pending; /* bytes of the sets queued not yet handed over */
  /* a Subscribe's stored sets are being read (la_ga_partq_hold): nothing
   * is sent, and live sets queued meanwhile (held_bytes of them, after
   * *hold_at) wait for the stored ones to go before them */
  int hold_out;
  size_t held_bytes;
  struct la_ga_out **hold_at;
  /* sets queued in order whose admission waits (la_ga_partq_resolve) */
  size_t unsized;
  /* bytes of the SetNotices queued behind sets not handed over yet */
  size_t notice_bytes;
};

/* Makes *q an empty queue of ga's sending to conn (q zeroed before). */
void la_ga_partq_init(la_ga_partq_t *q, la_ga_t *ga, la_conn_t *conn,
                      la_ga_room_fn *room);

/* Frees what q holds (its connection is being freed). */
void la_ga_partq_free(la_ga_partq_t *q);

/* Offers e to a subscriber of sets_version 2: queued in parts (a
 * reference taken) and pumped, or announced by a SetNotice and counted
 * when it is over q->max_set or would overfill a queue that already holds
 * something (la_ga_over with feed.queue_bytes), or out of memory. */
void la_ga_partq_offer(la_ga_partq_t *q, la_ga_enc_t *e);

/* Decides, in queue order, on q's sets offered while an unsized encoding
 * ahead of them waited (la_ga_enc_unsized): each is taken or announced as
 * la_ga_partq_offer would have, up to the first not ready yet. Call when
 * an encoding was made ready; it pumps nothing. */
void la_ga_partq_resolve(la_ga_partq_t *q);

/* Sends q's subscriber a SetNotice: the set app_id/tag (set_bytes of
 * encoding, 0 when unknown) will not reach it, limit_name = limit saying
 * why ("store", 0: it could not be read back to publish). It takes its
 * place after the sets queued (and a Subscribe's stored sets being read),
 * and is sent once they are handed over; a connection whose notices would
 * pass its output limit ends as la_ga_partq_send's. Counted in
 * set_notices and q->dropped; not logged. */
void la_ga_partq_notice(la_ga_partq_t *q, const char *app_id, uint64_t tag,
                        size_t set_bytes, const char *limit_name,
                        uint64_t limit);

/* Queues e, the set answering a Query (its head marked query, not counted
 * in sent), after the sets queued, a reference taken. No bound is applied
 * (the caller measured it, la_ga_over) and nothing is sent: pump once the
 * QueryReply is. 0 or LA_ENOMEM. */
int la_ga_partq_query(la_ga_partq_t *q, la_ga_enc_t *e);

/* Queues q's next frames while less than two parts' worth waits in the
 * connection's socket and one more part stays within its output limit and
 * the feed's memory (la_ga_feed_room; a queue stopped by that is pumped
 * again by la_ga_partq_unstall once memory is freed);
 * a set's last part ends it (counted in sent unless it answers a query).
 * Nothing while q is held, nor while its next set's encoding is not
 * ready (its owner pumps the queues once it is). */
void la_ga_partq_pump(la_ga_partq_t *q);

/* Whether a queue stopped for the feed's memory since the last call (then
 * the caller pumps every queue). Clears the flag. Loop thread. */
int la_ga_partq_unstall(void);

/* A Subscribe's stored sets are being read: nothing is sent from q, and
 * live sets offered meanwhile wait behind the stored ones. */
void la_ga_partq_hold(la_ga_partq_t *q);

/* Offers a stored set read while q was held: it goes before the live sets
 * held, bounded by what was queued before them (la_ga_partq_offer);
 * nothing is sent until la_ga_partq_release. */
void la_ga_partq_offer_stored(la_ga_partq_t *q, la_ga_enc_t *e);

/* Ends q's hold: sets are offered at its end again. Does not pump. */
void la_ga_partq_release(la_ga_partq_t *q);

/* Sends m on q's connection unless q ended, within the connection's
 * output limit: a message that would pass it (something else already
 * waiting) ends q instead (la_ga_partq_end). Returns 0, or a negative LA_E*
 * code (LA_ELIMIT: ended). */
int la_ga_partq_send(la_ga_partq_t *q, uint16_t type,
                     const ProtobufCMessage *m);

/* Ends q's connection over a limit (name = limit, n the bytes that did not
 * fit): logged, its queued sets dropped, an Error naming the limit queued
 * after what is already queued, and the connection closed gracefully once
 * that is written (the peer reads the Error, then end of stream); a peer
 * that has not read it within agents.handshake_timeout is disconnected.
 * Idempotent. */
void la_ga_partq_end(la_ga_partq_t *q, const char *name, uint64_t limit,
                     size_t n);


/* Bytes of the encodings feed queues hold now (each counted once,
 * however many queues share it). Loop thread. */
size_t la_ga_enc_held(void);

/* Drops a reference to e (NULL: nothing). Loop thread, or the one thread
 * that holds e alone. */
void la_ga_enc_unref(la_ga_enc_t *e);

/* Bytes of set's encoding in parts: without its dropped field. Any
 * thread. */
size_t la_ga_set_bytes(const La__TraceSet *set);

/* set encoded once for subscribers that take parts (dropped left out: it
 * travels in each subscriber's TraceSetHead), one reference; NULL when out
 * of memory. Any thread: it logs nothing. */
la_ga_enc_t *la_ga_encode_quiet(const La__TraceSet *set);

/* set measured for an encoding written later (la_ga_enc_fill), one
 * reference, not ready; NULL when out of memory. Any thread: it logs
 * nothing. */
la_ga_enc_t *la_ga_enc_alloc(const La__TraceSet *set);

/* An encoding of set not measured yet (sized 0): la_ga_enc_fill measures
 * and writes it, on the thread pool. Queues offered it keep its place
 * and decide whether they take it once it is measured
 * (la_ga_partq_resolve), so measuring a set of 10^4 ranks costs the loop
 * nothing and the sets, notices and new subscribers around it keep their
 * order. One reference, not ready; NULL when out of memory. Any thread. */
la_ga_enc_t *la_ga_enc_unsized(const La__TraceSet *set);

/* Writes set's encoding into e, which la_ga_enc_alloc or la_ga_enc_unsized
 * made for set (set unchanged since), measuring it first when unsized (out
 * of memory: e->failed). Any thread holding set; it touches neither
 * e->refs nor e->ready. */
void la_ga_enc_fill(la_ga_enc_t *e, const La__TraceSet *set);

/* la_ga_encode_quiet, logging a failure (la_ga_encode_failed). */
la_ga_enc_t *la_ga_encode(const La__TraceSet *set);

/* Logs that app's set of cycle tag (n bytes) could not be encoded. */
void la_ga_encode_failed(const char *app, uint64_t tag, size_t n);

/* The limit that keeps a set of len bytes from a connection, by name
 * ("max_set_bytes": over max, the bound it asked for, 0: none;
 * queue_name = queue_bytes: queued, the bytes already waiting that count,
 * is not 0 and would pass it), with its value in *limit; NULL when the set
 * may be queued. Any thread (it reads only its arguments). */
const char *la_ga_over(const char *queue_name, uint64_t queue_bytes, size_t len,
                       uint64_t max, size_t queued, uint64_t *limit);

#endif /* LA_GLOBALAGENT_FEED_PARTS_H */
