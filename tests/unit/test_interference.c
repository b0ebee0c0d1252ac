/* SPDX-License-Identifier: BSD-3-Clause */
/* test_interference.c: context switches seen at the probe (libla/
 * interference.c, docs/fidelity.md), against the real LocalAgent and real
 * shared memory.
 *
 * Interference is produced for real: the test pins itself to one CPU and
 * forks a CPU hog pinned to the same CPU (busy for a bounded time, killed at
 * the end), so the scheduler switches the probing thread out while elements
 * are timed. LA_DUMP_RAW gives each cycle's values, flag bytes and
 * interference counters as libla handed them to the agent.
 *
 * Asserts: the kernel mechanism itself (the event page's sequence word moves
 * across involuntary switches); with the hog, elements are flagged, the
 * interference time is positive and the large outliers (> 100 us) are
 * mostly flagged; without it, few flags; two threads on one CPU each flag
 * their own elements; LA_INTERFERENCE=off and a kernel refusal (seccomp)
 * turn detection off with the reason shown; the timer's resolution is
 * reported, and the LocalAgent reports elements below it. Skips when the
 * LocalAgent is not built or this kernel refuses perf_event_open.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "la.h"
#include "la_test_busy.h"
#include "la_test_daemon.h"

#define N_ELEM 400
#define CYCLES 8
#define ELEM_NS 20000 /* work per element: 20 us */
#define BIG_NS 100000 /* an outlier: > 100 us */

static la_test_daemon_t *agent;
static char agent_addr[64];
static int perf_ok; /* this kernel lets a thread watch its own switches */

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int pin_to(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof s, &s);
}

static int current_cpu(void) {
  int c = sched_getcpu();
  return c < 0 ? 0 : c;
}

/* A child busy on `cpu` for at most limit_ms (then it exits by itself). */
static pid_t start_hog(int cpu, int limit_ms) {
  pid_t p = fork();
  if (p == 0) {
    pin_to(cpu);
    la_test_busy_ns((uint64_t)limit_ms * 1000000u);
    _exit(0);
  }
  return p;
}

static void stop_hog(pid_t p) {
  if (p <= 0) return;
  kill(p, SIGKILL);
  waitpid(p, NULL, 0);
}

static void unpin(void) {
  cpu_set_t s;
  CPU_ZERO(&s);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long i = 0; i < n && i < CPU_SETSIZE; i++) CPU_SET(i, &s);
  sched_setaffinity(0, sizeof s, &s);
}

/* A context-switch software event of this thread, as libla opens it (user
 * space only where the kernel refuses more); its fd, or -1. */
static long open_switch_event(void) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
  long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
  if (fd < 0) {
    a.exclude_kernel = a.exclude_hv = 1;
    fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
  }
  return fd;
}

static int group_setup(void **state) {
  long fd = open_switch_event();
  perf_ok = fd >= 0;
  if (fd >= 0) close((int)fd);
  char path[600], port_file[600], a0[700], a1[700];
  if (la_td_find_bin("la-localagent", path, sizeof path) != 0) return 0;
  agent = la_td_new("la-localagent");
  if (!agent) return -1;
  la_td_path(agent, "port", port_file, sizeof port_file);
  snprintf(a0, sizeof a0, "--agent.port_file=%s", port_file);
  snprintf(a1, sizeof a1, "--global.spool_dir=%s/spool", la_td_dir(agent));
  /* every cycle compacted however fast they come (agent.max_backlog) */
  const char *args[] = {"--agent.listen=127.0.0.1:0", a0, a1,
                        "--global.address=", "--agent.max_backlog=off", NULL};
  int port = la_td_start(agent, args, port_file, 10000);
  if (port <= 0) return -1;
  snprintf(agent_addr, sizeof agent_addr, "127.0.0.1:%d", port);
  return 0;
}

static int group_teardown(void **state) {
  la_td_free(agent);
  return 0;
}

static int setup(void **state) {
  const char *vars[] = {"LA_PERIOD",       "LA_METRIC",  "LA_POLICY",
                        "LA_BUFFERS",      "LA_COMPACT", "LA_APP_ID",
                        "LA_DISABLE",      "LA_TIMER",   "LA_DUMP_RAW",
                        "LA_INTERFERENCE", NULL};
  for (int i = 0; vars[i]; i++) unsetenv(vars[i]);
  if (!agent) skip();
  setenv("LA_AGENT", agent_addr, 1);
  return 0;
}

static int teardown(void **state) {
  LA_finalize();
  unpin();
  return 0;
}

/* ------------------------------------------------ the kernel mechanism -- */

static long thread_invol(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nivcsw;
}

static long thread_vol(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw;
}

/* The experiment behind the design: a timed loop sharing its CPU with a
 * hog; the event page's sequence word must move across (nearly) every
 * involuntary switch. */
