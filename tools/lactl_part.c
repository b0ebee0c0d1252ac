/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_part.c: the partitioners of `lactl whatif` (METIS k-way, RCB,
 * greedy) and the costs of a partition: loads, imbalance, the elements that
 * stay (see lactl_part.h). */
#include "lactl_part.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metis.h>

#include "la_errcodes.h"
#include "la_limits.h"

/* ------------------------------------------------------------- METIS */

/* METIS k-way in two levels, for many parts (k >= LACTL_METIS_TWO_LEVEL):
 * k1 = round(sqrt(k)) parts first, part p given the share kk[p] / k of
 * the weight (kk[p] = its number of final parts), then each part's
 * subgraph (the edges inside it) into its kk[p] parts. At 10^4 parts of a
 * 10^6-cell grid METIS's direct k-way spends most of its time in the
 * initial partitioning of a graph it barely coarsened; this split was 1.7x
 * faster for about the same halo (docs/performance.md). Each level is held
 * to 1.5% (METIS's ufactor 15, the default 3% being for one level), so
 * the two compound to about the direct k-way's balance (measured 1.04
 * against 1.03; 1.06 with the default). Returns the METIS_* status; pt
 * filled with parts 0 .. k-1. */
static int la__metis_two_level(idx_t nv, const idx_t *xa, const idx_t *aj,
                               idx_t *vw, idx_t k, const idx_t *opt0,
                               idx_t *pt) {
  idx_t k1 = (idx_t)llround(sqrt((double)k)), ncon = 1, obj = 0;
  idx_t opt[METIS_NOPTIONS];
  memcpy(opt, opt0, sizeof opt);
  opt[METIS_OPTION_UFACTOR] = 15;
  idx_t *kk = malloc(k1 * sizeof *kk), *p1 = malloc(nv * sizeof *p1);
  real_t *tp = malloc(k1 * sizeof *tp);
  idx_t *cnt = calloc((size_t)k1 + 1, sizeof *cnt), *pos = NULL, *loc = NULL;
  idx_t *order = NULL, *sx = NULL, *sa = NULL, *sw = NULL, *sp = NULL;
  int m = METIS_ERROR_MEMORY;
  if (!kk || !p1 || !tp || !cnt) goto out;
  for (idx_t p = 0; p < k1; p++) {
    kk[p] = k / k1 + (p < k % k1);
    tp[p] = (real_t)kk[p] / (real_t)k;
  }
  m = METIS_PartGraphKway(&nv, &ncon, (idx_t *)xa, (idx_t *)aj, vw, NULL,
                          NULL, &k1, tp, NULL, opt, &obj, p1);
  if (m != METIS_OK) goto out;
  m = METIS_ERROR_MEMORY;
  pos = malloc((k1 + 1) * sizeof *pos);
  loc = malloc(nv * sizeof *loc);
  order = malloc(nv * sizeof *order);
  sx = malloc((nv + 1) * sizeof *sx);
  sa = malloc((xa[nv] ? xa[nv] : 1) * sizeof *sa);
  sw = malloc(nv * sizeof *sw);
  sp = malloc(nv * sizeof *sp);
  if (!pos || !loc || !order || !sx || !sa || !sw || !sp) goto out;
  for (idx_t v = 0; v < nv; v++) cnt[p1[v] + 1]++;
  for (idx_t p = 0; p < k1; p++) cnt[p + 1] += cnt[p];
  memcpy(pos, cnt, (k1 + 1) * sizeof *pos);
  for (idx_t v = 0; v < nv; v++) {
    loc[v] = pos[p1[v]] - cnt[p1[v]];
    order[pos[p1[v]]++] = v;
  }
  idx_t base = 0;
  for (idx_t p = 0; p < k1; p++) {
    idx_t sn = cnt[p + 1] - cnt[p], q = 0, k2 = kk[p];
    sx[0] = 0;
    for (idx_t a = 0; a < sn; a++) {
      idx_t v = order[cnt[p] + a];
      sw[a] = vw[v];
      for (idx_t b = xa[v]; b < xa[v + 1]; b++)
        if (p1[aj[b]] == p) sa[q++] = loc[aj[b]];
      sx[a + 1] = q;
    }
    if (k2 <= 1 || sn <= 1) {
      for (idx_t a = 0; a < sn; a++) sp[a] = 0;
    } else {
      m = METIS_PartGraphKway(&sn, &ncon, sx, sa, sw, NULL, NULL, &k2, NULL,
                              NULL, opt, &obj, sp);
      if (m != METIS_OK) goto out;
    }
    for (idx_t a = 0; a < sn; a++) pt[order[cnt[p] + a]] = base + sp[a];
    base += kk[p];
  }
  assert(base == k);
  m = METIS_OK;
out:
  free(kk), free(p1), free(tp), free(cnt), free(pos), free(loc), free(order);
  free(sx), free(sa), free(sw), free(sp);
  return m;
}

