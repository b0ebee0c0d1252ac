/* SPDX-License-Identifier: BSD-3-Clause */
/* la.h: the LA application API (libla).
 *
 * An MPI mesh code wraps the computation of each element in
 * LA_startProbe(e) / LA_stopProbe(e), calls LA_dataXfer() once per profiling
 * cycle (usually a time step), LA_register() after MPI_Init and LA_finalize()
 * before MPI_Finalize. libla accumulates the chosen metric per element into a
 * SysV shared-memory buffer that the node's LocalAgent reads; the application
 * never waits on the network.
 *
 * Every call returns 0 or a negative LA_E* code; LA_strerror() explains a code
 * and LA_lastError() gives the detail of the most recent failure. libla never
 * exits the program and prints nothing unless LA_VERBOSE is set. When LA is
 * not registered (no agent, LA_DISABLE, an error) every call is a cheap no-op.
 *
 * The hot path (LA_startProbe/LA_stopProbe with the built-in wall-time metric)
 * is inline here: one predictable branch when the cycle is not profiled; a
 * timer read and a store otherwise; no lock, allocation, system call or
 * indirect call; with interference detection (docs/fidelity.md) two more
 * loads of the thread's perf-event page per pair. Probes of one element may
 * repeat within a cycle: they
 * accumulate. Different elements may be probed by different threads (OpenMP)
 * as long as each element is handled by one thread at a time; LA_dataXfer and
 * the settings calls must not run concurrently with probes.
 */
#ifndef LA_H
#define LA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LA_EXPORT
#else
#define LA_EXPORT __attribute__((visibility("default")))
#endif

/* LA_VERSION_*, LA_MAX_APP_ID (bytes of an application id),
 * LA_MAX_CHANNELS and LA_MAX_CHANNEL_NAME (below): installed next to this
 * header. */
#include "la_limits.h"

/* Error codes (LA_EINVAL, ...): one list, from which LA_strerror() is
 * generated; installed next to this header. */
#include "la_errcodes.h"

/* Buffer policy when every value buffer is still held by the agent. */
enum { LA_POLICY_WAIT = 0, LA_POLICY_SKIP = 1 };

/* Counters for LA_getStat(). */
enum {
  LA_STAT_CYCLES = 0,    /* LA_dataXfer calls since LA_register */
  LA_STAT_PROFILED = 1,  /* cycles whose values went to the agent */
  LA_STAT_SKIPPED = 2,   /* cycles to profile that did not: no free buffer,
                            or the agent gone (also while it is away) */
  LA_STAT_WAITS = 3,     /* times LA_dataXfer waited for a free buffer */
  LA_STAT_RANGE_ERRORS = 4, /* probes with an element index out of range */
  LA_STAT_WAIT_NS = 5,   /* total time spent waiting for buffers */
  LA_STAT_REGISTERED = 6, /* 1 while registered with an agent, else 0 */
  LA_STAT_TIMER_RES_NS = 7, /* the timer's resolution, ns (rounded up) */
  LA_STAT_FLAGGED = 8,   /* element-cycles flagged as interfered with */
  LA_STAT_INTERFERENCE_NS = 9, /* time of the flagged probe intervals, ns */
  LA_STAT_REREGISTERED = 10, /* registrations again after the agent was lost */
  LA_STAT_REFUSED = 11,  /* 1: the GlobalAgent refused the registration (its
                            app id belongs to another user), else 0 */
  LA_STAT_BEHIND = 12    /* profiled cycles the LocalAgent was behind on
                            (agent.max_backlog): stored coarse, or with
                            agent.behind = drop recorded missing, never
                            waited for; counted since this registration (0 with
                            a LocalAgent that does not count them) */
};

/* A user probe: returns a reading; the element accumulates stop - start. */
typedef double (*LA_ProbeFunc)(long element, void *arg);

