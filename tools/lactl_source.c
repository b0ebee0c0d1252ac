/* SPDX-License-Identifier: BSD-3-Clause */
/* lactl_source.c: lactl's two data sources behind one interface (see
 * lactl_source.h).
 *
 * Every question is one Query. The feed source sends it to the GlobalAgent
 * (libla_client: the reply is decoded and validated by the codec, its feed
 * protocol checked); the store source opens the SQLite file read-only (an
 * SQLite URI with mode=ro) and has store/feed_query.c answer it, the
 * code the GlobalAgent answers with. Either way the answer is the same
 * typed QueryReply, turned into lactl's structures by one function per
 * kind; nothing is parsed from text. --db also takes a PostgreSQL URL or
 * connection string (the store GlobalAgent shards share,
 * docs/sharding.md), opened in read-only transactions. A Trace-Set becomes a
 * la_traceset_t exactly as a received one does. Error texts are made here, not
 * taken from either side, so both sources fail with the same words.
 */
#include "lactl_source.h"

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "feed_query.h"
#include "store_db.h"
#include "la_client_internal.h"
#include "la_errors.h"
#include "la_sockio.h"

struct lactl_src {
  la_client_t *c;      /* feed source, or */
  la_store_t *st;      /* store source */
  const char *channel; /* --channel: sets become that channel's view */
  char where[300];
  char err[600];
};

