/* SPDX-License-Identifier: BSD-3-Clause */
/* settings.c: what the program chose with LA_set*, overridden by LA_*
 * environment variables, resolved once by LA_register.
 *
 * LA_setPeriod, LA_setPolicy, LA_enable/LA_disable and (metric custom)
 * the probe functions also change a registration in force, from the next
 * cycle on; the other settings are fixed by LA_register, and their setters
 * return LA_ESTATE while it is in force.
 *
 * Defaults: period 1, metric "time", policy wait, 4 buffers, agent
 * 127.0.0.1:7461, compaction as the agent is configured, wait timeout 10 s,
 * connect timeout 2 s. The environment wins over the program so that a user
 * can change a run without rebuilding. A bad environment value makes
 * LA_register fail with LA_ECONFIG naming the variable; the program then runs
 * unprofiled. Owns the program's choices; knows nothing of IPC or sockets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "la_internal.h"

static struct {
  int period; /* in force: the program's, or LA_PERIOD's once resolved */
  char metric[LA__METRIC_LEN];
  int policy; /* in force: the program's, or LA_POLICY's once resolved */
  int prog_period, prog_policy; /* what the program chose */
  int n_buffers;
  char agent[256];
  char compact[256];
  char app_id[LA_MAX_APP_ID + 1];
  int disabled;        /* LA_disable() */
  int period_from_env; /* LA_PERIOD set: LA_setPeriod sets prog_period only */
  int policy_from_env; /* LA_POLICY set: LA_setPolicy sets prog_policy only */
  LA_ProbeFunc start, stop;
  void *start_arg, *stop_arg;
  unsigned probe_gen; /* changes whenever start, stop or their args do */
  char in_force[LA__METRIC_LEN]; /* the registration's metric, "" when
                                    none is in force (lifecycle.c says) */
} la__prog = {
    .period = 1, .metric = "", .policy = LA_POLICY_WAIT, .prog_period = 1,
    .prog_policy = LA_POLICY_WAIT, .n_buffers = 4};

static int la__copy(char *dst, size_t cap, const char *src) {
  if (!src || strlen(src) >= cap) return LA_EINVAL;
  memcpy(dst, src, strlen(src) + 1);
  return 0;
}

LA_EXPORT int LA_setPeriod(int period) {
  if (period < 1)
    return la__error(LA_EINVAL, "period %d (must be >= 1)", period);
  la__prog.prog_period = period;
  if (!la__prog.period_from_env) la__prog.period = period;
  return 0;
}

void la__settings_registered(const char *metric) {
  snprintf(la__prog.in_force, sizeof la__prog.in_force, "%s",
           metric ? metric : "");
}

/* The metric of the registration in force, NULL when there is none. */
static const char *la__in_force(void) {
  return la__prog.in_force[0] ? la__prog.in_force : NULL;
}

/* LA_ESTATE for a setting the registration in force has fixed (call names
 * the call), 0 when there is none (before LA_register, after LA_finalize,
 * after a failed registration or a lost agent: the value is then for the
 * next LA_register). */
static int la__fixed(const char *call, const char *what) {
  const char *metric = la__in_force();
  if (!metric) return 0;
  return la__error(LA_ESTATE,
                   "%s while registered: %s is fixed at LA_register "
                   "(metric '%s'); call it before LA_register or after "
                   "LA_finalize",
                   call, what, metric);
}

LA_EXPORT int LA_setMetric(const char *metric) {
  int rc = la__fixed("LA_setMetric", "the metric");
  if (rc) return rc;
  if (!metric || !*metric ||
      la__copy(la__prog.metric, sizeof la__prog.metric, metric))
    return la__error(LA_EINVAL, "metric name empty or too long");
  return 0;
}

LA_EXPORT int LA_setPolicy(int policy) {
  if (policy != LA_POLICY_WAIT && policy != LA_POLICY_SKIP)
    return la__error(LA_EINVAL, "policy %d (LA_POLICY_WAIT or LA_POLICY_SKIP)",
                     policy);
  la__prog.prog_policy = policy;
  if (!la__prog.policy_from_env) la__prog.policy = policy;
  return 0;
}

LA_EXPORT int LA_setBuffers(int n) {
  int rc = la__fixed("LA_setBuffers", "the number of buffers");
  if (rc) return rc;
  if (n < (int)LA_SHM_MIN_BUFFERS || n > (int)LA_SHM_MAX_BUFFERS)
    return la__error(LA_EINVAL, "buffers %d outside %u..%u", n,
                     LA_SHM_MIN_BUFFERS, LA_SHM_MAX_BUFFERS);
  la__prog.n_buffers = n;
  return 0;
}

