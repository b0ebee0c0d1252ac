/* SPDX-License-Identifier: BSD-3-Clause */
/* robust.c: robust per-element weights (see robust.h for the model).
 *
 * State is three arrays (struct of arrays, so one cycle's update streams
 * through memory): the estimate and the minimum of the current run of
 * suspect values as floats (weights need 7 digits, not 16), and the run's
 * length as a byte whose value 255 means "no estimate yet"; plus a byte of
 * scratch per element for one update (held back, or rose with a front).
 * An update is a forward pass (every rule, fronts moving up the element
 * order), a backward pass (fronts moving down: a held value next to a
 * front rise of this update) and a pass for the weights and sums.
 *
 * Rows (a grid whose row stride is given): when every row of the cycle
 * carries one value (row probes spread a row's time evenly over its cells)
 * and one flag, and every row's state is one state, a row is one element:
 * the state is kept once per row in the first n / nx entries of the arrays
 * (row r at index r), the update runs over the rows (neighbours: the rows
 * beside it in its plane and above and below it) and the weights are
 * spread back over the cells. A cycle that is not row-uniform first
 * spreads the row states back to the cells. So the work of a row-probed
 * cycle is a comparison per cell and an update per row.
 */
#include "robust.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_simd.h"
#if LA_COMPACT_X86
#include <immintrin.h>
#endif

#define LA__NO_EST 255u

struct la_robust {
  uint64_t n;
  la_robust_params_t p;
  float *est;
  float *pend;
  uint8_t *run;
  uint8_t *mark; /* scratch of one update: held, or rose with a front */
  uint64_t cycles;
  uint64_t nx;           /* cells of a row (stride[0]; 0: no rows) */
  int rows;              /* the state is per row (row r at index r) */
  la_robust_params_t rp; /* the parameters in rows: strides of row space */
  int simd;              /* AVX2 kernels (the same results) */
};

void la_robust_params_default(la_robust_params_t *p) {
  p->tol = 0.25;
  p->abs_tol = 0;
  p->follow = 0.25;
  p->spike = 4;
  p->confirm = 3;
  p->neighbour = 1;
  p->stride[0] = p->stride[1] = 0;
  p->detect = 0;
}

uint64_t la_robust_bytes(uint64_t n) {
  return sizeof(la_robust_t) + n * (2 * sizeof(float) + 2);
}

int la_robust_new(uint64_t n, const la_robust_params_t *p, la_robust_t **out) {
  la_robust_params_t def;
  if (!out || n == 0 || n > SIZE_MAX / sizeof(float)) return LA_EINVAL;
  *out = NULL;
  if (!p) {
    la_robust_params_default(&def);
    p = &def;
  }
  if (!(p->tol >= 0 && p->tol < 100) || !(p->abs_tol >= 0) ||
      !(p->follow >= 0 && p->follow <= 1) || !(p->spike > 1) ||
      p->confirm < 1 || p->confirm >= LA__NO_EST)
    return LA_EINVAL;
  la_robust_t *r = calloc(1, sizeof *r);
  if (!r) return LA_ENOMEM;
  r->n = n;
  r->p = *p;
  r->simd = la_compact_simd();
  r->est = malloc(n * sizeof(float));
  r->pend = malloc(n * sizeof(float));
  r->run = malloc(n);
  r->mark = malloc(n);
  if (!r->est || !r->pend || !r->run || !r->mark) {
    la_robust_free(r);
    return LA_ENOMEM;
  }
  /* no estimate yet; the others are read only once set, but read by the
   * rules without a branch before that (zero then) */
  memset(r->run, LA__NO_EST, n);
  memset(r->est, 0, n * sizeof(float));
  memset(r->pend, 0, n * sizeof(float));
  if (p->stride[0] >= 2 && n % p->stride[0] == 0 && n > p->stride[0]) {
    /* row r = j + ny * k: j +- 1 within its plane, k +- 1 is ny rows away */
    r->nx = p->stride[0];
    r->rp = *p;
    r->rp.stride[0] = p->stride[1] ? p->stride[1] / p->stride[0] : 0;
    r->rp.stride[1] = 0;
  }
  *out = r;
  return 0;
}

void la_robust_free(la_robust_t *r) {
  if (!r) return;
  free(r->est);
  free(r->pend);
  free(r->run);
  free(r->mark);
  free(r);
}

/* Whether x[i] is usable: finite and not flagged. */
static inline int la__usable(const double *x, const uint8_t *flags,
                             uint64_t i) {
  return isfinite(x[i]) && !(flags && flags[i]);
}

/* Whether v is within the band of a neighbour's estimate nb (NaN: none). */
static inline int la__agrees(double v, double nb, double up, double at) {
  return nb > 0 && v <= nb * up + at && v >= nb / up - at;
}

/* First cycle of element i: the value to start from. An isolated spike or
 * an unusable value takes the larger usable neighbour (itself when there is
 * none, or 0 when it is unusable too). */
static double la__first(const la_robust_t *r, const double *x,
                        const uint8_t *flags, uint64_t i) {
  uint64_t n = r->n;
  int lu = i > 0 && la__usable(x, flags, i - 1);
  int ru = i + 1 < n && la__usable(x, flags, i + 1);
  double l = lu ? x[i - 1] : NAN, rv = ru ? x[i + 1] : NAN;
  if (!la__usable(x, flags, i)) {
    if (lu && ru) return l > rv ? l : rv;
    if (lu) return l;
    if (ru) return rv;
    return isfinite(x[i]) ? x[i] : 0;
  }
  if (!lu && !ru) return x[i];
  double hi = !lu ? rv : !ru ? l : (l > rv ? l : rv);
  double lo = !lu ? rv : !ru ? l : (l > rv ? rv : l);
  if (hi > 0 && lo > 0.5 * hi && x[i] > r->p.spike * hi) return hi;
  return x[i];
}

