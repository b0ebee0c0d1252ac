#!/usr/bin/env bash
# demo.sh: the README's first command (`make demo`), run after `make all`.
#
# Runs what exists of the pipeline and prints a short report:
#   1. the instrumented wavetoy example under mpiexec -n 4, with LA active and
#      with LA compiled out of the run (--no-la): same checksum, so LA never
#      changes results; LA says why it is not profiling when no agent runs;
#   2. the probe-cost benchmark (LA_startProbe+LA_stopProbe vs raw rdtsc);
#   3. the compaction of a synthetic per-element cost series by lactl compact.
# Later issues extend it to the full run through la-localagent and
# la-globalagent. Everything it creates lives in a temporary directory that is
# removed at exit, whatever happens.
set -u
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/la-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
np=${LA_DEMO_NP:-4}
ok=0

section() { printf '\n== %s\n' "$1"; }

section "1. wavetoy, $np MPI ranks, 48^3 cells, 30 steps"
if [ -x build/examples/wavetoy ] && command -v mpiexec >/dev/null; then
  LA_VERBOSE=1 timeout 120 mpiexec -n "$np" build/examples/wavetoy --n 48 \
    --steps 30 >"$work/la.out" 2>"$work/la.err"
  rc1=$?
  timeout 120 mpiexec -n "$np" build/examples/wavetoy --n 48 --steps 30 \
    --no-la >"$work/nola.out" 2>&1
  rc2=$?
  sed 's/^/   /' "$work/la.out"
  head -n 2 "$work/la.err" | sed 's/^/   stderr: /'
  c1=$(grep -i checksum "$work/la.out" | head -1)
  c2=$(grep -i checksum "$work/nola.out" | head -1)
  if [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ -n "$c1" ] && [ "$c1" = "$c2" ]; then
    echo "   -> exit 0 with and without LA, identical checksums: LA did not"
    echo "      change the results."
  else
    echo "   -> MISMATCH: exit $rc1/$rc2, '$c1' vs '$c2'"; ok=1
  fi
else
  echo "   (wavetoy or mpiexec missing)"; ok=1
fi

section "2. probe cost (10^5 elements, median of interleaved runs)"
if [ -x build/bench/bench_probe ]; then
  build/bench/bench_probe "$work/probe.json" | sed 's/^/   /' || ok=1
else
  echo "   (bench_probe missing)"; ok=1
fi

section "3. compaction of a synthetic mesh-cost series (10^5 elements)"
if [ -x build/bin/lactl ]; then
  awk 'BEGIN { srand(7); v = 1000; for (i = 0; i < 100000; i++) {
         if (i % 7000 == 0) v = 500 + int(rand() * 3000);
         x = v * (1 + 0.05 * sin(i / 50.0)) * (1 + 0.02 * (rand() - 0.5));
         if (rand() < 0.001) x *= 8;
         printf "%.3f\n", x } }' >"$work/series.txt"
  for spec in "polyline:cv=0.1" "maxerr:eps=0.05,relative" "lossless"; do
    echo "   --- lactl compact --spec $spec"
    build/bin/lactl compact --spec "$spec" "$work/series.txt" | sed 's/^/   /' \
      || ok=1
  done
else
  echo "   (lactl not built yet)"
fi

section "summary"
if [ $ok -eq 0 ]; then
  echo "   demo completed. The LocalAgent and GlobalAgent (issues 4 and 5) will"
  echo "   turn step 1 into a full profile: Trace-Sets, plots, rebalancing."
else
  echo "   demo finished with problems (see above)"
fi
exit $ok
