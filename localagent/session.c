/* session.c: one connection to the LocalAgent.
 *
 * A connection starts NEW and must, within handshake_timeout, either register
 * an application process (RegService: it becomes APP) or ask for the status
 * (a tool: TOOL). An APP connection then sends one-way DataReady
 * notifications (DXService), each handed to a worker job, and Finalize; its
 * close — whatever the reason, including the process being killed — is the
 * death notice: once the session's jobs are done, the application's IPC
 * objects are removed and RankEnd goes upstream. A malformed or unexpected
 * frame closes only this connection, with a log line saying why.
 *
 * Memory is freed from the close callbacks, never inside the connection's
 * own read callback. This file knows the protocol; it leaves sockets'
 * accepting to listener.c and buffer reading to worker.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "la_log.h"

typedef struct {
  uv_write_t req;
  la_session_t *s;
  int close_after;
  size_t len;
  uint8_t data[];
} la__wr_t;

static uint64_t la__realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

la_session_t *la_session_new(la_agent_t *ag) {
  la_session_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->ag = ag;
  s->ipc.shm_id = s->ipc.sem_id = -1;
  uv_tcp_init(ag->loop, &s->tcp);
  uv_timer_init(ag->loop, &s->timer);
  s->tcp.data = s->timer.data = s;
  s->handles_open = 2;
  la_frame_reader_init(&s->rd, (uint32_t)ag->set.max_frame);
  s->next = ag->sessions;
  if (ag->sessions) ag->sessions->prev = s;
  ag->sessions = s;
  ag->n_conns++;
  snprintf(s->peer, sizeof s->peer, "?");
  return s;
}

/* Frees the session once its handles are closed and its jobs done. */
static void la__maybe_free(la_session_t *s) {
  if (s->handles_open > 0 || s->jobs > 0) return;
  la_agent_t *ag = s->ag;
  if (s->state == LA_SESS_CLOSING && s->ipc.hdr) {
    /* The application is gone or finished: its IPC objects go with it. */
    la_app_ipc_release(&s->ipc);
    La__RankEnd e = LA__RANK_END__INIT;
    e.app_id = s->app_id;
    e.rank = s->rank;
    e.reason = (char *)(s->end_reason ? s->end_reason : "disconnected");
    e.has_cycles = e.has_skipped = e.has_t_end_ns = 1;
    e.cycles = s->cycles;
    e.skipped = s->skipped;
    e.t_end_ns = la__realtime_ns();
    la_uplink_send(ag, LA__MSG_TYPE__MSG_RANK_END, &e.base, &e.seq);
    ag->n_apps--;
    ag->st.apps_ended++;
    la_log_info("%s rank %u ended (%s): %llu cycles, %llu skipped by the "
                "application", s->app_id, s->rank, e.reason,
                (unsigned long long)s->cycles,
                (unsigned long long)s->skipped);
  }
  if (s->prev) s->prev->next = s->next;
  else ag->sessions = s->next;
  if (s->next) s->next->prev = s->prev;
  ag->n_conns--;
  la_frame_reader_free(&s->rd);
  free(s);
  la_agent_check_drained(ag);
}

static void la__on_handle_closed(uv_handle_t *h) {
  la_session_t *s = h->data;
  s->handles_open--;
  la__maybe_free(s);
}

void la_session_close(la_session_t *s, const char *reason) {
  if (s->state == LA_SESS_CLOSING) return;
  int was_app = s->state == LA_SESS_APP;
  s->state = LA_SESS_CLOSING;
  if (was_app) s->end_reason = s->finalized ? "finalize" : reason;
  uv_read_stop((uv_stream_t *)&s->tcp);
  uv_close((uv_handle_t *)&s->tcp, la__on_handle_closed);
  uv_close((uv_handle_t *)&s->timer, la__on_handle_closed);
}

void la_session_job_done(la_session_t *s) {
  s->jobs--;
  la__maybe_free(s);
}

static void la__on_write(uv_write_t *req, int status) {
  la__wr_t *w = (la__wr_t *)req;
  la_session_t *s = w->s;
  if (w->close_after || status < 0) la_session_close(s, "write failed");
  free(w);
}