/* Marks of the current update (r->mark). */
enum { LA__M_NONE = 0, LA__M_HELD = 1, LA__M_FRONT = 2 };

/* A suspect value v of element i: joins or starts the run; returns the
 * estimate (the run's minimum once the run is confirmed, else e). */
static double la__suspect(la_robust_t *r, uint64_t i, double v, double e,
                          uint64_t *suspect, uint64_t *rises) {
  const la_robust_params_t *p = &r->p;
  double up = 1 + p->tol, at = p->abs_tol;
  float pv = (float)v;
  double pd = r->pend[i];
  if (r->run[i] == 0 || pv < pd / up - at) { /* a new, lower level */
    r->pend[i] = pv;
    r->run[i] = 1;
  } else if (pv <= pd * up + at) { /* the same level again */
    if (pv < pd) r->pend[i] = pv;
    r->run[i]++;
  } /* else: above the run's level, interference on top: not counted */
  if (r->run[i] >= p->confirm) {
    r->run[i] = 0;
    (*rises)++;
    return r->pend[i];
  }
  r->mark[i] = LA__M_HELD;
  (*suspect)++;
  return e;
}

/* Whether element j (a neighbour of i) exists with an estimate that v
 * agrees with. */
static inline int la__nb(const la_robust_t *r, uint64_t j, double v) {
  double up = 1 + r->p.tol;
  return r->run[j] != LA__NO_EST &&
         la__agrees(v, (double)r->est[j], up, r->p.abs_tol);
}

/* Whether v agrees with the current estimate of a neighbour of i: i-1 and
 * i+1 in the same row, and i-s, i+s for the grid's row and plane strides
 * (within the same plane, the same volume). With `marked` only neighbours
 * that rose with a front in this update count. */
static int la__front(const la_robust_t *r, uint64_t i, double v, int marked) {
  uint64_t n = r->n, s1 = r->p.stride[0], s2 = r->p.stride[1];
#define LA__NB(j) \
  if ((!marked || r->mark[j] == LA__M_FRONT) && la__nb(r, (j), v)) return 1
  if (i > 0 && (s1 == 0 || i % s1 != 0)) LA__NB(i - 1);
  if (i + 1 < n && (s1 == 0 || (i + 1) % s1 != 0)) LA__NB(i + 1);
  if (s1) {
    uint64_t in_plane = s2 ? i % s2 : i;
    if (in_plane >= s1) LA__NB(i - s1);
    if (i + s1 < n && (s2 == 0 || in_plane + s1 < s2)) LA__NB(i + s1);
  }
  if (s2) {
    if (i >= s2) LA__NB(i - s2);
    if (i + s2 < n) LA__NB(i + s2);
  }
#undef LA__NB
  return 0;
}

#if LA_COMPACT_X86
/* la__agrees() of four values v with four estimates nb (vup: 1 + tol,
 * vat: abs_tol): bit k for lane k, the same comparisons in double (the
 * division too: IEEE gives the same bits). */
__attribute__((target("avx2"))) static inline unsigned la__agrees4(
    __m256d v, __m256d nb, __m256d vup, __m256d vat) {
  __m256d agree = _mm256_and_pd(
      _mm256_and_pd(_mm256_cmp_pd(nb, _mm256_setzero_pd(), _CMP_GT_OQ),
                    _mm256_cmp_pd(v, _mm256_add_pd(_mm256_mul_pd(nb, vup), vat),
                                  _CMP_LE_OQ)),
      _mm256_cmp_pd(v, _mm256_sub_pd(_mm256_div_pd(nb, vup), vat),
                    _CMP_GE_OQ));
  return (unsigned)_mm256_movemask_pd(agree);
}

/* la__front() with AVX2: the four neighbours in a row and a plane (i-1,
 * i+1, i-s1, i+s1) tested at once, without a branch per neighbour (which
 * neighbour agrees is as random as the interference): the same
 * comparisons in double as la__agrees() (the division too: IEEE gives the
 * same bits), so the same answer; the plane's neighbours (i-s2, i+s2)
 * after them as la__front() tests them. */
__attribute__((target("avx2"))) static int la__front_avx2(const la_robust_t *r,
                                                          uint64_t i, double v,
                                                          int marked) {
  uint64_t n = r->n, s1 = r->p.stride[0], s2 = r->p.stride[1];
  uint64_t col = s1 ? i % s1 : 1;
  uint64_t in_plane = s2 ? i % s2 : i;
  /* the neighbours that exist, each index (itself where it does not) */
  uint64_t j0 = i, j1 = i, j2 = i, j3 = i;
  unsigned ok = 0;
  if (i > 0 && (s1 == 0 || col != 0)) j0 = i - 1, ok |= 1;
  if (i + 1 < n && (s1 == 0 || col != s1 - 1)) j1 = i + 1, ok |= 2;
  if (s1) {
    if (in_plane >= s1) j2 = i - s1, ok |= 4;
    if (i + s1 < n && (s2 == 0 || in_plane + s1 < s2)) j3 = i + s1, ok |= 8;
  }
  /* with an estimate (and, marked: rose with a front in this update) */
  const uint8_t *run = r->run, *mark = r->mark;
  unsigned have = (unsigned)(run[j0] != LA__NO_EST) |
                  (unsigned)(run[j1] != LA__NO_EST) << 1 |
                  (unsigned)(run[j2] != LA__NO_EST) << 2 |
                  (unsigned)(run[j3] != LA__NO_EST) << 3;
  if (marked)
    have &= (unsigned)(mark[j0] == LA__M_FRONT) |
            (unsigned)(mark[j1] == LA__M_FRONT) << 1 |
            (unsigned)(mark[j2] == LA__M_FRONT) << 2 |
            (unsigned)(mark[j3] == LA__M_FRONT) << 3;
  ok &= have;
  const float *est = r->est;
  const __m256d nb =
      _mm256_cvtps_pd(_mm_set_ps(est[j3], est[j2], est[j1], est[j0]));
  const __m256d vv = _mm256_set1_pd(v), vup = _mm256_set1_pd(1 + r->p.tol);
  const __m256d vat = _mm256_set1_pd(r->p.abs_tol);
  if (la__agrees4(vv, nb, vup, vat) & ok) return 1;
  if (s2) {
    if (i >= s2 && (!marked || mark[i - s2] == LA__M_FRONT) &&
        la__nb(r, i - s2, v))
      return 1;
    if (i + s2 < n && (!marked || mark[i + s2] == LA__M_FRONT) &&
        la__nb(r, i + s2, v))
      return 1;
  }
  return 0;
}

