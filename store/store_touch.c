/* SPDX-License-Identifier: BSD-3-Clause */
/* store_touch.c: a batch's new traces counted in their sets' rows once per
 * set, at the commit, instead of once per trace.
 *
 * A new trace adds one to its set's n_ranks_present and moves its
 * t_last_ns (creating the row, with t_first_ns, for the set's first
 * trace). Inside a batch, la__store_touch keeps that in memory per set;
 * la__store_touch_flush writes one upsert per set. The commit flushes
 * first (on the GlobalAgent, on its committer thread, off the loop), and
 * so does every statement that reads those columns or replaces them
 * (closing a set, loading one, listing sets or cycles, a missing record's
 * row): what they see is what the per-trace upsert gave. A rollback
 * forgets what is kept. Outside a batch a trace's call commits at once,
 * which flushes too.
 */
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

/* The kept entry of (app_id, tag), or a new one; NULL when full. */
static la__touch_t *la__find(la_store_t *s, const char *app_id, uint64_t tag) {
  if (s->n_touch && s->touch[s->touch_last].tag == tag &&
      !strcmp(s->touch[s->touch_last].app_id, app_id))
    return &s->touch[s->touch_last];
  for (size_t i = 0; i < s->n_touch; i++)
    if (s->touch[i].tag == tag && !strcmp(s->touch[i].app_id, app_id)) {
      s->touch_last = i;
      return &s->touch[i];
    }
  if (s->n_touch == LA__TOUCH_MAX) return NULL;
  la__touch_t *t = &s->touch[s->n_touch];
  memset(t, 0, sizeof *t);
  snprintf(t->app_id, sizeof t->app_id, "%s", app_id);
  t->tag = tag;
  s->touch_last = s->n_touch++;
  return t;
}

int la__store_touch_flush(la_store_t *s) {
  int r = 0;
  for (size_t i = 0; r == 0 && i < s->n_touch; i++) {
    const la__touch_t *t = &s->touch[i];
    la_db_stmt_t *st = s->st[S_SET_TOUCH];
    la__bind_text(st, 1, t->app_id, LA_MAX_ID_LEN);
    la_db_bind_int64(st, 2, la__i64(t->tag));
    la_db_bind_int64(st, 3, la__i64(t->t_first));
    la_db_bind_int64(st, 4, (int64_t)t->n);
    la_db_bind_int64(st, 5, la__i64(t->t_last));
    r = la__store_run(s, st, "recording the traces' cycles");
  }
  s->n_touch = 0;
  s->touch_last = 0;
  return r;
}

int la__store_touch(la_store_t *s, const char *app_id, uint64_t tag,
                    uint64_t now) {
  la__touch_t *t = la__find(s, app_id, tag);
  if (!t) { /* as many sets as kept: written now, then kept anew */
    int r = la__store_touch_flush(s);
    if (r) return r;
    t = la__find(s, app_id, tag);
  }
  if (t->n++ == 0) t->t_first = now;
  t->t_last = now;
  return 0;
}

void la__store_touch_forget(la_store_t *s) {
  s->n_touch = 0;
  s->touch_last = 0;
}
