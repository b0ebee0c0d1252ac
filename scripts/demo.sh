#!/usr/bin/env bash
# demo.sh: the README's first command (`make demo`), run after `make all`.
#
# The main job end to end, on loopback: a GlobalAgent with a fresh SQLite
# store and a LocalAgent (with a new shared secret) in a temporary
# directory; the instrumented wavetoy under mpiexec (every per-cell cost
# profiled, also dumped raw for the trace plot), then rebalance, which
# repartitions its mesh with METIS from the Trace-Sets the GlobalAgent
# serves, beside the same run without rebalancing. Then a short report
# (cycles profiled, Trace-Sets complete, compaction ratio and achieved
# error, per-rank imbalance, what rebalancing gained), SVG plots written to
# build/demo/, and the agents stopped cleanly whatever happens.
set -u
cd "$(dirname "$0")/.."
NP=${LA_DEMO_NP:-4}
BIN=build/bin
EX=build/examples
OUT=build/demo
work=$(mktemp -d /tmp/la-demo.XXXXXX)
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "demo: $*" >&2; exit 1; }
section() { printf '\n== %s\n' "$1"; }
. scripts/la-stack.sh

for f in "$BIN/la-globalagent" "$BIN/la-localagent" "$BIN/lactl" \
         "$EX/wavetoy" "$EX/rebalance"; do
  [ -x "$f" ] || die "$f is missing: run make first"
done
command -v mpiexec >/dev/null || die "mpiexec is missing: run make deps"
mkdir -p "$OUT"
t_start=$(date +%s.%N)

section "starting the agents on loopback (store and logs in $work)"
la_stack_start demo "$BIN" "$work" || exit 1
echo "   GlobalAgent: agents 127.0.0.1:$(cat "$work/ga.port"), feed $LA_GLOBAL"
echo "   LocalAgent:  $LA_AGENT (authenticated with a fresh shared secret)"

section "1. wavetoy: 3-D wave equation, 48^3 cells on $NP ranks, 30 steps, every cell profiled"
wt_id="wavetoy-demo-$$"
mkdir -p "$work/raw"
LA_APP_ID=$wt_id LA_DUMP_RAW="$work/raw" timeout 120 mpiexec -n "$NP" \
  "$EX/wavetoy" --n 48 --steps 30 >"$work/wavetoy.out" 2>&1 ||
  die "wavetoy failed: $(tail -5 "$work/wavetoy.out")"
sed 's/^/   /' "$work/wavetoy.out"
timeout 60 mpiexec -n "$NP" "$EX/wavetoy" --n 48 --steps 30 --no-la \
  >"$work/wavetoy-nola.out" 2>&1
c1=$(grep checksum "$work/wavetoy.out")
c2=$(grep checksum "$work/wavetoy-nola.out")
[ -n "$c1" ] && [ "$c1" = "$c2" ] &&
  echo "   same checksum as the run without LA: profiling did not change the results" ||
  echo "   WARNING: checksum differs from the run without LA ($c2)"

section "2. rebalance: a hot spot moving across a 64x64 mesh, repartitioned with METIS from the Trace-Sets"
rb_id="rebalance-demo-$$"
LA_APP_ID=$rb_id timeout 120 mpiexec -n "$NP" "$EX/rebalance" --steps 40 \
  --every 5 --quiet >"$work/rebalance.out" 2>&1 ||
  die "rebalance failed: $(tail -5 "$work/rebalance.out")"
LA_APP_ID=$rb_id-static timeout 120 mpiexec -n "$NP" "$EX/rebalance" \
  --steps 40 --no-rebalance --quiet >"$work/static.out" 2>&1 ||
  die "rebalance --no-rebalance failed: $(tail -5 "$work/static.out")"
grep -E "rebalances|average imbalance|note" "$work/rebalance.out" | sed 's/^/   /'
grep -E "average imbalance" "$work/static.out" | sed 's/^/   /'

section "3. what the GlobalAgent stitched and stored"
# every set of both runs is closed once its last rank is stored
for _ in $(seq 100); do
  open=$("$BIN/lactl" status --agent "$LA_GLOBAL" --json 2>/dev/null |
         grep -o '"sets_open": "[0-9]*"' | grep -o '[0-9]*')
  [ "${open:-1}" = 0 ] && break
  sleep 0.1
done
"$BIN/lactl" status --agent "$LA_GLOBAL" | grep -E \
  "traces_stored|sets_complete|sets_partial|sets_published|auth" | sed 's/^/   /'
echo
"$BIN/lactl" apps | sed 's/^/   /'
echo
"$BIN/lactl" show "$wt_id" latest | sed 's/^/   /'

section "4. plots"
"$BIN/lactl" plot "$wt_id" latest --rank 1 --raw "$work/raw" \
  -o "$OUT/wavetoy-trace.svg" && echo "   $OUT/wavetoy-trace.svg: rank 1's per-cell cost in the last cycle, measured (dots) and compacted (line)"
"$BIN/lactl" plot "$rb_id-static" latest --rank 2 -o "$OUT/rebalance-trace.svg" &&
  echo "   $OUT/rebalance-trace.svg: rank 2's per-cell cost without rebalancing: the hot spot's cells cost 20x"
"$BIN/lactl" plot "$rb_id-static" --heatmap -o "$OUT/static-heatmap.svg" &&
  echo "   $OUT/static-heatmap.svg: ranks x steps load without rebalancing (red: above the mean)"
"$BIN/lactl" plot "$rb_id" --heatmap -o "$OUT/rebalance-heatmap.svg" &&
  echo "   $OUT/rebalance-heatmap.svg: the same with rebalancing every 5 steps"
"$BIN/lactl" export "$wt_id" latest --format metis -o "$OUT/wavetoy.metis" &&
  echo "   $OUT/wavetoy.metis: METIS vertex weights of the last wavetoy cycle"

section "summary"
t_end=$(date +%s.%N)
imb_with=$(grep -o "average imbalance.*with rebalancing" "$work/rebalance.out" |
           grep -o "[0-9.]* by work units" | head -1)
imb_without=$(grep -o "average imbalance.*without rebalancing" "$work/static.out" |
              grep -o "[0-9.]* by work units" | head -1)
echo "   wavetoy: $(grep -o 'cycles [0-9]*, profiled [0-9]*' "$work/wavetoy.out")"
echo "   rebalance: load imbalance (max/mean) ${imb_without:-?} without rebalancing -> ${imb_with:-?} with"
echo "   demo took $(awk -v a="$t_start" -v b="$t_end" 'BEGIN{printf "%.0f", b-a}') s; agents stopped; plots in $OUT/"
