#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_check_config.sh: README.md's service steps before the first start.
# The sample packaging/la-globalagent.conf, with /etc/la and /var/lib moved
# into a temporary root (the README runs it as root on the real paths),
# and a secret from `lactl secret` (the README's step before): the
# README's `la-globalagent -c ... --check-config` line passes although the
# store's directory (/var/lib/la-globalagent, the unit's StateDirectory=)
# does not exist yet; the GlobalAgent started on that configuration (on
# ephemeral ports) then makes it, mode 0700, and opens its store there.
# Then the mistakes a new user makes: a mistyped setting (on the command
# line, in the file) names the one meant, an ambiguous one its candidates;
# a store or spool directory whose parent is missing stops the daemon
# with the setting, the directory and what to do; a port another agent
# holds is said to be.
#
# Run by run-tests.sh after make all; skips when the programs are not built.
set -u
cd "$(dirname "$0")/../.."
. tests/sh/report.sh
NAME=test_check_config
bin=$PWD/build/bin
for f in la-globalagent lactl; do
  [ -x "$bin/$f" ] || { la_sh_skip $NAME "build/bin/$f is missing (make all first)"; la_sh_done; }
done
grep -q -- '^la-globalagent -c /etc/la/la-globalagent.conf --check-config' README.md ||
  { la_sh_fail "$NAME/readme" "README.md no longer has the --check-config line"; la_sh_done; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/la-checkconf.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/etc/la" "$tmp/var/lib"
sed -e "s|/etc/la|$tmp/etc/la|g" -e "s|/var/lib|$tmp/var/lib|g" \
  packaging/la-globalagent.conf > "$tmp/etc/la/la-globalagent.conf"
"$bin/lactl" secret "$tmp/etc/la/secret" >/dev/null
conf=$tmp/etc/la/la-globalagent.conf
state=$tmp/var/lib/la-globalagent

if out=$("$bin/la-globalagent" -c "$conf" --check-config 2>&1) && [ ! -e "$state" ]
then la_sh_ok "$NAME/before_first_start"
else la_sh_fail "$NAME/before_first_start" "$out"; fi

"$bin/la-globalagent" -c "$conf" --agents.listen=127.0.0.1:0 \
  --feed.listen=127.0.0.1:0 >/dev/null 2>"$tmp/log" &
pid=$!
for _ in $(seq 200); do grep -q " ready" "$tmp/log" 2>/dev/null && break; sleep 0.05; done
kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
if [ "$(stat -c %a "$state" 2>/dev/null)" = 700 ] && [ -e "$state/la.db" ]
then la_sh_ok "$NAME/first_start_makes_it"
else la_sh_fail "$NAME/first_start_makes_it" "$(ls -la "$state" 2>&1; cat "$tmp/log")"; fi

# a mistyped setting, on the command line and in the file: exit 2, the
# setting named with the one meant; an ambiguous one with its candidates
out=$("$bin/la-globalagent" --store.pth="$tmp/x.db" --check-config 2>&1); rc=$?
if [ $rc = 2 ] && case $out in *"unknown setting 'store.pth' (did you mean 'store.path'?)"*) true;; *) false;; esac
then la_sh_ok "$NAME/typo_option"
else la_sh_fail "$NAME/typo_option" "exit $rc: $out"; fi
printf '[store]\npaht = %s/x.db\n' "$tmp" > "$tmp/typo.conf"
out=$("$bin/la-globalagent" -c "$tmp/typo.conf" --check-config 2>&1); rc=$?
if [ $rc = 2 ] && case $out in *"unknown setting 'paht' in [store] (did you mean 'path'?)"*) true;; *) false;; esac
then la_sh_ok "$NAME/typo_file"
else la_sh_fail "$NAME/typo_file" "exit $rc: $out"; fi
out=$("$bin/la-globalagent" --listen=127.0.0.1:0 --check-config 2>&1); rc=$?
if [ $rc = 2 ] && case $out in *"ambiguous: use section.name (agents.listen, feed.listen, metrics.listen)"*) true;; *) false;; esac
then la_sh_ok "$NAME/ambiguous"
else la_sh_fail "$NAME/ambiguous" "exit $rc: $out"; fi

# started on a directory whose parent is missing: exit 1, the setting, the
# directory and what to do named
out=$(timeout 20 "$bin/la-globalagent" --agents.listen=127.0.0.1:0 \
  --feed.listen=127.0.0.1:0 --store.path="$tmp/no/such/la.db" 2>&1); rc=$?
