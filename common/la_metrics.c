/* la_metrics.c: the loop side of the metrics endpoint (see la_metrics.h):
 * timer, rendering, publication; the HTTP side is la_metrics_http.c. */
#include "la_metrics.h"

#include <stdio.h>
#include <stdlib.h>

#include "la_daemon.h"
#include "la_errcodes.h"
#include "la_log.h"
#include "la_metrics_http.h"
#include "la_status.h"

struct la_metrics {
  uv_timer_t timer; /* first: closed by the daemon's shutdown walk */
  la_metrics_conf_t conf;
  la_metrics_http_t *http;
};

/* Renders a snapshot and hands it to the HTTP thread (loop thread). */
static void la__publish(la_metrics_t *m) {
  La__StatusReply *r = m->conf.snapshot(m->conf.arg);
  if (!r) return;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f) {
    int rc = la_status_exposition(r, m->conf.prefix, m->conf.max_apps, f);
    if (fclose(f) == 0 && rc == 0) la_metrics_http_publish(m->http, text, len);
  }
  free(text);
  la_status_free(r);
}

static void la__on_timer(uv_timer_t *t) {
  la__publish((la_metrics_t *)t);
}

int la_metrics_start(uv_loop_t *loop, const la_metrics_conf_t *c,
                     la_metrics_t **out, char *why, size_t why_len) {
  *out = NULL;
  if (!c->listen || !c->listen[0]) return 0;
  la_metrics_t *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(why, why_len, "metrics: out of memory");
    return LA_ENOMEM;
  }
  m->conf = *c;
  char bound[300], err[300];
  uint16_t port = 0;
  int rc = la_metrics_http_start(c->listen, c->max_conns, 10, &m->http, bound,
                                 sizeof bound, &port, err, sizeof err);
  if (rc != 0) {
    snprintf(why, why_len, "metrics.listen: %s", err);
    free(m);
    return rc;
  }
  if (c->port_file && c->port_file[0] &&
      la_daemon_write_number(c->port_file, port) != 0) {
    snprintf(why, why_len, "cannot write metrics.port_file %s", c->port_file);
    la_metrics_http_stop(m->http);
    free(m);
    return LA_EIO;
  }
  la__publish(m);
  uv_timer_init(loop, &m->timer);
  uv_timer_start(&m->timer, la__on_timer, c->interval_ms, c->interval_ms);
  uv_unref((uv_handle_t *)&m->timer);
  la_log_info(
      "metrics: serving http://%s/metrics (no authentication: keep "
      "it on loopback or behind the node's firewall)",
      bound);
  *out = m;
  return 0;
}

void la_metrics_stop(la_metrics_t *m) {
  if (!m) return;
  la_log_info("metrics: stopped after %llu requests",
              (unsigned long long)la_metrics_http_requests(m->http));
  la_metrics_http_stop(m->http);
  free(m);
}