LA_EXPORT int LA_setAgent(const char *host_port) {
  int rc = la__fixed("LA_setAgent", "the agent");
  if (rc) return rc;
  if (!host_port || la__copy(la__prog.agent, sizeof la__prog.agent, host_port))
    return la__error(LA_EINVAL, "agent address empty or too long");
  return 0;
}

LA_EXPORT int LA_setCompaction(const char *spec) {
  int rc = la__fixed("LA_setCompaction", "the compaction");
  if (rc) return rc;
  if (!spec || la__copy(la__prog.compact, sizeof la__prog.compact, spec))
    return la__error(LA_EINVAL, "compaction spec empty or too long");
  return 0;
}

LA_EXPORT int LA_setAppId(const char *app_id) {
  int rc = la__fixed("LA_setAppId", "the application id");
  if (rc) return rc;
  if (!app_id || !*app_id ||
      la__copy(la__prog.app_id, sizeof la__prog.app_id, app_id))
    return la__error(LA_EINVAL, "application id empty or longer than %d",
                     LA_MAX_APP_ID);
  return 0;
}

/* Sets one of the probe functions (stop: which). While registered they
 * may change only with the metric custom; the lifecycle installs them at
 * the next cycle boundary (none left: the probes measure nothing). */
static int la__set_probe(int stop, LA_ProbeFunc fn, void *arg) {
  const char *call = stop ? "LA_setProbeStopFunc" : "LA_setProbeStartFunc";
  const char *metric = la__in_force();
  if (metric && strcmp(metric, "custom"))
    return la__error(LA_ESTATE,
                     "%s while registered with metric '%s': probe functions "
                     "take over at run time only from probe functions "
                     "(metric custom); set them before LA_register",
                     call, metric);
  if (stop) {
    la__prog.stop = fn;
    la__prog.stop_arg = arg;
  } else {
    la__prog.start = fn;
    la__prog.start_arg = arg;
  }
  la__prog.probe_gen++;
  return 0;
}

LA_EXPORT int LA_setProbeStartFunc(LA_ProbeFunc fn, void *arg) {
  return la__set_probe(0, fn, arg);
}

LA_EXPORT int LA_setProbeStopFunc(LA_ProbeFunc fn, void *arg) {
  return la__set_probe(1, fn, arg);
}

LA_EXPORT int LA_enable(void) {
  la__prog.disabled = 0;
  return 0;
}

LA_EXPORT int LA_disable(void) {
  la__prog.disabled = 1;
  return 0;
}

int la__settings_app_id_set(void) {
  return la__prog.app_id[0] != '\0';
}

int la__settings_enabled(void) {
  return !la__prog.disabled;
}
int la__settings_period(void) {
  return la__prog.period;
}
int la__settings_policy(void) {
  return la__prog.policy;
}
unsigned la__settings_probe_gen(void) {
  return la__prog.probe_gen;
}
int la__settings_has_custom_probe(void) {
  return la__prog.start != NULL || la__prog.stop != NULL;
}

void la__settings_probe_funcs(LA_ProbeFunc *start, void **start_arg,
                              LA_ProbeFunc *stop, void **stop_arg) {
  /* One function given: it serves as both start and stop reading. */
  *start = la__prog.start ? la__prog.start : la__prog.stop;
  *start_arg = la__prog.start ? la__prog.start_arg : la__prog.stop_arg;
  *stop = la__prog.stop ? la__prog.stop : la__prog.start;
  *stop_arg = la__prog.stop ? la__prog.stop_arg : la__prog.start_arg;
}

/* ---------------------------------------------------------- environment */

static int la__env_int(const char *name, int lo, int hi, int *out) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || x < lo || x > hi)
    return la__error(LA_ECONFIG, "%s=%s: expected an integer in %d..%d", name,
                     v, lo, hi);
  *out = (int)x;
  return 0;
}

static int la__env_bool(const char *name, int *out) {
  const char *v = getenv(name);
  if (!v) return 0;
  if (!*v || !strcmp(v, "1") || !strcasecmp(v, "yes") ||
      !strcasecmp(v, "true") || !strcasecmp(v, "on"))
    *out = 1;
  else if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") ||
           !strcasecmp(v, "off"))
    *out = 0;
  else
    return la__error(LA_ECONFIG, "%s=%s: expected 1/0, yes/no, true/false",
                     name, v);
  return 0;
}

static int la__env_str(const char *name, char *dst, size_t cap) {
  const char *v = getenv(name);
  if (!v || !*v) return 0;
  if (strlen(v) >= cap)
    return la__error(LA_ECONFIG, "%s: value longer than %zu bytes", name,
                     cap - 1);
  memcpy(dst, v, strlen(v) + 1);
  return 0;
}

/* Whether variable name is set and not empty (la__env_str then took it). */
static int la__env_set(const char *name) {
  const char *v = getenv(name);
  return v && *v;
}

