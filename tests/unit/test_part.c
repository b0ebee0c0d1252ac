/* SPDX-License-Identifier: BSD-3-Clause */
/* test_part.c: lactl whatif's METIS partitioner (tools/lactl_part.c) on
 * both sides of LACTL_METIS_TWO_LEVEL, on a 40^3 grid's 6-neighbour graph
 * with a hot corner (4x): the direct k-way into LACTL_METIS_TWO_LEVEL - 1
 * parts and the two-level split into LACTL_METIS_TWO_LEVEL parts each
 * give every part elements, parts in range, an imbalance (max/mean of the
 * weights) within 1.15, and the two-level edge cut within 15% of the
 * direct one's (about 31 cells a part: granularity, not the method, sets
 * the imbalance's floor here). RCB and greedy into the same number of
 * parts are held to the same imbalance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../tools/lactl_part.h"

#define G 40
#define N (G * G * G)

typedef struct {
  double w[N];
  uint64_t xadj[N + 1], adj[6 * N], xyz[N][3];
  uint32_t part[N];
} grid_t;

static grid_t *grid(void) {
  grid_t *g = malloc(sizeof *g);
  assert_non_null(g);
  uint64_t e = 0;
  g->xadj[0] = 0;
  for (uint64_t v = 0; v < N; v++) {
    uint64_t i = v % G, j = v / G % G, k = v / (G * G);
    g->xyz[v][0] = i, g->xyz[v][1] = j, g->xyz[v][2] = k;
    g->w[v] = 1000 * (1 + 0.3 * sin(i * 0.2)) * (i * i + j * j + k * k < 144 ? 4 : 1);
    if (i > 0) g->adj[e++] = v - 1;
    if (i < G - 1) g->adj[e++] = v + 1;
    if (j > 0) g->adj[e++] = v - G;
    if (j < G - 1) g->adj[e++] = v + G;
    if (k > 0) g->adj[e++] = v - G * G;
    if (k < G - 1) g->adj[e++] = v + G * G;
    g->xadj[v + 1] = e;
  }
  return g;
}

/* Checks g->part into k parts; its edge cut into *cut. */
static void check(const grid_t *g, uint32_t k, const char *what,
                  uint64_t *cut) {
  double *loads = calloc(k, sizeof *loads);
  assert_non_null(loads);
  for (uint64_t v = 0; v < N; v++) {
    assert_true(g->part[v] < k);
    loads[g->part[v]] += g->w[v];
  }
  double max = 0, imb = 0;
  lactl_part_imbalance(loads, k, &max, &imb);
  for (uint32_t p = 0; p < k; p++)
    if (!(loads[p] > 0)) fail_msg("%s: part %u of %u is empty", what, p, k);
  free(loads);
  *cut = 0;
  for (uint64_t v = 0; v < N; v++)
    for (uint64_t e = g->xadj[v]; e < g->xadj[v + 1]; e++)
      *cut += g->part[g->adj[e]] != g->part[v];
  *cut /= 2;
  print_message("%s into %u parts: imbalance %.4f, edge cut %llu\n", what, k,
                imb, (unsigned long long)*cut);
  if (imb > 1.15) fail_msg("%s: imbalance %.4f above 1.15", what, imb);
}

static void test_metis_two_level(void **state) {
  (void)state;
  grid_t *g = grid();
  char why[256] = "";
  uint64_t direct, two, other;
  const uint32_t k = LACTL_METIS_TWO_LEVEL;
  assert_int_equal(lactl_part_metis(N, g->w, g->xadj, g->adj, k - 1, g->part,
                                    why, sizeof why),
                   0);
  check(g, k - 1, "metis (direct)", &direct);
  assert_int_equal(
      lactl_part_metis(N, g->w, g->xadj, g->adj, k, g->part, why, sizeof why),
      0);
  check(g, k, "metis (two levels)", &two);
  if ((double)two > 1.15 * (double)direct)
    fail_msg("two-level edge cut %llu, direct %llu", (unsigned long long)two,
             (unsigned long long)direct);
  assert_int_equal(
      lactl_part_rcb(N, g->w, (const uint64_t(*)[3])g->xyz, k, g->part), 0);
  check(g, k, "rcb", &other);
  free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_metis_two_level),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
