/* SPDX-License-Identifier: BSD-3-Clause */
/* probe.c: the cycle's part of the state the inline probes of la.h read
 * (la__hot, defined in hot.c), and the probe paths that are not inline:
 * user and PAPI probes (through a function pointer), out-of-range indices,
 * element ranges and boxes of grid cells.
 *
 * An element's value accumulates stop - start: the start reading is
 * subtracted from the element and the stop reading added, so one element
 * needs no separate start slot, probes of different elements may nest, and
 * threads that own disjoint elements need no lock. For the built-in timer
 * readings are taken relative to the cycle's start (la__hot.base) so values
 * stay small and exact in a double. Ranges and boxes of grid cells (rows)
 * keep their start reading per thread, so they do not nest within a thread.
 * Interference detection (interference.c) covers the inline wall-time probes
 * only: not ranges or boxes, not user or PAPI probes. Channels (LA_channel):
 * channel ch of element e is value slot ch * limit + e of the buffer; the
 * flags stay per element. Boxes and rows probe channel 0, their C
 * variants (LA_startBoxC, LA_startRowC) channel ch: a row in a channel
 * other than 0 is spread over its cells like a box (row values are
 * channel 0's).
 *
 * Pieces: in a segment with a piece table (layout 6), a box that is not
 * a whole row, a row in a channel other than 0 or an element range adds
 * its interval to its record in the buffer's piece table (la_shm_piece_add:
 * from its first cell's place in the table on, a few records tried), one value
 * per distinct piece per cycle, and the LocalAgent spreads it over the
 * cells; a table with no free record for it, or a segment without one,
 * spreads here (counted in the table head's spilled).
 *
 * Rows: in a segment with row values (layout 5, a grid registration), a
 * row probe (LA_startRow/LA_stopRow, or a box that is one whole row) adds
 * its interval to the row's value, one store, and the LocalAgent spreads
 * it over the row's cells; without them it spreads here, cell by cell.
 * With the built-in timer la__hot.rows lets LA_startRow/LA_stopRow do it
 * inline (la.h, their own per-thread start); the calls here serve the
 * rest: user and PAPI probes, boxes, errors, segments without rows.
 */
#include "la_interference.h"

/* la.h's cell mark: set by a probe that writes a cell value */
LA_EXPORT int la__cell_mark;

static LA_ProbeFunc la__start_fn, la__stop_fn;
static void *la__start_arg, *la__stop_arg;
static uint64_t la__range_errors; /* this cycle, atomic */
static uint64_t la__refused;      /* of them, la__probe_refuse's */
static __thread double la__range_t0;
static __thread int la__range_open;
/* The cycle's row values (la__ipc_rows), NULL without them. Like
 * la__hot.values it keeps pointing into mapped memory after the end. */
static double *la__rows;
/* The cycle's piece table (la__ipc_pieces), NULL without one, its record
 * count - 1, and records per element in 32.32 fixed point (a piece's
 * first record to try: its first element times this). */
static la_shm_pieces_head_t *la__pieces;
static uint64_t la__pieces_mask, la__pieces_per_elem;

void la__probe_setup(int fast, int tsc, LA_ProbeFunc start, void *start_arg,
                     LA_ProbeFunc stop, void *stop_arg) {
  la__hot.fast = fast;
  la__hot.tsc = tsc;
  la__start_fn = start;
  la__start_arg = start_arg;
  la__stop_fn = stop;
  la__stop_arg = stop_arg;
}

void la__probe_args(void **start_arg, void **stop_arg) {
  *start_arg = la__start_fn ? la__start_arg : NULL;
  *stop_arg = la__stop_fn ? la__stop_arg : NULL;
}

void la__probe_grid(uint64_t nx, uint64_t ny, uint64_t nz) {
  la__hot.nx = nx;
  la__hot.ny = ny;
  la__hot.nz = nz;
}

