/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_msg.h: protocol messages with every field filled as a LocalAgent
 * would fill them, for tests and benchmarks that feed the GlobalAgent's
 * store (store/store.h) directly. Test use only.
 */
#ifndef LA_TEST_MSG_H
#define LA_TEST_MSG_H

#include <stdint.h>

#include "la_codec.h"
#include "la_compact.h"

/* A RankStart of rank of app_id (nprocs ranks, n_elements each), seq 1,
 * metric "time" in ns, host "node1", pid 1000 + rank, period 10, started
 * at 1700000000 s + rank ns, polyline compaction with cv 0.1 (parameters
 * in static storage, shared by every message). The strings are not copied:
 * app_id and app_name must outlive the message. */
La__RankStart la_test_rank_start(const char *app_id, const char *app_name,
                                 uint32_t rank, uint32_t nprocs,
                                 uint64_t n_elements);

/* Fills *t (with *st and *fe, or fe NULL) from res (la_trace_msg_fill) as
 * a LocalAgent sends cycle tag of rank of app_id, n_elements elements: seq
 * seq, rank_seq tag, and when ref is not 0 a history reference to cycle
 * ref (bounded history, docs/history.md). Nothing is copied: app_id and
 * res must outlive the message. */
void la_test_history_trace(La__CompactTrace *t, La__SeriesStats *st,
                           La__FitError *fe, const la_compact_result_t *res,
                           const char *app_id, uint32_t rank, uint64_t tag,
                           uint64_t n_elements, uint64_t seq, uint64_t ref);

/* Only what every RankStart has: seq 1, app_id, rank, nprocs, n_elements,
 * metric "time" in ns (la_test_rank_start adds the rest). app_id is not
 * copied. */
La__RankStart la_test_rank_start_min(const char *app_id, uint32_t rank,
                                     uint32_t nprocs, uint64_t n_elements);

/* A RegisterRequest of rank 0 of 1 of app_id named app_name, as libla
 * sends it for the segment shm_id with semaphore set sem_id and nonce,
 * from process pid: n_elements in n_buffers buffers, metric "time" in ns
 * (a caller may change any field). The strings are not copied. */
La__RegisterRequest la_test_register_request(
    const char *app_id, const char *app_name, int32_t pid, int32_t shm_id,
    int32_t sem_id, uint64_t nonce, uint64_t n_elements, uint32_t n_buffers);

#endif /* LA_TEST_MSG_H */
