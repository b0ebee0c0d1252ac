/* la_test_peer.c: the LocalAgent stand-in of la_test_peer.h. One thread, a
 * poll() loop over the listener and its connections, framing by la_codec. */
#include "la_test_peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "la.h"
#include "la_codec.h"
#include "la_shm_layout.h"
#include "la_sockio.h"

#define MAXC 64

typedef struct {
  int fd;
  int id;
  la_frame_reader_t rd;
  la_shm_header_t *hdr;
  int sem_id, shm_id, rank;
  uint64_t held_since[LA_SHM_MAX_BUFFERS]; /* ms, 0 = not held */
} conn_t;

struct la_test_peer {
  int lfd, wake[2];
  uint16_t port;
  char addr[32];
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, killed, hold_ms, release_now, no_cleanup;
  unsigned long releases; /* release passes done (la_test_peer_release_all) */
  char refuse[256];
  conn_t c[MAXC];
  int nconn_total, closed, regs, finalized;
  la_peer_reg_t last;
  la_peer_cycle_t *cycles;
  size_t ncycles, cap;
};

static uint64_t now_ms(void) { return la_now_ms(); }

static void give_back(conn_t *c, uint32_t i) {
  struct sembuf op = {.sem_num = (unsigned short)i, .sem_op = 1};
  c->held_since[i] = 0;
  if (c->sem_id >= 0) semop(c->sem_id, &op, 1);
}

static void conn_close(la_test_peer_t *p, conn_t *c) {
  if (c->fd < 0) return;
  close(c->fd);
  c->fd = -1;
  la_frame_reader_free(&c->rd);
  if (c->hdr) shmdt(c->hdr);
  if (!p->no_cleanup && c->sem_id >= 0) semctl(c->sem_id, 0, IPC_RMID);
  if (!p->no_cleanup && c->shm_id >= 0) shmctl(c->shm_id, IPC_RMID, NULL);
  c->hdr = NULL;
  c->sem_id = c->shm_id = -1;
  p->closed++;
  pthread_cond_broadcast(&p->cv);
}

static void send_error(int fd, const char *why) {
  La__RegisterReply r = LA__REGISTER_REPLY__INIT;
  r.status = LA_EREFUSED;
  r.message = (char *)why;
  la_send_msg(fd, LA__MSG_TYPE__MSG_REGISTER_REPLY, &r.base, 1000);
}

static int on_register(la_test_peer_t *p, conn_t *c,
                       const La__RegisterRequest *r) {
  if (p->refuse[0]) {
    send_error(c->fd, p->refuse);
    return -1;
  }
  struct shmid_ds ds;
  if (shmctl(r->shm_id, IPC_STAT, &ds) != 0) {
    send_error(c->fd, "segment not found");
    return -1;
  }
  if (ds.shm_cpid != r->pid) {
    send_error(c->fd, "segment not created by the registering pid");
    return -1;
  }
  void *h = shmat(r->shm_id, NULL, 0);
  if (h == (void *)-1) {
    send_error(c->fd, "cannot attach segment");
    return -1;
  }
  const char *why = la_shm_header_check(h, ds.shm_segsz, r->n_elements,
                                        r->n_buffers, r->nonce);
  if (why) {
    shmdt(h);
    send_error(c->fd, why);
    return -1;
  }
  c->hdr = h;
  c->sem_id = r->sem_id;
  c->shm_id = r->shm_id;
  c->rank = (int)r->rank;
  la_peer_reg_t g;
  memset(&g, 0, sizeof g);
  snprintf(g.app_id, sizeof g.app_id, "%s", r->app_id);
  snprintf(g.app_name, sizeof g.app_name, "%s", r->app_name);
  snprintf(g.metric, sizeof g.metric, "%s", r->metric);
  snprintf(g.unit, sizeof g.unit, "%s", r->unit);
  g.rank = (int)r->rank;
  g.nprocs = (int)r->nprocs;
  g.pid = r->pid;
  g.n_elements = r->n_elements;
  g.n_buffers = r->n_buffers;
  g.period = r->period;
  if (r->compact) {
    g.has_compact = 1;
    g.compact_mode = r->compact->mode;
    g.compact_cv = r->compact->cv;
  }
  for (size_t i = 0; i < r->n_grid && i < 3; i++) g.grid[i] = r->grid[i];
  g.shm_id = r->shm_id;
  g.sem_id = r->sem_id;
  pthread_mutex_lock(&p->mu); /* record before the reply: tests read it */
  p->last = g;
  p->regs++;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  La__RegisterReply ok = LA__REGISTER_REPLY__INIT;
  ok.status = 0;
  ok.agent_version = "test-peer";
  la_send_msg(c->fd, LA__MSG_TYPE__MSG_REGISTER_REPLY, &ok.base, 1000);
  return 0;
}

