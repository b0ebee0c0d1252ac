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
# Programs run in parallel, LA_TEST_JOBS at a time (default: the number of
# online CPUs; 1 runs them one by one). The longest run first, by the time
# each took last time here (build/test-times, rewritten after every run) or
# else by the static estimate in tests/test-times, so the run does not end
# on a long program started late. The programs of SERIAL_TESTS (timing-
# sensitive: see there) never run two at a time; those of ALONE_TESTS run
# one by one at the end, with nothing beside them. A program's output is
# kept together and printed when it ends: one line with its counts and its
# wall time, or, when it failed, its whole output.
#
# Each program runs with a time limit (LA_TEST_TIMEOUT, 300 s); a cmocka
# test that cannot run here (no hardware counters, say) calls skip() and is
# counted as skipped. The closing line is "check: N passed, N failed, N
# skipped"; exits non-zero if anything failed. Arguments, if any, are globs
# of program labels to run (e.g. 'test_libla' 'asan/*'); default: all.
#
# Every program is accounted for on its own, never by looking machine-wide
# (other users' jobs, a deployed LA and the other programs of this run may
# run on the same node):
#  - processes: it runs as the leader of a new session (setsid); whatever
#    of that session still runs after it exited is reported and killed.
#  - SysV IPC: where permitted (root, CAP_SYS_ADMIN) it runs in a fresh IPC
#    namespace (unshare --ipc) and every object left in it is a leak; else
#    objects of our uid created (ctime) while it ran are counted, which can
#    blame a concurrent LA job of the same user (said in the message); with
#    more than one job at a time that check is made once, for the whole
#    run, at its end (the programs of the run are each other's concurrent
#    jobs).
#  - sanitizer reports of the daemons it started: la_test_daemon fails the
#    program itself; reports copied to LA_TEST_REPORT_DIR or left in a log
#    under its private TMPDIR are found here too.
#  - files: it gets a private TMPDIR, removed afterwards (leftovers are
#    listed).
#  - ports: the tests' daemons listen on ephemeral loopback ports
#    (port 0, the port read back from the daemon's port file).
set -u
cd "$(dirname "$0")/.."
TIMEOUT=${LA_TEST_TIMEOUT:-300}
JOBS=${LA_TEST_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
case $JOBS in '' | *[!0-9]* | 0) echo "run-tests: LA_TEST_JOBS must be a positive integer, not '$JOBS'" >&2; exit 2 ;; esac
TSAN_TESTS=${TSAN_TESTS:-"test_localagent test_globalagent test_ground_truth test_metrics test_durability test_bigset"}
FUZZ_CHECK_RUNS=${FUZZ_CHECK_RUNS:-20000}
FUZZ_CHECK_SECONDS=${FUZZ_CHECK_SECONDS:-8}
SAN_MARKERS='ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|FATAL: ThreadSanitizer|runtime error:|SUMMARY: UndefinedBehaviorSanitizer'
# Timing-sensitive programs, never two at a time (in any build: asan/X and
# tsan/X count as X); they still run beside the others:
#  - test_interference, test_fidelity: pin themselves and a CPU hog to one
#    CPU and check what the probe sees of the preemption; a second pinned
#    program on the same CPU changes the share they measure;
#  - test_injob_weights (its Zoltan case), test_examples, test_mpi_appid:
#    MPI examples with 4 ranks on mpiexec, the first checking balance
#    quality over the rebalances of a run;
#  - test_placement: reads the nice value and CPU set of the LocalAgent's
#    worker threads while they compact;
#  - test_compact_fastpath, test_whatif: long CPU-bound runs (the AVX2 and
#    scalar engines over every series; the what-if model over large
#    meshes) that would otherwise pile up beside the ones above.
SERIAL_TESTS=${SERIAL_TESTS:-"test_interference test_fidelity test_injob_weights test_examples test_mpi_appid test_placement test_compact_fastpath test_whatif"}
# Programs run alone, one by one, after all the others (in any build):
# their claim needs the daemons they start to get a CPU when they need it,
# which two programs at a time on two CPUs do not leave them:
#  - test_libla: its backlog test asserts the application never waits for
#    a buffer while the LocalAgent drops the cycles it cannot keep up with
#    (the agent must still run to take each notification); asan/test_libla
#    waited once beside another program at load 8 on two CPUs.
ALONE_TESTS=${ALONE_TESTS:-"test_libla"}
# Not run under ASan: they repeat the normal tree's work exactly. Their
# cmocka driver is all that is sanitized: test_install and test_layering
# install or read build/ (the normal tree: make install and depgraph.py
# over its objects), not build/asan; test_link installs build/ too, and its
# documented-line programs only register and send one cycle to the
# daemons, which asan/test_libla and asan/test_fortran do against the same
# sanitized daemons, and much more.
ASAN_SKIP="test_install test_link test_layering"
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
  [ $ipc_mode = uid ] && [ "$JOBS" -eq 1 ] && before=$(ipc_ours_since 0 | sort)
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
  acct=""; note=""
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
  elif [ "$JOBS" -eq 1 ]; then
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
  [ -n "$stray" ] && note="  note: left in its TMPDIR (removed): $(echo $stray | sed "s|$d/tmp/||g")"
  rm -rf "$d"
}

