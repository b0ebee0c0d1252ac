/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_uplink.h: many simulated LocalAgents driving a real GlobalAgent
 * at full speed, for the benchmarks (bench_globalagent, bench_scale).
 *
 * la_test_link.h sends one message and waits for its Ack, as tests want;
 * a benchmark instead keeps a window of messages unacknowledged on each of
 * many connections from one poll loop. A la_tu_conn_t is one LocalAgent's
 * uplink: the real handshake (mutual proof of the secret and encrypted
 * records, la_secure_io.h, when secure; the one-way Hello/Challenge/Auth
 * against a GlobalAgent without a secret), then frames with consecutive
 * link sequence numbers, sealed as the LocalAgent seals them. la_tu_ga_t
 * starts la-globalagent (la_test_daemon.h) with a fresh secret and store.
 * The /proc readers give a process's CPU time and resident memory.
 * Functions return 0 or -1. Test and benchmark use only.
 */
#ifndef LA_TEST_UPLINK_H
#define LA_TEST_UPLINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "la_auth.h"
#include "la_codec.h"
#include "la_compact.h"
#include "la_secure.h"
#include "la_test_daemon.h"

/* A GlobalAgent started for a benchmark. */
typedef struct la_tu_ga {
  la_test_daemon_t *d;
  char key[600]; /* the secret file */
  uint16_t agents_port;
  char agents_addr[64], feed_addr[64];
} la_tu_ga_t;

/* Starts la-globalagent on ephemeral loopback ports with a fresh store,
 * store.fsync as given, a fresh secret file g->key (required of LocalAgents
 * only when secret), log level
 * error, stitch.timeout 60s, then extra (NULL-terminated, may be NULL)
 * options. Waits up to timeout_ms for both ports. 0 or -1 (g->d may then
 * be set: la_td_free it). */
int la_tu_ga_start(la_tu_ga_t *g, int fsync, int secret,
                   const char *const *extra, int timeout_ms);
/* Stops g's GlobalAgent (SIGTERM: it commits what it received) and starts
 * it again on the same store and secret, with the same arguments as
 * la_tu_ga_start; g's ports are the new ones. 0 or -1. */
int la_tu_ga_restart(la_tu_ga_t *g, int fsync, int secret,
                     const char *const *extra, int timeout_ms);

/* One simulated LocalAgent connection. */
typedef struct la_tu_conn {
  int fd;
  uint64_t seq;   /* last sent */
  uint64_t acked; /* last acknowledged */
  la_frame_reader_t rd;
  uint8_t *buf; /* frame being built (cap bytes) */
  size_t cap;
  int secure; /* frames travel as records */
  la_secure_t sec;
  uint8_t *rec; /* record being built */
} la_tu_conn_t;

/* Sets c to no connection (fd -1), secure as given: call before open. */
void la_tu_init(la_tu_conn_t *c, int secure);

/* Connects to 127.0.0.1:port, authenticates as host with k (mutually and
 * then encrypted when c->secure), and allocates frames of up to max_frame
 * bytes. c->seq continues from the GlobalAgent's next sequence number. */
int la_tu_open(la_tu_conn_t *c, uint16_t port, const la_auth_key_t *k,
               const char *host, size_t max_frame, int timeout_ms);

/* Closes and frees c (la_tu_init state again; idempotent). */
void la_tu_close(la_tu_conn_t *c);

/* Frames m (sealed when secure) and writes it, waiting up to timeout_ms.
 * The caller set m's seq (++c->seq). */
int la_tu_send(la_tu_conn_t *c, uint16_t type, const ProtobufCMessage *m,
               int timeout_ms);

/* Sends the RankStart of app rank (nprocs ranks, n elements each, metric
 * "time" in ns, LocalAgent host) with the next sequence number. */
int la_tu_send_rank_start(la_tu_conn_t *c, const char *app, uint32_t rank,
                          uint32_t nprocs, uint64_t n, const char *host,
                          int timeout_ms);

/* Sends the CompactTrace of app rank cycle (n elements) from r
 * (la_trace_msg.h), with the next sequence number, t_xfer_ns now
 * (CLOCK_REALTIME) and rank_seq = cycle. */
int la_tu_send_trace(la_tu_conn_t *c, const char *app, uint32_t rank,
                     uint64_t cycle, uint64_t n, const la_compact_result_t *r,
                     int timeout_ms);

/* Frames built ahead of their sending, back to back: frame k is
 * p[end[k-1]..end[k]) (end[-1] = 0). A load generator builds and seals
 * its traces before it is timed, so that its own cost while timed is the
 * writes. Zero it before the first use. */
typedef struct la_tu_batch {
  uint8_t *p;
  size_t len, cap;
  size_t *end;
  uint32_t n, ncap;
} la_tu_batch_t;

/* Appends to b the frame la_tu_send_trace would write now (the next
 * sequence number of c, sealed in c's order: b's frames must be written
 * in order, before anything else is sent on c). t_xfer_ns is now. rr, when
 * not NULL, is the trace's robust weights (what a LocalAgent sends with
 * the wall-time metric: compacted in r's mode over n points). */
int la_tu_batch_trace(la_tu_conn_t *c, la_tu_batch_t *b, const char *app,
                      uint32_t rank, uint64_t cycle, uint64_t n,
                      const la_compact_result_t *r,
                      const la_compact_result_t *rr);

/* Empties b, keeping its memory. */
void la_tu_batch_reset(la_tu_batch_t *b);

/* Frees b (zeroed again). */
void la_tu_batch_free(la_tu_batch_t *b);

/* Reads what arrived on c without blocking and updates c->acked. -1 on a
 * closed connection or anything but an Ack. */
int la_tu_read_acks(la_tu_conn_t *c);

/* Waits up to timeout_ms (each) for Acks until all c sent is acknowledged.
 * -1 when none comes or anything else does (la_tu_read_acks). */
int la_tu_wait_acked(la_tu_conn_t *c, int timeout_ms);

/* The number after "field:" in /proc/PID/file (file "status": VmHWM,
 * VmRSS in KiB; "io": wchar, bytes written), or -1. */
long long la_tu_proc_field(pid_t pid, const char *file, const char *field);

/* pid's peak resident set (VmHWM) and current one (VmRSS) in KiB, or -1. */
long la_tu_proc_kib(pid_t pid, const char *field);

#endif /* LA_TEST_UPLINK_H */
