/* SPDX-License-Identifier: BSD-3-Clause */
/* app_ipc.h: the LocalAgent's side of an application's shared memory.
 *
 * Attaches a registering process's segment and semaphore set after proving
 * they are that process's: the segment exists and was created by the pid the
 * registration names, both objects are mode 0600 and owned by the uid that
 * owns the connecting socket and the process, the header is consistent
 * (la_shm_header_check) and quotes the registration's nonce. Then reads a
 * buffer (copy scaled to the metric's unit, zero, give back through the
 * semaphore) and finally removes both objects. No libuv: unit-testable and
 * callable from worker threads (la_app_ipc_take touches only its buffer).
 *
 * The segment is written by a process we do not trust, at any time. So the
 * geometry (element and buffer counts, where each buffer starts, the mapped
 * size) is validated once, at attach, and kept here; later the agent reads
 * from the segment only data: a buffer's meta data (scale, tags, range
 * errors) and its values. A scale that is not a positive finite number
 * rejects the cycle (logged); NaN or infinite values are data and flow on.
 * It does not decide who may register twice (session.c checks that).
 */
#ifndef LA_APP_IPC_H
#define LA_APP_IPC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "la_shm_layout.h"
#include "la_compact_pieces.h"

typedef struct la_app_ipc {
  la_shm_header_t *hdr; /* the mapping; only hdr->buf[i] is read after attach */
  int shm_id, sem_id;
  uint32_t n_buffers;  /* validated at attach, never re-read */
  uint64_t n_elements; /* validated at attach, never re-read */
  uint32_t n_channels; /* the registration's (1: none named), checked
                          against the header at attach, never re-read */
  int owner_uid;
  int pid;              /* the registered (creator) process */
  uint32_t layout;      /* the header's version at attach (3 to 5) */
  int weights;          /* the segment has the weights area (at attach) */
  int weights_spread;   /* its reader takes spread slots (area version 2) */
  uint64_t n_rows;      /* row values per buffer (LA_SHM_FEAT_ROWS: the
                           grid's ny * nz), 0 without; at attach */
  uint64_t n_pieces;    /* piece records per buffer (LA_SHM_FEAT_PIECES),
                           0 without; at attach */
  uint64_t grid[3];     /* the registration's grid, all 0 without one */
  uint64_t pieces_refused; /* records refused so far (any thread) */
  uint64_t pieces_spilled; /* probes the application spread (any thread) */
  uint64_t cells_misstated; /* cycles said NONE with cells (any thread) */
  uint64_t w_gen;       /* generations written into it (ours, not read) */
  uint64_t w_seq;       /* the rank's cycle number of generation w_gen */
  pthread_mutex_t w_mu; /* serializes la_app_ipc_put_weights */
} la_app_ipc_t;

/* Verifies and attaches. n_channels is the registration's channel count
 * (1 when it named none): the header must say the same, and buffers hold
 * n_channels x n_elements values. grid is nx, ny, nz of a grid
 * registration (validated by the codec), else NULL: a header with row
 * values (LA_SHM_FEAT_ROWS) is accepted only with it, and box records of
 * a piece table (LA_SHM_FEAT_PIECES) are checked against it. peer_uid is the uid owning the connecting
 * socket, or -1 when unknown (then only the process's uid is compared). Returns
 * 0, or LA_EREFUSED with the reason in why (nothing stays attached). When the
 * registering process is gone and the objects are provably its leftovers
 * (its segment, the same owner), they are removed where permissions allow:
 * an application killed during its registration leaves nothing. */
int la_app_ipc_attach(la_app_ipc_t *ipc, int shm_id, int sem_id, int pid,
                      uint64_t nonce, uint64_t n_elements, uint32_t n_buffers,
                      uint32_t n_channels, const uint64_t *grid,
                      int peer_uid, char *why, size_t why_len);

