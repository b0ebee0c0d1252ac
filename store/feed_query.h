/* SPDX-License-Identifier: BSD-3-Clause */
/* feed_query.h: the GlobalAgent's answers to the feed's Query messages
 * ("apps", "cycles", "traceset", "elementids"), built from the store as
 * typed QueryReply messages (AppList, CycleList, TraceSet, ElementIds).
 *
 * The feed (feed.c) sends them; lactl --db builds the same answers from a
 * store file, so both sources hand lactl the same messages; the fuzz target
 * fuzz_query checks that every answer passes the codec's validation. No
 * libuv, no I/O besides the store's.
 */
#ifndef LA_GLOBAL_FEED_QUERY_H
#define LA_GLOBAL_FEED_QUERY_H

#include "la_codec.h"
#include "store.h"

/* One answer and the memory it points into. */
typedef struct la_ga_answer {
  La__QueryReply reply; /* what to send; points into the fields below */
  La__AppList apps;
  La__AppInfo *app_v, **app_p;
  la_store_app_t *store_apps;
  La__CycleList cycles;
  La__CycleInfo *cyc_v, **cyc_p;
  la_store_cycle_t *store_cycles;
  La__TraceSet *set;
  La__ElementIds page; /* "elementids" */
  int64_t *ids;
  char message[600];
} la_ga_answer_t;

/* Answers q from st into *a (any prior content is ignored): a->reply is a
 * valid QueryReply (la_msg_validate) carrying LA_FEED_PROTOCOL_VERSION.
 * Its status is 0, or the negative LA_E* code with a message: LA_EVERSION
 * (q has another feed_protocol, or none: a client of feed protocol 1),
 * LA_EINVAL (unknown what, or no app_id where one is needed), LA_ENOTFOUND
 * (no such cycle; for "elementids": no such rank, or its ids are not all
 * stored), LA_ERANGE ("elementids" from past the rank's elements), LA_EIO
 * (store error, its message), LA_ENOMEM. "elementids" answers one page
 * of at most LA_ELEMENT_IDS_PAGE ids from Query.first (default 0). An
 * unknown application has no cycles (an empty CycleList). Returns that
 * status. Free with la_ga_answer_free, also after a failure. */
int la_ga_answer(la_store_t *st, const La__Query *q, la_ga_answer_t *a);

/* Makes *a an empty answer (status 0, LA_FEED_PROTOCOL_VERSION), for a
 * caller that answers without the store (la_ga_answer_fail); freed with
 * la_ga_answer_free. */
void la_ga_answer_init(la_ga_answer_t *a);

/* Turns a's reply into a refusal: no answer in it any more, status (a
 * negative LA_E* code) and the printf-style message (shortened to fit).
 * What a holds is still freed by la_ga_answer_free. Returns status. */
int la_ga_answer_fail(la_ga_answer_t *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Frees what la_ga_answer allocated; a stays usable for another call. */
void la_ga_answer_free(la_ga_answer_t *a);

#endif /* LA_GLOBAL_FEED_QUERY_H */
