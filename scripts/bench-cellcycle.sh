#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-cellcycle.sh: the LocalAgent worker's computation on cell-probed
# cycles, replayed outside the daemon (bench/bench_cellcycle.c).
#
# Unless LA_BENCH_CELLS_RAW=DIR:APP[:RANK] names cycles recorded already,
# records them: bench_localagent (its probe loop: 10^6 elements, every one
# probed, period 1; then its ranges loop) with LA_DUMP_RAW into a temporary
# directory (about 5 GB), then replays the probe loop's cycles through
# bench_cellcycle, which writes build/bench/cellcycle.json and a table, and
# the ranges loop's (build/bench/cellcycle-ranges.json) at the timer
# resolution the probe loop's cycles show. The temporary directory is
# removed.
set -u
cd "$(dirname "$0")/.."
echo "== bench cellcycle"
for f in build/bench/bench_localagent build/bench/bench_cellcycle; do
  [ -x "$f" ] || { echo "bench-cellcycle: $f missing: run make" >&2; exit 1; }
done
if [ -n "${LA_BENCH_CELLS_RAW:-}" ]; then
  exec build/bench/bench_cellcycle build/bench/cellcycle.json
fi
tmp=$(mktemp -d /tmp/la-cellcycle.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
LA_DUMP_RAW="$tmp" build/bench/bench_localagent "$tmp/localagent.json" \
  >"$tmp/record.log" 2>&1 || { echo "bench-cellcycle: recording failed:" >&2;
                               cat "$tmp/record.log" >&2; exit 1; }
ls "$tmp" | grep -q '^bench-probe\.r0\.c[0-9]*\.f64$' ||
  { echo "bench-cellcycle: no cycles dumped" >&2; exit 1; }
LA_BENCH_CELLS_RAW="$tmp:bench-probe" build/bench/bench_cellcycle \
  build/bench/cellcycle.json || exit 1
res=$(sed -n 's/.*"timer_res_ns": \([0-9.]*\).*/\1/p' build/bench/cellcycle.json)
echo "== the ranges loop's cycles"
LA_BENCH_CELLS_RES="${LA_BENCH_CELLS_RES:-$res}" \
  LA_BENCH_CELLS_RAW="$tmp:bench-ranges" build/bench/bench_cellcycle \
  build/bench/cellcycle-ranges.json
