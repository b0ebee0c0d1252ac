/* SPDX-License-Identifier: BSD-3-Clause */
/* fortran_shims.c: the C symbols the Fortran module la_mod (fortran/la_mod.f90)
 * binds to with bind(C).
 *
 * Fortran cannot call what la.h declares static inline (the probes, cells,
 * LA_isProfiling), cannot pass NUL-terminated strings without copying, and
 * counts from 1. These shims do exactly those three things and nothing else:
 *   - la_f_{start,stop}_{probe,cell}_{i4,i8}: 1-based index (32- or 64-bit
 *     Fortran integer, by value) -> the inline 0-based probe. They return
 *     nothing: a probe only fails on an index out of range, which libla
 *     already counts (LA_STAT_RANGE_ERRORS) and describes (LA_lastError).
 *   - la_f_{start,stop}_range: 1-based first element -> LA_startRange;
 *     la_f_{start,stop}_{row,box}[_c]: row or first cell in the grid's
 *     numbering (below) -> LA_startRow[C], LA_startBox[C].
 *   - la_f_register*, la_f_set_{metric,agent,compaction,app_id}: take a
 *     Fortran string as (pointer, length), blank padded and not terminated,
 *     copy it without trailing blanks into a NUL-terminated buffer on the
 *     stack and call the C function.
 *   - la_f_is_profiling: LA_isProfiling as a C _Bool (Fortran logical(c_bool)).
 *   - channels: la_f_channel returns LA_channel's id + 1 (1-based, like the
 *     elements; errors stay negative); la_f_{start,stop}_probe_c_{i4,i8}
 *     take a 1-based channel (a 32-bit integer) and a 1-based element;
 *     la_f_{start,stop}_cell_c_{i4,i8} a channel and a cell.
 *   - the application's numbering (its own block below): a grid registered
 *     with the program's array bounds (la_f_register_grid_lb) shifts cell
 *     indices by its lower bounds instead of 1, and a per-thread tile
 *     offset (la_f_set_tile_offset) is added first, so tiled kernels probe
 *     with tile-local indices (cells, rows and boxes alike);
 *     la_f_{start,stop}_cell_off_{i4,i8} take the offset as arguments
 *     instead, no thread state. The tile offset's trap: a thread that
 *     never set one probes while another thread has a non-zero one (an
 *     OpenMP region opened inside a tiled kernel): the probe is refused,
 *     counted as a range error and described (it would land at the wrong
 *     index); 32-bit global ids are widened for
 *     LA_setGlobalIds; a 1-based grid origin becomes LA_setGridOrigin's.
 *   - custom probes: la_f_set_probe_func gives libla a trampoline that
 *     calls the program's bind(C) function with the 1-based element (C's
 *     e + 1), so Fortran probe functions count from 1 like the probes.
 * Everything else in la.h has a plain C signature (no varargs, no structs by
 * value) and la_mod binds to it directly. Deliberately no logic beyond the
 * index shift and the string copy: validation stays in the C API, so C and
 * Fortran callers see the same errors.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "la_internal.h"

/* Longest Fortran string accepted (after trimming); every C setting is
 * shorter, so the C function still reports its own limit. */
#define LA__FSTR_MAX 511

/* Copies the Fortran string s[0..len) into dst (LA__FSTR_MAX + 1 bytes):
 * stops at a NUL if the caller passed a C string, drops trailing blanks.
 * Returns 0, or LA_EINVAL when the trimmed string does not fit. */
static int la__fstr(char *dst, const char *s, size_t len, const char *what) {
  size_t n = 0;
  if (s) {
    const char *nul = memchr(s, '\0', len);
    n = nul ? (size_t)(nul - s) : len;
    while (n > 0 && s[n - 1] == ' ') n--;
  }
  if (n > LA__FSTR_MAX)
    return la__error(LA_EINVAL, "%s longer than %d characters", what,
                     LA__FSTR_MAX);
  if (n) memcpy(dst, s, n);
  dst[n] = '\0';
  return 0;
}

/* Cells: the lower bounds of the grid's array (1 unless registered with
 * la_f_register_grid_lb) and the calling thread's tile offset. Unsigned
 * arithmetic, as LA__ZB: a wrap is an index out of range. */
