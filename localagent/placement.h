/* SPDX-License-Identifier: BSD-3-Clause */
/* placement.h: where and how eagerly the LocalAgent runs, so that its work
 * stays out of the ranks' measurements.
 *
 * On a node whose cores all run ranks, every microsecond the agent computes
 * on a core is a microsecond some rank is preempted, and the element timed
 * meanwhile is charged for it. Two settings bound that: the compaction
 * threads run at a lower priority (nice, or the SCHED_IDLE class), and the
 * whole daemon can be confined to a CPU set (e.g. a core the job leaves
 * free). The loop thread keeps the normal priority: it only hands buffers
 * over, and starving it would make applications wait.
 *
 * No libuv. The worker-side call keeps one thread-local flag (each pool
 * thread applies its priority once).
 */
#ifndef LA_LOCALAGENT_PLACEMENT_H
#define LA_LOCALAGENT_PLACEMENT_H

#include <stddef.h>

/* Parses a CPU list ("0", "0,2", "1-3,6") and, when non-empty, confines
 * the calling process (and the threads it starts later) to it. "" does
 * nothing. Returns 0, or LA_ECONFIG (bad list, or a CPU this machine does
 * not have / may not use) with the reason in why. */
int la_placement_cpus(const char *list, char *why, size_t why_len);

/* Checks a CPU list without applying it. Returns 0 or LA_ECONFIG. */
int la_placement_cpus_check(const char *list, char *why, size_t why_len);

/* Called by a compaction thread before each job: the first call on a
 * thread names it "la-compact" (top -H, perf, /proc/PID/task/TID/comm),
 * lowers its priority to nice (0..19) and, when idle, moves it to
 * SCHED_IDLE. Failures are ignored (the job runs all the same); returns 1
 * when this call applied the settings, else 0. */
int la_placement_worker(int nice, int idle);

#endif
