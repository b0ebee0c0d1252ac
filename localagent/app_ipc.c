/* SPDX-License-Identifier: BSD-3-Clause */
/* app_ipc.c: verification, reading and removal of an application's SysV
 * objects (see app_ipc.h). After attach nothing here reads geometry from the
 * segment: buffer addresses come from the copies in la_app_ipc_t. */
#include "app_ipc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <strings.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_compact.h"
#include "la_simd.h"
#include "la_log.h"
#include "shm_zero.h"
#include "la_shm_pieces.h"
#include "la_sysv.h"
#include "la_time.h"
#if LA_COMPACT_X86
#include <immintrin.h>
#endif

static int la__refuse(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int la__refuse(char *why, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (why && n) vsnprintf(why, n, fmt, ap);
  va_end(ap);
  return LA_EREFUSED;
}

/* The registering process is gone (killed while it waited for our answer):
 * remove what it provably left, as far as our privileges allow. Its
 * semaphore set is recognised by the kernel's record of the last operation
 * on every semaphore: the creator's SETALL, nothing since (libla takes its
 * first buffer only after the reply), and not handed over (uid == cuid).
 * Its segment, if still there (libla marks it for removal at once), by its
 * creator pid and the nonce. */
static void la__remove_leftovers(int shm_id, int sem_id, int pid,
                                 uint64_t nonce) {
  struct semid_ds sd;
  union la_semun arg = {.buf = &sd};
  if (semctl(sem_id, 0, IPC_STAT, arg) == 0 &&
      sd.sem_perm.uid == sd.sem_perm.cuid && sd.sem_otime == 0 &&
      sd.sem_nsems >= LA_SHM_MIN_BUFFERS &&
      sd.sem_nsems <= LA_SHM_MAX_BUFFERS) {
    unsigned long k = 0;
    while (k < sd.sem_nsems && semctl(sem_id, (int)k, GETPID) == pid) k++;
    if (k == sd.sem_nsems && semctl(sem_id, 0, IPC_RMID) == 0)
      la_log_info("removed semaphore set %d left by pid %d", sem_id, pid);
  }
  struct shmid_ds ds;
  if (shmctl(shm_id, IPC_STAT, &ds) != 0 || ds.shm_cpid != pid) return;
  void *h = shmat(shm_id, NULL, SHM_RDONLY);
  if (h == (void *)-1) return;
  int ours = ds.shm_segsz >= sizeof(la_shm_header_t) &&
             ((const la_shm_header_t *)h)->nonce == nonce;
  shmdt(h);
  if (ours) shmctl(shm_id, IPC_RMID, NULL);
}

int la_app_ipc_attach(la_app_ipc_t *ipc, int shm_id, int sem_id, int pid,
                      uint64_t nonce, uint64_t n_elements, uint32_t n_buffers,
                      uint32_t n_channels, const uint64_t *grid,
                      int peer_uid, char *why, size_t n) {
  memset(ipc, 0, sizeof *ipc);
  uint64_t grid_rows = grid ? grid[1] * grid[2] : 0;
  ipc->shm_id = ipc->sem_id = -1;
  if (pid <= 0) return la__refuse(why, n, "bad pid %d", pid);
  if (la_pid_uid(pid) < 0) {
    la__remove_leftovers(shm_id, sem_id, pid, nonce);
    return la__refuse(why, n, "process %d is not running", pid);
  }
  struct shmid_ds ds;
  if (shmctl(shm_id, IPC_STAT, &ds) != 0)
    return la__refuse(why, n, "segment %d: %s", shm_id, strerror(errno));
  if (ds.shm_cpid != pid)
    return la__refuse(why, n, "segment %d was created by pid %d, not %d",
                      shm_id, (int)ds.shm_cpid, pid);
  if ((ds.shm_perm.mode & 0777) != 0600)
    return la__refuse(why, n, "segment %d has mode %03o, expected 600", shm_id,
                      ds.shm_perm.mode & 0777);
  int owner = (int)ds.shm_perm.uid;
  int puid = la_pid_uid(pid);
  if (puid < 0) return la__refuse(why, n, "process %d is not running", pid);
  if (puid != owner || (int)ds.shm_perm.cuid != owner)
    return la__refuse(why, n,
                      "segment %d belongs to uid %d, process %d to "
                      "uid %d",
                      shm_id, owner, pid, puid);
  if (peer_uid >= 0 && peer_uid != owner)
    return la__refuse(why, n,
                      "the connection belongs to uid %d, the segment "
                      "to uid %d",
                      peer_uid, owner);
  struct semid_ds sd;
  union la_semun arg = {.buf = &sd};
  if (semctl(sem_id, 0, IPC_STAT, arg) != 0)
    return la__refuse(why, n, "semaphore set %d: %s", sem_id, strerror(errno));
  if ((int)sd.sem_perm.uid != owner || (int)sd.sem_perm.cuid != owner ||
      (sd.sem_perm.mode & 0777) != 0600)
    return la__refuse(why, n,
                      "semaphore set %d is not the segment owner's "
                      "with mode 600",
                      sem_id);
  if (sd.sem_nsems != n_buffers)
    return la__refuse(why, n,
                      "semaphore set %d has %lu semaphores, the "
                      "registration says %u buffers",
                      sem_id, (unsigned long)sd.sem_nsems, n_buffers);
  void *h = shmat(shm_id, NULL, 0);
  if (h == (void *)-1)
    return la__refuse(why, n, "cannot attach segment %d: %s", shm_id,
                      strerror(errno));
  /* The one time the header's geometry is read, from one copy (the
   * application may rewrite it meanwhile); from here on only the values
   * derived from the registration and the kernel's size count. */
  la_shm_header_t copy;
  if (ds.shm_segsz >= sizeof copy) memcpy(&copy, h, sizeof copy);
  const char *bad = la_shm_header_check_r(&copy, ds.shm_segsz, n_elements,
                                          n_buffers, n_channels, grid_rows,
                                          nonce);
  if (bad) {
    shmdt(h);
    return la__refuse(why, n, "segment %d: %s", shm_id, bad);
  }
  ipc->layout = copy.version;
  ipc->weights = (copy.features & LA_SHM_FEAT_WEIGHTS) != 0;
  ipc->n_rows = (copy.features & LA_SHM_FEAT_ROWS) ? grid_rows : 0;
  ipc->n_pieces = (copy.features & LA_SHM_FEAT_PIECES)
                      ? la_shm_pieces_count(n_elements)
                      : 0;
  if (grid) memcpy(ipc->grid, grid, sizeof ipc->grid);
  if (ipc->weights) { /* what the application's libla reads (data) */
    const la_shm_weights_hdr_t *a = la_shm_weights_area_r(
        h, n_elements, n_buffers, n_channels, ipc->n_rows);
    ipc->weights_spread =
        __atomic_load_n(&a->version, __ATOMIC_RELAXED) ==
        LA_SHM_WEIGHTS_VERSION_SPREAD;
  }
  pthread_mutex_init(&ipc->w_mu, NULL);
  if (!ipc->weights)
    la_log_info(
        "pid %d: shared-memory layout %u without a weights area: "
        "profiled, but LA_weights gets no weights",
        pid, ipc->layout);
  ipc->hdr = h;
  ipc->shm_id = shm_id;
  ipc->sem_id = sem_id;
  ipc->n_buffers = n_buffers;
  ipc->n_elements = n_elements;
  ipc->n_channels = n_channels;
  ipc->owner_uid = owner;
  ipc->pid = pid;
  return 0;
}

/* Buffer i from the attach-time geometry (i < n_buffers checked by the
 * caller; attach proved n_buffers buffers fit in the segment). */
static double *la__values(const la_app_ipc_t *ipc, uint32_t i) {
  return la_shm_buffer_r(ipc->hdr, ipc->n_elements, ipc->n_channels,
                         ipc->n_rows, i);
}

/* Row values of buffer i (n_rows of them; only with rows). */
static double *la__rows(const la_app_ipc_t *ipc, uint32_t i) {
  return la_shm_buffer_rows(ipc->hdr, ipc->n_elements, ipc->n_channels,
                            ipc->n_rows, i);
}

/* Buffer i's piece table head (only with pieces). */
static la_shm_pieces_head_t *la__pieces(const la_app_ipc_t *ipc, uint32_t i) {
  return la_shm_pieces_head(ipc->hdr, ipc->n_elements, ipc->n_buffers,
                            ipc->n_channels, ipc->n_rows, i);
}

/* Whether buffer i's piece table says a record was claimed (data). */
static int la__pieces_claimed(const la_app_ipc_t *ipc, uint32_t i) {
  return ipc->n_pieces &&
         __atomic_load_n(&la__pieces(ipc, i)->claimed, __ATOMIC_RELAXED) != 0;
}

/* Zeroes buffer i's piece table when a record was claimed. */
static void la__zero_pieces(la_app_ipc_t *ipc, uint32_t i) {
  if (!la__pieces_claimed(ipc, i)) return;
  la_shm_pieces_head_t *h = la__pieces(ipc, i);
  memset(h, 0, sizeof *h + ipc->n_pieces * sizeof(la_shm_piece_t));
}

/* Spreads buffer i's piece records over its cells (la_shm_pieces_fold:
 * into cells, n_channels x n_elements values, or NULL for the buffer's
 * own; with blocks, over the sums of blocks of k cells instead, and with
 * ch_blocks over each channel's block sums too) and zeroes the table,
 * when a record was claimed. Returns the records refused (the first
 * reason logged once per registration) and adds the probes libla spread
 * itself (the table full) to pieces_spilled. */
static uint64_t la__fold_pieces(la_app_ipc_t *ipc, uint32_t i, double *cells,
                                double *blocks, double *ch_blocks, uint64_t k) {
  if (!la__pieces_claimed(ipc, i)) return 0;
  la_shm_pieces_head_t *h = la__pieces(ipc, i);
  uint64_t spilled = __atomic_load_n(&h->spilled, __ATOMIC_RELAXED);
  const char *why = NULL;
  uint64_t bad = la_shm_pieces_fold(h, ipc->n_pieces,
                                    cells ? cells : la__values(ipc, i),
                                    ipc->n_elements, ipc->n_channels,
                                    ipc->grid[0] ? ipc->grid : NULL, blocks,
                                    ch_blocks, k, 1, &why);
  if (spilled && __atomic_fetch_add(&ipc->pieces_spilled, spilled,
                                    __ATOMIC_RELAXED) == 0)
    la_log_info("application pid %d: its piece table was full, %llu box or "
                "range probes spread over their cells in the application "
                "(said once)",
                ipc->pid, (unsigned long long)spilled);
  if (bad &&
      __atomic_fetch_add(&ipc->pieces_refused, bad, __ATOMIC_RELAXED) == 0)
    la_log_warnx("application pid %d, buffer %u: %llu piece records refused "
                 "(first: %s); counted as probes out of range (said once)",
                 ipc->pid, i, (unsigned long long)bad, why);
  return bad;
}

/* Zeroes buffer i's values from value k0 on (channel-major), its row
 * values and its piece table. */
static void la__zero_from(la_app_ipc_t *ipc, uint32_t i, uint64_t k0) {
  uint64_t n = (uint64_t)ipc->n_channels * ipc->n_elements;
  memset(la__values(ipc, i) + k0, 0, (n - k0) * sizeof(double));
  if (ipc->n_rows) memset(la__rows(ipc, i), 0, ipc->n_rows * sizeof(double));
  la__zero_pieces(ipc, i);
}

/* Channel 0 of buffer i (v: its cells, or a copy; may be out) with each
 * row's value spread over its cells:
 * out[c] = (v[c] + rows[r] / nx) * scale for cell c of row r, the
 * arithmetic of a row probe that spreads in the application (libla
 * before rows) followed by the scaling. One pass, shared memory read
 * once. Returns whether any cell of channel 0 held a bit (a row-probed
 * cycle leaves them all zero: then they need no zeroing). */
static int la__take_rows(const la_app_ipc_t *ipc, uint32_t i, const double *v,
                         double *out, double scale) {
  const double *rows = la__rows(ipc, i);
  uint64_t nx = ipc->n_elements / ipc->n_rows;
  uint64_t bits = 0;
  for (uint64_t r = 0; r < ipc->n_rows; r++) {
    const uint64_t *ur = (const uint64_t *)(const void *)(v + r * nx);
    double *o = out + r * nx;
    double share = la_shm_row_share(rows[r], nx);
    uint64_t c = 0;
    /* four at a time: -O2 turns these into vector operations (it does
     * not vectorise a loop of unknown length); the same results */
    for (; c + 4 <= nx; c += 4) {
      double x[4];
      memcpy(x, ur + c, sizeof x);
      bits |= ur[c] | ur[c + 1] | ur[c + 2] | ur[c + 3];
      o[c] = (x[0] + share) * scale;
      o[c + 1] = (x[1] + share) * scale;
      o[c + 2] = (x[2] + share) * scale;
      o[c + 3] = (x[3] + share) * scale;
    }
    for (; c < nx; c++) {
      double x;
      memcpy(&x, ur + c, sizeof x);
      bits |= ur[c];
      o[c] = (x + share) * scale;
    }
  }
  return bits != 0;
}

void la_app_ipc_give_back(la_app_ipc_t *ipc, uint32_t i) {
  struct sembuf op = {.sem_num = (unsigned short)i, .sem_op = 1};
  while (semop(ipc->sem_id, &op, 1) != 0 && errno == EINTR) {
  }
}

void la_app_ipc_discard(la_app_ipc_t *ipc, uint32_t i) {
  if (!ipc->hdr || i >= ipc->n_buffers) return;
  /* a cycle of row values only (libla says no cell was written, as
   * la_app_ipc_take_rows trusts): its rows are all there is to zero */
  if (ipc->n_rows && ipc->hdr->buf[i].cells == LA_SHM_CELLS_NONE) {
    memset(la__rows(ipc, i), 0, ipc->n_rows * sizeof(double));
    la__zero_pieces(ipc, i);
    return;
  }
  la__zero_from(ipc, i, 0);
}

int la_app_ipc_take_blocks(la_app_ipc_t *ipc, uint32_t i, uint64_t k,
                           double *blocks, double *ch_blocks,
                           la_shm_bufmeta_t *meta) {
  uint64_t n = ipc->n_elements;
  if (!ipc->hdr || i >= ipc->n_buffers || k == 0 || n % k) return LA_EINVAL;
  memcpy(meta, (const void *)&ipc->hdr->buf[i], sizeof *meta);
  double scale = meta->scale;
  if (!(isfinite(scale) && scale > 0)) {
    la__zero_from(ipc, i, 0);
    la_log_warnx("application pid %d, buffer %u: scale %g is not a positive "
                 "finite number: cycle %llu rejected",
                 ipc->pid, i, scale, (unsigned long long)meta->cycle_tag);
    return LA_EPROTO;
  }
  uint64_t nb = n / k;
  uint32_t nc = ch_blocks && ipc->n_channels > 1 ? ipc->n_channels : 0;
  memset(blocks, 0, nb * sizeof *blocks);
  if (nc) memset(ch_blocks, 0, nc * nb * sizeof *ch_blocks);
  int cells = !(ipc->n_rows && meta->cells == LA_SHM_CELLS_NONE);
  /* the pieces' shares go to the blocks, not through the cells */
  meta->range_errors += la__fold_pieces(ipc, i, NULL, blocks, nc ? ch_blocks : NULL, k);
  double *v = la__values(ipc, i);
  for (uint32_t c = 0; cells && c < ipc->n_channels; c++) {
    double *vc = v + (uint64_t)c * n;
    for (uint64_t b = 0; b < nb; b++) {
      double *p = vc + b * k, s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      uint64_t e = 0;
      for (; e + 4 <= k; e += 4) { /* four sums: vector operations */
        s0 += p[e];
        s1 += p[e + 1];
        s2 += p[e + 2];
        s3 += p[e + 3];
      }
      for (; e < k; e++) s0 += p[e];
      memset(p, 0, k * sizeof *p);
      double sum = (s0 + s1) + (s2 + s3);
      blocks[b] += sum;
      if (nc) ch_blocks[c * nb + b] += sum;
    }
  }
  if (ipc->n_rows) { /* each row's share of the blocks its cells are in
                        (channel 0's: libla adds row values there) */
    double *r = la__rows(ipc, i);
    uint64_t nx = n / ipc->n_rows;
    for (uint64_t row = 0; row < ipc->n_rows; row++) {
      double share = la_shm_row_share(r[row], nx);
      la_shm_spread_blocks(blocks, k, row * nx, nx, share);
      if (nc) la_shm_spread_blocks(ch_blocks, k, row * nx, nx, share);
    }
    memset(r, 0, ipc->n_rows * sizeof *r);
  }
  for (uint64_t b = 0; b < nb; b++) blocks[b] *= scale;
  for (uint64_t b = 0; b < (uint64_t)nc * nb; b++) ch_blocks[b] *= scale;
  return 0;
}

/* The channels' sum of buffer i in counts, scaled once (la_app_ipc_take). */
static void la__take_sum(const la_app_ipc_t *ipc, uint32_t i, double *sum,
                         double scale) {
  const double *v = la__values(ipc, i);
  const double *rows = ipc->n_rows ? la__rows(ipc, i) : NULL;
  uint64_t n = ipc->n_elements, nx = rows ? n / ipc->n_rows : 1;
  for (uint64_t e = 0; e < n; e++) {
    double s = v[e];
    if (rows) s += la_shm_row_share(rows[e / nx], nx);
    for (uint32_t c = 1; c < ipc->n_channels; c++) s += v[c * n + e];
    sum[e] = s * scale;
  }
}

#define LA__TAKE_BLOCK 2048 /* values: 16 KB, within L1 */

#if LA_COMPACT_X86
/* out[k] = v[k] * scale for k in [k, end) four at a time (the same
 * products); returns the first k not done. */
__attribute__((target("avx2"))) static uint64_t la__scale_avx2(
    double *out, const double *v, uint64_t k, uint64_t end, double scale) {
  const __m256d s = _mm256_set1_pd(scale);
  for (; k + 4 <= end; k += 4)
    _mm256_storeu_pd(out + k, _mm256_mul_pd(_mm256_loadu_pd(v + k), s));
  return k;
}
#endif

int la_app_ipc_take(la_app_ipc_t *ipc, uint32_t i, double *out, double *sum,
                    la_shm_bufmeta_t *meta) {
  if (!ipc->hdr || i >= ipc->n_buffers) return LA_EINVAL;
  /* One copy of the meta data: the application may rewrite it meanwhile. */
  memcpy(meta, (const void *)&ipc->hdr->buf[i], sizeof *meta);
  double *v = la__values(ipc, i);
  uint64_t n = (uint64_t)ipc->n_channels * ipc->n_elements;
  double scale = meta->scale;
  if (!(isfinite(scale) && scale > 0)) {
    la__zero_from(ipc, i, 0);
    la_log_warnx(
        "application pid %d, buffer %u: scale %g is not a positive "
        "finite number: cycle %llu rejected",
        ipc->pid, i, scale, (unsigned long long)meta->cycle_tag);
    return LA_EPROTO;
  }
  if (ipc->n_rows && ipc->n_channels == 1 &&
      meta->cells == LA_SHM_CELLS_NONE) {
    /* rows and pieces only (libla says no cell was written): the cells
     * are neither read nor zeroed; the pieces are spread into out and
     * the rows added as la__take_rows adds them to cells */
    memset(out, 0, ipc->n_elements * sizeof *out);
    meta->range_errors += la__fold_pieces(ipc, i, out, NULL, NULL, 0);
    la__take_rows(ipc, i, out, out, scale);
    memset(la__rows(ipc, i), 0, ipc->n_rows * sizeof(double));
    return 0;
  }
  meta->range_errors += la__fold_pieces(ipc, i, NULL, NULL, NULL, 0);
  if (sum && ipc->n_channels > 1) la__take_sum(ipc, i, sum, scale);
  uint64_t k0 = 0; /* values copied so far */
  int cells = 1;    /* channel 0's cells need zeroing */
  if (ipc->n_rows) {
    cells = la__take_rows(ipc, i, v, out, scale);
    k0 = ipc->n_elements;
  }
  if (k0 == 0) {
    /* read and zeroed in one pass, each line of shared memory while it
     * is in cache (a second pass would fetch the buffer again) */
    int simd = la_compact_simd();
    for (uint64_t b = 0; b < n; b += LA__TAKE_BLOCK) {
      uint64_t m = n - b < LA__TAKE_BLOCK ? n - b : LA__TAKE_BLOCK, k = b;
      if (scale == 1.0) {
        memcpy(out + b, v + b, m * sizeof(double));
        k = b + m;
      }
#if LA_COMPACT_X86
      if (simd) k = la__scale_avx2(out, v, k, b + m, scale);
#else
      (void)simd;
#endif
      for (; k < b + m; k++) out[k] = v[k] * scale;
      memset(v + b, 0, m * sizeof(double));
    }
    return 0;
  }
  if (scale == 1.0)
    memcpy(out + k0, v + k0, (n - k0) * sizeof(double));
  else
    for (uint64_t k = k0; k < n; k++) out[k] = v[k] * scale;
  /* cells left zero need no zeroing: the rows and other channels do */
  la__zero_from(ipc, i, cells ? 0 : k0);
  return 0;
}

int la_app_ipc_take_rows(la_app_ipc_t *ipc, uint32_t i, double *rows,
                         la_shm_bufmeta_t *meta) {
  if (!ipc->hdr || i >= ipc->n_buffers) return LA_EINVAL;
  if (ipc->n_rows == 0 || ipc->n_channels != 1 ||
      ipc->n_elements % ipc->n_rows != 0 || ipc->n_elements / ipc->n_rows < 2)
    return 0;
  memcpy(meta, (const void *)&ipc->hdr->buf[i], sizeof *meta);
  /* libla says whether a cell was written; when it does not, the cells
   * are read until the first that is not zero */
  if (meta->cells == LA_SHM_CELLS_WRITTEN || la__pieces_claimed(ipc, i) ||
      (meta->cells != LA_SHM_CELLS_NONE &&
       !la_shm_all_zero(la__values(ipc, i), ipc->n_elements)))
    return 0;
  double scale = meta->scale, *r = la__rows(ipc, i);
  if (!(isfinite(scale) && scale > 0)) {
    la__zero_from(ipc, i, ipc->n_elements);
    la_log_warnx(
        "application pid %d, buffer %u: scale %g is not a positive "
        "finite number: cycle %llu rejected",
        ipc->pid, i, scale, (unsigned long long)meta->cycle_tag);
    return LA_EPROTO;
  }
  for (uint64_t k = 0; k < ipc->n_rows; k++) rows[k] = r[k] * scale;
  memset(r, 0, ipc->n_rows * sizeof *r);
  return 1;
}

/* Whether buffer i's cycle (meta: its meta data) wrote no cell value.
 * libla's word (meta->cells) is checked, not trusted: the pages of the
 * cells that are resident are read (la_shm_zero_unread; a box- or
 * range-probed cycle leaves none), or, where residency says nothing (swap
 * on), today's rule (la_shm_cells_none: NONE believed, UNKNOWN read). A
 * NONE found false (cells written by probes that do not mark them, e.g.
 * objects compiled against an older la.h) is counted and logged once,
 * and the buffer's meta data says WRITTEN from then on: the cycle is
 * taken with its cells (la_app_ipc_take), nothing lost. */
static int la__no_cells(la_app_ipc_t *ipc, uint32_t i,
                        const la_shm_bufmeta_t *meta) {
  if (meta->cells == LA_SHM_CELLS_WRITTEN) return 0;
  const double *v = la__values(ipc, i);
  int z = la_shm_zero_unread(v, ipc->n_elements);
  if (z < 0) return la_shm_cells_none(meta->cells, v, ipc->n_elements, NULL, 0);
  if (!z && meta->cells == LA_SHM_CELLS_NONE) {
    ipc->hdr->buf[i].cells = LA_SHM_CELLS_WRITTEN;
    if (__atomic_fetch_add(&ipc->cells_misstated, 1, __ATOMIC_RELAXED) == 0)
      la_log_warnx("application pid %d, buffer %u: cycle %llu said no cell "
                   "value was written, but cells hold values: taken with "
                   "its cells (probes that do not mark cells, an older "
                   "la.h?; said once)",
                   ipc->pid, i, (unsigned long long)meta->cycle_tag);
  }
  return z;
}

int la_app_ipc_take_pieces(la_app_ipc_t *ipc, uint32_t i, la_pieces_t *g,
                           double **values, uint8_t **geom, size_t *glen,
                           la_shm_bufmeta_t *meta) {
  memset(g, 0, sizeof *g);
  *values = NULL;
  *geom = NULL;
  *glen = 0;
  if (!ipc->hdr || i >= ipc->n_buffers) return LA_EINVAL;
  if (ipc->n_channels != 1 || !la__pieces_claimed(ipc, i)) return 0;
  memcpy(meta, (const void *)&ipc->hdr->buf[i], sizeof *meta);
  double scale = meta->scale;
  if (!(isfinite(scale) && scale > 0) || !la__no_cells(ipc, i, meta) ||
      (ipc->n_rows && !la_shm_all_zero(la__rows(ipc, i), ipc->n_rows)))
    return 0;
  double *v = malloc(ipc->n_pieces * sizeof *v);
  /* without memory: spread over the cells, as before */
  if (!v || la_pieces_from_shm(la__pieces(ipc, i), ipc->n_pieces,
                               ipc->n_elements,
                               ipc->grid[0] ? ipc->grid : NULL, scale, g,
                               v, geom, glen) != 1) {
    free(v);
    return 0;
  }
  la__zero_pieces(ipc, i); /* the cells and rows are 0 already */
  *values = v;
  return 1;
}

int la_app_ipc_flags(const la_app_ipc_t *ipc, uint32_t i, uint8_t *out) {
  if (!ipc->hdr || i >= ipc->n_buffers) return LA_EINVAL;
  memcpy(out,
         la_shm_buffer_flags_r(ipc->hdr, ipc->n_elements, ipc->n_channels,
                               ipc->n_rows, i),
         ipc->n_elements);
  return 0;
}

/* The slot work of la_app_ipc_put_weights(_values, _pieces): the values
 * are decoded from t, or the values v of pieces pc (the pieces
 * themselves where libla spreads them, LA_SHM_WEIGHTS_F_PIECES in the
 * area's header, else expanded), or
 * copied from v (n of them, spread: each over that many cells) when t
 * and pc are NULL. */
static int la__put_weights(la_app_ipc_t *ipc, uint64_t cycle_tag,
                           uint64_t rank_seq, int kind, const la_trace_t *t,
                           const la_pieces_t *pc, const double *v,
                           uint64_t spread) {
  uint64_t n = ipc->n_elements;
  int rc = 0;
  la_shm_weights_hdr_t *a =
      la_shm_weights_area_r(ipc->hdr, n, ipc->n_buffers, ipc->n_channels,
                            ipc->n_rows);
  pthread_mutex_lock(&ipc->w_mu);
  if (ipc->w_gen > 0 && rank_seq <= ipc->w_seq) {
    pthread_mutex_unlock(&ipc->w_mu);
    return 0; /* a later cycle is there already */
  }
  uint64_t g = ipc->w_gen + 1;
  la_shm_weights_slot_t *sl =
      la_shm_weights_slot(a, n, (uint32_t)(g % LA_SHM_WEIGHTS_SLOTS));
  /* odd before any value changes: the exchange's acquire keeps the writes
   * below after it (no fence: ThreadSanitizer does not model fences) */
  (void)__atomic_exchange_n(&sl->seq, 2 * g - 1, __ATOMIC_ACQ_REL);
  double *o = (double *)(sl + 1);
  sl->spread = 1;
  sl->pieces = 0;
  if (t) {
    rc = la_trace_decode(t, 0, n, o);
  } else if (pc && ipc->weights_spread && pc->count <= n / 4 &&
             (__atomic_load_n(&a->flags, __ATOMIC_RELAXED) &
              LA_SHM_WEIGHTS_F_PIECES)) {
    /* the pieces themselves: libla spreads them when it reads them */
    la_shm_piece_t *r = (la_shm_piece_t *)(void *)o;
    for (uint64_t p = 0; p < pc->count; p++)
      r[p] = (la_shm_piece_t){.key = (pc->p[p].first << 4) + 1,
                              .ni = pc->p[p].ni,
                              .nj = pc->p[p].nj,
                              .nk = pc->p[p].nk,
                              .value = v[p]};
    sl->pieces = pc->count;
  } else if (pc) { /* straight into the slot, no copy in between */
    la_pieces_expand(pc, v, o);
  } else if (spread == 1) {
    memcpy(o, v, n * sizeof *v);
  } else if (ipc->weights_spread) { /* one value per row: libla divides */
    memcpy(o, v, n / spread * sizeof *v);
    sl->spread = spread;
  } else { /* each value over its cells, as a decoder gives them */
    double dk = (double)spread;
    for (uint64_t r = 0; r < n / spread; r++) {
      double c = v[r] / dk;
      for (uint64_t e = 0; e < spread; e++) o[r * spread + e] = c;
    }
  }
  if (rc == 0) {
    sl->cycle_tag = cycle_tag;
    sl->rank_seq = rank_seq;
    sl->n_elements = n;
    sl->channel = LA_SHM_WEIGHTS_SUM;
    sl->kind = (uint32_t)kind;
    sl->t_ns = la_realtime_ns();
    __atomic_store_n(&sl->seq, 2 * g, __ATOMIC_RELEASE);
    ipc->w_gen = g;
    ipc->w_seq = rank_seq;
  } else {
    __atomic_store_n(&sl->seq, 0, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&ipc->w_mu);
  return rc;
}

void la_app_ipc_count_behind(la_app_ipc_t *ipc) {
  if (!ipc->hdr || !ipc->weights) return;
  la_shm_weights_hdr_t *a =
      la_shm_weights_area_r(ipc->hdr, ipc->n_elements, ipc->n_buffers,
                            ipc->n_channels, ipc->n_rows);
  __atomic_fetch_add(&a->behind, 1, __ATOMIC_RELAXED);
}

int la_app_ipc_put_weights(la_app_ipc_t *ipc, uint64_t cycle_tag,
                           uint64_t rank_seq, int kind,
                           const la_compact_result_t *res) {
  if (!ipc->hdr || !ipc->weights) return LA_EVERSION;
  uint64_t n = ipc->n_elements;
  la_trace_t *t = NULL;
  char why[160];
  int rc = la_trace_open_max(res->bytes, res->len, n, &t, why, sizeof why);
  if (rc == 0 && la_trace_count(t) != n) rc = LA_ERANGE;
  if (rc == 0)
    rc = la__put_weights(ipc, cycle_tag, rank_seq, kind, t, NULL, NULL, 1);
  la_trace_close(t);
  return rc;
}

int la_app_ipc_put_weights_values(la_app_ipc_t *ipc, uint64_t cycle_tag,
                                  uint64_t rank_seq, int kind,
                                  const double *v, uint64_t spread) {
  if (!ipc->hdr || !ipc->weights) return LA_EVERSION;
  if (!v || spread == 0 || ipc->n_elements % spread != 0) return LA_EINVAL;
  return la__put_weights(ipc, cycle_tag, rank_seq, kind, NULL, NULL, v,
                         spread);
}

int la_app_ipc_put_weights_pieces(la_app_ipc_t *ipc, uint64_t cycle_tag,
                                  uint64_t rank_seq, int kind,
                                  const la_pieces_t *g, const double *v) {
  if (!ipc->hdr || !ipc->weights) return LA_EVERSION;
  if (!g || !v || g->n_cells != ipc->n_elements) return LA_EINVAL;
  return la__put_weights(ipc, cycle_tag, rank_seq, kind, NULL, g, v, 1);
}

void la_app_ipc_release(la_app_ipc_t *ipc) {
  if (ipc->sem_id >= 0) semctl(ipc->sem_id, 0, IPC_RMID);
  if (ipc->hdr) pthread_mutex_destroy(&ipc->w_mu);
  if (ipc->hdr) shmdt(ipc->hdr);
  if (ipc->shm_id >= 0) shmctl(ipc->shm_id, IPC_RMID, NULL);
  ipc->hdr = NULL;
  ipc->sem_id = ipc->shm_id = -1;
}

int la_app_ipc_reap_orphans(void) {
  uid_t me = geteuid();
  if (me == 0) return 0;
  FILE *f = fopen("/proc/sysvipc/sem", "r");
  if (!f) return 0;
  char line[512];
  int removed = 0;
  if (fgets(line, sizeof line, f))
    while (fgets(line, sizeof line, f)) {
      long key, id;
      unsigned perms, nsems, uid, gid, cuid;
      if (sscanf(line, "%ld %ld %o %u %u %u %u", &key, &id, &perms, &nsems,
                 &uid, &gid, &cuid) != 7)
        continue;
      /* handed to us by an application: ours now, created by another uid */
      if (key != 0 || uid != me || cuid == me || (perms & 0777) != 0600 ||
          nsems < LA_SHM_MIN_BUFFERS || nsems > LA_SHM_MAX_BUFFERS)
        continue;
      if (semctl((int)id, 0, IPC_RMID) == 0) {
        removed++;
        la_log_info(
            "removed semaphore set %ld (creator uid %u) left by an "
            "earlier run",
            id, cuid);
      }
    }
  fclose(f);
  return removed;
}