# One program: runs it (account_run) and writes what it printed to $o.out
# and its counts to $o.res ("passed failed skipped"), the last file written.
run_one() { # $1 = output prefix, $2 = label, then the command
  local o=$1 label=$2; shift 2
  local out=$o.log p f s d t0 secs
  d=$o.run
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
  {
    [ -n "$note" ] && echo "$note"
    if [ $rc -ne 0 ] || [ "$f" -ne 0 ]; then
      echo "---- $label FAILED (exit $rc, ${secs} s) ----"; cat "$out"
      echo "---- end of $label ----"
    else
      printf '  %-40s %3d passed %3d skipped %7s s\n' "$label" "$p" "$s" "$secs"
      grep -E '^skip:' "$out" | sort -u | sed 's/^/      /' || true
    fi
  } >"$o.out"
  echo "$secs" >"$o.secs"
  echo "$p $f $s" >"$o.res.tmp" && mv "$o.res.tmp" "$o.res"
}

# One fuzz target: seeds from gen_seeds, FUZZ_CHECK_RUNS inputs (or
# FUZZ_CHECK_SECONDS, whichever ends first). Counts as one test.
fuzz_one() { # $1 = output prefix, $2 = label, $3 = target binary
  local o=$1 label=$2 t=$3 out=$1.log corpus art t0 secs
  corpus=$work/corpus/$(basename "$t")
  art=$o.art/
  mkdir -p "$corpus" "$art"
  t0=$(date +%s.%N)
  account_run "$o.run" "$t" -runs="$FUZZ_CHECK_RUNS" \
    -max_total_time="$FUZZ_CHECK_SECONDS" -timeout=20 -rss_limit_mb=1024 -print_funcs=0 \
    -artifact_prefix="$art" "$corpus" >"$out" 2>&1
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  local done_line
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$out" | tail -1)
  {
    [ -n "$note" ] && echo "$note"
    if [ $rc -eq 0 ] && [ -z "$acct" ] && [ -n "$done_line" ]; then
      printf '  %-40s %s\n' "$label" "$(echo "$done_line" | awk '{print $1, $3, $4, $5, $6}')"
      echo "1 0 0" >"$o.res.tmp"
    else
      echo "---- $label FAILED (exit $rc) ----"; tail -60 "$out"; printf '%s' "$acct"
      ls "$art"crash-* "$art"leak-* "$art"timeout-* 2>/dev/null \
        | sed 's/^/  reproducer (copy it to tests\/fuzz\/crashes\/): /'
      echo "---- end of $label ----"
      echo "0 1 0" >"$o.res.tmp"
    fi
  } >"$o.out"
  echo "$secs" >"$o.secs"
  mv "$o.res.tmp" "$o.res"
}

# ---- the list of programs: label, kind, path (one task each)
labels=(); kinds=(); paths=()
add() { # $1 = label, $2 = kind, $3 = path
  wanted "$1" || return 0
  labels+=("$1"); kinds+=("$2"); paths+=("$3")
}
in_list() { # $1 = word, $2 = space-separated list
  case " $2 " in *" $1 "*) return 0 ;; esac
  return 1
}
for t in build/tests/test_*; do [ -x "$t" ] && add "$(basename "$t")" unit "$t"; done
for t in tests/sh/test_*.sh; do
  [ -f "$t" ] && add "$(basename "$t" .sh)" sh "$t"
done
if [ -d build/asan/tests ]; then
  for t in build/asan/tests/test_*; do
    [ -x "$t" ] || continue
    in_list "$(basename "$t")" "$ASAN_SKIP" && continue
    add "asan/$(basename "$t")" asan "$t"
  done
fi
if [ -x build/tsan/bin/la-localagent ] || [ -x build/tsan/bin/la-globalagent ]; then
  for n in $TSAN_TESTS; do
    [ -x "build/tests/$n" ] && add "tsan/$n" tsan "build/tests/$n"
  done
