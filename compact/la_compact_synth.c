/* SPDX-License-Identifier: BSD-3-Clause */
/* la_compact_synth.c: deterministic synthetic series for the compaction
 * engine's tests, its benchmark and `lactl compact --synthetic`: mesh-cost
 * traces (plateaus, a periodic component, noise, spikes) and the structured
 * shapes the property tests need (steps, ramps, sines, spikes, constant,
 * noise, random walk). A seed fixes every value; there is no global state.
 *
 * It is not a model of any particular application; it only reproduces the
 * shapes per-element cost traces are known to have.
 */
#include <math.h>
#include <string.h>

#include "la_compact.h"

uint64_t la_compact_rand(uint64_t *state) { /* splitmix64 */
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

double la_compact_rand01(uint64_t *state) {
  return (double)(la_compact_rand(state) >> 11) * 0x1p-53;
}

static double gauss(uint64_t *s) { /* Box-Muller, one value per call */
  double u = la_compact_rand01(s), v = la_compact_rand01(s);
  return sqrt(-2 * log(u + 0x1p-60)) * cos(6.283185307179586 * v);
}

static const char *const names[LA_SYNTH_KINDS] = {
    "mesh", "steps", "ramps", "sine", "spikes", "constant", "noise", "walk"};

const char *la_compact_synth_name(int kind) {
  return kind >= 0 && kind < LA_SYNTH_KINDS ? names[kind] : "?";
}

int la_compact_synth_kind(const char *name) {
  int k;

  for (k = 0; k < LA_SYNTH_KINDS; k++)
    if (strcmp(name, names[k]) == 0)
      return k;
  return LA_EINVAL;
}

/* Mesh-cost trace in whole nanoseconds: plateaus of 2,000-22,000 points at
 * log-uniform levels in [200, 20000] ns, a 5% periodic component (period 37,
 * a mesh row), 2% Gaussian noise and 0.1% spikes of 3-20 times the value. */
static void mesh(double *x, size_t n, uint64_t *s) {
  size_t i = 0, len, j;
  double level;

  while (i < n) {
    len = 2000 + (size_t)(la_compact_rand01(s) * 20000);
    level = 200 * pow(100, la_compact_rand01(s));
    for (j = 0; j < len && i < n; j++, i++) {
      double v = level * (1 + 0.05 * sin(6.283185307179586 * (double)i / 37) +
                          0.02 * gauss(s));
      if (la_compact_rand01(s) < 0.001)
        v *= 3 + 17 * la_compact_rand01(s);
      x[i] = floor(v + 0.5);
    }
  }
}

int la_compact_synth(int kind, size_t n, uint64_t seed, double *x) {
  uint64_t s = seed;
  size_t i, left = 0;
  double level = 0, slope = 0;

  if (kind < 0 || kind >= LA_SYNTH_KINDS || (x == NULL && n > 0))
    return LA_EINVAL;
  if (kind == LA_SYNTH_MESH) {
    mesh(x, n, &s);
    return 0;
  }
  for (i = 0; i < n; i++) {
    double u = la_compact_rand01(&s);
    switch (kind) {
    case LA_SYNTH_STEPS: /* plateaus of 1-200 points, 1% noise */
      if (left == 0) {
        left = 1 + (size_t)(u * 200);
        level = 10 + 990 * la_compact_rand01(&s);
      }
      left--;
      x[i] = level * (1 + 0.01 * gauss(&s));
      break;
    case LA_SYNTH_RAMPS: /* linear pieces of 5-300 points, 0.5% noise */
      if (left == 0) {
        left = 5 + (size_t)(u * 300);
        level = 100 + 900 * la_compact_rand01(&s);
        slope = (la_compact_rand01(&s) - 0.5) * 4;
      }
      left--;
      level += slope;
      x[i] = level * (1 + 0.005 * gauss(&s));
      break;
    case LA_SYNTH_SINE:
      x[i] = 500 + 200 * sin((double)i / 50) + gauss(&s);
      break;
    case LA_SYNTH_SPIKES: /* flat with 1% spikes */
      x[i] = 100 + gauss(&s) + (u < 0.01 ? 1000 * la_compact_rand01(&s) : 0);
      break;
    case LA_SYNTH_CONSTANT:
      x[i] = 42.5;
      break;
    case LA_SYNTH_NOISE:
      x[i] = 1000 * u;
      break;
    default: /* LA_SYNTH_WALK */
      level += gauss(&s);
      x[i] = level;
      break;
    }
  }
  return 0;
}
