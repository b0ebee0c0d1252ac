/* worker.c: compaction jobs on the libuv thread pool (never on the loop).
 *
 * A job copies one buffer out of the application's shared memory (scaled to
 * the metric's unit), zeroes it and gives it back at once,
 * so the application waits for the copy, not for the compaction; then it
 * compacts the copy. Back on the loop thread the compact trace is queued for
 * the GlobalAgent. Several applications' cycles are compacted in parallel
 * (agent.threads). Memory: one copy of the values per job in flight; a
 * session has at most n_buffers jobs, so the peak is bounded by max_apps x
 * 16 x max_elements x 8 bytes, in practice far less.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "la_errors.h"
#include "la_log.h"

typedef struct la_job {
  uv_work_t req;
  la_session_t *s;
  uint32_t buffer;
  uint64_t cycle_tag, seq, t_xfer_ns;
  la_compact_params_t cp;
  /* results, written by the worker thread */
  int rc;
  la_shm_bufmeta_t meta;
  la_compact_result_t res;
  uint64_t ns;
} la_job_t;

static uint64_t la__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void la__work(uv_work_t *req) {
  la_job_t *j = req->data;
  uint64_t n = j->s->ipc.n_elements;
  double *x = malloc(n * sizeof(double));
  if (!x) {
    /* Out of memory: the cycle is lost (counted), but the buffer goes back
     * zeroed, or the application would wait for it. */
    j->rc = LA_ENOMEM;
    la_app_ipc_discard(&j->s->ipc, j->buffer);
  } else {
    j->rc = la_app_ipc_take(&j->s->ipc, j->buffer, x, &j->meta);
  }
  /* The buffer is read: it is no longer busy, and only then does it go
   * back, so the application's next notification of it is never seen as a
   * second notification of this one. */
  __atomic_fetch_and(&j->s->busy, ~(1u << j->buffer), __ATOMIC_SEQ_CST);
  la_app_ipc_give_back(&j->s->ipc, j->buffer);
  if (!x) return;
  uint64_t t0 = la__mono_ns();
  if (x && j->rc == 0) j->rc = la_compact(x, n, &j->cp, &j->res);
  j->ns = la__mono_ns() - t0;
  free(x);
}

static void la__after(uv_work_t *req, int status) {
  la_job_t *j = req->data;
  la_session_t *s = j->s;
  la_agent_t *ag = s->ag;
  ag->jobs_in_flight--;
  if (status != 0 || j->rc != 0) {
    ag->st.cycles_dropped++;
    la_log_warnx("%s rank %u cycle %llu not compacted: %s", s->app_id,
                 s->rank, (unsigned long long)j->cycle_tag,
                 status ? uv_strerror(status) : la_strerror(j->rc));
  } else {
    ag->st.cycles_compacted++;
    ag->st.points += s->ipc.n_elements;
    ag->st.compact_ns += j->ns;
    La__SeriesStats st = LA__SERIES_STATS__INIT;
    st.count = j->res.stats.count;
    st.sum = j->res.stats.sum;
    st.min = j->res.stats.min;
    st.max = j->res.stats.max;
    La__FitError fe = LA__FIT_ERROR__INIT;
    fe.max_abs = j->res.error.max_abs;
    fe.rmse = j->res.error.rmse;
    fe.cv = j->res.error.cv;
    La__CompactTrace t = LA__COMPACT_TRACE__INIT;
    t.app_id = s->app_id;
    t.rank = s->rank;
    t.cycle_tag = j->cycle_tag;
    t.n_elements = s->ipc.n_elements;
    t.mode = (La__CompactMode)j->res.mode;
    t.segments.data = j->res.bytes;
    t.segments.len = j->res.len;
    t.stats = &st;
    t.error = &fe;
    t.has_t_xfer_ns = 1;
    t.t_xfer_ns = j->t_xfer_ns;
    t.has_rank_seq = 1;
    t.rank_seq = j->seq;
    ag->st.bytes_out += j->res.len;
    if (j->meta.range_errors)
      la_log_warnx("%s rank %u cycle %llu: %llu probes out of range",
                   s->app_id, s->rank, (unsigned long long)j->cycle_tag,
                   (unsigned long long)j->meta.range_errors);
    la_uplink_send(ag, LA__MSG_TYPE__MSG_COMPACT_TRACE, &t.base, &t.seq);
  }
  la_compact_result_free(&j->res);
  free(j);
  la_session_job_done(s);
  la_agent_check_drained(ag);
}

int la_worker_submit(la_session_t *s, uint32_t i, uint64_t cycle_tag,
                     uint64_t seq, uint64_t t_xfer_ns) {
  la_job_t *j = calloc(1, sizeof *j);
  if (!j) return LA_ENOMEM;
  j->req.data = j;
  j->s = s;
  j->buffer = i;
  j->cycle_tag = cycle_tag;
  j->seq = seq;
  j->t_xfer_ns = t_xfer_ns;
  j->cp = s->cp;
  /* busy before the job can run: the worker clears it */
  __atomic_fetch_or(&s->busy, 1u << i, __ATOMIC_SEQ_CST);
  if (uv_queue_work(s->ag->loop, &j->req, la__work, la__after) != 0) {
    __atomic_fetch_and(&s->busy, ~(1u << i), __ATOMIC_SEQ_CST);
    free(j);
    return LA_ENOMEM;
  }
  s->jobs++;
  la_conn_hold(&s->conn);
  s->ag->jobs_in_flight++;
  return 0;
}
