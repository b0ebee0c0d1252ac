/* SPDX-License-Identifier: BSD-3-Clause */
/* listener.c: the LocalAgent's listening socket (RegService and DXService
 * share it: a registration and its notifications use one connection).
 *
 * Admission: beyond max_connections a new connection is accepted and closed
 * at once (counted; logged at most once a second) so a flood cannot exhaust
 * file descriptors or memory; sessions enforce the per-user share, the
 * handshake and idle deadlines, frame and output limits and application
 * limits. Reports the bound port (port 0 = any) on stdout
 * and in port_file, so tests and scripts need no fixed port.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "la_daemon.h"
#include "la_log.h"

/* Connections that hold a slot: those already closing (e.g. refused for
 * their user's share earlier in this burst of accepts) are gone by the
 * end of this loop iteration and do not count. */
static int la__open_conns(la_agent_t *ag) {
  int n = 0;
  for (la_session_t *s = ag->sessions; s; s = s->next)
    if (!s->conn.closing) n++;
  return n;
}

static void la__on_connection(uv_stream_t *server, int status) {
  la_agent_t *ag = server->data;
  if (status < 0) {
    la_log_warnx("accept: %s", uv_strerror(status));
    return;
  }
  static la_ratelimit_t rl; /* this file's: refusal log lines */
  if (ag->draining ||
      (ag->n_conns >= ag->set.max_connections &&
       la_conn_share_full(la__open_conns(ag), ag->set.max_connections,
                          &ag->st.conns_refused, &rl,
                          "connection refused: %d open (max_connections = "
                          "%lld)",
                          ag->n_conns, (long long)ag->set.max_connections))) {
    la_refuse_connection(ag->loop, server);
    return;
  }
  la_session_accept(ag, server);
}

int la_listener_start(la_agent_t *ag, char *why, size_t why_len) {
  char reason[300];
  int rc = la_listen(ag->loop, &ag->listener, ag->set.listen,
                     la__on_connection, ag->bound, sizeof ag->bound, &ag->port,
                     reason, sizeof reason);
  if (rc != 0) {
    snprintf(why, why_len, "agent.listen: %s", reason);
    return rc;
  }
  ag->listener.data = ag;
  printf("la-localagent: listening on %s\n", ag->bound);
  fflush(stdout);
  if (ag->set.port_file[0] &&
      la_daemon_write_number(ag->set.port_file, ag->port) != 0) {
    snprintf(why, why_len, "cannot write port_file %s: %s", ag->set.port_file,
             la_daemon_write_strerror(errno));
    return LA_EIO;
  }
  if (!la_log_stdout_reaches_log()) la_log_info("listening on %s", ag->bound);
  return 0;
}

void la_listener_stop(la_agent_t *ag) {
  if (!uv_is_closing((uv_handle_t *)&ag->listener))
    uv_close((uv_handle_t *)&ag->listener, NULL);
}
