#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_completion.sh: the bash completion of lactl
# (packaging/bash-completion/lactl) offers what lactl accepts. The
# completion function runs in this bash, as bash would call it, for each
# command lactl --help lists:
#   - `lactl CMD -<TAB>` offers exactly the options `lactl CMD --help`
#     names (each --NAME or -o it mentions, and --help);
#   - after an option with a list of values (--format, --weights, --mode,
#     --method, --synthetic), each value offered is a word of CMD's help,
#     and every `--format NAME` the help lists or its usage line spells
#     (--format a|b|c) is offered;
#   - `lactl <TAB>` offers every command.
#
# Run by run-tests.sh after make all; skips when lactl is not built.
set -u
cd "$(dirname "$0")/../.."
. tests/sh/report.sh
NAME=test_completion
lactl=$PWD/build/bin/lactl
[ -x "$lactl" ] || { la_sh_skip $NAME "build/bin/lactl is missing (make all first)"; la_sh_done; }
complete() { :; } # the file's `complete -F` line needs no completion engine
. packaging/bash-completion/lactl
unset -f complete

# Prints what the completion offers for the words given (the last is the
# word being completed), one per line, sorted.
offer() {
  COMP_WORDS=(lactl "$@")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMPREPLY=()
  _lactl 2>/dev/null
  printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort -u
}

cmds=$("$lactl" --help | awk '/Commands:$/ { on = 1; next }
  on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
got=$(offer '' | grep -v '^-')
if [ "$got" = "$(printf '%s\n' $cmds | sort -u)" ]; then la_sh_ok "$NAME/commands"
else la_sh_fail "$NAME/commands" "offered:"$'\n'"$got"$'\n'"lactl --help lists:"$'\n'"$cmds"; fi

for c in $cmds; do
  help=$("$lactl" "$c" --help 2>&1)
  want=$( { printf '%s\n' "$help" |
    grep -oE '(^|[][ ,(|])(--[a-z][a-z-]*[a-z]|-o)([] ,)|=]|$)' |
    grep -oE -- '--?[a-z-]*[a-z]'; echo --help; } | sort -u)
  got=$(offer "$c" -)
  if [ "$got" = "$want" ]; then la_sh_ok "$NAME/${c}_options"
  else la_sh_fail "$NAME/${c}_options" "$(diff <(echo "$want") <(echo "$got") |
    sed -n 's/^< /not offered: /p; s/^> /offered, not in lactl '"$c"' --help: /p')"; fi
  bad=
  for o in --format --weights --mode --method --synthetic; do
    grep -qE -- "$o( |\b)" <<<"$help" || continue
    for v in $(offer "$c" "$o" ''); do
      v=${v%=}
      grep -qwF -- "${v%%,*}" <<<"$help" || bad+="$o $v is not in lactl $c --help"$'\n'
    done
  done
  formats=$( { grep -oE -- '--format [a-z0-9]+' <<<"$help" | awk '$2 != "F" { print $2 }'
    grep -oE -- '--format [a-z0-9|]+\|[a-z0-9|]+' <<<"$help" | cut -d' ' -f2 | tr '|' '\n'; } | sort -u)
  for v in $formats; do
    offer "$c" --format '' | grep -qx -- "$v" || bad+="--format $v is not offered"$'\n'
  done
  if [ -z "$bad" ]; then la_sh_ok "$NAME/${c}_values"
  else la_sh_fail "$NAME/${c}_values" "$bad"; fi
done
la_sh_done