int lactl_part_metis(uint64_t n, const double *w, const uint64_t *xadj,
                     const uint64_t *adj, uint32_t k, uint32_t *part, char *why,
                     size_t why_len) {
  const uint64_t imax = (uint64_t)IDX_MAX;
  if (k <= 1 || n == 0) {
    for (uint64_t i = 0; i < n; i++) part[i] = 0;
    return 0;
  }
  if (n > imax / 2 || xadj[n] > imax || k > imax) {
    snprintf(why, why_len,
             "METIS: %llu elements and %llu edge ends exceed its %d-bit "
             "indices",
             (unsigned long long)n, (unsigned long long)xadj[n], IDXTYPEWIDTH);
    return LA_ERANGE;
  }
  /* the heaviest element weighs max_w; the sum stays below IDX_MAX */
  double wmax = 0;
  for (uint64_t i = 0; i < n; i++)
    if (isfinite(w[i]) && w[i] > wmax) wmax = w[i];
  double max_w = floor((double)imax / (2.0 * (double)n));
  if (max_w > 1e6) max_w = 1e6;
  double scale = wmax > 0 ? max_w / wmax : 0;
  idx_t nv = (idx_t)n, ncon = 1, np = (idx_t)k, obj = 0;
  idx_t *xa = malloc((n + 1) * sizeof *xa);
  idx_t *aj = malloc((xadj[n] ? xadj[n] : 1) * sizeof *aj);
  idx_t *vw = malloc(n * sizeof *vw), *pt = malloc(n * sizeof *pt);
  int rc = 0;
  if (!xa || !aj || !vw || !pt) {
    snprintf(why, why_len, "METIS: out of memory");
    rc = LA_ENOMEM;
    goto out;
  }
  for (uint64_t i = 0; i <= n; i++) xa[i] = (idx_t)xadj[i];
  for (uint64_t e = 0; e < xadj[n]; e++) aj[e] = (idx_t)adj[e];
  for (uint64_t i = 0; i < n; i++) {
    double v = isfinite(w[i]) && w[i] > 0 ? round(w[i] * scale) : 1;
    vw[i] = v < 1 ? 1 : (idx_t)v;
  }
  idx_t opt[METIS_NOPTIONS];
  METIS_SetDefaultOptions(opt);
  opt[METIS_OPTION_SEED] = 1; /* the same partition every run */
  opt[METIS_OPTION_NUMBERING] = 0;
  int m = k >= LACTL_METIS_TWO_LEVEL
              ? la__metis_two_level(nv, xa, aj, vw, np, opt, pt)
              : METIS_PartGraphKway(&nv, &ncon, xa, aj, vw, NULL, NULL, &np,
                                    NULL, NULL, opt, &obj, pt);
  if (m != METIS_OK) {
    snprintf(why, why_len, "METIS_PartGraphKway failed (%s)",
             m == METIS_ERROR_MEMORY  ? "out of memory"
             : m == METIS_ERROR_INPUT ? "input error"
                                      : "error");
    rc = m == METIS_ERROR_MEMORY ? LA_ENOMEM : LA_EINVAL;
    goto out;
  }
  for (uint64_t i = 0; i < n; i++) part[i] = (uint32_t)pt[i];
out:
  free(xa), free(aj), free(vw), free(pt);
  return rc;
}

/* --------------------------------------------------------------- RCB */

typedef struct {
  uint64_t c; /* coordinate on the axis being cut */
  uint64_t i; /* element */
} la__key_t;

