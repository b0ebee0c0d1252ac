/* outq.h: the LocalAgent's ordered queue of messages waiting for the
 * GlobalAgent's acknowledgement, spilling to a spool directory.
 *
 * The queue hands out sequence numbers (uint64, strictly increasing, from 1,
 * continuing across daemon restarts when there is a spool), keeps each
 * message until the GlobalAgent acknowledges it cumulatively, and gives the
 * uplink the messages in seq order, again from the oldest unacknowledged one
 * after every reconnect (la_outq_rewind). Each message lives either in memory
 * (up to mem_limit bytes of messages) or as one file in the spool directory
 * (up to spool_limit bytes of files); the send order is seq order wherever
 * the messages live. A message that fits neither is refused (LA_ELIMIT) and
 * counted as dropped: never silently. The file format, the crash-safety of
 * writes and the spool's own files are described in spool.h.
 *
 * Use:
 *   seq = la_outq_reserve_seq(q);          encode the frame with seq, then
 *   la_outq_push(q, seq, frame, len);      (copies the frame)
 *   while (la_outq_next(q, &s, &b, &n) > 0) { write b; }   (uplink)
 *   la_outq_ack(q, acked_seq);             on Ack{seq}
 *   la_outq_rewind(q);                     on reconnect
 *   la_outq_spill_all(q); la_outq_close(q);  at shutdown without GlobalAgent
 *
 * Sequence numbers: a reserved seq that is never pushed (the encoding
 * failed, the push was refused) is simply a gap in the stream; the
 * GlobalAgent must accept gaps. With a spool, the high-water mark of handed
 * out seqs is persisted in blocks (spool.h, "outq.nextseq"), so seqs are
 * never reused after a restart, even after a crash with an empty spool
 * (a crash leaves a gap of at most LA_OUTQ_SEQ_BLOCK). Without a spool, seqs
 * restart at 1 with every process: the uplink must then tell the GlobalAgent
 * it is a new incarnation (for example with a boot id in its hello).
 *
 * Deliberately not here: sockets, framing, the event loop, logging (events
 * worth a log line go to the optional note function), threads. Every call
 * is synchronous, including spool I/O (one file write per spooled message,
 * one read per spooled message sent, one unlink per spooled message
 * acknowledged), and must come from one thread (the daemon's loop thread).
 * Every operation is O(1) per message, except la_outq_open (scans the spool)
 * and la_outq_spill_all (walks the queue).
 *
 * Memory: besides mem_limit bytes of messages, each queued message costs a
 * 32-byte descriptor wherever it lives, and la_outq_next keeps one read
 * buffer as large as the largest spooled message recently sent.
 */
#ifndef LA_OUTQ_H
#define LA_OUTQ_H

#include <stddef.h>
#include <stdint.h>

/* Largest message the queue accepts or loads from the spool, in bytes (a
 * sanity bound: the codec's frame limit is the real one and is lower). */
#define LA_OUTQ_MAX_ITEM ((uint32_t)1 << 30)
/* Sequence numbers persisted ahead of use (one small file write each). */
#define LA_OUTQ_SEQ_BLOCK 4096u

typedef struct la_outq la_outq_t;

typedef struct la_outq_stats {
  uint64_t items;      /* messages queued (unacknowledged), memory + disk */
  uint64_t mem_items;  /* ... of them in memory */
  uint64_t mem_bytes;  /* their bytes (frames only) */
  uint64_t disk_items; /* ... of them in the spool */
  uint64_t disk_bytes; /* their file sizes (32-byte header + frame) */
  uint64_t next_seq;   /* what la_outq_reserve_seq returns next */
  uint64_t last_acked; /* highest acknowledged seq (at open: the seq just
                          below the oldest spooled message) */
  uint64_t last_sent;  /* highest seq ever returned by la_outq_next */
  uint64_t pushed;     /* successful pushes, since open */
  uint64_t acked;      /* messages freed by acknowledgements, since open */
  uint64_t spilled;    /* messages written to the spool, since open */
  uint64_t dropped;    /* pushes refused for room or resources, since open */
  uint64_t bad_files;  /* spool files quarantined as *.bad, since open */
} la_outq_stats_t;

/* Receives one human-readable line per event worth logging: a spool file
 * quarantined, a spool write that failed, the seq high-water mark that could
 * not be persisted. Called synchronously from inside outq calls. */
typedef void (*la_outq_note_fn)(void *arg, const char *msg);

