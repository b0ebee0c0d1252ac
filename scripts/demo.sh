#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# demo.sh: the README's first command (`make demo`), run after `make all`.
#
# The main job end to end, on loopback: a GlobalAgent with a fresh SQLite
# store and a LocalAgent (with a new shared secret) in a temporary
# directory; the instrumented heavy kernel under mpiexec (every per-cell
# cost profiled, also dumped raw for the trace plot: about a microsecond a
# cell, so each value spans many timer steps, unlike wavetoy's light
# stencil whose cells read one or two), then rebalance, which repartitions
# its mesh with METIS from the Trace-Sets the GlobalAgent serves, beside
# the same run without rebalancing. Then a short report (cycles profiled,
# Trace-Sets complete, compaction ratio and achieved error, the timer's
# resolution against the median cell, per-rank imbalance by the cost model
# and as measured, before and after rebalancing), SVG plots written to
# build/demo/, and the agents stopped cleanly whatever happens.
#
# LA_DEMO_NP sets the number of ranks (4), LA_DEMO_OUT the plots' directory
# (build/demo); LA_DEMO_KEEP=DIR copies the programs' output and the raw
# traces to DIR (tests/sh/test_demo.sh checks the summary against them).
set -u
cd "$(dirname "$0")/.."
NP=${LA_DEMO_NP:-4}
BIN=build/bin
EX=build/examples
OUT=${LA_DEMO_OUT:-build/demo}
. scripts/la-stack.sh
work=$(mktemp -d /tmp/la-demo.XXXXXX)
pids=()

cleanup() {
  la_stack_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "demo: $*" >&2; exit 1; }
section() { printf '\n== %s\n' "$1"; }

for f in "$BIN/la-globalagent" "$BIN/la-localagent" "$BIN/lactl" \
         "$EX/heavy" "$EX/rebalance"; do
  [ -x "$f" ] || die "$f is missing: run make first"
done
command -v mpiexec >/dev/null || die "mpiexec is missing: run make deps"
mkdir -p "$OUT"
t_start=$(date +%s.%N)

# The number after LABEL (a regex) in FILE's first line matching PATTERN.
num_after() { # file pattern label
  grep -E "$2" "$1" | head -1 | grep -oE "$3 [0-9.]+" | head -1 |
    grep -oE '[0-9.]+$'
}

section "starting the agents on loopback (store and logs in $work)"
la_stack_start demo "$BIN" "$work" || exit 1
echo "   GlobalAgent: agents 127.0.0.1:$(cat "$work/ga.port"), feed $LA_GLOBAL"
echo "   LocalAgent:  $LA_AGENT (authenticated with a fresh shared secret)"

HV_N=32 HV_STEPS=20
section "1. heavy: a toy ADM kernel (~3,000 flops per cell), ${HV_N}^3 cells on $NP ranks, $HV_STEPS steps, every cell profiled"
hv_id="heavy-demo-$$"
mkdir -p "$work/raw"
LA_APP_ID=$hv_id LA_DUMP_RAW="$work/raw" timeout 120 mpiexec -n "$NP" \
  "$EX/heavy" --n $HV_N --steps $HV_STEPS >"$work/heavy.out" 2>&1 ||
  die "heavy failed: $(tail -5 "$work/heavy.out")"
sed 's/^/   /' "$work/heavy.out"
echo "   (cycles: LA_dataXfer calls; profiled: cycles whose values went to the"
echo "   agent; skipped: cycles lost for want of a free buffer; waits: cycles in"
echo "   which the application waited for a free buffer; summed over the ranks)"
timeout 60 mpiexec -n "$NP" "$EX/heavy" --n $HV_N --steps $HV_STEPS --no-la \
  >"$work/heavy-nola.out" 2>&1
c1=$(grep checksum "$work/heavy.out")
c2=$(grep checksum "$work/heavy-nola.out")
[ -n "$c1" ] && [ "$c1" = "$c2" ] &&
  echo "   same checksum as the run without LA: profiling did not change the results" ||
  echo "   WARNING: checksum differs from the run without LA ($c2)"

