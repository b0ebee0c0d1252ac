/* SPDX-License-Identifier: BSD-3-Clause */
/* lane.h: one thread of its own for the loop's share of the work on the
 * cycles the agent is behind on (agent.max_backlog, worker.c): summing a
 * coarse cycle in blocks, zeroing a dropped one. Neither may run on the
 * loop thread (which takes the applications' notifications: a loop late
 * to take one makes an application wait) nor on the compaction pool (its
 * threads run niced and may all be busy compacting: the buffer would be
 * held the longer). The thread runs at the loop's priority and takes the
 * items in the order submitted; each item's done callback then runs on
 * the loop thread. */
#ifndef LA_LANE_H
#define LA_LANE_H

#include <stddef.h>
#include <uv.h>

typedef struct la_lane la_lane_t;

typedef struct la_lane_item {
  struct la_lane_item *next; /* the lane's */
  void (*work)(struct la_lane_item *it); /* on the lane's thread */
  void (*done)(struct la_lane_item *it); /* then on the loop thread */
} la_lane_item_t;

/* Starts the thread and its wake-up handle on loop (closed with the
 * loop's other handles). Returns 0, or LA_ENOMEM with why. */
int la_lane_start(uv_loop_t *loop, la_lane_t **out, char *why, size_t why_len);

/* Queues it (work and done set). Loop thread. */
void la_lane_submit(la_lane_t *l, la_lane_item_t *it);

/* After the loop ended (its handles closed, the daemon stopping, by force
 * too): the thread does the work still queued and ends; then the done
 * callbacks of the items the loop did not take (worked after it stopped
 * listening) run here, on the caller's thread, in the order submitted, so
 * that each frees its item and what it holds (a job's hold on its
 * session). Accepts NULL. */
void la_lane_stop(la_lane_t *l);

#endif /* LA_LANE_H */