/* ------------------------------------------------------------ lifecycle --
 * LA_register: call once after MPI_Init, on every rank. app_name names the
 * program (the application id adds the launcher's job id and, where one
 * process decides it, a random part no other user can predict (off with
 * LA_APP_ID_RANDOM=0); or it is LA_APP_ID / LA_setAppId, taken as given;
 * LA_appId returns it); under MPI every rank takes rank 0's id, broadcast over
 * MPI_COMM_WORLD, so it is a collective: every rank of MPI_COMM_WORLD calls
 * it, or the program gives the id with LA_setAppId on each rank it
 * registers (no broadcast then). LA_APP_ID wins on the rank where it is
 * set without skipping the broadcast (README, "Application ids under
 * MPI"). Without MPI initialised, nothing is broadcast. rank and nprocs
 * are this process's MPI rank and size (pass -1 to read them from the
 * launcher's environment); n_elements is the number of elements this rank
 * probes, indexed 0..n_elements-1. Creates the shared memory, registers with
 * the LocalAgent and starts the first cycle. On failure the application runs
 * unprofiled and every later call is a no-op. */
LA_EXPORT int LA_register(const char *app_name, int rank, int nprocs,
                          long n_elements);
/* Same, for a structured grid of nx*ny*nz cells probed by (i,j,k). */
LA_EXPORT int LA_registerGrid(const char *app_name, int rank, int nprocs,
                              long nx, long ny, long nz);
/* LA_registerGrid from a program whose probes mark cell writes (this
 * la.h's): libla then tells the agent which cycles hold row values only.
 * A program compiled against an older la.h calls LA_registerGrid itself,
 * and the agent looks at the cells. */
LA_EXPORT int la__registerGridMarked(const char *app_name, int rank,
                                     int nprocs, long nx, long ny, long nz);
#define LA_registerGrid(app_name, rank, nprocs, nx, ny, nz) \
  la__registerGridMarked(app_name, rank, nprocs, nx, ny, nz)
/* End of a profiling cycle: hands this cycle's values to the agent (when the
 * cycle was profiled) and starts the next one. Returns 0, or LA_EAGENTLOST
 * once when it finds the agent gone; from then on, cycles to profile count
 * in LA_STAT_SKIPPED and later calls register again (a new shared-memory
 * segment, the same id, rank and elements; the first try 1 s after the
 * loss, then 2, 4, 8, 16 s apart; each step of a try waits 250 ms at
 * most), counted in LA_STAT_REREGISTERED; profiling resumes with the cycle
 * after it. Returns LA_EREFUSED once when the GlobalAgent refused the
 * registration because its application id belongs to another user (on
 * any node; docs/security.md): LA_lastError (and LA_VERBOSE=1) says "app id
 * ID belongs to another user on the front end: choose another id
 * (LA_APP_ID)", LA_getStat(LA_STAT_REFUSED) is 1, and the program runs
 * unprofiled from then on (no registration again). */
LA_EXPORT int LA_dataXfer(void);
/* Same, with an explicit cycle tag for the cycle that ends (must be the same
 * on all ranks for the same cycle). */
LA_EXPORT int LA_dataXferTagged(uint64_t cycle_tag);
/* Ends the registration: sends the counters, detaches and removes the
 * shared memory and semaphores. A profiled cycle still open (probes after
 * the last LA_dataXfer) that holds a measurement (a value or row value not
 * 0, or an element flagged) is handed over first as the last cycle, tagged
 * as LA_dataXfer would tag it (the cycle count; end it with
 * LA_dataXferTagged for a tag of your own) and counted in LA_STAT_CYCLES
 * and LA_STAT_PROFILED (LA_STAT_SKIPPED when the agent is gone);
 * LA_VERBOSE=1 says so. An open cycle no probe
 * reached (the usual end: LA_dataXfer after the last step) holds nothing
 * and is not sent; nor is one with only out-of-range probes (counted in
 * LA_STAT_RANGE_ERRORS). Returns 0, or LA_EAGENTLOST when the last cycle
 * could not be handed over (the agent was gone), or LA_EREFUSED when the
 * GlobalAgent refused the registration (LA_dataXfer above; also when
 * LA_dataXfer returned it already); it cleans up either way.
 * LA_getStat keeps answering for the ended registration until the next
 * LA_register. */
LA_EXPORT int LA_finalize(void);

