/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_tcp.h: what the kernel still holds of a test daemon's TCP
 * connections, for tests that stop a daemon (SIGSTOP) and must know that
 * everything it wrote has reached its peer, without waiting on time. */
#ifndef LA_TEST_TCP_H
#define LA_TEST_TCP_H

#include <stdint.h>
#include <sys/types.h>

/* Waits up to timeout_ms until every TCP connection of process pid to a
 * loopback peer listening on port has nothing left in flight: pid's send
 * queue is empty and the peer has read everything (its receive queue is
 * empty), per /proc/net/tcp and /proc/net/tcp6. The process should be
 * stopped (SIGSTOP), or it may write more. *n (may be NULL) gets the number
 * of such connections found. Returns 0, or -1 at the deadline (or when
 * /proc cannot be read). */
int la_tt_wait_drained(pid_t pid, uint16_t port, int timeout_ms, int *n);

#endif
