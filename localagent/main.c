/* SPDX-License-Identifier: BSD-3-Clause */
/* main.c: la-localagent, the per-node LA daemon: options, configuration,
 * logging and the fixed start-up order, signals. The steps both daemons
 * take alike are daemon/la_daemon_main.c's; this file says what happens
 * between them and what a reload or a drain does.
 *
 * Start-up: defaults, then the INI file (-c), then --section.key=value
 * options; logging; the default compaction; the send queue and its log
 * (messages left by an earlier run are sent first); the listener (the bound
 * port is printed and written to port_file); the pid file; signals; the
 * GlobalAgent link; then the loop. SIGTERM/SIGINT drain: stop accepting,
 * close the applications' connections (their IPC objects are removed), finish
 * the jobs in flight, wait up to drain_timeout for the GlobalAgent's acks,
 * exit 0 (what is unacknowledged is in the log). A second signal exits as
 * soon as the compactions in flight have appended their traces. At start
 * the log is replayed, and what a crashed run left unresolved is recorded:
 * TraceMissing for cycles taken without a trace, RankEnd for ranks without
 * an end. SIGHUP re-reads the configuration: log level and target,
 * limits, queue sizes and the default compaction change in place; the
 * listen and GlobalAgent addresses need a restart (logged).
 *
 * Memory: every profiled cycle allocates and frees a few arrays of n
 * doubles (the copy, the robust weights and their reconstruction). With
 * glibc's defaults each of those above 128 KB may be mapped fresh or
 * trimmed back to the system on free, so every cycle paid a page fault
 * and a zeroed page per 4 KB of them (about a third of the agent's CPU on
 * a row-probed 64^3 cycle). The pool threads' arenas therefore keep up to
 * LA__KEEP bytes of freed memory, and arrays up to LA__KEEP / 2 come from
 * them: the agent's resident size stays at its peak of recent cycles.
 */
#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "instance.h"
#include "backlog.h"
#include "la_cipher.h"
#include "la_daemon.h"
#include "la_daemon_main.h"
#include "la_log.h"
#include "la_metrics_http.h"
#include "la_notify.h"
#include "la_sockio.h"
#include "placement.h"
#include "pool.h"
#include "lane.h"
#include "syncer.h"

/* la_daemon_def_t.validate: what the key table cannot check. Returns 0, or
 * -1 after printing every problem. */
static int la__validate(const void *setp) {
  const la_la_settings_t *set = setp;
  const char *me = "la-localagent";
  int bad = 0;
  la_compact_params_t p;
  char why[200];
  if (la_compact_spec_parse(set->compact, &p, why, sizeof why) != 0) {
    fprintf(stderr, "%s: compaction.default: %s\n", me, why);
    bad = 1;
  }
  if (!la_daemon_addr_ok(set->listen, 1)) {
    fprintf(stderr, "%s: agent.listen '%s' is not host:port\n", me,
            set->listen);
    bad = 1;
  }
  /* global.address: one host:port, or several (shards) separated by ',' */
  for (const char *g = set->global; *g;) {
    char one[256];
    size_t k = strcspn(g, ",");
    snprintf(one, sizeof one, "%.*s", (int)k, g);
    g += k + (g[k] == ',');
    if (!la_daemon_addr_ok(one, 0)) {
      fprintf(stderr, "%s: global.address '%s' is not host:port\n", me,
              set->global);
      bad = 1;
      break;
    }
  }
  int backlog, coarse;
  if (la_backlog_parse(set->max_backlog, &backlog, why, sizeof why) != 0 ||
      la_backlog_behind_parse(set->behind, &coarse, why, sizeof why) != 0) {
    fprintf(stderr, "%s: %s\n", me, why);
    bad = 1;
  }
  la_cipher_pref_t cipher;
  if (la_cipher_parse("global.cipher", set->cipher, 1, &cipher, why,
                      sizeof why) != 0) {
    fprintf(stderr, "%s: %s\n", me, why);
    bad = 1;
  }
  if (la_placement_cpus_check(set->cpus, why, sizeof why) != 0) {
    fprintf(stderr, "%s: %s\n", me, why);
    bad = 1;
  }
  if (!la_metrics_listen_ok(me, set->metrics_listen)) bad = 1;
  if (set->reconnect_min_ms > set->reconnect_max_ms) {
    fprintf(stderr, "%s: global.reconnect_min exceeds global.reconnect_max\n",
            me);
    bad = 1;
  }
  return bad ? -1 : 0;
}

