/* SPDX-License-Identifier: BSD-3-Clause */
/* test_numbering.c: the application's own element numbering, end to end
 * through the real LocalAgent and GlobalAgent (la_test_agent.h).
 *
 * A program registers with global ids (an array, or a function) or a grid
 * with its origin in the global grid; the ids cross the LocalAgent in
 * chunks and its link, the GlobalAgent stores them, and what a user sees
 * is checked: `lactl export` (feed and store file) writes each element's id
 * and global (i,j,k), libla_client numbers a Trace-Set the same way. Id
 * messages that break the rules (past the element count, an oversized
 * chunk, out of order, after data, a DataReady before the ids are
 * complete, ids nobody announced) are refused with an Error naming the
 * rule, and the LocalAgent goes on serving the next registration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "la.h"
#include "la_client.h"
#include "la_codec.h"
#include "la_sockio.h"
#include "la_test_agent.h"

#define WAIT_MS 20000

static la_test_agent_t agent;

static int setup(void **state) {
  la_td_unset_la_env();
  LA_setGlobalIds(NULL, 0);
  LA_setGlobalIdFunc(NULL, NULL);
  LA_setGridOrigin(0, 0, 0, 0, 0, 0);
  if (la_ta_start(&agent, NULL) != 0) fail_msg("the daemons did not start");
  return 0;
}

static int teardown(void **state) {
  LA_finalize();
  LA_setGlobalIds(NULL, 0);
  LA_setGlobalIdFunc(NULL, NULL);
  LA_setGridOrigin(0, 0, 0, 0, 0, 0);
  unsetenv("LA_APP_ID");
  la_ta_free(&agent);
  return 0;
}

/* Runs `cycles` profiled cycles probing every element with a tiny delay. */
static void run_cycles(long n, int cycles) {
  for (int c = 0; c < cycles; c++) {
    for (long e = 0; e < n; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    assert_int_equal(LA_dataXfer(), 0);
  }
}

/* Application app_id (named name), rank 0 of 1 with n elements: registers,
 * runs one profiled cycle, finalizes. */
static void one_cycle_app(const char *app_id, const char *name, long n) {
  setenv("LA_APP_ID", app_id, 1);
  assert_int_equal(LA_register(name, 0, 1, n), 0);
  run_cycles(n, 1);
  LA_finalize();
}

/* `lactl export APP latest --format FMT -o FILE` through the feed (or
 * --db the store when db): the file's bytes (malloc'ed), stderr into err. */
static char *export_as(const char *app, int db, const char *fmt, char *err,
                       size_t len) {
  char lactl[600], out[700];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(out, sizeof out, "%s/export.%s", la_td_dir(agent.st.ga), fmt);
  const char *argv[] = {lactl,
                        "export",
                        app,
                        "latest",
                        "--format",
                        fmt,
                        "-o",
                        out,
                        db ? "--db" : "--global",
                        db ? agent.st.db : agent.st.feed_addr,
                        NULL};
  int rc = la_td_run(argv, NULL, 20000, err, len);
  if (rc != 0) fail_msg("lactl export: %d: %s", rc, err);
  FILE *f = fopen(out, "r");
  assert_non_null(f);
  char *buf = calloc(1, 1 << 22);
  assert_non_null(buf);
  size_t got = fread(buf, 1, (1 << 22) - 1, f);
  buf[got] = 0;
  fclose(f);
  unlink(out);
  return buf;
}

static char *export_csv(const char *app, int db, char *err, size_t len) {
  return export_as(app, db, "csv", err, len);
}

/* The JSON export's "ids" array of its first rank, blanks removed. */
static void json_ids(const char *json, char *out, size_t len) {
  const char *p = strstr(json, "\"ids\": [");
  assert_non_null(p);
  size_t n = 0;
  for (p += 8; *p && *p != ']' && n + 1 < len; p++)
    if (*p != ' ' && *p != '\n') out[n++] = *p;
  out[n] = 0;
}

/* One CSV row: rank, element, global_element, id, i, j, k. */
typedef struct {
  unsigned rank;
  unsigned long long e, ge, i, j, k;
  long long id;
} row_t;

/* Parses the rows of csv into rows (max of them); returns the count. */
static size_t parse_rows(const char *csv, row_t *rows, size_t max) {
  const char *head = "cycle,rank,element,global_element,value,id,i,j,k\n";
  assert_memory_equal(csv, "# lactl export format ", 22); /* then the header */
  csv = strchr(csv, '\n');
  assert_non_null(csv);
  csv++;
  assert_memory_equal(csv, head, strlen(head));
  const char *p = csv + strlen(head);
  size_t n = 0;
  while (*p && n < max) {
    unsigned long long cyc;
    double v;
    row_t r;
    int used = 0;
    if (sscanf(p, "%llu,%u,%llu,%llu,%lf,%lld,%llu,%llu,%llu\n%n", &cyc,
               &r.rank, &r.e, &r.ge, &v, &r.id, &r.i, &r.j, &r.k, &used) != 9)
      fail_msg("bad CSV row: %.80s", p);
    rows[n++] = r;
    p += used;
  }
  return n;
}

static int64_t id_of(long e) {
  return 1000000007LL * 3 + 17 * (int64_t)e;
}
static int64_t id_fn(long e, void *arg) {
  (void)arg;
  return id_of(e);
}

/* Ids set as an array (three chunks) arrive; `lactl export` through the
 * feed and from the store file writes them; the client numbers the set
 * alike. */
static void test_ids_arrive_and_export(void **state) {
  enum { N = 2 * LA_ELEMENT_IDS_CHUNK + 100 };
  static int64_t ids[N];
  for (long e = 0; e < N; e++) ids[e] = id_of(N - 1 - e);
  setenv("LA_APP_ID", "ids-1", 1);
  assert_int_equal(LA_setGlobalIds(ids, N), 0);
  ids[0] = -5; /* copied: changing the array afterwards changes nothing */
  assert_int_equal(LA_register("ids", 0, 1, N), 0);
  ids[0] = id_of(N - 1);
  run_cycles(N, 2);
  LA_finalize();
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  assert_int_equal(
      la_ta_app_int(&agent, "ids-1",
                    "SELECT sum(n) FROM element_ids WHERE app_id = '%s'"),
      N);
  char err[4096];
  for (int db = 0; db < 2; db++) {
    char *csv = export_csv("ids-1", db, err, sizeof err);
    static row_t rows[N + 1];
    assert_int_equal(parse_rows(csv, rows, N + 1), N);
    for (size_t r = 0; r < N; r++) {
      assert_int_equal(rows[r].e, r);
      assert_int_equal(rows[r].id, ids[r]);
    }
    assert_null(strstr(err, "gave no global ids"));
    free(csv);
    /* the JSON export carries the same ids per rank */
    char *json = export_as("ids-1", db, "json", err, sizeof err);
    assert_non_null(strstr(json, "\"numbering\": \"app\""));
    static char got[N * 24], want[N * 24];
    size_t w = 0;
    for (size_t r = 0; r < N; r++)
      w += (size_t)snprintf(want + w, sizeof want - w, "%s%lld", r ? "," : "",
                            (long long)ids[r]);
    json_ids(json, got, sizeof got);
    assert_string_equal(got, want);
    free(json);
  }
  la_client_t *c;
  assert_int_equal(la_client_connect(agent.st.feed_addr, 5000, &c), 0);
  la_traceset_t *t;
  assert_int_equal(la_client_latest(c, "ids-1", &t), 0);
  static int64_t got[N];
  uint32_t n_app = 0;
  assert_int_equal(la_client_set_ids(c, t, got, &n_app), 0);
  assert_int_equal(n_app, 1);
  assert_memory_equal(got, ids, sizeof ids);
  assert_int_equal(la_client_rank_ids(c, "ids-1", 0, got, N - 1), LA_EINVAL);
  assert_int_equal(la_traceset_rank_grid(t, 0, NULL, NULL, NULL), LA_ENOTFOUND);
  la_traceset_free(t);
  la_client_close(c);
}

/* An id function is called once per element; without ids the export says
 * the id column is the concatenated numbering. */
static void test_id_function_and_none(void **state) {
  assert_int_equal(LA_setGlobalIdFunc(id_fn, NULL), 0);
  one_cycle_app("idf-1", "idf", 50);
  LA_setGlobalIdFunc(NULL, NULL);
  one_cycle_app("noid-1", "noid", 20);
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  char err[4096];
  row_t rows[64];
  char *csv = export_csv("idf-1", 1, err, sizeof err);
  assert_int_equal(parse_rows(csv, rows, 64), 50);
  for (int e = 0; e < 50; e++) assert_int_equal(rows[e].id, id_of(e));
  free(csv);
  csv = export_csv("noid-1", 1, err, sizeof err);
  assert_int_equal(parse_rows(csv, rows, 64), 20);
  for (int e = 0; e < 20; e++)
    assert_true(rows[e].id == (long long)rows[e].ge && rows[e].i == 0);
  assert_non_null(strstr(err, "gave no global ids"));
  free(csv);
  /* ids of another count than the elements: refused by libla itself */
  static int64_t few[10];
  assert_int_equal(LA_setGlobalIds(few, 10), 0);
  assert_int_equal(LA_register("idf", 0, 1, 12), LA_EINVAL);
  assert_non_null(strstr(LA_lastError(), "10 ids for 12 elements"));
}

/* Two ranks of a 4x3x2 grid, each a 2x3x2 slab with its origin: the
 * export gives every cell its global (i,j,k) and global cell index, each
 * once; the client's grid accessor agrees. */
static void test_grid_origin(void **state) {
  setenv("LA_APP_ID", "grid-1", 1);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(LA_setGridOrigin(2 * r, 0, 0, 4, 3, 2), 0);
    assert_int_equal(LA_registerGrid("grid", r, 2, 2, 3, 2), 0);
    for (long k = 0; k < 2; k++)
      for (long j = 0; j < 3; j++)
        for (long i = 0; i < 2; i++) {
          LA_startCell(i, j, k);
          LA_stopCell(i, j, k);
        }
    assert_int_equal(LA_dataXferTagged(5), 0);
    LA_finalize();
  }
  assert_int_equal(la_ta_wait_traces(&agent, 2, WAIT_MS), 0);
  char err[4096];
  row_t rows[32];
  char *csv = export_csv("grid-1", 0, err, sizeof err);
  assert_int_equal(parse_rows(csv, rows, 32), 24);
  int seen[24] = {0};
  for (int x = 0; x < 24; x++) {
    const row_t *w = &rows[x];
    unsigned long long e = w->e;
    assert_int_equal(w->i, 2 * w->rank + e % 2);
    assert_int_equal(w->j, e / 2 % 3);
    assert_int_equal(w->k, e / 6);
    assert_int_equal(w->id, (long long)(w->i + 4 * (w->j + 3 * w->k)));
    seen[w->id]++;
  }
  for (int x = 0; x < 24; x++) assert_int_equal(seen[x], 1);
  assert_non_null(strstr(err, "global cell index"));
  free(csv);
  char *json = export_as("grid-1", 0, "json", err, sizeof err);
  assert_non_null(strstr(json,
                         "\"numbering\": \"grid\", \"dims\": [2, 3, "
                         "2], \"origin\": [2, 0, 0]"));
  free(json);
  la_client_t *c;
  assert_int_equal(la_client_connect(agent.st.feed_addr, 5000, &c), 0);
  la_traceset_t *t;
  assert_int_equal(la_client_get(c, "grid-1", 5, &t), 0);
  uint64_t d[3], o[3], g[3];
  assert_int_equal(la_traceset_rank_grid(t, 1, d, o, g), 0);
  assert_true(d[0] == 2 && d[1] == 3 && d[2] == 2);
  assert_true(o[0] == 2 && o[1] == 0 && o[2] == 0);
  assert_true(g[0] == 4 && g[1] == 3 && g[2] == 2);
  la_traceset_free(t);
  la_client_close(c);
  /* a block outside the global grid is refused at registration */
  assert_int_equal(LA_setGridOrigin(3, 0, 0, 4, 3, 2), 0);
  assert_int_equal(LA_registerGrid("grid", 0, 1, 2, 3, 2), LA_EINVAL);
  assert_non_null(strstr(LA_lastError(), "global extent"));
}

