/* SPDX-License-Identifier: BSD-3-Clause */
/* outq.c: the LocalAgent's write-ahead send queue (contract in outq.h).
 *
 * One singly linked list of descriptors in seq order (head = oldest
 * unacknowledged); a descriptor holds its frame in memory or its place in
 * the log. The send cursor "sent" is the last descriptor returned by
 * la_outq_next since the last rewind. Two small lists hold the recorded
 * state: ranks registered and cycles taken but not yet resolved; they are
 * written as a checkpoint at the start of every new segment. One mutex
 * guards everything, because workers append while the loop thread sends.
 *
 * It does not log, decode frames or retry: it returns codes and passes
 * notes on.
 */
#include "outq.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "seglog.h"
#include "takentab.h"

#define RBUF_KEEP (1u << 20) /* read buffer kept between reads */

typedef struct la__oq_item {
  struct la__oq_item *next;
  uint64_t seq;
  uint8_t *data; /* the frame, or NULL: read it from the log */
  uint32_t len;
  uint64_t seg, off; /* where the frame is in the log */
} la__oq_item_t;

typedef struct la__oq_key {
  struct la__oq_key *next;
  uint32_t rank;
  uint64_t cycle;
  int damaged; /* replay: a damaged span followed its taken record */
  int slot;    /* its slot in the taken table (takentab.h), or -1 */
  uint16_t app_len;
  char app[LA__SL_MAX_APP + 1];
} la__oq_key_t;

struct la_outq {
  pthread_mutex_t mu;
  la__oq_item_t *head, *tail, *sent;
  la__oq_key_t *ranks, *takens; /* recorded state */
  la__oq_key_t *rec_ranks, *rec_takens; /* found at open, to report */
  la__oq_key_t *rec_damaged; /* ... taken, their record maybe damaged */
  la__oq_key_t *tab_takens;  /* open: the taken table's, until resolved */
  la_takentab_t *tab; /* taken cycles (NULL: taken records in the log) */
  uint64_t mem_limit, log_limit;
  uint64_t next_seq, last_ack_logged;
  int has_log, fsync_each, dirty, rolling;
  int tab_cut_noted; /* la__tab_cut ran */
  int syncing, trim_pending; /* la_outq_syncs fsyncing without the lock */
  la__seglog_t sl;
  uint8_t *rbuf;
  size_t rcap;
  la_outq_note_fn note;
  void *note_arg;
  la_outq_stats_t st;
};

/* ------------------------------------------------------ recorded state -- */

static la__oq_key_t **la__key_find(la__oq_key_t **list, const char *app,
                                   uint16_t app_len, uint32_t rank,
                                   uint64_t cycle) {
  for (la__oq_key_t **p = list; *p; p = &(*p)->next)
    if ((*p)->rank == rank && (*p)->cycle == cycle &&
        (*p)->app_len == app_len && memcmp((*p)->app, app, app_len) == 0)
      return p;
  return NULL;
}

/* Adds the key unless present. Returns 0 or LA_ENOMEM. */
static int la__key_add(la__oq_key_t **list, const char *app, uint16_t app_len,
                       uint32_t rank, uint64_t cycle) {
  if (la__key_find(list, app, app_len, rank, cycle)) return 0;
  la__oq_key_t *k = calloc(1, sizeof *k);
  if (k == NULL) return LA_ENOMEM;
  memcpy(k->app, app, app_len);
  k->app_len = app_len;
  k->slot = -1;
  k->rank = rank;
  k->cycle = cycle;
  k->next = *list;
  *list = k;
  return 0;
}

static int la__key_del(la__oq_key_t **list, const char *app, uint16_t app_len,
                       uint32_t rank, uint64_t cycle) {
  la__oq_key_t **p = la__key_find(list, app, app_len, rank, cycle);
  if (p == NULL) return 0;
  la__oq_key_t *k = *p;
  *p = k->next;
  free(k);
  return 1;
}

