/* SPDX-License-Identifier: BSD-3-Clause */
/* la_internal.h: declarations shared by libla's source files, not installed.
 *
 * libla is split by concern:
 *   errors.c     LA_strerror, the last-error message, verbose reporting
 *   settings.c   defaults, LA_set* calls and LA_* environment overrides
 *   timer.c      TSC detection and tick-to-ns calibration
 *   appid.c      application id, rank and size from the launcher
 *   mpi_appid.c  one application id per MPI job: rank 0's, broadcast
 *   ipc.c        SysV segment and semaphore set: create, hand-off, remove
 *   agent_link.c the TCP conversation with the LocalAgent
 *   papi_probe.c PAPI metrics (only initialised when one is chosen)
 *   probe.c      the hot-path state, slow probe paths, ranges
 *   interference.c context switches seen at the probe, timer resolution
 *   lifecycle.c  LA_register, LA_dataXfer, LA_finalize: the state machine
 *   dump.c       LA_DUMP_RAW: raw values of every profiled cycle to files
 *   channels.c   LA_channel: the declared channel names
 *   numbering.c  the application's global ids and grid origin
 *   weights.c    LA_weights: the agent's weights read from the segment
 */
#ifndef LA_INTERNAL_H
#define LA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "la.h"
#include "la_shm_layout.h"
#include "la_shm_pieces.h"

#define LA__HIDDEN __attribute__((visibility("hidden")))
#define LA__DEFAULT_AGENT "127.0.0.1:7461"
#define LA__METRIC_LEN 128

/* ---------------------------------------------------------------- errors */
/* Records code and a formatted detail as the last error, prints it on stderr
 * when verbose (each distinct message once), and returns code. */
