/* SPDX-License-Identifier: BSD-3-Clause */
/* heavy.c: an LA example whose per-cell work is large next to the probe, in
 * the spirit of Cactus BenchADM.
 *
 * Each cell of an NX^3 grid carries a 3x3 symmetric spatial metric g_ij and
 * an extrinsic curvature K_ij (12 doubles). Every time step evaluates, per
 * cell, a toy version of the ADM evolution equations: first and second
 * derivatives of g from the 6 neighbours, the determinant and inverse of g,
 * the Christoffel symbols, a Ricci tensor (the Laplacian part plus the
 * quadratic Christoffel terms), K^i_j, tr K, the Hamiltonian and momentum
 * constraints (derivatives of K, covariant), a lapse from transcendental
 * terms (cbrt, log, exp, tanh, sqrt) and the update: the linear part with
 * symplectic Euler (K from the Ricci tensor, then g from the new K), the
 * local non-linear source of K (tr K K_ij - 2 K_ik K^k_j, with a lapse that
 * depends on tr K) sub-cycled with 4 RK4 steps. That is about 3,000
 * floating-point operations and 37 transcendental calls per cell, about a
 * microsecond on the development VM, against a probe pair of about 40 ns:
 * the "heavy kernel" of the overhead study (docs/performance.md).
 *
 * The physics is a toy: linearised about flat space it is the wave equation
 * g_tt = lap(g) (c = 1, c dt / h = 0.25), with small non-linear terms; an
 * initial Gaussian perturbation of g spreads out. Outside the grid g is flat
 * and K zero (Dirichlet). The grid is cut into k-slabs as in wavetoy (the
 * first NX % P ranks get one plane more) and each step exchanges one ghost
 * plane of 12 fields with each neighbour.
 *
 * LA lines are marked "LA:". Elements are the local cells numbered 0..n-1 in
 * memory order (i fastest), registered with plain LA_register and probed with
 * LA_startProbe(e)/LA_stopProbe(e) (wavetoy shows the (i,j,k) form).
 * --no-la runs a probe-free copy of the loop and makes no LA call.
 *
 * Rank 0 prints a summary and a checksum (the sum of all 12 fields over the
 * grid, exact per k-plane reduction as in wavetoy: identical bits with LA
 * profiling, absent, disabled or --no-la, and for any number of ranks).
 *
 * Not here: a real general-relativity solver (no shift, no gauge choice
 * worth the name, no constraint damping), output, restart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ex_floor.h"
#include "ex_args.h"
#include "ex_run.h"
#include "la.h" /* LA: the one header */

#define HV_N 24 /* default cells per dimension */
#define HV_STEPS 20
#define HV_MAX_N 1024
#define HV_MAX_STEPS 1000000
#define HV_NF 12 /* fields per cell: g_ij (6) then K_ij (6) */
#define HV_SUB 4 /* RK4 sub-steps of the local source per time step */

/* Components of a symmetric 3x3 tensor, in storage order. */
enum { XX = 0, XY, XZ, YY, YZ, ZZ };
/* Index of component (a,b) of a symmetric tensor, a,b in 0..2. */
static const int hv_sym[3][3] = {{XX, XY, XZ}, {XY, YY, YZ}, {XZ, YZ, ZZ}};

typedef struct hv_cell_s {
  double g[6];
  double k[6];
} hv_cell_t;

typedef struct hv_slab_s {
  long nx, ny, nz; /* local cells */
  long k0;         /* global index of the first local plane */
  long sx, sxy;    /* strides of j and k in the padded array (in cells) */
  hv_cell_t *u;    /* current level, with a ghost layer */
  hv_cell_t *v;    /* next level */
  double h, dt;
} hv_slab_t;

static void hv_usage(FILE *f) {
  ex_run_usage(
      f, "heavy",
      "  Toy ADM evolution on NX^3 cells (~3,000 flops per cell), k-slabs,\n"
      "  profiled per cell by LA.\n",
      HV_N, HV_STEPS, 1);
}

