#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-idiom.sh: `make bench-idiom`: what the unprofiled-steps idiom
# (LA_PROFILED, la.h) costs when LA is off, in instructions executed
# (valgrind's cachegrind: deterministic, unlike timings on a shared VM).
#   - bench/idiom_app.c built three ways: no LA at all, LA_PROFILED with a
#     `static inline` kernel, LA_PROFILED with LA_ALWAYS_INLINE; each run
#     with LA_DISABLE=1;
#   - examples/wavetoy with LA_DISABLE=1 against its own --no-la loop.
# Writes build/bench/idiom.json and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench/idiom.json
mkdir -p build/bench
if ! command -v valgrind >/dev/null; then
  echo "bench-idiom: valgrind not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CC=${CC:-cc}
N=${LA_BENCH_IDIOM_N:-32}
STEPS=${LA_BENCH_IDIOM_STEPS:-20}

# Instructions executed by "$@" (cachegrind's I refs).
irefs() {
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
    "$@" 2>&1 >/dev/null | awk '/I *refs:/ { gsub(",", "", $NF); print $NF }'
}

declare -A ir
for v in PLAIN INLINE ALWAYS; do
  "$CC" -std=c11 -O2 -Ibuild/include -Ilibla -DIDIOM_$v -o "$tmp/idiom_$v" \
    bench/idiom_app.c build/lib/libla.a -lprotobuf-c -ldl -lpthread -lm
  ir[$v]=$(LA_DISABLE=1 irefs "$tmp/idiom_$v" "$N" "$STEPS")
  sum=$(LA_DISABLE=1 "$tmp/idiom_$v" "$N" "$STEPS")
  [ "$sum" = "$(LA_DISABLE=1 "$tmp/idiom_PLAIN" "$N" "$STEPS")" ] ||
    { echo "bench-idiom: $v changed the result: $sum" >&2; exit 1; }
done
wt_la=$(LA_DISABLE=1 irefs build/examples/wavetoy --n "$N" --steps "$STEPS")
wt_no=$(irefs build/examples/wavetoy --no-la --n "$N" --steps "$STEPS")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.2f%%", (a / b - 1) * 100 }'; }
printf 'Instructions executed with LA off (LA_DISABLE=1), %s^3 cells, %s steps\n' "$N" "$STEPS"
printf '  %-44s %15s %10s\n' "program" "instructions" "vs no LA"
printf '  %-44s %15s %10s\n' "idiom_app, no LA" "${ir[PLAIN]}" "-"
printf '  %-44s %15s %10s\n' "idiom_app, LA_PROFILED + static inline" "${ir[INLINE]}" "$(ratio "${ir[INLINE]}" "${ir[PLAIN]}")"
printf '  %-44s %15s %10s\n' "idiom_app, LA_PROFILED + LA_ALWAYS_INLINE" "${ir[ALWAYS]}" "$(ratio "${ir[ALWAYS]}" "${ir[PLAIN]}")"
printf '  %-44s %15s %10s\n' "wavetoy --no-la" "$wt_no" "-"
printf '  %-44s %15s %10s\n' "wavetoy, LA_DISABLE=1" "$wt_la" "$(ratio "$wt_la" "$wt_no")"
cat > "$out" <<JSON
{"benchmark": "idiom", "n": $N, "steps": $STEPS, "compiler": "$($CC --version | head -1)",
 "idiom_app": {"plain": ${ir[PLAIN]}, "static_inline": ${ir[INLINE]}, "always_inline": ${ir[ALWAYS]}},
 "wavetoy": {"no_la": $wt_no, "la_disabled": $wt_la}}
JSON
echo "wrote $out"
