/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_numbering.c: the application's element numbering for lactl (see
 * lactl_numbering.h): a per-rank cache of the ids fetched from the source
 * (the store or the feed, Query "elementids"), turned into one id and one
 * global (i,j,k) per element by libla_client's own rule
 * (la__rank_numbering), so lactl and balancers number alike.
 */
#include "lactl_numbering.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"

typedef struct {
  int state;    /* 0 not asked, 1 ids fetched, 2 none */
  int kind;     /* LACTL_NUM_* + 1 once numbered, for the note */
  uint64_t n;   /* elements */
  int64_t *ids; /* the application's, when state 1 */
} la__rank_ids_t;

struct lactl_num {
  lactl_src_t *s;
  char app[LA_MAX_ID_LEN + 1];
  la__rank_ids_t *rk;
  uint32_t nrk;
  int64_t *ids; /* the last rank's numbering */
  uint64_t (*ijk)[3];
  uint64_t cap;
};

lactl_num_t *lactl_num_new(lactl_src_t *s, const char *app) {
  lactl_num_t *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->s = s;
  snprintf(m->app, sizeof m->app, "%s", app);
  return m;
}

void lactl_num_free(lactl_num_t *m) {
  if (!m) return;
  for (uint32_t r = 0; r < m->nrk; r++) free(m->rk[r].ids);
  free(m->rk);
  free(m->ids);
  free(m->ijk);
  free(m);
}

/* The application's ids of rank (n elements) from the cache or the
 * source: *out NULL when the rank gave none. 0 or an error. */
static int la__app_ids(lactl_num_t *m, uint32_t rank, uint64_t n,
                       const int64_t **out) {
  *out = NULL;
  if (rank >= m->nrk) {
    la__rank_ids_t *v = realloc(m->rk, ((size_t)rank + 1) * sizeof *v);
    if (!v) return LA_ENOMEM;
    memset(v + m->nrk, 0, (rank + 1 - m->nrk) * sizeof *v);
    m->rk = v;
    m->nrk = rank + 1;
  }
  la__rank_ids_t *k = &m->rk[rank];
  if (k->state && k->n != n) { /* another element count: ask again */
    free(k->ids);
    memset(k, 0, sizeof *k);
  }
  if (!k->state) {
    k->n = n;
    k->state = 2;
    if (!(k->ids = malloc((n ? n : 1) * sizeof *k->ids))) return LA_ENOMEM;
    int rc = lactl_src_rank_ids(m->s, m->app, rank, k->ids, n);
    if (rc == 0) {
      k->state = 1;
    } else {
      free(k->ids);
      k->ids = NULL;
      if (rc != LA_ENOTFOUND) {
        k->state = 0;
        return rc;
      }
    }
  }
  *out = k->ids;
  return 0;
}

int lactl_num_rank(lactl_num_t *m, const la_traceset_t *t, uint32_t rank,
                   const int64_t **ids, const uint64_t **ijk, int *kind) {
  uint64_t n = la_traceset_rank_elements(t, rank);
  if (n > m->cap) {
    int64_t *a = realloc(m->ids, n * sizeof *a);
    if (a) m->ids = a;
    uint64_t(*b)[3] = realloc(m->ijk, n * sizeof *b);
    if (b) m->ijk = b;
    if (!a || !b) return LA_ENOMEM;
    m->cap = n;
  }
  const int64_t *app = NULL;
  int rc = n ? la__app_ids(m, rank, n, &app) : 0;
  if (rc) {
    fprintf(stderr, "lactl: element ids of %s rank %u: %s\n", m->app, rank,
            *lactl_src_error(m->s) ? lactl_src_error(m->s)
                                   : la_client_strerror(rc));
    return rc;
  }
  *kind = la__rank_numbering(t, rank, app, m->ids, m->ijk);
  if (rank < m->nrk) m->rk[rank].kind = *kind + 1;
  *ids = m->ids;
  *ijk = m->ijk ? m->ijk[0] : NULL;
  return 0;
}

void lactl_num_note(lactl_num_t *m, const char *cmd) {
  unsigned long long kinds[3] = {0, 0, 0};
  for (uint32_t r = 0; r < m->nrk; r++)
    if (m->rk[r].kind) kinds[m->rk[r].kind - 1]++;
  if (kinds[LACTL_NUM_GRID])
    fprintf(stderr,
            "lactl %s: %s: %llu rank(s) gave no ids but a grid origin: "
            "their id is the global cell index i + gnx*(j + gny*k)\n",
            cmd, m->app, kinds[LACTL_NUM_GRID]);
  if (kinds[LACTL_NUM_CONCAT])
    fprintf(stderr,
            "lactl %s: %s: %llu rank(s) gave no global ids: their id is "
            "global_element, the ranks' elements concatenated\n",
            cmd, m->app, kinds[LACTL_NUM_CONCAT]);
}
