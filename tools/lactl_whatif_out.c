/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_whatif_out.c: `lactl whatif`'s output: a table for people, JSON
 * (docs/schema/lactl-whatif.json) or CSV (one line per partition and
 * cycle), all from the same figures (lactl_whatif.h). */
#include <math.h>

#include "lactl_util.h"
#include "lactl_whatif.h"

static const char *const csv_head =
    "cycle,method,parts,max,mean,imbalance,gain,moved_elements,moved_bytes,"
    "time_ms,horizon_n,horizon_min,horizon_median,horizon_max,"
    "halo_boundary_cells,halo_cells_sent,halo_neighbours_max,"
    "halo_neighbours_mean\n";

void lactl_wi_begin(FILE *f, int fmt, const lactl_wi_head_t *h) {
  if (fmt == LACTL_WI_CSV) {
    fprintf(f, "# lactl whatif format %d; app ", LACTL_WHATIF_FORMAT_VERSION);
    lactl_json_str(f, h->app);
    fprintf(f, "; unit %s; bytes_per_element %.17g\n", h->unit,
            h->bytes_per_element);
    fputs(csv_head, f);
  } else if (fmt == LACTL_WI_JSON) {
    fprintf(f,
            "{\"format_version\": %d, \"app\": ", LACTL_WHATIF_FORMAT_VERSION);
    lactl_json_str(f, h->app);
    fputs(", \"metric\": ", f);
    lactl_json_str(f, h->metric);
    fputs(", \"unit\": ", f);
    lactl_json_str(f, h->unit);
    fputs(", \"channel\": ", f);
    if (h->channel)
      lactl_json_str(f, h->channel);
    else
      fputs("null", f);
    fputs(", \"bytes_per_element\": ", f);
    lactl_json_num(f, h->bytes_per_element);
    fprintf(f, ", \"horizon\": %u,\n \"cycles\": [", h->horizon);
  }
}

void lactl_wi_end(FILE *f, int fmt) {
  if (fmt == LACTL_WI_JSON) fputs("\n]}\n", f);
}

static void put_csv(FILE *f, const lactl_wi_cycle_t *c) {
  for (int i = 0; i < c->nrows; i++) {
    const lactl_wi_row_t *r = &c->rows[i];
    fprintf(f, "%llu,%s,%u,%.17g,%.17g,%.17g,%.17g,%llu,%.17g,%.3f,%zu",
            (unsigned long long)c->cycle, r->method, r->parts, r->max, r->mean,
            r->imbalance, r->gain, (unsigned long long)r->moved, r->moved_bytes,
            r->ms, r->nh);
    if (r->nh)
      fprintf(f, ",%.17g,%.17g,%.17g", r->hmin, r->hmed, r->hmax);
    else
      fputs(",,,", f);
    if (r->halo)
      fprintf(f, ",%llu,%llu,%llu,%.17g\n", (unsigned long long)r->halo_cells,
              (unsigned long long)r->halo_sent,
              (unsigned long long)r->nbr_max, r->nbr_mean);
    else
      fputs(",,,,\n", f);
  }
}

static void put_json(FILE *f, const lactl_wi_cycle_t *c, int first) {
  fprintf(f,
          "%s\n  {\"cycle\": %llu, \"nprocs\": %u, \"elements\": %llu, "
          "\"weights\": \"%s\", \"total\": ",
          first ? "" : ",", (unsigned long long)c->cycle, c->nprocs,
          (unsigned long long)c->elements, c->weights);
  lactl_json_num(f, c->total);
  if (c->grid)
    fprintf(f, ", \"grid\": [%llu, %llu, %llu]", (unsigned long long)c->g[0],
            (unsigned long long)c->g[1], (unsigned long long)c->g[2]);
  else
    fputs(", \"grid\": null", f);
  fputs(", \"horizon_cycles\": [", f);
  for (size_t i = 0; i < c->nh; i++)
    fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)c->hcycles[i]);
  fputs("],\n   \"partitions\": [", f);
  for (int i = 0; i < c->nrows; i++) {
    const lactl_wi_row_t *r = &c->rows[i];
    fprintf(f, "%s\n    {\"method\": \"%s\", \"parts\": %u, \"max\": ",
            i ? "," : "", r->method, r->parts);
    lactl_json_num(f, r->max);
    fputs(", \"mean\": ", f);
    lactl_json_num(f, r->mean);
    fputs(", \"imbalance\": ", f);
    lactl_json_num(f, r->imbalance);
    fputs(", \"gain\": ", f);
    lactl_json_num(f, r->gain);
    fprintf(f, ", \"moved_elements\": %llu, \"moved_bytes\": ",
            (unsigned long long)r->moved);
    lactl_json_num(f, r->moved_bytes);
    fputs(", \"time_ms\": ", f);
    lactl_json_num(f, r->ms);
    fputs(",\n     \"horizon\": {\"scores\": [", f);
    for (size_t k = 0; k < r->nh; k++) {
      if (k) fputs(", ", f);
      lactl_json_num(f, r->h[k]);
    }
    fputs("], \"min\": ", f);
    lactl_json_num(f, r->hmin);
    fputs(", \"median\": ", f);
    lactl_json_num(f, r->hmed);
    fputs(", \"max\": ", f);
    lactl_json_num(f, r->hmax);
    fputs("},\n     \"halo\": ", f);
    if (r->halo) {
      fprintf(f,
              "{\"boundary_cells\": %llu, \"cells_sent\": %llu, "
              "\"neighbours_max\": %llu, \"neighbours_mean\": ",
              (unsigned long long)r->halo_cells,
              (unsigned long long)r->halo_sent,
              (unsigned long long)r->nbr_max);
      lactl_json_num(f, r->nbr_mean);
      fputs("}}", f);
    } else {
      fputs("null}", f);
    }
  }
  fputs("\n  ]}", f);
}

