/* SPDX-License-Identifier: BSD-3-Clause */
/* test_hostile.c: the real la-localagent against applications that do what
 * they should not, and against every order in which agent and application
 * can die.
 *
 * Each test starts build/bin/la-localagent as a child (la_test_daemon.h),
 * mostly with the real la-globalagent as its GlobalAgent (la_test_stack.h;
 * what it stored is read back from its store), and runs applications as
 * forked children that use libla for real. It covers: an application that
 * rewrites its segment header and feeds NaN, infinite values and garbage
 * scales (the agent survives, says why it rejects cycles, and a second
 * application's traces stay exact); a second registration of a registered
 * segment (refused; the first application unharmed); the agent as an
 * unprivileged uid with only CAP_IPC_OWNER (setpriv) serving an application
 * of another uid, and what is left after kill -9 in either order; kill -9
 * during a slow registration and while the element ids are being sent; a stopped agent (the application pays one
 * wait timeout, not one per step; every cycle counted); and a thread that
 * keeps probing while the agent is lost and libla finalizes.
 *
 * Assertions look only at this test's own processes and IPC ids. Every wait
 * is bounded (WAIT_MS); teardown kills every child and stops the daemons.
 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_auth.h"
#include "la_codec.h"
#include "la_shm_layout.h"
#include "la_sockio.h"
#include "la_test_agent.h"
#include "la_test_child.h"
#include "la_test_daemon.h"
#include "la_test_kids.h"
#include "la_test_check.h"
#include "la_test_ipc.h"
#include "la_test_sql.h"
#include "la_test_stack.h"

#define WAIT_MS 30000
#define NOBODY 65534 /* the unprivileged agent's uid */
#define APPUID 65533 /* an application of another uid */

typedef la_test_kid_t kid_t; /* la_test_kids.h */

static struct {
  la_test_daemon_t *d;
  la_test_stack_t st; /* st.ga: the real GlobalAgent, when a test runs one */
  char key[600];
  char agent[64];
  char bindir[64]; /* wrapper directory of the unprivileged agent */
  la_test_kids_t kids;
} T;

static void remove_bindir(void) {
  char p[128];
  if (!T.bindir[0]) return;
  snprintf(p, sizeof p, "%s/la-localagent", T.bindir);
  unlink(p);
  snprintf(p, sizeof p, "%s/la-localagent.bin", T.bindir);
  unlink(p);
  snprintf(p, sizeof p, "%s/lactl", T.bindir);
  unlink(p);
  rmdir(T.bindir);
  T.bindir[0] = 0;
}

static int setup(void **state) {
  memset(&T, 0, sizeof T);
  return 0;
}

static int teardown(void **state) {
  la_tk_cleanup(&T.kids);
  if (T.d) la_td_signal(T.d, SIGCONT);
  la_td_free(T.d);
  T.d = NULL;
  la_ts_free(&T.st);
  remove_bindir();
  return 0;
}

#define CHECK(cond, ...) \
  LA_TD_CHECK(la_td_print_log_tail(T.d, 3000), cond, __VA_ARGS__)

/* Creates the daemon object: the real binary, or (unprivileged) a wrapper
 * that runs it under setpriv as NOBODY with CAP_IPC_OWNER only. Skips the
 * test when that is impossible here. */
/* Copies the file src to dst. Returns 0 or -1. */
static int copy_file(const char *src, const char *dst) {
  FILE *in = fopen(src, "rb"), *out = in ? fopen(dst, "wb") : NULL;
  char buf[65536];
  size_t n;
  int rc = in && out ? 0 : -1;
  while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) rc = -1;
  if (in) fclose(in);
  if (out && fclose(out) != 0) rc = -1;
  return rc;
}