LA__HIDDEN int la__error(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* As la__error, printed on stderr also without verbose: for what the
 * user asked for and does not get (each distinct message once). */
LA__HIDDEN int la__warn(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
LA__HIDDEN void la__set_verbose(int verbose, int rank);
LA__HIDDEN void la__info(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* -------------------------------------------------------------- settings */
typedef struct la__settings {
  int period;                  /* profile every Nth cycle, >= 1 */
  char metric[LA__METRIC_LEN]; /* "time", "cycles", "instructions",
                                  "papi:EVENT", "custom" */
  int policy;                  /* LA_POLICY_WAIT or LA_POLICY_SKIP */
  int n_buffers;               /* 2..16 */
  char agent[256];             /* host:port of the LocalAgent */
  char compact[256];           /* compaction spec, "" = agent's default */
  char app_id[LA_MAX_APP_ID + 1];
  int app_id_random; /* LA_APP_ID_RANDOM: a derived id's random part */
  int verbose;
  int disabled;
  int wait_timeout_ms;    /* wait policy: longest wait for a buffer */
  int connect_timeout_ms; /* connect + registration reply */
  int timer;              /* 0 auto, 1 tsc, 2 clock_gettime */
  char dump_raw[256];     /* LA_DUMP_RAW directory, "" = off */
  unsigned from_env;      /* LA__FROM_*: which values came from the
                             environment (else the program or the default) */
} la__settings_t;

/* The settings whose origin an error names (la__settings_label). */
enum { LA__FROM_METRIC = 1, LA__FROM_AGENT = 2, LA__FROM_COMPACT = 4 };

/* The settings in force: the program's choices overridden by the
 * environment. Returns 0 or LA_ECONFIG naming the bad variable. */
LA__HIDDEN int la__settings_resolve(la__settings_t *out);
/* How a user names where setting `which` (LA__FROM_*) of s came from, for
 * an error about its value: "LA_METRIC=tiem" (environment),
 * "LA_setMetric(\"tiem\")" (the program) or "the default metric 'time'".
 * Returns buf. */
LA__HIDDEN const char *la__settings_label(const la__settings_t *s,
                                          unsigned which, char *buf,
                                          size_t len);
/* The period as set now (LA_setPeriod may change it at run time). */
LA__HIDDEN int la__settings_period(void);
/* The buffer policy as set now (LA_setPolicy may change it at run time). */
LA__HIDDEN int la__settings_policy(void);
/* lifecycle.c tells settings.c the metric of the registration in force
 * (NULL: none), so that setters a registration fixes refuse (LA_ESTATE)
 * without settings.c calling into lifecycle.c. */
LA__HIDDEN void la__settings_registered(const char *metric);
/* A number that changes whenever a probe function is set. */
LA__HIDDEN unsigned la__settings_probe_gen(void);
LA__HIDDEN int la__settings_has_custom_probe(void);
LA__HIDDEN void la__settings_probe_funcs(LA_ProbeFunc *start, void **start_arg,
                                         LA_ProbeFunc *stop, void **stop_arg);
LA__HIDDEN int la__settings_enabled(void); /* LA_enable/LA_disable */
/* Whether the program gave an application id (LA_setAppId). */
LA__HIDDEN int la__settings_app_id_set(void);

/* ----------------------------------------------------------------- timer */
typedef struct la__timer {
  int tsc;         /* reads the TSC */
  uint64_t ticks0; /* calibration start, ticks */
  uint64_t ns0;    /* calibration start, CLOCK_MONOTONIC_RAW ns */
  double ns_per_tick;
} la__timer_t;

/* Chooses the timer (mode: 0 auto, 1 tsc, 2 clock) and calibrates it. */
LA__HIDDEN int la__timer_init(la__timer_t *t, int mode);
/* Refines ns_per_tick over the time since init; returns it. */
LA__HIDDEN double la__timer_refine(la__timer_t *t);
/* The timer's resolution in ns: the median over a few hundred tries of the
 * smallest non-zero difference between successive readings (TSC ticks times
 * ns_per_tick, or clock ns). 0 if the timer never advanced. Takes well under
 * a millisecond on a normal machine. */
LA__HIDDEN double la__timer_resolution_ns(const la__timer_t *t);

/* ----------------------------------------------------------------- appid */
/* Fills rank and nprocs from the launcher's environment where they are -1. */
LA__HIDDEN int la__launcher_rank(int *rank, int *nprocs);
/* Builds the application id for app_name: forced (LA_APP_ID, LA_setAppId,
 * rank 0's broadcast id) as it is, else the launcher's job id, else the
 * launcher process's pid and start time. A derived id gains a random part
 * (la__app_id_random) where this process alone decides it: a job of one
 * process (nprocs 1), or a process under no launcher. */
LA__HIDDEN int la__app_id(const char *app_name, const char *forced,
                          int nprocs, char *out, size_t len);
/* The id rank 0 of an MPI job derives for the whole job: la__app_id's
 * derivation; one that is unique on this node only (a pid and start time)
 * gains ".<host>", this node's host name up to its first dot; then the
 * random part (la__app_id_random). */
LA__HIDDEN int la__app_id_job(const char *app_name, char *out, size_t len);
/* Whether a derived id gets its random part: LA_APP_ID_RANDOM unset, or
 * anything but 0/no/false/off (a value that is neither is refused by
 * la__settings_resolve). */
LA__HIDDEN int la__app_id_random_on(void);

/* ------------------------------------------------------------- mpi_appid */
/* Where MPI is initialised (and not finalised) and its library recognised
 * (MPICH and its derivatives, Open MPI), agrees on the id over
 * MPI_COMM_WORLD: rank 0 derives it (la__app_id_job, or own_id when not
 * NULL and not empty) and broadcasts it; every rank gets it in out. A
 * collective: every rank of MPI_COMM_WORLD must call it, or none. Returns 1
 * when the broadcast ran (out then holds rank 0's id, "" when rank 0 had
 * none), 0 when MPI is not there to ask (out ""); *why (may be NULL) gets
 * a static phrase saying which. */
LA__HIDDEN int la__mpi_app_id(const char *app_name, const char *own_id,
                              char *out, size_t len, const char **why);

/* ------------------------------------------------------------------- ipc */
typedef struct la__ipc {
  int shm_id, sem_id;
  la_shm_header_t *hdr;
  uint32_t n_buffers;
  uint64_t n_elements;
  uint32_t n_channels;
  uint64_t size;   /* bytes mapped */
  int shm_marked;  /* IPC_RMID done on the segment */
  uint32_t layout; /* the header's version (LA_SHM_VERSION_MIN..VERSION) */
  int weights;     /* the segment has the weights area */
  uint64_t n_rows; /* row values per buffer (layout 5 grid), 0 without */
  uint64_t n_pieces; /* piece records per buffer (layout 6), 0 without */
} la__ipc_t;

/* Creates segment and semaphore set (mode 0600) for buffers of n_channels
 * x n_elements values, marks the segment for removal at once, fills the
 * header with a random nonce, sets every semaphore to 1 (buffer free).
 * Returns 0, LA_EINVAL or LA_EIPC; on error nothing is left. */
LA__HIDDEN int la__ipc_create_ch(la__ipc_t *ipc, uint64_t n_elements,
                                 uint32_t n_buffers, uint32_t n_channels);
/* The layout to create: LA_SHM_LAYOUT's choice (LA_SHM_VERSION_MIN to
 * LA_SHM_VERSION), else LA_SHM_VERSION. 0 or LA_ECONFIG naming it. */
LA__HIDDEN int la__ipc_layout(uint32_t *layout);
/* The same in shared-memory layout `layout` (3: no weights area, for a
 * LocalAgent older than it; 4: with it; 5: with it and, when grid_rows is
 * not 0 (ny * nz of a grid registration), grid_rows row values per
 * buffer; 6: and a piece table per buffer). la__ipc_create_ch takes la__ipc_layout's choice, no rows. */
LA__HIDDEN int la__ipc_create_v(la__ipc_t *ipc, uint64_t n_elements,
                                uint32_t n_buffers, uint32_t n_channels,
                                uint32_t layout, uint64_t grid_rows);
/* The same with one channel. */
LA__HIDDEN int la__ipc_create(la__ipc_t *ipc, uint64_t n_elements,
                              uint32_t n_buffers);
/* Marks the segment for removal once every process has detached. */
LA__HIDDEN void la__ipc_mark(la__ipc_t *ipc);
/* Values of buffer i, from our own geometry (never the shared header). */
LA__HIDDEN double *la__ipc_values(const la__ipc_t *ipc, uint32_t i);
/* Row values of buffer i (n_rows of them), NULL without rows. */
LA__HIDDEN double *la__ipc_rows(const la__ipc_t *ipc, uint32_t i);
/* Piece table head of buffer i (n_pieces records follow), NULL without. */
LA__HIDDEN la_shm_pieces_head_t *la__ipc_pieces(const la__ipc_t *ipc,
                                                uint32_t i);
/* Flag bytes of buffer i (n_elements of them). */
LA__HIDDEN uint8_t *la__ipc_flags(const la__ipc_t *ipc, uint32_t i);
/* After a successful registration: gives the semaphore set to the uid of
 * the process that attached the segment (the agent), so that an agent
 * without CAP_SYS_ADMIN can remove it when we die. Returns 0 or LA_EIPC
 * (reason recorded; nothing changed; not fatal for profiling). */
LA__HIDDEN int la__ipc_handover(la__ipc_t *ipc);
/* Takes buffer *buf, or when it is not free the first free one after it
 * (*buf then says which); with none free waits for *buf. timeout_ms 0 =
 * do not wait. Between waits calls alive(),
 * which returns 0 while the agent lives. Returns 0, LA_ESKIPPED (not free in
 * time), LA_EAGENTLOST or LA_EIPC. *waited is set when it had to wait. */
LA__HIDDEN int la__ipc_acquire(la__ipc_t *ipc, uint32_t *buf, int timeout_ms,
                               int (*alive)(void *), void *arg, int *waited,
                               uint64_t *wait_ns);
/* Removes the semaphore set and detaches the segment, leaving scratch memory
 * at its address (see ipc.c). Idempotent. */
LA__HIDDEN void la__ipc_destroy(la__ipc_t *ipc);
/* The cycles the agent counted in the weights area as dropped because it
 * was behind (la_shm_weights_hdr_t.behind, LA_STAT_BEHIND); 0 without the
 * area or when its header is not this segment's. */
LA__HIDDEN uint64_t la__ipc_behind(const la__ipc_t *ipc);

/* ------------------------------------------------------------ agent link */
typedef struct la__link {
  int fd;
  uint8_t *outbox; /* bytes of notifications not yet written */
  size_t out_len;
} la__link_t;

struct La__RegisterRequest;
/* 0 when agent is a host:port, else LA_ECONFIG naming it by label (where
 * the address came from, la__settings_label). */
LA__HIDDEN int la__link_addr_check(const char *agent, const char *label);
/* Connects l (fd -1 before) to agent within timeout_ms. Returns 0,
 * LA_ECONFIG or LA_ENOAGENT (reason recorded; l->fd stays -1). */
LA__HIDDEN int la__link_connect(la__link_t *l, const char *agent,
                                int timeout_ms);
/* Registers over l, connecting it first when l->fd is -1 (a link whose
 * fd is -1 must be zeroed: la__link_close or la__link_connect). Returns
 * 0, LA_ENOAGENT, LA_ETIMEDOUT, LA_EREFUSED (with the agent's reason as
 * last error), LA_EPROTO; on error the connection is closed. */
LA__HIDDEN int la__link_register(la__link_t *l, const char *agent,
                                 int timeout_ms,
                                 const struct La__RegisterRequest *req);
/* Sends a frame without blocking; what does not fit waits in the outbox.
 * Returns 0 or LA_EAGENTLOST. */
LA__HIDDEN int la__link_send(la__link_t *l, uint16_t type, const void *msg);
/* 0 while the connection is open, LA_EAGENTLOST once the agent closed it. */
LA__HIDDEN int la__link_alive(la__link_t *l);
/* Sends one frame, waiting up to timeout_ms for the socket to take it all
 * (registration time only: before the first notification). Returns 0,
 * LA_EAGENTLOST (with the reason as last error). */
struct ProtobufCMessage;
LA__HIDDEN int la__link_send_sync(la__link_t *l, uint16_t type,
                                  const struct ProtobufCMessage *msg,
                                  int timeout_ms);
LA__HIDDEN void la__link_close(la__link_t *l);

/* ------------------------------------------------------------- numbering */
/* Puts the numbering the program set into req for n elements: the count of
 * ids that will follow (LA_setGlobalIds / LA_setGlobalIdFunc) and, for a
 * grid (req->grid set), the origin and global extent (LA_setGridOrigin),
 * pointed at origin[3] and global[3], which the caller keeps until req is
 * sent. Returns 0 or LA_EINVAL (ids of another count, a block outside the
 * global grid). */
LA__HIDDEN int la__numbering_fill(struct La__RegisterRequest *req, uint64_t n,
                                  uint64_t *origin, uint64_t *global);
/* After the registration was accepted: sends the n ids as ElementIds
 * chunks (none when the program set none). Returns 0, LA_EINVAL (the id
 * function gave a negative id), LA_ENOMEM, LA_EAGENTLOST. */
LA__HIDDEN int la__numbering_send(la__link_t *l, uint64_t n, int timeout_ms);

/* ------------------------------------------------------------------ papi */
/* Initialises PAPI for the event ("PAPI_TOT_CYC", "perf::TASK-CLOCK",
 * "sde:::LIB::COUNTER") of the metric ("cycles", "papi:...") and checks the
 * machine can count it, loading libpapi first (dlopen, once). Returns 0, or
 * LA_ENOEVENT or LA_EPAPI with an error message naming the event, or (LA_EPAPI)
 * the library that cannot be loaded or libla built without PAPI
 * (LA_lastError). */
LA__HIDDEN int la__papi_init(const char *metric, const char *event);
/* PAPI_strerror(rc), or "PAPI error RC" written to buf (len bytes) when PAPI
 * has no text for rc. Never NULL. */
LA__HIDDEN const char *la__papi_strerror(int rc, char *buf, size_t len);
/* Reads the calling thread's counter (the LA_ProbeFunc of PAPI metrics). */
LA__HIDDEN double la__papi_read(long element, void *arg);
LA__HIDDEN void la__papi_shutdown(void);

/* ----------------------------------------------------------------- probe */
/* Installs the probe: fast (built-in timer) or through start/stop. */
LA__HIDDEN void la__probe_setup(int fast, int tsc, LA_ProbeFunc start,
                                void *start_arg, LA_ProbeFunc stop,
                                void *stop_arg);
/* The arguments of the user probe functions in force (NULL for none). */
LA__HIDDEN void la__probe_args(void **start_arg, void **stop_arg);
LA__HIDDEN void la__probe_grid(uint64_t nx, uint64_t ny, uint64_t nz);
/* Starts a profiled cycle writing into buffer i of the segment (its
 * n_channels x n values, n flags, row values and meta data). */
LA__HIDDEN void la__probe_begin(const la__ipc_t *ipc, uint32_t i);
/* Ends the cycle: probes become no-ops. Returns range errors counted. */
LA__HIDDEN uint64_t la__probe_end(void);
/* Whether a probe wrote a cell value since the cycle began (la.h's mark). */
LA__HIDDEN int la__probe_cell_mark(void);
LA__HIDDEN void la__probe_reset(void);
/* A probe the caller refused (the Fortran shims' tile-offset trap):
 * counted as a range error of the cycle. Returns how many were refused
 * in this cycle before it (0: the first, worth describing). */
LA__HIDDEN uint64_t la__probe_refuse(void);

/* -------------------------------------------------------------- channels */
/* The channels declared so far (LA_channel): their count (0: none) and
 * names (static storage, valid until la__channels_reset). */
LA__HIDDEN uint32_t la__channels(const char *const **names);
/* Closes the declarations (LA_register, whatever its outcome): LA_channel
 * is refused until la__channels_reset. */
LA__HIDDEN void la__channels_freeze(void);
/* Forgets the declared channels and opens the declarations again
 * (LA_finalize). */
LA__HIDDEN void la__channels_reset(void);

/* --------------------------------------------------------------- weights */
/* The segment of the registration in force, or NULL when there is none
 * (never registered, LA_finalize, registration failed, agent lost). */
LA__HIDDEN const la__ipc_t *la__lifecycle_ipc(void);


/* ------------------------------------------------------------------ dump */
/* 0 when dir (LA_DUMP_RAW) is a directory this process may write into,
 * else LA_ECONFIG naming it and why: checked at LA_register, so that a
 * mistyped directory is not found out only after the run, by the files
 * missing. */
LA__HIDDEN int la__dump_check(const char *dir);
/* Writes buffer i's values*scale (with channels: the per-element sum over
 * the n_channels channels; with rows, each row's value spread over its
 * cells of channel 0 as the LocalAgent spreads it, and its piece records
 * over their cells of the grid (NULL: not a grid)) to
 * dir/<app_id>.r<rank>.c<tag>.f64, its flag bytes to ....flags and its
 * interference counters to ....fid (text). 0, LA_ENOMEM or LA_EIO; the
 * first failure after one that worked (or since LA_register) is said on
 * stderr, also without LA_VERBOSE, the next ones only counted (a
 * directory gone or unwritable mid-run: said once, the run goes on). */
LA__HIDDEN int la__dump_raw(const char *dir, const char *app_id, int rank,
                            uint64_t tag, const la__ipc_t *ipc, uint32_t i,
                            double scale, const uint64_t *grid);

#endif /* LA_INTERNAL_H */