void la__probe_begin(const la__ipc_t *ipc, uint32_t i) {
  __atomic_store_n(&la__range_errors, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&la__refused, 0, __ATOMIC_RELAXED);
  /* libla's own geometry (la__ipc_t), never the header's fields */
  la__interf_begin(la__ipc_flags(ipc, i), &ipc->hdr->buf[i], ipc->n_elements,
                   i);
  la__hot.values = la__ipc_values(ipc, i);
  la__rows = la__ipc_rows(ipc, i);
  la__pieces = la__ipc_pieces(ipc, i);
  la__pieces_mask = ipc->n_pieces ? ipc->n_pieces - 1 : 0;
  la__pieces_per_elem = (ipc->n_pieces << 32) / ipc->n_elements;
  la__hot.rows = la__hot.fast ? la__rows : NULL; /* the inline row probes */
  la__hot.n_channels = ipc->n_channels;
  la__hot.base = la__now();
  __atomic_store_n(&la__cell_mark, 0, __ATOMIC_RELAXED);
  la__hot.limit = ipc->n_elements;
}

int la__probe_cell_mark(void) {
  return __atomic_load_n(&la__cell_mark, __ATOMIC_RELAXED) != 0;
}

/* values stays where it points (never NULL once set): a thread that read
 * a non-zero limit just before still writes into mapped memory (ipc.c keeps
 * scratch memory there after the end). */
uint64_t la__probe_end(void) {
  la__hot.limit = 0;
  la__interf_end();
  return __atomic_load_n(&la__range_errors, __ATOMIC_RELAXED);
}

void la__probe_reset(void) {
  la__probe_end();
  la__interf_shutdown();
  la__hot.fast = 0;
  la__hot.nx = la__hot.ny = la__hot.nz = 0;
  la__start_fn = la__stop_fn = NULL;
}

/* The slow paths may run just after the end (a thread that read a non-zero
 * limit while libla finalized): the function may be gone by then. */
LA_EXPORT int la__probe_start_slow_at(long e, uint64_t at) {
  LA_ProbeFunc fn = la__start_fn;
  if (fn) la__hot.values[at] -= fn(e, la__start_arg);
  return 0;
}

LA_EXPORT int la__probe_stop_slow_at(long e, uint64_t at) {
  LA_ProbeFunc fn = la__stop_fn;
  la__mark_cell();
  if (fn) la__hot.values[at] += fn(e, la__stop_arg);
  return 0;
}

/* Programs compiled against la.h before channels call these. */
LA_EXPORT int la__probe_start_slow(long e) {
  return la__probe_start_slow_at(e, (uint64_t)e);
}

LA_EXPORT int la__probe_stop_slow(long e) {
  return la__probe_stop_slow_at(e, (uint64_t)e);
}

LA_EXPORT int la__probe_range_error(long e) {
  if (__atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED) == 0)
    la__error(LA_ERANGE, "element %ld outside 0..%llu (first in this cycle)", e,
              (unsigned long long)la__hot.limit - 1);
  return LA_ERANGE;
}

LA_EXPORT int la__probe_channel_error(int ch, long e) {
  if ((uint64_t)e >= la__hot.limit) return la__probe_range_error(e);
  if (__atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED) == 0)
    la__error(LA_ERANGE,
              "channel %d not declared (%u channels; first in "
              "this cycle)",
              ch, la__hot.n_channels);
  return LA_ERANGE;
}

uint64_t la__probe_refuse(void) {
  __atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED);
  return __atomic_fetch_add(&la__refused, 1, __ATOMIC_RELAXED);
}

/* Channel ch declared, else LA_ERANGE counted as a range error; what
 * names the probe in the message. */
static int la__channel_check(int ch, const char *what) {
  if ((uint32_t)ch < la__hot.n_channels) return 0;
  __atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED);
  return la__error(LA_ERANGE, "%s in channel %d, which is not declared", what,
                   ch);
}

static int la__range_check(int ch, long first, long count) {
  int rc = la__channel_check(ch, "range");
  if (rc) return rc;
  if (first < 0 || count < 1 || (uint64_t)first >= la__hot.limit ||
      (uint64_t)count > la__hot.limit - (uint64_t)first) {
    __atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED);
    return la__error(LA_ERANGE, "range %ld+%ld outside 0..%llu", first, count,
                     (unsigned long long)la__hot.limit - 1);
  }
  return 0;
}

/* a..a+n-1 inside 0..dim-1, n >= 1. */
static int la__axis_ok(long a, long n, uint64_t dim) {
  return a >= 0 && n >= 1 && (uint64_t)a < dim &&
         (uint64_t)n <= dim - (uint64_t)a;
}