static void new_daemon(int unprivileged) {
  if (unprivileged) {
    char real[512], lactl[512], p[128];
    if (geteuid() != 0) {
      print_message("skip: needs root to change uids\n");
      skip();
    }
    if (access("/usr/bin/setpriv", X_OK) != 0) {
      print_message("skip: setpriv (util-linux) is missing\n");
      skip();
    }
    assert_int_equal(la_td_find_bin("la-localagent", real, sizeof real), 0);
    assert_int_equal(la_td_find_bin("lactl", lactl, sizeof lactl), 0);
    snprintf(T.bindir, sizeof T.bindir, "/tmp/la_hostile_XXXXXX");
    assert_non_null(mkdtemp(T.bindir));
    chmod(T.bindir, 0755);
    /* a copy of the daemon the unprivileged uid can execute, whatever the
     * modes of the build tree's directories (a clone in a 0700 directory) */
    char copy[160];
    snprintf(copy, sizeof copy, "%s/la-localagent.bin", T.bindir);
    assert_int_equal(copy_file(real, copy), 0);
    chmod(copy, 0755);
    snprintf(p, sizeof p, "%s/la-localagent", T.bindir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\nexec /usr/bin/setpriv --reuid=%d --regid=%d "
            "--clear-groups --inh-caps=-all,+ipc_owner "
            "--ambient-caps=-all,+ipc_owner --bounding-set=-all,+ipc_owner "
            "%s \"$@\"\n",
            NOBODY, NOBODY, copy);
    fclose(f);
    chmod(p, 0755);
    snprintf(p, sizeof p, "%s/lactl", T.bindir);
    assert_int_equal(symlink(lactl, p), 0);
    char *old = getenv("LA_TEST_BIN_DIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("LA_TEST_BIN_DIR", T.bindir, 1);
    T.d = la_td_new("la-localagent");
    if (saved)
      setenv("LA_TEST_BIN_DIR", saved, 1);
    else
      unsetenv("LA_TEST_BIN_DIR");
    free(saved);
    assert_non_null(T.d);
    chmod(la_td_dir(T.d), 0777); /* port file and spool written as NOBODY */
    return;
  }
  T.d = la_td_new("la-localagent");
  if (!T.d) {
    print_message("skip: la-localagent not built\n");
    skip();
  }
  char why[256];
  la_td_path(T.d, "secret", T.key, sizeof T.key);
  CHECK(la_auth_generate_secret_file(T.key, why, sizeof why) == 0, "%s", why);
}

/* Starts the daemon: ephemeral port, debug log, GlobalAgent at global
 * ("" for none). */
static void start_agent(const char *global) {
  char port_file[600], spool[600];
  la_td_argv_t a;
  la_td_path(T.d, "port", port_file, sizeof port_file);
  la_td_path(T.d, "spool", spool, sizeof spool);
  la_td_argv_init(&a);
  la_ts_la_args(&a, port_file, spool, global, global[0] ? T.key : NULL);
  la_ts_la_test_opts(&a);
  int port = la_td_start(T.d, a.v, port_file, WAIT_MS);
  CHECK(port > 0, "la-localagent did not start");
  snprintf(T.agent, sizeof T.agent, "%s", la_td_addr(T.d));
}

/* The daemon under test, with the real GlobalAgent (sharing T.key). */
static void start_with_global(void) {
  new_daemon(0);
  if (la_ts_init(&T.st) != 0) {
    print_message("skip: la-globalagent not built\n");
    skip();
  }
  char secret[700];
  snprintf(secret, sizeof secret, "--agents.secret_file=%s", T.key);
  const char *extra[] = {secret, NULL};
  CHECK(la_ts_start_global(&T.st, extra) == 0, "no GlobalAgent");
  start_agent(T.st.ga_addr);
}

/* Waits until the GlobalAgent stored n traces. */
static void wait_traces(long long n) {
  CHECK(la_td_wait_status(T.st.ga, "traces_stored", n, WAIT_MS) == 0,
        "GlobalAgent stored %lld traces, expected %lld",
        la_td_status_ll(T.st.ga, "traces_stored"), n);
}

static void wait_log(const char *needle) {
  CHECK(la_td_wait_log(T.d, needle, WAIT_MS) == 0,
        "the daemon never logged \"%s\" (%s)", needle,
        la_td_alive(T.d) ? "it runs" : "it died");
}

static void wait_status(const char *key, long long min) {
  CHECK(la_td_wait_status(T.d, key, min, WAIT_MS) == 0,
        "status %s did not reach %lld (is %lld)", key, min,
        la_td_status_ll(T.d, key));
}

/* ------------------------------------------------------------ children -- */

enum { REC_REGISTERED = 1, REC_CYCLE, REC_READY, REC_DONE };

typedef struct rec {
  int kind, rc, pid, shm_id, sem_id;
  uint64_t tag;
  double sum;
  long cycles, profiled, skipped, waits;
  long long elapsed_ms;
  char msg[200];
} rec_t;

typedef struct app {
  const char *app_id;
  long n;
  int cycles;   /* before the first go (0: wait for go at once) */
  int buffers;  /* 0: 4 */
  int uid;      /* > 0: run as this uid */
  int hostile;  /* 1: see hostile_main; 2: see huge_main */
  int after_go; /* steps after each go; phases = how many gos */
  int phases;
  int die;        /* at the end: REC_READY, then wait to be killed */
  int timeout_ms; /* LA_WAIT_TIMEOUT_MS, 0: default */
  int connect_ms; /* LA_CONNECT_TIMEOUT_MS, 0: default */
} app_t;

static double value_of(long e, uint64_t cycle) {
  return 10.0 + (double)((e * 7 + (long)cycle * 3) % 13) * 0.5;
}
static uint64_t cur_cycle;
static double probe_zero(long e, void *arg) {
  return 0.0;
}
static double probe_value(long e, void *arg) {
  return value_of(e, cur_cycle);
}

static void send_rec(int fd, rec_t *r) {
  r->pid = (int)getpid();
  ssize_t w = write(fd, r, sizeof *r);
  (void)w;
}

static int sem_exists(int id) {
  struct semid_ds sd;
  return id >= 0 && semctl(id, 0, IPC_STAT, &sd) == 0;
}

static long long now_ms(void) {
  return la_td_now_ms();
}

/* libla's connection to the agent, found among our descriptors. */
static int agent_fd(uint16_t port) {
  return la_ta_conn_fd(port);
}

static void wait_go(int go) {
  char c;
  ssize_t got;
  while ((got = read(go, &c, 1)) < 0 && errno == EINTR) {
  }
  if (got != 1) _exit(3);
}

/* The hostile part: after a normal registration, rewrites the geometry of
 * its own segment, then hands the agent buffers with NaN and infinite
 * values (tag 0, through libla), a NaN scale (tag 101), a negative scale
 * (tag 102) and a huge scale that overflows to infinity (tag 103). */
static void hostile_main(const app_t *a, int res, int go) {
  int shm = la_test_shm_of((int)getpid());
  la_shm_header_t *h = shm >= 0 ? shmat(shm, NULL, 0) : (void *)-1;
  if (h == (void *)-1) _exit(5);
  uint64_t n = (uint64_t)a->n, stride = la_shm_buffer_stride(n);
  h->header_len = 0xFFFFFF00u;
  h->buffer_stride = 1ULL << 44;
  h->n_elements = ~0ULL;
  h->n_buffers = 0xFFFFFFFFu;
  h->n_channels = LA_SHM_MAX_CHANNELS; /* 16x the values the agent reads */
  h->segment_size = 1;
  h->magic = 0;
  /* tag 0 through libla: every third value NaN, every seventh infinite */
  double *v0 = (double *)((char *)h + sizeof *h);
  for (uint64_t e = 0; e < n; e++)
    v0[e] = e % 3 == 0 ? NAN : e % 7 == 0 ? INFINITY : 1.0;
  rec_t r;
  memset(&r, 0, sizeof r);
  r.kind = REC_CYCLE;
  r.rc = LA_dataXferTagged(0);
  send_rec(res, &r);
  int fd = agent_fd(la_td_port(T.d));
  if (fd < 0) _exit(6);
  double scales[3] = {NAN, -5.0, 1e300};
  for (int b = 1; b <= 3; b++) {
    double *v = (double *)((char *)h + sizeof *h + (uint64_t)b * stride);
    for (uint64_t e = 0; e < n; e++) v[e] = b == 3 ? 1e300 : 2.0;
    h->buf[b].scale = scales[b - 1];
    h->buf[b].cycle_tag = 100 + (uint64_t)b;
    La__DataReady d = LA__DATA_READY__INIT;
    d.buffer = (uint32_t)b;
    d.cycle_tag = 100 + (uint64_t)b;
    d.seq = (uint64_t)b;
    if (la_send_msg(fd, LA__MSG_TYPE__MSG_DATA_READY, &d.base, 2000) != 0)
      _exit(7);
  }
  memset(&r, 0, sizeof r);
  r.kind = REC_READY;
  send_rec(res, &r);
  wait_go(go);
  _exit(0);
}

/* Values of the time metric no timer gives, written into every buffer
 * through a normal registration (robust weights on): cycle 0 as measured,
 * cycle 1 1e308 in every element and every flag byte 0xff; cycle 2 NaN,
 * infinities and DBL_MAX mixed, flags 0xff; cycle 3 DBL_MAX everywhere,
 * flags 0. Each LA_dataXfer's
 * rc in a REC_CYCLE, then REC_DONE after LA_finalize. */
static void huge_main(const app_t *a, int res) {
  int shm = la_test_shm_of((int)getpid());
  la_shm_header_t *h = shm >= 0 ? shmat(shm, NULL, 0) : (void *)-1;
  if (h == (void *)-1) _exit(5);
  uint64_t n = (uint64_t)a->n;
  rec_t r;
  for (int c = 0; c < 4; c++) {
    for (long e = 0; e < a->n; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
    /* the buffer of this cycle (policy wait: they go round in order); the
     * others may still be the agent's, with earlier cycles */
    uint32_t b = (uint32_t)c % h->n_buffers;
    double *v = la_shm_values(h, b);
    uint8_t *f = la_shm_flags(h, b);
    const double mix[4] = {NAN, INFINITY, -INFINITY, DBL_MAX};
    for (uint64_t e = 0; c > 0 && e < n; e++) {
      v[e] = c == 1 ? 1e308 : c == 2 ? mix[e % 4] : DBL_MAX;
      f[e] = c == 3 ? 0 : 0xff;
    }
    memset(&r, 0, sizeof r);
    r.kind = REC_CYCLE;
    r.rc = LA_dataXfer();
    send_rec(res, &r);
  }
  shmdt(h);
  LA_finalize();
  memset(&r, 0, sizeof r);
  r.kind = REC_DONE;
  send_rec(res, &r);
  _exit(0);
}

static void app_main(const app_t *a, int res, int go) {
  if (a->uid > 0 && la_test_become(a->uid) != 0) _exit(8);
  char buf[32];
  if (a->timeout_ms) {
    snprintf(buf, sizeof buf, "%d", a->timeout_ms);
    setenv("LA_WAIT_TIMEOUT_MS", buf, 1);
  }
  if (a->connect_ms) {
    snprintf(buf, sizeof buf, "%d", a->connect_ms);
    setenv("LA_CONNECT_TIMEOUT_MS", buf, 1);
  }
  LA_setAgent(T.agent);
  LA_setAppId(a->app_id);
  LA_setBuffers(a->buffers ? a->buffers : 4);
  LA_setPolicy(LA_POLICY_WAIT);
  LA_setProbeStartFunc(probe_zero, NULL);
  LA_setProbeStopFunc(probe_value, NULL);
  LA_setMetric(a->hostile == 2 ? "time" : "custom");
  rec_t r;
  memset(&r, 0, sizeof r);
  r.kind = REC_REGISTERED;
  r.rc = LA_register("hostile-test", 0, 1, a->n);
  r.shm_id = la_test_shm_of((int)getpid());
  r.sem_id = la_test_sem_of((int)getpid());
  snprintf(r.msg, sizeof r.msg, "%s", LA_lastError());
  send_rec(res, &r);
  if (r.rc != 0) _exit(1);
  if (a->hostile == 2) huge_main(a, res);
  if (a->hostile == 1) hostile_main(a, res, go);
  for (int c = 0; c < a->cycles; c++) {
    memset(&r, 0, sizeof r);
    r.kind = REC_CYCLE;
    r.tag = (uint64_t)LA_getStat(LA_STAT_CYCLES);
    cur_cycle = r.tag;
    for (long e = 0; e < a->n; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
      r.sum += value_of(e, r.tag);
    }
    r.rc = LA_dataXfer();
    send_rec(res, &r);
  }
  for (int p = 0; p < a->phases; p++) {
    wait_go(go);
    long long t0 = now_ms();
    int bad = 0;
    for (int c = 0; c < a->after_go; c++) {
      cur_cycle = (uint64_t)LA_getStat(LA_STAT_CYCLES);
      for (long e = 0; e < a->n; e++) {
        LA_startProbe(e);
        LA_stopProbe(e);
      }
      int rc = LA_dataXfer();
      if (rc && !bad) bad = rc;
    }
    memset(&r, 0, sizeof r);
    r.kind = REC_DONE;
    r.rc = bad;
    r.elapsed_ms = now_ms() - t0;
    r.cycles = LA_getStat(LA_STAT_CYCLES);
    r.profiled = LA_getStat(LA_STAT_PROFILED);
    r.skipped = LA_getStat(LA_STAT_SKIPPED);
    r.waits = LA_getStat(LA_STAT_WAITS);
    send_rec(res, &r);
  }
  if (a->die) {
    memset(&r, 0, sizeof r);
    r.kind = REC_READY;
    send_rec(res, &r);
    for (;;) pause();
  }
  LA_finalize();
  memset(&r, 0, sizeof r);
  r.kind = REC_DONE;
  send_rec(res, &r);
  _exit(0);
}

static void app_trampoline(const void *arg, int res, int go) {
  app_main(arg, res, go);
}

static kid_t *spawn_app(const app_t *a) {
  kid_t *k = la_tk_spawn(&T.kids, app_trampoline, a, 1);
  assert_non_null(k);
  return k;
}

/* The next record of kind from the child, the child's exit code
 * (la_test_check.h). */
#define expect_rec(k, kind, out) \
  la_tc_expect(k, kind, out, sizeof *(out), WAIT_MS, T.d)
#define reap_kid(k) la_tc_reap(k, WAIT_MS, T.d)

static void go(kid_t *k) {
  assert_int_equal(la_tk_go(k), 0);
}

static void kill_kid(kid_t *k) {
  la_tk_kill(k);
}

static void registered(kid_t *k, rec_t *r) {
  expect_rec(k, REC_REGISTERED, r);
  CHECK(r->rc == 0, "LA_register: %s (%s)", LA_strerror(r->rc), r->msg);
}

/* Spawns a and waits until it registered (its record into r). */
static kid_t *spawn_registered(const app_t *a, rec_t *r) {
  kid_t *k = spawn_app(a);
  registered(k, r);
  return k;
}

/* A well-behaved application: 3 cycles whose stored traces carry exactly
 * the raw sums. */
static void good_app_is_served(const char *app_id) {
  app_t a = {.app_id = app_id, .n = 500, .cycles = 3};
  rec_t r;
  double sums[3];
  kid_t *k = spawn_registered(&a, &r);
  for (int c = 0; c < 3; c++) {
    expect_rec(k, REC_CYCLE, &r);
    CHECK(r.rc == 0, "LA_dataXfer: %s", LA_strerror(r.rc));
    sums[c] = r.sum;
  }
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(reap_kid(k), 0);
  for (uint64_t c = 0; c < 3; c++) {
    la_tsql_trace_t t;
    CHECK(la_test_sql_wait(T.st.db, 1, WAIT_MS,
                           "SELECT count(*) FROM traces WHERE app_id = '%s' "
                           "AND rank = 0 AND cycle_tag = %llu",
                           app_id, (unsigned long long)c) == 0 &&
              la_test_sql_trace(T.st.db, app_id, 0, c, &t) == 0,
          "%s cycle %llu never stored", app_id, (unsigned long long)c);
    la_test_sql_trace_free(&t);
    CHECK(t.n_elements == 500 && t.sum == sums[c],
          "%s cycle %llu: %llu elements, sum %.17g, expected 500 and %.17g",
          app_id, (unsigned long long)c, (unsigned long long)t.n_elements,
          t.sum, sums[c]);
  }
}

/* ---------------------------------------------------------------- tests -- */

/* Both daemons, and a hostile application app_id of 1000 elements that
 * registered and ran its first cycle (that cycle's record into r). */
static kid_t *start_hostile_app(const char *app_id, rec_t *r) {
  start_with_global();
  app_t a = {.app_id = app_id, .n = 1000, .hostile = 1};
  kid_t *k = spawn_registered(&a, r);
  expect_rec(k, REC_CYCLE, r);
  return k;
}

/* NaN, infinite values and garbage scales through the real GlobalAgent:
 * both daemons stay up, the data cycles are stored, the rejected ones not,
 * and a well-behaved application's cycles are stored after them. */
static void test_hostile_values_real_globalagent(void **state) {
  rec_t r;
  kid_t *k = start_hostile_app("hostile-ga", &r);
  expect_rec(k, REC_READY, &r);
  wait_log("cycle 102 rejected");
  wait_traces(2); /* the NaN/Inf cycles */
  go(k);
  assert_int_equal(reap_kid(k), 0);
  app_t b = {.app_id = "good-ga", .n = 300, .cycles = 3};
  kid_t *k2 = spawn_app(&b);
  registered(k2, &r);
  expect_rec(k2, REC_DONE, &r);
  assert_int_equal(reap_kid(k2), 0);
  wait_traces(5);
  CHECK(la_td_alive(T.st.ga) && la_td_alive(T.d), "a daemon died");
  assert_int_equal(la_td_status_ll(T.st.ga, "bad_frames"), 0);
  assert_int_equal(la_td_status_ll(T.st.ga, "traces_stored"), 5);
}

/* One user's values cannot stop the node's uplink: an application whose
 * buffers hold 1e308, NaN, infinities and DBL_MAX with every flag set has
 * each of its cycles stored or recorded missing with a reason, the
 * GlobalAgent never sees a frame it must refuse (the link stays up), and
 * another application's traces are stored right after. */
static void test_huge_values_keep_the_link(void **state) {
  start_with_global();
  app_t a = {.app_id = "huge", .n = 1000, .hostile = 2};
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);
  for (int c = 0; c < 4; c++) {
    expect_rec(k, REC_CYCLE, &r);
    CHECK(r.rc == 0, "huge LA_dataXfer: %s", LA_strerror(r.rc));
  }
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(reap_kid(k), 0);
  CHECK(la_test_sql_wait(T.st.db, 4, WAIT_MS,
                         "SELECT (SELECT count(*) FROM traces WHERE app_id = "
                         "'huge') + (SELECT count(*) FROM missing WHERE "
                         "app_id = 'huge')") == 0,
        "the huge application's 4 cycles are neither stored nor missing "
        "(bad frames at the GlobalAgent: %lld)",
        la_td_status_ll(T.st.ga, "bad_frames"));
  char reasons[4][64];
  int nr = la_test_sql_texts(T.st.db, reasons, 4,
                             "SELECT reason FROM missing WHERE app_id = "
                             "'huge' ORDER BY cycle_tag");
  for (int i = 0; i < nr; i++) {
    print_message("missing: %s\n", reasons[i]);
    CHECK(strstr(reasons[i], "invalid") != NULL,
          "reason \"%s\" does not say the trace was invalid", reasons[i]);
  }
  /* the measured values are data (like NaN and infinite ones): stored;
   * the robust weights their interference overflows are left out */
  la_tsql_trace_t t;
  CHECK(la_test_sql_trace(T.st.db, "huge", 0, 1, &t) == 0,
        "cycle 1 (1e308 everywhere) not stored");
  la_test_sql_trace_free(&t);
  CHECK(isinf(t.sum), "cycle 1: sum %g, expected infinite", t.sum);
  CHECK(la_td_log_has(T.d, "robust weights left out"),
        "the LocalAgent did not say why cycle 1 has no robust weights");
  good_app_is_served("good-after-huge");
  CHECK(la_td_alive(T.st.ga) && la_td_alive(T.d), "a daemon died");
  assert_int_equal(la_td_status_ll(T.st.ga, "bad_frames"), 0);
}

/* An application rewrites every geometry field of its header after
 * registering and feeds NaN, infinite values and garbage scales. */
static void test_hostile_header_and_values(void **state) {
  rec_t r;
  kid_t *k = start_hostile_app("hostile", &r);
  CHECK(r.rc == 0, "hostile LA_dataXfer: %s", LA_strerror(r.rc));
  expect_rec(k, REC_READY, &r);
  wait_log("scale nan is not a positive finite number: cycle 101 rejected");
  wait_log("scale -5 is not a positive finite number: cycle 102 rejected");
  /* NaN and infinite values are data: they are compacted and stored */
  wait_traces(2); /* the NaN/Inf cycles 0 and 103 */
  la_tsql_trace_t t0, t3;
  CHECK(la_test_sql_trace(T.st.db, "hostile", 0, 0, &t0) == 0 &&
            la_test_sql_trace(T.st.db, "hostile", 0, 103, &t3) == 0,
        "cycle 0 or 103 of the hostile application missing");
  la_test_sql_trace_free(&t0);
  la_test_sql_trace_free(&t3);
  CHECK(t0.n_elements == 1000 && isnan(t0.sum),
        "cycle 0: %llu elements, "
        "sum %g",
        (unsigned long long)t0.n_elements, t0.sum);
  CHECK(isinf(t3.sum), "cycle 103: sum %g, expected infinite", t3.sum);
  CHECK(la_td_alive(T.d), "the agent died");
  good_app_is_served("good-after-hostile");
  go(k);
  assert_int_equal(reap_kid(k), 0);
  wait_status("ranks_ended", 2);
  char path[64], line[128];
  snprintf(path, sizeof path, "/proc/%d/status", (int)la_td_pid(T.d));
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) print_message("agent %s", line);
  if (f) fclose(f);
  CHECK(la_td_alive(T.d), "the agent died");
  assert_true(la_td_status_ll(T.d, "cycles_dropped") >= 2);
}

