/* SPDX-License-Identifier: BSD-3-Clause */
/* owners.c: application ids owned across nodes: binding an id to the uid
 * of its first RankStart, refusing another uid's ranks under it, and
 * dropping the messages of a refused rank (owners.h says what each call
 * does; docs/security.md why).
 *
 * The refused keys live in a chained hash table (the store keeps them
 * durably; this is their copy, so that a trace costs one lookup). Keys
 * known not refused in this run (a RankStart of theirs stored, or the store
 * asked once at their first message) live in another, so that a rank this
 * GlobalAgent had no RankStart of (a shard taking over an application, a
 * restart) has the store asked once whether another shard refused it,
 * never per message. A refused key's record goes at its RankEnd, past
 * appid.refused_retention, or past appid.refused_max_per_agent of its
 * LocalAgent (the oldest first), counted in appid_refused_pruned. The
 * (application, uid) pairs already logged are a short list, bounded: past
 * LA__LOGGED_MAX pairs a refusal is still counted and told, its line
 * rate-limited instead.
 */
#include "owners.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errors.h"
#include "la_log.h"
#include "la_time.h"

#define LA__LOGGED_MAX 4096
#define LA__KNOWN_MAX (1u << 20) /* keys known not refused, at most */
#define LA__NO_UID UINT32_MAX    /* a RankStart that said no owner uid */
#define LA__EXPIRE_EVERY_MS 60000 /* retention passes at most this apart */

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

/* A chained hash table of (application, host, rank) keys. */
typedef struct la__tab {
  la__key_t **b;
  size_t nb, n;
} la__tab_t;

typedef struct la__logged {
  struct la__logged *next;
  uint32_t uid;
  char app_id[LA_MAX_ID_LEN + 1];
} la__logged_t;

struct la_ga_owners {
  la__tab_t refused; /* refused keys: their messages are dropped */
  /* keys known not refused in this run: a RankStart of theirs was stored,
   * or the store was asked at their first message and had no refusal */
  la__tab_t known;
  la__logged_t *logged;
  size_t n_logged;
  uint64_t next_expire_ms; /* loop time of the next retention pass */
};

/* Mixes string p into h eight bytes at a time (every message looks up
 * its key: a byte at a time was 3% of the loop thread at 10^4 ranks). */
static uint64_t la__mix(uint64_t h, const char *p) {
  const uint64_t k = 0x9e3779b97f4a7c15ull;
  size_t n = strlen(p);
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  uint64_t w = 0;
  memcpy(&w, p, n);
  h = (h ^ w ^ ((uint64_t)n << 56)) * k;
  return h ^ (h >> 29);
}

static uint64_t la__hash(const char *app, const char *host, uint32_t rank) {
  uint64_t h = la__mix(la__mix(0xcbf29ce484222325ull, app), host);
  h = (h ^ rank) * 0xff51afd7ed558ccdull;
  return h ^ (h >> 32);
}

la_ga_owners_t *la_ga_owners_new(void) {
  return calloc(1, sizeof(la_ga_owners_t));
}

static void la__clear(la__tab_t *t) {
  for (size_t i = 0; i < t->nb; i++)
    for (la__key_t *k = t->b[i], *n; k; k = n) {
      n = k->next;
      free(k);
    }
  free(t->b);
  t->b = NULL;
  t->nb = t->n = 0;
}

void la_ga_owners_free(la_ga_owners_t *o) {
  if (!o) return;
  la__clear(&o->refused);
  la__clear(&o->known);
  for (la__logged_t *l = o->logged, *n; l; l = n) {
    n = l->next;
    free(l);
  }
  free(o);
}

/* Where key (app, host, rank) of hash h is, or would go; NULL while the
 * table has no buckets. */
static la__key_t **la__slot(la__tab_t *t, const char *app, const char *host,
                            uint32_t rank, uint64_t h) {
  if (!t->nb) return NULL;
  la__key_t **p = &t->b[h % t->nb];
  for (; *p; p = &(*p)->next)
    if ((*p)->hash == h && (*p)->rank == rank && !strcmp((*p)->app_id, app) &&
        !strcmp((*p)->host, host))
      break;
  return p;
}

static int la__has(la__tab_t *t, const char *app, const char *host,
                   uint32_t rank, uint64_t h) {
  la__key_t **p = t->n ? la__slot(t, app, host, rank, h) : NULL;
  return p && *p;
}

/* Doubles the buckets (a first 64). 0 or LA_ENOMEM (the table stays). */
static int la__grow(la__tab_t *t) {
  size_t nb = t->nb ? t->nb * 2 : 64;
  la__key_t **b = calloc(nb, sizeof *b);
  if (!b) return LA_ENOMEM;
  for (size_t i = 0; i < t->nb; i++)
    for (la__key_t *k = t->b[i], *n; k; k = n) {
      n = k->next;
      k->next = b[k->hash % nb];
      b[k->hash % nb] = k;
    }
  free(t->b);
  t->b = b;
  t->nb = nb;
  return 0;
}

