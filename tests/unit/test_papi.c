/* SPDX-License-Identifier: BSD-3-Clause */
/* test_papi.c: the PAPI probe path (metric "papi:EVENT") on any machine.
 *
 * Hardware counters are often missing (VMs have no PMU, so PAPI's
 * perf_event component is disabled), but PAPI's software-defined events
 * (SDE) always work: this program registers its own counters with libsde
 * before anything else, increments them inside each element's work by a
 * known number of units, and profiles with LA_METRIC
 * "papi:sde:::LATEST::COUNTER". The values go through the real probe path
 * (PAPI_library_init, event lookup, one event set per probing thread,
 * PAPI_start and PAPI_read at every probe), the real LocalAgent (lossless
 * compaction) and the real GlobalAgent, and are read back with libla_client:
 * every element must hold exactly the units its work counted, accumulated
 * over several probes per cycle, with the work done outside probes left out.
 *
 * Also: threads probing different elements concurrently, each through its
 * own event set (a counter whose callback returns the reading thread's own
 * count); a thread that outlives one registration and probes in the next;
 * unknown event names (plain and SDE) refused with LA_ENOEVENT naming the
 * event, before the LocalAgent sees a registration; cycles and instructions
 * refused with a message naming the missing event where the hardware has no
 * counters; the fallback text when PAPI has none for an error code; and a
 * libpapi that cannot be loaded (LA_PAPI_LIB) refused naming it. */
#include <papi.h>
#include <pthread.h>
#include <sde_lib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_client.h"
#include "la_internal.h"
#include "la_test_stack.h"

#define WAIT_MS 30000
#define SDE_LIB "LATEST"
#define EV_WORK "sde:::" SDE_LIB "::WORK"
#define EV_THREAD "sde:::" SDE_LIB "::THREAD_WORK"

static struct {
  la_test_stack_t st;
  int up; /* both daemons running */
} T;

/* The process-wide counter (EV_WORK) and the per-thread one (EV_THREAD). */
static long long g_work;
static __thread long long t_work;

static long long thread_work_cb(void *arg) {
  (void)arg;
  return t_work;
}

/* Registers the counters, as an instrumented library would when it loads:
 * before PAPI is initialised. */
static void register_sde(void) {
  papi_handle_t h = papi_sde_init(SDE_LIB);
  if (!h ||
      papi_sde_register_counter(h, "WORK", PAPI_SDE_RO | PAPI_SDE_DELTA,
                                PAPI_SDE_long_long, &g_work) != SDE_OK ||
      papi_sde_register_counter_cb(
          h, "THREAD_WORK", PAPI_SDE_RO | PAPI_SDE_INSTANT, PAPI_SDE_long_long,
          thread_work_cb, NULL) != SDE_OK) {
    fprintf(stderr, "test_papi: cannot register the SDE counters\n");
    exit(1);
  }
}

/* Units of work element e counts per probe. */
static long long units(long e) {
  return 1 + (e * 7) % 11;
}

/* One element's work: counts its units on both counters. */
static void work(long e) {
  __atomic_add_fetch(&g_work, units(e), __ATOMIC_RELAXED);
  t_work += units(e);
}

/* --------------------------------------------------------------- fixture */

extern char **environ;

/* Removes every LA_* variable: the environment would override what the
 * tests choose. */
static void clear_la_env(void) {
  for (char **e = environ; *e;) {
    if (strncmp(*e, "LA_", 3) != 0) {
      e++;
      continue;
    }
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
    unsetenv(name); /* environ shifts down: look at *e again */
  }
}

static int group_setup(void **state) {
  (void)state;
  clear_la_env();
  if (la_ts_init(&T.st) != 0) return 0; /* daemons not built: tests skip */
  if (la_ts_start_global(&T.st, NULL) != 0 ||
      la_ts_start_local(&T.st, NULL) != 0)
    return -1;
  T.up = 1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  la_ts_free(&T.st);
  return 0;
}