static int la__fail(lactl_src_t *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int la__fail(lactl_src_t *s, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rc = la_verrorf(s->err, sizeof s->err, rc, fmt, ap);
  va_end(ap);
  return rc;
}

/* A failure of the feed: the client's own detail. */
static int la__feed_err(lactl_src_t *s, int rc) {
  return la__fail(
      s, rc, "%s: %s", s->where,
      *la_client_error(s->c) ? la_client_error(s->c) : la_client_strerror(rc));
}

/* --db: a store file or a PostgreSQL database, read-only
 * (la_store_open_offline). */
static int la__open_db(const char *cmd, lactl_src_t *s, const char *path) {
  char why[800] = "";
  if (la_store_open_offline(path, &s->st, why, sizeof why) != 0) {
    fprintf(stderr, "lactl %s: %s\n", cmd, why);
    return LACTL_FAIL;
  }
  snprintf(s->where, sizeof s->where, "%s",
           la_db_is_pg_url(path) ? "PostgreSQL store" : path);
  return LACTL_OK;
}

int lactl_src_open(const char *cmd, const lactl_common_t *o,
                   lactl_src_t **out) {
  *out = NULL;
  if (o->db && o->global) {
    fprintf(stderr,
            "lactl %s: --db and --global both name the source: give one "
            "(try 'lactl %s --help')\n",
            cmd, cmd);
    return LACTL_USAGE;
  }
  int timeout_ms = LA_CLIENT_DEFAULT_TIMEOUT_MS;
  if (o->timeout) {
    char *end;
    errno = 0;
    double sec = strtod(o->timeout, &end);
    if (errno || end == o->timeout || *end || !(sec > 0) || sec > 86400) {
      return lactl_usage_err(cmd,
                             "--timeout '%s' is not a number of seconds "
                             "above 0 and at most 86400",
                             o->timeout);
    }
    timeout_ms = sec * 1000 < 1 ? 1 : (int)(sec * 1000);
  }
  lactl_src_t *s = calloc(1, sizeof *s);
  if (!s) {
    fprintf(stderr, "lactl %s: out of memory\n", cmd);
    return LACTL_FAIL;
  }
  s->channel = o->channel;
  if (o->db) {
    if (la__open_db(cmd, s, o->db) != LACTL_OK) {
      free(s);
      return LACTL_FAIL;
    }
    *out = s;
    return LACTL_OK;
  }
  const char *addr = lactl_global_addr(o->global);
  int rc = la_client_connect(addr, timeout_ms, &s->c);
  if (rc != 0) {
    char host[256];
    uint16_t port;
    if (rc == LA_EINVAL && la_hostport_parse(addr, host, sizeof host, &port)) {
      fprintf(stderr, "lactl %s: --global '%s' is not HOST:PORT\n", cmd, addr);
      free(s);
      return LACTL_USAGE;
    }
    if (rc == LA_EINVAL) { /* a well-formed address: the name did not resolve */
      struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
      int g = getaddrinfo(host, NULL, &hints, &ai);
      if (ai) freeaddrinfo(ai);
      fprintf(stderr,
              "lactl %s: cannot resolve host '%s' (of the GlobalAgent "
              "address %s): %s\n",
              cmd, host, addr, g ? gai_strerror(g) : "no usable address");
      free(s);
      return LACTL_FAIL;
    }
    fprintf(stderr,
            "lactl %s: cannot reach the GlobalAgent at %s: %s (is "
            "la-globalagent running? --global HOST:PORT names its feed "
            "port, --db FILE reads a store)\n",
            cmd, addr, la_client_strerror(rc));
    free(s);
    return LACTL_FAIL;
  }
  snprintf(s->where, sizeof s->where, "GlobalAgent %s", addr);
  *out = s;
  return LACTL_OK;
}

void lactl_src_close(lactl_src_t *s) {
  if (!s) return;
  la_client_close(s->c);
  la_store_close(s->st);
  free(s);
}

const char *lactl_src_error(const lactl_src_t *s) {
  return s ? s->err : "";
}

int lactl_src_fail(const char *cmd, lactl_src_t *s, int rc) {
  fprintf(stderr, "lactl %s: %s\n", cmd,
          s && s->err[0] ? s->err : la_client_strerror(rc));
  return LACTL_FAIL;
}

int lactl_app_ended(const lactl_app_t *a) {
  return a->nprocs > 0 && a->ranks_ended >= (int)a->nprocs;
}

const char *lactl_state_name(int state) {
  return state == LACTL_COMPLETE  ? "complete"
         : state == LACTL_PARTIAL ? "partial"
                                  : "open";
}

int lactl_set_state(const la_traceset_t *t) {
  if (la_traceset_complete(t)) return LACTL_COMPLETE;
  return la_traceset_time_ns(t) ? LACTL_PARTIAL : LACTL_OPEN;
}

/* The answer to one Query from either source: r is the reply, received
 * (msg, feed) or built from the store (db). */
typedef struct la__answer {
  La__QueryReply *msg;
  la_ga_answer_t db;
  const La__QueryReply *r;
} la__answer_t;

static void la__answer_free(la__answer_t *a) {
  if (a->msg) la_msg_free(&a->msg->base);
  la_ga_answer_free(&a->db);
  a->msg = NULL;
  a->r = NULL;
}

/* Asks q of the source. On success a->r is a reply with status 0 (free
 * with la__answer_free); on failure nothing is left to free. */
static int la__ask(lactl_src_t *s, La__Query *q, la__answer_t *a) {
  memset(a, 0, sizeof *a);
  if (s->c) {
    int rc = la__client_query(s->c, q, &a->msg);
    if (rc) return la__feed_err(s, rc);
    a->r = a->msg;
    return 0;
  }
  q->has_feed_protocol = 1;
  q->feed_protocol = LA_FEED_PROTOCOL_VERSION;
  int rc = la_ga_answer(s->st, q, &a->db);
  if (rc) {
    rc = la__fail(s, rc, "%s: %s", s->where,
                  *a->db.message ? a->db.message : la_strerror(rc));
    la_ga_answer_free(&a->db);
    return rc;
  }
  a->r = &a->db.reply;
  return 0;
}

/* An AppInfo as lactl shows it (strings cut to the fields). */
static void la__app_from(const La__AppInfo *m, lactl_app_t *a) {
  memset(a, 0, sizeof *a);
  snprintf(a->id, sizeof a->id, "%s", m->app_id);
  snprintf(a->name, sizeof a->name, "%s", m->app_name ? m->app_name : "");
  snprintf(a->metric, sizeof a->metric, "%s", m->metric ? m->metric : "");
  snprintf(a->unit, sizeof a->unit, "%s", m->unit ? m->unit : "");
  a->nprocs = m->nprocs;
  a->elements = m->elements;
  a->cycles = m->cycles;
  a->complete = m->sets_complete;
  a->partial = m->sets_partial;
  a->ranks_started = (int)m->ranks_started;
  a->ranks_ended = (int)m->ranks_ended;
  a->ranks_lost = (int)m->ranks_lost;
}

/* A CycleInfo as lactl shows it. */
static void la__cycle_from(const La__CycleInfo *m, lactl_cycle_t *c) {
  memset(c, 0, sizeof *c);
  c->tag = m->cycle_tag;
  c->state = m->state == LA__CYCLE_STATE__CYCLE_COMPLETE  ? LACTL_COMPLETE
             : m->state == LA__CYCLE_STATE__CYCLE_PARTIAL ? LACTL_PARTIAL
                                                          : LACTL_OPEN;
  c->present = m->ranks_present;
  c->missing = m->ranks_missing;
  snprintf(c->reasons, sizeof c->reasons, "%s", m->reasons ? m->reasons : "");
}

int lactl_src_apps(lactl_src_t *s, lactl_app_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)"apps";
  la__answer_t a;
  int rc = la__ask(s, &q, &a);
  if (rc) return rc;
  size_t na = a.r->apps ? a.r->apps->n_apps : 0;
  lactl_app_t *v = calloc(na ? na : 1, sizeof *v);
  if (!v) {
    la__answer_free(&a);
    return la__fail(s, LA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < na; i++) la__app_from(a.r->apps->apps[i], &v[i]);
  la__answer_free(&a);
  *out = v;
  *n = na;
  return 0;
}

int lactl_src_app(lactl_src_t *s, const char *id, lactl_app_t *out) {
  lactl_app_t *v;
  size_t n;
  int rc = lactl_src_apps(s, &v, &n);
  if (rc) return rc;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i].id, id)) {
      *out = v[i];
      free(v);
      return 0;
    }
  /* a program's name given for an application id: name its applications
   * (the last ones listed, at most 2) */
  char named[300] = "";
  size_t n_named = 0;
  for (size_t i = n; i-- > 0;)
    if (!strcmp(v[i].name, id) && n_named++ < 2)
      snprintf(named + strlen(named), sizeof named - strlen(named), "%s%s",
               n_named > 1 ? ", " : "", v[i].id);
  free(v);
  if (n_named)
    return la__fail(s, LA_ENOTFOUND,
                    "%s: no application '%s': that is a program's name; an "
                    "application is named by its id, e.g. %s%s ('lactl apps' "
                    "lists them)",
                    s->where, id, named, n_named > 2 ? ", ..." : "");
  return la__fail(s, LA_ENOTFOUND,
                  "%s: no application '%s' ('lactl apps' lists them)", s->where,
                  id);
}

