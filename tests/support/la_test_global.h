/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_global.h: a small GlobalAgent stand-in for the LocalAgent's tests.
 *
 * It exists for what the real la-globalagent cannot be made to do or to
 * tell: withhold, batch or delay its Acks (set_ack, set_ack_delay); crash
 * while keeping what it stored, then listen again on the same port
 * (kill, revive); drop every connection at will; refuse a handshake on
 * demand; and count what its store does not keep: copies received twice,
 * seq order per connection, traces before their RankStart. Plain delivery
 * is the real GlobalAgent's job (la_test_stack.h); la_test_global.c says
 * which tests may use this stand-in.
 * Frames, the handshake and the records' checks are the real code
 * (la_codec, la_auth, la_secure_io); the listener, the fork guard and the
 * bounded waits are shared with la_test_peer (la_test_serve.h).
 *
 * A thread inside the test process listens on 127.0.0.1 (an ephemeral port,
 * or a given one) and speaks the GlobalAgent's side of the uplink protocol
 * for real (docs/protocol.md, "LocalAgent <-> GlobalAgent"): it reads Hello
 * (protocol version checked), sends a Challenge, verifies the Auth MAC with
 * la_auth against a secret file (or accepts any MAC when given none), answers
 * AuthResult (a LocalAgent whose Hello offers a nonce gets the mutual
 * handshake and encrypted records instead, with the server name
 * "test-global"), then records every RankStart, CompactTrace and RankEnd and
 * acknowledges them with cumulative Acks, as configured (each message, in
 * batches, late, or never). Records are deduplicated like the real store:
 * traces by (app_id, rank, cycle_tag), rank starts and ends by (app_id,
 * rank); duplicates are counted, not stored, so tests can assert "nothing
 * missing, nothing duplicated". A bad frame, an unexpected message or a
 * failed handshake closes that connection only.
 *
 * The "store" outlives the network side: la_test_global_kill() closes the
 * listener and every connection as if the agent had crashed, keeping the
 * records; la_test_global_revive() listens again on the same port. Not a
 * daemon: one thread, no limits beyond 64 connections, test use only. Every
 * function is thread-safe; records returned are immutable and stay valid
 * until la_test_global_stop().
 */
#ifndef LA_TEST_GLOBAL_H
#define LA_TEST_GLOBAL_H

#include <stddef.h>
#include <stdint.h>

#define LA_TG_ID_LEN 129 /* LA_MAX_ID_LEN + 1 */

/* One stored compact trace (the first copy that arrived). */
typedef struct la_tg_trace {
  int conn;                /* connection number, from 0 */
  char host[LA_TG_ID_LEN]; /* from that connection's Hello */
  char app_id[LA_TG_ID_LEN];
  uint32_t rank;
  uint64_t cycle_tag, seq, n_elements;
  int mode;          /* La__CompactMode */
  uint8_t *segments; /* segments_len bytes, copied */
  size_t segments_len;
  size_t wire_bytes; /* every encoding it carried: measured, robust and
                        each channel's (their lengths only) */
  int has_robust;    /* it carried robust weights */
  uint64_t count; /* exact statistics */
  double sum, min, max;
  int has_error; /* FitError present */
  double max_abs, rmse, cv;
  uint64_t t_xfer_ns, rank_seq;
} la_tg_trace_t;

typedef struct la_tg_rank_start {
  int conn;
  char host[LA_TG_ID_LEN];
  char app_id[LA_TG_ID_LEN], app_name[LA_TG_ID_LEN], metric[LA_TG_ID_LEN];
  char unit[LA_TG_ID_LEN];
  uint32_t rank, nprocs, period;
  uint64_t seq, n_elements;
  int32_t pid;
  int compact_mode; /* -1 when RankStart had no CompactParams */
} la_tg_rank_start_t;

typedef struct la_tg_rank_end {
  int conn;
  char host[LA_TG_ID_LEN];
  char app_id[LA_TG_ID_LEN];
  char reason[257]; /* "" when absent */
  uint32_t rank;
  uint64_t seq, cycles, skipped;
} la_tg_rank_end_t;

