/* SPDX-License-Identifier: BSD-3-Clause */
/* query.c: request/reply calls on a feed connection: a stored Trace-Set by
 * cycle or the latest one (Query "traceset"), listings (Query "apps",
 * "cycles": typed AppList and CycleList replies, rendered as key/value rows
 * for la_client_list) and the GlobalAgent's status.
 *
 * Every Query carries LA_FEED_PROTOCOL_VERSION, and a QueryReply of another
 * version is refused with LA_EVERSION (la__client_query). Replies are
 * decoded and validated by the codec; nothing here parses text.
 *
 * Query{what="traceset", app_id, cycle_tag} asks for one cycle; without a
 * cycle_tag it asks for the latest. It announces sets_version 2 and the
 * client's max_set: a GlobalAgent that knows them answers with the set's
 * size, and the set follows in parts (la__client_query_set), so its size
 * is bounded by la_client_set_max_set, not by a frame. A QueryReply with a
 * negative status (LA_ENOTFOUND, ...) is returned as that status with the
 * reply's message. The waiting itself (and keeping subscription sets that
 * arrive meanwhile) is la__client_request in client.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "la_errors.h"

/* Checks a reply's type (and for a QueryReply its feed protocol and
 * status); frees it on failure. */
static int la__reply_check(la_client_t *c, uint16_t want, uint16_t got,
                           ProtobufCMessage *m, const char *what) {
  if (got != want) {
    la_msg_free(m);
    /* a handshake's message: the peer is a daemon's agents' or
     * applications' port, not the GlobalAgent's feed */
    int handshake = got == LA__MSG_TYPE__MSG_REGISTER_REPLY ||
                    (got >= LA__MSG_TYPE__MSG_HELLO &&
                     got <= LA__MSG_TYPE__MSG_AUTH_RESULT);
    return la__client_fail(
        c, LA_EPROTO, "%s: expected %s, got %s%s", what, la_msg_name(want),
        la_msg_name(got),
        handshake ? ": is this the GlobalAgent's feed address (its "
                    "feed.listen)? That peer answers as the port for "
                    "LocalAgents or applications"
                  : "");
  }
  if (want != LA__MSG_TYPE__MSG_QUERY_REPLY) return 0;
  const La__QueryReply *q = (const La__QueryReply *)m;
  if (!q->has_feed_protocol || q->feed_protocol != LA_FEED_PROTOCOL_VERSION) {
    unsigned v = q->has_feed_protocol ? q->feed_protocol : 1u;
    la_msg_free(m);
    return la__client_fail(c, LA_EVERSION,
                           "%s: the GlobalAgent speaks feed protocol %u, this "
                           "client %u: use a GlobalAgent of this LA version",
                           what, v, LA_FEED_PROTOCOL_VERSION);
  }
  if (q->status < 0) {
    int code = q->status > LA__ERR_LAST ? q->status : LA_EPROTO;
    la__client_fail(
        c, code, "%s: %s", what,
        q->message && *q->message ? q->message : la_strerror(q->status));
    la_msg_free(m);
    return code;
  }
  return 0;
}

int la__client_query(la_client_t *c, const La__Query *q, La__QueryReply **out) {
  *out = NULL;
  La__Query v = *q;
  v.has_feed_protocol = 1;
  v.feed_protocol = LA_FEED_PROTOCOL_VERSION;
  v.has_sets_version = 1; /* a Trace-Set may come in parts */
  v.sets_version = LA_FEED_SETS_VERSION;
  v.has_max_set_bytes = 1;
  v.max_set_bytes = c->max_set;
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  int rc = la__client_request(c, LA__MSG_TYPE__MSG_QUERY, &v.base, &type, &m);
  if (rc) return rc;
  /* errors name the listing, or "query" for a Trace-Set */
  rc = la__reply_check(c, LA__MSG_TYPE__MSG_QUERY_REPLY, type, m,
                       strcmp(q->what, "traceset") ? q->what : "query");
  if (rc) return rc;
  *out = (La__QueryReply *)m;
  return 0;
}

static int la__get(la_client_t *c, const char *app_id, int has_cycle,
                   uint64_t cycle_tag, la_traceset_t **out) {
  if (out) *out = NULL;
  if (!c || !out || !app_id || !*app_id || strlen(app_id) > LA_MAX_ID_LEN)
    return LA_EINVAL;
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)"traceset";
  q.app_id = (char *)app_id;
  q.has_cycle_tag = has_cycle;
  q.cycle_tag = cycle_tag;
  La__QueryReply *r = NULL;
  int rc = la__client_query(c, &q, &r);
  if (rc) return rc;
  if (r->has_set_bytes) { /* the set follows in parts */
    la_msg_free(&r->base);
    return la__client_query_set(c, out);
  }
  if (r->n_sets == 0) {
    la_msg_free(&r->base);
    if (has_cycle)
      return la__client_fail(c, LA_ENOTFOUND, "no Trace-Set of %s cycle %llu",
                             app_id, (unsigned long long)cycle_tag);
    return la__client_fail(c, LA_ENOTFOUND, "no Trace-Set of %s", app_id);
  }
  /* Take the first set out of the reply; the rest is freed with it. */
  La__TraceSet *s = r->sets[0];
  r->sets[0] = r->sets[--r->n_sets];
  la_msg_free(&r->base);
  char why[200] = "";
  rc = la__traceset_adopt_threads(s, 0, c->max_rank_elements, c->threads,
                                  NULL, out, why, sizeof why);
  if (rc) return la__client_fail(c, rc, "bad TraceSet in reply: %s", why);
  la__traceset_choose(*out, c->weights);
  return 0;
}

