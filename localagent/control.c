/* control.c: the LocalAgent's status report, answered to any connection that
 * sends StatusRequest (lactl status). Key/value rows: daemon, counters of
 * connections, registrations, cycles received / compacted / sent / spooled /
 * dropped / skipped by applications, queue depths, compaction throughput, the
 * GlobalAgent link, and one row per registered application rank.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "la_sockio.h"

typedef struct {
  La__StatusReply r;
  size_t n, cap;
} la__rep_t;

static void la__row(la__rep_t *rep, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void la__row(la__rep_t *rep, const char *key, const char *fmt, ...) {
  if (rep->n == rep->cap) {
    size_t cap = rep->cap ? rep->cap * 2 : 64;
    La__StatusEntry **e = realloc(rep->r.entries, cap * sizeof *e);
    if (!e) return;
    rep->r.entries = e;
    rep->cap = cap;
  }
  La__StatusEntry *e = malloc(sizeof *e);
  char *k = strdup(key), *v = malloc(256);
  if (!e || !k || !v) {
    free(e);
    free(k);
    free(v);
    return;
  }
  la__status_entry__init(e);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, 256, fmt, ap);
  va_end(ap);
  e->key = k;
  e->value = v;
  rep->r.entries[rep->n++] = e;
  rep->r.n_entries = rep->n;
}

#define U(x) ((unsigned long long)(x))

La__StatusReply *la_status_reply(la_agent_t *ag) {
  la__rep_t *rep = calloc(1, sizeof *rep);
  if (!rep) return NULL;
  la__status_reply__init(&rep->r);
  rep->r.daemon = strdup("la-localagent");
  const la_agent_stats_t *st = &ag->st;
  la_outq_stats_t q;
  la_outq_get_stats(ag->q, &q);
  la__row(rep, "version", "%s", LA_AGENT_VERSION);
  la__row(rep, "host", "%s", ag->host);
  la__row(rep, "listen", "%s", ag->bound);
  la__row(rep, "uptime_s", "%.1f", (la_now_ms() - ag->start_ms) / 1000.0);
  la__row(rep, "state", "%s", ag->draining ? "draining" : "running");
  la__row(rep, "connections", "%d", ag->n_conns);
  la__row(rep, "connections_accepted", "%llu", U(st->conns_accepted));
  la__row(rep, "connections_refused", "%llu", U(st->conns_refused));
  la__row(rep, "connections_timed_out", "%llu", U(st->conns_timed_out));
  la__row(rep, "bad_frames", "%llu", U(st->bad_frames));
  la__row(rep, "apps", "%d", ag->n_apps);
  la__row(rep, "registrations", "%llu", U(st->regs));
  la__row(rep, "registrations_refused", "%llu", U(st->regs_refused));
  la__row(rep, "ranks_ended", "%llu", U(st->apps_ended));
  la__row(rep, "cycles_received", "%llu", U(st->cycles_received));
  la__row(rep, "cycles_compacted", "%llu", U(st->cycles_compacted));
  la__row(rep, "cycles_dropped", "%llu", U(st->cycles_dropped));
  la__row(rep, "cycles_skipped_by_apps", "%llu", U(st->app_skipped));
  la__row(rep, "app_waits", "%llu", U(st->app_waits));
  la__row(rep, "jobs_in_flight", "%d", ag->jobs_in_flight);
  la__row(rep, "compaction_points", "%llu", U(st->points));
  la__row(rep, "compaction_ns_per_point", "%.3f",
          st->points ? (double)st->compact_ns / (double)st->points : 0.0);
  la__row(rep, "compacted_bytes", "%llu", U(st->bytes_out));
  la__row(rep, "global_address", "%s",
          ag->set.global[0] ? ag->set.global : "(none)");
  la__row(rep, "global_link", "%s", la_uplink_state(ag));
  la__row(rep, "global_connects", "%llu", U(la_uplink_connects(ag)));
  la__row(rep, "global_last_error", "%s", la_uplink_last_error(ag));
  la__row(rep, "queue_items", "%llu", U(q.items));
  la__row(rep, "queue_mem_bytes", "%llu", U(q.mem_bytes));
  la__row(rep, "spool_items", "%llu", U(q.disk_items));
  la__row(rep, "spool_bytes", "%llu", U(q.disk_bytes));
  la__row(rep, "messages_queued", "%llu", U(q.pushed));
  la__row(rep, "messages_acked", "%llu", U(q.acked));
  la__row(rep, "messages_spilled", "%llu", U(q.spilled));
  la__row(rep, "messages_dropped", "%llu", U(q.dropped + st->queue_full));
  la__row(rep, "last_sent_seq", "%llu", U(q.last_sent));
  la__row(rep, "last_acked_seq", "%llu", U(q.last_acked));
  for (la_session_t *s = ag->sessions; s; s = s->next) {
    if (s->state != LA_SESS_APP) continue;
    char key[200];
    snprintf(key, sizeof key, "app.%s.rank%u", s->app_id, s->rank);
    la__row(rep, key, "pid %d, %llu elements, %llu cycles, %llu skipped, "
            "%llu waits, %d in flight", s->pid, U(s->ipc.n_elements),
            U(s->cycles), U(s->skipped), U(s->waits), s->jobs);
  }
  return &rep->r;
}

void la_status_reply_free(La__StatusReply *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_entries; i++) {
    free(r->entries[i]->key);
    free(r->entries[i]->value);
    free(r->entries[i]);
  }
  free(r->entries);
  free(r->daemon);
  free(r); /* r is the first member of la__rep_t */
}