static void la__key_free(la__oq_key_t *k) {
  while (k) {
    la__oq_key_t *n = k->next;
    free(k);
    k = n;
  }
}

static size_t la__key_count(const la__oq_key_t *k) {
  size_t n = 0;
  for (; k; k = k->next) n++;
  return n;
}

/* Applies what a record does to the state (at append and at replay). */
static int la__apply(la_outq_t *q, const la__sl_rec_t *r) {
  if (r->kind == LA__SL_TAKEN)
    return la__key_add(&q->takens, r->app, r->app_len, r->rank, r->cycle);
  if (r->kind == LA__SL_RANK)
    return la__key_add(&q->ranks, r->app, r->app_len, r->rank, 0);
  if (r->kind != LA__SL_MSG) return 0;
  if (r->flags & LA__SL_F_RESOLVES) {
    /* in the log now: its slot in the taken table is free again */
    la__oq_key_t **k =
        la__key_find(&q->takens, r->app, r->app_len, r->rank, r->cycle);
    if (k && (*k)->slot >= 0) la_takentab_free(q->tab, (*k)->slot);
    la__key_del(&q->takens, r->app, r->app_len, r->rank, r->cycle);
  }
  if (r->flags & LA__SL_F_CLOSES)
    la__key_del(&q->ranks, r->app, r->app_len, r->rank, 0);
  if (r->flags & LA__SL_F_OPENS)
    return la__key_add(&q->ranks, r->app, r->app_len, r->rank, 0);
  return 0;
}

/* ------------------------------------------------------------ log I/O -- */

static int la__write(la_outq_t *q, const la__sl_rec_t *r, int n,
                     uint64_t *seg, uint64_t *off);

/* Starts a new segment with a checkpoint of the state. */
static int la__roll(la_outq_t *q) {
  int rc = la__seglog_roll(&q->sl, 1);
  if (rc != 0) return rc;
  la__sl_rec_t r = {.kind = LA__SL_START, .seq = q->next_seq};
  if ((rc = la__write(q, &r, 1, NULL, NULL)) != 0) return rc;
  if (q->st.last_acked) {
    la__sl_rec_t a = {.kind = LA__SL_ACK, .seq = q->st.last_acked};
    if ((rc = la__write(q, &a, 1, NULL, NULL)) != 0) return rc;
  }
  for (la__oq_key_t *k = q->ranks; k; k = k->next) {
    la__sl_rec_t c = {.kind = LA__SL_RANK, .rank = k->rank, .app = k->app,
                      .app_len = k->app_len};
    if ((rc = la__write(q, &c, 1, NULL, NULL)) != 0) return rc;
  }
  for (la__oq_key_t *k = q->takens; k; k = k->next) {
    la__sl_rec_t c = {.kind = LA__SL_TAKEN, .rank = k->rank,
                      .cycle = k->cycle, .app = k->app,
                      .app_len = k->app_len};
    if ((rc = la__write(q, &c, 1, NULL, NULL)) != 0) return rc;
  }
  return 0;
}

/* Writes the n (1 or 2) records r[0..n) with one write, rolling to a new
 * segment first when needed. */
static int la__write(la_outq_t *q, const la__sl_rec_t *r, int n,
                     uint64_t *seg, uint64_t *off) {
  uint64_t size = 0;
  for (int i = 0; i < n; i++) size += la__seglog_rec_size(&r[i]);
  if (!q->rolling && la__seglog_needs_roll(&q->sl, size)) {
    q->rolling = 1; /* the checkpoint's records go into the new segment */
    int rc = la__roll(q);
    q->rolling = 0;
    if (rc != 0) return rc;
  }
  int rc = la__seglog_append(&q->sl, r, n, seg, off);
  if (rc != 0) return rc;
  q->dirty = 1;
  if (q->fsync_each && la__seglog_sync(&q->sl) != 0) {
    la__seglog_notef(q->note, q->note_arg, "log %s: fsync failed: %s",
                     q->sl.path, strerror(errno));
    return LA_EIO;
  }
  return 0;
}