static size_t hv_at(const hv_slab_t *s, long i, long j, long k) {
  return (size_t)(i + s->sx * j + s->sxy * k);
}

static void hv_flat(hv_cell_t *c) {
  memset(c, 0, sizeof *c);
  c->g[XX] = c->g[YY] = c->g[ZZ] = 1.0;
}

/* Allocates the slab; flat space plus a Gaussian perturbation of g. */
static int hv_slab_init(hv_slab_t *s, long n, int rank, int size) {
  size_t total;
  s->nx = s->ny = n;
  ex_slab(n, rank, size, &s->nz, &s->k0);
  s->sx = n + 2;
  s->sxy = (n + 2) * (n + 2);
  s->h = 1.0 / (double)(n + 1);
  s->dt = 0.25 * s->h;
  total = (size_t)s->sxy * (size_t)(s->nz + 2);
  s->u = malloc(total * sizeof *s->u);
  s->v = malloc(total * sizeof *s->v);
  if (!s->u || !s->v) return -1;
  for (size_t c = 0; c < total; c++) hv_flat(&s->u[c]), hv_flat(&s->v[c]);
  for (long k = 1; k <= s->nz; k++) {
    double z = (double)(s->k0 + k) * s->h - 0.45;
    for (long j = 1; j <= s->ny; j++) {
      double y = (double)j * s->h - 0.5;
      for (long i = 1; i <= s->nx; i++) {
        double x = (double)i * s->h - 0.55;
        double a = 0.1 * exp(-(x * x + y * y + z * z) / (2 * 0.1 * 0.1));
        hv_cell_t *c = &s->u[hv_at(s, i, j, k)];
        c->g[XX] += a;
        c->g[YY] += 0.5 * a;
        c->g[ZZ] -= 0.3 * a;
        c->g[XY] += 0.2 * a * x / 0.1;
        c->g[YZ] += 0.1 * a * z / 0.1;
      }
    }
  }
  return 0;
}

/* Ghost planes of u from the neighbours; at the global boundary the ghost
 * stays flat. */
