/* SPDX-License-Identifier: BSD-3-Clause */
/* la_metrics_process.h: the process_* metrics Prometheus' client libraries
 * export (process_cpu_seconds_total, process_resident_memory_bytes,
 * process_virtual_memory_bytes, process_start_time_seconds,
 * process_open_fds, process_max_fds), read from /proc/self. Linux only; no
 * libuv, no state: each call reads /proc afresh.
 */
#ifndef LA_METRICS_PROCESS_H
#define LA_METRICS_PROCESS_H

#include <stdio.h>

/* Writes the metrics above to f in the Prometheus text format (version
 * 0.0.4), unprefixed, each after its HELP and TYPE lines. A value /proc
 * does not give is left out with its lines. Returns 0, or LA_EIO when f
 * failed. */
int la_metrics_process(FILE *f);

#endif
