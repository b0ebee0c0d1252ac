#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz/run.sh: the long fuzzing run of `make fuzz FUZZ_SECONDS=N`.
# Runs every target in build/fuzz/bin for N seconds (default 600) each, one
# after the other, on a corpus that persists in build/fuzz/corpus/<target>
# (seeded by gen_seeds, grown by every run). A crash, leak or timeout
# leaves its reproducer in build/fuzz/artifacts/ and makes the script exit
# non-zero; replay one with `build/fuzz/bin/fuzz_X FILE`. Prints, per
# target, libFuzzer's closing line: executions, coverage (cov: edges) and
# features (ft:). `make check` runs the targets briefly instead (see
# scripts/run-tests.sh); this script is not part of it.
set -u
cd "$(dirname "$0")/../.."
secs=${1:-600}
bin=build/fuzz/bin
[ -x $bin/gen_seeds ] || { echo "fuzz: build first (make fuzz-build)"; exit 1; }
mkdir -p build/fuzz/corpus build/fuzz/artifacts
$bin/gen_seeds build/fuzz/corpus || exit 1
status=0
for t in $bin/fuzz_*; do
  n=$(basename "$t")
  log=build/fuzz/$n.log
  echo "== $n: ${secs} s"
  "$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
    -print_funcs=0 -print_final_stats=1 \
    -artifact_prefix=build/fuzz/artifacts/"$n"- \
    build/fuzz/corpus/"$n" >"$log" 2>&1
  rc=$?
  grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1
  grep -E '^stat::number_of_executed_units' "$log"
  if [ $rc -ne 0 ]; then
    status=1
    echo "---- $n failed (exit $rc); reproducer(s):"
    ls build/fuzz/artifacts/"$n"-* 2>/dev/null
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5
  fi
done
exit $status