/* Settings persist across tests: every test starts from the same ones. */
static int setup(void **state) {
  (void)state;
  if (!T.up) return 0;
  LA_setAgent(la_td_addr(T.st.la));
  LA_setCompaction("lossless");
  LA_setPeriod(1);
  LA_setPolicy(LA_POLICY_WAIT);
  LA_setBuffers(3);
  LA_enable();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  LA_finalize();
  return 0;
}

#define NEED_DAEMONS()                                                    \
  do {                                                                    \
    if (!T.up) {                                                          \
      print_message("skip: la-globalagent or la-localagent not built\n"); \
      skip();                                                             \
    }                                                                     \
  } while (0)

/* Registers app_id (rank 0 of 1, n elements) with metric. */
static int reg(const char *app_id, const char *metric, long n) {
  LA_setMetric(metric);
  LA_setAppId(app_id);
  return LA_register("test_papi", 0, 1, n);
}

/* Fetches cycle tag of app_id from the GlobalAgent, once stored, and checks
 * its n values against want. */
static void expect_cycle(const char *app_id, uint64_t tag, const char *metric,
                         const double *want, long n) {
  la_client_t *c = NULL;
  assert_int_equal(la_client_connect(T.st.feed_addr, 5000, &c), 0);
  la_client_set_weights(c, LA_WEIGHTS_MEASURED);
  la_traceset_t *t = NULL;
  long long end = la_td_now_ms() + WAIT_MS;
  for (;;) {
    int rc = la_client_get(c, app_id, tag, &t);
    if (rc == 0 && la_traceset_complete(t)) break;
    la_traceset_free(t);
    t = NULL;
    if (la_td_now_ms() > end)
      fail_msg("%s cycle %llu never stored (%s)", app_id,
               (unsigned long long)tag, la_client_error(c));
    usleep(20000);
  }
  assert_string_equal(la_traceset_metric(t), metric);
  assert_string_equal(la_traceset_unit(t), "count");
  assert_int_equal(la_traceset_rank_elements(t, 0), n);
  double *w = malloc((size_t)n * sizeof *w);
  assert_non_null(w);
  assert_int_equal(la_traceset_rank_weights(t, 0, w), 0);
  for (long e = 0; e < n; e++)
    if (w[e] != want[e])
      fail_msg("%s cycle %llu element %ld: %.17g, expected %.17g", app_id,
               (unsigned long long)tag, e, w[e], want[e]);
  free(w);
  la_traceset_free(t);
  la_client_close(c);
}

/* ----------------------------------------------------------------- tests */

/* One thread, the process-wide counter: in cycle c every element but each
 * third is probed c+1 times; work between probes is not counted. */
