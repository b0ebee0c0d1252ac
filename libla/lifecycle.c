/* SPDX-License-Identifier: BSD-3-Clause */
/* lifecycle.c: LA_register, LA_dataXfer, LA_finalize and the counters.
 *
 * States: IDLE (before LA_register or after LA_finalize), ACTIVE (registered
 * with an agent), LOST (was ACTIVE, the agent went away: the segment and
 * semaphore set are removed at once, cycles to profile count as skipped, and
 * LA_dataXfer registers again, rate-limited: see la__retry), OFF
 * (registration failed or disabled: every call is a no-op and the program
 * runs unprofiled).
 *
 * Cycle c (the number of LA_dataXfer calls so far) is profiled when profiling
 * is enabled and c % period == 0. At the start of a profiled cycle libla takes
 * the next buffer (waiting for the agent to return it, or skipping the cycle,
 * per the policy); at its end LA_dataXfer writes the buffer's meta data and
 * notifies the agent, which reads the values and gives the buffer back. The
 * application never waits on the network: notifications are one-way and
 * non-blocking; it only waits (bounded, policy "wait") when every buffer is
 * still with the agent. Owns the one registration of this process.
 *
 * A wait that times out means the agent is stopped or stuck: from then on
 * libla does not wait again (later profiled cycles are skipped and counted,
 * each after one non-blocking try for a buffer) until a buffer comes back,
 * so a stalled agent costs the application one timeout, not one per cycle.
 * The tags of skipped profiled cycles travel in the next DataReady (the
 * newest LA__SKIPPED_TAGS_MAX; all are counted in `skipped`).
 */
#include <assert.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_codec.h"
#include "la_compact.h"
#include "la_interference.h"
#include "la_time.h"

enum { LA__IDLE = 0, LA__ACTIVE = 1, LA__OFF = 2, LA__LOST = 3 };
#define LA__SKIPPED_TAGS_MAX 64 /* DataReady.skipped_tags */
/* Registering again after the agent was lost (la__retry): the first try
 * 1 s after the loss, then 2, 4, 8, 16 s apart at most; each step of a try
 * (connect, the registration's reply, each write of it and of the element
 * ids) waits LA__RETRY_DEADLINE_MS at most. */
#define LA__RETRY_FIRST_NS 1000000000ull
#define LA__RETRY_MAX_NS 16000000000ull
#define LA__RETRY_DEADLINE_MS 250

static struct {
  int state;
  la__settings_t set;
  la__timer_t timer;
  la__ipc_t ipc;
  la__link_t link;
  int rank, nprocs;
  char app_id[LA_MAX_APP_ID + 1];
  int papi;
  uint64_t n;
  uint32_t n_channels; /* value sets per buffer: declared channels, >= 1 */
  uint64_t cycles, profiled, skipped, waits, wait_ns, range_errors;
  int holding;     /* the current cycle is profiled into buffer cur */
  uint32_t cur;    /* buffer in use, or next to take */
  int cur_skipped; /* the current cycle was to be profiled but skipped */
  int stalled;     /* a wait timed out: try without waiting until one works */
  int custom;      /* metric custom: the program's probe functions */
  unsigned probe_gen; /* la__settings_probe_gen of the functions in use */
  uint64_t skipped_tags[LA__SKIPPED_TAGS_MAX]; /* ring, oldest at head */
  uint32_t tags_head, tags_n;
  int cell_marks; /* registered through la__registerGridMarked */
  /* what a registration again needs (state LOST) */
  char app_name[65];
  int has_grid;
  uint64_t grid[3];
  const char *unit;
  uint64_t retry_at, retry_ns; /* la_mono_ns of the next try, its backoff */
  uint64_t reregistered;       /* registrations again that worked */
  uint32_t layout;             /* the lost registration's segment layout */
  int refused; /* the GlobalAgent refused the registration (LA_EREFUSED) */
  uint64_t behind; /* LA_STAT_BEHIND as last read from the segment */
} la__ctx;

/* Remembers the tag of a skipped profiled cycle; keeps the newest. */
static void la__skipped_tag(uint64_t tag) {
  uint32_t max = LA__SKIPPED_TAGS_MAX;
  if (la__ctx.tags_n < max) {
    la__ctx.skipped_tags[(la__ctx.tags_head + la__ctx.tags_n++) % max] = tag;
  } else {
    la__ctx.skipped_tags[la__ctx.tags_head] = tag;
    la__ctx.tags_head = (la__ctx.tags_head + 1) % max;
  }
}

