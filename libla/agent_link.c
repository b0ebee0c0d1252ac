/* SPDX-License-Identifier: BSD-3-Clause */
/* agent_link.c: libla's TCP conversation with the LocalAgent.
 *
 * One persistent connection per application process: registration (request
 * and reply, with a deadline), then one-way notifications (DataReady,
 * Finalize). Notifications never block the application: what the socket does
 * not take at once waits in a small outbox and goes with the next one. The
 * agent never writes after the reply, so a readable socket means it closed
 * the connection (or sent an Error before doing so: code LA_EREFUSED when
 * the GlobalAgent refused the registration, since the application id
 * belongs to another user). Closing this connection is the agent's death
 * notice of the application.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "la_codec.h"
#include "la_internal.h"
#include "la_sockio.h"

#define LA__OUTBOX_MAX (64u << 10)

int la__link_addr_check(const char *agent, const char *label) {
  char host[200];
  uint16_t port;
  if (la_hostport_parse(agent, host, sizeof host, &port))
    return la__error(LA_ECONFIG,
                     "%s: the LocalAgent's address is not host:port (e.g. "
                     "127.0.0.1:7461)",
                     label);
  return 0;
}

int la__link_connect(la__link_t *l, const char *agent, int timeout_ms) {
  char host[200];
  uint16_t port;
  memset(l, 0, sizeof *l);
  l->fd = -1;
  if (la_hostport_parse(agent, host, sizeof host, &port))
    return la__error(LA_ECONFIG, "agent address '%s' is not host:port", agent);
  int fd = la_tcp_connect(host, port, timeout_ms);
  if (fd == LA_EINVAL) /* getaddrinfo: no such host */
    return la__error(LA_ENOAGENT,
                     "the LocalAgent's host '%s' (of %s) is not known here "
                     "(check LA_AGENT=host:port); the program runs "
                     "unprofiled",
                     host, agent);
  if (fd < 0)
    return la__error(fd == LA_ETIMEDOUT ? LA_ENOAGENT : fd,
                     "no LocalAgent at %s (start la-localagent, or set "
                     "LA_AGENT=host:port); the program runs unprofiled",
                     agent);
  l->fd = fd;
  return 0;
}

int la__link_register(la__link_t *l, const char *agent, int timeout_ms,
                      const La__RegisterRequest *req) {
  int rc;
  if (l->fd < 0 && (rc = la__link_connect(l, agent, timeout_ms))) return rc;
  int fd = l->fd;
  l->fd = -1; /* set again once registered */
  rc = la_send_msg(fd, LA__MSG_TYPE__MSG_REGISTER_REQUEST, &req->base,
                   timeout_ms);
  if (rc) {
    close(fd);
    return la__error(LA_ENOAGENT, "sending the registration to %s failed",
                     agent);
  }
  uint16_t type;
  ProtobufCMessage *m = NULL;
  char why[256] = "";
  rc = la_recv_msg(fd, 1u << 16, timeout_ms, &type, &m, why, sizeof why);
  if (rc) {
    close(fd);
    return la__error(rc == LA_ETIMEDOUT ? LA_ETIMEDOUT : LA_EPROTO,
                     "registration reply from %s: %s", agent, why);
  }
  if (type == LA__MSG_TYPE__MSG_ERROR) {
    La__Error *e = (La__Error *)m;
    rc = la__error(LA_EREFUSED, "LocalAgent %s: %s", agent, e->message);
  } else if (type != LA__MSG_TYPE__MSG_REGISTER_REPLY) {
    rc = la__error(LA_EPROTO, "LocalAgent %s answered with %s", agent,
                   la_msg_name(type));
  } else {
    La__RegisterReply *r = (La__RegisterReply *)m;
    if (r->status != 0)
      rc = la__error(LA_EREFUSED, "LocalAgent %s refused the registration: %s",
                     agent, r->message ? r->message : LA_strerror(r->status));
  }
  la_msg_free(m);
  if (rc) {
    close(fd);
    return rc;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  l->fd = fd;
  return 0;
}

/* Writes as much of the outbox as the socket takes now. */
static int la__flush(la__link_t *l) {
  size_t off = 0;
  while (off < l->out_len) {
    ssize_t w = send(l->fd, l->outbox + off, l->out_len - off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return la__error(LA_EAGENTLOST, "LocalAgent connection: %s",
                     w < 0 ? strerror(errno) : "closed");
  }
  memmove(l->outbox, l->outbox + off, l->out_len - off);
  l->out_len -= off;
  return 0;
}

int la__link_send(la__link_t *l, uint16_t type, const void *msg) {
  if (l->fd < 0) return LA_EAGENTLOST;
  if (!l->outbox && !(l->outbox = malloc(LA__OUTBOX_MAX)))
    return la__error(LA_ENOMEM, "notification outbox");
  long n = la_frame_pack_into(type, msg, l->outbox + l->out_len,
                              LA__OUTBOX_MAX - l->out_len);
  if (n < 0) {
    /* 64 KiB of notifications the agent has not read: it is stuck. */
    return la__error(LA_EAGENTLOST, "LocalAgent stopped reading notifications");
  }
  l->out_len += (size_t)n;
  return la__flush(l);
}

int la__link_send_sync(la__link_t *l, uint16_t type,
                       const struct ProtobufCMessage *msg, int timeout_ms) {
  if (l->fd < 0) return LA_EAGENTLOST;
  int fl = fcntl(l->fd, F_GETFL);
  fcntl(l->fd, F_SETFL, fl & ~O_NONBLOCK);
  int rc = la_send_msg(l->fd, type, msg, timeout_ms);
  fcntl(l->fd, F_SETFL, fl);
  if (rc)
    return la__error(LA_EAGENTLOST, "sending %s to the LocalAgent: %s",
                     la_msg_name(type), LA_strerror(rc));
  return 0;
}

int la__link_alive(la__link_t *l) {
  if (l->fd < 0) return LA_EAGENTLOST;
  struct pollfd p = {.fd = l->fd, .events = POLLIN};
  if (poll(&p, 1, 0) <= 0) return 0;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLIN)) {
    uint16_t type;
    ProtobufCMessage *m = NULL;
    char why[128];
    if (p.revents & POLLIN &&
        la_recv_msg(l->fd, 1u << 16, 100, &type, &m, why, sizeof why) == 0) {
      if (type == LA__MSG_TYPE__MSG_ERROR &&
          ((La__Error *)m)->code == LA_EREFUSED) {
        /* refused for good (the GlobalAgent: the app id is another
         * user's): no registration again */
        int rc = la__error(LA_EREFUSED, "%s", ((La__Error *)m)->message);
        la_msg_free(m);
        return rc;
      }
      if (type == LA__MSG_TYPE__MSG_ERROR)
        la__error(LA_EAGENTLOST, "LocalAgent: %s", ((La__Error *)m)->message);
      la_msg_free(m);
    }
    return la__error(LA_EAGENTLOST,
                     "LocalAgent closed the connection; profiling paused "
                     "until it is back, the program goes on");
  }
  return 0;
}

void la__link_close(la__link_t *l) {
  if (l->fd >= 0) {
    if (l->out_len) { /* give pending notifications a moment to go out */
      fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) & ~O_NONBLOCK);
      la_write_all(l->fd, l->outbox, l->out_len, 200);
    }
    close(l->fd);
  }
  free(l->outbox);
  memset(l, 0, sizeof *l);
  l->fd = -1;
}
