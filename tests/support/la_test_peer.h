/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_peer.h: a LocalAgent stand-in, for the faults the real
 * la-localagent cannot be made to show. It exists for:
 *   - an agent that holds the application's buffers, for a while or until
 *     told (libla's wait and skip policies, the wait's time limit:
 *     test_libla);
 *   - an agent that dies while holding them, leaving the IPC clean-up to
 *     libla alone (the wait must notice: test_libla);
 *   - an agent older than the shared-memory layout libla writes, which
 *     refuses it (libla's fallback to layout 3: test_injob_weights).
 * Everything a real agent can do is tested against the real one
 * (la_test_agent.h, la_test_stack.h). bench_probe also uses it, as an agent
 * that costs the measured process nothing but a thread.
 *
 * A thread inside the test process listens on 127.0.0.1 (an ephemeral port)
 * and serves the application side of the LocalAgent protocol with the real
 * code: la_codec for the frames, the LocalAgent's own app_ipc.h to verify
 * and attach the registering process's segment and semaphore set, to take
 * each buffer on DataReady (copy, zero) and to give it back through the
 * semaphore; unless told otherwise it removes a process's IPC objects when
 * its connection closes, as the LocalAgent does. Not a daemon: one thread,
 * test use only.
 */
#ifndef LA_TEST_PEER_H
#define LA_TEST_PEER_H

#include <stddef.h>
#include <stdint.h>

/* A DataReady received. */
typedef struct la_peer_cycle {
  uint64_t tag;     /* the cycle tag */
  uint64_t skipped; /* cycles the application skipped so far */
} la_peer_cycle_t;

typedef struct la_test_peer la_test_peer_t;

/* Starts listening and serving. Returns NULL on failure. */
la_test_peer_t *la_test_peer_start(void);
/* "127.0.0.1:PORT", for LA_AGENT or LA_setAgent. */
const char *la_test_peer_addr(const la_test_peer_t *p);
/* Milliseconds to hold each buffer before giving it back; -1 holds them
 * until la_test_peer_release_all_wait (default 0). */
void la_test_peer_set_hold_ms(la_test_peer_t *p, int ms);
/* Refuses segments of a layout above `layout` (0: none refused) with the
 * words of an older agent's header check ("unsupported header version"),
 * as a LocalAgent that reads only that layout would. */
void la_test_peer_set_max_layout(la_test_peer_t *p, unsigned layout);
/* Whether closing a connection removes that process's IPC objects, as the
 * LocalAgent does (default 1). Off, tests see what libla alone removes. */
void la_test_peer_set_cleanup(la_test_peer_t *p, int on);
/* Gives back every buffer held so far and waits up to timeout_ms until the
 * semaphores are posted. Returns 0, or -1 on timeout. */
int la_test_peer_release_all_wait(la_test_peer_t *p, int timeout_ms);
/* The same for only the buffer of each connection's last cycle (if still
 * held): an agent that hands back a later cycle's buffer before earlier
 * ones (a cycle it was behind on, agent.max_backlog). */
int la_test_peer_release_last_wait(la_test_peer_t *p, int timeout_ms);
/* Waits until at least n cycles were received; 0 or -1 on timeout. */
int la_test_peer_wait_cycles(la_test_peer_t *p, size_t n, int timeout_ms);
/* Cycle i in arrival order, or NULL; valid until the next cycle arrives. */
const la_peer_cycle_t *la_test_peer_cycle(la_test_peer_t *p, size_t i);
/* Closes every connection and the listener, as if the agent died, but keeps
 * the recorded cycles readable; la_test_peer_stop frees them. */
void la_test_peer_kill(la_test_peer_t *p);
void la_test_peer_stop(la_test_peer_t *p);

#endif /* LA_TEST_PEER_H */
