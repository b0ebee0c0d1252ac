/* SPDX-License-Identifier: BSD-3-Clause */
/* ipc.c: the application side of the shared-memory hand-off.
 *
 * One SysV segment (layout: wire/la_shm_layout.h) and one SysV semaphore
 * set per process, both IPC_PRIVATE and mode 0600. Semaphore i is 1 while
 * buffer i is free for the application. The application takes a buffer
 * without SEM_UNDO (the agent, not the kernel, gives it back).
 *
 * Lifetime: the segment is marked for removal right after our own shmat,
 * before anyone else knows its id (Linux still lets the agent attach it by
 * id), so it disappears with the last process attached, however both end.
 * The semaphore set has no such mode: after the agent has attached (the
 * kernel reports two attachments, the last by another process), ownership
 * of the set passes to the agent's uid (la__ipc_handover; we keep access as
 * its creator), so an unprivileged agent can remove it when we die. It is
 * removed by LA_finalize, by libla when it loses the agent, or by the agent.
 *
 * At the end the segment's mapping is replaced by private anonymous memory
 * of the same size at the same address (never unmapped), so a thread still
 * probing against the contract writes into scratch memory, never into a
 * hole; it is unmapped only when the next registration ends (one scratch
 * mapping at most, untouched pages cost no memory).
 * Layout 4 adds the weights area after the buffers (header only here; the
 * agent fills the slots, weights.c reads them); layout 5 adds, for a grid
 * registration, one row value per grid row at the end of each buffer (row
 * probes add there, the agent spreads them). LA_SHM_LAYOUT=3 or 4 makes the
 * layout of libla before them, for a LocalAgent that predates them.
 * Not here: when to take or hand over buffers (lifecycle.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

#include "la_internal.h"
#include "la_sysv.h"
#include "la_time.h"

/* The scratch mapping left where the last segment was (see above). */
static struct {
  void *addr;
  size_t len;
} la__scratch;

static uint64_t la__nonce(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = ((uint64_t)ts.tv_nsec << 32) ^ (uint64_t)ts.tv_sec ^
        ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)&v;
  }
  return v ? v : 1;
}

int la__ipc_create(la__ipc_t *ipc, uint64_t n_elements, uint32_t n_buffers) {
  return la__ipc_create_ch(ipc, n_elements, n_buffers, 1);
}

int la__ipc_layout(uint32_t *layout) {
  *layout = LA_SHM_VERSION;
  const char *env = getenv("LA_SHM_LAYOUT");
  if (!env || !*env) return 0;
  int v = strlen(env) == 1 ? env[0] - '0' : -1;
  if (v < (int)LA_SHM_VERSION_MIN || v > (int)LA_SHM_VERSION)
    return la__error(LA_ECONFIG, "LA_SHM_LAYOUT='%s': %u to %u", env,
                     LA_SHM_VERSION_MIN, LA_SHM_VERSION);
  *layout = (uint32_t)v;
  return 0;
}

int la__ipc_create_ch(la__ipc_t *ipc, uint64_t n_elements, uint32_t n_buffers,
                      uint32_t n_channels) {
  uint32_t layout;
  int rc = la__ipc_layout(&layout);
  if (rc) {
    memset(ipc, 0, sizeof *ipc);
    ipc->shm_id = ipc->sem_id = -1;
    return rc;
  }
  return la__ipc_create_v(ipc, n_elements, n_buffers, n_channels, layout, 0);
}

/* Fills the weights area's header (the slots stay zero: no generation). */
static void la__ipc_weights_init(la__ipc_t *ipc) {
  la_shm_weights_hdr_t *a =
      la_shm_weights_area_r(ipc->hdr, ipc->n_elements, ipc->n_buffers,
                            ipc->n_channels, ipc->n_rows);
  a->version = LA_SHM_WEIGHTS_VERSION;
  a->header_len = sizeof *a;
  a->n_elements = ipc->n_elements;
  a->n_slots = LA_SHM_WEIGHTS_SLOTS;
  a->flags = LA_SHM_WEIGHTS_F_PIECES; /* la__read spreads slots of pieces */
  a->slot_stride = la_shm_weights_stride(ipc->n_elements);
  a->magic = LA_SHM_WEIGHTS_MAGIC;
}