static void test_kernel_seq_word_moves_on_switch(void **state) {
  if (!perf_ok) skip();
  long fd = open_switch_event();
  assert_true(fd >= 0);
  struct perf_event_mmap_page *pg = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE),
                                         PROT_READ, MAP_SHARED, (int)fd, 0);
  assert_true(pg != MAP_FAILED);
  int cpu = current_cpu();
  assert_int_equal(pin_to(cpu), 0);
  pid_t hog = start_hog(cpu, 10000);
  long before = thread_invol(), vbefore = thread_vol();
  long flagged = 0, intervals = 0;
  uint64_t end = mono_ns() + 600000000u; /* 0.6 s of timed intervals */
  const volatile uint32_t *seq = &pg->lock;
  while (mono_ns() < end) {
    uint32_t s0 = *seq;
    la_test_busy_ns(5000);
    flagged += *seq != s0;
    intervals++;
  }
  long invol = thread_invol() - before, vol = thread_vol() - vbefore;
  stop_hog(hog);
  munmap(pg, (size_t)sysconf(_SC_PAGESIZE));
  close((int)fd);
  print_message(
      "kernel: %ld involuntary switches, %ld of %ld intervals "
      "flagged\n",
      invol, flagged, intervals);
  assert_true(invol >= 5); /* the hog did preempt us */
  /* Each switch lands inside or between intervals; between is rare (the
   * gap is two loads), so nearly every switch flags one interval. */
  assert_true(flagged * 10 >= invol * 9);
  assert_true(flagged <= invol + vol + 2); /* no flags without switches */
}

/* ------------------------------------------------- with the LocalAgent -- */

typedef struct {
  long cycles, elems, big, big_flagged, flagged, flag_bytes_bad;
  long switches; /* this thread's context switches while it probed */
  double flagged_ns, interference_ns, big_ns, big_flagged_ns;
} dump_stats_t;

static void read_dumps(const char *dir, dump_stats_t *st) {
  memset(st, 0, sizeof *st);
  for (int c = 0; c < CYCLES; c++) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s.r0.c%d.f64", dir, LA_appId(), c);
    FILE *f = fopen(p, "rb");
    if (!f) continue;
    double v[N_ELEM];
    uint8_t fl[N_ELEM];
    size_t nv = fread(v, sizeof(double), N_ELEM, f);
    fclose(f);
    snprintf(p, sizeof p, "%s/%s.r0.c%d.flags", dir, LA_appId(), c);
    f = fopen(p, "rb");
    assert_non_null(f);
    size_t nf = fread(fl, 1, N_ELEM, f);
    fclose(f);
    assert_int_equal(nv, N_ELEM);
    assert_int_equal(nf, N_ELEM);
    snprintf(p, sizeof p, "%s/%s.r0.c%d.fid", dir, LA_appId(), c);
    f = fopen(p, "r");
    assert_non_null(f);
    unsigned long long nfl = 0;
    double ins = 0;
    assert_int_equal(fscanf(f, "flagged=%llu interference_ns=%lf", &nfl, &ins),
                     2);
    fclose(f);
    long set = 0;
    for (int e = 0; e < N_ELEM; e++) {
      if (fl[e] & ~1u) st->flag_bytes_bad++;
      if (fl[e]) {
        set++;
        st->flagged_ns += v[e];
      }
      if (v[e] > BIG_NS) {
        st->big++;
        st->big_ns += v[e];
        st->big_flagged += fl[e] != 0;
        if (fl[e]) st->big_flagged_ns += v[e];
      }
    }
    assert_int_equal(set, (long)nfl); /* the count matches the flags */
    st->flagged += set;
    st->interference_ns += ins;
    st->elems += N_ELEM;
    st->cycles++;
  }
}

/* Registers, runs CYCLES cycles of N_ELEM timed elements of ELEM_NS each,
 * with a hog on our CPU when hog is set, and reads the dumps; asserts that
 * LA_interference() then says `detection`. */
static void run_elements(int hog_on, dump_stats_t *st, char *dir, size_t dlen,
                         const char *detection) {
  snprintf(dir, dlen, "%s/dump-XXXXXX", la_td_dir(agent));
  assert_non_null(mkdtemp(dir));
  setenv("LA_DUMP_RAW", dir, 1);
  assert_int_equal(LA_register("interf", 0, 1, N_ELEM), 0);
  pid_t hog = 0;
  if (hog_on) {
    int cpu = current_cpu();
    assert_int_equal(pin_to(cpu), 0);
    hog = start_hog(cpu, 20000);
  }
  long sw0 = thread_invol() + thread_vol();
  for (int c = 0; c < CYCLES; c++) {
    for (long e = 0; e < N_ELEM; e++) {
      LA_startProbe(e);
      la_test_busy_ns(ELEM_NS);
      LA_stopProbe(e);
    }
    assert_int_equal(LA_dataXfer(), 0);
  }
  long sw = thread_invol() + thread_vol() - sw0;
  stop_hog(hog);
  read_dumps(dir, st);
  st->switches = sw;
  assert_int_equal(st->cycles, CYCLES);
  assert_int_equal(st->flag_bytes_bad, 0);
  assert_string_equal(LA_interference(), detection);
}

