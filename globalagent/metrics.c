/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics.c: the GlobalAgent's metrics endpoint (metrics.listen): the
 * status report (control.c, without the store query) rendered as
 * la_globalagent_* metrics every metrics.interval and served over HTTP by
 * daemon/la_metrics.h. Off when metrics.listen is empty; a reload applies
 * [metrics] changes. Loop thread.
 *
 * agent_messages_total{host} must never go down while the daemon runs, or
 * rate() sees a reset: the messages of a host's closed links are kept here
 * and added to its live ones, for at most LA__HOSTS_KEPT hosts; the closed
 * links of hosts beyond those are summed in one host="(closed)" series.
 * Kept whether the endpoint is on or not (bounded), so a reload that turns
 * it on shows the totals since start. */
#include <stdlib.h>
#include <string.h>

#include "ga.h"
#include "la_metrics.h"
#include "la_status.h"

#define LA__HOSTS_KEPT 1024

typedef struct la__host_total {
  char host[LA_MAX_ID_LEN + 1];
  uint64_t messages;
} la__host_total_t;

static la_metrics_t *la__metrics;   /* the daemon's one endpoint, or NULL */
static la__host_total_t *la__hosts; /* closed links' totals, by host */
static size_t la__n_hosts, la__cap_hosts;
static uint64_t la__other; /* of hosts beyond LA__HOSTS_KEPT */

void la_ga_metrics_link_closed(const char *host, uint64_t messages) {
  if (!host[0] || messages == 0) return;
  for (size_t i = 0; i < la__n_hosts; i++)
    if (!strcmp(la__hosts[i].host, host)) {
      la__hosts[i].messages += messages;
      return;
    }
  if (la__n_hosts == la__cap_hosts && la__cap_hosts < LA__HOSTS_KEPT) {
    size_t cap = la__cap_hosts ? la__cap_hosts * 2 : 16;
    la__host_total_t *h = realloc(la__hosts, cap * sizeof *h);
    if (h) {
      la__hosts = h;
      la__cap_hosts = cap;
    }
  }
  if (la__n_hosts == la__cap_hosts) {
    la__other += messages;
    return;
  }
  la__host_total_t *h = &la__hosts[la__n_hosts++];
  snprintf(h->host, sizeof h->host, "%s", host);
  h->messages = messages;
}

/* The status report plus a row per kept host total (address "(closed)":
 * la_status_exposition sums the rows of a host). */
static La__StatusReply *la__snapshot(void *arg) {
  La__StatusReply *r = la_ga_status_reply(arg, 0);
  if (!r) return NULL;
  for (size_t i = 0; i < la__n_hosts; i++)
    la_status_agent(r, la__hosts[i].host, "(closed)", la__hosts[i].messages, 0);
  if (la__other) la_status_agent(r, "(closed)", "(closed)", la__other, 0);
  return r;
}

static la_metrics_conf_t la__conf(la_ga_t *ga) {
  la_metrics_conf_t c = {
      .listen = ga->set.metrics_listen,
      .port_file = ga->set.metrics_port_file,
      .prefix = "la_globalagent_",
      .interval_ms = (uint64_t)ga->set.metrics_interval_ms,
      .max_conns = (unsigned)ga->set.metrics_max_conns,
      .max_apps = (size_t)ga->set.metrics_max_apps,
      .snapshot = la__snapshot,
      .arg = ga,
  };
  return c;
}

int la_ga_metrics_start(la_ga_t *ga, char *why, size_t why_len) {
  la_metrics_conf_t c = la__conf(ga);
  return la_metrics_start(ga->loop, &c, &la__metrics, why, why_len);
}

void la_ga_metrics_reload(la_ga_t *ga) {
  la_metrics_conf_t c = la__conf(ga);
  la_metrics_reload(ga->loop, &c, &la__metrics);
}

void la_ga_metrics_stop(la_ga_t *ga) {
  (void)ga;
  la_metrics_stop(la__metrics);
  la__metrics = NULL;
  free(la__hosts);
  la__hosts = NULL;
  la__n_hosts = la__cap_hosts = 0;
  la__other = 0;
}
