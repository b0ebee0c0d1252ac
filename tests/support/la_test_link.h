/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_link.h: a LocalAgent played by hand against the real GlobalAgent.
 *
 * Tests that must send the GlobalAgent what a real LocalAgent never sends
 * (corrupt encodings, traces of unknown ranks, replays) open the agents'
 * link themselves: the real handshake (la_secure_io.h: mutual proof of the
 * secret, then encrypted records), then RankStart and CompactTrace messages
 * with consecutive link sequence numbers, then they wait for the Acks.
 * Everything else (the handshake, framing, sealing) is the production code.
 * Functions return 0 or a negative LA_E* code with the reason in why.
 * Test use only.
 */
#ifndef LA_TEST_LINK_H
#define LA_TEST_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "la.pb-c.h"
#include "la_compact.h"
#include "la_secure.h"

typedef struct la_test_link {
  int fd;
  uint64_t seq;    /* last link sequence number sent */
  la_secure_t sec; /* the link's records, after the handshake */
  /* RankRefused messages read by la_test_link_wait_acked: how many, and
   * the last one's RankStart seq, rank and reason */
  int refusals;
  uint64_t refused_seq;
  uint32_t refused_rank;
  char refused_reason[300];
} la_test_link_t;

/* Connects to the GlobalAgent's agents port on loopback as LocalAgent host
 * and runs the handshake with the secret file key_path. *status gets the
 * AuthResult status (0: accepted); on acceptance l->seq continues from the
 * GlobalAgent's next expected sequence number. */
int la_test_link_open(la_test_link_t *l, uint16_t port, const char *key_path,
                      const char *host, int timeout_ms, int32_t *status,
                      char *why, size_t n);

/* The same, offering the ciphers of pref (la_cipher.h; LA_CIPHER_LEGACY:
 * the handshake of a LocalAgent before cipher negotiation); l->sec.cipher
 * tells the one chosen. */
int la_test_link_open_cipher(la_test_link_t *l, uint16_t port,
                             const char *key_path, const char *host,
                             la_cipher_pref_t pref, int timeout_ms,
                             int32_t *status, char *why, size_t n);

/* Sends a RankStart of app_id rank (nprocs ranks, n elements) filled as
 * la_test_rank_start fills it, but with metric "custom" in "user" units and
 * naming host as its LocalAgent. */
int la_test_link_rank_start(la_test_link_t *l, const char *host,
                            const char *app_id, uint32_t rank, uint32_t nprocs,
                            uint64_t n);

/* The same, saying the rank's owner uid (RankStart.owner_uid) unless uid
 * is negative. */
int la_test_link_rank_start_uid(la_test_link_t *l, const char *host,
                                const char *app_id, uint32_t rank,
                                uint32_t nprocs, uint64_t n, long uid);

/* Sends the CompactTrace of cycle tag of app_id rank: the payload fields
 * from r (la_trace_msg.h), the encoding replaced by bytes[0..len) when
 * bytes is not NULL. */
int la_test_link_trace(la_test_link_t *l, const char *app_id, uint32_t rank,
                       uint64_t tag, const la_compact_result_t *r,
                       const uint8_t *bytes, size_t len);

/* Sends the RankEnd of app_id rank (reason "finalize"). */
int la_test_link_rank_end(la_test_link_t *l, const char *app_id,
                          uint32_t rank);

/* Sends t as it is (any field, valid or not), with the next link sequence
 * number. */
int la_test_link_send_trace(la_test_link_t *l, La__CompactTrace *t);

/* Reads Acks until every sequence number sent is acknowledged (a refused
 * trace is acknowledged too); a RankRefused meanwhile is counted and kept
 * in l (refusals, refused_*). LA_EPROTO when anything else arrives,
 * LA_ETIMEDOUT after timeout_ms. */
int la_test_link_wait_acked(la_test_link_t *l, int timeout_ms, char *why,
                            size_t n);

/* Closes the connection. */
void la_test_link_close(la_test_link_t *l);

#endif /* LA_TEST_LINK_H */