int lactl_src_cycles(lactl_src_t *s, const char *app, uint64_t first,
                     uint64_t last, lactl_cycle_t **out, size_t *n) {
  *out = NULL;
  *n = 0;
  lactl_app_t ap;
  int rc = lactl_src_app(s, app, &ap);
  if (rc) return rc;
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)"cycles";
  q.app_id = (char *)app;
  q.has_cycle_tag = 1;
  q.cycle_tag = first;
  q.has_cycle_last = 1;
  q.cycle_last = last;
  la__answer_t a;
  rc = la__ask(s, &q, &a);
  if (rc) return rc;
  size_t nc = a.r->cycles ? a.r->cycles->n_cycles : 0;
  lactl_cycle_t *v = calloc(nc ? nc : 1, sizeof *v);
  if (!v) {
    la__answer_free(&a);
    return la__fail(s, LA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < nc; i++) la__cycle_from(a.r->cycles->cycles[i], &v[i]);
  la__answer_free(&a);
  *out = v;
  *n = nc;
  return 0;
}

/* Names what was not found: the application, or the cycle. */
static int la__set_notfound(lactl_src_t *s, const char *app, int latest,
                            uint64_t cycle) {
  lactl_app_t a;
  if (lactl_src_app(s, app, &a) != 0) return LA_ENOTFOUND;
  if (latest)
    return la__fail(s, LA_ENOTFOUND, "%s: %s has no cycle stored", s->where,
                    app);
  return la__fail(s, LA_ENOTFOUND,
                  "%s: %s has no cycle %llu ('lactl cycles %s' lists them)",
                  s->where, app, (unsigned long long)cycle, app);
}

/* *t becomes its channel s->channel's view; an unknown name fails naming
 * it and the channels there are. */
static int la__channel_view(lactl_src_t *s, la_traceset_t **t) {
  if (!s->channel) return 0;
  int ch = la_traceset_channel_find(*t, s->channel);
  la_traceset_t *v = NULL;
  int rc = ch < 0 ? ch : la_traceset_channel(*t, (size_t)ch, &v);
  if (rc == LA_ENOTFOUND) {
    char names[LA_MAX_CHANNELS_WIRE * (LA_MAX_CHANNEL_NAME_WIRE + 2) + 1] = "";
    size_t n = la_traceset_channels(*t), len = 0;
    for (size_t i = 0; i < n; i++)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                              i ? ", " : "", la_traceset_channel_name(*t, i));
    rc = la__fail(s, rc, "%s cycle %llu has no channel '%s' (%s%s)",
                  la_traceset_app_id(*t),
                  (unsigned long long)la_traceset_cycle(*t), s->channel,
                  n ? "channels: " : "the application declared no channels",
                  names);
  } else if (rc) {
    rc = la__fail(s, rc, "channel '%s' of %s cycle %llu: %s", s->channel,
                  la_traceset_app_id(*t),
                  (unsigned long long)la_traceset_cycle(*t), la_strerror(rc));
  }
  la_traceset_free(*t);
  *t = v;
  return rc;
}

