/* SPDX-License-Identifier: BSD-3-Clause */
/* control.c: the LocalAgent's status report, answered to any connection that
 * sends StatusRequest (lactl status). Key/value rows: daemon, counters of
 * connections, registrations, cycles received / compacted / dropped / skipped
 * by applications, the queue and its log (items, bytes, segments, replayed,
 * recorded missing, dropped — each refusal counted once), compaction
 * throughput, the GlobalAgent link, and one row per registered rank.
 * Each value is typed too (la_status.h): counters, gauges, info, and the
 * ranks grouped by application, for lactl status --json and /metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "la_sockio.h"
#include "la_status.h"

#define U(x) ((unsigned long long)(x))

/* The application row of app_id in rep (appended when new). */
static La__StatusApp *la__app(La__StatusReply *rep, const char *app_id) {
  for (size_t i = 0; i < rep->n_apps; i++)
    if (!strcmp(rep->apps[i]->app_id, app_id)) return rep->apps[i];
  return la_status_app(rep, app_id);
}

La__StatusReply *la_status_reply(la_agent_t *ag) {
  La__StatusReply *rep = la_status_new("la-localagent");
  if (!rep) return NULL;
  const la_agent_stats_t *st = &ag->st;
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  la_status_info(rep, "version", "daemon version", LA_AGENT_VERSION);
  la_status_info(rep, "host", "node name reported upstream", ag->host);
  la_status_info(rep, "listen", "address applications connect to", ag->bound);
  la_status_real(rep, "uptime_seconds", "seconds since start", "%.1f",
                 (la_now_ms() - ag->start_ms) / 1000.0);
  la_status_info(rep, "state", "running or draining",
                 ag->draining ? "draining" : "running");
  la_status_gauge(rep, "connections", "open connections", ag->n_conns);
  la_status_counter(rep, "connections_accepted", "connections accepted",
                    st->conns_accepted);
  la_status_counter(rep, "connections_refused", "connections refused (limits)",
                    st->conns_refused);
  la_status_counter(rep, "connections_timed_out",
                    "connections closed by a deadline", st->conns_timed_out);
  la_status_counter(rep, "bad_frames", "connections closed for a bad frame",
                    st->bad_frames);
  la_status_gauge(rep, "apps", "registered application processes", ag->n_apps);
  la_status_counter(rep, "registrations", "registrations accepted", st->regs);
  la_status_counter(rep, "registrations_refused", "registrations refused",
                    st->regs_refused);
  la_status_counter(rep, "registrations_refused_memory",
                    "registrations refused: over agent.max_memory_per_uid "
                    "or agent.max_memory",
                    st->regs_refused_memory);
  la_status_counter(rep, "ranks_refused_upstream",
                    "ranks the GlobalAgent refused: their app id belongs "
                    "to another user",
                    st->ranks_refused_upstream);
  la_status_gauge(rep, "app_memory_bytes",
                  "memory estimate of the registrations held "
                  "(agent.max_memory)",
                  (int64_t)ag->mem_bytes);
  la_status_counter(rep, "ranks_ended", "registered ranks that ended",
                    st->apps_ended);
  la_status_counter(rep, "cycles_received", "data-ready notifications",
                    st->cycles_received);
  la_status_counter(rep, "cycles_compacted", "cycles compacted",
                    st->cycles_compacted);
  la_status_counter(rep, "cycles_dropped", "cycles not compacted",
                    st->cycles_dropped);
  la_status_counter(rep, "cycles_behind",
                    "cycles dropped beyond agent.max_backlog (the agent "
                    "was behind; recorded missing)",
                    st->cycles_behind);
  la_status_counter(rep, "cycles_coarse",
                    "cycles beyond agent.max_backlog taken coarsely, in "
                    "blocks of elements with exact totals (agent.behind)",
                    st->cycles_coarse);
  la_status_real_counter(rep, "coarse_seconds",
                         "seconds the lane thread spent on coarse cycles, "
                         "from the buffer's read to the trace in the log",
                         "%.6f", (double)st->coarse_ns / 1e9);
  la_status_counter(rep, "robust_coarse_cycles",
                    "cycles whose robust weights were mostly below "
                    "the timer's resolution (light elements)",
                    st->robust_coarse);
  la_status_counter(rep, "cycles_skipped_by_apps",
                    "cycles applications skipped (no buffer free)",
                    st->app_skipped);
  la_status_counter(rep, "app_waits", "times applications waited for a buffer",
                    st->app_waits);
  la_status_gauge(rep, "jobs_in_flight",
                  "compaction jobs and lane cycles in flight",
                  ag->jobs_in_flight);
  la_status_counter(rep, "compaction_points", "values compacted", st->points);
  la_status_real_counter(rep, "compaction_seconds",
                         "seconds spent compacting (divided by "
                         "compaction_points: time per value)",
                         "%.6f", (double)st->compact_ns / 1e9);
  la_status_row(rep, "compaction_ns_per_point", "%.3f",
                st->points ? (double)st->compact_ns / (double)st->points : 0.0);
  la_status_counter(rep, "compacted_bytes", "bytes of compact traces",
                    st->bytes_out);
  la_status_info(rep, "global_address", "the GlobalAgent's address",
                 ag->set.global[0] ? ag->set.global : "(none)");
  la_status_info(rep, "global_link",
                 "state of the GlobalAgent link (with shards: the first "
                 "not connected)",
                 la_uplink_state(ag));
  char links[1024];
  la_uplink_states(ag, links, sizeof links);
  la_status_info(rep, "global_links", "each shard's link: address and state",
                 links);
  la_status_counter(rep, "global_connects", "GlobalAgent links established",
                    la_uplink_connects(ag));
  la_status_info(rep, "global_last_error", "last error of the link",
                 la_uplink_last_error(ag));
  la_status_gauge(rep, "queue_items", "messages not yet acknowledged",
                  (int64_t)q.items);
  la_status_gauge(rep, "queue_mem_bytes", "bytes of them in memory",
                  (int64_t)q.mem_bytes);
  la_status_gauge(rep, "spool_items", "messages in the write-ahead log",
                  (int64_t)q.log_items);
  la_status_gauge(rep, "spool_bytes", "bytes of the write-ahead log",
                  (int64_t)q.log_bytes);
  la_status_gauge(rep, "log_segments", "segment files of the log",
                  (int64_t)q.log_segments);
  la_status_counter(rep, "log_replayed", "messages replayed at start",
                    q.replayed);
  la_status_counter(rep, "log_torn_bytes",
                    "bytes of records cut short (a crash while writing) "
                    "cut off the log at start",
                    q.torn_bytes);
  la_status_counter(rep, "log_damaged_bytes",
                    "damaged log bytes skipped at start", q.damaged_bytes);
  la_status_counter(rep, "log_damaged_spans",
                    "damaged spans of the log skipped at start",
                    q.damaged_spans);
  la_status_counter(rep, "log_damaged_cycles",
                    "taken cycles recorded missing: their record may have "
                    "been in damaged log",
                    q.damaged_taken);
  la_status_counter(rep, "log_fsyncs", "fsyncs of the log", q.fsyncs);
  la_status_counter(rep, "log_unreadable", "unreadable log records",
                    q.bad_reads);
  la_status_counter(rep, "cycles_taken", "cycles taken from applications",
                    q.taken);
  la_status_gauge(rep, "cycles_pending", "cycles taken, not yet logged",
                  (int64_t)q.pending_taken);
  la_status_counter(rep, "traces_missing_recorded",
                    "cycles recorded missing with a reason", q.missing);
  la_status_counter(rep, "missing_at_restart",
                    "taken cycles of a crashed run recorded missing",
                    st->missing_at_restart);
  la_status_counter(rep, "ranks_ended_at_restart",
                    "ranks of a crashed run ended at restart",
                    st->ranks_ended_at_restart);
  la_status_counter(rep, "messages_queued", "messages queued upstream",
                    q.pushed);
  la_status_counter(rep, "messages_acked", "messages acknowledged", q.acked);
  la_status_counter(rep, "messages_dropped", "messages refused by the queue",
                    q.dropped);
  la_status_gauge(rep, "last_sent_seq", "sequence number last sent",
                  (int64_t)q.last_sent);
  la_status_gauge(rep, "last_acked_seq", "sequence number last acknowledged",
                  (int64_t)q.last_acked);
  for (la_session_t *s = ag->sessions; s; s = s->next) {
    if (s->state != LA_SESS_APP) continue;
    char key[200];
    snprintf(key, sizeof key, "app.%s.rank%u", s->app_id, s->rank);
    la_status_row(rep, key,
                  "pid %d, %llu elements, %llu cycles, %llu skipped, "
                  "%llu waits, %d in flight",
                  s->pid, U(s->ipc.n_elements), U(s->cycles), U(s->skipped),
                  U(s->waits), s->jobs);
    La__StatusRank *k = la_status_rank(la__app(rep, s->app_id), s->rank);
    if (!k) continue;
    k->pid = s->pid;
    k->elements = s->ipc.n_elements;
    k->cycles = s->cycles;
    k->skipped = s->skipped;
    k->waits = s->waits;
    k->in_flight = s->jobs;
  }
  return rep;
}

void la_status_reply_free(La__StatusReply *r) {
  la_status_free(r);
}
