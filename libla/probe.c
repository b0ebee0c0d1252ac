/* probe.c: the state the inline probes of la.h read, and the probe paths
 * that are not inline: user and PAPI probes (through a function pointer),
 * out-of-range indices, and element ranges.
 *
 * An element's value accumulates stop - start: the start reading is
 * subtracted from the element and the stop reading added, so one element
 * needs no separate start slot, probes of different elements may nest, and
 * threads that own disjoint elements need no lock. For the built-in timer
 * readings are taken relative to the cycle's start (la__hot.base) so values
 * stay small and exact in a double. Ranges keep their start reading per
 * thread, so ranges do not nest within a thread. Interference detection
 * (interference.c) covers the inline wall-time probes only: not ranges, not
 * user or PAPI probes. Channels (LA_channel): channel ch of element e is
 * value slot ch * limit + e of the buffer; the flags stay per element.
 */
#include "la_interference.h"

LA_EXPORT la__hot_t la__hot; /* limit 0: every probe is a no-op */

static LA_ProbeFunc la__start_fn, la__stop_fn;
static void *la__start_arg, *la__stop_arg;
static uint64_t la__range_errors; /* this cycle, atomic */
static __thread double la__range_t0;
static __thread int la__range_open;

void la__probe_setup(int fast, int tsc, LA_ProbeFunc start, void *start_arg,
                     LA_ProbeFunc stop, void *stop_arg) {
  la__hot.fast = fast;
  la__hot.tsc = tsc;
  la__start_fn = start;
  la__start_arg = start_arg;
  la__stop_fn = stop;
  la__stop_arg = stop_arg;
}

void la__probe_grid(uint64_t nx, uint64_t ny, uint64_t nz) {
  la__hot.nx = nx;
  la__hot.ny = ny;
  la__hot.nz = nz;
}

void la__probe_begin(la_shm_header_t *hdr, uint32_t i, uint64_t n,
                     uint32_t n_channels) {
  __atomic_store_n(&la__range_errors, 0, __ATOMIC_RELAXED);
  /* libla's own geometry (n, n_channels), never the header's fields */
  la__interf_begin(la_shm_buffer_flags_ch(hdr, n, n_channels, i), &hdr->buf[i],
                   n);
  la__hot.values = la_shm_buffer_ch(hdr, n, n_channels, i);
  la__hot.n_channels = n_channels;
  la__hot.base = la__now();
  la__hot.limit = n;
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
    la__error(LA_ERANGE, "element %ld outside 0..%llu (first in this cycle)",
              e, (unsigned long long)la__hot.limit - 1);
  return LA_ERANGE;
}

LA_EXPORT int la__probe_channel_error(int ch, long e) {
  if ((uint64_t)e >= la__hot.limit) return la__probe_range_error(e);
  if (__atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED) == 0)
    la__error(LA_ERANGE, "channel %d not declared (%u channels; first in "
              "this cycle)", ch, la__hot.n_channels);
  return LA_ERANGE;
}

static int la__range_check(int ch, long first, long count) {
  if ((uint32_t)ch >= la__hot.n_channels) {
    __atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED);
    return la__error(LA_ERANGE, "range in channel %d, which is not declared",
                     ch);
  }
  if (first < 0 || count < 1 || (uint64_t)first >= la__hot.limit ||
      (uint64_t)count > la__hot.limit - (uint64_t)first) {
    __atomic_fetch_add(&la__range_errors, 1, __ATOMIC_RELAXED);
    return la__error(LA_ERANGE, "range %ld+%ld outside 0..%llu", first, count,
                     (unsigned long long)la__hot.limit - 1);
  }
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
  if (rc) return rc;
  LA_ProbeFunc fn = la__start_fn;
  if (!la__hot.fast && !fn) return 0; /* ended meanwhile */
  la__range_t0 = la__hot.fast ? (double)(int64_t)(la__now() - la__hot.base)
                              : fn(first, la__start_arg);
  la__range_open = 1;
  return 0;
}

LA_EXPORT int LA_stopRangeC(int ch, long first, long count) {
  if (la__hot.limit == 0) return 0;
  int rc = la__range_check(ch, first, count);
  if (rc) return rc;
  if (!la__range_open)
    return la__error(LA_ESTATE, "LA_stopRange without LA_startRange");
  la__range_open = 0;
  LA_ProbeFunc fn = la__stop_fn;
  if (!la__hot.fast && !fn) return 0; /* ended meanwhile */
  double t1 = la__hot.fast ? (double)(int64_t)(la__now() - la__hot.base)
                           : fn(first, la__stop_arg);
  double share = (t1 - la__range_t0) / (double)count;
  double *v = la__hot.values + (uint64_t)ch * la__hot.limit + (uint64_t)first;
  for (long i = 0; i < count; i++) v[i] += share;
  return 0;
}