/* The forward pass's common case for the four elements from i: each lane
 * that has an estimate, a usable value and a value within the band above
 * it (no run, no front, no count) gets the estimate the scalar rule
 * computes (the same operations in double, no fused ones) in nv[]; the
 * other lanes are left to the scalar rules (nv[] holds their estimates
 * as they were). Returns the lanes done (bit k: element i + k) and sets
 * *above to the lanes with an estimate and a
 * usable value above the band (the rules for a rise or a hold); stores
 * nothing. */
__attribute__((target("avx2"))) static unsigned la__group_avx2(
    const la_robust_t *r, const double *x, const uint8_t *flags, uint64_t i,
    float nv[4], unsigned *above) {
  const la_robust_params_t *p = &r->p;
  double up = 1 + p->tol;
  const __m256d vup = _mm256_set1_pd(up), vdown = _mm256_set1_pd(1 / up);
  const __m256d vat = _mm256_set1_pd(p->abs_tol),
                vfo = _mm256_set1_pd(p->follow);
  const __m256d sign = _mm256_set1_pd(-0.0), inf = _mm256_set1_pd(INFINITY);
  uint32_t run, fl = 0;
  memcpy(&run, r->run + i, 4);
  if (flags) memcpy(&fl, flags + i, 4);
  /* lanes without a byte of 255 in run (no estimate yet) or a flag */
  const __m128i z = _mm_setzero_si128();
  unsigned lanes =
      (unsigned)_mm_movemask_epi8(_mm_andnot_si128(
          _mm_cmpeq_epi8(_mm_cvtsi32_si128((int)run), _mm_set1_epi8(-1)),
          _mm_cmpeq_epi8(_mm_cvtsi32_si128((int)fl), z))) &
      0xfu;
  __m256d v = _mm256_loadu_pd(x + i);
  __m256d old = _mm256_cvtps_pd(_mm_loadu_ps(r->est + i));
  unsigned fin = (unsigned)_mm256_movemask_pd(
      _mm256_cmp_pd(_mm256_andnot_pd(sign, v), inf, _CMP_LT_OQ));
  unsigned in = (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(
      v, _mm256_add_pd(_mm256_mul_pd(old, vup), vat), _CMP_LE_OQ));
  *above = lanes & fin & ~in & 0xfu;
  lanes &= fin & in;
  __m256d fol = _mm256_add_pd(old, _mm256_mul_pd(vfo, _mm256_sub_pd(v, old)));
  __m256d down = _mm256_cmp_pd(
      v, _mm256_sub_pd(_mm256_mul_pd(old, vdown), vat), _CMP_LT_OQ);
  __m256d est = _mm256_blendv_pd(fol, v, down);
  __m256d done = _mm256_castsi256_pd(_mm256_cmpgt_epi64(
      _mm256_and_si256(_mm256_set1_epi64x((long long)lanes),
                       _mm256_setr_epi64x(1, 2, 4, 8)),
      _mm256_setzero_si256()));
  _mm_storeu_ps(nv, _mm256_cvtpd_ps(_mm256_blendv_pd(old, est, done)));
  return lanes;
}

/* Where the four elements from i have their neighbours (la__front's
 * rules): bit k of each mask for element i + k. col and pl are i's column
 * (i % s1) and place in its plane (i % s2; i without planes); needs s1 and
 * s2 0 or at least 4, so a column or place wraps at most once in a
 * group. */
typedef struct la__nbmask {
  unsigned left, right, up, down, pup, pdown;
} la__nbmask_t;

static inline la__nbmask_t la__group_nbmask(uint64_t n, uint64_t s1,
                                            uint64_t s2, uint64_t i,
                                            uint64_t col, uint64_t pl) {
  la__nbmask_t m = {0, 0, 0, 0, 0, 0};
  for (unsigned k = 0; k < 4; k++) {
    uint64_t e = i + k, c = col + k, q = pl + k;
    if (s1 && c >= s1) c -= s1;
    if (s2 && q >= s2) q -= s2;
    m.left |= (unsigned)(e > 0 && (s1 == 0 || c != 0)) << k;
    m.right |= (unsigned)(e + 1 < n && (s1 == 0 || c + 1 != s1)) << k;
    m.up |= (unsigned)(s1 && q >= s1) << k;
    m.down |= (unsigned)(s1 && e + s1 < n && (s2 == 0 || q + s1 < s2)) << k;
    m.pup |= (unsigned)(s2 && e >= s2) << k;
    m.pdown |= (unsigned)(s2 && e + s2 < n) << k;
  }
  return m;
}

/* la__agrees() of the four values v with the four estimates from est + j
 * (those with run bytes of 255, no estimate yet, do not agree): bit k for
 * lane k, the same operations in double. */