fi
fuzz_note=""
if [ -x build/fuzz/bin/gen_seeds ]; then
  nf=${#labels[@]}
  for t in build/fuzz/bin/fuzz_*; do [ -x "$t" ] && add "fuzz/$(basename "$t")" fuzz "$t"; done
  if [ ${#labels[@]} -gt "$nf" ] && ! build/fuzz/bin/gen_seeds "$work/corpus" >/dev/null; then
    fail=$((fail + 1)); failed_names+=("fuzz/gen_seeds")
    labels=("${labels[@]:0:$nf}"); kinds=("${kinds[@]:0:$nf}"); paths=("${paths[@]:0:$nf}")
  fi
  fuzz_note=", fuzz/ $FUZZ_CHECK_RUNS inputs or ${FUZZ_CHECK_SECONDS} s each"
fi
n=${#labels[@]}

# ---- the order: the longest first, by the last recorded time of each
# label (build/test-times), else the static estimate (tests/test-times),
# else 30 s (a new program: started early rather than last).
TIMES_FILE=${LA_TEST_TIMES:-build/test-times}
order=()
if [ "$n" -gt 0 ]; then
  mapfile -t order < <(printf '%s\n' "${labels[@]}" |
    awk -v deflt=30 -v st=tests/test-times -v rf="$TIMES_FILE" '
      BEGIN { while ((getline l < st) > 0) { split(l, a, " "); if (l !~ /^#/ && a[2] != "") s[a[1]] = a[2] }
              while ((getline l < rf) > 0) { split(l, a, " "); if (l !~ /^#/ && a[2] != "") r[a[1]] = a[2] } }
      { e = ($1 in r) ? r[$1] : ($1 in s) ? s[$1] : deflt; print e, NR - 1 }' |
    sort -k1,1gr -k2,2n | awk '{print $2}')
fi

is_serial() { # $1 = label
  local b=${1#*/}
  in_list "$b" "$SERIAL_TESTS"
}
is_alone() { # $1 = label
  local b=${1#*/}
  in_list "$b" "$ALONE_TESTS"
}
n_alone=0
for i in "${order[@]}"; do is_alone "${labels[$i]}" && n_alone=$((n_alone + 1)); done

# Runs task $1 (in a background subshell: its exports stay there).
start_task() { # $1 = index
  local i=$1 o=$work/t$1 label=${labels[$1]} p=${paths[$1]}
  case ${kinds[$i]} in
    asan | fuzz)
      export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
      export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ;;
    tsan)
      export LA_TEST_BIN_DIR=$PWD/build/tsan/bin
      export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1" ;;
  esac
  case ${kinds[$i]} in
    sh) run_one "$o" "$label" bash "$p" ;;
    fuzz) fuzz_one "$o" "$label" "$p" ;;
    *) run_one "$o" "$label" "$p" ;;
  esac
}

echo "== $n programs, $JOBS at a time, the longest first (IPC accounting: $ipc_mode)"
echo "   normal build and tests/sh; asan/ with daemons and lactl from build/asan/bin;"
echo "   tsan/ against build/tsan/bin$fuzz_note"
run_start=$(date +%s)
declare -A running=()   # index -> 1
serial_busy=""          # index of the running SERIAL_TESTS program
pending=("${order[@]}")
: >"$work/times"
collect() { # prints and counts every finished task
  local i r
  for i in "${!running[@]}"; do
    [ -f "$work/t$i.res" ] || continue
    wait "${running[$i]}" 2>/dev/null
    unset "running[$i]"
    [ "$serial_busy" = "$i" ] && serial_busy=""
    cat "$work/t$i.out"
    read -r r_p r_f r_s <"$work/t$i.res"
    pass=$((pass + r_p)); fail=$((fail + r_f)); skip=$((skip + r_s))
    [ "$r_f" -ne 0 ] && failed_names+=("${labels[$i]}")
    echo "${labels[$i]} $(cat "$work/t$i.secs")" >>"$work/times"
    rm -rf "$work/t$i".*
  done
}
while [ ${#pending[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
  # start what may start: the first pending in order, skipping a serial
  # program while another one runs, and the ALONE_TESTS until nothing else
  # is left or running
  while [ ${#running[@]} -lt "$JOBS" ] && [ ${#pending[@]} -gt 0 ]; do
    pick=-1
    for k in "${!pending[@]}"; do
      i=${pending[$k]}
      if is_alone "${labels[$i]}"; then
        [ ${#running[@]} -eq 0 ] && [ ${#pending[@]} -eq "$n_alone" ] || continue
        n_alone=$((n_alone - 1))
      elif is_serial "${labels[$i]}"; then
        [ -n "$serial_busy" ] && continue
        serial_busy=$i
      fi
      pick=$k; break
    done
    [ "$pick" -lt 0 ] && break
    i=${pending[$pick]}
    unset "pending[$pick]"; pending=("${pending[@]}")
    start_task "$i" &
    running[$i]=$!
    is_alone "${labels[$i]}" && break
  done
  wait -n 2>/dev/null
  collect
done

if [ $ipc_mode = uid ] && [ "$JOBS" -gt 1 ]; then
  left=$(ipc_ours_since "$run_start")
  if [ -n "$left" ]; then
    echo "---- SysV IPC objects of uid $uid created during the run and still there (or by a concurrent job of this user): $(echo $left)"
    fail=$((fail + 1)); failed_names+=("ipc-leftovers")
  fi
fi

# the times of this run replace the recorded ones of the same labels
if [ -s "$work/times" ] && mkdir -p "$(dirname "$TIMES_FILE")" 2>/dev/null; then
  { cat "$TIMES_FILE" 2>/dev/null; cat "$work/times"; } |
    awk 'NF == 2 { t[$1] = $2 } END { for (k in t) print k, t[k] }' |
    sort >"$work/times.new" &&
    cp "$work/times.new" "$TIMES_FILE" 2>/dev/null
fi

echo "== wall time $(( $(date +%s) - run_start )) s"
[ ${#failed_names[@]} -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