/* A store file written before the numbering tables existed, read by
 * lactl (read-only: it cannot add them): the export works, ids are the
 * concatenated numbering and say so. */
static void test_old_store_reads(void **state) {
  assert_int_equal(LA_setGlobalIdFunc(id_fn, NULL), 0);
  one_cycle_app("old-1", "old", 40);
  assert_int_equal(la_ta_wait_traces(&agent, 1, WAIT_MS), 0);
  assert_int_equal(
      la_ta_wait_sql(&agent, "SELECT count(*) FROM element_ids", 1, WAIT_MS),
      0);
  char copy[700], sql[800];
  snprintf(copy, sizeof copy, "%s/old.db", la_td_dir(agent.st.ga));
  snprintf(sql, sizeof sql, "VACUUM INTO '%s'", copy);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(agent.st.db, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(sqlite3_open(copy, &db), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(db,
                   "PRAGMA journal_mode = WAL; DROP TABLE element_ids;"
                   " DROP TABLE rank_grid",
                   NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  char lactl[600], out[800], err[4096];
  assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
  snprintf(out, sizeof out, "%s/old.csv", la_td_dir(agent.st.ga));
  const char *argv[] = {lactl, "export", "old-1", "-o",
                        out,   "--db",   copy,    NULL};
  if (la_td_run(argv, NULL, 20000, err, sizeof err) != 0)
    fail_msg("lactl export of an old store: %s", err);
  assert_non_null(strstr(err, "gave no global ids"));
  FILE *f = fopen(out, "r");
  assert_non_null(f);
  char buf[8192];
  size_t got = fread(buf, 1, sizeof buf - 1, f);
  buf[got] = 0;
  fclose(f);
  row_t rows[64];
  assert_int_equal(parse_rows(buf, rows, 64), 40);
  assert_int_equal(rows[39].id, 39);
  unlink(out);
  unlink(copy);
}

/* ----------------------------------------------------- hostile messages */

/* libla's connection to the LocalAgent, among our descriptors. */
static int agent_fd(void) {
  return la_ta_conn_fd(la_td_port(agent.st.la));
}

/* What the hostile id function sends before the first id is asked. */
enum { H_PAST, H_BIG, H_ORDER, H_DATA_FIRST, H_STALL };
static int hostile_kind, hostile_sent, hostile_fd = -1;

static void send_ids(int fd, uint64_t first, size_t n) {
  int64_t *v = calloc(n, sizeof *v);
  assert_non_null(v);
  La__ElementIds m = LA__ELEMENT_IDS__INIT;
  m.first = first;
  m.n_ids = n;
  m.ids = v;
  assert_int_equal(
      la_send_msg(fd, LA__MSG_TYPE__MSG_ELEMENT_IDS, &m.base, 2000), 0);
  free(v);
}

/* Called by LA_register once the LocalAgent accepted it, before libla
 * sends a chunk: sends the hostile message on libla's connection. */
static int64_t hostile_fn(long e, void *arg) {
  long n = *(long *)arg;
  if (e == 0 && !hostile_sent) {
    hostile_sent = 1;
    int fd = hostile_fd = agent_fd();
    assert_true(fd >= 0);
    if (hostile_kind == H_PAST) { /* in order, but one id too many */
      send_ids(fd, 0, 4000);
      send_ids(fd, 4000, (size_t)n - 4000 + 1);
    }
    if (hostile_kind == H_BIG) send_ids(fd, 0, LA_ELEMENT_IDS_CHUNK + 1);
    if (hostile_kind == H_STALL) la_td_nap_ms(1500); /* then nothing */
    if (hostile_kind == H_ORDER) send_ids(fd, 3, 2);
    if (hostile_kind == H_DATA_FIRST) {
      La__DataReady d = LA__DATA_READY__INIT;
      assert_int_equal(
          la_send_msg(fd, LA__MSG_TYPE__MSG_DATA_READY, &d.base, 2000), 0);
    }
  }
  return e;
}

/* Reads the LocalAgent's Error on libla's connection fd (found while it
 * was open). libla may still be sending its own chunks when the agent
 * refuses: the agent's lingering close must still let the Error arrive. */
static void expect_error(int fd, const char *word) {
  assert_true(fd >= 0);
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  char why[200] = "";
  int rc = la_recv_msg(fd, 1 << 16, 5000, &type, &m, why, sizeof why);
  if (rc != 0)
    fail_msg("no Error from the LocalAgent (%s); it should say '%s'", why,
             word);
  assert_int_equal(type, LA__MSG_TYPE__MSG_ERROR);
  const char *msg = ((La__Error *)m)->message;
  if (!strstr(msg, word)) fail_msg("Error '%s' does not say '%s'", msg, word);
  la_msg_free(m);
}

/* The LocalAgent still serves: a registration with ids goes through. */
static void expect_agent_serves(const char *app) {
  assert_int_equal(la_td_alive(agent.st.la), 1);
  LA_finalize();
  LA_setGlobalIdFunc(id_fn, NULL);
  one_cycle_app(app, "after", 30);
  assert_int_equal(
      la_ta_wait_sql(&agent, "SELECT count(*) FROM element_ids", 1, WAIT_MS),
      0);
}

static void test_hostile_ids(void **state) {
  static const struct {
    int kind;
    const char *word;
  } cases[] = {
      {H_PAST, "past the 6000 elements"},
      {H_BIG, "at most 4096"},
      {H_ORDER, "starts at 3, expected 0"},
      {H_DATA_FIRST, "DataReady after 0 of the 6000 element ids"},
  };
  long n = 6000;
  long long bad0 = la_ta_local_stat(&agent, "bad_frames");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    hostile_kind = cases[i].kind;
    hostile_sent = 0;
    setenv("LA_APP_ID", "hostile-1", 1);
    assert_int_equal(LA_setGlobalIdFunc(hostile_fn, &n), 0);
    LA_register("hostile", 0, 1, n); /* may notice the refusal or not */
    assert_int_equal(hostile_sent, 1);
    expect_error(hostile_fd, cases[i].word);
    LA_finalize();
  }
  /* ids after data, and ids nobody announced */
  LA_setGlobalIdFunc(NULL, NULL);
  setenv("LA_APP_ID", "hostile-2", 1);
  assert_int_equal(LA_register("hostile", 0, 1, 10), 0);
  run_cycles(10, 1);
  int fd = agent_fd();
  send_ids(fd, 0, 10);
  expect_error(fd, "after a DataReady");
  LA_finalize();
  assert_int_equal(LA_register("hostile", 0, 1, 10), 0);
  fd = agent_fd();
  send_ids(fd, 0, 10);
  expect_error(fd, "not announced");
  LA_finalize();
  assert_true(la_ta_local_stat(&agent, "bad_frames") >= bad0 + 6);
  expect_agent_serves("after-1");
  /* nothing of the refused ids reached the store */
  assert_int_equal(la_ta_sql_int(&agent,
                                 "SELECT count(*) FROM element_ids"
                                 " WHERE app_id LIKE 'hostile%'"),
                   0);
}

/* The daemons, the LocalAgent with a short handshake timeout and element
 * ids of one 6000-element registration at most (max_ids_memory). */
static int setup_ids_deadline(void **state) {
  la_td_unset_la_env();
  LA_setGlobalIds(NULL, 0);
  LA_setGlobalIdFunc(NULL, NULL);
  LA_setGridOrigin(0, 0, 0, 0, 0, 0);
  static const char *const extra[] = {"--agent.handshake_timeout=400ms",
                                      "--agent.max_ids_memory=60k", NULL};
  if (la_ta_start(&agent, extra) != 0) fail_msg("the daemons did not start");
  return 0;
}

/* A registration that announces its ids and stops sending them is
 * dropped after agent.handshake_timeout, naming how far it got, and gives
 * back its share of max_ids_memory: the next registration's ids fit. */
static void test_stalled_ids_dropped(void **state) {
  long n = 6000;
  hostile_kind = H_STALL;
  hostile_sent = 0;
  setenv("LA_APP_ID", "stall-1", 1);
  assert_int_equal(LA_setGlobalIdFunc(hostile_fn, &n), 0);
  LA_register("stall", 0, 1, n); /* may notice the refusal or not */
  assert_int_equal(hostile_sent, 1);
  /* the agent said why (libla, writing its ids meanwhile, may read the
   * Error first: its log is the witness) */
  assert_int_equal(la_td_wait_log(agent.st.la,
                                  "element ids: 0 of 6000 received", WAIT_MS),
                   0);
  LA_finalize();
  expect_agent_serves("after-stall");
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_ids_arrive_and_export), T(test_id_function_and_none),
      T(test_grid_origin),           T(test_old_store_reads),
      T(test_hostile_ids),
#undef T
      cmocka_unit_test_setup_teardown(test_stalled_ids_dropped,
                                      setup_ids_deadline, teardown),
  };
  return cmocka_run_group_tests(tests, la_td_group_setup, NULL);
}
