/* main.c: la-globalagent, the front-end LA daemon: options, configuration,
 * logging, the fixed start-up order, signals.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ga.h"
#include "la_daemon.h"
#include "la_log.h"
#include "la_metrics_http.h"
#include "la_notify.h"
#include "la_sockio.h"

static const char *la__me = "la-globalagent";

static void la__usage(FILE *f) {
  fprintf(f,
          "usage: la-globalagent [-c FILE] [--check-config] "
          "[--SECTION.KEY=VALUE ...]\n"
          "       la-globalagent --help | --version\n\n"
          "The LA GlobalAgent: receives compact traces from the LocalAgents, "
          "stitches\nthem into Trace-Sets (all ranks of one application "
          "cycle), stores them in\nSQLite and streams them to subscribers. "
          "See docs/globalagent.md.\n\n"
          "  -c, --config FILE   INI configuration file\n"
          "  --check-config      print the effective configuration and exit\n"
          "  --help, --version\n\nSettings (also INI keys "
          "'[section] key = value'):\n");
  la_cfg_help(la_ga_keys, f);
}

static int la__configure(int argc, char **argv, la_ga_settings_t *set,
                         char *config_path, size_t cp_len) {
  int bad = la_daemon_configure(la__me, la_ga_keys, set, argc, argv,
                                config_path, cp_len) != 0;
  int level;
  if (la_daemon_log_settings(la__me, set->log_target, set->log_level, &level))
    bad = 1;
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
  if (!set->db[0]) {
    fprintf(stderr, "%s: store.path is empty\n", la__me);
    bad = 1;
  }
  return bad ? -1 : 0;
}

/* --check-config beyond syntax: the secret, the store's directory and the
 * directories of the pid and port files, as the user who runs it. Prints
 * the configuration and returns 0, or returns 2 after naming each
 * problem. */
static int la__check(const la_ga_settings_t *s) {
  int bad = 0;
  if (s->secret_file[0] &&
      la_daemon_check_secret(la__me, "agents.secret_file", s->secret_file))
    bad = 1;
  if (!s->db_url[0] && strcmp(s->db, ":memory:") &&
      la_daemon_check_file_dir(la__me, "store.path", s->db))
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
  if (bad) {
    fprintf(stderr, "%s: configuration has errors (above)\n", la__me);
    return 2;
  }
  la_daemon_print_config(la__me, la_ga_keys, s);
  return 0;
}

static la_ga_t la__ga; /* the daemon's one instance, owned here */
static int la__argc;
static char **la__argv;

