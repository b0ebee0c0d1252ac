/* la_test_peer.h: a small LocalAgent stand-in, for faults the real
 * la-localagent cannot be made to show.
 *
 * It exists for: an agent that holds the application's buffers (for a
 * while, or until told: libla's wait and skip policies and the wait's time
 * limit, test_libla), an agent that dies while holding them (the wait must
 * notice, test_libla), and an agent whose closing connections leave the
 * IPC clean-up to libla alone. Everything a real agent can do is tested
 * against the real one (la_test_agent.h, la_test_stack.h). Still used as a
 * plain agent by test_examples and test_fortran, not yet moved.
 *
 * A thread inside the test process listens on 127.0.0.1 (ephemeral port) and
 * speaks the application side of the LocalAgent protocol for real: it attaches
 * the registering process's segment and semaphore set, checks them like the
 * agent does (creator pid, header, nonce), answers the registration, and on
 * each DataReady copies the buffer's values (times the buffer's scale), zeroes
 * the buffer and gives it back through the semaphore. Tests configure it to
 * refuse, to hold buffers (to exercise the wait and skip policies) or to die.
 * When a connection closes it removes that process's IPC objects, as the
 * LocalAgent does. Not a daemon: no limits, one thread, test use only.
 */
#ifndef LA_TEST_PEER_H
#define LA_TEST_PEER_H

#include <stddef.h>
#include <stdint.h>

typedef struct la_peer_cycle {
  int conn;          /* connection number, from 0 */
  int rank;
  uint64_t tag, seq;
  uint64_t n;
  double *values;    /* n values, already scaled to the metric's unit */
  uint64_t skipped, waits;
} la_peer_cycle_t;

typedef struct la_peer_reg {
  char app_id[160], app_name[80], metric[140], unit[40];
  int rank, nprocs, pid;
  uint64_t n_elements;
  uint32_t n_buffers, period;
  int has_compact, compact_mode;
  double compact_cv;
  uint64_t grid[3];
  int shm_id, sem_id;
} la_peer_reg_t;

typedef struct la_test_peer la_test_peer_t;

/* Starts listening and serving. Returns NULL on failure. */
la_test_peer_t *la_test_peer_start(void);
uint16_t la_test_peer_port(const la_test_peer_t *p);
/* "127.0.0.1:PORT", for LA_AGENT or LA_setAgent. */
const char *la_test_peer_addr(const la_test_peer_t *p);
/* Milliseconds to hold each buffer before giving it back; -1 holds them
 * until la_test_peer_release_all (default 0). */
void la_test_peer_set_hold_ms(la_test_peer_t *p, int ms);
/* Whether closing a connection removes that process's IPC objects, as the
 * LocalAgent does (default 1). Off, tests see what libla alone removes. */
void la_test_peer_set_cleanup(la_test_peer_t *p, int on);
/* Gives back every buffer held so far. */
void la_test_peer_release_all(la_test_peer_t *p);
/* The same, and waits up to timeout_ms until the peer has given them back
 * (the semaphores are posted). Returns 0, or -1 on timeout. */
int la_test_peer_release_all_wait(la_test_peer_t *p, int timeout_ms);
/* Makes the peer refuse registrations with this reason (NULL: accept). */
void la_test_peer_set_refuse(la_test_peer_t *p, const char *reason);
/* Waits until at least n cycles were received; 0 or -1 on timeout. */
int la_test_peer_wait_cycles(la_test_peer_t *p, size_t n, int timeout_ms);
/* Waits until at least n connections have closed; 0 or -1 on timeout. */
int la_test_peer_wait_closed(la_test_peer_t *p, int n, int timeout_ms);
size_t la_test_peer_ncycles(la_test_peer_t *p);
/* Cycle i in arrival order (stable until la_test_peer_stop). */
const la_peer_cycle_t *la_test_peer_cycle(la_test_peer_t *p, size_t i);
int la_test_peer_registrations(la_test_peer_t *p);
int la_test_peer_finalized(la_test_peer_t *p);
la_peer_reg_t la_test_peer_last_reg(la_test_peer_t *p);
/* Closes every connection and the listener, as if the agent died, but keeps
 * the recorded cycles readable; la_test_peer_stop frees them. */
void la_test_peer_kill(la_test_peer_t *p);
void la_test_peer_stop(la_test_peer_t *p);

/* Number of SysV segments and semaphore sets whose creator is pid
 * (from /proc/sysvipc); for asserting nothing was left behind. */
int la_test_ipc_count(int pid);
/* Waits up to timeout_ms until la_test_ipc_count(pid) == n: 0, or -1 on
 * timeout (a bounded poll: the peer removes segments asynchronously). */
int la_test_ipc_wait_count(int pid, int n, int timeout_ms);

#endif /* LA_TEST_PEER_H */
