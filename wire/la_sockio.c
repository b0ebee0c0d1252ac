/* SPDX-License-Identifier: BSD-3-Clause */
/* la_sockio.c: blocking TCP helpers with deadlines (see la_sockio.h).
 * Uses poll() for every wait so no call blocks longer than its limit. Never
 * raises SIGPIPE (MSG_NOSIGNAL), so a vanished peer is an error code. */
#include "la_sockio.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "la_errcodes.h"

static int la__left(uint64_t deadline) {
  uint64_t now = la_now_ms();
  return now >= deadline ? 0 : (int)(deadline - now);
}

int la_hostport_parse(const char *s, char *host, size_t host_len,
                      uint16_t *port) {
  if (!s || !*s) return LA_EINVAL;
  const char *colon = NULL, *h = s;
  size_t hl;
  if (s[0] == '[') {
    const char *end = strchr(s, ']');
    if (!end || end[1] != ':') return LA_EINVAL;
    h = s + 1;
    hl = (size_t)(end - h);
    if (hl == 0) return LA_EINVAL; /* "[]:port" */
    colon = end + 1;
  } else {
    colon = strrchr(s, ':');
    if (colon && colon != strchr(s, ':')) return LA_EINVAL; /* [v6]:port */
    hl = colon ? (size_t)(colon - s) : 0;
  }
  const char *p = colon ? colon + 1 : s;
  char *endp;
  errno = 0;
  long v = strtol(p, &endp, 10);
  if (*p < '0' || *p > '9' || *endp != '\0' || errno || v < 1 || v > 65535)
    return LA_EINVAL;
  if (hl == 0) {
    h = "127.0.0.1";
    hl = strlen(h);
  }
  if (hl + 1 > host_len) return LA_EINVAL;
  memcpy(host, h, hl);
  host[hl] = '\0';
  *port = (uint16_t)v;
  return 0;
}

int la_tcp_connect(const char *host, uint16_t port, int timeout_ms) {
  struct addrinfo hints, *res = NULL, *ai;
  char ports[8];
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  snprintf(ports, sizeof ports, "%u", port);
  if (getaddrinfo(host, ports, &hints, &res) != 0) return LA_EINVAL;
  uint64_t deadline = la_now_ms() + (uint64_t)timeout_ms;
  int result = LA_ENOAGENT;
  for (ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
                                       SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      int pr;
      do pr = poll(&pfd, 1, la__left(deadline));
      while (pr < 0 && errno == EINTR);
      int err = 0;
      socklen_t el = sizeof err;
      if (pr == 0) {
        result = LA_ETIMEDOUT;
        rc = -1;
      } else if (pr < 0 ||
                 getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 ||
                 err != 0) {
        rc = -1;
      } else {
        rc = 0;
      }
    }
    if (rc == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      freeaddrinfo(res);
      return fd;
    }
    close(fd);
  }
  freeaddrinfo(res);
  return result;
}

static int la__wait(int fd, short ev, uint64_t deadline) {
  struct pollfd pfd = {.fd = fd, .events = ev};
  for (;;) {
    int pr = poll(&pfd, 1, la__left(deadline));
    if (pr > 0) return 0;
    if (pr == 0) return LA_ETIMEDOUT;
    if (errno != EINTR) return LA_EIO;
  }
}

int la_write_all(int fd, const void *buf, size_t n, int timeout_ms) {
  const char *p = buf;
  uint64_t deadline = la_now_ms() + (uint64_t)timeout_ms;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int e = la__wait(fd, POLLOUT, deadline);
      if (e) return e;
      continue;
    }
    return LA_EIO;
  }
  return 0;
}

int la_read_all(int fd, void *buf, size_t n, int timeout_ms) {
  char *p = buf;
  uint64_t deadline = la_now_ms() + (uint64_t)timeout_ms;
  while (n > 0) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= (size_t)r;
      continue;
    }
    if (r == 0) return LA_EIO; /* peer closed */
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int e = la__wait(fd, POLLIN, deadline);
      if (e) return e;
      continue;
    }
    return LA_EIO;
  }
  return 0;
}

int la_send_msg(int fd, uint16_t type, const ProtobufCMessage *msg,
                int timeout_ms) {
  uint8_t stackbuf[512], *buf = stackbuf;
  size_t n = la_frame_size(msg);
  if (n > sizeof stackbuf && !(buf = malloc(n))) return LA_ENOMEM;
  long len = la_frame_pack_into(type, msg, buf, n);
  int rc = len < 0 ? (int)len : la_write_all(fd, buf, (size_t)len, timeout_ms);
  if (buf != stackbuf) free(buf);
  return rc;
}

int la_recv_msg(int fd, uint32_t max_payload, int timeout_ms, uint16_t *type,
                ProtobufCMessage **msg, char *why, size_t why_len) {
  uint8_t hdr[LA_FRAME_HEADER_LEN];
  uint64_t deadline = la_now_ms() + (uint64_t)timeout_ms;
  int rc = la_read_all(fd, hdr, sizeof hdr, timeout_ms);
  if (rc) {
    if (why) snprintf(why, why_len, "%s", rc == LA_ETIMEDOUT
                                              ? "no answer in time"
                                              : "connection closed by peer");
    return rc;
  }
  uint32_t len;
  rc = la_frame_header_parse(hdr, max_payload, type, &len);
  if (rc) {
    if (why)
      snprintf(why, why_len, "%s", rc == LA_EMSGSIZE
                                       ? "frame larger than the maximum"
                                       : "bad frame header");
    return rc;
  }
  uint8_t *payload = malloc(len ? len : 1);
  if (!payload) return LA_ENOMEM;
  rc = la_read_all(fd, payload, len, la__left(deadline));
  if (rc == 0) rc = la_msg_decode(*type, payload, len, msg, why, why_len);
  else if (why) snprintf(why, why_len, "truncated frame");
  free(payload);
  return rc;
}

/* la_sockio.h */
int la_tcp_listen(const char *listen_addr, char *bound, size_t bound_len,
                  uint16_t *port, char *why, size_t why_len) {
  char host[200], ps[8], tmp[300];
  uint16_t p = 0;
  size_t n = strlen(listen_addr);
  int any = n > 2 && !strcmp(listen_addr + n - 2, ":0"); /* any port */
  if (n + 1 >= sizeof tmp ||
      (snprintf(tmp, sizeof tmp, "%.*s%s", (int)(any ? n - 2 : n), listen_addr,
                any ? ":1" : ""),
       la_hostport_parse(tmp, host, sizeof host, &p) != 0)) {
    snprintf(why, why_len, "'%s' is not host:port", listen_addr);
    return LA_EINVAL;
  }
  if (any) p = 0;
  snprintf(ps, sizeof ps, "%u", (unsigned)p);
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  int gai = getaddrinfo(host, ps, &hints, &res);
  if (gai != 0) {
    snprintf(why, why_len, "'%s': %s", host, gai_strerror(gai));
    return LA_EINVAL;
  }
  int fd = -1, err = 0;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 16) != 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    snprintf(why, why_len, "cannot listen on %s: %s", listen_addr,
             strerror(err));
    return LA_EIO;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0 ||
      getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    snprintf(why, why_len, "cannot read the bound address: %s",
             strerror(errno));
    close(fd);
    return LA_EIO;
  }
  *port = (uint16_t)atoi(s);
  snprintf(bound, bound_len, strchr(h, ':') ? "[%s]:%s" : "%s:%s", h, s);
  return fd;
}
