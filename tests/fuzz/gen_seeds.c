/* SPDX-License-Identifier: BSD-3-Clause */
/* gen_seeds.c: writes the seed corpora of the fuzz targets into
 * DIR/<target>/ (DIR is argv[1]), built from the real encoders so seeds stay
 * valid when the protocol or the compact encoding changes: frames of every
 * message the targets handle (la_frame_pack), compact traces of synthetic
 * mesh series in each mode (la_compact), a small INI file, and a store
 * session (two ranks, two cycles, then each kind of Query, and one of the
 * older feed protocol) and typed listing replies. Run by
 * tests/fuzz/run.sh before fuzzing; not a fuzz target itself.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "la.h"
#include "la_codec.h"
#include "la_compact.h"

typedef struct la__buf {
  uint8_t *p;
  size_t n;
} la__buf_t;

static void la__die(const char *what) {
  fprintf(stderr, "gen_seeds: %s\n", what);
  exit(1);
}

static void la__put(la__buf_t *b, const void *p, size_t n) {
  b->p = realloc(b->p, b->n + n + 1);
  if (!b->p) la__die("out of memory");
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

static void la__frame(la__buf_t *b, uint16_t type, const ProtobufCMessage *m) {
  uint8_t *f;
  size_t n;
  if (la_frame_pack(type, m, &f, &n) != 0) la__die("la_frame_pack failed");
  la__put(b, f, n);
  free(f);
}

static void la__write(const char *dir, const char *target, const char *name,
                      const la__buf_t *b) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, target);
  if (mkdir(path, 0755) != 0 && errno != EEXIST) la__die(strerror(errno));
  snprintf(path, sizeof path, "%s/%s/%s", dir, target, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(b->p, 1, b->n, f) != b->n || fclose(f) != 0)
    la__die(path);
}

/* A compact trace of n points of a synthetic mesh series in mode spec. */
static void la__trace(const char *spec, size_t n, uint64_t seed,
                      la_compact_result_t *r) {
  la_compact_params_t p;
  double *x = malloc(n * sizeof *x);
  if (!x || la_compact_spec_parse(spec, &p, NULL, 0) != 0 ||
      la_compact_synth((int)(seed % LA_SYNTH_KINDS), n, seed, x) != 0)
    la__die("compaction of a seed failed");
  if (p.mode == LA_COMPACT_POLYLINE) { /* whole counts: quantized runs */
    p.quantum = 1;
    for (size_t i = 0; i < n; i++) x[i] = floor(x[i]);
  }
  if (la_compact(x, n, &p, r) != 0) la__die("compaction of a seed failed");
  free(x);
}

static void la__ct(la__buf_t *b, const char *app, uint32_t rank,
                   uint64_t tag, uint64_t seq, const la_compact_result_t *r,
                   size_t n) {
  La__CompactTrace t = LA__COMPACT_TRACE__INIT;
  La__SeriesStats st = LA__SERIES_STATS__INIT;
  t.seq = seq;
  t.app_id = (char *)app;
  t.rank = rank;
  t.cycle_tag = tag;
  t.n_elements = n;
  t.mode = r->mode;
  t.segments.data = r->bytes;
  t.segments.len = r->len;
  st.count = r->stats.count;
  st.sum = r->stats.sum;
  st.min = r->stats.min;
  st.max = r->stats.max;
  t.stats = &st;
  la__frame(b, LA__MSG_TYPE__MSG_COMPACT_TRACE, &t.base);
}

/* A Query of feed protocol LA_FEED_PROTOCOL_VERSION (old: of version 1,
 * which sent none). */
static void la__query(la__buf_t *b, const char *what, const char *app,
                      int has_tag, uint64_t tag, int old) {
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)what;
  q.app_id = (char *)app;
  q.has_cycle_tag = has_tag;
  q.cycle_tag = tag;
  q.has_feed_protocol = !old;
  q.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  la__frame(b, LA__MSG_TYPE__MSG_QUERY, &q.base);
}

/* Typed listing replies (an AppList, a CycleList), as a client gets them. */
static void la__listings(la__buf_t *b) {
  La__AppInfo a = LA__APP_INFO__INIT, *ap = &a;
  La__AppList al = LA__APP_LIST__INIT;
  a.app_id = "app-1";
  a.app_name = "wavetoy";
  a.metric = "time";
  a.unit = "ns";
  a.has_nprocs = a.has_elements = a.has_cycles = 1;
  a.nprocs = 2;
  a.elements = 600;
  a.cycles = 2;
  a.has_sets_complete = a.has_ranks_started = a.has_ranks_ended = 1;
  a.sets_complete = 2;
  a.ranks_started = 2;
  a.ranks_ended = 1;
  al.n_apps = 1;
  al.apps = &ap;
  La__QueryReply r = LA__QUERY_REPLY__INIT;
  r.has_feed_protocol = 1;
  r.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  r.apps = &al;
  la__frame(b, LA__MSG_TYPE__MSG_QUERY_REPLY, &r.base);
  La__CycleInfo c[2] = {LA__CYCLE_INFO__INIT, LA__CYCLE_INFO__INIT};
  La__CycleInfo *cp[2] = {&c[0], &c[1]};
  La__CycleList cl = LA__CYCLE_LIST__INIT;
  c[0].state = LA__CYCLE_STATE__CYCLE_COMPLETE;
  c[0].ranks_present = 2;
  c[1].cycle_tag = 1;
  c[1].state = LA__CYCLE_STATE__CYCLE_PARTIAL;
  c[1].ranks_present = 1;
  c[1].ranks_missing = 1;
  c[1].reasons = "timeout (1)";
  cl.n_cycles = 2;
  cl.cycles = cp;
  r.apps = NULL;
  r.cycles = &cl;
  la__frame(b, LA__MSG_TYPE__MSG_QUERY_REPLY, &r.base);
}

