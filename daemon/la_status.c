/* SPDX-License-Identifier: BSD-3-Clause */
/* la_status.c: StatusReply builder and its Prometheus text rendering (see
 * la_status.h). */
#include "la_status.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"

/* A new message of type d, zeroed and initialised (calloc'ed: freed with
 * the rest of the reply by la_status_free). NULL when out of memory. */
static void *la__msg_new(const ProtobufCMessageDescriptor *d) {
  ProtobufCMessage *m = calloc(1, d->sizeof_message);
  if (m) protobuf_c_message_init(d, m);
  return m;
}

La__StatusReply *la_status_new(const char *daemon) {
  La__StatusReply *r = la__msg_new(&la__status_reply__descriptor);
  if (!r || !(r->daemon = strdup(daemon))) {
    free(r);
    return NULL;
  }
  return r;
}

/* Makes room for one more pointer in *v (n used): grows at powers of 2
 * from 16. Returns 0 or -1. */
static int la__grow(void *v, size_t n) {
  void ***p = v;
  if (n != 0 && (n < 16 || (n & (n - 1)) != 0)) return 0;
  size_t cap = n ? n * 2 : 16;
  void **e = realloc(*p, cap * sizeof *e);
  if (!e) return -1;
  *p = e;
  return 0;
}

static void la__vrow(La__StatusReply *r, const char *key, const char *fmt,
                     va_list ap) {
  if (!r || la__grow(&r->entries, r->n_entries)) return;
  La__StatusEntry *e = malloc(sizeof *e);
  char *k = strdup(key), *v = malloc(256);
  if (!e || !k || !v) {
    free(e);
    free(k);
    free(v);
    return;
  }
  la__status_entry__init(e);
  vsnprintf(v, 256, fmt, ap);
  e->key = k;
  e->value = v;
  r->entries[r->n_entries++] = e;
}

void la_status_row(La__StatusReply *r, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  la__vrow(r, key, fmt, ap);
  va_end(ap);
}

/* Appends a typed metric (name and help copied); NULL when out of memory. */
static La__StatusMetric *la__metric(La__StatusReply *r, const char *key,
                                    const char *help, La__StatusKind kind) {
  if (!r || la__grow(&r->metrics, r->n_metrics)) return NULL;
  La__StatusMetric *m = la__msg_new(&la__status_metric__descriptor);
  if (!m) return NULL;
  m->kind = kind;
  if (!(m->name = strdup(key)) || (help && !(m->help = strdup(help)))) {
    free(m->name);
    free(m);
    return NULL;
  }
  r->metrics[r->n_metrics++] = m;
  return m;
}

void la_status_counter(La__StatusReply *r, const char *key, const char *help,
                       uint64_t v) {
  la_status_row(r, key, "%" PRIu64, v);
  La__StatusMetric *m =
      la__metric(r, key, help, LA__STATUS_KIND__STATUS_COUNTER);
  if (m) {
    m->has_integer = 1;
    m->integer = v > INT64_MAX ? INT64_MAX : (int64_t)v;
  }
}

