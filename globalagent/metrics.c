/* metrics.c: the GlobalAgent's metrics endpoint (metrics.listen): the
 * status report (control.c, without the store query) rendered as
 * la_globalagent_* metrics every metrics.interval and served over HTTP by
 * common/la_metrics.h. Off when metrics.listen is empty. Loop thread. */
#include "ga.h"
#include "la_metrics.h"

static la_metrics_t *la__metrics; /* the daemon's one endpoint, or NULL */

static La__StatusReply *la__snapshot(void *arg) {
  return la_ga_status_reply(arg, 0);
}

int la_ga_metrics_start(la_ga_t *ga, char *why, size_t why_len) {
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
  return la_metrics_start(ga->loop, &c, &la__metrics, why, why_len);
}

void la_ga_metrics_stop(la_ga_t *ga) {
  (void)ga;
  la_metrics_stop(la__metrics);
  la__metrics = NULL;
}