__attribute__((target("avx2"))) static inline unsigned la__agree4_avx2(
    const la_robust_t *r, uint64_t j, __m256d v, __m256d vup, __m256d vat) {
  uint32_t run;
  memcpy(&run, r->run + j, 4);
  unsigned none = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
                      _mm_cvtsi32_si128((int)run), _mm_set1_epi8(-1))) &
                  0xfu;
  __m256d nb = _mm256_cvtps_pd(_mm_loadu_ps(r->est + j));
  return la__agrees4(v, nb, vup, vat) & ~none;
}

/* The forward pass's neighbour test of the four elements from i, all but
 * the left neighbour's (i + k - 1: the rule of lane k - 1 may just have
 * changed it): bit k when x[i + k] agrees with the estimate of i + k + 1,
 * i + k -+ s1 or i + k -+ s2 where it exists (m). Read before any lane of
 * the group is updated, these are the estimates la__front() reads: the
 * later lanes' and those s1, s2 ahead not updated yet, those s1, s2 behind
 * final (s1, s2 0 or at least 4). Needs those estimates inside the arrays:
 * i >= max(s1, s2) and i + max(s1, s2) + 4 < n (elsewhere the caller
 * tests lane by lane). */
__attribute__((target("avx2"))) static unsigned la__group_front_avx2(
    const la_robust_t *r, const double *x, uint64_t i,
    const la__nbmask_t *m) {
  uint64_t s1 = r->p.stride[0], s2 = r->p.stride[1];
  const __m256d v = _mm256_loadu_pd(x + i);
  const __m256d vup = _mm256_set1_pd(1 + r->p.tol);
  const __m256d vat = _mm256_set1_pd(r->p.abs_tol);
  unsigned a = la__agree4_avx2(r, i + 1, v, vup, vat) & m->right;
  if (s1) {
    a |= la__agree4_avx2(r, i - s1, v, vup, vat) & m->up;
    a |= la__agree4_avx2(r, i + s1, v, vup, vat) & m->down;
  }
  if (s2) {
    a |= la__agree4_avx2(r, i - s2, v, vup, vat) & m->pup;
    a |= la__agree4_avx2(r, i + s2, v, vup, vat) & m->pdown;
  }
  return a;
}
#endif

/* la__front() as the update's build has it (AVX2 where the CPU has it:
 * the same answer). */
static inline int la__front_any(const la_robust_t *r, uint64_t i, double v,
                                int marked) {
#if LA_COMPACT_X86
  if (r->simd) return la__front_avx2(r, i, v, marked);
#endif
  return la__front(r, i, v, marked);
}

/* c ? a : b (c 0 or 1) without a branch, on the bits. */
static inline float la__pick(unsigned c, float a, float b) {
  uint32_t ua, ub;
  memcpy(&ua, &a, 4);
  memcpy(&ub, &b, 4);
  ub ^= (ua ^ ub) & (0u - c);
  memcpy(&b, &ub, 4);
  return b;
}

/* la__agrees() without a branch (every comparison made). */
static inline unsigned la__agrees_all(double v, double nb, double up,
                                      double at) {
  return (unsigned)(nb > 0) & (unsigned)(v <= nb * up + at) &
         (unsigned)(v >= nb / up - at);
}

/* The rules for a value v of element i above its band when the rule of
 * neighbours applies and nb is its answer (not seen): la__step()'s, without
 * a branch on which rule applies (a rise with a front, a hold, a confirmed
 * run: as random as the interference); the same state, counts and
 * estimate. */
static inline void la__rise_nb(la_robust_t *r, uint64_t i, double v,
                               unsigned nb, uint64_t *suspect,
                               uint64_t *rises) {
  const la_robust_params_t *p = &r->p;
  double up = 1 + p->tol, at = p->abs_tol;
  float pv = (float)v, pf = r->pend[i], old = r->est[i];
  double pd = pf;
  unsigned run = r->run[i];
  /* la__suspect()'s rules: a new level, the same level, or above it */
  unsigned fresh = (unsigned)(run == 0) | (unsigned)(pv < pd / up - at);
  unsigned same = (fresh ^ 1u) & (unsigned)(pv <= pd * up + at);
  float np = la__pick(fresh | (same & (unsigned)(pv < pd)), pv, pf);
  unsigned nr = fresh ? 1 : run + same;
  unsigned conf = (unsigned)(nr >= p->confirm), rose = nb | conf;
  r->pend[i] = la__pick(nb, pf, np);
  r->run[i] = (uint8_t)(nr & (0u - (rose ^ 1u)));             /* 0: rose */
  r->mark[i] = (uint8_t)(nb * LA__M_FRONT + (rose ^ 1u) * LA__M_HELD);
  r->est[i] = la__pick(nb, pv, la__pick(conf, np, old));
  *rises += rose;
  *suspect += rose ^ 1u;
}

/* The forward pass's rules for element i (every case). */
static inline void la__step(la_robust_t *r, const double *x,
                            const uint8_t *flags, uint64_t i, int seen,
                            uint64_t *flagged, uint64_t *suspect,
                            uint64_t *rises) {
  const la_robust_params_t *p = &r->p;
  double up = 1 + p->tol, down = 1 / up, at = p->abs_tol, fo = p->follow;
  double v = x[i], e, old = (double)r->est[i];
  if (r->run[i] == LA__NO_EST) {
    e = la__first(r, x, flags, i);
    r->run[i] = 0;
    if (!la__usable(x, flags, i)) (*flagged)++;
  } else if (!la__usable(x, flags, i)) {
    e = old;
    (*flagged)++;
  } else if (v <= old * up + at) {
    r->run[i] = 0;
    e = v < old * down - at ? v /* the cost went down */
                            : old + fo * (v - old);
  } else if (seen) {
    /* not flagged: no switch while it was timed, so it is the element's
     * work, believed at once (a front reaching it; no neighbour needed) */
    r->run[i] = 0;
    r->mark[i] = LA__M_FRONT;
    e = v;
    (*rises)++;
  } else if (p->neighbour && la__front_any(r, i, v, 0)) {
    /* a neighbour costs this much already: a front moving over the
     * elements, believed at once */
    r->run[i] = 0;
    r->mark[i] = LA__M_FRONT;
    e = v;
    (*rises)++;
  } else {
    e = la__suspect(r, i, v, old, suspect, rises);
  }
  r->est[i] = (float)e;
}

