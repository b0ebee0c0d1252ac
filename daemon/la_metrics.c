/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics.c: the loop side of the metrics endpoint (see la_metrics.h):
 * timer, rendering (the daemon's status, then the process_* metrics),
 * publication, and a reload's changes; the HTTP side is la_metrics_http.c.
 */
#include "la_metrics.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_daemon.h"
#include "la_errcodes.h"
#include "la_log.h"
#include "la_metrics_http.h"
#include "la_metrics_process.h"
#include "la_status.h"

struct la_metrics {
  uv_timer_t timer;       /* first: closed by the daemon's shutdown walk */
  la_metrics_conf_t conf; /* listen and port_file point at the copies: */
  char listen[300], port_file[1024];
  la_metrics_http_t *http; /* NULL: turned off by a reload */
  char bound[300];
};

/* Renders a snapshot and hands it to the HTTP thread (loop thread). */
static void la__publish(la_metrics_t *m) {
  if (!m->http) return;
  La__StatusReply *r = m->conf.snapshot(m->conf.arg);
  if (!r) return;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f) {
    int rc = la_status_exposition(r, m->conf.prefix, m->conf.max_apps, f);
    if (rc == 0) rc = la_metrics_process(f);
    if (fclose(f) == 0 && rc == 0) la_metrics_http_publish(m->http, text, len);
  }
  free(text);
  la_status_free(r);
}

static void la__on_timer(uv_timer_t *t) {
  la__publish((la_metrics_t *)t);
}

/* Copies c into m (its strings into m's own buffers). */
static void la__set_conf(la_metrics_t *m, const la_metrics_conf_t *c) {
  m->conf = *c;
  snprintf(m->listen, sizeof m->listen, "%s", c->listen ? c->listen : "");
  snprintf(m->port_file, sizeof m->port_file, "%s",
           c->port_file ? c->port_file : "");
  m->conf.listen = m->listen;
  m->conf.port_file = m->port_file;
}

/* Binds c->listen and starts an HTTP thread into *h, writes the port file
 * and the bound address into bound (300 bytes). 0 or a negative LA_E* code
 * with the reason in why (nothing left running). */
static int la__http_open(const la_metrics_conf_t *c, la_metrics_http_t **h,
                         char *bound, char *why, size_t why_len) {
  char err[300];
  uint16_t port = 0;
  int rc = la_metrics_http_start(c->listen, c->max_conns, 10, h, bound, 300,
                                 &port, err, sizeof err);
  if (rc != 0) {
    snprintf(why, why_len, "metrics.listen: %s", err);
    return rc;
  }
  if (c->port_file && c->port_file[0] &&
      la_daemon_write_number(c->port_file, port) != 0) {
    snprintf(why, why_len, "cannot write metrics.port_file %s: %s",
             c->port_file, la_daemon_write_strerror(errno));
    la_metrics_http_stop(*h);
    *h = NULL;
    return LA_EIO;
  }
  return 0;
}

static void la__log_serving(const char *bound) {
  la_log_info(
      "metrics: serving http://%s/metrics (no authentication: keep "
      "it on loopback or behind the node's firewall)",
      bound);
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
  la__set_conf(m, c);
  int rc = la__http_open(&m->conf, &m->http, m->bound, why, why_len);
  if (rc != 0) {
    free(m);
    return rc;
  }
  la__publish(m);
  uv_timer_init(loop, &m->timer);
  uv_timer_start(&m->timer, la__on_timer, c->interval_ms, c->interval_ms);
  uv_unref((uv_handle_t *)&m->timer);
  la__log_serving(m->bound);
  *out = m;
  return 0;
}

int la_metrics_reload(uv_loop_t *loop, const la_metrics_conf_t *c,
                      la_metrics_t **mp) {
  la_metrics_t *m = *mp;
  char why[400];
  const char *listen = c->listen ? c->listen : "";
  if (!m || !m->http) { /* off */
    if (!listen[0]) {
      if (m) la__set_conf(m, c);
      return 0;
    }
    if (!m) {
      int rc = la_metrics_start(loop, c, mp, why, sizeof why);
      if (rc != 0)
        la_log_error("SIGHUP: metrics endpoint not started: %s", why);
      return rc;
    }
    la_metrics_http_t *h = NULL;
    char bound[300];
    int rc = la__http_open(c, &h, bound, why, sizeof why);
    if (rc != 0) {
      la_log_error("SIGHUP: metrics endpoint not started: %s", why);
      return rc;
    }
    la__set_conf(m, c);
    m->http = h;
    snprintf(m->bound, sizeof m->bound, "%s", bound);
    la__publish(m);
    uv_timer_start(&m->timer, la__on_timer, c->interval_ms, c->interval_ms);
    la__log_serving(m->bound);
    return 0;
  }
  if (!listen[0]) { /* on, turned off */
    la_log_info("SIGHUP: metrics: stopped serving http://%s/metrics", m->bound);
    la_metrics_http_stop(m->http);
    m->http = NULL;
    uv_timer_stop(&m->timer);
    la__set_conf(m, c);
    return 0;
  }
  int moved = strcmp(listen, m->listen) != 0;
  int resized = c->max_conns != m->conf.max_conns;
  if (moved) { /* the new address first: on failure the old one stays */
    la_metrics_http_t *h = NULL;
    char bound[300];
    int rc = la__http_open(c, &h, bound, why, sizeof why);
    if (rc != 0) {
      la_log_error("SIGHUP: %s; metrics stay on http://%s/metrics", why,
                   m->bound);
      return rc;
    }
    la_metrics_http_stop(m->http);
    m->http = h;
    snprintf(m->bound, sizeof m->bound, "%s", bound);
    la__log_serving(m->bound);
  } else if (resized) { /* the same address: closed, then bound again */
    la_metrics_http_stop(m->http);
    m->http = NULL;
    la_metrics_conf_t same = *c;
    same.port_file = NULL; /* the port may be 0: keep the one written */
    int rc = la__http_open(&same, &m->http, m->bound, why, sizeof why);
    if (rc != 0) {
      la_log_error("SIGHUP: metrics endpoint off: %s", why);
      uv_timer_stop(&m->timer);
      la__set_conf(m, c);
      return rc;
    }
    la__log_serving(m->bound);
  }
  if (c->interval_ms != m->conf.interval_ms)
    uv_timer_start(&m->timer, la__on_timer, c->interval_ms, c->interval_ms);
  la__set_conf(m, c);
  if (moved || resized) la__publish(m);
  return 0;
}

void la_metrics_stop(la_metrics_t *m) {
  if (!m) return;
  if (m->http) {
    la_log_info("metrics: stopped after %llu requests",
                (unsigned long long)la_metrics_http_requests(m->http));
    la_metrics_http_stop(m->http);
  }
  free(m);
}
