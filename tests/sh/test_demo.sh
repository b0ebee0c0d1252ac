#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_demo.sh: `make demo`'s script (scripts/demo.sh) runs end to end and
# its summary tells the whole story: the imbalance by the cost model and as
# measured, for the static and the rebalanced run, each equal to what the
# programs printed; the labels of every figure (waits, predicted, measured
# after); the timer's resolution and the median cell in timer steps, at
# least 20 (the showcase's per-cell costs are resolved); and the plotted
# series has many distinct values, counted here from the raw trace the
# plot was drawn from. About 15-30 s.
#
# Run by run-tests.sh after make all; skips when the programs are not built
# or mpiexec is missing.
set -u
cd "$(dirname "$0")/../.."
. tests/sh/report.sh
NAME=test_demo
for f in build/bin/la-globalagent build/bin/la-localagent build/bin/lactl \
         build/examples/heavy build/examples/rebalance; do
  [ -x "$f" ] || { la_sh_skip $NAME "$f is missing (make all first)"; la_sh_done; }
done
command -v mpiexec >/dev/null ||
  { la_sh_skip $NAME "mpiexec is missing (make deps)"; la_sh_done; }

tmp=$(mktemp -d /tmp/la-test-demo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
LA_DEMO_OUT="$tmp/plots" LA_DEMO_KEEP="$tmp/keep" timeout 180 \
  bash scripts/demo.sh >"$tmp/demo.out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  la_sh_fail "$NAME/runs" "demo.sh exited $rc:"$'\n'"$(tail -20 "$tmp/demo.out")"
  la_sh_done
fi
la_sh_ok "$NAME/runs"
sum=$(sed -n '/^== summary/,$p' "$tmp/demo.out")
show() { printf '%s\n' "$sum"; }

# The number after LABEL in the first line of FILE matching PATTERN.
after() { # file pattern label
  grep -E "$2" "$1" | head -1 | grep -oE "$3 [0-9.]+" | head -1 | grep -oE '[0-9.]+$'
}

# 1. both figures, side by side, for both runs, equal to the programs' own
s_model=$(after "$tmp/keep/static.out" "average imbalance" "measured,")
s_meas=$(after "$tmp/keep/static.out" "average imbalance" "time\)")
r_model=$(after "$tmp/keep/rebalance.out" "average imbalance" "measured,")
r_meas=$(after "$tmp/keep/rebalance.out" "average imbalance" "time\)")
row_s=$(show | grep -E '^ +static row blocks +[0-9.]+ +[0-9.]+$' | awk '{print $4, $5}')
row_r=$(show | grep -E '^ +rebalanced every 5 steps +[0-9.]+ +[0-9.]+$' | awk '{print $5, $6}')
if show | grep -q 'cost model' && show | grep -q '(work units)' &&
   show | grep -q '(compute time per rank)' && [ -n "$s_model" ] &&
   [ -n "$r_meas" ] && [ "$row_s" = "$s_model $s_meas" ] &&
   [ "$row_r" = "$r_model $r_meas" ]; then
  la_sh_ok "$NAME/model_and_measured"
else
  la_sh_fail "$NAME/model_and_measured" "want static '$s_model $s_meas', rebalanced '$r_model $r_meas' (cost model, measured); got '$row_s', '$row_r' in:"$'\n'"$sum"
fi

# 2. every figure labelled: waits, predicted, measured after, the gap
pred=$(after "$tmp/keep/rebalance.out" "rebalances? \(" "predicted")
meas_after=$(after "$tmp/keep/rebalance.out" "rebalances? \(" "after")
missing=""
for want in "waits: cycles the application waited for a free buffer" \
            "predicted $pred" "(METIS's partition, by the weights LA measured)" \
            "by" "work units, $meas_after measured" "why they differ:" \
            "as interference" "max/mean over"; do
  show | tr '\n' ' ' | tr -s ' ' | grep -qF -- "$want" || missing+="'$want' "
done
grep -qF "waits: cycles in" "$tmp/demo.out" || missing+="'waits' legend of section 1 "
grep -qF "predicted: METIS's imbalance by the weights" "$tmp/demo.out" ||
  missing+="'predicted' legend of section 2 "
if [ -z "$missing" ] && [ -n "$pred" ] && [ -n "$meas_after" ]; then
  la_sh_ok "$NAME/labels"
else
  la_sh_fail "$NAME/labels" "missing: ${missing:-the figures of the rebalance line}"$'\n'"$sum"
fi

# 3. the timer resolves the showcase: median cell >= 20 timer steps
steps=$(show | grep -oE '= [0-9]+ timer steps' | grep -oE '[0-9]+')
res=$(show | grep -oE 'timer: resolution [0-9.]+ ns' | grep -oE '[0-9.]+')
if [ -n "$res" ] && [ -n "$steps" ] && [ "$steps" -ge 20 ] &&
   ! grep -q "most elements read only a few timer steps" "$tmp/demo.out"; then
  la_sh_ok "$NAME/timer_resolves"
else
  la_sh_fail "$NAME/timer_resolves" "resolution '$res' ns, median '$steps' timer steps (want >= 20, and no lactl show warning)"$'\n'"$sum"
fi

# 4. the plotted series: its raw values, counted here
cyc=$(show | grep -oE 'rank 1, cycle [0-9]+' | grep -oE '[0-9]+$')
raw=$(ls "$tmp"/keep/raw/*.r1.c"$cyc".f64 2>/dev/null | head -1)
distinct=$( [ -n "$raw" ] && od -An -v -tf8 -w8 "$raw" | sort -u | wc -l)
said=$(show | grep -oE '[0-9]+ distinct values' | grep -oE '^[0-9]+')
if [ -s "$tmp/plots/heavy-trace.svg" ] && [ -n "$raw" ] &&
   [ "${distinct:-0}" -gt 10 ] && [ "$said" = "$distinct" ]; then
  la_sh_ok "$NAME/plotted_series"
else
  la_sh_fail "$NAME/plotted_series" "plot $(ls "$tmp/plots" 2>&1 | tr '\n' ' '); raw '$raw': ${distinct:-?} distinct values (want > 10), the summary says '$said'"
fi
la_sh_done
