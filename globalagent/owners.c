/* SPDX-License-Identifier: BSD-3-Clause */
/* owners.c: application ids owned across nodes: binding an id to the uid
 * of its first RankStart, refusing another uid's ranks under it, and
 * dropping the messages of a refused rank (owners.h says what each call
 * does; docs/security.md why).
 *
 * The refused keys live in a chained hash table (the store keeps them
 * durably; this is their copy, so that a trace costs one lookup, and none
 * while the table is empty). The (application, uid) pairs already logged
 * are a short list, bounded: past LA__LOGGED_MAX pairs a refusal is still
 * counted and told, its line rate-limited instead.
 */
#include "owners.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errors.h"
#include "la_log.h"

#define LA__LOGGED_MAX 4096

/* What the program that lost is told (libla prints it with LA_VERBOSE). */
#define LA__WHY_FMT \
  "app id %s belongs to another user on the front end: choose another id " \
  "(LA_APP_ID)"

typedef struct la__key {
  struct la__key *next;
  uint64_t hash;
  uint32_t rank, uid;
  char *host;
  char app_id[]; /* then host */
} la__key_t;

typedef struct la__logged {
  struct la__logged *next;
  uint32_t uid;
  char app_id[LA_MAX_ID_LEN + 1];
} la__logged_t;

struct la_ga_owners {
  la__key_t **b;
  size_t nb, n;
  la__logged_t *logged;
  size_t n_logged;
};

static uint64_t la__hash(const char *app, const char *host, uint32_t rank) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = app; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
  h = (h ^ 0xff) * 0x100000001b3ull;
  for (const char *p = host; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
  for (int i = 0; i < 4; i++)
    h = (h ^ ((rank >> (8 * i)) & 0xff)) * 0x100000001b3ull;
  return h;
}

la_ga_owners_t *la_ga_owners_new(void) {
  return calloc(1, sizeof(la_ga_owners_t));
}

static void la__clear(la_ga_owners_t *o) {
  for (size_t i = 0; i < o->nb; i++)
    for (la__key_t *k = o->b[i], *n; k; k = n) {
      n = k->next;
      free(k);
    }
  free(o->b);
  o->b = NULL;
  o->nb = o->n = 0;
}

void la_ga_owners_free(la_ga_owners_t *o) {
  if (!o) return;
  la__clear(o);
  for (la__logged_t *l = o->logged, *n; l; l = n) {
    n = l->next;
    free(l);
  }
  free(o);
}

static la__key_t **la__slot(la_ga_owners_t *o, const char *app,
                            const char *host, uint32_t rank, uint64_t h) {
  la__key_t **p = &o->b[h % o->nb];
  for (; *p; p = &(*p)->next)
    if ((*p)->hash == h && (*p)->rank == rank && !strcmp((*p)->app_id, app) &&
        !strcmp((*p)->host, host))
      break;
  return p;
}

/* Doubles the buckets (a first 64). 0 or LA_ENOMEM (the table stays). */
static int la__grow(la_ga_owners_t *o) {
  size_t nb = o->nb ? o->nb * 2 : 64;
  la__key_t **b = calloc(nb, sizeof *b);
  if (!b) return LA_ENOMEM;
  for (size_t i = 0; i < o->nb; i++)
    for (la__key_t *k = o->b[i], *n; k; k = n) {
      n = k->next;
      k->next = b[k->hash % nb];
      b[k->hash % nb] = k;
    }
  free(o->b);
  o->b = b;
  o->nb = nb;
  return 0;
}

/* Adds (or updates) a refused key. 0 or LA_ENOMEM. */
static int la__add(la_ga_owners_t *o, const char *app, const char *host,
                   uint32_t rank, uint32_t uid) {
  if (o->n >= o->nb && la__grow(o) != 0 && !o->nb) return LA_ENOMEM;
  uint64_t h = la__hash(app, host, rank);
  la__key_t **p = la__slot(o, app, host, rank, h);
  if (*p) {
    (*p)->uid = uid;
    return 0;
  }
  size_t la = strlen(app) + 1, lh = strlen(host) + 1;
  la__key_t *k = malloc(sizeof *k + la + lh);
  if (!k) return LA_ENOMEM;
  k->next = NULL;
  k->hash = h;
  k->rank = rank;
  k->uid = uid;
  memcpy(k->app_id, app, la);
  k->host = k->app_id + la;
  memcpy(k->host, host, lh);
  *p = k;
  o->n++;
  return 0;
}

static void la__del(la_ga_owners_t *o, const char *app, const char *host,
                    uint32_t rank) {
  if (!o->n) return;
  la__key_t **p = la__slot(o, app, host, rank, la__hash(app, host, rank));
  if (!*p) return;
  la__key_t *k = *p;
  *p = k->next;
  free(k);
  o->n--;
}

