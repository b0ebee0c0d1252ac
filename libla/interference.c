/* SPDX-License-Identifier: BSD-3-Clause */
/* interference.c: detects, at the probe, that a timed element's thread was
 * switched out (preempted or blocked) between LA_startProbe and LA_stopProbe.
 *
 * Each probing thread opens one perf software event, context switches of
 * this thread on any CPU, and maps its user page read-only. The kernel
 * rewrites that page, bumping its `lock` sequence word, whenever the event
 * is scheduled back in, i.e. after every switch of the thread. The inline
 * probes of la.h remember the word at start and compare it at stop: two
 * loads, no system call. A changed word flags the element in the buffer's
 * flag bytes and adds the interval to the buffer's interference time
 * (la__interf_hit, off the hot path). The event is opened lazily on a
 * thread's first probe with detection on and closed at thread exit (or, for
 * the thread that calls it, at LA_finalize).
 *
 * Also owns what is shown about measurement fidelity: the detection status
 * ("on" / "off (reason)"), the timer's resolution, and the run's totals of
 * flagged element-cycles and interference time.
 *
 * It does not change measured values (exact totals stay as they are; the
 * flag lets a consumer leave the element-cycle out of a robust weight), does
 * not count the switches (the event's count is never read), and does not
 * detect interference that does not switch the thread out (SMT siblings,
 * cache or memory-bandwidth contention, frequency changes).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "la_interference.h"

LA_EXPORT __thread la__tls_t la__tls __attribute__((tls_model("initial-exec")));

/* The page and descriptor of the calling thread's event. */
static __thread struct {
  void *page;
  int fd;
} la__thr = {NULL, -1};

static const uint32_t la__still = 0; /* the word of threads without event */

static struct {
  char status[160];
  pthread_key_t key; /* destructor closes a thread's event at its exit */
  int key_made;
  double ns_per_tick;
  double timer_res_ns;
  uint8_t *flags;                       /* of the current cycle's buffer */
  la_shm_bufmeta_t *meta;               /* of the current cycle's buffer */
  uint64_t flagged, interference_ticks; /* totals since LA_register */
  uint32_t buf;                         /* the current cycle's buffer */
  uint32_t dirty; /* bit i: buffer i's flags may hold a set byte (its last
                     cycle flagged an element); a new segment is clean */
} la__if = {.status = "off (not registered)", .ns_per_tick = 1.0};

static pthread_once_t la__once = PTHREAD_ONCE_INIT;

static void la__close_thread(void) {
  if (la__thr.page) munmap(la__thr.page, (size_t)sysconf(_SC_PAGESIZE));
  if (la__thr.fd >= 0) close(la__thr.fd);
  la__thr.page = NULL;
  la__thr.fd = -1;
  la__tls.seq = NULL;
}

static void la__thread_exit(void *arg) {
  (void)arg;
  la__close_thread();
}

/* In a forked child the inherited event measures the parent's thread. */
static void la__atfork_child(void) {
  la__close_thread();
}

static void la__once_init(void) {
  la__if.key_made = pthread_key_create(&la__if.key, la__thread_exit) == 0;
  pthread_atfork(NULL, NULL, la__atfork_child);
}

/* Opens the event of the calling thread. 0, or -errno with *what naming
 * the step that failed. */
static int la__open_thread(const char **what) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
  long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0 && errno == EACCES) { /* paranoid: user space only */
    a.exclude_kernel = a.exclude_hv = 1;
    fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  }
  if (fd < 0) {
    *what = "perf_event_open";
    return -errno;
  }
  void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED,
                 (int)fd, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    close((int)fd);
    *what = "mmap of the perf event page";
    return -err;
  }
  la__thr.fd = (int)fd;
  la__thr.page = p;
  la__tls.seq = &((struct perf_event_mmap_page *)p)->lock;
  if (la__if.key_made) pthread_setspecific(la__if.key, p); /* non-NULL */
  return 0;
}

LA_EXPORT const volatile uint32_t *la__interf_thread(void) {
  const char *what = "";
  if (la__thr.page == NULL && la__open_thread(&what) != 0)
    la__tls.seq = &la__still; /* do not retry on every probe */
  return la__tls.seq;
}

