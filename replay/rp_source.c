/* SPDX-License-Identifier: BSD-3-Clause */
/* rp_source.c: where rank 0 of la-replay reads the recorded run (see
 * replay.h): the GlobalAgent's feed (libla_client), or a store read
 * offline with no GlobalAgent (--db FILE: an SQLite store file, a copy
 * included, or a PostgreSQL URL; la_store_open_offline), answered by the
 * store's own query code (feed_query.c: la_ga_answer) and turned into the
 * same libla_client Trace-Sets a received one becomes
 * (la_traceset_from_message), so the rest of the load does not know which
 * source it reads. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_query.h"
#include "la_client_internal.h"
#include "la_errors.h"
#include "replay.h"
#include "store.h"
#include "store_db.h"

struct rp_source {
  la_client_t *c; /* the feed, or */
  la_store_t *st; /* a store */
  int weights;    /* the store's sets: LA_WEIGHTS_*, 0 the default */
  char where[300];
  char err[700];
};

static int rs_fail(rp_source_t *s, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int rs_fail(rp_source_t *s, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, sizeof s->err, fmt, ap);
  va_end(ap);
  return rc;
}

int rp_source_open(const rp_src_t *src, rp_source_t **out, char *why,
                   size_t why_len) {
  *out = NULL;
  rp_source_t *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  s->weights = src->weights;
  if (src->db) {
    char w[800] = "";
    int rc = la_store_open_offline(src->db, &s->st, w, sizeof w);
    if (rc) {
      snprintf(why, why_len, "%s", w);
      free(s);
      return rc;
    }
    /* a connection string may hold a password: not repeated */
    snprintf(s->where, sizeof s->where, "%s",
             la_db_is_pg_url(src->db) ? "the PostgreSQL store" : src->db);
    *out = s;
    return 0;
  }
  const char *g = getenv("LA_GLOBAL");
  snprintf(s->where, sizeof s->where, "%s",
           src->global && *src->global ? src->global
           : g && *g                   ? g
                                       : LA_CLIENT_DEFAULT_ADDR);
  int rc = la_client_connect(s->where, src->timeout_ms, &s->c);
  if (rc) {
    snprintf(why, why_len, "cannot reach the GlobalAgent's feed at %s: %s",
             s->where, la_client_strerror(rc));
    free(s);
    return rc;
  }
  if (src->weights) /* else $LA_WEIGHTS, or robust where every rank has them */
    la_client_set_weights(s->c, src->weights);
  *out = s;
  return 0;
}

void rp_source_close(rp_source_t *s) {
  if (!s) return;
  if (s->c) la_client_close(s->c);
  la_store_close(s->st);
  free(s);
}

const char *rp_source_where(const rp_source_t *s) { return s->where; }
const char *rp_source_error(const rp_source_t *s) { return s->err; }

/* One Query of the store, its answer in *a (free with la_ga_answer_free,
 * also after a failure). */
static int rs_ask(rp_source_t *s, La__Query *q, la_ga_answer_t *a) {
  q->has_feed_protocol = 1;
  q->feed_protocol = LA_FEED_PROTOCOL_VERSION;
  int rc = la_ga_answer(s->st, q, a);
  if (rc)
    rs_fail(s, rc, "%s", *a->message ? a->message : la_strerror(rc));
  return rc;
}

int rp_source_set(rp_source_t *s, const char *app, int latest, uint64_t tag,
                  la_traceset_t **out) {
  *out = NULL;
  s->err[0] = 0;
  if (s->c) {
    int rc = latest ? la_client_latest(s->c, app, out)
                    : la_client_get(s->c, app, tag, out);
    if (rc)
      rs_fail(s, rc, "%s",
              *la_client_error(s->c) ? la_client_error(s->c)
                                     : la_client_strerror(rc));
    return rc;
  }
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)"traceset";
  q.app_id = (char *)app;
  q.has_cycle_tag = !latest;
  q.cycle_tag = tag;
  la_ga_answer_t a;
  int rc = rs_ask(s, &q, &a);
  if (!rc) {
    char why[256] = "";
    rc = la_traceset_from_message(a.reply.sets[0], out, why, sizeof why);
    if (rc)
      rs_fail(s, rc, "cycle %llu does not decode: %s",
              (unsigned long long)a.reply.sets[0]->cycle_tag,
              why[0] ? why : la_strerror(rc));
  }
  la_ga_answer_free(&a);
  /* as the client's la_client_set_weights: robust asked of a set lacking
   * them serves the measured ones (LA_ENOTFOUND) */
  if (!rc && s->weights) la_traceset_set_weights(*out, s->weights);
  return rc;
}

/* la__ids_ask_t over the store. */
static int rs_ids_ask(void *ctx, La__Query *q, const La__QueryReply **r,
                      void **hold) {
  la_ga_answer_t *a = *hold;
  if (!q) {
    if (a) la_ga_answer_free(a);
    free(a);
    *hold = NULL;
    return 0;
  }
  rp_source_t *s = ctx;
  if (!(a = malloc(sizeof *a))) return rs_fail(s, LA_ENOMEM, "out of memory");
  int rc = rs_ask(s, q, a);
  if (rc) {
    la_ga_answer_free(a);
    free(a);
    return rc;
  }
  *hold = a;
  *r = &a->reply;
  return 0;
}

int rp_source_set_ids(rp_source_t *s, const la_traceset_t *t, int64_t *ids) {
  s->err[0] = 0;
  if (s->c) {
    int rc = la_client_set_ids(s->c, t, ids, NULL);
    if (rc)
      rs_fail(s, rc, "%s",
              *la_client_error(s->c) ? la_client_error(s->c)
                                     : la_client_strerror(rc));
    return rc;
  }
  char why[200] = "";
  int rc = la__set_ids_fetch(rs_ids_ask, s, t, ids, NULL, why, sizeof why);
  if (rc && why[0]) rs_fail(s, rc, "%s", why);
  return rc;
}
