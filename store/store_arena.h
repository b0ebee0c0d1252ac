/* SPDX-License-Identifier: BSD-3-Clause */
/* store_arena.h: a batch's bump allocator, for what the store keeps from
 * la_store_trace_defer until the batch's flush and then drops all at once
 * (store_pending.c). Its blocks are kept for the next batch up to a bound,
 * so a batch neither calls malloc and free per trace nor faults fresh pages
 * in. Not thread-safe: one thread at a time (the loop while it fills a
 * batch, the committer thread while it flushes it). */
#ifndef LA_STORE_ARENA_H
#define LA_STORE_ARENA_H

#include <stddef.h>

typedef struct la__arena_block la__arena_block_t;

typedef struct la__arena {
  la__arena_block_t *used;  /* the blocks handed out from, newest first */
  la__arena_block_t *spare; /* emptied blocks kept for the next batch */
  size_t spare_bytes;
} la__arena_t;

/* n bytes, aligned for any type, valid until la__arena_reset; NULL when
 * out of memory. */
void *la__arena_alloc(la__arena_t *a, size_t n);
/* Drops everything allocated: the blocks are kept for reuse, up to
 * LA__ARENA_KEEP bytes of them; the rest are freed. */
void la__arena_reset(la__arena_t *a);
/* Frees every block. */
void la__arena_free(la__arena_t *a);

#endif