/* Another process of the same user registers a registered segment and
 * semaphore set (it can read the nonce): refused, and its disconnect does
 * not take the first application's semaphores with it. */
static void test_second_registration_refused(void **state) {
  start_with_global();
  app_t a = {.app_id = "victim", .n = 500, .phases = 1, .after_go = 3};
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);
  CHECK(r.shm_id >= 0 && r.sem_id >= 0, "victim ids %d/%d", r.shm_id, r.sem_id);
  la_shm_header_t *h = shmat(r.shm_id, NULL, SHM_RDONLY);
  assert_true(h != (void *)-1);
  uint64_t nonce = h->nonce;
  shmdt(h);
  int fd = la_tcp_connect("127.0.0.1", la_td_port(T.d), 3000);
  assert_true(fd >= 0);
  La__RegisterRequest q = LA__REGISTER_REQUEST__INIT;
  q.protocol = LA_PROTOCOL_VERSION;
  q.app_id = "thief";
  q.app_name = "thief";
  q.nprocs = 1;
  q.pid = r.pid;
  q.shm_id = r.shm_id;
  q.sem_id = r.sem_id;
  q.nonce = nonce;
  q.n_elements = 500;
  q.n_buffers = 4;
  q.metric = "custom";
  q.unit = "user";
  assert_int_equal(
      la_send_msg(fd, LA__MSG_TYPE__MSG_REGISTER_REQUEST, &q.base, 3000), 0);
  uint16_t type;
  ProtobufCMessage *m = NULL;
  char why[200];
  int rc = la_recv_msg(fd, 1u << 16, WAIT_MS, &type, &m, why, sizeof why);
  CHECK(rc == 0 && type == LA__MSG_TYPE__MSG_REGISTER_REPLY, "no reply: %s",
        why);
  La__RegisterReply *rep = (La__RegisterReply *)m;
  CHECK(rep->status == LA_EREFUSED && rep->message &&
            strstr(rep->message, "already registered"),
        "second registration: status %d, \"%s\"", rep->status,
        rep->message ? rep->message : "");
  la_msg_free(m);
  close(fd);
  wait_log("already registered by pid");
  CHECK(sem_exists(r.sem_id), "the victim's semaphore set is gone");
  go(k);
  expect_rec(k, REC_DONE, &r);
  CHECK(r.rc == 0 && r.profiled == 3,
        "victim after the thief: rc %d, %ld "
        "profiled",
        r.rc, r.profiled);
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(reap_kid(k), 0);
  wait_traces(3);
}

