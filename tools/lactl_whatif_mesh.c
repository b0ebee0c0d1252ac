/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_whatif_mesh.c: one cycle's elements for `lactl whatif` (see
 * lactl_whatif.h): every present rank's decoded weights, keyed by the
 * application's element ids, merged per id; the current owner of each;
 * global cell coordinates and the 6-neighbour graph where every rank is
 * placed in a global grid (LA_registerGrid with LA_setGridOrigin), and a
 * partition's halo there (la__halo_build). */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "lactl_whatif.h"

/* One rank's element before merging. */
typedef struct {
  int64_t id;
  uint32_t rank;
  double w;
  uint64_t c[3];
} la__ent_t;

static int la__cmp_ent(const void *x, const void *y) {
  const la__ent_t *a = x, *b = y;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Orders e[0..n) by (id, rank) as la__cmp_ent does, in linear time when
 * the ids span at most 2n + 1 values (a grid's cell indices, a
 * concatenated numbering): a stable counting sort by id, the entries
 * being in rank order already. *e is replaced. 0, or -1 when the ids are
 * too sparse or memory short (the caller sorts). */
static int la__sort_dense(la__ent_t **e, uint64_t n) {
  if (n == 0) return 0;
  int64_t lo = (*e)[0].id, hi = lo;
  for (uint64_t i = 1; i < n; i++) {
    assert(i == 0 || (*e)[i].rank >= (*e)[i - 1].rank);
    if ((*e)[i].id < lo) lo = (*e)[i].id;
    if ((*e)[i].id > hi) hi = (*e)[i].id;
  }
  uint64_t r = (uint64_t)(hi - lo) + 1;
  if (r > 2 * n + 1) return -1;
  uint64_t *cnt = calloc(r + 1, sizeof *cnt);
  la__ent_t *out = malloc(n * sizeof *out);
  if (!cnt || !out) {
    free(cnt), free(out);
    return -1;
  }
  for (uint64_t i = 0; i < n; i++) cnt[(*e)[i].id - lo + 1]++;
  for (uint64_t b = 0; b < r; b++) cnt[b + 1] += cnt[b];
  for (uint64_t i = 0; i < n; i++) out[cnt[(*e)[i].id - lo]++] = (*e)[i];
  free(cnt);
  free(*e);
  *e = out;
  return 0;
}

void lactl_mesh_free(lactl_mesh_t *m) {
  free(m->id), free(m->w), free(m->owner), free(m->ijk);
  free(m->xadj), free(m->adj), free(m->totals);
  memset(m, 0, sizeof *m);
}

int lactl_mesh_build(lactl_mesh_t *m, const la_traceset_t *t, lactl_num_t *num,
                     char *why, size_t why_len) {
  memset(m, 0, sizeof *m);
  uint32_t np = la_traceset_nprocs(t);
  uint64_t all = la_traceset_elements(t), big = 1;
  m->nprocs = np;
  m->kind = la_traceset_weights_kind(t);
  m->totals = malloc((np ? np : 1) * sizeof *m->totals);
  for (uint32_t r = 0; r < np; r++)
    if (la_traceset_rank_elements(t, r) > big)
      big = la_traceset_rank_elements(t, r);
  la__ent_t *e = malloc((all ? all : 1) * sizeof *e);
  double *w = malloc(big * sizeof *w);
  if (!m->totals || !e || !w) {
    free(e), free(w);
    snprintf(why, why_len, "out of memory (%llu elements)",
             (unsigned long long)all);
    return LA_ENOMEM;
  }
  if (m->kind == LA_WEIGHTS_ROBUST)
    la_traceset_robust_totals(t, m->totals);
  else
    la_traceset_rank_totals(t, m->totals);
  int grid = np > 0;
  uint64_t ne = 0;
  for (uint32_t r = 0; r < np; r++) {
    uint64_t n = la_traceset_rank_elements(t, r), gl[3];
    const int64_t *ids;
    const uint64_t *ijk;
    int kind, rc;
    if ((rc = la_traceset_rank_weights(t, r, w)) != 0 ||
        (rc = lactl_num_rank(num, t, r, &ids, &ijk, &kind)) != 0) {
      free(e), free(w);
      snprintf(why, why_len, "rank %u's weights or ids: %s", r,
               la_client_strerror(rc));
      return rc;
    }
    if (kind != LACTL_NUM_GRID ||
        la_traceset_rank_grid(t, r, NULL, NULL, gl) != 0)
      grid = 0;
    for (int d = 0; grid && d < 3; d++)
      if (r == 0 || gl[d] > m->g[d]) m->g[d] = gl[d];
    for (uint64_t i = 0; i < n; i++, ne++) {
      e[ne].id = ids[i];
      e[ne].rank = r;
      e[ne].w = isfinite(w[i]) ? w[i] : 0;
      if (!isfinite(w[i])) m->nonfinite++;
      memcpy(e[ne].c, ijk + 3 * i, sizeof e[ne].c);
    }
  }
  free(w);
  if (la__sort_dense(&e, ne)) qsort(e, ne, sizeof *e, la__cmp_ent);
  uint64_t nd = 0;
  for (uint64_t i = 0; i < ne; i++)
    if (i == 0 || e[i].id != e[i - 1].id) nd++;
  m->grid = grid;
  m->id = malloc((nd ? nd : 1) * sizeof *m->id);
  m->w = malloc((nd ? nd : 1) * sizeof *m->w);
  m->owner = malloc((nd ? nd : 1) * sizeof *m->owner);
  m->ijk = grid ? malloc((nd ? nd : 1) * sizeof *m->ijk) : NULL;
  if (!m->id || !m->w || !m->owner || (grid && !m->ijk)) {
    free(e);
    snprintf(why, why_len, "out of memory (%llu elements)",
             (unsigned long long)nd);
    return LA_ENOMEM;
  }
  double best = 0;
  for (uint64_t i = 0; i < ne; i++) {
    if (i == 0 || e[i].id != e[i - 1].id) {
      uint64_t k = m->n++;
      m->id[k] = e[i].id;
      m->w[k] = e[i].w;
      m->owner[k] = e[i].rank;
      if (grid) memcpy(m->ijk[k], e[i].c, sizeof e[i].c);
      best = e[i].w;
      continue;
    }
    m->w[m->n - 1] += e[i].w;
    if (e[i].w > best) best = e[i].w, m->owner[m->n - 1] = e[i].rank;
  }
  free(e);
  return 0;
}

int64_t lactl_mesh_find(const lactl_mesh_t *m, int64_t id) {
  if (m->n == 0) return -1;
  /* ids that are a contiguous range (a whole grid, a concatenated
   * numbering): by position */
  if ((uint64_t)(m->id[m->n - 1] - m->id[0]) == m->n - 1)
    return id >= m->id[0] && (uint64_t)(id - m->id[0]) < m->n
               ? id - m->id[0]
               : -1;
  uint64_t lo = 0, hi = m->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (m->id[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < m->n && m->id[lo] == id ? (int64_t)lo : -1;
}

int lactl_mesh_graph(lactl_mesh_t *m) {
  if (m->xadj) return 0;
  m->xadj = calloc(m->n + 1, sizeof *m->xadj);
  m->adj = malloc((m->grid ? 6 * m->n : 1) * sizeof *m->adj);
  if (!m->xadj || !m->adj) return LA_ENOMEM;
  if (!m->grid) return 0; /* no geometry: no edges */
  /* a grid rank's id is its global cell index i + gx*(j + gy*k) */
  const int64_t step[3] = {1, (int64_t)m->g[0], (int64_t)(m->g[0] * m->g[1])};
  uint64_t e = 0;
  for (uint64_t v = 0; v < m->n; v++) {
    for (int d = 0; d < 3; d++)
      for (int s = -1; s <= 1; s += 2) {
        uint64_t c = m->ijk[v][d];
        if ((s < 0 && c == 0) || (s > 0 && c + 1 >= m->g[d])) continue;
        int64_t u = lactl_mesh_find(m, m->id[v] + s * step[d]);
        if (u >= 0) m->adj[e++] = (uint64_t)u;
      }
    m->xadj[v + 1] = e;
  }
  return 0;
}

int lactl_mesh_halo(const lactl_mesh_t *m, const uint32_t *part, uint32_t k,
                    lactl_wi_row_t *row) {
  row->halo = 0;
  if (!m->grid) return 0;
  /* a grid mesh's ids are its global cell indices, ascending, >= 0 */
  la__halo_t h;
  int rc = la__halo_build((const uint64_t *)m->id, part, m->n, m->g, k, &h);
  if (rc) return rc;
  row->halo = 1;
  row->halo_cells = h.boundary;
  row->halo_sent = h.sent;
  row->nbr_max = h.nbr_max;
  row->nbr_mean = h.nbr_mean;
  la__halo_free(&h);
  return 0;
}
