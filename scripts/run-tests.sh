#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# run-tests.sh: runs every test program of `make check` and prints a summary.
#
#   build/tests/test_*        unit and integration tests (cmocka), normal build
#   tests/sh/test_*.sh        shell tests of the built tree (label test_X),
#                             reporting as cmocka does (tests/sh/report.sh)
#   build/asan/tests/test_*   the same under ASan+UBSan; their daemons and
#                             lactl come from build/asan/bin (sanitized too)
#   tsan/test_*               the daemons' integration tests (TSAN_TESTS)
#                             against build/tsan/bin (ThreadSanitizer daemons)
#   build/fuzz/bin/fuzz_*     each fuzz target for FUZZ_CHECK_RUNS inputs
#
# Each program runs with a time limit (LA_TEST_TIMEOUT, 300 s); a cmocka
# test that cannot run here (no hardware counters, say) calls skip() and is
# counted as skipped. The closing line is "check: N passed, N failed, N
# skipped"; exits non-zero if anything failed. Arguments, if any, are globs
# of program labels to run (e.g. 'test_libla' 'asan/*'); default: all.
#
# Every program is accounted for on its own, never by looking machine-wide
# (other users' jobs and a deployed LA may run on the same node):
#  - processes: it runs as the leader of a new session (setsid); whatever
#    of that session still runs after it exited is reported and killed.
#  - SysV IPC: where permitted (root, CAP_SYS_ADMIN) it runs in a fresh IPC
#    namespace (unshare --ipc) and every object left in it is a leak; else
#    objects of our uid created (ctime) while it ran are counted, which can
#    blame a concurrent LA job of the same user (said in the message).
#  - sanitizer reports of the daemons it started: la_test_daemon fails the
#    program itself; reports copied to LA_TEST_REPORT_DIR or left in a log
#    under its private TMPDIR are found here too.
#  - files: it gets a private TMPDIR, removed afterwards (leftovers are
#    listed).
set -u
cd "$(dirname "$0")/.."
TIMEOUT=${LA_TEST_TIMEOUT:-300}
TSAN_TESTS=${TSAN_TESTS:-"test_localagent test_globalagent test_ground_truth test_metrics test_durability test_bigset"}
FUZZ_CHECK_RUNS=${FUZZ_CHECK_RUNS:-20000}
FUZZ_CHECK_SECONDS=${FUZZ_CHECK_SECONDS:-8}
SAN_MARKERS='ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|FATAL: ThreadSanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer'
pass=0; fail=0; skip=0; failed_names=()
filters=("$@")