static void test_hog_flags_the_outliers(void **state) {
  if (!perf_ok) skip();
  char dir[700];
  dump_stats_t st;
  run_elements(1, &st, dir, sizeof dir, "on");
  print_message(
      "hog: %ld of %ld element-cycles flagged; %ld > 100 us, %ld "
      "of them flagged; interference %.0f ns, flagged elements "
      "%.0f ns\n",
      st.flagged, st.elems, st.big, st.big_flagged, st.interference_ns,
      st.flagged_ns);
  assert_true(st.flagged > 0);
  assert_true(st.interference_ns > 0);
  assert_true(st.big > 0); /* the hog made outliers */
  /* Most outliers are flagged, and they carry most of the outliers' time
   * (what is not flagged is interference without a switch: interrupts,
   * softirqs — hundreds of us, not time slices). */
  print_message("hog: outliers %.0f ns, flagged ones %.0f ns\n", st.big_ns,
                st.big_flagged_ns);
  assert_true(st.big_flagged * 2 > st.big);
  assert_true(st.big_flagged_ns >= 0.8 * st.big_ns);
  /* the interference time lies within the flagged elements' time */
  assert_true(st.interference_ns <= st.flagged_ns * 1.01 + 1000);
  assert_int_equal(LA_getStat(LA_STAT_FLAGGED), st.flagged);
  assert_true(LA_getStat(LA_STAT_INTERFERENCE_NS) > 0);
}

static void test_no_hog_few_flags(void **state) {
  if (!perf_ok) skip();
  char dir[700];
  dump_stats_t st;
  run_elements(0, &st, dir, sizeof dir, "on");
  print_message("no hog: %ld of %ld element-cycles flagged; %ld > 100 us; "
                "%ld context switches\n",
                st.flagged, st.elems, st.big, st.switches);
  /* Without a hog only other load switches us out (a shared machine, the
   * other programs of a parallel make check): an element is flagged only
   * when a switch landed in it, never more often than we were switched
   * out (each switch lands in at most one element, the dataXfer waits
   * between cycles may add some without flagging any). */
  assert_true(st.flagged <= st.switches + 2);
}

/* Two threads pinned to one CPU preempt each other: each thread's own
 * event flags its own elements. */
static void test_threads_each_flag_their_elements(void **state) {
  if (!perf_ok) skip();
  char dir[700];
  snprintf(dir, sizeof dir, "%s/dump-XXXXXX", la_td_dir(agent));
  assert_non_null(mkdtemp(dir));
  setenv("LA_DUMP_RAW", dir, 1);
  assert_int_equal(LA_register("interf", 0, 1, N_ELEM), 0);
  assert_int_equal(pin_to(current_cpu()), 0); /* threads inherit it */
  for (int c = 0; c < CYCLES; c++) {
    pthread_t t[2];
    la_test_span_t s[2] = {{0, N_ELEM / 2, ELEM_NS},
                           {N_ELEM / 2, N_ELEM / 2, ELEM_NS}};
    for (int i = 0; i < 2; i++)
      assert_int_equal(pthread_create(&t[i], NULL, la_test_probe_span, &s[i]),
                       0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    assert_int_equal(LA_dataXfer(), 0);
  }
  long half[2] = {0, 0};
  for (int c = 0; c < CYCLES; c++) {
    char p[800];
    uint8_t fl[N_ELEM];
    snprintf(p, sizeof p, "%s/%s.r0.c%d.flags", dir, LA_appId(), c);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    assert_int_equal(fread(fl, 1, N_ELEM, f), N_ELEM);
    fclose(f);
    for (int e = 0; e < N_ELEM; e++) half[e >= N_ELEM / 2] += fl[e] != 0;
  }
  print_message("threads: %ld and %ld elements flagged\n", half[0], half[1]);
  assert_true(half[0] > 0);
  assert_true(half[1] > 0);
}

/* ------------------------------------------------------------- fallback */

static void test_setting_off(void **state) {
  char dir[700];
  dump_stats_t st;
  setenv("LA_INTERFERENCE", "off", 1);
  run_elements(1, &st, dir, sizeof dir, "off (LA_INTERFERENCE=off)");
  assert_true(st.big > 0); /* there was interference to see */
  assert_int_equal(st.flagged, 0);
  assert_true(st.interference_ns == 0);
  assert_int_equal(LA_getStat(LA_STAT_FLAGGED), 0);
}

static void test_setting_bad_value(void **state) {
  setenv("LA_INTERFERENCE", "maybe", 1);
  assert_int_equal(LA_register("interf", 0, 1, N_ELEM), LA_ECONFIG);
  assert_non_null(strstr(LA_lastError(), "LA_INTERFERENCE"));
  assert_int_equal(LA_getStat(LA_STAT_REGISTERED), 0);
}

/* In a child that seccomp forbids perf_event_open (EACCES, as a container
 * runtime would): registration succeeds, detection is off with the reason,
 * probes still measure. Exit code: 0 ok, else the failed check. */
static int refused_child(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & 0xffff)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 10;
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return 11;
  if (LA_register("interf", 0, 1, 10) != 0) return 12;
  const char *s = LA_interference();
  if (strncmp(s, "off (perf_event_open: Permission denied", 39) != 0) {
    fprintf(stderr, "status: %s\n", s);
    return 13;
  }
  LA_startProbe(3);
  la_test_busy_ns(1000);
  LA_stopProbe(3);
  if (LA_dataXfer() != 0) return 14;
  if (LA_getStat(LA_STAT_FLAGGED) != 0) return 15;
  LA_finalize();
  return 0;
}