/* Opens a queue. spool_dir NULL or "" means no spool (memory only: a message
 * that does not fit in mem_limit is refused with LA_ELIMIT). Otherwise the
 * directory is created with mode 0700 if missing (its parent must exist),
 * locked against a second queue (another daemon or another open in this
 * process), and scanned: valid message files become queued messages in seq
 * order, to be sent first; bad ones are renamed "*.bad" and counted in
 * bad_files (header checks at open, payload checksum when sent). The next
 * seq continues after both the persisted high-water mark and the largest
 * spooled seq. fsync_writes makes every spool write durable (fsync of the
 * file and of the directory) before la_outq_push returns.
 * Returns 0 and *out, or LA_EINVAL (out NULL), LA_ENOMEM, LA_EIO (directory
 * unusable or locked, state file malformed), with a reason in why (if not
 * NULL). */
int la_outq_open(const char *spool_dir, uint64_t mem_limit,
                 uint64_t spool_limit, int fsync_writes, la_outq_t **out,
                 char *why, size_t why_len);

/* Same, with a note function (may be NULL) that also receives what the scan
 * at open finds wrong. */
int la_outq_open_ex(const char *spool_dir, uint64_t mem_limit,
                    uint64_t spool_limit, int fsync_writes,
                    la_outq_note_fn note, void *note_arg, la_outq_t **out,
                    char *why, size_t why_len);

/* Hands out the next seq (>= 1, each once). With a spool, persists a new
 * high-water mark every LA_OUTQ_SEQ_BLOCK seqs; if that write fails the seq
 * is still handed out (the failure is noted and retried next time, so a
 * full disk does not stop messages flowing through memory). Returns 0 only
 * if q is NULL or seqs are exhausted. */
uint64_t la_outq_reserve_seq(la_outq_t *q);

/* Queues a copy of the len-byte frame carrying seq. seq must have been
 * reserved and be greater than every seq pushed before (reserved seqs may be
 * skipped, leaving gaps; a failed push may be retried with the same seq).
 * The message goes to memory if it fits in mem_limit, else to the spool if
 * it fits in spool_limit (written before the call returns).
 * Returns 0; LA_EINVAL (q or bytes NULL, len 0, seq not reserved or not
 * increasing); or, counted in dropped: LA_EMSGSIZE (len >
 * LA_OUTQ_MAX_ITEM), LA_ELIMIT (fits neither), LA_EIO (spool write failed;
 * noted), LA_ENOMEM. */
int la_outq_push(la_outq_t *q, uint64_t seq, const uint8_t *bytes, size_t len);

/* Next message not yet returned since the last rewind (or open), in seq
 * order. Returns 1 and sets *seq, *bytes, *len (bytes belong to q and stay
 * valid until the next call on q); 0 if every queued message has been
 * returned; LA_EIO if the spooled message due next was missing or corrupt:
 * it has been renamed "*.bad", counted in bad_files, noted and removed from
 * the queue (call again for the following one); LA_ENOMEM if it could not be
 * read for lack of memory or descriptors (it stays queued: try later).
 * Marks the message sent: last_sent becomes at least *seq. */
int la_outq_next(la_outq_t *q, uint64_t *seq, const uint8_t **bytes,
                 size_t *len);

/* Cumulative acknowledgement: frees (and unlinks the files of) every queued
 * message with a seq <= seq. Returns 0 (also for a repeated or old ack), or
 * LA_EPROTO if seq is above the highest seq ever returned by la_outq_next
 * (nothing is freed: the peer misbehaves), or LA_EINVAL (q NULL). */
int la_outq_ack(la_outq_t *q, uint64_t seq);

/* Makes la_outq_next start again from the oldest unacknowledged message
 * (call on every new connection to the GlobalAgent). */
void la_outq_rewind(la_outq_t *q);

/* Writes every message held in memory to the spool (fsync'ed if enabled,
 * one directory fsync at the end) and frees its memory, so la_outq_close
 * loses nothing. Returns 0 when no message is left in memory; LA_ELIMIT if
 * some did not fit in spool_limit (or there is no spool): they stay in
 * memory, and stats.mem_items says how many a close would lose; LA_EIO if a
 * write failed (noted; the rest stays in memory). */
int la_outq_spill_all(la_outq_t *q);

/* Changes the limits (SIGHUP reload). Nothing already queued moves: the new
 * limits apply to later pushes and spills. */
void la_outq_set_limits(la_outq_t *q, uint64_t mem_limit, uint64_t spool_limit);

/* Fills *st with the current counters (see la_outq_stats_t). */
void la_outq_get_stats(const la_outq_t *q, la_outq_stats_t *st);

/* Frees q and every message in memory (call la_outq_spill_all first to keep
 * them); keeps the spooled files, which are sent after the next open.
 * Persists the exact next seq so that a clean restart leaves no gap.
 * Accepts NULL. */
void la_outq_close(la_outq_t *q);

#endif /* LA_OUTQ_H */