/* Adds (or updates) a key. 0 or LA_ENOMEM. */
static int la__add(la__tab_t *t, const char *app, const char *host,
                   uint32_t rank, uint32_t uid) {
  if (t->n >= t->nb && la__grow(t) != 0 && !t->nb) return LA_ENOMEM;
  uint64_t h = la__hash(app, host, rank);
  la__key_t **p = la__slot(t, app, host, rank, h);
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
  t->n++;
  return 0;
}

static void la__del(la__tab_t *t, const char *app, const char *host,
                    uint32_t rank) {
  if (!t->n) return;
  la__key_t **p = la__slot(t, app, host, rank, la__hash(app, host, rank));
  if (!p || !*p) return;
  la__key_t *k = *p;
  *p = k->next;
  free(k);
  t->n--;
}

/* Notes a key known not refused; the table starts over past
 * LA__KNOWN_MAX keys (their first messages ask the store again). */
static void la__known(la_ga_owners_t *o, const char *app, const char *host,
                      uint32_t rank) {
  if (o->known.n >= LA__KNOWN_MAX) la__clear(&o->known);
  (void)la__add(&o->known, app, host, rank, 0); /* ENOMEM: asked again */
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

/* la_store_refused_trim / _expire's fn: the key is forgotten here too. */
static void la__forget(void *arg, const char *app_id, const char *host,
                       uint32_t rank) {
  la_ga_t *ga = arg;
  la__del(&ga->owners->refused, app_id, host, rank);
  ga->st.appid_refused_pruned++;
}

int la_ga_owners_load(la_ga_t *ga) {
  /* read into a table of its own: on failure the one in use stays */
  la__tab_t fresh = {0};
  int rc = la_store_refused_each(ga->store, la__load_one, &fresh);
  if (rc != 0) {
    la__clear(&fresh);
    la_log_error("store: cannot list the ranks refused for their app id's "
                 "owner: %s; keeping the %zu known", rc == LA_ENOMEM
                                                    ? "out of memory"
                                                    : la_store_errmsg(ga->store),
                 ga->owners->refused.n);
    return rc;
  }
  la__clear(&ga->owners->refused);
  ga->owners->refused = fresh;
  la__clear(&ga->owners->known); /* what a rollback undid is asked again */
  if (ga->owners->refused.n)
    la_log_info("%zu ranks refused for their app id's owner: their messages "
                "are dropped", ga->owners->refused.n);
  return 0;
}

/* The refusal of r (registered by uid: LA__NO_UID when it said none) for
 * owner: recorded, logged, counted, told (a LocalAgent that said a uid:
 * one that says none predates RankRefused and would drop the link on it),
 * host's oldest refusals past appid.refused_max_per_agent forgotten. 1, or
 * LA_EIO. */
static int la__refuse(la_ga_t *ga, const char *host, const La__RankStart *r,
                      uint32_t uid, uint32_t owner) {
  static la_ratelimit_t rl; /* this file's: refusals past the logged list */
  static la_ratelimit_t rl_cap; /* this file's: refusals forgotten */
  la_ga_owners_t *o = ga->owners;
  if (la_store_rank_refuse(ga->store, r->app_id, host, r->rank, uid, owner,
                           r->seq) != 0)
    return LA_EIO;
  la__del(&o->known, r->app_id, host, r->rank);
  if (la__add(&o->refused, r->app_id, host, r->rank, uid) != 0) {
    /* the store has it: a rollback, or the next start, loads it again */
    la_log_error("%s rank %u from %s: out of memory noting its refusal",
                 r->app_id, r->rank, host);
  }
  ga->st.appid_refused_starts++;
  uint64_t missed = 0;
  if (la__first_log(o, r->app_id, uid) ||
      (o->n_logged >= LA__LOGGED_MAX && la_ratelimit_ok(&rl, 1000, &missed))) {
    if (uid != LA__NO_UID)
      la_log_warnx("app id %s belongs to uid %u: rank %u of uid %u from "
                   "LocalAgent %s refused, its traces dropped, the program "
                   "told (logged once per app id and uid)",
                   r->app_id, owner, r->rank, uid, host);
    else
      la_log_warnx("app id %s belongs to uid %u: rank %u of no uid from "
                   "LocalAgent %s (an older LocalAgent; appid.require_owner) "
                   "refused, its traces dropped, the program not told "
                   "(logged once per app id)",
                   r->app_id, owner, r->rank, host);
  }
  if (uid != LA__NO_UID) {
    char why[300];
    snprintf(why, sizeof why, LA__WHY_FMT, r->app_id);
    La__RankRefused m = LA__RANK_REFUSED__INIT;
    m.seq = r->seq;
    m.app_id = r->app_id;
    m.rank = r->rank;
    m.code = LA_EREFUSED;
    m.reason = why;
    if (ga->agent_ops->refuse_rank) ga->agent_ops->refuse_rank(ga, host, &m);
  }
  uint64_t gone = 0;
  if (la_store_refused_trim(ga->store, host,
                            (uint64_t)ga->set.refused_max_per_agent,
                            la__forget, ga, &gone) == LA_EIO)
    return LA_EIO;
  if (gone && la_ratelimit_ok(&rl_cap, 1000, &missed))
    la_log_warnx("LocalAgent %s: more than %lld refused ranks recorded "
                 "(appid.refused_max_per_agent): its %llu oldest forgotten, "
                 "counted in appid_refused_pruned",
                 host, (long long)ga->set.refused_max_per_agent,
                 (unsigned long long)gone);
  return 1;
}

int la_ga_owners_rank_start(la_ga_t *ga, const char *host,
                            const La__RankStart *r) {
  /* an older LocalAgent: nothing to check unless appid.require_owner */
  if (!r->has_owner_uid && !ga->set.require_owner) return 0;
  uint32_t owner = 0;
  int rc = la_store_app_owner(ga->store, r->app_id, &owner);
  if (rc == LA_ENOTFOUND) return 0; /* unbound: la_ga_owners_started binds */
  if (rc != 0) return LA_EIO;
  uint32_t uid = r->has_owner_uid ? r->owner_uid : LA__NO_UID;
  if (owner != uid) return la__refuse(ga, host, r, uid, owner);
  /* the owner's start lifts a refusal of its key */
  la__tab_t *t = &ga->owners->refused;
  if (la__has(t, r->app_id, host, r->rank,
              la__hash(r->app_id, host, r->rank))) {
    if (la_store_rank_unrefuse(ga->store, r->app_id, host, r->rank) != 0)
      return LA_EIO;
    la__del(t, r->app_id, host, r->rank);
  }
  return 0;
}

int la_ga_owners_started(la_ga_t *ga, const char *host,
                         const La__RankStart *r) {
  la__known(ga->owners, r->app_id, host, r->rank);
  if (!r->has_owner_uid) return 0;
  return la_store_app_bind(ga->store, r->app_id, r->owner_uid, host) == 0
             ? 0
             : LA_EIO;
}

/* A refused key's RankEnd: nothing of that rank can follow from host (the
 * link is ordered), so its record goes. 0 or LA_EIO. */
static int la__ended(la_ga_t *ga, const char *host, const char *app_id,
                     uint32_t rank) {
  if (la_store_rank_unrefuse(ga->store, app_id, host, rank) != 0)
    return LA_EIO;
  la__del(&ga->owners->refused, app_id, host, rank);
  ga->st.appid_refused_pruned++;
  return 0;
}

int la_ga_owners_drop(la_ga_t *ga, const char *host, const char *app_id,
                      uint32_t rank, int end) {
  static la_ratelimit_t rl; /* this file's: refusals learned */
  la_ga_owners_t *o = ga->owners;
  if (!o || !app_id) return 0;
  uint64_t h = la__hash(app_id, host, rank);
  if (la__has(&o->refused, app_id, host, rank, h)) {
    ga->st.appid_refused_messages++;
    return end && la__ended(ga, host, app_id, rank) != 0 ? LA_EIO : 1;
  }
  if (la__has(&o->known, app_id, host, rank, h)) {
    if (end) la__del(&o->known, app_id, host, rank);
    return 0;
  }
  /* no RankStart of it in this run: another shard, or this one before a
   * restart, may have refused it since this one read the store */
  uint32_t uid = 0;
  int rc = la_store_rank_refused(ga->store, app_id, host, rank, &uid);
  if (rc == LA_ENOTFOUND) {
    if (!end) la__known(o, app_id, host, rank);
    return 0;
  }
  if (rc != 0) return LA_EIO;
  /* out of memory: the store is asked again at the next message */
  (void)la__add(&o->refused, app_id, host, rank, uid);
  ga->st.appid_refused_learned++;
  ga->st.appid_refused_messages++;
  uint64_t missed = 0;
  if (la_ratelimit_ok(&rl, 1000, &missed))
    la_log_info("%s rank %u from %s: refused (found in the store at its "
                "first message here); its messages are dropped (%llu more "
                "such since the last line)",
                app_id, rank, host, (unsigned long long)missed);
  return end && la__ended(ga, host, app_id, rank) != 0 ? LA_EIO : 1;
}

int la_ga_owners_expire_due(la_ga_t *ga, uint64_t now_ms) {
  la_ga_owners_t *o = ga->owners;
  if (!o || now_ms < o->next_expire_ms) return 0;
  uint64_t every = (uint64_t)ga->set.refused_retention_ms / 2;
  if (every > LA__EXPIRE_EVERY_MS) every = LA__EXPIRE_EVERY_MS;
  o->next_expire_ms = now_ms + every;
  return 1;
}

int la_ga_owners_expire(la_ga_t *ga) {
  uint64_t now = la_realtime_ns(),
           keep = (uint64_t)ga->set.refused_retention_ms * 1000000u;
  if (now <= keep) return 0;
  uint64_t total = 0, n = 0;
  int rc;
  do {
    rc = la_store_refused_expire(ga->store, now - keep, la__forget, ga, &n);
    total += n;
  } while (rc == 0 && n == 10000 && total < 100000);
  if (rc == LA_EIO) return LA_EIO;
  if (total)
    la_log_info("%llu refused ranks' records older than "
                "appid.refused_retention (%lld s) forgotten",
                (unsigned long long)total,
                (long long)(ga->set.refused_retention_ms / 1000));
  return 0;
}