/* ------------------------------------------------------------- settings --
 * The matching environment variable, when set, overrides what the program
 * chose (the call still returns 0). Settings made before LA_register apply
 * to it; while a registration is in force (LA_register succeeded, until
 * LA_finalize, also while the agent is lost and libla registers again):
 *   - LA_setPeriod, LA_setPolicy, LA_enable, LA_disable take effect from
 *     the next cycle;
 *   - LA_setProbeStartFunc / LA_setProbeStopFunc take effect at the next
 *     cycle boundary (the cycle in progress is measured by the functions it
 *     started with) when the registration's metric is custom; with another
 *     metric they return LA_ESTATE and change nothing (with no function
 *     left, the probes measure nothing from the next cycle: zeros);
 *   - LA_setMetric, LA_setBuffers, LA_setAgent, LA_setCompaction and
 *     LA_setAppId return LA_ESTATE (LA_lastError names the call) and change
 *     nothing: LA_register fixed them. Call them before LA_register, or
 *     after LA_finalize for the next registration.
 * Outside a registration (before it, after LA_finalize, after a failed
 * LA_register) every setter records its value for the next LA_register. */
LA_EXPORT int LA_setPeriod(int period);          /* LA_PERIOD; any time */
LA_EXPORT int LA_setMetric(const char *metric);  /* LA_METRIC */
LA_EXPORT int LA_setPolicy(int policy);          /* LA_POLICY; any time */
LA_EXPORT int LA_setBuffers(int n_buffers);      /* LA_BUFFERS */
LA_EXPORT int LA_setAgent(const char *host_port);/* LA_AGENT */
LA_EXPORT int LA_setCompaction(const char *spec);/* LA_COMPACT */
LA_EXPORT int LA_setAppId(const char *app_id);   /* LA_APP_ID */
/* A probe of your own: fn(element, arg) returns a reading; one function
 * alone serves as both start and stop; setting one makes "custom" the
 * default metric. At run time with the metric custom (above). */
LA_EXPORT int LA_setProbeStartFunc(LA_ProbeFunc fn, void *arg);
LA_EXPORT int LA_setProbeStopFunc(LA_ProbeFunc fn, void *arg);
/* Profiling on/off at run time; takes effect at the next cycle. */
LA_EXPORT int LA_enable(void);
LA_EXPORT int LA_disable(void);

/* -------------------------------------------------------------- queries -- */
LA_EXPORT const char *LA_strerror(int code);
LA_EXPORT const char *LA_lastError(void);
LA_EXPORT long LA_getStat(int which);
LA_EXPORT const char *LA_appId(void);
/* Interference detection as decided at LA_register: "on", or "off (reason)"
 * (LA_INTERFERENCE=off, perf_event_open refused, a metric other than time).
 * "off (not registered)" before. Static storage; valid until the next
 * LA_register. */
LA_EXPORT const char *LA_interference(void);

/* --------------------------------------------------- element ranges -----
 * One measurement spread evenly over count elements first..first+count-1
 * (unrolled or blocked loops). Ranges may not nest within one thread. */
LA_EXPORT int LA_startRange(long first, long count);
LA_EXPORT int LA_stopRange(long first, long count);

/* ------------------------------------------ the application's numbering --
 * Exports and load balancers number elements by the application's own
 * global ids and a grid's global (i,j,k) when it gives them
 * (docs/mesh-views.md); without them, by the ranks' local indices
 * concatenated. Call before LA_register / LA_registerGrid; what is set
 * applies to every later registration until changed.
 *
 * LA_setGlobalIds: ids[e] is the global id (>= 0) of local element e, n of
 * them; n must equal the element count LA_register is given (else it fails
 * with LA_EINVAL and the program runs unprofiled). The array is copied: the
 * caller may free or reuse it at once. ids = NULL with n = 0 forgets them.
 * Replaces an id function. Uniqueness across ranks is the program's word:
 * LA does not check it.
 * LA_setGlobalIdFunc: libla calls fn(e, arg) for every element e at
 * LA_register, on the calling thread, for its global id (>= 0); NULL
 * forgets it. Replaces ids set by LA_setGlobalIds.
 * The ids travel to the LocalAgent at registration (in chunks, over the
 * registration's socket, not in shared memory): LA_register takes longer
 * by about the time to send 8 bytes per element.
 *
 * LA_setGridOrigin: for LA_registerGrid: this rank's cell (i,j,k) is cell
 * (ox+i, oy+j, oz+k) of a global grid of gnx*gny*gnz cells; the rank's
 * block must lie inside it (LA_EINVAL at registration otherwise). All six
 * zero: forget. A grid rank with an origin and no ids is numbered by its
 * global cell index gi + gnx*(gj + gny*gk). */