static void on_data(la_test_peer_t *p, conn_t *c, const La__DataReady *d) {
  if (!c->hdr || d->buffer >= c->hdr->n_buffers) return;
  la_shm_bufmeta_t *m = &c->hdr->buf[d->buffer];
  double *v = la_shm_values(c->hdr, d->buffer);
  la_peer_cycle_t cy = {.conn = c->id, .rank = c->rank, .tag = d->cycle_tag,
                        .seq = d->seq, .n = c->hdr->n_elements,
                        .skipped = d->skipped, .waits = d->waits};
  cy.values = malloc(cy.n * sizeof(double));
  for (uint64_t i = 0; i < cy.n; i++) cy.values[i] = v[i] * m->scale;
  memset(v, 0, cy.n * sizeof(double));
  pthread_mutex_lock(&p->mu);
  if (p->ncycles == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 16;
    p->cycles = realloc(p->cycles, p->cap * sizeof *p->cycles);
  }
  p->cycles[p->ncycles++] = cy;
  pthread_cond_broadcast(&p->cv);
  int hold = p->hold_ms;
  pthread_mutex_unlock(&p->mu);
  if (hold == 0) give_back(c, d->buffer);
  else c->held_since[d->buffer] = now_ms();
}

static int on_readable(la_test_peer_t *p, conn_t *c) {
  uint8_t buf[65536];
  ssize_t n = recv(c->fd, buf, sizeof buf, 0);
  if (n <= 0) return -1;
  if (la_frame_reader_feed(&c->rd, buf, (size_t)n)) return -1;
  uint16_t type;
  const uint8_t *pl;
  uint32_t len;
  int r;
  while ((r = la_frame_reader_next(&c->rd, &type, &pl, &len)) == 1) {
    ProtobufCMessage *m;
    if (la_msg_decode(type, pl, len, &m, NULL, 0)) return -1;
    int rc = 0;
    if (type == LA__MSG_TYPE__MSG_REGISTER_REQUEST)
      rc = on_register(p, c, (La__RegisterRequest *)m);
    else if (type == LA__MSG_TYPE__MSG_DATA_READY)
      on_data(p, c, (La__DataReady *)m);
    else if (type == LA__MSG_TYPE__MSG_FINALIZE) {
      pthread_mutex_lock(&p->mu);
      p->finalized++;
      pthread_cond_broadcast(&p->cv);
      pthread_mutex_unlock(&p->mu);
    }
    la_msg_free(m);
    if (rc) return -1;
  }
  return r < 0 ? -1 : 0;
}

/* Tests fork application processes while this thread serves: it works
 * only while holding this mutex, which fork() takes first (pthread_atfork),
 * so no child inherits an allocator locked by this thread (sanitizer
 * allocators are not fork-safe). Forks happen while it waits in poll(). */
static pthread_mutex_t la__tp_work = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t la__tp_once = PTHREAD_ONCE_INIT;
static void la__tp_fork_lock(void) { pthread_mutex_lock(&la__tp_work); }
static void la__tp_fork_unlock(void) { pthread_mutex_unlock(&la__tp_work); }
static void la__tp_atfork(void) {
  pthread_atfork(la__tp_fork_lock, la__tp_fork_unlock, la__tp_fork_unlock);
}

