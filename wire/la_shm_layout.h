/* SPDX-License-Identifier: BSD-3-Clause */
/* la_shm_layout.h: the one definition of LA's shared-memory segment layout.
 *
 * An application process (libla) creates one SysV segment (mode 0600) and one
 * SysV semaphore set; the LocalAgent attaches both after verifying them. The
 * segment is:
 *
 *   [la_shm_header_t | la_shm_bufmeta_t x n_buffers | pad to 64]
 *   [buffer 0: double x n_channels x n_elements (channel-major: channel c
 *    of element e at c * n_elements + e), then uint8_t flags x n_elements,
 *    padded to 64 bytes]
 *   [buffer 1 ...] ...
 *
 * Channels (LA_channel): an application that declares none has one channel
 * and exactly the layout of one, so channel 0's values are where a
 * one-channel buffer's are. Interference flags are per element, shared by
 * the channels.
 *
 * Semaphore i of the set is 1 while buffer i is free for the application and
 * 0 while someone holds it. The application takes a buffer (semop -1) at the
 * start of a profiled cycle and, at LA_dataXfer, fills the buffer's meta data
 * and notifies the agent; the agent reads the values, zeroes the buffer and
 * gives it back (semop +1). Values are in timer ticks for the wall-time metric
 * (multiply by bufmeta.scale to get the unit); raw counts otherwise.
 *
 * Interference (docs/fidelity.md): flags[e] is LA_SHM_FLAG_INTERFERED when
 * the probing thread was switched out while element e was timed in that
 * cycle; bufmeta.interference_ticks (times scale) is the total time of those
 * intervals and bufmeta.n_flagged the number of flagged elements. libla
 * clears both and the flags when it takes a buffer, so the agent only reads
 * them (it need not zero them).
 *
 * Weights (version 4, docs/balancing.md): when the header's features carry
 * LA_SHM_FEAT_WEIGHTS, a weights area follows the last buffer (at
 * la_shm_segment_size_ch, the size of a segment without it). The LocalAgent
 * writes each profiled cycle's per-element weights there (robust, else
 * measured; the per-element sum over the channels), as the GlobalAgent will
 * serve them, so the application can balance inside the job (LA_weights).
 * The area is an area header and two slots; the agent writes generation g
 * (1, 2, ...) into slot g % 2 under a per-slot sequence word (odd while it
 * writes, 2g when done), so a reader copies the newest finished slot while
 * the other one is rewritten and never sees a torn vector. The area's
 * version is the reader's (libla writes it): from version 2 the agent may
 * write a row-probed cycle's weights as one value per row (the slot's
 * spread field), which the reader divides over the row's cells as it
 * copies them; a version-1 reader always gets one value per element.
 *
 * Rows (version 5): when the header's features carry LA_SHM_FEAT_ROWS, the
 * registration was a grid of nx x ny x nz cells and each buffer ends with
 * one double per row of cells (row r = j + ny * k holds cells r * nx ..
 * r * nx + nx - 1), after its flags, 8-byte aligned. A row probe
 * (LA_startRow/LA_stopRow) adds its interval there instead of spreading it
 * over the row's cells: one store instead of nx. The agent spreads each
 * row's value evenly over the row's cells of channel 0 when it reads the
 * buffer (cell value + row value / nx), and zeroes the rows with the
 * values. The row count is not in the header: both sides derive it from
 * the registered grid (ny * nz), which the agent checks against n_elements.
 *
 * Pieces (version 6, wire/la_shm_pieces.h): when the header's features
 * carry LA_SHM_FEAT_PIECES, a piece area follows the weights area: per
 * buffer a la_shm_pieces_head_t and la_shm_pieces_count(n_elements)
 * records (la_shm_piece_t), an open-addressed table keyed by a box's or
 * element range's first cell, channel and shape. A box probe that is not a
 * whole row (LA_stopBox, LA_stopBoxC, LA_stopRowC) or a range probe
 * (LA_stopRange, LA_stopRangeC) adds its interval to its record instead of
 * spreading it over its cells; when its probes find no free record the
 * probe spreads in the application as before and counts one in the head's
 * spilled. The agent checks every record (geometry inside the registered
 * grid or the elements, a declared channel), spreads each over its cells
 * (la_shm_pieces_fold) and zeroes the area with the buffer. The record
 * count is not in the header: both sides derive it from n_elements.
 *
 * Versions: a version-3 header (libla before the weights area) is still
 * accepted by the LocalAgent, which then writes no weights; a version-4
 * header may leave LA_SHM_FEAT_WEIGHTS clear (no area, the version-3
 * segment); a version-5 header may carry LA_SHM_FEAT_ROWS (version 5 or later may); a
 * version-6 header may carry LA_SHM_FEAT_PIECES (only version 6 may). The header's segment_size counts the area and the rows when
 * present.
 *
 * Both sides include this header; nothing else describes the layout. Any
 * change to it bumps LA_SHM_VERSION.
 */
