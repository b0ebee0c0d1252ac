/* SPDX-License-Identifier: BSD-3-Clause */
/* numbering.c: the application's own element numbering in libla_client:
 * a rank's global ids fetched from the GlobalAgent (Query "elementids",
 * page by page), a grid rank's place in the global grid (from the set's
 * grids), and one id per element of a set that combines both with the
 * concatenated numbering where the application gave neither.
 *
 * The page checks and the per-rank numbering are shared with lactl, which
 * asks the same Query of a store file (la_client_internal.h). Deliberately
 * no id -> element index: callers build the lookup they need.
 */
#include <stdio.h>
#include <string.h>

#include "la_client_internal.h"

int la__ids_page(const La__QueryReply *r, const char *app_id, uint32_t rank,
                 uint64_t first, uint64_t n, int64_t *ids, char *why,
                 size_t len) {
  const La__ElementIds *p = r ? r->element_ids : NULL;
  if (!p || !p->has_rank || p->rank != rank || p->first != first ||
      !p->has_n_elements || !p->app_id || strcmp(p->app_id, app_id)) {
    snprintf(why, len, "the reply is not ids of %s rank %u from %llu", app_id,
             rank, (unsigned long long)first);
    return LA_EPROTO;
  }
  if (p->n_elements != n) {
    snprintf(why, len, "%s rank %u has %llu elements, not %llu", app_id, rank,
             (unsigned long long)p->n_elements, (unsigned long long)n);
    return LA_EINVAL;
  }
  /* the codec checked first + n_ids <= n_elements and n_ids >= 1 */
  memcpy(ids + first, p->ids, p->n_ids * sizeof *ids);
  return (int)p->n_ids;
}

int la__ids_fetch(la__ids_ask_t ask, void *ctx, const char *app_id,
                  uint32_t rank, int64_t *ids, uint64_t n, char *why,
                  size_t len) {
  for (uint64_t first = 0; first < n;) {
    La__Query q = LA__QUERY__INIT;
    q.what = (char *)"elementids";
    q.app_id = (char *)app_id;
    q.has_rank = q.has_first = 1;
    q.rank = rank;
    q.first = first;
    const La__QueryReply *r = NULL;
    void *hold = NULL;
    int rc = ask(ctx, &q, &r, &hold);
    if (rc) return rc; /* the asker wrote its detail */
    rc = la__ids_page(r, app_id, rank, first, n, ids, why, len);
    ask(ctx, NULL, NULL, &hold); /* frees the reply */
    if (rc < 0) return rc;
    first += (uint64_t)rc;
  }
  return 0;
}

/* The GridRank of rank in t's message, or NULL. */
static const La__GridRank *la__grid(const la_traceset_t *t, uint32_t rank) {
  const La__TraceSet *m = t ? t->msg : NULL;
  /* the grids come by rank, usually one per rank: look there first */
  if (m && rank < m->n_grids && m->grids[rank]->rank == rank)
    return m->grids[rank];
  for (size_t i = 0; m && i < m->n_grids; i++)
    if (m->grids[i]->rank == rank) return m->grids[i];
  return NULL;
}

LA_CLIENT_EXPORT int la_traceset_rank_grid(const la_traceset_t *t,
                                           uint32_t rank, uint64_t *dims,
                                           uint64_t *origin, uint64_t *global) {
  if (!t) return LA_EINVAL;
  const La__GridRank *g = la__grid(t, rank);
  if (!g) return LA_ENOTFOUND;
  for (int d = 0; d < 3; d++) {
    if (dims) dims[d] = g->dims[d];
    if (origin) origin[d] = g->n_origin == 3 ? g->origin[d] : 0;
    if (global) global[d] = g->n_global == 3 ? g->global[d] : g->dims[d];
  }
  return 0;
}

int la__rank_numbering(const la_traceset_t *t, uint32_t rank,
                       const int64_t *app_ids, int64_t *ids,
                       uint64_t (*ijk)[3]) {
  uint64_t n = la_traceset_rank_elements(t, rank), dims[3], org[3], glob[3];
  int grid = la_traceset_rank_grid(t, rank, dims, org, glob) == 0 &&
             dims[0] * dims[1] * dims[2] == n;
  const La__GridRank *g = grid ? la__grid(t, rank) : NULL;
  int placed = g && g->n_origin == 3;
  for (uint64_t e = 0; e < n; e++) {
    uint64_t c[3] = {0, 0, 0};
    if (grid) {
      c[0] = org[0] + e % dims[0];
      c[1] = org[1] + e / dims[0] % dims[1];
      c[2] = org[2] + e / (dims[0] * dims[1]);
    }
    if (ijk) memcpy(ijk[e], c, sizeof c);
    if (!ids) continue;
    if (app_ids)
      ids[e] = app_ids[e];
    else if (placed)
      ids[e] = (int64_t)(c[0] + glob[0] * (c[1] + glob[1] * c[2]));
    else
      ids[e] = (int64_t)(t->vtx[rank] + e);
  }
  return app_ids  ? LA_NUMBERING_APP
         : placed ? LA_NUMBERING_GRID
                  : LA_NUMBERING_CONCAT;
}

/* la__ids_ask_t over a client: la__client_query. */
static int la__client_ask(void *ctx, La__Query *q, const La__QueryReply **r,
                          void **hold) {
  if (!q) {
    if (*hold) la_msg_free(&((La__QueryReply *)*hold)->base);
    *hold = NULL;
    return 0;
  }
  La__QueryReply *m = NULL;
  int rc = la__client_query(ctx, q, &m);
  *r = m;
  *hold = m;
  return rc;
}

LA_CLIENT_EXPORT int la_client_rank_ids(la_client_t *c, const char *app_id,
                                        uint32_t rank, int64_t *ids,
                                        uint64_t n) {
  if (!c || !app_id || !*app_id || strlen(app_id) > LA_MAX_ID_LEN ||
      (!ids && n))
    return LA_EINVAL;
  char why[200] = "";
  int rc =
      la__ids_fetch(la__client_ask, c, app_id, rank, ids, n, why, sizeof why);
  if (rc && why[0]) return la__client_fail(c, rc, "%s", why);
  return rc;
}

int la__set_ids_fetch(la__ids_ask_t ask, void *ctx, const la_traceset_t *t,
                      int64_t *ids, uint32_t *n_app, char *why, size_t len) {
  if (n_app) *n_app = 0;
  const char *app = la_traceset_app_id(t);
  for (uint32_t r = 0; r < t->nprocs; r++) {
    uint64_t n = la_traceset_rank_elements(t, r);
    int64_t *out = ids + t->vtx[r];
    int rc = n ? la__ids_fetch(ask, ctx, app, r, out, n, why, len)
               : LA_ENOTFOUND;
    if (rc && rc != LA_ENOTFOUND) return rc;
    la__rank_numbering(t, r, rc ? NULL : out, out, NULL);
    if (rc == 0 && n_app) (*n_app)++;
  }
  return 0;
}

LA_CLIENT_EXPORT int la_client_set_ids(la_client_t *c, const la_traceset_t *t,
                                       int64_t *ids, uint32_t *n_app) {
  if (n_app) *n_app = 0;
  if (!c || !t || !ids) return LA_EINVAL;
  char why[200] = "";
  int rc = la__set_ids_fetch(la__client_ask, c, t, ids, n_app, why, sizeof why);
  if (rc && why[0]) return la__client_fail(c, rc, "%s", why);
  return rc;
}
