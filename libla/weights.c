/* SPDX-License-Identifier: BSD-3-Clause */
/* weights.c: LA_weights and LA_weightsWait, the LocalAgent's per-element
 * weights read back from this process's own segment (docs/balancing.md).
 *
 * After each profiled cycle the LocalAgent writes the rank's weights (the
 * robust ones, else the measured values, exactly as the GlobalAgent will
 * serve them) into the weights area of the segment (wire/la_shm_layout.h,
 * layout 4): two slots, generation g in slot g % 2 under a sequence word
 * that is odd while the agent writes and 2g when it is done. A reader picks
 * the newest finished slot, copies it and checks that the word did not
 * move; the other slot is the one the agent rewrites next, so a copy is
 * torn only when a reader is a whole cycle slow, and is then retried.
 *
 * The agent may be another user's process: every field of the area and of
 * the slot is checked against this process's own geometry before a value
 * is trusted; a field out of bounds is LA_EPROTO naming it, never a crash
 * (the copy's size is ours, not the agent's). The values themselves are
 * data and are handed over as written. Nothing here touches the network
 * or sleeps except LA_weightsWait, which polls the memory, bounded.
 * Not here: writing the weights (localagent/app_ipc.c), the segment
 * (ipc.c).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "la_internal.h"
#include "la_time.h"

/* Tries of a read that keeps meeting the agent in the middle of a write. */
#define LA__WEIGHTS_TRIES 256

/* The area's header against our own geometry. 0 or LA_EPROTO. */
static int la__area_check(const la__ipc_t *ipc,
                          const volatile la_shm_weights_hdr_t *a) {
  const char *bad = NULL;
  if (a->magic != LA_SHM_WEIGHTS_MAGIC)
    bad = "bad magic number";
  else if (a->version != LA_SHM_WEIGHTS_VERSION)
    bad = "unknown version";
  else if (a->header_len != sizeof(la_shm_weights_hdr_t))
    bad = "unexpected header length";
  else if (a->n_elements != ipc->n_elements)
    bad = "element count is not this rank's";
  else if (a->n_slots != LA_SHM_WEIGHTS_SLOTS)
    bad = "unexpected slot count";
  else if (a->slot_stride != la_shm_weights_stride(ipc->n_elements))
    bad = "unexpected slot stride";
  if (bad)
    return la__error(LA_EPROTO, "weights area of the shared memory: %s", bad);
  return 0;
}

/* A seqlock's sequence number read again after the copy: the acquire
 * fence keeps the copy's loads before this load. ThreadSanitizer does not
 * model fences (GCC refuses them under -fsanitize=thread); there a
 * sequentially consistent load stands in (the writer is another process,
 * which TSan does not see either way). */
static inline uint64_t la__seq_after_copy(const uint64_t *seq) {
#if defined(__SANITIZE_THREAD__)
  return __atomic_load_n(seq, __ATOMIC_SEQ_CST);
#else
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  return __atomic_load_n(seq, __ATOMIC_RELAXED);
#endif
}

/* The weights of np pieces pr (a slot's copy) spread into w[0..n): each
 * element its piece's value over the piece's cells, 0 in no piece. Each
 * record is checked as the agent checks the application's
 * (la_shm_piece_check, the registration's grid). NULL, or what is
 * wrong. */
static const char *la__spread_pieces(double *w, uint64_t n,
                                     const la_shm_piece_t *pr, uint64_t np) {
  uint64_t nx = la__hot.nx, ny = la__hot.ny, nz = la__hot.nz;
  memset(w, 0, n * sizeof *w);
  for (uint64_t p = 0; p < np; p++) {
    const char *no = la_shm_piece_check(&pr[p], n, 1, nx, ny, nz);
    if (no) return no;
    uint64_t first = (pr[p].key - 1) >> 4, nj = pr[p].nj ? pr[p].nj : 1,
             nk = pr[p].nk ? pr[p].nk : 1;
    double share = pr[p].value / (double)((uint64_t)pr[p].ni * nj * nk);
    la_shm_spread_add(w + first, share, pr[p].ni, nj, nk, nx, nx * ny);
  }
  return NULL;
}