static int la__room(const la_outq_t *q, uint64_t size, int reserve) {
  uint64_t lim = q->log_limit + (reserve ? LA_OUTQ_LOG_RESERVE : 0);
  return size <= lim && q->sl.total_bytes <= lim - size;
}

/* -------------------------------------------------------------- replay -- */

static void la__push_item(la_outq_t *q, la__oq_item_t *it) {
  it->next = NULL;
  if (q->tail) q->tail->next = it;
  else q->head = it;
  q->tail = it;
  q->st.items++;
  if (it->data) {
    q->st.mem_items++;
    q->st.mem_bytes += it->len;
  }
  if (q->has_log) q->st.log_items++;
}

static void la__free_item(la_outq_t *q, la__oq_item_t *prev,
                          la__oq_item_t *it) {
  if (prev) prev->next = it->next;
  else q->head = it->next;
  if (q->tail == it) q->tail = prev;
  if (q->sent == it) q->sent = prev;
  if (it->data) {
    q->st.mem_items--;
    q->st.mem_bytes -= it->len;
    free(it->data);
  }
  if (q->has_log) q->st.log_items--;
  q->st.items--;
  free(it);
}

static int la__on_record(void *arg, uint64_t seg, uint64_t off,
                         const la__sl_rec_t *r) {
  la_outq_t *q = arg;
  if (r->kind == LA__SL_DAMAGED) {
    /* the span may have held the trace of any cycle taken and not yet
     * resolved; one it does not resolve later is reported as damaged */
    for (la__oq_key_t *k = q->takens; k; k = k->next) k->damaged = 1;
    return 0;
  }
  if (r->kind == LA__SL_START) {
    if (r->seq > q->next_seq) q->next_seq = r->seq;
    return 0;
  }
  if (r->kind == LA__SL_ACK) {
    if (r->seq > q->st.last_acked) q->st.last_acked = r->seq;
    if (r->seq >= q->next_seq) q->next_seq = r->seq + 1;
    return 0;
  }
  if (r->kind == LA__SL_MSG) {
    /* the taken table's cycles: resolved by the records of its run */
    if ((r->flags & LA__SL_F_RESOLVES) && q->tab &&
        seg >= la_takentab_since(q->tab))
      la__key_del(&q->tab_takens, r->app, r->app_len, r->rank, r->cycle);
    if (r->seq == 0 || r->seq == UINT64_MAX || r->len == 0) return 0;
    if (r->seq >= q->next_seq) q->next_seq = r->seq + 1;
    if (q->tail && r->seq <= q->tail->seq) return 0; /* out of order: skip */
    la__oq_item_t *it = calloc(1, sizeof *it);
    if (it == NULL) return LA_ENOMEM;
    it->seq = r->seq;
    it->len = r->len;
    it->seg = seg;
    it->off = off;
    la__push_item(q, it);
  }
  return la__apply(q, r);
}

/* A copy of the keys whose damaged flag is damaged. */
static la__oq_key_t *la__key_copy(const la__oq_key_t *k, int damaged) {
  la__oq_key_t *out = NULL;
  for (; k; k = k->next)
    if (!k->damaged == !damaged &&
        la__key_add(&out, k->app, k->app_len, k->rank, k->cycle) != 0)
      break;
  return out;
}

/* la_takentab_each's callback: a slot of the table, to check against the
 * log. */
static void la__tab_slot(void *arg, const char *app, uint16_t app_len,
                         uint32_t rank, uint64_t cycle) {
  la_outq_t *q = arg;
  if (la__key_add(&q->tab_takens, app, app_len, rank, cycle) != 0)
    q->st.dropped++; /* without memory: as a taken record not written */
}

/* Opens the taken table (without fsync_each: there every record is
 * fsynced, as a write), its slots to check against the log (tab_takens).
 * Without it, taken records go to the log. */
