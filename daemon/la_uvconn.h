/* SPDX-License-Identifier: BSD-3-Clause */
/* la_uvconn.h: one framed TCP connection on a libuv loop, for the daemons.
 *
 * Owns the socket and a deadline timer, reads frames (size checked before
 * allocation by la_frame_reader), decodes and validates each message and
 * hands it to the owner's on_frame (or, when the owner takes frames as
 * read, on_raw, pausing reading while it asks); writes frames, counting the
 * bytes not yet written and closing a peer that lets more than its output limit
 * pile up (every port gets the same bound on reply amplification); closes on
 * request or on any bad input, and calls on_free only once both handles
 * are closed and no hold remains — a connection is never freed inside its
 * own callback.
 * It knows framing, not the protocol: what a message means is the owner's,
 * and so is admission (which connections to keep); la_conn_admit runs the
 * steps every port takes a connection in by, and la_conn_share_full counts
 * and logs a refusal the same way everywhere.
 * Used by la-localagent (applications, tools) and la-globalagent
 * (LocalAgents, subscribers). libla does not link it.
 */
#ifndef LA_UVCONN_H
#define LA_UVCONN_H

#include <stdint.h>
#include <uv.h>

#include "la_codec.h"
#include "la_secure.h"

typedef struct la_conn la_conn_t;

typedef struct la_conn_ops {
  /* A decoded, validated message (freed by la_conn after the call). Return
   * 0 to go on, -1 to close the connection. */
  int (*on_frame)(la_conn_t *c, uint16_t type, ProtobufCMessage *msg);
  /* Bad input (garbage, oversized frame, invalid message): the connection
   * closes after this call; log why. May be NULL. */
  void (*on_bad)(la_conn_t *c, const char *why);
  /* The deadline set by la_conn_set_deadline passed. May be NULL (close). */
  void (*on_deadline)(la_conn_t *c);
  /* Called once, when the connection starts closing. May be NULL. */
  void (*on_close)(la_conn_t *c, const char *reason);
  /* Handles closed and no hold left: release the owner's state. */
  void (*on_free)(la_conn_t *c);
  /* A queued frame was written (out_bytes went down) and the connection
   * is not closing: the owner may queue more. May be NULL. */
  void (*on_written)(la_conn_t *c);
  /* A frame as read (type, payload valid during the call only; a record
   * still sealed), before la_conn opens or decodes it. Returns
   * LA_CONN_RAW_PASS to let la_conn open and decode it for on_frame,
   * LA_CONN_RAW_TAKEN when the owner took it (a copy), LA_CONN_RAW_PAUSE
   * when it took it and no more frames may come until la_conn_resume, or
   * -1 to close the connection. May be NULL (every frame to on_frame).
   * TAKEN and PAUSE may carry LA_CONN_RAW_IN_PLACE: the owner kept p
   * itself, not a copy; the buffer holding it is then handed to on_lent
   * before anything more is read into it. */
  int (*on_raw)(la_conn_t *c, uint16_t type, const uint8_t *p, uint32_t len);
  /* The buffer holding the frames on_raw kept in place since the last
   * call (la_frame_reader_give): the owner's, to free once it is done with
   * them; a frame kept at p is at buf + (p - was) (the read buffer itself,
   * buf == was, or after a short read a copy). Called at the end of the
   * drain that kept them, before more is read and before the connection
   * is freed. Needed when on_raw keeps frames in place. */
  void (*on_lent)(la_conn_t *c, uint8_t *buf, const uint8_t *was);
} la_conn_ops_t;

enum { LA_CONN_RAW_PASS = 0, LA_CONN_RAW_TAKEN = 1, LA_CONN_RAW_PAUSE = 2 };
#define LA_CONN_RAW_IN_PLACE 4 /* or'd with TAKEN or PAUSE */

