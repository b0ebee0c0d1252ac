/* SPDX-License-Identifier: BSD-3-Clause */
/* store_arena.c: a batch's bump allocator, where the traces deferred to
 * the batch's flush are copied, dropped all at once and its blocks kept
 * for the next batch (store_arena.h). Blocks of
 * LA__ARENA_BLOCK bytes (a larger request gets a block of its own size);
 * an allocation takes the next aligned bytes of the newest block, and a
 * reset moves the blocks to the spare list, the newest first, freeing
 * those past LA__ARENA_KEEP bytes. */
#include "store_arena.h"

#include <assert.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>

#define LA__ARENA_BLOCK ((size_t)1 << 20)
#define LA__ARENA_KEEP ((size_t)8 << 20)
#define LA__ALIGN alignof(max_align_t)

struct la__arena_block {
  la__arena_block_t *next;
  size_t used, cap;
  alignas(max_align_t) unsigned char data[];
};

void *la__arena_alloc(la__arena_t *a, size_t n) {
  size_t need = (n + LA__ALIGN - 1) & ~(LA__ALIGN - 1);
  if (need < n) return NULL; /* overflow */
  la__arena_block_t *b = a->used;
  if (b && b->cap - b->used >= need) {
    void *p = b->data + b->used;
    b->used += need;
    return p;
  }
  /* a spare block that fits, else a new one */
  la__arena_block_t **s = &a->spare;
  while (*s && (*s)->cap < need) s = &(*s)->next;
  if (*s) {
    b = *s;
    *s = b->next;
    a->spare_bytes -= b->cap;
  } else {
    size_t cap = need > LA__ARENA_BLOCK ? need : LA__ARENA_BLOCK;
    if (!(b = malloc(sizeof *b + cap))) return NULL;
    b->cap = cap;
  }
  b->used = need;
  b->next = a->used;
  a->used = b;
  return b->data;
}

void la__arena_reset(la__arena_t *a) {
  while (a->used) {
    la__arena_block_t *b = a->used;
    a->used = b->next;
    if (a->spare_bytes + b->cap > LA__ARENA_KEEP) {
      free(b);
      continue;
    }
    b->used = 0;
    b->next = a->spare;
    a->spare = b;
    a->spare_bytes += b->cap;
  }
  assert(a->spare_bytes <= LA__ARENA_KEEP);
}

void la__arena_free(la__arena_t *a) {
  la__arena_reset(a);
  while (a->spare) {
    la__arena_block_t *b = a->spare;
    a->spare = b->next;
    free(b);
  }
  a->spare_bytes = 0;
}
