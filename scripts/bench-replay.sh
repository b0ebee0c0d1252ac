#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-replay.sh: how closely la-replay reproduces a recorded run's
# per-rank totals (docs/balancing.md "Replaying a partition").
#
# Starts a GlobalAgent and a LocalAgent on loopback (scripts/la-stack.sh),
# records examples/heavy --n 13 --steps 20 (13^3 cells of about a
# microsecond) on 1 and on 2 ranks (REPLAY_RANKS), copies the store
# (VACUUM INTO) and replays each recording from the copy with la-replay
# --db (no GlobalAgent needed; LA profiling off) REPLAY_ROUNDS times (3)
# on as many ranks as recorded. Per run and rank: the CPU time the spin
# got / the recorded total, and the wall time / the recorded total; per
# run the recorded and the replayed (CPU) imbalance. Also the load average
# before and after: on a shared node the wall time holds the other
# processes' time. Writes build/bench/replay.json and a table.
set -u
cd "$(dirname "$0")/.."
BIN=build/bin
EX=build/examples
OUT=build/bench/replay.json
RANKS=${REPLAY_RANKS:-1 2}
ROUNDS=${REPLAY_ROUNDS:-3}
PY=/usr/bin/python3
echo "== bench replay"
for f in $BIN/la-globalagent $BIN/la-localagent $BIN/lactl $BIN/la-replay \
         $EX/heavy; do
  [ -x "$f" ] || { echo "bench-replay: $f missing: run make" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/la-bench-replay.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
. scripts/la-stack.sh
la_stack_start bench-replay "$BIN" "$work" || exit 1
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for p in $RANKS; do
  LA_APP_ID="bench-replay-$p" timeout 300 mpiexec -n "$p" $EX/heavy --n 13 \
    --steps 20 >"$work/rec.$p.out" 2>&1 ||
    { echo "recording on $p ranks failed:"; tail -5 "$work/rec.$p.out"; exit 1; }
done
# every cycle stored complete (the stitcher closes a set when its ranks are in)
for p in $RANKS; do
  for _ in $(seq 100); do
    n=$($BIN/lactl cycles "bench-replay-$p" 2>/dev/null | grep -c complete)
    [ "$n" -ge 20 ] && break
    sleep 0.2
  done
done
$PY -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute(\"VACUUM INTO '\"+sys.argv[2]+\"'\")" \
  "$work/la.db" "$work/copy.db" || { echo "bench-replay: cannot copy the store"; exit 1; }
rc=0
for p in $RANKS; do
  for r in $(seq "$ROUNDS"); do
    LA_GLOBAL=127.0.0.1:9 timeout 300 mpiexec -n "$p" $BIN/la-replay \
      "bench-replay-$p" --db "$work/copy.db" --no-la --quiet \
      >"$work/replay.$p.$r.out" 2>&1 ||
      { echo "replay on $p ranks failed:"; tail -5 "$work/replay.$p.$r.out"; rc=1; }
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
$PY - "$work" "$OUT" "$RANKS" "$ROUNDS" "$load0" "$load1" <<'PYEOF'
import json, re, sys
work, out, ranks, rounds, load0, load1 = sys.argv[1:]
res = {"app": "heavy --n 13 --steps 20", "rounds": int(rounds),
       "load_before": load0, "load_after": load1, "runs": []}
print(f"load average before {load0}, after {load1}")
print(f"{'ranks':>5} {'round':>5}  {'cpu/recorded per rank':<24} "
      f"{'wall/recorded per rank':<24} imbalance recorded -> cpu")
line = re.compile(r"rank (\d+): recorded ([\d.]+) ms, target ([\d.]+) ms, "
                  r"replayed ([\d.]+) ms \(x[\d.]+\), cpu ([\d.]+) ms")
for p in ranks.split():
    for r in range(1, int(rounds) + 1):
        try:
            text = open(f"{work}/replay.{p}.{r}.out").read()
        except OSError:
            continue
        rows = [m.groups() for m in line.finditer(text)]
        s = re.search(r"recorded_imbalance=([\d.]+) .*cpu_imbalance=([\d.]+)",
                      text)
        if not rows or not s:
            print(f"{p:>5} {r:>5}  no result")
            continue
        cpu = [float(c) / float(rec) for _, rec, _, _, c in rows]
        wall = [float(w) / float(rec) for _, rec, _, w, _ in rows]
        run = {"ranks": int(p), "round": r, "cpu_ratio": cpu,
               "wall_ratio": wall, "recorded_imbalance": float(s.group(1)),
               "cpu_imbalance": float(s.group(2))}
        res["runs"].append(run)
        print(f"{p:>5} {r:>5}  {' '.join(f'{x:.3f}' for x in cpu):<24} "
              f"{' '.join(f'{x:.3f}' for x in wall):<24} "
              f"{run['recorded_imbalance']:.3f} -> {run['cpu_imbalance']:.3f}")
json.dump(res, open(out, "w"), indent=1)
PYEOF
exit $rc