typedef int64_t (*LA_GlobalIdFunc)(long element, void *arg);
LA_EXPORT int LA_setGlobalIds(const int64_t *ids, long n);
LA_EXPORT int LA_setGlobalIdFunc(LA_GlobalIdFunc fn, void *arg);
LA_EXPORT int LA_setGridOrigin(long ox, long oy, long oz, long gnx, long gny,
                               long gnz);

/* ------------------------------------------------------ in-job weights --
 * Balancing inside the job (docs/balancing.md): after each profiled cycle
 * the LocalAgent writes this rank's per-element weights back into the
 * rank's shared memory: the robust weights (interference removed), or the
 * measured values where it keeps none (a metric other than time,
 * agent.robust off), of the per-element sum over the channels, exactly
 * the values libla_client serves for the same rank and cycle. A
 * partitioner called by every rank (Zoltan, ParMETIS) can use them with no
 * rank ever holding all of them.
 *
 * LA_weights: copies the newest weights of this rank's n_elements elements
 * (as given to LA_register) into w[0..n_elements), which the caller owns;
 * n is the room in w. *cycle_tag gets the cycle they are from and
 * *generation their number (1 for the first cycle the agent finished,
 * then one more per profiled cycle it finished; compare it with the last
 * one seen to know whether they are new); either pointer may be NULL.
 * Never blocks, never touches the network: one copy of n doubles from
 * memory. Returns 0, or (w then unchanged, except after LA_EPROTO or
 * LA_ETIMEDOUT) LA_ENOTFOUND (no cycle finished yet), LA_ESTATE (not
 * registered: LA_register not called or failed, or the agent was lost),
 * LA_EVERSION (the LocalAgent predates the weights area: profiling works,
 * weights do not), LA_ERANGE (n smaller than the element count),
 * LA_EINVAL (w NULL), LA_EPROTO (the area holds a field out of bounds:
 * refused, nothing trusted), LA_ETIMEDOUT (rewritten during every copy).
 * LA_lastError says which. Not concurrently with LA_dataXfer or
 * LA_finalize; any thread otherwise.
 *
 * LA_weightsWait: the same, but waits up to timeout_ms (0..3600000) for a
 * generation newer than `after` (0: any), polling the memory every
 * millisecond; LA_ETIMEDOUT when none came in time (w unchanged). For a
 * program that wants the weights of the cycle it just handed over:
 * LA_dataXfer, then LA_weightsWait with the last generation seen. */
LA_EXPORT int LA_weights(double *w, long n, uint64_t *cycle_tag,
                         uint64_t *generation);
LA_EXPORT int LA_weightsWait(double *w, long n, uint64_t after,
                             int timeout_ms, uint64_t *cycle_tag,
                             uint64_t *generation);

/* ================================================================ hot path
 * Internal state read by the inline probes; owned by libla/probe.c. Do not
 * touch it from application code. */
typedef struct la__hot_s {
  double *values;    /* buffer of the current cycle */
  uint64_t limit;    /* element count when the cycle is profiled, else 0 */
  uint64_t base;     /* timer reading at the start of the cycle */
  int fast;          /* 1: built-in wall-time metric, inline */
  int tsc;           /* 1: read the TSC, 0: CLOCK_MONOTONIC in ns */
  uint64_t nx, ny, nz; /* grid dimensions (structured meshes) */
  int detect;        /* 1: interference detection on (fast metric only) */
  uint32_t n_channels; /* channels of the buffer (LA_channel), >= 1 */
  double *rows;      /* row values of the cycle's buffer (shared-memory
                        layout 5, a grid, the built-in timer), else NULL */
} la__hot_t;

/* Per probing thread (owned by libla/interference.c): the sequence word of
 * the thread's context-switch perf event page (NULL until the thread's first
 * probe with detection on), its value and the timer reading at the last
 * start. Initial-exec TLS: one %fs-relative load, no call. */