static void la__close_walk(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void la__stop(la_ga_t *ga) {
  if (ga->draining) return;
  ga->draining = 1;
  la_notify_stopping("committing what was received");
  la_log_info("stopping: committing what was received");
  uv_close((uv_handle_t *)&ga->agent_listener, NULL);
  uv_close((uv_handle_t *)&ga->feed_listener, NULL);
  la_ga_commit(ga); /* acks go out before the connections close */
  la_ga_agent_ops.close_all(ga, "GlobalAgent shutdown");
  la_ga_feed_close_all(ga, "GlobalAgent shutdown");
  uv_walk(ga->loop, la__close_walk, NULL);
}

static void la__reload(la_ga_t *ga) {
  la_ga_settings_t n;
  char path[512];
  la_notify_reloading();
  if (la__configure(la__argc, la__argv, &n, path, sizeof path) != 0) {
    la_log_warnx("SIGHUP: configuration has errors (above); keeping the "
                 "current one");
    la_notify_ready("configuration has errors: kept the current one");
    return;
  }
  if (strcmp(n.agent_listen, ga->set.agent_listen) ||
      strcmp(n.feed_listen, ga->set.feed_listen) || strcmp(n.db, ga->set.db) ||
      strcmp(n.db_url, ga->set.db_url) ||
      strcmp(n.secret_file, ga->set.secret_file))
    la_log_warnx("SIGHUP: listen addresses, store.path and secret_file "
                 "changes need a restart");
  int level = LA_LOG_INFO;
  la_log_level_parse(n.log_level, &level);
  la_log_init(la__me, n.log_target, level);
  ga->set.max_agents = n.max_agents;
  ga->set.max_subscribers = n.max_subscribers;
  ga->set.agent_max_frame = n.agent_max_frame;
  ga->set.feed_max_frame = n.feed_max_frame;
  ga->set.handshake_ms = n.handshake_ms;
  ga->set.sub_queue_bytes = n.sub_queue_bytes;
  ga->set.agent_max_handshakes_per_addr = n.agent_max_handshakes_per_addr;
  ga->set.agent_handshake_max_frame = n.agent_handshake_max_frame;
  ga->set.agent_max_output = n.agent_max_output;
  ga->set.feed_max_per_addr = n.feed_max_per_addr;
  ga->set.feed_handshake_max_frame = n.feed_handshake_max_frame;
  ga->set.feed_max_output = n.feed_max_output;
  ga->set.feed_idle_ms = n.feed_idle_ms;
  ga->set.set_timeout_ms = n.set_timeout_ms;
  ga->set.max_open_sets = n.max_open_sets;
  ga->set.batch_max = n.batch_max;
  la_stitch_set_max_open(ga->stitch, (size_t)n.max_open_sets);
  la_log_info("SIGHUP: configuration reloaded%s%s", path[0] ? " from " : "",
              path);
  la_notify_ready("configuration reloaded");
}

static void la__on_signal(uv_signal_t *h, int signum) {
  la_ga_t *ga = h->data;
  if (signum == SIGHUP) la__reload(ga);
  else la__stop(ga);
}

/* Admission: beyond a port's max_connections a connection is accepted and
 * closed at once, counted, and logged at most once a second; the share of
 * one address is checked by agents.c and feed.c once the peer is known. */
static void la__on_agent(uv_stream_t *server, int status) {
  static la_ratelimit_t rl; /* this function's: refusal log lines */
  la_ga_t *ga = server->data;
  if (status < 0) return;
  if (la_conn_share_full(ga->n_agents, ga->set.max_agents,
                         &ga->st.agents_refused, &rl,
                         "LocalAgent connection refused: %d open "
                         "(agents.max_connections = %lld)",
                         ga->n_agents, (long long)ga->set.max_agents))
    la_refuse_connection(ga->loop, server);
  else
    la_ga_agent_accept(ga, server);
}

static void la__on_sub(uv_stream_t *server, int status) {
  static la_ratelimit_t rl; /* this function's: refusal log lines */
  la_ga_t *ga = server->data;
  if (status < 0) return;
  if (la_conn_share_full(ga->n_subs, ga->set.max_subscribers,
                         &ga->st.subs_refused, &rl,
                         "feed connection refused: %d open "
                         "(feed.max_connections = %lld)",
                         ga->n_subs, (long long)ga->set.max_subscribers))
    la_refuse_connection(ga->loop, server);
  else
    la_ga_feed_accept(ga, server);
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
    la_log_error("cannot write %s.port_file %s", what, port_file);
    return -1;
  }
  la_log_info("%s: listening on %s", what, bound);
  return 0;
}

int main(int argc, char **argv) {
  la_ga_t *ga = &la__ga;
  la__argc = argc;
  la__argv = argv;
  int check, rc = la_daemon_early_args(argc, argv, LA_GA_VERSION, la__usage, &check);
  if (rc >= 0) return rc;
  if (la__configure(argc, argv, &ga->set, ga->config_path,
                    sizeof ga->config_path) != 0)
    return 2;
  if (check) return la__check(&ga->set);
  int level = LA_LOG_INFO;
  la_log_level_parse(ga->set.log_level, &level);
  la_log_init(la__me, ga->set.log_target, level);
  signal(SIGPIPE, SIG_IGN);
  la_daemon_process_setup(); /* umask 077: private files */
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
    la_log_warnx("agents.secret_file is not set: any LocalAgent that "
                 "connects is accepted and the link is NOT encrypted");
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
  if (ga->set.pid_file[0] &&
      la_daemon_write_number(ga->set.pid_file, (long)getpid()) != 0)
    la_log_warn("cannot write pid_file %s", ga->set.pid_file);
  la_uv_signals(ga->loop, ga->sigs, la__on_signal, ga);
  la_log_info("%s ready (pid %d, store %s, stitch timeout %lld ms)",
              LA_GA_VERSION, (int)getpid(),
              ga->set.db_url[0] ? "PostgreSQL (store.url)" : ga->set.db,
              (long long)ga->set.set_timeout_ms);
  char st[600];
  snprintf(st, sizeof st, "agents on %.250s, feed on %.250s",
           ga->agent_bound, ga->feed_bound);
  la_notify_start(ga->loop);
  la_notify_ready(st);
  uv_run(ga->loop, UV_RUN_DEFAULT);
  la_ga_metrics_stop(ga);
  uv_loop_close(ga->loop);
  la_ga_ingest_stop(ga);
  la_auth_key_wipe(&ga->key);
  if (ga->set.pid_file[0]) unlink(ga->set.pid_file);
  la_log_info("stopped");
  return 0;
}
