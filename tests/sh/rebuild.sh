#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# rebuild.sh: `make check-rebuild` (CI runs it, .ci/run): the build of a
# fresh clone does its work once.
#
# Clones this checkout's committed HEAD into a temporary directory and:
#   - `make -n demo` there names no test, benchmark or the zoltan_balance
#     example: `make demo` builds only what scripts/demo.sh runs;
#   - `make -j2 all` runs protoc-c once (two runs rewrite la.pb-c.h while
#     objects compile against it);
#   - a second `make all` has nothing to do (`make -q all`; else the
#     first lines `make -n all` would run are shown).
# Slow (a whole build), so not part of `make check`. Exits 1 on a failure.
set -u
cd "$(dirname "$0")/../.."
src=$PWD
rev=$(git rev-parse HEAD) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/la-rebuild.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset MAKEFLAGS MFLAGS MAKELEVEL
failed=0
fail() { echo "check-rebuild: FAILED: $1"; failed=1; }

git clone -q --no-checkout "$src" "$tmp/la" && git -C "$tmp/la" checkout -q "$rev" ||
  { echo "check-rebuild: cannot clone $src at $rev"; exit 1; }
cd "$tmp/la"
echo "check-rebuild: a fresh clone of $rev in $tmp/la"

extra=$(make -n demo 2>&1 | grep -oE 'build/(tests|bench)/[A-Za-z0-9_]+|zoltan_balance' | sort -u)
if [ -n "$extra" ]; then
  fail "make demo builds $(echo "$extra" | wc -l) programs the demo does not run: $(echo $extra | cut -d' ' -f1-6) ..."
else
  echo "check-rebuild: make demo builds only what the demo runs"
fi

if ! make -j2 all >"$tmp/build.log" 2>&1; then
  tail -30 "$tmp/build.log"
  echo "check-rebuild: FAILED: make -j2 all failed"
  exit 1
fi
runs=$(grep -c '^protoc-c ' "$tmp/build.log")
if [ "$runs" -ne 1 ]; then
  fail "make -j2 all ran protoc-c $runs times, not once"
else
  echo "check-rebuild: make -j2 all ran protoc-c once"
fi

if make -q all; then
  echo "check-rebuild: a second make all has nothing to do"
else
  fail "a second make all would rebuild; make -n all begins:"
  make -n all 2>&1 | grep -vE '^\s' | head -15 | sed 's/^/    /'
  echo "    ($(make -n all 2>&1 | grep -cE '^(cc|mpicc|gfortran|ar|protoc-c) ') commands in all)"
fi

[ $failed -eq 0 ] && echo "check-rebuild: passed"
exit $failed
