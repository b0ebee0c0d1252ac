/* SPDX-License-Identifier: BSD-3-Clause */
/* agent.h: the LocalAgent's state and the functions its files share.
 *
 * Files, each calling only those below it (scripts/depgraph.py checks):
 *   main.c      options, configuration, logging, start-up order, signals,
 *               drain; the agent core: fills la_agent_events_t
 *   listener.c  accepts connections, admission (connection cap)
 *   session.c   one connection: framing, registration (RegService),
 *               data-ready (DXService), status queries, close and cleanup
 *   worker.c    compaction jobs (pool.c's threads): read a buffer, give it
 *               back, compact it;
 *               the cycles beyond max_backlog on the lane (lane.c)
 *   pool.c      the compaction threads; a finished job goes back to the
 *               loop through an eventfd the loop never waits on
 *   metrics.c   the metrics endpoint (metrics.listen): control.c's report
 *               rendered on a timer, served by an HTTP thread that sees
 *               only the rendered text (daemon/la_metrics.h)
 *   control.c   the status report
 *   uplink.c    the GlobalAgent link: handshake, send queue, acks, backoff
 *   app_ipc.c, outq.c, seglog.c, settings.c, memshare.c, backlog.c: no
 *               libuv
 *               (unit-tested alone)
 * The one way back up is la_agent_events_t: session.c, worker.c and
 * uplink.c report progress through it (la_agent_progress) to main.c.
 * Everything runs on the loop thread except worker.c's work callbacks (on
 * the pool and on the lane's thread), which touch only their job, the
 * application's buffer and the log (outq.c's appends are thread-safe;
 * la_uplink_log is the entry point).
 */
#ifndef LA_LOCALAGENT_AGENT_H
#define LA_LOCALAGENT_AGENT_H

#include <stdint.h>
#include <uv.h>

#include "app_ipc.h"
#include "history.h"
#include "la_limits.h" /* LA_VERSION_STRING */
#include "la_codec.h"
#include "la_compact.h"
#include "la_uvconn.h"
#include "outq.h"
#include "settings.h"
#include "weights.h"

#define LA_AGENT_VERSION "la-localagent " LA_VERSION_STRING

struct la_uplink;
typedef struct la_agent la_agent_t;

/* The agent core's events (main.c fills them at start-up, before the loop
 * runs). The files below main.c report through them instead of calling
 * main.c. Loop thread. */
typedef struct la_agent_events {
  /* Something that can end a drain happened: a connection was freed, a
   * worker job finished, the GlobalAgent acknowledged messages. NULL:
   * nobody listens. */
  void (*on_progress)(la_agent_t *ag);
  /* The GlobalAgent refused a RankStart of this agent (RankRefused: the
   * application id belongs to another user): the session it started is
   * told (la_session_refused). NULL: nobody listens. */
  void (*on_rank_refused)(la_agent_t *ag, const La__RankRefused *m);
} la_agent_events_t;

typedef struct la_agent_stats {
  uint64_t conns_accepted, conns_refused, conns_timed_out;
  uint64_t regs, regs_refused, apps_ended, bad_frames;
  uint64_t regs_refused_memory; /* of regs_refused: agent.max_memory* */
  uint64_t cycles_received, cycles_compacted, cycles_dropped;
  uint64_t cycles_behind; /* of cycles_dropped: beyond agent.max_backlog */
  uint64_t cycles_coarse; /* beyond agent.max_backlog, taken coarsely */
  uint64_t coarse_ns;     /* their time on the lane thread, taken to sent */
  uint64_t robust_coarse; /* cycles with robust weights most of which the
                             timer did not resolve (weights.h) */
  uint64_t points, compact_ns, bytes_out;
  uint64_t app_skipped, app_waits; /* reported by applications */
  uint64_t missing_at_restart;     /* taken cycles of a crashed run */
  uint64_t ranks_ended_at_restart; /* RankEnd "LocalAgent restarted" */
  uint64_t status_queries;
  uint64_t ranks_refused_upstream; /* RankRefused: app id of another user */
} la_agent_stats_t;

