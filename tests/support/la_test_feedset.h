/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_feedset.h: a GlobalAgent's feed as a subscriber sees it, for
 * tests and benchmarks of a feed's reader (lactl serve's feed thread):
 * one encoded TraceSet written to a socket as the GlobalAgent publishes
 * it, a TraceSetHead and TraceSetPart frames. Test use only.
 */
#ifndef LA_TEST_FEEDSET_H
#define LA_TEST_FEEDSET_H

#include <stddef.h>
#include <stdint.h>

/* Writes set[0..len) (a TraceSet's encoding) of app's cycle to fd as a
 * head and parts of at most part_bytes (blocking writes). 0, or -1 when
 * a write failed, part_bytes is 0 or out of memory. */
int la_test_feed_set(int fd, const uint8_t *set, size_t len, const char *app,
                     uint64_t cycle, size_t part_bytes);

#endif /* LA_TEST_FEEDSET_H */