typedef struct la__tls_s {
  const volatile uint32_t *seq;
  uint32_t seq0;
  uint64_t t0;
  uint64_t row_t0; /* the inline row probe's start reading (LA_startRow) */
  int row_open;    /* 1 between an inline LA_startRow and its stop */
} la__tls_t;

LA_EXPORT extern la__hot_t la__hot;
/* Non-zero once a probe wrote a cell value in the current profiled cycle
 * (owned by libla/probe.c; reset when a cycle starts): with it libla tells
 * the LocalAgent that a grid's cycle holds row values only, so that the
 * agent need not read the cells (la_shm_layout.h, bufmeta.cells). */
LA_EXPORT extern int la__cell_mark;
LA_EXPORT extern __thread la__tls_t la__tls
    __attribute__((tls_model("initial-exec")));
/* Opens the calling thread's event; returns its sequence word (a constant
 * word when that fails: the thread then never flags). */
LA_EXPORT const volatile uint32_t *la__interf_thread(void);
/* Element e's interval of `ticks` saw a context switch: flag it. */
LA_EXPORT void la__interf_hit(long e, uint64_t ticks);
LA_EXPORT int la__probe_start_slow(long e);
LA_EXPORT int la__probe_stop_slow(long e);
/* The same into value slot `at` (channel probes: ch * limit + e). */
LA_EXPORT int la__probe_start_slow_at(long e, uint64_t at);
LA_EXPORT int la__probe_stop_slow_at(long e, uint64_t at);
LA_EXPORT int la__probe_range_error(long e);
/* A channel probe with channel ch or element e out of range. */
LA_EXPORT int la__probe_channel_error(int ch, long e);
/* CLOCK_MONOTONIC in ns: the wall-time clock where there is no usable TSC. */
LA_EXPORT uint64_t la__clock_ns(void);

#if defined(__GNUC__)
#define LA__LIKELY(x) __builtin_expect(!!(x), 1)
#define LA__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define LA__LIKELY(x) (x)
#define LA__UNLIKELY(x) (x)
#endif

#if defined(__x86_64__) || defined(__i386__)
/* The time-stamp counter: the probes' clock where it is invariant (libla's
 * timer.c reads it the same way to calibrate). */
static inline uint64_t la__rdtsc(void) {
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}
#endif

static inline uint64_t la__now(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (LA__LIKELY(la__hot.tsc)) return la__rdtsc();
#endif
  return la__clock_ns();
}

/* A cell value is written in this cycle: one load and a branch once the
 * mark is set (no store, so threads probing at once share its line). */
static inline void la__mark_cell(void) {
  if (LA__UNLIKELY(!__atomic_load_n(&la__cell_mark, __ATOMIC_RELAXED)))
    __atomic_store_n(&la__cell_mark, 1, __ATOMIC_RELAXED);
}

/* The probes' common body, once the cycle is profiled and e (< limit) and
 * the value slot `at` (e, or ch * limit + e for a channel) are checked:
 * inlined, so LA_startProbe costs what it cost before channels. */
static inline int la__start_at(long e, uint64_t at) {
  la__mark_cell(); /* before the reading: outside the interval */
  if (LA__LIKELY(la__hot.fast)) {
    if (la__hot.detect) {
      const volatile uint32_t *s = la__tls.seq;
      if (LA__UNLIKELY(s == 0)) s = la__interf_thread();
      la__tls.seq0 = *s; /* before the reading: the interval is covered */
      uint64_t t = la__now();
      la__tls.t0 = t;
      la__hot.values[at] -= (double)(int64_t)(t - la__hot.base);
      return 0;
    }
    la__hot.values[at] -= (double)(int64_t)(la__now() - la__hot.base);
    return 0;
  }
  return la__probe_start_slow_at(e, at);
}

static inline int la__stop_at(long e, uint64_t at) {
  if (LA__LIKELY(la__hot.fast)) {
    uint64_t t = la__now();
    la__hot.values[at] += (double)(int64_t)(t - la__hot.base);
    la__mark_cell(); /* a stop without its start writes a value too */
    if (la__hot.detect) {
      const volatile uint32_t *s = la__tls.seq; /* after the reading */
      if (LA__UNLIKELY(s != 0 && *s != la__tls.seq0))
        la__interf_hit(e, t - la__tls.t0);
    }
    return 0;
  }
  return la__probe_stop_slow_at(e, at);
}