/* Copies buffer i, multiplied by its meta scale, into out[0..n_channels x
 * n_elements) (channel-major; with a piece table, each record checked
 * and spread evenly over its cells first (la_shm_pieces_fold: a record
 * refused counts in meta->range_errors, the first one's reason logged
 * once per registration); with rows, each row's value spread evenly
 * over its cells of channel 0 first; a cycle of one channel whose meta
 * data says no cell was written, rows and pieces only, is spread into out
 * without reading or zeroing the cells) and zeroes
 * the buffer (which stays the agent's until la_app_ipc_give_back). With
 * channels, sum (not NULL) receives each element's total over them, added
 * in counts and scaled once: (v0 [+ row share] + v1 + ... + vk-1) * scale,
 * so that a sum of whole timer ticks is whole ticks too (a sum of scaled
 * values is not, in general), the same arithmetic as LA_DUMP_RAW's. *meta
 * receives the buffer's meta data as the application wrote it (untrusted
 * data). Returns 0; LA_EINVAL for a bad index; LA_EPROTO (logged, the
 * buffer is zeroed all the same) when the scale is not a positive finite
 * number. */
int la_app_ipc_take(la_app_ipc_t *ipc, uint32_t i, double *out, double *sum,
                    la_shm_bufmeta_t *meta);

/* A row-probed cycle as what it measured: when the registration has rows
 * (one channel, rows of nx >= 2 cells) and every cell value of buffer i
 * is zero (only row probes ran: the buffer's meta data says so, from a
 * libla that marks cell writes, else the cells are read), copies the n_rows row values times the
 * scale into rows, zeroes them and returns 1 (*meta as for
 * la_app_ipc_take); a cycle of cell values returns 0 and leaves the
 * buffer as it is (take it with la_app_ipc_take). The cells are read
 * until the first one that is not zero. Errors as la_app_ipc_take. */
int la_app_ipc_take_rows(la_app_ipc_t *ipc, uint32_t i, double *rows,
                         la_shm_bufmeta_t *meta);

/* A box- or range-probed cycle as what it measured: when buffer i is of
 * one channel with a piece table whose records are all valid, in channel
 * 0 and share no cell, and the cycle wrote no cell value and no row value
 * (la_shm_cells_none, la_pieces_from_shm), gives their geometry in *g
 * (la_pieces_free) and its bytes in *geom (malloc'ed, *glen of them), and
 * in *values (malloc'ed, g->count of them, in the geometry's order) each
 * piece's value times the scale, zeroes the table
 * and returns 1 (*meta as for la_app_ipc_take); any other cycle (a
 * refused, overlapping or spilled record, cells or rows written,
 * channels, a scale that is not a positive finite number) returns 0 and
 * leaves the buffer as it is (take it with la_app_ipc_take_rows or
 * la_app_ipc_take, which spread the pieces over the cells). LA_EINVAL for
 * a bad index. */
int la_app_ipc_take_pieces(la_app_ipc_t *ipc, uint32_t i, la_pieces_t *g,
                           double **values, uint8_t **geom, size_t *glen,
                           la_shm_bufmeta_t *meta);

/* Copies the n_elements flag bytes of buffer i into out (data: any byte
 * value is possible; bit 0 is LA_SHM_FLAG_INTERFERED). Call before giving
 * the buffer back. Returns 0 or LA_EINVAL. */
int la_app_ipc_flags(const la_app_ipc_t *ipc, uint32_t i, uint8_t *out);

/* Writes the weights of one cycle into the segment's weights area (a
 * no-op returning LA_EVERSION when the segment has none: layout 3, a libla
 * older than it): decodes the compact trace res (as libla_client decodes
 * it, so the application reads the very values the GlobalAgent will
 * serve) into the next slot as generation w_gen + 1 under the slot's
 * sequence word (la_shm_layout.h). kind is LA_SHM_WEIGHTS_ROBUST or
 * LA_SHM_WEIGHTS_MEASURED. Reads nothing from the segment. From one
 * worker thread or several (serialized here); a cycle older than the
 * last one written (jobs of one rank may finish out of order) is not
 * written, so generations follow the rank's cycles. Returns 0,
 * LA_EVERSION, or the decoder's error (that slot then reads as empty;
 * the other keeps the generation before). */