const char *la__settings_label(const la__settings_t *s, unsigned which,
                               char *buf, size_t len) {
  const char *env = "LA_METRIC", *setter = "LA_setMetric", *what = "metric";
  const char *value = s->metric;
  int program = la__prog.metric[0] != '\0';
  if (which == LA__FROM_AGENT) {
    env = "LA_AGENT", setter = "LA_setAgent", what = "agent address";
    value = s->agent, program = la__prog.agent[0] != '\0';
  } else if (which == LA__FROM_COMPACT) {
    env = "LA_COMPACT", setter = "LA_setCompaction", what = "compaction";
    value = s->compact, program = la__prog.compact[0] != '\0';
  }
  if (s->from_env & which)
    snprintf(buf, len, "%s=%s", env, value);
  else if (program)
    snprintf(buf, len, "%s(\"%s\")", setter, value);
  else
    snprintf(buf, len, "the default %s '%s'", what, value);
  return buf;
}

int la__settings_resolve(la__settings_t *s) {
  memset(s, 0, sizeof *s);
  s->period = la__prog.prog_period;
  s->policy = la__prog.prog_policy;
  s->n_buffers = la__prog.n_buffers;
  s->disabled = la__prog.disabled;
  s->wait_timeout_ms = 10000;
  s->connect_timeout_ms = 2000;
  snprintf(s->metric, sizeof s->metric, "%s",
           la__prog.metric[0]                ? la__prog.metric
           : la__settings_has_custom_probe() ? "custom"
                                             : "time");
  snprintf(s->agent, sizeof s->agent, "%s",
           la__prog.agent[0] ? la__prog.agent : LA__DEFAULT_AGENT);
  snprintf(s->compact, sizeof s->compact, "%s", la__prog.compact);
  snprintf(s->app_id, sizeof s->app_id, "%s", la__prog.app_id);

  int rc = 0;
  rc = rc ? rc : la__env_bool("LA_VERBOSE", &s->verbose);
  la__set_verbose(s->verbose, -1);
  rc = rc ? rc : la__env_bool("LA_DISABLE", &s->disabled);
  rc = rc ? rc : la__env_int("LA_PERIOD", 1, 1000000000, &s->period);
  rc = rc ? rc : la__env_str("LA_METRIC", s->metric, sizeof s->metric);
  s->from_env |= la__env_set("LA_METRIC") ? LA__FROM_METRIC : 0;
  rc = rc ? rc
          : la__env_int("LA_BUFFERS", LA_SHM_MIN_BUFFERS, LA_SHM_MAX_BUFFERS,
                        &s->n_buffers);
  rc = rc ? rc : la__env_str("LA_AGENT", s->agent, sizeof s->agent);
  s->from_env |= la__env_set("LA_AGENT") ? LA__FROM_AGENT : 0;
  rc = rc ? rc : la__env_str("LA_COMPACT", s->compact, sizeof s->compact);
  s->from_env |= la__env_set("LA_COMPACT") ? LA__FROM_COMPACT : 0;
  rc = rc ? rc : la__env_str("LA_APP_ID", s->app_id, sizeof s->app_id);
  s->app_id_random = 1;
  rc = rc ? rc : la__env_bool("LA_APP_ID_RANDOM", &s->app_id_random);
  rc = rc ? rc
          : la__env_int("LA_WAIT_TIMEOUT_MS", 0, 86400000, &s->wait_timeout_ms);
  rc = rc ? rc
          : la__env_int("LA_CONNECT_TIMEOUT_MS", 1, 600000,
                        &s->connect_timeout_ms);
  rc = rc ? rc : la__env_str("LA_DUMP_RAW", s->dump_raw, sizeof s->dump_raw);
  if (rc) return rc;
  const char *p = getenv("LA_POLICY");
  if (p && *p) {
    if (!strcasecmp(p, "wait"))
      s->policy = LA_POLICY_WAIT;
    else if (!strcasecmp(p, "skip"))
      s->policy = LA_POLICY_SKIP;
    else
      return la__error(LA_ECONFIG, "LA_POLICY=%s: expected wait or skip", p);
  }
  const char *t = getenv("LA_TIMER");
  if (t && *t) {
    if (!strcasecmp(t, "auto"))
      s->timer = 0;
    else if (!strcasecmp(t, "tsc"))
      s->timer = 1;
    else if (!strcasecmp(t, "clock"))
      s->timer = 2;
    else
      return la__error(LA_ECONFIG, "LA_TIMER=%s: expected auto, tsc or clock",
                       t);
  }
  /* LA_PERIOD and LA_POLICY also fix the run-time period and policy that
   * LA_setPeriod and LA_setPolicy control. */
  la__prog.period = s->period;
  la__prog.period_from_env = getenv("LA_PERIOD") && *getenv("LA_PERIOD");
  la__prog.policy = s->policy;
  la__prog.policy_from_env = p && *p;
  return 0;
}