#if LA_COMPACT_X86
/* The forward pass over the whole groups of four with AVX2 (la__forward()
 * says how), compiled for AVX2 so that the group's kernels inline.
 * Returns the first element not done. */
__attribute__((target("avx2"))) static uint64_t la__forward_avx2(
    la_robust_t *r, const double *x, const uint8_t *flags, int seen,
    uint64_t *flagged, uint64_t *suspect, uint64_t *rises) {
  uint64_t i = 0, n = r->n;
  uint64_t s1 = r->p.stride[0], s2 = r->p.stride[1];
  uint64_t smax = s1 > s2 ? s1 : s2;
  int grp = !seen && r->p.neighbour && (s1 == 0 || s1 >= 4) &&
            (s2 == 0 || s2 >= 4);
  uint64_t col = 0, pl = 0; /* i % s1, i % s2 (i without planes) */
  for (; i + 4 <= n; i += 4) {
    float nv[4];
    unsigned above, lanes = la__group_avx2(r, x, flags, i, nv, &above);
    uint64_t c = col, q = pl;
    col += 4, pl += 4; /* the next group's (s1, s2 >= 4: one wrap) */
    if (s1 && col >= s1) col -= s1;
    if (s2 && pl >= s2) pl -= s2;
    if (lanes == 0xf) {
      memcpy(r->est + i, nv, sizeof nv);
      memset(r->run + i, 0, 4);
      continue;
    }
    if (grp && i > 0 && i >= smax && i + smax + 4 < n) {
      /* the neighbours but the left ones tested before any lane is
       * updated; the lanes in the band updated at once (the others'
       * rules read no later lane's estimate), then the others in order
       * (each reads the one before it updated) */
      unsigned nbr = 0, left = 0;
      if (above) {
        la__nbmask_t m = la__group_nbmask(n, s1, s2, i, c, q);
        nbr = la__group_front_avx2(r, x, i, &m);
        left = m.left;
      }
      uint32_t run;
      memcpy(r->est + i, nv, sizeof nv);
      memcpy(&run, r->run + i, 4); /* bytes of the lanes done to 0 */
      run &= ~(((lanes * 0x204081u) & 0x01010101u) * 0xffu);
      memcpy(r->run + i, &run, 4);
      for (unsigned todo = ~lanes & 0xfu; todo; todo &= todo - 1) {
        unsigned k = (unsigned)__builtin_ctz(todo);
        uint64_t e = i + k;
        if (above >> k & 1) {
          double v = x[e];
          unsigned nb =
              (nbr >> k & 1) |
              ((left >> k & 1) & (unsigned)(r->run[e - 1] != LA__NO_EST) &
               la__agrees_all(v, (double)r->est[e - 1], 1 + r->p.tol,
                              r->p.abs_tol));
          la__rise_nb(r, e, v, nb, suspect, rises);
        } else {
          la__step(r, x, flags, e, seen, flagged, suspect, rises);
        }
      }
      continue;
    }
    for (unsigned k = 0; k < 4; k++) {
      uint64_t e = i + k;
      if (lanes >> k & 1) {
        r->est[e] = nv[k];
        r->run[e] = 0;
      } else {
        la__step(r, x, flags, e, seen, flagged, suspect, rises);
      }
    }
  }
  return i;
}
#endif

/* The forward pass: every element's new estimate, in element order (a
 * rule for element i reads the new estimates of the elements before it
 * and the old ones of those after it). With detection and this cycle's
 * flags, a usable value above the band is measured work. With AVX2, four
 * elements at a time: the lanes in the band take the vector's estimate,
 * the others the scalar rules, lane by lane in order; the lanes above
 * their band have their neighbours but the left one tested for the group
 * at once (la__group_front_avx2, where the strides reach beyond a group)
 * and the left one as their turn comes. */
static void la__forward(la_robust_t *r, const double *x, const uint8_t *flags,
                        uint64_t *flagged, uint64_t *suspect,
                        uint64_t *rises) {
  int seen = r->p.detect && flags; /* the probe watched every value */
  uint64_t i = 0, n = r->n;
  memset(r->mark, LA__M_NONE, n * sizeof *r->mark);
#if LA_COMPACT_X86
  if (r->simd) i = la__forward_avx2(r, x, flags, seen, flagged, suspect, rises);
#endif
  for (; i < n; i++) la__step(r, x, flags, i, seen, flagged, suspect, rises);
}

/* i % d by a multiplication where i and d fit in 32 bits (Lemire's
 * fastmod: the backward pass takes one per held element), else the
 * division. d 0: 0. */
typedef struct la__mod {
  uint64_t d, m; /* m: 2^64 / d rounded up (0: divide) */
} la__mod_t;

static la__mod_t la__mod_new(uint64_t d, uint64_t n) {
  la__mod_t m = {d, 0};
  if (d > 0 && d <= UINT32_MAX && n <= UINT32_MAX)
    m.m = UINT64_MAX / d + 1;
  return m;
}

