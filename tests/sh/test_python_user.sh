#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_python_user.sh: the la_weights package installed and used exactly as
# README.md and docs/python.md say, by a user of stock Debian 12.
#
# A store holding the README's application (wavetoy-1234, cycle 20) is made
# with the real daemons and wavetoy under mpiexec. Then every ```sh
# python-user block of README.md and docs/python.md runs as written, in the
# checkout, with bash -e, in a clean environment (a fresh HOME, PATH
# /usr/bin:/bin so python3 is Debian's /usr/bin/python3, no PYTHONPATH,
# LA_CLIENT_LIB or LD_LIBRARY_PATH), with /opt/la replaced by a temporary
# prefix; in the same shell the README's three Python lines then run with
# python3 in the store's directory. Each must load libla_client from where
# the block put LA (the prefix's lib/ after make install, else the tree's
# build/lib) and report LA's version (LA_VERSION_STRING of wire/la_limits.h).
#
# Run by run-tests.sh (make check) after make all; skips, saying why, when
# the build, /usr/bin/python3, its venv module, mpiexec or sqlite3 is
# missing.
set -u
cd "$(dirname "$0")/../.."
src=$PWD
. tests/sh/report.sh
. scripts/la-stack.sh
NAME=test_python_user

for f in build/lib/libla_client.so.0 build/bin/lactl build/bin/la-globalagent \
         build/bin/la-localagent build/examples/wavetoy; do
  [ -e "$f" ] || { la_sh_skip $NAME "$f is missing (make all first)"; la_sh_done; }
done
/usr/bin/python3 -c 'import venv, ensurepip, numpy' 2>/dev/null ||
  { la_sh_skip $NAME "/usr/bin/python3 with venv, ensurepip and numpy is missing (make deps)"; la_sh_done; }
for t in mpiexec sqlite3; do
  command -v $t >/dev/null || { la_sh_skip $NAME "$t is missing (make deps)"; la_sh_done; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/la-pyuser.XXXXXX") || exit 1
pids=()
stop_stack() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
trap 'stop_stack; rm -rf "$tmp"' EXIT

version=$(sed -n 's/^#define LA_VERSION_STRING "\(.*\)"/\1/p' wire/la_limits.h)

# The README's application and cycle in a store of its own.
store=$tmp/store
mkdir -p "$store"
if ! la_stack_start $NAME build/bin "$store" 2>"$tmp/stack.err"; then
  la_sh_fail $NAME "the daemons did not start: $(cat "$tmp/stack.err")"
  la_sh_done
fi
if ! LA_APP_ID=wavetoy-1234 timeout 120 mpiexec -n 2 build/examples/wavetoy \
     --n 16 --steps 21 >"$tmp/wavetoy.out" 2>&1; then
  la_sh_fail $NAME "wavetoy failed: $(tail -5 "$tmp/wavetoy.out")"
  la_sh_done
fi
stored=0
for _ in $(seq 300); do
  stored=$(sqlite3 -readonly "$store/la.db" "SELECT count(*) FROM trace_sets
    WHERE app_id = 'wavetoy-1234' AND cycle_tag = 20 AND closed = 1" 2>/dev/null)
  [ "${stored:-0}" = 1 ] && break
  sleep 0.1
done
stop_stack
[ "${stored:-0}" = 1 ] || { la_sh_fail $NAME "wavetoy-1234's cycle 20 never stored"; la_sh_done; }

# The README's ```python block that starts with "import la_weights".
three=$(awk '/^```python$/ {inb = 1; n = 0; next}
             inb && /^```/ {inb = 0; if (ok) exit; next}
             inb {if (n++ == 0) ok = ($0 == "import la_weights"); if (ok) print}' \
        README.md)
[ -n "$three" ] || { la_sh_fail $NAME "README.md has no python block starting with import la_weights"; la_sh_done; }

# Prints "FILE:LINE" then the block, NUL-separated, for each ```sh
# python-user block of FILE.
blocks_of() { # file
  awk -v f="$1" '/^```sh python-user$/ {inb = 1; body = ""; line = NR; next}
                 inb && /^```/ {inb = 0; printf "%s:%d%c%s%c", f, line, 0, body, 0; next}
                 inb {body = body $0 "\n"}' "$1"
}

run_block() { # where, block text
  local where=$1 block=$2 n=${3:-0}
  local home=$tmp/home.$n prefix=$tmp/prefix.$n out=$tmp/out.$n
  mkdir -p "$home"
  block=${block//\/opt\/la/$prefix}
  local check="
cd '$store'
python3 - <<'LA_PY'
$three
import la_weights._lib as L
print('la_weights', la_weights.__version__, 'from', la_weights.__file__)
print('libla_client', L.load()._name)
print('weights', w.size)
LA_PY"
  env -i HOME="$home" PATH=/usr/bin:/bin LANG=C.UTF-8 TMPDIR="$tmp" \
    bash -e -o pipefail -c "$block$check" >"$out" 2>&1
  local rc=$?
  local want=$src/build/lib/libla_client.so.0
  [ -e "$prefix/lib/libla_client.so.0" ] && want=$prefix/lib/libla_client.so.0
  local why=""
  if [ $rc -ne 0 ]; then
    why="exited $rc"
  elif ! grep -qx "libla_client $want" "$out"; then
    why="libla_client not loaded from $want"
  elif ! grep -q "^la_weights $version from " "$out"; then
    why="la_weights does not say LA's version $version (libla/la.h)"
  elif ! grep -qE '^weights [1-9][0-9]*$' "$out"; then
    why="no weights read"
  fi
  if [ -z "$why" ]; then
    la_sh_ok "$where"
    grep -E '^(la_weights|libla_client|weights) ' "$out" | sed 's/^/    /'
  else
    la_sh_fail "$where" "$why; the block:
$block--- its output:
$(tail -40 "$out")"
  fi
}

n=0
for doc in README.md docs/python.md; do
  found=0
  while IFS= read -r -d '' where && IFS= read -r -d '' block; do
    found=1; n=$((n + 1))
    run_block "$where" "$block" $n
  done < <(blocks_of "$doc")
  [ $found = 1 ] || la_sh_fail "$doc" "no \`\`\`sh python-user block: how to install la_weights is not said"
done
la_sh_done
