/* peer_uid.c: the peer's uid by sock_diag (see peer_uid.h). */
#include "peer_uid.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "app_ipc.h"

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
      return h->nlmsg_len >= NLMSG_LENGTH(sizeof *e) &&
                     (e->error == -ENOENT)
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

int la_peer_uid_fast(int fd) {
  struct inet_diag_sockid id;
  int family = la__peer_id(fd, &id);
  if (family < 0) return -1;
  long uid = la__diag_uid(family, &id);
  if (uid == -2) return la_peer_uid(fd); /* no sock_diag: the slow way */
  return (int)uid;
}