static void la__tab_open(la_outq_t *q, const char *log_dir) {
  char why[300];
  if (q->fsync_each ||
      la_takentab_open(q->sl.dirfd, log_dir, &q->tab, why, sizeof why) != 0) {
    if (!q->fsync_each)
      la__seglog_notef(q->note, q->note_arg, "%s: taken records go to the log",
                       why);
    q->tab = NULL;
    return;
  }
  uint64_t bad = 0;
  if (la_takentab_unreadable(q->tab))
    la__seglog_notef(q->note, q->note_arg,
                     "log %s: its table of taken cycles (taken.tab) cannot "
                     "be read (cut, or not of this layout or size): cycles "
                     "an earlier run took and had not logged cannot be "
                     "named; the table is made anew",
                     log_dir);
  la_takentab_each(q->tab, la__tab_slot, q, &bad);
  if (bad)
    la__seglog_notef(q->note, q->note_arg,
                     "log %s: %llu damaged slots in its table of taken "
                     "cycles skipped (cycles taken by an earlier run whose "
                     "slot was damaged cannot be named)",
                     log_dir, (unsigned long long)bad);
}

/* After the replay: the table's cycles that the log does not resolve are
 * taken ones like those of the log's taken records. Not damaged: a slot
 * is freed under the queue's lock right after its cycle's record is
 * written (with the taken record before it), so a cycle still in the
 * table never had that record written, but in the moment between the
 * write and the freeing. */
static int la__tab_merge(la_outq_t *q) {
  for (la__oq_key_t *k = q->tab_takens; k; k = k->next) {
    if (la__key_add(&q->takens, k->app, k->app_len, k->rank, k->cycle) != 0)
      return LA_ENOMEM;
  }
  la__key_free(q->tab_takens);
  q->tab_takens = NULL;
  return 0;
}

int la_outq_open(const char *log_dir, uint64_t mem_limit, uint64_t log_limit,
                 uint64_t seg_bytes, int fsync_each, la_outq_note_fn note,
                 void *note_arg, la_outq_t **out, char *why, size_t why_len) {
  if (why && why_len) why[0] = '\0';
  if (out == NULL) return LA_EINVAL;
  *out = NULL;
  la_outq_t *q = calloc(1, sizeof *q);
  if (q == NULL) {
    if (why && why_len) snprintf(why, why_len, "out of memory");
    return LA_ENOMEM;
  }
  pthread_mutex_init(&q->mu, NULL);
  q->mem_limit = mem_limit;
  q->log_limit = log_limit;
  q->note = note;
  q->note_arg = note_arg;
  q->next_seq = 1;
  q->fsync_each = fsync_each;
  if (log_dir && log_dir[0]) {
    int rc = la__seglog_open(&q->sl, log_dir,
                             seg_bytes ? seg_bytes : LA_OUTQ_SEG_BYTES,
                             LA_OUTQ_MAX_ITEM, note, note_arg, why, why_len);
    if (rc != 0) {
      pthread_mutex_destroy(&q->mu);
      free(q);
      return rc;
    }
    q->has_log = 1;
    la__tab_open(q, log_dir);
    rc = la__seglog_scan(&q->sl, la__on_record, q, why, why_len);
    if (rc == 0) rc = la__tab_merge(q);
    if (rc == 0) {
      /* what the acks already cover is not sent again */
      while (q->head && q->head->seq <= q->st.last_acked)
        la__free_item(q, NULL, q->head);
      q->st.replayed = q->st.items;
      q->st.torn_bytes = q->sl.torn_bytes;
      q->st.damaged_bytes = q->sl.damaged_bytes;
      q->st.damaged_spans = q->sl.damaged_spans;
      q->last_ack_logged = q->st.last_acked;
      q->rec_takens = la__key_copy(q->takens, 0);
      q->rec_damaged = la__key_copy(q->takens, 1);
      q->st.damaged_taken = la__key_count(q->rec_damaged);
      q->rec_ranks = la__key_copy(q->ranks, 0);
      q->rolling = 1; /* a fresh segment, starting with a checkpoint */
      rc = la__roll(q);
      q->rolling = 0;
      if (rc == 0) la__seglog_trim(&q->sl, q->st.last_acked);
      /* the table's cycles are taken records in the checkpoint now */
      if (rc == 0 && q->tab &&
          la_takentab_clear(q->tab, q->sl.segs[q->sl.n_segs - 1].id) != 0) {
        la__seglog_notef(q->note, q->note_arg,
                         "log %s: cannot reset its table of taken cycles: "
                         "taken records go to the log", log_dir);
        la_takentab_close(q->tab);
        q->tab = NULL;
      }
      if (rc != 0 && why && why_len && !why[0])
        snprintf(why, why_len, "log %s: cannot start a segment", log_dir);
    }
    if (rc != 0) {
      la_outq_close(q);
      return rc;
    }
  }
  if (q->st.last_acked < q->next_seq - 1 && q->head == NULL)
    q->st.last_acked = q->next_seq - 1;
  q->st.last_sent = q->st.last_acked;
  *out = q;
  return 0;
}

