/* SPDX-License-Identifier: BSD-3-Clause */
/* takentab.h: the LocalAgent's table of cycles taken and not yet logged,
 * a small file of fixed slots in the log directory ("taken.tab"), mapped
 * shared, so that marking a cycle taken is a few stores to memory the
 * kernel keeps when the agent dies (the page cache), not a write(2) with
 * the file's time stamps updated through the journal (outq.h).
 *
 * A slot holds (app, rank, cycle) and a CRC-32 of them; its state word is
 * stored last (release), so a killed agent leaves a slot either free or
 * whole. A slot is freed once the record that resolves its cycle (the
 * trace or the missing record) is in the log. At the next open the caller
 * reads the slots still marked (la_takentab_each), checks them against
 * the log, and clears the table (la_takentab_clear) once what they say is
 * in the log again, with the first log segment of the new run: only the
 * records of that segment and later ones resolve the slots (an earlier
 * run's record of the same cycle does not). la_takentab_sync msyncs what
 * changed (the node's crash, as the log's fsync). Layout: a 24-byte
 * header ("LATAKEN1", the slot count and the slot size as u32, that
 * segment's id as u64, little-endian), then the slots:
 *   0  u32 state (LA_TAKENTAB_MARK: taken; 0: free)
 *   4  u32 CRC-32 of bytes 8 .. 24 + app_len
 *   8  u32 rank      12 u16 app_len (<= 255)   14 u16 0
 *   16 u64 cycle     24 app bytes
 * Threads: the caller's lock (outq.c's mutex) guards every call but
 * la_takentab_sync, which may run beside them.
 */
#ifndef LA_TAKENTAB_H
#define LA_TAKENTAB_H

#include <stddef.h>
#include <stdint.h>

#define LA_TAKENTAB_SLOTS 256u
#define LA_TAKENTAB_MARK 0x4e4b4154u /* "TAKN" */

typedef struct la_takentab la_takentab_t;

/* Opens dir's "taken.tab" (dirfd: the log directory, checked and locked
 * by seglog.h), creating it with mode 0600 and LA_TAKENTAB_SLOTS slots
 * when missing; a file that is not a table (la_takentab_unreadable) is
 * made one by la_takentab_clear. Refuses, saying which, a file that is
 * not a regular file (opened without blocking: a FIFO or a device is
 * never waited on), one of another user, one of a mode other than 0600.
 * Returns 0 and *out, or LA_EIO / LA_ENOMEM with the reason in why. */
int la_takentab_open(int dirfd, const char *dir, la_takentab_t **out,
                     char *why, size_t why_len);

/* 1 when the file held bytes that are not a table (cut inside its
 * header, of another layout or size, a slot count over
 * LA_TAKENTAB_SLOTS): its slots cannot be read, and la_takentab_each
 * calls nothing. 0 after la_takentab_clear. */
int la_takentab_unreadable(const la_takentab_t *t);

/* 1 once a store into the table faulted because another process cut the
 * file under the map (the agent survives: SIGBUS is caught around the
 * stores), or la_takentab_sync found another file (or none) at its name
 * (replaced, removed); la_takentab_put then takes no slot (-1),
 * la_takentab_free and la_takentab_sync write nothing, until
 * la_takentab_clear. The caller puts the cycles of the slots in use into
 * its log. */
int la_takentab_cut(const la_takentab_t *t);

/* Calls cb for every slot marked taken whose CRC is right; returns how
 * many; *bad (may be NULL) gets the slots marked but damaged (a bad CRC, a
 * state word neither free nor marked, an app id that is not 1..
 * LA_MAX_ID_LEN printable bytes, a rank not below LA_MAX_RANKS). */
size_t la_takentab_each(la_takentab_t *t,
                        void (*cb)(void *arg, const char *app,
                                   uint16_t app_len, uint32_t rank,
                                   uint64_t cycle),
                        void *arg, uint64_t *bad);

/* The log segment id la_takentab_clear was given: records in it and
 * later segments resolve the slots; 0 for a table not readable. */
uint64_t la_takentab_since(const la_takentab_t *t);

/* Frees every slot (and gives the file LA_TAKENTAB_SLOTS slots); since:
 * the id of the log segment the run writes first. Returns 0 or LA_EIO. */
int la_takentab_clear(la_takentab_t *t, uint64_t since);

/* Marks (app, rank, cycle) taken in a free slot; returns its index, or -1
 * when every slot is in use (the caller logs a taken record instead). */
int la_takentab_put(la_takentab_t *t, const char *app, uint16_t app_len,
                    uint32_t rank, uint64_t cycle);

/* Frees slot i (from la_takentab_put). */
void la_takentab_free(la_takentab_t *t, int i);

/* msync of the table when a slot changed since the last one; first checks
 * that the file at its name is still the one mapped (else the table is
 * cut: la_takentab_cut). Returns 0 or LA_EIO. */
int la_takentab_sync(la_takentab_t *t);

/* Unmaps and closes (the slots stay in the file). Accepts NULL. */
void la_takentab_close(la_takentab_t *t);

#endif /* LA_TAKENTAB_H */
