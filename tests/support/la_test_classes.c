/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_classes.c: the synthetic Trace-Set of known behaviour classes
 * (la_test_classes.h). */
#include "la_test_classes.h"

#include <math.h>

#include "la_compact.h"

int la_tc_class(uint32_t r, uint32_t nprocs, uint32_t n_out) {
  uint32_t stride = n_out ? nprocs / n_out : 0;
  if (stride > 5 && r % stride == 5 && r / stride < n_out) return -1;
  return (int)(r % LA_TC_CLASSES);
}

/* Class c's profile at element i of n (before scale and noise). */
static double profile(int c, size_t i, size_t n, const double *mesh) {
  double f = (double)i / (double)n;
  switch (c) {
  case 0:
    return mesh[i];
  case 3:
    return f < 0.4 ? 2000 : f < 0.6 ? 800 : 3500;
  case 1:
    return 1000.0 + 3000.0 * f;
  default:
    return 1500.0 + (fabs(f - 0.25) < 0.05 || fabs(f - 0.7) < 0.08 ? 6000 : 0);
  }
}

double la_tc_series(uint32_t r, uint32_t nprocs, uint32_t n_out, size_t n,
                    double *x) {
  uint64_t st = 0x9e3779b97f4a7c15ull ^ ((uint64_t)r * 0x100000001b3ull);
  int c = la_tc_class(r, nprocs, n_out);
  int base = c >= 0 ? c : (int)(r % LA_TC_CLASSES);
  double scale = 0.5 + 1.5 * la_compact_rand01(&st);
  /* mesh costs of the class's seed, made in place then scaled */
  if (base == 0) la_compact_synth(LA_SYNTH_MESH, n, 11, x);
  uint32_t stride = n_out ? nprocs / n_out : 1;
  double hot = c >= 0 ? -1 : 0.05 + fmod(0.37 * (double)(r / stride + 1), 0.8);
  for (size_t i = 0; i < n; i++) {
    double v = profile(base, i, n, x);
    double f = (double)i / (double)n;
    if (hot >= 0 && f >= hot && f < hot + 0.1) v *= 5;
    double noise = 1 + 0.02 * (2 * la_compact_rand01(&st) - 1);
    x[i] = round(v * scale * noise);
  }
  return scale;
}