size_t la_outq_recovered(la_outq_t *q,
                         void (*cb)(void *arg, int what,
                                    const la_outq_key_t *key),
                         void *arg) {
  size_t n = 0;
  if (q == NULL) return 0;
  pthread_mutex_lock(&q->mu);
  la__oq_key_t *t = q->rec_takens, *r = q->rec_ranks;
  q->rec_takens = q->rec_ranks = NULL;
  pthread_mutex_unlock(&q->mu);
  for (int pass = 0; pass < 2; pass++) {
    for (la__oq_key_t *k = pass ? r : t; k; k = k->next) {
      la_outq_key_t key = {k->app, k->rank, k->cycle};
      if (cb) cb(arg, pass ? LA_OUTQ_REC_RANK : LA_OUTQ_REC_TAKEN, &key);
      n++;
    }
  }
  la__key_free(t);
  la__key_free(r);
  return n;
}

size_t la_outq_damaged(la_outq_t *q,
                       void (*cb)(void *arg, const la_outq_key_t *key),
                       void *arg) {
  size_t n = 0;
  if (q == NULL) return 0;
  pthread_mutex_lock(&q->mu);
  la__oq_key_t *d = q->rec_damaged;
  q->rec_damaged = NULL;
  pthread_mutex_unlock(&q->mu);
  for (la__oq_key_t *k = d; k; k = k->next) {
    la_outq_key_t key = {k->app, k->rank, k->cycle};
    if (cb) cb(arg, &key);
    n++;
  }
  la__key_free(d);
  return n;
}

/* ----------------------------------------------------------- appending -- */

static uint16_t la__app_len(const la_outq_key_t *key) {
  size_t n = key && key->app_id ? strlen(key->app_id) : 0;
  return (uint16_t)(n > LA__SL_MAX_APP ? LA__SL_MAX_APP : n);
}

/* The taken table was cut under its map by another process (a store
 * faulted) or replaced (la_takentab_cut): the cycles of its slots in use go to the log
 * as taken records now, as every later one does (the slots could not
 * name them after a crash); said once. Under the lock. */
static void la__tab_cut(la_outq_t *q) {
  if (q->tab_cut_noted || !la_takentab_cut(q->tab)) return;
  q->tab_cut_noted = 1;
  uint64_t n = 0, lost = 0;
  for (la__oq_key_t *k = q->takens; k; k = k->next) {
    if (k->slot < 0) continue;
    la__sl_rec_t c = {.kind = LA__SL_TAKEN, .rank = k->rank,
                      .cycle = k->cycle, .app = k->app,
                      .app_len = k->app_len};
    if (la__write(q, &c, 1, NULL, NULL) == 0) n++;
    else lost++;
    la_takentab_free(q->tab, k->slot);
    k->slot = -1;
  }
  la__seglog_notef(q->note, q->note_arg,
                   "log %s: taken.tab was cut or replaced under the agent "
                   "by another process: taken records go to the log (%llu "
                   "cycles of "
                   "its slots written there%s)",
                   q->sl.path, (unsigned long long)n,
                   lost ? ", some could not be: a crash now loses them"
                        : "");
}