/* The agent as uid NOBODY with CAP_IPC_OWNER only; the application as
 * another uid. It attaches the 0600 segment, takes over the semaphore set,
 * and removes it when the application is killed. Then the other order: the
 * agent killed first, then the application; the restarted agent removes the
 * set nobody was left to remove. */
static void test_least_privilege_agent(void **state) {
  new_daemon(1);
  start_agent("");
  app_t a = {
      .app_id = "other-uid", .n = 300, .cycles = 3, .uid = APPUID, .die = 1};
  rec_t r, reg;
  kid_t *k = spawn_registered(&a, &reg);
  for (int c = 0; c < 3; c++) {
    expect_rec(k, REC_CYCLE, &r);
    CHECK(r.rc == 0, "LA_dataXfer: %s", LA_strerror(r.rc));
  }
  expect_rec(k, REC_READY, &r);
  wait_status("cycles_compacted", 3);
  kid_t *k2;
  struct semid_ds sd;
  int app_pid = k->pid;
  int sem_id = reg.sem_id;
  CHECK(sem_id >= 0, "no semaphore set of uid %d", APPUID);
  assert_int_equal(semctl(sem_id, 0, IPC_STAT, &sd), 0);
  CHECK(sd.sem_perm.uid == NOBODY && (sd.sem_perm.mode & 0777) == 0600,
        "semaphore set owned by %d mode %o, expected the agent's uid %d, 600",
        (int)sd.sem_perm.uid, sd.sem_perm.mode & 0777, NOBODY);
  kill_kid(k);
  wait_status("ranks_ended", 1);
  CHECK(!sem_exists(sem_id),
        "semaphore set %d left after kill -9 of the "
        "application",
        sem_id);
  CHECK(la_test_ipc_count(app_pid) == 0, "segment left");

  /* agent first, then the application */
  app_t b = {
      .app_id = "orphan", .n = 300, .cycles = 2, .uid = APPUID, .die = 1};
  k2 = spawn_app(&b);
  registered(k2, &reg);
  expect_rec(k2, REC_READY, &r);
  wait_status("cycles_compacted", 5);
  int sem2 = reg.sem_id;
  CHECK(sem2 >= 0, "no handed-over semaphore set");
  int pid2 = k2->pid;
  la_td_signal(T.d, SIGKILL);
  la_td_wait_exit(T.d, WAIT_MS);
  kill_kid(k2);
  CHECK(la_test_ipc_count(pid2) == 0, "segment left after both died");
  /* nobody alive could remove the set: the agent does when it restarts */
  la_td_log_mark(T.d);
  start_agent("");
  wait_log("left by an earlier run");
  CHECK(!sem_exists(sem2), "the restarted agent left semaphore set %d", sem2);
}

