/* SPDX-License-Identifier: BSD-3-Clause */
/* seglog.h: the LocalAgent's append-only segment log, the on-disk half of
 * the queue of messages for the GlobalAgent (outq.h keeps the list, the
 * memory copies and the bookkeeping; this file only reads and writes files).
 *
 * A log directory holds segment files "<segment id, 20 digits>.laseg" of at
 * most seg_bytes each (a larger single record gets a segment of its own) and
 * "seglog.lock" (flock'ed while a log is open, so two agents never share
 * one). A segment starts with a 16-byte file header ("LASEG001" and the
 * segment id, little-endian) followed by records. A record (integers
 * little-endian):
 *
 *   offset size  field
 *    0      4    body length L (24 + A + N; at most 24 + 255 + max item)
 *    4      4    CRC-32 (IEEE, zlib's crc32) of the L body bytes
 *    8      8    seq (link sequence number; 0 for records that are not sent)
 *   16      1    kind (LA__SL_MSG, LA__SL_TAKEN, LA__SL_ACK, LA__SL_RANK,
 *                LA__SL_START)
 *   17      1    flags (LA__SL_F_*)
 *   18      2    A: length of the application id (0..255)
 *   20      4    rank
 *   24      8    cycle tag
 *   32      A    application id
 *   32+A    N    payload (for LA__SL_MSG: the frame sent to the GlobalAgent)
 *
 * Appends are single write(2) calls at the end of the active segment: after
 * the call returns the record survives the death of the process (page
 * cache); la__seglog_sync makes it survive the node's (fsync). On open, the
 * records of every segment are checked in order (length bounds, CRC):
 *  - a last record cut short by the end of the file (a partial header, or
 *    a length reaching past the end, and no valid record after it) is a
 *    torn tail, the trace of a crash inside a write: the file is truncated
 *    there, noted "(a crash while writing)", counted in torn_bytes;
 *  - any other record that fails is damage: the scan resynchronises on the
 *    next valid record (the one the damaged length points at when that one
 *    is valid, else the first later offset whose bytes form a record with
 *    a valid CRC), notes and counts the skipped span (damaged_bytes,
 *    damaged_spans), reports it to the scan's callback as a LA__SL_DAMAGED
 *    pseudo-record and keeps the records after it; the file is left as it
 *    is (a later open finds the same damage);
 *  - a file header that is not the magic and the file's own number is
 *    damage too (16 bytes, damaged_headers): its records are read anyway.
 * The checksum work spent looking for a record is bounded per segment (16
 * times its size, plus 1 MiB); beyond it the rest of the segment counts as
 * damaged. Segments are deleted whole, oldest first, by the caller.
 *
 * The directory must be a real directory (not a symlink) owned by the
 * effective uid and not writable by group or others; it is created with
 * mode 0700 when missing (its parent must exist).
 *
 * Not thread-safe: the caller serialises every call (outq.c holds one
 * mutex). Deliberately no record semantics here (what an ack or a taken
 * record means is outq.c's), no memory copies, no sockets.
 */
#ifndef LA_SEGLOG_H
#define LA_SEGLOG_H

#include <stddef.h>
#include <stdint.h>

#define LA__SL_FILE_HDR 16u
#define LA__SL_REC_HDR 32u  /* record header incl. length and CRC */
#define LA__SL_MAX_APP 255u

enum {
  LA__SL_DAMAGED = 0, /* never on disk: a damaged span la__seglog_scan
                         skipped (its offset, r->len bytes) */
  LA__SL_MSG = 1,   /* a message for the GlobalAgent (seq > 0) */
  LA__SL_TAKEN = 2, /* a buffer was taken: (app, rank, cycle) is pending */
  LA__SL_ACK = 3,   /* every seq <= seq is acknowledged */
  LA__SL_RANK = 4,  /* checkpoint: (app, rank) is registered */
  LA__SL_START = 5  /* checkpoint: seq is the next seq to hand out */
};

enum {
  LA__SL_F_OPENS = 1,    /* MSG: RankStart, opens (app, rank) */
  LA__SL_F_CLOSES = 2,   /* MSG: RankEnd, closes (app, rank) */
  LA__SL_F_RESOLVES = 4, /* MSG: trace or missing record of a taken cycle */
  LA__SL_F_MISSING = 8   /* MSG: a TraceMissing */
};

typedef void (*la__seglog_note_fn)(void *arg, const char *msg);

/* Formats a note (at most 511 bytes) and hands it to note with arg; nothing
 * when note is NULL. How the log and the queue (outq.c) report what they
 * cannot return: torn tails, damage, write and fsync failures. */