static int la__name_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > 64) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isgraph((unsigned char)s[i])) return 0;
  return 1;
}

/* Installs the program's probe functions (metric custom) as they are set
 * now, and remembers their generation. */
static void la__install_probe_funcs(void) {
  LA_ProbeFunc a, b;
  void *aa, *ba;
  la__ctx.probe_gen = la__settings_probe_gen();
  la__settings_probe_funcs(&a, &aa, &b, &ba);
  la__probe_setup(0, 0, a, aa, b, ba);
}

/* Chooses and initialises the probe for the metric. Sets unit. */
static int la__metric_setup(const la__settings_t *s, const char **unit) {
  const char *m = s->metric;
  const char *event = NULL;
  if (!strcmp(m, "time")) {
    la__timer_init(&la__ctx.timer, s->timer);
    la__probe_setup(1, la__ctx.timer.tsc, NULL, NULL, NULL, NULL);
    *unit = "ns";
    return 0;
  }
  if (!strcmp(m, "custom")) {
    if (!la__settings_has_custom_probe())
      return la__error(LA_ECONFIG,
                       "metric 'custom' but no probe function "
                       "(LA_setProbeStartFunc) was set");
    la__ctx.custom = 1;
    la__install_probe_funcs();
    *unit = "user";
    return 0;
  }
  if (!strcmp(m, "cycles"))
    event = "PAPI_TOT_CYC";
  else if (!strcmp(m, "instructions"))
    event = "PAPI_TOT_INS";
  else if (!strncmp(m, "papi:", 5) && m[5])
    event = m + 5;
  else {
    char label[LA__METRIC_LEN + 32];
    return la__error(LA_ECONFIG,
                     "%s: no such metric (expected time, cycles, "
                     "instructions, papi:EVENT or custom)",
                     la__settings_label(s, LA__FROM_METRIC, label,
                                        sizeof label));
  }
  int rc = la__papi_init(m, event);
  if (rc) return rc;
  la__ctx.papi = 1;
  la__probe_setup(0, 0, la__papi_read, NULL, la__papi_read, NULL);
  *unit = "count";
  return 0;
}

static void la__teardown(void) {
  la__settings_registered(NULL);
  la__probe_reset();
  la__link_close(&la__ctx.link);
  la__ipc_destroy(&la__ctx.ipc);
  if (la__ctx.papi) la__papi_shutdown();
  la__ctx.papi = 0;
  la__ctx.holding = 0;
}

static int la__agent_alive(void *arg) {
  return la__link_alive(&la__ctx.link);
}

/* Starts cycle la__ctx.cycles: takes a buffer if it is to be profiled.
 * Probe functions set since the last cycle (metric custom) take over here,
 * where no probe runs: one cycle is measured by one pair of them. */
static int la__begin_cycle(void) {
  if (la__ctx.custom && la__ctx.probe_gen != la__settings_probe_gen()) {
    la__install_probe_funcs();
    la__info("probe functions replaced from cycle %llu on",
             (unsigned long long)la__ctx.cycles);
  }
  if (!la__settings_enabled() || la__ctx.set.disabled) return 0;
  uint64_t period = (uint64_t)la__settings_period();
  if (la__ctx.cycles % period != 0) return 0;
  int waited = 0;
  int timeout = la__settings_policy() == LA_POLICY_SKIP || la__ctx.stalled
                    ? 0
                    : la__ctx.set.wait_timeout_ms;
  int rc = la__ipc_acquire(&la__ctx.ipc, &la__ctx.cur, timeout,
                           la__agent_alive, NULL, &waited, &la__ctx.wait_ns);
  if (waited) la__ctx.waits++;
  if (rc == LA_ESKIPPED) {
    la__ctx.skipped++;
    la__ctx.cur_skipped = 1;
    if (waited && !la__ctx.stalled) {
      la__ctx.stalled = 1;
      la__info(
          "no buffer back from the LocalAgent within %d ms: skipping "
          "profiled cycles without waiting until it answers again",
          timeout);
    }
    return 0;
  }
  if (rc) return rc;
  if (la__ctx.stalled) {
    la__ctx.stalled = 0;
    la__info("the LocalAgent answers again: profiling resumed");
  }
  la__ctx.holding = 1;
  la__probe_begin(&la__ctx.ipc, la__ctx.cur);
  return 0;
}

