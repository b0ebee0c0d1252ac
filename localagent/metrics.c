/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c: the LocalAgent's metrics endpoint (metrics.listen): the
 * status report (control.c) rendered as la_localagent_* metrics every
 * metrics.interval and served over HTTP by daemon/la_metrics.h. Off when
 * metrics.listen is empty; a reload applies [metrics] changes. The
 * per-application counters keep the counts of ranks that ended
 * (daemon/la_metrics_carry.h). Loop thread. */
#include "agent.h"
#include "la_metrics.h"
#include "la_metrics_carry.h"

static la_metrics_t *la__metrics;     /* the daemon's one endpoint, or NULL */
static la_metrics_carry_t *la__carry; /* ended ranks' per-app counts */

/* The status report, each application's counters with those of its ranks
 * that ended (they never go down while it runs). */
static La__StatusReply *la__snapshot(void *arg) {
  La__StatusReply *r = la_status_reply(arg);
  if (r) la_metrics_carry_apply(&la__carry, r);
  return r;
}

static la_metrics_conf_t la__conf(la_agent_t *ag) {
  la_metrics_conf_t c = {
      .listen = ag->set.metrics_listen,
      .port_file = ag->set.metrics_port_file,
      .prefix = "la_localagent_",
      .interval_ms = (uint64_t)ag->set.metrics_interval_ms,
      .max_conns = (unsigned)ag->set.metrics_max_conns,
      .max_apps = (size_t)ag->set.max_apps,
      .snapshot = la__snapshot,
      .arg = ag,
  };
  return c;
}

int la_agent_metrics_start(la_agent_t *ag, char *why, size_t why_len) {
  la_metrics_conf_t c = la__conf(ag);
  return la_metrics_start(ag->loop, &c, &la__metrics, why, why_len);
}

void la_agent_metrics_reload(la_agent_t *ag) {
  la_metrics_conf_t c = la__conf(ag);
  la_metrics_reload(ag->loop, &c, &la__metrics);
}

void la_agent_metrics_stop(la_agent_t *ag) {
  (void)ag;
  la_metrics_stop(la__metrics);
  la__metrics = NULL;
  la_metrics_carry_free(la__carry);
  la__carry = NULL;
}
