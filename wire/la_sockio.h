/* SPDX-License-Identifier: BSD-3-Clause */
/* la_sockio.h: blocking TCP helpers with time limits, for libla, lactl and
 * tests (the daemons use libuv instead). Parses "host:port", connects with a
 * deadline, writes whole frames and reads one frame with a deadline. Frames
 * are built and parsed by la_codec.h; this file only moves bytes.
 */
#ifndef LA_SOCKIO_H
#define LA_SOCKIO_H

#include <stddef.h>
#include <stdint.h>

#include "la_codec.h"
#include "la_time.h" /* la_now_ms */

/* Splits "host:port" (or "port", or "[v6]:port") into host and port. Returns
 * 0 or LA_EINVAL. */
int la_hostport_parse(const char *s, char *host, size_t host_len,
                      uint16_t *port);

/* A listening TCP socket (non-blocking, close-on-exec, SO_REUSEADDR,
 * backlog 16) on listen_addr ("host:port"; port 0: any, the kernel's
 * choice); the bound address ("host:port", "[v6]:port") into bound and its
 * port into *port. Returns the fd, or LA_EINVAL ("'ADDR' is not host:port",
 * a host that does not resolve) or LA_EIO ("cannot listen on ADDR: ...")
 * with the reason in why. For the HTTP endpoints (the daemons' metrics,
 * lactl serve). */
int la_tcp_listen(const char *listen_addr, char *bound, size_t bound_len,
                  uint16_t *port, char *why, size_t why_len);

/* Connects to host:port within timeout_ms. Returns a blocking socket with
 * TCP_NODELAY and close-on-exec, or a negative LA_E* code (LA_ENOAGENT when
 * nothing listens, LA_ETIMEDOUT, LA_EINVAL for a bad address). */
int la_tcp_connect(const char *host, uint16_t port, int timeout_ms);

/* Writes all n bytes within timeout_ms. Returns 0, LA_ETIMEDOUT or LA_EIO. */
int la_write_all(int fd, const void *buf, size_t n, int timeout_ms);

/* Reads exactly n bytes within timeout_ms. Returns 0, LA_ETIMEDOUT, LA_EIO
 * (including the peer closing). */
int la_read_all(int fd, void *buf, size_t n, int timeout_ms);

/* Encodes msg as a frame and writes it. Returns 0 or an LA_E* code. */
int la_send_msg(int fd, uint16_t type, const ProtobufCMessage *msg,
                int timeout_ms);

/* Reads one frame (payload <= max_payload) and decodes it. On success *type
 * and *msg are set (free with la_msg_free). Errors: LA_ETIMEDOUT, LA_EIO,
 * LA_EPROTO, LA_EMSGSIZE; why gets a reason. */
int la_recv_msg(int fd, uint32_t max_payload, int timeout_ms, uint16_t *type,
                ProtobufCMessage **msg, char *why, size_t why_len);

#endif /* LA_SOCKIO_H */
