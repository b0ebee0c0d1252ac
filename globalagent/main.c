/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c: la-globalagent, the front-end LA daemon: options, configuration,
 * logging, the fixed start-up order, signals. The steps both daemons take
 * alike are daemon/la_daemon_main.c's; this file says what happens between
 * them and what a reload or a stop does.
 *
 * Start-up: defaults, the INI file (-c), --section.key=value options;
 * logging; the shared secret (or a warning that any agent is accepted); the
 * store (open Trace-Sets rebuilt from it); the LocalAgent listener and the
 * feed listener (bound ports printed and written to their port files); the
 * pid file; signals; the loop. SIGTERM/SIGINT: stop accepting, commit what
 * was received (and acknowledge it), close every connection, exit 0.
 * SIGHUP re-reads the configuration: log settings, limits and timeouts
 * change in place; addresses, the store and the secret need a restart.
 */
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>

#include "ga.h"
#include "la_cipher.h"
#include "la_daemon.h"
#include "la_daemon_main.h"
#include "la_log.h"
#include "la_metrics_http.h"
#include "la_notify.h"
#include "la_sockio.h"

static const char *la__me = "la-globalagent";

/* la_daemon_def_t.validate: what the key table cannot check. Returns 0, or
 * -1 after printing every problem. */
static int la__validate(const void *setp) {
  const la_ga_settings_t *set = setp;
  int bad = 0;
  if (!la_daemon_addr_ok(set->agent_listen, 1)) {
    fprintf(stderr, "%s: agents.listen '%s' is not host:port\n", la__me,
            set->agent_listen);
    bad = 1;
  }
  if (!la_daemon_addr_ok(set->feed_listen, 1)) {
    fprintf(stderr, "%s: feed.listen '%s' is not host:port\n", la__me,
            set->feed_listen);
    bad = 1;
  }
  if (!la_metrics_listen_ok(la__me, set->metrics_listen)) bad = 1;
  la_cipher_pref_t pref;
  char why[200];
  if (la_cipher_parse("agents.cipher", set->cipher, 0, &pref, why,
                      sizeof why) != 0) {
    fprintf(stderr, "%s: %s\n", la__me, why);
    bad = 1;
  }
  if (!set->db[0]) {
    fprintf(stderr, "%s: store.path is empty\n", la__me);
    bad = 1;
  }
  return bad ? -1 : 0;
}

/* --check-config beyond syntax: the secret, the store's directory and the
 * directories of the pid and port files, as the user who runs it. Returns
 * 0, or -1 after naming each problem. */
static int la__check(const void *sp) {
  const la_ga_settings_t *s = sp;
  int bad = 0;
  if (s->secret_file[0] &&
      la_daemon_check_secret(la__me, "agents.secret_file", s->secret_file))
    bad = 1;
  if (!s->db_url[0] && strcmp(s->db, ":memory:") &&
      la_daemon_check_file_dir_made(la__me, "store.path", s->db))
    bad = 1;
  if (s->pid_file[0] &&
      la_daemon_check_file_dir(la__me, "daemon.pid_file", s->pid_file))
    bad = 1;
  if (s->agent_port_file[0] &&
      la_daemon_check_file_dir(la__me, "agents.port_file", s->agent_port_file))
    bad = 1;
  if (s->feed_port_file[0] &&
      la_daemon_check_file_dir(la__me, "feed.port_file", s->feed_port_file))
    bad = 1;
  return bad ? -1 : 0;
}

static la_ga_t la__ga; /* the daemon's one instance, owned here */
static const la_daemon_def_t la__def;

static void la__stop(void *daemon) {
  la_ga_t *ga = daemon;
  if (ga->draining) return;
  ga->draining = 1;
  la_notify_stopping("committing what was received");
  la_log_info("stopping: committing what was received");
  uv_close((uv_handle_t *)&ga->agent_listener, NULL);
  uv_close((uv_handle_t *)&ga->feed_listener, NULL);
  la_ga_commit_drain(ga); /* acks go out before the connections close */
  la_ga_agent_ops.close_all(ga, "GlobalAgent shutdown");
  la_ga_feed_close_all(ga, "GlobalAgent shutdown");
  la_ga_shards_stop(ga); /* before the walk: its poll's descriptor is ours */
  la_daemon_close_all(ga->loop);
}

