/* SPDX-License-Identifier: BSD-3-Clause */
/* session.c: one connection to the LocalAgent.
 *
 * A connection starts NEW and must, within handshake_timeout, either register
 * an application process (RegService: it becomes APP) or ask for the status
 * (a tool: TOOL; closed after idle_timeout without a request). Until it
 * registers, frames are limited to handshake_max_frame, and one user's
 * unregistered connections to max_connections_per_uid (the peer uid of the
 * loopback connection), so one user's idle connections cannot take every
 * slot. Whatever is queued to a peer that does not read is bounded by
 * max_output (la_uvconn.h). An APP connection then sends one-way DataReady
 * notifications (DXService), each handed to a worker job, and Finalize
 * (before the first DataReady, the element ids it announced: ElementIds
 * chunks, held and sent upstream once complete); its
 * close — whatever the reason, including the process being killed — is the
 * death notice: once the session's jobs are done, the application's IPC
 * objects are removed and RankEnd goes upstream. A malformed or unexpected
 * frame closes only this connection, with a log line saying why.
 *
 * Memory is freed from the close callbacks (la_uvconn.h), never inside the
 * connection's own read callback. This file knows the protocol; admission is
 * listener.c's, reading buffers worker.c's.
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "la_log.h"
#include "la_sysv.h"
#include "la_time.h"
#include "memshare.h"
#include "peer_uid.h"

/* Frees the element ids s still holds (and their share of max_ids_memory). */
static void la__ids_free(la_session_t *s) {
  if (!s->ids) return;
  s->ag->ids_bytes -= s->ids_bytes;
  s->ids_bytes = 0;
  free(s->ids);
  s->ids = NULL;
}

/* Tells the application why it is refused (an Error it can read) and closes
 * the connection once that is written; later frames are ignored. */