/* A byte count for people: B, KiB, MiB, GiB. */
static const char *fmt_bytes(double b, char *buf, size_t len) {
  static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, i++;
  snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", b, u[i]);
  return buf;
}

static void put_table(FILE *f, const lactl_wi_head_t *h,
                      const lactl_wi_cycle_t *c, int first) {
  char b[9][48];
  if (!first) fputc('\n', f);
  fprintf(f, "%s cycle %llu: %u ranks, %llu elements, %s weights (%s)", h->app,
          (unsigned long long)c->cycle, c->nprocs,
          (unsigned long long)c->elements, c->weights, h->unit);
  if (c->grid)
    fprintf(f, ", grid %llux%llux%llu\n", (unsigned long long)c->g[0],
            (unsigned long long)c->g[1], (unsigned long long)c->g[2]);
  else
    fputs(", no grid: metis balances weights only\n", f);
  static const char *const heads[] = {
      "partition", "parts", "max",   "imbalance",
      "gain",      "moved", "bytes", "halo cells/nbrs",
      "horizon min/median/max"};
  lactl_table_t *t = lactl_table_new(9, heads, "lrrrrrrrl");
  if (!t) return;
  for (int i = 0; i < c->nrows; i++) {
    const lactl_wi_row_t *r = &c->rows[i];
    char parts[16], moved[32], hz[100];
    snprintf(parts, sizeof parts, "%u", r->parts);
    snprintf(moved, sizeof moved, "%llu", (unsigned long long)r->moved);
    if (r->nh)
      snprintf(hz, sizeof hz, "%s / %s / %s",
               lactl_fmt_ratio(r->hmin, b[0], sizeof b[0]),
               lactl_fmt_ratio(r->hmed, b[1], sizeof b[1]),
               lactl_fmt_ratio(r->hmax, b[2], sizeof b[2]));
    else
      snprintf(hz, sizeof hz, "-");
    if (r->halo)
      snprintf(b[8], sizeof b[8], "%llu/%llu/%.1f",
               (unsigned long long)r->halo_cells,
               (unsigned long long)r->nbr_max, r->nbr_mean);
    else
      snprintf(b[8], sizeof b[8], "-");
    const char *cells[9] = {r->method,
                            parts,
                            lactl_fmt_num(r->max, 4, b[3], sizeof b[3]),
                            lactl_fmt_ratio(r->imbalance, b[4], sizeof b[4]),
                            lactl_fmt_ratio(r->gain, b[5], sizeof b[5]),
                            moved,
                            fmt_bytes(r->moved_bytes, b[6], sizeof b[6]),
                            b[8],
                            hz};
    lactl_table_row(t, cells);
  }
  lactl_table_print(f, t, 2);
  lactl_table_free(t);
  if (c->nh)
    fprintf(f,
            "  horizon: the partition of cycle %llu on the %zu complete "
            "cycles after it (%llu..%llu)\n",
            (unsigned long long)c->cycle, c->nh,
            (unsigned long long)c->hcycles[0],
            (unsigned long long)c->hcycles[c->nh - 1]);
  fprintf(f,
          "  bytes: moved elements x %g bytes (--bytes-per-element: your "
          "figure)\n",
          h->bytes_per_element);
  if (c->grid)
    fputs("  halo: cells facing another part / neighbour parts max/mean "
          "(6-neighbour stencil)\n",
          f);
}

void lactl_wi_put(FILE *f, int fmt, const lactl_wi_head_t *h,
                  const lactl_wi_cycle_t *c, int first) {
  if (fmt == LACTL_WI_CSV)
    put_csv(f, c);
  else if (fmt == LACTL_WI_JSON)
    put_json(f, c, first);
  else
    put_table(f, h, c, first);
}