void la__seglog_notef(la__seglog_note_fn note, void *arg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One record (as appended, or as found by la__seglog_scan: the pointers
 * then point into the scan's buffer and are valid during the callback). */
typedef struct la__sl_rec {
  uint64_t seq;
  uint8_t kind, flags;
  uint32_t rank;
  uint64_t cycle;
  const char *app; /* not NUL-terminated; app_len bytes */
  uint16_t app_len;
  const uint8_t *payload;
  uint32_t len;
} la__sl_rec_t;

/* Little-endian fields (the records' here, the taken table's in
 * takentab.h). */
static inline void la__sl_put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void la__sl_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void la__sl_put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t la__sl_get16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t la__sl_get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static inline uint64_t la__sl_get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

typedef struct la__sl_seg {
  uint64_t id;
  int fd;
  uint64_t bytes;   /* file size */
  uint64_t max_msg; /* highest MSG seq in it (0: none) */
} la__sl_seg_t;

typedef struct la__seglog {
  int dirfd, lockfd;
  char *path;
  uint64_t seg_bytes;
  uint32_t max_item;
  la__sl_seg_t *segs; /* oldest first; the last one is the active one */
  size_t n_segs, cap_segs;
  uint64_t total_bytes;
  uint64_t torn_bytes;      /* bytes cut off torn tails at open */
  uint64_t damaged_bytes;   /* damaged bytes skipped at open */
  uint64_t damaged_spans;   /* damaged spans skipped (headers included) */
  uint64_t damaged_headers; /* segments whose file header was damaged */
  la__seglog_note_fn note;
  void *note_arg;
} la__seglog_t;

/* Opens the log in dir (checked and created as above), locks it and opens
 * every segment; does not read records yet (la__seglog_scan does).
 * Returns 0, or LA_EIO (unsafe or unusable directory, locked by another
 * agent, a segment that cannot be opened) / LA_ENOMEM, with the reason in
 * why. On failure sl holds nothing to close. */
int la__seglog_open(la__seglog_t *sl, const char *dir, uint64_t seg_bytes,
                    uint32_t max_item, la__seglog_note_fn note,
                    void *note_arg, char *why, size_t why_len);

/* Reads every record of every segment in order and calls cb for each valid
 * one (segment id, payload offset in its file, record) and for each damaged
 * span of records (kind LA__SL_DAMAGED, offset of the span, r->len its
 * bytes, nothing else set), in file order; truncates torn tails (noted,
 * counted in torn_bytes); skips damage (noted, counted); sets each
 * segment's max_msg. Afterwards appends go to a fresh segment. Returns 0,
 * or the first negative value cb returned, or LA_EIO / LA_ENOMEM with a
 * reason. */
int la__seglog_scan(la__seglog_t *sl,
                    int (*cb)(void *arg, uint64_t seg_id, uint64_t off,
                              const la__sl_rec_t *r),
                    void *arg, char *why, size_t why_len);

/* Bytes a record takes in a segment. */
uint64_t la__seglog_rec_size(const la__sl_rec_t *r);

/* Whether the next append of size bytes starts a new segment. */
int la__seglog_needs_roll(const la__seglog_t *sl, uint64_t size);

/* Starts a new segment (fsync of the old one and of the directory when
 * sync). Returns 0 or LA_EIO / LA_ENOMEM (noted). */
int la__seglog_roll(la__seglog_t *sl, int sync);

/* Appends the n (1 or 2) records r[0..n) to the active segment with one
 * write, in that order (the caller rolls first when needed: for all of
 * them). On success *seg_id and *off (offset of the payload in the file)
 * locate the last one's payload. Returns 0, or LA_EIO (noted; the segment
 * is cut back to where it was) / LA_EMSGSIZE (app_len or len too large) /
 * LA_EINVAL (kind LA__SL_DAMAGED, n not 1 or 2). */
int la__seglog_append(la__seglog_t *sl, const la__sl_rec_t *r, int n,
                      uint64_t *seg_id, uint64_t *off);

/* Reads len payload bytes at off of segment seg_id into buf. Returns 0, or
 * LA_EIO (segment gone, short read). */
int la__seglog_read(la__seglog_t *sl, uint64_t seg_id, uint64_t off,
                    uint32_t len, uint8_t *buf);

/* Deletes the oldest segments while they are not the active one and their
 * highest MSG seq is <= acked. Returns the number deleted (a failed unlink
 * is noted and the segment forgotten anyway). */
size_t la__seglog_trim(la__seglog_t *sl, uint64_t acked);

/* fsync of the active segment. Returns 0 or LA_EIO. */
int la__seglog_sync(la__seglog_t *sl);

/* Closes every descriptor and releases the lock; files stay. */
void la__seglog_close(la__seglog_t *sl);

#endif /* LA_SEGLOG_H */