static int la__lost(int rc) {
  la__info("profiling stopped: %s", LA_lastError());
  la__teardown();
  la__ctx.state = LA__OFF;
  return rc;
}

/* The registered agent went away (rc LA_EAGENTLOST; any other error ends
 * profiling: la__lost). Its segment and semaphore set are removed now, the
 * probes stop, and what registering again needs stays: state LOST, first
 * try LA__RETRY_FIRST_NS from now. Returns rc. */
static int la__agent_gone(int rc) {
  if (rc == LA_EREFUSED) la__ctx.refused = 1; /* for good: no retry */
  if (rc != LA_EAGENTLOST || la__ctx.state != LA__ACTIVE) return la__lost(rc);
  la__info("profiling paused: %s", LA_lastError());
  la__probe_end();
  la__ctx.layout = la__ctx.ipc.layout;
  la__link_close(&la__ctx.link);
  la__ipc_destroy(&la__ctx.ipc);
  la__ctx.holding = 0;
  la__ctx.cur_skipped = 0;
  la__ctx.state = LA__LOST;
  la__ctx.retry_ns = LA__RETRY_FIRST_NS;
  la__ctx.retry_at = la_mono_ns() + la__ctx.retry_ns;
  return rc;
}

/* Whether a registration refused with rc was refused by a LocalAgent that
 * predates the header's layout `layout`: then it is retried one layout
 * older (said when verbose), down to LA_SHM_VERSION_MIN. */
static int la__old_agent(int rc, uint32_t layout) {
  /* la_shm_header_check's words, said by an agent that predates the
   * layout of a header this libla wrote in it */
  if (rc != LA_EREFUSED || layout <= LA_SHM_VERSION_MIN ||
      !strstr(LA_lastError(), "unsupported header version"))
    return 0;
  la__info(
      "the LocalAgent does not read shared-memory layout %u: "
      "registering in layout %u%s",
      layout, layout - 1,
      layout - 1 < 4   ? ", without in-job weights (LA_weights)"
      : layout - 1 < 5 ? ", row probes spread in the application"
                       : ", boxes and ranges spread in the application");
  return 1;
}

/* Creates a segment and semaphore set in shared-memory layout `layout` (or
 * older, for an older LocalAgent) for the registration in la__ctx (app id,
 * rank, size, elements, grid, channels, metric, period, compaction,
 * numbering) and registers them with the agent, each step within
 * timeout_ms: LA_register's first registration and la__retry's again.
 * Returns 0 (link and ipc set), or the error with nothing left behind. */
