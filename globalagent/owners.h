/* SPDX-License-Identifier: BSD-3-Clause */
/* owners.h: application ids owned across nodes (docs/security.md).
 *
 * A LocalAgent says in each RankStart the uid of the process that
 * registered the rank (owner_uid). The GlobalAgent binds an application id
 * to the uid of its first RankStart that carries one (store: app_owners).
 * A RankStart of another uid under that id is refused: nothing of it is
 * stored, the refusal is recorded (store: refused_ranks, and a table in
 * memory keyed by (application, LocalAgent host, rank)), counted
 * (appid_refused_starts), logged once per (application, uid) naming both
 * uids, and the LocalAgent is told (RankRefused) so that its program is.
 * Every later message of that key on the link (trace, missing record,
 * element ids, RankEnd) is acknowledged and dropped (appid_refused_messages):
 * never stored into the owner's Trace-Sets, never counted as the owner's
 * rank, never recorded as the owner's missing cycles. A RankStart of the
 * owner's uid for the same key lifts the refusal (the link is ordered: what
 * follows it is the owner's). With appid.require_owner, a RankStart that
 * says no uid (an older LocalAgent) under a bound id is refused too (its
 * LocalAgent not told). A key this GlobalAgent has no RankStart of asks the
 * store once (shards learn each other's refusals); refusals are pruned at
 * the rank's RankEnd, by age and by a cap per LocalAgent.
 *
 * Deliberately not here: storing (store_owners.c), the link (agents.c,
 * reached through la_ga_agent_ops_t.refuse_rank). Loop thread.
 */
#ifndef LA_GLOBALAGENT_OWNERS_H
#define LA_GLOBALAGENT_OWNERS_H

#include <stddef.h>
#include <stdint.h>

#include "ga.h"

/* The in-memory table of refused keys, and the (application, uid) pairs
 * already logged. */
typedef struct la_ga_owners la_ga_owners_t;

la_ga_owners_t *la_ga_owners_new(void);
void la_ga_owners_free(la_ga_owners_t *o);

/* (Re)fills ga's table from the store (at start, after a rollback).
 * Returns 0, or a negative LA_E* code (logged; the table in use stays). */
int la_ga_owners_load(la_ga_t *ga);

/* A RankStart r of host: 0 when it may be stored (the caller stores it,
 * then calls la_ga_owners_started), 1 when it was refused (recorded, told,
 * counted, logged: the caller drops it), LA_EIO (the store failed: the
 * batch is poisoned). */
int la_ga_owners_rank_start(la_ga_t *ga, const char *host,
                            const La__RankStart *r);
/* After r was stored: binds its application to r's uid when unbound.
 * 0 or LA_EIO. */
int la_ga_owners_started(la_ga_t *ga, const char *host, const La__RankStart *r);

/* Whether a message of (app_id, rank) from host belongs to a refused
 * rank: 1 (counted: the caller drops it), else 0; LA_EIO when the store
 * failed (the batch is poisoned). A key with no RankStart in this run has
 * the store asked once whether it was refused (by another shard, or before
 * a restart); then its answer is kept. end: the message is the rank's
 * RankEnd (a refused key's record then goes, counted in
 * appid_refused_pruned). */
int la_ga_owners_drop(la_ga_t *ga, const char *host, const char *app_id,
                      uint32_t rank, int end);

/* Whether a retention pass is due at loop time now_ms (then the next is
 * scheduled: at most a minute, at most half of appid.refused_retention
 * later). */
int la_ga_owners_expire_due(la_ga_t *ga, uint64_t now_ms);
/* The retention pass: refusals recorded longer than
 * appid.refused_retention ago are forgotten (store and table), counted in
 * appid_refused_pruned. Inside the caller's transaction. 0 or LA_EIO. */
int la_ga_owners_expire(la_ga_t *ga);

#endif
