/* SPDX-License-Identifier: BSD-3-Clause */
/* papi_probe.c: PAPI metrics for the probes ("cycles", "instructions",
 * "papi:EVENT").
 *
 * PAPI is optional. libla does not link libpapi: this file loads it with
 * dlopen (LA_PAPI_LIB, else the library named at build time, make's
 * PAPI_LIB) only when a PAPI metric is chosen, so a program profiling time
 * needs no PAPI installed; when it cannot be loaded, la__papi_init fails
 * with LA_EPAPI naming the library. Built with make PAPI=0 (no papi.h), the
 * PAPI metrics fail with LA_EPAPI saying so. It is loaded RTLD_GLOBAL, as
 * if linked: libsde, which a program links for software-defined events,
 * finds libpapi's hooks by name.
 *
 * PAPI is initialised only when a PAPI metric is chosen. Each thread that
 * probes gets its own event set on its first probe (per-thread readings, so
 * OpenMP loops work when each element is handled by one thread); a thread
 * that outlives one registration sets up a new event set in the next one,
 * and a thread that exits stops its event set and leaves PAPI. Once
 * initialised, PAPI stays so (and loaded) until the process exits:
 * PAPI_shutdown would free the records of threads that still live (a thread
 * pool) and make their next PAPI call crash.
 * Where the hardware lacks the event (these VMs have no hardware counters)
 * la__papi_init fails with LA_ENOEVENT naming the event, and LA_register
 * fails so the program runs unprofiled. Software-defined events
 * ("sde:::LIB::COUNTER") must be registered by their library before
 * LA_register: PAPI would accept any such name as a placeholder that reads
 * zero, so a misspelt one is refused here instead. Does not multiplex: one
 * event per run.
 */
#include <stdio.h>
#include <string.h>

#include "la_internal.h"

#ifndef LA_HAVE_PAPI
#define LA_HAVE_PAPI 1
#endif

#if !LA_HAVE_PAPI

int la__papi_init(const char *metric, const char *event) {
  return la__error(LA_EPAPI,
                   "metric '%s' needs PAPI (event '%s'), but this libla was "
                   "built without PAPI (make PAPI=0); use LA_METRIC=time",
                   metric, event);
}

const char *la__papi_strerror(int rc, char *buf, size_t len) {
  snprintf(buf, len, "PAPI error %d", rc);
  return buf;
}

double la__papi_read(long element, void *arg) {
  return 0.0;
}

void la__papi_shutdown(void) {}

#else /* LA_HAVE_PAPI */

#include <dlfcn.h>
#include <papi.h>
#include <pthread.h>
#include <stdlib.h>

#ifndef LA_PAPI_SONAME
#define LA_PAPI_SONAME "libpapi.so"
#endif

/* Every PAPI function this file calls, resolved from the loaded library
 * into la__pf (same names, papi.h's types). */
#define LA__PAPI_FUNCS(X)     \
  X(PAPI_add_event)           \
  X(PAPI_cleanup_eventset)    \
  X(PAPI_create_eventset)     \
  X(PAPI_destroy_eventset)    \
  X(PAPI_enum_cmp_event)      \
  X(PAPI_event_code_to_name)  \
  X(PAPI_event_name_to_code)  \
  X(PAPI_get_component_index) \
  X(PAPI_get_component_info)  \
  X(PAPI_is_initialized)      \
  X(PAPI_library_init)        \
  X(PAPI_num_components)      \
  X(PAPI_query_event)         \
  X(PAPI_read)                \
  X(PAPI_register_thread)     \
  X(PAPI_start)               \
  X(PAPI_stop)                \
  X(PAPI_strerror)            \
  X(PAPI_thread_init)         \
  X(PAPI_unregister_thread)

static struct {
#define LA__PAPI_FIELD(f) __typeof__(f) *f;
  LA__PAPI_FUNCS(LA__PAPI_FIELD)
#undef LA__PAPI_FIELD
} la__pf;
static void *la__lib; /* the loaded libpapi, never closed */

/* Loads libpapi and resolves la__pf once. Returns 0, or LA_EPAPI with an
 * error message naming the library (why, when quiet is 0). */
static int la__papi_load(const char *metric, int quiet) {
  if (la__lib) return 0;
  const char *name = getenv("LA_PAPI_LIB");
  if (!name || !*name) name = LA_PAPI_SONAME;
  void *h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    if (quiet) return LA_EPAPI;
    const char *why = dlerror();
    return la__error(LA_EPAPI,
                     "metric '%s' needs the PAPI library %s, which cannot be "
                     "loaded: %s (install PAPI, set LA_PAPI_LIB to its "
                     "libpapi.so, or use LA_METRIC=time)",
                     metric, name, why ? why : "unknown error");
  }