int lactl_src_set(lactl_src_t *s, const char *app, int latest, uint64_t cycle,
                  la_traceset_t **out) {
  *out = NULL;
  if (!app || !*app || strlen(app) > LA_MAX_ID_LEN)
    return la__fail(s, LA_EINVAL, "'%s' is not an application id",
                    app ? app : "");
  int rc;
  if (s->c) {
    rc = latest ? la_client_latest(s->c, app, out)
                : la_client_get(s->c, app, cycle, out);
    if (rc == LA_ENOTFOUND) return la__set_notfound(s, app, latest, cycle);
    return rc ? la__feed_err(s, rc) : la__channel_view(s, out);
  }
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)"traceset";
  q.app_id = (char *)app;
  q.has_cycle_tag = !latest;
  q.cycle_tag = cycle;
  la__answer_t a;
  rc = la__ask(s, &q, &a);
  if (rc == LA_ENOTFOUND) return la__set_notfound(s, app, latest, cycle);
  if (rc) return rc;
  const La__TraceSet *m = a.r->sets[0]; /* a traceset answer has one */
  char why[256] = "";
  rc = la_traceset_from_message(m, out, why, sizeof why);
  if (rc)
    rc = la__fail(s, rc, "%s: %s cycle %llu does not decode: %s", s->where, app,
                  (unsigned long long)m->cycle_tag,
                  why[0] ? why : la_strerror(rc));
  la__answer_free(&a);
  return rc ? rc : la__channel_view(s, out);
}

int lactl_src_select(lactl_src_t *s, const char *app, const lactl_sel_t *sel,
                     uint64_t **tags, size_t *n) {
  *tags = NULL;
  *n = 0;
  if (!sel->range) {
    uint64_t tag = sel->first;
    if (sel->latest) {
      la_traceset_t *t;
      int rc = lactl_src_set(s, app, 1, 0, &t);
      if (rc) return rc;
      tag = la_traceset_cycle(t);
      la_traceset_free(t);
    }
    *tags = malloc(sizeof **tags);
    if (!*tags) return la__fail(s, LA_ENOMEM, "out of memory");
    (*tags)[0] = tag;
    *n = 1;
    return 0;
  }
  lactl_cycle_t *c;
  size_t nc;
  int rc = lactl_src_cycles(s, app, sel->first, sel->last, &c, &nc);
  if (rc) return rc;
  if (nc == 0) {
    free(c);
    return la__fail(s, LA_ENOTFOUND, "%s: %s has no cycle in %llu..%llu",
                    s->where, app, (unsigned long long)sel->first,
                    (unsigned long long)sel->last);
  }
  *tags = malloc(nc * sizeof **tags);
  if (!*tags) {
    free(c);
    return la__fail(s, LA_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < nc; i++) (*tags)[i] = c[i].tag;
  *n = nc;
  free(c);
  return 0;
}

/* la__ids_ask_t over la__ask: either source. */
static int la__ids_ask(void *ctx, La__Query *q, const La__QueryReply **r,
                       void **hold) {
  la__answer_t *a = *hold;
  if (!q) {
    if (a) la__answer_free(a);
    free(a);
    *hold = NULL;
    return 0;
  }
  lactl_src_t *s = ctx;
  if (!(a = malloc(sizeof *a))) return la__fail(s, LA_ENOMEM, "out of memory");
  int rc = la__ask(s, q, a);
  if (rc) {
    free(a);
    return rc;
  }
  *hold = a;
  *r = a->r;
  return 0;
}

int lactl_src_rank_ids(lactl_src_t *s, const char *app, uint32_t rank,
                       int64_t *ids, uint64_t n) {
  char why[200] = "";
  int rc = la__ids_fetch(la__ids_ask, s, app, rank, ids, n, why, sizeof why);
  if (rc && why[0]) la__fail(s, rc, "%s: %s", s->where, why);
  return rc;
}