uint64_t la__ipc_behind(const la__ipc_t *ipc) {
  if (!ipc->hdr || !ipc->weights) return 0;
  const la_shm_weights_hdr_t *a =
      la_shm_weights_area_r(ipc->hdr, ipc->n_elements, ipc->n_buffers,
                            ipc->n_channels, ipc->n_rows);
  /* the agent may be another user's: a header that is not this segment's
   * (weights.c checks it in full) counts nothing */
  if (a->magic != LA_SHM_WEIGHTS_MAGIC || a->n_elements != ipc->n_elements)
    return 0;
  return __atomic_load_n(&a->behind, __ATOMIC_RELAXED);
}

int la__ipc_create_v(la__ipc_t *ipc, uint64_t n_elements, uint32_t n_buffers,
                     uint32_t n_channels, uint32_t layout, uint64_t grid_rows) {
  memset(ipc, 0, sizeof *ipc);
  ipc->shm_id = ipc->sem_id = -1;
  if (n_elements == 0 || n_elements > LA_SHM_MAX_ELEMENTS)
    return la__error(LA_EINVAL, "element count %llu outside 1..2^32",
                     (unsigned long long)n_elements);
  if (n_channels < 1 || n_channels > LA_SHM_MAX_CHANNELS)
    return la__error(LA_EINVAL, "channel count %u outside 1..%u", n_channels,
                     LA_SHM_MAX_CHANNELS);
  if (layout < LA_SHM_VERSION_MIN || layout > LA_SHM_VERSION)
    return la__error(LA_EINVAL, "shared-memory layout %u outside %u..%u",
                     layout, LA_SHM_VERSION_MIN, LA_SHM_VERSION);
  if (grid_rows && n_elements % grid_rows)
    return la__error(LA_EINVAL, "%llu rows do not divide %llu elements",
                     (unsigned long long)grid_rows,
                     (unsigned long long)n_elements);
  uint64_t n_rows = layout >= 5 ? grid_rows : 0;
  uint64_t size =
      la_shm_segment_size_r(n_elements, n_buffers, n_channels, n_rows);
  int weights = layout >= 4;
  if (weights) size += la_shm_weights_bytes(n_elements);
  uint64_t n_pieces = layout >= 6 ? la_shm_pieces_count(n_elements) : 0;
  if (n_pieces) size += la_shm_pieces_bytes(n_elements, n_buffers);
  ipc->shm_id = shmget(IPC_PRIVATE, size, IPC_CREAT | IPC_EXCL | 0600);
  if (ipc->shm_id < 0)
    return la__error(LA_EIPC, "shmget of %llu bytes: %s (see kernel.shmmax)",
                     (unsigned long long)size, strerror(errno));
  void *p = shmat(ipc->shm_id, NULL, 0);
  if (p == (void *)-1) {
    int e = errno;
    shmctl(ipc->shm_id, IPC_RMID, NULL);
    ipc->shm_id = -1;
    return la__error(LA_EIPC, "shmat: %s", strerror(e));
  }
  ipc->hdr = p;
  ipc->size = size;
  la__ipc_mark(ipc); /* before the id leaves this process */
  ipc->sem_id =
      semget(IPC_PRIVATE, (int)n_buffers, IPC_CREAT | IPC_EXCL | 0600);
  if (ipc->sem_id < 0) {
    int e = errno;
    la__ipc_destroy(ipc);
    return la__error(LA_EIPC, "semget of %u semaphores: %s", n_buffers,
                     strerror(e));
  }
  unsigned short ones[LA_SHM_MAX_BUFFERS];
  for (uint32_t i = 0; i < n_buffers; i++) ones[i] = 1;
  union la_semun arg = {.array = ones};
  if (semctl(ipc->sem_id, 0, SETALL, arg) != 0) {
    int e = errno;
    la__ipc_destroy(ipc);
    return la__error(LA_EIPC, "semctl SETALL: %s", strerror(e));
  }
  la_shm_header_t *h = ipc->hdr;
  ipc->n_buffers = n_buffers;
  ipc->n_elements = n_elements;
  ipc->n_channels = n_channels;
  ipc->layout = layout;
  ipc->weights = weights;
  ipc->n_rows = n_rows;
  ipc->n_pieces = n_pieces;
  if (weights) la__ipc_weights_init(ipc);
  h->version = layout;
  h->features = (weights ? LA_SHM_FEAT_WEIGHTS : 0) |
                (n_rows ? LA_SHM_FEAT_ROWS : 0) |
                (n_pieces ? LA_SHM_FEAT_PIECES : 0);
  h->header_len = sizeof *h;
  h->n_elements = n_elements;
  h->n_buffers = n_buffers;
  h->creator_pid = (int32_t)getpid();
  h->nonce = la__nonce();
  h->buffer_stride = la_shm_buffer_stride_r(n_elements, n_channels, n_rows);
  h->segment_size = size;
  h->n_channels = n_channels;
  __atomic_store_n(&h->magic, LA_SHM_MAGIC, __ATOMIC_RELEASE);
  return 0;
}