void la_status_gauge(La__StatusReply *r, const char *key, const char *help,
                     int64_t v) {
  la_status_row(r, key, "%" PRId64, v);
  La__StatusMetric *m = la__metric(r, key, help, LA__STATUS_KIND__STATUS_GAUGE);
  if (m) {
    m->has_integer = 1;
    m->integer = v;
  }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void la_status_real(La__StatusReply *r, const char *key, const char *help,
                    const char *fmt, double v) {
  la_status_row(r, key, fmt, v);
  La__StatusMetric *m = la__metric(r, key, help, LA__STATUS_KIND__STATUS_GAUGE);
  if (m) {
    m->has_real = 1;
    m->real = v;
  }
}
void la_status_real_counter(La__StatusReply *r, const char *key,
                            const char *help, const char *fmt, double v) {
  la_status_row(r, key, fmt, v);
  La__StatusMetric *m =
      la__metric(r, key, help, LA__STATUS_KIND__STATUS_COUNTER);
  if (m) {
    m->has_real = 1;
    m->real = v;
  }
}
#pragma GCC diagnostic pop

void la_status_info(La__StatusReply *r, const char *key, const char *help,
                    const char *v) {
  la_status_row(r, key, "%s", v);
  La__StatusMetric *m = la__metric(r, key, help, LA__STATUS_KIND__STATUS_INFO);
  if (m && !(m->text = strdup(v))) m->text = NULL;
}

La__StatusApp *la_status_app(La__StatusReply *r, const char *app_id) {
  if (!r || la__grow(&r->apps, r->n_apps)) return NULL;
  La__StatusApp *a = la__msg_new(&la__status_app__descriptor);
  if (!a || !(a->app_id = strdup(app_id))) {
    free(a);
    return NULL;
  }
  r->apps[r->n_apps++] = a;
  return a;
}

La__StatusRank *la_status_rank(La__StatusApp *a, uint32_t rank) {
  if (!a || la__grow(&a->ranks, a->n_ranks)) return NULL;
  La__StatusRank *k = la__msg_new(&la__status_rank__descriptor);
  if (!k) return NULL;
  k->rank = rank;
  a->ranks[a->n_ranks++] = k;
  return k;
}

void la_status_agent(La__StatusReply *r, const char *host, const char *address,
                     uint64_t messages, uint64_t acked_seq) {
  if (!r || la__grow(&r->agents, r->n_agents)) return;
  La__StatusAgent *g = la__msg_new(&la__status_agent__descriptor);
  if (!g) return;
  g->host = strdup(host);
  g->address = strdup(address);
  if (!g->host || !g->address) {
    free(g->host);
    free(g->address);
    free(g);
    return;
  }
  g->messages = messages;
  g->acked_seq = acked_seq;
  r->agents[r->n_agents++] = g;
}

void la_status_reason(La__StatusReply *r, const char *reason, uint64_t count) {
  if (!r || la__grow(&r->missing, r->n_missing)) return;
  La__StatusReason *s = la__msg_new(&la__status_reason__descriptor);
  if (!s || !(s->reason = strdup(reason))) {
    free(s);
    return;
  }
  s->count = count;
  r->missing[r->n_missing++] = s;
}

/* Every piece of a reply built here comes from malloc (calloc, realloc,
 * strdup), which is what protobuf-c's default allocator frees; an optional
 * string never set is NULL (proto2), so it walks the reply as it is. */
void la_status_free(La__StatusReply *r) {
  if (r) protobuf_c_message_free_unpacked(&r->base, NULL);
}

/* ------------------------------------------------------------ exposition */

/* A label value with \, " and newline escaped. */
static void la__label(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '\\')
      fputs("\\\\", f);
    else if (*s == '"')
      fputs("\\\"", f);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
  fputc('"', f);
}

/* HELP (escaped: \ and newline) and TYPE lines of prefix+name+suffix. */
static void la__head(FILE *f, const char *prefix, const char *name,
                     const char *suffix, const char *help, const char *type) {
  fprintf(f, "# HELP %s%s%s ", prefix, name, suffix);
  for (const char *s = help && *help ? help : name; *s; s++) {
    if (*s == '\\')
      fputs("\\\\", f);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
  fprintf(f, "\n# TYPE %s%s%s %s\n", prefix, name, suffix, type);
}

void la_status_number(FILE *f, double v) {
  char b[40];
  for (int p = 15; p <= 17; p++) {
    snprintf(b, sizeof b, "%.*g", p, v);
    if (p == 17 || strtod(b, NULL) == v) break;
  }
  fputs(b, f);
}

/* The info metric (constant labels only: the version) and the state as
 * PREFIX state{state="..."} 1. */
static void la__info(const La__StatusReply *r, const char *prefix, FILE *f) {
  const char *version = NULL, *state = NULL;
  for (size_t i = 0; i < r->n_metrics; i++) {
    const La__StatusMetric *m = r->metrics[i];
    if (m->kind != LA__STATUS_KIND__STATUS_INFO || !m->text) continue;
    if (!strcmp(m->name, "version"))
      version = m->text;
    else if (!strcmp(m->name, "state"))
      state = m->text;
  }
  if (version) {
    la__head(f, prefix, "info", "", "the daemon's version (value 1)", "gauge");
    fprintf(f, "%sinfo{version=", prefix);
    la__label(f, version);
    fputs("} 1\n", f);
  }
  if (state) {
    la__head(f, prefix, "state", "",
             "the daemon's state now, as its label (value 1)", "gauge");
    fprintf(f, "%sstate{state=", prefix);
    la__label(f, state);
    fputs("} 1\n", f);
  }
}

/* One per-application gauge: name, help, and the value of app a. */
typedef struct la__app_gauge {
  int local;   /* a LocalAgent's (1) or the GlobalAgent's (0) */
  int counter; /* cumulative: PREFIX name_total, a counter */
  const char *name, *help;
  uint64_t (*value)(const La__StatusApp *a);
} la__app_gauge_t;

#define LA__SUM(field)                                                         \
  static uint64_t la__app_##field(const La__StatusApp *a) {                    \
    uint64_t s = 0;                                                            \
    for (size_t i = 0; i < a->n_ranks; i++) s += (uint64_t)a->ranks[i]->field; \
    return s;                                                                  \
  }