/* Start measuring element e (0-based) in this cycle. A cycle that is not
 * profiled costs one load and one predictable branch. */
static inline int LA_startProbe(long e) {
  uint64_t lim = la__hot.limit;
  if (LA__UNLIKELY(lim == 0)) return 0;
  if (LA__UNLIKELY((uint64_t)e >= lim)) return la__probe_range_error(e);
  return la__start_at(e, (uint64_t)e);
}

/* Stop measuring element e; the element accumulates the difference. */
static inline int LA_stopProbe(long e) {
  uint64_t lim = la__hot.limit;
  if (LA__UNLIKELY(lim == 0)) return 0;
  if (LA__UNLIKELY((uint64_t)e >= lim)) return la__probe_range_error(e);
  return la__stop_at(e, (uint64_t)e);
}

/* Structured grids (LA_registerGrid): cell (i,j,k), 0-based, i fastest. */
static inline long la__cell(long i, long j, long k) {
  if ((uint64_t)i >= la__hot.nx || (uint64_t)j >= la__hot.ny ||
      (uint64_t)k >= la__hot.nz)
    return -1;
  return (long)((uint64_t)i + la__hot.nx * ((uint64_t)j + la__hot.ny * (uint64_t)k));
}
static inline int LA_startCell(long i, long j, long k) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  return LA_startProbe(la__cell(i, j, k));
}
static inline int LA_stopCell(long i, long j, long k) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  return LA_stopProbe(la__cell(i, j, k));
}

/* Tiled kernels: cell (i+di, j+dj, k+dk), the cell of tile-local index
 * (i,j,k) in a tile whose first cell is (di,dj,dk). The offset travels
 * with each call: no per-thread state, so every thread of a parallel
 * region opened inside the kernel probes the same cell for the same
 * arguments. The sum is taken in unsigned arithmetic: a wrap is an index
 * out of range, as for LA_startCell. */
static inline long la__off(long a, long d) {
  return (long)((unsigned long)a + (unsigned long)d);
}
static inline int LA_startCellOff(long i, long j, long k, long di, long dj,
                                  long dk) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  return LA_startProbe(
      la__cell(la__off(i, di), la__off(j, dj), la__off(k, dk)));
}
static inline int LA_stopCellOff(long i, long j, long k, long di, long dj,
                                 long dk) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  return LA_stopProbe(
      la__cell(la__off(i, di), la__off(j, dj), la__off(k, dk)));
}

/* The names used by the WaveToy instrumentation of the design study. */
static inline int LA_start_counter(long cell_id) { return LA_startProbe(cell_id); }
static inline int LA_stop_counter(long cell_id) { return LA_stopProbe(cell_id); }
static inline int LA_data_xfer(void) { return LA_dataXfer(); }

/* Whether the current cycle is profiled (lets a code skip its own work). */
static inline int LA_isProfiling(void) { return la__hot.limit != 0; }

/* ============================================================== channels
 * Per-kernel channels: an application that wants to tell which of its
 * kernels (stress, equation of state, ...) makes an element expensive
 * declares named channels before LA_register and probes each kernel into
 * its own channel. Every cycle the LocalAgent ships the per-element sum
 * over channels as the element's value (what balancers and every other
 * consumer see, as without channels) and, with two or more channels, each
 * channel's own series and exact totals (docs/protocol.md, "Channels").
 *
 * Channel 0 is the first declared channel: LA_startProbe, LA_stopProbe,
 * the cell and range probes and the WaveToy names all probe channel 0. An
 * application that declares none has one unnamed channel and runs exactly
 * as before channels existed (no extra bytes in memory, on the wire or in
 * the store). A channel probe costs one index computation more than the
 * plain probe (docs/performance.md). */
/* LA_MAX_CHANNELS: channels per application process; LA_MAX_CHANNEL_NAME:
 * bytes of a channel name (la_limits.h). */

/* Declares channel `name` (1..LA_MAX_CHANNEL_NAME printable characters,
 * no spaces) and returns its id, 0 for the first, 1 for the next...
 * Call before LA_register (LA_finalize forgets the channels). The id is
 * valid whether or not profiling works later. Errors: LA_EINVAL (bad or
 * duplicate name), LA_ELIMIT (more than LA_MAX_CHANNELS), LA_ESTATE
 * (after LA_register). */
