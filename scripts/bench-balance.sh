#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-balance.sh: balancing inside the job against the central path.
#
# Starts a GlobalAgent and a LocalAgent on loopback (fresh secret, store in
# a temporary directory), then at 4, 8 and 16 ranks (BALANCE_RANKS) runs
#   in-job   examples/zoltan_balance: every rank reads its own weights
#            (LA_weights) and the ranks partition in parallel (Zoltan RCB,
#            or the example's slices where it was built without Zoltan);
#   central  examples/rebalance: rank 0 fetches the Trace-Set from the
#            GlobalAgent (libla_client) and runs serial METIS;
# on the same mesh and cost model (64 x 64 cells, a moving hot spot of 20x
# cost), rebalancing every 5 of 40 steps. Per rebalance it takes the
# imbalance (max / mean of the ranks' work units, the exact cost model) of
# the step before the decision and of the step after it, and the decision
# time: from the end of the step to the partition known (in-job: waiting
# for the cycle's weights + LA_weights + the partitioner, max over the
# ranks; central: getting the Trace-Set + METIS on rank 0). Medians over the
# rebalances go to build/bench/balance.json and a table. The node is
# oversubscribed at 8 and 16 ranks (2 cores): that is part of the test.
set -u
cd "$(dirname "$0")/.."
BIN=build/bin
EX=build/examples
OUT=build/bench/balance.json
RANKS=${BALANCE_RANKS:-4 8 16}
STEPS=${BALANCE_STEPS:-40}
EVERY=${BALANCE_EVERY:-5}
PY=/usr/bin/python3
echo "== bench balance"
for f in $BIN/la-globalagent $BIN/la-localagent $BIN/lactl $EX/zoltan_balance \
         $EX/rebalance; do
  [ -x "$f" ] || { echo "bench-balance: $f missing: run make" >&2; exit 1; }
done
launcher=$(cat $EX/zoltan_balance.mpiexec 2>/dev/null || echo mpiexec)
extra=""
if [[ $launcher == *openmpi* ]]; then
  export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
  [ "$(id -u)" = 0 ] && extra="--allow-run-as-root"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/la-bench-balance.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
. scripts/la-stack.sh
la_stack_start bench-balance "$BIN" "$work" || exit 1
rc=0
for p in $RANKS; do
  LA_APP_ID="bench-injob-$p" timeout 300 $launcher $extra -n "$p" \
    $EX/zoltan_balance --steps "$STEPS" --every "$EVERY" \
    >"$work/injob.$p.out" 2>&1 || { echo "in-job at $p ranks failed:"; tail -5 "$work/injob.$p.out"; rc=1; }
  LA_APP_ID="bench-central-$p" timeout 300 mpiexec -n "$p" \
    $EX/rebalance --steps "$STEPS" --every "$EVERY" \
    >"$work/central.$p.out" 2>&1 || { echo "central at $p ranks failed:"; tail -5 "$work/central.$p.out"; rc=1; }
done
$PY - "$work" "$OUT" "$RANKS" "$STEPS" "$EVERY" <<'EOF'
import json, re, statistics, sys, platform, os
work, out, ranks, steps, every = sys.argv[1:6]
def med(v):
    return round(statistics.median(v), 4) if v else None
def units(lines):
    u = {}
    for l in lines:
        m = re.match(r"step +(\d+): imbalance ([\d.]+)( measured.*?, ([\d.]+) by work units| by work units)", l)
        if m:
            u[int(m.group(1))] = float(m.group(4) or m.group(2))
    return u
rows = []
for p in ranks.split():
    row = {"ranks": int(p)}
    for path in ("injob", "central"):
        try:
            lines = open(f"{work}/{path}.{p}.out").read().splitlines()
        except OSError:
            lines = []
        u = units(lines)
        bef, aft, dec, part = [], [], [], []
        method = ""
        for l in lines:
            if path == "injob":
                m0 = re.match(r"zoltan_balance: .* steps, (.*) every", l)
                if m0: method = m0.group(1)
                m = re.match(r"rebalance step (\d+): imbalance before .* after [\d.]+ \(weights of generation \d+ after ([\d.]+) ms, decision ([\d.]+) ms", l)
                if m:
                    s = int(m.group(1))
                    dec.append(float(m.group(2)) + float(m.group(3)))
                    part.append(float(m.group(3)))
            else:
                method = "METIS on rank 0 (Trace-Set from the GlobalAgent)"
                m = re.match(r"rebalance after step (\d+): .*\((\d+) ms to get.*METIS edge cut \d+ \(([\d.]+) ms\)", l)
                if m:
                    s = int(m.group(1))
                    dec.append(float(m.group(2)) + float(m.group(3)))
                    part.append(float(m.group(3)))
            if m and s in u and s + 1 in u:
                bef.append(u[s]); aft.append(u[s + 1])
        row[path] = {"method": method, "rebalances": len(dec),
                     "imbalance_before": med(bef), "imbalance_after": med(aft),
                     "decision_ms": med(dec), "partitioner_ms": med(part)}
    rows.append(row)
res = {"benchmark": "balance", "mesh": "64x64", "steps": int(steps),
       "every": int(every), "cores": os.cpu_count(),
       "host": platform.node(),
       "definition": "medians over the rebalances; imbalance = max/mean of "
       "the ranks' work units at the step before the decision and the step "
       "after it; decision = end of the step to the partition known "
       "(in-job: weights wait + LA_weights + partitioner, max over ranks; "
       "central: Trace-Set fetch + METIS)", "results": rows}
json.dump(res, open(out, "w"), indent=2)
print(f"{'ranks':>5} | {'path':<8} | {'rebal':>5} | {'imb before':>10} | "
      f"{'imb after':>9} | {'decision ms':>11} | {'partitioner ms':>14} | method")
for r in rows:
    for path in ("injob", "central"):
        d = r[path]
        f = lambda v, w: f"{v:>{w}}" if v is not None else f"{'-':>{w}}"
        print(f"{r['ranks']:>5} | {path:<8} | {d['rebalances']:>5} | "
              f"{f(d['imbalance_before'],10)} | {f(d['imbalance_after'],9)} | "
              f"{f(d['decision_ms'],11)} | {f(d['partitioner_ms'],14)} | {d['method']}")
print(f"written {out}")
EOF
exit $rc