int la_outq_taken(la_outq_t *q, const la_outq_key_t *key) {
  if (q == NULL || key == NULL || key->app_id == NULL) return LA_EINVAL;
  if (!q->has_log) return 0;
  la__sl_rec_t r = {.kind = LA__SL_TAKEN, .rank = key->rank,
                    .cycle = key->cycle_tag, .app = key->app_id,
                    .app_len = la__app_len(key)};
  uint64_t seg;
  int rc, slot;
  pthread_mutex_lock(&q->mu);
  if (la__key_find(&q->takens, r.app, r.app_len, r.rank, r.cycle)) {
    rc = 0; /* taken already (a record or a slot says so) */
    q->st.taken++;
  } else if (q->tab && ((slot = la_takentab_put(q->tab, r.app, r.app_len,
                                                r.rank, r.cycle)) >= 0 ||
                         (la__tab_cut(q), 0))) {
    /* a slot of the mapped table: no write(2) */
    if ((rc = la__apply(q, &r)) == 0) {
      la__key_find(&q->takens, r.app, r.app_len, r.rank, r.cycle)[0]->slot =
          slot;
      q->st.taken++;
    } else {
      la_takentab_free(q->tab, slot);
    }
  } else if (!la__room(q, la__seglog_rec_size(&r), 1)) rc = LA_ELIMIT;
  else if ((rc = la__write(q, &r, 1, &seg, NULL)) == 0 &&
           (rc = la__apply(q, &r)) == 0)
    q->st.taken++;
  if (rc != 0) q->st.dropped++;
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int la_outq_append(la_outq_t *q, unsigned flags, const la_outq_key_t *key,
                   la_outq_encode_fn enc, void *arg, uint64_t *seq_out) {
  uint8_t *frame = NULL;
  size_t len = 0;
  int rc;
  if (q == NULL || enc == NULL || (flags && (key == NULL || !key->app_id)))
    return LA_EINVAL;
  pthread_mutex_lock(&q->mu);
  uint64_t seq = q->next_seq;
  if (seq == UINT64_MAX) {
    rc = LA_ELIMIT;
    goto out;
  }
  q->next_seq++;
  if (seq_out) *seq_out = seq;
  if ((rc = enc(arg, seq, &frame, &len)) != 0) goto out;
  if (len == 0 || len > LA_OUTQ_MAX_ITEM) {
    rc = LA_EMSGSIZE;
    goto out;
  }
  la__oq_item_t *it = calloc(1, sizeof *it);
  if (it == NULL) {
    rc = LA_ENOMEM;
    goto out;
  }
  it->seq = seq;
  it->len = (uint32_t)len;
  int in_mem = len <= q->mem_limit && q->st.mem_bytes <= q->mem_limit - len;
  if (q->has_log) {
    uint8_t f = 0;
    if (flags & LA_OUTQ_OPENS_RANK) f |= LA__SL_F_OPENS;
    if (flags & LA_OUTQ_CLOSES_RANK) f |= LA__SL_F_CLOSES;
    if (flags & LA_OUTQ_RESOLVES) f |= LA__SL_F_RESOLVES;
    if (flags & LA_OUTQ_MISSING) f |= LA__SL_F_MISSING;
    la__sl_rec_t r = {.kind = LA__SL_MSG, .flags = f, .seq = seq,
                      .rank = key ? key->rank : 0,
                      .cycle = key ? key->cycle_tag : 0,
                      .app = key ? key->app_id : NULL,
                      .app_len = la__app_len(key), .payload = frame,
                      .len = (uint32_t)len};
    int reserve = (flags & (LA_OUTQ_MISSING | LA_OUTQ_CLOSES_RANK)) != 0;
    /* a cycle the taken table holds: its taken record goes first, in the
     * same write, so that damage to the trace leaves it named (replay) */
    la__sl_rec_t w[2] = {{.kind = LA__SL_TAKEN, .rank = r.rank,
                          .cycle = r.cycle, .app = r.app,
                          .app_len = r.app_len},
                         r};
    la__oq_key_t **tk =
        (flags & LA_OUTQ_RESOLVES)
            ? la__key_find(&q->takens, r.app, r.app_len, r.rank, r.cycle)
            : NULL;
    int n = tk && (*tk)->slot >= 0 ? 2 : 1;
    uint64_t size = la__seglog_rec_size(&r) +
                    (n == 2 ? la__seglog_rec_size(&w[0]) : 0);
    if (!la__room(q, size, reserve)) rc = LA_ELIMIT;
    else if ((rc = la__write(q, w + 2 - n, n, &it->seg, &it->off)) == 0)
      rc = la__apply(q, &r);
    if (q->tab) la__tab_cut(q); /* freeing its slot may have found it cut */
  } else if (!in_mem) {
    rc = LA_ELIMIT;
  }
  if (rc != 0) {
    free(it);
    goto out;
  }
  if (in_mem) {
    it->data = frame;
    frame = NULL;
  }
  la__push_item(q, it);
  q->st.pushed++;
  if (flags & LA_OUTQ_MISSING) q->st.missing++;
out:
  if (rc != 0) q->st.dropped++;
  pthread_mutex_unlock(&q->mu);
  free(frame);
  return rc;
}

/* ------------------------------------------------------------- sending -- */

int la_outq_next(la_outq_t *q, uint64_t *seq, const uint8_t **bytes,
                 size_t *len) {
  if (q == NULL || seq == NULL || bytes == NULL || len == NULL)
    return LA_EINVAL;
  int rc = 1;
  pthread_mutex_lock(&q->mu);
  la__oq_item_t *it = q->sent ? q->sent->next : q->head;
  if (it == NULL || it->data) {
    if (q->rcap > RBUF_KEEP) {
      free(q->rbuf);
      q->rbuf = NULL;
      q->rcap = 0;
    }
    if (it == NULL) {
      rc = 0;
      goto out;
    }
    *bytes = it->data;
  } else {
    if (q->rcap < it->len) {
      uint8_t *nb = malloc(it->len);
      if (nb == NULL) {
        rc = LA_ENOMEM;
        goto out;
      }
      free(q->rbuf);
      q->rbuf = nb;
      q->rcap = it->len;
    }
    if (la__seglog_read(&q->sl, it->seg, it->off, it->len, q->rbuf) != 0) {
      la__seglog_notef(q->note, q->note_arg,
                       "log %s: message %llu cannot be read back: lost",
                       q->sl.path, (unsigned long long)it->seq);
      q->st.bad_reads++;
      la__free_item(q, q->sent, it);
      rc = LA_EIO;
      goto out;
    }
    *bytes = q->rbuf;
  }
  q->sent = it;
  if (it->seq > q->st.last_sent) q->st.last_sent = it->seq;
  *seq = it->seq;
  *len = it->len;
out:
  pthread_mutex_unlock(&q->mu);
  return rc;
}

int la_outq_ack(la_outq_t *q, uint64_t seq) {
  if (q == NULL) return LA_EINVAL;
  pthread_mutex_lock(&q->mu);
  int rc = 0;
  if (seq > q->st.last_sent) {
    rc = LA_EPROTO;
  } else if (seq > q->st.last_acked) {
    while (q->head && q->head->seq <= seq) {
      la__free_item(q, NULL, q->head);
      q->st.acked++;
    }
    q->st.last_acked = seq;
    if (q->has_log) {
      la__sl_rec_t r = {.kind = LA__SL_ACK, .seq = seq};
      if (la__room(q, la__seglog_rec_size(&r), 1) &&
          la__write(q, &r, 1, NULL, NULL) == 0)
        q->last_ack_logged = seq;
      /* while la_outq_sync fsyncs a segment without the lock, no segment
       * is closed: that one may have become deletable meanwhile */
      if (q->syncing)
        q->trim_pending = 1;
      else
        la__seglog_trim(&q->sl, seq);
    }
  }
  pthread_mutex_unlock(&q->mu);
  return rc;
}

void la_outq_rewind(la_outq_t *q) {
  if (q == NULL) return;
  pthread_mutex_lock(&q->mu);
  q->sent = NULL;
  pthread_mutex_unlock(&q->mu);
}

int la_outq_sync(la_outq_t *q) {
  if (q == NULL || !q->has_log) return 0;
  pthread_mutex_lock(&q->mu);
  if (!q->dirty || q->sl.n_segs == 0) {
    pthread_mutex_unlock(&q->mu);
    return la_takentab_sync(q->tab); /* its slots may have changed */
  }
  /* fsync the active segment without the lock, so that appends (the
   * loop's, the workers') go on meanwhile; a segment rolled in the
   * meantime was fsynced by the roll itself, and no segment is closed
   * until this one is synced (syncing: acknowledgements defer their trim) */
  int fd = q->sl.segs[q->sl.n_segs - 1].fd;
  q->syncing++;
  q->dirty = 0;
  pthread_mutex_unlock(&q->mu);
  int rc = fsync(fd) == 0 ? 0 : LA_EIO;
  int err = errno;
  if (rc == 0 && la_takentab_sync(q->tab) != 0) { /* the slots, likewise */
    rc = LA_EIO;
    err = errno;
  }
  pthread_mutex_lock(&q->mu);
  if (--q->syncing == 0 && q->trim_pending) {
    q->trim_pending = 0;
    la__seglog_trim(&q->sl, q->st.last_acked);
  }
  if (rc != 0) q->dirty = 1; /* the next sync tries again */
  if (rc != 0) {
    la__seglog_notef(q->note, q->note_arg, "log %s: fsync failed: %s",
                     q->sl.path, strerror(err));
    rc = LA_EIO;
  } else {
    q->st.fsyncs++;
  }
  pthread_mutex_unlock(&q->mu);
  return rc;
}

void la_outq_set_limits(la_outq_t *q, uint64_t mem_limit, uint64_t log_limit) {
  if (q == NULL) return;
  pthread_mutex_lock(&q->mu);
  q->mem_limit = mem_limit;
  q->log_limit = log_limit;
  pthread_mutex_unlock(&q->mu);
}

void la_outq_get_stats(la_outq_t *q, la_outq_stats_t *st) {
  if (q == NULL || st == NULL) return;
  pthread_mutex_lock(&q->mu);
  *st = q->st;
  st->next_seq = q->next_seq;
  st->log_bytes = q->has_log ? q->sl.total_bytes : 0;
  st->log_segments = q->has_log ? q->sl.n_segs : 0;
  st->pending_taken = la__key_count(q->takens);
  st->open_ranks = la__key_count(q->ranks);
  pthread_mutex_unlock(&q->mu);
}

void la_outq_close(la_outq_t *q) {
  if (q == NULL) return;
  if (q->has_log) {
    la_outq_sync(q);
    la__seglog_close(&q->sl);
  }
  while (q->head) la__free_item(q, NULL, q->head);
  la__key_free(q->ranks);
  la__key_free(q->takens);
  la__key_free(q->rec_ranks);
  la__key_free(q->rec_takens);
  la__key_free(q->rec_damaged);
  la__key_free(q->tab_takens);
  la_takentab_close(q->tab);
  free(q->rbuf);
  pthread_mutex_destroy(&q->mu);
  free(q);
}