/* --check-config beyond syntax: the secret, the spool directory and the
 * directories of the pid and port files, as the user who runs it. Returns
 * 0, or -1 after naming each problem. */
static int la__check(const void *sp) {
  const la_la_settings_t *s = sp;
  const char *me = "la-localagent";
  int bad = 0;
  if (s->secret_file[0] &&
      la_daemon_check_secret(me, "global.secret_file", s->secret_file))
    bad = 1;
  if (s->spool_dir[0] &&
      la_daemon_check_dir(me, "global.spool_dir", s->spool_dir, 1, 1))
    bad = 1;
  if (s->pid_file[0] &&
      la_daemon_check_file_dir(me, "agent.pid_file", s->pid_file))
    bad = 1;
  if (s->port_file[0] &&
      la_daemon_check_file_dir(me, "agent.port_file", s->port_file))
    bad = 1;
  return bad ? -1 : 0;
}

/* The queue's notes (torn tails, write failures) go to the daemon's log. */
static void la__note(void *arg, const char *msg) {
  (void)arg;
  la_log_warnx("%s", msg);
}

/* Accounts for what a crashed run left unresolved in the log: a cycle taken
 * without its trace becomes a TraceMissing, a rank without its end gets a
 * RankEnd (the application lost its agent and stopped profiling). */
static void la__on_recovered(void *arg, int what, const la_outq_key_t *k) {
  la_agent_t *ag = arg;
  if (what == LA_OUTQ_REC_TAKEN) {
    if (la_uplink_log_missing(ag, k->app_id, k->rank, k->cycle_tag,
                              "LocalAgent crashed while compacting") == 0)
      ag->st.missing_at_restart++;
    la_log_warnx(
        "%s rank %u cycle %llu was being compacted when the agent "
        "stopped: recorded missing",
        k->app_id, k->rank, (unsigned long long)k->cycle_tag);
    return;
  }
  La__RankEnd e = LA__RANK_END__INIT;
  e.app_id = (char *)k->app_id;
  e.rank = k->rank;
  e.reason = "LocalAgent restarted";
  if (la_uplink_log(ag, LA__MSG_TYPE__MSG_RANK_END, &e.base, &e.seq) == 0)
    ag->st.ranks_ended_at_restart++;
  la_log_info("%s rank %u was registered when the agent stopped: ended",
              k->app_id, k->rank);
}

static la_agent_t la__agent; /* the daemon's one instance, owned here */
static const la_daemon_def_t la__def;

/* Ends the loop. Every message is in the log already; compactions still in
 * flight finish (la_pool_stop in main, after uv_run returns) and append
 * their traces before the queue is closed in main. */
static void la__finish(la_agent_t *ag) {
  if (ag->draining == 2) return;
  ag->draining = 2;
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  if (q.items)
    la_log_info(
        "%llu unacknowledged messages stay in the log for the next "
        "start",
        (unsigned long long)q.items);
  if (ag->jobs_in_flight)
    la_log_info("finishing %d compactions before exit", ag->jobs_in_flight);
  la_outq_sync(ag->q);
  la_uplink_stop(ag);
  la_daemon_close_all(ag->loop);
}

/* la_agent_events_t.on_progress: finishes a drain once every job is done,
 * every connection freed and (with a GlobalAgent) every message
 * acknowledged. */
static void la__check_drained(la_agent_t *ag) {
  if (ag->draining != 1) return;
  if (ag->jobs_in_flight > 0 || ag->n_conns > 0) return;
  if (ag->set.global[0] && !la_uplink_idle(ag)) return;
  la_log_info("drained: every trace compacted%s",
              ag->set.global[0] ? " and acknowledged" : "");
  la__finish(ag);
}

