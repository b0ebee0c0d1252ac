/* listener.c: the LocalAgent's listening socket (RegService and DXService
 * share it: a registration and its notifications use one connection).
 *
 * Admission: beyond max_connections a new connection is accepted and closed
 * at once (counted, logged once per burst) so a flood cannot exhaust file
 * descriptors or memory; sessions enforce the handshake deadline, frame size
 * and application limits. Reports the bound port (port 0 = any) on stdout
 * and in port_file, so tests and scripts need no fixed port.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "la_log.h"
#include "la_sockio.h"

static void la__on_refused_closed(uv_handle_t *h) { free(h); }

static void la__on_connection(uv_stream_t *server, int status) {
  la_agent_t *ag = server->data;
  if (status < 0) {
    la_log_warnx("accept: %s", uv_strerror(status));
    return;
  }
  if (ag->n_conns >= ag->set.max_connections || ag->draining) {
    uv_tcp_t *t = malloc(sizeof *t);
    if (!t) return;
    uv_tcp_init(ag->loop, t);
    if (uv_accept(server, (uv_stream_t *)t) == 0 && !ag->draining) {
      if (ag->st.conns_refused++ % 1000 == 0)
        la_log_warnx("connection refused: %d open (max_connections = %lld)",
                     ag->n_conns, (long long)ag->set.max_connections);
    }
    uv_close((uv_handle_t *)t, la__on_refused_closed);
    return;
  }
  la_session_t *s = la_session_new(ag);
  if (!s) return;
  if (uv_accept(server, (uv_stream_t *)&s->tcp) != 0) {
    la_session_close(s, "accept failed");
    return;
  }
  ag->st.conns_accepted++;
  la_session_start(s);
}

int la_listener_start(la_agent_t *ag, char *why, size_t why_len) {
  char host[200];
  uint16_t port = 0;
  const char *l = ag->set.listen;
  /* la_hostport_parse refuses port 0, which we allow: handle ":0" here. */
  size_t ll = strlen(l);
  if (ll >= 2 && !strcmp(l + ll - 2, ":0")) {
    snprintf(host, sizeof host, "%.*s", (int)(ll - 2), l);
    if (host[0] == '[') { /* [v6]:0 */
      memmove(host, host + 1, strlen(host));
      host[strlen(host) - 1] = '\0';
    }
  } else if (la_hostport_parse(l, host, sizeof host, &port) != 0) {
    snprintf(why, why_len, "agent.listen = '%s' is not host:port", l);
    return LA_ECONFIG;
  }
  struct sockaddr_storage addr;
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)&addr) != 0 &&
      uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr) != 0) {
    snprintf(why, why_len, "agent.listen: '%s' is not an IP address", host);
    return LA_ECONFIG;
  }
  uv_tcp_init(ag->loop, &ag->listener);
  ag->listener.data = ag;
  int rc = uv_tcp_bind(&ag->listener, (struct sockaddr *)&addr, 0);
  if (rc == 0) rc = uv_listen((uv_stream_t *)&ag->listener, 511,
                              la__on_connection);
  if (rc != 0) {
    snprintf(why, why_len, "cannot listen on %s: %s", l, uv_strerror(rc));
    return LA_EIO;
  }
  struct sockaddr_storage bound;
  int bl = sizeof bound;
  uv_tcp_getsockname(&ag->listener, (struct sockaddr *)&bound, &bl);
  ag->port = ntohs(bound.ss_family == AF_INET6
                       ? ((struct sockaddr_in6 *)&bound)->sin6_port
                       : ((struct sockaddr_in *)&bound)->sin_port);
  snprintf(ag->bound, sizeof ag->bound, "%s:%u", host, ag->port);
  printf("la-localagent: listening on %s\n", ag->bound);
  fflush(stdout);
  if (ag->set.port_file[0]) {
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", ag->set.port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", ag->port) < 0 || fclose(f) != 0 ||
        rename(tmp, ag->set.port_file) != 0) {
      snprintf(why, why_len, "cannot write port_file %s", ag->set.port_file);
      return LA_EIO;
    }
  }
  la_log_info("listening on %s:%u", host, ag->port);
  return 0;
}

void la_listener_stop(la_agent_t *ag) {
  if (!uv_is_closing((uv_handle_t *)&ag->listener))
    uv_close((uv_handle_t *)&ag->listener, NULL);
}