#ifndef LA_SHM_LAYOUT_H
#define LA_SHM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define LA_SHM_MAGIC 0x4c415f53484d3031ULL /* "LA_SHM01" */
#define LA_SHM_VERSION 6u
#define LA_SHM_VERSION_MIN 3u /* the oldest layout the agent still reads */
#define LA_SHM_MIN_BUFFERS 2u
#define LA_SHM_MAX_BUFFERS 16u
#define LA_SHM_ALIGN 64u
#define LA_SHM_MAX_ELEMENTS (1ULL << 32)
#define LA_SHM_MAX_CHANNELS 16u

/* Meta data of one value buffer, written by the application at LA_dataXfer
 * before it notifies the agent. */
typedef struct la_shm_bufmeta {
  uint64_t cycle_tag; /* tag of the cycle whose values the buffer holds */
  uint64_t seq;       /* profiled cycle number on this rank, from 0 */
  double scale;       /* multiply a value by this to get the metric's unit */
  uint64_t t_xfer_ns; /* CLOCK_REALTIME at LA_dataXfer */
  uint64_t range_errors; /* probes out of range during the cycle */
  uint64_t interference_ticks; /* time of the flagged intervals, ticks */
  uint64_t n_flagged;   /* elements flagged in this cycle */
  uint64_t cells;       /* LA_SHM_CELLS_*: whether a cell value was written
                           (0 from a libla that does not say) */
} la_shm_bufmeta_t;

/* bufmeta.cells: what libla knows of the cycle's cell values. A grid
 * registered through an la.h whose probes mark the cycle when they write a
 * cell (LA_registerGrid of this la.h) says NONE or WRITTEN; otherwise 0,
 * and the agent reads the cells to find out (la_shm_all_zero). Written by
 * the application: a wrong NONE costs only its own values. */
enum {
  LA_SHM_CELLS_UNKNOWN = 0,
  LA_SHM_CELLS_NONE = 1,   /* only row values and piece records (layout
                              6): every cell value is 0 */
  LA_SHM_CELLS_WRITTEN = 2 /* cell values were written (maybe rows and
                              pieces too) */
};

typedef struct la_shm_header {
  uint64_t magic;        /* LA_SHM_MAGIC */
  uint32_t version;      /* LA_SHM_VERSION */
  uint32_t header_len;   /* bytes from the segment start to buffer 0 */
  uint64_t n_elements;   /* doubles per buffer */
  uint32_t n_buffers;    /* LA_SHM_MIN_BUFFERS..LA_SHM_MAX_BUFFERS */
  int32_t creator_pid;   /* the process that created segment and semaphores */
  uint64_t nonce;        /* random; the registration must quote it */
  uint64_t buffer_stride;/* bytes from one buffer to the next */
  uint64_t segment_size; /* total bytes */
  uint32_t n_channels;   /* 1..LA_SHM_MAX_CHANNELS value sets per buffer */
  uint32_t features;     /* version >= 4: LA_SHM_FEAT_*; version 3: 0 */
  la_shm_bufmeta_t buf[LA_SHM_MAX_BUFFERS];
} la_shm_header_t;

