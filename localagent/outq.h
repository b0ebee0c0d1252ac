/* SPDX-License-Identifier: BSD-3-Clause */
/* outq.h: the LocalAgent's ordered queue of messages for the GlobalAgent,
 * written ahead to a segment log (seglog.h) so that nothing it accepted is
 * lost when the agent is killed.
 *
 * Every message (RankStart, CompactTrace, TraceMissing, RankEnd) is appended
 * to the log — one write(2), so it survives the process — before it joins
 * the in-memory send queue; a copy stays in memory while the copies fit in
 * mem_limit, otherwise the message is read back from the log when it is
 * sent. Sequence numbers (uint64, from 1, strictly increasing in log order,
 * never reused across restarts) are handed out inside la_outq_append, so the
 * log order is the seq order even with several appending threads. The
 * GlobalAgent acknowledges cumulatively; an acknowledged message leaves the
 * queue, an ack record is logged and segments whose messages are all
 * acknowledged are deleted.
 *
 * Beside messages the log records what is needed to account for every cycle
 * after a crash: that a cycle was taken (resolved by the cycle's
 * CompactTrace or TraceMissing): marked in a slot of the mapped taken
 * table (takentab.h: no write(2)), its "taken" record then written just
 * before the record that resolves it, in the same write; without a free
 * slot (or with fsync_each), a taken record of its own at once. And which
 * ranks are registered (opened by RankStart, closed by RankEnd). A new
 * segment starts with a checkpoint of this state, so old segments can go as
 * soon as their messages are acknowledged. At open the log is replayed:
 * unacknowledged messages are queued again in seq order (sent first), and
 * la_outq_recovered lists the taken cycles without a trace and the ranks
 * without an end, for the caller to record as missing / ended. Damage in
 * the log (seglog.h: skipped, the records after it kept) may have held a
 * cycle's trace: a taken cycle that a damaged span follows and nothing
 * resolves is listed by la_outq_damaged instead, for a TraceMissing that
 * says so.
 *
 * Use:
 *   la_outq_open(...)                       replays the log
 *   la_outq_recovered(q, cb, arg)           once, at start-up
 *   la_outq_damaged(q, cb, arg)             once, at start-up
 *   la_outq_taken(q, &key)                  worker: before reading a buffer
 *   la_outq_append(q, flags, &key, enc, arg, &seq)   any thread
 *   while (la_outq_next(q, &s, &b, &n) > 0) { write b; }   loop thread
 *   la_outq_ack(q, acked_seq); la_outq_rewind(q);          loop thread
 *   la_outq_sync(q)                         periodically (fsync)
 *   la_outq_close(q)
 *
 * Threads: la_outq_taken, la_outq_append, la_outq_get_stats and
 * la_outq_sync may be called from any thread (one mutex); the others from
 * the loop thread only. Without a log directory the queue is memory only:
 * nothing survives the process, and taken records are not kept.
 *
 * Memory: mem_limit bytes of message copies, plus a 48-byte descriptor per
 * unacknowledged message, plus one read buffer as large as the largest
 * message read back from the log, plus the open ranks and pending taken
 * cycles (bounded by the agent's max_apps and jobs in flight).
 * Disk: log_limit bytes for messages; records that account for cycles and
 * acks (taken, TraceMissing, ack, checkpoints) may use LA_OUTQ_LOG_RESERVE
 * more, so a full log still records what it refuses.
 * Deliberately not here: sockets, protobuf (the caller's encode function
 * packs the frame), logging (notes go to the note function), the event loop.
 */
#ifndef LA_OUTQ_H
#define LA_OUTQ_H

#include <stddef.h>
#include <stdint.h>

/* Largest message the queue accepts or reads back (a sanity bound: the
 * codec's frame limit is the real one and is lower). */
#define LA_OUTQ_MAX_ITEM ((uint32_t)1 << 30)
#define LA_OUTQ_LOG_RESERVE ((uint64_t)1 << 20)
#define LA_OUTQ_SEG_BYTES ((uint64_t)8 << 20) /* default segment size */