/* Counters, for la_test_global_count() and la_test_global_wait(). */
typedef enum la_tg_counter {
  LA_TG_TRACES,          /* unique traces stored */
  LA_TG_DUPLICATES,      /* traces received again (not stored again) */
  LA_TG_RANK_STARTS,     /* unique (app_id, rank) RankStarts */
  LA_TG_RANK_ENDS,       /* unique (app_id, rank) RankEnds */
  LA_TG_RANK_DUPLICATES, /* RankStarts and RankEnds received again */
  LA_TG_MESSAGES,        /* RankStart+CompactTrace+RankEnd frames received */
  LA_TG_ORPHANS,         /* traces stored before their rank's RankStart */
  LA_TG_SEQ_ERRORS,      /* messages whose seq did not exceed the previous
                            one on the same connection */
  LA_TG_MAX_SEQ,         /* highest seq stored (0 if none) */
  LA_TG_ACKS,            /* Ack frames sent */
  LA_TG_LAST_ACK,        /* seq of the last Ack sent */
  LA_TG_AUTH_OK,         /* handshakes that succeeded */
  LA_TG_AUTH_FAILURES,   /* Auth refused (MAC mismatch or forced refusal) */
  LA_TG_PROTOCOL_ERRORS, /* connections closed for a bad frame, a bad
                            version, an unexpected message or a timeout */
  LA_TG_CONNECTIONS,     /* connections accepted */
  LA_TG_CLOSED,          /* connections closed, by either side */
  LA_TG_MISSING,         /* TraceMissing messages received (acked, counted
                            only) */
  LA_TG_NCOUNTERS
} la_tg_counter_t;

typedef struct la_test_global la_test_global_t;

/* Starts listening on 127.0.0.1:port (0: an ephemeral port) and serving.
 * key_path names the shared secret file (la_auth_load_key rules); NULL
 * accepts any MAC of a valid length. Returns NULL on failure (port taken,
 * secret file refused: the reason goes to stderr). */
la_test_global_t *la_test_global_start(uint16_t port, const char *key_path);
uint16_t la_test_global_port(const la_test_global_t *g);
/* "127.0.0.1:PORT", for the LocalAgent's configuration. */
const char *la_test_global_addr(const la_test_global_t *g);

/* Acknowledgement policy. every: 0 never acks; 1 acks each message (the
 * default); N > 1 acks after N messages, or when the oldest unacknowledged
 * message is 50 ms old. delay_ms > 0 holds every Ack until the oldest
 * unacknowledged message is that old (then acks all of them at once). Acks
 * are cumulative: Ack{seq} of the last message stored on that connection.
 * A change applies to messages already waiting. */
void la_test_global_set_ack(la_test_global_t *g, int every);
void la_test_global_set_ack_delay(la_test_global_t *g, int delay_ms);
/* on: refuse every Auth as if the secret were wrong (default off). */
void la_test_global_set_refuse_auth(la_test_global_t *g, int on);
/* Replaces the secret (NULL: accept any MAC) for later handshakes. Returns 0
 * or the la_auth_load_key error (the old key stays). */
/* on: every CompactTrace is answered with an Error and the connection
 * closed, as a GlobalAgent does with a frame it cannot take. */
void la_test_global_set_refuse_traces(la_test_global_t *g, int on);
int la_test_global_set_key(la_test_global_t *g, const char *key_path);

/* Value of a counter. */
uint64_t la_test_global_count(la_test_global_t *g, la_tg_counter_t what);
/* Waits until counter what is at least n. Returns 0, or -1 on timeout. */
int la_test_global_wait(la_test_global_t *g, la_tg_counter_t what, uint64_t n,
                        int timeout_ms);
/* Shorthands of the two above. */
int la_test_global_wait_traces(la_test_global_t *g, size_t n_unique,
                               int timeout_ms);
size_t la_test_global_ntraces(la_test_global_t *g);
size_t la_test_global_duplicates(la_test_global_t *g);
int la_test_global_rank_starts(la_test_global_t *g);
int la_test_global_rank_ends(la_test_global_t *g);
int la_test_global_auth_failures(la_test_global_t *g);
uint64_t la_test_global_max_seq(la_test_global_t *g);

/* Unique trace i in arrival order, or NULL when i is out of range. */
const la_tg_trace_t *la_test_global_trace(la_test_global_t *g, size_t i);
/* The stored trace with that key, or NULL. */
const la_tg_trace_t *la_test_global_find(la_test_global_t *g,
                                         const char *app_id, uint32_t rank,
                                         uint64_t cycle_tag);
/* Unique rank starts / ends i in arrival order, or NULL. */
const la_tg_rank_start_t *la_test_global_rank_start(la_test_global_t *g,
                                                    size_t i);
const la_tg_rank_end_t *la_test_global_rank_end(la_test_global_t *g, size_t i);
/* Copies the reason given to the last refused handshake ("" if none). */
void la_test_global_last_refusal(la_test_global_t *g, char *buf, size_t len);

/* Closes every connection but keeps listening (a network blip). */
void la_test_global_drop_connections(la_test_global_t *g);
/* Closes the listener and every connection at once, as if the GlobalAgent
 * crashed; records and counters are kept. Idempotent. */
void la_test_global_kill(la_test_global_t *g);
/* After a kill: listens again on the same port (SO_REUSEADDR) with the same
 * settings and records. Returns 0, or -1 if the port cannot be bound (a
 * test holds it meanwhile with la_td_hold_port, released just before). */
int la_test_global_revive(la_test_global_t *g);
/* Kills if needed and frees everything, records included. NULL is ignored. */
void la_test_global_stop(la_test_global_t *g);

#endif /* LA_TEST_GLOBAL_H */
