/* SPDX-License-Identifier: BSD-3-Clause */
/* shm_zero.h: whether values in a System V shared-memory segment are all
 * zero without reading the pages nobody touched.
 *
 * A page of a segment that no process wrote or read is a hole of the
 * kernel's shared memory (shmem): it reads as zeros and is not resident.
 * With no swap on the machine a page cannot be resident elsewhere, so
 * mincore(2) tells which pages may hold anything; only those are read. A
 * box- or range-probed cycle leaves its cells untouched, so the
 * LocalAgent learns that none was written at the cost of one system call
 * instead of reading every cell (docs/localagent.md). No libuv.
 */
#ifndef LA_LOCALAGENT_SHM_ZERO_H
#define LA_LOCALAGENT_SHM_ZERO_H

#include <stdint.h>

/* Whether v[0..n) (inside an attached shared-memory segment) are all 0
 * bits, reading only the resident pages: 1 all zero, 0 not, -1 unknown
 * (swap is on, or mincore failed: the caller reads them all). */
int la_shm_zero_unread(const double *v, uint64_t n);

#endif