struct la_compact_result;
int la_app_ipc_put_weights(la_app_ipc_t *ipc, uint64_t cycle_tag,
                           uint64_t rank_seq, int kind,
                           const struct la_compact_result *res);

/* The same with the trace already decoded: v holds its n_elements /
 * spread values, each spread over `spread` consecutive elements as value /
 * spread (1: one value per element; a row-probed cycle: nx, one per row),
 * as a decoder of the spread trace gives them (the worker decodes the
 * robust weights once, for the history check and for this). Returns 0,
 * LA_EVERSION or LA_EINVAL (v NULL, spread 0 or not dividing n). */
int la_app_ipc_put_weights_values(la_app_ipc_t *ipc, uint64_t cycle_tag,
                                  uint64_t rank_seq, int kind, const double *v,
                                  uint64_t spread);

/* The same with the values v of pieces g (g->count of them), each cell
 * its piece's value over its cells: the pieces into the slot where the
 * application's libla spreads them (LA_SHM_WEIGHTS_F_PIECES in the
 * area's header, read each time; at most n / 4 of them), else la_pieces_expand into the slot;
 * LA_EINVAL when g is not of the registration's elements. */
int la_app_ipc_put_weights_pieces(la_app_ipc_t *ipc, uint64_t cycle_tag,
                                  uint64_t rank_seq, int kind,
                                  const la_pieces_t *g, const double *v);

/* Counts one more cycle dropped because the agent was behind in the
 * weights area's header (libla's LA_STAT_BEHIND); nothing without the
 * area. Any thread. */
void la_app_ipc_count_behind(la_app_ipc_t *ipc);

/* A coarse cycle (agent.behind = coarse): sums buffer i's cells in
 * blocks of k consecutive ones (k divides n_elements) into the
 * n_elements / k values of blocks, over every channel, with the piece
 * records spread first (as la_app_ipc_take) and each row
 * value's share of the block's cells (la_shm_row_share), times the scale;
 * with channels and ch_blocks not NULL, each channel's block sums too
 * (channel c's n_elements / k at ch_blocks + c x n_elements / k; the row
 * shares in channel 0's, as la_app_ipc_take spreads them); zeroes the
 * buffer in the same pass (each line of shared memory read once, while
 * it is in cache); *meta as la_app_ipc_take. The cells of a cycle libla
 * marked as row values only are neither read nor zeroed. Any thread
 * (touches only buffer i). Returns 0, LA_EINVAL (k does not divide the
 * elements) or LA_EPROTO (the scale is not a positive finite number: the
 * buffer is zeroed). */
int la_app_ipc_take_blocks(la_app_ipc_t *ipc, uint32_t i, uint64_t k,
                           double *blocks, double *ch_blocks,
                           la_shm_bufmeta_t *meta);

/* Zeroes buffer i without reading it (out of memory, or the agent behind):
 * its values, or only its rows when libla marked the cycle as row values
 * only (bufmeta.cells NONE), and its piece table when a record was
 * claimed. */
void la_app_ipc_discard(la_app_ipc_t *ipc, uint32_t i);

/* Gives buffer i back to the application (semaphore +1). A semaphore set
 * already removed (the application finalized) is not an error. */
void la_app_ipc_give_back(la_app_ipc_t *ipc, uint32_t i);

/* Detaches and removes the segment and the semaphore set (either may be gone
 * already). Idempotent. */
void la_app_ipc_release(la_app_ipc_t *ipc);

/* At start, before any registration: removes the semaphore sets that
 * applications handed to this agent's uid (la__ipc_handover in libla) and
 * that a previous run of the agent left when it died before them. Only when
 * the agent runs under a dedicated non-root uid (as root, ownership does not
 * tell LA's sets from others': nothing is done). Returns the number of sets
 * removed. */
int la_app_ipc_reap_orphans(void);

#endif