static int la__attach(uint32_t layout, int timeout_ms) {
  la__settings_t *s = &la__ctx.set;
  int rc;
  La__CompactParams cp = LA__COMPACT_PARAMS__INIT;
  if (s->compact[0]) {
    la_compact_params_t p;
    char why[160];
    char label[sizeof s->compact + 32];
    if (la_compact_spec_parse(s->compact, &p, why, sizeof why) != 0)
      return la__error(LA_ECONFIG, "%s: %s",
                       la__settings_label(s, LA__FROM_COMPACT, label,
                                          sizeof label),
                       why);
    cp.has_mode = 1;
    cp.mode = (La__CompactMode)p.mode;
    cp.has_cv = 1;
    cp.cv = p.cv;
    cp.has_epsilon = 1;
    cp.epsilon = p.epsilon;
    cp.has_relative = 1;
    cp.relative = p.relative != 0;
    cp.has_connected = 1;
    cp.connected = p.connected != 0;
    cp.has_outliers = 1;
    cp.outliers = p.outliers != 0;
  }
  /* connected first: with no agent there, no segment is made for nothing */
  if ((rc = la__link_connect(&la__ctx.link, s->agent, timeout_ms))) return rc;
  const char *const *ch_names = NULL;
  uint32_t n_ch = la__channels(&ch_names);
  uint64_t *grid = la__ctx.has_grid ? la__ctx.grid : NULL;
  uint64_t grid_rows = grid ? grid[1] * grid[2] : 0;
  if ((rc = la__ipc_create_v(&la__ctx.ipc, la__ctx.n, (uint32_t)s->n_buffers,
                             la__ctx.n_channels, layout, grid_rows))) {
    la__link_close(&la__ctx.link);
    return rc;
  }

  char host[LA_MAX_ID_LEN + 1] = "";
  gethostname(host, sizeof host - 1);
  La__RegisterRequest req = LA__REGISTER_REQUEST__INIT;
  req.protocol = LA_PROTOCOL_VERSION;
  req.app_id = la__ctx.app_id;
  req.app_name = la__ctx.app_name;
  req.rank = (uint32_t)la__ctx.rank;
  req.nprocs = (uint32_t)la__ctx.nprocs;
  req.pid = (int32_t)getpid();
  req.shm_id = la__ctx.ipc.shm_id;
  req.sem_id = la__ctx.ipc.sem_id;
  req.nonce = la__ctx.ipc.hdr->nonce;
  req.n_elements = la__ctx.n;
  req.n_buffers = (uint32_t)s->n_buffers;
  req.metric = s->metric;
  req.unit = (char *)la__ctx.unit;
  req.has_period = 1;
  req.period = (uint32_t)s->period;
  if (s->compact[0]) req.compact = &cp;
  uint64_t g[3];
  if (grid) {
    memcpy(g, grid, sizeof g);
    req.n_grid = 3;
    req.grid = g;
  }
  req.host = host[0] ? host : NULL;
  req.n_channels = n_ch; /* none declared: nothing on the wire */
  req.channels = (char **)ch_names;
  la__interf_fill_register(&req);
  uint64_t origin[3], global[3];
  if ((rc = la__numbering_fill(&req, la__ctx.n, origin, global))) {
    la__link_close(&la__ctx.link);
    la__ipc_destroy(&la__ctx.ipc);
    return rc;
  }
  while ((rc = la__link_register(&la__ctx.link, s->agent, timeout_ms, &req))) {
    if (!la__old_agent(rc, la__ctx.ipc.layout)) {
      la__link_close(&la__ctx.link);
      la__ipc_destroy(&la__ctx.ipc);
      return rc;
    }
    /* a LocalAgent older than this layout: the one before it */
    layout = la__ctx.ipc.layout - 1;
    la__link_close(&la__ctx.link);
    la__ipc_destroy(&la__ctx.ipc);
    if ((rc = la__ipc_create_v(&la__ctx.ipc, la__ctx.n, (uint32_t)s->n_buffers,
                               la__ctx.n_channels, layout, grid_rows)))
      return rc;
    req.shm_id = la__ctx.ipc.shm_id;
    req.sem_id = la__ctx.ipc.sem_id;
    req.nonce = la__ctx.ipc.hdr->nonce;
  }
  /* The agent accepted and is attached: let it own the semaphore set at
   * once, before anything long (the element ids), so that from here a kill
   * of this process leaves nothing the agent cannot remove. A local act,
   * not a message: the agent still gets the ids before the first
   * DataReady, as the protocol wants. */
  if (la__ipc_handover(&la__ctx.ipc) != 0)
    la__info("semaphore set stays ours: %s", LA_lastError());
  if ((rc = la__numbering_send(&la__ctx.link, la__ctx.n, timeout_ms))) {
    la__link_close(&la__ctx.link);
    la__ipc_destroy(&la__ctx.ipc);
    return rc;
  }
  la__ctx.cur = 0;
  la__ctx.stalled = 0;
  return 0;
}