static void test_sde_values_per_element(void **state) {
  (void)state;
  NEED_DAEMONS();
  enum { N = 60, CYCLES = 3 };
  assert_int_equal(reg("papi-one", "papi:" EV_WORK, N), 0);
  for (int c = 0; c < CYCLES; c++) {
    for (int rep = 0; rep <= c; rep++)
      for (long e = 0; e < N; e++) {
        if (e % 3 == 0) continue;
        g_work += 1000; /* outside the probe: not counted */
        assert_int_equal(LA_startProbe(e), 0);
        work(e);
        assert_int_equal(LA_stopProbe(e), 0);
      }
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(LA_finalize(), 0);
  for (int c = 0; c < CYCLES; c++) {
    double want[N];
    for (long e = 0; e < N; e++)
      want[e] = e % 3 == 0 ? 0.0 : (double)((c + 1) * units(e));
    expect_cycle("papi-one", (uint64_t)c, "papi:" EV_WORK, want, N);
  }
}

/* Threads probing their own elements at the same time. */
enum { NT = 4, PER_THREAD = 50, REPS = 3 };

typedef struct {
  long first;
  pthread_barrier_t *go;
} span_t;

static void *probe_span(void *arg) {
  span_t *s = arg;
  pthread_barrier_wait(s->go); /* all threads probe concurrently */
  for (int rep = 0; rep < REPS; rep++)
    for (long e = s->first; e < s->first + PER_THREAD; e++) {
      t_work += 500; /* outside the probe */
      LA_startProbe(e);
      work(e);
      LA_stopProbe(e);
    }
  return NULL;
}

static void test_threads_have_own_event_sets(void **state) {
  (void)state;
  NEED_DAEMONS();
  const long n = NT * PER_THREAD;
  assert_int_equal(reg("papi-threads", "papi:" EV_THREAD, n), 0);
  for (int c = 0; c < 2; c++) {
    pthread_t th[NT];
    span_t sp[NT];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, NT);
    for (int i = 0; i < NT; i++) {
      sp[i].first = i * PER_THREAD;
      sp[i].go = &go;
      assert_int_equal(pthread_create(&th[i], NULL, probe_span, &sp[i]), 0);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    assert_int_equal(LA_dataXfer(), 0);
  }
  assert_int_equal(LA_finalize(), 0);
  double want[NT * PER_THREAD];
  for (long e = 0; e < n; e++) want[e] = (double)(REPS * units(e));
  expect_cycle("papi-threads", 0, "papi:" EV_THREAD, want, n);
  expect_cycle("papi-threads", 1, "papi:" EV_THREAD, want, n);
}

/* A worker that lives across registrations (as an OpenMP pool does): it
 * probes its elements each time the test asks. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int asked, done, quit;
} W = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static void *worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&W.mu);
  for (;;) {
    while (W.asked == W.done && !W.quit) pthread_cond_wait(&W.cv, &W.mu);
    if (W.quit) break;
    pthread_mutex_unlock(&W.mu);
    for (long e = 0; e < 10; e++) {
      LA_startProbe(e);
      work(e);
      LA_stopProbe(e);
    }
    pthread_mutex_lock(&W.mu);
    W.done++;
    pthread_cond_broadcast(&W.cv);
  }
  pthread_mutex_unlock(&W.mu);
  return NULL;
}

static void worker_round(void) {
  pthread_mutex_lock(&W.mu);
  int want = ++W.asked;
  pthread_cond_broadcast(&W.cv);
  while (W.done < want) pthread_cond_wait(&W.cv, &W.mu);
  pthread_mutex_unlock(&W.mu);
}

static void test_thread_outlives_registration(void **state) {
  (void)state;
  NEED_DAEMONS();
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, worker, NULL), 0);
  const char *apps[2] = {"papi-pool-1", "papi-pool-2"};
  for (int r = 0; r < 2; r++) {
    assert_int_equal(reg(apps[r], "papi:" EV_THREAD, 10), 0);
    worker_round();
    assert_int_equal(LA_dataXfer(), 0);
    assert_int_equal(LA_finalize(), 0);
  }
  pthread_mutex_lock(&W.mu);
  W.quit = 1;
  pthread_cond_broadcast(&W.cv);
  pthread_mutex_unlock(&W.mu);
  pthread_join(th, NULL);
  double want[10];
  for (long e = 0; e < 10; e++) want[e] = (double)units(e);
  for (int r = 0; r < 2; r++)
    expect_cycle(apps[r], 0, "papi:" EV_THREAD, want, 10);
}

/* Unknown names are refused before the LocalAgent hears of the program;
 * PAPI is left in a state where the next registration works. */
static void test_unknown_events_refused(void **state) {
  (void)state;
  NEED_DAEMONS();
  long regs = la_td_status_ll(T.st.la, "registrations");
  assert_int_equal(reg("papi-bad", "papi:NO_SUCH_EVENT_XYZ", 4), LA_ENOEVENT);
  print_message("refused: %s\n", LA_lastError());
  assert_non_null(strstr(LA_lastError(), "NO_SUCH_EVENT_XYZ"));
  assert_null(strstr(LA_lastError(), "(null)"));
  /* PAPI itself would take any SDE name as a placeholder reading 0 */
  assert_int_equal(reg("papi-bad", "papi:sde:::" SDE_LIB "::NO_SUCH", 4),
                   LA_ENOEVENT);
  print_message("refused: %s\n", LA_lastError());
  assert_non_null(strstr(LA_lastError(), "sde:::" SDE_LIB "::NO_SUCH"));
  assert_non_null(strstr(LA_lastError(), "registered"));
  assert_false(LA_isProfiling());
  assert_int_equal(la_td_status_ll(T.st.la, "registrations"), regs);
  /* the refusals left PAPI usable */
  assert_int_equal(reg("papi-after", "papi:" EV_WORK, 2), 0);
  LA_startProbe(1);
  work(1);
  LA_stopProbe(1);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(LA_finalize(), 0);
  double want[2] = {0.0, (double)units(1)};
  expect_cycle("papi-after", 0, "papi:" EV_WORK, want, 2);
}

/* cycles and instructions need hardware counters; without them the error
 * names the metric and the missing event. */
static void hw_metric(const char *metric, const char *event) {
  NEED_DAEMONS();
  long regs = la_td_status_ll(T.st.la, "registrations");
  int rc = reg("papi-hw", metric, 4);
  if (rc == 0) {
    LA_finalize();
    print_message(
        "skip: this machine counts %s (%s): there is no missing "
        "counter to report\n",
        metric, event);
    skip();
  }
  assert_int_equal(rc, LA_ENOEVENT);
  print_message("refused: %s\n", LA_lastError());
  /* whichever way this machine's PAPI lacks the counter (perf_event
   * disabled, or present with software events only), the user reads the
   * metric they asked for, the event it needs and what to use instead */
  char want[96];
  snprintf(want, sizeof want, "metric '%s' (PAPI event '%s')", metric, event);
  assert_non_null(strstr(LA_lastError(), want));
  assert_non_null(strstr(LA_lastError(), "LA_METRIC=time"));
  assert_null(strstr(LA_lastError(), "(null)"));
  assert_int_equal(la_td_status_ll(T.st.la, "registrations"), regs);
}

static void test_cycles_missing(void **state) {
  (void)state;
  hw_metric("cycles", "PAPI_TOT_CYC");
}

static void test_instructions_missing(void **state) {
  (void)state;
  hw_metric("instructions", "PAPI_TOT_INS");
}

/* libla loads libpapi only for a PAPI metric: one it cannot load (run
 * first, before any test loaded the real one) is refused with LA_EPAPI
 * naming the library, before the LocalAgent hears of the program, and
 * the time metric still works. */
static void test_papi_library_missing(void **state) {
  (void)state;
  NEED_DAEMONS();
  long regs = la_td_status_ll(T.st.la, "registrations");
  setenv("LA_PAPI_LIB", "/nonexistent/libpapi-la-test.so", 1);
  int rc = reg("papi-nolib", "papi:" EV_WORK, 4);
  unsetenv("LA_PAPI_LIB");
  assert_int_equal(rc, LA_EPAPI);
  print_message("refused: %s\n", LA_lastError());
  assert_non_null(strstr(LA_lastError(), "/nonexistent/libpapi-la-test.so"));
  assert_non_null(strstr(LA_lastError(), "LA_METRIC=time"));
  assert_int_equal(la_td_status_ll(T.st.la, "registrations"), regs);
  assert_int_equal(reg("papi-nolib-time", "time", 2), 0);
  assert_int_equal(LA_dataXfer(), 0);
  assert_int_equal(LA_finalize(), 0);
}

/* An error code PAPI has no text for still gives one, with the number. */
static void test_strerror_fallback(void **state) {
  (void)state;
  char buf[32];
  const char *s = la__papi_strerror(-12345, buf, sizeof buf);
  assert_non_null(s);
  assert_non_null(strstr(s, "-12345"));
  s = la__papi_strerror(PAPI_ENOEVNT, buf, sizeof buf);
  assert_non_null(s);
  assert_null(strstr(s, "(null)"));
  assert_true(strlen(s) > 0);
}

int main(void) {
  register_sde();
  const struct CMUnitTest tests[] = {
#define T_(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T_(test_papi_library_missing),
      T_(test_sde_values_per_element),
      T_(test_threads_have_own_event_sets),
      T_(test_thread_outlives_registration),
      T_(test_unknown_events_refused),
      T_(test_cycles_missing),
      T_(test_instructions_missing),
      T_(test_strerror_fallback),
#undef T_
  };
  return cmocka_run_group_tests_name("papi", tests, group_setup,
                                     group_teardown);
}
