/* SPDX-License-Identifier: BSD-3-Clause */
/* numbering.c: the application's own element numbering: global ids
 * (LA_setGlobalIds, LA_setGlobalIdFunc) and a grid's place in the global
 * grid (LA_setGridOrigin), kept until the next registration uses them.
 *
 * LA_register puts the count of ids and the grid placement into the
 * RegisterRequest (la__numbering_fill) and, once the LocalAgent accepted
 * the registration, after the semaphore set's hand-over (a kill while the
 * ids go leaves nothing behind) and before the first DataReady, sends the
 * ids as ElementIds chunks of at most LA_ELEMENT_IDS_CHUNK over the same
 * socket (la__numbering_send). The ids never go into the shared-memory segment.
 * Deliberately no checks of uniqueness: a rank sees only its own ids.
 */
#include <stdlib.h>
#include <string.h>

#include "la_codec.h"
#include "la_internal.h"

static struct {
  int64_t *ids; /* copied by LA_setGlobalIds, or NULL */
  long n;
  LA_GlobalIdFunc fn; /* or LA_setGlobalIdFunc's */
  void *arg;
  int has_origin;
  uint64_t origin[3], global[3];
} la__num;

LA_EXPORT int LA_setGlobalIds(const int64_t *ids, long n) {
  if (!ids && n == 0) {
    free(la__num.ids);
    la__num.ids = NULL;
    la__num.n = 0;
    return 0;
  }
  if (!ids || n <= 0 || (uint64_t)n > LA_SHM_MAX_ELEMENTS)
    return la__error(LA_EINVAL,
                     "global ids: NULL array or count %ld outside "
                     "1..2^32",
                     n);
  for (long e = 0; e < n; e++)
    if (ids[e] < 0)
      return la__error(LA_EINVAL,
                       "global id of element %ld is negative "
                       "(%lld)",
                       e, (long long)ids[e]);
  int64_t *c = malloc((size_t)n * sizeof *c);
  if (!c) return la__error(LA_ENOMEM, "no memory for %ld global ids", n);
  memcpy(c, ids, (size_t)n * sizeof *c);
  free(la__num.ids);
  la__num.ids = c;
  la__num.n = n;
  la__num.fn = NULL;
  return 0;
}

LA_EXPORT int LA_setGlobalIdFunc(LA_GlobalIdFunc fn, void *arg) {
  if (fn) LA_setGlobalIds(NULL, 0);
  la__num.fn = fn;
  la__num.arg = arg;
  return 0;
}

LA_EXPORT int LA_setGridOrigin(long ox, long oy, long oz, long gnx, long gny,
                               long gnz) {
  if (!ox && !oy && !oz && !gnx && !gny && !gnz) {
    la__num.has_origin = 0;
    return 0;
  }
  const long o[3] = {ox, oy, oz}, g[3] = {gnx, gny, gnz};
  for (int d = 0; d < 3; d++)
    if (o[d] < 0 || g[d] < 1 || (uint64_t)g[d] > LA_SHM_MAX_ELEMENTS ||
        o[d] >= g[d])
      return la__error(LA_EINVAL,
                       "grid origin (%ld,%ld,%ld) outside the "
                       "global grid %ldx%ldx%ld",
                       ox, oy, oz, gnx, gny, gnz);
  for (int d = 0; d < 3; d++) {
    la__num.origin[d] = (uint64_t)o[d];
    la__num.global[d] = (uint64_t)g[d];
  }
  la__num.has_origin = 1;
  return 0;
}

int la__numbering_fill(struct La__RegisterRequest *req, uint64_t n,
                       uint64_t *origin, uint64_t *global) {
  if (la__num.ids && (uint64_t)la__num.n != n)
    return la__error(LA_EINVAL,
                     "LA_setGlobalIds gave %ld ids for %llu "
                     "elements",
                     la__num.n, (unsigned long long)n);
  if (la__num.ids || la__num.fn) {
    req->has_n_element_ids = 1;
    req->n_element_ids = n;
  }
  if (!la__num.has_origin || req->n_grid != 3) return 0;
  for (int d = 0; d < 3; d++) {
    if (la__num.origin[d] + req->grid[d] > la__num.global[d])
      return la__error(LA_EINVAL,
                       "grid dimension %d: origin %llu + %llu "
                       "cells pass the global extent %llu",
                       d, (unsigned long long)la__num.origin[d],
                       (unsigned long long)req->grid[d],
                       (unsigned long long)la__num.global[d]);
    origin[d] = la__num.origin[d];
    global[d] = la__num.global[d];
  }
  req->n_grid_origin = req->n_grid_global = 3;
  req->grid_origin = origin;
  req->grid_global = global;
  return 0;
}

int la__numbering_send(la__link_t *l, uint64_t n, int timeout_ms) {
  if (!la__num.ids && !la__num.fn) return 0;
  int64_t *chunk = malloc(LA_ELEMENT_IDS_CHUNK * sizeof *chunk);
  if (!chunk) return la__error(LA_ENOMEM, "no memory to send global ids");
  int rc = 0;
  for (uint64_t first = 0; first < n && rc == 0;) {
    size_t k = n - first < LA_ELEMENT_IDS_CHUNK ? (size_t)(n - first)
                                                : LA_ELEMENT_IDS_CHUNK;
    for (size_t i = 0; i < k; i++) {
      long e = (long)(first + i);
      chunk[i] = la__num.ids ? la__num.ids[e] : la__num.fn(e, la__num.arg);
      if (chunk[i] < 0) {
        rc = la__error(LA_EINVAL,
                       "global id of element %ld is negative "
                       "(%lld)",
                       e, (long long)chunk[i]);
        break;
      }
    }
    if (rc) break;
    La__ElementIds m = LA__ELEMENT_IDS__INIT;
    m.first = first;
    m.n_ids = k;
    m.ids = chunk;
    rc = la__link_send_sync(l, LA__MSG_TYPE__MSG_ELEMENT_IDS, &m.base,
                            timeout_ms);
    first += k;
  }
  free(chunk);
  return rc;
}
