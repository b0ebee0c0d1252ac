#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-laprofile.sh: where the LocalAgent's CPU per row-probed rank-cycle
# goes on a busy node (`make bench-laprofile`, docs/performance.md).
#
# Runs one busy-node overhead run (scripts/bench-overhead.py with
# LA_BENCH_BUSY=1: wavetoy 128^3, as many ranks as cores, row probes,
# period 15, LAPROFILE_STEPS steps, default 3000) while `perf record -e
# cpu-clock --call-graph dwarf` samples this tree's LocalAgent at
# LAPROFILE_HZ (default 2000), then gives each sample to its thread and a
# phase (scripts/perf_phases.py) and prints per thread the phases' shares
# and CPU per rank-cycle, beside the thread's CPU per rank-cycle the
# overhead run measured from /proc (perf's sampling itself adds to the
# sampled figures). Writes build/bench/laprofile.json; the overhead run's
# own figures go to build/bench/laprofile-overhead.json. Needs perf
# (software events only); without it, says so and exits 0.
set -u
cd "$(dirname "$0")/.."
echo "== bench laprofile"
command -v perf >/dev/null || { echo "bench-laprofile: perf not found: skipped"; exit 0; }
AGENT=$PWD/build/bin/la-localagent
[ -x "$AGENT" ] || { echo "bench-laprofile: $AGENT missing: run make" >&2; exit 1; }
HZ=${LAPROFILE_HZ:-2000}
tmp=$(mktemp -d /tmp/la-laprofile.XXXXXX) || exit 1
bench=""
perfp=""
cleanup() {
  [ -n "$perfp" ] && kill -INT "$perfp" 2>/dev/null && wait "$perfp" 2>/dev/null
  [ -n "$bench" ] && kill "$bench" 2>/dev/null && wait "$bench" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
LA_BENCH_BUSY=1 LA_BENCH_REPS=1 LA_BENCH_PROGRAMS=wavetoy LA_BENCH_PERIODS=15 \
  LA_BENCH_PROBES=row LA_BENCH_STEPS=${LAPROFILE_STEPS:-3000} \
  LA_BENCH_AGENT_B= python3 scripts/bench-overhead.py \
  build/bench/laprofile-overhead.json >"$tmp/bench.log" 2>&1 &
bench=$!
# this tree's LocalAgent, once the overhead run has started it (its
# baseline run comes first)
pid=""
while [ -z "$pid" ] && kill -0 "$bench" 2>/dev/null; do
  for p in $(pgrep -x la-localagent); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$AGENT" ] &&
      [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$PWD" ] && pid=$p
  done
  [ -z "$pid" ] && sleep 0.05
done
[ -n "$pid" ] || { echo "bench-laprofile: no LocalAgent seen:" >&2; cat "$tmp/bench.log" >&2; exit 1; }
perf record -q -e cpu-clock -F "$HZ" --call-graph dwarf,16384 -p "$pid" \
  -o "$tmp/perf.data" >"$tmp/perf.log" 2>&1 &
perfp=$!
wait "$bench"
rc=$?
bench=""
kill -INT "$perfp" 2>/dev/null
wait "$perfp" 2>/dev/null
perfp=""
cat "$tmp/bench.log"
[ $rc -eq 0 ] || exit $rc
cycles=$(python3 -c 'import json,sys
c=json.load(open(sys.argv[1]))["programs"]["wavetoy"]["configs"][0]
print(c["profiled"])' build/bench/laprofile-overhead.json) || exit 1
perf script -i "$tmp/perf.data" -F comm,tid,ip,sym >"$tmp/perf.txt" 2>/dev/null
echo "perf, $HZ Hz, over $cycles profiled rank-cycles (LocalAgent threads):"
python3 scripts/perf_phases.py "$tmp/perf.txt" "$HZ" "$cycles" \
  build/bench/laprofile.json