void la__ipc_mark(la__ipc_t *ipc) {
  if (ipc->shm_id >= 0 && !ipc->shm_marked &&
      shmctl(ipc->shm_id, IPC_RMID, NULL) == 0)
    ipc->shm_marked = 1;
}

double *la__ipc_values(const la__ipc_t *ipc, uint32_t i) {
  return la_shm_buffer_r(ipc->hdr, ipc->n_elements, ipc->n_channels,
                         ipc->n_rows, i);
}

double *la__ipc_rows(const la__ipc_t *ipc, uint32_t i) {
  if (!ipc->n_rows) return NULL;
  return la_shm_buffer_rows(ipc->hdr, ipc->n_elements, ipc->n_channels,
                            ipc->n_rows, i);
}

la_shm_pieces_head_t *la__ipc_pieces(const la__ipc_t *ipc, uint32_t i) {
  if (!ipc->n_pieces) return NULL;
  return la_shm_pieces_head(ipc->hdr, ipc->n_elements, ipc->n_buffers,
                            ipc->n_channels, ipc->n_rows, i);
}

uint8_t *la__ipc_flags(const la__ipc_t *ipc, uint32_t i) {
  return la_shm_buffer_flags_r(ipc->hdr, ipc->n_elements, ipc->n_channels,
                               ipc->n_rows, i);
}

int la__ipc_handover(la__ipc_t *ipc) {
  struct shmid_ds ds;
  if (shmctl(ipc->shm_id, IPC_STAT, &ds) != 0)
    return la__error(LA_EIPC, "segment IPC_STAT: %s", strerror(errno));
  /* Only a process allowed to attach our 0600 segment can be the second
   * attachment and the last to attach: the agent that just answered. */
  if (ds.shm_nattch != 2 || ds.shm_lpid <= 0 || ds.shm_lpid == getpid())
    return la__error(LA_EIPC,
                     "the agent has not attached the segment "
                     "(%lu attachments)",
                     (unsigned long)ds.shm_nattch);
  int uid = la_pid_uid((int)ds.shm_lpid);
  if (uid < 0)
    return la__error(LA_EIPC, "agent process %d not found", (int)ds.shm_lpid);
  struct semid_ds sd;
  union la_semun arg = {.buf = &sd};
  if (semctl(ipc->sem_id, 0, IPC_STAT, arg) != 0)
    return la__error(LA_EIPC, "semaphore IPC_STAT: %s", strerror(errno));
  if ((int)sd.sem_perm.uid == uid) return 0;
  sd.sem_perm.uid = (uid_t)uid; /* gid and mode 0600 stay */
  if (semctl(ipc->sem_id, 0, IPC_SET, arg) != 0)
    return la__error(LA_EIPC, "handing the semaphore set to uid %d: %s", uid,
                     strerror(errno));
  return 0;
}

/* Takes the first buffer free from i on (in turn, then after it), without
 * waiting: 0 with *buf set, 1 when none is free, or the error. */