static void hv_halo(hv_slab_t *s, int rank, int size) {
  int down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  int up = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  int count = (int)(s->sxy * HV_NF);
  hv_cell_t *u = s->u;
  MPI_Sendrecv(u + s->sxy * s->nz, count, MPI_DOUBLE, up, 1, u, count,
               MPI_DOUBLE, down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(u + s->sxy, count, MPI_DOUBLE, down, 2, u + s->sxy * (s->nz + 1),
               count, MPI_DOUBLE, up, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* Inverse gi and determinant of the symmetric 3x3 g, by cofactors. */
static void hv_inverse(const double *g, double *gi, double *det) {
  double cxx = g[YY] * g[ZZ] - g[YZ] * g[YZ];
  double cxy = g[XZ] * g[YZ] - g[XY] * g[ZZ];
  double cxz = g[XY] * g[YZ] - g[XZ] * g[YY];
  double cyy = g[XX] * g[ZZ] - g[XZ] * g[XZ];
  double cyz = g[XY] * g[XZ] - g[XX] * g[YZ];
  double czz = g[XX] * g[YY] - g[XY] * g[XY];
  double d = g[XX] * cxx + g[XY] * cxy + g[XZ] * cxz, id = 1.0 / d;
  gi[XX] = cxx * id, gi[XY] = cxy * id, gi[XZ] = cxz * id;
  gi[YY] = cyy * id, gi[YZ] = cyz * id, gi[ZZ] = czz * id;
  *det = d;
}

/* The local source of K: alpha (tr K K_ij - 2 K_ik K^k_j), with a lapse
 * that depends on tr K, for inverse metric gi and curvature k. */
static void hv_source(const double *gi, const double *k, double *out) {
  double km[3][3], trk = 0.0, alpha;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      km[i][j] = gi[hv_sym[i][0]] * k[hv_sym[0][j]] +
                 gi[hv_sym[i][1]] * k[hv_sym[1][j]] +
                 gi[hv_sym[i][2]] * k[hv_sym[2][j]];
  trk = km[0][0] + km[1][1] + km[2][2];
  alpha = exp(-0.02 * trk) / sqrt(1.0 + 0.1 * trk * trk);
  for (int i = 0; i < 3; i++)
    for (int j = i; j < 3; j++) {
      int a = hv_sym[i][j];
      double kk = k[hv_sym[i][0]] * km[0][j] + k[hv_sym[i][1]] * km[1][j] +
                  k[hv_sym[i][2]] * km[2][j];
      out[a] = alpha * (trk * k[a] - 2.0 * kk);
    }
}

/* The per-cell kernel: reads cell c and its 6 neighbours in u, writes the
 * new state of c to out. About 3,000 flops, 37 transcendental calls. */
static void hv_kernel(const hv_cell_t *u, size_t c, long sx, long sxy, double h,
                      double dt, hv_cell_t *out) {
  const hv_cell_t *p = &u[c];
  const hv_cell_t *nb[3][2] = {{&u[c - 1], &u[c + 1]},
                               {&u[c - sx], &u[c + sx]},
                               {&u[c - sxy], &u[c + sxy]}};
  const double i2h = 0.5 / h, ih2 = 1.0 / (h * h);
  double dg[3][6], lap[6], gi[6], det;
  double gam1[3][6]; /* Gamma_{k ij}, first kind, (ij) symmetric */
  double gam[3][6];  /* Gamma^l_{ij}, second kind */
  double ric[6], km[3][3], trk = 0.0, rs = 0.0, kijkij = 0.0;
  double contr[3], dk[3][6], mom[3];

  /* First derivatives and Laplacian of g (central differences). */
  for (int a = 0; a < 6; a++) {
    double l = -6.0 * p->g[a];
    for (int d = 0; d < 3; d++) {
      dg[d][a] = (nb[d][1]->g[a] - nb[d][0]->g[a]) * i2h;
      l += nb[d][1]->g[a] + nb[d][0]->g[a];
    }
    lap[a] = l * ih2;
  }

  hv_inverse(p->g, gi, &det);

  /* Christoffel symbols: Gamma_{kij} = (d_i g_jk + d_j g_ik - d_k g_ij)/2,
   * Gamma^l_{ij} = g^{lk} Gamma_{kij}. */
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < 3; i++)
      for (int j = i; j < 3; j++)
        gam1[k][hv_sym[i][j]] =
            0.5 *
            (dg[i][hv_sym[j][k]] + dg[j][hv_sym[i][k]] - dg[k][hv_sym[i][j]]);
  for (int l = 0; l < 3; l++)
    for (int a = 0; a < 6; a++)
      gam[l][a] = gi[hv_sym[l][0]] * gam1[0][a] +
                  gi[hv_sym[l][1]] * gam1[1][a] + gi[hv_sym[l][2]] * gam1[2][a];
  for (int k = 0; k < 3; k++)
    contr[k] = gam[0][hv_sym[k][0]] + gam[1][hv_sym[k][1]] +
               gam[2][hv_sym[k][2]]; /* Gamma^l_{kl} */

  /* Ricci: -lap(g_ij)/2 + Gamma^k_ij Gamma^l_kl - Gamma^k_il Gamma^l_jk. */
  for (int i = 0; i < 3; i++)
    for (int j = i; j < 3; j++) {
      int a = hv_sym[i][j];
      double r = -0.5 * lap[a];
      for (int k = 0; k < 3; k++) {
        r += gam[k][a] * contr[k];
        for (int l = 0; l < 3; l++)
          r -= gam[k][hv_sym[i][l]] * gam[l][hv_sym[j][k]];
      }
      ric[a] = r;
    }

  /* K^i_j = g^{ik} K_kj, tr K, the scalar curvature and K_ij K^ij. */
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      km[i][j] = gi[hv_sym[i][0]] * p->k[hv_sym[0][j]] +
                 gi[hv_sym[i][1]] * p->k[hv_sym[1][j]] +
                 gi[hv_sym[i][2]] * p->k[hv_sym[2][j]];
  for (int i = 0; i < 3; i++) trk += km[i][i];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      rs += gi[hv_sym[i][j]] * ric[hv_sym[i][j]];
      kijkij += km[i][j] * km[j][i];
    }

  /* Momentum constraint M_i = g^jk (D_j K_ki - D_i K_jk), with
   * D_a K_bc = d_a K_bc - Gamma^l_ab K_lc - Gamma^l_ac K_bl. */
  for (int a = 0; a < 6; a++)
    for (int d = 0; d < 3; d++)
      dk[d][a] = (nb[d][1]->k[a] - nb[d][0]->k[a]) * i2h;
  for (int i = 0; i < 3; i++) {
    double m = 0.0;
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 3; k++) {
        double djkki = dk[j][hv_sym[k][i]], dikjk = dk[i][hv_sym[j][k]];
        for (int l = 0; l < 3; l++) {
          djkki -= gam[l][hv_sym[j][k]] * p->k[hv_sym[l][i]] +
                   gam[l][hv_sym[j][i]] * p->k[hv_sym[k][l]];
          dikjk -= gam[l][hv_sym[i][j]] * p->k[hv_sym[l][k]] +
                   gam[l][hv_sym[i][k]] * p->k[hv_sym[j][l]];
        }
        m += gi[hv_sym[j][k]] * (djkki - dikjk);
      }
    mom[i] = m;
  }

  /* Lapse: a 1+log-like function of the volume element, damped by the
   * Hamiltonian constraint H = R + K^2 - K_ij K^ij and the momentum
   * constraint (transcendental work). */
  {
    double ham = rs + trk * trk - kijkij;
    double m2 = mom[0] * mom[0] + mom[1] * mom[1] + mom[2] * mom[2];
    double vol = cbrt(det);
    double alpha = exp(-0.05 * log(vol) * (1.0 + 0.01 * tanh(ham * h * h))) /
                   sqrt(1.0 + 0.1 * trk * trk + 1e-3 * h * h * m2);
    /* The linear (wave) part, symplectic Euler: K from the Ricci tensor of
     * g, then g from the new K. */
    for (int a = 0; a < 6; a++) {
      out->k[a] = p->k[a] + dt * alpha * ric[a];
      out->g[a] = p->g[a] - 2.0 * dt * alpha * out->k[a];
    }
  }

  /* The local non-linear part, dK/dt = alpha(tr K) (tr K K_ij - 2 K_ik
   * K^k_j) with g held fixed (operator splitting), sub-cycled: HV_SUB
   * classical RK4 steps of dt / HV_SUB, each four evaluations of the source
   * with their own K^i_j and lapse. */
  {
    static const double c[4] = {0.0, 0.5, 0.5, 1.0}, w[4] = {1, 2, 2, 1};
    const double hs = dt / HV_SUB;
    hv_inverse(out->g, gi, &det);
    for (int sub = 0; sub < HV_SUB; sub++) {
      double y[6], acc[6] = {0, 0, 0, 0, 0, 0}, st[6] = {0, 0, 0, 0, 0, 0};
      for (int a = 0; a < 6; a++) y[a] = out->k[a];
      for (int s = 0; s < 4; s++) {
        double ks[6];
        for (int a = 0; a < 6; a++) ks[a] = y[a] + c[s] * hs * st[a];
        hv_source(gi, ks, st);
        for (int a = 0; a < 6; a++) acc[a] += w[s] * st[a];
      }
      for (int a = 0; a < 6; a++) out->k[a] = y[a] + hs / 6.0 * acc[a];
    }
  }
}