/* The id function of ids_main: the first id of the second chunk finds the
 * registration accepted and the first chunk sent; it reports the process's
 * IPC ids and stops there, for ever (killed by the test). */
static int ids_res = -1;
static int64_t stuck_id(long e, void *arg) {
  if (e == (long)LA_ELEMENT_IDS_CHUNK) {
    rec_t r;
    memset(&r, 0, sizeof r);
    r.kind = REC_READY;
    r.shm_id = la_test_shm_of((int)getpid());
    r.sem_id = la_test_sem_of((int)getpid());
    send_rec(ids_res, &r);
    for (;;) pause();
  }
  return e;
}

/* An application of uid APPUID with 3 chunks of global ids, which stops
 * in the middle of sending them (stuck_id). */
static void ids_main(int res) {
  if (la_test_become(APPUID) != 0) _exit(8);
  ids_res = res;
  LA_setAgent(T.agent);
  LA_setAppId("ids-killed");
  LA_setMetric("custom");
  LA_setProbeStartFunc(probe_zero, NULL);
  LA_setProbeStopFunc(probe_value, NULL);
  LA_setGlobalIdFunc(stuck_id, NULL);
  LA_register("hostile-test", 0, 1, 3 * (long)LA_ELEMENT_IDS_CHUNK);
  _exit(9); /* never: stuck_id does not return */
}