static inline uint64_t la__mod(const la__mod_t *m, uint64_t i) {
  if (m->d == 0) return 0;
  if (m->m) return (uint64_t)(((unsigned __int128)(m->m * i) * m->d) >> 64);
  return i % m->d;
}

#if LA_COMPACT_X86
/* The backward pass's rule for held element i: la__front(r, i, x[i], 1)
 * tests only the neighbours after i (i + 1 in its row, i + s1 in its
 * plane, i + s2), at once with AVX2 (the same comparisons in double as
 * la__agrees(), the division too): those before i cannot agree, as the
 * forward pass found each of them not agreeing with x[i] (it tested them
 * as they are now) and no step has changed them since (this pass goes
 * down the element order). A front element has an estimate. */
__attribute__((target("avx2"))) static inline void la__back_one_avx2(
    la_robust_t *r, const double *x, uint64_t i, const la__mod_t *m1,
    const la__mod_t *m2, uint64_t *suspect, uint64_t *rises) {
  uint64_t n = r->n, s1 = m1->d, s2 = m2->d;
  uint64_t col = la__mod(m1, i), pl = s2 ? la__mod(m2, i) : i;
  double v = x[i];
  /* the neighbours that exist, each index (i itself, held, where not) */
  uint64_t j1 = i + 1 < n && (s1 == 0 || col + 1 != s1) ? i + 1 : i;
  uint64_t j2 = s1 && i + s1 < n && (s2 == 0 || pl + s1 < s2) ? i + s1 : i;
  uint64_t j3 = s2 && i + s2 < n ? i + s2 : i;
  const float *est = r->est;
  const uint8_t *mark = r->mark;
  unsigned fr = (unsigned)(mark[j1] == LA__M_FRONT) |
                (unsigned)(mark[j2] == LA__M_FRONT) << 1 |
                (unsigned)(mark[j3] == LA__M_FRONT) << 2;
  const __m256d nb =
      _mm256_cvtps_pd(_mm_set_ps(0.0f, est[j3], est[j2], est[j1]));
  const __m256d vv = _mm256_set1_pd(v), vup = _mm256_set1_pd(1 + r->p.tol);
  const __m256d vat = _mm256_set1_pd(r->p.abs_tol);
  if (!(la__agrees4(vv, nb, vup, vat) & fr)) return;
  r->est[i] = (float)v;
  r->run[i] = 0;
  r->mark[i] = LA__M_FRONT;
  (*suspect)--;
  (*rises)++;
}

/* The backward pass with AVX2 (la__backward() says how): the held
 * elements found eight marks at a time (little-endian builds), last
 * first. */
__attribute__((target("avx2"))) static void la__backward_avx2(
    la_robust_t *r, const double *x, uint64_t *suspect, uint64_t *rises) {
  const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f7f7f7f7f7f7f7full;
  la__mod_t m1 = la__mod_new(r->p.stride[0], r->n);
  la__mod_t m2 = la__mod_new(r->p.stride[1], r->n);
  for (uint64_t b = r->n; b > 0;) { /* the marks [b - len, b) */
    uint64_t len = b >= 8 ? 8 : b, base = b - len, m8 = 0;
    if (len == 8)
      memcpy(&m8, r->mark + base, 8); /* mark[base + k]: byte k */
    else
      for (uint64_t k = 0; k < len; k++)
        m8 |= (uint64_t)r->mark[base + k] << (8 * k);
    m8 ^= ones * LA__M_HELD;
    /* the high bit of each byte that was LA__M_HELD (exact: no carry
     * crosses a byte) */
    uint64_t h = ~(((m8 & low7) + low7) | m8 | low7);
    while (h) {
      unsigned k = 63u - (unsigned)__builtin_clzll(h);
      h ^= 1ull << k;
      la__back_one_avx2(r, x, base + k / 8, &m1, &m2, suspect, rises);
    }
    b = base;
  }
}
#endif

/* The backward pass: a held value that agrees with a later neighbour's
 * front rise of this update is a front moving down the element order.
 * Undoes the suspect's run. With AVX2 on a little-endian build only the
 * held elements are visited, and only their later neighbours tested
 * (la__back_one_avx2); the scalar build is the reference: every
 * neighbour tested as la__front() does. */
static void la__backward(la_robust_t *r, const double *x, uint64_t *suspect,
                         uint64_t *rises) {
  if (*suspect == 0) return; /* nothing held */
#if LA_COMPACT_X86 && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (r->simd) {
    la__backward_avx2(r, x, suspect, rises);
    return;
  }
#endif
  for (uint64_t i = r->n; i-- > 0;) {
    if (i >= 8) { /* eight not held (no byte equal to 1) at once */
      uint64_t m8;
      memcpy(&m8, r->mark + i - 7, 8);
      m8 ^= 0x0101010101010101ull * LA__M_HELD;
      if (((m8 - 0x0101010101010101ull) & ~m8 & 0x8080808080808080ull) == 0) {
        i -= 7; /* the loop's step takes the eighth */
        continue;
      }
    }
    if (r->mark[i] != LA__M_HELD || !la__front_any(r, i, x[i], 1)) continue;
    r->est[i] = (float)x[i];
    r->run[i] = 0;
    r->mark[i] = LA__M_FRONT;
    (*suspect)--;
    (*rises)++;
  }
}

/* The estimator over the rows (the first n / nx entries of r's arrays):
 * the same arrays, the row count and the row-space parameters. */
static la_robust_t la__row_view(const la_robust_t *r) {
  la_robust_t v = *r;
  v.n = r->n / r->nx;
  v.p = r->rp;
  return v;
}

/* Whether every row of x (and of flags) holds one value, bit for bit:
 * each value equals the next one (memcmp of the row against itself shifted
 * by one, the C library's vectorised loop). */
