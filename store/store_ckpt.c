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
 * the writer nor a reader.
 *
 * A checkpoint copies each page once, its latest frame: the pages every
 * commit rewrites (the unique indexes' pages of the sets being filled, each
 * table's last page) are copied once per checkpoint, not once per commit.
 * So the thread is woken once per LA__CKPT_SOFT_BYTES of new WAL, not
 * after every commit once the WAL is that long (under a steady stream the
 * writer keeps the WAL from restarting, which needs every frame copied
 * before the writer's next transaction). From LA__CKPT_CATCHUP times that
 * on, the thread is woken after every commit until a checkpoint has
 * copied the whole WAL, so that it restarts. The WAL stays bounded: when it
 * reaches LA__CKPT_HARD times the soft threshold all the same (the thread
 * is starved of CPU, or a reader keeps the WAL from being reset), the
 * writer checkpoints inline as SQLite would have.
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

/* SQLite's own default threshold (wal_autocheckpoint = 1000 pages), set
 * back when the hook goes. */
#define LA__CKPT_SOFT 1000
/* A checkpoint per this many bytes of new WAL (2000 frames of 4 KiB, 250
 * of 32 KiB: whatever the page size, as many bytes of WAL). */
#ifndef LA__CKPT_SOFT_BYTES
#define LA__CKPT_SOFT_BYTES (8 * 1024000)
#endif
/* From this many times the soft threshold on, a checkpoint after every
 * commit until the WAL restarts. */
#define LA__CKPT_CATCHUP 4
/* The writer checkpoints inline from this many times the soft threshold
 * on (64 MiB of WAL). */
#define LA__CKPT_HARD 8

struct la_ckpt {
  sqlite3 *writer; /* not owned */
  sqlite3 *db;     /* the thread's connection */
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int soft, catchup, hard; /* the thresholds in frames of this store's pages */
  int pending, stop;       /* under mu */
  int asked;   /* the WAL's frames when the thread was last woken (writer) */
  int behind;  /* under mu: the last checkpoint left frames uncopied in a
                * WAL of catchup frames or more */
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
    int log = -1, done = -1;
    int rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                       &log, &done);
    pthread_mutex_lock(&c->mu);
    c->behind = rc != SQLITE_OK || (log >= c->catchup && done < log);
  }
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

/* The writer's WAL hook: after each commit, with the WAL's size in frames. */
static int la__ckpt_hook(void *arg, sqlite3 *db, const char *name, int frames) {
  la_ckpt_t *c = arg;
  if (frames < c->asked) c->asked = 0; /* the WAL restarted */
  if (frames >= c->hard) {
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
  }
  int soft = frames - c->asked >= c->soft;
  if (!soft && frames < c->catchup) return SQLITE_OK;
  pthread_mutex_lock(&c->mu);
  if (soft || c->behind) {
    c->asked = frames;
    c->pending = 1;
    pthread_cond_signal(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
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
  c->catchup = LA__CKPT_CATCHUP * c->soft;
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