_Static_assert(sizeof(la_shm_bufmeta_t) == 64, "bufmeta is one cache line");
_Static_assert(offsetof(la_shm_header_t, buf) == 64, "header prefix layout");
_Static_assert(sizeof(la_shm_header_t) == 64 + 64 * LA_SHM_MAX_BUFFERS,
               "header size");
_Static_assert(sizeof(la_shm_header_t) % LA_SHM_ALIGN == 0, "header aligned");

/* features: a weights area follows the buffers. */
#define LA_SHM_FEAT_WEIGHTS 1u
/* features (version 5): each buffer ends with one double per grid row. */
#define LA_SHM_FEAT_ROWS 2u
/* features (version 6): a piece area follows the weights area. */
#define LA_SHM_FEAT_PIECES 4u
#define LA_SHM_FEATURES_KNOWN \
  (LA_SHM_FEAT_WEIGHTS | LA_SHM_FEAT_ROWS | LA_SHM_FEAT_PIECES)

#define LA_SHM_WEIGHTS_MAGIC 0x4c415f5747543031ULL /* "LA_WGT01" */
#define LA_SHM_WEIGHTS_VERSION 2u
#define LA_SHM_WEIGHTS_VERSION_SPREAD 2u /* readers of spread slots */
#define LA_SHM_WEIGHTS_SLOTS 2u
/* weights header flags: what the application's libla reads */
#define LA_SHM_WEIGHTS_F_PIECES 1u /* slots of pieces (slot.pieces) */
#define LA_SHM_WEIGHTS_SUM 0xffffffffu /* channel: the sum over channels */
enum { LA_SHM_WEIGHTS_ROBUST = 1, LA_SHM_WEIGHTS_MEASURED = 2 };

/* The weights area's header, written once by libla when it creates the
 * segment. */
typedef struct la_shm_weights_hdr {
  uint64_t magic;      /* LA_SHM_WEIGHTS_MAGIC */
  uint32_t version;    /* LA_SHM_WEIGHTS_VERSION */
  uint32_t header_len; /* bytes of this header (64) */
  uint64_t n_elements; /* doubles per slot: the header's n_elements */
  uint32_t n_slots;    /* LA_SHM_WEIGHTS_SLOTS */
  uint32_t flags;      /* LA_SHM_WEIGHTS_F_*, by libla (0 before flags) */
  uint64_t slot_stride; /* bytes from one slot to the next */
  /* written by the agent (atomically, +1 each): this rank's cycles it did
   * not read because it was behind (agent.max_backlog), each recorded
   * missing; 0 from an agent that does not count them */
  uint64_t behind;
  uint64_t pad[2];
} la_shm_weights_hdr_t;

/* A slot: this header, then n_elements doubles. Written by the agent. */
typedef struct la_shm_weights_slot {
  uint64_t seq;        /* odd while written; 2g once generation g is in */
  uint64_t cycle_tag;  /* the cycle the weights are from */
  uint64_t rank_seq;   /* that cycle's profiled-cycle number on the rank */
  uint64_t n_elements; /* doubles that follow */
  uint32_t channel;    /* LA_SHM_WEIGHTS_SUM */
  uint32_t kind;       /* LA_SHM_WEIGHTS_ROBUST or _MEASURED */
  uint64_t t_ns;       /* CLOCK_REALTIME when the agent wrote them */
  uint64_t spread;     /* area version >= 2: 0 or 1, n_elements doubles
                          follow; k >= 2 (dividing n_elements), one double
                          per k consecutive elements (a row-probed cycle's
                          rows): each element's weight is its value / k */
  uint64_t pieces;     /* 0: as spread says; p >= 1 (only where the header
                          has LA_SHM_WEIGHTS_F_PIECES, p <= n_elements / 4):
                          p piece records (la_shm_piece_t, channel 0, in
                          order of first element) follow instead, each
                          element's weight its piece's value over the
                          piece's cells, 0 in no piece */
} la_shm_weights_slot_t;

_Static_assert(sizeof(la_shm_weights_hdr_t) == 64, "weights header");
_Static_assert(sizeof(la_shm_weights_slot_t) == 64, "weights slot header");

