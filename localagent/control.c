/* control.c: the LocalAgent's status report, answered to any connection that
 * sends StatusRequest (lactl status). Key/value rows: daemon, counters of
 * connections, registrations, cycles received / compacted / dropped / skipped
 * by applications, the queue and its log (items, bytes, segments, replayed,
 * recorded missing, dropped — each refusal counted once), compaction
 * throughput, the GlobalAgent link, and one row per registered rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "la_sockio.h"
#include "la_status.h"

#define U(x) ((unsigned long long)(x))

La__StatusReply *la_status_reply(la_agent_t *ag) {
  La__StatusReply *rep = la_status_new("la-localagent");
  if (!rep) return NULL;
  const la_agent_stats_t *st = &ag->st;
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  la_status_row(rep, "version", "%s", LA_AGENT_VERSION);
  la_status_row(rep, "host", "%s", ag->host);
  la_status_row(rep, "listen", "%s", ag->bound);
  la_status_row(rep, "uptime_s", "%.1f", (la_now_ms() - ag->start_ms) / 1000.0);
  la_status_row(rep, "state", "%s", ag->draining ? "draining" : "running");
  la_status_row(rep, "connections", "%d", ag->n_conns);
  la_status_row(rep, "connections_accepted", "%llu", U(st->conns_accepted));
  la_status_row(rep, "connections_refused", "%llu", U(st->conns_refused));
  la_status_row(rep, "connections_timed_out", "%llu", U(st->conns_timed_out));
  la_status_row(rep, "bad_frames", "%llu", U(st->bad_frames));
  la_status_row(rep, "apps", "%d", ag->n_apps);
  la_status_row(rep, "registrations", "%llu", U(st->regs));
  la_status_row(rep, "registrations_refused", "%llu", U(st->regs_refused));
  la_status_row(rep, "ranks_ended", "%llu", U(st->apps_ended));
  la_status_row(rep, "cycles_received", "%llu", U(st->cycles_received));
  la_status_row(rep, "cycles_compacted", "%llu", U(st->cycles_compacted));
  la_status_row(rep, "cycles_dropped", "%llu", U(st->cycles_dropped));
  la_status_row(rep, "cycles_skipped_by_apps", "%llu", U(st->app_skipped));
  la_status_row(rep, "app_waits", "%llu", U(st->app_waits));
  la_status_row(rep, "jobs_in_flight", "%d", ag->jobs_in_flight);
  la_status_row(rep, "compaction_points", "%llu", U(st->points));
  la_status_row(rep, "compaction_ns_per_point", "%.3f",
          st->points ? (double)st->compact_ns / (double)st->points : 0.0);
  la_status_row(rep, "compacted_bytes", "%llu", U(st->bytes_out));
  la_status_row(rep, "global_address", "%s",
          ag->set.global[0] ? ag->set.global : "(none)");
  la_status_row(rep, "global_link", "%s", la_uplink_state(ag));
  la_status_row(rep, "global_connects", "%llu", U(la_uplink_connects(ag)));
  la_status_row(rep, "global_last_error", "%s", la_uplink_last_error(ag));
  la_status_row(rep, "queue_items", "%llu", U(q.items));
  la_status_row(rep, "queue_mem_bytes", "%llu", U(q.mem_bytes));
  la_status_row(rep, "spool_items", "%llu", U(q.log_items));
  la_status_row(rep, "spool_bytes", "%llu", U(q.log_bytes));
  la_status_row(rep, "log_segments", "%llu", U(q.log_segments));
  la_status_row(rep, "log_replayed", "%llu", U(q.replayed));
  la_status_row(rep, "log_torn_bytes", "%llu", U(q.torn_bytes));
  la_status_row(rep, "log_fsyncs", "%llu", U(q.fsyncs));
  la_status_row(rep, "log_unreadable", "%llu", U(q.bad_reads));
  la_status_row(rep, "cycles_taken", "%llu", U(q.taken));
  la_status_row(rep, "cycles_pending", "%llu", U(q.pending_taken));
  la_status_row(rep, "traces_missing_recorded", "%llu", U(q.missing));
  la_status_row(rep, "missing_at_restart", "%llu", U(st->missing_at_restart));
  la_status_row(rep, "ranks_ended_at_restart", "%llu",
                U(st->ranks_ended_at_restart));
  la_status_row(rep, "messages_queued", "%llu", U(q.pushed));
  la_status_row(rep, "messages_acked", "%llu", U(q.acked));
  la_status_row(rep, "messages_dropped", "%llu", U(q.dropped));
  la_status_row(rep, "last_sent_seq", "%llu", U(q.last_sent));
  la_status_row(rep, "last_acked_seq", "%llu", U(q.last_acked));
  for (la_session_t *s = ag->sessions; s; s = s->next) {
    if (s->state != LA_SESS_APP) continue;
    char key[200];
    snprintf(key, sizeof key, "app.%s.rank%u", s->app_id, s->rank);
    la_status_row(rep, key, "pid %d, %llu elements, %llu cycles, %llu skipped, "
            "%llu waits, %d in flight", s->pid, U(s->ipc.n_elements),
            U(s->cycles), U(s->skipped), U(s->waits), s->jobs);
  }
  return rep;
}

void la_status_reply_free(La__StatusReply *r) { la_status_free(r); }