static int la__register(const char *app_name, int rank, int nprocs,
                        long n_elements, const uint64_t *grid) {
  if (la__ctx.state == LA__ACTIVE || la__ctx.state == LA__LOST)
    return la__error(LA_ESTATE,
                     "LA_register called twice: this process is registered "
                     "already (application %s, rank %d); LA_finalize ends "
                     "that registration, then LA_register may run again",
                     la__ctx.app_id, la__ctx.rank);
  /* One id per MPI job (mpi_appid.c): a collective, so it runs before
   * anything that could fail on one rank and not another, and is skipped
   * only for the program's own LA_setAppId, which is the same on every
   * rank. LA_APP_ID, which a launcher may give some ranks only, does not
   * skip it: it wins on the rank that has it. */
  char agreed[LA_MAX_APP_ID + 1] = "";
  const char *agreed_why = "the id was set by LA_setAppId";
  if (!la__settings_app_id_set())
    la__mpi_app_id(app_name, getenv("LA_APP_ID"), agreed, sizeof agreed,
                   &agreed_why);
  la__channels_freeze();
  memset(&la__ctx, 0, sizeof la__ctx);
  la__ctx.ipc.shm_id = la__ctx.ipc.sem_id = -1;
  la__ctx.link.fd = -1;
  la__ctx.state = LA__OFF;
  la__settings_t *s = &la__ctx.set;
  int rc = la__settings_resolve(s);
  if (rc) return rc;
  if (s->disabled) return la__error(LA_EDISABLED, "LA_DISABLE is set");
  if (!la__name_ok(app_name))
    return la__error(LA_EINVAL,
                     "application name empty, longer than 64 or "
                     "with spaces");
  if (n_elements <= 0 || (uint64_t)n_elements > LA_SHM_MAX_ELEMENTS)
    return la__error(LA_EINVAL, "element count %ld outside 1..2^32",
                     n_elements);
  if ((rc = la__launcher_rank(&rank, &nprocs))) return rc;
  la__set_verbose(s->verbose, rank);
  la__ctx.rank = rank;
  la__ctx.nprocs = nprocs;
  if ((rc = la__app_id(app_name, s->app_id[0] ? s->app_id : agreed, nprocs,
                       la__ctx.app_id, sizeof la__ctx.app_id)))
    return rc;
  /* rank 0's id as this rank would take it (LA_APP_ID goes out as set;
   * la__app_id turns characters an id may not hold into '_') */
  char agreed_id[LA_MAX_APP_ID + 1] = "";
  if (agreed[0] &&
      la__app_id(app_name, agreed, nprocs, agreed_id, sizeof agreed_id))
    snprintf(agreed_id, sizeof agreed_id, "%s", agreed);
  if (s->app_id[0] && agreed[0] && strcmp(agreed_id, la__ctx.app_id))
    la__info(
        "application id %s from LA_APP_ID, not rank 0's %s: this rank "
        "registers apart from rank 0",
        la__ctx.app_id, agreed_id);
  else
    la__info("application id %s (%s%s)", la__ctx.app_id,
             s->app_id[0] ? "LA_APP_ID or LA_setAppId"
             : agreed[0] ? agreed_why
                         : "from the launcher's environment",
             s->app_id[0] ? ""
             : !s->app_id_random
                 ? "; no random part: LA_APP_ID_RANDOM=0"
             : agreed[0] && rank != 0
                 ? "; rank 0's, as its line says it was made"
             : agreed[0] || nprocs == 1
                 ? "; its last part random, so that no other user can "
                   "claim it first"
                 : "; no random part: the ranks derive it each on its own");
  if (!agreed[0] && !s->app_id[0])
    la__info("not agreed over MPI: %s", agreed_why);

  if (s->compact[0]) {
    la_compact_params_t p;
    char why[160];
    char label[sizeof s->compact + 32];
    if (la_compact_spec_parse(s->compact, &p, why, sizeof why) != 0)
      return la__error(LA_ECONFIG, "%s: %s",
                       la__settings_label(s, LA__FROM_COMPACT, label,
                                          sizeof label),
                       why);
  }
  if (s->dump_raw[0] && (rc = la__dump_check(s->dump_raw))) return rc;
  char agent_label[sizeof s->agent + 32];
  if ((rc = la__link_addr_check(
           s->agent, la__settings_label(s, LA__FROM_AGENT, agent_label,
                                        sizeof agent_label))))
    return rc;

  const char *unit = "ns";
  if ((rc = la__metric_setup(s, &unit))) return la__lost(rc);
  if ((rc = la__interf_init(la__hot.fast, la__ctx.timer.ns_per_tick,
                            la__timer_resolution_ns(&la__ctx.timer))))
    return la__lost(rc);
  la__ctx.n = (uint64_t)n_elements;
  la__ctx.unit = unit;
  snprintf(la__ctx.app_name, sizeof la__ctx.app_name, "%s", app_name);
  if ((la__ctx.has_grid = grid != NULL))
    memcpy(la__ctx.grid, grid, sizeof la__ctx.grid);
  uint32_t n_ch = la__channels(NULL);
  la__ctx.n_channels = n_ch ? n_ch : 1;
  uint32_t layout;
  if ((rc = la__ipc_layout(&layout))) return la__lost(rc);
  if ((rc = la__attach(layout, s->connect_timeout_ms))) return la__lost(rc);
  la__ctx.state = LA__ACTIVE;
  la__settings_registered(la__ctx.set.metric);
  if ((rc = la__begin_cycle())) return la__lost(rc);
  la__info(
      "registered %s rank %d/%d, %llu elements, %u channel(s), metric "
      "%s, period %d, agent %s",
      la__ctx.app_id, rank, nprocs, (unsigned long long)la__ctx.n,
      la__ctx.n_channels, s->metric, s->period, s->agent);
  return 0;
}