if [ $rc = 1 ] && case $out in *"store.path $tmp/no/such/la.db: cannot create its directory $tmp/no/such: No such file or directory (the directory above it is missing"*) true;; *) false;; esac
then la_sh_ok "$NAME/store_dir_missing"
else la_sh_fail "$NAME/store_dir_missing" "exit $rc: $out"; fi
if [ -x "$bin/la-localagent" ]; then
  out=$(timeout 20 "$bin/la-localagent" --agent.listen=127.0.0.1:0 \
    --global.address=127.0.0.1:1 --global.spool_dir="$tmp/no/spool" 2>&1); rc=$?
  if [ $rc = 1 ] && case $out in *"global.spool_dir: "*"$tmp/no/spool"*"--check-config"*) true;; *) false;; esac
  then la_sh_ok "$NAME/spool_dir_missing"
  else la_sh_fail "$NAME/spool_dir_missing" "exit $rc: $out"; fi
fi

# a port another agent holds: the start fails saying so
"$bin/la-globalagent" --agents.listen=127.0.0.1:0 \
  --agents.port_file="$tmp/ga.port" --feed.listen=127.0.0.1:0 \
  --store.path="$tmp/busy.db" >/dev/null 2>"$tmp/busy.log" &
pid=$!
for _ in $(seq 200); do [ -s "$tmp/ga.port" ] && break; sleep 0.05; done
out=$(timeout 20 "$bin/la-globalagent" --agents.listen=127.0.0.1:"$(cat "$tmp/ga.port" 2>/dev/null)" \
  --feed.listen=127.0.0.1:0 --store.path="$tmp/busy2.db" 2>&1); rc=$?
kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
if [ $rc = 1 ] && case $out in *"address already in use (another program listens there, perhaps an agent already running"*) true;; *) false;; esac
then la_sh_ok "$NAME/port_in_use"
else la_sh_fail "$NAME/port_in_use" "exit $rc: $out"; fi

# a port file and a pid file that are pipes (as /dev/null is a device) are
# written into and left in place: as root, renaming a file over /dev/null or
# unlinking it at the end would replace or remove the device. A pipe stands
# in for it here (the real /dev/null is never risked); a pid file that is
# a regular file is removed at the end, as before
mkfifo "$tmp/port.fifo" "$tmp/pid.fifo"
exec 3<>"$tmp/port.fifo" 4<>"$tmp/pid.fifo"
"$bin/la-globalagent" --agents.listen=127.0.0.1:0 \
  --agents.port_file="$tmp/port.fifo" --daemon.pid_file="$tmp/pid.fifo" \
  --feed.listen=127.0.0.1:0 --store.path="$tmp/fifo.db" >/dev/null 2>"$tmp/fifo.log" &
pid=$!
port= got_pid=
read -r -t 20 port <&3; read -r -t 5 got_pid <&4
kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
if [ -p "$tmp/port.fifo" ] && [ -p "$tmp/pid.fifo" ] &&
   case $port in ''|*[!0-9]*) false;; *) true;; esac && [ "$got_pid" = "$pid" ]
then la_sh_ok "$NAME/port_and_pid_files_not_replaced"
else la_sh_fail "$NAME/port_and_pid_files_not_replaced" "port '$port', pid '$got_pid' (of $pid): $(ls -la "$tmp"; cat "$tmp/fifo.log")"; fi
pid=
exec 3<&- 4<&-
"$bin/la-globalagent" --agents.listen=127.0.0.1:0 \
  --daemon.pid_file="$tmp/ga.pid" --feed.listen=127.0.0.1:0 \
  --store.path="$tmp/pid.db" >/dev/null 2>"$tmp/pid.log" &
pid=$!
for _ in $(seq 200); do [ -s "$tmp/ga.pid" ] && break; sleep 0.05; done
held=$(cat "$tmp/ga.pid" 2>/dev/null)
kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
if [ "$held" = "$pid" ] && [ ! -e "$tmp/ga.pid" ]
then la_sh_ok "$NAME/pid_file_removed_at_end"
else la_sh_fail "$NAME/pid_file_removed_at_end" "held '$held' (of $pid): $(ls -la "$tmp"; cat "$tmp/pid.log")"; fi
pid=

# a port file that is a pipe nobody reads, or a socket file: the daemon
# stops at once (never waits on it) saying what it is, not the kernel's
# "No such device or address"
mkfifo "$tmp/noreader.fifo"
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$tmp/port.sock"
for pf in noreader.fifo port.sock; do
  out=$(timeout 20 "$bin/la-globalagent" --agents.listen=127.0.0.1:0 \
    --agents.port_file="$tmp/$pf" --feed.listen=127.0.0.1:0 \
    --store.path="$tmp/np.db" 2>&1 </dev/null); rc=$?
  if [ $rc != 0 ] && [ $rc != 124 ] && case $out in *"agents.port_file $tmp/$pf: a pipe without a reader, or a socket"*) true;; *) false;; esac
  then la_sh_ok "$NAME/port_file_unwritable_$pf"
  else la_sh_fail "$NAME/port_file_unwritable_$pf" "exit $rc: $out"; fi
done
la_sh_done