/* Bytes from one slot to the next for n elements (64-byte aligned). */
static inline uint64_t la_shm_weights_stride(uint64_t n_elements) {
  uint64_t b = sizeof(la_shm_weights_slot_t) + n_elements * sizeof(double);
  return (b + LA_SHM_ALIGN - 1) / LA_SHM_ALIGN * LA_SHM_ALIGN;
}

/* Bytes of the weights area for n elements. */
static inline uint64_t la_shm_weights_bytes(uint64_t n_elements) {
  return sizeof(la_shm_weights_hdr_t) +
         LA_SHM_WEIGHTS_SLOTS * la_shm_weights_stride(n_elements);
}

/* One piece record (layout 6): key 0 is a free record; else key - 1 is
 * (first << 4) | channel, first the piece's first element (a box's first
 * cell i0 + nx * (j0 + ny * k0)). A box of ni x nj x nk cells has all three
 * >= 1; an element range of ni elements has nj = nk = 0. value is the sum
 * of the intervals probed (in counts, like a cell value). Written by the
 * application: the agent checks each record before it uses it. */
typedef struct la_shm_piece {
  uint64_t key;
  uint32_t ni, nj, nk;
  uint32_t reserved;
  double value;
} la_shm_piece_t;

/* A buffer's piece table head, then its records. */
typedef struct la_shm_pieces_head {
  uint64_t claimed; /* records claimed this cycle (0: the agent need not
                       look at the table) */
  uint64_t spilled; /* probes spread in the application: the table had
                       no free record within LA_SHM_PIECES_PROBES */
  uint64_t pad[6];
} la_shm_pieces_head_t;

_Static_assert(sizeof(la_shm_piece_t) == 32, "piece record");
_Static_assert(sizeof(la_shm_pieces_head_t) == 64, "piece head");

#define LA_SHM_PIECES_MIN 64u
#define LA_SHM_PIECES_MAX (1u << 16)
#define LA_SHM_PIECES_PROBES 16u /* records tried before a probe spills */

/* Records per buffer for n elements: a power of two, n / 64 rounded up,
 * within LA_SHM_PIECES_MIN..LA_SHM_PIECES_MAX. */
static inline uint64_t la_shm_pieces_count(uint64_t n_elements) {
  uint64_t c = LA_SHM_PIECES_MIN;
  while (c < LA_SHM_PIECES_MAX && c * 64 < n_elements) c *= 2;
  return c;
}

/* Bytes of one buffer's piece table (head and records). */
static inline uint64_t la_shm_pieces_stride(uint64_t n_elements) {
  return sizeof(la_shm_pieces_head_t) +
         la_shm_pieces_count(n_elements) * sizeof(la_shm_piece_t);
}

/* Bytes of the piece area of k buffers. */
static inline uint64_t la_shm_pieces_bytes(uint64_t n_elements,
                                           uint32_t n_buffers) {
  return (uint64_t)n_buffers * la_shm_pieces_stride(n_elements);
}

/* flags[e] of a buffer: bit 0 set when element e's timing was interfered
 * with (the thread was switched out); other bits are reserved (0). */
#define LA_SHM_FLAG_INTERFERED 1u

/* Bytes from a buffer's start to its row values (after k channels of n
 * doubles and n flag bytes, 8-byte aligned). */
static inline uint64_t la_shm_rows_offset(uint64_t n_elements,
                                          uint32_t n_channels) {
  uint64_t b = n_elements * (sizeof(double) * n_channels + 1);
  return (b + sizeof(double) - 1) / sizeof(double) * sizeof(double);
}

/* Bytes of one buffer of k channels of n doubles, n flag bytes and, with
 * rows (n_rows > 0), n_rows row values, rounded up to LA_SHM_ALIGN. */
static inline uint64_t la_shm_buffer_stride_r(uint64_t n_elements,
                                              uint32_t n_channels,
                                              uint64_t n_rows) {
  uint64_t b = n_elements * (sizeof(double) * n_channels + 1);
  if (n_rows) b = la_shm_rows_offset(n_elements, n_channels) +
                  n_rows * sizeof(double);
  return (b + LA_SHM_ALIGN - 1) / LA_SHM_ALIGN * LA_SHM_ALIGN;
}