/* 1 the first time (app, uid) is asked about (while the list has room). */
static int la__first_log(la_ga_owners_t *o, const char *app, uint32_t uid) {
  for (const la__logged_t *l = o->logged; l; l = l->next)
    if (l->uid == uid && !strcmp(l->app_id, app)) return 0;
  if (o->n_logged >= LA__LOGGED_MAX) return 0;
  la__logged_t *l = calloc(1, sizeof *l);
  if (!l) return 0;
  l->uid = uid;
  snprintf(l->app_id, sizeof l->app_id, "%s", app);
  l->next = o->logged;
  o->logged = l;
  o->n_logged++;
  return 1;
}

static int la__load_one(void *arg, const char *app_id, const char *host,
                        uint32_t rank, uint32_t uid) {
  return la__add(arg, app_id, host, rank, uid);
}

int la_ga_owners_load(la_ga_t *ga) {
  /* read into a table of its own: on failure the one in use stays */
  la_ga_owners_t fresh = {0};
  int rc = la_store_refused_each(ga->store, la__load_one, &fresh);
  if (rc != 0) {
    la__clear(&fresh);
    la_log_error("store: cannot list the ranks refused for their app id's "
                 "owner: %s; keeping the %zu known", rc == LA_ENOMEM
                                                    ? "out of memory"
                                                    : la_store_errmsg(ga->store),
                 ga->owners->n);
    return rc;
  }
  la__clear(ga->owners);
  ga->owners->b = fresh.b;
  ga->owners->nb = fresh.nb;
  ga->owners->n = fresh.n;
  if (ga->owners->n)
    la_log_info("%zu ranks refused for their app id's owner: their messages "
                "are dropped", ga->owners->n);
  return 0;
}

/* The refusal of r: recorded, logged, counted, told. 1, or LA_EIO. */
static int la__refuse(la_ga_t *ga, const char *host, const La__RankStart *r,
                      uint32_t owner) {
  static la_ratelimit_t rl; /* this file's: refusals past the logged list */
  if (la_store_rank_refuse(ga->store, r->app_id, host, r->rank, r->owner_uid,
                           owner, r->seq) != 0)
    return LA_EIO;
  if (la__add(ga->owners, r->app_id, host, r->rank, r->owner_uid) != 0) {
    /* the store has it: a rollback, or the next start, loads it again */
    la_log_error("%s rank %u from %s: out of memory noting its refusal",
                 r->app_id, r->rank, host);
  }
  ga->st.appid_refused_starts++;
  uint64_t missed = 0;
  if (la__first_log(ga->owners, r->app_id, r->owner_uid) ||
      (ga->owners->n_logged >= LA__LOGGED_MAX &&
       la_ratelimit_ok(&rl, 1000, &missed)))
    la_log_warnx("app id %s belongs to uid %u: rank %u of uid %u from "
                 "LocalAgent %s refused, its traces dropped, the program "
                 "told (logged once per app id and uid)",
                 r->app_id, owner, r->rank, r->owner_uid, host);
  char why[300];
  snprintf(why, sizeof why, LA__WHY_FMT, r->app_id);
  La__RankRefused m = LA__RANK_REFUSED__INIT;
  m.seq = r->seq;
  m.app_id = r->app_id;
  m.rank = r->rank;
  m.code = LA_EREFUSED;
  m.reason = why;
  if (ga->agent_ops->refuse_rank) ga->agent_ops->refuse_rank(ga, host, &m);
  return 1;
}

int la_ga_owners_rank_start(la_ga_t *ga, const char *host,
                            const La__RankStart *r) {
  if (!r->has_owner_uid) return 0; /* an older LocalAgent: nothing to check */
  uint32_t owner = 0;
  int rc = la_store_app_owner(ga->store, r->app_id, &owner);
  if (rc == LA_ENOTFOUND) return 0; /* unbound: la_ga_owners_started binds */
  if (rc != 0) return LA_EIO;
  if (owner != r->owner_uid) return la__refuse(ga, host, r, owner);
  if (ga->owners->n) { /* the owner's start lifts a refusal of its key */
    uint64_t h = la__hash(r->app_id, host, r->rank);
    if (ga->owners->nb && *la__slot(ga->owners, r->app_id, host, r->rank, h)) {
      if (la_store_rank_unrefuse(ga->store, r->app_id, host, r->rank) != 0)
        return LA_EIO;
      la__del(ga->owners, r->app_id, host, r->rank);
    }
  }
  return 0;
}

int la_ga_owners_started(la_ga_t *ga, const char *host,
                         const La__RankStart *r) {
  if (!r->has_owner_uid) return 0;
  return la_store_app_bind(ga->store, r->app_id, r->owner_uid, host) == 0
             ? 0
             : LA_EIO;
}

int la_ga_owners_drop(la_ga_t *ga, const char *host, const char *app_id,
                      uint32_t rank) {
  la_ga_owners_t *o = ga->owners;
  if (!o || !o->n || !app_id) return 0;
  if (!*la__slot(o, app_id, host, rank, la__hash(app_id, host, rank)))
    return 0;
  ga->st.appid_refused_messages++;
  return 1;
}