static long la__f_lb[3] = {1, 1, 1};
static __thread long la__f_tile[3] __attribute__((tls_model("initial-exec")));
#define LA__CI(v, d)                                                \
  ((long)((unsigned long)(long)(v) + (unsigned long)la__f_tile[d] - \
          (unsigned long)la__f_lb[d]))
/* Cell index v with the explicit offset o (the _off probes). */
#define LA__CO(v, o, d)                                         \
  ((long)((unsigned long)(long)(v) + (unsigned long)(long)(o) - \
          (unsigned long)la__f_lb[d]))

/* The trap: threads whose tile offset is not (0,0,0) now (atomic), and
 * whether the calling thread ever set one. */
static int la__f_tiles_nz;
static __thread int la__f_tile_set __attribute__((tls_model("initial-exec")));
/* The calling thread would probe without the offset another thread set:
 * one load and a branch while no thread has one. */
#define LA__F_TRAPPED()                                                   \
  LA__UNLIKELY(__atomic_load_n(&la__f_tiles_nz, __ATOMIC_RELAXED) != 0 && \
               !la__f_tile_set)
/* The cell probes' first check: an unprofiled cycle returns at once, as
 * before the trap; then the trap. */
#define LA__F_CELL_GUARD(i, j, k)                                \
  do {                                                           \
    if (LA__UNLIKELY(la__hot.limit == 0)) return;                \
    if (LA__F_TRAPPED()) {                                       \
      (void)la__f_trap("cell", (long)(i), (long)(j), (long)(k)); \
      return;                                                    \
    }                                                            \
  } while (0)

/* Refuses the probe of `what` at the program's indices (i,j,k) (see the
 * trap above): counted as a range error in a profiled cycle, described
 * once per cycle. Returns LA_ERANGE, or 0 when the cycle is not
 * profiled (the probe would be a no-op anyway). */
static __attribute__((noinline, cold)) int la__f_trap(const char *what, long i,
                                                      long j, long k) {
  if (la__hot.limit == 0) return 0;
  if (la__probe_refuse() == 0)
    la__error(LA_ERANGE,
              "%s (%ld,%ld,%ld) probed by a thread that never called "
              "la_set_tile_offset while another thread has a tile offset "
              "set: not stored (the offset is per thread; set it in every "
              "thread of the parallel region, or use la_start_cell_off)",
              what, i, j, k);
  return LA_ERANGE;
}

/* ------------------------------------------------------------ lifecycle */

LA_EXPORT int la_f_register(const char *name, size_t len, int rank, int nprocs,
                            long n_elements) {
  char buf[LA__FSTR_MAX + 1];
  int rc = la__fstr(buf, name, len, "application name");
  return rc ? rc : LA_register(buf, rank, nprocs, n_elements);
}

LA_EXPORT int la_f_register_grid(const char *name, size_t len, int rank,
                                 int nprocs, long nx, long ny, long nz) {
  char buf[LA__FSTR_MAX + 1];
  int rc = la__fstr(buf, name, len, "application name");
  for (int d = 0; d < 3; d++) la__f_lb[d] = 1;
  return rc ? rc : LA_registerGrid(buf, rank, nprocs, nx, ny, nz);
}

/* ------------------------------------------------------------- settings */

/* Passes the Fortran string s (len bytes; what names it in an error) to
 * the C setter set. */
static int la__fset(const char *s, size_t len, const char *what,
                    int (*set)(const char *)) {
  char buf[LA__FSTR_MAX + 1];
  int rc = la__fstr(buf, s, len, what);
  return rc ? rc : set(buf);
}

LA_EXPORT int la_f_set_metric(const char *s, size_t len) {
  return la__fset(s, len, "metric", LA_setMetric);
}

LA_EXPORT int la_f_set_agent(const char *s, size_t len) {
  return la__fset(s, len, "agent address", LA_setAgent);
}

LA_EXPORT int la_f_set_compaction(const char *s, size_t len) {
  return la__fset(s, len, "compaction spec", LA_setCompaction);
}

LA_EXPORT int la_f_set_app_id(const char *s, size_t len) {
  return la__fset(s, len, "application id", LA_setAppId);
}

/* ------------------------------------------------------------- hot path
 * e - 1 is computed in unsigned arithmetic so that e = 0 (or the most
 * negative value) becomes an out-of-range index, never undefined behaviour. */
