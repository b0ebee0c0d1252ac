/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_peer.c: the LocalAgent stand-in of la_test_peer.h. One thread, a
 * poll() loop over the listener and its connections; frames by la_codec,
 * the application's shared memory by the LocalAgent's app_ipc. */
#include "la_test_peer.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <unistd.h>

#include "app_ipc.h"
#include "la.h"
#include "la_codec.h"
#include "la_sockio.h"
#include "la_test_serve.h"

#define MAXC 64

typedef struct {
  int fd;
  la_frame_reader_t rd;
  la_app_ipc_t ipc;
  double *values;                          /* where a buffer is taken to */
  uint64_t held_since[LA_SHM_MAX_BUFFERS]; /* ms, 0 = not held */
  uint32_t last;                           /* the last cycle's buffer */
} conn_t;

struct la_test_peer {
  int lfd, wake[2];
  char addr[32];
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, killed, hold_ms, release_now, no_cleanup;
  unsigned max_layout; /* refuse newer layouts, as an older agent (0: no) */
  unsigned long releases, target; /* release passes done / awaited */
  conn_t c[MAXC];
  la_peer_cycle_t *cycles;
  size_t ncycles, cap, want;
};

static void give_back(conn_t *c, uint32_t i) {
  c->held_since[i] = 0;
  la_app_ipc_give_back(&c->ipc, i);
}

static void conn_close(la_test_peer_t *p, conn_t *c) {
  if (c->fd < 0) return;
  close(c->fd);
  c->fd = -1;
  la_frame_reader_free(&c->rd);
  if (!p->no_cleanup)
    la_app_ipc_release(&c->ipc);
  else if (c->ipc.hdr)
    shmdt(c->ipc.hdr);
  c->ipc.hdr = NULL;
  free(c->values);
  c->values = NULL;
}

static int on_register(la_test_peer_t *p, conn_t *c,
                       const La__RegisterRequest *r) {
  La__RegisterReply rep = LA__REGISTER_REPLY__INIT;
  char why[256];
  int rc = c->ipc.hdr ? LA_EREFUSED : 0;
  uint32_t nch = r->n_channels ? (uint32_t)r->n_channels : 1;
  if (rc == 0)
    rc = la_app_ipc_attach(&c->ipc, r->shm_id, r->sem_id, r->pid, r->nonce,
                           r->n_elements, r->n_buffers, nch,
                           r->n_grid == 3 ? r->grid : NULL, -1,
                           why, sizeof why);
  pthread_mutex_lock(&p->mu);
  unsigned max_layout = p->max_layout;
  pthread_mutex_unlock(&p->mu);
  if (rc == 0 && max_layout && c->ipc.layout > max_layout) {
    /* what an agent that reads only older layouts answers: the header
     * check's words; it detaches and leaves the objects to the process */
    shmdt(c->ipc.hdr);
    c->ipc.hdr = NULL;
    snprintf(why, sizeof why, "segment %d: unsupported header version",
             r->shm_id);
    rc = LA_EREFUSED;
  }
  if (rc == 0 && !(c->values = malloc(nch * r->n_elements * sizeof(double)))) {
    la_app_ipc_release(&c->ipc);
    rc = LA_ENOMEM;
  }
  rep.status = rc;
  rep.message = rc ? why : NULL;
  rep.agent_version = "test-peer";
  la_send_msg(c->fd, LA__MSG_TYPE__MSG_REGISTER_REPLY, &rep.base, 1000);
  return rc;
}

static void on_data(la_test_peer_t *p, conn_t *c, const La__DataReady *d) {
  la_shm_bufmeta_t meta;
  if (la_app_ipc_take(&c->ipc, d->buffer, c->values, NULL, &meta) == LA_EINVAL)
    return;
  pthread_mutex_lock(&p->mu);
  if (p->ncycles == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 16;
    p->cycles = realloc(p->cycles, p->cap * sizeof *p->cycles);
  }
  p->cycles[p->ncycles++] =
      (la_peer_cycle_t){.tag = d->cycle_tag, .skipped = d->skipped};
  pthread_cond_broadcast(&p->cv);
  int hold = p->hold_ms;
  pthread_mutex_unlock(&p->mu);
  c->last = d->buffer;
  if (hold == 0)
    give_back(c, d->buffer);
  else
    c->held_since[d->buffer] = la_now_ms();
}

/* A connection of the peer, as la_test_serve_frames hands it around. */
typedef struct {
  la_test_peer_t *p;
  conn_t *c;
} peer_conn_t;

/* la_test_serve_frames: one frame. Returns 0, or 1 to close the
 * connection. */
static int on_frame(void *arg, uint16_t type, const uint8_t *pl, uint32_t len) {
  peer_conn_t *x = arg;
  ProtobufCMessage *m;
  if (la_msg_decode(type, pl, len, &m, NULL, 0)) return 1;
  int rc = 0;
  if (type == LA__MSG_TYPE__MSG_REGISTER_REQUEST)
    rc = on_register(x->p, x->c, (La__RegisterRequest *)m);
  else if (type == LA__MSG_TYPE__MSG_DATA_READY && x->c->ipc.hdr)
    on_data(x->p, x->c, (La__DataReady *)m);
  la_msg_free(m);
  return rc != 0;
}

static int on_readable(la_test_peer_t *p, conn_t *c) {
  peer_conn_t x = {p, c};
  return la_test_serve_frames(c->fd, &c->rd, on_frame, &x) ? -1 : 0;
}

/* Gives back the buffers whose time is up, all of them (release 1) or
 * only each connection's last cycle's (release 2). */