static int la__x_rows_uniform(const la_robust_t *r, const double *x,
                              const uint8_t *flags) {
  uint64_t nx = r->nx;
  for (uint64_t b = 0; b < r->n; b += nx)
    if (memcmp(x + b, x + b + 1, (nx - 1) * sizeof *x) != 0 ||
        (flags && memcmp(flags + b, flags + b + 1, nx - 1) != 0))
      return 0;
  return 1;
}

/* Whether every row's cells have one state (their estimate when they have
 * one, the pending run's level while a run is pending). */
static int la__state_rows_uniform(const la_robust_t *r) {
  uint64_t nx = r->nx;
  for (uint64_t b = 0; b < r->n; b += nx) {
    uint8_t run = r->run[b];
    float est = r->est[b], pend = r->pend[b];
    for (uint64_t i = b + 1; i < b + nx; i++) {
      if (r->run[i] != run) return 0;
      if (run != LA__NO_EST && r->est[i] != est) return 0;
      if (run != 0 && run != LA__NO_EST && r->pend[i] != pend) return 0;
    }
  }
  return 1;
}

/* Cell states to row states: row r from its first cell (r <= r * nx, so
 * reading upwards never reads an entry already written). */
static void la__to_rows(la_robust_t *r) {
  for (uint64_t k = 0; k < r->n / r->nx; k++) {
    r->est[k] = r->est[k * r->nx];
    r->pend[k] = r->pend[k * r->nx];
    r->run[k] = r->run[k * r->nx];
  }
  r->rows = 1;
}

/* Row states back to every cell of the row, last row first. */
static void la__to_cells(la_robust_t *r) {
  for (uint64_t k = r->n / r->nx; k-- > 0;) {
    float est = r->est[k], pend = r->pend[k];
    uint8_t run = r->run[k];
    for (uint64_t i = k * r->nx; i < (k + 1) * r->nx; i++) {
      r->est[i] = est;
      r->pend[i] = pend;
      r->run[i] = run;
    }
  }
  r->rows = 0;
}

/* One row-uniform cycle over the rows; 0, or LA_ENOMEM (nothing done). */
static int la__update_rows(la_robust_t *r, const double *x,
                           const uint8_t *flags, double *w,
                           la_robust_stats_t *st) {
  la_robust_t v = la__row_view(r);
  uint64_t nx = r->nx, flagged = 0, suspect = 0, rises = 0;
  double *xr = calloc(v.n, sizeof *xr);
  uint8_t *fr = flags ? malloc(v.n) : NULL;
  if (!xr || (flags && !fr)) {
    free(xr);
    free(fr);
    return LA_ENOMEM;
  }
  for (uint64_t k = 0; k < v.n; k++) {
    xr[k] = x[k * nx];
    if (fr) fr[k] = flags[k * nx];
  }
  la__forward(&v, xr, fr, &flagged, &suspect, &rises);
  if (v.p.neighbour) la__backward(&v, xr, &suspect, &rises);
  double isum = 0, rs = 0, rc = 0;
  for (uint64_t k = 0; k < v.n; k++) {
    double xv = xr[k], wi = (double)v.est[k];
    if (isfinite(xv) && xv > wi) isum += xv - wi;
    double t = rs + wi; /* Neumaier's sum of the row weights */
    rc += fabs(rs) >= fabs(wi) ? (rs - t) + wi : (wi - t) + rs;
    rs = t;
    double *wk = w + k * nx;
    uint64_t i = 0;
    for (; i + 4 <= nx; i += 4) /* four at a time: vector stores at -O2 */
      wk[i] = wk[i + 1] = wk[i + 2] = wk[i + 3] = wi;
    for (; i < nx; i++) wk[i] = wi;
  }
  free(xr);
  free(fr);
  r->cycles++;
  if (st) { /* per cell, as the cell-wise update counts */
    st->interference = isum * (double)nx;
    st->robust_sum = (rs + rc) * (double)nx;
    st->flagged = flagged * nx;
    st->suspect = suspect * nx;
    st->rises = rises * nx;
    st->cycles = r->cycles;
    st->positive = st->coarse = 0;
  }
  return 0;
}

/* Rounds each weight whose measured value x[i] is a whole number of timer
 * ticks (q: ns per tick) to whole ticks: it estimates a count the timer
 * gives in whole ticks, so it stays within half a tick of the estimate,
 * and the compaction stores such weights as integers (the exact quantized
 * path) instead of fitting lines to every rough stretch. A weight whose
 * value is a share of a row or range (row / nx: not whole ticks, and a
 * few ticks per cell at most) keeps its estimate: rounding it could move
 * it by a large part of itself. Values too large for a tick count (ones
 * the application wrote) are left as they are (la_robust_round, robust.h:
 * the AVX2 kernel and the scalar loop give the same bits). */
#define LA__TICK_MAGIC LA_ROBUST_TICK_MAGIC
#define LA__TICK_LIMIT LA_ROBUST_TICK_LIMIT

static void la__ticks_scalar(double *y, const double *x, uint64_t n, double q,
                             double inv) {
  for (uint64_t i = 0; i < n; i++) {
    double u = y[i] * inv;
    if (fabs(u) < LA__TICK_LIMIT && la_robust_whole_ticks(x[i], q, inv))
      y[i] = la_robust_round(u) * q;
  }
}

#if LA_COMPACT_X86
/* la__ticks_scalar's rule on four weights vy of values vx (vinv = 1/q,
 * vq = q): the weights rounded to whole ticks where the values are. */