LA_EXPORT int LA_register(const char *app_name, int rank, int nprocs,
                          long n_elements) {
  return la__register(app_name, rank, nprocs, n_elements, NULL);
}

/* The grid registration; marks: the program's probes mark cell writes
 * (la.h's la__mark_cell), so each cycle's meta data can say whether it
 * holds row values only. */
static int la__register_grid(const char *app_name, int rank, int nprocs,
                             long nx, long ny, long nz, int marks) {
  uint64_t xy, xyz;
  if (nx < 1 || ny < 1 || nz < 1 ||
      __builtin_mul_overflow((uint64_t)nx, (uint64_t)ny, &xy) ||
      __builtin_mul_overflow(xy, (uint64_t)nz, &xyz) ||
      xyz > LA_SHM_MAX_ELEMENTS)
    return la__error(LA_EINVAL, "grid %ldx%ldx%ld empty or larger than 2^32",
                     nx, ny, nz);
  uint64_t g[3] = {(uint64_t)nx, (uint64_t)ny, (uint64_t)nz};
  int rc = la__register(app_name, rank, nprocs, (long)xyz, g);
  if (rc == 0) la__probe_grid(g[0], g[1], g[2]);
  la__ctx.cell_marks = rc == 0 && marks;
  return rc;
}

#undef LA_registerGrid /* la.h maps it to the marked entry */
/* A program compiled against an la.h before cell marks. */
LA_EXPORT int LA_registerGrid(const char *app_name, int rank, int nprocs,
                              long nx, long ny, long nz) {
  return la__register_grid(app_name, rank, nprocs, nx, ny, nz, 0);
}

LA_EXPORT int la__registerGridMarked(const char *app_name, int rank,
                                     int nprocs, long nx, long ny, long nz) {
  return la__register_grid(app_name, rank, nprocs, nx, ny, nz, 1);
}

/* The cycle in buffer cur, tag, could not be handed over (rc: the agent is
 * gone): it was not profiled but skipped (its tag goes in the next
 * DataReady, should there be one), and profiling pauses. */
static int la__not_handed(int rc, uint64_t tag) {
  assert(la__ctx.holding);
  la__ctx.holding = 0;
  la__ctx.skipped++;
  la__skipped_tag(tag);
  return la__agent_gone(rc);
}

/* Ends the current cycle with tag: hands its buffer to the agent when it
 * was profiled. 0, or (state OFF then) the error that lost the agent. A
 * cycle counts as profiled only once its DataReady went out; one whose
 * agent is gone (the connection closed, or the send failed) counts as
 * skipped. */
static int la__end_cycle(uint64_t tag) {
  la__ctx.cycles++; /* this cycle ends here, whatever happens next */
  if (la__ctx.cur_skipped) {
    la__skipped_tag(tag);
    la__ctx.cur_skipped = 0;
  }
  if (la__ctx.holding) {
    uint64_t range_errors = la__probe_end();
    la__ctx.range_errors += range_errors;
    /* a closed connection still takes a first write: ask before sending */
    int alive = la__link_alive(&la__ctx.link);
    if (alive) return la__not_handed(alive, tag);
    la_shm_bufmeta_t *meta = &la__ctx.ipc.hdr->buf[la__ctx.cur];
    double scale = la__ctx.timer.tsc && la__hot.fast
                       ? la__timer_refine(&la__ctx.timer)
                       : 1.0;
    uint64_t now = la_realtime_ns();
    meta->cycle_tag = tag;
    meta->seq = la__ctx.profiled;
    meta->scale = scale;
    meta->t_xfer_ns = now;
    meta->range_errors = range_errors;
    meta->cells = !la__ctx.cell_marks    ? LA_SHM_CELLS_UNKNOWN
                  : la__probe_cell_mark() ? LA_SHM_CELLS_WRITTEN
                                          : LA_SHM_CELLS_NONE;
    if (la__ctx.set.dump_raw[0])
      la__dump_raw(la__ctx.set.dump_raw, la__ctx.app_id, la__ctx.rank, tag,
                   &la__ctx.ipc, la__ctx.cur, scale,
                   la__ctx.has_grid ? la__ctx.grid : NULL);
    uint64_t tags[LA__SKIPPED_TAGS_MAX];
    for (uint32_t k = 0; k < la__ctx.tags_n; k++)
      tags[k] =
          la__ctx.skipped_tags[(la__ctx.tags_head + k) % LA__SKIPPED_TAGS_MAX];
    La__DataReady d = LA__DATA_READY__INIT;
    d.buffer = la__ctx.cur;
    d.cycle_tag = tag;
    d.seq = la__ctx.profiled;
    d.has_skipped = d.has_waits = d.has_t_xfer_ns = 1;
    d.skipped = la__ctx.skipped;
    d.waits = la__ctx.waits;
    d.t_xfer_ns = now;
    la__interf_fill_ready(&d, meta, scale);
    d.n_skipped_tags = la__ctx.tags_n;
    d.skipped_tags = tags;
    la__ctx.tags_n = la__ctx.tags_head = 0;
    int rc = la__link_send(&la__ctx.link, LA__MSG_TYPE__MSG_DATA_READY, &d);
    if (rc) return la__not_handed(rc, tag);
    la__ctx.holding = 0;
    la__ctx.profiled++; /* its values went to the agent */
    la__ctx.cur = (la__ctx.cur + 1) % la__ctx.ipc.n_buffers;
  } else {
    int alive = la__link_alive(&la__ctx.link);
    if (alive) return la__agent_gone(alive);
  }
  return 0;
}