struct la_agent {
  uv_loop_t *loop;
  la_agent_events_t ev;
  la_la_settings_t set;
  char config_path[512];
  char host[128];
  char instance[LA_INSTANCE_LEN + 1]; /* Hello.instance (instance.h) */
  la_compact_params_t compact; /* the default compaction */
  uv_tcp_t listener;
  uint16_t port;
  char bound[256];     /* host:port actually listened on */
  uv_signal_t sigs[3]; /* SIGTERM, SIGINT, SIGHUP */
  uv_timer_t drain_timer;
  struct la_syncer *syncer;    /* la_outq_sync every spool_fsync_interval */
  struct la_lane *lane;        /* cycles beyond max_backlog (worker.c) */
  struct la_pool *pool;        /* the compaction threads (worker.c) */
  struct la_session *sessions; /* doubly linked */
  int n_conns, n_apps, jobs_in_flight;
  uint64_t ids_bytes; /* element ids held for sessions (max_ids_memory) */
  uint64_t mem_bytes; /* sessions' memory estimates (max_memory) */
  la_history_budget_t hist_budget; /* history.memory (history.h) */
  int draining;
  la_outq_t *q;
  struct la_uplink *up;
  uint64_t start_ms;
  la_agent_stats_t st;
};

enum {
  LA_SESS_NEW = 0,
  LA_SESS_APP = 1,
  LA_SESS_TOOL = 2,
  LA_SESS_CLOSING = 3
};

/* A session's box- and range-probed cycles stored one value per piece
 * (worker.c): the state of the pieces' series, for the geometry whose
 * hash (la_pieces_hash) is hash (count 0: none yet). A cycle of another
 * geometry starts it afresh, as a new registration would: robust weights
 * and history of its pieces from nothing (worker.c). The
 * rest is fixed at registration. Only the session's job (one at a time)
 * touches it. */
typedef struct la_piece_state {
  uint64_t hash, count;
  uint64_t cells_min;      /* the fewest cells of a piece */
  la_compact_params_t cp;  /* an absolute maxerr bound times cells_min */
  la_weights_t *weights;   /* or NULL */
  la_history_t *hist;      /* or NULL */
  /* from the registration */
  int robust, detect;
  double timer_res_ns, tol, cv;
  uint32_t confirm, reps;
} la_piece_state_t;

typedef struct la_session {
  la_conn_t conn; /* first: the connection (la_uvconn.h) */
  la_agent_t *ag;
  struct la_session *prev, *next;
  int jobs; /* worker jobs in flight (each holds conn) */
  int state;
  /* registered application */
  la_app_ipc_t ipc;
  char app_id[LA_MAX_ID_LEN + 1];
  uint32_t rank, nprocs;
  int pid;
  la_compact_params_t cp;
  la_weights_t *weights; /* robust weights (time metric), or NULL */
  /* channels beyond one (ipc.n_channels > 1): each one's robust weights,
   * like weights (NULL where there are none) */
  la_weights_t *ch_weights[LA_SHM_MAX_CHANNELS];
  la_history_t *hist; /* representatives (history.h), or NULL */
  /* row-probed cycles (rows of row_len cells, one value each: worker.c):
   * the rows' compaction parameters, robust weights and history, or
   * NULL; row_len 0 when the registration has no rows */
  uint64_t row_len;
  la_compact_params_t row_cp;
  la_weights_t *row_weights;
  la_history_t *row_hist;
  la_piece_state_t pieces;
  uint32_t busy;      /* bit i: buffer i is being read */
  /* worker.c: the job running (at most one per session, so the
   * estimator and the history see the cycles in order) and the jobs
   * queued behind it, oldest first */
  int job_running;
  struct la_job *job_queue, *job_queue_tail;
  uint64_t cycles, skipped, waits;
  /* element ids announced at registration, held until all arrived */
  int64_t *ids;
  uint64_t ids_got, ids_bytes;
  uint64_t mem_bytes; /* its memory estimate (memshare.h), until freed */
  int data_seen; /* a DataReady came: no ids any more */
  int refused;   /* an Error was sent: its frames are ignored (the
                    connection closes after it, or libla closes it) */
  int finalized;
  int coarse_told; /* the log said its weights are below resolution */
  const char *end_reason;
  uint64_t start_seq; /* its RankStart's sequence number (0: not logged) */
  /* the GlobalAgent refused its RankStart (RankRefused): nothing more of
   * it is shipped; read by worker jobs (atomically) */
  int refused_upstream;
} la_session_t;

/* listener.c */
int la_listener_start(la_agent_t *ag, char *why, size_t why_len);
void la_listener_stop(la_agent_t *ag);