section "2. rebalance: a hot spot moving across a 64x64 mesh, repartitioned with METIS from the Trace-Sets"
rb_id="rebalance-demo-$$"
LA_APP_ID=$rb_id timeout 120 mpiexec -n "$NP" "$EX/rebalance" --steps 40 \
  --every 5 >"$work/rebalance.out" 2>&1 ||
  die "rebalance failed: $(tail -5 "$work/rebalance.out")"
LA_APP_ID=$rb_id-static timeout 120 mpiexec -n "$NP" "$EX/rebalance" \
  --steps 40 --no-rebalance >"$work/static.out" 2>&1 ||
  die "rebalance --no-rebalance failed: $(tail -5 "$work/static.out")"
grep -E "rebalances|average imbalance|note" "$work/rebalance.out" | sed 's/^/   /'
grep -E "average imbalance" "$work/static.out" | sed 's/^/   /'
echo "   (imbalance: max/mean over the ranks, 1.00 = balanced; measured: each"
echo "   rank's compute time per step, MPI_Wtime; by work units: the example's"
echo "   exact cost model; before: measured at the step a rebalance follows;"
echo "   predicted: METIS's imbalance by the weights LA measured in that step;"
echo "   measured after: the step after it)"

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
"$BIN/lactl" show "$hv_id" latest | sed 's/^/   /'

section "4. plots"
# the plotted series: rank 1's raw values of the last cycle
last=$(ls "$work/raw" | grep -oE "^$hv_id\.r1\.c[0-9]+\.f64$" |
       sed -E 's/.*\.c([0-9]+)\.f64/\1/' | sort -n | tail -1)
raw1="$work/raw/$hv_id.r1.c$last.f64"
"$BIN/lactl" plot "$hv_id" latest --rank 1 --raw "$work/raw" \
  -o "$OUT/heavy-trace.svg" && echo "   $OUT/heavy-trace.svg: rank 1's per-cell cost in the last cycle, measured (dots) and compacted (line)"
"$BIN/lactl" plot "$rb_id-static" latest --rank 2 -o "$OUT/rebalance-trace.svg" &&
  echo "   $OUT/rebalance-trace.svg: rank 2's per-cell cost without rebalancing: the hot spot's cells cost 20x"
"$BIN/lactl" plot "$rb_id-static" --heatmap -o "$OUT/static-heatmap.svg" &&
  echo "   $OUT/static-heatmap.svg: ranks x steps load without rebalancing (red: above the mean)"
"$BIN/lactl" plot "$rb_id" --heatmap -o "$OUT/rebalance-heatmap.svg" &&
  echo "   $OUT/rebalance-heatmap.svg: the same with rebalancing every 5 steps"
"$BIN/lactl" export "$hv_id" latest --format metis -o "$OUT/heavy.metis" &&
  echo "   $OUT/heavy.metis: METIS vertex weights of the last heavy cycle"

section "summary"
t_end=$(date +%s.%N)
# the timer against the cells: lactl show's figures (it warns below 20 steps)
hv_json=$("$BIN/lactl" show "$hv_id" latest --json 2>/dev/null)
res=$(printf '%s' "$hv_json" | grep -oE '"timer_res_ns": [0-9.e+-]+' | head -1 | grep -oE '[0-9.e+-]+$')
med=$(printf '%s' "$hv_json" | grep -oE '"median_element_ns": [0-9.e+-]+' | head -1 | grep -oE '[0-9.e+-]+$')
rb_json=$("$BIN/lactl" show "$rb_id" latest --json 2>/dev/null)
interf=$(printf '%s' "$rb_json" | grep -oE '"interference_share": [0-9.e+-]+' | head -1 | grep -oE '[0-9.e+-]+$')
# the plotted series: how many distinct values, and their spread in steps
read -r n_raw n_dist p5 p95 <<<"$(od -An -v -tf8 -w8 "$raw1" 2>/dev/null |
  sort -g | awk -v r="${res:-0}" '
  { v[++n] = $1; if (!($1 in seen)) { seen[$1] = 1; d++ } }
  END { if (!n || r <= 0) { print n + 0, d + 0, "?", "?"; exit }
        printf "%d %d %.0f %.0f\n", n, d, v[int(n * 0.05) + 1] / r,
               v[int(n * 0.95)] / r }')"