/* State LOST, at the end of a cycle: registers again when the time for a
 * try has come (one clock read otherwise), in a new segment and semaphore
 * set, with the same id, rank, size, elements, channels, numbering and
 * period; the cycle tags go on. A failed try waits twice as long for the
 * next, up to LA__RETRY_MAX_NS. A refused connect on loopback fails at
 * once; an agent that does not answer costs LA__RETRY_DEADLINE_MS per
 * step of the try. */
static void la__retry(void) {
  uint64_t now = la_mono_ns();
  if (now < la__ctx.retry_at) return;
  int rc = la__attach(la__ctx.layout, LA__RETRY_DEADLINE_MS);
  if (rc) {
    la__ctx.retry_ns = la__ctx.retry_ns * 2 < LA__RETRY_MAX_NS
                           ? la__ctx.retry_ns * 2
                           : LA__RETRY_MAX_NS;
    la__ctx.retry_at = la_mono_ns() + la__ctx.retry_ns;
    la__info("registering again: %s; next try in %llu s", LA_lastError(),
             (unsigned long long)(la__ctx.retry_ns / 1000000000ull));
    return;
  }
  la__ctx.state = LA__ACTIVE;
  la__ctx.reregistered++;
  la__info(
      "registered again: %s rank %d/%d with the LocalAgent at %s from cycle "
      "%llu on (%llu cycles skipped in all); profiling resumed",
      la__ctx.app_id, la__ctx.rank, la__ctx.nprocs, la__ctx.set.agent,
      (unsigned long long)la__ctx.cycles,
      (unsigned long long)la__ctx.skipped);
}

/* State LOST: the cycle that ends was not profiled; one that was to be
 * counts as skipped, its tag kept for the next DataReady. */
static int la__xfer_lost(uint64_t tag) {
  uint64_t period = (uint64_t)la__settings_period();
  if (la__settings_enabled() && la__ctx.cycles % period == 0) {
    la__ctx.skipped++;
    la__skipped_tag(tag);
  }
  la__ctx.cycles++;
  la__retry();
  if (la__ctx.state != LA__ACTIVE) return 0;
  int rc = la__begin_cycle();
  return rc ? la__agent_gone(rc) : 0;
}

static int la__xfer(uint64_t tag) {
  if (la__ctx.state == LA__LOST) return la__xfer_lost(tag);
  if (la__ctx.state != LA__ACTIVE) {
    la__ctx.cycles++;
    return 0;
  }
  int rc = la__end_cycle(tag);
  if (rc) return rc;
  rc = la__begin_cycle();
  return rc ? la__agent_gone(rc) : 0;
}

/* Whether the profiled cycle open in buffer cur holds a measurement: a
 * value or row value not 0, a piece record claimed, or an element flagged. The agent hands every
 * buffer back zeroed, so an open cycle no probe reached reads all 0. One
 * pass over the buffer, at LA_finalize only. */