/* The same without rows. */
static inline uint64_t la_shm_buffer_stride_ch(uint64_t n_elements,
                                               uint32_t n_channels) {
  return la_shm_buffer_stride_r(n_elements, n_channels, 0);
}

/* The same for one channel. */
static inline uint64_t la_shm_buffer_stride(uint64_t n_elements) {
  return la_shm_buffer_stride_ch(n_elements, 1);
}

/* Segment size up to the weights area for n elements, k buffers, c
 * channels and r rows per buffer (0: no rows). */
static inline uint64_t la_shm_segment_size_r(uint64_t n_elements,
                                             uint32_t n_buffers,
                                             uint32_t n_channels,
                                             uint64_t n_rows) {
  return sizeof(la_shm_header_t) +
         (uint64_t)n_buffers *
             la_shm_buffer_stride_r(n_elements, n_channels, n_rows);
}

/* Total segment size for n elements, k buffers and c channels (no rows, no
 * weights area). */
static inline uint64_t la_shm_segment_size_ch(uint64_t n_elements,
                                              uint32_t n_buffers,
                                              uint32_t n_channels) {
  return la_shm_segment_size_r(n_elements, n_buffers, n_channels, 0);
}

/* The same for one channel. */
static inline uint64_t la_shm_segment_size(uint64_t n_elements,
                                           uint32_t n_buffers) {
  return la_shm_segment_size_ch(n_elements, n_buffers, 1);
}

/* The weights area of a segment with the feature and r rows per buffer
 * (0: none), from geometry the caller trusts (like la_shm_buffer_ch). */
static inline la_shm_weights_hdr_t *la_shm_weights_area_r(
    void *segment, uint64_t n_elements, uint32_t n_buffers,
    uint32_t n_channels, uint64_t n_rows) {
  return (la_shm_weights_hdr_t *)((char *)segment +
                                  la_shm_segment_size_r(n_elements, n_buffers,
                                                        n_channels, n_rows));
}

/* The same without rows. */
static inline la_shm_weights_hdr_t *la_shm_weights_area(void *segment,
                                                        uint64_t n_elements,
                                                        uint32_t n_buffers,
                                                        uint32_t n_channels) {
  return la_shm_weights_area_r(segment, n_elements, n_buffers, n_channels, 0);
}

/* Slot k's header of a weights area (its doubles follow it). */
static inline la_shm_weights_slot_t *la_shm_weights_slot(
    la_shm_weights_hdr_t *area, uint64_t n_elements, uint32_t k) {
  return (la_shm_weights_slot_t *)((char *)area + sizeof(*area) +
                                   (uint64_t)k *
                                       la_shm_weights_stride(n_elements));
}

/* Buffer i's piece table head in a segment with the piece area (layout 6:
 * always with the weights area), from geometry the caller trusts; its
 * records follow it. */
static inline la_shm_pieces_head_t *la_shm_pieces_head(
    void *segment, uint64_t n_elements, uint32_t n_buffers,
    uint32_t n_channels, uint64_t n_rows, uint32_t i) {
  return (la_shm_pieces_head_t *)((char *)la_shm_weights_area_r(
                                      segment, n_elements, n_buffers,
                                      n_channels, n_rows) +
                                  la_shm_weights_bytes(n_elements) +
                                  (uint64_t)i *
                                      la_shm_pieces_stride(n_elements));
}

/* Values of buffer i (n_channels x n_elements doubles, channel-major) from
 * geometry the caller trusts (its own copies of the counts, validated
 * once): never reads the header, which the other process may rewrite at
 * any time. The LocalAgent and libla use this. */
static inline double *la_shm_buffer_r(void *segment, uint64_t n_elements,
                                      uint32_t n_channels, uint64_t n_rows,
                                      uint32_t i) {
  return (double *)((char *)segment + sizeof(la_shm_header_t) +
                    (uint64_t)i * la_shm_buffer_stride_r(n_elements,
                                                         n_channels, n_rows));
}