static void test_refused_by_kernel(void **state) {
  pid_t p = fork();
  assert_true(p >= 0);
  if (p == 0) _exit(refused_child());
  int status = 0;
  assert_int_equal(waitpid(p, &status, 0), p);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

static double count_probe(long e, void *arg) {
  return (double)++*(long *)arg;
}

static void test_metric_not_time(void **state) {
  static long n;
  assert_int_equal(LA_setProbeStartFunc(count_probe, &n), 0);
  assert_int_equal(LA_setProbeStopFunc(count_probe, &n), 0);
  setenv("LA_METRIC", "custom", 1);
  assert_int_equal(LA_register("interf", 0, 1, 10), 0);
  assert_string_equal(LA_interference(), "off (the metric is not time)");
  LA_setProbeStartFunc(NULL, NULL); /* back to the default metric */
  LA_setProbeStopFunc(NULL, NULL);
}

/* ------------------------------------------------------------ the timer */

/* Elements of a few timer steps (empty probes) are not resolved: the
 * LocalAgent counts such cycles (robust_coarse_cycles) and says once per
 * rank that their weights are not their cost and what to do (row, box or
 * range probes); elements of 2 us are not counted. */
static void test_light_elements_reported(void **state) {
  for (int light = 0; light <= 1; light++) {
    long long before = la_td_status_ll(agent, "robust_coarse_cycles");
    long long done = la_td_status_ll(agent, "cycles_compacted");
    assert_true(before >= 0 && done >= 0);
    assert_int_equal(LA_register("light", 0, 1, N_ELEM), 0);
    if (LA_getStat(LA_STAT_TIMER_RES_NS) <= 0) {
      print_message("skip: the timer's resolution is unknown\n");
      skip();
    }
    for (int c = 0; c < CYCLES; c++) {
      for (long e = 0; e < N_ELEM; e++) {
        LA_startProbe(e);
        if (!light) la_test_busy_ns(2000);
        LA_stopProbe(e);
      }
      assert_int_equal(LA_dataXfer(), 0);
    }
    assert_int_equal(LA_finalize(), 0);
    assert_int_equal(
        la_td_wait_status(agent, "cycles_compacted", done + CYCLES, 20000), 0);
    long long coarse = la_td_status_ll(agent, "robust_coarse_cycles") - before;
    print_message("%s elements: %lld of %d cycles below resolution\n",
                  light ? "empty" : "2 us", coarse, CYCLES);
    if (light) {
      /* a cycle whose elements all happened to read 0 counts no weight */
      assert_true(coarse >= CYCLES / 2);
      assert_int_equal(la_td_wait_log(agent, "below 6 timer steps", 10000),
                       0);
      assert_true(la_td_log_has(agent, "LA_startRow"));
    } else {
      assert_int_equal(coarse, 0);
    }
  }
}

static void test_timer_resolution_reported(void **state) {
  assert_int_equal(LA_register("interf", 0, 1, 10), 0);
  long res = LA_getStat(LA_STAT_TIMER_RES_NS);
  print_message("timer resolution: %ld ns\n", res);
  assert_true(res > 0);     /* measured, not unknown */
  assert_true(res < 20000); /* a usable wall-time timer */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_seq_word_moves_on_switch),
      cmocka_unit_test_setup_teardown(test_hog_flags_the_outliers, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_no_hog_few_flags, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads_each_flag_their_elements,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_setting_off, setup, teardown),
      cmocka_unit_test_setup_teardown(test_setting_bad_value, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused_by_kernel, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metric_not_time, setup, teardown),
      cmocka_unit_test_setup_teardown(test_light_elements_reported, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_timer_resolution_reported, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