static int la__open_cycle_measured(void) {
  const la__ipc_t *ipc = &la__ctx.ipc;
  const double *v = la__ipc_values(ipc, la__ctx.cur);
  uint64_t n = ipc->n_elements * ipc->n_channels;
  for (uint64_t i = 0; i < n; i++)
    if (v[i] != 0.0) return 1;
  const double *rows = la__ipc_rows(ipc, la__ctx.cur);
  for (uint64_t i = 0; rows && i < ipc->n_rows; i++)
    if (rows[i] != 0.0) return 1;
  const la_shm_pieces_head_t *ph = la__ipc_pieces(ipc, la__ctx.cur);
  if (ph && ph->claimed) return 1;
  const uint8_t *f = la__ipc_flags(ipc, la__ctx.cur);
  for (uint64_t i = 0; f && i < ipc->n_elements; i++)
    if (f[i]) return 1;
  return 0;
}

LA_EXPORT int LA_dataXfer(void) {
  return la__xfer(la__ctx.cycles);
}

LA_EXPORT int LA_dataXferTagged(uint64_t cycle_tag) {
  return la__xfer(cycle_tag);
}

/* LA_STAT_BEHIND: the agent's count in the segment while it is there,
 * else the last one read (LA_finalize reads it before the segment goes). */
static uint64_t la__behind(void) {
  if (la__ctx.state == LA__ACTIVE) {
    uint64_t b = la__ipc_behind(&la__ctx.ipc);
    if (b > la__ctx.behind) la__ctx.behind = b;
  }
  return la__ctx.behind;
}

LA_EXPORT int LA_finalize(void) {
  int rc = 0;
  if (la__ctx.state == LA__ACTIVE && la__ctx.holding &&
      la__open_cycle_measured()) {
    /* probes after the last LA_dataXfer: their cycle is the last one */
    uint64_t tag = la__ctx.cycles;
    rc = la__end_cycle(tag);
    if (rc == 0)
      la__info(
          "finalize: the open cycle (tag %llu) held measurements: handed "
          "over as the last cycle",
          (unsigned long long)tag);
  }
  if (la__ctx.state == LA__ACTIVE) {
    /* the counter is the last profiled cycle's: count it only for a cycle
     * still open (an ended one was counted by its LA_dataXfer) */
    uint64_t range_errors = la__probe_end();
    if (la__ctx.holding) la__ctx.range_errors += range_errors;
    La__Finalize f = LA__FINALIZE__INIT;
    f.has_cycles = f.has_profiled = f.has_skipped = f.has_waits = 1;
    f.cycles = la__ctx.cycles;
    f.profiled = la__ctx.profiled;
    f.skipped = la__ctx.skipped;
    f.waits = la__ctx.waits;
    la__link_send(&la__ctx.link, LA__MSG_TYPE__MSG_FINALIZE, &f);
    la__behind(); /* kept for LA_getStat after the segment is gone */
    la__info("finalize: %llu cycles, %llu profiled, %llu skipped, %llu waits",
             (unsigned long long)la__ctx.cycles,
             (unsigned long long)la__ctx.profiled,
             (unsigned long long)la__ctx.skipped,
             (unsigned long long)la__ctx.waits);
  }
  la__teardown();
  la__ctx.state = LA__IDLE;
  la__channels_reset();
  return la__ctx.refused ? LA_EREFUSED : rc;
}

const la__ipc_t *la__lifecycle_ipc(void) {
  return la__ctx.state == LA__ACTIVE ? &la__ctx.ipc : NULL;
}

LA_EXPORT long LA_getStat(int which) {
  switch (which) {
    case LA_STAT_CYCLES:
      return (long)la__ctx.cycles;
    case LA_STAT_PROFILED:
      return (long)la__ctx.profiled;
    case LA_STAT_SKIPPED:
      return (long)la__ctx.skipped;
    case LA_STAT_WAITS:
      return (long)la__ctx.waits;
    case LA_STAT_RANGE_ERRORS:
      return (long)la__ctx.range_errors;
    case LA_STAT_WAIT_NS:
      return (long)la__ctx.wait_ns;
    case LA_STAT_REGISTERED:
      return la__ctx.state == LA__ACTIVE;
    case LA_STAT_REREGISTERED:
      return (long)la__ctx.reregistered;
    case LA_STAT_REFUSED:
      return la__ctx.refused;
    case LA_STAT_BEHIND:
      return (long)la__behind();
    default:
      return la__interf_stat(which);
  }
}

LA_EXPORT const char *LA_appId(void) {
  return la__ctx.app_id;
}
