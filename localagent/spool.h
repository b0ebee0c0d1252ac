/* spool.h: the LocalAgent's spool directory, the on-disk half of the queue of
 * messages waiting for the GlobalAgent's acknowledgement (see outq.h).
 *
 * One file per message, named "<seq as 20 decimal digits>.lamsg", written as
 * "<name>.tmp", optionally fsync'ed, then renamed, so a crash never leaves a
 * half-written file under a valid name. Every file starts with a 32-byte
 * header (all integers big-endian):
 *
 *   offset size  field
 *    0      4    magic "LAQM"
 *    4      2    format version (1)
 *    6      2    header length (32)
 *    8      8    seq (must equal the seq in the file name)
 *   16      4    payload length N (1 .. max item size; file size is 32 + N)
 *   20      4    CRC-32 of the N payload bytes
 *   24      4    CRC-32 of header bytes 0..23
 *   28      4    zero (reserved)
 *   32      N    payload: the frame, opaque to the spool
 *
 * CRC-32 is the IEEE 802.3 / zlib polynomial (python: zlib.crc32(payload)).
 * Beside the messages the directory holds "outq.lock" (flock'ed while a queue
 * has the directory open, so two daemons never share a spool) and
 * "outq.nextseq" (the persisted sequence high-water mark: 20 digits and a
 * newline). Quarantined files are renamed "<name>.bad" and never read again.
 *
 * This module does file I/O only: it keeps no list of messages (outq.c does),
 * knows nothing of frames or sockets, and is synchronous. Internal to the
 * LocalAgent (la__ prefix); not thread-safe per spool.
 */
#ifndef LA_SPOOL_H
#define LA_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define LA__SPOOL_HDR_LEN 32u
#define LA__SPOOL_NAME_LEN 26u /* 20 digits + ".lamsg" */

typedef void (*la__spool_note_fn)(void *arg, const char *msg);

typedef struct la__spool {
  int dirfd;  /* the spool directory, O_DIRECTORY */
  int lockfd; /* outq.lock, flock'ed LOCK_EX */
  int fsync_writes;
  char *path; /* for messages */
  la__spool_note_fn note;
  void *note_arg;
} la__spool_t;

/* One valid message file found by la__spool_scan. */
typedef struct la__spool_entry {
  uint64_t seq;
  uint32_t len; /* payload length; the file is LA__SPOOL_HDR_LEN + len */
} la__spool_entry_t;

/* Opens (creating it with mode 0700 if missing; the parent must exist) and
 * locks the spool directory. note (may be NULL) receives one line per
 * noteworthy event (file quarantined, state file not written) for logging.
 * Returns 0, or LA_EIO (cannot create/open, not a directory, locked by
 * another queue) / LA_ENOMEM with a reason in why. On failure sp holds
 * nothing to close. */
int la__spool_open(la__spool_t *sp, const char *dir, int fsync_writes,
                   la__spool_note_fn note, void *note_arg, char *why,
                   size_t why_len);

/* Releases the lock and the descriptors; leaves every file in place. */
void la__spool_close(la__spool_t *sp);

/* Lists the message files, validating each one's name, size and header (not
 * the payload checksum: la__spool_read checks that). Bad files (bad name,
 * zero length, truncated, bad header, larger than max_item, not a regular
 * file, stale "*.tmp") are renamed "<name>.bad", reported through note and
 * counted in *bad. "*.bad" files and the queue's own state files are
 * skipped. On success *out (malloc'ed, caller frees; NULL when *n is 0) holds
 * *n entries in increasing seq order. Returns 0, or LA_EIO / LA_ENOMEM with a
 * reason in why. */
int la__spool_scan(la__spool_t *sp, uint32_t max_item, la__spool_entry_t **out,
                   size_t *n, uint64_t *bad, char *why, size_t why_len);

/* Writes message seq (len payload bytes) as a new file: tmp, fsync if
 * enabled, rename, and fsync of the directory if enabled and sync_dir.
 * Returns 0 or LA_EIO (reported through note, with errno set; nothing is
 * left behind). */
int la__spool_write(la__spool_t *sp, uint64_t seq, const uint8_t *payload,
                    uint32_t len, int sync_dir);

/* fsync()s the directory if fsync is enabled. Returns 0 or LA_EIO. */
int la__spool_sync_dir(la__spool_t *sp);

/* Reads message seq, whose payload is expected to be len bytes, into buf
 * (len bytes) and checks everything (size, header, seq, both checksums).
 * Returns 0; LA_EIO when the file is missing or bad (it has then been
 * renamed "<name>.bad" and reported: the caller forgets the message); or
 * LA_ENOMEM when the process is short of descriptors or memory (the file is
 * left alone; try again later). */
int la__spool_read(la__spool_t *sp, uint64_t seq, uint32_t len, uint8_t *buf);

/* Deletes message seq's file. Returns 0 or LA_EIO (a missing file is not an
 * error). */
int la__spool_remove(la__spool_t *sp, uint64_t seq);

/* Reads outq.nextseq. Returns 1 and sets *next when present and valid, 0
 * when absent, LA_EIO (with a reason) when unreadable or malformed. */
int la__spool_load_nextseq(la__spool_t *sp, uint64_t *next, char *why,
                           size_t why_len);

/* Atomically replaces outq.nextseq with next (tmp, fsync, rename, fsync of
 * the directory when fsync is enabled). Returns 0 or LA_EIO (errno set, not
 * reported). */
int la__spool_store_nextseq(la__spool_t *sp, uint64_t next);


#endif /* LA_SPOOL_H */