LA_EXPORT int LA_channel(const char *name);

/* The body of LA_startProbeC and LA_stopProbeC: stop is a constant where
 * it is inlined, so each compiles to the straight code of its own probe. */
static inline int la__probe_c(int stop, int ch, long e) {
  uint64_t lim = la__hot.limit;
  if (LA__UNLIKELY(lim == 0)) return 0;
  if (LA__UNLIKELY((uint64_t)e >= lim ||
                   (uint32_t)ch >= la__hot.n_channels))
    return la__probe_channel_error(ch, e);
  uint64_t at = (uint64_t)(uint32_t)ch * lim + (uint64_t)e;
  return stop ? la__stop_at(e, at) : la__start_at(e, at);
}
/* Start / stop measuring element e in channel ch (an id LA_channel
 * returned). An id not declared counts as an out-of-range probe. */
static inline int LA_startProbeC(int ch, long e) {
  return la__probe_c(0, ch, e);
}
static inline int LA_stopProbeC(int ch, long e) {
  return la__probe_c(1, ch, e);
}
static inline int LA_startCellC(int ch, long i, long j, long k) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  return LA_startProbeC(ch, la__cell(i, j, k));
}
static inline int LA_stopCellC(int ch, long i, long j, long k) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  return LA_stopProbeC(ch, la__cell(i, j, k));
}
/* Element ranges (LA_startRange) in channel ch. */
LA_EXPORT int LA_startRangeC(int ch, long first, long count);
LA_EXPORT int LA_stopRangeC(int ch, long first, long count);
/* The WaveToy names, in channel ch. */
static inline int LA_start_counter_c(int ch, long cell_id) {
  return LA_startProbeC(ch, cell_id);
}
static inline int LA_stop_counter_c(int ch, long cell_id) {
  return LA_stopProbeC(ch, cell_id);
}

/* ===================================== unprofiled cycles at full speed --
 * A probe in a loop costs one load and one branch in a cycle that is not
 * profiled, but its call keeps the compiler from vectorising the loop: a
 * light kernel (a stencil at 1-2 ns per cell) then runs several times slower
 * in every cycle, profiled or not. LA_PROFILED(stmt) compiles stmt twice and
 * chooses once per cycle: the profiled copy, where LA_PROBING is the
 * constant 1, when LA_isProfiling(); the plain copy, where LA_PROBING is 0,
 * otherwise. Write each probe as `if (LA_PROBING) LA_startCell(i, j, k);`:
 * the compiler removes it from the plain copy, which is then the loop
 * without LA and vectorises as such. Write the kernel once, usually as a
 * static inline function taking the probing switch as a parameter (the
 * compiler inlines it or specializes it for the constant):
 *
 *   static inline void sweep(grid_t *g, const int probe) {
 *     for (long k = 0; k < g->nz; k++)
 *       for (long j = 0; j < g->ny; j++)
 *         for (long i = 0; i < g->nx; i++) {
 *           if (probe) LA_startCell(i, j, k);
 *           update(g, i, j, k);
 *           if (probe) LA_stopCell(i, j, k);
 *         }
 *   }
 *   ...
 *   LA_PROFILED(sweep(g, LA_PROBING));   once per time step
 *   LA_dataXfer();
 *
 * LA_isProfiling() is what decides: 0 before LA_register, after a failed
 * registration, with LA_DISABLE or after LA_disable() from the next cycle,
 * in cycles the period leaves out (also after LA_setPeriod at run time), in
 * a cycle skipped for lack of a buffer, after the agent was lost and after
 * LA_finalize; 1 from LA_register (or the LA_dataXfer starting the cycle)
 * to the LA_dataXfer ending a profiled cycle. It does not change within a
 * cycle, so all threads of a parallel loop take the same copy. stmt must
 * not jump out of the macro (break, continue or goto to an outer label). */
#define LA_PROFILED(...)       \
  do {                         \
    if (LA_isProfiling()) {    \
      enum { LA_PROBING = 1 }; \
      __VA_ARGS__;             \
    } else {                   \
      enum { LA_PROBING = 0 }; \
      __VA_ARGS__;             \
    }                          \
  } while (0)