# the imbalance averages: (measured, work units) of both runs
s_meas=$(num_after "$work/static.out" "average imbalance" "time\)")
s_model=$(num_after "$work/static.out" "average imbalance" "measured,")
r_meas=$(num_after "$work/rebalance.out" "average imbalance" "time\)")
r_model=$(num_after "$work/rebalance.out" "average imbalance" "measured,")
n_reb=$(grep -oE '^rebalance: [0-9]+ rebalances?' "$work/rebalance.out" | grep -oE '[0-9]+')
before=$(num_after "$work/rebalance.out" "rebalances? \(" "before")
pred=$(num_after "$work/rebalance.out" "rebalances? \(" "predicted")
after=$(num_after "$work/rebalance.out" "rebalances? \(" "after")
# the work units at the step after each rebalance: the cost model's "after"
model_after=$(awk '
  /^rebalance after step [0-9]+: Trace-Set/ { want = $4; sub(":", "", want); want++ }
  /^step +[0-9]+: imbalance/ {
    s = $2; sub(":", "", s)
    if (want != "" && s + 0 == want + 0) {
      for (i = 1; i < NF; i++) if ($(i + 1) == "by") u = $i
      sum += u; n++; want = ""
    }
  }
  END { if (n) printf "%.2f", sum / n }' "$work/rebalance.out")
cores=$(nproc 2>/dev/null || echo "?")
if [ "$cores" != "?" ] && [ "$NP" -gt "$cores" ]; then
  share="$NP ranks share $cores cores here"
else
  share="$NP ranks on $cores cores here"
fi
steps_med=$(awk -v m="${med:-0}" -v r="${res:-0}" 'BEGIN { printf "%.0f", (r > 0 ? m / r : 0) }')

echo "   heavy: $(grep -oE 'cycles [0-9]+, profiled [0-9]+, skipped [0-9]+, waits [0-9]+' "$work/heavy.out") (summed over the"
echo "     ranks; waits: cycles the application waited for a free buffer)"
printf '   timer: resolution %.1f ns; the median cell costs %.0f ns = %s timer steps\n' \
  "${res:-0}" "${med:-0}" "$steps_med"
echo "     (lactl show warns below 20); the plotted series (rank 1, cycle ${last:-?}):"
echo "     ${n_raw:-0} cells, ${n_dist:-0} distinct values, $p5..$p95 timer steps (5th..95th percentile)"
echo "   rebalance: load imbalance, max/mean over $NP ranks (1.00 = balanced),"
echo "     averaged over 40 steps:"
printf '     %-26s %12s   %s\n' "" "cost model" "measured"
printf '     %-26s %12s   %s\n' "" "(work units)" "(compute time per rank)"
printf '     %-26s %12s   %s\n' "static row blocks" "${s_model:-?}" "${s_meas:-?}"
printf '     %-26s %12s   %s\n' "rebalanced every 5 steps" "${r_model:-?}" "${r_meas:-?}"
echo "   at the ${n_reb:-?} rebalances (averages): measured before ${before:-?}; predicted ${pred:-?}"
echo "     (METIS's partition, by the weights LA measured); the step after: ${model_after:-?} by"
echo "     work units, ${after:-?} measured"
echo "   why they differ: the cost model counts each cell's work units exactly; a"
echo "     measured time also holds what the model leaves out (the loop and probe"
echo "     around each cell, LA_dataXfer) and what the machine adds:"
printf '     %s, and LA flagged %.1f%% of the\n     rebalanced run'"'"'s last cycle as interference.\n' "$share" \
  "$(awk -v x="${interf:-0}" 'BEGIN { print x * 100 }')"
echo "     So the measured figure can sit above or below the model's."
echo "     METIS balances the weights LA measured in the step before the new"
echo "     partition runs, not the work units: by work units that partition is at"
echo "     ${model_after:-?} one step later, and the hot spot drifts on until the next"
echo "     rebalance (${r_model:-?} on average)."
echo "   demo took $(awk -v a="$t_start" -v b="$t_end" 'BEGIN{printf "%.0f", b-a}') s; agents stopped; plots in $OUT/"
if [ -n "${LA_DEMO_KEEP:-}" ]; then
  mkdir -p "$LA_DEMO_KEEP" &&
    cp "$work"/heavy.out "$work"/rebalance.out "$work"/static.out "$LA_DEMO_KEEP"/ &&
    cp -r "$work/raw" "$LA_DEMO_KEEP/"
fi