/* Checks a box of the grid; *first is its first cell's element. */
static int la__box_check(long i0, long j0, long k0, long ni, long nj, long nk,
                         long *first) {
  uint64_t nx = la__hot.nx, ny = la__hot.ny, nz = la__hot.nz;
  if (nx == 0)
    return la__error(LA_ESTATE, "boxes and rows need a grid (LA_registerGrid)");
  if (!la__axis_ok(i0, ni, nx) || !la__axis_ok(j0, nj, ny) ||
      !la__axis_ok(k0, nk, nz)) {
    __atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED);
    return la__error(
        LA_ERANGE,
        "box (%ld,%ld,%ld)+(%ld,%ld,%ld) outside the %llux%llux%llu "
        "grid",
        i0, j0, k0, ni, nj, nk, (unsigned long long)nx, (unsigned long long)ny,
        (unsigned long long)nz);
  }
  *first = (long)((uint64_t)i0 + nx * ((uint64_t)j0 + ny * (uint64_t)k0));
  return 0;
}

/* The start of a range or box whose first element is first (checked). */
static int la__spread_start(long first) {
  LA_ProbeFunc fn = la__start_fn;
  if (!la__hot.fast && !fn) return 0; /* ended meanwhile */
  la__range_t0 = la__hot.fast ? (double)(int64_t)(la__now() - la__hot.base)
                              : fn(first, la__start_arg);
  la__range_open = 1;
  return 0;
}

/* The stop of a range or box (checked): the interval since the start,
 * over nk planes of nj rows of ni elements from first of channel ch, rows
 * sx elements apart and planes sxy (a range: one row, range set): for a
 * whole grid row (row >= 0) in a segment with row values, added to row's
 * value; else added to its piece record in a segment with a piece table;
 * else (or the table full) spread evenly over the cells. */
static int la__spread_stop(int ch, long first, uint64_t ni, uint64_t nj,
                           uint64_t nk, uint64_t sx, uint64_t sxy, long row,
                           int range, const char *what) {
  if (!la__range_open)
    return la__error(LA_ESTATE, "LA_stop%s without LA_start%s", what, what);
  la__range_open = 0;
  LA_ProbeFunc fn = la__stop_fn;
  if (!la__hot.fast && !fn) return 0; /* ended meanwhile */
  double t1 = la__hot.fast ? (double)(int64_t)(la__now() - la__hot.base)
                           : fn(first, la__stop_arg);
  double dv = t1 - la__range_t0;
  double *rows = la__rows;
  if (row >= 0 && rows) {
    rows[row] += dv;
    return 0;
  }
  la_shm_pieces_head_t *ph = la__pieces; /* a record: no cell written */
  if (ph) {
    if (ni <= UINT32_MAX &&
        la_shm_piece_add(ph, (la_shm_piece_t *)(ph + 1), la__pieces_mask,
                         ((uint64_t)first * la__pieces_per_elem >> 32) + ch,
                         la_shm_piece_key((uint64_t)first, (uint32_t)ch),
                         (uint32_t)ni, range ? 0 : (uint32_t)nj,
                         range ? 0 : (uint32_t)nk, dv) == 0)
      return 0;
    __atomic_fetch_add(&ph->spilled, 1, __ATOMIC_RELAXED);
  }
  la__mark_cell();
  la_shm_spread_add(la__hot.values + (uint64_t)(uint32_t)ch * la__hot.limit +
                        (uint64_t)first,
                    dv / (double)(ni * nj * nk), ni, nj, nk, sx, sxy);
  return 0;
}

LA_EXPORT int LA_startRange(long first, long count) {
  return LA_startRangeC(0, first, count);
}

LA_EXPORT int LA_stopRange(long first, long count) {
  return LA_stopRangeC(0, first, count);
}

LA_EXPORT int LA_startRangeC(int ch, long first, long count) {
  if (la__hot.limit == 0) return 0;
  int rc = la__range_check(ch, first, count);
  return rc ? rc : la__spread_start(first);
}

LA_EXPORT int LA_stopRangeC(int ch, long first, long count) {
  if (la__hot.limit == 0) return 0;
  int rc = la__range_check(ch, first, count);
  return rc ? rc
            : la__spread_stop(ch, first, (uint64_t)count, 1, 1, 0, 0, -1, 1,
                              "Range");
}