static void la__app_error(la_session_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void la__app_error(la_session_t *s, const char *fmt, ...) {
  char why[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  s->ag->st.bad_frames++;
  s->refused = 1;
  la_log_warnx("%s rank %u: %s: closing", s->app_id, s->rank, why);
  La__Error e = LA__ERROR__INIT;
  e.code = LA_EPROTO;
  e.message = why;
  la_conn_send(&s->conn, LA__MSG_TYPE__MSG_ERROR, &e.base, 1);
}

/* The registration's element ids: the count must equal the element count,
 * and the ids fit in max_ids_memory with every other session's. Reserves
 * the memory. Returns 0, or -1 with the reason in why. */
static int la__ids_register(la_session_t *s, const La__RegisterRequest *r,
                            char *why, size_t len) {
  if (!r->has_n_element_ids) return 0;
  if (r->n_element_ids != r->n_elements) {
    snprintf(why, len, "%llu element ids announced for %llu elements",
             (unsigned long long)r->n_element_ids,
             (unsigned long long)r->n_elements);
    return -1;
  }
  uint64_t need = r->n_elements * sizeof *s->ids;
  la_agent_t *ag = s->ag;
  if (ag->ids_bytes > ag->set.max_ids_memory ||
      need > ag->set.max_ids_memory - ag->ids_bytes ||
      !(s->ids = malloc(need))) {
    snprintf(why, len, "%llu element ids do not fit in max_ids_memory = "
             "%llu bytes (%llu in use)", (unsigned long long)r->n_elements,
             (unsigned long long)ag->set.max_ids_memory,
             (unsigned long long)ag->ids_bytes);
    return -1;
  }
  ag->ids_bytes += need;
  s->ids_bytes = need;
  s->ids_got = 0;
  return 0;
}

/* Whether a registration whose memory estimate (memshare.h) is need fits
 * in its user's share, agent.max_memory_per_uid, and in agent.max_memory,
 * beside what the sessions not yet freed hold (closing ones too: their
 * memory is not back yet). The user is the peer uid (conn.key). Returns 0,
 * or -1 with the reason in why (counted in regs_refused_memory). */
static int la__mem_fits(la_session_t *s, const La__RegisterRequest *r,
                        uint32_t n_ch, uint64_t need, char *why,
                        size_t len) {
  la_agent_t *ag = s->ag;
  uint64_t mine = 0;
  for (const la_session_t *o = ag->sessions; o; o = o->next)
    if (o != s && o->conn.key == s->conn.key) mine += o->mem_bytes;
  const char *key, *whose;
  uint64_t limit, used;
  if (need > ag->set.max_memory_per_uid ||
      mine > ag->set.max_memory_per_uid - need) {
    key = "agent.max_memory_per_uid";
    whose = "this user's";
    limit = ag->set.max_memory_per_uid;
    used = mine;
  } else if (need > ag->set.max_memory ||
             ag->mem_bytes > ag->set.max_memory - need) {
    key = "agent.max_memory";
    whose = "all users'";
    limit = ag->set.max_memory;
    used = ag->mem_bytes;
  } else {
    return 0;
  }
  ag->st.regs_refused_memory++;
  char pieces[64] = "";
  uint64_t np = la_memshare_pieces(r->n_elements, n_ch);
  if (np)
    snprintf(pieces, sizeof pieces, " and up to %llu box or range pieces",
             (unsigned long long)np);
  snprintf(why, len,
           "%llu elements x %u channel(s)%s need %llu bytes of LocalAgent "
           "memory; %s registrations hold %llu of %s = %llu",
           (unsigned long long)r->n_elements, n_ch, pieces,
           (unsigned long long)need, whose, (unsigned long long)used, key,
           (unsigned long long)limit);
  return -1;
}

/* Once every id arrived: the rank's ids go upstream in chunks, in order,
 * after its RankStart; the memory is freed. */
static void la__ids_complete(la_session_t *s) {
  uint64_t n = s->ipc.n_elements;
  for (uint64_t first = 0; first < n; first += LA_ELEMENT_IDS_CHUNK) {
    La__ElementIds m = LA__ELEMENT_IDS__INIT;
    m.first = first;
    m.n_ids = n - first < LA_ELEMENT_IDS_CHUNK ? (size_t)(n - first)
                                               : LA_ELEMENT_IDS_CHUNK;
    m.ids = s->ids + first;
    m.app_id = s->app_id;
    m.has_rank = 1;
    m.rank = s->rank;
    if (la_uplink_log(s->ag, LA__MSG_TYPE__MSG_ELEMENT_IDS, &m.base,
                      &m.seq) != 0) {
      la_log_error("%s rank %u: element ids dropped: the log is full "
                   "(spool_bytes) or unwritable", s->app_id, s->rank);
      break;
    }
  }
  la_uplink_kick(s->ag);
  la_log_info("%s rank %u: %llu element ids received", s->app_id, s->rank,
              (unsigned long long)n);
  la__ids_free(s);
}

/* An ElementIds chunk from the application. Returns 0 (a broken rule is
 * answered with an Error and the connection closes). */
static int la__on_ids(la_session_t *s, const La__ElementIds *m) {
  uint64_t n = s->ipc.n_elements;
  if (s->data_seen)
    la__app_error(s, "element ids after a DataReady: ids go between the "
                     "registration and the first cycle");
  else if (!s->ids)
    la__app_error(s, "element ids %s", s->ids_got ? "sent twice"
                                                  : "not announced in the "
                                                    "registration");
  else if (m->n_ids > LA_ELEMENT_IDS_CHUNK)
    la__app_error(s, "element ids chunk of %zu ids (at most %u)", m->n_ids,
                  LA_ELEMENT_IDS_CHUNK);
  else if (m->first != s->ids_got)
    la__app_error(s, "element ids chunk starts at %llu, expected %llu",
                  (unsigned long long)m->first,
                  (unsigned long long)s->ids_got);
  else if (m->n_ids > n - m->first)
    la__app_error(s, "element ids past the %llu elements (chunk %llu..%llu)",
                  (unsigned long long)n, (unsigned long long)m->first,
                  (unsigned long long)(m->first + m->n_ids - 1));
  else {
    memcpy(s->ids + m->first, m->ids, m->n_ids * sizeof *m->ids);
    s->ids_got += m->n_ids;
    if (s->ids_got == n) la__ids_complete(s);
    la_conn_set_deadline(&s->conn,
                         s->ids ? (uint64_t)s->ag->set.handshake_ms : 0);
  }
  return 0;
}

/* The connection is closed and no job holds it: the application is gone or
 * finished, so its IPC objects go too, and RankEnd goes upstream. */
static void la__sess_free(la_conn_t *c) {
  la_session_t *s = (la_session_t *)c;
  la_agent_t *ag = s->ag;
  if (s->ipc.hdr) {
    la_app_ipc_release(&s->ipc);
    La__RankEnd e = LA__RANK_END__INIT;
    e.app_id = s->app_id;
    e.rank = s->rank;
    e.reason = (char *)(s->end_reason ? s->end_reason : "disconnected");
    e.has_cycles = e.has_skipped = e.has_t_end_ns = 1;
    e.cycles = s->cycles;
    e.skipped = s->skipped;
    e.t_end_ns = la_realtime_ns();
    la_uplink_send(ag, LA__MSG_TYPE__MSG_RANK_END, &e.base, &e.seq);
    ag->n_apps--;
    ag->st.apps_ended++;
    la_log_info("%s rank %u ended (%s): %llu cycles, %llu skipped by the "
                "application", s->app_id, s->rank, e.reason,
                (unsigned long long)s->cycles,
                (unsigned long long)s->skipped);
  }
  la__ids_free(s);
  assert(ag->mem_bytes >= s->mem_bytes);
  ag->mem_bytes -= s->mem_bytes;
  s->mem_bytes = 0;
  LA_CONN_LIST_UNLINK(ag->sessions, s);
  ag->n_conns--;
  la_weights_free(s->weights);
  la_history_free(s->hist);
  la_weights_free(s->row_weights);
  la_history_free(s->row_hist);
  la_weights_free(s->pieces.weights);
  la_history_free(s->pieces.hist);
  for (uint32_t c = 0; c < LA_SHM_MAX_CHANNELS; c++)
    la_weights_free(s->ch_weights[c]);
  free(s);
  la_agent_progress(ag);
}

static void la__sess_close(la_conn_t *c, const char *reason) {
  la_session_t *s = (la_session_t *)c;
  if (s->state == LA_SESS_APP)
    s->end_reason = s->finalized ? "finalize" : reason;
  s->state = LA_SESS_CLOSING;
}

void la_session_close(la_session_t *s, const char *reason) {
  la_conn_close(&s->conn, reason);
}

static void la__send(la_session_t *s, uint16_t type, const ProtobufCMessage *m,
                     int close_after) {
  la_conn_send(&s->conn, type, m, close_after);
}

static void la__refuse(la_session_t *s, const char *why) {
  La__RegisterReply r = LA__REGISTER_REPLY__INIT;
  r.status = LA_EREFUSED;
  r.message = (char *)why;
  r.agent_version = LA_AGENT_VERSION;
  s->ag->st.regs_refused++;
  la_log_warnx("registration from %s refused: %s", s->conn.peer, why);
  la__send(s, LA__MSG_TYPE__MSG_REGISTER_REPLY, &r.base, 1);
}

/* A segment or semaphore set is registered once: a second registration of
 * either (a process of the same user quoting the nonce it can read) would
 * otherwise make the agent remove the first application's objects when the
 * second connection closes. Sessions still closing count until freed.
 * Returns 0, or -1 with the reason in why. */
static int la__already_registered(const la_session_t *s,
                                  const La__RegisterRequest *r, int peer_uid,
                                  char *why, size_t len) {
  for (const la_session_t *o = s->ag->sessions; o; o = o->next) {
    if (o == s || !o->ipc.hdr) continue;
    if (o->ipc.shm_id == r->shm_id || o->ipc.sem_id == r->sem_id) {
      /* whose it is only to its own user (another learns nothing) */
      if (peer_uid >= 0 && peer_uid == o->ipc.owner_uid)
        snprintf(why, len, "segment %d / semaphore set %d already registered "
                 "by pid %d (%s rank %u)", r->shm_id, r->sem_id, o->pid,
                 o->app_id, o->rank);
      else
        snprintf(why, len, "segment %d / semaphore set %d already registered",
                 r->shm_id, r->sem_id);
      return -1;
    }
  }
  return 0;
}

/* An application id belongs to the uid whose process registered it first
 * on this agent, as long as any of its ranks is registered here: until the
 * last of its sessions is freed, which is when the RankEnd of its last
 * local rank goes upstream (la__sess_free). A registration of another uid
 * under that id is refused, told only that the id is in use. One of the
 * same uid is refused when a live process (not this one: a process that
 * registers again after its connection closed) holds its rank: two
 * processes would send one rank's cycles, and one's values would be lost;
 * it is told by which pid. peer_uid is the connection's uid as the kernel
 * reports it (-1: unknown; then the process's uid is compared, which
 * la_app_ipc_attach proves next, and nothing of the other registration is
 * told). Returns 0, or -1 with the reason in why. */
static int la__app_id_taken(const la_session_t *s,
                            const La__RegisterRequest *r, int peer_uid,
                            char *why, size_t len) {
  int uid = peer_uid >= 0 ? peer_uid : la_pid_uid(r->pid);
  const la_session_t *same_rank = NULL;
  for (const la_session_t *o = s->ag->sessions; o; o = o->next) {
    if (o == s || !o->ipc.hdr || strcmp(o->app_id, r->app_id)) continue;
    if (uid < 0 || o->ipc.owner_uid != uid) {
      snprintf(why, len, "app id %s is in use by another user: choose "
               "another id (LA_APP_ID)", r->app_id);
      return -1;
    }
    if (o->rank == r->rank && o->state == LA_SESS_APP && o->pid != r->pid &&
        !same_rank)
      same_rank = o;
  }
  if (!same_rank) return 0;
  if (peer_uid >= 0)
    snprintf(why, len, "app id %s rank %u is already registered by pid %d: "
             "give each run its own id (LA_APP_ID) or each process its own "
             "rank", r->app_id, r->rank, same_rank->pid);
  else
    snprintf(why, len, "app id %s rank %u is already registered",
             r->app_id, r->rank);
  return -1;
}

/* Open sessions other than s of s's peer uid (conn.key): registered
 * applications (apps 1) or the others (apps 0: tools, handshakes). */
static int la__uid_sessions(const la_session_t *s, int apps) {
  int n = 0;
  for (const la_session_t *o = s->ag->sessions; o; o = o->next)
    if (o != s && !o->conn.closing && (o->state == LA_SESS_APP) == apps &&
        o->conn.key == s->conn.key)
      n++;
  return n;
}

/* Whether the registration's interference detection is on (and
 * robust.trust_unflagged): then a cycle's flags are the probe's, and an
 * element it did not flag was not switched out while it was timed
 * (robust.h, `detect`). */
static int la__detects(const la_agent_t *ag, const La__RegisterRequest *r) {
  return ag->set.robust_trust && r->interference &&
         strcmp(r->interference, "on") == 0;
}

/* A grid registration of one channel with row values: the state of its
 * row-probed cycles, which are profiled as one value per row (worker.c).
 * The rows' parameters are the cells' with an absolute maxerr bound times
 * the row length (per cell it is the same bound); robust weights (over the
 * grid of rows, j fastest) and history as the cells have them. Without
 * memory a row-probed cycle goes without them, as a cell-probed one. */
static void la__rows_state(la_session_t *s, const La__RegisterRequest *r) {
  la_agent_t *ag = s->ag;
  uint64_t nr = s->ipc.n_rows;
  if (nr == 0 || s->ipc.n_channels != 1 || r->n_elements % nr != 0 ||
      r->n_elements / nr < 2)
    return;
  s->row_len = r->n_elements / nr;
  s->row_cp = s->cp;
  if (s->cp.mode == LA_COMPACT_MAXERR && !s->cp.relative)
    s->row_cp.epsilon *= (double)s->row_len;
  uint64_t rg[2] = {r->grid[1], r->grid[2]};
  if (s->weights &&
      la_weights_new(nr, r->has_timer_res_ns ? r->timer_res_ns : 0,
                     la__detects(ag, r), ag->set.robust_tol,
                     (uint32_t)ag->set.robust_confirm,
                     ag->set.robust_cv, rg, 2, &s->row_weights) != 0)
    la_log_warnx("%s rank %u: no memory for the rows' robust weights",
                 s->app_id, s->rank);
  la_compact_params_t rcp;
  la_history_robust_params(&s->row_cp, ag->set.robust_cv, &rcp);
  s->row_hist = la_history_new(&ag->hist_budget, nr,
                               (uint32_t)ag->set.history_reps, &s->row_cp,
                               s->row_weights ? &rcp : NULL);
  /* a row is one timed interval: one timer step of slack, as a cell */
  la_history_set_robust_floor(s->row_hist,
                              r->has_timer_res_ns ? r->timer_res_ns : 0);
}

/* What the state of s's piece-probed cycles is made from
 * (worker.c), as the cells' state is. */
static void la__pieces_params(la_session_t *s, const La__RegisterRequest *r) {
  la_agent_t *ag = s->ag;
  la_piece_state_t *p = &s->pieces;
  p->robust = s->weights != NULL;
  p->detect = la__detects(ag, r);
  p->timer_res_ns = r->has_timer_res_ns ? r->timer_res_ns : 0;
  p->tol = ag->set.robust_tol;
  p->cv = ag->set.robust_cv;
  p->confirm = (uint32_t)ag->set.robust_confirm;
  p->reps = (uint32_t)ag->set.history_reps;
}

static void la__on_register(la_session_t *s, const La__RegisterRequest *r) {
  la_agent_t *ag = s->ag;
  char why[256];
  if (ag->draining) return la__refuse(s, "the LocalAgent is shutting down");
  if (ag->n_apps >= ag->set.max_apps) {
    snprintf(why, sizeof why, "too many applications (max_apps = %lld)",
             (long long)ag->set.max_apps);
    return la__refuse(s, why);
  }
  /* one user's share: the rest of max_apps stays for the others */
  int mine = la__uid_sessions(s, 1);
  if (mine >= ag->set.max_apps_per_uid) {
    snprintf(why, sizeof why,
             "this user has %d applications registered here "
             "(max_apps_per_uid = %lld)",
             mine, (long long)ag->set.max_apps_per_uid);
    return la__refuse(s, why);
  }
  if (r->n_elements > ag->set.max_elements) {
    snprintf(why, sizeof why, "%llu elements exceed max_elements = %llu",
             (unsigned long long)r->n_elements,
             (unsigned long long)ag->set.max_elements);
    return la__refuse(s, why);
  }
  /* each channel is a series of its own in memory and in every job */
  if (r->n_channels > 1 && r->n_elements * r->n_channels > ag->set.max_elements) {
    snprintf(why, sizeof why, "%llu elements x %zu channels exceed "
             "max_elements = %llu", (unsigned long long)r->n_elements,
             r->n_channels, (unsigned long long)ag->set.max_elements);
    return la__refuse(s, why);
  }
  s->cp = ag->compact;
  if (r->compact && r->compact->has_mode &&
      r->compact->mode != LA__COMPACT_MODE__COMPACT_DEFAULT) {
    la_compact_params_t p = {.mode = r->compact->mode, .cv = r->compact->cv,
                             .epsilon = r->compact->epsilon,
                             .relative = r->compact->relative,
                             .connected = r->compact->connected,
                             .outliers = r->compact->outliers};
    if (la_compact_params_check(&p, why, sizeof why) != 0)
      return la__refuse(s, why);
    s->cp = p;
  }
  /* what it costs here, within the user's share of agent.max_memory */
  uint32_t n_ch = r->n_channels ? (uint32_t)r->n_channels : 1;
  int robust = ag->set.robust && !strcmp(r->metric, "time");
  uint64_t need = la_memshare_bytes(
      r->n_elements, n_ch, robust,
      n_ch == 1 && ag->set.history_memory ? (uint32_t)ag->set.history_reps
                                          : 0);
  if (la__mem_fits(s, r, n_ch, need, why, sizeof why) != 0)
    return la__refuse(s, why);
  int fd = la_conn_fd(&s->conn);
  /* found at accept (sock_diag, one exact lookup); again if unknown then */
  int peer_uid = s->conn.key >= 0 ? s->conn.key
                                  : fd >= 0 ? la_peer_uid_fast(fd) : -1;
  if (la__already_registered(s, r, peer_uid, why, sizeof why) != 0 ||
      la__app_id_taken(s, r, peer_uid, why, sizeof why) != 0)
    return la__refuse(s, why);
  char reason[200];
  if (la__ids_register(s, r, reason, sizeof reason) != 0)
    return la__refuse(s, reason);
  /* the names were checked by the codec (count, printable, bounded,
   * unique); the header must agree with their count */
  if (la_app_ipc_attach(&s->ipc, r->shm_id, r->sem_id, r->pid, r->nonce,
                        r->n_elements, r->n_buffers, n_ch,
                        r->n_grid == 3 ? r->grid : NULL, peer_uid,
                        reason, sizeof reason) != 0) {
    la__ids_free(s);
    return la__refuse(s, reason);
  }
  s->state = LA_SESS_APP;
  s->mem_bytes = need;
  ag->mem_bytes += need;
  /* ids announced: each chunk within the handshake timeout of the last,
   * so a registration cannot hold max_ids_memory and stall */
  la_conn_set_deadline(&s->conn,
                       s->ids ? (uint64_t)s->ag->set.handshake_ms : 0);
  snprintf(s->app_id, sizeof s->app_id, "%s", r->app_id);
  s->rank = r->rank;
  s->nprocs = r->nprocs;
  s->pid = r->pid;
  ag->n_apps++;
  ag->st.regs++;
  /* Robust weights for wall time (interference only adds time); without
   * memory for them the rank is still profiled, measured values only. */
  for (uint32_t c = 0; c <= (n_ch > 1 ? n_ch : 0); c++) {
    /* the sum's (c = 0), then each channel's when there are several */
    la_weights_t **w = c == 0 ? &s->weights : &s->ch_weights[c - 1];
    if (ag->set.robust && !strcmp(r->metric, "time") &&
        la_weights_new(r->n_elements,
                       r->has_timer_res_ns ? r->timer_res_ns : 0,
                       la__detects(ag, r),
                       ag->set.robust_tol, (uint32_t)ag->set.robust_confirm,
                       ag->set.robust_cv, r->grid, r->n_grid, w) != 0)
      la_log_warnx("%s rank %u: no memory for robust weights (%llu "
                   "elements%s): measured values only", s->app_id, s->rank,
                   (unsigned long long)r->n_elements,
                   c ? ", a channel" : "");
  }
  /* History of a rank of one series (docs/history.md); without memory
   * for it its traces are plain full traces. */
  la_compact_params_t rcp;
  la_history_robust_params(&s->cp, ag->set.robust_cv, &rcp);
  ag->hist_budget.limit = ag->set.history_memory;
  if (n_ch == 1)
    s->hist = la_history_new(&ag->hist_budget, r->n_elements,
                             (uint32_t)ag->set.history_reps, &s->cp,
                             s->weights ? &rcp : NULL);
  /* robust references: one step of the timer below which cycles differ */
  la_history_set_robust_floor(s->hist,
                              r->has_timer_res_ns ? r->timer_res_ns : 0);
  la__rows_state(s, r);
  la__pieces_params(s, r);

  La__RegisterReply ok = LA__REGISTER_REPLY__INIT;
  ok.status = 0;
  ok.agent_version = LA_AGENT_VERSION;
  la__send(s, LA__MSG_TYPE__MSG_REGISTER_REPLY, &ok.base, 0);

  La__CompactParams cp = LA__COMPACT_PARAMS__INIT;
  cp.has_mode = cp.has_cv = cp.has_epsilon = cp.has_relative = 1;
  cp.has_connected = cp.has_outliers = 1;
  cp.mode = (La__CompactMode)la_compact_effective_mode(&s->cp);
  cp.cv = s->cp.cv;
  cp.epsilon = s->cp.epsilon;
  cp.relative = s->cp.relative != 0;
  cp.connected = s->cp.connected != 0;
  cp.outliers = s->cp.outliers != 0;
  La__RankStart st = LA__RANK_START__INIT;
  st.app_id = s->app_id;
  st.rank = r->rank;
  st.nprocs = r->nprocs;
  st.n_elements = r->n_elements;
  st.metric = r->metric;
  st.unit = r->unit;
  st.app_name = r->app_name;
  st.host = ag->host;
  st.has_pid = 1;
  st.pid = r->pid;
  st.compact = &cp;
  st.n_grid = r->n_grid;
  st.grid = r->grid;
  st.has_period = r->has_period;
  st.period = r->period;
  st.has_t_start_ns = 1;
  st.t_start_ns = la_realtime_ns();
  st.has_timer_res_ns = r->has_timer_res_ns;
  st.timer_res_ns = r->timer_res_ns;
  st.interference = r->interference;
  st.n_channels = r->n_channels;
  st.channels = r->channels;
  st.has_n_element_ids = r->has_n_element_ids;
  st.n_element_ids = r->n_element_ids;
  st.n_grid_origin = r->n_grid_origin;
  st.grid_origin = r->grid_origin;
  st.n_grid_global = r->n_grid_global;
  st.grid_global = r->grid_global;
  /* whose rank it is, for the GlobalAgent's binding of the id to a user
   * (docs/security.md): the uid la_app_ipc_attach proved */
  if (s->ipc.owner_uid >= 0) {
    st.has_owner_uid = 1;
    st.owner_uid = (uint32_t)s->ipc.owner_uid;
  }
  if (la_uplink_send(ag, LA__MSG_TYPE__MSG_RANK_START, &st.base, &st.seq) ==
      0)
    s->start_seq = st.seq;
  char spec[80] = "";
  la_compact_spec_format(&s->cp, spec, sizeof spec);
  la_log_info("registered %s rank %u/%u (pid %d, %llu elements, %u buffers, "
              "%u channel(s), %s, %s) from %s", s->app_id, s->rank, s->nprocs,
              s->pid, (unsigned long long)r->n_elements, r->n_buffers, n_ch,
              r->metric, spec, s->conn.peer);
}

static int la__on_data_ready(la_session_t *s, const La__DataReady *d) {
  s->data_seen = 1;
  if (s->ids) {
    la__app_error(s, "DataReady after %llu of the %llu element ids announced",
                  (unsigned long long)s->ids_got,
                  (unsigned long long)s->ipc.n_elements);
    return 0;
  }
  if (d->buffer >= s->ipc.n_buffers) {
    la_log_warnx("%s rank %u: data-ready for buffer %u of %u: closing",
                 s->app_id, s->rank, d->buffer, s->ipc.n_buffers);
    return -1;
  }
  if (__atomic_load_n(&s->busy, __ATOMIC_SEQ_CST) & (1u << d->buffer)) {
    la_log_warnx("%s rank %u: buffer %u notified twice before it was read: "
                 "closing", s->app_id, s->rank, d->buffer);
    return -1;
  }
  s->ag->st.cycles_received++;
  s->cycles++;
  if (d->has_skipped && d->skipped > s->skipped) {
    s->ag->st.app_skipped += d->skipped - s->skipped;
    s->skipped = d->skipped;
  }
  /* cycles the application could not hand over are recorded as missing */
  for (size_t k = 0; k < d->n_skipped_tags; k++)
    la_uplink_log_missing(s->ag, s->app_id, s->rank, d->skipped_tags[k],
                          "skipped by the application (buffers full/agent "
                          "unreachable)");
  if (d->n_skipped_tags) la_uplink_kick(s->ag);
  if (d->has_waits && d->waits > s->waits) {
    s->ag->st.app_waits += d->waits - s->waits;
    s->waits = d->waits;
  }
  if (la_worker_submit(s, d->buffer, d->cycle_tag, d->seq, d->t_xfer_ns) != 0) {
    s->ag->st.cycles_dropped++;
    la_log_warnx("%s rank %u: cycle %llu dropped: out of memory", s->app_id,
                 s->rank, (unsigned long long)d->cycle_tag);
    la_uplink_log_missing(s->ag, s->app_id, s->rank, d->cycle_tag,
                          "dropped: the LocalAgent was out of memory");
    la_uplink_kick(s->ag);
  }
  return 0;
}

/* Whether s is in state (a message that needs it arrived); otherwise logs
 * "connection PEER: WHAT: closing". */
static int la__in_state(la_session_t *s, int state, const char *what) {
  if (s->state == state) return 1;
  la_log_warnx("connection %s: %s: closing", s->conn.peer, what);
  return 0;
}

/* Handles one decoded message. Returns -1 to close the connection. */
static int la__sess_frame(la_conn_t *c, uint16_t type, ProtobufCMessage *m) {
  la_session_t *s = (la_session_t *)c;
  if (s->refused) return 0; /* an Error is on its way; closing after it */
  switch (type) {
  case LA__MSG_TYPE__MSG_ELEMENT_IDS:
    if (!la__in_state(s, LA_SESS_APP, "element ids before registration"))
      return -1;
    return la__on_ids(s, (La__ElementIds *)m);
  case LA__MSG_TYPE__MSG_REGISTER_REQUEST:
    if (!la__in_state(s, LA_SESS_NEW, "second registration")) return -1;
    la__on_register(s, (La__RegisterRequest *)m);
    if (s->state == LA_SESS_APP) /* registered: its own frame limit */
      la_conn_set_max_frame(c, (uint32_t)s->ag->set.max_frame);
    return 0;
  case LA__MSG_TYPE__MSG_DATA_READY:
    if (!la__in_state(s, LA_SESS_APP, "data-ready before registration"))
      return -1;
    return la__on_data_ready(s, (La__DataReady *)m);
  case LA__MSG_TYPE__MSG_FINALIZE:
    if (s->state != LA_SESS_APP) return -1;
    s->finalized = 1;
    return 0;
  case LA__MSG_TYPE__MSG_STATUS_REQUEST: {
    if (s->state == LA_SESS_NEW) s->state = LA_SESS_TOOL;
    if (s->state == LA_SESS_TOOL) /* idle timeout, from the last request */
      la_conn_set_deadline(&s->conn, (uint64_t)s->ag->set.idle_ms);
    s->ag->st.status_queries++;
    La__StatusReply *r = la_status_reply(s->ag);
    if (r) la__send(s, LA__MSG_TYPE__MSG_STATUS_REPLY, &r->base, 0);
    la_status_reply_free(r);
    return 0;
  }
  default:
    s->ag->st.bad_frames++;
    la_log_warnx("connection %s: unexpected %s: closing", s->conn.peer,
                 la_msg_name(type));
    return -1;
  }
}

void la_session_refused(la_agent_t *ag, const La__RankRefused *m) {
  la_session_t *s = ag->sessions;
  for (; s; s = s->next)
    if (s->ipc.hdr && s->start_seq == m->seq && s->rank == m->rank &&
        !strcmp(s->app_id, m->app_id))
      break;
  if (!s) {
    la_log_info("%s rank %u (RankStart %llu) refused by the GlobalAgent "
                "after it ended: %s", m->app_id, m->rank,
                (unsigned long long)m->seq, m->reason);
    return;
  }
  if (s->refused_upstream) return; /* told already (a resent RankStart) */
  __atomic_store_n(&s->refused_upstream, 1, __ATOMIC_RELEASE);
  ag->st.ranks_refused_upstream++;
  la_log_warnx("%s rank %u (pid %d) refused by the GlobalAgent: %s; its "
               "cycles are no longer shipped, the application is told",
               s->app_id, s->rank, s->pid, m->reason);
  if (s->conn.closing || s->refused) return; /* it is gone or going */
  /* told, and the connection left for libla to close once it read why
   * (closing it here could reset it under the Error while the
   * application's notifications are unread); its frames are ignored */
  s->refused = 1;
  La__Error e = LA__ERROR__INIT;
  e.code = m->code;
  e.message = m->reason;
  la_conn_send(&s->conn, LA__MSG_TYPE__MSG_ERROR, &e.base, 0);
}

static void la__sess_bad(la_conn_t *c, const char *why) {
  la_session_t *s = (la_session_t *)c;
  s->ag->st.bad_frames++;
  la_log_warnx("connection %s: %s: closing", c->peer, why);
}

static void la__sess_deadline(la_conn_t *c) {
  la_session_t *s = (la_session_t *)c;
  if (s->state == LA_SESS_TOOL) {
    s->ag->st.conns_timed_out++;
    la_log_info("tool connection %s idle for %lld ms: closing", c->peer,
                (long long)s->ag->set.idle_ms);
    la_conn_close(c, "idle timeout");
    return;
  }
  if (s->state == LA_SESS_APP && s->ids) { /* its ids stopped coming */
    s->ag->st.conns_timed_out++;
    la__app_error(s, "element ids: %llu of %llu received, none for %lld ms "
                  "(agent.handshake_timeout): registration dropped",
                  (unsigned long long)s->ids_got,
                  (unsigned long long)s->ipc.n_elements,
                  (long long)s->ag->set.handshake_ms);
    return;
  }
  if (s->state != LA_SESS_NEW) return;
  s->ag->st.conns_timed_out++;
  la_log_info("connection %s sent nothing useful within %lld ms: closing",
              c->peer, (long long)s->ag->set.handshake_ms);
  la_conn_close(c, "handshake timeout");
}

static const la_conn_ops_t la__ops = {
    .on_frame = la__sess_frame,
    .on_bad = la__sess_bad,
    .on_deadline = la__sess_deadline,
    .on_close = la__sess_close,
    .on_free = la__sess_free,
};

/* la_conn_admission_t.refuse: whether the peer's user already holds its
 * share of the connections that are not registered applications (those
 * are bounded by max_apps). */
static const char *la__uid_over_cap(la_conn_t *c) {
  static la_ratelimit_t rl; /* this file's: refusal log lines */
  la_session_t *s = (la_session_t *)c;
  la_agent_t *ag = s->ag;
  int fd = la_conn_fd(c);
  c->key = fd >= 0 ? la_peer_uid_fast(fd) : -1;
  int n = la__uid_sessions(s, 0);
  if (!la_conn_share_full(n, ag->set.max_per_uid, &ag->st.conns_refused, &rl,
                          "connection %s of uid %ld refused: the user has %d "
                          "open (max_connections_per_uid = %lld)",
                          c->peer, c->key, n, (long long)ag->set.max_per_uid))
    return NULL;
  return "too many connections of this user";
}

/* la_conn_admission_t.on_new: a session of ag, in its list. */
static void la__sess_new(la_conn_t *c, void *owner) {
  la_session_t *s = (la_session_t *)c;
  s->ag = owner;
  s->ipc.shm_id = s->ipc.sem_id = -1;
  LA_CONN_LIST_PUSH(s->ag->sessions, s);
  s->ag->n_conns++;
}

void la_session_accept(la_agent_t *ag, uv_stream_t *server) {
  const la_conn_admission_t adm = {
      .size = sizeof(la_session_t),
      .max_frame = (uint32_t)ag->set.handshake_max_frame,
      .max_output = (size_t)ag->set.max_output,
      .deadline_ms = (uint64_t)ag->set.handshake_ms,
      .on_new = la__sess_new,
      .refuse = la__uid_over_cap,
  };
  if (la_conn_admit(ag->loop, server, &la__ops, &adm, ag))
    ag->st.conns_accepted++;
}