static void la__on_drain_timeout(uv_timer_t *t) {
  la_agent_t *ag = t->data;
  la_log_warnx(
      "drain_timeout reached: what is not acknowledged stays in "
      "the log");
  la__finish(ag);
}

static void la__drain(void *daemon) {
  la_agent_t *ag = daemon;
  if (ag->draining) {
    la_log_warnx("second signal: exiting after the compactions in flight");
    la__finish(ag);
    return;
  }
  ag->draining = 1;
  la_notify_stopping("draining");
  la_log_info("draining: no new connections; finishing %d jobs",
              ag->jobs_in_flight);
  la_listener_stop(ag);
  for (la_session_t *s = ag->sessions, *next; s; s = next) {
    next = s->next;
    la_session_close(s, "agent shutdown");
  }
  uv_timer_start(&ag->drain_timer, la__on_drain_timeout,
                 (uint64_t)ag->set.drain_ms, 0);
  la__check_drained(ag);
}

static void la__reload(void *daemon) {
  la_agent_t *ag = daemon;
  la_la_settings_t n;
  char path[512];
  if (la_daemon_reload_begin(&la__def, &n, path, sizeof path) != 0) return;
  la_compact_spec_parse(n.compact, &ag->compact, NULL, 0);
  if (strcmp(n.listen, ag->set.listen))
    la_log_warnx("SIGHUP: agent.listen changes need a restart");
  if (strcmp(n.global, ag->set.global) ||
      strcmp(n.secret_file, ag->set.secret_file) ||
      strcmp(n.spool_dir, ag->set.spool_dir) ||
      n.spool_fsync != ag->set.spool_fsync ||
      n.spool_fsync_ms != ag->set.spool_fsync_ms)
    la_log_warnx(
        "SIGHUP: global.address, secret_file, spool_dir and "
        "spool_fsync* changes need a restart");
  la_la_settings_t old = ag->set;
  ag->set = n;
  /* what needs a restart keeps its running value */
  memcpy(ag->set.listen, old.listen, sizeof old.listen);
  memcpy(ag->set.global, old.global, sizeof old.global);
  memcpy(ag->set.secret_file, old.secret_file, sizeof old.secret_file);
  memcpy(ag->set.spool_dir, old.spool_dir, sizeof old.spool_dir);
  ag->set.spool_fsync = old.spool_fsync;
  ag->set.spool_fsync_ms = old.spool_fsync_ms;
  memcpy(ag->set.port_file, old.port_file, sizeof old.port_file);
  memcpy(ag->set.pid_file, old.pid_file, sizeof old.pid_file);
  ag->set.threads = old.threads;
  la_outq_set_limits(ag->q, n.queue_bytes, n.spool_bytes);
  la_agent_metrics_reload(ag);
  la_daemon_reload_done(path);
}

static const la_daemon_def_t la__def = {
    "la-localagent",
    LA_AGENT_VERSION,

    "The LA LocalAgent: accepts registrations and data-ready "
    "notifications from\nLA-instrumented applications on this node, "
    "compacts their per-element\ntraces and sends them to the "
    "GlobalAgent. See docs/localagent.md.",
    la_la_keys,
    la__validate,
    la__check,
    offsetof(la_la_settings_t, log_target),
    offsetof(la_la_settings_t, log_level),
    la__reload,
    la__drain};

#define LA__KEEP (64u << 20)

int main(int argc, char **argv) {
  la_agent_t *ag = &la__agent;
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, (int)(LA__KEEP / 2)); /* glibc's maximum */
  mallopt(M_TRIM_THRESHOLD, (int)LA__KEEP);