struct la_conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  int handles_open;
  int holds;
  int closing;
  int lingering;       /* closing gracefully: see la_uvconn.c */
  size_t linger_bytes; /* discarded while lingering */
  uv_shutdown_t shut;
  size_t out_bytes; /* queued by la_conn_send, not yet written */
  size_t max_out;   /* output limit (la_conn_set_max_output); 0: none */
  la_frame_reader_t rd;
  char peer[64]; /* "ip:port" */
  char addr[48]; /* the peer's IP address alone ("?" if unknown) */
  long key;      /* the owner's admission key (e.g. a peer uid) */
  const la_conn_ops_t *ops;
  void *data;       /* the owner's */
  la_secure_t *sec; /* the owner's; set: frames travel as records */
  int paused;       /* on_raw asked for no more frames (la_conn_resume) */
};

/* Prepares c (embedded in the owner's struct) on loop. */
void la_conn_init(la_conn_t *c, uv_loop_t *loop, uint32_t max_frame,
                  const la_conn_ops_t *ops, void *data);
/* Accepts a pending connection from server and starts reading. Returns 0 or
 * a libuv error (then call la_conn_close). */
int la_conn_accept(la_conn_t *c, uv_stream_t *server);
/* Calls on_deadline after ms (0: cancels). */
void la_conn_set_deadline(la_conn_t *c, uint64_t ms);
/* Sets the largest frame payload accepted from now on (e.g. small before
 * the peer authenticated, larger after). A frame whose header is already
 * buffered is checked again against the new maximum. */
void la_conn_set_max_frame(la_conn_t *c, uint32_t max_payload);
/* Sets the output limit: la_conn_send closes the connection (logging the
 * peer and the reason) rather than let more than max bytes wait for a peer
 * that does not read. A single message is always queued when nothing else
 * waits, so the bound per connection is max(max, one message). 0: none. */
void la_conn_set_max_output(la_conn_t *c, size_t max);
/* Queues a message; close_after closes the connection once it is written,
 * gracefully: the peer reads the message even if it was still sending (see
 * la_uvconn.c on lingering).
 * Returns 0, or a negative LA_E* code (the connection is then closing):
 * LA_ELIMIT when the output limit would be passed. */
int la_conn_send(la_conn_t *c, uint16_t type, const ProtobufCMessage *m,
                 int close_after);
/* Queues a frame whose bytes are head (copied, at most
 * LA_CONN_REF_HEAD_MAX) followed by tail, written from where it is, not
 * copied: it must stay unchanged until release(ctx, arg) is called (on the
 * loop, once the write is done or failed). Frames in clear only: on a
 * secure link (records are sealed from a copy) LA_EINVAL and nothing is
 * queued. Returns 0, or a negative LA_E* code as la_conn_send; release is
 * called only after 0. */
#define LA_CONN_REF_HEAD_MAX 32
int la_conn_send_ref(la_conn_t *c, const uint8_t *head, size_t hlen,
                     const uint8_t *tail, size_t tlen,
                     void (*release)(void *ctx, void *arg), void *ctx,
                     void *arg);
/* From now on every frame sent is sealed with sec and every frame received
 * must be a record that sec opens (a clear frame or one that does not
 * authenticate is bad input). sec (owned by the caller) must outlive c; the
 * inner frame's payload stays bounded by max_frame. */
void la_conn_set_secure(la_conn_t *c, la_secure_t *sec);
/* Starts closing (idempotent). */
void la_conn_close(la_conn_t *c, const char *reason);
/* Bad input found by the owner outside on_frame (e.g. a record its worker
 * could not open): on_bad, then a graceful close, as for bad input la_conn
 * finds itself. */
void la_conn_bad(la_conn_t *c, const char *why);
/* Closes gracefully (as when on_frame returns -1: a reply queued before
 * still reaches the peer). */
void la_conn_end(la_conn_t *c, const char *reason);
/* After on_raw returned LA_CONN_RAW_PAUSE: hands the frames already read
 * to on_raw (or on_frame), then reads the socket again, unless on_raw
 * pauses again. Loop thread, outside the connection's own callbacks. */
void la_conn_resume(la_conn_t *c);
/* Holds keep the connection's memory alive (e.g. while a worker job uses
 * it) after the handles closed. */
void la_conn_hold(la_conn_t *c);
void la_conn_release(la_conn_t *c);
/* The file descriptor, or -1. */
int la_conn_fd(la_conn_t *c);