static void *peer_main(void *arg) {
  la_test_peer_t *p = arg;
  pthread_mutex_lock(&la__tp_work);
  for (;;) {
    struct pollfd pf[MAXC + 2];
    int idx[MAXC + 2], n = 0;
    pthread_mutex_lock(&p->mu);
    int stop = p->stop, killed = p->killed, hold = p->hold_ms;
    int release = p->release_now;
    p->release_now = 0;
    pthread_mutex_unlock(&p->mu);
    if (stop || killed) break;
    uint64_t t = now_ms();
    for (int i = 0; i < MAXC; i++) {
      conn_t *c = &p->c[i];
      if (c->fd < 0 || !c->hdr) continue;
      for (uint32_t b = 0; b < c->hdr->n_buffers; b++)
        if (c->held_since[b] &&
            (release || (hold > 0 && t - c->held_since[b] >= (uint64_t)hold)))
          give_back(c, b);
    }
    if (release) {
      pthread_mutex_lock(&p->mu);
      p->releases++;
      pthread_cond_broadcast(&p->cv);
      pthread_mutex_unlock(&p->mu);
    }
    pf[n].fd = p->lfd; pf[n].events = POLLIN; idx[n++] = -1;
    pf[n].fd = p->wake[0]; pf[n].events = POLLIN; idx[n++] = -2;
    for (int i = 0; i < MAXC; i++)
      if (p->c[i].fd >= 0) {
        pf[n].fd = p->c[i].fd; pf[n].events = POLLIN; idx[n++] = i;
      }
    pthread_mutex_unlock(&la__tp_work); /* forks happen here */
    int ready = poll(pf, (nfds_t)n, 10);
    pthread_mutex_lock(&la__tp_work);
    if (ready <= 0) continue;
    for (int k = 0; k < n; k++) {
      if (!pf[k].revents) continue;
      if (idx[k] == -1) {
        int fd = accept(p->lfd, NULL, NULL);
        if (fd < 0) continue;
        int slot = -1;
        for (int i = 0; i < MAXC; i++) if (p->c[i].fd < 0) { slot = i; break; }
        if (slot < 0) { close(fd); continue; }
        conn_t *c = &p->c[slot];
        memset(c, 0, sizeof *c);
        c->fd = fd; c->sem_id = c->shm_id = -1;
        c->id = p->nconn_total++;
        la_frame_reader_init(&c->rd, 1u << 20);
      } else if (idx[k] == -2) {
        char b[16];
        if (read(p->wake[0], b, sizeof b) < 0) { /* nothing */ }
      } else if (on_readable(p, &p->c[idx[k]]) != 0) {
        pthread_mutex_lock(&p->mu);
        conn_close(p, &p->c[idx[k]]);
        pthread_mutex_unlock(&p->mu);
      }
    }
  }
  pthread_mutex_lock(&p->mu);
  for (int i = 0; i < MAXC; i++) conn_close(p, &p->c[i]);
  pthread_mutex_unlock(&p->mu);
  close(p->lfd);
  p->lfd = -1;
  pthread_mutex_unlock(&la__tp_work);
  return NULL;
}

la_test_peer_t *la_test_peer_start(void) {
  la_test_peer_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  for (int i = 0; i < MAXC; i++) p->c[i].fd = -1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (p->lfd < 0 || bind(p->lfd, (void *)&a, sizeof a) != 0 ||
      listen(p->lfd, 64) != 0 || getsockname(p->lfd, (void *)&a, &al) != 0 ||
      pipe(p->wake) != 0) {
    free(p);
    return NULL;
  }
  p->port = ntohs(a.sin_port);
  snprintf(p->addr, sizeof p->addr, "127.0.0.1:%u", p->port);
  pthread_once(&la__tp_once, la__tp_atfork);
  pthread_create(&p->th, NULL, peer_main, p);
  return p;
}

uint16_t la_test_peer_port(const la_test_peer_t *p) { return p->port; }
const char *la_test_peer_addr(const la_test_peer_t *p) { return p->addr; }

static void wake(la_test_peer_t *p) {
  if (write(p->wake[1], "x", 1) < 0) { /* ignore */ }
}

void la_test_peer_set_hold_ms(la_test_peer_t *p, int ms) {
  pthread_mutex_lock(&p->mu);
  p->hold_ms = ms;
  pthread_mutex_unlock(&p->mu);
}

void la_test_peer_set_cleanup(la_test_peer_t *p, int on) {
  pthread_mutex_lock(&p->mu);
  p->no_cleanup = !on;
  pthread_mutex_unlock(&p->mu);
}

void la_test_peer_release_all(la_test_peer_t *p) {
  pthread_mutex_lock(&p->mu);
  p->release_now = 1;
  pthread_mutex_unlock(&p->mu);
  wake(p);
}

void la_test_peer_set_refuse(la_test_peer_t *p, const char *reason) {
  pthread_mutex_lock(&p->mu);
  snprintf(p->refuse, sizeof p->refuse, "%s", reason ? reason : "");
  pthread_mutex_unlock(&p->mu);
}

