/* SPDX-License-Identifier: BSD-3-Clause */
/* store_ckpt.h: WAL checkpoints of an SQLite store in a thread of their own
 * (store_ckpt.c), for the SQLite backend (store_db_sqlite.c). */
#ifndef LA_GLOBALAGENT_STORE_CKPT_H
#define LA_GLOBALAGENT_STORE_CKPT_H

#include <sqlite3.h>

typedef struct la_ckpt la_ckpt_t;

/* Takes over writer's checkpoints: its automatic checkpoint is replaced by
 * a thread (with its own connection to the same file) that a commit wakes
 * when the WAL holds 1000 frames or more; from 16000 frames the committing
 * thread checkpoints inline. writer must stay open until la__ckpt_stop and
 * be used from one thread at a time. *out is NULL (and 0 returned) for a
 * database without a file (":memory:"). Returns 0, LA_ENOMEM or LA_EIO
 * (the writer is then unchanged). */
int la__ckpt_start(sqlite3 *writer, la_ckpt_t **out);

/* Stops and joins the thread, closes its connection, gives the writer back
 * SQLite's automatic checkpoint, frees c (NULL: nothing). Call before
 * closing the writer, from the thread that uses it. */
void la__ckpt_stop(la_ckpt_t *c);

#endif