static void la__reload(void *daemon) {
  la_ga_t *ga = daemon;
  la_ga_settings_t n;
  char path[512];
  if (la_daemon_reload_begin(&la__def, &n, path, sizeof path) != 0) return;
  if (strcmp(n.agent_listen, ga->set.agent_listen) ||
      strcmp(n.feed_listen, ga->set.feed_listen) || strcmp(n.db, ga->set.db) ||
      strcmp(n.db_url, ga->set.db_url) ||
      strcmp(n.secret_file, ga->set.secret_file))
    la_log_warnx(
        "SIGHUP: listen addresses, store.path and secret_file "
        "changes need a restart");
  ga->set.max_agents = n.max_agents;
  memcpy(ga->set.cipher, n.cipher, sizeof n.cipher); /* new connections */
  ga->set.max_subscribers = n.max_subscribers;
  ga->set.agent_max_frame = n.agent_max_frame;
  ga->set.feed_max_frame = n.feed_max_frame;
  ga->set.handshake_ms = n.handshake_ms;
  ga->set.sub_queue_bytes = n.sub_queue_bytes;
  ga->set.agent_max_handshakes_per_addr = n.agent_max_handshakes_per_addr;
  ga->set.agent_handshake_max_frame = n.agent_handshake_max_frame;
  ga->set.agent_max_output = n.agent_max_output;
  ga->set.ingest_memory = n.ingest_memory;
  ga->set.feed_max_per_addr = n.feed_max_per_addr;
  ga->set.feed_handshake_max_frame = n.feed_handshake_max_frame;
  ga->set.feed_max_output = n.feed_max_output;
  ga->set.feed_idle_ms = n.feed_idle_ms;
  ga->set.set_timeout_ms = n.set_timeout_ms;
  ga->set.max_open_sets = n.max_open_sets;
  ga->set.batch_max = n.batch_max;
  ga->set.gather_ms = n.gather_ms;
  ga->set.require_owner = n.require_owner;
  ga->set.refused_retention_ms = n.refused_retention_ms;
  ga->set.refused_max_per_agent = n.refused_max_per_agent;
  ga->set.representatives = n.representatives;
  ga->set.representatives_tol = n.representatives_tol;
  la_stitch_set_max_open(ga->stitch, (size_t)n.max_open_sets);
  memcpy(ga->set.metrics_listen, n.metrics_listen, sizeof n.metrics_listen);
  memcpy(ga->set.metrics_port_file, n.metrics_port_file,
         sizeof n.metrics_port_file);
  ga->set.metrics_interval_ms = n.metrics_interval_ms;
  ga->set.metrics_max_conns = n.metrics_max_conns;
  ga->set.metrics_max_apps = n.metrics_max_apps;
  la_ga_metrics_reload(ga);
  la_daemon_reload_done(path);
}

/* One listening port's admission: its connections open and their cap, the
 * refusals' counter and log rate limit, how a connection is taken in, and
 * how a full port makes room (1: a connection closed). */
typedef struct {
  const char *who, *section; /* "LocalAgent", "agents" (the log line) */
  int *open;
  int64_t *cap;
  uint64_t *refused;
  la_ratelimit_t rl;
  void (*accept)(la_ga_t *ga, uv_stream_t *server);
  int (*make_room)(la_ga_t *ga);
} la__port_t;

/* Admission: at a port's max_connections the port makes room when a
 * connection waited long enough for nothing (make_room); else a new one
 * is accepted and closed at once, counted, and logged at most once a
 * second; the share of one address is checked by agents.c and feed.c once
 * the peer is known. */
static void la__admit(la_ga_t *ga, la__port_t *p, uv_stream_t *server,
                      int status) {
  if (status < 0) return;
  /* a full port first makes room by closing a connection that waited
   * long enough for nothing (agents.c, feed.c) */
  if (*p->open >= *p->cap && p->make_room) p->make_room(ga);
  if (la_conn_share_full(*p->open, *p->cap, p->refused, &p->rl,
                         "%s connection refused: %d open "
                         "(%s.max_connections = %lld)",
                         p->who, *p->open, p->section, (long long)*p->cap))
    la_refuse_connection(ga->loop, server);
  else
    p->accept(ga, server);
}

static la__port_t la__agents_port = {"LocalAgent",
                                     "agents",
                                     &la__ga.n_agents,
                                     &la__ga.set.max_agents,
                                     &la__ga.st.agents_refused,
                                     {0, 0},
                                     la_ga_agent_accept,
                                     la_ga_agent_make_room};
static la__port_t la__feed_port = {"feed",
                                   "feed",
                                   &la__ga.n_subs,
                                   &la__ga.set.max_subscribers,
                                   &la__ga.st.subs_refused,
                                   {0, 0},
                                   la_ga_feed_accept,
                                   la_ga_feed_make_room};

static void la__on_agent(uv_stream_t *server, int status) {
  la__admit(server->data, &la__agents_port, server, status);
}

static void la__on_sub(uv_stream_t *server, int status) {
  la__admit(server->data, &la__feed_port, server, status);
}