/* One step over every local cell. probe is a compile-time constant at each
 * call site, so the --no-la copy contains no LA code. */
static inline __attribute__((always_inline)) void hv_update(hv_slab_t *s,
                                                            const int probe,
                                                            double *floor) {
  const long sx = s->sx, sxy = s->sxy;
  long e = 0;
  for (long k = 1; k <= s->nz; k++)
    for (long j = 1; j <= s->ny; j++) {
      size_t row = hv_at(s, 0, j, k);
      for (long i = 1; i <= s->nx; i++, e++) {
        size_t c = row + (size_t)i;
        uint64_t t0 = 0;
        if (probe == 1) LA_startProbe(e); /* LA: */
        if (probe == 2) t0 = ex_floor_ticks();
        hv_kernel(s->u, c, sx, sxy, s->h, s->dt, &s->v[c]);
        if (probe == 1) LA_stopProbe(e); /* LA: */
        if (probe == 2) floor[e] += (double)(ex_floor_ticks() - t0);
      }
    }
}

static void hv_update_plain(hv_slab_t *s) {
  hv_update(s, 0, NULL);
}
static void hv_update_la(hv_slab_t *s) {
  hv_update(s, 1, NULL);
}
static void hv_update_floor(hv_slab_t *s, double *floor) {
  hv_update(s, 2, floor);
}