static void ids_trampoline(const void *arg, int res, int go) {
  ids_main(res);
}

/* kill -9 of an application (another uid) while it sends its element ids,
 * the agent unprivileged (NOBODY, CAP_IPC_OWNER only): the agent accepted
 * the registration, so it must be able to remove the semaphore set when
 * the connection closes. Before the set was handed over only after the
 * last id was sent, and this one was left on the node for ever. */
static void test_killed_while_sending_ids(void **state) {
  new_daemon(1);
  start_agent("");
  kid_t *k = la_tk_spawn(&T.kids, ids_trampoline, NULL, 0);
  assert_non_null(k);
  rec_t r;
  expect_rec(k, REC_READY, &r);
  int pid = k->pid, sem = r.sem_id;
  CHECK(sem >= 0 && r.shm_id >= 0, "no semaphore set (%d) or segment (%d)",
        sem, r.shm_id);
  wait_status("apps", 1);
  kill_kid(k);
  wait_status("ranks_ended", 1);
  int left = sem_exists(sem);
  if (left) semctl(sem, 0, IPC_RMID); /* the test's own leftover */
  CHECK(!left,
        "semaphore set %d of the application killed while sending its "
        "element ids left after the agent ended its rank",
        sem);
  CHECK(la_test_ipc_wait_count(pid, 0, WAIT_MS) == 0,
        "segment of the killed application left");
  CHECK(la_td_alive(T.d), "the agent died");
}