#define LA__PAPI_RESOLVE(f)                                   \
  if (!(la__pf.f = (__typeof__(la__pf.f))dlsym(h, #f))) {     \
    memset(&la__pf, 0, sizeof la__pf);                        \
    dlclose(h);                                               \
    return quiet ? LA_EPAPI                                   \
                 : la__error(LA_EPAPI,                        \
                             "the PAPI library %s has no " #f \
                             " (not PAPI, or too old)",       \
                             name);                           \
  }
  LA__PAPI_FUNCS(LA__PAPI_RESOLVE)
#undef LA__PAPI_RESOLVE
  la__lib = h;
  return 0;
}

static int la__code = PAPI_NULL;
static char la__event[LA__METRIC_LEN];
static int la__main_es = PAPI_NULL;
/* Counts initialisations: a thread's event set belongs to one of them. */
static int la__generation;
static __thread int la__tls_es = PAPI_NULL;
static __thread int la__tls_state; /* 0 untried, 1 ready, -1 failed */
static __thread int la__tls_generation;
/* Its destructor releases an exiting thread's event set. */
static pthread_key_t la__exit_key;
static pthread_once_t la__exit_once = PTHREAD_ONCE_INIT;

static unsigned long la__thread_id(void) {
  return (unsigned long)pthread_self();
}

const char *la__papi_strerror(int rc, char *buf, size_t len) {
  const char *s = la__papi_load(NULL, 1) ? NULL : la__pf.PAPI_strerror(rc);
  if (s && *s) return s;
  snprintf(buf, len, "PAPI error %d", rc);
  return buf;
}

/* Stops and frees an event set of the calling thread. */
static void la__es_free(int *es) {
  long long v;
  if (*es == PAPI_NULL) return;
  la__pf.PAPI_stop(*es, &v);
  la__pf.PAPI_cleanup_eventset(*es);
  la__pf.PAPI_destroy_eventset(es);
  *es = PAPI_NULL;
}

/* Runs in a probing thread as it exits. */
static void la__thread_exit(void *unused) {
  /* the registering thread's set is la__main_es, which LA_finalize frees */
  int mine = la__tls_generation == la__generation && la__tls_es == la__main_es;
  if (!mine) la__es_free(&la__tls_es);
  la__tls_es = PAPI_NULL;
  la__pf.PAPI_unregister_thread();
}

static void la__exit_key_create(void) {
  pthread_key_create(&la__exit_key, la__thread_exit);
}

/* Creates, fills and starts an event set for the calling thread. */
static int la__thread_setup(int *es, char *why, size_t why_len) {
  *es = PAPI_NULL;
  int rc = la__pf.PAPI_create_eventset(es);
  if (rc == PAPI_OK) rc = la__pf.PAPI_add_event(*es, la__code);
  if (rc == PAPI_OK) rc = la__pf.PAPI_start(*es);
  if (rc != PAPI_OK) {
    char buf[32];
    snprintf(why, why_len, "%s", la__papi_strerror(rc, buf, sizeof buf));
    if (*es != PAPI_NULL) {
      la__pf.PAPI_cleanup_eventset(*es);
      la__pf.PAPI_destroy_eventset(es);
    }
    *es = PAPI_NULL;
    return rc;
  }
  return PAPI_OK;
}

/* Writes "; disabled PAPI components: NAME (reason), ..." for the
 * components LA's events come from (perf_event*, sde) that are compiled in
 * but disabled here, or "" when none is. */
static void la__disabled_components(char *out, size_t len) {
  size_t n = 0;
  out[0] = '\0';
  for (int i = 0; i < la__pf.PAPI_num_components() && n < len; i++) {
    const PAPI_component_info_t *ci = la__pf.PAPI_get_component_info(i);
    if (!ci || !ci->disabled ||
        (strncmp(ci->name, "perf_event", 10) && strcmp(ci->name, "sde")))
      continue;
    int w = snprintf(out + n, len - n, "%s%s (%.60s)",
                     n ? ", " : "; disabled PAPI components: ", ci->name,
                     ci->disabled_reason);
    if (w < 0) break;
    n += (size_t)w;
  }
}

/* 1 when a library in this process registered the software-defined event
 * name ("sde:::LIB::COUNTER"), else 0. Enumerates without looking the name
 * up, since a lookup would create a placeholder. */
static int la__sde_registered(const char *name) {
  int cidx = la__pf.PAPI_get_component_index("sde");
  if (cidx < 0) return 0;
  int code = PAPI_NATIVE_MASK;
  int rc = la__pf.PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx);
  while (rc == PAPI_OK) {
    char have[PAPI_MAX_STR_LEN];
    if (la__pf.PAPI_event_code_to_name(code, have) == PAPI_OK &&
        !strcmp(have, name))
      return 1;
    rc = la__pf.PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx);
  }
  return 0;
}