int la_client_get(la_client_t *c, const char *app_id, uint64_t cycle_tag,
                  la_traceset_t **out) {
  return la__get(c, app_id, 1, cycle_tag, out);
}

int la_client_latest(la_client_t *c, const char *app_id, la_traceset_t **out) {
  return la__get(c, app_id, 0, 0, out);
}

/* A new rows object of n empty rows. */
static la_client_rows_t *la__rows_new(size_t n) {
  la_client_rows_t *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->n = n;
  r->key = calloc(n ? n : 1, sizeof *r->key);
  r->value = calloc(n ? n : 1, sizeof *r->value);
  if (!r->key || !r->value) {
    la_client_rows_free(r);
    return NULL;
  }
  return r;
}

/* Row i: a copy of key and the formatted value. 0 or LA_ENOMEM. */
static int la__row(la_client_rows_t *r, size_t i, const char *key,
                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int la__row(la_client_rows_t *r, size_t i, const char *key,
                   const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&r->value[i], fmt, ap);
  va_end(ap);
  if (n < 0) r->value[i] = NULL;
  r->key[i] = strdup(key);
  return r->key[i] && r->value[i] ? 0 : LA_ENOMEM;
}

/* Copies n StatusEntry rows into a new rows object. */
static int la__rows(La__StatusEntry **e, size_t n, la_client_rows_t **out) {
  la_client_rows_t *r = la__rows_new(n);
  if (!r) return LA_ENOMEM;
  for (size_t i = 0; i < n; i++)
    if (la__row(r, i, e[i]->key, "%s", e[i]->value)) {
      la_client_rows_free(r);
      return LA_ENOMEM;
    }
  *out = r;
  return 0;
}

/* The rows of a listing: one per application or cycle, rendered from the
 * typed reply (la_client.h says the format). */
static int la__list_rows(const La__QueryReply *q, la_client_rows_t **out) {
  size_t n = q->apps ? q->apps->n_apps : q->cycles ? q->cycles->n_cycles : 0;
  la_client_rows_t *r = la__rows_new(n);
  if (!r) return LA_ENOMEM;
  int rc = 0;
  for (size_t i = 0; rc == 0 && q->apps && i < n; i++) {
    const La__AppInfo *a = q->apps->apps[i];
    rc = la__row(r, i, a->app_id,
                 "name=%s nprocs=%u elements=%llu metric=%s unit=%s "
                 "cycles=%llu complete=%llu partial=%llu ranks_started=%u "
                 "ranks_ended=%u",
                 a->app_name ? a->app_name : "", a->nprocs,
                 (unsigned long long)a->elements, a->metric ? a->metric : "",
                 a->unit ? a->unit : "", (unsigned long long)a->cycles,
                 (unsigned long long)a->sets_complete,
                 (unsigned long long)a->sets_partial, a->ranks_started,
                 a->ranks_ended);
  }
  for (size_t i = 0; rc == 0 && q->cycles && i < n; i++) {
    const La__CycleInfo *y = q->cycles->cycles[i];
    char key[24];
    snprintf(key, sizeof key, "%llu", (unsigned long long)y->cycle_tag);
    rc = la__row(r, i, key, "state=%s ranks=%u missing=%u reasons=%s",
                 y->state == LA__CYCLE_STATE__CYCLE_COMPLETE  ? "complete"
                 : y->state == LA__CYCLE_STATE__CYCLE_PARTIAL ? "partial"
                                                              : "open",
                 y->ranks_present, y->ranks_missing,
                 y->reasons ? y->reasons : "");
  }
  if (rc) {
    la_client_rows_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

int la_client_list(la_client_t *c, const char *what, const char *app_id,
                   la_client_rows_t **out) {
  if (out) *out = NULL;
  if (!c || !out || !what || !*what || strlen(what) > LA_MAX_ID_LEN ||
      (app_id && strlen(app_id) > LA_MAX_ID_LEN))
    return LA_EINVAL;
  La__Query q = LA__QUERY__INIT;
  q.what = (char *)what;
  q.app_id = (char *)(app_id && *app_id ? app_id : NULL);
  La__QueryReply *r = NULL;
  int rc = la__client_query(c, &q, &r);
  if (rc) return rc;
  rc = la__list_rows(r, out);
  la_msg_free(&r->base);
  return rc ? la__client_fail(c, rc, "out of memory") : 0;
}

int la_client_status(la_client_t *c, const char *section,
                     la_client_rows_t **out) {
  if (out) *out = NULL;
  if (!c || !out) return LA_EINVAL;
  La__StatusRequest q = LA__STATUS_REQUEST__INIT;
  q.section = (char *)section;
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  int rc = la__client_request(c, LA__MSG_TYPE__MSG_STATUS_REQUEST, &q.base,
                              &type, &m);
  if (rc) return rc;
  rc = la__reply_check(c, LA__MSG_TYPE__MSG_STATUS_REPLY, type, m, "status");
  if (rc) return rc;
  const La__StatusReply *r = (const La__StatusReply *)m;
  rc = la__rows(r->entries, r->n_entries, out);
  la_msg_free(m);
  return rc ? la__client_fail(c, rc, "out of memory") : 0;
}

size_t la_client_rows_count(const la_client_rows_t *r) {
  return r ? r->n : 0;
}

const char *la_client_rows_key(const la_client_rows_t *r, size_t i) {
  return r && i < r->n ? r->key[i] : NULL;
}

const char *la_client_rows_value(const la_client_rows_t *r, size_t i) {
  return r && i < r->n ? r->value[i] : NULL;
}

void la_client_rows_free(la_client_rows_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    free(r->key ? r->key[i] : NULL);
    free(r->value ? r->value[i] : NULL);
  }
  free(r->key);
  free(r->value);
  free(r);
}
