/* SPDX-License-Identifier: BSD-3-Clause */
/* feed_query.c: the feed's Query answers as typed QueryReply messages (see
 * feed_query.h): the store's listings become AppList and CycleList, a
 * stored cycle a TraceSet, a page of a rank's global ids an ElementIds. Which
 * store call answers what, and the words of each refusal, are decided here
 * once, for the daemon and for lactl --db. It deliberately sends nothing:
 * feed.c does.
 */
#include "feed_query.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "la_errcodes.h"
#include "la_errors.h"

/* Sets the reply's status and message from fmt's arguments ap. */
static int la__vstatus(la_ga_answer_t *a, int status, const char *fmt,
                       va_list ap) {
  a->reply.status = la_verrorf(a->message, sizeof a->message, status, fmt, ap);
  a->reply.message = a->message;
  return status;
}

/* Sets the reply's status and message; returns status. */
static int la__status(la_ga_answer_t *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int la__status(la_ga_answer_t *a, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  la__vstatus(a, status, fmt, ap);
  va_end(ap);
  return status;
}

int la_ga_answer_fail(la_ga_answer_t *a, int status, const char *fmt, ...) {
  a->reply.n_sets = 0;
  a->reply.sets = NULL;
  a->reply.apps = NULL;
  a->reply.cycles = NULL;
  a->reply.element_ids = NULL;
  a->reply.has_set_bytes = 0;
  va_list ap;
  va_start(ap, fmt);
  la__vstatus(a, status, fmt, ap);
  va_end(ap);
  return status;
}

static int la__apps(la_store_t *st, la_ga_answer_t *a) {
  size_t n = 0;
  if (la_store_apps(st, &a->store_apps, &n) != 0)
    return la__status(a, LA_EIO, "%s", la_store_errmsg(st));
  a->app_v = calloc(n ? n : 1, sizeof *a->app_v);
  a->app_p = calloc(n ? n : 1, sizeof *a->app_p);
  if (!a->app_v || !a->app_p) return la__status(a, LA_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const la_store_app_t *s = &a->store_apps[i];
    La__AppInfo *m = &a->app_v[i];
    la__app_info__init(m);
    m->app_id = (char *)s->app_id;
    m->app_name = (char *)s->app_name;
    m->metric = (char *)s->metric;
    m->unit = (char *)s->unit;
    m->has_nprocs = m->has_elements = m->has_cycles = 1;
    m->nprocs = s->nprocs;
    m->elements = s->n_elements_total;
    m->cycles = s->cycles;
    m->has_sets_complete = m->has_sets_partial = 1;
    m->sets_complete = s->sets_complete;
    m->sets_partial = s->sets_partial;
    m->has_ranks_started = m->has_ranks_ended = 1;
    m->ranks_started = (uint32_t)(s->ranks_started > 0 ? s->ranks_started : 0);
    m->ranks_ended = (uint32_t)(s->ranks_ended > 0 ? s->ranks_ended : 0);
    m->has_ranks_lost = 1;
    m->ranks_lost = (uint32_t)s->ranks_lost;
    a->app_p[i] = m;
  }
  a->apps.n_apps = n;
  a->apps.apps = a->app_p;
  a->reply.apps = &a->apps;
  return 0;
}

static int la__cycles(la_store_t *st, const La__Query *q, la_ga_answer_t *a) {
  size_t n = 0;
  uint64_t first = q->has_cycle_tag ? q->cycle_tag : 0;
  uint64_t last = q->has_cycle_last ? q->cycle_last : UINT64_MAX;
  if (la_store_cycles(st, q->app_id, first, last, &a->store_cycles, &n) != 0)
    return la__status(a, LA_EIO, "%s", la_store_errmsg(st));
  a->cyc_v = calloc(n ? n : 1, sizeof *a->cyc_v);
  a->cyc_p = calloc(n ? n : 1, sizeof *a->cyc_p);
  if (!a->cyc_v || !a->cyc_p) return la__status(a, LA_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    la_store_cycle_t *s = &a->store_cycles[i];
    La__CycleInfo *m = &a->cyc_v[i];
    la__cycle_info__init(m);
    m->cycle_tag = s->cycle_tag;
    m->state = !s->closed    ? LA__CYCLE_STATE__CYCLE_OPEN
               : s->complete ? LA__CYCLE_STATE__CYCLE_COMPLETE
                             : LA__CYCLE_STATE__CYCLE_PARTIAL;
    m->ranks_present = s->ranks_present;
    m->ranks_missing = s->n_missing;
    s->reasons[LA_MAX_REASONS_LEN] = '\0'; /* the store's field fits */
    m->reasons = s->reasons[0] ? s->reasons : NULL;
    a->cyc_p[i] = m;
  }
  a->cycles.n_cycles = n;
  a->cycles.cycles = a->cyc_p;
  a->reply.cycles = &a->cycles;
  return 0;
}

static int la__traceset(la_store_t *st, const La__Query *q, la_ga_answer_t *a) {
  uint64_t tag = q->cycle_tag;
  if (!q->has_cycle_tag && /* latest in any state, as lactl --db shows */
      la_store_latest_cycle(st, q->app_id, LA_STORE_LATEST_ANY, &tag) != 0)
    return la__status(a, LA_ENOTFOUND, "no cycle stored for that app");
  int rc = la_store_load_set(st, q->app_id, tag, &a->set);
  if (rc == LA_ENOTFOUND) return la__status(a, rc, "no such cycle");
  if (rc) return la__status(a, rc, "%s", la_store_errmsg(st));
  a->reply.n_sets = 1;
  a->reply.sets = &a->set;
  return 0;
}

/* One page (at most LA_ELEMENT_IDS_PAGE) of a rank's global ids. */
static int la__element_ids(la_store_t *st, const La__Query *q,
                           la_ga_answer_t *a) {
  if (!q->has_rank) return la__status(a, LA_EINVAL, "elementids needs a rank");
  uint64_t first = q->has_first ? q->first : 0, nel = 0;
  size_t n = 0;
  int rc = la_store_rank_ids(st, q->app_id, q->rank, first, LA_ELEMENT_IDS_PAGE,
                             &a->ids, &n, &nel);
  if (rc) return la__status(a, rc, "%s", la_store_errmsg(st));
  if (n == 0)
    return la__status(a, LA_ERANGE, "element %llu is past the rank's %llu",
                      (unsigned long long)first, (unsigned long long)nel);
  la__element_ids__init(&a->page);
  a->page.first = first;
  a->page.n_ids = n;
  a->page.ids = a->ids;
  a->page.app_id = q->app_id;
  a->page.has_rank = a->page.has_n_elements = 1;
  a->page.rank = q->rank;
  a->page.n_elements = nel;
  a->reply.element_ids = &a->page;
  return 0;
}

void la_ga_answer_init(la_ga_answer_t *a) {
  memset(a, 0, sizeof *a);
  la__query_reply__init(&a->reply);
  la__app_list__init(&a->apps);
  la__cycle_list__init(&a->cycles);
  a->reply.has_feed_protocol = 1;
  a->reply.feed_protocol = LA_FEED_PROTOCOL_VERSION;
}

int la_ga_answer(la_store_t *st, const La__Query *q, la_ga_answer_t *a) {
  la_ga_answer_init(a);
  if (!q->has_feed_protocol || q->feed_protocol != LA_FEED_PROTOCOL_VERSION)
    return la__status(a, LA_EVERSION,
                      "feed protocol %u, this GlobalAgent speaks %u: use an "
                      "lactl or libla_client of its LA version",
                      q->has_feed_protocol ? q->feed_protocol : 1u,
                      LA_FEED_PROTOCOL_VERSION);
  int has_app = q->app_id && q->app_id[0];
  if (!strcmp(q->what, "apps")) return la__apps(st, a);
  if (!strcmp(q->what, "cycles") && has_app) return la__cycles(st, q, a);
  if (!strcmp(q->what, "traceset") && has_app) return la__traceset(st, q, a);
  if (!strcmp(q->what, "elementids") && has_app)
    return la__element_ids(st, q, a);
  return la__status(a, LA_EINVAL,
                    "what must be apps, cycles (with app_id), traceset "
                    "(with app_id) or elementids (with app_id and rank)");
}

void la_ga_answer_free(la_ga_answer_t *a) {
  free(a->app_v);
  free(a->app_p);
  free(a->store_apps);
  free(a->cyc_v);
  free(a->cyc_p);
  free(a->store_cycles);
  la_store_free_set(a->set);
  free(a->ids);
  memset(a, 0, sizeof *a);
}
