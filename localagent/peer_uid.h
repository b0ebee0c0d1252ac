/* SPDX-License-Identifier: BSD-3-Clause */
/* peer_uid.h: who is on the other end of a loopback TCP connection, fast.
 *
 * Asks the kernel for the one socket of the peer (sock_diag netlink, exact
 * lookup by address and port) instead of scanning /proc/net/tcp, whose cost
 * grows with every open socket on the machine: admission needs the uid of
 * each new connection, also during a flood. Falls back to scanning
 * /proc/net/tcp{,6} where sock_diag is unavailable. No libuv.
 */
#ifndef LA_LOCALAGENT_PEER_UID_H
#define LA_LOCALAGENT_PEER_UID_H

/* The uid owning the peer socket of connected TCP socket fd (IPv4 or IPv6,
 * the peer on this machine), or -1 when it cannot be found. */
int la_peer_uid_fast(int fd);

#endif