static int la__cmp_key(const void *x, const void *y) {
  const la__key_t *a = x, *b = y;
  if (a->c != b->c) return a->c < b->c ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

/* Orders el[0..m) by c, ties in their present order (stable): a counting
 * sort over the coordinates' range lo..hi (at most the grid's extent),
 * through tmp (m keys) and cnt (hi - lo + 2 counts). */
static void la__sort_c(la__key_t *el, uint64_t m, uint64_t lo, uint64_t hi,
                       la__key_t *tmp, uint64_t *cnt) {
  uint64_t r = hi - lo + 1;
  memset(cnt, 0, (r + 1) * sizeof *cnt);
  for (uint64_t a = 0; a < m; a++) cnt[el[a].c - lo + 1]++;
  for (uint64_t b = 0; b < r; b++) cnt[b + 1] += cnt[b];
  for (uint64_t a = 0; a < m; a++) tmp[cnt[el[a].c - lo]++] = el[a];
  memcpy(el, tmp, m * sizeof *el);
}

/* Cuts el[0..m) into k parts numbered from first (tmp, cnt: la__sort_c's
 * room). */
static void la__rcb(la__key_t *el, uint64_t m, const double *w,
                    const uint64_t (*xyz)[3], uint32_t k, uint32_t first,
                    uint32_t *part, la__key_t *tmp, uint64_t *cnt) {
  if (k <= 1 || m == 0) {
    for (uint64_t a = 0; a < m; a++) part[el[a].i] = first;
    return;
  }
  uint64_t lo[3], hi[3];
  for (int d = 0; d < 3; d++) lo[d] = UINT64_MAX, hi[d] = 0;
  double total = 0;
  for (uint64_t a = 0; a < m; a++) {
    for (int d = 0; d < 3; d++) {
      uint64_t c = xyz[el[a].i][d];
      if (c < lo[d]) lo[d] = c;
      if (c > hi[d]) hi[d] = c;
    }
    total += w[el[a].i];
  }
  int ax = 0;
  for (int d = 1; d < 3; d++)
    if (hi[d] - lo[d] > hi[ax] - lo[ax]) ax = d;
  for (uint64_t a = 0; a < m; a++) el[a].c = xyz[el[a].i][ax];
  if (cnt && hi[ax] - lo[ax] < m)
    la__sort_c(el, m, lo[ax], hi[ax], tmp, cnt);
  else
    qsort(el, m, sizeof *el, la__cmp_key);
  uint32_t k1 = k / 2, k2 = k - k1;
  double target = total * (double)k1 / (double)k, sum = 0;
  uint64_t cut = 0; /* el[0..cut) go left: the prefix closest to target */
  while (cut < m && fabs(sum + w[el[cut].i] - target) <= fabs(sum - target))
    sum += w[el[cut++].i];
  if (m >= k) { /* no part left empty where there are enough elements */
    if (cut < k1) cut = k1;
    if (m - cut < k2) cut = m - k2;
  }
  la__rcb(el, cut, w, xyz, k1, first, part, tmp, cnt);
  la__rcb(el + cut, m - cut, w, xyz, k2, first + k1, part, tmp, cnt);
}

int lactl_part_rcb(uint64_t n, const double *w, const uint64_t (*xyz)[3],
                   uint32_t k, uint32_t *part) {
  la__key_t *el = malloc((n ? n : 1) * sizeof *el);
  la__key_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
  uint64_t *cnt = malloc((n + 2) * sizeof *cnt);
  if (!el || !tmp || !cnt) {
    free(el), free(tmp), free(cnt);
    return LA_ENOMEM;
  }
  for (uint64_t i = 0; i < n; i++) el[i].i = i, el[i].c = 0;
  la__rcb(el, n, w, xyz, k ? k : 1, 0, part, tmp, cnt);
  free(el), free(tmp), free(cnt);
  return 0;
}

/* ------------------------------------------------------------ greedy */

typedef struct {
  double w;
  uint64_t i;
} la__wi_t;

static int la__cmp_heavy(const void *x, const void *y) {
  const la__wi_t *a = x, *b = y;
  if (a->w != b->w) return a->w > b->w ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

/* A min-heap of parts by load (ties: the lower part). */
static int la__lighter(const double *load, uint32_t a, uint32_t b) {
  return load[a] < load[b] || (load[a] == load[b] && a < b);
}

static void la__sift(uint32_t *h, uint32_t k, const double *load, uint32_t at) {
  for (;;) {
    uint32_t l = 2 * at + 1, r = l + 1, m = at;
    if (l < k && la__lighter(load, h[l], h[m])) m = l;
    if (r < k && la__lighter(load, h[r], h[m])) m = r;
    if (m == at) return;
    uint32_t t = h[m];
    h[m] = h[at];
    h[at] = t;
    at = m;
  }
}

int lactl_part_greedy(uint64_t n, const double *w, uint32_t k, uint32_t *part) {
  if (!k) k = 1;
  la__wi_t *el = malloc((n ? n : 1) * sizeof *el);
  uint32_t *h = malloc(k * sizeof *h);
  double *load = calloc(k, sizeof *load);
  if (!el || !h || !load) {
    free(el), free(h), free(load);
    return LA_ENOMEM;
  }
  for (uint64_t i = 0; i < n; i++)
    el[i].w = isfinite(w[i]) && w[i] > 0 ? w[i] : 0, el[i].i = i;
  qsort(el, n, sizeof *el, la__cmp_heavy);
  for (uint32_t p = 0; p < k; p++) h[p] = p; /* all 0: already a heap */
  for (uint64_t a = 0; a < n; a++) {
    uint32_t p = h[0];
    part[el[a].i] = p;
    load[p] += el[a].w;
    la__sift(h, k, load, 0);
  }
  free(el), free(h), free(load);
  return 0;
}

/* ------------------------------------------------------------- costs */

void lactl_part_loads(uint64_t n, const double *w, const uint32_t *part,
                      uint32_t k, double *loads) {
  memset(loads, 0, k * sizeof *loads);
  for (uint64_t i = 0; i < n; i++)
    if (part[i] < k) loads[part[i]] += w[i];
}

void lactl_part_imbalance(const double *loads, uint32_t k, double *max,
                          double *imb) {
  double mx = 0, sum = 0;
  for (uint32_t p = 0; p < k; p++) {
    sum += loads[p];
    if (p == 0 || loads[p] > mx) mx = loads[p];
  }
  double mean = k ? sum / k : 0;
  if (max) *max = mx;
  if (imb) *imb = mean > 0 ? mx / mean : 1.0;
}

typedef struct {
  uint64_t key; /* rank << 32 | part, then the count of its elements */
  uint64_t count;
} la__pair_t;

static int la__cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static int la__cmp_count(const void *x, const void *y) {
  const la__pair_t *a = x, *b = y;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return a->key < b->key ? -1 : a->key > b->key;
}

int64_t lactl_part_match(uint64_t n, const uint32_t *owner, uint32_t nranks,
                         const uint32_t *part, uint32_t k,
                         uint32_t *rank_part) {
  uint64_t *key = malloc((n ? n : 1) * sizeof *key);
  la__pair_t *pr = malloc((n ? n : 1) * sizeof *pr);
  unsigned char *taken = calloc(k ? k : 1, 1);
  if (!key || !pr || !taken) {
    free(key), free(pr), free(taken);
    return -1;
  }
  for (uint64_t i = 0; i < n; i++) key[i] = (uint64_t)owner[i] << 32 | part[i];
  qsort(key, n, sizeof *key, la__cmp_u64);
  uint64_t np = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (np && pr[np - 1].key == key[i])
      pr[np - 1].count++;
    else
      pr[np].key = key[i], pr[np++].count = 1;
  }
  qsort(pr, np, sizeof *pr, la__cmp_count);
  for (uint32_t r = 0; r < nranks; r++) rank_part[r] = UINT32_MAX;
  int64_t stay = 0;
  for (uint64_t a = 0; a < np; a++) {
    uint32_t r = (uint32_t)(pr[a].key >> 32), p = (uint32_t)pr[a].key;
    if (r >= nranks || p >= k || rank_part[r] != UINT32_MAX || taken[p])
      continue;
    rank_part[r] = p;
    taken[p] = 1;
    stay += (int64_t)pr[a].count;
  }
  free(key), free(pr), free(taken);
  return stay;
}