/* Sends one message; close_after closes the connection once it is out. */
static void la__send(la_session_t *s, uint16_t type, const ProtobufCMessage *m,
                     int close_after) {
  size_t n = la_frame_size(m);
  la__wr_t *w = malloc(sizeof *w + n);
  if (!w) {
    la_session_close(s, "out of memory");
    return;
  }
  w->s = s;
  w->close_after = close_after;
  w->len = (size_t)la_frame_pack_into(type, m, w->data, n);
  uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->len);
  if (uv_write(&w->req, (uv_stream_t *)&s->tcp, &b, 1, la__on_write) != 0) {
    free(w);
    la_session_close(s, "write failed");
  }
}

static void la__refuse(la_session_t *s, const char *why) {
  La__RegisterReply r = LA__REGISTER_REPLY__INIT;
  r.status = LA_EREFUSED;
  r.message = (char *)why;
  r.agent_version = LA_AGENT_VERSION;
  s->ag->st.regs_refused++;
  la_log_warnx("registration from %s refused: %s", s->peer, why);
  la__send(s, LA__MSG_TYPE__MSG_REGISTER_REPLY, &r.base, 1);
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
  if (r->n_elements > ag->set.max_elements) {
    snprintf(why, sizeof why, "%llu elements exceed max_elements = %llu",
             (unsigned long long)r->n_elements,
             (unsigned long long)ag->set.max_elements);
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
  int fd = -1;
  uv_fileno((uv_handle_t *)&s->tcp, &fd);
  int peer_uid = fd >= 0 ? la_peer_uid(fd) : -1;
  char reason[200];
  if (la_app_ipc_attach(&s->ipc, r->shm_id, r->sem_id, r->pid, r->nonce,
                        r->n_elements, r->n_buffers, peer_uid, reason,
                        sizeof reason) != 0)
    return la__refuse(s, reason);
  s->state = LA_SESS_APP;
  uv_timer_stop(&s->timer);
  snprintf(s->app_id, sizeof s->app_id, "%s", r->app_id);
  s->rank = r->rank;
  s->nprocs = r->nprocs;
  s->pid = r->pid;
  ag->n_apps++;
  ag->st.regs++;

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
  st.t_start_ns = la__realtime_ns();
  la_uplink_send(ag, LA__MSG_TYPE__MSG_RANK_START, &st.base, &st.seq);
  char spec[80] = "";
  la_compact_spec_format(&s->cp, spec, sizeof spec);
  la_log_info("registered %s rank %u/%u (pid %d, %llu elements, %s, %s) "
              "from %s", s->app_id, s->rank, s->nprocs, s->pid,
              (unsigned long long)r->n_elements, r->metric, spec, s->peer);
}

static int la__on_data_ready(la_session_t *s, const La__DataReady *d) {
  if (d->buffer >= s->ipc.n_buffers) {
    la_log_warnx("%s rank %u: data-ready for buffer %u of %u: closing",
                 s->app_id, s->rank, d->buffer, s->ipc.n_buffers);
    return -1;
  }
  if (s->busy & (1u << d->buffer)) {
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
  if (d->has_waits && d->waits > s->waits) {
    s->ag->st.app_waits += d->waits - s->waits;
    s->waits = d->waits;
  }
  if (la_worker_submit(s, d->buffer, d->cycle_tag, d->seq, d->t_xfer_ns) != 0) {
    s->ag->st.cycles_dropped++;
    la_log_warnx("%s rank %u: cycle %llu dropped: out of memory", s->app_id,
                 s->rank, (unsigned long long)d->cycle_tag);
  }
  return 0;
}

/* Handles one frame. Returns -1 to close the connection. */
static int la__on_frame(la_session_t *s, uint16_t type, const uint8_t *p,
                        uint32_t len) {
  ProtobufCMessage *m = NULL;
  char why[240];
  if (la_msg_decode(type, p, len, &m, why, sizeof why) != 0) {
    s->ag->st.bad_frames++;
    la_log_warnx("connection %s: %s: closing", s->peer, why);
    return -1;
  }
  int rc = 0;
  switch (type) {
  case LA__MSG_TYPE__MSG_REGISTER_REQUEST:
    if (s->state != LA_SESS_NEW) {
      la_log_warnx("connection %s: second registration: closing", s->peer);
      rc = -1;
    } else {
      la__on_register(s, (La__RegisterRequest *)m);
    }
    break;
  case LA__MSG_TYPE__MSG_DATA_READY:
    if (s->state != LA_SESS_APP) {
      la_log_warnx("connection %s: data-ready before registration: closing",
                   s->peer);
      rc = -1;
    } else {
      rc = la__on_data_ready(s, (La__DataReady *)m);
    }
    break;
  case LA__MSG_TYPE__MSG_FINALIZE:
    if (s->state == LA_SESS_APP) s->finalized = 1;
    else rc = -1;
    break;
  case LA__MSG_TYPE__MSG_STATUS_REQUEST: {
    if (s->state == LA_SESS_NEW) {
      s->state = LA_SESS_TOOL;
      uv_timer_stop(&s->timer);
    }
    s->ag->st.status_queries++;
    La__StatusReply *r = la_status_reply(s->ag);
    if (r) la__send(s, LA__MSG_TYPE__MSG_STATUS_REPLY, &r->base, 0);
    la_status_reply_free(r);
    break;
  }
  default:
    s->ag->st.bad_frames++;
    la_log_warnx("connection %s: unexpected %s: closing", s->peer,
                 la_msg_name(type));
    rc = -1;
  }
  la_msg_free(m);
  return rc;
}

static void la__alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  size_t n = suggested < 65536 ? suggested : 65536;
  buf->base = malloc(n);
  buf->len = buf->base ? n : 0;
}

static void la__on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  la_session_t *s = st->data;
  if (nread < 0) {
    free(buf->base);
    la_session_close(s, nread == UV_EOF ? "disconnected" : "connection error");
    return;
  }
  if (nread == 0 || s->state == LA_SESS_CLOSING) {
    free(buf->base);
    return;
  }
  int rc = la_frame_reader_feed(&s->rd, buf->base, (size_t)nread);
  free(buf->base);
  uint16_t type;
  const uint8_t *p;
  uint32_t len;
  while (rc == 0 && s->state != LA_SESS_CLOSING &&
         (rc = la_frame_reader_next(&s->rd, &type, &p, &len)) == 1) {
    rc = la__on_frame(s, type, p, len) == 0 ? 0 : -1000;
  }
  if (rc < 0 && rc != -1000 && s->state != LA_SESS_CLOSING) {
    s->ag->st.bad_frames++;
    la_log_warnx("connection %s: %s: closing", s->peer,
                 rc == LA_EMSGSIZE ? "frame larger than max_frame"
                                   : "malformed frame header");
  }
  if (rc < 0) la_session_close(s, "protocol error");
}

static void la__on_timeout(uv_timer_t *t) {
  la_session_t *s = t->data;
  if (s->state != LA_SESS_NEW) return;
  s->ag->st.conns_timed_out++;
  la_log_info("connection %s sent nothing useful within %lld ms: closing",
              s->peer, (long long)s->ag->set.handshake_ms);
  la_session_close(s, "handshake timeout");
}

void la_session_start(la_session_t *s) {
  struct sockaddr_storage a;
  int al = sizeof a;
  if (uv_tcp_getpeername(&s->tcp, (struct sockaddr *)&a, &al) == 0) {
    char ip[48] = "?";
    int port = 0;
    if (a.ss_family == AF_INET) {
      uv_ip4_name((struct sockaddr_in *)&a, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in *)&a)->sin_port);
    } else if (a.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&a, ip, sizeof ip);
      port = ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    }
    snprintf(s->peer, sizeof s->peer, "%s:%d", ip, port);
  }
  uv_tcp_nodelay(&s->tcp, 1);
  uv_timer_start(&s->timer, la__on_timeout, (uint64_t)s->ag->set.handshake_ms,
                 0);
  uv_read_start((uv_stream_t *)&s->tcp, la__alloc, la__on_read);
}
