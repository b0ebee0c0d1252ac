/* SPDX-License-Identifier: BSD-3-Clause */
/* store_coarse.c: coarse cycles in the store (docs/storage.md, coarse
 * table).
 *
 * A LocalAgent that was behind may take a cycle coarsely (agent.behind =
 * coarse, docs/localagent.md): its trace is a spread encoding of block
 * sums, and CompactTrace.coarse says so and why. Here: that reason stored
 * in a coarse row beside the trace's (la__store_coarse_put, in the trace's
 * transaction) and read back into a loaded trace (la__store_coarse_load),
 * so that readers and lactl show tell a coarse cycle from a full one.
 *
 * Statements are prepared on first use: a store written before the coarse
 * table, opened read-only, reads it as an empty temporary table
 * (store_schema.c).
 *
 * Deliberately not here: the trace's own row (store_write.c,
 * store_load.c).
 */
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "store_internal.h"

static const char *const la__coarse_sql[C__COUNT] = {
    [C_INS] = "INSERT OR IGNORE INTO coarse(app_id, cycle_tag, rank, reason)"
              " VALUES (?1, ?2, ?3, ?4)",
    [C_GET] = "SELECT reason FROM coarse WHERE app_id = ?1 AND"
              " cycle_tag = ?2 AND rank = ?3",
};

/* The statement id, prepared on first use; NULL on failure (recorded). */
static la_db_stmt_t *la__cst(la_store_t *s, int id) {
  if (s->coarse[id]) return s->coarse[id];
  if (la_db_prepare(s->db, la__coarse_sql[id], LA_DB_PERSISTENT,
                    &s->coarse[id]) != 0) {
    s->coarse[id] = NULL;
    la__store_sqlerr(s, "preparing the coarse statements");
    return NULL;
  }
  return s->coarse[id];
}

static void la__bind_key(la_db_stmt_t *st, const La__CompactTrace *t) {
  la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(t->cycle_tag));
  la_db_bind_int64(st, 3, t->rank);
}

int la__store_coarse_put(la_store_t *s, const La__CompactTrace *t) {
  if (!t->coarse || !t->coarse[0]) return 0;
  la_db_stmt_t *st = la__cst(s, C_INS);
  if (!st) return LA_EIO;
  la__bind_key(st, t);
  la__bind_text(st, 4, t->coarse, LA_COARSE_REASON_MAX);
  return la__store_run(s, st, "storing the trace's coarse reason");
}

int la__store_coarse_load(la_store_t *s, La__CompactTrace *t) {
  la_db_stmt_t *st = la__cst(s, C_GET);
  if (!st) return LA_EIO;
  la__bind_key(st, t);
  int r = 0, rc = la_db_step(st);
  if (rc == LA_DB_ROW) {
    const char *why = (const char *)la_db_column_text(st, 0);
    size_t len = why ? strlen(why) : 0;
    if (len == 0 || len > LA_COARSE_REASON_MAX)
      r = la__store_corrupt(s, "a coarse row's reason is empty or too long");
    else if (!(t->coarse = strdup(why)))
      r = LA_ENOMEM;
  } else if (rc != LA_DB_DONE) {
    r = la__store_sqlerr(s, "reading a trace's coarse reason");
  }
  la__done(st);
  return r;
}

void la__store_coarse_close(la_store_t *s) {
  for (int i = 0; i < C__COUNT; i++) {
    la_db_finalize(s->coarse[i]);
    s->coarse[i] = NULL;
  }
}