#define LA__ZB(e) ((long)((unsigned long)(long)(e)-1ul))

LA_EXPORT void la_f_start_probe_i4(int32_t e) {
  (void)LA_startProbe(LA__ZB(e));
}
LA_EXPORT void la_f_stop_probe_i4(int32_t e) {
  (void)LA_stopProbe(LA__ZB(e));
}
LA_EXPORT void la_f_start_probe_i8(int64_t e) {
  (void)LA_startProbe(LA__ZB(e));
}
LA_EXPORT void la_f_stop_probe_i8(int64_t e) {
  (void)LA_stopProbe(LA__ZB(e));
}

LA_EXPORT void la_f_start_cell_i4(int32_t i, int32_t j, int32_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_startCell(LA__CI(i, 0), LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT void la_f_stop_cell_i4(int32_t i, int32_t j, int32_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_stopCell(LA__CI(i, 0), LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT void la_f_start_cell_i8(int64_t i, int64_t j, int64_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_startCell(LA__CI(i, 0), LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT void la_f_stop_cell_i8(int64_t i, int64_t j, int64_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_stopCell(LA__CI(i, 0), LA__CI(j, 1), LA__CI(k, 2));
}

/* Cell (i+di, j+dj, k+dk) in the grid's numbering: no thread state. */
LA_EXPORT void la_f_start_cell_off_i4(int32_t i, int32_t j, int32_t k,
                                      int32_t di, int32_t dj, int32_t dk) {
  (void)LA_startCell(LA__CO(i, di, 0), LA__CO(j, dj, 1), LA__CO(k, dk, 2));
}
LA_EXPORT void la_f_stop_cell_off_i4(int32_t i, int32_t j, int32_t k,
                                     int32_t di, int32_t dj, int32_t dk) {
  (void)LA_stopCell(LA__CO(i, di, 0), LA__CO(j, dj, 1), LA__CO(k, dk, 2));
}
LA_EXPORT void la_f_start_cell_off_i8(int64_t i, int64_t j, int64_t k,
                                      int64_t di, int64_t dj, int64_t dk) {
  (void)LA_startCell(LA__CO(i, di, 0), LA__CO(j, dj, 1), LA__CO(k, dk, 2));
}
LA_EXPORT void la_f_stop_cell_off_i8(int64_t i, int64_t j, int64_t k,
                                     int64_t di, int64_t dj, int64_t dk) {
  (void)LA_stopCell(LA__CO(i, di, 0), LA__CO(j, dj, 1), LA__CO(k, dk, 2));
}

LA_EXPORT int la_f_start_range(long first, long count) {
  return LA_startRange(LA__ZB(first), count);
}
LA_EXPORT int la_f_stop_range(long first, long count) {
  return LA_stopRange(LA__ZB(first), count);
}

LA_EXPORT bool la_f_is_profiling(void) {
  return LA_isProfiling() != 0;
}

/* ------------------------------------------------------------- channels */

LA_EXPORT int la_f_channel(const char *name, size_t len) {
  char buf[LA__FSTR_MAX + 1];
  int rc = la__fstr(buf, name, len, "channel name");
  if (rc == 0) rc = LA_channel(buf);
  return rc >= 0 ? rc + 1 : rc;
}

LA_EXPORT void la_f_start_probe_c_i4(int32_t ch, int32_t e) {
  (void)LA_startProbeC((int)LA__ZB(ch), LA__ZB(e));
}
LA_EXPORT void la_f_stop_probe_c_i4(int32_t ch, int32_t e) {
  (void)LA_stopProbeC((int)LA__ZB(ch), LA__ZB(e));
}
LA_EXPORT void la_f_start_probe_c_i8(int32_t ch, int64_t e) {
  (void)LA_startProbeC((int)LA__ZB(ch), LA__ZB(e));
}
LA_EXPORT void la_f_stop_probe_c_i8(int32_t ch, int64_t e) {
  (void)LA_stopProbeC((int)LA__ZB(ch), LA__ZB(e));
}

LA_EXPORT void la_f_start_cell_c_i4(int32_t ch, int32_t i, int32_t j,
                                    int32_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_startCellC((int)LA__ZB(ch), LA__CI(i, 0), LA__CI(j, 1),
                      LA__CI(k, 2));
}
LA_EXPORT void la_f_stop_cell_c_i4(int32_t ch, int32_t i, int32_t j,
                                   int32_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_stopCellC((int)LA__ZB(ch), LA__CI(i, 0), LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT void la_f_start_cell_c_i8(int32_t ch, int64_t i, int64_t j,
                                    int64_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_startCellC((int)LA__ZB(ch), LA__CI(i, 0), LA__CI(j, 1),
                      LA__CI(k, 2));
}
LA_EXPORT void la_f_stop_cell_c_i8(int32_t ch, int64_t i, int64_t j,
                                   int64_t k) {
  LA__F_CELL_GUARD(i, j, k);
  (void)LA_stopCellC((int)LA__ZB(ch), LA__CI(i, 0), LA__CI(j, 1), LA__CI(k, 2));
}

/* ------------------------------------------------------ rows and boxes
 * la_f_{start,stop}_row[_c]: row (j,k) -> LA_startRow[C]/LA_stopRow[C];
 * la_f_{start,stop}_box[_c]: first cell, extents unchanged. Indices in
 * the grid's numbering, like the cells': the array's lower bounds (1 by
 * default) and the thread's tile offset; the same trap. */

LA_EXPORT int la_f_start_row(long j, long k) {
  if (LA__F_TRAPPED()) return la__f_trap("row", 0, j, k);
  return LA_startRow(LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT int la_f_stop_row(long j, long k) {
  if (LA__F_TRAPPED()) return la__f_trap("row", 0, j, k);
  return LA_stopRow(LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT int la_f_start_box(long i0, long j0, long k0, long ni, long nj,
                             long nk) {
  if (LA__F_TRAPPED()) return la__f_trap("box", i0, j0, k0);
  return LA_startBox(LA__CI(i0, 0), LA__CI(j0, 1), LA__CI(k0, 2), ni, nj, nk);
}
LA_EXPORT int la_f_stop_box(long i0, long j0, long k0, long ni, long nj,
                            long nk) {
  if (LA__F_TRAPPED()) return la__f_trap("box", i0, j0, k0);
  return LA_stopBox(LA__CI(i0, 0), LA__CI(j0, 1), LA__CI(k0, 2), ni, nj, nk);
}
LA_EXPORT int la_f_start_row_c(int ch, long j, long k) {
  if (LA__F_TRAPPED()) return la__f_trap("row", 0, j, k);
  return LA_startRowC((int)LA__ZB(ch), LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT int la_f_stop_row_c(int ch, long j, long k) {
  if (LA__F_TRAPPED()) return la__f_trap("row", 0, j, k);
  return LA_stopRowC((int)LA__ZB(ch), LA__CI(j, 1), LA__CI(k, 2));
}
LA_EXPORT int la_f_start_box_c(int ch, long i0, long j0, long k0, long ni,
                               long nj, long nk) {
  if (LA__F_TRAPPED()) return la__f_trap("box", i0, j0, k0);
  return LA_startBoxC((int)LA__ZB(ch), LA__CI(i0, 0), LA__CI(j0, 1),
                      LA__CI(k0, 2), ni, nj, nk);
}
LA_EXPORT int la_f_stop_box_c(int ch, long i0, long j0, long k0, long ni,
                              long nj, long nk) {
  if (LA__F_TRAPPED()) return la__f_trap("box", i0, j0, k0);
  return LA_stopBoxC((int)LA__ZB(ch), LA__CI(i0, 0), LA__CI(j0, 1),
                     LA__CI(k0, 2), ni, nj, nk);
}

/* ------------------------------------------ the application's numbering */

/* LA_registerGrid of the cells lo(d)..hi(d) of the program's array: cell
 * (i,j,k) in the program's own indices is then C cell (i-lo(1), ...). */
LA_EXPORT int la_f_register_grid_lb(const char *name, size_t len, int rank,
                                    int nprocs, const int64_t *lo,
                                    const int64_t *hi) {
  char buf[LA__FSTR_MAX + 1];
  int rc = la__fstr(buf, name, len, "application name");
  if (rc) return rc;
  for (int d = 0; d < 3; d++)
    if (hi[d] < lo[d])
      return la__error(LA_EINVAL,
                       "grid bounds %lld:%lld empty in dimension "
                       "%d",
                       (long long)lo[d], (long long)hi[d], d + 1);
  rc = LA_registerGrid(buf, rank, nprocs, (long)(hi[0] - lo[0] + 1),
                       (long)(hi[1] - lo[1] + 1), (long)(hi[2] - lo[2] + 1));
  for (int d = 0; d < 3; d++) la__f_lb[d] = rc ? 1 : (long)lo[d];
  return rc;
}

/* The calling thread's tile offset, added to the (i,j,k) of its later
 * cell, row and box probes (0,0,0: none). Counts the threads with an
 * offset that is not (0,0,0), for the trap. */
LA_EXPORT void la_f_set_tile_offset(int64_t di, int64_t dj, int64_t dk) {
  int was = la__f_tile[0] || la__f_tile[1] || la__f_tile[2];
  int now = di || dj || dk;
  la__f_tile[0] = (long)di;
  la__f_tile[1] = (long)dj;
  la__f_tile[2] = (long)dk;
  la__f_tile_set = 1;
  if (now != was)
    __atomic_fetch_add(&la__f_tiles_nz, now ? 1 : -1, __ATOMIC_RELAXED);
}

/* LA_setGlobalIds of 32-bit ids, widened (n of them). */
LA_EXPORT int la_f_set_global_ids_i4(const int32_t *ids, long n) {
  if (!ids || n <= 0) return LA_setGlobalIds(NULL, n == 0 ? 0 : -1);
  int64_t *w = malloc((size_t)n * sizeof *w);
  if (!w) return la__error(LA_ENOMEM, "no memory for %ld global ids", n);
  for (long e = 0; e < n; e++) w[e] = ids[e];
  int rc = LA_setGlobalIds(w, n);
  free(w);
  return rc;
}

/* LA_setGridOrigin from the 1-based global index of the rank's first cell
 * and the global grid's dimensions. */
LA_EXPORT int la_f_set_grid_origin(const int64_t *first, const int64_t *glob) {
  return LA_setGridOrigin((long)(first[0] - 1), (long)(first[1] - 1),
                          (long)(first[2] - 1), (long)glob[0], (long)glob[1],
                          (long)glob[2]);
}

/* --------------------------------------------------------- custom probes
 * The Fortran function and its argument travel to libla as the argument
 * of one trampoline, in a slot of a small pool per kind (start, stop).
 * libla keeps using the functions in force until the next cycle boundary,
 * so a new setting never overwrites a slot libla may still call through:
 * the slots in force (la__probe_args) and the ones set but not yet in
 * force (la__settings_probe_funcs) are skipped. At most four are in use at
 * once; five per kind always leave one free. */
typedef double (*la__f_probe_fn)(long element, void *arg);
typedef struct la__f_probe {
  la__f_probe_fn fn;
  void *arg;
} la__f_probe_t;
#define LA__F_PROBE_SLOTS 5
static la__f_probe_t la__f_probes[2][LA__F_PROBE_SLOTS];

static double la__f_probe_tramp(long e, void *slot) {
  const la__f_probe_t *p = slot;
  return p->fn((long)((unsigned long)e + 1ul), p->arg);
}

/* LA_setProbeStopFunc (stop) or LA_setProbeStartFunc of the Fortran
 * function fn (NULL: none) with arg, through the trampoline. */
LA_EXPORT int la_f_set_probe_func(int stop, la__f_probe_fn fn, void *arg) {
  int (*set)(LA_ProbeFunc, void *) =
      stop ? LA_setProbeStopFunc : LA_setProbeStartFunc;
  if (!fn) return set(NULL, NULL);
  void *used[4];
  LA_ProbeFunc f0, f1;
  la__probe_args(&used[0], &used[1]);
  la__settings_probe_funcs(&f0, &used[2], &f1, &used[3]);
  la__f_probe_t *slot = NULL;
  for (int k = 0; k < LA__F_PROBE_SLOTS && !slot; k++) {
    la__f_probe_t *c = &la__f_probes[stop != 0][k];
    int busy = 0;
    for (int u = 0; u < 4; u++) busy |= used[u] == (void *)c;
    if (!busy) slot = c;
  }
  if (!slot) /* cannot happen: see above */
    return la__error(LA_ELIMIT, "no free slot for a Fortran probe function");
  slot->fn = fn;
  slot->arg = arg;
  return set(la__f_probe_tramp, slot);
}
