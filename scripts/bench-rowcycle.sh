#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-rowcycle.sh: the LocalAgent worker's computation on row-probed
# cycles, replayed outside the daemon (bench/bench_rowcycle.c).
#
# Unless LA_BENCH_ROWS_RAW=DIR:APP[:RANK] names cycles recorded already,
# records them: a LocalAgent on loopback (its GlobalAgent unreachable, so
# its traces go to a spool in a temporary directory), wavetoy 128^3 on two
# ranks, --probe row, period 15, 600 steps (40 profiled cycles; ROWCYCLE_STEPS),
# with LA_DUMP_RAW into the temporary directory (about 0.7 GB), then
# replays rank 0's cycles through bench_rowcycle, which writes
# build/bench/rowcycle.json and a table. The temporary directory is removed.
set -u
cd "$(dirname "$0")/.."
BIN=build/bin
EX=build/examples
STEPS=${ROWCYCLE_STEPS:-600}
echo "== bench rowcycle"
for f in $BIN/la-localagent $EX/wavetoy build/bench/bench_rowcycle; do
  [ -x "$f" ] || { echo "bench-rowcycle: $f missing: run make" >&2; exit 1; }
done
if [ -n "${LA_BENCH_ROWS_RAW:-}" ]; then
  exec build/bench/bench_rowcycle build/bench/rowcycle.json
fi
tmp=$(mktemp -d /tmp/la-rowcycle.XXXXXX) || exit 1
agent=""
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/dump" "$tmp/spool"
$BIN/la-localagent --agent.listen=127.0.0.1:0 --agent.port_file="$tmp/port" \
  --global.address=127.0.0.1:1 --global.spool_dir="$tmp/spool" \
  --log.level=error >"$tmp/agent.log" 2>&1 &
agent=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "bench-rowcycle: the LocalAgent did not start:" >&2;
                        cat "$tmp/agent.log" >&2; exit 1; }
LA_AGENT=127.0.0.1:$(cat "$tmp/port") LA_DUMP_RAW="$tmp/dump" LA_PERIOD=15 \
  mpiexec -n 2 $EX/wavetoy --n 128 --steps "$STEPS" --probe row \
  >"$tmp/wavetoy.log" 2>&1 || { echo "bench-rowcycle: wavetoy failed:" >&2;
                                cat "$tmp/wavetoy.log" >&2; exit 1; }
first=$(ls "$tmp/dump" | grep '\.r0\.c[0-9]*\.f64$' | head -1)
[ -n "$first" ] || { echo "bench-rowcycle: no cycles dumped" >&2; exit 1; }
app=${first%.r0.c*}
LA_BENCH_ROWS_RAW="$tmp/dump:$app" build/bench/bench_rowcycle \
  build/bench/rowcycle.json