/* An owner's list of its connections: its structs (la_conn_t first) are
 * doubly linked through their own prev and next members from head. Push
 * in on_new, unlink in on_free. */
#define LA_CONN_LIST_PUSH(head, node) \
  do {                                \
    (node)->prev = NULL;              \
    (node)->next = (head);            \
    if (head) (head)->prev = (node);  \
    (head) = (node);                  \
  } while (0)
#define LA_CONN_LIST_UNLINK(head, node)                  \
  do {                                                   \
    if ((node)->prev)                                    \
      (node)->prev->next = (node)->next;                 \
    else                                                 \
      (head) = (node)->next;                             \
    if ((node)->next) (node)->next->prev = (node)->prev; \
  } while (0)

/* How la_conn_admit takes a pending connection in. */
typedef struct la_conn_admission {
  size_t size;          /* the owner's struct, la_conn_t its first member */
  uint32_t max_frame;   /* largest frame before the handshake */
  size_t max_output;    /* la_conn_set_max_output */
  uint64_t deadline_ms; /* the handshake deadline (la_conn_set_deadline) */
  /* Fills the owner's fields of the new connection (zeroed but for the
   * la_conn_t) and links it where on_close and on_free expect to find it.
   * Runs before anything can close it. */
  void (*on_new)(la_conn_t *c, void *owner);
  /* Once accepted (peer and addr known): NULL keeps the connection, else
   * the reason it is closed with; counting and logging the refusal is the
   * owner's (la_conn_share_full). May be NULL. */
  const char *(*refuse)(la_conn_t *c);
} la_conn_admission_t;

/* Takes the pending connection of server in: allocates adm->size zeroed
 * bytes, la_conn_init (data: the new struct), the output limit, on_new,
 * la_conn_accept, refuse, the handshake deadline. Returns the connection,
 * open and reading; or NULL when it is refused: without memory it is
 * accepted and closed at once (la_refuse_connection; on_new is not
 * called), after a failed accept or a refusal it is closing and on_close
 * and on_free run as for any other close. */
la_conn_t *la_conn_admit(uv_loop_t *loop, uv_stream_t *server,
                         const la_conn_ops_t *ops,
                         const la_conn_admission_t *adm, void *owner);

/* Binds and listens on "host:port" (port 0 = any free port). Fills bound
 * ("host:port" with the real port) and *port. Returns 0, or LA_ECONFIG /
 * LA_EIO with the reason in why. */
int la_listen(uv_loop_t *loop, uv_tcp_t *tcp, const char *addr,
              uv_connection_cb cb, char *bound, size_t bound_len,
              uint16_t *port, char *why, size_t why_len);

/* Starts handling SIGTERM, SIGINT and SIGHUP (sig[0..2]) with cb, each
 * handle's data set to data. */
void la_uv_signals(uv_loop_t *loop, uv_signal_t sig[3], uv_signal_cb cb,
                   void *data);

/* Accepts a pending connection and closes it at once (admission refused). */
void la_refuse_connection(uv_loop_t *loop, uv_stream_t *server);

/* Rate limit for log lines of floods: at most one line per interval. */
typedef struct la_ratelimit {
  uint64_t next_ms;    /* no line before this (monotonic ms) */
  uint64_t suppressed; /* events not logged since the last line */
} la_ratelimit_t;
/* Counts one event. Returns 1 when it may be logged now, with *missed set
 * to the events suppressed before it; 0 when it is suppressed. */
int la_ratelimit_ok(la_ratelimit_t *r, uint64_t interval_ms, uint64_t *missed);

/* A share of connections (a port's, a user's, an address's) is full when
 * held, the connections it has open, reached cap. Returns 0 when it is not;
 * otherwise adds 1 to *refused, logs the refusal as a warning at most once
 * a second per rl (the printf-style message, then "; N more refusals not
 * logged") and returns 1. The caller closes the connection. */
int la_conn_share_full(long long held, long long cap, uint64_t *refused,
                       la_ratelimit_t *rl, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
