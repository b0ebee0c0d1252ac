/* SPDX-License-Identifier: BSD-3-Clause */
/* la_interference.h: libla-internal interface of interference.c (context
 * switch detection at the probe, timer resolution, fidelity counters); see
 * that file and docs/fidelity.md. Not installed.
 */
#ifndef LA_INTERFERENCE_H
#define LA_INTERFERENCE_H

#include "la.pb-c.h"
#include "la_internal.h"

/* At registration, after the metric is set up: decides detection (fast: the
 * built-in wall-time metric; the LA_INTERFERENCE environment variable: auto
 * (default), on, off) and opens the calling thread's event to learn whether
 * the kernel allows it; a refusal is not an error (detection is then off,
 * with the reason in LA_interference()). Records the timer's tick length
 * and resolution for the counters. Returns 0, or LA_ECONFIG for a bad
 * LA_INTERFERENCE value. */
LA__HIDDEN int la__interf_init(int fast, double ns_per_tick,
                               double timer_res_ns);
/* Start of a profiled cycle into buffer buf: clears its n flag bytes
 * (unless its last cycle flagged none) and the meta data's interference
 * counters (when detection is on). */
LA__HIDDEN void la__interf_begin(uint8_t *flags, la_shm_bufmeta_t *meta,
                                 uint64_t n, uint32_t buf);
/* End of the cycle: adds its counters to the run's totals. */
LA__HIDDEN void la__interf_end(void);
/* Finalize: detection off, the calling thread's event closed (other
 * threads' close when they exit). */
LA__HIDDEN void la__interf_shutdown(void);
/* Fills the registration's fidelity fields (the strings are static). */
LA__HIDDEN void la__interf_fill_register(La__RegisterRequest *req);
/* Fills a DataReady's interference fields from the buffer's meta data;
 * scale converts ticks to ns. Leaves them unset when detection is off. */
LA__HIDDEN void la__interf_fill_ready(La__DataReady *d,
                                      const la_shm_bufmeta_t *meta,
                                      double scale);
/* LA_STAT_TIMER_RES_NS, LA_STAT_FLAGGED, LA_STAT_INTERFERENCE_NS; else
 * LA_EINVAL. */
LA__HIDDEN long la__interf_stat(int which);

#endif /* LA_INTERFERENCE_H */