/* session.c */
/* Accepts a connection from the listener. */
void la_session_accept(la_agent_t *ag, uv_stream_t *server);
/* Closes the connection; the application's IPC objects are removed and
 * RankEnd sent once no job of the session is in flight. */
void la_session_close(la_session_t *s, const char *reason);
/* The GlobalAgent refused the RankStart m names (its seq, app id and
 * rank): the session that sent it, if still open, is marked refused (its
 * cycles no longer shipped), its application told (an Error with m's code
 * and reason; libla closes the connection), its frames ignored; counted in
 * ranks_refused_upstream and logged. One that already ended is only
 * logged. Loop thread. */
void la_session_refused(la_agent_t *ag, const La__RankRefused *m);

/* worker.c */
/* Queues the compaction of buffer i of s. A session's jobs run one at a
 * time in the order submitted (its robust weights, history and weights
 * area are sequential state); different sessions' jobs run in parallel.
 * The job holds s's connection (la_conn_hold, counted in s->jobs) from
 * here until it is back on the loop thread; then it releases it and
 * reports la_agent_progress. Returns 0 or LA_ENOMEM. */
int la_worker_submit(la_session_t *s, uint32_t i, uint64_t cycle_tag,
                     uint64_t seq, uint64_t t_xfer_ns);

/* uplink.c */
int la_uplink_start(la_agent_t *ag, char *why, size_t why_len);
/* Encodes msg (RankStart, CompactTrace, TraceMissing or RankEnd) with the
 * next sequence number (set into *seq_field before packing), appends it to
 * the log and queues it for the GlobalAgent; the message's type says what
 * it records (outq.h flags). Any thread; nothing is sent until
 * la_uplink_kick runs on the loop thread. Returns 0 or the la_outq_append
 * code (counted in the queue's dropped; not logged). */
int la_uplink_log(la_agent_t *ag, uint16_t type, ProtobufCMessage *msg,
                  uint64_t *seq_field);
/* la_uplink_log of a TraceMissing for (app_id, rank, cycle_tag) with the
 * reason. Any thread. */
int la_uplink_log_missing(la_agent_t *ag, const char *app_id, uint32_t rank,
                          uint64_t cycle_tag, const char *reason);
/* Sends what is queued if the link is up. Loop thread. */
void la_uplink_kick(la_agent_t *ag);
/* la_uplink_log, then la_uplink_kick; a refusal is logged. Loop thread.
 * Returns 0 or the la_outq_append code. */
int la_uplink_send(la_agent_t *ag, uint16_t type, ProtobufCMessage *msg,
                   uint64_t *seq_field);
/* Whether every queued message has been acknowledged. */
int la_uplink_idle(la_agent_t *ag);
void la_uplink_stop(la_agent_t *ag);
/* Status entries of the link ("connected", "backoff", ...). */
const char *la_uplink_state(la_agent_t *ag);
/* Every shard's link as "address state", separated by "; " ("none"). */
void la_uplink_states(la_agent_t *ag, char *buf, size_t len);
uint64_t la_uplink_connects(la_agent_t *ag);
const char *la_uplink_last_error(la_agent_t *ag);

/* metrics.c */
/* Starts the metrics endpoint when metrics.listen is set (after the
 * listener). Returns 0, or a negative LA_E* code with the reason. */
int la_agent_metrics_start(la_agent_t *ag, char *why, size_t why_len);
/* Stops it; after uv_run returned. */
void la_agent_metrics_stop(la_agent_t *ag);
/* Applies ag->set's [metrics] keys after a reload (la_metrics_reload). */
void la_agent_metrics_reload(la_agent_t *ag);

/* control.c */
/* Builds the status reply; free with la_status_reply_free. */
La__StatusReply *la_status_reply(la_agent_t *ag);
void la_status_reply_free(La__StatusReply *r);

/* Reports a refused RankStart to the agent core (on_rank_refused). */
static inline void la_agent_rank_refused(la_agent_t *ag,
                                         const La__RankRefused *m) {
  if (ag->ev.on_rank_refused) ag->ev.on_rank_refused(ag, m);
}

/* Reports progress to the agent core (la_agent_events_t.on_progress). */
static inline void la_agent_progress(la_agent_t *ag) {
  if (ag->ev.on_progress) ag->ev.on_progress(ag);
}

#endif