/* Whether the n values at v are all +0.0, bit for bit (read until the
 * first that is not, a block at a time). A buffer of one channel whose
 * cells are all zero while rows hold values is a row-probed cycle: the
 * LocalAgent then takes its rows as they are, one value per row, and a
 * cell's value is la_shm_row_cell() (what a decoder of the stored trace
 * gives: the row's value in the metric's unit over nx); LA_DUMP_RAW
 * writes the same. */
static inline int la_shm_all_zero(const double *v, uint64_t n) {
  const uint64_t *u = (const uint64_t *)(const void *)v;
  uint64_t e = 0;
  for (; e + 64 <= n; e += 64) {
    uint64_t b = 0;
    for (int c = 0; c < 64; c++) b |= u[e + c];
    if (b) return 0;
  }
  for (; e < n; e++)
    if (u[e]) return 0;
  return 1;
}
static inline double la_shm_row_cell(double row_value, double scale,
                                     uint64_t nx) {
  return row_value * scale / (double)nx;
}

/* The same in a segment without rows. */
static inline double *la_shm_buffer_ch(void *segment, uint64_t n_elements,
                                       uint32_t n_channels, uint32_t i) {
  return la_shm_buffer_r(segment, n_elements, n_channels, 0, i);
}

/* Row values of buffer i (n_rows doubles) in a segment with rows, from
 * geometry the caller trusts. */
static inline double *la_shm_buffer_rows(void *segment, uint64_t n_elements,
                                         uint32_t n_channels, uint64_t n_rows,
                                         uint32_t i) {
  return (double *)((char *)la_shm_buffer_r(segment, n_elements, n_channels,
                                            n_rows, i) +
                    la_shm_rows_offset(n_elements, n_channels));
}

/* The same for a segment of one channel. */
static inline double *la_shm_buffer(void *segment, uint64_t n_elements,
                                    uint32_t i) {
  return la_shm_buffer_ch(segment, n_elements, 1, i);
}

/* Values of buffer i of an attached segment, from the header's own fields:
 * only for a header this process wrote and no one else can change (tests,
 * stand-ins); an agent must use la_shm_buffer_ch. */
static inline double *la_shm_values(la_shm_header_t *h, uint32_t i) {
  return (double *)((char *)h + h->header_len + (uint64_t)i * h->buffer_stride);
}

/* Flags of buffer i: n_elements bytes right after its values, from
 * geometry the caller trusts (like la_shm_buffer_ch), in a segment of
 * n_rows rows per buffer (0: none). */
static inline uint8_t *la_shm_buffer_flags_r(void *segment,
                                             uint64_t n_elements,
                                             uint32_t n_channels,
                                             uint64_t n_rows, uint32_t i) {
  return (uint8_t *)(la_shm_buffer_r(segment, n_elements, n_channels, n_rows,
                                     i) +
                     (uint64_t)n_channels * n_elements);
}

/* What each cell of a row gets of its row value (layout 5): the row's
 * value divided evenly over its nx cells. The LocalAgent adds it to the
 * cells when it takes a buffer and LA_DUMP_RAW when it writes the ground
 * truth, so both give the same values (libla's own spread of a box
 * without rows divides the same way: interval / cells). */
static inline double la_shm_row_share(double row_value, uint64_t nx) {
  return row_value / (double)nx;
}

/* The same in a segment without rows. */
static inline uint8_t *la_shm_buffer_flags_ch(void *segment,
                                              uint64_t n_elements,
                                              uint32_t n_channels,
                                              uint32_t i) {
  return la_shm_buffer_flags_r(segment, n_elements, n_channels, 0, i);
}

/* The same for a segment of one channel. */
static inline uint8_t *la_shm_buffer_flags(void *segment, uint64_t n_elements,
                                           uint32_t i) {
  return la_shm_buffer_flags_ch(segment, n_elements, 1, i);
}

/* Flags of buffer i from the header's own fields: like la_shm_values, only
 * for a header no one else can change. */
static inline uint8_t *la_shm_flags(la_shm_header_t *h, uint32_t i) {
  return (uint8_t *)(la_shm_values(h, i) +
                     (uint64_t)h->n_channels * h->n_elements);
}

