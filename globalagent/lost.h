/* SPDX-License-Identifier: BSD-3-Clause */
/* lost.h: LocalAgents whose link closed, until they link again or are
 * lost.
 *
 * A LocalAgent's link that closes is noted with the time (and, at start,
 * every host whose ranks the store holds open: the GlobalAgent was down
 * when their links closed, if they did); if no link of
 * that host is back within stitch.timeout, the LocalAgent is lost: the
 * ranks whose RankStart it sent and that have not ended are ended with
 * the reason "LocalAgent HOST lost" (ingest.c), which closes the open
 * Trace-Sets of an application whose ranks have all ended, with that
 * reason, and shows the application as ended (lost) in `lactl apps`. What
 * the LocalAgent sends if it comes back (its log) is still stored. Loop
 * thread only; asked on ingest.c's expiry tick, never during a commit.
 */
#ifndef LA_GLOBALAGENT_LOST_H
#define LA_GLOBALAGENT_LOST_H

#include <stddef.h>

struct la_ga;

/* The reason a lost LocalAgent's ranks and cycles are recorded with:
 * "LocalAgent HOST lost", into buf. */
void la_ga_lost_reason(const char *host, char *buf, size_t len);

/* host's link closed now (agents.c): lost unless a link of host is back
 * within stitch.timeout. A host noted already keeps its first time.
 * Out of memory: logged, and the host's ranks end with the stitch timeout
 * of their sets only. Nothing is noted with a store shared by shards (the
 * LocalAgent is linked to the other shards too). */
void la_ga_lost_note(struct la_ga *ga, const char *host);

/* Forgets the noted hosts linked again; puts into hosts (at most max) those
 * noted longer than stitch.timeout ago: lost, their ranks to be ended
 * (ingest.c). The strings stay valid until la_ga_lost_ended of that host or
 * la_ga_lost_free. Returns how many. */
size_t la_ga_lost_due(struct la_ga *ga, const char **hosts, size_t max);

/* host (as la_ga_lost_due gave it) had n ranks ended in the open batch:
 * it is asked again at the next check (after that batch's commit: a
 * rollback ends them again), and forgotten once none is left. */
void la_ga_lost_ended(struct la_ga *ga, const char *host, size_t n);

/* Forgets every noted host (at stop). */
void la_ga_lost_free(struct la_ga *ga);

#endif /* LA_GLOBALAGENT_LOST_H */
