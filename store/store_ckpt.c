/* SPDX-License-Identifier: BSD-3-Clause */
/* store_ckpt.c: SQLite WAL checkpoints in a thread of their own, so that
 * the writer (the GlobalAgent's connection, committed on its committer
 * thread) only appends to the WAL.
 *
 * SQLite's automatic checkpoint runs inside the commit that crosses its
 * threshold, on the writing thread: it copies the WAL's pages into the
 * database file and fsyncs it, a large share of the writer's time under a
 * stream of traces. Here the writer's automatic checkpoint is off and a WAL
 * hook (called after each commit with the WAL's size) wakes a thread that
 * runs a PASSIVE checkpoint on its own connection to the same file: it
 * copies what is committed while the writer carries on, and never blocks
 * the writer nor a reader. The WAL stays bounded: when it reaches
 * LA__CKPT_HARD frames all the same (the thread is starved of CPU, or a
 * reader keeps the WAL from being reset), the writer checkpoints inline as
 * SQLite would have.
 *
 * Durability is the commit's own (the WAL fsync at commit with
 * synchronous = FULL): a checkpoint only moves committed pages, and a crash
 * in the middle of one loses nothing (the WAL still holds them).
 *
 * Deliberately not here: opening the writer (store_db_sqlite.c), anything
 * PostgreSQL (it has no WAL for us to manage).
 */
#include "store_ckpt.h"

#include <pthread.h>
#include <stdlib.h>

#include "la_errcodes.h"
#include "la_limits.h"
#include "la_daemon.h"

/* SQLite's own default threshold (wal_autocheckpoint = 1000 pages), and
 * that many 4 KiB pages in bytes: a store with larger pages checkpoints
 * after as many bytes of WAL, not as many frames. */
#define LA__CKPT_SOFT 1000
#define LA__CKPT_SOFT_BYTES (LA__CKPT_SOFT * 4096)
/* The writer checkpoints inline from this many times the soft threshold
 * on. */
#define LA__CKPT_HARD 16

struct la_ckpt {
  sqlite3 *writer; /* not owned */
  sqlite3 *db;     /* the thread's connection */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int soft, hard;    /* the thresholds in frames of this store's pages */
  int pending, stop; /* under mu */
};

static void *la__ckpt_main(void *arg) {
  la_ckpt_t *c = arg;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (!c->pending && !c->stop) pthread_cond_wait(&c->cv, &c->mu);
    if (c->stop) break;
    c->pending = 0;
    pthread_mutex_unlock(&c->mu);
    /* SQLITE_BUSY (another checkpoint runs) is fine: the next commit over
     * the threshold asks again */
    sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                              NULL);
    pthread_mutex_lock(&c->mu);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* The writer's WAL hook: after each commit, with the WAL's size in frames. */
static int la__ckpt_hook(void *arg, sqlite3 *db, const char *name, int frames) {
  la_ckpt_t *c = arg;
  if (frames >= c->hard) {
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
  } else if (frames >= c->soft) {
    pthread_mutex_lock(&c->mu);
    c->pending = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
  return SQLITE_OK;
}

int la__ckpt_start(sqlite3 *writer, la_ckpt_t **out) {
  *out = NULL;
  const char *path = sqlite3_db_filename(writer, "main");
  if (!path || !path[0]) return 0; /* in memory: no WAL */
  la_ckpt_t *c = calloc(1, sizeof *c);
  if (!c) return LA_ENOMEM;
  c->writer = writer;
  int page = 4096;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(writer, "PRAGMA page_size", -1, &st, NULL) ==
          SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) > 0)
    page = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  c->soft = LA__CKPT_SOFT_BYTES / page;
  c->hard = LA__CKPT_HARD * c->soft;
  int of = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  /* synchronous = NORMAL: a checkpoint fsyncs the database file with it
   * (this connection never commits anything) */
  if (sqlite3_open_v2(path, &c->db, of, NULL) != SQLITE_OK ||
      sqlite3_exec(c->db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) !=
          SQLITE_OK ||
      sqlite3_exec(c->db, "PRAGMA cache_size = 16", NULL, NULL, NULL) !=
          SQLITE_OK) {
    sqlite3_close(c->db);
    free(c);
    return LA_EIO;
  }
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  /* the thread never takes the process's signals: they are the loop
   * thread's to handle (a daemon's stop and reload) */
  sigset_t old;
  la_daemon_mask_signals(&old);
  int prc = pthread_create(&c->thread, NULL, la__ckpt_main, c);
  la_daemon_unmask_signals(&old);
  if (prc != 0) {
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    sqlite3_close(c->db);
    free(c);
    return LA_ENOMEM;
  }
  pthread_setname_np(c->thread, "la-ckpt"); /* for top -H and perf */
  sqlite3_wal_hook(writer, la__ckpt_hook, c); /* replaces the automatic one */
  *out = c;
  return 0;
}

void la__ckpt_stop(la_ckpt_t *c) {
  if (!c) return;
  sqlite3_wal_autocheckpoint(c->writer, LA__CKPT_SOFT); /* the hook goes */
  pthread_mutex_lock(&c->mu);
  c->stop = 1;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
  pthread_join(c->thread, NULL);
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  sqlite3_close(c->db);
  free(c);
}
