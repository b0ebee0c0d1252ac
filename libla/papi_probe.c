/* papi_probe.c: PAPI metrics for the probes ("cycles", "instructions",
 * "papi:EVENT").
 *
 * PAPI is initialised only when a PAPI metric is chosen. Each thread that
 * probes gets its own event set on its first probe (per-thread readings, so
 * OpenMP loops work when each element is handled by one thread). Where the
 * hardware lacks the event (these VMs have no hardware counters) la__papi_init
 * fails with LA_ENOEVENT naming the event, and LA_register fails so the
 * program runs unprofiled. Does not multiplex: one event per run.
 */
#include <papi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "la_internal.h"

static int la__code = PAPI_NULL;
static char la__event[LA__METRIC_LEN];
static int la__we_initialised;
static int la__main_es = PAPI_NULL;
static __thread int la__tls_es = PAPI_NULL;
static __thread int la__tls_state; /* 0 untried, 1 ready, -1 failed */

static unsigned long la__thread_id(void) {
  return (unsigned long)pthread_self();
}

/* Creates, fills and starts an event set for the calling thread. */
static int la__thread_setup(int *es, char *why, size_t why_len) {
  *es = PAPI_NULL;
  int rc = PAPI_create_eventset(es);
  if (rc == PAPI_OK) rc = PAPI_add_event(*es, la__code);
  if (rc == PAPI_OK) rc = PAPI_start(*es);
  if (rc != PAPI_OK) {
    snprintf(why, why_len, "%s", PAPI_strerror(rc));
    if (*es != PAPI_NULL) {
      PAPI_cleanup_eventset(*es);
      PAPI_destroy_eventset(es);
    }
    *es = PAPI_NULL;
    return rc;
  }
  return PAPI_OK;
}

int la__papi_init(const char *event) {
  snprintf(la__event, sizeof la__event, "%s", event);
  if (!PAPI_is_initialized()) {
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT)
      return la__error(LA_EPAPI, "PAPI_library_init: %s",
                       rc < 0 ? PAPI_strerror(rc) : "version mismatch");
    la__we_initialised = 1;
    PAPI_thread_init(la__thread_id);
  }
  int rc = PAPI_event_name_to_code(la__event, &la__code);
  if (rc != PAPI_OK) {
    la__papi_shutdown();
    return la__error(LA_ENOEVENT,
                     "PAPI event '%s' unknown here (%s); papi_avail and "
                     "papi_native_avail list the events this machine has",
                     event, PAPI_strerror(rc));
  }
  if (PAPI_query_event(la__code) != PAPI_OK) {
    la__papi_shutdown();
    return la__error(LA_ENOEVENT,
                     "PAPI event '%s' is not available on this hardware (no "
                     "such counter; VMs often have none); use LA_METRIC=time "
                     "or a software event such as papi:perf::TASK-CLOCK",
                     event);
  }
  char why[160];
  if (la__thread_setup(&la__main_es, why, sizeof why) != PAPI_OK) {
    la__papi_shutdown();
    return la__error(LA_ENOEVENT,
                     "PAPI event '%s' cannot be counted here: %s (check "
                     "/proc/sys/kernel/perf_event_paranoid)",
                     event, why);
  }
  la__tls_es = la__main_es;
  la__tls_state = 1;
  return 0;
}

double la__papi_read(long element, void *arg) {
  long long v = 0;
  if (LA__UNLIKELY(la__tls_state != 1)) {
    char why[160];
    if (la__tls_state == -1) return 0.0;
    PAPI_register_thread();
    if (la__thread_setup(&la__tls_es, why, sizeof why) != PAPI_OK) {
      la__tls_state = -1;
      la__error(LA_EPAPI, "PAPI on a new thread: %s", why);
      return 0.0;
    }
    la__tls_state = 1;
  }
  PAPI_read(la__tls_es, &v);
  return (double)v;
}

void la__papi_shutdown(void) {
  if (la__main_es != PAPI_NULL) {
    long long v;
    PAPI_stop(la__main_es, &v);
    PAPI_cleanup_eventset(la__main_es);
    PAPI_destroy_eventset(&la__main_es);
    la__main_es = PAPI_NULL;
  }
  la__tls_es = PAPI_NULL;
  la__tls_state = 0;
  la__code = PAPI_NULL;
  if (la__we_initialised) {
    PAPI_shutdown();
    la__we_initialised = 0;
  }
}