/* A kernel function that is always inlined, so that a constant probing
 * switch (LA_PROBING) reaches its loops where the compiler would neither
 * inline nor specialize it. It also changes what the compiler inlines
 * around the kernel, for better or worse: `make bench-idiom` counts the
 * instructions either way. */
#if defined(__GNUC__)
#define LA_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define LA_ALWAYS_INLINE static inline
#endif

/* Coarser probes, for cells too light to time one by one: one measurement
 * per box of cells of a grid (LA_registerGrid), spread evenly over its
 * ni*nj*nk cells, as LA_startRange does over contiguous elements. The box
 * is (i0..i0+ni-1, j0..j0+nj-1, k0..k0+nk-1), 0-based, inside the grid
 * (else LA_ERANGE, counted as a range error); LA_ESTATE when the
 * registration was not a grid, or for a stop without a start. Boxes share
 * ranges' per-thread start: they do not nest within a thread, neither with
 * each other nor with ranges. One call each, not inline; no interference
 * flags (docs/fidelity.md). Each cell of the box gets the box's time
 * divided by its cell count: the resolution is the box, the cost two timer
 * readings per box and, with a LocalAgent that reads shared-memory layout
 * 6, one addition to the box's record in the buffer's piece table (the
 * agent spreads it); without one, or with the table full, one addition
 * per cell at the stop. Ranges (LA_startRange) likewise. */
LA_EXPORT int LA_startBox(long i0, long j0, long k0, long ni, long nj, long nk);
LA_EXPORT int LA_stopBox(long i0, long j0, long k0, long ni, long nj, long nk);
/* The same in channel ch (an id LA_channel returned; LA_startBox probes
 * channel 0): the box's time spread over the box's cells of channel ch.
 * A channel not declared is LA_ERANGE, counted as a range error, nothing
 * written. */
LA_EXPORT int LA_startBoxC(int ch, long i0, long j0, long k0, long ni, long nj,
                           long nk);
LA_EXPORT int LA_stopBoxC(int ch, long i0, long j0, long k0, long ni, long nj,
                          long nk);

/* Row (j,k) of a grid: its nx cells (i = 0..nx-1), one box. Around the
 * innermost loop, which stays free of calls and vectorises. The row's time
 * is one value in shared memory, which the LocalAgent spreads over the
 * row's cells: with the wall-time metric a row probe pair is inline, two
 * timer readings and one addition, whatever nx. Other metrics, a row
 * outside the grid (the error) and a LocalAgent older than row values
 * (libla then spreads the time itself) take the call. */
LA_EXPORT int la__row_start(long j, long k);
LA_EXPORT int la__row_stop(long j, long k);
static inline int LA_startRow(long j, long k) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  if (LA__LIKELY(la__hot.rows != 0 && (uint64_t)j < la__hot.ny &&
                 (uint64_t)k < la__hot.nz)) {
    la__tls.row_t0 = la__now();
    la__tls.row_open = 1;
    return 0;
  }
  return la__row_start(j, k);
}
static inline int LA_stopRow(long j, long k) {
  if (LA__UNLIKELY(la__hot.limit == 0)) return 0;
  double *rows = la__hot.rows; /* read once: it stays mapped memory */
  if (LA__LIKELY(rows != 0 && la__tls.row_open && (uint64_t)j < la__hot.ny &&
                 (uint64_t)k < la__hot.nz)) {
    uint64_t t = la__now();
    la__tls.row_open = 0;
    rows[(uint64_t)j + la__hot.ny * (uint64_t)k] +=
        (double)(int64_t)(t - la__tls.row_t0);
    return 0;
  }
  return la__row_stop(j, k);
}
/* Row (j,k) in channel ch: one call each (not inline). Channel 0 is
 * LA_startRow/LA_stopRow (one row value); another channel spreads the
 * row's time over its nx cells of that channel at the stop, as a box
 * does. A channel not declared is LA_ERANGE, counted, nothing written. */
LA_EXPORT int LA_startRowC(int ch, long j, long k);
LA_EXPORT int LA_stopRowC(int ch, long j, long k);
/* =================================== end of unprofiled cycles at full speed */

#ifdef __cplusplus
}
#endif
#endif /* LA_H */