LA_EXPORT void la__interf_hit(long e, uint64_t ticks) {
  /* each pointer read once: a late probe racing the end sees both or none */
  uint8_t *f = __atomic_load_n(&la__if.flags, __ATOMIC_RELAXED);
  la_shm_bufmeta_t *m = __atomic_load_n(&la__if.meta, __ATOMIC_RELAXED);
  if (f == NULL || m == NULL) return;
  if (!(f[e] & LA_SHM_FLAG_INTERFERED)) {
    f[e] |= LA_SHM_FLAG_INTERFERED; /* the element is this thread's */
    __atomic_fetch_add(&m->n_flagged, 1, __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(&m->interference_ticks, ticks, __ATOMIC_RELAXED);
}

int la__interf_init(int fast, double ns_per_tick, double timer_res_ns) {
  pthread_once(&la__once, la__once_init);
  la__if.ns_per_tick = ns_per_tick > 0 ? ns_per_tick : 1.0;
  la__if.timer_res_ns = timer_res_ns;
  la__if.flagged = la__if.interference_ticks = 0;
  la__if.dirty = 0;
  la__if.flags = NULL;
  la__if.meta = NULL;
  la__hot.detect = 0;
  const char *v = getenv("LA_INTERFERENCE");
  int mode = 0; /* auto */
  if (v && *v) {
    if (!strcmp(v, "off") || !strcmp(v, "0"))
      mode = -1;
    else if (!strcmp(v, "on") || !strcmp(v, "1"))
      mode = 1;
    else if (strcmp(v, "auto") != 0)
      return la__error(LA_ECONFIG,
                       "LA_INTERFERENCE='%s': expected auto, on "
                       "or off",
                       v);
  }
  if (mode < 0) {
    snprintf(la__if.status, sizeof la__if.status, "off (LA_INTERFERENCE=off)");
    return 0;
  }
  if (!fast) {
    snprintf(la__if.status, sizeof la__if.status,
             "off (the metric is not time)");
    return 0;
  }
  /* Open the registering thread's event now: a refusal shows here. */
  const char *what = "";
  int rc = la__thr.page ? 0 : la__open_thread(&what);
  if (rc) {
    char extra[64] = "";
    if (rc == -EACCES || rc == -EPERM) {
      FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
      int lvl;
      if (f && fscanf(f, "%d", &lvl) == 1)
        snprintf(extra, sizeof extra, "; kernel.perf_event_paranoid=%d", lvl);
      if (f) fclose(f);
    }
    snprintf(la__if.status, sizeof la__if.status, "off (%s: %s%s)", what,
             strerror(-rc), extra);
    la__info("interference detection %s", la__if.status);
    return 0;
  }
  snprintf(la__if.status, sizeof la__if.status, "on");
  la__hot.detect = 1;
  return 0;
}

void la__interf_begin(uint8_t *flags, la_shm_bufmeta_t *meta, uint64_t n,
                      uint32_t buf) {
  if (!la__hot.detect) return;
  /* flags are set only here, by this process: a buffer whose last cycle
   * flagged nothing still has them all clear (a row-probed or quiet cycle
   * then skips a pass over n bytes) */
  if (la__if.dirty & (1u << buf)) memset(flags, 0, (size_t)n);
  la__if.dirty &= ~(1u << buf);
  la__if.buf = buf;
  meta->interference_ticks = 0;
  meta->n_flagged = 0;
  la__if.flags = flags;
  la__if.meta = meta;
}

void la__interf_end(void) {
  if (la__if.meta) {
    if (la__if.meta->n_flagged) la__if.dirty |= 1u << la__if.buf;
    la__if.flagged += la__if.meta->n_flagged;
    la__if.interference_ticks += la__if.meta->interference_ticks;
  }
  la__if.flags = NULL;
  la__if.meta = NULL;
}

void la__interf_shutdown(void) {
  la__interf_end();
  la__hot.detect = 0;
  la__close_thread();
  if (la__if.key_made) pthread_setspecific(la__if.key, NULL);
}

void la__interf_fill_register(La__RegisterRequest *req) {
  req->has_timer_res_ns = 1;
  req->timer_res_ns = la__if.timer_res_ns;
  req->interference = la__if.status;
}

void la__interf_fill_ready(La__DataReady *d, const la_shm_bufmeta_t *meta,
                           double scale) {
  if (!la__hot.detect) return;
  d->has_n_flagged = d->has_interference_ns = 1;
  d->n_flagged = meta->n_flagged;
  d->interference_ns = (uint64_t)((double)meta->interference_ticks * scale);
}

long la__interf_stat(int which) {
  switch (which) {
    case LA_STAT_TIMER_RES_NS: {
      long r = (long)la__if.timer_res_ns;
      return (double)r < la__if.timer_res_ns ? r + 1 : r;
    }
    case LA_STAT_FLAGGED:
      return (long)la__if.flagged;
    case LA_STAT_INTERFERENCE_NS:
      return (long)((double)la__if.interference_ticks * la__if.ns_per_tick);
    default:
      return LA_EINVAL;
  }
}

LA_EXPORT const char *LA_interference(void) {
  return la__if.status;
}