/* Bytes waiting unread on the agent's side of connections to port (the
 * stopped agent's accepted-but-unread registrations), from /proc/net/tcp. */
static long unread_at(uint16_t port) {
  FILE *f = fopen("/proc/net/tcp", "r");
  char line[512];
  long total = 0;
  if (!f) return -1;
  if (fgets(line, sizeof line, f))
    while (fgets(line, sizeof line, f)) {
      unsigned lport, st;
      unsigned long tx, rx;
      if (sscanf(line, "%*s %*8s:%x %*s %x %lx:%lx", &lport, &st, &tx, &rx) ==
              4 &&
          lport == port)
        total += (long)rx;
    }
  fclose(f);
  return total;
}

/* kill -9 of the application while the (stopped) agent has not answered
 * its registration yet (the request is sent and waits unread). */
static void test_killed_during_registration(void **state) {
  start_with_global();
  la_td_signal(T.d, SIGSTOP);
  app_t a = {.app_id = "slowreg", .n = 200, .connect_ms = 30000};
  kid_t *k = spawn_app(&a);
  int pid = k->pid, sem = -1;
  long long end = now_ms() + WAIT_MS;
  while ((sem = la_test_sem_of(pid)) < 0 && now_ms() < end) la_td_nap_ms(5);
  CHECK(sem >= 0, "the application created no semaphore set");
  while (unread_at(la_td_port(T.d)) <= 0 && now_ms() < end) la_td_nap_ms(5);
  CHECK(unread_at(la_td_port(T.d)) > 0, "the registration was never sent");
  kill_kid(k);
  la_td_log_mark(T.d);
  la_td_signal(T.d, SIGCONT);
  wait_log("is not running");
  CHECK(!sem_exists(sem), "semaphore set %d of the killed application left",
        sem);
  CHECK(la_test_ipc_count(pid) == 0, "segment of the killed application left");
}

/* The other orders with the agent as the test's uid: the application
 * killed, then the agent; a clean finalize. */
static void test_app_then_agent_and_finalize(void **state) {
  start_with_global();
  app_t a = {.app_id = "first", .n = 200, .cycles = 2, .die = 1};
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);
  int pid = k->pid, sem = r.sem_id;
  expect_rec(k, REC_READY, &r);
  kill_kid(k);
  wait_status("ranks_ended", 1);
  app_t b = {.app_id = "clean", .n = 200, .cycles = 2};
  kid_t *k2 = spawn_app(&b);
  registered(k2, &r);
  int pid2 = k2->pid, sem2 = r.sem_id;
  expect_rec(k2, REC_DONE, &r);
  assert_int_equal(reap_kid(k2), 0);
  la_td_signal(T.d, SIGKILL);
  la_td_wait_exit(T.d, WAIT_MS);
  CHECK(!sem_exists(sem) && la_test_ipc_count(pid) == 0,
        "killed application: "
        "objects left");
  CHECK(!sem_exists(sem2) && la_test_ipc_count(pid2) == 0,
        "finalized "
        "application: objects left");
}