LA__SUM(cycles)
LA__SUM(skipped)
LA__SUM(waits)
LA__SUM(in_flight)
static uint64_t la__app_n_ranks(const La__StatusApp *a) {
  return a->n_ranks;
}
static uint64_t la__app_nprocs(const La__StatusApp *a) {
  return a->nprocs;
}
static uint64_t la__app_ended(const La__StatusApp *a) {
  return a->ranks_ended;
}

static const la__app_gauge_t la__app_gauges[] = {
    {1, 0, "app_ranks", "ranks of the application registered now",
     la__app_n_ranks},
    {1, 1, "app_cycles_received",
     "cycles received from the application's registered ranks", la__app_cycles},
    {1, 1, "app_cycles_skipped",
     "cycles the application's registered ranks skipped", la__app_skipped},
    {1, 1, "app_buffer_waits",
     "waits for a buffer of the application's registered ranks", la__app_waits},
    {1, 0, "app_jobs_in_flight", "compaction jobs of the application running",
     la__app_in_flight},
    {0, 0, "app_nprocs", "ranks of the application (its size)", la__app_nprocs},
    {0, 1, "app_ranks_ended", "ranks of the application that ended",
     la__app_ended},
};

static void la__apps(const La__StatusReply *r, const char *prefix,
                     size_t max_apps, FILE *f) {
  int local = 0; /* a LocalAgent's apps carry ranks, a GlobalAgent's nprocs */
  for (size_t i = 0; i < r->n_apps; i++)
    if (!r->apps[i]->has_nprocs) local = 1;
  size_t n = r->n_apps < max_apps ? r->n_apps : max_apps;
  la__head(f, prefix, "app_series_dropped", "",
           "applications left without their own series (metrics.max_apps)",
           "gauge");
  fprintf(f, "%sapp_series_dropped %zu\n", prefix, r->n_apps - n);
  if (n == 0) return;
  for (size_t g = 0; g < sizeof la__app_gauges / sizeof *la__app_gauges; g++) {
    const la__app_gauge_t *ag = &la__app_gauges[g];
    if (ag->local != local) continue;
    const char *suffix = ag->counter ? "_total" : "";
    la__head(f, prefix, ag->name, suffix, ag->help,
             ag->counter ? "counter" : "gauge");
    for (size_t i = 0; i < n; i++) {
      fprintf(f, "%s%s%s{app=", prefix, ag->name, suffix);
      la__label(f, r->apps[i]->app_id);
      fprintf(f, "} %" PRIu64 "\n", ag->value(r->apps[i]));
    }
  }
}

/* Messages per connected LocalAgent, summed over connections of one host
 * (one series per host). */
static void la__agents(const La__StatusReply *r, const char *prefix, FILE *f) {
  if (r->n_agents == 0) return;
  la__head(f, prefix, "agent_messages", "_total",
           "messages received from a connected LocalAgent (its connections "
           "now)",
           "counter");
  for (size_t i = 0; i < r->n_agents; i++) {
    const char *host = r->agents[i]->host;
    int seen = 0;
    uint64_t sum = 0;
    for (size_t k = 0; k < r->n_agents && !seen; k++)
      if (!strcmp(r->agents[k]->host, host)) {
        if (k < i) seen = 1;
        sum += r->agents[k]->messages;
      }
    if (seen) continue;
    fprintf(f, "%sagent_messages_total{host=", prefix);
    la__label(f, host);
    fprintf(f, "} %" PRIu64 "\n", sum);
  }
}

int la_status_exposition(const La__StatusReply *r, const char *prefix,
                         size_t max_apps, FILE *f) {
  la__info(r, prefix, f);
  for (size_t i = 0; i < r->n_metrics; i++) {
    const La__StatusMetric *m = r->metrics[i];
    if (m->kind == LA__STATUS_KIND__STATUS_INFO) continue;
    int counter = m->kind == LA__STATUS_KIND__STATUS_COUNTER;
    const char *suffix = counter ? "_total" : "";
    la__head(f, prefix, m->name, suffix, m->help,
             counter ? "counter" : "gauge");
    if (m->has_real) {
      fprintf(f, "%s%s%s ", prefix, m->name, suffix);
      la_status_number(f, m->real);
      fputc('\n', f);
    } else
      fprintf(f, "%s%s%s %" PRId64 "\n", prefix, m->name, suffix, m->integer);
  }
  la__apps(r, prefix, max_apps, f);
  la__agents(r, prefix, f);
  return ferror(f) ? LA_EIO : 0;
}