static int la__ipc_try(la__ipc_t *ipc, uint32_t i, uint32_t *buf) {
  struct sembuf op = {.sem_op = -1, .sem_flg = IPC_NOWAIT};
  for (uint32_t k = 0; k < ipc->n_buffers; k++) {
    op.sem_num = (unsigned short)((i + k) % ipc->n_buffers);
    for (;;) {
      if (semop(ipc->sem_id, &op, 1) == 0) {
        *buf = op.sem_num;
        return 0;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      if (errno == EIDRM || errno == EINVAL)
        return la__error(LA_EAGENTLOST, "semaphore set removed under us");
      return la__error(LA_EIPC, "semop: %s", strerror(errno));
    }
  }
  return 1;
}

int la__ipc_acquire(la__ipc_t *ipc, uint32_t *buf, int timeout_ms,
                    int (*alive)(void *), void *arg, int *waited,
                    uint64_t *wait_ns) {
  uint32_t i = *buf;
  *waited = 0;
  /* the next buffer in turn, else any free one after it: the agent takes
   * cycles in the order they are handed over, whatever their buffers */
  int rc = la__ipc_try(ipc, i, buf);
  if (rc != 1) return rc;
  if (timeout_ms == 0) return LA_ESKIPPED;
  *waited = 1;
  uint64_t t0 = la_mono_ns(), checked = t0;
  uint64_t limit = (uint64_t)timeout_ms * 1000000u;
  struct sembuf op = {.sem_num = (unsigned short)i, .sem_op = -1};
  for (;;) {
    /* Blocked on the buffer in turn, but in slices of 1 ms, trying every
     * buffer between them: whichever the agent gives back first is taken.
     * The one in turn may be held for a whole compaction (queued behind
     * another) while the agent hands back a later one at once (a cycle
     * it was behind on: agent.max_backlog). */
    struct timespec slice = {0, 1000000};
    if (semtimedop(ipc->sem_id, &op, 1, &slice) == 0) {
      *buf = i;
      *wait_ns += la_mono_ns() - t0;
      return 0;
    }
    int e = errno;
    if (e == EIDRM || e == EINVAL) {
      *wait_ns += la_mono_ns() - t0;
      return la__error(LA_EAGENTLOST, "semaphore set removed while waiting");
    }
    if (e != EAGAIN && e != EINTR) {
      *wait_ns += la_mono_ns() - t0;
      return la__error(LA_EIPC, "semtimedop: %s", strerror(e));
    }
    rc = la__ipc_try(ipc, i, buf);
    if (rc != 1) {
      *wait_ns += la_mono_ns() - t0;
      return rc;
    }
    uint64_t now = la_mono_ns();
    if (now - checked >= 50 * 1000000u) { /* the agent, every 50 ms */
      checked = now;
      int gone = alive ? alive(arg) : 0;
      if (gone) { /* LA_EAGENTLOST, or LA_EREFUSED (for good) */
        *wait_ns += la_mono_ns() - t0;
        return gone == LA_EREFUSED ? LA_EREFUSED : LA_EAGENTLOST;
      }
    }
    if (now - t0 >= limit) {
      *wait_ns += la_mono_ns() - t0;
      la__error(LA_ESKIPPED, "no buffer back from the agent within %d ms",
                timeout_ms);
      return LA_ESKIPPED;
    }
  }
}

void la__ipc_destroy(la__ipc_t *ipc) {
  if (ipc->sem_id >= 0) {
    semctl(ipc->sem_id, 0, IPC_RMID);
    ipc->sem_id = -1;
  }
  if (ipc->hdr) {
    /* Replacing the mapping detaches the segment (the kernel counts it) and
     * leaves scratch memory behind for late probes. */
    void *p =
        mmap(ipc->hdr, ipc->size, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    if (p == (void *)ipc->hdr) {
      if (la__scratch.addr) munmap(la__scratch.addr, la__scratch.len);
      la__scratch.addr = p;
      la__scratch.len = ipc->size;
    } else {
      shmdt(ipc->hdr);
    }
    ipc->hdr = NULL;
  }
  if (ipc->shm_id >= 0) {
    if (!ipc->shm_marked) shmctl(ipc->shm_id, IPC_RMID, NULL);
    ipc->shm_id = -1;
  }
}
