/* SPDX-License-Identifier: BSD-3-Clause */
/* store_shards.c: what several GlobalAgents (shards, docs/sharding.md)
 * sharing one PostgreSQL store ask of it beyond the rest of the store: is
 * the store shared at all, and which ranks of a Trace-Set are in it
 * already (stored or recorded missing by any shard), so that a shard that
 * receives a set another shard had open completes it; and the
 * notifications (PostgreSQL LISTEN/NOTIFY, channel la_sets) by which every
 * shard learns of the sets the others closed, to publish them to its own
 * subscribers too.
 *
 * Statements are prepared per call: a shard asks once per set it opens.
 *
 * Deliberately not here: routing (the LocalAgents choose the shard), the
 * stitching itself (stitch.c, ingest.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"
#include "store_reps.h"

int la_store_shared(const la_store_t *s) {
  return s && la_db_kind(s->db) == LA_DB_PG;
}

int la_store_set_ranks(la_store_t *s, const char *app_id, uint64_t cycle_tag,
                       uint32_t nprocs, uint32_t **ranks, size_t *n) {
  if (!s || !app_id || !ranks || !n) return LA_EINVAL;
  *ranks = NULL;
  *n = 0;
  la_db_stmt_t *st;
  if (la_db_prepare(s->db,
                    "SELECT rank FROM traces WHERE app_id = ?1 AND"
                    " cycle_tag = ?2 AND rank < ?3 UNION SELECT rank FROM"
                    " missing WHERE app_id = ?1 AND cycle_tag = ?2 AND"
                    " rank < ?3 ORDER BY rank",
                    0, &st) != 0)
    return la__store_sqlerr(s, "reading a Trace-Set's ranks");
  int r = la__store_rank_rows(s, st, app_id, cycle_tag, nprocs, "ranks",
                              "reading a Trace-Set's ranks", ranks, n);
  la_db_finalize(st);
  /* and the members of a set stored by representatives, packed */
  if (r == 0)
    r = la__store_reps_packed_ranks(s, app_id, cycle_tag, nprocs, ranks, n);
  if (r) {
    free(*ranks);
    *ranks = NULL;
    *n = 0;
  }
  return r;
}

#define LA__CHANNEL "la_sets"

int la__store_notify_closed(la_store_t *s, const char *app_id,
                            uint64_t cycle_tag) {
  if (la_db_kind(s->db) != LA_DB_PG) return 0;
  char payload[LA_MAX_ID_LEN + 32];
  snprintf(payload, sizeof payload, "%llu %.*s", (unsigned long long)cycle_tag,
           (int)LA_MAX_ID_LEN, app_id);
  la_db_stmt_t *st;
  if (la_db_prepare(s->db,
                    "SELECT pg_notify('" LA__CHANNEL "', CAST(?1 AS TEXT))", 0,
                    &st) != 0)
    return la__store_sqlerr(s, "notifying the other shards");
  la_db_bind_text(st, 1, payload, -1);
  int r = la__store_run(s, st, "notifying the other shards");
  la_db_finalize(st);
  return r;
}

int la_store_watch(la_store_t *s) {
  if (!s || la_db_kind(s->db) != LA_DB_PG) return -1;
  if (la_db_exec(s->db, "LISTEN " LA__CHANNEL) != 0) {
    la__store_fmt(s->err, sizeof s->err, "LISTEN: %s", la_db_errmsg(s->db));
    return LA_EIO;
  }
  return la_db_pg_fd(s->db);
}

int la_store_fd(la_store_t *s) {
  return s ? la_db_pg_fd(s->db) : -1;
}

unsigned la_store_session(la_store_t *s) {
  return s ? la_db_pg_session(s->db) : 0;
}

typedef struct {
  void (*fn)(void *arg, const char *app_id, uint64_t cycle_tag);
  void *arg;
} la__notice_t;

static void la__on_notice(void *arg, const char *channel, const char *payload) {
  la__notice_t *n = arg;
  char *end = NULL;
  unsigned long long tag = strtoull(payload, &end, 10);
  if (strcmp(channel, LA__CHANNEL) || end == payload || *end != ' ' ||
      !end[1] || strlen(end + 1) > LA_MAX_ID_LEN)
    return; /* not ours */
  n->fn(n->arg, end + 1, (uint64_t)tag);
}

int la_store_closed_elsewhere(la_store_t *s, int consume,
                              void (*fn)(void *arg, const char *app_id,
                                         uint64_t cycle_tag),
                              void *arg) {
  if (!s) return LA_EINVAL;
  la__notice_t n = {fn, arg};
  int r = la_db_pg_notices(s->db, consume, la__on_notice, &n);
  if (r < 0)
    la__store_fmt(s->err, sizeof s->err, "notifications: %s",
                  la_db_errmsg(s->db));
  return r;
}
