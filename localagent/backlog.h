/* SPDX-License-Identifier: BSD-3-Clause */
/* backlog.h: how many of a rank's cycles the LocalAgent holds unread
 * (agent.max_backlog), so that the application never waits for its
 * compaction.
 *
 * A rank has n buffers (LA_BUFFERS): the one it fills, the ones the agent
 * holds (a cycle queued for compaction, or one whose copy is being made),
 * and the free ones. A DataReady for a cycle the agent would hold beyond
 * the limit is not read: the buffer goes back zeroed at once and the cycle
 * is recorded missing (worker.c). With at most L held, the application
 * finds a free buffer at every LA_dataXfer as long as n >= L + 2 (the one
 * it hands over, L held, the one it takes) and the agent's loop thread
 * has taken each notification before the next one comes; n >= L + 3
 * leaves a buffer for one notification the loop has not taken yet. Held
 * counts a buffer from its notification until a compaction thread has
 * copied it, so a rank is never made to wait for a compaction, nor for a
 * copy that a compaction thread at its low priority has not got to yet.
 *
 * agent.max_backlog is "auto" (L = n - 3, at least 1: the rank's own buffer
 * count decides, so the agent and libla's LA_BUFFERS always agree), "off"
 * (no limit: every cycle is compacted, and a rank whose cycles come faster
 * waits for a buffer) or a number 1..15 (L, whatever n).
 *
 * What is done with a cycle beyond the limit is agent.behind: "coarse"
 * (the default) takes it coarsely, in blocks of k consecutive cells
 * (la_backlog_coarse_block) summed in the pass that zeroes the buffer, and
 * stores their spread trace (exact totals, marked coarse with the reason);
 * "drop" records it missing.
 *
 * No libuv, no state.
 */
#ifndef LA_LOCALAGENT_BACKLOG_H
#define LA_LOCALAGENT_BACKLOG_H

#include <stddef.h>
#include <stdint.h>

#define LA_BACKLOG_MAX 15 /* the largest number agent.max_backlog takes */

/* Parses agent.max_backlog into *limit: -1 for auto, 0 for off, else
 * 1..LA_BACKLOG_MAX. Returns 0, or LA_ECONFIG with the reason in why. */
int la_backlog_parse(const char *spec, int *limit, char *why, size_t why_len);

/* The cycles a rank of n_buffers buffers may have held by the agent, for a
 * parsed limit (la_backlog_parse); 0: no limit. */
uint32_t la_backlog_held_max(int limit, uint32_t n_buffers);

/* Parses agent.behind into *coarse: 1 for coarse, 0 for drop. Returns 0,
 * or LA_ECONFIG with the reason in why. */
int la_backlog_behind_parse(const char *spec, int *coarse, char *why,
                            size_t why_len);

#define LA_BACKLOG_COARSE_BLOCKS 4096 /* a coarse cycle's blocks, at most */

/* The cells per block of a coarse cycle of n cells: the smallest divisor
 * k >= 2 of n with n / k <= LA_BACKLOG_COARSE_BLOCKS (n itself, one
 * block, when n is prime); 0 when n < 2 (no coarse cycle). */
uint64_t la_backlog_coarse_block(uint64_t n);

#endif
