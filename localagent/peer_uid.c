/* SPDX-License-Identifier: BSD-3-Clause */
/* peer_uid.c: the peer's uid by sock_diag, or from /proc/net/tcp where
 * sock_diag is unavailable (see peer_uid.h). */
#include "peer_uid.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <string.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

/* Fills the diag id of the peer's socket: its source is our peer address,
 * its destination our own. Returns the family, or -1. */
static int la__peer_id(int fd, struct inet_diag_sockid *id) {
  struct sockaddr_storage me, peer;
  socklen_t ml = sizeof me, pl = sizeof peer;
  if (getsockname(fd, (void *)&me, &ml) || getpeername(fd, (void *)&peer, &pl))
    return -1;
  memset(id, 0, sizeof *id);
  id->idiag_cookie[0] = id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (peer.ss_family == AF_INET) {
    const struct sockaddr_in *p = (void *)&peer, *m = (void *)&me;
    id->idiag_sport = p->sin_port;
    id->idiag_dport = m->sin_port;
    memcpy(id->idiag_src, &p->sin_addr, 4);
    memcpy(id->idiag_dst, &m->sin_addr, 4);
    return AF_INET;
  }
  if (peer.ss_family == AF_INET6) {
    const struct sockaddr_in6 *p = (void *)&peer, *m = (void *)&me;
    id->idiag_sport = p->sin6_port;
    id->idiag_dport = m->sin6_port;
    memcpy(id->idiag_src, &p->sin6_addr, 16);
    memcpy(id->idiag_dst, &m->sin6_addr, 16);
    return AF_INET6;
  }
  return -1;
}

/* One exact sock_diag lookup. Returns the uid, -1 when the kernel has no
 * such socket (or answered something else), -2 when sock_diag itself is
 * unavailable. */
static long la__diag_uid(int family, const struct inet_diag_sockid *id) {
  int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return -2;
  struct timeval tv = {1, 0}; /* the kernel answers at once; never hang */
  setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct {
    struct nlmsghdr nh;
    struct inet_diag_req_v2 r;
  } req;
  memset(&req, 0, sizeof req);
  req.nh.nlmsg_len = sizeof req;
  req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  req.nh.nlmsg_flags = NLM_F_REQUEST;
  req.nh.nlmsg_seq = 1;
  req.r.sdiag_family = (unsigned char)family;
  req.r.sdiag_protocol = IPPROTO_TCP;
  req.r.idiag_states = ~0u;
  req.r.id = *id;
  struct sockaddr_nl k = {.nl_family = AF_NETLINK};
  long uid = -2;
  if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&k, sizeof k) !=
      (ssize_t)sizeof req) {
    close(nl);
    return -2;
  }
  union {
    struct nlmsghdr nh;
    char b[8192];
  } buf;
  ssize_t n = recv(nl, buf.b, sizeof buf.b, 0);
  close(nl);
  if (n < (ssize_t)sizeof(struct nlmsghdr)) return -2;
  for (struct nlmsghdr *h = &buf.nh; NLMSG_OK(h, (unsigned)n);
       h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      const struct nlmsgerr *e = NLMSG_DATA(h);
      return h->nlmsg_len >= NLMSG_LENGTH(sizeof *e) && (e->error == -ENOENT)
                 ? -1
                 : -2;
    }
    if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
        h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
      const struct inet_diag_msg *m = NLMSG_DATA(h);
      /* only the socket asked for: the same four-tuple */
      if (m->id.idiag_sport == id->idiag_sport &&
          m->id.idiag_dport == id->idiag_dport &&
          !memcmp(m->id.idiag_src, id->idiag_src, sizeof id->idiag_src) &&
          !memcmp(m->id.idiag_dst, id->idiag_dst, sizeof id->idiag_dst))
        uid = (long)m->idiag_uid;
      else
        uid = -1;
      break;
    }
  }
  return uid;
}

/* Looks for "LOCAL REMOTE" (hex, as the kernel prints them) in one table. */
static int la__uid_in(const char *table, const char *local,
                      const char *remote) {
  FILE *f = fopen(table, "r");
  if (!f) return -1;
  char line[512];
  int uid = -1;
  if (fgets(line, sizeof line, f))
    while (fgets(line, sizeof line, f)) {
      char loc[64], rem[64];
      unsigned u;
      if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %u", loc, rem, &u) == 3 &&
          !strcasecmp(loc, local) && !strcasecmp(rem, remote)) {
        uid = (int)u;
        break;
      }
    }
  fclose(f);
  return uid;
}

/* The slow way, where sock_diag is unavailable: the peer's uid read from
 * /proc/net/tcp{,6}, whose cost grows with the machine's sockets; -1 when it
 * cannot be found. */
static int la__proc_uid(int fd) {
  struct sockaddr_storage me, peer;
  socklen_t ml = sizeof me, pl = sizeof peer;
  if (getsockname(fd, (void *)&me, &ml) || getpeername(fd, (void *)&peer, &pl))
    return -1;
  char loc[64], rem[64];
  if (peer.ss_family == AF_INET) {
    const struct sockaddr_in *p = (void *)&peer, *m = (void *)&me;
    /* The peer's own view: its local address is our remote one. */
    snprintf(loc, sizeof loc, "%08X:%04X", (unsigned)p->sin_addr.s_addr,
             ntohs(p->sin_port));
    snprintf(rem, sizeof rem, "%08X:%04X", (unsigned)m->sin_addr.s_addr,
             ntohs(m->sin_port));
    return la__uid_in("/proc/net/tcp", loc, rem);
  }
  if (peer.ss_family == AF_INET6) {
    const struct sockaddr_in6 *p = (void *)&peer, *m = (void *)&me;
    const uint32_t *pa = (const void *)&p->sin6_addr,
                   *ma = (const void *)&m->sin6_addr;
    snprintf(loc, sizeof loc, "%08X%08X%08X%08X:%04X", pa[0], pa[1], pa[2],
             pa[3], ntohs(p->sin6_port));
    snprintf(rem, sizeof rem, "%08X%08X%08X%08X:%04X", ma[0], ma[1], ma[2],
             ma[3], ntohs(m->sin6_port));
    return la__uid_in("/proc/net/tcp6", loc, rem);
  }
  return -1;
}

int la_peer_uid_fast(int fd) {
  struct inet_diag_sockid id;
  int family = la__peer_id(fd, &id);
  if (family < 0) return -1;
  long uid = la__diag_uid(family, &id);
  if (uid == -2) return la__proc_uid(fd); /* no sock_diag */
  return (int)uid;
}