/* A stopped agent: the application pays one wait timeout, not one per
 * step; skipped cycles are counted; profiling resumes when the agent does;
 * every LA_dataXfer counts as a cycle, also the one that finds it gone. */
static void test_stopped_agent(void **state) {
  start_with_global();
  const int timeout = 1000, steps = 20;
  app_t a = {.app_id = "stalled",
             .n = 100,
             .cycles = 2,
             .buffers = 2,
             .timeout_ms = timeout,
             .phases = 3,
             .after_go = steps};
  rec_t r;
  kid_t *k = spawn_registered(&a, &r);
  for (int c = 0; c < 2; c++) expect_rec(k, REC_CYCLE, &r);
  wait_status("cycles_compacted", 2);
  la_td_signal(T.d, SIGSTOP);
  go(k);
  expect_rec(k, REC_DONE, &r);
  print_message(
      "%d steps with a stopped agent: %lld ms, %ld skipped, %ld "
      "waits (wait timeout %d ms)\n",
      steps, r.elapsed_ms, r.skipped, r.waits, timeout);
  CHECK(r.elapsed_ms < 3 * timeout,
        "%d steps with a stopped agent took %lld "
        "ms (wait timeout %d ms)",
        steps, r.elapsed_ms, timeout);
  CHECK(r.skipped >= steps - 2 && r.cycles == 2 + steps,
        "skipped %ld, "
        "cycles %ld",
        r.skipped, r.cycles);
  long profiled = r.profiled;
  la_td_signal(T.d, SIGCONT);
  wait_status("cycles_compacted", 4);
  go(k);
  expect_rec(k, REC_DONE, &r);
  CHECK(r.rc == 0 && r.profiled > profiled,
        "profiling did not resume: rc %d"
        ", %ld profiled",
        r.rc, r.profiled);
  la_td_signal(T.d, SIGKILL);
  la_td_wait_exit(T.d, WAIT_MS);
  go(k);
  expect_rec(k, REC_DONE, &r);
  CHECK(r.rc == LA_EAGENTLOST, "rc %d after the agent died", r.rc);
  CHECK(r.cycles == 2 + 3 * steps, "LA_STAT_CYCLES %ld after %d calls",
        r.cycles, 2 + 3 * steps);
  expect_rec(k, REC_DONE, &r);
  assert_int_equal(reap_kid(k), 0);
}

/* ------------------------------------------------ probing thread -- */

static volatile int stop_probing;

static void *prober(void *arg) {
  long n = (long)(intptr_t)arg;
  while (!stop_probing)
    for (long e = 0; e < n; e++) {
      LA_startProbe(e);
      LA_stopProbe(e);
    }
  return NULL;
}

/* Against the contract, a thread keeps probing while the main thread ends
 * cycles, finalizes, registers again and finally loses the agent: the
 * application must not crash. */
static void prober_main(int res, int go) {
  LA_setAgent(T.agent);
  LA_setAppId("prober");
  LA_setBuffers(2);
  LA_setMetric("time");
  LA_setPolicy(LA_POLICY_SKIP);
  const long n = 64;
  if (LA_register("prober", 0, 1, n) != 0) _exit(1);
  pthread_t th;
  if (pthread_create(&th, NULL, prober, (void *)(intptr_t)n) != 0) _exit(2);
  for (int i = 0; i < 4000; i++) {
    LA_dataXfer();
    if (i % 200 == 199) {
      LA_finalize();
      if (LA_register("prober", 0, 1, n) != 0) _exit(3);
    }
  }
  rec_t r;
  memset(&r, 0, sizeof r);
  r.kind = REC_READY;
  send_rec(res, &r);
  wait_go(go); /* the agent is killed meanwhile */
  for (int i = 0; i < 2000; i++) LA_dataXfer();
  LA_finalize();
  for (int i = 0; i < 1000; i++) LA_dataXfer();
  stop_probing = 1;
  pthread_join(th, NULL);
  _exit(LA_getStat(LA_STAT_REGISTERED) == 0 ? 0 : 4);
}

static void prober_trampoline(const void *arg, int res, int go) {
  prober_main(res, go);
}

static void test_probing_thread_survives_the_end(void **state) {
  start_with_global();
  kid_t *k = la_tk_spawn(&T.kids, prober_trampoline, NULL, 1);
  assert_non_null(k);
  pid_t pid = k->pid;
  rec_t r;
  expect_rec(k, REC_READY, &r);
  la_td_signal(T.d, SIGKILL);
  la_td_wait_exit(T.d, WAIT_MS);
  go(k);
  int st = reap_kid(k);
  CHECK(st == 0, "the application with a probing thread ended with status %d",
        st);
  CHECK(la_test_ipc_count(pid) == 0, "segment left");
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_hostile_header_and_values),
      T(test_huge_values_keep_the_link),
      T(test_hostile_values_real_globalagent),
      T(test_second_registration_refused),
      T(test_least_privilege_agent),
      T(test_killed_during_registration),
      T(test_killed_while_sending_ids),
      T(test_app_then_agent_and_finalize),
      T(test_stopped_agent),
      T(test_probing_thread_survives_the_end),
#undef T
  };
  return cmocka_run_group_tests_name("hostile", tests, la_td_group_setup, NULL);
}