/* What an appended message does to the recorded state. */
enum {
  LA_OUTQ_OPENS_RANK = 1,   /* RankStart: (app, rank) registered */
  LA_OUTQ_CLOSES_RANK = 2,  /* RankEnd */
  LA_OUTQ_RESOLVES = 4,     /* CompactTrace or TraceMissing of a taken cycle */
  LA_OUTQ_MISSING = 8       /* a TraceMissing (counted; may use the reserve) */
};

/* What la_outq_recovered reports. */
enum { LA_OUTQ_REC_TAKEN = 1, LA_OUTQ_REC_RANK = 2 };

typedef struct la_outq la_outq_t;

typedef struct la_outq_key {
  const char *app_id; /* NUL-terminated, at most 255 bytes are kept */
  uint32_t rank;
  uint64_t cycle_tag; /* 0 for ranks */
} la_outq_key_t;

typedef struct la_outq_stats {
  uint64_t items;         /* unacknowledged messages */
  uint64_t mem_items;     /* ... with a copy in memory */
  uint64_t mem_bytes;     /* their bytes */
  uint64_t log_items;     /* ... that are in the log (all, with a log) */
  uint64_t log_bytes;     /* size of the log's segment files */
  uint64_t log_segments;  /* number of segment files */
  uint64_t next_seq;      /* the next seq handed out */
  uint64_t last_acked;    /* highest acknowledged seq */
  uint64_t last_sent;     /* highest seq returned by la_outq_next */
  uint64_t pushed;        /* messages appended since open */
  uint64_t acked;         /* messages acknowledged since open */
  uint64_t dropped;       /* appends refused (full, I/O error, memory) */
  uint64_t replayed;      /* unacknowledged messages found at open */
  uint64_t missing;       /* TraceMissing messages appended since open */
  uint64_t taken;         /* taken records since open */
  uint64_t pending_taken; /* taken cycles without trace or missing record */
  uint64_t open_ranks;    /* ranks with a RankStart and no RankEnd */
  uint64_t torn_bytes;    /* bytes cut from torn log tails at open */
  uint64_t damaged_bytes; /* damaged log bytes skipped at open */
  uint64_t damaged_spans; /* damaged spans skipped at open */
  uint64_t damaged_taken; /* taken cycles la_outq_damaged reports */
  uint64_t bad_reads;     /* messages that could not be read back (lost) */
  uint64_t fsyncs;        /* la_outq_sync calls that synced something */
} la_outq_stats_t;

/* Receives one line per event worth logging (a torn tail truncated, damage
 * skipped, a write or fsync that failed). May be called from any appending
 * thread. */
typedef void (*la_outq_note_fn)(void *arg, const char *msg);

/* Packs the message with seq into a malloc'ed frame (*frame, *len); called
 * under the queue's lock. Returns 0 or a negative LA_E* code. */
typedef int (*la_outq_encode_fn)(void *arg, uint64_t seq, uint8_t **frame,
                                 size_t *len);

/* Opens the queue. log_dir NULL or "" means memory only. Otherwise the
 * directory is checked (seglog.h: owned by us, not group/other-writable, not
 * a symlink; created 0700 if missing), locked, and replayed. seg_bytes is
 * the segment size (0: LA_OUTQ_SEG_BYTES); fsync_each makes every append
 * fsync before it returns (otherwise call la_outq_sync periodically).
 * Returns 0 and *out, or LA_EINVAL, LA_ENOMEM, LA_EIO with the reason in
 * why. */
int la_outq_open(const char *log_dir, uint64_t mem_limit, uint64_t log_limit,
                 uint64_t seg_bytes, int fsync_each, la_outq_note_fn note,
                 void *note_arg, la_outq_t **out, char *why, size_t why_len);

