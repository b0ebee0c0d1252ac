/* la_status.c: StatusReply builder (see la_status.h). */
#include "la_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

La__StatusReply *la_status_new(const char *daemon) {
  La__StatusReply *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  la__status_reply__init(r);
  if (!(r->daemon = strdup(daemon))) {
    free(r);
    return NULL;
  }
  return r;
}

void la_status_row(La__StatusReply *r, const char *key, const char *fmt, ...) {
  if (!r) return;
  if ((r->n_entries & (r->n_entries - 1)) == 0) { /* grow at powers of 2 */
    size_t cap = r->n_entries ? r->n_entries * 2 : 32;
    if (cap < 32) cap = 32;
    La__StatusEntry **e = realloc(r->entries, cap * sizeof *e);
    if (!e) return;
    r->entries = e;
  }
  La__StatusEntry *e = malloc(sizeof *e);
  char *k = strdup(key), *v = malloc(256);
  if (!e || !k || !v) {
    free(e);
    free(k);
    free(v);
    return;
  }
  la__status_entry__init(e);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, 256, fmt, ap);
  va_end(ap);
  e->key = k;
  e->value = v;
  r->entries[r->n_entries++] = e;
}

void la_status_free(La__StatusReply *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n_entries; i++) {
    free(r->entries[i]->key);
    free(r->entries[i]->value);
    free(r->entries[i]);
  }
  free(r->entries);
  free(r->daemon);
  free(r);
}
