#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_daemon_log.sh: what each daemon says at start, as its operator sees
# it. Each real daemon starts on ephemeral loopback ports, once with stdout
# and stderr into one file (a terminal, or systemd's journal) and once with
# stdout thrown away (stderr alone); either way "listening on" is there
# exactly once per listener (the LocalAgent's one, the GlobalAgent's agents
# and feed), and the stdout line with the address stays for scripts.
#
# Run by run-tests.sh after make all; skips when the daemons are not built.
set -u
cd "$(dirname "$0")/../.."
. tests/sh/report.sh
NAME=test_daemon_log
bin=$PWD/build/bin
for f in "$bin/la-localagent" "$bin/la-globalagent"; do
  [ -x "$f" ] || { la_sh_skip $NAME "$f is missing (make all first)"; la_sh_done; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/la-daemonlog.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# Starts a daemon (its arguments after MODE), waits for its "ready" line,
# stops it; the log is $tmp/log. MODE: joined (2>&1) or stderr (>/dev/null).
run_daemon() { # mode bin args...
  local mode=$1; shift
  rm -f "$tmp/log"
  if [ "$mode" = joined ]; then "$@" >"$tmp/log" 2>&1 &
  else "$@" >/dev/null 2>"$tmp/log" & fi
  pid=$!
  for _ in $(seq 200); do grep -q " ready" "$tmp/log" 2>/dev/null && break; sleep 0.05; done
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
}

# Checks that each PATTERN occurs exactly once in the log.
once() { # check-name patterns...
  local name=$1 p n bad=; shift
  for p in "$@"; do
    n=$(grep -c -- "$p" "$tmp/log")
    [ "$n" = 1 ] || bad+="'$p' $n times"$'\n'
  done
  if [ -z "$bad" ]; then la_sh_ok "$name"
  else la_sh_fail "$name" "$bad$(cat "$tmp/log")"; fi
}

for mode in joined stderr; do
  run_daemon $mode "$bin/la-localagent" --agent.listen=127.0.0.1:0 \
    --global.address= --global.spool_dir="$tmp/spool"
  once "$NAME/localagent_$mode" "listening on"
  run_daemon $mode "$bin/la-globalagent" --agents.listen=127.0.0.1:0 \
    --feed.listen=127.0.0.1:0 --store.path="$tmp/la.db"
  once "$NAME/globalagent_$mode" "agents.*listening on" "feed.*listening on"
done
la_sh_done
