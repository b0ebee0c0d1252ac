/* query.c: request/reply calls on a feed connection: a stored Trace-Set by
 * cycle or the latest one (Query "traceset"), listings (Query "apps",
 * "cycles", ...) and the GlobalAgent's status, and the key/value rows they
 * return.
 *
 * Query{what="traceset", app_id, cycle_tag} asks for one cycle; without a
 * cycle_tag it asks for the latest. A QueryReply with a negative status
 * (LA_ENOTFOUND, ...) is returned as that status with the reply's message.
 * The waiting itself (and keeping subscription sets that arrive meanwhile)
 * is la__client_request in client.c.
 */
#include <stdlib.h>
#include <string.h>

#include "la_client_internal.h"
#include "la_errors.h"

/* Checks a reply's type and status; frees it on failure. */
static int la__reply_check(la_client_t *c, uint16_t want, uint16_t got,
                           ProtobufCMessage *m, const char *what) {
  if (got != want) {
    la_msg_free(m);
    return la__client_fail(c, LA_EPROTO, "%s: expected %s, got %s", what,
                           la_msg_name(want), la_msg_name(got));
  }
  if (want != LA__MSG_TYPE__MSG_QUERY_REPLY) return 0;
  const La__QueryReply *q = (const La__QueryReply *)m;
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
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  int rc = la__client_request(c, LA__MSG_TYPE__MSG_QUERY, &q.base, &type, &m);
  if (rc) return rc;
  rc = la__reply_check(c, LA__MSG_TYPE__MSG_QUERY_REPLY, type, m, "query");
  if (rc) return rc;
  La__QueryReply *r = (La__QueryReply *)m;
  if (r->n_sets == 0) {
    la_msg_free(m);
    if (has_cycle)
      return la__client_fail(c, LA_ENOTFOUND, "no Trace-Set of %s cycle %llu",
                             app_id, (unsigned long long)cycle_tag);
    return la__client_fail(c, LA_ENOTFOUND, "no Trace-Set of %s", app_id);
  }
  /* Take the first set out of the reply; the rest is freed with it. */
  La__TraceSet *s = r->sets[0];
  r->sets[0] = r->sets[--r->n_sets];
  la_msg_free(m);
  char why[200] = "";
  rc = la__traceset_adopt_max(s, 0, c->max_rank_elements, out, why, sizeof why);
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

/* Copies n StatusEntry rows into a new rows object. */
static int la__rows(La__StatusEntry **e, size_t n, la_client_rows_t **out) {
  la_client_rows_t *r = calloc(1, sizeof *r);
  if (!r) return LA_ENOMEM;
  r->key = calloc(n ? n : 1, sizeof *r->key);
  r->value = calloc(n ? n : 1, sizeof *r->value);
  if (!r->key || !r->value) {
    la_client_rows_free(r);
    return LA_ENOMEM;
  }
  for (size_t i = 0; i < n; i++, r->n++) {
    r->key[i] = strdup(e[i]->key);
    r->value[i] = strdup(e[i]->value);
    if (!r->key[i] || !r->value[i]) {
      r->n++;
      la_client_rows_free(r);
      return LA_ENOMEM;
    }
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
  uint16_t type = 0;
  ProtobufCMessage *m = NULL;
  int rc = la__client_request(c, LA__MSG_TYPE__MSG_QUERY, &q.base, &type, &m);
  if (rc) return rc;
  rc = la__reply_check(c, LA__MSG_TYPE__MSG_QUERY_REPLY, type, m, what);
  if (rc) return rc;
  const La__QueryReply *r = (const La__QueryReply *)m;
  rc = la__rows(r->rows, r->n_rows, out);
  la_msg_free(m);
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
