/* SPDX-License-Identifier: BSD-3-Clause */
/* store_defer.c: a batch's per-trace writes that nothing in the batch
 * reads, kept in memory and written just before the commit.
 *
 * Two such writes come with every new trace on SQLite: its set's row
 * counts it (n_ranks_present + 1, t_last_ns; the row made, with
 * t_first_ns, for the set's first trace) and the missing record of its
 * key, if there was one, is deleted (a real trace wins). Inside a batch
 * la__store_touch and la__store_unmiss keep them: the counts per set
 * (one upsert per set), the keys whose record goes. la__store_defer_flush
 * writes them; the commit flushes first (on the GlobalAgent, on its
 * committer thread, off the loop), and so does every statement that reads
 * or replaces what they change (closing a set, a missing record's row,
 * listing apps, cycles, missing ranks or reasons, loading a set, the open
 * sets): what it sees is what the per-trace statements gave. A rollback
 * forgets what is kept. Outside a batch a trace's call commits at once,
 * which flushes too.
 *
 * The flush writes the traces store_pending.c deferred first (their
 * writes keep set rows and records here), and a rollback frees them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
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

/* Sets whose missing records a flush has looked for (a batch's traces are
 * of a few sets, often in runs). */
#define LA__ANY_MAX 4
typedef struct la__any {
  int app; /* -1: unused */
  uint64_t tag;
  int has;
} la__any_t;

/* Whether set (touch_apps[app], tag) has a missing record: 1 or 0, asked
 * once per flush (the flush adds none), or LA_EIO. */
static int la__any_missing(la_store_t *s, la__any_t *seen, int app,
                           uint64_t tag) {
  for (int k = 0; k < LA__ANY_MAX; k++)
    if (seen[k].app == app && seen[k].tag == tag) return seen[k].has;
  la_db_stmt_t *st = s->st[S_MISS_ANY];
  la__bind_text(st, 1, s->touch_apps[app], LA_MAX_ID_LEN);
  la_db_bind_int64(st, 2, la__i64(tag));
  int rc = la_db_step(st);
  la__done(st);
  if (rc != LA_DB_ROW && rc != LA_DB_DONE) {
    la__store_fmt(s->err, sizeof s->err,
                  "looking for the traces' missing records: %s",
                  la_db_errmsg(s->db));
    return LA_EIO;
  }
  memmove(seen + 1, seen, (LA__ANY_MAX - 1) * sizeof *seen);
  seen[0] = (la__any_t){app, tag, rc == LA_DB_ROW};
  return seen[0].has;
}

int la__store_defer_flush(la_store_t *s) {
  /* the deferred traces first (store_pending.c's, through the pointer it
   * set: it calls this file, not the other way round) */
  int r = s->n_pend && s->pend_flush ? s->pend_flush(s) : 0;
  /* a key's record is deleted where its set has any: most sets have none,
   * and one look per set costs less than a delete per trace */
  la__any_t seen[LA__ANY_MAX];
  for (int k = 0; k < LA__ANY_MAX; k++) seen[k].app = -1;
  for (size_t i = 0; r == 0 && i < s->n_unmiss; i++) {
    const la__unmiss_t *u = &s->unmiss[i];
    int has = la__any_missing(s, seen, u->app, u->tag);
    if (has <= 0) {
      r = has;
      continue;
    }
    la_db_stmt_t *st = s->st[S_MISS_DEL];
    la__bind_text(st, 1, s->touch_apps[u->app], LA_MAX_ID_LEN);
    la_db_bind_int64(st, 2, la__i64(u->tag));
    la_db_bind_int64(st, 3, u->rank);
    r = la__store_run(s, st, "dropping the traces' missing records");
  }
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
  la__store_defer_forget(s);
  return r;
}

int la__store_touch(la_store_t *s, const char *app_id, uint64_t tag,
                    uint64_t now) {
  la__touch_t *t = la__find(s, app_id, tag);
  if (!t) { /* as many sets as kept: written now, then kept anew */
    int r = la__store_defer_flush(s);
    if (r) return r;
    t = la__find(s, app_id, tag);
  }
  if (t->n++ == 0) t->t_first = now;
  t->t_last = now;
  return 0;
}

/* The index of app_id in s->touch_apps (added when new); -1 when full. */
static int la__app_index(la_store_t *s, const char *app_id) {
  for (int i = 0; i < s->n_touch_apps; i++)
    if (!strcmp(s->touch_apps[i], app_id)) return i;
  if (s->n_touch_apps == LA__TOUCH_MAX) return -1;
  snprintf(s->touch_apps[s->n_touch_apps], sizeof s->touch_apps[0], "%s",
           app_id);
  return s->n_touch_apps++;
}

int la__store_unmiss(la_store_t *s, const char *app_id, uint64_t tag,
                     uint32_t rank) {
  int app = la__app_index(s, app_id);
  if (app < 0 || s->n_unmiss == LA__UNMISS_MAX) {
    int r = la__store_defer_flush(s);
    if (r) return r;
    app = la__app_index(s, app_id);
  }
  if (s->n_unmiss == s->cap_unmiss) {
    size_t cap = s->cap_unmiss ? s->cap_unmiss * 2 : 256;
    la__unmiss_t *v = realloc(s->unmiss, cap * sizeof *v);
    if (!v) { /* out of memory: deleted now */
      la_db_stmt_t *st = s->st[S_MISS_DEL];
      la__bind_text(st, 1, app_id, LA_MAX_ID_LEN);
      la_db_bind_int64(st, 2, la__i64(tag));
      la_db_bind_int64(st, 3, rank);
      return la__store_run(s, st, "dropping the trace's missing record");
    }
    s->unmiss = v;
    s->cap_unmiss = cap;
  }
  la__unmiss_t *u = &s->unmiss[s->n_unmiss++];
  u->app = app;
  u->tag = tag;
  u->rank = rank;
  return 0;
}

void la__store_defer_forget(la_store_t *s) {
  s->n_pend = 0; /* the copies are the arena's */
  la__arena_reset(&s->pend_arena);
  s->pend_bytes = 0;
  s->n_touch = 0;
  s->touch_last = 0;
  s->n_unmiss = 0;
  s->n_touch_apps = 0;
}