/* Sum of the 12 fields over the grid, exact per-plane reduction. */
static double hv_checksum(const hv_slab_t *s, long n, int rank) {
  double *planes = ex_planes(n);
  for (long k = 1; k <= s->nz; k++) {
    double p = 0.0;
    for (long j = 1; j <= s->ny; j++)
      for (long i = 1; i <= s->nx; i++) {
        const hv_cell_t *c = &s->u[hv_at(s, i, j, k)];
        for (int a = 0; a < 6; a++) p += c->g[a] + c->k[a];
      }
    planes[s->k0 + k - 1] = p;
  }
  return ex_plane_sum(planes, n, rank);
}

int main(int argc, char **argv) {
  int rank, size, rc;
  ex_run_opts_t o = {.n = HV_N, .steps = HV_STEPS};
  hv_slab_t s;
  double t0, wall, checksum;
  ex_la_t la = {0};

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  rc = ex_run_parse("heavy", argc, argv, rank, size, hv_usage, &o, HV_MAX_N,
                    HV_MAX_STEPS, 1);
  if (rc >= 0) return ex_finalize(rc);
  if (hv_slab_init(&s, o.n, rank, size)) ex_grid_oom("heavy", rank, o.n, 3);

  if (o.use_la) {
    rc = LA_register("heavy", rank, size, s.nx * s.ny * s.nz); /* LA: */
    ex_la_registered(&la, rc);
  }

  double *floor = ex_floor_alloc("heavy", o.floor, s.nx * s.ny * s.nz);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (long step = 0; step < o.steps; step++) {
    hv_cell_t *tmp;
    hv_halo(&s, rank, size);
    if (o.use_la) {
      hv_update_la(&s);
      ex_la_cycle(&la, LA_dataXfer()); /* LA: one cycle per time step */
    } else if (o.floor) {
      hv_update_floor(&s, floor);
    } else {
      hv_update_plain(&s);
    }
    tmp = s.u, s.u = s.v, s.v = tmp;
  }
  wall = ex_wall_max(t0);

  checksum = hv_checksum(&s, o.n, rank);

  if (o.use_la) {
    ex_la_stats(&la);
    LA_finalize(); /* LA: */
  }
  ex_la_gather(&la);

  if (rank == 0) ex_slab_report("heavy", &o, size, wall, 1, &la, "", checksum);

  free(floor);
  free(s.u);
  free(s.v);
  MPI_Finalize();
  return 0;
}