LA_EXPORT int LA_startBox(long i0, long j0, long k0, long ni, long nj,
                          long nk) {
  if (la__hot.limit == 0) return 0;
  long first;
  int rc = la__box_check(i0, j0, k0, ni, nj, nk, &first);
  return rc ? rc : la__spread_start(first);
}

LA_EXPORT int LA_stopBox(long i0, long j0, long k0, long ni, long nj, long nk) {
  if (la__hot.limit == 0) return 0;
  long first;
  int rc = la__box_check(i0, j0, k0, ni, nj, nk, &first);
  if (rc) return rc;
  /* a whole row (LA_stopRow of an older la.h): the row's value */
  long row = i0 == 0 && (uint64_t)ni == la__hot.nx && nj == 1 && nk == 1
                 ? (long)((uint64_t)j0 + la__hot.ny * (uint64_t)k0)
                 : -1;
  return la__spread_stop(0, first, (uint64_t)ni, (uint64_t)nj, (uint64_t)nk,
                         la__hot.nx, la__hot.nx * la__hot.ny, row, 0, "Box");
}

/* Row (j,k) inside the grid: its first cell in *first, its row number in
 * *row; else the error LA_startBox gives for it. */
static int la__row_check(long j, long k, long *first, long *row) {
  *row = -1;
  uint64_t nx = la__hot.nx, ny = la__hot.ny, nz = la__hot.nz;
  if (nx == 0 || j < 0 || k < 0 || (uint64_t)j >= ny || (uint64_t)k >= nz)
    return la__box_check(0, j, k, (long)nx, 1, 1, first);
  *row = (long)((uint64_t)j + ny * (uint64_t)k);
  *first = (long)(nx * (uint64_t)*row);
  return 0;
}

LA_EXPORT int la__row_start(long j, long k) {
  if (la__hot.limit == 0) return 0;
  long first, row;
  int rc = la__row_check(j, k, &first, &row);
  return rc ? rc : la__spread_start(first);
}

LA_EXPORT int la__row_stop(long j, long k) {
  if (la__hot.limit == 0) return 0;
  long first, row;
  int rc = la__row_check(j, k, &first, &row);
  if (rc) return rc;
  return la__spread_stop(0, first, la__hot.nx, 1, 1, 0, 0, row, 0, "Row");
}

/* ------------------------------------------ rows and boxes in a channel */

LA_EXPORT int LA_startBoxC(int ch, long i0, long j0, long k0, long ni, long nj,
                           long nk) {
  if (la__hot.limit == 0) return 0;
  int rc = la__channel_check(ch, "box");
  if (rc || ch == 0) return rc ? rc : LA_startBox(i0, j0, k0, ni, nj, nk);
  long first;
  rc = la__box_check(i0, j0, k0, ni, nj, nk, &first);
  return rc ? rc : la__spread_start(first);
}

LA_EXPORT int LA_stopBoxC(int ch, long i0, long j0, long k0, long ni, long nj,
                          long nk) {
  if (la__hot.limit == 0) return 0;
  int rc = la__channel_check(ch, "box");
  if (rc || ch == 0) return rc ? rc : LA_stopBox(i0, j0, k0, ni, nj, nk);
  long first;
  rc = la__box_check(i0, j0, k0, ni, nj, nk, &first);
  return rc ? rc
            : la__spread_stop(ch, first, (uint64_t)ni, (uint64_t)nj,
                              (uint64_t)nk, la__hot.nx, la__hot.nx * la__hot.ny,
                              -1, 0, "BoxC");
}

LA_EXPORT int LA_startRowC(int ch, long j, long k) {
  if (la__hot.limit == 0) return 0;
  int rc = la__channel_check(ch, "row");
  if (rc || ch == 0) return rc ? rc : LA_startRow(j, k);
  long first, row;
  rc = la__row_check(j, k, &first, &row);
  return rc ? rc : la__spread_start(first);
}

LA_EXPORT int LA_stopRowC(int ch, long j, long k) {
  if (la__hot.limit == 0) return 0;
  int rc = la__channel_check(ch, "row");
  if (rc || ch == 0) return rc ? rc : LA_stopRow(j, k);
  long first, row;
  rc = la__row_check(j, k, &first, &row);
  return rc ? rc
            : la__spread_stop(ch, first, la__hot.nx, 1, 1, 0, 0, -1, 0, "RowC");
}