#endif
  int rc = la_daemon_begin(&la__def, argc, argv, &ag->set, ag->config_path,
                           sizeof ag->config_path);
  if (rc >= 0) return rc;
  la_compact_spec_parse(ag->set.compact, &ag->compact, NULL, 0);
  if (ag->set.host[0])
    snprintf(ag->host, sizeof ag->host, "%.127s", ag->set.host);
  else if (gethostname(ag->host, sizeof ag->host - 1) != 0)
    snprintf(ag->host, sizeof ag->host, "localhost");
  /* libuv's pool runs none of the agent's work (the compaction threads
   * are pool.c's): one thread, for the daemon's start-up job */
  setenv("UV_THREADPOOL_SIZE", "1", 1); /* before the pool starts */
  char why[512];
  if (la_placement_cpus(ag->set.cpus, why, sizeof why) != 0) {
    la_log_error("%s", why);
    return 1;
  }
  ag->loop = uv_default_loop();
  ag->start_ms = la_now_ms();
  ag->ev.on_progress = la__check_drained;
  ag->ev.on_rank_refused = la_session_refused;

  int fsync_each = ag->set.spool_fsync && ag->set.spool_fsync_ms == 0;
  if (la_outq_open(ag->set.spool_dir, ag->set.queue_bytes, ag->set.spool_bytes,
                   0, fsync_each, la__note, NULL, &ag->q, why,
                   sizeof why) != 0) {
    la_log_error("global.spool_dir: %s (la-localagent --check-config "
                 "checks the directory and its parent)",
                 why);
    return 1;
  }
  int made = 0;
  if (la_instance_load(ag->set.spool_dir, ag->instance, &made, why,
                       sizeof why) != 0) {
    la_log_error("global.spool_dir: %s", why);
    la_outq_close(ag->q);
    return 1;
  }
  la_log_info("agent.host '%s', instance %s (%s)", ag->host, ag->instance,
              !ag->set.spool_dir[0] ? "new: no log directory to keep it"
              : made                ? "new, kept in the log directory"
                                    : "from the log directory");
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  if (q.items || q.torn_bytes)
    la_log_info(
        "log %s holds %llu messages from an earlier run: they go "
        "first (%llu torn bytes cut)",
        ag->set.spool_dir, (unsigned long long)q.items,
        (unsigned long long)q.torn_bytes);
  la_outq_recovered(ag->q, la__on_recovered, ag);
  la_app_ipc_reap_orphans(); /* sets an earlier run left (app_ipc.h) */
  la_daemon_signals(&la__def, ag, ag->loop, ag->sigs);
  if (la_listener_start(ag, why, sizeof why) != 0) {
    la_log_error("%s", why);
    la_outq_close(ag->q);
    return 1;
  }
  la_daemon_write_pid(ag->set.pid_file);
  uv_timer_init(ag->loop, &ag->drain_timer);
  ag->drain_timer.data = ag;
  if (ag->set.spool_fsync && ag->set.spool_fsync_ms > 0 &&
      la_syncer_start(ag->q, (uint64_t)ag->set.spool_fsync_ms, &ag->syncer,
                      why, sizeof why) != 0) {
    la_log_error("%s", why);
    return 1;
  }
  if (la_pool_start(ag->loop, (int)ag->set.threads, &ag->pool, why,
                    sizeof why) != 0) {
    la_log_error("%s", why);
    return 1;
  }
  if (la_lane_start(ag->loop, &ag->lane, why, sizeof why) != 0) {
    la_log_error("%s", why);
    return 1;
  }
  if (la_uplink_start(ag, why, sizeof why) != 0) {
    la_log_error("%s", why);
    return 1;
  }
  if (la_agent_metrics_start(ag, why, sizeof why) != 0) {
    la_log_error("%s", why);
    return 1;
  }
  la_log_info(
      "%s ready (pid %d, %lld threads, compaction %s, GlobalAgent "
      "%s)",
      LA_AGENT_VERSION, (int)getpid(), (long long)ag->set.threads,
      ag->set.compact, ag->set.global[0] ? ag->set.global : "none: spooling");
  char st[600];
  snprintf(st, sizeof st, "listening on %.200s; GlobalAgent %.300s", ag->bound,
           ag->set.global[0] ? ag->set.global : "none");
  la_daemon_run(ag->loop, st);
  /* compactions still in flight finish, their traces appended */
  la_pool_stop(ag->pool);
  la_agent_metrics_stop(ag);
  la_lane_stop(ag->lane); /* before the loop's wake-up descriptor closes */
  uv_loop_close(ag->loop);
  la_syncer_stop(ag->syncer);
  la_outq_close(ag->q);
  la_daemon_end(ag->set.pid_file);
  return 0;
}