static void give_back_due(la_test_peer_t *p, int hold, int release) {
  uint64_t t = la_now_ms();
  for (int i = 0; i < MAXC; i++) {
    conn_t *c = &p->c[i];
    if (c->fd < 0 || !c->ipc.hdr) continue;
    for (uint32_t b = 0; b < c->ipc.n_buffers; b++)
      if (c->held_since[b] &&
          (release == 1 || (release == 2 && b == c->last) ||
           (hold > 0 && t - c->held_since[b] >= (uint64_t)hold)))
        give_back(c, b);
  }
  if (release) {
    pthread_mutex_lock(&p->mu);
    p->releases++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
}

/* la_test_serve_poll: the listener is readable. */
static void on_accept(void *arg) {
  la_test_peer_t *p = arg;
  int fd = accept(p->lfd, NULL, NULL);
  if (fd < 0) return;
  for (int i = 0; i < MAXC; i++)
    if (p->c[i].fd < 0) {
      conn_t *c = &p->c[i];
      memset(c, 0, sizeof *c);
      c->fd = fd;
      c->ipc.shm_id = c->ipc.sem_id = -1;
      la_frame_reader_init(&c->rd, 1u << 20);
      return;
    }
  close(fd);
}

/* la_test_serve_poll: connection i's descriptor, and i is readable. */
static int fd_cb(void *arg, int i) {
  return ((la_test_peer_t *)arg)->c[i].fd;
}

static void conn_cb(void *arg, int i) {
  la_test_peer_t *p = arg;
  if (p->c[i].fd >= 0 && on_readable(p, &p->c[i]) != 0) conn_close(p, &p->c[i]);
}

static void *peer_main(void *arg) {
  la_test_peer_t *p = arg;
  la_test_serve_lock();
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int stop = p->stop || p->killed, hold = p->hold_ms;
    int release = p->release_now;
    p->release_now = 0;
    pthread_mutex_unlock(&p->mu);
    if (stop) break;
    give_back_due(p, hold, release);
    la_test_serve_poll(p->lfd, p->wake[0], fd_cb, MAXC, on_accept, conn_cb, p);
  }
  for (int i = 0; i < MAXC; i++) conn_close(p, &p->c[i]);
  la_test_serve_end(&p->lfd);
  return NULL;
}

la_test_peer_t *la_test_peer_start(void) {
  la_test_peer_t *p = calloc(1, sizeof *p);
  uint16_t port = 0;
  if (!p) return NULL;
  for (int i = 0; i < MAXC; i++) p->c[i].fd = -1;
  if ((p->lfd = la_test_listen(0, &port)) < 0 || pipe(p->wake) != 0) {
    if (p->lfd >= 0) close(p->lfd);
    free(p);
    return NULL;
  }
  snprintf(p->addr, sizeof p->addr, "127.0.0.1:%u", port);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  pthread_create(&p->th, NULL, peer_main, p);
  return p;
}

const char *la_test_peer_addr(const la_test_peer_t *p) {
  return p->addr;
}

void la_test_peer_set_hold_ms(la_test_peer_t *p, int ms) {
  pthread_mutex_lock(&p->mu);
  p->hold_ms = ms;
  pthread_mutex_unlock(&p->mu);
}

void la_test_peer_set_max_layout(la_test_peer_t *p, unsigned layout) {
  pthread_mutex_lock(&p->mu);
  p->max_layout = layout;
  pthread_mutex_unlock(&p->mu);
}

void la_test_peer_set_cleanup(la_test_peer_t *p, int on) {
  pthread_mutex_lock(&p->mu);
  p->no_cleanup = !on;
  pthread_mutex_unlock(&p->mu);
}

static int cycles_done(void *arg) {
  la_test_peer_t *p = arg;
  return p->ncycles >= p->want;
}

int la_test_peer_wait_cycles(la_test_peer_t *p, size_t n, int timeout_ms) {
  pthread_mutex_lock(&p->mu);
  p->want = n;
  pthread_mutex_unlock(&p->mu);
  return la_test_cond_wait(&p->mu, &p->cv, cycles_done, p, timeout_ms);
}

static int releases_done(void *arg) {
  la_test_peer_t *p = arg;
  return p->releases >= p->target;
}

/* Gives back what release says (give_back_due) and waits for it. */
static int release_wait(la_test_peer_t *p, int release, int timeout_ms) {
  pthread_mutex_lock(&p->mu);
  p->target = p->releases + 1;
  p->release_now = release;
  pthread_mutex_unlock(&p->mu);
  la_test_wake(p->wake[1]);
  return la_test_cond_wait(&p->mu, &p->cv, releases_done, p, timeout_ms);
}

int la_test_peer_release_all_wait(la_test_peer_t *p, int timeout_ms) {
  return release_wait(p, 1, timeout_ms);
}

int la_test_peer_release_last_wait(la_test_peer_t *p, int timeout_ms) {
  return release_wait(p, 2, timeout_ms);
}

const la_peer_cycle_t *la_test_peer_cycle(la_test_peer_t *p, size_t i) {
  pthread_mutex_lock(&p->mu);
  const la_peer_cycle_t *c = i < p->ncycles ? &p->cycles[i] : NULL;
  pthread_mutex_unlock(&p->mu);
  return c;
}

void la_test_peer_kill(la_test_peer_t *p) {
  pthread_mutex_lock(&p->mu);
  int already = p->killed;
  p->killed = 1;
  pthread_mutex_unlock(&p->mu);
  if (already) return;
  la_test_wake(p->wake[1]);
  pthread_join(p->th, NULL);
}

void la_test_peer_stop(la_test_peer_t *p) {
  if (!p) return;
  la_test_peer_kill(p);
  free(p->cycles);
  close(p->wake[0]);
  close(p->wake[1]);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}
