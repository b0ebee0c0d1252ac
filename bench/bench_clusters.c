/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_clusters.c: behaviour classes of 10^4 ranks and the store kept by
 * representatives (`make bench-clusters`, docs/clusters.md).
 *
 * A synthetic Trace-Set of RANKS ranks of NEL elements
 * (tests/support/la_test_classes.h: four class profiles, per-rank scale in
 * [0.5, 2), 2% noise, OUTLIERS outlier ranks with hot spots of their own),
 * each rank compacted as the LocalAgent does, once with the default polyline
 * cv 0.1 (small traces) and once with maxerr eps 0.01 relative (large
 * traces: the 2% noise is kept). Measured for each:
 *   - grouping as the store does it: each trace parsed (la_trace_open),
 *     its signature taken (la_clusters_signature) and closed, then
 *     la_clusters_group; CPU time per trace of the signatures (the parse
 *     subtracted: a loop of parses alone runs beside it) and of the
 *     grouping, medians of REPEATS runs; whether the known classes and
 *     outliers came back exactly (and from la_clusters_find too);
 *   - the GlobalAgent's ingest check of each trace
 *     (la_trace_check_totals) alone and with the signature taken in its
 *     pass (la_trace_check_totals_slices, la_clusters_shares), CPU time
 *     per trace, medians of REPEATS runs;
 *   - the store: CYCLES cycles of the set into a SQLite file (store.h, no
 *     fsync), once as they are and once stored by representatives after
 *     each close with the signatures taken at ingest
 *     (la_store_representatives_known, what store.representatives does),
 *     and once more taking them from the stored bytes (a GlobalAgent
 *     restarted before the close: the same rows required); bytes of the
 *     file, bytes in use (pages minus free pages: the pages a replaced
 *     member freed are reused by the next cycles, so the file grows by
 *     this much per cycle), those of the sets' tables (traces, robust,
 *     the representatives' tables and their indexes: without the ranks
 *     table and each table's first page, which every store holds once)
 *     and the file after VACUUM, and the ratios; per set, the growth of
 *     the bytes in use and of the sets' tables from the first set's close
 *     to the last's over the sets added (what grows with the sets, the
 *     fixed part left out); the
 *     CPU time to store by representatives per trace;
 *   - the read back: la_store_load_set of one cycle of the representatives
 *     store, time per trace, every rank's total exact (its stored sum
 *     equals the sum of its raw series) and every member flagged as
 *     reconstructed, with decoded values summing to its total within 1e-6.
 *   - the real GlobalAgent with store.representatives off and on (its CPU
 *     per trace), and the grouping's share of it: the signature at ingest
 *     (the check with it less the check alone) plus the grouping, per
 *     trace, over the GlobalAgent's CPU per trace with the setting off;
 *     beside it the store option's (storing by representatives at close
 *     less the grouping).
 * LA_CLUSTERS_CYCLES=N stores N cycles instead of 3 (the whole file's
 * ratio as a longer run sees it); LA_CLUSTERS_RUNS=N runs the first N of
 * the three compactions only (1: the polyline's small traces);
 * LA_CLUSTERS_CHECK_ONLY=1 runs only the grouping and the ingest check;
 * LA_CLUSTERS_STORE_ONLY=1 all but the GlobalAgent runs; LA_CLUSTERS_KEEP=DIR
 * keeps each run's representatives store there (DIR/SPEC.db, robust.db).
 * Writes argv[1] (build/bench/clusters.json) and prints a table.
 */
#include "bench_args.h"

#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "la_auth.h"
#include "la_clusters.h"
#include "la_compact.h"
#include "la_test_classes.h"
#include "la_test_daemon.h"
#include "la_test_msg.h"
#include "la_test_series.h"
#include "la_trace_msg.h"
#include "la_test_uplink.h"
#include "store.h"
#include "store_reps.h"

#define RANKS 10000
#define NEL 4096
#define OUTLIERS 8
#define REPEATS 7
#define CYCLES_DEFAULT 3 /* LA_CLUSTERS_CYCLES: another count (>= 2) */
#define GA_NODES 8   /* simulated LocalAgents feeding the GlobalAgent */
#define GA_CYCLES 4  /* cycles of the set sent to it per run */
#define GA_REPEATS 3 /* runs with the setting off and on, interleaved */

static int n_cycles = CYCLES_DEFAULT;
#define CYCLES n_cycles

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The set: one compaction per rank, and the raw sums. */
static la_compact_result_t res[RANKS];
static double raw_sum[RANKS];

/* 1 when c holds exactly the known classes and outliers. */
static int exact(const la_clusters_t *c) {
  if (c->n_classes != LA_TC_CLASSES) return 0;
  size_t out = 0;
  for (uint32_t r = 0; r < RANKS; r++) {
    int want = la_tc_class(r, RANKS, OUTLIERS);
    long k = la_clusters_class_of(c, r, NULL);
    if (want < 0) {
      if (k >= 0 || out >= c->n_outliers || c->outliers[out++] != r) return 0;
      continue;
    }
    if (k < 0) return 0;
    if (la_tc_class(c->classes[k].rep, RANKS, OUTLIERS) != want) return 0;
  }
  return out == c->n_outliers;
}

/* Bytes of the SQLite file db, bytes in use (pages - free pages), those
 * of the tables with rows per trace (traces, robust and the
 * representatives' tables, with their indexes: the sets, without what
 * every store holds once, such as the ranks table and each table's first
 * page), and the file's bytes after VACUUM. */
static void db_used(sqlite3 *q, double *used, double *sets) {
  sqlite3_stmt *st = NULL;
  sqlite3_exec(q, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
  sqlite3_prepare_v2(q,
                     "SELECT (SELECT page_count FROM pragma_page_count) - "
                     "(SELECT freelist_count FROM pragma_freelist_count), "
                     "(SELECT page_size FROM pragma_page_size)",
                     -1, &st, NULL);
  *used = 0;
  if (sqlite3_step(st) == SQLITE_ROW)
    *used = (double)sqlite3_column_int64(st, 0) * sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  *sets = NAN;
  if (sqlite3_prepare_v2(
          q,
          "SELECT sum(pgsize) FROM dbstat WHERE name IN ('traces',"
          " 'sqlite_autoindex_traces_1', 'robust', 'sqlite_autoindex_robust_1',"
          " 'rep_members', 'rep_robust', 'rep_classes',"
          " 'sqlite_autoindex_rep_classes_1')",
          -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    *sets = (double)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
}

static void db_bytes(const char *db, double *file, double *used,
                     double *sets, double *vac) {
  sqlite3 *q = NULL;
  sqlite3_open(db, &q);
  db_used(q, used, sets);
  struct stat sb;
  *file = stat(db, &sb) == 0 ? (double)sb.st_size : NAN;
  sqlite3_exec(q, "VACUUM", NULL, NULL, NULL);
  sqlite3_close(q);
  *vac = stat(db, &sb) == 0 ? (double)sb.st_size : NAN;
}

/* The bytes in use and the sets' tables' bytes (db_used) of db now. */
static void db_used_now(const char *db, double *used, double *sets) {
  sqlite3 *q = NULL;
  sqlite3_open(db, &q);
  db_used(q, used, sets);
  sqlite3_close(q);
}

typedef struct {
  double file, used, sets, vac, reps_s_per_trace;
  /* growth per set after the first: bytes in use, the sets' tables' */
  double set_used, set_sets;
  size_t classes, outliers, replaced, robust_replaced, known;
} store_res_t;

/* The signatures as the GlobalAgent's ingest check takes them
 * (la_trace_check_totals_slices, la_clusters_shares), per rank. */
static la_store_rep_sig_t known[RANKS];

/* Rank r's check at ingest with its signature into known[r]. */
static int ingest_sig(uint32_t r) {
  la_trace_totals_t tot;
  la_store_rep_sig_t *k = &known[r];
  int ok = 0;
  memset(k, 0, sizeof *k);
  if (la_trace_check_totals_slices(res[r].bytes, res[r].len, NEL, &tot,
                                   LA_STORE_REP_BUCKETS, k->share, &ok, NULL,
                                   0))
    return -1;
  if (ok) {
    la_clusters_shares(k->share, LA_STORE_REP_BUCKETS, &k->dtot);
    k->count = tot.n_points;
    k->len = res[r].len;
  }
  return 0;
}

/* robust: every trace carries robust weights (the same series as its
 * measured one, hence of its representative's robust shape). reps 1: the
 * signatures taken at ingest (known; the robust ones too), as the
 * GlobalAgent does; 2: none, each taken from the stored bytes (a
 * GlobalAgent restarted before the close). */
static int store_run(const char *db, int reps, int robust, store_res_t *o) {
  char why[300];
  la_store_t *s = NULL;
  memset(o, 0, sizeof *o);
  if (la_store_open(db, 0, &s, why, sizeof why)) {
    fprintf(stderr, "bench_clusters: %s\n", why);
    return -1;
  }
  la_store_begin(s);
  for (uint32_t r = 0; r < RANKS; r++) {
    La__RankStart rs = la_test_rank_start("bench", "bench", r, RANKS, NEL);
    la_store_rank_start(s, &rs, NULL);
  }
  la_store_commit(s);
  uint64_t seq = 0;
  double t_reps = 0, used1 = 0, sets1 = 0;
  for (uint64_t c = 1; c <= (uint64_t)CYCLES; c++) {
    la_store_begin(s);
    for (uint32_t r = 0; r < RANKS; r++) {
      La__SeriesStats st = LA__SERIES_STATS__INIT;
      La__FitError fe = LA__FIT_ERROR__INIT;
      La__CompactTrace t = LA__COMPACT_TRACE__INIT;
      la_test_trace_id(&t, ++seq, "bench", r, c, NEL);
      la_trace_msg_fill(&t, &st, &fe, &res[r]);
      La__SeriesStats rst = st;
      if (robust) {
        t.has_robust_segments = 1;
        t.robust_segments = t.segments;
        t.robust_stats = &rst;
      }
      if (la_store_trace(s, &t, NULL)) {
        fprintf(stderr, "bench_clusters: %s\n", la_store_errmsg(s));
        return -1;
      }
    }
    if (la_store_set_closed(s, "bench", c, 1, NULL, 0, 1)) return -1;
    if (reps == 1) /* robust weights: the same encoding, so the same
                    * signature, as the GlobalAgent's check of them takes */
      for (uint32_t r = 0; r < RANKS; r++) {
        la_store_rep_sig_t *k = &known[r];
        memcpy(k->rshare, k->share, sizeof k->rshare);
        k->rdtot = k->dtot;
        k->rcount = robust ? k->count : 0;
        k->rlen = k->len;
      }
    if (reps) {
      la_store_reps_t ro;
      double t0 = cpu_now();
      if (la_store_representatives_known(s, "bench", c, 0.05,
                                         reps == 1 ? known : NULL,
                                         reps == 1 ? RANKS : 0, &ro)) {
        fprintf(stderr, "bench_clusters: %s\n", la_store_errmsg(s));
        return -1;
      }
      t_reps += cpu_now() - t0;
      o->classes = ro.classes;
      o->outliers = ro.outliers;
      o->replaced = ro.replaced;
      o->robust_replaced = ro.robust_replaced;
      o->known = ro.signatures_known;
    }
    if (la_store_commit(s)) return -1;
    if (c == 1) db_used_now(db, &used1, &sets1);
  }
  la_store_close(s);
  o->reps_s_per_trace = t_reps / ((double)CYCLES * RANKS);
  db_bytes(db, &o->file, &o->used, &o->sets, &o->vac);
  o->set_used = (o->used - used1) / (CYCLES - 1);
  o->set_sets = (o->sets - sets1) / (CYCLES - 1);
  return 0;
}

/* Reads cycle 1 of db back: time per trace, totals and flags. */
static int read_back(const char *db, double *s_per_trace, long *bad_tot,
                     long *bad_flag, long *recon, double *max_rel) {
  char why[300];
  la_store_t *s = NULL;
  if (la_store_open(db, 0, &s, why, sizeof why)) return -1;
  La__TraceSet *set = NULL;
  double t0 = cpu_now();
  int rc = la_store_load_set(s, "bench", 1, &set);
  *s_per_trace = (cpu_now() - t0) / RANKS;
  if (rc) {
    fprintf(stderr, "bench_clusters: %s\n", la_store_errmsg(s));
    la_store_close(s);
    return -1;
  }
  *bad_tot = *bad_flag = *recon = 0;
  *max_rel = 0;
  for (size_t i = 0; i < set->n_traces; i++) {
    const La__CompactTrace *t = set->traces[i];
    if (t->stats->sum != raw_sum[t->rank]) (*bad_tot)++;
    if (!t->has_rep_rank) continue;
    (*recon)++;
    la_trace_t *tr = NULL;
    double d;
    if (la_trace_open(t->segments.data, t->segments.len, &tr, NULL, 0) ||
        la_trace_range_sum(tr, 0, NEL, &d) ||
        fabs(d - t->stats->sum) > 1e-3 * fabs(t->stats->sum) ||
        la_tc_class(t->rank, RANKS, OUTLIERS) !=
            la_tc_class(t->rep_rank, RANKS, OUTLIERS))
      (*bad_flag)++;
    else if (fabs(d - t->stats->sum) > *max_rel * fabs(t->stats->sum))
      *max_rel = fabs(d - t->stats->sum) / fabs(t->stats->sum);
    la_trace_close(tr);
  }
  la_store_free_set(set);
  la_store_close(s);
  return 0;
}

/* The real la-globalagent (no fsync, a secret: sealed links) takes
 * GA_CYCLES cycles of the set from GA_NODES simulated LocalAgents, with
 * store.representatives as reps says: its CPU time (user + system, from
 * /proc) per trace, from the first trace to the last Ack (every set closed
 * and, on, stored by representatives in the batch of its last trace). */
static int ga_run(int reps, double *cpu_per_trace) {
  la_tu_ga_t g;
  la_auth_key_t key;
  char why[300];
  la_tu_conn_t nd[GA_NODES];
  int rc = -1;
  size_t cap = 4096;
  for (uint32_t r = 0; r < RANKS; r++)
    if (res[r].len + 4096 > cap) cap = res[r].len + 4096;
  for (int i = 0; i < GA_NODES; i++) la_tu_init(&nd[i], 1);
  const char *extra[] = {
      reps ? "--store.representatives=yes" : "--store.representatives=no",
      NULL};
  if (la_tu_ga_start(&g, 0, 1, extra, 30000) != 0 ||
      la_auth_load_key(g.key, &key, why, sizeof why) != 0)
    goto out;
  for (int i = 0; i < GA_NODES; i++) {
    char host[32];
    snprintf(host, sizeof host, "node-%d", i);
    if (la_tu_open(&nd[i], g.agents_port, &key, host, cap, 30000)) goto out;
    for (uint32_t r = (uint32_t)i; r < RANKS; r += GA_NODES)
      if (la_tu_send_rank_start(&nd[i], "gabench", r, RANKS, NEL, host,
                                30000))
        goto out;
  }
  for (int i = 0; i < GA_NODES; i++)
    if (la_tu_wait_acked(&nd[i], 30000)) goto out;
  pid_t pid = la_td_pid(g.d);
  double cpu0 = la_td_cpu_seconds(pid);
  for (uint64_t c = 1; c <= GA_CYCLES; c++)
    for (uint32_t r = 0; r < RANKS; r++) {
      la_tu_conn_t *l = &nd[r % GA_NODES];
      if (la_tu_send_trace(l, "gabench", r, c, NEL, &res[r], 30000) ||
          la_tu_read_acks(l))
        goto out;
    }
  for (int i = 0; i < GA_NODES; i++)
    if (la_tu_wait_acked(&nd[i], 60000)) goto out;
  *cpu_per_trace = (la_td_cpu_seconds(pid) - cpu0) / ((double)RANKS * GA_CYCLES);
  if (la_td_status_ll(g.d, "traces_stored") != (long long)RANKS * GA_CYCLES ||
      la_td_status_ll(g.d, "sets_complete") != GA_CYCLES) {
    fprintf(stderr, "bench_clusters: the GlobalAgent stored %lld traces, "
                    "%lld sets complete\n",
            la_td_status_ll(g.d, "traces_stored"),
            la_td_status_ll(g.d, "sets_complete"));
    goto out;
  }
  rc = 0;
out:
  if (rc) fprintf(stderr, "bench_clusters: the GlobalAgent run failed\n");
  for (int i = 0; i < GA_NODES; i++) la_tu_close(&nd[i]);
  la_auth_key_wipe(&key);
  la_td_free(g.d);
  return rc;
}

/* LA_CLUSTERS_GA_ONLY=1: only the GlobalAgent runs (with
 * LA_TEST_BIN_DIR naming another build's la-globalagent: that build's). */
static int ga_only(void) {
  const char *e = getenv("LA_CLUSTERS_GA_ONLY");
  return e && !strcmp(e, "1");
}

/* LA_CLUSTERS_STORE_ONLY=1: no GlobalAgent runs (the store measured
 * alone). */
static int store_only(void) {
  const char *e = getenv("LA_CLUSTERS_STORE_ONLY");
  return e && !strcmp(e, "1");
}

/* LA_CLUSTERS_CHECK_ONLY=1: only the grouping and the ingest check run
 * (no store, no GlobalAgent). */
static int check_only(void) {
  const char *e = getenv("LA_CLUSTERS_CHECK_ONLY");
  return e && !strcmp(e, "1");
}

/* Everything measured for one compaction spec. */
typedef struct {
  const char *spec;
  double enc, pmed, smed, gmed, bmed, rd, max_rel, cmed, csmed;
  double ga_off, ga_on; /* the GlobalAgent's CPU per trace, medians */
  size_t ncls, nout;
  int ok, robust;
  store_res_t s0, s1, s2;
  long bad_tot, bad_flag, recon;
} run_t;

static int run_spec(const char *dir, run_t *u) {
  char db0[600], db1[600], db2[600];
  double *x = malloc(NEL * sizeof *x);
  la_compact_params_t cp;
  if (!x || la_compact_spec_parse(u->spec, &cp, NULL, 0)) return -1;
  size_t enc = 0;
  for (uint32_t r = 0; r < RANKS; r++) {
    la_tc_series(r, RANKS, OUTLIERS, NEL, x);
    raw_sum[r] = la_compact_sum(x, NEL);
    if (la_compact(x, NEL, &cp, &res[r])) return -1;
    enc += res[r].len;
  }
  free(x);
  u->enc = (double)enc / RANKS;
  if (ga_only()) goto ga;
  /* grouping as the store does it, REPEATS times: each trace parsed,
   * summarised and closed in turn, then the signatures grouped; the parse
   * alone beside it */
  la_cluster_params_t gp;
  la_cluster_params_default(&gp);
  double *sig = malloc((size_t)RANKS * gp.buckets * sizeof *sig);
  double *dtot = malloc(RANKS * sizeof *dtot);
  uint64_t *cnt = malloc(RANKS * sizeof *cnt);
  if (!sig || !dtot || !cnt) return -1;
  double parse[REPEATS], sigt[REPEATS], group[REPEATS], bsig[REPEATS];
  double chk[REPEATS], chks[REPEATS];
  la_clusters_t c = {0};
  u->ok = 1;
  for (int k = 0; k < REPEATS; k++) {
    double t0 = cpu_now();
    for (uint32_t r = 0; r < RANKS; r++) {
      la_trace_t *t = NULL;
      if (la_trace_open(res[r].bytes, res[r].len, &t, NULL, 0)) return -1;
      la_trace_close(t);
    }
    double t1 = cpu_now();
    for (uint32_t r = 0; r < RANKS; r++) {
      la_trace_t *t = NULL;
      if (la_trace_open(res[r].bytes, res[r].len, &t, NULL, 0)) return -1;
      la_clusters_signature(t, gp.buckets, sig + (size_t)r * gp.buckets,
                            &dtot[r]);
      cnt[r] = la_trace_count(t);
      la_trace_close(t);
    }
    double t2 = cpu_now();
    la_clusters_free(&c);
    if (la_clusters_group(sig, dtot, cnt, raw_sum, RANKS, &gp, &c, NULL, 0))
      return -1;
    double t3 = cpu_now();
    /* the store's way: from the encoding, no index */
    for (uint32_t r = 0; r < RANKS; r++)
      if (la_clusters_signature_bytes(res[r].bytes, res[r].len, NEL,
                                      gp.buckets, sig + (size_t)r * gp.buckets,
                                      &dtot[r], &cnt[r], NULL, 0) < 0)
        return -1;
    double t4 = cpu_now();
    /* the ingest check alone, and with the signature in its pass */
    for (uint32_t r = 0; r < RANKS; r++) {
      la_trace_totals_t tot;
      if (la_trace_check_totals(res[r].bytes, res[r].len, NEL, &tot, NULL, 0))
        return -1;
    }
    double t5 = cpu_now();
    for (uint32_t r = 0; r < RANKS; r++)
      if (ingest_sig(r)) return -1;
    double t6 = cpu_now();
    chk[k] = (t5 - t4) / RANKS;
    chks[k] = (t6 - t5) / RANKS;
    bsig[k] = (t4 - t3) / RANKS;
    parse[k] = (t1 - t0) / RANKS;
    sigt[k] = (t2 - t1 - (t1 - t0)) / RANKS;
    group[k] = (t3 - t2) / RANKS;
    u->ok = u->ok && exact(&c);
  }
  /* la_clusters_find on traces parsed beforehand gives the same classes */
  la_trace_t **tr = calloc(RANKS, sizeof *tr);
  la_clusters_t c2;
  for (uint32_t r = 0; r < RANKS; r++)
    if (la_trace_open(res[r].bytes, res[r].len, &tr[r], NULL, 0)) return -1;
  if (la_clusters_find((const la_trace_t *const *)tr, raw_sum, RANKS, &gp,
                       &c2, NULL, 0))
    return -1;
  u->ok = u->ok && exact(&c2) && c2.n_classes == c.n_classes;
  la_clusters_free(&c2);
  for (uint32_t r = 0; r < RANKS; r++) la_trace_close(tr[r]);
  free(tr);
  free(sig);
  free(dtot);
  free(cnt);
  qsort(parse, REPEATS, sizeof *parse, cmp_d);
  qsort(sigt, REPEATS, sizeof *sigt, cmp_d);
  qsort(group, REPEATS, sizeof *group, cmp_d);
  qsort(bsig, REPEATS, sizeof *bsig, cmp_d);
  qsort(chk, REPEATS, sizeof *chk, cmp_d);
  qsort(chks, REPEATS, sizeof *chks, cmp_d);
  u->cmed = chk[REPEATS / 2];
  u->csmed = chks[REPEATS / 2];
  u->bmed = bsig[REPEATS / 2];
  u->pmed = parse[REPEATS / 2];
  u->smed = sigt[REPEATS / 2];
  u->gmed = group[REPEATS / 2];
  u->ncls = c.n_classes;
  u->nout = c.n_outliers;
  la_clusters_free(&c);
  if (check_only()) {
    for (uint32_t r = 0; r < RANKS; r++) la_compact_result_free(&res[r]);
    return 0;
  }
  /* the whole GlobalAgent, store.representatives off and on, interleaved */
ga:
  if (!u->robust && !store_only()) {
    double off[GA_REPEATS], on[GA_REPEATS];
    for (int k = 0; k < GA_REPEATS; k++)
      if (ga_run(0, &off[k]) || ga_run(1, &on[k])) return -1;
    qsort(off, GA_REPEATS, sizeof *off, cmp_d);
    qsort(on, GA_REPEATS, sizeof *on, cmp_d);
    u->ga_off = off[GA_REPEATS / 2];
    u->ga_on = on[GA_REPEATS / 2];
  }
  if (ga_only()) {
    for (uint32_t r = 0; r < RANKS; r++) la_compact_result_free(&res[r]);
    return 0;
  }
  /* the store, as it is and by representatives */
  snprintf(db0, sizeof db0, "%s/full.db", dir);
  snprintf(db1, sizeof db1, "%s/reps.db", dir);
  snprintf(db2, sizeof db2, "%s/reps_bytes.db", dir);
  if (store_run(db0, 0, u->robust, &u->s0) ||
      store_run(db1, 1, u->robust, &u->s1) ||
      store_run(db2, 2, u->robust, &u->s2))
    return -1;
  if (read_back(db1, &u->rd, &u->bad_tot, &u->bad_flag, &u->recon,
                &u->max_rel))
    return -1;
  for (uint32_t r = 0; r < RANKS; r++) la_compact_result_free(&res[r]);
  const char *keep = getenv("LA_CLUSTERS_KEEP");
  if (keep && *keep) { /* the representatives store kept for a reader */
    char p[640];
    snprintf(p, sizeof p, "%s/%s.db", keep, u->robust ? "robust" : u->spec);
    if (rename(db1, p) == 0) printf("  kept           %s\n", p);
  }
  const char *sfx[] = {"", "-wal", "-shm"};
  for (int i = 0; i < 3; i++) {
    char p[640];
    snprintf(p, sizeof p, "%s%s", db0, sfx[i]);
    remove(p);
    snprintf(p, sizeof p, "%s%s", db1, sfx[i]);
    remove(p);
    snprintf(p, sizeof p, "%s%s", db2, sfx[i]);
    remove(p);
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *outp =
      la_bench_out_path(argc, argv, 1, "build/bench/clusters.json");
  char dir[512];
  if (la_bench_tmpdir("bench_clusters", dir, sizeof dir)) return 1;
  if (la_auth_init() != 0) return 1;
  const char *ce = getenv("LA_CLUSTERS_CYCLES");
  if (ce && *ce) {
    char *end;
    long v = strtol(ce, &end, 10);
    if (*end || v < 2 || v > 100000) {
      fprintf(stderr, "bench_clusters: LA_CLUSTERS_CYCLES '%s' is not a "
                      "count of cycles from 2 to 100000\n", ce);
      return 2;
    }
    n_cycles = (int)v;
  }
  FILE *f = la_bench_open_out(outp);
  if (!f) return 1;
  run_t u[] = {{.spec = "polyline"},
               {.spec = "maxerr:eps=0.01,relative"},
               {.spec = "maxerr:eps=0.01,relative", .robust = 1}};
  size_t nu = sizeof u / sizeof u[0];
  const char *re = getenv("LA_CLUSTERS_RUNS");
  if (re && *re) { /* the first N runs only (1: the small traces) */
    long v = strtol(re, NULL, 10);
    if (v < 1 || (size_t)v > nu) {
      fprintf(stderr, "bench_clusters: LA_CLUSTERS_RUNS '%s' is not 1 to "
                      "%zu\n", re, nu);
      return 2;
    }
    nu = (size_t)v;
  }
  int good = 1;
  printf("bench_clusters: %d ranks x %d elements in %d classes, %d outliers\n",
         RANKS, NEL, LA_TC_CLASSES, OUTLIERS);
  fprintf(f, "{\n  \"ranks\": %d, \"elements\": %d, \"outliers\": %d,"
             " \"repeats\": %d, \"cycles\": %d,\n  \"runs\": [",
          RANKS, NEL, OUTLIERS, REPEATS, CYCLES);
  for (size_t i = 0; i < nu; i++) {
    if (run_spec(dir, &u[i])) {
      fprintf(stderr, "bench_clusters: the run of %s failed\n", u[i].spec);
      return 1;
    }
    run_t *v = &u[i];
    if (ga_only()) {
      if (v->robust) continue;
      printf("\n %s (%.0f encoded bytes per trace)\n", v->spec, v->enc);
      printf("  GlobalAgent    %.2f us cpu per trace with store.representatives "
             "off, %.2f us on (+%.1f%%; medians of %d, %d cycles)\n",
             v->ga_off * 1e6, v->ga_on * 1e6,
             100 * (v->ga_on - v->ga_off) / v->ga_off, GA_REPEATS,
             GA_CYCLES);
      continue;
    }
    if (check_only()) {
      if (v->robust) continue;
      printf("\n %s (%.0f encoded bytes per trace)\n", v->spec, v->enc);
      printf("  grouping       %.2f us per trace; %zu classes, %zu "
             "outliers: %s\n",
             v->gmed * 1e6, v->ncls, v->nout,
             v->ok ? "exactly the known ones" : "NOT the known ones");
      printf("  ingest check   %.2f us per trace alone, %.2f us with the "
             "signature in its pass (+%.2f us)\n",
             v->cmed * 1e6, v->csmed * 1e6, (v->csmed - v->cmed) * 1e6);
      good = good && v->ok;
      continue;
    }
    /* the same classes stored whichever way the signatures came */
    good = good && v->ok && !v->bad_tot && !v->bad_flag && v->recon > 0 &&
           v->s1.known == RANKS && v->s2.known == 0 &&
           v->s1.replaced == v->s2.replaced &&
           v->s1.classes == v->s2.classes && v->s1.used == v->s2.used;
    printf("\n %s (%.0f encoded bytes per trace)%s\n", v->spec, v->enc,
           v->robust ? ", robust weights too" : "");
    printf("  grouping       %zu classes, %zu outliers: %s\n", v->ncls,
           v->nout, v->ok ? "exactly the known ones" : "NOT the known ones");
    printf("  cpu per trace  signature %.2f us + grouping %.2f us = %.2f us; "
           "the parse beside it %.2f us (medians of %d)\n",
           v->smed * 1e6, v->gmed * 1e6, (v->smed + v->gmed) * 1e6,
           v->pmed * 1e6, REPEATS);
    printf("  signature from the encoding (no index, as the store takes it "
           "after a restart) %.2f us per trace\n",
           v->bmed * 1e6);
    printf("  ingest check   %.2f us per trace alone, %.2f us with the "
           "signature in its pass (+%.2f us)\n",
           v->cmed * 1e6, v->csmed * 1e6, (v->csmed - v->cmed) * 1e6);
    printf("  store, %d cycles  file %.0f -> %.0f bytes (%.1fx smaller), in "
           "use %.0f -> %.0f (%.1fx)\n",
           CYCLES, v->s0.file, v->s1.file, v->s0.file / v->s1.file,
           v->s0.used, v->s1.used, v->s0.used / v->s1.used);
    printf("  after VACUUM   file %.0f -> %.0f bytes (%.1fx smaller)\n",
           v->s0.vac, v->s1.vac, v->s0.vac / v->s1.vac);
    printf("  the sets' tables (traces, robust, representatives, their "
           "indexes) %.0f -> %.0f bytes (%.1fx smaller)\n",
           v->s0.sets, v->s1.sets, v->s0.sets / v->s1.sets);
    printf("  per set        (growth per set after the first) in use %.0f "
           "-> %.0f bytes (%.1fx smaller), the sets' tables %.0f -> %.0f "
           "(%.1fx); %.1f -> %.1f bytes per rank\n",
           v->s0.set_used, v->s1.set_used, v->s0.set_used / v->s1.set_used,
           v->s0.set_sets, v->s1.set_sets, v->s0.set_sets / v->s1.set_sets,
           v->s0.set_used / RANKS, v->s1.set_used / RANKS);
    printf("  at close       %zu members replaced per cycle (%zu robust), "
           "%.2f us cpu per trace (%zu signatures taken at ingest); from the "
           "stored bytes %.2f us\n",
           v->s1.replaced, v->s1.robust_replaced,
           v->s1.reps_s_per_trace * 1e6, v->s1.known,
           v->s2.reps_s_per_trace * 1e6);
    /* the grouping: the signature in the ingest check's pass and the
     * grouping at close, per trace; the store option: storing by
     * representatives at close less the grouping it includes */
    double grp = (v->csmed - v->cmed) + v->gmed;
    double sto = v->s1.reps_s_per_trace - v->gmed;
    if (!v->robust && !store_only()) {
      printf("  GlobalAgent    %.2f us cpu per trace with store.representatives "
             "off, %.2f us on (+%.1f%%; medians of %d, %d cycles)\n",
             v->ga_off * 1e6, v->ga_on * 1e6,
             100 * (v->ga_on - v->ga_off) / v->ga_off, GA_REPEATS,
             GA_CYCLES);
      printf("  share of it    the grouping (signature at ingest %.2f us + "
             "grouping at close %.2f us) %.2f us per trace = %.1f%% of the "
             "GlobalAgent's CPU per trace (setting off); storing by "
             "representatives %.2f us = %.1f%%\n",
             (v->csmed - v->cmed) * 1e6, v->gmed * 1e6, grp * 1e6,
             100 * grp / v->ga_off, sto * 1e6, 100 * sto / v->ga_off);
    }
    printf("  read back      %.2f us cpu per trace; %ld reconstructed (%ld "
           "bad), decoded sums within %.2g of the exact totals, %ld "
           "totals not exact\n",
           v->rd * 1e6, v->recon, v->bad_flag, v->max_rel, v->bad_tot);
    fprintf(f,
            "%s\n   {\"compaction\": \"%s\", \"robust\": %s,"
            " \"encoded_bytes_per_trace\": %.1f,\n    \"classes_found\": %zu, \"outliers_found\": %zu,"
            " \"exact\": %s,\n"
            "    \"signature_us_per_trace\": %.3f,"
            " \"group_us_per_trace\": %.3f, \"parse_us_per_trace\": %.3f,\n"
            "    \"signature_bytes_us_per_trace\": %.3f,"
            " \"check_us_per_trace\": %.3f,"
            " \"check_signature_us_per_trace\": %.3f,\n"
            "    \"file_bytes_full\": %.0f, \"file_bytes_reps\": %.0f,"
            " \"file_ratio\": %.2f,\n"
            "    \"used_bytes_full\": %.0f, \"used_bytes_reps\": %.0f,"
            " \"used_ratio\": %.2f,\n"
            "    \"vacuum_bytes_full\": %.0f, \"vacuum_bytes_reps\": %.0f,"
            " \"vacuum_ratio\": %.2f,\n"
            "    \"sets_bytes_full\": %.0f, \"sets_bytes_reps\": %.0f,"
            " \"sets_ratio\": %.2f,\n"
            "    \"set_used_bytes_full\": %.0f, \"set_used_bytes_reps\": %.0f,"
            " \"set_used_ratio\": %.2f,\n"
            "    \"set_sets_bytes_full\": %.0f, \"set_sets_bytes_reps\": %.0f,"
            " \"set_sets_ratio\": %.2f,\n"
            "    \"replaced_per_cycle\": %zu, \"robust_replaced_per_cycle\": %zu,"
            " \"reps_us_per_trace\": %.3f,"
            " \"reps_from_bytes_us_per_trace\": %.3f,\n"
            "    \"ga_cpu_us_per_trace_off\": %.3f,"
            " \"ga_cpu_us_per_trace_on\": %.3f,\n"
            "    \"grouping_us_per_trace\": %.3f,"
            " \"store_option_us_per_trace\": %.3f,\n"
            "    \"read_us_per_trace\": %.3f, \"reconstructed\": %ld,"
            " \"reconstructed_bad\": %ld, \"sum_rel_max\": %.3g,"
            " \"totals_not_exact\": %ld}",
            i ? "," : "", v->spec, v->robust ? "true" : "false", v->enc,
            v->ncls, v->nout,
            v->ok ? "true" : "false", v->smed * 1e6, v->gmed * 1e6,
            v->pmed * 1e6, v->bmed * 1e6, v->cmed * 1e6, v->csmed * 1e6,
            v->s0.file, v->s1.file, v->s0.file / v->s1.file, v->s0.used,
            v->s1.used, v->s0.used / v->s1.used, v->s0.vac, v->s1.vac,
            v->s0.vac / v->s1.vac, v->s0.sets, v->s1.sets,
            v->s0.sets / v->s1.sets, v->s0.set_used, v->s1.set_used,
            v->s0.set_used / v->s1.set_used, v->s0.set_sets, v->s1.set_sets,
            v->s0.set_sets / v->s1.set_sets, v->s1.replaced,
            v->s1.robust_replaced,
            v->s1.reps_s_per_trace * 1e6, v->s2.reps_s_per_trace * 1e6,
            v->ga_off * 1e6, v->ga_on * 1e6, grp * 1e6, sto * 1e6,
            v->rd * 1e6, v->recon, v->bad_flag,
            v->max_rel, v->bad_tot);
  }
  fprintf(f, "\n  ]\n}\n");
  fclose(f);
  rmdir(dir);
  return good ? 0 : 1;
}
