/* SPDX-License-Identifier: BSD-3-Clause */
/* lost.c: LocalAgents whose link closed, until they link again or are
 * lost (lost.h). */
#include "lost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ga.h"
#include "la_log.h"

typedef struct la_ga_lost {
  struct la_ga_lost *next;
  uint64_t since_ms; /* loop time the link closed */
  int ended;         /* its ranks were ended: forgotten once none is left */
  char host[LA_MAX_ID_LEN + 1];
} la_ga_lost_t;

void la_ga_lost_reason(const char *host, char *buf, size_t len) {
  snprintf(buf, len, "LocalAgent %s lost", host);
}

void la_ga_lost_note(la_ga_t *ga, const char *host) {
  /* shards sharing a store: the LocalAgent is linked to the others too,
   * which may go on storing its ranks (docs/sharding.md) */
  if (!ga->store || la_store_shared(ga->store)) return;
  for (la_ga_lost_t *l = ga->lost; l; l = l->next)
    if (!strcmp(l->host, host)) return;
  la_ga_lost_t *l = calloc(1, sizeof *l);
  if (!l) {
    la_log_error("LocalAgent %s: out of memory noting its link closed: its "
                 "open Trace-Sets close at stitch.timeout only",
                 host);
    return;
  }
  snprintf(l->host, sizeof l->host, "%s", host);
  l->since_ms = uv_now(ga->loop);
  l->next = ga->lost;
  ga->lost = l;
}

/* Forgets l (in ga->lost). */
static void la__forget(la_ga_t *ga, const la_ga_lost_t *l) {
  for (la_ga_lost_t **p = &ga->lost; *p; p = &(*p)->next)
    if (*p == l) {
      *p = l->next;
      free((void *)l);
      return;
    }
}

size_t la_ga_lost_due(la_ga_t *ga, const char **hosts, size_t max) {
  uint64_t now = uv_now(ga->loop);
  size_t k = 0;
  for (la_ga_lost_t *l = ga->lost, *n; l; l = n) {
    n = l->next;
    if (ga->agent_ops->connected(ga, l->host))
      la__forget(ga, l); /* linked again */
    else if (k < max &&
             now - l->since_ms >= (uint64_t)ga->set.set_timeout_ms)
      hosts[k++] = l->host;
  }
  return k;
}

void la_ga_lost_ended(la_ga_t *ga, const char *host, size_t n) {
  for (la_ga_lost_t *l = ga->lost; l; l = l->next)
    if (l->host == host) {
      /* ended once: asked again after that commit, so that a rollback
       * (nothing of it stored) ends them again; forgotten once none is
       * left */
      if (l->ended && n == 0)
        la__forget(ga, l);
      else
        l->ended = 1;
      return;
    }
}

void la_ga_lost_free(la_ga_t *ga) {
  while (ga->lost) {
    la_ga_lost_t *l = ga->lost;
    ga->lost = l->next;
    free(l);
  }
}