/* Checks a header against the size of the attached segment and the values
 * the registration announced (n_channels: 1 when it named no channel;
 * grid_rows: ny * nz of a grid registration, 0 for none). Returns NULL when
 * consistent, else a short reason (static string). Used by the LocalAgent
 * and the tests. */
static inline const char *la_shm_header_check_r(const la_shm_header_t *h,
                                                uint64_t segment_bytes,
                                                uint64_t n_elements,
                                                uint32_t n_buffers,
                                                uint32_t n_channels,
                                                uint64_t grid_rows,
                                                uint64_t nonce) {
  if (segment_bytes < sizeof(*h)) return "segment smaller than its header";
  if (h->magic != LA_SHM_MAGIC) return "bad magic number";
  if (h->version < LA_SHM_VERSION_MIN || h->version > LA_SHM_VERSION)
    return "unsupported header version";
  if (h->version == 3 && h->features != 0)
    return "version 3 header with its reserved field set";
  if (h->features & ~LA_SHM_FEATURES_KNOWN) return "unknown feature bits";
  uint64_t n_rows = (h->features & LA_SHM_FEAT_ROWS) ? grid_rows : 0;
  if ((h->features & LA_SHM_FEAT_ROWS) && h->version < 5)
    return "row values in a header older than version 5";
  if ((h->features & LA_SHM_FEAT_PIECES) && h->version < 6)
    return "a piece area in a header older than version 6";
  if ((h->features & LA_SHM_FEAT_PIECES) && !(h->features & LA_SHM_FEAT_WEIGHTS))
    return "a piece area without the weights area";
  if ((h->features & LA_SHM_FEAT_ROWS) &&
      (grid_rows == 0 || n_elements % grid_rows != 0))
    return "row values without a grid registration";
  if (h->header_len != sizeof(*h)) return "unexpected header length";
  if (h->nonce != nonce) return "nonce does not match";
  if (h->n_elements != n_elements) return "element count does not match";
  if (h->n_buffers != n_buffers) return "buffer count does not match";
  if (h->n_channels != n_channels) return "channel count does not match";
  if (n_buffers < LA_SHM_MIN_BUFFERS || n_buffers > LA_SHM_MAX_BUFFERS)
    return "buffer count out of range";
  if (n_channels < 1 || n_channels > LA_SHM_MAX_CHANNELS)
    return "channel count out of range";
  if (n_elements == 0 || n_elements > LA_SHM_MAX_ELEMENTS)
    return "element count out of range";
  if (h->buffer_stride !=
      la_shm_buffer_stride_r(n_elements, n_channels, n_rows))
    return "unexpected buffer stride";
  uint64_t size =
      la_shm_segment_size_r(n_elements, n_buffers, n_channels, n_rows);
  if (h->features & LA_SHM_FEAT_WEIGHTS) size += la_shm_weights_bytes(n_elements);
  if (h->features & LA_SHM_FEAT_PIECES)
    size += la_shm_pieces_bytes(n_elements, n_buffers);
  if (h->segment_size != size || segment_bytes < h->segment_size)
    return "segment size does not match";
  return 0;
}

/* The same for a registration that is not a grid. */
static inline const char *la_shm_header_check_ch(const la_shm_header_t *h,
                                                 uint64_t segment_bytes,
                                                 uint64_t n_elements,
                                                 uint32_t n_buffers,
                                                 uint32_t n_channels,
                                                 uint64_t nonce) {
  return la_shm_header_check_r(h, segment_bytes, n_elements, n_buffers,
                               n_channels, 0, nonce);
}

/* The same for a registration of one channel. */
static inline const char *la_shm_header_check(const la_shm_header_t *h,
                                              uint64_t segment_bytes,
                                              uint64_t n_elements,
                                              uint32_t n_buffers,
                                              uint64_t nonce) {
  return la_shm_header_check_ch(h, segment_bytes, n_elements, n_buffers, 1,
                                nonce);
}

#endif /* LA_SHM_LAYOUT_H */