__attribute__((target("avx2"))) static inline __m256d la__tick4(
    __m256d vx, __m256d vy, __m256d vinv, __m256d vq) {
  const __m256d magic = _mm256_set1_pd(LA__TICK_MAGIC);
  const __m256d lim = _mm256_set1_pd(LA__TICK_LIMIT);
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d t = _mm256_mul_pd(vx, vinv), u = _mm256_mul_pd(vy, vinv);
  __m256d rt = _mm256_sub_pd(_mm256_add_pd(t, magic), magic);
  __m256d ru = _mm256_sub_pd(_mm256_add_pd(u, magic), magic);
  __m256d ok = _mm256_and_pd(
      _mm256_and_pd(
          _mm256_cmp_pd(_mm256_andnot_pd(sign, t), lim, _CMP_LT_OQ),
          _mm256_cmp_pd(_mm256_andnot_pd(sign, u), lim, _CMP_LT_OQ)),
      _mm256_cmp_pd(_mm256_mul_pd(rt, vq), vx, _CMP_EQ_OQ));
  return _mm256_blendv_pd(vy, _mm256_mul_pd(ru, vq), ok);
}

__attribute__((target("avx2"))) static uint64_t la__ticks_avx2(
    double *y, const double *x, uint64_t n, double q, double inv) {
  const __m256d vinv = _mm256_set1_pd(inv), vq = _mm256_set1_pd(q);
  uint64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(y + i, la__tick4(_mm256_loadu_pd(x + i),
                                      _mm256_loadu_pd(y + i), vinv, vq));
  return i;
}
#endif

static void la__ticks(double *y, const double *x, uint64_t n, double q,
                      int simd) {
  double inv = 1.0 / q;
  uint64_t i = 0;
#if LA_COMPACT_X86
  if (simd) i = la__ticks_avx2(y, x, n, q, inv);
#else
  (void)simd;
#endif
  la__ticks_scalar(y + i, x + i, n - i, q, inv);
}

#if LA_COMPACT_X86
/* The weights and their sums over the whole groups of four: lane k holds
 * the elements i with i % 4 == k, added in index order, as the scalar
 * loop does (adding +0 where it adds nothing changes no sum: they start at
 * +0 and grow). Returns the first index not done. */
__attribute__((target("avx2"))) static uint64_t la__weights_avx2(
    const la_robust_t *r, const double *x, double *w, double *is,
    double *ws, double q) {
  const __m256d sign = _mm256_set1_pd(-0.0), inf = _mm256_set1_pd(INFINITY);
  const __m256d vinv = _mm256_set1_pd(q > 0 ? 1.0 / q : 0);
  const __m256d vq = _mm256_set1_pd(q);
  __m256d vis = _mm256_setzero_pd(), vws = _mm256_setzero_pd();
  uint64_t i = 0;
  for (; i + 4 <= r->n; i += 4) {
    __m256d v = _mm256_loadu_pd(x + i);
    __m256d wi = _mm256_cvtps_pd(_mm_loadu_ps(r->est + i));
    /* la__ticks_avx2()'s rounding on the weight before it is stored */
    _mm256_storeu_pd(w + i, q > 0 ? la__tick4(v, wi, vinv, vq) : wi);
    __m256d more = _mm256_and_pd(
        _mm256_cmp_pd(_mm256_andnot_pd(sign, v), inf, _CMP_LT_OQ),
        _mm256_cmp_pd(v, wi, _CMP_GT_OQ));
    vis = _mm256_add_pd(vis, _mm256_and_pd(more, _mm256_sub_pd(v, wi)));
    vws = _mm256_add_pd(vws, wi);
  }
  _mm256_storeu_pd(is, vis);
  _mm256_storeu_pd(ws, vws);
  return i;
}
#endif

int la_robust_update(la_robust_t *r, const double *x, const uint8_t *flags,
                     double *w, la_robust_stats_t *st) {
  return la_robust_update_ticks(r, x, flags, w, st, 0);
}

int la_robust_update_ticks(la_robust_t *r, const double *x,
                           const uint8_t *flags, double *w,
                           la_robust_stats_t *st, double q) {
  if (!r || !x || !w || w == x || !(q >= 0)) return LA_EINVAL;
  if (r->nx && la__x_rows_uniform(r, x, flags)) {
    if (!r->rows && la__state_rows_uniform(r)) la__to_rows(r);
    if (r->rows && la__update_rows(r, x, flags, w, st) == 0) {
      if (q > 0) la__ticks(w, x, r->n, q, r->simd);
      return 0;
    }
  }
  if (r->rows) la__to_cells(r);
  uint64_t flagged = 0, suspect = 0, rises = 0;
  la__forward(r, x, flags, &flagged, &suspect, &rises);
  if (r->p.neighbour) la__backward(r, x, &suspect, &rises);
  /* four partial sums each, so the additions do not wait on each other
   * (the exact totals of the weights are the compaction's statistics) */
  double is[4] = {0, 0, 0, 0}, ws[4] = {0, 0, 0, 0};
  uint64_t i0 = 0;
#if LA_COMPACT_X86
  if (r->simd) i0 = la__weights_avx2(r, x, w, is, ws, q); /* rounded */
#endif
  for (uint64_t i = i0; i < r->n; i++) {
    double v = x[i], wi = (double)r->est[i];
    w[i] = wi;
    if (isfinite(v) && v > wi) is[i & 3] += v - wi;
    ws[i & 3] += wi;
  }
  if (q > 0) la__ticks_scalar(w + i0, x + i0, r->n - i0, q, 1.0 / q);
  r->cycles++;
  if (st) {
    st->interference = (is[0] + is[1]) + (is[2] + is[3]);
    st->robust_sum = (ws[0] + ws[1]) + (ws[2] + ws[3]);
    st->flagged = flagged;
    st->suspect = suspect;
    st->rises = rises;
    st->cycles = r->cycles;
    st->positive = st->coarse = 0;
  }
  return 0;
}
