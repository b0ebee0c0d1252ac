#!/usr/bin/env bash
# run-tests.sh: runs every test program of `make check` and prints a summary.
#
#   build/tests/test_*        unit and integration tests (cmocka), normal build
#   build/asan/tests/test_*   the same unit tests under ASan+UBSan
#
# Each program runs with a time limit; a cmocka test that cannot run here
# (no hardware counters, say) calls skip() and is counted as skipped. The
# closing line is "check: N passed, N failed, N skipped". Exits non-zero if
# anything failed. The suite leaves no process, segment or file behind: after
# the run it compares `ipcs` with what it saw before and fails on leftovers.
set -u
cd "$(dirname "$0")/.."
TIMEOUT=${LA_TEST_TIMEOUT:-300}
pass=0; fail=0; skip=0; failed_names=()

ipc_snapshot() { ipcs -m -s 2>/dev/null | awk '/^0x/ {print $2}' | sort; }
before=$(ipc_snapshot)

run_one() { # $1 = program, $2 = label
  local prog=$1 label=$2 out rc p f s
  out=$(mktemp)
  CMOCKA_MESSAGE_OUTPUT=stdout timeout -k 10 "$TIMEOUT" "$prog" >"$out" 2>&1
  rc=$?
  p=$(grep -cE '^\[       OK \]' "$out")
  s=$(grep -E '^\[  SKIPPED \] [A-Za-z_]' "$out" | sort -u | wc -l)
  f=$(grep -E '^\[  FAILED  \] [A-Za-z_]' "$out" | sort -u | wc -l)
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  if [ $rc -ne 0 ] || [ "$f" -ne 0 ]; then
    failed_names+=("$label"); echo "---- $label FAILED (exit $rc) ----"; cat "$out"
  else
    printf '  %-40s %3d passed %3d skipped\n' "$label" "$p" "$s"
    grep -E '^skip:' "$out" | sort -u | sed 's/^/      /' || true
  fi
  rm -f "$out"
}

echo "== unit and integration tests"
for t in build/tests/test_*; do [ -x "$t" ] && run_one "$t" "$(basename "$t")"; done
if [ -d build/asan/tests ]; then
  echo "== the same under ASan+UBSan"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  for t in build/asan/tests/test_*; do
    [ -x "$t" ] && run_one "$t" "asan/$(basename "$t")"
  done
fi

after=$(ipc_snapshot)
leaked=$(comm -13 <(echo "$before") <(echo "$after") | grep -v '^$' || true)
if [ -n "$leaked" ]; then
  echo "---- IPC objects left behind by the tests: $(echo $leaked) ----"
  ipcs -m -s; fail=$((fail + 1)); failed_names+=("ipc-leak")
fi
for d in la-localagent la-globalagent; do
  if pgrep -x "$d" >/dev/null 2>&1; then
    echo "---- $d still running after the tests ----"; fail=$((fail + 1))
  fi
done

[ ${#failed_names[@]} -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
