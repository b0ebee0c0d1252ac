#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run-bench.sh NAME|all: runs scripts/bench-NAME.sh when it exists, else
# build/bench/bench_NAME (each writes build/bench/NAME.json and prints a
# table), or every benchmark in turn.
set -u
cd "$(dirname "$0")/.."
mkdir -p build/bench
names=()
if [ "${1:-all}" = all ]; then
  for b in build/bench/bench_*; do [ -x "$b" ] && names+=("${b##*/bench_}"); done
  for s in scripts/bench-*.sh; do
    n=${s##*/bench-}; n=${n%.sh}
    [[ " ${names[*]} " == *" $n "* ]] || names+=("$n")
  done
else
  names=("$1")
fi
rc=0
for n in "${names[@]}"; do
  if [ -x "scripts/bench-$n.sh" ]; then
    bash "scripts/bench-$n.sh" || rc=1
  elif [ -x "build/bench/bench_$n" ]; then
    echo "== bench $n"
    "build/bench/bench_$n" "build/bench/$n.json" || rc=1
  else
    echo "run-bench: no benchmark named '$n'" >&2; rc=1
  fi
done
exit $rc