work=$(mktemp -d "${TMPDIR:-/tmp}/la-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
# Traversable (not listable) by other uids: tests run a daemon as another
# user (least privilege) in a directory they open to it.
chmod 711 "$work"

if unshare --ipc true 2>/dev/null; then
  ipc_mode=namespace
else
  ipc_mode=uid
fi
uid=$(id -u)

wanted() { # $1 = label
  [ ${#filters[@]} -eq 0 ] && return 0
  local f
  for f in "${filters[@]}"; do
    # shellcheck disable=SC2053
    [[ $1 == $f ]] && return 0
  done
  return 1
}

# Ids of SysV objects of our uid, "shm ID" / "sem ID", created at or after
# epoch second $1 (fallback mode only).
ipc_ours_since() {
  awk -v u="$uid" -v t="$1" 'NR > 1 && $10 == u && $14 >= t {print "shm", $2}' \
    /proc/sysvipc/shm 2>/dev/null
  awk -v u="$uid" -v t="$1" 'NR > 1 && $7 == u && $10 >= t {print "sem", $2}' \
    /proc/sysvipc/sem 2>/dev/null
}

# Runs "$@" in a new session (and IPC namespace when permitted) with a
# private TMPDIR; sets acct (problems found, one per line) and rc.
account_run() { # $1 = dir for this program's files, then the command
  local d=$1; shift
  mkdir -p "$d/tmp" "$d/reports"
  chmod 711 "$d" "$d/tmp"
  local start; start=$(date +%s)
  local before=""
  [ $ipc_mode = uid ] && before=$(ipc_ours_since 0 | sort)
  local inner='echo $$ >"$1"; ipcf=$2; shift 2; "$@"; rc=$?
    if [ -n "$ipcf" ]; then
      awk "NR > 1 {print \"shm\", \$2, \"cpid\", \$5, \"bytes\", \$4}" /proc/sysvipc/shm
      awk "NR > 1 {print \"sem\", \$2, \"nsems\", \$4}" /proc/sysvipc/sem
    fi >"${ipcf:-/dev/null}"
    exit $rc'
  local ns=() ipcf=""
  if [ $ipc_mode = namespace ]; then ns=(unshare --ipc --); ipcf=$d/ipc; fi
  TMPDIR=$d/tmp LA_TEST_REPORT_DIR=$d/reports \
    setsid -w "${ns[@]}" bash -c "$inner" _ "$d/sid" "$ipcf" "$@"
  rc=$?
  acct=""
  local sid; sid=$(cat "$d/sid" 2>/dev/null || echo 0)
  if [ "$sid" -gt 1 ]; then
    local left i
    # helpers (a symbolizer reading a closed pipe) may take a moment to go
    for i in $(seq 1 20); do
      left=$(ps -e -o sid=,pid=,comm= | awk -v s="$sid" '$1 == s {print $2, $3}')
      [ -z "$left" ] && break
      sleep 0.1
    done
    if [ -n "$left" ]; then
      acct+="processes still running after it: $(echo $left)"$'\n'
      local p
      for p in $(echo "$left" | awk '{print $1}'); do kill -KILL "$p" 2>/dev/null; done
    fi
  fi
  if [ $ipc_mode = namespace ]; then
    [ -s "$d/ipc" ] && acct+="SysV IPC objects left in its namespace: $(tr '\n' ';' <"$d/ipc")"$'\n'
  else
    local new
    new=$(comm -13 <(echo "$before") <(ipc_ours_since "$start" | sort) | grep -v '^$')
    [ -n "$new" ] && acct+="SysV IPC objects of uid $uid created while it ran (or by a concurrent job of this user): $(echo $new)"$'\n'
  fi
  local f
  for f in "$d"/reports/*; do
    [ -e "$f" ] && acct+="sanitizer report of a daemon: $(grep -m1 -E "$SAN_MARKERS" "$f")"$'\n'
  done
  while IFS= read -r f; do
    acct+="sanitizer report in $(basename "$f"): $(grep -m1 -E "$SAN_MARKERS" "$f")"$'\n'
  done < <(grep -rlE "$SAN_MARKERS" "$d/tmp" 2>/dev/null)
  local stray
  stray=$(find "$d/tmp" -mindepth 1 -maxdepth 1 2>/dev/null | head -5)
  [ -n "$stray" ] && echo "  note: left in its TMPDIR (removed): $(echo $stray | sed "s|$d/tmp/||g")"
  rm -rf "$d"
}

run_one() { # $1 = label, then the command
  local label=$1; shift
  wanted "$label" || return 0
  local out=$work/out p f s d t0 secs
  d=$work/run
  t0=$(date +%s.%N)
  account_run "$d" env CMOCKA_MESSAGE_OUTPUT=stdout \
    timeout -k 10 "$TIMEOUT" "$@" >"$out" 2>&1
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  # an OK line may follow a child program's output without a newline
  p=$(grep -oE '\[       OK \] [A-Za-z_]' "$out" | wc -l)
  s=$(grep -E '^\[  SKIPPED \] [A-Za-z_]' "$out" | sort -u | wc -l)
  f=$(grep -E '^\[  FAILED  \] [A-Za-z_]' "$out" | sort -u | wc -l)
  if [ -n "$acct" ]; then printf '%s' "$acct" >>"$out"; fi
  if { [ $rc -ne 0 ] || [ -n "$acct" ]; } && [ "$f" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  if [ $rc -ne 0 ] || [ "$f" -ne 0 ]; then
    failed_names+=("$label"); echo "---- $label FAILED (exit $rc, ${secs} s) ----"; cat "$out"
  else
    printf '  %-40s %3d passed %3d skipped %7s s\n' "$label" "$p" "$s" "$secs"
    grep -E '^skip:' "$out" | sort -u | sed 's/^/      /' || true
  fi
}

# One fuzz target: seeds from gen_seeds, FUZZ_CHECK_RUNS inputs (or
# FUZZ_CHECK_SECONDS, whichever ends first). Counts as one test.
fuzz_one() { # $1 = target binary
  local t=$1 label="fuzz/$(basename "$1")" out=$work/out corpus
  wanted "$label" || return 0
  corpus=$work/corpus/$(basename "$t")
  mkdir -p "$corpus"
  account_run "$work/run" "$t" -runs="$FUZZ_CHECK_RUNS" \
    -max_total_time="$FUZZ_CHECK_SECONDS" -timeout=20 -rss_limit_mb=1024 -print_funcs=0 \
    -artifact_prefix="$work/" "$corpus" >"$out" 2>&1
  local done_line
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$out" | tail -1)
  if [ $rc -eq 0 ] && [ -z "$acct" ] && [ -n "$done_line" ]; then
    pass=$((pass + 1))
    printf '  %-40s %s\n' "$label" "$(echo "$done_line" | awk '{print $1, $3, $4, $5, $6}')"
  else
    fail=$((fail + 1)); failed_names+=("$label")
    echo "---- $label FAILED (exit $rc) ----"; tail -60 "$out"; printf '%s' "$acct"
    ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* 2>/dev/null \
      | sed 's/^/  reproducer (copy it to tests\/fuzz\/crashes\/): /'
  fi
}

echo "== unit and integration tests (IPC accounting: $ipc_mode)"
for t in build/tests/test_*; do [ -x "$t" ] && run_one "$(basename "$t")" "$t"; done
for t in tests/sh/test_*.sh; do
  [ -f "$t" ] && run_one "$(basename "$t" .sh)" bash "$t"
done

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
if [ -d build/asan/tests ] && { [ ${#filters[@]} -eq 0 ] ||
    printf '%s\n' "${filters[@]}" | grep -q '^asan/\|^\*'; }; then
  echo "== the same under ASan+UBSan (daemons and lactl from build/asan/bin)"
  for t in build/asan/tests/test_*; do
    [ -x "$t" ] && run_one "asan/$(basename "$t")" "$t"
  done
fi

if [ -x build/tsan/bin/la-localagent ] || [ -x build/tsan/bin/la-globalagent ]; then
  echo "== daemon tests against ThreadSanitizer daemons (build/tsan/bin)"
  for n in $TSAN_TESTS; do
    [ -x "build/tests/$n" ] || continue
    LA_TEST_BIN_DIR=$PWD/build/tsan/bin \
      TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1" \
      run_one "tsan/$n" "build/tests/$n"
  done
fi

if [ -x build/fuzz/bin/gen_seeds ]; then
  echo "== fuzz targets, $FUZZ_CHECK_RUNS inputs or ${FUZZ_CHECK_SECONDS} s each"
  if build/fuzz/bin/gen_seeds "$work/corpus" >/dev/null; then
    for t in build/fuzz/bin/fuzz_*; do [ -x "$t" ] && fuzz_one "$t"; done
  else
    fail=$((fail + 1)); failed_names+=("fuzz/gen_seeds")
  fi
fi

[ ${#failed_names[@]} -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