static int wait_until(la_test_peer_t *p, int (*done)(la_test_peer_t *, size_t),
                      size_t n, int timeout_ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += timeout_ms / 1000;
  dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
  pthread_mutex_lock(&p->mu);
  int rc = 0;
  while (!done(p, n))
    if (pthread_cond_timedwait(&p->cv, &p->mu, &dl) == ETIMEDOUT) {
      rc = done(p, n) ? 0 : -1;
      break;
    }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

static int cycles_done(la_test_peer_t *p, size_t n) { return p->ncycles >= n; }
static int closed_done(la_test_peer_t *p, size_t n) {
  return p->closed >= (int)n;
}

int la_test_peer_wait_cycles(la_test_peer_t *p, size_t n, int timeout_ms) {
  return wait_until(p, cycles_done, n, timeout_ms);
}

int la_test_peer_wait_closed(la_test_peer_t *p, int n, int timeout_ms) {
  return wait_until(p, closed_done, (size_t)n, timeout_ms);
}

static int releases_done(la_test_peer_t *p, size_t n) {
  return p->releases >= n;
}

int la_test_peer_release_all_wait(la_test_peer_t *p, int timeout_ms) {
  pthread_mutex_lock(&p->mu);
  size_t target = p->releases + 1;
  p->release_now = 1;
  pthread_mutex_unlock(&p->mu);
  wake(p);
  return wait_until(p, releases_done, target, timeout_ms);
}

size_t la_test_peer_ncycles(la_test_peer_t *p) {
  pthread_mutex_lock(&p->mu);
  size_t n = p->ncycles;
  pthread_mutex_unlock(&p->mu);
  return n;
}

const la_peer_cycle_t *la_test_peer_cycle(la_test_peer_t *p, size_t i) {
  pthread_mutex_lock(&p->mu);
  const la_peer_cycle_t *c = i < p->ncycles ? &p->cycles[i] : NULL;
  pthread_mutex_unlock(&p->mu);
  return c;
}

int la_test_peer_registrations(la_test_peer_t *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->regs;
  pthread_mutex_unlock(&p->mu);
  return n;
}

int la_test_peer_finalized(la_test_peer_t *p) {
  pthread_mutex_lock(&p->mu);
  int n = p->finalized;
  pthread_mutex_unlock(&p->mu);
  return n;
}

la_peer_reg_t la_test_peer_last_reg(la_test_peer_t *p) {
  pthread_mutex_lock(&p->mu);
  la_peer_reg_t r = p->last;
  pthread_mutex_unlock(&p->mu);
  return r;
}

void la_test_peer_kill(la_test_peer_t *p) {
  pthread_mutex_lock(&p->mu);
  int already = p->killed;
  p->killed = 1;
  pthread_mutex_unlock(&p->mu);
  if (already) return;
  wake(p);
  pthread_join(p->th, NULL);
}

void la_test_peer_stop(la_test_peer_t *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  int killed = p->killed;
  p->stop = 1;
  pthread_mutex_unlock(&p->mu);
  if (!killed) {
    wake(p);
    pthread_join(p->th, NULL);
  }
  for (size_t i = 0; i < p->ncycles; i++) free(p->cycles[i].values);
  free(p->cycles);
  close(p->wake[0]);
  close(p->wake[1]);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}

static int count_in(const char *path, int pid, int cpid_col) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[512];
  int n = 0;
  if (!fgets(line, sizeof line, f)) { fclose(f); return 0; }
  while (fgets(line, sizeof line, f)) {
    char *tok = strtok(line, " \t");
    for (int col = 0; tok && col < cpid_col; col++) tok = strtok(NULL, " \t");
    if (tok && atoi(tok) == pid) n++;
  }
  fclose(f);
  return n;
}

int la_test_ipc_wait_count(int pid, int n, int timeout_ms) {
  struct timespec nap = {0, 5 * 1000000L};
  uint64_t end = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
  for (;;) {
    if (la_test_ipc_count(pid) == n) return 0;
    if (now_ms() >= end) return -1;
    nanosleep(&nap, NULL);
  }
}

int la_test_ipc_count(int pid) {
  /* /proc/sysvipc/shm: key shmid perms size cpid ...; sem has no cpid, so
   * semaphore sets are counted by the test runner's ipcs comparison. */
  return count_in("/proc/sysvipc/shm", pid, 4);
}
