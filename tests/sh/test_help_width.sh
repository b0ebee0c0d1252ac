#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_help_width.sh: every --help fits an 80-column terminal. No line of
# `la-localagent --help`, `la-globalagent --help`, `lactl --help` or
# `lactl CMD --help` (each command lactl --help lists) is longer than 79
# characters.
#
# Run by run-tests.sh after make all; skips when the programs are not built.
set -u
cd "$(dirname "$0")/../.."
. tests/sh/report.sh
NAME=test_help_width
bin=$PWD/build/bin
for f in la-localagent la-globalagent lactl; do
  [ -x "$bin/$f" ] || { la_sh_skip $NAME "build/bin/$f is missing (make all first)"; la_sh_done; }
done

# Checks one command line's --help output.
width() { # check-name command...
  local name=$1 out long; shift
  out=$("$@" 2>&1)
  long=$(printf '%s\n' "$out" | awk 'length($0) > 79 { print length($0) ": " $0 }')
  if [ -z "$out" ]; then la_sh_fail "$name" "$* printed nothing"
  elif [ -n "$long" ]; then la_sh_fail "$name" "$* has lines over 79 columns:"$'\n'"$long"
  else la_sh_ok "$name"; fi
}

width "$NAME/la-localagent" "$bin/la-localagent" --help
width "$NAME/la-globalagent" "$bin/la-globalagent" --help
width "$NAME/lactl" "$bin/lactl" --help
cmds=$("$bin/lactl" --help | awk '/^Commands|Commands:$/ { on = 1; next }
  on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
[ -n "$cmds" ] || la_sh_fail "$NAME/commands" "no command list in lactl --help"
for c in $cmds; do width "$NAME/lactl_$c" "$bin/lactl" "$c" --help; done
la_sh_done