/* Calls cb for every cycle taken and every rank registered by an earlier
 * run that the log does not resolve (no trace / missing record; no
 * RankEnd), taken cycles first. The caller appends a TraceMissing
 * (LA_OUTQ_MISSING | LA_OUTQ_RESOLVES) or RankEnd (LA_OUTQ_CLOSES_RANK) for
 * each, which resolves it. Call once, before any other append. The key is
 * valid during the call only. Returns the number reported. */
size_t la_outq_recovered(la_outq_t *q,
                         void (*cb)(void *arg, int what,
                                    const la_outq_key_t *key),
                         void *arg);

/* Calls cb for every cycle taken by an earlier run that the log does not
 * resolve and that a damaged span of the log follows: its trace or missing
 * record may have been in the damage (la_outq_recovered leaves these out).
 * The caller appends a TraceMissing (LA_OUTQ_MISSING | LA_OUTQ_RESOLVES)
 * with that reason. Call once, before appends other than
 * la_outq_recovered's. The key is valid during the call only. Returns the
 * number reported (stats: damaged_taken). */
size_t la_outq_damaged(la_outq_t *q,
                       void (*cb)(void *arg, const la_outq_key_t *key),
                       void *arg);

/* Records that the cycle key was taken (before the buffer is read): a slot
 * of the taken table, else a taken record in the log. Any thread. Returns
 * 0, or LA_EIO / LA_ELIMIT (not recorded: counted in dropped, the cycle
 * can still be sent). No-op without a log. */
int la_outq_taken(la_outq_t *q, const la_outq_key_t *key);

/* Appends a message: hands out the next seq, calls enc to pack it, writes
 * it to the log (and fsyncs with fsync_each), updates the recorded state
 * per flags (key may be NULL when flags is 0), keeps the frame in memory if
 * it fits in mem_limit, and queues it. Any thread; the caller then wakes
 * the sender on the loop thread. *seq (may be NULL) receives the seq, also
 * on failure (it is then a gap). Returns 0; LA_EINVAL; or, counted in
 * dropped: the encoder's code, LA_ELIMIT (log_limit, or without a log
 * mem_limit, full), LA_EMSGSIZE, LA_EIO (log write failed: noted),
 * LA_ENOMEM. */
int la_outq_append(la_outq_t *q, unsigned flags, const la_outq_key_t *key,
                   la_outq_encode_fn enc, void *arg, uint64_t *seq);

/* Next message not returned since the last rewind (or open), in seq order.
 * Returns 1 and *seq, *bytes, *len (bytes belong to q, valid until the next
 * call on q); 0 when none; LA_EIO when the message due could not be read
 * back from the log (it is dropped from the queue, counted in bad_reads and
 * noted: call again); LA_ENOMEM (try later). Loop thread only. */
int la_outq_next(la_outq_t *q, uint64_t *seq, const uint8_t **bytes,
                 size_t *len);

/* Cumulative acknowledgement: forgets every message with seq <= seq, logs
 * an ack record and deletes fully acknowledged segments. Returns 0 (also
 * for an old ack), LA_EPROTO when seq is above the highest seq sent (nothing
 * changes), LA_EINVAL. Loop thread only. */
int la_outq_ack(la_outq_t *q, uint64_t seq);

/* Makes la_outq_next start again at the oldest unacknowledged message. */
void la_outq_rewind(la_outq_t *q);

/* fsync of the log when something was appended since the last one. Any
 * thread; the fsync runs without the queue's lock (acknowledgements
 * meanwhile defer deleting segments until it returns), so appends go on.
 * Returns 0 or LA_EIO (noted; the next call tries again). */
int la_outq_sync(la_outq_t *q);

/* Changes the limits (SIGHUP); nothing already queued moves. */
void la_outq_set_limits(la_outq_t *q, uint64_t mem_limit, uint64_t log_limit);

/* Fills *st (see la_outq_stats_t). Any thread. */
void la_outq_get_stats(la_outq_t *q, la_outq_stats_t *st);

/* Syncs the log, frees the queue; the log keeps everything unacknowledged
 * for the next open. Accepts NULL. */
void la_outq_close(la_outq_t *q);

#endif /* LA_OUTQ_H */