int main(int argc, char **argv) {
  if (argc != 2) la__die("usage: gen_seeds DIR");
  const char *dir = argv[1];
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) la__die(strerror(errno));
  static const char *const specs[] = {"polyline:cv=0.1", "maxerr:eps=0.5",
                                      "maxerr:eps=0.01,relative", "lossless"};
  la__buf_t session = {0}, frames = {0};
  uint8_t hdr[2] = {7, 40};
  la__put(&frames, hdr, 2);

  for (int i = 0; i < 4; i++) { /* compact traces: 16 range bytes + trace */
    la_compact_result_t r;
    la__trace(specs[i], 200 + 50 * (size_t)i, (uint64_t)i + 1, &r);
    la__buf_t b = {0};
    uint8_t range[16] = {3, 0, 0, 0, 0, 0, 0, 0, 90, 0, 0, 0, 0, 0, 0, 0};
    la__put(&b, range, sizeof range);
    la__put(&b, r.bytes, r.len);
    char name[32];
    snprintf(name, sizeof name, "mode%d", i);
    la__write(dir, "fuzz_compact", name, &b);
    free(b.p);
    la_compact_result_free(&r);
  }

  uint64_t seq = 1;
  for (uint32_t rank = 0; rank < 2; rank++) {
    La__RankStart s = LA__RANK_START__INIT;
    s.seq = seq++;
    s.app_id = "app-1";
    s.rank = rank;
    s.nprocs = 2;
    s.n_elements = 300;
    s.metric = "time";
    s.app_name = "wavetoy";
    s.host = "node1";
    la__frame(&session, LA__MSG_TYPE__MSG_RANK_START, &s.base);
  }
  for (uint64_t tag = 0; tag < 2; tag++)
    for (uint32_t rank = 0; rank < 2; rank++) {
      la_compact_result_t r;
      la__trace(specs[(tag * 2 + rank) % 4], 300, tag * 2 + rank + 9, &r);
      la__ct(&session, "app-1", rank, tag, seq++, &r, 300);
      la_compact_result_free(&r);
    }
  La__RankEnd e = LA__RANK_END__INIT;
  e.seq = seq++;
  e.app_id = "app-1";
  e.rank = 1;
  e.reason = "finalize";
  la__frame(&session, LA__MSG_TYPE__MSG_RANK_END, &e.base);
  la__put(&frames, session.p, session.n);
  { /* an application's ids, as libla sends them: two chunks in order */
    static int64_t ids[64];
    for (int i = 0; i < 64; i++) ids[i] = 1000 - 3 * i;
    for (uint64_t first = 0; first < 64; first += 40) {
      La__ElementIds m = LA__ELEMENT_IDS__INIT;
      m.first = first;
      m.n_ids = first ? 24 : 40;
      m.ids = ids + first;
      la__frame(&frames, LA__MSG_TYPE__MSG_ELEMENT_IDS, &m.base);
    }
  }
  { /* a set in parts and a notice, as the GlobalAgent sends them */
    static uint8_t data[40];
    La__TraceSetHead h = LA__TRACE_SET_HEAD__INIT;
    h.app_id = "app-1";
    h.cycle_tag = 1;
    h.set_bytes = sizeof data;
    h.parts = 2;
    la__frame(&frames, LA__MSG_TYPE__MSG_TRACE_SET_HEAD, &h.base);
    for (uint32_t i = 0; i < 2; i++) {
      La__TraceSetPart p = LA__TRACE_SET_PART__INIT;
      p.part = i;
      p.data.data = data + 20 * i;
      p.data.len = 20;
      la__frame(&frames, LA__MSG_TYPE__MSG_TRACE_SET_PART, &p.base);
    }
    La__SetNotice n = LA__SET_NOTICE__INIT;
    n.app_id = "app-1";
    n.cycle_tag = 2;
    n.set_bytes = 70000000;
    n.limit_name = "feed.queue_bytes";
    n.limit = 67108864;
    la__frame(&frames, LA__MSG_TYPE__MSG_SET_NOTICE, &n.base);
  }
  la__query(&session, "apps", NULL, 0, 0, 0);
  la__query(&session, "cycles", "app-1", 0, 0, 0);
  la__query(&session, "traceset", "app-1", 1, 1, 0);
  la__query(&session, "traceset", "app-1", 0, 0, 0);
  la__query(&session, "apps", NULL, 0, 0, 1);
  la__write(dir, "fuzz_query", "session", &session);
  la__put(&frames, session.p, session.n);
  la__listings(&frames);
  la__write(dir, "fuzz_frame", "session", &frames);

  static const char ini[] =
      "# a comment\n[a]\nname = \"ab cd\"\npath = /var/lib/la\ncount = 7\n"
      "[b]\nbytes = 64k\nflag = yes\nratio = 0.25\n; another\n[c]\n"
      "count = 1500ms\n[agents]\nlisten = 127.0.0.1:0\nmax_agents = 64\n"
      "[store]\nfsync = no\n";
  static const char over[] = "a.count=9\0b.bytes=2M\0ratio=1e3\0flag=off";
  la__buf_t c = {0};
  la__put(&c, ini, sizeof ini); /* with its NUL: overrides follow */
  la__put(&c, over, sizeof over - 1);
  la__write(dir, "fuzz_config", "sample", &c);
  free(c.p);
  free(session.p);
  free(frames.p);
  return 0;
}