static int la__listen(la_ga_t *ga, uv_tcp_t *tcp, const char *what,
                      const char *addr, uv_connection_cb cb, char *bound,
                      size_t bound_len, uint16_t *port, const char *port_file) {
  char why[300];
  if (la_listen(ga->loop, tcp, addr, cb, bound, bound_len, port, why,
                sizeof why) != 0) {
    la_log_error("%s.listen: %s", what, why);
    return -1;
  }
  tcp->data = ga;
  printf("la-globalagent: %s listening on %s\n", what, bound);
  fflush(stdout);
  if (port_file[0] && la_daemon_write_number(port_file, *port) != 0) {
    la_log_error("cannot write %s.port_file %s: %s", what, port_file,
                 la_daemon_write_strerror(errno));
    return -1;
  }
  if (!la_log_stdout_reaches_log())
    la_log_info("%s: listening on %s", what, bound);
  return 0;
}

static const la_daemon_def_t la__def = {
    "la-globalagent",
    LA_GA_VERSION,

    "The LA GlobalAgent: receives compact traces from the LocalAgents, "
    "stitches\nthem into Trace-Sets (all ranks of one application "
    "cycle), stores them in\nSQLite and streams them to subscribers. "
    "See docs/globalagent.md.",
    la_ga_keys,
    la__validate,
    la__check,
    offsetof(la_ga_settings_t, log_target),
    offsetof(la_ga_settings_t, log_level),
    la__reload,
    la__stop};

int main(int argc, char **argv) {
  la_ga_t *ga = &la__ga;
  int rc = la_daemon_begin(&la__def, argc, argv, &ga->set, ga->config_path,
                           sizeof ga->config_path);
  if (rc >= 0) return rc;
  /* Blocks of 1 MiB and more (sets, their encodings, large traces) are
   * mapped and unmapped on their own, so the memory the feed's and
   * ingest's bounds count is what the process holds. With glibc's sliding
   * threshold a freed multi-MB block raised it, and later ones stayed in
   * per-thread arenas after they were freed (test_feed_memory's flood:
   * VmHWM +100-130 MB against +66-73 MB). A threshold the site set
   * through the environment is left alone. */
  if (!getenv("MALLOC_MMAP_THRESHOLD_") && !getenv("GLIBC_TUNABLES"))
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
  ga->loop = uv_default_loop();
  ga->start_ms = la_now_ms();
  if (la_auth_init() != 0) {
    la_log_error("libsodium failed to initialise");
    return 1;
  }
  if (ga->set.secret_file[0]) {
    char why[300];
    if (la_auth_load_key(ga->set.secret_file, &ga->key, why, sizeof why)) {
      la_log_error("agents.secret_file: %s", why);
      return 1;
    }
    ga->have_key = 1;
  } else {
    la_log_warnx(
        "agents.secret_file is not set: any LocalAgent that "
        "connects is accepted and the link is NOT encrypted");
  }
  /* the store's directory is made at the first start (as the unit's
   * StateDirectory= would), so --check-config passes before it */
  char dir_why[1200];
  if (!ga->set.db_url[0] && strcmp(ga->set.db, ":memory:") &&
      la_daemon_make_file_dir(ga->set.db, dir_why, sizeof dir_why) != 0) {
    la_log_error("store.path %s: %s", ga->set.db, dir_why);
    return 1;
  }
  char why[600];
  if (la_ga_ingest_start(ga, &la_ga_agent_ops, why, sizeof why) != 0) {
    la_log_error("%s", why);
    return 1;
  }
  if (la_ga_shards_start(ga) != 0) {
    la_ga_ingest_stop(ga);
    return 1;
  }
  la_daemon_signals(&la__def, ga, ga->loop, ga->sigs);
  if (la__listen(ga, &ga->agent_listener, "agents", ga->set.agent_listen,
                 la__on_agent, ga->agent_bound, sizeof ga->agent_bound,
                 &ga->agent_port, ga->set.agent_port_file) != 0 ||
      la__listen(ga, &ga->feed_listener, "feed", ga->set.feed_listen,
                 la__on_sub, ga->feed_bound, sizeof ga->feed_bound,
                 &ga->feed_port, ga->set.feed_port_file) != 0) {
    la_ga_ingest_stop(ga);
    return 1;
  }
  if (la_ga_metrics_start(ga, why, sizeof why) != 0) {
    la_log_error("%s", why);
    la_ga_ingest_stop(ga);
    return 1;
  }
  la_daemon_write_pid(ga->set.pid_file);
  la_log_info("%s ready (pid %d, store %s, stitch timeout %lld ms)",
              LA_GA_VERSION, (int)getpid(),
              ga->set.db_url[0] ? "PostgreSQL (store.url)" : ga->set.db,
              (long long)ga->set.set_timeout_ms);
  char st[600];
  snprintf(st, sizeof st, "agents on %.250s, feed on %.250s", ga->agent_bound,
           ga->feed_bound);
  la_daemon_run(ga->loop, st);
  la_ga_metrics_stop(ga);
  uv_loop_close(ga->loop);
  la_ga_ingest_stop(ga);
  la_auth_key_wipe(&ga->key);
  la_daemon_end(ga->set.pid_file);
  return 0;
}