/* Copies the newest finished generation if it is above min_gen into w.
 * Returns 0, LA_ENOTFOUND (nothing newer than min_gen: w untouched),
 * LA_EPROTO (a field out of bounds), LA_ETIMEDOUT (the slot was rewritten
 * during every copy: a reader many cycles slow, or a hostile agent). */
static int la__read(const la__ipc_t *ipc, double *w, uint64_t min_gen,
                    uint64_t *tag, uint64_t *gen) {
  uint64_t n = ipc->n_elements;
  la_shm_weights_hdr_t *a =
      la_shm_weights_area_r(ipc->hdr, n, ipc->n_buffers, ipc->n_channels,
                            ipc->n_rows);
  int rc = la__area_check(ipc, a);
  if (rc) return rc;
  la_shm_weights_slot_t *sl[LA_SHM_WEIGHTS_SLOTS];
  for (uint32_t k = 0; k < LA_SHM_WEIGHTS_SLOTS; k++)
    sl[k] = la_shm_weights_slot(a, n, k);
  for (int t = 0; t < LA__WEIGHTS_TRIES; t++) {
    if (t > 0) sched_yield();
    uint64_t sq[LA_SHM_WEIGHTS_SLOTS];
    for (uint32_t k = 0; k < LA_SHM_WEIGHTS_SLOTS; k++)
      sq[k] = __atomic_load_n(&sl[k]->seq, __ATOMIC_ACQUIRE);
    /* the newest finished slot first, then the other */
    uint32_t order[2] = {0, 1};
    if (sq[1] % 2 == 0 && (sq[0] % 2 || sq[1] > sq[0])) {
      order[0] = 1;
      order[1] = 0;
    }
    int torn = 0;
    for (int o = 0; o < 2 && !torn; o++) {
      uint32_t k = order[o];
      uint64_t s = sq[k];
      if (s % 2 || s == 0) continue; /* being written, or never */
      uint64_t g = s / 2;
      if (g % LA_SHM_WEIGHTS_SLOTS != k)
        return la__error(LA_EPROTO,
                         "weights slot %u holds generation %llu, "
                         "which belongs in slot %llu",
                         k, (unsigned long long)g,
                         (unsigned long long)(g % LA_SHM_WEIGHTS_SLOTS));
      if (g <= min_gen) return LA_ENOTFOUND; /* the newest finished one */
      la_shm_weights_slot_t h;
      memcpy(&h, sl[k], sizeof h);
      /* a row-probed cycle's weights: one value per row of h.spread; a
       * pieced cycle's: its pieces (a copy, spread once checked) */
      uint64_t sp = h.spread > 1 && n % h.spread == 0 ? h.spread : 1;
      uint64_t np = h.pieces <= n / 4 ? h.pieces : 0;
      la_shm_piece_t *pr = NULL;
      if (np && !(pr = malloc(np * sizeof *pr)))
        return la__error(LA_ENOMEM, "no memory for %llu weights' pieces",
                         (unsigned long long)np);
      if (np)
        memcpy(pr, (const char *)sl[k] + sizeof h, np * sizeof *pr);
      else
        memcpy(w, (const char *)sl[k] + sizeof h, n / sp * sizeof(double));
      if (la__seq_after_copy(&sl[k]->seq) != s) {
        free(pr);
        torn = 1; /* rewritten while we copied: read again */
        continue;
      }
      const char *bad = NULL;
      if (h.n_elements != n)
        bad = "element count is not this rank's";
      else if (h.spread > 1 && sp == 1)
        bad = "spread does not divide the element count";
      else if (h.pieces > n / 4)
        bad = "more pieces than the slot holds";
      else if (h.channel != LA_SHM_WEIGHTS_SUM)
        bad = "unknown channel";
      else if (h.kind != LA_SHM_WEIGHTS_ROBUST &&
               h.kind != LA_SHM_WEIGHTS_MEASURED)
        bad = "unknown kind of weights";
      else if (np)
        bad = la__spread_pieces(w, n, pr, np);
      free(pr);
      if (bad)
        return la__error(LA_EPROTO, "weights slot %u (generation %llu): %s", k,
                         (unsigned long long)g, bad);
      for (uint64_t r = n / sp; sp > 1 && r-- > 0;) { /* from the end: */
        double c = w[r] / (double)sp; /* w[r] is read before r*sp.. is */
        for (uint64_t e = sp; e-- > 0;) w[r * sp + e] = c; /* written */
      }
      if (tag) *tag = h.cycle_tag;
      if (gen) *gen = g;
      return 0;
    }
    if (!torn) return LA_ENOTFOUND; /* no finished slot */
  }
  return la__error(LA_ETIMEDOUT,
                   "the LocalAgent rewrote the weights during "
                   "each of %d copies",
                   LA__WEIGHTS_TRIES);
}