/* What the user asked for, for every refusal: "metric 'cycles' (PAPI event
 * 'PAPI_TOT_CYC')", or "PAPI event 'EV'" for the metric "papi:EV". */
static const char *la__papi_subject(const char *metric, const char *event,
                                    char *buf, size_t len) {
  if (!strncmp(metric, "papi:", 5) && !strcmp(metric + 5, event))
    snprintf(buf, len, "PAPI event '%s'", event);
  else
    snprintf(buf, len, "metric '%s' (PAPI event '%s')", metric, event);
  return buf;
}

int la__papi_init(const char *metric, const char *event) {
  char buf[32], off[256], who[2 * PAPI_MAX_STR_LEN];
  int lrc = la__papi_load(metric, 0);
  if (lrc) return lrc;
  snprintf(la__event, sizeof la__event, "%s", event);
  la__papi_subject(metric, event, who, sizeof who);
  if (!la__pf.PAPI_is_initialized()) {
    int rc = la__pf.PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT)
      return la__error(
          LA_EPAPI, "%s: PAPI_library_init: %s", who,
          rc < 0 ? la__papi_strerror(rc, buf, sizeof buf) : "version mismatch");
    la__pf.PAPI_thread_init(la__thread_id);
  }
  pthread_once(&la__exit_once, la__exit_key_create);
  /* one running set per thread: drop this thread's from an earlier run */
  la__es_free(&la__tls_es);
  la__disabled_components(off, sizeof off);
  if (!strncmp(event, "sde:::", 6) && !la__sde_registered(event)) {
    la__papi_shutdown();
    return la__error(LA_ENOEVENT,
                     "%s unknown here: no library in this "
                     "program registered that software-defined counter "
                     "(papi_sde_register_counter before LA_register)%s",
                     who, off);
  }
  /* Every refusal below names the metric and the event: which path a
   * machine without hardware counters takes depends on its PAPI (perf_event
   * disabled: the preset is not available; perf_event with software events
   * only: the preset may resolve and then fail to start). */
  int rc = la__pf.PAPI_event_name_to_code(la__event, &la__code);
  if (rc != PAPI_OK) {
    la__papi_shutdown();
    return la__error(LA_ENOEVENT,
                     "%s unknown here (%s); papi_native_avail lists the "
                     "events this machine has%s; use LA_METRIC=time",
                     who, la__papi_strerror(rc, buf, sizeof buf), off);
  }
  if (la__pf.PAPI_query_event(la__code) != PAPI_OK) {
    la__papi_shutdown();
    return la__error(LA_ENOEVENT,
                     "%s cannot be counted on this machine (no such "
                     "hardware counter; VMs often have none%s); use "
                     "LA_METRIC=time",
                     who, off);
  }
  char why[160];
  if (la__thread_setup(&la__main_es, why, sizeof why) != PAPI_OK) {
    la__papi_shutdown();
    return la__error(LA_ENOEVENT,
                     "%s cannot be counted on this machine: %s (no such "
                     "hardware counter, or /proc/sys/kernel/"
                     "perf_event_paranoid forbids it%s); use LA_METRIC=time",
                     who, why, off);
  }
  la__generation++;
  la__tls_es = la__main_es;
  la__tls_state = 1;
  la__tls_generation = la__generation;
  return 0;
}

double la__papi_read(long element, void *arg) {
  long long v = 0;
  if (LA__UNLIKELY(la__tls_generation != la__generation)) {
    /* first probe of this thread in this registration: the event set of
     * an earlier one (a thread pool's thread) counted another event */
    la__es_free(&la__tls_es);
    la__tls_generation = la__generation;
    la__tls_state = 0;
  }
  if (LA__UNLIKELY(la__tls_state != 1)) {
    char why[160];
    if (la__tls_state == -1) return 0.0;
    la__pf.PAPI_register_thread();
    pthread_setspecific(la__exit_key, &la__tls_es);
    if (la__thread_setup(&la__tls_es, why, sizeof why) != PAPI_OK) {
      la__tls_state = -1;
      la__error(LA_EPAPI, "PAPI on a new thread: %s", why);
      return 0.0;
    }
    la__tls_state = 1;
  }
  la__pf.PAPI_read(la__tls_es, &v);
  return (double)v;
}

void la__papi_shutdown(void) {
  int es = la__main_es;
  la__es_free(&la__main_es);
  if (es != PAPI_NULL && la__tls_es == es) {
    la__tls_es = PAPI_NULL;
    la__tls_state = 0;
  }
  la__code = PAPI_NULL;
}

#endif /* LA_HAVE_PAPI */
