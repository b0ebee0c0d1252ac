#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-whatif-rebalance.sh: does `lactl whatif` predict the imbalance a
# real repartition gets? (`make bench-whatif-rebalance`, docs/balancing.md)
#
# Runs examples/rebalance through the real daemons (scripts/la-stack.sh:
# a GlobalAgent on a fresh SQLite store, a LocalAgent) LA_WR_RUNS times
# (default 3) on LA_WR_NP ranks (default 2), 40 steps, repartitioning every
# 5 with METIS from LA's weights, each partition written with
# --write-partitions. Then for every repartition chosen from the set of
# cycle C and in force from cycle S (= the step after the repartition):
#   predicted   `lactl whatif APP C --partition FILE`: the chosen partition
#               scored on cycle C's stored weights (robust and measured);
#   next        the same partition scored on cycle S's weights (whatif's
#               --horizon on the cycles after C: what moved between C and S);
#   after       `lactl whatif APP S`'s current row: max/mean of the stored
#               per-rank totals of cycle S, the first cycle run under the
#               partition (robust and measured);
#   rb_pred     what rebalance itself printed (its capped, quantised
#               measured weights).
# Prints one line per repartition and a summary: the median and largest
# |predicted - after| / after, and how many are within 5%. Reports; asserts
# nothing (a shared machine's noise is in the figures): the load average
# is printed beside them.
set -u
cd "$(dirname "$0")/.."
NP=${LA_WR_NP:-2}
RUNS=${LA_WR_RUNS:-3}
BIN=build/bin
EX=build/examples
. scripts/la-stack.sh
work=$(mktemp -d /tmp/la-wr.XXXXXX)
pids=()

cleanup() {
  la_stack_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "bench-whatif-rebalance: $*" >&2; exit 1; }

for f in "$BIN/la-globalagent" "$BIN/la-localagent" "$BIN/lactl" \
         "$EX/rebalance"; do
  [ -x "$f" ] || die "$f is missing: run make first"
done
command -v mpiexec >/dev/null || die "mpiexec is missing"
la_stack_start bench-whatif-rebalance "$BIN" "$work" || exit 1

# Field N (1-based) of the CSV row of METHOD in lactl whatif's output.
field() { # csv method n
  grep -E "^[0-9]+,$2," "$1" | head -1 | cut -d, -f"$3"
}

echo "== bench whatif-rebalance: $RUNS runs of rebalance on $NP ranks," \
  "40 steps, a repartition every 5; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %5s %5s %8s %8s %8s %8s %8s %8s %8s\n' run C S rb_pred \
  pred_rob next_rob after_rob pred_mea after_mea off_rob
res="$work/results"
: >"$res"
for run in $(seq "$RUNS"); do
  app="wr-$$-$run"
  LA_APP_ID=$app timeout 300 mpiexec -n "$NP" "$EX/rebalance" --steps 40 \
    --every 5 --write-partitions "$work/part.$run" >"$work/rb.$run.out" 2>&1 ||
    die "rebalance failed: $(tail -5 "$work/rb.$run.out")"
  grep -q "rebalancing every" "$work/rb.$run.out" ||
    die "rebalance did not rebalance: $(grep note "$work/rb.$run.out")"
  # every set stored before reading them
  for _ in $(seq 200); do
    open=$("$BIN/lactl" status --agent "$LA_GLOBAL" --json 2>/dev/null |
           grep -o '"sets_open": "[0-9]*"' | grep -o '[0-9]*')
    [ "${open:-1}" = 0 ] && break
    sleep 0.1
  done
  for pf in $(ls "$work" | grep -E "^part\.$run\.[0-9]+$" | sort -t. -k3 -n); do
    pf="$work/$pf"
    c=$(head -1 "$pf" | grep -oE '; cycle [0-9]+' | grep -oE '[0-9]+')
    s=$(head -1 "$pf" | grep -oE '; from cycle [0-9]+' | grep -oE '[0-9]+')
    rbp=$(grep -E "^rebalance after step $((s - 1)):" "$work/rb.$run.out" |
          grep -oE '[0-9.]+ predicted' | grep -oE '[0-9.]+')
    for k in robust measured; do
      "$BIN/lactl" whatif "$app" "$c" --partition "$pf" --weights "$k" \
        --horizon $((s - c)) --csv >"$work/p.$k.csv" 2>"$work/p.err" ||
        die "whatif $app $c --partition: $(cat "$work/p.err")"
      "$BIN/lactl" whatif "$app" "$s" --weights "$k" --method greedy --csv \
        >"$work/a.$k.csv" 2>"$work/a.err" ||
        die "whatif $app $s: $(cat "$work/a.err")"
    done
    pr=$(field "$work/p.robust.csv" file 6)
    nr=$(field "$work/p.robust.csv" file 14) # horizon_max: cycle S's score
    ar=$(field "$work/a.robust.csv" current 6)
    pm=$(field "$work/p.measured.csv" file 6)
    am=$(field "$work/a.measured.csv" current 6)
    off=$(awk -v p="$pr" -v a="$ar" 'BEGIN{printf "%.1f%%", 100*(p-a)/a}')
    printf '%-4s %5s %5s %8s %8.4f %8.4f %8.4f %8.4f %8.4f %8s\n' "$run" \
      "$c" "$s" "${rbp:--}" "$pr" "$nr" "$ar" "$pm" "$am" "$off"
    echo "$pr $nr $ar $pm $am" >>"$res"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '
  function med(a, n,   i, j, t) {
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function abs(x) { return x < 0 ? -x : x }
  { n++; r[n] = abs($1 - $3) / $3; q[n] = abs($2 - $3) / $3
    m[n] = abs($4 - $5) / $5
    if (r[n] <= 0.05) wr++
    if (m[n] <= 0.05) wm++
    if (r[n] > mr) mr = r[n]
    if (m[n] > mm) mm = m[n] }
  END {
    if (!n) { print "no repartition to compare"; exit 1 }
    printf "%d repartitions: |predicted - after| / after, robust: median " \
      "%.1f%%, largest %.1f%%, %d within 5%%; measured: median %.1f%%, " \
      "largest %.1f%%, %d within 5%%; the same partition on cycle S'"'"'s " \
      "robust weights against after: median %.1f%%\n",
      n, 100 * med(r, n), 100 * mr, wr, 100 * med(m, n), 100 * mm, wm,
      100 * med(q, n)
  }' "$res"