/* The registration's segment, checked for a weights area and a buffer of
 * n doubles. Returns it, or NULL with *rc set. */
static const la__ipc_t *la__weights_ipc(const double *w, long n, int *rc) {
  const la__ipc_t *ipc = la__lifecycle_ipc();
  *rc = 0;
  if (!ipc)
    *rc = la__error(LA_ESTATE,
                    "no weights: not registered with a "
                    "LocalAgent (LA_register not called or failed, "
                    "LA_finalize called, or the agent was lost)");
  else if (!ipc->weights)
    *rc = la__error(LA_EVERSION,
                    "no weights: the segment has shared-memory "
                    "layout %u, without the weights area (a LocalAgent "
                    "older than layout 4, or LA_SHM_LAYOUT=3)",
                    ipc->layout);
  else if (!w)
    *rc = la__error(LA_EINVAL, "LA_weights: NULL buffer");
  else if (n < 0 || (uint64_t)n < ipc->n_elements)
    *rc = la__error(LA_ERANGE,
                    "LA_weights: a buffer of %ld doubles for "
                    "%llu elements",
                    n, (unsigned long long)ipc->n_elements);
  return *rc ? NULL : ipc;
}

/* The text of "nothing newer than after". */
static int la__none(uint64_t after) {
  if (after == 0)
    return la__error(LA_ENOTFOUND,
                     "no weights yet: the LocalAgent has not "
                     "finished a profiled cycle of this rank");
  return la__error(LA_ENOTFOUND, "no weights newer than generation %llu yet",
                   (unsigned long long)after);
}

LA_EXPORT int LA_weights(double *w, long n, uint64_t *cycle_tag,
                         uint64_t *generation) {
  int rc;
  const la__ipc_t *ipc = la__weights_ipc(w, n, &rc);
  if (!ipc) return rc;
  rc = la__read(ipc, w, 0, cycle_tag, generation);
  return rc == LA_ENOTFOUND ? la__none(0) : rc;
}

LA_EXPORT int LA_weightsWait(double *w, long n, uint64_t after, int timeout_ms,
                             uint64_t *cycle_tag, uint64_t *generation) {
  int rc;
  const la__ipc_t *ipc = la__weights_ipc(w, n, &rc);
  if (!ipc) return rc;
  if (timeout_ms < 0 || timeout_ms > 3600 * 1000)
    return la__error(LA_EINVAL,
                     "LA_weightsWait: timeout %d ms outside "
                     "0..3600000",
                     timeout_ms);
  uint64_t end = la_mono_ns() + (uint64_t)timeout_ms * 1000000u;
  for (;;) {
    rc = la__read(ipc, w, after, cycle_tag, generation);
    if (rc != LA_ENOTFOUND) return rc;
    if (la_mono_ns() >= end) break;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  if (timeout_ms == 0) return la__none(after);
  return la__error(LA_ETIMEDOUT,
                   "no weights newer than generation %llu "
                   "within %d ms",
                   (unsigned long long)after, timeout_ms);
}
