/* SPDX-License-Identifier: BSD-3-Clause */
/* la_test_msg.c: filled protocol messages (see la_test_msg.h). */
#include "la_test_msg.h"

#include "la_trace_msg.h"

static La__CompactParams la__tm_params = LA__COMPACT_PARAMS__INIT;

La__RankStart la_test_rank_start_min(const char *app_id, uint32_t rank,
                                     uint32_t nprocs, uint64_t n_elements) {
  La__RankStart m = LA__RANK_START__INIT;
  m.seq = 1;
  m.app_id = (char *)app_id;
  m.rank = rank;
  m.nprocs = nprocs;
  m.n_elements = n_elements;
  m.metric = "time";
  m.unit = "ns";
  return m;
}

La__RegisterRequest la_test_register_request(
    const char *app_id, const char *app_name, int32_t pid, int32_t shm_id,
    int32_t sem_id, uint64_t nonce, uint64_t n_elements, uint32_t n_buffers) {
  /* every field not named is 0 or NULL, as in LA__REGISTER_REQUEST__INIT */
  return (La__RegisterRequest){
      .base = PROTOBUF_C_MESSAGE_INIT(&la__register_request__descriptor),
      .protocol = LA_PROTOCOL_VERSION,
      .app_id = (char *)app_id,
      .app_name = (char *)app_name,
      .rank = 0,
      .nprocs = 1,
      .pid = pid,
      .shm_id = shm_id,
      .sem_id = sem_id,
      .nonce = nonce,
      .n_elements = n_elements,
      .n_buffers = n_buffers,
      .metric = "time",
      .unit = "ns"};
}

La__RankStart la_test_rank_start(const char *app_id, const char *app_name,
                                 uint32_t rank, uint32_t nprocs,
                                 uint64_t n_elements) {
  La__RankStart m = la_test_rank_start_min(app_id, rank, nprocs, n_elements);
  m.app_name = (char *)app_name;
  m.host = "node1";
  m.has_pid = 1;
  m.pid = 1000 + (int)rank;
  m.has_period = 1;
  m.period = 10;
  m.has_t_start_ns = 1;
  m.t_start_ns = 1700000000000000000ull + rank;
  la__tm_params.has_mode = 1;
  la__tm_params.mode = LA__COMPACT_MODE__COMPACT_POLYLINE;
  la__tm_params.has_cv = 1;
  la__tm_params.cv = 0.1;
  m.compact = &la__tm_params;
  return m;
}

void la_test_history_trace(La__CompactTrace *t, La__SeriesStats *st,
                           La__FitError *fe, const la_compact_result_t *res,
                           const char *app_id, uint32_t rank, uint64_t tag,
                           uint64_t n_elements, uint64_t seq, uint64_t ref) {
  la_trace_msg_fill(t, st, fe, res);
  t->seq = seq;
  t->app_id = (char *)app_id;
  t->rank = rank;
  t->cycle_tag = tag;
  t->n_elements = n_elements;
  t->has_rank_seq = 1;
  t->rank_seq = tag;
  t->has_history_ref = ref != 0;
  t->history_ref = ref;
}
